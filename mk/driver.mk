# SPDX-License-Identifier: MIT
# odl_tb5.ko (and the DMA-buf test exporter) for the guest kernel KERNEL,
# built against Debian's linux-headers fetched by ci/kheaders.sh, plus the
# static guest test tool odl_xfer.
#   make driver          build/driver/{odl_tb5.ko,odl_dmabuf_exp.ko,odl_xfer}
#   make driver-check    checkpatch.pl over driver/ and tests/dmabuf_exporter/
#   make bench-odl       bench/odl.sh (odl_tb5 vs thunderbolt-net, icount cost)
#   make driver-dkms-install  (root) the driver's sources in
#                        $(DESTDIR)/usr/src/odl_tb5-VERSION with driver/dkms.conf,
#                        the udev rule, /etc/modules-load.d/odl_tb5.conf (load
#                        at boot), then `dkms install` (not with DESTDIR)
#   make driver-dkms-uninstall  dkms remove, the sources and the rule gone
#   make unit-dkms       the staged sources built by dkms (own trees, no root
#                        paths touched) for the guest kernel's headers
DRIVER_OUT := $(BUILD)/driver
DRIVER_SRCS := $(wildcard $(TOP)/driver/*.[ch] $(TOP)/driver/uapi/*.h) \
	$(TOP)/driver/Kbuild
DMABUF_EXP_SRCS := $(wildcard $(TOP)/tests/dmabuf_exporter/*.[ch]) \
	$(TOP)/tests/dmabuf_exporter/Kbuild
KMOD_CC ?= gcc-12

.PHONY: driver driver-check driver-dkms-install driver-dkms-uninstall unit-dkms
driver: $(DRIVER_OUT)/odl_tb5.ko $(DRIVER_OUT)/odl_dmabuf_exp.ko \
	$(DRIVER_OUT)/odl_xfer

# Kernel ABI of KERNEL (from build/env-$(KERNEL).sh; `make images` writes it)
define odl_kdir
abi=$$(. $(BUILD)/env-$(KERNEL).sh 2>/dev/null && echo "$$ODL_KERNEL_ABI"); \
if [ -z "$$abi" ]; then $(MAKE) -C $(TOP) images KERNEL=$(KERNEL) >&2 && \
	abi=$$(. $(BUILD)/env-$(KERNEL).sh && echo "$$ODL_KERNEL_ABI"); fi; \
kdir=$$(bash $(TOP)/ci/kheaders.sh "$$abi") || exit 1
endef

$(DRIVER_OUT)/odl_tb5.ko: $(DRIVER_SRCS) $(TOP)/mk/driver.mk
	@mkdir -p $(DRIVER_OUT)/odl_tb5/uapi
	@$(odl_kdir); \
	cp $(TOP)/driver/*.[ch] $(TOP)/driver/Kbuild $(DRIVER_OUT)/odl_tb5/ && \
	cp $(TOP)/driver/uapi/*.h $(DRIVER_OUT)/odl_tb5/uapi/ && \
	$(MAKE) -C "$$kdir" M=$(DRIVER_OUT)/odl_tb5 CC=$(KMOD_CC) W=1 \
		KCFLAGS=-Werror modules
	cp $(DRIVER_OUT)/odl_tb5/odl_tb5.ko $@

$(DRIVER_OUT)/odl_dmabuf_exp.ko: $(DMABUF_EXP_SRCS) $(TOP)/mk/driver.mk
	@mkdir -p $(DRIVER_OUT)/dmabuf_exporter
	@$(odl_kdir); \
	cp $(TOP)/tests/dmabuf_exporter/*.[ch] \
		$(TOP)/tests/dmabuf_exporter/Kbuild $(DRIVER_OUT)/dmabuf_exporter/ && \
	$(MAKE) -C "$$kdir" M=$(DRIVER_OUT)/dmabuf_exporter CC=$(KMOD_CC) W=1 \
		KCFLAGS=-Werror modules
	cp $(DRIVER_OUT)/dmabuf_exporter/odl_dmabuf_exp.ko $@

$(DRIVER_OUT)/odl_xfer: $(TOP)/tests/odl_tb5/odl_xfer.c \
		$(TOP)/driver/uapi/odl_tb5_uapi.h
	@mkdir -p $(DRIVER_OUT)
	gcc -static -O2 -std=gnu11 -Wall -Wextra -Werror -o $@ $<

# checkpatch.pl from the Debian linux-source package (unpacked once into
# $(ODL_CACHE)/checkpatch; run there so its cache file stays out of the tree).
CHECKPATCH_DIR := $(ODL_CACHE)/checkpatch
driver-check:
	@if [ ! -x $(CHECKPATCH_DIR)/scripts/checkpatch.pl ]; then \
		bash $(TOP)/ci/kheaders.sh --checkpatch $(CHECKPATCH_DIR) >/dev/null || exit 1; fi
	cd $(CHECKPATCH_DIR) && scripts/checkpatch.pl --no-tree -q \
		-f $(filter-out %/compat.h,$(wildcard $(TOP)/driver/*.[ch] \
			$(TOP)/driver/uapi/*.h $(TOP)/tests/dmabuf_exporter/*.c))
	@# compat.h is the one place allowed to test kernel versions
	cd $(CHECKPATCH_DIR) && scripts/checkpatch.pl --no-tree -q \
		--ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON \
		-f $(TOP)/driver/compat.h

# odl_tb5 benchmarks alone (make bench runs them after bench/run's
# thunderbolt-net vs virtio-net part): throughput against thunderbolt-net,
# latency, guest instructions per frame under -icount; bench/results/odl-*
.PHONY: bench-odl
bench-odl: vm-prereqs
	@bash $(TOP)/bench/odl.sh

# DKMS: the version is the module's MODULE_VERSION (dkms.conf must agree:
# unit-dkms checks); with DESTDIR only the files are staged
DKMS_VER = $(shell sed -n 's/^MODULE_VERSION("\(.*\)");/\1/p' $(TOP)/driver/odl_main.c)
DKMS_SRC = $(DESTDIR)/usr/src/odl_tb5-$(DKMS_VER)
driver-dkms-install:
	install -d $(DKMS_SRC)/uapi $(DESTDIR)/etc/udev/rules.d
	install -m 0644 $(TOP)/driver/*.[ch] $(TOP)/driver/Kbuild $(TOP)/driver/Makefile \
	  $(TOP)/driver/dkms.conf $(DKMS_SRC)/
	install -m 0644 $(TOP)/driver/uapi/*.h $(DKMS_SRC)/uapi/
	install -m 0644 $(TOP)/driver/99-odl_tb5.rules $(DESTDIR)/etc/udev/rules.d/
	@# loaded at boot: each side publishes its service only once loaded, so
	@# the peer's service alias cannot load it on demand
	install -d $(DESTDIR)/etc/modules-load.d
	echo odl_tb5 > $(DESTDIR)/etc/modules-load.d/odl_tb5.conf
	@if [ -z "$(DESTDIR)" ]; then \
	  dkms status -m odl_tb5 -v $(DKMS_VER) | grep -q . || dkms add -m odl_tb5 -v $(DKMS_VER) && \
	  dkms install -m odl_tb5 -v $(DKMS_VER) && \
	  { udevadm control --reload 2>/dev/null || true; }; fi

driver-dkms-uninstall:
	-dkms remove -m odl_tb5 -v $(DKMS_VER) --all
	rm -rf /usr/src/odl_tb5-$(DKMS_VER) /etc/udev/rules.d/99-odl_tb5.rules \
	  /etc/modules-load.d/odl_tb5.conf

unit-dkms: driver
	@$(odl_kdir); KERNEL_ABI=$$abi KDIR=$$kdir bash $(TOP)/tests/dkms_check.sh $(DKMS_VER)
