// SPDX-License-Identifier: MIT
/*
 * odl_tb5_cli — perftest-style bandwidth / latency / jitter / latency under
 * load / multi-stream tests over libodl_tb5 (kernel device or shm).
 *
 *   server: odl_tb5_cli --server --device 0
 *   client: odl_tb5_cli --client --device 0 --test bandwidth --size 1M --iterations 2000
 *
 * Ports: the base port (--port, default 1) carries control messages
 * (HELLO/READY/DONE/RESULT); stream s uses port base+1+s. Every data
 * message is filled with a pattern seeded by (seed, stream, direction,
 * index) and checked on receipt unless --no-verify.
 */
#include <errno.h>
#include <dirent.h>
#include <getopt.h>
#include <glob.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "odl_tb5/odl_tb5.h"

#define CTL_MAGIC	0x4f444c43u	/* "ODLC" */
#define CTL_VERSION	1
#define MAX_STREAMS	32
#define LAT_SLOTS	8

enum test { T_BW, T_LAT, T_JITTER, T_LOAD, T_MIMO };
static const char *const test_names[] = { "bandwidth", "latency", "jitter",
					  "latency-load", "mimo" };
enum ctl_type { C_HELLO = 1, C_READY, C_DONE, C_RESULT };
enum role { R_NONE = 0, R_SOURCE = 1, R_SINK = 2, R_DUPLEX = 3, R_PING = 8, R_PONG = 16 };

struct ctl {
	uint32_t magic, version, type, test;
	uint32_t streams, verify, stream;
	int32_t status;
	uint64_t size, load_size, iters, duration_us, seed, count, errors;
	uint64_t bytes, elapsed_ns;
	uint64_t corrupt_at;	/* message index to corrupt + 1; 0 = none */
	uint64_t reserved[4];
};

struct opts {
	bool server, client, list, json, verify, busy, user_mem;
	enum test test;
	const char *device;
	uint32_t port;
	uint32_t streams;
	uint64_t size, load_size, iters;
	double duration;
	int timeout_ms;
	uint32_t window;
	uint64_t corrupt_at;	/* +1 */
	uint64_t seed;
};

static struct opts O = {
	.verify = true, .port = 1, .streams = 1, .iters = 0, .timeout_ms = 10000,
	.window = 16, .seed = 0x0d1b5eedull,
};

static const char *prog = "odl_tb5_cli";
static bool timeout_set;


/* open handles, closed on error exit so no shared-memory segment is left */
static odl_tb5_t *open_handles[64];
static _Atomic int threads_running;	/* stream threads use the handles */
static _Atomic int g_abort;		/* the peer ended the test early */
static unsigned int n_open;
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	if (!atomic_load(&threads_running)) {
		pthread_mutex_lock(&open_lock);
		for (unsigned int i = 0; i < n_open; i++)
			odl_tb5_close(open_handles[i]);
		n_open = 0;
	}

	fprintf(stderr, "%s: error: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* data pattern */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x | 1;
}

static uint64_t msg_seed(uint64_t seed, uint32_t stream, int dir, uint64_t i)
{
	return mix(seed ^ ((uint64_t)stream << 40) ^ ((uint64_t)dir << 56) ^
		   (i * 0x9e3779b97f4a7c15ull));
}

static void pat_fill(uint8_t *p, uint64_t n, uint64_t s)
{
	uint64_t i, w;

	for (i = 0; i + 8 <= n; i += 8) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		memcpy(p + i, &s, 8);
	}
	if (i < n) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		w = s;
		memcpy(p + i, &w, n - i);
	}
}

/* 0 if p holds the pattern, else the first bad byte offset + 1 */
static uint64_t pat_check(const uint8_t *p, uint64_t n, uint64_t s)
{
	uint64_t i, w;

	for (i = 0; i + 8 <= n; i += 8) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		memcpy(&w, p + i, 8);
		if (w != s)
			break;
	}
	if (i + 8 <= n) {
		uint8_t e[8];

		memcpy(e, &s, 8);
		for (unsigned int k = 0; k < 8; k++)
			if (p[i + k] != e[k])
				return i + k + 1;
	}
	if (i < n) {
		uint8_t e[8];

		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		memcpy(e, &s, 8);
		for (unsigned int k = 0; i + k < n; k++)
			if (p[i + k] != e[k])
				return i + k + 1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* handles */

/*
 * Kernel devices: size the driver buffers for what the port needs (the
 * window of messages, or one message, per direction; 64 KiB for the
 * control port) instead of the library's default 2 x 8 MiB per direction,
 * so many streams fit the driver's memory limit. msg_size 0: control port.
 */
static uint64_t kernel_ring_bytes(uint64_t msg_size)
{
	uint64_t pg = 4096, one, need, rb;

	if (O.device && !strncmp(O.device, "shm:", 4))
		return 0;
	if (!msg_size)
		return 64 * 1024;
	one = (msg_size + pg - 1) / pg * pg;
	need = one * O.window;			/* per direction, 2 driver buffers */
	rb = (need / 2 + pg - 1) / pg * pg;
	if (rb < one)
		rb = one;
	if (rb < 64 * 1024)
		rb = 64 * 1024;
	if (rb > 64ull << 20)
		rb = 64ull << 20;
	return rb;
}

static odl_tb5_t *open_port_sized(uint32_t port, uint64_t msg_size, bool batch)
{
	struct odl_tb5_open_opts o;
	odl_tb5_t *h;
	int r;

	odl_tb5_open_opts_init(&o);
	o.ring_bytes = kernel_ring_bytes(msg_size);
	o.port = port;
	o.role = O.server ? ODL_TB5_ROLE_A : ODL_TB5_ROLE_B;
	o.timeout_ms = O.timeout_ms;
	if (O.busy)
		o.flags |= ODL_TB5_OPEN_BUSY_POLL;
	/* windowed streams hand their operations over in batches */
	if (batch)
		o.flags |= ODL_TB5_OPEN_BATCH;
	if (O.window * 2 > 256)
		o.tx_depth = o.rx_depth = O.window * 2;
	r = odl_tb5_open(O.device, &o, &h);
	if (r)
		die("cannot open device '%s' port %u: %s", O.device ? O.device : "(default)",
		    port, odl_tb5_strerror(r));
	pthread_mutex_lock(&open_lock);
	if (n_open < 64)
		open_handles[n_open++] = h;
	pthread_mutex_unlock(&open_lock);
	return h;
}

static odl_tb5_t *open_port(uint32_t port)
{
	return open_port_sized(port, 0, false);
}

/* --user-memory buffers: registered with a handle, freed after it closed */
static void **user_mem;
static size_t n_user_mem, cap_user_mem;

static int keep_user_mem(void *m)
{
	int r = 0;

	pthread_mutex_lock(&open_lock);
	if (n_user_mem == cap_user_mem) {
		size_t cap = cap_user_mem ? 2 * cap_user_mem : 64;
		void **n = realloc(user_mem, cap * sizeof(*n));

		if (n) {
			user_mem = n;
			cap_user_mem = cap;
		}
	}
	if (n_user_mem < cap_user_mem)
		user_mem[n_user_mem++] = m;
	else
		r = -ENOMEM;
	pthread_mutex_unlock(&open_lock);
	return r;
}

static void close_all(void)
{
	pthread_mutex_lock(&open_lock);
	for (unsigned int i = 0; i < n_open; i++)
		odl_tb5_close(open_handles[i]);
	n_open = 0;
	for (size_t i = 0; i < n_user_mem; i++)
		free(user_mem[i]);
	free(user_mem);
	user_mem = NULL;
	n_user_mem = cap_user_mem = 0;
	pthread_mutex_unlock(&open_lock);
}

static const char *errs(int r)
{
	return odl_tb5_strerror(r);
}

/* ------------------------------------------------------------------ */
/* control channel */

struct ctlch {
	odl_tb5_t *h;
	uint32_t tx_id, rx_id;
	struct ctl *tx, *rx;
	bool posted;
};

static void ctl_init(struct ctlch *c, odl_tb5_t *h)
{
	void *a, *b;

	c->h = h;
	if (odl_tb5_buf_alloc(h, sizeof(struct ctl), ODL_TB5_BUF_SEND, &c->tx_id, &a) ||
	    odl_tb5_buf_alloc(h, sizeof(struct ctl) * 2, ODL_TB5_BUF_RECV, &c->rx_id, &b))
		die("cannot allocate control buffers");
	c->tx = a;
	c->rx = b;
	c->posted = false;
}

/* lost-message reports (-EBADMSG) on the control port: a kernel device
 * reports a loss it cannot place on every port, so the control channel
 * goes on (a control message really lost ends in a timeout) and the test
 * fails at the end
 */
static _Atomic unsigned int ctl_lost;

static void ctl_send(struct ctlch *c, struct ctl *m)
{
	struct odl_tb5_completion comp;
	int r;

	m->magic = CTL_MAGIC;
	m->version = CTL_VERSION;
	*c->tx = *m;
	r = odl_tb5_send(c->h, c->tx_id, 0, sizeof(*m), 0xc0, 0);
	if (r)
		die("control send failed: %s", errs(r));
	for (;;) {
		r = odl_tb5_poll(c->h, &comp, 1, O.timeout_ms, 0);
		if (r == -EBADMSG) {
			atomic_fetch_add(&ctl_lost, 1);
			continue;
		}
		if (r < 0)
			die("control channel: %s", r == -ETIMEDOUT ?
			    "peer not responding" : errs(r));
		if (comp.op == ODL_TB5_OP_SEND) {
			if (comp.status)
				die("control send failed: %s", errs(comp.status));
			return;
		}
		/* a receive completed while sending: keep it for ctl_recv */
		c->posted = false;
		c->rx[1] = c->rx[0];
		c->rx[0].magic = 0x7fffffffu;	/* marks "stashed in rx[1]" */
	}
}

/* receive one control message; timeout_ms; 1 got, 0 timeout (if allowed) */
enum { CTL_STRICT = 0, CTL_MAY_TIMEOUT = 1, CTL_MAY_END = 2 };

static int ctl_recv(struct ctlch *c, struct ctl *m, int timeout_ms, int mode)
{
	struct odl_tb5_completion comp;
	int r;

	if (!c->posted && c->rx[0].magic == 0x7fffffffu) {
		c->rx[0].magic = 0;
		*m = c->rx[1];
		goto check;
	}
	if (!c->posted) {
		r = odl_tb5_post_recv(c->h, c->rx_id, 0, sizeof(struct ctl), 0xc1, 0);
		if (r == -ECONNRESET && mode == CTL_MAY_END)
			return 0;
		if (r)
			die("control receive failed: %s", errs(r));
		c->posted = true;
	}
	for (;;) {
		r = odl_tb5_poll(c->h, &comp, 1, timeout_ms, 0);
		if (r == -EBADMSG) {
			atomic_fetch_add(&ctl_lost, 1);
			continue;
		}
		if ((r == -ETIMEDOUT || r == -EAGAIN) && mode >= CTL_MAY_TIMEOUT)
			return 0;
		if (r == -ECONNRESET && mode == CTL_MAY_END)
			return 0;
		if (r < 0)
			die("control channel: %s", r == -ETIMEDOUT ?
			    "peer not responding" : r == -ECONNRESET ?
			    "peer disconnected" : errs(r));
		if (comp.op == ODL_TB5_OP_RECV)
			break;
	}
	c->posted = false;
	if (comp.status == -ECONNRESET && mode == CTL_MAY_END)
		return 0;
	if (comp.status)
		die("control receive failed: %s", errs(comp.status));
	if (comp.length != sizeof(struct ctl))
		die("bad control message (%" PRIu64 " bytes)", comp.length);
	*m = c->rx[0];
check:
	if (m->magic != CTL_MAGIC || m->version != CTL_VERSION)
		die("peer speaks another control protocol (magic %#x version %u)",
		    m->magic, m->version);
	return 1;
}

/* ------------------------------------------------------------------ */
/* stream engines */

struct stream {
	uint32_t idx;
	uint32_t port;
	enum role role;
	odl_tb5_t *h;
	uint64_t size;
	/* source */
	uint64_t sent, tx_bytes, t_first, t_last;
	uint64_t *stamps;	/* completion time of every 'stamp_every' sends */
	size_t nstamps, cap_stamps;
	_Atomic int src_done;
	/* sink */
	uint64_t got, rx_bytes, rx_first, rx_last, errors;
	_Atomic uint64_t expected;
	/* ping */
	double *lat_us;
	size_t nlat, cap_lat;
	int fail;
	char why[200];
};

static uint64_t deadline_ns;	/* duration mode end (client), 0 = iterations */
static uint64_t iters_limit;

static void stream_fail(struct stream *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void stream_fail(struct stream *s, const char *fmt, ...)
{
	va_list ap;

	if (s->fail)
		return;
	s->fail = 1;
	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
}

static void push_stamp(struct stream *s, uint64_t t)
{
	if (s->nstamps == s->cap_stamps) {
		s->cap_stamps = s->cap_stamps ? s->cap_stamps * 2 : 4096;
		s->stamps = realloc(s->stamps, s->cap_stamps * sizeof(*s->stamps));
		if (!s->stamps)
			die("out of memory");
	}
	s->stamps[s->nstamps++] = t;
}

static void push_lat(struct stream *s, double us)
{
	if (s->nlat == s->cap_lat) {
		s->cap_lat = s->cap_lat ? s->cap_lat * 2 : 4096;
		s->lat_us = realloc(s->lat_us, s->cap_lat * sizeof(*s->lat_us));
		if (!s->lat_us)
			die("out of memory");
	}
	s->lat_us[s->nlat++] = us;
}

static bool more_to_send(struct stream *s)
{
	if (deadline_ns)
		return now_ns() < deadline_ns;
	return s->sent < iters_limit;
}

static int dir_of(bool sending)
{
	/* direction 0: client → server, 1: server → client */
	return (O.server ^ !sending) ? 1 : 0;
}

static void verify_rx(struct stream *s, const uint8_t *p, uint64_t len, uint64_t idx,
		      int dir)
{
	uint64_t bad;

	if (len != s->size) {
		s->errors++;
		stream_fail(s, "stream %u message %" PRIu64 ": length %" PRIu64
			    ", expected %" PRIu64, s->idx, idx, len, s->size);
		return;
	}
	if (!O.verify)
		return;
	bad = pat_check(p, len, msg_seed(O.seed, s->idx, dir, idx));
	if (bad) {
		s->errors++;
		stream_fail(s, "stream %u message %" PRIu64 ": data mismatch at byte %"
			    PRIu64, s->idx, idx, bad - 1);
	}
}

static void fill_tx(struct stream *s, uint8_t *p, uint64_t idx)
{
	if (O.verify || idx < O.window)
		pat_fill(p, s->size, msg_seed(O.seed, s->idx, dir_of(true), idx));
	if (O.corrupt_at && idx == O.corrupt_at - 1 && s->size && !O.server)
		p[s->size / 2] ^= 0x40;
}

/* source and/or sink, windowed */
/*
 * A data buffer of size bytes: from the library (in the driver's area), or
 * with --user-memory the tool's own heap memory (deliberately not page
 * aligned), registered (the library pins it with the driver where it can)
 */
static int data_buf(odl_tb5_t *h, uint64_t size, uint32_t flags, uint32_t *id,
		    uint8_t **addr)
{
	uint8_t *m;
	int r;

	if (!O.user_mem)
		return odl_tb5_buf_alloc(h, size, flags, id, (void **)addr);
	m = malloc(size + 64);
	if (!m)
		return -ENOMEM;
	if (keep_user_mem(m)) {		/* freed by close_all */
		free(m);
		return -ENOMEM;
	}
	r = odl_tb5_buf_register(h, m + 8, size, id);
	if (r)
		return r;
	*addr = m + 8;
	return 0;
}

static void run_duplex(struct stream *s)
{
	bool src = s->role & R_SOURCE, snk = s->role & R_SINK;
	uint32_t W = O.window, i;
	uint32_t *tid = calloc(W, sizeof(*tid)), *rid = calloc(W, sizeof(*rid));
	uint8_t **tb = calloc(W, sizeof(*tb)), **rb = calloc(W, sizeof(*rb));
	uint32_t *free_tx = calloc(W, sizeof(*free_tx));
	uint32_t nfree = 0;
	uint64_t inflight = 0, last_progress = now_ns(), sub = s->size ? s->size : 1;
	struct odl_tb5_completion c[64];
	bool sending = src, send_full = false;

	if (!tid || !rid || !tb || !rb || !free_tx)
		die("out of memory");
	for (i = 0; i < W; i++) {
		if (src) {
			if (data_buf(s->h, sub, ODL_TB5_BUF_SEND, &tid[i], &tb[i]))
				die("cannot allocate %" PRIu64 " byte buffers", sub);
			free_tx[nfree++] = i;
		}
		if (snk) {
			int r;

			if (data_buf(s->h, sub, ODL_TB5_BUF_RECV, &rid[i], &rb[i]))
				die("cannot allocate %" PRIu64 " byte buffers", sub);
			r = odl_tb5_post_recv(s->h, rid[i], 0, s->size, i, 0);
			if (r)
				die("post receive: %s", errs(r));
		}
	}
	if (!src)
		atomic_store(&s->src_done, 1);
	for (;;) {
		int r;

		if (atomic_load(&g_abort))
			break;
		send_full = false;
		while (sending && nfree && more_to_send(s) && !s->fail) {
			uint32_t k = free_tx[nfree - 1];

			fill_tx(s, tb[k], s->sent);
			r = odl_tb5_send(s->h, tid[k], 0, s->size, k, ODL_TB5_F_NONBLOCK);
			if (r == -EAGAIN) {
				send_full = true;
				break;
			}
			if (r) {
				stream_fail(s, "send: %s", errs(r));
				break;
			}
			if (!s->sent)
				s->t_first = now_ns();
			nfree--;
			s->sent++;
			inflight++;
		}
		if (sending && (!more_to_send(s) || s->fail))
			sending = false;
		if (src && !sending && !inflight && !atomic_load(&s->src_done)) {
			s->t_last = s->nstamps ? s->stamps[s->nstamps - 1] : now_ns();
			atomic_store(&s->src_done, 1);
		}
		if (atomic_load(&s->src_done) &&
		    (!snk || s->got >= atomic_load(&s->expected)))
			break;
		if (s->fail && !inflight)
			break;
		/* wait (1 ms at most, woken by the first completion) unless
		 * there is something left to send right now: spinning here
		 * would only burn the CPU the transfer needs
		 */
		/* waiting: for half a window at once (fewer wake-ups; the
		 * library never waits for more than is outstanding)
		 */
		r = odl_tb5_poll_min(s->h, c, 64, sending && nfree && !send_full ? 1 :
				     W / 2 ? W / 2 : 1,
				     sending && nfree && !send_full ? 0 : 1,
				     O.busy ? ODL_TB5_F_BUSY_POLL : 0);
		if (r == -EAGAIN || r == -ETIMEDOUT) {
			if (now_ns() - last_progress > (uint64_t)O.timeout_ms * 1000000ull) {
				stream_fail(s, "no progress for %d ms (peer not responding)",
					    O.timeout_ms);
				break;
			}
			continue;
		}
		if (r == -EBADMSG) {
			/* a message of this stream never arrived */
			stream_fail(s, "receive: %s", errs(r));
			continue;
		}
		if (r < 0) {
			stream_fail(s, "%s", r == -ECONNRESET ? "peer disconnected" : errs(r));
			break;
		}
		last_progress = now_ns();
		for (int k = 0; k < r; k++) {
			if (c[k].op == ODL_TB5_OP_SEND) {
				if (c[k].status) {
					stream_fail(s, "send completion: %s", errs(c[k].status));
					continue;
				}
				free_tx[nfree++] = (uint32_t)c[k].cookie;
				inflight--;
				s->tx_bytes += c[k].length;
				push_stamp(s, last_progress);
			} else {
				uint32_t slot = (uint32_t)c[k].cookie;

				if (c[k].status) {
					stream_fail(s, "receive: %s", errs(c[k].status));
					continue;
				}
				if (!s->got)
					s->rx_first = last_progress;
				s->rx_last = last_progress;
				verify_rx(s, rb[slot], c[k].length, s->got, dir_of(false));
				s->got++;
				s->rx_bytes += c[k].length;
				int pr = odl_tb5_post_recv(s->h, rid[slot], 0, s->size, slot, 0);

				if (pr && pr != -ECONNRESET)
					stream_fail(s, "post receive: %s", errs(pr));
			}
		}
	}
	if (src && !atomic_load(&s->src_done)) {
		s->t_last = now_ns();
		atomic_store(&s->src_done, 1);
	}
	free(tid);
	free(rid);
	free(tb);
	free(rb);
	free(free_tx);
}

static int poll_one(struct stream *s, struct odl_tb5_completion *c)
{
	uint64_t t0 = now_ns();

	for (;;) {
		int r = odl_tb5_poll(s->h, c, 1, O.busy ? 0 : 100,
				     O.busy ? ODL_TB5_F_BUSY_POLL : 0);

		if (r == 1)
			return 0;
		if (r != -EAGAIN && r != -ETIMEDOUT) {
			stream_fail(s, "%s%s", r == -EBADMSG ? "receive: " : "",
				    r == -ECONNRESET ? "peer disconnected" : errs(r));
			return -1;
		}
		if (now_ns() - t0 > (uint64_t)O.timeout_ms * 1000000ull) {
			stream_fail(s, "no reply for %d ms (peer not responding)", O.timeout_ms);
			return -1;
		}
		if (O.server && s->got >= atomic_load(&s->expected))
			return 1;
		if (atomic_load(&g_abort))
			return -1;
	}
}

/* client: ping-pong, one message in flight */
static void run_ping(struct stream *s)
{
	uint64_t sub = s->size ? s->size : 1;
	struct odl_tb5_completion c;
	uint32_t tid, rid;
	uint8_t *tb, *rb;
	int r;

	if (data_buf(s->h, sub, ODL_TB5_BUF_SEND, &tid, &tb) ||
	    data_buf(s->h, sub, ODL_TB5_BUF_RECV, &rid, &rb))
		die("cannot allocate buffers");
	while (more_to_send(s) && !s->fail && !atomic_load(&g_abort)) {
		uint64_t t0;
		int need = 2;

		fill_tx(s, tb, s->sent);
		r = odl_tb5_post_recv(s->h, rid, 0, s->size, 1, 0);
		if (r) {
			stream_fail(s, "post receive: %s", errs(r));
			break;
		}
		t0 = now_ns();
		r = odl_tb5_send(s->h, tid, 0, s->size, 0, 0);
		if (r) {
			stream_fail(s, "send: %s", errs(r));
			break;
		}
		if (!s->sent)
			s->t_first = t0;
		s->sent++;
		while (need && !s->fail) {
			if (poll_one(s, &c))
				break;
			need--;
			if (c.status) {
				stream_fail(s, "%s: %s", c.op == ODL_TB5_OP_SEND ?
					    "send" : "receive", errs(c.status));
				break;
			}
			if (c.op == ODL_TB5_OP_RECV) {
				uint64_t t1 = now_ns();

				push_lat(s, (double)(t1 - t0) / 2000.0);
				s->rx_bytes += c.length;
				verify_rx(s, rb, c.length, s->got, 0);	/* the echo of our ping */
				s->got++;
			} else {
				s->tx_bytes += c.length;
			}
		}
	}
	s->t_last = now_ns();
	atomic_store(&s->src_done, 1);
}

/* server: echo every message back from the same buffer */
static void run_pong(struct stream *s)
{
	uint64_t sub = s->size ? s->size : 1;
	uint32_t ids[LAT_SLOTS];
	uint8_t *bufs[LAT_SLOTS];
	struct odl_tb5_completion c;
	uint64_t echoing = 0;
	int r;

	for (int i = 0; i < LAT_SLOTS; i++) {
		if (data_buf(s->h, sub, 0, &ids[i], &bufs[i]))
			die("cannot allocate buffers");
		r = odl_tb5_post_recv(s->h, ids[i], 0, s->size, (uint64_t)i, 0);
		if (r)
			die("post receive: %s", errs(r));
	}
	atomic_store(&s->src_done, 1);
	while (!s->fail && (s->got < atomic_load(&s->expected) || echoing)) {
		r = poll_one(s, &c);
		if (r < 0)
			break;
		if (r > 0)
			continue;
		if (c.status) {
			stream_fail(s, "%s: %s", c.op == ODL_TB5_OP_SEND ? "send" : "receive",
				    errs(c.status));
			break;
		}
		if (c.op == ODL_TB5_OP_RECV) {
			verify_rx(s, bufs[c.cookie], c.length, s->got, 0);
			s->got++;
			s->rx_bytes += c.length;
			r = odl_tb5_send(s->h, ids[c.cookie], 0, c.length, c.cookie, 0);
			if (r) {
				stream_fail(s, "send: %s", errs(r));
				break;
			}
			echoing++;
		} else {
			echoing--;
			s->tx_bytes += c.length;
			s->sent++;
			r = odl_tb5_post_recv(s->h, ids[c.cookie], 0, s->size, c.cookie, 0);
			if (r && r != -ECONNRESET) {
				stream_fail(s, "post receive: %s", errs(r));
				break;
			}
		}
	}
}

static void *stream_main(void *arg)
{
	struct stream *s = arg;

	if (s->role == R_PING)
		run_ping(s);
	else if (s->role == R_PONG)
		run_pong(s);
	else
		run_duplex(s);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* statistics and output */

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct lat_stats {
	double min, max, median, p99, p999, avg, stdev, jitter;
	size_t n;
};

static struct lat_stats lat_compute(struct stream *s)
{
	struct lat_stats L = { 0 };
	double *v, sum = 0, sq = 0, jit = 0;
	size_t n = s->nlat;

	L.n = n;
	if (!n)
		return L;
	for (size_t i = 1; i < n; i++)
		jit += fabs(s->lat_us[i] - s->lat_us[i - 1]);
	L.jitter = n > 1 ? jit / (double)(n - 1) : 0;
	v = malloc(n * sizeof(*v));
	if (!v)
		die("out of memory");
	memcpy(v, s->lat_us, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp_dbl);
	for (size_t i = 0; i < n; i++) {
		sum += v[i];
		sq += v[i] * v[i];
	}
	L.min = v[0];
	L.max = v[n - 1];
	L.median = v[n / 2];
	L.p99 = v[(size_t)((double)(n - 1) * 0.99)];
	L.p999 = v[(size_t)((double)(n - 1) * 0.999)];
	L.avg = sum / (double)n;
	L.stdev = sqrt(fmax(0, sq / (double)n - L.avg * L.avg));
	free(v);
	return L;
}

static double gbps(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes * 8.0 / (double)ns : 0.0;
}

/* peak over windows of n/50 (>= 1) consecutive send completions */
static double bw_peak(struct stream *s)
{
	size_t n = s->nstamps, w = n / 50 ? n / 50 : 1;
	double peak = 0;

	if (n < 2)
		return gbps(s->tx_bytes, s->t_last - s->t_first);
	for (size_t i = 0; i + w < n; i += w) {
		uint64_t dt = s->stamps[i + w] - s->stamps[i];

		if (dt && gbps(w * s->size, dt) > peak)
			peak = gbps(w * s->size, dt);
	}
	/* the first window, measured from the first send */
	if (s->stamps[w - 1] > s->t_first &&
	    gbps(w * s->size, s->stamps[w - 1] - s->t_first) > peak)
		peak = gbps(w * s->size, s->stamps[w - 1] - s->t_first);
	return peak;
}

#define LINE "---------------------------------------------------------------------------------------"

static void print_header(odl_tb5_t *h, const char *title)
{
	struct odl_tb5_info in;
	char pu[37];

	if (O.json)
		return;
	odl_tb5_info(h, &in);
	odl_tb5_uuid_to_str(in.peer_uuid, pu);
	printf(LINE "\n");
	printf("                    %s\n", title);
	printf(" Device          : %s (%s backend)\n", in.name, in.backend);
	printf(" Port            : %u (control), data from %u\n", O.port, O.port + 1);
	printf(" Peer UUID       : %s\n", pu);
	if (in.link_lanes)
		printf(" Link            : %u x %u Gb/s\n", in.link_lanes, in.link_speed_gbps);
	else
		printf(" Link            : n/a (virtual)\n");
	printf(" Max msg size    : %" PRIu64 " bytes\n", in.max_msg_size);
	printf(" Data verify     : %s\n", O.verify ? "ON" : "OFF");
	printf(" Wait mode       : %s\n", O.busy ? "busy poll" : "blocking");
	printf(LINE "\n");
}

enum { NB = 12 };

struct hist {
	size_t cnt[NB + 1];
	double lo, hi, w;
};

static void hist_compute(struct stream *s, struct lat_stats *L, struct hist *H)
{
	memset(H, 0, sizeof(*H));
	H->lo = L->min;
	H->hi = L->p999 > L->min ? L->p999 : L->min + 1;
	H->w = (H->hi - H->lo) / NB;
	for (size_t i = 0; i < s->nlat; i++) {
		size_t b = s->lat_us[i] >= H->hi ? NB :
			(size_t)((s->lat_us[i] - H->lo) / H->w);

		H->cnt[b > NB ? NB : b]++;
	}
}

static void print_hist(struct stream *s, struct lat_stats *L)
{
	struct hist H;
	size_t maxc = 0;

	hist_compute(s, L, &H);
	for (int b = 0; b <= NB; b++)
		if (H.cnt[b] > maxc)
			maxc = H.cnt[b];
	printf(" Latency histogram [usec]:\n");
	for (int b = 0; b <= NB; b++) {
		int bar = maxc ? (int)(H.cnt[b] * 40 / maxc) : 0;

		if (b < NB)
			printf("  %9.2f - %9.2f : %8zu |", H.lo + b * H.w,
			       H.lo + (b + 1) * H.w, H.cnt[b]);
		else
			printf("  %9.2f -       max : %8zu |", H.hi, H.cnt[b]);
		for (int k = 0; k < bar; k++)
			putchar('#');
		putchar('\n');
	}
}

static void json_lat(const char *key, struct lat_stats *L)
{
	printf("\"%s\":{\"samples\":%zu,\"min_us\":%.3f,\"median_us\":%.3f,"
	       "\"p99_us\":%.3f,\"p999_us\":%.3f,\"max_us\":%.3f,\"avg_us\":%.3f,"
	       "\"stdev_us\":%.3f,\"jitter_us\":%.3f}",
	       key, L->n, L->min, L->median, L->p99, L->p999, L->max, L->avg,
	       L->stdev, L->jitter);
}

/* ------------------------------------------------------------------ */
/* test orchestration (both sides) */

static struct stream S[MAX_STREAMS + 1];
static uint32_t NS;

static void setup_streams(bool client)
{
	uint32_t i;

	NS = O.test == T_MIMO ? O.streams : O.test == T_LOAD ? 2 : 1;
	for (i = 0; i < NS; i++) {
		struct stream *s = &S[i];

		memset(s, 0, sizeof(*s));
		s->idx = i;
		s->port = O.port + 1 + i;
		s->size = O.size;
		atomic_store(&s->expected, UINT64_MAX);
		switch (O.test) {
		case T_BW:
			s->role = client ? R_SOURCE : R_SINK;
			break;
		case T_LAT:
		case T_JITTER:
			s->role = client ? R_PING : R_PONG;
			break;
		case T_LOAD:
			if (i == 0) {
				s->role = client ? R_PING : R_PONG;
			} else {
				s->role = client ? R_SOURCE : R_SINK;
				s->size = O.load_size;
			}
			break;
		case T_MIMO:
			s->role = R_DUPLEX;
			break;
		}
		if (s->size > UINT32_MAX * 4096ull)
			die("message size too large");
	}
}

static void open_streams(void)
{
	for (uint32_t i = 0; i < NS; i++)
		S[i].h = open_port_sized(S[i].port, S[i].size ? S[i].size : 1,
					 S[i].role != R_PING && S[i].role != R_PONG);
}

static void check_size(void)
{
	struct odl_tb5_info in;

	/* each stream against its own handle (kernel: buffers sized per port) */
	for (uint32_t i = 0; i < NS; i++)
		if (S[i].h && odl_tb5_info(S[i].h, &in) == 0 &&
		    S[i].size > in.max_msg_size)
			die("--size %" PRIu64 " exceeds the device's maximum message "
			    "size %" PRIu64, S[i].size, in.max_msg_size);
}

/*
 * Empty messages: shm always, the kernel device from driver ABI 1.9 with a
 * peer that agreed to them at login, so only known once the peer is there.
 */
static void check_empty(odl_tb5_t *h)
{
	struct odl_tb5_info in;

	if (odl_tb5_info(h, &in) == 0 && !(in.features & ODL_TB5_FEAT_EMPTY))
		for (uint32_t i = 0; i < NS; i++)
			if (!S[i].size)
				die("--size 0: this device carries 1.. bytes (a driver before "
				    "ABI 1.9, or a peer without empty messages)");
}

/*
 * Run the streams in threads; the calling thread handles the control
 * channel: it tells the peer how many messages each of our sources sent
 * (DONE) and learns the same for our sinks.
 */
static struct ctl early_result;
static bool have_early_result;

static void run_streams(struct ctlch *cc)
{
	pthread_t th[MAX_STREAMS + 1];
	bool told[MAX_STREAMS + 1] = { false };
	uint32_t i, need_done = 0, got_done = 0, told_n = 0;

	atomic_store(&threads_running, 1);
	for (i = 0; i < NS; i++) {
		if (S[i].role & R_SINK || S[i].role == R_PONG)
			need_done++;
		if (pthread_create(&th[i], NULL, stream_main, &S[i]))
			die("cannot start a thread");
	}
	while (told_n < NS || got_done < need_done) {
		struct ctl m;

		for (i = 0; i < NS; i++) {
			if (!told[i] && atomic_load(&S[i].src_done)) {
				told[i] = true;
				told_n++;
				if (S[i].role & R_SOURCE || S[i].role == R_PING) {
					memset(&m, 0, sizeof(m));
					m.type = C_DONE;
					m.stream = i;
					m.count = S[i].sent;
					m.status = S[i].fail ? -EIO : 0;
					ctl_send(cc, &m);
				}
			}
		}
		if (got_done < need_done && ctl_recv(cc, &m, 20, CTL_MAY_TIMEOUT)) {
			if (m.type == C_RESULT && !O.server) {
				/* the server gave up (its side failed): stop */
				early_result = m;
				have_early_result = true;
				atomic_store(&g_abort, 1);
				break;
			}
			if (m.type != C_DONE || m.stream >= NS)
				die("unexpected control message %u", m.type);
			atomic_store(&S[m.stream].expected, m.count);
			got_done++;
		}
		if (got_done == need_done && told_n < NS)
			usleep(1000);
		for (i = 0; i < NS; i++)
			if (S[i].fail && !atomic_load(&S[i].src_done))
				atomic_store(&S[i].src_done, 1);
		if (got_done < need_done) {
			bool all_dead = true;

			for (i = 0; i < NS; i++)
				if (!S[i].fail)
					all_dead = false;
			if (all_dead)
				break;
		}
	}
	if (got_done < need_done)
		atomic_store(&g_abort, 1);	/* all our streams failed */
	for (i = 0; i < NS; i++)
		pthread_join(th[i], NULL);
	atomic_store(&threads_running, 0);
}

static int report_failures(const char *who)
{
	int bad = 0;

	for (uint32_t i = 0; i < NS; i++) {
		if (S[i].fail) {
			fprintf(stderr, "%s: error (%s): %s\n", prog, who, S[i].why);
			bad = 1;
		}
	}
	if (atomic_load(&ctl_lost)) {
		fprintf(stderr, "%s: error (%s): control port: %u lost message(s) reported "
			"by the device\n", prog, who, atomic_load(&ctl_lost));
		bad = 1;
	}
	return bad;
}

/* what the library copied for the data streams (stats.copied_bytes) */
static void print_copies(const char *who)
{
	struct odl_tb5_stats st;
	uint64_t copied = 0;

	if (O.json)
		return;
	for (uint32_t i = 0; i < NS; i++)
		if (S[i].h && odl_tb5_stats(S[i].h, &st) == 0)
			copied += st.copied_bytes;
	printf("%s: %s: buffers: %s; library copied %" PRIu64 " bytes\n", prog, who,
	       O.user_mem ? "user memory (registered)" : "library", copied);
}

static void print_results(struct ctl *res, uint64_t srv_errors)
{
	struct lat_stats L;
	uint64_t tot_tx = 0, tot_rx = 0, t0 = UINT64_MAX, t1 = 0;

	if (O.test == T_BW) {
		struct stream *s = &S[0];
		double avg = gbps(s->tx_bytes, s->t_last - s->t_first), pk = bw_peak(s);
		double rxbw = gbps(res->bytes, res->elapsed_ns);

		if (O.json) {
			printf("{\"test\":\"bandwidth\",\"size\":%" PRIu64 ",\"iterations\":%" PRIu64
			       ",\"bytes\":%" PRIu64 ",\"seconds\":%.6f,\"bw_avg_gbps\":%.3f,"
			       "\"bw_peak_gbps\":%.3f,\"rx_bw_gbps\":%.3f,\"msg_rate_mpps\":%.4f,"
			       "\"verify\":%s,\"errors\":%" PRIu64 "}\n",
			       s->size, s->sent, s->tx_bytes, (double)(s->t_last - s->t_first) / 1e9,
			       avg, pk, rxbw,
			       (double)s->sent / ((double)(s->t_last - s->t_first) / 1e3 + 1e-9),
			       O.verify ? "true" : "false", srv_errors);
			return;
		}
		printf(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n");
		printf(" %-10" PRIu64 " %-14" PRIu64 " %-18.2f %-20.2f %.6f\n", s->size, s->sent,
		       pk, avg, (double)s->sent / ((double)(s->t_last - s->t_first) / 1e3 + 1e-9));
		printf(LINE "\n");
		printf(" receiver: %" PRIu64 " messages, %.2f Gb/s, %s\n", res->count, rxbw,
		       O.verify ? "all data verified" : "data not verified");
		printf(LINE "\n");
		return;
	}
	if (O.test == T_LAT || O.test == T_JITTER || O.test == T_LOAD) {
		struct stream *s = &S[0];

		L = lat_compute(s);
		if (O.json) {
			printf("{\"test\":\"%s\",\"size\":%" PRIu64 ",\"iterations\":%zu,",
			       test_names[O.test], s->size, L.n);
			json_lat("latency", &L);
			if (O.test == T_LOAD) {
				struct stream *ld = &S[1];

				printf(",\"load\":{\"size\":%" PRIu64 ",\"messages\":%" PRIu64
				       ",\"bw_avg_gbps\":%.3f}", ld->size, ld->sent,
				       gbps(ld->tx_bytes, ld->t_last - ld->t_first));
			}
			if (O.test == T_JITTER) {
				struct hist H;

				hist_compute(s, &L, &H);
				printf(",\"histogram\":[");
				for (int b = 0; b <= NB; b++)
					printf("%s{\"from_us\":%.3f,\"to_us\":%.3f,\"count\":%zu}",
					       b ? "," : "", b == NB ? H.hi : H.lo + b * H.w,
					       b == NB ? L.max : H.lo + (b + 1) * H.w,
					       H.cnt[b]);
				printf("]");
			}
			printf(",\"verify\":%s,\"errors\":%" PRIu64 "}\n",
			       O.verify ? "true" : "false", srv_errors);
			return;
		}
		printf(" #bytes #iterations  t_min[usec]  t_median[usec]  t_p99[usec]  t_max[usec]  t_avg[usec]  t_stdev[usec]\n");
		printf(" %-6" PRIu64 " %-12zu %-12.2f %-15.2f %-12.2f %-12.2f %-12.2f %.2f\n",
		       s->size, L.n, L.min, L.median, L.p99, L.max, L.avg, L.stdev);
		printf(LINE "\n");
		if (O.test == T_JITTER) {
			printf(" jitter (mean |t[i]-t[i-1]|): %.3f usec   p99-p50: %.3f usec   "
			       "p99.9: %.2f usec\n", L.jitter, L.p99 - L.median, L.p999);
			print_hist(s, &L);
			printf(LINE "\n");
		}
		if (O.test == T_LOAD) {
			struct stream *ld = &S[1];

			printf(" background load: %" PRIu64 " messages of %" PRIu64 " bytes, %.2f Gb/s\n",
			       ld->sent, ld->size, gbps(ld->tx_bytes, ld->t_last - ld->t_first));
			printf(LINE "\n");
		}
		return;
	}
	/* mimo */
	for (uint32_t i = 0; i < NS; i++) {
		tot_tx += S[i].tx_bytes;
		tot_rx += S[i].rx_bytes;
		if (S[i].t_first && S[i].t_first < t0)
			t0 = S[i].t_first;
		if (S[i].t_last > t1)
			t1 = S[i].t_last;
		if (S[i].rx_last > t1)
			t1 = S[i].rx_last;
	}
	if (O.json) {
		printf("{\"test\":\"mimo\",\"size\":%" PRIu64 ",\"streams\":%u,\"per_stream\":[",
		       O.size, NS);
		for (uint32_t i = 0; i < NS; i++)
			printf("%s{\"stream\":%u,\"tx_msgs\":%" PRIu64 ",\"rx_msgs\":%" PRIu64
			       ",\"tx_gbps\":%.3f,\"rx_gbps\":%.3f}", i ? "," : "", i, S[i].sent,
			       S[i].got, gbps(S[i].tx_bytes, S[i].t_last - S[i].t_first),
			       gbps(S[i].rx_bytes, S[i].rx_last - S[i].rx_first));
		printf("],\"tx_gbps\":%.3f,\"rx_gbps\":%.3f,\"aggregate_gbps\":%.3f,"
		       "\"verify\":%s,\"errors\":%" PRIu64 "}\n",
		       gbps(tot_tx, t1 - t0), gbps(tot_rx, t1 - t0), gbps(tot_tx + tot_rx, t1 - t0),
		       O.verify ? "true" : "false", srv_errors);
		return;
	}
	printf(" stream  #bytes     tx msgs      rx msgs      TX BW[Gb/sec]  RX BW[Gb/sec]\n");
	for (uint32_t i = 0; i < NS; i++)
		printf(" %-7u %-10" PRIu64 " %-12" PRIu64 " %-12" PRIu64 " %-14.2f %.2f\n", i,
		       S[i].size, S[i].sent, S[i].got,
		       gbps(S[i].tx_bytes, S[i].t_last - S[i].t_first),
		       gbps(S[i].rx_bytes, S[i].rx_last - S[i].rx_first));
	printf(LINE "\n");
	printf(" aggregate: TX %.2f Gb/s  RX %.2f Gb/s  total %.2f Gb/s\n",
	       gbps(tot_tx, t1 - t0), gbps(tot_rx, t1 - t0), gbps(tot_tx + tot_rx, t1 - t0));
	printf(LINE "\n");
}

static int run_client(void)
{
	struct ctlch cc;
	struct ctl m;
	odl_tb5_t *ch;
	uint64_t errors = 0;
	int r, bad;

	setup_streams(true);
	ch = open_port(O.port);
	open_streams();
	check_size();
	r = odl_tb5_wait_peer(ch, O.timeout_ms);
	if (r)
		die("peer not reachable on '%s': %s", O.device ? O.device : "(default)",
		    r == -ETIMEDOUT ? "no server (timed out)" : errs(r));
	check_empty(ch);
	ctl_init(&cc, ch);
	memset(&m, 0, sizeof(m));
	m.type = C_HELLO;
	m.test = O.test;
	m.streams = NS;
	m.verify = O.verify;
	m.size = O.size;
	m.load_size = O.load_size;
	m.iters = O.iters;
	m.duration_us = (uint64_t)(O.duration * 1e6);
	m.seed = O.seed;
	ctl_send(&cc, &m);
	ctl_recv(&cc, &m, O.timeout_ms, CTL_STRICT);
	if (m.type != C_READY)
		die("unexpected control message %u (wanted READY)", m.type);
	if (m.status)
		die("server refused the test: %s", errs(m.status));
	print_header(ch, O.test == T_BW ? "Send BW Test" : O.test == T_MIMO ?
		     "Send BW Test (mimo)" : O.test == T_JITTER ? "Send Jitter Test" :
		     O.test == T_LOAD ? "Send Latency Test under load" : "Send Latency Test");
	iters_limit = O.iters;
	deadline_ns = O.duration > 0 ? now_ns() + (uint64_t)(O.duration * 1e9) : 0;
	run_streams(&cc);
	bad = report_failures("client");
	for (uint32_t i = 0; i < NS; i++)
		errors += S[i].errors;
	if (have_early_result)
		m = early_result;
	else
		ctl_recv(&cc, &m, O.timeout_ms, CTL_STRICT);
	if (m.type != C_RESULT)
		die("unexpected control message %u (wanted RESULT)", m.type);
	if (m.errors || m.status) {
		fprintf(stderr, "%s: error: server reported %" PRIu64 " verify error(s)%s%s\n",
			prog, m.errors, m.status ? ", status: " : "",
			m.status ? errs(m.status) : "");
		bad = 1;
	}
	errors += m.errors;
	if (!bad) {
		print_results(&m, errors);
		print_copies("client");
	}
	else if (O.json)
		printf("{\"test\":\"%s\",\"error\":true,\"errors\":%" PRIu64 "}\n",
		       test_names[O.test], errors);
	close_all();
	return bad;
}

static int run_server(void)
{
	struct ctlch cc;
	struct ctl m, res;
	odl_tb5_t *ch;
	uint64_t errors = 0, bytes = 0, count = 0, t0 = UINT64_MAX, t1 = 0;
	int r, bad;

	ch = open_port(O.port);
	if (!O.json)
		fprintf(stderr, "%s: waiting for a client on port %u\n", prog, O.port);
	r = odl_tb5_wait_peer(ch, timeout_set ? O.timeout_ms : -1);
	if (r)
		die("no client: %s", errs(r));
	ctl_init(&cc, ch);
	ctl_recv(&cc, &m, O.timeout_ms, CTL_STRICT);
	if (m.type != C_HELLO)
		die("unexpected control message %u (wanted HELLO)", m.type);
	if (m.test > T_MIMO || m.streams == 0 || m.streams > MAX_STREAMS)
		die("bad test request (test %u, %u streams)", m.test, m.streams);
	O.test = (enum test)m.test;
	O.streams = m.streams;
	O.verify = m.verify;
	O.size = m.size;
	O.load_size = m.load_size;
	O.seed = m.seed;
	iters_limit = m.iters;
	setup_streams(false);
	open_streams();
	memset(&res, 0, sizeof(res));
	res.type = C_READY;
	ctl_send(&cc, &res);
	/* the server's own sources (mimo) run for the client's count/duration */
	deadline_ns = m.duration_us ? now_ns() + m.duration_us * 1000ull : 0;
	run_streams(&cc);
	bad = report_failures("server");
	for (uint32_t i = 0; i < NS; i++) {
		errors += S[i].errors;
		bytes += S[i].rx_bytes;
		count += S[i].got;
		if (S[i].got && S[i].rx_first < t0)
			t0 = S[i].rx_first;
		if (S[i].rx_last > t1)
			t1 = S[i].rx_last;
	}
	memset(&res, 0, sizeof(res));
	res.type = C_RESULT;
	res.count = count;
	res.bytes = bytes;
	res.errors = errors;
	res.elapsed_ns = t1 > t0 && t0 != UINT64_MAX ? t1 - t0 : 0;
	res.status = bad && !errors ? -EIO : 0;
	ctl_send(&cc, &res);
	if (O.json)
		printf("{\"role\":\"server\",\"test\":\"%s\",\"messages\":%" PRIu64
		       ",\"bytes\":%" PRIu64 ",\"rx_gbps\":%.3f,\"verify\":%s,\"errors\":%"
		       PRIu64 ",\"ok\":%s}\n", test_names[O.test], count, bytes,
		       gbps(bytes, res.elapsed_ns), O.verify ? "true" : "false", errors,
		       bad ? "false" : "true");
	else
		printf("%s: server: test %s, %u stream(s), %" PRIu64 " messages / %" PRIu64
		       " bytes received, %s\n", prog, test_names[O.test], NS, count, bytes,
		       bad ? "FAILED" : O.verify ? "all data verified" : "not verified");
	print_copies("server");
	/* let the client read RESULT before the channel goes away */
	ctl_recv(&cc, &m, 2000, CTL_MAY_END);
	close_all();
	return bad;
}

/* ------------------------------------------------------------------ */
/* arguments */

static uint64_t parse_size(const char *s, const char *what)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	errno = 0;
	if (!s || *s == '-' || !*s)
		die("bad %s '%s'", what, s ? s : "");
	v = strtoull(s, &end, 0);
	if (errno)
		die("bad %s '%s'", what, s);
	if (*end == 'k' || *end == 'K')
		mul = 1024, end++;
	else if (*end == 'm' || *end == 'M')
		mul = 1024 * 1024, end++;
	else if (*end == 'g' || *end == 'G')
		mul = 1024ull * 1024 * 1024, end++;
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end || (v && mul > UINT64_MAX / v))
		die("bad %s '%s'", what, s);
	return v * mul;
}

/* ------------------------------------------------------------------ */
/* --list: the kernel devices present */

/* the sysfs class that has odl_tb5_N: the driver's own, else misc; NULL
 * when neither has it */
static const char *sysfs_class(int index)
{
	static const char *const cls[] = { "odl_tb5", "misc" };

	for (unsigned int i = 0; i < 2; i++) {
		char dir[64];

		snprintf(dir, sizeof(dir), "/sys/class/%s/odl_tb5_%d", cls[i], index);
		if (access(dir, F_OK) == 0)
			return cls[i];
	}
	return NULL;
}

/* one line of /sys/class/CLASS/odl_tb5_N/ATTR, cut to printable
 * characters; "" when there is none */
static void sysfs_attr(int index, const char *attr, char *out, size_t len)
{
	const char *cls = sysfs_class(index);
	char path[128];
	size_t n = 0;
	FILE *f;

	out[0] = 0;
	if (!cls)
		return;
	snprintf(path, sizeof(path), "/sys/class/%s/odl_tb5_%d/%s", cls, index, attr);
	f = fopen(path, "re");
	if (!f)
		return;
	if (!fgets(out, (int)len, f))
		out[0] = 0;
	fclose(f);
	for (n = 0; out[n]; n++)
		if (out[n] == '\n') {
			out[n] = 0;
			break;
		} else if (out[n] < 0x20 || out[n] > 0x7e || out[n] == '"' || out[n] == '\\') {
			out[n] = '?';
		}
}

/*
 * The driver's counters (statistics/, one file each, names sorted) as
 * "name=value" separated by spaces, or as JSON members ("name":value)
 * separated by commas; "" when the driver has none (before 2026-11-29)
 */
static void sysfs_counters(int index, bool json, char *out, size_t len)
{
	const char *cls = sysfs_class(index);
	struct dirent **ents = NULL;
	char dir[128];
	size_t used = 0;
	int n = -1;

	out[0] = 0;
	if (cls) {
		snprintf(dir, sizeof(dir), "/sys/class/%s/odl_tb5_%d/statistics", cls, index);
		n = scandir(dir, &ents, NULL, alphasort);
	}
	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		unsigned long long v;
		char path[400], val[32];
		bool ok = name[0] != '.' && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") ==
						  strlen(name);
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, name);
		f = ok ? fopen(path, "re") : NULL;
		ok = f && fgets(val, sizeof(val), f) && sscanf(val, "%llu", &v) == 1;
		if (f)
			fclose(f);
		if (ok && used < len) {
			int w = snprintf(out + used, len - used, json ? "%s\"%s\":%llu" : "%s%s=%llu",
					 used ? (json ? "," : " ") : "", name, v);

			used = w > 0 && (size_t)w < len - used ? used + (size_t)w : len;
		}
		free(ents[i]);
	}
	free(ents);
	if (used >= len) /* cut: keep whole entries only */
		out[0] = 0;
}

static const char *state_name(uint32_t st)
{
	static const char *const names[] = { "waiting", "connected", "disconnected", "error" };

	return st < 4 ? names[st] : "unknown";
}

/* the feature bits by name, space-separated, or as JSON strings */
static void feature_names(uint32_t f, bool json, char *out, size_t len)
{
	static const char *const names[] = { "dmabuf", "pollfd", "e2e", "zerocopy",
					     "keyed", "urgent", "ports", "empty" };
	size_t used = 0;

	out[0] = 0;
	for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]) && used < len; i++) {
		if (!(f & (1u << i)))
			continue;
		used += (size_t)snprintf(out + used, len - used, json ? "%s\"%s\"" : "%s%s",
					 used ? (json ? "," : " ") : "", names[i]);
	}
	if (used >= len) /* cut: keep none rather than half a name */
		out[0] = 0;
}

static int info_cmp(const void *a, const void *b)
{
	const struct odl_tb5_info *x = a, *y = b;

	return (x->index > y->index) - (x->index < y->index);
}

/*
 * Every /dev/odl_tb5_N with what its driver reports: the peer it reaches,
 * the link, the driver ABI, limits, and the flow-control state from sysfs.
 * 0 with at least one device; 1 (and a message) with none.
 */
static int run_list(void)
{
	struct odl_tb5_info inf[64];
	int n = odl_tb5_list(inf, 64);

	if (n < 0)
		die("cannot list the odl_tb5 devices: %s", odl_tb5_strerror(n));
	if (n > 64)
		n = 64;
	qsort(inf, (size_t)n, sizeof(inf[0]), info_cmp);
	if (O.json)
		printf("{\"devices\":[");
	for (int i = 0; i < n; i++) {
		const struct odl_tb5_info *d = &inf[i];
		char local[37], peer[37], fc[64], mit[256], cnt[2048], feat[128];
		uint32_t total = d->link_speed_gbps * d->link_lanes;

		odl_tb5_uuid_to_str(d->local_uuid, local);
		odl_tb5_uuid_to_str(d->peer_uuid, peer);
		sysfs_attr(d->index, "flow_control", fc, sizeof(fc));
		sysfs_attr(d->index, "mitigations", mit, sizeof(mit));
		sysfs_counters(d->index, O.json, cnt, sizeof(cnt));
		feature_names(d->features, O.json, feat, sizeof(feat));
		if (O.json) {
			printf("%s{\"name\":\"%s\",\"index\":%d,\"state\":\"%s\","
			       "\"local_uuid\":\"%s\",\"peer_uuid\":\"%s\","
			       "\"link_gbps\":%u,\"lane_gbps\":%u,\"lanes\":%u,"
			       "\"abi\":\"%u.%u\",\"max_msg_size\":%" PRIu64 ","
			       "\"ring_bytes\":%" PRIu64 ",\"features\":[%s],\"flow_control\":\"%s\","
			       "\"mitigations\":\"%s\",\"statistics\":{%s}}",
			       i ? "," : "", d->name, d->index, state_name(d->state), local, peer,
			       total, d->link_speed_gbps, d->link_lanes, d->abi_version >> 16,
			       d->abi_version & 0xffff, d->max_msg_size, d->ring_bytes, feat, fc, mit,
			       cnt);
			continue;
		}
		printf("%s\n", d->name);
		printf("  state:         %s\n", state_name(d->state));
		printf("  local UUID:    %s\n", local);
		printf("  peer UUID:     %s\n", peer);
		if (total)
			printf("  link:          %u Gb/s (%u x %u Gb/s)\n", total, d->link_lanes,
			       d->link_speed_gbps);
		else
			printf("  link:          rate unknown\n");
		printf("  driver ABI:    %u.%u\n", d->abi_version >> 16, d->abi_version & 0xffff);
		printf("  max message:   %" PRIu64 " bytes\n", d->max_msg_size);
		printf("  ring:          %" PRIu64 " bytes per direction\n", d->ring_bytes);
		/* keyed, empty, e2e: agreed with the peer at login (none while waiting) */
		printf("  features:      %s\n", feat[0] ? feat : "(none)");
		if (fc[0])
			printf("  flow control:  %s\n", fc);
		if (mit[0])
			printf("  mitigations:   %s\n", mit);
		if (cnt[0])
			printf("  counters:      %s\n", cnt);
	}
	if (O.json)
		printf("]}\n");
	if (!n) {
		glob_t g;

		/* nodes the library could not open (permissions: mode 0660) */
		if (glob("/dev/odl_tb5_[0-9]*", 0, NULL, &g) == 0) {
			for (size_t i = 0; i < g.gl_pathc; i++)
				if (access(g.gl_pathv[i], R_OK | W_OK) != 0)
					fprintf(stderr, "%s: %s: %s\n", prog, g.gl_pathv[i],
						strerror(errno));
			globfree(&g);
		}
		fprintf(stderr, "%s: no odl_tb5 devices (is odl_tb5.ko loaded, a cable plugged and the peer's driver loaded?)\n",
			prog);
		return 1;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: %s --server|--client [options]\n"
"       %s --list [--json]\n"
"  -s, --server              wait for a client, run the test it asks for\n"
"  -c, --client              run a test against a server\n"
"  -l, --list                the kernel devices (/dev/odl_tb5_N): state, peer,\n"
"                            link rate, driver ABI, limits, features, flow control\n"
"  -d, --device SPEC         device index (0), /dev/odl_tb5_N, peer UUID, or\n"
"                            shm:NAME (shared memory; server = side a, client = b)\n"
"                            default: $ODL_TB5_DEVICE, else 0\n"
"  -t, --test TEST           bandwidth | latency | jitter | latency-load | mimo\n"
"  -S, --size BYTES          message size (K/M/G suffixes); default 65536 for\n"
"                            bandwidth/mimo, 8 for latency tests\n"
"      --load-size BYTES     message size of the latency-load background stream (64K)\n"
"  -n, --iterations N        messages per stream (default 1000 / 10000 latency)\n"
"  -D, --duration SECONDS    run for a time instead of a count\n"
"  -m, --streams N           parallel bidirectional streams for mimo (1..%d, default 4)\n"
"  -p, --port N              base port (control); streams use the next ports (default 1)\n"
"  -w, --window N            messages in flight per stream (default 16)\n"
"  -T, --timeout MS          give up after MS without progress (default 10000)\n"
"  -b, --busy-poll           spin instead of sleeping while waiting\n"
"  -j, --json                one JSON object on stdout instead of tables\n"
"      --no-verify           do not fill and check the data pattern\n"
"      --user-memory         data buffers in the tool's own memory, registered\n"
"                            (kernel: pinned by the driver, no library copy)\n"
"      --seed N              pattern seed\n"
"      --corrupt-at N        (testing) corrupt the client's N-th message (1-based)\n"
"  -h, --help\n"
"Exit status: 0 success; 1 any failure (bad arguments, peer gone, verify mismatch,\n"
"no device to --list).\n",
		prog, prog, MAX_STREAMS);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "server", no_argument, NULL, 's' },
		{ "client", no_argument, NULL, 'c' },
		{ "list", no_argument, NULL, 'l' },
		{ "device", required_argument, NULL, 'd' },
		{ "test", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 'S' },
		{ "load-size", required_argument, NULL, 'L' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, 'D' },
		{ "streams", required_argument, NULL, 'm' },
		{ "port", required_argument, NULL, 'p' },
		{ "window", required_argument, NULL, 'w' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "busy-poll", no_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'j' },
		{ "no-verify", no_argument, NULL, 'V' },
		{ "user-memory", no_argument, NULL, 'u' },
		{ "seed", required_argument, NULL, 'e' },
		{ "corrupt-at", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool size_set = false, streams_set = false;
	int c, i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	O.load_size = 65536;
	while ((c = getopt_long(argc, argv, "scld:t:S:n:D:m:p:w:T:bjh", lo, NULL)) != -1) {
		switch (c) {
		case 's': O.server = true; break;
		case 'c': O.client = true; break;
		case 'l': O.list = true; break;
		case 'd': O.device = optarg; break;
		case 't':
			for (i = 0; i <= T_MIMO; i++)
				if (!strcmp(optarg, test_names[i]))
					break;
			if (i > T_MIMO)
				die("unknown test '%s' (bandwidth, latency, jitter, "
				    "latency-load, mimo)", optarg);
			O.test = (enum test)i;
			break;
		case 'S': O.size = parse_size(optarg, "size"); size_set = true; break;
		case 'L': O.load_size = parse_size(optarg, "load size"); break;
		case 'n':
			O.iters = parse_size(optarg, "iteration count");
			if (!O.iters)
				die("--iterations must be at least 1");
			break;
		case 'D': {
			char *end;

			O.duration = strtod(optarg, &end);
			if (*end || !(O.duration > 0) || O.duration > 86400)
				die("bad duration '%s' (seconds, > 0)", optarg);
			break;
		}
		case 'm':
			O.streams = (uint32_t)parse_size(optarg, "stream count");
			if (O.streams < 1 || O.streams > MAX_STREAMS)
				die("--streams must be 1..%d", MAX_STREAMS);
			streams_set = true;
			break;
		case 'p':
			O.port = (uint32_t)parse_size(optarg, "port");
			if (O.port < 1 || O.port > ODL_TB5_MAX_PORT - 1)
				die("--port must be 1..%d", ODL_TB5_MAX_PORT - 1);
			break;
		case 'w':
			O.window = (uint32_t)parse_size(optarg, "window");
			if (O.window < 1 || O.window > 1024)
				die("--window must be 1..1024");
			break;
		case 'T': {
			uint64_t t = parse_size(optarg, "timeout");

			if (t < 1 || t > 3600000)
				die("--timeout must be 1..3600000 ms");
			O.timeout_ms = (int)t;
			timeout_set = true;
			break;
		}
		case 'b': O.busy = true; break;
		case 'j': O.json = true; break;
		case 'V': O.verify = false; break;
		case 'u': O.user_mem = true; break;
		case 'e': O.seed = parse_size(optarg, "seed"); break;
		case 'C': O.corrupt_at = parse_size(optarg, "message number"); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 1;
		}
	}
	if (optind < argc)
		die("unexpected argument '%s' (see --help)", argv[optind]);
	if (O.list) {
		if (O.server || O.client)
			die("--list lists the devices; it takes no --server or --client");
		return run_list();
	}
	if (O.server == O.client)
		die("give exactly one of --server and --client (see --help)");
	if (O.iters && O.duration > 0)
		die("give --iterations or --duration, not both");
	if (O.test != T_MIMO && streams_set && O.streams != 1)
		die("--streams is for --test mimo");
	if (O.test == T_MIMO && !streams_set)
		O.streams = 4;
	if (!size_set)
		O.size = (O.test == T_LAT || O.test == T_JITTER || O.test == T_LOAD) ? 8 : 65536;
	if (!O.iters && !(O.duration > 0))
		O.iters = (O.test == T_BW || O.test == T_MIMO) ? 1000 : 10000;
	if (O.port + 1 + (O.test == T_MIMO ? O.streams : 2) > ODL_TB5_MAX_PORT + 1)
		die("--port %u leaves no room for the streams' ports", O.port);
	return O.server ? run_server() : run_client();
}
