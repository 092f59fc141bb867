#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Host check of harness/scenarios/tb-problems.awk, the filter behind every
# scenario's "dmesg clean" check, on made-up `dmesg -r` logs. TAP output.
set -u
TAP_AUTO_EVIDENCE=0 # no guests here
. "$(dirname "$0")/../../harness/lib/tap.sh"
AWK_FILE=$TAP_LIB_DIR/../scenarios/tb-problems.awk
# expect NAME WANT_LINES RACE <<< LOG: the filter prints WANT_LINES lines
expect() {
	local name=$1 want=$2 race=$3 out got
	out=$(awk -v race="$race" -f "$AWK_FILE")
	got=$(printf '%s' "$out" | grep -c .)
	if [ "$got" = "$want" ]; then
		ok "$name"
	else
		not_ok "$name" "$(printf 'printed %s lines, want %s:\n%s' "$got" "$want" "$out")"
	fi
}
tap_plan 12
expect "a clean log prints nothing" 0 0 <<'L'
<6>[    1.000000] thunderbolt 0000:00:02.0: NHI initialized, starting thunderbolt
<7>[    2.000000] thunderbolt 0-1: sending properties changed notification
L
expect "a thunderbolt error is a problem" 1 0 <<'L'
<3>[    5.000000] thunderbolt 0000:00:02.0: 0: timeout reading config space 0 from 0x12
L
expect "a retried properties-changed attempt is not" 0 0 <<'L'
<7>[   95.163043] thunderbolt 0-1: sending properties changed notification
<7>[   96.173396] thunderbolt 0-1: failed to send properties changed notification, retrying
<3>[   96.173561] thunderbolt 0-1: failed to send properties changed notification
<7>[   97.197536] thunderbolt 0-1: sending properties changed notification
L
expect "the last attempt, not retried, is" 1 0 <<'L'
<7>[   10.000000] thunderbolt 0-1: failed to send properties changed notification, retrying
<3>[   10.000100] thunderbolt 0-1: failed to send properties changed notification
<3>[   11.000100] thunderbolt 0-1: failed to send properties changed notification
L
expect "a retry of another device does not excuse this one" 1 0 <<'L'
<7>[   10.000000] thunderbolt 0-3: failed to send properties changed notification, retrying
<3>[   10.000100] thunderbolt 0-1: failed to send properties changed notification
L
expect "a WARNING and its stack (the WARNING twice: as itself and as the trace's context)" 4 0 <<'L'
<4>[    7.000000] WARNING: CPU: 0 PID: 1 at drivers/thunderbolt/nhi.c:1 ring_work+0x1/0x2
<4>[    7.000001] Call Trace:
<4>[    7.000002]  ring_work+0x10/0x20
L
expect "properties that changed while they were read are not (odl-hostile, CI)" 0 0 <<'L'
<7>[   92.709058] thunderbolt 0-1: requesting remote properties
<3>[   92.724844] thunderbolt 0-1: failed to parse XDomain properties
<7>[   92.768715] thunderbolt 0000:00:02.0: 1: received XDomain properties changed request
L
expect "a properties block that did not change is" 1 0 <<'L'
<7>[   30.000000] thunderbolt 0000:00:02.0: 1: received XDomain properties changed request
<7>[   32.709058] thunderbolt 0-1: requesting remote properties
<3>[   32.724844] thunderbolt 0-1: failed to parse XDomain properties
<7>[   40.000000] thunderbolt 0000:00:02.0: 1: received XDomain properties changed request
L
expect "a change of another peer does not excuse it" 1 0 <<'L'
<3>[   32.724844] thunderbolt 0-1: failed to parse XDomain properties
<7>[   32.768715] thunderbolt 0000:00:02.0: 3: received XDomain properties changed request
L
expect "an RCU stall line" 1 0 <<'L'
<3>[   75.000000] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:
L
expect "thunderbolt-net's login race counts without the marker" 1 0 <<'L'
<3>[   20.000000] thunderbolt-net 0-1.0 thunderbolt0: failed to allocate Rx HopID
L
expect "and not with it" 0 1 <<'L'
<3>[   20.000000] thunderbolt-net 0-1.0 thunderbolt0: failed to allocate Rx HopID
L
tap_done
