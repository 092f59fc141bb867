/* SPDX-License-Identifier: MIT */
/*
 * Fake host for unit tests of the NHI model core (hw-model/core).
 *
 * One global harness instance `H` (Check fixtures create/destroy it):
 *  - fake guest memory: a byte array at guest-physical [MEM_BASE,
 *    MEM_BASE + MEM_SIZE); DMA outside it (or into an injected fault
 *    window) fails, like an IOMMU refusal;
 *  - recorded MSI-X vectors, wake calls;
 *  - a fake virtual clock and the timers the core arms;
 *  - captured cable messages (split into header + body);
 *  - captured log lines with their level.
 */
#ifndef TESTS_CORE_HARNESS_H
#define TESTS_CORE_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "usb4_nhi.h"
#include "odl_link.h"

#define MEM_BASE 0x100000000ull /* above 4 GiB: 64-bit DMA addresses */
#define MEM_SIZE (1u << 20)

#define H_MAX_IRQ  4096
#define H_MAX_MSGS 1024
#define H_MAX_LOGS 1024

/* BAR0 offsets (nhi-device.md §2.1), spelled out independently of the core. */
#define R_TX(n)        (0x00000u + 16u * (n))
#define R_RX(n)        (0x08000u + 16u * (n))
#define R_TXOPT(n)     (0x19800u + 32u * (n))
#define R_RXOPT(n)     (0x29800u + 32u * (n))
#define R_STATUS       0x37800u
#define R_STATUS_CLR   0x37808u
#define R_ENABLE       0x38200u
#define R_MASK_CLR     0x38208u
#define R_THROTTLE     0x38c00u
#define R_IVR          0x38c40u
#define R_HOP_COUNT    0x39640u
#define R_DMA_MISC     0x39864u
#define R_INMAIL_DATA  0x39900u
#define R_INMAIL_CMD   0x39904u
#define R_OUTMAIL_CMD  0x3990cu
#define R_FW_STS       0x39944u

#define F_ENABLE (1u << 31)
#define F_RAW    (1u << 30)
#define F_E2E    (1u << 28)

/* descriptor dword +8 flags (already shifted) */
#define D_CRC_ERR   (0x001u << 20)
#define D_COMPLETED (0x002u << 20)
#define D_POSTED    (0x004u << 20)
#define D_OVERRUN   (0x004u << 20)
#define D_INTERRUPT (0x008u << 20)

struct h_msg {
	uint16_t type;
	uint16_t flags;
	uint32_t len;
	uint8_t *body;
};

struct h_log {
	int level;
	char *text;
};

struct harness {
	struct nhi *n;
	struct nhi_host_ops ops;
	struct nhi_config cfg;
	uint8_t *mem;
	/* DMA fault injection: [fault_lo, fault_hi) refuses access */
	uint64_t fault_lo, fault_hi;
	uint64_t dma_reads, dma_writes;   /* successful accesses */
	uint64_t dma_refused;
	bool log_dma;                     /* record every DMA write address */
	unsigned int irq[H_MAX_IRQ];
	unsigned int nirq;
	unsigned int irq_count[NHI_MSIX_VECTORS];
	unsigned int wakes;
	int64_t now;
	bool timer_armed[NHI_TIMER_COUNT];
	int64_t timer_deadline[NHI_TIMER_COUNT];
	unsigned int timer_arm_calls;
	struct h_msg msgs[H_MAX_MSGS];
	unsigned int nmsgs;
	unsigned int msgs_dropped;
	struct h_log logs[H_MAX_LOGS];
	unsigned int nlogs;
	/* control channel driven like Linux does (ring 0) */
	uint64_t ctl_tx_desc, ctl_rx_desc, ctl_tx_buf, ctl_rx_buf;
	unsigned int ctl_tx_head, ctl_tx_tail, ctl_rx_head, ctl_rx_tail;
	unsigned int skipped_events; /* skipped by h_cfg_read/write */
};

extern struct harness H;

/* Life cycle */
void h_default_profile(struct nhi_profile *p);
void h_init_cfg(const struct nhi_profile *p, uint64_t uid);
void h_setup(void);               /* generic profile, uid 0x1122334455667788 */
void h_setup_profile(const struct nhi_profile *p);
void h_teardown(void);
void h_clear_records(void);       /* forget irqs, msgs, logs */

/* Guest memory */
uint8_t *h_ptr(uint64_t gpa);
void h_w32(uint64_t gpa, uint32_t v);
uint32_t h_r32(uint64_t gpa);
void h_fill(uint64_t gpa, uint8_t byte, size_t len);

/* MMIO */
void h_wr(uint32_t off, uint32_t v);
uint32_t h_rd(uint32_t off);

/* Rings (Linux order: base lo, base hi, size, options +4, options +0) */
void h_tx_start(unsigned int r, uint64_t base, uint32_t size, uint32_t flags);
void h_rx_start(unsigned int r, uint64_t base, uint32_t size,
		uint32_t frame_size, uint32_t flags, uint32_t masks);
void h_ring_stop(bool rx, unsigned int r);
void h_desc(uint64_t ring, unsigned int i, uint64_t phys, uint32_t d8);
uint32_t h_desc_d8(uint64_t ring, unsigned int i);

/* Control channel (ring 0): the Appendix A start sequence, then packets. */
void h_ctl_start(void);
/* Send a control packet: host-order dwords, CRC appended. Returns the TX slot. */
unsigned int h_ctl_send(uint8_t pdf, const uint32_t *dw, unsigned int ndw);
/* Send raw bytes as they are (for bad CRC/size). */
unsigned int h_ctl_send_raw(uint8_t pdf, const uint8_t *bytes, uint32_t len);
struct h_pkt {
	uint32_t d8;
	uint8_t pdf, sof;
	uint32_t len;          /* bytes incl. CRC */
	uint8_t bytes[256];
	uint32_t dw[64];       /* host-order dwords (excluding CRC) */
	unsigned int ndw;
	bool crc_ok;
};
/* Take the next completed RX ring-0 packet (re-posting the buffer).
 * Returns false if none is completed. */
bool h_ctl_recv(struct h_pkt *p);
unsigned int h_ctl_pending(void);   /* completed, not yet taken */
/* Convenience: config read/write at route 0. Returns the reply. */
bool h_cfg_read(unsigned int space, unsigned int port, unsigned int off,
		unsigned int len, uint32_t *out);
bool h_cfg_write(unsigned int space, unsigned int port, unsigned int off,
		 const uint32_t *vals, unsigned int len);
uint32_t h_cfg_read1(unsigned int space, unsigned int port, unsigned int off);
void h_cfg_write1(unsigned int space, unsigned int port, unsigned int off,
		  uint32_t v);
uint32_t h_addr(unsigned int space, unsigned int port, unsigned int off,
		unsigned int len, unsigned int seq);

/* Linux's tb_switch_configure(): RTR[1..4] = upstream 3, route 0 valid,
 * notification timeout 10 ms, CM USB4 version 0x20. */
void h_configure_router(void);
/* DMA paths exactly as Linux writes them (router-cm.md §5.4, C = 14):
 * RX: PATH<1>[hop] -> NHI adapter 3, ring; TX: PATH<3>[ring] -> lane 1, hop. */
void h_path_rx(unsigned int hop, unsigned int ring);
void h_path_tx(unsigned int ring, unsigned int hop);

/* Virtual clock: advance and fire due timers. */
void h_advance(int64_t ns);

/* Cable */
void h_cable(uint16_t type, const void *body, uint32_t len);
void h_link_state(bool up, uint8_t lanes, uint32_t gbps, uint64_t peer);
void h_link_up(uint8_t lanes);
void h_peer_lane(uint8_t target_width, uint8_t lane1_enabled, uint8_t bonded);
unsigned int h_msgs_of(uint16_t type);
struct h_msg *h_last_msg(uint16_t type);  /* NULL if none */

/* Logs */
unsigned int h_logs_at(int level);
bool h_log_has(const char *substr);

/* Independent bitwise CRC-32C (reflected 0x82F63B78, init/final ~0). */
uint32_t h_crc32c(const void *buf, size_t len);
size_t h_mkpkt(uint8_t *out, const uint32_t *dw, unsigned int ndw);
void h_be32(uint8_t *p, uint32_t v);
uint32_t h_get_be32(const uint8_t *p);

/* Suites */
#include <check.h>
Suite *suite_irq(void);
Suite *suite_trace(void);
Suite *suite_ring(void);
Suite *suite_ctl(void);
Suite *suite_cfg(void);
Suite *suite_hotplug(void);
Suite *suite_xdomain(void);
Suite *suite_data(void);
Suite *suite_bad(void);
Suite *suite_profile(void);
Suite *suite_regress(void);
Suite *suite_quirks(void);
Suite *suite_pending(void);

#endif
