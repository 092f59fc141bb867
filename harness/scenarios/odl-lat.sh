#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-lat: odl_tb5_cli latency (ping-pong, one-way = RTT/2) over
# /dev/odl_tb5_0 through the kernel backend: 64 B, 4 KiB and 1 MiB
# messages, data verified both ways. Then two threads on one busy-polling
# handle (tests/guest/odl_libvm.c): a send gets in while the other thread
# waits in odl_tb5_poll, and that poll returns the send's completion. And a
# keyed receive withdrawn while still in a batch-mode handle's batch: the
# driver hears of it and discards its message on arrival (rx_cancelled).
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 7
tap_timeout 1200
odl_setup
for spec in "64 2000" "4K 2000" "1M 100"; do
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
odl_check_clean
tap_done
