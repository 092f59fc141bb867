// SPDX-License-Identifier: MIT
/* Control packets: CRC-32C, parsing and building of wire images. */
#include <string.h>

#include "nhi_priv.h"

static uint32_t crc_table[256];
static int crc_ready;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[i] = c;
	}
	crc_ready = 1;
}

/* CRC-32C (Castagnoli), reflected; pass 0 to start, result is final. */
uint32_t nhi_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (!crc_ready)
		crc_init();
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static uint32_t be32_get(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void be32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

int ctl_parse(struct ctl_pkt *p, uint8_t pdf, const uint8_t *buf, size_t len)
{
	size_t nd;

	if (len < 12 || len % 4 || len > 4 * CTL_MAX_DWORDS)
		return -1;
	nd = len / 4 - 1;
	if (nhi_crc32c(0, buf, len - 4) != be32_get(buf + len - 4))
		return -2;
	p->pdf = pdf;
	p->ndw = (unsigned int)nd;
	for (size_t i = 0; i < nd; i++)
		p->dw[i] = be32_get(buf + 4 * i);
	return 0;
}

size_t ctl_build(const struct ctl_pkt *p, uint8_t *buf, size_t cap)
{
	size_t len = 4 * (size_t)p->ndw + 4;

	if (p->ndw > CTL_MAX_DWORDS - 1 || len > cap)
		return 0;
	for (unsigned int i = 0; i < p->ndw; i++)
		be32_put(buf + 4 * i, p->dw[i]);
	be32_put(buf + 4 * p->ndw, nhi_crc32c(0, buf, 4 * (size_t)p->ndw));
	return len;
}
