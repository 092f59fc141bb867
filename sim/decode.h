/* SPDX-License-Identifier: MIT */
/*
 * Human-readable decoding of OdinLink link messages and of the USB4
 * control packets they carry. Used by the cable's trace, by
 * odl-capture-dump and by tests. All functions write a NUL-terminated
 * string into buf (truncated to n) and return strlen of the result.
 */
#ifndef ODL_DECODE_H
#define ODL_DECODE_H

#include <stddef.h>
#include <stdint.h>

/* Endpoints of a message: the two model ends and the cable itself. */
enum odl_endpoint { ODL_EP_A = 0, ODL_EP_B = 1, ODL_EP_CABLE = 2 };

const char *odl_ep_name(int ep);          /* "a", "b", "cable" */
const char *odl_type_name(unsigned type); /* "HELLO", ..., "?" */
const char *odl_pdf_name(unsigned pdf);   /* "READ", ..., "PDF?" */
const char *odl_cfg_error_name(unsigned code);
const char *odl_space_name(unsigned space); /* path adapter router counters */

/* A control packet (wire order, including CRC). pdf: the frame's PDF. */
size_t odl_decode_ctrl(char *buf, size_t n, unsigned pdf, const uint8_t *pkt,
		       size_t plen);

/* One message body of `type` (fields only, no type name). */
size_t odl_decode_body(char *buf, size_t n, unsigned type, const uint8_t *body,
		       size_t len);

/* A whole message (8-byte header + body): "TYPE fields...". */
size_t odl_decode_msg(char *buf, size_t n, const uint8_t *msg, size_t len);

/*
 * One trace line (no newline):
 *   "<sec>.<nsec> <from>-><to> [<note> ]TYPE fields"
 * note may be NULL (e.g. "DROP(link-down)").
 */
size_t odl_trace_line(char *buf, size_t n, uint64_t ts_ns, int from, int to,
		      const char *note, const uint8_t *msg, size_t len);

#endif
