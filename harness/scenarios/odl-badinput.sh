#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-badinput: the table of bad ioctl arguments in odl_xfer badinput
# (each with its expected errno, and the state unchanged afterwards), then
# 60 s of random ioctl calls (odl_xfer fuzz, seeded: ODL_FUZZ_SEED,
# ODL_FUZZ_SECONDS) on both guests at once; then the device still moves
# verified data and dmesg is clean (no oops, no WARN).
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 8
tap_timeout 1200
FUZZ_SEED=${ODL_FUZZ_SEED:-0x0d1f022}
FUZZ_SECONDS=${ODL_FUZZ_SECONDS:-60}
odl_need_build
pair_up
for v in a b; do
	odl_put $v || bail_out "cannot copy the driver into $v"
done
check "bad module parameters refused (ring_size=100, 32768; e2e=maybe)" \
	vm b sh -c '! insmod /tmp/odl_tb5.ko ring_size=100 && ! insmod /tmp/odl_tb5.ko ring_size=32768 &&
		! insmod /tmp/odl_tb5.ko e2e=maybe && dmesg | grep -q "ring_size 100: must be"'
for v in a b; do
	odl_load $v || bail_out "cannot load odl_tb5 on $v"
done
odl_wait_connected a 90 && odl_wait_connected b 90 || bail_out "no login"
out=$(vm a /tmp/odl_xfer badinput 2>&1)
rc=$?
n=$(echo "$out" | grep -c '^ok')
if [ $rc -eq 0 ]; then
	ok "bad-input table on a: $n cases, each with its errno" "$out"
else
	not_ok "bad-input table on a" "$(echo "$out" | grep -v '^ok')"
fi
check "device still works: a -> b verified" odl_xfer_run a b 1 2 8 1,5000,70000
# random ioctls on both sides at once (b in the background)
vm b sh -c "setsid /tmp/odl_xfer fuzz -n $FUZZ_SECONDS -S $((FUZZ_SEED + 1)) > /tmp/fuzz.log 2>&1 < /dev/null &"
out=$("$VMPAIR" exec a --timeout $((FUZZ_SECONDS + 240)) -- /tmp/odl_xfer fuzz -n "$FUZZ_SECONDS" -S "$FUZZ_SEED" 2>&1)
rc=$?
if [ $rc -eq 0 ] && echo "$out" | grep -q '^fuzz: '; then
	ok "a: $FUZZ_SECONDS s of random ioctl calls (seed $FUZZ_SEED)" "$out"
else
	not_ok "a: $FUZZ_SECONDS s of random ioctl calls (seed $FUZZ_SEED)" "exit $rc" "$out"
fi
if wait_for "! vm b pidof odl_xfer" $((FUZZ_SECONDS + 240)) && vm b grep -q '^fuzz: ' /tmp/fuzz.log; then
	ok "b: $FUZZ_SECONDS s of random ioctl calls at the same time" "$(vm b cat /tmp/fuzz.log)"
else
	not_ok "b: $FUZZ_SECONDS s of random ioctl calls at the same time" "$(vm b cat /tmp/fuzz.log)"
fi
odl_wait_connected a 60 && odl_wait_connected b 60
check "device still works after the random calls: b -> a verified" odl_xfer_run b a 3 4 8 1,5000,70000
odl_check_clean
tap_done
