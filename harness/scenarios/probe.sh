#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# probe: the stock thunderbolt driver binds the emulated NHI, the software
# connection manager creates domain0 and the host router, dmesg is clean.
. "$(dirname "$0")/common.sh"
tap_plan 21
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
# vmpair boots a pair again, once, when a guest's kernel dies before its
# /init (an emulator flake, nothing of ours has run yet), and never for a
# crash after /init started. Both hinge on the mark /init prints first.
for v in a b; do
	check "$v: /init printed its start mark on the console (vmpair's boot-crash test)" \
		grep -q "odl-init: start" "$VMPAIR_STATE/$v-console.log"
done
# A kernel without an /init panics before it: one retry, then the failure
# with the panic in the evidence and both boots' consoles kept.
cst=$VMPAIR_STATE.bootcrash
out=$("$VMPAIR" --state "$cst" up --timeout 240 --append "rdinit=/odl-none init=/odl-none" 2>&1)
rc=$?
n=$(printf '%s\n' "$out" | grep -c '^vmpair: boot retry 1 of 1: guest [ab]')
if [ "$rc" != 0 ] && [ "$n" = 1 ] && printf '%s\n' "$out" | grep -q "Kernel panic"; then
	ok "a kernel that dies before /init: one boot retry, then the failure with the panic (rc $rc)"
else
	not_ok "a kernel that dies before /init: one boot retry, then the failure with the panic" \
		"rc=$rc retries=$n" "$(printf '%s\n' "$out" | tail -n 30)"
fi
check "the first boot's consoles are kept, the panic in the crashed one's (*.bootcrash1)" \
	sh -c "test -e '$cst/a-console.log.bootcrash1' -a -e '$cst/b-console.log.bootcrash1' &&
		cat '$cst/a-console.log.bootcrash1' '$cst/b-console.log.bootcrash1' | grep -q 'Kernel panic'"
check "the crashed pair is down (no QEMU, cable or mux left)" \
	sh -c "\"$VMPAIR\" --state '$cst' status 2>/dev/null | grep -q '^pair *down'"
"$VMPAIR" --state "$cst" down >/dev/null 2>&1
# One crash before /init, then a good boot: the pair comes up, says so.
out=$("$VMPAIR" --state "$cst" up --crash-first-boot 2>&1)
rc=$?
n=$(printf '%s\n' "$out" | grep -c '^vmpair: boot retry 1 of 1: guest [ab]')
if [ "$rc" = 0 ] && [ "$n" = 1 ]; then
	ok "a kernel that dies before /init once: the pair comes up on the retry and says so"
else
	not_ok "a kernel that dies before /init once: the pair comes up on the retry and says so" \
		"rc=$rc retries=$n" "$(printf '%s\n' "$out" | tail -n 30)"
fi
printf '%s\n' "$out" | grep -E '^vmpair: (boot retry|pair up)' | while read -r l; do diag "(the test's own crash) $l"; done
for v in a b; do
	check "$v: the retried pair's agent answers" \
		env VMPAIR_STATE="$cst" "$VMPAIR" exec $v --timeout 60 -- true
done
"$VMPAIR" --state "$cst" down >/dev/null 2>&1
tap_done
