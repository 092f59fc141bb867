/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * odl_tb5: every difference between the kernel versions the driver builds
 * against lives here (6.1 is the baseline).
 */
#ifndef ODL_TB5_COMPAT_H
#define ODL_TB5_COMPAT_H

#include <linux/version.h>
#include <linux/device.h>
#include <linux/dma-buf.h>
#include <linux/mm.h>
#include <linux/thunderbolt.h>

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
#define odl_class_create(name)	class_create(name)
#else
#define odl_class_create(name)	class_create(THIS_MODULE, name)
#endif

/* class devnode callbacks take a const device from 6.2 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define ODL_DEVNODE_CONST const
#else
#define ODL_DEVNODE_CONST
#endif

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
#define odl_vm_flags_set(vma, f)	vm_flags_set(vma, f)
#else
#define odl_vm_flags_set(vma, f)	((vma)->vm_flags |= (f))
#endif

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
#define ODL_IMPORT_NS_DMA_BUF()	MODULE_IMPORT_NS("DMA_BUF")
#else
#define ODL_IMPORT_NS_DMA_BUF()	MODULE_IMPORT_NS(DMA_BUF)
#endif

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define odl_dma_buf_vmap(b, m)		dma_buf_vmap_unlocked(b, m)
#define odl_dma_buf_vunmap(b, m)	dma_buf_vunmap_unlocked(b, m)
#else
#define odl_dma_buf_vmap(b, m)		dma_buf_vmap(b, m)
#define odl_dma_buf_vunmap(b, m)	dma_buf_vunmap(b, m)
#endif

/* Both the 6.1 stable series and later kernels have the _unlocked pair. */
#define odl_dma_buf_map(a, d)		dma_buf_map_attachment_unlocked(a, d)
#define odl_dma_buf_unmap(a, s, d)	dma_buf_unmap_attachment_unlocked(a, s, d)

/* Link width became a bit mask (enum tb_link_width) in 6.5. */
static inline unsigned int odl_xd_lanes(const struct tb_xdomain *xd)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
	return xd->link_width == TB_LINK_WIDTH_DUAL ? 2 : 1;
#else
	return xd->link_width;
#endif
}

/*
 * no_llseek is gone in 6.12: a file without ->llseek is not seekable
 * (-ESPIPE), exactly what no_llseek gave before
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#define no_llseek	NULL
#endif

#endif /* ODL_TB5_COMPAT_H */
