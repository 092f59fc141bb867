// SPDX-License-Identifier: MIT
/* Deterministic fault injection rules for the cable: see cable_fault.h. */
#include "cable_fault.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "link_msg.h"

#define MAX_DELAY_US 60000000ull   /* 60 s */
#define MAX_REPLUG_MS 3600000ull   /* 1 h */

/* ------------------------------------------------------------------ */
/* random streams */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*; the state is never 0 (see seed_rule) */
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static void seed_rule(const struct cable_faults *fs, struct cable_fault *f)
{
	for (int d = 0; d < 2; d++) {
		uint64_t x = fs->seed ^ ((uint64_t)f->id << 32) ^ (uint64_t)(d + 1);

		f->rng[d] = splitmix64(&x);
		if (!f->rng[d])
			f->rng[d] = 0x9e3779b97f4a7c15ull;
	}
}

/* ------------------------------------------------------------------ */
/* table */

void cable_faults_init(struct cable_faults *fs)
{
	memset(fs, 0, sizeof(*fs));
	fs->next_id = 1;
}

void cable_faults_clear(struct cable_faults *fs)
{
	fs->n = 0;
	memset(fs->f, 0, sizeof(fs->f));
	fs->cap_lanes = fs->cap_gbps = 0;
}

void cable_faults_seed(struct cable_faults *fs, uint64_t seed)
{
	fs->seed = seed;
	for (unsigned i = 0; i < fs->n; i++)
		seed_rule(fs, &fs->f[i]);
}

int cable_faults_remove(struct cable_faults *fs, unsigned id)
{
	for (unsigned i = 0; i < fs->n; i++) {
		if (fs->f[i].id != id)
			continue;
		memmove(&fs->f[i], &fs->f[i + 1],
			(fs->n - i - 1) * sizeof(fs->f[0]));
		fs->n--;
		return 0;
	}
	return -1;
}

const char *cable_fault_kind_name(enum cable_fault_kind k)
{
	switch (k) {
	case CF_DROP: return "drop";
	case CF_CORRUPT: return "corrupt";
	case CF_WITHHOLD: return "withhold-credits";
	case CF_DELAY: return "delay";
	case CF_UNPLUG_AFTER: return "unplug-after";
	case CF_TAMPER: return "tamper";
	}
	return "?";
}

/* ------------------------------------------------------------------ */
/* parsing */

static int perr(char *err, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int perr(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;

	if (err && n) {
		va_start(ap, fmt);
		vsnprintf(err, n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static int num(const char *s, uint64_t max, uint64_t *out)
{
	char *e;
	unsigned long long v;

	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoull(s, &e, 0);
	if (errno || *e || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_kind(const char *w, enum cable_fault_kind *k)
{
	if (!strcmp(w, "drop"))
		*k = CF_DROP;
	else if (!strcmp(w, "corrupt"))
		*k = CF_CORRUPT;
	else if (!strcmp(w, "tamper"))
		*k = CF_TAMPER;
	else if (!strcmp(w, "withhold-credits") || !strcmp(w, "withhold"))
		*k = CF_WITHHOLD;
	else if (!strcmp(w, "delay"))
		*k = CF_DELAY;
	else if (!strcmp(w, "unplug-after"))
		*k = CF_UNPLUG_AFTER;
	else
		return -1;
	return 0;
}

/* "4,5" or "4-5" or "6": a set of PDF values 0..15 as a bit mask */
static int parse_pdf_set(const char *arg, uint16_t *mask)
{
	char val[64], *save = NULL, *w;
	uint64_t lo, hi;

	*mask = 0;
	if (strlen(arg) >= sizeof(val))
		return -1;
	strcpy(val, arg);
	if (!*val || *val == ',' || val[strlen(val) - 1] == ',' ||
	    strstr(val, ",,"))
		return -1;
	for (w = strtok_r(val, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(w, '-');

		if (dash)
			*dash = '\0';
		if (num(w, 15, &lo) || (dash && num(dash + 1, 15, &hi)))
			return -1;
		if (!dash)
			hi = lo;
		if (hi < lo)
			return -1;
		for (uint64_t v = lo; v <= hi; v++)
			*mask |= (uint16_t)(1u << v);
	}
	return 0;
}

static int parse_rule(struct cable_fault *f, const char *args, char *err,
		      size_t errlen)
{
	char buf[512], *save = NULL, *w;
	const char *kname;
	bool have_us = false, have_frames = false;
	int nsel = 0;

	if (strlen(args) >= sizeof(buf))
		return perr(err, errlen, "arguments too long");
	strcpy(buf, args);
	w = strtok_r(buf, " \t", &save);
	if (!w || parse_kind(w, &f->kind))
		return perr(err, errlen,
			    "'%s'? expected seed, list, clear, remove, release, retrain, drop, "
			    "corrupt, tamper, withhold-credits, delay or unplug-after",
			    w ? w : "");
	kname = cable_fault_kind_name(f->kind);
	f->hop = CABLE_FAULT_HOP_ANY;
	f->dir = CABLE_FAULT_DIR_BOTH;
	f->bit = -1;
	f->bit_hi = -1;
	while ((w = strtok_r(NULL, " \t", &save))) {
		char *eq = strchr(w, '=');
		const char *key = w, *val;
		uint64_t v;

		if (!eq)
			return perr(err, errlen, "%s: expected key=value, got '%s'",
				    kname, w);
		*eq = '\0';
		val = eq + 1;
		if (!strcmp(key, "hop")) {
			if (!strcmp(val, "any"))
				f->hop = CABLE_FAULT_HOP_ANY;
			else if (!strcmp(val, "ctrl"))
				f->hop = CABLE_FAULT_HOP_CTRL;
			else if (num(val, 0xffff, &v))
				return perr(err, errlen, "%s: bad hop '%s'", kname, val);
			else
				f->hop = (int)v;
		} else if (!strcmp(key, "dir")) {
			if (!strcmp(val, "a2b"))
				f->dir = 0;
			else if (!strcmp(val, "b2a"))
				f->dir = 1;
			else if (!strcmp(val, "both"))
				f->dir = CABLE_FAULT_DIR_BOTH;
			else
				return perr(err, errlen,
					    "%s: dir must be a2b, b2a or both", kname);
		} else if (!strcmp(key, "nth") || !strcmp(key, "every") ||
			   !strcmp(key, "from")) {
			if (num(val, UINT64_MAX, &v) || v == 0)
				return perr(err, errlen, "%s: bad %s '%s'", kname,
					    key, val);
			if (key[0] == 'n')
				f->nth = v;
			else if (key[0] == 'e')
				f->every = v;
			else
				f->from = v;
			nsel++;
		} else if (!strcmp(key, "ppm")) {
			if (num(val, 1000000, &v) || v == 0)
				return perr(err, errlen,
					    "%s: ppm must be 1..1000000", kname);
			f->ppm = (uint32_t)v;
			nsel++;
		} else if (!strcmp(key, "eof")) {
			if (parse_pdf_set(val, &f->eof_mask))
				return perr(err, errlen,
					    "%s: eof= takes PDF values 0..15 (4,5 or 4-5)",
					    kname);
		} else if (!strcmp(key, "count")) {
			if (!strcmp(val, "all"))
				f->count = 0;
			else if (num(val, UINT64_MAX, &v) || v == 0)
				return perr(err, errlen, "%s: bad count '%s'", kname, val);
			else
				f->count = v;
		} else if (!strcmp(key, "bit") &&
			   (f->kind == CF_CORRUPT || f->kind == CF_TAMPER)) {
			if (num(val, 0x7fffffff, &v))
				return perr(err, errlen, "%s: bad bit '%s'", kname, val);
			f->bit = (int)v;
			f->bit_hi = -1;
		} else if (!strcmp(key, "bits") &&
			   (f->kind == CF_CORRUPT || f->kind == CF_TAMPER)) {
			char *dash = strchr(val, '-');
			uint64_t hi;

			if (!dash)
				return perr(err, errlen, "%s: bits=LO-HI, got '%s'", kname, val);
			*dash = '\0';
			if (num(val, 0x7fffffff, &v) || num(dash + 1, 0x7fffffff, &hi) ||
			    hi < v)
				return perr(err, errlen, "%s: bad bits '%s-%s' (LO-HI, LO <= HI)",
					    kname, val, dash + 1);
			f->bit = (int)v;
			f->bit_hi = (int)hi;
		} else if (!strcmp(key, "us") && f->kind == CF_DELAY) {
			if (!strcmp(val, "hold"))
				f->delay_ns = CABLE_DELAY_HOLD;
			else if (num(val, MAX_DELAY_US, &v))
				return perr(err, errlen,
					    "delay: us must be 0..%llu or hold",
					    MAX_DELAY_US);
			else
				f->delay_ns = v * 1000u;
			have_us = true;
		} else if (!strcmp(key, "frames") && f->kind == CF_UNPLUG_AFTER) {
			if (num(val, UINT64_MAX, &v) || v == 0)
				return perr(err, errlen, "unplug-after: bad frames '%s'",
					    val);
			f->frames = v;
			have_frames = true;
		} else if ((!strcmp(key, "replug_ms") || !strcmp(key, "replug-ms")) &&
			   f->kind == CF_UNPLUG_AFTER) {
			if (num(val, MAX_REPLUG_MS, &v))
				return perr(err, errlen, "unplug-after: bad replug_ms '%s'",
					    val);
			f->replug_ns = v * 1000000u;
		} else {
			return perr(err, errlen, "%s: unknown option '%s'", kname, key);
		}
	}
	if (nsel > 1)
		return perr(err, errlen, "%s: give at most one of nth=, every=, from=, ppm=",
			    kname);
	/* the PDF is a DATA frame's: not a control packet's, not a credit's */
	if (f->eof_mask && (f->hop == CABLE_FAULT_HOP_CTRL || f->kind == CF_WITHHOLD ||
			    f->kind == CF_UNPLUG_AFTER))
		return perr(err, errlen, "%s: eof= selects DATA frames: not with %s",
			    kname, f->hop == CABLE_FAULT_HOP_CTRL ? "hop=ctrl" : kname);
	switch (f->kind) {
	case CF_DELAY:
		if (!have_us)
			return perr(err, errlen, "delay: us=N or us=hold is required");
		break;
	case CF_UNPLUG_AFTER:
		if (!have_frames)
			return perr(err, errlen, "unplug-after: frames=N is required");
		if (nsel || f->count)
			return perr(err, errlen,
				    "unplug-after: takes frames=, hop=, dir=, replug_ms=");
		if (f->hop == CABLE_FAULT_HOP_CTRL)
			return perr(err, errlen, "unplug-after: counts DATA frames; hop=0 not allowed");
		break;
	case CF_TAMPER:
		/* a control packet carries its own CRC, which would catch it */
		if (f->hop == CABLE_FAULT_HOP_CTRL)
			return perr(err, errlen, "tamper: acts on DATA frames; hop=0 not allowed");
		break;
	case CF_WITHHOLD:
		break;
	case CF_DROP:
	case CF_CORRUPT:
		break;
	}
	return 0;
}

struct cable_fault *cable_faults_add(struct cable_faults *fs, const char *args,
				     char *err, size_t errlen)
{
	struct cable_fault f;

	memset(&f, 0, sizeof(f));
	if (parse_rule(&f, args, err, errlen))
		return NULL;
	if (fs->n >= CABLE_FAULT_MAX) {
		perr(err, errlen, "too many faults (max %d); fault clear or fault remove ID",
		     CABLE_FAULT_MAX);
		return NULL;
	}
	f.id = fs->next_id++;
	seed_rule(fs, &f);
	fs->f[fs->n] = f;
	return &fs->f[fs->n++];
}

/* ------------------------------------------------------------------ */
/* decisions */

static bool rule_matches(const struct cable_fault *f, int dir, uint16_t type,
			 const uint8_t *body, size_t blen)
{
	uint16_t hop;

	if (f->done || (f->dir >= 0 && f->dir != dir))
		return false;
	if (f->kind == CF_WITHHOLD) {
		if (type != ODL_LINK_CREDIT || blen < ODL_CREDIT_SIZE)
			return false;
		if (odl_get16(body + 2) == 0)
			return false; /* a credit sync grants nothing */
		hop = odl_get16(body);
		return f->hop == CABLE_FAULT_HOP_ANY || f->hop == hop;
	}
	if (f->hop == CABLE_FAULT_HOP_CTRL)
		return type == ODL_LINK_CTRL;
	if (type != ODL_LINK_DATA || blen < ODL_DATA_SIZE)
		return false;
	if (f->eof_mask && !(f->eof_mask & (1u << (body[3] & 0xf))))
		return false;
	hop = odl_get16(body);
	return f->hop == CABLE_FAULT_HOP_ANY || f->hop == hop;
}

/* Count a matching message; true if the rule acts on it. */
static bool rule_select(struct cable_fault *f, int dir)
{
	uint64_t k = ++f->seen[dir];
	bool hit;

	if (f->nth)
		hit = k == f->nth;
	else if (f->every)
		hit = k % f->every == 0;
	else if (f->from)
		hit = k >= f->from;
	else if (f->ppm)
		hit = rng_next(&f->rng[dir]) % 1000000u < f->ppm;
	else
		hit = true;
	if (hit)
		f->hits[dir]++;
	if (f->count && f->hits[0] + f->hits[1] >= f->count)
		f->done = true;
	if (f->nth) {
		bool pa = f->seen[0] >= f->nth, pb = f->seen[1] >= f->nth;

		if (f->dir == 0 ? pa : f->dir == 1 ? pb : (pa && pb))
			f->done = true;
	}
	return hit;
}

/* corrupt: flip a bit and flag the frame (CRC_ERR); tamper: flip a bit
 * and leave the frame looking intact, as a peer that sends wrong contents
 * (or an error the link's CRC missed) would
 */
static void corrupt(struct cable_fault *f, int dir, uint16_t type,
		    uint8_t *body, size_t blen)
{
	uint8_t *p;
	size_t plen;
	uint64_t bit;

	if (type == ODL_LINK_DATA) {
		p = body + ODL_DATA_SIZE;
		plen = blen - ODL_DATA_SIZE;
		if (f->kind == CF_CORRUPT)
			odl_put16(body + 4, odl_get16(body + 4) | ODL_LINK_DATA_CRC_ERR);
	} else { /* CTRL: the packet after the 4-byte odl_link_ctrl */
		p = body + ODL_CTRL_SIZE;
		plen = blen > ODL_CTRL_SIZE ? blen - ODL_CTRL_SIZE : 0;
	}
	if (!plen)
		return;
	if (f->bit >= 0 && f->bit_hi >= 0)
		bit = ((uint64_t)f->bit +
		       rng_next(&f->rng[dir]) % ((uint64_t)(f->bit_hi - f->bit) + 1)) %
		      (8u * plen);
	else if (f->bit >= 0)
		bit = (uint64_t)f->bit % (8u * plen);
	else
		bit = rng_next(&f->rng[dir]) % (8u * plen);
	p[bit / 8] ^= (uint8_t)(1u << (bit % 8));
}

void cable_faults_on_wire(struct cable_faults *fs, int dir, uint8_t *msg,
			  size_t len, struct cable_fault_verdict *v)
{
	uint16_t type;
	uint8_t *body = msg + ODL_HDR_SIZE;
	size_t blen;

	memset(v, 0, sizeof(*v));
	if (!fs->n || len < ODL_HDR_SIZE)
		return;
	type = odl_get16(msg + 4);
	blen = len - ODL_HDR_SIZE;
	for (unsigned i = 0; i < fs->n; i++) {
		struct cable_fault *f = &fs->f[i];

		if (f->kind == CF_UNPLUG_AFTER ||
		    !rule_matches(f, dir, type, body, blen) ||
		    !rule_select(f, dir))
			continue;
		switch (f->kind) {
		case CF_DROP:
			fs->tot_dropped++;
			v->drop = true;
			return; /* later rules do not see it */
		case CF_WITHHOLD:
			fs->tot_withheld++;
			f->credits += odl_get16(body + 2);
			v->drop = true;
			return;
		case CF_CORRUPT:
			fs->tot_corrupted++;
			corrupt(f, dir, type, body, blen);
			v->corrupted = true;
			break;
		case CF_TAMPER:
			fs->tot_tampered++;
			corrupt(f, dir, type, body, blen);
			v->tampered = true;
			break;
		case CF_DELAY:
			fs->tot_delayed++;
			/* a hold stays a hold whatever else adds up */
			if (f->delay_ns >= CABLE_DELAY_HOLD ||
			    v->delay_ns >= CABLE_DELAY_HOLD)
				v->delay_ns = CABLE_DELAY_HOLD;
			else
				v->delay_ns += f->delay_ns;
			break;
		case CF_UNPLUG_AFTER:
			break;
		}
	}
}

bool cable_faults_on_delivered(struct cable_faults *fs, int dir,
			       const uint8_t *msg, size_t len,
			       uint64_t *replug_ns)
{
	uint16_t type;

	if (!fs->n || len < ODL_HDR_SIZE)
		return false;
	type = odl_get16(msg + 4);
	for (unsigned i = 0; i < fs->n; i++) {
		struct cable_fault *f = &fs->f[i];

		if (f->kind != CF_UNPLUG_AFTER ||
		    !rule_matches(f, dir, type, msg + ODL_HDR_SIZE,
				  len - ODL_HDR_SIZE))
			continue;
		f->seen[dir]++;
		if (f->seen[0] + f->seen[1] < f->frames)
			continue;
		f->hits[dir]++;
		f->done = true;
		fs->tot_unplugs++;
		*replug_ns = f->replug_ns;
		return true;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* text */

static const char *dir_name(int dir)
{
	return dir == 0 ? "a2b" : dir == 1 ? "b2a" : "both";
}

static void sb_hop(struct odl_sb *s, int hop)
{
	if (hop == CABLE_FAULT_HOP_ANY)
		odl_sbf(s, "any");
	else if (hop == CABLE_FAULT_HOP_CTRL)
		odl_sbf(s, "ctrl");
	else
		odl_sbf(s, "%d", hop);
}

static void describe(struct odl_sb *s, const struct cable_fault *f)
{
	odl_sbf(s, "#%u %s hop=", f->id, cable_fault_kind_name(f->kind));
	sb_hop(s, f->hop);
	odl_sbf(s, " dir=%s", dir_name(f->dir));
	if (f->nth)
		odl_sbf(s, " nth=%llu", (unsigned long long)f->nth);
	if (f->every)
		odl_sbf(s, " every=%llu", (unsigned long long)f->every);
	if (f->from)
		odl_sbf(s, " from=%llu", (unsigned long long)f->from);
	if (f->ppm)
		odl_sbf(s, " ppm=%u", f->ppm);
	if (f->eof_mask) {
		const char *sep = " eof=";

		for (unsigned v = 0; v < 16; v++) {
			if (f->eof_mask & (1u << v)) {
				odl_sbf(s, "%s%u", sep, v);
				sep = ",";
			}
		}
	}
	if (f->count)
		odl_sbf(s, " count=%llu", (unsigned long long)f->count);
	if (f->kind == CF_CORRUPT || f->kind == CF_TAMPER) {
		if (f->bit >= 0 && f->bit_hi >= 0)
			odl_sbf(s, " bits=%d-%d", f->bit, f->bit_hi);
		else if (f->bit >= 0)
			odl_sbf(s, " bit=%d", f->bit);
		else
			odl_sbf(s, " bit=random");
	}
	if (f->kind == CF_DELAY && f->delay_ns >= CABLE_DELAY_HOLD)
		odl_sbf(s, " us=hold");
	else if (f->kind == CF_DELAY)
		odl_sbf(s, " us=%llu", (unsigned long long)(f->delay_ns / 1000u));
	if (f->kind == CF_UNPLUG_AFTER) {
		odl_sbf(s, " frames=%llu", (unsigned long long)f->frames);
		if (f->replug_ns)
			odl_sbf(s, " replug_ms=%llu",
			    (unsigned long long)(f->replug_ns / 1000000u));
	}
}

size_t cable_fault_describe(const struct cable_fault *f, char *buf, size_t n)
{
	struct odl_sb s = { buf, n, 0 };

	if (n)
		buf[0] = '\0';
	describe(&s, f);
	return s.len;
}

size_t cable_faults_list(const struct cable_faults *fs, char *buf, size_t n)
{
	struct odl_sb s = { buf, n, 0 };

	if (n)
		buf[0] = '\0';
	odl_sbf(&s, "ok seed=%llu faults=%u", (unsigned long long)fs->seed, fs->n);
	if (fs->cap_lanes)
		odl_sbf(&s, " retrain=%ux%u", fs->cap_lanes, fs->cap_gbps);
	for (unsigned i = 0; i < fs->n; i++) {
		const struct cable_fault *f = &fs->f[i];

		odl_sbf(&s, "; ");
		describe(&s, f);
		odl_sbf(&s, " hits=%llu (a2b %llu/%llu, b2a %llu/%llu)",
		    (unsigned long long)(f->hits[0] + f->hits[1]),
		    (unsigned long long)f->hits[0], (unsigned long long)f->seen[0],
		    (unsigned long long)f->hits[1], (unsigned long long)f->seen[1]);
		if (f->kind == CF_WITHHOLD)
			odl_sbf(&s, " credits=%llu", (unsigned long long)f->credits);
		if (f->done)
			odl_sbf(&s, " done");
	}
	return s.len;
}

size_t cable_faults_json(const struct cable_faults *fs, char *buf, size_t n)
{
	struct odl_sb s = { buf, n, 0 };

	if (n)
		buf[0] = '\0';
	odl_sbf(&s, "{\"seed\":%llu,\"dropped\":%llu,\"corrupted\":%llu,"
		"\"tampered\":%llu,"
		"\"credits_withheld\":%llu,\"delayed\":%llu,\"unplugs\":%llu,"
		"\"retrains\":%llu,",
	    (unsigned long long)fs->seed, (unsigned long long)fs->tot_dropped,
	    (unsigned long long)fs->tot_corrupted,
	    (unsigned long long)fs->tot_tampered,
	    (unsigned long long)fs->tot_withheld,
	    (unsigned long long)fs->tot_delayed,
	    (unsigned long long)fs->tot_unplugs,
	    (unsigned long long)fs->tot_retrains);
	if (fs->cap_lanes)
		odl_sbf(&s, "\"retrain\":{\"lanes\":%u,\"lane_gbps\":%u},",
		    fs->cap_lanes, fs->cap_gbps);
	else
		odl_sbf(&s, "\"retrain\":null,");
	odl_sbf(&s, "\"active\":[");
	for (unsigned i = 0; i < fs->n; i++) {
		const struct cable_fault *f = &fs->f[i];

		odl_sbf(&s, "%s{\"id\":%u,\"kind\":\"%s\",\"hop\":", i ? "," : "",
		    f->id, cable_fault_kind_name(f->kind));
		if (f->hop == CABLE_FAULT_HOP_ANY)
			odl_sbf(&s, "\"any\"");
		else
			odl_sbf(&s, "%d", f->hop);
		odl_sbf(&s, ",\"dir\":\"%s\",\"rule\":\"", dir_name(f->dir));
		describe(&s, f);
		odl_sbf(&s, "\",\"seen\":[%llu,%llu],\"hits\":[%llu,%llu],"
			"\"hits_total\":%llu,",
		    (unsigned long long)f->seen[0], (unsigned long long)f->seen[1],
		    (unsigned long long)f->hits[0], (unsigned long long)f->hits[1],
		    (unsigned long long)(f->hits[0] + f->hits[1]));
		if (f->kind == CF_WITHHOLD)
			odl_sbf(&s, "\"credits\":%llu,", (unsigned long long)f->credits);
		odl_sbf(&s, "\"done\":%s}", f->done ? "true" : "false");
	}
	odl_sbf(&s, "]}");
	return s.len;
}
