// SPDX-License-Identifier: MIT
/*
 * nhi-device.md Appendix A: the register trace from probe to the first
 * doorbell, replayed access by access, then the first round trip of §4.10
 * checked byte for byte.
 */
#include <string.h>

#include "harness.h"

static const uint64_t TXD = MEM_BASE + 0x3000, RXD = MEM_BASE + 0x4000;
static const uint64_t TXB = MEM_BASE + 0x8000, RXB = MEM_BASE + 0x9000;

static void replay_probe(void)
{
	/* 1 */
	ck_assert_uint_eq(h_rd(0x39640), 0x0000000c);
	/* 2..4 nhi_disable_interrupts() */
	h_wr(0x38208, 0xffffffff);
	h_wr(0x37808, 0xffffffff);
	h_wr(0x3780c, 0xffffffff);
	/* 5..20 throttling */
	for (uint32_t v = 0; v < 16; v++)
		h_wr(0x38c00 + 4 * v, 0x1f4);
	/* 21..24 tb_ring_start(TX0) */
	h_wr(0x00000, (uint32_t)TXD);
	h_wr(0x00004, (uint32_t)(TXD >> 32));
	h_wr(0x0000c, 0x0000000a);
	h_wr(0x19804, 0);
	h_wr(0x19800, 0xc0000000);
	/* 25..27 ring_interrupt_active(TX0) */
	ck_assert_uint_eq(h_rd(0x39864), 0);
	h_wr(0x39864, 1u << 17);
	ck_assert_uint_eq(h_rd(0x38c40), 0);
	h_wr(0x38c40, 0);
	ck_assert_uint_eq(h_rd(0x38200), 0);
	h_wr(0x38200, 0x00000001);
	/* 28..31 tb_ring_start(RX0) */
	h_wr(0x08000, (uint32_t)RXD);
	h_wr(0x08004, (uint32_t)(RXD >> 32));
	h_wr(0x0800c, 0x0100000a);
	h_wr(0x29804, 0xffffffff);
	h_wr(0x29800, 0xc0000000);
	/* 32..34 */
	ck_assert_uint_eq(h_rd(0x39864), 1u << 17);
	ck_assert_uint_eq(h_rd(0x38c44), 0);
	h_wr(0x38c44, 1u << 16);
	ck_assert_uint_eq(h_rd(0x38200), 0x00000001);
	h_wr(0x38200, 0x00001001);
	ck_assert_uint_eq(h_rd(0x38200), 0x00001001);
	/* 35..43 tb_ctl_rx_submit() x 9 */
	for (unsigned int i = 0; i < 9; i++) {
		h_desc(RXD, i, RXB + 256 * i, D_POSTED | D_INTERRUPT);
		h_wr(0x08008, i + 1);
	}
}

START_TEST(appendix_a_first_round_trip)
{
	static const uint8_t req[16] = {
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x04, 0x00, 0x20, 0x00, 0x2f, 0xc9, 0x67, 0xac,
	};
	uint8_t expect[20] = {
		0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x04, 0x18, 0x20, 0x00, /* port field = NHI adapter 3 */
		0x0b, 0x46, 0x12, 0x34, /* ROUTER_CS_0: device 0x0b46 vendor 0x1234 */
	};
	uint32_t crc = h_crc32c(expect, 16);
	const uint8_t *rb = h_ptr(RXB);

	h_be32(expect + 16, crc);
	replay_probe();
	ck_assert_uint_eq(H.nirq, 0);
	/* RX: hardware index 0, driver index 9 */
	ck_assert_uint_eq(h_rd(0x08008), 9);

	/* 44: the first request (§4.10) */
	h_fill(RXB, 0xee, 256);
	memcpy(h_ptr(TXB), req, sizeof(req));
	h_desc(TXD, 0, TXB, 0x00C11010);
	h_wr(0x00008, 0x00010000);

	/* TX descriptor: COMPLETED ORed in, everything else kept */
	ck_assert_uint_eq(h_desc_d8(TXD, 0), 0x00C11010 | D_COMPLETED);
	ck_assert_uint_eq(h_rd(0x00008), 0x00010001);
	/* RX descriptor 0: length 20, eof 1, sof 0, COMPLETED only */
	ck_assert_uint_eq(h_desc_d8(RXD, 0), 0x00201014);
	ck_assert_uint_eq(h_desc_d8(RXD, 1), D_POSTED | D_INTERRUPT);
	ck_assert_uint_eq(h_rd(0x08008), 1u << 16 | 9);
	ck_assert_mem_eq(rb, expect, 20);
	ck_assert_uint_eq(rb[20], 0xee); /* nothing beyond the packet */
	/* the reply's header: CM bit, bits 30:22 clear; address bits 31:29 0 */
	ck_assert_uint_eq(h_get_be32(rb) >> 22, 0x200);
	ck_assert_uint_eq(h_get_be32(rb + 8) >> 29, 0);
	ck_assert_uint_eq((h_get_be32(rb + 8) >> 19) & 0x3f, 3);
	/* interrupts: vector 0 (TX) and vector 1 (RX), once each */
	ck_assert_uint_eq(H.nirq, 2);
	ck_assert_uint_eq(H.irq_count[0], 1);
	ck_assert_uint_eq(H.irq_count[1], 1);
	ck_assert_uint_eq(h_rd(0x37800), 1u << 0 | 1u << 12);

	/* what the driver does next */
	h_wr(0x37808, 1u << 12);
	ck_assert_uint_eq(h_rd(0x37800), 1u << 0);
	h_desc(RXD, 9, RXB + 256 * 9, D_POSTED | D_INTERRUPT);
	h_wr(0x08008, 0);
	ck_assert_uint_eq(h_rd(0x08008), 1u << 16 | 0);
	h_wr(0x37808, 1u << 0);
	ck_assert_uint_eq(h_rd(0x37800), 0);

	/* the next request, RTR[0..4], gets a 36-byte reply in slot 1 */
	{
		uint8_t pkt[16];
		uint32_t dw[3] = { 0, 0, 0x04000000u | 5u << 13 };

		h_mkpkt(pkt, dw, 3);
		memcpy(h_ptr(TXB + 256), pkt, 16);
		h_desc(TXD, 1, TXB + 256, 0x00C11010);
		h_wr(0x00008, 0x00020000);
		ck_assert_uint_eq(h_desc_d8(RXD, 1), 0x00201000 | 36);
		ck_assert_uint_eq(h_get_be32(h_ptr(RXB + 256) + 8),
				  0x04000000u | 5u << 13 | 3u << 19);
		ck_assert_uint_eq(h_get_be32(h_ptr(RXB + 256) + 12), 0x0b461234);
		ck_assert_uint_eq(h_get_be32(h_ptr(RXB + 256) + 16), 0x0100c31b);
		ck_assert_uint_eq(h_get_be32(h_ptr(RXB + 256) + 28), 0x20000000);
		ck_assert_uint_eq(h_get_be32(h_ptr(RXB + 256) + 32),
				  h_crc32c(h_ptr(RXB + 256), 32));
	}
	ck_assert_uint_eq(nhi_get_stats(H.n)->guest_errors, 0);
	ck_assert_uint_eq(nhi_get_stats(H.n)->ctl_tx, 2);
	ck_assert_uint_eq(nhi_get_stats(H.n)->ctl_rx, 2);
}
END_TEST

/* Without the cable connected the same trace works (no cable messages). */
START_TEST(appendix_a_no_cable)
{
	nhi_cable_connected(H.n, false);
	h_clear_records();
	replay_probe();
	{
		uint8_t pkt[16];
		uint32_t dw[3] = { 0, 0, 0x04002000u };

		h_mkpkt(pkt, dw, 3);
		memcpy(h_ptr(TXB), pkt, 16);
		h_desc(TXD, 0, TXB, 0x00C11010);
		h_wr(0x00008, 0x00010000);
	}
	ck_assert_uint_eq(h_desc_d8(RXD, 0), 0x00201014);
	ck_assert_uint_eq(H.nmsgs, 0);
}
END_TEST

Suite *suite_trace(void)
{
	Suite *s = suite_create("trace");
	TCase *tc = tcase_create("appendix_a");

	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_add_test(tc, appendix_a_first_round_trip);
	tcase_add_test(tc, appendix_a_no_cable);
	suite_add_tcase(s, tc);
	return s;
}
