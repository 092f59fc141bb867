/* SPDX-License-Identifier: MIT */
/*
 * odl_tb5_rccl_stats.h - statistics of the OdinLink RCCL/NCCL net plugin,
 * published in a shared-memory file (default /run/odl_tb5/rccl_stats,
 * overridden by the environment variable ODL_TB5_RCCL_STATS; an empty value
 * or "off" disables publication).
 *
 * The file holds one struct odl_tb5_rccl_stats, shared by every process on
 * the host that has the plugin loaded: counters are added with atomic
 * read-modify-write operations (readers should load each 64-bit field
 * atomically, e.g. __atomic_load_n(..., __ATOMIC_RELAXED)).
 *
 * Versioning: `magic` identifies the file, `version` is bumped only for
 * incompatible changes, new fields are appended and `size` grows (readers
 * use the fields that fit in `size`). Publication is best effort: failing to
 * create the file never fails the plugin.
 */
#ifndef ODL_TB5_RCCL_STATS_H
#define ODL_TB5_RCCL_STATS_H

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ODL_TB5_RCCL_STATS_PATH "/run/odl_tb5/rccl_stats"
#define ODL_TB5_RCCL_STATS_ENV "ODL_TB5_RCCL_STATS"
#define ODL_TB5_RCCL_STATS_MAGIC 0x53545452354c444fULL /* "ODL5RTTS" little-endian */
#define ODL_TB5_RCCL_STATS_VERSION 1u

/* idle_wakeups counts the waits of this length (ms) that ended with no
 * completion: the variable, its default and its accepted range */
#define ODL_TB5_RCCL_POLL_MS_ENV "ODL_TB5_RCCL_POLL_MS"
#define ODL_TB5_RCCL_POLL_MS_DEFAULT 20
#define ODL_TB5_RCCL_POLL_MS_MAX 1000

/* the file a plugin in this environment publishes to, or NULL: publication
 * turned off (an empty value or "off") */
static inline const char *odl_tb5_rccl_stats_path(void)
{
	const char *path = getenv(ODL_TB5_RCCL_STATS_ENV);

	if (!path)
		return ODL_TB5_RCCL_STATS_PATH;
	return *path && strcmp(path, "off") != 0 ? path : NULL;
}

struct odl_tb5_rccl_stats {
	uint64_t magic;		 /* ODL_TB5_RCCL_STATS_MAGIC, written last at creation */
	uint32_t version;	 /* ODL_TB5_RCCL_STATS_VERSION */
	uint32_t size;		 /* sizeof(struct odl_tb5_rccl_stats) of the creator */
	uint64_t created_ns;	 /* CLOCK_REALTIME at creation: uptime = now - created_ns */
	uint64_t last_init_ns;	 /* CLOCK_REALTIME of the latest plugin init on the host */
	uint32_t procs_attached; /* processes with the plugin loaded and initialised,
				  * as counted at the latest attach or detach
				  * (see ODL_TB5_RCCL_STATS_SLOT_OFF) */
	uint32_t last_pid;	 /* pid of the latest init */
	uint64_t inits;		 /* successful plugin inits */

	/* traffic: payload bytes handed to / received from the link */
	uint64_t tx_bytes;
	uint64_t rx_bytes;
	uint64_t tx_msgs;	/* sends completed (isend requests done) */
	uint64_t rx_msgs;	/* receive entries completed */

	/* operation counts (successful calls that created an object/request) */
	uint64_t op_listen;
	uint64_t op_connect;	/* send comms established */
	uint64_t op_accept;	/* recv comms established */
	uint64_t op_isend;
	uint64_t op_irecv;
	uint64_t op_iflush;
	uint64_t op_test;
	uint64_t op_regmr;
	uint64_t op_deregmr;
	uint64_t op_close;	/* closeSend + closeRecv + closeListen */
	uint64_t null_requests;	/* isend/irecv answered with a NULL request */

	/* errors */
	uint64_t errors;	/* every call returning an error code */
	uint64_t err_bad_args;	/* NULL/invalid comm, request, device, handle */
	uint64_t err_truncated;	/* messages larger than the posted receive */
	uint64_t err_link;	/* link/library failures, peer resets */

	/* zero copy (in place of reserved words; 0 from older plugins) */
	uint64_t zc_tx_bytes;	/* of tx_bytes: sent straight from NCCL's buffer */
	uint64_t zc_rx_bytes;	/* of rx_bytes: received straight into it */
	uint64_t zc_regs;	/* registrations pinned for zero copy */
	uint64_t zc_fallbacks;	/* receive entries / sends that took the staged way
				 * although a key or registration was there */
	/* in place of a reserved word; 0 from older plugins */
	uint64_t cts_urgent;	/* clear-to-send messages sent urgent (ahead of
				 * the bulk data queued on that side) */
	/* in place of a reserved word; 0 from older plugins */
	uint64_t idle_wakeups;	/* a progress thread's wait for completions
				 * ended with none (ODL_TB5_RCCL_POLL_MS passed) */
	/* regMrDmaBuf (in place of reserved words; 0 from older plugins) */
	uint64_t dmabuf_regs;	/* DMA-buf registrations (of op_regmr) */
	uint64_t dmabuf_imports; /* of those, imported by the driver for zero
				  * copy (the rest: through their mapping) */
	/* in place of a reserved word; 0 from older plugins */
	uint64_t revivals;	/* devices whose failed link was opened again */
	/* keepalive (in place of reserved words; 0 from older plugins) */
	uint64_t pings;		/* PINGs sent to a silent peer while waiting for it */
	uint64_t peer_lost;	/* comms failed because their peer process was gone
				 * (silent past ODL_TB5_RCCL_PEER_TIMEOUT_MS, or
				 * another process answered on its port) */
	/* in place of a reserved word; 0 from older plugins */
	uint64_t caller_reaps;	/* test() calls that reaped their device's
				 * completions themselves instead of waiting
				 * for the progress thread to hand them over
				 * (ODL_TB5_RCCL_CALLER_REAP) */
	/* in place of a reserved word; 0 from older plugins */
	uint64_t busy_poll_reaps; /* of caller_reaps: ended by what the caller
				   * found while polling without sleeping
				   * (ODL_TB5_RCCL_BUSY_POLL_US) */
	/* in place of a reserved word; 0 from older plugins */
	uint64_t fused_ops;	/* sends and receives posted on fused devices
				 * (makeVDevice), one each however many cables
				 * carry it (each cable's part also counts in
				 * op_isend / op_irecv) */
	/* in place of a reserved word; 0 from older plugins */
	uint64_t fused_degraded; /* fused listens and connects made over fewer
				  * cables than their fused device has (the
				  * others were down) */

	uint64_t reserved[1];
};

_Static_assert(sizeof(struct odl_tb5_rccl_stats) == 328, "stats layout v1");

/*
 * Which processes are attached (plugins of 2026-11-26 and later): each one
 * holds an open-file-description write lock on one byte of the file at
 * ODL_TB5_RCCL_STATS_SLOT_OFF + slot (slot < ODL_TB5_RCCL_STATS_SLOTS; past
 * the struct, the file need not reach there). The kernel drops the lock
 * when the process ends, however it ends (a SIGKILL too), so
 * odl_tb5_rccl_stats_live() on a descriptor of the file counts the
 * processes attached right now (not those holding locks through that same
 * descriptor), or returns -1 (errno) when the locks cannot be read; every
 * attach and detach stores the count in procs_attached.
 */
#define ODL_TB5_RCCL_STATS_SLOT_OFF 4096
#define ODL_TB5_RCCL_STATS_SLOTS 4096
#ifndef F_OFD_GETLK
#define F_OFD_GETLK 36 /* Linux 3.15 */
#endif
#ifndef F_OFD_SETLK
#define F_OFD_SETLK 37
#endif

static inline int odl_tb5_rccl_stats_live(int fd)
{
	off_t off = ODL_TB5_RCCL_STATS_SLOT_OFF, end = off + ODL_TB5_RCCL_STATS_SLOTS;
	int n = 0;

	while (off < end) {
		struct flock fl;

		memset(&fl, 0, sizeof(fl));
		fl.l_type = F_WRLCK;
		fl.l_whence = SEEK_SET;
		fl.l_start = off;
		fl.l_len = end - off;
		if (fcntl(fd, F_OFD_GETLK, &fl) != 0)
			return -1;
		if (fl.l_type == F_UNLCK)
			break;
		n++;
		off = fl.l_start + (fl.l_len > 0 ? fl.l_len : 1);
	}
	return n;
}

#endif /* ODL_TB5_RCCL_STATS_H */
