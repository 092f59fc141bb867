// SPDX-License-Identifier: MIT
/*
 * odl_tb5_rccl_stats - print the OdinLink net plugin's shared statistics.
 *
 *   odl_tb5_rccl_stats [--json] [PATH]
 *
 * PATH defaults to $ODL_TB5_RCCL_STATS, else /run/odl_tb5/rccl_stats.
 * Exit status: 0 printed, 1 file missing or not a stats file (bad magic,
 * unknown version, too small).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "odl_tb5_rccl_stats.h"

#define LD(f) __atomic_load_n(&s->f, __ATOMIC_RELAXED)

int main(int argc, char **argv)
{
	const char *path = getenv(ODL_TB5_RCCL_STATS_ENV);
	int json = 0;
	struct stat st;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (argv[i][0] == '-') {
			fprintf(stderr, "usage: %s [--json] [PATH]\n", argv[0]);
			return 2;
		} else
			path = argv[i];
	}
	if (!path || !*path)
		path = ODL_TB5_RCCL_STATS_PATH;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		perror(path);
		return 1;
	}
	if ((size_t)st.st_size < sizeof(struct odl_tb5_rccl_stats)) {
		fprintf(stderr, "%s: too small for a stats file\n", path);
		return 1;
	}
	const struct odl_tb5_rccl_stats *s =
		mmap(NULL, sizeof(*s), PROT_READ, MAP_SHARED, fd, 0);
	/* processes attached right now (their liveness locks), -1 unknown */
	int live = odl_tb5_rccl_stats_live(fd);
	close(fd);
	if (s == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	if (LD(magic) != ODL_TB5_RCCL_STATS_MAGIC || s->version != ODL_TB5_RCCL_STATS_VERSION) {
		fprintf(stderr, "%s: not an odl_tb5 rccl stats file (or version %u unknown)\n", path,
			s->version);
		return 1;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	double uptime = now > LD(created_ns) ? (double)(now - LD(created_ns)) / 1e9 : 0;
	struct {
		const char *name;
		uint64_t v;
	} f[] = {
		{ "procs_attached", LD(procs_attached) }, { "last_pid", LD(last_pid) },
		{ "inits", LD(inits) }, { "tx_bytes", LD(tx_bytes) }, { "rx_bytes", LD(rx_bytes) },
		{ "tx_msgs", LD(tx_msgs) }, { "rx_msgs", LD(rx_msgs) },
		{ "op_listen", LD(op_listen) }, { "op_connect", LD(op_connect) },
		{ "op_accept", LD(op_accept) }, { "op_isend", LD(op_isend) },
		{ "op_irecv", LD(op_irecv) }, { "op_iflush", LD(op_iflush) },
		{ "op_test", LD(op_test) }, { "op_regmr", LD(op_regmr) },
		{ "op_deregmr", LD(op_deregmr) }, { "op_close", LD(op_close) },
		{ "null_requests", LD(null_requests) }, { "errors", LD(errors) },
		{ "err_bad_args", LD(err_bad_args) }, { "err_truncated", LD(err_truncated) },
		{ "err_link", LD(err_link) }, { "zc_tx_bytes", LD(zc_tx_bytes) },
		{ "zc_rx_bytes", LD(zc_rx_bytes) }, { "zc_regs", LD(zc_regs) },
		{ "zc_fallbacks", LD(zc_fallbacks) }, { "cts_urgent", LD(cts_urgent) },
		{ "idle_wakeups", LD(idle_wakeups) }, { "dmabuf_regs", LD(dmabuf_regs) },
		{ "dmabuf_imports", LD(dmabuf_imports) }, { "revivals", LD(revivals) },
		{ "pings", LD(pings) }, { "peer_lost", LD(peer_lost) },
	};
	if (json) {
		printf("{\"path\": \"%s\", \"version\": %u, \"uptime_s\": %.3f, \"procs_live\": %d", path,
		       s->version, uptime, live);
		for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
			printf(", \"%s\": %llu", f[i].name, (unsigned long long)f[i].v);
		printf("}\n");
	} else {
		printf("%-16s %s (version %u, %u bytes)\n", "file", path, s->version, s->size);
		printf("%-16s %.3f s\n", "uptime", uptime);
		printf("%-16s %d\n", "procs_live", live);
		for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
			printf("%-16s %llu\n", f[i].name, (unsigned long long)f[i].v);
	}
	return 0;
}
