// SPDX-License-Identifier: MIT
/* Framing helpers for the OdinLink cable link protocol. */
#include "link_msg.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void odl_hdr_encode(uint8_t out[ODL_HDR_SIZE], uint16_t type, uint32_t len)
{
	odl_put32(out, len);
	odl_put16(out + 4, type);
	odl_put16(out + 6, 0);
}

void odl_hdr_decode(const uint8_t in[ODL_HDR_SIZE], struct odl_link_hdr *h)
{
	h->len = odl_get32(in);
	h->type = odl_get16(in + 4);
	h->flags = odl_get16(in + 6);
}

static int fail(char *err, size_t errlen, const char *what, uint16_t type,
		uint32_t len)
{
	if (err && errlen)
		snprintf(err, errlen, "%s (type %u, len %u)", what, type, len);
	return -1;
}

int odl_msg_validate(uint16_t type, const uint8_t *body, uint32_t len,
		     char *err, size_t errlen)
{
	if (len > ODL_LINK_MAX_BODY)
		return fail(err, errlen, "oversized message", type, len);
	switch (type) {
	case ODL_LINK_HELLO: {
		struct odl_link_hello h;

		if (len != ODL_HELLO_SIZE)
			return fail(err, errlen, "bad HELLO size", type, len);
		odl_hello_decode(body, &h);
		if (h.magic != ODL_LINK_MAGIC) {
			if (err && errlen)
				snprintf(err, errlen, "bad HELLO magic 0x%08x",
					 h.magic);
			return -1;
		}
		if (h.version != ODL_LINK_VERSION) {
			if (err && errlen)
				snprintf(err, errlen,
					 "unsupported HELLO version %u",
					 h.version);
			return -1;
		}
		if (h.lanes < 1 || h.lanes > 2) {
			if (err && errlen)
				snprintf(err, errlen, "bad HELLO lanes %u",
					 h.lanes);
			return -1;
		}
		return 0;
	}
	case ODL_LINK_STATE:
		if (len != ODL_STATE_SIZE)
			return fail(err, errlen, "bad STATE size", type, len);
		return 0;
	case ODL_LINK_CTRL: {
		uint32_t plen;

		if (len < ODL_CTRL_SIZE + 4)
			return fail(err, errlen, "CTRL too short", type, len);
		plen = len - ODL_CTRL_SIZE;
		if (plen > ODL_LINK_MAX_CTRL)
			return fail(err, errlen, "CTRL packet too long", type,
				    len);
		if (plen % 4)
			return fail(err, errlen, "CTRL packet not whole dwords",
				    type, len);
		if (body[0] > 15)
			return fail(err, errlen, "CTRL PDF > 15", type, len);
		return 0;
	}
	case ODL_LINK_DATA:
		if (len < ODL_DATA_SIZE + 1)
			return fail(err, errlen, "DATA without payload", type,
				    len);
		if (len - ODL_DATA_SIZE > ODL_LINK_MAX_FRAME)
			return fail(err, errlen, "DATA payload > 4096", type,
				    len);
		if (body[2] > 15 || body[3] > 15)
			return fail(err, errlen, "DATA SOF/EOF PDF > 15", type,
				    len);
		return 0;
	case ODL_LINK_CREDIT:
		if (len != ODL_CREDIT_SIZE)
			return fail(err, errlen, "bad CREDIT size", type, len);
		return 0;
	case ODL_LINK_LANE:
		if (len != ODL_LANE_SIZE)
			return fail(err, errlen, "bad LANE size", type, len);
		return 0;
	default:
		return fail(err, errlen, "unknown message type", type, len);
	}
}

void odl_hello_decode(const uint8_t *b, struct odl_link_hello *h)
{
	memset(h, 0, sizeof(*h));
	h->magic = odl_get32(b);
	h->version = odl_get16(b + 4);
	h->lanes = odl_get16(b + 6);
	h->uid = odl_get64(b + 8);
	h->lane_gbps = odl_get32(b + 16);
	h->reserved = odl_get32(b + 20);
	memcpy(h->profile, b + 24, sizeof(h->profile));
	h->profile[sizeof(h->profile) - 1] = '\0';
}

void odl_hello_encode_body(uint8_t *b, const struct odl_link_hello *h)
{
	odl_put32(b, h->magic);
	odl_put16(b + 4, h->version);
	odl_put16(b + 6, h->lanes);
	odl_put64(b + 8, h->uid);
	odl_put32(b + 16, h->lane_gbps);
	odl_put32(b + 20, h->reserved);
	memset(b + 24, 0, sizeof(h->profile));
	memcpy(b + 24, h->profile, strnlen(h->profile, sizeof(h->profile) - 1));
}

void odl_state_decode(const uint8_t *b, struct odl_link_state *s)
{
	memset(s, 0, sizeof(*s));
	s->up = b[0];
	s->lanes = b[1];
	s->reserved = odl_get16(b + 2);
	s->lane_gbps = odl_get32(b + 4);
	s->peer_uid = odl_get64(b + 8);
}

void odl_state_encode_body(uint8_t *b, const struct odl_link_state *s)
{
	b[0] = s->up;
	b[1] = s->lanes;
	odl_put16(b + 2, s->reserved);
	odl_put32(b + 4, s->lane_gbps);
	odl_put64(b + 8, s->peer_uid);
}

size_t odl_build_hello(uint8_t *out, const struct odl_link_hello *h)
{
	odl_hdr_encode(out, ODL_LINK_HELLO, ODL_HELLO_SIZE);
	odl_hello_encode_body(out + ODL_HDR_SIZE, h);
	return ODL_HDR_SIZE + ODL_HELLO_SIZE;
}

size_t odl_build_state(uint8_t *out, const struct odl_link_state *s)
{
	odl_hdr_encode(out, ODL_LINK_STATE, ODL_STATE_SIZE);
	odl_state_encode_body(out + ODL_HDR_SIZE, s);
	return ODL_HDR_SIZE + ODL_STATE_SIZE;
}

size_t odl_build_ctrl(uint8_t *out, uint8_t pdf, const uint8_t *pkt, size_t plen)
{
	odl_hdr_encode(out, ODL_LINK_CTRL, (uint32_t)(ODL_CTRL_SIZE + plen));
	out[8] = pdf;
	out[9] = out[10] = out[11] = 0;
	memcpy(out + 12, pkt, plen);
	return ODL_HDR_SIZE + ODL_CTRL_SIZE + plen;
}

size_t odl_build_data(uint8_t *out, uint16_t hopid, uint8_t sof, uint8_t eof,
		      uint16_t flags, const uint8_t *payload, size_t plen)
{
	uint8_t *b = out + ODL_HDR_SIZE;

	odl_hdr_encode(out, ODL_LINK_DATA, (uint32_t)(ODL_DATA_SIZE + plen));
	odl_put16(b, hopid);
	b[2] = sof;
	b[3] = eof;
	odl_put16(b + 4, flags);
	odl_put16(b + 6, 0);
	memcpy(b + ODL_DATA_SIZE, payload, plen);
	return ODL_HDR_SIZE + ODL_DATA_SIZE + plen;
}

size_t odl_build_credit(uint8_t *out, uint16_t hopid, uint16_t credits)
{
	odl_hdr_encode(out, ODL_LINK_CREDIT, ODL_CREDIT_SIZE);
	odl_put16(out + 8, hopid);
	odl_put16(out + 10, credits);
	return ODL_HDR_SIZE + ODL_CREDIT_SIZE;
}

size_t odl_build_lane(uint8_t *out, uint8_t target_width, uint8_t lane1_enabled,
		      uint8_t bonded)
{
	odl_hdr_encode(out, ODL_LINK_LANE, ODL_LANE_SIZE);
	out[8] = target_width;
	out[9] = lane1_enabled;
	out[10] = bonded;
	out[11] = 0;
	return ODL_HDR_SIZE + ODL_LANE_SIZE;
}

uint32_t odl_crc32c(const uint8_t *p, size_t n)
{
	uint32_t crc = 0xffffffffu;

	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
	}
	return ~crc;
}

void odl_sbf(struct odl_sb *s, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (s->n == 0)
		return;
	if (s->len >= s->n - 1) {
		s->len = s->n - 1;
		return;
	}
	va_start(ap, fmt);
	r = vsnprintf(s->buf + s->len, s->n - s->len, fmt, ap);
	va_end(ap);
	if (r < 0)
		return;
	s->len += (size_t)r;
	if (s->len > s->n - 1)
		s->len = s->n - 1;
}
