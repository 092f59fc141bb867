// SPDX-License-Identifier: MIT
/* Interrupt registers and delivery (nhi-device.md §2.6-§2.8). */
#include <string.h>

#include "harness.h"

#define HOPS 12u
#define FRAME_MASKS ((1u << 1) << 16 | (1u << 2))

/* One control round trip (READ RTR[0]); the reply is consumed. */
static void roundtrip(void)
{
	uint32_t v;

	ck_assert(h_cfg_read(2, 0, 0, 1, &v));
}

/* Send a READ but do not consume the reply. */
static void request_only(void)
{
	uint32_t req[3] = { 0, 0, h_addr(2, 0, 0, 1, 0) };

	h_ctl_send(1, req, 3);
}

START_TEST(enable_plain_readback)
{
	h_wr(R_ENABLE, 0x00a5a5a5);
	ck_assert_uint_eq(h_rd(R_ENABLE), 0x00a5a5a5);
	/* plain register: a 0 clears, it is not write-1-to-set */
	h_wr(R_ENABLE, 0x00000001);
	ck_assert_uint_eq(h_rd(R_ENABLE), 0x00000001);
	h_wr(R_ENABLE, 0x00001000);
	ck_assert_uint_eq(h_rd(R_ENABLE), 0x00001000);
	h_wr(R_ENABLE, 0);
	ck_assert_uint_eq(h_rd(R_ENABLE), 0);
	/* reading does not change it */
	h_wr(R_ENABLE, 0x00ffffff);
	ck_assert_uint_eq(h_rd(R_ENABLE), 0x00ffffff);
	ck_assert_uint_eq(h_rd(R_ENABLE), 0x00ffffff);
	ck_assert_uint_eq(nhi_get_stats(H.n)->guest_errors, 0);
}
END_TEST

START_TEST(enable_bits_beyond_rings)
{
	/* 2*12 = 24 valid enable bits; the rest does not exist */
	h_wr(R_ENABLE, 0xffffffff);
	ck_assert_uint_eq(h_rd(R_ENABLE), 0x00ffffff);
	ck_assert_uint_eq(nhi_get_stats(H.n)->guest_errors, 1);
}
END_TEST

START_TEST(mask_clear)
{
	h_wr(R_ENABLE, 0x00ffffff);
	h_wr(R_MASK_CLR, 0x00000101);
	ck_assert_uint_eq(h_rd(R_ENABLE), 0x00fffefe);
	h_wr(R_MASK_CLR, 0);
	ck_assert_uint_eq(h_rd(R_ENABLE), 0x00fffefe);
	h_wr(R_MASK_CLR, 0xffffffff);
	ck_assert_uint_eq(h_rd(R_ENABLE), 0);
	/* the mask-clear register itself reads as nothing useful: the
	 * enable register is what Linux reads back */
}
END_TEST

START_TEST(status_set_on_completion_w1c)
{
	h_ctl_start(); /* sets DMA_MISC bit 17 like Linux */
	ck_assert_uint_eq(h_rd(R_DMA_MISC), 1u << 17);
	request_only();
	/* TX ring 0 -> bit 0, RX ring 0 -> bit 12 */
	ck_assert_uint_eq(h_rd(R_STATUS), 1u << 0 | 1u << HOPS);
	ck_assert_uint_eq(h_rd(R_STATUS + 4), 0);
	/* bit 17 set: reading does not clear */
	ck_assert_uint_eq(h_rd(R_STATUS), 1u << 0 | 1u << HOPS);
	/* 0x37800 itself is read-only */
	h_wr(R_STATUS, 0xffffffff);
	ck_assert_uint_eq(h_rd(R_STATUS), 1u << 0 | 1u << HOPS);
	/* write-1-to-clear at 0x37808, only the bits written as 1 */
	h_wr(R_STATUS_CLR, 1u << HOPS);
	ck_assert_uint_eq(h_rd(R_STATUS), 1u << 0);
	h_wr(R_STATUS_CLR, 0);
	ck_assert_uint_eq(h_rd(R_STATUS), 1u << 0);
	h_wr(R_STATUS_CLR, 1u << 0);
	ck_assert_uint_eq(h_rd(R_STATUS), 0);
}
END_TEST

START_TEST(status_read_to_clear)
{
	h_ctl_start();
	h_wr(R_DMA_MISC, 0); /* single-MSI / old-driver semantics */
	ck_assert_uint_eq(h_rd(R_DMA_MISC), 0);
	request_only();
	ck_assert_uint_eq(h_rd(R_STATUS), 1u << 0 | 1u << HOPS);
	ck_assert_uint_eq(h_rd(R_STATUS), 0);
}
END_TEST

START_TEST(dma_misc_auto_clear_on_signal)
{
	h_ctl_start();
	h_wr(R_DMA_MISC, 1u << 17 | 1u << 2);
	ck_assert_uint_eq(h_rd(R_DMA_MISC), 1u << 17 | 1u << 2);
	request_only();
	ck_assert_uint_eq(H.nirq, 2);
	/* both were signalled: both status bits auto-cleared */
	ck_assert_uint_eq(h_rd(R_STATUS), 0);
	/* RX masked: its bit is not signalled and so not auto-cleared */
	h_wr(R_MASK_CLR, 1u << HOPS);
	{
		struct h_pkt p;

		ck_assert(h_ctl_recv(&p));
	}
	request_only();
	ck_assert_uint_eq(H.nirq, 3);
	ck_assert_uint_eq(h_rd(R_STATUS), 1u << HOPS);
}
END_TEST

START_TEST(ivr_selects_vector)
{
	h_ctl_start();
	/* TX ring 0 -> vector 5, RX ring 0 (index 12 -> 0x38c44 bits 19:16) -> 9 */
	h_wr(R_IVR, (h_rd(R_IVR) & ~0xfu) | 5);
	h_wr(R_IVR + 4, (h_rd(R_IVR + 4) & ~(0xfu << 16)) | 9u << 16);
	ck_assert_uint_eq(h_rd(R_IVR), 5);
	ck_assert_uint_eq(h_rd(R_IVR + 4), 9u << 16);
	H.nirq = 0;
	memset(H.irq_count, 0, sizeof(H.irq_count));
	roundtrip();
	ck_assert_uint_eq(H.irq_count[5], 1);
	ck_assert_uint_eq(H.irq_count[9], 1);
	ck_assert_uint_eq(H.nirq, 2);
}
END_TEST

START_TEST(ivr_data_rings)
{
	/* TX ring 3 -> index 3 (0x38c40 bits 15:12); RX ring 3 -> index 15
	 * (0x38c44 bits 31:28); with a different hop count the RX index moves. */
	const uint64_t txd = MEM_BASE + 0x40000, rxd = MEM_BASE + 0x41000;
	const uint64_t buf = MEM_BASE + 0x50000;
	struct {
		struct odl_link_data d;
		uint8_t pl[16];
	} m;

	h_ctl_start();
	h_configure_router();
	h_link_up(1);
	h_path_rx(8, 3);
	h_path_tx(3, 8);
	h_wr(R_IVR, 7u << 12);
	h_wr(R_IVR + 4, 11u << 28);
	h_wr(R_ENABLE, 1u << 3 | 1u << (3 + HOPS));
	h_tx_start(3, txd, 4, 0);
	h_rx_start(3, rxd, 4, 0, 0, FRAME_MASKS);
	h_desc(rxd, 0, buf, D_POSTED | D_INTERRUPT);
	h_wr(R_RX(3) + 8, 1);
	h_wr(R_STATUS_CLR, 0xffffffff);
	h_clear_records();

	h_desc(txd, 0, buf + 0x1000, 16 | 2u << 12 | 1u << 16 | D_POSTED | D_INTERRUPT);
	h_wr(R_TX(3) + 8, 1u << 16);
	ck_assert_uint_eq(H.nirq, 1);
	ck_assert_uint_eq(H.irq[0], 7);

	memset(&m, 0, sizeof(m));
	m.d.hopid = 8;
	m.d.sof = 1;
	m.d.eof = 2;
	h_cable(ODL_LINK_DATA, &m, sizeof(m));
	ck_assert_uint_eq(H.nirq, 2);
	ck_assert_uint_eq(H.irq[1], 11);
	ck_assert_uint_eq(h_rd(R_STATUS), 1u << 3 | 1u << 15);
}
END_TEST

START_TEST(masked_event_latched_signalled_once)
{
	h_ctl_start();
	h_wr(R_MASK_CLR, 1u << 0); /* TX ring 0 masked */
	ck_assert_uint_eq(h_rd(R_ENABLE), 1u << HOPS);
	h_clear_records();
	roundtrip();
	ck_assert_uint_eq(H.irq_count[0], 0); /* TX: latched, not sent */
	ck_assert_uint_eq(H.irq_count[1], 1);
	/* unmask by read-modify-write (NAPI style): exactly one message */
	h_wr(R_ENABLE, h_rd(R_ENABLE) | 1u);
	ck_assert_uint_eq(H.irq_count[0], 1);
	ck_assert_uint_eq(H.irq[H.nirq - 1], 0);
	/* writing the same value again: no 0->1 edge, nothing */
	h_wr(R_ENABLE, h_rd(R_ENABLE));
	ck_assert_uint_eq(H.irq_count[0], 1);
	/* mask and unmask again without a new event: latch was consumed */
	h_wr(R_MASK_CLR, 1u);
	h_wr(R_ENABLE, h_rd(R_ENABLE) | 1u);
	ck_assert_uint_eq(H.irq_count[0], 1);
	ck_assert_uint_eq(H.nirq, 2);
}
END_TEST

START_TEST(masked_several_events_one_message)
{
	h_ctl_start();
	h_wr(R_MASK_CLR, 1u << HOPS); /* RX ring 0 masked */
	h_clear_records();
	roundtrip();
	roundtrip();
	roundtrip();
	ck_assert_uint_eq(H.irq_count[1], 0);
	ck_assert_uint_eq(H.irq_count[0], 3);
	h_wr(R_ENABLE, h_rd(R_ENABLE) | 1u << HOPS);
	ck_assert_uint_eq(H.irq_count[1], 1);
}
END_TEST

START_TEST(no_storm_when_status_never_cleared)
{
	h_ctl_start();
	h_clear_records();
	for (int i = 0; i < 5; i++)
		roundtrip();
	/* exactly one message per event even though status stays set */
	ck_assert_uint_eq(H.irq_count[0], 5);
	ck_assert_uint_eq(H.irq_count[1], 5);
	ck_assert_uint_eq(H.nirq, 10);
	ck_assert_uint_eq(h_rd(R_STATUS), 1u << 0 | 1u << HOPS);
	/* enable rewrites and a 1->0->1 cycle with status set: no message */
	h_wr(R_ENABLE, h_rd(R_ENABLE));
	h_wr(R_MASK_CLR, 1u << HOPS);
	h_wr(R_ENABLE, h_rd(R_ENABLE) | 1u << HOPS);
	ck_assert_uint_eq(H.nirq, 10);
	ck_assert_uint_eq(nhi_get_stats(H.n)->interrupts, 10);
}
END_TEST

static void overflow_on_ring(unsigned int ring, unsigned int dw,
			     unsigned int bit)
{
	const uint64_t rxd = MEM_BASE + 0x41000;
	struct {
		struct odl_link_data d;
		uint8_t pl[8];
	} m;

	h_ctl_start();
	h_configure_router();
	h_link_up(1);
	h_path_rx(8, ring);
	h_rx_start(ring, rxd, 4, 0, 0, FRAME_MASKS); /* no buffer posted */
	h_wr(R_ENABLE, h_rd(R_ENABLE) | 1u << (ring + HOPS));
	h_wr(R_STATUS_CLR, 0xffffffff);
	h_wr(R_STATUS_CLR + 4, 0xffffffff);
	h_clear_records();
	memset(&m, 0, sizeof(m));
	m.d.hopid = 8;
	m.d.sof = 1;
	m.d.eof = 2;
	h_cable(ODL_LINK_DATA, &m, sizeof(m));
	ck_assert_uint_eq(h_rd(R_STATUS + 4 * dw), 1u << bit);
	ck_assert_uint_eq(h_rd(R_STATUS + 4 * (1 - dw)), 0);
	ck_assert_uint_eq(H.nirq, 0); /* overflow bits have no enable */
	ck_assert_uint_eq(nhi_get_stats(H.n)->rx_overflow, 1);
	ck_assert_uint_eq(nhi_get_stats(H.n)->rx_dropped, 1);
	ck_assert_uint_eq(h_desc_d8(rxd, 0), 0);
}

START_TEST(overflow_status_low)
{
	overflow_on_ring(2, 0, 2 + 2 * HOPS); /* index 26 */
}
END_TEST

START_TEST(overflow_status_second_dword)
{
	overflow_on_ring(9, 1, 9 + 2 * HOPS - 32); /* index 33 -> dw1 bit 1 */
}
END_TEST

START_TEST(irq_counts_stat)
{
	h_ctl_start();
	roundtrip();
	ck_assert_uint_eq(nhi_get_stats(H.n)->interrupts, 2);
}
END_TEST

/* Interrupt moderation (profile irq_throttle = 1): one message per vector
 * per REG_INT_THROTTLE interval; later events coalesce into one message at
 * the end of the interval. */
START_TEST(throttle_coalesces_per_vector)
{
	struct nhi_profile p;

	h_teardown();
	h_default_profile(&p);
	p.irq_throttle = 1;
	h_setup_profile(&p);
	h_ctl_start();
	for (unsigned int v = 0; v < 16; v++)  /* as nhi_enable_int_throttling() */
		h_wr(R_THROTTLE + 4 * v, 500);
	ck_assert_uint_eq(h_rd(R_THROTTLE), 500);
	H.now = 1000000;
	memset(H.irq_count, 0, sizeof(H.irq_count));
	roundtrip();
	ck_assert_uint_eq(H.irq_count[0], 1);
	ck_assert_uint_eq(H.irq_count[1], 1);
	/* two more round trips inside the window: no new messages yet */
	request_only();
	request_only();
	ck_assert_uint_eq(H.irq_count[0], 1);
	ck_assert_uint_eq(H.irq_count[1], 1);
	ck_assert(H.timer_armed[NHI_TIMER_IRQ0 + 0]);
	ck_assert_int_eq(H.timer_deadline[NHI_TIMER_IRQ0 + 1], 1000000 + 500 * 256);
	/* end of the window: exactly one coalesced message per vector */
	h_advance(500 * 256);
	ck_assert_uint_eq(H.irq_count[0], 2);
	ck_assert_uint_eq(H.irq_count[1], 2);
	/* after a quiet interval the next event fires at once */
	h_advance(500 * 256);
	roundtrip();
	ck_assert_uint_eq(H.irq_count[1], 3);
}
END_TEST

/* Without irq_throttle (generic profile) every event fires immediately. */
START_TEST(throttle_off_fires_every_event)
{
	h_ctl_start();
	H.now = 1000000;
	memset(H.irq_count, 0, sizeof(H.irq_count));
	roundtrip();
	roundtrip();
	roundtrip();
	ck_assert_uint_eq(H.irq_count[1], 3);
}
END_TEST

Suite *suite_irq(void)
{
	Suite *s = suite_create("irq");
	TCase *tc = tcase_create("irq");

	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_add_test(tc, enable_plain_readback);
	tcase_add_test(tc, enable_bits_beyond_rings);
	tcase_add_test(tc, mask_clear);
	tcase_add_test(tc, status_set_on_completion_w1c);
	tcase_add_test(tc, status_read_to_clear);
	tcase_add_test(tc, dma_misc_auto_clear_on_signal);
	tcase_add_test(tc, ivr_selects_vector);
	tcase_add_test(tc, throttle_coalesces_per_vector);
	tcase_add_test(tc, throttle_off_fires_every_event);
	tcase_add_test(tc, ivr_data_rings);
	tcase_add_test(tc, masked_event_latched_signalled_once);
	tcase_add_test(tc, masked_several_events_one_message);
	tcase_add_test(tc, no_storm_when_status_never_cleared);
	tcase_add_test(tc, overflow_status_low);
	tcase_add_test(tc, overflow_status_second_dword);
	tcase_add_test(tc, irq_counts_stat);
	suite_add_tcase(s, tc);
	return s;
}
