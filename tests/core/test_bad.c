// SPDX-License-Identifier: MIT
/* Bad guest programming, hostile cable input, and a fixed-seed fuzz loop. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "nhi_priv.h"

#define FRAME_MASKS ((1u << 1) << 16 | (1u << 2))
#define TXD (MEM_BASE + 0x40000)
#define RXD (MEM_BASE + 0x41000)

static const struct nhi_stats *st(void)
{
	return nhi_get_stats(H.n);
}

static void bad_setup(void)
{
	h_setup();
	h_ctl_start();
	h_configure_router();
	h_clear_records();
}

/* ---- guest ---- */

START_TEST(rings_beyond_hop_count)
{
	uint64_t ge = st()->guest_errors;

	h_wr(R_TX(12), 0x1000);
	h_wr(R_TX(15) + 0xc, 10);
	h_wr(R_RX(12) + 8, 1);
	h_wr(R_RX(2047) + 4, 1);
	h_wr(R_TXOPT(12), F_ENABLE);
	h_wr(R_RXOPT(15), F_ENABLE);
	ck_assert_uint_eq(st()->guest_errors, ge + 6);
	ck_assert_uint_eq(h_logs_at(NHI_LOG_ERROR), 6);
	ck_assert_uint_eq(h_rd(R_TX(12)), 0);
	ck_assert_uint_eq(h_rd(R_TX(15) + 0xc), 0);
	ck_assert_uint_eq(h_rd(R_TXOPT(12)), 0);
	ck_assert_uint_eq(h_rd(R_RXOPT(15)), 0);
	/* nothing else moved */
	ck_assert_uint_eq(h_rd(R_TX(0)), (uint32_t)H.ctl_tx_desc);
	ck_assert_uint_eq(h_rd(R_ENABLE), 1u | 1u << 12);
	ck_assert_uint_eq(H.dma_refused, 0);
	{
		uint32_t v;

		ck_assert(h_cfg_read(2, 0, 0, 1, &v));
	}
}
END_TEST

START_TEST(misaligned_base)
{
	uint64_t ge = st()->guest_errors, r;

	h_tx_start(1, TXD + 8, 4, 0);
	ck_assert_uint_eq(st()->guest_errors, ge + 1);
	ck_assert_uint_eq(h_rd(R_TXOPT(1)) & F_ENABLE, 0);
	r = H.dma_reads;
	h_wr(R_TX(1) + 8, 1u << 16);
	ck_assert_uint_eq(H.dma_reads, r);
	h_rx_start(1, RXD + 4, 4, 0, 0, FRAME_MASKS);
	ck_assert_uint_eq(st()->guest_errors, ge + 2);
	ck_assert_uint_eq(h_rd(R_RXOPT(1)) & F_ENABLE, 0);
	ck_assert(h_log_has("aligned"));
}
END_TEST

START_TEST(size_zero_enable)
{
	uint64_t ge = st()->guest_errors, r;

	h_tx_start(1, TXD, 0, 0);
	ck_assert_uint_eq(st()->guest_errors, ge + 1);
	ck_assert_uint_eq(h_rd(R_TXOPT(1)) & F_ENABLE, 0);
	r = H.dma_reads;
	h_wr(R_TX(1) + 8, 1u << 16);
	ck_assert_uint_eq(H.dma_reads, r);
	/* enabling properly afterwards works */
	h_wr(R_TX(1) + 0xc, 4);
	h_wr(R_TXOPT(1), F_ENABLE);
	ck_assert_uint_eq(h_rd(R_TXOPT(1)) & F_ENABLE, F_ENABLE);
	ck_assert_uint_eq(h_rd(R_TX(1) + 8), 0);
}
END_TEST

START_TEST(size_change_while_enabled)
{
	uint64_t ge = st()->guest_errors;

	h_tx_start(1, TXD, 4, 0);
	h_wr(R_TX(1) + 0xc, 100);
	ck_assert_uint_eq(st()->guest_errors, ge + 1);
	ck_assert_uint_eq(h_rd(R_TX(1) + 0xc), 4);
	h_rx_start(1, RXD, 4, 0, 0, FRAME_MASKS);
	h_wr(R_RX(1) + 0xc, 0x01000010);
	ck_assert_uint_eq(st()->guest_errors, ge + 2);
	ck_assert_uint_eq(h_rd(R_RX(1) + 0xc), 4);
	/* stop's zero write after disable is fine */
	h_ring_stop(true, 1);
	ck_assert_uint_eq(st()->guest_errors, ge + 2);
	ck_assert_uint_eq(h_rd(R_RX(1) + 0xc), 0);
}
END_TEST

START_TEST(unknown_offsets_harmless)
{
	static const uint32_t offs[] = {
		0x10000, 0x19a00, 0x20000, 0x30000, 0x37810, 0x38210, 0x38c80,
		0x39000, 0x39868, 0x3fffc, 0x40000, 0xfffffffc,
	};
	uint32_t en = h_rd(R_ENABLE), misc = h_rd(R_DMA_MISC);

	for (unsigned int i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		h_wr(offs[i], 0xffffffff);
		ck_assert_uint_eq(h_rd(offs[i]), 0);
	}
	ck_assert_uint_eq(h_rd(R_ENABLE), en);
	ck_assert_uint_eq(h_rd(R_DMA_MISC), misc);
	ck_assert_uint_eq(h_rd(R_HOP_COUNT), 12);
	/* read-only registers */
	h_wr(R_HOP_COUNT, 0);
	ck_assert_uint_eq(h_rd(R_HOP_COUNT), 12);
	h_wr(R_FW_STS, 0xffffffff);
	ck_assert_uint_eq(h_rd(R_FW_STS), 0);
	h_wr(R_OUTMAIL_CMD, 0xffffffff);
	ck_assert_uint_eq(h_rd(R_OUTMAIL_CMD), 0);
	/* sub-dword offsets map to their dword */
	h_wr(R_ENABLE + 1, 0x3);
	ck_assert_uint_eq(h_rd(R_ENABLE + 2), 0x3);
	ck_assert_uint_eq(H.dma_refused, 0);
}
END_TEST

START_TEST(mailbox_fails_fast)
{
	/* no firmware CM: a command completes at once with the error bit */
	h_wr(R_INMAIL_DATA, 0x1234);
	h_wr(R_INMAIL_CMD, (1u << 31) | 0x07);
	ck_assert_uint_eq(h_rd(R_INMAIL_CMD), (1u << 30) | 0x07);
	ck_assert_uint_eq(h_rd(R_FW_STS), 0);
}
END_TEST

/* ---- cable ---- */

static void raw(const void *b, size_t n)
{
	nhi_cable_rx(H.n, b, n);
}

START_TEST(cable_oversized_header)
{
	struct odl_link_hdr h = { .len = ODL_LINK_MAX_BODY + 1,
				  .type = ODL_LINK_DATA };
	struct odl_link_state s = { .up = 1, .lanes = 1, .lane_gbps = 20 };

	raw(&h, sizeof(h));
	ck_assert_uint_eq(st()->cable_errors, 1);
	ck_assert_uint_eq(h_logs_at(NHI_LOG_ERROR), 1);
	/* the stream is unusable until reconnect: a valid STATE is ignored */
	h_cable(ODL_LINK_STATE, &s, sizeof(s));
	ck_assert_uint_eq((h_cfg_read1(1, 1, 9) >> 26) & 0xf, 7);
	ck_assert_uint_eq(st()->cable_errors, 1);
	nhi_cable_connected(H.n, false);
	nhi_cable_connected(H.n, true);
	h_cable(ODL_LINK_STATE, &s, sizeof(s));
	ck_assert_uint_eq((h_cfg_read1(1, 1, 9) >> 26) & 0xf, 2);
	/* 0xffffffff length too */
	h.len = 0xffffffffu;
	raw(&h, sizeof(h));
	ck_assert_uint_eq(st()->cable_errors, 2);
}
END_TEST

START_TEST(cable_unknown_and_truncated)
{
	uint8_t body[16] = { 0 };
	unsigned int e = 0;

	h_cable(99, body, 4);
	ck_assert_uint_eq(st()->cable_errors, ++e);
	h_cable(0, body, 0);
	ck_assert_uint_eq(st()->cable_errors, ++e);
	h_cable(ODL_LINK_HELLO, body, 16); /* models do not receive HELLO */
	ck_assert_uint_eq(st()->cable_errors, ++e);
	h_cable(ODL_LINK_STATE, body, 4);
	ck_assert_uint_eq(st()->cable_errors, ++e);
	h_cable(ODL_LINK_CREDIT, body, 2);
	ck_assert_uint_eq(st()->cable_errors, ++e);
	h_cable(ODL_LINK_LANE, body, 2);
	ck_assert_uint_eq(st()->cable_errors, ++e);
	h_cable(ODL_LINK_DATA, body, 4);   /* shorter than the data header */
	ck_assert_uint_eq(st()->cable_errors, ++e);
	h_cable(ODL_LINK_DATA, body, 8);   /* no payload */
	ck_assert_uint_eq(st()->cable_errors, ++e);
	h_cable(ODL_LINK_CTRL, body, 0);
	ck_assert_uint_eq(st()->cable_errors, ++e);
	{
		static uint8_t big[8 + 4097];

		h_cable(ODL_LINK_DATA, big, sizeof(big)); /* payload > 4096 */
		ck_assert_uint_eq(st()->cable_errors, ++e);
	}
	{
		struct odl_link_credit c = { .hopid = 2048, .credits = 1 };

		h_cable(ODL_LINK_CREDIT, &c, sizeof(c));
		ck_assert_uint_eq(st()->cable_errors, ++e);
	}
	ck_assert_uint_eq(h_logs_at(NHI_LOG_ERROR), e);
	ck_assert_uint_eq(H.nmsgs, 0);
	ck_assert_uint_eq(h_ctl_pending(), 0);
	/* the stream is still in sync: a good message works */
	h_link_up(1);
	ck_assert_uint_eq((h_cfg_read1(1, 1, 9) >> 26) & 0xf, 2);
}
END_TEST

START_TEST(cable_state_bad_lanes)
{
	struct odl_link_state s = { .up = 1, .lanes = 0, .lane_gbps = 20 };

	h_cable(ODL_LINK_STATE, &s, sizeof(s));
	ck_assert_uint_eq(st()->cable_errors, 1);
	ck_assert_uint_eq((h_cfg_read1(1, 1, 9) >> 26) & 0xf, 7);
	s.lanes = 3;
	h_cable(ODL_LINK_STATE, &s, sizeof(s));
	ck_assert_uint_eq(st()->cable_errors, 2);
	ck_assert_uint_eq((h_cfg_read1(1, 1, 9) >> 26) & 0xf, 7);
	ck_assert_uint_eq(h_ctl_pending(), 0);
	/* down with lanes 0 is fine */
	s.up = 0;
	h_cable(ODL_LINK_STATE, &s, sizeof(s));
	ck_assert_uint_eq(st()->cable_errors, 2);
}
END_TEST

START_TEST(cable_split_and_joined)
{
	struct odl_link_state s = { .up = 1, .lanes = 1, .lane_gbps = 20 };
	struct odl_link_lane l = { 3, 1, 0, 0 };
	uint8_t buf[64];
	size_t n = 0;
	struct odl_link_hdr h = { .len = sizeof(s), .type = ODL_LINK_STATE };

	memcpy(buf + n, &h, sizeof(h));
	n += sizeof(h);
	memcpy(buf + n, &s, sizeof(s));
	n += sizeof(s);
	h.len = sizeof(l);
	h.type = ODL_LINK_LANE;
	memcpy(buf + n, &h, sizeof(h));
	n += sizeof(h);
	memcpy(buf + n, &l, sizeof(l));
	n += sizeof(l);
	/* byte by byte */
	for (size_t i = 0; i < n; i++)
		raw(buf + i, 1);
	ck_assert_uint_eq((h_cfg_read1(1, 1, 9) >> 26) & 0xf, 2);
	ck_assert_uint_eq(st()->cable_errors, 0);
	/* both messages in one chunk, with a 3-byte tail of the next header */
	s.up = 0;
	memcpy(buf + sizeof(h), &s, sizeof(s));
	memcpy(buf + n, buf, 3);
	raw(buf, n + 3);
	ck_assert_uint_eq((h_cfg_read1(1, 1, 9) >> 26) & 0xf, 7);
	raw(buf + 3, sizeof(h) - 3);       /* rest of that STATE header */
	s.up = 1;
	raw(&s, sizeof(s));
	ck_assert_uint_eq((h_cfg_read1(1, 1, 9) >> 26) & 0xf, 2);
	ck_assert_uint_eq(st()->cable_errors, 0);
}
END_TEST

START_TEST(reconnect_drops_partial)
{
	struct odl_link_hdr h = { .len = 16, .type = ODL_LINK_STATE };

	raw(&h, sizeof(h));
	raw("\x01\x01", 2); /* partial body */
	nhi_cable_connected(H.n, false);
	nhi_cable_connected(H.n, true);
	h_link_up(1);
	ck_assert_uint_eq((h_cfg_read1(1, 1, 9) >> 26) & 0xf, 2);
	ck_assert_uint_eq(st()->cable_errors, 0);
}
END_TEST

START_TEST(invalid_config_rejected)
{
	struct nhi_config cfg;
	struct nhi_host_ops ops = H.ops;
	char err[128];

	memset(&cfg, 0, sizeof(cfg));
	h_default_profile(&cfg.profile);
	cfg.uid = 0;
	err[0] = 0;
	ck_assert_ptr_null(nhi_new(&cfg, &ops, NULL, err, sizeof(err)));
	ck_assert(strstr(err, "uid") != NULL);
	cfg.uid = 1;
	cfg.profile.hop_count = 0;
	ck_assert_ptr_null(nhi_new(&cfg, &ops, NULL, err, sizeof(err)));
	ck_assert(strstr(err, "hop_count") != NULL);
	cfg.profile.hop_count = 12;
	ops.dma_read = NULL;
	ck_assert_ptr_null(nhi_new(&cfg, &ops, NULL, err, sizeof(err)));
	ck_assert_ptr_null(nhi_new(NULL, &H.ops, NULL, err, sizeof(err)));
	nhi_free(NULL);
}
END_TEST

START_TEST(minimal_ops_work)
{
	/* only DMA ops: no log/msix/timer/cable: nothing crashes */
	struct nhi_host_ops ops;
	struct nhi_config cfg;
	struct nhi *n, *saved = H.n;
	char err[128];

	memset(&ops, 0, sizeof(ops));
	ops.dma_read = H.ops.dma_read;
	ops.dma_write = H.ops.dma_write;
	memset(&cfg, 0, sizeof(cfg));
	h_default_profile(&cfg.profile);
	cfg.uid = 7;
	cfg.trace = true;
	n = nhi_new(&cfg, &ops, NULL, err, sizeof(err));
	ck_assert_ptr_nonnull(n);
	H.n = n;
	nhi_cable_connected(n, true);
	h_ctl_start();
	h_configure_router();
	h_link_up(1);
	h_wr(R_TX(12), 1);
	h_advance(2000000000LL);
	nhi_timer_fire(n, NHI_TIMER_HOTPLUG);
	nhi_timer_fire(n, 5);
	ck_assert_uint_eq(h_cfg_read1(2, 0, 7), 7);
	nhi_free(n);
	H.n = saved;
}
END_TEST

START_TEST(trace_logging)
{
	nhi_set_trace(H.n, true);
	h_clear_records();
	(void)h_rd(R_HOP_COUNT);
	ck_assert_uint_ge(h_logs_at(NHI_LOG_TRACE), 1);
	ck_assert(h_log_has("0x39640"));
	nhi_set_trace(H.n, false);
	h_clear_records();
	(void)h_rd(R_HOP_COUNT);
	ck_assert_uint_eq(H.nlogs, 0);
}
END_TEST

/* ---- fuzz ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

static uint32_t rnd_value(uint32_t reg)
{
	uint32_t r = (uint32_t)rnd();

	switch (rnd() % 6) {
	case 0:
		return r;
	case 1:
		return r & 0x1f;
	case 2:
		return (reg & 0xf) == 0 ? (uint32_t)(MEM_BASE + (r & 0xffff0)) :
					   (r & 0xf) << 16 | (r & 0xf);
	case 3:
		return (r & 1 ? F_ENABLE : 0) | (r & 2 ? F_RAW : 0) |
		       (r & 4 ? F_E2E : 0) | ((r >> 8) & 0xf) << 12;
	case 4:
		return (reg & 0xf) == 4 ? 1 : (r & 0x7) << 16 | (r & 0x7);
	default:
		return 0;
	}
}

static uint32_t rnd_offset(void)
{
	static const uint32_t fixed[] = {
		R_STATUS, R_STATUS + 4, R_STATUS_CLR, R_STATUS_CLR + 4,
		R_ENABLE, R_ENABLE + 4, R_MASK_CLR, R_MASK_CLR + 4, R_IVR,
		R_IVR + 4, R_IVR + 8, R_IVR + 12, R_DMA_MISC, R_HOP_COUNT,
		R_INMAIL_CMD, R_THROTTLE,
	};
	unsigned int ring = (unsigned int)(rnd() % 17);
	unsigned int reg = (unsigned int)(rnd() % 4) * 4;

	switch (rnd() % 8) {
	case 0:
	case 1:
		return R_TX(ring) + reg;
	case 2:
	case 3:
		return R_RX(ring) + reg;
	case 4:
		return R_TXOPT(ring) + (reg & 4);
	case 5:
		return R_RXOPT(ring) + (reg & 4);
	case 6:
		return fixed[rnd() % (sizeof(fixed) / sizeof(fixed[0]))];
	default:
		return (uint32_t)(rnd() % NHI_BAR0_SIZE) & ~3u;
	}
}

static void fuzz_cable(void)
{
	uint8_t buf[256];
	size_t n = rnd() % 64;

	if (rnd() % 3 == 0) {
		/* raw noise */
		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)rnd();
		raw(buf, n);
		return;
	}
	/* a framed message of a random type with a random body */
	{
		struct odl_link_hdr h;
		uint16_t type = (uint16_t)(rnd() % 8);

		h.len = (uint32_t)(rnd() % 48);
		h.type = type;
		h.flags = 0;
		memcpy(buf, &h, sizeof(h));
		for (size_t i = 0; i < h.len; i++)
			buf[sizeof(h) + i] = (uint8_t)rnd();
		if (type == ODL_LINK_DATA && h.len >= 2)
			buf[sizeof(h)] = (uint8_t)(rnd() % 24); /* plausible hop */
		if (type == ODL_LINK_STATE && h.len >= 2) {
			buf[sizeof(h)] &= 1;
			buf[sizeof(h) + 1] = (uint8_t)(rnd() % 3);
		}
		raw(buf, sizeof(h) + h.len);
	}
}

static void fuzz_ctl(void)
{
	uint32_t dw[64];
	uint8_t wire[260];
	unsigned int ndw = 2 + (unsigned int)(rnd() % 8);
	uint8_t pdf = (uint8_t)(rnd() % 14);
	size_t len;

	dw[0] = rnd() % 4 ? 0 : (uint32_t)rnd();
	dw[1] = rnd() % 4 ? 0 : (uint32_t)(rnd() % 4);
	dw[2] = (uint32_t)rnd();
	if (rnd() % 2)
		dw[2] &= 0x1f00000fu | 0x3f << 13; /* small offsets */
	for (unsigned int i = 3; i < ndw; i++)
		dw[i] = (uint32_t)rnd();
	len = h_mkpkt(wire, dw, ndw);
	if (rnd() % 16 == 0)
		wire[rnd() % len] ^= 1;
	router_ctl_from_host(H.n, pdf, wire, (uint32_t)len);
}

START_TEST(fuzz_mmio_cable)
{
	rng_state = 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; i < MEM_SIZE; i += 8) {
		uint64_t v = rnd();

		memcpy(H.mem + i, &v, 8);
	}
	h_link_up(2);
	for (unsigned long it = 0; it < 200000; it++) {
		uint64_t a = rnd() % 100;

		if (a < 70) {
			uint32_t off = rnd_offset();

			h_wr(off, rnd_value(off));
		} else if (a < 78) {
			(void)h_rd(rnd_offset());
		} else if (a < 90) {
			fuzz_cable();
		} else if (a < 97) {
			fuzz_ctl();
		} else if (a < 98) {
			h_advance((int64_t)(rnd() % 2000000000ull));
		} else if (a < 99) {
			/* scribble over guest memory (descriptors, buffers) */
			size_t off = (size_t)(rnd() % (MEM_SIZE - 64));

			for (int k = 0; k < 64; k++)
				H.mem[off + k] = (uint8_t)rnd();
		} else {
			switch (rnd() % 8) {
			case 0:
				nhi_reset(H.n);
				break;
			case 1:
				nhi_cable_connected(H.n, false);
				break;
			case 2:
				nhi_cable_connected(H.n, true);
				break;
			case 3:
				nhi_timer_fire(H.n, NHI_TIMER_HOTPLUG);
				break;
			case 4:
				nhi_set_trace(H.n, rnd() % 2);
				break;
			default:
				h_link_state(rnd() % 2, (uint8_t)(1 + rnd() % 2),
					     20, 0x55);
				break;
			}
		}
		if (H.nmsgs > 512 || H.nlogs > 512)
			h_clear_records();
	}
	/* still a working device afterwards */
	nhi_set_trace(H.n, false);
	nhi_reset(H.n);
	nhi_cable_connected(H.n, true);
	memset(H.mem, 0, MEM_SIZE);
	ck_assert_uint_eq(h_rd(R_HOP_COUNT), 12);
	h_ctl_start();
	ck_assert_uint_eq(h_cfg_read1(2, 0, 0), 0x0b461234);
	ck_assert_uint_eq(h_cfg_read1(2, 0, 7), 0x55667788);
}
END_TEST

Suite *suite_bad(void)
{
	Suite *s = suite_create("bad");
	TCase *tc = tcase_create("guest");

	tcase_add_checked_fixture(tc, bad_setup, h_teardown);
	tcase_add_test(tc, rings_beyond_hop_count);
	tcase_add_test(tc, misaligned_base);
	tcase_add_test(tc, size_zero_enable);
	tcase_add_test(tc, size_change_while_enabled);
	tcase_add_test(tc, unknown_offsets_harmless);
	tcase_add_test(tc, mailbox_fails_fast);
	tcase_add_test(tc, invalid_config_rejected);
	tcase_add_test(tc, minimal_ops_work);
	tcase_add_test(tc, trace_logging);
	suite_add_tcase(s, tc);

	tc = tcase_create("cable");
	tcase_add_checked_fixture(tc, bad_setup, h_teardown);
	tcase_add_test(tc, cable_oversized_header);
	tcase_add_test(tc, cable_unknown_and_truncated);
	tcase_add_test(tc, cable_state_bad_lanes);
	tcase_add_test(tc, cable_split_and_joined);
	tcase_add_test(tc, reconnect_drops_partial);
	suite_add_tcase(s, tc);

	tc = tcase_create("fuzz");
	tcase_set_timeout(tc, 300);
	tcase_add_checked_fixture(tc, bad_setup, h_teardown);
	tcase_add_test(tc, fuzz_mmio_cable);
	suite_add_tcase(s, tc);
	return s;
}
