# SPDX-License-Identifier: MIT
# VM scenarios, demo and benchmarks (need QEMU, images, cable, agent).
.PHONY: sim-test demo bench vm-prereqs

vm-prereqs: qemu images sim-bins

sim-test: vm-prereqs
	@bash $(TOP)/harness/sim-test $(if $(SIM_TESTS),$(SIM_TESTS))

demo: vm-prereqs
	@bash $(TOP)/harness/demo

bench: vm-prereqs
	@bash $(TOP)/bench/run
