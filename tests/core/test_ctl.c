// SPDX-License-Identifier: MIT
/* Control packets: CRC-32C, parse/build, the responder (nhi-device.md §4,
 * router-cm.md §0.2). */
#include <string.h>

#include "harness.h"
#include "nhi_priv.h"

static const struct nhi_stats *st(void)
{
	return nhi_get_stats(H.n);
}

static void ctl_setup(void)
{
	h_setup();
	h_ctl_start();
	h_clear_records();
}

/* ---- CRC and wire images (no instance needed) ---- */

struct vec {
	const char *what;
	uint8_t bytes[20];
	size_t len; /* before CRC */
	uint8_t crc[4];
};

static const struct vec vectors[] = {
	{ "read request route 0 router offset 0 len 1",
	  { 0, 0, 0, 0, 0, 0, 0, 0, 0x04, 0x00, 0x20, 0x00 }, 12,
	  { 0x2f, 0xc9, 0x67, 0xac } },
	{ "read reply port 7 data 0x12345678",
	  { 0x80, 0, 0, 0, 0, 0, 0, 0, 0x04, 0x38, 0x20, 0x00,
	    0x12, 0x34, 0x56, 0x78 }, 16,
	  { 0xb3, 0xe2, 0x15, 0xf7 } },
	{ "read reply port 0",
	  { 0x80, 0, 0, 0, 0, 0, 0, 0, 0x04, 0x00, 0x20, 0x00,
	    0x12, 0x34, 0x56, 0x78 }, 16,
	  { 0x5c, 0xcf, 0x91, 0xbf } },
	{ "write request offset 1 0xdeadbeef",
	  { 0, 0, 0, 0, 0, 0, 0, 0, 0x04, 0x00, 0x20, 0x01,
	    0xde, 0xad, 0xbe, 0xef }, 16,
	  { 0x67, 0x33, 0x5d, 0xef } },
	{ "write response port 7",
	  { 0x80, 0, 0, 0, 0, 0, 0, 0, 0x04, 0x38, 0x20, 0x01 }, 12,
	  { 0xbd, 0x5b, 0x9c, 0x6c } },
	{ "error INVALID_CONFIG_SPACE",
	  { 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02 }, 12,
	  { 0x03, 0x15, 0x05, 0x32 } },
	{ "hot-plug event adapter 1",
	  { 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01 }, 12,
	  { 0x10, 0x45, 0xf6, 0xc6 } },
	{ "ACK of that event",
	  { 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x00, 0x01, 0x07 }, 12,
	  { 0xbe, 0xa8, 0x80, 0xfe } },
};

START_TEST(crc_check_value)
{
	ck_assert_uint_eq(nhi_crc32c(0, "123456789", 9), 0xE3069283u);
	ck_assert_uint_eq(h_crc32c("123456789", 9), 0xE3069283u);
	/* incremental use: pass the previous result back in */
	ck_assert_uint_eq(nhi_crc32c(nhi_crc32c(0, "1234", 4), "56789", 5),
			  0xE3069283u);
	ck_assert_uint_eq(nhi_crc32c(0, "", 0), 0);
}
END_TEST

START_TEST(crc_vectors)
{
	const struct vec *v = &vectors[_i];
	uint32_t want = h_get_be32(v->crc);

	ck_assert_msg(nhi_crc32c(0, v->bytes, v->len) == want,
		      "%s: crc 0x%08x want 0x%08x", v->what,
		      nhi_crc32c(0, v->bytes, v->len), want);
	ck_assert_uint_eq(h_crc32c(v->bytes, v->len), want);
}
END_TEST

START_TEST(build_vectors_byte_exact)
{
	const struct vec *v = &vectors[_i];
	struct ctl_pkt p;
	uint8_t out[64], want[24];

	memset(&p, 0, sizeof(p));
	p.pdf = 1;
	p.ndw = (unsigned int)(v->len / 4);
	for (unsigned int i = 0; i < p.ndw; i++)
		p.dw[i] = h_get_be32(v->bytes + 4 * i);
	memcpy(want, v->bytes, v->len);
	memcpy(want + v->len, v->crc, 4);
	ck_assert_uint_eq(ctl_build(&p, out, sizeof(out)), v->len + 4);
	ck_assert_mem_eq(out, want, v->len + 4);
	/* and it parses back */
	memset(&p, 0xaa, sizeof(p));
	ck_assert_int_eq(ctl_parse(&p, 5, want, v->len + 4), 0);
	ck_assert_uint_eq(p.pdf, 5);
	ck_assert_uint_eq(p.ndw, v->len / 4);
	for (unsigned int i = 0; i < p.ndw; i++)
		ck_assert_uint_eq(p.dw[i], h_get_be32(v->bytes + 4 * i));
}
END_TEST

START_TEST(parse_rejects)
{
	struct ctl_pkt p;
	uint8_t buf[300];
	uint32_t dw[70] = { 0 };

	/* 3 dwords + CRC: fine */
	h_mkpkt(buf, dw, 3);
	ck_assert_int_eq(ctl_parse(&p, 1, buf, 16), 0);
	/* bad sizes */
	ck_assert_int_eq(ctl_parse(&p, 1, buf, 8), -1);
	ck_assert_int_eq(ctl_parse(&p, 1, buf, 0), -1);
	ck_assert_int_eq(ctl_parse(&p, 1, buf, 14), -1);
	ck_assert_int_eq(ctl_parse(&p, 1, buf, 17), -1);
	h_mkpkt(buf, dw, 64);  /* 260 bytes > 256 */
	ck_assert_int_eq(ctl_parse(&p, 1, buf, 260), -1);
	h_mkpkt(buf, dw, 63);  /* 256 bytes: the maximum */
	ck_assert_int_eq(ctl_parse(&p, 1, buf, 256), 0);
	ck_assert_uint_eq(p.ndw, 63);
	/* bad CRC: any single bit */
	h_mkpkt(buf, dw, 3);
	for (unsigned int bit = 0; bit < 128; bit += 9) {
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		ck_assert_int_eq(ctl_parse(&p, 1, buf, 16), -2);
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	/* build refuses what does not fit */
	memset(&p, 0, sizeof(p));
	p.ndw = 3;
	ck_assert_uint_eq(ctl_build(&p, buf, 15), 0);
	p.ndw = 64;
	ck_assert_uint_eq(ctl_build(&p, buf, sizeof(buf)), 0);
}
END_TEST

/* ---- the responder on ring 0 ---- */

START_TEST(bad_crc_counted_no_reply)
{
	uint8_t buf[16];
	uint32_t dw[3] = { 0, 0, h_addr(2, 0, 0, 1, 0) };
	unsigned int slot;

	h_mkpkt(buf, dw, 3);
	buf[15] ^= 1;
	slot = h_ctl_send_raw(1, buf, 16);
	ck_assert_uint_eq(st()->ctl_bad_crc, 1);
	ck_assert_uint_eq(st()->guest_errors, 1);
	ck_assert_uint_eq(h_ctl_pending(), 0);
	/* the TX descriptor still completes */
	ck_assert_uint_eq(h_desc_d8(H.ctl_tx_desc, slot) & D_COMPLETED, D_COMPLETED);
	ck_assert_uint_eq(st()->ctl_rx, 0);
}
END_TEST

START_TEST(bad_size_no_reply)
{
	uint8_t buf[16] = { 0 };

	h_ctl_send_raw(1, buf, 10);
	h_ctl_send_raw(1, buf, 8);
	ck_assert_uint_eq(st()->ctl_bad_crc, 0);
	ck_assert_uint_eq(st()->guest_errors, 2);
	ck_assert_uint_eq(h_ctl_pending(), 0);
}
END_TEST

static void expect_reply_header(const struct h_pkt *p, uint8_t pdf,
				uint32_t route_hi, uint32_t route_lo)
{
	ck_assert_uint_eq(p->pdf, pdf);
	ck_assert_uint_eq(p->sof, 0);
	ck_assert(p->crc_ok);
	ck_assert_uint_eq(p->dw[0] >> 22, 0x200);
	ck_assert_uint_eq(p->dw[0] & 0x3fffff, route_hi);
	ck_assert_uint_eq(p->dw[1], route_lo);
	ck_assert_uint_eq(p->d8 >> 20, 0x002); /* COMPLETED only */
}

START_TEST(read_router_adapter_path)
{
	uint32_t req[3];
	struct h_pkt p;

	/* router space, 5 dwords */
	req[0] = 0;
	req[1] = 0;
	req[2] = h_addr(2, 0, 0, 5, 0);
	h_ctl_send(1, req, 3);
	ck_assert(h_ctl_recv(&p));
	expect_reply_header(&p, 1, 0, 0);
	ck_assert_uint_eq(p.len, 36);
	ck_assert_uint_eq(p.ndw, 8);
	ck_assert_uint_eq(p.dw[2], h_addr(2, 3, 0, 5, 0));
	ck_assert_uint_eq(p.dw[3], 0x0b461234);
	ck_assert_uint_eq(p.dw[4], 0x0100c31b);
	ck_assert_uint_eq(p.dw[7], 0x20000000);
	/* adapter space of lane adapter 1, 8 dwords (tb_init_port) */
	req[2] = h_addr(1, 1, 0, 8, 0);
	h_ctl_send(1, req, 3);
	ck_assert(h_ctl_recv(&p));
	expect_reply_header(&p, 1, 0, 0);
	ck_assert_uint_eq(p.len, 48);
	ck_assert_uint_eq(p.dw[2], h_addr(1, 3, 0, 8, 0));
	ck_assert_uint_eq(p.dw[3 + 1], 0x00000008);
	ck_assert_uint_eq(p.dw[3 + 2], 0x00000001);
	ck_assert_uint_eq(p.dw[3 + 3], 1u << 20);
	ck_assert_uint_eq(p.dw[3 + 5], 0x00009813);
	/* path space of lane adapter 1, HopID 0 (2 dwords) */
	req[2] = h_addr(0, 1, 0, 2, 0);
	h_ctl_send(1, req, 3);
	ck_assert(h_ctl_recv(&p));
	expect_reply_header(&p, 1, 0, 0);
	ck_assert_uint_eq(p.dw[3], 0x00040000);
	ck_assert_uint_eq(p.dw[4], 0);
	ck_assert_uint_eq(st()->ctl_tx, 3);
	ck_assert_uint_eq(st()->ctl_rx, 3);
}
END_TEST

START_TEST(write_router_adapter_path)
{
	uint32_t req[5];
	struct h_pkt p;

	req[0] = 0;
	req[1] = 0;
	req[2] = h_addr(2, 0, 2, 2, 1);
	req[3] = 0x11112222;
	req[4] = 0x80000000;
	h_ctl_send(2, req, 5);
	ck_assert(h_ctl_recv(&p));
	expect_reply_header(&p, 2, 0, 0);
	ck_assert_uint_eq(p.len, 16);
	ck_assert_uint_eq(p.ndw, 3);
	ck_assert_uint_eq(p.dw[2], h_addr(2, 3, 2, 2, 1));
	ck_assert_uint_eq(h_cfg_read1(2, 0, 2), 0x11112222);
	ck_assert_uint_eq(h_cfg_read1(2, 0, 3), 0x80000000);
	/* adapter: PORT_CS_2 (sideband data) of lane 1 */
	h_cfg_write1(1, 1, 0x12, 0x4d554e45);
	ck_assert_uint_eq(h_cfg_read1(1, 1, 0x12), 0x4d554e45);
	/* path: NHI adapter HopID 11 is the last entry */
	{
		uint32_t v[2] = { 0x801c0808, 0x037ff501 }, r[2];

		ck_assert(h_cfg_write(0, 3, 22, v, 2));
		ck_assert(h_cfg_read(0, 3, 22, 2, r));
		ck_assert_uint_eq(r[0], v[0]);
		ck_assert_uint_eq(r[1], v[1]);
	}
}
END_TEST

static void expect_error(uint32_t route_hi, uint32_t route_lo, uint32_t dw2)
{
	struct h_pkt p;

	ck_assert(h_ctl_recv(&p));
	expect_reply_header(&p, 3, route_hi, route_lo);
	ck_assert_uint_eq(p.len, 16);
	ck_assert_uint_eq(p.ndw, 3);
	ck_assert_uint_eq(p.dw[2], dw2);
	ck_assert_uint_eq(h_ctl_pending(), 0);
}

START_TEST(out_of_range_error_code_2)
{
	uint32_t req[4] = { 0, 0, 0, 0 };

	req[2] = h_addr(2, 0, 0x40, 1, 0);   /* router space is 0x40 dwords */
	h_ctl_send(1, req, 3);
	expect_error(0, 0, 0x00000002);
	req[2] = h_addr(2, 0, 0x3f, 2, 0);   /* runs past the end */
	h_ctl_send(1, req, 3);
	expect_error(0, 0, 0x00000002);
	req[2] = h_addr(2, 0, 0x3f, 1, 0);   /* last dword is fine */
	h_ctl_send(1, req, 3);
	{
		struct h_pkt p;

		ck_assert(h_ctl_recv(&p));
		ck_assert_uint_eq(p.pdf, 1);
	}
	req[2] = h_addr(1, 1, 0x30, 1, 0);   /* adapter space */
	h_ctl_send(1, req, 3);
	expect_error(0, 0, 0x00000102);
	req[2] = h_addr(1, 4, 0, 8, 0);      /* no adapter 4 */
	h_ctl_send(1, req, 3);
	expect_error(0, 0, 0x00000402);
	req[2] = h_addr(1, 0, 0, 1, 0);      /* adapter 0 has no adapter space */
	h_ctl_send(1, req, 3);
	expect_error(0, 0, 0x00000002);
	req[2] = h_addr(0, 3, 23, 2, 0);     /* NHI path: HopIDs 0..11 */
	h_ctl_send(1, req, 3);
	expect_error(0, 0, 0x00000302);
	req[2] = h_addr(0, 1, 40, 1, 0);     /* lane path: HopIDs 0..19 */
	h_ctl_send(1, req, 3);
	expect_error(0, 0, 0x00000102);
	req[2] = h_addr(3, 1, 0, 1, 0);      /* counters space */
	h_ctl_send(1, req, 3);
	expect_error(0, 0, 0x00000102);
	/* a write out of range: error, nothing written */
	req[2] = h_addr(2, 0, 0x40, 1, 0);
	req[3] = 1;
	h_ctl_send(2, req, 4);
	expect_error(0, 0, 0x00000002);
	ck_assert_uint_eq(st()->guest_errors, 0);
}
END_TEST

START_TEST(route_to_lane_link_up_loop)
{
	uint32_t req[3] = { 0, 1, h_addr(2, 0, 0, 1, 0) };

	h_link_up(1);
	h_ctl_send(1, req, 3);
	expect_error(0, 1, 0x00000108); /* code 8 LOOP, port 1 */
	/* route_hi echoed */
	req[0] = 0x12;
	h_ctl_send(1, req, 3);
	expect_error(0x12, 1, 0x00000108);
	/* a write into the link gets the same */
	{
		uint32_t w[4] = { 0, 1, h_addr(2, 0, 1, 1, 0), 5 };

		h_ctl_send(2, w, 4);
		expect_error(0, 1, 0x00000108);
	}
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_CTRL), 0);
}
END_TEST

START_TEST(route_to_lane_link_down_not_connected)
{
	uint32_t req[3] = { 0, 1, h_addr(2, 0, 0, 1, 0) };

	h_ctl_send(1, req, 3);
	expect_error(0, 1, 0x00000100); /* code 0, port 1 */
	req[1] = 2;                      /* lane 1 of the port */
	h_ctl_send(1, req, 3);
	expect_error(0, 2, 0x00000200);
}
END_TEST

START_TEST(route_to_non_lane_no_such_port)
{
	uint32_t req[3] = { 0, 3, h_addr(2, 0, 0, 1, 0) };

	h_link_up(1);
	h_ctl_send(1, req, 3);
	expect_error(0, 3, 0x00000304); /* NHI adapter: code 4 */
	req[1] = 5;
	h_ctl_send(1, req, 3);
	expect_error(0, 5, 0x00000504);
	req[1] = 0x0100; /* first hop 0 */
	h_ctl_send(1, req, 3);
	expect_error(0, 0x0100, 0x00000004);
}
END_TEST

START_TEST(write_count_mismatch_dropped)
{
	uint32_t req[5] = { 0, 0, h_addr(2, 0, 2, 2, 0), 0xabcdef01, 0 };

	/* length 2, carries 1 */
	h_ctl_send(2, req, 4);
	ck_assert_uint_eq(h_ctl_pending(), 0);
	ck_assert_uint_eq(st()->guest_errors, 1);
	/* length 1, carries 2 */
	req[2] = h_addr(2, 0, 2, 1, 0);
	h_ctl_send(2, req, 5);
	ck_assert_uint_eq(h_ctl_pending(), 0);
	ck_assert_uint_eq(st()->guest_errors, 2);
	/* read with a payload */
	req[2] = h_addr(2, 0, 2, 1, 0);
	h_ctl_send(1, req, 4);
	ck_assert_uint_eq(h_ctl_pending(), 0);
	ck_assert_uint_eq(st()->guest_errors, 3);
	ck_assert_uint_eq(h_cfg_read1(2, 0, 2), 0);
}
END_TEST

START_TEST(seq_echoed_and_top_bits_zero)
{
	for (unsigned int seq = 0; seq < 4; seq++) {
		uint32_t req[3] = { 0, 0, h_addr(2, 0, 7, 2, seq) };
		struct h_pkt p;

		h_ctl_send(1, req, 3);
		ck_assert(h_ctl_recv(&p));
		ck_assert_uint_eq(p.dw[2], h_addr(2, 3, 7, 2, seq));
		ck_assert_uint_eq(p.dw[3], 0x55667788);
		ck_assert_uint_eq(p.dw[4], 0x11223344);
	}
	/* bits 31:29 set in the request are not echoed */
	{
		uint32_t req[3] = { 0, 0, 0xe0000000u | h_addr(2, 0, 0, 1, 3) };
		struct h_pkt p;

		h_ctl_send(1, req, 3);
		ck_assert(h_ctl_recv(&p));
		ck_assert_uint_eq(p.dw[2], h_addr(2, 3, 0, 1, 3));
	}
	/* a write reply echoes seq as well */
	{
		uint32_t req[4] = { 0, 0, h_addr(2, 0, 2, 1, 2), 0 };
		struct h_pkt p;

		h_ctl_send(2, req, 4);
		ck_assert(h_ctl_recv(&p));
		ck_assert_uint_eq(p.dw[2], h_addr(2, 3, 2, 1, 2));
	}
}
END_TEST

START_TEST(other_pdfs_ignored)
{
	uint32_t req[3] = { 0, 0, h_addr(2, 0, 0, 1, 0) };

	h_ctl_send(4, req, 3);   /* NOTIFY_ACK */
	h_ctl_send(8, req, 3);   /* OVERRIDE */
	h_ctl_send(9, req, 2);   /* RESET */
	h_ctl_send(13, req, 3);  /* PTS */
	h_ctl_send(5, req, 3);   /* EVENT from the host */
	ck_assert_uint_eq(h_ctl_pending(), 0);
	ck_assert_uint_eq(st()->ctl_tx, 5);
	ck_assert_uint_eq(st()->guest_errors, 0);
	/* an ERROR packet with another code is not answered either */
	req[2] = 0x00000002;
	h_ctl_send(3, req, 3);
	ck_assert_uint_eq(h_ctl_pending(), 0);
}
END_TEST

START_TEST(max_read_len)
{
	uint32_t req[3] = { 0, 0, h_addr(2, 0, 0, 60, 0) };
	struct h_pkt p;

	/* 60 dwords (TB_MAX_CONFIG_RW_LENGTH): 252 + 4 bytes */
	h_ctl_send(1, req, 3);
	ck_assert(h_ctl_recv(&p));
	ck_assert_uint_eq(p.pdf, 1);
	ck_assert_uint_eq(p.len, 256);
	ck_assert(p.crc_ok);
	/* 61 does not fit a 256-byte frame: error */
	req[2] = h_addr(2, 0, 0, 61, 0);
	h_ctl_send(1, req, 3);
	expect_error(0, 0, 0x00000002);
}
END_TEST

Suite *suite_ctl(void)
{
	Suite *s = suite_create("ctl");
	TCase *tc = tcase_create("wire");
	const int nv = (int)(sizeof(vectors) / sizeof(vectors[0]));

	tcase_add_test(tc, crc_check_value);
	tcase_add_loop_test(tc, crc_vectors, 0, nv);
	tcase_add_loop_test(tc, build_vectors_byte_exact, 0, nv);
	tcase_add_test(tc, parse_rejects);
	suite_add_tcase(s, tc);

	tc = tcase_create("responder");
	tcase_add_checked_fixture(tc, ctl_setup, h_teardown);
	tcase_add_test(tc, bad_crc_counted_no_reply);
	tcase_add_test(tc, bad_size_no_reply);
	tcase_add_test(tc, read_router_adapter_path);
	tcase_add_test(tc, write_router_adapter_path);
	tcase_add_test(tc, out_of_range_error_code_2);
	tcase_add_test(tc, route_to_lane_link_up_loop);
	tcase_add_test(tc, route_to_lane_link_down_not_connected);
	tcase_add_test(tc, route_to_non_lane_no_such_port);
	tcase_add_test(tc, write_count_mismatch_dropped);
	tcase_add_test(tc, seq_echoed_and_top_bits_zero);
	tcase_add_test(tc, other_pdfs_ignored);
	tcase_add_test(tc, max_read_len);
	suite_add_tcase(s, tc);
	return s;
}
