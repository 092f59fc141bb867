# SPDX-License-Identifier: MIT
# VM scenarios, demo and benchmarks (need QEMU, images, cable, agent).
.PHONY: sim-test sim-test-matrix sim-test-extended sim-soak demo bench vm-prereqs

# Guest kernels the scenarios run on besides the default (NAME@KERNEL).
SIM_EXTRA_KERNELS ?= trixie
# odl_tb5 for those of them that need a build root (mk/driver-buildroot.mk)
SIM_EXTRA_DRIVERS := $(addprefix driver-,$(filter $(BUILDROOT_KERNELS),$(SIM_EXTRA_KERNELS)))

vm-prereqs: qemu images sim-bins driver userlib rccl
	@for k in $(SIM_EXTRA_KERNELS); do $(MAKE) --no-print-directory images KERNEL=$$k || exit 1; done

# SCENARIOS="tbnet idle" picks scenarios; without it make sim-test runs the
# lists in SIM_TEST_LISTS: harness/sim-test's default list, the profile
# matrix (docs/testing.md) and the extended list; SIM_TEST_LISTS=default
# runs the default list alone.
SIM_TEST_LISTS ?= default matrix extended
sim-test: vm-prereqs $(SIM_EXTRA_DRIVERS)
	@bash $(TOP)/harness/sim-test $(or $(SCENARIOS),$(SIM_TEST_LISTS))

# every controller profile x the scenarios that apply, and the quirk
# scenarios (docs/testing.md)
sim-test-matrix: vm-prereqs $(SIM_EXTRA_DRIVERS)
	@bash $(TOP)/harness/sim-test --matrix

# the extended list alone (harness/sim-test)
sim-test-extended: vm-prereqs $(SIM_EXTRA_DRIVERS)
	@bash $(TOP)/harness/sim-test extended

# the cycling scenarios at their long counts, on both kernels
sim-soak: vm-prereqs $(SIM_EXTRA_DRIVERS)
	@ODL_RELOAD_CYCLES=20 ODL_UNPLUG_CYCLES=10 bash $(TOP)/harness/sim-test \
		odl-reload odl-reload%intel-barlow-ridge@trixie odl-unplug \
		odl-unplug%intel-barlow-ridge@trixie

demo: vm-prereqs
	@bash $(TOP)/harness/demo

bench: vm-prereqs
	@bash $(TOP)/bench/run
