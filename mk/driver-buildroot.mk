# SPDX-License-Identifier: MIT
# odl_tb5.ko (and the DMA-buf test exporter) for guest kernels whose kbuild
# this bookworm host cannot run (Debian 13's 6.12 needs gcc-14 and trixie's
# kbuild): built inside a cached debootstrap'd build root of that release
# (ci/buildroot.sh), with that release's compiler and headers.
#   make driver-trixie   build/driver-trixie/{odl_tb5.ko,odl_dmabuf_exp.ko,odl_xfer}
# odl_xfer is the static guest tool of `make driver` (it runs on any kernel).
# harness/sim-test uses build/driver-KERNEL for NAME@KERNEL scenarios.
# Other kernels: BUILDROOT_KERNELS="trixie sid" gives driver-sid as well
# (any KERNEL tag with a build/env-TAG.sh, see ci/buildroot.sh).
BUILDROOT_KERNELS ?= trixie

BR_DRIVER_SRCS := $(wildcard $(TOP)/driver/*.[ch] $(TOP)/driver/uapi/*.h) \
	$(TOP)/driver/Kbuild
BR_DMABUF_SRCS := $(wildcard $(TOP)/tests/dmabuf_exporter/*.[ch]) \
	$(TOP)/tests/dmabuf_exporter/Kbuild
BR_DEPS := $(TOP)/mk/driver-buildroot.mk $(TOP)/ci/buildroot.sh

# $(call driver_buildroot,KERNEL)
define driver_buildroot
.PHONY: driver-$(1)
driver-$(1): $(BUILD)/driver-$(1)/odl_tb5.ko $(BUILD)/driver-$(1)/odl_dmabuf_exp.ko \
	$(BUILD)/driver-$(1)/odl_xfer

$(BUILD)/driver-$(1)/odl_tb5.ko: $(BR_DRIVER_SRCS) $(BR_DEPS)
	@mkdir -p $(BUILD)/driver-$(1)/src/odl_tb5/uapi
	@rm -f $(BUILD)/driver-$(1)/src/odl_tb5/*.[ch] $(BUILD)/driver-$(1)/src/odl_tb5/uapi/*.h
	@cp $(TOP)/driver/*.[ch] $(TOP)/driver/Kbuild $(BUILD)/driver-$(1)/src/odl_tb5/
	@cp $(TOP)/driver/uapi/*.h $(BUILD)/driver-$(1)/src/odl_tb5/uapi/
	bash $(TOP)/ci/buildroot.sh --kbuild $(1) $(BUILD)/driver-$(1)/src/odl_tb5 \
		$(BUILD)/driver-$(1) W=1 KCFLAGS=-Werror >/dev/null

$(BUILD)/driver-$(1)/odl_dmabuf_exp.ko: $(BR_DMABUF_SRCS) $(BR_DEPS)
	@mkdir -p $(BUILD)/driver-$(1)/src/dmabuf_exporter
	@cp $(TOP)/tests/dmabuf_exporter/*.[ch] $(TOP)/tests/dmabuf_exporter/Kbuild \
		$(BUILD)/driver-$(1)/src/dmabuf_exporter/
	bash $(TOP)/ci/buildroot.sh --kbuild $(1) $(BUILD)/driver-$(1)/src/dmabuf_exporter \
		$(BUILD)/driver-$(1) W=1 KCFLAGS=-Werror >/dev/null

$(BUILD)/driver-$(1)/odl_xfer: $(BUILD)/driver/odl_xfer
	@mkdir -p $(BUILD)/driver-$(1)
	cp $$< $$@
endef
$(foreach k,$(BUILDROOT_KERNELS),$(eval $(call driver_buildroot,$(k))))
