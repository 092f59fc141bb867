#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Check the Wireshark/tshark dissector sim/odl_link.lua against the C
# decoder: for a capture holding every message kind (odl-capture-sample)
# and for the capture of sim/selftest.sh, tshark's Info column must equal
# odl-capture-dump's trace lines (minus timestamps and DATA's data= hex),
# some display filters must select what they should, and the verbose tree
# must dissect without Lua errors or malformed packets.
# Needs tshark (Debian: apt-get install tshark). Run by `make capture-check`.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DUMP=${SIM_CAPTURE_DUMP:-$HERE/../build/sim/odl-capture-dump}
SAMPLE=${SIM_CAPTURE_SAMPLE:-$HERE/../build/sim/odl-capture-sample}
LUA=$HERE/odl_link.lua
command -v tshark >/dev/null 2>&1 || {
	echo "capture-check: tshark is not installed (Debian: apt-get install tshark)" >&2
	exit 1
}
D=$(mktemp -d /tmp/odl-capture-check.XXXXXX)
trap 'rm -rf "$D"' EXIT
TS=(tshark -n -X "lua_script:$LUA")
fail=0

"$SAMPLE" "$D/sample.pcapng"
SELFTEST_KEEP_CAPTURE="$D/selftest.pcapng" bash "$HERE/selftest.sh" >/dev/null

# C decoder lines: drop the timestamp, collapse blanks, drop DATA's data=
c_lines() {
	"$DUMP" "$1" | cut -d' ' -f2- | tr -s ' ' | sed -E 's/^((\S+ )?(\S+ )?DATA .*) data=[0-9a-f.]*$/\1/'
}
lua_lines() {
	"${TS[@]}" -r "$1" -T fields -e _ws.col.Info 2>"$D/tshark.err" | tr -s ' '
}
for cap in sample selftest; do
	c_lines "$D/$cap.pcapng" >"$D/$cap.c"
	lua_lines "$D/$cap.pcapng" >"$D/$cap.lua"
	if grep -qi 'lua' "$D/tshark.err"; then
		echo "capture-check: $cap: tshark reports:"; cat "$D/tshark.err"; fail=1
	fi
	if ! cmp -s "$D/$cap.c" "$D/$cap.lua"; then
		echo "capture-check: $cap: dissector and odl-capture-dump differ (< C, > Lua):"
		diff "$D/$cap.c" "$D/$cap.lua" | head -20
		fail=1
	else
		echo "capture-check: $cap: $(wc -l <"$D/$cap.c") packets decoded identically"
	fi
	"${TS[@]}" -r "$D/$cap.pcapng" -V >"$D/$cap.V" 2>&1
	if grep -nE 'Lua Error|Dissector bug|\[Malformed Packet' "$D/$cap.V" | head -5 | grep .; then
		echo "capture-check: $cap: errors in the verbose dissection"; fail=1
	fi
done

# display filters on the sample (counts are of packets in odl-capture-sample.c)
count() { "${TS[@]}" -r "$D/sample.pcapng" -Y "$1" 2>/dev/null | wc -l; }
check() {
	local got; got=$(count "$1")
	if [[ $got != "$2" ]]; then
		echo "capture-check: filter '$1' selects $got packets, want $2"; fail=1
	fi
}
check 'odl.type == 1' 2
check 'odl.hello.magic != 0x4b4c444f' 1
check 'odl.state.up == 1 && odl.state.peer_uid == 0x1234' 1
check 'odl.ctrl.pdf == 1' 4
check 'odl.ctrl.route == 0x100000302 && odl.ctrl.cm == 1' 1
check 'odl.ctrl.space == 1 && odl.ctrl.offset == 0x39' 2
check 'odl.ctrl.code == 2' 1
check 'odl.ctrl.pg == 3' 1
check 'odl.ctrl.event_port == 5 && odl.ctrl.unplug == 1' 1
check 'odl.ctrl.xd.uuid == "b638d70e-42ff-40bb-97c2-90e2c0b2ff07"' 1
check 'odl.ctrl.xd.protocol contains "tbip" && odl.ctrl.xd.cmd == 42' 2
check 'odl.ctrl.crc_ok == 0' 1
check 'odl.data.hop == 2047 && odl.data.len == 4096' 1
check 'odl.data.crc_err == 1' 1
check 'odl.credit.credits == 16' 1
check 'odl.lane.bonded == 1' 1
check 'odl.dropped == 1' 5
check 'odl.cap_flags.drop_fault == 1' 2
check 'odl.cap_flags.corrupted == 1' 2
check 'odl.cap_flags.tampered == 1 && odl.note == "FAULT(tamper)" && odl.data.crc_err == 0' 1
check 'odl.type == 77' 1
# the selftest capture has the fault-injection events
s=$("${TS[@]}" -r "$D/selftest.pcapng" -Y 'odl.cap_flags.drop_fault == 1' 2>/dev/null | wc -l)
[[ $s -ge 2 ]] || { echo "capture-check: selftest capture: $s fault drops"; fail=1; }

if [[ $fail == 0 ]]; then
	echo "capture-check: ok ($(tshark --version 2>/dev/null | head -1))"
fi
exit $fail
