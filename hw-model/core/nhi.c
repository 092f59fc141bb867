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

	if (idx >= 3 * n->hops)
		return;
	n->int_status[idx / 32] |= bit;
	if (idx >= 2 * n->hops)
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
	uint32_t valid = int_valid_mask(dw, 2 * n->hops);
	uint32_t old = n->int_enable[dw];
	uint32_t rising;

	if (val & ~valid)
		nhi_guest_error(n, "interrupt enable bits 0x%x beyond %u rings",
				val & ~valid, n->hops);
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

static void ring_reset_indices(struct nhi_ring *r)
{
	r->hw = 0;
	r->drv = 0;
	r->credits_granted = 0;
	r->credits_used = 0;
	r->faulted = false;
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
	le32_put(desc, d8);
	if (n->ops->dma_write(n->opaque, da + 8, desc, 4)) {
		ring_fault(n, r, "RX descriptor write", da + 8);
		return;
	}
	r->hw = (r->hw + 1) % r->size;
	r->credits_used++;
	if (ri) {
		n->st.rx_frames++;
		n->st.rx_bytes += len;
	}
	nhi_log(n, NHI_LOG_TRACE, "RX ring %u: frame len %u sof %u eof %u flags 0x%x",
		ri, len, sof, eof, f);
	nhi_raise(n, ri + n->hops);
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
	nhi_raise(n, ri + 2 * n->hops);
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
		if (ri != 0 &&
		    !router_tx_frame(n, ri, sof, eof, NULL, len, true))
			return; /* waiting for E2E credits */
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
			router_tx_frame(n, ri, sof, eof, buf, len, false);
		}
		/* the ring may have been stopped by what we just did */
		if (!r->enabled)
			return;
		d8 |= (uint32_t)DESC_F_COMPLETED << DESC_FLAGS_SHIFT;
		le32_put(desc + 8, d8);
		if (n->ops->dma_write(n->opaque, da + 8, desc + 8, 4)) {
			ring_fault(n, r, "TX descriptor write", da + 8);
			return;
		}
		r->hw = (r->hw + 1) % r->size;
		if (d8 & ((uint32_t)DESC_F_INTERRUPT << DESC_FLAGS_SHIFT))
			nhi_raise(n, ri);
	}
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
	c.credits = (uint16_t)grant;
	r->credits_granted += grant;
	n->st.credits_sent += grant;
	router_send_msg(n, ODL_LINK_CREDIT, &c, sizeof(c), NULL, 0);
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
		v = n->hops & 0x3ff;
	} else if (off == REG_DMA_MISC) {
		v = n->dma_misc;
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
				     DMA_MISC_DISABLE_AUTO_CLEAR);
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

void nhi_run_deferred(struct nhi *n)
{
	while (n->tx_deferred) {
		unsigned int ri = (unsigned int)__builtin_ctz(n->tx_deferred);

		n->tx_deferred &= ~(1u << ri);
		nhi_tx_kick(n, ri);
	}
}

void nhi_timer_fire(struct nhi *n, int timer)
{
	if (timer == NHI_TIMER_HOTPLUG) {
		n->hotplug_timer_armed = false;
		router_hotplug_tick(n);
	} else if (timer >= NHI_TIMER_IRQ0 && timer < NHI_TIMER_COUNT) {
		unsigned int vec = (unsigned int)(timer - NHI_TIMER_IRQ0);

		if (n->irq_deferred & (1u << vec)) {
			n->irq_deferred &= ~(1u << vec);
			fire_vector(n, vec);
		}
	}
}

/* ------------------------------------------------------------------ */
/* life cycle                                                           */

static void nhi_regs_reset(struct nhi *n)
{
	for (unsigned int i = 0; i < NHI_MAX_HOPS; i++) {
		held_clear(&n->tx[i]);
		held_clear(&n->rx[i]);
		memset(&n->tx[i], 0, sizeof(n->tx[i]));
		memset(&n->rx[i], 0, sizeof(n->rx[i]));
	}
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
