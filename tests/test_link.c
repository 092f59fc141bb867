// SPDX-License-Identifier: MIT
/*
 * Unit tests of the cable side of the link protocol: framing/validation
 * (sim/link_msg.c), the decoder (sim/decode.c), the capture format
 * (sim/capture.c) and the cable state machine (sim/cable_core.c), the
 * latter driven in-process without sockets.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cable_core.h"
#include "capture.h"
#include "decode.h"
#include "link_msg.h"

/* ------------------------------------------------------------------ */
/* helpers */

static size_t hex2bin(const char *hex, uint8_t *out)
{
	size_t n = 0;
	unsigned v;

	while (*hex) {
		if (*hex == ' ') {
			hex++;
			continue;
		}
		sscanf(hex, "%2x", &v);
		out[n++] = (uint8_t)v;
		hex += 2;
	}
	return n;
}

/* Build a control packet from host-order dwords; appends the CRC. */
static size_t mkpkt(uint8_t *out, const uint32_t *dw, size_t n)
{
	for (size_t i = 0; i < n; i++)
		odl_put_be32(out + 4 * i, dw[i]);
	odl_put_be32(out + 4 * n, odl_crc32c(out, 4 * n));
	return 4 * n + 4;
}

static struct odl_link_hello mkhello(uint64_t uid, unsigned lanes,
				     unsigned gbps, const char *profile)
{
	struct odl_link_hello h;

	memset(&h, 0, sizeof(h));
	h.magic = ODL_LINK_MAGIC;
	h.version = ODL_LINK_VERSION;
	h.lanes = (uint16_t)lanes;
	h.uid = uid;
	h.lane_gbps = gbps;
	memcpy(h.profile, profile, strnlen(profile, sizeof(h.profile) - 1));
	return h;
}

/* ------------------------------------------------------------------ */
/* decoder */

START_TEST(t_decode_read_example)
{
	uint8_t pkt[16];
	char buf[256];
	size_t n = hex2bin("00 00 00 00 00 00 00 00 04 00 20 00 2f c9 67 ac", pkt);

	ck_assert_uint_eq(n, 16);
	odl_decode_ctrl(buf, sizeof(buf), 1, pkt, n);
	ck_assert_str_eq(buf, "READ route=0x0 space=router port=0 offset=0x0 "
			      "len=1 seq=0 crc=ok");
}
END_TEST

START_TEST(t_decode_write_data_badcrc)
{
	/* WRITE to route 0x301, adapter space port 3 offset 0x39 len 2 seq 1 */
	uint32_t dw[5] = { 0x00000000, 0x00000301,
			   (1u << 27) | (1u << 25) | (3u << 19) | (2u << 13) | 0x39,
			   0x11223344, 0x55667788 };
	uint8_t pkt[64];
	char buf[256];
	size_t n = mkpkt(pkt, dw, 5);

	odl_decode_ctrl(buf, sizeof(buf), 2, pkt, n);
	ck_assert_str_eq(buf, "WRITE route=0x301 space=adapter port=3 offset=0x39 "
			      "len=2 seq=1 data=11223344,55667788 crc=ok");
	pkt[n - 1] ^= 0xff;
	odl_decode_ctrl(buf, sizeof(buf), 2, pkt, n);
	ck_assert_ptr_nonnull(strstr(buf, "crc=BAD("));
}
END_TEST

START_TEST(t_decode_route_high_and_cm)
{
	uint32_t dw[3] = { 0x80000001u, 0x00000002u,
			   (2u << 25) | (1u << 13) };
	uint8_t pkt[32];
	char buf[256];
	size_t n = mkpkt(pkt, dw, 3);

	odl_decode_ctrl(buf, sizeof(buf), 1, pkt, n);
	ck_assert_str_eq(buf, "READ route=0x100000002 cm space=router port=0 "
			      "offset=0x0 len=1 seq=0 crc=ok");
}
END_TEST

START_TEST(t_decode_error_event)
{
	uint32_t err[3] = { 0, 1, (3u << 8) | 2u };
	uint32_t ev[3] = { 0, 0, 0x80000000u | 5u };
	uint8_t pkt[32];
	char buf[256];
	size_t n;

	n = mkpkt(pkt, err, 3);
	odl_decode_ctrl(buf, sizeof(buf), 3, pkt, n);
	ck_assert_str_eq(buf, "ERROR route=0x1 code=2(INVALID_CONFIG_SPACE) "
			      "port=3 crc=ok");
	n = mkpkt(pkt, ev, 3);
	odl_decode_ctrl(buf, sizeof(buf), 5, pkt, n);
	ck_assert_str_eq(buf, "EVENT route=0x0 port=5 unplug=1 crc=ok");
	ev[2] = 1;
	n = mkpkt(pkt, ev, 3);
	odl_decode_ctrl(buf, sizeof(buf), 5, pkt, n);
	ck_assert_str_eq(buf, "EVENT route=0x0 port=1 unplug=0 crc=ok");
}
END_TEST

/* uuid bytes -> 4 host-order dwords as the Linux driver puts them on the wire */
static void uuid_dwords(const uint8_t u[16], uint32_t *dw)
{
	for (int i = 0; i < 4; i++)
		dw[i] = odl_get32(u + 4 * i);
}

START_TEST(t_decode_xdomain)
{
	static const uint8_t xdp[16] = { 0xb6, 0x38, 0xd7, 0x0e, 0x42, 0xff,
					 0x40, 0xbb, 0x97, 0xc2, 0x90, 0xe2,
					 0xc0, 0xb2, 0xff, 0x07 };
	static const uint8_t other[16] = { 1, 2, 3, 4, 5, 6, 7, 8,
					   9, 10, 11, 12, 13, 14, 15, 16 };
	uint32_t dw[8] = { 0, 1, 5u | (1u << 27) };
	uint8_t pkt[64];
	char buf[256];
	size_t n;

	uuid_dwords(xdp, dw + 3);
	dw[7] = 12;
	n = mkpkt(pkt, dw, 8);
	odl_decode_ctrl(buf, sizeof(buf), 6, pkt, n);
	ck_assert_str_eq(buf, "XDOMAIN_REQ route=0x1 len=5 sn=1 "
			      "uuid=b638d70e-42ff-40bb-97c2-90e2c0b2ff07(xdp) "
			      "type=12(UUID_REQUEST) crc=ok");
	uuid_dwords(other, dw + 3);
	dw[7] = 99;
	n = mkpkt(pkt, dw, 8);
	odl_decode_ctrl(buf, sizeof(buf), 7, pkt, n);
	ck_assert_str_eq(buf, "XDOMAIN_RESP route=0x1 len=5 sn=1 "
			      "uuid=01020304-0506-0708-090a-0b0c0d0e0f10 type=99 crc=ok");
}
END_TEST

START_TEST(t_decode_pdf_names)
{
	static const char *const want[] = { "PDF?", "READ", "WRITE", "ERROR",
					    "NOTIFY_ACK", "EVENT", "XDOMAIN_REQ",
					    "XDOMAIN_RESP", "OVERRIDE", "RESET" };

	for (unsigned i = 0; i < 10; i++)
		ck_assert_str_eq(odl_pdf_name(i), want[i]);
	ck_assert_str_eq(odl_pdf_name(200), "PDF?");
	ck_assert_str_eq(odl_space_name(0), "path");
	ck_assert_str_eq(odl_space_name(3), "counters");
}
END_TEST

START_TEST(t_decode_messages)
{
	uint8_t msg[ODL_MSG_MAX], payload[40];
	char buf[512];
	size_t n;
	struct odl_link_hello h = mkhello(0x1122334455667788ull, 2, 40, "tb5");
	struct odl_link_state st = { .up = 1, .lanes = 2, .lane_gbps = 20,
				     .peer_uid = 0xabcull };

	for (int i = 0; i < 40; i++)
		payload[i] = (uint8_t)i;
	n = odl_build_data(msg, 8, 1, 2, 0, payload, 40);
	odl_decode_msg(buf, sizeof(buf), msg, n);
	ck_assert_str_eq(buf, "DATA hop=8 sof=1 eof=2 len=40 "
			      "data=000102030405060708090a0b0c0d0e0f...");
	n = odl_build_data(msg, 9, 0, 0, ODL_LINK_DATA_CRC_ERR, payload, 3);
	odl_decode_msg(buf, sizeof(buf), msg, n);
	ck_assert_str_eq(buf, "DATA hop=9 sof=0 eof=0 len=3 crc_err data=000102");
	n = odl_build_hello(msg, &h);
	odl_decode_msg(buf, sizeof(buf), msg, n);
	ck_assert_str_eq(buf, "HELLO magic=ok version=1 lanes=2 "
			      "uid=0x1122334455667788 lane_gbps=40 profile=\"tb5\"");
	n = odl_build_state(msg, &st);
	odl_decode_msg(buf, sizeof(buf), msg, n);
	ck_assert_str_eq(buf, "STATE up=1 lanes=2 lane_gbps=20 "
			      "peer_uid=0x0000000000000abc");
	n = odl_build_credit(msg, 12, 7);
	odl_decode_msg(buf, sizeof(buf), msg, n);
	ck_assert_str_eq(buf, "CREDIT hop=12 credits=7");
	n = odl_build_credit(msg, 12, 0);
	odl_decode_msg(buf, sizeof(buf), msg, n);
	ck_assert_str_eq(buf, "CREDIT hop=12 credits=0 (sync)");
	n = odl_build_lane(msg, 3, 1, 1);
	odl_decode_msg(buf, sizeof(buf), msg, n);
	ck_assert_str_eq(buf, "LANE target_width=3 lane1_enabled=1 bonded=1");
	odl_hdr_encode(msg, 77, 2);
	msg[8] = 0xaa;
	msg[9] = 0xbb;
	odl_decode_msg(buf, sizeof(buf), msg, 10);
	ck_assert_str_eq(buf, "?(77) len=2 raw=aabb");
}
END_TEST

START_TEST(t_trace_line)
{
	uint8_t pkt[16], msg[64];
	char buf[512];
	size_t n = hex2bin("00000000000000000400 20002fc967ac", pkt), m;

	m = odl_build_ctrl(msg, 1, pkt, n);
	odl_trace_line(buf, sizeof(buf), 12000000345ull, ODL_EP_A, ODL_EP_B,
		       NULL, msg, m);
	ck_assert_str_eq(buf, "12.000000345 a->b     CTRL READ route=0x0 "
			      "space=router port=0 offset=0x0 len=1 seq=0 crc=ok");
	odl_trace_line(buf, sizeof(buf), 1, ODL_EP_B, ODL_EP_A,
		       CABLE_NOTE_DROP_DOWN, msg, m);
	ck_assert_ptr_nonnull(strstr(buf, "b->a     DROP(link-down) CTRL READ"));
	/* truncation is safe */
	odl_trace_line(buf, 20, 1, ODL_EP_A, ODL_EP_B, NULL, msg, m);
	ck_assert_uint_eq(strlen(buf), 19);
}
END_TEST

START_TEST(t_crc32c)
{
	/* standard check value of CRC-32C */
	ck_assert_uint_eq(odl_crc32c((const uint8_t *)"123456789", 9), 0xe3069283u);
}
END_TEST

/* ------------------------------------------------------------------ */
/* framing / validation */

START_TEST(t_validate)
{
	uint8_t msg[ODL_MSG_MAX], pkt[300];
	char err[128];
	struct odl_link_hello h = mkhello(1, 2, 40, "x");
	size_t n;

	memset(pkt, 0, sizeof(pkt));
	n = odl_build_hello(msg, &h);
	ck_assert_int_eq(odl_msg_validate(ODL_LINK_HELLO, msg + 8, (uint32_t)(n - 8),
					  err, sizeof(err)), 0);
	h.magic = 0x12345678;
	odl_build_hello(msg, &h);
	ck_assert_int_eq(odl_msg_validate(ODL_LINK_HELLO, msg + 8, 56, err,
					  sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "magic"));
	h = mkhello(1, 2, 40, "x");
	h.version = 2;
	odl_build_hello(msg, &h);
	ck_assert_int_eq(odl_msg_validate(ODL_LINK_HELLO, msg + 8, 56, err,
					  sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "version"));
	h = mkhello(1, 3, 40, "x");
	odl_build_hello(msg, &h);
	ck_assert_int_eq(odl_msg_validate(ODL_LINK_HELLO, msg + 8, 56, err,
					  sizeof(err)), -1);
	ck_assert_int_eq(odl_msg_validate(ODL_LINK_HELLO, msg + 8, 55, err,
					  sizeof(err)), -1);
	/* CTRL: 4..256 packet bytes, whole dwords */
	ck_assert_int_eq(odl_msg_validate(ODL_LINK_CTRL, pkt, 4 + 16, err,
					  sizeof(err)), 0);
	ck_assert_int_eq(odl_msg_validate(ODL_LINK_CTRL, pkt, 4 + 256, err,
					  sizeof(err)), 0);
	ck_assert_int_eq(odl_msg_validate(ODL_LINK_CTRL, pkt, 4 + 260, err,
					  sizeof(err)), -1);
	ck_assert_int_eq(odl_msg_validate(ODL_LINK_CTRL, pkt, 4 + 13, err,
					  sizeof(err)), -1);
	ck_assert_int_eq(odl_msg_validate(ODL_LINK_CTRL, pkt, 4, err,
					  sizeof(err)), -1);
	/* DATA: 1..4096 payload bytes */
	ck_assert_int_eq(odl_msg_validate(ODL_LINK_DATA, pkt, 8, err,
					  sizeof(err)), -1);
	ck_assert_int_eq(odl_msg_validate(ODL_LINK_DATA, msg, 8 + 4096, err,
					  sizeof(err)), 0);
	ck_assert_int_eq(odl_msg_validate(ODL_LINK_DATA, msg, 8 + 4097, err,
					  sizeof(err)), -1);
	ck_assert_int_eq(odl_msg_validate(ODL_LINK_CREDIT, pkt, 4, err,
					  sizeof(err)), 0);
	ck_assert_int_eq(odl_msg_validate(ODL_LINK_CREDIT, pkt, 8, err,
					  sizeof(err)), -1);
	ck_assert_int_eq(odl_msg_validate(ODL_LINK_LANE, pkt, 4, err,
					  sizeof(err)), 0);
	ck_assert_int_eq(odl_msg_validate(ODL_LINK_STATE, pkt, 16, err,
					  sizeof(err)), 0);
	ck_assert_int_eq(odl_msg_validate(0, pkt, 0, err, sizeof(err)), -1);
	ck_assert_int_eq(odl_msg_validate(42, pkt, 4, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "unknown"));
	ck_assert_int_eq(odl_msg_validate(ODL_LINK_DATA, msg, 9000, err,
					  sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "oversized"));
}
END_TEST

START_TEST(t_hello_roundtrip)
{
	uint8_t msg[128];
	struct odl_link_hello h = mkhello(0xfeedull, 1, 20, "a-very-long-profile-name-longer-than-32");
	struct odl_link_hello g;
	struct odl_link_hdr hd;

	ck_assert_uint_eq(odl_build_hello(msg, &h), 64);
	odl_hdr_decode(msg, &hd);
	ck_assert_uint_eq(hd.len, 56);
	ck_assert_uint_eq(hd.type, ODL_LINK_HELLO);
	/* little-endian on the wire */
	ck_assert_uint_eq(msg[8], 0x4f);
	ck_assert_uint_eq(msg[11], 0x4b);
	odl_hello_decode(msg + 8, &g);
	ck_assert_uint_eq(g.uid, 0xfeedull);
	ck_assert_uint_eq(g.lanes, 1);
	ck_assert_uint_eq(strlen(g.profile), 31);
}
END_TEST

/* ------------------------------------------------------------------ */
/* capture */

struct capseen {
	int n;
	uint64_t ts[8];
	int from[8], to[8];
	unsigned flags[8];
	size_t len[8];
	uint8_t first[8];
};

static void cap_cb(void *arg, uint64_t ts, int from, int to, unsigned flags,
		   const uint8_t *msg, size_t len)
{
	struct capseen *s = arg;

	if (s->n < 8) {
		s->ts[s->n] = ts;
		s->from[s->n] = from;
		s->to[s->n] = to;
		s->flags[s->n] = flags;
		s->len[s->n] = len;
		s->first[s->n] = msg[8];
	}
	s->n++;
}

START_TEST(t_capture_roundtrip)
{
	FILE *f = tmpfile();
	uint8_t msg[64], payload[5] = { 9, 8, 7, 6, 5 };
	struct capseen s;
	char err[128];
	size_t n;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(odl_cap_write_header(f), 0);
	n = odl_build_data(msg, 8, 0, 0, 0, payload, 5);
	ck_assert_int_eq(odl_cap_write_msg(f, 123456789012ull, ODL_EP_A, ODL_EP_B,
					   0, msg, n), 0);
	n = odl_build_credit(msg, 3, 4);
	ck_assert_int_eq(odl_cap_write_msg(f, 5, ODL_EP_B, ODL_EP_A,
					   ODL_CAP_F_DROP_DOWN, msg, n), 0);
	rewind(f);
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(odl_cap_read(f, cap_cb, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_uint_eq(s.ts[0], 123456789012ull);
	ck_assert_int_eq(s.from[0], ODL_EP_A);
	ck_assert_int_eq(s.to[0], ODL_EP_B);
	ck_assert_uint_eq(s.len[0], 8 + 8 + 5);
	ck_assert_uint_eq(s.first[0], 8);
	ck_assert_uint_eq(s.flags[1], ODL_CAP_F_DROP_DOWN);
	ck_assert_str_eq(odl_cap_note_from_flags(s.flags[1]), CABLE_NOTE_DROP_DOWN);
	fclose(f);

	f = tmpfile();
	fputs("not a capture at all", f);
	rewind(f);
	ck_assert_int_eq(odl_cap_read(f, cap_cb, &s, err, sizeof(err)), -1);
	fclose(f);
}
END_TEST

/* ------------------------------------------------------------------ */
/* cable core, driven without sockets */

struct rec {
	uint8_t out[2][1 << 16];
	size_t len[2], rd[2];
	int nsend[2];
	int closed[2];
	char reason[2][128];
	size_t backlog[2];
	int drops;
	int events;
	int n_fault_drop, n_corrupt, n_delay, n_flight, n_tamper; /* notes seen */
};

static struct rec R;
static struct cable_core C;

static void r_send(void *ctx, int end, const uint8_t *msg, size_t len)
{
	(void)ctx;
	ck_assert_uint_le(R.len[end] + len, sizeof(R.out[end]));
	memcpy(R.out[end] + R.len[end], msg, len);
	R.len[end] += len;
	R.nsend[end]++;
}

static size_t r_backlog(void *ctx, int end)
{
	(void)ctx;
	return R.backlog[end];
}

static void r_close(void *ctx, int end, const char *reason)
{
	(void)ctx;
	R.closed[end]++;
	snprintf(R.reason[end], sizeof(R.reason[end]), "%s", reason);
}

static void r_event(void *ctx, uint64_t now, int from, int to, const char *note,
		    const uint8_t *msg, size_t len)
{
	(void)ctx;
	(void)now;
	(void)from;
	(void)to;
	(void)msg;
	(void)len;
	R.events++;
	if (note && !strncmp(note, "DROP", 4))
		R.drops++;
	if (note && !strcmp(note, CABLE_NOTE_DROP_FAULT))
		R.n_fault_drop++;
	if (note && !strcmp(note, CABLE_NOTE_DROP_FLIGHT))
		R.n_flight++;
	if (note && strstr(note, "corrupt"))
		R.n_corrupt++;
	if (note && strstr(note, "tamper"))
		R.n_tamper++;
	if (note && strstr(note, "delay"))
		R.n_delay++;
}

static const struct cable_ops R_OPS = {
	.send = r_send, .backlog = r_backlog, .close = r_close, .event = r_event,
};

/* Next message delivered to end; returns type or -1 if none. */
static int next_msg(int end, const uint8_t **body, uint32_t *len)
{
	struct odl_link_hdr h;

	if (R.rd[end] + 8 > R.len[end])
		return -1;
	odl_hdr_decode(R.out[end] + R.rd[end], &h);
	ck_assert_uint_le(R.rd[end] + 8 + h.len, R.len[end]);
	if (body)
		*body = R.out[end] + R.rd[end] + 8;
	if (len)
		*len = h.len;
	R.rd[end] += 8 + h.len;
	return h.type;
}

static struct odl_link_state expect_state(int end)
{
	const uint8_t *b;
	uint32_t len;
	struct odl_link_state st;

	ck_assert_int_eq(next_msg(end, &b, &len), ODL_LINK_STATE);
	ck_assert_uint_eq(len, ODL_STATE_SIZE);
	odl_state_decode(b, &st);
	return st;
}

static void expect_none(int end)
{
	ck_assert_int_eq(next_msg(end, NULL, NULL), -1);
}

static void send_hello(int end, uint64_t uid, unsigned lanes, unsigned gbps,
		       uint64_t now)
{
	uint8_t msg[64];
	struct odl_link_hello h = mkhello(uid, lanes, gbps, end ? "prof-b" : "prof-a");
	size_t n = odl_build_hello(msg, &h);

	cable_core_rx(&C, end, msg, n, now);
}

static void core_setup_cfg(const struct cable_cfg *cfg)
{
	memset(&R, 0, sizeof(R));
	cable_core_init(&C, cfg, &R_OPS);
}

static void core_setup(void)
{
	struct cable_cfg cfg;

	cable_cfg_defaults(&cfg);
	core_setup_cfg(&cfg);
}

static void core_teardown(void)
{
	cable_core_fini(&C);
}

/* both ends connected and HELLOed, STATE messages consumed */
static void bring_up(uint64_t now)
{
	ck_assert_int_eq(cable_core_connect(&C, 0, now), 0);
	ck_assert_int_eq(cable_core_connect(&C, 1, now), 0);
	send_hello(0, 0xa, 2, 40, now);
	send_hello(1, 0xb, 2, 40, now);
	while (next_msg(0, NULL, NULL) >= 0)
		;
	while (next_msg(1, NULL, NULL) >= 0)
		;
	ck_assert(C.link_up);
}

START_TEST(t_core_hello_state)
{
	struct odl_link_state st;

	ck_assert_int_eq(cable_core_connect(&C, 0, 100), 0);
	ck_assert_int_eq(cable_core_connect(&C, 0, 100), -1); /* one at a time */
	expect_none(0); /* nothing before HELLO */
	send_hello(0, 0xa1, 2, 40, 100);
	st = expect_state(0);
	ck_assert_uint_eq(st.up, 0);
	ck_assert_uint_eq(st.peer_uid, 0);
	expect_none(0);
	ck_assert(!C.link_up);

	ck_assert_int_eq(cable_core_connect(&C, 1, 200), 0);
	expect_none(0); /* b connected but no HELLO yet */
	send_hello(1, 0xb2, 1, 20, 200);
	st = expect_state(1);
	ck_assert_uint_eq(st.up, 1);
	ck_assert_uint_eq(st.lanes, 1);
	ck_assert_uint_eq(st.lane_gbps, 20);
	ck_assert_uint_eq(st.peer_uid, 0xa1);
	st = expect_state(0);
	ck_assert_uint_eq(st.up, 1);
	ck_assert_uint_eq(st.lanes, 1);
	ck_assert_uint_eq(st.lane_gbps, 20);
	ck_assert_uint_eq(st.peer_uid, 0xb2);
	expect_none(0);
	expect_none(1);
	ck_assert(C.link_up);
	ck_assert_uint_eq(C.link_up_count, 1);
}
END_TEST

START_TEST(t_core_cable_limits)
{
	struct cable_cfg cfg;
	struct odl_link_state st;

	cable_core_fini(&C);
	cable_cfg_defaults(&cfg);
	cfg.lanes = 1;
	cfg.lane_gbps = 10;
	core_setup_cfg(&cfg);
	cable_core_connect(&C, 0, 0);
	cable_core_connect(&C, 1, 0);
	send_hello(0, 1, 2, 40, 0);
	send_hello(1, 2, 2, 0, 0); /* 0: no opinion */
	st = expect_state(0);
	ck_assert_uint_eq(st.up, 0);
	st = expect_state(0);
	ck_assert_uint_eq(st.up, 1);
	ck_assert_uint_eq(st.lanes, 1);
	ck_assert_uint_eq(st.lane_gbps, 10);
}
END_TEST

START_TEST(t_core_start_unplugged)
{
	struct cable_cfg cfg;
	struct odl_link_state st;
	char js[2048];

	cable_core_fini(&C);
	cable_cfg_defaults(&cfg);
	cfg.plugged = false;
	core_setup_cfg(&cfg);
	cable_core_connect(&C, 0, 0);
	cable_core_connect(&C, 1, 0);
	send_hello(0, 1, 2, 40, 0);
	send_hello(1, 2, 2, 40, 0);
	ck_assert_uint_eq(expect_state(0).up, 0);
	ck_assert_uint_eq(expect_state(1).up, 0);
	expect_none(0);
	expect_none(1);
	cable_core_plug(&C, 10);
	st = expect_state(0);
	ck_assert_uint_eq(st.up, 1);
	ck_assert_uint_eq(st.peer_uid, 2);
	ck_assert_uint_eq(expect_state(1).up, 1);
	ck_assert_uint_eq(C.plug_count, 1);
	cable_core_plug(&C, 11); /* already plugged: no change, no STATE */
	expect_none(0);
	ck_assert_uint_eq(C.plug_count, 1);
	cable_core_status_json(&C, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"plugged\":true,\"link_up\":true"));
	ck_assert_ptr_nonnull(strstr(js, "\"plug_count\":1"));
}
END_TEST

START_TEST(t_core_forward_while_up)
{
	uint8_t pkt[16], msg[64], got_ctrl[64];
	const uint8_t *b;
	uint32_t len;
	size_t n = hex2bin("00000000000000000400 20002fc967ac", pkt), m;

	bring_up(1000);
	m = odl_build_ctrl(msg, 1, pkt, n);
	cable_core_rx(&C, 0, msg, m, 1000);
	/* serialization takes a few ns: not yet released */
	expect_none(1);
	ck_assert_uint_ne(cable_core_next_deadline(&C), UINT64_MAX);
	cable_core_tick(&C, cable_core_next_deadline(&C));
	ck_assert_int_eq(next_msg(1, &b, &len), ODL_LINK_CTRL);
	ck_assert_uint_eq(len + 8, m);
	memcpy(got_ctrl, b - 8, m);
	ck_assert_mem_eq(got_ctrl, msg, m); /* forwarded unchanged */
	expect_none(0);
	ck_assert_uint_eq(cable_core_next_deadline(&C), UINT64_MAX);

	/* the other direction, and CREDIT/LANE/DATA */
	m = odl_build_credit(msg, 8, 3);
	cable_core_rx(&C, 1, msg, m, 2000);
	m = odl_build_lane(msg, 3, 1, 1);
	cable_core_rx(&C, 1, msg, m, 2000);
	m = odl_build_data(msg, 8, 1, 2, 0, pkt, 16);
	cable_core_rx(&C, 1, msg, m, 2000);
	cable_core_tick(&C, 1000000);
	ck_assert_int_eq(next_msg(0, NULL, NULL), ODL_LINK_CREDIT);
	ck_assert_int_eq(next_msg(0, NULL, NULL), ODL_LINK_LANE);
	ck_assert_int_eq(next_msg(0, &b, &len), ODL_LINK_DATA);
	ck_assert_uint_eq(len, 8 + 16);
	ck_assert_uint_eq(C.end[1].tx_msgs, 4); /* HELLO + 3 */
	ck_assert_uint_eq(C.end[0].dropped, 0);
	ck_assert_uint_eq(C.end[1].dropped, 0);
}
END_TEST

START_TEST(t_core_order_preserved)
{
	uint8_t msg[64], p[4];
	const uint8_t *b;
	uint32_t len;
	uint64_t t = 5000;

	bring_up(t);
	for (int i = 0; i < 50; i++) {
		size_t m;

		odl_put32(p, (uint32_t)i);
		if (i % 3 == 0) {
			m = odl_build_credit(msg, (uint16_t)i, 1);
		} else {
			m = odl_build_data(msg, (uint16_t)i, 0, 0, 0, p, 4);
		}
		cable_core_rx(&C, 0, msg, m, t);
		if (i % 7 == 0)
			cable_core_tick(&C, t += 3);
	}
	cable_core_tick(&C, t + 1000000);
	for (int i = 0; i < 50; i++) {
		int type = next_msg(1, &b, &len);

		ck_assert_int_eq(type, i % 3 == 0 ? ODL_LINK_CREDIT : ODL_LINK_DATA);
		ck_assert_uint_eq(odl_get16(b), i);
	}
	expect_none(1);
}
END_TEST

START_TEST(t_core_drop_while_down)
{
	uint8_t msg[64], p[8] = { 0 };
	size_t m;

	bring_up(0);
	cable_core_unplug(&C, 10);
	ck_assert_uint_eq(expect_state(0).up, 0);
	ck_assert_uint_eq(expect_state(1).up, 0);
	m = odl_build_data(msg, 8, 0, 0, 0, p, 8);
	cable_core_rx(&C, 0, msg, m, 20);
	m = odl_build_credit(msg, 8, 1);
	cable_core_rx(&C, 1, msg, m, 20);
	cable_core_tick(&C, 1000000000);
	expect_none(0);
	expect_none(1);
	ck_assert_uint_eq(C.end[0].dropped, 1);
	ck_assert_uint_eq(C.end[1].dropped, 1);
	ck_assert_int_eq(R.drops, 2);
	ck_assert_int_eq(R.closed[0] + R.closed[1], 0); /* not an error */
	/* replug: STATE up again, forwarding resumes */
	cable_core_plug(&C, 30);
	ck_assert_uint_eq(expect_state(0).up, 1);
	ck_assert_uint_eq(expect_state(1).up, 1);
	cable_core_rx(&C, 1, msg, m, 40);
	cable_core_tick(&C, 1000000000);
	ck_assert_int_eq(next_msg(0, NULL, NULL), ODL_LINK_CREDIT);
}
END_TEST

START_TEST(t_core_unplug_discards_in_flight)
{
	struct cable_cfg cfg;
	uint8_t msg[64], p[8] = { 0 };
	size_t m;

	cable_core_fini(&C);
	cable_cfg_defaults(&cfg);
	cfg.latency_ns = 1000000; /* 1 ms */
	core_setup_cfg(&cfg);
	bring_up(0);
	m = odl_build_data(msg, 8, 0, 0, 0, p, 8);
	cable_core_rx(&C, 0, msg, m, 100);
	cable_core_tick(&C, 500000);
	expect_none(1); /* still on the wire */
	cable_core_unplug(&C, 600000);
	ck_assert_uint_eq(expect_state(1).up, 0);
	ck_assert_uint_eq(expect_state(0).up, 0);
	cable_core_tick(&C, 5000000);
	expect_none(1);
	ck_assert_uint_eq(C.end[0].dropped, 1);
	ck_assert_uint_eq(cable_core_next_deadline(&C), UINT64_MAX);
}
END_TEST

START_TEST(t_core_peer_disconnect)
{
	struct odl_link_state st;

	bring_up(0);
	cable_core_disconnect(&C, 1, 10);
	st = expect_state(0);
	ck_assert_uint_eq(st.up, 0);
	ck_assert_uint_eq(st.peer_uid, 0);
	ck_assert(!C.link_up);
	/* reconnect (QEMU restarted) with a new uid */
	ck_assert_int_eq(cable_core_connect(&C, 1, 20), 0);
	send_hello(1, 0xbbb, 2, 40, 20);
	ck_assert_uint_eq(expect_state(1).up, 1);
	st = expect_state(0);
	ck_assert_uint_eq(st.up, 1);
	ck_assert_uint_eq(st.peer_uid, 0xbbb);
	ck_assert_uint_eq(C.link_up_count, 2);
}
END_TEST

START_TEST(t_core_bad_magic_closes)
{
	uint8_t msg[64];
	struct odl_link_hello h = mkhello(1, 2, 40, "x");
	size_t n;

	cable_core_connect(&C, 0, 0);
	h.magic = 0xdeadbeef;
	n = odl_build_hello(msg, &h);
	cable_core_rx(&C, 0, msg, n, 0);
	ck_assert_int_eq(R.closed[0], 1);
	ck_assert_ptr_nonnull(strstr(R.reason[0], "magic"));
	ck_assert(!C.end[0].connected);
	expect_none(0);
	/* the end can connect again */
	ck_assert_int_eq(cable_core_connect(&C, 0, 1), 0);
	send_hello(0, 1, 2, 40, 1);
	ck_assert_uint_eq(expect_state(0).up, 0);
}
END_TEST

START_TEST(t_core_oversized_closes)
{
	uint8_t hdr[8];

	bring_up(0);
	odl_hdr_encode(hdr, ODL_LINK_DATA, ODL_LINK_MAX_BODY + 1);
	cable_core_rx(&C, 0, hdr, 8, 5); /* closed on the header alone */
	ck_assert_int_eq(R.closed[0], 1);
	ck_assert_ptr_nonnull(strstr(R.reason[0], "oversized"));
	ck_assert_uint_eq(expect_state(1).up, 0); /* peer told */
	ck_assert_int_eq(R.closed[1], 0);
}
END_TEST

START_TEST(t_core_unknown_and_early_close)
{
	uint8_t msg[64];
	size_t m;

	/* data before HELLO */
	cable_core_connect(&C, 0, 0);
	m = odl_build_credit(msg, 1, 1);
	cable_core_rx(&C, 0, msg, m, 0);
	ck_assert_int_eq(R.closed[0], 1);
	ck_assert_ptr_nonnull(strstr(R.reason[0], "before HELLO"));
	/* unknown type after HELLO */
	cable_core_connect(&C, 0, 1);
	send_hello(0, 1, 2, 40, 1);
	odl_hdr_encode(msg, 99, 0);
	cable_core_rx(&C, 0, msg, 8, 2);
	ck_assert_int_eq(R.closed[0], 2);
	ck_assert_ptr_nonnull(strstr(R.reason[0], "unknown"));
	/* STATE from a model */
	cable_core_connect(&C, 1, 3);
	send_hello(1, 2, 2, 40, 3);
	{
		struct odl_link_state st = { 0 };

		m = odl_build_state(msg, &st);
	}
	cable_core_rx(&C, 1, msg, m, 4);
	ck_assert_int_eq(R.closed[1], 1);
}
END_TEST

START_TEST(t_core_partial_reads)
{
	uint8_t stream[512], pkt[16];
	struct odl_link_hello h = mkhello(0x77, 2, 40, "split");
	size_t n = 0, plen = hex2bin("00000000000000000400 20002fc967ac", pkt);
	const uint8_t *b;
	uint32_t len;

	cable_core_connect(&C, 0, 0);
	cable_core_connect(&C, 1, 0);
	send_hello(1, 0x88, 2, 40, 0);
	(void)expect_state(1);
	n += odl_build_hello(stream + n, &h);
	n += odl_build_ctrl(stream + n, 1, pkt, plen);
	n += odl_build_credit(stream + n, 5, 6);
	/* one byte at a time */
	for (size_t i = 0; i < n; i++)
		cable_core_rx(&C, 0, stream + i, 1, 10);
	ck_assert_uint_eq(expect_state(0).up, 1);
	ck_assert_uint_eq(expect_state(1).up, 1);
	cable_core_tick(&C, 1000000);
	ck_assert_int_eq(next_msg(1, &b, &len), ODL_LINK_CTRL);
	ck_assert_uint_eq(len, 4 + plen);
	ck_assert_mem_eq(b + 4, pkt, plen);
	ck_assert_int_eq(next_msg(1, &b, &len), ODL_LINK_CREDIT);
	ck_assert_uint_eq(odl_get16(b + 2), 6);
	/* two messages and a half in one read, then the rest */
	n = odl_build_credit(stream, 1, 1);
	n += odl_build_credit(stream + n, 2, 2);
	n += odl_build_ctrl(stream + n, 1, pkt, plen);
	cable_core_rx(&C, 0, stream, n - 7, 20);
	cable_core_rx(&C, 0, stream + n - 7, 7, 21);
	cable_core_tick(&C, 2000000);
	ck_assert_int_eq(next_msg(1, NULL, NULL), ODL_LINK_CREDIT);
	ck_assert_int_eq(next_msg(1, NULL, NULL), ODL_LINK_CREDIT);
	ck_assert_int_eq(next_msg(1, NULL, NULL), ODL_LINK_CTRL);
	expect_none(1);
	ck_assert_int_eq(R.closed[0], 0);
}
END_TEST

START_TEST(t_core_rate_limit)
{
	struct cable_cfg cfg;
	uint8_t msg[2048], p[1000];
	size_t m;
	const uint64_t t0 = 1000000;
	/* 1 lane x 1 Gb/s = 1 bit/ns: a 1016-byte message takes 8128 ns */
	const uint64_t ser = 1016 * 8;

	cable_core_fini(&C);
	cable_cfg_defaults(&cfg);
	cfg.lanes = 1;
	cfg.lane_gbps = 1;
	cfg.latency_ns = 2000;
	core_setup_cfg(&cfg);
	bring_up(0);
	memset(p, 0x5a, sizeof(p));
	m = odl_build_data(msg, 8, 0, 0, 0, p, sizeof(p));
	ck_assert_uint_eq(m, 1016);
	cable_core_rx(&C, 0, msg, m, t0);
	cable_core_rx(&C, 0, msg, m, t0); /* queued behind the first */
	ck_assert_uint_eq(cable_core_next_deadline(&C), t0 + ser + 2000);
	cable_core_tick(&C, t0 + ser + 1999);
	expect_none(1);
	cable_core_tick(&C, t0 + ser + 2000);
	ck_assert_int_eq(next_msg(1, NULL, NULL), ODL_LINK_DATA);
	expect_none(1);
	ck_assert_uint_eq(cable_core_next_deadline(&C), t0 + 2 * ser + 2000);
	cable_core_tick(&C, t0 + 2 * ser + 1999);
	expect_none(1);
	cable_core_tick(&C, t0 + 2 * ser + 2000);
	ck_assert_int_eq(next_msg(1, NULL, NULL), ODL_LINK_DATA);
	/* an idle wire starts fresh: no credit for the idle time beyond now */
	cable_core_rx(&C, 0, msg, m, t0 + 10 * ser);
	ck_assert_uint_eq(cable_core_next_deadline(&C), t0 + 11 * ser + 2000);
	/* the other direction is independent */
	cable_core_rx(&C, 1, msg, m, t0 + 10 * ser);
	cable_core_tick(&C, t0 + 11 * ser + 2000);
	ck_assert_int_eq(next_msg(1, NULL, NULL), ODL_LINK_DATA);
	ck_assert_int_eq(next_msg(0, NULL, NULL), ODL_LINK_DATA);
}
END_TEST

START_TEST(t_core_fractional_rate)
{
	/* 2 x 40 Gb/s = 80 bits/ns; 24-byte messages = 2.4 ns each */
	uint8_t msg[64];
	size_t m = odl_build_credit(msg, 1, 1) + 0;
	uint64_t t0 = 100;

	bring_up(0);
	ck_assert_uint_eq(m, 12);
	for (int i = 0; i < 1000; i++)
		cable_core_rx(&C, 0, msg, m, t0);
	/* 1000 * 96 bits / 80 = 1200 ns exactly */
	ck_assert_uint_eq(C.end[0].wire_free_at, t0 + 1200);
}
END_TEST

START_TEST(t_core_queue_full_drops_data_only)
{
	struct cable_cfg cfg;
	uint8_t msg[64], p[8] = { 0 }, pkt[16];
	size_t m, plen = hex2bin("00000000000000000400 20002fc967ac", pkt);

	cable_core_fini(&C);
	cable_cfg_defaults(&cfg);
	cfg.queue_limit = 1000;
	core_setup_cfg(&cfg);
	bring_up(0);
	R.backlog[1] = 5000; /* b is slow */
	m = odl_build_data(msg, 8, 0, 0, 0, p, 8);
	cable_core_rx(&C, 0, msg, m, 10);
	m = odl_build_ctrl(msg, 1, pkt, plen);
	cable_core_rx(&C, 0, msg, m, 10);
	m = odl_build_credit(msg, 8, 1);
	cable_core_rx(&C, 0, msg, m, 10);
	cable_core_tick(&C, 1000000);
	ck_assert_int_eq(next_msg(1, NULL, NULL), ODL_LINK_CTRL);
	ck_assert_int_eq(next_msg(1, NULL, NULL), ODL_LINK_CREDIT);
	expect_none(1);
	ck_assert_uint_eq(C.end[0].dropped, 1);
}
END_TEST

START_TEST(t_core_status_json)
{
	char js[2048];
	uint8_t msg[64];
	size_t m;

	bring_up(0);
	m = odl_build_credit(msg, 8, 1);
	cable_core_rx(&C, 0, msg, m, 0);
	cable_core_tick(&C, 1000000);
	cable_core_status_json(&C, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "{\"plugged\":true,\"link_up\":true,\"ends\":{\"a\":{\"connected\":true"));
	ck_assert_ptr_nonnull(strstr(js, "\"uid\":\"0x000000000000000a\",\"profile\":\"prof-a\",\"tx_msgs\":2,\"tx_bytes\":76"));
	ck_assert_ptr_nonnull(strstr(js, "\"b\":{\"connected\":true"));
	ck_assert_ptr_nonnull(strstr(js, "\"lanes\":2,\"lane_gbps\":40"));
	ck_assert_ptr_nonnull(strstr(js, "\"plug_count\":0"));
	ck_assert_ptr_null(strchr(js, '\n'));
	cable_core_disconnect(&C, 0, 5);
	cable_core_status_json(&C, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"a\":{\"connected\":false,\"hello\":false,\"uid\":\"0x0000000000000000\",\"profile\":\"\""));
}
END_TEST


/* ------------------------------------------------------------------ */
/* fault injection (cable_fault.c through cable_core) */

static char REPLY[65536];

/* Run a control command; returns the reply line. */
static const char *ctl(const char *cmd, uint64_t now)
{
	REPLY[0] = '\0';
	ck_assert_int_eq(cable_core_ctl(&C, cmd, now, REPLY, sizeof(REPLY)), 1);
	ck_assert_ptr_null(strchr(REPLY, '\n'));
	return REPLY;
}

static void ctl_ok(const char *cmd, uint64_t now)
{
	const char *r = ctl(cmd, now);

	ck_assert_msg(!strncmp(r, "ok", 2), "'%s' -> '%s'", cmd, r);
}

static void ctl_err(const char *cmd)
{
	const char *r = ctl(cmd, 0);

	ck_assert_msg(!strncmp(r, "error: ", 7), "'%s' -> '%s'", cmd, r);
}

/* DATA frame on hop with a 16-byte payload: idx (le32) then a pattern */
static void send_data(int end, uint16_t hop, uint32_t idx, uint64_t now)
{
	uint8_t msg[64], p[16];
	size_t m;

	for (int i = 0; i < 16; i++)
		p[i] = (uint8_t)(0xa0 + i);
	odl_put32(p, idx);
	m = odl_build_data(msg, hop, 1, 2, 0, p, sizeof(p));
	cable_core_rx(&C, end, msg, m, now);
}

static void send_credit(int end, uint16_t hop, uint16_t credits, uint64_t now)
{
	uint8_t msg[16];
	size_t m = odl_build_credit(msg, hop, credits);

	cable_core_rx(&C, end, msg, m, now);
}

struct got {
	int type;
	uint16_t hop, flags;
	uint32_t idx;
	uint8_t payload[16];
};

/* Next message to end: DATA fills hop/flags/idx/payload, CREDIT hop/idx. */
static struct got next_got(int end)
{
	struct got g;
	const uint8_t *b;
	uint32_t len;

	memset(&g, 0, sizeof(g));
	g.type = next_msg(end, &b, &len);
	if (g.type == ODL_LINK_DATA) {
		ck_assert_uint_eq(len, 8 + 16);
		g.hop = odl_get16(b);
		g.flags = odl_get16(b + 4);
		memcpy(g.payload, b + 8, 16);
		g.idx = odl_get32(b + 8);
	} else if (g.type == ODL_LINK_CREDIT) {
		g.hop = odl_get16(b);
		g.idx = odl_get16(b + 2);
	}
	return g;
}

static int count_bits_changed(const uint8_t *p)
{
	int n = 0;

	for (int i = 4; i < 16; i++)
		n += __builtin_popcount((unsigned)(p[i] ^ (uint8_t)(0xa0 + i)));
	return n;
}

START_TEST(t_fault_syntax)
{
	char js[16384];

	ck_assert_int_eq(cable_core_ctl(&C, "bogus", 0, REPLY, sizeof(REPLY)), 0);
	ck_assert_int_eq(cable_core_ctl(&C, "faulty", 0, REPLY, sizeof(REPLY)), 0);
	ck_assert_ptr_nonnull(strstr(ctl("fault", 0), "usage: fault"));
	ck_assert_ptr_nonnull(strstr(ctl("fault help", 0), "usage: fault"));
	ck_assert_str_eq(ctl("fault drop hop=8 nth=3", 0),
			 "ok #1 drop hop=8 dir=both nth=3");
	ck_assert_str_eq(ctl("fault drop dir=a2b hop=9 every=4 count=2", 0),
			 "ok #2 drop hop=9 dir=a2b every=4 count=2");
	ck_assert_str_eq(ctl("fault corrupt hop=8 every=10 bit=5", 0),
			 "ok #3 corrupt hop=8 dir=both every=10 bit=5");
	ck_assert_str_eq(ctl("fault corrupt hop=ctrl nth=1", 0),
			 "ok #4 corrupt hop=ctrl dir=both nth=1 bit=random");
	ck_assert_str_eq(ctl("fault withhold-credits hop=8 count=all", 0),
			 "ok #5 withhold-credits hop=8 dir=both");
	ck_assert_str_eq(ctl("fault withhold hop=8 count=3 dir=b2a", 0),
			 "ok #6 withhold-credits hop=8 dir=b2a count=3");
	ck_assert_str_eq(ctl("fault delay hop=8 us=250", 0),
			 "ok #7 delay hop=8 dir=both us=250");
	ck_assert_str_eq(ctl("fault unplug-after frames=10 replug_ms=20", 0),
			 "ok #8 unplug-after hop=any dir=both frames=10 replug_ms=20");
	ck_assert_str_eq(ctl("fault drop hop=any ppm=1000", 0),
			 "ok #9 drop hop=any dir=both ppm=1000");
	ck_assert_str_eq(ctl("fault seed 0x2a", 0), "ok seed=42");
	ctl_err("fault seed");
	ctl_err("fault seed -1");
	ctl_err("fault seed 12x");
	ctl_err("fault explode");
	ctl_err("fault drop hop=8 nth=0");
	ctl_err("fault drop hop=8 nth=2 every=3");
	ctl_err("fault drop hop=70000");
	ctl_err("fault drop dir=sideways");
	ctl_err("fault drop hop=8 nth");
	ctl_err("fault drop hop=8 us=5");
	ctl_err("fault delay hop=8");
	ctl_err("fault delay hop=8 us=held");
	ctl_err("fault release 3");
	ctl_err("fault corrupt ppm=1000001");
	ctl_err("fault unplug-after");
	ctl_err("fault unplug-after frames=3 nth=2");
	ctl_err("fault unplug-after frames=3 hop=0");
	ctl_err("fault retrain");
	ctl_err("fault retrain lanes=3 gbps=10");
	ctl_err("fault retrain lanes=1");
	ctl_err("fault retrain lanes=1 gbps=10 mode=live down_us=5");
	ctl_err("fault retrain off lanes=1");
	ctl_err("fault remove 99");
	ctl_err("fault remove");
	/* list and status show all of them */
	ck_assert_ptr_nonnull(strstr(ctl("fault list", 0), "ok seed=42 faults=9; #1 drop hop=8 dir=both nth=3 hits=0"));
	cable_core_status_json(&C, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"faults\":{\"seed\":42,\"dropped\":0,"));
	ck_assert_ptr_nonnull(strstr(js, "{\"id\":1,\"kind\":\"drop\",\"hop\":8,\"dir\":\"both\",\"rule\":\"#1 drop hop=8 dir=both nth=3\",\"seen\":[0,0],\"hits\":[0,0],\"hits_total\":0,\"done\":false}"));
	ck_assert_ptr_nonnull(strstr(js, "\"kind\":\"withhold-credits\""));
	ck_assert_ptr_null(strchr(js, '\n'));
	ctl_ok("fault remove 2", 0);
	ck_assert_ptr_null(strstr(ctl("fault list", 0), "#2 "));
	ck_assert_ptr_nonnull(strstr(REPLY, "faults=8"));
	/* the table is bounded */
	for (int i = 0; i < CABLE_FAULT_MAX - 8; i++)
		ctl_ok("fault drop hop=1 nth=1", 0);
	ctl_err("fault drop hop=1 nth=1");
	cable_core_status_json(&C, js, sizeof(js));
	ck_assert_uint_eq(js[strlen(js) - 1], '}');
	ck_assert_ptr_nonnull(strstr(js, "\"link_up_count\":0,\"faults\":{"));
	ctl_ok("fault clear", 0);
	ck_assert_str_eq(ctl("fault list", 0), "ok seed=42 faults=0");
	/* plug/unplug/status are core commands too */
	ctl_ok("unplug", 0);
	ck_assert(!C.plugged);
	ctl_ok("plug", 0);
	ck_assert(C.plugged);
	ck_assert_int_eq(ctl("status", 0)[0], '{');
}
END_TEST

START_TEST(t_fault_drop_nth)
{
	char js[16384];

	bring_up(0);
	ctl_ok("fault drop hop=8 nth=3", 0);
	for (uint32_t i = 1; i <= 5; i++) {
		send_data(0, 8, i, 10);
		send_data(0, 9, 100 + i, 10);
		send_data(1, 8, 200 + i, 10);
	}
	cable_core_tick(&C, 1000000);
	/* a->b: hop 8 frames 1 2 4 5 (3 dropped); hop 9 untouched */
	for (uint32_t i = 1; i <= 5; i++) {
		struct got g;

		if (i != 3) {
			g = next_got(1);
			ck_assert_uint_eq(g.hop, 8);
			ck_assert_uint_eq(g.idx, i);
			ck_assert_uint_eq(g.flags, 0);
		}
		g = next_got(1);
		ck_assert_uint_eq(g.hop, 9);
		ck_assert_uint_eq(g.idx, 100 + i);
	}
	expect_none(1);
	/* b->a counts on its own: its 3rd frame is dropped too */
	for (uint32_t i = 1; i <= 5; i++) {
		if (i == 3)
			continue;
		ck_assert_uint_eq(next_got(0).idx, 200 + i);
	}
	expect_none(0);
	ck_assert_uint_eq(C.end[0].dropped, 1);
	ck_assert_uint_eq(C.end[1].dropped, 1);
	ck_assert_int_eq(R.n_fault_drop, 2);
	ck_assert_ptr_nonnull(strstr(ctl("fault list", 0),
		"#1 drop hop=8 dir=both nth=3 hits=2 (a2b 1/3, b2a 1/3) done"));
	cable_core_status_json(&C, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"dropped\":2,"));
	ck_assert_ptr_nonnull(strstr(js, "\"seen\":[3,3],\"hits\":[1,1],\"hits_total\":2,\"done\":true"));
	/* done: later frames pass */
	send_data(0, 8, 6, 2000000);
	cable_core_tick(&C, 3000000);
	ck_assert_uint_eq(next_got(1).idx, 6);
}
END_TEST

START_TEST(t_fault_drop_every_dir_count)
{
	bring_up(0);
	ctl_ok("fault drop hop=8 dir=a2b every=2 count=3", 0);
	for (uint32_t i = 1; i <= 10; i++) {
		send_data(0, 8, i, 10);
		send_data(1, 8, 100 + i, 10);
	}
	cable_core_tick(&C, 1000000);
	/* a->b: 2, 4, 6 dropped (count=3), 8 and 10 delivered */
	{
		static const uint32_t want[] = { 1, 3, 5, 7, 8, 9, 10 };

		for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
			ck_assert_uint_eq(next_got(1).idx, want[k]);
		expect_none(1);
	}
	for (uint32_t i = 1; i <= 10; i++)
		ck_assert_uint_eq(next_got(0).idx, 100 + i);
	ck_assert_uint_eq(C.faults.f[0].hits[0], 3);
	ck_assert_uint_eq(C.faults.f[0].seen[1], 0); /* b2a never matched */
	ck_assert(C.faults.f[0].done);
	ck_assert_uint_eq(C.faults.tot_dropped, 3);
}
END_TEST

START_TEST(t_fault_drop_from_count)
{
	bring_up(0);
	ck_assert_str_eq(ctl("fault drop hop=8 dir=a2b from=4 count=3", 0),
			 "ok #1 drop hop=8 dir=a2b from=4 count=3");
	for (uint32_t i = 1; i <= 10; i++)
		send_data(0, 8, i, 10);
	cable_core_tick(&C, 1000000);
	/* 4, 5, 6 dropped (from the 4th, count=3), the rest delivered */
	{
		static const uint32_t want[] = { 1, 2, 3, 7, 8, 9, 10 };

		for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
			ck_assert_uint_eq(next_got(1).idx, want[k]);
		expect_none(1);
	}
	ck_assert_uint_eq(C.faults.f[0].hits[0], 3);
	ck_assert_uint_eq(C.faults.f[0].seen[0], 6);
	ck_assert(C.faults.f[0].done);
	ck_assert_uint_eq(C.faults.tot_dropped, 3);
	ctl_err("fault drop hop=8 from=0");
	ctl_err("fault drop hop=8 from=2 nth=3");
}
END_TEST

static void send_data_eof(int end, uint16_t hop, uint32_t idx, uint8_t eof,
			  uint64_t now)
{
	uint8_t msg[64], p[16];
	size_t m;

	memset(p, 0xa0, sizeof(p));
	odl_put32(p, idx);
	m = odl_build_data(msg, hop, 3, eof, 0, p, sizeof(p));
	cable_core_rx(&C, end, msg, m, now);
}

/* eof=: only DATA frames with those end-of-frame PDFs match and count */
START_TEST(t_fault_drop_eof)
{
	static const uint8_t eofs[] = { 4, 6, 6, 5, 4, 6, 5 };

	bring_up(0);
	ck_assert_str_eq(ctl("fault drop hop=8 dir=a2b nth=2 eof=4,5", 0),
			 "ok #1 drop hop=8 dir=a2b nth=2 eof=4,5");
	ck_assert_str_eq(ctl("fault drop hop=8 dir=a2b every=1 eof=6-6 count=1", 0),
			 "ok #2 drop hop=8 dir=a2b every=1 eof=6 count=1");
	for (uint32_t i = 0; i < sizeof(eofs); i++)
		send_data_eof(0, 8, i + 1, eofs[i], 10);
	cable_core_tick(&C, 1000000);
	/* 4 (the second with EOF 4 or 5) and 2 (the first with EOF 6) */
	{
		static const uint32_t want[] = { 1, 3, 5, 6, 7 };

		for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
			ck_assert_uint_eq(next_got(1).idx, want[k]);
		expect_none(1);
	}
	ck_assert_uint_eq(C.faults.f[0].hits[0], 1);
	ck_assert_uint_eq(C.faults.f[0].seen[0], 2);
	ck_assert_uint_eq(C.faults.f[1].hits[0], 1);
	ck_assert_str_eq(ctl("fault drop hop=8 eof=4-6", 0),
			 "ok #3 drop hop=8 dir=both eof=4,5,6");
	ctl_err("fault drop hop=8 eof=16");
	ctl_err("fault drop hop=8 eof=");
	ctl_err("fault drop hop=8 eof=5-4");
	ctl_err("fault drop hop=8 eof=4,");
	ctl_err("fault drop hop=8 eof=,4");
	ctl_err("fault drop hop=8 eof=a");
	ctl_err("fault drop hop=ctrl eof=4");
	ctl_err("fault withhold-credits hop=8 eof=4");
	ctl_err("fault unplug-after frames=3 eof=4");
}
END_TEST

START_TEST(t_fault_corrupt)
{
	uint8_t pkt[16], msg[64];
	size_t plen = hex2bin("00000000000000000400 20002fc967ac", pkt), m;
	const uint8_t *b;
	uint32_t len;
	struct got g;

	bring_up(0);
	ctl_ok("fault corrupt hop=8 nth=2 bit=41", 0);   /* byte 5, bit 1 */
	ctl_ok("fault corrupt hop=9 every=1 count=1", 0); /* random bit */
	for (uint32_t i = 1; i <= 3; i++)
		send_data(0, 8, i, 10);
	send_data(0, 9, 50, 10);
	send_data(0, 9, 51, 10);
	cable_core_tick(&C, 1000000);
	g = next_got(1);
	ck_assert_uint_eq(g.flags, 0);
	ck_assert_int_eq(count_bits_changed(g.payload), 0);
	g = next_got(1);
	ck_assert_uint_eq(g.idx, 2);
	ck_assert_uint_eq(g.flags, ODL_LINK_DATA_CRC_ERR);
	ck_assert_uint_eq(g.payload[5], (uint8_t)((0xa0 + 5) ^ 0x02));
	ck_assert_int_eq(count_bits_changed(g.payload), 1);
	g = next_got(1);
	ck_assert_uint_eq(g.idx, 3);
	ck_assert_uint_eq(g.flags, 0);
	/* random bit: exactly one bit of the frame differs, CRC_ERR set */
	g = next_got(1);
	ck_assert_uint_eq(g.flags, ODL_LINK_DATA_CRC_ERR);
	{
		int bits = count_bits_changed(g.payload) +
			   __builtin_popcount(g.idx ^ 50u);

		ck_assert_int_eq(bits, 1);
	}
	g = next_got(1);
	ck_assert_uint_eq(g.idx, 51);
	ck_assert_uint_eq(g.flags, 0);
	ck_assert_int_eq(R.n_corrupt, 2);
	ck_assert_uint_eq(C.faults.tot_corrupted, 2);
	ck_assert_uint_eq(C.end[0].dropped, 0); /* corrupted is delivered */

	/* hop=ctrl: a control packet arrives with a bad CRC */
	ctl_ok("fault corrupt hop=ctrl nth=1", 0);
	m = odl_build_ctrl(msg, 1, pkt, plen);
	cable_core_rx(&C, 1, msg, m, 2000000);
	cable_core_rx(&C, 1, msg, m, 2000000);
	cable_core_tick(&C, 3000000);
	ck_assert_int_eq(next_msg(0, &b, &len), ODL_LINK_CTRL);
	ck_assert_uint_eq(len, 4 + plen);
	ck_assert_uint_ne(odl_crc32c(b + 4, plen - 4), odl_get_be32(b + 4 + plen - 4));
	ck_assert_int_eq(next_msg(0, &b, &len), ODL_LINK_CTRL);
	ck_assert_mem_eq(b + 4, pkt, plen); /* nth=1: only the first */
}
END_TEST

/* tamper: the bit flips as with corrupt, but the frame arrives looking
 * intact (no CRC_ERR): what a hostile or broken peer sends
 */
START_TEST(t_fault_tamper)
{
	char js[16384];
	int per_bit[8] = { 0 };

	bring_up(0);
	ck_assert_str_eq(ctl("fault tamper hop=8 nth=2 bit=41", 0),
			 "ok #1 tamper hop=8 dir=both nth=2 bit=41");
	ck_assert_str_eq(ctl("fault tamper hop=9 dir=a2b every=1 count=40 bits=64-71", 0),
			 "ok #2 tamper hop=9 dir=a2b every=1 count=40 bits=64-71");
	ck_assert_str_eq(ctl("fault corrupt hop=10 nth=1 bits=0x20-0x20", 0),
			 "ok #3 corrupt hop=10 dir=both nth=1 bits=32-32");
	ctl_err("fault tamper hop=ctrl");
	ctl_err("fault tamper hop=0 nth=1");
	ctl_err("fault tamper bits=9-3");
	ctl_err("fault tamper bits=5");
	ctl_err("fault tamper bits=-5");
	ctl_err("fault drop bits=1-2");
	ctl_err("fault tamper us=5");
	for (uint32_t i = 1; i <= 3; i++)
		send_data(0, 8, i, 10);
	for (uint32_t i = 0; i < 41; i++)
		send_data(0, 9, 100 + i, 10);
	send_data(1, 9, 500, 10); /* b2a: not matched */
	send_data(0, 10, 7, 10);
	cable_core_tick(&C, 1000000);
	ck_assert_uint_eq(next_got(1).flags, 0);
	{
		struct got g = next_got(1);

		ck_assert_uint_eq(g.idx, 2);
		ck_assert_uint_eq(g.flags, 0); /* no CRC_ERR: looks intact */
		ck_assert_uint_eq(g.payload[5], (uint8_t)((0xa0 + 5) ^ 0x02));
		ck_assert_int_eq(count_bits_changed(g.payload), 1);
	}
	ck_assert_uint_eq(next_got(1).flags, 0);
	for (uint32_t i = 0; i < 41; i++) {
		struct got g = next_got(1);

		ck_assert_uint_eq(g.idx, 100 + i);
		ck_assert_uint_eq(g.flags, 0);
		if (i == 40) { /* count=40: the 41st is untouched */
			ck_assert_int_eq(count_bits_changed(g.payload), 0);
			continue;
		}
		/* one bit, always within byte 8 (bits 64..71) */
		ck_assert_int_eq(count_bits_changed(g.payload), 1);
		ck_assert_uint_ne(g.payload[8], (uint8_t)(0xa0 + 8));
		per_bit[__builtin_ctz((unsigned)(g.payload[8] ^ (uint8_t)(0xa0 + 8)))]++;
	}
	/* the range is drawn from, not one bit of it */
	{
		int distinct = 0;

		for (int b = 0; b < 8; b++)
			distinct += per_bit[b] > 0;
		ck_assert_int_ge(distinct, 4);
	}
	ck_assert_int_eq(count_bits_changed(next_got(0).payload), 0);
	{
		/* corrupt with a one-bit range: byte 4 bit 0, and CRC_ERR */
		struct got g = next_got(1);

		ck_assert_uint_eq(g.hop, 10);
		ck_assert_uint_eq(g.flags, ODL_LINK_DATA_CRC_ERR);
		ck_assert_uint_eq(g.payload[4], (uint8_t)((0xa0 + 4) ^ 0x01));
	}
	ck_assert_int_eq(R.n_tamper, 41);
	ck_assert_int_eq(R.n_corrupt, 1);
	ck_assert_uint_eq(C.faults.tot_tampered, 41);
	ck_assert_uint_eq(C.faults.tot_corrupted, 1);
	ck_assert_uint_eq(C.end[0].dropped, 0);
	cable_faults_json(&C.faults, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"tampered\":41"));
	ck_assert_ptr_nonnull(strstr(js, "\"kind\":\"tamper\""));
}
END_TEST

START_TEST(t_fault_withhold_credits)
{
	bring_up(0);
	ctl_ok("fault withhold-credits hop=8 count=2", 0);
	send_credit(1, 8, 4, 10);
	send_credit(1, 9, 5, 10);
	send_credit(1, 8, 6, 10);
	send_credit(1, 8, 7, 10);
	send_data(1, 8, 1, 10); /* DATA on hop 8 is not a credit */
	cable_core_tick(&C, 1000000);
	{
		struct got g = next_got(0);

		ck_assert_int_eq(g.type, ODL_LINK_CREDIT);
		ck_assert_uint_eq(g.hop, 9);
		g = next_got(0);
		ck_assert_int_eq(g.type, ODL_LINK_CREDIT);
		ck_assert_uint_eq(g.hop, 8);
		ck_assert_uint_eq(g.idx, 7);
		ck_assert_int_eq(next_got(0).type, ODL_LINK_DATA);
		expect_none(0);
	}
	ck_assert_uint_eq(C.faults.tot_withheld, 2);
	ck_assert_ptr_nonnull(strstr(ctl("fault list", 0),
		"#1 withhold-credits hop=8 dir=both count=2 hits=2 (a2b 0/0, b2a 2/2) credits=10 done"));
	ck_assert_int_eq(R.n_fault_drop, 2);
	/* withhold all (default) */
	ctl_ok("fault clear", 0);
	ctl_ok("fault withhold hop=8", 0);
	for (int i = 0; i < 20; i++)
		send_credit(i & 1, 8, 1, 2000000);
	cable_core_tick(&C, 3000000);
	expect_none(0);
	expect_none(1);
	ck_assert_uint_eq(C.faults.f[0].credits, 20);
	ck_assert_uint_eq(C.faults.tot_withheld, 22);
	/* a credit sync (0 credits) grants nothing: never withheld */
	send_credit(1, 8, 0, 4000000);
	cable_core_tick(&C, 5000000);
	{
		struct got g = next_got(0);

		ck_assert_int_eq(g.type, ODL_LINK_CREDIT);
		ck_assert_uint_eq(g.hop, 8);
		ck_assert_uint_eq(g.idx, 0);
	}
	ck_assert_uint_eq(C.faults.tot_withheld, 22);
}
END_TEST

START_TEST(t_fault_hold)
{
	uint64_t t0 = 1000;

	bring_up(0);
	ck_assert_str_eq(ctl("fault delay hop=8 dir=a2b nth=2 us=hold", 0),
			 "ok #1 delay hop=8 dir=a2b nth=2 us=hold");
	ck_assert_str_eq(ctl("fault release", t0), "ok released 0");
	send_data(0, 8, 1, t0);
	send_data(0, 8, 2, t0);
	send_data(0, 8, 3, t0);
	/* the held frame has no deadline: the others overtake it */
	cable_core_tick(&C, t0 + 1000000);
	ck_assert_uint_eq(next_got(1).idx, 1);
	ck_assert_uint_eq(next_got(1).idx, 3);
	expect_none(1);
	ck_assert_uint_eq(cable_core_next_deadline(&C), UINT64_MAX);
	cable_core_tick(&C, UINT64_MAX - 1);
	expect_none(1);
	ck_assert_uint_eq(C.end[0].delayed, 1);
	ck_assert_str_eq(ctl("fault release", t0 + 2000000), "ok released 1");
	ck_assert_uint_le(cable_core_next_deadline(&C), t0 + 2000000);
	cable_core_tick(&C, t0 + 2000000);
	ck_assert_uint_eq(next_got(1).idx, 2);
	expect_none(1);
	ck_assert_uint_eq(C.end[0].delayed, 0);
	ck_assert_uint_eq(C.end[0].flight_bytes, 0);
	ck_assert_str_eq(ctl("fault release", t0 + 2000001), "ok released 0");
	/* a timed delay added to a hold is still a hold; clear releases it */
	ctl_ok("fault delay hop=8 dir=a2b us=50", t0);
	ctl_ok("fault delay hop=8 dir=a2b us=hold", t0);
	send_data(0, 8, 4, t0 + 3000000);
	cable_core_tick(&C, t0 + 4000000);
	expect_none(1);
	ctl_ok("fault clear", t0 + 4000000);
	cable_core_tick(&C, t0 + 4000000);
	ck_assert_uint_eq(next_got(1).idx, 4);
	expect_none(1);
	/* an unplug discards a held frame like any in flight */
	ctl_ok("fault delay hop=8 us=hold", t0);
	send_data(0, 8, 5, t0 + 5000000);
	ctl_ok("unplug", t0 + 5000001);
	ck_assert_uint_eq(C.end[0].delayed, 0);
	ck_assert_str_eq(ctl("fault release", t0 + 5000002), "ok released 0");
}
END_TEST

START_TEST(t_fault_delay)
{
	uint64_t t0 = 1000;

	bring_up(0);
	ctl_ok("fault delay hop=8 us=100", 0);
	send_data(0, 8, 1, t0);
	send_data(0, 9, 2, t0);
	send_data(0, 8, 3, t0);
	send_credit(0, 8, 1, t0);
	/* the other hop and the credit overtake the delayed frames */
	cable_core_tick(&C, t0 + 1000);
	ck_assert_uint_eq(next_got(1).idx, 2);
	ck_assert_int_eq(next_got(1).type, ODL_LINK_CREDIT);
	expect_none(1);
	ck_assert_uint_ge(cable_core_next_deadline(&C), t0 + 100000);
	ck_assert_uint_le(cable_core_next_deadline(&C), t0 + 100100);
	cable_core_tick(&C, t0 + 99999);
	expect_none(1);
	cable_core_tick(&C, t0 + 100100);
	/* delayed frames keep their order */
	ck_assert_uint_eq(next_got(1).idx, 1);
	ck_assert_uint_eq(next_got(1).idx, 3);
	expect_none(1);
	ck_assert_uint_eq(cable_core_next_deadline(&C), UINT64_MAX);
	ck_assert_uint_eq(C.end[0].delayed, 0);
	ck_assert_uint_eq(C.end[0].flight_bytes, 0);
	ck_assert_int_eq(R.n_delay, 2);
	ck_assert_uint_eq(C.faults.tot_delayed, 2);
	/* an unplug discards delayed frames as well */
	send_data(0, 8, 4, t0 + 200000);
	ctl_ok("unplug", t0 + 200001);
	ck_assert_uint_eq(C.end[0].delayed, 0);
	ck_assert_uint_eq(cable_core_next_deadline(&C), UINT64_MAX);
	ck_assert_int_eq(R.n_flight, 1);
}
END_TEST

START_TEST(t_fault_unplug_after)
{
	struct cable_cfg cfg;
	char js[16384];

	cable_core_fini(&C);
	cable_cfg_defaults(&cfg);
	cfg.latency_ns = 1000000; /* 1 ms: frames are on the wire together */
	core_setup_cfg(&cfg);
	bring_up(0);
	ctl_ok("fault unplug-after frames=3 hop=8 replug_ms=5", 0);
	for (uint32_t i = 1; i <= 6; i++)
		send_data(0, 8, i, 100);
	send_data(0, 9, 99, 100); /* other hops do not count */
	cable_core_tick(&C, 2000000);
	/* exactly three frames, then the link goes down */
	ck_assert_uint_eq(next_got(1).idx, 1);
	ck_assert_uint_eq(next_got(1).idx, 2);
	ck_assert_uint_eq(next_got(1).idx, 3);
	ck_assert_uint_eq(expect_state(1).up, 0);
	expect_none(1);
	ck_assert_uint_eq(expect_state(0).up, 0);
	ck_assert(!C.plugged);
	ck_assert_uint_eq(C.end[0].dropped, 4); /* 4, 5, 6, hop 9: in flight */
	ck_assert_int_eq(R.n_flight, 4);
	cable_core_status_json(&C, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"unplugs\":1,"));
	ck_assert_ptr_nonnull(strstr(js, "\"plugged\":false"));
	/* replug 5 ms later */
	ck_assert_uint_eq(cable_core_next_deadline(&C), 2000000 + 5000000);
	cable_core_tick(&C, 6999999);
	expect_none(0);
	cable_core_tick(&C, 7000000);
	ck_assert_uint_eq(expect_state(1).up, 1);
	ck_assert_uint_eq(expect_state(0).up, 1);
	ck_assert(C.plugged);
	ck_assert_uint_eq(C.plug_count, 1);
	/* fired once only */
	for (uint32_t i = 1; i <= 5; i++)
		send_data(0, 8, i, 8000000);
	cable_core_tick(&C, 20000000);
	for (uint32_t i = 1; i <= 5; i++)
		ck_assert_uint_eq(next_got(1).idx, i);
	/* no replug: a manual unplug also cancels a pending replug */
	ctl_ok("fault unplug-after frames=1", 0);
	send_data(1, 8, 1, 30000000);
	cable_core_tick(&C, 40000000);
	ck_assert_uint_eq(next_got(0).idx, 1);
	ck_assert_uint_eq(expect_state(0).up, 0);
	ck_assert_uint_eq(cable_core_next_deadline(&C), UINT64_MAX);
	ck_assert_uint_eq(C.faults.tot_unplugs, 2);
}
END_TEST

START_TEST(t_fault_retrain)
{
	struct odl_link_state st;
	char js[16384];

	bring_up(0);
	/* bounce: down (in-flight lost), then up at the new rate */
	send_data(0, 8, 1, 10);
	ck_assert_str_eq(ctl("fault retrain lanes=1 gbps=10", 10), "ok link 1 x 10 Gb/s");
	for (int end = 0; end < 2; end++) {
		st = expect_state(end);
		ck_assert_uint_eq(st.up, 0);
		st = expect_state(end);
		ck_assert_uint_eq(st.up, 1);
		ck_assert_uint_eq(st.lanes, 1);
		ck_assert_uint_eq(st.lane_gbps, 10);
		ck_assert_uint_eq(st.peer_uid, end ? 0xa : 0xb);
		expect_none(end);
	}
	ck_assert_uint_eq(C.end[0].dropped, 1);
	ck_assert_uint_eq(C.link_up_count, 2);
	/* the serializer runs at the new rate: 1 x 10 Gb/s = 10 bits/ns */
	send_data(0, 8, 2, 1000);
	ck_assert_uint_eq(C.end[0].wire_free_at, 1000 + 32 * 8 / 10);
	cable_core_tick(&C, 2000);
	ck_assert_uint_eq(next_got(1).idx, 2);
	cable_core_status_json(&C, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"lanes\":1,\"lane_gbps\":10,"));
	ck_assert_ptr_nonnull(strstr(js, "\"retrains\":1,\"retrain\":{\"lanes\":1,\"lane_gbps\":10}"));

	/* live: one STATE with the changed rate, nothing lost */
	send_data(0, 8, 3, 3000);
	ck_assert_str_eq(ctl("fault retrain lanes=2 gbps=20 mode=live", 3000),
			 "ok link 2 x 20 Gb/s");
	for (int end = 0; end < 2; end++) {
		st = expect_state(end);
		ck_assert_uint_eq(st.up, 1);
		ck_assert_uint_eq(st.lanes, 2);
		ck_assert_uint_eq(st.lane_gbps, 20);
		expect_none(end);
	}
	cable_core_tick(&C, 10000);
	ck_assert_uint_eq(next_got(1).idx, 3);
	ck_assert_uint_eq(C.link_up_count, 2);

	/* bounce with a down time */
	ck_assert_str_eq(ctl("fault retrain off down_us=50", 20000),
			 "ok retraining (down for 50 us)");
	ck_assert_uint_eq(expect_state(0).up, 0);
	ck_assert_uint_eq(expect_state(1).up, 0);
	expect_none(0);
	send_data(0, 8, 4, 30000); /* link down: dropped */
	ck_assert_uint_eq(C.end[0].dropped, 2);
	ck_assert_uint_eq(cable_core_next_deadline(&C), 70000);
	cable_core_tick(&C, 69999);
	expect_none(0);
	cable_core_tick(&C, 70000);
	st = expect_state(0);
	ck_assert_uint_eq(st.up, 1);
	ck_assert_uint_eq(st.lanes, 2);
	ck_assert_uint_eq(st.lane_gbps, 40); /* the cap is gone */
	ck_assert_uint_eq(expect_state(1).up, 1);
	ck_assert_uint_eq(C.faults.tot_retrains, 3);

	/* while unplugged: the cap applies at the next training */
	ctl_ok("unplug", 80000);
	(void)expect_state(0);
	(void)expect_state(1);
	ck_assert_str_eq(ctl("fault retrain lanes=1 gbps=20", 80000),
			 "ok link down; applies at the next training");
	ctl_ok("plug", 90000);
	st = expect_state(0);
	ck_assert_uint_eq(st.up, 1);
	ck_assert_uint_eq(st.lanes, 1);
	ck_assert_uint_eq(st.lane_gbps, 20);
	ck_assert_uint_eq(C.faults.tot_retrains, 3);
	ck_assert_ptr_nonnull(strstr(ctl("fault list", 90000), "retrain=1x20"));
	/* fault clear drops the cap; it goes at the next training */
	ctl_ok("fault clear", 90000);
	ck_assert_uint_eq(C.lanes, 1);
	ctl_ok("unplug", 91000);
	ctl_ok("plug", 92000);
	ck_assert_uint_eq(C.lanes, 2);
	ck_assert_uint_eq(C.lane_gbps, 40);
}
END_TEST

/* One run of mixed random faults; records what b saw. */
static void random_run(uint64_t seed, bool interleave, char *pattern,
		       size_t n)
{
	char cmd[64];
	size_t k = 0;

	cable_core_fini(&C);
	core_setup();
	bring_up(0);
	snprintf(cmd, sizeof(cmd), "fault seed %llu", (unsigned long long)seed);
	ctl_ok(cmd, 0);
	ctl_ok("fault drop hop=8 ppm=250000", 0);
	ctl_ok("fault corrupt hop=8 ppm=200000", 0);
	for (uint32_t i = 0; i < 200; i++) {
		send_data(0, 8, i, 10 + i);
		/* b->a traffic on the same hop, interleaved differently */
		if (interleave || i % 7 == 0)
			send_data(1, 8, 1000 + i, 10 + i);
		if (i % 13 == 0)
			cable_core_tick(&C, 10 + i);
	}
	cable_core_tick(&C, 100000000);
	for (;;) {
		struct got g = next_got(1);

		if (g.type < 0)
			break;
		/* index of the frame and its corrupted bit, if any */
		k += (size_t)snprintf(pattern + k, n - k, "%u%s,", g.idx & 0xff,
				      g.flags ? "c" : "");
		if (g.flags) {
			for (int i = 4; i < 16; i++)
				if (g.payload[i] != (uint8_t)(0xa0 + i))
					k += (size_t)snprintf(pattern + k, n - k,
							      "%d:%02x,", i,
							      g.payload[i]);
		}
		ck_assert_uint_lt(k, n);
	}
}

START_TEST(t_fault_deterministic)
{
	static char p1[16384], p2[16384], p3[16384], p4[16384];
	uint64_t d1, c1;

	random_run(42, false, p1, sizeof(p1));
	d1 = C.faults.tot_dropped;
	c1 = C.faults.tot_corrupted;
	/* plausible rates for 200 frames at 25 % and 20 % (of the rest) */
	ck_assert_uint_gt(d1, 50 * 200 / 400);
	ck_assert_uint_gt(c1, 10);
	random_run(42, false, p2, sizeof(p2));
	ck_assert_str_eq(p1, p2);
	ck_assert_uint_eq(C.faults.tot_dropped, d1);
	/* the other direction's traffic does not change a->b's pattern */
	random_run(42, true, p3, sizeof(p3));
	ck_assert_str_eq(p1, p3);
	/* another seed, another pattern */
	random_run(43, false, p4, sizeof(p4));
	ck_assert_str_ne(p1, p4);
}
END_TEST

START_TEST(t_fault_unplug_discards_queued)
{
	struct cable_cfg cfg;

	cable_core_fini(&C);
	cable_cfg_defaults(&cfg);
	cfg.latency_ns = 1000000;
	core_setup_cfg(&cfg);
	bring_up(0);
	for (uint32_t i = 0; i < 10; i++) {
		send_data(0, 8, i, 100);
		send_data(1, 8, i, 100);
	}
	ck_assert_uint_eq(C.end[0].flight_bytes, 10 * 32);
	ctl_ok("unplug", 200);
	ck_assert_uint_eq(C.end[0].flight_bytes, 0);
	ck_assert_uint_eq(C.end[1].flight_bytes, 0);
	ck_assert_uint_eq(C.end[0].dropped, 10);
	ck_assert_uint_eq(C.end[1].dropped, 10);
	ck_assert_int_eq(R.n_flight, 20);
	cable_core_tick(&C, 5000000);
	ck_assert_uint_eq(expect_state(0).up, 0);
	expect_none(0);
}
END_TEST

START_TEST(t_fault_capture_notes)
{
	static const char *const notes[] = {
		CABLE_NOTE_DROP_DOWN, CABLE_NOTE_DROP_FULL, CABLE_NOTE_DROP_FLIGHT,
		CABLE_NOTE_DROP_FAULT, CABLE_NOTE_FAULT_CORRUPT,
		CABLE_NOTE_FAULT_DELAY, CABLE_NOTE_FAULT_CORRUPT_DELAY,
	};

	for (size_t i = 0; i < sizeof(notes) / sizeof(notes[0]); i++) {
		unsigned fl = odl_cap_flags_from_note(notes[i]);

		ck_assert_uint_ne(fl, 0);
		ck_assert_str_eq(odl_cap_note_from_flags(fl), notes[i]);
	}
	ck_assert_uint_eq(odl_cap_flags_from_note(NULL), 0);
	ck_assert_ptr_null(odl_cap_note_from_flags(0));
}
END_TEST

static Suite *link_suite(void)
{
	Suite *s = suite_create("link");
	TCase *tc;

	tc = tcase_create("decode");
	tcase_add_test(tc, t_decode_read_example);
	tcase_add_test(tc, t_decode_write_data_badcrc);
	tcase_add_test(tc, t_decode_route_high_and_cm);
	tcase_add_test(tc, t_decode_error_event);
	tcase_add_test(tc, t_decode_xdomain);
	tcase_add_test(tc, t_decode_pdf_names);
	tcase_add_test(tc, t_decode_messages);
	tcase_add_test(tc, t_trace_line);
	tcase_add_test(tc, t_crc32c);
	suite_add_tcase(s, tc);

	tc = tcase_create("framing");
	tcase_add_test(tc, t_validate);
	tcase_add_test(tc, t_hello_roundtrip);
	tcase_add_test(tc, t_capture_roundtrip);
	suite_add_tcase(s, tc);

	tc = tcase_create("core");
	tcase_add_checked_fixture(tc, core_setup, core_teardown);
	tcase_add_test(tc, t_core_hello_state);
	tcase_add_test(tc, t_core_cable_limits);
	tcase_add_test(tc, t_core_start_unplugged);
	tcase_add_test(tc, t_core_forward_while_up);
	tcase_add_test(tc, t_core_order_preserved);
	tcase_add_test(tc, t_core_drop_while_down);
	tcase_add_test(tc, t_core_unplug_discards_in_flight);
	tcase_add_test(tc, t_core_peer_disconnect);
	tcase_add_test(tc, t_core_bad_magic_closes);
	tcase_add_test(tc, t_core_oversized_closes);
	tcase_add_test(tc, t_core_unknown_and_early_close);
	tcase_add_test(tc, t_core_partial_reads);
	tcase_add_test(tc, t_core_rate_limit);
	tcase_add_test(tc, t_core_fractional_rate);
	tcase_add_test(tc, t_core_queue_full_drops_data_only);
	tcase_add_test(tc, t_core_status_json);
	suite_add_tcase(s, tc);

	tc = tcase_create("fault");
	tcase_add_checked_fixture(tc, core_setup, core_teardown);
	tcase_add_test(tc, t_fault_syntax);
	tcase_add_test(tc, t_fault_drop_nth);
	tcase_add_test(tc, t_fault_drop_every_dir_count);
	tcase_add_test(tc, t_fault_drop_from_count);
	tcase_add_test(tc, t_fault_drop_eof);
	tcase_add_test(tc, t_fault_corrupt);
	tcase_add_test(tc, t_fault_tamper);
	tcase_add_test(tc, t_fault_withhold_credits);
	tcase_add_test(tc, t_fault_delay);
	tcase_add_test(tc, t_fault_hold);
	tcase_add_test(tc, t_fault_unplug_after);
	tcase_add_test(tc, t_fault_retrain);
	tcase_add_test(tc, t_fault_deterministic);
	tcase_add_test(tc, t_fault_unplug_discards_queued);
	tcase_add_test(tc, t_fault_capture_notes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(link_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
