// SPDX-License-Identifier: MIT
/*
 * odl_tb5_rccl_stats - print the OdinLink net plugin's shared statistics.
 *
 *   odl_tb5_rccl_stats [--json] [PATH]
 *   odl_tb5_rccl_stats --watch SECONDS [--count N] [--json] [PATH]
 *   odl_tb5_rccl_stats --layout
 *
 * PATH defaults to $ODL_TB5_RCCL_STATS, else /run/odl_tb5/rccl_stats.
 * --watch prints, every SECONDS (0.05 .. 3600), what changed in that
 * interval: the rates of the traffic counters and the increase of the
 * others, one line per interval (a JSON object per line with --json), N
 * intervals (0, the default: until interrupted). --layout prints the
 * struct's size and each field's offset and width as JSON, for readers in
 * other languages.
 * Exit status: 0 printed, 1 file missing or not a stats file (bad magic,
 * unknown version, too small), 2 bad arguments.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "odl_tb5_rccl_stats.h"

#define FLD(f)                                                                         \
	{ #f, offsetof(struct odl_tb5_rccl_stats, f),                                 \
	  sizeof(((struct odl_tb5_rccl_stats *)0)->f) }

/* the counters, in the order they are printed */
static const struct field {
	const char *name;
	size_t off, width;
} g_fields[] = {
	FLD(procs_attached), FLD(last_pid),	 FLD(inits),	     FLD(tx_bytes),
	FLD(rx_bytes),	     FLD(tx_msgs),	 FLD(rx_msgs),	     FLD(op_listen),
	FLD(op_connect),     FLD(op_accept),	 FLD(op_isend),	     FLD(op_irecv),
	FLD(op_iflush),	     FLD(op_test),	 FLD(op_regmr),	     FLD(op_deregmr),
	FLD(op_close),	     FLD(null_requests), FLD(errors),	     FLD(err_bad_args),
	FLD(err_truncated),  FLD(err_link),	 FLD(zc_tx_bytes),   FLD(zc_rx_bytes),
	FLD(zc_regs),	     FLD(zc_fallbacks),	 FLD(cts_urgent),    FLD(idle_wakeups),
	FLD(dmabuf_regs),    FLD(dmabuf_imports), FLD(revivals),     FLD(pings),
	FLD(peer_lost),	     FLD(caller_reaps),  FLD(busy_poll_reaps), FLD(fused_ops),
	FLD(fused_degraded),
};
#define NFIELDS (sizeof(g_fields) / sizeof(g_fields[0]))

/* the header words (--layout) */
static const struct field g_header[] = {
	FLD(magic), FLD(version), FLD(size), FLD(created_ns), FLD(last_init_ns),
};

static size_t field_index(const char *name)
{
	size_t i = 0;

	while (i < NFIELDS && strcmp(g_fields[i].name, name))
		i++;
	return i; /* the names asked for are in the table */
}

/* fields that are not counters: --watch shows their value, not a change */
static int is_gauge(const struct field *f)
{
	return !strcmp(f->name, "procs_attached") || !strcmp(f->name, "last_pid");
}

static uint64_t load(const struct odl_tb5_rccl_stats *s, const struct field *f)
{
	const char *p = (const char *)s + f->off;

	if (f->width == 4)
		return __atomic_load_n((const uint32_t *)p, __ATOMIC_RELAXED);
	return __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);
}

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [--json] [PATH]\n"
		"       %s --watch SECONDS [--count N] [--json] [PATH]\n"
		"       %s --layout\n",
		argv0, argv0, argv0);
	return 2;
}

/* "name": {"offset": O, "width": W}, ... */
static void print_offsets(const struct field *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%s\"%s\": {\"offset\": %zu, \"width\": %zu}", i ? ", " : "", t[i].name,
		       t[i].off, t[i].width);
}

static void print_layout(void)
{
	printf("{\"magic\": %llu, \"version\": %u, \"size\": %zu, \"header\": {",
	       (unsigned long long)ODL_TB5_RCCL_STATS_MAGIC, ODL_TB5_RCCL_STATS_VERSION,
	       sizeof(struct odl_tb5_rccl_stats));
	print_offsets(g_header, sizeof(g_header) / sizeof(g_header[0]));
	printf("}, \"fields\": {");
	print_offsets(g_fields, NFIELDS);
	printf("}}\n");
}

static void print_once(const struct odl_tb5_rccl_stats *s, const char *path, int live, int json)
{
	uint64_t now = now_ns(CLOCK_REALTIME), created = __atomic_load_n(&s->created_ns,
									 __ATOMIC_RELAXED);
	double uptime = now > created ? (double)(now - created) / 1e9 : 0;

	if (json) {
		printf("{\"path\": \"%s\", \"version\": %u, \"uptime_s\": %.3f, \"procs_live\": %d", path,
		       s->version, uptime, live);
		for (size_t i = 0; i < NFIELDS; i++)
			printf(", \"%s\": %llu", g_fields[i].name,
			       (unsigned long long)load(s, &g_fields[i]));
		printf("}\n");
		return;
	}
	printf("%-16s %s (version %u, %u bytes)\n", "file", path, s->version, s->size);
	printf("%-16s %.3f s\n", "uptime", uptime);
	printf("%-16s %d\n", "procs_live", live);
	for (size_t i = 0; i < NFIELDS; i++)
		printf("%-16s %llu\n", g_fields[i].name, (unsigned long long)load(s, &g_fields[i]));
}

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

/*
 * Every `period` seconds, what changed: the traffic as rates (Gb/s of
 * payload, messages per second), every other counter that moved as its
 * increase, the gauges as they are. `count` intervals, 0: until a signal.
 */
static int watch(const struct odl_tb5_rccl_stats *s, int fd, double period, long count, int json)
{
	uint64_t prev[NFIELDS], cur[NFIELDS], t_prev, t_cur, t_start;
	const size_t itx = field_index("tx_bytes"), irx = field_index("rx_bytes"),
		     itm = field_index("tx_msgs"), irm = field_index("rx_msgs");
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (size_t i = 0; i < NFIELDS; i++)
		prev[i] = load(s, &g_fields[i]);
	t_start = t_prev = now_ns(CLOCK_MONOTONIC);
	if (!json)
		printf("%9s %5s %9s %9s %10s %10s  changed\n", "time_s", "live", "tx_Gb/s",
		       "rx_Gb/s", "tx_msg/s", "rx_msg/s");
	fflush(stdout);
	for (long n = 0; !g_stop && (count == 0 || n < count); n++) {
		struct timespec ts = { (time_t)period,
				       (long)((period - (double)(time_t)period) * 1e9) };
		double dt, tx, rx, txm, rxm;
		int live, first = 1;

		while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !g_stop)
			;
		for (size_t i = 0; i < NFIELDS; i++)
			cur[i] = load(s, &g_fields[i]);
		t_cur = now_ns(CLOCK_MONOTONIC);
		live = odl_tb5_rccl_stats_live(fd);
		dt = (double)(t_cur - t_prev) / 1e9;
		tx = (double)(cur[itx] - prev[itx]) * 8 / dt / 1e9;
		rx = (double)(cur[irx] - prev[irx]) * 8 / dt / 1e9;
		txm = (double)(cur[itm] - prev[itm]) / dt;
		rxm = (double)(cur[irm] - prev[irm]) / dt;
		if (json) {
			printf("{\"t_s\": %.6f, \"interval_s\": %.6f, \"procs_live\": %d, "
			       "\"tx_gbps\": %.6f, \"rx_gbps\": %.6f, \"tx_msgs_per_s\": %.1f, "
			       "\"rx_msgs_per_s\": %.1f",
			       (double)(t_cur - t_start) / 1e9, dt, live, tx, rx, txm, rxm);
			for (size_t i = 0; i < NFIELDS; i++)
				printf(", \"%s\": %llu", g_fields[i].name,
				       (unsigned long long)(is_gauge(&g_fields[i])
								    ? cur[i]
								    : cur[i] - prev[i]));
			printf("}\n");
		} else {
			printf("%9.3f %5d %9.3f %9.3f %10.1f %10.1f ", (double)(t_cur - t_start) / 1e9,
			       live, tx, rx, txm, rxm);
			for (size_t i = 0; i < NFIELDS; i++) {
				if (is_gauge(&g_fields[i]) || cur[i] == prev[i] || i == itx ||
				    i == irx || i == itm || i == irm)
					continue;
				printf("%s%s+%llu", first ? " " : ", ", g_fields[i].name,
				       (unsigned long long)(cur[i] - prev[i]));
				first = 0;
			}
			printf("%s\n", first ? " -" : "");
		}
		fflush(stdout);
		memcpy(prev, cur, sizeof(prev));
		t_prev = t_cur;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = getenv(ODL_TB5_RCCL_STATS_ENV);
	int json = 0, layout = 0;
	double period = 0;
	long count = 0;
	struct stat st;
	char *end;

	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--layout")) {
			layout = 1;
		} else if (!strcmp(argv[i], "--watch") && v) {
			period = strtod(v, &end);
			if (end == v || *end || !(period >= 0.05 && period <= 3600)) {
				fprintf(stderr, "%s: --watch takes seconds from 0.05 to 3600, not '%s'\n",
					argv[0], v);
				return 2;
			}
			i++;
		} else if (!strcmp(argv[i], "--count") && v) {
			count = strtol(v, &end, 10);
			if (end == v || *end || count < 0) {
				fprintf(stderr, "%s: --count takes a number of intervals >= 0, not '%s'\n",
					argv[0], v);
				return 2;
			}
			i++;
		} else if (argv[i][0] == '-') {
			return usage(argv[0]);
		} else {
			path = argv[i];
		}
	}
	if (layout) {
		print_layout();
		return 0;
	}
	if (count && !period) {
		fprintf(stderr, "%s: --count goes with --watch\n", argv[0]);
		return 2;
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
	if (s == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	if (__atomic_load_n(&s->magic, __ATOMIC_RELAXED) != ODL_TB5_RCCL_STATS_MAGIC ||
	    s->version != ODL_TB5_RCCL_STATS_VERSION) {
		fprintf(stderr, "%s: not an odl_tb5 rccl stats file (or version %u unknown)\n", path,
			s->version);
		return 1;
	}
	if (period)
		return watch(s, fd, period, count, json);
	/* processes attached right now (their liveness locks), -1 unknown */
	print_once(s, path, odl_tb5_rccl_stats_live(fd), json);
	return 0;
}
