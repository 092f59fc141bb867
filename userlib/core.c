// SPDX-License-Identifier: MIT
/*
 * libodl_tb5 front end: argument checking, buffers, statistics, device
 * spec parsing and error strings. The data path is in the backends
 * (shm.c, kernel.c).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "odl_priv.h"

#define ODL_WAIT_FLAGS (ODL_TB5_F_NONBLOCK | ODL_TB5_F_BUSY_POLL | ODL_TB5_F_SLEEP)
#define ODL_DATA_FLAGS (ODL_WAIT_FLAGS | ODL_TB5_F_URGENT)

static int fail(int err)
{
	errno = err;
	return -err;
}

static int ret(int r)
{
	if (r < 0)
		errno = -r;
	return r;
}

ODL_EXPORT uint32_t odl_tb5_version(void)
{
	return ((uint32_t)ODL_TB5_API_MAJOR << 16) | ODL_TB5_API_MINOR;
}

ODL_EXPORT void odl_tb5_open_opts_init(struct odl_tb5_open_opts *o)
{
	if (!o)
		return;
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->port = ODL_TB5_DEFAULT_PORT;
	o->role = ODL_TB5_ROLE_AUTO;
	o->timeout_ms = 30000;
}

/* ------------------------------------------------------------------ */
/* UUIDs */

ODL_EXPORT void odl_tb5_uuid_to_str(const uint8_t u[16], char out[37])
{
	static const char hx[] = "0123456789abcdef";
	int i, o = 0;

	if (!out)
		return;
	if (!u) {
		out[0] = 0;
		return;
	}
	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hx[u[i] >> 4];
		out[o++] = hx[u[i] & 15];
	}
	out[o] = 0;
}

ODL_EXPORT int odl_tb5_uuid_parse(const char *s, uint8_t u[16])
{
	uint8_t tmp[16];
	int i, n = 0;

	if (!s || !u || strlen(s) != 36)
		return fail(EINVAL);
	for (i = 0; i < 36; i++) {
		int v;

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return fail(EINVAL);
			continue;
		}
		if (!isxdigit((unsigned char)s[i]))
			return fail(EINVAL);
		v = isdigit((unsigned char)s[i]) ? s[i] - '0' :
			tolower((unsigned char)s[i]) - 'a' + 10;
		if (n & 1)
			tmp[n / 2] |= (uint8_t)v;
		else
			tmp[n / 2] = (uint8_t)(v << 4);
		n++;
	}
	memcpy(u, tmp, 16);
	return 0;
}

/* Stable pseudo-UUID from a name (FNV-1a 64, twice), RFC 4122 v8 bits. */
void odl_uuid_from_name(const char *name, uint8_t u[16])
{
	uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
	const unsigned char *p;
	int i;

	for (p = (const unsigned char *)name; *p; p++) {
		h1 = (h1 ^ *p) * 0x100000001b3ull;
		h2 = (h2 ^ *p) * 0x100000001b3ull + 7;
	}
	for (i = 0; i < 8; i++) {
		u[i] = (uint8_t)(h1 >> (8 * i));
		u[8 + i] = (uint8_t)(h2 >> (8 * i));
	}
	u[6] = (uint8_t)((u[6] & 0x0f) | 0x80);
	u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
}

/* ------------------------------------------------------------------ */
/* errors */

ODL_EXPORT const char *odl_tb5_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0: return "success";
	case EINVAL: return "invalid argument (NULL pointer, bad flag, or offset/length out of range)";
	case ENOENT: return "no such buffer id or device";
	case ENODEV: return "no such device";
	case EAGAIN: return "operation would block (queue full or nothing ready)";
	case ETIMEDOUT: return "timed out";
	case ECONNRESET: return "peer disconnected (closed, died or link lost)";
	case ENOTCONN: return "peer not connected yet";
	case EMSGSIZE: return "message too large (for the transport or the posted receive buffer)";
	case EBUSY: return "busy (buffer in use by a queued operation, or endpoint already open)";
	case EADDRINUSE: return "port already in use on this device";
	case ENOTSUP: return "operation not supported (by this backend, the driver or the peer)";
	case EPROTO: return "protocol error (incompatible version or malformed data from the peer)";
	case ENOSPC: return "buffer area exhausted";
	case EBADMSG: return "message lost or corrupted in transit (detected by the transport)";
	case ENOMEM: return "out of memory";
	case ECANCELED: return "operation cancelled";
	case EEXIST: return "a receive with this key is already posted";
	case EIO: return "I/O error";
	case EACCES: return "permission denied";
	case EBADF: return "bad file descriptor";
	case E2BIG: return "driver rejected a structure size (ABI mismatch)";
	default: break;
	}
	return "unknown error";
}

/* ------------------------------------------------------------------ */
/* opening */

static int valid_opts(const struct odl_tb5_open_opts *o)
{
	if (o->size < offsetof(struct odl_tb5_open_opts, reserved))
		return -EINVAL;
	if (o->port > ODL_TB5_MAX_PORT)
		return -EINVAL;
	if (o->role < ODL_TB5_ROLE_AUTO || o->role > ODL_TB5_ROLE_B)
		return -EINVAL;
	if (o->flags & ~(ODL_TB5_OPEN_BUSY_POLL | ODL_TB5_OPEN_BATCH))
		return -EINVAL;
	if (o->tx_depth > 4096 || o->rx_depth > 4096)
		return -EINVAL;
	return 0;
}

static int open_backend(const struct odl_backend *be, const char *arg,
			const struct odl_tb5_open_opts *opts, odl_tb5_t **out)
{
	struct odl_tb5_open_opts o;
	struct odl_tb5 *h;
	int r;

	odl_tb5_open_opts_init(&o);
	if (opts) {
		if (opts->size < offsetof(struct odl_tb5_open_opts, reserved) ||
		    opts->size > 4096)
			return -EINVAL;
		memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
		o.size = sizeof(o);
	}
	r = valid_opts(&o);
	if (r)
		return r;
	if (o.port == 0)
		o.port = ODL_TB5_DEFAULT_PORT;
	if (o.tx_depth == 0)
		o.tx_depth = 256;
	if (o.rx_depth == 0)
		o.rx_depth = 256;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	pthread_mutex_init(&h->lock, NULL);
	atomic_init(&h->lock_waiters, 0);
	h->be = be;
	h->opts = o;
	h->port = o.port;
	h->busy_default = (o.flags & ODL_TB5_OPEN_BUSY_POLL) != 0;
	r = be->open(h, arg, &o);
	if (r) {
		pthread_mutex_destroy(&h->lock);
		free(h);
		return r;
	}
	*out = h;
	return 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

static int open_by_uuid(const uint8_t uuid[16],
			const struct odl_tb5_open_opts *opts, odl_tb5_t **out)
{
	struct odl_tb5_info infos[64];
	int n, i;

	n = odl_tb5_list(infos, 64);
	if (n < 0)
		return n;
	if (n > 64)
		n = 64;
	for (i = 0; i < n; i++)
		if (!memcmp(infos[i].peer_uuid, uuid, 16))
			return open_backend(&odl_backend_kernel, infos[i].name,
					    opts, out);
	return -ENODEV;
}

ODL_EXPORT int odl_tb5_open(const char *spec, const struct odl_tb5_open_opts *opts,
			    odl_tb5_t **out)
{
	char path[64];
	uint8_t uuid[16];

	if (!out)
		return fail(EINVAL);
	*out = NULL;
	if (!spec || !*spec)
		spec = getenv("ODL_TB5_DEVICE");
	if (!spec || !*spec)
		spec = "0";
	if (!strncmp(spec, "shm:", 4))
		return ret(open_backend(&odl_backend_shm, spec + 4, opts, out));
	if (all_digits(spec)) {
		if (strlen(spec) > 6)
			return fail(EINVAL);
		snprintf(path, sizeof(path), "/dev/odl_tb5_%s", spec);
		return ret(open_backend(&odl_backend_kernel, path, opts, out));
	}
	if (spec[0] == '/') {
		if (strlen(spec) >= sizeof(path))
			return fail(EINVAL);
		return ret(open_backend(&odl_backend_kernel, spec, opts, out));
	}
	if (!strncmp(spec, "uuid:", 5))
		spec += 5;
	if (odl_tb5_uuid_parse(spec, uuid) == 0)
		return ret(open_by_uuid(uuid, opts, out));
	return fail(EINVAL);
}

ODL_EXPORT int odl_tb5_open_index(int index, const struct odl_tb5_open_opts *opts,
				  odl_tb5_t **out)
{
	char s[16];

	if (index < 0 || index > 999999)
		return fail(EINVAL);
	snprintf(s, sizeof(s), "%d", index);
	return odl_tb5_open(s, opts, out);
}

ODL_EXPORT int odl_tb5_open_uuid(const uint8_t uuid[16],
				 const struct odl_tb5_open_opts *opts, odl_tb5_t **out)
{
	if (!uuid || !out)
		return fail(EINVAL);
	*out = NULL;
	return ret(open_by_uuid(uuid, opts, out));
}

static void buf_release(struct odl_tb5 *h, struct odl_buf *b)
{
	h->be->buf_free(h, b);
	memset(b, 0, sizeof(*b));
}

ODL_EXPORT int odl_tb5_close(odl_tb5_t *h)
{
	uint32_t i;

	if (!h)
		return 0;
	odl_lock(h);
	for (i = 1; i <= ODL_TB5_MAX_BUFS; i++)
		if (h->bufs[i].kind != ODL_BUF_NONE)
			buf_release(h, &h->bufs[i]);
	h->be->close(h);
	pthread_mutex_unlock(&h->lock);
	pthread_mutex_destroy(&h->lock);
	free(h);
	return 0;
}

ODL_EXPORT int odl_tb5_wait_peer(odl_tb5_t *h, int timeout_ms)
{
	int r;

	if (!h)
		return fail(EINVAL);
	odl_lock(h);
	r = h->be->wait_peer(h, timeout_ms);
	if (r == -ETIMEDOUT)
		h->st.timeouts++;
	pthread_mutex_unlock(&h->lock);
	return ret(r);
}

/* ------------------------------------------------------------------ */
/* info */

ODL_EXPORT int odl_tb5_info(odl_tb5_t *h, struct odl_tb5_info *info)
{
	int r;

	if (!h || !info)
		return fail(EINVAL);
	memset(info, 0, sizeof(*info));
	odl_lock(h);
	info->port = h->port;
	r = h->be->info(h, info);
	pthread_mutex_unlock(&h->lock);
	return ret(r);
}

ODL_EXPORT int odl_tb5_state(odl_tb5_t *h)
{
	int r;

	if (!h)
		return fail(EINVAL);
	odl_lock(h);
	r = h->be->state(h);
	pthread_mutex_unlock(&h->lock);
	return ret(r);
}

ODL_EXPORT int odl_tb5_fd(odl_tb5_t *h)
{
	if (!h)
		return fail(EINVAL);
	return ret(h->be->fd(h));
}

/* ------------------------------------------------------------------ */
/* buffers */

static uint32_t free_id(struct odl_tb5 *h)
{
	uint32_t i;

	for (i = 1; i <= ODL_TB5_MAX_BUFS; i++)
		if (h->bufs[i].kind == ODL_BUF_NONE)
			return i;
	return 0;
}

static int buf_new(struct odl_tb5 *h, enum odl_buf_kind kind, void *addr,
		   uint64_t size, uint32_t flags, int fd, uint64_t offset,
		   uint32_t *id)
{
	struct odl_buf *b;
	uint32_t i;
	int r;

	i = free_id(h);
	if (!i)
		return -ENOSPC;
	b = &h->bufs[i];
	memset(b, 0, sizeof(*b));
	b->kind = kind;
	b->addr = addr;
	b->size = size;
	b->flags = flags;
	b->dmabuf_fd = -1;
	b->tx_off = b->rx_off = -1;
	if (kind == ODL_BUF_ALLOC)
		r = h->be->buf_alloc(h, b);
	else if (kind == ODL_BUF_REG)
		r = h->be->buf_register(h, b);
	else
		r = h->be->buf_import(h, b, fd, offset);
	if (r) {
		memset(b, 0, sizeof(*b));
		return r;
	}
	*id = i;
	return 0;
}

ODL_EXPORT int odl_tb5_buf_alloc(odl_tb5_t *h, size_t size, uint32_t flags,
				 uint32_t *id, void **addr)
{
	int r;

	if (!h || !id || !addr || size == 0 || size > (1ull << 40) ||
	    (flags & ~(ODL_TB5_BUF_SEND | ODL_TB5_BUF_RECV)))
		return fail(EINVAL);
	odl_lock(h);
	r = buf_new(h, ODL_BUF_ALLOC, NULL, size, flags, -1, 0, id);
	if (!r)
		*addr = h->bufs[*id].addr;
	pthread_mutex_unlock(&h->lock);
	return ret(r);
}

ODL_EXPORT int odl_tb5_buf_register_flags(odl_tb5_t *h, void *addr, size_t size,
					  uint32_t flags, uint32_t *id)
{
	int r;

	if (!h || !addr || !id || size == 0 ||
	    (uintptr_t)addr + size < (uintptr_t)addr ||
	    (flags & ~ODL_TB5_REG_DIRECT))
		return fail(EINVAL);
	odl_lock(h);
	r = buf_new(h, ODL_BUF_REG, addr, size, flags, -1, 0, id);
	pthread_mutex_unlock(&h->lock);
	return ret(r);
}

ODL_EXPORT int odl_tb5_buf_register(odl_tb5_t *h, void *addr, size_t size,
				    uint32_t *id)
{
	return odl_tb5_buf_register_flags(h, addr, size, 0, id);
}

ODL_EXPORT int odl_tb5_buf_import_dmabuf(odl_tb5_t *h, int fd, uint64_t offset,
					 uint64_t size, uint32_t *id)
{
	int r;

	if (!h || !id || fd < 0 || size == 0 || offset + size < offset)
		return fail(EINVAL);
	odl_lock(h);
	r = buf_new(h, ODL_BUF_DMABUF, NULL, size, 0, fd, offset, id);
	pthread_mutex_unlock(&h->lock);
	return ret(r);
}

ODL_EXPORT void *odl_tb5_buf_addr(odl_tb5_t *h, uint32_t id)
{
	struct odl_buf *b;
	void *a = NULL;

	if (!h)
		return NULL;
	odl_lock(h);
	b = odl_buf_get(h, id);
	if (b)
		a = b->addr;
	pthread_mutex_unlock(&h->lock);
	return a;
}

ODL_EXPORT int odl_tb5_buf_free(odl_tb5_t *h, uint32_t id)
{
	struct odl_buf *b;
	int r = 0;

	if (!h)
		return fail(EINVAL);
	odl_lock(h);
	b = odl_buf_get(h, id);
	if (!b)
		r = -ENOENT;
	else if (b->users)
		r = -EBUSY;
	else
		buf_release(h, b);
	pthread_mutex_unlock(&h->lock);
	return ret(r);
}

/* ------------------------------------------------------------------ */
/* data path */

static int check_op(struct odl_tb5 *h, uint32_t id, uint64_t off, uint64_t len,
		    uint32_t flags)
{
	struct odl_buf *b;

	if (flags & ~ODL_DATA_FLAGS)
		return -EINVAL;
	if ((flags & ODL_TB5_F_BUSY_POLL) && (flags & ODL_TB5_F_SLEEP))
		return -EINVAL;
	b = odl_buf_get(h, id);
	if (!b)
		return -ENOENT;
	if (off > b->size || len > b->size - off)
		return -EINVAL;
	return 0;
}

static void count_err(struct odl_tb5 *h, int r)
{
	if (r == -EAGAIN)
		h->st.eagain++;
	else if (r == -ETIMEDOUT)
		h->st.timeouts++;
}

ODL_EXPORT int odl_tb5_send_to(odl_tb5_t *h, uint32_t dst_port, uint32_t id,
			       uint64_t off, uint64_t len, uint32_t key,
			       uint64_t cookie, uint32_t flags)
{
	int r;

	if (!h)
		return fail(EINVAL);
	odl_lock(h);
	r = check_op(h, id, off, len, flags);
	if (!r && dst_port > ODL_TB5_MAX_PORT)
		r = -EINVAL;
	if (!r && (flags & ODL_TB5_F_URGENT) && len > ODL_TB5_URGENT_MAX)
		r = -EMSGSIZE;
	/* counted before: the backend drops the lock while it waits for
	 * room, and the buffer must not be freed meanwhile
	 */
	if (!r) {
		h->bufs[id].users++;
		r = h->be->send(h, dst_port ? dst_port : h->port, id, off, len,
				key, cookie, flags);
		if (r)
			h->bufs[id].users--;
	}
	count_err(h, r);
	pthread_mutex_unlock(&h->lock);
	return ret(r);
}

ODL_EXPORT int odl_tb5_send_key(odl_tb5_t *h, uint32_t id, uint64_t off,
				uint64_t len, uint32_t key, uint64_t cookie,
				uint32_t flags)
{
	return odl_tb5_send_to(h, 0, id, off, len, key, cookie, flags);
}

ODL_EXPORT int odl_tb5_send(odl_tb5_t *h, uint32_t id, uint64_t off, uint64_t len,
			    uint64_t cookie, uint32_t flags)
{
	return odl_tb5_send_key(h, id, off, len, 0, cookie, flags);
}

ODL_EXPORT int odl_tb5_post_recv_key(odl_tb5_t *h, uint32_t id, uint64_t off,
				     uint64_t cap, uint32_t key, uint64_t cookie,
				     uint32_t flags)
{
	int r;

	if (!h)
		return fail(EINVAL);
	odl_lock(h);
	r = (flags & ODL_TB5_F_URGENT) ? -EINVAL : check_op(h, id, off, cap, flags);
	if (!r) {
		h->bufs[id].users++;	/* before: as in odl_tb5_send_to */
		r = h->be->post_recv(h, id, off, cap, key, cookie, flags);
		if (r)
			h->bufs[id].users--;
	}
	count_err(h, r);
	pthread_mutex_unlock(&h->lock);
	return ret(r);
}

ODL_EXPORT int odl_tb5_post_recv(odl_tb5_t *h, uint32_t id, uint64_t off,
				 uint64_t cap, uint64_t cookie, uint32_t flags)
{
	return odl_tb5_post_recv_key(h, id, off, cap, 0, cookie, flags);
}

ODL_EXPORT int odl_tb5_cancel_recv(odl_tb5_t *h, uint32_t key)
{
	int r;

	if (!h || !key)
		return fail(EINVAL);
	odl_lock(h);
	r = h->be->cancel(h, key);
	pthread_mutex_unlock(&h->lock);
	return ret(r);
}

ODL_EXPORT int odl_tb5_poll_min(odl_tb5_t *h, struct odl_tb5_completion *c,
				unsigned int max, unsigned int min, int timeout_ms,
				uint32_t flags)
{
	int r, i;

	if (!h || !c || max == 0 || min == 0 || min > max ||
	    (flags & ~ODL_WAIT_FLAGS) ||
	    ((flags & ODL_TB5_F_BUSY_POLL) && (flags & ODL_TB5_F_SLEEP)))
		return fail(EINVAL);
	if (flags & ODL_TB5_F_NONBLOCK)
		timeout_ms = 0;
	odl_lock(h);
	r = h->be->poll(h, c, max, min, timeout_ms, flags);
	for (i = 0; i < r; i++) {
		struct odl_buf *b = odl_buf_get(h, c[i].buf_id);

		if (b && b->users)
			b->users--;
		if (c[i].op == ODL_TB5_OP_SEND) {
			if (c[i].status == 0) {
				h->st.tx_msgs++;
				h->st.tx_bytes += c[i].length;
			} else {
				h->st.tx_errors++;
			}
		} else {
			if (c[i].status == 0) {
				h->st.rx_msgs++;
				h->st.rx_bytes += c[i].length;
			} else {
				h->st.rx_errors++;
				if (c[i].status == -EMSGSIZE)
					h->st.rx_msgsize++;
			}
		}
	}
	count_err(h, r);
	pthread_mutex_unlock(&h->lock);
	return ret(r);
}

ODL_EXPORT int odl_tb5_poll(odl_tb5_t *h, struct odl_tb5_completion *c,
			    unsigned int max, int timeout_ms, uint32_t flags)
{
	return odl_tb5_poll_min(h, c, max, 1, timeout_ms, flags);
}

ODL_EXPORT int odl_tb5_pending(odl_tb5_t *h, unsigned int *s, unsigned int *rv)
{
	unsigned int a, b;
	int r;

	if (!h)
		return fail(EINVAL);
	odl_lock(h);
	r = h->be->pending(h, &a, &b);
	pthread_mutex_unlock(&h->lock);
	if (!r) {
		if (s)
			*s = a;
		if (rv)
			*rv = b;
	}
	return ret(r);
}

ODL_EXPORT int odl_tb5_stats(odl_tb5_t *h, struct odl_tb5_stats *st)
{
	if (!h || !st)
		return fail(EINVAL);
	odl_lock(h);
	*st = h->st;
	pthread_mutex_unlock(&h->lock);
	return 0;
}

ODL_EXPORT int odl_tb5_stats_reset(odl_tb5_t *h)
{
	if (!h)
		return fail(EINVAL);
	odl_lock(h);
	memset(&h->st, 0, sizeof(h->st));
	pthread_mutex_unlock(&h->lock);
	return 0;
}
