/* SPDX-License-Identifier: (GPL-2.0-only WITH Linux-syscall-note) OR MIT */
/*
 * odl_tb5 - userspace ABI of the OdinLink Thunderbolt/USB4 DMA channel.
 *
 * One character device /dev/odl_tb5_N exists per connected peer host.
 * N is stable for a peer UUID while the module stays loaded.
 *
 * Call sequence
 * -------------
 *   fd = open("/dev/odl_tb5_0", O_RDWR);
 *   ODL_TB5_IOC_GET_INFO      ABI version, peer/local UUID, link, limits
 *   ODL_TB5_IOC_BUF_SETUP     once per open file: the driver allocates
 *                             tx_count TX and rx_count RX buffers of
 *                             tx_buf_size / rx_buf_size bytes (default:
 *                             two per direction, a double buffer) and
 *                             returns each buffer's mmap offset
 *   mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset[i])
 *   ODL_TB5_IOC_BIND          claim a local port (1..ODL_TB5_MAX_PORT);
 *                             messages sent to that port land in this file
 *   ODL_TB5_IOC_RECV          post receive buffers (buffer, offset, capacity)
 *   ODL_TB5_IOC_SEND          send a region of a TX buffer (or of an
 *                             imported DMA-buf or registered memory) to a
 *                             port on the peer
 *   ODL_TB5_IOC_MEM_REG       (1.4) pin the caller's own memory as a send
 *                             source / receive target: a handle like a
 *                             DMA-buf's, no copy through the mmap'd area
 *   ODL_TB5_IOC_CANCEL        (1.4) withdraw a posted keyed RECV
 *   poll()/ODL_TB5_IOC_POLL_CQ  wait for and fetch completions
 *   ODL_TB5_IOC_GET_STATS     counters of the device
 *   close(fd)                 outstanding work is cancelled, buffers freed
 *
 * mmap layout
 * -----------
 * The buffers of one open file form a single area of page-aligned buffers:
 * buffer ids 0 .. tx_count-1 are TX buffers, tx_count ..
 * tx_count+rx_count-1 are RX buffers, laid out in id order. BUF_SETUP
 * returns the mmap offset of every buffer in offset[]; offset[0] is 0.
 * Any page-aligned range inside the area may be mapped; one mmap of
 * mmap_len bytes at offset 0 maps all of them. The area belongs to the
 * open file: another open of the device (in the same or another process)
 * gets its own area and cannot map this one.
 *
 * Versioning
 * ----------
 * ODL_TB5_ABI_MAJOR changes only on an incompatible change (never so far).
 * ODL_TB5_ABI_MINOR grows when fields are appended to a struct or ioctls
 * are added. Every struct starts with __u32 size = the caller's sizeof.
 * The driver accepts a size between the struct's ABI 1.0 size
 * (ODL_TB5_*_SIZE_VER0) and its own; a larger size is accepted only if
 * all bytes beyond the driver's struct are zero (else -E2BIG). Missing
 * input fields read as zero; output is written up to the caller's size.
 * The ioctl command is matched on type and number only, so a struct that
 * grew keeps its command. All reserved fields and unknown flag bits must be
 * zero (else -EINVAL). Full rules: docs/uapi.md.
 */
#ifndef _UAPI_ODL_TB5_UAPI_H
#define _UAPI_ODL_TB5_UAPI_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define ODL_TB5_ABI_MAJOR	1
#define ODL_TB5_ABI_MINOR	9

#define ODL_TB5_DEV_PREFIX	"odl_tb5_"	/* /dev/odl_tb5_N */
#define ODL_TB5_FRAME_SIZE	4096		/* bytes per ring frame */
#define ODL_TB5_MAX_PORT	255		/* ports 1..255; 0 is invalid */
#define ODL_TB5_MAX_BUFS_PER_DIR	8
#define ODL_TB5_MAX_BUFS	(2 * ODL_TB5_MAX_BUFS_PER_DIR)
#define ODL_TB5_MAX_BUF_SIZE	(64u << 20)	/* per buffer */
#define ODL_TB5_MAX_AREA_SIZE	(256u << 20)	/* all buffers of a file */
#define ODL_TB5_DEFAULT_BUF_SIZE	(4u << 20)
#define ODL_TB5_MAX_OUTSTANDING	256	/* sends, and receives, per file */
/* handles per file: DMA-buf imports and (1.4) MEM_REG; 16 before 1.4 */
#define ODL_TB5_MAX_DMABUFS	64

/* odl_tb5_info.state; 1.3: CONNECTED also means the peer confirmed that
 * its receive side is up (ODL_TB5_FEAT_RX_READY), so data can flow
 */
#define ODL_TB5_STATE_DISCONNECTED	0	/* peer known, not logged in */
#define ODL_TB5_STATE_CONNECTED		1	/* logged in, paths up */

/* odl_tb5_info.features: negotiated with the peer, reported only while
 * state is CONNECTED (0 otherwise; drivers before 2026-12-02 gave this
 * side's own offer until a login)
 */
#define ODL_TB5_FEAT_E2E	(1ull << 0)	/* end-to-end flow control */
#define ODL_TB5_FEAT_SW_CREDITS	(1ull << 1)	/* 1.2: in-band software credits */
#define ODL_TB5_FEAT_RX_READY	(1ull << 2)	/* 1.3: peer confirms its RX */
#define ODL_TB5_FEAT_KEYED	(1ull << 3)	/* 1.4: keyed messages */
#define ODL_TB5_FEAT_EMPTY	(1ull << 4)	/* 1.9: 0-byte messages */

/* odl_tb5_info.flow_control (1.2): what keeps the sender from overrunning
 * the receiver's RX ring on the current connection
 */
#define ODL_TB5_FLOW_NONE	0	/* nothing (peer without SW credits) */
#define ODL_TB5_FLOW_E2E	1	/* hardware end-to-end flow control */
#define ODL_TB5_FLOW_SW_CREDITS	2	/* credits granted in-band by the peer */

/* odl_tb5_info.e2e_setting (1.2): the e2e module parameter */
#define ODL_TB5_E2E_AUTO	0
#define ODL_TB5_E2E_ON		1
#define ODL_TB5_E2E_OFF		2

struct odl_tb5_info {
	__u32 size;
	__u16 abi_major;		/* out: ODL_TB5_ABI_MAJOR */
	__u16 abi_minor;		/* out: ODL_TB5_ABI_MINOR */
	__u8 peer_uuid[16];		/* out: peer host's XDomain UUID */
	__u8 local_uuid[16];		/* out: this host's UUID */
	__u32 state;			/* out: ODL_TB5_STATE_* */
	__u32 dev_index;		/* out: N of /dev/odl_tb5_N */
	__u32 link_speed_gbps;		/* out: per lane, 0 if unknown */
	__u32 link_lanes;		/* out: lanes (link width) */
	__u32 tx_ring_size;		/* out: descriptors */
	__u32 rx_ring_size;		/* out: descriptors */
	__u32 frame_size;		/* out: ODL_TB5_FRAME_SIZE */
	__u32 max_msg_size;		/* out: largest SEND length */
	__u32 proto_version;		/* out: negotiated wire protocol */
	__u32 generation;		/* out: +1 on every (re)login */
	__u64 features;			/* out: ODL_TB5_FEAT_* */
	__u32 bound_port;		/* out: this file's port, 0 if none */
	__u32 buf_count;		/* out: buffers set up by this file */
	__u32 flow_control;		/* out, 1.2: ODL_TB5_FLOW_* */
	__u32 e2e_setting;		/* out, 1.2: ODL_TB5_E2E_* */
	__u32 link_changes;		/* out, 1.2: speed/width changes seen */
	__u32 e2e_fallback;		/* out, 1.2: 1 after a TX wedge fallback */
	__u64 reserved[2];		/* out: zero */
};

#define ODL_TB5_BUF_DEFAULT	0	/* count/size 0: use the default */

struct odl_tb5_buf_setup {
	__u32 size;
	__u32 flags;			/* in: 0 */
	__u32 tx_count;			/* in: 0 (=2) .. MAX_BUFS_PER_DIR */
	__u32 rx_count;			/* in: 0 (=2) .. MAX_BUFS_PER_DIR */
	__u64 tx_buf_size;		/* in: 0 (=4 MiB) or page multiple */
	__u64 rx_buf_size;		/* in: 0 (=4 MiB) or page multiple */
	__u64 mmap_len;			/* out: size of the whole area */
	__u64 offset[ODL_TB5_MAX_BUFS];	/* out: mmap offset of buffer id i */
	__u64 buf_len[ODL_TB5_MAX_BUFS];/* out: length of buffer id i */
};

struct odl_tb5_bind {
	__u32 size;
	__u32 port;			/* in: 1..ODL_TB5_MAX_PORT */
	__u32 flags;			/* in: 0 */
	__u32 reserved;			/* in: 0 */
};

/* flags of odl_tb5_send and odl_tb5_recv */
#define ODL_TB5_F_DMABUF	(1u << 0)	/* buf_id is a DMA-buf handle */
/* 1.4: the same bit; buf_id is a handle of DMABUF_IMPORT or MEM_REG */
#define ODL_TB5_F_HANDLE	ODL_TB5_F_DMABUF
/*
 * 1.5, SEND only: an urgent message (a control message of at most
 * ODL_TB5_URGENT_MAX bytes, else -EMSGSIZE) goes out ahead of the queued
 * messages of the device that have not started, after the urgent messages
 * queued before it and after the message whose frames are going out. It
 * changes when a message leaves, never what is delivered: keyed messages
 * go to their RECV, unkeyed ones to the oldest RECV in arrival order. A
 * message that has not started is overtaken by at most
 * ODL_TB5_URGENT_OVERTAKE urgent messages (then they queue behind it).
 * After a link reset, unfinished messages go out again in the order they
 * were sent.
 */
#define ODL_TB5_F_URGENT	(1u << 1)
#define ODL_TB5_URGENT_MAX	2048
#define ODL_TB5_URGENT_OVERTAKE	64

/*
 * Keys (1.4, ODL_TB5_FEAT_KEYED negotiated with the peer): a SEND with a
 * non-zero key is delivered to the RECV posted with the same key on the
 * destination port, whatever was posted or sent before it; key 0 is the
 * plain in-order delivery to the oldest unkeyed RECV. A keyed message whose
 * RECV is not posted yet waits for it like an unkeyed message waits for
 * any RECV. Keys of the RECVs posted on one file are unique (-EEXIST).
 */
struct odl_tb5_send {
	__u32 size;
	__u32 flags;			/* in: ODL_TB5_F_* */
	__u32 buf_id;			/* in: TX buffer id or DMA-buf handle */
	__u32 dst_port;			/* in: port on the peer, 1..MAX_PORT */
	__u64 offset;			/* in: byte offset in the buffer */
	__u64 length;			/* in: 1..max_msg_size */
	__u64 cookie;			/* in: returned in the completion */
	/* 1.4 (the struct grew from 40 to 48 bytes; 40 is still accepted) */
	__u32 key;			/* in: 0, or the peer RECV's key */
	__u32 reserved;			/* in: 0 */
};

struct odl_tb5_recv {
	__u32 size;
	__u32 flags;			/* in: ODL_TB5_F_* */
	__u32 buf_id;			/* in: RX buffer id or DMA-buf handle */
	union {
		__u32 reserved;		/* in: 0 (ABI 1.0 .. 1.3) */
		__u32 key;		/* in, 1.4: 0 or a key (see above) */
	};
	__u64 offset;			/* in: byte offset in the buffer */
	__u64 capacity;			/* in: 1..; bytes available */
	__u64 cookie;			/* in: returned in the completion */
};

/*
 * ODL_TB5_IOC_CANCEL (1.4): the keyed RECV posted on this file with key
 * completes with -ECANCELED (its completion carries its cookie) and its
 * buffer is free again. -ENOENT: no RECV with that key is posted (it
 * completed, or a message is being written into it right now). 1.7: the
 * file remembers the key (its last 64 withdrawn): the message sent with it
 * is discarded when it arrives (counted in rx_cancelled), unless a RECV
 * with that key is posted again first.
 */
struct odl_tb5_cancel {
	__u32 size;
	__u32 flags;			/* in: 0 */
	__u32 key;			/* in: non-zero */
	__u32 reserved;			/* in: 0 */
};

/* odl_tb5_completion.type */
#define ODL_TB5_COMP_SEND	1	/* a SEND finished (status 0: on the wire) */
#define ODL_TB5_COMP_RECV	2	/* a posted RECV got a message or error */
#define ODL_TB5_COMP_EVENT	3	/* no cookie: link event or lost message */

/* odl_tb5_completion.flags */
#define ODL_TB5_CF_LINK_UP	(1u << 0)	/* EVENT: peer logged in */
#define ODL_TB5_CF_LINK_DOWN	(1u << 1)	/* EVENT: peer gone/relogged */
#define ODL_TB5_CF_MSG_LOST	(1u << 2)	/* EVENT: message lost, port unknown */
/* EVENT (1.8): this many events (length) found no completion slot and
 * were dropped (status -EOVERFLOW); it sits where the first was dropped,
 * after the completions queued before. Link state may have changed
 * meanwhile: GET_INFO.
 */
#define ODL_TB5_CF_EVENTS_LOST	(1u << 3)

/*
 * Completion entry. Errors (status < 0): -ECONNRESET link went down before
 * the work finished; -EBADMSG message corrupt (bad header, length or
 * offset); -EPROTO frame sequence gap (lost frames); -EIO descriptor error
 * (CRC/overrun); -EMSGSIZE message larger than the posted capacity;
 * -ECANCELED file closing. A RECV with status < 0 never carries data.
 */
struct odl_tb5_completion {
	__u64 cookie;
	__u32 type;			/* ODL_TB5_COMP_* */
	__s32 status;			/* 0 or -errno */
	__u64 length;			/* bytes sent / received */
	__u32 src_port;			/* RECV: sender's port */
	__u32 flags;			/* ODL_TB5_CF_* */
};

struct odl_tb5_poll_cq {
	__u32 size;
	__u32 max_entries;		/* in: 1..1024 entries at entries_ptr */
	__u64 entries_ptr;		/* in: user pointer to an array */
	__u32 entry_size;		/* in: sizeof(struct odl_tb5_completion) */
	__s32 timeout_ms;		/* in: 0 no wait, -1 forever, else ms */
	__u32 count;			/* out: entries written */
	union {
		__u32 reserved;		/* in: 0 (ABI 1.0, 1.1) */
		__u32 flags;		/* in, 1.2: ODL_TB5_POLL_F_* */
	};
	/* 1.3: a wait ends once min_entries completions are queued (or an
	 * event, or the timeout); 0 or 1 = the first one; <= max_entries
	 */
	__u32 min_entries;
	__u32 reserved2;		/* in: 0 */
};

/* odl_tb5_poll_cq.flags (1.2) */
#define ODL_TB5_POLL_F_ETIMEDOUT (1u << 0)	/* fail with ETIMEDOUT, not count 0 */

/*
 * ODL_TB5_IOC_SUBMIT (1.3): several SENDs and RECVs in one call. Each
 * entry is checked like the single ioctl (same errnos); entries are taken
 * in order and the first one refused stops the batch. If the first entry
 * is refused the ioctl fails with its errno and nothing changed; else it
 * succeeds, done = entries taken, error = the positive errno of entry
 * [done] (0 when all were taken).
 */
#define ODL_TB5_SQE_SEND	1	/* odl_tb5_sqe.op */
#define ODL_TB5_SQE_RECV	2
#define ODL_TB5_MAX_SUBMIT	64	/* entries per SUBMIT */

struct odl_tb5_sqe {
	__u32 op;			/* in: ODL_TB5_SQE_* */
	__u32 flags;			/* in: ODL_TB5_F_* */
	__u32 buf_id;			/* in: buffer id or DMA-buf handle */
	__u32 dst_port;			/* in: SEND 1..MAX_PORT; RECV 0 */
	__u64 offset;			/* in: byte offset in the buffer */
	__u64 length;			/* in: SEND length / RECV capacity */
	__u64 cookie;			/* in: returned in the completion */
	__u32 key;			/* in, 1.4: 0 or a key (was reserved) */
	__u32 reserved;			/* in: 0 */
};

struct odl_tb5_submit {
	__u32 size;
	__u32 flags;			/* in: 0 */
	__u32 count;			/* in: 1..ODL_TB5_MAX_SUBMIT */
	__u32 entry_size;		/* in: sizeof(struct odl_tb5_sqe) */
	__u64 entries_ptr;		/* in: user pointer to count entries */
	__u32 done;			/* out: entries taken */
	__u32 error;			/* out: errno of entry [done], or 0 */
	__u64 reserved;			/* in: 0 */
};

/* odl_tb5_stats.flags */
#define ODL_TB5_STATS_RESET	(1u << 0)	/* in: zero after reading */

struct odl_tb5_stats {
	__u32 size;
	__u32 flags;			/* in: ODL_TB5_STATS_* */
	__u64 tx_msgs;
	__u64 tx_bytes;
	__u64 tx_frames;
	__u64 rx_msgs;
	__u64 rx_bytes;
	__u64 rx_frames;
	__u64 seq_errors;		/* frame sequence gaps */
	__u64 len_errors;		/* bad length/offset/header */
	__u64 desc_errors;		/* RX descriptor CRC/overrun flags */
	__u64 drops;			/* messages lost for want of room */
	__u64 credit_stalls;		/* TX found the ring full */
	__u64 link_resets;		/* logins after the first, logouts */
	__u64 logins;
	__u64 rx_stalls;		/* 1.1: times RX held the ring for a RECV */
	__u64 irq_recoveries;		/* 1.2: completions found by the poll */
	__u64 tx_wedges;		/* 1.2: TX ring stopped consuming */
	__u64 e2e_fallbacks;		/* 1.2: E2E given up for SW credits */
	__u64 sw_credit_stalls;		/* 1.2: TX waited for a SW credit */
	__u64 urgent_ahead;		/* 1.5: urgent SENDs queued ahead */
	__u64 no_port;			/* 1.6: messages for a port nobody
					 * had bound (before 1.6: in drops)
					 */
	__u64 rx_cancelled;		/* 1.7: keyed messages discarded on
					 * arrival, their RECV withdrawn
					 * with CANCEL
					 */
	__u64 events_lost;		/* 1.8: events (link changes, lost
					 * messages) that found a file's
					 * completion queue full
					 */
};

/* odl_tb5_dmabuf_import.flags */
#define ODL_TB5_DMABUF_TX	(1u << 0)	/* may be a SEND source */
#define ODL_TB5_DMABUF_RX	(1u << 1)	/* may be a RECV target */

struct odl_tb5_dmabuf_import {
	__u32 size;
	__s32 fd;			/* in: DMA-buf file descriptor */
	__u32 flags;			/* in: ODL_TB5_DMABUF_*, at least one */
	__u32 handle;			/* out: for ODL_TB5_F_DMABUF (in: 0) */
	__u64 length;			/* out: size of the DMA-buf (in: 0) */
};

struct odl_tb5_dmabuf_release {
	__u32 size;
	__u32 handle;			/* in: from DMABUF_IMPORT or MEM_REG */
};

/*
 * ODL_TB5_IOC_MEM_REG (1.4): pin [addr, addr + length) of the caller's
 * memory (any alignment, writable, at most ODL_TB5_MAX_MEM_REG bytes,
 * counted against RLIMIT_MEMLOCK unless CAP_IPC_LOCK) and return a handle
 * for SEND/RECV with ODL_TB5_F_HANDLE, offsets relative to addr. The driver
 * copies straight between these pages and its ring frames. Handles share
 * the ODL_TB5_MAX_DMABUFS slots of DMA-buf imports; DMABUF_RELEASE (-EBUSY
 * while a SEND/RECV names it) or close() unpins. Errors: -EINVAL bad
 * flags/fields/range, -EFAULT memory not mapped writable, -ENOMEM over the
 * lock limit, -ENOSPC no free handle.
 */
#define ODL_TB5_MEM_TX		ODL_TB5_DMABUF_TX	/* may be a SEND source */
#define ODL_TB5_MEM_RX		ODL_TB5_DMABUF_RX	/* may be a RECV target */
#define ODL_TB5_MAX_MEM_REG	(1ull << 30)		/* bytes per handle */

struct odl_tb5_mem_reg {
	__u32 size;
	__u32 flags;			/* in: ODL_TB5_MEM_*, at least one */
	__u64 addr;			/* in: user address */
	__u64 length;			/* in: 1..ODL_TB5_MAX_MEM_REG */
	__u32 handle;			/* out: for ODL_TB5_F_HANDLE (in: 0) */
	__u32 reserved;			/* in: 0 */
};

#define ODL_TB5_IOC_MAGIC	0xB5

#define ODL_TB5_IOC_GET_INFO	_IOWR(ODL_TB5_IOC_MAGIC, 0x00, struct odl_tb5_info)
#define ODL_TB5_IOC_BUF_SETUP	_IOWR(ODL_TB5_IOC_MAGIC, 0x01, struct odl_tb5_buf_setup)
#define ODL_TB5_IOC_BIND	_IOWR(ODL_TB5_IOC_MAGIC, 0x02, struct odl_tb5_bind)
#define ODL_TB5_IOC_SEND	_IOWR(ODL_TB5_IOC_MAGIC, 0x03, struct odl_tb5_send)
#define ODL_TB5_IOC_RECV	_IOWR(ODL_TB5_IOC_MAGIC, 0x04, struct odl_tb5_recv)
#define ODL_TB5_IOC_POLL_CQ	_IOWR(ODL_TB5_IOC_MAGIC, 0x05, struct odl_tb5_poll_cq)
#define ODL_TB5_IOC_GET_STATS	_IOWR(ODL_TB5_IOC_MAGIC, 0x06, struct odl_tb5_stats)
#define ODL_TB5_IOC_DMABUF_IMPORT \
	_IOWR(ODL_TB5_IOC_MAGIC, 0x07, struct odl_tb5_dmabuf_import)
#define ODL_TB5_IOC_DMABUF_RELEASE \
	_IOWR(ODL_TB5_IOC_MAGIC, 0x08, struct odl_tb5_dmabuf_release)
#define ODL_TB5_IOC_SUBMIT	_IOWR(ODL_TB5_IOC_MAGIC, 0x09, struct odl_tb5_submit)
#define ODL_TB5_IOC_MEM_REG	_IOWR(ODL_TB5_IOC_MAGIC, 0x0a, struct odl_tb5_mem_reg)
#define ODL_TB5_IOC_CANCEL	_IOWR(ODL_TB5_IOC_MAGIC, 0x0b, struct odl_tb5_cancel)

/* sizes in ABI 1.0: the smallest size the driver accepts */
#define ODL_TB5_INFO_SIZE_VER0		128
#define ODL_TB5_BUF_SETUP_SIZE_VER0	296
#define ODL_TB5_BIND_SIZE_VER0		16
#define ODL_TB5_SEND_SIZE_VER0		40
#define ODL_TB5_RECV_SIZE_VER0		40
#define ODL_TB5_COMPLETION_SIZE_VER0	32
#define ODL_TB5_POLL_CQ_SIZE_VER0	32
#define ODL_TB5_STATS_SIZE_VER0		168
#define ODL_TB5_DMABUF_IMPORT_SIZE_VER0	24
#define ODL_TB5_DMABUF_RELEASE_SIZE_VER0	8
/* added in 1.3: their first size */
#define ODL_TB5_SQE_SIZE_VER0		48
#define ODL_TB5_SUBMIT_SIZE_VER0	40
/* added in 1.4 */
#define ODL_TB5_MEM_REG_SIZE_VER0	32
#define ODL_TB5_CANCEL_SIZE_VER0	16
/* sizes in 1.3 of structs that grew */
#define ODL_TB5_POLL_CQ_SIZE_1_3	40
/* sizes in 1.4 of structs that grew */
#define ODL_TB5_SEND_SIZE_1_4		48
/* sizes in 1.7 of structs that grew */
#define ODL_TB5_STATS_SIZE_1_7		176
/* sizes in 1.8 of structs that grew */
#define ODL_TB5_STATS_SIZE_1_8		184

#ifndef __KERNEL__
#define ODL_TB5_SIZE_CHECK_(t, n) \
	_Static_assert(sizeof(struct t) == (n), #t " size changed")
ODL_TB5_SIZE_CHECK_(odl_tb5_info, ODL_TB5_INFO_SIZE_VER0);
ODL_TB5_SIZE_CHECK_(odl_tb5_buf_setup, ODL_TB5_BUF_SETUP_SIZE_VER0);
ODL_TB5_SIZE_CHECK_(odl_tb5_bind, ODL_TB5_BIND_SIZE_VER0);
ODL_TB5_SIZE_CHECK_(odl_tb5_send, ODL_TB5_SEND_SIZE_1_4);
ODL_TB5_SIZE_CHECK_(odl_tb5_recv, ODL_TB5_RECV_SIZE_VER0);
ODL_TB5_SIZE_CHECK_(odl_tb5_completion, ODL_TB5_COMPLETION_SIZE_VER0);
ODL_TB5_SIZE_CHECK_(odl_tb5_poll_cq, ODL_TB5_POLL_CQ_SIZE_1_3);
ODL_TB5_SIZE_CHECK_(odl_tb5_stats, ODL_TB5_STATS_SIZE_1_8);
ODL_TB5_SIZE_CHECK_(odl_tb5_dmabuf_import, ODL_TB5_DMABUF_IMPORT_SIZE_VER0);
ODL_TB5_SIZE_CHECK_(odl_tb5_dmabuf_release, ODL_TB5_DMABUF_RELEASE_SIZE_VER0);
ODL_TB5_SIZE_CHECK_(odl_tb5_sqe, ODL_TB5_SQE_SIZE_VER0);
ODL_TB5_SIZE_CHECK_(odl_tb5_submit, ODL_TB5_SUBMIT_SIZE_VER0);
ODL_TB5_SIZE_CHECK_(odl_tb5_mem_reg, ODL_TB5_MEM_REG_SIZE_VER0);
ODL_TB5_SIZE_CHECK_(odl_tb5_cancel, ODL_TB5_CANCEL_SIZE_VER0);
#undef ODL_TB5_SIZE_CHECK_
#endif

#endif /* _UAPI_ODL_TB5_UAPI_H */
