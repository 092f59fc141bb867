# SPDX-License-Identifier: MIT
# sim/: the cable program, capture dumper and their unit tests.
# Included by the top-level Makefile (uses TOP, BUILD, CC, CFLAGS_COMMON).
#
#   make sim-bins   build/sim/cable, build/sim/odl-capture-dump
#   make unit-sim   unit tests (plain + ASan/UBSan builds) and sim/selftest.sh
#   make capture-check  the tshark dissector sim/odl_link.lua against the C
#                   decoder (needs tshark; not part of `make unit`)

SIM_DIR   := $(TOP)/sim
SIM_BUILD := $(BUILD)/sim
SIM_LIB_SRCS := $(SIM_DIR)/link_msg.c $(SIM_DIR)/decode.c \
                $(SIM_DIR)/cable_core.c $(SIM_DIR)/cable_fault.c \
                $(SIM_DIR)/capture.c
SIM_HDRS  := $(wildcard $(SIM_DIR)/*.h)
SIM_CFLAGS := $(CFLAGS_COMMON) -I$(SIM_DIR)
SIM_SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
                 -fno-sanitize-recover=all

# Executables others (harness) can rely on.
SIM_CABLE := $(SIM_BUILD)/cable
SIM_CAPTURE_DUMP := $(SIM_BUILD)/odl-capture-dump
SIM_BINS  := $(SIM_CABLE) $(SIM_CAPTURE_DUMP)
SIM_TESTS := $(SIM_BUILD)/test_link $(SIM_BUILD)/test_link-asan
export SIM_CABLE SIM_CAPTURE_DUMP

SIM_CAPTURE_SAMPLE := $(SIM_BUILD)/odl-capture-sample

.PHONY: sim-bins unit-sim unit-sim-tests capture-check
sim-bins: $(SIM_BINS)

$(SIM_BUILD)/cable: $(SIM_DIR)/cable.c $(SIM_LIB_SRCS) $(SIM_HDRS)
	@mkdir -p $(@D)
	$(CC) $(SIM_CFLAGS) -o $@ $(SIM_DIR)/cable.c $(SIM_LIB_SRCS)

$(SIM_BUILD)/odl-capture-dump: $(SIM_DIR)/odl-capture-dump.c $(SIM_LIB_SRCS) $(SIM_HDRS)
	@mkdir -p $(@D)
	$(CC) $(SIM_CFLAGS) -o $@ $(SIM_DIR)/odl-capture-dump.c $(SIM_LIB_SRCS)

$(SIM_CAPTURE_SAMPLE): $(SIM_DIR)/odl-capture-sample.c $(SIM_LIB_SRCS) $(SIM_HDRS)
	@mkdir -p $(@D)
	$(CC) $(SIM_CFLAGS) -o $@ $(SIM_DIR)/odl-capture-sample.c $(SIM_LIB_SRCS)

$(SIM_BUILD)/test_link: $(TOP)/tests/test_link.c $(SIM_LIB_SRCS) $(SIM_HDRS)
	@mkdir -p $(@D)
	$(CC) $(SIM_CFLAGS) $(CHECK_CFLAGS) -o $@ $(TOP)/tests/test_link.c \
		$(SIM_LIB_SRCS) $(CHECK_LIBS)

$(SIM_BUILD)/test_link-asan: $(TOP)/tests/test_link.c $(SIM_LIB_SRCS) $(SIM_HDRS)
	@mkdir -p $(@D)
	$(CC) $(SIM_CFLAGS) -O1 $(SIM_SAN_FLAGS) $(CHECK_CFLAGS) -o $@ \
		$(TOP)/tests/test_link.c $(SIM_LIB_SRCS) $(CHECK_LIBS)

unit-sim-tests: $(SIM_TESTS)
	$(SIM_BUILD)/test_link
	CK_FORK=no ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		$(SIM_BUILD)/test_link-asan

unit-sim: unit-sim-tests $(SIM_BINS)
	SIM_CABLE=$(SIM_CABLE) SIM_CAPTURE_DUMP=$(SIM_CAPTURE_DUMP) \
		bash $(SIM_DIR)/selftest.sh

capture-check: $(SIM_BINS) $(SIM_CAPTURE_SAMPLE)
	SIM_CABLE=$(SIM_CABLE) SIM_CAPTURE_DUMP=$(SIM_CAPTURE_DUMP) \
	SIM_CAPTURE_SAMPLE=$(SIM_CAPTURE_SAMPLE) bash $(SIM_DIR)/capture-check.sh
