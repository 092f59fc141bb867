#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# replug: 5 cable unplug/plug cycles; the XDomain goes away on both sides
# and comes back each time; thunderbolt-net works afterwards; no oops.
. "$(dirname "$0")/common.sh"
CYCLES=${REPLUG_CYCLES:-5}
tap_plan $((CYCLES * 2 + 4))
tap_timeout 2400
pair_up
wait_xdomain a && wait_xdomain b && tbnet_up >/dev/null
for i in $(seq 1 "$CYCLES"); do
	"$VMPAIR" cable unplug >/dev/null
	if wait_no_xdomain a 60 && wait_no_xdomain b 60; then
		ok "cycle $i: XDomain gone on both after unplug"
	else
		not_ok "cycle $i: XDomain gone on both after unplug"
	fi
	"$VMPAIR" cable plug >/dev/null
	if wait_xdomain a 120 && wait_xdomain b 120; then
		ok "cycle $i: XDomain back on both after plug"
	else
		not_ok "cycle $i: XDomain back on both after plug"
	fi
done
if tbnet_up; then ok "thunderbolt0 carrier back after replugs"; else not_ok "thunderbolt0 carrier back after replugs"; fi
check "ping a -> b after replugs" va ping -c 3 -W 5 192.0.2.2
check_clean_dmesg
tap_done
