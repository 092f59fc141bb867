/* SPDX-License-Identifier: MIT */
/* Internal state of the NHI model core. Not part of the public API. */
#ifndef NHI_PRIV_H
#define NHI_PRIV_H

#include "usb4_nhi.h"
#include "odl_link.h"

/* ---- BAR0 register map ---- */
#define REG_TX_RING_BASE      0x00000u
#define REG_RX_RING_BASE      0x08000u
#define REG_RING_STRIDE       16u
#define REG_TX_OPTIONS_BASE   0x19800u
#define REG_RX_OPTIONS_BASE   0x29800u
#define REG_OPTIONS_STRIDE    32u
#define REG_RING_NOTIFY_BASE  0x37800u
#define REG_RING_INT_CLEAR    0x37808u
#define REG_RING_INT_BASE     0x38200u
#define REG_RING_INT_MASK_CLR 0x38208u
#define REG_INT_THROTTLE      0x38c00u
#define REG_INT_VEC_ALLOC     0x38c40u
#define REG_HOP_COUNT         0x39640u
#define REG_DMA_MISC          0x39864u
#define REG_RESET             0x39898u
#define REG_RESET_HRR         (1u << 0)
#define REG_CAPS_VERSION_2    0x40u
#define HRR_DURATION_NS       1000000LL /* HRR reads 1 this long */
#define REG_INMAIL_DATA       0x39900u
#define REG_INMAIL_CMD        0x39904u
#define REG_OUTMAIL_CMD       0x3990cu
#define REG_FW_STS            0x39944u

#define DMA_MISC_INT_AUTO_CLEAR     (1u << 2)
#define DMA_MISC_DISABLE_AUTO_CLEAR (1u << 17)

#define RING_FLAG_ENABLE  (1u << 31)
#define RING_FLAG_RAW     (1u << 30)
#define RING_FLAG_E2E     (1u << 28)
#define RX_OPT_E2E_HOP_SHIFT 12
#define RX_OPT_E2E_HOP_MASK  (0x7ffu << 12)

/* Descriptor dword +8 */
#define DESC_LEN_MASK   0xfffu
#define DESC_EOF_SHIFT  12
#define DESC_SOF_SHIFT  16
#define DESC_FLAGS_SHIFT 20
#define DESC_F_CRC_ERR   0x001u
#define DESC_F_COMPLETED 0x002u
#define DESC_F_OVERRUN   0x004u
#define DESC_F_INTERRUPT 0x008u

/* ---- control packets ---- */
enum tb_pdf {
	PDF_READ = 1, PDF_WRITE = 2, PDF_ERROR = 3, PDF_NOTIFY_ACK = 4,
	PDF_EVENT = 5, PDF_XDOMAIN_REQ = 6, PDF_XDOMAIN_RESP = 7,
	PDF_OVERRIDE = 8, PDF_RESET = 9, PDF_PTS = 13,
};

enum tb_cfg_space { SPACE_PATH = 0, SPACE_ADP = 1, SPACE_RTR = 2,
		    SPACE_COUNTERS = 3 };

enum tb_err {
	ERR_PORT_NOT_CONNECTED = 0, ERR_LINK = 1, ERR_INVALID_SPACE = 2,
	ERR_NO_SUCH_PORT = 4, ERR_ACK_PLUG = 7, ERR_LOOP = 8, ERR_LOCK = 15,
};

#define CTL_MAX_DWORDS 64u /* 256 bytes incl. CRC */

struct ctl_pkt {
	uint8_t pdf;
	unsigned int ndw;           /* dwords excluding CRC */
	uint32_t dw[CTL_MAX_DWORDS];/* CPU order */
};

/* Parse wire bytes (big-endian dwords + CRC). Returns 0, -1 on bad size,
 * -2 on CRC mismatch. */
int ctl_parse(struct ctl_pkt *p, uint8_t pdf, const uint8_t *buf, size_t len);
/* Serialise to wire bytes with CRC; returns the length. */
size_t ctl_build(const struct ctl_pkt *p, uint8_t *buf, size_t cap);
static inline uint64_t ctl_route(const struct ctl_pkt *p)
{
	return ((uint64_t)(p->dw[0] & 0x3fffffu) << 32) | p->dw[1];
}

/* ---- router / adapters ---- */
#define RTR_SPACE_DWORDS 0x40u
#define RTR_TMU_CAP      0x1bu
#define ADP_SPACE_DWORDS 0x30u
#define ADP_LANE_CAP     0x08u
#define ADP_USB4_CAP     0x10u
#define NUM_ADAPTERS     4u /* 0 control, 1 lane0, 2 lane1, 3 NHI */
#define ADP_LANE0        1u
#define ADP_LANE1        2u
#define ADP_NHI          3u
#define PATH_MAX_HOPS    2048u

/* LANE_ADP_CS_1 */
#define LANE1_TGT_SPEED_MASK 0xfu
#define LANE1_TGT_WIDTH_SHIFT 4
#define LANE1_TGT_WIDTH_MASK (0x3fu << 4)
#define LANE1_LD            (1u << 14)
#define LANE1_LB            (1u << 15)
#define LANE1_CUR_SPEED_SHIFT 16
#define LANE1_CUR_WIDTH_SHIFT 20
#define LANE1_STATE_SHIFT   26
#define LANE1_STATE_MASK    (0xfu << 26)
#define LANE1_RO_MASK       (0xfffu << 16 | 0xfu << 26)

enum lane_state { LS_DISABLED = 0, LS_TRAINING = 1, LS_CL0 = 2,
		  LS_CLD = 7 };

struct path_entry {
	uint32_t dw0, dw1;
};

struct adapter {
	uint32_t cs[ADP_SPACE_DWORDS];
	uint16_t max_hop;            /* path-space entries: 0..max_hop */
	struct path_entry *path;     /* max_hop + 1 entries */
	bool present;
};

/* A plug/unplug notification waiting for its acknowledgement. */
struct plug_event {
	bool pending;
	bool unplug;
};

/* ---- rings ---- */
struct held_frame {
	struct held_frame *next;
	uint8_t sof, eof;
	uint16_t flags;
	uint32_t len;
	uint8_t data[];
};

/* A completion written back late (fault "delay", low-power RX bursts). */
struct late_compl {
	struct late_compl *next;
	int64_t due;
	uint64_t addr;        /* descriptor dword +8 */
	uint32_t d8;
	bool irq;
};

struct nhi_ring {
	/* registers */
	uint32_t base_lo, base_hi;
	uint32_t size;        /* +0xc bits 15:0 */
	uint32_t frame_size;  /* RX +0xc bits 31:16 */
	uint32_t opt0, opt1;
	uint32_t opt1_tx_hi;  /* TX options +4 storage */
	/* state */
	bool enabled;
	uint64_t base;        /* latched on enable */
	uint32_t hw;          /* TX consumer / RX hardware index */
	uint32_t drv;         /* TX producer / RX driver index */
	/* RX: frames waiting for a buffer (control ring, E2E rings) */
	struct held_frame *held_head, *held_tail;
	unsigned int held_count;
	/* RX E2E credit bookkeeping towards the peer */
	uint32_t credits_granted, credits_used;
	bool credit_sync_due;	/* accounting restarted: sync before a grant */
	bool faulted;
	/* quirks */
	unsigned int e2e_seq;      /* RX: order in which E2E was enabled */
	unsigned int credit_msgs;  /* RX: credit grants sent since enable */
	int64_t last_rx_ns;        /* RX: last completion (low-power entry) */
	int64_t lp_until;          /* RX: low-power burst due; 0 = awake */
	int64_t pace_next;         /* TX: ring_mbps budget */
	bool stalled;              /* TX: waiting for credits */
	/* faults */
	uint64_t f_nth;            /* drop the f_nth-th IRQ from now; 0 off */
	uint64_t f_every;          /* drop every f_every-th IRQ; 0 off */
	uint64_t f_count;          /* IRQs counted since the fault was set */
	int64_t f_delay_ns;        /* completion delay */
	struct late_compl *late_head, *late_tail;
};

struct nhi {
	struct nhi_config cfg;
	struct nhi_profile *p;
	const struct nhi_host_ops *ops;
	void *opaque;
	struct nhi_stats st;
	unsigned int hops;

	/* interrupt registers */
	uint32_t int_enable[2];
	uint32_t int_status[2];
	uint32_t int_missed[2];
	uint32_t ivr[4];
	uint32_t throttle[NHI_MSIX_VECTORS];
	int64_t irq_last[NHI_MSIX_VECTORS];   /* when each vector last fired */
	uint32_t irq_deferred;                /* vectors waiting for their slot */
	uint32_t tx_deferred;                 /* TX rings with a doorbell pending */
	/* frames one nhi_run_deferred() may still send (-1: no bound) */
	int32_t tx_budget;
	uint32_t dma_misc;
	uint32_t inmail_data, inmail_cmd;

	struct nhi_ring tx[NHI_MAX_HOPS];
	struct nhi_ring rx[NHI_MAX_HOPS];
	unsigned int irq_hops;      /* hop count as reported (IRQ bit layout) */
	unsigned int e2e_seq_next;
	int64_t compl_timer_at;     /* NHI_TIMER_COMPL deadline; -1 idle */
	int64_t pace_timer_at;      /* NHI_TIMER_TXPACE deadline; -1 idle */
	int64_t hrr_done_at;        /* REG_RESET.HRR reads 1 until then */

	/* router */
	uint32_t rtr[RTR_SPACE_DWORDS];
	struct adapter adp[NUM_ADAPTERS];
	struct plug_event plug[NUM_ADAPTERS];
	bool hotplug_timer_armed;
	unsigned int hotplug_tries;
	uint64_t f_path_refuse;     /* path activations still to refuse */

	/* link: as the cable imposes it (phys_*), and as the port sees it */
	bool cable_connected;
	bool phys_up;
	uint8_t phys_lanes;
	uint32_t phys_gbps;
	uint64_t phys_peer_uid;
	bool hrr_hold;              /* port retrains after HRR once enumerated */
	uint8_t asym;               /* 0 symmetric, 1 this side TX x3, 2 RX x3 */
	bool link_up;
	uint8_t link_lanes;
	uint32_t link_gbps;
	uint64_t peer_uid;
	struct odl_link_lane peer_lane;
	bool peer_lane_valid;
	/* TX credits per link HopID for E2E paths (peer granted) */
	uint16_t *tx_credits;       /* PATH_MAX_HOPS entries */
	uint8_t *tx_credit_active;  /* PATH_MAX_HOPS entries */

	/* cable receive reassembly */
	uint8_t rxbuf[sizeof(struct odl_link_hdr) + ODL_LINK_MAX_BODY];
	size_t rxlen;
	bool rx_desync;             /* stream corrupted: discard until reset */
};

/* nhi.c */
void nhi_log(struct nhi *n, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void nhi_guest_error(struct nhi *n, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void nhi_raise(struct nhi *n, unsigned int idx);
/* Deliver a frame/packet to RX ring `r`. `hold`: keep it if no buffer. */
void nhi_rx_deliver(struct nhi *n, unsigned int r, uint8_t sof, uint8_t eof,
		    const uint8_t *data, uint32_t len, uint16_t flags);
void nhi_tx_kick(struct nhi *n, unsigned int r);
void nhi_tx_kick_all(struct nhi *n);
void nhi_e2e_update(struct nhi *n, unsigned int r);
void nhi_e2e_update_all(struct nhi *n);
bool nhi_ctl_rx_running(const struct nhi *n);
/* E2E credit grant from the peer for link HopID `hop`: false if the
 * profile's single-E2E-slot quirk drops it. */
bool nhi_e2e_credit_accept(struct nhi *n, unsigned int hop, unsigned int credits);

/* router.c */
void router_init(struct nhi *n);
void router_reset(struct nhi *n);
void router_free(struct nhi *n);
void router_ctl_from_host(struct nhi *n, uint8_t pdf, const uint8_t *buf,
			  uint32_t len);
/* Data frame from TX ring r: route through PATH<NHI>[r]. Returns false
 * if it must wait for E2E credits (nothing consumed). */
bool router_tx_frame(struct nhi *n, unsigned int r, uint8_t sof, uint8_t eof,
		     const uint8_t *data, uint32_t len, bool dry_run);
void router_cable_msg(struct nhi *n, uint16_t type, const uint8_t *body,
		      uint32_t len);
void router_link_state(struct nhi *n, bool up, uint8_t lanes, uint32_t gbps,
		       uint64_t peer_uid);
void router_hotplug_tick(struct nhi *n);
void router_ctl_ring_started(struct nhi *n);
/* Input HopID on lane 0 whose path ends in NHI RX ring r, or -1. */
int router_in_hop_for_ring(const struct nhi *n, unsigned int r);
void router_send_msg(struct nhi *n, uint16_t type, const void *body,
		     uint32_t len, const void *extra, uint32_t extra_len);
/* REG_RESET.HRR: host router reset; the port retrains once enumerated. */
void router_host_reset(struct nhi *n);
/* Output HopID of the path from NHI TX ring r, or -1. */
int router_out_hop_for_ring(const struct nhi *n, unsigned int r);

#endif
