#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-lat: odl_tb5_cli latency (ping-pong, one-way = RTT/2) over
# /dev/odl_tb5_0 through the kernel backend: 64 B, 4 KiB and 1 MiB
# messages, data verified both ways.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 5
tap_timeout 1200
odl_setup
for spec in "64 2000" "4K 2000" "1M 100"; do
	set -- $spec
	odl_cli_run "latency, $1-byte messages x $2, verified" 600 \
		--test latency --size "$1" --iterations "$2" --timeout 60000 &&
		diag "$(printf '%s\n' "$ODL_CLI_OUT" | grep -A1 't_median' | tail -n 1)"
done
odl_check_clean
tap_done
