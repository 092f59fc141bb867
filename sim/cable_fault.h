/* SPDX-License-Identifier: MIT */
/*
 * Deterministic fault injection for the cable (docs/link-protocol.md §6):
 * the rule table, its text syntax, the per-message decisions and the
 * counters. No I/O and no clock: cable_core.c consults it for every
 * message entering the wire (drop, corrupt, tamper, delay, withhold credits) and
 * every DATA frame delivered (unplug-after), and acts on the answer.
 *
 * Determinism: a rule counts the messages it matches per direction, and
 * draws random numbers (ppm=, a corrupt or tamper bit without bit=) from its own
 * xorshift64* stream per direction, derived from the seed, the rule's id
 * and the direction. The decisions for one direction therefore depend only
 * on the sequence of messages in that direction, never on how the two
 * directions interleave in time: same seed, same traffic, same faults.
 */
#ifndef ODL_CABLE_FAULT_H
#define ODL_CABLE_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CABLE_FAULT_MAX 32      /* rules at once */
#define CABLE_FAULT_HOP_ANY (-1)
#define CABLE_FAULT_HOP_CTRL 0  /* hop=0: the control channel (CTRL) */
#define CABLE_FAULT_DIR_BOTH (-1)
/* delay_ns of `delay us=hold`: held on the wire until `fault release` */
#define CABLE_DELAY_HOLD (UINT64_C(1) << 62)

enum cable_fault_kind {
	CF_DROP = 1,       /* the message is not delivered */
	CF_CORRUPT,        /* one bit flipped; DATA also gets CRC_ERR */
	CF_WITHHOLD,       /* CREDIT messages swallowed */
	CF_DELAY,          /* extra latency */
	CF_UNPLUG_AFTER,   /* unplug after N delivered DATA frames */
	CF_TAMPER,         /* one bit of a DATA frame flipped, no CRC_ERR */
};

struct cable_fault {
	unsigned id;
	enum cable_fault_kind kind;
	int hop;            /* HopID, CABLE_FAULT_HOP_CTRL, CABLE_FAULT_HOP_ANY */
	int dir;            /* 0 a->b, 1 b->a, CABLE_FAULT_DIR_BOTH */
	/* selector (at most one set; none = every matching message) */
	uint64_t nth;       /* the Nth matching message (per direction) */
	uint64_t every;     /* every Nth matching message (per direction) */
	uint64_t from;      /* the Nth matching message and all after it */
	uint32_t ppm;       /* each with probability ppm / 1e6 */
	uint16_t eof_mask;  /* DATA frames whose EOF PDF n has bit n set; 0 = any */
	uint64_t count;     /* stop after this many hits in all; 0 = no limit */
	int bit;            /* corrupt/tamper: bit index in the payload, -1 random */
	int bit_hi;         /* bits=LO-HI: random in bit..bit_hi; else -1 */
	uint64_t delay_ns;  /* delay; CABLE_DELAY_HOLD: until released */
	uint64_t frames;    /* unplug-after: delivered DATA frames */
	uint64_t replug_ns; /* unplug-after: replug after this; 0 = never */
	/* state and counters */
	uint64_t rng[2];
	uint64_t seen[2];   /* matching messages, per direction */
	uint64_t hits[2];   /* messages acted on, per direction */
	uint64_t credits;   /* withhold: credits swallowed (sum) */
	bool done;          /* exhausted (nth hit in both, count, unplug fired) */
};

struct cable_faults {
	uint64_t seed;
	unsigned next_id;
	unsigned n;
	struct cable_fault f[CABLE_FAULT_MAX];
	/* link retrain cap (0 = none) */
	unsigned cap_lanes, cap_gbps;
	/* cumulative over the cable's life, not reset by "fault clear" */
	uint64_t tot_dropped, tot_corrupted, tot_withheld, tot_delayed;
	uint64_t tot_tampered;
	uint64_t tot_unplugs, tot_retrains;
};

void cable_faults_init(struct cable_faults *fs);
/* Remove every rule and the retrain cap (totals and seed stay). */
void cable_faults_clear(struct cable_faults *fs);
/* Set the seed and restart every rule's random streams from it. */
void cable_faults_seed(struct cable_faults *fs, uint64_t seed);
/* Remove one rule; -1 if there is none with that id. */
int cable_faults_remove(struct cable_faults *fs, unsigned id);

/*
 * Parse "drop hop=8 nth=3" etc. (the words after "fault") into a new rule
 * and add it. Returns the rule, or NULL with a reason in err.
 * Handles drop, corrupt, tamper, withhold-credits, delay, unplug-after only.
 */
struct cable_fault *cable_faults_add(struct cable_faults *fs, const char *args,
				     char *err, size_t errlen);

/* Decision for a message entering the wire from `dir` (0 = from a). */
struct cable_fault_verdict {
	bool drop;           /* do not deliver (DROP(fault)) */
	bool corrupted;      /* msg was modified in place, CRC_ERR set */
	bool tampered;       /* msg was modified in place, looks intact */
	uint64_t delay_ns;   /* extra latency, 0 = none */
};

/*
 * msg/len: the whole message (header + body), modified in place by a
 * corrupt rule. Updates counters; totals included.
 */
void cable_faults_on_wire(struct cable_faults *fs, int dir, uint8_t *msg,
			  size_t len, struct cable_fault_verdict *v);

/*
 * A DATA frame was delivered in direction dir. Returns true if an
 * unplug-after rule fires now; *replug_ns is then its replug delay.
 */
bool cable_faults_on_delivered(struct cable_faults *fs, int dir,
			       const uint8_t *msg, size_t len,
			       uint64_t *replug_ns);

/* "#1 drop hop=8 dir=both nth=3" (the rule's syntax, no counters). */
size_t cable_fault_describe(const struct cable_fault *f, char *buf, size_t n);
/* One line for "fault list" (no newline). */
size_t cable_faults_list(const struct cable_faults *fs, char *buf, size_t n);
/* The "faults" JSON object for the status line. */
size_t cable_faults_json(const struct cable_faults *fs, char *buf, size_t n);

const char *cable_fault_kind_name(enum cable_fault_kind k);

#endif
