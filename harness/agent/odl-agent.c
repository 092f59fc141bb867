// SPDX-License-Identifier: MIT
/*
 * odl-agent: OdinLink guest agent.
 *
 * Runs as root inside a guest (started in a respawn loop by the initramfs
 * /init) and serves the host over the virtio-serial port named
 * "org.odinlink.agent".  On the host side QEMU exposes the port as a UNIX
 * socket chardev; the vmpair mux daemon holds that connection and
 * multiplexes client requests onto it (harness/vmpair).
 *
 * ---------------------------------------------------------------------------
 * Wire protocol (version 1)
 * ---------------------------------------------------------------------------
 * A byte stream of frames.  Every frame is a 16-byte header followed by `len`
 * payload bytes; all integers are little-endian:
 *
 *     u32 magic   0x314c444f ("ODL1" as bytes)
 *     u8  type    see below
 *     u8  flags   0 (reserved)
 *     u16 rsvd    0
 *     u32 chan    channel id, chosen by the host (0 allowed for PING)
 *     u32 len     payload bytes that follow (host->guest at most 4 MiB)
 *
 * A receiver that finds a bad magic skips one byte and rescans (resync after a
 * reconnect in the middle of a frame).  Requests (host -> guest):
 *
 *   0x01 PING     payload ignored.  -> PONG "host=NAME uptime=SECS pid=PID
 *                 version=1\n" on the same channel.
 *   0x02 EXEC     payload: a sequence of fields, each one tag byte followed by
 *                 a NUL-terminated string:  'a' argv element (at least one,
 *                 in order; argv[0] is looked up in PATH), 'e' "NAME=VALUE"
 *                 added to the environment, 'c' working directory, 'i' (empty
 *                 string) the command reads stdin from STDIN frames (without
 *                 it stdin is /dev/null).
 *                 -> OK "pid=N", then STDOUT/STDERR chunks in the order the
 *                 agent read them, then exactly one EXIT.  If the program
 *                 cannot be started: ERROR "<what>: <strerror>" and nothing
 *                 else (the client maps this to status 127).
 *   0x03 STDIN    data for the channel's stdin; an empty payload closes it.
 *   0x04 KILL     payload u32 signal number; sent to the process group of the
 *                 channel's child (the child runs setpgid(0,0)).  No reply on
 *                 success; ERROR if the channel has no running child.
 *   0x05 PUT      fields as EXEC: 'p' path, 'm' octal mode (default 0644).
 *                 Opens/truncates the file.  Followed by PUTDATA frames and
 *                 one PUTEND.
 *   0x06 PUTDATA  file bytes.
 *   0x07 PUTEND   -> OK "bytes=N" or ERROR.  An error (open or write) is
 *                 reported once, as soon as it happens; later PUTDATA/PUTEND
 *                 frames of that channel are then swallowed silently.
 *   0x08 GET      payload: path (not NUL-terminated, or NUL-terminated).
 *                 -> DATA chunks then END "bytes=N", or ERROR.
 *
 * Replies (guest -> host): 0x81 PONG, 0x82 STDOUT, 0x83 STDERR, 0x84 OK,
 * 0x85 ERROR (text), 0x86 DATA, 0x87 END, 0x88 EXIT (payload i32: exit code
 * 0..255 when the child exited, -SIGNAL when a signal killed it).
 * A malformed or unknown request gets ERROR on its channel; the agent never
 * exits because of a request.
 *
 * Several channels may be active at once; replies of one channel keep their
 * order.  Channel ids must not be reused while a channel is active.
 *
 * Background processes: EXIT is reported when the direct child has exited
 * AND either both its stdout and stderr pipes have reached EOF, or
 * ODL_GRACE_MS (300 ms) have passed since it exited.  At that point whatever
 * is readable is forwarded and the agent closes its pipe ends, so a daemon
 * left running by `sh -c 'server &'` does not hold the channel open, but
 * anything it later writes to the inherited stdout/stderr gets EPIPE/SIGPIPE.
 * Start servers with their output redirected to files (and with setsid if
 * they must survive a KILL of the channel's process group).
 *
 * Flow control: the agent stops reading children's pipes and GET files while
 * more than OUTQ_HIWAT bytes wait to be written to the port.  When the host
 * side disconnects (read returns 0), queued output is dropped, the input
 * parser is reset, running children keep running, and the port is polled
 * again every 100 ms.
 *
 * Test modes (host side, no QEMU):  --stdio (frames on fds 0/1, exits on
 * EOF), --device PATH (a character device or FIFO opened O_RDWR),
 * --listen SOCK (UNIX socket server that serves one connection at a time,
 * like QEMU's chardev, for the vmpair fake mode), --name NAME (host name
 * reported in PONG).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PORT_NAME "org.odinlink.agent"
#define MAGIC 0x314c444fu
#define HDR_LEN 16u
#define MAX_IN_PAYLOAD (4u << 20)
#define CHUNK 32768u
#define OUTQ_HIWAT (512u * 1024u)
#define ODL_GRACE_MS 300

enum {
	T_PING = 0x01, T_EXEC = 0x02, T_STDIN = 0x03, T_KILL = 0x04,
	T_PUT = 0x05, T_PUTDATA = 0x06, T_PUTEND = 0x07, T_GET = 0x08,
	T_PONG = 0x81, T_STDOUT = 0x82, T_STDERR = 0x83, T_OK = 0x84,
	T_ERROR = 0x85, T_DATA = 0x86, T_END = 0x87, T_EXIT = 0x88,
};

enum mode { M_VIRTIO, M_STDIO, M_DEVICE, M_LISTEN };
enum ckind { C_EXEC, C_PUT, C_GET };

struct buf {
	struct buf *next;
	size_t len, off;
	unsigned char data[];
};

struct chan {
	struct chan *next;
	uint32_t id;
	enum ckind kind;
	/* EXEC */
	pid_t pid;
	int out_fd, err_fd, in_fd;
	bool exited;
	int status;
	int64_t exit_ms;
	struct buf *inq, *inq_tail;
	bool stdin_close;
	/* PUT / GET */
	int fd;
	bool failed;
	uint64_t bytes;
};

static enum mode g_mode = M_VIRTIO;
static const char *g_path;
static const char *g_name;
static int g_rfd = -1, g_wfd = -1; /* port fds; -1 when down */
static int g_lfd = -1;             /* listen socket (M_LISTEN) */
static int64_t g_retry_ms;         /* when port is down: next reopen attempt */
static struct buf *g_outq, *g_outq_tail;
static size_t g_outq_bytes;
static unsigned char *g_in;
static size_t g_in_len, g_in_cap;
static uint64_t g_discard; /* payload bytes of an oversized frame to skip */
static struct chan *g_chans;
static int g_sigpipe[2] = {-1, -1};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void logmsg(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("odl-agent: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		logmsg("out of memory");
		abort();
	}
	return p;
}

static void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = v & 0xff;
	p[1] = (v >> 8) & 0xff;
	p[2] = (v >> 16) & 0xff;
	p[3] = (v >> 24) & 0xff;
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* ---- output queue ---- */

static void send_frame(uint8_t type, uint32_t chan, const void *data, size_t len)
{
	if (g_wfd < 0)
		return; /* host not connected: nobody to tell */
	struct buf *b = xmalloc(sizeof(*b) + HDR_LEN + len);
	b->next = NULL;
	b->len = HDR_LEN + len;
	b->off = 0;
	put_le32(b->data, MAGIC);
	b->data[4] = type;
	b->data[5] = 0;
	b->data[6] = b->data[7] = 0;
	put_le32(b->data + 8, chan);
	put_le32(b->data + 12, (uint32_t)len);
	if (len)
		memcpy(b->data + HDR_LEN, data, len);
	if (g_outq_tail)
		g_outq_tail->next = b;
	else
		g_outq = b;
	g_outq_tail = b;
	g_outq_bytes += b->len;
}

static void send_text(uint8_t type, uint32_t chan, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;
	send_frame(type, chan, msg, (size_t)n);
}

static void outq_clear(void)
{
	while (g_outq) {
		struct buf *n = g_outq->next;
		free(g_outq);
		g_outq = n;
	}
	g_outq_tail = NULL;
	g_outq_bytes = 0;
}

/* ---- channels ---- */

static struct chan *chan_find(uint32_t id)
{
	for (struct chan *c = g_chans; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static struct chan *chan_new(uint32_t id, enum ckind kind)
{
	struct chan *c = xmalloc(sizeof(*c));
	memset(c, 0, sizeof(*c));
	c->id = id;
	c->kind = kind;
	c->pid = -1;
	c->out_fd = c->err_fd = c->in_fd = c->fd = -1;
	c->next = g_chans;
	g_chans = c;
	return c;
}

static void closefd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

static void inq_clear(struct chan *c)
{
	while (c->inq) {
		struct buf *n = c->inq->next;
		free(c->inq);
		c->inq = n;
	}
	c->inq_tail = NULL;
}

static void chan_free(struct chan *c)
{
	for (struct chan **pp = &g_chans; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	closefd(&c->out_fd);
	closefd(&c->err_fd);
	closefd(&c->in_fd);
	closefd(&c->fd);
	inq_clear(c);
	free(c);
}

/* ---- request parsing ---- */

struct fields {
	const char *argv[256];
	int argc;
	const char *env[256];
	int envc;
	const char *cwd;
	const char *path;
	const char *mode;
	bool want_stdin;
};

/* Parses tag+NUL-terminated fields in place (payload must be NUL-terminated
 * by the caller one byte past its end).  Returns an error text or NULL. */
static const char *parse_fields(char *p, size_t len, struct fields *f)
{
	memset(f, 0, sizeof(*f));
	size_t i = 0;
	while (i < len) {
		char tag = p[i++];
		char *s = p + i;
		size_t sl = strnlen(s, len - i);
		i += sl + 1;
		switch (tag) {
		case 'a':
			if (f->argc >= 255)
				return "too many arguments (max 255)";
			f->argv[f->argc++] = s;
			break;
		case 'e':
			if (f->envc >= 255)
				return "too many environment entries (max 255)";
			if (!strchr(s, '='))
				return "environment entry without '='";
			f->env[f->envc++] = s;
			break;
		case 'c': f->cwd = s; break;
		case 'p': f->path = s; break;
		case 'm': f->mode = s; break;
		case 'i': f->want_stdin = true; break;
		default:
			return "unknown field tag";
		}
	}
	f->argv[f->argc] = NULL;
	return NULL;
}

/* ---- EXEC ---- */

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void do_exec(uint32_t id, char *payload, size_t len)
{
	struct fields f;
	const char *err = parse_fields(payload, len, &f);
	if (err) {
		send_text(T_ERROR, id, "bad EXEC request: %s", err);
		return;
	}
	if (f.argc == 0) {
		send_text(T_ERROR, id, "bad EXEC request: empty argv");
		return;
	}
	int po[2] = {-1, -1}, pe[2] = {-1, -1}, pi[2] = {-1, -1}, px[2] = {-1, -1};
	if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC) || pipe2(px, O_CLOEXEC) ||
	    (f.want_stdin && pipe2(pi, O_CLOEXEC))) {
		int e = errno;
		send_text(T_ERROR, id, "pipe: %s", strerror(e));
		int *all[] = {po, pe, pi, px};
		for (int k = 0; k < 4; k++)
			for (int j = 0; j < 2; j++)
				if (all[k][j] >= 0)
					close(all[k][j]);
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		/* child */
		const char *what = "exec";
		const char *obj = f.argv[0];
		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int in = f.want_stdin ? pi[0] : open("/dev/null", O_RDONLY);
		if (in < 0 || dup2(in, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0) {
			what = "dup2";
			goto fail;
		}
		if (f.cwd && chdir(f.cwd) != 0) {
			what = "chdir";
			obj = f.cwd;
			goto fail;
		}
		if (!getenv("PATH"))
			setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1);
		for (int k = 0; k < f.envc; k++)
			putenv((char *)f.env[k]);
		execvp(f.argv[0], (char *const *)f.argv);
	fail:;
		char msg[600];
		int e = errno;
		int n = snprintf(msg, sizeof(msg), "%s %s: %s", what, obj, strerror(e));
		if (n > 0) {
			ssize_t w = write(px[1], msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
			(void)w;
		}
		_exit(127);
	}
	int fork_errno = errno;
	close(po[1]);
	close(pe[1]);
	close(px[1]);
	if (pi[0] >= 0)
		close(pi[0]);
	if (pid < 0) {
		send_text(T_ERROR, id, "fork: %s", strerror(fork_errno));
		close(po[0]);
		close(pe[0]);
		close(px[0]);
		if (pi[1] >= 0)
			close(pi[1]);
		return;
	}
	/* exec status: EOF on px means exec succeeded (CLOEXEC). */
	char msg[600];
	ssize_t n;
	do
		n = read(px[0], msg, sizeof(msg) - 1);
	while (n < 0 && errno == EINTR);
	close(px[0]);
	if (n > 0) {
		msg[n] = 0;
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		send_text(T_ERROR, id, "%s", msg);
		close(po[0]);
		close(pe[0]);
		if (pi[1] >= 0)
			close(pi[1]);
		return;
	}
	struct chan *c = chan_new(id, C_EXEC);
	c->pid = pid;
	c->out_fd = po[0];
	c->err_fd = pe[0];
	c->in_fd = pi[1];
	set_nonblock(c->out_fd);
	set_nonblock(c->err_fd);
	if (c->in_fd >= 0)
		set_nonblock(c->in_fd);
	send_text(T_OK, id, "pid=%d", (int)pid);
}

static void do_stdin(struct chan *c, const unsigned char *data, size_t len)
{
	if (c->in_fd < 0)
		return; /* stdin closed or child gone: drop */
	if (len == 0) {
		c->stdin_close = true;
		if (!c->inq)
			closefd(&c->in_fd);
		return;
	}
	struct buf *b = xmalloc(sizeof(*b) + len);
	b->next = NULL;
	b->len = len;
	b->off = 0;
	memcpy(b->data, data, len);
	if (c->inq_tail)
		c->inq_tail->next = b;
	else
		c->inq = b;
	c->inq_tail = b;
}

static void pump_stdin(struct chan *c)
{
	while (c->inq && c->in_fd >= 0) {
		struct buf *b = c->inq;
		ssize_t n = write(c->in_fd, b->data + b->off, b->len - b->off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			/* EPIPE etc.: child no longer reads stdin */
			inq_clear(c);
			closefd(&c->in_fd);
			return;
		}
		b->off += (size_t)n;
		if (b->off == b->len) {
			c->inq = b->next;
			if (!c->inq)
				c->inq_tail = NULL;
			free(b);
		}
	}
	if (!c->inq && c->stdin_close)
		closefd(&c->in_fd);
}

/* Reads one chunk from a child pipe; returns false at EOF/error. */
static bool pump_pipe(struct chan *c, int *fd, uint8_t type)
{
	unsigned char tmp[CHUNK];
	ssize_t n;
	do
		n = read(*fd, tmp, sizeof(tmp));
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		send_frame(type, c->id, tmp, (size_t)n);
		return true;
	}
	if (n < 0 && errno == EAGAIN)
		return true;
	closefd(fd);
	return false;
}

static void exec_finish(struct chan *c)
{
	/* forward whatever is already buffered in the pipes */
	for (int k = 0; k < 64 && c->out_fd >= 0; k++) {
		if (!pump_pipe(c, &c->out_fd, T_STDOUT))
			break;
		struct pollfd p = {.fd = c->out_fd, .events = POLLIN};
		if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN))
			break;
	}
	for (int k = 0; k < 64 && c->err_fd >= 0; k++) {
		if (!pump_pipe(c, &c->err_fd, T_STDERR))
			break;
		struct pollfd p = {.fd = c->err_fd, .events = POLLIN};
		if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN))
			break;
	}
	unsigned char st[4];
	int32_t code = WIFEXITED(c->status) ? WEXITSTATUS(c->status)
	               : WIFSIGNALED(c->status) ? -WTERMSIG(c->status) : 255;
	put_le32(st, (uint32_t)code);
	send_frame(T_EXIT, c->id, st, 4);
	chan_free(c);
}

static void reap_children(void)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid <= 0)
			return;
		for (struct chan *c = g_chans; c; c = c->next) {
			if (c->kind == C_EXEC && c->pid == pid && !c->exited) {
				c->exited = true;
				c->status = st;
				c->exit_ms = now_ms();
				inq_clear(c);
				closefd(&c->in_fd);
				break;
			}
		}
	}
}

/* ---- PUT / GET ---- */

static void do_put(uint32_t id, char *payload, size_t len)
{
	struct chan *c = chan_new(id, C_PUT);
	struct fields f;
	const char *err = parse_fields(payload, len, &f);
	if (err || !f.path || !*f.path) {
		send_text(T_ERROR, id, "bad PUT request: %s", err ? err : "no path");
		c->failed = true;
		return;
	}
	mode_t mode = 0644;
	if (f.mode) {
		char *end;
		unsigned long m = strtoul(f.mode, &end, 8);
		if (*end || m > 07777) {
			send_text(T_ERROR, id, "bad PUT request: bad mode '%s'", f.mode);
			c->failed = true;
			return;
		}
		mode = (mode_t)m;
	}
	c->fd = open(f.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (c->fd < 0) {
		send_text(T_ERROR, id, "open %s: %s", f.path, strerror(errno));
		c->failed = true;
		return;
	}
	if (fchmod(c->fd, mode) != 0) {
		struct stat sb;
		/* fchmod fails on some special files; only complain for regular ones */
		if (fstat(c->fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
			send_text(T_ERROR, id, "chmod %s: %s", f.path, strerror(errno));
			c->failed = true;
			closefd(&c->fd);
		}
	}
}

static void do_putdata(struct chan *c, const unsigned char *data, size_t len)
{
	if (c->failed)
		return;
	size_t off = 0;
	while (off < len) {
		ssize_t n = write(c->fd, data + off, len - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			send_text(T_ERROR, c->id, "write: %s", strerror(errno));
			c->failed = true;
			closefd(&c->fd);
			return;
		}
		off += (size_t)n;
	}
	c->bytes += len;
}

static void do_putend(struct chan *c)
{
	if (!c->failed) {
		int fd = c->fd;
		c->fd = -1;
		if (close(fd) != 0)
			send_text(T_ERROR, c->id, "close: %s", strerror(errno));
		else
			send_text(T_OK, c->id, "bytes=%llu", (unsigned long long)c->bytes);
	}
	chan_free(c);
}

static void do_get(uint32_t id, char *payload, size_t len)
{
	payload[len] = 0;
	const char *path = payload;
	if (!*path) {
		send_text(T_ERROR, id, "bad GET request: empty path");
		return;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		send_text(T_ERROR, id, "open %s: %s", path, strerror(errno));
		return;
	}
	struct stat sb;
	if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		send_text(T_ERROR, id, "open %s: %s", path, strerror(EISDIR));
		close(fd);
		return;
	}
	struct chan *c = chan_new(id, C_GET);
	c->fd = fd;
}

static void pump_get(struct chan *c)
{
	unsigned char tmp[CHUNK];
	ssize_t n;
	do
		n = read(c->fd, tmp, sizeof(tmp));
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		send_frame(T_DATA, c->id, tmp, (size_t)n);
		c->bytes += (uint64_t)n;
	} else if (n == 0) {
		send_text(T_END, c->id, "bytes=%llu", (unsigned long long)c->bytes);
		chan_free(c);
	} else if (errno != EAGAIN) {
		send_text(T_ERROR, c->id, "read: %s", strerror(errno));
		chan_free(c);
	}
}

/* ---- PING ---- */

static void do_ping(uint32_t id)
{
	char host[256] = "?";
	if (g_name)
		snprintf(host, sizeof(host), "%s", g_name);
	else
		gethostname(host, sizeof(host) - 1);
	char up[64] = "0";
	FILE *fp = fopen("/proc/uptime", "re");
	if (fp) {
		if (fscanf(fp, "%63s", up) != 1)
			strcpy(up, "0");
		fclose(fp);
	}
	send_text(T_PONG, id, "host=%s uptime=%s pid=%d version=1\n", host, up, (int)getpid());
}

/* ---- frame dispatch ---- */

static void handle_frame(uint8_t type, uint32_t id, unsigned char *p, size_t len)
{
	struct chan *c = chan_find(id);
	switch (type) {
	case T_PING:
		do_ping(id);
		return;
	case T_EXEC:
	case T_PUT:
	case T_GET:
		if (c) {
			send_text(T_ERROR, id, "channel %u already in use", id);
			return;
		}
		if (type == T_EXEC)
			do_exec(id, (char *)p, len);
		else if (type == T_PUT)
			do_put(id, (char *)p, len);
		else
			do_get(id, (char *)p, len);
		return;
	case T_STDIN:
		if (c && c->kind == C_EXEC)
			do_stdin(c, p, len);
		return; /* stdin for a finished channel: drop silently */
	case T_KILL:
		if (len < 4) {
			send_text(T_ERROR, id, "bad KILL request");
			return;
		}
		if (!c || c->kind != C_EXEC || c->exited) {
			send_text(T_ERROR, id, "KILL: no running process on channel %u", id);
			return;
		}
		{
			int sig = (int)get_le32(p);
			if (kill(-c->pid, sig) != 0 && kill(c->pid, sig) != 0)
				send_text(T_ERROR, id, "kill: %s", strerror(errno));
		}
		return;
	case T_PUTDATA:
		if (c && c->kind == C_PUT)
			do_putdata(c, p, len);
		else
			send_text(T_ERROR, id, "PUTDATA: no PUT on channel %u", id);
		return;
	case T_PUTEND:
		if (c && c->kind == C_PUT)
			do_putend(c);
		else
			send_text(T_ERROR, id, "PUTEND: no PUT on channel %u", id);
		return;
	default:
		send_text(T_ERROR, id, "unknown request type 0x%02x", type);
	}
}

static void parse_input(void)
{
	size_t pos = 0;
	for (;;) {
		if (g_discard) {
			size_t k = g_in_len - pos < g_discard ? g_in_len - pos : (size_t)g_discard;
			pos += k;
			g_discard -= k;
			if (g_discard)
				break;
		}
		if (g_in_len - pos < HDR_LEN)
			break;
		unsigned char *h = g_in + pos;
		if (get_le32(h) != MAGIC) {
			pos++; /* resync */
			continue;
		}
		uint8_t type = h[4];
		uint32_t id = get_le32(h + 8);
		uint32_t len = get_le32(h + 12);
		if (len > MAX_IN_PAYLOAD) {
			send_text(T_ERROR, id, "request too large (%u bytes)", len);
			pos += HDR_LEN;
			g_discard = len;
			continue;
		}
		if (g_in_len - pos < HDR_LEN + (size_t)len)
			break; /* wait for the whole payload */
		/* NUL-terminate in a copy-free way: the byte after the payload may
		 * belong to the next frame, so save and restore it. */
		unsigned char *pl = h + HDR_LEN;
		unsigned char saved = pl[len];
		pl[len] = 0;
		handle_frame(type, id, pl, len);
		pl[len] = saved;
		pos += HDR_LEN + len;
	}
	if (pos) {
		memmove(g_in, g_in + pos, g_in_len - pos);
		g_in_len -= pos;
	}
}

/* ---- port management ---- */

static void port_close(void)
{
	if (g_rfd >= 0 && g_rfd != g_wfd)
		close(g_rfd);
	if (g_wfd >= 0)
		close(g_wfd);
	g_rfd = g_wfd = -1;
	outq_clear();
	g_in_len = 0;
	g_discard = 0;
}

static char *find_virtio_port(void)
{
	static char dev[PATH_MAX];
	DIR *d = opendir("/sys/class/virtio-ports");
	if (!d)
		return NULL;
	struct dirent *de;
	char *found = NULL;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char p[PATH_MAX], name[256] = "";
		snprintf(p, sizeof(p), "/sys/class/virtio-ports/%s/name", de->d_name);
		FILE *fp = fopen(p, "re");
		if (!fp)
			continue;
		if (!fgets(name, sizeof(name), fp))
			name[0] = 0;
		fclose(fp);
		name[strcspn(name, "\n")] = 0;
		if (strcmp(name, PORT_NAME) != 0)
			continue;
		snprintf(dev, sizeof(dev), "/dev/%s", de->d_name);
		if (access(dev, F_OK) != 0) {
			/* no devtmpfs node (yet): create it from the sysfs dev file */
			unsigned maj, min;
			snprintf(p, sizeof(p), "/sys/class/virtio-ports/%s/dev", de->d_name);
			fp = fopen(p, "re");
			if (fp) {
				if (fscanf(fp, "%u:%u", &maj, &min) == 2)
					mknod(dev, S_IFCHR | 0600, makedev(maj, min));
				fclose(fp);
			}
		}
		found = dev;
		break;
	}
	closedir(d);
	return found;
}

static void port_try_open(void)
{
	static int64_t last_warn;
	int64_t now = now_ms();
	if (g_mode == M_VIRTIO) {
		char *dev = find_virtio_port();
		if (!dev) {
			if (now - last_warn > 10000) {
				logmsg("waiting for virtio port %s", PORT_NAME);
				last_warn = now;
			}
			g_retry_ms = now + 250;
			return;
		}
		int fd = open(dev, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0) {
			if (now - last_warn > 10000) {
				logmsg("open %s: %s", dev, strerror(errno));
				last_warn = now;
			}
			g_retry_ms = now + 250;
			return;
		}
		g_rfd = g_wfd = fd;
	} else if (g_mode == M_DEVICE) {
		int fd = open(g_path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (fd < 0) {
			logmsg("open %s: %s", g_path, strerror(errno));
			exit(1);
		}
		g_rfd = g_wfd = fd;
	}
}

static void port_write(void);

/* The host side went away (read returned 0) or the port failed. */
static void port_lost(void)
{
	static bool exiting;
	if (g_mode == M_STDIO || g_mode == M_DEVICE) {
		if (exiting)
			exit(1);
		exiting = true;
		/* test modes: flush what is queued, then exit */
		int fl = fcntl(g_wfd, F_GETFL);
		if (fl >= 0)
			fcntl(g_wfd, F_SETFL, fl & ~O_NONBLOCK);
		port_write();
		exit(0);
	}
	port_close();
	if (g_mode == M_VIRTIO) {
		/* keep the fd closed for 100 ms; virtio-serial reports POLLHUP
		 * continuously while the host is disconnected */
		g_retry_ms = now_ms() + 100;
	}
}

static void port_read(void)
{
	if (g_in_cap - g_in_len < 65536 + 1) {
		g_in_cap = g_in_len + 65536 + 1 + g_in_cap;
		unsigned char *n = realloc(g_in, g_in_cap);
		if (!n) {
			logmsg("out of memory");
			abort();
		}
		g_in = n;
	}
	ssize_t n = read(g_rfd, g_in + g_in_len, 65536);
	if (n < 0) {
		if (errno == EINTR || errno == EAGAIN)
			return;
		logmsg("read port: %s", strerror(errno));
		port_lost();
		return;
	}
	if (n == 0) {
		port_lost();
		return;
	}
	g_in_len += (size_t)n;
	/* room for the NUL-termination trick in parse_input */
	if (g_in_cap < g_in_len + 1) {
		g_in_cap = g_in_len + 1;
		g_in = realloc(g_in, g_in_cap);
	}
	parse_input();
	/* an almost-complete large frame needs more room: ensure capacity */
	if (g_in_len >= HDR_LEN && get_le32(g_in) == MAGIC) {
		size_t need = HDR_LEN + get_le32(g_in + 12) + 1;
		if (need <= HDR_LEN + MAX_IN_PAYLOAD + 1 && g_in_cap < need + 65536) {
			g_in_cap = need + 65536;
			unsigned char *nb = realloc(g_in, g_in_cap);
			if (!nb) {
				logmsg("out of memory");
				abort();
			}
			g_in = nb;
		}
	}
}

static void port_write(void)
{
	while (g_outq && g_wfd >= 0) {
		struct buf *b = g_outq;
		ssize_t n = write(g_wfd, b->data + b->off, b->len - b->off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			logmsg("write port: %s", strerror(errno));
			port_lost();
			return;
		}
		b->off += (size_t)n;
		g_outq_bytes -= (size_t)n;
		if (b->off == b->len) {
			g_outq = b->next;
			if (!g_outq)
				g_outq_tail = NULL;
			free(b);
		}
	}
}

static void on_sigchld(int sig)
{
	(void)sig;
	int e = errno;
	ssize_t w = write(g_sigpipe[1], "c", 1);
	(void)w;
	errno = e;
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: odl-agent [--stdio | --device PATH | --listen SOCK] [--name NAME]\n"
	        "  default: serve the virtio-serial port '" PORT_NAME "'\n");
	exit(2);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--stdio"))
			g_mode = M_STDIO;
		else if (!strcmp(argv[i], "--device") && i + 1 < argc)
			g_mode = M_DEVICE, g_path = argv[++i];
		else if (!strcmp(argv[i], "--listen") && i + 1 < argc)
			g_mode = M_LISTEN, g_path = argv[++i];
		else if (!strcmp(argv[i], "--name") && i + 1 < argc)
			g_name = argv[++i];
		else
			usage();
	}
	signal(SIGPIPE, SIG_IGN);
	if (pipe2(g_sigpipe, O_CLOEXEC | O_NONBLOCK) != 0) {
		logmsg("pipe: %s", strerror(errno));
		return 1;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigchld;
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);

	if (g_mode == M_STDIO) {
		g_rfd = 0;
		g_wfd = 1;
		set_nonblock(0);
		set_nonblock(1);
	} else if (g_mode == M_LISTEN) {
		struct sockaddr_un sun = {.sun_family = AF_UNIX};
		if (strlen(g_path) >= sizeof(sun.sun_path)) {
			logmsg("socket path too long");
			return 1;
		}
		strcpy(sun.sun_path, g_path);
		unlink(g_path);
		g_lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (g_lfd < 0 || bind(g_lfd, (struct sockaddr *)&sun, sizeof(sun)) != 0 ||
		    listen(g_lfd, 1) != 0) {
			logmsg("listen %s: %s", g_path, strerror(errno));
			return 1;
		}
	} else {
		port_try_open();
	}

	for (;;) {
		int64_t now = now_ms();
		if ((g_mode == M_VIRTIO) && g_rfd < 0 && now >= g_retry_ms)
			port_try_open();

		/* channels whose child exited and whose grace period ended */
		for (struct chan *c = g_chans, *nx; c; c = nx) {
			nx = c->next;
			if (c->kind == C_EXEC && c->exited &&
			    ((c->out_fd < 0 && c->err_fd < 0) || now - c->exit_ms >= ODL_GRACE_MS))
				exec_finish(c);
		}

		size_t nch = 0;
		for (struct chan *c = g_chans; c; c = c->next)
			nch++;
		struct pollfd *pf = xmalloc(sizeof(*pf) * (3 * nch + 4));
		struct chan **owner = xmalloc(sizeof(*owner) * (3 * nch + 4));
		int np = 0;
		int idx_port = -1, idx_listen = -1, idx_sig;
		pf[np] = (struct pollfd){.fd = g_sigpipe[0], .events = POLLIN};
		owner[np] = NULL;
		idx_sig = np++;
		if (g_rfd >= 0) {
			pf[np] = (struct pollfd){.fd = g_rfd, .events = POLLIN};
			owner[np] = NULL;
			idx_port = np++;
			if (g_outq) {
				if (g_wfd == g_rfd) {
					pf[idx_port].events |= POLLOUT;
				} else {
					pf[np] = (struct pollfd){.fd = g_wfd, .events = POLLOUT};
					owner[np] = NULL;
					np++;
				}
			}
		} else if (g_lfd >= 0) {
			pf[np] = (struct pollfd){.fd = g_lfd, .events = POLLIN};
			owner[np] = NULL;
			idx_listen = np++;
		}
		bool room = g_outq_bytes < OUTQ_HIWAT;
		bool grace = false;
		for (struct chan *c = g_chans; c; c = c->next) {
			if (c->kind == C_EXEC) {
				if (c->exited)
					grace = true;
				if (room && c->out_fd >= 0) {
					pf[np] = (struct pollfd){.fd = c->out_fd, .events = POLLIN};
					owner[np++] = c;
				}
				if (room && c->err_fd >= 0) {
					pf[np] = (struct pollfd){.fd = c->err_fd, .events = POLLIN};
					owner[np++] = c;
				}
				if (c->in_fd >= 0 && c->inq) {
					pf[np] = (struct pollfd){.fd = c->in_fd, .events = POLLOUT};
					owner[np++] = c;
				}
			} else if (c->kind == C_GET && room) {
				pf[np] = (struct pollfd){.fd = c->fd, .events = POLLIN};
				owner[np++] = c;
			}
		}
		int timeout = -1;
		if (grace)
			timeout = 50;
		if (g_mode == M_VIRTIO && g_rfd < 0) {
			int64_t w = g_retry_ms - now_ms();
			if (w < 0)
				w = 0;
			if (timeout < 0 || w < timeout)
				timeout = (int)w;
		}
		int r = poll(pf, (nfds_t)np, timeout);
		if (r < 0 && errno != EINTR) {
			logmsg("poll: %s", strerror(errno));
			sleep(1);
		}
		if (r > 0) {
			if (pf[idx_sig].revents) {
				char tmp[64];
				while (read(g_sigpipe[0], tmp, sizeof(tmp)) > 0)
					;
			}
			/* Child pipes first, so that output is queued before EXIT. */
			for (int i = 0; i < np; i++) {
				struct chan *c = owner[i];
				if (!c || !pf[i].revents)
					continue;
				/* the channel may have been freed by a GET finishing
				 * earlier in this loop: check it is still listed */
				bool live = false;
				for (struct chan *x = g_chans; x; x = x->next)
					if (x == c)
						live = true;
				if (!live)
					continue;
				int fd = pf[i].fd;
				if (c->kind == C_EXEC) {
					if (fd == c->out_fd)
						pump_pipe(c, &c->out_fd, T_STDOUT);
					else if (fd == c->err_fd)
						pump_pipe(c, &c->err_fd, T_STDERR);
					else if (fd == c->in_fd)
						pump_stdin(c);
				} else if (c->kind == C_GET && fd == c->fd) {
					pump_get(c);
				}
			}
			if (idx_listen >= 0 && pf[idx_listen].revents) {
				int fd = accept4(g_lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
				if (fd >= 0)
					g_rfd = g_wfd = fd;
			}
			if (idx_port >= 0 && g_rfd >= 0 && (pf[idx_port].revents & (POLLIN | POLLHUP | POLLERR)))
				port_read();
		}
		reap_children();
		if (g_wfd >= 0 && g_outq)
			port_write();
		free(pf);
		free(owner);
	}
}
