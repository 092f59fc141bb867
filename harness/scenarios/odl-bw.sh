#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-bw: odl_tb5_cli bandwidth test, server on b, client on a, over
# /dev/odl_tb5_0 through libodl_tb5's kernel backend (driver defaults,
# ring_size 4096): 1100 x 1 MiB (> 1 GiB), every byte verified by the
# server; then 4 KiB messages; then from the client's own heap memory
# (--user-memory): pinned by the driver the library copies nothing, and
# with pinning off (ODL_TB5_NO_PIN=1) it copies every byte through its
# buffer area; counters show no errors.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 10
tap_timeout 1500
odl_setup
odl_cli_run "bandwidth a -> b: 1100 x 1 MiB verified (kernel backend)" 1200 \
	--test bandwidth --size 1M --iterations 1100 --timeout 60000
moved=$(vm b sed -n 's/.* \([0-9]*\) bytes received, all data verified/\1/p' /tmp/cli-server.log)
if [ -n "$moved" ] && [ "$moved" -ge $((1 << 30)) ]; then
	ok "at least 1 GiB moved and verified" "$moved bytes"
else
	not_ok "at least 1 GiB moved and verified" "server: $(vm b cat /tmp/cli-server.log)"
fi
avg=$(printf '%s\n' "$ODL_CLI_OUT" | awk '$1 == 1048576 && NF >= 5 { print $4 }' | head -n 1)
[ -n "$avg" ] && diag "odl_tb5 bandwidth 1 MiB: $avg Gb/s = $(awk -v g="$avg" 'BEGIN { printf "%.0f", g * 1000 }') Mb/s"
odl_cli_run "bandwidth a -> b: 20000 x 4 KiB verified" 900 \
	--test bandwidth --size 4K --iterations 20000 --timeout 60000
# registered user memory: "library copied N bytes" is the client's count
# for its data streams (stats.copied_bytes)
copied() { printf '%s\n' "$ODL_CLI_OUT" | sed -n 's/.*buffers: user memory.*library copied \([0-9]*\) bytes.*/\1/p' | head -n 1; }
odl_cli_run "bandwidth a -> b from registered user memory: 300 x 256 KiB verified" 600 \
	--test bandwidth --size 256K --iterations 300 --user-memory --timeout 60000
n=$(copied)
if [ "$n" = 0 ]; then
	ok "pinned user memory: the library copied nothing" "$(printf '%s\n' "$ODL_CLI_OUT" | grep 'library copied')"
else
	not_ok "pinned user memory: the library copied nothing" "copied: '$n'" "$ODL_CLI_OUT"
fi
ODL_CLI_ENV=ODL_TB5_NO_PIN=1 odl_cli_run \
	"bandwidth a -> b from user memory not pinned (ODL_TB5_NO_PIN=1): 300 x 256 KiB verified" 600 \
	--test bandwidth --size 256K --iterations 300 --user-memory --timeout 60000
n=$(copied)
if [ -n "$n" ] && [ "$n" -ge $((300 * 256 * 1024)) ]; then
	ok "user memory not pinned: the library copied every byte through its area" "copied $n bytes"
else
	not_ok "user memory not pinned: the library copied every byte through its area" "copied: '$n'" "$ODL_CLI_OUT"
fi
odl_check_rx_stats "b: no seq/len/descriptor errors, no drops" b
odl_check_clean
tap_done
