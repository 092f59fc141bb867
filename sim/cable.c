// SPDX-License-Identifier: MIT
/*
 * cable: joins two USB4 NHI model instances (QEMU usb4-nhi devices) over
 * UNIX stream sockets. Single-threaded poll() loop around cable_core.
 * See docs/link-protocol.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cable_core.h"
#include "capture.h"
#include "decode.h"

#define MAX_CTL 16
#define CTL_LINE_MAX 1024
#define READ_CHUNK 65536

struct obuf {
	uint8_t *p;
	size_t off, len, cap; /* pending bytes are p[off .. len) */
};

struct ctl_client {
	int fd;
	char in[CTL_LINE_MAX];
	size_t in_len;
	struct obuf out;
	int closing; /* close once out is flushed */
};

static struct {
	const char *dir;
	char path_a[PATH_MAX], path_b[PATH_MAX], path_ctl[PATH_MAX];
	char path_pid[PATH_MAX];
	int lfd[3];          /* listeners: a, b, ctl */
	int cfd[2];          /* model connections */
	struct obuf out[2];
	struct ctl_client ctl[MAX_CTL];
	struct cable_core core;
	FILE *trace_fp;      /* --trace file, or NULL */
	int trace_on;
	FILE *cap_fp;
	char reply[65536];   /* one control reply (status JSON can be long) */
} G;

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void logf_(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "cable: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- output buffers ---- */

static size_t obuf_pending(const struct obuf *b)
{
	return b->len - b->off;
}

static int obuf_append(struct obuf *b, const void *p, size_t n)
{
	if (b->off && b->off == b->len)
		b->off = b->len = 0;
	if (b->len + n > b->cap) {
		if (b->off) {
			memmove(b->p, b->p + b->off, b->len - b->off);
			b->len -= b->off;
			b->off = 0;
		}
		if (b->len + n > b->cap) {
			size_t cap = b->cap ? b->cap : 65536;
			uint8_t *np;

			while (cap < b->len + n)
				cap *= 2;
			np = realloc(b->p, cap);
			if (!np)
				return -1;
			b->p = np;
			b->cap = cap;
		}
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

static void obuf_free(struct obuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* Write what we can; returns -1 on a fatal socket error. */
static int obuf_flush(struct obuf *b, int fd)
{
	while (obuf_pending(b)) {
		ssize_t r = send(fd, b->p + b->off, obuf_pending(b),
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -1;
		}
		b->off += (size_t)r;
	}
	b->off = b->len = 0;
	/* give back memory after a burst */
	if (b->cap > (1u << 20)) {
		free(b->p);
		b->p = NULL;
		b->cap = 0;
	}
	return 0;
}

/* ---- core callbacks ---- */

static void cb_send(void *ctx, int end, const uint8_t *msg, size_t len)
{
	(void)ctx;
	if (G.cfd[end] < 0)
		return;
	if (obuf_append(&G.out[end], msg, len))
		logf_("end %s: out of memory queueing %zu bytes",
		      odl_ep_name(end), len);
}

static size_t cb_backlog(void *ctx, int end)
{
	(void)ctx;
	return obuf_pending(&G.out[end]);
}

static void drop_conn(int end)
{
	if (G.cfd[end] >= 0)
		close(G.cfd[end]);
	G.cfd[end] = -1;
	obuf_free(&G.out[end]);
}

static void cb_close(void *ctx, int end, const char *reason)
{
	(void)ctx;
	(void)reason; /* already logged by the core */
	drop_conn(end);
}

static void cb_event(void *ctx, uint64_t now, int from, int to,
		     const char *note, const uint8_t *msg, size_t len)
{
	(void)ctx;
	if (G.trace_on) {
		char line[1024];
		FILE *f = G.trace_fp ? G.trace_fp : stderr;

		odl_trace_line(line, sizeof(line), now, from, to, note, msg, len);
		fprintf(f, "%s\n", line);
	}
	if (G.cap_fp &&
	    odl_cap_write_msg(G.cap_fp, now, from, to,
			      odl_cap_flags_from_note(note), msg, len)) {
		logf_("capture write failed: %s; capture stopped",
		      strerror(errno));
		fclose(G.cap_fp);
		G.cap_fp = NULL;
	}
}

static void cb_log(void *ctx, const char *line)
{
	(void)ctx;
	logf_("%s", line);
}

/* ---- sockets ---- */

static int listen_unix(const char *path)
{
	struct sockaddr_un sa;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		logf_("socket path too long: %s", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		logf_("socket: %s", strerror(errno));
		return -1;
	}
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(fd, 8)) {
		logf_("bind/listen %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int accept_nb(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
	    errno != EINTR && errno != ECONNABORTED)
		logf_("accept: %s", strerror(errno));
	return fd;
}

/* ---- control socket ---- */

static void ctl_reply(struct ctl_client *cc, const char *line)
{
	obuf_append(&cc->out, line, strlen(line));
	obuf_append(&cc->out, "\n", 1);
}

static void ctl_command(struct ctl_client *cc, char *cmd)
{
	char *end;
	uint64_t now = now_ns();

	while (*cmd == ' ' || *cmd == '\t')
		cmd++;
	end = cmd + strlen(cmd);
	while (end > cmd && (end[-1] == ' ' || end[-1] == '\t' ||
			     end[-1] == '\r'))
		*--end = '\0';
	if (!*cmd)
		return;
	if (cable_core_ctl(&G.core, cmd, now, G.reply, sizeof(G.reply))) {
		ctl_reply(cc, G.reply);
	} else if (!strcmp(cmd, "trace on")) {
		G.trace_on = 1;
		ctl_reply(cc, "ok");
	} else if (!strcmp(cmd, "trace off")) {
		G.trace_on = 0;
		if (G.trace_fp)
			fflush(G.trace_fp);
		ctl_reply(cc, "ok");
	} else if (!strcmp(cmd, "help")) {
		ctl_reply(cc, "commands: plug unplug status trace on|off help "
			  "fault seed|list|clear|remove|release|drop|corrupt|tamper|delay|"
			  "withhold-credits|unplug-after|retrain ... (fault help)");
	} else {
		char msg[CTL_LINE_MAX + 64];

		snprintf(msg, sizeof(msg), "error: unknown command '%s'", cmd);
		ctl_reply(cc, msg);
	}
}

static void ctl_close(struct ctl_client *cc)
{
	close(cc->fd);
	obuf_free(&cc->out);
	memset(cc, 0, sizeof(*cc));
	cc->fd = -1;
}

static void ctl_read(struct ctl_client *cc)
{
	char buf[4096];
	ssize_t r = recv(cc->fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (r < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		ctl_close(cc);
		return;
	}
	if (r == 0) {
		/* a last command without newline still counts */
		if (cc->in_len) {
			cc->in[cc->in_len] = '\0';
			ctl_command(cc, cc->in);
			cc->in_len = 0;
		}
		cc->closing = 1;
		return;
	}
	for (ssize_t i = 0; i < r; i++) {
		if (buf[i] == '\n') {
			cc->in[cc->in_len] = '\0';
			ctl_command(cc, cc->in);
			cc->in_len = 0;
		} else if (cc->in_len + 1 < sizeof(cc->in)) {
			cc->in[cc->in_len++] = buf[i];
		} else {
			ctl_reply(cc, "error: line too long");
			cc->closing = 1;
			cc->in_len = 0;
			return;
		}
	}
}

/* ---- main loop ---- */

static void model_read(int end)
{
	uint8_t buf[READ_CHUNK];
	ssize_t r = recv(G.cfd[end], buf, sizeof(buf), MSG_DONTWAIT);

	if (r < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		logf_("end %s: recv: %s", odl_ep_name(end), strerror(errno));
	}
	if (r <= 0) {
		drop_conn(end);
		cable_core_disconnect(&G.core, end, now_ns());
		return;
	}
	cable_core_rx(&G.core, end, buf, (size_t)r, now_ns());
}

static void accept_model(int end)
{
	int fd = accept_nb(G.lfd[end]);

	if (fd < 0)
		return;
	if (G.cfd[end] >= 0 || cable_core_connect(&G.core, end, now_ns())) {
		logf_("end %s: already connected; rejecting a second connection",
		      odl_ep_name(end));
		close(fd);
		return;
	}
	G.cfd[end] = fd;
}

static void accept_ctl(void)
{
	int fd = accept_nb(G.lfd[2]);

	if (fd < 0)
		return;
	for (int i = 0; i < MAX_CTL; i++) {
		if (G.ctl[i].fd < 0) {
			G.ctl[i].fd = fd;
			return;
		}
	}
	{
		static const char busy[] = "error: too many control clients\n";

		if (send(fd, busy, sizeof(busy) - 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
			/* nothing to do */
		}
	}
	close(fd);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cable --dir DIR [--lane-gbps N] [--lanes 1|2] [--latency-us N]\n"
		"             [--trace FILE] [--unplugged] [--capture FILE]\n"
		"Listens on DIR/end-a.sock, DIR/end-b.sock (models) and DIR/ctl.sock\n"
		"(control: plug, unplug, status, trace on|off, fault ...);\n"
		"writes DIR/cable.pid. See docs/link-protocol.md.\n");
}

static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	char *e;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &e, 10);
	if (errno || e == s || *e || v > max || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "lane-gbps", required_argument, NULL, 'g' },
		{ "lanes", required_argument, NULL, 'l' },
		{ "latency-us", required_argument, NULL, 'L' },
		{ "trace", required_argument, NULL, 't' },
		{ "unplugged", no_argument, NULL, 'u' },
		{ "capture", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cable_cfg cfg;
	struct cable_ops ops = {
		.ctx = NULL, .send = cb_send, .backlog = cb_backlog,
		.close = cb_close, .event = cb_event, .log = cb_log,
	};
	const char *trace_path = NULL, *cap_path = NULL;
	struct sigaction sa;
	sigset_t block, orig;
	int opt, rc = 0;
	unsigned long long v;

	cable_cfg_defaults(&cfg);
	cfg.slack_ns = 5000; /* release up to 5 us early (timer granularity) */
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'd': G.dir = optarg; break;
		case 'g':
			if (parse_uint(optarg, 1000000, &v) || v == 0) {
				fprintf(stderr, "cable: bad --lane-gbps\n");
				return 2;
			}
			cfg.lane_gbps = (unsigned)v;
			break;
		case 'l':
			if (parse_uint(optarg, 2, &v) || v == 0) {
				fprintf(stderr, "cable: --lanes must be 1 or 2\n");
				return 2;
			}
			cfg.lanes = (unsigned)v;
			break;
		case 'L':
			if (parse_uint(optarg, 60000000, &v)) {
				fprintf(stderr, "cable: bad --latency-us\n");
				return 2;
			}
			cfg.latency_ns = v * 1000u;
			break;
		case 't': trace_path = optarg; break;
		case 'u': cfg.plugged = false; break;
		case 'c': cap_path = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!G.dir || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (cfg.latency_ns < cfg.slack_ns)
		cfg.slack_ns = cfg.latency_ns ? cfg.latency_ns / 2 : 5000;

	G.cfd[0] = G.cfd[1] = -1;
	G.lfd[0] = G.lfd[1] = G.lfd[2] = -1;
	for (int i = 0; i < MAX_CTL; i++)
		G.ctl[i].fd = -1;

	if (mkdir(G.dir, 0777) && errno != EEXIST) {
		fprintf(stderr, "cable: mkdir %s: %s\n", G.dir, strerror(errno));
		return 1;
	}
	snprintf(G.path_a, sizeof(G.path_a), "%s/end-a.sock", G.dir);
	snprintf(G.path_b, sizeof(G.path_b), "%s/end-b.sock", G.dir);
	snprintf(G.path_ctl, sizeof(G.path_ctl), "%s/ctl.sock", G.dir);
	snprintf(G.path_pid, sizeof(G.path_pid), "%s/cable.pid", G.dir);

	if (trace_path) {
		G.trace_fp = fopen(trace_path, "a");
		if (!G.trace_fp) {
			fprintf(stderr, "cable: %s: %s\n", trace_path, strerror(errno));
			return 1;
		}
		setvbuf(G.trace_fp, NULL, _IOLBF, 0);
		G.trace_on = 1;
	}
	if (cap_path) {
		G.cap_fp = fopen(cap_path, "wb");
		if (!G.cap_fp || odl_cap_write_header(G.cap_fp)) {
			fprintf(stderr, "cable: %s: %s\n", cap_path, strerror(errno));
			return 1;
		}
	}

	/* signals: blocked except inside ppoll() */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &orig);
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);

	G.lfd[0] = listen_unix(G.path_a);
	G.lfd[1] = listen_unix(G.path_b);
	G.lfd[2] = listen_unix(G.path_ctl);
	if (G.lfd[0] < 0 || G.lfd[1] < 0 || G.lfd[2] < 0) {
		rc = 1;
		goto out;
	}
	{
		FILE *pf = fopen(G.path_pid, "w");

		if (!pf) {
			logf_("%s: %s", G.path_pid, strerror(errno));
			rc = 1;
			goto out;
		}
		fprintf(pf, "%ld\n", (long)getpid());
		fclose(pf);
	}
	cable_core_init(&G.core, &cfg, &ops);
	logf_("listening in %s (%s, %u x %u Gb/s, latency %llu us)", G.dir,
	      cfg.plugged ? "plugged" : "unplugged", cfg.lanes, cfg.lane_gbps,
	      (unsigned long long)(cfg.latency_ns / 1000u));

	while (!g_stop) {
		struct pollfd pfd[3 + 2 + MAX_CTL];
		int who[3 + 2 + MAX_CTL]; /* 0..2 listeners, 3..4 ends, 5.. ctl */
		int n = 0;
		uint64_t now, dl;
		struct timespec ts, *tsp = NULL;

		for (int i = 0; i < 2; i++) {
			if (G.cfd[i] < 0)
				continue;
			pfd[n].fd = G.cfd[i];
			pfd[n].events = POLLIN |
				(obuf_pending(&G.out[i]) ? POLLOUT : 0);
			who[n++] = 3 + i;
		}
		for (int i = 0; i < MAX_CTL; i++) {
			struct ctl_client *cc = &G.ctl[i];

			if (cc->fd < 0)
				continue;
			pfd[n].fd = cc->fd;
			pfd[n].events = (cc->closing ? 0 : POLLIN) |
				(obuf_pending(&cc->out) ? POLLOUT : 0);
			who[n++] = 5 + i;
		}
		for (int i = 0; i < 3; i++) {
			pfd[n].fd = G.lfd[i];
			pfd[n].events = POLLIN;
			who[n++] = i;
		}
		dl = cable_core_next_deadline(&G.core);
		if (dl != UINT64_MAX) {
			now = now_ns();
			dl = dl > now ? dl - now : 0;
			ts.tv_sec = (time_t)(dl / 1000000000u);
			ts.tv_nsec = (long)(dl % 1000000000u);
			tsp = &ts;
		}
		if (G.cap_fp)
			fflush(G.cap_fp);
		if (ppoll(pfd, (nfds_t)n, tsp, &orig) < 0) {
			if (errno == EINTR)
				continue;
			logf_("ppoll: %s", strerror(errno));
			rc = 1;
			break;
		}
		for (int k = 0; k < n; k++) {
			int w = who[k];
			short re = pfd[k].revents;

			if (!re)
				continue;
			if (w >= 3 && w < 5) {
				int end = w - 3;

				if (G.cfd[end] != pfd[k].fd)
					continue; /* replaced meanwhile */
				if (re & (POLLIN | POLLHUP | POLLERR))
					model_read(end);
			} else if (w >= 5) {
				struct ctl_client *cc = &G.ctl[w - 5];

				if (cc->fd != pfd[k].fd)
					continue;
				if (re & (POLLIN | POLLHUP | POLLERR)) {
					if (!cc->closing)
						ctl_read(cc);
					else if (re & (POLLHUP | POLLERR))
						ctl_close(cc);
				}
			} else if (re & POLLIN) {
				if (w < 2)
					accept_model(w);
				else
					accept_ctl();
			}
		}
		cable_core_tick(&G.core, now_ns());
		/* flush outputs */
		for (int i = 0; i < 2; i++) {
			if (G.cfd[i] >= 0 && obuf_pending(&G.out[i]) &&
			    obuf_flush(&G.out[i], G.cfd[i])) {
				logf_("end %s: send: %s", odl_ep_name(i),
				      strerror(errno));
				drop_conn(i);
				cable_core_disconnect(&G.core, i, now_ns());
			}
		}
		for (int i = 0; i < MAX_CTL; i++) {
			struct ctl_client *cc = &G.ctl[i];

			if (cc->fd < 0)
				continue;
			if (obuf_flush(&cc->out, cc->fd)) {
				ctl_close(cc);
				continue;
			}
			if (cc->closing && !obuf_pending(&cc->out))
				ctl_close(cc);
		}
	}
	if (g_stop)
		logf_("signal received, exiting");
	cable_core_fini(&G.core);
out:
	for (int i = 0; i < 2; i++)
		drop_conn(i);
	for (int i = 0; i < MAX_CTL; i++)
		if (G.ctl[i].fd >= 0)
			ctl_close(&G.ctl[i]);
	for (int i = 0; i < 3; i++)
		if (G.lfd[i] >= 0)
			close(G.lfd[i]);
	unlink(G.path_a);
	unlink(G.path_b);
	unlink(G.path_ctl);
	unlink(G.path_pid);
	if (G.trace_fp)
		fclose(G.trace_fp);
	if (G.cap_fp)
		fclose(G.cap_fp);
	return rc;
}
