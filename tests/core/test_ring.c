// SPDX-License-Identifier: MIT
/* DMA rings and descriptors (nhi-device.md §3). */
#include <string.h>

#include "harness.h"

#define HOPS 12u
#define FRAME_MASKS ((1u << 1) << 16 | (1u << 2))
#define TXD (MEM_BASE + 0x40000)
#define RXD (MEM_BASE + 0x41000)
#define TXB (MEM_BASE + 0x50000)  /* 16 x 4 KiB */
#define RXB (MEM_BASE + 0x60000)  /* 16 x 4 KiB */

static const struct nhi_stats *st(void)
{
	return nhi_get_stats(H.n);
}

/* control channel + router configured + link up + paths for ring 1 / HopID 8 */
static void data_setup(void)
{
	h_setup();
	h_ctl_start();
	h_configure_router();
	h_link_up(1);
	h_path_rx(8, 1);
	h_path_tx(1, 8);
	h_clear_records();
}

static void send_data(uint16_t hop, uint8_t sof, uint8_t eof,
		      const uint8_t *pl, uint32_t len)
{
	static uint8_t buf[sizeof(struct odl_link_data) + 8192];
	struct odl_link_data d;

	memset(&d, 0, sizeof(d));
	d.hopid = hop;
	d.sof = sof;
	d.eof = eof;
	memcpy(buf, &d, sizeof(d));
	memcpy(buf + sizeof(d), pl, len);
	h_cable(ODL_LINK_DATA, buf, (uint32_t)(sizeof(d) + len));
}

static void post_rx(unsigned int ring, uint64_t desc, unsigned int slot,
		    unsigned int new_head)
{
	h_desc(desc, slot, RXB + 4096ull * slot, D_POSTED | D_INTERRUPT | 0xabc);
	h_wr(R_RX(ring) + 8, new_head);
}

static void post_tx(uint64_t desc, unsigned int slot, unsigned int new_head,
		    uint32_t len)
{
	h_desc(desc, slot, TXB + 4096ull * slot,
	       (len & 0xfff) | 2u << 12 | 1u << 16 | D_POSTED | D_INTERRUPT);
	h_wr(R_TX(1) + 8, new_head << 16);
}

START_TEST(tx_wrap_size_10)
{
	unsigned int head = 0, sent = 0;

	h_tx_start(1, TXD, 10, 0);
	/* 25 frames in batches of up to 9 (one slot always unused) */
	while (sent < 25) {
		unsigned int batch = 25 - sent < 9 ? 25 - sent : 9;

		for (unsigned int i = 0; i < batch; i++) {
			unsigned int s = head;

			head = (head + 1) % 10;
			h_fill(TXB + 4096ull * s, (uint8_t)(sent + i), 64);
			post_tx(TXD, s, head, 64);
			ck_assert_uint_eq(h_desc_d8(TXD, s) & D_COMPLETED,
					  D_COMPLETED);
		}
		sent += batch;
		/* consumer == producer == head */
		ck_assert_uint_eq(h_rd(R_TX(1) + 8), head << 16 | head);
	}
	ck_assert_uint_eq(head, 25 % 10);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 25);
	/* the k-th message carries the k-th frame's payload */
	for (unsigned int k = 0; k < 25; k++) {
		struct h_msg *m = NULL;
		unsigned int seen = 0;

		for (unsigned int i = 0; i < H.nmsgs; i++)
			if (H.msgs[i].type == ODL_LINK_DATA && seen++ == k)
				m = &H.msgs[i];
		ck_assert_ptr_nonnull(m);
		ck_assert_uint_eq(m->len, 8 + 64);
		ck_assert_uint_eq(m->body[8], (uint8_t)k);
	}
}
END_TEST

START_TEST(tx_empty_does_nothing)
{
	h_tx_start(1, TXD, 10, 0);
	h_desc(TXD, 0, TXB, 64 | D_POSTED | D_INTERRUPT);
	h_wr(R_TX(1) + 8, 0); /* producer == consumer: empty */
	ck_assert_uint_eq(h_desc_d8(TXD, 0), 64 | D_POSTED | D_INTERRUPT);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 0);
	/* the hardware half (15:0) of the TX index register is ignored */
	h_wr(R_TX(1) + 8, 5);
	ck_assert_uint_eq(h_rd(R_TX(1) + 8), 0);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 0);
}
END_TEST

START_TEST(rx_wrap_full_empty)
{
	uint8_t pl[100];
	unsigned int head = 0, tail = 0;
	const struct nhi_stats b = *st();

	h_rx_start(1, RXD, 10, 0, 0, FRAME_MASKS);
	/* fill: 9 buffers (full) */
	for (unsigned int i = 0; i < 9; i++) {
		head = (head + 1) % 10;
		post_rx(1, RXD, i, head);
	}
	ck_assert_uint_eq(h_rd(R_RX(1) + 8), 9);
	for (unsigned int f = 0; f < 30; f++) {
		memset(pl, (int)f, sizeof(pl));
		send_data(8, 1, 2, pl, sizeof(pl));
		ck_assert_uint_eq(h_desc_d8(RXD, tail),
				  100 | 2u << 12 | 1u << 16 | D_COMPLETED);
		ck_assert_uint_eq(h_ptr(RXB + 4096ull * tail)[0], (uint8_t)f);
		tail = (tail + 1) % 10;
		ck_assert_uint_eq(h_rd(R_RX(1) + 8), tail << 16 | head);
		/* driver re-posts the slot after head */
		post_rx(1, RXD, head, (head + 1) % 10);
		head = (head + 1) % 10;
	}
	ck_assert_uint_eq(st()->rx_frames - b.rx_frames, 30);
	ck_assert_uint_eq(st()->rx_bytes - b.rx_bytes, 3000);
	/* now consume all 9 without re-posting: the ring runs empty */
	for (unsigned int f = 0; f < 9; f++)
		send_data(8, 1, 2, pl, sizeof(pl));
	ck_assert_uint_eq(st()->rx_frames - b.rx_frames, 39);
	ck_assert_uint_eq(h_rd(R_RX(1) + 8), head << 16 | head);
	send_data(8, 1, 2, pl, sizeof(pl));
	ck_assert_uint_eq(st()->rx_frames - b.rx_frames, 39);
	ck_assert_uint_eq(st()->rx_overflow, 1);
}
END_TEST

START_TEST(tx_len0_is_4096)
{
	h_tx_start(1, TXD, 4, 0);
	for (unsigned int i = 0; i < 4096; i++)
		h_ptr(TXB)[i] = (uint8_t)(i * 7);
	post_tx(TXD, 0, 1, 0);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 1);
	{
		struct h_msg *m = h_last_msg(ODL_LINK_DATA);

		ck_assert_uint_eq(m->len, 8 + 4096);
		ck_assert_mem_eq(m->body + 8, h_ptr(TXB), 4096);
	}
	ck_assert_uint_eq(st()->tx_bytes, 4096);
	ck_assert_uint_eq(h_desc_d8(TXD, 0),
			  0 | 2u << 12 | 1u << 16 | D_POSTED | D_INTERRUPT | D_COMPLETED);
}
END_TEST

START_TEST(rx_4096_reported_as_0)
{
	static uint8_t pl[4096];
	const struct nhi_stats b = *st();

	for (unsigned int i = 0; i < sizeof(pl); i++)
		pl[i] = (uint8_t)(i * 13);
	h_rx_start(1, RXD, 4, 0, 0, FRAME_MASKS);
	post_rx(1, RXD, 0, 1);
	send_data(8, 1, 2, pl, 4096);
	ck_assert_uint_eq(h_desc_d8(RXD, 0), 0 | 2u << 12 | 1u << 16 | D_COMPLETED);
	ck_assert_mem_eq(h_ptr(RXB), pl, 4096);
	ck_assert_uint_eq(st()->rx_bytes - b.rx_bytes, 4096);
}
END_TEST

START_TEST(rx_overrun_truncates)
{
	uint8_t pl[300];

	memset(pl, 0x5a, sizeof(pl));
	h_rx_start(1, RXD, 4, 0x100, 0, FRAME_MASKS);
	post_rx(1, RXD, 0, 1);
	h_fill(RXB, 0xee, 512);
	send_data(8, 1, 2, pl, sizeof(pl));
	ck_assert_uint_eq(h_desc_d8(RXD, 0), 256 | 2u << 12 | 1u << 16 |
					  D_COMPLETED | D_OVERRUN);
	ck_assert_uint_eq(h_ptr(RXB)[255], 0x5a);
	ck_assert_uint_eq(h_ptr(RXB)[256], 0xee); /* never beyond frame size */
	ck_assert_uint_eq(st()->rx_overflow, 1);
	/* a frame that fits afterwards has no overrun flag */
	post_rx(1, RXD, 1, 2);
	send_data(8, 1, 2, pl, 256);
	ck_assert_uint_eq(h_desc_d8(RXD, 1), 256 | 2u << 12 | 1u << 16 | D_COMPLETED);
}
END_TEST

START_TEST(rx_writes_whole_dword8)
{
	uint8_t pl[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };

	h_rx_start(1, RXD, 4, 0, 0, FRAME_MASKS);
	/* posted with POSTED|INTERRUPT and a stale length/eof/sof */
	h_desc(RXD, 0, RXB, D_POSTED | D_INTERRUPT | 0x000fffff);
	h_w32(RXD + 12, 0x12345678); /* time field: hardware may leave it */
	h_wr(R_RX(1) + 8, 1);
	send_data(8, 1, 2, pl, sizeof(pl));
	ck_assert_uint_eq(h_desc_d8(RXD, 0), 10 | 2u << 12 | 1u << 16 | D_COMPLETED);
	/* phys is not touched */
	ck_assert_uint_eq(h_r32(RXD), (uint32_t)RXB);
	ck_assert_uint_eq(h_r32(RXD + 4), (uint32_t)(RXB >> 32));
}
END_TEST

START_TEST(rx_crc_error_flag)
{
	uint8_t buf[sizeof(struct odl_link_data) + 16];
	struct odl_link_data d = { .hopid = 8, .sof = 1, .eof = 2,
				   .flags = ODL_LINK_DATA_CRC_ERR };

	memset(buf, 0, sizeof(buf));
	memcpy(buf, &d, sizeof(d));
	h_rx_start(1, RXD, 4, 0, 0, FRAME_MASKS);
	post_rx(1, RXD, 0, 1);
	h_cable(ODL_LINK_DATA, buf, sizeof(buf));
	ck_assert_uint_eq(h_desc_d8(RXD, 0),
			  16 | 2u << 12 | 1u << 16 | D_COMPLETED | D_CRC_ERR);
}
END_TEST

START_TEST(rx_sof_eof_mask_filter)
{
	uint8_t pl[8] = { 0 };
	const struct nhi_stats b = *st();

	h_rx_start(1, RXD, 8, 0, 0, FRAME_MASKS);
	for (unsigned int i = 0; i < 7; i++)
		post_rx(1, RXD, i, i + 1);
	send_data(8, 3, 2, pl, 8);  /* sof 3 not in mask */
	send_data(8, 1, 5, pl, 8);  /* eof 5 not in mask */
	ck_assert_uint_eq(st()->rx_frames - b.rx_frames, 0);
	ck_assert_uint_eq(st()->rx_dropped, 2);
	ck_assert_uint_eq(h_rd(R_RX(1) + 8), 7); /* hardware index still 0 */
	send_data(8, 1, 2, pl, 8);
	ck_assert_uint_eq(st()->rx_frames - b.rx_frames, 1);
	ck_assert_uint_eq(h_desc_d8(RXD, 0), 8 | 2u << 12 | 1u << 16 | D_COMPLETED);
	/* masks are live register state */
	h_wr(R_RXOPT(1) + 4, (1u << 3) << 16 | (1u << 5));
	ck_assert_uint_eq(h_rd(R_RXOPT(1) + 4), (1u << 3) << 16 | (1u << 5));
	send_data(8, 3, 5, pl, 8);
	ck_assert_uint_eq(h_desc_d8(RXD, 1), 8 | 5u << 12 | 3u << 16 | D_COMPLETED);
}
END_TEST

START_TEST(rx_raw_reports_sof0)
{
	uint8_t pl[12] = { 0 };

	/* raw ring, masks 0: masks are ignored, sof reported as 0 */
	h_rx_start(1, RXD, 4, 0x100, F_RAW, 0);
	post_rx(1, RXD, 0, 1);
	send_data(8, 1, 2, pl, 12);
	ck_assert_uint_eq(h_desc_d8(RXD, 0), 12 | 2u << 12 | 0u << 16 | D_COMPLETED);
}
END_TEST

START_TEST(index_reset_enable_disable_base)
{
	h_tx_start(1, TXD, 10, 0);
	post_tx(TXD, 0, 1, 16);
	post_tx(TXD, 1, 2, 16);
	post_tx(TXD, 2, 3, 16);
	ck_assert_uint_eq(h_rd(R_TX(1) + 8), 3u << 16 | 3);
	/* disable: options +0 = 0 -> both indices 0 (before base/+8 writes) */
	h_wr(R_TXOPT(1), 0);
	ck_assert_uint_eq(h_rd(R_TX(1) + 8), 0);
	ck_assert_uint_eq(h_rd(R_TXOPT(1)), 0);
	/* re-enable: indices 0, processing restarts at slot 0 */
	h_wr(R_TXOPT(1), F_ENABLE);
	ck_assert_uint_eq(h_rd(R_TX(1) + 8), 0);
	h_clear_records();
	h_fill(TXB, 0x77, 16);
	post_tx(TXD, 0, 1, 16);
	ck_assert_uint_eq(h_rd(R_TX(1) + 8), 1u << 16 | 1);
	ck_assert_uint_eq(h_last_msg(ODL_LINK_DATA)->body[8], 0x77);
	/* base-low write resets indices (defensive, kexec) */
	h_wr(R_TX(1), (uint32_t)TXD);
	ck_assert_uint_eq(h_rd(R_TX(1) + 8), 0);
	ck_assert_uint_eq(h_rd(R_TX(1)), (uint32_t)TXD);
	ck_assert_uint_eq(h_rd(R_TX(1) + 4), (uint32_t)(TXD >> 32));
	ck_assert_uint_eq(h_rd(R_TX(1) + 0xc), 10);

	/* RX: the same three events */
	h_rx_start(1, RXD, 10, 0, 0, FRAME_MASKS);
	h_wr(R_RX(1) + 8, 5);
	ck_assert_uint_eq(h_rd(R_RX(1) + 8), 5);
	h_wr(R_RX(1), (uint32_t)RXD);
	ck_assert_uint_eq(h_rd(R_RX(1) + 8), 0);
	h_wr(R_RX(1) + 8, 4);
	h_wr(R_RXOPT(1), 0);
	ck_assert_uint_eq(h_rd(R_RX(1) + 8), 0);
	h_wr(R_RX(1) + 8, 3);
	h_wr(R_RXOPT(1), F_ENABLE);
	ck_assert_uint_eq(h_rd(R_RX(1) + 8), 0);
	ck_assert_uint_eq(h_rd(R_RX(1) + 0xc), 10);
	/* the hardware half (31:16) of the RX index register is ignored */
	h_wr(R_RX(1) + 8, 0xffff0002u);
	ck_assert_uint_eq(h_rd(R_RX(1) + 8), 2);
}
END_TEST

START_TEST(second_options_write_keeps_state)
{
	/* tb_ring_start() writes options +0 twice for E2E rings: the second
	 * write (ring already enabled) must not reset the ring */
	h_rx_start(1, RXD, 10, 0, 0, FRAME_MASKS);
	h_wr(R_RX(1) + 8, 5);
	h_wr(R_RXOPT(1), F_ENABLE | F_E2E | 1u << 12);
	ck_assert_uint_eq(h_rd(R_RX(1) + 8), 5);
	ck_assert_uint_eq(h_rd(R_RXOPT(1)), F_ENABLE | F_E2E | 1u << 12);
}
END_TEST

START_TEST(producer_beyond_size_ignored)
{
	uint64_t ge;

	h_tx_start(1, TXD, 10, 0);
	post_tx(TXD, 0, 1, 16);
	ge = st()->guest_errors;
	h_clear_records();
	h_wr(R_TX(1) + 8, 10u << 16);
	ck_assert_uint_eq(st()->guest_errors, ge + 1);
	ck_assert_uint_eq(h_rd(R_TX(1) + 8), 1u << 16 | 1);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 0);
	ck_assert_uint_eq(h_logs_at(NHI_LOG_ERROR), 1);
	ck_assert(h_log_has("producer"));
	h_wr(R_TX(1) + 8, 0xffffu << 16);
	ck_assert_uint_eq(st()->guest_errors, ge + 2);

	h_rx_start(1, RXD, 10, 0, 0, FRAME_MASKS);
	h_wr(R_RX(1) + 8, 3);
	h_wr(R_RX(1) + 8, 10);
	ck_assert_uint_eq(st()->guest_errors, ge + 3);
	ck_assert_uint_eq(h_rd(R_RX(1) + 8), 3);
}
END_TEST

START_TEST(tx_descriptor_fault)
{
	/* descriptor array below guest memory: the read faults */
	h_tx_start(1, 0x10000, 4, 0);
	h_wr(R_TX(1) + 8, 1u << 16);
	ck_assert_uint_eq(st()->dma_faults, 1);
	ck_assert_uint_eq(h_rd(R_TX(1) + 8), 1u << 16 | 0);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 0);
	ck_assert_uint_eq(h_logs_at(NHI_LOG_ERROR), 1);
	/* stopped: further doorbells do no DMA */
	{
		uint64_t refused = H.dma_refused, rd = H.dma_reads;

		h_wr(R_TX(1) + 8, 2u << 16);
		ck_assert_uint_eq(H.dma_refused, refused);
		ck_assert_uint_eq(H.dma_reads, rd);
		ck_assert_uint_eq(st()->dma_faults, 1);
	}
	/* a fresh start clears the fault */
	h_wr(R_TXOPT(1), 0);
	h_wr(R_TX(1), (uint32_t)TXD);
	h_wr(R_TX(1) + 4, (uint32_t)(TXD >> 32));
	h_wr(R_TXOPT(1), F_ENABLE);
	post_tx(TXD, 0, 1, 16);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 1);
}
END_TEST

START_TEST(tx_buffer_fault)
{
	h_tx_start(1, TXD, 4, 0);
	h_desc(TXD, 0, MEM_BASE + MEM_SIZE - 8, 64 | 2u << 12 | 1u << 16 |
	       D_POSTED | D_INTERRUPT);
	h_wr(R_TX(1) + 8, 1u << 16);
	ck_assert_uint_eq(st()->dma_faults, 1);
	ck_assert_uint_eq(h_desc_d8(TXD, 0) & D_COMPLETED, 0);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 0);
	ck_assert_uint_eq(H.nirq, 0);
}
END_TEST

START_TEST(rx_descriptor_fault)
{
	uint8_t pl[16] = { 0 };
	uint64_t w;
	const struct nhi_stats b = *st();

	h_rx_start(1, MEM_BASE + MEM_SIZE, 4, 0, 0, FRAME_MASKS);
	h_wr(R_RX(1) + 8, 1);
	send_data(8, 1, 2, pl, 16);
	ck_assert_uint_eq(st()->dma_faults, 1);
	ck_assert_uint_eq(st()->rx_frames - b.rx_frames, 0);
	w = H.dma_writes;
	send_data(8, 1, 2, pl, 16);
	ck_assert_uint_eq(st()->dma_faults, 1);
	ck_assert_uint_eq(H.dma_writes, w);
	ck_assert_uint_eq(st()->rx_dropped, 1);
}
END_TEST

START_TEST(rx_buffer_fault)
{
	uint8_t pl[16] = { 0 };
	const struct nhi_stats b = *st();

	h_rx_start(1, RXD, 4, 0, 0, FRAME_MASKS);
	h_desc(RXD, 0, 0x1000, D_POSTED | D_INTERRUPT);
	h_wr(R_RX(1) + 8, 1);
	h_desc(RXD, 1, RXB, D_POSTED | D_INTERRUPT);
	h_wr(R_RX(1) + 8, 2);
	send_data(8, 1, 2, pl, 16);
	ck_assert_uint_eq(st()->dma_faults, 1);
	ck_assert_uint_eq(h_desc_d8(RXD, 0), D_POSTED | D_INTERRUPT);
	/* stopped: the second buffer is not used either */
	send_data(8, 1, 2, pl, 16);
	ck_assert_uint_eq(h_desc_d8(RXD, 1), D_POSTED | D_INTERRUPT);
	ck_assert_uint_eq(st()->rx_frames - b.rx_frames, 0);
	ck_assert_uint_eq(H.nirq, 0);
}
END_TEST

START_TEST(no_dma_after_disable)
{
	uint8_t pl[16] = { 0 };
	uint64_t r, w;

	h_rx_start(1, RXD, 4, 0, 0, FRAME_MASKS);
	post_rx(1, RXD, 0, 1);
	h_tx_start(1, TXD, 4, 0);
	h_desc(TXD, 0, TXB, 16 | D_POSTED | D_INTERRUPT);
	h_ring_stop(true, 1);
	h_wr(R_TXOPT(1), 0);
	r = H.dma_reads;
	w = H.dma_writes;
	send_data(8, 1, 2, pl, 16);
	h_wr(R_TX(1) + 8, 1u << 16);
	h_wr(R_RX(1) + 8, 1);
	ck_assert_uint_eq(H.dma_reads, r);
	ck_assert_uint_eq(H.dma_writes, w);
	ck_assert_uint_eq(h_desc_d8(RXD, 0), D_POSTED | D_INTERRUPT | 0xabc);
	ck_assert_uint_eq(st()->rx_dropped, 1);
	ck_assert_uint_eq(h_msgs_of(ODL_LINK_DATA), 0);
}
END_TEST

START_TEST(ctl_rx_holds_until_buffer)
{
	/* ring 0 queues control packets when no buffer is posted */
	uint32_t req[3] = { 0, 0, h_addr(2, 0, 0, 1, 0) };
	struct h_pkt p;

	unsigned int hw = h_rd(R_RX(0) + 8) >> 16;

	/* undo the posting: RX driver index back to the hardware index */
	h_wr(R_RX(0) + 8, hw);
	H.ctl_rx_head = H.ctl_rx_tail = hw;
	h_ctl_send(1, req, 3);
	h_ctl_send(1, req, 3);
	ck_assert_uint_eq(h_ctl_pending(), 0);
	ck_assert_uint_eq(st()->rx_overflow, 0);
	ck_assert_uint_eq(st()->rx_dropped, 0);
	h_desc(H.ctl_rx_desc, hw, H.ctl_rx_buf + 256ull * hw, D_POSTED | D_INTERRUPT);
	h_desc(H.ctl_rx_desc, (hw + 1) % 10, H.ctl_rx_buf + 256ull * ((hw + 1) % 10),
	       D_POSTED | D_INTERRUPT);
	H.ctl_rx_head = (hw + 2) % 10;
	h_wr(R_RX(0) + 8, H.ctl_rx_head);
	ck_assert_uint_eq(h_ctl_pending(), 2);
	ck_assert(h_ctl_recv(&p));
	ck_assert_uint_eq(p.pdf, 1);
	ck_assert(p.crc_ok);
}
END_TEST

Suite *suite_ring(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("ring");

	tcase_add_checked_fixture(tc, data_setup, h_teardown);
	tcase_add_test(tc, tx_wrap_size_10);
	tcase_add_test(tc, tx_empty_does_nothing);
	tcase_add_test(tc, rx_wrap_full_empty);
	tcase_add_test(tc, tx_len0_is_4096);
	tcase_add_test(tc, rx_4096_reported_as_0);
	tcase_add_test(tc, rx_overrun_truncates);
	tcase_add_test(tc, rx_writes_whole_dword8);
	tcase_add_test(tc, rx_crc_error_flag);
	tcase_add_test(tc, rx_sof_eof_mask_filter);
	tcase_add_test(tc, rx_raw_reports_sof0);
	tcase_add_test(tc, index_reset_enable_disable_base);
	tcase_add_test(tc, second_options_write_keeps_state);
	tcase_add_test(tc, producer_beyond_size_ignored);
	tcase_add_test(tc, tx_descriptor_fault);
	tcase_add_test(tc, tx_buffer_fault);
	tcase_add_test(tc, rx_descriptor_fault);
	tcase_add_test(tc, rx_buffer_fault);
	tcase_add_test(tc, no_dma_after_disable);
	tcase_add_test(tc, ctl_rx_holds_until_buffer);
	suite_add_tcase(s, tc);
	return s;
}
