/* SPDX-License-Identifier: MIT */
/*
 * One pause in a busy-wait loop, shared by libodl_tb5 and the net plugin
 * (rccl/): the CPU's spin hint (x86 pause, arm64 yield), a compiler
 * barrier elsewhere.
 */
#ifndef ODL_RELAX_H
#define ODL_RELAX_H

#include <stdatomic.h>

static inline void odl_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

#endif
