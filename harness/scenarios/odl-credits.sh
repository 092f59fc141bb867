#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-credits: E2E credits lost on the cable, on the quirk-free generic
# profile (no controller bug: the loss is the cable's, `cable fault
# withhold-credits`, docs/link-protocol.md section 6). The cable swallows
# every 2nd CREDIT message for the HopID a's odl_tb5 data travels on
# (b -> a): a's count of b's free descriptors drifts below the truth until
# it reaches 0 while b has nothing left to grant.
# 1. e2e=on: a transfer a -> b larger than two credit windows wedges; a's
#    watchdog counts the wedge (tx_wedges) and, with e2e=on, does not fall
#    back (still hardware E2E).
# 2. e2e=auto: first a's RX ring is held (b posts 7 x 4 MiB to a port
#    on a with no RECV: 4 are staged aside, 3 stay on the ring, and the
#    cable drops the first frame of the 6th, so the ring holds the start
#    of the 5th and 7th and the rest of the 6th after a gap). Then a
#    one-way transfer a -> b (flood/sink) starts on hardware E2E, wedges,
#    a's watchdog falls back to software credits (logged and counted), b
#    follows, and both are on sw-credits afterwards. All is sent and b gets
#    every message intact, in order; one b was receiving when it followed
#    may fail with -ECONNRESET and come again (b takes the fallback for a
#    new peer: docs/uapi.md). The fallback took a's held frames off its
#    ring: the messages among them failed. The 2 whose start was held go
#    to their port's next RECVs (-ECONNRESET), after the 4 staged ones,
#    verified (until 2026-12-01 they vanished without a word); the gap
#    before the 6th's rest is a lost-message event (-EPROTO), as it
#    would be had the frames been taken (until 2026-12-02 it vanished
#    without a word, as a message with no start among the held frames
#    does). Then, the rule still on, a
#    second transfer is verified: software credits travel as odl_tb5
#    frames, not as CREDIT messages.
# 2b. b's odl_tb5 service unbound and bound again (modules loaded): b's
#    new device offers E2E at first (a's service still does), a has
#    fallen back: b follows, and a's TX toward b is on b's software
#    credits whichever LOGIN came first (a connected on b's first terms
#    sets its connection up again when b logs in on other ones); a
#    transfer a -> b verified.
# 3. dmesg clean on both but for the fallback's warning.
# Needs build/driver (make driver), or ODL_BUILD_DRIVER for NAME@KERNEL.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 12
tap_timeout 2400
odl_need_build
pair_up

SYS=/sys/class/odl_tb5/odl_tb5_0
# 48 x 1 MiB: 12288 frames, more than two credit windows (4096 frames)
N=48
mit() { vm "$1" cat $SYS/mitigations 2>&1; }
mit_key() { mit "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
withheld() {
	"$VMPAIR" cable status | python3 -c 'import json, sys
print(json.load(sys.stdin)["faults"]["credits_withheld"])'
}
dropped() {
	"$VMPAIR" cable status | python3 -c 'import json, sys
print(json.load(sys.stdin)["faults"]["dropped"])'
}
FALLBACK_MSG="TX ring wedged with E2E flow control; falling back to software credits"

# load_both PARAMS...: odl_tb5 on both with PARAMS, both logged in, and
# the withhold rule on the HopID a's data takes (b -> a, every 2nd)
load_both() {
	local v hop
	for v in a b; do
		vm $v dmesg -c >/dev/null
		odl_put $v && odl_load $v "$@" || bail_out "cannot load odl_tb5 $* on $v"
	done
	odl_wait_connected a 120 && odl_wait_connected b 120 ||
		bail_out "$*: no odl_tb5 login" "$(vm a /tmp/odl_xfer info 2>&1)" "$(vm b /tmp/odl_xfer info 2>&1)"
	hop=$(odl_data_hop a)
	"$VMPAIR" cable fault clear >/dev/null &&
		"$VMPAIR" cable fault withhold-credits hop=$hop dir=b2a every=2 >/dev/null ||
		bail_out "cable fault withhold-credits hop=$hop failed"
	diag "$*: flow_control $(odl_flow a)/$(odl_flow b), a's data HopID $hop, every 2nd CREDIT b -> a swallowed"
}
# xfer SECS PORT_A PORT_B: N x 1 MiB a -> b (odl_xfer send/recv), the
# sender bounded to SECS; sets XFER_RC, XFER_OUT (both ends' output)
xfer() {
	local secs=$1 pa=$2 pb=$3
	vm b sh -c "rm -f /tmp/rx.$pb; setsid /tmp/odl_xfer recv -p $pb -q $pa -n $N -s 1048576 > /tmp/rx.$pb 2>&1 < /dev/null &"
	wait_for "vm b grep -q ready /tmp/rx.$pb" 30 || bail_out "the receiver on b did not start" "$(vm b cat /tmp/rx.$pb)"
	XFER_OUT=$("$VMPAIR" exec a --timeout "$secs" -- /tmp/odl_xfer send -p "$pa" -q "$pb" -n $N -s 1048576 2>&1)
	XFER_RC=$?
	# the receiver ends (all received, or a failed message) or is stopped
	wait_for "vm b grep -q received /tmp/rx.$pb || ! vm b pidof odl_xfer" 60 >&2
	for v in a b; do vm $v sh -c 'kill $(pidof odl_xfer) 2>/dev/null; true'; done
	wait_for "! vm a pidof odl_xfer && ! vm b pidof odl_xfer" 30 >&2
	XFER_OUT="a: $XFER_OUT
b: $(vm b cat /tmp/rx.$pb)"
}

# --- 1. e2e=on: the credits run out, the TX ring wedges, no fallback ---
load_both e2e=on tx_wedge_ms=3000
c0=$(withheld)
xfer 150 7 9
c1=$(withheld)
diag "e2e=on: transfer exit $XFER_RC; credits withheld $c0 -> $c1; a: $(mit a)"
if [ "$XFER_RC" != 0 ] && ! echo "$XFER_OUT" | grep -q 'all acknowledged' &&
	[ "$c1" -gt "$c0" ] && [ "$(mit_key a tx_wedges)" -ge 1 ] 2>/dev/null; then
	ok "e2e=on: every 2nd credit b -> a lost ($c0 -> $c1 withheld): $N x 1 MiB a -> b wedges, a's watchdog counts it" \
		"$XFER_OUT" "a: $(mit a)"
else
	not_ok "e2e=on: every 2nd credit b -> a lost: $N x 1 MiB a -> b wedges, a's watchdog counts it" \
		"exit $XFER_RC, credits withheld $c0 -> $c1" "$XFER_OUT" "a: $(mit a)" "$("$VMPAIR" cable status)"
fi
if [ "$(mit_key a e2e_fallbacks)/$(mit_key b e2e_fallbacks)" = 0/0 ] &&
	[ "$(odl_flow a)/$(odl_flow b)" = e2e/e2e ] &&
	! vm a sh -c "dmesg | grep -q 'falling back to software credits'"; then
	ok "e2e=on: no fallback (both still on hardware E2E)" "a: $(mit a)" "b: $(mit b)"
else
	not_ok "e2e=on: no fallback (both still on hardware E2E)" "a: $(mit a)" "b: $(mit b)" \
		"flow $(odl_flow a)/$(odl_flow b)"
fi
"$VMPAIR" cable fault clear >/dev/null
for v in a b; do
	odl_unload $v || bail_out "cannot unload odl_tb5 on $v" "$(vm $v sh -c 'dmesg | tail -n 20')"
done

# --- 2. e2e=auto: the wedge falls back to software credits -------------
load_both e2e=auto tx_wedge_ms=3000
check "e2e=auto: both logged in on hardware E2E" [ "$(odl_flow a)/$(odl_flow b)" = e2e/e2e ]
# a's RX ring held at the fallback: port 40 bound on a with no RECV, b
# posts 7 x 4 MiB to it: 4 are staged aside (16 MiB), 3 stay on a's ring
# (rx_stall_ms long enough that none is dropped as stale; 3 x 1033
# frames of 4064 bytes, within the 4096 descriptors); the cable drops the
# first frame of message 5 (numbered from 0): b's frame 5 x 1033 + 1 on
# its data HopID since the rule was set
vm a sh -c 'echo 600000 > /sys/module/odl_tb5/parameters/rx_stall_ms'
vm a sh -c "rm -f /tmp/hold.log /tmp/hold.go; setsid /tmp/odl_xfer hold -p 40 -t 1800 -g /tmp/hold.go -n 6 -s 4194304 > /tmp/hold.log 2>&1 < /dev/null &"
wait_for "vm a grep -q ready /tmp/hold.log" 30 || bail_out "odl_xfer hold did not start on a" "$(vm a cat /tmp/hold.log)"
rs0=$(odl_stat a rx_stalls)
bhop=$(odl_data_hop b)
d0=$(dropped)
"$VMPAIR" cable fault drop hop=$bhop dir=b2a nth=$((5 * 1033 + 1)) >/dev/null ||
	bail_out "cable fault drop hop=$bhop failed"
tf0=$(odl_stat b tx_frames)
post_out=$("$VMPAIR" exec b --timeout 300 -- /tmp/odl_xfer post -p 41 -q 40 -n 7 -s 4194304 2>&1)
post_rc=$?
d1=$(dropped)
diag "b: tx_frames $tf0 -> $(odl_stat b tx_frames) (7 x 1033), the cable dropped $d0 -> $d1"
# every frame of the last 3 on a's ring before the fallback: 3 x 1033 - 1
held() { vm a cat $SYS/rx_held 2>&1; }
desc="e2e=auto: b sent 7 x 4 MiB to a's port 40, which has no RECV, the cable dropped one frame (b's data HopID $bhop): a's RX ring holds the last 3 (3098 frames)"
if [ $post_rc = 0 ] && [ "$d1" = $((d0 + 1)) ] && wait_for "[ \$(odl_stat a rx_stalls) -gt $rs0 ]" 60 >&2 &&
	wait_for '[ "$(held)" = 3098 ]' 120 >&2; then
	ok "$desc" "$post_out" "a: rx_stalls $rs0 -> $(odl_stat a rx_stalls), rx_held $(held)"
else
	not_ok "$desc" "exit $post_rc: $post_out" "dropped $d0 -> $d1, rx_held $(held)" \
		"a: $(vm a /tmp/odl_xfer stats 2>&1)" "$("$VMPAIR" cable status)"
fi
# a -> b one way (a's ring is held, so no acks): flood/sink, which
# account for every report (never twice, never out of order, never wrong)
vm b sh -c "rm -f /tmp/sink.log; setsid /tmp/odl_xfer sink -p 19 -q 17 -n $N -s 1048576 -t 120 > /tmp/sink.log 2>&1 < /dev/null &"
wait_for "vm b grep -q ready /tmp/sink.log" 30 || bail_out "odl_xfer sink did not start on b" "$(vm b cat /tmp/sink.log)"
c0=$(withheld)
flood_out=$("$VMPAIR" exec a --timeout 900 -- /tmp/odl_xfer flood -p 17 -q 19 -n $N -s 1048576 2>&1)
flood_rc=$?
wait_for "vm b grep -q 'sink: $N messages' /tmp/sink.log" 180 >&2
c1=$(withheld)
sink_out=$(vm b cat /tmp/sink.log)
diag "e2e=auto: flood exit $flood_rc; credits withheld $c0 -> $c1"
sink_n() { echo "$sink_out" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }
s_ok=$(sink_n ok) s_failed=$(sink_n failed) s_bad=$(sink_n bad)
desc="e2e=auto: $N x 1 MiB a -> b with every 2nd credit b -> a lost: all sent; b got each intact (a message b was receiving when it followed failed with -ECONNRESET, then came again); nothing wrong"
if [ $flood_rc = 0 ] && [ "$c1" -gt "$c0" ] && [ "${s_bad:-x}" = 0 ] &&
	echo "$sink_out" | grep -q "EPROTO=0 EIO=0 EBADMSG=0 EMSGSIZE=0 " &&
	[ "${s_ok:-0}" -ge $((N - ${s_failed:-0})) ] && [ "$s_ok" -ge $((N - 1)) ] &&
	! echo "$sink_out" | grep -q "bad delivery\|wrong bytes"; then
	ok "$desc" "credits withheld $c0 -> $c1" "a: $flood_out" "b: $sink_out"
else
	not_ok "$desc" "exit $flood_rc, credits withheld $c0 -> $c1" "a: $flood_out" "b: $sink_out" \
		"a: $(vm a sh -c 'dmesg | grep odl_tb5 | tail -n 15')" "b: $(vm b sh -c 'dmesg | grep odl_tb5 | tail -n 15')"
fi
# b follows once a logs in again: wait for both to be connected
odl_wait_connected a 120 && odl_wait_connected b 120
fa=$(odl_flow a) fb=$(odl_flow b)
if vm a sh -c "dmesg | grep -q '$FALLBACK_MSG'" && [ "$(mit_key a e2e_fallbacks)" -ge 1 ] 2>/dev/null &&
	[ "$fa/$fb" = sw-credits/sw-credits ]; then
	ok "e2e=auto: a fell back (logged, counted), both sides on software credits" "a: $(mit a)" "b: $(mit b)"
else
	not_ok "e2e=auto: a fell back (logged, counted), both sides on software credits" \
		"flow $fa/$fb" "a: $(mit a)" "b: $(mit b)" "a: $(vm a sh -c 'dmesg | grep odl_tb5 | tail -n 15')"
fi
# the fallback took a's held frames off its ring: the 2 messages that
# start among them failed, reported to port 40 in their place (the 4
# staged stay): port 40's RECVs get messages 0-3 verified, then
# -ECONNRESET twice (messages 4 and 6); the gap where message 5's start
# was is a lost-message event (-EPROTO, flags MSG_LOST), which came at
# the fallback, before any RECV
vm a touch /tmp/hold.go
wait_for "! vm a pidof odl_xfer" 120 >&2
hold_out=$(vm a cat /tmp/hold.log)
want="event status -71 flags 0x4
recv 0: status 0 length 4194304 verified
recv 1: status 0 length 4194304 verified
recv 2: status 0 length 4194304 verified
recv 3: status 0 length 4194304 verified
recv 4: status -104 length 0
recv 5: status -104 length 0"
desc="e2e=auto: a's port 40 got a lost-message event for the gap among the frames held on the ring at the fallback, its 4 staged messages verified, then the 2 whose start was held as failed (-ECONNRESET)"
if [ "$(echo "$hold_out" | grep '^recv \|^event ')" = "$want" ]; then
	ok "$desc" "$hold_out"
else
	not_ok "$desc" \
		"$hold_out" "$(vm a /tmp/odl_xfer stats 2>&1)"
fi
c0=$(withheld)
xfer 900 27 29
c1=$(withheld)
if [ "$XFER_RC" = 0 ] && echo "$XFER_OUT" | grep -q ' 0 bad'; then
	ok "sw-credits, the rule still on: $N x 1 MiB a -> b verified (credits withheld $c0 -> $c1)" "$XFER_OUT"
else
	not_ok "sw-credits, the rule still on: $N x 1 MiB a -> b verified" "exit $XFER_RC" "$XFER_OUT" \
		"a: $(mit a)" "b: $(mit b)"
fi
"$VMPAIR" cable fault clear >/dev/null

# --- 2b. b's service bound again: b offers E2E, a has fallen back --------
# the module stays loaded on both, so a's service still offers E2E and b's
# new device starts with it; a, fallen back, logs in without: b follows,
# logging in again in its session on other terms. Whichever LOGIN comes
# first, a ends up with its TX on b's software credits (until 2026-12-02 a
# that had connected on b's first LOGIN kept relying on b's E2E)
SVC=/sys/bus/thunderbolt/drivers/odl_tb5
svc=$(vm b sh -c "ls $SVC | grep -- '-' | head -n 1")
# the kernel logs from here on (round 3 reads them whole)
na=$(vm a sh -c 'dmesg | wc -l') nb=$(vm b sh -c 'dmesg | wc -l')
since() { vm "$1" sh -c "dmesg | tail -n +$(($2 + 1)) | grep odl_tb5"; }
vm b sh -c "echo $svc > $SVC/unbind" || bail_out "cannot unbind b's odl_tb5 service $svc"
wait_for "vm a sh -c '/tmp/odl_xfer info | grep -q state=disconnected'" 60 >&2
vm b sh -c "echo $svc > $SVC/bind" || bail_out "cannot bind b's odl_tb5 service $svc again"
odl_wait_connected a 120 && odl_wait_connected b 120 ||
	bail_out "no login after b's service was bound again" "$(vm a /tmp/odl_xfer info 2>&1)" "$(vm b /tmp/odl_xfer info 2>&1)"
ca=$(since a $na | grep 'connected: ' | tail -n 1) cb=$(since b $nb | grep 'connected: ' | tail -n 1)
fa=$(odl_flow a) fb=$(odl_flow b)
diag "a: $(since a $na | grep -E 'disconnected|changed')"
desc="b's service bound again (offering E2E at first): b followed a, both on software credits, a's TX toward b on them"
if since b $nb | grep -q "peer uses software credits: RX ring without E2E" &&
	[ "$fa/$fb" = sw-credits/sw-credits ] &&
	printf '%s\n' "$ca" | grep -q 'E2E off, TX flow control software credits$' &&
	printf '%s\n' "$cb" | grep -q 'E2E off, TX flow control software credits$'; then
	ok "$desc" "a: $ca" "b: $cb"
else
	not_ok "$desc" "flow $fa/$fb" "a: $(since a $na)" "b: $(since b $nb)"
fi
N=16 xfer 300 37 39
if [ "$XFER_RC" = 0 ] && echo "$XFER_OUT" | grep -q ' 0 bad'; then
	ok "after b's service was bound again: 16 x 1 MiB a -> b verified" "$XFER_OUT"
else
	not_ok "after b's service was bound again: 16 x 1 MiB a -> b verified" "exit $XFER_RC" "$XFER_OUT" \
		"a: $(mit a)" "b: $(mit b)"
fi

# --- 3. nothing else went wrong -----------------------------------------
for v in a b; do
	out=$(odl_dmesg_problems $v | grep -vF "$FALLBACK_MSG")
	if [ -z "$out" ]; then
		ok "$v: dmesg clean but for the fallback's warning"
	else
		not_ok "$v: dmesg clean but for the fallback's warning" "$out"
	fi
done
tap_done
