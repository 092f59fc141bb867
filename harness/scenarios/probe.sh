#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# probe: the stock thunderbolt driver binds the emulated NHI, the software
# connection manager creates domain0 and the host router, dmesg is clean.
. "$(dirname "$0")/common.sh"
tap_plan 15
tap_timeout 900
pair_up
for v in a b; do
	bdf=$(nhi_bdf $v)
	if [ -n "$bdf" ] && [ "$(vm $v readlink /sys/bus/pci/devices/$bdf/driver | sed 's|.*/||')" = thunderbolt ]; then
		ok "$v: thunderbolt.ko bound to the NHI at $bdf"
	else
		not_ok "$v: thunderbolt.ko bound to the NHI" "bdf='$bdf'"
	fi
	check "$v: domain0 and host router 0-0 exist" \
		vm $v test -e /sys/bus/thunderbolt/devices/domain0 -a -e /sys/bus/thunderbolt/devices/0-0/unique_id
	check "$v: software connection manager in use" \
		vm $v sh -c 'dmesg | grep -q "using software connection manager"'
done
a_uid=$(vm a cat /sys/bus/thunderbolt/devices/0-0/unique_id)
b_uid=$(vm b cat /sys/bus/thunderbolt/devices/0-0/unique_id)
if [ -n "$a_uid" ] && [ "$a_uid" != "$b_uid" ]; then
	ok "host routers have distinct UUIDs" "a=$a_uid b=$b_uid"
else
	not_ok "host routers have distinct UUIDs" "a=$a_uid b=$b_uid"
fi
# Under TCG the stall detectors wait three times their default (vmpair's
# TCG_GUEST_ARGS: host starvation is not a guest stall) and the guest does
# not keep time on the TSC; under KVM the guest keeps the kernel's own
# values.
accel=$("$VMPAIR" status | awk '$1 == "accel" { print $2 }')
for v in a b; do
	st=$(vm $v cat /sys/module/rcupdate/parameters/rcu_cpu_stall_timeout)
	wt=$(vm $v cat /proc/sys/kernel/watchdog_thresh)
	if [ "$accel" = tcg ]; then
		want="63 30"
	else
		want="$st $wt"
		vm $v grep -q rcu_cpu_stall_timeout /proc/cmdline && want="the kernel's own"
	fi
	is "$st $wt" "$want" "$v: RCU stall timeout and watchdog threshold fit the accelerator ($accel)"
	# Under TCG the guest keeps time on a clock that runs on QEMU's
	# virtual clock, not on the host's raw TSC (vmpair: tsc=unstable)
	cs=$(vm $v cat /sys/devices/system/clocksource/clocksource0/current_clocksource)
	if [ "$accel" != tcg ] || { [ -n "$cs" ] && [ "$cs" != tsc ] && [ "$cs" != tsc-early ]; }; then
		ok "$v: clocksource $cs fits the accelerator ($accel)"
	else
		not_ok "$v: clocksource $cs fits the accelerator ($accel)" "under TCG the TSC is the host's raw counter"
	fi
done
check_clean_dmesg
# vmpair tells a guest kernel that panicked before /init loaded a driver
# for the controller from one that died later by the mark /init prints
# then (vmpair-boot checks the rest)
for v in a b; do
	check "$v: /init printed its start and drivers marks on the console (vmpair's boot-crash test)" \
		sh -c "grep -q 'odl-init: start' '$VMPAIR_STATE/$v-console.log' &&
			grep -q 'odl-init: drivers' '$VMPAIR_STATE/$v-console.log'"
done
tap_done
