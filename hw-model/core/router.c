// SPDX-License-Identifier: MIT
/*
 * The host router behind the NHI: router, adapter and path configuration
 * spaces, router operations, the control-packet responder, hot-plug
 * notifications, XDomain forwarding and data-path routing over the cable.
 *
 * Topology: adapter 0 control, 1 and 2 the two lanes of USB4 port 1,
 * 3 the host interface (NHI) adapter, which is the upstream adapter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nhi_priv.h"

#define RTR_CS1_UPSTREAM_SHIFT 8
#define RTR_CS1_UPSTREAM_MASK  (0x3fu << 8)
#define RTR_CS1_DEPTH_MASK     (0x7u << 20)
#define RTR_CS3_VALID          (1u << 31)
#define RTR_CS5_SLP            (1u << 0)
#define RTR_CS6_SLPR           (1u << 0)
#define RTR_CS26_OV            (1u << 31)
#define RTR_CS26_ONS           (1u << 30)

#define ADP_CS4_LCK            (1u << 31)
#define ADP_CS5_DHP            (1u << 31)
#define PORT_CS1_PND           (1u << 31)
#define PORT_CS1_NR            (1u << 25)
#define PORT_CS19_DPR          (1u << 0)
#define PORT_CS19_PC           (1u << 3)
#define PORT_CS19_PID          (1u << 4)
#define PORT_CS19_START_ASYM   (1u << 24)
#define PORT_CS18_CSA          (1u << 22)
#define LANE1_TGT_ASYM_SHIFT   6
#define LANE1_TGT_ASYM_MASK    (0x3u << 6)

/* LANE_ADP_CS_1 current speed codes and width encodings (USB4 v2) */
#define SPEED_GEN2             0x8u
#define SPEED_GEN3             0x4u
#define SPEED_GEN4             0x2u
#define WIDTH_SINGLE           1u
#define WIDTH_DUAL             2u
#define WIDTH_ASYM_TX          4u
#define WIDTH_ASYM_RX          8u

#define HOP_VALID              (1u << 31)
#define HOP_PENDING            (1u << 28)

#define USB4_OP_BUFFER_ALLOC   0x33u
#define USB4_BA_MAX_HI         5u

#define HOTPLUG_RESEND_MIN_NS  10000000LL   /* 10 ms */
#define HOTPLUG_RESEND_MAX_NS  1000000000LL /* 1 s */

static const char *const space_names[] = { "path", "adapter", "router",
					   "counters" };

static bool lane_present(const struct nhi *n, unsigned int a)
{
	if (a == ADP_LANE0)
		return true;
	return a == ADP_LANE1 && n->p->lanes >= 2;
}

static bool is_lane(const struct nhi *n, unsigned int a)
{
	return (a == ADP_LANE0 || a == ADP_LANE1) && lane_present(n, a);
}

/* ------------------------------------------------------------------ */
/* cable output                                                         */

void router_send_msg(struct nhi *n, uint16_t type, const void *body,
		     uint32_t len, const void *extra, uint32_t extra_len)
{
	uint8_t buf[sizeof(struct odl_link_hdr) + ODL_LINK_MAX_BODY];
	struct odl_link_hdr h;

	if (!n->cable_connected || !n->ops->cable_tx)
		return;
	if (len + extra_len > ODL_LINK_MAX_BODY)
		return;
	h.len = len + extra_len;
	h.type = type;
	h.flags = 0;
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), body, len);
	if (extra_len)
		memcpy(buf + sizeof(h) + len, extra, extra_len);
	n->ops->cable_tx(n->opaque, buf, sizeof(h) + h.len);
}

/* ------------------------------------------------------------------ */
/* lanes                                                                */

/* Target width, bits 5:4 (the USB4 v2 asymmetric target is bits 7:6). */
static uint32_t lane_target_width(const struct nhi *n, unsigned int a)
{
	return (n->adp[a].cs[ADP_LANE_CAP + 1] >> LANE1_TGT_WIDTH_SHIFT) & 3;
}

/* Current speed code for the trained rate: the profile's own code at its
 * top rate, the USB4 codes below it (a retrain to a lower speed shows). */
static uint32_t link_speed_code(const struct nhi *n)
{
	if (n->link_gbps >= n->p->lane_gbps)
		return n->p->speed_code;
	if (n->link_gbps >= 40)
		return SPEED_GEN4;
	return n->link_gbps >= 20 ? SPEED_GEN3 : SPEED_GEN2;
}

/* Gen 4 links train bonded (both lanes, no bonding handshake). */
static bool link_gen4(const struct nhi *n)
{
	return n->link_up && link_speed_code(n) == SPEED_GEN4;
}

static bool lane_disabled(const struct nhi *n, unsigned int a)
{
	return n->adp[a].cs[ADP_LANE_CAP + 1] & LANE1_LD;
}

static bool link_bonded(const struct nhi *n)
{
	if (link_gen4(n))
		return n->p->lanes >= 2 && n->link_lanes >= 2;
	return n->link_up && n->p->lanes >= 2 && n->link_lanes >= 2 &&
	       n->peer_lane_valid && lane_target_width(n, ADP_LANE0) == 3 &&
	       !lane_disabled(n, ADP_LANE1) && n->peer_lane.target_width == 3 &&
	       n->peer_lane.lane1_enabled;
}

static uint32_t lane_cs1_read(const struct nhi *n, unsigned int a)
{
	uint32_t v = n->adp[a].cs[ADP_LANE_CAP + 1] & ~LANE1_RO_MASK;
	uint32_t state, speed = 0, width = 0;

	if (lane_disabled(n, a))
		state = LS_DISABLED;
	else if (n->link_up && (a == ADP_LANE0 || n->link_lanes >= 2))
		state = LS_CL0;
	else
		state = LS_CLD;
	if (state == LS_CL0) {
		uint8_t peer_asym = n->peer_lane_valid ?
				    (n->peer_lane.target_width >> 2) & 3 : 0;

		speed = link_speed_code(n);
		width = link_bonded(n) ? WIDTH_DUAL : WIDTH_SINGLE;
		if (width == WIDTH_DUAL && link_gen4(n)) {
			/* asymmetric: 3 transmitters on one side */
			if (n->asym == 1 || peer_asym == 2)
				width = WIDTH_ASYM_TX;
			else if (n->asym == 2 || peer_asym == 1)
				width = WIDTH_ASYM_RX;
		}
	}
	return v | speed << LANE1_CUR_SPEED_SHIFT |
	       width << LANE1_CUR_WIDTH_SHIFT | state << LANE1_STATE_SHIFT;
}

static void send_lane_info(struct nhi *n)
{
	struct odl_link_lane l;

	memset(&l, 0, sizeof(l));
	/* bits 1:0 the target width; bits 3:2 the asymmetric direction this
	 * side runs (1: it transmits on three lanes, 2: it receives on three) */
	l.target_width = (uint8_t)(lane_target_width(n, ADP_LANE0) |
				   (uint32_t)n->asym << 2);
	l.lane1_enabled = lane_present(n, ADP_LANE1) &&
			  !lane_disabled(n, ADP_LANE1);
	l.bonded = !!(n->adp[ADP_LANE0].cs[ADP_LANE_CAP + 1] & LANE1_LB);
	router_send_msg(n, ODL_LINK_LANE, &l, sizeof(l), NULL, 0);
}

/* ------------------------------------------------------------------ */
/* hot plug                                                             */

static void hotplug_arm(struct nhi *n, int64_t delay)
{
	if (n->ops->timer_arm && n->ops->now) {
		n->ops->timer_arm(n->opaque, NHI_TIMER_HOTPLUG,
				  n->ops->now(n->opaque) + delay);
		n->hotplug_timer_armed = true;
	}
}

static int64_t hotplug_interval(const struct nhi *n, unsigned int tries)
{
	int64_t base = (int64_t)(n->rtr[4] & 0xff) * 1000000LL;
	int64_t d;

	if (base < HOTPLUG_RESEND_MIN_NS)
		base = HOTPLUG_RESEND_MIN_NS;
	d = base << (tries < 7 ? tries : 7);
	return d > HOTPLUG_RESEND_MAX_NS ? HOTPLUG_RESEND_MAX_NS : d;
}

static bool events_allowed(const struct nhi *n, unsigned int a)
{
	/* only a router that a connection manager configured notifies */
	if (!(n->rtr[3] & RTR_CS3_VALID))
		return false;
	return !(n->adp[a].cs[5] & ADP_CS5_DHP);
}

static void send_event(struct nhi *n, unsigned int a, bool unplug)
{
	struct ctl_pkt p;
	uint8_t buf[32];
	size_t len;

	p.pdf = PDF_EVENT;
	p.ndw = 3;
	p.dw[0] = 0x80000000u;
	p.dw[1] = 0;
	p.dw[2] = (a & 0x3f) | (unplug ? 1u << 31 : 0);
	len = ctl_build(&p, buf, sizeof(buf));
	nhi_log(n, NHI_LOG_TRACE, "ctl -> host: %s event adapter %u",
		unplug ? "unplug" : "plug", a);
	n->st.ctl_rx++;
	nhi_rx_deliver(n, 0, 0, PDF_EVENT, buf, (uint32_t)len, 0);
}

void router_hotplug_tick(struct nhi *n)
{
	bool any = false;

	for (unsigned int a = 1; a < NUM_ADAPTERS; a++) {
		if (!n->plug[a].pending)
			continue;
		if (!events_allowed(n, a)) {
			/* nobody to tell: the scan at enumeration finds it */
			n->plug[a].pending = false;
			continue;
		}
		any = true;
		if (nhi_ctl_rx_running(n))
			send_event(n, a, n->plug[a].unplug);
	}
	if (!any) {
		n->hotplug_tries = 0;
		return;
	}
	if (!nhi_ctl_rx_running(n)) {
		n->st.wakes++;
		if (n->ops->wake)
			n->ops->wake(n->opaque);
		hotplug_arm(n, HOTPLUG_RESEND_MAX_NS);
		return;
	}
	hotplug_arm(n, hotplug_interval(n, n->hotplug_tries));
	if (n->hotplug_tries < 16)
		n->hotplug_tries++;
}

static void queue_event(struct nhi *n, unsigned int a, bool unplug)
{
	if (!n->adp[a].present || !events_allowed(n, a))
		return;
	n->plug[a].pending = true;
	n->plug[a].unplug = unplug;
	n->hotplug_tries = 0;
}

void router_ctl_ring_started(struct nhi *n)
{
	for (unsigned int a = 1; a < NUM_ADAPTERS; a++) {
		if (n->plug[a].pending) {
			n->hotplug_tries = 0;
			/* give the driver time to post its buffers */
			hotplug_arm(n, HOTPLUG_RESEND_MIN_NS);
			return;
		}
	}
}

static void handle_ack(struct nhi *n, const struct ctl_pkt *p)
{
	uint32_t d = p->dw[2];
	unsigned int code = d & 0xf, port = (d >> 8) & 0x3f, pg = d >> 30;

	if (code != ERR_ACK_PLUG) {
		nhi_log(n, NHI_LOG_TRACE, "ctl: error packet code %u from host ignored",
			code);
		return;
	}
	if (ctl_route(p) != 0 || port >= NUM_ADAPTERS) {
		nhi_log(n, NHI_LOG_TRACE, "ctl: ack for unknown port %u ignored",
			port);
		return;
	}
	if (n->plug[port].pending &&
	    (pg == 3) == n->plug[port].unplug) {
		n->plug[port].pending = false;
		nhi_log(n, NHI_LOG_TRACE, "ctl: %s event adapter %u acknowledged",
			pg == 3 ? "unplug" : "plug", port);
	}
}

/* ------------------------------------------------------------------ */
/* link                                                                 */

static void credits_reset(struct nhi *n)
{
	memset(n->tx_credits, 0, PATH_MAX_HOPS * sizeof(*n->tx_credits));
	memset(n->tx_credit_active, 0, PATH_MAX_HOPS);
	for (unsigned int i = 0; i < NHI_MAX_HOPS; i++) {
		n->rx[i].credits_granted = 0;
		n->rx[i].credits_used = 0;
		n->rx[i].credit_sync_due = true;
	}
}

/* Downstream port reset (PORT_CS_19.DPR) holds the port's link down. */
static bool port_in_reset(const struct nhi *n)
{
	return (n->adp[ADP_LANE0].cs[ADP_USB4_CAP + 0x13] & PORT_CS19_DPR) ||
	       n->hrr_hold;
}

/*
 * Apply the link state the port sees: the cable's state, unless the port
 * is held in reset. Transitions send lane information, credit grants and
 * hot-plug events like a real port.
 */
static void link_apply(struct nhi *n)
{
	bool up = n->phys_up && !port_in_reset(n);
	uint8_t lanes = up ? n->phys_lanes : 0;
	uint32_t gbps = up ? n->phys_gbps : 0;
	bool was = n->link_up;

	if (up == was && lanes == n->link_lanes && gbps == n->link_gbps)
		return;
	nhi_log(n, NHI_LOG_INFO, "link %s (%u lane%s x %u Gb/s, peer uid 0x%016llx)%s",
		up ? "up" : "down", lanes, lanes == 1 ? "" : "s", gbps,
		(unsigned long long)n->phys_peer_uid,
		n->phys_up && !up ? " (port reset)" : "");
	n->link_up = up;
	n->link_lanes = lanes;
	n->link_gbps = gbps;
	n->peer_uid = up ? n->phys_peer_uid : 0;
	/* a link trains symmetric; asymmetry is asked for afterwards */
	n->asym = 0;
	if (!up)
		n->peer_lane_valid = false;
	credits_reset(n);
	if (up) {
		/* a retrain while up restarts credit accounting too */
		send_lane_info(n);
		nhi_e2e_update_all(n);
	}
	if (up == was)
		return;
	queue_event(n, ADP_LANE0, !up);
	if (lane_present(n, ADP_LANE1))
		queue_event(n, ADP_LANE1, !up);
	router_hotplug_tick(n);
	if (up)
		nhi_tx_kick_all(n);
}

void router_link_state(struct nhi *n, bool up, uint8_t lanes, uint32_t gbps,
		       uint64_t peer_uid)
{
	n->phys_up = up;
	n->phys_lanes = up ? lanes : 0;
	n->phys_gbps = up ? gbps : 0;
	n->phys_peer_uid = up ? peer_uid : 0;
	link_apply(n);
}

/* ------------------------------------------------------------------ */
/* configuration spaces                                                 */

static void router_op(struct nhi *n, uint32_t cmd)
{
	uint32_t op = cmd & 0xffff;

	if (op == USB4_OP_BUFFER_ALLOC) {
		memset(&n->rtr[9], 0, 16 * sizeof(uint32_t));
		n->rtr[9] = USB4_BA_MAX_HI | (uint32_t)n->p->ba_max_hi << 16;
		n->rtr[25] = 1;
		n->rtr[26] = op;
	} else {
		/* DROM, NVM and DP resource operations are not supported */
		n->rtr[26] = op | RTR_CS26_ONS;
	}
	nhi_log(n, NHI_LOG_TRACE, "router operation 0x%x -> 0x%08x", op,
		n->rtr[26]);
}

static uint32_t rtr_read(const struct nhi *n, unsigned int off)
{
	uint32_t v = n->rtr[off];

	if (off == 6)
		v = (v & ~RTR_CS6_SLPR) |
		    ((n->rtr[5] & RTR_CS5_SLP) ? RTR_CS6_SLPR : 0);
	return v;
}

static void rtr_write(struct nhi *n, unsigned int off, uint32_t v)
{
	const unsigned int tmu = RTR_TMU_CAP;

	switch (off) {
	case 1:
		n->rtr[1] = (n->rtr[1] & ~(RTR_CS1_UPSTREAM_MASK |
					   RTR_CS1_DEPTH_MASK)) |
			    (v & (RTR_CS1_UPSTREAM_MASK | RTR_CS1_DEPTH_MASK));
		return;
	case 3:
		n->rtr[3] = v;
		if ((v & RTR_CS3_VALID) && n->hrr_hold) {
			/* enumerated after a host router reset: the port
			 * trains now and reports it with a plug event */
			n->hrr_hold = false;
			link_apply(n);
		}
		return;
	case 2:
	case 5:
		n->rtr[off] = v;
		return;
	case 4:
		n->rtr[4] = (n->rtr[4] & 0xff000000u) | (v & 0x00ffffffu);
		return;
	case 26:
		if (v & RTR_CS26_OV)
			router_op(n, v);
		return;
	default:
		break;
	}
	if (off >= 9 && off <= 25) {
		n->rtr[off] = v;
	} else if (off == tmu) {
		n->rtr[off] = (n->rtr[off] & 0xffff) | (v & 0xffff0000u);
	} else if (off > tmu && off < tmu + 0x1a) {
		n->rtr[off] = v;
	}
	/* everything else is read-only */
}

static uint32_t adp_read(const struct nhi *n, unsigned int a, unsigned int off)
{
	if (is_lane(n, a) && off == ADP_LANE_CAP + 1)
		return lane_cs1_read(n, a);
	return n->adp[a].cs[off];
}

static void adp_write(struct nhi *n, unsigned int a, unsigned int off,
		      uint32_t v)
{
	uint32_t *cs = n->adp[a].cs;

	if (off == 4) {
		cs[4] = (cs[4] & ~(ADP_CS4_LCK | 0x3ffu)) |
			(v & (ADP_CS4_LCK | 0x3ffu));
		return;
	}
	if (off == 5) {
		cs[5] = (cs[5] & ~(ADP_CS5_DHP | 0x7fu << 22)) |
			(v & (ADP_CS5_DHP | 0x7fu << 22));
		return;
	}
	if (!is_lane(n, a))
		return;
	if (off == ADP_LANE_CAP + 1) {
		uint32_t old = cs[off];

		cs[off] = (v & ~LANE1_RO_MASK);
		if ((old ^ cs[off]) & (LANE1_TGT_WIDTH_MASK | LANE1_LD |
				       LANE1_LB))
			send_lane_info(n);
		return;
	}
	if (a != ADP_LANE0)
		return;
	if (off == ADP_USB4_CAP + 1) {
		/* sideband: no retimers or partner registers respond */
		if (v & PORT_CS1_PND)
			v = (v & ~PORT_CS1_PND) | PORT_CS1_NR;
		cs[off] = v;
	} else if (off >= ADP_USB4_CAP + 2 && off <= ADP_USB4_CAP + 0x11) {
		cs[off] = v;
	} else if (off == ADP_USB4_CAP + 0x13) {
		cs[off] = v & (PORT_CS19_DPR | PORT_CS19_PC | PORT_CS19_PID |
			       7u << 16);
		if ((v & PORT_CS19_START_ASYM) && n->p->asym_capable &&
		    link_gen4(n) && link_bonded(n)) {
			/* symmetry change per the asymmetric target width;
			 * completes at once (START_ASYM and PORT_CS_18.TIP
			 * read 0), the partner is told over the link */
			uint32_t t = (cs[ADP_LANE_CAP + 1] & LANE1_TGT_ASYM_MASK) >>
				     LANE1_TGT_ASYM_SHIFT;

			n->asym = t == 1 ? 1 : t == 2 ? 2 : 0;
			nhi_log(n, NHI_LOG_INFO, "link %s", n->asym == 1 ?
				"asymmetric, 3 lanes transmit" : n->asym == 2 ?
				"asymmetric, 3 lanes receive" : "symmetric");
			send_lane_info(n);
		}
		link_apply(n);
	}
}

static uint32_t *path_dw(struct nhi *n, unsigned int a, unsigned int off)
{
	struct path_entry *e = &n->adp[a].path[off / 2];

	return off % 2 ? &e->dw1 : &e->dw0;
}

static void path_write(struct nhi *n, unsigned int a, unsigned int off,
		       uint32_t v)
{
	uint32_t *d = path_dw(n, a, off);
	unsigned int hop = off / 2;
	uint32_t old = n->adp[a].path[hop].dw0;
	bool was = old & HOP_VALID;

	if (off % 2)
		v &= ~HOP_PENDING;
	*d = v;
	if (off % 2 == 0) {
		bool now = v & HOP_VALID;

		if (a == ADP_NHI && was && !now) {
			/* the HopID the path had, not what the write left */
			unsigned int oh = old & 0x7ff;

			/* credits belong to the path and go with it; those
			 * granted before activation are kept, since the peer
			 * may enable its receive side first */
			n->tx_credits[oh] = 0;
			n->tx_credit_active[oh] = 0;
		}
		if (is_lane(n, a) && now && !was) {
			unsigned int ring = v & 0x7ff;

			if ((((v >> 11) & 0x3f) == ADP_NHI) &&
			    ring < NHI_MAX_HOPS) {
				n->rx[ring].credits_granted = 0;
				n->rx[ring].credits_used = 0;
				n->rx[ring].credit_sync_due = true;
				nhi_e2e_update(n, ring);
			}
		}
	}
}

int router_out_hop_for_ring(const struct nhi *n, unsigned int r)
{
	const struct adapter *nh = &n->adp[ADP_NHI];
	uint32_t d;

	if (r > nh->max_hop)
		return -1;
	d = nh->path[r].dw0;
	return (d & HOP_VALID) ? (int)(d & 0x7ff) : -1;
}

int router_in_hop_for_ring(const struct nhi *n, unsigned int r)
{
	const struct adapter *l = &n->adp[ADP_LANE0];

	for (unsigned int h = 1; h <= l->max_hop; h++) {
		uint32_t d = l->path[h].dw0;

		if ((d & HOP_VALID) && ((d >> 11) & 0x3f) == ADP_NHI &&
		    (d & 0x7ff) == r)
			return (int)h;
	}
	return -1;
}

/* ------------------------------------------------------------------ */
/* control packets                                                      */

static void ctl_reply(struct nhi *n, struct ctl_pkt *p)
{
	uint8_t buf[4 * CTL_MAX_DWORDS];
	size_t len = ctl_build(p, buf, sizeof(buf));

	if (!len)
		return;
	n->st.ctl_rx++;
	nhi_rx_deliver(n, 0, 0, p->pdf, buf, (uint32_t)len, 0);
}

static void ctl_error(struct nhi *n, uint64_t route, unsigned int code,
		      unsigned int port)
{
	struct ctl_pkt e;

	e.pdf = PDF_ERROR;
	e.ndw = 3;
	e.dw[0] = 0x80000000u | (uint32_t)((route >> 32) & 0x3fffff);
	e.dw[1] = (uint32_t)route;
	e.dw[2] = (code & 0xf) | (port & 0x3f) << 8;
	nhi_log(n, NHI_LOG_TRACE, "ctl -> host: error code %u port %u route 0x%llx",
		code, port, (unsigned long long)route);
	ctl_reply(n, &e);
}

static bool cfg_range_ok(const struct nhi *n, unsigned int space,
			 unsigned int port, unsigned int off, unsigned int len)
{
	unsigned int limit;

	switch (space) {
	case SPACE_RTR:
		limit = RTR_SPACE_DWORDS;
		break;
	case SPACE_ADP:
		if (port == 0 || port >= NUM_ADAPTERS || !n->adp[port].present)
			return false;
		limit = ADP_SPACE_DWORDS;
		break;
	case SPACE_PATH:
		if (port == 0 || port >= NUM_ADAPTERS || !n->adp[port].present)
			return false;
		limit = 2u * (n->adp[port].max_hop + 1u);
		break;
	default:
		return false;
	}
	return off < limit && len <= limit - off;
}

static uint32_t cfg_read1(struct nhi *n, unsigned int space, unsigned int port,
			  unsigned int off)
{
	if (space == SPACE_RTR)
		return rtr_read(n, off);
	if (space == SPACE_ADP)
		return adp_read(n, port, off);
	return *path_dw(n, port, off);
}

static void cfg_write1(struct nhi *n, unsigned int space, unsigned int port,
		       unsigned int off, uint32_t v)
{
	if (space == SPACE_RTR)
		rtr_write(n, off, v);
	else if (space == SPACE_ADP)
		adp_write(n, port, off, v);
	else
		path_write(n, port, off, v);
}

/* Does a write of @len dwords at @off of @port's path space make an entry
 * valid that is not? (dw0 of each entry holds the Valid bit) */
static bool path_write_activates(const struct nhi *n, unsigned int port,
				 unsigned int off, unsigned int len,
				 const uint32_t *v)
{
	for (unsigned int i = 0; i < len; i++) {
		unsigned int o = off + i;

		if (o % 2 == 0 && (v[i] & HOP_VALID) &&
		    !(n->adp[port].path[o / 2].dw0 & HOP_VALID))
			return true;
	}
	return false;
}

static void handle_cfg(struct nhi *n, const struct ctl_pkt *p)
{
	uint64_t route = ctl_route(p);
	uint32_t addr = p->dw[2];
	unsigned int off = addr & 0x1fff, len = (addr >> 13) & 0x3f;
	unsigned int port = (addr >> 19) & 0x3f, space = (addr >> 25) & 3;
	bool wr = p->pdf == PDF_WRITE;
	struct ctl_pkt r;

	nhi_log(n, NHI_LOG_TRACE, "ctl <- host: %s route 0x%llx %s port %u off 0x%x len %u seq %u",
		wr ? "write" : "read", (unsigned long long)route,
		space_names[space], port, off, len, (addr >> 27) & 3);
	if (route != 0) {
		unsigned int first = route & 0xff;

		if (!is_lane(n, first)) {
			ctl_error(n, route, ERR_NO_SUCH_PORT, first);
		} else if (n->link_up) {
			/* the router behind this lane is another host's:
			 * it belongs to another domain */
			ctl_error(n, route, ERR_LOOP, first);
		} else {
			ctl_error(n, route, ERR_PORT_NOT_CONNECTED, first);
		}
		return;
	}
	if (wr && p->ndw != 3 + len) {
		nhi_guest_error(n, "write of %u dwords carries %u", len,
				p->ndw - 3);
		return;
	}
	if (!wr && p->ndw != 3) {
		nhi_guest_error(n, "read request of %u dwords", p->ndw);
		return;
	}
	if (len > CTL_MAX_DWORDS - 4 ||
	    !cfg_range_ok(n, space, port, off, len)) {
		ctl_error(n, route, ERR_INVALID_SPACE, port);
		return;
	}
	if (wr && space == SPACE_PATH && n->f_path_refuse &&
	    path_write_activates(n, port, off, len, &p->dw[3])) {
		/* fault: the router is busy (locked), nothing is written */
		n->f_path_refuse--;
		n->st.path_refused++;
		nhi_log(n, NHI_LOG_INFO, "fault: path activation at port %u off 0x%x refused (%llu more)",
			port, off, (unsigned long long)n->f_path_refuse);
		ctl_error(n, route, ERR_LOCK, port);
		return;
	}
	r.pdf = p->pdf;
	r.dw[0] = 0x80000000u | (p->dw[0] & 0x3fffff);
	r.dw[1] = p->dw[1];
	r.dw[2] = (addr & 0x1fffffffu & ~(0x3fu << 19)) | ADP_NHI << 19;
	if (wr) {
		for (unsigned int i = 0; i < len; i++)
			cfg_write1(n, space, port, off + i, p->dw[3 + i]);
		r.ndw = 3;
	} else {
		for (unsigned int i = 0; i < len; i++)
			r.dw[3 + i] = cfg_read1(n, space, port, off + i);
		r.ndw = 3 + len;
	}
	ctl_reply(n, &r);
}

void router_ctl_from_host(struct nhi *n, uint8_t pdf, const uint8_t *buf,
			  uint32_t len)
{
	struct ctl_pkt p;
	int rc = ctl_parse(&p, pdf, buf, len);

	if (rc == -1) {
		nhi_guest_error(n, "control packet of %u bytes dropped", len);
		return;
	}
	if (rc == -2) {
		n->st.ctl_bad_crc++;
		nhi_guest_error(n, "control packet (PDF %u) with bad CRC dropped",
				pdf);
		return;
	}
	if ((pdf == PDF_READ || pdf == PDF_WRITE || pdf == PDF_ERROR) &&
	    p.ndw < 3) {
		nhi_guest_error(n, "control packet PDF %u of %u dwords dropped",
				pdf, p.ndw);
		return;
	}
	switch (pdf) {
	case PDF_READ:
	case PDF_WRITE:
		handle_cfg(n, &p);
		break;
	case PDF_ERROR:
		handle_ack(n, &p);
		break;
	case PDF_XDOMAIN_REQ:
	case PDF_XDOMAIN_RESP: {
		uint64_t route = ctl_route(&p);
		unsigned int first = route & 0xff;

		if (!is_lane(n, first)) {
			nhi_guest_error(n, "XDomain packet to non-lane route 0x%llx dropped",
					(unsigned long long)route);
			break;
		}
		if (!n->link_up) {
			ctl_error(n, route, ERR_PORT_NOT_CONNECTED, first);
			break;
		}
		struct odl_link_ctrl c;

		memset(&c, 0, sizeof(c));
		c.pdf = pdf;
		n->st.xdomain_fwd++;
		nhi_log(n, NHI_LOG_TRACE, "ctl: XDomain PDF %u (%u bytes) to peer",
			pdf, len);
		router_send_msg(n, ODL_LINK_CTRL, &c, sizeof(c), buf, len);
		break;
	}
	default:
		nhi_log(n, NHI_LOG_TRACE, "ctl: PDF %u from host ignored", pdf);
		break;
	}
}

/* ------------------------------------------------------------------ */
/* data path                                                            */

bool router_tx_frame(struct nhi *n, unsigned int r, uint8_t sof, uint8_t eof,
		     const uint8_t *data, uint32_t len, bool dry_run)
{
	const struct adapter *nh = &n->adp[ADP_NHI];
	uint32_t d;
	unsigned int oa, oh;

	if (r > nh->max_hop)
		goto drop;
	d = nh->path[r].dw0;
	oa = (d >> 11) & 0x3f;
	oh = d & 0x7ff;
	if (!(d & HOP_VALID) || !is_lane(n, oa) || !n->link_up)
		goto drop;
	if (n->tx_credit_active[oh] && n->tx_credits[oh] == 0)
		return false;
	if (dry_run)
		return true;
	if (n->tx_credit_active[oh])
		n->tx_credits[oh]--;
	{
		struct odl_link_data f;

		memset(&f, 0, sizeof(f));
		f.hopid = (uint16_t)oh;
		f.sof = sof;
		f.eof = eof;
		router_send_msg(n, ODL_LINK_DATA, &f, sizeof(f), data, len);
	}
	return true;
drop:
	if (!dry_run) {
		n->st.tx_dropped++;
		nhi_log(n, NHI_LOG_TRACE, "TX ring %u: no path/link, frame dropped",
			r);
	}
	return true;
}

static void cable_ctrl(struct nhi *n, const uint8_t *body, uint32_t len)
{
	const struct odl_link_ctrl *c = (const void *)body;
	struct ctl_pkt p;
	uint8_t buf[4 * CTL_MAX_DWORDS];
	size_t blen;

	if (len < sizeof(*c) || (c->pdf != PDF_XDOMAIN_REQ &&
				 c->pdf != PDF_XDOMAIN_RESP)) {
		n->st.cable_errors++;
		nhi_log(n, NHI_LOG_ERROR, "cable: unexpected control message dropped");
		return;
	}
	if (ctl_parse(&p, c->pdf, body + sizeof(*c), len - sizeof(*c)) ||
	    p.ndw < 3) {
		n->st.cable_errors++;
		nhi_log(n, NHI_LOG_ERROR, "cable: malformed XDomain packet dropped");
		return;
	}
	/* present it with this host's route back to the sender */
	p.dw[0] &= 0x80000000u;
	p.dw[1] = ADP_LANE0;
	blen = ctl_build(&p, buf, sizeof(buf));
	if (!nhi_ctl_rx_running(n)) {
		n->st.rx_dropped++;
		return;
	}
	n->st.xdomain_rx++;
	n->st.ctl_rx++;
	nhi_log(n, NHI_LOG_TRACE, "ctl -> host: XDomain PDF %u (%zu bytes) from peer",
		c->pdf, blen);
	nhi_rx_deliver(n, 0, 0, c->pdf, buf, (uint32_t)blen, 0);
}

static void cable_data(struct nhi *n, const uint8_t *body, uint32_t len)
{
	const struct odl_link_data *f = (const void *)body;
	const struct adapter *l = &n->adp[ADP_LANE0];
	uint32_t plen, d;
	unsigned int oa, ring;

	if (len < sizeof(*f) || len - sizeof(*f) > ODL_LINK_MAX_FRAME ||
	    len == sizeof(*f)) {
		n->st.cable_errors++;
		nhi_log(n, NHI_LOG_ERROR, "cable: data message of %u bytes dropped",
			len);
		return;
	}
	plen = len - (uint32_t)sizeof(*f);
	if (!n->link_up || f->hopid == 0 || f->hopid > l->max_hop)
		goto drop;
	d = l->path[f->hopid].dw0;
	oa = (d >> 11) & 0x3f;
	ring = d & 0x7ff;
	if (!(d & HOP_VALID) || oa != ADP_NHI || ring == 0 || ring >= n->hops)
		goto drop;
	nhi_rx_deliver(n, ring, f->sof, f->eof, body + sizeof(*f), plen,
		       (f->flags & ODL_LINK_DATA_CRC_ERR) ? DESC_F_CRC_ERR : 0);
	return;
drop:
	n->st.rx_dropped++;
	nhi_log(n, NHI_LOG_TRACE, "cable: frame for HopID %u has no path; dropped",
		f->hopid);
}

void router_cable_msg(struct nhi *n, uint16_t type, const uint8_t *body,
		      uint32_t len)
{
	switch (type) {
	case ODL_LINK_STATE: {
		struct odl_link_state s;

		if (len < sizeof(s))
			break;
		memcpy(&s, body, sizeof(s));
		if (s.up && (s.lanes < 1 || s.lanes > 2))
			break;
		router_link_state(n, s.up, s.lanes, s.lane_gbps, s.peer_uid);
		return;
	}
	case ODL_LINK_CTRL:
		cable_ctrl(n, body, len);
		return;
	case ODL_LINK_DATA:
		cable_data(n, body, len);
		return;
	case ODL_LINK_CREDIT: {
		struct odl_link_credit c;
		uint32_t v;

		if (len < sizeof(c))
			break;
		memcpy(&c, body, sizeof(c));
		if (c.hopid >= PATH_MAX_HOPS)
			break;
		if (c.credits == 0) {
			/* credit sync: the receiver's count restarted; what it
			 * granted before is void (its next grant follows) */
			n->tx_credits[c.hopid] = 0;
			n->st.credit_syncs_rcvd++;
			nhi_log(n, NHI_LOG_TRACE, "E2E: credit sync for HopID %u",
				c.hopid);
			return;
		}
		if (!nhi_e2e_credit_accept(n, c.hopid, c.credits)) {
			/* credit-controlled from now on, with nothing to spend */
			n->tx_credit_active[c.hopid] = 1;
			return;
		}
		v = (uint32_t)n->tx_credits[c.hopid] + c.credits;
		n->tx_credits[c.hopid] = v > 0xffff ? 0xffff : (uint16_t)v;
		n->tx_credit_active[c.hopid] = 1;
		n->st.credits_rcvd += c.credits;
		nhi_tx_kick_all(n);
		return;
	}
	case ODL_LINK_LANE:
		if (len < sizeof(n->peer_lane))
			break;
		memcpy(&n->peer_lane, body, sizeof(n->peer_lane));
		n->peer_lane_valid = true;
		return;
	default:
		break;
	}
	n->st.cable_errors++;
	nhi_log(n, NHI_LOG_ERROR, "cable: bad message type %u length %u dropped",
		type, len);
}

/* ------------------------------------------------------------------ */
/* life cycle                                                           */

void router_init(struct nhi *n)
{
	for (unsigned int a = 1; a < NUM_ADAPTERS; a++) {
		struct adapter *ad = &n->adp[a];

		ad->present = a == ADP_NHI || lane_present(n, a);
		ad->max_hop = a == ADP_NHI ? (uint16_t)(n->hops - 1) :
					     n->p->lane_max_hopid;
		ad->path = calloc((size_t)ad->max_hop + 1, sizeof(*ad->path));
	}
}

void router_free(struct nhi *n)
{
	for (unsigned int a = 0; a < NUM_ADAPTERS; a++) {
		free(n->adp[a].path);
		n->adp[a].path = NULL;
	}
}

void router_reset(struct nhi *n)
{
	const struct nhi_profile *p = n->p;
	uint32_t widths = p->lanes >= 2 ? 0x3 : 0x1;

	memset(n->rtr, 0, sizeof(n->rtr));
	n->rtr[0] = p->router_vendor | (uint32_t)p->router_device << 16;
	n->rtr[1] = RTR_TMU_CAP | ADP_NHI << RTR_CS1_UPSTREAM_SHIFT |
		    (NUM_ADAPTERS - 1) << 14 | (uint32_t)p->router_revision << 24;
	n->rtr[4] = (uint32_t)p->usb4_version << 24;
	n->asym = 0;
	n->rtr[7] = (uint32_t)n->cfg.uid;
	n->rtr[8] = (uint32_t)(n->cfg.uid >> 32);
	n->rtr[RTR_TMU_CAP] = 0x03u << 8;

	for (unsigned int a = 1; a < NUM_ADAPTERS; a++) {
		struct adapter *ad = &n->adp[a];
		uint32_t *cs = ad->cs;

		memset(cs, 0, sizeof(ad->cs));
		if (ad->path)
			memset(ad->path, 0, ((size_t)ad->max_hop + 1) *
			       sizeof(*ad->path));
		n->plug[a].pending = false;
		if (!ad->present)
			continue;
		cs[0] = p->router_vendor | (uint32_t)p->router_device << 16;
		cs[3] = a << 20;
		cs[5] = ad->max_hop | (uint32_t)ad->max_hop << 11;
		if (a == ADP_NHI) {
			cs[2] = 0x000002;
			cs[4] = (uint32_t)p->nhi_total_buffers << 20;
			continue;
		}
		cs[1] = ADP_LANE_CAP;
		cs[2] = 0x000001;
		cs[4] = ADP_CS4_LCK | (uint32_t)p->lane_total_buffers << 20;
		cs[ADP_LANE_CAP] = (a == ADP_LANE0 ? ADP_USB4_CAP : 0) |
				   0x01u << 8 |
				   (uint32_t)(p->supported_speeds & 0xf) << 16 |
				   widths << 20;
		cs[ADP_LANE_CAP + 1] = (p->supported_speeds & 0xfu) |
				       1u << LANE1_TGT_WIDTH_SHIFT;
		/* two control-path buffers on HopID 0 */
		ad->path[0].dw0 = 2u << 17;
		if (a == ADP_LANE0) {
			cs[ADP_USB4_CAP] = 0x06u << 8;
			if (p->asym_capable)
				cs[ADP_USB4_CAP + 0x12] = PORT_CS18_CSA;
		}
	}
	credits_reset(n);
	n->peer_lane_valid = n->peer_lane_valid && n->link_up;
	if (n->link_up)
		send_lane_info(n);
	link_apply(n); /* a port held in reset is released */
}

void router_host_reset(struct nhi *n)
{
	/* the router and its adapters return to their power-on state; the
	 * USB4 port retrains, and a router that no connection manager has
	 * enumerated yet does not train it (docs/profiles.md) */
	n->hrr_hold = true;
	router_reset(n);
}
