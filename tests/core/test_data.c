// SPDX-License-Identifier: MIT
/* Data path through DMA tunnels (router-cm.md §5.3-§5.6) and E2E flow
 * control (nhi-device.md §3.9). */
#include <string.h>

#include "harness.h"

#define FRAME_MASKS ((1u << 1) << 16 | (1u << 2))
#define TXD (MEM_BASE + 0x40000)
#define RXD (MEM_BASE + 0x41000)
#define TXB (MEM_BASE + 0x50000)
#define RXB (MEM_BASE + 0x70000)

static const struct nhi_stats *st(void)
{
	return nhi_get_stats(H.n);
}

static void d_setup(void)
{
	h_setup();
	h_ctl_start();
	h_configure_router();
	h_link_up(1);
	h_clear_records();
}

static void send_data(uint16_t hop, uint8_t sof, uint8_t eof,
		      const uint8_t *pl, uint32_t len)
{
	static uint8_t buf[sizeof(struct odl_link_data) + 4096];
	struct odl_link_data d;

	memset(&d, 0, sizeof(d));
	d.hopid = hop;
	d.sof = sof;
	d.eof = eof;
	memcpy(buf, &d, sizeof(d));
	memcpy(buf + sizeof(d), pl, len);
	h_cable(ODL_LINK_DATA, buf, (uint32_t)(sizeof(d) + len));
}

static void post_tx(unsigned int ring, unsigned int slot, uint32_t len,
		    uint8_t fill)
{
	h_fill(TXB + 4096ull * slot, fill, 4096);
	h_desc(TXD, slot, TXB + 4096ull * slot,
	       (len & 0xfff) | 2u << 12 | 1u << 16 | D_POSTED | D_INTERRUPT);
	h_wr(R_TX(ring) + 8, (slot + 1) << 16);
}

static void post_rx(unsigned int ring, unsigned int slot)
{
	h_desc(RXD, slot, RXB + 4096ull * slot, D_POSTED | D_INTERRUPT);
	h_wr(R_RX(ring) + 8, slot + 1);
}

START_TEST(tx_frame_leaves_on_hop)
{
	struct odl_link_data d;
	struct h_msg *m;

	h_path_tx(3, 8);
	h_tx_start(3, TXD, 16, 0);
	h_clear_records();
	post_tx(3, 0, 100, 0x42);
	ck_assert_uint_eq(H.nmsgs, 1);
	m = h_last_msg(ODL_LINK_DATA);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->len, sizeof(d) + 100);
	memcpy(&d, m->body, sizeof(d));
	ck_assert_uint_eq(d.hopid, 8);
	ck_assert_uint_eq(d.sof, 1);
	ck_assert_uint_eq(d.eof, 2);
	ck_assert_uint_eq(d.flags, 0);
	ck_assert_mem_eq(m->body + sizeof(d), h_ptr(TXB), 100);
	ck_assert_uint_eq(h_desc_d8(TXD, 0) & D_COMPLETED, D_COMPLETED);
	ck_assert_uint_eq(st()->tx_frames, 1);
	ck_assert_uint_eq(st()->tx_bytes, 100);
	/* another hop on another ring */
	h_path_tx(4, 9);
	h_tx_start(4, TXD + 0x400, 4, 0);
	h_desc(TXD + 0x400, 0, TXB, 12 | 7u << 12 | 6u << 16 | D_INTERRUPT);
	h_wr(R_TX(4) + 8, 1u << 16);
	memcpy(&d, h_last_msg(ODL_LINK_DATA)->body, sizeof(d));
	ck_assert_uint_eq(d.hopid, 9);
	ck_assert_uint_eq(d.sof, 6);
	ck_assert_uint_eq(d.eof, 7);
}
END_TEST

START_TEST(rx_frame_lands_in_ring)
{
	uint8_t pl[200];
	struct nhi_stats b;

	for (unsigned int i = 0; i < sizeof(pl); i++)
		pl[i] = (uint8_t)(255 - i);
	h_path_rx(8, 2);
	h_rx_start(2, RXD, 16, 0, 0, FRAME_MASKS);
	post_rx(2, 0);
	h_clear_records();
	b = *st();
	send_data(8, 1, 2, pl, sizeof(pl));
	ck_assert_uint_eq(h_desc_d8(RXD, 0), 200 | 2u << 12 | 1u << 16 | D_COMPLETED);
	ck_assert_mem_eq(h_ptr(RXB), pl, sizeof(pl));
	ck_assert_uint_eq(st()->rx_frames - b.rx_frames, 1);
	ck_assert_uint_eq(h_rd(R_STATUS) & (1u << (2 + 12)), 1u << (2 + 12));
	/* a frame for HopID 8 never lands in another ring */
	h_rx_start(3, RXD + 0x400, 16, 0, 0, FRAME_MASKS);
	h_desc(RXD + 0x400, 0, RXB + 0x8000, D_POSTED | D_INTERRUPT);
	h_wr(R_RX(3) + 8, 1);
	post_rx(2, 1);
	send_data(8, 1, 2, pl, 10);
	ck_assert_uint_eq(h_desc_d8(RXD + 0x400, 0), D_POSTED | D_INTERRUPT);
	ck_assert_uint_eq(h_desc_d8(RXD, 1), 10 | 2u << 12 | 1u << 16 | D_COMPLETED);
}
END_TEST

START_TEST(rx_no_path_dropped)
{
	uint8_t pl[16] = { 0 };

	h_path_rx(8, 2);
	h_rx_start(2, RXD, 16, 0, 0, FRAME_MASKS);
	post_rx(2, 0);
	send_data(9, 1, 2, pl, 16);    /* no entry for HopID 9 */
	send_data(0, 1, 2, pl, 16);    /* HopID 0 is the control path */
	send_data(2047, 1, 2, pl, 16); /* beyond the table */
	ck_assert_uint_eq(st()->rx_dropped, 3);
	ck_assert_uint_eq(h_desc_d8(RXD, 0), D_POSTED | D_INTERRUPT);
	/* path written to lane 1's table is not used (lane 0 carries paths) */
	{
		uint32_t v[2] = { 0x801c1802, 0x017ff501 };

		ck_assert(h_cfg_write(0, 2, 2 * 10, v, 2));
	}
	send_data(10, 1, 2, pl, 16);
	ck_assert_uint_eq(h_desc_d8(RXD, 0), D_POSTED | D_INTERRUPT);
	/* deactivated path */
	{
		uint32_t v[2] = { 0x001c1802, 0x017ff501 };

		ck_assert(h_cfg_write(0, 1, 2 * 8, v, 2));
	}
	send_data(8, 1, 2, pl, 16);
	ck_assert_uint_eq(h_desc_d8(RXD, 0), D_POSTED | D_INTERRUPT);
	ck_assert_uint_eq(st()->rx_dropped, 5);
	/* entry pointing at ring 0 or a ring >= hop count: dropped */
	{
		uint32_t v[2] = { 0x801c1800, 0x017ff501 };

		ck_assert(h_cfg_write(0, 1, 2 * 11, v, 2));
		v[0] = 0x801c1800 | 12;
		ck_assert(h_cfg_write(0, 1, 2 * 12, v, 2));
	}
	send_data(11, 1, 2, pl, 16);
	send_data(12, 1, 2, pl, 16);
	ck_assert_uint_eq(st()->rx_dropped, 7);
	ck_assert_uint_eq(h_ctl_pending(), 0);
}
END_TEST

START_TEST(rx_link_down_dropped)
{
	uint8_t pl[16] = { 0 };

	h_path_rx(8, 2);
	h_rx_start(2, RXD, 16, 0, 0, FRAME_MASKS);
	post_rx(2, 0);
	h_link_state(false, 0, 0, 0);
	send_data(8, 1, 2, pl, 16);
	ck_assert_uint_eq(h_desc_d8(RXD, 0), D_POSTED | D_INTERRUPT);
	ck_assert_uint_eq(st()->rx_dropped, 1);
}
END_TEST

START_TEST(tx_no_path_dropped_completed)
{
	h_tx_start(2, TXD, 16, 0);
	h_clear_records();
	post_tx(2, 0, 64, 1);
	ck_assert_uint_eq(H.nmsgs, 0);
	ck_assert_uint_eq(st()->tx_dropped, 1);
	ck_assert_uint_eq(h_desc_d8(TXD, 0) & D_COMPLETED, D_COMPLETED);
	/* a path to a non-lane adapter is no path */
	{
		uint32_t v[2] = { 0x801c1808, 0x037ff501 }; /* out adapter 3 */

		ck_assert(h_cfg_write(0, 3, 2 * 2, v, 2));
	}
	h_clear_records();
	post_tx(2, 1, 64, 1);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 0);
	ck_assert_uint_eq(st()->tx_dropped, 2);
	/* link down: dropped as well */
	h_path_tx(2, 8);
	h_link_state(false, 0, 0, 0);
	h_clear_records();
	post_tx(2, 2, 64, 1);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 0);
	ck_assert_uint_eq(st()->tx_dropped, 3);
	ck_assert_uint_eq(h_desc_d8(TXD, 2) & D_COMPLETED, D_COMPLETED);
}
END_TEST

/* ---- E2E ---- */

/* Credits granted on @hop by the CREDIT messages so far, in order; with
 * @from_sync, as the sender counts them: a credit sync (0 credits)
 * starts over. */
static uint32_t credit_sum(uint16_t hop, bool from_sync)
{
	uint32_t sum = 0;

	for (unsigned int i = 0; i < H.nmsgs; i++) {
		struct odl_link_credit c;

		if (H.msgs[i].type != ODL_LINK_CREDIT)
			continue;
		ck_assert_uint_eq(H.msgs[i].len, sizeof(c));
		memcpy(&c, H.msgs[i].body, sizeof(c));
		if (c.hopid != hop)
			continue;
		sum = (c.credits || !from_sync) ? sum + c.credits : 0;
	}
	return sum;
}

static uint32_t credits_for(uint16_t hop)
{
	return credit_sum(hop, false);
}

/* the sender's window */
static uint32_t window_for(uint16_t hop)
{
	return credit_sum(hop, true);
}

START_TEST(e2e_rx_grants_credits)
{
	uint8_t pl[32] = { 0 };

	/* ring started as tb_ring_start() does for E2E, buffers posted */
	h_rx_start(1, RXD, 8, 0, 0, FRAME_MASKS);
	h_wr(R_RXOPT(1), F_ENABLE | F_E2E | 1u << 12);
	for (unsigned int i = 0; i < 5; i++)
		post_rx(1, i);
	/* no path yet: nothing granted */
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_CREDIT), 0);
	/* path valid -> credits for the 5 posted buffers on HopID 8 */
	h_path_rx(8, 1);
	ck_assert_uint_eq(credits_for(8), 5);
	ck_assert_uint_eq(st()->credits_sent, 5);
	/* two more buffers -> two more credits */
	post_rx(1, 5);
	post_rx(1, 6);
	ck_assert_uint_eq(credits_for(8), 7);
	/* frames consume; re-posting returns credits */
	send_data(8, 1, 2, pl, 32);
	send_data(8, 1, 2, pl, 32);
	send_data(8, 1, 2, pl, 32);
	ck_assert_uint_eq(credits_for(8), 7);
	h_desc(RXD, 7, RXB, D_POSTED | D_INTERRUPT);
	h_desc(RXD, 0, RXB, D_POSTED | D_INTERRUPT);
	h_desc(RXD, 1, RXB, D_POSTED | D_INTERRUPT);
	h_wr(R_RX(1) + 8, 2);
	ck_assert_uint_eq(credits_for(8), 10);
	/* never more outstanding than posted buffers */
	ck_assert_uint_eq(credits_for(8) - 3, 7);
}
END_TEST

START_TEST(e2e_no_credits_for_plain_ring)
{
	h_rx_start(1, RXD, 8, 0, 0, FRAME_MASKS);
	post_rx(1, 0);
	h_path_rx(8, 1);
	post_rx(1, 1);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_CREDIT), 0);
}
END_TEST

START_TEST(e2e_ring_after_path)
{
	/* path first, ring later (the other order) */
	h_path_rx(8, 1);
	h_rx_start(1, RXD, 8, 0, F_E2E | 1u << 12, FRAME_MASKS);
	ck_assert_uint_eq(credits_for(8), 0);
	post_rx(1, 0);
	post_rx(1, 1);
	post_rx(1, 2);
	ck_assert_uint_eq(credits_for(8), 3);
}
END_TEST

START_TEST(e2e_sender_stops_and_resumes)
{
	struct odl_link_credit c = { .hopid = 8, .credits = 2 };

	h_path_tx(1, 8);
	h_tx_start(1, TXD, 16, 0);
	h_cable(ODL_LINK_CREDIT, &c, sizeof(c));
	ck_assert_uint_eq(st()->credits_rcvd, 2);
	h_clear_records();
	for (unsigned int i = 0; i < 3; i++)
		post_tx(1, i, 64, (uint8_t)(0x10 + i));
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 2);
	ck_assert_uint_eq(h_desc_d8(TXD, 0) & D_COMPLETED, D_COMPLETED);
	ck_assert_uint_eq(h_desc_d8(TXD, 1) & D_COMPLETED, D_COMPLETED);
	ck_assert_uint_eq(h_desc_d8(TXD, 2) & D_COMPLETED, 0);
	ck_assert_uint_eq(h_rd(R_TX(1) + 8), 3u << 16 | 2);
	ck_assert_uint_eq(st()->tx_frames, 2);
	/* more credits: the waiting frame goes, in order */
	c.credits = 5;
	h_cable(ODL_LINK_CREDIT, &c, sizeof(c));
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 3);
	ck_assert_uint_eq(h_last_msg(ODL_LINK_DATA)->body[sizeof(struct odl_link_data)],
			  0x12);
	ck_assert_uint_eq(h_desc_d8(TXD, 2) & D_COMPLETED, D_COMPLETED);
	ck_assert_uint_eq(h_rd(R_TX(1) + 8), 3u << 16 | 3);
	/* 4 credits left */
	for (unsigned int i = 3; i < 9; i++)
		post_tx(1, i, 64, (uint8_t)i);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 7);
	ck_assert_uint_eq(h_rd(R_TX(1) + 8), 9u << 16 | 7);
	/* credits for another HopID do not help */
	c.hopid = 9;
	h_cable(ODL_LINK_CREDIT, &c, sizeof(c));
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 7);
}
END_TEST

/* A TX path torn down (valid cleared; Linux keeps the other fields, this
 * write clears them all) takes its credits along: the same ring on the
 * same HopID again, now towards a receiver without E2E, is not held to
 * the old path's grants (the model cleared the HopID the write left, 0,
 * and the next path wedged once the stale credits ran out). */
START_TEST(e2e_credits_go_with_the_path)
{
	struct odl_link_credit c = { .hopid = 8, .credits = 2 };
	uint32_t zero = 0;

	h_path_tx(1, 8);
	h_tx_start(1, TXD, 16, 0);
	h_cable(ODL_LINK_CREDIT, &c, sizeof(c));
	ck_assert_uint_eq(st()->credits_rcvd, 2);
	ck_assert(h_cfg_write(0, 3, 2 * 1, &zero, 1));
	h_path_tx(1, 8);
	h_clear_records();
	for (unsigned int i = 0; i < 3; i++)
		post_tx(1, i, 64, (uint8_t)(0x20 + i));
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 3);
	ck_assert_uint_eq(h_rd(R_TX(1) + 8), 3u << 16 | 3);
}
END_TEST

/*
 * A sender is not credit-controlled until its first grant arrives; a frame
 * it sent in that window and that landed after the receiver's accounting
 * restarted was never granted. Once the sender has spent the grant too,
 * the receiver has seen more frames than it granted: it must write the
 * excess off and grant on (an unsigned "outstanding" wrapped and stopped
 * the path for good: thunderbolt-net stalled beside odl_tb5 now and then).
 */
START_TEST(e2e_frames_beyond_grants_written_off)
{
	uint8_t pl[32] = { 0 };

	h_rx_start(1, RXD, 8, 0, 0, FRAME_MASKS);
	h_wr(R_RXOPT(1), F_ENABLE | F_E2E | 1u << 12);
	for (unsigned int i = 0; i < 4; i++)
		post_rx(1, i);
	h_path_rx(8, 1);
	ck_assert_uint_eq(window_for(8), 4);
	/* the unfunded frame, then four on the grant: the fifth waits */
	for (unsigned int i = 0; i < 5; i++)
		send_data(8, 1, 2, pl, 32);
	ck_assert_uint_eq(st()->e2e_held, 1);
	ck_assert_uint_eq(st()->credits_unfunded, 0);
	/* the driver posts three buffers: the held frame takes one, the
	 * other two are granted */
	h_clear_records();
	for (unsigned int i = 4; i < 7; i++)
		post_rx(1, i);
	ck_assert_uint_eq(st()->rx_frames, 5);
	ck_assert_uint_eq(st()->credits_unfunded, 1);
	ck_assert_uint_eq(credits_for(8), 2);
	ck_assert_uint_eq(st()->credit_syncs, 1);
}
END_TEST

/*
 * The ring restarted while the sender still held grants of the old one:
 * the frames it sends on them are held, drained one by one into buffers
 * posted later and written off as unfunded. The first real grant after
 * the restart must still start with a credit sync, or the sender adds it
 * to its old remainder and can overrun the ring (the sync was keyed to
 * "nothing granted yet", which the write-off had made untrue).
 */
START_TEST(e2e_sync_after_restart_with_old_credits)
{
	uint8_t pl[32] = { 0 };

	h_rx_start(1, RXD, 8, 0, 0, FRAME_MASKS);
	h_wr(R_RXOPT(1), F_ENABLE | F_E2E | 1u << 12);
	for (unsigned int i = 0; i < 4; i++)
		post_rx(1, i);
	h_path_rx(8, 1);
	ck_assert_uint_eq(window_for(8), 4);
	ck_assert_uint_eq(st()->credit_syncs, 1);
	/* the driver restarts the ring, no buffers yet; the sender spends
	 * two of its four old credits */
	h_ring_stop(true, 1);
	h_rx_start(1, RXD, 8, 0, 0, FRAME_MASKS);
	h_wr(R_RXOPT(1), F_ENABLE | F_E2E | 1u << 12);
	send_data(8, 1, 2, pl, 32);
	send_data(8, 1, 2, pl, 32);
	ck_assert_uint_eq(st()->e2e_held, 2);
	post_rx(1, 0);
	post_rx(1, 1);
	ck_assert_uint_eq(st()->credits_unfunded, 2);
	/* now buffers to grant: a sync first, then the grants; the
	 * sender's window (all credit messages since the start) is what
	 * the four free buffers allow, not that plus its old two */
	for (unsigned int i = 2; i < 6; i++)
		post_rx(1, i);
	ck_assert_uint_eq(st()->credit_syncs, 2);
	ck_assert_uint_gt(window_for(8), 0);
	ck_assert_uint_le(window_for(8), 4);
}
END_TEST

/* nhi_rings_describe: the evidence a stalled path leaves */
START_TEST(rings_describe_shows_stall_and_credits)
{
	struct odl_link_credit c = { .hopid = 8, .credits = 1 };
	char buf[2048], small[40];

	h_path_tx(1, 8);
	h_tx_start(1, TXD, 16, 0);
	h_cable(ODL_LINK_CREDIT, &c, sizeof(c));
	post_tx(1, 0, 64, 1);
	post_tx(1, 1, 64, 2);
	h_rx_start(2, RXD, 8, 0, F_E2E | 1u << 12, FRAME_MASKS);
	post_rx(2, 0);
	post_rx(2, 1);
	h_path_rx(9, 2);
	nhi_rings_describe(H.n, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "irq enable ") == buf, "%s", buf);
	/* one frame went on the one credit; the second waits */
	ck_assert_msg(strstr(buf, "tx 1: size 16 hw 1 drv 2 stalled late 0 hop 8 credits 0 e2e\n"),
		      "%s", buf);
	ck_assert_msg(strstr(buf, "rx 2: size 8 hw 0 drv 2 avail 2 e2e held 0 late 0 granted 2 used 0 hop 9\n"),
		      "%s", buf);
	ck_assert_ptr_null(strstr(buf, "tx 2:"));
	/* truncated, still terminated */
	ck_assert_uint_eq(nhi_rings_describe(H.n, small, sizeof(small)), sizeof(small) - 1);
	ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
	ck_assert_uint_eq(nhi_rings_describe(H.n, small, 0), 0);
}
END_TEST

START_TEST(no_credit_messages_means_unlimited)
{
	/* a peer that never sends credits (E2E off) is not throttled */
	h_path_tx(1, 8);
	h_tx_start(1, TXD, 16, 0);
	h_clear_records();
	for (unsigned int i = 0; i < 12; i++)
		post_tx(1, i, 32, (uint8_t)i);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 12);
}
END_TEST

START_TEST(e2e_held_frames_drained_in_order)
{
	uint8_t pl[16];
	struct nhi_stats b;

	/* frames arriving at a full E2E ring are held, then delivered */
	h_path_rx(8, 1);
	h_rx_start(1, RXD, 8, 0, F_E2E | 1u << 12, FRAME_MASKS);
	b = *st();
	for (uint8_t i = 0; i < 3; i++) {
		memset(pl, i, sizeof(pl));
		send_data(8, 1, 2, pl, sizeof(pl));
	}
	ck_assert_uint_eq(st()->rx_overflow, 0);
	ck_assert_uint_eq(st()->e2e_held, 3);
	post_rx(1, 0);
	post_rx(1, 1);
	ck_assert_uint_eq(h_desc_d8(RXD, 0) & D_COMPLETED, D_COMPLETED);
	ck_assert_uint_eq(h_ptr(RXB)[0], 0);
	ck_assert_uint_eq(h_ptr(RXB + 4096)[0], 1);
	post_rx(1, 2);
	ck_assert_uint_eq(h_ptr(RXB + 8192)[0], 2);
	ck_assert_uint_eq(st()->rx_frames - b.rx_frames, 3);
}
END_TEST

static unsigned int defer_calls;

static void count_defer(void *opaque)
{
	(void)opaque;
	defer_calls++;
}

/* With a defer op, data-ring doorbells are processed later, in one go. */
START_TEST(tx_doorbell_deferred_to_bottom_half)
{
	defer_calls = 0;
	H.ops.defer = count_defer;
	h_path_tx(3, 8);
	h_tx_start(3, TXD, 16, 0);
	h_clear_records();
	post_tx(3, 0, 64, 0x11);
	post_tx(3, 1, 64, 0x22);
	/* nothing sent, nothing completed yet; one deferral requested */
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 0);
	ck_assert_uint_eq(h_desc_d8(TXD, 0) & D_COMPLETED, 0);
	ck_assert_uint_eq(defer_calls, 1);
	nhi_run_deferred(H.n);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 2);
	ck_assert_uint_eq(h_desc_d8(TXD, 1) & D_COMPLETED, D_COMPLETED);
	/* a stopped ring forgets its pending doorbell */
	post_tx(3, 2, 64, 0x33);
	ck_assert_uint_eq(defer_calls, 2);
	h_ring_stop(false, 3);
	nhi_run_deferred(H.n);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 2);
	/* the control ring stays synchronous */
	ck_assert_uint_eq(h_ctl_pending(), 0);
	ck_assert_uint_eq(h_cfg_read1(2, 0, 0), h_cfg_read1(2, 0, 0));
	H.ops.defer = NULL;
}
END_TEST

/* One deferred run sends at most NHI_DEFER_BUDGET frames and asks for the
 * next (the QEMU glue batches a run's cable output: a guest with full
 * rings made it hold gigabytes and stall the main loop), until the ring
 * is done. */
#define BIGD (MEM_BASE + 0x80000)
START_TEST(tx_deferred_run_bounded)
{
	const unsigned int n = NHI_DEFER_BUDGET + 100, size = 2048;
	unsigned int runs = 0;

	defer_calls = 0;
	H.ops.defer = count_defer;
	h_path_tx(3, 8);
	h_tx_start(3, BIGD, size, 0);
	h_fill(TXB, 0x5a, 4096);
	for (unsigned int i = 0; i < n; i++)
		h_desc(BIGD, i, TXB, 64 | 2u << 12 | 1u << 16 | D_POSTED | D_INTERRUPT);
	h_clear_records();
	h_wr(R_TX(3) + 8, n << 16);
	ck_assert_uint_eq(defer_calls, 1);
	nhi_run_deferred(H.n);
	runs++;
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), NHI_DEFER_BUDGET);
	ck_assert_uint_eq(st()->tx_frames, NHI_DEFER_BUDGET);
	ck_assert_uint_eq(defer_calls, 2); /* the rest: another run */
	h_clear_records();
	while (defer_calls > runs) {
		nhi_run_deferred(H.n);
		ck_assert_uint_lt(++runs, 10);
	}
	ck_assert_uint_eq(runs, 2);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), n - NHI_DEFER_BUDGET);
	ck_assert_uint_eq(st()->tx_frames, n);
	ck_assert_uint_eq(h_rd(R_TX(3) + 8), n << 16 | n);
	H.ops.defer = NULL;
}
END_TEST

/* Credits are returned in batches of a quarter ring, or at once when the
 * sender is running low. */
START_TEST(e2e_credits_batched)
{
	const unsigned int size = 64;
	unsigned int before;

	h_rx_start(1, RXD, size, 0, 0, FRAME_MASKS);
	h_wr(R_RXOPT(1), F_ENABLE | F_E2E | 1u << 12);
	h_path_rx(8, 1);
	for (unsigned int i = 0; i < 40; i++)
		post_rx(1, i);
	/* a credit sync, then one by one while the sender's window is at
	 * most a quarter ring (17 grants), then 16 more in a single batch;
	 * 7 still held back */
	ck_assert_uint_eq(st()->credits_sent, 33);
	before = h_msgs_of(ODL_LINK_CREDIT);
	ck_assert_uint_eq(before, 19);
	ck_assert_uint_eq(st()->credit_syncs, 1);
	for (unsigned int i = 40; i < 48; i++)
		post_rx(1, i);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_CREDIT), before);
	/* the 16th free buffer completes a batch */
	post_rx(1, 48);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_CREDIT), before + 1);
	ck_assert_uint_eq(st()->credits_sent, 49);
}
END_TEST

static void e2e_rx_ring_up(unsigned int buffers)
{
	h_rx_start(1, RXD, 8, 0, 0, FRAME_MASKS);
	h_wr(R_RXOPT(1), F_ENABLE | F_E2E | 1u << 12);
	for (unsigned int i = 0; i < buffers; i++)
		post_rx(1, i);
}

/*
 * A receiver whose E2E RX ring is set up again (the peer logged in anew
 * after a retrain) starts its grants with a credit sync, so the sender's
 * window is the new ring's buffers, not old + new. Without the sync a
 * sender that kept the grant the old ring made at link up could overrun
 * the new ring (odl-retrain on intel-barlow-ridge lost frames that way).
 */
START_TEST(e2e_ring_again_syncs_credits)
{
	uint32_t off[2] = { 0, 0 };

	e2e_rx_ring_up(6);
	h_path_rx(8, 1);
	ck_assert_uint_eq(window_for(8), 6);
	/* retrain: both ends restart their accounting; the old ring, still
	 * up, grants its buffers again */
	h_link_state(true, 1, 40, 0x99);
	ck_assert_uint_eq(window_for(8), 6);
	/* the driver tears the ring and its path down and sets them up
	 * again */
	h_wr(R_RXOPT(1), 0);
	ck_assert(h_cfg_write(0, 1, 2 * 8, off, 2));
	e2e_rx_ring_up(4);
	ck_assert_uint_eq(window_for(8), 6);
	h_path_rx(8, 1);
	ck_assert_uint_eq(window_for(8), 4);
	ck_assert_uint_eq(credits_for(8), 16);
	ck_assert_uint_eq(st()->credit_syncs, 3);
}
END_TEST

/* Sender side: a credit sync voids what was granted before it. */
START_TEST(e2e_credit_sync_voids_old_grants)
{
	struct odl_link_credit c = { .hopid = 8, .credits = 5 };

	h_path_tx(1, 8);
	h_tx_start(1, TXD, 16, 0);
	h_cable(ODL_LINK_CREDIT, &c, sizeof(c));
	c.credits = 0;
	h_cable(ODL_LINK_CREDIT, &c, sizeof(c));
	ck_assert_uint_eq(st()->credit_syncs_rcvd, 1);
	ck_assert_uint_eq(st()->credits_rcvd, 5);
	h_clear_records();
	for (unsigned int i = 0; i < 3; i++)
		post_tx(1, i, 64, (uint8_t)i);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 0);
	c.credits = 2;
	h_cable(ODL_LINK_CREDIT, &c, sizeof(c));
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 2);
	/* a sync for another HopID changes nothing here */
	c.hopid = 9;
	c.credits = 0;
	h_cable(ODL_LINK_CREDIT, &c, sizeof(c));
	c.hopid = 8;
	c.credits = 1;
	h_cable(ODL_LINK_CREDIT, &c, sizeof(c));
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 3);
}
END_TEST

/* A retrain while the link stays up restarts credit accounting: the
 * receiver grants its free buffers again, nothing stalls. */
START_TEST(e2e_retrain_regrants)
{
	h_rx_start(1, RXD, 8, 0, 0, FRAME_MASKS);
	h_wr(R_RXOPT(1), F_ENABLE | F_E2E | 1u << 12);
	for (unsigned int i = 0; i < 4; i++)
		post_rx(1, i);
	h_path_rx(8, 1);
	ck_assert_uint_eq(st()->credits_sent, 4);
	h_link_state(true, 1, 10, 0x99);
	ck_assert_uint_eq(st()->credits_sent, 8);
}
END_TEST

Suite *suite_data(void)
{
	Suite *s = suite_create("data");
	TCase *tc = tcase_create("data");

	tcase_add_checked_fixture(tc, d_setup, h_teardown);
	tcase_add_test(tc, tx_frame_leaves_on_hop);
	tcase_add_test(tc, tx_doorbell_deferred_to_bottom_half);
	tcase_add_test(tc, tx_deferred_run_bounded);
	tcase_add_test(tc, e2e_credits_batched);
	tcase_add_test(tc, e2e_retrain_regrants);
	tcase_add_test(tc, e2e_ring_again_syncs_credits);
	tcase_add_test(tc, e2e_credit_sync_voids_old_grants);
	tcase_add_test(tc, rx_frame_lands_in_ring);
	tcase_add_test(tc, rx_no_path_dropped);
	tcase_add_test(tc, rx_link_down_dropped);
	tcase_add_test(tc, tx_no_path_dropped_completed);
	tcase_add_test(tc, e2e_rx_grants_credits);
	tcase_add_test(tc, e2e_no_credits_for_plain_ring);
	tcase_add_test(tc, e2e_ring_after_path);
	tcase_add_test(tc, e2e_sender_stops_and_resumes);
	tcase_add_test(tc, e2e_credits_go_with_the_path);
	tcase_add_test(tc, e2e_sync_after_restart_with_old_credits);
	tcase_add_test(tc, no_credit_messages_means_unlimited);
	tcase_add_test(tc, rings_describe_shows_stall_and_credits);
	tcase_add_test(tc, e2e_frames_beyond_grants_written_off);
	tcase_add_test(tc, e2e_held_frames_drained_in_order);
	suite_add_tcase(s, tc);
	return s;
}
