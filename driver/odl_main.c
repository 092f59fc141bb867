// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
/*
 * odl_tb5 - OdinLink DMA channel between two hosts joined by a
 * Thunderbolt/USB4 cable.
 *
 * This file: the XDomain service (property directory, service driver),
 * the login/logout handshake with the peer, the DMA rings and paths, and
 * the framing of messages into 4 KiB ring frames and back.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/list_sort.h>
#include <linux/llist.h>
#include <linux/dma-mapping.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "odl_tb5.h"

#define ODL_SERVICE_KEY		"odltb5"
#define ODL_PRTCID		1
#define ODL_PRTCVERS		1
#define ODL_PRTCREVS		1
#define ODL_STNS_E2E		BIT(0)

#define ODL_LOGIN_TIMEOUT_MS	1000
#define ODL_LOGOUT_TIMEOUT_MS	500
#define ODL_LOGIN_BACKOFF_MIN	100
#define ODL_LOGIN_BACKOFF_MAX	5000
/* a path enable that keeps failing is tried on, but at most once a minute:
 * each failure is a stock WARN in dmesg
 */
#define ODL_CONNECT_BACKOFF_MAX	60000
/* unanswered LOGINs before odl_nudge_peers(), and how often after that */
#define ODL_NUDGE_AFTER		4
#define ODL_NUDGE_EVERY		8
/* a key never registered: odl_nudge_peers() */
#define ODL_NUDGE_KEY		"odlnudge"

/* Property directory UUID: 3a8f5d27-91c4-4e0b-b6d2-0d15c0de7b50 */
static const uuid_t odl_dir_uuid =
	UUID_INIT(0x3a8f5d27, 0x91c4, 0x4e0b,
		  0xb6, 0xd2, 0x0d, 0x15, 0xc0, 0xde, 0x7b, 0x50);

/* Handshake protocol UUID: 7c1e2b9a-4d63-4f8e-a5b0-0d1cab1e5b05 */
static const uuid_t odl_proto_uuid =
	UUID_INIT(0x7c1e2b9a, 0x4d63, 0x4f8e,
		  0xa5, 0xb0, 0x0d, 0x1c, 0xab, 0x1e, 0x5b, 0x05);

static unsigned int ring_size = 4096;
module_param(ring_size, uint, 0444);
MODULE_PARM_DESC(ring_size,
		 "descriptors per TX/RX ring, power of two 64..16384 (default: 4096)");

static char *e2e = "auto";
module_param(e2e, charp, 0444);
MODULE_PARM_DESC(e2e,
		 "end-to-end flow control on the RX ring: auto|on|off (default: auto = if the peer offers it, falling back to software credits when the TX ring wedges)");

static unsigned int poll_ms = 20;
module_param(poll_ms, uint, 0644);
MODULE_PARM_DESC(poll_ms,
		 "completion poll period: a completion left for this long without its interrupt is picked up by the poll, 0 = off (default: 20)");

static unsigned int tx_wedge_ms;
module_param(tx_wedge_ms, uint, 0644);
MODULE_PARM_DESC(tx_wedge_ms,
		 "TX descriptors posted and not consumed for this long with E2E on is a wedge (e2e=auto: fall back to software credits); 0 = rx_stall_ms + 2000, longer than any hold of a healthy peer (default: 0)");

static unsigned int rx_stall_ms = 10000;
module_param(rx_stall_ms, uint, 0644);
MODULE_PARM_DESC(rx_stall_ms,
		 "how long a message may hold the RX ring while its port has no RECV posted and the pending queue is full, then it is dropped (default: 10000)");

/* features whose absence is a state the protocol already has (an older
 * peer's), so a user may withhold them
 */
#define ODL_FEAT_OPTIONAL (ODL_TB5_FEAT_KEYED | ODL_TB5_FEAT_EMPTY)

static unsigned int features_off;
module_param(features_off, uint, 0444);
MODULE_PARM_DESC(features_off,
		 "features not offered at login, as a peer before them would not: 0x8 keyed messages, 0x10 empty messages; both sides then go without them (default: 0)");

/* not atomic: two devices reallocating at once may both take the last one */
static unsigned int test_realloc_fail;
module_param(test_realloc_fail, uint, 0644);
MODULE_PARM_DESC(test_realloc_fail,
		 "Testing: the next this many ring allocations after a connection (the reallocation of an E2E fallback or of following a peer without E2E, then the login work's retries) fail as if memory had run out (default: 0)");

static unsigned int test_path_delay_ms;
module_param(test_path_delay_ms, uint, 0644);
MODULE_PARM_DESC(test_path_delay_ms,
		 "testing: wait this long, at most 60000 ms, after starting the rings and before enabling the DMA paths at login, holding the connection's lock (a slow controller; odl-unplug and odl-badinput use it); read again while waiting, so writing 0 ends the wait, and an unplug ends it too; 0 = none (default: 0)");

bool odl_test_send_unagreed;
module_param_named(test_send_unagreed, odl_test_send_unagreed, bool, 0644);
MODULE_PARM_DESC(test_send_unagreed,
		 "testing: SENDs with a key and empty SENDs go out even to a peer that did not agree to them at login, as from a hostile peer (odl-badinput checks the receiver drops them) (default: N)");

unsigned int odl_busy_poll;
module_param_named(busy_poll, odl_busy_poll, uint, 0644);
MODULE_PARM_DESC(busy_poll,
		 "microseconds a waiting POLL_CQ spins before sleeping, 0..10000 (default: 0)");

enum odl_e2e_mode { ODL_E2E_AUTO, ODL_E2E_ON, ODL_E2E_OFF };
static enum odl_e2e_mode odl_e2e_mode;

u32 odl_e2e_setting(void)
{
	return odl_e2e_mode;
}

u32 odl_features_withheld(void)
{
	return features_off;
}

static struct tb_property_dir *odl_dir;

/* ---------------------------------------------------------------------
 * Handshake messages (XDomain packets, dwords in CPU order after the
 * control channel's conversion; UUIDs are raw bytes).
 */
enum odl_xd_type {
	ODL_XD_LOGIN = 1,
	ODL_XD_LOGIN_RESPONSE = 2,
	ODL_XD_LOGOUT = 3,
	ODL_XD_STATUS = 4,
	ODL_XD_READY = 5,	/* RX_READY: my receive side is up */
};

enum odl_xd_status {
	ODL_XD_OK = 0,
	ODL_XD_EPROTO = 1,	/* no common protocol version */
	ODL_XD_EINVAL = 2,	/* a field is out of range */
	ODL_XD_EBUSY = 3,	/* not ready, try again */
};

#define ODL_XD_LENGTH_MASK	GENMASK(5, 0)
#define ODL_XD_SN_MASK		GENMASK(28, 27)
#define ODL_XD_SN_SHIFT		27

/* the first three dwords of every XDomain packet: odl_fill_head() */
struct odl_xd_head {
	u32 route_hi;
	u32 route_lo;
	u32 length_sn;
};

struct odl_xd_hdr {
	struct odl_xd_head xd;
	uuid_t proto_uuid;
	uuid_t initiator_uuid;
	uuid_t target_uuid;
	u32 type;
	u32 command_id;
};

/*
 * A UUID request of the XDomain discovery protocol (router-cm.md 3.3),
 * protocol UUID b638d70e-42ff-40bb-97c2-90e2c0b2ff07: the only message of
 * that protocol odl_tb5 sends itself (odl_restart_peer()).
 */
static const uuid_t odl_xdp_uuid =
	UUID_INIT(0xb638d70e, 0x42ff, 0x40bb,
		  0x97, 0xc2, 0x90, 0xe2, 0xc0, 0xb2, 0xff, 0x07);
#define ODL_XDP_UUID_REQUEST	12

struct odl_xdp_uuid_req {
	struct odl_xd_head xd;
	uuid_t proto_uuid;
	u32 type;
};

struct odl_xdp_uuid_resp {
	struct odl_xdp_uuid_req hdr;
	uuid_t src_uuid;
	u32 src_route_hi;
	u32 src_route_lo;
};

struct odl_xd_login {
	struct odl_xd_hdr hdr;
	u32 proto_min;
	u32 proto_max;
	u32 session;
	u32 transmit_path;
	u32 ring_size;
	u32 frame_size;
	u32 features;
	u32 max_msg;
	u32 reserved[4];
};

struct odl_xd_login_response {
	struct odl_xd_hdr hdr;
	u32 status;
	u32 proto_version;
	u32 session;
	u32 ring_size;
	u32 features;
	u32 reserved[3];
};

struct odl_xd_logout {
	struct odl_xd_hdr hdr;
	u32 session;
	u32 reserved;
};

/* READY (feature ODL_TB5_FEAT_RX_READY): sent once the sender's RX ring
 * holds buffers and its DMA paths are enabled, for the connection of
 * sessions (session, peer_session); answered with a STATUS.
 */
struct odl_xd_ready {
	struct odl_xd_hdr hdr;
	u32 session;		/* the sender's session */
	u32 peer_session;	/* the receiver's session, as the sender knows it */
	u32 reserved[2];
};

struct odl_xd_status_msg {
	struct odl_xd_hdr hdr;
	u32 status;
	u32 reserved;
};

union odl_xd_any {
	struct odl_xd_hdr hdr;
	struct odl_xd_login login;
	struct odl_xd_login_response login_resp;
	struct odl_xd_logout logout;
	struct odl_xd_ready ready;
	struct odl_xd_status_msg status;
};

/* route, and the length (dwords after the head) of a SIZE-byte packet */
static void odl_fill_head(struct odl_xd_head *head, u64 route, u8 sequence,
			  size_t size)
{
	head->route_hi = upper_32_bits(route);
	head->route_lo = lower_32_bits(route);
	head->length_sn = ((size - sizeof(*head)) / 4) & ODL_XD_LENGTH_MASK;
	head->length_sn |= (sequence << ODL_XD_SN_SHIFT) & ODL_XD_SN_MASK;
}

static void odl_fill_hdr(struct odl_xd_hdr *hdr, u64 route, u8 sequence,
			 const uuid_t *initiator, const uuid_t *target,
			 u32 type, size_t size, u32 command_id)
{
	odl_fill_head(&hdr->xd, route, sequence, size);
	uuid_copy(&hdr->proto_uuid, &odl_proto_uuid);
	uuid_copy(&hdr->initiator_uuid, initiator);
	uuid_copy(&hdr->target_uuid, target);
	hdr->type = type;
	hdr->command_id = command_id;
}

u32 odl_local_features(const struct odl_dev *dev)
{
	/* also read unlocked (sysfs features) */
	return ((READ_ONCE(dev->e2e) ? ODL_TB5_FEAT_E2E : 0) |
		ODL_TB5_FEAT_SW_CREDITS |
		ODL_TB5_FEAT_RX_READY | ODL_TB5_FEAT_KEYED |
		ODL_TB5_FEAT_EMPTY) & ~features_off;
}

/* ---------------------------------------------------------------------
 * Completions and delivery to files (dev->lock held)
 */
/* an event found no slot: POLL_CQ reports it after the completions
 * queued before, and a waiter (a batch one too) is to come and fetch
 */
static void odl_event_lost(struct odl_file *f)
{
	if (!f->events_lost)
		f->lost_at = f->cq_pushed;
	f->events_lost++;
	f->dev->stats.events_lost++;
	wake_up_interruptible(&f->wq);
	if (f->cq_batch_waiters)
		wake_up_interruptible(&f->bwq);
}

void odl_cq_push(struct odl_file *f, u64 cookie, u32 type, int status,
		 u64 len, u32 src_port, u32 flags)
{
	struct odl_tb5_completion *c;

	if (f->cq_count >= ODL_CQ_SIZE) {
		/* only events: sends and receives keep their slots */
		WARN_ON_ONCE(type != ODL_TB5_COMP_EVENT);
		odl_event_lost(f);
		return;
	}
	c = &f->cq[(f->cq_head + f->cq_count) % ODL_CQ_SIZE];
	c->cookie = cookie;
	c->type = type;
	c->status = status;
	c->length = len;
	c->src_port = src_port;
	c->flags = flags;
	f->cq_count++;
	f->cq_pushed++;
	if (type == ODL_TB5_COMP_EVENT)
		f->cq_urgent = true;
	/* poll() and single waiters: every completion; batch waiters
	 * once their batch is there
	 */
	wake_up_interruptible(&f->wq);
	if (f->cq_batch_waiters &&
	    (f->cq_urgent || f->cq_count >= f->cq_batch_want))
		wake_up_interruptible(&f->bwq);
}

/* An event takes a slot only if sends and receives keep theirs. */
static void odl_event(struct odl_file *f, int status, u32 flags)
{
	if (odl_cq_full(f)) {
		odl_event_lost(f);
		return;
	}
	odl_cq_push(f, 0, ODL_TB5_COMP_EVENT, status, 0, 0, flags);
}

/* a message for f is dropped: counted, and f told (an event) */
static void odl_drop_msg(struct odl_dev *dev, struct odl_file *f)
{
	dev->stats.drops++;
	odl_event(f, -ENOBUFS, ODL_TB5_CF_MSG_LOST);
}

static void odl_event_all(struct odl_dev *dev, int status, u32 flags)
{
	struct odl_file *f;

	list_for_each_entry(f, &dev->files, list)
		if (f->port || flags != ODL_TB5_CF_MSG_LOST)
			odl_event(f, status, flags);
}

static void odl_recv_done(struct odl_dev *dev, struct odl_recv *r, int status,
			  u64 len, u32 src_port)
{
	struct odl_file *f = r->file;

	if (r->dmabuf)
		r->dmabuf->users--;
	f->recvs_out--;
	odl_cq_push(f, r->cookie, ODL_TB5_COMP_RECV, status, len, src_port, 0);
	kfree(r);
}

static void odl_send_done(struct odl_dev *dev, struct odl_send *s)
{
	struct odl_file *f = s->file;

	if (f) {
		if (s->dmabuf)
			s->dmabuf->users--;
		f->sends_out--;
		odl_cq_push(f, s->cookie, ODL_TB5_COMP_SEND, s->status,
			    s->status ? 0 : s->len, 0, 0);
	}
	if (!s->status) {
		dev->stats.tx_msgs++;
		dev->stats.tx_bytes += s->len;
	}
	kfree(s);
}

/* the keyed RECV posted with @key, or NULL */
static struct odl_recv *odl_find_krecv(struct odl_file *f, u32 key)
{
	struct odl_recv *r;

	list_for_each_entry(r, &f->krecvs, list)
		if (r->key == key)
			return r;
	return NULL;
}

/* The RECV a message with @key goes to: the oldest unkeyed one for key 0,
 * else the one posted with that key.
 */
static struct odl_recv *odl_peek_recv(struct odl_file *f, u32 key)
{
	if (key)
		return odl_find_krecv(f, key);
	return list_first_entry_or_null(&f->recvs, struct odl_recv, list);
}

/* Where @f remembers @key as withdrawn (CANCEL), or NULL (dev->lock held) */
static u32 *odl_cancelled_slot(struct odl_file *f, u32 key)
{
	unsigned int i;

	if (!key)
		return NULL;
	for (i = 0; i < ODL_CANCELLED_MAX; i++)
		if (f->cancelled[i] == key)
			return &f->cancelled[i];
	return NULL;
}

/* A message for a withdrawn key: forget the key, count the discard. */
static bool odl_cancelled_take(struct odl_dev *dev, struct odl_file *f,
			       u32 key)
{
	u32 *slot = odl_cancelled_slot(f, key);

	if (!slot)
		return false;
	*slot = 0;
	dev->stats.rx_cancelled++;
	return true;
}

/* odl_peek_recv, taken off its list */
static struct odl_recv *odl_take_recv(struct odl_file *f, u32 key)
{
	struct odl_recv *r = odl_peek_recv(f, key);

	if (r)
		list_del(&r->list);
	return r;
}

static bool odl_pending_fits(u32 count, u64 bytes, u32 len)
{
	return count < ODL_PENDING_MAX && bytes + len <= ODL_PENDING_BYTES;
}

/* Hold @p back for @f: at the end of its file's list and the device's
 * (dev->lock held)
 */
static void odl_pending_add(struct odl_dev *dev, struct odl_file *f,
			    struct odl_pending *p)
{
	p->file = f;
	p->since = jiffies;
	list_add_tail(&p->list, &f->pending);
	list_add_tail(&p->all, &dev->pending);
	dev->pending_count++;
	dev->pending_bytes += p->len;
}

/*
 * Message buffers are let go of under dev->lock, and vfree may sleep: a
 * vmalloc'd one is freed by a work item instead (its first bytes link it
 * in, nothing else reads it any more); odl_exit waits for the last.
 */
static LLIST_HEAD(odl_free_list);

static void odl_free_work_fn(struct work_struct *work)
{
	struct llist_node *n, *next;

	llist_for_each_safe(n, next, llist_del_all(&odl_free_list))
		vfree(n);
}
static DECLARE_WORK(odl_free_work, odl_free_work_fn);

static void odl_kvfree_locked(void *p)
{
	if (!p)
		return;
	if (!is_vmalloc_addr(p)) {
		kfree(p);
		return;
	}
	if (llist_add(p, &odl_free_list))
		schedule_work(&odl_free_work);
}

/* Take @p off both lists and free it (dev->lock held) */
static void odl_pending_free(struct odl_dev *dev, struct odl_pending *p)
{
	list_del(&p->list);
	list_del(&p->all);
	dev->pending_count--;
	dev->pending_bytes -= p->len;
	odl_kvfree_locked(p->data);
	kfree(p);
}

/*
 * Room for a message of @len among those held back for a RECV (dev->lock
 * held). Where there is none, the oldest ones that have waited rx_stall_ms
 * or longer are dropped to make it, as many as it takes (each file gets
 * the lost-message EVENT, counted in drops), so messages nobody receives
 * (a hostile peer's, one for a RECV never posted) cannot keep the room for
 * good and hold the RX ring for every port. False: no room, and dropping
 * all that waited that long would not make it (then none is dropped).
 * The device's list is in arrival order, so the stale ones come first and
 * both passes stop at the first message they keep.
 */
static bool odl_pending_room(struct odl_dev *dev, u32 len)
{
	unsigned long wait = msecs_to_jiffies(READ_ONCE(rx_stall_ms));
	u32 count = dev->pending_count;
	u64 bytes = dev->pending_bytes;
	struct odl_pending *p;

	list_for_each_entry(p, &dev->pending, all) {
		if (odl_pending_fits(count, bytes, len) ||
		    time_before(jiffies, p->since + wait))
			break;
		count--;
		bytes -= p->len;
	}
	if (!odl_pending_fits(count, bytes, len))
		return false;
	while (!odl_pending_fits(dev->pending_count, dev->pending_bytes,
				 len)) {
		p = list_first_entry(&dev->pending, struct odl_pending, all);
		odl_drop_msg(dev, p->file);
		odl_pending_free(dev, p);
	}
	return true;
}

/* Report a failed message to the file bound to @port. */
static void odl_deliver_error(struct odl_dev *dev, u16 port, u16 src_port,
			      u32 key, int status)
{
	struct odl_file *f = port <= ODL_TB5_MAX_PORT ? dev->ports[port] : NULL;
	struct odl_pending *p;
	struct odl_recv *r;

	if (!f) {
		dev->stats.no_port++;
		return;
	}
	r = odl_take_recv(f, key);
	if (r) {
		odl_recv_done(dev, r, status, 0, src_port);
		return;
	}
	if (odl_cancelled_take(dev, f, key))
		return;
	if (!odl_pending_room(dev, 0)) {
		odl_drop_msg(dev, f);
		return;
	}
	p = kzalloc(sizeof(*p), GFP_ATOMIC);
	if (!p) {
		odl_drop_msg(dev, f);
		return;
	}
	p->status = status;
	p->src_port = src_port;
	p->key = key;
	odl_pending_add(dev, f, p);
}

/* Hand waiting messages to posted RECVs: unkeyed ones oldest to oldest,
 * so delivery stays in arrival order, keyed ones to the RECV with their
 * key (dev->lock held).
 */
static void odl_match_pending(struct odl_dev *dev, struct odl_file *f)
{
	struct odl_pending *p, *pn;
	struct odl_recv *r;

	list_for_each_entry_safe(p, pn, &f->pending, list) {
		r = odl_take_recv(f, p->key);
		if (!r)
			continue;
		if (p->status) {
			odl_recv_done(dev, r, p->status, 0, p->src_port);
		} else if (p->len > r->capacity) {
			odl_recv_done(dev, r, -EMSGSIZE, p->len, p->src_port);
		} else {
			memcpy(r->dst, p->data, p->len);
			odl_recv_done(dev, r, 0, p->len, p->src_port);
		}
		odl_pending_free(dev, p);
	}
}

/* ---------------------------------------------------------------------
 * TX
 */

/*
 * What a software credit may grant (dev->lock held): the frames processed,
 * less those the replay work has not put back on the RX ring yet (a credit
 * for them lets the peer send into descriptors that are not there).
 */
static u32 odl_rx_credit_seq(const struct odl_dev *dev)
{
	return dev->rx_ack - dev->rx_unposted;
}

/* Send a software credit frame if one is due (dev->lock held). */
static void odl_tx_credit(struct odl_dev *dev)
{
	struct odl_frame_hdr *h;
	struct odl_frame *fr;

	if (!dev->credit_pending || list_empty(&dev->tx_free))
		return;
	fr = list_first_entry(&dev->tx_free, struct odl_frame, list);
	h = fr->buf;
	memset(h, 0, sizeof(*h));
	h->magic = cpu_to_le32(ODL_CREDIT_MAGIC);
	h->seq = cpu_to_le32(odl_rx_credit_seq(dev));
	fr->frame.size = ODL_HDR_SIZE;
	fr->frame.sof = ODL_PDF_SOF;
	fr->frame.eof = ODL_PDF_CREDIT;
	fr->frame.flags = 0;
	fr->send = NULL;
	if (tb_ring_tx(dev->tx_ring, &fr->frame))
		return;
	list_del(&fr->list);
	dev->tx_inflight++;
	dev->credit_pending = false;
	dev->rx_ack_sent = odl_rx_credit_seq(dev);
	dev->rx_ack_time = jiffies;
	dev->stats.credit_frames++;
}

/* Fill free frames from the send queue (dev->lock held). */
static void odl_tx_pump(struct odl_dev *dev)
{
	/* nothing goes out before the peer's receive side is up */
	if (!dev->tx_ready)
		return;
	if (dev->rx_sw)
		odl_tx_credit(dev);
	while (!list_empty(&dev->txq)) {
		struct odl_send *s;
		struct odl_frame *fr;
		struct odl_frame_hdr *h;
		u32 chunk;
		bool last;
		int ret;

		if (list_empty(&dev->tx_free) ||
		    dev->tx_inflight >= dev->tx_window) {
			dev->stats.credit_stalls++;
			return;
		}
		/* software credits: never more data frames than the peer's
		 * RX ring has room for
		 */
		if (dev->tx_sw && dev->tx_seq - dev->peer_ack >= dev->sw_window) {
			dev->stats.sw_credit_stalls++;
			return;
		}
		s = list_first_entry(&dev->txq, struct odl_send, list);
		fr = list_first_entry(&dev->tx_free, struct odl_frame, list);

		chunk = min_t(u32, ODL_PAYLOAD_MAX, s->len - s->pos);
		last = s->pos + chunk == s->len;
		h = fr->buf;
		h->magic = cpu_to_le32(ODL_FRAME_MAGIC);
		h->seq = cpu_to_le32(dev->tx_seq);
		h->msg_id = cpu_to_le32(s->msg_id);
		h->msg_len = cpu_to_le32(s->len);
		h->offset = cpu_to_le32(s->pos);
		h->dst_port = cpu_to_le16(s->dst_port);
		h->src_port = cpu_to_le16(s->src_port);
		h->payload_len = cpu_to_le32(chunk);
		h->key = cpu_to_le32(s->key);
		memcpy(fr->buf + ODL_HDR_SIZE, s->src + s->pos, chunk);

		/* a 4096-byte frame is encoded as size 0 */
		fr->frame.size = (ODL_HDR_SIZE + chunk) & 0xfff;
		fr->frame.sof = ODL_PDF_SOF;
		fr->frame.eof = last ? ODL_PDF_EOF_LAST : ODL_PDF_EOF_MID;
		fr->frame.flags = 0;
		fr->send = s;

		ret = tb_ring_tx(dev->tx_ring, &fr->frame);
		if (ret) {
			/* ring stopping: teardown fails the queue */
			fr->send = NULL;
			return;
		}
		list_del(&fr->list);
		dev->tx_seq++;
		dev->tx_inflight++;
		dev->stats.tx_frames++;
		s->inflight++;
		s->pos += chunk;
		if (last)
			list_del_init(&s->list);
	}
}

static void odl_tx_callback(struct tb_ring *ring, struct ring_frame *frame,
			    bool canceled)
{
	struct odl_frame *fr = container_of(frame, struct odl_frame, frame);
	struct odl_dev *dev = fr->dev;
	struct odl_send *s;

	spin_lock(&dev->lock);
	s = fr->send;
	fr->send = NULL;
	list_add_tail(&fr->list, &dev->tx_free);
	dev->tx_inflight--;
	if (s) {
		s->inflight--;
		if (canceled && dev->resuming && !s->status && s->file) {
			/* E2E fallback: the message is sent again after the
			 * re-login (odl_requeue_sends); not one whose file has
			 * closed: its memory went with the file
			 */
			if (!s->inflight && list_empty(&s->list))
				list_add_tail(&s->list, &dev->tx_requeue);
			s = NULL;
		} else if (canceled && !s->status) {
			s->status = -ECONNRESET;
		}
		/* fully queued (off txq) and nothing left on the ring */
		if (s && !s->inflight && list_empty(&s->list))
			odl_send_done(dev, s);
	}
	if (!canceled)
		odl_tx_pump(dev);
	spin_unlock(&dev->lock);
}

/*
 * An urgent message goes behind the last urgent or started message of the
 * queue, ahead of the messages that have not started behind it, unless the
 * first of those was overtaken often enough: then at the tail, which keeps
 * urgent messages in order among themselves (dev->lock held).
 */
static void odl_queue_urgent(struct odl_dev *dev, struct odl_send *s)
{
	struct list_head *at = &dev->txq;
	struct odl_send *q, *next;

	list_for_each_entry_reverse(q, &dev->txq, list) {
		if (q->urgent || q->pos) {
			at = &q->list;
			break;
		}
	}
	if (at->next == &dev->txq) {
		list_add_tail(&s->list, &dev->txq);
		return;
	}
	next = list_entry(at->next, struct odl_send, list);
	if (next->overtaken >= ODL_TB5_URGENT_OVERTAKE) {
		list_add_tail(&s->list, &dev->txq);
		return;
	}
	next->overtaken++;
	list_add(&s->list, at);
	dev->stats.urgent_ahead++;
}

int odl_queue_send(struct odl_dev *dev, struct odl_send *s)
{
	spin_lock(&dev->lock);
	if (dev->gone) {
		spin_unlock(&dev->lock);
		return -ENODEV;
	}
	if (!dev->connected && !dev->resuming) {
		spin_unlock(&dev->lock);
		return -ENOTCONN;
	}
	if (s->file->sends_out >= ODL_TB5_MAX_OUTSTANDING ||
	    odl_cq_full(s->file)) {
		spin_unlock(&dev->lock);
		return -EAGAIN;
	}
	s->file->sends_out++;
	if (s->dmabuf)
		s->dmabuf->users++;
	s->msg_id = dev->tx_msg_id++;
	if (s->urgent)
		odl_queue_urgent(dev, s);
	else
		list_add_tail(&s->list, &dev->txq);
	odl_tx_pump(dev);
	spin_unlock(&dev->lock);
	return 0;
}

/* ---------------------------------------------------------------------
 * RX
 */

/* Forget the messages remembered as reported (see odl_rx_failed_add) */
static void odl_rx_failed_forget(struct odl_dev *dev)
{
	dev->rx.nfailed = 0;
	dev->rx.failed_next = 0;
}

/* Give the finished (or failed) message to its file (dev->lock held). */
static void odl_rx_finish(struct odl_dev *dev, int status)
{
	struct odl_file *f;
	struct odl_pending *p;
	bool rebound, kept = true;

	switch (dev->rx.target) {
	case ODL_RX_RECV:
		odl_recv_done(dev, dev->rx.recv, status,
			      status ? 0 : dev->rx.len, dev->rx.src_port);
		break;
	case ODL_RX_STAGE:
		f = dev->ports[dev->rx.dst_port];
		/* bound again while staged: the port's next file never had
		 * the message (as its holder's held-back ones go with it)
		 */
		rebound = f && f->bind_seq != dev->rx.stage_bind;
		if (status || !f || rebound) {
			odl_kvfree_locked(dev->rx.stage);
			/* a failed message for its holder, if it still has
			 * the port; else (unbound or bound again while staged),
			 * whole or failed, one for a port nobody holds: not a
			 * message received
			 */
			if (status && !rebound) {
				odl_deliver_error(dev, dev->rx.dst_port,
						  dev->rx.src_port,
						  dev->rx.key, status);
			} else {
				dev->stats.no_port++;
				kept = false;
			}
			break;
		}
		/* its RECV came while it was staged and was withdrawn: it is
		 * not wanted, like one withdrawn before it began to arrive
		 */
		if (dev->rx.key && odl_cancelled_take(dev, f, dev->rx.key)) {
			odl_kvfree_locked(dev->rx.stage);
			/* counted as that one is: not a received message */
			dev->rx.target = ODL_RX_DISCARD;
			break;
		}
		p = kzalloc(sizeof(*p), GFP_ATOMIC);
		if (!p) {
			odl_kvfree_locked(dev->rx.stage);
			/* counted in drops, not as received */
			odl_drop_msg(dev, f);
			kept = false;
			break;
		}
		p->data = dev->rx.stage;
		p->len = dev->rx.len;
		p->src_port = dev->rx.src_port;
		p->key = dev->rx.key;
		odl_pending_add(dev, f, p);
		/* a RECV posted while this message was being staged: it is
		 * the oldest, so it gets this message now, not the next one
		 */
		odl_match_pending(dev, f);
		break;
	default:
		break;
	}
	/* for a port nobody holds now, like a staged one (above) */
	if (dev->rx.orphaned)
		dev->stats.no_port++;
	dev->rx.orphaned = false;
	if (!status && dev->rx.target != ODL_RX_DISCARD) {
		if (kept) {
			dev->stats.rx_msgs++;
			dev->stats.rx_bytes += dev->rx.len;
		}
		/* a whole message: the damage before it is over */
		odl_rx_failed_forget(dev);
	}
	dev->rx.active = false;
	dev->rx.target = ODL_RX_NONE;
	dev->rx.recv = NULL;
	dev->rx.stage = NULL;
}

/* Remember a message as reported (or knowingly dropped) */
static void odl_rx_failed_add(struct odl_dev *dev, u32 msg_id, u16 dst,
			      u32 key)
{
	struct odl_rx_failed *e = &dev->rx.failed[dev->rx.failed_next];

	e->msg_id = msg_id;
	e->dst_port = dst;
	e->key = key;
	dev->rx.failed_next = (dev->rx.failed_next + 1) % ODL_RX_FAILED;
	if (dev->rx.nfailed < ODL_RX_FAILED)
		dev->rx.nfailed++;
}

/* Was this message (or, with @any_msg, the last message reported) already
 * reported to this port and key?
 */
static bool odl_rx_failed_has(struct odl_dev *dev, u32 msg_id, u16 dst,
			      u32 key, bool any_msg)
{
	const struct odl_rx_failed *e;
	unsigned int i;

	if (any_msg) {
		if (!dev->rx.nfailed)
			return false;
		i = (dev->rx.failed_next + ODL_RX_FAILED - 1) % ODL_RX_FAILED;
		e = &dev->rx.failed[i];
		return e->dst_port == dst && e->key == key;
	}
	for (i = 0; i < dev->rx.nfailed; i++) {
		e = &dev->rx.failed[i];
		if (e->msg_id == msg_id && e->dst_port == dst && e->key == key)
			return true;
	}
	return false;
}

/* a new connection: nothing from before it is remembered */
static void odl_rx_failed_reset(struct odl_dev *dev)
{
	odl_rx_failed_forget(dev);
	dev->rx.lost_unattributed = false;
}

/* Frames lost may have carried whole messages: every bound file hears
 * of it, and the rest of a message whose start was among them is not
 * reported again (lock held)
 */
static void odl_rx_lost_event(struct odl_dev *dev, int status)
{
	odl_event_all(dev, status, ODL_TB5_CF_MSG_LOST);
	dev->rx.lost_unattributed = true;
}

/* Abort the message being reassembled (it is reported once: its later
 * frames are discarded silently); with none, frames may have carried
 * whole messages: tell every bound file.
 */
static void odl_rx_abort(struct odl_dev *dev, int status, bool lost_frames)
{
	if (dev->rx.active) {
		odl_rx_failed_add(dev, dev->rx.msg_id, dev->rx.dst_port,
				  dev->rx.key);
		odl_rx_finish(dev, status);
	} else if (lost_frames) {
		odl_rx_lost_event(dev, status);
	}
}

/*
 * A gap before frame @seq while a message is under way: more frames
 * missing than that message still needed and, if the frame is another
 * message's, than that one's before it? Then whole messages were lost in
 * between, which failing the message under way does not report. Against
 * the number expected and, after a frame whose number may have been the
 * wrong one, the number after that: the smaller gap. (lock held)
 */
static bool odl_rx_gap_beyond(const struct odl_dev *dev, u32 seq, u32 msg_id,
			      u32 off)
{
	u32 gap, known;

	/* a frame of the message under way: no message lies in between */
	if (!dev->rx.seq_valid || !dev->rx.active || msg_id == dev->rx.msg_id)
		return false;
	gap = seq - dev->rx.expect_seq;
	if (dev->rx.seq_alt_valid)
		gap = min(gap, seq - dev->rx.seq_alt);
	known = DIV_ROUND_UP(dev->rx.len - dev->rx.pos, ODL_PAYLOAD_MAX) +
		off / ODL_PAYLOAD_MAX;
	return gap > known;
}

/* Discard the rest of a message from this frame on (lock held) */
static void odl_rx_discard(struct odl_dev *dev, u32 msg_id, u32 msg_len,
			   u32 off, u16 dst, u16 src, u32 key)
{
	dev->rx.active = true;
	dev->rx.target = ODL_RX_DISCARD;
	dev->rx.orphaned = false;
	dev->rx.msg_id = msg_id;
	dev->rx.len = msg_len;
	dev->rx.pos = off;
	dev->rx.dst_port = dst;
	dev->rx.src_port = src;
	dev->rx.key = key;
}

/* Choose where a new message goes (dev->lock held, may drop it). */
static void odl_rx_start(struct odl_dev *dev, u32 msg_id,
			 u32 msg_len, u16 dst, u16 src, u32 key)
{
	struct odl_file *f = dev->ports[dst];
	struct odl_recv *r;
	void *stage;
	u64 bind_seq;

	/* discarded unless a RECV or a staging buffer takes it */
	odl_rx_discard(dev, msg_id, msg_len, 0, dst, src, key);

	/* nobody holds the port (its process may just have exited): not a
	 * loss of anything a receiver asked for, counted apart from drops
	 */
	if (!f) {
		dev->stats.no_port++;
		return;
	}
	r = odl_take_recv(f, key);
	if (r) {
		if (r->capacity < msg_len) {
			odl_recv_done(dev, r, -EMSGSIZE, msg_len, src);
			return;
		}
		dev->rx.target = ODL_RX_RECV;
		dev->rx.recv = r;
		return;
	}
	/* its RECV was withdrawn: nobody wants it, nor should it take room */
	if (odl_cancelled_take(dev, f, key))
		return;
	if (!odl_pending_room(dev, msg_len)) {
		/* only after rx_stall_ms of holding the ring: tell the file */
		odl_drop_msg(dev, f);
		return;
	}
	/* RX is serialised (see odl_rx_callback); only the target may change
	 * while the lock is dropped
	 */
	bind_seq = f->bind_seq;
	spin_unlock(&dev->lock);
	stage = kvmalloc(msg_len, GFP_KERNEL);
	spin_lock(&dev->lock);
	if (!stage) {
		/* the message was f's: tell it, unless it closed while the
		 * lock was dropped (the port's next file never had it, even
		 * one at f's address)
		 */
		if (dev->ports[dst] == f && f->bind_seq == bind_seq)
			odl_drop_msg(dev, f);
		else
			dev->stats.drops++;
		return;
	}
	dev->rx.target = ODL_RX_STAGE;
	dev->rx.stage = stage;
	dev->rx.stage_bind = bind_seq;
}

/* Would the message starting with this frame have to wait: its port is
 * bound, has no RECV posted for it and there is no room among the held
 * back messages, not even by dropping a stale one (odl_pending_room)? Not
 * one that claims to start a message already reported: it is discarded.
 */
static bool odl_rx_must_wait(struct odl_dev *dev, u16 dst, u32 msg_len,
			     u32 msg_id, u32 key)
{
	struct odl_file *f = dev->ports[dst];

	return f && !odl_peek_recv(f, key) && !odl_cancelled_slot(f, key) &&
	       !odl_rx_failed_has(dev, msg_id, dst, key, false) &&
	       !odl_pending_room(dev, msg_len);
}

/* the header of an RX frame, as odl_rx_hdr_parse read it */
struct odl_rx_hdr {
	u32 seq, msg_id, msg_len, off, plen, key;
	u16 dst, src;
	bool last;
};

/*
 * Read an RX frame's header (the peer's words: every field checked); false
 * for a frame that is no well-formed one. The descriptor's error flags are
 * the caller's to check.
 */
static bool odl_rx_hdr_parse(struct odl_dev *dev, const struct odl_frame *fr,
			     struct odl_rx_hdr *o)
{
	u32 size = fr->frame.size ? fr->frame.size : ODL_TB5_FRAME_SIZE;
	struct odl_frame_hdr h;

	if (size < ODL_HDR_SIZE || fr->frame.sof != ODL_PDF_SOF ||
	    (fr->frame.eof != ODL_PDF_EOF_MID &&
	     fr->frame.eof != ODL_PDF_EOF_LAST))
		return false;
	memcpy(&h, fr->buf, sizeof(h));
	o->seq = le32_to_cpu(h.seq);
	o->msg_id = le32_to_cpu(h.msg_id);
	o->msg_len = le32_to_cpu(h.msg_len);
	o->off = le32_to_cpu(h.offset);
	o->plen = le32_to_cpu(h.payload_len);
	o->dst = le16_to_cpu(h.dst_port);
	o->src = le16_to_cpu(h.src_port);
	o->key = le32_to_cpu(h.key);
	o->last = fr->frame.eof == ODL_PDF_EOF_LAST;
	/* keys only from a peer that agreed to them */
	if (o->key && !(READ_ONCE(dev->features) & ODL_TB5_FEAT_KEYED))
		return false;
	if (le32_to_cpu(h.magic) != ODL_FRAME_MAGIC ||
	    o->plen != size - ODL_HDR_SIZE ||
	    !o->dst || o->dst > ODL_TB5_MAX_PORT ||
	    !o->src || o->src > ODL_TB5_MAX_PORT)
		return false;
	/* an empty message: one frame of its header alone, from a peer that
	 * agreed to them
	 */
	if (!o->msg_len)
		return (READ_ONCE(dev->features) & ODL_TB5_FEAT_EMPTY) &&
		       !o->off && !o->plen && o->last;
	return o->plen && o->msg_len <= ODL_MAX_MSG && o->off < o->msg_len &&
	       o->plen <= o->msg_len - o->off &&
	       o->last == (o->off + o->plen == o->msg_len);
}

/* Process one RX frame (dev->lock held). Returns true when the frame
 * starts a message that must wait for a RECV (never with @force), having
 * changed nothing but failed the message it cut short, if any.
 */
static bool odl_rx_frame(struct odl_dev *dev, struct odl_frame *fr,
			 bool force)
{
	struct odl_rx_hdr o;
	u32 seq, msg_len, off, plen, msg_id, key;
	bool was_mid = dev->rx.active, seq_ok, numbered, lost, own, beyond;
	u16 dst, src;
	bool last;
	u8 *dstp;

	dev->stats.rx_frames++;
	if (fr->frame.flags & (RING_DESC_CRC_ERROR | RING_DESC_BUFFER_OVERRUN)) {
		dev->stats.desc_errors++;
		odl_rx_abort(dev, -EIO, true);
		dev->rx.seq_valid = false;
		return false;
	}
	if (!odl_rx_hdr_parse(dev, fr, &o))
		goto bad;
	seq = o.seq;
	msg_id = o.msg_id;
	msg_len = o.msg_len;
	off = o.off;
	plen = o.plen;
	dst = o.dst;
	src = o.src;
	key = o.key;
	last = o.last;
	/* the number the frame before this one should have had + 1: that
	 * frame's number was wrong, not frames lost (its message was
	 * failed already)
	 */
	seq_ok = dev->rx.seq_valid &&
		 (seq == dev->rx.expect_seq ||
		  (dev->rx.seq_alt_valid && seq == dev->rx.seq_alt));
	/* held after a gap: its number matches now only because the
	 * message it cut short set it as the one expected
	 */
	numbered = seq_ok && !dev->rx.held_unnumbered;
	dev->rx.held_unnumbered = false;
	/* far ahead or behind: not lost frames but a broken header */
	if (dev->rx.seq_valid && !seq_ok &&
	    seq - dev->rx.expect_seq >= ODL_SEQ_WINDOW)
		goto bad;
	beyond = !seq_ok && odl_rx_gap_beyond(dev, seq, msg_id, off);

	/* A new message while another is under way: that one's end was
	 * lost (the sequence gap, if any, is its own) or cut short. It
	 * fails now, before this frame is held or taken, so its RECV does
	 * not wait out a hold, nor does its error take a RECV this frame
	 * was found to have.
	 */
	if (!off && dev->rx.active) {
		dev->stats.seq_errors++;
		odl_rx_abort(dev, -EPROTO, false);
		if (beyond)
			odl_rx_lost_event(dev, -EPROTO);
		dev->rx.seq_alt_valid = false;
		/* also when it matched only the alternative number */
		dev->rx.expect_seq = seq;
		seq_ok = true;
	}
	/* held even right after a gap: the message behind it need not be
	 * lost as well
	 */
	if (!force && !off &&
	    odl_rx_must_wait(dev, dst, msg_len, msg_id, key)) {
		/* held, not processed: counted when it is (replay) */
		dev->stats.rx_frames--;
		dev->rx.held_unnumbered = !numbered;
		return true;
	}

	dev->rx.seq_alt_valid = false;
	if (dev->rx.seq_valid && !seq_ok) {
		dev->stats.seq_errors++;
		odl_rx_abort(dev, -EPROTO, true);
		if (beyond)
			odl_rx_lost_event(dev, -EPROTO);
		dev->rx.seq_alt = dev->rx.expect_seq + 1;
		dev->rx.seq_alt_valid = true;
	}
	dev->rx.seq_valid = true;
	dev->rx.expect_seq = seq + 1;
	/* Software credits count the frames taken. A number the sequence
	 * confirms (the one expected, or the next after a frame whose
	 * number was wrong) is trusted; one after a gap only counts this
	 * frame until the next frame confirms it: a changed number far
	 * ahead would otherwise credit frames the peer has not sent, which
	 * it refuses, and its TX would wait for good. A frame a little
	 * ahead of such a number confirms it: the frames lost in between
	 * are credited then (or every other frame lost would leave the
	 * credits further behind each time, until the peer's TX stops).
	 * Two changed numbers in a row, each ahead, still pass for a
	 * confirmed jump and credit up to the first (the peer refuses
	 * credit past what it has sent).
	 */
	if (dev->rx.jump_valid &&
	    seq - dev->rx.jump_seq - 1 < ODL_SEQ_WINDOW &&
	    (s32)(dev->rx.jump_seq + 1 - dev->rx_ack) > 0)
		dev->rx_ack = dev->rx.jump_seq + 1;
	dev->rx.jump_valid = !numbered;
	dev->rx.jump_seq = seq;
	if (!numbered)
		dev->rx_ack++;
	else if ((s32)(seq + 1 - dev->rx_ack) > 0)
		dev->rx_ack = seq + 1;

	own = false;
	if (dev->rx.active &&
	    (off == 0 || msg_id != dev->rx.msg_id || msg_len != dev->rx.len ||
	     off != dev->rx.pos || dst != dev->rx.dst_port ||
	     src != dev->rx.src_port || key != dev->rx.key)) {
		/* In sequence and not a start: TX never interleaves
		 * messages, so this frame is the one under way's whatever its
		 * header says. That message fails, reported once to its own
		 * port; the frame goes with it, naming no other port or
		 * message.
		 */
		if (seq_ok && off) {
			own = true;
			msg_id = dev->rx.msg_id;
			msg_len = dev->rx.len;
			off = dev->rx.pos;
			dst = dev->rx.dst_port;
			src = dev->rx.src_port;
			key = dev->rx.key;
		}
		dev->stats.seq_errors++;
		odl_rx_abort(dev, -EPROTO, false);
	}
	/* set by an earlier frame, or by the aborts above */
	lost = dev->rx.lost_unattributed;
	dev->rx.lost_unattributed = false;
	if (!dev->rx.active) {
		if (own) {
			/* its message was failed (and listed) just now */
			odl_rx_discard(dev, msg_id, msg_len, off, dst, src,
				       key);
		} else if (off) {
			/* The rest of a message whose start did not come. Said
			 * once only: not for a message already reported, nor
			 * right after a loss reported to every file, nor when
			 * no frame is missing and the message just aborted
			 * had this port and key (this frame then belongs to
			 * it, whatever else its header says)
			 */
			if (!lost &&
			    !odl_rx_failed_has(dev, msg_id, dst, key, false) &&
			    !(seq_ok && was_mid &&
			      odl_rx_failed_has(dev, msg_id, dst, key, true)))
				odl_deliver_error(dev, dst, src, key, -EPROTO);
			odl_rx_failed_add(dev, msg_id, dst, key);
			odl_rx_discard(dev, msg_id, msg_len, off, dst, src,
				       key);
		} else if (odl_rx_failed_has(dev, msg_id, dst, key, false)) {
			/* claims to start a message already reported */
			odl_rx_discard(dev, msg_id, msg_len, 0, dst, src, key);
		} else {
			odl_rx_start(dev, msg_id, msg_len, dst, src, key);
			if (!dev->connected)
				return false;
		}
	}

	dstp = NULL;
	if (dev->rx.target == ODL_RX_RECV)
		dstp = dev->rx.recv->dst;
	else if (dev->rx.target == ODL_RX_STAGE)
		dstp = dev->rx.stage;
	if (dstp)
		memcpy(dstp + off, fr->buf + ODL_HDR_SIZE, plen);
	dev->rx.pos = off + plen;
	if (last)
		odl_rx_finish(dev, 0);
	return false;

bad:
	dev->stats.len_errors++;
	odl_rx_abort(dev, -EBADMSG, true);
	dev->rx.seq_valid = false;
	dev->rx.seq_alt_valid = false;
	return false;
}

/*
 * RX frames are processed in arrival order by exactly one context: the
 * ring callback while nothing is held back, else the replay work (the
 * callback only queues behind the held frames). A frame stays on rx_held
 * until it has been processed, so the callback keeps queueing while the
 * replay work has the lock dropped.
 */
/*
 * Hold RX: the message at the head of rx_held waits for a RECV. A new wait
 * starts its clock now; with @again (the same message still waiting after
 * a replay: a RECV was posted for another message or port) its clock runs
 * on, so it is dropped rx_stall_ms after it began however often others
 * post.
 */
static void odl_rx_stall(struct odl_dev *dev, bool again)
{
	unsigned long due;

	if (dev->rx_stalled)
		return;
	dev->rx_stalled = true;
	if (!again) {
		dev->rx_stall_since = jiffies;
		dev->stats.rx_stalls++;
	}
	due = dev->rx_stall_since + msecs_to_jiffies(READ_ONCE(rx_stall_ms));
	mod_delayed_work(system_wq, &dev->rx_replay,
			 time_after(due, jiffies) ? due - jiffies : 0);
}

/* a RECV was posted or a port unbound: held frames may move (lock held) */
static void odl_rx_kick(struct odl_dev *dev)
{
	if (dev->rx_stalled)
		mod_delayed_work(system_wq, &dev->rx_replay, 0);
}

/* SW credits: tell the peer once a batch of frames was processed
 * (dev->lock held)
 */
static void odl_rx_credit_due(struct odl_dev *dev)
{
	if (dev->rx_sw &&
	    odl_rx_credit_seq(dev) - dev->rx_ack_sent >= dev->ring_size / 8) {
		dev->credit_pending = true;
		odl_tx_pump(dev);
	}
}

/* A credit frame from the peer (dev->lock held). */
static void odl_rx_credit_frame(struct odl_dev *dev, struct odl_frame *fr)
{
	u32 size = fr->frame.size ? fr->frame.size : ODL_TB5_FRAME_SIZE;
	const struct odl_frame_hdr *h = fr->buf;
	u32 ack;

	if ((fr->frame.flags &
	     (RING_DESC_CRC_ERROR | RING_DESC_BUFFER_OVERRUN)) ||
	    size < ODL_HDR_SIZE || fr->frame.sof != ODL_PDF_SOF ||
	    le32_to_cpu(h->magic) != ODL_CREDIT_MAGIC) {
		dev->stats.desc_errors++;
		return;
	}
	ack = le32_to_cpu(h->seq);
	/* only forward, and never past what was sent */
	if ((s32)(ack - dev->peer_ack) > 0 && (s32)(ack - dev->tx_seq) <= 0)
		dev->peer_ack = ack;
	odl_tx_pump(dev);
}

static void odl_rx_repost(struct odl_dev *dev, struct odl_frame *fr)
{
	fr->frame.size = 0;
	tb_ring_rx(dev->rx_ring, &fr->frame);
}

static void odl_rx_replay_work(struct work_struct *work)
{
	struct odl_dev *dev = container_of(to_delayed_work(work),
					   struct odl_dev, rx_replay);
	struct odl_frame *fr, *fn;
	LIST_HEAD(done);
	bool was_stalled, force, moved = false;
	u32 n = 0;

	spin_lock(&dev->lock);
	was_stalled = dev->rx_stalled;
	force = was_stalled &&
		time_after_eq(jiffies, dev->rx_stall_since +
			      msecs_to_jiffies(READ_ONCE(rx_stall_ms)));
	dev->rx_stalled = false;
	while (dev->connected && !list_empty(&dev->rx_held)) {
		fr = list_first_entry(&dev->rx_held, struct odl_frame, list);
		if (odl_rx_frame(dev, fr, force)) {
			odl_rx_stall(dev, was_stalled && !moved);
			break;
		}
		force = false;
		moved = true;
		list_move_tail(&fr->list, &done);
		/* credits (the RX callback's, the watchdog's, while a frame
		 * being staged drops the lock) leave these out until reposted
		 */
		dev->rx_unposted++;
		n++;
	}
	/* not connected: the held frames stay for odl_rings_stop_lock (a
	 * fallback reports their messages there)
	 */
	spin_unlock(&dev->lock);
	list_for_each_entry_safe(fr, fn, &done, list) {
		list_del_init(&fr->list);
		if (READ_ONCE(dev->connected))
			odl_rx_repost(dev, fr);
	}
	/* SW credits only for frames back on the ring: up to a ring's worth
	 * was processed here, more than the peer's slack of 64
	 */
	if (moved) {
		spin_lock(&dev->lock);
		/* a re-login meanwhile started the count again */
		dev->rx_unposted -= min(n, dev->rx_unposted);
		if (dev->connected)
			odl_rx_credit_due(dev);
		spin_unlock(&dev->lock);
	}
}

static void odl_rx_callback(struct tb_ring *ring, struct ring_frame *frame,
			    bool canceled)
{
	struct odl_frame *fr = container_of(frame, struct odl_frame, frame);
	struct odl_dev *dev = fr->dev;
	bool repost;

	if (canceled)
		return;
	spin_lock(&dev->lock);
	if (dev->connected && fr->frame.eof == ODL_PDF_CREDIT) {
		/* never held: credits must pass held data frames */
		odl_rx_credit_frame(dev, fr);
	} else if (dev->connected && !list_empty(&dev->rx_held)) {
		/* behind held frames: a stall's replay takes it, or the
		 * replay work under way (its lock dropped while it stages)
		 * does; it is no new wait
		 */
		list_add_tail(&fr->list, &dev->rx_held);
		spin_unlock(&dev->lock);
		return;
	} else if (dev->connected && odl_rx_frame(dev, fr, false)) {
		list_add_tail(&fr->list, &dev->rx_held);
		odl_rx_stall(dev, false);
		spin_unlock(&dev->lock);
		return;
	} else if (dev->connected) {
		odl_rx_credit_due(dev);
	}
	repost = dev->connected;
	spin_unlock(&dev->lock);
	if (repost)
		odl_rx_repost(dev, fr);
}

int odl_post_recv(struct odl_dev *dev, struct odl_file *f,
		  struct odl_recv *r)
{
	u32 *slot;

	/* dev->lock held; a waiting message is delivered at once */
	if (r->key) {
		if (odl_find_krecv(f, r->key) ||
		    (dev->rx.target == ODL_RX_RECV &&
		     dev->rx.recv->file == f && dev->rx.recv->key == r->key))
			return -EEXIST;
		list_add_tail(&r->list, &f->krecvs);
		/* posted again: its message is wanted after all */
		slot = odl_cancelled_slot(f, r->key);
		if (slot)
			*slot = 0;
	} else {
		list_add_tail(&r->list, &f->recvs);
	}
	odl_match_pending(dev, f);
	odl_rx_kick(dev);
	return 0;
}

/* Withdraw the keyed RECV posted with @key (dev->lock held). Its message
 * is not being written into it (it would have taken the RECV): when it
 * arrives, or finishes arriving aside (staged before the RECV came), it is
 * discarded, so it neither waits among the held back messages nor is
 * reported lost when their room is needed.
 */
int odl_cancel_recv(struct odl_dev *dev, struct odl_file *f, u32 key)
{
	struct odl_recv *r = odl_find_krecv(f, key);

	if (!r)
		return -ENOENT;
	list_del(&r->list);
	odl_recv_done(dev, r, -ECANCELED, 0, 0);
	if (!odl_cancelled_slot(f, key)) {
		f->cancelled[f->cancelled_next] = key;
		f->cancelled_next = (f->cancelled_next + 1) % ODL_CANCELLED_MAX;
	}
	return 0;
}

/* A file goes away: unbind it and cut every tie the data path has to it
 * (dev->lock held).
 */
void odl_file_detach(struct odl_dev *dev, struct odl_file *f)
{
	struct odl_pending *p, *pn;
	struct odl_recv *r, *rn;
	struct odl_send *s, *sn;
	struct odl_frame *fr;
	u32 i;

	if (dev->rx.target == ODL_RX_RECV && dev->rx.recv->file == f) {
		odl_recv_done(dev, dev->rx.recv, -ECANCELED, 0, 0);
		dev->rx.recv = NULL;
		dev->rx.target = ODL_RX_DISCARD;
		dev->rx.orphaned = true;
	}
	list_for_each_entry_safe(r, rn, &f->recvs, list) {
		list_del(&r->list);
		odl_recv_done(dev, r, -ECANCELED, 0, 0);
	}
	list_for_each_entry_safe(r, rn, &f->krecvs, list) {
		list_del(&r->list);
		odl_recv_done(dev, r, -ECANCELED, 0, 0);
	}
	list_for_each_entry_safe(p, pn, &f->pending, list)
		odl_pending_free(dev, p);
	/* sends waiting for a fallback re-login are queued sends too */
	list_splice_init(&dev->tx_requeue, &dev->txq);
	list_for_each_entry_safe(s, sn, &dev->txq, list) {
		if (s->file != f)
			continue;
		if (s->dmabuf)
			s->dmabuf->users--;
		s->dmabuf = NULL;
		s->file = NULL;
		s->status = -ECANCELED;
		list_del_init(&s->list);
		if (!s->inflight)
			kfree(s);
	}
	/* frames on the ring already hold a copy; just forget the file */
	if (dev->tx_frames) {
		for (i = 0; i < dev->ring_size; i++) {
			fr = &dev->tx_frames[i];
			if (fr->send && fr->send->file == f) {
				if (fr->send->dmabuf)
					fr->send->dmabuf->users--;
				fr->send->dmabuf = NULL;
				fr->send->file = NULL;
			}
		}
	}
	if (f->port && dev->ports[f->port] == f)
		dev->ports[f->port] = NULL;
	f->port = 0;
	list_del_init(&f->list);
	odl_rx_kick(dev);
}

/* ---------------------------------------------------------------------
 * Rings and paths
 */
static void odl_free_frames(struct odl_dev *dev, struct odl_frame *frames,
			    struct tb_ring *ring)
{
	u32 i;

	if (!frames)
		return;
	for (i = 0; i < dev->ring_size; i++)
		if (frames[i].buf)
			dma_free_coherent(tb_ring_dma_device(ring),
					  ODL_TB5_FRAME_SIZE, frames[i].buf,
					  frames[i].dma);
	kvfree(frames);
}

static struct odl_frame *odl_alloc_frames(struct odl_dev *dev,
					  struct tb_ring *ring, ring_cb cb)
{
	struct odl_frame *frames;
	u32 i;

	frames = kvcalloc(dev->ring_size, sizeof(*frames), GFP_KERNEL);
	if (!frames)
		return NULL;
	for (i = 0; i < dev->ring_size; i++) {
		frames[i].buf = dma_alloc_coherent(tb_ring_dma_device(ring),
						   ODL_TB5_FRAME_SIZE,
						   &frames[i].dma, GFP_KERNEL);
		if (!frames[i].buf) {
			odl_free_frames(dev, frames, ring);
			return NULL;
		}
		frames[i].dev = dev;
		frames[i].frame.buffer_phy = frames[i].dma;
		frames[i].frame.callback = cb;
		INIT_LIST_HEAD(&frames[i].list);
	}
	return frames;
}

/* conn_lock held (or probe/remove), rings stopped */
static void odl_free_rings(struct odl_dev *dev)
{
	struct odl_frame *tx_frames, *rx_frames;

	/* odl_file_detach looks at the TX frames under the lock */
	spin_lock(&dev->lock);
	tx_frames = dev->tx_frames;
	rx_frames = dev->rx_frames;
	dev->tx_frames = NULL;
	dev->rx_frames = NULL;
	INIT_LIST_HEAD(&dev->tx_free);
	spin_unlock(&dev->lock);
	if (dev->rx_ring) {
		odl_free_frames(dev, rx_frames, dev->rx_ring);
		tb_ring_free(dev->rx_ring);
	}
	if (dev->local_transmit_path > 0)
		tb_xdomain_release_out_hopid(dev->xd, dev->local_transmit_path);
	if (dev->tx_ring) {
		odl_free_frames(dev, tx_frames, dev->tx_ring);
		tb_ring_free(dev->tx_ring);
	}
	dev->rx_ring = NULL;
	dev->tx_ring = NULL;
	dev->local_transmit_path = 0;
}

static int odl_alloc_rings(struct odl_dev *dev)
{
	struct tb_xdomain *xd = dev->xd;
	unsigned int flags = RING_FLAG_FRAME;
	u16 sof_mask = BIT(ODL_PDF_SOF);
	u16 eof_mask = BIT(ODL_PDF_EOF_MID) | BIT(ODL_PDF_EOF_LAST) |
		       BIT(ODL_PDF_CREDIT);
	struct odl_frame *tx_frames, *rx_frames;
	int hopid, i;

	dev->tx_ring = tb_ring_alloc_tx(xd->tb->nhi, -1, dev->ring_size,
					RING_FLAG_FRAME);
	if (!dev->tx_ring)
		return -ENOMEM;
	hopid = tb_xdomain_alloc_out_hopid(xd, -1);
	if (hopid < 0) {
		odl_free_rings(dev);
		return hopid;
	}
	dev->local_transmit_path = hopid;

	if (dev->e2e)
		flags |= RING_FLAG_E2E;
	dev->rx_ring = tb_ring_alloc_rx(xd->tb->nhi, -1, dev->ring_size, flags,
					dev->tx_ring->hop, sof_mask, eof_mask,
					NULL, NULL);
	if (!dev->rx_ring)
		goto nomem;
	tx_frames = odl_alloc_frames(dev, dev->tx_ring, odl_tx_callback);
	rx_frames = odl_alloc_frames(dev, dev->rx_ring, odl_rx_callback);
	spin_lock(&dev->lock);
	dev->tx_frames = tx_frames;
	dev->rx_frames = rx_frames;
	if (tx_frames)
		for (i = 0; i < dev->ring_size; i++)
			list_add_tail(&tx_frames[i].list, &dev->tx_free);
	spin_unlock(&dev->lock);
	if (!tx_frames || !rx_frames)
		goto nomem;
	return 0;

nomem:
	odl_free_rings(dev);
	return -ENOMEM;
}

/* Fail every queued send (dev->lock held). */
static void odl_fail_txq(struct odl_dev *dev, int status)
{
	struct odl_send *s, *sn;

	list_splice_init(&dev->tx_requeue, &dev->txq);
	list_for_each_entry_safe(s, sn, &dev->txq, list) {
		list_del_init(&s->list);
		s->status = status;
		if (!s->inflight)
			odl_send_done(dev, s);
	}
}

static int odl_send_cmp(void *priv, const struct list_head *a,
			const struct list_head *b)
{
	const struct odl_send *sa = list_entry(a, struct odl_send, list);
	const struct odl_send *sb = list_entry(b, struct odl_send, list);

	return (s32)(sa->msg_id - sb->msg_id) > 0;
}

/* After the rings stopped for a fallback: every message not completed
 * goes back to the send queue, in its original order, from its start
 * (dev->lock held).
 */
static void odl_requeue_sends(struct odl_dev *dev)
{
	struct odl_send *s;

	list_splice_init(&dev->txq, &dev->tx_requeue);
	list_sort(NULL, &dev->tx_requeue, odl_send_cmp);
	list_splice_init(&dev->tx_requeue, &dev->txq);
	list_for_each_entry(s, &dev->txq, list)
		s->pos = 0;
}

/*
 * A fallback's resume ends without a connection (the rings could not be
 * had again, the paths not enabled, the peer logged out): the sends it
 * kept fail, in the order they were queued, and the files hear the
 * LINK_DOWN the fallback had kept from them (dev->lock held). True if
 * there was such a resume.
 */
static bool odl_resume_abort(struct odl_dev *dev)
{
	if (!dev->resuming)
		return false;
	dev->resuming = false;
	odl_requeue_sends(dev);
	odl_fail_txq(dev, -ECONNRESET);
	odl_event_all(dev, -ECONNRESET, ODL_TB5_CF_LINK_DOWN);
	return true;
}

/*
 * A fallback takes the frames held back for a RECV off the ring, and no
 * LINK_DOWN tells the files: what they carried is reported as odl_rx_frame
 * would have reported it had they been taken (dev->lock held). Each
 * message that starts among them failed: its RECV, or the next one posted
 * on its port, gets -ECONNRESET. Frames missing in between (a sequence gap
 * outside a message already reported) or frames that are no well-formed
 * ones may have carried whole messages: every bound file gets one
 * lost-message event for them (-EPROTO, -EIO for a descriptor error,
 * -EBADMSG for a broken header); the rest of a message whose start is
 * missing goes to its port as -EPROTO unless such an event just covered
 * it. Each message is reported once (the failed list, as on the way).
 */
static void odl_rx_held_lost(struct odl_dev *dev)
{
	struct odl_frame *fr;
	struct odl_rx_hdr o, cur = { 0 };
	bool seq_valid = dev->rx.seq_valid, alt = dev->rx.seq_alt_valid;
	bool in_msg = false, lost = false, was_in, gap = false, known, quiet;
	u32 expect = dev->rx.expect_seq, alt_seq = dev->rx.seq_alt;
	int bad;

	list_for_each_entry(fr, &dev->rx_held, list) {
		bad = 0;
		if (fr->frame.flags &
		    (RING_DESC_CRC_ERROR | RING_DESC_BUFFER_OVERRUN)) {
			bad = -EIO;
		} else if (!odl_rx_hdr_parse(dev, fr, &o)) {
			bad = -EBADMSG;
		} else {
			/* a frame missing before this one; too far ahead is
			 * not a gap but a broken frame
			 */
			gap = seq_valid && o.seq != expect &&
			      !(alt && o.seq == alt_seq);
			if (gap && o.seq - expect >= ODL_SEQ_WINDOW)
				bad = -EBADMSG;
		}
		if (bad) {
			/* the message under way (reported) takes it; else
			 * anything may be lost (one event for a run)
			 */
			if (!in_msg && !lost) {
				odl_event_all(dev, bad, ODL_TB5_CF_MSG_LOST);
				lost = true;
			}
			in_msg = false;
			seq_valid = false;
			alt = false;
			continue;
		}
		/* a start while a message is under way: the gap is its */
		if (in_msg && !o.off)
			gap = false;
		alt = gap;
		alt_seq = expect + 1;
		seq_valid = true;
		expect = o.seq + 1;

		/* frames lost inside the message under way are its own; a
		 * frame of another message ends it
		 */
		was_in = in_msg;
		if (in_msg && (!o.off || o.msg_id != cur.msg_id ||
			       o.dst != cur.dst || o.key != cur.key)) {
			in_msg = false;
		} else if (gap && !in_msg && !lost) {
			odl_event_all(dev, -EPROTO, ODL_TB5_CF_MSG_LOST);
			lost = true;
		}
		if (!in_msg) {
			/* not said twice; the rest of a message not said
			 * right after a loss told to every file, nor when no
			 * frame is missing and the message just ended had
			 * this port and key (the frame is that one's)
			 */
			known = odl_rx_failed_has(dev, o.msg_id, o.dst, o.key,
						  false);
			quiet = known;
			if (o.off)
				quiet = quiet || lost ||
					(was_in && !gap && o.dst == cur.dst &&
					 o.key == cur.key);
			if (!quiet)
				odl_deliver_error(dev, o.dst, o.src, o.key,
						  o.off ? -EPROTO :
						  -ECONNRESET);
			if (!known)
				odl_rx_failed_add(dev, o.msg_id, o.dst, o.key);
			lost = false;
			cur = o;
			in_msg = true;
		}
		if (o.last)
			in_msg = false;
	}
}

/*
 * The rings of a connection that is over (connected and rx_stalled already
 * false): both stopped, the input HopID given back, the replay work done;
 * returns with dev->lock taken and nothing held back on RX; with
 * @report_held (a fallback's) the message under way and then those held
 * are reported failed first. conn_lock held.
 */
static void odl_rings_stop_lock(struct odl_dev *dev, bool report_held)
	__acquires(&dev->lock)
{
	/* both return only after every callback ran (canceled) */
	tb_ring_stop(dev->rx_ring);
	tb_ring_stop(dev->tx_ring);
	if (dev->in_hopid_held) {
		tb_xdomain_release_in_hopid(dev->xd, dev->remote_transmit_path);
		dev->in_hopid_held = false;
	}
	cancel_delayed_work_sync(&dev->rx_replay);

	spin_lock(&dev->lock);
	if (report_held) {
		/* the message under way came before those held: it fails
		 * first, so their errors never reach the RECV it fills
		 */
		odl_rx_abort(dev, -ECONNRESET, false);
		odl_rx_held_lost(dev);
	}
	/* held frames are off the ring; the next connect posts every frame */
	INIT_LIST_HEAD(&dev->rx_held);
	dev->rx_stalled = false;
}

/* conn_lock held */
static void odl_disconnect(struct odl_dev *dev, const char *why)
{
	bool resuming;

	if (!dev->connected)
		return;
	dev_info(&dev->svc->dev, "disconnected from peer (%s)\n", why);
	spin_lock(&dev->lock);
	dev->connected = false;
	dev->paths_up = false;
	dev->tx_ready = false;
	/* no RECV or unbind kicks the replay work again once it is
	 * cancelled below (RX itself stops at !connected)
	 */
	dev->rx_stalled = false;
	resuming = dev->resuming;
	spin_unlock(&dev->lock);
	cancel_delayed_work_sync(&dev->watchdog);

	tb_xdomain_disable_paths(dev->xd, dev->local_transmit_path,
				 dev->tx_ring->hop, dev->remote_transmit_path,
				 dev->rx_ring->hop);
	odl_rings_stop_lock(dev, resuming);
	if (resuming)
		odl_requeue_sends(dev);
	else
		odl_fail_txq(dev, -ECONNRESET);
	odl_rx_abort(dev, -ECONNRESET, false);
	dev->rx.seq_valid = false;
	odl_rx_failed_reset(dev);
	dev->stats.link_resets++;
	/* a fallback is invisible to the files: sends go on after it */
	if (!resuming)
		odl_event_all(dev, -ECONNRESET, ODL_TB5_CF_LINK_DOWN);
	spin_unlock(&dev->lock);
}

/*
 * Open TX once this side's paths are up and the peer has said its receive
 * side is up for this very connection (its READY names both sessions); a
 * peer without the feature gets data as soon as the paths are up, as
 * before. conn_lock held.
 */
static void odl_open_tx(struct odl_dev *dev)
{
	bool open;

	spin_lock(&dev->lock);
	open = dev->connected && dev->paths_up && !dev->tx_ready &&
	       (!(dev->features & ODL_TB5_FEAT_RX_READY) ||
		(dev->peer_ready_seen &&
		 dev->peer_ready_session == dev->remote_session &&
		 dev->peer_ready_target == dev->local_session));
	if (open) {
		dev->tx_ready = true;
		odl_tx_pump(dev);
	}
	spin_unlock(&dev->lock);
	if (open && (dev->features & ODL_TB5_FEAT_RX_READY))
		dev_dbg(&dev->svc->dev, "peer receive side ready\n");
}

/* The next attempt's delay (conn_lock held): doubling with each retry
 * counted in *retries, from ODL_LOGIN_BACKOFF_MIN up to max_ms
 */
static unsigned long odl_backoff(unsigned int *retries, unsigned int max_ms)
{
	unsigned int ms = min_t(unsigned int,
				ODL_LOGIN_BACKOFF_MIN << min(*retries, 10u),
				max_ms);

	(*retries)++;
	return msecs_to_jiffies(ms);
}

/* The next login attempt's delay (conn_lock held) */
static unsigned long odl_login_backoff(struct odl_dev *dev)
{
	return odl_backoff(&dev->login_retries, ODL_LOGIN_BACKOFF_MAX);
}

/*
 * conn_lock held: this login's connection could not be set up; try again
 * after the backoff, at most max_ms (odl_connect_work), unless the login
 * goes stale meanwhile. Returns the delay in ms.
 */
static unsigned int odl_connect_later(struct odl_dev *dev,
				      unsigned int max_ms)
{
	unsigned long delay = odl_backoff(&dev->login_retries, max_ms);

	dev->connect_retry = true;
	mod_delayed_work(system_long_wq, &dev->connect_work, delay);
	return jiffies_to_msecs(delay);
}

/*
 * test_path_delay_ms: a slow controller (conn_lock held), until the time
 * is up, the parameter is set lower (0 ends the wait) or the XDomain is
 * unplugged: its removal waits for conn_lock while the connection manager
 * holds the lock enabling paths needs. At most 60 s, below the hung task
 * warning for the work waiting on conn_lock meanwhile.
 */
static void odl_test_path_delay(struct odl_dev *dev)
{
	unsigned long start = jiffies;

	while (!READ_ONCE(dev->xd->is_unplugged) &&
	       time_before(jiffies, start + msecs_to_jiffies(min(READ_ONCE(test_path_delay_ms),
								  60000u))))
		msleep(20);
}

/* conn_lock held */
static void odl_try_connect(struct odl_dev *dev)
{
	unsigned int ms;
	int ret, i;

	if (dev->connected || dev->removing || !dev->login_sent ||
	    !dev->login_received || !dev->tx_ring)
		return;

	ret = tb_xdomain_alloc_in_hopid(dev->xd, dev->remote_transmit_path);
	if (ret != dev->remote_transmit_path) {
		if (ret >= 0)
			tb_xdomain_release_in_hopid(dev->xd, ret);
		/* not in the print's arguments: a rate limit skips those */
		ms = odl_connect_later(dev, ODL_LOGIN_BACKOFF_MAX);
		dev_err_ratelimited(&dev->svc->dev,
				    "cannot reserve input HopID %d: %d; trying again in %u ms\n",
				    dev->remote_transmit_path, ret, ms);
		spin_lock(&dev->lock);
		odl_resume_abort(dev);
		spin_unlock(&dev->lock);
		return;
	}
	dev->in_hopid_held = true;

	spin_lock(&dev->lock);
	/* tx_msg_id runs on: sends kept by a fallback keep their numbers
	 * and new ones come after them when sends are put back in order
	 */
	dev->tx_seq = 0;
	/* the peer's first frame is number 0: a lost first frame is a gap,
	 * reported like any other, not a silently shorter stream
	 */
	dev->rx.seq_valid = true;
	dev->rx.expect_seq = 0;
	dev->rx.jump_valid = false;
	dev->rx.held_unnumbered = false;
	dev->rx.active = false;
	odl_rx_failed_reset(dev);
	INIT_LIST_HEAD(&dev->rx_held);
	dev->rx_stalled = false;
	dev->tx_window = min(dev->ring_size, dev->peer_ring_size) - 1;
	/* flow control: hardware E2E where the receiving RX ring has it,
	 * else the receiver's software credits if both sides know them
	 */
	dev->rx_sw = !dev->e2e && (dev->features & ODL_TB5_FEAT_SW_CREDITS);
	dev->tx_sw = !(dev->peer_features & ODL_TB5_FEAT_E2E) &&
		     (dev->features & ODL_TB5_FEAT_SW_CREDITS);
	dev->flow = dev->e2e ? ODL_FLOW_E2E :
		    dev->rx_sw ? ODL_FLOW_SW : ODL_FLOW_NONE;
	dev->sw_window = dev->peer_ring_size - 1 -
			 min(64u, dev->peer_ring_size / 4);
	dev->peer_ack = 0;
	dev->rx_ack = 0;
	dev->rx_ack_sent = 0;
	dev->rx_unposted = 0;
	dev->rx_ack_time = jiffies;
	dev->credit_pending = false;
	/* RX takes frames from here on; TX waits for odl_open_tx */
	dev->paths_up = false;
	dev->tx_ready = false;
	dev->connected = true;
	spin_unlock(&dev->lock);

	tb_ring_start(dev->tx_ring);
	tb_ring_start(dev->rx_ring);
	for (i = 0; i < dev->ring_size - 1; i++) {
		dev->rx_frames[i].frame.size = 0;
		tb_ring_rx(dev->rx_ring, &dev->rx_frames[i].frame);
	}
	odl_test_path_delay(dev);

	/* unplugged: the removal under way holds the connection manager */
	if (READ_ONCE(dev->xd->is_unplugged))
		ret = -ENODEV;
	else
		ret = tb_xdomain_enable_paths(dev->xd, dev->local_transmit_path,
					      dev->tx_ring->hop,
					      dev->remote_transmit_path,
					      dev->rx_ring->hop);
	if (ret) {
		/* the peer may have its paths up and wait for our READY:
		 * without another try this login would never carry data
		 */
		ms = odl_connect_later(dev, ODL_CONNECT_BACKOFF_MAX);
		dev_err_ratelimited(&dev->svc->dev,
				    "failed to enable DMA paths: %d; trying again in %u ms\n",
				    ret, ms);
		spin_lock(&dev->lock);
		dev->connected = false;
		dev->rx_stalled = false;
		spin_unlock(&dev->lock);
		/* as after a disconnect: nothing of this attempt stays */
		odl_rings_stop_lock(dev, false);
		odl_rx_abort(dev, -ECONNRESET, false);
		/* a resume ends here; else the SENDs taken since connected
		 * was set fail (no LINK_UP was sent for this attempt)
		 */
		if (!odl_resume_abort(dev))
			odl_fail_txq(dev, -ECONNRESET);
		spin_unlock(&dev->lock);
		return;
	}

	dev->connect_retry = false;
	dev->login_retries = 0;
	spin_lock(&dev->lock);
	dev->generation++;
	dev->stats.logins++;
	if (!dev->resuming)
		odl_event_all(dev, 0, ODL_TB5_CF_LINK_UP);
	dev->resuming = false;
	dev->paths_up = true;
	spin_unlock(&dev->lock);
	/* our receive side is up: tell the peer, which sends nothing before */
	dev->ready_sent = false;
	dev->ready_retries = 0;
	if (dev->features & ODL_TB5_FEAT_RX_READY)
		mod_delayed_work(system_long_wq, &dev->ready_work, 0);
	odl_open_tx(dev);
	memset(&dev->tx_watch, 0, sizeof(dev->tx_watch));
	memset(&dev->rx_watch, 0, sizeof(dev->rx_watch));
	dev->tx_watch.since = jiffies;
	dev->link_speed = READ_ONCE(dev->xd->link_speed);
	dev->link_lanes = odl_xd_lanes(dev->xd);
	if (READ_ONCE(poll_ms))
		queue_delayed_work(system_wq, &dev->watchdog,
				   msecs_to_jiffies(READ_ONCE(poll_ms)));
	dev_info(&dev->svc->dev,
		 "connected: proto %u, TX HopID %d ring %d, RX HopID %d ring %d, %u descriptors, E2E %s, TX flow control %s\n",
		 dev->proto_version, dev->local_transmit_path,
		 dev->tx_ring->hop, dev->remote_transmit_path,
		 dev->rx_ring->hop, dev->ring_size, dev->e2e ? "on" : "off",
		 dev->tx_sw ? "software credits" :
		 (dev->peer_features & ODL_TB5_FEAT_E2E) ? "E2E" : "none");
}

/* ---------------------------------------------------------------------
 * Completion poll and TX watchdog
 */

/*
 * struct ring_desc is private to the thunderbolt driver; its layout is
 * the NHI's (USB4 spec): 16 bytes, dword 2 holds length (bits 0-11), EOF,
 * SOF and the flags in bits 20-31.
 */
#define ODL_DESC_DWORDS		4
#define ODL_DESC_FLAGS_SHIFT	20

static bool odl_desc_completed(struct tb_ring *ring, int idx)
{
	const __le32 *d = (const __le32 *)(void *)ring->descriptors;
	u32 dw = le32_to_cpu(READ_ONCE(d[idx * ODL_DESC_DWORDS + 2]));

	return (dw >> ODL_DESC_FLAGS_SHIFT) & RING_DESC_COMPLETED;
}

/* The ring's oldest posted descriptor: -1 none posted, 0 pending,
 * 1 completed (@tail: its index).
 */
static int odl_ring_peek(struct tb_ring *ring, int *tail)
{
	unsigned long flags;
	int ret = -1;

	spin_lock_irqsave(&ring->lock, flags);
	*tail = ring->tail;
	if (ring->running && ring->head != ring->tail)
		ret = odl_desc_completed(ring, ring->tail);
	spin_unlock_irqrestore(&ring->lock, flags);
	return ret;
}

/*
 * A descriptor completed for a whole poll period without the ring's work
 * having taken it: its interrupt was lost. Run the work the interrupt
 * would have run (it takes every completed frame, in order, and only it
 * does: no reordering against a late interrupt).
 */
static int odl_ring_poll(struct odl_dev *dev, struct tb_ring *ring,
			 struct odl_ring_watch *w)
{
	int tail, st = odl_ring_peek(ring, &tail);

	if (st == 1) {
		if (w->done_seen && w->tail == tail &&
		    schedule_work(&ring->work)) {
			spin_lock(&dev->lock);
			dev->stats.irq_recoveries++;
			spin_unlock(&dev->lock);
		}
		w->done_seen = true;
	} else {
		w->done_seen = false;
	}
	if (st != 0 || tail != w->tail) {
		w->since = jiffies;
		w->wedged = false;
	}
	w->tail = tail;
	return st;
}

static void odl_watchdog_work(struct work_struct *work)
{
	struct odl_dev *dev = container_of(to_delayed_work(work),
					   struct odl_dev, watchdog);
	unsigned int wedge_ms = READ_ONCE(tx_wedge_ms);
	unsigned int period = READ_ONCE(poll_ms);
	unsigned int speed, lanes;
	bool fallback = false;
	int st;

	if (!READ_ONCE(dev->connected))
		return;
	odl_ring_poll(dev, dev->rx_ring, &dev->rx_watch);
	st = odl_ring_poll(dev, dev->tx_ring, &dev->tx_watch);

	if (!wedge_ms)
		wedge_ms = READ_ONCE(rx_stall_ms) + 2000;
	if (st == 0 && !dev->tx_watch.wedged && !dev->xd->is_unplugged &&
	    time_after(jiffies, dev->tx_watch.since +
		       msecs_to_jiffies(wedge_ms))) {
		/* posted, not consumed, no completion, no error */
		dev->tx_watch.wedged = true;
		spin_lock(&dev->lock);
		dev->stats.tx_wedges++;
		fallback = dev->connected && dev->e2e && !dev->tx_sw &&
			   odl_e2e_mode == ODL_E2E_AUTO &&
			   (dev->features & ODL_TB5_FEAT_SW_CREDITS);
		spin_unlock(&dev->lock);
		if (fallback)
			queue_work(system_long_wq, &dev->fallback_work);
	}

	spin_lock(&dev->lock);
	/* SW credits: a late batch, and a periodic repeat in case a credit
	 * frame was lost
	 */
	if (dev->connected && dev->rx_sw &&
	    (odl_rx_credit_seq(dev) != dev->rx_ack_sent ||
	     time_after(jiffies, dev->rx_ack_time + HZ))) {
		dev->credit_pending = true;
		odl_tx_pump(dev);
	}
	spin_unlock(&dev->lock);

	/* a retrain: the thunderbolt core re-reads speed and width */
	speed = READ_ONCE(dev->xd->link_speed);
	lanes = odl_xd_lanes(dev->xd);
	if (speed != dev->link_speed || lanes != dev->link_lanes) {
		dev_info(&dev->svc->dev,
			 "link now %u x %u Gb/s (was %u x %u Gb/s)\n",
			 lanes, speed, dev->link_lanes, dev->link_speed);
		dev->link_speed = speed;
		dev->link_lanes = lanes;
		spin_lock(&dev->lock);
		dev->stats.link_changes++;
		spin_unlock(&dev->lock);
	}

	if (READ_ONCE(dev->connected) && period)
		queue_delayed_work(system_wq, &dev->watchdog,
				   msecs_to_jiffies(period));
}

/*
 * What our LOGIN told the peer is out of date (rings, session or features
 * changed, or the peer restarted): it has to be sent again (conn_lock
 * held). A login_work run with a request in flight meanwhile does not
 * take that request's answer for the new state.
 */
static void odl_login_stale(struct odl_dev *dev)
{
	dev->login_sent = false;
	dev->login_gen++;
	/* a new login connects by itself */
	dev->connect_retry = false;
}

/*
 * A new session of ours (conn_lock held, not connected): the peer drops
 * its side of the old one and logs in again, and this side waits for that
 * fresh LOGIN, so nothing of the old connection (the peer's READY, its
 * frames) meets the new one.
 */
static void odl_new_session(struct odl_dev *dev)
{
	dev->local_session = get_random_u32() | 1;
	odl_login_stale(dev);
	dev->login_received = false;
	dev->login_retries = 0;
	mod_delayed_work(system_long_wq, &dev->login_work, 0);
}

/* allocate the rings again (test_realloc_fail: or fail as if out of memory) */
static int odl_alloc_rings_again(struct odl_dev *dev)
{
	unsigned int fail = READ_ONCE(test_realloc_fail);

	if (!fail)
		return odl_alloc_rings(dev);
	WRITE_ONCE(test_realloc_fail, fail - 1);
	return -ENOMEM;
}

/*
 * Rings again, with the E2E setting now in force (conn_lock held, not
 * connected). When that fails the device has none: odl_login_work
 * allocates them before it logs in again (with backoff), and nothing
 * connects without them (odl_try_connect).
 */
static int odl_realloc_rings(struct odl_dev *dev)
{
	int ret;

	odl_free_rings(dev);
	ret = odl_alloc_rings_again(dev);
	if (ret)
		dev_err(&dev->svc->dev,
			"cannot allocate rings: %d; trying again before the next login\n",
			ret);
	return ret;
}

/*
 * The TX ring wedged with hardware E2E (amd-strix-halo: a second E2E RX
 * ring on the NHI makes it drop the peer's credit grants): tear the rings
 * down, set them up again without E2E and log in again offering software
 * credits. Queued and unfinished sends survive and go out again (also when
 * the rings could not be allocated at once: they are before the login).
 */
static void odl_fallback_work(struct work_struct *work)
{
	struct odl_dev *dev = container_of(work, struct odl_dev,
					   fallback_work);

	mutex_lock(&dev->conn_lock);
	if (dev->removing || !dev->connected || !dev->e2e)
		goto out;
	dev_warn(&dev->svc->dev,
		 "TX ring wedged with E2E flow control; falling back to software credits\n");
	spin_lock(&dev->lock);
	dev->resuming = true;
	dev->stats.e2e_fallbacks++;
	spin_unlock(&dev->lock);
	odl_disconnect(dev, "E2E fallback");
	dev->e2e = false;
	dev->e2e_fallen_back = true;
	/* failed: still resuming, odl_login_work allocates them first */
	odl_realloc_rings(dev);
	dev->features = odl_local_features(dev) & dev->peer_features;
	odl_new_session(dev);
out:
	mutex_unlock(&dev->conn_lock);
}

/* ---------------------------------------------------------------------
 * Handshake
 */
static bool odl_ring_size_ok(u32 n)
{
	return n >= 64 && n <= 16384 && is_power_of_2(n);
}

static int odl_send_login(struct odl_dev *dev, u8 sequence)
{
	struct odl_xd_login_response resp;
	struct odl_xd_login req;
	struct tb_xdomain *xd = dev->xd;
	u32 cmd = atomic_inc_return(&dev->command_id);
	int ret;

	memset(&req, 0, sizeof(req));
	odl_fill_hdr(&req.hdr, xd->route, sequence, xd->local_uuid,
		     xd->remote_uuid, ODL_XD_LOGIN, sizeof(req), cmd);
	req.proto_min = ODL_PROTO_VERSION;
	req.proto_max = ODL_PROTO_VERSION;
	req.session = dev->local_session;
	req.transmit_path = dev->local_transmit_path;
	req.ring_size = dev->ring_size;
	req.frame_size = ODL_TB5_FRAME_SIZE;
	req.features = odl_local_features(dev);
	req.max_msg = ODL_MAX_MSG;

	memset(&resp, 0, sizeof(resp));
	ret = tb_xdomain_request(xd, &req, sizeof(req), TB_CFG_PKG_XDOMAIN_REQ,
				 &resp, sizeof(resp), TB_CFG_PKG_XDOMAIN_RESP,
				 ODL_LOGIN_TIMEOUT_MS);
	if (ret)
		return ret;
	if (resp.hdr.type != ODL_XD_LOGIN_RESPONSE ||
	    resp.hdr.command_id != cmd ||
	    !uuid_equal(&resp.hdr.initiator_uuid, xd->remote_uuid) ||
	    !uuid_equal(&resp.hdr.target_uuid, xd->local_uuid))
		return -EAGAIN;
	if (resp.status == ODL_XD_EBUSY)
		return -EAGAIN;
	if (resp.status != ODL_XD_OK)
		return -EPROTO;
	if (resp.proto_version != ODL_PROTO_VERSION ||
	    !odl_ring_size_ok(resp.ring_size))
		return -EPROTO;
	dev->proto_version = resp.proto_version;
	return 0;
}

/*
 * The thunderbolt core re-reads a peer's properties on its "properties
 * changed" notification only once that peer's XDomain device is
 * registered, which it is after the first read. A peer that read our
 * properties just before this module registered its directory, and got
 * the notification before its device was registered, never learns of our
 * service: it has no device for us and leaves our LOGIN unanswered. When
 * logins go unanswered, notify every peer again. Removing a directory that
 * is not registered changes nothing but still notifies (xdomain.c, 6.1 to
 * mainline); the stale peer re-reads and takes our block, whose generation
 * is newer than the one it has. Our block itself stays as it is: a peer
 * reads a block of more than 45 dwords in several requests and does not
 * check that they saw one generation, so every change of the block while
 * a peer reads it can cost that peer its view of us ("failed to parse
 * XDomain properties"). The directory passed is ours, under another key:
 * it is never found, never removed.
 */
static void odl_nudge_peers(struct odl_dev *dev)
{
	dev_info(&dev->svc->dev,
		 "peer does not answer LOGIN; asking it to re-read our properties\n");
	tb_unregister_property_dir(ODL_NUDGE_KEY, odl_dir);
}

/*
 * A peer whose core gave up on us (its reads of our properties failed 10
 * times, or one could not be parsed) has stopped its handshake: it ignores
 * notifications and keeps the properties it had, until a UUID request
 * arrives from us, which restarts it. Only a peer with the higher UUID is
 * sent one: after the UUID exchange a restarted handshake bonds the lanes,
 * and the side with the lower UUID asks the other for a link state
 * change; our core, done with its own handshake, refuses that as not
 * ready, and stock xdomain.c (6.1, 6.12) then retries once a second for
 * ever. The higher side only waits for that request (it keeps the width
 * agreed before, or gives up after its retries) and goes on to read our
 * properties. The answer itself is not needed.
 */
static void odl_restart_peer(struct odl_dev *dev)
{
	struct tb_xdomain *xd = dev->xd;
	struct odl_xdp_uuid_resp resp;
	struct odl_xdp_uuid_req req;
	int ret;

	if (memcmp(xd->remote_uuid, xd->local_uuid, sizeof(uuid_t)) <= 0)
		return;
	dev_info(&dev->svc->dev,
		 "sending the peer a UUID request (restarts its discovery if it gave up)\n");
	memset(&req, 0, sizeof(req));
	odl_fill_head(&req.xd, xd->route, 0, sizeof(req));
	uuid_copy(&req.proto_uuid, &odl_xdp_uuid);
	req.type = ODL_XDP_UUID_REQUEST;
	memset(&resp, 0, sizeof(resp));
	ret = tb_xdomain_request(xd, &req, sizeof(req), TB_CFG_PKG_XDOMAIN_REQ,
				 &resp, sizeof(resp), TB_CFG_PKG_XDOMAIN_RESP,
				 ODL_LOGIN_TIMEOUT_MS);
	dev_dbg(&dev->svc->dev, "UUID request: %d, answer type %u\n", ret,
		resp.hdr.type);
}

static void odl_connect_work(struct work_struct *work)
{
	struct odl_dev *dev = container_of(to_delayed_work(work),
					   struct odl_dev, connect_work);

	mutex_lock(&dev->conn_lock);
	if (!dev->removing && dev->connect_retry) {
		dev->connect_retry = false;
		odl_try_connect(dev);
	}
	mutex_unlock(&dev->conn_lock);
}

static void odl_login_work(struct work_struct *work)
{
	struct odl_dev *dev = container_of(to_delayed_work(work),
					   struct odl_dev, login_work);
	bool restart = false;
	unsigned long delay;
	unsigned int gen;
	int ret;

	mutex_lock(&dev->conn_lock);
	if (dev->removing || dev->login_sent) {
		mutex_unlock(&dev->conn_lock);
		return;
	}
	/* a reallocation failed (odl_realloc_rings): rings first */
	if (!dev->tx_ring) {
		ret = odl_alloc_rings_again(dev);
		if (ret) {
			bool aborted;

			/* more than a passing shortage: queued SENDs fail
			 * (the files hear LINK_DOWN), allocation goes on
			 */
			spin_lock(&dev->lock);
			aborted = odl_resume_abort(dev);
			spin_unlock(&dev->lock);
			dev_err_ratelimited(&dev->svc->dev,
					    "cannot allocate rings again: %d%s\n",
					    ret, aborted ?
					    "; the queued sends failed" : "");
			queue_delayed_work(system_long_wq, &dev->login_work,
					   odl_login_backoff(dev));
			mutex_unlock(&dev->conn_lock);
			return;
		}
		dev_info(&dev->svc->dev, "rings allocated again\n");
	}
	gen = dev->login_gen;
	mutex_unlock(&dev->conn_lock);

	/* no lock across the request: the peer's LOGIN may arrive meanwhile */
	ret = odl_send_login(dev, dev->login_retries & 3);

	mutex_lock(&dev->conn_lock);
	/* out of date meanwhile: whoever made it so queued another run */
	if (dev->removing || dev->login_gen != gen) {
		mutex_unlock(&dev->conn_lock);
		return;
	}
	if (!ret) {
		dev->login_sent = true;
		dev->login_retries = 0;
		odl_try_connect(dev);
	} else {
		if (ret == -EPROTO)
			dev_warn_ratelimited(&dev->svc->dev,
					     "peer refused login\n");
		delay = odl_login_backoff(dev);
		if (ret != -EPROTO && dev->login_retries >= ODL_NUDGE_AFTER &&
		    (dev->login_retries - ODL_NUDGE_AFTER) % ODL_NUDGE_EVERY == 0) {
			odl_nudge_peers(dev);
			restart = true;
		}
		queue_delayed_work(system_long_wq, &dev->login_work, delay);
	}
	mutex_unlock(&dev->conn_lock);
	/* not under conn_lock: the request waits for the peer's answer */
	if (restart)
		odl_restart_peer(dev);
}

/* READY to the peer: 0 acknowledged, -ESTALE the peer has another
 * session (it logs in again), else retry.
 */
static int odl_send_ready(struct odl_dev *dev, u32 session, u32 peer_session,
			  u8 sequence)
{
	struct odl_xd_status_msg resp;
	struct odl_xd_ready req;
	struct tb_xdomain *xd = dev->xd;
	u32 cmd = atomic_inc_return(&dev->command_id);
	int ret;

	memset(&req, 0, sizeof(req));
	odl_fill_hdr(&req.hdr, xd->route, sequence, xd->local_uuid,
		     xd->remote_uuid, ODL_XD_READY, sizeof(req), cmd);
	req.session = session;
	req.peer_session = peer_session;
	memset(&resp, 0, sizeof(resp));
	ret = tb_xdomain_request(xd, &req, sizeof(req), TB_CFG_PKG_XDOMAIN_REQ,
				 &resp, sizeof(resp), TB_CFG_PKG_XDOMAIN_RESP,
				 ODL_LOGIN_TIMEOUT_MS);
	if (ret)
		return ret;
	if (resp.hdr.type != ODL_XD_STATUS || resp.hdr.command_id != cmd ||
	    !uuid_equal(&resp.hdr.initiator_uuid, xd->remote_uuid) ||
	    !uuid_equal(&resp.hdr.target_uuid, xd->local_uuid))
		return -EAGAIN;
	if (resp.status == ODL_XD_OK)
		return 0;
	return resp.status == ODL_XD_EINVAL ? -ESTALE : -EAGAIN;
}

static void odl_ready_work(struct work_struct *work)
{
	struct odl_dev *dev = container_of(to_delayed_work(work),
					   struct odl_dev, ready_work);
	u32 session, peer_session, gen;
	unsigned long delay;
	int ret;

	mutex_lock(&dev->conn_lock);
	if (dev->removing || !dev->paths_up || dev->ready_sent) {
		mutex_unlock(&dev->conn_lock);
		return;
	}
	session = dev->local_session;
	peer_session = dev->remote_session;
	gen = dev->generation;
	mutex_unlock(&dev->conn_lock);

	ret = odl_send_ready(dev, session, peer_session,
			     dev->ready_retries & 3);

	mutex_lock(&dev->conn_lock);
	/* a new connection sends its own READY */
	if (dev->removing || !dev->paths_up || dev->generation != gen) {
		mutex_unlock(&dev->conn_lock);
		return;
	}
	if (!ret || ret == -ESTALE) {
		dev->ready_sent = true;
	} else {
		delay = odl_backoff(&dev->ready_retries,
				    ODL_LOGIN_BACKOFF_MAX);
		queue_delayed_work(system_long_wq, &dev->ready_work, delay);
	}
	mutex_unlock(&dev->conn_lock);
}

static void odl_peer_work(struct work_struct *work)
{
	struct odl_dev *dev = container_of(work, struct odl_dev, peer_work);
	bool login, logout;
	u32 session, hopid, ring, feat;

	mutex_lock(&dev->conn_lock);
	spin_lock(&dev->lock);
	login = dev->peer_login_pending;
	logout = dev->peer_logout_pending;
	session = dev->peer_login_session;
	hopid = dev->peer_login_hopid;
	ring = dev->peer_login_ring;
	feat = dev->peer_login_features;
	dev->peer_login_pending = false;
	dev->peer_logout_pending = false;
	spin_unlock(&dev->lock);

	if (dev->removing)
		goto out;
	if (logout) {
		odl_disconnect(dev, "peer logged out");
		odl_login_stale(dev);
		dev->login_received = false;
		spin_lock(&dev->lock);
		odl_resume_abort(dev);
		spin_unlock(&dev->lock);
	}
	if (!login)
		goto out;
	if (dev->login_received &&
	    (session != dev->remote_session ||
	     hopid != dev->remote_transmit_path)) {
		/* the peer restarted: drop the old connection, log in again */
		odl_disconnect(dev, "peer logged in again");
		odl_login_stale(dev);
	} else if (dev->login_received && dev->connected &&
		   (ring != dev->peer_ring_size || feat != dev->peer_features)) {
		/* The same session on other terms: the peer followed this
		 * side off E2E (or is broken). This connection was set up on
		 * the old ones (flow control, window); a new session of ours
		 * makes both sides set up again, and the SENDs queued here
		 * wait for it, as in a fallback.
		 */
		spin_lock(&dev->lock);
		dev->resuming = true;
		spin_unlock(&dev->lock);
		odl_disconnect(dev, "peer changed its login terms");
		/* this LOGIN is of the old session: wait for the next */
		odl_new_session(dev);
		goto out;
	}
	if (odl_e2e_mode == ODL_E2E_AUTO && dev->e2e && !dev->connected &&
	    !(feat & ODL_TB5_FEAT_E2E) && (feat & ODL_TB5_FEAT_SW_CREDITS)) {
		/* the peer runs without E2E (it fell back): so do we, and
		 * both directions use software credits
		 */
		dev_info(&dev->svc->dev,
			 "peer uses software credits: RX ring without E2E\n");
		dev->e2e = false;
		/* failed: the login is kept, odl_login_work tries again */
		odl_realloc_rings(dev);
		odl_login_stale(dev);
	}
	dev->login_received = true;
	dev->remote_session = session;
	dev->remote_transmit_path = hopid;
	dev->peer_ring_size = ring;
	dev->peer_features = feat;
	dev->proto_version = ODL_PROTO_VERSION;
	/* negotiated: what both sides use */
	dev->features = odl_local_features(dev) & feat;
	if (!dev->login_sent) {
		dev->login_retries = 0;
		mod_delayed_work(system_long_wq, &dev->login_work, 0);
	}
	odl_try_connect(dev);
out:
	/* a READY may have come with or after the LOGIN */
	if (!dev->removing)
		odl_open_tx(dev);
	mutex_unlock(&dev->conn_lock);
}

static int odl_xd_reply_login(struct odl_dev *dev, const struct odl_xd_hdr *rq,
			      u64 route, u8 sequence, u32 status)
{
	struct odl_xd_login_response resp;
	struct tb_xdomain *xd = dev->xd;

	memset(&resp, 0, sizeof(resp));
	odl_fill_hdr(&resp.hdr, route, sequence, xd->local_uuid,
		     xd->remote_uuid, ODL_XD_LOGIN_RESPONSE, sizeof(resp),
		     rq->command_id);
	resp.status = status;
	resp.proto_version = ODL_PROTO_VERSION;
	resp.session = dev->local_session;
	resp.ring_size = dev->ring_size;
	resp.features = odl_local_features(dev);
	return tb_xdomain_response(xd, &resp, sizeof(resp),
				   TB_CFG_PKG_XDOMAIN_RESP);
}

static int odl_xd_reply_status(struct odl_dev *dev,
			       const struct odl_xd_hdr *rq, u64 route,
			       u8 sequence, u32 status)
{
	struct odl_xd_status_msg resp;
	struct tb_xdomain *xd = dev->xd;

	memset(&resp, 0, sizeof(resp));
	odl_fill_hdr(&resp.hdr, route, sequence, xd->local_uuid,
		     xd->remote_uuid, ODL_XD_STATUS, sizeof(resp),
		     rq->command_id);
	resp.status = status;
	return tb_xdomain_response(xd, &resp, sizeof(resp),
				   TB_CFG_PKG_XDOMAIN_RESP);
}

static u32 odl_check_login(const struct odl_dev *dev,
			   const struct odl_xd_login *rq)
{
	struct tb_xdomain *xd = dev->xd;

	if (rq->proto_min > ODL_PROTO_VERSION ||
	    rq->proto_max < ODL_PROTO_VERSION || rq->proto_min > rq->proto_max)
		return ODL_XD_EPROTO;
	if (rq->transmit_path < 8 || rq->transmit_path > xd->local_max_hopid ||
	    !odl_ring_size_ok(rq->ring_size) ||
	    rq->frame_size != ODL_TB5_FRAME_SIZE || rq->max_msg < 1)
		return ODL_XD_EINVAL;
	return ODL_XD_OK;
}

/*
 * One packet with our protocol UUID, offered to dev (odl_handler_lock
 * held, in the control channel's work): only validate, answer and hand
 * over to peer_work. 0: not for dev, or a response (those are left to
 * tb_xdomain_request()).
 */
static int odl_dev_packet(struct odl_dev *dev, const void *buf, size_t size)
{
	struct tb_xdomain *xd = dev->xd;
	union odl_xd_any pkt;
	u32 status;
	u64 route;
	u8 sequence;

	if (size < sizeof(struct odl_xd_hdr))
		return 0;
	memset(&pkt, 0, sizeof(pkt));
	memcpy(&pkt, buf, min(size, sizeof(pkt)));
	if (!xd->remote_uuid ||
	    !uuid_equal(&pkt.hdr.initiator_uuid, xd->remote_uuid) ||
	    !uuid_equal(&pkt.hdr.target_uuid, xd->local_uuid))
		return 0;
	route = ((u64)pkt.hdr.xd.route_hi << 32) | pkt.hdr.xd.route_lo;
	route &= ~BIT_ULL(63);
	if (route != xd->route)
		return 0;
	sequence = (pkt.hdr.xd.length_sn & ODL_XD_SN_MASK) >> ODL_XD_SN_SHIFT;

	switch (pkt.hdr.type) {
	case ODL_XD_LOGIN:
		if (size < sizeof(struct odl_xd_login)) {
			odl_xd_reply_login(dev, &pkt.hdr, route, sequence,
					   ODL_XD_EINVAL);
			return 1;
		}
		status = odl_check_login(dev, &pkt.login);
		if (status == ODL_XD_OK && READ_ONCE(dev->removing))
			status = ODL_XD_EBUSY;
		if (odl_xd_reply_login(dev, &pkt.hdr, route, sequence, status))
			return 1;
		/* busy: this side is being removed; the peer retries, so
		 * that is no problem to warn about
		 */
		if (status == ODL_XD_EBUSY) {
			dev_dbg(&dev->svc->dev, "login from peer while removing: busy\n");
			return 1;
		}
		if (status != ODL_XD_OK) {
			dev_warn_ratelimited(&dev->svc->dev,
					     "refused login from peer (%u)\n",
					     status);
			return 1;
		}
		spin_lock(&dev->lock);
		dev->peer_login_pending = true;
		dev->peer_login_session = pkt.login.session;
		dev->peer_login_hopid = pkt.login.transmit_path;
		dev->peer_login_ring = pkt.login.ring_size;
		dev->peer_login_features = pkt.login.features;
		spin_unlock(&dev->lock);
		queue_work(system_long_wq, &dev->peer_work);
		return 1;

	case ODL_XD_READY:
		/* record first: an OK tells the peer we know */
		if (size < sizeof(struct odl_xd_ready) ||
		    pkt.ready.peer_session != READ_ONCE(dev->local_session)) {
			/* short, or for a session of ours that is gone */
			odl_xd_reply_status(dev, &pkt.hdr, route, sequence,
					    ODL_XD_EINVAL);
			return 1;
		}
		spin_lock(&dev->lock);
		dev->peer_ready_seen = true;
		dev->peer_ready_session = pkt.ready.session;
		dev->peer_ready_target = pkt.ready.peer_session;
		spin_unlock(&dev->lock);
		odl_xd_reply_status(dev, &pkt.hdr, route, sequence, ODL_XD_OK);
		queue_work(system_long_wq, &dev->peer_work);
		return 1;

	case ODL_XD_LOGOUT:
		/* taken even if the answer cannot go out: the peer does not
		 * ask twice
		 */
		spin_lock(&dev->lock);
		dev->peer_logout_pending = true;
		dev->peer_login_pending = false;
		spin_unlock(&dev->lock);
		odl_xd_reply_status(dev, &pkt.hdr, route, sequence, ODL_XD_OK);
		queue_work(system_long_wq, &dev->peer_work);
		return 1;

	default:
		/* responses go to the request matcher, garbage is dropped */
		return 0;
	}
}

/*
 * The module's one protocol handler. The XDomain core calls a handler
 * after dropping its own lock, so a handler kept in a device could run
 * while that device's remove unregisters and frees it. The devices are
 * offered the packet here under odl_handler_lock instead, and remove
 * takes that lock to unlink its device: once unlinked, no call is
 * inside the device and none can reach it.
 */
static DEFINE_MUTEX(odl_handler_lock);
static LIST_HEAD(odl_handler_devs);

static int odl_handle_packet(const void *buf, size_t size, void *data)
{
	struct odl_dev *dev;
	int ret = 0;

	mutex_lock(&odl_handler_lock);
	list_for_each_entry(dev, &odl_handler_devs, handler_node) {
		ret = odl_dev_packet(dev, buf, size);
		if (ret)
			break;
	}
	mutex_unlock(&odl_handler_lock);
	return ret;
}

static struct tb_protocol_handler odl_handler = {
	.uuid = &odl_proto_uuid,
	.callback = odl_handle_packet,
};

static void odl_send_logout(struct odl_dev *dev)
{
	struct odl_xd_status_msg resp;
	struct odl_xd_logout req;
	struct tb_xdomain *xd = dev->xd;

	memset(&req, 0, sizeof(req));
	odl_fill_hdr(&req.hdr, xd->route, 0, xd->local_uuid, xd->remote_uuid,
		     ODL_XD_LOGOUT, sizeof(req),
		     atomic_inc_return(&dev->command_id));
	req.session = dev->local_session;
	tb_xdomain_request(xd, &req, sizeof(req), TB_CFG_PKG_XDOMAIN_REQ,
			   &resp, sizeof(resp), TB_CFG_PKG_XDOMAIN_RESP,
			   ODL_LOGOUT_TIMEOUT_MS);
}

/* ---------------------------------------------------------------------
 * Service driver
 */
static void odl_dev_release(struct kref *kref)
{
	struct odl_dev *dev = container_of(kref, struct odl_dev, kref);

	tb_xdomain_put(dev->xd);
	kfree(dev);
}

void odl_dev_put(struct odl_dev *dev)
{
	kref_put(&dev->kref, odl_dev_release);
}

static int odl_probe(struct tb_service *svc, const struct tb_service_id *id)
{
	struct tb_xdomain *xd = tb_service_parent(svc);
	struct odl_dev *dev;
	int ret;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	kref_init(&dev->kref);
	dev->svc = svc;
	dev->xd = tb_xdomain_get(xd);
	mutex_init(&dev->conn_lock);
	spin_lock_init(&dev->lock);
	INIT_DELAYED_WORK(&dev->login_work, odl_login_work);
	INIT_DELAYED_WORK(&dev->ready_work, odl_ready_work);
	INIT_DELAYED_WORK(&dev->connect_work, odl_connect_work);
	INIT_WORK(&dev->peer_work, odl_peer_work);
	INIT_DELAYED_WORK(&dev->rx_replay, odl_rx_replay_work);
	INIT_DELAYED_WORK(&dev->watchdog, odl_watchdog_work);
	INIT_WORK(&dev->fallback_work, odl_fallback_work);
	INIT_LIST_HEAD(&dev->tx_requeue);
	INIT_LIST_HEAD(&dev->rx_held);
	INIT_LIST_HEAD(&dev->tx_free);
	INIT_LIST_HEAD(&dev->txq);
	INIT_LIST_HEAD(&dev->files);
	INIT_LIST_HEAD(&dev->pending);
	atomic_set(&dev->command_id, 0);
	dev->local_session = get_random_u32() | 1;
	dev->ring_size = ring_size;
	dev->peer_ring_size = ring_size;
	dev->proto_version = ODL_PROTO_VERSION;
	switch (odl_e2e_mode) {
	case ODL_E2E_ON:
		dev->e2e = true;
		break;
	case ODL_E2E_OFF:
		dev->e2e = false;
		break;
	default:
		dev->e2e = !!(svc->prtcstns & ODL_STNS_E2E);
		break;
	}
	dev->features = odl_local_features(dev);

	ret = odl_alloc_rings(dev);
	if (ret) {
		dev_err(&svc->dev, "cannot allocate rings: %d\n", ret);
		goto err_put;
	}

	ret = odl_cdev_add(dev);
	if (ret)
		goto err_rings;

	mutex_lock(&odl_handler_lock);
	list_add_tail(&dev->handler_node, &odl_handler_devs);
	mutex_unlock(&odl_handler_lock);
	tb_service_set_drvdata(svc, dev);

	dev_info(&svc->dev, "peer %pUb: /dev/%s%u, %u descriptors per ring, local property block %u dwords\n",
		 xd->remote_uuid, ODL_TB5_DEV_PREFIX, dev->index,
		 dev->ring_size, xd->local_property_block_len);
	queue_delayed_work(system_long_wq, &dev->login_work, 0);
	return 0;

err_rings:
	odl_free_rings(dev);
err_put:
	odl_dev_put(dev);
	return ret;
}

static void odl_remove(struct tb_service *svc)
{
	struct odl_dev *dev = tb_service_get_drvdata(svc);

	mutex_lock(&dev->conn_lock);
	WRITE_ONCE(dev->removing, true);
	mutex_unlock(&dev->conn_lock);
	cancel_delayed_work_sync(&dev->login_work);
	cancel_delayed_work_sync(&dev->ready_work);
	cancel_delayed_work_sync(&dev->connect_work);
	mutex_lock(&odl_handler_lock);
	list_del(&dev->handler_node);
	mutex_unlock(&odl_handler_lock);
	cancel_work_sync(&dev->peer_work);
	cancel_work_sync(&dev->fallback_work);

	mutex_lock(&dev->conn_lock);
	if (dev->connected && !dev->xd->is_unplugged)
		odl_send_logout(dev);
	odl_disconnect(dev, "service removed");
	spin_lock(&dev->lock);
	dev->resuming = false;
	odl_fail_txq(dev, -ECONNRESET);
	spin_unlock(&dev->lock);
	mutex_unlock(&dev->conn_lock);
	/* the watchdog (stopped by the disconnect) may have queued it */
	cancel_work_sync(&dev->fallback_work);

	odl_cdev_remove(dev);
	odl_free_rings(dev);
	odl_dev_put(dev);
}

static const struct tb_service_id odl_ids[] = {
	{ TB_SERVICE(ODL_SERVICE_KEY, ODL_PRTCID) },
	{ },
};
MODULE_DEVICE_TABLE(tbsvc, odl_ids);

static struct tb_service_driver odl_driver = {
	.driver = {
		.owner = THIS_MODULE,
		.name = "odl_tb5",
	},
	.probe = odl_probe,
	.remove = odl_remove,
	.id_table = odl_ids,
};

/*
 * No device is left to offer packets to, and a dispatch that holds the
 * lock has finished once it is free. A call the core made just before
 * the handler was unregistered that has not reached the lock yet can
 * still run this module's code afterwards: the core offers no way to
 * wait for its callers, as for every protocol handler.
 */
static void odl_unregister_handler(void)
{
	tb_unregister_protocol_handler(&odl_handler);
	mutex_lock(&odl_handler_lock);
	mutex_unlock(&odl_handler_lock);
}

static int __init odl_init(void)
{
	int ret;

	BUILD_BUG_ON(sizeof(struct odl_frame_hdr) != 32);
	BUILD_BUG_ON(sizeof(struct odl_xd_login) > 248);
	BUILD_BUG_ON(sizeof(struct odl_xd_login_response) > 248);
	BUILD_BUG_ON(sizeof(struct odl_xd_ready) > 248);

	if (!odl_ring_size_ok(ring_size)) {
		pr_err("ring_size %u: must be a power of two in 64..16384\n",
		       ring_size);
		return -EINVAL;
	}
	if (sysfs_streq(e2e, "auto")) {
		odl_e2e_mode = ODL_E2E_AUTO;
	} else if (sysfs_streq(e2e, "on")) {
		odl_e2e_mode = ODL_E2E_ON;
	} else if (sysfs_streq(e2e, "off")) {
		odl_e2e_mode = ODL_E2E_OFF;
	} else {
		pr_err("e2e=%s: must be auto, on or off\n", e2e);
		return -EINVAL;
	}
	if (features_off & ~ODL_FEAT_OPTIONAL) {
		pr_err("features_off %#x: must be 0x8 (keyed), 0x10 (empty messages) or both\n",
		       features_off);
		return -EINVAL;
	}
	if (odl_busy_poll > ODL_BUSY_POLL_MAX_US) {
		pr_err("busy_poll %u: at most %u microseconds\n",
		       odl_busy_poll, ODL_BUSY_POLL_MAX_US);
		return -EINVAL;
	}

	ret = odl_cdev_init();
	if (ret)
		return ret;

	odl_dir = tb_property_create_dir(&odl_dir_uuid);
	if (!odl_dir) {
		ret = -ENOMEM;
		goto err_cdev;
	}
	tb_property_add_immediate(odl_dir, "prtcid", ODL_PRTCID);
	tb_property_add_immediate(odl_dir, "prtcvers", ODL_PRTCVERS);
	tb_property_add_immediate(odl_dir, "prtcrevs", ODL_PRTCREVS);
	tb_property_add_immediate(odl_dir, "prtcstns",
				  odl_e2e_mode == ODL_E2E_OFF ? 0 :
				  ODL_STNS_E2E);

	ret = tb_register_property_dir(ODL_SERVICE_KEY, odl_dir);
	if (ret)
		goto err_dir;
	ret = tb_register_protocol_handler(&odl_handler);
	if (ret)
		goto err_unreg;
	ret = tb_register_service_driver(&odl_driver);
	if (ret)
		goto err_handler;
	return 0;

err_handler:
	odl_unregister_handler();
err_unreg:
	tb_unregister_property_dir(ODL_SERVICE_KEY, odl_dir);
err_dir:
	tb_property_free_dir(odl_dir);
err_cdev:
	odl_cdev_exit();
	return ret;
}
module_init(odl_init);

static void __exit odl_exit(void)
{
	tb_unregister_service_driver(&odl_driver);
	/* every device is gone: the last buffers they let go of */
	flush_work(&odl_free_work);
	odl_unregister_handler();
	tb_unregister_property_dir(ODL_SERVICE_KEY, odl_dir);
	tb_property_free_dir(odl_dir);
	odl_cdev_exit();
}
module_exit(odl_exit);

MODULE_DESCRIPTION("OdinLink DMA channel over Thunderbolt/USB4 host-to-host links");
MODULE_AUTHOR("OdinLink developers");
MODULE_LICENSE("Dual MIT/GPL");
MODULE_VERSION("1.0");
ODL_IMPORT_NS_DMA_BUF();
