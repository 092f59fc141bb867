#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-data: messages of many sizes (1 byte .. 16 MiB, frame boundaries
# around 4064 bytes of payload) both ways through /dev/odl_tb5_0, every
# byte verified by the receiver, every message acknowledged; counters show
# no sequence, length or descriptor errors and no drops. Empty messages
# (ABI 1.9) arrive in order among the others, also held back. Keyed delivery
# (ABI 1.4): messages land in the RECV posted with their key, whatever the
# order of posting and sending, one arriving before its RECV waits without
# holding up the rest, unkeyed ones in between stay in order; from the
# mmap'd buffers and between pinned user memory (MEM_REG) on both ends.
# Urgent messages (ABI 1.5) go out ahead of queued ones that have not
# started, and only with the flag. Messages for a port nobody holds are
# counted in no_port (ABI 1.6), not in drops. A message for a bound port
# with no RECV, once 16 MiB wait there, holds the RX ring for rx_stall_ms,
# however often another port posts RECVs meanwhile, then the oldest held
# back message gives way; a held back message older than rx_stall_ms gives
# way at once to a new one; where dropping the stale ones would not make
# room, none is dropped; then data moves again. A keyed message whose
# RECV was withdrawn is discarded on arrival (ABI 1.7), not held back. An
# event that finds its file's completion queue full is counted
# (events_lost) and reported where the loss happened (ABI 1.8: one
# EVENTS_LOST entry after the completions queued before the first loss,
# before those queued after it), and the library reports it as a lost
# message. The counters read through
# GET_STATS are the same in sysfs (statistics/, a file each) and in
# `odl_tb5_cli --list --json`; a reset takes away only the counters the
# caller's struct holds.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 24
tap_timeout 1200
odl_need_build
pair_up
for v in a b; do
	odl_put $v && odl_load $v || bail_out "cannot load odl_tb5 on $v"
done
odl_wait_connected a 90 && odl_wait_connected b 90 || bail_out "no login"
SIZES=1,2,100,4063,4064,4065,8128,8129,65536,100000,1048576,4194304
check "a -> b: 48 messages, sizes 1 B .. 4 MiB, verified" \
	odl_xfer_run a b 1 2 48 $SIZES
check "b -> a: 48 messages, sizes 1 B .. 4 MiB, verified" \
	odl_xfer_run b a 3 4 48 $SIZES
check "a -> b: 4 x 16 MiB (max_msg_size), verified" \
	odl_xfer_run a b 5 6 4 16777216
# ABI 1.9: empty messages (a frame of the header alone), in order among
# others; beyond the 2 RECVs posted ahead they are held back and taken
# from there
check "b -> a: 24 messages, 12 of them empty (ABI 1.9), in order, verified" \
	odl_xfer_run b a 7 8 24 0,1,0,0,4064,0,65536,0,0,4065,0,1048576
check "a -> b: 40 keyed messages out of posting order, 2 unkeyed between, verified" \
	odl_keyed_run a b 21 22 40 1,4064,4065,65536,300000
check "b -> a: keyed, pinned user memory on both ends, verified" \
	odl_keyed_run b a 23 24 24 100,8129,1048576 -U
check "a -> b: urgent messages overtake the queued ones that had not started, verified" \
	odl_urgent_run a b 31 32
check "a -> b: the same messages without the urgent flag arrive in the order sent" \
	odl_urgent_run a b 33 34 -N
# two pairs of ports at once: opens do not steal each other's messages
vm b sh -c "setsid /tmp/odl_xfer recv -p 11 -q 10 -n 40 -s 70000 > /tmp/rx.p11 2>&1 < /dev/null &"
vm b sh -c "setsid /tmp/odl_xfer recv -p 13 -q 12 -n 40 -s 5000 > /tmp/rx.p13 2>&1 < /dev/null &"
wait_for "vm b grep -q ready /tmp/rx.p11 && vm b grep -q ready /tmp/rx.p13" 30
vm a sh -c "setsid /tmp/odl_xfer send -p 10 -q 11 -n 40 -s 70000 > /tmp/tx.p10 2>&1 < /dev/null &"
vm a /tmp/odl_xfer send -p 12 -q 13 -n 40 -s 5000 >/dev/null 2>&1
wait_for "vm b grep -q received /tmp/rx.p11 && vm b grep -q received /tmp/rx.p13" 120
check "two concurrent opens on separate ports, both verified" \
	vm b sh -c 'grep -q " 0 bad" /tmp/rx.p11 && grep -q " 0 bad" /tmp/rx.p13'
# messages for a port nobody holds on b: dropped there, counted in no_port
# (ABI 1.6), not in drops (which counts messages lost for want of room)
np0=$(odl_stat b no_port) dr0=$(odl_stat b drops)
out=$(vm a /tmp/odl_xfer post -p 40 -q 250 -n 3 -s 5000,1,70000 2>&1)
if wait_for "[ \"\$(odl_stat b no_port)\" = $((np0 + 3)) ]" 60 >&2 && [ "$(odl_stat b drops)" = "$dr0" ]; then
	ok "a -> b port 250 (nobody bound): 3 messages counted in b's no_port, not in drops" "$out"
else
	not_ok "a -> b port 250 (nobody bound): 3 messages counted in b's no_port, not in drops" \
		"$out" "before: no_port=$np0 drops=$dr0" "after: $(vm b /tmp/odl_xfer stats 2>&1)"
fi
# a bound port with no RECV: b's driver holds back 4 x 4 MiB for it (its
# 16 MiB), the fifth message holds the RX ring for rx_stall_ms (3 s here)
# while another port of b posts (and cancels) a RECV every 200 ms, then
# the oldest held back message (older than rx_stall_ms by then) is dropped
# to make room for it. Each post wakes the held frames; the wait used to
# start again on every wake, so the ring stayed held as long as posts came
# more often than rx_stall_ms: now one stall, one drop
stall_ms=$(vm b cat /sys/module/odl_tb5/parameters/rx_stall_ms)
vm b sh -c 'echo 3000 > /sys/module/odl_tb5/parameters/rx_stall_ms'
dr0=$(odl_stat b drops) rs0=$(odl_stat b rx_stalls)
vm b sh -c "setsid /tmp/odl_xfer hold -p 60 -t 300 > /tmp/hold.log 2>&1 < /dev/null &"
vm b sh -c "setsid /tmp/odl_xfer kick -p 61 -t 300 > /tmp/kick.log 2>&1 < /dev/null &"
wait_for "vm b grep -q ready /tmp/hold.log && vm b grep -q ready /tmp/kick.log" 30
vm a sh -c "setsid /tmp/odl_xfer post -p 62 -q 60 -n 5 -s 4194304 > /tmp/post.log 2>&1 < /dev/null &"
desc="b: 4 x 4 MiB held back for a port with no RECV, the 5th held the ring for rx_stall_ms while port 61 kept posting, then the oldest gave way (one stall, one drop)"
if wait_for "[ \"\$(odl_stat b drops)\" = $((dr0 + 1)) ]" 120 >&2 &&
	wait_for "vm a grep -q 'posted 5' /tmp/post.log" 60 >&2 &&
	[ "$(odl_stat b rx_stalls)" = $((rs0 + 1)) ] && ! vm b grep -q kicked /tmp/kick.log; then
	ok "$desc" "$(vm a cat /tmp/post.log)" "$(vm b /tmp/odl_xfer stats)"
else
	not_ok "$desc" "before: drops=$dr0 rx_stalls=$rs0" "after: $(vm b /tmp/odl_xfer stats 2>&1)" \
		"a: $(vm a cat /tmp/post.log 2>&1)" "kick: $(vm b cat /tmp/kick.log 2>&1)" \
		"$(vm b dmesg | tail -n 20)"
fi
# the room is still full, with messages held back longer than rx_stall_ms:
# a message for another port with no RECV takes the oldest one's room at
# once instead of holding the ring (it used to hold it for rx_stall_ms and
# then be dropped itself)
dr1=$(odl_stat b drops) rs1=$(odl_stat b rx_stalls)
vm b sh -c "setsid /tmp/odl_xfer hold -p 65 -t 300 > /tmp/hold65.log 2>&1 < /dev/null &"
wait_for "vm b grep -q ready /tmp/hold65.log" 30
out=$("$VMPAIR" exec a --timeout 120 -- /tmp/odl_xfer post -p 67 -q 65 -n 1 -s 4194304 2>&1)
desc="b: a message for another port with no RECV took the room of one held back longer than rx_stall_ms (no stall, one drop)"
if wait_for "[ \"\$(odl_stat b drops)\" = $((dr1 + 1)) ]" 60 >&2 && [ "$(odl_stat b rx_stalls)" = "$rs1" ]; then
	ok "$desc" "$out" "$(vm b /tmp/odl_xfer stats)"
else
	not_ok "$desc" "before: drops=$dr1 rx_stalls=$rs1" "after: $(vm b /tmp/odl_xfer stats 2>&1)" "a: $out"
fi
vm b sh -c 'kill $(pidof odl_xfer) 2>/dev/null'
wait_for "! vm b pidof odl_xfer" 30
# a lost event (ABI 1.8): b's port has its completion queue full (1024
# withdrawn RECVs, not fetched) and no RECV; a sends it 5 x 4 MiB: 4 are
# held back, the 5th holds the ring for rx_stall_ms, the oldest is dropped
# and its lost-message event finds no slot. b counts it (events_lost) and
# reports it where it was lost: after the 1024 completions (overflow: the
# fetch that takes them has no room for it, the next gets it alone), or
# between completions queued before and after (overflow-mid)
overflow_check() {
	local mode=$1 pb=$2 pa=$3 desc=$4 el0
	el0=$(odl_stat b events_lost)
	vm b sh -c "setsid sh -c '/tmp/odl_xfer $mode -p $pb -t 120; echo rc=\$?' > /tmp/$mode.log 2>&1 < /dev/null &"
	wait_for "vm b grep -q ready /tmp/$mode.log" 60
	vm a sh -c "setsid /tmp/odl_xfer post -p $pa -q $pb -n 5 -s 4194304 > /tmp/post$pa.log 2>&1 < /dev/null &"
	if wait_for "vm b grep -q rc= /tmp/$mode.log" 180 >&2 && vm b grep -q rc=0 /tmp/$mode.log &&
		[ "$(odl_stat b events_lost)" = $((el0 + 1)) ] && wait_for "vm a grep -q 'posted 5' /tmp/post$pa.log" 60 >&2; then
		ok "$desc" "$(vm b cat /tmp/$mode.log)" "a: $(vm a cat /tmp/post$pa.log)"
	else
		not_ok "$desc" "b: $(vm b cat /tmp/$mode.log 2>&1)" "events_lost before $el0, after: $(vm b /tmp/odl_xfer stats 2>&1)" \
			"a: $(vm a cat /tmp/post$pa.log 2>&1)" "$(vm b dmesg | tail -n 20)"
	fi
}
overflow_check overflow 68 69 \
	"b: a lost-message event with the completion queue full is counted (events_lost) and reported after the 1024 queued completions (one EVENTS_LOST entry, -EOVERFLOW; pending: POLLIN)"
overflow_check overflow-mid 70 71 \
	"b: the EVENTS_LOST report sits where the event was lost, between the completions queued before and after it"
# the library's side of it (odl_libvm eventslost): b's handle has the
# driver's queue filled under it (its own calls cannot: it fetches as it
# goes), a sends it 5 x 4 MiB as above; the library must report one lost
# message (-EBADMSG), skip the completions it did not post, stay
# connected, and then receive the 4 messages held back
el0=$(odl_stat b events_lost)
odl_libvm_start b /tmp/el.log --port 72 eventslost 4194304
wait_for "vm b grep -qE 'ready|odl_libvm exit' /tmp/el.log" 60
vm a sh -c "setsid /tmp/odl_xfer post -p 73 -q 72 -n 5 -s 4194304 > /tmp/post73.log 2>&1 < /dev/null &"
desc="b: the library reports the driver's EVENTS_LOST as one lost message (-EBADMSG), stays connected, then receives the messages held back"
if wait_for "vm b grep -q 'odl_libvm exit' /tmp/el.log" 240 >&2 && vm b grep -q 'odl_libvm exit 0' /tmp/el.log &&
	[ "$(odl_stat b events_lost)" = $((el0 + 1)) ]; then
	ok "$desc" "$(vm b cat /tmp/el.log)" "a: $(vm a cat /tmp/post73.log)"
else
	not_ok "$desc" "b: $(vm b cat /tmp/el.log 2>&1)" "events_lost before $el0, after: $(vm b /tmp/odl_xfer stats 2>&1)" \
		"a: $(vm a cat /tmp/post73.log 2>&1)" "$(vm b dmesg | tail -n 20)"
fi
# no room, and dropping the stale held back messages would not make it:
# none of them is dropped (a driver that dropped them for nothing loses
# the first message here). With rx_stall_ms 10 s on b, a sends 1 MiB,
# waits 12 s, then 14 MiB and 4 MiB, all keyed, for a port of b with no
# RECV: the last one holds the RX ring until b, seeing that stall, posts
# the three RECVs (within 10 s, else the 14 MiB one is stale too and both
# go to make room)
vm b sh -c 'echo 10000 > /sys/module/odl_tb5/parameters/rx_stall_ms'
dr0=$(odl_stat b drops)
vm b sh -c "setsid sh -c '/tmp/odl_xfer stallrecv -p 75 -s 1048576,14680064,4194304; echo rc=\$?' > /tmp/stall.log 2>&1 < /dev/null &"
wait_for "vm b grep -q ready /tmp/stall.log" 30
out=$("$VMPAIR" exec a --timeout 180 -- /tmp/odl_xfer stallsend -p 76 -q 75 -t 12 -s 1048576,14680064,4194304 2>&1)
desc="b: no room even with the stale held back message dropped: none dropped, the new one held the ring, RECVs posted then got all three intact"
if wait_for "vm b grep -q rc= /tmp/stall.log" 120 >&2 && vm b grep -q rc=0 /tmp/stall.log &&
	[ "$(odl_stat b drops)" = "$dr0" ]; then
	ok "$desc" "$(vm b cat /tmp/stall.log)" "a: $out"
else
	not_ok "$desc" "before: drops=$dr0" "after: $(vm b /tmp/odl_xfer stats 2>&1)" \
		"b: $(vm b cat /tmp/stall.log 2>&1)" "a: $out" "$(vm b dmesg | tail -n 20)"
fi
vm b sh -c "echo $stall_ms > /sys/module/odl_tb5/parameters/rx_stall_ms"
check "a -> b after the held port closed: 8 messages, verified" \
	odl_xfer_run a b 63 64 8 1,65536,4194304
# withdrawn keyed RECVs (ABI 1.7): b posts RECVs for 9 keys and withdraws
# them (CANCEL), posts the last key again; a sends 9 x 4 MiB with those
# keys, then an unkeyed message. b's driver discards the 8 withdrawn keys'
# messages on arrival (rx_cancelled): held back instead, 32 MiB for a port
# with no RECV posted would fill the room, hold the RX ring (rx_stalls) and
# after rx_stall_ms be dropped (drops, and a lost-message event each)
dr0=$(odl_stat b drops) rs0=$(odl_stat b rx_stalls) rc0=$(odl_stat b rx_cancelled)
vm b sh -c "setsid sh -c '/tmp/odl_xfer kcrecv -p 70 -n 8 -s 4194304; echo rc=\$?' > /tmp/kc.log 2>&1 < /dev/null &"
wait_for "vm b grep -q ready /tmp/kc.log" 30
out=$("$VMPAIR" exec a --timeout 120 -- /tmp/odl_xfer kcsend -p 71 -q 70 -n 8 -s 4194304 2>&1)
desc="b: 8 x 4 MiB for withdrawn keyed RECVs discarded on arrival (rx_cancelled, no stall, no drop); the key posted again and an unkeyed message delivered"
if wait_for "vm b grep -q rc= /tmp/kc.log" 120 >&2 && vm b grep -q rc=0 /tmp/kc.log &&
	[ "$(odl_stat b rx_cancelled)" = $((rc0 + 8)) ] && [ "$(odl_stat b drops)" = "$dr0" ] &&
	[ "$(odl_stat b rx_stalls)" = "$rs0" ]; then
	ok "$desc" "$(vm b cat /tmp/kc.log)" "a: $out"
else
	not_ok "$desc" "before: drops=$dr0 rx_stalls=$rs0 rx_cancelled=$rc0" \
		"after: $(vm b /tmp/odl_xfer stats 2>&1)" "b: $(vm b cat /tmp/kc.log 2>&1)" "a: $out" \
		"$(vm b dmesg | tail -n 20)"
fi
# GET_STATS (odl_xfer stats), sysfs statistics/ and the CLI's --list: the
# same values, read while the link is quiet (two GET_STATS around the other
# two must agree, else read again)
stats_three_ways() {
	local v=$1
	vm "$v" /tmp/odl_xfer stats >"$VMPAIR_STATE/st1-$v" &&
		vm "$v" sh -c 'for f in /sys/class/odl_tb5/odl_tb5_0/statistics/*; do echo "${f##*/}=$(cat "$f")"; done' \
			>"$VMPAIR_STATE/sysfs-$v" &&
		vm "$v" /tmp/odl_tb5_cli --list --json >"$VMPAIR_STATE/cli-$v" &&
		vm "$v" /tmp/odl_xfer stats >"$VMPAIR_STATE/st2-$v" &&
		python3 - "$VMPAIR_STATE" "$v" <<'PYEOF'
import json, sys
d, v = sys.argv[1], sys.argv[2]
kv = lambda f: dict(x.split("=", 1) for x in open("%s/%s-%s" % (d, f, v)).read().split())
a, b = kv("st1"), kv("st2")
sysfs = {k: int(x) for k, x in kv("sysfs").items()}
cli = json.load(open("%s/cli-%s" % (d, v)))["devices"][0]["statistics"]
assert a == b, "the counters moved while being read"
assert len(sysfs) == 24 and cli == sysfs, (sysfs, cli)
bad = [k for k in a if sysfs.get(k) != int(a[k])]
assert not bad, "sysfs differs from GET_STATS in %s: %s / %s" % (bad, sysfs, a)
assert int(a["tx_msgs"]) > 0 and int(a["rx_msgs"]) > 0, a
print("%d counters, %d of them in GET_STATS: equal (tx_msgs %s, rx_msgs %s)" % (len(sysfs), len(a), a["tx_msgs"], a["rx_msgs"]))
PYEOF
}
for v in a b; do
	if wait_for "stats_three_ways $v" 60; then
		ok "$v: the counters in sysfs (statistics/) and odl_tb5_cli --list --json equal GET_STATS" "$(stats_three_ways $v 2>&1)"
	else
		not_ok "$v: the counters in sysfs (statistics/) and odl_tb5_cli --list --json equal GET_STATS" \
			"$(stats_three_ways $v 2>&1)" "$(cat "$VMPAIR_STATE/sysfs-$v")"
	fi
done
ODL_EXPECT_DROPS=5 odl_check_rx_stats "b: no seq/len/descriptor errors, no drops but the five messages held back too long" b
# a stats reset takes away only what the caller's struct holds: one built
# for ABI 1.0 (168 bytes, up to no_port) resets drops but not rx_cancelled
# (1.7); a full-size reset then takes rx_cancelled too. (That a reset keeps
# the sysfs-only credit_frames is odl-swcredit's check.)
st=/sys/class/odl_tb5/odl_tb5_0/statistics
sysfs_stats() { vm b sh -c "echo \$(cat $st/drops $st/rx_cancelled)"; }
s0=$(sysfs_stats)
out=$(vm b /tmp/odl_xfer stats-reset-v0 2>&1)
s1=$(sysfs_stats)
out2=$(vm b /tmp/odl_xfer stats-reset 2>&1)
s2=$(sysfs_stats)
set -- $s0 $s1 $s2
desc="b: a stats reset with ABI 1.0's struct zeroes drops and keeps rx_cancelled (1.7); a full one zeroes rx_cancelled"
if [ $# = 6 ] && [ "$1" -ge 2 ] && [ "$2" -ge 8 ] && [ "$3" = 0 ] && [ "$4" = "$2" ] &&
	[ "$5" = 0 ] && [ "$6" = 0 ]; then
	ok "$desc" "drops rx_cancelled: $s0 / $s1 / $s2"
else
	not_ok "$desc" "drops rx_cancelled: before $s0, after the 1.0 reset $s1, after the full one $s2" \
		"$out" "$out2"
fi
odl_check_clean
tap_done
