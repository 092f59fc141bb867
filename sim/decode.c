// SPDX-License-Identifier: MIT
/* Human-readable decoding of OdinLink link messages and USB4 control packets. */
#include "decode.h"

#include <stdio.h>
#include <string.h>

#include "link_msg.h"

static void sb_init(struct odl_sb *s, char *buf, size_t n)
{
	s->buf = buf;
	s->n = n;
	s->len = 0;
	if (n)
		buf[0] = '\0';
}

const char *odl_ep_name(int ep)
{
	switch (ep) {
	case ODL_EP_A: return "a";
	case ODL_EP_B: return "b";
	case ODL_EP_CABLE: return "cable";
	default: return "?";
	}
}

const char *odl_type_name(unsigned type)
{
	static const char *const names[] = {
		[ODL_LINK_HELLO] = "HELLO", [ODL_LINK_STATE] = "STATE",
		[ODL_LINK_CTRL] = "CTRL",   [ODL_LINK_DATA] = "DATA",
		[ODL_LINK_CREDIT] = "CREDIT", [ODL_LINK_LANE] = "LANE",
	};

	if (type < sizeof(names) / sizeof(names[0]) && names[type])
		return names[type];
	return "?";
}

const char *odl_pdf_name(unsigned pdf)
{
	static const char *const names[] = {
		[1] = "READ", [2] = "WRITE", [3] = "ERROR", [4] = "NOTIFY_ACK",
		[5] = "EVENT", [6] = "XDOMAIN_REQ", [7] = "XDOMAIN_RESP",
		[8] = "OVERRIDE", [9] = "RESET", [10] = "ICM_EVENT",
		[11] = "ICM_CMD", [12] = "ICM_RESP", [13] = "PREPARE_TO_SLEEP",
	};

	if (pdf < sizeof(names) / sizeof(names[0]) && names[pdf])
		return names[pdf];
	return "PDF?";
}

const char *odl_cfg_error_name(unsigned code)
{
	switch (code) {
	case 0: return "PORT_NOT_CONNECTED";
	case 1: return "LINK_ERROR";
	case 2: return "INVALID_CONFIG_SPACE";
	case 4: return "NO_SUCH_PORT";
	case 7: return "ACK_PLUG_EVENT";
	case 8: return "LOOP";
	case 12: return "HEC_ERROR_DETECTED";
	case 13: return "FLOW_CONTROL_ERROR";
	case 15: return "LOCK";
	case 32: return "DP_BW";
	case 33: return "ROP_CMPLT";
	case 34: return "POP_CMPLT";
	case 35: return "PCIE_WAKE";
	case 36: return "DP_CON_CHANGE";
	case 37: return "DPTX_DISCOVERY";
	case 38: return "LINK_RECOVERY";
	case 39: return "ASYM_LINK";
	default: return "?";
	}
}

const char *odl_space_name(unsigned space)
{
	static const char *const names[] = { "path", "adapter", "router",
					     "counters" };
	return names[space & 3];
}

/*
 * UUIDs in XDomain packets: the sender's uuid_t bytes are reinterpreted as
 * CPU (little-endian) dwords and sent big-endian, so byte k of dword i on
 * the wire is uuid byte 4*i + 3 - k.
 */
static void uuid_from_wire(const uint8_t *w, uint8_t u[16])
{
	for (int i = 0; i < 4; i++)
		for (int k = 0; k < 4; k++)
			u[4 * i + k] = w[4 * i + 3 - k];
}

static void sb_uuid(struct odl_sb *s, const uint8_t u[16])
{
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			odl_sbf(s, "-");
		odl_sbf(s, "%02x", u[i]);
	}
}

static const uint8_t uuid_xdp[16] = { 0xb6, 0x38, 0xd7, 0x0e, 0x42, 0xff,
				      0x40, 0xbb, 0x97, 0xc2, 0x90, 0xe2,
				      0xc0, 0xb2, 0xff, 0x07 };
static const uint8_t uuid_tbip[16] = { 0xc6, 0x61, 0x89, 0xca, 0x1c, 0xce,
				       0x41, 0x95, 0xbd, 0xb8, 0x49, 0x59,
				       0x2e, 0x5f, 0x5a, 0x4f };

static const char *xdp_type_name(uint32_t t)
{
	switch (t) {
	case 1: return "UUID_REQUEST_OLD";
	case 2: return "UUID_RESPONSE";
	case 3: return "PROPERTIES_REQUEST";
	case 4: return "PROPERTIES_RESPONSE";
	case 5: return "PROPERTIES_CHANGED_REQUEST";
	case 6: return "PROPERTIES_CHANGED_RESPONSE";
	case 7: return "ERROR_RESPONSE";
	case 12: return "UUID_REQUEST";
	case 15: return "LINK_STATE_STATUS_REQUEST";
	case 16: return "LINK_STATE_STATUS_RESPONSE";
	case 17: return "LINK_STATE_CHANGE_REQUEST";
	case 18: return "LINK_STATE_CHANGE_RESPONSE";
	default: return "?";
	}
}

static const char *tbip_type_name(uint32_t t)
{
	switch (t) {
	case 0: return "LOGIN";
	case 1: return "LOGIN_RESPONSE";
	case 2: return "LOGOUT";
	case 3: return "STATUS";
	default: return "?";
	}
}

static void sb_hex(struct odl_sb *s, const uint8_t *p, size_t n, size_t max)
{
	size_t k = n < max ? n : max;

	for (size_t i = 0; i < k; i++)
		odl_sbf(s, "%02x", p[i]);
	if (n > max)
		odl_sbf(s, "...");
}

size_t odl_decode_ctrl(char *buf, size_t n, unsigned pdf, const uint8_t *pkt,
		       size_t plen)
{
	struct odl_sb s;
	size_t nd = plen / 4; /* dwords including the CRC */
	uint32_t d[64];

	sb_init(&s, buf, n);
	odl_sbf(&s, "%s", odl_pdf_name(pdf));
	if (plen < 12 || plen % 4) {
		odl_sbf(&s, " malformed len=%zu raw=", plen);
		sb_hex(&s, pkt, plen, 32);
		return s.len;
	}
	if (nd > 64)
		nd = 64;
	for (size_t i = 0; i < nd; i++)
		d[i] = odl_get_be32(pkt + 4 * i);
	/* nd >= 3: two header dwords, at least one more, the last is CRC. */
	uint64_t route = ((uint64_t)(d[0] & 0x3fffff) << 32) | d[1];
	size_t body_dw = nd - 1; /* dwords before the CRC */

	odl_sbf(&s, " route=0x%llx", (unsigned long long)route);
	if (d[0] & 0x80000000u)
		odl_sbf(&s, " cm");

	switch (pdf) {
	case 1: /* READ */
	case 2: /* WRITE */
		if (body_dw >= 3) {
			uint32_t a = d[2];

			odl_sbf(&s, " space=%s port=%u offset=0x%x len=%u seq=%u",
				  odl_space_name((a >> 25) & 3),
				  (a >> 19) & 0x3f, a & 0x1fff,
				  (a >> 13) & 0x3f, (a >> 27) & 3);
			if (body_dw > 3) {
				odl_sbf(&s, " data=");
				for (size_t i = 3; i < body_dw && i < 7; i++)
					odl_sbf(&s, "%s%08x", i > 3 ? "," : "",
						  d[i]);
				if (body_dw > 7)
					odl_sbf(&s, ",...(%zu dw)", body_dw - 3);
			}
		}
		break;
	case 3: /* ERROR */
	case 4: /* NOTIFY_ACK */
		if (body_dw >= 3) {
			unsigned code = d[2] & 0xff;

			odl_sbf(&s, " code=%u(%s) port=%u", code,
				  odl_cfg_error_name(code), (d[2] >> 8) & 0x3f);
			if (d[2] >> 30)
				odl_sbf(&s, " pg=%u", d[2] >> 30);
		}
		break;
	case 5: /* EVENT */
		if (body_dw >= 3)
			odl_sbf(&s, " port=%u unplug=%u", d[2] & 0x3f,
				  d[2] >> 31);
		break;
	case 6: /* XDOMAIN_REQ */
	case 7: /* XDOMAIN_RESP */
		if (body_dw >= 3)
			odl_sbf(&s, " len=%u sn=%u", d[2] & 0x3f,
				  (d[2] >> 27) & 3);
		if (body_dw >= 8) {
			uint8_t u[16];

			uuid_from_wire(pkt + 12, u);
			odl_sbf(&s, " uuid=");
			sb_uuid(&s, u);
			if (!memcmp(u, uuid_xdp, 16)) {
				odl_sbf(&s, "(xdp) type=%u(%s)", d[7],
					  xdp_type_name(d[7]));
			} else if (!memcmp(u, uuid_tbip, 16)) {
				odl_sbf(&s, "(tbip)");
				if (body_dw >= 17)
					odl_sbf(&s, " type=%u(%s) cmd=%u",
						  d[15], tbip_type_name(d[15]),
						  d[16]);
			} else {
				odl_sbf(&s, " type=%u", d[7]);
			}
		}
		break;
	default:
		if (body_dw > 2) {
			odl_sbf(&s, " dw=");
			for (size_t i = 2; i < body_dw && i < 6; i++)
				odl_sbf(&s, "%s%08x", i > 2 ? "," : "", d[i]);
			if (body_dw > 6)
				odl_sbf(&s, ",...");
		}
		break;
	}
	{
		uint32_t want = odl_crc32c(pkt, plen - 4);
		uint32_t got = odl_get_be32(pkt + plen - 4);

		if (want == got)
			odl_sbf(&s, " crc=ok");
		else
			odl_sbf(&s, " crc=BAD(%08x!=%08x)", got, want);
	}
	return s.len;
}

size_t odl_decode_body(char *buf, size_t n, unsigned type, const uint8_t *b,
		       size_t len)
{
	struct odl_sb s;

	sb_init(&s, buf, n);
	switch (type) {
	case ODL_LINK_HELLO:
		if (len >= ODL_HELLO_SIZE) {
			struct odl_link_hello h;

			odl_hello_decode(b, &h);
			odl_sbf(&s, "magic=%s version=%u lanes=%u uid=0x%016llx "
				  "lane_gbps=%u profile=\"%s\"",
				  h.magic == ODL_LINK_MAGIC ? "ok" : "BAD",
				  h.version, h.lanes, (unsigned long long)h.uid,
				  h.lane_gbps, h.profile);
			return s.len;
		}
		break;
	case ODL_LINK_STATE:
		if (len >= ODL_STATE_SIZE) {
			struct odl_link_state st;

			odl_state_decode(b, &st);
			odl_sbf(&s, "up=%u lanes=%u lane_gbps=%u peer_uid=0x%016llx",
				  st.up, st.lanes, st.lane_gbps,
				  (unsigned long long)st.peer_uid);
			return s.len;
		}
		break;
	case ODL_LINK_CTRL:
		if (len >= ODL_CTRL_SIZE)
			return odl_decode_ctrl(buf, n, b[0], b + ODL_CTRL_SIZE,
					       len - ODL_CTRL_SIZE);
		break;
	case ODL_LINK_DATA:
		if (len >= ODL_DATA_SIZE) {
			uint16_t fl = odl_get16(b + 4);

			odl_sbf(&s, "hop=%u sof=%u eof=%u len=%zu", odl_get16(b),
				  b[2], b[3], len - ODL_DATA_SIZE);
			if (fl & ODL_LINK_DATA_CRC_ERR)
				odl_sbf(&s, " crc_err");
			if (fl & ~ODL_LINK_DATA_CRC_ERR)
				odl_sbf(&s, " flags=0x%x", fl);
			odl_sbf(&s, " data=");
			sb_hex(&s, b + ODL_DATA_SIZE, len - ODL_DATA_SIZE, 16);
			return s.len;
		}
		break;
	case ODL_LINK_CREDIT:
		if (len >= ODL_CREDIT_SIZE) {
			odl_sbf(&s, "hop=%u credits=%u%s", odl_get16(b),
				  odl_get16(b + 2),
				  odl_get16(b + 2) ? "" : " (sync)");
			return s.len;
		}
		break;
	case ODL_LINK_LANE:
		if (len >= ODL_LANE_SIZE) {
			odl_sbf(&s, "target_width=%u lane1_enabled=%u bonded=%u",
				  b[0], b[1], b[2]);
			return s.len;
		}
		break;
	default:
		break;
	}
	odl_sbf(&s, "len=%zu raw=", len);
	sb_hex(&s, b, len, 32);
	return s.len;
}

size_t odl_decode_msg(char *buf, size_t n, const uint8_t *msg, size_t len)
{
	struct odl_sb s;
	struct odl_link_hdr h;
	size_t blen;

	sb_init(&s, buf, n);
	if (len < ODL_HDR_SIZE) {
		odl_sbf(&s, "TRUNCATED len=%zu", len);
		return s.len;
	}
	odl_hdr_decode(msg, &h);
	blen = len - ODL_HDR_SIZE;
	odl_sbf(&s, "%s", odl_type_name(h.type));
	if (h.type == 0 || !strcmp(odl_type_name(h.type), "?"))
		odl_sbf(&s, "(%u)", h.type);
	if (h.flags)
		odl_sbf(&s, " hflags=0x%x", h.flags);
	if (h.len != blen)
		odl_sbf(&s, " (hdr len %u, have %zu)", h.len, blen);
	if (blen > h.len)
		blen = h.len;
	odl_sbf(&s, " ");
	if (s.len < s.n)
		s.len += odl_decode_body(s.buf + s.len, s.n - s.len, h.type,
					 msg + ODL_HDR_SIZE, blen);
	return s.len;
}

size_t odl_trace_line(char *buf, size_t n, uint64_t ts_ns, int from, int to,
		      const char *note, const uint8_t *msg, size_t len)
{
	struct odl_sb s;
	char dir[16];

	sb_init(&s, buf, n);
	snprintf(dir, sizeof(dir), "%s->%s", odl_ep_name(from), odl_ep_name(to));
	odl_sbf(&s, "%llu.%09llu %-8s ",
		  (unsigned long long)(ts_ns / 1000000000u),
		  (unsigned long long)(ts_ns % 1000000000u), dir);
	if (note && *note)
		odl_sbf(&s, "%s ", note);
	if (s.len < s.n)
		s.len += odl_decode_msg(s.buf + s.len, s.n - s.len, msg, len);
	return s.len;
}
