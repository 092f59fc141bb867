#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-load: odl_tb5_cli latency-load: 4 KiB ping-pong on one port while a
# 1 MiB bandwidth stream loads another, over /dev/odl_tb5_0; both streams
# verified.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 4
tap_timeout 1200
odl_setup
odl_cli_run "latency-load: 4 KiB x 1000 under a 1 MiB load stream, verified" 900 \
	--test latency-load --size 4K --iterations 1000 --load-size 1M --timeout 60000
if printf '%s\n' "$ODL_CLI_OUT" | grep -q 'background load: [1-9][0-9]* messages'; then
	ok "the load stream carried data" "$(printf '%s\n' "$ODL_CLI_OUT" | grep 'background load')"
else
	not_ok "the load stream carried data" "$ODL_CLI_OUT"
fi
odl_check_clean
tap_done
