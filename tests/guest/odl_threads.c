// SPDX-License-Identifier: MIT
/*
 * odl_threads: two threads on one libodl_tb5 handle, for the VM scenarios
 * (static, put into the guest beside odl_tb5_cli).
 *
 *   odl_threads [--device N] [--port P] recv SIZE
 *       post one receive of SIZE bytes, print "posted", wait up to 60 s for
 *       the message and check its pattern
 *   odl_threads [--device N] [--port P] shared SIZE
 *       the handle busy-polls by default; one thread waits in odl_tb5_poll
 *       (30 s bound) with nothing outstanding while the main thread sends
 *       SIZE bytes on the same handle: the send must get in while the other
 *       thread polls, and the poll must return the send's completion
 *
 * A busy-polling wait that held the handle's lock for the whole wait kept
 * the send out until the poll gave up: the poll then ends in -ETIMEDOUT
 * and the send takes the whole 30 s; both are reported and fail the run.
 * Exit 0 on success, 1 on a failed check, 2 on bad usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "odl_tb5/odl_tb5.h"

#define POLL_MS 30000
#define PEER_MS 60000

static odl_tb5_t *h;
static atomic_int polling;
static int poll_rc;
static struct odl_tb5_completion poll_c;
static double poll_s;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint8_t pat(uint64_t i)
{
	return (uint8_t)(i * 131u + (i >> 9) + 7u);
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "odl_threads: %s: %s\n", what,
		err ? odl_tb5_strerror(err) : "check failed");
	return 1;
}

static void *poller(void *arg)
{
	double t0;

	(void)arg;
	t0 = now_s();
	atomic_store(&polling, 1);
	poll_rc = odl_tb5_poll(h, &poll_c, 1, POLL_MS, 0);
	poll_s = now_s() - t0;
	return NULL;
}

static int open_dev(int dev, unsigned int port, bool busy, uint64_t size)
{
	struct odl_tb5_open_opts o;
	int r;

	odl_tb5_open_opts_init(&o);
	o.port = port;
	if (busy)
		o.flags |= ODL_TB5_OPEN_BUSY_POLL;
	o.ring_bytes = (size + 4095) & ~4095ull;
	r = odl_tb5_open_index(dev, &o, &h);
	if (r)
		return fail("open", r);
	r = odl_tb5_wait_peer(h, PEER_MS);
	if (r)
		return fail("wait for the peer", r);
	return 0;
}

static int do_recv(uint64_t size)
{
	struct odl_tb5_completion c;
	uint8_t *p;
	uint32_t id;
	int r;

	r = odl_tb5_buf_alloc(h, size, ODL_TB5_BUF_RECV, &id, (void **)&p);
	if (r)
		return fail("buffer", r);
	r = odl_tb5_post_recv(h, id, 0, size, 1, 0);
	if (r)
		return fail("post the receive", r);
	printf("posted\n");
	fflush(stdout);
	r = odl_tb5_poll(h, &c, 1, PEER_MS, 0);
	if (r != 1)
		return fail("wait for the message", r < 0 ? r : 0);
	if (c.op != ODL_TB5_OP_RECV || c.status || c.length != size) {
		fprintf(stderr, "odl_threads: completion op %u status %d length %" PRIu64
			" (want a receive of %" PRIu64 " bytes, status 0)\n",
			c.op, c.status, c.length, size);
		return 1;
	}
	for (uint64_t i = 0; i < size; i++)
		if (p[i] != pat(i)) {
			fprintf(stderr, "odl_threads: byte %" PRIu64 " is 0x%02x, want 0x%02x\n",
				i, p[i], pat(i));
			return 1;
		}
	printf("received %" PRIu64 " bytes, pattern verified\n", size);
	return 0;
}

static int do_shared(uint64_t size)
{
	struct timespec settle = { 0, 50 * 1000 * 1000 };
	pthread_t th;
	double t0, send_s;
	uint8_t *p;
	uint32_t id;
	int r, bad = 0;

	r = odl_tb5_buf_alloc(h, size, ODL_TB5_BUF_SEND, &id, (void **)&p);
	if (r)
		return fail("buffer", r);
	for (uint64_t i = 0; i < size; i++)
		p[i] = pat(i);
	if (pthread_create(&th, NULL, poller, NULL))
		return fail("thread", 0);
	while (!atomic_load(&polling))
		sched_yield();
	/* let the poller get into its wait: the send below must come while
	 * it waits for the check to mean anything (a send first passes too) */
	nanosleep(&settle, NULL);
	t0 = now_s();
	r = odl_tb5_send(h, id, 0, size, 2, 0);
	send_s = now_s() - t0;
	pthread_join(th, NULL);
	printf("send returned %d after %.3f s; the other thread's poll returned %d after %.3f s\n",
	       r, send_s, poll_rc, poll_s);
	if (r)
		return fail("send", r);
	if (poll_rc != 1) {
		fprintf(stderr, "odl_threads: the poll waiting beside the send returned %d (%s), "
			"want the send's completion\n", poll_rc,
			poll_rc < 0 ? odl_tb5_strerror(poll_rc) : "nothing");
		bad = 1;
	} else if (poll_c.op != ODL_TB5_OP_SEND || poll_c.status || poll_c.cookie != 2) {
		fprintf(stderr, "odl_threads: completion op %u status %d cookie %" PRIu64
			" (want the send's, status 0)\n", poll_c.op, poll_c.status, poll_c.cookie);
		bad = 1;
	}
	if (send_s * 1000 >= POLL_MS / 2) {
		fprintf(stderr, "odl_threads: the send waited %.1f s for the polling thread\n",
			send_s);
		bad = 1;
	}
	return bad;
}

int main(int argc, char **argv)
{
	unsigned int port = 1;
	int dev = 0, i = 1, r;
	uint64_t size;
	char *end;

	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (!strcmp(argv[i], "--device"))
			dev = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--port"))
			port = (unsigned int)atoi(argv[i + 1]);
		else
			break;
	}
	if (argc - i != 2 || (strcmp(argv[i], "recv") && strcmp(argv[i], "shared"))) {
		fprintf(stderr, "usage: odl_threads [--device N] [--port P] recv|shared SIZE\n");
		return 2;
	}
	errno = 0;
	size = strtoull(argv[i + 1], &end, 0);
	if (errno || *end || !size || size > (64u << 20) || port < 1 ||
	    port > ODL_TB5_MAX_PORT || dev < 0) {
		fprintf(stderr, "odl_threads: SIZE must be 1..64 MiB, --port 1..%d, --device >= 0\n",
			ODL_TB5_MAX_PORT);
		return 2;
	}
	r = open_dev(dev, port, !strcmp(argv[i], "shared"), size);
	if (!r)
		r = !strcmp(argv[i], "recv") ? do_recv(size) : do_shared(size);
	odl_tb5_close(h);
	return r;
}
