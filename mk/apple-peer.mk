# SPDX-License-Identifier: MIT
# odl_apple_peer.ko: the synthetic Mac peer software for the apple-m4
# profile (tests/apple_peer/, docs/profiles.md), built like odl_tb5.ko in
# mk/driver.mk (odl_kdir, KMOD_CC: Debian's linux-headers via ci/kheaders.sh).
#   make driver            also builds build/driver/odl_apple_peer.ko
#   make apple-peer-check  checkpatch.pl over tests/apple_peer/
# (This file is read before mk/driver.mk: no variable of it is used at
# parse time here.)
APPLE_PEER_OUT := $(BUILD)/driver
APPLE_PEER_SRCS := $(wildcard $(TOP)/tests/apple_peer/*.[ch]) \
	$(TOP)/tests/apple_peer/Kbuild

.PHONY: driver apple-peer-check
driver: $(APPLE_PEER_OUT)/odl_apple_peer.ko

$(APPLE_PEER_OUT)/odl_apple_peer.ko: $(APPLE_PEER_SRCS) $(TOP)/mk/apple-peer.mk
	@mkdir -p $(APPLE_PEER_OUT)/apple_peer
	@$(odl_kdir); \
	cp $(TOP)/tests/apple_peer/*.c $(TOP)/tests/apple_peer/Kbuild \
		$(APPLE_PEER_OUT)/apple_peer/ && \
	$(MAKE) -C "$$kdir" M=$(APPLE_PEER_OUT)/apple_peer CC=$(KMOD_CC) W=1 \
		KCFLAGS=-Werror modules
	cp $(APPLE_PEER_OUT)/apple_peer/odl_apple_peer.ko $@

apple-peer-check:
	@if [ ! -x $(CHECKPATCH_DIR)/scripts/checkpatch.pl ]; then \
		bash $(TOP)/ci/kheaders.sh --checkpatch $(CHECKPATCH_DIR) >/dev/null || exit 1; fi
	cd $(CHECKPATCH_DIR) && scripts/checkpatch.pl --no-tree -q \
		-f $(wildcard $(TOP)/tests/apple_peer/*.[ch])
