// SPDX-License-Identifier: MIT
/*
 * libodl_tb5 "shm" backend: two processes on one host, one POSIX shared
 * memory segment per (NAME, port), same API and semantics as the kernel
 * device.
 *
 * Segment "/odl_tb5.NAME.PORT" (see docs/library.md):
 *   page 0   header: magic, layout, ring size, per-side state (FREE,
 *            ATTACHED, DETACHED), per-side futex word + waiter count,
 *            per-direction producer/consumer byte counters
 *   then     ring[0] (side a → b), ring[1] (side b → a), ring_bytes each
 * Each ring is single-producer single-consumer and lock free: nothing a
 * crashed process leaves half done can block or corrupt its partner. A
 * message is a 16-byte header {magic, seq, len, key} and len payload bytes,
 * padded to 16; it is streamed, so messages may be larger than the ring.
 * An unkeyed message (key 0) goes to the oldest unkeyed posted receive, a
 * keyed one to the receive posted with its key; a keyed message whose
 * receive is not posted yet is copied aside (up to SHM_STAGE_MAX messages /
 * SHM_STAGE_BYTES) so the stream goes on, like the driver does.
 *
 * Liveness: open file description (OFD) locks on the segment's fd. Byte 0
 * serialises open/close (init lock); byte 1+side is held by a side's
 * process for as long as it is attached. The kernel drops the lock when a
 * process dies, so a partner checks it (every ODL_SHM_LIVE_NS while
 * waiting) and a newcomer finding no lock held recycles the stale segment.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "odl_priv.h"

#define SHM_MAGIC	0x534c444fu	/* "ODLS" */
#define SHM_LAYOUT	2u	/* 2: key in the message header */
#define MSG_MAGIC	0x4d4c444fu	/* "ODLM" */
#define MSG_HDR		16u
#define SHM_DATA_OFF	4096u
#define SHM_DEF_RING	(4ull << 20)
#define SHM_MIN_RING	(64ull << 10)
#define SHM_MAX_RING	(256ull << 20)
#define SHM_DEF_MAXMSG	(64ull << 20)
#define SHM_MAX_MAXMSG	(1ull << 30)
#define ODL_SHM_LIVE_NS	(10ull * 1000000ull)	/* peer liveness check period */
#define ODL_SHM_SLICE_MS 10			/* futex sleep slice */
#define SHM_STAGE_MAX	64			/* keyed messages held aside */
#define SHM_STAGE_BYTES	(16ull << 20)
#define SHM_STALL_MS	10000	/* a held-aside message may give way after */
#define SHM_CANCELLED_MAX 64	/* withdrawn keys remembered */

enum { SIDE_FREE = 0, SIDE_ATTACHED = 1, SIDE_DETACHED = 2 };

struct shm_side {
	_Atomic uint32_t state;
	_Atomic uint32_t event;		/* futex word: bumped to wake this side */
	_Atomic uint32_t waiters;
	uint32_t pid;
	_Atomic uint64_t max_msg;
	uint8_t pad[40];
} __attribute__((aligned(64)));

struct shm_idx {
	_Atomic uint64_t v;
	uint8_t pad[56];
} __attribute__((aligned(64)));

struct shm_seg {
	uint32_t magic;
	uint32_t layout;
	uint64_t ring_bytes;
	uint64_t seg_bytes;
	uint32_t port;
	uint32_t pad0;
	uint8_t pad[32];
	struct shm_side side[2];
	struct shm_idx prod[2];		/* bytes written into ring[i] by side i */
	struct shm_idx cons[2];		/* bytes of ring[i] consumed by side !i */
};

_Static_assert(sizeof(struct shm_seg) <= SHM_DATA_OFF, "header too big");

struct msg_hdr {
	uint32_t magic;
	uint32_t seq;
	uint32_t len;		/* <= SHM_MAX_MAXMSG */
	uint32_t key;		/* 0, or the peer receive's key */
};

struct shm_op {
	uint64_t cookie, off, len, done;
	uint8_t *ptr;
	uint32_t id;
	uint32_t key;
	bool hdr;
	bool urgent;		/* ODL_TB5_F_URGENT */
	uint8_t overtaken;	/* urgent sends queued ahead of it */
};

/* a keyed message that arrived before its receive */
struct shm_staged {
	struct shm_staged *next;
	uint32_t key;
	uint64_t len;
	uint64_t since;		/* arrival, odl_now_ns */
	uint8_t data[];
};

struct shm_q {
	struct shm_op *ops;
	unsigned int cap, head, count;
};

struct shm_priv {
	int fd;
	struct shm_seg *seg;
	size_t seg_len;
	uint8_t *ring[2];
	uint64_t R;
	int me, peer;
	char segname[80];
	char name[80];
	dev_t dev;
	ino_t ino;
	int state;		/* ODL_TB5_STATE_* */
	int err;		/* error of a DISCONNECTED/ERROR handle */
	bool peer_gone;		/* peer detached/died; draining what it sent */
	bool released;		/* our side lock released: segment is read-only history */
	uint64_t my_max, eff_max;
	uint64_t tx_pos, rx_pos;
	uint32_t tx_seq, rx_seq;
	struct shm_q txq, rxq;		/* rxq: unkeyed receives */
	struct shm_op *kq;		/* keyed receives (rxq.cap, unordered) */
	unsigned int kq_n;
	unsigned int tx_unreaped, rx_unreaped;
	bool in_msg, in_discard;
	uint64_t in_len, in_done;
	/* the message being read goes to: rxq's head (!in_keyed), or cur (a
	 * keyed receive, or with in_stage a staging buffer)
	 */
	bool in_keyed, in_stage;
	bool in_drop;		/* for a withdrawn key: skipped, no completion */
	struct shm_op cur;
	struct shm_staged *stage_buf;	/* in_stage: being filled */
	struct shm_staged *staged;	/* complete, waiting for receives */
	unsigned int staged_n;
	uint64_t staged_bytes;
	uint64_t stall_ns;	/* a staged message older may give way */
	uint32_t cancelled[SHM_CANCELLED_MAX];	/* withdrawn keys, 0: free */
	unsigned int cancelled_next;
	struct odl_tb5_completion *cq;
	unsigned int cq_cap, cq_head, cq_count;
	uint64_t last_live;
	unsigned int poll_want;	/* completions a poll waits for */
	unsigned int cq_lost;	/* lost-message markers in cq */
	uint64_t tx_count;	/* messages taken off the send queue */
	uint64_t drop_nth;	/* fault injection: drop this message (1-based) */
	uint64_t drop_every;	/* and every drop_every-th after it (0: once) */
};

static struct shm_priv *P(struct odl_tb5 *h)
{
	return h->be_priv;
}

/* ------------------------------------------------------------------ */
/* futex, locks */

static void futex_wait(_Atomic uint32_t *w, uint32_t val, int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

static int ofd_lock(int fd, int byte, int type, bool wait)
{
	struct flock l = { .l_type = (short)type, .l_whence = SEEK_SET,
			   .l_start = byte, .l_len = 1 };

	while (fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &l) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

static bool ofd_held(int fd, int byte)
{
	struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			   .l_start = byte, .l_len = 1 };

	if (fcntl(fd, F_OFD_GETLK, &l) < 0)
		return true;	/* cannot tell: assume alive */
	return l.l_type != F_UNLCK;
}

/* wake side s of the segment */
static void notify(struct odl_tb5 *h, int s)
{
	struct shm_side *sd = &P(h)->seg->side[s];

	atomic_fetch_add(&sd->event, 1);
	if (atomic_load(&sd->waiters)) {
		futex_wake(&sd->event);
		h->st.wakeups++;
	}
}

/* ------------------------------------------------------------------ */
/* queues */

static void cq_push(struct odl_tb5 *h, uint32_t op, const struct shm_op *o,
		    int status, uint64_t len)
{
	struct shm_priv *p = P(h);
	struct odl_tb5_completion *c;

	if (p->cq_count == p->cq_cap) {
		unsigned int ncap = p->cq_cap * 2, i;
		struct odl_tb5_completion *n = malloc(ncap * sizeof(*n));

		if (!n)
			abort();	/* bounded by queued ops; tiny */
		for (i = 0; i < p->cq_count; i++)
			n[i] = p->cq[(p->cq_head + i) % p->cq_cap];
		free(p->cq);
		p->cq = n;
		p->cq_cap = ncap;
		p->cq_head = 0;
	}
	c = &p->cq[(p->cq_head + p->cq_count) % p->cq_cap];
	memset(c, 0, sizeof(*c));
	c->cookie = o->cookie;
	c->length = len;
	c->offset = o->off;
	c->buf_id = o->id;
	c->op = op;
	c->status = status;
	p->cq_count++;
}

/* a message of the peer's never arrived: poll reports it in order */
static void cq_push_lost(struct odl_tb5 *h)
{
	static const struct shm_op none;

	cq_push(h, ODL_OP_LOST, &none, ODL_POLL_LOST, 0);
	P(h)->cq_lost++;
}

/* fault injection (ODL_TB5_SHM_DROP): is the next message to be dropped? */
static bool tx_drop(struct shm_priv *p)
{
	uint64_t n = ++p->tx_count;

	if (!p->drop_nth || n < p->drop_nth)
		return false;
	if (n == p->drop_nth)
		return true;
	return p->drop_every && (n - p->drop_nth) % p->drop_every == 0;
}

static struct shm_op *q_head(struct shm_q *q)
{
	return q->count ? &q->ops[q->head] : NULL;
}

static void q_pop(struct shm_q *q)
{
	q->head = (q->head + 1) % q->cap;
	q->count--;
}

static void q_push(struct shm_q *q, const struct shm_op *o)
{
	q->ops[(q->head + q->count) % q->cap] = *o;
	q->count++;
}

/*
 * An urgent send goes behind the last urgent or started send of the queue,
 * ahead of the sends behind it, unless the first of those was overtaken
 * ODL_SHM_OVERTAKE times already: then at the tail (urgent sends stay in
 * order among themselves). The queue has room (checked by the caller).
 */
#define ODL_SHM_OVERTAKE 64

static void q_push_urgent(struct shm_q *q, const struct shm_op *o)
{
	uint32_t at = q->count, i;
	struct shm_op *first;

	while (at > 0) {
		const struct shm_op *x = &q->ops[(q->head + at - 1) % q->cap];

		if (x->urgent || x->hdr)
			break;
		at--;
	}
	if (at == q->count) {
		q_push(q, o);
		return;
	}
	first = &q->ops[(q->head + at) % q->cap];
	if (first->overtaken >= ODL_SHM_OVERTAKE) {
		q_push(q, o);
		return;
	}
	first->overtaken++;
	for (i = q->count; i > at; i--)
		q->ops[(q->head + i) % q->cap] = q->ops[(q->head + i - 1) % q->cap];
	q->ops[(q->head + at) % q->cap] = *o;
	q->count++;
}

/* a keyed receive is being filled (it is in cur, off the queues) */
static bool filling_keyed(const struct shm_priv *p)
{
	return p->in_msg && p->in_keyed && !p->in_stage && !p->in_drop;
}

static void fail_all(struct odl_tb5 *h, int err)
{
	struct shm_priv *p = P(h);
	struct shm_op *o;

	while ((o = q_head(&p->txq))) {
		cq_push(h, ODL_TB5_OP_SEND, o, err, 0);
		q_pop(&p->txq);
	}
	if (filling_keyed(p))
		cq_push(h, ODL_TB5_OP_RECV, &p->cur, err, 0);
	free(p->stage_buf);
	p->stage_buf = NULL;
	while (p->kq_n)
		cq_push(h, ODL_TB5_OP_RECV, &p->kq[--p->kq_n], err, 0);
	while ((o = q_head(&p->rxq))) {
		cq_push(h, ODL_TB5_OP_RECV, o, err, 0);
		q_pop(&p->rxq);
	}
	p->in_msg = false;
}

static void staged_free_all(struct shm_priv *p)
{
	while (p->staged) {
		struct shm_staged *x = p->staged;

		p->staged = x->next;
		free(x);
	}
	p->staged_n = 0;
	p->staged_bytes = 0;
	free(p->stage_buf);
	p->stage_buf = NULL;
}

/* index of the keyed receive posted with key, or -1 */
static int kq_find(const struct shm_priv *p, uint32_t key)
{
	for (unsigned int i = 0; i < p->kq_n; i++)
		if (p->kq[i].key == key)
			return (int)i;
	return -1;
}

static void kq_take(struct shm_priv *p, int i, struct shm_op *out)
{
	*out = p->kq[i];
	p->kq[i] = p->kq[--p->kq_n];
}

/* ------------------------------------------------------------------ */
/* segment life */

static bool same_inode(struct shm_priv *p)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "/dev/shm%s", p->segname);
	return stat(path, &st) == 0 && st.st_dev == p->dev && st.st_ino == p->ino;
}

/*
 * Leave the segment: mark our side DETACHED, wake the peer, drop our side
 * lock; unlink the name if nobody else is attached. After this the handle
 * never writes the segment again.
 */
static void detach(struct odl_tb5 *h)
{
	struct shm_priv *p = P(h);

	if (p->released)
		return;
	ofd_lock(p->fd, 0, F_WRLCK, true);
	atomic_store(&p->seg->side[p->me].state, SIDE_DETACHED);
	notify(h, p->peer);
	if (!ofd_held(p->fd, 1 + p->peer) && same_inode(p))
		shm_unlink(p->segname);
	ofd_lock(p->fd, 1 + p->me, F_UNLCK, false);
	ofd_lock(p->fd, 0, F_UNLCK, false);
	p->released = true;
}

static void set_error(struct odl_tb5 *h, int err)
{
	struct shm_priv *p = P(h);

	fail_all(h, err);
	p->state = err == -EPROTO ? ODL_TB5_STATE_ERROR : ODL_TB5_STATE_DISCONNECTED;
	p->err = err;
	detach(h);
}

/* ------------------------------------------------------------------ */
/* data movement */

static void ring_put(struct shm_priv *p, uint64_t pos, const void *src, uint64_t n)
{
	uint8_t *r = p->ring[p->me];
	uint64_t o = pos & (p->R - 1), first = p->R - o;

	if (first > n)
		first = n;
	memcpy(r + o, src, first);
	if (n > first)
		memcpy(r, (const uint8_t *)src + first, n - first);
}

static void ring_get(struct shm_priv *p, uint64_t pos, void *dst, uint64_t n)
{
	const uint8_t *r = p->ring[p->peer];
	uint64_t o = pos & (p->R - 1), first = p->R - o;

	if (first > n)
		first = n;
	memcpy(dst, r + o, first);
	if (n > first)
		memcpy((uint8_t *)dst + first, r, n - first);
}

static uint64_t pad16(uint64_t n)
{
	return (16 - (n & 15)) & 15;
}

/* write queued sends into our ring; 1 if anything moved, <0 on error */
static int tx_progress(struct odl_tb5 *h)
{
	struct shm_priv *p = P(h);
	struct shm_op *o;
	bool moved = false;

	if (p->state != ODL_TB5_STATE_CONNECTED || p->peer_gone)
		return 0;
	while ((o = q_head(&p->txq))) {
		uint64_t cons = atomic_load_explicit(&p->seg->cons[p->me].v,
						     memory_order_acquire);
		uint64_t used = p->tx_pos - cons, space, n;

		if (used > p->R || cons > p->tx_pos)
			return -EPROTO;
		space = p->R - used;
		if (!o->hdr) {
			struct msg_hdr mh = { MSG_MAGIC, p->tx_seq, (uint32_t)o->len,
					      o->key };

			if (o->len > p->eff_max) {
				cq_push(h, ODL_TB5_OP_SEND, o, -EMSGSIZE, 0);
				q_pop(&p->txq);
				continue;
			}
			if (space < MSG_HDR)
				break;
			if (tx_drop(p)) {
				/* lost on the way: its sequence number is
				 * used, the sender sees success (like a frame
				 * the cable dropped)
				 */
				p->tx_seq++;
				cq_push(h, ODL_TB5_OP_SEND, o, 0, o->len);
				q_pop(&p->txq);
				continue;
			}
			ring_put(p, p->tx_pos, &mh, MSG_HDR);
			p->tx_pos += MSG_HDR;
			space -= MSG_HDR;
			p->tx_seq++;
			o->hdr = true;
			moved = true;
		}
		n = o->len - o->done;
		if (n > space)
			n = space;
		if (n) {
			ring_put(p, p->tx_pos, o->ptr + o->done, n);
			p->tx_pos += n;
			o->done += n;
			space -= n;
			moved = true;
		}
		if (o->done < o->len || space < pad16(o->len))
			break;
		p->tx_pos += pad16(o->len);
		cq_push(h, ODL_TB5_OP_SEND, o, 0, o->len);
		q_pop(&p->txq);
	}
	if (moved) {
		atomic_store_explicit(&p->seg->prod[p->me].v, p->tx_pos,
				      memory_order_release);
		notify(h, p->peer);
	}
	return moved;
}

/* where p remembers key as withdrawn (odl_tb5_cancel_recv), or NULL */
static uint32_t *cancelled_slot(struct shm_priv *p, uint32_t key)
{
	unsigned int i;

	for (i = 0; key && i < SHM_CANCELLED_MAX; i++)
		if (p->cancelled[i] == key)
			return &p->cancelled[i];
	return NULL;
}

/* n messages of bytes held aside leave room for one of len bytes */
static bool stage_room(unsigned int n, uint64_t bytes, uint64_t len)
{
	return n < SHM_STAGE_MAX && bytes + len <= SHM_STAGE_BYTES;
}

/*
 * Room to hold a keyed message of len bytes aside. Where there is none,
 * the oldest held ones that have waited stall_ns give way, as many as it
 * takes (each reported like a lost message: poll returns -EBADMSG once),
 * so messages nobody receives cannot keep the room and stop the stream
 * for good; none does when even all of those would not make room.
 */
static bool stage_make_room(struct odl_tb5 *h, uint64_t len)
{
	struct shm_priv *p = P(h);
	uint64_t now = odl_now_ns(), bytes = p->staged_bytes;
	unsigned int n = p->staged_n;
	struct shm_staged *x;

	/* the list is in arrival order: the stale ones come first */
	for (x = p->staged; !stage_room(n, bytes, len) && x &&
	     now - x->since >= p->stall_ns; x = x->next) {
		n--;
		bytes -= x->len;
	}
	if (!stage_room(n, bytes, len))
		return false;
	while (p->staged_n > n) {
		x = p->staged;
		p->staged = x->next;
		p->staged_n--;
		p->staged_bytes -= x->len;
		free(x);
		cq_push_lost(h);
	}
	return true;
}

static struct shm_staged **stage_tail(struct shm_priv *p)
{
	struct shm_staged **t = &p->staged;

	while (*t)
		t = &(*t)->next;
	return t;
}

static bool staged_take(struct odl_tb5 *h, const struct shm_op *o);

/*
 * Where the message with header mh goes: false = nowhere yet (no unkeyed
 * receive posted; or a keyed one without its receive and no room to hold
 * it aside): the stream waits.
 */
static bool rx_target(struct odl_tb5 *h, const struct msg_hdr *mh)
{
	struct shm_priv *p = P(h);
	uint32_t *slot;
	int i;

	p->in_stage = false;
	p->in_drop = false;
	p->in_keyed = mh->key != 0;
	if (!mh->key)
		return q_head(&p->rxq) != NULL;
	i = kq_find(p, mh->key);
	if (i >= 0) {
		kq_take(p, i, &p->cur);
		return true;
	}
	/* its receive was withdrawn: nobody wants it, it takes no room */
	slot = cancelled_slot(p, mh->key);
	if (slot) {
		*slot = 0;
		memset(&p->cur, 0, sizeof(p->cur));
		p->in_drop = true;
		return true;
	}
	if (!stage_make_room(h, mh->len))
		return false;
	p->stage_buf = malloc(sizeof(*p->stage_buf) + mh->len);
	if (!p->stage_buf)
		return false;
	p->stage_buf->key = mh->key;
	p->stage_buf->len = mh->len;
	p->stage_buf->since = odl_now_ns();
	memset(&p->cur, 0, sizeof(p->cur));
	p->cur.ptr = p->stage_buf->data;
	p->cur.len = mh->len;
	p->in_stage = true;
	return true;
}

/* read the peer's ring into posted receives; 1 if anything moved */
static int rx_progress(struct odl_tb5 *h)
{
	struct shm_priv *p = P(h);
	bool moved = false;

	for (;;) {
		uint64_t prod = atomic_load_explicit(&p->seg->prod[p->peer].v,
						     memory_order_acquire);
		uint64_t avail = prod - p->rx_pos, n;
		struct shm_op *o;

		if (avail > p->R || prod < p->rx_pos)
			return -EPROTO;
		if (!p->in_msg) {
			struct msg_hdr mh;

			if (avail < MSG_HDR)
				break;
			ring_get(p, p->rx_pos, &mh, sizeof(mh));
			if (mh.magic != MSG_MAGIC || mh.len > p->my_max)
				return -EPROTO;
			if (mh.seq != p->rx_seq) {
				/* messages skipped: lost (never backwards) */
				if ((int32_t)(mh.seq - p->rx_seq) < 0)
					return -EPROTO;
				p->rx_seq = mh.seq;
				cq_push_lost(h);
				moved = true;
			}
			if (!rx_target(h, &mh))
				break;
			o = p->in_keyed ? &p->cur : q_head(&p->rxq);
			p->rx_pos += MSG_HDR;
			avail -= MSG_HDR;
			p->rx_seq++;
			p->in_msg = true;
			p->in_len = mh.len;
			p->in_done = 0;
			p->in_discard = p->in_drop || mh.len > o->len;
			moved = true;
		}
		o = p->in_keyed ? &p->cur : q_head(&p->rxq);
		n = p->in_len - p->in_done;
		if (n > avail)
			n = avail;
		if (n) {
			if (!p->in_discard)
				ring_get(p, p->rx_pos, o->ptr + p->in_done, n);
			p->rx_pos += n;
			p->in_done += n;
			avail -= n;
			moved = true;
		}
		if (p->in_done < p->in_len || avail < pad16(p->in_len))
			break;
		p->rx_pos += pad16(p->in_len);
		if (p->in_drop) {
			/* nothing to complete */
		} else if (p->in_stage) {
			int i = kq_find(p, p->stage_buf->key);

			p->stage_buf->next = NULL;
			*stage_tail(p) = p->stage_buf;
			p->stage_buf = NULL;
			p->staged_n++;
			p->staged_bytes += p->in_len;
			/* its receive was posted while it arrived aside */
			if (i >= 0) {
				struct shm_op ko;

				kq_take(p, i, &ko);
				staged_take(h, &ko);
			}
		} else {
			cq_push(h, ODL_TB5_OP_RECV, o,
				p->in_discard ? -EMSGSIZE : 0, p->in_len);
			if (!p->in_keyed)
				q_pop(&p->rxq);
		}
		p->in_msg = false;
	}
	if (moved) {
		atomic_store_explicit(&p->seg->cons[p->peer].v, p->rx_pos,
				      memory_order_release);
		notify(h, p->peer);
	}
	return moved;
}

/* a complete message (header + payload + pad) is in the ring */
static bool rx_complete_msg(struct shm_priv *p)
{
	uint64_t prod = atomic_load_explicit(&p->seg->prod[p->peer].v,
					     memory_order_acquire);
	uint64_t avail = prod - p->rx_pos;
	struct msg_hdr mh;

	if (p->in_msg || avail < MSG_HDR || avail > p->R)
		return false;
	ring_get(p, p->rx_pos, &mh, sizeof(mh));
	return mh.len <= avail && avail - MSG_HDR >= mh.len + pad16(mh.len);
}

/* look at the peer: connect, notice detach/death */
static void update_peer(struct odl_tb5 *h, bool force_live)
{
	struct shm_priv *p = P(h);
	struct shm_side *ps = &p->seg->side[p->peer];
	uint32_t st;

	if (p->released || p->peer_gone)
		return;
	st = atomic_load(&ps->state);
	if (st == SIDE_ATTACHED) {
		uint64_t now = odl_now_ns();

		if (p->state == ODL_TB5_STATE_WAITING) {
			uint64_t pm = atomic_load(&ps->max_msg);

			p->eff_max = pm < p->my_max ? pm : p->my_max;
			p->state = ODL_TB5_STATE_CONNECTED;
		}
		if (force_live || now - p->last_live >= ODL_SHM_LIVE_NS) {
			p->last_live = now;
			if (!ofd_held(p->fd, 1 + p->peer))
				p->peer_gone = true;
		}
	} else if (st == SIDE_DETACHED) {
		p->peer_gone = true;
	}
}

/* one round of progress; returns 1 if anything moved */
static int progress(struct odl_tb5 *h, bool force_live)
{
	struct shm_priv *p = P(h);
	int a, b;

	if (p->released)
		return 0;
	update_peer(h, force_live);
	a = rx_progress(h);
	b = a < 0 ? 0 : tx_progress(h);
	if (a < 0 || b < 0) {
		set_error(h, -EPROTO);
		return 1;
	}
	if (p->peer_gone) {
		/* sends can no longer be delivered */
		struct shm_op *o;

		while ((o = q_head(&p->txq))) {
			cq_push(h, ODL_TB5_OP_SEND, o, -ECONNRESET, 0);
			q_pop(&p->txq);
			a = 1;
		}
		/*
		 * Receives still get every complete message the peer sent
		 * before it left; once none is left the channel is down,
		 * but for keyed messages held aside: receives posted with
		 * their keys still get them, nothing else can complete.
		 */
		if (!rx_complete_msg(p)) {
			if (!p->staged_n) {
				set_error(h, -ECONNRESET);
				return 1;
			}
			if (p->kq_n || p->rxq.count) {
				fail_all(h, -ECONNRESET);
				a = 1;
			}
		}
	}
	return a || b;
}

/*
 * Wait until cond(h) != 0 or the deadline; drops h->lock while sleeping.
 * cond returns 1 = done, <0 = error to return, 0 = keep waiting.
 */
static int wait_for(struct odl_tb5 *h, uint64_t deadline, bool busy,
		    int (*cond)(struct odl_tb5 *h))
{
	struct shm_priv *p = P(h);
	struct shm_side *me = &p->seg->side[p->me];
	int r;

	h->st.waits++;
	for (;;) {
		uint32_t ev = 0;
		uint64_t now;
		bool reg = false;

		if (!p->released) {
			if (!busy) {
				atomic_fetch_add(&me->waiters, 1);
				reg = true;
			}
			ev = atomic_load(&me->event);
		}
		progress(h, false);
		r = cond(h);
		now = odl_now_ns();
		if (!r && now >= deadline)
			r = -ETIMEDOUT;
		if (!r && p->released)
			r = -ECONNRESET;
		if (r) {
			if (reg)
				atomic_fetch_sub(&me->waiters, 1);
			return r;
		}
		pthread_mutex_unlock(&h->lock);
		if (busy) {
			int i;

			odl_yield_to_waiters(h);
			for (i = 0; i < 2000 && atomic_load(&me->event) == ev; i++)
				odl_cpu_relax();
		} else {
			uint64_t left = deadline - now;
			int ms = ODL_SHM_SLICE_MS;

			if (left < (uint64_t)ms * 1000000ull)
				ms = (int)(left / 1000000ull) + 1;
			futex_wait(&me->event, ev, ms);
		}
		odl_lock(h);
		if (reg)
			atomic_fetch_sub(&me->waiters, 1);
	}
}

static int dead_err(struct shm_priv *p)
{
	if (p->state == ODL_TB5_STATE_ERROR)
		return p->err;
	if (p->state == ODL_TB5_STATE_DISCONNECTED)
		return -ECONNRESET;
	return 0;
}

static int cond_cq(struct odl_tb5 *h)
{
	struct shm_priv *p = P(h);

	if (p->cq_count >= p->poll_want || p->cq_lost ||
	    (p->cq_count && (p->peer_gone || dead_err(p))))
		return 1;
	if (p->cq_count)
		return 0;
	if (p->peer_gone && !p->txq.count && !p->rxq.count && !p->kq_n &&
	    !filling_keyed(p))
		return -ECONNRESET;	/* nothing queued can ever complete */
	return dead_err(p);
}

static int cond_tx_space(struct odl_tb5 *h)
{
	struct shm_priv *p = P(h);
	int e = dead_err(p);

	if (e)
		return e;
	if (p->peer_gone)
		return -ECONNRESET;
	return p->txq.count < p->txq.cap;
}

static int cond_rx_space(struct odl_tb5 *h)
{
	struct shm_priv *p = P(h);
	int e = dead_err(p);

	if (e)
		return e;
	return p->rxq.count + p->kq_n < p->rxq.cap;
}

static int cond_peer(struct odl_tb5 *h)
{
	struct shm_priv *p = P(h);
	int e = dead_err(p);

	if (e)
		return e;
	if (p->peer_gone)
		return -ECONNRESET;
	return p->state == ODL_TB5_STATE_CONNECTED;
}

/* ------------------------------------------------------------------ */
/* open / close */

static int parse_arg(const char *arg, int role, char *name, size_t nsz, int *side)
{
	size_t n = 0;
	const char *s;

	for (s = arg; *s && *s != ':'; s++) {
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '.' ||
		      *s == '-'))
			return -EINVAL;
		n++;
	}
	if (n == 0 || n > 48 || n >= nsz)
		return -EINVAL;
	memcpy(name, arg, n);
	name[n] = 0;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	*side = role == ODL_TB5_ROLE_A ? 0 : role == ODL_TB5_ROLE_B ? 1 : -1;
	if (*s == ':') {
		int want;

		if (!strcmp(s + 1, "a"))
			want = 0;
		else if (!strcmp(s + 1, "b"))
			want = 1;
		else
			return -EINVAL;
		if (*side >= 0 && *side != want)
			return -EINVAL;
		*side = want;
	}
	return 0;
}

static int seg_init(struct shm_priv *p, uint64_t R, uint32_t port)
{
	size_t len = SHM_DATA_OFF + 2 * R;
	struct shm_seg *s;

	if (ftruncate(p->fd, 0) < 0 || ftruncate(p->fd, (off_t)len) < 0)
		return -errno;
	s = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
	if (s == MAP_FAILED)
		return -errno;
	s->layout = SHM_LAYOUT;
	s->ring_bytes = R;
	s->seg_bytes = len;
	s->port = port;
	atomic_thread_fence(memory_order_release);
	s->magic = SHM_MAGIC;
	p->seg = s;
	p->seg_len = len;
	return 0;
}

static int seg_map(struct shm_priv *p, size_t size)
{
	struct shm_seg *s;

	s = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
	if (s == MAP_FAILED)
		return -errno;
	p->seg = s;
	p->seg_len = size;
	return 0;
}

static void seg_unmap(struct shm_priv *p)
{
	if (p->seg)
		munmap(p->seg, p->seg_len);
	p->seg = NULL;
}

static bool seg_valid(const struct shm_seg *s, size_t size)
{
	uint64_t R = s->ring_bytes;

	return s->magic == SHM_MAGIC && s->layout == SHM_LAYOUT &&
	       R >= SHM_MIN_RING && R <= SHM_MAX_RING && !(R & (R - 1)) &&
	       s->seg_bytes == size && size == SHM_DATA_OFF + 2 * R;
}

/* side s can be taken: unlocked, never used in this segment's session */
static bool side_usable(struct shm_seg *s, const bool held[2], int side)
{
	return !held[side] && atomic_load(&s->side[side].state) == SIDE_FREE;
}

/* one attempt; 1 = retry (segment replaced under us) */
static int try_attach(struct odl_tb5 *h, int want, uint64_t R)
{
	struct shm_priv *p = P(h);
	struct stat st;
	bool held[2], stale;
	int r, side = -1, i;

	p->fd = shm_open(p->segname, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (p->fd < 0)
		return -errno;
	r = ofd_lock(p->fd, 0, F_WRLCK, true);
	if (r)
		goto out_close;
	if (fstat(p->fd, &st) < 0) {
		r = -errno;
		goto out_close;
	}
	p->dev = st.st_dev;
	p->ino = st.st_ino;
	if (!same_inode(p)) {
		r = 1;
		goto out_close;
	}
	held[0] = ofd_held(p->fd, 1);
	held[1] = ofd_held(p->fd, 2);
	stale = !held[0] && !held[1];
	if (st.st_size == 0) {
		/* new (or left mid-creation): initialise it */
		r = seg_init(p, R, h->port);
		if (r)
			goto out_close;
	} else if (stale) {
		/*
		 * Left by a dead run: give the name to a fresh segment. (Not
		 * reinitialised in place: a closed handle may still map it.)
		 */
		shm_unlink(p->segname);
		r = 1;
		goto out_close;
	} else {
		r = seg_map(p, (size_t)st.st_size);
		if (r)
			goto out_close;
		if (!seg_valid(p->seg, (size_t)st.st_size)) {
			r = -EPROTO;	/* not ours, or a newer layout in use */
			goto out_unmap;
		}
		/* from the size checked, not read again from the segment a
		 * peer can write
		 */
		R = ((uint64_t)st.st_size - SHM_DATA_OFF) / 2;
	}
	for (i = 0; i < 2 && side < 0; i++) {
		int s = want >= 0 ? want : i;

		if (side_usable(p->seg, held, s))
			side = s;
		if (want >= 0)
			break;
	}
	if (side < 0) {
		int s = want >= 0 ? want : 0;

		if (held[s] && (want >= 0 || held[!s])) {
			r = -EBUSY;	/* endpoint open by another process */
			goto out_unmap;
		}
		/*
		 * A side was used by a process that is gone while its partner
		 * still holds the segment: that session is over. Give the
		 * name to a fresh segment; the partner keeps the old one.
		 */
		shm_unlink(p->segname);
		r = 1;
		goto out_unmap;
	}
	r = ofd_lock(p->fd, 1 + side, F_WRLCK, false);
	if (r) {
		r = -EBUSY;
		goto out_unmap;
	}
	p->me = side;
	p->peer = !side;
	p->R = R;
	p->ring[0] = (uint8_t *)p->seg + SHM_DATA_OFF;
	p->ring[1] = p->ring[0] + p->R;
	p->tx_pos = atomic_load(&p->seg->prod[side].v);
	p->rx_pos = atomic_load(&p->seg->cons[!side].v);
	p->seg->side[side].pid = (uint32_t)getpid();
	atomic_store(&p->seg->side[side].max_msg, p->my_max);
	atomic_store(&p->seg->side[side].state, SIDE_ATTACHED);
	notify(h, p->peer);
	ofd_lock(p->fd, 0, F_UNLCK, false);
	return 0;

out_unmap:
	seg_unmap(p);
out_close:
	close(p->fd);
	p->fd = -1;
	return r;
}

/*
 * ODL_TB5_SHM_DROP=N[/M] (testing, like the cable's fault injector): this
 * process's N-th message on each handle (1-based), and every M-th after
 * it, is "lost on the way": it takes its sequence number, its send
 * completes OK, its bytes never reach the ring; the receiver sees the gap.
 */
static int parse_drop(const char *v, uint64_t *nth, uint64_t *every)
{
	char *end;

	*nth = 0;
	*every = 0;
	if (!v || !*v)
		return 0;
	errno = 0;
	*nth = strtoull(v, &end, 10);
	if (*end == '/')
		*every = strtoull(end + 1, &end, 10);
	if (errno || *end || !*nth || v[0] == '-')
		return -EINVAL;
	return 0;
}

/*
 * ODL_TB5_SHM_STALL_MS=N (1..3600000; default 10000, the driver's
 * rx_stall_ms): how long a keyed message held aside for its receive keeps
 * its room when the room is needed for another.
 */
static int parse_stall(const char *v, uint64_t *ns)
{
	unsigned long long ms = SHM_STALL_MS;
	char *end;

	if (v && *v) {
		errno = 0;
		ms = strtoull(v, &end, 10);
		if (errno || *end || v[0] == '-' || !ms || ms > 3600000)
			return -EINVAL;
	}
	*ns = ms * 1000000ull;
	return 0;
}

static int shm_open_be(struct odl_tb5 *h, const char *arg,
		       const struct odl_tb5_open_opts *o)
{
	struct shm_priv *p;
	char name[64];
	uint64_t R = o->ring_bytes ? o->ring_bytes : SHM_DEF_RING;
	int r, want, tries;

	r = parse_arg(arg, o->role, name, sizeof(name), &want);
	if (r)
		return r;
	if (R < SHM_MIN_RING || R > SHM_MAX_RING || (R & (R - 1)))
		return -EINVAL;
	if (o->max_msg_size > SHM_MAX_MAXMSG)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	h->be_priv = p;
	p->fd = -1;
	p->my_max = o->max_msg_size ? o->max_msg_size : SHM_DEF_MAXMSG;
	r = parse_drop(getenv("ODL_TB5_SHM_DROP"), &p->drop_nth, &p->drop_every);
	if (!r)
		r = parse_stall(getenv("ODL_TB5_SHM_STALL_MS"), &p->stall_ns);
	if (r) {
		free(p);
		h->be_priv = NULL;
		return r;
	}
	p->eff_max = p->my_max;
	p->state = ODL_TB5_STATE_WAITING;
	snprintf(p->segname, sizeof(p->segname), "/odl_tb5.%s.%u", name, h->port);
	p->txq.cap = o->tx_depth;
	p->rxq.cap = o->rx_depth;
	p->cq_cap = o->tx_depth + o->rx_depth;
	p->txq.ops = calloc(p->txq.cap, sizeof(struct shm_op));
	p->rxq.ops = calloc(p->rxq.cap, sizeof(struct shm_op));
	p->kq = calloc(p->rxq.cap, sizeof(struct shm_op));
	p->cq = calloc(p->cq_cap, sizeof(*p->cq));
	r = -ENOMEM;
	if (p->txq.ops && p->rxq.ops && p->kq && p->cq) {
		for (tries = 0; tries < 20; tries++) {
			r = try_attach(h, want, R);
			if (r <= 0)
				break;
		}
		if (r > 0)
			r = -EBUSY;
	}
	if (r) {
		free(p->txq.ops);
		free(p->rxq.ops);
		free(p->kq);
		free(p->cq);
		free(p);
		h->be_priv = NULL;
		return r;
	}
	snprintf(p->name, sizeof(p->name), "shm:%s:%c", name, 'a' + p->me);
	progress(h, true);
	return 0;
}

static void shm_close(struct odl_tb5 *h)
{
	struct shm_priv *p = P(h);

	detach(h);
	seg_unmap(p);
	close(p->fd);
	staged_free_all(p);
	free(p->txq.ops);
	free(p->rxq.ops);
	free(p->kq);
	free(p->cq);
	free(p);
	h->be_priv = NULL;
}

/* ------------------------------------------------------------------ */
/* API */

static int shm_wait_peer(struct odl_tb5 *h, int timeout_ms)
{
	int r;

	progress(h, true);
	r = cond_peer(h);
	if (r)
		return r < 0 ? r : 0;
	if (timeout_ms == 0)
		return -ENOTCONN;
	r = wait_for(h, odl_deadline(timeout_ms), false, cond_peer);
	return r < 0 ? r : 0;
}

static int shm_state(struct odl_tb5 *h)
{
	progress(h, true);
	return P(h)->state;
}

static int shm_info(struct odl_tb5 *h, struct odl_tb5_info *info)
{
	struct shm_priv *p = P(h);
	char other[96];

	progress(h, true);
	snprintf(info->backend, sizeof(info->backend), "shm");
	snprintf(info->name, sizeof(info->name), "%s", p->name);
	info->index = -1;
	odl_uuid_from_name(p->name, info->local_uuid);
	snprintf(other, sizeof(other), "%.*s%c", (int)strlen(p->name) - 1,
		 p->name, 'a' + p->peer);
	odl_uuid_from_name(other, info->peer_uuid);
	info->abi_version = SHM_LAYOUT;
	info->features = ODL_TB5_FEAT_KEYED | ODL_TB5_FEAT_URGENT | ODL_TB5_FEAT_EMPTY;
	info->state = (uint32_t)p->state;
	info->tx_depth = p->txq.cap;
	info->rx_depth = p->rxq.cap;
	info->max_msg_size = p->eff_max;
	info->ring_bytes = p->R;
	return 0;
}

static int shm_fd(struct odl_tb5 *h)
{
	(void)h;
	return -ENOTSUP;
}

static int shm_buf_alloc(struct odl_tb5 *h, struct odl_buf *b)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t len = (b->size + (size_t)pg - 1) & ~((size_t)pg - 1);
	void *m;

	(void)h;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	b->addr = m;
	b->map = m;
	b->map_len = len;
	return 0;
}

static int shm_buf_register(struct odl_tb5 *h, struct odl_buf *b)
{
	(void)h;
	(void)b;
	return 0;
}

static int shm_buf_import(struct odl_tb5 *h, struct odl_buf *b, int fd,
			  uint64_t offset)
{
	(void)h;
	(void)b;
	(void)fd;
	(void)offset;
	return -ENOTSUP;
}

static void shm_buf_free(struct odl_tb5 *h, struct odl_buf *b)
{
	(void)h;
	if (b->map)
		munmap(b->map, b->map_len);
}

/*
 * A queue slot for send/post_recv: `have` is cond()'s answer already taken
 * (>0 room, 0 none); without room, fail with -EAGAIN (non-blocking) or wait
 * for cond() within the handle's timeout.
 */
static int wait_space(struct odl_tb5 *h, int have, uint32_t flags,
		      int (*cond)(struct odl_tb5 *h))
{
	if (have)
		return have;
	if (flags & ODL_TB5_F_NONBLOCK)
		return -EAGAIN;
	return wait_for(h, odl_deadline(h->opts.timeout_ms),
			odl_busy(h, flags), cond);
}

static int shm_send(struct odl_tb5 *h, uint32_t dst_port, uint32_t id,
		    uint64_t off, uint64_t len, uint32_t key, uint64_t cookie,
		    uint32_t flags)
{
	struct shm_priv *p = P(h);
	struct shm_op o = { .cookie = cookie, .off = off, .len = len, .id = id,
			    .key = key, .urgent = (flags & ODL_TB5_F_URGENT) != 0 };
	int r;

	/* a segment joins the two handles of one port number: no way from
	 * here to another port of the peer
	 */
	if (dst_port != h->port)
		return -EOPNOTSUPP;

	progress(h, false);
	r = cond_tx_space(h);
	if (r < 0)
		return r;
	if (len > p->eff_max)
		return -EMSGSIZE;
	r = wait_space(h, r, flags, cond_tx_space);
	if (r < 0)
		return r;
	o.ptr = (uint8_t *)h->bufs[id].addr + off;
	if (o.urgent)
		q_push_urgent(&p->txq, &o);
	else
		q_push(&p->txq, &o);
	p->tx_unreaped++;
	progress(h, false);
	return 0;
}

/* a keyed receive whose message is already here: complete it from there */
static bool staged_take(struct odl_tb5 *h, const struct shm_op *o)
{
	struct shm_priv *p = P(h);
	struct shm_staged **pp, *x;

	for (pp = &p->staged; (x = *pp); pp = &x->next) {
		if (x->key != o->key)
			continue;
		*pp = x->next;
		p->staged_n--;
		p->staged_bytes -= x->len;
		if (x->len > o->len) {
			cq_push(h, ODL_TB5_OP_RECV, o, -EMSGSIZE, x->len);
		} else {
			memcpy(o->ptr, x->data, x->len);
			cq_push(h, ODL_TB5_OP_RECV, o, 0, x->len);
		}
		free(x);
		return true;
	}
	return false;
}

static int shm_post_recv(struct odl_tb5 *h, uint32_t id, uint64_t off,
			 uint64_t cap, uint32_t key, uint64_t cookie,
			 uint32_t flags)
{
	struct shm_priv *p = P(h);
	struct shm_op o = { .cookie = cookie, .off = off, .len = cap, .id = id,
			    .key = key };
	int r;

	progress(h, false);
	o.ptr = (uint8_t *)h->bufs[id].addr + off;
	if (key && (kq_find(p, key) >= 0 || (filling_keyed(p) && p->cur.key == key)))
		return -EEXIST;
	/* its message is here already (even if the peer has left since) */
	if (key && staged_take(h, &o)) {
		p->rx_unreaped++;
		return 0;
	}
	if (p->peer_gone && !rx_complete_msg(p))
		return -ECONNRESET;	/* nothing more will arrive */
	r = cond_rx_space(h);
	if (r < 0)
		return r;
	r = wait_space(h, r, flags, cond_rx_space);
	if (r < 0)
		return r;
	/* a wait dropped the lock: the message may have come aside, or
	 * another thread posted the key, meanwhile
	 */
	if (key && (kq_find(p, key) >= 0 || (filling_keyed(p) && p->cur.key == key)))
		return -EEXIST;
	if (key && staged_take(h, &o)) {
		p->rx_unreaped++;
		return 0;
	}
	p->rx_unreaped++;
	if (key) {
		uint32_t *slot = cancelled_slot(p, key);

		/* posted again after a withdrawal: its message is wanted */
		if (slot)
			*slot = 0;
		p->kq[p->kq_n++] = o;
	} else
		q_push(&p->rxq, &o);
	progress(h, false);
	return 0;
}

static int shm_cancel(struct odl_tb5 *h, uint32_t key)
{
	struct shm_priv *p = P(h);
	struct shm_op o;
	int i;

	progress(h, false);
	i = kq_find(p, key);
	if (i < 0)
		return -ENOENT;
	kq_take(p, i, &o);
	cq_push(h, ODL_TB5_OP_RECV, &o, -ECANCELED, 0);
	/* its message has not begun to arrive (it would have taken the
	 * receive): when it does, it is skipped, not held aside */
	if (!cancelled_slot(p, key)) {
		p->cancelled[p->cancelled_next] = key;
		p->cancelled_next = (p->cancelled_next + 1) % SHM_CANCELLED_MAX;
	}
	return 0;
}

static int shm_poll(struct odl_tb5 *h, struct odl_tb5_completion *c,
		    unsigned int max, unsigned int min, int timeout_ms,
		    uint32_t flags)
{
	struct shm_priv *p = P(h);
	unsigned int n = 0, out = p->tx_unreaped + p->rx_unreaped;
	int r;

	/* never wait for more than can complete */
	p->poll_want = min < out ? min : out ? out : 1;
	progress(h, false);
	r = cond_cq(h);
	if (!r && timeout_ms == 0) {
		if (!p->cq_count)
			return -EAGAIN;
	} else if (!r) {
		r = wait_for(h, odl_deadline(timeout_ms), odl_busy(h, flags),
			     cond_cq);
	}
	if (r < 0 && !p->cq_count)
		return r;
	if (p->cq_count && p->cq[p->cq_head].op == ODL_OP_LOST) {
		/* a lost message is first: report it, once */
		p->cq_head = (p->cq_head + 1) % p->cq_cap;
		p->cq_count--;
		p->cq_lost--;
		h->st.rx_lost++;
		return ODL_POLL_LOST;
	}
	while (n < max && p->cq_count && p->cq[p->cq_head].op != ODL_OP_LOST) {
		c[n] = p->cq[p->cq_head];
		if (c[n].op == ODL_TB5_OP_SEND)
			p->tx_unreaped--;
		else
			p->rx_unreaped--;
		p->cq_head = (p->cq_head + 1) % p->cq_cap;
		p->cq_count--;
		n++;
	}
	return (int)n;
}

static int shm_pending(struct odl_tb5 *h, unsigned int *s, unsigned int *r)
{
	progress(h, false);
	*s = P(h)->tx_unreaped;
	*r = P(h)->rx_unreaped;
	return 0;
}

const struct odl_backend odl_backend_shm = {
	.name = "shm",
	.open = shm_open_be,
	.close = shm_close,
	.wait_peer = shm_wait_peer,
	.info = shm_info,
	.state = shm_state,
	.fd = shm_fd,
	.buf_alloc = shm_buf_alloc,
	.buf_register = shm_buf_register,
	.buf_import = shm_buf_import,
	.buf_free = shm_buf_free,
	.send = shm_send,
	.post_recv = shm_post_recv,
	.cancel = shm_cancel,
	.poll = shm_poll,
	.pending = shm_pending,
};
