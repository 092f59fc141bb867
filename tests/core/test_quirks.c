// SPDX-License-Identifier: MIT
/* Controller profiles' quirk switches and the run-time fault hooks
 * (docs/profiles.md). Each test names the behaviour it pins down. */
#include <string.h>

#include "harness.h"

#define FRAME_MASKS ((1u << 1) << 16 | (1u << 2))
#define TXD (MEM_BASE + 0x40000)
#define TXD2 (MEM_BASE + 0x42000)
#define RXD (MEM_BASE + 0x41000)
#define RXD2 (MEM_BASE + 0x43000)
#define TXB (MEM_BASE + 0x50000)
#define RXB (MEM_BASE + 0x70000)
#define R_RESET 0x39898u

/* USB4 v2 register bits, spelled out independently of the core */
#define CS1_ASYM_TX   (1u << 6)
#define CS1_ASYM_RX   (2u << 6)
#define P19_START_ASYM (1u << 24)
#define P18_CSA       (1u << 22)
#define LANE_CS1      (8 + 1)    /* lane capability at 8 */
#define PORT_CS18     (0x10 + 0x12)
#define PORT_CS19     (0x10 + 0x13)

static const struct nhi_stats *st(void)
{
	return nhi_get_stats(H.n);
}

static void setup_named(const char *name)
{
	struct nhi_profile p;

	ck_assert_int_eq(nhi_profile_lookup(name, &p), 0);
	h_setup_profile(&p);
}

static void up_named(const char *name, uint32_t gbps)
{
	setup_named(name);
	h_ctl_start();
	h_configure_router();
	h_link_state(true, 2, gbps, 0xaabbccddeeff0011ull);
	h_clear_records();
}

static void send_data(uint16_t hop, const uint8_t *pl, uint32_t len)
{
	static uint8_t buf[sizeof(struct odl_link_data) + 4096];
	struct odl_link_data d;

	memset(&d, 0, sizeof(d));
	d.hopid = hop;
	d.sof = 1;
	d.eof = 2;
	memcpy(buf, &d, sizeof(d));
	memcpy(buf + sizeof(d), pl, len);
	h_cable(ODL_LINK_DATA, buf, (uint32_t)(sizeof(d) + len));
}

static void post_tx(uint64_t ring_base, unsigned int ring, unsigned int slot,
		    uint32_t len)
{
	h_fill(TXB + 4096ull * slot, (uint8_t)slot, 4096);
	h_desc(ring_base, slot, TXB + 4096ull * slot,
	       (len & 0xfff) | 2u << 12 | 1u << 16 | D_POSTED | D_INTERRUPT);
	h_wr(R_TX(ring) + 8, (slot + 1) << 16);
}

static void post_rx(uint64_t ring_base, unsigned int ring, unsigned int slot)
{
	h_desc(ring_base, slot, RXB + 4096ull * slot, D_POSTED | D_INTERRUPT);
	h_wr(R_RX(ring) + 8, slot + 1);
}

static void credit(uint16_t hop, uint16_t n)
{
	struct odl_link_credit c = { .hopid = hop, .credits = n };

	h_cable(ODL_LINK_CREDIT, &c, sizeof(c));
}

static uint32_t lane_cs1(void)
{
	return h_cfg_read1(1, 1, LANE_CS1);
}

/* ------------------------------------------------------------------ */
/* built-in profiles                                                    */

struct want_ids {
	const char *name;
	uint16_t vendor, device, rvendor, rdevice;
	uint32_t class;
	uint8_t usb4, caps;
};

static const struct want_ids ids[] = {
	{ "generic", 0x1234, 0x0b45, 0x1234, 0x0b46, 0x0c0340, 0x20, 0 },
	{ "intel-barlow-ridge", 0x8086, 0x5781, 0x8087, 0x5781, 0x0c0340, 0x40, 0x40 },
	{ "amd-phoenix", 0x1022, 0x1668, 0x0438, 0x020a, 0x0c0340, 0x20, 0 },
	{ "amd-strix-halo", 0x1022, 0x158d, 0x0438, 0x0210, 0x0c0340, 0x20, 0 },
	{ "apple-m4", 0x106b, 0x10f5, 0x106b, 0x10f5, 0x0c0340, 0x20, 0 },
	{ "intel-falcon-ridge", 0x8086, 0x156c, 0x8086, 0x156c, 0x088000, 0x20, 0 },
};

START_TEST(profile_identities)
{
	const struct want_ids *w = &ids[_i];
	struct nhi_profile p;

	ck_assert_int_eq(nhi_profile_lookup(w->name, &p), 0);
	ck_assert_uint_eq(p.pci_vendor, w->vendor);
	ck_assert_uint_eq(p.pci_device, w->device);
	ck_assert_uint_eq(p.router_vendor, w->rvendor);
	ck_assert_uint_eq(p.router_device, w->rdevice);
	ck_assert_uint_eq(p.pci_class, w->class);
	ck_assert_uint_eq(p.usb4_version, w->usb4);
	ck_assert_uint_eq(p.caps_version, w->caps);
	/* a USB4 v2 router needs the v2 NHI capability and vice versa */
	ck_assert((p.usb4_version >= 0x40) == (p.caps_version >= 0x40));
	/* router IDs outside Linux's TBT1-3 generation table */
	ck_assert_uint_ne(p.router_device, 0x156b);
	ck_assert_uint_ne(p.router_device, 0x156d);
}
END_TEST

START_TEST(profile_quirk_defaults_and_validation)
{
	struct nhi_profile p;
	char err[160];

	ck_assert_int_eq(nhi_profile_lookup("generic", &p), 0);
	ck_assert_uint_eq(p.dma_misc_writable, 0x20004);
	ck_assert_uint_eq(p.lowpower_period_ms, 5000);
	ck_assert_uint_eq(p.e2e_rx_slots, 0);
	ck_assert_uint_eq(p.hop_count_reported, 0);
	ck_assert_int_eq(nhi_profile_parse("hop_count = 4\nhop_count_reported = 5\n",
					   &p, err, sizeof(err)), 0);
	ck_assert_int_eq(nhi_profile_validate(&p, err, sizeof(err)), -1);
	ck_assert(strstr(err, "hop_count_reported") != NULL);
	ck_assert_int_eq(nhi_profile_lookup("generic", &p), 0);
	ck_assert_int_eq(nhi_profile_parse("lowpower_idle_ms = 10\nlowpower_period_ms = 0\n",
					   &p, err, sizeof(err)), 0);
	ck_assert_int_eq(nhi_profile_validate(&p, err, sizeof(err)), -1);
	ck_assert(strstr(err, "lowpower") != NULL);
	ck_assert_int_eq(nhi_profile_parse("e2e_victim = 2\n", &p, err,
					   sizeof(err)), -1);
	ck_assert_int_eq(nhi_profile_parse("hidden_hop_silent = 1\nasym_capable = 1\n"
					   "e2e_reserved_hop = 1\nring_mbps = 12100\n",
					   &p, err, sizeof(err)), 0);
	ck_assert_uint_eq(p.ring_mbps, 12100);
}
END_TEST

/* ------------------------------------------------------------------ */
/* intel-barlow-ridge: USB4 v2                                          */

START_TEST(barlow_caps_and_identity)
{
	uint32_t v;

	setup_named("intel-barlow-ridge");
	/* REG_CAPS: hop count low bits, version 0x40 in bits 23:16 */
	ck_assert_uint_eq(h_rd(R_HOP_COUNT), 12u | 0x40u << 16);
	h_ctl_start();
	/* ROUTER_CS_0 vendor 8087 device 5781; ROUTER_CS_4 version 0x40 */
	ck_assert_uint_eq(h_cfg_read1(2, 0, 0), 0x57818087u);
	ck_assert_uint_eq(h_cfg_read1(2, 0, 4) >> 24, 0x40);
	/* LANE_ADP_CS_0: Gen 2/3/4 supported, dual width */
	v = h_cfg_read1(1, 1, 8);
	ck_assert_uint_eq((v >> 16) & 0xf, 0xe);
	/* PORT_CS_18.CSA: asymmetric capable */
	ck_assert_uint_eq(h_cfg_read1(1, 1, PORT_CS18) & P18_CSA, P18_CSA);
	h_teardown();
	/* not on a v1 router */
	setup_named("generic");
	h_ctl_start();
	ck_assert_uint_eq(h_cfg_read1(1, 1, PORT_CS18) & P18_CSA, 0);
	ck_assert_uint_eq(h_rd(R_HOP_COUNT), 12);
	h_teardown();
}
END_TEST

START_TEST(barlow_host_router_reset)
{
	struct h_pkt pk;
	uint32_t v;

	setup_named("intel-barlow-ridge");
	h_link_state(true, 2, 40, 0xaabbccddeeff0011ull);
	/* as Linux 6.12's nhi_reset(): write HRR, sleep, poll it clear */
	ck_assert_uint_eq(h_rd(R_RESET), 0);
	h_wr(R_RESET, 1);
	ck_assert_uint_eq(h_rd(R_RESET), 1);
	ck_assert_uint_eq(st()->host_resets, 1);
	h_wr(R_RESET, 1); /* while in progress: ignored */
	ck_assert_uint_eq(st()->host_resets, 1);
	h_advance(100000000);
	ck_assert_uint_eq(h_rd(R_RESET), 0);
	h_ctl_start();
	/* the port retrains only once the router is enumerated */
	v = lane_cs1();
	ck_assert_uint_eq((v >> 26) & 0xf, 7); /* CLd */
	ck_assert_uint_eq(h_ctl_pending(), 0);
	h_configure_router();
	/* now: link up, plug events for both lanes */
	v = lane_cs1();
	ck_assert_uint_eq((v >> 26) & 0xf, 2);
	/* the plug events (lanes 1 and 2) came with the write's reply */
	ck_assert_uint_eq(H.skipped_events, 2);
	ck_assert(!h_ctl_recv(&pk));
	/* Gen 4: 40 Gb/s per lane code 0x2, bonded (width 2) with no
	 * bonding handshake */
	ck_assert_uint_eq((v >> 16) & 0xf, 0x2);
	ck_assert_uint_eq((v >> 20) & 0x3f, 2);
	h_teardown();
}
END_TEST

START_TEST(reset_register_absent_on_v1)
{
	setup_named("generic");
	h_wr(R_RESET, 1);
	ck_assert_uint_eq(h_rd(R_RESET), 0);
	ck_assert_uint_eq(st()->host_resets, 0);
	ck_assert_uint_eq(st()->guest_errors, 1);
	h_teardown();
}
END_TEST

START_TEST(barlow_asymmetric_link)
{
	uint32_t v;
	struct h_msg *m;
	struct odl_link_lane l;

	up_named("intel-barlow-ridge", 40);
	ck_assert_uint_eq((lane_cs1() >> 20) & 0x3f, 2);
	/* usb4_port_asym_set_link_width(ASYM_TX) + usb4_port_asym_start() */
	v = lane_cs1();
	h_cfg_write1(1, 1, LANE_CS1, (v & ~(3u << 6)) | CS1_ASYM_TX);
	ck_assert_uint_eq((lane_cs1() >> 20) & 0x3f, 2); /* not yet */
	v = h_cfg_read1(1, 1, PORT_CS19);
	h_cfg_write1(1, 1, PORT_CS19, v | P19_START_ASYM);
	ck_assert_uint_eq(h_cfg_read1(1, 1, PORT_CS19) & P19_START_ASYM, 0);
	ck_assert_uint_eq(h_cfg_read1(1, 1, PORT_CS18) & (1u << 24), 0); /* TIP */
	ck_assert_uint_eq((lane_cs1() >> 20) & 0x3f, 4); /* ASYM_TX */
	/* the partner is told: target width field bits 3:2 = 1 */
	m = h_last_msg(ODL_LINK_LANE);
	ck_assert_ptr_nonnull(m);
	memcpy(&l, m->body, sizeof(l));
	ck_assert_uint_eq((l.target_width >> 2) & 3, 1);
	/* back to symmetric */
	v = lane_cs1();
	h_cfg_write1(1, 1, LANE_CS1, v & ~(3u << 6));
	h_cfg_write1(1, 1, PORT_CS19, P19_START_ASYM);
	ck_assert_uint_eq((lane_cs1() >> 20) & 0x3f, 2);
	/* RX x3 */
	h_cfg_write1(1, 1, LANE_CS1, (lane_cs1() & ~(3u << 6)) | CS1_ASYM_RX);
	h_cfg_write1(1, 1, PORT_CS19, P19_START_ASYM);
	ck_assert_uint_eq((lane_cs1() >> 20) & 0x3f, 8);
	/* a link down/up trains symmetric again */
	h_link_state(false, 0, 0, 0);
	h_link_state(true, 2, 40, 0xaabbccddeeff0011ull);
	ck_assert_uint_eq((lane_cs1() >> 20) & 0x3f, 2);
	/* the partner went asymmetric (it transmits on 3 lanes): we receive */
	h_peer_lane(3 | 1u << 2, 1, 0);
	ck_assert_uint_eq((lane_cs1() >> 20) & 0x3f, 8);
	h_peer_lane(3 | 2u << 2, 1, 0);
	ck_assert_uint_eq((lane_cs1() >> 20) & 0x3f, 4);
	h_teardown();
}
END_TEST

START_TEST(asym_refused_below_gen4)
{
	up_named("intel-barlow-ridge", 20); /* cable trained at Gen 3 */
	h_cfg_write1(1, 1, LANE_CS1, (lane_cs1() & ~(3u << 6)) | CS1_ASYM_TX);
	h_cfg_write1(1, 1, PORT_CS19, P19_START_ASYM);
	ck_assert_uint_eq((lane_cs1() >> 20) & 0x3f, 1);
	ck_assert_uint_eq((lane_cs1() >> 16) & 0xf, 0x4);
	h_teardown();
	up_named("generic", 20);
	h_cfg_write1(1, 1, LANE_CS1, (lane_cs1() & ~(3u << 6)) | CS1_ASYM_TX);
	h_cfg_write1(1, 1, PORT_CS19, P19_START_ASYM);
	ck_assert_uint_eq((lane_cs1() >> 20) & 0x3f, 1);
	h_teardown();
}
END_TEST

START_TEST(retrain_to_lower_speed_shows)
{
	/* the cable retrains live: LANE_ADP_CS_1 current speed/width follow */
	up_named("intel-barlow-ridge", 40);
	ck_assert_uint_eq((lane_cs1() >> 16) & 0xf, 0x2);
	ck_assert_uint_eq((lane_cs1() >> 20) & 0x3f, 2);
	h_link_state(true, 2, 20, 0xaabbccddeeff0011ull);
	ck_assert_uint_eq((lane_cs1() >> 16) & 0xf, 0x4);
	ck_assert_uint_eq((lane_cs1() >> 20) & 0x3f, 1); /* Gen 3: not bonded */
	h_link_state(true, 1, 10, 0xaabbccddeeff0011ull);
	ck_assert_uint_eq((lane_cs1() >> 16) & 0xf, 0x8);
	ck_assert_uint_eq((lane_cs1() >> 20) & 0x3f, 1);
	/* lane 1 is down on a one-lane link */
	ck_assert_uint_eq((h_cfg_read1(1, 2, LANE_CS1) >> 26) & 0xf, 7);
	h_teardown();
	/* generic: a Gen 2 retrain shows code 0x8 (10 Gb/s) */
	up_named("generic", 20);
	ck_assert_uint_eq((lane_cs1() >> 16) & 0xf, 0x4);
	h_link_state(true, 2, 10, 0xaabbccddeeff0011ull);
	ck_assert_uint_eq((lane_cs1() >> 16) & 0xf, 0x8);
	h_teardown();
}
END_TEST

START_TEST(intel_auto_clear_semantics)
{
	/* DMA_MISC bit 2: signalling clears the status bit; reading the
	 * status register clears it too (bit 17 clear) */
	up_named("intel-barlow-ridge", 40);
	h_wr(R_DMA_MISC, 1u << 2);
	ck_assert_uint_eq(h_rd(R_DMA_MISC), 1u << 2);
	h_path_rx(8, 1);
	h_rx_start(1, RXD, 8, 0, 0, FRAME_MASKS);
	post_rx(RXD, 1, 0);
	post_rx(RXD, 1, 1);
	h_wr(R_ENABLE, 1u << (1 + 12));
	h_clear_records();
	send_data(8, (const uint8_t *)"abcd", 4);
	ck_assert_uint_eq(H.nirq, 1);
	ck_assert_uint_eq(h_rd(R_STATUS) & 1u << 13, 0); /* auto-cleared */
	h_wr(R_DMA_MISC, 0);
	h_wr(R_ENABLE, 0);
	send_data(8, (const uint8_t *)"efgh", 4);
	ck_assert_uint_eq(h_rd(R_STATUS) & 1u << 13, 1u << 13);
	ck_assert_uint_eq(h_rd(R_STATUS) & 1u << 13, 0); /* read-to-clear */
	h_teardown();
}
END_TEST

/* ------------------------------------------------------------------ */
/* amd-strix-halo                                                       */

START_TEST(strix_hop_count_and_hidden_rings)
{
	up_named("amd-strix-halo", 20);
	/* 3 reported, 7 usable */
	ck_assert_uint_eq(h_rd(R_HOP_COUNT), 3);
	h_wr(R_RX(5), 0x1230);
	ck_assert_uint_eq(h_rd(R_RX(5)), 0x1230);
	ck_assert_uint_eq(h_rd(R_TX(7)), 0); /* beyond the 7 */
	/* the NHI adapter's paths cover the 7 physical rings */
	ck_assert_uint_eq(h_cfg_read1(1, 3, 5) & 0x7ff, 6);
	/* interrupt layout follows the reported count: RX ring 1 is bit 4 */
	h_wr(R_ENABLE, 0xffffffff);
	ck_assert_uint_eq(h_rd(R_ENABLE), 0x3f);
	/* DMA_MISC: only bit 17 */
	h_wr(R_DMA_MISC, 1u << 2 | 1u << 17);
	ck_assert_uint_eq(h_rd(R_DMA_MISC), 1u << 17);
	h_path_rx(8, 1);
	h_rx_start(1, RXD, 8, 0, 0, FRAME_MASKS);
	post_rx(RXD, 1, 0);
	h_clear_records();
	send_data(8, (const uint8_t *)"x", 1);
	ck_assert_uint_eq(H.nirq, 1);
	ck_assert_uint_eq(h_rd(R_STATUS) & 1u << 4, 1u << 4);
	/* hidden ring 5: the frame lands, COMPLETED, but no interrupt */
	h_path_rx(9, 5);
	h_rx_start(5, RXD2, 8, 0, 0, FRAME_MASKS);
	post_rx(RXD2, 5, 0);
	h_clear_records();
	send_data(9, (const uint8_t *)"y", 1);
	ck_assert_uint_eq(h_desc_d8(RXD2, 0) & D_COMPLETED, D_COMPLETED);
	ck_assert_uint_eq(H.nirq, 0);
	ck_assert_uint_eq(st()->rx_frames, 2);
	h_teardown();
}
END_TEST

/* Two E2E RX rings on one Strix NHI: RX 1 (tbnet-like) and RX 2. */
static void strix_two_e2e(const char *extra)
{
	struct nhi_profile p;

	ck_assert_int_eq(nhi_profile_lookup("amd-strix-halo", &p), 0);
	if (extra)
		ck_assert_int_eq(nhi_profile_parse(extra, &p, NULL, 0), 0);
	h_setup_profile(&p);
	h_ctl_start();
	h_configure_router();
	h_link_state(true, 2, 20, 0xaabbccddeeff0011ull);
	/* TX paths: ring 1 -> HopID 8, ring 2 -> HopID 9 */
	h_path_tx(1, 8);
	h_path_tx(2, 9);
	h_tx_start(1, TXD, 16, F_E2E);
	h_tx_start(2, TXD2, 16, F_E2E);
	/* E2E RX rings returning credits through TX 1 and TX 2 */
	h_path_rx(8, 1);
	h_rx_start(1, RXD, 8, 0, F_E2E | 1u << 12, FRAME_MASKS);
	h_path_rx(9, 2);
	h_rx_start(2, RXD2, 8, 0, F_E2E | 2u << 12, FRAME_MASKS);
	h_clear_records();
}

START_TEST(strix_second_e2e_ring_wedges_tx)
{
	strix_two_e2e(NULL);
	/* the peer grants credits for both paths: dropped on the floor */
	credit(8, 4);
	credit(9, 4);
	ck_assert_uint_eq(st()->credits_rcvd, 0);
	ck_assert_uint_eq(st()->e2e_credits_dropped, 8);
	/* traffic on ring 2: descriptors posted, never consumed */
	post_tx(TXD2, 2, 0, 64);
	post_tx(TXD2, 2, 1, 64);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 0);
	ck_assert_uint_eq(h_desc_d8(TXD2, 0) & D_COMPLETED, 0);
	ck_assert_uint_eq(h_rd(R_TX(2) + 8), 2u << 16 | 0); /* consumer stuck */
	ck_assert_uint_eq(H.nirq, 0);                       /* no interrupt */
	ck_assert_uint_eq(h_rd(R_STATUS) & 0x36, 0);        /* no data-ring status */
	ck_assert_uint_eq(h_logs_at(NHI_LOG_ERROR), 0);     /* no error */
	ck_assert_uint_eq(st()->guest_errors + st()->dma_faults, 0);
	ck_assert_uint_eq(st()->e2e_wedged, 1);
	/* and ring 1, if it carries traffic, wedges too (victim = all) */
	post_tx(TXD, 1, 0, 64);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 0);
	ck_assert_uint_eq(st()->e2e_wedged, 2);
	/* more grants while two E2E rings are active: still dropped */
	credit(9, 16);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 0);
	/* the mitigation: E2E off on the second RX ring -> grants count
	 * again from the next one on */
	h_wr(R_RXOPT(2), F_ENABLE | 2u << 12);
	credit(9, 4);
	credit(8, 4);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 3);
	ck_assert_uint_eq(h_desc_d8(TXD2, 1) & D_COMPLETED, D_COMPLETED);
	h_teardown();
}
END_TEST

START_TEST(strix_single_e2e_ring_works)
{
	strix_two_e2e(NULL);
	h_ring_stop(true, 2); /* only RX 1 uses E2E */
	credit(8, 4);
	ck_assert_uint_eq(st()->e2e_credits_dropped, 0);
	h_wr(R_ENABLE, 1u << 1);
	h_clear_records();
	post_tx(TXD, 1, 0, 64);
	post_tx(TXD, 1, 1, 64);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 2);
	ck_assert_uint_eq(h_desc_d8(TXD, 1) & D_COMPLETED, D_COMPLETED);
	ck_assert_uint_eq(H.nirq, 2);
	h_teardown();
}
END_TEST

START_TEST(strix_credits_left_then_wedge)
{
	/* credits granted before the second ring came: spent, then stuck
	 * ("within one credit window") */
	strix_two_e2e(NULL);
	h_ring_stop(true, 2);
	credit(9, 2);
	h_rx_start(2, RXD2, 8, 0, F_E2E | 2u << 12, FRAME_MASKS);
	for (unsigned int i = 0; i < 4; i++)
		post_tx(TXD2, 2, i, 64);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 2);
	credit(9, 8);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 2);
	ck_assert_uint_eq(h_rd(R_TX(2) + 8), 4u << 16 | 2);
	h_teardown();
}
END_TEST

START_TEST(strix_victim_second_only)
{
	strix_two_e2e("e2e_victim = 1\n");
	credit(8, 4); /* the first E2E ring's path: fine */
	credit(9, 4); /* the second's: dropped */
	ck_assert_uint_eq(st()->credits_rcvd, 4);
	ck_assert_uint_eq(st()->e2e_credits_dropped, 4);
	post_tx(TXD, 1, 0, 64);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 1);
	post_tx(TXD2, 2, 0, 64);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 1);
	h_teardown();
}
END_TEST

START_TEST(phoenix_several_e2e_rings)
{
	struct nhi_profile p;

	ck_assert_int_eq(nhi_profile_lookup("amd-phoenix", &p), 0);
	h_setup_profile(&p);
	h_ctl_start();
	h_configure_router();
	h_link_state(true, 2, 20, 0xaabbccddeeff0011ull);
	h_path_tx(1, 8);
	h_path_tx(2, 9);
	h_tx_start(1, TXD, 16, F_E2E);
	h_tx_start(2, TXD2, 16, F_E2E);
	h_rx_start(1, RXD, 8, 0, F_E2E | 1u << 12, FRAME_MASKS);
	h_rx_start(2, RXD2, 8, 0, F_E2E | 2u << 12, FRAME_MASKS);
	credit(8, 4);
	credit(9, 4);
	ck_assert_uint_eq(st()->e2e_credits_dropped, 0);
	post_tx(TXD, 1, 0, 64);
	post_tx(TXD2, 2, 0, 64);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 2);
	/* AMD: no Intel auto-clear bit */
	h_wr(R_DMA_MISC, 1u << 2 | 1u << 17);
	ck_assert_uint_eq(h_rd(R_DMA_MISC), 1u << 17);
	h_teardown();
}
END_TEST

START_TEST(strix_per_ring_ceiling)
{
	int64_t t0;
	unsigned int sent;

	up_named("amd-strix-halo", 20);
	h_path_tx(1, 8);
	h_tx_start(1, TXD, 256, 0);
	t0 = H.now;
	for (unsigned int i = 0; i < 200; i++) {
		h_fill(TXB, 0x5a, 4096);
		h_desc(TXD, i, TXB, 0 | 2u << 12 | 1u << 16 | D_POSTED);
	}
	h_wr(R_TX(1) + 8, 200u << 16);
	/* 4 KiB at 12.1 Gb/s = 2708 ns a frame; 100 us of slack: ~38 go */
	sent = h_msgs_of(ODL_LINK_DATA);
	ck_assert_uint_ge(sent, 30);
	ck_assert_uint_le(sent, 40);
	ck_assert_uint_ge(st()->tx_paced, 1);
	ck_assert(H.timer_armed[NHI_TIMER_TXPACE]);
	/* the rest follows at the ceiling */
	while (h_msgs_of(ODL_LINK_DATA) < 200 && H.now - t0 < 10000000)
		h_advance(10000);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 200);
	/* 200 frames * 2708 ns - 100 us slack ~= 441 us; within 10% */
	ck_assert_int_ge(H.now - t0, 400000);
	ck_assert_int_le(H.now - t0, 480000);
	h_teardown();
}
END_TEST

/* ------------------------------------------------------------------ */
/* intel-falcon-ridge: QUIRK_E2E                                        */

static uint64_t fr_run(uint32_t e2e_hop)
{
	uint8_t pl[16] = { 1 };
	unsigned int drv = 0;

	up_named("intel-falcon-ridge", 10);
	h_path_rx(8, 2);
	h_rx_start(2, RXD, 8, 0, F_E2E | e2e_hop << 12, FRAME_MASKS);
	/* three credit windows: post 7 buffers, receive 7 frames, repeat */
	for (unsigned int w = 0; w < 3; w++) {
		for (unsigned int i = 0; i < 7; i++)
			h_desc(RXD, (drv + i) % 8, RXB + 4096ull * i,
			       D_POSTED | D_INTERRUPT);
		drv = (drv + 7) % 8;
		h_wr(R_RX(2) + 8, drv);
		for (unsigned int i = 0; i < 7; i++)
			send_data(8, pl, sizeof(pl));
	}
	return st()->rx_frames;
}

START_TEST(falcon_e2e_reserved_hop)
{
	/* Linux's workaround: credits returned through reserved HopID 1 */
	ck_assert_uint_eq(fr_run(1), 21);
	ck_assert_uint_eq(st()->e2e_rx_lost, 0);
	h_teardown();
	/* without it: frames lost from the second credit window on */
	ck_assert_uint_eq(fr_run(2), 7);
	ck_assert_uint_eq(st()->e2e_rx_lost, 14);
	ck_assert_uint_eq(h_logs_at(NHI_LOG_ERROR), 0);
	h_teardown();
}
END_TEST

/* ------------------------------------------------------------------ */
/* apple-m4: low-power receive                                          */

START_TEST(apple_lowpower_bursts)
{
	uint8_t pl[8] = { 7 };

	up_named("apple-m4", 20);
	h_path_rx(8, 1);
	h_rx_start(1, RXD, 16, 0, 0, FRAME_MASKS);
	for (unsigned int i = 0; i < 8; i++)
		post_rx(RXD, 1, i);
	h_wr(R_ENABLE, 1u << (1 + 12));
	h_clear_records();
	/* busy ring: immediate */
	send_data(8, pl, sizeof(pl));
	ck_assert_uint_eq(h_desc_d8(RXD, 0) & D_COMPLETED, D_COMPLETED);
	ck_assert_uint_eq(H.nirq, 1);
	/* idle for 1.5 s: the next frames wait for the 5 s burst */
	h_advance(1500000000LL);
	send_data(8, pl, sizeof(pl));
	h_advance(1000000000LL);
	send_data(8, pl, sizeof(pl));
	ck_assert_uint_eq(h_desc_d8(RXD, 1) & D_COMPLETED, 0);
	ck_assert_uint_eq(H.nirq, 1);
	/* the data is in memory already; the completion is what is late */
	ck_assert_uint_eq(st()->rx_frames, 3);
	h_advance(3999000000LL);
	ck_assert_uint_eq(h_desc_d8(RXD, 2) & D_COMPLETED, 0);
	h_advance(1000000LL);
	ck_assert_uint_eq(h_desc_d8(RXD, 1) & D_COMPLETED, D_COMPLETED);
	ck_assert_uint_eq(h_desc_d8(RXD, 2) & D_COMPLETED, D_COMPLETED);
	ck_assert_uint_eq(H.nirq, 3);
	ck_assert_uint_eq(st()->lowpower_bursts, 1);
	/* awake after the burst */
	send_data(8, pl, sizeof(pl));
	ck_assert_uint_eq(h_desc_d8(RXD, 3) & D_COMPLETED, D_COMPLETED);
	/* control ring unaffected (idle or not) */
	h_advance(3000000000LL);
	ck_assert_uint_eq(h_cfg_read1(2, 0, 0), 0x10f5106bu);
	h_teardown();
}
END_TEST

/* ------------------------------------------------------------------ */
/* fault hooks                                                          */

static void fault_rx_setup(void)
{
	up_named("generic", 20);
	h_path_rx(8, 1);
	h_rx_start(1, RXD, 16, 0, 0, FRAME_MASKS);
	for (unsigned int i = 0; i < 12; i++)
		post_rx(RXD, 1, i);
	h_wr(R_ENABLE, 1u << (1 + 12));
	h_wr(R_DMA_MISC, 1u << 17); /* status sticky, as on AMD */
	h_clear_records();
}

START_TEST(fault_drop_nth_rx_irq)
{
	uint8_t pl[4] = { 1, 2, 3, 4 };

	fault_rx_setup();
	ck_assert_int_eq(nhi_fault_set(H.n, NHI_FAULT_DROP_IRQ_NTH,
				       1 | NHI_FAULT_RX, 2), 0);
	send_data(8, pl, 4);
	ck_assert_uint_eq(H.nirq, 1);
	h_wr(R_STATUS_CLR, 0xffffffff);
	send_data(8, pl, 4);
	/* lost: no MSI-X, not latched; but the completion is in memory and
	 * the status bit is set, so a poll recovers it */
	ck_assert_uint_eq(H.nirq, 1);
	ck_assert_uint_eq(h_desc_d8(RXD, 1) & D_COMPLETED, D_COMPLETED);
	ck_assert_uint_eq(h_rd(R_STATUS) & 1u << 13, 1u << 13);
	ck_assert_uint_eq(st()->irq_dropped, 1);
	h_wr(R_ENABLE, 0);
	h_wr(R_ENABLE, 1u << 13);
	ck_assert_uint_eq(H.nirq, 1); /* unmasking does not replay it */
	/* one-shot */
	send_data(8, pl, 4);
	send_data(8, pl, 4);
	ck_assert_uint_eq(H.nirq, 3);
	h_teardown();
}
END_TEST

START_TEST(fault_drop_every_tx_irq)
{
	up_named("generic", 20);
	h_path_tx(1, 8);
	h_tx_start(1, TXD, 16, 0);
	h_wr(R_ENABLE, 1u << 1);
	h_clear_records();
	ck_assert_int_eq(nhi_fault_parse(H.n, "drop-irq tx=1 every=3", NULL, 0), 0);
	for (unsigned int i = 0; i < 9; i++)
		post_tx(TXD, 1, i, 32);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 9);
	ck_assert_uint_eq(H.nirq, 6);
	ck_assert_uint_eq(st()->irq_dropped, 3);
	ck_assert_int_eq(nhi_fault_parse(H.n, "clear tx=1", NULL, 0), 0);
	post_tx(TXD, 1, 9, 32);
	post_tx(TXD, 1, 10, 32);
	post_tx(TXD, 1, 11, 32);
	ck_assert_uint_eq(H.nirq, 9);
	h_teardown();
}
END_TEST

START_TEST(fault_delay_completions)
{
	uint8_t pl[4] = { 9, 9, 9, 9 };

	fault_rx_setup();
	ck_assert_int_eq(nhi_fault_parse(H.n, "delay rx=1 us=500", NULL, 0), 0);
	send_data(8, pl, 4);
	h_advance(100000);
	send_data(8, pl, 4);
	/* data written, completion not yet */
	ck_assert_uint_eq(h_r32(RXB), 0x09090909);
	ck_assert_uint_eq(h_desc_d8(RXD, 0) & D_COMPLETED, 0);
	ck_assert_uint_eq(H.nirq, 0);
	ck_assert(H.timer_armed[NHI_TIMER_COMPL]);
	h_advance(400000);
	ck_assert_uint_eq(h_desc_d8(RXD, 0) & D_COMPLETED, D_COMPLETED);
	ck_assert_uint_eq(h_desc_d8(RXD, 1) & D_COMPLETED, 0);
	ck_assert_uint_eq(H.nirq, 1);
	h_advance(100000);
	ck_assert_uint_eq(h_desc_d8(RXD, 1) & D_COMPLETED, D_COMPLETED);
	ck_assert_uint_eq(H.nirq, 2);
	ck_assert_uint_eq(st()->compl_delayed, 2);
	/* stopping the ring forgets what is pending */
	send_data(8, pl, 4);
	h_ring_stop(true, 1);
	h_advance(1000000);
	ck_assert_uint_eq(h_desc_d8(RXD, 2) & D_COMPLETED, 0);
	ck_assert_uint_eq(H.nirq, 2);
	h_teardown();
}
END_TEST

START_TEST(fault_delay_tx_in_order)
{
	up_named("generic", 20);
	h_path_tx(1, 8);
	h_tx_start(1, TXD, 16, 0);
	h_wr(R_ENABLE, 1u << 1);
	h_clear_records();
	ck_assert_int_eq(nhi_fault_set(H.n, NHI_FAULT_DELAY_US, 1, 50), 0);
	post_tx(TXD, 1, 0, 32);
	/* the frame left; the descriptor completes later */
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 1);
	ck_assert_uint_eq(h_desc_d8(TXD, 0) & D_COMPLETED, 0);
	ck_assert_int_eq(nhi_fault_set(H.n, NHI_FAULT_CLEAR, 1, 0), 0);
	post_tx(TXD, 1, 1, 32); /* not delayed, but waits behind slot 0 */
	ck_assert_uint_eq(h_desc_d8(TXD, 1) & D_COMPLETED, 0);
	h_advance(50000);
	ck_assert_uint_eq(h_desc_d8(TXD, 0) & D_COMPLETED, D_COMPLETED);
	ck_assert_uint_eq(h_desc_d8(TXD, 1) & D_COMPLETED, D_COMPLETED);
	ck_assert_uint_eq(H.nirq, 2);
	/* a delayed write-back that faults stops the ring */
	ck_assert_int_eq(nhi_fault_set(H.n, NHI_FAULT_DELAY_US, 1, 10), 0);
	post_tx(TXD, 1, 2, 32);
	H.fault_lo = TXD;
	H.fault_hi = TXD + 0x1000;
	h_advance(10000);
	ck_assert_uint_eq(st()->dma_faults, 1);
	H.fault_lo = H.fault_hi = 0;
	/* a reset drops pending write-backs and disarms the timer */
	ck_assert_int_eq(nhi_fault_set(H.n, NHI_FAULT_DELAY_US, 1, 10), 0);
	h_tx_start(1, TXD, 16, 0);
	post_tx(TXD, 1, 0, 32);
	nhi_reset(H.n);
	ck_assert(!H.timer_armed[NHI_TIMER_COMPL]);
	h_teardown();
}
END_TEST

struct fault_text {
	const char *text;
	int rc;
	const char *err;
};

static const struct fault_text ftexts[] = {
	{ "drop-irq rx=1 nth=3", 0, NULL },
	{ "drop-irq tx=0 every=2; delay rx=2 us=100", 0, NULL },
	{ "clear", 0, NULL },
	{ "clear rx=3", 0, NULL },
	{ "", 0, NULL },
	{ " ; ", 0, NULL },
	{ "bogus tx=1", -1, "unknown fault 'bogus'" },
	{ "drop-irq nth=3", -1, "give tx=N or rx=N" },
	{ "drop-irq rx=1", -1, "give one of nth=K" },
	{ "drop-irq rx=1 nth=2 every=3", -1, "give one of nth=K" },
	{ "drop-irq rx=99 nth=1", -1, "bad argument 'rx'" },
	{ "drop-irq rx=14 nth=1", -1, "no such ring" },
	{ "delay tx=1", -1, "give us=N" },
	{ "delay tx=1 us=99999999999", -1, "bad ring or delay" },
	{ "delay tx=1 us", -1, "expected key=value" },
	{ "delay tx=1 us=x", -1, "bad value for 'us'" },
	{ "delay tx=1 foo=1", -1, "bad argument 'foo'" },
	{ "clear tx=13", -1, "no such ring" },
	{ "path-refuse count=3", 0, NULL },
	{ "path-refuse count=0; clear", 0, NULL },
	{ "path-refuse", -1, "give only count=N to 'path-refuse'" },
	{ "path-refuse count=1 tx=1", -1, "give only count=N" },
	{ "path-refuse count=1 nth=1", -1, "give only count=N" },
	{ "drop-irq rx=1 nth=1 count=1", -1, "count=N is for path-refuse" },
	{ "clear count=1", -1, "count=N is for path-refuse" },
};

START_TEST(fault_text_forms)
{
	const struct fault_text *t = &ftexts[_i];
	char err[160] = "";

	h_setup();
	ck_assert_int_eq(nhi_fault_parse(H.n, t->text, err, sizeof(err)), t->rc);
	if (t->err)
		ck_assert_msg(strstr(err, t->err) != NULL, "'%s': got '%s'",
			      t->text, err);
	ck_assert_int_eq(nhi_fault_parse(H.n, t->text, NULL, 0), t->rc);
	h_teardown();
}
END_TEST

/* path-refuse: the next N writes that make a path entry valid are answered
 * with an error packet (Lock) and change nothing; deactivations, rewrites
 * of a valid entry and other spaces pass; a clear ends it */
static bool write_refused(unsigned int port, unsigned int off,
			  const uint32_t *v)
{
	uint32_t req[5] = { 0, 0, h_addr(0, port, off, 2, 0), v[0], v[1] };
	struct h_pkt pk;

	h_ctl_send(2, req, 5);
	ck_assert(h_ctl_recv(&pk));
	ck_assert(pk.crc_ok);
	if (pk.pdf == 2)
		return false;
	ck_assert_uint_eq(pk.pdf, 3);
	ck_assert_uint_eq(pk.dw[2], 15u | port << 8);
	return true;
}

START_TEST(fault_path_refuse)
{
	const uint32_t on[2] = { 0x801c1801, 0x017ff501 };
	const uint32_t off[2] = { 0x001c1801, 0x017ff501 };
	uint32_t r[2];

	h_setup();
	h_ctl_start();
	h_configure_router();
	ck_assert_int_eq(nhi_fault_parse(H.n, "path-refuse count=2", NULL, 0), 0);
	/* an inactive entry written inactive, bit 31 of a dword 1 and of
	 * another space: not counted */
	ck_assert(!write_refused(1, 16, off));
	h_cfg_write1(0, 1, 17, off[1] | 0x80000000u);
	h_cfg_write1(0, 1, 17, off[1]);
	h_cfg_write1(2, 0, 2, 0x80000000u);
	h_cfg_write1(2, 0, 2, 0);
	/* two activations refused, the entry left as it was: one that
	 * starts at an odd offset (entry 7's dword 1, entry 8's dword 0) */
	{
		const uint32_t odd[2] = { off[1], on[0] };

		ck_assert(write_refused(1, 15, odd));
	}
	ck_assert(write_refused(3, 2, on));
	ck_assert(h_cfg_read(0, 1, 16, 2, r));
	ck_assert_uint_eq(r[0], off[0]);
	ck_assert(h_cfg_read(0, 3, 2, 2, r));
	ck_assert_uint_eq(r[0] & 0x80000000u, 0);
	ck_assert_uint_eq(st()->path_refused, 2);
	ck_assert(h_log_has("path activation at port 3 off 0x2 refused"));
	/* the third goes through; so does rewriting the valid entry */
	nhi_fault_parse(H.n, "path-refuse count=1", NULL, 0);
	ck_assert_int_eq(nhi_fault_parse(H.n, "clear", NULL, 0), 0);
	ck_assert(!write_refused(1, 16, on));
	ck_assert_int_eq(nhi_fault_parse(H.n, "path-refuse count=1", NULL, 0), 0);
	ck_assert(!write_refused(1, 16, on));
	ck_assert(h_cfg_read(0, 1, 16, 2, r));
	ck_assert_uint_eq(r[0], on[0]);
	/* deactivating is never refused; activating again is */
	ck_assert(!write_refused(1, 16, off));
	ck_assert(write_refused(1, 16, on));
	ck_assert(!write_refused(1, 16, on));
	ck_assert_uint_eq(st()->path_refused, 3);
	ck_assert_uint_eq(st()->guest_errors, 0);
	h_teardown();
}
END_TEST

START_TEST(fault_api_edges)
{
	char long_text[600];

	h_setup();
	ck_assert_int_eq(nhi_fault_set(H.n, NHI_FAULT_DROP_IRQ_NTH, 12, 1), -1);
	ck_assert_int_eq(nhi_fault_set(H.n, NHI_FAULT_DROP_IRQ_NTH, 0x200, 1), -1);
	ck_assert_int_eq(nhi_fault_set(H.n, (enum nhi_fault_kind)99, 1, 1), -1);
	ck_assert_int_eq(nhi_fault_set(H.n, NHI_FAULT_PATH_REFUSE, 1, 1), -1);
	ck_assert_int_eq(nhi_fault_set(H.n, NHI_FAULT_CLEAR_ALL, 0, 0), 0);
	ck_assert_int_eq(nhi_fault_parse(H.n, NULL, NULL, 0), 0);
	memset(long_text, 'x', sizeof(long_text));
	long_text[sizeof(long_text) - 1] = 0;
	ck_assert_int_eq(nhi_fault_parse(H.n, long_text, NULL, 0), -1);
	h_teardown();
}
END_TEST

Suite *suite_quirks(void)
{
	Suite *s = suite_create("quirks");
	TCase *tc = tcase_create("quirks");

	tcase_add_loop_test(tc, profile_identities, 0,
			    (int)(sizeof(ids) / sizeof(ids[0])));
	tcase_add_test(tc, profile_quirk_defaults_and_validation);
	tcase_add_test(tc, barlow_caps_and_identity);
	tcase_add_test(tc, barlow_host_router_reset);
	tcase_add_test(tc, reset_register_absent_on_v1);
	tcase_add_test(tc, barlow_asymmetric_link);
	tcase_add_test(tc, asym_refused_below_gen4);
	tcase_add_test(tc, retrain_to_lower_speed_shows);
	tcase_add_test(tc, intel_auto_clear_semantics);
	tcase_add_test(tc, strix_hop_count_and_hidden_rings);
	tcase_add_test(tc, strix_second_e2e_ring_wedges_tx);
	tcase_add_test(tc, strix_single_e2e_ring_works);
	tcase_add_test(tc, strix_credits_left_then_wedge);
	tcase_add_test(tc, strix_victim_second_only);
	tcase_add_test(tc, phoenix_several_e2e_rings);
	tcase_add_test(tc, strix_per_ring_ceiling);
	tcase_add_test(tc, falcon_e2e_reserved_hop);
	tcase_add_test(tc, apple_lowpower_bursts);
	tcase_add_test(tc, fault_drop_nth_rx_irq);
	tcase_add_test(tc, fault_drop_every_tx_irq);
	tcase_add_test(tc, fault_delay_completions);
	tcase_add_test(tc, fault_delay_tx_in_order);
	tcase_add_loop_test(tc, fault_text_forms, 0,
			    (int)(sizeof(ftexts) / sizeof(ftexts[0])));
	tcase_add_test(tc, fault_path_refuse);
	tcase_add_test(tc, fault_api_edges);
	suite_add_tcase(s, tc);
	return s;
}
