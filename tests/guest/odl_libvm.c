// SPDX-License-Identifier: MIT
/*
 * odl_libvm: checks of libodl_tb5's kernel backend that need the driver and
 * a peer, for the VM scenarios (static, put into the guests beside
 * odl_tb5_cli). One message size per run; every message carries a pattern
 * that is checked on receipt.
 *
 *   odl_libvm [--device N] [--port P] recv SIZE
 *       post one receive, print "posted", wait up to 60 s for the message
 *   odl_libvm [--device N] [--port P] shared SIZE
 *       two threads on one handle that busy-polls by default: one waits in
 *       odl_tb5_poll (30 s bound) with nothing outstanding while the main
 *       thread sends on the same handle. The send must get in while the
 *       other thread polls, and that poll must return the send's
 *       completion (a busy-polling wait that held the handle's lock for the
 *       whole wait kept the send out until the poll gave up)
 *   odl_libvm [--device N] [--port P] batchcancel SIZE
 *       a handle in batch mode (ODL_TB5_OPEN_BATCH) posts a receive with
 *       key 77, withdraws it while it is still in the batch (it completes
 *       with -ECANCELED), posts an unkeyed receive, prints "posted" and
 *       waits for the unkeyed message; a lost message (-EBADMSG) fails.
 *       Whether the driver discarded the keyed message on arrival (API
 *       1.6) is its rx_cancelled counter, which the scenario reads
 *   odl_libvm [--device N] [--port P] sendkey SIZE
 *       the peer of batchcancel: a message with key 77, then an unkeyed one
 *   odl_libvm [--device N] [--port P] --frames F stagecancel SIZE
 *       the port open with no receive posted, print "ready"; once the
 *       device has received F - 1 more frames (the message with key 77 is
 *       being staged: it began to arrive with no receive; the scenario
 *       holds its last frame on the cable, `fault delay us=hold`), post the
 *       receive for key 77, withdraw it and print "withdrawn" (the scenario
 *       then releases the frame); the driver must discard the message when
 *       its last frame comes (its rx_cancelled counter, read in sysfs, goes
 *       up by one within 120 s) and report nothing lost
 *   odl_libvm [--device N] [--port P] sendkeyed SIZE
 *       the peer of stagecancel: one message with key 77
 *   odl_libvm [--device N] [--port P] [--count N] slotwait SIZE
 *       a handle that busy-polls by default: a second thread sends N
 *       messages (default 512), reaping as it goes, into a peer that
 *       receives nothing yet, until a send has to wait for room (the
 *       driver's 256 outstanding sends, the peer's queue full). While that
 *       send waits, the main thread asks for the handle's counts
 *       (odl_tb5_pending, which takes the lock): it must get in within
 *       10 s and while the send still waits (a send that kept the lock
 *       between its looks kept it out until the send gave up, 30 s). Then
 *       "stalled" is printed: the peer may receive, and every send must
 *       complete with status 0
 *   odl_libvm [--device N] [--port P] eventslost SIZE
 *       the library's handling of the driver's EVENTS_LOST report (ABI
 *       1.8). The library fetches as it goes, so its own calls cannot fill
 *       the driver's completion queue: this fills it under the library,
 *       on the handle's file (odl_tb5_fd), with keyed RECVs posted and
 *       withdrawn until the driver has no room (cookies the library does
 *       not know: it must skip them), prints "ready" and waits up to 180 s
 *       for the device to count a lost event (the peer sends messages of
 *       SIZE to the port, which has no receive; the oldest is dropped after
 *       rx_stall_ms and its lost-message event finds no room). Then
 *       odl_tb5_poll must report one lost message (-EBADMSG) and then
 *       nothing, the handle must still be connected, and the messages held
 *       back meanwhile (--count, default 4) must arrive, SIZE bytes each
 *   odl_libvm [--device N] [--port P] [--count N] --go FILE recvmany SIZE
 *       the peer of slotwait: print "ready", wait up to 300 s for FILE to
 *       exist, then receive N messages (8 receives posted at a time) and
 *       check every one
 *
 *   odl_libvm [--device N] [--port P] emptyrecv SIZE
 *       two receives of capacity 0 (empty messages, API 1.7 / driver ABI
 *       1.9) in a SIZE-byte buffer filled with a marker, one at offset 0 and
 *       one at the buffer's end; print "posted". The peer sends a 1-byte
 *       message, then an empty one: the first receive must complete with
 *       -EMSGSIZE (length 1, the message's), the second with status 0 and
 *       length 0, and no byte of
 *       the buffer may change
 *   odl_libvm [--device N] [--port P] emptysend SIZE
 *       the peer of emptyrecv: a 1-byte message, then an empty one
 *
 * Every mode first checks the handle's odl_tb5_info once the peer is there:
 * its port, connected, and keyed and empty messages agreed at login.
 *
 * Exit 0 on success, 1 on a failed check, 2 on bad usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* the driver's uapi, for eventslost's raw calls on the library's file: its
 * names that clash with the library's public header are kept apart
 */
#define odl_tb5_info odl_tb5_kinfo
#define odl_tb5_completion odl_tb5_kcompletion
#define odl_tb5_stats odl_tb5_kstats
#include "odl_tb5_uapi.h"
#undef odl_tb5_info
#undef odl_tb5_completion
#undef odl_tb5_stats
#undef ODL_TB5_STATE_CONNECTED
#undef ODL_TB5_STATE_DISCONNECTED
#undef ODL_TB5_FEAT_E2E
#undef ODL_TB5_FEAT_KEYED
#undef ODL_TB5_FEAT_EMPTY
#undef ODL_TB5_F_URGENT
#undef ODL_TB5_URGENT_MAX
#undef ODL_TB5_MAX_BUFS
#undef ODL_TB5_MAX_PORT

#include "odl_tb5/odl_tb5.h"

#define POLL_MS 30000
#define PEER_MS 60000
#define CANCEL_KEY 77

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

/* the keyed message's pattern: taken for the unkeyed one, it fails */
static uint8_t kpat(uint64_t i)
{
	return pat(i) ^ 0x5a;
}

static int check_pattern(const uint8_t *p, uint64_t size)
{
	for (uint64_t i = 0; i < size; i++)
		if (p[i] != pat(i)) {
			fprintf(stderr, "odl_libvm: byte %" PRIu64 " is 0x%02x, want 0x%02x%s\n",
				i, p[i], pat(i), p[i] == kpat(i) ?
				" (the withdrawn keyed message's data)" : "");
			return 1;
		}
	return 0;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "odl_libvm: %s: %s\n", what,
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

static int open_dev(int dev, unsigned int port, uint32_t flags, uint64_t size,
		    unsigned int nmsg)
{
	struct odl_tb5_open_opts o;
	struct odl_tb5_info in;
	int r;

	odl_tb5_open_opts_init(&o);
	o.port = port;
	o.flags = flags;
	o.ring_bytes = (nmsg * size + 4095) & ~4095ull; /* room for nmsg messages */
	r = odl_tb5_open_index(dev, &o, &h);
	if (r)
		return fail("open", r);
	r = odl_tb5_wait_peer(h, PEER_MS);
	if (r)
		return fail("wait for the peer", r);
	/* a connected handle's info: its port, and the features agreed at
	 * login (both sides run this driver, so keys and empty messages)
	 */
	r = odl_tb5_info(h, &in);
	if (r)
		return fail("info", r);
	if (in.port != port || in.state != ODL_TB5_STATE_CONNECTED ||
	    (in.features & (ODL_TB5_FEAT_KEYED | ODL_TB5_FEAT_EMPTY)) !=
		    (ODL_TB5_FEAT_KEYED | ODL_TB5_FEAT_EMPTY)) {
		fprintf(stderr, "odl_libvm: info: port %u state %u features 0x%x (want port %u, "
			"connected, keyed and empty messages)\n", in.port, in.state,
			in.features, port);
		return 1;
	}
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
		fprintf(stderr, "odl_libvm: completion op %u status %d length %" PRIu64
			" (want a receive of %" PRIu64 " bytes, status 0)\n",
			c.op, c.status, c.length, size);
		return 1;
	}
	if (check_pattern(p, size))
		return 1;
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
		fprintf(stderr, "odl_libvm: the poll waiting beside the send returned %d (%s), "
			"want the send's completion\n", poll_rc,
			poll_rc < 0 ? odl_tb5_strerror(poll_rc) : "nothing");
		bad = 1;
	} else if (poll_c.op != ODL_TB5_OP_SEND || poll_c.status || poll_c.cookie != 2) {
		fprintf(stderr, "odl_libvm: completion op %u status %d cookie %" PRIu64
			" (want the send's, status 0)\n", poll_c.op, poll_c.status, poll_c.cookie);
		bad = 1;
	}
	if (send_s * 1000 >= POLL_MS / 2) {
		fprintf(stderr, "odl_libvm: the send waited %.1f s for the polling thread\n",
			send_s);
		bad = 1;
	}
	return bad;
}

/* post a receive with CANCEL_KEY at the buffer's start and withdraw it:
 * it must complete with -ECANCELED (0), else 1 */
static int post_withdraw(uint32_t id, uint64_t size, uint64_t cookie)
{
	struct odl_tb5_completion c;
	int r;

	r = odl_tb5_post_recv_key(h, id, 0, size, CANCEL_KEY, cookie, 0);
	if (r)
		return fail("post the keyed receive", r);
	r = odl_tb5_cancel_recv(h, CANCEL_KEY);
	if (r)
		return fail("withdraw the keyed receive", r);
	r = odl_tb5_poll(h, &c, 1, 10000, 0);
	if (r != 1 || c.op != ODL_TB5_OP_RECV || c.cookie != cookie || c.status != -ECANCELED) {
		fprintf(stderr, "odl_libvm: after the withdrawal poll returned %d (op %u cookie %"
			PRIu64 " status %d), want the keyed receive with -ECANCELED\n",
			r, r == 1 ? c.op : 0, r == 1 ? c.cookie : 0, r == 1 ? c.status : 0);
		return 1;
	}
	return 0;
}

static int do_batchcancel(uint64_t size)
{
	struct odl_tb5_completion c;
	unsigned int ns, nr;
	uint8_t *p;
	uint32_t id;
	int r;

	r = odl_tb5_buf_alloc(h, 2 * size, ODL_TB5_BUF_RECV, &id, (void **)&p);
	if (r)
		return fail("buffer", r);
	if (post_withdraw(id, size, 10))
		return 1;
	r = odl_tb5_post_recv(h, id, size, size, 11, 0);
	if (!r)
		r = odl_tb5_pending(h, &ns, &nr); /* hands the batch to the driver */
	if (r)
		return fail("post the unkeyed receive", r);
	printf("posted\n");
	fflush(stdout);
	r = odl_tb5_poll(h, &c, 1, PEER_MS, 0);
	if (r == -EBADMSG)
		return fail("a message was lost (the withdrawn key's, held back?)", r);
	if (r != 1)
		return fail("wait for the unkeyed message", r < 0 ? r : 0);
	if (c.op != ODL_TB5_OP_RECV || c.cookie != 11 || c.status || c.length != size) {
		fprintf(stderr, "odl_libvm: completion op %u cookie %" PRIu64 " status %d length %"
			PRIu64 " (want the unkeyed receive, %" PRIu64 " bytes)\n",
			c.op, c.cookie, c.status, c.length, size);
		return 1;
	}
	if (check_pattern(p + size, size))
		return 1;
	printf("the keyed receive withdrawn from the batch; the unkeyed message (%" PRIu64
	       " bytes) verified\n", size);
	return 0;
}

/* a message with CANCEL_KEY, then (also_unkeyed) an unkeyed one: size
 * bytes each */
static int do_sendkey(uint64_t size, bool also_unkeyed)
{
	struct odl_tb5_completion c[2];
	int n = 0, want = also_unkeyed ? 2 : 1, r;
	uint8_t *p;
	uint32_t id;

	r = odl_tb5_buf_alloc(h, (uint64_t)want * size, ODL_TB5_BUF_SEND, &id, (void **)&p);
	if (r)
		return fail("buffer", r);
	for (uint64_t i = 0; i < size; i++) {
		p[i] = kpat(i);
		if (also_unkeyed)
			p[size + i] = pat(i);
	}
	r = odl_tb5_send_key(h, id, 0, size, CANCEL_KEY, 1, 0);
	if (!r && also_unkeyed)
		r = odl_tb5_send(h, id, size, size, 2, 0);
	if (r)
		return fail("send", r);
	while (n < want) {
		r = odl_tb5_poll(h, c + n, want - n, PEER_MS, 0);
		if (r < 0)
			return fail("wait for the sends", r);
		n += r;
	}
	for (int i = 0; i < want; i++)
		if (c[i].status)
			return fail("a send failed", c[i].status);
	printf("sent a message with key %d%s, %" PRIu64 " bytes%s\n", CANCEL_KEY,
	       also_unkeyed ? " and an unkeyed one" : "", size, also_unkeyed ? " each" : "");
	return 0;
}

static atomic_int sw_in_send;	/* the sender thread is inside a send */
static _Atomic double sw_enter;	/* since when */
static atomic_llong sw_done;	/* sends completed with status 0 */
static atomic_llong sw_returned;	/* send calls that returned */
static int sw_rc;
static long long sw_count;
static uint64_t sw_size;
static uint32_t sw_id;

/* reap the sender's completions; wait: block until all are in */
static int sw_reap(bool wait, long long posted)
{
	struct odl_tb5_completion c[16];
	int r;

	do {
		r = odl_tb5_poll(h, c, 16, wait ? PEER_MS : 0, 0);
		if (r == -EAGAIN && !wait)
			return 0;
		if (r < 0)
			return r;
		for (int i = 0; i < r; i++) {
			if (c[i].op != ODL_TB5_OP_SEND || c[i].status)
				return c[i].status ? c[i].status : -EPROTO;
			atomic_fetch_add(&sw_done, 1);
		}
	} while (wait && atomic_load(&sw_done) < posted);
	return 0;
}

static void *sw_sender(void *arg)
{
	long long n;
	int r = 0;

	(void)arg;
	for (n = 0; n < sw_count && !r; n++) {
		sw_enter = now_s();
		atomic_store(&sw_in_send, 1);
		r = odl_tb5_send(h, sw_id, 0, sw_size, (uint64_t)n, 0);
		atomic_store(&sw_in_send, 0);
		atomic_fetch_add(&sw_returned, 1);
		if (!r)
			r = sw_reap(false, 0);
	}
	if (!r)
		r = sw_reap(true, sw_count);
	sw_rc = r;
	return NULL;
}

static int do_slotwait(uint64_t size, long long count)
{
	struct timespec nap = { 0, 10 * 1000 * 1000 };
	unsigned int ns = 0, nr = 0;
	double t0, got_s, waited = 0;
	long long ret0 = 0;
	bool still;
	pthread_t th;
	uint8_t *p;
	int r;

	r = odl_tb5_buf_alloc(h, size, ODL_TB5_BUF_SEND, &sw_id, (void **)&p);
	if (r)
		return fail("buffer", r);
	for (uint64_t i = 0; i < size; i++)
		p[i] = pat(i);
	sw_size = size;
	sw_count = count;
	if (pthread_create(&th, NULL, sw_sender, NULL))
		return fail("thread", 0);
	/*
	 * A send that has waited 1 s waits for room: the peer takes nothing.
	 * One that returns before the other thread got in was only slow (the
	 * guest descheduled, say): look again, the real wait comes.
	 */
	t0 = now_s();
	for (;;) {
		ret0 = atomic_load(&sw_returned); /* before: the send seen is this one */
		if (atomic_load(&sw_in_send) && (waited = now_s() - sw_enter) >= 1.0) {
			double t1 = now_s();

			r = odl_tb5_pending(h, &ns, &nr);
			got_s = now_s() - t1;
			still = atomic_load(&sw_returned) == ret0;
			if (still || r || got_s >= 10.0)
				break;
			printf("a send waited %.1f s but returned before the other thread got in: "
			       "again\n", waited);
		}
		if (atomic_load(&sw_done) + 1 >= count || now_s() - t0 >= 120) {
			printf("stalled\n"); /* let the peer end */
			fflush(stdout);
			pthread_join(th, NULL);
			fprintf(stderr, "odl_libvm: no send waited for room (%lld of %lld "
				"completed, sender: %s)\n", (long long)atomic_load(&sw_done),
				count, sw_rc ? odl_tb5_strerror(sw_rc) : "ok");
			return 1;
		}
		nanosleep(&nap, NULL);
	}
	printf("a send waited %.1f s for room; the other thread got the lock after %.3f s "
	       "(pending returned %d: %u sends outstanding), the send %s\n", waited, got_s, r,
	       ns, still ? "still waiting" : "no longer waiting");
	printf("stalled\n");
	fflush(stdout);
	pthread_join(th, NULL);
	printf("%lld sends of %" PRIu64 " bytes completed (sender: %d)\n",
	       (long long)atomic_load(&sw_done), size, sw_rc);
	if (r)
		return fail("pending", r);
	if (got_s >= 10.0 || !still) {
		fprintf(stderr, "odl_libvm: the thread beside the waiting send got the lock after "
			"%.1f s%s\n", got_s, still ? "" : ", when the send no longer waited");
		return 1;
	}
	if (sw_rc)
		return fail("the sender", sw_rc);
	return 0;
}

static int do_recvmany(uint64_t size, long long count, const char *go)
{
	struct timespec nap = { 0, 20 * 1000 * 1000 };
	struct odl_tb5_completion c;
	long long posted = 0, got = 0;
	double end;
	uint8_t *p;
	uint32_t id;
	int r;

	r = odl_tb5_buf_alloc(h, 8 * size, ODL_TB5_BUF_RECV, &id, (void **)&p);
	if (r)
		return fail("buffer", r);
	printf("ready\n");
	fflush(stdout);
	end = now_s() + 300;
	while (access(go, F_OK) && now_s() < end)
		nanosleep(&nap, NULL);
	if (access(go, F_OK)) {
		fprintf(stderr, "odl_libvm: no %s after 300 s\n", go);
		return 1;
	}
	for (; posted < count && posted < 8; posted++) {
		r = odl_tb5_post_recv(h, id, (uint64_t)posted * size, size, (uint64_t)posted, 0);
		if (r)
			return fail("post a receive", r);
	}
	while (got < count) {
		uint64_t slot;

		r = odl_tb5_poll(h, &c, 1, PEER_MS, 0);
		if (r != 1)
			return fail("wait for a message", r < 0 ? r : 0);
		slot = c.cookie % 8;
		if (c.op != ODL_TB5_OP_RECV || c.status || c.length != size) {
			fprintf(stderr, "odl_libvm: message %lld: op %u status %d length %" PRIu64
				"\n", got, c.op, c.status, c.length);
			return 1;
		}
		if (check_pattern(p + slot * size, size))
			return 1;
		got++;
		if (posted < count) {
			r = odl_tb5_post_recv(h, id, slot * size, size, (uint64_t)posted, 0);
			if (r)
				return fail("post a receive", r);
			posted++;
		}
	}
	printf("received %lld messages of %" PRIu64 " bytes, every one verified\n", got, size);
	return 0;
}

/* a counter of the device's statistics/ directory in sysfs, or -1 */
static long long dev_stat(int dev, const char *name)
{
	char path[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/odl_tb5/odl_tb5_%d/statistics/%s",
		 dev, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* wait up to ms for counter name to reach at least want */
static long long wait_stat(int dev, const char *name, long long want, int ms)
{
	struct timespec nap = { 0, 10 * 1000 * 1000 };
	double end = now_s() + ms / 1000.0;
	long long v;

	while ((v = dev_stat(dev, name)) >= 0 && v < want && now_s() < end)
		nanosleep(&nap, NULL);
	return v;
}

/* rx_frames is still want: the cable still holds the last frame */
static bool still_held(int dev, long long want, const char *when)
{
	if (dev_stat(dev, "rx_frames") == want)
		return true;
	fprintf(stderr, "odl_libvm: the last frame came %s (the cable did not hold it)\n",
		when);
	return false;
}

static int do_stagecancel(int dev, uint64_t size, long long frames)
{
	struct odl_tb5_completion c;
	long long f0, c0, v;
	uint8_t *p;
	uint32_t id;
	int r;

	r = odl_tb5_buf_alloc(h, size, ODL_TB5_BUF_RECV, &id, (void **)&p);
	if (r)
		return fail("buffer", r);
	f0 = dev_stat(dev, "rx_frames");
	c0 = dev_stat(dev, "rx_cancelled");
	if (f0 < 0 || c0 < 0)
		return fail("read statistics/rx_frames and rx_cancelled in sysfs", 0);
	printf("ready\n");
	fflush(stdout);
	v = wait_stat(dev, "rx_frames", f0 + frames - 1, PEER_MS);
	if (v < f0 + frames - 1) {
		fprintf(stderr, "odl_libvm: %lld of the %lld frames before the last came\n",
			v - f0, frames - 1);
		return 1;
	}
	if (!still_held(dev, f0 + frames - 1, "before the receive was posted") ||
	    post_withdraw(id, size, 20) ||
	    !still_held(dev, f0 + frames - 1, "while the receive was posted"))
		return 1;
	printf("withdrawn\n");
	fflush(stdout);
	v = wait_stat(dev, "rx_cancelled", c0 + 1, 120000);
	if (v != c0 + 1) {
		fprintf(stderr, "odl_libvm: rx_cancelled %lld -> %lld: the staged message for the "
			"withdrawn key was not discarded (held for a receive nobody will post)\n",
			c0, v);
		return 1;
	}
	r = odl_tb5_poll(h, &c, 1, 0, 0);
	if (r != -EAGAIN)
		return fail("after the discard poll must find nothing", r < 0 ? r : 0);
	printf("the message staged for the withdrawn key was discarded (rx_cancelled %lld -> %lld)\n",
	       c0, v);
	return 0;
}

/* eventslost: fill the driver's completion queue of the handle's file
 * under the library (keyed RECVs into memory of our own, posted and
 * withdrawn, cookies above any the library uses) until the driver takes no
 * more RECVs; the number queued, or -1
 */
#define EL_KEY0 1000u
#define EL_COOKIE0 (1ull << 40)
static long fill_cq(int fd)
{
	static uint8_t mem[4096] __attribute__((aligned(4096)));
	struct odl_tb5_mem_reg mr = {
		.size = sizeof(mr), .flags = ODL_TB5_MEM_RX,
		.addr = (uintptr_t)mem, .length = sizeof(mem),
	};
	long n;

	if (ioctl(fd, ODL_TB5_IOC_MEM_REG, &mr)) {
		fail("MEM_REG on the handle's file", -errno);
		return -1;
	}
	for (n = 0; n <= 2048; n++) {
		struct odl_tb5_recv rv = {
			.size = sizeof(rv), .flags = ODL_TB5_F_HANDLE,
			.buf_id = mr.handle, .capacity = 64,
			.cookie = EL_COOKIE0 + (uint64_t)n,
			.key = EL_KEY0 + (uint32_t)n,
		};
		struct odl_tb5_cancel cn = { .size = sizeof(cn), .key = rv.key };

		if (ioctl(fd, ODL_TB5_IOC_RECV, &rv)) {
			if (errno == EAGAIN)
				return n;	/* the queue is full */
			fail("RECV on the handle's file", -errno);
			return -1;
		}
		if (ioctl(fd, ODL_TB5_IOC_CANCEL, &cn)) {
			fail("CANCEL on the handle's file", -errno);
			return -1;
		}
	}
	fprintf(stderr, "odl_libvm: the driver took %ld RECVs with nothing fetched\n", n);
	return -1;
}

static int do_eventslost(int dev, uint64_t size, long long count)
{
	struct odl_tb5_completion c;
	long long el0, v;
	long queued;
	uint8_t *p;
	uint32_t id;
	int r;

	r = odl_tb5_buf_alloc(h, size, ODL_TB5_BUF_RECV, &id, (void **)&p);
	if (r)
		return fail("buffer", r);
	/* anything the driver queued so far (a link event) into the library */
	while ((r = odl_tb5_poll(h, &c, 1, 0, 0)) == 1)
		;
	if (r != -EAGAIN)
		return fail("poll before the test", r < 0 ? r : 0);
	el0 = dev_stat(dev, "events_lost");
	if (el0 < 0)
		return fail("read statistics/events_lost in sysfs", 0);
	queued = fill_cq(odl_tb5_fd(h));
	if (queued < 0)
		return 1;
	printf("%ld withdrawn RECVs queued, the driver's queue full\nready\n", queued);
	fflush(stdout);
	v = wait_stat(dev, "events_lost", el0 + 1, 180000);
	if (v < el0 + 1)
		return fail("no event lost in 180 s", 0);
	r = odl_tb5_poll(h, &c, 1, 30000, 0);
	printf("events_lost %lld -> %lld; poll returned %d (%s)\n", el0, v, r,
	       r < 0 ? odl_tb5_strerror(r) : r ? "a completion" : "nothing");
	if (r == 1)
		fprintf(stderr, "odl_libvm: op %u cookie %" PRIu64 " status %d length %" PRIu64
			" came in place of the lost-message report\n",
			c.op, c.cookie, c.status, c.length);
	if (r != -EBADMSG)
		return fail("the EVENTS_LOST report was not a lost message (-EBADMSG)", 0);
	r = odl_tb5_poll(h, &c, 1, 0, 0);
	if (r != -EAGAIN)
		return fail("after the report poll must find nothing", r < 0 ? r : 0);
	r = odl_tb5_state(h);
	if (r != ODL_TB5_STATE_CONNECTED)
		return fail("the handle is no longer connected after the report", r < 0 ? r : 0);
	for (long long i = 0; i < count; i++) {
		r = odl_tb5_post_recv(h, id, 0, size, 100 + (uint64_t)i, 0);
		if (r)
			return fail("post a receive after the report", r);
		r = odl_tb5_poll(h, &c, 1, PEER_MS, 0);
		if (r != 1)
			return fail("a message held back meanwhile", r < 0 ? r : 0);
		if (c.op != ODL_TB5_OP_RECV || c.cookie != 100 + (uint64_t)i || c.status ||
		    c.length != size) {
			fprintf(stderr, "odl_libvm: completion op %u cookie %" PRIu64 " status %d"
				" length %" PRIu64 " (want receive %lld, %" PRIu64 " bytes)\n",
				c.op, c.cookie, c.status, c.length, i, size);
			return 1;
		}
	}
	printf("one lost message reported, still connected, then the %lld messages held back "
	       "received\n", count);
	return 0;
}

#define EMPTY_MARK 0xa5

/* two capacity-0 receives: a 1-byte message does not fit the first (it
 * fails with -EMSGSIZE), the empty one fits the second; nothing is written
 */
static int do_emptyrecv(uint64_t size)
{
	struct odl_tb5_completion c;
	/* -EMSGSIZE reports the message's real length */
	static const int want[2] = { -EMSGSIZE, 0 };
	static const uint64_t want_len[2] = { 1, 0 };
	uint8_t *p;
	uint32_t id;
	int r;

	r = odl_tb5_buf_alloc(h, size, ODL_TB5_BUF_RECV, &id, (void **)&p);
	if (r)
		return fail("buffer", r);
	memset(p, EMPTY_MARK, size);
	r = odl_tb5_post_recv(h, id, 0, 0, 1, 0);
	if (r)
		return fail("post a receive of capacity 0 at offset 0", r);
	r = odl_tb5_post_recv(h, id, size, 0, 2, 0);
	if (r)
		return fail("post a receive of capacity 0 at the buffer's end", r);
	printf("posted\n");
	fflush(stdout);
	for (int i = 0; i < 2; i++) {
		r = odl_tb5_poll(h, &c, 1, PEER_MS, 0);
		if (r != 1)
			return fail("wait for the peer's message", r < 0 ? r : 0);
		if (c.op != ODL_TB5_OP_RECV || c.cookie != (uint64_t)i + 1 ||
		    c.status != want[i] || c.length != want_len[i]) {
			fprintf(stderr, "odl_libvm: completion op %u cookie %" PRIu64 " status %d"
				" length %" PRIu64 " (want receive %d: status %d, length %" PRIu64
				")\n", c.op, c.cookie, c.status, c.length, i + 1, want[i],
				want_len[i]);
			return 1;
		}
	}
	for (uint64_t i = 0; i < size; i++)
		if (p[i] != EMPTY_MARK) {
			fprintf(stderr, "odl_libvm: byte %" PRIu64 " of the buffer changed to "
				"0x%02x\n", i, p[i]);
			return 1;
		}
	printf("1-byte message into capacity 0: -EMSGSIZE (length 1); empty message: status 0, length 0; "
	       "buffer untouched\n");
	return 0;
}

/* the peer of emptyrecv: a 1-byte message, then an empty one */
static int do_emptysend(void)
{
	struct odl_tb5_completion c;
	uint8_t *p;
	uint32_t id;
	int r;

	r = odl_tb5_buf_alloc(h, 4096, ODL_TB5_BUF_SEND, &id, (void **)&p);
	if (r)
		return fail("buffer", r);
	p[0] = pat(0);
	r = odl_tb5_send(h, id, 0, 1, 1, 0);
	if (r)
		return fail("send the 1-byte message", r);
	r = odl_tb5_send(h, id, 0, 0, 2, 0);
	if (r)
		return fail("send the empty message", r);
	for (int i = 0; i < 2; i++) {
		r = odl_tb5_poll(h, &c, 1, PEER_MS, 0);
		if (r != 1)
			return fail("wait for the sends", r < 0 ? r : 0);
		if (c.op != ODL_TB5_OP_SEND || c.status) {
			fprintf(stderr, "odl_libvm: completion op %u cookie %" PRIu64
				" status %d (want a send, status 0)\n", c.op, c.cookie, c.status);
			return 1;
		}
	}
	printf("sent a 1-byte message and an empty one\n");
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int port = 1;
	long long frames = 0, count = 0;
	const char *go = NULL;
	int dev = 0, i = 1, r;
	const char *mode;
	uint64_t size;
	char *end;

	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (!strcmp(argv[i], "--device"))
			dev = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--port"))
			port = (unsigned int)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--frames"))
			frames = atoll(argv[i + 1]);
		else if (!strcmp(argv[i], "--count"))
			count = atoll(argv[i + 1]);
		else if (!strcmp(argv[i], "--go"))
			go = argv[i + 1];
		else
			break;
	}
	if (argc - i != 2 || (strcmp(argv[i], "recv") && strcmp(argv[i], "shared") &&
			      strcmp(argv[i], "batchcancel") && strcmp(argv[i], "sendkey") &&
			      strcmp(argv[i], "stagecancel") && strcmp(argv[i], "sendkeyed") &&
			      strcmp(argv[i], "slotwait") && strcmp(argv[i], "recvmany") &&
			      strcmp(argv[i], "eventslost") && strcmp(argv[i], "emptyrecv") &&
			      strcmp(argv[i], "emptysend"))) {
		fprintf(stderr, "usage: odl_libvm [--device N] [--port P] [--frames F] [--count N] "
			"[--go FILE] recv|shared|batchcancel|sendkey|stagecancel|sendkeyed|"
			"slotwait|recvmany|eventslost|emptyrecv|emptysend SIZE\n");
		return 2;
	}
	errno = 0;
	size = strtoull(argv[i + 1], &end, 0);
	if (errno || *end || !size || size > (32u << 20) || port < 1 ||
	    port > ODL_TB5_MAX_PORT || dev < 0) {
		fprintf(stderr, "odl_libvm: SIZE must be 1..32 MiB, --port 1..%d, --device >= 0\n",
			ODL_TB5_MAX_PORT);
		return 2;
	}
	mode = argv[i];
	if (!count)
		count = !strcmp(mode, "eventslost") ? 4 : 512;
	if (!strcmp(mode, "stagecancel") && (frames < 2 || frames > 1000000)) {
		fprintf(stderr, "odl_libvm: stagecancel needs --frames 2..1000000\n");
		return 2;
	}
	if (count < 1 || count > 100000 || (!strcmp(mode, "recvmany") && !go)) {
		fprintf(stderr, "odl_libvm: --count must be 1..100000; recvmany needs --go FILE\n");
		return 2;
	}
	r = open_dev(dev, port, !strcmp(mode, "shared") || !strcmp(mode, "slotwait") ?
			 ODL_TB5_OPEN_BUSY_POLL :
			 !strcmp(mode, "batchcancel") ? ODL_TB5_OPEN_BATCH : 0, size,
		     !strcmp(mode, "recvmany") ? 8 : 2);
	if (!r && !strcmp(mode, "recv"))
		r = do_recv(size);
	else if (!r && !strcmp(mode, "shared"))
		r = do_shared(size);
	else if (!r && !strcmp(mode, "batchcancel"))
		r = do_batchcancel(size);
	else if (!r && !strcmp(mode, "sendkey"))
		r = do_sendkey(size, true);
	else if (!r && !strcmp(mode, "stagecancel"))
		r = do_stagecancel(dev, size, frames);
	else if (!r && !strcmp(mode, "slotwait"))
		r = do_slotwait(size, count);
	else if (!r && !strcmp(mode, "recvmany"))
		r = do_recvmany(size, count, go);
	else if (!r && !strcmp(mode, "eventslost"))
		r = do_eventslost(dev, size, count);
	else if (!r && !strcmp(mode, "emptyrecv"))
		r = do_emptyrecv(size);
	else if (!r && !strcmp(mode, "emptysend"))
		r = do_emptysend();
	else if (!r)
		r = do_sendkey(size, false);
	odl_tb5_close(h);
	return r;
}
