/* SPDX-License-Identifier: MIT */
/*
 * OdinLink cable link protocol: the messages exchanged between a USB4 NHI
 * model (hw-model/core) and the cable program (sim/cable) over a UNIX
 * stream socket. Documented in docs/link-protocol.md.
 *
 * Every message is a fixed 8-byte header followed by `len` body bytes.
 * All multi-byte integers in headers and bodies are little-endian.
 * Control packets are carried exactly as they sit on the USB4 wire
 * (big-endian dwords followed by the big-endian CRC-32C).
 */
#ifndef ODL_LINK_H
#define ODL_LINK_H

#include <stdint.h>

#define ODL_LINK_MAGIC    0x4b4c444fu /* "ODLK" little-endian */
#define ODL_LINK_VERSION  1u
#define ODL_LINK_MAX_BODY 8192u       /* larger bodies are a protocol error */
#define ODL_LINK_MAX_FRAME 4096u      /* payload of one data frame */
#define ODL_LINK_MAX_CTRL 256u        /* control packet incl. CRC */

enum odl_link_type {
	ODL_LINK_HELLO  = 1, /* model -> cable, first message: odl_link_hello */
	ODL_LINK_STATE  = 2, /* cable -> model: odl_link_state */
	ODL_LINK_CTRL   = 3, /* both ways: odl_link_ctrl + packet bytes */
	ODL_LINK_DATA   = 4, /* both ways: odl_link_data + payload */
	ODL_LINK_CREDIT = 5, /* both ways: odl_link_credit (E2E credit grant) */
	ODL_LINK_LANE   = 6, /* both ways: odl_link_lane (lane configuration) */
};

struct odl_link_hdr {
	uint32_t len;   /* body bytes that follow */
	uint16_t type;  /* enum odl_link_type */
	uint16_t flags; /* 0; reserved */
};

struct odl_link_hello {
	uint32_t magic;       /* ODL_LINK_MAGIC */
	uint16_t version;     /* ODL_LINK_VERSION */
	uint16_t lanes;       /* lanes the port supports (1 or 2) */
	uint64_t uid;         /* router UID of the sending host */
	uint32_t lane_gbps;   /* per-lane rate the port supports */
	uint32_t reserved;
	char profile[32];     /* NUL-terminated profile name */
};

/* Link state the cable imposes on a model. */
struct odl_link_state {
	uint8_t up;           /* 1: link trained, 0: unplugged */
	uint8_t lanes;        /* lanes usable on the link */
	uint16_t reserved;
	uint32_t lane_gbps;   /* per-lane rate of the trained link */
	uint64_t peer_uid;    /* UID of the host at the other end, 0 if none */
};

struct odl_link_ctrl {
	uint8_t pdf;          /* packet type (PDF) */
	uint8_t reserved[3];
	/* followed by the packet bytes, wire order, including CRC-32C */
};

#define ODL_LINK_DATA_CRC_ERR 0x1u /* frame arrived corrupted */

struct odl_link_data {
	uint16_t hopid;       /* HopID on the link */
	uint8_t sof;          /* start-of-frame PDF */
	uint8_t eof;          /* end-of-frame PDF */
	uint16_t flags;       /* ODL_LINK_DATA_* */
	uint16_t reserved;
	/* followed by the frame payload, 1..4096 bytes */
};

struct odl_link_credit {
	uint16_t hopid;       /* HopID (on the link) of the path being credited */
	uint16_t credits;     /* frames the receiver can now accept in addition */
};

struct odl_link_lane {
	uint8_t target_width; /* lane-0 target width field of the sender (1 or 3) */
	uint8_t lane1_enabled;/* sender's lane-1 adapter is not disabled (LD clear) */
	uint8_t bonded;       /* sender's lane-0 LB bit */
	uint8_t reserved;
};

#endif
