#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-jitter: odl_tb5_cli jitter test (10 s of 4 KiB ping-pong) over
# /dev/odl_tb5_0: data verified, histogram printed, and the JSON form
# parses.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 6
tap_timeout 1200
odl_setup
odl_cli_run "jitter, 4 KiB for 10 s, verified" 600 \
	--test jitter --size 4K --duration 10 --timeout 60000
if printf '%s\n' "$ODL_CLI_OUT" | grep -q 'Latency histogram'; then
	ok "histogram printed"
else
	not_ok "histogram printed" "$ODL_CLI_OUT"
fi
odl_cli_run "jitter --json, 64 KiB for 5 s, verified" 600 \
	--test jitter --size 64K --duration 5 --timeout 60000 --json
check "JSON output parses" python3 -c 'import json, sys; d = json.loads(sys.argv[1].strip().splitlines()[-1]); assert d["test"] == "jitter"' "$ODL_CLI_OUT"
odl_check_clean
tap_done
