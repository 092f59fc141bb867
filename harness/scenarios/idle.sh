#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# idle: with no peer the NHI runtime-suspends (D3hot) and stays healthy
# for more than 20 s; plugging the cable then wakes it (PME) and the peer
# is found.
. "$(dirname "$0")/common.sh"
tap_plan 11
tap_timeout 900
pair_up --unplugged
for v in a b; do
	bdf=$(nhi_bdf $v)
	eval "bdf_$v=$bdf"
	if wait_for "vm $v sh -c 'grep -q suspended /sys/bus/pci/devices/$bdf/power/runtime_status'" 120; then
		ok "$v: NHI runtime-suspended while idle"
	else
		not_ok "$v: NHI runtime-suspended while idle" "$(vm $v cat /sys/bus/pci/devices/$bdf/power/runtime_status)"
	fi
done
# > 20 s idle: 15 s autosuspend delay plus more than 5 s suspended
for v in a b; do
	eval "bdf=\$bdf_$v"
	if wait_for "vm $v sh -c '[ \$(cat /sys/bus/pci/devices/$bdf/power/runtime_suspended_time) -gt 5000 ]'" 120; then
		ok "$v: suspended for more than 5 s after 15 s idle" "uptime $(vm $v cut -d' ' -f1 /proc/uptime) s"
	else
		not_ok "$v: suspended for more than 5 s after 15 s idle"
	fi
	check "$v: D3hot power state" vm $v sh -c "grep -q D3hot /sys/bus/pci/devices/$bdf/power_state 2>/dev/null || grep -q suspended /sys/bus/pci/devices/$bdf/power/runtime_status"
done
"$VMPAIR" cable plug >/dev/null
for v in a b; do
	if wait_xdomain $v 120; then ok "$v: peer found after plug"; else not_ok "$v: peer found after plug"; fi
done
is "$(vm a cat /sys/bus/thunderbolt/devices/0-1/unique_id)" "$(vm b cat /sys/bus/thunderbolt/devices/0-0/unique_id)" "a's peer is b"
check_clean_dmesg
tap_done
