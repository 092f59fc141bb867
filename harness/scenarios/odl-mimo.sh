#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-mimo: odl_tb5_cli mimo: N streams on N ports, each sending and
# receiving in both directions at once, over /dev/odl_tb5_0; every stream
# verified on both sides.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 5
tap_timeout 1200
odl_setup
odl_cli_run "mimo: 4 streams x 200 x 256 KiB each way, verified" 900 \
	--test mimo --streams 4 --size 256K --iterations 200 --timeout 60000
odl_cli_run "mimo: 8 streams x 1000 x 5000 B each way, verified" 900 \
	--test mimo --streams 8 --size 5000 --iterations 1000 --timeout 60000
got=$(printf '%s\n' "$ODL_CLI_OUT" | awk '$1 ~ /^[0-7]$/ && $3 == 1000 && $4 == 1000' | wc -l)
is "$got" 8 "all 8 streams sent and received 1000 messages"
odl_check_clean
tap_done
