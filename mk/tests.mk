# SPDX-License-Identifier: MIT
# VM scenarios, demo and benchmarks (need QEMU, images, cable, agent).
.PHONY: sim-test demo bench vm-prereqs

# Guest kernels the scenarios run on besides the default (NAME@KERNEL).
SIM_EXTRA_KERNELS ?= trixie

vm-prereqs: qemu images sim-bins driver userlib rccl
	@for k in $(SIM_EXTRA_KERNELS); do $(MAKE) --no-print-directory images KERNEL=$$k || exit 1; done

# SCENARIOS="tbnet idle" picks scenarios (default: all, see harness/sim-test)
sim-test: vm-prereqs
	@bash $(TOP)/harness/sim-test $(SCENARIOS)

demo: vm-prereqs
	@bash $(TOP)/harness/demo

bench: vm-prereqs
	@bash $(TOP)/bench/run
