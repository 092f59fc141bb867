// SPDX-License-Identifier: MIT
/*
 * libodl_tb5 kernel backend: /dev/odl_tb5_N through the ioctl ABI of
 * driver/uapi/odl_tb5_uapi.h (1.x).
 *
 * At open the library sets up ODL_KB_COUNT TX and ODL_KB_COUNT RX driver
 * buffers (BUF_SETUP), maps the whole area and binds the port. Library
 * buffers are page ranges carved out of that area: a buffer allocated for
 * one direction lives in that direction's buffers (zero copy); a buffer for
 * both directions gets a range in each area and the library copies through
 * them. Caller memory (buf_register) is pinned by the driver (MEM_REG, ABI
 * 1.4) and named by its handle like a DMA-buf (no copy), or, where the
 * driver cannot pin it, copied through ranges like a buffer for both
 * directions. Driver completions carry the
 * index of a library slot as cookie; the slot holds the caller's cookie.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

/*
 * The driver's uapi header and the library's public header use some of the
 * same names (struct odl_tb5_info, ODL_TB5_STATE_*, ...). Include the uapi
 * one first under other names, keep the constants needed, then undefine
 * the clashing macros before the public header.
 */
#define odl_tb5_info odl_tb5_kinfo
#define odl_tb5_completion odl_tb5_kcompletion
#define odl_tb5_stats odl_tb5_kstats
#include "odl_tb5_uapi.h"
#undef odl_tb5_info
#undef odl_tb5_completion
#undef odl_tb5_stats

enum {
	K_STATE_CONNECTED = ODL_TB5_STATE_CONNECTED,
	K_FEAT_E2E = (int)ODL_TB5_FEAT_E2E,
	K_FEAT_KEYED = (int)ODL_TB5_FEAT_KEYED,
	K_FEAT_EMPTY = (int)ODL_TB5_FEAT_EMPTY,	/* the driver's bit (1.9) */
	K_F_URGENT = (int)ODL_TB5_F_URGENT,	/* the driver's bit (1.5) */
	K_MAX_OUTSTANDING = ODL_TB5_MAX_OUTSTANDING,
};

#undef ODL_TB5_STATE_CONNECTED
#undef ODL_TB5_STATE_DISCONNECTED
#undef ODL_TB5_FEAT_E2E
#undef ODL_TB5_FEAT_KEYED
#undef ODL_TB5_FEAT_EMPTY
#undef ODL_TB5_F_URGENT
#undef ODL_TB5_URGENT_MAX
#undef ODL_TB5_MAX_BUFS
#undef ODL_TB5_MAX_PORT

#include "odl_priv.h"

#define ODL_KB_COUNT	2			/* driver buffers per direction */
#define ODL_KB_DEF_SIZE	(8ull << 20)		/* bytes per driver buffer */
#define ODL_KB_PAGE	4096ull
#define ODL_KB_SLOTS	(2 * K_MAX_OUTSTANDING)
#define ODL_KB_CQ_BATCH	64

struct kslot {
	bool used;
	uint32_t op;
	uint32_t id;
	uint64_t cookie, off, len;
};

struct kpriv {
	int fd;
	uint16_t abi_minor;		/* of the driver */
	bool batch;			/* ODL_TB5_OPEN_BATCH with SUBMIT */
	struct odl_tb5_sqe sq[ODL_TB5_MAX_SUBMIT];	/* batch not yet submitted */
	int sq_slot[ODL_TB5_MAX_SUBMIT];
	unsigned int sq_n;
	uint16_t free_slot[ODL_KB_SLOTS];	/* stack of unused slots */
	unsigned int nfree;
	unsigned int stash_lost;	/* lost-message markers in the stash */
	char path[64];
	int index;
	uint8_t *area;
	size_t area_len;
	uint64_t bsize;			/* bytes per driver buffer */
	uint32_t npages;		/* pages per direction */
	uint8_t *used[2];		/* page maps: [0] TX, [1] RX */
	int state;			/* ODL_TB5_STATE_* of the library */
	bool down;			/* link went down: handle finished */
	uint64_t max_msg;
	struct kslot slots[ODL_KB_SLOTS];
	unsigned int nsend, nrecv;	/* outstanding, not reaped */
	struct odl_tb5_completion *stash; /* converted, not yet returned */
	unsigned int stash_n, stash_cap;
};

static struct kpriv *K(struct odl_tb5 *h)
{
	return h->be_priv;
}

static int xioctl(int fd, unsigned long cmd, void *arg)
{
	int r;

	do {
		r = ioctl(fd, cmd, arg);
	} while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

static int get_info(int fd, struct odl_tb5_kinfo *ki)
{
	memset(ki, 0, sizeof(*ki));
	ki->size = sizeof(*ki);
	return xioctl(fd, ODL_TB5_IOC_GET_INFO, ki);
}


/* ------------------------------------------------------------------ */
/* area allocator: page maps over [TX bufs][RX bufs], no range crossing a
 * driver buffer (a SEND/RECV names one driver buffer). */

static int64_t area_alloc(struct kpriv *k, int dir, uint64_t size)
{
	uint32_t need = (uint32_t)((size + ODL_KB_PAGE - 1) / ODL_KB_PAGE);
	uint32_t per = (uint32_t)(k->bsize / ODL_KB_PAGE), b, i, run;

	if (size > k->bsize)
		return -EMSGSIZE;
	for (b = 0; b < ODL_KB_COUNT; b++) {
		run = 0;
		for (i = 0; i < per; i++) {
			run = k->used[dir][b * per + i] ? 0 : run + 1;
			if (run == need) {
				uint32_t first = b * per + i + 1 - need, j;

				for (j = 0; j < need; j++)
					k->used[dir][first + j] = 1;
				return (int64_t)first * (int64_t)ODL_KB_PAGE;
			}
		}
	}
	return -ENOSPC;
}

static void area_free(struct kpriv *k, int dir, int64_t off, uint64_t size)
{
	uint32_t first = (uint32_t)(off / (int64_t)ODL_KB_PAGE), j;
	uint32_t need = (uint32_t)((size + ODL_KB_PAGE - 1) / ODL_KB_PAGE);

	if (off < 0)
		return;
	for (j = 0; j < need; j++)
		k->used[dir][first + j] = 0;
}

static uint8_t *area_ptr(struct kpriv *k, int dir, int64_t off)
{
	return k->area + (dir ? ODL_KB_COUNT * k->bsize : 0) + off;
}

/* driver buffer id and offset inside it for a direction-relative offset */
static void area_loc(struct kpriv *k, int dir, uint64_t off, uint32_t *kid,
		     uint64_t *koff)
{
	*kid = (uint32_t)(off / k->bsize) + (dir ? ODL_KB_COUNT : 0);
	*koff = off % k->bsize;
}

/* ------------------------------------------------------------------ */

static int k_open(struct odl_tb5 *h, const char *path,
		  const struct odl_tb5_open_opts *o)
{
	struct odl_tb5_buf_setup bs;
	struct odl_tb5_bind bind;
	struct odl_tb5_kinfo ki;
	struct kpriv *k;
	uint64_t bsize = o->ring_bytes ? o->ring_bytes : ODL_KB_DEF_SIZE;
	int r;

	if (bsize % ODL_KB_PAGE || bsize > ODL_TB5_MAX_BUF_SIZE ||
	    2 * ODL_KB_COUNT * bsize > ODL_TB5_MAX_AREA_SIZE)
		return -EINVAL;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	h->be_priv = k;
	snprintf(k->path, sizeof(k->path), "%s", path);
	if (sscanf(path, "/dev/odl_tb5_%d", &k->index) != 1)
		k->index = -1;
	k->fd = open(path, O_RDWR | O_CLOEXEC);
	if (k->fd < 0) {
		r = errno == ENOENT ? -ENODEV : -errno;
		goto err_free;
	}
	r = get_info(k->fd, &ki);
	if (r)
		goto err_close;
	if (ki.abi_major != ODL_TB5_ABI_MAJOR) {
		r = -EPROTO;
		goto err_close;
	}
	memset(&bs, 0, sizeof(bs));
	bs.size = sizeof(bs);
	bs.tx_count = ODL_KB_COUNT;
	bs.rx_count = ODL_KB_COUNT;
	bs.tx_buf_size = bsize;
	bs.rx_buf_size = bsize;
	r = xioctl(k->fd, ODL_TB5_IOC_BUF_SETUP, &bs);
	if (r)
		goto err_close;
	k->area_len = bs.mmap_len;
	k->bsize = bsize;
	k->area = mmap(NULL, k->area_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       k->fd, 0);
	if (k->area == MAP_FAILED) {
		r = -errno;
		goto err_close;
	}
	k->npages = (uint32_t)(ODL_KB_COUNT * bsize / ODL_KB_PAGE);
	k->used[0] = calloc(k->npages, 1);
	k->used[1] = calloc(k->npages, 1);
	k->stash_cap = ODL_KB_SLOTS + ODL_KB_CQ_BATCH;
	for (int i = ODL_KB_SLOTS - 1; i >= 0; i--)
		k->free_slot[k->nfree++] = (uint16_t)i;
	k->stash = calloc(k->stash_cap, sizeof(*k->stash));
	if (!k->used[0] || !k->used[1] || !k->stash) {
		r = -ENOMEM;
		goto err_unmap;
	}
	memset(&bind, 0, sizeof(bind));
	bind.size = sizeof(bind);
	bind.port = h->port;
	r = xioctl(k->fd, ODL_TB5_IOC_BIND, &bind);
	if (r)
		goto err_unmap;
	k->max_msg = ki.max_msg_size;
	if (o->max_msg_size && o->max_msg_size < k->max_msg)
		k->max_msg = o->max_msg_size;
	/* (a library buffer is at most one driver buffer, bsize; registered
	 * memory pinned by the driver takes the driver's whole max_msg_size)
	 */
	k->state = ki.state == K_STATE_CONNECTED ?
		ODL_TB5_STATE_CONNECTED : ODL_TB5_STATE_WAITING;
	k->abi_minor = ki.abi_minor;
	/* SUBMIT and POLL_CQ min_entries came with driver ABI 1.3 */
	k->batch = (o->flags & ODL_TB5_OPEN_BATCH) && ki.abi_minor >= 3;
	return 0;

err_unmap:
	free(k->used[0]);
	free(k->used[1]);
	free(k->stash);
	munmap(k->area, k->area_len);
err_close:
	close(k->fd);
err_free:
	free(k);
	h->be_priv = NULL;
	return r;
}

static void k_close(struct odl_tb5 *h)
{
	struct kpriv *k = K(h);

	munmap(k->area, k->area_len);
	close(k->fd);
	free(k->used[0]);
	free(k->used[1]);
	free(k->stash);
	free(k);
	h->be_priv = NULL;
}

/*
 * The link state from the driver. A device that is gone is down for good;
 * a link up is taken. "Not connected" after connected counts as down for
 * good unless transient_ok: after lost events (driver 1.8), which may have
 * been link changes, a transient "not connected" is not (a resume after an
 * E2E fallback shows as that and sends no event): a lost LINK_DOWN shows
 * anyway, in the -ECONNRESET of what was in flight and in the next call's
 * -ENOTCONN.
 */
static int k_read_state(struct odl_tb5 *h, bool transient_ok)
{
	struct kpriv *k = K(h);
	struct odl_tb5_kinfo ki;
	int r;

	if (k->down)
		return k->state;
	r = get_info(k->fd, &ki);
	if (r == -ENODEV) {
		k->down = true;
		k->state = ODL_TB5_STATE_DISCONNECTED;
	} else if (!r) {
		if (ki.state == K_STATE_CONNECTED) {
			k->state = ODL_TB5_STATE_CONNECTED;
		} else if (!transient_ok &&
			   k->state == ODL_TB5_STATE_CONNECTED) {
			k->down = true;
			k->state = ODL_TB5_STATE_DISCONNECTED;
		}
	}
	return k->state;
}

static int k_refresh_state(struct odl_tb5 *h)
{
	return k_read_state(h, false);
}

static int k_wait_peer(struct odl_tb5 *h, int timeout_ms)
{
	uint64_t deadline = odl_deadline(timeout_ms);

	for (;;) {
		int s = k_refresh_state(h);

		if (s == ODL_TB5_STATE_CONNECTED)
			return 0;
		if (s == ODL_TB5_STATE_DISCONNECTED)
			return -ECONNRESET;
		if (timeout_ms == 0)
			return -ENOTCONN;
		if (odl_now_ns() >= deadline)
			return -ETIMEDOUT;
		pthread_mutex_unlock(&h->lock);
		usleep(10000);
		odl_lock(h);
	}
}

/* what the kernel backend always offers, whatever the driver and the peer */
#define K_LIB_FEATURES (ODL_TB5_FEAT_DMABUF | ODL_TB5_FEAT_POLLFD | \
			ODL_TB5_FEAT_ZEROCOPY | ODL_TB5_FEAT_PORTS)

/*
 * What GET_INFO says of device @path, as the library reports it: the
 * library's own features and the driver's, and, while @connected, those
 * the driver agreed with the peer at login (E2E, keys, empty messages).
 * The driver reports those only while connected; one from before
 * 2026-12-02 gave its own offer until a login, hence @connected here too.
 * The other fields (port, state, max_msg_size) are the caller's.
 */
static void k_info_fill(struct odl_tb5_info *o, const struct odl_tb5_kinfo *ki,
			const char *path, bool connected)
{
	uint64_t agreed = connected ? ki->features : 0;

	snprintf(o->backend, sizeof(o->backend), "kernel");
	snprintf(o->name, sizeof(o->name), "%s", path);
	o->index = (int32_t)ki->dev_index;
	memcpy(o->local_uuid, ki->local_uuid, 16);
	memcpy(o->peer_uuid, ki->peer_uuid, 16);
	o->link_speed_gbps = ki->link_speed_gbps;
	o->link_lanes = ki->link_lanes;
	o->abi_version = ((uint32_t)ki->abi_major << 16) | ki->abi_minor;
	o->features = K_LIB_FEATURES |
		((agreed & K_FEAT_E2E) ? ODL_TB5_FEAT_E2E : 0) |
		(ki->abi_minor >= 4 && (agreed & K_FEAT_KEYED) ?
		 ODL_TB5_FEAT_KEYED : 0) |
		(ki->abi_minor >= 5 ? ODL_TB5_FEAT_URGENT : 0) |
		(ki->abi_minor >= 9 && (agreed & K_FEAT_EMPTY) ?
		 ODL_TB5_FEAT_EMPTY : 0);
	o->tx_depth = K_MAX_OUTSTANDING;
	o->rx_depth = K_MAX_OUTSTANDING;
	o->ring_bytes = (uint64_t)ki->tx_ring_size * ki->frame_size;
}

static int k_info(struct odl_tb5 *h, struct odl_tb5_info *info)
{
	struct kpriv *k = K(h);
	struct odl_tb5_kinfo ki;
	int r;

	/* the state first: reported connected, the features are agreed */
	k_refresh_state(h);
	r = get_info(k->fd, &ki);
	if (r)
		return r;
	k_info_fill(info, &ki, k->path, ki.state == K_STATE_CONNECTED);
	info->state = (uint32_t)k->state;
	info->max_msg_size = k->max_msg;
	return 0;
}

static int k_state(struct odl_tb5 *h)
{
	return k_refresh_state(h);
}

static int k_fd(struct odl_tb5 *h)
{
	return K(h)->fd;
}

/* b's room in the TX area (tx) and the RX area (rx); on failure neither
 * is taken and the error is -EINVAL for a size the area can never hold */
static int area_alloc_dirs(struct kpriv *k, struct odl_buf *b, bool tx, bool rx)
{
	int64_t off[2] = { -1, -1 };

	for (int dir = 0; dir < 2; dir++) {
		if (!(dir ? rx : tx))
			continue;
		off[dir] = area_alloc(k, dir, b->size);
		if (off[dir] < 0) {
			int r = (int)off[dir];

			area_free(k, 0, off[0], b->size);
			return r == -EMSGSIZE ? -EINVAL : r;
		}
	}
	if (tx)
		b->tx_off = off[0];
	if (rx)
		b->rx_off = off[1];
	return 0;
}

static int k_buf_alloc(struct odl_tb5 *h, struct odl_buf *b)
{
	struct kpriv *k = K(h);
	bool tx = !(b->flags & ODL_TB5_BUF_RECV) || (b->flags & ODL_TB5_BUF_SEND);
	bool rx = !(b->flags & ODL_TB5_BUF_SEND) || (b->flags & ODL_TB5_BUF_RECV);

	int r = area_alloc_dirs(k, b, tx, rx);

	if (r)
		return r;
	b->addr = tx ? area_ptr(k, 0, b->tx_off) : area_ptr(k, 1, b->rx_off);
	return 0;
}

/* sends/receives name the buffer by its driver handle: no library copy */
static bool k_by_handle(const struct odl_buf *b)
{
	return b->kind == ODL_BUF_DMABUF || b->kb_pinned;
}

/* pin caller memory with the driver (ABI 1.4); false: copy through the area */
static bool k_pin(struct kpriv *k, struct odl_buf *b)
{
	struct odl_tb5_mem_reg mr = {
		.size = sizeof(mr), .flags = ODL_TB5_MEM_TX | ODL_TB5_MEM_RX,
		.addr = (uint64_t)(uintptr_t)b->addr, .length = b->size };
	const char *e = getenv("ODL_TB5_NO_PIN");

	if (k->abi_minor < 4 || (e && *e && strcmp(e, "0")))
		return false;
	if (xioctl(k->fd, ODL_TB5_IOC_MEM_REG, &mr))
		return false;
	b->kb_handle = mr.handle;
	b->kb_pinned = true;
	b->tx_off = 0;		/* handle offsets start at addr */
	b->rx_off = 0;
	return true;
}

static int k_buf_register(struct odl_tb5 *h, struct odl_buf *b)
{
	struct kpriv *k = K(h);

	if (k_pin(k, b))
		return 0;
	if (b->flags & ODL_TB5_REG_DIRECT)
		return -EOPNOTSUPP;	/* would copy through the area */
	return area_alloc_dirs(k, b, true, true);
}

static int k_buf_import(struct odl_tb5 *h, struct odl_buf *b, int fd,
			uint64_t offset)
{
	struct odl_tb5_dmabuf_import im;
	struct odl_tb5_dmabuf_release rel;
	int r;

	memset(&im, 0, sizeof(im));
	im.size = sizeof(im);
	im.fd = fd;
	im.flags = ODL_TB5_DMABUF_TX | ODL_TB5_DMABUF_RX;
	r = xioctl(K(h)->fd, ODL_TB5_IOC_DMABUF_IMPORT, &im);
	if (r)
		return r;
	if (offset > im.length || b->size > im.length - offset) {
		memset(&rel, 0, sizeof(rel));
		rel.size = sizeof(rel);
		rel.handle = im.handle;
		xioctl(K(h)->fd, ODL_TB5_IOC_DMABUF_RELEASE, &rel);
		return -EINVAL;
	}
	b->kb_handle = im.handle;
	b->tx_off = (int64_t)offset;	/* base offset inside the DMA-buf */
	return 0;
}

static void k_buf_free(struct odl_tb5 *h, struct odl_buf *b)
{
	struct kpriv *k = K(h);

	if (k_by_handle(b)) {
		struct odl_tb5_dmabuf_release rel = { .size = sizeof(rel),
						      .handle = b->kb_handle };

		xioctl(k->fd, ODL_TB5_IOC_DMABUF_RELEASE, &rel);
		return;
	}
	area_free(k, 0, b->tx_off, b->size);
	area_free(k, 1, b->rx_off, b->size);
}

static int slot_get(struct kpriv *k)
{
	return k->nfree ? k->free_slot[--k->nfree] : -1;
}

static void slot_put(struct kpriv *k, int s)
{
	k->slots[s].used = false;
	k->free_slot[k->nfree++] = (uint16_t)s;
}

/* room for one more stash entry */
static struct odl_tb5_completion *stash_add(struct kpriv *k)
{
	if (k->stash_n == k->stash_cap) {
		unsigned int cap = k->stash_cap * 2;
		struct odl_tb5_completion *n = realloc(k->stash, cap * sizeof(*n));

		if (!n)
			abort();	/* bounded by the slots: small */
		k->stash = n;
		k->stash_cap = cap;
	}
	return &k->stash[k->stash_n++];
}

static int map_err(struct kpriv *k, int r)
{
	if (r == -ENODEV) {
		k->down = true;
		k->state = ODL_TB5_STATE_DISCONNECTED;
		return -ECONNRESET;
	}
	if (r == -ENOTCONN && k->state == ODL_TB5_STATE_CONNECTED) {
		k->down = true;
		k->state = ODL_TB5_STATE_DISCONNECTED;
		return -ECONNRESET;
	}
	if (r == -ERANGE)
		return -EINVAL;
	return r;
}

static int k_fetch(struct odl_tb5 *h, int timeout_ms, unsigned int min);
static void k_complete(struct odl_tb5 *h, int s, int status, uint64_t len);

/*
 * Batch mode: hand the queued operations to the driver (SUBMIT, up to 64
 * per call). An entry the driver refuses completes with its status; the
 * library keeps at most ODL_TB5_MAX_OUTSTANDING per direction outstanding,
 * so EAGAIN only leaves the rest queued for the next flush.
 */
static void k_flush(struct odl_tb5 *h)
{
	struct kpriv *k = K(h);
	unsigned int i = 0;

	if (k->down) {
		/* no driver will take them: end them the way the API says */
		for (i = 0; i < k->sq_n; i++)
			k_complete(h, k->sq_slot[i], -ECONNRESET, 0);
		k->sq_n = 0;
		return;
	}
	while (i < k->sq_n) {
		struct odl_tb5_submit sb = {
			.size = sizeof(sb), .count = k->sq_n - i,
			.entry_size = sizeof(k->sq[0]),
			.entries_ptr = (uint64_t)(uintptr_t)&k->sq[i] };
		int r = xioctl(k->fd, ODL_TB5_IOC_SUBMIT, &sb);
		int err = r ? r : -(int)sb.error;

		if (!r)
			i += sb.done;
		if (i == k->sq_n || err == -EAGAIN)
			break;
		k_complete(h, k->sq_slot[i], map_err(k, err ? err : -EIO), 0);
		i++;
	}
	if (i) {
		memmove(k->sq, k->sq + i, (k->sq_n - i) * sizeof(k->sq[0]));
		memmove(k->sq_slot, k->sq_slot + i, (k->sq_n - i) * sizeof(int));
		k->sq_n -= i;
	}
}

/* a send from caller memory the driver cannot name: copy it into the
 * buffer's range of the TX area (counted)
 */
static void k_stage_send(struct odl_tb5 *h, struct odl_buf *b, int64_t loc,
			 uint64_t off, uint64_t len)
{
	uint8_t *src = (uint8_t *)b->addr + off;
	uint8_t *dst = area_ptr(K(h), 0, loc) + off;

	if (!k_by_handle(b) && src != dst) {
		memcpy(dst, src, len);
		h->st.copied_bytes += len;
	}
}

/* one SEND/RECV ioctl (or batch entry), waiting for room (EAGAIN) as the
 * flags say
 */
static int k_submit(struct odl_tb5 *h, uint32_t op, uint32_t dst_port,
		    uint32_t id, uint64_t off, uint64_t len, uint32_t key,
		    uint64_t cookie, uint32_t flags)
{
	struct kpriv *k = K(h);
	struct odl_buf *b = &h->bufs[id];
	uint64_t deadline = odl_deadline(h->opts.timeout_ms);
	int dir = op == ODL_TB5_OP_SEND ? 0 : 1;
	int64_t loc = dir ? b->rx_off : b->tx_off;
	uint32_t kid, kflags = 0;
	uint64_t koff;
	int s, r;

	if (k->down)
		return -ECONNRESET;
	if (len == 0 && k->abi_minor < 9)
		return -EINVAL;		/* empty messages came with driver ABI 1.9 */
	if (op == ODL_TB5_OP_SEND && len > k->max_msg)
		return -EMSGSIZE;
	if (key && k->abi_minor < 4)
		return -EOPNOTSUPP;	/* keys came with driver ABI 1.4 */
	if (k_by_handle(b)) {
		kid = b->kb_handle;
		koff = (uint64_t)b->tx_off + off;
		kflags = ODL_TB5_F_DMABUF;
	} else {
		if (loc < 0)
			return -EINVAL;	/* buffer allocated for the other direction */
		area_loc(k, dir, (uint64_t)loc, &kid, &koff);
		koff += off;
	}
	/* urgent: a priority the driver knows from ABI 1.5 on */
	if (op == ODL_TB5_OP_SEND && (flags & ODL_TB5_F_URGENT) && k->abi_minor >= 5)
		kflags |= K_F_URGENT;
	for (;;) {
		s = -1;
		/* batch: never more outstanding than the driver takes */
		if (!k->batch || (op == ODL_TB5_OP_SEND ? k->nsend : k->nrecv) <
		    K_MAX_OUTSTANDING)
			s = slot_get(k);
		if (s >= 0 && k->batch) {
			struct odl_tb5_sqe *e = &k->sq[k->sq_n];

			if (op == ODL_TB5_OP_SEND)
				k_stage_send(h, b, loc, off, len);
			*e = (struct odl_tb5_sqe){
				.op = op == ODL_TB5_OP_SEND ? ODL_TB5_SQE_SEND :
							      ODL_TB5_SQE_RECV,
				.flags = kflags, .buf_id = kid,
				.dst_port = dst_port,
				.offset = koff, .length = len, .cookie = (uint64_t)s,
				.key = key };
			k->sq_slot[k->sq_n++] = s;
			r = 0;
		} else if (s >= 0) {
			if (op == ODL_TB5_OP_SEND) {
				/* the 1.0 size unless a key needs 1.4's */
				struct odl_tb5_send sd = {
					.size = key ? ODL_TB5_SEND_SIZE_1_4 :
						      ODL_TB5_SEND_SIZE_VER0,
					.flags = kflags,
					.buf_id = kid, .dst_port = dst_port,
					.offset = koff, .length = len,
					.cookie = (uint64_t)s, .key = key };

				k_stage_send(h, b, loc, off, len);
				r = xioctl(k->fd, ODL_TB5_IOC_SEND, &sd);
			} else {
				struct odl_tb5_recv rv = {
					.size = sizeof(rv), .flags = kflags,
					.buf_id = kid, .offset = koff,
					.capacity = len,
					.cookie = (uint64_t)s, .key = key };

				r = xioctl(k->fd, ODL_TB5_IOC_RECV, &rv);
			}
		} else {
			r = -EAGAIN;
		}
		if (s >= 0 && r)
			slot_put(k, s);
		if (r != -EAGAIN)
			break;
		if (flags & ODL_TB5_F_NONBLOCK)
			return -EAGAIN;
		if (odl_now_ns() >= deadline)
			return -ETIMEDOUT;
		k_flush(h);
		r = k_fetch(h, odl_busy(h, flags) ? 0 : 10, 1);
		if (r < 0 && r != -ETIMEDOUT)
			return r;
		if (odl_busy(h, flags))
			odl_busy_turn(h, 64);
		/* the lock was let go: another thread may have seen the end */
		if (k->down)
			return -ECONNRESET;
	}
	if (r)
		return map_err(k, r);
	k->slots[s] = (struct kslot){ .used = true, .op = op, .id = id,
				      .cookie = cookie, .off = off, .len = len };
	if (op == ODL_TB5_OP_SEND)
		k->nsend++;
	else
		k->nrecv++;
	if (k->sq_n == ODL_TB5_MAX_SUBMIT)
		k_flush(h);
	return 0;
}

static int k_send(struct odl_tb5 *h, uint32_t dst_port, uint32_t id,
		  uint64_t off, uint64_t len, uint32_t key, uint64_t cookie,
		  uint32_t flags)
{
	return k_submit(h, ODL_TB5_OP_SEND, dst_port, id, off, len, key,
			cookie, flags);
}

static int k_post_recv(struct odl_tb5 *h, uint32_t id, uint64_t off,
		       uint64_t cap, uint32_t key, uint64_t cookie,
		       uint32_t flags)
{
	return k_submit(h, ODL_TB5_OP_RECV, 0, id, off, cap, key, cookie,
			flags);
}

/* where the batch holds the keyed receive @key, or -1 */
static int k_sq_find_recv(const struct kpriv *k, uint32_t key)
{
	for (unsigned int i = 0; i < k->sq_n; i++)
		if (k->sq[i].op == ODL_TB5_SQE_RECV && k->sq[i].key == key)
			return (int)i;
	return -1;
}

/*
 * A keyed receive still in the batch goes to the driver first (the whole
 * batch with it), so that the driver's CANCEL withdraws it and, from
 * driver ABI 1.7 on, remembers the key: the message sent with it is then
 * discarded on arrival (API 1.6), not held back until it is reported lost.
 * A message the driver was already holding for the key completes the
 * receive when it reaches the driver (-ENOENT here: it completed); a
 * receive the driver refuses completes with that status (-ENOENT too, and
 * the CANCEL is not sent: it would withdraw another receive of that key).
 * Only where the driver cannot take the batch now is the receive taken out
 * of the batch here, and the driver never hears of the key.
 */
static int k_cancel(struct odl_tb5 *h, uint32_t key)
{
	struct kpriv *k = K(h);
	struct odl_tb5_cancel cn = { .size = sizeof(cn), .key = key };
	int i = k_sq_find_recv(k, key);

	if (i >= 0) {
		int s = k->sq_slot[i];

		k_flush(h);
		i = k_sq_find_recv(k, key);
		if (i < 0 && !k->slots[s].used)
			return -ENOENT;	/* refused by the driver: completed */
	}
	if (i >= 0) {
		unsigned int rest = k->sq_n - (unsigned int)i - 1;

		k_complete(h, k->sq_slot[i], -ECANCELED, 0);
		memmove(k->sq + i, k->sq + i + 1, rest * sizeof(k->sq[0]));
		memmove(k->sq_slot + i, k->sq_slot + i + 1, rest * sizeof(int));
		k->sq_n--;
		return 0;
	}
	if (k->abi_minor < 4)
		return -ENOENT;
	return map_err(k, xioctl(k->fd, ODL_TB5_IOC_CANCEL, &cn));
}

/* a lost-message marker into the stash, reported in order by poll */
static void k_stash_lost(struct kpriv *k, int status)
{
	struct odl_tb5_completion *c = stash_add(k);

	memset(c, 0, sizeof(*c));
	c->op = ODL_OP_LOST;
	c->status = status;
	k->stash_lost++;
}

/* convert one driver completion into the stash (or a state change) */
static void k_convert(struct odl_tb5 *h, const struct odl_tb5_kcompletion *kc)
{
	struct kpriv *k = K(h);

	if (kc->type == ODL_TB5_COMP_EVENT) {
		if (kc->flags & ODL_TB5_CF_MSG_LOST) {
			/* a message for this port (or one the driver could
			 * not place) was lost: poll reports it in order
			 */
			k_stash_lost(k, kc->status);
			return;
		}
		if (kc->flags & ODL_TB5_CF_EVENTS_LOST) {
			/* driver 1.8: events found its queue full. A lost
			 * message may be among them: reported as one, where
			 * the driver put the report (after the completions
			 * queued before the loss)
			 */
			k_stash_lost(k, kc->status);
			k_read_state(h, true);
			return;
		}
		if (kc->flags & ODL_TB5_CF_LINK_DOWN) {
			k->down = true;
			k->state = ODL_TB5_STATE_DISCONNECTED;
		} else if ((kc->flags & ODL_TB5_CF_LINK_UP) && !k->down) {
			k->state = ODL_TB5_STATE_CONNECTED;
		}
		return;
	}
	if (kc->cookie >= ODL_KB_SLOTS || !k->slots[kc->cookie].used)
		return;		/* not ours: ignore */
	k_complete(h, (int)kc->cookie, kc->status, kc->length);
}

/* slot s completed (driver completion, or refused in a batch) */
static void k_complete(struct odl_tb5 *h, int s, int status, uint64_t len)
{
	struct kpriv *k = K(h);
	struct kslot *sl = &k->slots[s];
	struct odl_tb5_completion *c;
	struct odl_buf *b;

	c = stash_add(k);
	memset(c, 0, sizeof(*c));
	c->cookie = sl->cookie;
	c->op = sl->op;
	c->buf_id = sl->id;
	c->offset = sl->off;
	c->status = status;
	c->length = len;
	if (status == -ECONNRESET) {
		k->down = true;
		k->state = ODL_TB5_STATE_DISCONNECTED;
	}
	b = odl_buf_get(h, sl->id);
	if (sl->op == ODL_TB5_OP_RECV && status == 0 && b && !k_by_handle(b)) {
		uint8_t *src = area_ptr(k, 1, b->rx_off) + sl->off;
		uint8_t *dst = (uint8_t *)b->addr + sl->off;

		if (len > sl->len) {
			c->status = -EBADMSG;	/* driver bug: never overrun */
		} else if (src != dst) {
			memcpy(dst, src, len);
			h->st.copied_bytes += len;
		}
	}
	slot_put(k, s);
}

/*
 * The link is down and the driver has handed over all it will for it (its
 * disconnect completions come before the LINK_DOWN event, and a removed
 * device answers POLL_CQ with -ENODEV once they are read): what is still
 * outstanding - receives posted but never started, operations still in the
 * batch - would never complete. Complete each once with -ECONNRESET, as the
 * API promises; a driver completion for a slot freed here is ignored
 * (k_convert), and none can name a new operation: a down handle takes none.
 */
static void k_fail_outstanding(struct odl_tb5 *h)
{
	struct kpriv *k = K(h);

	k->sq_n = 0;
	for (int s = 0; s < ODL_KB_SLOTS; s++)
		if (k->slots[s].used)
			k_complete(h, s, -ECONNRESET, 0);
}

/* fetch driver completions into the stash; lock dropped while blocking */
static int k_fetch(struct odl_tb5 *h, int timeout_ms, unsigned int min)
{
	struct kpriv *k = K(h);
	struct odl_tb5_kcompletion kc[ODL_KB_CQ_BATCH];
	struct odl_tb5_poll_cq pq;
	unsigned int room = k->stash_cap - k->stash_n, i;
	int r;

	if (!room)
		return 0;
	memset(&pq, 0, sizeof(pq));
	pq.size = sizeof(pq);
	pq.max_entries = room < ODL_KB_CQ_BATCH ? room : ODL_KB_CQ_BATCH;
	pq.entries_ptr = (uint64_t)(uintptr_t)kc;
	pq.entry_size = sizeof(kc[0]);
	pq.timeout_ms = timeout_ms;
	if (k->abi_minor >= 3 && min > 1)
		pq.min_entries = min < pq.max_entries ? min : pq.max_entries;
	if (timeout_ms)
		pthread_mutex_unlock(&h->lock);
	r = xioctl(k->fd, ODL_TB5_IOC_POLL_CQ, &pq);
	if (timeout_ms)
		odl_lock(h);
	if (r)
		return map_err(k, r);
	for (i = 0; i < pq.count && i < ODL_KB_CQ_BATCH; i++)
		k_convert(h, &kc[i]);
	return (int)pq.count;
}

static int k_poll(struct odl_tb5 *h, struct odl_tb5_completion *c,
		  unsigned int max, unsigned int min, int timeout_ms,
		  uint32_t flags)
{
	struct kpriv *k = K(h);
	uint64_t deadline = odl_deadline(timeout_ms);
	bool busy = odl_busy(h, flags);
	unsigned int n, out, want;
	int r;

	for (;;) {
		/* again on every look: while the lock was let go other
		 * threads may have queued (batch) or reaped operations */
		if (k->sq_n)
			k_flush(h);
		out = k->nsend + k->nrecv;
		want = min < out ? min : out ? out : 1;
		if (k->stash_n < want) {
			r = k_fetch(h, 0, 1);
			if (r < 0 && r != -ECONNRESET)
				return r;
		}
		if (k->down && !k->stash_n && (k->nsend || k->nrecv))
			k_fail_outstanding(h);
		/* enough, or all there will be, or no more waiting */
		if (k->stash_n &&
		    (k->stash_n >= want || k->down || k->stash_lost ||
		     timeout_ms == 0 || odl_now_ns() >= deadline))
			break;
		if (!k->stash_n) {
			if (k->down && !k->nsend && !k->nrecv)
				return -ECONNRESET;
			if (timeout_ms == 0)
				return -EAGAIN;
			if (odl_now_ns() >= deadline)
				return -ETIMEDOUT;
		}
		if (busy) {
			odl_busy_turn(h, 64);
		} else {
			uint64_t now = odl_now_ns();
			uint64_t left = deadline > now ? deadline - now : 0;
			int ms = left > 100000000ull ? 100 :
				(int)(left / 1000000ull) + 1;

			h->st.waits++;
			r = k_fetch(h, ms, want - k->stash_n);
			if (r < 0 && r != -ECONNRESET && r != -EINTR)
				return r;
		}
	}
	for (n = 0; n < k->stash_n && n < max; n++)
		if (k->stash[n].op == ODL_OP_LOST)
			break;
	if (!n) {
		/* a lost message is first: report it, once */
		memmove(k->stash, k->stash + 1, (k->stash_n - 1) * sizeof(*c));
		k->stash_n--;
		k->stash_lost--;
		h->st.rx_lost++;
		return ODL_POLL_LOST;
	}
	memcpy(c, k->stash, n * sizeof(*c));
	memmove(k->stash, k->stash + n, (k->stash_n - n) * sizeof(*c));
	k->stash_n -= n;
	for (unsigned int i = 0; i < n; i++) {
		if (c[i].op == ODL_TB5_OP_SEND)
			k->nsend--;
		else
			k->nrecv--;
	}
	return (int)n;
}

static int k_pending(struct odl_tb5 *h, unsigned int *s, unsigned int *r)
{
	k_flush(h);
	*s = K(h)->nsend;
	*r = K(h)->nrecv;
	return 0;
}

const struct odl_backend odl_backend_kernel = {
	.name = "kernel",
	.open = k_open,
	.close = k_close,
	.wait_peer = k_wait_peer,
	.info = k_info,
	.state = k_state,
	.fd = k_fd,
	.buf_alloc = k_buf_alloc,
	.buf_register = k_buf_register,
	.buf_import = k_buf_import,
	.buf_free = k_buf_free,
	.send = k_send,
	.post_recv = k_post_recv,
	.cancel = k_cancel,
	.poll = k_poll,
	.pending = k_pending,
};

/* ------------------------------------------------------------------ */
/* discovery */

ODL_EXPORT int odl_tb5_list(struct odl_tb5_info *infos, size_t max)
{
	DIR *d;
	struct dirent *de;
	int n = 0;

	if (!infos && max)
		return -EINVAL;
	d = opendir("/dev");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct odl_tb5_kinfo ki;
		char path[64];
		int idx, fd;

		if (sscanf(de->d_name, "odl_tb5_%d", &idx) != 1 ||
		    strlen(de->d_name) > 40)
			continue;
		snprintf(path, sizeof(path), "/dev/%.40s", de->d_name);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (get_info(fd, &ki) != 0) {
			close(fd);
			continue;
		}
		if ((size_t)n < max) {
			struct odl_tb5_info *o = &infos[n];

			memset(o, 0, sizeof(*o));
			k_info_fill(o, &ki, path, ki.state == K_STATE_CONNECTED);
			o->state = ki.state == K_STATE_CONNECTED ?
				ODL_TB5_STATE_CONNECTED : ODL_TB5_STATE_WAITING;
			o->max_msg_size = ki.max_msg_size;
		}
		n++;
		close(fd);
	}
	closedir(d);
	return n;
}
