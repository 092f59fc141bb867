// SPDX-License-Identifier: MIT
/* The cable's state machine: see cable_core.h and docs/link-protocol.md. */
#include "cable_core.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cable_flight {
	struct cable_flight *next;
	uint64_t release;  /* ns: last bit arrives at the far end */
	uint16_t type;
	bool delayed;      /* counted in cable_end.delayed */
	bool held;         /* delay us=hold: until cable_core_release() */
	const char *note;  /* CABLE_NOTE_FAULT_* or NULL */
	size_t len;
	uint8_t msg[];     /* header + body */
};

void cable_cfg_defaults(struct cable_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->lanes = CABLE_DEFAULT_LANES;
	cfg->lane_gbps = CABLE_DEFAULT_LANE_GBPS;
	cfg->latency_ns = 0;
	cfg->slack_ns = 0;
	cfg->queue_limit = CABLE_DEFAULT_QUEUE_LIMIT;
	cfg->plugged = true;
}

static void core_log(struct cable_core *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void core_log(struct cable_core *c, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!c->ops.log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	c->ops.log(c->ops.ctx, line);
}

static void cevent(struct cable_core *c, uint64_t now, int from, int to,
		   const char *note, const uint8_t *msg, size_t len)
{
	if (c->ops.event)
		c->ops.event(c->ops.ctx, now, from, to, note, msg, len);
}

void cable_core_init(struct cable_core *c, const struct cable_cfg *cfg,
		     const struct cable_ops *ops)
{
	memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	if (c->cfg.lanes < 1 || c->cfg.lanes > 2)
		c->cfg.lanes = CABLE_DEFAULT_LANES;
	if (c->cfg.lane_gbps == 0)
		c->cfg.lane_gbps = CABLE_DEFAULT_LANE_GBPS;
	if (c->cfg.queue_limit == 0)
		c->cfg.queue_limit = CABLE_DEFAULT_QUEUE_LIMIT;
	c->ops = *ops;
	c->plugged = cfg->plugged;
	cable_faults_init(&c->faults);
}

static void flush_wire(struct cable_core *c, int from, uint64_t now,
		       bool count)
{
	struct cable_end *e = &c->end[from];
	struct cable_flight *f = e->head;

	while (f) {
		struct cable_flight *next = f->next;

		if (count) {
			e->dropped++;
			cevent(c, now, from, !from, CABLE_NOTE_DROP_FLIGHT,
			       f->msg, f->len);
		}
		free(f);
		f = next;
	}
	e->head = e->tail = NULL;
	e->flight_bytes = 0;
	e->delayed = 0;
	e->wire_free_at = 0;
	e->wire_carry = 0;
}

void cable_core_fini(struct cable_core *c)
{
	flush_wire(c, 0, 0, false);
	flush_wire(c, 1, 0, false);
}

static unsigned umin(unsigned a, unsigned b)
{
	return a < b ? a : b;
}

/* Recompute the link and send STATE where it changed (or force_end >= 0). */
static void update_link(struct cable_core *c, uint64_t now, int force_end)
{
	struct cable_end *a = &c->end[0], *b = &c->end[1];
	bool up = c->plugged && a->hello && b->hello && !c->hold;

	if (up) {
		unsigned ga = a->info.lane_gbps ? a->info.lane_gbps : ~0u;
		unsigned gb = b->info.lane_gbps ? b->info.lane_gbps : ~0u;

		c->lanes = umin(c->cfg.lanes, umin(a->info.lanes, b->info.lanes));
		c->lane_gbps = umin(c->cfg.lane_gbps, umin(ga, gb));
		if (c->faults.cap_lanes) {
			c->lanes = umin(c->lanes, c->faults.cap_lanes);
			c->lane_gbps = umin(c->lane_gbps, c->faults.cap_gbps);
		}
	}
	if (up != c->link_up) {
		if (up) {
			c->link_up_count++;
			core_log(c, "link up: %u x %u Gb/s, a=0x%016llx b=0x%016llx",
			     c->lanes, c->lane_gbps,
			     (unsigned long long)a->info.uid,
			     (unsigned long long)b->info.uid);
		} else {
			core_log(c, "link down");
			/* a real cable loses what is on the wire */
			flush_wire(c, 0, now, true);
			flush_wire(c, 1, now, true);
		}
		c->link_up = up;
	}
	for (int i = 0; i < 2; i++) {
		struct cable_end *e = &c->end[i];
		struct odl_link_state st;
		uint8_t msg[ODL_HDR_SIZE + ODL_STATE_SIZE];
		size_t len;

		if (!e->connected || !e->hello)
			continue;
		memset(&st, 0, sizeof(st));
		if (up) {
			st.up = 1;
			st.lanes = (uint8_t)c->lanes;
			st.lane_gbps = c->lane_gbps;
			st.peer_uid = c->end[!i].info.uid;
		}
		if (e->state_sent && i != force_end &&
		    !memcmp(&st, &e->state, sizeof(st)))
			continue;
		e->state = st;
		e->state_sent = true;
		len = odl_build_state(msg, &st);
		cevent(c, now, CABLE_SELF, i, NULL, msg, len);
		e->rx_msgs++;
		e->rx_bytes += len;
		c->ops.send(c->ops.ctx, i, msg, len);
	}
}

static void reset_conn(struct cable_end *e)
{
	e->connected = false;
	e->hello = false;
	e->rx_have = 0;
	e->state_sent = false;
	memset(&e->state, 0, sizeof(e->state));
	memset(&e->info, 0, sizeof(e->info));
}

int cable_core_connect(struct cable_core *c, int end, uint64_t now)
{
	struct cable_end *e = &c->end[end];

	(void)now;
	if (e->connected)
		return -1;
	reset_conn(e);
	e->connected = true;
	e->connects++;
	core_log(c, "end %s: connected", odl_ep_name(end));
	return 0;
}

void cable_core_disconnect(struct cable_core *c, int end, uint64_t now)
{
	struct cable_end *e = &c->end[end];

	if (!e->connected)
		return;
	core_log(c, "end %s: disconnected", odl_ep_name(end));
	reset_conn(e);
	update_link(c, now, -1);
}

static void protocol_error(struct cable_core *c, int end, uint64_t now,
			   const char *why)
{
	core_log(c, "end %s: protocol error: %s; closing", odl_ep_name(end), why);
	cable_core_disconnect(c, end, now);
	if (c->ops.close)
		c->ops.close(c->ops.ctx, end, why);
}

/* Serialization time of len bytes on the link, in ns (exact over time). */
static uint64_t wire_time(struct cable_core *c, struct cable_end *e, size_t len)
{
	uint64_t rate = (uint64_t)c->lanes * c->lane_gbps; /* bits per ns */
	uint64_t bits = (uint64_t)len * 8u + e->wire_carry;

	if (rate == 0)
		rate = 1;
	e->wire_carry = bits % rate;
	return bits / rate;
}

static void forward(struct cable_core *c, int from, const uint8_t *msg,
		    size_t len, uint16_t type, uint64_t now)
{
	struct cable_end *e = &c->end[from];
	struct cable_flight *f;
	struct cable_fault_verdict v;
	uint64_t start;

	if (!c->link_up) {
		e->dropped++;
		cevent(c, now, from, !from, CABLE_NOTE_DROP_DOWN, msg, len);
		return;
	}
	if (type == ODL_LINK_DATA && e->flight_bytes > c->cfg.queue_limit) {
		e->dropped++;
		cevent(c, now, from, !from, CABLE_NOTE_DROP_FULL, msg, len);
		return;
	}
	f = malloc(sizeof(*f) + len);
	if (!f) {
		e->dropped++;
		cevent(c, now, from, !from, CABLE_NOTE_DROP_FULL, msg, len);
		return;
	}
	memcpy(f->msg, msg, len);
	f->len = len;
	f->type = type;
	f->next = NULL;
	f->note = NULL;
	f->delayed = false;
	f->held = false;
	cable_faults_on_wire(&c->faults, from, f->msg, len, &v);
	if (v.drop) {
		e->dropped++;
		cevent(c, now, from, !from, CABLE_NOTE_DROP_FAULT, f->msg, len);
		free(f);
		return;
	}
	if (v.corrupted && v.delay_ns)
		f->note = CABLE_NOTE_FAULT_CORRUPT_DELAY;
	else if (v.corrupted)
		f->note = CABLE_NOTE_FAULT_CORRUPT;
	else if (v.tampered && v.delay_ns)
		f->note = CABLE_NOTE_FAULT_TAMPER_DELAY;
	else if (v.tampered)
		f->note = CABLE_NOTE_FAULT_TAMPER;
	else if (v.delay_ns)
		f->note = CABLE_NOTE_FAULT_DELAY;
	start = e->wire_free_at;
	if (start < now) {
		start = now;
		e->wire_carry = 0;
	}
	e->wire_free_at = start + wire_time(c, e, len);
	if (v.delay_ns >= CABLE_DELAY_HOLD) {
		f->release = UINT64_MAX;
		f->held = true;
	} else {
		f->release = e->wire_free_at + c->cfg.latency_ns + v.delay_ns;
	}
	if (v.delay_ns) {
		f->delayed = true;
		e->delayed++;
	}
	if (e->tail)
		e->tail->next = f;
	else
		e->head = f;
	e->tail = f;
	e->flight_bytes += len;
}

static void handle_msg(struct cable_core *c, int end, uint64_t now)
{
	struct cable_end *e = &c->end[end];
	struct odl_link_hdr h;
	const uint8_t *body = e->rx + ODL_HDR_SIZE;
	char err[128];

	odl_hdr_decode(e->rx, &h);
	if (odl_msg_validate(h.type, body, h.len, err, sizeof(err))) {
		protocol_error(c, end, now, err);
		return;
	}
	e->tx_msgs++;
	e->tx_bytes += ODL_HDR_SIZE + h.len;
	if (!e->hello && h.type != ODL_LINK_HELLO) {
		snprintf(err, sizeof(err), "%s before HELLO",
			 odl_type_name(h.type));
		protocol_error(c, end, now, err);
		return;
	}
	switch (h.type) {
	case ODL_LINK_HELLO: {
		struct odl_link_hello info;

		odl_hello_decode(body, &info);
		cevent(c, now, end, CABLE_SELF, NULL, e->rx,
		       ODL_HDR_SIZE + h.len);
		if (e->hello)
			core_log(c, "end %s: repeated HELLO", odl_ep_name(end));
		e->info = info;
		e->hello = true;
		core_log(c, "end %s: HELLO uid=0x%016llx lanes=%u lane_gbps=%u profile=%s",
		     odl_ep_name(end), (unsigned long long)info.uid, info.lanes,
		     info.lane_gbps, info.profile);
		update_link(c, now, end);
		break;
	}
	case ODL_LINK_STATE:
		protocol_error(c, end, now, "STATE from a model");
		break;
	default:
		forward(c, end, e->rx, ODL_HDR_SIZE + h.len, h.type, now);
		break;
	}
}

void cable_core_rx(struct cable_core *c, int end, const uint8_t *buf, size_t n,
		   uint64_t now)
{
	struct cable_end *e = &c->end[end];

	while (n && e->connected) {
		size_t want, take;

		if (e->rx_have < ODL_HDR_SIZE) {
			want = ODL_HDR_SIZE;
		} else {
			uint32_t len = odl_get32(e->rx);

			want = ODL_HDR_SIZE + len;
		}
		take = want - e->rx_have;
		if (take > n)
			take = n;
		memcpy(e->rx + e->rx_have, buf, take);
		e->rx_have += take;
		buf += take;
		n -= take;
		if (e->rx_have == ODL_HDR_SIZE) {
			uint32_t len = odl_get32(e->rx);

			if (len > ODL_LINK_MAX_BODY) {
				char err[96];

				snprintf(err, sizeof(err),
					 "oversized message (type %u, len %u)",
					 odl_get16(e->rx + 4), len);
				protocol_error(c, end, now, err);
				return;
			}
		}
		if (e->rx_have >= ODL_HDR_SIZE &&
		    e->rx_have == ODL_HDR_SIZE + odl_get32(e->rx)) {
			handle_msg(c, end, now);
			e->rx_have = 0;
		}
	}
	cable_core_tick(c, now);
}

void cable_core_plug(struct cable_core *c, uint64_t now)
{
	c->replug_at = 0;
	if (c->plugged)
		return;
	c->plugged = true;
	c->plug_count++;
	core_log(c, "plugged");
	update_link(c, now, -1);
}

void cable_core_unplug(struct cable_core *c, uint64_t now)
{
	c->replug_at = 0;
	if (!c->plugged)
		return;
	c->plugged = false;
	core_log(c, "unplugged");
	update_link(c, now, -1);
}

/* Deliver (or drop for a full queue) one message taken off the wire. */
static bool deliver(struct cable_core *c, int from, struct cable_flight *f,
		    uint64_t now)
{
	struct cable_end *e = &c->end[from];
	struct cable_end *peer = &c->end[!from];
	uint64_t replug_ns = 0;
	bool unplug = false;

	if (f->type == ODL_LINK_DATA && c->ops.backlog &&
	    c->ops.backlog(c->ops.ctx, !from) > c->cfg.queue_limit) {
		e->dropped++;
		cevent(c, now, from, !from, CABLE_NOTE_DROP_FULL, f->msg,
		       f->len);
	} else {
		cevent(c, now, from, !from, f->note, f->msg, f->len);
		peer->rx_msgs++;
		peer->rx_bytes += f->len;
		c->ops.send(c->ops.ctx, !from, f->msg, f->len);
		if (f->type == ODL_LINK_DATA)
			unplug = cable_faults_on_delivered(&c->faults, from,
							   f->msg, f->len,
							   &replug_ns);
	}
	free(f);
	if (unplug) {
		core_log(c, "fault: unplug-after fired (%s->%s)%s",
			 odl_ep_name(from), odl_ep_name(!from),
			 replug_ns ? ", replug scheduled" : "");
		cable_core_unplug(c, now);
		if (replug_ns)
			c->replug_at = now + replug_ns;
	}
	return unplug;
}

void cable_core_tick(struct cable_core *c, uint64_t now)
{
	if (c->hold && now >= c->hold_until) {
		c->hold = false;
		core_log(c, "retrain: link training again");
		update_link(c, now, -1);
	}
	if (c->replug_at && now >= c->replug_at) {
		c->replug_at = 0;
		core_log(c, "fault: replug");
		cable_core_plug(c, now);
	}
	for (int from = 0; from < 2; from++) {
		struct cable_end *e = &c->end[from];
		struct cable_flight **pp = &e->head, *prev = NULL;

		/*
		 * Release times are monotonic along the FIFO except for
		 * messages a delay fault holds back: while there are such,
		 * scan the whole wire so that other messages overtake them.
		 */
		while (*pp) {
			struct cable_flight *f = *pp;

			if (f->held || f->release > now + c->cfg.slack_ns) {
				if (!e->delayed)
					break;
				prev = f;
				pp = &f->next;
				continue;
			}
			*pp = f->next;
			if (e->tail == f)
				e->tail = prev;
			e->flight_bytes -= f->len;
			if (f->delayed)
				e->delayed--;
			if (deliver(c, from, f, now))
				return; /* unplugged: both wires flushed */
		}
	}
}

unsigned cable_core_release(struct cable_core *c, uint64_t now)
{
	unsigned n = 0;

	for (int i = 0; i < 2; i++) {
		struct cable_flight *f;

		for (f = c->end[i].head; f; f = f->next) {
			if (!f->held)
				continue;
			f->held = false;
			f->release = now;
			n++;
		}
	}
	return n;
}

uint64_t cable_core_next_deadline(const struct cable_core *c)
{
	uint64_t t = UINT64_MAX;

	if (c->hold)
		t = c->hold_until;
	if (c->replug_at && c->replug_at < t)
		t = c->replug_at;
	for (int i = 0; i < 2; i++) {
		const struct cable_flight *f;

		for (f = c->end[i].head; f; f = f->next) {
			uint64_t r;

			if (f->held) /* no deadline: waits for a release */
				continue;
			r = f->release > c->cfg.slack_ns ?
				f->release - c->cfg.slack_ns : 0;
			if (r < t)
				t = r;
			if (!c->end[i].delayed)
				break;
		}
	}
	return t;
}

int cable_core_retrain(struct cable_core *c, unsigned lanes, unsigned gbps,
		       bool live, uint64_t down_ns, uint64_t now)
{
	c->faults.cap_lanes = lanes;
	c->faults.cap_gbps = lanes ? gbps : 0;
	if (!c->link_up && !c->hold)
		return 0;
	c->faults.tot_retrains++;
	if (lanes)
		core_log(c, "retrain to %u x %u Gb/s (%s)", lanes, gbps,
			 live ? "live" : "down/up");
	else
		core_log(c, "retrain to full rate (%s)", live ? "live" : "down/up");
	if (c->hold) {
		/* already held down by a retrain: the new cap applies when
		 * it comes back */
		return 1;
	}
	if (live) {
		update_link(c, now, -1);
		return 1;
	}
	c->hold = true;
	update_link(c, now, -1);
	if (down_ns) {
		c->hold_until = now + down_ns;
	} else {
		c->hold = false;
		update_link(c, now, -1);
	}
	return 1;
}

static void json_str(char *out, size_t n, const char *s)
{
	size_t k = 0;

	for (; *s && k + 7 < n; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\') {
			out[k++] = '\\';
			out[k++] = (char)ch;
		} else if (ch < 0x20 || ch >= 0x7f) {
			k += (size_t)snprintf(out + k, n - k, "\\u%04x", ch);
		} else {
			out[k++] = (char)ch;
		}
	}
	out[k] = '\0';
}

size_t cable_core_status_json(const struct cable_core *c, char *buf, size_t n)
{
	char ends[2][512];
	char faults[CABLE_FAULT_MAX * 400 + 512];
	int r;

	for (int i = 0; i < 2; i++) {
		const struct cable_end *e = &c->end[i];
		char prof[200];

		json_str(prof, sizeof(prof), e->hello ? e->info.profile : "");
		snprintf(ends[i], sizeof(ends[i]),
			 "{\"connected\":%s,\"hello\":%s,\"uid\":\"0x%016llx\","
			 "\"profile\":\"%s\",\"tx_msgs\":%llu,\"tx_bytes\":%llu,"
			 "\"rx_msgs\":%llu,\"rx_bytes\":%llu,\"dropped\":%llu,"
			 "\"in_flight\":%zu,\"connects\":%llu}",
			 e->connected ? "true" : "false",
			 e->hello ? "true" : "false",
			 (unsigned long long)(e->hello ? e->info.uid : 0), prof,
			 (unsigned long long)e->tx_msgs,
			 (unsigned long long)e->tx_bytes,
			 (unsigned long long)e->rx_msgs,
			 (unsigned long long)e->rx_bytes,
			 (unsigned long long)e->dropped, e->flight_bytes,
			 (unsigned long long)e->connects);
	}
	cable_faults_json(&c->faults, faults, sizeof(faults));
	r = snprintf(buf, n,
		     "{\"plugged\":%s,\"link_up\":%s,\"ends\":{\"a\":%s,\"b\":%s},"
		     "\"lanes\":%u,\"lane_gbps\":%u,\"latency_us\":%llu,"
		     "\"plug_count\":%llu,\"link_up_count\":%llu,\"faults\":%s}",
		     c->plugged ? "true" : "false", c->link_up ? "true" : "false",
		     ends[0], ends[1], c->link_up ? c->lanes : c->cfg.lanes,
		     c->link_up ? c->lane_gbps : c->cfg.lane_gbps,
		     (unsigned long long)(c->cfg.latency_ns / 1000u),
		     (unsigned long long)c->plug_count,
		     (unsigned long long)c->link_up_count, faults);
	if (r < 0)
		return 0;
	return (size_t)r < n ? (size_t)r : (n ? n - 1 : 0);
}

/* ------------------------------------------------------------------ */
/* control commands */

static int reply(char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int reply(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	return 1;
}

static int kv_num(const char *w, const char *key, unsigned long long max,
		  unsigned long long *out)
{
	size_t k = strlen(key);
	char *e;

	if (strncmp(w, key, k) || w[k] != '=' || !w[k + 1] || w[k + 1] == '-')
		return -1;
	*out = strtoull(w + k + 1, &e, 0);
	return (*e || *out > max) ? -1 : 0;
}

#define FAULT_USAGE "usage: fault seed N | list | clear | remove ID | " \
	"drop|corrupt|tamper|delay|withhold-credits [hop=H|any|ctrl] [dir=a2b|b2a|both] " \
	"[nth=N|every=N|from=N|ppm=P] [eof=PDF[,PDF|-PDF]] [count=N|all] [bit=K|bits=LO-HI] " \
	"[us=N|us=hold] | release | " \
	"unplug-after frames=N [hop=H] [dir=D] [replug_ms=M] | " \
	"retrain lanes=1|2 gbps=G [mode=bounce|live] [down_us=N] | retrain off"

static int ctl_retrain(struct cable_core *c, char *args, uint64_t now,
		       char *buf, size_t n)
{
	char *save = NULL, *w;
	unsigned long long lanes = 0, gbps = 0, down_us = 0, v;
	bool live = false, off = false;
	int r;

	for (w = strtok_r(args, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (!strcmp(w, "off"))
			off = true;
		else if (!kv_num(w, "lanes", 2, &v) && v >= 1)
			lanes = v;
		else if (!kv_num(w, "gbps", 1000000, &v) && v >= 1)
			gbps = v;
		else if (!kv_num(w, "down_us", 60000000, &v) ||
			 !kv_num(w, "down-us", 60000000, &v))
			down_us = v;
		else if (!strcmp(w, "mode=live"))
			live = true;
		else if (!strcmp(w, "mode=bounce"))
			live = false;
		else
			return reply(buf, n, "error: fault retrain: bad argument '%s'", w);
	}
	if (off == (lanes || gbps) || (!off && (!lanes || !gbps)))
		return reply(buf, n, "error: fault retrain: give lanes=1|2 gbps=G, or off");
	if (live && down_us)
		return reply(buf, n, "error: fault retrain: down_us= needs mode=bounce");
	r = cable_core_retrain(c, (unsigned)lanes, (unsigned)gbps, live,
			       down_us * 1000u, now);
	if (!r)
		return reply(buf, n, "ok link down; applies at the next training");
	if (c->hold)
		return reply(buf, n, "ok retraining (down for %llu us)", down_us);
	return reply(buf, n, "ok link %u x %u Gb/s", c->lanes, c->lane_gbps);
}

static int ctl_fault(struct cable_core *c, char *args, uint64_t now, char *buf,
		     size_t n)
{
	char *w = args, *rest;
	unsigned long long v;
	char err[256];

	while (*w == ' ' || *w == '\t')
		w++;
	rest = w + strcspn(w, " \t");
	if (*rest)
		*rest++ = '\0';
	while (*rest == ' ' || *rest == '\t')
		rest++;
	if (!*w || !strcmp(w, "help"))
		return reply(buf, n, "%s", FAULT_USAGE);
	if (!strcmp(w, "seed")) {
		char *e;

		errno = 0;
		v = *rest ? strtoull(rest, &e, 0) : 0;
		if (!*rest || *rest == '-' || *e || errno)
			return reply(buf, n, "error: fault seed: expected a number");
		cable_faults_seed(&c->faults, v);
		core_log(c, "fault: seed %llu", v);
		return reply(buf, n, "ok seed=%llu", v);
	}
	if (!strcmp(w, "list")) {
		cable_faults_list(&c->faults, buf, n);
		return 1;
	}
	if (!strcmp(w, "clear")) {
		bool had_cap = c->faults.cap_lanes != 0;
		unsigned held = cable_core_release(c, now);

		cable_faults_clear(&c->faults);
		c->replug_at = 0;
		if (c->hold) {
			c->hold = false;
			update_link(c, now, -1);
		}
		core_log(c, "fault: cleared%s; %u held message(s) released",
			 had_cap ? " (the retrain cap goes at the next training)" : "",
			 held);
		return reply(buf, n, "ok");
	}
	if (!strcmp(w, "remove")) {
		char *e;

		v = strtoull(rest, &e, 0);
		if (!*rest || *e || cable_faults_remove(&c->faults, (unsigned)v))
			return reply(buf, n, "error: fault remove: no fault '%s'", rest);
		return reply(buf, n, "ok");
	}
	if (!strcmp(w, "retrain"))
		return ctl_retrain(c, rest, now, buf, n);
	if (!strcmp(w, "release")) {
		unsigned held;

		if (*rest)
			return reply(buf, n, "error: fault release takes no arguments");
		held = cable_core_release(c, now);
		core_log(c, "fault: released %u held message(s)", held);
		return reply(buf, n, "ok released %u", held);
	}
	{
		char line[1100];
		struct cable_fault *f;

		snprintf(line, sizeof(line), "%s %s", w, rest);
		f = cable_faults_add(&c->faults, line, err, sizeof(err));
		if (!f)
			return reply(buf, n, "error: fault %s", err);
		cable_fault_describe(f, line, sizeof(line));
		core_log(c, "fault: added %s", line);
		return reply(buf, n, "ok %s", line);
	}
}

int cable_core_ctl(struct cable_core *c, const char *cmd, uint64_t now,
		   char *buf, size_t n)
{
	char line[1024];

	if (!strcmp(cmd, "plug")) {
		cable_core_plug(c, now);
		return reply(buf, n, "ok");
	}
	if (!strcmp(cmd, "unplug")) {
		cable_core_unplug(c, now);
		return reply(buf, n, "ok");
	}
	if (!strcmp(cmd, "status")) {
		cable_core_status_json(c, buf, n);
		return 1;
	}
	if (strncmp(cmd, "fault", 5) || (cmd[5] && cmd[5] != ' ' && cmd[5] != '\t'))
		return 0;
	if (strlen(cmd) >= sizeof(line))
		return reply(buf, n, "error: fault: line too long");
	strcpy(line, cmd + 5);
	return ctl_fault(c, line, now, buf, n);
}
