// SPDX-License-Identifier: MIT
/*
 * netconf - conformance harness for NCCL/RCCL net plugins (written for the
 * OdinLink odl_tb5 plugin, but it only uses the ncclNet ABI).
 *
 * It loads the plugin the way NCCL/RCCL do (file-name rules from
 * NCCL_NET_PLUGIN, dlopen RTLD_NOW|RTLD_LOCAL, newest ncclNetPlugin_vN
 * first), checks the function table, and drives two ranks the way NCCL's
 * proxy does: one thread alternating connect/accept, NULL-request retries,
 * test polling, closeListen right after accept. Through v11 and later it
 * holds a context per init like NCCL >= 2.28 (one per communicator), ends
 * with finalize, and checks what the contexts promise (t_contexts).
 *
 * Modes:
 *   netconf [opts]                       spawn two ranks on this host; each child
 *                                        gets ODL_TB5_DEVICE=shm:<name>:<a|b>
 *                                        (unless --no-shm); out-of-band channel
 *                                        is a socketpair
 *   netconf --rank 0 --oob-listen PORT   one rank per machine (two VMs): the
 *   netconf --rank 1 --oob-connect H:P   device comes from ODL_TB5_DEVICE (e.g.
 *                                        "0" for /dev/odl_tb5_0) or the plugin's
 *                                        own discovery; OOB over TCP
 *   netconf --load-only                  loader rules + table checks + init, one
 *                                        process (the "fresh process" test)
 *   netconf --rank R ... --bench BYTES   all-reduce benchmark instead of the
 *                                        conformance sequence (see bench_allreduce)
 *   netconf ... --bench-lat SIZES        small-message latency instead of the
 *                                        conformance sequence: ping-pong and
 *                                        all-reduce per size (see bench_latency;
 *                                        --lat-iters N, default 1000)
 *   netconf ... --fail kill|stop|unplug  link failure instead of the conformance
 *                                        sequence (see t_link_failure): kill
 *                                        (spawn mode) rank 1 dies mid-transfer;
 *                                        stop (spawn mode) rank 1 stops
 *                                        (SIGSTOP): the keepalive must notice;
 *                                        unplug (two VMs) the cable is pulled
 *                                        and plugged back twice, then the
 *                                        scenario kills rank 1; stop-one (two
 *                                        VMs, rank 0 with --oob-listen2 P2
 *                                        too) one of rank 0's two peers stops
 *                                        while the other keeps exchanging
 *                                        (see t_stop_one)
 *   netconf --pairs N [opts]             spawn mode with N rank pairs on one shm
 *                                        device at once (2..8), started one
 *                                        after the other: pair k's processes
 *                                        must get port 78 + k (the plugin's
 *                                        first free port); implies --shared
 *   netconf --rails N [opts]             several cables to one peer: N devices
 *   netconf --rank R ... --rails N       (spawn mode: N shm devices, rank 1's
 *                                        listed in reverse order), an
 *                                        all-reduce divided between them, rank
 *                                        1's device numbers as they are, then
 *                                        shifted (see t_rails); with --bench
 *                                        the benchmark instead, its channels
 *                                        on the devices in turn, one thread
 *                                        driving them all (NCCL's proxy)
 *   netconf ... --rails N --fuse         the N devices fused into one
 *                                        (makeVDevice, v9 and later; see
 *                                        t_fuse), then the conformance
 *                                        sequence (or --bench) over the fused
 *                                        device: every message striped
 *   netconf --rank R ... --shared        the device is shared with other rank
 *                                        pairs: bad calls, handshakes, the port
 *                                        check (shm), sizes, grouped receives,
 *                                        all-reduce, all-gather; nothing that
 *                                        counts machine-wide (statistics,
 *                                        idle wake-ups). NETCONF_EXPECT_PORT:
 *                                        the port getProperties must report
 *   netconf --rank R ... --dmabuf        also regMrDmaBuf's data path, with
 *                                        DMA-bufs from the test exporter
 *                                        (/dev/odl_dmabuf_exp, odl_dmabuf_exp.ko)
 * Options: --api N (7..12, default newest exported), --flavour nccl|rccl
 *          (file-name rule; default rccl), --quick (sizes up to 4 MiB),
 *          --max-size BYTES, --timeout SEC (spawn mode, default 300),
 *          --rank1-env VAR=VALUE (spawn mode: set in rank 1 only, e.g. a
 *          different ODL_TB5_RCCL_CHUNK),
 *          --deadline SEC (per operation, default 30), --call-bound SEC (how
 *          long a non-blocking call may take, default 1; the delayed
 *          handshakes stall the peer longer than this), --iters N,
 *          --slice BYTES, --steps N (slices in flight per direction and
 *          channel, 1..32, default 8), --channels N (--bench: connections the
 *          all-reduce is divided between, 1..8, default 2), --op sum|none and --in-place (--bench; none: the same
 *          data movement with the reduction skipped, every byte still
 *          checked; --in-place: the result overwrites the input, default out
 *          of place), --reducer inline|thread (--bench: who reduces, the
 *          thread driving the plugin or a thread of its own, see
 *          g_bench_reducer_thread), --timeline (--bench: when each slice's
 *          send, receive and reduction completed, per timed iteration).
 * Output: TAP lines "ok N - rankR: name" / "not ok ...".
 *
 * Built with -DNETCONF_STATIC (netconf.static, for the busybox guests, which
 * have no shared libc) the plugin's objects are linked in and the tables are
 * taken from the exported ncclNetPlugin_vN symbols directly instead of
 * dlopen()/dlsym(); everything after the lookup is the same code.
 */
#include <arpa/inet.h>
#include <dirent.h>
#ifndef NETCONF_STATIC
#include <dlfcn.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "odl_nccl_net.h"
#include "odl_tb5_rccl_profiler.h"
#include "odl_tb5_rccl_stats.h"

/* ------------------------------------------------------------------ */
/* reporting */

static int g_rank = -1;
static int g_tapn;
static int g_oob = -1;

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

#define FAILF(...)                                                                    \
	do {                                                                          \
		say("not ok %d - rank%d: %s:%d: ", ++g_tapn, g_rank, __func__, __LINE__); \
		say(__VA_ARGS__);                                                     \
		say("\n");                                                            \
		exit(1);                                                              \
	} while (0)
#define CHECK(cond, ...)                      \
	do {                                  \
		if (!(cond))                  \
			FAILF(__VA_ARGS__);   \
	} while (0)
/* r is evaluated once: it is often the call itself */
#define OKR(r, what)                                                       \
	do {                                                               \
		ncclResult_t okr_ = (r);                                   \
		CHECK(okr_ == ncclSuccess, "%s returned %d", what, (int)okr_); \
	} while (0)

static int g_pass_as_comment; /* spawn mode: rank 1's passes are comments */
static void pass(const char *name)
{
	if (g_pass_as_comment)
		say("# rank%d ok: %s\n", g_rank, name);
	else
		say("ok %d - rank%d: %s\n", ++g_tapn, g_rank, name);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------ */
/* out-of-band channel (socketpair locally, TCP across machines) */

static void oob_write(const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t k = write(g_oob, c, n);
		if (k <= 0) {
			if (k < 0 && errno == EINTR)
				continue;
			FAILF("oob write: %s", strerror(errno));
		}
		c += k;
		n -= (size_t)k;
	}
}

static void oob_read(void *p, size_t n)
{
	char *c = p;

	while (n) {
		ssize_t k = read(g_oob, c, n);
		if (k <= 0) {
			if (k < 0 && errno == EINTR)
				continue;
			FAILF("oob read: %s (peer failed?)", k == 0 ? "EOF" : strerror(errno));
		}
		c += k;
		n -= (size_t)k;
	}
}

static void barrier(void)
{
	char b = 'B', r;

	oob_write(&b, 1);
	oob_read(&r, 1);
	CHECK(r == 'B', "barrier desync");
}

static uint64_t exchange_u64(uint64_t v)
{
	uint64_t r;

	oob_write(&v, sizeof(v));
	oob_read(&r, sizeof(r));
	return r;
}

/* ------------------------------------------------------------------ */
/* loader, by the rules of NCCL >= 2.27.7 / RCCL current (ref 1.2) */

static const char *g_flavour = "rccl";
static void *g_lib;
static int g_api;
static const void *g_tab;
static char g_libname[512];

#ifdef NETCONF_STATIC
/* the plugin is linked in: its exported tables, looked up by name */
extern const ncclNet_v7_t ncclNetPlugin_v7;
extern const ncclNet_v8_t ncclNetPlugin_v8;
extern const ncclNet_v9_t ncclNetPlugin_v9;
extern const ncclNet_v10_t ncclNetPlugin_v10;
extern const ncclNet_v11_t ncclNetPlugin_v11;
extern const ncclNet_v12_t ncclNetPlugin_v12;
/* weak: a plain net plugin must not define these (checked by t_table) */
#define WEAK_COLLNET(v) extern const char ncclCollNetPlugin_v##v __attribute__((weak));
WEAK_COLLNET(7) WEAK_COLLNET(8) WEAK_COLLNET(9) WEAK_COLLNET(10) WEAK_COLLNET(11) WEAK_COLLNET(12)
static const struct {
	const char *name;
	const void *p;
} g_syms[] = {
	{ "ncclNetPlugin_v7", &ncclNetPlugin_v7 },
	{ "ncclNetPlugin_v8", &ncclNetPlugin_v8 },
	{ "ncclNetPlugin_v9", &ncclNetPlugin_v9 },
	{ "ncclNetPlugin_v10", &ncclNetPlugin_v10 },
	{ "ncclNetPlugin_v11", &ncclNetPlugin_v11 },
	{ "ncclNetPlugin_v12", &ncclNetPlugin_v12 },
	{ "ncclCollNetPlugin_v7", &ncclCollNetPlugin_v7 },
	{ "ncclCollNetPlugin_v8", &ncclCollNetPlugin_v8 },
	{ "ncclCollNetPlugin_v9", &ncclCollNetPlugin_v9 },
	{ "ncclCollNetPlugin_v10", &ncclCollNetPlugin_v10 },
	{ "ncclCollNetPlugin_v11", &ncclCollNetPlugin_v11 },
	{ "ncclCollNetPlugin_v12", &ncclCollNetPlugin_v12 },
};

static void *find_sym(const char *name)
{
	for (unsigned i = 0; i < sizeof(g_syms) / sizeof(g_syms[0]); i++)
		if (strcmp(g_syms[i].name, name) == 0)
			return (void *)g_syms[i].p;
	return NULL;
}

static void *load_plugin(void)
{
	snprintf(g_libname, sizeof(g_libname), "(linked in: netconf.static)");
	return &g_libname; /* any non-NULL handle */
}
#else
static void *find_sym(const char *name) { return dlsym(g_lib, name); }

static void *load_plugin(void)
{
	const char *x = getenv("NCCL_NET_PLUGIN");
	char name[512];
	void *h;

	if (!x || !*x)
		snprintf(name, sizeof(name), "lib%s-net.so", g_flavour);
	else
		snprintf(name, sizeof(name), "%s", x);
	/* entry verbatim first */
	h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h && x && *x && !strchr(x, '/') &&
	    !(strncmp(x, "lib", 3) == 0 && strlen(x) > 6 && strcmp(x + strlen(x) - 3, ".so") == 0)) {
		snprintf(name, sizeof(name), "lib%s-net-%s.so", g_flavour, x);
		h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	}
	if (!h)
		FAILF("dlopen: %s", dlerror());
	snprintf(g_libname, sizeof(g_libname), "%s", name);
	return h;
}
#endif

static void pick_table(int want)
{
	char sym[64];

	for (int v = 12; v >= 7; v--) {
		if (want && v != want)
			continue;
		snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
		g_tab = find_sym(sym);
		if (g_tab) {
			g_api = v;
			return;
		}
	}
	FAILF("no ncclNetPlugin_v%s symbol in %s", want ? "<requested>" : "7..12", g_libname);
}

/* Version-independent calls through the chosen table. */
#define T7 ((const ncclNet_v7_t *)g_tab)
#define T8 ((const ncclNet_v8_t *)g_tab)
#define T9 ((const ncclNet_v9_t *)g_tab)
#define T10 ((const ncclNet_v10_t *)g_tab)
#define T11 ((const ncclNet_v11_t *)g_tab)
#define T12 ((const ncclNet_v12_t *)g_tab)

/* v11+: the contexts init handed out (one per "communicator"), newest
 * first; g_ctx is the one the tests use */
#define MAX_CTX 8
static void *g_ctxs[MAX_CTX];
static int g_nctx;
static void *g_ctx;
static uint64_t g_comm_id = 0x0d1b7b5c0aa00000ull;

static void logger(ncclDebugLogLevel lvl, unsigned long flags, const char *file, int line,
		   const char *fmt, ...)
{
	(void)flags;
	if (lvl > NCCL_LOG_WARN && !getenv("NETCONF_VERBOSE"))
		return;
	va_list ap;
	fprintf(stderr, "[rank%d] plugin %s %s:%d: ", g_rank, lvl == NCCL_LOG_WARN ? "WARN" : "INFO",
		file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * A stand-in for NCCL's profiler callback (v10+). NCCL passes its callback
 * to init and a non-NULL phandle with every isend and irecv entry, profiler
 * plugin or not; this one checks every event the plugin reports (see
 * odl_tb5_rccl_profiler.h): a start only in the thread inside an isend or
 * irecv, with one of the phandles that call handed over, our plugin id and
 * a descriptor of what was posted; then exactly one update (done, the
 * outcome) and one stop, in the thread inside the test() that saw the
 * request done, or inside the closeSend/closeRecv of a comm the request was
 * still open on (status ODL_TB5_PROFILE_CLOSED). The benchmark's callback
 * only counts, like NCCL's without a profiler plugin.
 */
#define PH_POOL 64
static char g_ph_pool[PH_POOL]; /* the phandles handed out: their addresses */
static _Atomic unsigned g_ph_next;
static bool g_prof_validate = true;
static _Atomic long g_pev_starts, g_pev_updates, g_pev_stops, g_pev_live;
/* the call the current thread is in: 0 none, 1 isend, 2 irecv, 3 test,
 * 4 closeSend/closeRecv */
static __thread int t_call;
static __thread void *const *t_call_ph; /* its phandles */
static __thread int t_call_n;
static __thread const size_t *t_call_sizes;
static __thread const int *t_call_tags;
/* the last updates seen (t_profiler reads them), by this thread */
static __thread odl_tb5_profiler_descr_v1_t t_last_upd[8];
static __thread int t_nupd;

#define PEV_MAGIC 0x50455631u
struct pev {
	unsigned magic;
	int updated;
	odl_tb5_profiler_descr_v1_t start;
};

static void *ph_take(void)
{
	return &g_ph_pool[atomic_fetch_add(&g_ph_next, 1) % PH_POOL];
}

/* fresh phandles for the n entries of a receive */
static void ph_fill(void **ph, int n)
{
	for (int i = 0; i < n && i < 8; i++)
		ph[i] = ph_take();
}

static ncclResult_t prof_cb(void **eh, int type, void *ph, int64_t id, void *ext)
{
	const odl_tb5_profiler_descr_v1_t *pd = ext;
	struct pev *ev;

	if (!g_prof_validate) {
		if (type == 0)
			g_pev_starts++;
		return ncclSuccess;
	}
	CHECK(eh, "profiler callback type %d without an event handle pointer", type);
	switch (type) {
	case 0: {
		int k;

		CHECK(t_call == 1 || t_call == 2,
		      "profiler start outside isend/irecv (thread in call %d)", t_call);
		CHECK(id == ODL_TB5_PROFILER_NET_ID, "profiler start: plugin id %#llx",
		      (unsigned long long)id);
		CHECK(pd && pd->type == ODL_TB5_PROFILE_MSG && !pd->done,
		      "profiler start: descriptor %p type %d done %d", ext, pd ? pd->type : -1,
		      pd ? pd->done : -1);
		k = pd->entry;
		CHECK(k >= 0 && k < t_call_n && t_call_ph && ph == t_call_ph[k],
		      "profiler start: phandle %p is not entry %d's (%d entries)", ph, k, t_call_n);
		CHECK(pd->is_send == (t_call == 1) && pd->size == t_call_sizes[k] &&
			      pd->tag == t_call_tags[k],
		      "profiler start: descriptor says send %d, %llu bytes, tag %d; posted %s of %zu, tag %d",
		      pd->is_send, (unsigned long long)pd->size, pd->tag,
		      t_call == 1 ? "send" : "receive", t_call_sizes[k], t_call_tags[k]);
		ev = calloc(1, sizeof(*ev));
		CHECK(ev, "out of memory");
		ev->magic = PEV_MAGIC;
		ev->start = *pd;
		*eh = ev;
		g_pev_starts++;
		g_pev_live++;
		return ncclSuccess;
	}
	case 2:
	case 1:
		ev = *eh;
		CHECK(t_call == 3 || t_call == 4,
		      "profiler %s outside test() and close (thread in call %d)",
		      type == 2 ? "update" : "stop", t_call);
		CHECK(ev && ev->magic == PEV_MAGIC, "profiler %s of an event never started (%p)",
		      type == 2 ? "update" : "stop", (void *)ev);
		if (type == 2) {
			CHECK(!ev->updated, "profiler: a second update of one event");
			CHECK(id == ODL_TB5_PROFILER_NET_ID && pd && pd->done == 1 &&
				      pd->is_send == ev->start.is_send &&
				      pd->entry == ev->start.entry && pd->tag == ev->start.tag &&
				      pd->comm_id == ev->start.comm_id,
			      "profiler update: descriptor does not match its start");
			CHECK((t_call == 4) == (pd->status == ODL_TB5_PROFILE_CLOSED),
			      "profiler update: status %d in %s", pd->status,
			      t_call == 4 ? "a close" : "test()");
			CHECK(pd->status != ncclSuccess || (pd->is_send ? pd->size == ev->start.size
									 : pd->size <= ev->start.size),
			      "profiler update: %llu bytes for a %s of %llu",
			      (unsigned long long)pd->size, pd->is_send ? "send" : "receive",
			      (unsigned long long)ev->start.size);
			ev->updated = 1;
			t_last_upd[t_nupd++ % 8] = *pd;
			g_pev_updates++;
			return ncclSuccess;
		}
		CHECK(ev->updated, "profiler stop without the update");
		ev->magic = 0;
		free(ev);
		*eh = NULL;
		g_pev_stops++;
		g_pev_live--;
		return ncclSuccess;
	default:
		FAILF("profiler callback with event type %d", type);
	}
	return ncclSuccess;
}

static ncclResult_t n_init(ncclDebugLogger_t l)
{
	if (g_api >= 11) {
		ncclNetCommConfig_v11_t cfg = { -1 };
		void *ctx = (void *)1;
		ncclResult_t r;

		CHECK(g_nctx < MAX_CTX, "too many contexts");
		r = T11->init(&ctx, ++g_comm_id, &cfg, l, prof_cb);
		if (r != ncclSuccess) {
			CHECK(ctx == NULL, "failed init left a context");
			return r;
		}
		CHECK(ctx, "init returned a NULL context");
		g_ctx = g_ctxs[g_nctx++] = ctx;
		return r;
	}
	return g_api >= 10 ? T10->init(l, prof_cb) : T7->init(l);
}
/* v11+: finalize every context init handed out (NCCL: each communicator's
 * at its destruction) */
static void n_finalize_all(void)
{
	while (g_api >= 11 && g_nctx > 0)
		OKR(T11->finalize(g_ctxs[--g_nctx]), "finalize");
	g_ctx = NULL;
}
static ncclResult_t n_devices(int *n) { return T7->devices(n); }

#define RAILS_MAX 4
/* --fuse: the fused device made of the --rails devices 0..g_fuse_n-1, in
 * that order (t_fuse); -1 before */
static int g_fuse;
static int g_fuse_dev = -1, g_fuse_n;

/* getProperties' vProps of device dev: itself, or a fused device's members */
static bool vprops_ok(int dev, int n, const int *devs)
{
	if (dev != g_fuse_dev)
		return n == 1 && devs[0] == dev;
	if (n != g_fuse_n)
		return false;
	for (int k = 0; k < n; k++)
		if (devs[k] != k)
			return false;
	return true;
}
static ncclResult_t n_props(int dev, ncclNetProperties_v7_t *p)
{
	ncclResult_t r;

	if (g_api == 7)
		return T7->getProperties(dev, p);
	if (g_api == 8) {
		ncclNetProperties_v8_t q;
		r = T8->getProperties(dev, p ? &q : NULL);
		if (r == ncclSuccess && p)
			*p = (ncclNetProperties_v7_t){ q.name, q.pciPath, q.guid, q.ptrSupport,
						       q.speed, q.port, q.latency, q.maxComms,
						       q.maxRecvs, q.netDeviceType,
						       q.netDeviceVersion };
		return r;
	}
	if (g_api >= 11) {
		ncclNetProperties_v11_t q11;
		ncclNetProperties_v12_t q12;

		if (g_api == 11)
			r = T11->getProperties(dev, p ? &q11 : NULL);
		else
			r = T12->getProperties(dev, p ? &q12 : NULL);
		if (r != ncclSuccess || !p)
			return r;
/* the v7 fields, and what v11 and v12 add (the same for both) */
#define V11_CHECK(q, ver)                                                                  \
	do {                                                                               \
		*p = (ncclNetProperties_v7_t){ q.name, q.pciPath, q.guid, q.ptrSupport,    \
					       q.speed, q.port, q.latency, q.maxComms,     \
					       q.maxRecvs, q.netDeviceType,                \
					       q.netDeviceVersion };                       \
		CHECK(vprops_ok(dev, q.vProps.ndevs, q.vProps.devs) && q.maxP2pBytes > 0 &&  \
			      q.maxCollBytes > 0 && q.maxMultiRequestSize == 1,            \
		      ver " properties: vProps %d [%d], maxP2pBytes %zu, maxCollBytes %zu, " \
			  "maxMultiRequestSize %d",                                        \
		      q.vProps.ndevs, q.vProps.devs[0], q.maxP2pBytes, q.maxCollBytes,     \
		      q.maxMultiRequestSize);                                              \
	} while (0)
		if (g_api == 11) {
			V11_CHECK(q11, "v11");
		} else {
			V11_CHECK(q12, "v12");
			CHECK(q12.railId == NCCL_NET_ID_UNDEF && q12.planeId == NCCL_NET_ID_UNDEF,
			      "v12 properties: railId %d, planeId %d", q12.railId, q12.planeId);
		}
#undef V11_CHECK
		return r;
	}
	ncclNetProperties_v9_t q;
	r = (g_api == 9 ? T9->getProperties(dev, p ? &q : NULL)
			: T10->getProperties(dev, p ? &q : NULL));
	if (r == ncclSuccess && p) {
		*p = (ncclNetProperties_v7_t){ q.name, q.pciPath, q.guid, q.ptrSupport, q.speed,
					       q.port, q.latency, q.maxComms, q.maxRecvs,
					       q.netDeviceType, q.netDeviceVersion };
		CHECK(vprops_ok(dev, q.vProps.ndevs, q.vProps.devs) && q.maxP2pBytes > 0 &&
			      q.maxCollBytes > 0,
		      "v9+ properties: vProps %d [%d], maxP2pBytes %zu, maxCollBytes %zu",
		      q.vProps.ndevs, q.vProps.devs[0], q.maxP2pBytes, q.maxCollBytes);
	}
	return r;
}
static ncclResult_t n_listen(int dev, void *h, void **l)
{
	if (g_api >= 11)
		return T11->listen(g_ctx, dev, h, l);
	return T7->listen(dev, h, l);
}
static ncclResult_t n_connect(int dev, void *h, void **s)
{
	ncclNetDeviceHandle_v7_t *dh = NULL;
	ncclNetCommConfig_v10_t cfg = { -1 };

	/* NCCL passes a pointer to a NULL device handle for host plugins */
	if (g_api >= 11)
		return T11->connect(g_ctx, dev, h, s, &dh);
	if (g_api >= 10)
		return T10->connect(dev, &cfg, h, s, &dh);
	return T7->connect(dev, h, s, &dh);
}
static ncclResult_t n_accept(void *l, void **r)
{
	ncclNetDeviceHandle_v7_t *dh = NULL;

	return T7->accept(l, r, &dh);
}
static ncclResult_t n_regmr(void *c, void *d, size_t size, int type, void **mh)
{
	if (g_api == 7)
		return T7->regMr(c, d, (int)size, type, mh);
	return T8->regMr(c, d, size, type, mh);
}
static ncclResult_t n_deregmr(void *c, void *mh) { return T7->deregMr(c, mh); }
/* the same slot and signature in v7..v12 */
static ncclResult_t n_regmr_dmabuf(void *c, void *d, size_t size, int type, uint64_t off, int fd,
				   void **mh)
{
	return T7->regMrDmaBuf(c, d, size, type, off, fd, mh);
}
/* isend with this phandle (NULL: none; the tables before v10 take none),
 * like NCCL's proxy */
static ncclResult_t n_isend_ph(void *c, void *d, size_t size, int tag, void *mh, void *ph,
			       void **req)
{
	ncclResult_t r;

	if (g_api <= 8)
		return T7->isend(c, d, (int)size, tag, mh, req);
	if (g_api == 9)
		return T9->isend(c, d, size, tag, mh, req);
	t_call = 1;
	t_call_ph = &ph;
	t_call_n = 1;
	t_call_sizes = &size;
	t_call_tags = &tag;
	r = T10->isend(c, d, size, tag, mh, ph, req);
	t_call = 0;
	return r;
}
static ncclResult_t n_isend(void *c, void *d, size_t size, int tag, void *mh, void **req)
{
	return n_isend_ph(c, d, size, tag, mh, ph_take(), req);
}
/* irecv with these phandles (NULL: none; v10+ only) */
static ncclResult_t n_irecv_ph(void *c, int n, void **d, const size_t *sizes, int *tags, void **mh,
			       void **ph, void **req)
{
	int is[8];
	size_t ss[8];
	ncclResult_t r;

	for (int i = 0; i < n && i < 8; i++) {
		is[i] = (int)sizes[i];
		ss[i] = sizes[i];
	}
	if (g_api <= 8)
		return T7->irecv(c, n, d, is, tags, mh, req);
	if (g_api == 9)
		return T9->irecv(c, n, d, ss, tags, mh, req);
	t_call = 2;
	t_call_ph = ph;
	t_call_n = n;
	t_call_sizes = sizes;
	t_call_tags = tags;
	r = T10->irecv(c, n, d, ss, tags, mh, ph, req);
	t_call = 0;
	return r;
}
static ncclResult_t n_irecv(void *c, int n, void **d, const size_t *sizes, int *tags, void **mh,
			    void **req)
{
	void *ph[8];

	ph_fill(ph, n);
	return n_irecv_ph(c, n, d, sizes, tags, mh, ph, req);
}
static ncclResult_t n_iflush(void *c, int n, void **d, int *sizes, void **mh, void **req)
{
	return T7->iflush(c, n, d, sizes, mh, req);
}
static ncclResult_t n_test(void *r, int *done, int *sizes)
{
	ncclResult_t res;

	t_call = 3;
	res = T7->test(r, done, sizes);
	t_call = 0;
	return res;
}
/* closeSend/closeRecv: profiler events of requests still open end inside */
static ncclResult_t n_close_sr(ncclResult_t (*close_fn)(void *), void *c)
{
	ncclResult_t res;

	t_call = 4;
	res = close_fn(c);
	t_call = 0;
	return res;
}
static ncclResult_t n_closeSend(void *c) { return n_close_sr(T7->closeSend, c); }
static ncclResult_t n_closeRecv(void *c) { return n_close_sr(T7->closeRecv, c); }
static ncclResult_t n_closeListen(void *c) { return T7->closeListen(c); }

/* ------------------------------------------------------------------ */
/* helpers: timed calls, connection set-up like the proxy */

static double g_call_bound_s = 1.0; /* a non-blocking call must return within this */
static double g_deadline_s = 30.0;
static int g_dev;

#define TIMED(expr, what)                                                              \
	({                                                                             \
		double t0_ = now_s();                                                  \
		ncclResult_t r_ = (expr);                                              \
		double dt_ = now_s() - t0_;                                            \
		CHECK(dt_ < g_call_bound_s, "%s blocked for %.3f s", what, dt_);         \
		r_;                                                                    \
	})

static int g_polls_yield;
static void poll_pause(void)
{
	if (++g_polls_yield % 64 == 0)
		sleep_ms(0 + 1);
	else
		sched_yield();
}

/* How long the delayed side of a handshake waits: a quarter longer than the
 * call bound, and at least 150 ms. */
static int handshake_stall_ms(void)
{
	double ms = g_call_bound_s * 1250.0;

	return ms < 150.0 ? 150 : (int)ms;
}

/* Unidirectional comm from `sender` to the other rank. The receiver delays its
 * first accept by acc_delay ms, the sender its first connect by con_delay ms. */
static void setup_uni(int sender, int con_delay, int acc_delay, void **sendc, void **recvc)
{
	unsigned char handle[NCCL_NET_HANDLE_MAXSIZE];
	double t0;

	*sendc = *recvc = NULL;
	if (g_rank != sender) {
		void *l = NULL;

		memset(handle, 0xa5, sizeof(handle));
		OKR(TIMED(n_listen(g_dev, handle, &l), "listen"), "listen");
		CHECK(l, "listen returned a NULL comm");
		oob_write(handle, sizeof(handle));
		sleep_ms(acc_delay);
		t0 = now_s();
		while (!*recvc) {
			OKR(TIMED(n_accept(l, recvc), "accept"), "accept");
			CHECK(now_s() - t0 < g_deadline_s, "accept did not complete");
			if (!*recvc)
				poll_pause();
		}
		/* NCCL closes the listen comm right after accept */
		OKR(n_closeListen(l), "closeListen");
	} else {
		oob_read(handle, sizeof(handle));
		sleep_ms(con_delay);
		t0 = now_s();
		while (!*sendc) {
			OKR(TIMED(n_connect(g_dev, handle, sendc), "connect"), "connect");
			CHECK(now_s() - t0 < g_deadline_s, "connect did not complete");
			if (!*sendc)
				poll_pause();
		}
	}
}

/* Both directions at once, one thread alternating connect and accept (NCCL's
 * service thread pattern): returns a send comm to and a recv comm from the peer. */
static void setup_pair(void **sendc, void **recvc)
{
	unsigned char mine[NCCL_NET_HANDLE_MAXSIZE], theirs[NCCL_NET_HANDLE_MAXSIZE];
	void *l = NULL;
	double t0 = now_s();

	*sendc = *recvc = NULL;
	OKR(TIMED(n_listen(g_dev, mine, &l), "listen"), "listen");
	oob_write(mine, sizeof(mine));
	oob_read(theirs, sizeof(theirs));
	while (!*sendc || !*recvc) {
		if (!*sendc)
			OKR(TIMED(n_connect(g_dev, theirs, sendc), "connect"), "connect");
		if (!*recvc) {
			OKR(TIMED(n_accept(l, recvc), "accept"), "accept");
			if (*recvc)
				OKR(n_closeListen(l), "closeListen");
		}
		CHECK(now_s() - t0 < g_deadline_s, "connect/accept did not complete");
		poll_pause();
	}
}

static void fill(void *p, size_t n, uint32_t seed)
{
	unsigned char *c = p;
	uint32_t x = seed * 2654435761u + 12345u;

	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		c[i] = (unsigned char)(x >> 16);
	}
}

static bool verify(const void *p, size_t n, uint32_t seed)
{
	const unsigned char *c = p;
	uint32_t x = seed * 2654435761u + 12345u;

	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		if (c[i] != (unsigned char)(x >> 16))
			return false;
	}
	return true;
}

/* Post with NULL-request retry (bounded), with NCCL's phandle(s) (NULL: none). */
static void *post_send_ph(void *c, void *d, size_t n, int tag, void *mh, void *ph)
{
	void *req = NULL;
	double t0 = now_s();

	for (;;) {
		OKR(TIMED(n_isend_ph(c, d, n, tag, mh, ph, &req), "isend"), "isend");
		if (req)
			return req;
		CHECK(now_s() - t0 < g_deadline_s, "isend never accepted");
		poll_pause();
	}
}

static void *post_send(void *c, void *d, size_t n, int tag, void *mh)
{
	return post_send_ph(c, d, n, tag, mh, ph_take());
}

static void *post_recv_ph(void *c, int n, void **d, const size_t *sz, int *tags, void **mh,
			  void **ph)
{
	void *req = NULL;
	double t0 = now_s();

	for (;;) {
		OKR(TIMED(n_irecv_ph(c, n, d, sz, tags, mh, ph, &req), "irecv"), "irecv");
		if (req)
			return req;
		CHECK(now_s() - t0 < g_deadline_s, "irecv never accepted");
		poll_pause();
	}
}

static void *post_recv(void *c, int n, void **d, const size_t *sz, int *tags, void **mh)
{
	void *ph[8];

	ph_fill(ph, n);
	return post_recv_ph(c, n, d, sz, tags, mh, ph);
}

/* Test until done; returns the test result of the completing call. */
static ncclResult_t wait_req(void *req, int *sizes)
{
	int done = 0;
	double t0 = now_s();

	for (;;) {
		ncclResult_t r = TIMED(n_test(req, &done, sizes), "test");
		if (r != ncclSuccess || done)
			return r;
		CHECK(now_s() - t0 < g_deadline_s, "request never completed");
		poll_pause();
	}
}

/* test() until done, as NCCL's proxy polls: no sleeping between calls, a
 * yield when nothing moved; the size the request completed with */
static int lat_wait(void *req, const char *what)
{
	int done = 0, sz = -1;
	double t0 = now_s();

	for (;;) {
		OKR(n_test(req, &done, &sz), what);
		if (done)
			return sz;
		CHECK(now_s() - t0 < g_deadline_s, "%s never completed", what);
		sched_yield();
	}
}

static void *lat_send(void *c, void *p, size_t n, void *mh)
{
	return post_send(c, p, n, 0, mh);
}

static void *lat_recv(void *c, void *p, size_t n, void *mh)
{
	int tag = 0;

	return post_recv(c, 1, &p, &n, &tag, &mh);
}

/* registered staging areas, like NCCL's per-connection buffers */
struct area {
	char *p;
	size_t n;
	void *mh;
};

static void area_init(struct area *a, void *comm, size_t n)
{
	a->n = n;
	a->p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
	CHECK(a->p, "out of memory");
	memset(a->p, 0, n);
	OKR(n_regmr(comm, a->p, n, NCCL_PTR_HOST, &a->mh), "regMr");
	CHECK(a->mh, "regMr gave a NULL handle");
}

static void area_free(struct area *a, void *comm)
{
	OKR(n_deregmr(comm, a->mh), "deregMr");
	free(a->p);
}

/* ------------------------------------------------------------------ */
/* tests */

static size_t g_max = 64u << 20;

static void t_table(void)
{
	const ncclNet_v7_t *t = g_tab;

	CHECK(t->name && strcmp(t->name, "odl_tb5") == 0, "name '%s'", t->name ? t->name : "(null)");
	CHECK(t->init && t->devices && t->getProperties && t->listen && t->connect && t->accept &&
		      t->regMr && t->deregMr && t->isend && t->irecv && t->iflush && t->test &&
		      t->closeSend && t->closeRecv && t->closeListen,
	      "a required slot is NULL");
	/* host plugin: no device offload, no DMA-buf unless advertised */
	CHECK(!t->getDeviceMr && !t->irecvConsumed, "device-offload slots must be NULL");
	CHECK(t->regMrDmaBuf, "regMrDmaBuf is NULL");
	for (int v = 7; v <= 12; v++) {
		char s[64];
		snprintf(s, sizeof(s), "ncclCollNetPlugin_v%d", v);
		CHECK(!find_sym(s), "exports %s (a plain net plugin must not)", s);
	}
	for (int v = 7; v <= 12; v++) {
		char s[64];
		snprintf(s, sizeof(s), "ncclNetPlugin_v%d", v);
		const ncclNet_v7_t *tv = find_sym(s);
		CHECK(tv && tv->name && strcmp(tv->name, t->name) == 0 && tv->test && tv->isend &&
			      tv->regMrDmaBuf,
		      "table %s missing or incomplete", s);
	}
	for (int v = 11; v <= 12; v++) {
		char s[64];
		snprintf(s, sizeof(s), "ncclNetPlugin_v%d", v);
		const ncclNet_v11_t *tv = find_sym(s);
		/* NCCL calls finalize unconditionally; setNetAttr is optional */
		CHECK(tv->finalize && tv->makeVDevice, "table %s: finalize %p makeVDevice %p", s,
		      (void *)tv->finalize, (void *)tv->makeVDevice);
	}
	for (int v = 9; v <= 10; v++) { /* NIC fusion from v9 on */
		char s[64];
		snprintf(s, sizeof(s), "ncclNetPlugin_v%d", v);
		const ncclNet_v9_t *tv = find_sym(s);
		CHECK(tv->makeVDevice, "table %s: makeVDevice NULL", s);
	}
	say("# loaded %s, using ncclNetPlugin_v%d\n", g_libname, g_api);
	pass("table: slots, versions v7..v12 exported, no CollNet");
}

static void *props_thread(void *arg)
{
	int ndev = *(int *)arg;

	for (int k = 0; k < 200; k++)
		for (int d = 0; d < ndev; d++) {
			ncclNetProperties_v7_t p;
			if (n_props(d, &p) != ncclSuccess || !p.name)
				return (void *)1;
		}
	return NULL;
}

static int g_dev0_shm; /* device 0 is a shm device (t_init_props) */

static int t_init_props(void)
{
	int ndev = -1;
	ncclNetProperties_v7_t p;
	const char *adv = getenv("ODL_TB5_RCCL_DMABUF");
	/* host memory; DMA-bufs too where asked for (regMrDmaBuf works) */
	int expect_ptr = NCCL_PTR_HOST | (adv && !strcmp(adv, "1") ? NCCL_PTR_DMABUF : 0);

	OKR(n_init(NULL), "init(NULL logger)");
	OKR(n_init(logger), "init(logger) again");
	OKR(n_devices(&ndev), "devices");
	CHECK(ndev >= 1, "devices = %d", ndev);
	for (int d = 0; d < ndev; d++) {
		memset(&p, 0x5a, sizeof(p));
		OKR(n_props(d, &p), "getProperties");
		CHECK(p.name && *p.name, "dev %d: no name", d);
		CHECK(p.ptrSupport == expect_ptr, "dev %d: ptrSupport %d (%d expected)", d,
		      p.ptrSupport, expect_ptr);
		CHECK(p.speed > 0, "dev %d: speed %d", d, p.speed);
		CHECK(p.latency >= 0 && p.latency < 1000, "dev %d: latency %f", d, p.latency);
		CHECK(p.maxComms >= 1 && p.maxRecvs >= 1 && p.maxRecvs <= 8, "dev %d: maxComms %d maxRecvs %d", d,
		      p.maxComms, p.maxRecvs);
		CHECK(p.netDeviceType == NCCL_NET_DEVICE_HOST && p.netDeviceVersion == 0,
		      "dev %d: netDeviceType %d version %d", d, p.netDeviceType, p.netDeviceVersion);
		for (int e = 0; e < d; e++) {
			ncclNetProperties_v7_t q;
			OKR(n_props(e, &q), "getProperties");
			CHECK(strcmp(q.name, p.name) != 0, "devices %d and %d share name %s", e, d, p.name);
		}
		say("# dev %d: name %s pci %s guid %016llx speed %d Mbps latency %.1f us maxComms %d maxRecvs %d port %d\n",
		    d, p.name, p.pciPath ? p.pciPath : "(none)", (unsigned long long)p.guid, p.speed,
		    p.latency, p.maxComms, p.maxRecvs, p.port);
		/* the port this process got (ODL_TB5_RCCL_PORT, or the first
		 * free one: --pairs and the multi-rank scenario know which) */
		const char *xp = getenv("NETCONF_EXPECT_PORT");
		if (d == 0)
			g_dev0_shm = strstr(p.name, "shm:") != NULL;
		CHECK(!xp || p.port == atoi(xp), "dev %d: port %d (%s expected)", d, p.port, xp);
	}
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, props_thread, &ndev);
	for (int i = 0; i < 4; i++) {
		void *rv;
		pthread_join(th[i], &rv);
		CHECK(rv == NULL, "concurrent getProperties failed");
	}
	pass("init/devices/getProperties (NULL logger, fields, 4 threads)");
	return ndev;
}

static void t_bad_calls(int ndev)
{
	ncclNetProperties_v7_t p;
	unsigned char h[NCCL_NET_HANDLE_MAXSIZE];
	void *c = (void *)1, *req = (void *)1, *mh = NULL;
	int done = 7, sz[8];
	size_t s1 = 8;
	void *d1[1] = { h };
	int tag1[1] = { 0 };

	CHECK(n_props(-1, &p) != ncclSuccess, "getProperties(-1) succeeded");
	CHECK(n_props(ndev, &p) != ncclSuccess, "getProperties(ndev) succeeded");
	CHECK(n_props(0, NULL) != ncclSuccess, "getProperties(NULL) succeeded");
	CHECK(n_devices(NULL) != ncclSuccess, "devices(NULL) succeeded");
	CHECK(n_listen(ndev, h, &c) != ncclSuccess && c == NULL, "listen(bad dev)");
	CHECK(n_listen(-5, h, &c) != ncclSuccess, "listen(-5)");
	CHECK(n_listen(0, NULL, &c) != ncclSuccess, "listen(NULL handle)");
	/* a handle that is not ours / claims to be larger than 128 bytes */
	memset(h, 0, sizeof(h));
	c = (void *)1;
	CHECK(n_connect(0, h, &c) == ncclInvalidUsage && c == NULL, "connect(zero handle)");
	void *l = NULL;
	OKR(n_listen(0, h, &l), "listen");
	unsigned char bad[NCCL_NET_HANDLE_MAXSIZE];
	memcpy(bad, h, sizeof(bad));
	uint32_t big = 4096; /* the handle's length field (bytes 12..15): oversize */
	memcpy(bad + 12, &big, sizeof(big));
	CHECK(n_connect(0, bad, &c) == ncclInvalidUsage && c == NULL, "connect(oversize handle)");
	/* the listener's port (bytes 40..43): 0 and 256 are no ports */
	memcpy(bad, h, sizeof(bad));
	for (uint32_t port = 0; port <= 256; port += 256) {
		memcpy(bad + 40, &port, sizeof(port));
		CHECK(n_connect(0, bad, &c) == ncclInvalidUsage && c == NULL, "connect(handle with port %u)",
		      port);
	}
	CHECK(n_connect(ndev, h, &c) != ncclSuccess, "connect(bad dev)");
	CHECK(n_connect(0, NULL, &c) != ncclSuccess, "connect(NULL handle)");
	/* this process's own listener (NCCL does that only for its GPU-Direct
	 * probe, which a host-only plugin never triggers) */
	CHECK(n_connect(0, h, &c) == ncclInvalidUsage && c == NULL, "connect to our own listen handle");
	OKR(n_closeListen(l), "closeListen");
	CHECK(n_accept(NULL, &c) != ncclSuccess && c == NULL, "accept(NULL)");
	CHECK(n_regmr(NULL, h, 16, NCCL_PTR_HOST, &mh) != ncclSuccess, "regMr(NULL comm)");
	CHECK(n_deregmr(NULL, NULL) != ncclSuccess, "deregMr(NULL, NULL)");
	CHECK(n_isend(NULL, h, 8, 0, NULL, &req) != ncclSuccess && req == NULL, "isend(NULL comm)");
	req = (void *)1;
	CHECK(n_irecv(NULL, 1, d1, &s1, tag1, NULL, &req) != ncclSuccess && req == NULL,
	      "irecv(NULL comm)");
	CHECK(n_iflush(NULL, 1, d1, sz, NULL, &req) != ncclSuccess, "iflush(NULL comm)");
	CHECK(n_test(NULL, &done, sz) != ncclSuccess, "test(NULL)");
	CHECK(n_closeSend(NULL) != ncclSuccess, "closeSend(NULL)");
	CHECK(n_closeRecv(NULL) != ncclSuccess, "closeRecv(NULL)");
	CHECK(n_closeListen(NULL) != ncclSuccess, "closeListen(NULL)");
	/* a garbage (non-NULL) comm of the wrong kind */
	static uint64_t junk[64];
	CHECK(n_closeSend(junk) != ncclSuccess, "closeSend(junk)");
	CHECK(n_test(junk, &done, sz) != ncclSuccess, "test(junk)");
	pass("bad calls return NCCL error codes (NULL comm, oversize handle, unknown device)");
}

/*
 * A listener on another port than this process's: the shm backend cannot
 * send there (one segment per port number), so connect must refuse at once
 * (ncclInvalidUsage, nothing pending) instead of waiting for an answer.
 */
static void t_port_mismatch(void)
{
	unsigned char h[NCCL_NET_HANDLE_MAXSIZE];
	void *l = NULL, *c = (void *)1;
	ncclNetProperties_v7_t p;

	if (!g_dev0_shm)
		return;
	if (g_rank == 1) {
		OKR(n_listen(g_dev, h, &l), "listen");
		oob_write(h, sizeof(h));
		barrier();
		OKR(n_closeListen(l), "closeListen");
	} else {
		uint32_t port;

		OKR(n_props(g_dev, &p), "getProperties");
		oob_read(h, sizeof(h));
		port = (uint32_t)(p.port % 255) + 1; /* not this process's port */
		if (g_dev == g_fuse_dev)
			h[68] = (unsigned char)port; /* the fused handle's first rail */
		else
			memcpy(h + 40, &port, sizeof(port));
		CHECK(TIMED(n_connect(g_dev, h, &c), "connect") == ncclInvalidUsage && c == NULL,
		      "connect to a listener on port %u from port %d over shm", port, p.port);
		barrier();
	}
	pass("shm: a listener on another port is refused at once (ncclInvalidUsage)");
}

static void t_handshake(void)
{
	void *s, *r;

	/* The delayed side stalls for longer than the call bound: a connect
	 * or accept that waited for the peer would be caught by TIMED
	 * however long a non-blocking call may take on a starved machine. */
	int stall = handshake_stall_ms();

	/* every handshake ends with one message in each direction */
	struct {
		const char *name;
		int con_delay, acc_delay;
	} cases[] = {
		{ "connect first (accept delayed)", 0, stall },
		{ "accept first (connect delayed)", stall, 0 },
		{ "interleaved", 0, 0 },
	};
	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		for (int sender = 0; sender < 2; sender++) {
			setup_uni(sender, cases[k].con_delay, cases[k].acc_delay, &s, &r);
			char buf[64];
			void *req, *mh;
			int sz = -1;
			if (g_rank == sender) {
				fill(buf, 33, 77);
				OKR(n_regmr(s, buf, sizeof(buf), NCCL_PTR_HOST, &mh), "regMr");
				req = post_send(s, buf, 33, g_rank, mh);
				OKR(wait_req(req, &sz), "test(send)");
				CHECK(sz == 33, "send size %d", sz);
				barrier();
				OKR(n_deregmr(s, mh), "deregMr");
				OKR(n_closeSend(s), "closeSend");
			} else {
				size_t cap = sizeof(buf);
				void *d[1] = { buf };
				int tag = 1 - g_rank;
				OKR(n_regmr(r, buf, sizeof(buf), NCCL_PTR_HOST, &mh), "regMr");
				void *mhs[1] = { mh };
				req = post_recv(r, 1, d, &cap, &tag, mhs);
				OKR(wait_req(req, &sz), "test(recv)");
				CHECK(sz == 33 && verify(buf, 33, 77), "recv size %d / data", sz);
				barrier();
				OKR(n_deregmr(r, mh), "deregMr");
				OKR(n_closeRecv(r), "closeRecv");
			}
		}
		char nm[128];
		snprintf(nm, sizeof(nm), "handshake: %s, both directions, closeListen after accept",
			 cases[k].name);
		pass(nm);
	}
	/* both ranks connect and accept from one thread at the same time */
	setup_pair(&s, &r);
	barrier();
	OKR(n_closeSend(s), "closeSend");
	OKR(n_closeRecv(r), "closeRecv");
	barrier();
	pass("handshake: symmetric, one thread alternating connect/accept");
}

/* Send `cnt` messages with sizes sz[] both ways at once, verify. */
static void xfer_both(void *s, void *r, struct area *sa, struct area *ra, const size_t *sz, int cnt,
		      size_t extra, uint32_t seed)
{
	void *sreq[64], *rreq[64];
	size_t soff = 0, roff = 0, roffs[64];

	CHECK(cnt <= 64, "cnt");
	for (int i = 0; i < cnt; i++) {
		size_t cap = sz[i] + extra;
		void *d[1];
		int tag = 1 - g_rank;
		void *mh[1] = { ra->mh };

		CHECK(roff + cap <= ra->n && soff + sz[i] <= sa->n, "area too small");
		roffs[i] = roff;
		d[0] = ra->p + roff;
		rreq[i] = post_recv(r, 1, d, &cap, &tag, mh);
		roff += (cap + 63) & ~(size_t)63;
		fill(sa->p + soff, sz[i], seed + (uint32_t)i + 1000u * (uint32_t)g_rank);
		sreq[i] = post_send(s, sa->p + soff, sz[i], g_rank, sa->mh);
		soff += (sz[i] + 63) & ~(size_t)63;
	}
	for (int i = 0; i < cnt; i++) {
		int ssz = -1, rsz = -1;
		OKR(wait_req(sreq[i], &ssz), "test(send)");
		CHECK((size_t)ssz == sz[i], "send %d: size %d want %zu", i, ssz, sz[i]);
		OKR(wait_req(rreq[i], &rsz), "test(recv)");
		CHECK((size_t)rsz == sz[i], "recv %d: size %d want %zu", i, rsz, sz[i]);
		CHECK(verify(ra->p + roffs[i], sz[i], seed + (uint32_t)i + 1000u * (uint32_t)(1 - g_rank)),
		      "recv %d (%zu bytes): data mismatch", i, sz[i]);
	}
}

/* the statistics file at path (read only), or NULL: not there or not one
 * of ours */
static const struct odl_tb5_rccl_stats *stats_map(const char *path)
{
	const struct odl_tb5_rccl_stats *st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	st = mmap(NULL, sizeof(*st), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (st == MAP_FAILED)
		return NULL;
	if (__atomic_load_n(&st->magic, __ATOMIC_ACQUIRE) != ODL_TB5_RCCL_STATS_MAGIC ||
	    st->version != ODL_TB5_RCCL_STATS_VERSION ||
	    st->size < offsetof(struct odl_tb5_rccl_stats, idle_wakeups) + sizeof(uint64_t)) {
		munmap((void *)st, sizeof(*st));
		return NULL;
	}
	return st;
}

/* the plugin's poll period: its variable, read by the plugin's rule (a
 * whole number in range, else the default) */
static long poll_period_ms(void)
{
	const char *e = getenv(ODL_TB5_RCCL_POLL_MS_ENV);
	char *end;
	long v;

	if (!e || !*e)
		return ODL_TB5_RCCL_POLL_MS_DEFAULT;
	v = strtol(e, &end, 0);
	return *end || v < 1 || v > ODL_TB5_RCCL_POLL_MS_MAX ? ODL_TB5_RCCL_POLL_MS_DEFAULT : v;
}

/*
 * Connected and idle: the progress threads wait for completions in
 * ODL_TB5_RCCL_POLL_MS (default 20 ms) steps, not in a tight loop. Over
 * IDLE_WINDOW_MS both ranks do nothing; the plugin's idle_wakeups counter
 * (shared by both ranks when they run on one host) must have moved, and by
 * no more than two processes waking once per period and device in use
 * (--fuse: each of its cables) allow (with margin).
 * With a 1 ms period it moves by ~2 x the window in ms.
 */
#define IDLE_WINDOW_MS 600
static void t_idle(void)
{
	const char *path = odl_tb5_rccl_stats_path();
	const struct odl_tb5_rccl_stats *st = path ? stats_map(path) : NULL;
	long poll_ms = poll_period_ms();
	/* a progress thread per device: a fused device's comms use each cable */
	uint64_t v0, v1, threads = 2 * (uint64_t)(g_fuse ? g_fuse_n : 1);
	uint64_t limit = threads * (uint64_t)(IDLE_WINDOW_MS * 3 / 2 / poll_ms + 5);

	barrier();
	/* a file named in the environment must be there; the default one is
	 * best effort (a non-writable /run/odl_tb5 disables it) */
	CHECK(st || !path || !getenv(ODL_TB5_RCCL_STATS_ENV),
	      "idle: statistics file %s not published", path);
	if (!st) {
		say("# idle wakeups: the plugin publishes no statistics here, not checked\n");
		barrier();
		return;
	}
	v0 = __atomic_load_n(&st->idle_wakeups, __ATOMIC_RELAXED);
	sleep_ms(IDLE_WINDOW_MS);
	v1 = __atomic_load_n(&st->idle_wakeups, __ATOMIC_RELAXED);
	munmap((void *)st, sizeof(*st));
	barrier();
	say("# idle wakeups in %d ms: %llu (poll period %ld ms, at most %llu)\n", IDLE_WINDOW_MS,
	    (unsigned long long)(v1 - v0), poll_ms, (unsigned long long)limit);
	CHECK(v1 > v0, "idle: no progress-thread wakeup counted in %d ms", IDLE_WINDOW_MS);
	CHECK(v1 - v0 <= limit, "idle: %llu progress-thread wakeups in %d ms (at most %llu)",
	      (unsigned long long)(v1 - v0), IDLE_WINDOW_MS, (unsigned long long)limit);
	pass("idle: progress threads wake once per poll period, not in a tight loop");
}

/*
 * A test() that waits is woken when a request finishes, not by traffic that
 * finishes nothing. Rank 0 tests a receive that rank 1 leaves unmatched
 * while rank 1 posts QUIET_CTS receives one by one (each a CTS to rank 0,
 * a completion batch of its own); a test() that comes back unfinished
 * before half the wait (ODL_TB5_RCCL_TEST_WAIT_US) ran out was woken. The
 * first test and a few spurious wake-ups are allowed, a wake-up per CTS is
 * not. Then rank 0 answers the receives and rank 1 its one.
 */
#define QUIET_CTS 24
static void t_quiet_wait(void *s, void *r)
{
	const char *w = getenv("ODL_TB5_RCCL_TEST_WAIT_US");
	const double wait_s = (w ? atof(w) : 1000) * 1e-6;
	static char buf[QUIET_CTS + 1][64];
	void *rq[QUIET_CTS] = { NULL };
	int early = 0, calls = 0, sz = -1;

	barrier();
	if (g_rank == 0) {
		int done = 0;
		void *req = lat_recv(r, buf[0], 64, NULL);
		struct pollfd pf = { .fd = g_oob, .events = POLLIN };
		double t0 = now_s();

		barrier();
		while (poll(&pf, 1, 0) == 0) {
			double t1 = now_s();

			OKR(n_test(req, &done, &sz), "test(unmatched receive)");
			CHECK(!done, "quiet wait: a receive nobody sent to completed");
			calls++;
			if (now_s() - t1 < wait_s / 2)
				early++;
			CHECK(now_s() - t0 < g_deadline_s, "quiet wait: rank 1 did not finish posting");
		}
		barrier();
		for (int i = 0; i < QUIET_CTS; i++)
			rq[i] = lat_send(s, buf[i + 1], 8, NULL);
		for (int i = 0; i < QUIET_CTS; i++)
			CHECK(lat_wait(rq[i], "test(send)") == 8, "quiet wait: send size");
		CHECK(lat_wait(req, "test(receive)") == 16, "quiet wait: receive size");
		say("# quiet wait: %d tests of an unmatched receive while %d CTSs arrived, %d came back early\n",
		    calls, QUIET_CTS, early);
		CHECK(wait_s <= 0 || early <= 4,
		      "quiet wait: %d of %d test() calls woken early while only CTSs arrived (at most 4)",
		      early, calls);
	} else {
		barrier();
		for (int i = 0; i < QUIET_CTS; i++) {
			rq[i] = lat_recv(r, buf[i + 1], 64, NULL);
			sleep_ms(4);
		}
		barrier();
		void *req = lat_send(s, buf[0], 16, NULL);

		for (int i = 0; i < QUIET_CTS; i++)
			CHECK(lat_wait(rq[i], "test(receive)") == 8, "quiet wait: receive size");
		CHECK(lat_wait(req, "test(send)") == 16, "quiet wait: send size");
	}
	barrier();
	pass("quiet wait: a test() waiting on an unfinished receive is not woken by CTSs that finish nothing");
}

/*
 * A child forked after init that leaves by exit() runs the plugin's
 * destructor: it must return at once (the child has none of the progress
 * threads) and leave the parent's state alone, its statistics slot (the
 * liveness lock the child shares) included. Its init fails at once
 * (ncclInvalidUsage) instead of reporting the parent's devices as its own.
 */
static void t_fork_exit(void)
{
	const char *path = odl_tb5_rccl_stats_path();
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1, l0 = -1, l1 = -1, st = 0;
	double t0;
	pid_t pid;

	barrier();
	if (fd >= 0)
		l0 = odl_tb5_rccl_stats_live(fd);
	barrier();
	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		exit(n_init(NULL) == ncclInvalidUsage ? 0 : 3);
	t0 = now_s();
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (now_s() - t0 > 20) {
			kill(pid, SIGKILL);
			FAILF("fork: the child's exit() hangs (in the plugin's destructor?)");
		}
		sleep_ms(5);
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "fork: the child ended with status %#x (3: its init did not fail with ncclInvalidUsage)", st);
	barrier(); /* both ranks' children are gone */
	if (fd >= 0) {
		l1 = odl_tb5_rccl_stats_live(fd);
		close(fd);
		CHECK(l0 >= 1 && l1 == l0, "fork: %d plugin processes alive by the statistics before the children's exit, %d after",
		      l0, l1);
	}
	pass("a child forked after init: its init fails (ncclInvalidUsage), its exit() returns at once, the parent's plugin and statistics slot untouched");
}

static void t_sizes(void *s, void *r)
{
	static const size_t all[] = { 0, 1, 7, 8, 63, 4095, 4096, 65537, 262144 - 48, 262144,
				      (1u << 20) + 3, 4u << 20, 16u << 20, 64u << 20 };
	struct area sa, ra;
	size_t big = 0;
	int n = 0;
	size_t sz[16];

	for (unsigned i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i] <= g_max)
			sz[n++] = all[i];
	for (int i = 0; i < n; i++)
		big = sz[i] > big ? sz[i] : big;
	area_init(&sa, s, big + 4096);
	area_init(&ra, r, big + 8192);
	for (int i = 0; i < n; i++) {
		/* one at a time with a larger receive buffer */
		xfer_both(s, r, &sa, &ra, &sz[i], 1, (size_t)i * 97 + 1, 10u * (uint32_t)i);
	}
	/* many in flight (the small ones) */
	size_t many[32];
	for (int i = 0; i < 32; i++)
		many[i] = (size_t)(i * 1531) % 70000;
	area_free(&sa, s);
	area_free(&ra, r);
	area_init(&sa, s, 32 * 70100);
	area_init(&ra, r, 32 * 70100 + 32 * 64);
	xfer_both(s, r, &sa, &ra, many, 32, 0, 555);
	area_free(&sa, s);
	area_free(&ra, r);
	char nm[96];
	snprintf(nm, sizeof(nm), "isend/irecv sizes 0 B .. %zu B, receive larger than send, 32 in flight",
		 sz[n - 1]);
	pass(nm);
}

static void t_grouped(void *s, void *r)
{
	struct area sa, ra;

	area_init(&sa, s, 8 * 300000);
	area_init(&ra, r, 8 * 300000);
	for (int n = 1; n <= 8; n++) {
		size_t cap[8], len[8];
		void *d[8], *mh[8];
		int tags[8], sizes[8];
		void *rreq, *sreq[8];

		for (int i = 0; i < n; i++) {
			len[i] = (size_t)((i * 37337 + n * 101) % 290000);
			if (i == 1)
				len[i] = 0; /* a zero-byte member */
			cap[i] = 290000;
			d[i] = ra.p + (size_t)i * 300000;
			mh[i] = ra.mh;
			tags[i] = 100 + i;
		}
		barrier();
		rreq = post_recv(r, n, d, cap, tags, mh);
		/* the peer sends its n members in reverse tag order */
		for (int i = n - 1; i >= 0; i--) {
			fill(sa.p + (size_t)i * 300000, len[i], 7000u + (uint32_t)(n * 8 + i));
			sreq[i] = post_send(s, sa.p + (size_t)i * 300000, len[i], 100 + i, sa.mh);
		}
		for (int i = 0; i < n; i++)
			OKR(wait_req(sreq[i], NULL), "test(send)");
		memset(sizes, 0, sizeof(sizes));
		OKR(wait_req(rreq, sizes), "test(grouped recv)");
		for (int i = 0; i < n; i++) {
			CHECK((size_t)sizes[i] == len[i], "n=%d member %d: size %d want %zu", n, i,
			      sizes[i], len[i]);
			CHECK(verify(d[i], len[i], 7000u + (uint32_t)(n * 8 + i)), "n=%d member %d data",
			      n, i);
		}
	}
	/* tags out of step, as NCCL's subs sharing one comm go: two grouped
	 * receives {200, 201}; tag 200 sends both its messages before tag 201
	 * sends its first, which must still reach the first receive
	 */
	{
		void *d[2][2], *mh[2] = { ra.mh, ra.mh }, *rreq[2], *sreq[4];
		size_t cap[2] = { 4096, 4096 };
		int tags[2] = { 200, 201 }, sizes[2][2];

		barrier();
		for (int k = 0; k < 2; k++) {
			d[k][0] = ra.p + (size_t)k * 8192;
			d[k][1] = ra.p + (size_t)k * 8192 + 4096;
			rreq[k] = post_recv(r, 2, d[k], cap, tags, mh);
		}
		for (int j = 0; j < 4; j++)
			fill(sa.p + (size_t)j * 4096, 1000 + (size_t)j, 9100u + (uint32_t)j);
		/* each tag a sub of its own, as NCCL's proxy runs them: a NULL
		 * request (the fused device takes a send only once its receive
		 * entry is there) moves on to the other tag
		 */
		int next[2] = { 0, 0 };
		double t0 = now_s();

		while (next[0] < 2 || next[1] < 2) {
			for (int t = 0; t < 2; t++) {
				while (next[t] < 2) {
					int j = t * 2 + next[t];
					void *req = NULL;

					OKR(TIMED(n_isend_ph(s, sa.p + (size_t)j * 4096, 1000 + (size_t)j,
							     tags[t], sa.mh, ph_take(), &req),
						  "isend"),
					    "isend (tags out of step)");
					if (!req)
						break;
					sreq[j] = req;
					next[t]++;
				}
			}
			CHECK(now_s() - t0 < g_deadline_s, "tags out of step: sends never accepted (%d, %d)",
			      next[0], next[1]);
			poll_pause();
		}
		for (int j = 0; j < 4; j++)
			OKR(wait_req(sreq[j], NULL), "test(send, tags out of step)");
		for (int k = 0; k < 2; k++) {
			memset(sizes[k], 0, sizeof(sizes[k]));
			OKR(wait_req(rreq[k], sizes[k]), "test(grouped recv, tags out of step)");
			for (int t = 0; t < 2; t++) {
				int j = t * 2 + k;

				CHECK(sizes[k][t] == 1000 + j, "out of step: receive %d tag %d: size %d want %d",
				      k, tags[t], sizes[k][t], 1000 + j);
				CHECK(verify(d[k][t], (size_t)(1000 + j), 9100u + (uint32_t)j),
				      "out of step: receive %d tag %d data", k, tags[t]);
			}
		}
	}
	area_free(&sa, s);
	area_free(&ra, r);
	pass("grouped receives n = 1..8 with tags (members sent in reverse order, a 0-byte member); "
	     "tags out of step (one tag's next send ahead of another's first)");
}

/*
 * v10+: the profiler events of a grouped receive and of sends, some posted
 * with a phandle and some without: one event per phandle, started in the
 * posting call, updated with what arrived and stopped in the test() that
 * saw the request done (prof_cb checks each event on the way).
 */
static void t_profiler(void *s, void *r)
{
	static const size_t len[3] = { 100, 0, 700 };
	struct area sa, ra;
	size_t cap[3] = { 1000, 1000, 1000 };
	void *d[3], *mh[3], *rph[3], *sreq[3], *rreq;
	int tags[3], sizes[3];
	long st0 = g_pev_starts, up0 = g_pev_updates, sp0 = g_pev_stops, live0 = g_pev_live;
	int found = 0;

	area_init(&sa, s, 3 * 1024);
	area_init(&ra, r, 3 * 1024);
	for (int i = 0; i < 3; i++) {
		d[i] = ra.p + (size_t)i * 1024;
		mh[i] = ra.mh;
		tags[i] = 200 + i;
		rph[i] = i == 1 ? NULL : ph_take();
	}
	barrier();
	rreq = post_recv_ph(r, 3, d, cap, tags, mh, rph);
	CHECK(g_pev_starts - st0 == 2, "grouped receive with 2 phandles of 3: %ld events started",
	      g_pev_starts - st0);
	for (int i = 0; i < 3; i++) {
		fill(sa.p + (size_t)i * 1024, len[i], 9100u + (uint32_t)i);
		sreq[i] = post_send_ph(s, sa.p + (size_t)i * 1024, len[i], 200 + i, sa.mh,
				       i == 1 ? NULL : ph_take());
	}
	CHECK(g_pev_starts - st0 == 4, "and 2 sends of 3 with phandles: %ld events started",
	      g_pev_starts - st0);
	CHECK(g_pev_updates == up0 && g_pev_stops == sp0,
	      "events updated or stopped before any test()");
	for (int i = 0; i < 3; i++)
		OKR(wait_req(sreq[i], NULL), "test(send)");
	t_nupd = 0;
	OKR(wait_req(rreq, sizes), "test(grouped recv)");
	CHECK(t_nupd == 2, "the grouped receive's test updated %d events, want 2", t_nupd);
	for (int k = 0; k < 2; k++) {
		const odl_tb5_profiler_descr_v1_t *u = &t_last_upd[k];

		CHECK(!u->is_send && u->status == 0 && (u->entry == 0 || u->entry == 2) &&
			      u->size == len[u->entry] && u->tag == 200 + u->entry &&
			      (u->path == ODL_TB5_PROFILE_STAGED ||
			       u->path == ODL_TB5_PROFILE_ZERO_COPY),
		      "receive event update: entry %d, %llu bytes, tag %d, status %d, path %d",
		      u->entry, (unsigned long long)u->size, u->tag, u->status, u->path);
		found |= 1 << u->entry;
	}
	CHECK(found == 5, "events of entries 0 and 2 updated (mask %#x)", found);
	for (int i = 0; i < 3; i++)
		CHECK((size_t)sizes[i] == len[i] && verify(d[i], len[i], 9100u + (uint32_t)i),
		      "entry %d: %d bytes", i, sizes[i]);
	CHECK(g_pev_updates - up0 == 4 && g_pev_stops - sp0 == 4 && g_pev_live == live0,
	      "after the tests: %ld updates, %ld stops, %ld events open (want 4, 4, %ld)",
	      g_pev_updates - up0, g_pev_stops - sp0, g_pev_live, live0);
	barrier();
	area_free(&sa, s);
	area_free(&ra, r);
	pass("profiler events (v10+): one per phandle of a send or receive entry, started in "
	     "isend/irecv, updated with the size and stopped in test()");
}

static void t_saturation(void *s, void *r)
{
	enum { MSG = 1024 };
	struct area sa, ra;
	static void *sreq[1024], *rreq[64];
	int k = 0, peer_k;
	void *extra = NULL;

	area_init(&sa, s, 1024 * (MSG + 64));
	area_init(&ra, r, 64 * (MSG + 64));
	barrier();
	/* receive side: exactly NCCL_NET_MAX_REQUESTS at once, then NULL */
	for (int i = 0; i < NCCL_NET_MAX_REQUESTS; i++) {
		size_t cap = MSG + 64;
		void *d[1] = { ra.p + (size_t)i * (MSG + 64) };
		int tag = 1 - g_rank;
		void *mh[1] = { ra.mh };
		rreq[i] = NULL;
		OKR(TIMED(n_irecv(r, 1, d, &cap, &tag, mh, &rreq[i]), "irecv"), "irecv");
		CHECK(rreq[i], "irecv %d of %d returned NULL", i, NCCL_NET_MAX_REQUESTS);
	}
	{
		size_t cap = 16;
		void *d[1] = { ra.p };
		int tag = 1 - g_rank;
		OKR(n_irecv(r, 1, d, &cap, &tag, NULL, &extra), "irecv beyond the limit");
		CHECK(extra == NULL, "irecv beyond %d outstanding was accepted", NCCL_NET_MAX_REQUESTS);
	}
	/* send side: post until the plugin says NULL (at least 32 * 1). A
	 * fused device takes a send only once its receive's clear-to-send is
	 * there on every rail (it cuts the message where the receiver cut its
	 * buffer): NULL before the peer's 32 receives are all announced is
	 * "not yet", and the first NULL after them is the limit */
	double t_sat = now_s();
	for (k = 0; k < 1024; k++) {
		void *req = NULL;
		fill(sa.p + (size_t)k * (MSG + 64), MSG - (size_t)(k % 7), 90000u + (uint32_t)k);
		OKR(TIMED(n_isend(s, sa.p + (size_t)k * (MSG + 64), MSG - (size_t)(k % 7), g_rank, sa.mh,
				  &req), "isend"), "isend");
		if (!req && g_dev == g_fuse_dev && k < NCCL_NET_MAX_REQUESTS) {
			CHECK(now_s() - t_sat < g_deadline_s,
			      "fused: send %d still NULL after %.0f s (the peer posted %d receives)", k,
			      g_deadline_s, NCCL_NET_MAX_REQUESTS);
			poll_pause();
			k--;
			continue;
		}
		if (!req)
			break;
		sreq[k] = req;
	}
	CHECK(k >= NCCL_NET_MAX_REQUESTS && k < 1024, "sends accepted before NULL: %d", k);
	peer_k = (int)exchange_u64((uint64_t)k);
	/* drain: complete receives, repost until all of the peer's sends arrived */
	int got = 0, posted = NCCL_NET_MAX_REQUESTS, sent_done = 0;
	int slot_of[64];
	for (int i = 0; i < NCCL_NET_MAX_REQUESTS; i++)
		slot_of[i] = i;
	double t0 = now_s();
	while (got < peer_k || sent_done < k) {
		for (int i = 0; i < NCCL_NET_MAX_REQUESTS && got < peer_k; i++) {
			int done = 0, sz = -1;
			if (!rreq[i])
				continue;
			OKR(n_test(rreq[i], &done, &sz), "test(recv)");
			if (!done)
				continue;
			int m = slot_of[i];
			CHECK(sz == MSG - m % 7, "msg %d size %d", m, sz);
			CHECK(verify(ra.p + (size_t)i * (MSG + 64), (size_t)sz, 90000u + (uint32_t)m),
			      "msg %d data", m);
			got++;
			rreq[i] = NULL;
			if (posted < peer_k) {
				size_t cap = MSG + 64;
				void *d[1] = { ra.p + (size_t)i * (MSG + 64) };
				int tag = 1 - g_rank;
				void *mh[1] = { ra.mh };
				rreq[i] = post_recv(r, 1, d, &cap, &tag, mh);
				slot_of[i] = posted++;
			}
		}
		for (int i = sent_done; i < k; i++) {
			int done = 0;
			OKR(n_test(sreq[i], &done, NULL), "test(send)");
			if (!done)
				break;
			sent_done++;
		}
		CHECK(now_s() - t0 < g_deadline_s * 2, "saturation drain stuck (got %d/%d sent %d/%d)",
		      got, peer_k, sent_done, k);
		poll_pause();
	}
	barrier();
	area_free(&sa, s);
	area_free(&ra, r);
	char nm[128];
	snprintf(nm, sizeof(nm),
		 "saturation: %d receives then NULL, %d sends then NULL, all completed and verified",
		 NCCL_NET_MAX_REQUESTS, k);
	pass(nm);
}

static void t_truncation_flush_reg(void *s, void *r)
{
	char sb[512], rb[512];
	void *smh, *rmh, *req, *bad = (void *)1;
	int sz[1];

	OKR(n_regmr(s, sb, sizeof(sb), NCCL_PTR_HOST, &smh), "regMr");
	OKR(n_regmr(r, rb, sizeof(rb), NCCL_PTR_HOST, &rmh), "regMr");
	CHECK(n_regmr(r, rb, sizeof(rb), NCCL_PTR_CUDA, &bad) != ncclSuccess && bad == NULL,
	      "regMr(NCCL_PTR_CUDA) accepted by a host-only plugin");
	/* regMrDmaBuf with what is not a DMA-buf, or not a valid call */
	{
		int pfd[2];

		CHECK(pipe(pfd) == 0, "pipe");
		bad = (void *)1;
		CHECK(n_regmr_dmabuf(r, rb, sizeof(rb), NCCL_PTR_CUDA, 0, -1, &bad) != ncclSuccess &&
			      bad == NULL,
		      "regMrDmaBuf(fd -1) accepted");
		bad = (void *)1;
		CHECK(n_regmr_dmabuf(r, rb, sizeof(rb), NCCL_PTR_CUDA, 0, pfd[0], &bad) != ncclSuccess &&
			      bad == NULL,
		      "regMrDmaBuf(a pipe) accepted");
		CHECK(n_regmr_dmabuf(NULL, rb, sizeof(rb), NCCL_PTR_CUDA, 0, pfd[0], &bad) != ncclSuccess,
		      "regMrDmaBuf(NULL comm) accepted");
		CHECK(n_regmr_dmabuf(r, rb, 0, NCCL_PTR_CUDA, 0, pfd[0], &bad) != ncclSuccess,
		      "regMrDmaBuf(size 0) accepted");
		CHECK(n_regmr_dmabuf(r, rb, sizeof(rb), 9, 0, pfd[0], &bad) != ncclSuccess,
		      "regMrDmaBuf(type 9) accepted");
		CHECK(n_regmr_dmabuf(r, rb, sizeof(rb), NCCL_PTR_CUDA, 0, pfd[0], NULL) != ncclSuccess,
		      "regMrDmaBuf(NULL mhandle) accepted");
		close(pfd[0]);
		close(pfd[1]);
	}
	barrier();
	/* receive smaller than send: both requests fail, framing survives */
	{
		size_t cap = 100;
		void *d[1] = { rb };
		int tag = 1 - g_rank;
		void *rreq = post_recv(r, 1, d, &cap, &tag, &rmh);
		fill(sb, 200, 4242);
		void *sreq = post_send(s, sb, 200, g_rank, smh);
		ncclResult_t rs = wait_req(sreq, sz), rr = wait_req(rreq, sz);
		CHECK(rs != ncclSuccess || rr != ncclSuccess,
		      "a 200-byte send into a 100-byte receive reported success on both sides");
		CHECK(rr != ncclSuccess, "receiver not told about the truncation");
	}
	barrier();
	{
		size_t cap = 300;
		void *d[1] = { rb };
		int tag = 1 - g_rank;
		void *rreq = post_recv(r, 1, d, &cap, &tag, &rmh);
		fill(sb, 250, 4343);
		void *sreq = post_send(s, sb, 250, g_rank, smh);
		OKR(wait_req(sreq, sz), "send after truncation");
		OKR(wait_req(rreq, sz), "recv after truncation");
		CHECK(sz[0] == 250 && verify(rb, 250, 4343), "message after truncation damaged");
	}
	/* iflush: host memory needs none; NULL request or a request that completes */
	{
		void *d[1] = { rb };
		int fsz[1] = { 250 };
		void *mh[1] = { rmh };
		req = (void *)1;
		OKR(n_iflush(r, 1, d, fsz, mh, &req), "iflush");
		if (req)
			OKR(wait_req(req, NULL), "test(flush)");
	}
	barrier();
	OKR(n_deregmr(s, smh), "deregMr");
	OKR(n_deregmr(r, rmh), "deregMr");
	pass("receive smaller than send fails that message only; iflush; regMr type check; regMrDmaBuf bad calls");
}

/*
 * --dmabuf: regMrDmaBuf's data path. Each rank makes one DMA-buf (test
 * exporter, system pages) and registers two regions of it the way NCCL
 * does, closing its fd right after: bytes [0, 4 MiB) on the send comm and
 * [4 MiB + 64, 8 MiB) on the receive comm, under addresses that are
 * NCCL's, not the mapping's (here: poison-filled host memory, which the
 * plugin must never touch; a GPU's addresses in NCCL). Through the
 * registrations: 0 B .. 4 MiB - 4 KiB zero copy (the driver's import),
 * a DMA-buf send into an unregistered receive and an unregistered send into
 * a DMA-buf receive (staged, through the plugin's mapping), out-of-region
 * pointers refused; checked through this test's own mapping.
 */
#define ODL_DMABUF_EXP_CREATE _IOWR(0xB6, 0x00, uint64_t)
static int g_dmabuf;

/*
 * A DMA-buf of len bytes. NETCONF_DMABUF_EXPORTER: odl (default, the test
 * exporter odl_dmabuf_exp.ko), udmabuf (the kernel's, from memfd pages) or
 * heap (the kernel's DMA-BUF system heap).
 */
static int dmabuf_new(uint64_t len)
{
	const char *x = getenv("NETCONF_DMABUF_EXPORTER");
	int ex, fd;

	if (x && !strcmp(x, "udmabuf")) {
		struct udmabuf_create uc = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = len };
		int mfd = memfd_create("netconf", MFD_ALLOW_SEALING | MFD_CLOEXEC);

		CHECK(mfd >= 0 && !ftruncate(mfd, (off_t)len) &&
			      fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK) == 0,
		      "--dmabuf: memfd for udmabuf: %s", strerror(errno));
		ex = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
		CHECK(ex >= 0, "--dmabuf: /dev/udmabuf: %s", strerror(errno));
		uc.memfd = (uint32_t)mfd;
		fd = ioctl(ex, UDMABUF_CREATE, &uc);
		close(mfd);
	} else if (x && !strcmp(x, "heap")) {
		struct dma_heap_allocation_data ha = { .len = len, .fd_flags = O_RDWR | O_CLOEXEC };

		ex = open("/dev/dma_heap/system", O_RDWR | O_CLOEXEC);
		CHECK(ex >= 0, "--dmabuf: /dev/dma_heap/system: %s", strerror(errno));
		fd = ioctl(ex, DMA_HEAP_IOCTL_ALLOC, &ha) ? -1 : (int)ha.fd;
	} else {
		CHECK(!x || !strcmp(x, "odl"), "NETCONF_DMABUF_EXPORTER=%s: odl, udmabuf or heap", x);
		ex = open("/dev/odl_dmabuf_exp", O_RDWR | O_CLOEXEC);
		CHECK(ex >= 0, "--dmabuf: /dev/odl_dmabuf_exp: %s (load odl_dmabuf_exp.ko)",
		      strerror(errno));
		fd = ioctl(ex, ODL_DMABUF_EXP_CREATE, &len);
	}
	CHECK(fd >= 0, "--dmabuf: creating a DMA-buf of %llu bytes (%s): %s", (unsigned long long)len,
	      x ? x : "odl", strerror(errno));
	close(ex);
	return fd;
}

static bool all_bytes(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* one message each way at once: recv into (rd, rmh), send from (sd, smh) */
static void dmabuf_xfer(void *s, void *r, void *sd, void *smh, void *rd, void *rmh, size_t n,
			size_t cap)
{
	void *d[1] = { rd }, *mh[1] = { rmh };
	int tag = 1 - g_rank, ssz = -1, rsz = -1;
	void *rreq = post_recv(r, 1, d, &cap, &tag, mh);
	void *sreq = post_send(s, sd, n, g_rank, smh);

	OKR(wait_req(sreq, &ssz), "test(send)");
	OKR(wait_req(rreq, &rsz), "test(recv)");
	CHECK((size_t)ssz == n && (size_t)rsz == n, "DMA-buf message of %zu: sizes %d/%d", n, ssz,
	      rsz);
}

static void t_dmabuf(void *s, void *r)
{
	const size_t len = 8u << 20, half = 4u << 20, roff = half + 64, rlen = len - roff;
	const size_t sizes[] = { 0, 1, 4097, 1u << 20, half - 4096 };
	const char *path = odl_tb5_rccl_stats_path();
	const struct odl_tb5_rccl_stats *st = path ? stats_map(path) : NULL;
	uint64_t regs0 = 0, imp0 = 0, zc0 = 0;
	int fd = dmabuf_new(len);
	unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	unsigned char *fs = aligned_alloc(4096, half), *fr = aligned_alloc(4096, 4u << 20);
	unsigned char *host = aligned_alloc(4096, 2u << 20);
	void *smh = NULL, *rmh = NULL, *bad = (void *)1, *req = (void *)1;
	uint32_t seed = 7000;

	CHECK(m != MAP_FAILED && fs && fr && host, "--dmabuf: mmap/out of memory");
	CHECK(st && st->size >= offsetof(struct odl_tb5_rccl_stats, dmabuf_imports) + 8,
	      "--dmabuf: the plugin's statistics (%s) are needed", path ? path : "off");
	memset(fs, 0xee, half);
	memset(fr, 0xee, 4u << 20);
	regs0 = __atomic_load_n(&st->dmabuf_regs, __ATOMIC_RELAXED);
	imp0 = __atomic_load_n(&st->dmabuf_imports, __ATOMIC_RELAXED);
	zc0 = __atomic_load_n(&st->zc_tx_bytes, __ATOMIC_RELAXED);
	OKR(n_regmr_dmabuf(s, fs, half, NCCL_PTR_CUDA, 0, fd, &smh), "regMrDmaBuf(send region)");
	OKR(n_regmr_dmabuf(r, fr, rlen, NCCL_PTR_CUDA, roff, fd, &rmh), "regMrDmaBuf(recv region)");
	CHECK(smh && rmh, "regMrDmaBuf gave a NULL handle");
	CHECK(n_regmr_dmabuf(s, fs, half, NCCL_PTR_CUDA, len - half + 4096, fd, &bad) != ncclSuccess &&
		      bad == NULL,
	      "regMrDmaBuf past the DMA-buf's end accepted");
	close(fd); /* as NCCL does: the registrations keep it */
	barrier();
	/* zero copy, one message each way at a time, at moving offsets */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i], so = (i * 4160) % 8192, ro = (i * 12352) % 16384;

		CHECK(so + n <= half && ro + n + 100 <= rlen, "layout");
		memset(m + roff + ro, 0, n + 100);
		fill(m + so, n, seed + (uint32_t)i + 1000u * (uint32_t)g_rank);
		dmabuf_xfer(s, r, fs + so, smh, fr + ro, rmh, n, n + 100);
		CHECK(verify(m + roff + ro, n, seed + (uint32_t)i + 1000u * (uint32_t)(1 - g_rank)),
		      "DMA-buf to DMA-buf, %zu bytes: data mismatch", n);
		CHECK(all_bytes(m + roff + ro + n, 100, 0), "DMA-buf receive of %zu: written past the message", n);
	}
	barrier();
	/* staged: DMA-buf send into an unregistered receive, then an
	 * unregistered send into a DMA-buf receive */
	fill(m + 123, (1u << 20) + 3, 7100u + (uint32_t)g_rank);
	dmabuf_xfer(s, r, fs + 123, smh, host, NULL, (1u << 20) + 3, 2u << 20);
	CHECK(verify(host, (1u << 20) + 3, 7100u + (uint32_t)(1 - g_rank)),
	      "DMA-buf send into a host receive: data mismatch");
	fill(host, 300001, 7200u + (uint32_t)g_rank);
	dmabuf_xfer(s, r, host, NULL, fr + 4101, rmh, 300001, 300001);
	CHECK(verify(m + roff + 4101, 300001, 7200u + (uint32_t)(1 - g_rank)),
	      "host send into a DMA-buf receive: data mismatch");
	barrier();
	/* pointers outside the registration: refused, nothing sent */
	CHECK(n_isend(s, fs + half - 10, 100, g_rank, smh, &req) != ncclSuccess && req == NULL,
	      "isend beyond its DMA-buf registration accepted");
	{
		void *d[1] = { fr - 1 }, *mh[1] = { rmh };
		size_t cap = 16;
		int tag = 0;

		req = (void *)1;
		CHECK(n_irecv(r, 1, d, &cap, &tag, mh, &req) != ncclSuccess && req == NULL,
		      "irecv before its DMA-buf registration accepted");
	}
	CHECK(all_bytes(fs, half, 0xee) && all_bytes(fr, 4u << 20, 0xee),
	      "the plugin touched NCCL's addresses of a DMA-buf registration");
	uint64_t regs = __atomic_load_n(&st->dmabuf_regs, __ATOMIC_RELAXED) - regs0;
	uint64_t imp = __atomic_load_n(&st->dmabuf_imports, __ATOMIC_RELAXED) - imp0;
	uint64_t zc = __atomic_load_n(&st->zc_tx_bytes, __ATOMIC_RELAXED) - zc0;
	say("# DMA-buf registrations %llu, imported by the driver %llu, zero-copy bytes sent %llu\n",
	    (unsigned long long)regs, (unsigned long long)imp, (unsigned long long)zc);
	CHECK(regs >= 2, "statistics: %llu DMA-buf registrations counted", (unsigned long long)regs);
	CHECK(imp >= 2, "statistics: the driver imported %llu DMA-buf registrations",
	      (unsigned long long)imp);
	CHECK(zc >= half - 4096, "statistics: %llu bytes zero copy (DMA-buf sends)",
	      (unsigned long long)zc);
	barrier();
	OKR(n_deregmr(s, smh), "deregMr(DMA-buf)");
	OKR(n_deregmr(r, rmh), "deregMr(DMA-buf)");
	munmap(m, len);
	munmap((void *)st, sizeof(*st));
	free(fs);
	free(fr);
	free(host);
	pass("regMrDmaBuf: DMA-buf regions zero copy (driver import) and staged, at offsets, fd closed after, NCCL addresses untouched");
}

struct mc_arg {
	void *s, *r;
	int idx, rounds;
	int fail;
};

static void *mc_thread(void *p)
{
	struct mc_arg *a = p;
	enum { SZ = 50000 };
	char *sb = malloc(SZ), *rb = malloc(SZ + 100);
	void *smh, *rmh;

	if (!sb || !rb || n_regmr(a->s, sb, SZ, NCCL_PTR_HOST, &smh) ||
	    n_regmr(a->r, rb, SZ + 100, NCCL_PTR_HOST, &rmh)) {
		a->fail = 1;
		return NULL;
	}
	for (int k = 0; k < a->rounds && !a->fail; k++) {
		size_t n = (size_t)(k * 977 + a->idx * 13) % SZ, cap = SZ + 100;
		void *d[1] = { rb }, *mh[1] = { rmh }, *rq = NULL, *sq = NULL;
		int tag = 1 - g_rank, done = 0, sz = -1;
		uint32_t seed = (uint32_t)(a->idx * 100000 + k);

		while (!rq)
			if (n_irecv(a->r, 1, d, &cap, &tag, mh, &rq)) {
				a->fail = 2;
				break;
			}
		fill(sb, n, seed + (uint32_t)g_rank * 7777u);
		while (!sq && !a->fail)
			if (n_isend(a->s, sb, n, g_rank, smh, &sq))
				a->fail = 3;
		while (!a->fail && !done) {
			if (n_test(sq, &done, NULL))
				a->fail = 4;
			else if (!done)
				sched_yield();
		}
		done = 0;
		while (!a->fail && !done) {
			if (n_test(rq, &done, &sz))
				a->fail = 5;
			else if (!done)
				sched_yield();
		}
		if (!a->fail && ((size_t)sz != n || !verify(rb, n, seed + (uint32_t)(1 - g_rank) * 7777u)))
			a->fail = 6;
	}
	n_deregmr(a->s, smh);
	n_deregmr(a->r, rmh);
	free(sb);
	free(rb);
	return NULL;
}

static void t_multi_comm(void)
{
	enum { NC = 4 };
	struct mc_arg a[NC];
	pthread_t th[NC];

	for (int i = 0; i < NC; i++) {
		setup_pair(&a[i].s, &a[i].r);
		a[i].idx = i;
		a[i].rounds = 60;
		a[i].fail = 0;
	}
	barrier();
	for (int i = 0; i < NC; i++)
		pthread_create(&th[i], NULL, mc_thread, &a[i]);
	for (int i = 0; i < NC; i++) {
		pthread_join(th[i], NULL);
		CHECK(!a[i].fail, "comm pair %d failed (stage %d)", i, a[i].fail);
	}
	barrier();
	for (int i = 0; i < NC; i++) {
		OKR(n_closeSend(a[i].s), "closeSend");
		OKR(n_closeRecv(a[i].r), "closeRecv");
	}
	barrier();
	pass("4 comm pairs per direction driven from 4 threads at once, FIFO per comm");
}

static void t_close_orders(void)
{
	void *s, *r, *req;
	char buf[256];

	/* 1. sender closes first, receiver after a barrier; 2. the reverse */
	for (int order = 0; order < 2; order++) {
		setup_pair(&s, &r);
		barrier();
		if (order == 0) {
			OKR(n_closeSend(s), "closeSend");
			barrier();
			OKR(n_closeRecv(r), "closeRecv");
		} else {
			OKR(n_closeRecv(r), "closeRecv");
			barrier();
			OKR(n_closeSend(s), "closeSend");
		}
		barrier();
	}
	/* 3. both at once, no barrier between */
	setup_pair(&s, &r);
	barrier();
	OKR(n_closeRecv(r), "closeRecv");
	OKR(n_closeSend(s), "closeSend");
	barrier();
	/* 4. close with requests in flight, MRs deregistered after the close */
	setup_pair(&s, &r);
	void *smh, *rmh;
	OKR(n_regmr(s, buf, sizeof(buf), NCCL_PTR_HOST, &smh), "regMr");
	OKR(n_regmr(r, buf, sizeof(buf), NCCL_PTR_HOST, &rmh), "regMr");
	barrier();
	{
		size_t cap = 128;
		void *d[1] = { buf };
		int tag = 1 - g_rank;
		req = post_recv(r, 1, d, &cap, &tag, &rmh);
		if (g_dev == g_fuse_dev) {
			/* a fused device takes a send only against its receive's
			 * clear-to-send: with a tag no receive has, never */
			void *q = (void *)1;

			OKR(n_isend(s, buf + 128, 64, 12345, smh, &q), "isend");
			CHECK(q == NULL, "fused: a send that no receive matches was taken");
		} else {
			req = post_send(s, buf + 128, 64, 12345, smh); /* tag never matches */
		}
		(void)req;
	}
	barrier(); /* both sides have requests in flight */
	OKR(n_closeSend(s), "closeSend with a request in flight");
	OKR(n_closeRecv(r), "closeRecv with a request in flight");
	OKR(n_deregmr(s, smh), "deregMr after closeSend");
	OKR(n_deregmr(r, rmh), "deregMr after closeRecv");
	barrier();
	/* 5. listen comms closed without accept; an unanswered connect is refused */
	{
		unsigned char h[NCCL_NET_HANDLE_MAXSIZE];
		void *l = NULL;
		OKR(n_listen(g_dev, h, &l), "listen");
		OKR(n_closeListen(l), "closeListen without accept");
	}
	barrier();
	/* 6. repeated create/use/destroy cycles */
	for (int k = 0; k < 20; k++) {
		setup_pair(&s, &r);
		struct area sa, ra;
		area_init(&sa, s, 4096);
		area_init(&ra, r, 4096);
		size_t sz = (size_t)k * 100;
		xfer_both(s, r, &sa, &ra, &sz, 1, 10, (uint32_t)k);
		barrier();
		area_free(&sa, s);
		area_free(&ra, r);
		if (k & 1) {
			OKR(n_closeRecv(r), "closeRecv");
			OKR(n_closeSend(s), "closeSend");
		} else {
			OKR(n_closeSend(s), "closeSend");
			OKR(n_closeRecv(r), "closeRecv");
		}
	}
	barrier();
	pass("close in every order, with requests in flight, MR after comm; 20 create/destroy cycles");
}

/* ---- collectives on top of the plugin (ring, host buffers) ---------- */

struct ring {
	void *s, *r; /* send to next, receive from prev */
	struct area sa, ra;
	int nranks, rank;
};

/* Send block `sb` bytes at sp to next and receive `rn` bytes from prev into rp,
 * in pipelined slices of at most `slice` bytes with up to 8 in flight. */
static void ring_step(struct ring *g, const char *sp, size_t sn, char *rp, size_t rn, size_t slice)
{
	size_t soff = 0, roff = 0, sdone = 0, rdone = 0;
	void *sq[8] = { 0 }, *rq[8] = { 0 };
	size_t slen[8], rlen[8], rat[8];
	int sh = 0, st = 0, rh = 0, rt = 0; /* ring indices (head = oldest) */
	double t0 = now_s();

	/* stage through the registered areas like NCCL does (host buffers) */
	while (sdone < sn || rdone < rn) {
		while (st - sh < 8 && soff < sn) {
			size_t n = sn - soff < slice ? sn - soff : slice;
			int i = st % 8;
			char *stage = g->sa.p + (size_t)i * slice;
			memcpy(stage, sp + soff, n);
			void *req = NULL;
			OKR(n_isend(g->s, stage, n, g->rank, g->sa.mh, &req), "isend");
			if (!req)
				break;
			sq[i] = req;
			slen[i] = n;
			soff += n;
			st++;
		}
		while (rt - rh < 8 && roff < rn) {
			size_t n = rn - roff < slice ? rn - roff : slice;
			int i = rt % 8;
			void *d[1] = { g->ra.p + (size_t)i * slice };
			int tag = (g->rank + g->nranks - 1) % g->nranks;
			void *req = NULL;
			OKR(n_irecv(g->r, 1, d, &slice, &tag, &g->ra.mh, &req), "irecv");
			if (!req)
				break;
			rq[i] = req;
			rlen[i] = n;
			rat[i] = roff;
			roff += n;
			rt++;
		}
		if (sh < st) {
			int done = 0, sz = -1, i = sh % 8;
			OKR(n_test(sq[i], &done, &sz), "test(send)");
			if (done) {
				CHECK((size_t)sz == slen[i], "slice send size");
				sdone += slen[i];
				sh++;
			}
		}
		if (rh < rt) {
			int done = 0, sz = -1, i = rh % 8;
			OKR(n_test(rq[i], &done, &sz), "test(recv)");
			if (done) {
				CHECK((size_t)sz == rlen[i], "slice recv size %d want %zu", sz, rlen[i]);
				memcpy(rp + rat[i], g->ra.p + (size_t)i * slice, rlen[i]);
				rdone += rlen[i];
				rh++;
			}
		}
		CHECK(now_s() - t0 < g_deadline_s, "ring step stuck");
		poll_pause();
	}
}

/* ring all-reduce (sum) of count floats at x = reduce-scatter + all-gather
 * over nranks chunks; tmp: count floats of scratch */
static void ring_allreduce(struct ring *g, float *x, float *tmp, size_t count, size_t slice)
{
	size_t chunk = (count + (size_t)g->nranks - 1) / (size_t)g->nranks;
#define CHUNK_START(c) ((size_t)(c) * chunk < count ? (size_t)(c) * chunk : count)
#define CHUNK_LEN(c) (CHUNK_START((c) + 1) - CHUNK_START(c))
	for (int step = 0; step < g->nranks - 1; step++) {
		int sc = (g->rank - step + g->nranks) % g->nranks;
		int rc = (g->rank - step - 1 + 2 * g->nranks) % g->nranks;
		ring_step(g, (char *)(x + CHUNK_START(sc)), CHUNK_LEN(sc) * sizeof(float),
			  (char *)(tmp + CHUNK_START(rc)), CHUNK_LEN(rc) * sizeof(float), slice);
		for (size_t i = CHUNK_START(rc); i < CHUNK_START(rc) + CHUNK_LEN(rc); i++)
			x[i] += tmp[i];
	}
	for (int step = 0; step < g->nranks - 1; step++) {
		int sc = (g->rank + 1 - step + g->nranks) % g->nranks;
		int rc = (g->rank - step + g->nranks) % g->nranks;
		ring_step(g, (char *)(x + CHUNK_START(sc)), CHUNK_LEN(sc) * sizeof(float),
			  (char *)(x + CHUNK_START(rc)), CHUNK_LEN(rc) * sizeof(float), slice);
	}
#undef CHUNK_START
#undef CHUNK_LEN
}

/* every rank's input element i of the all-reduce tests, and their sum */
static float ar_input(int rank, size_t i)
{
	return (float)((rank + 1) * (int)(i % 1000)) * 0.5f;
}

static void ar_verify(const float *x, size_t count, int nranks)
{
	for (size_t i = 0; i < count; i++) {
		float want = 0;
		for (int r = 0; r < nranks; r++)
			want += ar_input(r, i);
		CHECK(x[i] == want, "all-reduce element %zu = %f want %f", i, x[i], want);
	}
}

static void t_collectives(void)
{
	struct ring g;
	const size_t slice = 512u << 10;
	size_t count = (g_max >= (16u << 20) ? 3u << 20 : 1u << 18) + 13; /* floats */

	g.nranks = 2;
	g.rank = g_rank;
	setup_pair(&g.s, &g.r); /* with 2 ranks next == prev == peer */
	area_init(&g.sa, g.s, 8 * slice);
	area_init(&g.ra, g.r, 8 * slice);
	barrier();

	float *x = malloc(count * sizeof(float)), *tmp = malloc(count * sizeof(float));
	CHECK(x && tmp, "oom");
	for (size_t i = 0; i < count; i++)
		x[i] = ar_input(g_rank, i);
	double t0 = now_s();
	ring_allreduce(&g, x, tmp, count, slice);
	double dt = now_s() - t0;
	ar_verify(x, count, g.nranks);
	double bytes = (double)count * sizeof(float);
	say("# all-reduce %zu floats: %.3f s, busbw %.2f GB/s\n", count, dt,
	    bytes * 2.0 * (g.nranks - 1) / g.nranks / dt / 1e9);
	barrier();
	pass("ring all-reduce (sum) over the plugin, result verified");

	/* ring all-gather: every rank contributes an odd-sized block */
	size_t blk = (g_max >= (16u << 20) ? 3u << 20 : 1u << 18) + 5;
	char *all = malloc(blk * (size_t)g.nranks);
	CHECK(all, "oom");
	fill(all + (size_t)g.rank * blk, blk, 31337u + (uint32_t)g.rank);
	for (int step = 0; step < g.nranks - 1; step++) {
		int sb = (g.rank - step + g.nranks) % g.nranks;
		int rb = (g.rank - step - 1 + g.nranks) % g.nranks;
		ring_step(&g, all + (size_t)sb * blk, blk, all + (size_t)rb * blk, blk, slice);
	}
	for (int r = 0; r < g.nranks; r++)
		CHECK(verify(all + (size_t)r * blk, blk, 31337u + (uint32_t)r), "all-gather block %d", r);
	barrier();
	pass("ring all-gather over the plugin, result verified");
	area_free(&g.sa, g.s);
	area_free(&g.ra, g.r);
	OKR(n_closeSend(g.s), "closeSend");
	OKR(n_closeRecv(g.r), "closeRecv");
	free(x);
	free(tmp);
	free(all);
	barrier();
}

/* ---- several cables to one peer (--rails N) ------------------------- */

static int g_rails; /* --rails N: N devices, each reaching the peer (a cable each) */

struct rail {
	struct ring g;
	float *x, *tmp;
	size_t count;
};

static void *rail_main(void *p)
{
	struct rail *r = p;

	ring_allreduce(&r->g, r->x, r->tmp, r->count, 256u << 10);
	return NULL;
}

/*
 * NCCL drives one channel per NIC: here one comm pair per device, an
 * all-reduce divided between them, each part in a thread of its own (the
 * proxy's progress over several NICs), the whole result verified. Each
 * machine numbers its devices in the order its links came up, so device c
 * here need not be the cable to the peer's device c: in the first round
 * rank 1 uses device c for channel c, in the second device c + 1 (mod N).
 * With two cables one of the two rounds connects device c to a listener on
 * the other cable, which the plugin must route over the cable that reaches
 * it (connect would otherwise refuse the handle).
 */
static void t_rails(int ndev)
{
	ncclNetProperties_v7_t p[RAILS_MAX];
	const size_t count = (g_max >= (16u << 20) ? 3u << 20 : 1u << 18) + 29; /* floats */

	CHECK(ndev == g_rails, "--rails %d: the plugin has %d device(s)", g_rails, ndev);
	for (int d = 0; d < ndev; d++) {
		OKR(n_props(d, &p[d]), "getProperties");
		for (int e = 0; e < d; e++) {
			CHECK(p[e].guid != p[d].guid, "devices %d and %d share GUID %016llx", e, d,
			      (unsigned long long)p[d].guid);
			CHECK(!p[e].pciPath || !p[d].pciPath || strcmp(p[e].pciPath, p[d].pciPath),
			      "devices %d and %d share PCI path %s", e, d, p[d].pciPath);
		}
	}
	pass("rails: a device per cable, GUIDs and PCI paths distinct");
	float *x = malloc(count * sizeof(float)), *tmp = malloc(count * sizeof(float));
	CHECK(x && tmp, "oom");
	for (int round = 0; round < 2; round++) {
		struct rail r[RAILS_MAX];
		pthread_t th[RAILS_MAX];
		size_t per = (count + (size_t)ndev - 1) / (size_t)ndev;

		for (size_t i = 0; i < count; i++)
			x[i] = ar_input(g_rank, i);
		for (int c = 0; c < ndev; c++) {
			g_dev = g_rank == 1 ? (c + round) % ndev : c;
			r[c].g.nranks = 2;
			r[c].g.rank = g_rank;
			setup_pair(&r[c].g.s, &r[c].g.r);
			area_init(&r[c].g.sa, r[c].g.s, 8 * (256u << 10));
			area_init(&r[c].g.ra, r[c].g.r, 8 * (256u << 10));
			r[c].x = x + (size_t)c * per;
			r[c].tmp = tmp + (size_t)c * per;
			r[c].count = (size_t)(c + 1) * per <= count ? per : count - (size_t)c * per;
		}
		barrier();
		double t0 = now_s();
		for (int c = 0; c < ndev; c++)
			CHECK(!pthread_create(&th[c], NULL, rail_main, &r[c]), "pthread_create");
		for (int c = 0; c < ndev; c++)
			pthread_join(th[c], NULL);
		double dt = now_s() - t0;
		ar_verify(x, count, 2);
		say("# rails round %d: all-reduce of %zu floats over %d devices: %.3f s, busbw %.2f GB/s\n",
		    round, count, ndev, dt, (double)count * sizeof(float) / dt / 1e9);
		barrier();
		for (int c = 0; c < ndev; c++) {
			area_free(&r[c].g.sa, r[c].g.s);
			area_free(&r[c].g.ra, r[c].g.r);
			OKR(n_closeSend(r[c].g.s), "closeSend");
			OKR(n_closeRecv(r[c].g.r), "closeRecv");
		}
		barrier();
	}
	g_dev = 0;
	free(x);
	free(tmp);
	pass("rails: an all-reduce divided between the devices, a thread each, verified; "
	     "rank 1's device numbers as they are, then shifted by one");
}

/* ---- a fused device (--fuse, with --rails N) ------------------------- */

/*
 * Fused handles connect must refuse (ncclInvalidUsage, no comm, nothing
 * left pending): this process's own, a rail count of 0 or above 4, a rail
 * with port 0, and one whose first rail's controller no device here
 * reaches. Bytes of the plugin's fused handle: 16 the listener's instance,
 * 48 the rail count, 56 + 16 k rail k (controller UUID's first 8 bytes,
 * listen comm, port at + 12).
 */
static void t_fuse_bad_handles(int d)
{
	unsigned char h[NCCL_NET_HANDLE_MAXSIZE], bad[NCCL_NET_HANDLE_MAXSIZE];
	static const uint32_t rails[] = { 0, 5 };
	void *l = NULL, *c = (void *)1;

	OKR(n_listen(d, h, &l), "listen(fused)");
	CHECK(n_connect(d, h, &c) == ncclInvalidUsage && c == NULL,
	      "connect to our own fused listen handle");
	for (int i = 0; i < 2; i++) {
		memcpy(bad, h, sizeof(bad));
		memcpy(bad + 48, &rails[i], 4);
		c = (void *)1;
		CHECK(n_connect(d, bad, &c) == ncclInvalidUsage && c == NULL,
		      "connect with a fused handle of %u rails", rails[i]);
	}
	memcpy(bad, h, sizeof(bad));
	bad[68] = 0;
	c = (void *)1;
	CHECK(n_connect(d, bad, &c) == ncclInvalidUsage && c == NULL,
	      "connect with a fused handle with port 0 on a rail");
	memcpy(bad, h, sizeof(bad));
	bad[16] ^= 0x5a; /* another process's */
	memset(bad + 56, 0xee, 8);
	c = (void *)1;
	CHECK(n_connect(d, bad, &c) == ncclInvalidUsage && c == NULL,
	      "connect with a fused handle whose rail no device reaches");
	OKR(n_closeListen(l), "closeListen(fused)");
}

/* makeVDevice of the table in use (v9 and later), props NULL with n < 0 */
static ncclResult_t n_make(int *d, int n, const int *devs)
{
	if (g_api >= 12) {
		ncclNetVDeviceProps_v12_t p = { .ndevs = n };

		for (int k = 0; k < n && k < NCCL_NET_MAX_DEVS_PER_NIC_V12; k++)
			p.devs[k] = devs[k];
		return T12->makeVDevice(d, n < 0 ? NULL : &p);
	}
	ncclNetVDeviceProps_v9_t p = { .ndevs = n };

	for (int k = 0; k < n && k < NCCL_NET_MAX_DEVS_PER_NIC_V9; k++)
		p.devs[k] = devs[k];
	if (g_api == 11)
		return T11->makeVDevice(d, n < 0 ? NULL : &p);
	if (g_api == 10)
		return T10->makeVDevice(d, n < 0 ? NULL : &p);
	return T9->makeVDevice(d, n < 0 ? NULL : &p);
}

/*
 * NIC fusion: NCCL hands makeVDevice the physical devices it wants as one
 * NIC and uses the index it gets back (after the physical ones) like any
 * device. Bad fusions are refused with the NCCL error code and make
 * nothing; the fused device's properties add up its cables'. Each rank
 * fuses its devices 0..N-1 in its own numbering (spawn mode: rank 1's are
 * listed the other way round, so its device 0 is the cable of rank 0's
 * device N-1). Returns the devices() count after it.
 */
static int t_fuse(int ndev)
{
	int d, d2, n = -1, all[RAILS_MAX], many[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	ncclNetProperties_v7_t p, m;
	const int bad[3][2] = { { 0, -1 }, { 0, 0 }, { 0, 99 } };

	CHECK(g_api >= 9, "--fuse needs makeVDevice (v9 and later), not v%d", g_api);
	CHECK(ndev == g_rails, "--rails %d: the plugin has %d device(s)", g_rails, ndev);
	for (int k = 0; k < ndev; k++)
		all[k] = k;
	CHECK(n_make(NULL, ndev, all) != ncclSuccess, "makeVDevice(NULL index) succeeded");
	d = 5;
	CHECK(n_make(&d, -1, NULL) != ncclSuccess && d == -1, "makeVDevice(NULL props): index %d", d);
	CHECK(n_make(&d, 0, all) == ncclInvalidUsage, "makeVDevice of no device");
	CHECK(n_make(&d, 5, many) == ncclInvalidUsage, "makeVDevice of 5 devices (4 at most)");
	for (int i = 0; i < 3; i++) {
		int b[2] = { bad[i][0], bad[i][1] == 99 ? ndev : bad[i][1] };

		CHECK(n_make(&d, 2, b) == ncclInvalidUsage && d == -1, "makeVDevice(%d, %d) made %d",
		      b[0], b[1], d);
	}
	OKR(n_devices(&n), "devices");
	CHECK(n == ndev, "refused fusions left %d devices (%d before)", n, ndev);
	OKR(n_make(&d, ndev, all), "makeVDevice");
	CHECK(d == ndev, "fused device %d: the first after the %d physical ones expected", d, ndev);
	OKR(n_make(&d2, ndev, all), "makeVDevice again");
	CHECK(d2 == d, "the same fusion twice: device %d, then %d", d, d2);
	OKR(n_devices(&n), "devices");
	CHECK(n == ndev + 1, "devices() %d after the fusion (%d expected)", n, ndev + 1);
	int again[2] = { d, 0 };
	CHECK(n_make(&d2, 2, again) == ncclInvalidUsage, "a fused device fused again");
	g_fuse_dev = d;
	g_fuse_n = ndev;
	OKR(n_props(d, &p), "getProperties(fused)"); /* vProps checked in n_props */
	int speed = 0;
	float lat = 0;
	for (int k = 0; k < ndev; k++) {
		OKR(n_props(k, &m), "getProperties");
		speed += m.speed;
		lat = m.latency > lat ? m.latency : lat;
		CHECK(m.guid != p.guid && strcmp(m.name, p.name) && strstr(p.name, m.name),
		      "fused device %s (guid %016llx) against its cable %s (%016llx)", p.name,
		      (unsigned long long)p.guid, m.name, (unsigned long long)m.guid);
		CHECK(m.ptrSupport == p.ptrSupport && m.maxRecvs == p.maxRecvs &&
			      m.netDeviceType == p.netDeviceType,
		      "fused device: ptrSupport %d maxRecvs %d type %d; cable %d: %d %d %d",
		      p.ptrSupport, p.maxRecvs, p.netDeviceType, k, m.ptrSupport, m.maxRecvs,
		      m.netDeviceType);
	}
	CHECK(p.speed == speed && p.latency == lat, "fused device: speed %d latency %.1f (%d, %.1f)",
	      p.speed, p.latency, speed, lat);
	CHECK(n_props(d + 1, &m) != ncclSuccess, "getProperties(%d) past the fused device", d + 1);
	say("# fused device %d: name %s guid %016llx speed %d Mbps\n", d, p.name,
	    (unsigned long long)p.guid, p.speed);
	t_fuse_bad_handles(d);
	pass("fuse: makeVDevice refuses bad fusions with the NCCL error code; the fused device "
	     "follows the physical ones and adds up their properties; connects with bad fused "
	     "handles are refused (ncclInvalidUsage, no comm)");
	return n;
}

/*
 * A side that fused its cables and one that did not still connect: rank 1
 * uses its device 0 (a plain one, the cable that reaches rank 0's device
 * N-1 in spawn mode), rank 0 the fused device. Rank 1's plain connect to
 * rank 0's fused handle makes a fused comm (the fused accept completes only
 * when every cable is connected), and rank 0's fused connect to rank 1's
 * plain handle goes over the one cable that reaches it; data both ways,
 * verified, across every cut (sizes around the 4 KiB parts).
 */
static void t_fuse_mixed(void)
{
	static const size_t sz[] = { 0, 1, 4095, 4097, 8193, 1u << 20, (3u << 20) + 5 };
	const int cnt = (int)(sizeof(sz) / sizeof(sz[0]));
	struct area sa, ra;
	void *s, *r;
	int keep = g_dev;

	if (g_rank == 1)
		g_dev = 0;
	setup_pair(&s, &r);
	area_init(&sa, s, 8u << 20);
	area_init(&ra, r, 8u << 20);
	xfer_both(s, r, &sa, &ra, sz, cnt, 100, 4100);
	barrier();
	area_free(&sa, s);
	area_free(&ra, r);
	OKR(n_closeSend(s), "closeSend");
	OKR(n_closeRecv(r), "closeRecv");
	g_dev = keep;
	barrier();
	pass("fuse: a fused side and a plain one connect both ways (a plain connect to a fused "
	     "listener makes a fused comm); 0 B .. 3 MiB both ways, verified");
}

/*
 * Two fused connects of one process to one fused listen handle at once
 * (rank 1 connects, rank 0 accepts twice). With
 * ODL_TB5_RCCL_TEST_CONNECT_STEP=1 (make unit-rccl) each connect call sends
 * one more rail's CONN, and the calls are made so that the rails arrive
 * crossed: A's first on cable 0, B's first on cable 1. Each accept must
 * join the rails of one connect: a 64 KiB message (a part per cable) sent
 * on A and one on B must each arrive whole, with its own pattern.
 */
static void t_fuse_two_connects(void)
{
	const size_t sz = 64u << 10;
	unsigned char h[NCCL_NET_HANDLE_MAXSIZE];
	double t0 = now_s();

	if (g_rank == 0) {
		void *l = NULL, *r[2] = { NULL, NULL }, *req[2];
		struct area a[2];
		int tag = 1, seen = 0;

		OKR(n_listen(g_dev, h, &l), "listen");
		oob_write(h, sizeof(h));
		for (int i = 0; i < 2;) {
			OKR(TIMED(n_accept(l, &r[i]), "accept"), "accept");
			if (r[i])
				i++;
			CHECK(now_s() - t0 < g_deadline_s, "two connects: %d of 2 accepted", i);
			poll_pause();
		}
		OKR(n_closeListen(l), "closeListen");
		for (int i = 0; i < 2; i++) {
			size_t cap = sz;

			area_init(&a[i], r[i], sz);
			req[i] = post_recv(r[i], 1, (void **)&a[i].p, &cap, &tag, &a[i].mh);
		}
		barrier(); /* receives posted */
		for (int i = 0; i < 2; i++) {
			int got = -1;
			uint32_t id;

			OKR(wait_req(req[i], &got), "test");
			memcpy(&id, a[i].p, sizeof(id));
			CHECK(got == (int)sz && (id == 1 || id == 2) && verify(a[i].p + 4, sz - 4, 900 + id),
			      "two connects: accepted comm %d got %d bytes, not one connect's whole message (id %u)",
			      i, got, id);
			seen |= 1 << id;
		}
		CHECK(seen == 6, "two connects: both messages arrived on one accepted comm");
		barrier();
		for (int i = 0; i < 2; i++) {
			area_free(&a[i], r[i]);
			OKR(n_closeRecv(r[i]), "closeRecv");
		}
	} else {
		unsigned char hc[2][NCCL_NET_HANDLE_MAXSIZE];
		static const int order[] = { 0, 1, 1, 0 }; /* A0, B0, B1, A1 */
		void *s[2] = { NULL, NULL }, *req[2];
		struct area a[2];

		oob_read(h, sizeof(h));
		memcpy(hc[0], h, sizeof(h));
		memcpy(hc[1], h, sizeof(h));
		for (int i = 0; !s[0] || !s[1]; i++) {
			int c = i < 4 ? order[i] : i & 1;

			if (!s[c])
				OKR(TIMED(n_connect(g_dev, hc[c], &s[c]), "connect"), "connect");
			CHECK(now_s() - t0 < g_deadline_s, "two connects did not complete");
			if (i >= 4)
				poll_pause();
		}
		for (int i = 0; i < 2; i++) {
			uint32_t id = (uint32_t)i + 1;

			area_init(&a[i], s[i], sz);
			memcpy(a[i].p, &id, sizeof(id));
			fill(a[i].p + 4, sz - 4, 900 + id);
		}
		barrier(); /* the receives are posted */
		for (int i = 0; i < 2; i++)
			req[i] = post_send(s[i], a[i].p, sz, 1, a[i].mh);
		for (int i = 0; i < 2; i++)
			OKR(wait_req(req[i], NULL), "test");
		barrier();
		for (int i = 0; i < 2; i++) {
			area_free(&a[i], s[i]);
			OKR(n_closeSend(s[i]), "closeSend");
		}
	}
	pass("fuse: two connects of one process to one fused listener at once, their rails arriving crossed: each accept joins one connect's rails; a message on each arrives whole");
}

/* ---- all-reduce benchmark (--bench BYTES) ---------------------------- */

static size_t g_bench_bytes;
static int g_bench_iters = 5;
static size_t g_bench_slice = 4u << 20;
/* --op none: the all-reduce's data movement with the reduction skipped (the
 * plugin's transport alone; what arrives is still checked byte for byte) */
static int g_bench_noop;
/* --in-place: the result overwrites the input (nccl-tests' second column) */
static int g_bench_in_place;

/* --reducer thread: the reductions run in a thread of their own (the role
 * of the GPU in NCCL, which reduces while the proxy thread drives the
 * network); --reducer inline (default): the thread that drives the plugin
 * reduces each slice itself as its receive completes */
static int g_bench_reducer_thread;

/* the reducer thread runs only where there is something to reduce */
static int bench_uses_reducer_thread(void)
{
	return g_bench_reducer_thread && !g_bench_noop;
}
/* --timeline: per timed iteration, when each slice's send and receive
 * completed and when each reduction was seen done (ms from the start) */
static int g_bench_timeline;

#define BENCH_STEPS_MAX 32
/* --steps: slices in flight per direction (NCCL_STEPS: 8) */
static int g_bench_steps = 8;
/* --channels: connections the all-reduce is divided between, each with its
 * own --steps slices in flight, all driven by one thread (NCCL's ring
 * channels: its search finds at least one, and it always doubles them, so
 * two for a ring over one NIC; one proxy thread drives them all) */
#define BENCH_CHANNELS_MAX 8
static int g_bench_channels = 2;

/*
 * dst[i] = a[i] + b[i] for int32 (wrapping; dst may be a): the plain loop,
 * and a 256-bit AVX2 one taken when the CPU has AVX2. Measured in a TCG
 * guest (QEMU 7.2, 64 MiB, docs/performance.md): the plain loop (what -O2
 * makes of it, SSE2 or not) runs at about the speed of memcpy; AVX2 (a -cpu
 * model that has it) is faster still, since QEMU 7.2 translates VEX integer
 * ops into host vector code. A 64-bit two-lanes-per-word trick took three
 * times as long as the plain loop.
 */
static void reduce_sum_i32_plain(int32_t *dst, const int32_t *a, const int32_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = (int32_t)((uint32_t)a[i] + (uint32_t)b[i]);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define REDUCE_HAVE_AVX2 1
__attribute__((target("avx2"))) static void reduce_sum_i32_avx2(int32_t *dst, const int32_t *a,
								 const int32_t *b, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(a + i));
		__m256i y = _mm256_loadu_si256((const __m256i *)(const void *)(b + i));

		_mm256_storeu_si256((__m256i *)(void *)(dst + i), _mm256_add_epi32(x, y));
	}
	reduce_sum_i32_plain(dst + i, a + i, b + i, n - i);
}

static int reduce_use_avx2(void)
{
	static int use = -1; /* set before the bench's threads start (selftest) */

	if (use < 0)
		use = __builtin_cpu_supports("avx2") ? 1 : 0;
	return use;
}
#else
#define REDUCE_HAVE_AVX2 0
static int reduce_use_avx2(void)
{
	return 0;
}
#endif

static void reduce_sum_i32(int32_t *dst, const int32_t *a, const int32_t *b, size_t n)
{
#if REDUCE_HAVE_AVX2
	if (reduce_use_avx2()) {
		reduce_sum_i32_avx2(dst, a, b, n);
		return;
	}
#endif
	reduce_sum_i32_plain(dst, a, b, n);
}

/* reduce_sum_i32 (and the plain loop where AVX2 is taken) against the
 * definition: wrap-around, sign bits, every tail length, unaligned starts,
 * in place and out of place (nothing outside the range written) */
static void reduce_selftest(void)
{
	static const int32_t v[] = { 0, 1, -1, INT32_MAX, INT32_MIN, 0x40000000, -0x40000001, 12345 };
	void (*const fn[2])(int32_t *, const int32_t *, const int32_t *, size_t) = {
		reduce_sum_i32, reduce_sum_i32_plain
	};
	enum { N = 19 };
	int32_t a[N + 1], b[N + 1], d[N + 1], want[N + 1];

	for (int f = 0; f < (reduce_use_avx2() ? 2 : 1); f++)
		for (int place = 0; place < 2; place++)
			for (int start = 0; start < 2; start++)
				for (int n = 0; n <= N - start; n++) {
					int32_t *dst = place ? a : d;

					for (int i = 0; i <= N; i++) {
						a[i] = v[(size_t)i % 8] ^ (int32_t)(i * 7);
						b[i] = v[(size_t)(i * 3 + n) % 8];
						d[i] = -7 - i;
						want[i] = i >= start && i < start + n
								  ? (int32_t)((uint32_t)a[i] + (uint32_t)b[i])
								  : dst[i];
					}
					fn[f](dst + start, a + start, b + start, (size_t)n);
					CHECK(memcmp(dst, want, sizeof(want)) == 0,
					      "reduce_sum_i32%s wrong (%s, start %d n %d)",
					      f ? "_plain" : "", place ? "in place" : "out of place",
					      start, n);
				}
	say("# reduction: %s\n", reduce_use_avx2() ? "AVX2" : "plain loop");
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ns this machine's CPUs spent running tasks (anything but idle), from
 * /proc/schedstat (field 7 of each cpuN line); -1 when it is not there.
 * Under QEMU -icount shift=0 this is the guest's instruction count. */
static double sched_busy_s(void)
{
	FILE *f = fopen("/proc/schedstat", "r");
	char line[512];
	double sum = 0;
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v[7];

		if (strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9')
			continue;
		if (sscanf(line, "%*s %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
			   &v[4], &v[5], &v[6]) == 7) {
			sum += (double)v[6] * 1e-9;
			n++;
		}
	}
	fclose(f);
	return n ? sum : -1;
}

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct bench_it {
	double reduce_s; /* CPU time spent in reduce_sum_i32 (either thread) */
	/* --timeline: ms from the start at which send / receive j completed
	 * and reduction j was seen done (NULL without --timeline) */
	double *t_send, *t_recv, *t_red;
};

/*
 * The reducer thread (--reducer thread): reduces reduce-scatter slices in
 * the order the driving thread hands them over, one channel's slices in
 * order (they arrive in order), publishing per channel how many are done in
 * nred (release: the data is written). One job (an all-reduce) at a time;
 * the driving thread starts the next one only after every slice of the
 * last is reduced.
 */
struct red_chan {
	char *out, *a, *b; /* out = a + b, slice by slice */
	size_t hbytes;	   /* bytes of this channel's part */
	size_t next;	   /* next slice to reduce (reducer only) */
	atomic_size_t nred;
};

struct reducer {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool quit;
	/* the current job, set by red_start under mu */
	size_t slice;
	struct red_chan ch[BENCH_CHANNELS_MAX];
	int *q;		  /* channels in hand-over order */
	size_t qcap, qhead, qtail;
	double cpu_s;	  /* CPU time of the reducer thread in reduce_sum_i32 */
};

static struct reducer g_red;

static void *reducer_main(void *arg)
{
	struct reducer *rd = arg;

	pthread_mutex_lock(&rd->mu);
	for (;;) {
		while (!rd->quit && rd->qhead == rd->qtail)
			pthread_cond_wait(&rd->cv, &rd->mu);
		if (rd->quit)
			break;
		struct red_chan *c = &rd->ch[rd->q[rd->qhead++ % rd->qcap]];
		size_t j = c->next++, off = j * rd->slice;
		size_t len = c->hbytes - off < rd->slice ? c->hbytes - off : rd->slice;

		pthread_mutex_unlock(&rd->mu);
		double t1 = thread_cpu_s();

		reduce_sum_i32((int32_t *)(c->out + off), (const int32_t *)(c->a + off),
			       (const int32_t *)(c->b + off), len / 4);
		double dt = thread_cpu_s() - t1;

		pthread_mutex_lock(&rd->mu);
		rd->cpu_s += dt;
		atomic_store_explicit(&c->nred, j + 1, memory_order_release);
	}
	pthread_mutex_unlock(&rd->mu);
	return NULL;
}

/* a new job: nothing handed over, nothing reduced */
static void red_start(struct reducer *rd, size_t slice)
{
	pthread_mutex_lock(&rd->mu);
	rd->slice = slice;
	rd->qhead = rd->qtail = 0;
	rd->cpu_s = 0;
	for (int c = 0; c < BENCH_CHANNELS_MAX; c++) {
		rd->ch[c].next = 0;
		atomic_store(&rd->ch[c].nred, 0);
	}
	pthread_mutex_unlock(&rd->mu);
}

/* channel c's part: out = a + b over hbytes (before its first hand-over) */
static void red_channel(struct reducer *rd, int c, char *out, char *a, char *b, size_t hbytes)
{
	pthread_mutex_lock(&rd->mu);
	rd->ch[c].out = out;
	rd->ch[c].a = a;
	rd->ch[c].b = b;
	rd->ch[c].hbytes = hbytes;
	pthread_mutex_unlock(&rd->mu);
}

/* the next slice of channel c has arrived and may be reduced */
static void red_hand_over(struct reducer *rd, int c)
{
	pthread_mutex_lock(&rd->mu);
	CHECK(rd->qtail - rd->qhead < rd->qcap, "reducer queue overflow");
	rd->q[rd->qtail++ % rd->qcap] = c;
	pthread_cond_signal(&rd->cv);
	pthread_mutex_unlock(&rd->mu);
}

static size_t red_done(struct reducer *rd, int c)
{
	return atomic_load_explicit(&rd->ch[c].nred, memory_order_acquire);
}

static double red_cpu_s(struct reducer *rd)
{
	pthread_mutex_lock(&rd->mu);
	double v = rd->cpu_s;

	pthread_mutex_unlock(&rd->mu);
	return v;
}

/* qcap: at least the slices of one job */
static void red_init(struct reducer *rd, size_t qcap)
{
	pthread_mutex_init(&rd->mu, NULL);
	pthread_cond_init(&rd->cv, NULL);
	rd->quit = false;
	rd->qcap = qcap;
	rd->q = calloc(qcap, sizeof(*rd->q));
	CHECK(rd->q, "reducer: out of memory");
	CHECK(pthread_create(&rd->th, NULL, reducer_main, rd) == 0, "cannot start the reducer thread");
}

static void red_fini(struct reducer *rd)
{
	pthread_mutex_lock(&rd->mu);
	rd->quit = true;
	pthread_cond_signal(&rd->cv);
	pthread_mutex_unlock(&rd->mu);
	pthread_join(rd->th, NULL);
	pthread_cond_destroy(&rd->cv);
	pthread_mutex_destroy(&rd->mu);
	free(rd->q);
}

/* the buffers of one all-reduce: send (input), recv (result; == send in
 * place), tmp (the peer's copy of my chunk) and their handles per channel
 * and comm */
struct bench_bufs {
	int32_t *send, *recv, *tmp;
	int nch;
	void *s[BENCH_CHANNELS_MAX], *r[BENCH_CHANNELS_MAX]; /* send / recv comms */
	void *s_send[BENCH_CHANNELS_MAX], *s_recv[BENCH_CHANNELS_MAX]; /* send comm's */
	void *r_recv[BENCH_CHANNELS_MAX], *r_tmp[BENCH_CHANNELS_MAX];  /* recv comm's */
	size_t mine_at, other_at, hbytes;
	/* channel c's part of each chunk, [off, off + len), in ns slices
	 * (bench_layout); nunits: slices of both phases, all channels */
	size_t off[BENCH_CHANNELS_MAX], len[BENCH_CHANNELS_MAX], ns[BENCH_CHANNELS_MAX];
	size_t nunits;
};

/* one channel of an all-reduce: its part of each chunk, cut in slices */
struct bench_chan {
	size_t off, hbytes; /* the part: [off, off + hbytes) of each chunk */
	size_t ns, nu;	    /* slices per phase; units (both phases) */
	size_t st_n, sh, rt_n, rh, nred; /* sends posted/done, recvs posted/done */
	void *sq[BENCH_STEPS_MAX], *rq[BENCH_STEPS_MAX];
	size_t slen[BENCH_STEPS_MAX], rlen[BENCH_STEPS_MAX];
	double *t_send, *t_recv, *t_red; /* --timeline, or NULL */
};

/* the channels' parts of a chunk of bb->hbytes: equal parts of whole
 * int32s, the last one takes the rest; each cut in g_bench_slice slices */
static void bench_layout(struct bench_bufs *bb)
{
	size_t part = bb->hbytes / (size_t)bb->nch / 4 * 4;

	bb->nunits = 0;
	for (int c = 0; c < bb->nch; c++) {
		bb->off[c] = (size_t)c * part;
		bb->len[c] = c == bb->nch - 1 ? bb->hbytes - bb->off[c] : part;
		bb->ns[c] = (bb->len[c] + g_bench_slice - 1) / g_bench_slice;
		bb->nunits += 2 * bb->ns[c];
	}
}

/*
 * One two-rank ring all-reduce (int32 sum), pipelined the way NCCL runs its
 * ring: each chunk is divided between the channels (--channels, each its own
 * pair of comms), and each channel's part is cut in slices of g_bench_slice
 * bytes, at most --steps (8) in flight per direction and channel. The two
 * phases are one pipeline per channel: reduce-scatter slice j (my copy of
 * the peer's chunk goes out, the peer's copy of mine comes into tmp and
 * recv[mine] = send[mine] + tmp as soon as it completes) is followed by
 * all-gather slice j (the reduced slice goes out as soon as it is reduced;
 * the peer's reduced slice lands in recv[other]), so the link never drains
 * between the phases. One thread drives every channel, like NCCL's proxy
 * thread. Everything is sent from and received into registered user
 * buffers.
 * Out of place (send != recv, nccl-tests' first column) every receive can be
 * posted at once. In place, an all-gather receive overwrites what a
 * reduce-scatter send read: it is posted only once that send is done, which
 * ties each direction's all-gather to the other direction's progress.
 */
static void bench_allreduce_once(const struct bench_bufs *bb, struct bench_it *st)
{
	const size_t slice = g_bench_slice, steps = (size_t)g_bench_steps;
	const int in_place = bb->send == bb->recv, use_thread = bench_uses_reducer_thread();
	char *in_mine = (char *)(bb->send + bb->mine_at);
	char *in_other = (char *)(bb->send + bb->other_at);
	char *out_mine = (char *)(bb->recv + bb->mine_at);
	char *out_other = (char *)(bb->recv + bb->other_at);
	char *red_in = (char *)(bb->tmp + bb->mine_at);
	struct bench_chan ch[BENCH_CHANNELS_MAX];
	size_t left = 0, tl_at = 0;
	double t0 = now_s();

	if (use_thread)
		red_start(&g_red, slice);
	for (int c = 0; c < bb->nch; c++) {
		struct bench_chan *k = &ch[c];

		memset(k, 0, sizeof(*k));
		k->off = bb->off[c];
		k->hbytes = bb->len[c];
		k->ns = bb->ns[c];
		k->nu = 2 * k->ns;
		left += 2 * k->nu; /* its sends and receives */
		if (st->t_send) {
			k->t_send = st->t_send + tl_at;
			k->t_recv = st->t_recv + tl_at;
			k->t_red = st->t_red + tl_at / 2;
			tl_at += k->nu;
		}
		if (use_thread)
			red_channel(&g_red, c, out_mine + k->off, in_mine + k->off,
				    red_in + k->off, k->hbytes);
	}

	/* unit j of a channel: slice j % ns of its part */
#define UNIT_OFF(k, j) ((k)->off + ((j) % (k)->ns) * slice)
#define UNIT_LEN(k, j) ((k)->off + (k)->hbytes - UNIT_OFF(k, j) < slice ? \
			(k)->off + (k)->hbytes - UNIT_OFF(k, j) : slice)
	while (left) {
		int progressed = 0;

		for (int c = 0; c < bb->nch; c++) {
			struct bench_chan *k = &ch[c];

			if (use_thread) {
				size_t n = red_done(&g_red, c);

				progressed |= n != k->nred;
				for (; k->nred < n; k->nred++)
					if (k->t_red)
						k->t_red[k->nred] = (now_s() - t0) * 1e3;
			}
			/* sends: reduce-scatter slices, then all-gather slices once reduced */
			while (k->st_n - k->sh < steps && k->st_n < k->nu &&
			       (k->st_n < k->ns || k->st_n - k->ns < k->nred)) {
				size_t n = UNIT_LEN(k, k->st_n);
				char *p = (k->st_n < k->ns ? in_other : out_mine) + UNIT_OFF(k, k->st_n);
				void *req = NULL;

				OKR(n_isend(bb->s[c], p, n, g_rank,
					    k->st_n < k->ns ? bb->s_send[c] : bb->s_recv[c], &req),
				    "isend");
				if (!req)
					break;
				k->sq[k->st_n % steps] = req;
				k->slen[k->st_n % steps] = n;
				k->st_n++;
			}
			/* receives: reduce-scatter slices into tmp, then all-gather
			 * slices into recv (in place: once the send that read that
			 * slice is done) */
			while (k->rt_n - k->rh < steps && k->rt_n < k->nu &&
			       (k->rt_n < k->ns || !in_place || k->rt_n - k->ns < k->sh)) {
				size_t n = UNIT_LEN(k, k->rt_n);
				void *d[1] = { (k->rt_n < k->ns ? red_in : out_other) +
					       UNIT_OFF(k, k->rt_n) };
				void *mh[1] = { k->rt_n < k->ns ? bb->r_tmp[c] : bb->r_recv[c] };
				void *req = NULL;
				int tag = 1 - g_rank;

				OKR(n_irecv(bb->r[c], 1, d, &n, &tag, mh, &req), "irecv");
				if (!req)
					break;
				k->rq[k->rt_n % steps] = req;
				k->rlen[k->rt_n % steps] = n;
				k->rt_n++;
			}
			while (k->sh < k->st_n) {
				int done = 0, sz = -1;

				OKR(n_test(k->sq[k->sh % steps], &done, &sz), "test(send)");
				if (!done)
					break;
				CHECK((size_t)sz == k->slen[k->sh % steps], "bench send size %d", sz);
				if (k->t_send)
					k->t_send[k->sh] = (now_s() - t0) * 1e3;
				k->sh++;
				left--;
				progressed = 1;
			}
			while (k->rh < k->rt_n) {
				int done = 0, sz = -1;

				OKR(n_test(k->rq[k->rh % steps], &done, &sz), "test(recv)");
				if (!done)
					break;
				CHECK((size_t)sz == k->rlen[k->rh % steps],
				      "bench recv size %d want %zu", sz, k->rlen[k->rh % steps]);
				if (k->t_recv)
					k->t_recv[k->rh] = (now_s() - t0) * 1e3;
				if (k->rh < k->ns && g_bench_noop) {
					k->nred++;
				} else if (k->rh < k->ns && use_thread) {
					red_hand_over(&g_red, c);
				} else if (k->rh < k->ns) {
					double t1 = thread_cpu_s();

					reduce_sum_i32((int32_t *)(out_mine + UNIT_OFF(k, k->rh)),
						       (const int32_t *)(in_mine + UNIT_OFF(k, k->rh)),
						       (const int32_t *)(red_in + UNIT_OFF(k, k->rh)),
						       (size_t)sz / 4);
					st->reduce_s += thread_cpu_s() - t1;
					if (k->t_red)
						k->t_red[k->nred] = (now_s() - t0) * 1e3;
					k->nred++;
				}
				k->rh++;
				left--;
				progressed = 1;
			}
		}
		CHECK(now_s() - t0 < g_deadline_s,
		      "bench all-reduce stuck (channel 0: sent %zu/%zu, received %zu/%zu slices, %zu reduced)",
		      ch[0].sh, ch[0].nu, ch[0].rh, ch[0].nu, ch[0].nred);
		if (!progressed)
			poll_pause();
	}
#undef UNIT_OFF
#undef UNIT_LEN
	if (use_thread) {
		/* every all-gather slice went out, so every slice was reduced */
		st->reduce_s += red_cpu_s(&g_red);
	}
}

static int32_t bench_fill(int rank, int it, size_t i)
{
	return (int32_t)(0xa5000000u ^ (uint32_t)((rank + 5) * (int)(i % 997) + it));
}

/* Two-rank ring all-reduce (int32 sum) of g_bench_bytes (rounded down to a
 * multiple of 8), out of place unless --in-place, see bench_allreduce_once.
 * busbw = S * 2(n-1)/n / t (= S / t for two ranks), the figure nccl-tests
 * reports; t is the slower rank's time. Also reported per iteration: this
 * process's CPU time (all threads, the plugin's progress thread included), the
 * CPU time spent reducing and the machine's busy time (sched_busy_s). */
static void bench_allreduce(void)
{
	size_t count = g_bench_bytes / 8 * 2, half = count / 2; /* two equal chunks */
	size_t bytes = count * 4, abytes = (bytes + 4095) & ~(size_t)4095;
	struct bench_bufs bb = { 0 };
	double best = 0, sum = 0, cpu_sum = 0, red_sum = 0, busy_sum = 0, app_sum = 0;
	const int nch = g_bench_channels;

	bb.send = aligned_alloc(4096, abytes);
	bb.recv = g_bench_in_place ? bb.send : aligned_alloc(4096, abytes);
	bb.tmp = aligned_alloc(4096, abytes);
	CHECK(bb.send && bb.recv && bb.tmp && count >= 2 && g_bench_slice >= 4 &&
		      g_bench_slice % 4 == 0 && half >= (size_t)nch,
	      "bench: out of memory, size too small (under one int32 per channel) or slice not a multiple of 4");
	reduce_selftest();
	/* chunk c = [c*half, (c+1)*half); rank k owns (reduces) chunk k */
	bb.mine_at = (size_t)g_rank * half;
	bb.other_at = (size_t)(1 - g_rank) * half;
	bb.hbytes = half * 4;
	bb.nch = nch;
	bench_layout(&bb);
	size_t nunits = bb.nunits;

	if (bench_uses_reducer_thread())
		red_init(&g_red, nunits / 2);
	memset(bb.tmp, 0, bytes);
	for (int c = 0; c < nch; c++) {
		/* with --rails the channels take the devices in turn, driven by
		 * this one thread as NCCL's proxy drives several NICs */
		if (g_rails && !g_fuse)
			g_dev = c % g_rails;
		setup_pair(&bb.s[c], &bb.r[c]);
		/* sends read send (reduce-scatter) and recv (all-gather); receives
		 * land in recv (all-gather) and tmp (reduce-scatter) */
		OKR(n_regmr(bb.s[c], bb.send, bytes, NCCL_PTR_HOST, &bb.s_send[c]), "regMr");
		if (g_bench_in_place)
			bb.s_recv[c] = bb.s_send[c];
		else
			OKR(n_regmr(bb.s[c], bb.recv, bytes, NCCL_PTR_HOST, &bb.s_recv[c]), "regMr");
		OKR(n_regmr(bb.r[c], bb.recv, bytes, NCCL_PTR_HOST, &bb.r_recv[c]), "regMr");
		OKR(n_regmr(bb.r[c], bb.tmp, bytes, NCCL_PTR_HOST, &bb.r_tmp[c]), "regMr");
	}
	g_dev = 0;
	double *tl = g_bench_timeline ? calloc(3 * nunits, sizeof(double)) : NULL;

	CHECK(!g_bench_timeline || tl, "bench: out of memory (timeline)");
	for (int it = -1; it < g_bench_iters; it++) { /* it = -1: warm-up */
		struct bench_it st = { 0 };

		if (tl) {
			memset(tl, 0, 3 * nunits * sizeof(double));
			st.t_send = tl;
			st.t_recv = tl + nunits;
			st.t_red = tl + 2 * nunits;
		}

		for (size_t i = 0; i < count; i++)
			bb.send[i] = (int32_t)((g_rank + 1) * (int)(i % 1000) + it);
		/* out of place, recv starts with a fill of its own per rank and
		 * iteration: stale results cannot pass, and without the reduction
		 * the fill is what the all-gather carries */
		for (size_t i = 0; i < count && !g_bench_in_place; i++)
			bb.recv[i] = bench_fill(g_rank, it, i);
		barrier();
		double t0 = now_s(), c0 = cpu_s(), a0 = thread_cpu_s(), b0 = sched_busy_s();
		bench_allreduce_once(&bb, &st);
		double dt = now_s() - t0, cpu = cpu_s() - c0, app = thread_cpu_s() - a0;
		double b1 = sched_busy_s();
		double busy = b0 >= 0 && b1 >= 0 ? b1 - b0 : -1;
		uint64_t ns = (uint64_t)(dt * 1e9), peer = exchange_u64(ns);
		dt = (double)(ns > peer ? ns : peer) * 1e-9;
		for (size_t i = 0; i < count && !g_bench_noop; i++) {
			int32_t want = (int32_t)(3 * (int)(i % 1000) + 2 * it);
			CHECK(bb.recv[i] == want, "all-reduce element %zu = %d want %d (iteration %d)",
			      i, bb.recv[i], want, it);
		}
		/* no reduction: recv is the owner's (my chunk untouched, the other
		 * one from the all-gather): in place its input, out of place its
		 * fill; tmp holds the peer's copy of my chunk */
		for (size_t i = 0; i < count && g_bench_noop; i++) {
			int owner = i < half ? 0 : 1;
			int32_t want = g_bench_in_place ? (int32_t)((owner + 1) * (int)(i % 1000) + it)
							: bench_fill(owner, it, i);
			int32_t want_tmp = (int32_t)((2 - g_rank) * (int)(i % 1000) + it);

			CHECK(bb.recv[i] == want, "data element %zu = %d want %d (iteration %d)", i,
			      bb.recv[i], want, it);
			CHECK(owner != g_rank || bb.tmp[i] == want_tmp,
			      "received element %zu = %d want %d (iteration %d)", i, bb.tmp[i],
			      want_tmp, it);
		}
		double bw = (double)bytes / dt / 1e9;
		if (it >= 0) {
			sum += bw;
			best = bw > best ? bw : best;
			cpu_sum += cpu;
			red_sum += st.reduce_s;
			busy_sum += busy;
			app_sum += app;
		}
		say("# bench iteration %d: %zu bytes in %.3f s, busbw %.3f GB/s (%.3f Gb/s), cpu: process "
		    "%.3f s, this thread %.3f s (reducing %.3f s), machine busy %.3f s%s\n",
		    it, bytes, dt, bw, bw * 8, cpu, app, st.reduce_s, busy, it < 0 ? " (warm-up)" : "");
		/* per channel: its units' send and receive times, its slices' reductions */
		for (int c = 0, at = 0; tl && it >= 0 && c < nch; c++) {
			size_t nu = 2 * bb.ns[c];

			for (int k = 0; k < 3; k++) {
				const double *v = tl + (size_t)k * nunits + (k == 2 ? at / 2 : at);
				size_t n = k == 2 ? nu / 2 : nu;

				printf("# timeline rank%d %d c%d %s ms:", g_rank, it, c,
				       k == 0 ? "send" : k == 1 ? "recv" : "reduced");
				for (size_t j = 0; j < n; j++)
					printf(" %.1f", v[j]);
				printf("\n");
			}
			at += (int)nu;
		}
		fflush(stdout);
	}
	free(tl);
	barrier();
	for (int c = 0; c < nch; c++) {
		OKR(n_deregmr(bb.s[c], bb.s_send[c]), "deregMr");
		if (!g_bench_in_place)
			OKR(n_deregmr(bb.s[c], bb.s_recv[c]), "deregMr");
		OKR(n_deregmr(bb.r[c], bb.r_recv[c]), "deregMr");
		OKR(n_deregmr(bb.r[c], bb.r_tmp[c]), "deregMr");
		OKR(n_closeSend(bb.s[c]), "closeSend");
		OKR(n_closeRecv(bb.r[c]), "closeRecv");
	}
	if (!g_bench_in_place)
		free(bb.recv);
	free(bb.send);
	free(bb.tmp);
	if (bench_uses_reducer_thread())
		red_fini(&g_red);
	say("# bench {\"op\":\"%s\",\"in_place\":%s,\"dtype\":\"int32\",\"nranks\":2,\"bytes\":%zu,"
	    "\"iters\":%d,\"slice\":%zu,\"steps\":%d,\"channels\":%d,\"reducer\":\"%s\",\"api\":%d,\"busbw_avg_gbps\":%.3f,\"busbw_best_gbps\":%.3f,"
	    "\"cpu_s_avg\":%.4f,\"app_cpu_s_avg\":%.4f,\"reduce_s_avg\":%.4f,\"busy_s_avg\":%.4f}\n",
	    g_bench_noop ? "allreduce-noop" : "allreduce", g_bench_in_place ? "true" : "false",
	    bytes, g_bench_iters, g_bench_slice, g_bench_steps, nch,
	    g_bench_reducer_thread ? "thread" : "inline", g_api,
	    sum / g_bench_iters * 8, best * 8,
	    cpu_sum / g_bench_iters, app_sum / g_bench_iters, red_sum / g_bench_iters,
	    busy_sum < 0 ? -1.0 : busy_sum / g_bench_iters);
	pass(g_bench_noop ? "all-reduce data movement benchmark (reduction skipped), every byte verified"
			  : "all-reduce benchmark, every iteration verified");
}

/* ---- small-message latency (--bench-lat SIZES) ----------------------- */

#define LAT_SIZES_MAX 8
#define LAT_SIZE_MAX (4u << 20)
static size_t g_lat_sizes[LAT_SIZES_MAX];
static int g_lat_nsizes;
static int g_lat_iters = 1000;

/* word w of message `it` of rank `r`: what every latency message carries */
static uint64_t lat_word(int r, int it, size_t w)
{
	return ((uint64_t)(uint32_t)(it * 2 + r) << 32) ^ (uint64_t)(w * 0x9e3779b1u);
}

static void lat_fill(void *p, size_t n, int r, int it)
{
	uint64_t *q = p;

	for (size_t w = 0; w < n / 8; w++)
		q[w] = lat_word(r, it, w);
}

static void lat_check(const void *p, size_t n, int r, int it, const char *what)
{
	const uint64_t *q = p;

	for (size_t w = 0; w < n / 8; w++)
		CHECK(q[w] == lat_word(r, it, w), "%s %d (%zu bytes): word %zu is %#llx, want %#llx",
		      what, it, n, w, (unsigned long long)q[w],
		      (unsigned long long)lat_word(r, it, w));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct lat_sum {
	double min, p50, p99, avg;
};

static struct lat_sum lat_summary(double *v, int n)
{
	struct lat_sum s = { 0 };
	double sum = 0;

	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	for (int i = 0; i < n; i++)
		sum += v[i];
	s.min = v[0];
	s.p50 = v[n / 2];
	s.p99 = v[(size_t)n * 99 / 100];
	s.avg = sum / n;
	return s;
}

/*
 * Ping-pong: rank 0 sends SIZE, rank 1 sends it back as soon as it arrived;
 * one-way latency = round trip / 2, per iteration on rank 0 (from posting
 * the ping to the completion of the pong). Receives are posted two ahead on
 * both sides, as NCCL's proxy keeps its steps posted; every message is
 * checked after the clock stopped (rank 0) or after the answer left (rank
 * 1), so the checks stay out of the measured path.
 */
static void lat_pingpong(void *s, void *r, char *sbuf, char *rbuf, void *smh, void *rmh, size_t n,
			 int warm, double *v)
{
	void *rq[2] = { NULL, NULL };
	const int total = warm + g_lat_iters;

	for (int k = 0; k < 2 && k < total; k++)
		rq[k] = lat_recv(r, rbuf + (size_t)k * n, n, rmh);
	lat_fill(sbuf, n, g_rank, 0);
	for (int it = 0; it < total; it++) {
		char *sp = sbuf + (size_t)(it % 2) * n, *rp = rbuf + (size_t)(it % 2) * n;
		int got;

		if (g_rank == 0) {
			double t0 = now_s();
			void *sq = lat_send(s, sp, n, smh);

			got = lat_wait(rq[it % 2], "test(pong)");
			CHECK(lat_wait(sq, "test(ping send)") == (int)n, "ping send size");
			if (it >= warm)
				v[it - warm] = (now_s() - t0) / 2 * 1e6;
			CHECK(got == (int)n, "pong %d: %d bytes, want %zu", it, got, n);
			lat_check(rp, n, 1, it, "pong");
		} else {
			void *sq;

			got = lat_wait(rq[it % 2], "test(ping)");
			sq = lat_send(s, sp, n, smh);
			CHECK(got == (int)n, "ping %d: %d bytes, want %zu", it, got, n);
			lat_check(rp, n, 0, it, "ping");
			CHECK(lat_wait(sq, "test(pong send)") == (int)n, "pong send size");
		}
		rq[it % 2] = it + 2 < total ? lat_recv(r, rp, n, rmh) : NULL;
		if (it + 1 < total)
			lat_fill(sbuf + (size_t)((it + 1) % 2) * n, n, g_rank, it + 1);
	}
}

/*
 * Two-rank ring all-reduce (int32 sum) of SIZE bytes, NCCL's two steps:
 * reduce-scatter (each rank sends the half the other owns, adds what
 * arrives to its own half) and all-gather (sends its reduced half, receives
 * the other). Iterations run back to back; the receives of the next two
 * are posted ahead (buffers alternate); each rank times its own
 * iterations, and every result is checked outside the clock.
 */
static void lat_allreduce(void *s, void *r, char *in, char *out, char *tmp, void *s_in, void *s_out,
			  void *r_out, void *r_tmp, size_t n, int warm, double *v)
{
	const size_t h = n / 2, mine = (size_t)g_rank * h, other = (size_t)(1 - g_rank) * h;
	const int total = warm + g_lat_iters;
	void *rs[2] = { NULL, NULL }, *ag[2] = { NULL, NULL };

	for (int k = 0; k < 2 && k < total; k++) {
		rs[k] = lat_recv(r, tmp + (size_t)k * h, h, r_tmp);
		ag[k] = lat_recv(r, out + (size_t)k * n + other, h, r_out);
	}
	lat_fill(in, n, g_rank, 0);
	for (int it = 0; it < total; it++) {
		char *ip = in + (size_t)(it % 2) * n, *op = out + (size_t)(it % 2) * n;
		char *tp = tmp + (size_t)(it % 2) * h;
		double t0 = now_s();
		void *sq = lat_send(s, ip + other, h, s_in);

		CHECK(lat_wait(rs[it % 2], "test(reduce-scatter recv)") == (int)h, "reduce-scatter size");
		reduce_sum_i32((int32_t *)(void *)(op + mine), (const int32_t *)(const void *)(ip + mine),
			       (const int32_t *)(const void *)tp, h / 4);
		void *aq = lat_send(s, op + mine, h, s_out);

		CHECK(lat_wait(ag[it % 2], "test(all-gather recv)") == (int)h, "all-gather size");
		CHECK(lat_wait(sq, "test(reduce-scatter send)") == (int)h, "send size");
		CHECK(lat_wait(aq, "test(all-gather send)") == (int)h, "send size");
		if (it >= warm)
			v[it - warm] = (now_s() - t0) * 1e6;
		/* every int32 is the sum of the two ranks' words' halves */
		const int32_t *o = (const int32_t *)(const void *)op;

		for (size_t w = 0; w < n / 8; w++) {
			for (int k = 0; k < 2; k++) {
				uint64_t a = lat_word(0, it, w), b = lat_word(1, it, w);
				int32_t x, y;

				memcpy(&x, (const char *)&a + 4 * k, 4);
				memcpy(&y, (const char *)&b + 4 * k, 4);
				CHECK(o[2 * w + (size_t)k] == (int32_t)((uint32_t)x + (uint32_t)y),
				      "all-reduce %d (%zu bytes): element %zu wrong", it, n, 2 * w + (size_t)k);
			}
		}
		if (it + 2 < total) {
			rs[it % 2] = lat_recv(r, tp, h, r_tmp);
			ag[it % 2] = lat_recv(r, op + other, h, r_out);
		}
		if (it + 1 < total)
			lat_fill(in + (size_t)((it + 1) % 2) * n, n, g_rank, it + 1);
	}
}

/*
 * --bench-lat SIZES: small-message latency over the plugin, per size: a
 * ping-pong (one-way latency, what odl_tb5_cli --test latency measures on
 * the raw device) and a two-rank all-reduce of that size, on one comm pair
 * with registered buffers (NCCL's), g_lat_iters timed iterations after a
 * tenth as many warm-up ones. Prints one "# lat {json}" line per size.
 */
static void bench_latency(void)
{
	size_t big = 0;
	void *s, *r, *s_in, *s_out, *r_out, *r_tmp;

	for (int i = 0; i < g_lat_nsizes; i++)
		big = g_lat_sizes[i] > big ? g_lat_sizes[i] : big;
	const size_t area = (2 * big + 4095) & ~(size_t)4095;
	char *in = aligned_alloc(4096, area), *out = aligned_alloc(4096, area);
	char *tmp = aligned_alloc(4096, area);
	double *v = malloc(sizeof(double) * (size_t)g_lat_iters);
	const int warm = g_lat_iters / 10 > 0 ? g_lat_iters / 10 : 1;

	CHECK(in && out && tmp && v, "bench-lat: out of memory");
	reduce_selftest();
	setup_pair(&s, &r);
	OKR(n_regmr(s, in, area, NCCL_PTR_HOST, &s_in), "regMr");
	OKR(n_regmr(s, out, area, NCCL_PTR_HOST, &s_out), "regMr");
	OKR(n_regmr(r, out, area, NCCL_PTR_HOST, &r_out), "regMr");
	OKR(n_regmr(r, tmp, area, NCCL_PTR_HOST, &r_tmp), "regMr");
	for (int i = 0; i < g_lat_nsizes; i++) {
		const size_t n = g_lat_sizes[i];
		struct lat_sum pp, ar;

		barrier();
		/* ping-pong: rank 0 sends from in, rank 1 answers from in; both
		 * receive into tmp */
		lat_pingpong(s, r, in, tmp, s_in, r_tmp, n, warm, v);
		pp = lat_summary(v, g_lat_iters);
		barrier();
		lat_allreduce(s, r, in, out, tmp, s_in, s_out, r_out, r_tmp, n, warm, v);
		ar = lat_summary(v, g_lat_iters);
		if (g_rank == 0)
			say("# lat {\"size\":%zu,\"iters\":%d,\"api\":%d,"
			    "\"pingpong\":{\"min_us\":%.2f,\"p50_us\":%.2f,\"p99_us\":%.2f,\"avg_us\":%.2f},"
			    "\"allreduce\":{\"min_us\":%.2f,\"p50_us\":%.2f,\"p99_us\":%.2f,\"avg_us\":%.2f}}\n",
			    n, g_lat_iters, g_api, pp.min, pp.p50, pp.p99, pp.avg, ar.min, ar.p50, ar.p99,
			    ar.avg);
	}
	barrier();
	OKR(n_deregmr(s, s_in), "deregMr");
	OKR(n_deregmr(s, s_out), "deregMr");
	OKR(n_deregmr(r, r_out), "deregMr");
	OKR(n_deregmr(r, r_tmp), "deregMr");
	OKR(n_closeSend(s), "closeSend");
	OKR(n_closeRecv(r), "closeRecv");
	free(in);
	free(out);
	free(tmp);
	free(v);
	pass("small-message latency: ping-pong and all-reduce per size, every message checked");
}

/* "8,4096,65536": sizes for --bench-lat (each a multiple of 8, 8 B..4 MiB) */
static int lat_parse_sizes(const char *v)
{
	char *end;

	g_lat_nsizes = 0;
	for (const char *p = v; *p; p = *end ? end + 1 : end) {
		unsigned long long x = strtoull(p, &end, 0);

		if (end == p || (*end && *end != ',') || x < 8 || x % 8 || x > LAT_SIZE_MAX ||
		    g_lat_nsizes == LAT_SIZES_MAX)
			return -1;
		g_lat_sizes[g_lat_nsizes++] = (size_t)x;
	}
	return g_lat_nsizes ? 0 : -1;
}

/*
 * --fail: what an NCCL proxy sees when the link goes away under it.
 *  - The failure must come as ncclSystemError or ncclRemoteError (never a
 *    hang, never ncclInternalError), within the deadline; every request
 *    still in flight finishes or fails when tested; new isend/irecv fail
 *    without a request; closeSend, closeRecv and deregMr still succeed
 *    (NCCL's abort path).
 * kill (spawn mode): both ranks stream 1 MiB messages both ways (8 in
 * flight, every one verified); rank 1 kills itself (SIGKILL) after 16;
 * rank 0 must see the failure.
 * unplug (two VMs, the scenario pulls and replugs the cable), two rounds:
 *  1 "streaming": both stream as above when the cable is pulled;
 *  2 "quiet": 4 MiB each way verified, then each rank has only receives
 *    posted that its peer never matches (nothing else in flight) when the
 *    cable is pulled: the failure must still reach a caller that only tests.
 * Each round ends with "# fault: round N link down handled"; once the scenario
 * has plugged the cable back, the same process must connect again: listen
 * fails (ncclSystemError) until the peer is back, then a new comm pair
 * carries 0 B .. 4 MiB both ways, verified, and the statistics count the
 * revival.
 */
static int g_fail; /* 1 kill, 2 unplug, 3 stop, 4 stop-one */
/* --shared: the device is shared with other rank pairs (run_rank); --pairs */
static int g_shared;
#define PAIRS_MAX 8
static int g_pairs = 1;
/* spawn mode: written to once the plugin has its device (and port) */
static int g_ready_fd = -1;
#define FAIL_INFLIGHT 8
#define FAIL_MSG (1u << 20)

static bool nccl_link_error(ncclResult_t r)
{
	return r == ncclSystemError || r == ncclRemoteError;
}

/* stream both ways until a call fails; its result (what: the call) */
static ncclResult_t fault_stream(void *s, void *r, struct area *sa, struct area *ra, void **sreq,
				 void **rreq, const char **what)
{
	uint32_t rseq[FAIL_INFLIGHT], nsent = 0, nrecv = 0, done = 0;
	ncclResult_t err = ncclSuccess;
	double t_last = now_s();

	while (err == ncclSuccess) {
		for (int i = 0; i < FAIL_INFLIGHT && err == ncclSuccess; i++) {
			int sz = -1, dn = 0;
			char *rp = ra->p + (size_t)i * FAIL_MSG, *sp = sa->p + (size_t)i * FAIL_MSG;

			if (!rreq[i]) {
				void *d[1] = { rp }, *mh[1] = { ra->mh };
				size_t cap = FAIL_MSG;
				int tag = 1 - g_rank;

				err = n_irecv(r, 1, d, &cap, &tag, mh, &rreq[i]);
				*what = "irecv";
				rseq[i] = nrecv++;
			} else {
				err = n_test(rreq[i], &dn, &sz);
				*what = "test(recv)";
				if (err == ncclSuccess && dn) {
					CHECK(sz == (int)FAIL_MSG &&
						      verify(rp, FAIL_MSG, 90000u + rseq[i] * 2 + (uint32_t)(1 - g_rank)),
					      "fault: message %u damaged", rseq[i]);
					rreq[i] = NULL;
					t_last = now_s();
					if (++done == 16 && g_fail == 1 && g_rank == 1) {
						say("# rank1: dies now (SIGKILL)\n");
						fflush(stdout);
						raise(SIGKILL);
					}
				}
			}
			if (err != ncclSuccess)
				break;
			if (!sreq[i]) {
				fill(sp, FAIL_MSG, 90000u + nsent * 2 + (uint32_t)g_rank);
				err = n_isend(s, sp, FAIL_MSG, g_rank, sa->mh, &sreq[i]);
				*what = "isend";
				if (sreq[i])
					nsent++;
			} else {
				err = n_test(sreq[i], &dn, &sz);
				*what = "test(send)";
				if (err == ncclSuccess && dn) {
					sreq[i] = NULL;
					t_last = now_s();
				}
			}
		}
		if (err == ncclSuccess) {
			CHECK(now_s() - t_last < g_deadline_s,
			      "fault: nothing completed and nothing failed for %.0f s (%u messages received)",
			      g_deadline_s, done);
			poll_pause();
		}
	}
	say("# fault: %s returned %d after %u messages received, %.2f s after the last completion\n",
	    *what, (int)err, done, now_s() - t_last);
	return err;
}

/* FAIL_INFLIGHT receives the peer never matches (it sends nothing) */
static void post_unmatched(void *r, struct area *ra, void **rreq)
{
	for (int i = 0; i < FAIL_INFLIGHT; i++) {
		void *d[1] = { ra->p + (size_t)i * FAIL_MSG }, *mh[1] = { ra->mh };
		size_t cap = FAIL_MSG;
		int tag = 1 - g_rank;
		int dn = 0;

		rreq[i] = post_recv(r, 1, d, &cap, &tag, mh);
		OKR(n_test(rreq[i], &dn, NULL), "test(recv)");
		CHECK(!dn, "fault: a receive nobody sends to completed");
	}
}

/* test each unmatched receive once: ncclSuccess (none completed), or the
 * first error */
static ncclResult_t test_unmatched(void **rreq)
{
	ncclResult_t err = ncclSuccess;

	for (int i = 0; i < FAIL_INFLIGHT && err == ncclSuccess; i++) {
		int dn = 0;

		err = n_test(rreq[i], &dn, NULL);
		CHECK(err != ncclSuccess || !dn, "fault: a receive nobody sends to completed");
	}
	return err;
}

/* after the first one failed with ncclRemoteError: so must all of them */
static void expect_all_remote_error(void **rreq)
{
	for (int i = 0; i < FAIL_INFLIGHT; i++) {
		int dn = 0;
		ncclResult_t e = n_test(rreq[i], &dn, NULL);

		CHECK(e == ncclRemoteError, "fault: another receive's test returned %d", (int)e);
	}
}

/* test the unmatched receives until one fails (at most bound s: why) */
static ncclResult_t test_until_failure(void **rreq, double bound, const char *why)
{
	ncclResult_t err = ncclSuccess;
	double t0 = now_s();

	while (err == ncclSuccess) {
		err = test_unmatched(rreq);
		if (err == ncclSuccess) {
			CHECK(now_s() - t0 < bound, "fault: %s, and nothing failed in %.0f s", why, bound);
			poll_pause();
		}
	}
	say("# fault: test(recv) returned %d %.2f s after the receives were posted\n", (int)err,
	    now_s() - t0);
	return err;
}

/* only receives posted, none of which the peer matches: test until one fails */
static ncclResult_t fault_quiet(int round, void *r, struct area *ra, void **rreq, const char **what)
{
	post_unmatched(r, ra, rreq);
	barrier();
	say("# fault: round %d quiet, only receives posted\n", round);
	fflush(stdout);
	*what = "test(recv)";
	return test_until_failure(rreq, 3 * g_deadline_s, "only receives posted when the link went");
}

static void fault_round(int round, bool quiet)
{
	void *s, *r, *sreq[FAIL_INFLIGHT] = { 0 }, *rreq[FAIL_INFLIGHT] = { 0 };
	struct area sa, ra;
	ncclResult_t err;
	const char *what = "";
	double t_err;

	setup_pair(&s, &r);
	area_init(&sa, s, (size_t)FAIL_INFLIGHT * FAIL_MSG);
	area_init(&ra, r, (size_t)FAIL_INFLIGHT * FAIL_MSG);
	barrier();
	if (quiet) {
		static const size_t sz[] = { 4u << 20 };

		xfer_both(s, r, &sa, &ra, sz, 1, 0, 555);
		err = fault_quiet(round, r, &ra, rreq, &what);
	} else {
		say("# fault: round %d streaming\n", round);
		fflush(stdout);
		err = fault_stream(s, r, &sa, &ra, sreq, rreq, &what);
	}
	t_err = now_s();
	CHECK(nccl_link_error(err), "fault: %s returned %d (ncclSystemError or ncclRemoteError expected)",
	      what, (int)err);
	/* every request in flight ends: completed before the failure, or failed */
	for (int i = 0; i < FAIL_INFLIGHT; i++)
		for (int k = 0; k < 2; k++) {
			void *q = k ? sreq[i] : rreq[i];
			int dn = 0;
			ncclResult_t e;

			if (!q)
				continue;
			do {
				e = TIMED(n_test(q, &dn, NULL), "test after the failure");
				CHECK(e == ncclSuccess || nccl_link_error(e), "fault: test returned %d", (int)e);
				CHECK(now_s() - t_err < g_deadline_s, "fault: a request neither completes nor fails");
				if (e == ncclSuccess && !dn)
					poll_pause();
			} while (e == ncclSuccess && !dn);
		}
	{
		void *q = (void *)1, *d[1] = { ra.p }, *mh[1] = { ra.mh };
		size_t cap = 64;
		int tag = 1 - g_rank;
		ncclResult_t e = n_isend(s, sa.p, 64, g_rank, sa.mh, &q);

		CHECK(e != ncclSuccess && q == NULL, "fault: isend after the failure returned %d, request %p",
		      (int)e, q);
		q = (void *)1;
		e = n_irecv(r, 1, d, &cap, &tag, mh, &q);
		CHECK(e != ncclSuccess && q == NULL, "fault: irecv after the failure returned %d, request %p",
		      (int)e, q);
	}
	OKR(n_closeSend(s), "closeSend after the failure");
	OKR(n_closeRecv(r), "closeRecv after the failure");
	area_free(&sa, s);
	area_free(&ra, r);
	pass(quiet ? "link failure with only receives posted: they fail with ncclSystemError/ncclRemoteError, later calls fail, close and deregMr succeed"
		   : "link failure mid-transfer: in-flight requests fail with ncclSystemError/ncclRemoteError, later calls fail, close and deregMr succeed");
}

/* the plugin's fused_degraded count (0 without statistics) */
static uint64_t stats_degraded(void)
{
	const char *path = odl_tb5_rccl_stats_path();
	const struct odl_tb5_rccl_stats *st = path ? stats_map(path) : NULL;
	uint64_t v = 0;

	if (!st)
		return 0;
	if (st->size >= offsetof(struct odl_tb5_rccl_stats, fused_degraded) + 8)
		v = __atomic_load_n(&st->fused_degraded, __ATOMIC_RELAXED);
	munmap((void *)st, sizeof(*st));
	return v;
}

/* listen on device dev and close it again: the plugin's answer */
static ncclResult_t listen_probe(int dev)
{
	unsigned char h[NCCL_NET_HANDLE_MAXSIZE];
	void *l = NULL;
	ncclResult_t e = n_listen(dev, h, &l);

	if (e == ncclSuccess)
		OKR(n_closeListen(l), "closeListen");
	return e;
}

/* new comms, 0 B .. 4 MiB both ways with seed, verified, closed */
static void fault_exchange(uint32_t seed)
{
	static const size_t sz[] = { 0, 1, 4097, 1u << 20, 4u << 20 };
	struct area a2, b2;
	void *s, *r;

	setup_pair(&s, &r);
	area_init(&a2, s, 6u << 20);
	area_init(&b2, r, 6u << 20);
	xfer_both(s, r, &a2, &b2, sz, 5, 0, seed);
	area_free(&a2, s);
	area_free(&b2, r);
	barrier();
	OKR(n_closeSend(s), "closeSend");
	OKR(n_closeRecv(r), "closeRecv");
}

/*
 * After round's failure, with the pulled cable still out (the scenario
 * plugs it back only once both ranks printed "degraded exchange done"): the
 * fused device must still make comms, over the cable it has left, and they
 * must carry 0 B .. 4 MiB both ways, verified; the pulled cable's own device
 * must still refuse a listen (so it really was out), and the statistics
 * must count the listens and the connect made that way.
 */
static void fault_degraded(int round)
{
	uint64_t deg0 = stats_degraded(), deg;
	double t0 = now_s();
	int down, probes = 0;
	ncclResult_t e;

	/*
	 * The comm that failed may have heard of the pull before the pulled
	 * cable's own device did (its driver notices the link going down a
	 * moment later, on a slow machine seconds later): probe until a cable
	 * refuses, for up to 60 s.
	 */
	for (;;) {
		down = 0;
		probes++;
		for (int k = 0; k < g_fuse_n; k++) {
			e = listen_probe(k);
			CHECK(e == ncclSuccess || nccl_link_error(e), "fault: listen on device %d returned %d",
			      k, (int)e);
			down += e != ncclSuccess;
		}
		if (down || now_s() - t0 >= 60)
			break;
		sleep_ms(250);
	}
	CHECK(down == 1, "fault: %d of the fused device's %d cables refuse a listen (1 expected; %d probes in %.1f s)",
	      down, g_fuse_n, probes, now_s() - t0);
	e = listen_probe(g_dev);
	CHECK(e == ncclSuccess, "fault: listen on the fused device with one cable out returned %d", (int)e);
	barrier();
	fault_exchange(888 + (uint32_t)round);
	deg = stats_degraded() - deg0;
	CHECK(!odl_tb5_rccl_stats_path() || deg >= 3,
	      "fault: statistics count %llu listens and connects over fewer cables (3 expected: two listens, a connect)",
	      (unsigned long long)deg);
	say("# fault: round %d degraded exchange done (%llu listens and connects over %d of %d cables)\n",
	    round, (unsigned long long)deg, g_fuse_n - down, g_fuse_n);
	fflush(stdout);
	pass("with a cable of the fused device out, the same process connects over the cables left: new comms carry 0 B .. 4 MiB both ways, verified");
}

/* after round's failure: connect again once the link is back */
static void fault_revive(int round)
{
	const char *path = odl_tb5_rccl_stats_path();
	const struct odl_tb5_rccl_stats *st = path ? stats_map(path) : NULL;
	uint64_t rev0 = st && st->size >= offsetof(struct odl_tb5_rccl_stats, revivals) + 8
				? __atomic_load_n(&st->revivals, __ATOMIC_RELAXED) : 0;
	unsigned char h[NCCL_NET_HANDLE_MAXSIZE];
	void *l = NULL;
	int tries = 0;
	double t0 = now_s();
	bool fused = g_dev == g_fuse_dev;
	uint64_t deg0;
	ncclResult_t e;

	say("# fault: round %d link down handled\n", round);
	fflush(stdout);
	if (fused) {
		fault_degraded(round);
		t0 = now_s();
	}
	/* a fused device listens on the cables it has: wait for each */
	for (int k = fused ? 0 : g_dev; k < (fused ? g_fuse_n : g_dev + 1); k++) {
		while ((e = n_listen(k, h, &l)) != ncclSuccess) {
			CHECK(nccl_link_error(e), "fault: listen on the failed device returned %d", (int)e);
			CHECK(now_s() - t0 < 3 * g_deadline_s, "fault: the link did not come back in %.0f s",
			      3 * g_deadline_s);
			tries++;
			sleep_ms(250);
		}
		OKR(n_closeListen(l), "closeListen");
	}
	deg0 = stats_degraded();
	say("# fault: round %d device usable again after %.1f s (%d listen attempts refused)\n", round,
	    now_s() - t0, tries);
	barrier();
	fault_exchange(777 + (uint32_t)round);
	CHECK(stats_degraded() == deg0,
	      "fault: with every cable back, a listen or connect still went over fewer cables (statistics)");
	if (st) {
		uint64_t rev = __atomic_load_n(&st->revivals, __ATOMIC_RELAXED) - rev0;

		CHECK(rev >= 1, "fault: statistics count %llu revivals", (unsigned long long)rev);
		munmap((void *)st, sizeof(*st));
	}
	say("# fault: round %d reconnected\n", round);
	pass("after the replug the same process connects again: new comms carry 0 B .. 4 MiB both ways, verified");
}

/*
 * The peer process goes away while the link stays up (its driver drops what
 * is sent to the port it held): the plugin's keepalive must fail the comms
 * that wait for it with ncclRemoteError after ODL_TB5_RCCL_PEER_TIMEOUT_MS,
 * and the device must stay usable. Each rank has only unmatched receives
 * posted; then rank 1 stops itself (SIGSTOP, --fail stop: rank 0 kills it
 * once it has seen the failure) or is killed by the scenario (--fail
 * unplug, round 3).
 */
static int g_peer_gone; /* rank 0 goes on alone: no closing barrier */

static long peer_timeout_ms(void)
{
	const char *e = getenv("ODL_TB5_RCCL_PEER_TIMEOUT_MS");

	return e && *e ? atol(e) : 10000;
}

static void fault_peer_gone(int round)
{
	void *s, *r, *rreq[FAIL_INFLIGHT];
	struct area sa, ra;
	ncclResult_t err;
	double bound = 3.0 * (double)peer_timeout_ms() / 1000.0 + g_deadline_s;
	uint64_t peer_pid;

	CHECK(peer_timeout_ms() > 0, "fault: the keepalive is off (ODL_TB5_RCCL_PEER_TIMEOUT_MS=0)");
	setup_pair(&s, &r);
	area_init(&sa, s, FAIL_MSG);
	area_init(&ra, r, (size_t)FAIL_INFLIGHT * FAIL_MSG);
	peer_pid = exchange_u64((uint64_t)getpid());
	post_unmatched(r, &ra, rreq);
	barrier();
	say("# fault: round %d quiet, only receives posted (peer process to go)\n", round);
	fflush(stdout);
	if (g_rank == 1) {
		if (g_fail == 3)
			raise(SIGSTOP); /* rank 0 kills it */
		for (;;)
			sleep_ms(1000); /* the scenario kills it */
	}
	err = test_until_failure(rreq, bound, "the peer process is gone");
	say("# fault: round %d: the keepalive timeout is %ld ms\n", round, peer_timeout_ms());
	CHECK(err == ncclRemoteError, "fault: test returned %d (ncclRemoteError expected: the link is up)",
	      (int)err);
	expect_all_remote_error(rreq);
	{
		void *q = (void *)1;
		ncclResult_t e = n_isend(s, sa.p, 64, g_rank, sa.mh, &q);

		CHECK(e == ncclRemoteError && q == NULL, "fault: isend to the gone peer returned %d, request %p",
		      (int)e, q);
	}
	OKR(n_closeSend(s), "closeSend");
	OKR(n_closeRecv(r), "closeRecv");
	area_free(&sa, s);
	area_free(&ra, r);
	{
		unsigned char h[NCCL_NET_HANDLE_MAXSIZE];
		void *l = NULL;

		OKR(n_listen(g_dev, h, &l), "listen after the peer went (the link is up)");
		OKR(n_closeListen(l), "closeListen");
	}
	if (g_fail == 3)
		kill((pid_t)peer_pid, SIGKILL); /* stopped until now */
	g_peer_gone = 1;
	pass("peer process gone with the link up: waiting requests fail with ncclRemoteError after the keepalive timeout, the device stays usable");
}

/*
 * --fail stop-one (two machines, three processes): this process (rank 0,
 * --oob-listen and --oob-listen2) has comms with two processes of the other
 * machine on two ports there. The one on --oob-listen2 runs --fail stop:
 * it posts unmatched receives, so does this side, then it stops itself
 * (SIGSTOP; the scenario kills it). The one on --oob-listen (rank 1,
 * --fail stop-one) keeps exchanging verified messages with this one all the
 * while. The keepalive works per peer port: the stopped process's comms must
 * fail with ncclRemoteError although messages from the other keep arriving,
 * and the other's comms must go on working.
 */
static const char *g_oob_listen2;
static int tcp_oob(const char *listen_port, const char *connect_to);

static void t_stop_one(void)
{
	static const size_t sz[] = { 1, 4097, 256u << 10 };
	void *s1, *r1, *s2, *r2, *rreq[FAIL_INFLIGHT];
	struct area a1, b1, sa2, ra2;
	double bound = 3.0 * (double)peer_timeout_ms() / 1000.0 + g_deadline_s, t0;
	int oob1 = g_oob, rounds = 0;
	ncclResult_t err = ncclSuccess;

	CHECK(peer_timeout_ms() > 0, "stop-one: the keepalive is off (ODL_TB5_RCCL_PEER_TIMEOUT_MS=0)");
	if (g_rank == 1) {
		/* the peer that stays: exchange for as long as rank 0 says */
		setup_pair(&s1, &r1);
		area_init(&a1, s1, 1u << 20);
		area_init(&b1, r1, 1u << 20);
		while (exchange_u64(0))
			xfer_both(s1, r1, &a1, &b1, sz, 3, 0, 4242u + (uint32_t)rounds++);
		OKR(n_closeSend(s1), "closeSend");
		OKR(n_closeRecv(r1), "closeRecv");
		area_free(&a1, s1);
		area_free(&b1, r1);
		say("# stop-one: %d exchanges with rank 0\n", rounds);
		pass("stop-one: exchanged verified data with rank 0 while its other peer was stopped");
		return;
	}
	CHECK(g_oob_listen2, "stop-one: rank 0 needs --oob-listen2 for the peer that stops");
	g_oob = tcp_oob(g_oob_listen2, NULL);
	barrier(); /* the one run_rank does on that side */
	setup_pair(&s2, &r2);
	area_init(&sa2, s2, FAIL_MSG);
	area_init(&ra2, r2, (size_t)FAIL_INFLIGHT * FAIL_MSG);
	(void)exchange_u64((uint64_t)getpid());
	post_unmatched(r2, &ra2, rreq);
	barrier(); /* that peer stops now */
	g_oob = oob1;
	setup_pair(&s1, &r1);
	area_init(&a1, s1, 1u << 20);
	area_init(&b1, r1, 1u << 20);
	say("# stop-one: one peer stopped, exchanging with the other\n");
	fflush(stdout);
	t0 = now_s();
	while (err == ncclSuccess) {
		CHECK(now_s() - t0 < bound,
		      "stop-one: the stopped peer's receives did not fail in %.0f s (%d exchanges with the other peer kept it looking alive?)",
		      bound, rounds);
		(void)exchange_u64(1);
		xfer_both(s1, r1, &a1, &b1, sz, 3, 0, 4242u + (uint32_t)rounds++);
		err = test_unmatched(rreq);
	}
	say("# stop-one: the stopped peer's receive failed (%d) after %.2f s, %d exchanges with the other peer meanwhile (keepalive timeout %ld ms)\n",
	    (int)err, now_s() - t0, rounds, peer_timeout_ms());
	CHECK(err == ncclRemoteError, "stop-one: test returned %d (ncclRemoteError expected)", (int)err);
	expect_all_remote_error(rreq);
	/* the other peer's comms were not failed with it */
	(void)exchange_u64(1);
	xfer_both(s1, r1, &a1, &b1, sz, 3, 0, 4242u + (uint32_t)rounds++);
	(void)exchange_u64(0);
	OKR(n_closeSend(s2), "closeSend");
	OKR(n_closeRecv(r2), "closeRecv");
	area_free(&sa2, s2);
	area_free(&ra2, r2);
	OKR(n_closeSend(s1), "closeSend");
	OKR(n_closeRecv(r1), "closeRecv");
	area_free(&a1, s1);
	area_free(&b1, r1);
	pass("stop-one: of two peer processes one stopped: its comms failed with ncclRemoteError while the other's kept exchanging verified data");
}

static void t_link_failure(void)
{
	if (g_fail == 4) {
		t_stop_one();
		return;
	}
	if (g_fail == 3) {
		fault_peer_gone(1);
		return;
	}
	fault_round(1, false);
	if (g_fail == 1)
		return; /* the peer is dead */
	fault_revive(1);
	fault_round(2, true);
	fault_revive(2);
	fault_peer_gone(3);
}

/* threads of this process (the plugin's progress threads among them) */
static int task_count(void)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	CHECK(dir, "opendir /proc/self/task: %s", strerror(errno));
	while ((e = readdir(dir)))
		if (e->d_name[0] != '.')
			n++;
	closedir(dir);
	return n;
}

static int g_tasks0; /* before the first init */

/*
 * The thread count once the plugin's threads are gone. pthread_join returns
 * when the thread has left its user code (the kernel clears its tid early in
 * its exit), and /proc/self/task lists it until the kernel has released it a
 * little later: right after the last finalize one more thread is seen now and
 * then (18 of 20000 create/join/count rounds on a 2-core host; a failed CI
 * run). So wait until the count is back, bounded: a thread that never ends
 * still fails this.
 */
static int tasks_settle(int want)
{
	double t0 = now_s();
	int n;

	while ((n = task_count()) != want && now_s() - t0 < 10.0)
		sleep_ms(2);
	return n;
}

/*
 * v11+: contexts, the way NCCL >= 2.28 uses them: init per communicator,
 * listen/connect through the communicator's context, finalize at its end.
 */
static void t_contexts(void)
{
	unsigned char h[NCCL_NET_HANDLE_MAXSIZE];
	ncclNetCommConfig_v11_t cfg = { 5 };
	void *c2 = NULL, *l = NULL, *s = NULL, *keep = NULL;
	int foreign = 0, n = 0, up, left;

	if (g_api < 11)
		return;
	/* a second communicator beside the first, with a traffic class */
	OKR(T11->init(&c2, g_comm_id + 1000, &cfg, logger, NULL), "init(second context)");
	CHECK(c2 && c2 != g_ctx, "second context %p (first %p)", c2, g_ctx);
	OKR(T11->listen(c2, g_dev, h, &l), "listen(second context)");
	OKR(n_closeListen(l), "closeListen");
	/* what is not a live context: an error, and nothing handed out */
	l = s = (void *)1;
	CHECK(T11->listen(NULL, g_dev, h, &l) == ncclInvalidArgument && !l, "listen(NULL context)");
	l = (void *)1;
	CHECK(T11->listen(&foreign, g_dev, h, &l) == ncclInvalidArgument && !l,
	      "listen(foreign context)");
	CHECK(T11->connect(NULL, g_dev, h, &s, NULL) == ncclInvalidArgument && !s,
	      "connect(NULL context)");
	CHECK(T11->finalize(NULL) == ncclInvalidArgument, "finalize(NULL)");
	CHECK(T11->finalize(&foreign) == ncclInvalidArgument, "finalize(foreign context)");
	CHECK(T11->init(NULL, 1, &cfg, logger, NULL) == ncclInvalidArgument, "init(NULL)");
	/* no config: taken as "no traffic class" */
	void *c3 = NULL;
	OKR(T11->init(&c3, g_comm_id + 2000, NULL, logger, NULL), "init(NULL config)");
	CHECK(c3 && c3 != c2 && c3 != g_ctx, "third context %p", c3);
	OKR(T11->finalize(c3), "finalize(third context)");
	OKR(T11->finalize(c2), "finalize(second context)");
	CHECK(T11->finalize(c2) == ncclInvalidArgument, "finalize(second context) twice");
	l = (void *)1;
	CHECK(T11->listen(c2, g_dev, h, &l) == ncclInvalidArgument && !l,
	      "listen(finalized context)");
	/* the first communicator's context still works */
	OKR(n_listen(g_dev, h, &keep), "listen(first context)");
	up = task_count();
	CHECK(up > g_tasks0, "no plugin thread (%d threads, %d before init)", up, g_tasks0);
	/* every context finalized with a connection open: the devices stay
	 * up for it */
	n_finalize_all();
	CHECK(task_count() == up, "threads %d -> %d with a listen comm open", up, task_count());
	OKR(n_closeListen(keep), "closeListen after the last finalize");
	/*
	 * The barriers around each init: on shm the peer process is the link,
	 * so a peer closing its device while this one sets its own up fails
	 * that init ("peer disconnected"), as a cable pulled during init
	 * would. Both ranks close before either opens again, and both are
	 * open before either closes.
	 */
	barrier();
	/* a new communicator, finalized with nothing open: devices closed,
	 * progress threads stopped */
	OKR(n_init(logger), "init after the last finalize");
	barrier();
	n_finalize_all();
	left = tasks_settle(g_tasks0);
	CHECK(left == g_tasks0, "%d threads 10 s after the last finalize (%d before init)", left,
	      g_tasks0);
	CHECK(n_devices(&n) != ncclSuccess, "devices() answered after the last finalize");
	/* and the next init opens them again */
	barrier();
	OKR(n_init(logger), "init after the devices were closed");
	OKR(n_devices(&n), "devices after init");
	up = task_count();
	CHECK(n >= 1 && up > g_tasks0, "init again: %d devices, %d threads", n, up);
	OKR(n_listen(g_dev, h, &l), "listen after init again");
	OKR(n_closeListen(l), "closeListen");
	barrier();
	n_finalize_all();
	left = tasks_settle(g_tasks0);
	CHECK(left == g_tasks0, "%d threads 10 s after the last finalize (%d before init)", left,
	      g_tasks0);
	pass("v11+ contexts: two side by side, bad contexts refused, a finalize with a comm open "
	     "keeps the devices, the last one closes them, init opens them again");
}

/*
 * deregMr with requests still using the registration (NCCL's abort path
 * deregisters before it closes): they fail with ncclInvalidUsage instead of
 * moving data through a freed handle into memory the caller frees next, and
 * their comms fail for the peer too. Rank 0 posts a receive and a send the
 * peer never matches and deregisters their areas; rank 1, with the same
 * requests posted, must see both fail (the peer closed the comms) instead of
 * waiting for ever.
 */
static void t_dereg_inflight(void)
{
	struct area sa, ra;
	void *s, *r, *sreq, *rreq, *d[1];
	size_t cap = 4096;
	int rtag = 0x7001;
	ncclResult_t es, er;

	setup_pair(&s, &r);
	area_init(&sa, s, 64 << 10);
	area_init(&ra, r, 64 << 10);
	d[0] = ra.p;
	rreq = post_recv(r, 1, d, &cap, &rtag, &ra.mh);
	fill(sa.p, 4096, 7002);
	sreq = post_send(s, sa.p, 4096, 0x7002, sa.mh); /* the peer waits for 0x7001 */
	barrier(); /* both posted: each side's CTS is on its way */
	if (g_rank == 0) {
		OKR(n_deregmr(s, sa.mh), "deregMr(send area, send in flight)");
		OKR(n_deregmr(r, ra.mh), "deregMr(receive area, receive in flight)");
	}
	es = wait_req(sreq, NULL);
	er = wait_req(rreq, NULL);
	if (g_rank == 0) {
		CHECK(es == ncclInvalidUsage, "send using a deregistered area: test() returned %d",
		      (int)es);
		CHECK(er == ncclInvalidUsage, "receive into a deregistered area: test() returned %d",
		      (int)er);
		memset(sa.p, 0xee, sa.n); /* the caller's to reuse now */
		memset(ra.p, 0xee, ra.n);
		free(sa.p);
		free(ra.p);
	} else {
		CHECK(es != ncclSuccess && er != ncclSuccess,
		      "the peer's comms failed by its deregMr: send %d, receive %d", (int)es, (int)er);
		area_free(&sa, s);
		area_free(&ra, r);
	}
	barrier();
	OKR(n_closeSend(s), "closeSend");
	OKR(n_closeRecv(r), "closeRecv");
	barrier();
	pass(g_rank == 0 ? "deregMr with a send and a receive in flight: both fail (ncclInvalidUsage), "
			   "nothing moves through the freed registration"
			 : "deregMr with a send and a receive in flight: the peer's requests fail too");
}

/*
 * v11+: a registration kept past the finalize that closed its device (NCCL
 * misuse, but it must not corrupt anything): after init opens the device
 * anew, the same library ids name the new registrations. The stale handle
 * must move its own memory (staged), and its deregMr must leave the new
 * registrations alone.
 */
static void t_stale_mr(void)
{
	static const size_t sz[3] = { 4096, 65536, 100000 };
	struct area old_s, old_r, new_s, new_r;
	void *s, *r;

	if (g_api < 11)
		return;
	barrier();
	OKR(n_init(logger), "init (stale registration)");
	barrier();
	setup_pair(&s, &r);
	area_init(&old_s, s, 256 << 10);
	area_init(&old_r, r, 256 << 10);
	xfer_both(s, r, &old_s, &old_r, sz, 3, 0, 6100);
	barrier();
	OKR(n_closeSend(s), "closeSend");
	OKR(n_closeRecv(r), "closeRecv");
	barrier();
	n_finalize_all(); /* nothing open: the devices close, registrations kept */
	barrier();
	OKR(n_init(logger), "init again (stale registration)");
	barrier();
	setup_pair(&s, &r);
	area_init(&new_s, s, 256 << 10);
	area_init(&new_r, r, 256 << 10);
	memset(new_r.p, 0xa5, new_r.n);
	/* the stale handles: their own memory, not the new registrations' */
	xfer_both(s, r, &old_s, &old_r, sz, 3, 0, 6200);
	for (size_t i = 0; i < new_r.n; i++)
		CHECK((unsigned char)new_r.p[i] == 0xa5,
		      "a receive into a stale registration wrote into a new one (byte %zu)", i);
	barrier();
	area_free(&old_s, s);
	area_free(&old_r, r);
	barrier();
	/* their deregMr freed nothing of the new open */
	xfer_both(s, r, &new_s, &new_r, sz, 3, 0, 6300);
	barrier();
	area_free(&new_s, s);
	area_free(&new_r, r);
	OKR(n_closeSend(s), "closeSend");
	OKR(n_closeRecv(r), "closeRecv");
	barrier();
	n_finalize_all();
	pass("v11+ a registration kept past its device's close: moves its own memory after init "
	     "opens the device anew, its deregMr leaves the new registrations alone");
}

static const char *g_oob_listen, *g_oob_connect; /* rank mode: TCP out-of-band */

static void run_rank(int want_api)
{
	g_lib = load_plugin();
	pick_table(want_api);
	t_table();
	g_tasks0 = task_count();
	int ndev = t_init_props();
	const char *d = getenv("NETCONF_DEV");

	if (g_ready_fd >= 0) {
		if (write(g_ready_fd, "r", 1) != 1)
			FAILF("cannot tell the parent this rank is ready");
		close(g_ready_fd);
		g_ready_fd = -1;
	}
	if (g_oob < 0)
		g_oob = tcp_oob(g_oob_listen, g_oob_connect);
	g_dev = d ? atoi(d) : 0;
	if (g_fuse) { /* everything below runs over the fused device */
		ndev = t_fuse(ndev);
		g_dev = g_fuse_dev;
	}
	if (g_fail) {
		barrier();
		t_link_failure();
		n_finalize_all();
		return;
	}
	if (g_lat_nsizes) {
		barrier();
		bench_latency();
		barrier();
		n_finalize_all();
		return;
	}
	if (g_bench_bytes) {
		CHECK(!g_rails || ndev == g_rails + g_fuse, "--rails %d: the plugin has %d device(s)",
		      g_rails, ndev);
		barrier();
		bench_allreduce();
		barrier();
		n_finalize_all();
		return;
	}
	if (g_rails && !g_fuse) {
		barrier();
		t_rails(ndev);
		barrier();
		n_finalize_all();
		return;
	}
	if (g_fuse) {
		t_fuse_mixed();
		t_fuse_two_connects();
	}
	/* g_shared: other rank pairs use the device at the same time; the
	 * sequence without what counts or limits machine-wide (idle
	 * wake-ups, saturation, the DMA-buf exporter, many comms) */
	t_bad_calls(ndev);
	barrier();
	t_handshake();
	t_port_mismatch();
	void *s, *r;
	setup_pair(&s, &r);
	if (!g_shared) {
		t_idle();
		t_fork_exit();
		t_quiet_wait(s, r);
	}
	t_sizes(s, r);
	barrier();
	t_grouped(s, r);
	barrier();
	if (g_api >= 10) {
		t_profiler(s, r);
		barrier();
	}
	if (!g_shared) {
		t_saturation(s, r);
		barrier();
		t_truncation_flush_reg(s, r);
		barrier();
	}
	if (g_dmabuf && !g_shared) {
		t_dmabuf(s, r);
		barrier();
	}
	OKR(n_closeSend(s), "closeSend");
	OKR(n_closeRecv(r), "closeRecv");
	barrier();
	if (!g_shared) {
		t_multi_comm();
		t_close_orders();
		if (!g_fuse)
			t_dereg_inflight();
	}
	t_collectives();
	barrier();
	t_contexts();
	if (!g_shared && !g_fuse)
		t_stale_mr();
	say("# rank%d: all tests passed (api v%d%s)\n", g_rank, g_api, g_shared ? ", device shared" : "");
}

/* ------------------------------------------------------------------ */
/* load-only mode: the "fresh process" test */

static int load_only(int want_api)
{
	g_rank = 0;
	g_lib = load_plugin();
	pick_table(want_api);
	t_table();
	double t0 = now_s();
	ncclResult_t r = n_init(logger);
	CHECK(now_s() - t0 < 5.0, "init took %.1f s", now_s() - t0);
	if (r == ncclSuccess) {
		int n = 0;
		OKR(n_devices(&n), "devices");
		CHECK(n > 0, "init succeeded with %d devices", n);
		say("# init ok, %d device(s)\n", n);
		n_finalize_all();
	} else {
		CHECK(r == ncclSystemError || r == ncclInternalError,
		      "init failed with unexpected code %d", r);
		say("# init returned %d (no device on this host): NCCL would fall back\n", r);
	}
	pass("loaded by the loader rules with only NCCL_NET_PLUGIN set; init returned cleanly");
	say("1..%d\n", g_tapn);
	return 0;
}

/* ------------------------------------------------------------------ */

static int tcp_oob(const char *listen_port, const char *connect_to)
{
	int fd = -1, one = 1;

	if (listen_port) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(listen_port)) };
		int l = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (l < 0 || bind(l, (void *)&a, sizeof(a)) || listen(l, 1))
			FAILF("oob listen: %s", strerror(errno));
		fd = accept(l, NULL, NULL);
		close(l);
	} else {
		char host[256], *colon;
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
		snprintf(host, sizeof(host), "%s", connect_to);
		colon = strrchr(host, ':');
		CHECK(colon, "--oob-connect HOST:PORT");
		*colon = 0;
		struct sockaddr_in sin = { .sin_family = AF_INET,
					   .sin_port = htons((uint16_t)atoi(colon + 1)) };
		struct addrinfo numeric = { .ai_family = AF_INET, .ai_addr = (void *)&sin,
					    .ai_addrlen = sizeof(sin) };
		if (inet_pton(AF_INET, host, &sin.sin_addr) == 1) {
			ai = &numeric; /* no resolver: the static guest build has no NSS */
		} else {
#ifdef NETCONF_STATIC
			(void)hints;
			FAILF("--oob-connect needs a numeric IPv4 address in the static build");
#else
			CHECK(getaddrinfo(host, colon + 1, &hints, &ai) == 0, "resolve %s", host);
#endif
		}
		/* the peer may start later: retry for up to a minute */
		for (int k = 0; k < 600; k++) {
			fd = socket(ai->ai_family, SOCK_STREAM, 0);
			if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
				break;
			close(fd);
			fd = -1;
			sleep_ms(100);
		}
#ifndef NETCONF_STATIC
		if (ai != &numeric)
			freeaddrinfo(ai);
#endif
	}
	CHECK(fd >= 0, "oob connection failed");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int main(int argc, char **argv)
{
	int rank = -1, want_api = 0, timeout = 300, no_shm = 0, loadonly = 0;
	const char *rank1_env = NULL; /* --rank1-env VAR=VALUE: rank 1's alone */
	const char *olisten = NULL, *oconnect = NULL;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--rank") && v)
			rank = atoi(v), i++;
		else if (!strcmp(a, "--api") && v)
			want_api = atoi(v), i++;
		else if (!strcmp(a, "--flavour") && v)
			g_flavour = v, i++;
		else if (!strcmp(a, "--oob-listen") && v)
			olisten = v, i++;
		else if (!strcmp(a, "--oob-connect") && v)
			oconnect = v, i++;
		else if (!strcmp(a, "--timeout") && v)
			timeout = atoi(v), i++;
		else if (!strcmp(a, "--max-size") && v)
			g_max = (size_t)strtoull(v, NULL, 0), i++;
		else if (!strcmp(a, "--deadline") && v)
			g_deadline_s = atof(v), i++;
		else if (!strcmp(a, "--call-bound") && v)
			g_call_bound_s = atof(v), i++;
		else if (!strcmp(a, "--bench") && v)
			g_bench_bytes = (size_t)strtoull(v, NULL, 0), g_prof_validate = false, i++;
		else if (!strcmp(a, "--bench-lat") && v) {
			if (lat_parse_sizes(v)) {
				fprintf(stderr, "--bench-lat: sizes separated by commas, each a multiple of 8 from 8 to %u, at most %d\n",
					LAT_SIZE_MAX, LAT_SIZES_MAX);
				return 2;
			}
			g_prof_validate = false, i++;
		} else if (!strcmp(a, "--lat-iters") && v && atoi(v) >= 10 && atoi(v) <= 1000000)
			g_lat_iters = atoi(v), i++;
		else if (!strcmp(a, "--iters") && v)
			g_bench_iters = atoi(v), i++;
		else if (!strcmp(a, "--op") && v && (!strcmp(v, "sum") || !strcmp(v, "none")))
			g_bench_noop = !strcmp(v, "none"), i++;
		else if (!strcmp(a, "--steps") && v && atoi(v) >= 1 && atoi(v) <= BENCH_STEPS_MAX)
			g_bench_steps = atoi(v), i++;
		else if (!strcmp(a, "--channels") && v && atoi(v) >= 1 &&
			 atoi(v) <= BENCH_CHANNELS_MAX)
			g_bench_channels = atoi(v), i++;
		else if (!strcmp(a, "--reducer") && v && (!strcmp(v, "inline") || !strcmp(v, "thread")))
			g_bench_reducer_thread = !strcmp(v, "thread"), i++;
		else if (!strcmp(a, "--timeline"))
			g_bench_timeline = 1;
		else if (!strcmp(a, "--in-place"))
			g_bench_in_place = 1;
		else if (!strcmp(a, "--slice") && v)
			g_bench_slice = (size_t)strtoull(v, NULL, 0), i++;
		else if (!strcmp(a, "--quick"))
			g_max = 4u << 20;
		else if (!strcmp(a, "--no-shm"))
			no_shm = 1;
		else if (!strcmp(a, "--rank1-env") && v && strchr(v, '=') && strchr(v, '=') != v && strlen(v) < 256)
			rank1_env = v, i++;
		else if (!strcmp(a, "--dmabuf"))
			g_dmabuf = 1;
		else if (!strcmp(a, "--fail") && v &&
			 (!strcmp(v, "kill") || !strcmp(v, "unplug") || !strcmp(v, "stop") ||
			  !strcmp(v, "stop-one")))
			g_fail = !strcmp(v, "kill") ? 1 : !strcmp(v, "unplug") ? 2 : !strcmp(v, "stop") ? 3 : 4,
			i++;
		else if (!strcmp(a, "--oob-listen2") && v)
			g_oob_listen2 = v, i++;
		else if (!strcmp(a, "--load-only"))
			loadonly = 1;
		else if (!strcmp(a, "--shared"))
			g_shared = 1;
		else if (!strcmp(a, "--fuse"))
			g_fuse = 1;
		else if (!strcmp(a, "--rails") && v && atoi(v) >= 2 && atoi(v) <= RAILS_MAX)
			g_rails = atoi(v), i++;
		else if (!strcmp(a, "--pairs") && v && atoi(v) >= 1 && atoi(v) <= PAIRS_MAX)
			g_pairs = atoi(v), g_shared = g_pairs > 1, i++;
		else {
			fprintf(stderr, "usage: see the comment at the top of %s\n", __FILE__);
			return 2;
		}
	}
	if (strcmp(g_flavour, "nccl") && strcmp(g_flavour, "rccl")) {
		fprintf(stderr, "--flavour nccl|rccl\n");
		return 2;
	}
	if (!(g_call_bound_s > 0.0 && g_call_bound_s <= 60.0)) {
		fprintf(stderr, "--call-bound SEC: more than 0, at most 60\n");
		return 2;
	}
	int stall = handshake_stall_ms();
	if (stall > g_deadline_s * 500.0) {
		fprintf(stderr,
			"--call-bound %g: the delayed handshakes stall %d ms, more than half the "
			"--deadline (%g s) the other side polls for\n",
			g_call_bound_s, stall, g_deadline_s);
		return 2;
	}
	if (g_fuse && !g_rails) {
		fprintf(stderr, "--fuse fuses the --rails devices: give --rails N\n");
		return 2;
	}
	if (loadonly)
		return load_only(want_api);
	if (rank >= 0) {
		g_rank = rank;
		/* the out-of-band connection is made by run_rank once the plugin
		 * has its device (and port): processes started one after the
		 * other take their ports in that order */
		g_oob_listen = rank == 0 ? (olisten ? olisten : "29500") : NULL;
		g_oob_connect = rank == 0 ? NULL : (oconnect ? oconnect : "127.0.0.1:29500");
		run_rank(want_api);
		if (!g_peer_gone)
			barrier();
		say("1..%d\n", g_tapn);
		return 0;
	}
	/* spawn mode: two ranks on this host over the shm backend; --pairs N:
	 * N such pairs on one shm device at once, started one pair after the
	 * other so that pair k's processes get port 78 + k on both sides */
	char shm[64];
	pid_t pid[2 * PAIRS_MAX];
	int status[2 * PAIRS_MAX], left = 2 * g_pairs;
	const char *fixed_port = getenv("ODL_TB5_RCCL_PORT");

	if (g_pairs > 1 && (g_fail || g_bench_bytes || g_lat_nsizes || g_dmabuf || no_shm || g_rails)) {
		fprintf(stderr, "--pairs runs the shared-device sequence over shm only\n");
		return 2;
	}
	if (g_rails && (g_fail || g_lat_nsizes || no_shm)) {
		fprintf(stderr, "--rails in spawn mode: N shm devices, the rails test or --bench\n");
		return 2;
	}
	snprintf(shm, sizeof(shm), "netconf%d", (int)getpid());
	for (int k = 0; k < g_pairs; k++) {
		int sv[2], ready[2];

		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || pipe(ready))
			return perror("socketpair/pipe"), 1;
		for (int r = 0; r < 2; r++) {
			pid[2 * k + r] = fork();
			if (pid[2 * k + r] == 0) {
				char spec[96], port[16];

				g_rank = r;
				g_oob = sv[r];
				if (r == 1 && rank1_env) {
					char kv[256];

					snprintf(kv, sizeof(kv), "%s", rank1_env);
					*strchr(kv, '=') = 0;
					setenv(kv, kv + strlen(kv) + 1, 1);
				}
				close(sv[1 - r]);
				close(ready[0]);
				g_ready_fd = ready[1];
				if (g_rails) {
					/* N shm devices, rank 1's listed the other way
					 * round: its device c reaches rank 0's N-1-c */
					char list[RAILS_MAX * 80] = "";
					for (int c = 0; c < g_rails; c++) {
						int e = r == 0 ? c : g_rails - 1 - c;
						snprintf(spec, sizeof(spec), "%sshm:%sr%d:%c", c ? "," : "",
							 shm, e, r == 0 ? 'a' : 'b');
						strcat(list, spec);
					}
					setenv("ODL_TB5_RCCL_DEVICES", list, 1);
				} else if (!no_shm) {
					snprintf(spec, sizeof(spec), "shm:%s:%c", shm, r == 0 ? 'a' : 'b');
					setenv("ODL_TB5_DEVICE", spec, 1);
				}
				if (g_pairs > 1 && !fixed_port) {
					snprintf(port, sizeof(port), "%d", 78 + k);
					setenv("NETCONF_EXPECT_PORT", port, 1);
				}
				/* one TAP stream: rank 0's of the first pair */
				g_pass_as_comment = r == 1 || k > 0;
				run_rank(want_api);
				if (g_fail != 1 && !g_peer_gone) /* --fail kill/stop: the peer is dead */
					barrier();
				if (r == 0 && k == 0)
					say("1..%d\n", g_tapn);
				fflush(stdout);
				exit(0); /* runs the plugin's destructor like a real process exit */
			}
		}
		close(sv[0]);
		close(sv[1]);
		close(ready[1]);
		/* both ranks of this pair have their ports (EOF: one died) */
		for (int got = 0; got < 2;) {
			char c;
			ssize_t n = read(ready[0], &c, 1);

			if (n == 1)
				got++;
			else if (n == 0 || errno != EINTR)
				break;
		}
		close(ready[0]);
	}
	for (int i = 0; i < 2 * g_pairs; i++)
		status[i] = -1;
	double t0 = now_s();
	while (left) {
		for (int i = 0; i < 2 * g_pairs; i++) {
			if (status[i] != -1)
				continue;
			int st;
			pid_t p = waitpid(pid[i], &st, WNOHANG);
			if (p == pid[i]) {
				status[i] = st;
				left--;
			}
		}
		if (left && now_s() - t0 > timeout) {
			say("not ok - timeout after %d s, killing ranks\n", timeout);
			for (int i = 0; i < 2 * g_pairs; i++)
				if (status[i] == -1)
					kill(pid[i], SIGKILL);
			timeout = 1 << 30;
		}
		if (left)
			sleep_ms(20);
	}
	int ok = 1;
	for (int i = 0; i < 2 * g_pairs; i++) {
		int r = i % 2;

		if ((g_fail == 1 || g_fail == 3) && r == 1) {
			/* --fail kill/stop: rank 1 must have died by SIGKILL */
			if (!WIFSIGNALED(status[i]) || WTERMSIG(status[i]) != SIGKILL) {
				ok = 0;
				say("# rank1 was to die by SIGKILL (status %#x)\n", status[i]);
			}
			continue;
		}
		if (!WIFEXITED(status[i]) || WEXITSTATUS(status[i]) != 0) {
			ok = 0;
			say("# pair %d rank%d exited with %s %d\n", i / 2, r,
			    WIFEXITED(status[i]) ? "status" : "signal",
			    WIFEXITED(status[i]) ? WEXITSTATUS(status[i]) : WTERMSIG(status[i]));
		}
	}
	say("# netconf: %s\n", ok ? "PASS" : "FAIL");
	return ok ? 0 : 1;
}
