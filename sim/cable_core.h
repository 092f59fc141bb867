/* SPDX-License-Identifier: MIT */
/*
 * The cable's state machine, free of sockets and clocks: the program
 * (sim/cable.c) and the unit tests (tests/test_link.c) feed it events
 * (a connection came or went, bytes arrived from an end, plug/unplug, time
 * passed) with the current monotonic time in nanoseconds, and it acts
 * through the callbacks in struct cable_ops.
 */
#ifndef ODL_CABLE_CORE_H
#define ODL_CABLE_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cable_fault.h"
#include "decode.h"
#include "link_msg.h"

#define CABLE_END_A ODL_EP_A
#define CABLE_END_B ODL_EP_B
#define CABLE_SELF  ODL_EP_CABLE

#define CABLE_DEFAULT_LANES      2u
#define CABLE_DEFAULT_LANE_GBPS  40u
#define CABLE_DEFAULT_QUEUE_LIMIT (64u << 20) /* bytes */

struct cable_cfg {
	unsigned lanes;       /* lanes the cable carries (1 or 2) */
	unsigned lane_gbps;   /* per-lane rate limit of the cable (>0) */
	uint64_t latency_ns;  /* propagation latency per direction */
	uint64_t slack_ns;    /* may release a message this much early */
	size_t queue_limit;   /* DATA is dropped above this backlog (bytes) */
	bool plugged;         /* initial plug state */
};

void cable_cfg_defaults(struct cable_cfg *cfg);

/* Note strings passed to ops->event for dropped messages. */
#define CABLE_NOTE_DROP_DOWN    "DROP(link-down)"
#define CABLE_NOTE_DROP_FULL    "DROP(queue-full)"
#define CABLE_NOTE_DROP_FLIGHT  "DROP(in-flight)"
/* fault injection (docs/link-protocol.md section 6) */
#define CABLE_NOTE_DROP_FAULT   "DROP(fault)"     /* dropped / credit withheld */
#define CABLE_NOTE_FAULT_CORRUPT "FAULT(corrupt)" /* delivered, a bit flipped */
#define CABLE_NOTE_FAULT_DELAY  "FAULT(delay)"    /* delivered late */
#define CABLE_NOTE_FAULT_CORRUPT_DELAY "FAULT(corrupt+delay)"
#define CABLE_NOTE_FAULT_TAMPER "FAULT(tamper)"   /* delivered, a bit flipped, no CRC_ERR */
#define CABLE_NOTE_FAULT_TAMPER_DELAY "FAULT(tamper+delay)"

struct cable_ops {
	void *ctx;
	/* Queue a whole message (header + body) for delivery to an end. */
	void (*send)(void *ctx, int end, const uint8_t *msg, size_t len);
	/* Bytes already queued toward an end and not yet written (or NULL). */
	size_t (*backlog)(void *ctx, int end);
	/*
	 * The core gave up on an end's connection (protocol error). The
	 * embedding closes it; the core has already forgotten it.
	 */
	void (*close)(void *ctx, int end, const char *reason);
	/*
	 * Every message the cable handles, for trace and capture: HELLO
	 * (from=end, to=CABLE_SELF), STATE (CABLE_SELF -> end), forwarded
	 * messages at delivery time (end -> peer, note NULL, or
	 * CABLE_NOTE_FAULT_* if a fault acted on it) and dropped ones
	 * (note CABLE_NOTE_DROP_*). May be NULL.
	 */
	void (*event)(void *ctx, uint64_t now, int from, int to,
		      const char *note, const uint8_t *msg, size_t len);
	/* A human-readable log line without newline (may be NULL). */
	void (*log)(void *ctx, const char *line);
};

struct cable_flight; /* a message on the wire */

struct cable_end {
	bool connected;
	bool hello;                  /* HELLO accepted on this connection */
	struct odl_link_hello info;  /* valid if hello */
	/* reassembly of the message being received */
	uint8_t rx[ODL_MSG_MAX];
	size_t rx_have;
	/* the last STATE sent on this connection */
	bool state_sent;
	struct odl_link_state state;
	/* counters (cumulative over connections) */
	uint64_t tx_msgs, tx_bytes;  /* messages/bytes received from this end */
	uint64_t rx_msgs, rx_bytes;  /* messages/bytes delivered to this end */
	uint64_t dropped;            /* this end's messages that were dropped */
	uint64_t connects;
	/* the wire from this end to the other: FIFO of messages in flight */
	struct cable_flight *head, *tail;
	size_t flight_bytes;
	unsigned delayed;            /* messages in flight with a fault delay */
	uint64_t wire_free_at;       /* ns when the serializer is idle */
	uint64_t wire_carry;         /* bit remainder (bits * 1 < rate) */
};

struct cable_core {
	struct cable_cfg cfg;
	struct cable_ops ops;
	bool plugged;
	bool link_up;
	uint64_t plug_count;
	uint64_t link_up_count;
	unsigned lanes, lane_gbps;   /* of the trained link (valid if up) */
	struct cable_end end[2];
	/* fault injection */
	struct cable_faults faults;
	bool hold;                   /* retrain: link held down ... */
	uint64_t hold_until;         /* ... until this time */
	uint64_t replug_at;          /* unplug-after: replug at (0 = none) */
};

void cable_core_init(struct cable_core *c, const struct cable_cfg *cfg,
		     const struct cable_ops *ops);
void cable_core_fini(struct cable_core *c);

/* A model connected to `end`. Returns -1 if that end is already taken. */
int cable_core_connect(struct cable_core *c, int end, uint64_t now);
/* The connection of `end` went away (EOF or error). */
void cable_core_disconnect(struct cable_core *c, int end, uint64_t now);
/* Bytes arrived from `end`; any split of the stream is fine. */
void cable_core_rx(struct cable_core *c, int end, const uint8_t *buf,
		   size_t n, uint64_t now);
void cable_core_plug(struct cable_core *c, uint64_t now);
void cable_core_unplug(struct cable_core *c, uint64_t now);
/* Deliver messages whose release time has come. */
void cable_core_tick(struct cable_core *c, uint64_t now);
/*
 * Release the messages `delay us=hold` holds on the wire: they are
 * delivered at the next tick(), in wire order. Returns how many.
 */
unsigned cable_core_release(struct cable_core *c, uint64_t now);
/* Earliest time tick() has work to do, UINT64_MAX if none (held messages have none). */
uint64_t cable_core_next_deadline(const struct cable_core *c);

/*
 * Link retrain (fault injection): cap the trained link at lanes x gbps
 * (0, 0: remove the cap) and retrain now if the link is up. live=false:
 * STATE up=0 to both ends, in-flight messages lost, then STATE up=1 with
 * the new rate after down_ns (0: at once). live=true: only a new STATE
 * with the changed rate, nothing lost. Returns 1 if the link was
 * retrained, 0 if it was down (the cap applies at the next training).
 */
int cable_core_retrain(struct cable_core *c, unsigned lanes, unsigned gbps,
		       bool live, uint64_t down_ns, uint64_t now);

/*
 * Execute one control-socket command that the core understands (plug,
 * unplug, status, fault ...). Writes the one-line reply (no newline) into
 * reply. Returns 1 if the command was handled, 0 if it is not a core
 * command (reply untouched).
 */
int cable_core_ctl(struct cable_core *c, const char *cmd, uint64_t now,
		   char *reply, size_t n);

/* The status JSON object (one line, no newline). Returns strlen. */
size_t cable_core_status_json(const struct cable_core *c, char *buf, size_t n);

#endif
