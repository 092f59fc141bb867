/* SPDX-License-Identifier: MIT */
/* libodl_tb5 internals: the handle, buffers, and the backend interface. */
#ifndef ODL_PRIV_H
#define ODL_PRIV_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "odl_relax.h"
#include "odl_tb5/odl_tb5.h"

#define ODL_EXPORT __attribute__((visibility("default")))

enum odl_buf_kind {
	ODL_BUF_NONE = 0,
	ODL_BUF_ALLOC,		/* allocated by the library (backend memory) */
	ODL_BUF_REG,		/* caller memory */
	ODL_BUF_DMABUF,		/* imported DMA-buf (kernel) */
};

struct odl_buf {
	enum odl_buf_kind kind;
	uint32_t flags;		/* ODL_TB5_BUF_* hints; REG: ODL_TB5_REG_* */
	void *addr;		/* CPU address (NULL for DMA-bufs) */
	uint64_t size;
	uint32_t users;		/* queued operations naming it */
	/* backend data */
	void *map;		/* shm: mmap'd area to munmap */
	size_t map_len;
	int dmabuf_fd;
	uint32_t kb_handle;	/* kernel: DMA-buf or MEM_REG handle */
	bool kb_pinned;		/* kernel: ODL_BUF_REG pinned (MEM_REG) */
	int64_t tx_off;		/* kernel: offset in the TX area, -1 none */
	int64_t rx_off;		/* kernel: offset in the RX area, -1 none */
};

struct odl_tb5;

/*
 * A backend's completion queue may hold this marker in place of a
 * completion: a message for the port was lost in transit (kernel: the
 * driver's EVENT with ODL_TB5_CF_MSG_LOST; shm: a gap in the peer's message
 * sequence). Its poll returns the completions queued before it, then, when
 * the marker is first, consumes it, counts it in st.rx_lost and returns
 * ODL_POLL_LOST.
 */
#define ODL_OP_LOST	0x4c4f5354u	/* never a public enum odl_tb5_op */
#define ODL_POLL_LOST	(-EBADMSG)

struct odl_backend {
	const char *name;
	int (*open)(struct odl_tb5 *h, const char *arg,
		    const struct odl_tb5_open_opts *o);
	void (*close)(struct odl_tb5 *h);
	int (*wait_peer)(struct odl_tb5 *h, int timeout_ms);
	int (*info)(struct odl_tb5 *h, struct odl_tb5_info *info);
	int (*state)(struct odl_tb5 *h);
	int (*fd)(struct odl_tb5 *h);
	int (*buf_alloc)(struct odl_tb5 *h, struct odl_buf *b);
	int (*buf_register)(struct odl_tb5 *h, struct odl_buf *b);
	int (*buf_import)(struct odl_tb5 *h, struct odl_buf *b, int fd,
			  uint64_t offset);
	void (*buf_free)(struct odl_tb5 *h, struct odl_buf *b);
	/* validated arguments (dst_port 1..ODL_TB5_MAX_PORT: the peer's
	 * port); called with h->lock held, may drop it to wait
	 */
	int (*send)(struct odl_tb5 *h, uint32_t dst_port, uint32_t id,
		    uint64_t off, uint64_t len, uint32_t key, uint64_t cookie,
		    uint32_t flags);
	int (*post_recv)(struct odl_tb5 *h, uint32_t id, uint64_t off,
			 uint64_t cap, uint32_t key, uint64_t cookie,
			 uint32_t flags);
	int (*cancel)(struct odl_tb5 *h, uint32_t key);
	/* min: wait for that many (1..max, already capped to what is
	 * outstanding by the backend)
	 */
	int (*poll)(struct odl_tb5 *h, struct odl_tb5_completion *c,
		    unsigned int max, unsigned int min, int timeout_ms,
		    uint32_t flags);
	int (*pending)(struct odl_tb5 *h, unsigned int *s, unsigned int *r);
};

struct odl_tb5 {
	pthread_mutex_t lock;
	atomic_uint lock_waiters;	/* threads blocked in odl_lock() */
	const struct odl_backend *be;
	void *be_priv;
	struct odl_tb5_open_opts opts;
	uint32_t port;
	bool busy_default;
	struct odl_buf bufs[ODL_TB5_MAX_BUFS + 1];	/* index = id, 0 unused */
	struct odl_tb5_stats st;
};

extern const struct odl_backend odl_backend_shm;
extern const struct odl_backend odl_backend_kernel;

/* helpers shared by the backends */
static inline uint64_t odl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* absolute deadline for timeout_ms (-1/negative → UINT64_MAX) */
static inline uint64_t odl_deadline(int timeout_ms)
{
	if (timeout_ms < 0)
		return UINT64_MAX;
	return odl_now_ns() + (uint64_t)timeout_ms * 1000000ull;
}

/* take the handle's lock; a thread that has to wait for it is counted, so
 * that a busy-polling wait lets it in (odl_busy_turn) */
static inline void odl_lock(struct odl_tb5 *h)
{
	if (pthread_mutex_trylock(&h->lock) == 0)
		return;
	atomic_fetch_add(&h->lock_waiters, 1);
	pthread_mutex_lock(&h->lock);
	atomic_fetch_sub(&h->lock_waiters, 1);
}

/* with the handle's lock just let go: a thread blocked on it goes first
 * (an unlock followed at once by a lock would nearly always win it back:
 * a blocked thread needs a wake-up first), bounded so that a miscount
 * cannot stall the caller */
static inline void odl_yield_to_waiters(struct odl_tb5 *h)
{
	for (int i = 0; i < 1000 && atomic_load(&h->lock_waiters); i++)
		sched_yield();
}

/*
 * A busy-polling wait's turn between two looks (lock held on entry and on
 * return): the handle's other threads may post, send and poll meanwhile;
 * one already waiting for the lock gets it first.
 */
static inline void odl_busy_turn(struct odl_tb5 *h, unsigned int spins)
{
	pthread_mutex_unlock(&h->lock);
	odl_yield_to_waiters(h);
	for (unsigned int i = 0; i < spins; i++)
		odl_cpu_relax();
	odl_lock(h);
}

static inline bool odl_busy(const struct odl_tb5 *h, uint32_t flags)
{
	if (flags & ODL_TB5_F_BUSY_POLL)
		return true;
	if (flags & ODL_TB5_F_SLEEP)
		return false;
	return h->busy_default;
}

static inline struct odl_buf *odl_buf_get(struct odl_tb5 *h, uint32_t id)
{
	if (id == 0 || id > ODL_TB5_MAX_BUFS || h->bufs[id].kind == ODL_BUF_NONE)
		return NULL;
	return &h->bufs[id];
}

void odl_uuid_from_name(const char *name, uint8_t uuid[16]);

#endif /* ODL_PRIV_H */
