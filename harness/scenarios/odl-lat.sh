#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-lat: odl_tb5_cli latency (ping-pong, one-way = RTT/2) over
# /dev/odl_tb5_0 through the kernel backend: 64 B, 4 KiB and 1 MiB
# messages, data verified both ways. Then two threads on one busy-polling
# handle (tests/guest/odl_threads.c): a send gets in while the other thread
# waits in odl_tb5_poll, and that poll returns the send's completion.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 6
tap_timeout 1200
odl_setup
for spec in "64 2000" "4K 2000" "1M 100"; do
	set -- $spec
	odl_cli_run "latency, $1-byte messages x $2, verified" 600 \
		--test latency --size "$1" --iterations "$2" --timeout 60000 &&
		diag "$(printf '%s\n' "$ODL_CLI_OUT" | grep -A1 't_median' | tail -n 1)"
done
vm b sh -c 'rm -f /tmp/thr.log; setsid /tmp/odl_threads --port 7 recv 65536 > /tmp/thr.log 2>&1 < /dev/null & echo $! > /tmp/thr.pid'
if wait_for "vm b grep -q posted /tmp/thr.log" 90; then
	out=$("$VMPAIR" exec a --timeout 120 -- /tmp/odl_threads --port 7 shared 65536 2>&1)
	rc=$?
else
	out="b's receiver did not post its receive"
	rc=1
fi
wait_for "! vm b sh -c 'kill -0 \$(cat /tmp/thr.pid) 2>/dev/null'" 90
rcv=$(vm b cat /tmp/thr.log 2>&1)
if [ "$rc" = 0 ] && printf '%s\n' "$rcv" | grep -q 'pattern verified'; then
	ok "two threads on one busy-polling handle: a send gets in while the other polls" "$out" "$rcv"
else
	not_ok "two threads on one busy-polling handle: a send gets in while the other polls" \
		"a (exit $rc): $out" "b: $rcv"
fi
odl_check_clean
tap_done
