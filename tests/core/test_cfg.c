// SPDX-License-Identifier: MIT
/* Router, adapter and path configuration spaces (router-cm.md §1, §5.4, §7.2). */
#include <string.h>

#include "harness.h"

#define RTR 2u
#define ADP 1u
#define PATH 0u

static void cfg_setup(void)
{
	h_setup();
	h_ctl_start();
	h_clear_records();
}

START_TEST(router_cs_reset_values)
{
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 0), 0x0b461234);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 1), 0x0100c31b);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 2), 0);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 3), 0);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 4), 0x20000000);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 5), 0);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 6), 0);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 26), 0);
}
END_TEST

START_TEST(router_cs1_fields)
{
	/* upstream (13:8) and depth (22:20) writable; cap pointer (7:0),
	 * max adapter (19:14), revision (31:24) read-only */
	h_cfg_write1(RTR, 0, 1, 0xffffffff);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 1), 0x0170ff1b);
	h_cfg_write1(RTR, 0, 1, 0);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 1), 0x0100c01b);
	/* what tb_switch_configure() writes */
	h_cfg_write1(RTR, 0, 1, 0x0100c31b);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 1), 0x0100c31b);
}
END_TEST

START_TEST(router_cs2_3_4)
{
	h_cfg_write1(RTR, 0, 2, 0xdeadbeef);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 2), 0xdeadbeef);
	h_cfg_write1(RTR, 0, 3, 0x80000000);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 3), 0x80000000);
	/* USB4 version (31:24) read-only 0x20 */
	h_cfg_write1(RTR, 0, 4, 0x40ffffff);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 4), 0x20ffffff);
	h_cfg_write1(RTR, 0, 4, 0x0000200a);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 4), 0x2000200a);
	/* the whole tb_switch_configure() sequence */
	h_configure_router();
	{
		uint32_t v[4];

		ck_assert(h_cfg_read(RTR, 0, 1, 4, v));
		ck_assert_uint_eq(v[0], 0x0100c31b);
		ck_assert_uint_eq(v[1], 0);
		ck_assert_uint_eq(v[2], 0x80000000);
		ck_assert_uint_eq(v[3], 0x2000200a);
	}
	/* identity is read-only */
	h_cfg_write1(RTR, 0, 0, 0);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 0), 0x0b461234);
}
END_TEST

START_TEST(uid)
{
	uint32_t v[2];

	ck_assert(h_cfg_read(RTR, 0, 7, 2, v));
	ck_assert_uint_eq(v[0], 0x55667788);
	ck_assert_uint_eq(v[1], 0x11223344);
	v[0] = v[1] = 0;
	ck_assert(h_cfg_write(RTR, 0, 7, v, 2));
	ck_assert(h_cfg_read(RTR, 0, 7, 2, v));
	ck_assert_uint_eq(v[0], 0x55667788);
	ck_assert_uint_eq(v[1], 0x11223344);
}
END_TEST

START_TEST(tmu_capability)
{
	/* RTR[1] 7:0 points at 0x1b; header 0x0300: ID 3, next 0 */
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 1) & 0xff, 0x1b);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 0x1b), 0x00000300);
	/* TD (bit 27) RMW; the header byte stays */
	h_cfg_write1(RTR, 0, 0x1b, 0x08000000);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 0x1b), 0x08000300);
	h_cfg_write1(RTR, 0, 0x1b, 0x00000300);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 0x1b), 0x00000300);
	/* TMU_RTR_CS_3 rate (31:16) = 1000 */
	h_cfg_write1(RTR, 0, 0x1b + 3, 0x03e80000);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 0x1b + 3), 0x03e80000);
	/* plain storage over 0x1a dwords */
	for (unsigned int i = 1; i < 0x1a; i++)
		h_cfg_write1(RTR, 0, 0x1b + i, 0xa5000000u | i);
	for (unsigned int i = 1; i < 0x1a; i++)
		ck_assert_uint_eq(h_cfg_read1(RTR, 0, 0x1b + i), 0xa5000000u | i);
	/* the capability does not overlap ROUTER_CS_0..26 */
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 26), 0);
}
END_TEST

START_TEST(slpr_follows_slp)
{
	h_cfg_write1(RTR, 0, 5, 1);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 5), 1);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 6) & 1, 1);
	h_cfg_write1(RTR, 0, 5, 0);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 6) & 1, 0);
	/* writes to CS_6 do not set SLPR */
	h_cfg_write1(RTR, 0, 6, 1);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 6) & 1, 0);
}
END_TEST

START_TEST(router_op_buffer_alloc)
{
	/* leftover data in the buffer must not be reported */
	for (unsigned int i = 9; i <= 24; i++)
		h_cfg_write1(RTR, 0, i, 0xffffffff);
	h_cfg_write1(RTR, 0, 25, 0);
	h_cfg_write1(RTR, 0, 26, 0x80000033);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 26), 0x00000033); /* OV clear, no ONS */
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 25) & 0xff, 1);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 9), 5u | 14u << 16); /* baMaxHI */
	for (unsigned int i = 10; i <= 24; i++)
		ck_assert_uint_eq(h_cfg_read1(RTR, 0, i), 0);
}
END_TEST

START_TEST(router_op_unknown_ons)
{
	static const uint32_t ops[] = { 0x25, 0x24, 0x22, 0x21, 0x10, 0x1234 };

	for (unsigned int i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		h_cfg_write1(RTR, 0, 26, 0x80000000u | ops[i]);
		ck_assert_uint_eq(h_cfg_read1(RTR, 0, 26), 0x40000000u | ops[i]);
	}
	/* without OV nothing runs */
	h_cfg_write1(RTR, 0, 26, 0x00000033);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 26), 0x40001234);
}
END_TEST

START_TEST(adapter_headers)
{
	/* lane 0 = adapter 1 */
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 1), 0x00000008);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 2), 0x00000001);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 3), 1u << 20);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 4), 0x83c00000); /* LCK, 60 */
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 5), 0x00009813);
	/* lane 1 = adapter 2 */
	ck_assert_uint_eq(h_cfg_read1(ADP, 2, 1), 0x00000008);
	ck_assert_uint_eq(h_cfg_read1(ADP, 2, 2), 0x00000001);
	ck_assert_uint_eq(h_cfg_read1(ADP, 2, 3), 2u << 20);
	/* NHI = adapter 3, no capabilities */
	ck_assert_uint_eq(h_cfg_read1(ADP, 3, 1), 0);
	ck_assert_uint_eq(h_cfg_read1(ADP, 3, 2), 0x00000002);
	ck_assert_uint_eq(h_cfg_read1(ADP, 3, 3), 3u << 20);
	ck_assert_uint_eq(h_cfg_read1(ADP, 3, 4), 32u << 20);
	ck_assert_uint_eq(h_cfg_read1(ADP, 3, 5), 0x0000580b);
}
END_TEST

START_TEST(lane_capability_chain)
{
	uint32_t h;

	/* lane 0: lane cap (ID 1) at 8 -> USB4 port cap (ID 6) at 0x10 -> end */
	h = h_cfg_read1(ADP, 1, 8);
	ck_assert_uint_eq(h, 0x003c0110);
	ck_assert_uint_eq((h >> 8) & 0xff, 0x01);
	h = h_cfg_read1(ADP, 1, h & 0xff);
	ck_assert_uint_eq((h >> 8) & 0xff, 0x06);
	ck_assert_uint_eq(h & 0xff, 0);
	/* lane 1: lane cap only */
	h = h_cfg_read1(ADP, 2, 8);
	ck_assert_uint_eq(h, 0x003c0100);
	ck_assert_uint_eq(h_cfg_read1(ADP, 2, 0x10), 0);
}
END_TEST

START_TEST(adp_cs4_cs5)
{
	/* ADP_CS_4: LCK cleared by usb4_port_unlock(); total buffers RO */
	h_cfg_write1(ADP, 1, 4, 0x03c00000);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 4), 0x03c00000);
	h_cfg_write1(ADP, 1, 4, 0);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 4), 0x03c00000);
	/* ADP_CS_5: max HopIDs RO, DHP writable */
	h_cfg_write1(ADP, 1, 5, 0);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 5), 0x00009813);
	h_cfg_write1(ADP, 1, 5, 0x80000000);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 5), 0x80009813);
	h_cfg_write1(ADP, 3, 5, 0x00000000);
	ck_assert_uint_eq(h_cfg_read1(ADP, 3, 5), 0x0000580b);
	/* adapter type is RO */
	h_cfg_write1(ADP, 1, 2, 0x000002);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 2), 0x000001);
}
END_TEST

START_TEST(lane_state_down_up_disabled)
{
	/* link down: CLd (7) */
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 9), 0x1c00001c);
	ck_assert_uint_eq(h_cfg_read1(ADP, 2, 9), 0x1c00001c);
	/* link up, 1 lane: lane 0 CL0, speed 0x4, width 1; lane 1 stays 7 */
	h_link_up(1);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 9), 0x0814001c);
	ck_assert_uint_eq((h_cfg_read1(ADP, 2, 9) >> 26) & 0xf, 7);
	/* 2 lanes: lane 1 up too */
	h_link_up(2);
	ck_assert_uint_eq(h_cfg_read1(ADP, 2, 9), 0x0814001c);
	/* LD on lane 1: state 0 (disabled) */
	h_cfg_write1(ADP, 2, 9, 0x1c | 1u << 14);
	ck_assert_uint_eq(h_cfg_read1(ADP, 2, 9), 0x0000401c);
	h_cfg_write1(ADP, 2, 9, 0x1c);
	ck_assert_uint_eq(h_cfg_read1(ADP, 2, 9), 0x0814001c);
	/* down again */
	h_link_state(false, 0, 0, 0);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 9), 0x1c00001c);
	/* state/current fields cannot be written */
	h_cfg_write1(ADP, 1, 9, 0xffffffff);
	ck_assert_uint_eq((h_cfg_read1(ADP, 1, 9) >> 26) & 0xf, 0); /* LD set */
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 9) & 0x03ff0000, 0);
}
END_TEST

START_TEST(lane_width_bonding)
{
	struct h_msg *m;

	h_link_up(2);
	/* local target width 3 only: still 1 */
	h_cfg_write1(ADP, 1, 9, 0x3c);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 9), 0x0814003c);
	/* the change went to the peer */
	m = h_last_msg(ODL_LINK_LANE);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->len, 4);
	ck_assert_uint_eq(m->body[0], 3); /* target width */
	ck_assert_uint_eq(m->body[1], 1); /* lane 1 enabled */
	ck_assert_uint_eq(m->body[2], 0); /* not bonded */
	/* peer: target 3, lane 1 enabled -> width 2 */
	h_peer_lane(3, 1, 0);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 9), 0x0824003c);
	ck_assert_uint_eq((h_cfg_read1(ADP, 2, 9) >> 20) & 0x3f, 2);
	/* peer's lane 1 disabled -> 1 */
	h_peer_lane(3, 0, 0);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 9), 0x0814003c);
	/* peer target width 1 -> 1 */
	h_peer_lane(1, 1, 0);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 9), 0x0814003c);
	h_peer_lane(3, 1, 1);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 9), 0x0824003c);
	/* local lane 1 disabled -> 1 */
	h_cfg_write1(ADP, 2, 9, 0x1c | 1u << 14);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 9), 0x0814003c);
	m = h_last_msg(ODL_LINK_LANE);
	ck_assert_uint_eq(m->body[1], 0);
	h_cfg_write1(ADP, 2, 9, 0x1c);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 9), 0x0824003c);
	/* LB set on lane 0 is reported to the peer */
	h_cfg_write1(ADP, 1, 9, 0x3c | 1u << 15);
	m = h_last_msg(ODL_LINK_LANE);
	ck_assert_uint_eq(m->body[2], 1);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 9), 0x0824803c); /* router-cm §1.8 */
	/* a 1-lane link never reports width 2 */
	h_link_up(1);
	ck_assert_uint_eq((h_cfg_read1(ADP, 1, 9) >> 20) & 0x3f, 1);
}
END_TEST

START_TEST(lane_info_sent_on_link_up)
{
	h_clear_records();
	h_link_up(1);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_LANE), 1);
	ck_assert_uint_eq(h_last_msg(ODL_LINK_LANE)->body[0], 1);
	ck_assert_uint_eq(h_last_msg(ODL_LINK_LANE)->body[1], 1);
	/* a write that changes nothing relevant sends nothing */
	h_cfg_write1(ADP, 1, 9, 0x1c);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_LANE), 1);
}
END_TEST

START_TEST(sideband_pnd_to_nr)
{
	/* retimer scan: ENUM opcode to the router target */
	h_cfg_write1(ADP, 1, 0x12, 0x4d554e45);
	h_cfg_write1(ADP, 1, 0x11, 0x81000408);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 0x11), 0x03000408); /* PND 0, NR 1 */
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 0x12), 0x4d554e45);
	/* data registers PORT_CS_2..17 are storage */
	h_cfg_write1(ADP, 1, 0x21, 0x01020304);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 0x21), 0x01020304);
}
END_TEST

START_TEST(port_cs18_19)
{
	/* PORT_CS_18: TCM 0 -> USB4 link, read-only */
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 0x22), 0);
	h_cfg_write1(ADP, 1, 0x22, 0xffffffff);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 0x22) & (1u << 9), 0);
	/* PORT_CS_19: PID (bit 4) and wake bits 16..18 */
	h_cfg_write1(ADP, 1, 0x23, 1u << 4);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 0x23), 1u << 4);
	h_cfg_write1(ADP, 1, 0x23, 1u << 4 | 7u << 16);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 0x23), 1u << 4 | 7u << 16);
	h_cfg_write1(ADP, 1, 0x23, 0);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 0x23), 0);
}
END_TEST

START_TEST(path_entries_storage)
{
	uint32_t v[2], r[2];

	/* lane 0 HopID 0: 2 control credits */
	ck_assert(h_cfg_read(PATH, 1, 0, 2, r));
	ck_assert_uint_eq(r[0], 0x00040000);
	/* RX entry PATH1[8] with pending set on write: pending reads 0 */
	v[0] = 0x801c1801;
	v[1] = 0x017ff501 | 1u << 28;
	ck_assert(h_cfg_write(PATH, 1, 16, v, 2));
	ck_assert(h_cfg_read(PATH, 1, 16, 2, r));
	ck_assert_uint_eq(r[0], 0x801c1801);
	ck_assert_uint_eq(r[1], 0x017ff501);
	/* TX entry PATH3[1] */
	v[0] = 0x801c0808;
	v[1] = 0x037ff501;
	ck_assert(h_cfg_write(PATH, 3, 2, v, 2));
	ck_assert(h_cfg_read(PATH, 3, 2, 2, r));
	ck_assert_uint_eq(r[0], 0x801c0808);
	ck_assert_uint_eq(r[1], 0x037ff501);
	/* deactivation: valid 0, fields kept; pending still 0 */
	v[0] = 0x001c1801;
	v[1] = 0x017ff501;
	ck_assert(h_cfg_write(PATH, 1, 16, v, 2));
	ck_assert(h_cfg_read(PATH, 1, 16, 2, r));
	ck_assert_uint_eq(r[0], 0x001c1801);
	ck_assert_uint_eq(r[1] & (1u << 28), 0);
	/* last lane HopID (19) and lane 1's table */
	ck_assert(h_cfg_write(PATH, 1, 38, v, 2));
	ck_assert(h_cfg_read(PATH, 1, 38, 2, r));
	ck_assert_uint_eq(r[0], 0x001c1801);
	ck_assert(h_cfg_write(PATH, 2, 16, v, 2));
	ck_assert(h_cfg_read(PATH, 2, 16, 2, r));
	ck_assert_uint_eq(r[0], 0x001c1801);
	/* different adapters have different tables */
	ck_assert(h_cfg_read(PATH, 3, 16, 2, r));
	ck_assert_uint_eq(r[0], 0);
}
END_TEST

START_TEST(reset_restores)
{
	h_cfg_write1(RTR, 0, 3, 0x80000000);
	h_cfg_write1(ADP, 1, 5, 0x80000000);
	h_cfg_write1(RTR, 0, 26, 0x80000025);
	nhi_reset(H.n);
	ck_assert_uint_eq(h_rd(R_ENABLE), 0);
	ck_assert_uint_eq(h_rd(R_DMA_MISC), 0);
	h_ctl_start();
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 3), 0);
	ck_assert_uint_eq(h_cfg_read1(RTR, 0, 26), 0);
	ck_assert_uint_eq(h_cfg_read1(ADP, 1, 5), 0x00009813);
	ck_assert_uint_eq(h_cfg_read1(PATH, 1, 0), 0x00040000);
}
END_TEST

Suite *suite_cfg(void)
{
	Suite *s = suite_create("cfg");
	TCase *tc = tcase_create("cfg");

	tcase_add_checked_fixture(tc, cfg_setup, h_teardown);
	tcase_add_test(tc, router_cs_reset_values);
	tcase_add_test(tc, router_cs1_fields);
	tcase_add_test(tc, router_cs2_3_4);
	tcase_add_test(tc, uid);
	tcase_add_test(tc, tmu_capability);
	tcase_add_test(tc, slpr_follows_slp);
	tcase_add_test(tc, router_op_buffer_alloc);
	tcase_add_test(tc, router_op_unknown_ons);
	tcase_add_test(tc, adapter_headers);
	tcase_add_test(tc, lane_capability_chain);
	tcase_add_test(tc, adp_cs4_cs5);
	tcase_add_test(tc, lane_state_down_up_disabled);
	tcase_add_test(tc, lane_width_bonding);
	tcase_add_test(tc, lane_info_sent_on_link_up);
	tcase_add_test(tc, sideband_pnd_to_nr);
	tcase_add_test(tc, port_cs18_19);
	tcase_add_test(tc, path_entries_storage);
	tcase_add_test(tc, reset_restores);
	suite_add_tcase(s, tc);
	return s;
}
