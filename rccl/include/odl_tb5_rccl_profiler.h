/* SPDX-License-Identifier: MIT */
/*
 * odl_tb5_rccl_profiler.h - the network events the OdinLink RCCL/NCCL net
 * plugin reports to an NCCL profiler plugin (net plugin tables v10 and
 * later, whose init receives NCCL's profiler callback).
 *
 * For every isend, and for every entry of an irecv, that NCCL posts with a
 * non-NULL profiler handle (phandle) the plugin starts one event, in the
 * caller's thread:
 *
 *   callback(&ev, 0 (start), phandle, ODL_TB5_PROFILER_NET_ID, &descr)
 *
 * and when test() reports the request done, in that caller's thread, it
 * records the outcome and stops the event:
 *
 *   callback(&ev, 2 (update), NULL, ODL_TB5_PROFILER_NET_ID, &descr)
 *   callback(&ev, 1 (stop), NULL, 0, NULL)
 *
 * (update and stop only for an event the profiler started: ev non-NULL).
 * A request still open when its comm is closed has its events updated
 * with status ODL_TB5_PROFILE_CLOSED and stopped in closeSend/closeRecv.
 * NCCL hands the descriptor to the profiler's startEvent as the
 * ncclProfileNetPlugin event's data, with the plugin id beside it: a
 * profiler recognises these events by
 * (id & 0xffff0000) == ODL_TB5_PROFILER_NET_TYPE and reads the descriptor
 * of the version in the low 16 bits. The descriptor stays valid and
 * unchanged from start to update, and from update to stop.
 */
#ifndef ODL_TB5_RCCL_PROFILER_H
#define ODL_TB5_RCCL_PROFILER_H

#include <stdint.h>

/* NCCL's own types are 1 (IB) and 2 (socket), in the same bits */
#define ODL_TB5_PROFILER_NET_TYPE (0x0db5u << 16)
#define ODL_TB5_PROFILER_NET_VER 1u
#define ODL_TB5_PROFILER_NET_ID (ODL_TB5_PROFILER_NET_TYPE | ODL_TB5_PROFILER_NET_VER)

/* descriptor types */
enum {
	ODL_TB5_PROFILE_MSG = 1 << 0, /* one message: a send, or one entry of a receive */
};

/* the update's status of a request its comm was closed under */
#define ODL_TB5_PROFILE_CLOSED (-1)

/* how the message moves */
enum {
	ODL_TB5_PROFILE_STAGED = 0,   /* copied through the plugin's staging slots */
	ODL_TB5_PROFILE_ZERO_COPY = 1 /* straight between the registered buffer and the link */
};

typedef struct {
	uint8_t type;	 /* ODL_TB5_PROFILE_MSG */
	uint8_t is_send; /* 1: isend, 0: an irecv entry */
	uint8_t path;	 /* ODL_TB5_PROFILE_STAGED / _ZERO_COPY; a receive's is
			  * known at start, a send's at the update */
	uint8_t done;	 /* 0 at start; 1 at the update */
	int32_t device;	 /* the plugin's device index */
	int32_t tag;
	int32_t entry;	     /* the receive entry (0 for a send) */
	int32_t status;	     /* at the update: 0, the ncclResult_t the test returned,
			      * or ODL_TB5_PROFILE_CLOSED */
	uint32_t comm_id;    /* this side's comm number (as in the plugin's log lines) */
	uint32_t peer_port;  /* the peer process's port on the link */
	uint32_t reserved;
	uint64_t size;	     /* at start: the send's size or the entry's capacity;
			      * at the update: the bytes the message had */
} odl_tb5_profiler_descr_v1_t;

_Static_assert(sizeof(odl_tb5_profiler_descr_v1_t) == 40, "descriptor v1 layout");

#endif
