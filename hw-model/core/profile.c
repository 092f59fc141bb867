// SPDX-License-Identifier: MIT
/* Controller profiles: "key = value" text, parsed onto struct nhi_profile. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "usb4_nhi.h"

struct builtin_profile {
	const char *name;
	const char *text;
};

/* Generated from the files in hw-model/profiles (tools/gen-profiles). */
extern const struct builtin_profile nhi_builtin_profiles[];

enum { F_U8, F_U16, F_U32, F_STR };

struct field {
	const char *key;
	int type;
	size_t off;
	uint32_t max;
};

#define FLD(k, t, m, mx) { k, t, offsetof(struct nhi_profile, m), mx }

static const struct field fields[] = {
	FLD("name", F_STR, name, 0),
	FLD("pci_vendor", F_U16, pci_vendor, 0xffff),
	FLD("pci_device", F_U16, pci_device, 0xffff),
	FLD("pci_subsys_vendor", F_U16, pci_subsys_vendor, 0xffff),
	FLD("pci_subsys_device", F_U16, pci_subsys_device, 0xffff),
	FLD("pci_class", F_U32, pci_class, 0xffffff),
	FLD("pci_revision", F_U8, pci_revision, 0xff),
	FLD("router_vendor", F_U16, router_vendor, 0xffff),
	FLD("router_device", F_U16, router_device, 0xffff),
	FLD("router_revision", F_U8, router_revision, 0xff),
	FLD("usb4_version", F_U8, usb4_version, 0xff),
	FLD("hop_count", F_U8, hop_count, NHI_MAX_HOPS),
	FLD("lanes", F_U8, lanes, 2),
	FLD("speed_code", F_U8, speed_code, 0xf),
	FLD("supported_speeds", F_U8, supported_speeds, 0xf),
	FLD("lane_gbps", F_U32, lane_gbps, 1000),
	FLD("lane_max_hopid", F_U16, lane_max_hopid, 2047),
	FLD("lane_total_buffers", F_U16, lane_total_buffers, 1023),
	FLD("nhi_total_buffers", F_U16, nhi_total_buffers, 1023),
	FLD("ba_max_hi", F_U16, ba_max_hi, 0xffff),
	FLD("e2e_hold_frames", F_U16, e2e_hold_frames, 4096),
	FLD("irq_throttle", F_U8, irq_throttle, 1),
	FLD("caps_version", F_U8, caps_version, 0xff),
	FLD("hop_count_reported", F_U8, hop_count_reported, NHI_MAX_HOPS),
	FLD("hidden_hop_silent", F_U8, hidden_hop_silent, 1),
	FLD("dma_misc_writable", F_U32, dma_misc_writable, 0xffffffff),
	FLD("asym_capable", F_U8, asym_capable, 1),
	FLD("e2e_rx_slots", F_U8, e2e_rx_slots, NHI_MAX_HOPS),
	FLD("e2e_victim", F_U8, e2e_victim, 1),
	FLD("e2e_reserved_hop", F_U16, e2e_reserved_hop, 2047),
	FLD("ring_mbps", F_U32, ring_mbps, 1000000),
	FLD("lowpower_idle_ms", F_U32, lowpower_idle_ms, 3600000),
	FLD("lowpower_period_ms", F_U32, lowpower_period_ms, 3600000),
};

void nhi_profile_defaults(struct nhi_profile *p)
{
	p->caps_version = 0;
	p->hop_count_reported = 0;
	p->hidden_hop_silent = 0;
	/* bit 2: Intel auto-clear; bit 17: disable auto-clear */
	p->dma_misc_writable = (1u << 2) | (1u << 17);
	p->asym_capable = 0;
	p->e2e_rx_slots = 0;
	p->e2e_victim = 0;
	p->e2e_reserved_hop = 0;
	p->ring_mbps = 0;
	p->lowpower_idle_ms = 0;
	p->lowpower_period_ms = 5000;
}

static void set_err(char *err, size_t errlen, const char *fmt, int line,
		    const char *what)
{
	if (err && errlen)
		snprintf(err, errlen, fmt, line, what);
}

int nhi_profile_parse(const char *text, struct nhi_profile *out, char *err,
		      size_t errlen)
{
	int line = 0;
	const char *p = text;

	while (p && *p) {
		char buf[256], *k, *v, *e, *end;
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		const struct field *f = NULL;
		unsigned long val;

		line++;
		if (len >= sizeof(buf)) {
			set_err(err, errlen, "line %d: %s", line, "too long");
			return -1;
		}
		memcpy(buf, p, len);
		buf[len] = 0;
		p = nl ? nl + 1 : NULL;
		e = strchr(buf, '#');
		if (e)
			*e = 0;
		k = buf;
		while (isspace((unsigned char)*k))
			k++;
		if (!*k)
			continue;
		v = strchr(k, '=');
		if (!v) {
			set_err(err, errlen, "line %d: %s", line,
				"expected 'key = value'");
			return -1;
		}
		*v++ = 0;
		for (e = v + strlen(v); e > v && isspace((unsigned char)e[-1]);)
			*--e = 0;
		while (isspace((unsigned char)*v))
			v++;
		for (e = k + strlen(k); e > k && isspace((unsigned char)e[-1]);)
			*--e = 0;
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
			if (!strcmp(fields[i].key, k))
				f = &fields[i];
		if (!f) {
			set_err(err, errlen, "line %d: unknown key '%s'", line, k);
			return -1;
		}
		if (f->type == F_STR) {
			if (!*v || strlen(v) >= sizeof(out->name)) {
				set_err(err, errlen, "line %d: bad value for '%s'",
					line, k);
				return -1;
			}
			snprintf((char *)out + f->off, sizeof(out->name), "%s", v);
			continue;
		}
		errno = 0;
		val = strtoul(v, &end, 0);
		if (errno || !*v || *end || val > f->max) {
			set_err(err, errlen, "line %d: bad value for '%s'", line, k);
			return -1;
		}
		switch (f->type) {
		case F_U8:
			*((uint8_t *)out + f->off) = (uint8_t)val;
			break;
		case F_U16:
			*(uint16_t *)(void *)((char *)out + f->off) = (uint16_t)val;
			break;
		default:
			*(uint32_t *)(void *)((char *)out + f->off) = (uint32_t)val;
			break;
		}
	}
	return 0;
}

int nhi_profile_validate(const struct nhi_profile *p, char *err, size_t errlen)
{
	const char *why = NULL;

	if (!p->name[0])
		why = "no name";
	else if (p->hop_count < 1 || p->hop_count > NHI_MAX_HOPS)
		why = "hop_count must be 1..16";
	else if (p->lanes < 1 || p->lanes > 2)
		why = "lanes must be 1 or 2";
	else if (p->lane_max_hopid < 8)
		why = "lane_max_hopid must be at least 8";
	else if (p->pci_class == 0)
		why = "pci_class missing";
	else if (p->lane_gbps == 0)
		why = "lane_gbps missing";
	else if (p->hop_count_reported > p->hop_count)
		why = "hop_count_reported exceeds hop_count";
	else if (p->lowpower_idle_ms && !p->lowpower_period_ms)
		why = "lowpower_idle_ms needs lowpower_period_ms";
	if (why) {
		if (err && errlen)
			snprintf(err, errlen, "profile '%s': %s", p->name, why);
		return -1;
	}
	return 0;
}

int nhi_profile_lookup(const char *name, struct nhi_profile *out)
{
	for (const struct builtin_profile *b = nhi_builtin_profiles; b->name;
	     b++) {
		if (strcmp(b->name, name))
			continue;
		memset(out, 0, sizeof(*out));
		nhi_profile_defaults(out);
		if (nhi_profile_parse(b->text, out, NULL, 0))
			return -1;
		return 0;
	}
	return -1;
}
