// SPDX-License-Identifier: MIT
/*
 * Check tests for the plugin's pure wire checks: the translation unit
 * includes plugin.c so its static helpers can be called directly (nothing
 * is initialised; no device is opened).
 */
#include <stdint.h>

/* before check.h: the plugin has a function named fail(), Check a macro */
#include "../src/plugin.c"

#include <check.h>

/* a message of 100 bytes into a receive of 128, in 40-byte chunks */
START_TEST(t_data_chunk_in_order)
{
	ck_assert(data_chunk_ok(0, 40, 100, 128, 0));
	ck_assert(data_chunk_ok(40, 40, 100, 128, 40));
	ck_assert(data_chunk_ok(80, 20, 100, 128, 80));
	/* the whole message in one chunk, exactly the room */
	ck_assert(data_chunk_ok(0, 128, 128, 128, 0));
	/* zero bytes: one empty chunk */
	ck_assert(data_chunk_ok(0, 0, 0, 0, 0));
	ck_assert(data_chunk_ok(0, 0, 0, 128, 0));
}
END_TEST

START_TEST(t_data_chunk_too_big)
{
	ck_assert(!data_chunk_ok(0, 40, 129, 128, 0));   /* message > room */
	ck_assert(!data_chunk_ok(80, 21, 100, 128, 80)); /* past the message */
	ck_assert(!data_chunk_ok(100, 1, 100, 128, 100));
	ck_assert(!data_chunk_ok(101, 0, 100, 128, 101));
}
END_TEST

/* off + len wrapping around 2^64 must not pass as "inside the message" */
START_TEST(t_data_chunk_wraps)
{
	ck_assert(!data_chunk_ok(UINT64_MAX - 7, 16, 100, 128, UINT64_MAX - 7));
	ck_assert(!data_chunk_ok(UINT64_MAX, 1, 100, 128, UINT64_MAX));
	ck_assert(!data_chunk_ok(UINT64_MAX - 99, 100, 100, 128, 0));
	ck_assert(!data_chunk_ok((uint64_t)1 << 63, UINT32_MAX, 100, 128, 0));
}
END_TEST

/* a chunk that does not continue where the last one ended: a gap would
 * complete the entry with holes, an overlap would write twice */
START_TEST(t_data_chunk_out_of_order)
{
	ck_assert(!data_chunk_ok(40, 40, 100, 128, 0));  /* first chunk missing */
	ck_assert(!data_chunk_ok(80, 20, 100, 128, 40)); /* gap */
	ck_assert(!data_chunk_ok(0, 40, 100, 128, 40));  /* repeated */
	ck_assert(!data_chunk_ok(20, 40, 100, 128, 40)); /* overlap */
}
END_TEST

/* ---- connection set-up and answers from a hostile peer ---- */

static struct odlp_dev td;
static struct odlp_comm *tl; /* the listen comm */
static int t_warns;

static void t_logger(ncclDebugLogLevel lvl, unsigned long flags, const char *file, int line,
		     const char *fmt, ...)
{
	(void)flags;
	(void)file;
	(void)line;
	(void)fmt;
	if (lvl == NCCL_LOG_WARN)
		t_warns++;
}

static void tdev_setup(void)
{
	memset(&td, 0, sizeof(td));
	snprintf(td.name, sizeof(td.name), "test");
	td.port = 5;
	td.next_id = 1;
	tl = new_comm(&td, K_LISTEN);
	ck_assert_ptr_nonnull(tl);
	tl->nonce = 0x5eed5eed5eed5eedull;
	memset(&g_stats_dummy, 0, sizeof(g_stats_dummy));
	g_log = t_logger;
	t_warns = 0;
}

static void tdev_teardown(void)
{
	while (td.cq_head)
		cq_pop(&td);
	while (td.comms) {
		struct odlp_comm *c = td.comms;

		unlink_comm(&td, c);
		free_comm(c);
	}
	g_log = NULL;
}

/* the peer's message of `type` from its comm src on its port sport (the
 * header's total carries its instance) */
static void peer_says(uint8_t type, uint32_t sport, uint32_t dst, uint32_t src, uint64_t nonce,
		      uint64_t inst)
{
	struct wire_hdr h = {
		.magic = WIRE_MAGIC,
		.type = type,
		.sport = (uint8_t)(sport == td.port ? 0 : sport),
		.dst = dst,
		.src = src,
		.total = inst,
		.nonce = nonce,
	};

	handle_msg(&td, (const char *)&h, sizeof(h), 1);
}

static int npending(void)
{
	int n = 0;

	for (struct conn_pending *cp = tl->pend_head; cp; cp = cp->next)
		n++;
	return n;
}

/* control messages queued of type t (0: all), to port (0: any) */
static int nqueued(uint8_t t, uint32_t port)
{
	int n = 0;

	for (struct ctrl_msg *m = td.cq_head; m; m = m->next)
		if ((!t || m->h.type == t) && (!port || m->dport == port))
			n++;
	return n;
}

/* one connect arriving twice is one connection, not two accept()s */
START_TEST(t_conn_repeated)
{
	peer_says(M_CONN, 7, tl->id, 10, tl->nonce, 99);
	peer_says(M_CONN, 7, tl->id, 10, tl->nonce, 99);
	ck_assert_int_eq(npending(), 1);
	ck_assert_uint_eq(g_stats->errors, 1);
	/* the same comm number from another port or process is another connect */
	peer_says(M_CONN, 8, tl->id, 10, tl->nonce, 99);
	peer_says(M_CONN, 7, tl->id, 10, tl->nonce, 98);
	ck_assert_int_eq(npending(), 3);
	ck_assert_int_eq(nqueued(0, 0), 0); /* nothing refused */
}
END_TEST

/* a connect repeated after it was accepted makes no second comm */
START_TEST(t_conn_repeated_after_accept)
{
	struct odlp_comm *r = new_comm(&td, K_RECV);

	ck_assert_ptr_nonnull(r);
	r->peer_port = 7;
	r->peer_id = 10;
	r->peer_inst = 99;
	r->state = S_READY;
	peer_says(M_CONN, 7, tl->id, 10, tl->nonce, 99);
	ck_assert_int_eq(npending(), 0);
	ck_assert_uint_eq(g_stats->errors, 1);
	/* once that comm is closed by its peer a new connect may reuse nothing
	 * of it, but a new comm number is new */
	peer_says(M_CONN, 7, tl->id, 11, tl->nonce, 99);
	ck_assert_int_eq(npending(), 1);
}
END_TEST

/* connects with the right nonce beyond PEND_MAX are refused, with one WARN */
START_TEST(t_conn_bounded)
{
	for (uint32_t i = 0; i < PEND_MAX + 40; i++)
		peer_says(M_CONN, 7, tl->id, 100 + i, tl->nonce, 99);
	ck_assert_int_eq(npending(), PEND_MAX);
	ck_assert_int_eq(nqueued(M_REJ, 7), 40);
	ck_assert_uint_eq(g_stats->errors, 40);
	ck_assert_int_eq(t_warns, 1);
	/* the refusals go to the refused comms */
	ck_assert_uint_eq(td.cq_head->h.dst, 100 + PEND_MAX);
	ck_assert_uint_eq(td.cq_tail->h.dst, 100 + PEND_MAX + 39);
}
END_TEST

/* a flood of connects with a wrong nonce queues at most ANSWERS_MAX refusals */
START_TEST(t_rej_flood_bounded)
{
	for (uint32_t i = 0; i < 10 * ANSWERS_MAX; i++)
		peer_says(M_CONN, 7, tl->id, i + 1, tl->nonce ^ 1, 99);
	ck_assert_int_eq(npending(), 0);
	ck_assert_int_eq(nqueued(M_REJ, 7), ANSWERS_MAX);
	ck_assert_uint_eq(g_stats->errors, 9 * ANSWERS_MAX);
	/* the link takes one: there is room for one more */
	cq_pop(&td);
	peer_says(M_CONN, 7, tl->id, 5000, 0, 99);
	ck_assert_int_eq(nqueued(M_REJ, 7), ANSWERS_MAX);
	ck_assert_uint_eq(td.cq_tail->h.dst, 5000);
	/* the plugin's own messages are never dropped for answers */
	struct wire_hdr cts = { .type = M_CTS, .dst = 1 };

	queue_ctrl(&td, 7, &cts, NULL, 0);
	ck_assert_int_eq(nqueued(M_CTS, 7), 1);
}
END_TEST

/* a PING flood is answered by one PONG per port at a time */
START_TEST(t_pong_coalesced)
{
	for (int i = 0; i < 1000; i++)
		peer_says(M_PING, 7, 0, 0, 0, 99);
	peer_says(M_PING, 9, 0, 0, 0, 77);
	ck_assert_int_eq(nqueued(M_PONG, 7), 1);
	ck_assert_int_eq(nqueued(M_PONG, 9), 1);
	ck_assert_int_eq(nqueued(0, 0), 2);
	/* the PONG to 7 left: the next PING gets a new one */
	cq_pop(&td);
	peer_says(M_PING, 7, 0, 0, 0, 99);
	ck_assert_int_eq(nqueued(M_PONG, 7), 1);
	ck_assert_int_eq(nqueued(0, 0), 2);
}
END_TEST

/* broken messages from the peer are all counted, and logged a bounded
 * number of times (then once that the rest are only counted) */
START_TEST(t_peer_warns_bounded)
{
	struct wire_hdr h = { .magic = WIRE_MAGIC, .type = 99, .dst = 1 };
	char shortmsg[8] = { 0 };

	for (int i = 0; i < 100; i++)
		handle_msg(&td, (const char *)&h, sizeof(h), 1);
	for (int i = 0; i < 100; i++)
		handle_msg(&td, shortmsg, sizeof(shortmsg), 1);
	ck_assert_uint_eq(g_stats->errors, 200);
	ck_assert_int_eq(t_warns, PEER_WARN_MAX + 1);
	ck_assert_int_eq(nqueued(0, 0), 0);
}
END_TEST

/* the busy-polling window: automatic only with CPUs to spare; the
 * variable's value when it is one, the automatic choice when it is not */
/*
 * Fused devices: the receiver's parts tile its buffer in order, in 4 KiB
 * multiples but for the last, about equal when the buffer is large; a send no larger than the receive puts each
 * part where the receiver's is and never more than its room, and all of
 * it; a larger one overflows the last rail only.
 */
START_TEST(t_rail_parts)
{
	static const uint64_t sizes[] = { 0, 1, 100, 4095, 4096, 4097, 8192, 8193, 12289,
					  (1u << 20) + 3, 3u << 20, (64ull << 20) + 5 };
	const size_t ns = sizeof(sizes) / sizeof(sizes[0]);

	for (int n = 1; n <= VDEV_RAILS; n++)
		for (size_t i = 0; i < ns; i++) {
			uint64_t R = sizes[i], at = 0, off[VDEV_RAILS], len[VDEV_RAILS];

			for (int k = 0; k < n; k++) {
				rail_part(R, n, k, &off[k], &len[k]);
				ck_assert_uint_eq(off[k], at);
				if (k < n - 1)
					ck_assert(len[k] % 4096 == 0 || off[k] + len[k] == R);
				at += len[k];
			}
			ck_assert_uint_eq(at, R);
			if (R >= (64u << 10) * (unsigned)n) /* big: every rail a fair share */
				for (int k = 0; k < n; k++) {
					ck_assert_uint_gt(len[k], 0);
					ck_assert_uint_le(len[0] - len[k], 4096u * (unsigned)n);
				}
			for (size_t j = 0; j < ns; j++) {
				uint64_t S = sizes[j], sum = 0, so, sl;

				for (int k = 0; k < n; k++) {
					rail_send_part(R, S, n, k, &so, &sl);
					ck_assert_uint_eq(so, sum);
					if (S <= R) {
						ck_assert_uint_le(sl, len[k]);
						ck_assert(sl == 0 || so == off[k]);
					} else if (k < n - 1) {
						ck_assert_uint_eq(sl, len[k]);
					} else {
						ck_assert_uint_gt(sl, len[k]); /* truncation there */
					}
					sum += sl;
				}
				ck_assert_uint_eq(sum, S);
			}
		}
}
END_TEST

START_TEST(t_busy_poll_choice)
{
	cpu_set_t set;
	long mine;

	ck_assert_int_eq(busy_poll_auto(1), 0);
	ck_assert_int_eq(busy_poll_auto(BUSY_POLL_AUTO_CPUS - 1), 0);
	ck_assert_int_eq(busy_poll_auto(BUSY_POLL_AUTO_CPUS), BUSY_POLL_AUTO_US);
	ck_assert_int_eq(busy_poll_auto(256), BUSY_POLL_AUTO_US);
	ck_assert_int_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	mine = busy_poll_auto(CPU_COUNT(&set));
	unsetenv("ODL_TB5_RCCL_BUSY_POLL_US");
	ck_assert_int_eq(busy_poll_env(), mine);
	setenv("ODL_TB5_RCCL_BUSY_POLL_US", "auto", 1);
	ck_assert_int_eq(busy_poll_env(), mine);
	setenv("ODL_TB5_RCCL_BUSY_POLL_US", "0", 1);
	ck_assert_int_eq(busy_poll_env(), 0);
	setenv("ODL_TB5_RCCL_BUSY_POLL_US", "200", 1);
	ck_assert_int_eq(busy_poll_env(), 200);
	setenv("ODL_TB5_RCCL_BUSY_POLL_US", "10000", 1);
	ck_assert_int_eq(busy_poll_env(), BUSY_POLL_MAX_US);
	setenv("ODL_TB5_RCCL_BUSY_POLL_US", "10001", 1);
	ck_assert_int_eq(busy_poll_env(), mine);
	setenv("ODL_TB5_RCCL_BUSY_POLL_US", "-1", 1);
	ck_assert_int_eq(busy_poll_env(), mine);
	setenv("ODL_TB5_RCCL_BUSY_POLL_US", "50us", 1);
	ck_assert_int_eq(busy_poll_env(), mine);
	unsetenv("ODL_TB5_RCCL_BUSY_POLL_US");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rccl-wire");
	TCase *tc = tcase_create("data");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, t_data_chunk_in_order);
	tcase_add_test(tc, t_data_chunk_too_big);
	tcase_add_test(tc, t_data_chunk_wraps);
	tcase_add_test(tc, t_data_chunk_out_of_order);
	suite_add_tcase(s, tc);
	tc = tcase_create("peer");
	tcase_add_checked_fixture(tc, tdev_setup, tdev_teardown);
	tcase_add_test(tc, t_conn_repeated);
	tcase_add_test(tc, t_conn_repeated_after_accept);
	tcase_add_test(tc, t_conn_bounded);
	tcase_add_test(tc, t_rej_flood_bounded);
	tcase_add_test(tc, t_pong_coalesced);
	tcase_add_test(tc, t_peer_warns_bounded);
	tcase_add_test(tc, t_busy_poll_choice);
	tcase_add_test(tc, t_rail_parts);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
