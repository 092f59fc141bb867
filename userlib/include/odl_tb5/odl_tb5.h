/* SPDX-License-Identifier: MIT */
/*
 * libodl_tb5 — userspace API of the OdinLink Thunderbolt 5 / USB4
 * peer-to-peer DMA interconnect.
 *
 * One handle (odl_tb5_t) is one endpoint: a device (the kernel driver's
 * /dev/odl_tb5_N, or a shared-memory "device" for host-side development)
 * plus a port number. Several handles may use the same device on different
 * ports (1..255, like the driver's BIND); ports are independent message
 * channels (each with its own queues and ordering). The two endpoints of a
 * channel are the two machines' handles on the same port number; a port can
 * be open by one handle at a time per side (else -EBUSY/-EADDRINUSE).
 *
 * Backend differences (the API and its checks are the same):
 *   - kernel: messages are 0..max_msg_size bytes with driver ABI 1.9 and a
 *     peer that agreed to empty messages (ODL_TB5_FEAT_EMPTY), else
 *     1..max_msg_size (a 0-byte send or receive returns -EINVAL with an
 *     older driver, -EOPNOTSUPP with an older peer); a message sent to a
 *     port the peer has not opened is dropped by the peer's driver (counted
 *     in its stats), so applications handshake before streaming;
 *     odl_tb5_wait_peer waits for the driver's link login.
 *   - shm: messages are 0..max_msg_size bytes; messages queued before the
 *     peer opens the port are delivered when it does; wait_peer waits for
 *     the peer process to open the same port.
 *
 * Data model (verbs-like, asynchronous):
 *   - register memory as numbered buffers (odl_tb5_buf_alloc / _register /
 *     _import_dmabuf); operations name a buffer id, an offset and a length,
 *     and the library checks them against the buffer before anything moves;
 *   - odl_tb5_send() queues a message (0 .. info.max_msg_size bytes);
 *     odl_tb5_post_recv() queues a receive buffer with a capacity;
 *   - messages are delivered in order, each into the oldest posted receive;
 *     a message larger than that receive's capacity is NOT truncated: the
 *     receive completes with status -EMSGSIZE (completion.length = the
 *     message's real length) and the message is dropped;
 *   - every queued operation produces exactly one completion (odl_tb5_poll),
 *     carrying the caller's 64-bit cookie, in queue order per direction;
 *   - the buffer area named by a queued operation must stay valid and
 *     untouched until its completion has been polled.
 *
 * Waiting: blocking (sleep in the kernel/futex), non-blocking (ODL_TB5_F_NONBLOCK
 * or timeout 0 → -EAGAIN), or busy-poll (ODL_TB5_F_BUSY_POLL, or
 * ODL_TB5_OPEN_BUSY_POLL for the handle's default). Every blocking wait is
 * bounded by a timeout and ends early with -ECONNRESET when the peer goes
 * away. Progress (moving queued data) happens inside library calls; an
 * application that queues work must keep calling odl_tb5_poll().
 *
 * Errors: every function returning int returns >= 0 on success and a
 * negative errno value on failure (errno is also set to the positive value).
 * On failure of a call that validates its arguments nothing is changed.
 * Notable codes:
 *   -EINVAL      bad argument (NULL, bad flags, offset/length out of range)
 *   -ENOENT      unknown buffer id
 *   -ENODEV      no such device (kernel backend)
 *   -EAGAIN      non-blocking call would block (queue full / no completion)
 *   -ETIMEDOUT   a bounded wait expired
 *   -ECONNRESET  the peer detached or died (the handle stays unusable for
 *                data: close it and open again)
 *   -ENOTCONN    the peer has not attached yet (odl_tb5_wait_peer with
 *                timeout 0; kernel: send/post before the link ever came up)
 *   -EMSGSIZE    message larger than max_msg_size, or (completion status)
 *                larger than the posted receive's capacity
 *   -EBUSY       buffer still used by a queued operation; endpoint already
 *                open by someone else
 *   -ENOTSUP     operation not supported by this backend (e.g. DMA-buf on shm)
 *   -EPROTO      peer or driver speaks an incompatible protocol/ABI version,
 *                or sent malformed data (the channel is then shut down)
 *   -ENOSPC      buffer area exhausted
 *   -EBADMSG     corrupted/lost data detected by the transport (also
 *                odl_tb5_poll: a message was lost in transit, see there)
 * odl_tb5_strerror() gives a message for all of them.
 *
 * Do not include this header and the driver's odl_tb5_uapi.h in the same
 * translation unit (both define struct odl_tb5_info and a few constants).
 *
 * Thread safety: all functions may be called concurrently on the same handle
 * from several threads (each handle has an internal lock, released while a
 * call sleeps and between two looks of a busy-polling wait, where a thread
 * waiting for it goes first), except odl_tb5_close(), which must not race
 * any other call on that handle. A completion goes to whichever thread
 * polls it. Different handles are independent. Handles are not inherited
 * usefully across fork(): the child must open its own. The free functions
 * (odl_tb5_strerror, odl_tb5_list, odl_tb5_uuid_*) are thread-safe.
 *
 * Device specs accepted by odl_tb5_open():
 *   "0", "3"                      index N → /dev/odl_tb5_N (kernel backend)
 *   "/dev/odl_tb5_3"              device path (kernel backend)
 *   "uuid:XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX" or the bare UUID:
 *                                 the device whose PEER has this UUID
 *   "shm:NAME"                    shared-memory backend, side chosen by
 *                                 opts.role (ODL_TB5_ROLE_AUTO: the first
 *                                 free side, "a" before "b")
 *   "shm:NAME:a", "shm:NAME:b"    shared-memory backend, explicit side
 * NAME: 1..48 characters of [A-Za-z0-9_.-]. The environment variable
 * ODL_TB5_DEVICE is used when spec is NULL or "".
 */
#ifndef ODL_TB5_H
#define ODL_TB5_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* API version of this header: major changes break source compatibility. */
#define ODL_TB5_API_MAJOR 1
#define ODL_TB5_API_MINOR 7	/* 1.1: lost messages (-EBADMSG), stats.rx_lost;
				 * 1.2: ODL_TB5_OPEN_BATCH, odl_tb5_poll_min;
				 * 1.3: registered memory pinned by the driver,
				 * odl_tb5_buf_register_flags, stats.copied_bytes,
				 * keyed messages (odl_tb5_send_key,
				 * odl_tb5_post_recv_key, odl_tb5_cancel_recv);
				 * 1.4: urgent sends (ODL_TB5_F_URGENT);
				 * 1.5: sends to another port of the peer
				 * (odl_tb5_send_to, ODL_TB5_FEAT_PORTS);
				 * 1.6: a withdrawn key's message is skipped,
				 * held-aside messages give way when stale;
				 * 1.7: 0-byte messages on the kernel backend
				 * (ODL_TB5_FEAT_EMPTY) */

/* Version of the library actually loaded: (major << 16) | minor. */
uint32_t odl_tb5_version(void);

typedef struct odl_tb5 odl_tb5_t;

/* ------------------------------------------------------------------ */
/* opening */

enum odl_tb5_role {
	ODL_TB5_ROLE_AUTO = 0,	/* shm: first free side; kernel: ignored */
	ODL_TB5_ROLE_A = 1,	/* shm side "a" */
	ODL_TB5_ROLE_B = 2,	/* shm side "b" */
};

/* odl_tb5_open_opts.flags */
#define ODL_TB5_OPEN_BUSY_POLL	(1u << 0) /* default wait mode: spin, not sleep */
/*
 * API 1.2: hand sends and receives to the device in batches: odl_tb5_send /
 * _post_recv check their arguments and queue the operation in the library;
 * the queue goes to the device (kernel: one SUBMIT ioctl for up to 64) at
 * the next odl_tb5_poll / _poll_min / _pending call or when 64 are queued.
 * Fewer system calls per message; an operation the device refuses then
 * completes with that status. Without it every call goes to the device at
 * once. shm: no effect (no system call to save).
 */
#define ODL_TB5_OPEN_BATCH	(1u << 1)

#define ODL_TB5_MAX_PORT	255	/* ports are 1 .. ODL_TB5_MAX_PORT */
#define ODL_TB5_DEFAULT_PORT	1	/* used when opts.port is 0 */

struct odl_tb5_open_opts {
	uint32_t size;		/* sizeof(struct odl_tb5_open_opts); set by _init */
	uint32_t port;		/* endpoint port 1..ODL_TB5_MAX_PORT; 0 = default (1).
				 * A handle receives what the peer's handle
				 * on the same port number sends. */
	int32_t role;		/* enum odl_tb5_role (shm backend) */
	uint32_t flags;		/* ODL_TB5_OPEN_* */
	int32_t timeout_ms;	/* bound of blocking send/post_recv waits for
				 * queue space; -1 = no bound; default 30000 */
	uint32_t tx_depth;	/* max queued sends; 0 = default (256) */
	uint32_t rx_depth;	/* max posted receives; 0 = default (256) */
	uint32_t reserved0;
	uint64_t ring_bytes;	/* shm: bytes of ring per direction, power of
				 * two 64 KiB .. 256 MiB; 0 = default (4 MiB).
				 * kernel: bytes of each of the 2 TX + 2 RX
				 * driver buffers (page multiple, <= 64 MiB;
				 * 0 = 8 MiB); bounds the size of a buffer from
				 * odl_tb5_buf_alloc (registered memory: the
				 * driver's max_msg_size) */
	uint64_t max_msg_size;	/* 0 = backend maximum (shm: 64 MiB); shm:
				 * the smaller of both sides' values is used */
	uint64_t reserved[4];
};

/* Fill opts with the defaults (always call it before setting fields). */
void odl_tb5_open_opts_init(struct odl_tb5_open_opts *opts);

/*
 * Open an endpoint. spec: see above; opts may be NULL (defaults). On
 * success *out is the new handle and 0 is returned. The peer need not be
 * present yet: use odl_tb5_wait_peer() to wait for it. Sends queued before
 * the peer attaches are delivered once it does.
 */
int odl_tb5_open(const char *spec, const struct odl_tb5_open_opts *opts,
		 odl_tb5_t **out);

/* Open /dev/odl_tb5_<index>, or the device whose peer has uuid (16 bytes). */
int odl_tb5_open_index(int index, const struct odl_tb5_open_opts *opts,
		       odl_tb5_t **out);
int odl_tb5_open_uuid(const uint8_t uuid[16],
		      const struct odl_tb5_open_opts *opts, odl_tb5_t **out);

/*
 * Close: pending operations are abandoned (no completions), buffers freed,
 * the peer sees the endpoint detach. NULL is accepted. Returns 0.
 */
int odl_tb5_close(odl_tb5_t *h);

/*
 * Wait until the peer endpoint is attached: 0 once connected, -ETIMEDOUT,
 * -ENOTCONN (timeout_ms == 0 and not yet connected), -ECONNRESET (the peer
 * came and went). timeout_ms -1 = no bound.
 */
int odl_tb5_wait_peer(odl_tb5_t *h, int timeout_ms);

/* ------------------------------------------------------------------ */
/* information and discovery */

enum odl_tb5_state {
	ODL_TB5_STATE_WAITING = 0,	/* peer not attached yet */
	ODL_TB5_STATE_CONNECTED = 1,
	ODL_TB5_STATE_DISCONNECTED = 2,	/* peer left / died / link lost */
	ODL_TB5_STATE_ERROR = 3,	/* protocol error; channel shut down */
};

/* odl_tb5_info.features */
#define ODL_TB5_FEAT_DMABUF	(1u << 0)	/* odl_tb5_buf_import_dmabuf works */
#define ODL_TB5_FEAT_POLLFD	(1u << 1)	/* odl_tb5_fd() gives a pollable fd */
#define ODL_TB5_FEAT_E2E	(1u << 2)	/* end-to-end flow control on */
#define ODL_TB5_FEAT_ZEROCOPY	(1u << 3)	/* odl_tb5_buf_alloc buffers DMA directly */
#define ODL_TB5_FEAT_KEYED	(1u << 4)	/* 1.3: keyed messages work (kernel:
						 * driver ABI 1.4, agreed with the peer) */
#define ODL_TB5_FEAT_URGENT	(1u << 5)	/* 1.4: urgent sends overtake (kernel:
						 * driver ABI 1.5) */
#define ODL_TB5_FEAT_PORTS	(1u << 6)	/* 1.5: odl_tb5_send_to may name any
						 * port of the peer (kernel) */
#define ODL_TB5_FEAT_EMPTY	(1u << 7)	/* 1.7: 0-byte messages (shm: always;
						 * kernel: driver ABI 1.9, agreed
						 * with the peer) */

struct odl_tb5_info {
	char backend[16];	/* "kernel" or "shm" */
	char name[80];		/* "/dev/odl_tb5_0", "shm:NAME:a" */
	int32_t index;		/* N of /dev/odl_tb5_N; -1 for shm */
	uint32_t port;
	uint8_t local_uuid[16];	/* this host's UUID (shm: derived from name+side) */
	uint8_t peer_uuid[16];
	uint32_t link_speed_gbps;	/* per lane, Gb/s; 0 = unknown/virtual */
	uint32_t link_lanes;		/* 0 = unknown/virtual */
	uint32_t abi_version;	/* kernel: driver ABI version; shm: segment layout */
	uint32_t state;		/* enum odl_tb5_state */
	uint32_t features;	/* ODL_TB5_FEAT_* */
	uint32_t tx_depth;	/* effective queue depths */
	uint32_t rx_depth;
	uint32_t reserved0;
	uint64_t max_msg_size;	/* largest message, bytes */
	uint64_t ring_bytes;	/* kernel: bytes of DMA ring per direction;
				 * shm: shared ring per direction */
	uint64_t reserved[6];
};

int odl_tb5_info(odl_tb5_t *h, struct odl_tb5_info *info);

/* Current enum odl_tb5_state of a handle (>= 0), or -errno. */
int odl_tb5_state(odl_tb5_t *h);

/*
 * Kernel devices present: up to max entries (opened read-only briefly to
 * read their info, port fields are 0). Returns the number of devices found
 * (may exceed max; only max are filled), 0 when none, or -errno.
 */
int odl_tb5_list(struct odl_tb5_info *infos, size_t max);

/* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (36 chars + NUL) into out[37]. */
void odl_tb5_uuid_to_str(const uint8_t uuid[16], char out[37]);
/* Parse the above (case-insensitive); 0 or -EINVAL. */
int odl_tb5_uuid_parse(const char *s, uint8_t uuid[16]);

/*
 * A file descriptor that becomes readable when a completion may be ready
 * or the state changed (for poll/epoll), or -ENOTSUP (shm backend).
 */
int odl_tb5_fd(odl_tb5_t *h);

/* ------------------------------------------------------------------ */
/* buffers */

/* odl_tb5_buf_alloc flags: direction hints (0 = both directions) */
#define ODL_TB5_BUF_SEND	(1u << 0)
#define ODL_TB5_BUF_RECV	(1u << 1)

#define ODL_TB5_MAX_BUFS	1024	/* buffer ids are 1 .. ODL_TB5_MAX_BUFS */

/*
 * Allocate size bytes (> 0) of buffer memory suited to the backend (kernel:
 * in the driver's mmap'd DMA area, so sends/receives need no copy; shm:
 * page-aligned anonymous memory). *addr is its CPU address, page aligned.
 * Returns 0 and the id in *id, or -EINVAL, -ENOMEM, -ENOSPC.
 */
int odl_tb5_buf_alloc(odl_tb5_t *h, size_t size, uint32_t flags,
		      uint32_t *id, void **addr);

/*
 * Register caller memory [addr, addr+size) as a buffer (the caller keeps
 * ownership; it must outlive the registration). Backends that cannot move
 * data from arbitrary memory copy through their own area. Kernel backend
 * (1.3): with a driver of ABI 1.4 or later the library pins the memory
 * (ODL_TB5_IOC_MEM_REG; any alignment, up to 1 GiB, writable memory,
 * RLIMIT_MEMLOCK) and the driver copies straight between it and the ring
 * frames: no library copy (stats.copied_bytes stays 0). It falls back to
 * copying through the driver's area when pinning is refused (read-only
 * memory, lock limit, all 64 handles in use) or ODL_TB5_NO_PIN=1 is set.
 */
int odl_tb5_buf_register(odl_tb5_t *h, void *addr, size_t size, uint32_t *id);

/*
 * API 1.3: odl_tb5_buf_register with flags. ODL_TB5_REG_DIRECT: data must
 * move straight between this memory and the transport; where the backend
 * would copy it through its own area instead (kernel: the driver cannot pin
 * it, or is older than ABI 1.4) fail with -EOPNOTSUPP. The shm backend
 * always moves data straight between caller memory and its shared ring.
 */
#define ODL_TB5_REG_DIRECT	(1u << 0)
int odl_tb5_buf_register_flags(odl_tb5_t *h, void *addr, size_t size,
			       uint32_t flags, uint32_t *id);

/*
 * Import a DMA-buf (fd, offset, size) as a send source / receive target.
 * The fd is duplicated; the caller may close its own. Kernel backend only:
 * the shm backend returns -ENOTSUP.
 */
int odl_tb5_buf_import_dmabuf(odl_tb5_t *h, int dmabuf_fd, uint64_t offset,
			      uint64_t size, uint32_t *id);

/* CPU address of a buffer (NULL for unknown ids and DMA-bufs). */
void *odl_tb5_buf_addr(odl_tb5_t *h, uint32_t id);

/* Release a buffer: -ENOENT unknown, -EBUSY still named by a queued op. */
int odl_tb5_buf_free(odl_tb5_t *h, uint32_t id);

/* ------------------------------------------------------------------ */
/* data path */

/* flags of odl_tb5_send / odl_tb5_post_recv / odl_tb5_poll */
#define ODL_TB5_F_NONBLOCK	(1u << 0)	/* never wait: -EAGAIN instead */
#define ODL_TB5_F_BUSY_POLL	(1u << 1)	/* wait by spinning, not sleeping */
#define ODL_TB5_F_SLEEP		(1u << 2)	/* wait by sleeping (overrides
						 * ODL_TB5_OPEN_BUSY_POLL) */
/*
 * API 1.4, sends only (-EINVAL elsewhere): an urgent message, at most
 * ODL_TB5_URGENT_MAX bytes (-EMSGSIZE), goes out ahead of this endpoint's
 * queued messages that have not started to leave (kernel: of all of the
 * device's), behind the urgent ones queued before it; for control messages
 * that must not wait behind bulk data. It changes when a message leaves,
 * never where it is delivered (keyed: its receive; else the oldest receive,
 * in arrival order). A queued message is overtaken by at most 64 urgent
 * ones, then they queue behind it. Where info.features lacks
 * ODL_TB5_FEAT_URGENT (a driver before ABI 1.5) the message queues like
 * any other.
 */
#define ODL_TB5_F_URGENT	(1u << 3)
#define ODL_TB5_URGENT_MAX	2048

/*
 * Queue a message of len bytes from buffer id at offset (len may be 0).
 * Returns 0 when queued (its completion reports when the buffer may be
 * reused), -EINVAL/-ENOENT/-EMSGSIZE on bad arguments, -EAGAIN when the send
 * queue is full and ODL_TB5_F_NONBLOCK is set, -ETIMEDOUT when it stayed
 * full for opts.timeout_ms, -ECONNRESET when the peer is gone.
 */
int odl_tb5_send(odl_tb5_t *h, uint32_t id, uint64_t offset, uint64_t len,
		 uint64_t cookie, uint32_t flags);

/* Post a receive of up to cap bytes into buffer id at offset (cap may be 0). */
int odl_tb5_post_recv(odl_tb5_t *h, uint32_t id, uint64_t offset,
		      uint64_t cap, uint64_t cookie, uint32_t flags);

/*
 * API 1.3, keyed messages (info.features has ODL_TB5_FEAT_KEYED): a send
 * with a non-zero key goes to the receive the peer posted with the same
 * key, whatever it posted or was sent before; key 0 is odl_tb5_send /
 * odl_tb5_post_recv, delivered in order to the oldest unkeyed receive. A
 * keyed message that arrives before its receive is posted waits for it
 * (held back by the driver or the library, up to 64 messages / 16 MiB per
 * device (kernel) or handle (shm); then the stream waits too, until the
 * oldest one held has waited 10 s and gives way, reported by odl_tb5_poll
 * as a lost message, -EBADMSG: driver rx_stall_ms, shm since API 1.6
 * ODL_TB5_SHM_STALL_MS). Keys of the receives posted on one
 * handle are unique: -EEXIST (kernel: reported by the driver, in batch mode
 * as the receive's completion status). -EOPNOTSUPP where keys do not work.
 */
int odl_tb5_send_key(odl_tb5_t *h, uint32_t id, uint64_t offset, uint64_t len,
		     uint32_t key, uint64_t cookie, uint32_t flags);
/*
 * API 1.5: odl_tb5_send_key to port dst_port of the peer instead of the
 * handle's own port number (0: the handle's port). Several processes on
 * one machine, each with a port of its own, can so talk to any process of
 * the other machine; the receiver cannot tell the sender's port from the
 * completion, so protocols that answer put it in their messages.
 * -EINVAL for a port above ODL_TB5_MAX_PORT; -EOPNOTSUPP for another port
 * where info.features lacks ODL_TB5_FEAT_PORTS (shm: a segment joins the
 * two handles of one port number).
 */
int odl_tb5_send_to(odl_tb5_t *h, uint32_t dst_port, uint32_t id,
		    uint64_t offset, uint64_t len, uint32_t key, uint64_t cookie,
		    uint32_t flags);
int odl_tb5_post_recv_key(odl_tb5_t *h, uint32_t id, uint64_t offset,
			  uint64_t cap, uint32_t key, uint64_t cookie,
			  uint32_t flags);
/*
 * Withdraw the receive posted with key (non-zero): it completes (poll)
 * with -ECANCELED. -ENOENT when none is posted with that key (it completed,
 * or a message is being written into it right now). API 1.6: the message
 * sent with that key, when it arrives, is skipped (not held aside for a
 * receive, not reported), unless the key is posted again first; the last
 * 64 withdrawn keys are remembered (kernel backend: driver ABI 1.7).
 */
int odl_tb5_cancel_recv(odl_tb5_t *h, uint32_t key);

enum odl_tb5_op {
	ODL_TB5_OP_SEND = 1,
	ODL_TB5_OP_RECV = 2,
};

struct odl_tb5_completion {
	uint64_t cookie;	/* as given to send / post_recv */
	uint64_t length;	/* bytes sent / received; with -EMSGSIZE the
				 * message's real length */
	uint64_t offset;	/* the operation's buffer offset */
	uint32_t buf_id;	/* the operation's buffer */
	uint32_t op;		/* enum odl_tb5_op */
	int32_t status;		/* 0, or -errno (-EMSGSIZE, -ECONNRESET, ...) */
	uint32_t flags;		/* reserved, 0 */
};

/*
 * Reap up to max completions into comps. Returns the number reaped (>= 1),
 * or: -EAGAIN when none is ready and timeout_ms == 0 or ODL_TB5_F_NONBLOCK;
 * -ETIMEDOUT when none arrived within timeout_ms (-1 = no bound);
 * -ECONNRESET when none is left and the peer is gone (after a disconnect,
 * every still-queued operation completes once with status -ECONNRESET,
 * then poll returns -ECONNRESET);
 * -EBADMSG (API 1.1) when a message sent to this port was lost in transit
 * (frames dropped or corrupted, or dropped by the peer's driver after its
 * receiver stalled) and never reached a receive: no posted receive is
 * consumed, so without this the next message would silently take the lost
 * one's place. Reported once per loss, in order: the completions queued
 * before the loss are returned first, the call after the -EBADMSG goes on
 * with later ones; counted in stats.rx_lost. The handle stays usable; the
 * application decides whether its stream can go on. (kernel: when the
 * driver cannot tell which port the lost message was for, every port of
 * the device reports it; with driver ABI 1.8 also when the driver had to
 * drop events for want of room in the handle's queue, since a lost message
 * may be among them; the link state is then read again.)
 */
int odl_tb5_poll(odl_tb5_t *h, struct odl_tb5_completion *comps,
		 unsigned int max, int timeout_ms, uint32_t flags);

/*
 * API 1.2: like odl_tb5_poll, but a wait lasts until at least min
 * completions are ready (1 <= min <= max; fewer only when fewer operations
 * are outstanding, on a lost message or a disconnect, or when timeout_ms
 * expires with at least one ready: then those are returned). Fewer wake-ups
 * per message for a stream that keeps many operations queued; a latency-
 * bound loop wants min 1 (odl_tb5_poll).
 */
int odl_tb5_poll_min(odl_tb5_t *h, struct odl_tb5_completion *comps,
		     unsigned int max, unsigned int min, int timeout_ms,
		     uint32_t flags);

/* Queued sends and posted receives not yet reaped by poll. */
int odl_tb5_pending(odl_tb5_t *h, unsigned int *sends, unsigned int *recvs);

/* ------------------------------------------------------------------ */
/* statistics */

struct odl_tb5_stats {
	uint64_t tx_msgs, tx_bytes;	/* sends completed OK */
	uint64_t rx_msgs, rx_bytes;	/* receives completed OK */
	uint64_t tx_errors;		/* sends completed with an error */
	uint64_t rx_errors;		/* receives completed with an error */
	uint64_t rx_msgsize;		/* of which: message > posted capacity */
	uint64_t eagain;		/* calls that returned -EAGAIN */
	uint64_t timeouts;		/* calls that returned -ETIMEDOUT */
	uint64_t waits;			/* sleeps / busy-poll loops entered */
	uint64_t wakeups;		/* peer notifications sent */
	uint64_t rx_lost;		/* 1.1: losses reported by poll (-EBADMSG) */
	uint64_t copied_bytes;		/* 1.3: bytes the library copied between
					 * caller memory and the driver's area
					 * (kernel backend; shm: 0) */
	uint64_t reserved[3];
};

/* Per-handle counters since open or the last reset. */
int odl_tb5_stats(odl_tb5_t *h, struct odl_tb5_stats *st);
int odl_tb5_stats_reset(odl_tb5_t *h);

/* ------------------------------------------------------------------ */
/* errors */

/* Message for err (either sign); never NULL, thread-safe, static storage. */
const char *odl_tb5_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif /* ODL_TB5_H */
