// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
/*
 * odl_dmabuf_exp - test-only DMA-buf exporter for odl_tb5's import path.
 *
 * /dev/odl_dmabuf_exp: ioctl ODL_DMABUF_EXP_CREATE takes a size (bytes,
 * page multiple, at most 64 MiB) and returns a DMA-buf fd backed by system
 * pages. The DMA-buf can be mmap'd (to fill or check it), attached and
 * mapped by a device, and vmap'd.
 */
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/highmem.h>
#include <linux/iosys-map.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#define ODL_DMABUF_EXP_CREATE	_IOWR(0xB6, 0x00, __u64)
#define ODL_DMABUF_EXP_MAX	(64ull << 20)

struct odl_exp_buf {
	struct page **pages;
	unsigned int npages;
};

static struct sg_table *odl_exp_map(struct dma_buf_attachment *at,
				    enum dma_data_direction dir)
{
	struct odl_exp_buf *b = at->dmabuf->priv;
	struct sg_table *sgt;
	int ret;

	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table_from_pages(sgt, b->pages, b->npages, 0,
					(size_t)b->npages << PAGE_SHIFT,
					GFP_KERNEL);
	if (ret)
		goto err_free;
	ret = dma_map_sgtable(at->dev, sgt, dir, 0);
	if (ret)
		goto err_table;
	return sgt;

err_table:
	sg_free_table(sgt);
err_free:
	kfree(sgt);
	return ERR_PTR(ret);
}

static void odl_exp_unmap(struct dma_buf_attachment *at, struct sg_table *sgt,
			  enum dma_data_direction dir)
{
	dma_unmap_sgtable(at->dev, sgt, dir, 0);
	sg_free_table(sgt);
	kfree(sgt);
}

static void odl_exp_free(struct odl_exp_buf *b)
{
	unsigned int i;

	for (i = 0; i < b->npages && b->pages && b->pages[i]; i++)
		__free_page(b->pages[i]);
	kvfree(b->pages);
	kfree(b);
}

static void odl_exp_release(struct dma_buf *dmabuf)
{
	odl_exp_free(dmabuf->priv);
}

static int odl_exp_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	struct odl_exp_buf *b = dmabuf->priv;

	/* vm_map_pages() maps from vma->vm_pgoff on and checks the range */
	return vm_map_pages(vma, b->pages, b->npages);
}

static int odl_exp_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct odl_exp_buf *b = dmabuf->priv;
	void *va = vmap(b->pages, b->npages, VM_MAP, PAGE_KERNEL);

	if (!va)
		return -ENOMEM;
	iosys_map_set_vaddr(map, va);
	return 0;
}

static void odl_exp_vunmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	vunmap(map->vaddr);
}

static const struct dma_buf_ops odl_exp_ops = {
	.map_dma_buf = odl_exp_map,
	.unmap_dma_buf = odl_exp_unmap,
	.release = odl_exp_release,
	.mmap = odl_exp_mmap,
	.vmap = odl_exp_vmap,
	.vunmap = odl_exp_vunmap,
};

static long odl_exp_ioctl(struct file *file, unsigned int cmd,
			  unsigned long arg)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct odl_exp_buf *b;
	struct dma_buf *dmabuf;
	unsigned int i;
	u64 size;
	int fd;

	if (cmd != ODL_DMABUF_EXP_CREATE)
		return -ENOTTY;
	if (get_user(size, (u64 __user *)arg))
		return -EFAULT;
	if (!size || size > ODL_DMABUF_EXP_MAX || !PAGE_ALIGNED(size))
		return -EINVAL;
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	b->npages = size >> PAGE_SHIFT;
	b->pages = kvcalloc(b->npages, sizeof(*b->pages), GFP_KERNEL);
	if (!b->pages)
		goto err;
	for (i = 0; i < b->npages; i++) {
		b->pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!b->pages[i])
			goto err;
	}
	info.ops = &odl_exp_ops;
	info.size = size;
	info.flags = O_RDWR;
	info.priv = b;
	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf)) {
		odl_exp_free(b);
		return PTR_ERR(dmabuf);
	}
	fd = dma_buf_fd(dmabuf, O_CLOEXEC);
	if (fd < 0)
		dma_buf_put(dmabuf);
	return fd;

err:
	odl_exp_free(b);
	return -ENOMEM;
}

static const struct file_operations odl_exp_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = odl_exp_ioctl,
};

static struct miscdevice odl_exp_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "odl_dmabuf_exp",
	.fops = &odl_exp_fops,
	.mode = 0600,
};

module_misc_device(odl_exp_misc);

MODULE_DESCRIPTION("OdinLink test DMA-buf exporter");
MODULE_LICENSE("Dual MIT/GPL");
MODULE_IMPORT_NS(DMA_BUF);
