// SPDX-License-Identifier: MIT
/*
 * OdinLink RCCL/NCCL net plugin over libodl_tb5.
 *
 * One plugin "device" per libodl_tb5 endpoint (one per connected peer: a
 * kernel /dev/odl_tb5_N, or a shm device named by ODL_TB5_DEVICE). All
 * comms of this process on that device are multiplexed over one endpoint
 * (port ODL_TB5_RCCL_PORT, else the first free one from 78: one per process
 * of the machine); each comm sends to its peer process's port (from the
 * handle, or the CONN's sport) with a small wire protocol (see
 * docs/net-plugin.md):
 *
 *   CONN/ACK/REJ   connection set-up (listen id + nonce from the handle)
 *   CTS            the receiver posted a (grouped) receive: seq, n, tags, sizes
 *   DATA           a chunk of one send, addressed (recv comm, seq, idx, off)
 *   DERR           the matching send was larger than the receive
 *   CLOSE          a comm went away
 *
 * Data moves only after the receiver's CTS, so every DATA chunk has a
 * destination buffer; sends are matched to CTS entries in posting order by
 * tag (FIFO per comm).
 *
 * Zero copy: regMr registers NCCL's buffer with the library
 * (odl_tb5_buf_register_flags, REG_DIRECT: the driver pins it). For a
 * receive into such a buffer the plugin posts a keyed library receive right
 * into it and puts the key in the CTS entry; a sender whose buffer is
 * registered too sends the whole message with that key from its buffer: the
 * driver copies between NCCL's pages and the DMA frames, the plugin copies
 * nothing. Otherwise (unregistered memory, a message larger than the
 * library's maximum, 0 bytes, a send larger than the receive, a peer that
 * ignores keys) the message goes the staged way: DATA chunks through
 * buffers allocated from the library (bounce buffers: one copy on each
 * side), and the receiver withdraws its keyed receive (odl_tb5_cancel_recv)
 * when the first DATA or DERR for that entry arrives.
 *
 * Locking: dev->mu protects all state of a device and its comms; dev->poll_mu
 * serialises "reap completions + process them" so that messages are handled
 * in channel order. Order: poll_mu before mu. A progress thread per device
 * sleeps in odl_tb5_poll(); a test() that would wait reaps the device itself
 * (caller_reap), and the progress thread stands aside meanwhile. A caller
 * that reaps several devices holds their poll_mu at once, but only ever
 * takes them with trylock, so it never waits for one while holding another.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/dma-buf.h>

#include "odl_nccl_net.h"
#include "odl_relax.h"
#include "odl_tb5/odl_tb5.h"
#include "odl_tb5_rccl_profiler.h"
#include "odl_tb5_rccl_stats.h"

#define EXPORT __attribute__((visibility("default")))

#define PLUGIN_NAME "odl_tb5"
#define MAX_DEVS 16
#define MAX_RECVS 8
#define RECV_REQS NCCL_NET_MAX_REQUESTS
#define SEND_REQS (NCCL_NET_MAX_REQUESTS * MAX_RECVS)
#define CTS_RING 64
/* connects waiting for accept() on one listen comm; NCCL makes one per
 * handle, so more is a broken or hostile peer (refused) */
#define PEND_MAX 64
/* answers to the peer (REJ, PONG) queued at once; a peer asking faster
 * than the link takes them gets no more */
#define ANSWERS_MAX 64
#define MAX_COMMS 1024
#define DEFAULT_PORT 78 /* 'N': keeps clear of odl_tb5_cli's default port 1 */
/* without ODL_TB5_RCCL_PORT a process takes the first free port of
 * DEFAULT_PORT .. DEFAULT_PORT + AUTO_PORTS - 1 (one per rank of a machine) */
#define AUTO_PORTS 64
#define DEFAULT_CHUNK (256u << 10)
#define DEFAULT_NTX 16
#define DEFAULT_NRX 32
#define DEFAULT_TEST_WAIT_US 1000
/* ODL_TB5_RCCL_BUSY_POLL_US unset: this long where the process may run on
 * at least BUSY_POLL_AUTO_CPUS CPUs, else 0 (busy_poll_auto) */
#define BUSY_POLL_AUTO_US 50
#define BUSY_POLL_AUTO_CPUS 4
#define BUSY_POLL_MAX_US 10000
#define COMP_BATCH 32 /* completions taken from the library at a time */
#define KTAB 512 /* keyed receives / zero-copy sends in flight per device */
#define KC_RX (1ull << 40) /* library cookie: keyed receive, table slot below */
#define KC_TX (1ull << 41) /* library cookie: zero-copy send */
#define KC_SLOT 0xffffull

#define COMM_MAGIC 0x4f444c43u /* "ODLC" */
#define REQ_MAGIC 0x4f444c52u  /* "ODLR" */
#define MR_MAGIC 0x4f444c4du   /* "ODLM" */
#define HANDLE_MAGIC 0x354254444c4f4e48ULL
#define HANDLE_VERSION 1u
#define WIRE_MAGIC 0x4f35u

/* ------------------------------------------------------------------ */
/* logging and stats */

static ncclDebugLogger_t g_log;
static int g_debug_stderr = -1;

#define LOG(lvl, fmt, ...) plog(lvl, __func__, __LINE__, fmt, ##__VA_ARGS__)
#define WARN(fmt, ...) LOG(NCCL_LOG_WARN, fmt, ##__VA_ARGS__)
#define INFO(fmt, ...) LOG(NCCL_LOG_INFO, fmt, ##__VA_ARGS__)

__attribute__((format(printf, 4, 5))) static void plog(ncclDebugLogLevel lvl, const char *fn,
							int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (g_log) {
		g_log(lvl, NCCL_NET | NCCL_INIT, fn, line, "NET/" PLUGIN_NAME ": %s", msg);
		return;
	}
	if (g_debug_stderr < 0) {
		const char *e = getenv("ODL_TB5_RCCL_DEBUG");
		g_debug_stderr = e && *e && strcmp(e, "0") != 0;
	}
	if (g_debug_stderr)
		fprintf(stderr, "[%d] NET/" PLUGIN_NAME " %s: %s\n", (int)getpid(),
			lvl == NCCL_LOG_WARN ? "WARN" : "INFO", msg);
}

static struct odl_tb5_rccl_stats g_stats_dummy;
static struct odl_tb5_rccl_stats *g_stats = &g_stats_dummy;
static bool g_stats_mapped;
static int g_stats_fd = -1;  /* the file, while mapped: holds this process's slot */
static bool g_stats_slot;    /* a liveness slot is locked through g_stats_fd */
static pid_t g_stats_pid;    /* the process that took it (a forked child shares the lock) */

#define STAT_ADD(f, v) __atomic_fetch_add(&g_stats->f, (uint64_t)(v), __ATOMIC_RELAXED)

static uint64_t now_ns(int clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* now_ns's inverse: a time (or a span) in ns as a timespec */
static struct timespec ns_ts(uint64_t ns)
{
	return (struct timespec){ (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
}

static ncclResult_t fail(ncclResult_t r)
{
	STAT_ADD(errors, 1);
	if (r == ncclInternalError || r == ncclInvalidArgument)
		STAT_ADD(err_bad_args, 1);
	else if (r == ncclSystemError || r == ncclRemoteError)
		STAT_ADD(err_link, 1);
	return r;
}

static void mkdir_p(const char *path)
{
	char tmp[512];
	size_t n = strlen(path);

	if (n >= sizeof(tmp))
		return;
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p == '/') {
			*p = 0;
			mkdir(tmp, 0755);
			*p = '/';
		}
	}
}

/*
 * procs_attached = the processes holding a liveness lock (this one's own,
 * taken through fd, is not seen through fd: added). The file's flock held.
 */
static void stats_count(int fd)
{
	int n = odl_tb5_rccl_stats_live(fd);

	if (n >= 0)
		__atomic_store_n(&g_stats->procs_attached, (uint32_t)n + (g_stats_slot ? 1 : 0),
				 __ATOMIC_RELAXED);
}

static void stats_open(void)
{
	const char *path = odl_tb5_rccl_stats_path();
	struct odl_tb5_rccl_stats *s;
	struct stat st;
	int fd;

	if (g_stats_mapped || !path)
		return;
	mkdir_p(path);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		INFO("statistics file %s: %s (statistics not published)", path, strerror(errno));
		return;
	}
	if (flock(fd, LOCK_EX) != 0 || fstat(fd, &st) != 0)
		goto out;
	if ((size_t)st.st_size < sizeof(*s) && ftruncate(fd, sizeof(*s)) != 0)
		goto out;
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s == MAP_FAILED)
		goto out;
	if (s->magic != ODL_TB5_RCCL_STATS_MAGIC || s->version != ODL_TB5_RCCL_STATS_VERSION ||
	    s->size < sizeof(*s)) {
		memset(s, 0, sizeof(*s));
		s->version = ODL_TB5_RCCL_STATS_VERSION;
		s->size = sizeof(*s);
		s->created_ns = now_ns(CLOCK_REALTIME);
		__atomic_store_n(&s->magic, ODL_TB5_RCCL_STATS_MAGIC, __ATOMIC_RELEASE);
	}
	g_stats = s;
	g_stats_mapped = true;
	/* this process's liveness lock: the first free slot */
	for (int i = 0; i < ODL_TB5_RCCL_STATS_SLOTS && !g_stats_slot; i++) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
				    .l_start = ODL_TB5_RCCL_STATS_SLOT_OFF + i, .l_len = 1 };

		if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
			g_stats_slot = true;
	}
	stats_count(fd);
	__atomic_store_n(&s->last_init_ns, now_ns(CLOCK_REALTIME), __ATOMIC_RELAXED);
	__atomic_store_n(&s->last_pid, (uint32_t)getpid(), __ATOMIC_RELAXED);
	STAT_ADD(inits, 1);
	INFO("statistics published in %s", path);
	flock(fd, LOCK_UN);
	g_stats_fd = fd; /* holds the lock until stats_close */
	g_stats_pid = getpid();
	return;
out:
	flock(fd, LOCK_UN);
	close(fd);
}

static void stats_close(void)
{
	if (!g_stats_mapped)
		return;
	/* a forked child leaves the slot it shares (one open file
	 * description) to its parent */
	if (g_stats_pid == getpid()) {
		struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET,
				    .l_start = ODL_TB5_RCCL_STATS_SLOT_OFF, .l_len = ODL_TB5_RCCL_STATS_SLOTS };

		flock(g_stats_fd, LOCK_EX);
		if (g_stats_slot)
			fcntl(g_stats_fd, F_OFD_SETLK, &fl);
		g_stats_slot = false;
		stats_count(g_stats_fd);
		flock(g_stats_fd, LOCK_UN);
	}
	g_stats_slot = false;
	close(g_stats_fd);
	g_stats_fd = -1;
	munmap(g_stats, sizeof(*g_stats));
	g_stats = &g_stats_dummy;
	g_stats_mapped = false;
}

/* ------------------------------------------------------------------ */
/* wire format */

enum {
	M_CONN = 1,
	M_ACK,
	M_REJ,
	M_CTS,
	M_DATA,
	M_DERR,
	M_CLOSE,
	M_PING, /* are you there? (total: the sender's instance) */
	M_PONG, /* yes (total: the sender's instance) */
};

struct wire_hdr {
	uint16_t magic;
	uint8_t type;
	/* the sender's port where it is not the destination's port number
	 * (0: the same; so two plugins on one port number exchange the same
	 * bytes as before ports could differ) */
	uint8_t sport;
	uint32_t dst; /* comm id at the receiver of this message */
	uint32_t src; /* comm id at the sender of this message */
	uint32_t seq;
	uint32_t idx; /* DATA/DERR: entry; CTS: n */
	uint32_t len; /* payload bytes following the header */
	uint64_t off;
	uint64_t total;
	uint64_t nonce;
};
_Static_assert(sizeof(struct wire_hdr) == 48, "wire header");

struct wire_cts_ent {
	int32_t tag;
	uint32_t key; /* 0, or the key of the receiver's keyed library receive */
	uint64_t size;
};

/* connection handle (copied by value to the peer through NCCL's bootstrap) */
struct odl_handle {
	uint64_t magic;
	uint32_t version;
	uint32_t len;	       /* sizeof(struct odl_handle) */
	uint64_t instance;     /* listener process instance */
	uint8_t listener_uuid[16];
	uint32_t port;
	uint32_t listen_id;
	uint64_t listen_nonce;
	/* connector-side stage area, written by connect() on its own copy */
	uint64_t stage_cookie;
	uint64_t stage_comm;
	/* connector side: the fused connect this rail belongs to (0: a plain
	 * one); sent in the CONN, so a fused accept joins the right rails */
	uint64_t group;
	uint8_t pad[32];
};
_Static_assert(sizeof(struct odl_handle) <= NCCL_NET_HANDLE_MAXSIZE, "handle fits NCCL's 128 B");

/* ------------------------------------------------------------------ */
/* objects */

enum comm_kind { K_LISTEN = 1, K_SEND, K_RECV };
enum comm_state { S_PENDING = 0, S_READY, S_PEER_CLOSED, S_FAILED };

struct odlp_dev;
struct odlp_comm;
struct odlp_mr;

struct odlp_req {
	uint32_t magic;
	uint8_t in_use, is_send, done, matched;
	struct odlp_comm *comm;
	uint64_t seen_gen; /* d->gen at this request's last unfinished test() */
	ncclResult_t err;
	struct odlp_req *qnext; /* pending-send FIFO / active jobs */
	/* send */
	const char *sdata;
	uint64_t ssize, sent, cap;
	int stag;
	uint32_t dst_seq, dst_idx;
	uint32_t dst_key;      /* the matched CTS entry's key */
	struct odlp_mr *smr;   /* the send's registration, if any */
	uint64_t soff;	       /* zero copy: the send's offset in smr */
	/* recv */
	int n, ndone;
	uint32_t seq;
	char *rdata[MAX_RECVS];
	uint64_t rcap[MAX_RECVS], rgot[MAX_RECVS], rtotal[MAX_RECVS];
	int rtag[MAX_RECVS];
	uint8_t rdone[MAX_RECVS];
	uint32_t rkey[MAX_RECVS]; /* keyed library receive posted, 0 none */
	struct odlp_mr *rmh[MAX_RECVS]; /* an entry's registration (NCCL's mhandle) */
	int rks[MAX_RECVS];	  /* its slot in dev->krx */
	uint8_t rzc[MAX_RECVS];	  /* the entry arrived by its keyed receive */
	uint8_t szc;		  /* the send went zero copy */
	/* profiler events (v10+, NCCL's phandles): one per send or entry */
	int nprof;
	void *pev[MAX_RECVS];
	odl_tb5_profiler_descr_v1_t pd[MAX_RECVS];
};

struct cts_ent {
	uint32_t seq;
	int n;
	int32_t tag[MAX_RECVS];
	uint32_t key[MAX_RECVS];
	uint64_t size[MAX_RECVS];
	uint8_t used[MAX_RECVS];
};

struct odlp_mr {
	uint32_t magic;
	int type;
	char *base;	/* CPU address (a DMA-buf: where it is mapped) */
	uint64_t size;
	struct odlp_dev *dev; /* zc: registered with this device's library handle */
	uint32_t lib_id;
	bool zc;
	uint32_t gen; /* zc: dev->epoch it was registered with */
	/* regMrDmaBuf: NCCL's address of the region (never dereferenced; the
	 * data pointers of isend/irecv are inside it), our own descriptor of
	 * the DMA-buf (CPU access is bracketed with DMA_BUF_IOCTL_SYNC) and
	 * its mapping */
	bool dmabuf;
	const char *va;
	int fd;
	void *map;
	size_t map_len;
};

/* a keyed receive in flight: its request entry (r NULL: forgotten, the
 * completion is only awaited to free the slot) */
struct krx_ent {
	uint32_t key;
	struct odlp_req *r;
	int idx;
};

struct conn_pending {
	uint32_t peer_id;
	uint32_t peer_port; /* the connecting process's port */
	uint64_t peer_inst; /* the connecting process's instance */
	uint64_t group;	    /* its fused connect (CONN's off; 0 plain/older) */
	struct conn_pending *next;
};

struct odlp_comm {
	uint32_t magic;
	enum comm_kind kind;
	enum comm_state state;
	uint32_t id, peer_id;
	uint32_t peer_port; /* send/recv: the peer process's port */
	uint64_t peer_inst; /* send/recv: the peer process's instance (0 unknown) */
	uint64_t peer_group; /* recv: the connector's fused connect (0: plain) */
	uint32_t peer_slot; /* send: the receiver's staging slot (its ACK; 0 unknown) */
	struct odlp_dev *dev;
	struct odlp_comm *next;
	int nmr;
	/* listen */
	uint64_t nonce;
	struct conn_pending *pend_head, *pend_tail;
	int npend;
	bool pend_warned; /* the PEND_MAX refusal was logged */
	/* send/recv */
	struct odlp_req *reqs;
	int nreqs;
	uint32_t next_seq;
	struct odlp_req *sq_head, *sq_tail; /* sends waiting for a CTS */
	struct cts_ent cts[CTS_RING];
	int cts_head, cts_count;
	uint64_t handle_cookie; /* connect(): stage marker */
};

struct ctrl_msg {
	struct ctrl_msg *next;
	uint32_t dport; /* the peer's port it goes to */
	bool answer;	/* counted in cq_answers (queue_answer) */
	struct wire_hdr h;
	uint8_t payload[MAX_RECVS * sizeof(struct wire_cts_ent)];
};

struct odlp_dev {
	int index;
	char spec[128];
	char name[128];
	char pci[256];
	bool has_pci;
	uint64_t guid;
	int speed;
	float latency;
	struct odl_tb5_info info;
	odl_tb5_t *h;
	pthread_mutex_t mu, poll_mu;
	bool locks_init;
	bool dead;
	int dead_err;
	/* a request finished or a comm failed since the progress thread's last
	 * batch: test() callers are woken for that, not for every completion */
	bool wake;
	/* successful opens of the link: 1 at init, one more per revival
	 * (dev_revive); registrations pinned on an earlier one are void */
	uint32_t open_gen;
	/* this open's number, unique in the process (g_epoch): a registration
	 * is valid only on the open it was pinned through. open_gen restarts
	 * at 1 when an init after a finalize opens the device anew, and a
	 * handle kept from before would name another registration's id */
	uint32_t epoch;
	uint8_t peer_uuid[16]; /* the peer reached at the first open */
	bool by_uuid;	       /* kernel backend: revive finds it by peer_uuid */
	uint32_t next_id;
	int ncomms;
	struct odlp_comm *comms;
	bool batch; /* ODL_TB5_OPEN_BATCH: operations queued, handed over by tx_pump */
	/* staging */
	uint32_t slot, ntx, nrx;
	uint32_t tx_id, rx_id;
	char *tx_base, *rx_base;
	uint32_t *tx_free;
	uint32_t ntx_free;
	struct ctrl_msg *cq_head, *cq_tail;
	int cq_answers;			       /* REJ/PONG in the queue */
	bool pong_queued[ODL_TB5_MAX_PORT + 1]; /* a PONG to that port is */
	struct odlp_req *job_head, *job_tail;
	/* zero copy (keyed library operations) */
	bool zc;		     /* registrations may pin (ODL_TB5_RCCL_ZEROCOPY) */
	bool urgent_cts;	     /* CTS sent urgent (ODL_TB5_RCCL_URGENT_CTS) */
	uint32_t next_key;
	struct krx_ent krx[KTAB];
	bool krx_busy[KTAB];
	struct odlp_req *ktx[KTAB]; /* zero-copy sends in flight (NULL: forgotten) */
	bool ktx_busy[KTAB];
	int ktx_hint, krx_hint;
	struct odlp_req *zq_head, *zq_tail; /* zero-copy sends not handed over yet */
	/* progress thread */
	pthread_t thr;
	bool thr_started;
	volatile int stop;
	/* completion batches processed (under mu): a test() that saw no new
	 * one since its last test of a request waits (test_wait) */
	uint64_t gen;
	/* CLOCK_MONOTONIC ns until which the progress thread leaves reaping
	 * to the test() callers (caller_reap), 0: it reaps */
	uint64_t reap_until_ns;
	uint32_t port; /* this process's port on the device */
	/* per port of the peer (one process each), for the keepalive: when
	 * it last sent anything, when this side last asked (PING), and the
	 * instance of its latest PING/PONG/CONN/ACK */
	struct peer_port {
		uint64_t last_rx_ns, last_ping_ns;
		uint64_t inst;
	} peers[ODL_TB5_MAX_PORT + 1];
	uint64_t ka_last_ns; /* the keepalive's last look (keepalive()) */
	int peer_warns;	     /* PEER_WARN lines logged */
};

/*
 * Fused devices (makeVDevice, "NIC fusion"): several cables to one peer
 * machine as one device whose comms stripe every message over one comm per
 * cable (a rail). The section "fused devices" below has the whole of it;
 * the core entry points hand fused objects over to it.
 */
#define VDEV_RAILS 4 /* NCCL_NET_MAX_DEVS_PER_NIC of v9..v11; v12 allows 8 */
/* rails a fused listen comm holds accepted until their connect's other
 * rails are there (per rail; NCCL has at most a few connects in flight) */
#define VPOOL 64
#define MAX_VDEVS 16
#define VCOMM_MAGIC 0x4f444356u	 /* "ODCV" */
#define VREQ_MAGIC 0x4f445256u	 /* "ODRV" */
#define VMR_MAGIC 0x4f444d56u	 /* "ODMV" */
#define VHANDLE_MAGIC 0x564254444c4f4e48ULL
static bool is_vcomm(const void *p);
static bool is_vreq(const void *p);
static bool is_vmr(const void *p);
static int vdev_physical(int dev);
static ncclResult_t v_props(int dev, ncclNetProperties_v7_t *p);
static ncclResult_t v_listen(int dev, void *handle, void **listenComm);
static ncclResult_t v_connect(int dev, void *handle, void **sendComm);
static ncclResult_t v_accept(void *listenComm, void **recvComm);
static ncclResult_t v_close(void *comm, enum comm_kind k);
static ncclResult_t v_regmr(void *comm, void *data, uint64_t size, int type, uint64_t offset,
			    int fd, void **mhandle);
static ncclResult_t v_deregmr(void *mhandle);
static ncclResult_t v_isend(void *comm, void *data, uint64_t size, int tag, void *mhandle,
			    void *phandle, void **request);
static ncclResult_t v_irecv(void *comm, int n, void **data, const uint64_t *sizes, int *tags,
			    void **mhandles, void **phandles, void **request);
static ncclResult_t v_iflush(void *comm, int n, void **data, int *sizes, void **mhandles,
			     void **request);
static ncclResult_t v_test(void *request, int *done, int *sizes);
struct odlp_vdev {
	int n;
	int devs[VDEV_RAILS];
	char name[VDEV_RAILS * 130];
};
/* under g_mu; kept across finalize and init (NCCL counts them once per
 * process), checked against the devices at every use */
static struct odlp_vdev g_vdevs[MAX_VDEVS];
static int g_nvdev;
/* per fused device: the cables up at its last listen (bit k: member k;
 * 0 until the first), for logging a change once */
static unsigned int g_vdev_live[MAX_VDEVS];
static int vdev_members(int dev, int *devs);

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct odlp_dev g_devs[MAX_DEVS];
static uint32_t g_epoch; /* opens of any device in this process (atomic) */
static int g_ndev;
static bool g_inited;
static uint64_t g_instance;
static pid_t g_init_pid; /* the process that ran init */
static uint32_t g_port; /* ODL_TB5_RCCL_PORT, 0: the first free one */
/* the port each device index had in this process's previous init: a process
 * that finalizes and initialises again asks for it first, so that it keeps
 * its port and never takes one a neighbour process is about to ask for */
static uint32_t g_prev_port[MAX_DEVS];
static long g_test_wait_us = DEFAULT_TEST_WAIT_US;
/* ODL_TB5_RCCL_TEST_CONNECT_STEP (tests): a fused connect sends one more
 * rail's CONN per call, so a test can interleave two connects' rails */
static int g_test_connect_step;
static bool g_caller_reap = true; /* ODL_TB5_RCCL_CALLER_REAP */
static long g_busy_poll_us; /* ODL_TB5_RCCL_BUSY_POLL_US */
/* ODL_TB5_RCCL_DMABUF=1: ptrSupport advertises NCCL_PTR_DMABUF */
static bool g_dmabuf_adv;
static long g_poll_ms = ODL_TB5_RCCL_POLL_MS_DEFAULT;
/* ODL_TB5_RCCL_PEER_TIMEOUT_MS: a peer endpoint silent this long while
 * this side waits for it is gone (0: never); PINGs go out at a quarter */
#define DEFAULT_PEER_TIMEOUT_MS 10000
static long g_peer_timeout_ms = DEFAULT_PEER_TIMEOUT_MS;

/*
 * Completion batches processed by any device's progress thread. A test()
 * that found nothing new waits for the next one of *any* device: NCCL's
 * proxy thread tests the requests of every device in one loop (a ring over
 * several peers sends on one device and receives on another), so progress
 * anywhere must end the wait.
 */
static uint64_t g_prog_gen;
static pthread_mutex_t g_wait_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_wait_cv;
static int g_waiters;
static pthread_once_t g_wait_once = PTHREAD_ONCE_INIT;
/*
 * Callers that reap several devices (caller_reap with more than one) sleep
 * in poll() on the devices' descriptors and on an eventfd of their thread,
 * listed here (under g_wait_mu): progress_notify writes to each, so that
 * progress on a device the caller does not hold ends its wait too.
 */
struct fd_waiter {
	int efd;
	struct fd_waiter *next;
};
static struct fd_waiter *g_fd_waiters;
/* this thread's entry while it is listed: its own progress needs no write */
static __thread struct fd_waiter *t_fd_waiter;
static pthread_key_t g_efd_key;
static bool g_efd_key_ok;
static pthread_once_t g_efd_once = PTHREAD_ONCE_INIT;

static void wait_cv_init(void)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g_wait_cv, &ca);
	pthread_condattr_destroy(&ca);
}

/* a request finished or a comm failed: wake the test() callers waiting */
static void progress_notify(void)
{
	__atomic_fetch_add(&g_prog_gen, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&g_wait_mu);
	if (g_waiters)
		pthread_cond_broadcast(&g_wait_cv);
	for (struct fd_waiter *w = g_fd_waiters; w; w = w->next) {
		uint64_t one = 1;
		ssize_t rc;

		if (w == t_fd_waiter)
			continue; /* it reads g_prog_gen after its own progress */
		/* EAGAIN: the counter is full, the eventfd readable anyway */
		rc = write(w->efd, &one, sizeof(one));
		(void)rc;
	}
	pthread_mutex_unlock(&g_wait_mu);
}

static void efd_close(void *p)
{
	close((int)(intptr_t)p - 1);
}

static void efd_key_init(void)
{
	g_efd_key_ok = pthread_key_create(&g_efd_key, efd_close) == 0;
}

/* this thread's eventfd for fd_waiter (closed when the thread ends), or -1 */
static int thread_efd(void)
{
	void *v;
	int fd;

	pthread_once(&g_efd_once, efd_key_init);
	if (!g_efd_key_ok)
		return -1;
	v = pthread_getspecific(g_efd_key);
	if (v)
		return (int)(intptr_t)v - 1;
	fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (pthread_setspecific(g_efd_key, (void *)(intptr_t)(fd + 1)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* r is finished (its device's mu held): a test() may be waiting for it */
static void req_done(struct odlp_req *r)
{
	r->comm->dev->wake = true;
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------------ */
/* profiler events (odl_tb5_rccl_profiler.h) */

/* NCCL's profiler callback from a v10+ init; NULL: none */
static ncclProfilerCallback_t g_prof;

/* Entry i's tag, size and path in pd: as posted (the capacity of a
 * receive, the path planned) or, done, as the message ended (d->mu held) */
static void prof_describe(const struct odlp_req *r, int i, bool done,
			  odl_tb5_profiler_descr_v1_t *pd)
{
	bool zc;

	if (r->is_send) {
		pd->tag = r->stag;
		pd->size = r->ssize;
		zc = r->szc;
	} else {
		pd->tag = r->rtag[i];
		pd->size = done ? r->rtotal[i] : r->rcap[i];
		zc = done ? r->rzc[i] : r->rkey[i] != 0;
	}
	pd->path = zc ? ODL_TB5_PROFILE_ZERO_COPY : ODL_TB5_PROFILE_STAGED;
}

/*
 * Describe the events of request r just posted with NCCL's phandles ph
 * (n of them; d->mu held, so the entries' paths are read safely). Nothing
 * without a callback or phandles.
 */
static void prof_fill(struct odlp_req *r, int n, void *const *ph)
{
	const struct odlp_comm *c = r->comm;

	if (!ph || !__atomic_load_n(&g_prof, __ATOMIC_ACQUIRE))
		return;
	r->nprof = n;
	for (int i = 0; i < n; i++) {
		odl_tb5_profiler_descr_v1_t *pd = &r->pd[i];

		memset(pd, 0, sizeof(*pd));
		pd->type = ODL_TB5_PROFILE_MSG;
		pd->is_send = r->is_send;
		pd->device = c->dev->index;
		pd->entry = i;
		pd->comm_id = c->id;
		pd->peer_port = c->peer_port;
		prof_describe(r, i, false, pd);
	}
}

/* Start them (the caller's thread, no lock held: the callback is NCCL's):
 * one event per phandle that is not NULL */
static void prof_start(struct odlp_req *r, void *const *ph)
{
	ncclProfilerCallback_t cb = __atomic_load_n(&g_prof, __ATOMIC_ACQUIRE);

	if (!cb || !ph)
		return;
	for (int i = 0; i < r->nprof; i++) {
		r->pev[i] = NULL;
		if (ph[i])
			cb(&r->pev[i], 0, ph[i], ODL_TB5_PROFILER_NET_ID, &r->pd[i]);
	}
}

/* the events of a finished request, taken out of it by test() */
struct prof_done {
	int n;
	void *ev[MAX_RECVS];
	odl_tb5_profiler_descr_v1_t pd[MAX_RECVS];
};

/* test() found r done with result `status` (d->mu held): take its started events
 * with their outcome, before the request is recycled */
static void prof_take(struct odlp_req *r, int32_t status, struct prof_done *pdn)
{
	pdn->n = 0;
	for (int i = 0; i < r->nprof; i++) {
		odl_tb5_profiler_descr_v1_t *pd;

		if (!r->pev[i])
			continue;
		pd = &pdn->pd[pdn->n];
		pdn->ev[pdn->n++] = r->pev[i];
		*pd = r->pd[i];
		pd->done = 1;
		pd->status = status;
		prof_describe(r, i, true, pd);
		r->pev[i] = NULL;
	}
	r->nprof = 0;
}

/* ... and record the outcome and stop them (no lock held) */
static void prof_stop(struct prof_done *pdn)
{
	ncclProfilerCallback_t cb = __atomic_load_n(&g_prof, __ATOMIC_ACQUIRE);

	for (int i = 0; cb && i < pdn->n; i++) {
		cb(&pdn->ev[i], 2, NULL, ODL_TB5_PROFILER_NET_ID, &pdn->pd[i]);
		cb(&pdn->ev[i], 1, NULL, 0, NULL);
	}
}

/* ------------------------------------------------------------------ */
/* helpers */

static uint64_t rnd64(void)
{
	uint64_t v = now_ns(CLOCK_MONOTONIC) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&v;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		uint64_t r;

		if (read(fd, &r, sizeof(r)) == sizeof(r))
			v ^= r;
		close(fd);
	}
	/* splitmix64 finaliser */
	v += 0x9e3779b97f4a7c15ULL;
	v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ULL;
	v = (v ^ (v >> 27)) * 0x94d049bb133111ebULL;
	return v ^ (v >> 31);
}

static long env_long(const char *name, long def, long lo, long hi)
{
	const char *e = getenv(name);
	char *end;
	long v;

	if (!e || !*e)
		return def;
	v = strtol(e, &end, 0);
	if (*end || v < lo || v > hi) {
		WARN("ignoring %s=%s (range %ld..%ld)", name, e, lo, hi);
		return def;
	}
	return v;
}

/*
 * The busy-polling window when ODL_TB5_RCCL_BUSY_POLL_US is not set: a
 * caller that spins takes a CPU, which pays only where there is one to
 * spare next to the progress thread, the driver's interrupt work and the
 * application (real hosts); the benchmark's 1-vCPU guests and 2-CPU
 * machines keep sleeping callers.
 */
static long busy_poll_auto(int ncpus)
{
	return ncpus >= BUSY_POLL_AUTO_CPUS ? BUSY_POLL_AUTO_US : 0;
}

static long busy_poll_env(void)
{
	const char *e = getenv("ODL_TB5_RCCL_BUSY_POLL_US");
	cpu_set_t set;
	int ncpus = 1;
	long us;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		ncpus = CPU_COUNT(&set);
	us = busy_poll_auto(ncpus);
	/* a bad value is ignored with a warning: the automatic choice */
	if (e && *e && strcmp(e, "auto"))
		return env_long("ODL_TB5_RCCL_BUSY_POLL_US", us, 0, BUSY_POLL_MAX_US);
	INFO("busy polling in test(): %ld us (%d CPUs; ODL_TB5_RCCL_BUSY_POLL_US to choose)", us, ncpus);
	return us;
}

static struct odlp_comm *find_comm(struct odlp_dev *d, uint32_t id)
{
	for (struct odlp_comm *c = d->comms; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static void mark_dead(struct odlp_dev *d, int rc)
{
	if (d->dead)
		return;
	d->dead = true;
	d->dead_err = rc;
	/* with no connection on it nothing fails (a peer process that closed
	 * its device at the end of its work looks the same): the next listen
	 * or connect reopens it */
	if (d->ncomms)
		WARN("device %s: link failed: %s", d->name, odl_tb5_strerror(rc));
	else
		INFO("device %s: link down, no connection open: %s", d->name,
		     odl_tb5_strerror(rc));
	for (struct odlp_comm *c = d->comms; c; c = c->next)
		if (c->state == S_READY || c->state == S_PENDING)
			c->state = S_FAILED;
}

/* ------------------------------------------------------------------ */
/* transmit */

/* the header's sport for a message to the peer's port dport */
static uint8_t wire_sport(const struct odlp_dev *d, uint32_t dport)
{
	return dport == d->port ? 0 : (uint8_t)d->port;
}

/* the peer's REJ or PONG is an answer: each one a message of the peer asks
 * for (so is the CLOSE for an ACK to a comm we no longer have, queued by
 * queue_answer) */
static bool is_answer(uint8_t type)
{
	return type == M_REJ || type == M_PONG;
}

static void queue_ctrl(struct odlp_dev *d, uint32_t dport, const struct wire_hdr *h, const void *p,
		       uint32_t plen)
{
	struct ctrl_msg *m = calloc(1, sizeof(*m));

	if (!m) {
		mark_dead(d, -ENOMEM);
		return;
	}
	m->dport = dport;
	m->answer = is_answer(h->type);
	m->h = *h;
	m->h.magic = WIRE_MAGIC;
	m->h.sport = wire_sport(d, dport);
	m->h.len = plen;
	if (plen)
		memcpy(m->payload, p, plen);
	if (d->cq_tail)
		d->cq_tail->next = m;
	else
		d->cq_head = m;
	d->cq_tail = m;
	if (m->answer)
		d->cq_answers++;
	if (h->type == M_PONG)
		d->pong_queued[dport] = true;
}

/*
 * Queue an answer to a message of the peer, bounded: at most one PONG per
 * port waits (more say nothing new) and at most ANSWERS_MAX answers in all,
 * so a peer that floods PINGs or bad CONNs cannot grow the queue without
 * end. An answer beyond the bound is dropped (counted in errors).
 */
static void queue_answer(struct odlp_dev *d, uint32_t dport, const struct wire_hdr *h)
{
	if (h->type == M_PONG && d->pong_queued[dport])
		return;
	if (d->cq_answers >= ANSWERS_MAX) {
		STAT_ADD(errors, 1);
		return;
	}
	queue_ctrl(d, dport, h, NULL, 0);
	if (d->cq_tail && !d->cq_tail->answer && d->cq_tail->h.type == h->type) {
		d->cq_tail->answer = true;
		d->cq_answers++;
	}
}

/* take the control queue's head (there is one) */
static void cq_pop(struct odlp_dev *d)
{
	struct ctrl_msg *m = d->cq_head;

	d->cq_head = m->next;
	if (!d->cq_head)
		d->cq_tail = NULL;
	if (m->answer)
		d->cq_answers--;
	if (m->h.type == M_PONG)
		d->pong_queued[m->dport] = false;
	free(m);
}

/* request queues (jobs, zero-copy sends): push at the tail, pop the head */
static void req_push(struct odlp_req **head, struct odlp_req **tail, struct odlp_req *r)
{
	r->qnext = NULL;
	if (*tail)
		(*tail)->qnext = r;
	else
		*head = r;
	*tail = r;
}

static void req_pop(struct odlp_req **head, struct odlp_req **tail)
{
	*head = (*head)->qnext;
	if (!*head)
		*tail = NULL;
}

/* take r out of a request queue, if it is in it */
static void req_unlink(struct odlp_req **head, struct odlp_req **tail, struct odlp_req *r)
{
	struct odlp_req **pp = head, *last = NULL;

	while (*pp && *pp != r) {
		last = *pp;
		pp = &(*pp)->qnext;
	}
	if (!*pp)
		return;
	*pp = r->qnext;
	if (*tail == r)
		*tail = last;
	r->qnext = NULL;
}

static void job_push(struct odlp_dev *d, struct odlp_req *r)
{
	req_push(&d->job_head, &d->job_tail, r);
}

static void reqs_remove_comm(struct odlp_req **head, struct odlp_req **tail,
			     struct odlp_comm *c)
{
	struct odlp_req **pp = head, *last = NULL;

	while (*pp) {
		if ((*pp)->comm == c) {
			*pp = (*pp)->qnext;
		} else {
			last = *pp;
			pp = &(*pp)->qnext;
		}
	}
	*tail = last;
}

/* a comm goes away: forget its queued work and its operations in flight
 * (their completions still arrive and only free their slots); its keyed
 * receives are withdrawn */
static void jobs_remove_comm(struct odlp_dev *d, struct odlp_comm *c)
{
	reqs_remove_comm(&d->job_head, &d->job_tail, c);
	reqs_remove_comm(&d->zq_head, &d->zq_tail, c);
	for (int i = 0; i < KTAB; i++) {
		if (d->ktx[i] && d->ktx[i]->comm == c)
			d->ktx[i] = NULL;
		if (d->krx_busy[i] && d->krx[i].r && d->krx[i].r->comm == c) {
			d->krx[i].r = NULL;
			if (!d->dead)
				odl_tb5_cancel_recv(d->h, d->krx[i].key);
		}
	}
}

/* a free slot of a keyed-operation table (marked busy), or -1 */
static int ktab_get(bool busy[KTAB], int *hint)
{
	for (int n = 0; n < KTAB; n++) {
		int i = (*hint + n) % KTAB;

		if (!busy[i]) {
			busy[i] = true;
			*hint = (i + 1) % KTAB;
			return i;
		}
	}
	return -1;
}

/* offset of [data, data + size) in a zero-copy registration, or -1 */
static int64_t zc_offset(const struct odlp_dev *d, const struct odlp_mr *mr, const void *data,
			 uint64_t size)
{
	const char *p = data;

	if (!mr || mr->magic != MR_MAGIC || !mr->zc || mr->dev != d || mr->gen != d->epoch || !size ||
	    size > d->info.max_msg_size || p < mr->base || p + size > mr->base + mr->size)
		return -1;
	return (int64_t)(p - mr->base);
}

/*
 * The CPU is about to touch (START) or has touched (END) a DMA-buf
 * registration's mapping: tell the exporter, which may need to make caches
 * coherent. Nothing to do for other memory.
 */
static void dmabuf_sync(const struct odlp_mr *mr, uint64_t flags)
{
	struct dma_buf_sync sy = { .flags = flags };
	int rc;

	if (!mr || !mr->dmabuf)
		return;
	do {
		rc = ioctl(mr->fd, DMA_BUF_IOCTL_SYNC, &sy);
	} while (rc != 0 && (errno == EINTR || errno == EAGAIN));
	if (rc != 0)
		WARN("DMA_BUF_IOCTL_SYNC on a registration's DMA-buf: %s", strerror(errno));
}

/*
 * Control messages sent urgent, ahead of the bulk data queued on the
 * device: a CTS (it lets the peer send), PING and PONG; and the ACK of an
 * accept, which a CTS of the new comm must not pass (urgent messages keep
 * their order among themselves; a CTS for a comm the peer has not seen
 * accepted is dropped there, and its send would wait for good).
 */
static bool ctrl_urgent(const struct odlp_dev *d, uint8_t type)
{
	if (type == M_PING || type == M_PONG)
		return true;
	return d->urgent_cts && (type == M_CTS || type == M_ACK);
}

/* Send one staged message of the given wire type (urgent by ctrl_urgent:
 * ahead of queued bulk data, where the device can); false if the library
 * queue is full or failed.
 */
static bool tx_slot_send(struct odlp_dev *d, uint32_t dport, uint32_t slot, uint64_t len,
			 uint8_t type)
{
	bool urgent = ctrl_urgent(d, type) && len <= ODL_TB5_URGENT_MAX &&
		      (d->info.features & ODL_TB5_FEAT_URGENT);
	int rc;

	rc = odl_tb5_send_to(d->h, dport, d->tx_id, (uint64_t)slot * d->slot, len, 0, slot,
			     ODL_TB5_F_NONBLOCK | (urgent ? ODL_TB5_F_URGENT : 0));
	if (rc == 0) {
		if (urgent && type == M_CTS)
			STAT_ADD(cts_urgent, 1);
		return true;
	}
	d->tx_free[d->ntx_free++] = slot;
	if (rc != -EAGAIN)
		mark_dead(d, rc);
	return false;
}

/* The payload of one DATA message of send comm c: it fits the receiver's
 * staging slot as well as ours (ODL_TB5_RCCL_CHUNK or max_msg_size may
 * differ there; its ACK said, 0 from an older plugin: as ours).
 */
static uint64_t data_chunk_max(const struct odlp_dev *d, const struct odlp_comm *c)
{
	uint32_t slot = c->peer_slot && c->peer_slot < d->slot ? c->peer_slot : d->slot;

	return slot - sizeof(struct wire_hdr);
}

/* Move control messages and data chunks into the library while slots last. */
static void tx_pump_slots(struct odlp_dev *d)
{
	while (!d->dead && d->ntx_free > 0) {
		uint32_t slot;
		char *p;

		if (d->cq_head) {
			struct ctrl_msg *m = d->cq_head;

			slot = d->tx_free[--d->ntx_free];
			p = d->tx_base + (uint64_t)slot * d->slot;
			memcpy(p, &m->h, sizeof(m->h));
			memcpy(p + sizeof(m->h), m->payload, m->h.len);
			if (!tx_slot_send(d, m->dport, slot, sizeof(m->h) + m->h.len,
					  m->h.type))
				return;
			cq_pop(d);
			continue;
		}
		if (!d->job_head)
			return;
		/* round robin: take the head job, one chunk, rotate */
		struct odlp_req *r = d->job_head;
		uint64_t chunk = r->ssize - r->sent;
		uint64_t maxp = data_chunk_max(d, r->comm);
		struct wire_hdr h = {
			.magic = WIRE_MAGIC,
			.type = M_DATA,
			.sport = wire_sport(d, r->comm->peer_port),
			.dst = r->comm->peer_id,
			.src = r->comm->id,
			.seq = r->dst_seq,
			.idx = r->dst_idx,
			.off = r->sent,
			.total = r->ssize,
		};

		if (chunk > maxp)
			chunk = maxp;
		h.len = (uint32_t)chunk;
		slot = d->tx_free[--d->ntx_free];
		p = d->tx_base + (uint64_t)slot * d->slot;
		memcpy(p, &h, sizeof(h));
		if (chunk) {
			dmabuf_sync(r->smr, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ);
			memcpy(p + sizeof(h), r->sdata + r->sent, chunk);
			dmabuf_sync(r->smr, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ);
		}
		if (!tx_slot_send(d, r->comm->peer_port, slot, sizeof(h) + chunk, M_DATA))
			return;
		r->sent += chunk;
		STAT_ADD(tx_bytes, chunk);
		req_pop(&d->job_head, &d->job_tail);
		if (r->sent == r->ssize) {
			req_done(r); /* buffer reusable */
			STAT_ADD(tx_msgs, 1);
			/* may happen in an API call: end a test() waiting for it */
			progress_notify();
		} else {
			job_push(d, r);
		}
	}
}

/*
 * tx_pump_slots, then, in batch mode, hand everything the library queued
 * (these sends, and receives reposted since the last call) to the device in
 * one go (odl_tb5_pending submits the library's queue).
 */
/* Hand matched zero-copy sends to the library while it takes them. */
static void zc_pump(struct odlp_dev *d)
{
	while (!d->dead && d->zq_head) {
		struct odlp_req *r = d->zq_head;
		int slot = ktab_get(d->ktx_busy, &d->ktx_hint), rc;

		if (slot < 0)
			return;
		rc = odl_tb5_send_to(d->h, r->comm->peer_port, r->smr->lib_id, r->soff, r->ssize,
				     r->dst_key, KC_TX | (uint64_t)slot, ODL_TB5_F_NONBLOCK);
		if (rc) {
			d->ktx_busy[slot] = false;
			if (rc != -EAGAIN)
				mark_dead(d, rc);
			return;
		}
		d->ktx[slot] = r;
		req_pop(&d->zq_head, &d->zq_tail);
		r->sent = r->ssize;
		STAT_ADD(tx_bytes, r->ssize);
	}
}

static void tx_pump(struct odlp_dev *d)
{
	unsigned int s, r;
	int rc;

	tx_pump_slots(d);
	zc_pump(d);
	if (d->batch && !d->dead && (rc = odl_tb5_pending(d->h, &s, &r)) < 0)
		mark_dead(d, rc);
}

/* Match queued sends of a send comm against the receiver's CTS entries. */
static void match_sends(struct odlp_comm *c)
{
	struct odlp_dev *d = c->dev;

	while (c->cts_count && c->sq_head) {
		struct cts_ent *e = &c->cts[c->cts_head];
		struct odlp_req *r;
		int i = 0, used = 0;
		int64_t off;

		/* the first queued send whose tag is free in the head receive:
		 * FIFO per tag (a later send of a tag finds no entry where an
		 * earlier one found none), and a send whose tag is not (or no
		 * longer) in it does not hold up the other tags' (several NCCL
		 * subs on one comm, each going ahead on its own)
		 */
		for (r = c->sq_head; r; r = r->qnext) {
			for (i = 0; i < e->n; i++)
				if (!e->used[i] && e->tag[i] == r->stag)
					break;
			if (i < e->n)
				break;
		}
		if (!r)
			return;
		e->used[i] = 1;
		req_unlink(&c->sq_head, &c->sq_tail, r);
		r->matched = 1;
		r->dst_seq = e->seq;
		r->dst_idx = (uint32_t)i;
		r->dst_key = e->key[i];
		r->cap = e->size[i];
		if (r->ssize > r->cap) {
			struct wire_hdr h = {
				.type = M_DERR, .dst = c->peer_id, .src = c->id,
				.seq = e->seq, .idx = (uint32_t)i, .total = r->ssize,
			};
			WARN("send of %llu bytes matched a receive of %llu bytes (tag %d): truncation",
			     (unsigned long long)r->ssize, (unsigned long long)r->cap, r->stag);
			queue_ctrl(d, c->peer_port, &h, NULL, 0);
			r->err = ncclInvalidUsage;
			req_done(r);
			STAT_ADD(err_truncated, 1);
		} else if (r->dst_key && (off = zc_offset(d, r->smr, r->sdata, r->ssize)) >= 0) {
			/* straight from NCCL's buffer into the receive's */
			r->soff = (uint64_t)off;
			r->szc = 1;
			req_push(&d->zq_head, &d->zq_tail, r);
		} else {
			if (r->dst_key)
				STAT_ADD(zc_fallbacks, 1);
			job_push(d, r);
		}
		for (i = 0; i < e->n; i++)
			used += e->used[i];
		if (used == e->n) {
			c->cts_head = (c->cts_head + 1) % CTS_RING;
			c->cts_count--;
		}
	}
}

/* ------------------------------------------------------------------ */
/* receive path */

static struct odlp_req *find_recv_req(struct odlp_comm *c, uint32_t seq)
{
	for (int i = 0; i < c->nreqs; i++)
		if (c->reqs[i].in_use && !c->reqs[i].is_send && c->reqs[i].seq == seq)
			return &c->reqs[i];
	return NULL;
}

static void entry_done(struct odlp_req *r, int idx)
{
	if (r->rdone[idx])
		return;
	r->rdone[idx] = 1;
	STAT_ADD(rx_msgs, 1);
	if (++r->ndone == r->n)
		req_done(r);
}

/*
 * The peer process on `port` is gone: its live comms fail (with `inst`
 * non-zero, only those set up with another instance than that: the process
 * now on the port). Returns how many failed.
 */
static int fail_peer_comms(struct odlp_dev *d, uint32_t port, uint64_t inst)
{
	int n = 0;

	for (struct odlp_comm *c = d->comms; c; c = c->next)
		if (c->kind != K_LISTEN && c->peer_port == port &&
		    (c->state == S_READY || c->state == S_PENDING) &&
		    (!inst || (c->peer_inst && c->peer_inst != inst))) {
			c->state = S_FAILED;
			d->wake = true;
			STAT_ADD(peer_lost, 1);
			n++;
		}
	return n;
}

/*
 * A message from the peer process `inst` (0: not said) on the peer's port
 * `port`. Comms set up with another instance there are dead: that process
 * is gone, a new one has the port.
 */
static void peer_instance(struct odlp_dev *d, uint32_t port, uint64_t inst)
{
	struct peer_port *pp = &d->peers[port];
	int n;

	if (!inst)
		return;
	if (pp->inst && pp->inst != inst)
		INFO("device %s: the peer process on port %u changed", d->name, port);
	pp->inst = inst;
	n = fail_peer_comms(d, port, inst);
	if (n)
		WARN("device %s: %d comm(s) failed: their peer process is gone (another one uses port %u now)",
		     d->name, n, port);
}

/* how often the keepalive looks: an eighth of the timeout, at most 100 ms */
static uint64_t ka_period_ns(uint64_t tmo)
{
	return tmo / 8 < 100000000ull ? tmo / 8 : 100000000ull;
}

/*
 * Keepalive (progress thread, d->mu held), per port of the peer (one
 * process each). Only while this side waits for that process - a request
 * in flight, a connect not answered - does silence count: after a quarter
 * of ODL_TB5_RCCL_PEER_TIMEOUT_MS without a message from it a PING goes out
 * (answered by its progress thread, whatever its application does); after
 * the whole of it the process is taken for gone (killed, hung: the link
 * itself is up, and its driver drops messages for a port nobody holds) and
 * every comm waiting for it fails with ncclRemoteError instead of waiting
 * forever.
 */
static void keepalive(struct odlp_dev *d)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC), tmo = (uint64_t)g_peer_timeout_ms * 1000000ull;
	bool waiting[ODL_TB5_MAX_PORT + 1] = { false }, failed = false, pinged = false;

	if (!tmo || d->dead)
		return;
	/* the progress thread wakes for every batch of completions (thousands
	 * a second under load); the keepalive's clocks need a look a few times
	 * per timeout, not at each of those wake-ups (it walks every comm's
	 * requests and every peer port under the device lock) */
	if (now - d->ka_last_ns < ka_period_ns(tmo))
		return;
	d->ka_last_ns = now;
	for (struct odlp_comm *c = d->comms; c; c = c->next) {
		bool *w = &waiting[c->peer_port];

		if (*w || c->kind == K_LISTEN || (c->state != S_READY && c->state != S_PENDING))
			continue;
		*w = c->state == S_PENDING;
		for (int i = 0; i < c->nreqs && !*w; i++)
			*w = c->reqs[i].in_use && !c->reqs[i].done;
	}
	for (uint32_t port = 1; port <= ODL_TB5_MAX_PORT; port++) {
		struct peer_port *pp = &d->peers[port];

		if (!waiting[port] || !pp->last_rx_ns) {
			pp->last_rx_ns = now; /* silence counts from when waiting starts */
			continue;
		}
		if (now - pp->last_rx_ns < tmo / 4)
			continue;
		if (now - pp->last_rx_ns >= tmo) {
			WARN("device %s: no word from the peer's port %u for %ld ms while waiting for it: its comms fail (peer process gone?)",
			     d->name, port, g_peer_timeout_ms);
			fail_peer_comms(d, port, 0);
			pp->last_rx_ns = now;
			failed = true;
			continue;
		}
		if (now - pp->last_ping_ns >= tmo / 4) {
			struct wire_hdr h = { .type = M_PING, .total = g_instance };

			pp->last_ping_ns = now;
			queue_ctrl(d, port, &h, NULL, 0);
			pinged = true;
			STAT_ADD(pings, 1);
		}
	}
	if (pinged)
		tx_pump(d);
	if (failed) {
		d->gen++;
		progress_notify();
	}
}

/*
 * A DATA chunk from the peer for a receive entry of capacity rcap that has
 * rgot bytes so far: the message fits, the chunk lies inside it (no
 * wrap-around of off + len) and continues where the last one ended (a
 * sender sends an entry's chunks in order, so anything else is a broken or
 * hostile peer, and must not complete the entry with holes in it).
 */
static bool data_chunk_ok(uint64_t off, uint32_t len, uint64_t total, uint64_t rcap,
			  uint64_t rgot)
{
	return total <= rcap && off == rgot && off <= total && len <= total - off;
}

enum conn_verdict { CONN_NEW, CONN_DUP, CONN_FULL };

/*
 * A CONN with the right nonce for listen comm l from comm `src` of the
 * process `inst` on the peer's port `port`: new, a repeat of one already
 * waiting or accepted (a second accept() would make a comm nobody sends
 * to), or one too many (PEND_MAX wait already).
 */
static enum conn_verdict conn_check(struct odlp_dev *d, const struct odlp_comm *l, uint32_t port,
				    uint32_t src, uint64_t inst)
{
	for (const struct conn_pending *cp = l->pend_head; cp; cp = cp->next)
		if (cp->peer_port == port && cp->peer_id == src && cp->peer_inst == inst)
			return CONN_DUP;
	for (const struct odlp_comm *x = d->comms; x; x = x->next)
		if (x->kind == K_RECV && x->peer_port == port && x->peer_id == src &&
		    x->peer_inst == inst && (x->state == S_READY || x->state == S_PENDING))
			return CONN_DUP;
	return l->npend >= PEND_MAX ? CONN_FULL : CONN_NEW;
}

/*
 * A message of the peer that is dropped as broken or out of place: counted
 * in errors, and logged only PEER_WARN_MAX times per device, so that a
 * broken or hostile peer cannot flood NCCL's log (d->mu held).
 */
#define PEER_WARN_MAX 16
#define PEER_WARN(d, fmt, ...)                                                                 \
	do {                                                                                   \
		STAT_ADD(errors, 1);                                                           \
		if ((d)->peer_warns < PEER_WARN_MAX) {                                         \
			WARN(fmt, ##__VA_ARGS__);                                              \
			if (++(d)->peer_warns == PEER_WARN_MAX)                                \
				WARN("device %s: %d messages of the peer dropped; more are only counted (statistics: errors)", \
				     (d)->name, PEER_WARN_MAX);                                \
		}                                                                              \
	} while (0)

/* A message from the peer's endpoint; `now` (CLOCK_MONOTONIC) for the keepalive. */
static void handle_msg(struct odlp_dev *d, const char *p, uint64_t len, uint64_t now)
{
	const struct wire_hdr *h = (const void *)p;
	struct odlp_comm *c;
	uint32_t sport;

	if (len < sizeof(*h) || h->magic != WIRE_MAGIC || sizeof(*h) + (uint64_t)h->len > len) {
		PEER_WARN(d, "device %s: malformed message (%llu bytes) dropped", d->name,
			  (unsigned long long)len);
		return;
	}
	sport = h->sport ? h->sport : d->port;
	d->peers[sport].last_rx_ns = now;
	c = find_comm(d, h->dst);
	/* a comm hears only from its peer's port (ids are per process) */
	if (c && c->kind != K_LISTEN && c->peer_port != sport)
		c = NULL;
	switch (h->type) {
	case M_PING: {
		struct wire_hdr pong = { .type = M_PONG, .total = g_instance };

		peer_instance(d, sport, h->total);
		queue_answer(d, sport, &pong);
		return;
	}
	case M_PONG:
		peer_instance(d, sport, h->total);
		return;
	case M_CONN: {
		struct conn_pending *cp;

		peer_instance(d, sport, h->total);

		if (!c || c->kind != K_LISTEN || c->nonce != h->nonce) {
			struct wire_hdr rej = { .type = M_REJ, .dst = h->src };

			queue_answer(d, sport, &rej);
			return;
		}
		switch (conn_check(d, c, sport, h->src, h->total)) {
		case CONN_NEW:
			break;
		case CONN_DUP:
			/* the same connect again: it was answered or will be */
			INFO("comm %u: connect of peer comm %u (port %u) repeated; ignored", c->id,
			     h->src, sport);
			STAT_ADD(errors, 1);
			return;
		case CONN_FULL: {
			struct wire_hdr rej = { .type = M_REJ, .dst = h->src };

			if (!c->pend_warned)
				WARN("comm %u: %d connects wait for accept(); refusing more (peer comm %u, port %u)",
				     c->id, c->npend, h->src, sport);
			c->pend_warned = true;
			STAT_ADD(errors, 1);
			queue_answer(d, sport, &rej);
			return;
		}
		}
		cp = calloc(1, sizeof(*cp));
		if (!cp) {
			mark_dead(d, -ENOMEM);
			return;
		}
		cp->peer_id = h->src;
		cp->peer_port = sport;
		cp->peer_inst = h->total;
		cp->group = h->off;
		if (c->pend_tail)
			c->pend_tail->next = cp;
		else
			c->pend_head = cp;
		c->pend_tail = cp;
		c->npend++;
		return;
	}
	case M_ACK:
		if (c && c->kind == K_SEND && c->state == S_PENDING) {
			if (h->idx && h->idx <= sizeof(struct wire_hdr)) {
				WARN("comm %u: the peer's staging slot of %u bytes holds no data; connect failed",
				     c->id, h->idx);
				STAT_ADD(errors, 1);
				c->state = S_FAILED;
				d->wake = true;
				/* the comm the peer accepted for it waits no more */
				struct wire_hdr cl = { .type = M_CLOSE, .dst = h->src, .src = h->dst };

				queue_ctrl(d, sport, &cl, NULL, 0);
				return;
			}
			c->peer_id = h->src;
			c->peer_inst = h->total;
			c->peer_slot = h->idx;
			c->state = S_READY;
		} else if (!c) {
			/* our connect was given up before its accept (a fused
			 * connect whose other rail failed): the comm the peer
			 * made for it is closed, not left waiting for data */
			struct wire_hdr cl = { .type = M_CLOSE, .dst = h->src, .src = h->dst };

			queue_answer(d, sport, &cl);
		}
		peer_instance(d, sport, h->total);
		return;
	case M_REJ:
		if (c && c->kind == K_SEND && c->state == S_PENDING)
			c->state = S_FAILED;
		return;
	case M_CTS: {
		const struct wire_cts_ent *ent = (const void *)(p + sizeof(*h));
		struct cts_ent *e;

		if (!c || c->kind != K_SEND || c->state != S_READY)
			return; /* comm closed locally: drop */
		if (h->idx < 1 || h->idx > MAX_RECVS || h->len != h->idx * sizeof(*ent) ||
		    c->cts_count == CTS_RING) {
			WARN("bad CTS on comm %u", c->id);
			c->state = S_FAILED;
			d->wake = true;
			return;
		}
		e = &c->cts[(c->cts_head + c->cts_count) % CTS_RING];
		memset(e, 0, sizeof(*e));
		e->seq = h->seq;
		e->n = (int)h->idx;
		for (int i = 0; i < e->n; i++) {
			e->tag[i] = ent[i].tag;
			e->key[i] = ent[i].key;
			e->size[i] = ent[i].size;
		}
		c->cts_count++;
		match_sends(c);
		return;
	}
	case M_DATA:
	case M_DERR: {
		struct odlp_req *r;

		if (!c || c->kind != K_RECV)
			return; /* closed locally: drop */
		r = find_recv_req(c, h->seq);
		if (!r || h->idx >= (uint32_t)r->n || r->rdone[h->idx]) {
			PEER_WARN(d, "comm %u: unexpected %s seq %u idx %u", c->id,
				  h->type == M_DATA ? "DATA" : "DERR", h->seq, h->idx);
			return;
		}
		if (r->rkey[h->idx]) {
			/* the sender went the staged way: withdraw the keyed
			 * receive (its completion only frees the slot) */
			d->krx[r->rks[h->idx]].r = NULL;
			odl_tb5_cancel_recv(d->h, r->rkey[h->idx]);
			r->rkey[h->idx] = 0;
		}
		r->rtotal[h->idx] = h->total;
		if (h->type == M_DERR) {
			r->err = ncclInvalidUsage;
			STAT_ADD(err_truncated, 1);
			entry_done(r, (int)h->idx);
			return;
		}
		if (!data_chunk_ok(h->off, h->len, h->total, r->rcap[h->idx],
				   r->rgot[h->idx])) {
			WARN("comm %u: bad DATA seq %u idx %u (offset %llu, %u bytes of %llu, have %llu, room %llu)",
			     c->id, h->seq, h->idx, (unsigned long long)h->off, h->len,
			     (unsigned long long)h->total, (unsigned long long)r->rgot[h->idx],
			     (unsigned long long)r->rcap[h->idx]);
			STAT_ADD(errors, 1);
			r->err = ncclInternalError;
			entry_done(r, (int)h->idx);
			return;
		}
		if (h->len) {
			dmabuf_sync(r->rmh[h->idx], DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE);
			memcpy(r->rdata[h->idx] + h->off, p + sizeof(*h), h->len);
			dmabuf_sync(r->rmh[h->idx], DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE);
		}
		r->rgot[h->idx] += h->len;
		STAT_ADD(rx_bytes, h->len);
		if (h->off + h->len == h->total)
			entry_done(r, (int)h->idx);
		return;
	}
	case M_CLOSE:
		if (c && c->peer_id == h->src && (c->kind == K_SEND || c->kind == K_RECV) &&
		    c->state == S_READY) {
			INFO("comm %u: peer comm %u closed", c->id, h->src);
			c->state = S_PEER_CLOSED;
			d->wake = true;
		}
		return;
	default:
		PEER_WARN(d, "device %s: unknown message type %u", d->name, h->type);
	}
}

/* A zero-copy send or keyed receive completed (d->mu held; `now` as in handle_msg). */
static void zc_complete(struct odlp_dev *d, const struct odl_tb5_completion *cp, uint64_t now)
{
	int slot = (int)(cp->cookie & KC_SLOT);
	struct odlp_req *r;

	if (slot >= KTAB)
		return;
	if (cp->cookie & KC_TX) {
		r = d->ktx[slot];
		d->ktx[slot] = NULL;
		d->ktx_busy[slot] = false;
		if (cp->status) {
			mark_dead(d, cp->status);
			return;
		}
		if (!r)
			return;
		STAT_ADD(tx_msgs, 1);
		STAT_ADD(zc_tx_bytes, r->ssize);
		req_done(r); /* buffer reusable */
		return;
	}
	r = d->krx[slot].r;
	int idx = d->krx[slot].idx;

	d->krx_busy[slot] = false;
	d->krx[slot].r = NULL;
	if (cp->status == -ECANCELED)
		return; /* withdrawn: the entry went the staged way */
	if (cp->status == -EMSGSIZE && r && !r->rdone[idx]) {
		/* the peer sent more than the CTS gave room for (the library
		 * dropped it, the link is fine): this receive fails, not the
		 * device with every comm on it */
		PEER_WARN(d, "comm %u: keyed message of %llu bytes for a receive of %llu dropped",
			  r->comm->id, (unsigned long long)cp->length,
			  (unsigned long long)r->rcap[idx]);
		r->rkey[idx] = 0;
		r->rtotal[idx] = cp->length;
		r->err = ncclRemoteError;
		entry_done(r, idx);
		return;
	}
	if (cp->status) {
		mark_dead(d, cp->status);
		return;
	}
	if (!r || r->rdone[idx])
		return;
	d->peers[r->comm->peer_port].last_rx_ns = now;
	r->rkey[idx] = 0;
	r->rzc[idx] = 1;
	r->rgot[idx] = cp->length;
	r->rtotal[idx] = cp->length;
	STAT_ADD(rx_bytes, cp->length);
	STAT_ADD(zc_rx_bytes, cp->length);
	entry_done(r, idx);
}

/* Reap completions and act on them. Caller holds poll_mu (not mu). */
static int dev_progress(struct odlp_dev *d, int timeout_ms)
{
	struct odl_tb5_completion comps[COMP_BATCH];
	uint64_t now = 0; /* when this batch arrived (keepalive), taken once */
	int n, rc;

	n = odl_tb5_poll(d->h, comps, COMP_BATCH, timeout_ms,
			 timeout_ms ? ODL_TB5_F_SLEEP : ODL_TB5_F_NONBLOCK);
	pthread_mutex_lock(&d->mu);
	if (n < 0 && n != -EAGAIN && n != -ETIMEDOUT)
		mark_dead(d, n);
	for (int i = 0; i < n; i++) {
		struct odl_tb5_completion *cp = &comps[i];
		uint32_t slot = (uint32_t)cp->cookie;

		if (!now && cp->op == ODL_TB5_OP_RECV && cp->status == 0)
			now = now_ns(CLOCK_MONOTONIC);
		if (cp->cookie & (KC_TX | KC_RX)) {
			zc_complete(d, cp, now);
			continue;
		}
		if (cp->op == ODL_TB5_OP_SEND) {
			if (slot < d->ntx)
				d->tx_free[d->ntx_free++] = slot;
			if (cp->status)
				mark_dead(d, cp->status);
			continue;
		}
		if (cp->status == 0) {
			handle_msg(d, d->rx_base + (uint64_t)slot * d->slot, cp->length, now);
		}
		else if (cp->status == -EMSGSIZE)
			WARN("device %s: oversized message (%llu bytes) dropped", d->name,
			     (unsigned long long)cp->length);
		else
			mark_dead(d, cp->status);
		if (!d->dead) {
			rc = odl_tb5_post_recv(d->h, d->rx_id, (uint64_t)slot * d->slot, d->slot, slot,
					       ODL_TB5_F_NONBLOCK);
			if (rc)
				mark_dead(d, rc);
		}
	}
	tx_pump(d);
	/* a batch of CTSs, TX slots coming back or messages that only moved
	 * data along changes nothing a caller tests: no wake-up for it */
	bool wake = d->wake || d->dead;

	d->wake = false;
	if (wake)
		d->gen++;
	pthread_mutex_unlock(&d->mu);
	if (wake)
		progress_notify();
	return n > 0 ? n : 0;
}

/* Opportunistic progress from API calls; never waits. */
static void try_progress(struct odlp_dev *d)
{
	if (pthread_mutex_trylock(&d->poll_mu) == 0) {
		dev_progress(d, 0);
		pthread_mutex_unlock(&d->poll_mu);
	}
}

static void *progress_thread(void *arg)
{
	struct odlp_dev *d = arg;

	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		uint64_t until = __atomic_load_n(&d->reap_until_ns, __ATOMIC_ACQUIRE);
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		int n;

		if (until > now && !d->dead) {
			/* a caller of test() reaps (caller_reap): stay out of
			 * its way, but keep the keepalive going */
			uint64_t at = until - now > (uint64_t)g_poll_ms * 1000000 ?
					      now + (uint64_t)g_poll_ms * 1000000 : until;
			struct timespec ts = ns_ts(at);

			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				;
			pthread_mutex_lock(&d->mu);
			keepalive(d);
			pthread_mutex_unlock(&d->mu);
			continue;
		}
		pthread_mutex_lock(&d->poll_mu);
		n = d->dead ? 0 : dev_progress(d, (int)g_poll_ms);
		pthread_mutex_unlock(&d->poll_mu);
		pthread_mutex_lock(&d->mu);
		keepalive(d);
		pthread_mutex_unlock(&d->mu);
		if (d->dead) {
			struct timespec ts = { g_poll_ms / 1000, (g_poll_ms % 1000) * 1000000 };

			nanosleep(&ts, NULL);
		} else if (n == 0) {
			STAT_ADD(idle_wakeups, 1);
			sched_yield();
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* devices */

static void fill_pci_path(struct odlp_dev *d)
{
	char link[256], real[PATH_MAX];
	const char *base;

	d->has_pci = false;
	if (strcmp(d->info.backend, "kernel") != 0)
		return;
	base = strrchr(d->info.name, '/');
	base = base ? base + 1 : d->info.name;
	static const char *classes[] = { "odl_tb5", "misc" };
	for (unsigned k = 0; k < sizeof(classes) / sizeof(classes[0]); k++) {
		snprintf(link, sizeof(link), "/sys/class/%s/%s/device", classes[k], base);
		if (!realpath(link, real))
			continue;
		/* walk up to the last PCI function (dddd:bb:dd.f) on the path: the NHI */
		char *p = real + strlen(real);
		while (p > real) {
			char *slash = p;
			while (slash > real && slash[-1] != '/')
				slash--;
			unsigned dom, bus, dev, fn;
			char tail;
			if (sscanf(slash, "%4x:%2x:%2x.%1x%c", &dom, &bus, &dev, &fn, &tail) == 4) {
				snprintf(d->pci, sizeof(d->pci), "%.*s", (int)(p - real), real);
				d->has_pci = true;
				return;
			}
			p = slash - 1;
			*p = 0;
		}
	}
}

static int dev_open(struct odlp_dev *d, const char *spec)
{
	struct odl_tb5_open_opts o;
	long chunk;
	int rc;

	snprintf(d->spec, sizeof(d->spec), "%s", spec);
	odl_tb5_open_opts_init(&o);
	/* kernel backend: batch SENDs/RECVs into one SUBMIT per pump (the
	 * library ignores it on shm and on drivers without SUBMIT) */
	d->batch = strncmp(spec, "shm:", 4) != 0 && env_long("ODL_TB5_RCCL_BATCH", 1, 0, 1);
	if (d->batch)
		o.flags |= ODL_TB5_OPEN_BATCH;
	chunk = env_long("ODL_TB5_RCCL_CHUNK", DEFAULT_CHUNK, 4096, 16L << 20);
	chunk = (chunk + 4095) & ~4095L;
	d->ntx = (uint32_t)env_long("ODL_TB5_RCCL_NTX", DEFAULT_NTX, 2, 256);
	d->nrx = (uint32_t)env_long("ODL_TB5_RCCL_NRX", DEFAULT_NRX, 2, 256);
	if (strncmp(spec, "shm:", 4) != 0) {
		/* kernel backend: each staging area must fit in one driver buffer
		 * (opts.ring_bytes, default 8 MiB, at most 64 MiB) */
		uint64_t need = (uint64_t)chunk * (d->ntx > d->nrx ? d->ntx : d->nrx);

		if (need > (64ull << 20)) {
			d->ntx = d->ntx * (uint64_t)chunk > (64ull << 20) ? (uint32_t)((64ull << 20) / chunk) : d->ntx;
			d->nrx = d->nrx * (uint64_t)chunk > (64ull << 20) ? (uint32_t)((64ull << 20) / chunk) : d->nrx;
			need = 64ull << 20;
		}
		if (need > (8ull << 20))
			o.ring_bytes = need;
	}
	/* the port: ODL_TB5_RCCL_PORT; else the first free one of AUTO_PORTS
	 * from DEFAULT_PORT (each process of a machine gets its own), starting
	 * at the one this device had before a revival */
	for (uint32_t i = 0, first = d->port ? d->port : DEFAULT_PORT; i < (g_port ? 1 : AUTO_PORTS);
	     i++) {
		o.port = g_port ? g_port : DEFAULT_PORT + (first - DEFAULT_PORT + i) % AUTO_PORTS;
		rc = odl_tb5_open(spec, &o, &d->h);
		if (rc != -EBUSY && rc != -EADDRINUSE)
			break;
	}
	if (rc < 0) {
		if (rc != -EBUSY && rc != -EADDRINUSE)
			INFO("cannot open device '%s' port %u: %s", spec, o.port, odl_tb5_strerror(rc));
		else if (g_port)
			WARN("device '%s': port %u (ODL_TB5_RCCL_PORT) is held by another process; unset ODL_TB5_RCCL_PORT to let each process of the machine take a free port",
			     spec, g_port);
		else
			WARN("device '%s': ports %u..%u are all held by other processes", spec,
			     DEFAULT_PORT, DEFAULT_PORT + AUTO_PORTS - 1);
		return rc;
	}
	d->port = o.port;
	if (d->index >= 0 && d->index < MAX_DEVS)
		g_prev_port[d->index] = o.port;
	rc = odl_tb5_info(d->h, &d->info);
	if (rc < 0)
		goto fail;
	if (d->info.max_msg_size && (uint64_t)chunk > d->info.max_msg_size)
		chunk = (long)d->info.max_msg_size;
	d->slot = (uint32_t)chunk;
	if (d->info.tx_depth && d->ntx > d->info.tx_depth)
		d->ntx = d->info.tx_depth;
	if (d->info.rx_depth && d->nrx > d->info.rx_depth)
		d->nrx = d->info.rx_depth;
	void *a;
	rc = odl_tb5_buf_alloc(d->h, (size_t)d->slot * d->ntx, ODL_TB5_BUF_SEND, &d->tx_id, &a);
	if (rc < 0)
		goto fail;
	d->tx_base = a;
	rc = odl_tb5_buf_alloc(d->h, (size_t)d->slot * d->nrx, ODL_TB5_BUF_RECV, &d->rx_id, &a);
	if (rc < 0)
		goto fail;
	d->rx_base = a;
	d->tx_free = calloc(d->ntx, sizeof(*d->tx_free));
	if (!d->tx_free) {
		rc = -ENOMEM;
		goto fail;
	}
	d->ntx_free = 0;
	for (uint32_t i = 0; i < d->ntx; i++)
		d->tx_free[d->ntx_free++] = d->ntx - 1 - i;
	for (uint32_t i = 0; i < d->nrx; i++) {
		rc = odl_tb5_post_recv(d->h, d->rx_id, (uint64_t)i * d->slot, d->slot, i,
				       ODL_TB5_F_NONBLOCK);
		if (rc < 0)
			goto fail;
	}
	if (!d->locks_init) {
		pthread_mutex_init(&d->mu, NULL);
		pthread_mutex_init(&d->poll_mu, NULL);
		d->locks_init = true;
	}
	if (!d->next_id)
		d->next_id = 1; /* comm ids stay unique across revivals */
	d->next_key = 1;
	d->open_gen++;
	d->epoch = __atomic_add_fetch(&g_epoch, 1, __ATOMIC_RELAXED);
	memset(d->peers, 0, sizeof(d->peers));
	d->zc = env_long("ODL_TB5_RCCL_ZEROCOPY", 1, 0, 1) != 0;
	d->urgent_cts = env_long("ODL_TB5_RCCL_URGENT_CTS", 1, 0, 1) != 0;

	/* properties */
	if (strcmp(d->info.backend, "kernel") == 0) {
		const char *b = strrchr(d->info.name, '/');
		snprintf(d->name, sizeof(d->name), "%s", b ? b + 1 : d->info.name);
	} else {
		snprintf(d->name, sizeof(d->name), "odl_tb5_%s", d->info.name);
	}
	uint64_t g = 0;
	for (int i = 0; i < 16; i++)
		g = (g << 8 | g >> 56) ^ d->info.peer_uuid[i];
	d->guid = g ? g : (uint64_t)d->index + 1;
	uint64_t mbps = (uint64_t)d->info.link_speed_gbps * (d->info.link_lanes ? d->info.link_lanes : 1) * 1000;
	mbps = (uint64_t)env_long("ODL_TB5_RCCL_SPEED_MBPS", (long)(mbps ? mbps : 10000), 1, 1L << 30);
	d->speed = (int)(mbps > 0x7fffffff ? 0x7fffffff : mbps);
	d->latency = strcmp(d->info.backend, "kernel") == 0 ? 10.0f : 2.0f;
	if (d->open_gen == 1) {
		memcpy(d->peer_uuid, d->info.peer_uuid, 16);
		d->by_uuid = strcmp(d->info.backend, "kernel") == 0;
	}
	fill_pci_path(d);
	INFO("device %d: %s (%s) port %u speed %d Mbps pci %s chunk %u tx %u rx %u", d->index,
	     d->name, d->info.backend, d->port, d->speed, d->has_pci ? d->pci : "(none)", d->slot,
	     d->ntx, d->nrx);
	return 0;
fail:
	INFO("device '%s' setup failed: %s", spec, odl_tb5_strerror(rc));
	odl_tb5_close(d->h);
	d->h = NULL;
	free(d->tx_free);
	d->tx_free = NULL;
	d->ntx_free = 0;
	return rc;
}

static void dev_start(struct odlp_dev *d)
{
	d->stop = 0;
	if (pthread_create(&d->thr, NULL, progress_thread, d) == 0)
		d->thr_started = true;
	else
		WARN("device %s: no progress thread; progress from test() only", d->name);
}

static void free_comm(struct odlp_comm *c)
{
	struct conn_pending *cp = c->pend_head;

	while (cp) {
		struct conn_pending *n = cp->next;
		free(cp);
		cp = n;
	}
	c->magic = 0;
	free(c->reqs);
	free(c);
}

/* Forget the staging and zero-copy state of a closed library handle. */
static void dev_reset_state(struct odlp_dev *d)
{
	while (d->cq_head)
		cq_pop(d);
	d->peer_warns = 0;
	d->job_head = d->job_tail = NULL;
	d->zq_head = d->zq_tail = NULL;
	memset(d->krx, 0, sizeof(d->krx));
	memset(d->krx_busy, 0, sizeof(d->krx_busy));
	memset(d->ktx, 0, sizeof(d->ktx));
	memset(d->ktx_busy, 0, sizeof(d->ktx_busy));
	d->ktx_hint = d->krx_hint = 0;
	free(d->tx_free);
	d->tx_free = NULL;
	d->ntx_free = 0;
}

static void dev_stop_thread(struct odlp_dev *d)
{
	if (d->thr_started) {
		__atomic_store_n(&d->stop, 1, __ATOMIC_RELEASE);
		pthread_join(d->thr, NULL);
		d->thr_started = false;
	}
}

/* Close the library handle and forget what was queued on it. */
static void dev_close_link(struct odlp_dev *d)
{
	odl_tb5_close(d->h);
	d->h = NULL;
	dev_reset_state(d);
}

static void dev_teardown(struct odlp_dev *d)
{
	if (!d->locks_init)
		return;
	dev_stop_thread(d);
	if (!d->h)
		goto out; /* a revival that found no link */
	/* give queued messages (last chunks, CLOSE) a bounded chance to leave */
	for (int i = 0; i < 2000 && !d->dead; i++) {
		unsigned int s = 0, r = 0;

		pthread_mutex_lock(&d->poll_mu);
		dev_progress(d, 0);
		pthread_mutex_unlock(&d->poll_mu);
		if (odl_tb5_pending(d->h, &s, &r) < 0 ||
		    (s == 0 && !d->cq_head && !d->job_head && !d->zq_head) ||
		    odl_tb5_state(d->h) != ODL_TB5_STATE_CONNECTED)
			break;
		struct timespec ts = { 0, 500000 };
		nanosleep(&ts, NULL);
	}
	dev_close_link(d);
out:
	while (d->comms) {
		struct odlp_comm *c = d->comms;
		d->comms = c->next;
		free_comm(c);
	}
	pthread_mutex_destroy(&d->mu);
	pthread_mutex_destroy(&d->poll_mu);
	d->locks_init = false;
}

/*
 * The spec that reaches the device's first peer again, or false: not back
 * (yet). Kernel backend: the device connected to the same peer UUID, whose
 * node may have another index after a replug; otherwise the spec as given.
 */
static bool revive_spec(const struct odlp_dev *d, char *spec, size_t len)
{
	struct odl_tb5_info infos[MAX_DEVS];
	int n;

	if (!d->by_uuid) {
		snprintf(spec, len, "%s", d->spec);
		return true;
	}
	n = odl_tb5_list(infos, MAX_DEVS);
	for (int i = 0; i < n && i < MAX_DEVS; i++)
		if (infos[i].state == ODL_TB5_STATE_CONNECTED &&
		    memcmp(infos[i].peer_uuid, d->peer_uuid, 16) == 0) {
			snprintf(spec, len, "%d", infos[i].index);
			return true;
		}
	return false;
}

/*
 * A device whose link failed (unplugged cable, peer gone) comes back on the
 * next listen/connect once all of its comms are closed (NCCL closes them
 * when it aborts a communicator) and its peer is reachable again: the
 * library handle is closed and opened anew, in the same process.
 * Registrations pinned through the old handle fall back to staged copies.
 * 0, or an error: still failed (the caller reports ncclSystemError).
 */
static int dev_revive(struct odlp_dev *d)
{
	static pthread_mutex_t revive_mu = PTHREAD_MUTEX_INITIALIZER;
	char spec[sizeof(d->spec)];
	int rc, busy;

	pthread_mutex_lock(&revive_mu);
	pthread_mutex_lock(&d->mu);
	busy = d->dead ? d->ncomms : -1;
	pthread_mutex_unlock(&d->mu);
	if (busy != 0) {
		pthread_mutex_unlock(&revive_mu);
		if (busy > 0)
			INFO("device %s: link failed, %d comm(s) still open: close them to reconnect",
			     d->name, busy);
		return busy > 0 ? -EBUSY : 0;
	}
	dev_stop_thread(d);
	pthread_mutex_lock(&d->poll_mu);
	pthread_mutex_lock(&d->mu);
	/* let go of the failed link at once: its device may only be removed
	 * (and the replugged one appear) once nobody holds it */
	if (d->h)
		dev_close_link(d);
	rc = revive_spec(d, spec, sizeof(spec)) ? dev_open(d, spec) : -ENODEV;
	if (rc == 0 && memcmp(d->info.peer_uuid, d->peer_uuid, 16) != 0) {
		INFO("device %s: now reaches another peer; not revived", d->name);
		dev_close_link(d);
		rc = -ENODEV;
	}
	if (rc == 0) {
		d->dead = false;
		d->dead_err = 0;
		STAT_ADD(revivals, 1);
		INFO("device %s: link back (open %u)", d->name, d->open_gen);
	}
	pthread_mutex_unlock(&d->mu);
	pthread_mutex_unlock(&d->poll_mu);
	dev_start(d);
	pthread_mutex_unlock(&revive_mu);
	return rc;
}

/* what NCCL holds is a token, never an address: a context finalized
 * twice (or kept after its finalize) cannot hit a later one that malloc
 * placed at the same address */
#define CTX_TOKEN_TAG (0x4c43ull << 48) /* "LC" */
struct odlp_ctx {
	uint64_t token;
	struct odlp_ctx *next;
};
static struct odlp_ctx *g_ctxs; /* under g_mu */
static uint64_t g_ctx_seq;

/* close every device, stop their threads, leave the statistics (g_mu held) */
static void plugin_down_locked(void)
{
	for (int i = 0; i < g_ndev; i++)
		dev_teardown(&g_devs[i]);
	g_ndev = 0;
	g_inited = false;
	stats_close();
}

/* connections (send, receive, listen) open on the devices (g_mu held) */
static int open_comms_locked(void)
{
	int open = 0;

	for (int i = 0; i < g_ndev; i++) {
		if (!g_devs[i].locks_init)
			continue;
		pthread_mutex_lock(&g_devs[i].mu);
		open += g_devs[i].ncomms;
		pthread_mutex_unlock(&g_devs[i].mu);
	}
	return open;
}

__attribute__((destructor)) static void plugin_fini(void)
{
	/* a child forked after init that leaves by exit(): it shares the
	 * parent's devices and statistics slot but has none of its threads
	 * (joining them would hang, and a lock held at the fork stays held):
	 * it leaves everything alone */
	pid_t ipid = __atomic_load_n(&g_init_pid, __ATOMIC_ACQUIRE);

	if (ipid && getpid() != ipid)
		return;
	pthread_mutex_lock(&g_mu);
	if (open_comms_locked()) {
		/* exit() with connections open (no ncclCommDestroy): NCCL's
		 * proxy thread may still be testing them. Only this plugin's
		 * threads stop; the comms, their devices' handles and locks
		 * and the statistics stay until the process is gone */
		for (int i = 0; i < g_ndev; i++)
			if (g_devs[i].locks_init)
				dev_stop_thread(&g_devs[i]);
	} else {
		plugin_down_locked();
		while (g_ctxs) { /* v11+ contexts never finalized */
			struct odlp_ctx *c = g_ctxs;

			g_ctxs = c->next;
			free(c);
		}
	}
	pthread_mutex_unlock(&g_mu);
	/* threads that outlive a dlclose must not run efd_close, unmapped by
	 * then, when they end (this thread's eventfd is closed here; other
	 * threads' stay open until they end: one descriptor each) */
	if (g_efd_key_ok) {
		void *v = pthread_getspecific(g_efd_key);

		if (v)
			efd_close(v);
		pthread_key_delete(g_efd_key);
		g_efd_key_ok = false;
	}
}

static ncclResult_t core_init(ncclDebugLogger_t logger)
{
	ncclResult_t res = ncclSuccess;
	char specs[1024];
	const char *e;

	/* a child forked after init has the parent's devices and none of
	 * its threads, and a lock held at the fork stays held: it must exec
	 * and initialise anew (checked before any lock is taken) */
	pid_t ipid = __atomic_load_n(&g_init_pid, __ATOMIC_ACQUIRE);

	if (ipid && ipid != getpid()) {
		if (logger)
			g_log = logger;
		WARN("init in a process forked from one that ran init (pid %d): not supported, exec and initialise anew",
		     (int)ipid);
		return ncclInvalidUsage;
	}
	pthread_mutex_lock(&g_mu);
	if (logger)
		g_log = logger;
	if (g_inited)
		goto out;
	g_instance = rnd64();
	__atomic_store_n(&g_init_pid, getpid(), __ATOMIC_RELEASE);
	g_port = (uint32_t)env_long("ODL_TB5_RCCL_PORT", 0, 0, ODL_TB5_MAX_PORT);
	g_test_wait_us = env_long("ODL_TB5_RCCL_TEST_WAIT_US", DEFAULT_TEST_WAIT_US, 0, 100000);
	g_test_connect_step = (int)env_long("ODL_TB5_RCCL_TEST_CONNECT_STEP", 0, 0, 1);
	g_caller_reap = env_long("ODL_TB5_RCCL_CALLER_REAP", 1, 0, 1) != 0;
	g_busy_poll_us = busy_poll_env();
	g_dmabuf_adv = env_long("ODL_TB5_RCCL_DMABUF", 0, 0, 1) != 0;
	g_peer_timeout_ms = env_long("ODL_TB5_RCCL_PEER_TIMEOUT_MS", DEFAULT_PEER_TIMEOUT_MS, 0,
				     3600000);
	g_poll_ms = env_long(ODL_TB5_RCCL_POLL_MS_ENV, ODL_TB5_RCCL_POLL_MS_DEFAULT, 1,
			     ODL_TB5_RCCL_POLL_MS_MAX);
	specs[0] = 0;
	if ((e = getenv("ODL_TB5_RCCL_DEVICES")) && *e)
		snprintf(specs, sizeof(specs), "%s", e);
	else if ((e = getenv("ODL_TB5_DEVICE")) && *e)
		snprintf(specs, sizeof(specs), "%s", e);
	if (specs[0]) {
		char *save = NULL;
		for (char *t = strtok_r(specs, ",", &save); t && g_ndev < MAX_DEVS;
		     t = strtok_r(NULL, ",", &save)) {
			struct odlp_dev *d = &g_devs[g_ndev];
			memset(d, 0, sizeof(*d));
			d->index = g_ndev;
			d->port = g_prev_port[g_ndev];
			if (dev_open(d, t) == 0)
				g_ndev++;
		}
	} else {
		struct odl_tb5_info infos[MAX_DEVS];
		int n = odl_tb5_list(infos, MAX_DEVS);

		if (n < 0)
			INFO("odl_tb5_list: %s", odl_tb5_strerror(n));
		for (int i = 0; i < n && i < MAX_DEVS; i++) {
			struct odlp_dev *d = &g_devs[g_ndev];
			char spec[32];

			if (infos[i].state != ODL_TB5_STATE_CONNECTED)
				continue; /* one device per connected peer */
			snprintf(spec, sizeof(spec), "%d", infos[i].index);
			memset(d, 0, sizeof(*d));
			d->index = g_ndev;
			d->port = g_prev_port[g_ndev];
			if (dev_open(d, spec) == 0)
				g_ndev++;
		}
	}
	if (g_ndev == 0) {
		INFO("no usable odl_tb5 device (set ODL_TB5_DEVICE, or connect a TB5 peer)");
		res = ncclSystemError;
		goto out;
	}
	for (int i = 0; i < g_ndev; i++)
		dev_start(&g_devs[i]);
	stats_open();
	g_inited = true;
	INFO("initialised, %d device(s), library %u.%u", g_ndev, odl_tb5_version() >> 16,
	     odl_tb5_version() & 0xffff);
out:
	pthread_mutex_unlock(&g_mu);
	return res;
}

static ncclResult_t core_devices(int *ndev)
{
	if (!ndev)
		return fail(ncclInternalError);
	if (!g_inited)
		return fail(ncclInternalError);
	pthread_mutex_lock(&g_mu);
	*ndev = g_ndev + g_nvdev; /* fused devices (makeVDevice) follow */
	pthread_mutex_unlock(&g_mu);
	return ncclSuccess;
}

static struct odlp_dev *get_dev(int dev)
{
	if (!g_inited || dev < 0 || dev >= g_ndev)
		return NULL;
	return &g_devs[dev];
}

static ncclResult_t core_props(int dev, ncclNetProperties_v7_t *p)
{
	struct odlp_dev *d = get_dev(dev);

	if (!d && p && vdev_physical(dev) >= 0)
		return v_props(dev, p);
	if (!d || !p)
		return fail(ncclInternalError);
	memset(p, 0, sizeof(*p));
	p->name = d->name;
	p->pciPath = d->has_pci ? d->pci : NULL;
	p->guid = d->guid;
	p->ptrSupport = NCCL_PTR_HOST | (g_dmabuf_adv ? NCCL_PTR_DMABUF : 0);
	p->speed = d->speed;
	p->port = (int)d->port;
	p->latency = d->latency;
	p->maxComms = MAX_COMMS;
	p->maxRecvs = MAX_RECVS;
	p->netDeviceType = NCCL_NET_DEVICE_HOST;
	p->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
	return ncclSuccess;
}

/* ------------------------------------------------------------------ */
/* connections */

static struct odlp_comm *new_comm(struct odlp_dev *d, enum comm_kind k)
{
	struct odlp_comm *c;

	if (d->ncomms >= MAX_COMMS * 2)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->magic = COMM_MAGIC;
	c->kind = k;
	c->dev = d;
	c->id = d->next_id++;
	if (d->next_id == 0)
		d->next_id = 1;
	if (k != K_LISTEN) {
		c->nreqs = k == K_SEND ? SEND_REQS : RECV_REQS;
		c->reqs = calloc((size_t)c->nreqs, sizeof(*c->reqs));
		if (!c->reqs) {
			free(c);
			return NULL;
		}
		for (int i = 0; i < c->nreqs; i++) {
			c->reqs[i].magic = REQ_MAGIC;
			c->reqs[i].comm = c;
		}
	}
	c->next = d->comms;
	d->comms = c;
	d->ncomms++;
	return c;
}

static void unlink_comm(struct odlp_dev *d, struct odlp_comm *c)
{
	for (struct odlp_comm **pp = &d->comms; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			d->ncomms--;
			return;
		}
}

static ncclResult_t core_listen(int dev, void *handle, void **listenComm)
{
	struct odlp_dev *d = get_dev(dev);
	struct odl_handle *hd = handle;
	struct odlp_comm *c;

	if (listenComm)
		*listenComm = NULL;
	if (!d && handle && listenComm && vdev_physical(dev) >= 0)
		return v_listen(dev, handle, listenComm);
	if (!d || !handle || !listenComm)
		return fail(ncclInternalError);
	if (__atomic_load_n(&d->dead, __ATOMIC_ACQUIRE))
		dev_revive(d);
	pthread_mutex_lock(&d->mu);
	if (d->dead) {
		pthread_mutex_unlock(&d->mu);
		return fail(ncclSystemError);
	}
	c = new_comm(d, K_LISTEN);
	if (!c) {
		pthread_mutex_unlock(&d->mu);
		return fail(ncclSystemError);
	}
	c->nonce = rnd64();
	c->state = S_READY;
	memset(hd, 0, NCCL_NET_HANDLE_MAXSIZE);
	hd->magic = HANDLE_MAGIC;
	hd->version = HANDLE_VERSION;
	hd->len = sizeof(*hd);
	hd->instance = g_instance;
	memcpy(hd->listener_uuid, d->info.local_uuid, 16);
	hd->port = d->port;
	hd->listen_id = c->id;
	hd->listen_nonce = c->nonce;
	pthread_mutex_unlock(&d->mu);
	STAT_ADD(op_listen, 1);
	*listenComm = c;
	return ncclSuccess;
}

static bool valid_comm(void *p, enum comm_kind k)
{
	struct odlp_comm *c = p;

	return c && c->magic == COMM_MAGIC && c->kind == k;
}

/*
 * The device, other than skip, whose peer controller's UUID begins with the
 * n bytes at uuid (its whole UUID to full unless NULL); NULL: none. refresh:
 * ask the library first where a device's peer is not known yet.
 */
static struct odlp_dev *dev_reaching(const uint8_t *uuid, size_t n, const struct odlp_dev *skip,
				     bool refresh, uint8_t *full)
{
	static const uint8_t zero[16];

	for (int i = 0; i < g_ndev; i++) {
		struct odlp_dev *e = &g_devs[i];
		bool match;

		if (e == skip)
			continue;
		pthread_mutex_lock(&e->mu);
		if (refresh && !e->dead && memcmp(e->info.peer_uuid, zero, 16) == 0)
			odl_tb5_info(e->h, &e->info); /* the peer may have attached since */
		match = memcmp(e->info.peer_uuid, uuid, n) == 0;
		if (match && full)
			memcpy(full, e->info.peer_uuid, 16);
		pthread_mutex_unlock(&e->mu);
		if (match)
			return e;
	}
	return NULL;
}

/*
 * Several cables to one peer machine (one controller per cable on each
 * side) are several devices, and the two machines number them in the order
 * their links came up: device 0 here need not be the cable to the peer's
 * device 0. A connect goes over the device that reaches the controller the
 * listener is on (its UUID is in the handle), whichever device it was asked
 * for; d itself when d reaches it, or when no device does (the caller
 * refuses the handle) or d's peer is not known yet.
 */
static struct odlp_dev *route_dev(struct odlp_dev *d, const uint8_t *listener_uuid)
{
	static const uint8_t zero[16];
	struct odlp_dev *e;
	bool here;

	pthread_mutex_lock(&d->mu);
	here = memcmp(d->info.peer_uuid, zero, 16) == 0 ||
	       memcmp(d->info.peer_uuid, listener_uuid, 16) == 0;
	pthread_mutex_unlock(&d->mu);
	if (here)
		return d;
	e = dev_reaching(listener_uuid, 16, d, false, NULL);
	return e ? e : d;
}

/*
 * Where connect's comm c (staged in handle hd) stands, d->mu held: ready,
 * handed over in *sendComm; refused, closed by the peer before we handed it
 * over (it accepted and closed at once) or the link down: gone, an error;
 * else still waiting for the peer's answer (ncclSuccess, *sendComm NULL).
 */
static ncclResult_t connect_done(struct odlp_dev *d, struct odlp_comm *c, struct odl_handle *hd,
				 void **sendComm)
{
	bool closed = c->state == S_PEER_CLOSED && !d->dead;

	if (c->state == S_READY) {
		hd->stage_cookie = 0;
		hd->stage_comm = 0;
		*sendComm = c;
		STAT_ADD(op_connect, 1);
		return ncclSuccess;
	}
	if (c->state != S_FAILED && !closed && !d->dead)
		return ncclSuccess;
	hd->stage_cookie = 0;
	hd->stage_comm = 0;
	unlink_comm(d, c);
	free_comm(c);
	if (closed)
		WARN("connect: the peer accepted and closed its side before the connect completed");
	else
		WARN("connect: refused by the peer or link down");
	return fail(d->dead ? ncclSystemError : ncclRemoteError);
}

/* the comm connect staged in handle hd on d (d->mu held), or NULL */
static struct odlp_comm *staged_comm(struct odlp_dev *d, const struct odl_handle *hd)
{
	if (hd->stage_cookie != g_instance)
		return NULL;
	for (struct odlp_comm *x = d->comms; x; x = x->next)
		if ((uintptr_t)x == hd->stage_comm && x->kind == K_SEND &&
		    x->handle_cookie == hd->listen_nonce)
			return x;
	return NULL;
}

static ncclResult_t core_connect(int dev, void *handle, void **sendComm)
{
	struct odlp_dev *d = get_dev(dev), *asked = d;
	struct odl_handle *hd = handle;
	struct odlp_comm *c = NULL;
	ncclResult_t res = ncclSuccess;

	if (sendComm)
		*sendComm = NULL;
	if (!d) /* a fused device: a plain handle goes over one cable */
		d = asked = get_dev(vdev_physical(dev));
	if (!d || !handle || !sendComm)
		return fail(ncclInternalError);
	if (hd->magic == VHANDLE_MAGIC) /* the listener fused its cables */
		return v_connect(dev, handle, sendComm);
	if (hd->magic != HANDLE_MAGIC || hd->version != HANDLE_VERSION || hd->len != sizeof(*hd) ||
	    hd->port < 1 || hd->port > ODL_TB5_MAX_PORT) {
		WARN("connect: not an odl_tb5 v%u handle (magic %llx len %u port %u)", HANDLE_VERSION,
		     (unsigned long long)hd->magic, hd->len, hd->port);
		return fail(ncclInvalidUsage);
	}
	if (hd->instance == g_instance) {
		WARN("connect: self-connection within one process is not supported");
		return fail(ncclInvalidUsage);
	}
	d = route_dev(d, hd->listener_uuid);
	if (__atomic_load_n(&d->dead, __ATOMIC_ACQUIRE) && hd->stage_cookie != g_instance)
		dev_revive(d);
	pthread_mutex_lock(&d->mu);
	c = staged_comm(d, hd);
	if (!c) {
		static const uint8_t zero[16];
		if (memcmp(d->info.peer_uuid, zero, 16) == 0)
			odl_tb5_info(d->h, &d->info); /* peer may have attached since */
		if (memcmp(d->info.peer_uuid, zero, 16) != 0 &&
		    memcmp(d->info.peer_uuid, hd->listener_uuid, 16) != 0) {
			WARN("connect: handle is from a peer that no device reaches (asked for device %d)", dev);
			res = fail(ncclInvalidUsage);
			goto out;
		}
		if (d->dead) {
			res = fail(ncclSystemError);
			goto out;
		}
		if (hd->port != d->port && !(d->info.features & ODL_TB5_FEAT_PORTS)) {
			WARN("connect: the listener is on port %u, this process on %u, and the %s backend cannot send to another port: give both the same ODL_TB5_RCCL_PORT",
			     hd->port, d->port, d->info.backend);
			res = fail(ncclInvalidUsage);
			goto out;
		}
		c = new_comm(d, K_SEND);
		if (!c) {
			res = fail(ncclSystemError);
			goto out;
		}
		if (d != asked)
			INFO("connect on device %d (%s): the listener is on the cable of device %d (%s); connecting there",
			     dev, asked->name, d->index, d->name);
		c->state = S_PENDING;
		c->peer_port = hd->port;
		c->handle_cookie = hd->listen_nonce;
		struct wire_hdr h = {
			.type = M_CONN, .dst = hd->listen_id, .src = c->id, .nonce = hd->listen_nonce,
			.total = g_instance, .off = hd->group,
		};
		queue_ctrl(d, c->peer_port, &h, NULL, 0);
		tx_pump(d);
		hd->stage_cookie = g_instance;
		hd->stage_comm = (uintptr_t)c;
	}
	res = connect_done(d, c, hd, sendComm);
out:
	pthread_mutex_unlock(&d->mu);
	if (res == ncclSuccess && !*sendComm)
		try_progress(d);
	return res;
}

/*
 * Give up a connect that core_connect started on handle hd and has not
 * handed over (a fused connect whose other rail failed): its comm goes,
 * whatever state it reached (a ready one tells the peer CLOSE; the peer's
 * ACK for one still pending is answered with CLOSE by handle_msg). d is
 * the device connect was asked for; the comm is on the one route_dev chose.
 */
static ncclResult_t close_comm(void *comm, enum comm_kind k);

static void connect_abandon(struct odlp_dev *d, struct odl_handle *hd)
{
	struct odlp_comm *c = NULL;

	if (hd->stage_cookie != g_instance)
		return;
	if (d) {
		/* where core_connect put it */
		d = route_dev(d, hd->listener_uuid);
		pthread_mutex_lock(&d->mu);
		c = staged_comm(d, hd);
		pthread_mutex_unlock(&d->mu);
	}
	hd->stage_cookie = 0;
	hd->stage_comm = 0;
	if (c)
		close_comm(c, K_SEND);
}

static ncclResult_t core_accept(void *listenComm, void **recvComm)
{
	struct odlp_comm *l = listenComm;
	struct odlp_dev *d;
	ncclResult_t res = ncclSuccess;

	if (recvComm)
		*recvComm = NULL;
	if (is_vcomm(l) && recvComm)
		return v_accept(l, recvComm);
	if (!valid_comm(l, K_LISTEN) || !recvComm)
		return fail(ncclInternalError);
	d = l->dev;
	try_progress(d);
	pthread_mutex_lock(&d->mu);
	if (d->dead) {
		res = fail(ncclSystemError);
	} else if (l->pend_head) {
		struct conn_pending *cp = l->pend_head;
		struct odlp_comm *c = new_comm(d, K_RECV);

		if (!c) {
			res = fail(ncclSystemError);
			goto out;
		}
		l->pend_head = cp->next;
		if (!l->pend_head)
			l->pend_tail = NULL;
		l->npend--;
		c->peer_id = cp->peer_id;
		c->peer_port = cp->peer_port;
		c->peer_inst = cp->peer_inst;
		c->peer_group = cp->group;
		c->state = S_READY;
		free(cp);
		/* idx: our staging slot, the largest DATA message we take */
		struct wire_hdr h = { .type = M_ACK, .dst = c->peer_id, .src = c->id,
				      .idx = d->slot, .total = g_instance };
		queue_ctrl(d, c->peer_port, &h, NULL, 0);
		tx_pump(d);
		*recvComm = c;
		STAT_ADD(op_accept, 1);
	}
out:
	pthread_mutex_unlock(&d->mu);
	return res;
}

static ncclResult_t close_comm(void *comm, enum comm_kind k)
{
	struct odlp_comm *c = comm;
	struct prof_done *pdn = NULL;
	int pdn_n = 0;
	struct odlp_dev *d;

	if (is_vcomm(c))
		return v_close(c, k);
	if (!valid_comm(c, k))
		return fail(ncclInternalError);
	d = c->dev;
	pthread_mutex_lock(&d->mu);
	if (k == K_LISTEN) {
		for (struct conn_pending *cp = c->pend_head; cp; cp = cp->next) {
			struct wire_hdr h = { .type = M_REJ, .dst = cp->peer_id };
			queue_ctrl(d, cp->peer_port, &h, NULL, 0);
		}
	} else {
		/* requests still open: their profiler events end here */
		int open = 0;

		for (int i = 0; i < c->nreqs; i++)
			open += c->reqs[i].in_use && c->reqs[i].nprof;
		if (open && !(pdn = calloc((size_t)open, sizeof(*pdn))))
			WARN("closing comm %u: no memory to end its profiler events", c->id);
		for (int i = 0; pdn && i < c->nreqs; i++)
			if (c->reqs[i].in_use && c->reqs[i].nprof)
				prof_take(&c->reqs[i], ODL_TB5_PROFILE_CLOSED, &pdn[pdn_n++]);
		jobs_remove_comm(d, c);
		if (c->state == S_READY && !d->dead) {
			struct wire_hdr h = { .type = M_CLOSE, .dst = c->peer_id, .src = c->id };
			queue_ctrl(d, c->peer_port, &h, NULL, 0);
		}
	}
	unlink_comm(d, c);
	free_comm(c);
	tx_pump(d);
	pthread_mutex_unlock(&d->mu);
	for (int i = 0; i < pdn_n; i++)
		prof_stop(&pdn[i]);
	free(pdn);
	STAT_ADD(op_close, 1);
	return ncclSuccess;
}

/* ------------------------------------------------------------------ */
/* memory registration (host memory only) */

/*
 * Zero copy for a registration: the library pins the memory in the driver
 * (REG_DIRECT); where it cannot (no keys on this link, lock limit, no free
 * handle) the registration works the staged way.
 */
/* Keyed operations (zero copy) on this link? d->mu held. */
static bool zc_keyed(struct odlp_dev *d)
{
	if (!d->dead && !(d->info.features & ODL_TB5_FEAT_KEYED))
		odl_tb5_info(d->h, &d->info); /* the peer may have connected since */
	return !d->dead && (d->info.features & ODL_TB5_FEAT_KEYED);
}

static void zc_register(struct odlp_dev *d, struct odlp_mr *mr)
{
	int rc;

	if (!d->zc || !mr->size)
		return;
	pthread_mutex_lock(&d->mu);
	if (!zc_keyed(d)) {
		pthread_mutex_unlock(&d->mu);
		return;
	}
	rc = odl_tb5_buf_register_flags(d->h, mr->base, mr->size, ODL_TB5_REG_DIRECT,
					&mr->lib_id);
	if (rc == 0) {
		mr->dev = d;
		mr->gen = d->epoch;
		mr->zc = true;
		STAT_ADD(zc_regs, 1);
	} else {
		INFO("regMr %p+%llu: no zero copy (%s), staged copies", (void *)mr->base,
		     (unsigned long long)mr->size, odl_tb5_strerror(rc));
	}
	pthread_mutex_unlock(&d->mu);
}

/* Unpin; operations still naming it finish first (bounded wait). */
static void zc_unregister(struct odlp_mr *mr)
{
	struct odlp_dev *d = mr->dev;
	int rc = 0;

	if (!mr->zc || !d)
		return;
	for (int i = 0; i < 2000; i++) {
		/* g_mu: a finalize closing the device (its locks destroyed) or
		 * an init opening it anew waits, and a registration of an
		 * earlier open is gone with its handle (dev_revive, finalize) */
		pthread_mutex_lock(&g_mu);
		if (!d->locks_init || mr->gen != d->epoch) {
			pthread_mutex_unlock(&g_mu);
			rc = 0;
			break;
		}
		pthread_mutex_lock(&d->mu);
		/* again under d->mu: dev_revive opens anew without g_mu */
		rc = d->h && mr->gen == d->epoch ? odl_tb5_buf_free(d->h, mr->lib_id) : 0;
		if (rc && d->dead)
			rc = 0; /* the link failed: the handle's registrations go with it */
		pthread_mutex_unlock(&d->mu);
		if (rc == -EBUSY)
			try_progress(d);
		pthread_mutex_unlock(&g_mu);
		if (rc != -EBUSY)
			break;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	if (rc)
		WARN("deregMr %p: %s; left registered", (void *)mr->base, odl_tb5_strerror(rc));
	mr->zc = false;
}

static ncclResult_t core_regmr(void *comm, void *data, uint64_t size, int type, void **mhandle)
{
	struct odlp_comm *c = comm;
	struct odlp_mr *mr;

	if (mhandle)
		*mhandle = NULL;
	if (is_vcomm(c))
		return v_regmr(c, data, size, type, 0, -1, mhandle);
	if (!c || c->magic != COMM_MAGIC || c->kind == K_LISTEN || !mhandle ||
	    (!data && size))
		return fail(ncclInternalError);
	if (type != NCCL_PTR_HOST) {
		WARN("regMr: only host memory (NCCL_PTR_HOST) is supported, got type %d", type);
		return fail(ncclInternalError);
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return fail(ncclSystemError);
	mr->magic = MR_MAGIC;
	mr->type = type;
	mr->base = data;
	mr->size = size;
	zc_register(c->dev, mr);
	*mhandle = mr;
	STAT_ADD(op_regmr, 1);
	return ncclSuccess;
}

/*
 * Zero copy for a DMA-buf registration: the driver's import (kernel backend,
 * ODL_TB5_FEAT_DMABUF), else the registration of its CPU mapping like host
 * memory (the shm backend moves data straight from any mapping), else the
 * staged way through the mapping.
 */
static void zc_register_dmabuf(struct odlp_dev *d, struct odlp_mr *mr, uint64_t offset)
{
	int rc;

	if (!d->zc)
		return;
	pthread_mutex_lock(&d->mu);
	if (zc_keyed(d) && (d->info.features & ODL_TB5_FEAT_DMABUF)) {
		rc = odl_tb5_buf_import_dmabuf(d->h, mr->fd, offset, mr->size, &mr->lib_id);
		if (rc == 0) {
			mr->dev = d;
			mr->gen = d->epoch;
			mr->zc = true;
			STAT_ADD(zc_regs, 1);
			STAT_ADD(dmabuf_imports, 1);
			pthread_mutex_unlock(&d->mu);
			return;
		}
		INFO("regMrDmaBuf: the driver cannot import it (%s); through its mapping",
		     odl_tb5_strerror(rc));
	}
	pthread_mutex_unlock(&d->mu);
	zc_register(d, mr);
}

/*
 * regMrDmaBuf: [offset, offset + size) of the DMA-buf fd, known to NCCL as
 * [data, data + size). The caller closes fd after the call: the registration
 * keeps a duplicate. The region is mapped for the staged path (a DMA-buf the
 * CPU cannot map is refused) and imported by the driver for zero copy.
 */
static ncclResult_t core_regmr_dmabuf(void *comm, void *data, uint64_t size, int type,
				      uint64_t offset, int fd, void **mhandle)
{
	struct odlp_comm *c = comm;
	struct dma_buf_sync sy = { .flags = DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ };
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), delta = offset % pg;
	struct odlp_mr *mr;

	if (mhandle)
		*mhandle = NULL;
	if (is_vcomm(c) && fd >= 0)
		return v_regmr(c, data, size, type, offset, fd, mhandle);
	if (!c || c->magic != COMM_MAGIC || c->kind == K_LISTEN || !mhandle || !data || !size ||
	    fd < 0)
		return fail(ncclInternalError);
	if (type != NCCL_PTR_HOST && type != NCCL_PTR_CUDA) {
		WARN("regMrDmaBuf: unknown memory type %d", type);
		return fail(ncclInternalError);
	}
	if (offset > (uint64_t)INT64_MAX - size - pg || (uintptr_t)data + size < (uintptr_t)data ||
	    size > SIZE_MAX - pg) {
		WARN("regMrDmaBuf: offset %llu + size %llu out of range",
		     (unsigned long long)offset, (unsigned long long)size);
		return fail(ncclInternalError);
	}
	/* only a DMA-buf knows DMA_BUF_IOCTL_SYNC */
	if (ioctl(fd, DMA_BUF_IOCTL_SYNC, &sy) != 0) {
		WARN("regMrDmaBuf: fd %d is not a DMA-buf (%s)", fd, strerror(errno));
		return fail(ncclInternalError);
	}
	sy.flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ;
	(void)ioctl(fd, DMA_BUF_IOCTL_SYNC, &sy);
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return fail(ncclSystemError);
	mr->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (mr->fd < 0) {
		WARN("regMrDmaBuf: cannot keep the DMA-buf (%s)", strerror(errno));
		free(mr);
		return fail(ncclSystemError);
	}
	mr->map_len = (size_t)(delta + size);
	mr->map = mmap(NULL, mr->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, mr->fd,
		       (off_t)(offset - delta));
	if (mr->map == MAP_FAILED) {
		/* also what a region beyond the DMA-buf's end gets */
		WARN("regMrDmaBuf: cannot map bytes %llu..%llu of the DMA-buf (%s); the plugin needs CPU access to it",
		     (unsigned long long)offset, (unsigned long long)(offset + size),
		     strerror(errno));
		close(mr->fd);
		free(mr);
		return fail(ncclInternalError);
	}
	mr->magic = MR_MAGIC;
	mr->type = type;
	mr->dmabuf = true;
	mr->va = data;
	mr->base = (char *)mr->map + delta;
	mr->size = size;
	zc_register_dmabuf(c->dev, mr, offset);
	*mhandle = mr;
	STAT_ADD(op_regmr, 1);
	STAT_ADD(dmabuf_regs, 1);
	return ncclSuccess;
}

/*
 * A data pointer of isend/irecv inside a DMA-buf registration is NCCL's
 * address, not ours to touch: the matching address in the mapping. False if
 * [*data, *data + size) is not inside the registration.
 */
static bool mr_cpu_addr(const struct odlp_mr *mr, void **data, uint64_t size)
{
	uintptr_t p = (uintptr_t)*data, va;

	if (!mr || !mr->dmabuf)
		return true;
	va = (uintptr_t)mr->va;
	if (p < va || p - va > mr->size || size > mr->size - (p - va)) {
		WARN("buffer %p+%llu outside its DMA-buf registration %p+%llu", *data,
		     (unsigned long long)size, (const void *)mr->va, (unsigned long long)mr->size);
		return false;
	}
	*data = mr->base + (p - va);
	return true;
}

/* does unfinished request r move data from or into mr? */
static bool req_uses_mr(const struct odlp_req *r, const struct odlp_mr *mr)
{
	if (!r->in_use || r->done)
		return false;
	if (r->is_send)
		return r->smr == mr;
	for (int i = 0; i < r->n; i++)
		if (r->rmh[i] == mr && !r->rdone[i])
			return true;
	return false;
}

/* fail r, which uses a registration being deregistered (d->mu held): it
 * leaves every queue, its operations in flight are forgotten (their
 * completions only free their slots) and its keyed receives withdrawn */
static void req_detach(struct odlp_dev *d, struct odlp_req *r)
{
	struct odlp_comm *c = r->comm;

	if (r->is_send) {
		req_unlink(&c->sq_head, &c->sq_tail, r);
		req_unlink(&d->job_head, &d->job_tail, r);
		req_unlink(&d->zq_head, &d->zq_tail, r);
		for (int i = 0; i < KTAB; i++)
			if (d->ktx[i] == r)
				d->ktx[i] = NULL;
	} else {
		for (int i = 0; i < KTAB; i++) {
			if (d->krx_busy[i] && d->krx[i].r == r) {
				d->krx[i].r = NULL;
				if (!d->dead)
					odl_tb5_cancel_recv(d->h, d->krx[i].key);
			}
		}
		for (int i = 0; i < r->n; i++) {
			r->rkey[i] = 0;
			r->rdone[i] = 1; /* late DATA must not land in freed memory */
		}
	}
	r->err = ncclInvalidUsage;
	req_done(r);
	/* the message is cut off mid-way for the peer too: the comm is done,
	 * its other work dropped as at a close, and the peer told (a CLOSE:
	 * its requests on the other end fail instead of waiting for ever;
	 * closing a failed comm later sends nothing)
	 */
	if (c->state == S_READY && !d->dead) {
		struct wire_hdr h = { .type = M_CLOSE, .dst = c->peer_id, .src = c->id };

		queue_ctrl(d, c->peer_port, &h, NULL, 0);
	}
	if (c->state == S_READY || c->state == S_PENDING) {
		c->state = S_FAILED;
		jobs_remove_comm(d, c);
	}
}

/*
 * deregMr while requests still use the registration (the caller's misuse,
 * or an abort that deregisters first): those requests would read or write
 * memory the caller may free next, through a handle freed here. They fail
 * now (ncclInvalidUsage) with their comms.
 */
static void mr_detach(const struct odlp_mr *mr)
{
	int n = 0;

	pthread_mutex_lock(&g_mu);
	for (int k = 0; k < g_ndev; k++) {
		struct odlp_dev *d = &g_devs[k];

		if (!d->locks_init)
			continue;
		int before = n;

		pthread_mutex_lock(&d->mu);
		for (struct odlp_comm *c = d->comms; c; c = c->next) {
			if (c->kind == K_LISTEN)
				continue;
			for (int i = 0; i < c->nreqs; i++) {
				if (req_uses_mr(&c->reqs[i], mr)) {
					req_detach(d, &c->reqs[i]);
					n++;
				}
			}
		}
		if (n > before) {
			d->gen++; /* test() callers waiting on this device look again */
			tx_pump(d); /* the CLOSEs */
		}
		pthread_mutex_unlock(&d->mu);
	}
	pthread_mutex_unlock(&g_mu);
	if (n) {
		WARN("deregMr %p+%llu with %d request(s) still using it: they fail, with their connections",
		     (void *)mr->base, (unsigned long long)mr->size, n);
		progress_notify();
	}
}

static ncclResult_t core_deregmr(void *comm, void *mhandle)
{
	struct odlp_mr *mr = mhandle;

	(void)comm; /* the MR does not depend on the comm: either may go first */
	if (is_vmr(mr))
		return v_deregmr(mr);
	if (!mr || mr->magic != MR_MAGIC)
		return fail(ncclInternalError);
	mr_detach(mr);
	zc_unregister(mr);
	if (mr->dmabuf) {
		munmap(mr->map, mr->map_len);
		close(mr->fd);
	}
	mr->magic = 0;
	free(mr);
	STAT_ADD(op_deregmr, 1);
	return ncclSuccess;
}

static bool mr_ok(void *mhandle, const void *data, uint64_t size)
{
	const struct odlp_mr *mr = mhandle;

	if (!mr)
		return true;
	if (mr->magic != MR_MAGIC)
		return false;
	if (size && ((const char *)data < mr->base ||
		     (const char *)data + size > mr->base + mr->size))
		INFO("buffer %p+%llu outside its registration %p+%llu", data,
		     (unsigned long long)size, (void *)mr->base, (unsigned long long)mr->size);
	return true;
}

/* ------------------------------------------------------------------ */
/* data path */

static ncclResult_t comm_state_err(struct odlp_comm *c)
{
	if (c->dev->dead)
		return ncclSystemError;
	if (c->state == S_PEER_CLOSED || c->state == S_FAILED)
		return ncclRemoteError;
	return ncclSuccess;
}

static struct odlp_req *get_req(struct odlp_comm *c)
{
	for (int i = 0; i < c->nreqs; i++) {
		struct odlp_req *r = &c->reqs[i];
		if (!r->in_use) {
			struct odlp_comm *keep = c;
			memset(r, 0, sizeof(*r));
			r->seen_gen = UINT64_MAX; /* not tested yet */
			r->magic = REQ_MAGIC;
			r->comm = keep;
			r->in_use = 1;
			return r;
		}
	}
	return NULL;
}

static ncclResult_t core_isend(void *sendComm, void *data, uint64_t size, int tag, void *mhandle,
			       void *phandle, void **request)
{
	struct odlp_comm *c = sendComm;
	struct odlp_dev *d;
	struct odlp_req *r;
	ncclResult_t res;

	if (request)
		*request = NULL;
	if (is_vcomm(c))
		return v_isend(c, data, size, tag, mhandle, phandle, request);
	if (!valid_comm(c, K_SEND) || !request || (!data && size) || !mr_ok(mhandle, data, size) ||
	    !mr_cpu_addr(mhandle, &data, size))
		return fail(ncclInternalError);
	d = c->dev;
	pthread_mutex_lock(&d->mu);
	res = comm_state_err(c);
	if (res != ncclSuccess) {
		pthread_mutex_unlock(&d->mu);
		return fail(res);
	}
	r = get_req(c);
	if (!r) {
		pthread_mutex_unlock(&d->mu);
		STAT_ADD(null_requests, 1);
		return ncclSuccess;
	}
	r->is_send = 1;
	r->sdata = data;
	r->ssize = size;
	r->stag = tag;
	r->smr = mhandle;
	req_push(&c->sq_head, &c->sq_tail, r);
	match_sends(c);
	tx_pump(d);
	prof_fill(r, 1, phandle ? &phandle : NULL);
	pthread_mutex_unlock(&d->mu);
	STAT_ADD(op_isend, 1);
	prof_start(r, phandle ? &phandle : NULL);
	*request = r;
	return ncclSuccess;
}

/*
 * Post a keyed library receive for entry i straight into its registered
 * buffer (d->mu held); its key for the CTS, or 0: the entry takes the
 * staged way.
 */
static uint32_t zc_post(struct odlp_dev *d, struct odlp_req *r, int i, void *mhandle)
{
	const struct odlp_mr *mr = mhandle;
	int64_t off = zc_offset(d, mr, r->rdata[i], r->rcap[i]);
	uint32_t key;
	int slot, rc;

	if (off < 0 || d->dead)
		return 0;
	slot = ktab_get(d->krx_busy, &d->krx_hint);
	if (slot < 0) {
		STAT_ADD(zc_fallbacks, 1);
		return 0;
	}
	key = d->next_key++;
	if (!key)
		key = d->next_key++;
	rc = odl_tb5_post_recv_key(d->h, mr->lib_id, (uint64_t)off, r->rcap[i], key,
				   KC_RX | (uint64_t)slot, ODL_TB5_F_NONBLOCK);
	if (rc) {
		d->krx_busy[slot] = false;
		STAT_ADD(zc_fallbacks, 1);
		return 0;
	}
	d->krx[slot].key = key;
	d->krx[slot].r = r;
	d->krx[slot].idx = i;
	r->rkey[i] = key;
	r->rks[i] = slot;
	return key;
}

static ncclResult_t core_irecv(void *recvComm, int n, void **data, const uint64_t *sizes, int *tags,
			       void **mhandles, void **phandles, void **request)
{
	struct odlp_comm *c = recvComm;
	struct wire_cts_ent ent[MAX_RECVS];
	void *cpu[MAX_RECVS];
	struct odlp_dev *d;
	struct odlp_req *r;
	ncclResult_t res;

	if (request)
		*request = NULL;
	if (is_vcomm(c))
		return v_irecv(c, n, data, sizes, tags, mhandles, phandles, request);
	if (!valid_comm(c, K_RECV) || !request || n < 1 || n > MAX_RECVS || !data || !sizes || !tags)
		return fail(ncclInternalError);
	for (int i = 0; i < n; i++) {
		cpu[i] = data[i];
		if ((!data[i] && sizes[i]) || !mr_ok(mhandles ? mhandles[i] : NULL, data[i], sizes[i]) ||
		    !mr_cpu_addr(mhandles ? mhandles[i] : NULL, &cpu[i], sizes[i]))
			return fail(ncclInternalError);
	}
	d = c->dev;
	pthread_mutex_lock(&d->mu);
	res = comm_state_err(c);
	if (res != ncclSuccess) {
		pthread_mutex_unlock(&d->mu);
		return fail(res);
	}
	r = get_req(c);
	if (!r) {
		pthread_mutex_unlock(&d->mu);
		STAT_ADD(null_requests, 1);
		return ncclSuccess;
	}
	r->n = n;
	r->seq = c->next_seq++;
	for (int i = 0; i < n; i++) {
		struct odlp_mr *mr = mhandles ? mhandles[i] : NULL;

		r->rdata[i] = cpu[i];
		r->rmh[i] = mr;
		r->rcap[i] = sizes[i];
		r->rtag[i] = tags[i];
		ent[i].tag = tags[i];
		ent[i].key = zc_post(d, r, i, mr);
		ent[i].size = sizes[i];
	}
	struct wire_hdr h = { .type = M_CTS, .dst = c->peer_id, .src = c->id, .seq = r->seq,
			      .idx = (uint32_t)n };
	queue_ctrl(d, c->peer_port, &h, ent, (uint32_t)(n * sizeof(ent[0])));
	tx_pump(d);
	prof_fill(r, n, phandles);
	pthread_mutex_unlock(&d->mu);
	STAT_ADD(op_irecv, 1);
	prof_start(r, phandles);
	*request = r;
	return ncclSuccess;
}

static ncclResult_t core_iflush(void *recvComm, int n, void **data, int *sizes, void **mhandles,
				void **request)
{
	if (request)
		*request = NULL;
	if (is_vcomm(recvComm))
		return v_iflush(recvComm, n, data, sizes, mhandles, request);
	(void)data;
	(void)sizes;
	(void)mhandles;
	if (!valid_comm(recvComm, K_RECV) || !request || n < 0 || n > MAX_RECVS)
		return fail(ncclInternalError);
	/* Host memory only: received data is already visible; a NULL request is
	 * NCCL's "nothing to wait for". */
	STAT_ADD(op_iflush, 1);
	return ncclSuccess;
}

/*
 * test_wait's first choice (ODL_TB5_RCCL_CALLER_REAP, default on): the
 * caller waits for completions itself, in the library, and reaps them in its
 * own thread (until something on the device finished or failed, r is done,
 * or the wait is over), so that a completion it waits for reaches it without
 * the hand-over from the progress thread: one thread switch less per
 * message, which is most of a small message's cost on a slow CPU. The
 * progress thread stands aside while callers do this (progress_thread) and
 * takes over a poll period after the last one.
 *
 * With several devices (NCCL's proxy tests the requests of every device in
 * one loop) the caller also takes every other device whose progress thread
 * is not in its wait right now, and sleeps in poll() on all of their
 * descriptors and on its thread's eventfd (fd_waiter), which any progress
 * elsewhere writes to: progress anywhere ends the wait, as it does for the
 * callers waiting on the condition variable. That needs descriptors: a shm
 * device (none) leaves the waiting to the progress threads there.
 *
 * With ODL_TB5_RCCL_BUSY_POLL_US the caller first polls without sleeping
 * for that long (a machine with a core to spare gets a completion without
 * the wake-up of a sleeping thread), then sleeps as without it.
 * False when the progress thread still holds the device (then the caller
 * waits for it as before). Caller holds d->mu (dropped meanwhile).
 */
static bool caller_reap(struct odlp_dev *d, struct odlp_req *r)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC), end = now + (uint64_t)g_test_wait_us * 1000;
	uint64_t spin_end = now + (uint64_t)g_busy_poll_us * 1000;
	uint64_t until = now + (uint64_t)g_poll_ms * 1000000;
	uint64_t gen = d->gen, g0 = 0;
	struct odlp_dev *held[MAX_DEVS];
	struct pollfd pf[MAX_DEVS + 1];
	struct fd_waiter me = { .efd = -1 };
	bool multi = g_ndev > 1, stop;
	int nheld = 0, npf = 0, fd;

	if (!g_caller_reap)
		return false;
	if (multi && (odl_tb5_fd(d->h) < 0 || (me.efd = thread_efd()) < 0))
		return false;
	/* from now on the progress thread stands aside (at the latest once
	 * it is back from the wait it may be in), for a poll period after
	 * this caller's last test() */
	__atomic_store_n(&d->reap_until_ns, until, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&d->mu);
	if (pthread_mutex_trylock(&d->poll_mu) != 0) {
		pthread_mutex_lock(&d->mu);
		return false; /* it is still waiting there: wait for it as before */
	}
	STAT_ADD(caller_reaps, 1);
	held[nheld++] = d;
	/* the kernel device: a precise wait on its descriptor, then reap */
	fd = odl_tb5_fd(d->h);
	if (fd >= 0)
		pf[npf++] = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (multi) {
		/* listed before g0 is read: progress after that reaches me.efd */
		pthread_mutex_lock(&g_wait_mu);
		me.next = g_fd_waiters;
		g_fd_waiters = &me;
		t_fd_waiter = &me;
		pthread_mutex_unlock(&g_wait_mu);
		g0 = __atomic_load_n(&g_prog_gen, __ATOMIC_ACQUIRE);
		for (int i = 0; i < g_ndev; i++) {
			struct odlp_dev *e = &g_devs[i];
			int dfd = -1;

			if (e == d || pthread_mutex_trylock(&e->poll_mu) != 0)
				continue; /* its thread (or another caller) reaps it */
			pthread_mutex_lock(&e->mu);
			if (!e->dead && e->h)
				dfd = odl_tb5_fd(e->h);
			if (dfd >= 0)
				__atomic_store_n(&e->reap_until_ns, until, __ATOMIC_RELEASE);
			pthread_mutex_unlock(&e->mu);
			if (dfd < 0) {
				pthread_mutex_unlock(&e->poll_mu);
				continue;
			}
			held[nheld++] = e;
			pf[npf++] = (struct pollfd){ .fd = dfd, .events = POLLIN };
		}
		pf[npf++] = (struct pollfd){ .fd = me.efd, .events = POLLIN };
	}
	pthread_mutex_lock(&d->mu);
	stop = d->dead; /* it may have failed while mu was dropped */
	pthread_mutex_unlock(&d->mu);
	for (;;) {
		bool full = false;

		for (int i = 0; i < nheld && !stop; i++)
			full |= dev_progress(held[i], 0) == COMP_BATCH;
		if (multi && (pf[npf - 1].revents & POLLIN)) {
			uint64_t cnt;
			/* drained before g_prog_gen is read: a later write wakes
			 * the next poll() (a count left from an earlier wait only
			 * costs one more pass) */
			ssize_t rc = read(me.efd, &cnt, sizeof(cnt));

			(void)rc;
			pf[npf - 1].revents = 0;
		}
		pthread_mutex_lock(&d->mu);
		stop = stop || d->gen != gen || d->dead || __atomic_load_n(&r->done, __ATOMIC_ACQUIRE);
		pthread_mutex_unlock(&d->mu);
		if (multi && __atomic_load_n(&g_prog_gen, __ATOMIC_ACQUIRE) != g0)
			stop = true; /* progress anywhere */
		now = now_ns(CLOCK_MONOTONIC);
		if (stop && now < spin_end)
			STAT_ADD(busy_poll_reaps, 1);
		if (stop || now >= end)
			break;
		if (full)
			continue; /* the library may hold more than the descriptor shows */
		if (now < spin_end) {
			odl_cpu_relax();
			continue;
		}
		if (npf) {
			struct timespec ts = ns_ts(end - now);

			ppoll(pf, (nfds_t)npf, &ts, NULL);
		} else {
			dev_progress(d, (int)((end - now + 999999) / 1000000));
		}
	}
	if (multi) {
		pthread_mutex_lock(&g_wait_mu);
		for (struct fd_waiter **w = &g_fd_waiters; *w; w = &(*w)->next)
			if (*w == &me) {
				*w = me.next;
				break;
			}
		t_fd_waiter = NULL;
		pthread_mutex_unlock(&g_wait_mu);
	}
	while (nheld > 0)
		pthread_mutex_unlock(&held[--nheld]->poll_mu);
	pthread_mutex_lock(&d->mu);
	return true;
}

/*
 * A caller that tests an unfinished request again although nothing on its
 * device finished or failed since its previous test of it would only spin:
 * wait (at most ODL_TB5_RCCL_TEST_WAIT_US) instead, reaping the device
 * (caller_reap) or, where that cannot be, until a request of any device
 * finishes or a comm fails (g_prog_gen) or this request is done. On a
 * machine with few CPUs (the 1-vCPU guests) the spinning caller otherwise
 * takes the CPU the progress thread, the driver and, under emulation, the
 * device model need. Caller holds d->mu (dropped while waiting).
 */
static void test_wait(struct odlp_dev *d, struct odlp_req *r)
{
	struct timespec ts;
	uint64_t gen = d->gen, g0;

	if (r->seen_gen != gen || !g_test_wait_us || !d->thr_started || d->dead) {
		r->seen_gen = gen;
		return;
	}
	if (caller_reap(d, r)) {
		r->seen_gen = d->gen;
		return;
	}
	pthread_once(&g_wait_once, wait_cv_init);
	g0 = __atomic_load_n(&g_prog_gen, __ATOMIC_ACQUIRE);
	pthread_mutex_unlock(&d->mu);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += g_test_wait_us * 1000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	pthread_mutex_lock(&g_wait_mu);
	g_waiters++;
	while (__atomic_load_n(&g_prog_gen, __ATOMIC_ACQUIRE) == g0 &&
	       !__atomic_load_n(&r->done, __ATOMIC_ACQUIRE))
		if (pthread_cond_timedwait(&g_wait_cv, &g_wait_mu, &ts) != 0)
			break;
	g_waiters--;
	pthread_mutex_unlock(&g_wait_mu);
	pthread_mutex_lock(&d->mu);
	r->seen_gen = d->gen;
}

static ncclResult_t core_test(void *request, int *done, int *sizes)
{
	struct odlp_req *r = request;
	struct odlp_comm *c;
	struct odlp_dev *d;
	ncclResult_t res = ncclSuccess;
	struct prof_done pdn = { 0 };

	if (done)
		*done = 0;
	if (is_vreq(r))
		return v_test(r, done, sizes);
	if (!r || r->magic != REQ_MAGIC || !done)
		return fail(ncclInternalError);
	c = r->comm;
	d = c->dev;
	STAT_ADD(op_test, 1);
	/* the progress thread reaps completions as they come; without it (it
	 * could not be started) the callers of test() drive the device */
	if (!d->thr_started && !__atomic_load_n(&r->done, __ATOMIC_ACQUIRE))
		try_progress(d);
	pthread_mutex_lock(&d->mu);
	if (r->in_use && !r->done)
		test_wait(d, r);
	if (!r->in_use) {
		res = ncclInternalError; /* already completed and recycled */
	} else if (r->done) {
		*done = 1;
		if (sizes) {
			if (r->is_send)
				sizes[0] = (int)(r->ssize > 0x7fffffff ? 0x7fffffff : r->ssize);
			else
				for (int i = 0; i < r->n; i++)
					sizes[i] = (int)(r->rtotal[i] > 0x7fffffff ? 0x7fffffff
										  : r->rtotal[i]);
		}
		res = r->err;
		if (r->nprof)
			prof_take(r, (int32_t)res, &pdn);
		r->in_use = 0;
	} else {
		res = comm_state_err(c);
	}
	pthread_mutex_unlock(&d->mu);
	if (pdn.n)
		prof_stop(&pdn);
	return res == ncclSuccess ? res : fail(res);
}

/* ------------------------------------------------------------------ */
/* fused devices */

/*
 * NCCL (v9 and later) may fuse NICs that are close in its topology
 * (NCCL_NET_MERGE_LEVEL, NCCL_NET_FORCE_MERGE) into one virtual NIC: it
 * calls makeVDevice with the physical devices, gets a new device index
 * (after the physical ones; devices() counts it from then on) and then
 * uses it like any other device. Here a fused device is several cables
 * between one pair of machines: a comm on it is one comm per cable (a
 * rail), and every message is cut in one part per rail.
 *
 * The cut follows the receive, which both sides know. The receiver cuts
 * each entry's buffer of R bytes at k * q (q: R / rails, rounded up to
 * 4 KiB; the last part takes the rest) and posts part k on rail k, so each
 * rail's CTS carries that rail's part. The sender waits until every rail's
 * CTS for the message is there (isend answers NULL until then, as NCCL's
 * InfiniBand transport does while the receiver's slot is missing), adds
 * the parts up to R and cuts its message at the same places. A shorter
 * message leaves the later parts short or empty (a zero-byte message on
 * that rail); a longer one overflows the last part and fails there as a
 * truncation.
 *
 * The listener decides the rails: its handle names, per rail, the
 * controller it listens on (the first 8 bytes of its UUID), its port and
 * listen comm, and the connector connects each over its own device that
 * reaches that controller, whichever device it was asked for. So a side
 * that fused and one that did not still connect (a fused connect to a
 * plain handle goes over one cable).
 */
struct odl_vhandle {
	uint64_t magic;
	uint32_t version;
	uint32_t len;	       /* sizeof(struct odl_vhandle) */
	uint64_t instance;     /* listener process instance */
	uint64_t nonce;	       /* every rail's listen comm has it */
	uint64_t stage_cookie; /* connector: g_instance while connecting */
	uint64_t stage;	       /* connector: its struct vstage */
	uint32_t n;
	uint32_t pad;
	struct {
		uint8_t uuid8[8]; /* the listener's controller on this rail */
		uint32_t listen_id;
		uint8_t port;
		uint8_t pad[3];
	} rail[VDEV_RAILS];
};
_Static_assert(sizeof(struct odl_vhandle) <= NCCL_NET_HANDLE_MAXSIZE, "fused handle fits");
_Static_assert(ODL_TB5_MAX_PORT <= 255, "a rail's port fits a byte");

struct odlp_vcomm;

struct vreq {
	uint32_t magic;
	uint8_t in_use, is_send;
	uint8_t sub_done[VDEV_RAILS];
	int n;				  /* receive entries */
	ncclResult_t err;		  /* the first rail that failed */
	void *sub[VDEV_RAILS];		  /* the rails' requests */
	uint64_t got[MAX_RECVS];	  /* bytes per entry (a send: [0]) of the rails done */
	/* profiler events: the fused message's, not its rails' */
	int nprof;
	void *pev[MAX_RECVS];
	odl_tb5_profiler_descr_v1_t pd[MAX_RECVS];
};

struct odlp_vcomm {
	uint32_t magic;
	enum comm_kind kind;
	int dev; /* the device NCCL named (profiler events) */
	int n;
	void *sub[VDEV_RAILS]; /* the rails' comms (listen: listen comms) */
	/* listen: rails accepted, not yet joined into a fused recv comm (a
	 * connector's rails can arrive in another order on each cable) */
	struct odlp_comm **pool[VDEV_RAILS];
	int npool[VDEV_RAILS];
	pthread_mutex_t mu;    /* taking a request (vreq_get) */
	struct vreq *reqs;
	int nreqs;
};

struct vmr {
	uint32_t magic;
	int n;
	void *mr[VDEV_RAILS]; /* one registration per rail */
};

/* a fused connect in progress (the handle's stage points here) */
struct vstage {
	int n;
	int dev[VDEV_RAILS];		  /* the device of each rail */
	struct odl_handle h[VDEV_RAILS]; /* each rail's plain handle (with its stage) */
	void *sub[VDEV_RAILS];		  /* rails connected */
	struct vstage *next;
};
static struct vstage *g_vstages; /* under g_mu */

static bool is_vcomm(const void *p) { return p && *(const uint32_t *)p == VCOMM_MAGIC; }
static bool is_vreq(const void *p) { return p && *(const uint32_t *)p == VREQ_MAGIC; }
static bool is_vmr(const void *p) { return p && *(const uint32_t *)p == VMR_MAGIC; }

/* fused device dev's members (a plain device: itself); its count */
static int vdev_members(int dev, int *devs)
{
	int n = 1;

	pthread_mutex_lock(&g_mu);
	if (dev >= g_ndev && dev - g_ndev < g_nvdev) {
		const struct odlp_vdev *v = &g_vdevs[dev - g_ndev];

		n = v->n;
		memcpy(devs, v->devs, sizeof(int) * (size_t)n);
	} else {
		devs[0] = dev;
	}
	pthread_mutex_unlock(&g_mu);
	return n;
}

/* a usable fused device: copied to *v */
static bool vdev_get(int dev, struct odlp_vdev *v)
{
	bool ok = false;

	pthread_mutex_lock(&g_mu);
	if (g_inited && dev >= g_ndev && dev - g_ndev < g_nvdev) {
		*v = g_vdevs[dev - g_ndev];
		ok = true;
		for (int k = 0; k < v->n; k++)
			ok &= v->devs[k] < g_ndev;
	}
	pthread_mutex_unlock(&g_mu);
	return ok;
}

/* the first member of fused device dev, -1: dev is not a usable one */
static int vdev_physical(int dev)
{
	struct odlp_vdev v;

	return vdev_get(dev, &v) ? v.devs[0] : -1;
}

static ncclResult_t make_vdevice(int *d, int ndevs, const int *devs)
{
	ncclResult_t res = ncclSuccess;
	struct odlp_vdev v = { 0 };

	if (d)
		*d = -1;
	if (!d || !devs)
		return fail(ncclInternalError);
	pthread_mutex_lock(&g_mu);
	if (!g_inited) {
		res = ncclInternalError;
		goto out;
	}
	if (ndevs < 1 || ndevs > VDEV_RAILS) { /* v12's 8 do not fit the handle */
		WARN("makeVDevice: %d devices; a fused device has 1 to %d", ndevs, VDEV_RAILS);
		res = ncclInvalidUsage;
		goto out;
	}
	for (int k = 0; k < ndevs; k++) {
		if (devs[k] < 0 || devs[k] >= g_ndev) {
			WARN("makeVDevice: %d is not a device of this plugin (%d physical ones; fused devices cannot be fused again)",
			     devs[k], g_ndev);
			res = ncclInvalidUsage;
			goto out;
		}
		for (int j = 0; j < k; j++)
			if (devs[j] == devs[k]) {
				WARN("makeVDevice: device %d named twice", devs[k]);
				res = ncclInvalidUsage;
				goto out;
			}
		v.devs[k] = devs[k];
		snprintf(v.name + strlen(v.name), sizeof(v.name) - strlen(v.name), "%s%s",
			 k ? "+" : "", g_devs[devs[k]].name);
	}
	v.n = ndevs;
	for (int i = 0; i < g_nvdev; i++) /* the same fusion again: the same device */
		if (g_vdevs[i].n == v.n && !memcmp(g_vdevs[i].devs, v.devs, sizeof(int) * (size_t)v.n)) {
			*d = g_ndev + i;
			goto out;
		}
	if (g_nvdev == MAX_VDEVS) {
		WARN("makeVDevice: %d fused devices already", MAX_VDEVS);
		res = ncclInvalidUsage;
		goto out;
	}
	g_vdevs[g_nvdev] = v;
	*d = g_ndev + g_nvdev++;
	INFO("fused device %d: %s (%d cables, striped)", *d, v.name, v.n);
out:
	pthread_mutex_unlock(&g_mu);
	return res == ncclSuccess ? res : fail(res);
}

static ncclResult_t v9_make_vdevice(int *d, ncclNetVDeviceProps_v9_t *p)
{
	if (!p) {
		if (d)
			*d = -1;
		return fail(ncclInternalError);
	}
	return make_vdevice(d, p->ndevs, p->devs);
}

static ncclResult_t v12_make_vdevice(int *d, ncclNetVDeviceProps_v12_t *p)
{
	if (!p) {
		if (d)
			*d = -1;
		return fail(ncclInternalError);
	}
	return make_vdevice(d, p->ndevs, p->devs);
}

/* a fused device's properties: its members' added up */
static ncclResult_t v_props(int dev, ncclNetProperties_v7_t *p)
{
	struct odlp_vdev v;
	ncclNetProperties_v7_t q;
	uint64_t guid = 0xcbf29ce484222325ull;

	if (!vdev_get(dev, &v))
		return fail(ncclInternalError);
	for (int k = 0; k < v.n; k++) {
		ncclResult_t r = core_props(v.devs[k], &q);

		if (r)
			return r;
		if (k == 0) {
			*p = q;
		} else {
			p->speed += q.speed;
			p->latency = q.latency > p->latency ? q.latency : p->latency;
			p->ptrSupport &= q.ptrSupport;
		}
		guid = (guid ^ q.guid) * 0x100000001b3ull;
	}
	p->name = g_vdevs[dev - g_ndev].name; /* never changes once made */
	p->guid = guid;
	return ncclSuccess;
}

static struct odlp_vcomm *vcomm_new(enum comm_kind k, int n, int nreqs)
{
	struct odlp_vcomm *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	if (nreqs) {
		v->reqs = calloc((size_t)nreqs, sizeof(*v->reqs));
		if (!v->reqs) {
			free(v);
			return NULL;
		}
		for (int i = 0; i < nreqs; i++)
			v->reqs[i].magic = VREQ_MAGIC;
	}
	v->nreqs = nreqs;
	for (int r = 0; k == K_LISTEN && r < n; r++) {
		v->pool[r] = calloc(VPOOL, sizeof(*v->pool[r]));
		if (!v->pool[r]) {
			while (r--)
				free(v->pool[r]);
			free(v->reqs);
			free(v);
			return NULL;
		}
	}
	pthread_mutex_init(&v->mu, NULL);
	v->magic = VCOMM_MAGIC;
	v->kind = k;
	v->n = n;
	return v;
}

static void vcomm_free(struct odlp_vcomm *v)
{
	v->magic = 0;
	for (int r = 0; r < VDEV_RAILS; r++)
		free(v->pool[r]);
	for (int i = 0; i < v->nreqs; i++)
		v->reqs[i].magic = 0;
	free(v->reqs);
	pthread_mutex_destroy(&v->mu);
	free(v);
}

/*
 * A fused message's profiler events (NCCL's phandles go to none of its
 * rails): one per send or entry, described like a plain one with the
 * fused device's index, the first rail's comm and the whole size; the
 * path is the first rail's.
 */
static void vprof_start(const struct odlp_vcomm *vc, struct vreq *q, int n, void *const *ph,
			const uint64_t *sizes, const int *tags)
{
	ncclProfilerCallback_t cb = __atomic_load_n(&g_prof, __ATOMIC_ACQUIRE);
	const struct odlp_comm *c0 = vc->sub[0];
	const struct odlp_req *r0 = q->sub[0];

	if (!cb || !ph)
		return;
	q->nprof = n;
	pthread_mutex_lock(&c0->dev->mu);
	for (int i = 0; i < n; i++) {
		odl_tb5_profiler_descr_v1_t *pd = &q->pd[i];

		memset(pd, 0, sizeof(*pd));
		pd->type = ODL_TB5_PROFILE_MSG;
		pd->is_send = q->is_send;
		pd->device = vc->dev;
		pd->entry = i;
		pd->comm_id = c0->id;
		pd->peer_port = c0->peer_port;
		pd->tag = tags[i];
		pd->size = sizes[i];
		pd->path = (q->is_send ? r0->szc : r0->rkey[i] != 0) ? ODL_TB5_PROFILE_ZERO_COPY
								     : ODL_TB5_PROFILE_STAGED;
	}
	pthread_mutex_unlock(&c0->dev->mu);
	for (int i = 0; i < n; i++) {
		q->pev[i] = NULL;
		if (ph[i])
			cb(&q->pev[i], 0, ph[i], ODL_TB5_PROFILER_NET_ID, &q->pd[i]);
	}
}

/* ... its outcome (the bytes received; status as in prof_take) and stop */
static void vprof_end(struct vreq *q, int32_t status)
{
	ncclProfilerCallback_t cb = __atomic_load_n(&g_prof, __ATOMIC_ACQUIRE);

	for (int i = 0; i < q->nprof; i++) {
		odl_tb5_profiler_descr_v1_t *pd = &q->pd[i];

		if (!q->pev[i])
			continue;
		pd->done = 1;
		pd->status = status;
		if (status != ODL_TB5_PROFILE_CLOSED)
			pd->size = q->got[i];
		if (cb) {
			cb(&q->pev[i], 2, NULL, ODL_TB5_PROFILER_NET_ID, pd);
			cb(&q->pev[i], 1, NULL, 0, NULL);
		}
		q->pev[i] = NULL;
	}
	q->nprof = 0;
}

/*
 * A fused device whose cables are not all up still listens, on the cables
 * it has: v becomes the live members (in their order), and the handle names
 * only those rails, so the connector (which follows the handle) and every
 * message of the comm use them alone; the comm keeps that width for its
 * life. A member that failed is opened again here when it can be (as a
 * plain listen would). -1: none is up. The change of the live set is logged
 * once (when it changes), each such listen counted in fused_degraded.
 */
static int vdev_live(int dev, struct odlp_vdev *v)
{
	unsigned int mask = 0, full = (1u << v->n) - 1;
	int n = 0;

	for (int k = 0; k < v->n; k++) {
		struct odlp_dev *d = get_dev(v->devs[k]);

		if (__atomic_load_n(&d->dead, __ATOMIC_ACQUIRE))
			dev_revive(d);
		if (!__atomic_load_n(&d->dead, __ATOMIC_ACQUIRE)) {
			mask |= 1u << k;
			v->devs[n++] = v->devs[k];
		}
	}
	pthread_mutex_lock(&g_mu);
	if (mask != full && n > 0)
		STAT_ADD(fused_degraded, 1);
	if (mask != g_vdev_live[dev - g_ndev]) {
		if (mask != full)
			WARN("fused device %s: %d of its %d cables up: new comms use those alone until the others are back",
			     g_vdevs[dev - g_ndev].name, n, v->n);
		else if (g_vdev_live[dev - g_ndev])
			INFO("fused device %s: all %d cables up again", g_vdevs[dev - g_ndev].name, n);
		g_vdev_live[dev - g_ndev] = mask;
	}
	pthread_mutex_unlock(&g_mu);
	if (!n)
		return -1;
	v->n = n;
	return n;
}

static ncclResult_t v_listen(int dev, void *handle, void **listenComm)
{
	struct odl_vhandle *vh = handle;
	struct odlp_vdev v;
	struct odlp_vcomm *vc;
	uint64_t nonce = rnd64();

	if (!vdev_get(dev, &v))
		return fail(ncclInternalError);
	if (vdev_live(dev, &v) < 0)
		return fail(ncclSystemError); /* every cable down */
	vc = vcomm_new(K_LISTEN, v.n, 0);
	if (!vc)
		return fail(ncclSystemError);
	memset(vh, 0, NCCL_NET_HANDLE_MAXSIZE);
	for (int k = 0; k < v.n; k++) {
		union { /* core_listen fills NCCL's whole 128 bytes */
			struct odl_handle h;
			char raw[NCCL_NET_HANDLE_MAXSIZE];
		} u;
		const struct odl_handle *h = &u.h;
		struct odlp_comm *l;
		ncclResult_t r = core_listen(v.devs[k], &u, &vc->sub[k]);

		if (r) {
			while (k--)
				close_comm(vc->sub[k], K_LISTEN);
			vcomm_free(vc);
			memset(vh, 0, NCCL_NET_HANDLE_MAXSIZE);
			return r;
		}
		l = vc->sub[k];
		pthread_mutex_lock(&l->dev->mu);
		l->nonce = nonce;
		pthread_mutex_unlock(&l->dev->mu);
		memcpy(vh->rail[k].uuid8, h->listener_uuid, 8);
		vh->rail[k].listen_id = h->listen_id;
		vh->rail[k].port = (uint8_t)h->port;
	}
	vh->magic = VHANDLE_MAGIC;
	vh->version = HANDLE_VERSION;
	vh->len = sizeof(*vh);
	vh->instance = g_instance;
	vh->nonce = nonce;
	vh->n = (uint32_t)v.n;
	vc->dev = dev;
	*listenComm = vc;
	return ncclSuccess;
}

static void vstage_unlink(struct vstage *st)
{
	pthread_mutex_lock(&g_mu);
	for (struct vstage **pp = &g_vstages; *pp; pp = &(*pp)->next)
		if (*pp == st) {
			*pp = st->next;
			break;
		}
	pthread_mutex_unlock(&g_mu);
	free(st);
}

static ncclResult_t v_connect(int dev, void *handle, void **sendComm)
{
	struct odl_vhandle *vh = handle;
	struct vstage *st = NULL;
	struct odlp_vcomm *vc;
	int n = (int)vh->n;

	if (vh->version != HANDLE_VERSION || vh->len != sizeof(*vh) || n < 1 || n > VDEV_RAILS) {
		WARN("connect: not an odl_tb5 v%u fused handle (len %u, %d rails)", HANDLE_VERSION,
		     vh->len, n);
		return fail(ncclInvalidUsage);
	}
	for (int k = 0; k < n; k++)
		if (vh->rail[k].port < 1) {
			WARN("connect: fused handle with port 0 on rail %d", k);
			return fail(ncclInvalidUsage);
		}
	if (vh->instance == g_instance) {
		WARN("connect: self-connection within one process is not supported");
		return fail(ncclInvalidUsage);
	}
	if (vh->stage_cookie == g_instance) {
		pthread_mutex_lock(&g_mu);
		for (struct vstage *x = g_vstages; x; x = x->next)
			if ((uintptr_t)x == vh->stage)
				st = x;
		pthread_mutex_unlock(&g_mu);
	}
	if (!st) {
		uint64_t group = rnd64() | 1; /* this connect's, in every rail's CONN */

		st = calloc(1, sizeof(*st));
		if (!st)
			return fail(ncclSystemError);
		st->n = n;
		for (int k = 0; k < n; k++) {
			struct odl_handle *h = &st->h[k];

			const struct odlp_dev *e = dev_reaching(vh->rail[k].uuid8, 8, NULL, true,
								h->listener_uuid);

			st->dev[k] = e ? e->index : -1;
			for (int j = 0; j < k && st->dev[k] >= 0; j++)
				if (st->dev[j] == st->dev[k])
					st->dev[k] = -1;
			if (st->dev[k] < 0) {
				WARN("connect: no device here (or only one already taken) reaches rail %d of the fused listener (controller %02x%02x%02x%02x...)",
				     k, vh->rail[k].uuid8[0], vh->rail[k].uuid8[1],
				     vh->rail[k].uuid8[2], vh->rail[k].uuid8[3]);
				free(st);
				return fail(ncclInvalidUsage);
			}
			h->magic = HANDLE_MAGIC;
			h->version = HANDLE_VERSION;
			h->len = sizeof(*h);
			h->instance = vh->instance;
			h->port = vh->rail[k].port;
			h->listen_id = vh->rail[k].listen_id;
			h->listen_nonce = vh->nonce;
			h->group = group;
		}
		pthread_mutex_lock(&g_mu);
		st->next = g_vstages;
		g_vstages = st;
		pthread_mutex_unlock(&g_mu);
		vh->stage_cookie = g_instance;
		vh->stage = (uintptr_t)st;
	}
	for (int k = 0, started = 0; k < n; k++) {
		ncclResult_t r;

		if (st->sub[k])
			continue;
		if (st->h[k].stage_cookie != g_instance && started++ && g_test_connect_step)
			break; /* test hook: one more rail's CONN per call */
		r = core_connect(st->dev[k], &st->h[k], &st->sub[k]);
		if (r) {
			for (int j = 0; j < n; j++)
				if (st->sub[j])
					close_comm(st->sub[j], K_SEND);
				else
					connect_abandon(get_dev(st->dev[j]), &st->h[j]);
			vh->stage_cookie = 0;
			vh->stage = 0;
			vstage_unlink(st);
			return r;
		}
	}
	for (int k = 0; k < n; k++)
		if (!st->sub[k])
			return ncclSuccess; /* not yet: NCCL calls again */
	vc = vcomm_new(K_SEND, n, SEND_REQS);
	if (!vc)
		return fail(ncclSystemError);
	memcpy(vc->sub, st->sub, sizeof(vc->sub));
	vc->dev = dev;
	{
		struct odlp_vdev v;

		/* the listener had fewer of the cables up (vdev_live) */
		if (vdev_get(dev, &v) && n < v.n)
			STAT_ADD(fused_degraded, 1);
	}
	vh->stage_cookie = 0;
	vh->stage = 0;
	vstage_unlink(st);
	*sendComm = vc;
	return ncclSuccess;
}

/* a rail accepted on a fused listen comm: who connected it */
struct vkey {
	uint64_t inst, group;
	uint32_t port;
};

static struct vkey vkey_of(struct odlp_comm *c)
{
	struct vkey k;

	pthread_mutex_lock(&c->dev->mu);
	k.inst = c->peer_inst;
	k.group = c->peer_group;
	k.port = c->peer_port;
	pthread_mutex_unlock(&c->dev->mu);
	return k;
}

static bool vkey_eq(struct vkey a, struct vkey b)
{
	return a.inst == b.inst && a.group == b.group && a.port == b.port;
}

static void vpool_drop(struct odlp_vcomm *vl, int k, int j)
{
	memmove(&vl->pool[k][j], &vl->pool[k][j + 1],
		sizeof(vl->pool[k][0]) * (size_t)(vl->npool[k] - j - 1));
	vl->npool[k]--;
}

/*
 * Every rail's listen comm accepts what has arrived into its pool; a fused
 * recv comm is made of one rail per cable from the same connect: the same
 * process (instance, port) and the same fused connect (the group its CONNs
 * carry; 0 from a plain connect or an older plugin, which then pair by
 * process in arrival order). Several connects may be in flight at once,
 * their rails arriving in other orders on each cable; the oldest complete
 * one is returned first. A rail that waits for the others while its pool
 * is full is given up (its connect then fails).
 */
static ncclResult_t v_accept(void *listenComm, void **recvComm)
{
	struct odlp_vcomm *vl = listenComm, *vc;
	int idx[VDEV_RAILS];

	if (vl->kind != K_LISTEN)
		return fail(ncclInternalError);
	for (int k = 0; k < vl->n; k++)
		while (vl->npool[k] < VPOOL) {
			void *c = NULL;
			ncclResult_t r = core_accept(vl->sub[k], &c);

			if (r)
				return r;
			if (!c)
				break;
			vl->pool[k][vl->npool[k]++] = c;
		}
	for (int i = 0; i < vl->npool[0]; i++) {
		struct vkey want = vkey_of(vl->pool[0][i]);
		int k;

		idx[0] = i;
		for (k = 1; k < vl->n; k++) {
			idx[k] = -1;
			for (int j = 0; j < vl->npool[k] && idx[k] < 0; j++)
				if (vkey_eq(vkey_of(vl->pool[k][j]), want))
					idx[k] = j;
			if (idx[k] < 0)
				break;
		}
		if (k < vl->n)
			continue;
		vc = vcomm_new(K_RECV, vl->n, RECV_REQS);
		if (!vc)
			return fail(ncclSystemError);
		for (k = 0; k < vl->n; k++) {
			vc->sub[k] = vl->pool[k][idx[k]];
			vpool_drop(vl, k, idx[k]);
		}
		vc->dev = vl->dev;
		*recvComm = vc;
		return ncclSuccess;
	}
	for (int k = 0; k < vl->n; k++)
		if (vl->npool[k] == VPOOL) {
			WARN("accept: %d rails accepted on cable %d of a fused listen comm wait for their connects' other rails; giving the oldest up",
			     VPOOL, k);
			close_comm(vl->pool[k][0], K_RECV);
			vpool_drop(vl, k, 0);
		}
	return ncclSuccess; /* not yet */
}

static ncclResult_t v_close(void *comm, enum comm_kind k)
{
	struct odlp_vcomm *vc = comm;
	ncclResult_t res = ncclSuccess;

	if (vc->kind != k)
		return fail(ncclInternalError);
	for (int i = 0; i < vc->nreqs; i++) /* still open: their events end here */
		if (vc->reqs[i].in_use && vc->reqs[i].nprof)
			vprof_end(&vc->reqs[i], ODL_TB5_PROFILE_CLOSED);
	for (int i = 0; i < vc->n; i++) {
		ncclResult_t r = close_comm(vc->sub[i], k);

		if (r && res == ncclSuccess)
			res = r;
		for (int j = 0; j < vc->npool[i]; j++)
			close_comm(vc->pool[i][j], K_RECV);
	}
	vcomm_free(vc);
	return res;
}

static ncclResult_t v_regmr(void *comm, void *data, uint64_t size, int type, uint64_t offset,
			    int fd, void **mhandle)
{
	struct odlp_vcomm *vc = comm;
	struct vmr *vm;

	if (vc->kind == K_LISTEN || !mhandle)
		return fail(ncclInternalError);
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return fail(ncclSystemError);
	for (int k = 0; k < vc->n; k++) {
		ncclResult_t r = fd >= 0 ? core_regmr_dmabuf(vc->sub[k], data, size, type, offset,
							     fd, &vm->mr[k])
					 : core_regmr(vc->sub[k], data, size, type, &vm->mr[k]);

		if (r) {
			while (k--)
				core_deregmr(NULL, vm->mr[k]);
			free(vm);
			return r;
		}
	}
	vm->magic = VMR_MAGIC;
	vm->n = vc->n;
	*mhandle = vm;
	return ncclSuccess;
}

static ncclResult_t v_deregmr(void *mhandle)
{
	struct vmr *vm = mhandle;
	ncclResult_t res = ncclSuccess;

	vm->magic = 0;
	for (int k = 0; k < vm->n; k++) {
		ncclResult_t r = core_deregmr(NULL, vm->mr[k]);

		if (r && res == ncclSuccess)
			res = r;
	}
	free(vm);
	return res;
}

/* where part k of R bytes over n rails begins, and its length */
static void rail_part(uint64_t R, int n, int k, uint64_t *off, uint64_t *len)
{
	uint64_t q = (R + (uint64_t)n - 1) / (uint64_t)n;

	q = (q + 4095) & ~(uint64_t)4095;
	*off = (uint64_t)k * q < R ? (uint64_t)k * q : R;
	*len = k == n - 1 ? R - *off : (R - *off < q ? R - *off : q);
}

/* part k of a send of S bytes against a receive of R: where the receiver
 * put part k (rail_part) and as much of the message as falls there; the
 * last part takes the rest (more than its room if S > R: a truncation) */
static void rail_send_part(uint64_t R, uint64_t S, int n, int k, uint64_t *off, uint64_t *len)
{
	uint64_t roff, rlen;

	rail_part(R, n, k, &roff, &rlen);
	*off = roff < S ? roff : S;
	*len = k == n - 1 ? S - *off : (S - *off < rlen ? S - *off : rlen);
}

/* the receive entry a send with this tag matches on rail comm c: its
 * capacity; 1 found, 0 its CTS is not here yet, -1 the comm failed (*err) */
static int rail_cts(struct odlp_comm *c, int tag, uint64_t *cap, ncclResult_t *err)
{
	struct odlp_dev *d = c->dev;
	int ret = 0;

	pthread_mutex_lock(&d->mu);
	*err = comm_state_err(c);
	if (*err != ncclSuccess) {
		ret = -1;
	} else if (c->cts_count && !c->sq_head) {
		const struct cts_ent *e = &c->cts[c->cts_head];

		for (int i = 0; i < e->n; i++)
			if (!e->used[i] && e->tag[i] == tag) {
				*cap = e->size[i];
				ret = 1;
				break;
			}
	}
	pthread_mutex_unlock(&d->mu);
	return ret;
}

/* a free request of vc (test() frees one in any thread) */
/* the first error of vc's rails (a failed link, a peer gone): a fused comm
 * works only while all of them do */
static ncclResult_t rails_state(const struct odlp_vcomm *vc)
{
	ncclResult_t res = ncclSuccess;

	for (int k = 0; k < vc->n && res == ncclSuccess; k++) {
		struct odlp_comm *c = vc->sub[k];

		pthread_mutex_lock(&c->dev->mu);
		res = comm_state_err(c);
		pthread_mutex_unlock(&c->dev->mu);
	}
	return res;
}

static struct vreq *vreq_get(struct odlp_vcomm *vc)
{
	struct vreq *q = NULL;

	pthread_mutex_lock(&vc->mu);
	for (int i = 0; i < vc->nreqs && !q; i++)
		if (!__atomic_load_n(&vc->reqs[i].in_use, __ATOMIC_ACQUIRE)) {
			q = &vc->reqs[i];
			memset(q, 0, sizeof(*q));
			q->magic = VREQ_MAGIC;
			q->in_use = 1;
		}
	pthread_mutex_unlock(&vc->mu);
	return q;
}

/* mh is a fused comm's registration with vc's rails (or NULL), and
 * [data, data + size) lies where a buffer of it may (as mr_ok and
 * mr_cpu_addr judge for one cable: a DMA-buf's range is enforced) */
static bool vmr_ok(const struct odlp_vcomm *vc, const void *mh, void *data, uint64_t size)
{
	void *cpu = data;

	if (!mh)
		return true;
	if (!is_vmr(mh) || ((const struct vmr *)mh)->n != vc->n) {
		WARN("memory handle %p was not registered with a fused comm of %d rails", mh, vc->n);
		return false;
	}
	return mr_ok(((const struct vmr *)mh)->mr[0], data, size) &&
	       mr_cpu_addr(((const struct vmr *)mh)->mr[0], &cpu, size);
}

static ncclResult_t v_isend(void *comm, void *data, uint64_t size, int tag, void *mhandle,
			    void *phandle, void **request)
{
	struct odlp_vcomm *vc = comm;
	const struct vmr *vm = mhandle;
	uint64_t R = 0;
	struct vreq *q;

	bool missing = false;
	ncclResult_t err;

	if (vc->kind != K_SEND || !request || (!data && size) || !vmr_ok(vc, mhandle, data, size))
		return fail(ncclInternalError);
	for (int k = 0; k < vc->n; k++) {
		uint64_t cap = 0;
		int got = rail_cts(vc->sub[k], tag, &cap, &err);

		if (got < 0)
			return fail(err); /* any rail failed: the comm has */
		if (got == 0) /* the receive is not posted on this rail yet */
			try_progress(((struct odlp_comm *)vc->sub[k])->dev);
		missing |= got == 0;
		R += cap;
	}
	if (missing) {
		STAT_ADD(null_requests, 1);
		return ncclSuccess;
	}
	q = vreq_get(vc);
	if (!q) {
		STAT_ADD(null_requests, 1);
		return ncclSuccess;
	}
	q->is_send = 1;
	for (int k = 0; k < vc->n; k++) {
		uint64_t off, len;
		ncclResult_t r;

		rail_send_part(R, size, vc->n, k, &off, &len);
		r = core_isend(vc->sub[k], data ? (char *)data + off : NULL, len, tag,
			       vm ? vm->mr[k] : NULL, NULL, &q->sub[k]);
		if (r || !q->sub[k]) {
			/* the rails before k carry their parts: q stays taken
			 * (until the comm is closed); with none, it is free */
			WARN("isend: rail %d of %d %s", k, vc->n, r ? "failed" : "took no request");
			if (k == 0)
				__atomic_store_n(&q->in_use, 0, __ATOMIC_RELEASE);
			return r ? r : fail(ncclInternalError);
		}
	}
	STAT_ADD(fused_ops, 1);
	vprof_start(vc, q, 1, phandle ? &phandle : NULL, &size, &tag);
	*request = q;
	return ncclSuccess;
}

static ncclResult_t v_irecv(void *comm, int n, void **data, const uint64_t *sizes, int *tags,
			    void **mhandles, void **phandles, void **request)
{
	struct odlp_vcomm *vc = comm;
	struct vreq *q;
	ncclResult_t res;

	if (vc->kind != K_RECV || !request || n < 1 || n > MAX_RECVS || !data || !sizes || !tags)
		return fail(ncclInternalError);
	for (int i = 0; i < n; i++)
		if (!vmr_ok(vc, mhandles ? mhandles[i] : NULL, data[i], sizes[i]) ||
		    (!data[i] && sizes[i]))
			return fail(ncclInternalError);
	res = rails_state(vc); /* before any rail posts its part */
	if (res != ncclSuccess)
		return fail(res);
	q = vreq_get(vc);
	if (!q) {
		STAT_ADD(null_requests, 1);
		return ncclSuccess;
	}
	q->n = n;
	for (int k = 0; k < vc->n; k++) {
		void *dk[MAX_RECVS], *mk[MAX_RECVS];
		uint64_t sk[MAX_RECVS];
		ncclResult_t r;

		for (int i = 0; i < n; i++) {
			uint64_t off;

			rail_part(sizes[i], vc->n, k, &off, &sk[i]);
			dk[i] = data[i] ? (char *)data[i] + off : NULL;
			mk[i] = mhandles && mhandles[i] ? ((struct vmr *)mhandles[i])->mr[k] : NULL;
		}
		r = core_irecv(vc->sub[k], n, dk, sk, tags, mhandles ? mk : NULL, NULL, &q->sub[k]);
		if (r || !q->sub[k]) {
			WARN("irecv: rail %d of %d %s", k, vc->n, r ? "failed" : "took no request");
			if (k == 0) /* nothing posted */
				__atomic_store_n(&q->in_use, 0, __ATOMIC_RELEASE);
			return r ? r : fail(ncclInternalError);
		}
	}
	STAT_ADD(fused_ops, 1);
	vprof_start(vc, q, n, phandles, sizes, tags);
	*request = q;
	return ncclSuccess;
}

static ncclResult_t v_iflush(void *comm, int n, void **data, int *sizes, void **mhandles,
			     void **request)
{
	struct odlp_vcomm *vc = comm;

	(void)data;
	(void)sizes;
	(void)mhandles;
	if (vc->kind != K_RECV || !request)
		return fail(ncclInternalError);
	/* host memory on every rail: nothing to wait for (as core_iflush) */
	return core_iflush(vc->sub[0], n, NULL, NULL, NULL, request);
}

static ncclResult_t v_test(void *request, int *done, int *sizes)
{
	struct vreq *q = request;
	bool all = true;

	if (!done || !q->in_use)
		return fail(ncclInternalError);
	for (int k = 0; k < VDEV_RAILS && q->sub[k]; k++) {
		int dn = 0, sz[MAX_RECVS] = { 0 };
		ncclResult_t r;

		if (q->sub_done[k])
			continue;
		r = core_test(q->sub[k], &dn, sz);
		if (r && !dn)
			return r; /* the rail's comm failed */
		if (!dn) {
			all = false;
			continue;
		}
		if (r && q->err == ncclSuccess)
			q->err = r; /* done with an error: the other rails finish first */
		q->sub_done[k] = 1;
		for (int i = 0; i < (q->is_send ? 1 : q->n); i++)
			q->got[i] += (uint64_t)sz[i];
	}
	if (!all)
		return ncclSuccess;
	*done = 1;
	if (sizes)
		for (int i = 0; i < (q->is_send ? 1 : q->n); i++)
			sizes[i] = (int)(q->got[i] > 0x7fffffff ? 0x7fffffff : q->got[i]);
	if (q->nprof)
		vprof_end(q, (int32_t)q->err);
	__atomic_store_n(&q->in_use, 0, __ATOMIC_RELEASE);
	return q->err;
}

/* ------------------------------------------------------------------ */
/* version tables */

/* v7..v10: one init per load of the library, no finalize: the devices stay
 * up until the library is unloaded (plugin_fini) */
static bool g_init_once;

static ncclResult_t once_init(ncclDebugLogger_t l)
{
	ncclResult_t r = core_init(l);

	if (r == ncclSuccess)
		__atomic_store_n(&g_init_once, true, __ATOMIC_RELAXED);
	return r;
}
static ncclResult_t v7_init(ncclDebugLogger_t l) { return once_init(l); }
static ncclResult_t v10_init(ncclDebugLogger_t l, ncclProfilerCallback_t p)
{
	ncclResult_t r = once_init(l);

	if (r == ncclSuccess && p)
		__atomic_store_n(&g_prof, p, __ATOMIC_RELEASE);
	return r;
}

/*
 * v11+: NCCL calls init once per communicator and finalize(ctx) when that
 * communicator is destroyed. A context is a token: the devices are shared by
 * all of them. When the last context is finalized and no connection is
 * open, the devices are closed and the progress threads stopped (NCCL may
 * keep the library loaded, NCCL_NET_PLUGIN_REF_COUNT=1); the next init opens
 * them again.
 */
static bool ctx_live_locked(const void *ctx)
{
	for (const struct odlp_ctx *c = g_ctxs; c; c = c->next)
		if (c->token == (uint64_t)(uintptr_t)ctx)
			return true;
	return false;
}

/* listen/connect: ncclSuccess for a live context, else the error (WARNed) */
static ncclResult_t ctx_check(const void *ctx, const char *call)
{
	bool ok = false;

	if (ctx) {
		pthread_mutex_lock(&g_mu);
		ok = ctx_live_locked(ctx);
		pthread_mutex_unlock(&g_mu);
	}
	if (ok)
		return ncclSuccess;
	WARN("%s: %p is not a live context", call, ctx);
	return fail(ncclInvalidArgument);
}

static ncclResult_t v11_init(void **ctx, uint64_t comm_id, ncclNetCommConfig_v11_t *cfg,
			     ncclDebugLogger_t l, ncclProfilerCallback_t p)
{
	struct odlp_ctx *c;
	ncclResult_t r;

	if (!ctx)
		return fail(ncclInvalidArgument);
	*ctx = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return fail(ncclSystemError);
	r = core_init(l);
	if (r) {
		free(c);
		return r;
	}
	if (p)
		__atomic_store_n(&g_prof, p, __ATOMIC_RELEASE);
	if (cfg && cfg->trafficClass != -1)
		INFO("communicator %016llx: traffic class %d ignored (the link has one)",
		     (unsigned long long)comm_id, cfg->trafficClass);
	pthread_mutex_lock(&g_mu);
	c->token = CTX_TOKEN_TAG | ++g_ctx_seq;
	c->next = g_ctxs;
	g_ctxs = c;
	pthread_mutex_unlock(&g_mu);
	*ctx = (void *)(uintptr_t)c->token;
	return ncclSuccess;
}

static ncclResult_t v11_finalize(void *ctx)
{
	struct odlp_ctx **pp, *c = NULL;
	int open = 0;

	pthread_mutex_lock(&g_mu);
	for (pp = &g_ctxs; ctx && *pp; pp = &(*pp)->next) {
		if ((*pp)->token == (uint64_t)(uintptr_t)ctx) {
			c = *pp;
			*pp = c->next;
			break;
		}
	}
	if (!c) {
		pthread_mutex_unlock(&g_mu);
		WARN("finalize: %p is not a live context (finalized twice, or never initialised)",
		     ctx);
		return fail(ncclInvalidArgument);
	}
	if (!g_ctxs && !__atomic_load_n(&g_init_once, __ATOMIC_RELAXED) && g_inited) {
		open = open_comms_locked();
		if (open) {
			INFO("last communicator finalized with %d connection(s) open: devices stay "
			     "up until the library is unloaded",
			     open);
		} else {
			plugin_down_locked();
			INFO("last communicator finalized: devices closed");
		}
	}
	pthread_mutex_unlock(&g_mu);
	free(c);
	return ncclSuccess;
}

static ncclResult_t v11_listen(void *ctx, int dev, void *h, void **l)
{
	ncclResult_t r = ctx_check(ctx, "listen");

	if (r) {
		if (l)
			*l = NULL;
		return r;
	}
	return core_listen(dev, h, l);
}

static ncclResult_t v7_props(int dev, ncclNetProperties_v7_t *p) { return core_props(dev, p); }

/* the fields every version from v7 on has, from core_props() */
#define PROPS_FROM_V7(p, q)                                    \
	do {                                                   \
		(p)->name = (q).name;                          \
		(p)->pciPath = (q).pciPath;                    \
		(p)->guid = (q).guid;                          \
		(p)->ptrSupport = (q).ptrSupport;              \
		(p)->speed = (q).speed;                        \
		(p)->port = (q).port;                          \
		(p)->latency = (q).latency;                    \
		(p)->maxComms = (q).maxComms;                  \
		(p)->maxRecvs = (q).maxRecvs;                  \
		(p)->netDeviceType = (q).netDeviceType;        \
		(p)->netDeviceVersion = (q).netDeviceVersion;  \
	} while (0)

static ncclResult_t v8_props(int dev, ncclNetProperties_v8_t *p)
{
	ncclNetProperties_v7_t q;
	ncclResult_t r;

	if (!p)
		return fail(ncclInternalError);
	r = core_props(dev, &q);
	if (r)
		return r;
	memset(p, 0, sizeof(*p));
	PROPS_FROM_V7(p, q);
	p->regIsGlobal = 0;
	return ncclSuccess;
}

/*
 * The body of getProperties for v9 and later (their fields up to
 * maxCollBytes are the same): from core_props(), vProps the device itself
 * (a fused device: its cables) and 1 GiB transfers at most. Returns on an
 * error.
 */
#define PROPS_V9_BODY(dev, p)                                          \
	ncclNetProperties_v7_t q_;                                     \
	ncclResult_t r_;                                               \
	if (!(p))                                                      \
		return fail(ncclInternalError);                        \
	r_ = core_props((dev), &q_);                                   \
	if (r_)                                                        \
		return r_;                                             \
	memset((p), 0, sizeof(*(p)));                                  \
	PROPS_FROM_V7((p), q_);                                        \
	(p)->regIsGlobal = 0;                                          \
	(p)->forceFlush = 0;                                           \
	(p)->vProps.ndevs = vdev_members((dev), (p)->vProps.devs);     \
	(p)->maxP2pBytes = 1ull << 30;                                 \
	(p)->maxCollBytes = 1ull << 30

static ncclResult_t v9_props(int dev, ncclNetProperties_v9_t *p)
{
	PROPS_V9_BODY(dev, p);
	return ncclSuccess;
}

static ncclResult_t v11_props(int dev, ncclNetProperties_v11_t *p)
{
	PROPS_V9_BODY(dev, p);
	p->maxMultiRequestSize = 1; /* one request per isend/irecv call */
	return ncclSuccess;
}

static ncclResult_t v12_props(int dev, ncclNetProperties_v12_t *p)
{
	PROPS_V9_BODY(dev, p);
	p->maxMultiRequestSize = 1;
	/* a TB5 cable is one point-to-point link, not a rail of a fabric */
	p->railId = NCCL_NET_ID_UNDEF;
	p->planeId = NCCL_NET_ID_UNDEF;
	return ncclSuccess;
}

static ncclResult_t v7_connect(int dev, void *h, void **s, ncclNetDeviceHandle_v7_t **dc)
{
	(void)dc; /* host plugin: never written (may be NULL) */
	return core_connect(dev, h, s);
}
static ncclResult_t v10_connect(int dev, ncclNetCommConfig_v10_t *cfg, void *h, void **s,
				ncclNetDeviceHandle_v10_t **dc)
{
	(void)cfg;
	(void)dc;
	return core_connect(dev, h, s);
}
static ncclResult_t v11_connect(void *ctx, int dev, void *h, void **s,
				ncclNetDeviceHandle_v11_t **dc)
{
	ncclResult_t r = ctx_check(ctx, "connect");

	(void)dc;
	if (r) {
		if (s)
			*s = NULL;
		return r;
	}
	return core_connect(dev, h, s);
}
static ncclResult_t v7_accept(void *l, void **r, ncclNetDeviceHandle_v7_t **dc)
{
	(void)dc;
	return core_accept(l, r);
}
static ncclResult_t v7_regmr(void *c, void *d, int size, int type, void **mh)
{
	if (size < 0) {
		if (mh)
			*mh = NULL;
		return fail(ncclInternalError);
	}
	return core_regmr(c, d, (uint64_t)size, type, mh);
}
static ncclResult_t v8_regmr(void *c, void *d, size_t size, int type, void **mh)
{
	return core_regmr(c, d, size, type, mh);
}
static ncclResult_t v7_isend(void *c, void *d, int size, int tag, void *mh, void **req)
{
	if (size < 0) {
		if (req)
			*req = NULL;
		return fail(ncclInternalError);
	}
	return core_isend(c, d, (uint64_t)size, tag, mh, NULL, req);
}
static ncclResult_t v9_isend(void *c, void *d, size_t size, int tag, void *mh, void **req)
{
	return core_isend(c, d, size, tag, mh, NULL, req);
}
static ncclResult_t v10_isend(void *c, void *d, size_t size, int tag, void *mh, void *ph,
			      void **req)
{
	return core_isend(c, d, size, tag, mh, ph, req);
}
static ncclResult_t v7_irecv(void *c, int n, void **d, int *sizes, int *tags, void **mh,
			     void **req)
{
	uint64_t s[MAX_RECVS];

	if (req)
		*req = NULL;
	if (n < 1 || n > MAX_RECVS || !sizes)
		return fail(ncclInternalError);
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0)
			return fail(ncclInternalError);
		s[i] = (uint64_t)sizes[i];
	}
	return core_irecv(c, n, d, s, tags, mh, NULL, req);
}
/* irecv with size_t sizes (v9+) and, from v10 on, NCCL's phandles */
static ncclResult_t sz_irecv(void *c, int n, void **d, const size_t *sizes, int *tags, void **mh,
			     void **ph, void **req)
{
	uint64_t s[MAX_RECVS];

	if (req)
		*req = NULL;
	if (n < 1 || n > MAX_RECVS || !sizes)
		return fail(ncclInternalError);
	for (int i = 0; i < n; i++)
		s[i] = sizes[i];
	return core_irecv(c, n, d, s, tags, mh, ph, req);
}
static ncclResult_t v9_irecv(void *c, int n, void **d, size_t *sizes, int *tags, void **mh,
			     void **req)
{
	return sz_irecv(c, n, d, sizes, tags, mh, NULL, req);
}
static ncclResult_t v10_irecv(void *c, int n, void **d, size_t *sizes, int *tags, void **mh,
			      void **ph, void **req)
{
	return sz_irecv(c, n, d, sizes, tags, mh, ph, req);
}
static ncclResult_t p_regMrDmaBuf(void *c, void *d, size_t size, int type, uint64_t offset,
				  int fd, void **mh)
{
	return core_regmr_dmabuf(c, d, size, type, offset, fd, mh);
}
static ncclResult_t p_closeSend(void *c) { return close_comm(c, K_SEND); }
static ncclResult_t p_closeRecv(void *c) { return close_comm(c, K_RECV); }
static ncclResult_t p_closeListen(void *c) { return close_comm(c, K_LISTEN); }

#define COMMON_TAIL                                                                  \
	.deregMr = core_deregmr, .iflush = core_iflush, .test = core_test,           \
	.closeSend = p_closeSend, .closeRecv = p_closeRecv, .closeListen = p_closeListen, \
	.getDeviceMr = NULL, .irecvConsumed = NULL, .regMrDmaBuf = p_regMrDmaBuf

EXPORT const ncclNet_v7_t ncclNetPlugin_v7 = {
	.name = PLUGIN_NAME,
	.init = v7_init,
	.devices = core_devices,
	.getProperties = v7_props,
	.listen = core_listen,
	.connect = v7_connect,
	.accept = v7_accept,
	.regMr = v7_regmr,
	.isend = v7_isend,
	.irecv = v7_irecv,
	COMMON_TAIL,
};

EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
	.name = PLUGIN_NAME,
	.init = v7_init,
	.devices = core_devices,
	.getProperties = v8_props,
	.listen = core_listen,
	.connect = v7_connect,
	.accept = v7_accept,
	.regMr = v8_regmr,
	.isend = v7_isend,
	.irecv = v7_irecv,
	COMMON_TAIL,
};

EXPORT const ncclNet_v9_t ncclNetPlugin_v9 = {
	.name = PLUGIN_NAME,
	.init = v7_init,
	.devices = core_devices,
	.getProperties = v9_props,
	.listen = core_listen,
	.connect = v7_connect,
	.accept = v7_accept,
	.regMr = v8_regmr,
	.isend = v9_isend,
	.irecv = v9_irecv,
	.makeVDevice = v9_make_vdevice,
	COMMON_TAIL,
};

EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
	.name = PLUGIN_NAME,
	.init = v10_init,
	.devices = core_devices,
	.getProperties = v9_props,
	.listen = core_listen,
	.connect = v10_connect,
	.accept = v7_accept,
	.regMr = v8_regmr,
	.isend = v10_isend,
	.irecv = v10_irecv,
	.makeVDevice = v9_make_vdevice,
	COMMON_TAIL,
};

/* setNetAttr is optional and left out: the hints (peers, flows per peer)
 * have nothing to tune on one point-to-point link */
#define V11_TABLE(P, M)                                                              \
	.name = PLUGIN_NAME, .init = v11_init, .devices = core_devices,              \
	.getProperties = P, .listen = v11_listen, .connect = v11_connect,            \
	.accept = v7_accept, .regMr = v8_regmr, .isend = v10_isend, .irecv = v10_irecv, \
	.makeVDevice = M, .finalize = v11_finalize, .setNetAttr = NULL, COMMON_TAIL

EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = { V11_TABLE(v11_props, v9_make_vdevice) };

EXPORT const ncclNet_v12_t ncclNetPlugin_v12 = { V11_TABLE(v12_props, v12_make_vdevice) };
