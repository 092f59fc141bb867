// SPDX-License-Identifier: MIT
/* Fake host-ops harness for the NHI core unit tests (see harness.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

struct harness H;

/* ------------------------------------------------------------------ */
/* host ops                                                             */

static bool mem_ok(uint64_t addr, size_t len)
{
	if (addr < MEM_BASE || len > MEM_SIZE ||
	    addr - MEM_BASE > MEM_SIZE - len)
		return false;
	if (H.fault_hi > H.fault_lo && addr < H.fault_hi &&
	    addr + len > H.fault_lo)
		return false;
	return true;
}

static int op_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
	(void)opaque;
	if (!mem_ok(addr, len)) {
		H.dma_refused++;
		return -1;
	}
	memcpy(buf, H.mem + (addr - MEM_BASE), len);
	H.dma_reads++;
	return 0;
}

static int op_dma_write(void *opaque, uint64_t addr, const void *buf,
			size_t len)
{
	(void)opaque;
	if (!mem_ok(addr, len)) {
		H.dma_refused++;
		return -1;
	}
	memcpy(H.mem + (addr - MEM_BASE), buf, len);
	H.dma_writes++;
	return 0;
}

static void op_msix(void *opaque, unsigned int vector)
{
	(void)opaque;
	if (H.nirq < H_MAX_IRQ)
		H.irq[H.nirq] = vector;
	H.nirq++;
	if (vector < NHI_MSIX_VECTORS)
		H.irq_count[vector]++;
}

static void op_wake(void *opaque)
{
	(void)opaque;
	H.wakes++;
}

static void op_timer_arm(void *opaque, int timer, int64_t deadline)
{
	(void)opaque;
	if (timer < 0 || timer >= NHI_TIMER_COUNT)
		return;
	H.timer_arm_calls++;
	H.timer_armed[timer] = deadline >= 0;
	H.timer_deadline[timer] = deadline;
}

static int64_t op_now(void *opaque)
{
	(void)opaque;
	return H.now;
}

static void op_cable_tx(void *opaque, const void *msg, size_t len)
{
	struct odl_link_hdr h;
	struct h_msg *m;

	(void)opaque;
	if (len < sizeof(h) || H.nmsgs >= H_MAX_MSGS) {
		H.msgs_dropped++;
		return;
	}
	memcpy(&h, msg, sizeof(h));
	m = &H.msgs[H.nmsgs++];
	m->type = h.type;
	m->flags = h.flags;
	m->len = h.len;
	/* record the real body length sent, to catch header/body mismatch */
	m->body = malloc(len - sizeof(h) + 1);
	memcpy(m->body, (const uint8_t *)msg + sizeof(h), len - sizeof(h));
	if (h.len != len - sizeof(h))
		m->len = 0xffffffffu; /* header lies about the body */
}

static void op_log(void *opaque, int level, const char *msg)
{
	(void)opaque;
	if (H.nlogs >= H_MAX_LOGS)
		return;
	H.logs[H.nlogs].level = level;
	H.logs[H.nlogs].text = strdup(msg);
	H.nlogs++;
}

/* ------------------------------------------------------------------ */
/* life cycle                                                           */

void h_default_profile(struct nhi_profile *p)
{
	if (nhi_profile_lookup("generic", p)) {
		fprintf(stderr, "harness: no generic profile\n");
		abort();
	}
}

void h_init_cfg(const struct nhi_profile *p, uint64_t uid)
{
	memset(&H.cfg, 0, sizeof(H.cfg));
	H.cfg.profile = *p;
	H.cfg.uid = uid;
	H.ops.dma_read = op_dma_read;
	H.ops.dma_write = op_dma_write;
	H.ops.msix = op_msix;
	H.ops.wake = op_wake;
	H.ops.timer_arm = op_timer_arm;
	H.ops.now = op_now;
	H.ops.cable_tx = op_cable_tx;
	H.ops.log = op_log;
}

void h_setup_profile(const struct nhi_profile *p)
{
	char err[256] = "";

	memset(&H, 0, sizeof(H));
	H.mem = calloc(1, MEM_SIZE);
	h_init_cfg(p, 0x1122334455667788ull);
	H.now = 1000000000LL;
	H.n = nhi_new(&H.cfg, &H.ops, NULL, err, sizeof(err));
	if (!H.n) {
		fprintf(stderr, "harness: nhi_new failed: %s\n", err);
		abort();
	}
	H.ctl_tx_desc = MEM_BASE + 0x1000;
	H.ctl_rx_desc = MEM_BASE + 0x2000;
	H.ctl_tx_buf = MEM_BASE + 0x10000;
	H.ctl_rx_buf = MEM_BASE + 0x20000;
	nhi_cable_connected(H.n, true);
}

void h_setup(void)
{
	struct nhi_profile p;

	h_default_profile(&p);
	h_setup_profile(&p);
}

void h_clear_records(void)
{
	for (unsigned int i = 0; i < H.nmsgs; i++)
		free(H.msgs[i].body);
	for (unsigned int i = 0; i < H.nlogs; i++)
		free(H.logs[i].text);
	H.nmsgs = 0;
	H.nlogs = 0;
	H.nirq = 0;
	memset(H.irq_count, 0, sizeof(H.irq_count));
	H.msgs_dropped = 0;
}

void h_teardown(void)
{
	nhi_free(H.n);
	H.n = NULL;
	h_clear_records();
	free(H.mem);
	H.mem = NULL;
}

/* ------------------------------------------------------------------ */
/* memory, MMIO                                                         */

uint8_t *h_ptr(uint64_t gpa)
{
	if (gpa < MEM_BASE || gpa - MEM_BASE >= MEM_SIZE) {
		fprintf(stderr, "harness: bad gpa 0x%llx\n",
			(unsigned long long)gpa);
		abort();
	}
	return H.mem + (gpa - MEM_BASE);
}

void h_w32(uint64_t gpa, uint32_t v)
{
	uint8_t *p = h_ptr(gpa);

	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

uint32_t h_r32(uint64_t gpa)
{
	const uint8_t *p = h_ptr(gpa);

	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

void h_fill(uint64_t gpa, uint8_t byte, size_t len)
{
	memset(h_ptr(gpa), byte, len);
}

void h_wr(uint32_t off, uint32_t v)
{
	nhi_mmio_write(H.n, off, v);
}

uint32_t h_rd(uint32_t off)
{
	return nhi_mmio_read(H.n, off);
}

/* ------------------------------------------------------------------ */
/* rings                                                                */

void h_tx_start(unsigned int r, uint64_t base, uint32_t size, uint32_t flags)
{
	h_wr(R_TX(r) + 0, (uint32_t)base);
	h_wr(R_TX(r) + 4, (uint32_t)(base >> 32));
	h_wr(R_TX(r) + 0xc, size);
	h_wr(R_TXOPT(r) + 4, 0);
	h_wr(R_TXOPT(r), flags | F_ENABLE);
}

void h_rx_start(unsigned int r, uint64_t base, uint32_t size,
		uint32_t frame_size, uint32_t flags, uint32_t masks)
{
	h_wr(R_RX(r) + 0, (uint32_t)base);
	h_wr(R_RX(r) + 4, (uint32_t)(base >> 32));
	h_wr(R_RX(r) + 0xc, frame_size << 16 | size);
	h_wr(R_RXOPT(r) + 4, masks);
	h_wr(R_RXOPT(r), flags | F_ENABLE);
}

void h_ring_stop(bool rx, unsigned int r)
{
	uint32_t base = rx ? R_RX(r) : R_TX(r);

	h_wr(rx ? R_RXOPT(r) : R_TXOPT(r), 0);
	h_wr(base + 0, 0);
	h_wr(base + 4, 0);
	h_wr(base + 8, 0);
	h_wr(base + 0xc, 0);
}

void h_desc(uint64_t ring, unsigned int i, uint64_t phys, uint32_t d8)
{
	uint64_t d = ring + 16ull * i;

	h_w32(d, (uint32_t)phys);
	h_w32(d + 4, (uint32_t)(phys >> 32));
	h_w32(d + 8, d8);
	h_w32(d + 12, 0);
}

uint32_t h_desc_d8(uint64_t ring, unsigned int i)
{
	return h_r32(ring + 16ull * i + 8);
}

/* ------------------------------------------------------------------ */
/* CRC and packets                                                      */

uint32_t h_crc32c(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t crc = 0xffffffffu;

	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
	}
	return ~crc;
}

void h_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

uint32_t h_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

size_t h_mkpkt(uint8_t *out, const uint32_t *dw, unsigned int ndw)
{
	for (unsigned int i = 0; i < ndw; i++)
		h_be32(out + 4 * i, dw[i]);
	h_be32(out + 4 * ndw, h_crc32c(out, 4 * (size_t)ndw));
	return 4 * (size_t)ndw + 4;
}

/* ------------------------------------------------------------------ */
/* control channel                                                      */

#define CTL_RING 10u

static void ctl_rx_post(void)
{
	unsigned int s = H.ctl_rx_head;

	h_desc(H.ctl_rx_desc, s, H.ctl_rx_buf + 256ull * s, D_POSTED | D_INTERRUPT);
	H.ctl_rx_head = (s + 1) % CTL_RING;
	h_wr(R_RX(0) + 8, H.ctl_rx_head);
}

void h_ctl_start(void)
{
	/* nhi-device.md Appendix A rows 21..43 */
	h_wr(R_TX(0) + 0, (uint32_t)H.ctl_tx_desc);
	h_wr(R_TX(0) + 4, (uint32_t)(H.ctl_tx_desc >> 32));
	h_wr(R_TX(0) + 0xc, CTL_RING);
	h_wr(R_TXOPT(0) + 4, 0);
	h_wr(R_TXOPT(0), 0xc0000000u);
	h_wr(R_DMA_MISC, h_rd(R_DMA_MISC) | (1u << 17));
	h_wr(R_IVR, (h_rd(R_IVR) & ~0xfu) | 0);
	h_wr(R_ENABLE, h_rd(R_ENABLE) | 1u);
	h_wr(R_RX(0) + 0, (uint32_t)H.ctl_rx_desc);
	h_wr(R_RX(0) + 4, (uint32_t)(H.ctl_rx_desc >> 32));
	h_wr(R_RX(0) + 0xc, 0x0100000au);
	h_wr(R_RXOPT(0) + 4, 0xffffffffu);
	h_wr(R_RXOPT(0), 0xc0000000u);
	{
		unsigned int hops = h_rd(R_HOP_COUNT) & 0x3ff;
		unsigned int idx = hops; /* RX ring 0 */
		uint32_t off = R_IVR + 4 * (idx / 8), sh = 4 * (idx % 8);

		h_wr(off, (h_rd(off) & ~(0xfu << sh)) | (1u << sh));
		h_wr(R_ENABLE + 4 * (idx / 32),
		     h_rd(R_ENABLE + 4 * (idx / 32)) | (1u << (idx % 32)));
	}
	H.ctl_tx_head = H.ctl_tx_tail = 0;
	H.ctl_rx_head = H.ctl_rx_tail = 0;
	for (unsigned int i = 0; i < CTL_RING - 1; i++)
		ctl_rx_post();
}

unsigned int h_ctl_send_raw(uint8_t pdf, const uint8_t *bytes, uint32_t len)
{
	unsigned int s;

	while (H.ctl_tx_tail != H.ctl_tx_head &&
	       (h_desc_d8(H.ctl_tx_desc, H.ctl_tx_tail) & D_COMPLETED))
		H.ctl_tx_tail = (H.ctl_tx_tail + 1) % CTL_RING;
	if ((H.ctl_tx_head + 1) % CTL_RING == H.ctl_tx_tail) {
		fprintf(stderr, "harness: control TX ring full\n");
		abort();
	}
	s = H.ctl_tx_head;
	memcpy(h_ptr(H.ctl_tx_buf + 256ull * s), bytes, len);
	h_desc(H.ctl_tx_desc, s, H.ctl_tx_buf + 256ull * s,
	       (len & 0xfff) | (uint32_t)pdf << 12 | (uint32_t)pdf << 16 |
	       D_POSTED | D_INTERRUPT);
	H.ctl_tx_head = (s + 1) % CTL_RING;
	h_wr(R_TX(0) + 8, H.ctl_tx_head << 16);
	return s;
}

unsigned int h_ctl_send(uint8_t pdf, const uint32_t *dw, unsigned int ndw)
{
	uint8_t buf[256];
	size_t len = h_mkpkt(buf, dw, ndw);

	return h_ctl_send_raw(pdf, buf, (uint32_t)len);
}

unsigned int h_ctl_pending(void)
{
	unsigned int posted = (H.ctl_rx_head + CTL_RING - H.ctl_rx_tail) % CTL_RING;
	unsigned int k = 0;

	while (k < posted &&
	       (h_desc_d8(H.ctl_rx_desc, (H.ctl_rx_tail + k) % CTL_RING) &
		D_COMPLETED))
		k++;
	return k;
}

bool h_ctl_recv(struct h_pkt *p)
{
	unsigned int s = H.ctl_rx_tail;
	uint32_t d8;

	if (!h_ctl_pending())
		return false;
	memset(p, 0, sizeof(*p));
	d8 = h_desc_d8(H.ctl_rx_desc, s);
	p->d8 = d8;
	p->len = d8 & 0xfff;
	p->pdf = (d8 >> 12) & 0xf;
	p->sof = (d8 >> 16) & 0xf;
	if (p->len > 256)
		p->len = 256;
	memcpy(p->bytes, h_ptr(H.ctl_rx_buf + 256ull * s), p->len);
	if (p->len >= 4) {
		p->ndw = (p->len - 4) / 4;
		for (unsigned int i = 0; i < p->ndw; i++)
			p->dw[i] = h_get_be32(p->bytes + 4 * i);
		p->crc_ok = h_crc32c(p->bytes, p->len - 4) ==
			    h_get_be32(p->bytes + p->len - 4);
	}
	H.ctl_rx_tail = (s + 1) % CTL_RING;
	ctl_rx_post();
	return true;
}

uint32_t h_addr(unsigned int space, unsigned int port, unsigned int off,
		unsigned int len, unsigned int seq)
{
	return (off & 0x1fff) | (len & 0x3f) << 13 | (port & 0x3f) << 19 |
	       (space & 3) << 25 | (seq & 3) << 27;
}

/* The next reply, skipping (and counting) unsolicited hot-plug and
 * XDomain packets that may sit before it on ring 0. */
static bool recv_reply(struct h_pkt *p)
{
	while (h_ctl_recv(p)) {
		if (p->pdf == 5 || p->pdf == 6 || p->pdf == 7) {
			H.skipped_events++;
			continue;
		}
		return true;
	}
	return false;
}

bool h_cfg_read(unsigned int space, unsigned int port, unsigned int off,
		unsigned int len, uint32_t *out)
{
	uint32_t req[3] = { 0, 0, h_addr(space, port, off, len, 0) };
	struct h_pkt p;

	h_ctl_send(1, req, 3);
	if (!recv_reply(&p) || p.pdf != 1 || p.ndw != 3 + len || !p.crc_ok)
		return false;
	memcpy(out, p.dw + 3, 4 * len);
	return true;
}

bool h_cfg_write(unsigned int space, unsigned int port, unsigned int off,
		 const uint32_t *vals, unsigned int len)
{
	uint32_t req[64] = { 0, 0, h_addr(space, port, off, len, 0) };
	struct h_pkt p;

	memcpy(req + 3, vals, 4 * len);
	h_ctl_send(2, req, 3 + len);
	return recv_reply(&p) && p.pdf == 2 && p.ndw == 3 && p.crc_ok;
}

uint32_t h_cfg_read1(unsigned int space, unsigned int port, unsigned int off)
{
	uint32_t v = 0;

	ck_assert_msg(h_cfg_read(space, port, off, 1, &v),
		      "cfg read space %u port %u off 0x%x failed", space, port,
		      off);
	return v;
}

void h_cfg_write1(unsigned int space, unsigned int port, unsigned int off,
		  uint32_t v)
{
	ck_assert_msg(h_cfg_write(space, port, off, &v, 1),
		      "cfg write space %u port %u off 0x%x failed", space, port,
		      off);
}

void h_configure_router(void)
{
	uint32_t v[4];

	ck_assert(h_cfg_read(2, 0, 1, 4, v));
	v[0] = (v[0] & ~(0x3fu << 8 | 7u << 20)) | 3u << 8;
	v[1] = 0;
	v[2] = 0x80000000u;
	v[3] = (v[3] & ~0xffffu) | 0x200a;
	ck_assert(h_cfg_write(2, 0, 1, v, 4));
}

void h_path_rx(unsigned int hop, unsigned int ring)
{
	uint32_t v[2] = { 0x801c1800u | ring, 0x017ff501u };

	ck_assert(h_cfg_write(0, 1, 2 * hop, v, 2));
}

void h_path_tx(unsigned int ring, unsigned int hop)
{
	uint32_t v[2] = { 0x801c0800u | hop, 0x037ff501u };

	ck_assert(h_cfg_write(0, 3, 2 * ring, v, 2));
}

void h_advance(int64_t ns)
{
	H.now += ns;
	for (int t = 0; t < NHI_TIMER_COUNT; t++) {
		if (H.timer_armed[t] && H.timer_deadline[t] <= H.now) {
			H.timer_armed[t] = false;
			nhi_timer_fire(H.n, t);
		}
	}
}

/* ------------------------------------------------------------------ */
/* cable                                                                */

void h_cable(uint16_t type, const void *body, uint32_t len)
{
	uint8_t buf[sizeof(struct odl_link_hdr) + ODL_LINK_MAX_BODY + 64];
	struct odl_link_hdr h = { .len = len, .type = type, .flags = 0 };

	memcpy(buf, &h, sizeof(h));
	if (len)
		memcpy(buf + sizeof(h), body, len);
	nhi_cable_rx(H.n, buf, sizeof(h) + len);
}

void h_link_state(bool up, uint8_t lanes, uint32_t gbps, uint64_t peer)
{
	struct odl_link_state s;

	memset(&s, 0, sizeof(s));
	s.up = up;
	s.lanes = lanes;
	s.lane_gbps = gbps;
	s.peer_uid = peer;
	h_cable(ODL_LINK_STATE, &s, sizeof(s));
}

void h_link_up(uint8_t lanes)
{
	h_link_state(true, lanes, 20, 0xaabbccddeeff0011ull);
}

void h_peer_lane(uint8_t target_width, uint8_t lane1_enabled, uint8_t bonded)
{
	struct odl_link_lane l = { target_width, lane1_enabled, bonded, 0 };

	h_cable(ODL_LINK_LANE, &l, sizeof(l));
}

unsigned int h_msgs_of(uint16_t type)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < H.nmsgs; i++)
		k += H.msgs[i].type == type;
	return k;
}

struct h_msg *h_last_msg(uint16_t type)
{
	for (unsigned int i = H.nmsgs; i-- > 0;)
		if (H.msgs[i].type == type)
			return &H.msgs[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* logs                                                                 */

unsigned int h_logs_at(int level)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < H.nlogs; i++)
		k += H.logs[i].level == level;
	return k;
}

bool h_log_has(const char *substr)
{
	for (unsigned int i = 0; i < H.nlogs; i++)
		if (strstr(H.logs[i].text, substr))
			return true;
	return false;
}
