// SPDX-License-Identifier: MIT
/*
 * odl-capture-sample FILE: write a cable capture holding one of every
 * message type, every control packet PDF the decoder knows (and bad ones),
 * and every capture flag. Used by sim/capture-check.sh to compare the Lua
 * dissector (sim/odl_link.lua) with the C decoder (odl-capture-dump).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "decode.h"
#include "link_msg.h"

static FILE *F;
static uint64_t T = 1000000000ull;
static int rc;

static void put(int from, int to, unsigned flags, const uint8_t *msg, size_t len)
{
	if (odl_cap_write_msg(F, T, from, to, flags, msg, len))
		rc = 1;
	T += 1234;
}

/* control packet from host-order dwords, CRC appended */
static size_t pkt(uint8_t *out, const uint32_t *dw, size_t n)
{
	for (size_t i = 0; i < n; i++)
		odl_put_be32(out + 4 * i, dw[i]);
	odl_put_be32(out + 4 * n, odl_crc32c(out, 4 * n));
	return 4 * n + 4;
}

static void ctrl(unsigned pdf, const uint32_t *dw, size_t n, int corrupt)
{
	uint8_t p[ODL_LINK_MAX_CTRL], m[ODL_MSG_MAX];
	size_t plen = pkt(p, dw, n), len;

	if (corrupt)
		p[5] ^= 0x10;
	len = odl_build_ctrl(m, (uint8_t)pdf, p, plen);
	put(ODL_EP_A, ODL_EP_B, 0, m, len);
}

static void uuid_dw(uint32_t *dw, const uint8_t u[16])
{
	for (int i = 0; i < 4; i++)
		dw[i] = odl_get32(u + 4 * i);
}

int main(int argc, char **argv)
{
	static const uint8_t xdp[16] = { 0xb6, 0x38, 0xd7, 0x0e, 0x42, 0xff,
					 0x40, 0xbb, 0x97, 0xc2, 0x90, 0xe2,
					 0xc0, 0xb2, 0xff, 0x07 };
	static const uint8_t tbip[16] = { 0xc6, 0x61, 0x89, 0xca, 0x1c, 0xce,
					  0x41, 0x95, 0xbd, 0xb8, 0x49, 0x59,
					  0x2e, 0x5f, 0x5a, 0x4f };
	static const uint8_t other[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
					   12, 13, 14, 15, 16 };
	struct odl_link_hello h;
	struct odl_link_state st;
	uint8_t m[ODL_MSG_MAX], payload[4096];
	uint32_t dw[64];
	size_t n;

	if (argc != 2) {
		fprintf(stderr, "usage: odl-capture-sample FILE\n");
		return 2;
	}
	F = fopen(argv[1], "wb");
	if (!F || odl_cap_write_header(F)) {
		fprintf(stderr, "odl-capture-sample: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)i;

	/* HELLO, STATE */
	memset(&h, 0, sizeof(h));
	h.magic = ODL_LINK_MAGIC;
	h.version = ODL_LINK_VERSION;
	h.lanes = 2;
	h.uid = 0x8086a0b1c2d3e4f5ull;
	h.lane_gbps = 40;
	strcpy(h.profile, "intel-barlow-ridge");
	put(ODL_EP_A, ODL_EP_CABLE, 0, m, odl_build_hello(m, &h));
	h.magic = 0xdeadbeef;
	put(ODL_EP_B, ODL_EP_CABLE, 0, m, odl_build_hello(m, &h));
	memset(&st, 0, sizeof(st));
	put(ODL_EP_CABLE, ODL_EP_A, 0, m, odl_build_state(m, &st));
	st.up = 1;
	st.lanes = 2;
	st.lane_gbps = 40;
	st.peer_uid = 0x1234;
	put(ODL_EP_CABLE, ODL_EP_B, 0, m, odl_build_state(m, &st));

	/* CTRL: READ (plain, route high + cm), WRITE with data */
	dw[0] = 0; dw[1] = 0; dw[2] = (2u << 25) | (1u << 13);
	ctrl(1, dw, 3, 0);
	dw[0] = 0x80000001u; dw[1] = 0x00000302u;
	dw[2] = (3u << 27) | (1u << 25) | (5u << 19) | (2u << 13) | 0x39;
	ctrl(1, dw, 3, 0);
	dw[0] = 0; dw[1] = 0x301;
	dw[2] = (1u << 27) | (1u << 25) | (3u << 19) | (2u << 13) | 0x39;
	dw[3] = 0x11223344; dw[4] = 0x55667788;
	ctrl(2, dw, 5, 0);
	for (int i = 3; i < 12; i++)
		dw[i] = 0x01010101u * (uint32_t)i;
	dw[2] = (0u << 25) | (8u << 19) | (9u << 13) | 0x10;
	ctrl(2, dw, 12, 0);
	/* ERROR (with pg), NOTIFY_ACK, EVENT plug and unplug */
	dw[0] = 0; dw[1] = 1; dw[2] = (3u << 8) | 2u;
	ctrl(3, dw, 3, 0);
	dw[2] = (3u << 30) | (1u << 8) | 7u;
	ctrl(3, dw, 3, 0);
	dw[2] = (2u << 8) | 38u;
	ctrl(4, dw, 3, 0);
	dw[2] = 0x80000000u | 5u;
	ctrl(5, dw, 3, 0);
	dw[2] = 1;
	ctrl(5, dw, 3, 0);
	/* XDomain: discovery (UUID_REQUEST), ThunderboltIP LOGIN, other */
	dw[0] = 0x80000000u; dw[1] = 1; dw[2] = 5u | (1u << 27);
	uuid_dw(dw + 3, xdp);
	dw[7] = 12;
	ctrl(6, dw, 8, 0);
	dw[2] = 17u | (2u << 27);
	uuid_dw(dw + 3, tbip);
	for (int i = 7; i < 15; i++)
		dw[i] = (uint32_t)i;
	dw[15] = 0; dw[16] = 42;
	ctrl(6, dw, 17, 0);
	dw[15] = 1;
	ctrl(7, dw, 19, 0);
	uuid_dw(dw + 3, other);
	dw[7] = 99;
	ctrl(7, dw, 8, 0);
	dw[2] = 2;
	ctrl(6, dw, 4, 0); /* too short for a UUID */
	/* others: OVERRIDE, RESET, unknown PDF; a bad CRC; malformed */
	for (int i = 2; i < 9; i++)
		dw[i] = 0xa0000000u | (uint32_t)i;
	ctrl(8, dw, 9, 0);
	ctrl(9, dw, 3, 0);
	ctrl(14, dw, 4, 0);
	dw[0] = 0; dw[1] = 0; dw[2] = (2u << 25) | (1u << 13);
	ctrl(1, dw, 3, 1);
	{
		uint8_t p[8] = { 0, 0, 0, 0, 1, 2, 3, 4 };

		put(ODL_EP_B, ODL_EP_A, 0, m, odl_build_ctrl(m, 1, p, 8));
	}

	/* DATA: plain, CRC error, other flags, one byte, a full frame */
	put(ODL_EP_A, ODL_EP_B, 0, m, odl_build_data(m, 8, 1, 2, 0, payload, 40));
	put(ODL_EP_B, ODL_EP_A, ODL_CAP_F_CORRUPT, m,
	    odl_build_data(m, 9, 0, 0, ODL_LINK_DATA_CRC_ERR, payload, 3));
	put(ODL_EP_B, ODL_EP_A, 0, m, odl_build_data(m, 10, 0, 3, 0x6, payload, 1));
	put(ODL_EP_A, ODL_EP_B, ODL_CAP_F_DELAY, m,
	    odl_build_data(m, 2047, 1, 3, 0, payload, 4096));
	/* CREDIT, LANE */
	put(ODL_EP_B, ODL_EP_A, 0, m, odl_build_credit(m, 8, 16));
	put(ODL_EP_A, ODL_EP_B, 0, m, odl_build_lane(m, 3, 1, 1));
	/* every drop / fault flag */
	n = odl_build_data(m, 8, 1, 2, 0, payload, 16);
	put(ODL_EP_A, ODL_EP_B, ODL_CAP_F_DROP_DOWN, m, n);
	put(ODL_EP_A, ODL_EP_B, ODL_CAP_F_DROP_FULL, m, n);
	put(ODL_EP_A, ODL_EP_B, ODL_CAP_F_DROP_FLIGHT, m, n);
	put(ODL_EP_A, ODL_EP_B, ODL_CAP_F_DROP_FAULT, m, n);
	put(ODL_EP_A, ODL_EP_B, ODL_CAP_F_CORRUPT | ODL_CAP_F_DELAY, m, n);
	put(ODL_EP_B, ODL_EP_A, ODL_CAP_F_TAMPER, m, n);
	put(ODL_EP_B, ODL_EP_A, ODL_CAP_F_DROP_FAULT, m, odl_build_credit(m, 8, 4));
	/* unknown type, header flags, header length != body */
	odl_hdr_encode(m, 77, 2);
	m[8] = 0xaa;
	m[9] = 0xbb;
	put(ODL_EP_A, ODL_EP_B, 0, m, 10);
	n = odl_build_credit(m, 3, 1);
	odl_put16(m + 6, 0x8001);
	put(ODL_EP_A, ODL_EP_B, 0, m, n);
	n = odl_build_lane(m, 1, 0, 0);
	odl_put32(m, 8);
	put(ODL_EP_A, ODL_EP_B, 0, m, n);

	if (fclose(F) || rc) {
		fprintf(stderr, "odl-capture-sample: write failed\n");
		return 1;
	}
	return 0;
}
