// SPDX-License-Identifier: MIT
/* odl-capture-dump FILE: print a cable capture (pcapng) as trace lines. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "decode.h"

static void print_msg(void *arg, uint64_t ts, int from, int to, unsigned flags,
		      const uint8_t *msg, size_t len)
{
	char line[1024];

	(void)arg;
	odl_trace_line(line, sizeof(line), ts, from, to,
		       odl_cap_note_from_flags(flags), msg, len);
	puts(line);
}

int main(int argc, char **argv)
{
	char err[128];
	FILE *f;
	int rc;

	if (argc != 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fprintf(argc == 2 ? stdout : stderr,
			"usage: odl-capture-dump FILE   (FILE from cable --capture; - for stdin)\n");
		return argc == 2 ? 0 : 2;
	}
	f = strcmp(argv[1], "-") ? fopen(argv[1], "rb") : stdin;
	if (!f) {
		fprintf(stderr, "odl-capture-dump: %s: %s\n", argv[1],
			strerror(errno));
		return 1;
	}
	rc = odl_cap_read(f, print_msg, NULL, err, sizeof(err));
	if (f != stdin)
		fclose(f);
	if (rc) {
		fprintf(stderr, "odl-capture-dump: %s: %s\n", argv[1], err);
		return 1;
	}
	return 0;
}
