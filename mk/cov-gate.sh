#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cov-gate.sh TARGET WHAT INFO MIN REPORT: print INFO's lcov summary (kept in
# REPORT/summary.txt), its line coverage as "TARGET: WHAT line coverage N%",
# and fail when that is below MIN %. Used by make coverage-*.
set -u
target=$1 what=$2 info=$3 min=$4 report=$5
lcov --summary "$info" 2>&1 | tee "$report/summary.txt"
pct=$(sed -n 's/^ *lines\.*: *\([0-9.]*\)%.*/\1/p' "$report/summary.txt")
if [ -z "$pct" ]; then
	echo "$target: no line coverage figure" >&2
	exit 1
fi
echo "$target: $what line coverage $pct% (minimum $min%)"
echo "$target: report $report/index.html"
awk -v p="$pct" -v m="$min" 'BEGIN { exit !(p + 0 >= m + 0) }' ||
	{ echo "$target: FAIL: below $min%" >&2; exit 1; }
