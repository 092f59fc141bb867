// SPDX-License-Identifier: MIT
/*
 * Check tests for the plugin's pure wire checks: the translation unit
 * includes plugin.c so its static helpers can be called directly (nothing
 * is initialised; no device is opened).
 */
#include <stdint.h>

/* before check.h: the plugin has a function named fail(), Check a macro */
#include "../src/plugin.c"

#include <check.h>

/* a message of 100 bytes into a receive of 128, in 40-byte chunks */
START_TEST(t_data_chunk_in_order)
{
	ck_assert(data_chunk_ok(0, 40, 100, 128, 0));
	ck_assert(data_chunk_ok(40, 40, 100, 128, 40));
	ck_assert(data_chunk_ok(80, 20, 100, 128, 80));
	/* the whole message in one chunk, exactly the room */
	ck_assert(data_chunk_ok(0, 128, 128, 128, 0));
	/* zero bytes: one empty chunk */
	ck_assert(data_chunk_ok(0, 0, 0, 0, 0));
	ck_assert(data_chunk_ok(0, 0, 0, 128, 0));
}
END_TEST

START_TEST(t_data_chunk_too_big)
{
	ck_assert(!data_chunk_ok(0, 40, 129, 128, 0));   /* message > room */
	ck_assert(!data_chunk_ok(80, 21, 100, 128, 80)); /* past the message */
	ck_assert(!data_chunk_ok(100, 1, 100, 128, 100));
	ck_assert(!data_chunk_ok(101, 0, 100, 128, 101));
}
END_TEST

/* off + len wrapping around 2^64 must not pass as "inside the message" */
START_TEST(t_data_chunk_wraps)
{
	ck_assert(!data_chunk_ok(UINT64_MAX - 7, 16, 100, 128, UINT64_MAX - 7));
	ck_assert(!data_chunk_ok(UINT64_MAX, 1, 100, 128, UINT64_MAX));
	ck_assert(!data_chunk_ok(UINT64_MAX - 99, 100, 100, 128, 0));
	ck_assert(!data_chunk_ok((uint64_t)1 << 63, UINT32_MAX, 100, 128, 0));
}
END_TEST

/* a chunk that does not continue where the last one ended: a gap would
 * complete the entry with holes, an overlap would write twice */
START_TEST(t_data_chunk_out_of_order)
{
	ck_assert(!data_chunk_ok(40, 40, 100, 128, 0));  /* first chunk missing */
	ck_assert(!data_chunk_ok(80, 20, 100, 128, 40)); /* gap */
	ck_assert(!data_chunk_ok(0, 40, 100, 128, 40));  /* repeated */
	ck_assert(!data_chunk_ok(20, 40, 100, 128, 40)); /* overlap */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rccl-wire");
	TCase *tc = tcase_create("data");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, t_data_chunk_in_order);
	tcase_add_test(tc, t_data_chunk_too_big);
	tcase_add_test(tc, t_data_chunk_wraps);
	tcase_add_test(tc, t_data_chunk_out_of_order);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
