// SPDX-License-Identifier: MIT
/* XDomain transport over the cable (router-cm.md §3.1, §7.3 item 6) and the
 * HELLO message (odl_link.h). */
#include <string.h>

#include "harness.h"

static const struct nhi_stats *st(void)
{
	return nhi_get_stats(H.n);
}

static void xd_setup(void)
{
	h_setup();
	h_ctl_start();
	h_configure_router();
	h_link_up(1);
	/* swallow the plug events */
	{
		struct h_pkt p;
		uint32_t a[3] = { 0, 0, 0x80000107 };

		while (h_ctl_recv(&p))
			;
		h_ctl_send(3, a, 3);
		a[2] = 0x80000207;
		h_ctl_send(3, a, 3);
	}
	h_clear_records();
}

/* An XDomain UUID request as tb_xdp_fill_header() builds it:
 * route, length_sn (5 dwords follow the header), 16-byte UUID, type. */
static unsigned int xd_packet(uint32_t *dw, uint32_t route_hi, uint32_t route_lo,
			      unsigned int seq)
{
	dw[0] = route_hi;
	dw[1] = route_lo;
	dw[2] = 5u | (seq & 3) << 27;
	dw[3] = 0xb638d70e;
	dw[4] = 0x42ff40bb;
	dw[5] = 0x97c290e2;
	dw[6] = 0xc0b2ff07;
	dw[7] = 0x00000001; /* UUID_REQUEST */
	return 8;
}

START_TEST(host_to_cable_unchanged)
{
	uint32_t dw[8];
	uint8_t wire[36];
	struct h_msg *m;
	unsigned int slot;

	xd_packet(dw, 0, 1, 2);
	h_mkpkt(wire, dw, 8);
	slot = h_ctl_send(6, dw, 8);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_CTRL), 1);
	ck_assert_uint_eq(H.nmsgs, 1);
	m = h_last_msg(ODL_LINK_CTRL);
	ck_assert_uint_eq(m->flags, 0);
	ck_assert_uint_eq(m->len, 4 + 36);
	ck_assert_uint_eq(m->body[0], 6);
	ck_assert_uint_eq(m->body[1], 0);
	ck_assert_uint_eq(m->body[2], 0);
	ck_assert_uint_eq(m->body[3], 0);
	ck_assert_mem_eq(m->body + 4, wire, 36);
	ck_assert_uint_eq(h_desc_d8(H.ctl_tx_desc, slot) & D_COMPLETED, D_COMPLETED);
	ck_assert_uint_eq(h_ctl_pending(), 0); /* no error reply */
	ck_assert_uint_eq(st()->xdomain_fwd, 1);
}
END_TEST

START_TEST(pdf7_forwarded_too)
{
	uint32_t dw[8];
	struct h_msg *m;

	xd_packet(dw, 0x80000000, 1, 0);
	h_ctl_send(7, dw, 8);
	m = h_last_msg(ODL_LINK_CTRL);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->body[0], 7);
	ck_assert_uint_eq(h_get_be32(m->body + 4), 0x80000000);
	ck_assert_uint_eq(st()->xdomain_fwd, 1);
}
END_TEST

START_TEST(host_xdomain_link_down)
{
	uint32_t dw[8];
	struct h_pkt p;

	h_link_state(false, 0, 0, 0);
	while (h_ctl_recv(&p))
		; /* unplug events */
	h_clear_records();
	xd_packet(dw, 0, 1, 0);
	h_ctl_send(6, dw, 8);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_CTRL), 0);
	/* refused with "port not connected" (router-cm.md §2.4) */
	ck_assert(h_ctl_recv(&p));
	ck_assert_uint_eq(p.pdf, 3);
	ck_assert_uint_eq(p.dw[0], 0x80000000);
	ck_assert_uint_eq(p.dw[1], 1);
	ck_assert_uint_eq(p.dw[2], 0x00000100);
}
END_TEST

START_TEST(host_xdomain_non_lane)
{
	uint32_t dw[8];

	xd_packet(dw, 0, 3, 0);
	h_ctl_send(6, dw, 8);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_CTRL), 0);
	ck_assert_uint_eq(h_ctl_pending(), 0);
	ck_assert_uint_eq(st()->guest_errors, 1);
}
END_TEST

static void cable_ctrl(uint8_t pdf, const uint8_t *pkt, uint32_t len)
{
	uint8_t body[4 + 300];

	memset(body, 0, 4);
	body[0] = pdf;
	memcpy(body + 4, pkt, len);
	h_cable(ODL_LINK_CTRL, body, 4 + len);
}

START_TEST(cable_to_host_route_rewritten)
{
	uint32_t dw[8];
	uint8_t wire[36];
	struct h_pkt p;

	/* the peer's route to us was 3 (its lane adapter number) */
	xd_packet(dw, 0, 3, 1);
	h_mkpkt(wire, dw, 8);
	cable_ctrl(6, wire, 36);
	ck_assert(h_ctl_recv(&p));
	ck_assert_uint_eq(p.pdf, 6);
	ck_assert_uint_eq(p.sof, 0);
	ck_assert_uint_eq(p.len, 36);
	ck_assert(p.crc_ok);
	ck_assert_uint_eq(p.dw[0] & 0x7fffffff, 0);
	ck_assert_uint_eq(p.dw[1], 1);  /* our lane-0 adapter */
	for (unsigned int i = 2; i < 8; i++)
		ck_assert_uint_eq(p.dw[i], dw[i]);
	ck_assert_uint_eq(st()->xdomain_rx, 1);
	ck_assert_uint_eq(st()->cable_errors, 0);
	/* PDF 7 with the CM bit set and a deep route */
	xd_packet(dw, 0x80000012, 0x0301, 0);
	h_mkpkt(wire, dw, 8);
	cable_ctrl(7, wire, 36);
	ck_assert(h_ctl_recv(&p));
	ck_assert_uint_eq(p.pdf, 7);
	ck_assert(p.crc_ok);
	ck_assert_uint_eq(p.dw[0] & 0x7fffffff, 0);
	ck_assert_uint_eq(p.dw[1], 1);
}
END_TEST

START_TEST(cable_bad_crc_dropped)
{
	uint32_t dw[8];
	uint8_t wire[36];

	xd_packet(dw, 0, 1, 0);
	h_mkpkt(wire, dw, 8);
	wire[20] ^= 0x40;
	cable_ctrl(6, wire, 36);
	ck_assert_uint_eq(h_ctl_pending(), 0);
	ck_assert_uint_eq(st()->cable_errors, 1);
	ck_assert_uint_eq(st()->xdomain_rx, 0);
	/* bad size */
	h_mkpkt(wire, dw, 8);
	cable_ctrl(6, wire, 35);
	ck_assert_uint_eq(st()->cable_errors, 2);
	/* shorter than the 3-dword header */
	h_mkpkt(wire, dw, 2);
	cable_ctrl(6, wire, 12);
	ck_assert_uint_eq(st()->cable_errors, 3);
	ck_assert_uint_eq(h_ctl_pending(), 0);
}
END_TEST

START_TEST(cable_non_xdomain_dropped)
{
	uint32_t dw[3] = { 0, 0, 0x04002000 };
	uint8_t wire[16];

	h_mkpkt(wire, dw, 3);
	cable_ctrl(1, wire, 16);
	cable_ctrl(3, wire, 16);
	cable_ctrl(5, wire, 16);
	ck_assert_uint_eq(h_ctl_pending(), 0);
	ck_assert_uint_eq(st()->cable_errors, 3);
	/* a CTRL message without even the PDF word */
	h_cable(ODL_LINK_CTRL, wire, 2);
	ck_assert_uint_eq(st()->cable_errors, 4);
}
END_TEST

START_TEST(cable_xdomain_ring0_off_dropped)
{
	uint32_t dw[8];
	uint8_t wire[36];

	h_ring_stop(true, 0);
	xd_packet(dw, 0, 1, 0);
	h_mkpkt(wire, dw, 8);
	cable_ctrl(6, wire, 36);
	ck_assert_uint_eq(st()->xdomain_rx, 0);
	ck_assert_uint_eq(st()->rx_dropped, 1);
	ck_assert_uint_eq(st()->cable_errors, 0);
}
END_TEST

START_TEST(hello_on_connect)
{
	struct odl_link_hello h;
	struct h_msg *m;

	nhi_cable_connected(H.n, false);
	h_clear_records();
	nhi_cable_connected(H.n, true);
	ck_assert_uint_eq(H.nmsgs, 1);
	m = h_last_msg(ODL_LINK_HELLO);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->len, sizeof(h));
	memcpy(&h, m->body, sizeof(h));
	ck_assert_uint_eq(h.magic, ODL_LINK_MAGIC);
	ck_assert_uint_eq(h.version, ODL_LINK_VERSION);
	ck_assert_uint_eq(h.lanes, 2);
	ck_assert_uint_eq(h.uid, 0x1122334455667788ull);
	ck_assert_uint_eq(h.lane_gbps, 20);
	ck_assert_str_eq(h.profile, "generic");
	/* nothing goes out while disconnected */
	nhi_cable_connected(H.n, false);
	h_clear_records();
	h_cfg_write1(1, 1, 9, 0x3c);
	ck_assert_uint_eq(H.nmsgs, 0);
}
END_TEST

Suite *suite_xdomain(void)
{
	Suite *s = suite_create("xdomain");
	TCase *tc = tcase_create("xdomain");

	tcase_add_checked_fixture(tc, xd_setup, h_teardown);
	tcase_add_test(tc, host_to_cable_unchanged);
	tcase_add_test(tc, pdf7_forwarded_too);
	tcase_add_test(tc, host_xdomain_link_down);
	tcase_add_test(tc, host_xdomain_non_lane);
	tcase_add_test(tc, cable_to_host_route_rewritten);
	tcase_add_test(tc, cable_bad_crc_dropped);
	tcase_add_test(tc, cable_non_xdomain_dropped);
	tcase_add_test(tc, cable_xdomain_ring0_off_dropped);
	tcase_add_test(tc, hello_on_connect);
	suite_add_tcase(s, tc);
	return s;
}
