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

/* control messages queued on d of type t (0: all), to port (0: any) */
static int nqueued_on(const struct odlp_dev *d, uint8_t t, uint32_t port)
{
	int n = 0;

	for (struct ctrl_msg *m = d->cq_head; m; m = m->next)
		if ((!t || m->h.type == t) && (!port || m->dport == port))
			n++;
	return n;
}

static int nqueued(uint8_t t, uint32_t port)
{
	return nqueued_on(&td, t, port);
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

/* ---- a hostile peer, at random ---------------------------------------
 *
 * The plugin's receive side (handle_msg) against many messages made up at
 * random around a send comm with queued sends, a receive comm with posted
 * (grouped, some keyed) receives and the listen comm: every message is
 * handled or dropped without writing outside a receive's buffer (the
 * buffers are exactly their size: the sanitizers see a byte past them),
 * every byte that arrives lands where its DATA says and nowhere else, a
 * malformed message changes nothing but the error count, and nothing the
 * peer sends grows a queue without bound. Deterministic (fixed seeds).
 */
#define FZ_MSGS_PER_DEV 2000
#define FZ_DEVS 150
#define FZ_PORT 7    /* the peer's port */
#define FZ_INST 99   /* the peer's process instance */
#define FZ_FILL 0xa5 /* a receive buffer's bytes before data arrives */
#define FZ_CAP 4096  /* receive entries and sends up to this size */

/* Check's assertions report to the parent on every call, passed or not:
 * far too slow for every message and byte, so only a failure calls it */
#define FZ_ASSERT(cond, ...)                     \
	do {                                     \
		if (!(cond))                     \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)

static uint64_t fz_state;

static uint64_t fz_next(void) /* splitmix64 */
{
	uint64_t z = (fz_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t fz_below(uint32_t n)
{
	return (uint32_t)(fz_next() % n);
}

static bool fz_chance(int percent)
{
	return fz_below(100) < (uint32_t)percent;
}

/* a value a field might hold: small, near a limit, or anything */
static uint64_t fz_wild(void)
{
	static const uint64_t v[] = { 0, 1, 2, 7, 8, 9, 4095, 4096, 4097, 65535, 65536,
				      UINT32_MAX - 1, UINT32_MAX, (uint64_t)UINT32_MAX + 1,
				      INT64_MAX, UINT64_MAX - 4095, UINT64_MAX };

	return fz_chance(50) ? v[fz_below(sizeof(v) / sizeof(v[0]))] : fz_next();
}

static struct odlp_comm *fz_sc, *fz_rc; /* send and receive comm of peer comms 20, 21 */
static int fz_nsends;

static void fz_setup(void)
{
	tdev_setup();
	fz_sc = new_comm(&td, K_SEND);
	fz_rc = new_comm(&td, K_RECV);
	FZ_ASSERT(fz_sc && fz_rc, "no comms");
	fz_sc->peer_port = fz_rc->peer_port = FZ_PORT;
	fz_sc->peer_id = 20;
	fz_rc->peer_id = 21;
	fz_sc->peer_inst = fz_rc->peer_inst = FZ_INST;
	fz_sc->state = fz_rc->state = S_READY;
	td.peers[FZ_PORT].inst = FZ_INST;
	fz_nsends = 0;
}

/* a receive request given back, its entries' buffers freed */
static void fz_free_recv(struct odlp_req *q)
{
	for (int k = 0; k < q->n; k++)
		free(q->rdata[k]);
	q->in_use = 0;
}

static void fz_teardown(void)
{
	for (int i = 0; i < fz_rc->nreqs; i++)
		if (fz_rc->reqs[i].in_use)
			fz_free_recv(&fz_rc->reqs[i]);
	tdev_teardown();
}

/* post a grouped receive of 1..8 entries, as irecv does (some entries keyed) */
static void fz_post_recv(void)
{
	struct odlp_req *r = get_req(fz_rc);

	if (!r)
		return;
	r->n = 1 + (int)fz_below(MAX_RECVS);
	r->seq = fz_rc->next_seq++;
	for (int i = 0; i < r->n; i++) {
		uint64_t cap = fz_chance(20) ? 0 : fz_below(FZ_CAP + 1);

		/* exactly cap bytes (at least one, never read at size 0) */
		r->rdata[i] = malloc(cap ? cap : 1);
		FZ_ASSERT(r->rdata[i], "out of memory");
		memset(r->rdata[i], FZ_FILL, cap);
		r->rcap[i] = cap;
		r->rtag[i] = (int)fz_below(4);
		if (fz_chance(25)) {
			int slot = (int)fz_below(KTAB);

			if (!td.krx_busy[slot]) {
				td.krx_busy[slot] = true;
				td.krx[slot].key = 1000 + (uint32_t)slot;
				td.krx[slot].r = r;
				td.krx[slot].idx = i;
				r->rkey[i] = td.krx[slot].key;
				r->rks[i] = slot;
			}
		}
	}
}

/* queue a send, as isend does before its CTS is there */
static void fz_post_send(void)
{
	static char src[FZ_CAP + 64];
	struct odlp_req *r;

	if (fz_nsends >= fz_sc->nreqs / 2 || !(r = get_req(fz_sc)))
		return;
	r->is_send = 1;
	r->sdata = src;
	r->ssize = fz_below(FZ_CAP + 64);
	r->stag = (int)fz_below(4);
	req_push(&fz_sc->sq_head, &fz_sc->sq_tail, r);
	fz_nsends++;
	match_sends(fz_sc);
}

/* the receive request a DATA is aimed at: mostly a posted one */
static struct odlp_req *fz_some_recv(void)
{
	for (int tries = 0; tries < 4; tries++) {
		struct odlp_req *r = &fz_rc->reqs[fz_below((uint32_t)fz_rc->nreqs)];

		if (r->in_use)
			return r;
	}
	return NULL;
}

static size_t fz_answers(void)
{
	size_t n = 0;

	for (struct ctrl_msg *m = td.cq_head; m; m = m->next)
		n += is_answer(m->h.type);
	return n;
}

/* everything that must hold whatever the peer sent */
static void fz_check(uint64_t seed, int at)
{
	FZ_ASSERT(fz_sc->cts_count >= 0 && fz_sc->cts_count <= CTS_RING,
		      "seed %llu message %d: %d CTS entries", (unsigned long long)seed, at,
		      fz_sc->cts_count);
	FZ_ASSERT(tl->npend <= PEND_MAX, "seed %llu message %d: %d connects wait",
		      (unsigned long long)seed, at, tl->npend);
	FZ_ASSERT(fz_answers() <= ANSWERS_MAX && td.cq_answers <= ANSWERS_MAX,
		      "seed %llu message %d: %zu answers queued", (unsigned long long)seed, at,
		      fz_answers());
	for (int i = 0; i < fz_rc->nreqs; i++) {
		struct odlp_req *r = &fz_rc->reqs[i];
		int ndone = 0;

		if (!r->in_use)
			continue;
		for (int k = 0; k < r->n; k++) {
			FZ_ASSERT(r->rgot[k] <= r->rcap[k],
				      "seed %llu message %d: entry has %llu bytes in a room of %llu",
				      (unsigned long long)seed, at, (unsigned long long)r->rgot[k],
				      (unsigned long long)r->rcap[k]);
			ndone += r->rdone[k];
		}
		FZ_ASSERT(ndone == r->ndone && r->done == (r->ndone == r->n),
			  "seed %llu message %d: %d of %d entries done, %d counted, done %d",
			  (unsigned long long)seed, at, ndone, r->n, r->ndone, r->done);
	}
	/* a send is answered by exactly one CTS entry's room */
	for (int i = 0; i < fz_sc->nreqs; i++) {
		struct odlp_req *r = &fz_sc->reqs[i];

		FZ_ASSERT(!r->in_use || !r->matched || r->ssize <= r->cap ||
				  (r->done && r->err == ncclInvalidUsage),
			  "seed %llu message %d: a send larger than its receive did not fail",
			  (unsigned long long)seed, at);
	}
}

/* entry k of r: what DATA brought (want) as far as it arrived, the fill after */
static void fz_check_entry(const struct odlp_req *r, int k, const uint8_t *want, uint64_t seed,
			   int at)
{
	const uint8_t *b = (const uint8_t *)r->rdata[k];

	for (uint64_t j = 0; j < r->rcap[k]; j++) {
		uint8_t w = j < r->rgot[k] ? want[j] : FZ_FILL;

		FZ_ASSERT(b[j] == w, "seed %llu message %d: byte %llu of an entry is %#x, want %#x",
			      (unsigned long long)seed, at, (unsigned long long)j, b[j], w);
	}
}

/* one message made up; returns whether it is malformed on purpose */
static bool fz_message(char *buf, uint64_t *blen, struct odlp_req **target, int *tidx)
{
	struct wire_hdr *h = (struct wire_hdr *)buf;
	uint32_t plen = 0;
	uint32_t pick = fz_below(100);

	memset(h, 0, sizeof(*h));
	h->magic = WIRE_MAGIC;
	h->sport = fz_chance(90) ? FZ_PORT : (uint8_t)fz_below(256);
	h->total = FZ_INST;
	*target = NULL;
	if (pick < 35) { /* DATA (DERR now and then) into a posted receive */
		struct odlp_req *r = fz_some_recv();
		uint64_t have = 0, room = 0;

		h->type = fz_chance(92) ? M_DATA : M_DERR;
		h->dst = fz_chance(95) ? fz_rc->id : (uint32_t)fz_wild();
		h->src = fz_rc->peer_id;
		if (r) {
			int k = fz_chance(95) ? (int)fz_below((uint32_t)r->n) : (int)fz_below(MAX_RECVS + 2);

			h->seq = fz_chance(95) ? r->seq : (uint32_t)fz_wild();
			h->idx = fz_chance(98) ? (uint32_t)k : (uint32_t)fz_wild();
			if (k < r->n) {
				have = r->rgot[k];
				room = r->rcap[k];
				*target = r;
				*tidx = k;
			}
		} else {
			h->seq = (uint32_t)fz_wild();
			h->idx = (uint32_t)fz_wild();
		}
		h->total = fz_chance(80) ? fz_below((uint32_t)room + 1) : fz_chance(50) ? room + 1 : fz_wild();
		h->off = fz_chance(85) ? have : fz_wild();
		if (h->total >= h->off && fz_chance(85))
			plen = (uint32_t)(fz_below((uint32_t)(h->total - h->off < FZ_CAP ? h->total - h->off : FZ_CAP) + 1));
		else
			plen = fz_below(FZ_CAP + 16);
		for (uint32_t j = 0; j < plen; j++) {
			uint8_t v = (uint8_t)fz_next();

			buf[sizeof(*h) + j] = (char)(v == FZ_FILL ? 0 : v);
		}
	} else if (pick < 60) { /* CTS to the send comm */
		struct wire_cts_ent *e = (void *)(buf + sizeof(*h));
		uint32_t n = fz_chance(90) ? 1 + fz_below(MAX_RECVS) : (uint32_t)fz_wild();

		h->type = M_CTS;
		h->dst = fz_chance(95) ? fz_sc->id : (uint32_t)fz_wild();
		h->src = fz_sc->peer_id;
		h->seq = fz_below(1000);
		h->idx = n;
		for (uint32_t j = 0; j < MAX_RECVS + 1; j++) {
			e[j].tag = fz_chance(90) ? (int32_t)fz_below(4) : (int32_t)fz_wild();
			e[j].key = fz_chance(70) ? 0 : (uint32_t)fz_wild();
			e[j].size = fz_chance(80) ? fz_below(FZ_CAP + 64) : fz_wild();
		}
		plen = n <= MAX_RECVS + 1 ? n * (uint32_t)sizeof(*e) : (uint32_t)sizeof(*e);
		if (fz_chance(5))
			plen = fz_below((MAX_RECVS + 1) * (uint32_t)sizeof(*e) + 1);
	} else if (pick < 72) { /* connects, right and wrong */
		h->type = M_CONN;
		h->dst = fz_chance(80) ? tl->id : (uint32_t)fz_wild();
		h->src = 100 + fz_below(200);
		h->nonce = fz_chance(70) ? tl->nonce : fz_next();
		h->total = fz_chance(95) ? FZ_INST : fz_wild();
	} else if (pick < 97) { /* the rest of the protocol, at any comm */
		static const uint8_t types[] = { M_PING, M_PONG, M_ACK, M_REJ, M_CLOSE };
		uint32_t ids[] = { tl->id, fz_sc->id, fz_rc->id, (uint32_t)fz_wild() };

		h->type = types[fz_below(sizeof(types))];
		h->dst = ids[fz_below(4)];
		h->src = fz_chance(50) ? 20 + fz_below(2) : (uint32_t)fz_wild();
		h->seq = (uint32_t)fz_wild();
		h->total = fz_chance(97) ? FZ_INST : fz_wild();
	} else { /* no such type */
		h->type = (uint8_t)(M_CLOSE + 1 + fz_below(255 - M_CLOSE));
		h->dst = (uint32_t)fz_wild();
	}
	h->len = plen;
	*blen = sizeof(*h) + plen;
	/* broken on purpose: short, the wrong magic, a payload longer than the message */
	switch (fz_below(40)) {
	case 0:
		*blen = fz_below(sizeof(*h));
		return true;
	case 1:
		h->magic = (uint16_t)(WIRE_MAGIC ^ (1u << fz_below(16)));
		return true;
	case 2:
		h->len = plen + 1 + fz_below(1000);
		return true;
	case 3:
		*blen = sizeof(*h) + fz_below(plen + 1);
		if (*blen == sizeof(*h) + plen)
			*blen -= 1;
		return plen > 0;
	default:
		return false;
	}
}

START_TEST(t_fuzz_peer)
{
	static char buf[sizeof(struct wire_hdr) + FZ_CAP + 16 + (MAX_RECVS + 1) * sizeof(struct wire_cts_ent)];
	static uint8_t shadow[FZ_CAP];
	uint64_t seed = 0x0d1b7b5ull * 1000 + (uint64_t)_i;
	/* how often the link takes a queued message: on some devices never,
	 * so the peer's answers pile up against their bound */
	int pop = _i % 3 == 0 ? 0 : 30;
	/* and on others nothing is sent: the peer's CTSs pile up */
	int sends = _i % 3 == 1 ? 0 : 20;

	fz_state = seed;
	for (int at = 0; at < FZ_MSGS_PER_DEV; at++) {
		struct odlp_req *r;
		uint64_t blen, errs;
		int k = 0, cts, npend, nq;
		bool broken;

		if (fz_chance(30))
			fz_post_recv();
		if (fz_chance(sends))
			fz_post_send();
		if (td.cq_head && fz_chance(pop))
			cq_pop(&td); /* the link took one */
		errs = g_stats->errors;
		cts = fz_sc->cts_count;
		npend = tl->npend;
		nq = nqueued(0, 0);
		broken = fz_message(buf, &blen, &r, &k);
		/* what the target entry holds before */
		uint64_t got = r ? r->rgot[k] : 0, cap = r ? r->rcap[k] : 0;

		if (r)
			memcpy(shadow, r->rdata[k], cap);
		/* exactly the message's bytes: a read past them is seen */
		char *msg = malloc(blen ? blen : 1);

		FZ_ASSERT(msg, "out of memory");
		memcpy(msg, buf, blen);
		handle_msg(&td, msg, blen, 1);
		free(msg);
		fz_check(seed, at);
		if (broken) {
			/* dropped whole, counted, nothing else changed */
			FZ_ASSERT(g_stats->errors == errs + 1,
				      "seed %llu message %d: a malformed message was not counted",
				      (unsigned long long)seed, at);
			FZ_ASSERT(fz_sc->cts_count == cts && tl->npend == npend && nqueued(0, 0) == nq,
				  "seed %llu message %d: a malformed message changed the state",
				  (unsigned long long)seed, at);
		}
		if (r) {
			const struct wire_hdr *h = (const void *)buf;

			if (r->rgot[k] != got) {
				/* it took exactly the DATA's bytes at exactly its offset */
				FZ_ASSERT(!broken && h->type == M_DATA && h->off == got &&
						  r->rgot[k] == got + h->len,
					  "seed %llu message %d: an entry took %llu bytes from a %s at %llu",
					  (unsigned long long)seed, at,
					  (unsigned long long)(r->rgot[k] - got),
					  h->type == M_DATA ? "DATA" : "message", (unsigned long long)h->off);
				memcpy(shadow + got, buf + sizeof(*h), h->len);
			}
			fz_check_entry(r, k, shadow, seed, at);
		}
		/* finished receives give their request back, as test() does */
		for (int i = 0; i < fz_rc->nreqs; i++) {
			struct odlp_req *q = &fz_rc->reqs[i];

			if (q->in_use && q->done)
				fz_free_recv(q);
		}
	}
	/* the messages reached the data path, and the bounds were met */
	FZ_ASSERT(g_stats->rx_msgs > 0 && g_stats->rx_bytes > 0 && g_stats->err_truncated > 0 &&
			  g_stats->errors > 0,
		  "seed %llu: entries done %llu, bytes %llu, truncated %llu, errors %llu",
		  (unsigned long long)seed, (unsigned long long)g_stats->rx_msgs,
		  (unsigned long long)g_stats->rx_bytes, (unsigned long long)g_stats->err_truncated,
		  (unsigned long long)g_stats->errors);
	FZ_ASSERT(tl->npend == PEND_MAX, "seed %llu: %d connects wait", (unsigned long long)seed,
		  tl->npend);
	FZ_ASSERT(pop || td.cq_answers == ANSWERS_MAX, "seed %llu: %d answers queued",
		  (unsigned long long)seed, td.cq_answers);
}
END_TEST

/* h (room for one entry after it): a CTS of one receive from the peer's
 * comm 20 on port 7 to comm sc */
static void cts_from_20(struct wire_hdr *h, const struct odlp_comm *sc)
{
	h->magic = WIRE_MAGIC;
	h->type = M_CTS;
	h->sport = 7;
	h->dst = sc->id;
	h->src = 20;
	h->idx = 1;
	h->len = sizeof(struct wire_cts_ent);
}

/* CTSs beyond the ring's room fail the comm instead of overwriting entries */
START_TEST(t_cts_ring_bounded)
{
	struct odlp_comm *sc = new_comm(&td, K_SEND);
	char buf[sizeof(struct wire_hdr) + sizeof(struct wire_cts_ent)] = { 0 };
	struct wire_hdr *h = (struct wire_hdr *)buf;

	ck_assert_ptr_nonnull(sc);
	sc->peer_port = 7;
	sc->peer_id = 20;
	sc->state = S_READY;
	cts_from_20(h, sc);
	for (int i = 0; i < CTS_RING; i++) {
		h->seq = (uint32_t)i;
		handle_msg(&td, buf, sizeof(buf), 1);
	}
	ck_assert_int_eq(sc->cts_count, CTS_RING);
	ck_assert_int_eq(sc->state, S_READY);
	ck_assert_int_eq(t_warns, 0);
	h->seq = CTS_RING;
	handle_msg(&td, buf, sizeof(buf), 1);
	ck_assert_int_eq(sc->cts_count, CTS_RING);
	ck_assert_int_eq(sc->state, S_FAILED);
	ck_assert_int_eq(t_warns, 1);
	/* the entries there are untouched: the first is still the first */
	ck_assert_uint_eq(sc->cts[sc->cts_head].seq, 0);
}
END_TEST

/* A CTS for a send comm whose ACK has not come is dropped (the comm may
 * be one given up locally), so the ACK of an accept must leave at least
 * as urgently as the new comm's CTS: urgent messages keep their order,
 * but pass plain ones queued behind bulk data. An ACK sent plain while
 * the CTS went urgent could be passed, and that connect's first send
 * waited for good. */
START_TEST(t_ack_not_passed_by_cts)
{
	struct odlp_comm *sc = new_comm(&td, K_SEND);
	char buf[sizeof(struct wire_hdr) + sizeof(struct wire_cts_ent)] = { 0 };
	struct wire_hdr *h = (struct wire_hdr *)buf;
	bool saved = td.urgent_cts;

	ck_assert_ptr_nonnull(sc);
	sc->peer_port = 7;
	sc->state = S_PENDING;
	cts_from_20(h, sc);
	handle_msg(&td, buf, sizeof(buf), 1);
	ck_assert_int_eq(sc->cts_count, 0); /* before the ACK: dropped */
	peer_says(M_ACK, 7, sc->id, 20, 0, 99);
	ck_assert_int_eq(sc->state, S_READY);
	handle_msg(&td, buf, sizeof(buf), 1);
	ck_assert_int_eq(sc->cts_count, 1);
	/* so the ACK is urgent whenever the CTS is */
	for (int u = 0; u <= 1; u++) {
		td.urgent_cts = u;
		ck_assert(ctrl_urgent(&td, M_ACK) == ctrl_urgent(&td, M_CTS));
		ck_assert(ctrl_urgent(&td, M_CTS) == (u == 1));
		ck_assert(ctrl_urgent(&td, M_PING) && ctrl_urgent(&td, M_PONG));
		/* data and the end of a comm stay in line behind it */
		ck_assert(!ctrl_urgent(&td, M_DATA) && !ctrl_urgent(&td, M_CLOSE));
	}
	td.urgent_cts = saved;
}
END_TEST

/* the peer accepts our connect and closes that comm at once, both before
 * NCCL calls connect again: the connect fails (it used to report "not
 * yet" for ever, the comm stuck between ready and closed) */
START_TEST(t_connect_peer_closed)
{
	struct odlp_comm *sc = new_comm(&td, K_SEND);
	struct odl_handle hd = { 0 };
	void *out = NULL;
	uint32_t id;

	ck_assert_ptr_nonnull(sc);
	id = sc->id;
	sc->state = S_PENDING;
	sc->peer_port = 7;
	sc->handle_cookie = 42;
	hd.stage_cookie = g_instance;
	hd.stage_comm = (uintptr_t)sc;
	hd.listen_nonce = 42;
	ck_assert_int_eq(connect_done(&td, sc, &hd, &out), ncclSuccess);
	ck_assert_ptr_null(out); /* no answer yet */
	peer_says(M_ACK, 7, id, 30, 0, 99);
	peer_says(M_CLOSE, 7, id, 30, 0, 99);
	ck_assert_int_eq(sc->state, S_PEER_CLOSED);
	ck_assert_int_eq(connect_done(&td, sc, &hd, &out), ncclRemoteError);
	ck_assert_ptr_null(out);
	ck_assert_ptr_null(find_comm(&td, id));
	ck_assert_uint_eq(hd.stage_cookie, 0);
	ck_assert_int_eq(t_warns, 1);
	/* accepted and still open: handed over */
	sc = new_comm(&td, K_SEND);
	ck_assert_ptr_nonnull(sc);
	sc->state = S_PENDING;
	sc->peer_port = 7;
	peer_says(M_ACK, 7, sc->id, 31, 0, 99);
	ck_assert_int_eq(connect_done(&td, sc, &hd, &out), ncclSuccess);
	ck_assert_ptr_eq(out, sc);
}
END_TEST

/* the ACK says how large the acceptor's staging slot is: DATA chunks fit
 * the smaller of the two (ODL_TB5_RCCL_CHUNK set on one side only used to
 * lose every chunk the receiver could not take, a receive that never
 * ended); 0 (an older plugin) means as ours; a slot too small for a header
 * and a byte fails the connect */
START_TEST(t_ack_slot_size)
{
	struct odlp_comm *sc;
	struct wire_hdr h = { .magic = WIRE_MAGIC, .type = M_ACK, .sport = 7, .src = 40,
			      .total = 99 };

	td.slot = 262144;
	for (int k = 0; k < 4; k++) {
		static const uint32_t peer[4] = { 65536, 0, 1048576, 4096 };
		static const uint64_t want[4] = { 65536, 262144, 262144, 4096 };

		sc = new_comm(&td, K_SEND);
		ck_assert_ptr_nonnull(sc);
		sc->state = S_PENDING;
		sc->peer_port = 7;
		h.dst = sc->id;
		h.idx = peer[k];
		handle_msg(&td, (const char *)&h, sizeof(h), 1);
		ck_assert_int_eq(sc->state, S_READY);
		ck_assert_uint_eq(data_chunk_max(&td, sc), want[k] - sizeof(struct wire_hdr));
	}
	ck_assert_int_eq(t_warns, 0);
	sc = new_comm(&td, K_SEND);
	ck_assert_ptr_nonnull(sc);
	sc->state = S_PENDING;
	sc->peer_port = 7;
	h.dst = sc->id;
	h.idx = sizeof(struct wire_hdr);
	td.wake = false;
	handle_msg(&td, (const char *)&h, sizeof(h), 1);
	ck_assert_int_eq(sc->state, S_FAILED);
	ck_assert_int_eq(t_warns, 1);
	/* the comm the peer accepted is closed, and test() callers woken */
	ck_assert_int_eq(nqueued(M_CLOSE, 7), 1);
	ck_assert_uint_eq(td.cq_tail->h.dst, 40);
	ck_assert_uint_eq(td.cq_tail->h.src, sc->id);
	ck_assert(td.wake);
}
END_TEST

/* an ACK for a comm we do not have (a connect given up before the peer
 * accepted it): the comm the peer made for it is told CLOSE, an answer
 * bounded like REJ and PONG */
START_TEST(t_ack_unknown_answered)
{
	peer_says(M_ACK, 7, 555, 31, 0, 99);
	ck_assert_int_eq(nqueued(M_CLOSE, 7), 1);
	ck_assert_uint_eq(td.cq_tail->h.dst, 31);
	ck_assert_uint_eq(td.cq_tail->h.src, 555);
	/* to our listen comm: not a connect of ours, nothing to close */
	peer_says(M_ACK, 7, tl->id, 32, 0, 99);
	ck_assert_int_eq(nqueued(0, 0), 1);
	for (uint32_t i = 0; i < 10 * ANSWERS_MAX; i++)
		peer_says(M_ACK, 7, 1000 + i, 40 + i, 0, 99);
	ck_assert_int_eq(nqueued(M_CLOSE, 7), ANSWERS_MAX);
	ck_assert_int_eq(td.cq_answers, ANSWERS_MAX);
	cq_pop(&td);
	ck_assert_int_eq(td.cq_answers, ANSWERS_MAX - 1);
	peer_says(M_ACK, 7, 5000, 5001, 0, 99);
	ck_assert_int_eq(nqueued(M_CLOSE, 7), ANSWERS_MAX);
	/* a CLOSE of our own comm is no answer: queued whatever the count */
	struct odlp_comm *sc = new_comm(&td, K_SEND);

	ck_assert_ptr_nonnull(sc);
	sc->state = S_READY;
	sc->peer_port = 7;
	sc->peer_id = 77;
	ck_assert_int_eq(close_comm(sc, K_SEND), ncclSuccess);
	ck_assert_int_eq(nqueued(M_CLOSE, 7), ANSWERS_MAX + 1);
	ck_assert_int_eq(td.cq_answers, ANSWERS_MAX);
	while (td.cq_head)
		cq_pop(&td);
	ck_assert_int_eq(td.cq_answers, 0);
}
END_TEST

/* a fused connect that fails on one rail gives up the others' connects in
 * whatever state they reached (they used to stay on their devices for
 * good, so those devices could never be reopened) */
START_TEST(t_connect_abandon)
{
	struct odlp_dev *d = &g_devs[0];
	struct odl_handle hp = { 0 }, hr = { 0 }, hn = { 0 };
	struct odlp_comm *p, *r;
	uint32_t pid, rid;

	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "rail");
	d->port = 5;
	d->next_id = 1;
	g_ndev = 1;
	p = new_comm(d, K_SEND);
	r = new_comm(d, K_SEND);
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(r);
	pid = p->id;
	rid = r->id;
	p->state = S_PENDING; /* CONN sent, no answer yet */
	p->peer_port = 7;
	p->handle_cookie = 1;
	r->state = S_READY; /* accepted since the last call */
	r->peer_port = 7;
	r->peer_id = 60;
	r->handle_cookie = 2;
	hp.stage_cookie = hr.stage_cookie = hn.stage_cookie = g_instance;
	hp.stage_comm = (uintptr_t)p;
	hp.listen_nonce = 1;
	hr.stage_comm = (uintptr_t)r;
	hr.listen_nonce = 2;
	hn.stage_comm = (uintptr_t)r; /* the wrong listener: not this connect */
	hn.listen_nonce = 3;
	connect_abandon(d, &hn);
	ck_assert_ptr_eq(find_comm(d, rid), r);
	ck_assert_uint_eq(hn.stage_cookie, 0);
	connect_abandon(d, &hp);
	ck_assert_ptr_null(find_comm(d, pid));
	ck_assert_int_eq(nqueued_on(d, 0, 0), 0);
	connect_abandon(d, &hr);
	ck_assert_ptr_null(find_comm(d, rid));
	ck_assert_ptr_null(d->comms);
	ck_assert_int_eq(nqueued_on(d, M_CLOSE, 7), 1);
	ck_assert_uint_eq(d->cq_tail->h.dst, 60);
	/* the pending one's accept comes later: the peer's comm hears CLOSE */
	{
		struct wire_hdr h = { .magic = WIRE_MAGIC, .type = M_ACK, .sport = 7,
				      .dst = pid, .src = 61, .total = 99 };

		handle_msg(d, (const char *)&h, sizeof(h), 1);
	}
	ck_assert_int_eq(nqueued_on(d, M_CLOSE, 7), 2);
	ck_assert_uint_eq(d->cq_tail->h.dst, 61);
	ck_assert_uint_eq(d->cq_tail->h.src, pid);
	while (d->cq_head)
		cq_pop(d);
	g_ndev = 0;
}
END_TEST

/* exit() without the comms destroyed (NCCL's proxy thread may still be
 * in test() on them): the destructor leaves them, their device's locks and
 * the statistics alone (it freed the comms and destroyed the locks under
 * that thread); once nothing is open it takes the devices down */
START_TEST(t_exit_keeps_open_comms)
{
	struct odlp_dev *d = &g_devs[0];
	struct odlp_comm *c;
	uint32_t id;

	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "exit");
	d->port = 5;
	d->next_id = 1;
	pthread_mutex_init(&d->mu, NULL);
	pthread_mutex_init(&d->poll_mu, NULL);
	d->locks_init = true;
	g_ndev = 1;
	c = new_comm(d, K_RECV);
	ck_assert_ptr_nonnull(c);
	id = c->id;
	plugin_fini();
	ck_assert_int_eq(g_ndev, 1);
	ck_assert(d->locks_init);
	ck_assert_ptr_eq(find_comm(d, id), c);
	/* closed: the next run of the destructor takes the device down */
	unlink_comm(d, c);
	free_comm(c);
	plugin_fini();
	ck_assert_int_eq(g_ndev, 0);
	ck_assert(!d->locks_init);
}
END_TEST

/* the comm a fused rail's connect staged is on the device that reaches the
 * listener (route_dev), not necessarily the one it was asked for: that is
 * where connect_abandon gives it up */
START_TEST(t_connect_abandon_routed)
{
	struct odlp_dev *d0 = &g_devs[0], *d1 = &g_devs[1];
	struct odl_handle hd = { 0 };
	struct odlp_comm *c;
	uint32_t id;

	memset(d0, 0, sizeof(*d0));
	memset(d1, 0, sizeof(*d1));
	snprintf(d0->name, sizeof(d0->name), "asked");
	snprintf(d1->name, sizeof(d1->name), "reaches");
	d0->next_id = d1->next_id = 1;
	memset(d0->info.peer_uuid, 0x11, 16);
	memset(d1->info.peer_uuid, 0x22, 16);
	g_ndev = 2;
	c = new_comm(d1, K_SEND);
	ck_assert_ptr_nonnull(c);
	id = c->id;
	c->state = S_PENDING;
	c->peer_port = 7;
	c->handle_cookie = 9;
	memset(hd.listener_uuid, 0x22, 16);
	hd.stage_cookie = g_instance;
	hd.stage_comm = (uintptr_t)c;
	hd.listen_nonce = 9;
	connect_abandon(d0, &hd);
	ck_assert_ptr_null(find_comm(d1, id));
	ck_assert_ptr_null(d1->comms);
	ck_assert_uint_eq(hd.stage_cookie, 0);
	while (d1->cq_head)
		cq_pop(d1);
	g_ndev = 0;
}
END_TEST

/* a keyed (zero-copy) message larger than the receive its CTS named: the
 * library drops it with -EMSGSIZE; that receive fails with
 * ncclRemoteError, the device and its other comms go on (it used to mark
 * the whole device dead) */
START_TEST(t_keyed_oversize)
{
	struct odlp_comm *rc = new_comm(&td, K_RECV);
	struct odl_tb5_completion cp = { 0 };
	struct odlp_req *r;
	int slot = 3;

	ck_assert_ptr_nonnull(rc);
	rc->state = S_READY;
	rc->peer_port = 7;
	rc->peer_id = 20;
	r = get_req(rc);
	ck_assert_ptr_nonnull(r);
	r->n = 2;
	r->rcap[0] = r->rcap[1] = 4096;
	r->rkey[1] = 99;
	td.krx[slot].r = r;
	td.krx[slot].idx = 1;
	td.krx_busy[slot] = true;
	cp.op = ODL_TB5_OP_RECV;
	cp.cookie = KC_RX | (uint64_t)slot;
	cp.status = -EMSGSIZE;
	cp.length = 8192;
	zc_complete(&td, &cp, 1);
	ck_assert(!td.dead);
	ck_assert(!td.krx_busy[slot]);
	ck_assert_int_eq(r->rdone[1], 1);
	ck_assert_int_eq(r->rdone[0], 0);
	ck_assert_int_eq(r->err, ncclRemoteError);
	ck_assert_uint_eq(r->rtotal[1], 8192);
	ck_assert_int_eq(rc->state, S_READY);
	ck_assert_int_eq(t_warns, 1);
	/* another error of a keyed receive (the link) still fails the device */
	td.krx[slot].r = r;
	td.krx[slot].idx = 0;
	td.krx_busy[slot] = true;
	cp.status = -EIO;
	zc_complete(&td, &cp, 1);
	ck_assert(td.dead);
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
	tcase_add_test(tc, t_cts_ring_bounded);
	tcase_add_test(tc, t_ack_not_passed_by_cts);
	tcase_add_test(tc, t_connect_peer_closed);
	tcase_add_test(tc, t_ack_unknown_answered);
	tcase_add_test(tc, t_ack_slot_size);
	tcase_add_test(tc, t_connect_abandon);
	tcase_add_test(tc, t_connect_abandon_routed);
	tcase_add_test(tc, t_exit_keeps_open_comms);
	tcase_add_test(tc, t_keyed_oversize);
	suite_add_tcase(s, tc);
	tc = tcase_create("fuzz");
	tcase_add_checked_fixture(tc, fz_setup, fz_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, t_fuzz_peer, 0, FZ_DEVS);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
