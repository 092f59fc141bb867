// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
/*
 * odl_apple_peer - synthetic Mac peer software for the apple-m4 profile.
 *
 * The AD/FA57 service and its data path are what a Mac's
 * AppleThunderboltRDMA publishes and sends (quirks.md 2.3.2-2.3.5); the
 * NHI model only carries them. This test module plays that software in a
 * guest, and the Linux side that talks to it:
 *
 *   role=mac    echo responder: every complete SEND received on the FA57
 *               path is sent back as a SEND of the same bytes.
 *   role=linux  test initiator: debugfs "send" sends N bytes of a seeded
 *               pattern and waits, bounded, for the echo.
 *
 * Both roles publish the AD/FA57 XDomain property directory and bind to
 * the peer's AD/FA57 service by protocol id/version/revision (the key is
 * not printable, so it cannot be matched through a modalias). A side's
 * path comes up only when the peer advertises too.
 *
 * Data path: XDomain HopID 9 both ways, one frame-mode TX and one RX ring
 * without E2E. A SEND is cut into 4 KiB frames: SOF PDF 1, EOF PDF 2 for
 * a non-final and 3 for the final frame (role=mac sends a single-frame
 * SEND without SOF, as macOS does). No sequence number, no ACK: after a
 * broken message the receiver discards frames up to the next EOF 3.
 *
 * debugfs (/sys/kernel/debug/odl_apple_peer/):
 *   status  role, state (waiting|up), peer, HopIDs, rings, last send
 *   stats   counters, "name value" per line
 *   send    role=linux only: write "BYTES SEED TIMEOUT_MS"; the write
 *           returns once the echo matched (success), or fails with
 *           ETIMEDOUT (no echo in time), EBADMSG (a different message came
 *           back), EMSGSIZE, ENOTCONN (no path) or EINTR.
 */
#include <linux/debugfs.h>
#include <linux/dma-mapping.h>
#include <linux/jiffies.h>
#include <linux/kref.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/seq_file.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/thunderbolt.h>
#include <linux/uaccess.h>
#include <linux/uuid.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

/* quirks.md 2.3.2: six 0xff bytes, then "AD" / "CA" */
#define APD_KEY_AD		"\377\377\377\377\377\377AD"
#define APD_KEY_CA		"\377\377\377\377\377\377CA"
#define APD_PRTCID		0xfa57
#define APD_PRTCVERS		1
#define APD_PRTCREVS		0
#define APD_PRTCSTNS		0

#define APD_HOPID		9
#define APD_FRAME_SIZE		SZ_4K
#define APD_PDF_NONE		0
#define APD_PDF_SOF		1
#define APD_PDF_EOF_MORE	2
#define APD_PDF_EOF_LAST	3
#define APD_TX_RING_SIZE	256
#define APD_TX_FRAMES		128
#define APD_RX_RING_SIZE	512
#define APD_ECHO_QUEUE_MAX	16
#define APD_ECHO_TX_MS		10000
#define APD_TIMEOUT_MAX_MS	600000

static const uuid_t apd_dir_uuid =
	UUID_INIT(0x49bf223e, 0xd4aa, 0x44d7,
		  0x87, 0x91, 0x50, 0x44, 0x5a, 0xc5, 0x2d, 0x5e);

static char *role = "linux";
module_param(role, charp, 0444);
MODULE_PARM_DESC(role, "mac (echo responder) or linux (test initiator)");

static unsigned int max_msg = SZ_1M;
module_param(max_msg, uint, 0444);
MODULE_PARM_DESC(max_msg, "largest SEND in bytes, 4096..16777216 (default 1 MiB)");

static bool nosof_single = true;
module_param(nosof_single, bool, 0444);
MODULE_PARM_DESC(nosof_single, "role=mac: single-frame SENDs without SOF, as macOS (default on)");

enum apd_counter {
	APD_SENT,
	APD_RECEIVED,
	APD_ECHOED,
	APD_BAD,
	APD_RESYNCS,
	APD_DISCARDED,
	APD_TIMEOUTS,
	APD_MISMATCH,
	APD_LATE,
	APD_ECHO_DROPPED,
	APD_TX_ERRORS,
	APD_TX_FRAMES_SENT,
	APD_RX_FRAMES,
	APD_TX_BYTES,
	APD_RX_BYTES,
	APD_NR_COUNTERS
};

static const char * const apd_counter_names[APD_NR_COUNTERS] = {
	[APD_SENT] = "sent",
	[APD_RECEIVED] = "received",
	[APD_ECHOED] = "echoed",
	[APD_BAD] = "bad",
	[APD_RESYNCS] = "resyncs",
	[APD_DISCARDED] = "discarded",
	[APD_TIMEOUTS] = "timeouts",
	[APD_MISMATCH] = "mismatch",
	[APD_LATE] = "late",
	[APD_ECHO_DROPPED] = "echo_dropped",
	[APD_TX_ERRORS] = "tx_errors",
	[APD_TX_FRAMES_SENT] = "tx_frames",
	[APD_RX_FRAMES] = "rx_frames",
	[APD_TX_BYTES] = "tx_bytes",
	[APD_RX_BYTES] = "rx_bytes",
};

/* module-wide, so they survive unplug and unbind */
static atomic64_t apd_stats[APD_NR_COUNTERS];

static void apd_count(enum apd_counter c, u64 n)
{
	atomic64_add(n, &apd_stats[c]);
}

struct apd;

struct apd_frame {
	struct ring_frame frame;
	struct apd *apd;
	void *buf;
	dma_addr_t dma;
	struct list_head node;
};

struct apd_msg {
	struct list_head node;
	size_t len;
	u8 data[];
};

/* what role=linux waits for: the echo of message number @gen */
struct apd_want {
	bool active;
	u32 len;
	u32 seed;
	u64 gen;
	int result;
};

enum apd_rx_state {
	APD_RX_IDLE,
	APD_RX_ASSEMBLING,
	APD_RX_DISCARDING,
};

struct apd {
	struct kref kref;
	struct tb_service *svc;
	struct tb_xdomain *xd;
	bool mac;

	struct tb_ring *tx_ring;
	struct tb_ring *rx_ring;
	int tx_hopid;
	int rx_hopid;
	bool started;
	bool paths;
	bool dead;

	struct apd_frame *tx_frames;
	struct apd_frame *rx_frames;

	spinlock_t lock;		/* tx_free, want, stale, echo_q */
	struct list_head tx_free;
	wait_queue_head_t tx_wq;
	wait_queue_head_t rx_wq;
	struct mutex send_mutex;	/* one message on the TX ring at a time */

	/* receive assembly: touched by the RX ring callback only */
	u8 *rx_buf;
	size_t rx_len;
	enum apd_rx_state rx_state;

	/* role=linux */
	struct apd_want want;
	struct apd_want stale;		/* timed out; its echo may come late */
	u64 gen;

	/* role=mac */
	struct list_head echo_q;
	unsigned int echo_n;
	struct work_struct echo_work;
};

static bool apd_role_mac;
static struct tb_property_dir *apd_dir;
static struct dentry *apd_dbg;

/* the bound instance (one peer at a time) and the last send's result */
static DEFINE_MUTEX(apd_mutex);
static struct apd *apd_cur;
static int apd_last_rc;
static u32 apd_last_len;
static s64 apd_last_us;

static void apd_release(struct kref *kref)
{
	kfree(container_of(kref, struct apd, kref));
}

static void apd_put(struct apd *a)
{
	kref_put(&a->kref, apd_release);
}

/* the seeded test pattern: xorshift32, one 32-bit word per 4 bytes */
static u32 apd_pattern_init(u32 seed)
{
	u32 st = seed * 2654435761u ^ 0x9e3779b9u;

	return st ? st : 1;
}

static u32 apd_pattern_next(u32 *st)
{
	u32 x = *st;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*st = x;
	return x;
}

/* @n is a multiple of 4 except for the last piece of a message */
static void apd_pattern_fill(u8 *p, size_t n, u32 *st)
{
	size_t i;

	for (i = 0; i < n; i += 4) {
		__le32 w = cpu_to_le32(apd_pattern_next(st));

		memcpy(p + i, &w, min_t(size_t, 4, n - i));
	}
}

static bool apd_pattern_ok(const u8 *p, size_t n, u32 seed)
{
	u32 st = apd_pattern_init(seed);
	size_t i;

	for (i = 0; i < n; i += 4) {
		__le32 w = cpu_to_le32(apd_pattern_next(&st));

		if (memcmp(p + i, &w, min_t(size_t, 4, n - i)))
			return false;
	}
	return true;
}

/* ---- transmit ---- */

static struct apd_frame *apd_tx_get(struct apd *a)
{
	struct apd_frame *f;

	spin_lock(&a->lock);
	f = list_first_entry_or_null(&a->tx_free, struct apd_frame, node);
	if (f)
		list_del_init(&f->node);
	spin_unlock(&a->lock);
	return f;
}

static void apd_tx_put(struct apd *a, struct apd_frame *f)
{
	spin_lock(&a->lock);
	list_add_tail(&f->node, &a->tx_free);
	spin_unlock(&a->lock);
	wake_up(&a->tx_wq);
}

static void apd_tx_done(struct tb_ring *ring, struct ring_frame *frame,
			bool canceled)
{
	struct apd_frame *f = container_of(frame, struct apd_frame, frame);

	apd_tx_put(f->apd, f);
}

/*
 * Send one message: @data, or (NULL) @len bytes of the pattern of @seed.
 * Waits for free TX frames until @deadline (jiffies). Caller holds
 * send_mutex.
 */
static int apd_tx_msg(struct apd *a, const u8 *data, size_t len, u32 seed,
		      unsigned long deadline)
{
	bool single = len <= APD_FRAME_SIZE;
	u32 st = apd_pattern_init(seed);
	size_t off = 0;

	while (off < len) {
		size_t n = min_t(size_t, len - off, APD_FRAME_SIZE);
		long left = (long)(deadline - jiffies);
		struct apd_frame *f = NULL;
		long w;
		int ret;

		if (left <= 0)
			return -ETIMEDOUT;
		w = wait_event_interruptible_timeout(a->tx_wq,
						     READ_ONCE(a->dead) ||
						     (f = apd_tx_get(a)),
						     left);
		if (READ_ONCE(a->dead)) {
			if (f)
				apd_tx_put(a, f);
			return -ENODEV;
		}
		if (w < 0)
			return -EINTR;
		if (!f)
			return -ETIMEDOUT;
		if (data)
			memcpy(f->buf, data + off, n);
		else
			apd_pattern_fill(f->buf, n, &st);
		/* the 12-bit length field encodes 4096 as 0 */
		f->frame.size = n % APD_FRAME_SIZE;
		f->frame.sof = (single && a->mac && nosof_single) ?
			       APD_PDF_NONE : APD_PDF_SOF;
		f->frame.eof = off + n == len ? APD_PDF_EOF_LAST :
						APD_PDF_EOF_MORE;
		ret = tb_ring_tx(a->tx_ring, &f->frame);
		if (ret) {
			apd_tx_put(a, f);
			apd_count(APD_TX_ERRORS, 1);
			return -ENODEV;
		}
		apd_count(APD_TX_FRAMES_SENT, 1);
		off += n;
	}
	apd_count(APD_SENT, 1);
	apd_count(APD_TX_BYTES, len);
	return 0;
}

/* ---- receive ---- */

static void apd_want_finish(struct apd *a, u64 gen, int result)
{
	spin_lock(&a->lock);
	if (a->want.active && a->want.gen == gen) {
		a->want.active = false;
		a->want.result = result;
	}
	spin_unlock(&a->lock);
	wake_up(&a->rx_wq);
}

/* role=linux: is this the echo we wait for, a late one, or garbage? */
static void apd_rx_linux(struct apd *a, const u8 *data, size_t len)
{
	struct apd_want cur, old;

	spin_lock(&a->lock);
	cur = a->want;
	old = a->stale;
	spin_unlock(&a->lock);

	if (cur.active && cur.len == len && apd_pattern_ok(data, len, cur.seed)) {
		apd_count(APD_ECHOED, 1);
		apd_want_finish(a, cur.gen, 0);
		return;
	}
	if (old.active && old.len == len && apd_pattern_ok(data, len, old.seed)) {
		apd_count(APD_LATE, 1);
		spin_lock(&a->lock);
		if (a->stale.gen == old.gen)
			a->stale.active = false;
		spin_unlock(&a->lock);
		return;
	}
	apd_count(APD_MISMATCH, 1);
	if (cur.active)
		apd_want_finish(a, cur.gen, -EBADMSG);
}

/* role=mac: queue the message for the echo worker */
static void apd_rx_mac(struct apd *a, const u8 *data, size_t len)
{
	struct apd_msg *m;

	spin_lock(&a->lock);
	if (a->echo_n >= APD_ECHO_QUEUE_MAX) {
		spin_unlock(&a->lock);
		apd_count(APD_ECHO_DROPPED, 1);
		return;
	}
	a->echo_n++;
	spin_unlock(&a->lock);

	m = kvmalloc(struct_size(m, data, len), GFP_KERNEL);
	if (!m) {
		spin_lock(&a->lock);
		a->echo_n--;
		spin_unlock(&a->lock);
		apd_count(APD_ECHO_DROPPED, 1);
		return;
	}
	m->len = len;
	memcpy(m->data, data, len);
	spin_lock(&a->lock);
	list_add_tail(&m->node, &a->echo_q);
	spin_unlock(&a->lock);
	if (!READ_ONCE(a->dead))
		queue_work(system_wq, &a->echo_work);
}

/*
 * One received frame. Everything is checked: descriptor flags (CRC
 * error, overrun), PDFs, the length and the message size limit. A bad
 * frame breaks the message: frames are discarded up to and including the
 * next EOF 3, the only point where the next message surely starts.
 */
static void apd_rx_frame(struct apd *a, const struct apd_frame *f)
{
	const struct ring_frame *fr = &f->frame;
	size_t len = fr->size ? fr->size : APD_FRAME_SIZE;
	bool last = fr->eof == APD_PDF_EOF_LAST;
	bool bad = false;

	apd_count(APD_RX_FRAMES, 1);
	if (fr->flags & (RING_DESC_CRC_ERROR | RING_DESC_BUFFER_OVERRUN))
		bad = true;
	else if (fr->eof != APD_PDF_EOF_MORE && !last)
		bad = true;
	else if (fr->sof != APD_PDF_SOF && fr->sof != APD_PDF_NONE)
		bad = true;
	/* no SOF: only a whole single-frame SEND */
	else if (fr->sof == APD_PDF_NONE &&
		 (!last || a->rx_state == APD_RX_ASSEMBLING))
		bad = true;
	else if (a->rx_state != APD_RX_DISCARDING &&
		 a->rx_len + len > max_msg)
		bad = true;

	if (bad) {
		apd_count(APD_BAD, 1);
		a->rx_state = APD_RX_DISCARDING;
		a->rx_len = 0;
	}
	if (a->rx_state == APD_RX_DISCARDING) {
		apd_count(APD_DISCARDED, 1);
		if (last) {
			a->rx_state = APD_RX_IDLE;
			apd_count(APD_RESYNCS, 1);
		}
		return;
	}

	memcpy(a->rx_buf + a->rx_len, f->buf, len);
	a->rx_len += len;
	a->rx_state = APD_RX_ASSEMBLING;
	if (!last)
		return;

	apd_count(APD_RECEIVED, 1);
	apd_count(APD_RX_BYTES, a->rx_len);
	if (a->mac)
		apd_rx_mac(a, a->rx_buf, a->rx_len);
	else
		apd_rx_linux(a, a->rx_buf, a->rx_len);
	a->rx_len = 0;
	a->rx_state = APD_RX_IDLE;
}

static void apd_rx_done(struct tb_ring *ring, struct ring_frame *frame,
			bool canceled)
{
	struct apd_frame *f = container_of(frame, struct apd_frame, frame);

	if (canceled)
		return;
	apd_rx_frame(f->apd, f);
	/* fails only when the ring is stopping; the frame is freed later */
	tb_ring_rx(ring, frame);
}

/* ---- role=mac: the echo responder ---- */

static void apd_echo_work(struct work_struct *work)
{
	struct apd *a = container_of(work, struct apd, echo_work);
	struct apd_msg *m;

	mutex_lock(&a->send_mutex);
	while (!READ_ONCE(a->dead)) {
		spin_lock(&a->lock);
		m = list_first_entry_or_null(&a->echo_q, struct apd_msg, node);
		if (m) {
			list_del(&m->node);
			a->echo_n--;
		}
		spin_unlock(&a->lock);
		if (!m)
			break;
		if (apd_tx_msg(a, m->data, m->len, 0,
			       jiffies + msecs_to_jiffies(APD_ECHO_TX_MS)))
			apd_count(APD_TX_ERRORS, 1);
		kvfree(m);
	}
	mutex_unlock(&a->send_mutex);
}

/* ---- role=linux: one SEND and its echo ---- */

static int apd_send_echo(struct apd *a, u32 len, u32 seed, u32 timeout_ms)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(timeout_ms);
	ktime_t t0;
	long w = 1;
	int ret;

	mutex_lock(&a->send_mutex);
	if (READ_ONCE(a->dead)) {
		mutex_unlock(&a->send_mutex);
		return -ENOTCONN;
	}
	spin_lock(&a->lock);
	a->want.active = true;
	a->want.len = len;
	a->want.seed = seed;
	a->want.gen = ++a->gen;
	a->want.result = -EINPROGRESS;
	spin_unlock(&a->lock);

	t0 = ktime_get();
	ret = apd_tx_msg(a, NULL, len, seed, deadline);
	if (!ret) {
		long left = max_t(long, (long)(deadline - jiffies), 0);

		w = wait_event_interruptible_timeout(a->rx_wq,
						     !READ_ONCE(a->want.active) ||
						     READ_ONCE(a->dead),
						     left);
	}

	spin_lock(&a->lock);
	if (a->want.active) {
		a->want.active = false;
		if (!ret)
			ret = READ_ONCE(a->dead) ? -ENODEV :
			      w < 0 ? -EINTR : -ETIMEDOUT;
		if (ret == -ETIMEDOUT || ret == -EINTR) {
			/* the message is out: its echo may still come */
			a->stale = a->want;
			a->stale.active = true;
		}
	} else if (!ret) {
		ret = a->want.result;
	}
	spin_unlock(&a->lock);
	mutex_unlock(&a->send_mutex);

	if (ret == -ETIMEDOUT)
		apd_count(APD_TIMEOUTS, 1);
	mutex_lock(&apd_mutex);
	apd_last_rc = ret;
	apd_last_len = len;
	apd_last_us = ktime_us_delta(ktime_get(), t0);
	mutex_unlock(&apd_mutex);
	return ret;
}

/* ---- the data path ---- */

static void apd_free_frames(struct apd *a, struct tb_ring *ring,
			    struct apd_frame *frames, unsigned int n)
{
	unsigned int i;

	if (!frames)
		return;
	for (i = 0; i < n; i++)
		if (frames[i].buf)
			dma_free_coherent(tb_ring_dma_device(ring),
					  APD_FRAME_SIZE, frames[i].buf,
					  frames[i].dma);
	kfree(frames);
}

static struct apd_frame *apd_alloc_frames(struct apd *a, struct tb_ring *ring,
					  unsigned int n, ring_cb cb)
{
	struct apd_frame *frames;
	unsigned int i;

	frames = kcalloc(n, sizeof(*frames), GFP_KERNEL);
	if (!frames)
		return NULL;
	for (i = 0; i < n; i++) {
		struct apd_frame *f = &frames[i];

		f->buf = dma_alloc_coherent(tb_ring_dma_device(ring),
					    APD_FRAME_SIZE, &f->dma, GFP_KERNEL);
		if (!f->buf) {
			apd_free_frames(a, ring, frames, n);
			return NULL;
		}
		f->apd = a;
		f->frame.buffer_phy = f->dma;
		f->frame.callback = cb;
		INIT_LIST_HEAD(&f->node);
	}
	return frames;
}

static void apd_path_down(struct apd *a)
{
	struct apd_msg *m, *tmp;
	int ret;

	WRITE_ONCE(a->dead, true);
	wake_up_all(&a->tx_wq);
	wake_up_all(&a->rx_wq);

	/* RX first: no callback can queue an echo after this */
	if (a->started)
		tb_ring_stop(a->rx_ring);
	cancel_work_sync(&a->echo_work);
	/* a sender still in send_mutex has seen dead and leaves */
	mutex_lock(&a->send_mutex);
	mutex_unlock(&a->send_mutex);
	if (a->started)
		tb_ring_stop(a->tx_ring);
	a->started = false;

	if (a->paths) {
		ret = tb_xdomain_disable_paths(a->xd, a->tx_hopid,
					       a->tx_ring->hop, a->rx_hopid,
					       a->rx_ring->hop);
		if (ret)
			dev_dbg(&a->svc->dev, "disabling paths: %d\n", ret);
		a->paths = false;
	}
	if (a->tx_hopid >= 0)
		tb_xdomain_release_out_hopid(a->xd, a->tx_hopid);
	if (a->rx_hopid >= 0)
		tb_xdomain_release_in_hopid(a->xd, a->rx_hopid);
	a->tx_hopid = -1;
	a->rx_hopid = -1;

	if (a->tx_ring) {
		apd_free_frames(a, a->tx_ring, a->tx_frames, APD_TX_FRAMES);
		tb_ring_free(a->tx_ring);
	}
	if (a->rx_ring) {
		apd_free_frames(a, a->rx_ring, a->rx_frames, APD_RX_RING_SIZE - 1);
		tb_ring_free(a->rx_ring);
	}
	a->tx_frames = NULL;
	a->rx_frames = NULL;
	a->tx_ring = NULL;
	a->rx_ring = NULL;

	list_for_each_entry_safe(m, tmp, &a->echo_q, node) {
		list_del(&m->node);
		kvfree(m);
	}
	a->echo_n = 0;
	vfree(a->rx_buf);
	a->rx_buf = NULL;
}

/* the fixed HopID or nothing: ida hands out the next free one otherwise */
static int apd_hopid(struct tb_xdomain *xd, bool in)
{
	int ret = in ? tb_xdomain_alloc_in_hopid(xd, APD_HOPID) :
		       tb_xdomain_alloc_out_hopid(xd, APD_HOPID);

	if (ret < 0 || ret == APD_HOPID)
		return ret;
	if (in)
		tb_xdomain_release_in_hopid(xd, ret);
	else
		tb_xdomain_release_out_hopid(xd, ret);
	return -EBUSY;
}

static int apd_path_up(struct apd *a)
{
	struct tb_nhi *nhi = a->xd->tb->nhi;
	unsigned int i;
	int ret;

	a->rx_buf = vmalloc(max_msg);
	if (!a->rx_buf)
		return -ENOMEM;

	a->tx_ring = tb_ring_alloc_tx(nhi, -1, APD_TX_RING_SIZE,
				      RING_FLAG_FRAME);
	if (!a->tx_ring)
		return -ENOMEM;
	/* SOF 1 (or none: a Mac's single-frame SEND), EOF 2 or 3; no E2E */
	a->rx_ring = tb_ring_alloc_rx(nhi, -1, APD_RX_RING_SIZE,
				      RING_FLAG_FRAME, 0,
				      BIT(APD_PDF_NONE) | BIT(APD_PDF_SOF),
				      BIT(APD_PDF_EOF_MORE) |
				      BIT(APD_PDF_EOF_LAST), NULL, NULL);
	if (!a->rx_ring)
		return -ENOMEM;

	ret = apd_hopid(a->xd, false);
	if (ret < 0)
		return ret;
	a->tx_hopid = ret;
	ret = apd_hopid(a->xd, true);
	if (ret < 0)
		return ret;
	a->rx_hopid = ret;

	a->tx_frames = apd_alloc_frames(a, a->tx_ring, APD_TX_FRAMES,
					apd_tx_done);
	/* one entry of a ring always stays empty */
	a->rx_frames = apd_alloc_frames(a, a->rx_ring, APD_RX_RING_SIZE - 1,
					apd_rx_done);
	if (!a->tx_frames || !a->rx_frames)
		return -ENOMEM;
	for (i = 0; i < APD_TX_FRAMES; i++)
		list_add_tail(&a->tx_frames[i].node, &a->tx_free);

	tb_ring_start(a->tx_ring);
	tb_ring_start(a->rx_ring);
	a->started = true;
	for (i = 0; i < APD_RX_RING_SIZE - 1; i++) {
		a->rx_frames[i].frame.size = 0;
		ret = tb_ring_rx(a->rx_ring, &a->rx_frames[i].frame);
		if (ret)
			return ret;
	}

	ret = tb_xdomain_enable_paths(a->xd, a->tx_hopid, a->tx_ring->hop,
				      a->rx_hopid, a->rx_ring->hop);
	if (ret)
		return ret;
	a->paths = true;
	return 0;
}

static int apd_probe(struct tb_service *svc, const struct tb_service_id *id)
{
	struct tb_xdomain *xd = tb_service_parent(svc);
	struct apd *a;
	int ret;

	mutex_lock(&apd_mutex);
	if (apd_cur) {
		mutex_unlock(&apd_mutex);
		dev_info(&svc->dev, "already bound to %s, not binding this one\n",
			 dev_name(&apd_cur->svc->dev));
		return -EBUSY;
	}
	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a) {
		mutex_unlock(&apd_mutex);
		return -ENOMEM;
	}
	kref_init(&a->kref);
	a->svc = svc;
	a->xd = xd;
	a->mac = apd_role_mac;
	a->tx_hopid = -1;
	a->rx_hopid = -1;
	spin_lock_init(&a->lock);
	INIT_LIST_HEAD(&a->tx_free);
	INIT_LIST_HEAD(&a->echo_q);
	init_waitqueue_head(&a->tx_wq);
	init_waitqueue_head(&a->rx_wq);
	mutex_init(&a->send_mutex);
	INIT_WORK(&a->echo_work, apd_echo_work);

	ret = apd_path_up(a);
	if (ret) {
		apd_path_down(a);
		mutex_unlock(&apd_mutex);
		dev_err(&svc->dev, "FA57 data path setup failed: %d\n", ret);
		apd_put(a);
		return ret;
	}
	apd_cur = a;
	tb_service_set_drvdata(svc, a);
	mutex_unlock(&apd_mutex);

	dev_info(&svc->dev,
		 "FA57 data path up (role %s): TX HopID %d ring %d, RX HopID %d ring %d\n",
		 a->mac ? "mac" : "linux", a->tx_hopid, a->tx_ring->hop,
		 a->rx_hopid, a->rx_ring->hop);
	return 0;
}

static void apd_remove(struct tb_service *svc)
{
	struct apd *a = tb_service_get_drvdata(svc);

	mutex_lock(&apd_mutex);
	if (apd_cur == a)
		apd_cur = NULL;
	mutex_unlock(&apd_mutex);

	apd_path_down(a);
	tb_service_set_drvdata(svc, NULL);
	dev_info(&svc->dev, "FA57 data path down\n");
	apd_put(a);
}

/* by protocol id/version/revision: the AD key gives no usable modalias */
static const struct tb_service_id apd_ids[] = {
	{
		.match_flags = TBSVC_MATCH_PROTOCOL_ID |
			       TBSVC_MATCH_PROTOCOL_VERSION |
			       TBSVC_MATCH_PROTOCOL_REVISION,
		.protocol_id = APD_PRTCID,
		.protocol_version = APD_PRTCVERS,
		.protocol_revision = APD_PRTCREVS,
	},
	{ },
};

static struct tb_service_driver apd_driver = {
	.driver = {
		.owner = THIS_MODULE,
		.name = "odl_apple_peer",
	},
	.probe = apd_probe,
	.remove = apd_remove,
	.id_table = apd_ids,
};

/* ---- debugfs ---- */

static int apd_status_show(struct seq_file *s, void *unused)
{
	struct apd *a;

	mutex_lock(&apd_mutex);
	a = apd_cur;
	seq_printf(s, "role=%s\n", apd_role_mac ? "mac" : "linux");
	seq_printf(s, "state=%s\n", a ? "up" : "waiting");
	if (a) {
		seq_printf(s, "peer=%s\n", dev_name(&a->xd->dev));
		seq_printf(s, "service=%s\n", dev_name(&a->svc->dev));
		seq_printf(s, "tx_hopid=%d\nrx_hopid=%d\n", a->tx_hopid,
			   a->rx_hopid);
		seq_printf(s, "tx_ring=%d\nrx_ring=%d\n", a->tx_ring->hop,
			   a->rx_ring->hop);
	}
	seq_printf(s, "max_msg=%u\n", max_msg);
	seq_printf(s, "last_len=%u\nlast_rc=%d\nlast_us=%lld\n",
		   apd_last_len, apd_last_rc, apd_last_us);
	mutex_unlock(&apd_mutex);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(apd_status);

static int apd_stats_show(struct seq_file *s, void *unused)
{
	int i;

	for (i = 0; i < APD_NR_COUNTERS; i++)
		seq_printf(s, "%s %lld\n", apd_counter_names[i],
			   (long long)atomic64_read(&apd_stats[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(apd_stats);

static ssize_t apd_send_write(struct file *file, const char __user *ubuf,
			      size_t count, loff_t *ppos)
{
	u32 len, seed, timeout_ms;
	char buf[64];
	struct apd *a;
	int ret;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	if (sscanf(buf, "%u %u %u", &len, &seed, &timeout_ms) != 3)
		return -EINVAL;
	if (!len || !timeout_ms || timeout_ms > APD_TIMEOUT_MAX_MS)
		return -EINVAL;
	if (len > max_msg)
		return -EMSGSIZE;

	mutex_lock(&apd_mutex);
	a = apd_cur;
	if (a)
		kref_get(&a->kref);
	mutex_unlock(&apd_mutex);
	if (!a)
		return -ENOTCONN;
	ret = apd_send_echo(a, len, seed, timeout_ms);
	apd_put(a);
	return ret ? ret : count;
}

static const struct file_operations apd_send_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = apd_send_write,
	.llseek = no_llseek,
};

/* ---- module ---- */

static int __init apd_init(void)
{
	int ret;

	if (!strcmp(role, "mac")) {
		apd_role_mac = true;
	} else if (strcmp(role, "linux")) {
		pr_err("odl_apple_peer: role must be mac or linux, not '%s'\n",
		       role);
		return -EINVAL;
	}
	if (max_msg < APD_FRAME_SIZE || max_msg > SZ_16M) {
		pr_err("odl_apple_peer: max_msg must be 4096..16777216\n");
		return -EINVAL;
	}

	/* the AD/FA57 directory, exactly as a Mac publishes it */
	apd_dir = tb_property_create_dir(&apd_dir_uuid);
	if (!apd_dir)
		return -ENOMEM;
	ret = tb_property_add_immediate(apd_dir, "prtcid", APD_PRTCID);
	if (!ret)
		ret = tb_property_add_immediate(apd_dir, "prtcvers", APD_PRTCVERS);
	if (!ret)
		ret = tb_property_add_immediate(apd_dir, "prtcrevs", APD_PRTCREVS);
	if (!ret)
		ret = tb_property_add_immediate(apd_dir, "prtcstns", APD_PRTCSTNS);
	if (!ret)
		ret = tb_property_add_immediate(apd_dir, APD_KEY_CA, 1);
	if (ret)
		goto err_dir;

	apd_dbg = debugfs_create_dir("odl_apple_peer", NULL);
	debugfs_create_file("status", 0444, apd_dbg, NULL, &apd_status_fops);
	debugfs_create_file("stats", 0444, apd_dbg, NULL, &apd_stats_fops);
	if (!apd_role_mac)
		debugfs_create_file("send", 0200, apd_dbg, NULL, &apd_send_fops);

	ret = tb_register_property_dir(APD_KEY_AD, apd_dir);
	if (ret)
		goto err_dbg;
	ret = tb_register_service_driver(&apd_driver);
	if (ret)
		goto err_prop;
	pr_info("odl_apple_peer: role %s, AD/FA57 advertised\n", role);
	return 0;

err_prop:
	tb_unregister_property_dir(APD_KEY_AD, apd_dir);
err_dbg:
	debugfs_remove_recursive(apd_dbg);
err_dir:
	tb_property_free_dir(apd_dir);
	return ret;
}
module_init(apd_init);

static void __exit apd_exit(void)
{
	tb_unregister_service_driver(&apd_driver);
	tb_unregister_property_dir(APD_KEY_AD, apd_dir);
	debugfs_remove_recursive(apd_dbg);
	tb_property_free_dir(apd_dir);
}
module_exit(apd_exit);

MODULE_DESCRIPTION("OdinLink synthetic Mac peer: AD/FA57 service and FA57 data path (test)");
MODULE_LICENSE("Dual MIT/GPL");
