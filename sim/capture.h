/* SPDX-License-Identifier: MIT */
/*
 * Capture of cable traffic as pcapng: one Section Header, one Interface
 * Description (LINKTYPE_USER0 = 147, if_tsresol = 9 i.e. nanoseconds,
 * timestamps are CLOCK_MONOTONIC), and one Enhanced Packet Block per
 * message. Packet data = a 4-byte pseudo-header followed by the link
 * message exactly as on the socket (8-byte header + body):
 *   byte 0: from (0 = a, 1 = b, 2 = cable)
 *   byte 1: to   (same encoding)
 *   byte 2: flags (ODL_CAP_F_*)
 *   byte 3: 0
 * epb_flags carries the direction for generic tools: a->b outbound,
 * b->a inbound.
 */
#ifndef ODL_CAPTURE_H
#define ODL_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ODL_CAP_LINKTYPE 147u
#define ODL_CAP_F_DROP_DOWN   0x1u /* dropped: link down */
#define ODL_CAP_F_DROP_FULL   0x2u /* dropped: queue full */
#define ODL_CAP_F_DROP_FLIGHT 0x4u /* dropped: in flight at unplug */
#define ODL_CAP_F_DROP_FAULT  0x8u /* dropped by fault injection */
#define ODL_CAP_F_CORRUPT     0x10u /* delivered, corrupted by fault injection */
#define ODL_CAP_F_DELAY       0x20u /* delivered, delayed by fault injection */
#define ODL_CAP_F_TAMPER      0x40u /* delivered, tampered with (no CRC_ERR) by fault injection */

/* Writer: returns 0 or -1 (errno set). */
int odl_cap_write_header(FILE *f);
int odl_cap_write_msg(FILE *f, uint64_t ts_ns, int from, int to, unsigned flags,
		      const uint8_t *msg, size_t len);

/* Maps a cable_core note string to ODL_CAP_F_* and back. */
unsigned odl_cap_flags_from_note(const char *note);
const char *odl_cap_note_from_flags(unsigned flags);

/* Reader: calls cb for every message; returns 0, or -1 with err filled. */
typedef void (*odl_cap_cb)(void *arg, uint64_t ts_ns, int from, int to,
			   unsigned flags, const uint8_t *msg, size_t len);
int odl_cap_read(FILE *f, odl_cap_cb cb, void *arg, char *err, size_t errlen);

#endif
