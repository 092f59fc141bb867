#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-lat: odl_tb5_cli latency (ping-pong, one-way = RTT/2) over
# /dev/odl_tb5_0 through the kernel backend: empty (driver ABI 1.9), 64 B,
# 4 KiB and 1 MiB messages, data verified both ways. Then two threads on one busy-polling
# handle (tests/guest/odl_libvm.c): a send gets in while the other thread
# waits in odl_tb5_poll, and that poll returns the send's completion. And a
# keyed receive withdrawn while still in a batch-mode handle's batch: the
# driver hears of it and discards its message on arrival (rx_cancelled).
# And a busy-polling send that waits for room lets another thread of its
# handle in (odl_libvm slotwait / recvmany). And receives of capacity 0
# (odl_libvm emptyrecv / emptysend): a 1-byte message does not fit one
# (-EMSGSIZE), an empty message does, and the buffer stays untouched, also
# for the receive placed at the buffer's very end.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 10
tap_timeout 1200
odl_setup
for spec in "0 2000" "64 2000" "4K 2000" "1M 100"; do
	set -- $spec
	odl_cli_run "latency, $1-byte messages x $2, verified" 600 \
		--test latency --size "$1" --iterations "$2" --timeout 60000 &&
		diag "$(printf '%s\n' "$ODL_CLI_OUT" | grep -A1 't_median' | tail -n 1)"
done
desc="two threads on one busy-polling handle: a send gets in while the other polls"
if odl_libvm_pair b "--port 7 recv 65536" a "--port 7 shared 65536"; then
	ok "$desc" "$LIBVM_TX" "$LIBVM_RX"
else
	not_ok "$desc" "a: $LIBVM_TX" "b: $LIBVM_RX"
fi
# batch mode: the keyed receive withdrawn from the batch reaches the driver
# first, so its message is discarded on arrival (API 1.6), not held back
rc0=$(odl_stat a rx_cancelled)
odl_libvm_pair a "--port 8 batchcancel 65536" b "--port 8 sendkey 65536"
rc=$?
rc1=$(odl_stat a rx_cancelled)
desc="batch mode: a keyed receive withdrawn from the batch; its message discarded on arrival (rx_cancelled +1), the next one delivered"
if [ "$rc" = 0 ] && [ "$rc1" = $((rc0 + 1)) ]; then
	ok "$desc" "$LIBVM_RX"
else
	not_ok "$desc" "b: $LIBVM_TX" "a: $LIBVM_RX" "a: rx_cancelled $rc0 -> $rc1 (want +1)"
fi
# receives of capacity 0, at offset 0 and at the buffer's end: the 1-byte
# message fails the first with -EMSGSIZE, the empty one completes the second
desc="receives of capacity 0: a 1-byte message gets -EMSGSIZE, an empty one status 0 length 0, the buffer untouched"
if odl_libvm_pair b "--port 11 emptyrecv 4096" a "--port 11 emptysend 4096"; then
	ok "$desc" "$LIBVM_RX"
else
	not_ok "$desc" "a: $LIBVM_TX" "b: $LIBVM_RX"
fi
# a busy-polling send waiting for room (the peer takes nothing: its queue
# fills, then the RX ring is held, then a's 256 sends are all out) lets the
# handle's other thread in between its looks; then b receives all 512.
# rx_stall_ms raised on both sides so that nothing gives way (b drops no
# held message, a sees no TX wedge) while the stall is being looked at
sm_a=$(vm a cat /sys/module/odl_tb5/parameters/rx_stall_ms)
sm_b=$(vm b cat /sys/module/odl_tb5/parameters/rx_stall_ms)
for v in "$sm_a" "$sm_b"; do
	case $v in '' | *[!0-9]*) bail_out "cannot read rx_stall_ms: a '$sm_a', b '$sm_b'" ;; esac
done
stall_restore() {
	vm a sh -c "echo $sm_a > /sys/module/odl_tb5/parameters/rx_stall_ms"
	vm b sh -c "echo $sm_b > /sys/module/odl_tb5/parameters/rx_stall_ms"
}
tap_cleanup stall_restore	# also when the watchdog ends the scenario (KEEP_PAIR)
vm a sh -c 'echo 120000 > /sys/module/odl_tb5/parameters/rx_stall_ms'
vm b sh -c 'echo 120000 > /sys/module/odl_tb5/parameters/rx_stall_ms'
dr0=$(odl_stat b drops)
vm b rm -f /tmp/go
odl_libvm_start b /tmp/many.log --port 9 --count 512 --go /tmp/go recvmany 262144
wait_for "vm b grep -q ready /tmp/many.log" 60
odl_libvm_bg a 400 --port 9 --count 512 slotwait 262144
wait_for "grep -q stalled '$LIBVM_BG_OUT' || ! kill -0 $LIBVM_BG_PID 2>/dev/null" 240
vm b touch /tmp/go
odl_libvm_bg_wait
wait_for "vm b grep -q 'odl_libvm exit' /tmp/many.log" 300
stall_restore
desc="a busy-polling send waiting for room lets the handle's other thread in; then 512 x 256 KiB delivered and verified"
if [ "$LIBVM_BG_RC" = 0 ] && vm b grep -q 'odl_libvm exit 0' /tmp/many.log &&
	[ "$(odl_stat b drops)" = "$dr0" ]; then
	ok "$desc" "a: $LIBVM_BG" "b: $(vm b cat /tmp/many.log)"
else
	not_ok "$desc" "a (exit $LIBVM_BG_RC): $LIBVM_BG" "b: $(vm b cat /tmp/many.log 2>&1)" \
		"b: drops $dr0 -> $(odl_stat b drops)" "a: $(vm a /tmp/odl_xfer stats 2>&1)" \
		"b: $(vm b /tmp/odl_xfer stats 2>&1)"
fi
odl_check_clean
tap_done
