# SPDX-License-Identifier: MIT
# Unit tests (Check) of the QEMU-free NHI model core, hw-model/core.
# Included by the top-level Makefile (uses TOP, BUILD, CC, CFLAGS_COMMON).
#
#   make unit-core          core + tests, -Werror, run (plus gen-profiles --check)
#   make unit-core-asan     the same under -fsanitize=address,undefined
#   make coverage-core      --coverage build, lcov/genhtml into
#                           $(BUILD)/coverage/core; fails below UNIT_COV_MIN %
#   make unit               unit-core, unit-core-asan, unit-sim, unit-userlib,
#                           unit-rccl, unit-bench, unit-harness (harness-check too)
#   make coverage           coverage-core
#
# Test selection: CK_RUN_SUITE=<suite> / CK_RUN_CASE=<case> (Check env).

UNIT_CORE_SRC_DIR := $(TOP)/hw-model/core
UNIT_TEST_DIR     := $(TOP)/tests/core
UNIT_OUT          := $(BUILD)/tests
UNIT_COV_MIN      ?= 85

UNIT_CORE_SRCS    := $(sort $(wildcard $(UNIT_CORE_SRC_DIR)/*.c))
UNIT_TEST_SRCS    := $(sort $(wildcard $(UNIT_TEST_DIR)/*.c))
UNIT_HDRS         := $(wildcard $(UNIT_CORE_SRC_DIR)/*.h) $(TOP)/sim/odl_link.h \
                     $(wildcard $(UNIT_TEST_DIR)/*.h) $(TOP)/mk/unit.mk

UNIT_CFLAGS       := $(CFLAGS_COMMON) -I$(UNIT_CORE_SRC_DIR) -I$(TOP)/sim \
                     -I$(UNIT_TEST_DIR)
UNIT_SAN_FLAGS    := -fsanitize=address,undefined -fno-omit-frame-pointer \
                     -fno-sanitize-recover=all

# unit_variant(name, extra cflags): objects in $(UNIT_OUT)/<name>/, binaries
# $(UNIT_OUT)/<name>/test_core.
define unit_variant
UNIT_$(1)_DIR   := $(UNIT_OUT)/$(1)
UNIT_$(1)_CORE  := $$(patsubst $(UNIT_CORE_SRC_DIR)/%.c,$(UNIT_OUT)/$(1)/core/%.o,$(UNIT_CORE_SRCS))
UNIT_$(1)_TESTS := $$(patsubst $(UNIT_TEST_DIR)/%.c,$(UNIT_OUT)/$(1)/t/%.o,$(UNIT_TEST_SRCS))

$(UNIT_OUT)/$(1)/core/%.o: $(UNIT_CORE_SRC_DIR)/%.c $(UNIT_HDRS)
	@mkdir -p $$(@D)
	$(CC) $(UNIT_CFLAGS) $$(CHECK_CFLAGS) $(2) -c -o $$@ $$<

$(UNIT_OUT)/$(1)/t/%.o: $(UNIT_TEST_DIR)/%.c $(UNIT_HDRS)
	@mkdir -p $$(@D)
	$(CC) $(UNIT_CFLAGS) $$(CHECK_CFLAGS) $(2) -c -o $$@ $$<

$(UNIT_OUT)/$(1)/test_core: $$(UNIT_$(1)_CORE) $$(UNIT_$(1)_TESTS)
	$(CC) $(UNIT_CFLAGS) $(2) -o $$@ $$^ $$(CHECK_LIBS)

endef

$(eval $(call unit_variant,core,))
$(eval $(call unit_variant,core-asan,-O1 $(UNIT_SAN_FLAGS)))
$(eval $(call unit_variant,core-cov,-O0 --coverage))

.PHONY: unit unit-core unit-core-asan coverage-core \
        unit-core-gen-check
unit: unit-core unit-core-asan unit-sim unit-userlib unit-rccl unit-bench unit-harness unit-install unit-dkms
coverage: coverage-core coverage-userlib coverage-rccl

unit-core-gen-check:
	python3 $(TOP)/tools/gen-profiles --check

# harness/scenarios/tb-problems.awk (what fails a scenario's dmesg check)
# on made-up guest logs
.PHONY: unit-harness
unit-harness: harness-check
	bash $(TOP)/tests/harness/tb_problems_check.sh

# bench/rccl_history.py (pools the plugin benchmark's runs: all-reduce
# bandwidth, and latency with --latency) on made-up runs
.PHONY: unit-bench
unit-bench:
	python3 $(TOP)/bench/tests/rccl_history_check.py

unit-core: $(UNIT_OUT)/core/test_core unit-core-gen-check
	$(UNIT_OUT)/core/test_core

unit-core-asan: $(UNIT_OUT)/core-asan/test_core unit-core-gen-check
	CK_FORK=no ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(UNIT_OUT)/core-asan/test_core

UNIT_COV_OUT := $(BUILD)/coverage/core
coverage-core: $(UNIT_OUT)/core-cov/test_core
	@rm -rf $(UNIT_COV_OUT)
	@mkdir -p $(UNIT_COV_OUT)
	@find $(UNIT_OUT)/core-cov -name '*.gcda' -delete
	CK_FORK=no $(UNIT_OUT)/core-cov/test_core
	@# (Debian's lcov 1.16 prints harmless perl "Subroutine ... redefined"
	@# warnings; they are filtered out, real errors still fail the target.)
	lcov --quiet --capture --directory $(UNIT_OUT)/core-cov/core \
	  --base-directory $(UNIT_CORE_SRC_DIR) \
	  --output-file $(UNIT_COV_OUT)/all.info 2>$(UNIT_COV_OUT)/lcov.err; \
	  rc=$$?; grep -v 'Subroutine .* redefined at' $(UNIT_COV_OUT)/lcov.err >&2; \
	  exit $$rc
	lcov --quiet --extract $(UNIT_COV_OUT)/all.info '$(UNIT_CORE_SRC_DIR)/*' \
	  --output-file $(UNIT_COV_OUT)/core.info
	genhtml --quiet $(UNIT_COV_OUT)/core.info \
	  --output-directory $(UNIT_COV_OUT)
	@bash $(TOP)/mk/cov-gate.sh coverage-core 'hw-model/core' $(UNIT_COV_OUT)/core.info $(UNIT_COV_MIN) $(UNIT_COV_OUT)
