// SPDX-License-Identifier: MIT
/*
 * odl_xfer: test tool for /dev/odl_tb5_N (runs in the guests, static).
 *
 *   odl_xfer info   [-d DEV]
 *   odl_xfer recv   [-d DEV] -p PORT -q PEERPORT -n COUNT -s SIZES
 *   odl_xfer send   [-d DEV] -p PORT -q PEERPORT -n COUNT -s SIZES
 *   odl_xfer post   [-d DEV] -p PORT -q PEERPORT -n COUNT -s SIZES
 *   odl_xfer flood  [-d DEV] -p PORT -q PEERPORT -n COUNT -s SIZES
 *   odl_xfer sink   [-d DEV] -p PORT -q PEERPORT -n COUNT -s SIZES [-t IDLE_S]
 *   odl_xfer krecv  [-d DEV] -p PORT -q PEERPORT -n COUNT -s SIZES [-U]
 *   odl_xfer ksend  [-d DEV] -p PORT -q PEERPORT -n COUNT -s SIZES [-U]
 *   odl_xfer urecv  [-d DEV] -p PORT -q PEERPORT -g GOFILE [-N]
 *   odl_xfer usend  [-d DEV] -p PORT -q PEERPORT [-N]
 *   odl_xfer hold   [-d DEV] -p PORT [-t SECONDS] [-g GOFILE -n COUNT -s SIZE]
 *   odl_xfer kick   [-d DEV] -p PORT [-t SECONDS]
 *   odl_xfer overflow [-d DEV] -p PORT [-t SECONDS]
 *   odl_xfer overflow-mid [-d DEV] -p PORT [-t SECONDS]
 *   odl_xfer badinput [-d DEV]
 *   odl_xfer unagreed [-d DEV] -p PORT -q PEERPORT
 *   odl_xfer stats  [-d DEV]
 *   odl_xfer stats-reset [-d DEV]   (the same, then ODL_TB5_STATS_RESET)
 *   odl_xfer stats-reset-v0 [-d DEV] (the same with ABI 1.0's struct size)
 *   odl_xfer fuzz   [-d DEV] [-n SECONDS] [-S SEED]
 *   -D (send/recv): data through a DMA-buf from odl_dmabuf_exp, imported
 *   -E odl|udmabuf|heap: the DMA-buf exporter of -D: odl_dmabuf_exp, the
 *      kernel's udmabuf (memfd pages) or its DMA-BUF system heap
 *   -U (send/recv): data in the tool's own (heap, not page-aligned) memory,
 *       pinned with MEM_REG (ABI 1.4)
 *   -N (usend/urecv): without ODL_TB5_F_URGENT (the order then stays FIFO)
 *
 * send/recv: message k has size SIZES[k % n] and pseudo-random content
 * derived from (k, size); the receiver checks every byte and answers each
 * message with a 4-byte ack, the sender keeps at most two unacknowledged.
 * post: one way, no receiver expected (e.g. to a port nobody has bound on
 * the peer): sends COUNT messages and waits for their SEND completions.
 * flood/sink: one way, no acks, for a cable that damages frames: flood
 * sends COUNT messages (eight in flight), each starting with its number;
 * sink keeps eight RECVs posted and accounts for every report: a message
 * delivered whole must have the right bytes, length and sender and come
 * after the previous one (never twice, never out of order); failed
 * receives and lost-message events are counted. It ends after COUNT
 * completed receives or IDLE_S seconds (default 15) without any (before
 * the first report it waits at least SINK_FIRST_S: a loaded machine may
 * take long to start the flood on the other side), and
 * fails if any delivered message was wrong or more receives completed
 * than messages were sent (a damaged message reported twice takes a
 * later message's RECV). ODL_SINK_VERBOSE=1 prints each failure and
 * lost-message event with the number of the message delivered before it.
 * hold: binds PORT and posts nothing for SECONDS (-t, default 15), so
 * messages to it wait in the driver and then hold the RX ring; it prints
 * "ready" once bound, and at the end how many lost-message events it got.
 * With -g, once GOFILE exists it receives COUNT messages, one RECV at a
 * time, and prints each one's status and length and whether its bytes
 * are message k's (as post sent them); events are printed as they come
 * ("event status S flags F", before and after the go file); exit 1 if a
 * message delivered whole had wrong bytes.
 * kick: binds PORT and for SECONDS posts and cancels a keyed RECV every
 * 200 ms (each post wakes the driver's held RX frames), "ready" once
 * bound, at the end the number of posts.
 * overflow: binds PORT and fills its completion queue (1024 keyed RECVs
 * posted and withdrawn, nothing fetched), prints "ready", and waits up to
 * SECONDS (-t) for the device to count a lost event (GET_STATS
 * events_lost, ABI 1.8): a message for PORT, which has no RECV, dropped
 * after rx_stall_ms, whose MSG_LOST event finds the queue full. Then it
 * fetches: 1024 entries (the RECVs, in order; no room for more), poll()
 * still POLLIN, one EVENT with ODL_TB5_CF_EVENTS_LOST, status -EOVERFLOW,
 * length = the events lost, then nothing. overflow-mid: the same until
 * the loss, then it fetches 10, queues 10 more withdrawn RECVs and fetches
 * 1024: RECVs 11..1024, the report, RECVs 1025..1033 (the report sits
 * where the loss was), then RECV 1034, then nothing. Exit 0 if all held.
 * unagreed: what a hostile peer sends (needs the driver's testing
 * parameter test_send_unagreed, else the SENDs are refused and it exits
 * 2): a 100-byte message of 0xee bytes with key 0x77 and an empty one to
 * PEERPORT, whatever the login agreed; exit 0 once both SENDs completed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>

#include "../../driver/uapi/odl_tb5_uapi.h"

static const char *devpath = "/dev/odl_tb5_0";
static int port, peer_port, count = 10;
static int idle_s = 15; /* -t: sink idle end, hold/kick duration */
static const char *go_file;	/* -g: urecv, hold */
static uint64_t sizes[64];
static int nsizes;
static int use_dmabuf;	/* -D: data through a DMA-buf from odl_dmabuf_exp */
/* -E: who exports the DMA-bufs of -D: odl (tests/dmabuf_exporter), or the
 * kernel's own udmabuf (memfd pages) or DMA-BUF system heap
 */
static const char *exporter = "odl";
static int use_memreg;	/* -U: data in our own memory, MEM_REG */
static uint8_t *dmabuf_base;
static uint32_t dmabuf_handle;

static void die(const char *what)
{
	fprintf(stderr, "odl_xfer: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void fill(uint8_t *p, uint64_t len, uint32_t k)
{
	uint32_t x = 0x9e3779b9u ^ (k * 2654435761u) ^ (uint32_t)len;
	uint64_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

static int check(const uint8_t *p, uint64_t len, uint32_t k)
{
	uint32_t x = 0x9e3779b9u ^ (k * 2654435761u) ^ (uint32_t)len;
	uint64_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		if (p[i] != (uint8_t)x) {
			fprintf(stderr, "msg %u: byte %llu is 0x%02x, want 0x%02x\n",
				k, (unsigned long long)i, p[i], (uint8_t)x);
			return -1;
		}
	}
	return 0;
}

static int open_dev(void)
{
	int fd = open(devpath, O_RDWR);

	if (fd < 0)
		die(devpath);
	return fd;
}

/* bytes in order, like the kernel's %pUb and sysfs unique_id */
static void uuid_str(const uint8_t *u, char *s)
{
	sprintf(s, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
		u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

static int cmd_info(void)
{
	struct odl_tb5_info in = { .size = sizeof(in) };
	char pu[40], lu[40];
	int fd = open_dev();

	if (ioctl(fd, ODL_TB5_IOC_GET_INFO, &in))
		die("GET_INFO");
	uuid_str(in.peer_uuid, pu);
	uuid_str(in.local_uuid, lu);
	printf("abi=%u.%u\npeer_uuid=%s\nlocal_uuid=%s\nstate=%s\nindex=%u\n"
	       "link_speed_gbps=%u\nlink_lanes=%u\ntx_ring=%u\nrx_ring=%u\n"
	       "frame_size=%u\nmax_msg=%u\nproto=%u\ngeneration=%u\nfeatures=0x%llx\n",
	       in.abi_major, in.abi_minor, pu, lu,
	       in.state == ODL_TB5_STATE_CONNECTED ? "connected" : "disconnected",
	       in.dev_index, in.link_speed_gbps, in.link_lanes, in.tx_ring_size,
	       in.rx_ring_size, in.frame_size, in.max_msg_size, in.proto_version,
	       in.generation, (unsigned long long)in.features);
	close(fd);
	return 0;
}

/* the device's counters (GET_STATS) into *st, asked with struct size size */
static void read_stats_sz(int fd, struct odl_tb5_stats *st, uint32_t flags, uint32_t size)
{
	memset(st, 0, sizeof(*st));
	st->size = size;
	st->flags = flags;
	if (ioctl(fd, ODL_TB5_IOC_GET_STATS, st))
		die("GET_STATS");
}

static void read_stats(int fd, struct odl_tb5_stats *st)
{
	read_stats_sz(fd, st, 0, sizeof(*st));
}

/* stats-reset: the counters, reset after reading (ODL_TB5_STATS_RESET);
 * stats-reset-v0: the same with ABI 1.0's struct size (168 bytes, up to
 * no_port: rx_cancelled, 1.7, is neither seen, printed 0, nor reset)
 */
static int cmd_stats(uint32_t flags, uint32_t size)
{
	struct odl_tb5_stats st;
	int fd = open_dev();

	read_stats_sz(fd, &st, flags, size);
	printf("tx_msgs=%llu tx_bytes=%llu tx_frames=%llu rx_msgs=%llu rx_bytes=%llu rx_frames=%llu\n"
	       "seq_errors=%llu len_errors=%llu desc_errors=%llu drops=%llu credit_stalls=%llu link_resets=%llu logins=%llu rx_stalls=%llu urgent_ahead=%llu no_port=%llu rx_cancelled=%llu events_lost=%llu\n",
	       (unsigned long long)st.tx_msgs, (unsigned long long)st.tx_bytes,
	       (unsigned long long)st.tx_frames, (unsigned long long)st.rx_msgs,
	       (unsigned long long)st.rx_bytes, (unsigned long long)st.rx_frames,
	       (unsigned long long)st.seq_errors, (unsigned long long)st.len_errors,
	       (unsigned long long)st.desc_errors, (unsigned long long)st.drops,
	       (unsigned long long)st.credit_stalls,
	       (unsigned long long)st.link_resets, (unsigned long long)st.logins,
	       (unsigned long long)st.rx_stalls, (unsigned long long)st.urgent_ahead,
	       (unsigned long long)st.no_port, (unsigned long long)st.rx_cancelled,
	       (unsigned long long)st.events_lost);
	close(fd);
	return 0;
}

struct chan {
	int fd;
	uint8_t *base;
	struct odl_tb5_buf_setup bs;
};

#define ODL_DMABUF_EXP_CREATE	_IOWR(0xB6, 0x00, uint64_t)

/* a DMA-buf of len bytes from the -E exporter */
static int dmabuf_export(uint64_t len)
{
	int ex, dfd;

	if (!strcmp(exporter, "udmabuf")) {
		struct udmabuf_create uc = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = len };
		int mfd = memfd_create("odl_xfer", MFD_ALLOW_SEALING);

		if (mfd < 0 || ftruncate(mfd, (off_t)len) ||
		    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0)
			die("memfd for udmabuf");
		ex = open("/dev/udmabuf", O_RDWR);
		if (ex < 0)
			die("/dev/udmabuf");
		uc.memfd = (uint32_t)mfd;
		dfd = ioctl(ex, UDMABUF_CREATE, &uc);
		if (dfd < 0)
			die("UDMABUF_CREATE");
		close(mfd);
	} else if (!strcmp(exporter, "heap")) {
		struct dma_heap_allocation_data ha = { .len = len, .fd_flags = O_RDWR | O_CLOEXEC };

		ex = open("/dev/dma_heap/system", O_RDWR);
		if (ex < 0)
			die("/dev/dma_heap/system");
		if (ioctl(ex, DMA_HEAP_IOCTL_ALLOC, &ha))
			die("DMA_HEAP_IOCTL_ALLOC");
		dfd = (int)ha.fd;
	} else {
		ex = open("/dev/odl_dmabuf_exp", O_RDWR);
		if (ex < 0)
			die("/dev/odl_dmabuf_exp");
		dfd = ioctl(ex, ODL_DMABUF_EXP_CREATE, &len);
		if (dfd < 0)
			die("DMABUF_EXP_CREATE");
	}
	close(ex);
	return dfd;
}

/* a DMA-buf of 2 * bufsize (two halves = double buffer), imported */
static void dmabuf_setup(int fd, uint64_t bufsize, uint32_t dir)
{
	struct odl_tb5_dmabuf_import im = { .size = sizeof(im), .flags = dir };
	uint64_t len = 2 * bufsize;
	int dfd = dmabuf_export(len);

	dmabuf_base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, dfd, 0);
	if (dmabuf_base == MAP_FAILED)
		die("mmap dmabuf");
	im.fd = dfd;
	if (ioctl(fd, ODL_TB5_IOC_DMABUF_IMPORT, &im))
		die("DMABUF_IMPORT");
	if (im.length != len) {
		fprintf(stderr, "DMA-buf length %llu\n", (unsigned long long)im.length);
		exit(1);
	}
	dmabuf_handle = im.handle;
	close(dfd);
}

/* -U: 2 * bufsize of heap memory at an odd offset, pinned (MEM_REG);
 * sends and receives then name it like the DMA-buf of -D
 */
static void memreg_setup(int fd, uint64_t bufsize, uint32_t dir)
{
	struct odl_tb5_mem_reg mr = { .size = sizeof(mr), .flags = dir };
	uint8_t *mem = malloc(2 * bufsize + 4096);

	if (!mem)
		die("malloc");
	dmabuf_base = mem + 123;
	memset(dmabuf_base, 0x5a, 2 * bufsize);
	mr.addr = (uintptr_t)dmabuf_base;
	mr.length = 2 * bufsize;
	if (ioctl(fd, ODL_TB5_IOC_MEM_REG, &mr))
		die("MEM_REG");
	dmabuf_handle = mr.handle;
}

static void data_setup(int fd, uint64_t bufsize, uint32_t dir)
{
	if (use_memreg)
		memreg_setup(fd, bufsize, dir);
	else if (use_dmabuf)
		dmabuf_setup(fd, bufsize, dir);
}

/* open, set up tx + rx driver buffers (count 0: the driver's default of 2),
 * map them and bind the port
 */
static void chan_open_bufs(struct chan *c, uint32_t tx, uint64_t tx_size, uint32_t rx,
			   uint64_t rx_size)
{
	struct odl_tb5_bind b = { .size = sizeof(b), .port = port };

	c->fd = open_dev();
	memset(&c->bs, 0, sizeof(c->bs));
	c->bs.size = sizeof(c->bs);
	c->bs.tx_count = tx;
	c->bs.rx_count = rx;
	c->bs.tx_buf_size = tx_size;
	c->bs.rx_buf_size = rx_size;
	if (ioctl(c->fd, ODL_TB5_IOC_BUF_SETUP, &c->bs))
		die("BUF_SETUP");
	c->base = mmap(NULL, c->bs.mmap_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED, c->fd, 0);
	if (c->base == MAP_FAILED)
		die("mmap");
	if (ioctl(c->fd, ODL_TB5_IOC_BIND, &b))
		die("BIND");
}

static void chan_open(struct chan *c, uint64_t bufsize)
{
	chan_open_bufs(c, 0, bufsize, 0, bufsize);
}

static uint8_t *buf_ptr(struct chan *c, uint32_t id)
{
	return c->base + c->bs.offset[id];
}

/* key 0: in order; else keyed (ABI 1.4) */
static void post_recv_f(struct chan *c, uint32_t flags, uint32_t id,
			uint64_t off, uint64_t cap, uint64_t cookie, uint32_t key)
{
	struct odl_tb5_recv r = {
		.size = sizeof(r), .flags = flags, .buf_id = id, .offset = off,
		.capacity = cap, .cookie = cookie, .key = key,
	};

	if (ioctl(c->fd, ODL_TB5_IOC_RECV, &r))
		die("RECV");
}

static void post_recv(struct chan *c, uint32_t id, uint64_t off, uint64_t cap,
		      uint64_t cookie)
{
	post_recv_f(c, 0, id, off, cap, cookie, 0);
}

/* data receive k: RX buffer rx0 + (k & 1), or half (k & 1) of the DMA-buf */
static void post_data_recv(struct chan *c, uint32_t rx0, uint64_t bufsize,
			   uint32_t k)
{
	if (use_dmabuf)
		post_recv_f(c, ODL_TB5_F_DMABUF, dmabuf_handle,
			    (k & 1) * bufsize, bufsize, k, 0);
	else
		post_recv(c, rx0 + (k & 1), 0, bufsize, k);
}

static void do_send_f(struct chan *c, uint32_t flags, uint32_t id,
		      uint64_t off, uint64_t len, uint64_t cookie, uint32_t key)
{
	struct odl_tb5_send s = {
		.size = sizeof(s), .flags = flags, .buf_id = id,
		.dst_port = peer_port,
		.offset = off, .length = len, .cookie = cookie, .key = key,
	};

	while (ioctl(c->fd, ODL_TB5_IOC_SEND, &s)) {
		if (errno != EAGAIN)
			die("SEND");
		usleep(1000);
	}
}

static void do_send(struct chan *c, uint32_t id, uint64_t off, uint64_t len,
		    uint64_t cookie)
{
	do_send_f(c, 0, id, off, len, cookie, 0);
}

/* one completion, waiting up to 60 s; events are printed and skipped */
static struct odl_tb5_completion next_comp(struct chan *c)
{
	struct odl_tb5_completion e;
	struct odl_tb5_poll_cq pq = {
		.size = sizeof(pq), .max_entries = 1,
		.entries_ptr = (uintptr_t)&e, .entry_size = sizeof(e),
		.timeout_ms = 60000,
	};

	for (;;) {
		if (ioctl(c->fd, ODL_TB5_IOC_POLL_CQ, &pq))
			die("POLL_CQ");
		if (!pq.count) {
			fprintf(stderr, "odl_xfer: no completion in 60 s\n");
			exit(1);
		}
		if (e.type != ODL_TB5_COMP_EVENT)
			return e;
		fprintf(stderr, "event status %d flags 0x%x\n", e.status,
			e.flags);
	}
}

/* SEND completions until n arrived (others skipped); 1 on a failed one */
static int wait_sends(struct chan *c, uint32_t n)
{
	uint32_t done = 0;

	while (done < n) {
		struct odl_tb5_completion e = next_comp(c);

		if (e.type != ODL_TB5_COMP_SEND)
			continue;
		if (e.status) {
			fprintf(stderr, "send %llu failed: %d\n",
				(unsigned long long)e.cookie, e.status);
			return 1;
		}
		done++;
	}
	return 0;
}

static uint64_t max_size(void)
{
	uint64_t m = 4096;
	int i;

	for (i = 0; i < nsizes; i++)
		if (sizes[i] > m)
			m = sizes[i];
	return (m + 4095) & ~4095ull;
}

/* receiver: RX buffers 2 and 3 (ids tx_count..), ack from TX buffer 0 */
static int cmd_recv(void)
{
	uint64_t bufsize = max_size();
	struct chan c;
	uint32_t k, rx0;
	int bad = 0;
	uint64_t bytes = 0;

	chan_open(&c, bufsize);
	rx0 = c.bs.tx_count;
	data_setup(c.fd, bufsize, ODL_TB5_DMABUF_RX);
	post_data_recv(&c, rx0, bufsize, 0);
	post_data_recv(&c, rx0, bufsize, 1);
	printf("ready\n");
	fflush(stdout);
	for (k = 0; k < (uint32_t)count; k++) {
		struct odl_tb5_completion e;
		uint64_t want = sizes[k % nsizes];
		uint32_t id = rx0 + (k & 1);

		do {
			e = next_comp(&c);
		} while (e.type == ODL_TB5_COMP_SEND);
		if (e.type != ODL_TB5_COMP_RECV || e.cookie != k) {
			fprintf(stderr, "msg %u: completion type %u cookie %llu\n",
				k, e.type, (unsigned long long)e.cookie);
			return 1;
		}
		if (e.status || e.length != want || e.src_port != (uint32_t)peer_port) {
			fprintf(stderr, "msg %u: status %d length %llu (want %llu) src %u\n",
				k, e.status, (unsigned long long)e.length,
				(unsigned long long)want, e.src_port);
			bad++;
		} else if (check(use_dmabuf ? dmabuf_base + (k & 1) * bufsize :
				 buf_ptr(&c, id), want, k)) {
			bad++;
		}
		bytes += e.length;
		if (k + 2 < (uint32_t)count)
			post_data_recv(&c, rx0, bufsize, k + 2);
		memcpy(buf_ptr(&c, 0) + 16 * (k % 64), &k, 4);
		do_send(&c, 0, 16 * (k % 64), 4, 1000000 + k);
	}
	/* wait for the acks to leave */
	usleep(200000);
	printf("received %d messages, %llu bytes, %d bad\n", count,
	       (unsigned long long)bytes, bad);
	return bad ? 1 : 0;
}

static int cmd_send(void)
{
	uint64_t bufsize = max_size();
	struct chan c;
	uint32_t k, acked = 0, sent = 0, rx0;
	int ack_posted = 0;

	chan_open(&c, bufsize);
	rx0 = c.bs.tx_count;
	data_setup(c.fd, bufsize, ODL_TB5_DMABUF_TX);
	for (ack_posted = 0; ack_posted < 4 && ack_posted < count; ack_posted++)
		post_recv(&c, rx0, 64 * ack_posted, 64, ack_posted);
	while (acked < (uint32_t)count) {
		while (sent < (uint32_t)count && sent - acked < 2) {
			uint64_t len = sizes[sent % nsizes];
			uint32_t id = sent & 1;

			if (use_dmabuf) {
				fill(dmabuf_base + (sent & 1) * bufsize, len,
				     sent);
				do_send_f(&c, ODL_TB5_F_DMABUF, dmabuf_handle,
					  (sent & 1) * bufsize, len, sent, 0);
			} else {
				fill(buf_ptr(&c, id), len, sent);
				do_send(&c, id, 0, len, sent);
			}
			sent++;
		}
		struct odl_tb5_completion e = next_comp(&c);

		if (e.type == ODL_TB5_COMP_SEND) {
			if (e.status) {
				fprintf(stderr, "send %llu failed: %d\n",
					(unsigned long long)e.cookie, e.status);
				return 1;
			}
			continue;
		}
		if (e.status || e.length != 4) {
			fprintf(stderr, "ack: status %d len %llu\n", e.status,
				(unsigned long long)e.length);
			return 1;
		}
		memcpy(&k, buf_ptr(&c, rx0) + 64 * (e.cookie % 4), 4);
		if (k != acked) {
			fprintf(stderr, "ack for %u, want %u\n", k, acked);
			return 1;
		}
		acked++;
		if (ack_posted < count) {
			post_recv(&c, rx0, 64 * (e.cookie % 4), 64,
				  ack_posted);
			ack_posted++;
		}
	}
	printf("sent %u messages, all acknowledged\n", sent);
	return 0;
}

static int cmd_post(void)
{
	uint64_t bufsize = max_size();
	struct chan c;
	uint32_t sent, done = 0;

	chan_open(&c, bufsize);
	for (sent = 0; sent < (uint32_t)count; sent++) {
		uint64_t len = sizes[sent % nsizes];

		fill(buf_ptr(&c, 0), len, sent);
		do_send(&c, 0, 0, len, sent);
		/* one at a time: the TX buffer is reused */
		struct odl_tb5_completion e = next_comp(&c);

		if (e.type != ODL_TB5_COMP_SEND || e.cookie != sent || e.status) {
			fprintf(stderr, "send %u: completion type %u cookie %llu status %d\n",
				sent, e.type, (unsigned long long)e.cookie, e.status);
			return 1;
		}
		done++;
	}
	printf("posted %u messages to port %d, all sent\n", done, peer_port);
	return 0;
}

static int cmd_unagreed(void)
{
	struct chan c;

	chan_open(&c, 4096);
	memset(buf_ptr(&c, 0), 0xee, 100);
	do_send_f(&c, 0, 0, 0, 100, 1, 0x77);
	do_send(&c, 0, 0, 0, 2);
	if (wait_sends(&c, 2))
		return 1;
	printf("sent a keyed message (key 0x77) and an empty one to port %d, both completed\n",
	       peer_port);
	return 0;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* hold -g: COUNT messages, one RECV at a time (next_comp prints events) */
static int hold_receive(struct chan *c, uint64_t bufsize)
{
	uint32_t rx0 = c->bs.tx_count;
	int k, bad = 0;

	for (k = 0; k < count; k++) {
		struct odl_tb5_completion e;
		const char *what = "";

		post_recv(c, rx0, 0, bufsize, k);
		do {
			e = next_comp(c);
		} while (e.type != ODL_TB5_COMP_RECV);
		if (e.cookie != (uint64_t)k) {
			fprintf(stderr, "hold: receive %d completed as %llu\n", k,
				(unsigned long long)e.cookie);
			return 1;
		}
		if (!e.status) {
			if (check(buf_ptr(c, rx0), e.length, (uint32_t)k)) {
				what = " wrong bytes";
				bad++;
			} else {
				what = " verified";
			}
		}
		printf("recv %d: status %d length %llu%s\n", k, e.status,
		       (unsigned long long)e.length, what);
		fflush(stdout);
	}
	return bad ? 1 : 0;
}

static int cmd_hold(void)
{
	double end = mono_s() + idle_s;
	struct odl_tb5_completion e;
	struct odl_tb5_poll_cq pq = {
		.size = sizeof(pq), .max_entries = 1,
		.entries_ptr = (uintptr_t)&e, .entry_size = sizeof(e),
	};
	struct chan c;
	int lost = 0;

	chan_open(&c, go_file ? max_size() : 4096);
	printf("ready\n");
	fflush(stdout);
	while (mono_s() < end) {
		if (go_file && !access(go_file, F_OK))
			return hold_receive(&c, max_size());
		pq.timeout_ms = 200;
		if (ioctl(c.fd, ODL_TB5_IOC_POLL_CQ, &pq))
			die("POLL_CQ");
		if (!pq.count || e.type != ODL_TB5_COMP_EVENT)
			continue;
		if (e.flags & ODL_TB5_CF_MSG_LOST)
			lost++;
		printf("event status %d flags 0x%x\n", e.status, e.flags);
		fflush(stdout);
	}
	printf("held port %d for %d s: %d lost-message events\n", port, idle_s, lost);
	return 0;
}

/* post and withdraw keyed RECVs first..last (cookie = key) */
static void post_cancel(struct chan *c, uint32_t first, uint32_t last)
{
	struct odl_tb5_cancel cn = { .size = sizeof(cn) };
	uint32_t k;

	for (k = first; k <= last; k++) {
		post_recv_f(c, 0, c->bs.tx_count, ((k - 1) % 1024) * 64ull, 64, k, k);
		cn.key = k;
		if (ioctl(c->fd, ODL_TB5_IOC_CANCEL, &cn))
			die("CANCEL");
	}
}

/* POLL_CQ up to max entries, no wait, into ce; the count */
static uint32_t fetch(int fd, struct odl_tb5_completion *ce, uint32_t max)
{
	struct odl_tb5_poll_cq pq = {
		.size = sizeof(pq), .entries_ptr = (uintptr_t)ce,
		.entry_size = sizeof(ce[0]), .max_entries = max,
	};

	if (ioctl(fd, ODL_TB5_IOC_POLL_CQ, &pq))
		die("POLL_CQ");
	return pq.count;
}

/* ce[0..n) are the withdrawn RECVs first, first + 1, ...: 0 if so */
static int recvs_in_order(const struct odl_tb5_completion *ce, uint32_t n,
			  uint32_t first, const char *what)
{
	uint32_t k, bad = 0;

	for (k = 0; k < n; k++)
		if (ce[k].type != ODL_TB5_COMP_RECV || ce[k].cookie != first + k ||
		    ce[k].status != -ECANCELED)
			bad++;
	printf("%s: %u RECVs from %u on, %u of them not in order\n", what, n, first, bad);
	return bad != 0;
}

/* ce is the EVENTS_LOST report of lost (at least; at most the device's
 * count since lost0) events: 0 if so
 */
static int is_lost_report(int fd, const struct odl_tb5_completion *ce,
			  uint64_t lost, uint64_t lost0)
{
	struct odl_tb5_stats st;

	read_stats(fd, &st);
	printf("report: type %u status %d flags 0x%x length %llu (events lost: %llu)\n",
	       ce->type, ce->status, ce->flags, (unsigned long long)ce->length,
	       (unsigned long long)lost);
	return ce->type != ODL_TB5_COMP_EVENT || ce->status != -EOVERFLOW ||
	       ce->flags != ODL_TB5_CF_EVENTS_LOST || ce->length < lost ||
	       ce->length > st.events_lost - lost0;
}

static int cmd_overflow(int mid)
{
	enum { CQ = 1024, EARLY = 10 };
	static struct odl_tb5_completion ce[CQ];
	struct odl_tb5_stats st;
	struct pollfd pfd;
	double end = mono_s() + idle_s;
	uint64_t lost0, lost = 0;
	struct chan c;
	uint32_t n;
	int fails = 0;

	chan_open(&c, (uint64_t)CQ * 64);
	read_stats(c.fd, &st);
	lost0 = st.events_lost;
	post_cancel(&c, 1, CQ);
	printf("ready\n");
	fflush(stdout);
	while (mono_s() < end) {
		read_stats(c.fd, &st);
		lost = st.events_lost - lost0;
		if (lost)
			break;
		usleep(100000);
	}
	if (!lost) {
		printf("no event lost in %d s\n", idle_s);
		return 1;
	}
	if (!mid) {
		/* all 1024 fit, the report does not: it stays pending */
		n = fetch(c.fd, ce, CQ);
		fails += n != CQ || recvs_in_order(ce, n, 1, "fetched");
		pfd = (struct pollfd){ .fd = c.fd, .events = POLLIN };
		n = poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
		printf("then poll(): %s\n", n ? "POLLIN" : "not readable");
		fails += !n;
		n = fetch(c.fd, ce, 2);
		printf("then %u entries\n", n);
		fails += n != 1 || is_lost_report(c.fd, ce, lost, lost0);
	} else {
		/* 10 fetched, 10 more queued after the loss: the report
		 * comes between RECV 1024 and 1025, in one fetch
		 */
		n = fetch(c.fd, ce, EARLY);
		fails += n != EARLY || recvs_in_order(ce, n, 1, "first fetch");
		post_cancel(&c, CQ + 1, CQ + EARLY);
		n = fetch(c.fd, ce, CQ);
		printf("then %u entries (want %d)\n", n, CQ);
		fails += n != CQ ||
			 recvs_in_order(ce, CQ - EARLY, EARLY + 1, "before the report") ||
			 is_lost_report(c.fd, &ce[CQ - EARLY], lost, lost0) ||
			 recvs_in_order(ce + CQ - EARLY + 1, EARLY - 1, CQ + 1, "after it");
		n = fetch(c.fd, ce, CQ);
		fails += n != 1 || recvs_in_order(ce, n, CQ + EARLY, "last fetch");
	}
	n = fetch(c.fd, ce, CQ);
	printf("then %u entries\n", n);
	fails += n != 0;
	printf("%s\n", fails ? "FAILED" : "PASSED");
	return fails ? 1 : 0;
}

/* withdraw the keyed RECV posted with key and cookie: 1 unless it completed -ECANCELED */
static int cancel_one(struct chan *c, uint32_t key, uint64_t cookie)
{
	struct odl_tb5_cancel cn = { .size = sizeof(cn), .key = key };
	struct odl_tb5_completion e;

	if (ioctl(c->fd, ODL_TB5_IOC_CANCEL, &cn))
		die("CANCEL");
	e = next_comp(c);
	if (e.type != ODL_TB5_COMP_RECV || e.cookie != cookie || e.status != -ECANCELED) {
		fprintf(stderr, "cancel %u: completion type %u cookie %llu status %d\n", key,
			e.type, (unsigned long long)e.cookie, e.status);
		return 1;
	}
	return 0;
}

static int cmd_kick(void)
{
	double end = mono_s() + idle_s;
	struct chan c;
	uint32_t k;

	chan_open(&c, 4096);
	printf("ready\n");
	fflush(stdout);
	for (k = 1; mono_s() < end; k++) {
		post_recv_f(&c, 0, 2, 0, 4096, k, k);
		if (cancel_one(&c, k, k))
			return 1;
		usleep(200000);
	}
	printf("kicked %u times\n", k - 1);
	return 0;
}

/* flood/sink: message k is fill(k) with its first 8 bytes replaced by k
 * and ~k, so the sink can tell which message it got
 */
#define FLOOD_SLOTS	8

static void flood_fill(uint8_t *p, uint64_t len, uint32_t k)
{
	uint32_t nk = ~k;

	fill(p, len, k);
	memcpy(p, &k, 4);
	memcpy(p + 4, &nk, 4);
}

static int cmd_flood(void)
{
	uint64_t bufsize = max_size();
	struct chan c;
	uint32_t sent = 0, done = 0, i;
	uint32_t free_ids[FLOOD_SLOTS];
	int nfree = FLOOD_SLOTS;

	for (i = 0; i < (uint32_t)nsizes; i++) {
		if (sizes[i] < 8) {
			fprintf(stderr, "odl_xfer: flood: sizes must be 8 bytes or more\n");
			return 2;
		}
	}
	chan_open_bufs(&c, FLOOD_SLOTS, bufsize, 1, 4096);
	for (i = 0; i < FLOOD_SLOTS; i++)
		free_ids[i] = i;
	while (done < (uint32_t)count) {
		while (sent < (uint32_t)count && nfree) {
			uint64_t len = sizes[sent % nsizes];
			uint32_t id = free_ids[--nfree];

			flood_fill(buf_ptr(&c, id), len, sent);
			do_send(&c, id, 0, len, ((uint64_t)id << 32) | sent);
			sent++;
		}
		struct odl_tb5_completion e = next_comp(&c);

		if (e.type != ODL_TB5_COMP_SEND || e.status) {
			fprintf(stderr, "flood: send %llu: completion type %u status %d\n",
				(unsigned long long)(uint32_t)e.cookie, e.type, e.status);
			return 1;
		}
		free_ids[nfree++] = (uint32_t)(e.cookie >> 32);
		done++;
	}
	printf("flooded %u messages to port %d, all sent\n", done, peer_port);
	return 0;
}


/* the least time the sink waits for its first report */
#define SINK_FIRST_S 300

static int cmd_sink(void)
{
	uint64_t bufsize = max_size(), ok = 0, err = 0, lost = 0, bad = 0;
	uint64_t by_status[5] = { 0 }; /* EPROTO EIO EBADMSG EMSGSIZE other */
	uint8_t *want = malloc(bufsize);
	int64_t last = -1;
	int count_done = 0, verbose = getenv("ODL_SINK_VERBOSE") != NULL;
	int first_s = idle_s > SINK_FIRST_S ? idle_s : SINK_FIRST_S;
	int reported = 0;
	struct chan c;
	uint32_t i;

	if (!want)
		die("malloc");
	chan_open_bufs(&c, 1, 4096, FLOOD_SLOTS, bufsize);
	for (i = 0; i < FLOOD_SLOTS; i++)
		post_recv(&c, c.bs.tx_count + i, 0, bufsize, c.bs.tx_count + i);
	printf("ready\n");
	fflush(stdout);
	/* after COUNT receives, 2 s more: a message reported twice leaves a
	 * good one behind that would complete now
	 */
	while (ok + err + bad < (uint64_t)count + (count_done ? 1 : 0)) {
		struct odl_tb5_completion e;
		struct odl_tb5_poll_cq pq = {
			.size = sizeof(pq), .max_entries = 1,
			.entries_ptr = (uintptr_t)&e, .entry_size = sizeof(e),
			.timeout_ms = count_done ? 2000 :
				      (reported ? idle_s : first_s) * 1000,
		};

		if (ioctl(c.fd, ODL_TB5_IOC_POLL_CQ, &pq))
			die("POLL_CQ");
		if (!pq.count)
			break;
		reported = 1;
		if (e.type == ODL_TB5_COMP_EVENT) {
			if (e.flags & ODL_TB5_CF_MSG_LOST) {
				if (verbose)
					fprintf(stderr, "sink: lost-message event (%d) after message %lld\n",
						e.status, (long long)last);
				lost++;
			} else {
				fprintf(stderr, "sink: event status %d flags 0x%x\n",
					e.status, e.flags);
			}
			continue;
		}
		if (e.type != ODL_TB5_COMP_RECV)
			continue;
		if (e.status) {
			if (verbose)
				fprintf(stderr, "sink: receive failed (%d) after message %lld\n",
					e.status, (long long)last);
			err++;
			by_status[e.status == -EPROTO ? 0 : e.status == -EIO ? 1 :
				  e.status == -EBADMSG ? 2 : e.status == -EMSGSIZE ? 3 : 4]++;
		} else {
			const uint8_t *p = buf_ptr(&c, (uint32_t)e.cookie);
			uint32_t k, nk;

			memcpy(&k, p, 4);
			memcpy(&nk, p + 4, 4);
			if (e.length < 8 || nk != ~k || k >= (uint32_t)count ||
			    e.length != sizes[k % nsizes] ||
			    e.src_port != (uint32_t)peer_port || (int64_t)k <= last) {
				fprintf(stderr, "sink: bad delivery: length %llu src %u number %u (~%u), last %lld\n",
					(unsigned long long)e.length, e.src_port, k, ~nk,
					(long long)last);
				bad++;
			} else {
				flood_fill(want, e.length, k);
				if (memcmp(want, p, e.length)) {
					fprintf(stderr, "sink: message %u: wrong bytes\n", k);
					bad++;
				} else {
					ok++;
				}
				last = k;
			}
		}
		post_recv(&c, (uint32_t)e.cookie, 0, bufsize, e.cookie);
		if (ok + err + bad == (uint64_t)count)
			count_done = 1;
	}
	printf("sink: %llu messages: ok=%llu failed=%llu (EPROTO=%llu EIO=%llu EBADMSG=%llu EMSGSIZE=%llu other=%llu) lost_events=%llu bad=%llu receives=%llu\n",
	       (unsigned long long)count, (unsigned long long)ok,
	       (unsigned long long)err, (unsigned long long)by_status[0],
	       (unsigned long long)by_status[1], (unsigned long long)by_status[2],
	       (unsigned long long)by_status[3], (unsigned long long)by_status[4],
	       (unsigned long long)lost, (unsigned long long)bad,
	       (unsigned long long)(ok + err + bad));
	if (bad)
		fprintf(stderr, "sink: %llu messages delivered wrong\n", (unsigned long long)bad);
	/* lost-message events take no RECV (and go to every file) */
	if (ok + err + bad > (uint64_t)count)
		fprintf(stderr, "sink: more receives completed than messages sent: a message was reported twice\n");
	return bad || ok + err + bad > (uint64_t)count ? 1 : 0;
}

/* ---- keyed delivery (1.4) ----
 * krecv posts COUNT keyed RECVs (key 0x1000 + k, slot k of a region, in
 * reverse order) except message COUNT/2's, plus two unkeyed ones; ksend
 * sends message COUNT/2 first (its RECV is not posted yet: it must wait
 * without holding up the others), then the rest in ascending order, with
 * two unkeyed messages in between. Every message must land in its own
 * slot (nothing written past its length), the unkeyed ones in order.
 */
#define KEY0		0x1000u
#define UNKEYED0	5000u

static void key_region(struct chan *c, uint64_t total, uint32_t dir,
		       uint32_t *flags, uint32_t *id, uint8_t **base)
{
	if (use_memreg) {
		memreg_setup(c->fd, total / 2, dir);
		*flags = ODL_TB5_F_HANDLE;
		*id = dmabuf_handle;
		*base = dmabuf_base;
	} else {
		*flags = 0;
		*id = dir == ODL_TB5_DMABUF_RX ? c->bs.tx_count : 0;
		*base = buf_ptr(c, *id);
		memset(*base, 0x5a, total);
	}
}

static int keyed_check(uint8_t *base, uint64_t slot, uint32_t k,
		       const struct odl_tb5_completion *e)
{
	uint64_t want = sizes[k % nsizes], i;

	if (e->status || e->length != want) {
		fprintf(stderr, "keyed msg %u: status %d length %llu (want %llu)\n",
			k, e->status, (unsigned long long)e->length,
			(unsigned long long)want);
		return 1;
	}
	if (check(base + k * slot, want, k))
		return 1;
	for (i = want; i < slot && i < want + 64; i++) {
		if (base[k * slot + i] != 0x5a) {
			fprintf(stderr, "keyed msg %u: byte %llu past its end written\n",
				k, (unsigned long long)i);
			return 1;
		}
	}
	return 0;
}

static int cmd_krecv(void)
{
	uint64_t slot = max_size(), total = slot * (uint64_t)count;
	uint32_t late = (uint32_t)count / 2, flags, id, k, got = 0, unkeyed = 0;
	uint8_t *base;
	struct chan c;
	int bad = 0, i;

	if (count < 2 || count > 200)
		return 2;
	chan_open(&c, use_memreg ? 65536 : total);
	key_region(&c, total, ODL_TB5_DMABUF_RX, &flags, &id, &base);
	for (i = count - 1; i >= 0; i--)
		if ((uint32_t)i != late)
			post_recv_f(&c, flags, id, (uint64_t)i * slot, slot, (uint64_t)i,
				    KEY0 + (uint32_t)i);
	post_recv(&c, c.bs.tx_count + 1, 0, 64, UNKEYED0);
	post_recv(&c, c.bs.tx_count + 1, 64, 64, UNKEYED0 + 1);
	printf("ready\n");
	fflush(stdout);
	while (got < (uint32_t)count - 1 || unkeyed < 2) {
		struct odl_tb5_completion e = next_comp(&c);

		if (e.type != ODL_TB5_COMP_RECV)
			continue;
		if (e.cookie >= UNKEYED0) {
			const uint8_t *u = buf_ptr(&c, c.bs.tx_count + 1) + 64 * unkeyed;

			if (e.cookie != UNKEYED0 + unkeyed || e.status || e.length != 4 ||
			    u[0] != 'U' || u[1] != '0' + unkeyed) {
				fprintf(stderr, "unkeyed %u: cookie %llu status %d len %llu\n",
					unkeyed, (unsigned long long)e.cookie, e.status,
					(unsigned long long)e.length);
				bad++;
			}
			unkeyed++;
			continue;
		}
		k = (uint32_t)e.cookie;
		if (k >= (uint32_t)count || k == late) {
			fprintf(stderr, "unexpected keyed completion %u\n", k);
			return 1;
		}
		bad += keyed_check(base, slot, k, &e);
		got++;
	}
	/* the first message sent waited for this RECV */
	post_recv_f(&c, flags, id, (uint64_t)late * slot, slot, late, KEY0 + late);
	for (;;) {
		struct odl_tb5_completion e = next_comp(&c);

		if (e.type != ODL_TB5_COMP_RECV)
			continue;
		if (e.cookie != late) {
			fprintf(stderr, "late message: completion %llu\n",
				(unsigned long long)e.cookie);
			return 1;
		}
		bad += keyed_check(base, slot, late, &e);
		break;
	}
	printf("received %d keyed messages out of posting order (one posted after it arrived), 2 unkeyed in order, %d bad\n",
	       count, bad);
	return bad ? 1 : 0;
}

static int cmd_ksend(void)
{
	uint64_t slot = max_size(), total = slot * (uint64_t)count;
	uint32_t late = (uint32_t)count / 2, flags, id, k, n = 0;
	static const uint8_t u0[4] = { 'U', '0' }, u1[4] = { 'U', '1' };
	uint8_t *base;
	struct chan c;

	if (count < 2 || count > 200)
		return 2;
	chan_open(&c, use_memreg ? 65536 : total);
	key_region(&c, total, ODL_TB5_DMABUF_TX, &flags, &id, &base);
	for (k = 0; k < (uint32_t)count; k++)
		fill(base + k * slot, sizes[k % nsizes], k);
	memcpy(buf_ptr(&c, 1), u0, 4);
	memcpy(buf_ptr(&c, 1) + 64, u1, 4);
	do_send_f(&c, flags, id, late * slot, sizes[late % nsizes], late, KEY0 + late);
	n++;
	for (k = 0; k < (uint32_t)count; k++) {
		if (k == late)
			continue;
		do_send_f(&c, flags, id, k * slot, sizes[k % nsizes], k, KEY0 + k);
		if (++n == 3)
			do_send(&c, 1, 0, 4, UNKEYED0);
	}
	do_send(&c, 1, 64, 4, UNKEYED0 + 1);
	if (wait_sends(&c, (uint32_t)count + 2))
		return 1;
	printf("sent %u keyed and 2 unkeyed messages\n", n);
	return 0;
}

/*
 * Withdrawn keyed RECVs (ABI 1.7). kcrecv posts RECVs with keys KEY0 ..
 * KEY0 + n - 1 and withdraws them (CANCEL), then posts KEY0 + n, withdraws
 * it and posts it again, and one unkeyed RECV, and prints "ready". kcsend
 * sends n + 1 keyed messages (keys KEY0 .., the last one fill(n)) and an
 * unkeyed one ("U0"). kcrecv must get exactly the re-posted keyed one
 * (verified) and the unkeyed one: the driver discards the withdrawn keys'
 * messages on arrival (counted in rx_cancelled) instead of holding them.
 */
static int cmd_kcrecv(void)
{
	uint64_t slot = max_size(), want = sizes[count % nsizes];
	uint32_t rx, k, n = (uint32_t)count;
	int keyed = 0, unkeyed = 0;
	struct chan c;

	if (count < 1 || count > 200)
		return 2;
	chan_open(&c, slot);
	rx = c.bs.tx_count;
	for (k = 0; k <= n; k++) {
		post_recv_f(&c, 0, rx, 0, slot, k, KEY0 + k);
		if (cancel_one(&c, KEY0 + k, k))
			return 1;
	}
	memset(buf_ptr(&c, rx), 0x5a, slot);
	post_recv_f(&c, 0, rx, 0, slot, n, KEY0 + n);
	post_recv(&c, rx + 1, 0, 64, UNKEYED0);
	printf("ready\n");
	fflush(stdout);
	while (!keyed || !unkeyed) {
		struct odl_tb5_completion e = next_comp(&c);

		if (e.type == ODL_TB5_COMP_RECV && e.cookie == n && !keyed) {
			if (e.status || e.length != want || check(buf_ptr(&c, rx), want, n)) {
				fprintf(stderr, "re-posted key: status %d length %llu\n",
					e.status, (unsigned long long)e.length);
				return 1;
			}
			keyed = 1;
		} else if (e.type == ODL_TB5_COMP_RECV && e.cookie == UNKEYED0 && !unkeyed) {
			const uint8_t *u = buf_ptr(&c, rx + 1);

			if (e.status || e.length != 4 || u[0] != 'U' || u[1] != '0') {
				fprintf(stderr, "unkeyed: status %d length %llu\n", e.status,
					(unsigned long long)e.length);
				return 1;
			}
			unkeyed = 1;
		} else {
			fprintf(stderr, "unexpected completion type %u cookie %llu status %d\n",
				e.type, (unsigned long long)e.cookie, e.status);
			return 1;
		}
	}
	printf("withdrew %u keyed RECVs: got only the re-posted keyed message and the unkeyed one\n",
	       n);
	return 0;
}

static int cmd_kcsend(void)
{
	uint64_t slot = max_size(), len = sizes[count % nsizes];
	uint32_t k, n = (uint32_t)count;
	struct chan c;

	if (count < 1 || count > 200)
		return 2;
	chan_open(&c, slot);
	fill(buf_ptr(&c, 0), len, n);
	memcpy(buf_ptr(&c, 1), "U0", 2);
	for (k = 0; k <= n; k++)
		do_send_f(&c, 0, 0, 0, len, k, KEY0 + k);
	do_send(&c, 1, 0, 4, UNKEYED0);
	if (wait_sends(&c, n + 2))
		return 1;
	printf("sent %u keyed messages and an unkeyed one\n", n + 1);
	return 0;
}

/*
 * No room, and dropping the stale held back messages would not make it
 * (odl_pending_room): none of them is dropped. stallsend sends keyed
 * messages KEY0, KEY0 + 1 and KEY0 + 2 (sizes -s, say 1 MiB, 14 MiB,
 * 4 MiB), waiting -t seconds (longer than the receiver's rx_stall_ms)
 * after the first. stallrecv binds its port with no RECV posted: the
 * first message is held back and grows stale, the second is held back
 * fresh, and the third does not fit (16 MiB room) even with the first
 * dropped, so it holds the RX ring (rx_stalls). Once stallrecv sees that
 * stall it posts the three RECVs and must get every message intact and no
 * lost-message event. A driver that dropped the stale one for nothing
 * loses the first message.
 * With -f K stallrecv expects message K to fail instead (its RECV completes
 * with an error status, no bytes) and the others intact: the sender's
 * cable dropped K's last frame, so the message after it starts while K is
 * still being received (odl-faults).
 */
static int stall_fail = -1;	/* -f */

static uint64_t get_stat_rx_stalls(int fd)
{
	struct odl_tb5_stats st;

	read_stats(fd, &st);
	return st.rx_stalls;
}

static int cmd_stallrecv(void)
{
	uint64_t slot = max_size(), stalls;
	double end;
	uint32_t k, got = 0;
	int bad = 0, seen[3] = { 0 };
	struct chan c;

	if (nsizes != 3)
		return 2;
	chan_open_bufs(&c, 1, 4096, 3, slot);
	stalls = get_stat_rx_stalls(c.fd);
	printf("ready\n");
	fflush(stdout);
	end = mono_s() + 120;
	while (get_stat_rx_stalls(c.fd) == stalls) {
		if (mono_s() > end) {
			fprintf(stderr, "odl_xfer: no RX stall in 120 s\n");
			return 1;
		}
		usleep(10000);
	}
	for (k = 0; k < 3; k++) {
		memset(buf_ptr(&c, 1 + k), 0x5a, slot);
		post_recv_f(&c, 0, 1 + k, 0, slot, k, KEY0 + k);
	}
	while (got < 3) {
		struct odl_tb5_completion e = next_comp(&c);

		k = (uint32_t)e.cookie;
		if (e.type != ODL_TB5_COMP_RECV || k > 2 || seen[k]++) {
			fprintf(stderr, "unexpected completion type %u cookie %llu status %d\n",
				e.type, (unsigned long long)e.cookie, e.status);
			return 1;
		}
		if ((int)k == stall_fail) {
			if (!e.status || e.length) {
				fprintf(stderr, "message %u: status %d length %llu, not failed\n",
					k, e.status, (unsigned long long)e.length);
				bad++;
			} else {
				printf("message %u failed: status %d\n", k, e.status);
			}
		} else if (e.status || e.length != sizes[k] ||
			   check(buf_ptr(&c, 1 + k), sizes[k], k)) {
			fprintf(stderr, "message %u: status %d length %llu\n", k, e.status,
				(unsigned long long)e.length);
			bad++;
		}
		got++;
	}
	printf("stalled, then received 3 keyed messages posted late, %d bad\n", bad);
	return bad ? 1 : 0;
}

static int cmd_stallsend(void)
{
	uint64_t slot = max_size();
	uint32_t k;
	struct chan c;

	if (nsizes != 3)
		return 2;
	chan_open_bufs(&c, 3, slot, 1, 4096);
	for (k = 0; k < 3; k++)
		fill(buf_ptr(&c, k), sizes[k], k);
	do_send_f(&c, 0, 0, 0, sizes[0], 0, KEY0);
	if (wait_sends(&c, 1))
		return 1;
	sleep((unsigned int)idle_s);
	do_send_f(&c, 0, 1, 0, sizes[1], 1, KEY0 + 1);
	do_send_f(&c, 0, 2, 0, sizes[2], 2, KEY0 + 2);
	if (wait_sends(&c, 2))
		return 1;
	printf("sent 3 keyed messages, %d s between the first and the others\n", idle_s);
	return 0;
}

/*
 * Urgent messages (ABI 1.5). usend queues five big messages, 0..4 (16 MiB
 * - k * 4 KiB), then 5 and 6 (64 and 100 bytes) with ODL_TB5_F_URGENT, and
 * prints "queued". urecv binds its port but posts no RECV until the file
 * GOFILE exists (-g): the driver stages message 0, holds 1 in its RX ring,
 * the link fills (both rings hold about 32 MiB) and stops, so 3 and 4 have
 * not started when 5 and 6 are queued. Then it posts seven RECVs that each
 * fit any message and checks the arrival order: the big ones in order, 5
 * before 6 before 4 (which ones of 1..3 they pass depends on what had
 * started), or with -N (no flag) exactly 0 1 2 3 4 5 6. Every byte is
 * checked.
 */
#define URG_BIG (16ull << 20)
#define URG_NBIG 5
#define URG_N (URG_NBIG + 2)
static int no_urgent;		/* -N */

static uint64_t urg_len(int k)
{
	return k < URG_NBIG ? URG_BIG - 4096ull * (uint64_t)k : k == URG_NBIG ? 64 : 100;
}

/* message k: from TX buffer k (the small ones from the free tail of the last) */
static uint32_t urg_buf(int k)
{
	return k < URG_NBIG ? (uint32_t)k : URG_NBIG - 1;
}

static uint64_t urg_off(int k)
{
	return k < URG_NBIG ? 0 : URG_BIG - 4096ull * (uint64_t)(URG_N - k);
}

static int cmd_urecv(void)
{
	int pos[URG_N], got[URG_N], bad = 0, i, k, waited = 0;
	struct chan c;

	if (!go_file) {
		fprintf(stderr, "urecv: -g GOFILE missing\n");
		return 2;
	}
	chan_open_bufs(&c, 1, 4096, URG_N, URG_BIG);
	printf("ready\n");
	fflush(stdout);
	while (access(go_file, F_OK)) {
		if (++waited > 6000) {
			fprintf(stderr, "urecv: %s did not appear in 120 s\n", go_file);
			return 1;
		}
		usleep(20000);
	}
	for (i = 0; i < URG_N; i++)
		post_recv(&c, 1 + (uint32_t)i, 0, URG_BIG, (uint64_t)i);
	for (i = 0; i < URG_N;) {
		struct odl_tb5_completion e = next_comp(&c);

		if (e.type != ODL_TB5_COMP_RECV)
			continue;
		for (k = 0; k < URG_N && e.length != urg_len(k); k++)
			;
		if (e.status || e.cookie != (uint64_t)i || k == URG_N) {
			fprintf(stderr, "receive %d: status %d cookie %llu length %llu\n", i,
				e.status, (unsigned long long)e.cookie,
				(unsigned long long)e.length);
			return 1;
		}
		got[i] = k;
		pos[k] = i;
		if (check(buf_ptr(&c, 1 + (uint32_t)i), e.length, (uint32_t)k))
			bad++;
		i++;
	}
	printf("arrival order");
	for (i = 0; i < URG_N; i++)
		printf(" %d", got[i]);
	if (no_urgent) {
		printf(" (no urgent flag, want 0 1 2 3 4 5 6)\n");
		for (i = 0; i < URG_N; i++)
			bad += got[i] != i;
	} else {
		printf(" (5 and 6 urgent, want 0..4 in order, 5 before 6 before 4)\n");
		for (k = 1; k < URG_NBIG; k++)
			bad += pos[k - 1] > pos[k];
		bad += pos[URG_NBIG] > pos[URG_NBIG + 1] || pos[URG_NBIG + 1] > pos[URG_NBIG - 1];
	}
	printf("received %d messages, %d bad\n", URG_N, bad);
	return bad ? 1 : 0;
}

static int cmd_usend(void)
{
	struct chan c;
	int k;

	chan_open_bufs(&c, URG_NBIG, URG_BIG, 1, 4096);
	for (k = 0; k < URG_N; k++)
		fill(buf_ptr(&c, urg_buf(k)) + urg_off(k), urg_len(k), (uint32_t)k);
	for (k = 0; k < URG_N; k++)
		do_send_f(&c, k >= URG_NBIG && !no_urgent ? ODL_TB5_F_URGENT : 0, urg_buf(k),
			  urg_off(k), urg_len(k), (uint64_t)k, 0);
	printf("queued %d big messages, then 64 and 100 bytes%s\n", URG_NBIG,
	       no_urgent ? "" : " urgent");
	fflush(stdout);
	if (wait_sends(&c, URG_N))
		return 1;
	printf("sent %d messages\n", URG_N);
	return 0;
}

/* ---- bad input table ---- */
static int nfail, ntest;

static void expect(const char *what, int ret, int want_errno)
{
	int got = ret ? errno : 0;

	ntest++;
	if (got == want_errno) {
		printf("ok %d - %s -> %s\n", ntest, what,
		       want_errno ? strerror(want_errno) : "0");
	} else {
		nfail++;
		printf("not ok %d - %s: got %s, want %s\n", ntest, what,
		       got ? strerror(got) : "0",
		       want_errno ? strerror(want_errno) : "0");
	}
}

#define Z(x) memset(&(x), 0, sizeof(x))

/* MEM_REG (1.4): every field checked; pins only what it may */
static void badinput_memreg(int fd)
{
	static uint8_t mem[3 * 4096 + 200];
	struct odl_tb5_mem_reg mr, ok;
	struct odl_tb5_dmabuf_release rl;
	struct odl_tb5_send s;
	struct odl_tb5_recv r;
	uint32_t h[ODL_TB5_MAX_DMABUFS];
	void *ro, *gone, *half;
	int i, n;

	ro = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	gone = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro == MAP_FAILED || gone == MAP_FAILED)
		die("mmap");
	munmap(gone, 8192);
	half = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (half == MAP_FAILED)
		die("mmap");
	munmap((uint8_t *)half + 4096, 4096);
	Z(ok); ok.size = sizeof(ok); ok.flags = ODL_TB5_MEM_TX;
	ok.addr = (uintptr_t)mem + 100; ok.length = 3 * 4096;
	mr = ok; mr.size = 4;
	expect("MEM_REG size 4", ioctl(fd, ODL_TB5_IOC_MEM_REG, &mr), EINVAL);
	mr = ok; mr.flags = 0;
	expect("MEM_REG no direction", ioctl(fd, ODL_TB5_IOC_MEM_REG, &mr), EINVAL);
	mr = ok; mr.flags = 4;
	expect("MEM_REG unknown flag", ioctl(fd, ODL_TB5_IOC_MEM_REG, &mr), EINVAL);
	mr = ok; mr.handle = 1;
	expect("MEM_REG handle set on input", ioctl(fd, ODL_TB5_IOC_MEM_REG, &mr), EINVAL);
	mr = ok; mr.reserved = 1;
	expect("MEM_REG reserved", ioctl(fd, ODL_TB5_IOC_MEM_REG, &mr), EINVAL);
	mr = ok; mr.addr = 0;
	expect("MEM_REG address 0", ioctl(fd, ODL_TB5_IOC_MEM_REG, &mr), EINVAL);
	mr = ok; mr.length = 0;
	expect("MEM_REG length 0", ioctl(fd, ODL_TB5_IOC_MEM_REG, &mr), EINVAL);
	mr = ok; mr.length = ODL_TB5_MAX_MEM_REG + 1;
	expect("MEM_REG length > 1 GiB", ioctl(fd, ODL_TB5_IOC_MEM_REG, &mr), EINVAL);
	mr = ok; mr.addr = ~0ull - 100; mr.length = 4096;
	expect("MEM_REG range wraps", ioctl(fd, ODL_TB5_IOC_MEM_REG, &mr), EINVAL);
	mr = ok; mr.addr = 0xffff888000000000ull;
	expect("MEM_REG kernel address", ioctl(fd, ODL_TB5_IOC_MEM_REG, &mr), EFAULT);
	mr = ok; mr.addr = (uintptr_t)gone;
	expect("MEM_REG unmapped memory", ioctl(fd, ODL_TB5_IOC_MEM_REG, &mr), EFAULT);
	mr = ok; mr.addr = (uintptr_t)ro;
	expect("MEM_REG read-only mapping", ioctl(fd, ODL_TB5_IOC_MEM_REG, &mr), EFAULT);
	mr = ok; mr.addr = (uintptr_t)half + 8; mr.length = 8192;
	expect("MEM_REG runs into unmapped memory", ioctl(fd, ODL_TB5_IOC_MEM_REG, &mr), EFAULT);
	/* good: TX only, odd offset; then every handle slot */
	for (n = 0; n < ODL_TB5_MAX_DMABUFS; n++) {
		mr = ok;
		if (ioctl(fd, ODL_TB5_IOC_MEM_REG, &mr))
			break;
		h[n] = mr.handle;
	}
	ntest++;
	if (n == ODL_TB5_MAX_DMABUFS && h[0] >= 1 && h[0] <= ODL_TB5_MAX_DMABUFS) {
		printf("ok %d - MEM_REG: %d handles (odd offset, 3 pages)\n", ntest, n);
	} else {
		nfail++;
		printf("not ok %d - MEM_REG: only %d handles: %s\n", ntest, n, strerror(errno));
	}
	mr = ok;
	expect("MEM_REG with every handle slot taken", ioctl(fd, ODL_TB5_IOC_MEM_REG, &mr), ENOSPC);
	Z(s); s.size = sizeof(s); s.flags = ODL_TB5_F_HANDLE; s.buf_id = h[0];
	s.dst_port = 1; s.offset = 3 * 4096 - 10; s.length = 11;
	expect("SEND from registered memory past its end", ioctl(fd, ODL_TB5_IOC_SEND, &s), ERANGE);
	Z(r); r.size = sizeof(r); r.flags = ODL_TB5_F_HANDLE; r.buf_id = h[0];
	r.capacity = 4096;
	expect("RECV into send-only registered memory", ioctl(fd, ODL_TB5_IOC_RECV, &r), EINVAL);
	for (i = 0; i < n; i++) {
		Z(rl); rl.size = sizeof(rl); rl.handle = h[i];
		if (ioctl(fd, ODL_TB5_IOC_DMABUF_RELEASE, &rl))
			break;
	}
	ntest++;
	if (i == n) {
		printf("ok %d - MEM_REG: all %d handles released\n", ntest, n);
	} else {
		nfail++;
		printf("not ok %d - release of handle %u: %s\n", ntest, h[i], strerror(errno));
	}
	Z(rl); rl.size = sizeof(rl); rl.handle = h[0];
	expect("DMABUF_RELEASE of a released MEM_REG handle", ioctl(fd, ODL_TB5_IOC_DMABUF_RELEASE, &rl), ENOENT);
	munmap(ro, 8192);
	munmap(half, 4096);
}

static void expect_comp(const char *what, int fd, uint64_t cookie, int status)
{
	struct odl_tb5_completion e[4];
	struct odl_tb5_poll_cq pq = {
		.size = sizeof(pq), .max_entries = 4, .entries_ptr = (uintptr_t)e,
		.entry_size = sizeof(e[0]), .timeout_ms = 1000,
	};
	int rc = ioctl(fd, ODL_TB5_IOC_POLL_CQ, &pq);

	ntest++;
	if (!rc && pq.count == 1 && e[0].type == ODL_TB5_COMP_RECV &&
	    e[0].cookie == cookie && e[0].status == status && !e[0].length) {
		printf("ok %d - %s: one RECV completion, cookie %llu, status %d\n",
		       ntest, what, (unsigned long long)cookie, status);
	} else {
		nfail++;
		printf("not ok %d - %s: rc %d count %u type %u cookie %llu status %d\n",
		       ntest, what, rc, pq.count, pq.count ? e[0].type : 0,
		       (unsigned long long)(pq.count ? e[0].cookie : 0),
		       pq.count ? e[0].status : 0);
	}
}

/* keyed RECVs and CANCEL (1.4); fd is bound with RX buffers 2 and 3 */
static void badinput_keyed(int fd, int fd2)
{
	struct odl_tb5_recv r;
	struct odl_tb5_cancel cn;

	Z(r); r.size = sizeof(r); r.buf_id = 2; r.capacity = 4096; r.key = 77;
	r.cookie = 1077;
	expect("RECV with key 77", ioctl(fd, ODL_TB5_IOC_RECV, &r), 0);
	r.offset = 4096; r.cookie = 2077;
	expect("RECV key 77 again (posted)", ioctl(fd, ODL_TB5_IOC_RECV, &r), EEXIST);
	expect("RECV key 77 on another, unbound open", ioctl(fd2, ODL_TB5_IOC_RECV, &r), EDESTADDRREQ);
	Z(cn); cn.size = 4; cn.key = 77;
	expect("CANCEL size 4", ioctl(fd, ODL_TB5_IOC_CANCEL, &cn), EINVAL);
	cn.size = sizeof(cn); cn.flags = 1;
	expect("CANCEL flags", ioctl(fd, ODL_TB5_IOC_CANCEL, &cn), EINVAL);
	cn.flags = 0; cn.reserved = 1;
	expect("CANCEL reserved", ioctl(fd, ODL_TB5_IOC_CANCEL, &cn), EINVAL);
	cn.reserved = 0; cn.key = 0;
	expect("CANCEL key 0", ioctl(fd, ODL_TB5_IOC_CANCEL, &cn), EINVAL);
	cn.key = 78;
	expect("CANCEL a key never posted", ioctl(fd, ODL_TB5_IOC_CANCEL, &cn), ENOENT);
	cn.key = 77;
	expect("CANCEL key 77 from another open", ioctl(fd2, ODL_TB5_IOC_CANCEL, &cn), ENOENT);
	expect("CANCEL key 77", ioctl(fd, ODL_TB5_IOC_CANCEL, &cn), 0);
	expect_comp("the cancelled RECV completes", fd, 1077, -ECANCELED);
	expect("CANCEL key 77 again", ioctl(fd, ODL_TB5_IOC_CANCEL, &cn), ENOENT);
	r.offset = 0; r.cookie = 3077;
	expect("RECV key 77 after the cancel", ioctl(fd, ODL_TB5_IOC_RECV, &r), 0);
	expect("CANCEL it too", ioctl(fd, ODL_TB5_IOC_CANCEL, &cn), 0);
	expect_comp("the second cancelled RECV completes", fd, 3077, -ECANCELED);
}

/* wait (up to 10 s) until child pid sleeps inside system call nr or nr2 */
static int child_asleep_in(pid_t pid, long nr, long nr2)
{
	char path[64], buf[256];
	int i;

	for (i = 0; i < 1000; i++) {
		long now = -1;
		int asleep = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
		f = fopen(path, "r");
		if (f && fgets(buf, sizeof(buf), f))
			now = strtol(buf, NULL, 10);
		if (f)
			fclose(f);
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		f = fopen(path, "r");
		if (f && fgets(buf, sizeof(buf), f)) {
			char *c = strrchr(buf, ')');

			asleep = c && c[1] == ' ' && c[2] == 'S' &&
				 (now == nr || now == nr2);
		}
		if (f)
			fclose(f);
		if (asleep)
			return 1;
		usleep(10000);
	}
	return 0;
}

/* a child that poll()s fd for events (20 s): exit 0 if they came within
 * 15 s, 2 if later (a timed-out poll looks once more), 1 if never
 */
static pid_t poll_child(int fd, short events)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct pollfd p = { .fd = fd, .events = events };
		struct timespec t0, t1;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (poll(&p, 1, 20000) != 1 || !(p.revents & events))
			_exit(1);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		_exit(t1.tv_sec - t0.tv_sec < 15 ? 0 : 2);
	}
	return pid;
}

/* child pid's exit status, -1 if it did not exit */
static int child_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* A child sleeps in poll() for POLLOUT on fd (full queue); once it is seen
 * asleep there, the parent fetches one completion. The child must wake with
 * POLLOUT well before its 20 s poll runs out. Returns 0 if it did.
 */
static int poll_out_child(int fd, struct odl_tb5_poll_cq *pq)
{
	pid_t pid = poll_child(fd, POLLOUT);
	int asleep, st;

	if (pid < 0)
		return -1;
	asleep = child_asleep_in(pid, SYS_poll, SYS_ppoll);
	pq->max_entries = 1;
	if (ioctl(fd, ODL_TB5_IOC_POLL_CQ, pq) || pq->count != 1)
		pq->count = 0;
	st = child_status(pid);
	return asleep ? st : -1;
}

/* one completion on fd: a keyed RECV (key 9001), withdrawn */
static int one_completion(int fd, uint64_t cookie)
{
	struct odl_tb5_recv r;
	struct odl_tb5_cancel cn;

	Z(r); r.size = sizeof(r); r.buf_id = 3; r.capacity = 64;
	r.key = 9001; r.cookie = cookie;
	Z(cn); cn.size = sizeof(cn); cn.key = 9001;
	if (ioctl(fd, ODL_TB5_IOC_RECV, &r) || ioctl(fd, ODL_TB5_IOC_CANCEL, &cn))
		return -1;
	return 0;
}

/* fetch and drop every completion queued on fd */
static void drain_cq(int fd)
{
	static struct odl_tb5_completion ce[64];
	struct odl_tb5_poll_cq pq;

	Z(pq); pq.size = sizeof(pq); pq.entries_ptr = (uintptr_t)ce;
	pq.entry_size = sizeof(ce[0]); pq.max_entries = 64;
	while (!ioctl(fd, ODL_TB5_IOC_POLL_CQ, &pq) && pq.count)
		;
}

/* poll() beside a POLL_CQ waiting for a batch of 2 on the same file: one
 * completion must wake poll() (POLLIN), the second the batch waiter
 */
static void badinput_poll_beside_batch(int fd)
{
	static struct odl_tb5_completion ce[4];
	struct odl_tb5_poll_cq pq;
	pid_t bpid, ppid;
	int asleep, pst = -1, bst, rc;

	drain_cq(fd);
	Z(pq); pq.size = sizeof(pq); pq.entries_ptr = (uintptr_t)ce;
	pq.entry_size = sizeof(ce[0]); pq.max_entries = 4;
	bpid = fork();
	if (bpid == 0) {
		pq.min_entries = 2; pq.timeout_ms = 20000;
		_exit(ioctl(fd, ODL_TB5_IOC_POLL_CQ, &pq) || pq.count != 2 ||
		      ce[0].cookie != 9101 || ce[1].cookie != 9102);
	}
	asleep = bpid > 0 && child_asleep_in(bpid, SYS_ioctl, SYS_ioctl);
	ppid = poll_child(fd, POLLIN);
	asleep = asleep && ppid > 0 && child_asleep_in(ppid, SYS_poll, SYS_ppoll);
	rc = one_completion(fd, 9101);
	if (ppid > 0)
		pst = child_status(ppid);
	rc = rc || one_completion(fd, 9102);
	bst = bpid > 0 ? child_status(bpid) : -1;
	ntest++;
	if (asleep && !rc && !pst && !bst) {
		printf("ok %d - poll() beside a POLL_CQ batch waiter: woken by the first completion, the batch by the second\n",
		       ntest);
	} else {
		nfail++;
		printf("not ok %d - poll() beside a batch waiter: both asleep %d, completions %d, poll child %d (2: woken only after 15 s), batch child %d\n",
		       ntest, asleep, rc, pst, bst);
	}
}

/* The completion queue (1024) never drops a SEND or RECV completion: four
 * rounds of 256 keyed RECVs, each withdrawn and never fetched, fill it;
 * then SEND and RECV are refused (EAGAIN, no POLLOUT) until completions
 * are fetched, and all 1024 come out, in order.
 */
static void badinput_cq(int fd)
{
	enum { CQ = 1024, ROUND = 256 };
	static struct odl_tb5_completion ce[CQ];
	struct odl_tb5_recv r;
	struct odl_tb5_send s;
	struct odl_tb5_cancel cn;
	struct odl_tb5_poll_cq pq;
	struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLOUT };
	uint32_t k, bad = 0, first;
	int rr = 0, rc = 0, woke;

	/* start from an empty queue: earlier lines may have left some */
	drain_cq(fd);
	Z(pq); pq.size = sizeof(pq); pq.entries_ptr = (uintptr_t)ce;
	pq.entry_size = sizeof(ce[0]); pq.max_entries = CQ;
	Z(r); r.size = sizeof(r); r.buf_id = 3; r.capacity = 64;
	Z(cn); cn.size = sizeof(cn);
	for (k = 1; k <= CQ && !rr && !rc; k++) {
		r.key = k; r.cookie = k; r.offset = (k - 1) * 64ull;
		rr = ioctl(fd, ODL_TB5_IOC_RECV, &r) ? errno : 0;
		if (!rr && k % ROUND == 0) {
			/* a round posted: withdraw it, completions left queued */
			for (cn.key = k - ROUND + 1; cn.key <= k && !rc; cn.key++)
				rc = ioctl(fd, ODL_TB5_IOC_CANCEL, &cn) ? errno : 0;
		}
	}
	ntest++;
	if (!rr && !rc) {
		printf("ok %d - 4 x 256 keyed RECVs posted and cancelled, nothing fetched\n", ntest);
	} else {
		nfail++;
		printf("not ok %d - filling the queue: RECV key %u: %s, CANCEL: %s\n",
		       ntest, k - 1, strerror(rr), strerror(rc));
	}
	r.key = CQ + 1; r.cookie = CQ + 1; r.offset = 0;
	expect("RECV with the completion queue full", ioctl(fd, ODL_TB5_IOC_RECV, &r), EAGAIN);
	Z(s); s.size = sizeof(s); s.buf_id = 0; s.dst_port = 1; s.length = 1;
	expect("SEND with the completion queue full", ioctl(fd, ODL_TB5_IOC_SEND, &s), EAGAIN);
	ntest++;
	if (poll(&pfd, 1, 0) == 1 && pfd.revents == POLLIN) {
		printf("ok %d - poll: POLLIN, no POLLOUT\n", ntest);
	} else {
		nfail++;
		printf("not ok %d - poll: revents 0x%x\n", ntest, pfd.revents);
	}
	/* room made on a full queue wakes a poll() waiting for POLLOUT */
	woke = poll_out_child(fd, &pq);
	first = pq.count;
	ntest++;
	if (!woke && first == 1) {
		printf("ok %d - a poll() asleep for POLLOUT wakes when a completion is fetched\n", ntest);
	} else {
		nfail++;
		printf("not ok %d - POLLOUT wake: child %d (1: no POLLOUT in 20 s, 2: only after 15 s, -1: never seen asleep in poll), fetched %u\n",
		       ntest, woke, first);
	}
	pq.max_entries = CQ - first;
	pq.entries_ptr = (uintptr_t)(ce + first);
	if (ioctl(fd, ODL_TB5_IOC_POLL_CQ, &pq))
		pq.count = 0;
	pq.count += first;
	pq.entries_ptr = (uintptr_t)ce;
	for (k = 0; k < pq.count; k++)
		if (ce[k].type != ODL_TB5_COMP_RECV || ce[k].cookie != k + 1 ||
		    ce[k].status != -ECANCELED)
			bad++;
	ntest++;
	if (pq.count == CQ && !bad) {
		printf("ok %d - all 1024 cancelled RECVs complete, in order\n", ntest);
	} else {
		nfail++;
		printf("not ok %d - fetched %u completions, %u of them wrong\n",
		       ntest, pq.count, bad);
	}
	expect("RECV once the queue is fetched", ioctl(fd, ODL_TB5_IOC_RECV, &r), 0);
	cn.key = CQ + 1;
	expect("CANCEL it", ioctl(fd, ODL_TB5_IOC_CANCEL, &cn), 0);
	expect_comp("its completion", fd, CQ + 1, -ECANCELED);
}

static int cmd_badinput(void)
{
	int fd = open_dev(), fd2 = open_dev();
	struct odl_tb5_info in;
	struct odl_tb5_buf_setup bs;
	struct odl_tb5_bind b;
	struct odl_tb5_send s;
	struct odl_tb5_recv r;
	struct odl_tb5_poll_cq pq;
	struct odl_tb5_completion ce[4];
	struct odl_tb5_stats st;
	struct odl_tb5_dmabuf_import im;
	struct odl_tb5_dmabuf_release rl;
	struct odl_tb5_submit sb;
	struct odl_tb5_sqe sq[3];
	struct odl_tb5_cancel cn;
	unsigned char big[512];
	void *m;

	/* generic size rules */
	Z(in); in.size = 4;
	expect("GET_INFO size 4", ioctl(fd, ODL_TB5_IOC_GET_INFO, &in), EINVAL);
	memset(big, 0, sizeof(big)); *(uint32_t *)big = sizeof(big);
	expect("GET_INFO larger size, zero tail",
	       ioctl(fd, ODL_TB5_IOC_GET_INFO, big), 0);
	big[300] = 1;
	expect("GET_INFO larger size, nonzero tail",
	       ioctl(fd, ODL_TB5_IOC_GET_INFO, big), E2BIG);
	{
		static uint32_t huge[2048];	/* 8 KiB, all zero past size */

		huge[0] = sizeof(huge);
		expect("GET_INFO size 8192, zero tail (over 4096)",
		       ioctl(fd, ODL_TB5_IOC_GET_INFO, huge), E2BIG);
	}
	expect("GET_INFO NULL", ioctl(fd, ODL_TB5_IOC_GET_INFO, NULL), EFAULT);
	expect("unknown ioctl nr", ioctl(fd, _IOWR(ODL_TB5_IOC_MAGIC, 0x7f, struct odl_tb5_info), &in), ENOTTY);
	expect("wrong magic", ioctl(fd, _IOWR('x', 0, struct odl_tb5_info), &in), ENOTTY);
	expect("wrong direction", ioctl(fd, _IOR(ODL_TB5_IOC_MAGIC, 0, struct odl_tb5_info), &in), ENOTTY);

	/* before setup / bind */
	Z(s); s.size = sizeof(s); s.dst_port = 1; s.length = 1;
	expect("SEND unbound", ioctl(fd, ODL_TB5_IOC_SEND, &s), EDESTADDRREQ);
	Z(r); r.size = sizeof(r); r.capacity = 1;
	expect("RECV unbound", ioctl(fd, ODL_TB5_IOC_RECV, &r), EDESTADDRREQ);
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	expect("mmap before BUF_SETUP", m == MAP_FAILED ? -1 : 0, ENOBUFS);

	/* bind */
	Z(b); b.size = sizeof(b);
	expect("BIND port 0", ioctl(fd, ODL_TB5_IOC_BIND, &b), EINVAL);
	b.port = 256;
	expect("BIND port 256", ioctl(fd, ODL_TB5_IOC_BIND, &b), EINVAL);
	b.port = 9; b.flags = 1;
	expect("BIND flags", ioctl(fd, ODL_TB5_IOC_BIND, &b), EINVAL);
	b.flags = 0; b.reserved = 1;
	expect("BIND reserved", ioctl(fd, ODL_TB5_IOC_BIND, &b), EINVAL);
	b.reserved = 0;
	expect("BIND port 9", ioctl(fd, ODL_TB5_IOC_BIND, &b), 0);
	expect("BIND again", ioctl(fd, ODL_TB5_IOC_BIND, &b), EALREADY);
	expect("BIND taken port (other open)", ioctl(fd2, ODL_TB5_IOC_BIND, &b), EADDRINUSE);

	s.dst_port = 1; s.length = 1;
	expect("SEND without buffers", ioctl(fd, ODL_TB5_IOC_SEND, &s), ENOBUFS);

	/* buffer setup */
	Z(bs); bs.size = sizeof(bs); bs.flags = 1;
	expect("BUF_SETUP flags", ioctl(fd, ODL_TB5_IOC_BUF_SETUP, &bs), EINVAL);
	Z(bs); bs.size = sizeof(bs); bs.tx_count = 9;
	expect("BUF_SETUP 9 TX buffers", ioctl(fd, ODL_TB5_IOC_BUF_SETUP, &bs), EINVAL);
	Z(bs); bs.size = sizeof(bs); bs.tx_buf_size = 1000;
	expect("BUF_SETUP unaligned size", ioctl(fd, ODL_TB5_IOC_BUF_SETUP, &bs), EINVAL);
	Z(bs); bs.size = sizeof(bs); bs.rx_buf_size = 128ull << 20;
	expect("BUF_SETUP 128 MiB buffer", ioctl(fd, ODL_TB5_IOC_BUF_SETUP, &bs), EINVAL);
	Z(bs); bs.size = sizeof(bs); bs.tx_count = 8; bs.rx_count = 8;
	bs.tx_buf_size = 64 << 20; bs.rx_buf_size = 64 << 20;
	expect("BUF_SETUP 1 GiB in all", ioctl(fd, ODL_TB5_IOC_BUF_SETUP, &bs), EINVAL);
	Z(bs); bs.size = sizeof(bs); bs.tx_buf_size = 65536; bs.rx_buf_size = 65536;
	expect("BUF_SETUP 2x2x64KiB", ioctl(fd, ODL_TB5_IOC_BUF_SETUP, &bs), 0);
	expect("BUF_SETUP again", ioctl(fd, ODL_TB5_IOC_BUF_SETUP, &bs), EBUSY);
	m = mmap(NULL, bs.mmap_len + 4096, PROT_READ, MAP_SHARED, fd, 0);
	expect("mmap past the area", m == MAP_FAILED ? -1 : 0, EINVAL);
	m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	expect("mmap MAP_PRIVATE", m == MAP_FAILED ? -1 : 0, EINVAL);
	m = mmap(NULL, bs.mmap_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	expect("mmap whole area", m == MAP_FAILED ? -1 : 0, 0);
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd2, 0);
	expect("other open cannot map this area", m == MAP_FAILED ? -1 : 0, ENOBUFS);

	/* send */
	Z(s); s.size = sizeof(s); s.dst_port = 1; s.length = 1; s.flags = 4;
	expect("SEND unknown flag", ioctl(fd, ODL_TB5_IOC_SEND, &s), EINVAL);
	s.flags = ODL_TB5_F_URGENT; s.length = ODL_TB5_URGENT_MAX + 1;
	expect("SEND urgent longer than URGENT_MAX (1.5)", ioctl(fd, ODL_TB5_IOC_SEND, &s),
	       EMSGSIZE);
	s.flags = ODL_TB5_F_URGENT | 8; s.length = 1;
	expect("SEND urgent with an unknown flag", ioctl(fd, ODL_TB5_IOC_SEND, &s), EINVAL);
	s.flags = ODL_TB5_F_URGENT; s.dst_port = 0;
	expect("SEND urgent dst_port 0", ioctl(fd, ODL_TB5_IOC_SEND, &s), EINVAL);
	s.flags = 0; s.dst_port = 0;
	expect("SEND dst_port 0", ioctl(fd, ODL_TB5_IOC_SEND, &s), EINVAL);
	s.dst_port = 300;
	expect("SEND dst_port 300", ioctl(fd, ODL_TB5_IOC_SEND, &s), EINVAL);
	/* 1.9: length 0 is an empty message, to a peer that agreed to them;
	 * its other fields are checked as any SEND's
	 */
	Z(in); in.size = sizeof(in);
	expect("GET_INFO", ioctl(fd, ODL_TB5_IOC_GET_INFO, &in), 0);
	s.dst_port = 1; s.length = 0; s.offset = 65537;
	if (in.features & ODL_TB5_FEAT_EMPTY)
		expect("SEND length 0 past the end", ioctl(fd, ODL_TB5_IOC_SEND, &s), ERANGE);
	else
		expect("SEND length 0 (peer without empty messages)",
		       ioctl(fd, ODL_TB5_IOC_SEND, &s), EOPNOTSUPP);
	/* 1.4: a key only to a peer that agreed to keys (with one, this SEND
	 * would go out: the odl-badinput scenario's features_off round runs it)
	 */
	if (!(in.features & ODL_TB5_FEAT_KEYED)) {
		s.offset = 0; s.length = 1; s.key = 9;
		expect("SEND with a key (peer without keyed messages)",
		       ioctl(fd, ODL_TB5_IOC_SEND, &s), EOPNOTSUPP);
		s.key = 0; s.length = 0;
	}
	s.offset = 0; s.dst_port = 0;
	expect("SEND length 0 dst_port 0", ioctl(fd, ODL_TB5_IOC_SEND, &s), EINVAL);
	s.dst_port = 1;
	s.length = (16u << 20) + 1;
	expect("SEND length > max_msg", ioctl(fd, ODL_TB5_IOC_SEND, &s), EMSGSIZE);
	s.length = 1; s.buf_id = 4;
	expect("SEND buffer id 4", ioctl(fd, ODL_TB5_IOC_SEND, &s), ENOENT);
	s.buf_id = 2;
	expect("SEND from an RX buffer", ioctl(fd, ODL_TB5_IOC_SEND, &s), EINVAL);
	s.buf_id = 0; s.offset = 65536;
	expect("SEND offset at end", ioctl(fd, ODL_TB5_IOC_SEND, &s), ERANGE);
	s.offset = 65535; s.length = 2;
	expect("SEND range past end", ioctl(fd, ODL_TB5_IOC_SEND, &s), ERANGE);
	s.offset = ~0ull; s.length = 2;
	expect("SEND offset overflow", ioctl(fd, ODL_TB5_IOC_SEND, &s), ERANGE);
	s.offset = 0; s.length = 1; s.flags = ODL_TB5_F_DMABUF; s.buf_id = 1;
	expect("SEND unknown DMA-buf handle", ioctl(fd, ODL_TB5_IOC_SEND, &s), ENOENT);
	s.flags = 0; s.buf_id = 0; s.key = 3; s.reserved = 1;
	expect("SEND reserved (1.4)", ioctl(fd, ODL_TB5_IOC_SEND, &s), EINVAL);
	s.reserved = 0; s.key = 0; s.size = ODL_TB5_SEND_SIZE_VER0; s.dst_port = 0;
	expect("SEND 1.0-sized struct is still checked", ioctl(fd, ODL_TB5_IOC_SEND, &s), EINVAL);
	s.size = sizeof(s); s.dst_port = 1;

	/* recv */
	/* 1.9: capacity 0 takes an empty message; its range is checked */
	Z(r); r.size = sizeof(r); r.buf_id = 2; r.capacity = 0; r.offset = 65537;
	expect("RECV capacity 0 past the end", ioctl(fd, ODL_TB5_IOC_RECV, &r), ERANGE);
	r.offset = 0; r.capacity = 1; r.flags = ODL_TB5_F_URGENT;
	expect("RECV urgent (a SEND flag)", ioctl(fd, ODL_TB5_IOC_RECV, &r), EINVAL);
	r.flags = 0; r.buf_id = 0;
	expect("RECV into a TX buffer", ioctl(fd, ODL_TB5_IOC_RECV, &r), EINVAL);
	r.buf_id = 3; r.offset = 1; r.capacity = 65536;
	expect("RECV range past end", ioctl(fd, ODL_TB5_IOC_RECV, &r), ERANGE);

	/* poll_cq */
	Z(pq); pq.size = sizeof(pq); pq.entries_ptr = (uintptr_t)ce;
	pq.entry_size = sizeof(ce[0]); pq.max_entries = 0;
	expect("POLL_CQ max_entries 0", ioctl(fd, ODL_TB5_IOC_POLL_CQ, &pq), EINVAL);
	pq.max_entries = 4; pq.entry_size = 8;
	expect("POLL_CQ entry_size 8", ioctl(fd, ODL_TB5_IOC_POLL_CQ, &pq), EINVAL);
	pq.entry_size = sizeof(ce[0]); pq.timeout_ms = -2;
	expect("POLL_CQ timeout -2", ioctl(fd, ODL_TB5_IOC_POLL_CQ, &pq), EINVAL);
	pq.timeout_ms = 0; pq.entries_ptr = 0;
	expect("POLL_CQ NULL entries", ioctl(fd, ODL_TB5_IOC_POLL_CQ, &pq), EINVAL);
	pq.entries_ptr = (uintptr_t)ce;
	expect("POLL_CQ no wait", ioctl(fd, ODL_TB5_IOC_POLL_CQ, &pq), 0);
	pq.min_entries = 5;
	expect("POLL_CQ min_entries > max_entries", ioctl(fd, ODL_TB5_IOC_POLL_CQ, &pq), EINVAL);
	pq.min_entries = 4; pq.reserved2 = 1;
	expect("POLL_CQ reserved2", ioctl(fd, ODL_TB5_IOC_POLL_CQ, &pq), EINVAL);
	pq.reserved2 = 0; pq.timeout_ms = 30;
	expect("POLL_CQ min_entries 4, nothing comes: timeout, count 0",
	       ioctl(fd, ODL_TB5_IOC_POLL_CQ, &pq) || pq.count, 0);
	pq.timeout_ms = 0; pq.min_entries = 0;
	badinput_keyed(fd, fd2);
	badinput_cq(fd);
	badinput_poll_beside_batch(fd);

	/* submit (1.3): the batch, then each entry like SEND/RECV */
	memset(sq, 0, sizeof(sq));
	sq[0].op = ODL_TB5_SQE_RECV; sq[0].buf_id = 2; sq[0].length = 4096; sq[0].cookie = 71;
	sq[1] = sq[0]; sq[1].offset = 4096; sq[1].cookie = 72;
	sq[2] = sq[0]; sq[2].op = 7;
	Z(sb); sb.size = sizeof(sb); sb.count = 3; sb.entry_size = sizeof(sq[0]);
	sb.entries_ptr = (uintptr_t)sq; sb.flags = 1;
	expect("SUBMIT flags", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), EINVAL);
	sb.flags = 0; sb.reserved = 1;
	expect("SUBMIT reserved", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), EINVAL);
	sb.reserved = 0; sb.count = 0;
	expect("SUBMIT count 0", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), EINVAL);
	sb.count = ODL_TB5_MAX_SUBMIT + 1;
	expect("SUBMIT count 65", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), EINVAL);
	sb.count = 3; sb.entry_size = 40;
	expect("SUBMIT entry_size 40", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), EINVAL);
	sb.entry_size = 8192;
	expect("SUBMIT entry_size 8192", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), EINVAL);
	sb.entry_size = sizeof(sq[0]); sb.entries_ptr = 0;
	expect("SUBMIT NULL entries", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), EINVAL);
	sb.entries_ptr = 0x10;
	expect("SUBMIT bad entries pointer", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), EFAULT);
	sb.entries_ptr = (uintptr_t)&sq[2]; sb.count = 1;
	expect("SUBMIT unknown op (first entry: nothing taken)", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), EINVAL);
	sq[2].op = ODL_TB5_SQE_RECV; sq[2].reserved = 1;
	expect("SUBMIT entry reserved", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), EINVAL);
	sq[2].reserved = 0; sq[2].key = 5; sq[2].offset = 8192; sq[2].length = 4096;
	expect("SUBMIT keyed RECV", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), 0);
	expect("SUBMIT keyed RECV, key already posted", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), EEXIST);
	Z(cn); cn.size = sizeof(cn); cn.key = 5;
	expect("CANCEL the SUBMITted keyed RECV", ioctl(fd, ODL_TB5_IOC_CANCEL, &cn), 0);
	sq[2].key = 0; sq[2].offset = 0; sq[2].length = 1;
	sq[2].reserved = 0; sq[2].dst_port = 1;
	expect("SUBMIT RECV with dst_port", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), EINVAL);
	sq[2].dst_port = 0; sq[2].buf_id = 0;
	expect("SUBMIT RECV into a TX buffer", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), EINVAL);
	sq[2].buf_id = 3; sq[2].offset = 65536;
	expect("SUBMIT RECV range past end", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), ERANGE);
	sq[2].offset = 0; sq[2].op = ODL_TB5_SQE_SEND; sq[2].buf_id = 0; sq[2].dst_port = 0;
	expect("SUBMIT SEND dst_port 0", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), EINVAL);
	sq[2].dst_port = 1; sq[2].length = (16u << 20) + 1;
	expect("SUBMIT SEND length > max_msg", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), EMSGSIZE);
	sq[2].length = ODL_TB5_URGENT_MAX + 1; sq[2].flags = ODL_TB5_F_URGENT;
	expect("SUBMIT SEND urgent longer than URGENT_MAX (1.5)", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb),
	       EMSGSIZE);
	sq[2].length = 1; sq[2].flags = 4;
	expect("SUBMIT SEND unknown flag", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), EINVAL);
	sq[2].flags = 0; sq[2].buf_id = 2;
	expect("SUBMIT SEND from an RX buffer", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), EINVAL);
	memset(big, 0, sizeof(big));
	memcpy(big, &sq[0], sizeof(sq[0]));
	big[sizeof(sq[0])] = 1;
	sb.entries_ptr = (uintptr_t)big; sb.entry_size = 64;
	expect("SUBMIT larger entry, nonzero tail", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), E2BIG);
	/* two good entries, then a bad one: two taken, the third's errno */
	sq[2].op = 7;
	sb.entries_ptr = (uintptr_t)sq; sb.entry_size = sizeof(sq[0]); sb.count = 3;
	expect("SUBMIT 2 good + 1 bad", ioctl(fd, ODL_TB5_IOC_SUBMIT, &sb), 0);
	ntest++;
	if (sb.done == 2 && sb.error == EINVAL) {
		printf("ok %d - SUBMIT took 2 entries, third refused with EINVAL\n", ntest);
	} else {
		nfail++;
		printf("not ok %d - SUBMIT: done %u error %u\n", ntest, sb.done, sb.error);
	}

	/* stats, dmabuf */
	Z(st); st.size = sizeof(st); st.flags = 2;
	expect("GET_STATS unknown flag", ioctl(fd, ODL_TB5_IOC_GET_STATS, &st), EINVAL);
	Z(im); im.size = sizeof(im); im.fd = 0; im.flags = 0;
	expect("DMABUF_IMPORT no direction", ioctl(fd, ODL_TB5_IOC_DMABUF_IMPORT, &im), EINVAL);
	im.flags = ODL_TB5_DMABUF_TX; im.fd = -1;
	expect("DMABUF_IMPORT fd -1", ioctl(fd, ODL_TB5_IOC_DMABUF_IMPORT, &im), EBADF);
	im.fd = fd;
	expect("DMABUF_IMPORT non-dmabuf fd", ioctl(fd, ODL_TB5_IOC_DMABUF_IMPORT, &im), EBADF);
	Z(rl); rl.size = sizeof(rl); rl.handle = 1;
	expect("DMABUF_RELEASE unknown handle", ioctl(fd, ODL_TB5_IOC_DMABUF_RELEASE, &rl), ENOENT);
	badinput_memreg(fd);

	/* nothing above changed the file's state */
	Z(in); in.size = sizeof(in);
	expect("GET_INFO after the table", ioctl(fd, ODL_TB5_IOC_GET_INFO, &in), 0);
	ntest++;
	if (in.bound_port == 9 && in.buf_count == 4) {
		printf("ok %d - state intact (port 9, 4 buffers)\n", ntest);
	} else {
		nfail++;
		printf("not ok %d - state: port %u, %u buffers\n", ntest,
		       in.bound_port, in.buf_count);
	}
	printf("1..%d\n", ntest);
	close(fd2);
	close(fd);
	return nfail ? 1 : 0;
}

/*
 * fuzz: random ioctl calls for -n seconds (default 60), seeded (-S), on up
 * to four open files of the device: every command number of the driver
 * (and some others), structs that are mostly valid with a random field or
 * two broken, random sizes, bad pointers, random mmap/munmap/poll/close.
 * A SIGALRM every 20 ms interrupts blocking POLL_CQ calls. The calls'
 * results are not checked (the driver must only survive and stay usable);
 * the scenario checks dmesg and that the device works afterwards. Prints a
 * histogram of the errnos seen.
 */
static uint64_t rs;

static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static uint64_t rnd_n(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/* a field value: mostly plausible, sometimes extreme */
static uint64_t rnd_val(uint64_t plausible)
{
	switch (rnd_n(8)) {
	case 0: return 0;
	case 1: return rnd();
	case 2: return (uint64_t)-1;
	case 3: return 1ull << rnd_n(64);
	case 4: return plausible + rnd_n(3) - 1;
	default: return rnd_n(plausible + 1);
	}
}

static void on_alarm(int sig)
{
	(void)sig;
}

#define FZ_FILES 4

struct fzf {
	int fd;
	void *map;
	size_t map_len;
	uint64_t area;		/* mmap_len after BUF_SETUP */
};

static int cmd_fuzz(void)
{
	static const unsigned int nrs[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x40, 0xff };
	/* memory that MEM_REG may pin (and sends/receives touch) */
	static uint8_t fzmem[256 * 1024] __attribute__((aligned(4096)));
	/* room for whatever a valid POLL_CQ may write (1024 x 256 bytes) */
	static uint8_t ce[1024 * 256] __attribute__((aligned(8)));
	struct fzf f[FZ_FILES];
	unsigned long errs[160] = { 0 }, calls = 0, okc = 0;
	struct sigaction sa;
	struct itimerval it;
	time_t end;
	int i, j;

	uint64_t seed0;

	if (!rs)
		rs = 0x0d15ea5full;
	seed0 = rs;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;	/* no SA_RESTART: blocking calls see EINTR */
	sigaction(SIGALRM, &sa, NULL);
	memset(&it, 0, sizeof(it));
	it.it_interval.tv_usec = 20000;
	it.it_value.tv_usec = 20000;
	setitimer(ITIMER_REAL, &it, NULL);
	for (i = 0; i < FZ_FILES; i++)
		f[i] = (struct fzf){ .fd = open_dev() };
	end = time(NULL) + count;
	while (time(NULL) < end) {
		struct fzf *x = &f[rnd_n(FZ_FILES)];
		union {
			uint8_t raw[1024];
			struct odl_tb5_info in;
			struct odl_tb5_buf_setup bs;
			struct odl_tb5_bind b;
			struct odl_tb5_send s;
			struct odl_tb5_recv r;
			struct odl_tb5_poll_cq pq;
			struct odl_tb5_stats st;
			struct odl_tb5_dmabuf_import im;
			struct odl_tb5_dmabuf_release rel;
			struct odl_tb5_submit sb;
			struct odl_tb5_mem_reg mr;
			struct odl_tb5_cancel cn;
		} u;
		static struct odl_tb5_sqe fsq[ODL_TB5_MAX_SUBMIT + 2];
		unsigned int nr = nrs[rnd_n(sizeof(nrs) / sizeof(nrs[0]))];
		unsigned int act = (unsigned int)rnd_n(100);
		size_t sz = 0;
		void *arg = &u;
		int r;

		if (x->fd < 0) {
			x->fd = open(devpath, O_RDWR);
			x->map = NULL;
			x->area = 0;
			continue;
		}
		if (act < 2) {		/* close (unmapping or not) and reopen later */
			if (x->map && rnd_n(2)) {
				munmap(x->map, x->map_len);
				x->map = NULL;
			}
			close(x->fd);
			x->fd = -1;
			continue;
		}
		if (act < 5) {		/* mmap a random range */
			size_t off = rnd_n(4) ? 0 : rnd_n(x->area + 8192) & ~4095ull;
			size_t len = rnd_n(4) ? x->area : rnd_val(x->area + 4096);
			void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
				       rnd_n(8) ? MAP_SHARED : MAP_PRIVATE, x->fd, (off_t)off);

			calls++;
			if (m == MAP_FAILED) {
				errs[errno < 160 ? errno : 0]++;
			} else {
				okc++;
				if (x->map)
					munmap(x->map, x->map_len);
				x->map = m;
				x->map_len = len;
				if (len > 64)
					memset(m, (int)rnd(), 64);
			}
			continue;
		}
		if (act < 7) {
			struct pollfd pfd = { .fd = x->fd, .events = POLLIN | POLLOUT };

			poll(&pfd, 1, (int)rnd_n(3));
			continue;
		}
		memset(&u, 0, sizeof(u));
		switch (nr) {
		case 0:
			sz = sizeof(u.in);
			break;
		case 1:
			sz = sizeof(u.bs);
			u.bs.tx_count = (uint32_t)rnd_val(3);
			u.bs.rx_count = (uint32_t)rnd_val(3);
			u.bs.tx_buf_size = rnd_n(3) ? (rnd_n(64) + 1) * 4096 : rnd_val(1 << 22);
			u.bs.rx_buf_size = rnd_n(3) ? (rnd_n(64) + 1) * 4096 : rnd_val(1 << 22);
			if (!rnd_n(8))
				u.bs.flags = (uint32_t)rnd();
			break;
		case 2:
			sz = sizeof(u.b);
			u.b.port = (uint32_t)(rnd_n(4) ? 200 + rnd_n(8) : rnd_val(255));
			if (!rnd_n(8))
				u.b.reserved = (uint32_t)rnd();
			break;
		case 3:
			sz = sizeof(u.s);
			u.s.flags = rnd_n(8) ? 0 : (uint32_t)rnd_val(1);
			u.s.buf_id = (uint32_t)rnd_val(4);
			/* to unbound ports on the peer: dropped there */
			u.s.dst_port = (uint32_t)(rnd_n(4) ? 240 + rnd_n(8) : rnd_val(255));
			u.s.offset = rnd_n(2) ? 0 : rnd_val(1 << 20);
			u.s.length = rnd_n(2) ? rnd_n(20000) + 1 : rnd_val(1 << 22);
			u.s.cookie = rnd();
			if (!rnd_n(4))
				u.s.key = (uint32_t)rnd_val(8);
			if (!rnd_n(16))
				u.s.reserved = (uint32_t)rnd();
			break;
		case 4:
			sz = sizeof(u.r);
			u.r.flags = rnd_n(8) ? 0 : (uint32_t)rnd_val(1);
			u.r.buf_id = (uint32_t)rnd_val(4);
			u.r.offset = rnd_n(2) ? 0 : rnd_val(1 << 20);
			u.r.capacity = rnd_n(2) ? rnd_n(20000) + 1 : rnd_val(1 << 22);
			u.r.cookie = rnd();
			if (!rnd_n(4))
				u.r.key = (uint32_t)rnd_val(8);
			break;
		case 5:
			sz = sizeof(u.pq);
			u.pq.max_entries = (uint32_t)rnd_val(8);
			u.pq.entry_size = rnd_n(4) ? sizeof(struct odl_tb5_completion) :
				(uint32_t)rnd_val(64);
			switch (rnd_n(4)) {
			case 0: u.pq.entries_ptr = rnd(); break;
			case 1: u.pq.entries_ptr = 0; break;
			default: u.pq.entries_ptr = (uintptr_t)ce; break;
			}
			/* never let the driver write past our own array */
			if (u.pq.entries_ptr == (uintptr_t)ce &&
			    u.pq.max_entries * (uint64_t)u.pq.entry_size > sizeof(ce))
				u.pq.entries_ptr = 0x10;
			u.pq.timeout_ms = rnd_n(3) ? (int32_t)rnd_n(3) : rnd_n(2) ? -1 : (int32_t)rnd_val(50);
			if (!rnd_n(4))
				u.pq.min_entries = (uint32_t)rnd_val(8);
			break;
		case 6:
			sz = sizeof(u.st);
			u.st.flags = (uint32_t)rnd_val(1);
			break;
		case 7:
			sz = sizeof(u.im);
			u.im.fd = (int32_t)(rnd_n(2) ? f[rnd_n(FZ_FILES)].fd : (int)rnd_val(64));
			u.im.flags = (uint32_t)rnd_val(3);
			break;
		case 8:
			sz = sizeof(u.rel);
			u.rel.handle = (uint32_t)rnd_val(16);
			break;
		case 9:
			/* SUBMIT: mostly plausible SEND/RECV entries, some broken */
			sz = sizeof(u.sb);
			u.sb.count = (uint32_t)(rnd_n(4) ? rnd_n(8) + 1 : rnd_val(ODL_TB5_MAX_SUBMIT));
			u.sb.entry_size = rnd_n(8) ? sizeof(fsq[0]) : (uint32_t)rnd_val(64);
			u.sb.entries_ptr = rnd_n(8) ? (uintptr_t)fsq : rnd_n(2) ? 0 : rnd();
			if (u.sb.entries_ptr == (uintptr_t)fsq &&
			    u.sb.count * (uint64_t)u.sb.entry_size > sizeof(fsq))
				u.sb.entries_ptr = 0x10;
			if (!rnd_n(16))
				u.sb.flags = (uint32_t)rnd();
			for (j = 0; j < (int)(sizeof(fsq) / sizeof(fsq[0])); j++) {
				struct odl_tb5_sqe *e = &fsq[j];

				memset(e, 0, sizeof(*e));
				e->op = rnd_n(8) ? (uint32_t)rnd_n(2) + 1 : (uint32_t)rnd_val(3);
				e->flags = rnd_n(8) ? 0 : (uint32_t)rnd_val(1);
				e->buf_id = (uint32_t)rnd_val(4);
				e->dst_port = e->op == ODL_TB5_SQE_SEND && rnd_n(4) ?
					(uint32_t)(240 + rnd_n(8)) : (uint32_t)rnd_val(1);
				e->offset = rnd_n(2) ? 0 : rnd_val(1 << 20);
				e->length = rnd_n(2) ? rnd_n(20000) + 1 : rnd_val(1 << 22);
				e->cookie = rnd();
				if (!rnd_n(4))
					e->key = (uint32_t)rnd_val(8);
				if (!rnd_n(16))
					e->reserved = (uint32_t)rnd();
			}
			break;
		case 10:
			sz = sizeof(u.mr);
			u.mr.flags = (uint32_t)rnd_val(3);
			switch (rnd_n(4)) {
			case 0: u.mr.addr = rnd(); break;
			case 1: u.mr.addr = (uintptr_t)"read-only"; break;
			default: u.mr.addr = (uintptr_t)fzmem + rnd_n(8192); break;
			}
			u.mr.length = rnd_n(2) ? rnd_n(sizeof(fzmem) - 8192) + 1 :
				rnd_val(sizeof(fzmem));
			if (!rnd_n(16))
				u.mr.handle = (uint32_t)rnd();
			if (!rnd_n(16))
				u.mr.reserved = (uint32_t)rnd();
			break;
		case 11:
			sz = sizeof(u.cn);
			u.cn.key = (uint32_t)rnd_val(8);
			if (!rnd_n(16))
				u.cn.flags = (uint32_t)rnd();
			if (!rnd_n(16))
				u.cn.reserved = (uint32_t)rnd();
			break;
		default:
			sz = rnd_n(512);
			for (j = 0; j < (int)sizeof(u); j++)
				u.raw[j] = (uint8_t)rnd();
			break;
		}
		switch (rnd_n(12)) {
		case 0: sz = rnd_n(512); break;		/* wrong size */
		case 1: sz = sz ? sz - 4 : 0; break;	/* one field short */
		case 2: sz += 8; u.raw[sz - 1] = (uint8_t)rnd(); break; /* tail */
		case 3: u.raw[rnd_n(sz + 1)] ^= (uint8_t)(1u << rnd_n(8)); break;
		default: break;
		}
		if (sz >= 4)
			memcpy(u.raw, &(uint32_t){ (uint32_t)sz }, 4);
		switch (rnd_n(40)) {
		case 0: arg = NULL; break;
		case 1: arg = (void *)(uintptr_t)rnd(); break;
		case 2: arg = (void *)(uintptr_t)0xffffffffffff0000ull; break;
		default: break;
		}
		r = ioctl(x->fd, _IOC(_IOC_READ | _IOC_WRITE, rnd_n(32) ? ODL_TB5_IOC_MAGIC : 0xB4,
				      nr, rnd_n(4) ? sz & 0x3fff : rnd_n(0x3fff)), arg);
		calls++;
		if (r < 0)
			errs[errno < 160 ? errno : 0]++;
		else
			okc++;
		/* reap completions now and then so sends/recvs keep moving */
		if (!rnd_n(16)) {
			struct odl_tb5_poll_cq pq = { .size = sizeof(pq), .max_entries = 8,
				.entries_ptr = (uintptr_t)ce,
				.entry_size = sizeof(struct odl_tb5_completion) };

			ioctl(x->fd, ODL_TB5_IOC_POLL_CQ, &pq);
		}
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	for (i = 0; i < FZ_FILES; i++) {
		if (f[i].map)
			munmap(f[i].map, f[i].map_len);
		if (f[i].fd >= 0)
			close(f[i].fd);
	}
	printf("fuzz: seed=0x%llx %d s, %lu calls, %lu succeeded; errno=count:",
	       (unsigned long long)seed0, count, calls, okc);
	for (i = 0; i < 160; i++)
		if (errs[i])
			printf(" %d=%lu", i, errs[i]);
	printf("\n");
	return 0;
}

static void parse_sizes(char *arg)
{
	char *t;

	for (t = strtok(arg, ","); t && nsizes < 64; t = strtok(NULL, ","))
		sizes[nsizes++] = strtoull(t, NULL, 0);
}

int main(int argc, char **argv)
{
	const char *cmd;
	int o;

	if (argc < 2) {
		fprintf(stderr, "usage: odl_xfer info|stats|stats-reset|send|post|unagreed|hold|kick|flood|sink|recv|krecv|ksend|kcrecv|kcsend|stallrecv|stallsend|urecv|usend|badinput|fuzz [opts]\n");
		return 2;
	}
	cmd = argv[1];
	optind = 2;
	while ((o = getopt(argc, argv, "DNUE:d:f:g:p:q:n:s:S:t:")) != -1) {
		switch (o) {
		case 'E':
			if (strcmp(optarg, "odl") && strcmp(optarg, "udmabuf") && strcmp(optarg, "heap")) {
				fprintf(stderr, "odl_xfer: -E odl|udmabuf|heap\n");
				return 2;
			}
			exporter = optarg;
			break;
		case 'N': no_urgent = 1; break;
		case 'g': go_file = optarg; break;
		case 'f':
			stall_fail = (optarg[0] >= '0' && optarg[0] <= '2' && !optarg[1]) ?
				     optarg[0] - '0' : -1;
			if (stall_fail < 0) {
				fprintf(stderr, "odl_xfer: -f 0..2 (the message stallrecv expects to fail)\n");
				return 2;
			}
			break;
		case 'D': use_dmabuf = 1; break;
		case 'U': use_dmabuf = use_memreg = 1; break;
		case 'd': devpath = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'q': peer_port = atoi(optarg); break;
		case 'n': count = atoi(optarg); break;
		case 's': parse_sizes(optarg); break;
		case 'S': rs = strtoull(optarg, NULL, 0) | 1; break;
		case 't':
			idle_s = atoi(optarg);
			if (idle_s < 1 || idle_s > 3600) {
				fprintf(stderr, "odl_xfer: -t 1..3600 (seconds)\n");
				return 2;
			}
			break;
		default: return 2;
		}
	}
	if (!nsizes)
		sizes[nsizes++] = 4096;
	if (!strcmp(cmd, "info"))
		return cmd_info();
	if (!strcmp(cmd, "stats"))
		return cmd_stats(0, sizeof(struct odl_tb5_stats));
	if (!strcmp(cmd, "stats-reset"))
		return cmd_stats(ODL_TB5_STATS_RESET, sizeof(struct odl_tb5_stats));
	if (!strcmp(cmd, "stats-reset-v0"))
		return cmd_stats(ODL_TB5_STATS_RESET, ODL_TB5_STATS_SIZE_VER0);
	if (!strcmp(cmd, "badinput"))
		return cmd_badinput();
	if (!strcmp(cmd, "fuzz")) {
		if (count == 10)
			count = 60;
		return cmd_fuzz();
	}
	if (!strcmp(cmd, "recv"))
		return cmd_recv();
	if (!strcmp(cmd, "send"))
		return cmd_send();
	if (!strcmp(cmd, "post"))
		return cmd_post();
	if (!strcmp(cmd, "unagreed"))
		return cmd_unagreed();
	if (!strcmp(cmd, "hold"))
		return cmd_hold();
	if (!strcmp(cmd, "kick"))
		return cmd_kick();
	if (!strcmp(cmd, "overflow"))
		return cmd_overflow(0);
	if (!strcmp(cmd, "overflow-mid"))
		return cmd_overflow(1);
	if (!strcmp(cmd, "flood"))
		return cmd_flood();
	if (!strcmp(cmd, "sink"))
		return cmd_sink();
	if (!strcmp(cmd, "krecv"))
		return cmd_krecv();
	if (!strcmp(cmd, "ksend"))
		return cmd_ksend();
	if (!strcmp(cmd, "kcrecv"))
		return cmd_kcrecv();
	if (!strcmp(cmd, "kcsend"))
		return cmd_kcsend();
	if (!strcmp(cmd, "stallrecv"))
		return cmd_stallrecv();
	if (!strcmp(cmd, "stallsend"))
		return cmd_stallsend();
	if (!strcmp(cmd, "urecv"))
		return cmd_urecv();
	if (!strcmp(cmd, "usend"))
		return cmd_usend();
	fprintf(stderr, "unknown command %s\n", cmd);
	return 2;
}
