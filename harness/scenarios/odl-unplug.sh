#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-unplug: the cable is pulled in the middle of an odl_tb5_cli
# bandwidth run (the cable's `fault unplug-after frames=N`, N different
# each cycle): the client and the server fail with an error (no hang, no
# oops); the devices go and come back after the replug, both log in again
# and the same test, shorter, passes verified. ODL_UNPLUG_CYCLES (4; make
# sim-soak: 10).
# Odd cycles wait until both sides report the login before the test; even
# cycles make b's controller slow to enable its DMA paths at login (module
# parameter test_path_delay_ms=3000) and start the CLI as soon as the
# device nodes are back, so the CLI's own wait for the peer (GET_INFO
# state) must be enough: a side may report CONNECTED only once both
# receive sides are up, and must not send before the peer confirmed its
# receive side (the first message after a replug was once lost).
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
CYCLES=${ODL_UNPLUG_CYCLES:-4}
tap_plan $((CYCLES * 3 + 3))
tap_timeout 3000
odl_setup
for i in $(seq 1 "$CYCLES"); do
	odl_cli_server b --timeout 60000 || bail_out "cycle $i: server did not start"
	frames=$((3000 + i * 1500))
	"$VMPAIR" cable fault unplug-after frames=$frames >/dev/null ||
		bail_out "cable fault command failed"
	out=$("$VMPAIR" exec a --timeout 600 -- /tmp/odl_tb5_cli --client --device 0 \
		--test bandwidth --size 1M --iterations 100000 --timeout 60000 2>&1)
	rc=$?
	wait_for "! vm b pidof odl_tb5_cli" 120
	srv=$(vm b cat /tmp/cli-server.log 2>&1)
	if [ $rc -ne 0 ] && [ $rc -ne 124 ] && echo "$out" | grep -q 'odl_tb5_cli: error' &&
		! vm b pidof odl_tb5_cli >/dev/null; then
		ok "cycle $i: unplug after $frames frames: client and server stopped with an error" \
			"$(echo "$out" | grep error)" "$(echo "$srv" | grep error)"
	else
		not_ok "cycle $i: unplug after $frames frames: client and server stopped with an error" \
			"client exit $rc:" "$out" "server:" "$srv" "$("$VMPAIR" cable fault list)"
	fi
	"$VMPAIR" cable fault clear >/dev/null
	wait_for "! vm a test -e /dev/odl_tb5_0" 60 && wait_for "! vm b test -e /dev/odl_tb5_0" 60
	delay=$(( i % 2 ? 0 : 3000 ))
	vm b sh -c "echo $delay > /sys/module/odl_tb5/parameters/test_path_delay_ms" ||
		bail_out "b: cannot set test_path_delay_ms"
	"$VMPAIR" cable plug >/dev/null
	if [ $((i % 2)) = 0 ]; then
		odl_wait_dev b 180 && odl_wait_dev a 180
		odl_cli_run "cycle $i: b slow to enable its paths, bandwidth at once after replug: 64 x 1 MiB verified" 600 \
			--test bandwidth --size 1M --iterations 64 --timeout 60000
	fi
	if odl_wait_connected a 180 && odl_wait_connected b 180; then
		ok "cycle $i: replugged, both logged in again"
	else
		not_ok "cycle $i: replugged, both logged in again" "$(vm a /tmp/odl_xfer info 2>&1)" \
			"$(vm b /tmp/odl_xfer info 2>&1)" "$("$VMPAIR" cable status)"
	fi
	[ $((i % 2)) = 0 ] ||
		odl_cli_run "cycle $i: bandwidth after replug: 64 x 1 MiB verified" 600 \
			--test bandwidth --size 1M --iterations 64 --timeout 60000
done
is "$(vm a /tmp/odl_xfer info | sed -n 's/^index=//p')" 0 "a: the peer kept device index 0"
odl_check_clean
tap_done
