// SPDX-License-Identifier: MIT
/* Controller profiles: built-ins, the "key = value" parser, validation. */
#include <stdio.h>
#include <string.h>

#include "harness.h"

/* The generated table (hw-model/core/profiles_builtin.c). */
struct builtin_profile {
	const char *name;
	const char *text;
};
extern const struct builtin_profile nhi_builtin_profiles[];

START_TEST(every_builtin_parses_and_runs)
{
	unsigned int count = 0;

	for (const struct builtin_profile *b = nhi_builtin_profiles; b->name;
	     b++, count++) {
		struct nhi_profile p;
		struct nhi_config cfg;
		struct nhi *n;
		char err[160] = "";

		memset(&p, 0xa5, sizeof(p));
		ck_assert_msg(nhi_profile_lookup(b->name, &p) == 0,
			      "profile %s does not parse", b->name);
		ck_assert_str_eq(p.name, b->name);
		ck_assert_msg(nhi_profile_validate(&p, err, sizeof(err)) == 0,
			      "profile %s: %s", b->name, err);
		ck_assert_int_eq(nhi_profile_parse(b->text, &p, err, sizeof(err)), 0);
		/* 6.1 guests need USB4 version 0x20 (router-cm.md §1.3.1);
		 * USB4 v2 (0x40) profiles are for newer guests only */
		ck_assert(p.usb4_version == 0x20 || p.usb4_version == 0x40);
		/* NHI max HopID covers the rings, lanes allow HopID 8+ */
		ck_assert_uint_ge(p.lane_max_hopid, 8);
		h_init_cfg(&p, 0x42);
		cfg = H.cfg;
		n = nhi_new(&cfg, &H.ops, NULL, err, sizeof(err));
		ck_assert_msg(n != NULL, "nhi_new(%s): %s", b->name, err);
		ck_assert_uint_eq(nhi_mmio_read(n, R_HOP_COUNT) & 0x3ff,
				  p.hop_count_reported ? p.hop_count_reported :
				  p.hop_count);
		nhi_free(n);
	}
	ck_assert_uint_ge(count, 6);
}
END_TEST

START_TEST(generic_values)
{
	struct nhi_profile p;

	ck_assert_int_eq(nhi_profile_lookup("generic", &p), 0);
	ck_assert_str_eq(p.name, "generic");
	ck_assert_uint_eq(p.pci_vendor, 0x1234);
	ck_assert_uint_eq(p.pci_device, 0x0b45);
	ck_assert_uint_eq(p.pci_class, 0x0c0340);
	ck_assert_uint_eq(p.router_vendor, 0x1234);
	ck_assert_uint_eq(p.router_device, 0x0b46);
	ck_assert_uint_eq(p.hop_count, 12);
	ck_assert_uint_eq(p.lanes, 2);
	ck_assert_uint_eq(p.speed_code, 4);
	ck_assert_uint_eq(p.supported_speeds, 0xc);
	ck_assert_uint_eq(p.lane_gbps, 20);
	ck_assert_uint_eq(p.lane_max_hopid, 19);
	ck_assert_uint_eq(p.lane_total_buffers, 60);
	ck_assert_uint_eq(p.nhi_total_buffers, 32);
	ck_assert_uint_eq(p.ba_max_hi, 14);
	ck_assert_uint_eq(p.e2e_hold_frames, 256);
	ck_assert_int_eq(nhi_profile_lookup("no-such-profile", &p), -1);
}
END_TEST

START_TEST(parse_overlays_defaults)
{
	struct nhi_profile p;
	char err[160];

	ck_assert_int_eq(nhi_profile_lookup("generic", &p), 0);
	ck_assert_int_eq(nhi_profile_parse(
		"# comment line\n"
		"\n"
		"   hop_count   =  16   # trailing comment\n"
		"name=other\n"
		"lanes = 1", &p, err, sizeof(err)), 0);
	ck_assert_uint_eq(p.hop_count, 16);
	ck_assert_uint_eq(p.lanes, 1);
	ck_assert_str_eq(p.name, "other");
	ck_assert_uint_eq(p.pci_class, 0x0c0340); /* untouched */
	ck_assert_int_eq(nhi_profile_parse("pci_class = 012\n", &p, err,
					   sizeof(err)), 0);
	ck_assert_uint_eq(p.pci_class, 10); /* octal, as strtoul base 0 */
	ck_assert_int_eq(nhi_profile_parse("", &p, err, sizeof(err)), 0);
}
END_TEST

struct bad_case {
	const char *text;
	const char *want; /* substring of the message */
};

static const struct bad_case bad[] = {
	{ "foo = 1\n", "line 1: unknown key 'foo'" },
	{ "name = x\n# c\n\nbar_baz = 2\n", "line 4: unknown key 'bar_baz'" },
	{ "hop_count = abc\n", "line 1: bad value for 'hop_count'" },
	{ "name = x\nhop_count = 17\n", "line 2: bad value for 'hop_count'" },
	{ "lanes = 3\n", "line 1: bad value for 'lanes'" },
	{ "lane_gbps = -1\n", "line 1: bad value for 'lane_gbps'" },
	{ "pci_class = 0x1000000\n", "line 1: bad value for 'pci_class'" },
	{ "pci_vendor = 0x10000\n", "line 1: bad value for 'pci_vendor'" },
	{ "speed_code = 16\n", "line 1: bad value for 'speed_code'" },
	{ "lane_max_hopid = 2048\n", "line 1: bad value for 'lane_max_hopid'" },
	{ "ba_max_hi = 12x\n", "line 1: bad value for 'ba_max_hi'" },
	{ "usb4_version =\n", "line 1: bad value for 'usb4_version'" },
	{ "name =\n", "line 1: bad value for 'name'" },
	{ "name = 0123456789012345678901234567890123\n", "line 1: bad value for 'name'" },
	{ "lanes 2\n", "line 1: expected 'key = value'" },
	{ "\n\n\njust words\n", "line 4: expected" },
};

START_TEST(parse_errors_name_the_line)
{
	const struct bad_case *c = &bad[_i];
	struct nhi_profile p;
	char err[160] = "";

	h_default_profile(&p);
	ck_assert_int_eq(nhi_profile_parse(c->text, &p, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, c->want) != NULL, "'%s': got '%s', want '%s'",
		      c->text, err, c->want);
	/* no error buffer: still fails, no crash */
	ck_assert_int_eq(nhi_profile_parse(c->text, &p, NULL, 0), -1);
}
END_TEST

START_TEST(parse_long_line)
{
	char text[400];
	struct nhi_profile p;
	char err[160] = "";

	memset(text, 'x', sizeof(text));
	memcpy(text, "name = ", 7);
	text[sizeof(text) - 1] = 0;
	h_default_profile(&p);
	ck_assert_int_eq(nhi_profile_parse(text, &p, err, sizeof(err)), -1);
	ck_assert(strstr(err, "line 1") != NULL);
}
END_TEST

START_TEST(validate_rejects)
{
	struct nhi_profile p, base;
	char err[160];

	h_default_profile(&base);
	p = base;
	ck_assert_int_eq(nhi_profile_validate(&p, err, sizeof(err)), 0);
	p.hop_count = 0;
	ck_assert_int_eq(nhi_profile_validate(&p, err, sizeof(err)), -1);
	ck_assert(strstr(err, "hop_count") != NULL);
	p.hop_count = 17;
	ck_assert_int_eq(nhi_profile_validate(&p, err, sizeof(err)), -1);
	ck_assert(strstr(err, "hop_count") != NULL);
	p.hop_count = 1;
	ck_assert_int_eq(nhi_profile_validate(&p, err, sizeof(err)), 0);
	p.hop_count = 16;
	ck_assert_int_eq(nhi_profile_validate(&p, err, sizeof(err)), 0);
	p = base;
	p.lanes = 3;
	ck_assert_int_eq(nhi_profile_validate(&p, err, sizeof(err)), -1);
	ck_assert(strstr(err, "lanes") != NULL);
	p.lanes = 0;
	ck_assert_int_eq(nhi_profile_validate(&p, err, sizeof(err)), -1);
	p = base;
	p.name[0] = 0;
	ck_assert_int_eq(nhi_profile_validate(&p, err, sizeof(err)), -1);
	p = base;
	p.lane_max_hopid = 7;
	ck_assert_int_eq(nhi_profile_validate(&p, err, sizeof(err)), -1);
	p = base;
	p.pci_class = 0;
	ck_assert_int_eq(nhi_profile_validate(&p, err, sizeof(err)), -1);
	p = base;
	p.lane_gbps = 0;
	ck_assert_int_eq(nhi_profile_validate(&p, err, sizeof(err)), -1);
	ck_assert_int_eq(nhi_profile_validate(&p, NULL, 0), -1);
}
END_TEST

START_TEST(single_lane_profile)
{
	/* lanes = 1: no lane-1 adapter (error code 2 on its space) */
	struct nhi_profile p;
	struct h_pkt pk;
	uint32_t req[3] = { 0, 0, h_addr(1, 2, 0, 8, 0) };

	h_default_profile(&p);
	ck_assert_int_eq(nhi_profile_parse("lanes = 1\nhop_count = 16\n", &p,
					   NULL, 0), 0);
	h_setup_profile(&p);
	ck_assert_uint_eq(h_rd(R_HOP_COUNT), 16);
	h_ctl_start();
	h_ctl_send(1, req, 3);
	ck_assert(h_ctl_recv(&pk));
	ck_assert_uint_eq(pk.pdf, 3);
	ck_assert_uint_eq(pk.dw[2], 0x00000202);
	/* lane 0 supports width 1 only */
	ck_assert_uint_eq((h_cfg_read1(1, 1, 8) >> 20) & 0x3f, 1);
	/* 16 rings: NHI adapter max HopID 15, RX ring 0 index 16 */
	ck_assert_uint_eq(h_cfg_read1(1, 3, 5), 15u | 15u << 11);
	h_wr(R_ENABLE, 0xffffffff);
	ck_assert_uint_eq(h_rd(R_ENABLE), 0xffffffff);
	h_teardown();
}
END_TEST

Suite *suite_profile(void)
{
	Suite *s = suite_create("profile");
	TCase *tc = tcase_create("profile");

	tcase_add_test(tc, every_builtin_parses_and_runs);
	tcase_add_test(tc, generic_values);
	tcase_add_test(tc, parse_overlays_defaults);
	tcase_add_loop_test(tc, parse_errors_name_the_line, 0,
			    (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, parse_long_line);
	tcase_add_test(tc, validate_rejects);
	tcase_add_test(tc, single_lane_profile);
	suite_add_tcase(s, tc);
	return s;
}
