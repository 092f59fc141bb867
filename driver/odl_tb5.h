/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * odl_tb5: internal definitions shared by the service/data-path code
 * (odl_main.c) and the character device (odl_cdev.c).
 */
#ifndef ODL_TB5_H
#define ODL_TB5_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/thunderbolt.h>
#include <linux/uuid.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "uapi/odl_tb5_uapi.h"

#define ODL_MAX_DEVS		32
#define ODL_PROTO_VERSION	1
#define ODL_MAX_MSG		(16u << 20)
#define ODL_CQ_SIZE		1024
#define ODL_PENDING_MAX		64
/* keys of withdrawn keyed RECVs a file remembers (their messages are
 * discarded on arrival), the oldest forgotten first
 */
#define ODL_CANCELLED_MAX	64
#define ODL_PENDING_BYTES	(16u << 20)

/* PDFs of data frames: every frame starts with SOF; the EOF PDF tells
 * whether the frame is the last one of its message.
 */
#define ODL_PDF_SOF		3
#define ODL_PDF_EOF_MID		4
#define ODL_PDF_EOF_LAST	5

#define ODL_FRAME_MAGIC		0x354c444fu	/* "ODL5" */

/* Software credit frame (feature ODL_TB5_FEAT_SW_CREDITS, only on a
 * connection without hardware E2E): SOF, EOF ODL_PDF_CREDIT, a header
 * with ODL_CREDIT_MAGIC whose seq field is the receiver's next expected
 * data frame sequence number (every data frame before it has been
 * processed and its buffer given back to the RX ring). Not sequenced
 * itself; never held behind data frames.
 */
#define ODL_PDF_CREDIT		6
#define ODL_CREDIT_MAGIC	0x434c444fu	/* "ODLC" */

/* Header at the start of every data frame, little-endian on the wire. */
struct odl_frame_hdr {
	__le32 magic;
	__le32 seq;		/* frame sequence number, per login */
	__le32 msg_id;		/* message number, per login */
	__le32 msg_len;		/* bytes in the whole message */
	__le32 offset;		/* offset of this frame's payload */
	__le16 dst_port;
	__le16 src_port;
	__le32 payload_len;	/* bytes after this header */
	__le32 key;		/* 0, or the receiver's RECV key (FEAT_KEYED) */
};

#define ODL_HDR_SIZE		sizeof(struct odl_frame_hdr)
/* messages remembered as already reported (see odl_dev.rx.failed) */
#define ODL_RX_FAILED		4
/* a sequence number this far (or more) past the expected one, or behind
 * it, is no frame loss but a broken or hostile header
 */
#define ODL_SEQ_WINDOW		(1u << 20)
#define ODL_PAYLOAD_MAX		(ODL_TB5_FRAME_SIZE - ODL_HDR_SIZE)

struct odl_dev;
struct odl_file;

/* One 4 KiB DMA buffer with its ring frame. */
struct odl_frame {
	struct ring_frame frame;
	struct odl_dev *dev;
	void *buf;
	dma_addr_t dma;
	struct list_head list;		/* TX free list */
	struct odl_send *send;		/* TX: message this frame carries */
};

/* A source or target region resolved from a buffer id or DMA-buf handle. */
struct odl_region {
	u8 *base;			/* kernel address of byte 0 */
	u64 len;
	struct odl_dmabuf *dmabuf;	/* NULL for file buffers */
};

struct odl_send {
	struct list_head list;		/* dev->txq until fully queued */
	struct odl_file *file;		/* NULL once the file is gone */
	struct odl_dmabuf *dmabuf;
	const u8 *src;
	u32 len;
	u32 pos;			/* bytes put into frames */
	u32 msg_id;
	u16 dst_port;
	u16 src_port;
	u32 key;			/* 0: in order; else the peer RECV's */
	u32 inflight;			/* frames on the ring */
	bool urgent;			/* ODL_TB5_F_URGENT */
	u8 overtaken;			/* urgent messages queued ahead */
	int status;
	u64 cookie;
};

struct odl_recv {
	struct list_head list;		/* file->recvs, keyed: file->krecvs */
	struct odl_file *file;
	struct odl_dmabuf *dmabuf;
	u8 *dst;
	u64 capacity;
	u64 cookie;
	u32 key;
};

/* A complete message (or an error) waiting for a RECV to be posted. */
struct odl_pending {
	struct list_head list;	/* on its file's pending, arrival order */
	struct list_head all;	/* on the device's pending, arrival order */
	struct odl_file *file;
	void *data;
	u32 len;
	u16 src_port;
	u32 key;
	int status;
	unsigned long since;	/* jiffies when it began to wait */
};

/* A handle: an imported DMA-buf, or (1.4, buf NULL) pinned user memory. */
struct odl_dmabuf {
	struct dma_buf *buf;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
	struct page **pages;		/* MEM_REG: the pinned pages */
	unsigned long npages;
	struct mm_struct *mm;		/* MEM_REG: charged for locked_vm */
	void *vaddr;
	u64 len;
	u32 flags;
	u32 users;			/* sends/recvs using it (dev->lock) */
};

enum odl_rx_target {
	ODL_RX_NONE,
	ODL_RX_RECV,
	ODL_RX_STAGE,
	ODL_RX_DISCARD,
};

struct odl_stats {
	u64 tx_msgs, tx_bytes, tx_frames;
	u64 rx_msgs, rx_bytes, rx_frames;
	u64 seq_errors, len_errors, desc_errors;
	u64 drops, credit_stalls, link_resets, logins;
	u64 rx_stalls;
	u64 irq_recoveries;	/* completions found by the poll, no IRQ */
	u64 tx_wedges;		/* TX ring stopped consuming descriptors */
	u64 e2e_fallbacks;	/* hardware E2E given up for SW credits */
	u64 sw_credit_stalls;	/* TX waited for a software credit */
	u64 credit_frames;	/* software credit frames sent */
	u64 link_changes;	/* link speed/width changed while bound */
	u64 urgent_ahead;	/* urgent SENDs queued ahead of others */
	u64 no_port;		/* messages for a port nobody had bound */
	u64 rx_cancelled;	/* keyed messages whose RECV was withdrawn */
	u64 events_lost;	/* events with no completion slot left */
};

/* odl_dev.flow: how the data path is flow controlled right now */
enum odl_flow {
	ODL_FLOW_NONE = ODL_TB5_FLOW_NONE,
	ODL_FLOW_E2E = ODL_TB5_FLOW_E2E,
	ODL_FLOW_SW = ODL_TB5_FLOW_SW_CREDITS,
};

/* completion poll state of one ring (watchdog only) */
struct odl_ring_watch {
	int tail;
	bool done_seen;
	unsigned long since;	/* TX: jiffies the tail stopped moving */
	bool wedged;		/* TX: reported, until the tail moves */
};

struct odl_dev {
	struct kref kref;
	struct tb_service *svc;
	struct tb_xdomain *xd;
	unsigned int index;
	struct device *cdev_dev;
	struct list_head handler_node;	/* odl_handler_devs, odl_handler_lock */

	/* connection state, serialised by conn_lock */
	struct mutex conn_lock;
	struct delayed_work login_work;
	struct work_struct peer_work;	/* handles LOGIN/LOGOUT from the peer */
	unsigned int login_retries;
	unsigned int login_gen;		/* odl_login_stale() calls */
	bool login_sent;
	bool login_received;
	/* logged in both ways, but the connection could not be set up
	 * (paths, input HopID): connect_work tries again after a backoff
	 * while both logins stand
	 */
	bool connect_retry;
	struct delayed_work connect_work;
	bool removing;
	u32 local_session;
	u32 remote_session;
	int local_transmit_path;
	int remote_transmit_path;
	bool in_hopid_held;
	u32 peer_ring_size;
	u32 features;
	u32 proto_version;
	atomic_t command_id;

	/* receive-side readiness (feature ODL_TB5_FEAT_RX_READY): this
	 * side sends READY once its RX ring and paths are up (ready_work,
	 * conn_lock); the peer's READY opens TX
	 */
	struct delayed_work ready_work;
	unsigned int ready_retries;
	bool ready_sent;

	/* what the protocol handler saw, consumed by peer_work (lock) */
	bool peer_login_pending;
	bool peer_logout_pending;
	u32 peer_login_session;
	u32 peer_login_hopid;
	u32 peer_login_ring;
	u32 peer_login_features;
	bool peer_ready_seen;		/* a READY arrived: */
	u32 peer_ready_session;		/* its sender's session */
	u32 peer_ready_target;		/* the session it was meant for */

	struct tb_ring *tx_ring;
	struct tb_ring *rx_ring;
	struct odl_frame *tx_frames;
	struct odl_frame *rx_frames;
	u32 ring_size;
	bool e2e;		/* RX ring allocated with RING_FLAG_E2E */
	bool e2e_fallen_back;	/* a TX wedge made this device give E2E up */
	bool resuming;		/* fallback re-login: keep queued sends */
	struct work_struct fallback_work;

	/* completion poll and TX watchdog (timer work, while connected) */
	struct delayed_work watchdog;
	struct odl_ring_watch tx_watch, rx_watch;
	unsigned int link_speed;
	unsigned int link_lanes;

	/* data path and files, protected by lock */
	spinlock_t lock;
	bool connected;		/* RX ring taking frames (paths may be down) */
	bool paths_up;		/* rings started, RX posted, paths enabled */
	bool tx_ready;		/* and the peer's receive side is up: TX */
	bool gone;
	u32 generation;
	struct list_head tx_free;
	struct list_head txq;
	u32 tx_inflight;
	u32 tx_window;
	u32 tx_seq;
	u32 tx_msg_id;
	enum odl_flow flow;		/* of this side's RX ring */
	bool tx_sw;			/* TX obeys the peer's SW credits */
	bool rx_sw;			/* RX grants SW credits to the peer */
	u32 peer_features;		/* the peer's last LOGIN (conn_lock) */
	struct list_head tx_requeue;	/* sends to resend after fallback */
	u32 peer_ack;			/* SW credits: peer processed < this */
	u32 sw_window;			/* SW credits: data frames past peer_ack */
	u32 rx_ack;			/* SW credits: next seq we expect */
	u32 rx_ack_sent;		/* last credit sent to the peer */
	u32 rx_unposted;		/* processed, not back on the ring yet */
	unsigned long rx_ack_time;	/* jiffies of the last credit frame */
	bool credit_pending;		/* a credit frame is due */
	struct odl_file *ports[ODL_TB5_MAX_PORT + 1];
	u64 binds;		/* BINDs so far: odl_file.bind_seq */
	struct list_head files;
	/* every held back message (struct odl_pending), oldest first */
	struct list_head pending;
	u32 pending_count;
	u64 pending_bytes;
	struct odl_stats stats;

	/* RX frames held back (not given back to the ring, so E2E flow
	 * control stops the sender) while a message waits for a RECV;
	 * rx_replay hands them over again (lock)
	 */
	struct list_head rx_held;
	bool rx_stalled;
	unsigned long rx_stall_since;
	struct delayed_work rx_replay;

	/* RX reassembly: only the RX ring callback, the replay work and
	 * teardown touch it (never at the same time: see odl_rx_callback)
	 */
	struct {
		bool seq_valid;
		u32 expect_seq;
		/* after a gap: the number that says the frame before had a
		 * wrong one (expect_seq before the gap + 1)
		 */
		bool seq_alt_valid;
		u32 seq_alt;
		/* SW credits: the number of the last frame taken after a gap,
		 * credited as one frame until the next frame confirms it
		 */
		bool jump_valid;
		u32 jump_seq;
		/* the held frame (first on rx_held) came after a gap */
		bool held_unnumbered;
		bool active;
		enum odl_rx_target target;
		/* its RECV's file closed while it came (now discarded) */
		bool orphaned;
		u32 msg_id;
		u32 len;
		u32 pos;
		u16 dst_port;
		u16 src_port;
		u32 key;
		struct odl_recv *recv;
		u8 *stage;
		u64 stage_bind;	/* bind_seq of the file it is staged for */
		/* messages already accounted for (an error delivered, or
		 * dropped knowingly): their further frames are discarded
		 * without a second report. Cleared by a message that
		 * completes whole.
		 */
		struct odl_rx_failed {
			u32 msg_id;
			u32 key;
			u16 dst_port;
		} failed[ODL_RX_FAILED];
		u8 nfailed;
		u8 failed_next;
		/* a frame nobody could attribute was reported lost to every
		 * file: the frames after it that continue an unknown message
		 * are that message
		 */
		bool lost_unattributed;
	} rx;
};

struct odl_file {
	struct odl_dev *dev;
	struct list_head list;		/* dev->files */
	struct mutex mutex;		/* setup, bind, import, POLL_CQ */
	wait_queue_head_t wq;

	void *area;
	u64 area_len;
	u32 tx_count;
	u32 rx_count;
	u64 buf_off[ODL_TB5_MAX_BUFS];
	u64 buf_len[ODL_TB5_MAX_BUFS];

	struct odl_dmabuf *dmabufs[ODL_TB5_MAX_DMABUFS];

	/* below: dev->lock */
	u32 port;
	u64 bind_seq;		/* its BIND's number on the device: a file
				 * at a freed one's address is not that one
				 */
	struct list_head recvs;
	struct list_head krecvs;	/* keyed RECVs (1.4) */
	struct list_head pending;
	u32 cancelled[ODL_CANCELLED_MAX];	/* withdrawn keys, 0: free */
	u32 cancelled_next;
	u32 sends_out;
	u32 recvs_out;
	struct odl_tb5_completion *cq;
	u32 cq_head;
	u32 cq_count;
	u32 cq_pushed;		/* completions ever queued (wraps) */
	/* events dropped for want of a slot since POLL_CQ last reported
	 * them (1.8: one EVENTS_LOST entry), and the cq_pushed of the
	 * first: the report goes after the completions queued before it
	 */
	u32 events_lost;
	u32 lost_at;
	/* POLL_CQ waiters for a batch (1.3 min_entries > 1) sleep on bwq: a
	 * completion wakes them once cq_batch_want are queued, an event
	 * (cq_urgent, until the queue drains) or a lost one (events_lost)
	 * at once. poll() and the other POLL_CQ waiters sleep on wq, woken
	 * by every completion and lost event.
	 */
	wait_queue_head_t bwq;
	u32 cq_batch_waiters;
	u32 cq_batch_want;
	bool cq_urgent;
};

/* odl_main.c */
#define ODL_BUSY_POLL_MAX_US 10000	/* busy_poll's bound */
extern unsigned int odl_busy_poll;
extern bool odl_test_send_unagreed;
u32 odl_e2e_setting(void);
u32 odl_local_features(const struct odl_dev *dev);
u32 odl_features_withheld(void);
void odl_dev_put(struct odl_dev *dev);
int odl_queue_send(struct odl_dev *dev, struct odl_send *s);
int odl_post_recv(struct odl_dev *dev, struct odl_file *f,
		  struct odl_recv *r);
int odl_cancel_recv(struct odl_dev *dev, struct odl_file *f, u32 key);
void odl_file_detach(struct odl_dev *dev, struct odl_file *f);
void odl_cq_push(struct odl_file *f, u64 cookie, u32 type, int status,
		 u64 len, u32 src_port, u32 flags);

/* Every SEND and RECV in flight owns a completion slot: while the queued
 * completions and those to come fill the queue, nothing more is taken
 * (dev->lock held).
 */
static inline bool odl_cq_full(const struct odl_file *f)
{
	return f->cq_count + f->sends_out + f->recvs_out >= ODL_CQ_SIZE;
}

/* odl_cdev.c */
int odl_cdev_init(void);
void odl_cdev_exit(void);
int odl_cdev_add(struct odl_dev *dev);
void odl_cdev_remove(struct odl_dev *dev);
void odl_dmabuf_put_user(struct odl_dev *dev, struct odl_dmabuf *d);

#endif /* ODL_TB5_H */
