// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
/*
 * odl_tb5 character device: /dev/odl_tb5_N, the ioctl ABI of
 * uapi/odl_tb5_uapi.h, mmap of the per-file buffers, poll() and DMA-buf
 * import.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cdev.h>
#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/fs.h>
#include <linux/iosys-map.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "compat.h"
#include "odl_tb5.h"

struct odl_slot {
	uuid_t uuid;
	bool used;		/* uuid is assigned to this index */
	struct odl_dev *dev;	/* live device, or NULL */
};

static DEFINE_MUTEX(odl_slots_lock);
static DEFINE_MUTEX(odl_stats_reset_lock);
static struct odl_slot odl_slots[ODL_MAX_DEVS];
static dev_t odl_devt;
static struct cdev odl_cdev;
static struct class *odl_class;

/* ---------------------------------------------------------------------
 * Sized structs: accept [VER0 size, sizeof], larger only with zero tail
 * and at most ODL_STRUCT_MAX.
 */
#define ODL_STRUCT_MAX	4096
static int odl_copy_in(void *kbuf, size_t ksize, size_t minsize,
		       unsigned long arg, u32 *usize)
{
	void __user *uarg = (void __user *)arg;
	u32 size;
	int ret;

	if (get_user(size, (u32 __user *)uarg))
		return -EFAULT;
	if (size < minsize)
		return -EINVAL;
	/* no struct will ever need a page: spare checking a huge tail */
	if (size > ODL_STRUCT_MAX)
		return -E2BIG;
	ret = copy_struct_from_user(kbuf, ksize, uarg, size);
	if (ret)
		return ret;
	*usize = size;
	return 0;
}

static int odl_copy_out(unsigned long arg, void *kbuf, size_t ksize,
			u32 usize)
{
	/* the caller's size stays as it was */
	*(u32 *)kbuf = usize;
	if (copy_to_user((void __user *)arg, kbuf, min_t(size_t, usize, ksize)))
		return -EFAULT;
	return 0;
}

/* ---------------------------------------------------------------------
 * ioctls
 */
static long odl_ioc_info(struct odl_file *f, unsigned long arg)
{
	struct odl_dev *dev = f->dev;
	struct tb_xdomain *xd = dev->xd;
	struct odl_tb5_info info;
	u32 usize;
	int ret;

	ret = odl_copy_in(&info, sizeof(info), ODL_TB5_INFO_SIZE_VER0, arg,
			  &usize);
	if (ret)
		return ret;
	memset(&info, 0, sizeof(info));
	info.abi_major = ODL_TB5_ABI_MAJOR;
	info.abi_minor = ODL_TB5_ABI_MINOR;
	if (xd->remote_uuid)
		memcpy(info.peer_uuid, xd->remote_uuid, 16);
	if (xd->local_uuid)
		memcpy(info.local_uuid, xd->local_uuid, 16);
	info.dev_index = dev->index;
	info.link_speed_gbps = xd->link_speed;
	info.link_lanes = odl_xd_lanes(xd);
	info.tx_ring_size = dev->ring_size;
	info.rx_ring_size = dev->ring_size;
	info.frame_size = ODL_TB5_FRAME_SIZE;
	info.max_msg_size = ODL_MAX_MSG;
	info.e2e_setting = odl_e2e_setting();
	spin_lock(&dev->lock);
	/* connected = data can flow: both receive sides are up */
	info.state = dev->tx_ready ? ODL_TB5_STATE_CONNECTED :
				     ODL_TB5_STATE_DISCONNECTED;
	info.proto_version = dev->proto_version;
	info.generation = dev->generation;
	/* what both agreed at the last login, in force only while data can
	 * flow: before a login dev->features is this side's offer alone
	 */
	info.features = dev->tx_ready ? READ_ONCE(dev->features) : 0;
	info.bound_port = f->port;
	info.flow_control = dev->flow;
	info.link_changes = dev->stats.link_changes;
	info.e2e_fallback = dev->e2e_fallen_back;
	spin_unlock(&dev->lock);
	info.buf_count = f->area ? f->tx_count + f->rx_count : 0;
	return odl_copy_out(arg, &info, sizeof(info), usize);
}


/* ---------------------------------------------------------------------
 * sysfs (on /sys/class/odl_tb5/odl_tb5_N): the mitigation state for
 * scripts that have no ioctl client
 */
static const char * const odl_flow_names[] = {
	[ODL_FLOW_NONE] = "none",
	[ODL_FLOW_E2E] = "e2e",
	[ODL_FLOW_SW] = "sw-credits",
};

static ssize_t flow_control_show(struct device *d,
				 struct device_attribute *attr, char *buf)
{
	struct odl_dev *dev = dev_get_drvdata(d);
	enum odl_flow flow;

	spin_lock(&dev->lock);
	flow = dev->flow;
	spin_unlock(&dev->lock);
	return sysfs_emit(buf, "%s\n", odl_flow_names[flow]);
}
static DEVICE_ATTR_RO(flow_control);

static ssize_t mitigations_show(struct device *d,
				struct device_attribute *attr, char *buf)
{
	static const char * const e2e_names[] = { "auto", "on", "off" };
	struct odl_dev *dev = dev_get_drvdata(d);
	struct odl_stats st;
	bool fell_back;

	spin_lock(&dev->lock);
	st = dev->stats;
	fell_back = dev->e2e_fallen_back;
	spin_unlock(&dev->lock);
	return sysfs_emit(buf,
			  "e2e=%s e2e_fallback=%d irq_recoveries=%llu tx_wedges=%llu e2e_fallbacks=%llu sw_credit_stalls=%llu credit_frames=%llu link_changes=%llu link=%ux%u\n",
			  e2e_names[odl_e2e_setting()], fell_back,
			  st.irq_recoveries, st.tx_wedges, st.e2e_fallbacks,
			  st.sw_credit_stalls, st.credit_frames,
			  st.link_changes, odl_xd_lanes(dev->xd),
			  READ_ONCE(dev->xd->link_speed));
}
static DEVICE_ATTR_RO(mitigations);

/* frames on the RX ring held back now for a RECV (a gauge, not a count) */
static ssize_t rx_held_show(struct device *d, struct device_attribute *attr,
			    char *buf)
{
	struct odl_dev *dev = dev_get_drvdata(d);
	struct odl_frame *fr;
	unsigned int n = 0;

	spin_lock(&dev->lock);
	list_for_each_entry(fr, &dev->rx_held, list)
		n++;
	spin_unlock(&dev->lock);
	return sysfs_emit(buf, "%u\n", n);
}
static DEVICE_ATTR_RO(rx_held);

/* " KEY=name,name" for the login feature bits in @f ("-" for none) */
static int odl_emit_features(char *buf, int at, const char *key, u32 f)
{
	static const struct {
		u32 bit;
		const char *name;
	} feats[] = {
		{ ODL_TB5_FEAT_E2E, "e2e" },
		{ ODL_TB5_FEAT_SW_CREDITS, "sw-credits" },
		{ ODL_TB5_FEAT_RX_READY, "rx-ready" },
		{ ODL_TB5_FEAT_KEYED, "keyed" },
		{ ODL_TB5_FEAT_EMPTY, "empty" },
	};
	bool none = true;
	unsigned int i;

	at += sysfs_emit_at(buf, at, "%s%s=", at ? " " : "", key);
	for (i = 0; i < ARRAY_SIZE(feats); i++) {
		if (!(f & feats[i].bit))
			continue;
		at += sysfs_emit_at(buf, at, "%s%s", none ? "" : ",",
				    feats[i].name);
		none = false;
	}
	if (none)
		at += sysfs_emit_at(buf, at, "-");
	return at;
}

/*
 * The login features: what this side offers, what the peer's last LOGIN
 * offered, what the two agreed on (none before a login), and what the
 * features_off parameter withholds. Unlocked reads of words the login
 * work writes: a snapshot, as any sysfs file.
 */
static ssize_t features_show(struct device *d, struct device_attribute *attr,
			     char *buf)
{
	struct odl_dev *dev = dev_get_drvdata(d);
	u32 peer = READ_ONCE(dev->peer_features);
	int at = 0;

	at = odl_emit_features(buf, at, "offered", odl_local_features(dev));
	at = odl_emit_features(buf, at, "peer", peer);
	at = odl_emit_features(buf, at, "agreed",
			       READ_ONCE(dev->features) & peer);
	at = odl_emit_features(buf, at, "withheld", odl_features_withheld());
	at += sysfs_emit_at(buf, at, "\n");
	return at;
}
static DEVICE_ATTR_RO(features);

static struct attribute *odl_dev_attrs[] = {
	&dev_attr_flow_control.attr,
	&dev_attr_mitigations.attr,
	&dev_attr_rx_held.attr,
	&dev_attr_features.attr,
	NULL,
};

/*
 * statistics/: one read-only file per device counter (the GET_STATS
 * counters and the driver's own), like a network interface's, for
 * monitoring without an ioctl client; a reset through GET_STATS shows here.
 * The same table says where GET_STATS reports a counter (uoff), so the copy
 * and the reset cannot disagree.
 */
#define ODL_STAT_NO_UAPI SIZE_MAX

struct odl_stat_attr {
	struct device_attribute attr;
	size_t off;	/* in struct odl_stats */
	size_t uoff;	/* in struct odl_tb5_stats, or ODL_STAT_NO_UAPI */
};

static ssize_t odl_stat_show(struct device *d, struct device_attribute *a,
			     char *buf)
{
	struct odl_dev *dev = dev_get_drvdata(d);
	size_t off = container_of(a, struct odl_stat_attr, attr)->off;
	u64 v;

	spin_lock(&dev->lock);
	v = *(u64 *)((char *)&dev->stats + off);
	spin_unlock(&dev->lock);
	return sysfs_emit(buf, "%llu\n", v);
}

/* a GET_STATS counter */
#define ODL_STAT(name) {						\
		.attr = __ATTR(name, 0444, odl_stat_show, NULL),	\
		.off = offsetof(struct odl_stats, name),		\
		.uoff = offsetof(struct odl_tb5_stats, name),		\
	}
/* a counter only sysfs (or GET_INFO) shows */
#define ODL_STAT_OWN(name) {						\
		.attr = __ATTR(name, 0444, odl_stat_show, NULL),	\
		.off = offsetof(struct odl_stats, name),		\
		.uoff = ODL_STAT_NO_UAPI,				\
	}

/* the counters' files; odl_stat_attrs points at them (odl_cdev_init) */
static struct odl_stat_attr odl_stat_list[] = {
	ODL_STAT(tx_msgs),
	ODL_STAT(tx_bytes),
	ODL_STAT(tx_frames),
	ODL_STAT(rx_msgs),
	ODL_STAT(rx_bytes),
	ODL_STAT(rx_frames),
	ODL_STAT(seq_errors),
	ODL_STAT(len_errors),
	ODL_STAT(desc_errors),
	ODL_STAT(drops),
	ODL_STAT(credit_stalls),
	ODL_STAT(link_resets),
	ODL_STAT(logins),
	ODL_STAT(rx_stalls),
	ODL_STAT(irq_recoveries),
	ODL_STAT(tx_wedges),
	ODL_STAT(e2e_fallbacks),
	ODL_STAT(sw_credit_stalls),
	ODL_STAT_OWN(credit_frames),
	ODL_STAT_OWN(link_changes),
	ODL_STAT(urgent_ahead),
	ODL_STAT(no_port),
	ODL_STAT(rx_cancelled),
	ODL_STAT(events_lost),
};
/* every counter of struct odl_stats has its file */
static_assert(ARRAY_SIZE(odl_stat_list) ==
	      sizeof(struct odl_stats) / sizeof(u64));
/* and every GET_STATS counter is among them (all but the two ODL_STAT_OWN) */
static_assert(sizeof(struct odl_tb5_stats) - 2 * sizeof(__u32) ==
	      (ARRAY_SIZE(odl_stat_list) - 2) * sizeof(u64));

static struct attribute *odl_stat_attrs[ARRAY_SIZE(odl_stat_list) + 1];

static const struct attribute_group odl_dev_group = {
	.attrs = odl_dev_attrs,
};

static const struct attribute_group odl_stat_group = {
	.name = "statistics",
	.attrs = odl_stat_attrs,
};

static const struct attribute_group *odl_dev_groups[] = {
	&odl_dev_group,
	&odl_stat_group,
	NULL,
};

/*
 * Buffer areas are kernel memory the OOM killer cannot charge to their
 * owner, so they are limited: all files together at most max_area_mb
 * (default: half the RAM), and one area at most half of what is available
 * right now. Beyond that BUF_SETUP fails with -ENOMEM instead of pushing
 * the machine out of memory.
 */
static unsigned int max_area_mb;
module_param(max_area_mb, uint, 0644);
MODULE_PARM_DESC(max_area_mb,
		 "MiB of buffer areas all open files may hold together (default 0: half the RAM)");

static atomic64_t odl_area_bytes = ATOMIC64_INIT(0);

static int odl_area_charge(u64 total)
{
	u64 limit = READ_ONCE(max_area_mb) ? (u64)READ_ONCE(max_area_mb) << 20 :
		((u64)totalram_pages() << PAGE_SHIFT) / 2;
	u64 avail = ((u64)si_mem_available() << PAGE_SHIFT) / 2;

	if (total > avail ||
	    atomic64_add_return(total, &odl_area_bytes) > limit) {
		if (total <= avail)
			atomic64_sub(total, &odl_area_bytes);
		return -ENOMEM;
	}
	return 0;
}

static long odl_ioc_buf_setup(struct odl_file *f, unsigned long arg)
{
	struct odl_tb5_buf_setup bs;
	u64 tx_size, rx_size, total, off;
	u32 tx_count, rx_count, usize, i;
	void *area;
	int ret;

	ret = odl_copy_in(&bs, sizeof(bs), ODL_TB5_BUF_SETUP_SIZE_VER0, arg,
			  &usize);
	if (ret)
		return ret;
	if (bs.flags)
		return -EINVAL;
	tx_count = bs.tx_count ? bs.tx_count : 2;
	rx_count = bs.rx_count ? bs.rx_count : 2;
	tx_size = bs.tx_buf_size ? bs.tx_buf_size : ODL_TB5_DEFAULT_BUF_SIZE;
	rx_size = bs.rx_buf_size ? bs.rx_buf_size : ODL_TB5_DEFAULT_BUF_SIZE;
	if (tx_count > ODL_TB5_MAX_BUFS_PER_DIR ||
	    rx_count > ODL_TB5_MAX_BUFS_PER_DIR ||
	    tx_size > ODL_TB5_MAX_BUF_SIZE || rx_size > ODL_TB5_MAX_BUF_SIZE ||
	    !PAGE_ALIGNED(tx_size) || !PAGE_ALIGNED(rx_size))
		return -EINVAL;
	total = tx_count * tx_size + rx_count * rx_size;
	if (total > ODL_TB5_MAX_AREA_SIZE)
		return -EINVAL;

	mutex_lock(&f->mutex);
	if (f->area) {
		mutex_unlock(&f->mutex);
		return -EBUSY;
	}
	ret = odl_area_charge(total);
	if (ret) {
		mutex_unlock(&f->mutex);
		return ret;
	}
	area = vmalloc_user(total);
	if (!area) {
		atomic64_sub(total, &odl_area_bytes);
		mutex_unlock(&f->mutex);
		return -ENOMEM;
	}
	memset(bs.offset, 0, sizeof(bs.offset));
	memset(bs.buf_len, 0, sizeof(bs.buf_len));
	off = 0;
	for (i = 0; i < tx_count + rx_count; i++) {
		bs.offset[i] = off;
		bs.buf_len[i] = i < tx_count ? tx_size : rx_size;
		off += bs.buf_len[i];
	}
	bs.tx_count = tx_count;
	bs.rx_count = rx_count;
	bs.tx_buf_size = tx_size;
	bs.rx_buf_size = rx_size;
	bs.mmap_len = total;
	ret = odl_copy_out(arg, &bs, sizeof(bs), usize);
	if (ret) {
		vfree(area);
		atomic64_sub(total, &odl_area_bytes);
		mutex_unlock(&f->mutex);
		return ret;
	}
	for (i = 0; i < tx_count + rx_count; i++) {
		f->buf_off[i] = bs.offset[i];
		f->buf_len[i] = bs.buf_len[i];
	}
	f->tx_count = tx_count;
	f->rx_count = rx_count;
	f->area_len = total;
	/* publish last: the data path only looks at buffers after this */
	smp_store_release(&f->area, area);
	mutex_unlock(&f->mutex);
	return 0;
}

static long odl_ioc_bind(struct odl_file *f, unsigned long arg)
{
	struct odl_dev *dev = f->dev;
	struct odl_tb5_bind b;
	u32 usize;
	int ret;

	ret = odl_copy_in(&b, sizeof(b), ODL_TB5_BIND_SIZE_VER0, arg, &usize);
	if (ret)
		return ret;
	if (b.flags || b.reserved || !b.port || b.port > ODL_TB5_MAX_PORT)
		return -EINVAL;
	spin_lock(&dev->lock);
	if (dev->gone) {
		ret = -ENODEV;
	} else if (f->port) {
		ret = -EALREADY;
	} else if (dev->ports[b.port]) {
		ret = -EADDRINUSE;
	} else {
		dev->ports[b.port] = f;
		f->port = b.port;
		f->bind_seq = ++dev->binds;
	}
	spin_unlock(&dev->lock);
	return ret;
}

/* Resolve buffer id / DMA-buf handle + range; f->mutex not needed: the
 * area never changes once published and DMA-bufs are pinned by users.
 */
static int odl_region(struct odl_file *f, u32 flags, u32 id, bool tx,
		      u64 offset, u64 len, struct odl_region *reg)
{
	struct odl_dmabuf *d;
	void *area;
	bool is_tx;

	if (flags & ODL_TB5_F_DMABUF) {
		if (!id || id > ODL_TB5_MAX_DMABUFS)
			return -ENOENT;
		d = f->dmabufs[id - 1];
		if (!d)
			return -ENOENT;
		if (!(d->flags & (tx ? ODL_TB5_DMABUF_TX : ODL_TB5_DMABUF_RX)))
			return -EINVAL;
		reg->base = d->vaddr;
		reg->len = d->len;
		reg->dmabuf = d;
	} else {
		/* pairs with the release in BUF_SETUP */
		area = smp_load_acquire(&f->area);
		if (!area)
			return -ENOBUFS;
		if (id >= f->tx_count + f->rx_count)
			return -ENOENT;
		is_tx = id < f->tx_count;
		if (tx != is_tx)
			return -EINVAL;
		reg->base = (u8 *)area + f->buf_off[id];
		reg->len = f->buf_len[id];
		reg->dmabuf = NULL;
	}
	if (offset > reg->len || len > reg->len - offset)
		return -ERANGE;
	reg->base += offset;
	return 0;
}

/* One SEND, checked field by field (f->mutex held: it keeps the DMA-buf
 * from being released).
 */
static int odl_do_send(struct odl_file *f, u32 flags, u32 buf_id,
		       u32 dst_port, u64 offset, u64 length, u64 cookie,
		       u32 key)
{
	struct odl_region reg;
	struct odl_send *s;
	u32 port, features;
	int ret;

	if (flags & ~(ODL_TB5_F_DMABUF | ODL_TB5_F_URGENT))
		return -EINVAL;
	if (!dst_port || dst_port > ODL_TB5_MAX_PORT)
		return -EINVAL;
	/* what the peer agreed to (test_send_unagreed: as if everything) */
	features = READ_ONCE(f->dev->features);
	if (READ_ONCE(odl_test_send_unagreed))
		features |= ODL_TB5_FEAT_KEYED | ODL_TB5_FEAT_EMPTY;
	/* 1.9: an empty message, to a peer that agreed to them */
	if (!length && !(features & ODL_TB5_FEAT_EMPTY))
		return -EOPNOTSUPP;
	if (length > ODL_MAX_MSG ||
	    ((flags & ODL_TB5_F_URGENT) && length > ODL_TB5_URGENT_MAX))
		return -EMSGSIZE;
	port = READ_ONCE(f->port);
	if (!port)
		return -EDESTADDRREQ;
	/* a key means nothing to a peer that did not agree to keys */
	if (key && !(features & ODL_TB5_FEAT_KEYED))
		return -EOPNOTSUPP;
	ret = odl_region(f, flags & ODL_TB5_F_DMABUF, buf_id, true, offset,
			 length, &reg);
	if (ret)
		return ret;
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	INIT_LIST_HEAD(&s->list);
	s->file = f;
	s->dmabuf = reg.dmabuf;
	s->src = reg.base;
	s->len = length;
	s->dst_port = dst_port;
	s->src_port = port;
	s->cookie = cookie;
	s->key = key;
	s->urgent = flags & ODL_TB5_F_URGENT;
	ret = odl_queue_send(f->dev, s);
	if (ret)
		kfree(s);
	return ret;
}

/* One RECV (f->mutex held). */
static int odl_do_recv(struct odl_file *f, u32 flags, u32 buf_id,
		       u64 offset, u64 capacity, u64 cookie, u32 key)
{
	struct odl_dev *dev = f->dev;
	struct odl_region reg;
	struct odl_recv *r;
	int ret = 0;

	/* 1.9: capacity 0 takes an empty message */
	if (flags & ~ODL_TB5_F_DMABUF)
		return -EINVAL;
	if (!READ_ONCE(f->port))
		return -EDESTADDRREQ;
	ret = odl_region(f, flags, buf_id, false, offset, capacity, &reg);
	if (ret)
		return ret;
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	r->file = f;
	r->dmabuf = reg.dmabuf;
	r->dst = reg.base;
	r->capacity = capacity;
	r->cookie = cookie;
	r->key = key;

	spin_lock(&dev->lock);
	if (dev->gone)
		ret = -ENODEV;
	else if (f->recvs_out >= ODL_TB5_MAX_OUTSTANDING || odl_cq_full(f))
		ret = -EAGAIN;
	if (!ret) {
		/* counted first: a waiting message may complete it at once */
		f->recvs_out++;
		if (r->dmabuf)
			r->dmabuf->users++;
		ret = odl_post_recv(dev, f, r);
		if (ret) {
			f->recvs_out--;
			if (r->dmabuf)
				r->dmabuf->users--;
		}
	}
	spin_unlock(&dev->lock);
	if (ret)
		kfree(r);
	return ret;
}

static long odl_ioc_send(struct odl_file *f, unsigned long arg)
{
	struct odl_tb5_send sd;
	u32 usize;
	int ret;

	ret = odl_copy_in(&sd, sizeof(sd), ODL_TB5_SEND_SIZE_VER0, arg, &usize);
	if (ret)
		return ret;
	if (sd.reserved)
		return -EINVAL;
	mutex_lock(&f->mutex);
	ret = odl_do_send(f, sd.flags, sd.buf_id, sd.dst_port, sd.offset,
			  sd.length, sd.cookie, sd.key);
	mutex_unlock(&f->mutex);
	return ret;
}

static long odl_ioc_recv(struct odl_file *f, unsigned long arg)
{
	struct odl_tb5_recv rv;
	u32 usize;
	int ret;

	ret = odl_copy_in(&rv, sizeof(rv), ODL_TB5_RECV_SIZE_VER0, arg, &usize);
	if (ret)
		return ret;
	mutex_lock(&f->mutex);
	ret = odl_do_recv(f, rv.flags, rv.buf_id, rv.offset, rv.capacity,
			  rv.cookie, rv.key);
	mutex_unlock(&f->mutex);
	return ret;
}

/* SUBMIT entries are read in chunks of this many (stack) */
#define ODL_SQE_CHUNK	8

static int odl_submit_one(struct odl_file *f, const struct odl_tb5_sqe *e)
{
	if (e->reserved)
		return -EINVAL;
	switch (e->op) {
	case ODL_TB5_SQE_SEND:
		return odl_do_send(f, e->flags, e->buf_id, e->dst_port,
				   e->offset, e->length, e->cookie, e->key);
	case ODL_TB5_SQE_RECV:
		if (e->dst_port)
			return -EINVAL;
		return odl_do_recv(f, e->flags, e->buf_id, e->offset,
				   e->length, e->cookie, e->key);
	default:
		return -EINVAL;
	}
}

static long odl_ioc_submit(struct odl_file *f, unsigned long arg)
{
	struct odl_tb5_sqe e[ODL_SQE_CHUNK];
	struct odl_tb5_submit sb;
	u32 usize, i, j, n, done = 0, es;
	u8 __user *uptr;
	int ret, err = 0;

	ret = odl_copy_in(&sb, sizeof(sb), ODL_TB5_SUBMIT_SIZE_VER0, arg,
			  &usize);
	if (ret)
		return ret;
	if (sb.flags || sb.reserved || !sb.count ||
	    sb.count > ODL_TB5_MAX_SUBMIT ||
	    sb.entry_size < ODL_TB5_SQE_SIZE_VER0 || sb.entry_size > 4096 ||
	    !sb.entries_ptr)
		return -EINVAL;
	es = sb.entry_size;
	uptr = u64_to_user_ptr(sb.entries_ptr);
	if (!access_ok(uptr, (size_t)sb.count * es))
		return -EFAULT;

	mutex_lock(&f->mutex);
	for (i = 0; i < sb.count && !err; i += n) {
		n = min_t(u32, sb.count - i, ODL_SQE_CHUNK);
		if (es == sizeof(e[0])) {
			if (copy_from_user(e, uptr + (size_t)i * es,
					   (size_t)n * es))
				err = -EFAULT;
		} else {
			/* a larger entry is accepted with a zero tail */
			for (j = 0; j < n && !err; j++)
				err = copy_struct_from_user(&e[j], sizeof(e[j]),
							    uptr + (size_t)(i + j) * es,
							    es);
		}
		for (j = 0; j < n && !err; j++) {
			err = odl_submit_one(f, &e[j]);
			if (!err)
				done++;
		}
	}
	mutex_unlock(&f->mutex);
	if (!done)
		return err;
	sb.done = done;
	sb.error = -err;
	return odl_copy_out(arg, &sb, sizeof(sb), usize);
}

static bool odl_cq_ready(struct odl_file *f, u32 want)
{
	return READ_ONCE(f->cq_count) >= want || READ_ONCE(f->cq_urgent) ||
	       READ_ONCE(f->events_lost) || READ_ONCE(f->dev->gone);
}

/* count a batch POLL_CQ waiter in (add) or out, for odl_cq_push */
static void odl_cq_waiter(struct odl_file *f, u32 want, bool add)
{
	spin_lock(&f->dev->lock);
	if (add) {
		/* the smallest batch wanted: nobody sleeps past theirs */
		if (!f->cq_batch_waiters || want < f->cq_batch_want)
			f->cq_batch_want = want;
		f->cq_batch_waiters++;
	} else {
		f->cq_batch_waiters--;
	}
	spin_unlock(&f->dev->lock);
}

/* one completion into the user's array at p, an entry of esize bytes: the
 * part both know, and zeros for a larger entry's tail
 */
static int odl_cq_put(u8 __user *p, u32 esize,
		      const struct odl_tb5_completion *c)
{
	const size_t csize = sizeof(*c);

	if (copy_to_user(p, c, min_t(u32, esize, csize)) ||
	    (esize > csize && clear_user(p + csize, esize - csize)))
		return -EFAULT;
	return 0;
}

/* copy n queued completions from head on to the user (f->mutex held:
 * producers only write past head + cq_count, so the range is stable)
 */
static int odl_cq_copy(struct odl_file *f, u8 __user *uptr, u32 esize,
		       u32 head, u32 n)
{
	const size_t csize = sizeof(struct odl_tb5_completion);
	u32 i, first;

	if (esize == csize) {
		/* the common case: at most two runs of the ring */
		first = min(n, ODL_CQ_SIZE - head);
		if (copy_to_user(uptr, &f->cq[head], first * csize) ||
		    copy_to_user(uptr + first * csize, f->cq,
				 (n - first) * csize))
			return -EFAULT;
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (odl_cq_put(uptr + (size_t)i * esize, esize,
			       &f->cq[(head + i) % ODL_CQ_SIZE]))
			return -EFAULT;
	}
	return 0;
}

/* the EVENTS_LOST entry for lost events, at entry n of the user's array */
static int odl_cq_put_lost(u8 __user *uptr, u32 esize, u32 n, u32 lost)
{
	const struct odl_tb5_completion c = {
		.type = ODL_TB5_COMP_EVENT,
		.status = -EOVERFLOW,
		.length = lost,
		.flags = ODL_TB5_CF_EVENTS_LOST,
	};

	return odl_cq_put(uptr + (size_t)n * esize, esize, &c);
}

static long odl_ioc_poll_cq(struct odl_file *f, unsigned long arg)
{
	struct odl_dev *dev = f->dev;
	struct odl_tb5_poll_cq pq;
	u8 __user *uptr;
	u32 usize, n, n2, head, esize, want, lost, pushed;
	long t;
	int ret;

	ret = odl_copy_in(&pq, sizeof(pq), ODL_TB5_POLL_CQ_SIZE_VER0, arg,
			  &usize);
	if (ret)
		return ret;
	if (!pq.max_entries || pq.max_entries > ODL_CQ_SIZE ||
	    (pq.flags & ~ODL_TB5_POLL_F_ETIMEDOUT) ||
	    pq.entry_size < ODL_TB5_COMPLETION_SIZE_VER0 ||
	    pq.entry_size > 4096 || pq.timeout_ms < -1 || !pq.entries_ptr ||
	    pq.min_entries > pq.max_entries || pq.reserved2)
		return -EINVAL;
	esize = pq.entry_size;
	uptr = u64_to_user_ptr(pq.entries_ptr);
	if (!access_ok(uptr, (size_t)pq.max_entries * esize))
		return -EFAULT;
	want = max(pq.min_entries, 1u);

	if (pq.timeout_ms && !odl_cq_ready(f, want)) {
		/* the parameter is writable: load-time checks do not hold */
		u32 spin_us = min_t(u32, READ_ONCE(odl_busy_poll),
				    ODL_BUSY_POLL_MAX_US);
		u64 spin_until = ktime_get_ns() + spin_us * 1000ull;
		wait_queue_head_t *wq = want > 1 ? &f->bwq : &f->wq;

		while (spin_us && !odl_cq_ready(f, want) &&
		       ktime_get_ns() < spin_until &&
		       !signal_pending(current) && !need_resched())
			cpu_relax();
		if (want > 1)
			odl_cq_waiter(f, want, true);
		if (pq.timeout_ms < 0) {
			t = wait_event_interruptible(*wq,
						     odl_cq_ready(f, want));
		} else {
			t = msecs_to_jiffies(pq.timeout_ms);
			t = wait_event_interruptible_timeout(*wq,
							     odl_cq_ready(f, want),
							     t);
			t = t < 0 ? t : 0;
		}
		if (want > 1)
			odl_cq_waiter(f, want, false);
		if (t < 0 && !odl_cq_ready(f, 1))
			return -EINTR;
		/* a bounded wait that ended empty: say so if asked to */
		if (pq.timeout_ms > 0 && !odl_cq_ready(f, 1) &&
		    (pq.flags & ODL_TB5_POLL_F_ETIMEDOUT))
			return -ETIMEDOUT;
	}

	/* one reader at a time: peek, copy out, then consume */
	mutex_lock(&f->mutex);
	spin_lock(&dev->lock);
	n = min(pq.max_entries, f->cq_count);
	n2 = 0;
	lost = 0;
	head = f->cq_head;
	pushed = f->cq_pushed;
	if (f->events_lost) {
		/* the report goes where the first loss was, after the
		 * completions queued before it (lost_at is never behind the
		 * head: the clamp only guards)
		 */
		u32 before = f->lost_at - (pushed - f->cq_count);

		if (before > f->cq_count)
			before = 0;
		if (before < pq.max_entries) {
			lost = f->events_lost;
			n2 = min(pq.max_entries - 1 - before,
				 f->cq_count - before);
			n = before;
		}
	}
	if (!n && !lost && dev->gone) {
		/* everything delivered and the peer will not come back */
		spin_unlock(&dev->lock);
		mutex_unlock(&f->mutex);
		return -ENODEV;
	}
	spin_unlock(&dev->lock);
	ret = odl_cq_copy(f, uptr, esize, head, n);
	if (!ret && lost)
		ret = odl_cq_put_lost(uptr, esize, n, lost);
	if (!ret && n2)
		ret = odl_cq_copy(f, uptr + (size_t)(n + 1) * esize, esize,
				  (head + n) % ODL_CQ_SIZE, n2);
	pq.count = n + !!lost + n2;
	n += n2;
	if (!ret)
		ret = odl_copy_out(arg, &pq, sizeof(pq), usize);
	if (!ret) {
		bool was_full;

		spin_lock(&dev->lock);
		was_full = odl_cq_full(f);
		f->cq_head = (f->cq_head + n) % ODL_CQ_SIZE;
		f->cq_count -= n;
		/* more may have been lost meanwhile: reported next time */
		f->events_lost -= lost;
		/* lost during the copy: after all that was queued then */
		if (lost && f->events_lost)
			f->lost_at = pushed;
		if (!f->cq_count)
			f->cq_urgent = false;
		/* poll() waits for POLLOUT on a full queue: room is news */
		if (was_full && n)
			wake_up_interruptible(&f->wq);
		spin_unlock(&dev->lock);
	}
	mutex_unlock(&f->mutex);
	return ret;
}

static long odl_ioc_stats(struct odl_file *f, unsigned long arg)
{
	struct odl_dev *dev = f->dev;
	struct odl_stats snap, taken = {};
	struct odl_tb5_stats st;
	const struct odl_stat_attr *a;
	u32 usize, i;
	bool reset;
	int ret;

	ret = odl_copy_in(&st, sizeof(st), ODL_TB5_STATS_SIZE_VER0, arg,
			  &usize);
	if (ret)
		return ret;
	if (st.flags & ~ODL_TB5_STATS_RESET)
		return -EINVAL;
	reset = st.flags & ODL_TB5_STATS_RESET;
	/* resets one at a time: two would both take away the same snapshot */
	if (reset)
		mutex_lock(&odl_stats_reset_lock);
	spin_lock(&dev->lock);
	snap = dev->stats;
	spin_unlock(&dev->lock);
	memset(&st, 0, sizeof(st));
	for (i = 0; i < ARRAY_SIZE(odl_stat_list); i++) {
		a = &odl_stat_list[i];
		if (a->uoff == ODL_STAT_NO_UAPI)
			continue;
		*(u64 *)((char *)&st + a->uoff) =
			*(u64 *)((char *)&snap + a->off);
		/* reported: the caller's struct holds it */
		if (a->uoff + sizeof(u64) <= usize)
			*(u64 *)((char *)&taken + a->off) =
				*(u64 *)((char *)&snap + a->off);
	}
	ret = odl_copy_out(arg, &st, sizeof(st), usize);
	if (!reset)
		return ret;
	if (!ret) {
		/* take away only what was reported; later counts survive, and
		 * so do the counters GET_STATS does not report or this
		 * caller's struct is too short for
		 */
		u64 *cur = (u64 *)&dev->stats, *old = (u64 *)&taken;

		spin_lock(&dev->lock);
		for (i = 0; i < sizeof(taken) / sizeof(u64); i++)
			cur[i] -= old[i];
		spin_unlock(&dev->lock);
	}
	mutex_unlock(&odl_stats_reset_lock);
	return ret;
}

static void odl_memreg_free(struct odl_dmabuf *d)
{
	vunmap((void *)((unsigned long)d->vaddr & PAGE_MASK));
	unpin_user_pages_dirty_lock(d->pages, d->npages,
				    d->flags & ODL_TB5_MEM_RX);
	account_locked_vm(d->mm, d->npages, false);
	mmdrop(d->mm);
	kvfree(d->pages);
	kfree(d);
}

static void odl_dmabuf_free(struct odl_dmabuf *d)
{
	struct iosys_map map = IOSYS_MAP_INIT_VADDR(d->vaddr);

	if (d->pages) {
		odl_memreg_free(d);
		return;
	}
	odl_dma_buf_vunmap(d->buf, &map);
	odl_dma_buf_unmap(d->attach, d->sgt, DMA_BIDIRECTIONAL);
	dma_buf_detach(d->buf, d->attach);
	dma_buf_put(d->buf);
	kfree(d);
}

/* a free handle slot (f->mutex held), or ODL_TB5_MAX_DMABUFS */
static u32 odl_free_handle(struct odl_file *f)
{
	u32 slot;

	for (slot = 0; slot < ODL_TB5_MAX_DMABUFS; slot++)
		if (!f->dmabufs[slot])
			break;
	return slot;
}

static long odl_ioc_dmabuf_import(struct odl_file *f, unsigned long arg)
{
	struct odl_dev *dev = f->dev;
	struct odl_tb5_dmabuf_import im;
	struct iosys_map map;
	struct odl_dmabuf *d;
	u32 usize, slot;
	int ret;

	ret = odl_copy_in(&im, sizeof(im), ODL_TB5_DMABUF_IMPORT_SIZE_VER0,
			  arg, &usize);
	if (ret)
		return ret;
	if (!im.flags || (im.flags & ~(ODL_TB5_DMABUF_TX | ODL_TB5_DMABUF_RX)) ||
	    im.handle || im.length)
		return -EINVAL;
	if (im.fd < 0)
		return -EBADF;

	mutex_lock(&f->mutex);
	slot = odl_free_handle(f);
	if (slot == ODL_TB5_MAX_DMABUFS) {
		ret = -ENOSPC;
		goto out;
	}
	if (READ_ONCE(dev->gone)) {
		ret = -ENODEV;
		goto out;
	}
	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d) {
		ret = -ENOMEM;
		goto out;
	}
	d->buf = dma_buf_get(im.fd);
	if (IS_ERR(d->buf)) {
		ret = -EBADF;
		goto err_free;
	}
	/* the NHI's device, not the ring's: a re-login may free the rings
	 * meanwhile (dev->xd is held until the last file closes)
	 */
	d->attach = dma_buf_attach(d->buf, &dev->xd->tb->nhi->pdev->dev);
	if (IS_ERR(d->attach)) {
		ret = PTR_ERR(d->attach);
		goto err_put;
	}
	d->sgt = odl_dma_buf_map(d->attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(d->sgt)) {
		ret = PTR_ERR(d->sgt);
		goto err_detach;
	}
	ret = odl_dma_buf_vmap(d->buf, &map);
	if (ret)
		goto err_unmap;
	if (map.is_iomem) {
		odl_dma_buf_vunmap(d->buf, &map);
		ret = -EOPNOTSUPP;
		goto err_unmap;
	}
	d->vaddr = map.vaddr;
	d->len = d->buf->size;
	d->flags = im.flags;
	im.handle = slot + 1;
	im.length = d->len;
	ret = odl_copy_out(arg, &im, sizeof(im), usize);
	if (ret) {
		odl_dmabuf_free(d);
		goto out;
	}
	f->dmabufs[slot] = d;
	mutex_unlock(&f->mutex);
	return 0;

err_unmap:
	odl_dma_buf_unmap(d->attach, d->sgt, DMA_BIDIRECTIONAL);
err_detach:
	dma_buf_detach(d->buf, d->attach);
err_put:
	dma_buf_put(d->buf);
err_free:
	kfree(d);
out:
	mutex_unlock(&f->mutex);
	return ret;
}

/*
 * Pin [addr, addr + length) of the caller's memory and map it for the
 * kernel: SEND/RECV then copy straight between these pages and the ring
 * frames, as for a DMA-buf (the NHI never sees them).
 */
static long odl_ioc_mem_reg(struct odl_file *f, unsigned long arg)
{
	struct odl_tb5_mem_reg mr;
	unsigned long start, npages;
	struct odl_dmabuf *d;
	u32 usize, slot;
	void *base;
	int ret, got;

	ret = odl_copy_in(&mr, sizeof(mr), ODL_TB5_MEM_REG_SIZE_VER0, arg,
			  &usize);
	if (ret)
		return ret;
	if (!mr.flags || (mr.flags & ~(ODL_TB5_MEM_TX | ODL_TB5_MEM_RX)) ||
	    mr.handle || mr.reserved || !mr.addr || !mr.length ||
	    mr.length > ODL_TB5_MAX_MEM_REG ||
	    mr.addr + mr.length < mr.addr)
		return -EINVAL;
	if (!access_ok(u64_to_user_ptr(mr.addr), mr.length))
		return -EFAULT;
	start = mr.addr & PAGE_MASK;
	npages = (PAGE_ALIGN(mr.addr + mr.length) - start) >> PAGE_SHIFT;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	d->pages = kvcalloc(npages, sizeof(*d->pages), GFP_KERNEL);
	if (!d->pages) {
		kfree(d);
		return -ENOMEM;
	}
	d->mm = current->mm;
	mmgrab(d->mm);
	ret = account_locked_vm(d->mm, npages, true);
	if (ret)
		goto err_mm;
	/* writable even for send-only use: the pages must be private to
	 * the process (no copy-on-write behind our mapping)
	 */
	got = pin_user_pages_fast(start, npages, FOLL_WRITE | FOLL_LONGTERM,
				  d->pages);
	if (got != npages) {
		if (got > 0)
			unpin_user_pages(d->pages, got);
		ret = got < 0 ? got : -EFAULT;
		goto err_account;
	}
	base = vmap(d->pages, npages, VM_MAP, PAGE_KERNEL);
	if (!base) {
		unpin_user_pages(d->pages, npages);
		ret = -ENOMEM;
		goto err_account;
	}
	d->npages = npages;
	d->vaddr = base + offset_in_page(mr.addr);
	d->len = mr.length;
	d->flags = mr.flags;

	mutex_lock(&f->mutex);
	slot = odl_free_handle(f);
	ret = -ENOSPC;
	if (slot < ODL_TB5_MAX_DMABUFS) {
		mr.handle = slot + 1;
		ret = odl_copy_out(arg, &mr, sizeof(mr), usize);
		if (!ret)
			f->dmabufs[slot] = d;
	}
	mutex_unlock(&f->mutex);
	if (ret)
		odl_memreg_free(d);
	return ret;

err_account:
	account_locked_vm(d->mm, npages, false);
err_mm:
	mmdrop(d->mm);
	kvfree(d->pages);
	kfree(d);
	return ret == -EFAULT || ret == -ENOMEM ? ret : -EFAULT;
}

static long odl_ioc_cancel(struct odl_file *f, unsigned long arg)
{
	struct odl_tb5_cancel cn;
	u32 usize;
	int ret;

	ret = odl_copy_in(&cn, sizeof(cn), ODL_TB5_CANCEL_SIZE_VER0, arg,
			  &usize);
	if (ret)
		return ret;
	if (cn.flags || cn.reserved || !cn.key)
		return -EINVAL;
	spin_lock(&f->dev->lock);
	ret = odl_cancel_recv(f->dev, f, cn.key);
	spin_unlock(&f->dev->lock);
	return ret;
}

static long odl_ioc_dmabuf_release(struct odl_file *f, unsigned long arg)
{
	struct odl_tb5_dmabuf_release rl;
	struct odl_dmabuf *d;
	u32 usize;
	int ret;

	ret = odl_copy_in(&rl, sizeof(rl), ODL_TB5_DMABUF_RELEASE_SIZE_VER0,
			  arg, &usize);
	if (ret)
		return ret;
	if (!rl.handle || rl.handle > ODL_TB5_MAX_DMABUFS)
		return -ENOENT;
	mutex_lock(&f->mutex);
	d = f->dmabufs[rl.handle - 1];
	if (!d) {
		ret = -ENOENT;
	} else {
		spin_lock(&f->dev->lock);
		if (d->users)
			ret = -EBUSY;
		else
			f->dmabufs[rl.handle - 1] = NULL;
		spin_unlock(&f->dev->lock);
		if (!ret)
			odl_dmabuf_free(d);
	}
	mutex_unlock(&f->mutex);
	return ret;
}

static long odl_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct odl_file *f = file->private_data;
	bool gone = READ_ONCE(f->dev->gone);

	/* the size encoded in cmd is ignored: structs carry their own */
	if (_IOC_TYPE(cmd) != ODL_TB5_IOC_MAGIC ||
	    _IOC_DIR(cmd) != (_IOC_READ | _IOC_WRITE))
		return -ENOTTY;

	switch (_IOC_NR(cmd)) {
	case _IOC_NR(ODL_TB5_IOC_GET_INFO):
		return odl_ioc_info(f, arg);
	case _IOC_NR(ODL_TB5_IOC_POLL_CQ):
		return odl_ioc_poll_cq(f, arg);
	case _IOC_NR(ODL_TB5_IOC_GET_STATS):
		return odl_ioc_stats(f, arg);
	case _IOC_NR(ODL_TB5_IOC_DMABUF_RELEASE):
		return odl_ioc_dmabuf_release(f, arg);
	case _IOC_NR(ODL_TB5_IOC_CANCEL):
		return odl_ioc_cancel(f, arg);
	}
	if (gone)
		return -ENODEV;
	switch (_IOC_NR(cmd)) {
	case _IOC_NR(ODL_TB5_IOC_BUF_SETUP):
		return odl_ioc_buf_setup(f, arg);
	case _IOC_NR(ODL_TB5_IOC_BIND):
		return odl_ioc_bind(f, arg);
	case _IOC_NR(ODL_TB5_IOC_SEND):
		return odl_ioc_send(f, arg);
	case _IOC_NR(ODL_TB5_IOC_RECV):
		return odl_ioc_recv(f, arg);
	case _IOC_NR(ODL_TB5_IOC_DMABUF_IMPORT):
		return odl_ioc_dmabuf_import(f, arg);
	case _IOC_NR(ODL_TB5_IOC_SUBMIT):
		return odl_ioc_submit(f, arg);
	case _IOC_NR(ODL_TB5_IOC_MEM_REG):
		return odl_ioc_mem_reg(f, arg);
	}
	return -ENOTTY;
}

/* ---------------------------------------------------------------------
 * open/release/mmap/poll
 */
static int odl_open(struct inode *inode, struct file *file)
{
	unsigned int minor = iminor(inode);
	struct odl_dev *dev = NULL;
	struct odl_file *f;

	if (minor >= ODL_MAX_DEVS)
		return -ENODEV;
	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	f->cq = kvcalloc(ODL_CQ_SIZE, sizeof(*f->cq), GFP_KERNEL);
	if (!f->cq) {
		kfree(f);
		return -ENOMEM;
	}
	mutex_init(&f->mutex);
	init_waitqueue_head(&f->wq);
	init_waitqueue_head(&f->bwq);
	INIT_LIST_HEAD(&f->recvs);
	INIT_LIST_HEAD(&f->krecvs);
	INIT_LIST_HEAD(&f->pending);

	mutex_lock(&odl_slots_lock);
	dev = odl_slots[minor].dev;
	if (dev)
		kref_get(&dev->kref);
	mutex_unlock(&odl_slots_lock);
	if (!dev) {
		kvfree(f->cq);
		kfree(f);
		return -ENODEV;
	}
	f->dev = dev;
	spin_lock(&dev->lock);
	list_add_tail(&f->list, &dev->files);
	spin_unlock(&dev->lock);
	file->private_data = f;
	return nonseekable_open(inode, file);
}

static int odl_release(struct inode *inode, struct file *file)
{
	struct odl_file *f = file->private_data;
	struct odl_dev *dev = f->dev;
	u32 i;

	spin_lock(&dev->lock);
	odl_file_detach(dev, f);
	spin_unlock(&dev->lock);
	for (i = 0; i < ODL_TB5_MAX_DMABUFS; i++)
		if (f->dmabufs[i])
			odl_dmabuf_free(f->dmabufs[i]);
	if (f->area) {
		vfree(f->area);
		atomic64_sub(f->area_len, &odl_area_bytes);
	}
	kvfree(f->cq);
	kfree(f);
	odl_dev_put(dev);
	return 0;
}

static int odl_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct odl_file *f = file->private_data;
	unsigned long len = vma->vm_end - vma->vm_start;
	void *area;
	u64 off;

	/* pairs with the release in BUF_SETUP */
	area = smp_load_acquire(&f->area);
	if (!area)
		return -ENOBUFS;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	if (off > f->area_len || len > f->area_len - off)
		return -EINVAL;
	odl_vm_flags_set(vma, VM_DONTCOPY);
	return remap_vmalloc_range(vma, area, vma->vm_pgoff);
}

static __poll_t odl_poll(struct file *file, poll_table *wait)
{
	struct odl_file *f = file->private_data;
	struct odl_dev *dev = f->dev;
	__poll_t mask = 0;

	poll_wait(file, &f->wq, wait);
	spin_lock(&dev->lock);
	if (f->cq_count || f->events_lost)
		mask |= EPOLLIN | EPOLLRDNORM;
	/* as odl_queue_send: a resume (E2E fallback) takes SENDs too */
	if ((dev->connected || dev->resuming) &&
	    f->sends_out < ODL_TB5_MAX_OUTSTANDING && !odl_cq_full(f))
		mask |= EPOLLOUT | EPOLLWRNORM;
	if (dev->gone)
		mask |= EPOLLHUP | EPOLLERR;
	spin_unlock(&dev->lock);
	return mask;
}

static const struct file_operations odl_fops = {
	.owner = THIS_MODULE,
	.open = odl_open,
	.release = odl_release,
	.unlocked_ioctl = odl_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = odl_mmap,
	.poll = odl_poll,
	.llseek = no_llseek,
};

/* ---------------------------------------------------------------------
 * Device nodes: index N stays with the peer's UUID while loaded.
 */
int odl_cdev_add(struct odl_dev *dev)
{
	const uuid_t *uuid = dev->xd->remote_uuid;
	int i, idx = -1;
	struct device *d;

	if (!uuid)
		return -ENODEV;
	mutex_lock(&odl_slots_lock);
	for (i = 0; i < ODL_MAX_DEVS; i++)
		if (odl_slots[i].used && uuid_equal(&odl_slots[i].uuid, uuid))
			idx = i;
	if (idx < 0) {
		for (i = 0; i < ODL_MAX_DEVS; i++)
			if (!odl_slots[i].used) {
				idx = i;
				break;
			}
	}
	if (idx < 0 || odl_slots[idx].dev) {
		mutex_unlock(&odl_slots_lock);
		return idx < 0 ? -ENOSPC : -EBUSY;
	}
	odl_slots[idx].used = true;
	uuid_copy(&odl_slots[idx].uuid, uuid);
	dev->index = idx;
	d = device_create_with_groups(odl_class, &dev->svc->dev,
				      MKDEV(MAJOR(odl_devt), idx), dev,
				      odl_dev_groups, ODL_TB5_DEV_PREFIX "%d",
				      idx);
	if (IS_ERR(d)) {
		mutex_unlock(&odl_slots_lock);
		return PTR_ERR(d);
	}
	dev->cdev_dev = d;
	odl_slots[idx].dev = dev;
	mutex_unlock(&odl_slots_lock);
	return 0;
}

void odl_cdev_remove(struct odl_dev *dev)
{
	struct odl_file *f;

	mutex_lock(&odl_slots_lock);
	odl_slots[dev->index].dev = NULL;
	device_destroy(odl_class, MKDEV(MAJOR(odl_devt), dev->index));
	mutex_unlock(&odl_slots_lock);

	spin_lock(&dev->lock);
	dev->gone = true;
	list_for_each_entry(f, &dev->files, list) {
		wake_up_interruptible(&f->wq);
		wake_up_interruptible(&f->bwq);
	}
	spin_unlock(&dev->lock);
}

static char *odl_devnode(ODL_DEVNODE_CONST struct device *dev, umode_t *mode)
{
	if (mode)
		*mode = 0660;
	return NULL;
}

int odl_cdev_init(void)
{
	unsigned int i;
	int ret;

	BUILD_BUG_ON(sizeof(struct odl_tb5_poll_cq) != ODL_TB5_POLL_CQ_SIZE_1_3);
	BUILD_BUG_ON(sizeof(struct odl_tb5_sqe) != ODL_TB5_SQE_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct odl_tb5_submit) != ODL_TB5_SUBMIT_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct odl_tb5_completion) !=
		     ODL_TB5_COMPLETION_SIZE_VER0);

	for (i = 0; i < ARRAY_SIZE(odl_stat_list); i++)
		odl_stat_attrs[i] = &odl_stat_list[i].attr.attr;
	ret = alloc_chrdev_region(&odl_devt, 0, ODL_MAX_DEVS, "odl_tb5");
	if (ret)
		return ret;
	cdev_init(&odl_cdev, &odl_fops);
	odl_cdev.owner = THIS_MODULE;
	ret = cdev_add(&odl_cdev, odl_devt, ODL_MAX_DEVS);
	if (ret)
		goto err_region;
	odl_class = odl_class_create("odl_tb5");
	if (IS_ERR(odl_class)) {
		ret = PTR_ERR(odl_class);
		goto err_cdev;
	}
	odl_class->devnode = odl_devnode;
	return 0;

err_cdev:
	cdev_del(&odl_cdev);
err_region:
	unregister_chrdev_region(odl_devt, ODL_MAX_DEVS);
	return ret;
}

void odl_cdev_exit(void)
{
	class_destroy(odl_class);
	cdev_del(&odl_cdev);
	unregister_chrdev_region(odl_devt, ODL_MAX_DEVS);
}
