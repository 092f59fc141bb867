/* SPDX-License-Identifier: MIT */
/*
 * OdinLink USB4 host interface (NHI) + host router model: public API.
 *
 * The core is plain C11 with no QEMU or glib dependency. An embedding
 * (the QEMU device in hw-model/qemu, the unit tests, a host-side
 * simulator) creates one instance per emulated controller, feeds it
 * events through the entry points below and supplies the services the
 * device needs through struct nhi_host_ops.
 *
 * Threading: an instance is not thread-safe; the embedding serialises
 * all calls (QEMU does so with its big lock).
 */
#ifndef USB4_NHI_H
#define USB4_NHI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NHI_BAR0_SIZE   0x40000u
#define NHI_MSIX_VECTORS 16u
#define NHI_MAX_HOPS    16u

/* Log levels passed to host_ops.log. */
enum nhi_log_level {
	NHI_LOG_ERROR = 0, /* guest misprogramming, hostile cable input */
	NHI_LOG_INFO  = 1, /* link changes and other rare events */
	NHI_LOG_TRACE = 2, /* every register access and packet (trace on) */
};

/* Timers the core may arm. */
enum nhi_timer {
	NHI_TIMER_HOTPLUG = 0, /* re-send unacknowledged plug events */
	NHI_TIMER_IRQ0 = 1,    /* ..+15: end of a vector's throttling interval */
	NHI_TIMER_COMPL = NHI_TIMER_IRQ0 + 16, /* delayed/coalesced completions */
	NHI_TIMER_TXPACE,      /* per-ring DMA rate ceiling (ring_mbps) */
	NHI_TIMER_COUNT
};

struct nhi_host_ops {
	/* Guest-physical DMA. Return 0 on success, non-zero on a fault
	 * (no memory there, IOMMU refused). */
	int (*dma_read)(void *opaque, uint64_t addr, void *buf, size_t len);
	int (*dma_write)(void *opaque, uint64_t addr, const void *buf,
			 size_t len);
	/* Signal an interrupt on MSI-X vector `vector` (0..15). The embedding
	 * falls back to its single MSI when MSI-X is not enabled. */
	void (*msix)(void *opaque, unsigned int vector);
	/* Ask the platform to wake the function (PCI PME) because an event
	 * is pending while the control ring is stopped. */
	void (*wake)(void *opaque);
	/* Arm (deadline_ns >= 0) or cancel (deadline_ns < 0) a timer on the
	 * virtual clock; on expiry call nhi_timer_fire(). */
	void (*timer_arm)(void *opaque, int timer, int64_t deadline_ns);
	int64_t (*now)(void *opaque); /* virtual clock, ns */
	/* Send one complete link message (header + body, odl_link.h). */
	void (*cable_tx)(void *opaque, const void *msg, size_t len);
	void (*log)(void *opaque, int level, const char *msg);
	/* Optional: call nhi_run_deferred() soon, outside the current
	 * register access (a QEMU bottom half). Without it, data rings are
	 * processed synchronously in the doorbell write. */
	void (*defer)(void *opaque);
};

/* A controller profile: the data that distinguishes one controller from
 * another. See hw-model/profiles/. */
struct nhi_profile {
	char name[32];
	uint16_t pci_vendor, pci_device;
	uint16_t pci_subsys_vendor, pci_subsys_device;
	uint32_t pci_class;           /* 24-bit class code */
	uint8_t pci_revision;
	uint16_t router_vendor, router_device;
	uint8_t router_revision;
	uint8_t usb4_version;         /* ROUTER_CS_4 bits 31:24 */
	uint8_t hop_count;            /* rings, 1..NHI_MAX_HOPS */
	uint8_t lanes;                /* lanes of the USB4 port, 1 or 2 */
	uint8_t speed_code;           /* LANE_ADP_CS_1 current speed code */
	uint8_t supported_speeds;     /* LANE_ADP_CS_0 bits 19:16 */
	uint32_t lane_gbps;           /* per-lane rate */
	uint16_t lane_max_hopid;      /* lane adapters' max in/out HopID */
	uint16_t lane_total_buffers;
	uint16_t nhi_total_buffers;
	uint16_t ba_max_hi;           /* BUFFER_ALLOC baMaxHI */
	uint16_t e2e_hold_frames;     /* frames held for a full E2E RX ring */
	uint8_t irq_throttle;         /* honour REG_INT_THROTTLE (coalescing) */
	/* ---- quirk switches (docs/profiles.md); nhi_profile_defaults() ---- */
	uint8_t caps_version;         /* REG_CAPS bits 23:16; >= 0x40: USB4 v2
				       * host, REG_RESET (host router reset) */
	uint8_t hop_count_reported;   /* REG_CAPS hop count; 0 = hop_count */
	uint8_t hidden_hop_silent;    /* rings >= reported count raise no IRQ */
	uint32_t dma_misc_writable;   /* writable DMA_MISC bits */
	uint8_t asym_capable;         /* PORT_CS_18.CSA: 120/40 asymmetric */
	uint8_t e2e_rx_slots;         /* E2E RX rings that work; 0 = any */
	uint8_t e2e_victim;           /* 0: all E2E TX paths, 1: the second */
	uint16_t e2e_reserved_hop;    /* QUIRK_E2E: credit-return HopID that
				       * must be used; 0 = no such quirk */
	uint32_t ring_mbps;           /* per-ring TX DMA ceiling; 0 = none */
	uint32_t lowpower_idle_ms;    /* RX ring idle this long -> low power;
				       * 0 = never */
	uint32_t lowpower_period_ms;  /* low-power RX completion burst period */
};

struct nhi_config {
	struct nhi_profile profile;
	uint64_t uid;                 /* router UID, ROUTER_CS_7/8 */
	bool trace;                   /* log every access and packet */
};

struct nhi_stats {
	uint64_t tx_frames, tx_bytes, rx_frames, rx_bytes;
	uint64_t ctl_tx, ctl_rx;      /* control packets from / to the guest */
	uint64_t xdomain_fwd, xdomain_rx;
	uint64_t interrupts, wakes;
	uint64_t dma_faults;
	uint64_t guest_errors;        /* misprogramming events */
	uint64_t cable_errors;        /* malformed messages from the cable */
	uint64_t rx_dropped;          /* no buffer / ring off / no path */
	uint64_t tx_dropped;          /* no path / link down */
	uint64_t ctl_bad_crc;
	uint64_t rx_overflow;
	uint64_t e2e_held, credits_sent, credits_rcvd;
	uint64_t credit_syncs;        /* E2E credit syncs sent (0-credit grant) */
	uint64_t credit_syncs_rcvd;   /* ... and received: TX credits voided */
	uint64_t credits_unfunded;    /* E2E frames received beyond the credits
				       * granted (sent before the sender's first
				       * grant reached it); written off */
	/* quirks and faults: how often each fired */
	uint64_t irq_dropped;         /* completion interrupts dropped (fault) */
	uint64_t compl_delayed;       /* completions held back (fault, low power) */
	uint64_t e2e_credits_dropped; /* grants lost to the single-E2E limit */
	uint64_t e2e_wedged;          /* TX descriptors stuck for lack of credit
				       * while grants were being dropped */
	uint64_t e2e_rx_lost;         /* frames lost to QUIRK_E2E misuse */
	uint64_t tx_paced;            /* TX kicks deferred by ring_mbps */
	uint64_t lowpower_bursts;     /* coalesced low-power RX bursts */
	uint64_t host_resets;         /* REG_RESET host router resets */
	uint64_t path_refused;        /* path activations refused (fault) */
};

/* Run-time fault hooks (docs/profiles.md "Fault hooks"). `ring` is a TX
 * ring number, or NHI_FAULT_RX | n for RX ring n. Deterministic: counted
 * from the moment the fault is set, on the virtual clock. */
#define NHI_FAULT_RX 0x100u
enum nhi_fault_kind {
	NHI_FAULT_CLEAR = 0,       /* remove every fault of `ring` */
	NHI_FAULT_DROP_IRQ_NTH,    /* drop the value-th completion IRQ from now */
	NHI_FAULT_DROP_IRQ_EVERY,  /* drop every value-th completion IRQ */
	NHI_FAULT_DELAY_US,        /* completions written back value us late */
	NHI_FAULT_CLEAR_ALL,       /* remove every fault of every ring */
	NHI_FAULT_PATH_REFUSE,     /* the router refuses the next value path
				    * activations (ring must be 0; 0 stops) */
};

struct nhi;

/* Returns NULL if the configuration is invalid (message in err). */
struct nhi *nhi_new(const struct nhi_config *cfg,
		    const struct nhi_host_ops *ops, void *opaque,
		    char *err, size_t errlen);
void nhi_free(struct nhi *n);

/* Entry points. */
uint32_t nhi_mmio_read(struct nhi *n, uint32_t offset);
void nhi_mmio_write(struct nhi *n, uint32_t offset, uint32_t value);
/* Bytes arriving from the cable connection (any split; the core
 * reassembles messages). */
void nhi_cable_rx(struct nhi *n, const void *buf, size_t len);
/* The cable connection opened (true) or closed (false). */
void nhi_cable_connected(struct nhi *n, bool connected);
void nhi_timer_fire(struct nhi *n, int timer);
/* Process work deferred with host_ops.defer (TX doorbells of data rings):
 * at most NHI_DEFER_BUDGET frames a run; more left asks for another run
 * (host_ops.defer again). */
#define NHI_DEFER_BUDGET 1024
void nhi_run_deferred(struct nhi *n);
/* Function-level / power-on reset of the NHI and the host router. The
 * physical link state (cable) survives. */
void nhi_reset(struct nhi *n);

void nhi_set_trace(struct nhi *n, bool on);
const struct nhi_stats *nhi_get_stats(const struct nhi *n);
/* The rings' run-time state as text, one line per enabled ring after one
 * line of interrupt state (indices, E2E credits, held frames, late
 * completions): evidence for a stalled path. Returns the length written
 * (truncated to SIZE - 1). */
size_t nhi_rings_describe(const struct nhi *n, char *buf, size_t size);

/* Fault hooks. Returns 0, or -1 for a bad ring or kind. */
int nhi_fault_set(struct nhi *n, enum nhi_fault_kind kind, unsigned int ring,
		  uint64_t value);
/* Text form for embeddings: "drop-irq tx=N|rx=N nth=K", "drop-irq
 * rx=N every=K", "delay tx=N|rx=N us=U", "clear [tx=N|rx=N]". Several
 * commands may be separated by ';'. Returns 0, or -1 with a message. */
int nhi_fault_parse(struct nhi *n, const char *text, char *err,
		    size_t errlen);

/* Profiles. */
/* Defaults of the quirk switches (a profile text need not name them). */
void nhi_profile_defaults(struct nhi_profile *p);
int nhi_profile_lookup(const char *name, struct nhi_profile *out);
/* Parse "key = value" lines onto *out (which holds defaults). Returns 0,
 * or -1 with a message naming the line in err. */
int nhi_profile_parse(const char *text, struct nhi_profile *out,
		      char *err, size_t errlen);
int nhi_profile_validate(const struct nhi_profile *p, char *err,
			 size_t errlen);

/* Control-packet helpers (also used by tests and tools). */
uint32_t nhi_crc32c(uint32_t crc, const void *buf, size_t len);

#endif
