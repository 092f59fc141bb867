// SPDX-License-Identifier: MIT
/*
 * NHI register file, interrupt logic and DMA ring engines.
 *
 * Semantics follow the USB4 host interface as Linux's thunderbolt driver
 * programs it (see docs/ARCHITECTURE.md): per-ring base/index/size
 * registers, option registers, interrupt status / enable / mask-clear /
 * vector-allocation registers, DMA_MISC auto-clear control.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nhi_priv.h"

static void le32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

void nhi_log(struct nhi *n, int level, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (level == NHI_LOG_TRACE && !n->cfg.trace)
		return;
	if (!n->ops->log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	n->ops->log(n->opaque, level, buf);
}

void nhi_guest_error(struct nhi *n, const char *fmt, ...)
{
	char buf[480];
	va_list ap;

	n->st.guest_errors++;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	nhi_log(n, NHI_LOG_ERROR, "guest error: %s", buf);
}

/* ------------------------------------------------------------------ */
/* interrupts                                                           */

static unsigned int ivr_vector(const struct nhi *n, unsigned int idx)
{
	return (n->ivr[idx / 8] >> (4 * (idx % 8))) & 0xf;
}

static void fire_vector(struct nhi *n, unsigned int vec)
{
	n->st.interrupts++;
	if (n->ops->now)
		n->irq_last[vec] = n->ops->now(n->opaque);
	if (n->ops->msix)
		n->ops->msix(n->opaque, vec);
}

/*
 * Interrupt moderation: a vector fires at most once per throttling
 * interval (REG_INT_THROTTLE, 256 ns units); events inside the interval
 * are coalesced into one message at its end, so the last event always
 * produces a message.
 */
static void signal_idx(struct nhi *n, unsigned int idx)
{
	unsigned int vec = ivr_vector(n, idx);
	int64_t gap = (int64_t)n->throttle[vec] * 256, now, due;

	nhi_log(n, NHI_LOG_TRACE, "irq index %u -> vector %u", idx, vec);
	if (n->dma_misc & DMA_MISC_INT_AUTO_CLEAR)
		n->int_status[idx / 32] &= ~(1u << (idx % 32));
	if (n->irq_deferred & (1u << vec))
		return; /* coalesced into the pending message */
	if (!n->p->irq_throttle || !gap || !n->ops->now || !n->ops->timer_arm) {
		fire_vector(n, vec);
		return;
	}
	now = n->ops->now(n->opaque);
	due = n->irq_last[vec] + gap;
	if (n->irq_last[vec] == 0 || now >= due) {
		fire_vector(n, vec);
		return;
	}
	n->irq_deferred |= 1u << vec;
	n->ops->timer_arm(n->opaque, NHI_TIMER_IRQ0 + (int)vec, due);
}

/*
 * A ring event: set its status bit; signal it if enabled, otherwise latch
 * it so that unmasking signals it (lossless mask/poll/unmask).
 */
void nhi_raise(struct nhi *n, unsigned int idx)
{
	uint32_t bit = 1u << (idx % 32);

	if (idx >= 3 * n->irq_hops)
		return;
	n->int_status[idx / 32] |= bit;
	if (idx >= 2 * n->irq_hops)
		return; /* overflow bits have no enable */
	if (n->int_enable[idx / 32] & bit)
		signal_idx(n, idx);
	else
		n->int_missed[idx / 32] |= bit;
}

static uint32_t int_valid_mask(unsigned int dw, unsigned int nbits)
{
	unsigned int lo = dw * 32;

	if (nbits <= lo)
		return 0;
	if (nbits - lo >= 32)
		return 0xffffffffu;
	return (1u << (nbits - lo)) - 1;
}

static void int_enable_write(struct nhi *n, unsigned int dw, uint32_t val)
{
	uint32_t valid = int_valid_mask(dw, 2 * n->irq_hops);
	uint32_t old = n->int_enable[dw];
	uint32_t rising;

	if (val & ~valid)
		nhi_guest_error(n, "interrupt enable bits 0x%x beyond %u rings",
				val & ~valid, n->irq_hops);
	n->int_enable[dw] = val & valid;
	rising = n->int_enable[dw] & ~old & n->int_missed[dw];
	while (rising) {
		unsigned int b = (unsigned int)__builtin_ctz(rising);

		rising &= rising - 1;
		n->int_missed[dw] &= ~(1u << b);
		signal_idx(n, dw * 32 + b);
	}
}

/* ------------------------------------------------------------------ */
/* rings                                                                */

static void held_clear(struct nhi_ring *r)
{
	struct held_frame *f = r->held_head, *nx;

	while (f) {
		nx = f->next;
		free(f);
		f = nx;
	}
	r->held_head = r->held_tail = NULL;
	r->held_count = 0;
}

static void late_clear(struct nhi_ring *r)
{
	struct late_compl *c = r->late_head, *nx;

	while (c) {
		nx = c->next;
		free(c);
		c = nx;
	}
	r->late_head = r->late_tail = NULL;
}

static void ring_reset_indices(struct nhi_ring *r)
{
	r->hw = 0;
	r->drv = 0;
	r->credits_granted = 0;
	r->credits_used = 0;
	r->credit_sync_due = true;
	r->faulted = false;
	r->credit_msgs = 0;
	r->lp_until = 0;
	r->pace_next = 0;
	r->stalled = false;
	late_clear(r);
}

static void ring_disable(struct nhi *n, struct nhi_ring *r)
{
	r->enabled = false;
	ring_reset_indices(r);
	held_clear(r);
	if (r >= n->tx && r < n->tx + NHI_MAX_HOPS)
		n->tx_deferred &= ~(1u << (r - n->tx));
}

static void ring_enable(struct nhi *n, struct nhi_ring *r, unsigned int idx,
			bool rx)
{
	uint64_t base = (uint64_t)r->base_hi << 32 | r->base_lo;

	if (r->size == 0 || r->size > 0xffff) {
		nhi_guest_error(n, "%s ring %u enabled with size %u; ignored",
				rx ? "RX" : "TX", idx, r->size);
		r->opt0 &= ~RING_FLAG_ENABLE;
		return;
	}
	if (base & 0xf) {
		nhi_guest_error(n, "%s ring %u base 0x%llx not 16-byte aligned; ignored",
				rx ? "RX" : "TX", idx,
				(unsigned long long)base);
		r->opt0 &= ~RING_FLAG_ENABLE;
		return;
	}
	r->base = base;
	r->enabled = true;
	ring_reset_indices(r);
	held_clear(r);
	r->last_rx_ns = n->ops->now ? n->ops->now(n->opaque) : 0;
	r->e2e_seq = (rx && (r->opt0 & RING_FLAG_E2E)) ? ++n->e2e_seq_next : 0;
	nhi_log(n, NHI_LOG_TRACE, "%s ring %u enabled base 0x%llx size %u%s%s",
		rx ? "RX" : "TX", idx, (unsigned long long)base, r->size,
		(r->opt0 & RING_FLAG_RAW) ? " raw" : " frame",
		(r->opt0 & RING_FLAG_E2E) ? " e2e" : "");
}

static uint32_t ring_frame_max(const struct nhi_ring *r)
{
	uint32_t fs = r->frame_size;

	if (fs == 0 || fs > 4096)
		fs = 4096;
	return fs;
}

/* Number of RX descriptors posted and not yet used. */
static uint32_t rx_avail(const struct nhi_ring *r)
{
	if (!r->enabled)
		return 0;
	return (r->drv + r->size - r->hw) % r->size;
}

static void ring_fault(struct nhi *n, struct nhi_ring *r, const char *what,
		       uint64_t addr)
{
	n->st.dma_faults++;
	r->faulted = true;
	nhi_log(n, NHI_LOG_ERROR, "DMA fault: %s at 0x%llx; ring stopped",
		what, (unsigned long long)addr);
}

static int64_t now_ns(const struct nhi *n)
{
	return n->ops->now ? n->ops->now(n->opaque) : 0;
}

/*
 * A ring's completion interrupt, with the run-time faults applied: a
 * dropped interrupt still sets its status bit (the completion is in
 * memory; polling finds it) but signals nothing and is not latched.
 */
static void ring_irq(struct nhi *n, bool rx, unsigned int ri)
{
	struct nhi_ring *r = rx ? &n->rx[ri] : &n->tx[ri];
	unsigned int idx = rx ? ri + n->irq_hops : ri;

	if (ri >= n->irq_hops && n->p->hidden_hop_silent)
		return; /* beyond the reported hop count: no interrupt wiring */
	if (r->f_nth || r->f_every) {
		r->f_count++;
		if ((r->f_nth && r->f_count == r->f_nth) ||
		    (r->f_every && r->f_count % r->f_every == 0)) {
			if (r->f_nth && r->f_count == r->f_nth)
				r->f_nth = 0;
			n->st.irq_dropped++;
			if (idx < 2 * n->irq_hops)
				n->int_status[idx / 32] |= 1u << (idx % 32);
			nhi_log(n, NHI_LOG_TRACE, "%s ring %u: completion interrupt dropped (fault)",
				rx ? "RX" : "TX", ri);
			return;
		}
	}
	nhi_raise(n, idx);
}

static void compl_timer_update(struct nhi *n)
{
	int64_t first = -1;

	for (unsigned int i = 0; i < 2 * NHI_MAX_HOPS; i++) {
		struct nhi_ring *r = i < NHI_MAX_HOPS ? &n->tx[i] :
				     &n->rx[i - NHI_MAX_HOPS];

		if (r->late_head && (first < 0 || r->late_head->due < first))
			first = r->late_head->due;
	}
	if (first == n->compl_timer_at || !n->ops->timer_arm)
		return;
	n->compl_timer_at = first;
	n->ops->timer_arm(n->opaque, NHI_TIMER_COMPL, first);
}

static int compl_write(struct nhi *n, bool rx, unsigned int ri, uint64_t addr,
		       uint32_t d8, bool irq)
{
	struct nhi_ring *r = rx ? &n->rx[ri] : &n->tx[ri];
	uint8_t b[4];

	le32_put(b, d8);
	if (n->ops->dma_write(n->opaque, addr, b, 4)) {
		ring_fault(n, r, rx ? "RX descriptor write" :
			   "TX descriptor write", addr);
		return -1;
	}
	if (rx)
		r->last_rx_ns = now_ns(n);
	if (irq)
		ring_irq(n, rx, ri);
	return 0;
}

/*
 * Write a descriptor's completion (dword +8) and signal it, now or later:
 * a "delay" fault holds every completion of the ring back by a fixed time;
 * a low-power RX ring (lowpower_idle_ms) holds them until its next burst.
 * Completions of one ring stay in order.
 */
static int ring_complete(struct nhi *n, bool rx, unsigned int ri,
			 uint64_t addr, uint32_t d8, bool irq)
{
	struct nhi_ring *r = rx ? &n->rx[ri] : &n->tx[ri];
	int64_t now = now_ns(n), due = now;
	struct late_compl *c;

	if (r->f_delay_ns)
		due = now + r->f_delay_ns;
	if (rx && ri && n->p->lowpower_idle_ms) {
		if (!r->lp_until && now - r->last_rx_ns >=
		    (int64_t)n->p->lowpower_idle_ms * 1000000) {
			r->lp_until = now +
				(int64_t)n->p->lowpower_period_ms * 1000000;
			n->st.lowpower_bursts++;
			nhi_log(n, NHI_LOG_TRACE, "RX ring %u: low-power receive, burst at +%u ms",
				ri, n->p->lowpower_period_ms);
		}
		if (r->lp_until > due)
			due = r->lp_until;
	}
	if (r->late_tail && r->late_tail->due > due)
		due = r->late_tail->due;
	if (due <= now || !n->ops->timer_arm)
		return compl_write(n, rx, ri, addr, d8, irq);
	c = malloc(sizeof(*c));
	if (!c)
		return compl_write(n, rx, ri, addr, d8, irq);
	c->next = NULL;
	c->due = due;
	c->addr = addr;
	c->d8 = d8;
	c->irq = irq;
	if (r->late_tail)
		r->late_tail->next = c;
	else
		r->late_head = c;
	r->late_tail = c;
	n->st.compl_delayed++;
	compl_timer_update(n);
	return 0;
}

static void compl_timer_fire(struct nhi *n)
{
	int64_t now = now_ns(n);

	n->compl_timer_at = -1;
	for (unsigned int i = 0; i < 2 * NHI_MAX_HOPS; i++) {
		bool rx = i >= NHI_MAX_HOPS;
		unsigned int ri = rx ? i - NHI_MAX_HOPS : i;
		struct nhi_ring *r = rx ? &n->rx[ri] : &n->tx[ri];

		while (r->late_head && r->late_head->due <= now) {
			struct late_compl *c = r->late_head;

			r->late_head = c->next;
			if (!r->late_head)
				r->late_tail = NULL;
			if (!r->faulted)
				compl_write(n, rx, ri, c->addr, c->d8, c->irq);
			free(c);
		}
		if (rx && r->lp_until && r->lp_until <= now) {
			r->lp_until = 0; /* the burst wakes the receive path */
			r->last_rx_ns = now;
		}
	}
	compl_timer_update(n);
}

/* Write one received frame into the next RX descriptor. */
static void rx_put(struct nhi *n, unsigned int ri, uint8_t sof, uint8_t eof,
		   const uint8_t *data, uint32_t len, uint16_t flags)
{
	struct nhi_ring *r = &n->rx[ri];
	uint64_t da = r->base + (uint64_t)r->hw * 16;
	uint8_t desc[16];
	uint64_t phys;
	uint32_t max = ring_frame_max(r), d8;
	uint16_t f = DESC_F_COMPLETED | (flags & DESC_F_CRC_ERR);

	if (n->ops->dma_read(n->opaque, da, desc, 16)) {
		ring_fault(n, r, "RX descriptor read", da);
		return;
	}
	phys = (uint64_t)le32_get(desc + 4) << 32 | le32_get(desc);
	if (len > max) {
		f |= DESC_F_OVERRUN;
		len = max;
		n->st.rx_overflow++;
	}
	if (len && n->ops->dma_write(n->opaque, phys, data, len)) {
		ring_fault(n, r, "RX buffer write", phys);
		return;
	}
	if (r->opt0 & RING_FLAG_RAW)
		sof = 0;
	d8 = (len & DESC_LEN_MASK) | (uint32_t)(eof & 0xf) << DESC_EOF_SHIFT |
	     (uint32_t)(sof & 0xf) << DESC_SOF_SHIFT |
	     (uint32_t)f << DESC_FLAGS_SHIFT;
	if (ring_complete(n, true, ri, da + 8, d8, true))
		return;
	r->hw = (r->hw + 1) % r->size;
	r->credits_used++;
	if (ri) {
		n->st.rx_frames++;
		n->st.rx_bytes += len;
	}
	nhi_log(n, NHI_LOG_TRACE, "RX ring %u: frame len %u sof %u eof %u flags 0x%x",
		ri, len, sof, eof, f);
}

static bool rx_may_hold(const struct nhi *n, unsigned int ri)
{
	const struct nhi_ring *r = &n->rx[ri];

	if (ri == 0)
		return r->held_count < 64;
	if (r->opt0 & RING_FLAG_E2E)
		return r->held_count < n->p->e2e_hold_frames;
	return false;
}

void nhi_rx_deliver(struct nhi *n, unsigned int ri, uint8_t sof, uint8_t eof,
		    const uint8_t *data, uint32_t len, uint16_t flags)
{
	struct nhi_ring *r;

	if (ri >= n->hops) {
		n->st.rx_dropped++;
		return;
	}
	r = &n->rx[ri];
	if (!r->enabled || r->faulted) {
		n->st.rx_dropped++;
		nhi_log(n, NHI_LOG_TRACE, "RX ring %u off: frame dropped", ri);
		return;
	}
	if (!(r->opt0 & RING_FLAG_RAW)) {
		uint32_t sofm = r->opt1 >> 16, eofm = r->opt1 & 0xffff;

		if (!(sofm & (1u << (sof & 0xf))) ||
		    !(eofm & (1u << (eof & 0xf)))) {
			n->st.rx_dropped++;
			nhi_log(n, NHI_LOG_TRACE,
				"RX ring %u: PDF sof %u eof %u not in masks 0x%x/0x%x",
				ri, sof, eof, sofm, eofm);
			return;
		}
	}
	if (ri && (r->opt0 & RING_FLAG_E2E) && n->p->e2e_reserved_hop &&
	    ((r->opt0 & RX_OPT_E2E_HOP_MASK) >> RX_OPT_E2E_HOP_SHIFT) !=
	    n->p->e2e_reserved_hop && r->credit_msgs >= 2) {
		/* QUIRK_E2E: credit returns on a live HopID collide with its
		 * traffic; from the second credit window on, frames are lost
		 * without a trace */
		n->st.e2e_rx_lost++;
		nhi_log(n, NHI_LOG_TRACE, "RX ring %u: frame lost (E2E credit HopID %u, want %u)",
			ri, (r->opt0 & RX_OPT_E2E_HOP_MASK) >> RX_OPT_E2E_HOP_SHIFT,
			n->p->e2e_reserved_hop);
		return;
	}
	if (r->held_count == 0 && rx_avail(r) > 0) {
		rx_put(n, ri, sof, eof, data, len, flags);
		return;
	}
	if (rx_may_hold(n, ri)) {
		struct held_frame *h = malloc(sizeof(*h) + len);

		if (!h) {
			n->st.rx_dropped++;
			return;
		}
		h->next = NULL;
		h->sof = sof;
		h->eof = eof;
		h->flags = flags;
		h->len = len;
		memcpy(h->data, data, len);
		if (r->held_tail)
			r->held_tail->next = h;
		else
			r->held_head = h;
		r->held_tail = h;
		r->held_count++;
		n->st.e2e_held++;
		return;
	}
	/* no buffer: the frame is lost; flag the overflow */
	n->st.rx_dropped++;
	n->st.rx_overflow++;
	nhi_log(n, NHI_LOG_TRACE, "RX ring %u overflow: frame dropped", ri);
	if (ri < n->irq_hops)
		nhi_raise(n, ri + 2 * n->irq_hops);
}

static void rx_drain_held(struct nhi *n, unsigned int ri)
{
	struct nhi_ring *r = &n->rx[ri];

	while (r->held_head && rx_avail(r) > 0 && r->enabled && !r->faulted) {
		struct held_frame *h = r->held_head;

		r->held_head = h->next;
		if (!r->held_head)
			r->held_tail = NULL;
		r->held_count--;
		rx_put(n, ri, h->sof, h->eof, h->data, h->len, h->flags);
		free(h);
	}
}

bool nhi_ctl_rx_running(const struct nhi *n)
{
	return n->rx[0].enabled && !n->rx[0].faulted && n->tx[0].enabled;
}

#define PACE_SLACK_NS 100000LL /* ring_mbps: burst allowance */

static void pace_timer_arm(struct nhi *n, int64_t at)
{
	if (!n->ops->timer_arm)
		return;
	if (n->pace_timer_at >= 0 && n->pace_timer_at <= at)
		return;
	n->pace_timer_at = at;
	n->ops->timer_arm(n->opaque, NHI_TIMER_TXPACE, at);
}

/* Process TX descriptors from the consumer to the producer index. */
void nhi_tx_kick(struct nhi *n, unsigned int ri)
{
	struct nhi_ring *r = &n->tx[ri];
	static uint8_t buf[4096];

	while (r->enabled && !r->faulted && r->hw != r->drv) {
		uint64_t da = r->base + (uint64_t)r->hw * 16;
		uint8_t desc[16];
		uint64_t phys;
		uint32_t d8, len;
		uint8_t sof, eof;

		if (ri != 0 && n->tx_budget == 0) {
			/* this run's share is spent: the rest in the next */
			n->tx_deferred |= 1u << ri;
			return;
		}

		if (n->ops->dma_read(n->opaque, da, desc, 16)) {
			ring_fault(n, r, "TX descriptor read", da);
			return;
		}
		phys = (uint64_t)le32_get(desc + 4) << 32 | le32_get(desc);
		d8 = le32_get(desc + 8);
		len = d8 & DESC_LEN_MASK;
		if (len == 0)
			len = 4096;
		eof = (d8 >> DESC_EOF_SHIFT) & 0xf;
		sof = (d8 >> DESC_SOF_SHIFT) & 0xf;
		if (ri != 0 && n->p->ring_mbps && n->ops->now) {
			/* per-ring DMA ceiling: the engine fetches no faster */
			int64_t now = n->ops->now(n->opaque);

			if (r->pace_next > now + PACE_SLACK_NS) {
				n->st.tx_paced++;
				pace_timer_arm(n, r->pace_next - PACE_SLACK_NS);
				return;
			}
		}
		if (ri != 0 &&
		    !router_tx_frame(n, ri, sof, eof, NULL, len, true)) {
			/* waiting for E2E credits: descriptor stays posted,
			 * no completion, no interrupt, no error */
			if (!r->stalled && n->st.e2e_credits_dropped)
				n->st.e2e_wedged++;
			r->stalled = true;
			return;
		}
		r->stalled = false;
		if (n->ops->dma_read(n->opaque, phys, buf, len)) {
			ring_fault(n, r, "TX buffer read", phys);
			return;
		}
		nhi_log(n, NHI_LOG_TRACE, "TX ring %u: frame len %u sof %u eof %u",
			ri, len, sof, eof);
		if (ri == 0) {
			n->st.ctl_tx++;
			router_ctl_from_host(n, eof, buf, len);
		} else {
			n->st.tx_frames++;
			n->st.tx_bytes += len;
			if (n->tx_budget > 0)
				n->tx_budget--;
			router_tx_frame(n, ri, sof, eof, buf, len, false);
			if (n->p->ring_mbps && n->ops->now) {
				int64_t now = n->ops->now(n->opaque);

				if (r->pace_next < now)
					r->pace_next = now;
				r->pace_next += (int64_t)len * 8000 /
						n->p->ring_mbps;
			}
		}
		/* the ring may have been stopped by what we just did */
		if (!r->enabled)
			return;
		d8 |= (uint32_t)DESC_F_COMPLETED << DESC_FLAGS_SHIFT;
		if (ring_complete(n, false, ri, da + 8, d8,
				  d8 & ((uint32_t)DESC_F_INTERRUPT <<
					DESC_FLAGS_SHIFT)))
			return;
		r->hw = (r->hw + 1) % r->size;
	}
}

static void pace_timer_fire(struct nhi *n)
{
	n->pace_timer_at = -1;
	nhi_tx_kick_all(n);
}

void nhi_tx_kick_all(struct nhi *n)
{
	for (unsigned int i = 1; i < n->hops; i++)
		if (n->tx[i].enabled && n->tx[i].hw != n->tx[i].drv)
			nhi_tx_kick(n, i);
}

/*
 * E2E flow control, receiver side: grant the sender credits for buffers
 * posted on an E2E RX ring, over the link HopID whose path ends in it.
 */
void nhi_e2e_update(struct nhi *n, unsigned int ri)
{
	struct nhi_ring *r = &n->rx[ri];
	struct odl_link_credit c;
	uint32_t outstanding, avail, grant;
	int hop;

	if (!r->enabled || !(r->opt0 & RING_FLAG_E2E) || !n->link_up)
		return;
	hop = router_in_hop_for_ring(n, ri);
	if (hop < 0)
		return;
	if ((int32_t)(r->credits_granted - r->credits_used) < 0) {
		/* more frames than credits granted since the accounting
		 * restarted: the sender is not credit-controlled until its
		 * first grant arrives, and what it sent in that window landed
		 * here after the restart. It has spent everything it holds
		 * now; counting on would wrap and never grant again (the
		 * path would stall for good), so write the excess off. */
		n->st.credits_unfunded += r->credits_used - r->credits_granted;
		nhi_log(n, NHI_LOG_TRACE,
			"E2E: RX ring %u got %u frames beyond its grants (HopID %d)",
			ri, r->credits_used - r->credits_granted, hop);
		r->credits_granted = r->credits_used;
	}
	outstanding = r->credits_granted - r->credits_used;
	avail = rx_avail(r);
	if (avail <= outstanding)
		return;
	grant = avail - outstanding;
	/* return credits in batches, as hardware does: once a quarter of
	 * the ring is free again, or when the sender is running low */
	if (grant < r->size / 4 && outstanding > r->size / 4)
		return;
	if (grant > 0xffff)
		grant = 0xffff;
	c.hopid = (uint16_t)hop;
	if (r->credit_sync_due) {
		/* the first grant since this ring's accounting restarted
		 * (ring or path set up again, link retrained), even when
		 * frames on old grants were written off meanwhile: a credit
		 * sync (0 credits) first, so that the sender drops what an
		 * earlier ring or path granted it; docs/link-protocol.md */
		r->credit_sync_due = false;
		c.credits = 0;
		n->st.credit_syncs++;
		nhi_log(n, NHI_LOG_TRACE, "E2E: credit sync on HopID %d (RX ring %u)",
			hop, ri);
		router_send_msg(n, ODL_LINK_CREDIT, &c, sizeof(c), NULL, 0);
	}
	c.credits = (uint16_t)grant;
	r->credits_granted += grant;
	r->credit_msgs++;
	n->st.credits_sent += grant;
	router_send_msg(n, ODL_LINK_CREDIT, &c, sizeof(c), NULL, 0);
}

static bool rx_e2e_active(const struct nhi_ring *r)
{
	return r->enabled && (r->opt0 & RING_FLAG_E2E);
}

/*
 * The single-E2E-RX-ring limit (amd-strix-halo, quirks.md 2.2.2.a): while
 * more E2E RX rings are active than the NHI has slots for, credit grants
 * arriving for this NHI's E2E TX paths are dropped on the floor
 * (e2e_victim 0: every path; 1: only the path of the TX ring that the
 * first RX ring beyond the limit returns its credits through). The path
 * is then credit-controlled with nothing to spend: its TX ring wedges
 * silently once its credits run out.
 */
bool nhi_e2e_credit_accept(struct nhi *n, unsigned int hop,
			   unsigned int credits)
{
	unsigned int active = 0, victim_seq = 0;
	int victim_hop = -1;

	if (!n->p->e2e_rx_slots)
		return true;
	for (unsigned int i = 1; i < n->hops; i++)
		if (rx_e2e_active(&n->rx[i]))
			active++;
	if (active <= n->p->e2e_rx_slots)
		return true;
	if (n->p->e2e_victim == 1) {
		/* the E2E RX ring enabled (slots+1)-th */
		unsigned int rank_best = 0;

		for (unsigned int i = 1; i < n->hops; i++) {
			const struct nhi_ring *r = &n->rx[i];
			unsigned int rank = 0;

			if (!rx_e2e_active(r))
				continue;
			for (unsigned int j = 1; j < n->hops; j++)
				if (rx_e2e_active(&n->rx[j]) &&
				    n->rx[j].e2e_seq < r->e2e_seq)
					rank++;
			if (rank == n->p->e2e_rx_slots) {
				victim_seq = r->e2e_seq;
				rank_best = (r->opt0 & RX_OPT_E2E_HOP_MASK) >>
					    RX_OPT_E2E_HOP_SHIFT;
			}
		}
		if (victim_seq && rank_best < n->hops)
			victim_hop = router_out_hop_for_ring(n, rank_best);
		if (victim_hop != (int)hop)
			return true;
	}
	n->st.e2e_credits_dropped += credits;
	nhi_log(n, NHI_LOG_TRACE, "E2E: %u credits for HopID %u dropped (%u E2E RX rings, %u slot%s)",
		credits, hop, active, n->p->e2e_rx_slots,
		n->p->e2e_rx_slots == 1 ? "" : "s");
	return false;
}

void nhi_e2e_update_all(struct nhi *n)
{
	for (unsigned int i = 1; i < n->hops; i++)
		nhi_e2e_update(n, i);
}

/* ------------------------------------------------------------------ */
/* MMIO                                                                 */

static void ring_reg_write(struct nhi *n, bool rx, unsigned int ri,
			   unsigned int reg, uint32_t val)
{
	struct nhi_ring *r = rx ? &n->rx[ri] : &n->tx[ri];

	switch (reg) {
	case 0x0:
		r->base_lo = val;
		/* a new base: whatever the previous owner left is void */
		ring_reset_indices(r);
		break;
	case 0x4:
		r->base_hi = val;
		break;
	case 0x8:
		if (!rx) {
			uint32_t prod = val >> 16;

			if (r->size && prod >= r->size) {
				nhi_guest_error(n, "TX ring %u producer %u >= size %u; ignored",
						ri, prod, r->size);
				return;
			}
			r->drv = prod;
			if (!r->enabled)
				break;
			if (ri && n->ops->defer) {
				if (!n->tx_deferred)
					n->ops->defer(n->opaque);
				n->tx_deferred |= 1u << ri;
			} else {
				nhi_tx_kick(n, ri);
			}
		} else {
			uint32_t di = val & 0xffff;

			if (r->size && di >= r->size) {
				nhi_guest_error(n, "RX ring %u driver index %u >= size %u; ignored",
						ri, di, r->size);
				return;
			}
			r->drv = di;
			if (r->enabled) {
				rx_drain_held(n, ri);
				if (ri)
					nhi_e2e_update(n, ri);
			}
		}
		break;
	case 0xc:
		if (r->enabled) {
			nhi_guest_error(n, "%s ring %u size changed while enabled; ignored",
					rx ? "RX" : "TX", ri);
			return;
		}
		r->size = val & 0xffff;
		if (rx)
			r->frame_size = val >> 16;
		break;
	}
}

static void ring_opt_write(struct nhi *n, bool rx, unsigned int ri,
			   unsigned int reg, uint32_t val)
{
	struct nhi_ring *r = rx ? &n->rx[ri] : &n->tx[ri];
	bool was = r->enabled;

	if (reg == 4) {
		if (rx)
			r->opt1 = val;
		else
			r->opt1_tx_hi = val;
		return;
	}
	if (reg != 0)
		return;
	r->opt0 = val;
	if (!was && (val & RING_FLAG_ENABLE)) {
		ring_enable(n, r, ri, rx);
		if (r->enabled && ri == 0)
			router_ctl_ring_started(n);
	} else if (was && !(val & RING_FLAG_ENABLE)) {
		ring_disable(n, r);
		nhi_log(n, NHI_LOG_TRACE, "%s ring %u disabled",
			rx ? "RX" : "TX", ri);
	}
	if (r->enabled && rx && !(val & RING_FLAG_E2E))
		r->e2e_seq = 0;
	else if (r->enabled && rx && !r->e2e_seq)
		r->e2e_seq = ++n->e2e_seq_next; /* E2E set on a running ring */
	if (r->enabled && rx && ri)
		nhi_e2e_update(n, ri);
}

uint32_t nhi_mmio_read(struct nhi *n, uint32_t off)
{
	uint32_t v = 0;

	off &= ~3u;
	if (off < REG_RX_RING_BASE) {
		unsigned int ri = off / REG_RING_STRIDE, reg = off % 16;

		if (ri < n->hops) {
			struct nhi_ring *r = &n->tx[ri];

			v = reg == 0 ? r->base_lo : reg == 4 ? r->base_hi :
			    reg == 8 ? (r->drv << 16 | r->hw) : r->size;
		}
	} else if (off < REG_RX_RING_BASE + 0x8000u) {
		unsigned int ri = (off - REG_RX_RING_BASE) / REG_RING_STRIDE;
		unsigned int reg = off % 16;

		if (ri < n->hops) {
			struct nhi_ring *r = &n->rx[ri];

			v = reg == 0 ? r->base_lo : reg == 4 ? r->base_hi :
			    reg == 8 ? (r->hw << 16 | r->drv) :
			    (r->frame_size << 16 | r->size);
		}
	} else if (off >= REG_TX_OPTIONS_BASE &&
		   off < REG_TX_OPTIONS_BASE + NHI_MAX_HOPS * 32) {
		unsigned int ri = (off - REG_TX_OPTIONS_BASE) / 32;
		unsigned int reg = (off - REG_TX_OPTIONS_BASE) % 32;

		if (ri < n->hops)
			v = reg == 0 ? n->tx[ri].opt0 :
			    reg == 4 ? n->tx[ri].opt1_tx_hi : 0;
	} else if (off >= REG_RX_OPTIONS_BASE &&
		   off < REG_RX_OPTIONS_BASE + NHI_MAX_HOPS * 32) {
		unsigned int ri = (off - REG_RX_OPTIONS_BASE) / 32;
		unsigned int reg = (off - REG_RX_OPTIONS_BASE) % 32;

		if (ri < n->hops)
			v = reg == 0 ? n->rx[ri].opt0 :
			    reg == 4 ? n->rx[ri].opt1 : 0;
	} else if (off >= REG_RING_NOTIFY_BASE && off < REG_RING_INT_CLEAR) {
		unsigned int dw = (off - REG_RING_NOTIFY_BASE) / 4;

		v = n->int_status[dw];
		/* read-to-clear unless auto-clear is disabled */
		if (!(n->dma_misc & DMA_MISC_DISABLE_AUTO_CLEAR))
			n->int_status[dw] = 0;
	} else if (off >= REG_RING_INT_BASE && off < REG_RING_INT_MASK_CLR) {
		v = n->int_enable[(off - REG_RING_INT_BASE) / 4];
	} else if (off >= REG_INT_THROTTLE &&
		   off < REG_INT_THROTTLE + 4 * NHI_MSIX_VECTORS) {
		v = n->throttle[(off - REG_INT_THROTTLE) / 4];
	} else if (off >= REG_INT_VEC_ALLOC && off < REG_INT_VEC_ALLOC + 16) {
		v = n->ivr[(off - REG_INT_VEC_ALLOC) / 4];
	} else if (off == REG_HOP_COUNT) {
		v = (n->irq_hops & 0x3ff) | (uint32_t)n->p->caps_version << 16;
	} else if (off == REG_DMA_MISC) {
		v = n->dma_misc;
	} else if (off == REG_RESET && n->p->caps_version >= REG_CAPS_VERSION_2) {
		v = n->hrr_done_at > now_ns(n) ? REG_RESET_HRR : 0;
	} else if (off == REG_INMAIL_CMD) {
		v = n->inmail_cmd;
	}
	nhi_log(n, NHI_LOG_TRACE, "mmio R 0x%05x -> 0x%08x", off, v);
	return v;
}

void nhi_mmio_write(struct nhi *n, uint32_t off, uint32_t val)
{
	off &= ~3u;
	nhi_log(n, NHI_LOG_TRACE, "mmio W 0x%05x <- 0x%08x", off, val);
	if (off < REG_RX_RING_BASE) {
		unsigned int ri = off / REG_RING_STRIDE;

		if (ri < n->hops)
			ring_reg_write(n, false, ri, off % 16, val);
		else
			nhi_guest_error(n, "write 0x%x to TX ring %u of %u",
					off, ri, n->hops);
	} else if (off < REG_RX_RING_BASE + 0x8000u) {
		unsigned int ri = (off - REG_RX_RING_BASE) / REG_RING_STRIDE;

		if (ri < n->hops)
			ring_reg_write(n, true, ri, off % 16, val);
		else
			nhi_guest_error(n, "write 0x%x to RX ring %u of %u",
					off, ri, n->hops);
	} else if (off >= REG_TX_OPTIONS_BASE &&
		   off < REG_TX_OPTIONS_BASE + NHI_MAX_HOPS * 32) {
		unsigned int ri = (off - REG_TX_OPTIONS_BASE) / 32;

		if (ri < n->hops)
			ring_opt_write(n, false, ri,
				       (off - REG_TX_OPTIONS_BASE) % 32, val);
		else
			nhi_guest_error(n, "TX options write to ring %u of %u",
					ri, n->hops);
	} else if (off >= REG_RX_OPTIONS_BASE &&
		   off < REG_RX_OPTIONS_BASE + NHI_MAX_HOPS * 32) {
		unsigned int ri = (off - REG_RX_OPTIONS_BASE) / 32;

		if (ri < n->hops)
			ring_opt_write(n, true, ri,
				       (off - REG_RX_OPTIONS_BASE) % 32, val);
		else
			nhi_guest_error(n, "RX options write to ring %u of %u",
					ri, n->hops);
	} else if (off >= REG_RING_NOTIFY_BASE && off < REG_RING_INT_CLEAR) {
		/* status is read-only */
	} else if (off >= REG_RING_INT_CLEAR && off < REG_RING_INT_CLEAR + 8) {
		n->int_status[(off - REG_RING_INT_CLEAR) / 4] &= ~val;
	} else if (off >= REG_RING_INT_BASE && off < REG_RING_INT_MASK_CLR) {
		int_enable_write(n, (off - REG_RING_INT_BASE) / 4, val);
	} else if (off >= REG_RING_INT_MASK_CLR &&
		   off < REG_RING_INT_MASK_CLR + 8) {
		unsigned int dw = (off - REG_RING_INT_MASK_CLR) / 4;

		if (dw < 2)
			n->int_enable[dw] &= ~val;
	} else if (off >= REG_INT_THROTTLE &&
		   off < REG_INT_THROTTLE + 4 * NHI_MSIX_VECTORS) {
		n->throttle[(off - REG_INT_THROTTLE) / 4] = val & 0xffff;
	} else if (off >= REG_INT_VEC_ALLOC && off < REG_INT_VEC_ALLOC + 16) {
		n->ivr[(off - REG_INT_VEC_ALLOC) / 4] = val;
	} else if (off == REG_DMA_MISC) {
		n->dma_misc = val & (DMA_MISC_INT_AUTO_CLEAR |
				     DMA_MISC_DISABLE_AUTO_CLEAR) &
			      n->p->dma_misc_writable;
	} else if (off == REG_RESET && n->p->caps_version >= REG_CAPS_VERSION_2) {
		if ((val & REG_RESET_HRR) && n->hrr_done_at <= now_ns(n)) {
			n->st.host_resets++;
			n->hrr_done_at = now_ns(n) + HRR_DURATION_NS;
			nhi_log(n, NHI_LOG_INFO, "host router reset");
			router_host_reset(n);
		}
	} else if (off == REG_INMAIL_DATA) {
		n->inmail_data = val;
	} else if (off == REG_INMAIL_CMD) {
		/* no firmware connection manager: every command fails */
		if (val & (1u << 31))
			n->inmail_cmd = (val & 0xff) | (1u << 30);
	} else if (off == REG_HOP_COUNT || off == REG_OUTMAIL_CMD ||
		   off == REG_FW_STS) {
		/* read-only */
	} else {
		nhi_guest_error(n, "write 0x%08x to unimplemented offset 0x%05x ignored",
				val, off);
	}
}

/* ------------------------------------------------------------------ */
/* cable input                                                          */

static void cable_dispatch(struct nhi *n, const struct odl_link_hdr *h,
			   const uint8_t *body)
{
	router_cable_msg(n, h->type, body, h->len);
}

void nhi_cable_rx(struct nhi *n, const void *data, size_t len)
{
	const uint8_t *p = data;
	const size_t hl = sizeof(struct odl_link_hdr);

	if (n->rx_desync)
		return;
	while (len) {
		size_t take, need;
		struct odl_link_hdr h;

		need = hl;
		if (n->rxlen >= hl) {
			memcpy(&h, n->rxbuf, hl);
			need = hl + h.len;
		}
		take = need - n->rxlen;
		if (take > len)
			take = len;
		memcpy(n->rxbuf + n->rxlen, p, take);
		n->rxlen += take;
		p += take;
		len -= take;
		if (n->rxlen < hl)
			break;
		memcpy(&h, n->rxbuf, hl);
		if (h.len > ODL_LINK_MAX_BODY) {
			n->st.cable_errors++;
			n->rx_desync = true;
			nhi_log(n, NHI_LOG_ERROR,
				"cable: message of %u bytes exceeds limit; link input stopped until reconnect",
				h.len);
			return;
		}
		if (n->rxlen == hl + h.len) {
			cable_dispatch(n, &h, n->rxbuf + hl);
			n->rxlen = 0;
		}
	}
}

void nhi_cable_connected(struct nhi *n, bool connected)
{
	n->cable_connected = connected;
	n->rxlen = 0;
	n->rx_desync = false;
	if (connected) {
		struct odl_link_hello h;

		memset(&h, 0, sizeof(h));
		h.magic = ODL_LINK_MAGIC;
		h.version = ODL_LINK_VERSION;
		h.lanes = n->p->lanes;
		h.uid = n->cfg.uid;
		h.lane_gbps = n->p->lane_gbps;
		snprintf(h.profile, sizeof(h.profile), "%s", n->p->name);
		router_send_msg(n, ODL_LINK_HELLO, &h, sizeof(h), NULL, 0);
	} else {
		router_link_state(n, false, 0, 0, 0);
	}
}

/*
 * The data-ring doorbells since the last run, at most NHI_DEFER_BUDGET
 * frames in all (the caller batches their cable output: a guest posting
 * full rings of 65535 descriptors on every ring must not make it hold
 * gigabytes); rings with frames left ask for another run.
 */
void nhi_run_deferred(struct nhi *n)
{
	uint32_t pend = n->tx_deferred;

	n->tx_deferred = 0;
	n->tx_budget = NHI_DEFER_BUDGET;
	while (pend) {
		unsigned int ri = (unsigned int)__builtin_ctz(pend);

		pend &= ~(1u << ri);
		nhi_tx_kick(n, ri);
	}
	n->tx_budget = -1;
	if (n->tx_deferred && n->ops->defer)
		n->ops->defer(n->opaque);
}

void nhi_timer_fire(struct nhi *n, int timer)
{
	if (timer == NHI_TIMER_HOTPLUG) {
		n->hotplug_timer_armed = false;
		router_hotplug_tick(n);
	} else if (timer >= NHI_TIMER_IRQ0 &&
		   timer < NHI_TIMER_IRQ0 + (int)NHI_MSIX_VECTORS) {
		unsigned int vec = (unsigned int)(timer - NHI_TIMER_IRQ0);

		if (n->irq_deferred & (1u << vec)) {
			n->irq_deferred &= ~(1u << vec);
			fire_vector(n, vec);
		}
	} else if (timer == NHI_TIMER_COMPL) {
		compl_timer_fire(n);
	} else if (timer == NHI_TIMER_TXPACE) {
		pace_timer_fire(n);
	}
}

/* ------------------------------------------------------------------ */
/* life cycle                                                           */

static void nhi_regs_reset(struct nhi *n)
{
	for (unsigned int i = 0; i < NHI_MAX_HOPS; i++) {
		held_clear(&n->tx[i]);
		held_clear(&n->rx[i]);
		late_clear(&n->tx[i]);
		late_clear(&n->rx[i]);
		memset(&n->tx[i], 0, sizeof(n->tx[i]));
		memset(&n->rx[i], 0, sizeof(n->rx[i]));
	}
	if (n->ops->timer_arm) {
		if (n->compl_timer_at >= 0)
			n->ops->timer_arm(n->opaque, NHI_TIMER_COMPL, -1);
		if (n->pace_timer_at >= 0)
			n->ops->timer_arm(n->opaque, NHI_TIMER_TXPACE, -1);
	}
	n->compl_timer_at = -1;
	n->pace_timer_at = -1;
	n->e2e_seq_next = 0;
	n->hrr_done_at = 0;
	memset(n->int_enable, 0, sizeof(n->int_enable));
	memset(n->int_status, 0, sizeof(n->int_status));
	memset(n->int_missed, 0, sizeof(n->int_missed));
	memset(n->ivr, 0, sizeof(n->ivr));
	memset(n->throttle, 0, sizeof(n->throttle));
	memset(n->irq_last, 0, sizeof(n->irq_last));
	for (unsigned int v = 0; v < NHI_MSIX_VECTORS; v++)
		if ((n->irq_deferred & (1u << v)) && n->ops->timer_arm)
			n->ops->timer_arm(n->opaque, NHI_TIMER_IRQ0 + (int)v, -1);
	n->irq_deferred = 0;
	n->tx_deferred = 0;
	n->dma_misc = 0;
	n->inmail_data = 0;
	n->inmail_cmd = 0;
}

void nhi_reset(struct nhi *n)
{
	nhi_log(n, NHI_LOG_TRACE, "reset");
	nhi_regs_reset(n);
	n->hrr_hold = false;
	router_reset(n);
}

struct nhi *nhi_new(const struct nhi_config *cfg,
		    const struct nhi_host_ops *ops, void *opaque,
		    char *err, size_t errlen)
{
	struct nhi *n;

	if (!cfg || !ops || !ops->dma_read || !ops->dma_write) {
		snprintf(err, errlen, "missing configuration or DMA ops");
		return NULL;
	}
	if (nhi_profile_validate(&cfg->profile, err, errlen))
		return NULL;
	if (cfg->uid == 0) {
		snprintf(err, errlen, "uid must be non-zero");
		return NULL;
	}
	n = calloc(1, sizeof(*n));
	if (!n) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	n->cfg = *cfg;
	n->p = &n->cfg.profile;
	n->ops = ops;
	n->opaque = opaque;
	n->hops = n->p->hop_count;
	n->irq_hops = n->p->hop_count_reported ? n->p->hop_count_reported :
						   n->hops;
	n->compl_timer_at = -1;
	n->tx_budget = -1;
	n->pace_timer_at = -1;
	n->tx_credits = calloc(PATH_MAX_HOPS, sizeof(*n->tx_credits));
	n->tx_credit_active = calloc(PATH_MAX_HOPS, 1);
	if (!n->tx_credits || !n->tx_credit_active) {
		free(n->tx_credits);
		free(n->tx_credit_active);
		free(n);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	router_init(n);
	nhi_reset(n);
	return n;
}

void nhi_free(struct nhi *n)
{
	if (!n)
		return;
	nhi_regs_reset(n);
	router_free(n);
	free(n->tx_credits);
	free(n->tx_credit_active);
	free(n);
}

void nhi_set_trace(struct nhi *n, bool on)
{
	n->cfg.trace = on;
}

const struct nhi_stats *nhi_get_stats(const struct nhi *n)
{
	return &n->st;
}

static size_t late_count(const struct nhi_ring *r)
{
	size_t k = 0;

	for (const struct late_compl *c = r->late_head; c; c = c->next)
		k++;
	return k;
}

/* Append to BUF (SIZE bytes, *AT used so far), truncating quietly. */
static void dump_add(char *buf, size_t size, size_t *at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void dump_add(char *buf, size_t size, size_t *at, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (*at + 1 >= size)
		return;
	va_start(ap, fmt);
	k = vsnprintf(buf + *at, size - *at, fmt, ap);
	va_end(ap);
	if (k > 0)
		*at = (size_t)k < size - *at ? *at + (size_t)k : size - 1;
}

size_t nhi_rings_describe(const struct nhi *n, char *buf, size_t size)
{
	size_t at = 0;

	if (!size)
		return 0;
	buf[0] = '\0';
	dump_add(buf, size, &at,
		 "irq enable 0x%08x 0x%08x status 0x%08x 0x%08x missed 0x%08x 0x%08x deferred 0x%x tx_deferred 0x%x link %s\n",
		 n->int_enable[0], n->int_enable[1], n->int_status[0],
		 n->int_status[1], n->int_missed[0], n->int_missed[1],
		 n->irq_deferred, n->tx_deferred, n->link_up ? "up" : "down");
	for (unsigned int i = 0; i < n->hops; i++) {
		const struct nhi_ring *t = &n->tx[i], *r = &n->rx[i];

		if (t->enabled || t->faulted) {
			int oh = router_out_hop_for_ring(n, i);

			dump_add(buf, size, &at,
				 "tx %u: size %u hw %u drv %u%s%s%s late %zu",
				 i, t->size, t->hw, t->drv,
				 t->faulted ? " faulted" : "",
				 t->stalled ? " stalled" : "",
				 (n->tx_deferred & (1u << i)) ? " doorbell" : "",
				 late_count(t));
			if (oh > 0)
				dump_add(buf, size, &at, " hop %d credits %u%s", oh,
					 n->tx_credits[oh],
					 n->tx_credit_active[oh] ? " e2e" : "");
			dump_add(buf, size, &at, "\n");
		}
		if (r->enabled || r->faulted) {
			dump_add(buf, size, &at,
				 "rx %u: size %u hw %u drv %u avail %u%s%s held %u late %zu",
				 i, r->size, r->hw, r->drv, rx_avail(r),
				 r->faulted ? " faulted" : "",
				 (r->opt0 & RING_FLAG_E2E) ? " e2e" : "",
				 r->held_count, late_count(r));
			if (r->opt0 & RING_FLAG_E2E)
				dump_add(buf, size, &at,
					 " granted %u used %u hop %d",
					 r->credits_granted, r->credits_used,
					 router_in_hop_for_ring(n, i));
			dump_add(buf, size, &at, "\n");
		}
	}
	return at;
}

/* ------------------------------------------------------------------ */
/* fault hooks                                                          */

int nhi_fault_set(struct nhi *n, enum nhi_fault_kind kind, unsigned int ring,
		  uint64_t value)
{
	bool rx = ring & NHI_FAULT_RX;
	unsigned int ri = ring & ~NHI_FAULT_RX;
	struct nhi_ring *r;

	if (kind == NHI_FAULT_PATH_REFUSE) {
		if (ring)
			return -1;
		n->f_path_refuse = value;
		nhi_log(n, NHI_LOG_INFO, "fault: refuse the next %llu path activations",
			(unsigned long long)value);
		return 0;
	}
	if (kind == NHI_FAULT_CLEAR_ALL) {
		n->f_path_refuse = 0;
		for (unsigned int i = 0; i < NHI_MAX_HOPS; i++) {
			nhi_fault_set(n, NHI_FAULT_CLEAR, i, 0);
			nhi_fault_set(n, NHI_FAULT_CLEAR, i | NHI_FAULT_RX, 0);
		}
		return 0;
	}
	if (ri >= n->hops || (ring & ~(NHI_FAULT_RX | 0xffu)))
		return -1;
	r = rx ? &n->rx[ri] : &n->tx[ri];
	switch (kind) {
	case NHI_FAULT_CLEAR:
		r->f_nth = r->f_every = r->f_count = 0;
		r->f_delay_ns = 0;
		break;
	case NHI_FAULT_DROP_IRQ_NTH:
		r->f_nth = value;
		r->f_count = 0;
		break;
	case NHI_FAULT_DROP_IRQ_EVERY:
		r->f_every = value;
		r->f_count = 0;
		break;
	case NHI_FAULT_DELAY_US:
		if (value > 60000000ull)
			return -1;
		r->f_delay_ns = (int64_t)value * 1000;
		break;
	default:
		return -1;
	}
	nhi_log(n, NHI_LOG_INFO, "fault: %s ring %u kind %d value %llu",
		rx ? "RX" : "TX", ri, (int)kind, (unsigned long long)value);
	return 0;
}

static int fault_err(char *err, size_t errlen, const char *what,
		     const char *word)
{
	if (err && errlen)
		snprintf(err, errlen, "%s '%s'", what, word);
	return -1;
}

/* One command: "drop-irq|delay|path-refuse|clear" followed by key=value
 * words. */
static int fault_cmd(struct nhi *n, char *cmd, char *err, size_t errlen)
{
	char *save = NULL, *w = strtok_r(cmd, " \t", &save);
	long long ring = -1;
	unsigned long long nth = 0, every = 0, us = 0, count = 0;
	bool have_us = false, have_count = false;
	const char *verb;

	if (!w)
		return 0; /* empty */
	verb = w;
	if (strcmp(verb, "clear") && strcmp(verb, "drop-irq") &&
	    strcmp(verb, "delay") && strcmp(verb, "path-refuse"))
		return fault_err(err, errlen, "unknown fault", verb);
	while ((w = strtok_r(NULL, " \t", &save))) {
		char *eq = strchr(w, '='), *end;
		unsigned long long v;

		if (!eq)
			return fault_err(err, errlen, "expected key=value, got", w);
		*eq = 0;
		v = strtoull(eq + 1, &end, 0);
		if (!eq[1] || *end)
			return fault_err(err, errlen, "bad value for", w);
		if (!strcmp(w, "tx") && v < NHI_MAX_HOPS)
			ring = (long long)v;
		else if (!strcmp(w, "rx") && v < NHI_MAX_HOPS)
			ring = (long long)(v | NHI_FAULT_RX);
		else if (!strcmp(w, "nth") && v)
			nth = v;
		else if (!strcmp(w, "every") && v)
			every = v;
		else if (!strcmp(w, "us")) {
			us = v;
			have_us = true;
		} else if (!strcmp(w, "count")) {
			count = v;
			have_count = true;
		} else
			return fault_err(err, errlen, "bad argument", w);
	}
	if (!strcmp(verb, "path-refuse")) {
		if (!have_count || ring >= 0 || nth || every || have_us)
			return fault_err(err, errlen, "give only count=N to", verb);
		return nhi_fault_set(n, NHI_FAULT_PATH_REFUSE, 0, count);
	}
	if (have_count)
		return fault_err(err, errlen, "count=N is for path-refuse, not", verb);
	if (!strcmp(verb, "clear")) {
		if (ring < 0)
			return nhi_fault_set(n, NHI_FAULT_CLEAR_ALL, 0, 0);
		return nhi_fault_set(n, NHI_FAULT_CLEAR, (unsigned int)ring, 0) ?
		       fault_err(err, errlen, "no such ring in", verb) : 0;
	}
	if (ring < 0)
		return fault_err(err, errlen, "give tx=N or rx=N to", verb);
	if (!strcmp(verb, "drop-irq")) {
		if (!nth == !every)
			return fault_err(err, errlen, "give one of nth=K, every=K to",
					 verb);
		if (nhi_fault_set(n, nth ? NHI_FAULT_DROP_IRQ_NTH :
				  NHI_FAULT_DROP_IRQ_EVERY, (unsigned int)ring,
				  nth ? nth : every))
			return fault_err(err, errlen, "no such ring in", verb);
		return 0;
	}
	/* delay */
	{
		if (!have_us)
			return fault_err(err, errlen, "give us=N to", verb);
		if (nhi_fault_set(n, NHI_FAULT_DELAY_US, (unsigned int)ring, us))
			return fault_err(err, errlen, "bad ring or delay in", verb);
	}
	return 0;
}

int nhi_fault_parse(struct nhi *n, const char *text, char *err, size_t errlen)
{
	char buf[512], *save = NULL, *cmd;

	if (!text)
		return 0;
	if (strlen(text) >= sizeof(buf))
		return fault_err(err, errlen, "too long:", "fault");
	memcpy(buf, text, strlen(text) + 1);
	for (cmd = strtok_r(buf, ";", &save); cmd;
	     cmd = strtok_r(NULL, ";", &save)) {
		char one[512];

		memcpy(one, cmd, strlen(cmd) + 1);
		if (fault_cmd(n, one, err, errlen))
			return -1;
	}
	return 0;
}
