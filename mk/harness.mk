# SPDX-License-Identifier: MIT
# Harness: guest agent (static, goes into the initramfs) and vmpair checks.
AGENT_BIN := $(BUILD)/agent/odl-agent
AGENT_SRC := $(TOP)/harness/agent/odl-agent.c

.PHONY: agent harness-check
agent: $(AGENT_BIN)

$(AGENT_BIN): $(AGENT_SRC) $(TOP)/mk/harness.mk
	@mkdir -p $(dir $@)
	gcc -static -Os -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -o $@ $<

# Host-side self test of agent + mux + vmpair client (no QEMU needed; the
# cable, sim-bins, runs between the fake pair); part of make unit
harness-check: $(AGENT_BIN) sim-bins
	bash $(TOP)/harness/lib/selftest.sh
