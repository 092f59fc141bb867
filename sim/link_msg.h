/* SPDX-License-Identifier: MIT */
/*
 * Framing helpers for the OdinLink cable link protocol (sim/odl_link.h):
 * explicit little-endian encoding of headers and bodies, validation of a
 * received message, and builders for the messages the cable originates.
 * No I/O here; used by the cable, its tests and the capture reader.
 */
#ifndef ODL_LINK_MSG_H
#define ODL_LINK_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "odl_link.h"

#define ODL_HDR_SIZE    8u
#define ODL_HELLO_SIZE  56u
#define ODL_STATE_SIZE  16u
#define ODL_CTRL_SIZE   4u   /* struct odl_link_ctrl, before the packet */
#define ODL_DATA_SIZE   8u   /* struct odl_link_data, before the payload */
#define ODL_CREDIT_SIZE 4u
#define ODL_LANE_SIZE   4u
#define ODL_MSG_MAX     (ODL_HDR_SIZE + ODL_LINK_MAX_BODY)

_Static_assert(sizeof(struct odl_link_hdr) == ODL_HDR_SIZE, "hdr layout");
_Static_assert(sizeof(struct odl_link_hello) == ODL_HELLO_SIZE, "hello layout");
_Static_assert(sizeof(struct odl_link_state) == ODL_STATE_SIZE, "state layout");
_Static_assert(sizeof(struct odl_link_ctrl) == ODL_CTRL_SIZE, "ctrl layout");
_Static_assert(sizeof(struct odl_link_data) == ODL_DATA_SIZE, "data layout");
_Static_assert(sizeof(struct odl_link_credit) == ODL_CREDIT_SIZE, "credit layout");
_Static_assert(sizeof(struct odl_link_lane) == ODL_LANE_SIZE, "lane layout");

static inline uint16_t odl_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t odl_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static inline uint64_t odl_get64(const uint8_t *p)
{
	return (uint64_t)odl_get32(p) | ((uint64_t)odl_get32(p + 4) << 32);
}

static inline void odl_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void odl_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void odl_put64(uint8_t *p, uint64_t v)
{
	odl_put32(p, (uint32_t)v);
	odl_put32(p + 4, (uint32_t)(v >> 32));
}

/* Control packets are big-endian dwords on the wire. */
static inline uint32_t odl_get_be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	       ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline void odl_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Header <-> bytes. */
void odl_hdr_encode(uint8_t out[ODL_HDR_SIZE], uint16_t type, uint32_t len);
void odl_hdr_decode(const uint8_t in[ODL_HDR_SIZE], struct odl_link_hdr *h);

/*
 * Check the body of a received message of `type` for syntax: known type,
 * exact or bounded size, HELLO magic/version/lanes, CTRL packet size
 * (4..256 bytes, whole dwords), DATA payload size (1..4096).
 * Returns 0 if valid, -1 with a reason in err otherwise.
 */
int odl_msg_validate(uint16_t type, const uint8_t *body, uint32_t len,
		     char *err, size_t errlen);

/* Bodies <-> structs (explicit little-endian, no memcpy of structs). */
void odl_hello_decode(const uint8_t *body, struct odl_link_hello *h);
void odl_hello_encode_body(uint8_t *body, const struct odl_link_hello *h);
void odl_state_decode(const uint8_t *body, struct odl_link_state *s);
void odl_state_encode_body(uint8_t *body, const struct odl_link_state *s);

/* Whole messages (header + body) into out; return the bytes written. */
size_t odl_build_hello(uint8_t *out, const struct odl_link_hello *h);
size_t odl_build_state(uint8_t *out, const struct odl_link_state *s);
/* pkt/plen: control packet in wire order including its CRC. */
size_t odl_build_ctrl(uint8_t *out, uint8_t pdf, const uint8_t *pkt, size_t plen);
size_t odl_build_data(uint8_t *out, uint16_t hopid, uint8_t sof, uint8_t eof,
		      uint16_t flags, const uint8_t *payload, size_t plen);
size_t odl_build_credit(uint8_t *out, uint16_t hopid, uint16_t credits);
size_t odl_build_lane(uint8_t *out, uint8_t target_width, uint8_t lane1_enabled,
		      uint8_t bonded);

/* CRC-32C as USB4 control packets use it (value to store big-endian). */
uint32_t odl_crc32c(const uint8_t *p, size_t n);

/* Text into a bounded buffer: odl_sbf appends, truncating at n - 1 bytes
 * (always NUL-terminated once something was written; len never passes
 * n - 1). */
struct odl_sb {
	char *buf;
	size_t n, len;
};

void odl_sbf(struct odl_sb *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
