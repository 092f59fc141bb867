// SPDX-License-Identifier: MIT
/* Hot-plug events and their acknowledgement (nhi-device.md §4.8,
 * router-cm.md §2.1, §2.4, §1.12). */
#include <string.h>

#include "harness.h"

#define MS 1000000LL

static const struct nhi_stats *st(void)
{
	return nhi_get_stats(H.n);
}

static void hp_setup(void)
{
	h_setup();
	h_ctl_start();
	h_configure_router();
	h_clear_records();
}

/* Take every pending RX ring-0 packet; count events per adapter/kind. */
struct evcount {
	unsigned int plug[4], unplug[4], other;
	struct h_pkt last;
};

static struct evcount drain(void)
{
	struct evcount c;
	struct h_pkt p;

	memset(&c, 0, sizeof(c));
	while (h_ctl_recv(&p)) {
		if (p.pdf != 5) {
			c.other++;
			continue;
		}
		c.last = p;
		if ((p.dw[2] & 0x3f) < 4) {
			if (p.dw[2] >> 31)
				c.unplug[p.dw[2] & 0x3f]++;
			else
				c.plug[p.dw[2] & 0x3f]++;
		} else {
			c.other++;
		}
	}
	return c;
}

static void ack(unsigned int adapter, bool unplug)
{
	uint32_t a[3] = { 0, 0, 7u | adapter << 8 | (unplug ? 3u : 2u) << 30 };

	h_ctl_send(3, a, 3);
}

START_TEST(plug_event_format)
{
	static const uint8_t want[16] = {
		0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x10, 0x45, 0xf6, 0xc6,
	};
	struct h_pkt p;

	h_link_up(1);
	ck_assert(h_ctl_recv(&p));
	ck_assert_uint_eq(p.pdf, 5);
	ck_assert_uint_eq(p.sof, 0);
	ck_assert_uint_eq(p.len, 16);   /* 12 bytes + CRC */
	ck_assert_uint_eq(p.d8, 16 | 5u << 12 | D_COMPLETED);
	ck_assert_mem_eq(p.bytes, want, 16);
	/* lane 0 already reads CL0 when the event is seen */
	ck_assert_uint_eq((h_cfg_read1(1, 1, 9) >> 26) & 0xf, 2);
}
END_TEST

START_TEST(plug_events_only_for_lanes)
{
	struct evcount c;

	h_link_up(2);
	c = drain();
	/* exactly one is the goal; duplicates are a known bug (pending.c) */
	ck_assert_uint_ge(c.plug[1], 1);
	ck_assert_uint_le(c.plug[1], 2);
	ck_assert_uint_eq(c.plug[3], 0); /* never for the upstream adapter */
	ck_assert_uint_eq(c.plug[0], 0);
	ck_assert_uint_eq(c.other, 0);
	ck_assert_uint_le(c.plug[2], 1);
}
END_TEST

START_TEST(resent_until_ack)
{
	struct evcount c;

	h_link_up(1);
	c = drain();
	ck_assert_uint_ge(c.plug[1], 1);
	ack(1, false);
	/* lane 1 may have an event too; acknowledge whatever came */
	if (c.plug[2])
		ack(2, false);
	ck_assert_uint_eq(h_ctl_pending(), 0); /* the ACK is not answered */
	h_advance(5000 * MS);
	c = drain();
	ck_assert_uint_eq(c.plug[1], 0);
	ck_assert_uint_eq(c.plug[2], 0);
	ck_assert_uint_eq(st()->guest_errors, 0);
}
END_TEST

START_TEST(resend_timing)
{
	struct evcount c;
	unsigned int resends = 0;

	h_link_up(1);
	c = drain();
	ck_assert_uint_ge(c.plug[1], 1);
	ck_assert(H.timer_armed[NHI_TIMER_HOTPLUG]);
	/* first re-send after the notification timeout (10 ms) */
	h_advance(9 * MS);
	ck_assert_uint_eq(drain().plug[1], 0);
	h_advance(1 * MS);
	ck_assert_uint_eq(drain().plug[1], 1);
	/* keeps going, backing off, never faster than 10 ms, at most 1 s apart */
	for (int i = 0; i < 300; i++) {
		h_advance(10 * MS);
		resends += drain().plug[1];
	}
	ck_assert_uint_ge(resends, 3);
	ck_assert_uint_le(resends, 300);
	h_advance(1000 * MS);
	ck_assert_uint_eq(drain().plug[1], 1);
	h_advance(1000 * MS);
	ck_assert_uint_eq(drain().plug[1], 1);
	ack(1, false);
	ack(2, false);
	h_advance(3000 * MS);
	ck_assert_uint_eq(drain().plug[1], 0);
}
END_TEST

START_TEST(wrong_ack_does_not_stop)
{
	h_link_up(1);
	drain();
	ack(1, true);         /* unplug ACK for a plug event */
	ack(3, false);        /* other adapter */
	{
		uint32_t a[3] = { 0, 1, 0x80000107 }; /* routed elsewhere */

		h_ctl_send(3, a, 3);
	}
	h_advance(10 * MS);
	ck_assert_uint_eq(drain().plug[1], 1);
}
END_TEST

START_TEST(no_event_before_cs3_valid)
{
	struct evcount c;

	h_cfg_write1(2, 0, 3, 0); /* route not valid: no CM configured us */
	h_clear_records();
	h_link_up(1);
	h_advance(3000 * MS);
	c = drain();
	ck_assert_uint_eq(c.plug[1] + c.plug[2], 0);
	ck_assert_uint_eq(H.wakes, 0);
	/* the lane still reads up: the enumeration scan finds it */
	ck_assert_uint_eq((h_cfg_read1(1, 1, 9) >> 26) & 0xf, 2);
}
END_TEST

START_TEST(unplug_event)
{
	static const uint8_t want_dw2[4] = { 0x80, 0, 0, 0x01 };
	struct evcount c;

	h_link_up(1);
	c = drain();
	ack(1, false);
	if (c.plug[2])
		ack(2, false);
	h_link_state(false, 0, 0, 0);
	c = drain();
	ck_assert_uint_ge(c.unplug[1], 1);
	ck_assert_uint_eq(c.last.len, 16);
	ck_assert(c.last.crc_ok);
	ck_assert_uint_eq(c.last.dw[0], 0x80000000);
	ck_assert_uint_eq(c.last.dw[1], 0);
	/* find the lane-0 event bytes */
	{
		struct h_pkt p;
		bool found = false;

		h_link_up(1);
		drain();
		ack(1, false);
		ack(2, false);
		h_link_state(false, 0, 0, 0);
		while (h_ctl_recv(&p))
			if ((p.dw[2] & 0x3f) == 1) {
				ck_assert_mem_eq(p.bytes + 8, want_dw2, 4);
				found = true;
			}
		ck_assert(found);
	}
	/* lane reads CLd */
	ck_assert_uint_eq((h_cfg_read1(1, 1, 9) >> 26) & 0xf, 7);
	/* a plug ACK does not stop the unplug event; the unplug ACK does */
	ack(1, false);
	h_advance(10 * MS);
	ck_assert_uint_eq(drain().unplug[1], 1);
	ack(1, true);
	ack(2, true);
	h_advance(3000 * MS);
	ck_assert_uint_eq(drain().unplug[1], 0);
}
END_TEST

START_TEST(cable_close_is_unplug)
{
	h_link_up(1);
	drain();
	ack(1, false);
	ack(2, false);
	nhi_cable_connected(H.n, false);
	ck_assert_uint_ge(drain().unplug[1], 1);
	ck_assert_uint_eq((h_cfg_read1(1, 1, 9) >> 26) & 0xf, 7);
}
END_TEST

START_TEST(ring0_stopped_wakes)
{
	struct evcount c;

	/* ring 0 stopped (runtime suspend: RX first, then TX) */
	h_ring_stop(true, 0);
	h_ring_stop(false, 0);
	h_link_up(1);
	ck_assert_uint_ge(H.wakes, 1);
	ck_assert_uint_eq(st()->wakes, H.wakes);
	/* still asleep a second later: asked again */
	{
		unsigned int w = H.wakes;

		h_advance(1000 * MS);
		ck_assert_uint_gt(H.wakes, w);
	}
	/* resume: ring 0 restarted; the pending event is delivered */
	h_ctl_start();
	h_advance(10 * MS);
	c = drain();
	ck_assert_uint_eq(c.plug[1], 1);
}
END_TEST

START_TEST(dhp_suppresses)
{
	struct evcount c;

	h_cfg_write1(1, 1, 5, h_cfg_read1(1, 1, 5) | 0x80000000);
	h_cfg_write1(1, 2, 5, h_cfg_read1(1, 2, 5) | 0x80000000);
	h_clear_records();
	h_link_up(1);
	h_advance(3000 * MS);
	c = drain();
	ck_assert_uint_eq(c.plug[1] + c.plug[2], 0);
	ck_assert_uint_eq(H.wakes, 0);
	/* DHP on lane 0 only: lane 0 quiet */
	h_link_state(false, 0, 0, 0);
	c = drain();
	ck_assert_uint_eq(c.unplug[1], 0);
}
END_TEST

START_TEST(no_event_for_unchanged_state)
{
	h_link_up(1);
	drain();
	ack(1, false);
	ack(2, false);
	h_link_up(1); /* same state again */
	ck_assert_uint_eq(h_ctl_pending(), 0);
}
END_TEST

START_TEST(resend_interval_floor)
{
	/* a notification timeout below 10 ms is not used as such */
	h_cfg_write1(2, 0, 4, (h_cfg_read1(2, 0, 4) & ~0xffu) | 1);
	h_link_up(1);
	drain();
	h_advance(2 * MS);
	ck_assert_uint_eq(drain().plug[1], 0);
	h_advance(8 * MS);
	ck_assert_uint_eq(drain().plug[1], 1);
}
END_TEST

START_TEST(cm_gone_stops_resending)
{
	h_link_up(1);
	drain();
	/* the router is no longer configured (CM reset it): stop */
	h_cfg_write1(2, 0, 3, 0);
	h_advance(10 * MS);
	ck_assert_uint_eq(drain().plug[1], 0);
	h_cfg_write1(2, 0, 3, 0x80000000);
	h_advance(3000 * MS);
	ck_assert_uint_eq(drain().plug[1], 0);
}
END_TEST

/* Downstream port reset (PORT_CS_19.DPR, used by newer kernels at start):
 * the port's link drops while DPR is set and comes back when it clears,
 * with unplug and plug events, although the cable stayed plugged. */
START_TEST(port_reset_bounces_link)
{
	struct evcount c;

	h_link_up(2);
	drain();
	ack(1, false);
	ack(2, false);
	ck_assert_uint_eq((h_cfg_read1(1, 1, 9) >> 26) & 0xf, 2);
	h_cfg_write1(1, 1, 0x23, h_cfg_read1(1, 1, 0x23) | 1u);
	ck_assert_uint_eq(h_cfg_read1(1, 1, 0x23) & 1u, 1);
	ck_assert_uint_eq((h_cfg_read1(1, 1, 9) >> 26) & 0xf, 7);
	/* the first copy went past the config helpers; it is re-sent */
	h_advance(10 * MS);
	c = drain();
	ck_assert_uint_ge(c.unplug[1], 1);
	ack(1, true);
	ack(2, true);
	h_cfg_write1(1, 1, 0x23, h_cfg_read1(1, 1, 0x23) & ~1u);
	ck_assert_uint_eq((h_cfg_read1(1, 1, 9) >> 26) & 0xf, 2);
	h_advance(10 * MS);
	c = drain();
	ck_assert_uint_ge(c.plug[1], 1);
}
END_TEST

Suite *suite_hotplug(void)
{
	Suite *s = suite_create("hotplug");
	TCase *tc = tcase_create("hotplug");

	tcase_add_checked_fixture(tc, hp_setup, h_teardown);
	tcase_add_test(tc, plug_event_format);
	tcase_add_test(tc, plug_events_only_for_lanes);
	tcase_add_test(tc, resent_until_ack);
	tcase_add_test(tc, resend_timing);
	tcase_add_test(tc, wrong_ack_does_not_stop);
	tcase_add_test(tc, no_event_before_cs3_valid);
	tcase_add_test(tc, unplug_event);
	tcase_add_test(tc, port_reset_bounces_link);
	tcase_add_test(tc, cable_close_is_unplug);
	tcase_add_test(tc, ring0_stopped_wakes);
	tcase_add_test(tc, dhp_suppresses);
	tcase_add_test(tc, no_event_for_unchanged_state);
	tcase_add_test(tc, resend_interval_floor);
	tcase_add_test(tc, cm_gone_stops_resending);
	suite_add_tcase(s, tc);
	return s;
}
