#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# quirk-apple-fa57: the synthetic Mac peer software (tests/apple_peer,
# odl_apple_peer.ko; docs/profiles.md "apple-m4") against Linux: a generic,
# b apple-m4. b runs role=mac (AD/FA57 advertisement, echo of every SEND),
# a role=linux (test sends through debugfs). Checked: each side sees the
# other's AD/FA57 service (key FF x6 "AD", prtcid 0xfa57) and a side's path
# comes up only once the peer advertises; both paths use XDomain HopID 9
# (module report and the cable's per-hop counts); SENDs of 1 B .. 1 MiB
# echo bit-exact with the expected frame counts; after an idle pause the
# echo waits for b's low-power burst (symptom: the delay), and a shorter
# wait ends in ETIMEDOUT, not a hang; a frame dropped a->b in the middle of
# a SEND cannot be seen by b (no sequence number on FA57) - b echoes the
# short message and a's check rejects it (EBADMSG); a frame arriving
# broken (CRC error) makes b discard the message and resync at the next
# EOF 3 (counted); so does a dropped EOF 3 (the merged message breaks the
# size limit); the next SEND echoes; unplug tears both paths down,
# replug brings them back; unload on both; dmesg clean.
. "$(dirname "$0")/common.sh"
tap_plan 35
tap_timeout 1500
KO=${APPLE_PEER_KO:-$SCEN_DIR/../../build/driver/odl_apple_peer.ko}
[ -f "$KO" ] || bail_out "$KO missing: run 'make driver'"
period=$(profile_key apple-m4 lowpower_period_ms)
idle=$(profile_key apple-m4 lowpower_idle_ms)
[ -n "$period" ] && [ -n "$idle" ] || bail_out "apple-m4 has no low-power keys"
DBG=/sys/kernel/debug/odl_apple_peer
# the sysfs key attribute in hex (Linux prints the bytes as they are):
# six 0xff, "AD", newline
AD_KEY=ffffffffffff41440a

# apd_stat GUEST NAME: one counter of the module
apd_stat() { vm "$1" sed -n "s/^$2 //p" $DBG/stats; }
# apd_status GUEST KEY: one line of the module's status
apd_status() { vm "$1" sed -n "s/^$2=//p" $DBG/status; }
# apd_send BYTES SEED TIMEOUT_MS: one SEND from a and its echo (the write
# returns when the echo matched, or fails with the error)
apd_send() { vm a sh -c "echo '$1 $2 $3' > $DBG/send" 2>&1; }
# fa57_service GUEST: the peer's AD/FA57 service as GUEST's thunderbolt
# core lists it ("0-1.N KEY-IN-HEX prtcid prtcvers prtcrevs prtcstns")
fa57_service() {
	vm "$1" sh -c 'for d in /sys/bus/thunderbolt/devices/0-1.*; do
		[ -e $d/prtcid ] || continue
		[ "$(cat $d/prtcid)" = 64087 ] || continue
		echo "${d##*/} $(od -An -tx1 $d/key | tr -d " \n") $(cat $d/prtcid) $(cat $d/prtcvers) $(cat $d/prtcrevs) $(cat $d/prtcstns)"
		exit 0
	done; exit 1'
}
apd_problems() {
	vm "$1" sh -c 'dmesg -r | awk '\''
		{ lvl = substr($0, 2, index($0, ">") - 2) + 0; lvl = lvl % 8 }
		/WARNING:|Call Trace|Oops|BUG:|general protection|Kernel panic/ { print; next }
		/module verification failed|taints kernel/ { next }
		lvl <= 4 && /odl_apple_peer/ { print }'\'''
}
# hop9_seen DIR: DATA frames the cable saw on HopID 9 in direction DIR
# (0 a->b, 1 b->a), counted by the watch rule added below
hop9_seen() {
	"$VMPAIR" cable status | python3 -c 'import json, sys
s = json.load(sys.stdin)
for r in s["faults"]["active"]:
    if r["rule"].endswith("nth=1000000000"):
        print(r["seen"][int(sys.argv[1])]); break' "$1"
}

pair_up --profile generic --profile-b apple-m4
wait_xdomain a && wait_xdomain b || bail_out "no XDomain peer"
for v in a b; do
	"$VMPAIR" put $v "$KO" /tmp/odl_apple_peer.ko >/dev/null ||
		bail_out "cannot copy the module into $v"
done

# --- advertisement, reciprocity ---
check "b: odl_apple_peer role=mac loads" vm b insmod /tmp/odl_apple_peer.ko role=mac
is "$(apd_status b state)" waiting "b: no path while a does not advertise AD/FA57"
if wait_for "fa57_service a" 60; then
	svc=$(fa57_service a)
	is "$(echo "$svc" | cut -d' ' -f2-)" "$AD_KEY 64087 1 0 0x00000000" \
		"a sees b's service: key FF x6 \"AD\", prtcid 0xfa57, vers 1, revs 0, stns 0 ($(echo "$svc" | cut -d' ' -f1))"
else
	not_ok "a sees b's AD/FA57 service" "$(vm a ls /sys/bus/thunderbolt/devices/ 2>&1)"
fi
check "a: odl_apple_peer role=linux loads" vm a insmod /tmp/odl_apple_peer.ko role=linux
if wait_for "fa57_service b" 60; then
	svc=$(fa57_service b)
	is "$(echo "$svc" | cut -d' ' -f2-)" "$AD_KEY 64087 1 0 0x00000000" \
		"b sees a's service: key FF x6 \"AD\", prtcid 0xfa57, vers 1, revs 0, stns 0 ($(echo "$svc" | cut -d' ' -f1))"
else
	not_ok "b sees a's AD/FA57 service" "$(vm b ls /sys/bus/thunderbolt/devices/ 2>&1)"
fi
if wait_for "[ \"\$(apd_status a state)\" = up ] && [ \"\$(apd_status b state)\" = up ]" 60; then
	ok "both paths up once both advertise" "a: $(vm a dmesg | grep 'FA57 data path up')" \
		"b: $(vm b dmesg | grep 'FA57 data path up')"
else
	bail_out "FA57 path not up" "a: $(vm a cat $DBG/status)" "b: $(vm b cat $DBG/status)"
fi
hops="$(apd_status a tx_hopid)/$(apd_status a rx_hopid) $(apd_status b tx_hopid)/$(apd_status b rx_hopid)"
is "$hops" "9/9 9/9" "XDomain HopID 9 both ways on both (a tx/rx, b tx/rx)"

# --- SENDs and echoes (a count-only cable rule watches HopID 9) ---
"$VMPAIR" cable fault drop hop=9 dir=both nth=1000000000 >/dev/null ||
	bail_out "cannot add the cable's watch rule"
seed=1
frames=0
for n in 1 4095 4096 4097 65536 1048576; do
	seed=$((seed + 1))
	frames=$((frames + (n + 4095) / 4096))
	out=$(apd_send $n $seed 30000)
	rc=$?
	if [ $rc -eq 0 ]; then
		ok "SEND of $n B echoes bit-exact ($(apd_status a last_us) us)"
	else
		not_ok "SEND of $n B echoes bit-exact" "$out" "a: $(vm a cat $DBG/stats | tr '\n' ' ')" \
			"b: $(vm b cat $DBG/stats | tr '\n' ' ')"
	fi
done
got="$(apd_stat a tx_frames) $(apd_stat b rx_frames) $(apd_stat b tx_frames) $(apd_stat a rx_frames)"
is "$got" "$frames $frames $frames $frames" \
	"4 KiB frames per SEND, both ways (a tx, b rx, b tx, a rx)"
is "$(hop9_seen 0) $(hop9_seen 1)" "$frames $frames" "the cable carried them on HopID 9 (a->b, b->a)"
is "$(apd_stat b received) $(apd_stat b bad) $(apd_stat a echoed) $(apd_stat a bad) $(apd_stat a mismatch)" \
	"6 0 6 0 0" "b received 6 SENDs, a 6 matching echoes, nothing bad"

# --- low-power receive on b: the echo waits for the burst ---
b0=$(nhi_stats b lowpower_bursts)
sleep $((idle / 1000 + 2))	# idle time is the test
out=$(apd_send 4096 100 $((period * 4)))
rc=$?
us=$(apd_status a last_us)
b1=$(nhi_stats b lowpower_bursts)
diag "symptom: first echo after ${idle}+ ms idle: $((us / 1000)) ms (b lowpower_bursts $b0 -> $b1, period $period ms)"
if [ $rc -eq 0 ] && [ "$us" -ge $((period * 400)) ] && [ "${b1:-0}" -gt "${b0:-0}" ]; then
	ok "after idle the echo comes with b's burst: $((us / 1000)) ms, bursts $b0 -> $b1"
else
	not_ok "after idle the echo comes with b's burst" "rc $rc: $out" "delay $us us, bursts $b0 -> $b1"
fi
# back to back (one exec: no idle gap): the ring is awake after the burst
us2=$(vm a sh -c "echo '4096 110 30000' > $DBG/send && echo '4096 111 30000' > $DBG/send &&
	sed -n 's/^last_us=//p' $DBG/status")
diag "symptom: back-to-back echo: $((${us2:-0} / 1000)) ms"
if [ -n "$us2" ] && [ "$us2" -lt $((period * 200)) ]; then
	ok "back to back the echo is not held: $((us2 / 1000)) ms"
else
	not_ok "back to back the echo is not held" "last_us '$us2'" "a: $(vm a cat $DBG/status | tr '\n' ' ')"
fi
sleep $((idle / 1000 + 2))	# idle again
short=$((period * 2 / 5))
t0=$SECONDS
out=$(apd_send 4096 101 $short)
rc=$?
dt=$((SECONDS - t0))
diag "symptom: a ${short} ms wait after idle: '$out' after ${dt} s"
if [ $rc -ne 0 ] && echo "$out" | grep -qi 'timed out' && [ $dt -le $((short / 1000 + 30)) ]; then
	ok "a wait shorter than the burst period fails with ETIMEDOUT (${dt} s), no hang"
else
	not_ok "a wait shorter than the burst period fails with ETIMEDOUT" "rc $rc: $out" "took $dt s"
fi
if wait_for "[ \"\$(apd_stat a late)\" = 1 ]" $((period / 1000 * 2 + 30)); then
	ok "the late echo arrives with the next burst and is counted (late 1, timeouts $(apd_stat a timeouts))"
else
	not_ok "the late echo arrives with the next burst" "a: $(vm a cat $DBG/stats | tr '\n' ' ')"
fi

# --- cable faults in the middle of a 64 KiB SEND (16 frames) ---
"$VMPAIR" cable fault drop hop=9 dir=a2b nth=8 >/dev/null || bail_out "cannot set the drop fault"
rb0=$(apd_stat b rx_bytes)
out=$(apd_send 65536 200 30000)
rc=$?
rb1=$(apd_stat b rx_bytes)
if [ $rc -ne 0 ] && echo "$out" | grep -qi 'bad message'; then
	ok "frame 8 of 16 dropped a->b: the echo is rejected (EBADMSG), no hang" "$out"
else
	not_ok "frame 8 of 16 dropped a->b: the echo is rejected (EBADMSG)" "rc $rc: $out"
fi
diag "symptom: b received $((rb1 - rb0)) of 65536 bytes as one message: FA57 has no sequence number, the hole is invisible to the receiver"
is "$((rb1 - rb0)) $(apd_stat a mismatch)" "61440 1" "b took the short message whole and echoed it; a's length/pattern check caught it"
"$VMPAIR" cable fault corrupt hop=9 dir=a2b nth=8 >/dev/null || bail_out "cannot set the corrupt fault"
out=$(apd_send 65536 201 $((period * 2 + 5000)))
rc=$?
if [ $rc -ne 0 ] && echo "$out" | grep -qi 'timed out'; then
	ok "frame 8 of 16 arrives broken (CRC error): no echo, ETIMEDOUT" "$out"
else
	not_ok "frame 8 of 16 arrives broken (CRC error): no echo, ETIMEDOUT" "rc $rc: $out"
fi
is "$(apd_stat b bad) $(apd_stat b discarded) $(apd_stat b resyncs)" "1 9 1" \
	"b discarded the message from the broken frame to its EOF 3 and resynced (bad 1, discarded 9, resyncs 1)"
if out=$(apd_send 65536 202 30000); then
	ok "the next SEND of 64 KiB echoes bit-exact"
else
	not_ok "the next SEND of 64 KiB echoes bit-exact" "$out" "b: $(vm b cat $DBG/stats | tr '\n' ' ')"
fi
# the final frame (EOF 3) of a 1 MiB SEND (256 frames) dropped a->b: b
# goes on assembling into the next SEND, which takes the message past
# max_msg (1 MiB): b discards up to that SEND's EOF 3 and resyncs there
bad0=$(apd_stat b bad)
res0=$(apd_stat b resyncs)
recv0=$(apd_stat b received)
"$VMPAIR" cable fault drop hop=9 dir=a2b nth=256 >/dev/null || bail_out "cannot set the drop fault"
out=$(apd_send 1048576 203 $((period * 2 + 5000)))
rc=$?
out2=$(apd_send 8192 204 $((period * 2 + 5000)))
rc2=$?
if [ $rc -ne 0 ] && [ $rc2 -ne 0 ] && echo "$out $out2" | grep -qi 'timed out.*timed out'; then
	ok "EOF 3 of a 1 MiB SEND dropped: no echo for it nor for the next SEND (ETIMEDOUT twice)"
else
	not_ok "EOF 3 of a 1 MiB SEND dropped: no echo for it nor for the next SEND" "rc $rc: $out" "rc $rc2: $out2"
fi
is "$(($(apd_stat b bad) - bad0)) $(($(apd_stat b resyncs) - res0)) $(($(apd_stat b received) - recv0))" "1 1 0" \
	"b: the merged message broke max_msg, discarded, resynced at the next EOF 3 (bad +1, resyncs +1, nothing delivered)"
if out=$(apd_send 4096 205 30000); then
	ok "after the resync the next SEND echoes bit-exact"
else
	not_ok "after the resync the next SEND echoes bit-exact" "$out" "b: $(vm b cat $DBG/stats | tr '\n' ' ')"
fi
"$VMPAIR" cable fault clear >/dev/null

# --- unplug and replug: torn down with the XDomain, back up with it ---
"$VMPAIR" cable unplug >/dev/null || bail_out "cable unplug failed"
if wait_for "[ \"\$(apd_status a state)\" = waiting ] && [ \"\$(apd_status b state)\" = waiting ]" 60; then
	ok "unplug: both paths torn down"
else
	not_ok "unplug: both paths torn down" "a: $(vm a cat $DBG/status)" "b: $(vm b cat $DBG/status)"
fi
"$VMPAIR" cable plug >/dev/null || bail_out "cable plug failed"
if wait_for "[ \"\$(apd_status a state)\" = up ] && [ \"\$(apd_status b state)\" = up ]" 180 &&
	out=$(apd_send 4097 300 30000); then
	ok "replug: both paths up again, a SEND of 4097 B echoes"
else
	not_ok "replug: both paths up again, a SEND of 4097 B echoes" "$out" \
		"a: $(vm a cat $DBG/status)" "b: $(vm b cat $DBG/status)"
fi

# --- teardown ---
check "a: odl_apple_peer unloads" vm a rmmod odl_apple_peer
if wait_for "[ \"\$(apd_status b state)\" = waiting ]" 60; then
	ok "b's path goes down when a stops advertising"
else
	not_ok "b's path goes down when a stops advertising" "$(vm b cat $DBG/status)"
fi
check "b: odl_apple_peer unloads" vm b rmmod odl_apple_peer
for v in a b; do
	out=$( { tb_problems "$v"; apd_problems "$v"; } 2>&1 | sort -u)
	if [ -z "$out" ]; then
		ok "$v: dmesg clean (no odl_apple_peer/thunderbolt error, WARN or oops)"
	else
		not_ok "$v: dmesg clean (no odl_apple_peer/thunderbolt error, WARN or oops)" "$out"
	fi
done
tap_done
