#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-badinput: the table of bad ioctl arguments in odl_xfer badinput
# (each with its expected errno, and the state unchanged afterwards), then
# the device still moves verified data and dmesg is clean.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 5
tap_timeout 900
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
odl_check_clean
tap_done
