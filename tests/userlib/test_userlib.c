// SPDX-License-Identifier: MIT
/*
 * Unit tests of libodl_tb5 against the shm backend: two processes (the test
 * and a forked child) per channel. Segment names carry the test's pid, so
 * runs never collide.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "odl_tb5/odl_tb5.h"

/* ------------------------------------------------------------------ */
/* helpers */

static char g_name[64];
static int g_seq;

static const char *newname(void)
{
	snprintf(g_name, sizeof(g_name), "ut%d_%d", (int)getpid(), ++g_seq);
	return g_name;
}

static char *spec(const char *name, char side)
{
	static char s[2][96];
	static int i;

	i ^= 1;
	snprintf(s[i], sizeof(s[i]), "shm:%s:%c", name, side);
	return s[i];
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

static int check_fill(const uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (p[i] != (uint8_t)x)
			return -1;
	}
	return 0;
}

static odl_tb5_t *xopen(const char *s, struct odl_tb5_open_opts *o)
{
	odl_tb5_t *h = NULL;
	int r = odl_tb5_open(s, o, &h);

	if (r) {
		fprintf(stderr, "open %s: %s\n", s, odl_tb5_strerror(r));
		return NULL;
	}
	return h;
}

/* poll exactly one completion (timeout ms) */
static int poll1(odl_tb5_t *h, struct odl_tb5_completion *c, int ms)
{
	return odl_tb5_poll(h, c, 1, ms, 0);
}

/* child side: run fn, _exit with its result (never returns into Check) */
static pid_t run_child(int (*fn)(const char *name, void *arg), const char *name,
		       void *arg)
{
	pid_t pid = fork();

	if (pid == 0) {
		int r = fn(name, arg);

		_exit(r);
	}
	return pid;
}

static int child_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

/* ------------------------------------------------------------------ */
/* API basics and bad arguments (single process) */

START_TEST(t_basics)
{
	struct odl_tb5_open_opts o;
	uint8_t u[16], u2[16];
	char s[37];
	odl_tb5_t *h = (odl_tb5_t *)1;

	ck_assert_uint_eq(odl_tb5_version() >> 16, ODL_TB5_API_MAJOR);
	odl_tb5_open_opts_init(NULL);
	odl_tb5_open_opts_init(&o);
	ck_assert_uint_eq(o.size, sizeof(o));
	ck_assert_uint_eq(o.port, ODL_TB5_DEFAULT_PORT);

	ck_assert_str_eq(odl_tb5_strerror(0), "success");
	ck_assert_str_eq(odl_tb5_strerror(-ECONNRESET), odl_tb5_strerror(ECONNRESET));
	for (int e = 0; e < 140; e++)
		ck_assert_ptr_nonnull(odl_tb5_strerror(e));
	ck_assert_str_eq(odl_tb5_strerror(99999), "unknown error");

	ck_assert_int_eq(odl_tb5_uuid_parse("0123456789AB-cdef-0123-456789abcdef0", u), -EINVAL);
	ck_assert_int_eq(odl_tb5_uuid_parse("01234567-89ab-cdef-0123-456789abcdeg", u), -EINVAL);
	ck_assert_int_eq(odl_tb5_uuid_parse("short", u), -EINVAL);
	ck_assert_int_eq(odl_tb5_uuid_parse(NULL, u), -EINVAL);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(odl_tb5_uuid_parse("01234567-89AB-cdef-0123-456789abcdef", u), 0);
	odl_tb5_uuid_to_str(u, s);
	ck_assert_str_eq(s, "01234567-89ab-cdef-0123-456789abcdef");
	ck_assert_int_eq(odl_tb5_uuid_parse(s, u2), 0);
	ck_assert_mem_eq(u, u2, 16);
	odl_tb5_uuid_to_str(NULL, s);
	ck_assert_str_eq(s, "");
	odl_tb5_uuid_to_str(u, NULL);

	/* bad specs and options: -EINVAL, *out NULL */
	ck_assert_int_eq(odl_tb5_open("shm:", NULL, &h), -EINVAL);
	ck_assert_ptr_null(h);
	ck_assert_int_eq(odl_tb5_open("shm:bad/name", NULL, &h), -EINVAL);
	ck_assert_int_eq(odl_tb5_open("shm:..", NULL, &h), -EINVAL);
	ck_assert_int_eq(odl_tb5_open("shm:x:c", NULL, &h), -EINVAL);
	ck_assert_int_eq(odl_tb5_open("shm:0123456789012345678901234567890123456789012345678", NULL, &h), -EINVAL);
	ck_assert_int_eq(odl_tb5_open("bogus", NULL, &h), -EINVAL);
	ck_assert_int_eq(odl_tb5_open("1234567", NULL, &h), -EINVAL);
	ck_assert_int_eq(odl_tb5_open("shm:x", NULL, NULL), -EINVAL);
	odl_tb5_open_opts_init(&o);
	o.port = ODL_TB5_MAX_PORT + 1;
	ck_assert_int_eq(odl_tb5_open("shm:x", &o, &h), -EINVAL);
	odl_tb5_open_opts_init(&o);
	o.role = 7;
	ck_assert_int_eq(odl_tb5_open("shm:x", &o, &h), -EINVAL);
	odl_tb5_open_opts_init(&o);
	o.role = ODL_TB5_ROLE_A;
	ck_assert_int_eq(odl_tb5_open("shm:x:b", &o, &h), -EINVAL);
	odl_tb5_open_opts_init(&o);
	o.flags = 0x80;
	ck_assert_int_eq(odl_tb5_open("shm:x", &o, &h), -EINVAL);
	odl_tb5_open_opts_init(&o);
	o.ring_bytes = 100000;	/* not a power of two */
	ck_assert_int_eq(odl_tb5_open("shm:x", &o, &h), -EINVAL);
	o.ring_bytes = 1ull << 30;
	ck_assert_int_eq(odl_tb5_open("shm:x", &o, &h), -EINVAL);
	odl_tb5_open_opts_init(&o);
	o.max_msg_size = 1ull << 40;
	ck_assert_int_eq(odl_tb5_open("shm:x", &o, &h), -EINVAL);
	odl_tb5_open_opts_init(&o);
	o.tx_depth = 100000;
	ck_assert_int_eq(odl_tb5_open("shm:x", &o, &h), -EINVAL);
	odl_tb5_open_opts_init(&o);
	o.size = 8;
	ck_assert_int_eq(odl_tb5_open("shm:x", &o, &h), -EINVAL);

	/* kernel backend without a device */
	ck_assert_int_eq(odl_tb5_open("/dev/odl_tb5_9999", NULL, &h), -ENODEV);
	ck_assert_int_eq(odl_tb5_open_index(9999, NULL, &h), -ENODEV);
	ck_assert_int_eq(odl_tb5_open_index(-1, NULL, &h), -EINVAL);
	ck_assert_int_eq(odl_tb5_open("uuid:01234567-89ab-cdef-0123-456789abcdef", NULL, &h), -ENODEV);
	ck_assert_int_eq(odl_tb5_open_uuid(u, NULL, &h), -ENODEV);
	ck_assert_int_eq(odl_tb5_open_uuid(NULL, NULL, &h), -EINVAL);
	ck_assert_int_ge(odl_tb5_list(NULL, 0), 0);
	ck_assert_int_eq(odl_tb5_list(NULL, 3), -EINVAL);

	/* NULL handles */
	ck_assert_int_eq(odl_tb5_close(NULL), 0);
	ck_assert_int_eq(odl_tb5_wait_peer(NULL, 0), -EINVAL);
	ck_assert_int_eq(odl_tb5_info(NULL, NULL), -EINVAL);
	ck_assert_int_eq(odl_tb5_state(NULL), -EINVAL);
	ck_assert_int_eq(odl_tb5_fd(NULL), -EINVAL);
	ck_assert_int_eq(odl_tb5_send(NULL, 1, 0, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(odl_tb5_post_recv(NULL, 1, 0, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(odl_tb5_poll(NULL, NULL, 1, 0, 0), -EINVAL);
	ck_assert_int_eq(odl_tb5_pending(NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(odl_tb5_stats(NULL, NULL), -EINVAL);
	ck_assert_int_eq(odl_tb5_stats_reset(NULL), -EINVAL);
	ck_assert_int_eq(odl_tb5_buf_free(NULL, 1), -EINVAL);
	ck_assert_ptr_null(odl_tb5_buf_addr(NULL, 1));
}
END_TEST

START_TEST(t_bad_args)
{
	const char *n = newname();
	odl_tb5_t *h = xopen(spec(n, 'a'), NULL);
	struct odl_tb5_completion c;
	struct odl_tb5_stats st0, st1;
	struct odl_tb5_info info;
	unsigned int ps, pr;
	uint32_t id, id2, rid;
	void *a;
	static uint8_t mem[8192];

	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 0, 0, &id, &a), -EINVAL);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 100, 0x10, &id, &a), -EINVAL);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 100, 0, NULL, &a), -EINVAL);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 100, 0, &id, NULL), -EINVAL);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 4096, ODL_TB5_BUF_SEND, &id, &a), 0);
	ck_assert_ptr_eq(odl_tb5_buf_addr(h, id), a);
	ck_assert_int_eq(((uintptr_t)a) & 4095, 0);
	ck_assert_int_eq(odl_tb5_buf_register(h, NULL, 10, &rid), -EINVAL);
	ck_assert_int_eq(odl_tb5_buf_register(h, mem, 0, &rid), -EINVAL);
	ck_assert_int_eq(odl_tb5_buf_register(h, mem, sizeof(mem), NULL), -EINVAL);
	ck_assert_int_eq(odl_tb5_buf_register(h, mem, sizeof(mem), &rid), 0);
	ck_assert_ptr_eq(odl_tb5_buf_addr(h, rid), mem);
	ck_assert_int_eq(odl_tb5_buf_import_dmabuf(h, 0, 0, 4096, &id2), -ENOTSUP);
	ck_assert_int_eq(errno, ENOTSUP);
	ck_assert_int_eq(odl_tb5_buf_import_dmabuf(h, -1, 0, 4096, &id2), -EINVAL);
	ck_assert_int_eq(odl_tb5_buf_import_dmabuf(h, 0, ~0ull, 4096, &id2), -EINVAL);
	ck_assert_int_eq(odl_tb5_fd(h), -ENOTSUP);
	ck_assert_ptr_null(odl_tb5_buf_addr(h, 0));
	ck_assert_ptr_null(odl_tb5_buf_addr(h, 777));
	ck_assert_ptr_null(odl_tb5_buf_addr(h, ODL_TB5_MAX_BUFS + 1));

	ck_assert_int_eq(odl_tb5_stats(h, &st0), 0);
	/* unknown ids, ranges, flags: clear errno, nothing queued */
	ck_assert_int_eq(odl_tb5_send(h, 0, 0, 1, 0, 0), -ENOENT);
	ck_assert_int_eq(odl_tb5_send(h, 999, 0, 1, 0, 0), -ENOENT);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(odl_tb5_send(h, ODL_TB5_MAX_BUFS + 5, 0, 1, 0, 0), -ENOENT);
	ck_assert_int_eq(odl_tb5_send(h, id, 4097, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(odl_tb5_send(h, id, 4000, 97, 0, 0), -EINVAL);
	ck_assert_int_eq(odl_tb5_send(h, id, 1, ~0ull, 0, 0), -EINVAL);
	ck_assert_int_eq(odl_tb5_send(h, id, ~0ull, 2, 0, 0), -EINVAL);
	ck_assert_int_eq(odl_tb5_send(h, id, 0, 1, 0, 0x100), -EINVAL);
	ck_assert_int_eq(odl_tb5_send(h, id, 0, 1, 0,
				      ODL_TB5_F_BUSY_POLL | ODL_TB5_F_SLEEP), -EINVAL);
	ck_assert_int_eq(odl_tb5_post_recv(h, 42, 0, 1, 0, 0), -ENOENT);
	ck_assert_int_eq(odl_tb5_post_recv(h, rid, 8000, 193, 0, 0), -EINVAL);
	ck_assert_int_eq(odl_tb5_post_recv(h, rid, 0, 1, 0, 0x40), -EINVAL);
	ck_assert_int_eq(odl_tb5_poll(h, NULL, 1, 0, 0), -EINVAL);
	ck_assert_int_eq(odl_tb5_poll(h, &c, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(odl_tb5_poll(h, &c, 1, 0, 0x40), -EINVAL);
	ck_assert_int_eq(odl_tb5_poll(h, &c, 1, 0,
				      ODL_TB5_F_BUSY_POLL | ODL_TB5_F_SLEEP), -EINVAL);
	ck_assert_int_eq(odl_tb5_info(h, NULL), -EINVAL);
	ck_assert_int_eq(odl_tb5_stats(h, NULL), -EINVAL);
	ck_assert_int_eq(odl_tb5_pending(h, &ps, &pr), 0);
	ck_assert_uint_eq(ps, 0);
	ck_assert_uint_eq(pr, 0);
	ck_assert_int_eq(odl_tb5_stats(h, &st1), 0);
	ck_assert_mem_eq(&st0, &st1, sizeof(st0));

	/* busy buffers cannot be freed; unknown ones are ENOENT */
	ck_assert_int_eq(odl_tb5_post_recv(h, rid, 0, 100, 1, 0), 0);
	ck_assert_int_eq(odl_tb5_buf_free(h, rid), -EBUSY);
	ck_assert_int_eq(odl_tb5_buf_free(h, 555), -ENOENT);
	ck_assert_int_eq(odl_tb5_pending(h, NULL, &pr), 0);
	ck_assert_uint_eq(pr, 1);
	ck_assert_int_eq(odl_tb5_buf_free(h, id), 0);
	ck_assert_int_eq(odl_tb5_buf_free(h, id), -ENOENT);
	ck_assert_int_eq(odl_tb5_send(h, id, 0, 1, 0, 0), -ENOENT);

	ck_assert_int_eq(odl_tb5_info(h, &info), 0);
	ck_assert_str_eq(info.backend, "shm");
	ck_assert_int_eq(info.index, -1);
	ck_assert_uint_eq(info.port, 1);
	ck_assert_uint_eq(info.state, ODL_TB5_STATE_WAITING);
	ck_assert_uint_eq(info.max_msg_size, 64ull << 20);
	ck_assert_uint_eq(info.ring_bytes, 4ull << 20);
	ck_assert_int_eq(odl_tb5_state(h), ODL_TB5_STATE_WAITING);
	ck_assert_int_eq(odl_tb5_wait_peer(h, 0), -ENOTCONN);
	ck_assert(memcmp(info.local_uuid, info.peer_uuid, 16) != 0);
	odl_tb5_close(h);
}
END_TEST

/* ------------------------------------------------------------------ */
/* ordering and sizes */

struct xfer_arg {
	int count;
	const uint64_t *sizes;
	int nsizes;
	uint32_t port;
	uint64_t ring;
	uint32_t flags;		/* data-path flags */
	uint32_t oflags;	/* open flags */
	uint64_t seed;
};

static uint64_t size_of(const struct xfer_arg *x, int i)
{
	return x->sizes[i % x->nsizes];
}

/* sender: count messages of sizes[i % n], pattern seeded with seed + i */
static int sender(const char *name, void *arg)
{
	struct xfer_arg *x = arg;
	struct odl_tb5_open_opts o;
	struct odl_tb5_completion c[16];
	uint64_t maxsz = 0;
	odl_tb5_t *h;
	uint32_t id[4];
	uint8_t *buf[4];
	int i, done = 0, inflight = 0;

	odl_tb5_open_opts_init(&o);
	o.port = x->port;
	o.ring_bytes = x->ring;
	o.flags = x->oflags;
	h = xopen(spec(name, 'a'), &o);
	if (!h)
		return 10;
	for (i = 0; i < x->nsizes; i++)
		if (x->sizes[i] > maxsz)
			maxsz = x->sizes[i];
	for (i = 0; i < 4; i++)
		if (odl_tb5_buf_alloc(h, maxsz ? maxsz : 1, ODL_TB5_BUF_SEND,
				      &id[i], (void **)&buf[i]))
			return 11;
	if (odl_tb5_wait_peer(h, 10000))
		return 12;
	for (i = 0; i < x->count; i++) {
		uint64_t n = size_of(x, i);

		while (inflight == 4) {
			int r = odl_tb5_poll(h, c, 16, 10000, x->flags);

			if (r < 0)
				return 13;
			for (int k = 0; k < r; k++)
				if (c[k].status || c[k].op != ODL_TB5_OP_SEND ||
				    c[k].cookie != (uint64_t)done++)
					return 14;
			inflight -= r;
		}
		fill(buf[i % 4], n, x->seed + (uint64_t)i);
		if (odl_tb5_send(h, id[i % 4], 0, n, (uint64_t)i, x->flags))
			return 15;
		inflight++;
	}
	while (inflight) {
		int r = odl_tb5_poll(h, c, 16, 10000, x->flags);

		if (r < 0)
			return 16;
		for (int k = 0; k < r; k++)
			if (c[k].status || c[k].length != size_of(x, (int)c[k].cookie))
				return 17;
		inflight -= r;
	}
	/* wait for the receiver's "done" (a 0-byte message) */
	if (odl_tb5_post_recv(h, id[0], 0, 16, 999, 0) ||
	    poll1(h, c, 20000) != 1 || c[0].cookie != 999 || c[0].status)
		return 18;
	odl_tb5_close(h);
	return 0;
}

static void receive_all(const char *name, struct xfer_arg *x)
{
	struct odl_tb5_open_opts o;
	struct odl_tb5_completion c[8];
	struct odl_tb5_stats st;
	uint64_t maxsz = 0, total = 0;
	odl_tb5_t *h;
	uint32_t id[4];
	uint8_t *buf[4];
	int i, got = 0, posted = 0;
	pid_t pid = run_child(sender, name, x);

	odl_tb5_open_opts_init(&o);
	o.port = x->port;
	o.flags = x->oflags;
	h = xopen(spec(name, 'b'), &o);
	ck_assert_ptr_nonnull(h);
	for (i = 0; i < x->nsizes; i++)
		if (x->sizes[i] > maxsz)
			maxsz = x->sizes[i];
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(odl_tb5_buf_alloc(h, maxsz + 1, ODL_TB5_BUF_RECV,
						   &id[i], (void **)&buf[i]), 0);
	for (i = 0; i < 4 && posted < x->count; i++, posted++)
		ck_assert_int_eq(odl_tb5_post_recv(h, id[i], 0, maxsz + 1,
						   (uint64_t)posted, x->flags), 0);
	while (got < x->count) {
		int r = odl_tb5_poll(h, c, 8, 10000, x->flags);

		ck_assert_int_gt(r, 0);
		for (int k = 0; k < r; k++, got++) {
			uint64_t n = size_of(x, got);

			ck_assert_int_eq(c[k].status, 0);
			ck_assert_uint_eq(c[k].op, ODL_TB5_OP_RECV);
			ck_assert_uint_eq(c[k].cookie, (uint64_t)got);
			ck_assert_uint_eq(c[k].length, n);
			ck_assert_uint_eq(c[k].buf_id, id[got % 4]);
			ck_assert_int_eq(check_fill(buf[got % 4], n,
						    x->seed + (uint64_t)got), 0);
			total += n;
			if (posted < x->count) {
				ck_assert_int_eq(odl_tb5_post_recv(h, id[posted % 4], 0,
								   maxsz + 1,
								   (uint64_t)posted,
								   x->flags), 0);
				posted++;
			}
		}
	}
	ck_assert_int_eq(odl_tb5_stats(h, &st), 0);
	ck_assert_uint_eq(st.rx_msgs, (uint64_t)x->count);
	ck_assert_uint_eq(st.rx_bytes, total);
	ck_assert_uint_eq(st.rx_errors, 0);
	ck_assert_int_eq(odl_tb5_send(h, id[0], 0, 0, 7, 0), 0);
	ck_assert_int_eq(poll1(h, c, 5000), 1);
	ck_assert_int_eq(c[0].status, 0);
	ck_assert_uint_eq(c[0].op, ODL_TB5_OP_SEND);
	ck_assert_int_eq(child_status(pid), 0);
	odl_tb5_close(h);
}

START_TEST(t_ordering)
{
	static const uint64_t sizes[] = { 8, 100, 1, 0, 333, 4096, 17 };
	struct xfer_arg x = { .count = 3000, .sizes = sizes, .nsizes = 7,
			      .seed = 11 };

	receive_all(newname(), &x);
}
END_TEST

START_TEST(t_sizes)
{
	static const uint64_t sizes[] = { 0, 1, 4095, 4096, 4097, 65536,
					  3u << 20, (9u << 20) + 3 };
	struct xfer_arg x = { .count = 16, .sizes = sizes, .nsizes = 8,
			      .seed = 5, .ring = 1u << 20 };

	receive_all(newname(), &x);
}
END_TEST

START_TEST(t_busy_poll)
{
	static const uint64_t sizes[] = { 64, 5000, 0 };
	struct xfer_arg x = { .count = 500, .sizes = sizes, .nsizes = 3,
			      .seed = 3, .flags = ODL_TB5_F_BUSY_POLL };

	receive_all(newname(), &x);
	x.flags = 0;
	x.oflags = ODL_TB5_OPEN_BUSY_POLL;
	receive_all(newname(), &x);
}
END_TEST

/* ------------------------------------------------------------------ */
/* receive too small, max message size */

static int small_sender(const char *name, void *arg)
{
	struct odl_tb5_open_opts o;
	struct odl_tb5_completion c;
	odl_tb5_t *h;
	uint32_t id;
	uint8_t *b;

	(void)arg;
	odl_tb5_open_opts_init(&o);
	h = xopen(spec(name, 'a'), &o);
	if (!h || odl_tb5_buf_alloc(h, 100000, 0, &id, (void **)&b))
		return 10;
	fill(b, 100000, 1);
	if (odl_tb5_wait_peer(h, 5000))
		return 11;
	/* 5000 bytes into a 4096 receive, then 10, then 100000 > peer max */
	if (odl_tb5_send(h, id, 0, 5000, 1, 0) || odl_tb5_send(h, id, 0, 10, 2, 0))
		return 12;
	if (odl_tb5_send(h, id, 0, 100000, 3, 0) != -EMSGSIZE)
		return 13;
	for (int i = 0; i < 2; i++)
		if (poll1(h, &c, 5000) != 1 || c.status)
			return 14;
	if (odl_tb5_post_recv(h, id, 0, 8, 4, 0) || poll1(h, &c, 10000) != 1)
		return 15;
	odl_tb5_close(h);
	return 0;
}

START_TEST(t_msgsize)
{
	const char *n = newname();
	struct odl_tb5_open_opts o;
	struct odl_tb5_completion c;
	struct odl_tb5_stats st;
	struct odl_tb5_info info;
	odl_tb5_t *h;
	uint32_t id;
	uint8_t *b;
	pid_t pid;

	odl_tb5_open_opts_init(&o);
	o.max_msg_size = 50000;
	h = xopen(spec(n, 'b'), &o);
	ck_assert_ptr_nonnull(h);
	pid = run_child(small_sender, n, NULL);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 65536, 0, &id, (void **)&b), 0);
	memset(b, 0xee, 8192);
	ck_assert_int_eq(odl_tb5_post_recv(h, id, 0, 4096, 1, 0), 0);
	ck_assert_int_eq(odl_tb5_post_recv(h, id, 4096, 4096, 2, 0), 0);
	ck_assert_int_eq(poll1(h, &c, 5000), 1);
	ck_assert_int_eq(c.status, -EMSGSIZE);
	ck_assert_uint_eq(c.length, 5000);
	ck_assert_uint_eq(c.cookie, 1);
	ck_assert_uint_eq(b[0], 0xee);	/* not truncated into the buffer */
	ck_assert_uint_eq(b[4095], 0xee);
	ck_assert_int_eq(poll1(h, &c, 5000), 1);
	ck_assert_int_eq(c.status, 0);
	ck_assert_uint_eq(c.length, 10);
	ck_assert_uint_eq(c.offset, 4096);
	ck_assert_int_eq(check_fill(b + 4096, 10, 1), 0);
	ck_assert_int_eq(odl_tb5_info(h, &info), 0);
	ck_assert_uint_eq(info.max_msg_size, 50000);
	ck_assert_uint_eq(info.state, ODL_TB5_STATE_CONNECTED);
	ck_assert_int_eq(odl_tb5_stats(h, &st), 0);
	ck_assert_uint_eq(st.rx_msgsize, 1);
	ck_assert_uint_eq(st.rx_errors, 1);
	ck_assert_uint_eq(st.rx_msgs, 1);
	ck_assert_int_eq(odl_tb5_send(h, id, 0, 50001, 9, 0), -EMSGSIZE);
	ck_assert_int_eq(odl_tb5_send(h, id, 0, 0, 9, 0), 0);
	ck_assert_int_eq(poll1(h, &c, 5000), 1);
	ck_assert_int_eq(child_status(pid), 0);
	odl_tb5_close(h);
}
END_TEST

/* sends queued before the peer opened, with a max the peer lowers */
static int lowmax_receiver(const char *name, void *arg)
{
	struct odl_tb5_open_opts o;
	struct odl_tb5_completion c;
	odl_tb5_t *h;
	uint32_t id;
	void *b;

	(void)arg;
	odl_tb5_open_opts_init(&o);
	o.max_msg_size = 1000;
	h = xopen(spec(name, 'b'), &o);
	if (!h || odl_tb5_buf_alloc(h, 4096, 0, &id, &b))
		return 10;
	if (odl_tb5_post_recv(h, id, 0, 4096, 1, 0) || poll1(h, &c, 5000) != 1 ||
	    c.status || c.length != 999)
		return 11;
	if (odl_tb5_send(h, id, 0, 0, 2, 0) || poll1(h, &c, 5000) != 1)
		return 12;
	odl_tb5_close(h);
	return 0;
}

START_TEST(t_queued_before_peer)
{
	const char *n = newname();
	struct odl_tb5_completion c;
	odl_tb5_t *h = xopen(spec(n, 'a'), NULL);
	unsigned int ps;
	uint32_t id;
	void *b;
	pid_t pid;

	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 4096, 0, &id, &b), 0);
	ck_assert_int_eq(odl_tb5_send(h, id, 0, 2000, 1, 0), 0);
	ck_assert_int_eq(odl_tb5_send(h, id, 0, 999, 2, 0), 0);
	ck_assert_int_eq(odl_tb5_poll(h, &c, 1, 0, 0), -EAGAIN);
	ck_assert_int_eq(odl_tb5_pending(h, &ps, NULL), 0);
	ck_assert_uint_eq(ps, 2);
	pid = run_child(lowmax_receiver, n, NULL);
	ck_assert_int_eq(poll1(h, &c, 5000), 1);
	ck_assert_int_eq(c.status, -EMSGSIZE);	/* > the peer's max */
	ck_assert_uint_eq(c.cookie, 1);
	ck_assert_int_eq(poll1(h, &c, 5000), 1);
	ck_assert_int_eq(c.status, 0);
	ck_assert_uint_eq(c.cookie, 2);
	ck_assert_int_eq(odl_tb5_post_recv(h, id, 0, 10, 3, 0), 0);
	ck_assert_int_eq(poll1(h, &c, 5000), 1);
	ck_assert_int_eq(child_status(pid), 0);
	odl_tb5_close(h);
}
END_TEST

/* ------------------------------------------------------------------ */
/* non-blocking, timeouts */

START_TEST(t_nonblock_timeout)
{
	const char *n = newname();
	struct odl_tb5_open_opts o;
	struct odl_tb5_completion c;
	struct odl_tb5_stats st;
	odl_tb5_t *h;
	uint32_t id;
	uint64_t t0;
	void *b;

	odl_tb5_open_opts_init(&o);
	o.tx_depth = 2;
	o.rx_depth = 1;
	o.timeout_ms = 100;
	h = xopen(spec(n, 'a'), &o);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 4096, 0, &id, &b), 0);
	ck_assert_int_eq(odl_tb5_poll(h, &c, 1, 0, 0), -EAGAIN);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(odl_tb5_poll(h, &c, 1, 1000, ODL_TB5_F_NONBLOCK), -EAGAIN);
	/* no peer: sends stay queued */
	ck_assert_int_eq(odl_tb5_send(h, id, 0, 1, 1, 0), 0);
	ck_assert_int_eq(odl_tb5_send(h, id, 0, 1, 2, ODL_TB5_F_NONBLOCK), 0);
	ck_assert_int_eq(odl_tb5_send(h, id, 0, 1, 3, ODL_TB5_F_NONBLOCK), -EAGAIN);
	ck_assert_int_eq(odl_tb5_post_recv(h, id, 0, 1, 4, 0), 0);
	ck_assert_int_eq(odl_tb5_post_recv(h, id, 0, 1, 5, ODL_TB5_F_NONBLOCK), -EAGAIN);
	t0 = now_ms();
	ck_assert_int_eq(odl_tb5_send(h, id, 0, 1, 3, 0), -ETIMEDOUT);
	ck_assert_uint_ge(now_ms() - t0, 95);
	ck_assert_uint_lt(now_ms() - t0, 2000);
	t0 = now_ms();
	ck_assert_int_eq(odl_tb5_post_recv(h, id, 0, 1, 5, ODL_TB5_F_BUSY_POLL), -ETIMEDOUT);
	ck_assert_uint_ge(now_ms() - t0, 95);
	t0 = now_ms();
	ck_assert_int_eq(odl_tb5_poll(h, &c, 1, 150, 0), -ETIMEDOUT);
	ck_assert_uint_ge(now_ms() - t0, 145);
	ck_assert_uint_lt(now_ms() - t0, 2000);
	t0 = now_ms();
	ck_assert_int_eq(odl_tb5_poll(h, &c, 1, 50, ODL_TB5_F_BUSY_POLL), -ETIMEDOUT);
	ck_assert_uint_ge(now_ms() - t0, 45);
	t0 = now_ms();
	ck_assert_int_eq(odl_tb5_wait_peer(h, 80), -ETIMEDOUT);
	ck_assert_uint_ge(now_ms() - t0, 75);
	ck_assert_int_eq(odl_tb5_stats(h, &st), 0);
	ck_assert_uint_eq(st.eagain, 4);
	ck_assert_uint_eq(st.timeouts, 5);
	ck_assert_uint_ge(st.waits, 5);
	ck_assert_int_eq(odl_tb5_stats_reset(h), 0);
	ck_assert_int_eq(odl_tb5_stats(h, &st), 0);
	ck_assert_uint_eq(st.timeouts, 0);
	/* close with queued work: no hang, nothing leaks */
	odl_tb5_close(h);
}
END_TEST

/* ------------------------------------------------------------------ */
/* peer death, clean close, stale segments, roles */

static int attach_and_die(const char *name, void *arg)
{
	odl_tb5_t *h = xopen(spec(name, 'a'), NULL);
	uint32_t id;
	void *b;

	if (!h || odl_tb5_buf_alloc(h, 4096, 0, &id, &b) || odl_tb5_wait_peer(h, 5000))
		return 10;
	if (arg) {	/* a half-written message: header + part of a 1 MiB one */
		uint8_t *big = malloc(1 << 21);
		uint32_t bid;

		if (!big || odl_tb5_buf_register(h, big, 1 << 21, &bid) ||
		    odl_tb5_send(h, bid, 0, 1 << 21, 1, 0))
			return 11;
	}
	usleep(100000);
	raise(SIGKILL);
	return 0;
}

START_TEST(t_peer_death)
{
	const char *n = newname();
	struct odl_tb5_open_opts o;
	struct odl_tb5_completion c[4];
	odl_tb5_t *h;
	uint32_t id;
	uint64_t t0;
	void *b;
	pid_t pid;
	int r;

	odl_tb5_open_opts_init(&o);
	o.ring_bytes = 64 << 10;	/* the 2 MiB message cannot fit */
	h = xopen(spec(n, 'b'), &o);
	ck_assert_ptr_nonnull(h);
	pid = run_child(attach_and_die, n, (void *)1);
	ck_assert_int_eq(odl_tb5_wait_peer(h, 5000), 0);
	ck_assert_int_eq(odl_tb5_state(h), ODL_TB5_STATE_CONNECTED);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 4 << 20, 0, &id, &b), 0);
	ck_assert_int_eq(odl_tb5_post_recv(h, id, 0, 4 << 20, 1, 0), 0);
	ck_assert_int_eq(odl_tb5_post_recv(h, id, 0, 4 << 20, 2, 0), 0);
	t0 = now_ms();
	r = odl_tb5_poll(h, c, 1, 10000, 0);
	ck_assert_int_eq(r, 1);
	ck_assert_int_eq(c[0].status, -ECONNRESET);
	ck_assert_int_eq(odl_tb5_poll(h, c, 4, 10000, 0), 1);
	ck_assert_int_eq(c[0].status, -ECONNRESET);
	ck_assert_uint_lt(now_ms() - t0, 2000);
	ck_assert_int_eq(odl_tb5_poll(h, c, 4, -1, 0), -ECONNRESET);
	ck_assert_int_eq(odl_tb5_poll(h, c, 4, 0, 0), -ECONNRESET);
	ck_assert_int_eq(odl_tb5_send(h, id, 0, 1, 3, 0), -ECONNRESET);
	ck_assert_int_eq(odl_tb5_post_recv(h, id, 0, 1, 3, 0), -ECONNRESET);
	ck_assert_int_eq(odl_tb5_wait_peer(h, 10), -ECONNRESET);
	ck_assert_int_eq(odl_tb5_state(h), ODL_TB5_STATE_DISCONNECTED);
	ck_assert_int_eq(child_status(pid), 128 + SIGKILL);
	odl_tb5_close(h);

	/* a blocked waiter is woken by the death (no message in flight) */
	n = newname();
	h = xopen(spec(n, 'b'), NULL);
	pid = run_child(attach_and_die, n, NULL);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 64, 0, &id, &b), 0);
	ck_assert_int_eq(odl_tb5_post_recv(h, id, 0, 64, 1, 0), 0);
	t0 = now_ms();
	ck_assert_int_eq(odl_tb5_poll(h, c, 4, -1, 0), 1);
	ck_assert_int_eq(c[0].status, -ECONNRESET);
	ck_assert_uint_lt(now_ms() - t0, 2000);
	ck_assert_int_eq(child_status(pid), 128 + SIGKILL);
	odl_tb5_close(h);
}
END_TEST

static int send3_close(const char *name, void *arg)
{
	odl_tb5_t *h = xopen(spec(name, 'a'), NULL);
	struct odl_tb5_completion c;
	uint32_t id;
	uint8_t *b;

	(void)arg;
	if (!h || odl_tb5_buf_alloc(h, 4096, 0, &id, (void **)&b))
		return 10;
	for (int i = 0; i < 3; i++) {
		b[i] = (uint8_t)(i + 1);
		if (odl_tb5_send(h, id, (uint64_t)i, 1, (uint64_t)i, 0))
			return 11;
	}
	if (odl_tb5_wait_peer(h, 5000))
		return 12;
	for (int i = 0; i < 3; i++)
		if (poll1(h, &c, 5000) != 1 || c.status)
			return 13;
	odl_tb5_close(h);
	return 0;
}

START_TEST(t_peer_close_drain)
{
	const char *n = newname();
	struct odl_tb5_completion c;
	odl_tb5_t *h = xopen(spec(n, 'b'), NULL);
	uint32_t id;
	uint8_t *b;
	pid_t pid;
	char path[128];

	ck_assert_ptr_nonnull(h);
	pid = run_child(send3_close, n, NULL);
	ck_assert_int_eq(child_status(pid), 0);
	/* the peer is gone, but what it sent is still delivered in order */
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 4096, 0, &id, (void **)&b), 0);
	ck_assert_int_eq(odl_tb5_send(h, id, 0, 1, 9, 0), -ECONNRESET);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(odl_tb5_post_recv(h, id, (uint64_t)i, 1, (uint64_t)i, 0), 0);
		ck_assert_int_eq(poll1(h, &c, 1000), 1);
		ck_assert_int_eq(c.status, 0);
		ck_assert_uint_eq(b[i], i + 1);
	}
	ck_assert_int_eq(odl_tb5_post_recv(h, id, 0, 1, 5, 0), -ECONNRESET);
	ck_assert_int_eq(poll1(h, &c, 1000), -ECONNRESET);
	odl_tb5_close(h);
	snprintf(path, sizeof(path), "/dev/shm/odl_tb5.%s.1", n);
	ck_assert_int_ne(access(path, F_OK), 0);	/* last one out unlinks */
}
END_TEST

static int attach_die_early(const char *name, void *arg)
{
	odl_tb5_t *h = xopen(spec(name, arg ? 'b' : 'a'), NULL);

	if (!h)
		return 10;
	_exit(0);	/* no close: leaves a stale segment */
}

START_TEST(t_stale_recycle)
{
	const char *n = newname();
	odl_tb5_t *h, *h2, *h3;
	char path[128];
	pid_t pid;

	pid = run_child(attach_die_early, n, NULL);
	ck_assert_int_eq(child_status(pid), 0);
	snprintf(path, sizeof(path), "/dev/shm/odl_tb5.%s.1", n);
	ck_assert_int_eq(access(path, F_OK), 0);
	h = xopen(spec(n, 'a'), NULL);	/* same side: recycled */
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(odl_tb5_state(h), ODL_TB5_STATE_WAITING);
	ck_assert_int_eq(odl_tb5_open(spec(n, 'a'), NULL, &h2), -EBUSY);
	ck_assert_int_eq(errno, EBUSY);
	odl_tb5_close(h);

	/* a dead partner of a live side: the live one sees it, a newcomer
	 * gets a fresh segment */
	n = newname();
	h = xopen(spec(n, 'a'), NULL);
	pid = run_child(attach_die_early, n, (void *)1);
	ck_assert_int_eq(child_status(pid), 0);
	ck_assert_int_eq(odl_tb5_wait_peer(h, 1000), -ECONNRESET);
	h2 = xopen(spec(n, 'b'), NULL);
	ck_assert_ptr_nonnull(h2);
	ck_assert_int_eq(odl_tb5_state(h2), ODL_TB5_STATE_WAITING);
	h3 = xopen(spec(n, 'a'), NULL);
	ck_assert_ptr_nonnull(h3);
	ck_assert_int_eq(odl_tb5_wait_peer(h3, 1000), 0);
	ck_assert_int_eq(odl_tb5_wait_peer(h2, 1000), 0);
	odl_tb5_close(h);
	odl_tb5_close(h2);
	ck_assert_int_eq(odl_tb5_wait_peer(h3, 1000), -ECONNRESET);
	odl_tb5_close(h3);
	ck_assert_int_ne(access(path, F_OK), 0);
}
END_TEST

START_TEST(t_roles)
{
	const char *n = newname();
	char s[80];
	struct odl_tb5_info ia, ib;
	odl_tb5_t *a, *b, *c;

	snprintf(s, sizeof(s), "shm:%s", n);
	a = xopen(s, NULL);
	b = xopen(s, NULL);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(odl_tb5_open(s, NULL, &c), -EBUSY);
	ck_assert_int_eq(odl_tb5_info(a, &ia), 0);
	ck_assert_int_eq(odl_tb5_info(b, &ib), 0);
	ck_assert_str_eq(ia.name + strlen(ia.name) - 2, ":a");
	ck_assert_str_eq(ib.name + strlen(ib.name) - 2, ":b");
	ck_assert_mem_eq(ia.peer_uuid, ib.local_uuid, 16);
	ck_assert_mem_eq(ib.peer_uuid, ia.local_uuid, 16);
	ck_assert_uint_eq(ia.state, ODL_TB5_STATE_CONNECTED);
	ck_assert_int_eq(odl_tb5_wait_peer(a, 0), 0);
	odl_tb5_close(a);
	odl_tb5_close(b);
	/* the environment variable */
	setenv("ODL_TB5_DEVICE", s, 1);
	ck_assert_int_eq(odl_tb5_open(NULL, NULL, &a), 0);
	ck_assert_int_eq(odl_tb5_open("", NULL, &b), 0);
	odl_tb5_close(a);
	odl_tb5_close(b);
	unsetenv("ODL_TB5_DEVICE");
}
END_TEST

/* ------------------------------------------------------------------ */
/* several ports on one device, threads on one handle */

static int port_child(const char *name, void *arg)
{
	(void)arg;
	odl_tb5_t *h[3];
	struct odl_tb5_open_opts o;
	struct odl_tb5_completion c;
	uint32_t id[3];
	uint8_t *b[3];

	for (int p = 0; p < 3; p++) {
		odl_tb5_open_opts_init(&o);
		o.port = (uint32_t)(p + 1) * 7;
		h[p] = xopen(spec(name, 'a'), &o);
		if (!h[p] || odl_tb5_buf_alloc(h[p], 64, 0, &id[p], (void **)&b[p]))
			return 10;
	}
	/* reverse order: each port's data must land on its own port */
	for (int p = 2; p >= 0; p--) {
		memset(b[p], 'A' + p, 64);
		if (odl_tb5_send(h[p], id[p], 0, (uint64_t)(p + 1), 0, 0) ||
		    poll1(h[p], &c, 5000) != 1 || c.status)
			return 11;
	}
	for (int p = 0; p < 3; p++) {
		if (odl_tb5_post_recv(h[p], id[p], 0, 64, 0, 0) ||
		    poll1(h[p], &c, 5000) != 1 || c.status)
			return 12;
		odl_tb5_close(h[p]);
	}
	return 0;
}

START_TEST(t_ports)
{
	const char *n = newname();
	struct odl_tb5_open_opts o;
	struct odl_tb5_completion c;
	struct odl_tb5_info info;
	odl_tb5_t *h[3];
	uint32_t id[3];
	uint8_t *b[3];
	pid_t pid = run_child(port_child, n, NULL);

	for (int p = 0; p < 3; p++) {
		odl_tb5_open_opts_init(&o);
		o.port = (uint32_t)(p + 1) * 7;
		h[p] = xopen(spec(n, 'b'), &o);
		ck_assert_ptr_nonnull(h[p]);
		ck_assert_int_eq(odl_tb5_info(h[p], &info), 0);
		ck_assert_uint_eq(info.port, (uint32_t)(p + 1) * 7);
		ck_assert_int_eq(odl_tb5_buf_alloc(h[p], 64, 0, &id[p], (void **)&b[p]), 0);
	}
	for (int p = 0; p < 3; p++) {
		ck_assert_int_eq(odl_tb5_post_recv(h[p], id[p], 0, 64, 0, 0), 0);
		ck_assert_int_eq(poll1(h[p], &c, 5000), 1);
		ck_assert_int_eq(c.status, 0);
		ck_assert_uint_eq(c.length, (uint64_t)p + 1);
		for (int i = 0; i <= p; i++)
			ck_assert_uint_eq(b[p][i], 'A' + p);
		ck_assert_int_eq(odl_tb5_send(h[p], id[p], 0, 0, 0, 0), 0);
	}
	ck_assert_int_eq(child_status(pid), 0);
	for (int p = 0; p < 3; p++)
		odl_tb5_close(h[p]);
}
END_TEST

/* API 1.5: odl_tb5_send_to; shm joins one port number's two handles only */
START_TEST(t_send_to)
{
	const char *n = newname();
	struct odl_tb5_open_opts o;
	struct odl_tb5_completion c;
	struct odl_tb5_info info;
	struct odl_tb5_stats st;
	odl_tb5_t *a, *b;
	uint32_t ia, ib;
	uint8_t *pa, *pb;

	odl_tb5_open_opts_init(&o);
	o.port = 9;
	a = xopen(spec(n, 'a'), &o);
	b = xopen(spec(n, 'b'), &o);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(odl_tb5_info(a, &info), 0);
	ck_assert_uint_eq(info.features & ODL_TB5_FEAT_PORTS, 0);
	ck_assert_int_eq(odl_tb5_buf_alloc(a, 64, 0, &ia, (void **)&pa), 0);
	ck_assert_int_eq(odl_tb5_buf_alloc(b, 64, 0, &ib, (void **)&pb), 0);
	memset(pa, 'Q', 64);
	/* refused before anything is queued */
	ck_assert_int_eq(odl_tb5_send_to(a, ODL_TB5_MAX_PORT + 1, ia, 0, 8, 0, 1, 0), -EINVAL);
	ck_assert_int_eq(odl_tb5_send_to(a, 10, ia, 0, 8, 0, 1, 0), -EOPNOTSUPP);
	ck_assert_int_eq(odl_tb5_send_to(NULL, 9, ia, 0, 8, 0, 1, 0), -EINVAL);
	ck_assert_int_eq(odl_tb5_send_to(a, 9, 999, 0, 8, 0, 1, 0), -ENOENT);
	/* nothing queued: the buffer is free to go */
	ck_assert_int_eq(odl_tb5_buf_free(a, ia), 0);
	ck_assert_int_eq(odl_tb5_buf_alloc(a, 64, 0, &ia, (void **)&pa), 0);
	memset(pa, 'Q', 64);
	/* its own port, by number and by 0: delivered in order */
	ck_assert_int_eq(odl_tb5_post_recv(b, ib, 0, 32, 7, 0), 0);
	ck_assert_int_eq(odl_tb5_post_recv(b, ib, 32, 32, 8, 0), 0);
	ck_assert_int_eq(odl_tb5_send_to(a, 9, ia, 0, 5, 0, 1, 0), 0);
	ck_assert_int_eq(odl_tb5_send_to(a, 0, ia, 0, 6, 0, 2, 0), 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(poll1(b, &c, 5000), 1);
		ck_assert_int_eq(c.status, 0);
		ck_assert_uint_eq(c.cookie, 7u + (unsigned)i);
		ck_assert_uint_eq(c.length, 5u + (unsigned)i);
		ck_assert_uint_eq(pb[32 * i], 'Q');
	}
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(poll1(a, &c, 5000), 1);
		ck_assert_int_eq(c.status, 0);
	}
	ck_assert_int_eq(odl_tb5_stats(a, &st), 0);
	ck_assert_uint_eq(st.tx_msgs, 2);
	odl_tb5_close(a);
	odl_tb5_close(b);
}
END_TEST

struct thr {
	odl_tb5_t *h;
	uint32_t id;
	int base;
	int n;
};

static void *thr_send(void *arg)
{
	struct thr *t = arg;

	for (int i = 0; i < t->n; i++)
		if (odl_tb5_send(t->h, t->id, 0, 8, (uint64_t)(t->base + i), 0))
			return (void *)1;
	return NULL;
}

static int count_child(const char *name, void *arg)
{
	int n = *(int *)arg, got = 0;
	odl_tb5_t *h = xopen(spec(name, 'b'), NULL);
	struct odl_tb5_completion c[32];
	uint32_t id;
	void *b;

	if (!h || odl_tb5_buf_alloc(h, 8 * 64, 0, &id, &b))
		return 10;
	for (int i = 0; i < 64; i++)
		odl_tb5_post_recv(h, id, (uint64_t)i * 8, 8, (uint64_t)i, 0);
	while (got < n) {
		int r = odl_tb5_poll(h, c, 32, 5000, 0);

		if (r <= 0)
			return 11;
		for (int k = 0; k < r; k++) {
			if (c[k].status)
				return 12;
			if (got + 64 + k < n + 64 &&
			    odl_tb5_post_recv(h, id, c[k].offset, 8, c[k].cookie, 0))
				return 13;
		}
		got += r;
	}
	if (odl_tb5_send(h, id, 0, 0, 0, 0) || odl_tb5_poll(h, c, 1, 5000, 0) != 1)
		return 14;
	odl_tb5_close(h);
	return 0;
}

START_TEST(t_threads)
{
	const char *n = newname();
	int total = 4 * 500, done = 0;
	struct odl_tb5_open_opts o;
	struct odl_tb5_completion c[64];
	pthread_t th[4];
	struct thr t[4];
	odl_tb5_t *h;
	uint32_t id, rid;
	void *b;
	pid_t pid = run_child(count_child, n, &total);

	odl_tb5_open_opts_init(&o);
	o.tx_depth = 16;
	h = xopen(spec(n, 'a'), &o);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 64, 0, &id, &b), 0);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 64, 0, &rid, &b), 0);
	ck_assert_int_eq(odl_tb5_post_recv(h, rid, 0, 64, 1u << 31, 0), 0);
	for (int i = 0; i < 4; i++) {
		t[i] = (struct thr){ h, id, i * 1000, 500 };
		pthread_create(&th[i], NULL, thr_send, &t[i]);
	}
	/* this thread reaps while the others send (they block on a full queue) */
	while (done < total + 1) {
		int r = odl_tb5_poll(h, c, 64, 5000, 0);

		ck_assert_int_gt(r, 0);
		for (int k = 0; k < r; k++)
			ck_assert_int_eq(c[k].status, 0);
		done += r;
	}
	for (int i = 0; i < 4; i++) {
		void *rv;

		pthread_join(th[i], &rv);
		ck_assert_ptr_null(rv);
	}
	ck_assert_int_eq(child_status(pid), 0);
	odl_tb5_close(h);
}
END_TEST

/* ------------------------------------------------------------------ */
/* hostile peer: garbage in the ring → protocol error, no crash */

START_TEST(t_corrupt_peer)
{
	const char *n = newname();
	struct odl_tb5_completion c;
	odl_tb5_t *h = xopen(spec(n, 'b'), NULL), *a;
	char path[128];
	uint8_t *m;
	uint32_t id;
	void *b;
	int fd;
	struct stat st;

	ck_assert_ptr_nonnull(h);
	a = xopen(spec(n, 'a'), NULL);
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 64, 0, &id, &b), 0);
	ck_assert_int_eq(odl_tb5_post_recv(h, id, 0, 64, 1, 0), 0);
	snprintf(path, sizeof(path), "/dev/shm/odl_tb5.%s.1", n);
	fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	/* a bogus message header in ring a→b and a producer index past it */
	memset(m + 4096, 0x5a, 16);
	{
		/* prod[0] lives after the header page's side records: find it
		 * by writing a value and letting the receiver check it */
		uint64_t *prod0 = (uint64_t *)(m + 64 + 2 * 64);

		*prod0 = 16;
	}
	munmap(m, (size_t)st.st_size);
	close(fd);
	ck_assert_int_eq(poll1(h, &c, 2000), 1);
	ck_assert_int_eq(c.status, -EPROTO);
	ck_assert_int_eq(odl_tb5_state(h), ODL_TB5_STATE_ERROR);
	ck_assert_int_eq(poll1(h, &c, 100), -EPROTO);
	ck_assert_int_eq(odl_tb5_send(h, id, 0, 1, 1, 0), -EPROTO);
	/* the other side sees the channel go down */
	ck_assert_int_eq(odl_tb5_wait_peer(a, 1000), -ECONNRESET);
	odl_tb5_close(a);
	odl_tb5_close(h);
}
END_TEST

/* ------------------------------------------------------------------ */
/* lost messages: the peer's messages 3 and 7 never arrive
 * (ODL_TB5_SHM_DROP, the shm counterpart of the driver's MSG_LOST event)
 */

static int lossy_sender(const char *name, void *arg)
{
	struct odl_tb5_completion c;
	odl_tb5_t *h;
	uint32_t id;
	uint8_t *b;
	int i, got = 0;

	(void)arg;
	setenv("ODL_TB5_SHM_DROP", "3/4", 1);
	h = xopen(spec(name, 'a'), NULL);
	if (!h || odl_tb5_buf_alloc(h, 8 * 4096, 0, &id, (void **)&b))
		return 10;
	for (i = 1; i <= 8; i++) {
		fill(b + (i - 1) * 4096, 100 + i, (uint64_t)i);
		if (odl_tb5_send(h, id, (uint64_t)(i - 1) * 4096, 100 + (uint64_t)i,
				 (uint64_t)i, 0))
			return 11;
	}
	/* every send completes OK: the sender cannot tell */
	while (got < 8) {
		if (poll1(h, &c, 5000) != 1 || c.status)
			return 12;
		got++;
	}
	odl_tb5_close(h);
	return 0;
}

START_TEST(t_lost_message)
{
	const char *n = newname();
	struct odl_tb5_completion c[8];
	struct odl_tb5_stats st;
	odl_tb5_t *h;
	uint32_t id;
	uint8_t *b;
	pid_t pid;
	int i;

	/* the fault injector's syntax is checked */
	setenv("ODL_TB5_SHM_DROP", "x", 1);
	ck_assert_int_eq(odl_tb5_open(spec(n, 'b'), NULL, &h), -EINVAL);
	setenv("ODL_TB5_SHM_DROP", "0", 1);
	ck_assert_int_eq(odl_tb5_open(spec(n, 'b'), NULL, &h), -EINVAL);
	unsetenv("ODL_TB5_SHM_DROP");

	h = xopen(spec(n, 'b'), NULL);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 8 * 4096, 0, &id, (void **)&b), 0);
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(odl_tb5_post_recv(h, id, (uint64_t)i * 4096, 4096,
						   (uint64_t)(i + 1), 0), 0);
	pid = run_child(lossy_sender, n, NULL);
	ck_assert_int_eq(child_status(pid), 0);

	/* in order: 1, 2, then the loss, then 4 5 6, the loss, 8 */
	ck_assert_int_eq(odl_tb5_poll(h, c, 8, 5000, 0), 2);
	ck_assert_int_eq(odl_tb5_poll(h, c + 2, 8, 5000, 0), -EBADMSG);
	ck_assert_int_eq(errno, EBADMSG);
	ck_assert_int_eq(odl_tb5_poll(h, c + 2, 8, 5000, 0), 3);
	ck_assert_int_eq(odl_tb5_poll(h, c + 5, 1, 5000, 0), -EBADMSG);
	ck_assert_int_eq(odl_tb5_poll(h, c + 5, 1, 5000, 0), 1);
	{
		static const int msg[6] = { 1, 2, 4, 5, 6, 8 };

		/* no receive was used up by a lost message: the k-th receive
		 * holds the k-th message that arrived
		 */
		for (i = 0; i < 6; i++) {
			ck_assert_int_eq(c[i].status, 0);
			ck_assert_uint_eq(c[i].op, ODL_TB5_OP_RECV);
			ck_assert_uint_eq(c[i].cookie, (uint64_t)i + 1);
			ck_assert_uint_eq(c[i].length, 100 + (uint64_t)msg[i]);
			ck_assert_int_eq(check_fill(b + i * 4096, 100 + (size_t)msg[i],
						    (uint64_t)msg[i]), 0);
		}
	}
	ck_assert_int_eq(odl_tb5_stats(h, &st), 0);
	ck_assert_uint_eq(st.rx_lost, 2);
	ck_assert_uint_eq(st.rx_msgs, 6);
	ck_assert_uint_eq(st.rx_errors, 0);
	/* the sender has left: the two receives left over end the channel */
	ck_assert_int_eq(poll1(h, c, 5000), 1);
	ck_assert_int_eq(c[0].status, -ECONNRESET);
	odl_tb5_close(h);
}
END_TEST

/* ------------------------------------------------------------------ */
/* odl_tb5_poll_min (API 1.2): a wait for several completions */

static int spaced_sender(const char *name, void *arg)
{
	static const int at_ms[8] = { 0, 30, 60, 90, 300, 400, 400, 500 };
	struct odl_tb5_completion c;
	uint64_t t0;
	odl_tb5_t *h;
	uint32_t id;
	uint8_t *b;
	int i, got = 0;

	(void)arg;
	h = xopen(spec(name, 'a'), NULL);
	if (!h || odl_tb5_buf_alloc(h, 8 * 64, 0, &id, (void **)&b) ||
	    odl_tb5_wait_peer(h, 5000))
		return 10;
	t0 = now_ms();
	for (i = 0; i < 8; i++) {
		while (now_ms() - t0 < (uint64_t)at_ms[i])
			usleep(1000);
		fill(b + i * 64, 64, (uint64_t)i + 1);
		if (odl_tb5_send(h, id, (uint64_t)i * 64, 64, (uint64_t)i + 1, 0))
			return 11;
	}
	while (got < 8) {
		if (poll1(h, &c, 5000) != 1 || c.status)
			return 12;
		got++;
	}
	odl_tb5_close(h);
	return 0;
}

START_TEST(t_poll_min)
{
	const char *n = newname();
	struct odl_tb5_open_opts o;
	struct odl_tb5_completion c[8];
	odl_tb5_t *h;
	uint32_t id;
	uint8_t *b;
	pid_t pid;
	int i;

	/* batch mode is accepted (and changes nothing on shm) */
	odl_tb5_open_opts_init(&o);
	o.flags = ODL_TB5_OPEN_BATCH;
	h = xopen(spec(n, 'b'), &o);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 8 * 64, 0, &id, (void **)&b), 0);
	ck_assert_int_eq(odl_tb5_poll_min(h, c, 8, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(odl_tb5_poll_min(h, c, 4, 5, 0, 0), -EINVAL);
	ck_assert_int_eq(odl_tb5_poll_min(NULL, c, 4, 1, 0, 0), -EINVAL);
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(odl_tb5_post_recv(h, id, (uint64_t)i * 64, 64,
						   (uint64_t)i + 1, 0), 0);
	pid = run_child(spaced_sender, n, NULL);
	/* messages 30 ms apart: one call returns all four (poll would
	 * return the first alone)
	 */
	ck_assert_int_eq(odl_tb5_poll_min(h, c, 4, 4, 5000, 0), 4);
	/* then three more, in one call */
	ck_assert_int_eq(odl_tb5_poll_min(h, c + 4, 3, 3, 5000, 0), 3);
	/* one receive left: min 8 is capped to what can complete */
	ck_assert_int_eq(odl_tb5_poll_min(h, c + 7, 8, 8, 5000, 0), 1);
	for (i = 0; i < 8; i++) {
		ck_assert_int_eq(c[i].status, 0);
		ck_assert_uint_eq(c[i].cookie, (uint64_t)i + 1);
		ck_assert_int_eq(check_fill(b + i * 64, 64, (uint64_t)i + 1), 0);
	}
	ck_assert_int_eq(child_status(pid), 0);
	odl_tb5_close(h);
}
END_TEST


/* ------------------------------------------------------------------ */
/* keyed messages (API 1.3) */

#define KN 16
#define KLATE 7

static int keyed_sender(const char *name, void *arg)
{
	struct odl_tb5_completion c;
	odl_tb5_t *h;
	uint32_t id;
	uint8_t *b;
	int k, n = 0, got = 0;

	(void)arg;
	h = xopen(spec(name, 'a'), NULL);
	if (!h || odl_tb5_buf_alloc(h, (KN + 2) * 4096, 0, &id, (void **)&b) ||
	    odl_tb5_wait_peer(h, 5000))
		return 10;
	for (k = 0; k < KN; k++)
		fill(b + k * 4096, 1000 + (size_t)k, (uint64_t)k + 1);
	memcpy(b + KN * 4096, "U0", 2);
	memcpy(b + KN * 4096 + 64, "U1", 2);
	/* the late one first: its receive is posted only at the end */
	if (odl_tb5_send_key(h, id, KLATE * 4096, 1000 + KLATE, 100 + KLATE, KLATE, 0))
		return 11;
	for (k = 0; k < KN; k++) {
		if (k == KLATE)
			continue;
		if (odl_tb5_send_key(h, id, (uint64_t)k * 4096, 1000 + (uint64_t)k,
				     100 + (uint32_t)k, (uint64_t)k, 0))
			return 12;
		if (++n == 3 && odl_tb5_send(h, id, KN * 4096, 2, 500, 0))
			return 13;
	}
	if (odl_tb5_send(h, id, KN * 4096 + 64, 2, 501, 0) ||
	    odl_tb5_send_key(h, id, 0, 100, 555, 555, 0))
		return 14;
	while (got < KN + 3) {
		if (poll1(h, &c, 5000) != 1 || c.status)
			return 15;
		got++;
	}
	odl_tb5_close(h);
	return 0;
}

START_TEST(t_keyed)
{
	const char *n = newname();
	struct odl_tb5_completion c;
	struct odl_tb5_info info;
	int k, got = 0, unkeyed = 0, cancelled = 0;
	uint8_t *mem, *b, *ub;
	uint32_t id, uid;
	odl_tb5_t *h;
	pid_t pid;

	h = xopen(spec(n, 'b'), NULL);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(odl_tb5_info(h, &info), 0);
	ck_assert(info.features & ODL_TB5_FEAT_KEYED);
	/* caller memory, moved straight (REG_DIRECT), not page aligned */
	mem = malloc(KN * 4096 + 64);
	ck_assert_ptr_nonnull(mem);
	b = mem + 24;
	memset(b, 0x5a, KN * 4096);
	ck_assert_int_eq(odl_tb5_buf_register_flags(h, b, KN * 4096, 2, &id), -EINVAL);
	ck_assert_int_eq(odl_tb5_buf_register_flags(h, b, KN * 4096,
						    ODL_TB5_REG_DIRECT, &id), 0);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 4096, ODL_TB5_BUF_RECV, &uid, (void **)&ub), 0);
	for (k = KN - 1; k >= 0; k--)
		if (k != KLATE)
			ck_assert_int_eq(odl_tb5_post_recv_key(h, id, (uint64_t)k * 4096, 4096,
							       100 + (uint32_t)k, (uint64_t)k, 0), 0);
	ck_assert_int_eq(odl_tb5_post_recv_key(h, id, 0, 4096, 100, 77, 0), -EEXIST);
	ck_assert_int_eq(odl_tb5_post_recv(h, uid, 0, 64, 500, 0), 0);
	ck_assert_int_eq(odl_tb5_post_recv(h, uid, 64, 64, 501, 0), 0);
	ck_assert_int_eq(odl_tb5_post_recv_key(h, uid, 128, 64, 999, 999, 0), 0);
	ck_assert_int_eq(odl_tb5_cancel_recv(h, 999), 0);
	ck_assert_int_eq(odl_tb5_cancel_recv(h, 999), -ENOENT);
	ck_assert_int_eq(odl_tb5_cancel_recv(h, 0), -EINVAL);
	ck_assert_int_eq(odl_tb5_cancel_recv(NULL, 1), -EINVAL);
	pid = run_child(keyed_sender, n, NULL);
	while (got < KN - 1 || unkeyed < 2 || !cancelled) {
		ck_assert_int_eq(poll1(h, &c, 5000), 1);
		if (c.cookie == 999) {
			ck_assert_int_eq(c.status, -ECANCELED);
			cancelled = 1;
			continue;
		}
		if (c.cookie >= 500) {
			/* unkeyed: in order, between the keyed ones */
			ck_assert_uint_eq(c.cookie, 500 + (uint64_t)unkeyed);
			ck_assert_int_eq(c.status, 0);
			ck_assert_int_eq(ub[64 * unkeyed + 1], '0' + unkeyed);
			unkeyed++;
			continue;
		}
		k = (int)c.cookie;
		ck_assert_int_ne(k, KLATE);
		ck_assert_int_eq(c.status, 0);
		ck_assert_uint_eq(c.length, 1000 + (uint64_t)k);
		ck_assert_int_eq(check_fill(b + k * 4096, 1000 + (size_t)k, (uint64_t)k + 1), 0);
		ck_assert_int_eq(b[k * 4096 + 1000 + k], 0x5a);	/* nothing past it */
		got++;
	}
	/* the first message sent waited aside for its receive */
	ck_assert_int_eq(odl_tb5_post_recv_key(h, id, KLATE * 4096, 4096, 100 + KLATE,
					       KLATE, 0), 0);
	ck_assert_int_eq(poll1(h, &c, 5000), 1);
	ck_assert_uint_eq(c.cookie, KLATE);
	ck_assert_int_eq(c.status, 0);
	ck_assert_int_eq(check_fill(b + KLATE * 4096, 1000 + KLATE, KLATE + 1), 0);
	/* a keyed message larger than its receive: -EMSGSIZE, real length */
	ck_assert_int_eq(odl_tb5_post_recv_key(h, id, 0, 10, 555, 555, 0), 0);
	ck_assert_int_eq(poll1(h, &c, 5000), 1);
	ck_assert_uint_eq(c.cookie, 555);
	ck_assert_int_eq(c.status, -EMSGSIZE);
	ck_assert_uint_eq(c.length, 100);
	ck_assert_int_eq(child_status(pid), 0);
	odl_tb5_close(h);
	free(mem);
}
END_TEST

/*
 * Keyed messages nobody receives (API 1.6): a message for a key whose
 * receive was withdrawn is skipped on arrival; one held aside for good
 * gives way, after ODL_TB5_SHM_STALL_MS, when its room is needed.
 */
#define WN 70	/* more than the 64 messages the library holds aside */

/* arg: 1 = keys 1..WN+1 (the last one fill 7), 2 = keys 1..WN (key k: fill
 * k); then "U0" unkeyed; then wait for the receiver's one-byte reply */
static int withdrawn_sender(const char *name, void *arg)
{
	int mode = *(int *)arg, last = mode == 1 ? WN + 1 : WN, k;
	struct odl_tb5_completion c;
	odl_tb5_t *h;
	uint32_t id;
	uint8_t *b;

	h = xopen(spec(name, 'a'), NULL);
	if (!h || odl_tb5_buf_alloc(h, (WN + 2) * 128, 0, &id, (void **)&b) ||
	    odl_tb5_wait_peer(h, 5000))
		return 10;
	for (k = 1; k <= last; k++) {
		fill(b + k * 128, 100, mode == 1 ? 7 : (uint64_t)k);
		if (odl_tb5_send_key(h, id, (uint64_t)k * 128, 100, (uint32_t)k,
				     (uint64_t)k, 0) ||
		    poll1(h, &c, 5000) != 1 || c.status)
			return 11;
	}
	memcpy(b, "U0", 2);
	if (odl_tb5_send(h, id, 0, 2, 0, 0) || poll1(h, &c, 5000) != 1 || c.status)
		return 12;
	if (odl_tb5_post_recv(h, id, 0, 128, 1, 0) || poll1(h, &c, 10000) != 1 ||
	    c.status)
		return 13;
	odl_tb5_close(h);
	return 0;
}

/* the one-byte reply that lets the sender go */
static void reply_sender(odl_tb5_t *h, uint32_t id)
{
	struct odl_tb5_completion c;

	ck_assert_int_eq(odl_tb5_send(h, id, 0, 1, 3000, 0), 0);
	ck_assert_int_eq(poll1(h, &c, 5000), 1);
	ck_assert_uint_eq(c.cookie, 3000);
	ck_assert_int_eq(c.status, 0);
}

START_TEST(t_keyed_withdrawn)
{
	const char *n = newname();
	struct odl_tb5_completion c;
	struct odl_tb5_stats st;
	int k, mode = 1;
	odl_tb5_t *h;
	uint32_t id;
	uint8_t *b;
	pid_t pid;

	h = xopen(spec(n, 'b'), NULL);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 8192, 0, &id, (void **)&b), 0);
	/* more withdrawn keys than messages that could be held aside */
	for (k = 1; k <= WN + 1; k++) {
		ck_assert_int_eq(odl_tb5_post_recv_key(h, id, 0, 4096, (uint32_t)k,
						       (uint64_t)k, 0), 0);
		ck_assert_int_eq(odl_tb5_cancel_recv(h, (uint32_t)k), 0);
		ck_assert_int_eq(poll1(h, &c, 5000), 1);
		ck_assert_uint_eq(c.cookie, (uint64_t)k);
		ck_assert_int_eq(c.status, -ECANCELED);
	}
	/* the last key is posted again: its message is wanted after all */
	ck_assert_int_eq(odl_tb5_post_recv_key(h, id, 0, 4096, WN + 1, 1000, 0), 0);
	ck_assert_int_eq(odl_tb5_post_recv(h, id, 4096, 64, 2000, 0), 0);
	pid = run_child(withdrawn_sender, n, &mode);
	/* held aside, the withdrawn keys' 70 messages would stop the stream
	 * at the 65th for ODL_TB5_SHM_STALL_MS (10 s) */
	ck_assert_int_eq(poll1(h, &c, 5000), 1);
	ck_assert_uint_eq(c.cookie, 1000);
	ck_assert_int_eq(c.status, 0);
	ck_assert_uint_eq(c.length, 100);
	ck_assert_int_eq(check_fill(b, 100, 7), 0);
	ck_assert_int_eq(poll1(h, &c, 5000), 1);
	ck_assert_uint_eq(c.cookie, 2000);
	ck_assert_int_eq(c.status, 0);
	ck_assert_int_eq(memcmp(b + 4096, "U0", 2), 0);
	/* 64 withdrawn keys are remembered: the 7 oldest (1..7) were
	 * forgotten, their messages held aside; 8..70 skipped */
	ck_assert_int_eq(odl_tb5_post_recv_key(h, id, 0, 4096, 8, 8, 0), 0);
	ck_assert_int_eq(poll1(h, &c, 300), -ETIMEDOUT);
	ck_assert_int_eq(odl_tb5_cancel_recv(h, 8), 0);
	ck_assert_int_eq(poll1(h, &c, 5000), 1);
	ck_assert_int_eq(c.status, -ECANCELED);
	for (k = 1; k <= 7; k++) {
		memset(b, 0, 4096);
		ck_assert_int_eq(odl_tb5_post_recv_key(h, id, 0, 4096, (uint32_t)k,
						       (uint64_t)k, 0), 0);
		ck_assert_int_eq(poll1(h, &c, 5000), 1);
		ck_assert_uint_eq(c.cookie, (uint64_t)k);
		ck_assert_int_eq(c.status, 0);
		ck_assert_int_eq(check_fill(b, 100, 7), 0);
	}
	ck_assert_int_eq(odl_tb5_stats(h, &st), 0);
	ck_assert_uint_eq(st.rx_lost, 0);
	ck_assert_uint_eq(st.rx_msgs, 9);
	reply_sender(h, id);
	ck_assert_int_eq(child_status(pid), 0);
	odl_tb5_close(h);
}
END_TEST

START_TEST(t_stage_stale)
{
	const char *n = newname();
	struct odl_tb5_completion c;
	struct odl_tb5_stats st;
	int k, lost = 0, mode = 2, r;
	odl_tb5_t *h;
	uint32_t id;
	uint8_t *b;
	pid_t pid;

	setenv("ODL_TB5_SHM_STALL_MS", "x", 1);
	ck_assert_int_eq(odl_tb5_open(spec(n, 'b'), NULL, &h), -EINVAL);
	setenv("ODL_TB5_SHM_STALL_MS", "0", 1);
	ck_assert_int_eq(odl_tb5_open(spec(n, 'b'), NULL, &h), -EINVAL);
	setenv("ODL_TB5_SHM_STALL_MS", "300", 1);
	h = xopen(spec(n, 'b'), NULL);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, (WN + 2) * 128, 0, &id, (void **)&b), 0);
	ck_assert_int_eq(odl_tb5_post_recv(h, id, 0, 64, 2000, 0), 0);
	pid = run_child(withdrawn_sender, n, &mode);
	/* 70 keyed messages with no receive: 64 are held aside, then the
	 * oldest ones give way, each once it has waited 300 ms, reported
	 * lost in order before the unkeyed message behind them */
	while ((r = poll1(h, &c, 5000)) == -EBADMSG)
		lost++;
	ck_assert_int_eq(r, 1);
	ck_assert_int_eq(lost, WN - 64);
	ck_assert_uint_eq(c.cookie, 2000);
	ck_assert_int_eq(c.status, 0);
	ck_assert_int_eq(memcmp(b, "U0", 2), 0);
	/* the rest is still there for its receives, the oldest are gone */
	for (k = WN; k >= 1; k--)
		ck_assert_int_eq(odl_tb5_post_recv_key(h, id, (uint64_t)k * 128, 128,
						       (uint32_t)k, (uint64_t)k, 0), 0);
	for (k = lost + 1; k <= WN; k++) {
		ck_assert_int_eq(poll1(h, &c, 5000), 1);
		ck_assert_int_eq(c.status, 0);
		ck_assert_uint_eq(c.length, 100);
		ck_assert_int_eq(check_fill(b + c.cookie * 128, 100, c.cookie), 0);
		ck_assert_uint_gt(c.cookie, (uint64_t)lost);
	}
	for (k = 1; k <= lost; k++)
		ck_assert_int_eq(odl_tb5_cancel_recv(h, (uint32_t)k), 0);
	for (k = 1; k <= lost; k++) {
		ck_assert_int_eq(poll1(h, &c, 5000), 1);
		ck_assert_int_eq(c.status, -ECANCELED);
	}
	ck_assert_int_eq(odl_tb5_stats(h, &st), 0);
	ck_assert_uint_eq(st.rx_lost, WN - 64);
	reply_sender(h, id);
	ck_assert_int_eq(child_status(pid), 0);
	odl_tb5_close(h);
	unsetenv("ODL_TB5_SHM_STALL_MS");
}
END_TEST

/* a keyed message that could never be held aside (more than its 16 MiB)
 * waits for its receive; stale ones held do not give way for nothing */
#define BIGK ((17u << 20) + 5)

static int big_keyed_sender(const char *name, void *arg)
{
	struct odl_tb5_completion c;
	odl_tb5_t *h;
	uint32_t id;
	uint8_t *b;

	(void)arg;
	h = xopen(spec(name, 'a'), NULL);
	if (!h || odl_tb5_buf_alloc(h, BIGK + 4096, 0, &id, (void **)&b) ||
	    odl_tb5_wait_peer(h, 5000))
		return 10;
	fill(b, 100, 1);
	fill(b + 4096, BIGK, 2);
	if (odl_tb5_send_key(h, id, 0, 100, 1, 1, 0) ||
	    odl_tb5_send_key(h, id, 4096, BIGK, 2, 2, 0))
		return 11;
	memcpy(b, "U0", 2);
	if (poll1(h, &c, 5000) != 1 || c.status)
		return 12;
	/* the first send is done: its buffer takes the unkeyed one */
	if (odl_tb5_send(h, id, 0, 2, 3, 0))
		return 13;
	if (poll1(h, &c, 20000) != 1 || c.status || poll1(h, &c, 20000) != 1 || c.status)
		return 14;
	if (odl_tb5_post_recv(h, id, 0, 128, 4, 0) || poll1(h, &c, 10000) != 1 ||
	    c.status)
		return 15;
	odl_tb5_close(h);
	return 0;
}

START_TEST(t_stage_no_room)
{
	const char *n = newname();
	struct odl_tb5_completion c;
	struct odl_tb5_stats st;
	odl_tb5_t *h;
	uint32_t id;
	uint8_t *b;
	pid_t pid;

	setenv("ODL_TB5_SHM_STALL_MS", "100", 1);
	h = xopen(spec(n, 'b'), NULL);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, BIGK + 8192, 0, &id, (void **)&b), 0);
	ck_assert_int_eq(odl_tb5_post_recv(h, id, 0, 64, 3, 0), 0);
	pid = run_child(big_keyed_sender, n, NULL);
	/* key 1 is held aside and stale after 100 ms; key 2 waits: giving
	 * key 1 up would not make room for it */
	ck_assert_int_eq(poll1(h, &c, 1000), -ETIMEDOUT);
	ck_assert_int_eq(odl_tb5_post_recv_key(h, id, 4096, BIGK, 2, 2, 0), 0);
	ck_assert_int_eq(poll1(h, &c, 20000), 1);
	ck_assert_uint_eq(c.cookie, 2);
	ck_assert_int_eq(c.status, 0);
	ck_assert_uint_eq(c.length, BIGK);
	ck_assert_int_eq(check_fill(b + 4096, BIGK, 2), 0);
	ck_assert_int_eq(poll1(h, &c, 5000), 1);
	ck_assert_uint_eq(c.cookie, 3);
	ck_assert_int_eq(memcmp(b, "U0", 2), 0);
	ck_assert_int_eq(odl_tb5_post_recv_key(h, id, 128, 128, 1, 1, 0), 0);
	ck_assert_int_eq(poll1(h, &c, 5000), 1);
	ck_assert_uint_eq(c.cookie, 1);
	ck_assert_int_eq(c.status, 0);
	ck_assert_int_eq(check_fill(b + 128, 100, 1), 0);
	ck_assert_int_eq(odl_tb5_stats(h, &st), 0);
	ck_assert_uint_eq(st.rx_lost, 0);
	reply_sender(h, id);
	ck_assert_int_eq(child_status(pid), 0);
	odl_tb5_close(h);
	unsetenv("ODL_TB5_SHM_STALL_MS");
}
END_TEST

/* ------------------------------------------------------------------ */
/* urgent sends (API 1.4) */

#define UN 70		/* urgent messages: more than the 64 one may be overtaken by */
#define UBIG 100000	/* the big ones: more than the 64 KiB ring */
#define USTRIDE (UBIG + 4096)	/* receive i at i * USTRIDE */
static int g_upipe[2];

/* message k's length: 0 and 1 big, then UN small ones */
static uint64_t ulen(int k)
{
	return k < 2 ? UBIG + (uint64_t)k : 16 + (uint64_t)k;
}

/* where message k is in the sender's buffer (k = 2 + UN: its size) */
static uint64_t uoff(int k)
{
	return k < 2 ? (uint64_t)k * (UBIG + 64) : 2 * (UBIG + 64) + (uint64_t)(k - 2) * 128;
}

/* sends big 0 (starts: it fills the ring the receiver does not read yet),
 * big 1 (queued), then UN small ones, urgent if arg; then lets the receiver
 * go and waits for every send */
static int urgent_sender(const char *name, void *arg)
{
	struct odl_tb5_open_opts o;
	struct odl_tb5_completion c;
	uint32_t flags = arg ? ODL_TB5_F_URGENT : 0;
	odl_tb5_t *h;
	uint32_t id;
	uint8_t *b;
	char go = 'g';

	odl_tb5_open_opts_init(&o);
	o.ring_bytes = 64 << 10;
	h = xopen(spec(name, 'a'), &o);
	if (!h || odl_tb5_buf_alloc(h, uoff(2 + UN), ODL_TB5_BUF_SEND, &id, (void **)&b))
		return 10;
	if (odl_tb5_wait_peer(h, 5000))
		return 11;
	for (int k = 0; k < 2 + UN; k++)
		fill(b + uoff(k), ulen(k), (uint64_t)k + 1);
	for (int k = 0; k < 2 + UN; k++)
		if (odl_tb5_send(h, id, uoff(k), ulen(k), (uint64_t)k, k < 2 ? 0 : flags))
			return 12;
	if (write(g_upipe[1], &go, 1) != 1)
		return 13;
	for (int k = 0; k < 2 + UN; k++)
		if (poll1(h, &c, 10000) != 1 || c.status)
			return 14;
	odl_tb5_close(h);
	return 0;
}


/*
 * A keyed receive posted while its message is arriving aside (held back,
 * no receive posted when it began, more than the ring holds): it gets the
 * message once the rest has come. The sender writes what fits of 256 KiB
 * into a 64 KiB ring, says so through a pipe and waits until the receiver
 * has read that much aside and posted the receive.
 */
#define KS_LEN (256u << 10)
struct ks_pipes {
	int sent[2];	/* sender -> receiver: the first part is in the ring */
	int posted[2];	/* receiver -> sender: the receive is posted */
};

static int ks_sender(const char *name, void *arg)
{
	struct ks_pipes *kp = arg;
	struct odl_tb5_open_opts o;
	struct odl_tb5_completion c;
	odl_tb5_t *h;
	uint32_t id;
	uint8_t *buf;
	char x = 1;

	odl_tb5_open_opts_init(&o);
	o.ring_bytes = 64 << 10;
	h = xopen(spec(name, 'a'), &o);
	if (!h || odl_tb5_buf_alloc(h, KS_LEN, ODL_TB5_BUF_SEND, &id, (void **)&buf))
		return 10;
	if (odl_tb5_wait_peer(h, 10000))
		return 11;
	fill(buf, KS_LEN, 9);
	if (odl_tb5_send_key(h, id, 0, KS_LEN, 7, 1, 0))
		return 12;
	if (write(kp->sent[1], &x, 1) != 1 || read(kp->posted[0], &x, 1) != 1)
		return 13;
	if (poll1(h, &c, 20000) != 1 || c.status || c.cookie != 1)
		return 14;
	odl_tb5_close(h);
	return 0;
}

START_TEST(t_keyed_while_staging)
{
	const char *n = newname();
	struct odl_tb5_open_opts o;
	struct odl_tb5_completion c;
	struct ks_pipes kp;
	odl_tb5_t *h;
	uint32_t id;
	uint8_t *buf;
	char x = 1;
	pid_t pid;

	ck_assert_int_eq(pipe(kp.sent), 0);
	ck_assert_int_eq(pipe(kp.posted), 0);
	odl_tb5_open_opts_init(&o);
	o.ring_bytes = 64 << 10;
	h = xopen(spec(n, 'b'), &o);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, KS_LEN, ODL_TB5_BUF_RECV, &id, (void **)&buf), 0);
	pid = run_child(ks_sender, n, &kp);
	ck_assert_int_eq(read(kp.sent[0], &x, 1), 1);
	/* read what is in the ring aside: no receive for key 7 yet */
	ck_assert_int_eq(odl_tb5_poll(h, &c, 1, 0, 0), -EAGAIN);
	ck_assert_int_eq(odl_tb5_post_recv_key(h, id, 0, KS_LEN, 7, 5, 0), 0);
	ck_assert_int_eq(write(kp.posted[1], &x, 1), 1);
	ck_assert_int_eq(poll1(h, &c, 10000), 1);
	ck_assert_uint_eq(c.cookie, 5);
	ck_assert_int_eq(c.status, 0);
	ck_assert_uint_eq(c.length, KS_LEN);
	ck_assert_int_eq(check_fill(buf, KS_LEN, 9), 0);
	ck_assert_int_eq(child_status(pid), 0);
	odl_tb5_close(h);
}
END_TEST

/*
 * A buffer named by a send that waits for room (the backend has dropped
 * the handle's lock) cannot be freed under it: -EBUSY, and once the send
 * has given up (timeout) the buffer frees.
 */
struct fw_arg {
	odl_tb5_t *h;
	uint32_t id;
	int r;
};

static void *fw_send(void *arg)
{
	struct fw_arg *a = arg;

	a->r = odl_tb5_send(a->h, a->id, 0, 64, 99, 0);
	return NULL;
}

START_TEST(t_free_while_waiting)
{
	const char *n = newname();
	struct odl_tb5_open_opts o;
	struct odl_tb5_stats st;
	struct fw_arg a = { 0 };
	uint64_t waits, t0;
	uint32_t id, big;
	uint8_t *buf, *bb;
	pthread_t t;
	int k = 0;

	odl_tb5_open_opts_init(&o);
	o.timeout_ms = 3000;
	a.h = xopen(spec(n, 'a'), &o);
	ck_assert_ptr_nonnull(a.h);
	ck_assert_int_eq(odl_tb5_buf_alloc(a.h, 4096, ODL_TB5_BUF_SEND, &big, (void **)&bb), 0);
	ck_assert_int_eq(odl_tb5_buf_alloc(a.h, 4096, ODL_TB5_BUF_SEND, &id, (void **)&buf), 0);
	/* no peer: sends queue until the queue is full */
	while (odl_tb5_send(a.h, big, 0, 64, (uint64_t)k, ODL_TB5_F_NONBLOCK) == 0)
		ck_assert_int_lt(++k, 100000);
	ck_assert_int_eq(odl_tb5_stats(a.h, &st), 0);
	waits = st.waits;
	a.id = id;
	ck_assert_int_eq(pthread_create(&t, NULL, fw_send, &a), 0);
	t0 = now_ms();
	do {
		ck_assert_int_eq(odl_tb5_stats(a.h, &st), 0);
		ck_assert_uint_lt(now_ms() - t0, 2500);
	} while (st.waits == waits);
	/* the send waits (lock dropped): its buffer is in use */
	ck_assert_int_eq(odl_tb5_buf_free(a.h, id), -EBUSY);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(a.r, -ETIMEDOUT);
	ck_assert_int_eq(odl_tb5_buf_free(a.h, id), 0);
	odl_tb5_close(a.h);
}
END_TEST

/* the receiver's view: arrival order of the messages, every byte checked */
static void urgent_run(int urgent, int *order)
{
	const char *n = newname();
	struct odl_tb5_open_opts o;
	struct odl_tb5_completion c;
	odl_tb5_t *h;
	uint32_t id;
	uint8_t *b;
	char go;
	pid_t pid;

	ck_assert_int_eq(pipe(g_upipe), 0);
	odl_tb5_open_opts_init(&o);
	o.ring_bytes = 64 << 10;
	h = xopen(spec(n, 'b'), &o);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(odl_tb5_buf_alloc(h, (size_t)(2 + UN) * USTRIDE, ODL_TB5_BUF_RECV, &id,
					   (void **)&b), 0);
	pid = run_child(urgent_sender, n, urgent ? (void *)1 : NULL);
	ck_assert_int_eq(odl_tb5_wait_peer(h, 5000), 0);
	/* nothing read from the ring until everything is queued */
	ck_assert_int_eq(read(g_upipe[0], &go, 1), 1);
	for (int i = 0; i < 2 + UN; i++)
		ck_assert_int_eq(odl_tb5_post_recv(h, id, (uint64_t)i * USTRIDE, USTRIDE,
						   (uint64_t)i, 0), 0);
	for (int i = 0; i < 2 + UN; i++) {
		int k;

		ck_assert_int_eq(poll1(h, &c, 10000), 1);
		ck_assert_int_eq(c.status, 0);
		ck_assert_uint_eq(c.cookie, (uint64_t)i);
		for (k = 0; k < 2 + UN && ulen(k) != c.length; k++)
			;
		ck_assert_int_lt(k, 2 + UN);
		ck_assert_int_eq(check_fill(b + (size_t)i * USTRIDE, c.length, (uint64_t)k + 1), 0);
		order[i] = k;
	}
	ck_assert_int_eq(child_status(pid), 0);
	odl_tb5_close(h);
	close(g_upipe[0]);
	close(g_upipe[1]);
}

START_TEST(t_urgent)
{
	int order[2 + UN], i;
	struct odl_tb5_info info;
	odl_tb5_t *h;
	uint32_t id;
	void *p;
	struct odl_tb5_completion c;
	const char *n = newname();

	/* without the flag: in the order sent */
	urgent_run(0, order);
	for (i = 0; i < 2 + UN; i++)
		ck_assert_int_eq(order[i], i);
	/* urgent: big 0 had started; the first 64 small ones overtake big 1,
	 * the rest queue behind it (the overtake limit), all in their order */
	urgent_run(1, order);
	ck_assert_int_eq(order[0], 0);
	for (i = 1; i <= 64; i++)
		ck_assert_int_eq(order[i], i + 1);
	ck_assert_int_eq(order[65], 1);
	for (i = 66; i < 2 + UN; i++)
		ck_assert_int_eq(order[i], i);
	/* the flag's rules */
	h = xopen(spec(n, 'a'), NULL);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(odl_tb5_info(h, &info), 0);
	ck_assert(info.features & ODL_TB5_FEAT_URGENT);
	ck_assert(info.features & ODL_TB5_FEAT_EMPTY); /* 0-byte messages: always on shm */
	ck_assert_int_eq(odl_tb5_buf_alloc(h, 8192, 0, &id, &p), 0);
	ck_assert_int_eq(odl_tb5_send(h, id, 0, ODL_TB5_URGENT_MAX + 1, 1, ODL_TB5_F_URGENT),
			 -EMSGSIZE);
	ck_assert_int_eq(odl_tb5_send(h, id, 0, 8, 1, ODL_TB5_F_URGENT | (1u << 9)), -EINVAL);
	ck_assert_int_eq(odl_tb5_post_recv(h, id, 0, 8, 1, ODL_TB5_F_URGENT), -EINVAL);
	ck_assert_int_eq(odl_tb5_post_recv_key(h, id, 0, 8, 5, 1, ODL_TB5_F_URGENT), -EINVAL);
	ck_assert_int_eq(odl_tb5_poll(h, &c, 1, 0, ODL_TB5_F_URGENT), -EINVAL);
	/* an urgent send of ODL_TB5_URGENT_MAX is queued (no peer yet) */
	ck_assert_int_eq(odl_tb5_send(h, id, 0, ODL_TB5_URGENT_MAX, 2,
				      ODL_TB5_F_URGENT | ODL_TB5_F_NONBLOCK), 0);
	odl_tb5_close(h);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *userlib_suite(void)
{
	Suite *s = suite_create("userlib");
	TCase *tc = tcase_create("shm");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, t_basics);
	tcase_add_test(tc, t_bad_args);
	tcase_add_test(tc, t_ordering);
	tcase_add_test(tc, t_sizes);
	tcase_add_test(tc, t_busy_poll);
	tcase_add_test(tc, t_msgsize);
	tcase_add_test(tc, t_queued_before_peer);
	tcase_add_test(tc, t_nonblock_timeout);
	tcase_add_test(tc, t_peer_death);
	tcase_add_test(tc, t_peer_close_drain);
	tcase_add_test(tc, t_stale_recycle);
	tcase_add_test(tc, t_roles);
	tcase_add_test(tc, t_ports);
	tcase_add_test(tc, t_send_to);
	tcase_add_test(tc, t_threads);
	tcase_add_test(tc, t_corrupt_peer);
	tcase_add_test(tc, t_lost_message);
	tcase_add_test(tc, t_poll_min);
	tcase_add_test(tc, t_keyed);
	tcase_add_test(tc, t_keyed_withdrawn);
	tcase_add_test(tc, t_stage_stale);
	tcase_add_test(tc, t_stage_no_room);
	tcase_add_test(tc, t_urgent);
	tcase_add_test(tc, t_keyed_while_staging);
	tcase_add_test(tc, t_free_while_waiting);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(userlib_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
