// SPDX-License-Identifier: MIT
/* pcapng capture of cable traffic: see capture.h. */
#include "capture.h"

#include <stdlib.h>
#include <string.h>

#include "cable_core.h"
#include "link_msg.h"

#define BT_SHB 0x0a0d0d0au
#define BT_IDB 0x00000001u
#define BT_EPB 0x00000006u
#define BOM    0x1a2b3c4du

static int put(FILE *f, const void *p, size_t n)
{
	return fwrite(p, 1, n, f) == n ? 0 : -1;
}

static int put32(FILE *f, uint32_t v)
{
	uint8_t b[4];

	odl_put32(b, v);
	return put(f, b, 4);
}

int odl_cap_write_header(FILE *f)
{
	static const char ifname[] = "odl-cable"; /* 9 chars -> pad to 12 */
	uint8_t b[64];
	size_t k = 0;

	/* Section Header Block: 28 bytes, no options. */
	odl_put32(b + 0, BT_SHB);
	odl_put32(b + 4, 28);
	odl_put32(b + 8, BOM);
	odl_put16(b + 12, 1);
	odl_put16(b + 14, 0);
	odl_put64(b + 16, UINT64_MAX); /* section length unknown */
	odl_put32(b + 24, 28);
	if (put(f, b, 28))
		return -1;

	/* Interface Description Block with if_name and if_tsresol. */
	memset(b, 0, sizeof(b));
	odl_put32(b + 0, BT_IDB);
	odl_put16(b + 8, ODL_CAP_LINKTYPE);
	odl_put16(b + 10, 0);
	odl_put32(b + 12, 0); /* snaplen: none */
	k = 16;
	odl_put16(b + k, 2); /* if_name */
	odl_put16(b + k + 2, sizeof(ifname) - 1);
	memcpy(b + k + 4, ifname, sizeof(ifname) - 1);
	k += 4 + 12;
	odl_put16(b + k, 9); /* if_tsresol */
	odl_put16(b + k + 2, 1);
	b[k + 4] = 9;        /* 10^-9 */
	k += 8;
	odl_put32(b + k, 0); /* opt_endofopt */
	k += 4;
	k += 4; /* trailing length */
	odl_put32(b + 4, (uint32_t)k);
	odl_put32(b + k - 4, (uint32_t)k);
	return put(f, b, k);
}

int odl_cap_write_msg(FILE *f, uint64_t ts_ns, int from, int to, unsigned flags,
		      const uint8_t *msg, size_t len)
{
	uint8_t pseudo[4] = { (uint8_t)from, (uint8_t)to, (uint8_t)flags, 0 };
	size_t caplen = 4 + len;
	size_t pad = (4 - caplen % 4) % 4;
	size_t total = 28 + caplen + pad + 12 + 4;
	uint32_t dir = 0;
	static const uint8_t zero[4];

	if (from == ODL_EP_A && to == ODL_EP_B)
		dir = 2; /* outbound */
	else if (from == ODL_EP_B && to == ODL_EP_A)
		dir = 1; /* inbound */
	if (put32(f, BT_EPB) || put32(f, (uint32_t)total) || put32(f, 0) ||
	    put32(f, (uint32_t)(ts_ns >> 32)) || put32(f, (uint32_t)ts_ns) ||
	    put32(f, (uint32_t)caplen) || put32(f, (uint32_t)caplen) ||
	    put(f, pseudo, 4) || put(f, msg, len) || put(f, zero, pad) ||
	    put32(f, 2u | (4u << 16)) || put32(f, dir) || put32(f, 0) ||
	    put32(f, (uint32_t)total))
		return -1;
	return 0;
}

unsigned odl_cap_flags_from_note(const char *note)
{
	if (!note)
		return 0;
	if (!strcmp(note, CABLE_NOTE_DROP_DOWN))
		return ODL_CAP_F_DROP_DOWN;
	if (!strcmp(note, CABLE_NOTE_DROP_FULL))
		return ODL_CAP_F_DROP_FULL;
	if (!strcmp(note, CABLE_NOTE_DROP_FLIGHT))
		return ODL_CAP_F_DROP_FLIGHT;
	if (!strcmp(note, CABLE_NOTE_DROP_FAULT))
		return ODL_CAP_F_DROP_FAULT;
	if (!strcmp(note, CABLE_NOTE_FAULT_CORRUPT))
		return ODL_CAP_F_CORRUPT;
	if (!strcmp(note, CABLE_NOTE_FAULT_DELAY))
		return ODL_CAP_F_DELAY;
	if (!strcmp(note, CABLE_NOTE_FAULT_CORRUPT_DELAY))
		return ODL_CAP_F_CORRUPT | ODL_CAP_F_DELAY;
	if (!strcmp(note, CABLE_NOTE_FAULT_TAMPER))
		return ODL_CAP_F_TAMPER;
	if (!strcmp(note, CABLE_NOTE_FAULT_TAMPER_DELAY))
		return ODL_CAP_F_TAMPER | ODL_CAP_F_DELAY;
	return 0;
}

const char *odl_cap_note_from_flags(unsigned flags)
{
	if (flags & ODL_CAP_F_DROP_DOWN)
		return CABLE_NOTE_DROP_DOWN;
	if (flags & ODL_CAP_F_DROP_FULL)
		return CABLE_NOTE_DROP_FULL;
	if (flags & ODL_CAP_F_DROP_FLIGHT)
		return CABLE_NOTE_DROP_FLIGHT;
	if (flags & ODL_CAP_F_DROP_FAULT)
		return CABLE_NOTE_DROP_FAULT;
	if ((flags & (ODL_CAP_F_CORRUPT | ODL_CAP_F_DELAY)) ==
	    (ODL_CAP_F_CORRUPT | ODL_CAP_F_DELAY))
		return CABLE_NOTE_FAULT_CORRUPT_DELAY;
	if (flags & ODL_CAP_F_CORRUPT)
		return CABLE_NOTE_FAULT_CORRUPT;
	if ((flags & (ODL_CAP_F_TAMPER | ODL_CAP_F_DELAY)) ==
	    (ODL_CAP_F_TAMPER | ODL_CAP_F_DELAY))
		return CABLE_NOTE_FAULT_TAMPER_DELAY;
	if (flags & ODL_CAP_F_TAMPER)
		return CABLE_NOTE_FAULT_TAMPER;
	if (flags & ODL_CAP_F_DELAY)
		return CABLE_NOTE_FAULT_DELAY;
	return NULL;
}

static int rfail(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
	return -1;
}

int odl_cap_read(FILE *f, odl_cap_cb cb, void *arg, char *err, size_t errlen)
{
	uint8_t hdr[8];
	uint8_t *blk = NULL;
	unsigned tsres = 6; /* pcapng default: microseconds */
	int seen_shb = 0, ret = 0;

	for (;;) {
		size_t got = fread(hdr, 1, 8, f);
		uint32_t type, total;

		if (got == 0)
			break;
		if (got != 8) {
			ret = rfail(err, errlen, "truncated block header");
			break;
		}
		type = odl_get32(hdr);
		total = odl_get32(hdr + 4);
		if (type == BT_SHB && total == 0x1c0d0d0au) {
			ret = rfail(err, errlen,
				    "big-endian capture not supported");
			break;
		}
		if (total < 12 || total % 4 || total > (1u << 24)) {
			ret = rfail(err, errlen, "bad block length");
			break;
		}
		free(blk);
		blk = malloc(total);
		if (!blk) {
			ret = rfail(err, errlen, "out of memory");
			break;
		}
		memcpy(blk, hdr, 8);
		if (fread(blk + 8, 1, total - 8, f) != total - 8) {
			ret = rfail(err, errlen, "truncated block");
			break;
		}
		if (type == BT_SHB) {
			if (total < 28 || odl_get32(blk + 8) != BOM) {
				ret = rfail(err, errlen, "bad section header");
				break;
			}
			seen_shb = 1;
			tsres = 6;
		} else if (!seen_shb) {
			ret = rfail(err, errlen, "not a pcapng file");
			break;
		} else if (type == BT_IDB) {
			size_t k = 16;

			if (total < 20 || odl_get16(blk + 8) != ODL_CAP_LINKTYPE) {
				ret = rfail(err, errlen,
					    "interface is not an OdinLink capture");
				break;
			}
			while (k + 4 <= total - 4) {
				unsigned code = odl_get16(blk + k);
				unsigned olen = odl_get16(blk + k + 2);

				if (code == 0)
					break;
				if (code == 9 && olen >= 1 && k + 5 <= total - 4)
					tsres = blk[k + 4];
				k += 4 + ((olen + 3u) & ~3u);
			}
		} else if (type == BT_EPB) {
			uint64_t ts;
			uint32_t caplen;

			if (total < 32) {
				ret = rfail(err, errlen, "short packet block");
				break;
			}
			ts = ((uint64_t)odl_get32(blk + 12) << 32) |
			     odl_get32(blk + 16);
			caplen = odl_get32(blk + 20);
			if (caplen < 4 || 28 + (size_t)caplen + 4 > total) {
				ret = rfail(err, errlen, "bad packet length");
				break;
			}
			if (tsres == 6)
				ts *= 1000u;
			else if (tsres != 9) {
				ret = rfail(err, errlen,
					    "unsupported timestamp resolution");
				break;
			}
			cb(arg, ts, blk[28], blk[29], blk[30], blk + 32,
			   caplen - 4);
		}
		/* other block types are skipped */
	}
	free(blk);
	if (!ret && !seen_shb)
		ret = rfail(err, errlen, "empty or not a pcapng file");
	return ret;
}
