// SPDX-License-Identifier: MIT
/* Runner of the default NHI core unit-test suites (make unit-core). */
#include <stdlib.h>

#include "harness.h"

int main(void)
{
	SRunner *sr = srunner_create(suite_irq());
	int failed;

	srunner_add_suite(sr, suite_trace());
	srunner_add_suite(sr, suite_ring());
	srunner_add_suite(sr, suite_ctl());
	srunner_add_suite(sr, suite_cfg());
	srunner_add_suite(sr, suite_hotplug());
	srunner_add_suite(sr, suite_xdomain());
	srunner_add_suite(sr, suite_data());
	srunner_add_suite(sr, suite_bad());
	srunner_add_suite(sr, suite_profile());
	srunner_add_suite(sr, suite_regress());
	srunner_add_suite(sr, suite_quirks());
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
