#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-mitigate: the driver's mitigations on amd-strix-halo with
# thunderbolt-net up (its one E2E RX ring on each NHI; docs/profiles.md).
# 1. odl_tb5 e2e=on (a second E2E RX ring, no fallback): a transfer a -> b
#    larger than one credit window wedges a's TX ring silently (the model
#    counts e2e_wedged), the driver keeps hardware E2E.
# 2. odl_tb5 e2e=auto: the same transfer starts on hardware E2E, the TX
#    watchdog sees descriptors posted and not consumed, logs "TX ring wedged
#    with E2E flow control; falling back to software credits", both sides
#    rebuild their rings without E2E and log in again, the queued messages
#    go out again and all data arrives verified (flow_control sw-credits).
#    Each side's reallocation fails once (module parameter
#    test_realloc_fail=1): the side keeps the peer's login and its queued
#    sends, allocates the rings again before it logs in again, and the
#    transfer is not affected.
# 3. The model drops every 3rd RX completion interrupt on both hosts:
#    transfers still complete verified (a later interrupt, or the
#    completion poll, picks the completions up; model irq_dropped).
# 4. The model drops every RX completion interrupt on both hosts: only the
#    completion poll can see the frames; a transfer still completes
#    verified and the recoveries are counted (mitigations irq_recoveries).
#    (With every 3rd lost, whether any completion waits long enough for
#    the poll depends on timing, so the poll is proven here.)
# 5. e2e=auto again, each side's ring allocation failing twice (test hook
#    test_realloc_fail=2: the reallocation and the login work's first
#    retry): the side that fell back gives its resume up, its queued sends
#    fail with -ECONNRESET and its files get LINK_DOWN (so the transfer
#    under way fails); both sides go on trying, allocate the rings, log in
#    again, and a new transfer is all verified.
# Needs build/driver (make driver), or ODL_BUILD_DRIVER for NAME@KERNEL.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 16
tap_timeout 2400
odl_need_build
odl_strix_tbnet_pair

SYS=/sys/class/odl_tb5/odl_tb5_0
# 40 x 1 MiB: far more frames than one E2E credit window (4096 frames)
N=40
SIZES=1048576
mit() { vm "$1" cat $SYS/mitigations 2>&1; }
mit_key() { mit "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# start_rx: the receiver of N x SIZES on b, port 9 from a's port 7, in the
# background (its PID in /tmp/rx.pid, its output in /tmp/rx.9)
start_rx() {
	vm b sh -c "rm -f /tmp/rx.9; setsid /tmp/odl_xfer recv -p 9 -q 7 -n $N -s $SIZES > /tmp/rx.9 2>&1 < /dev/null & echo \$! > /tmp/rx.pid"
}
# xfer_bounded SECS: odl_xfer a -> b (ports 7 -> 9), the receiver from
# start_rx once it is ready; sets XFER_RC and XFER_OUT
xfer_bounded() {
	local secs=$1
	start_rx || return 1
	wait_for "vm b grep -q ready /tmp/rx.9" 30 || return 1
	XFER_OUT=$("$VMPAIR" exec a --timeout "$secs" -- /tmp/odl_xfer send -p 7 -q 9 -n $N -s $SIZES 2>&1)
	XFER_RC=$?
	wait_for "vm b grep -q received /tmp/rx.9" 30
	XFER_OUT="$XFER_OUT
b: $(vm b cat /tmp/rx.9)"
}
stop_rx() { vm b sh -c 'kill $(cat /tmp/rx.pid) 2>/dev/null; true'; }
# the side whose TX ring carries traffic when the credits run out wedges:
# a (data) or b (its acks); the model counts wedges per NHI
wedged() { echo $(( $(nhi_stats a e2e_wedged) + $(nhi_stats b e2e_wedged) )); }

# --- 1. e2e=on: hardware E2E, no fallback: the TX ring wedges ----------
for v in a b; do
	odl_put $v && odl_load $v e2e=on tx_wedge_ms=3000 || bail_out "cannot load odl_tb5 e2e=on on $v"
done
if odl_wait_connected a 120 && odl_wait_connected b 120; then
	ok "e2e=on: odl_tb5 logged in alongside thunderbolt-net (flow_control $(odl_flow a)/$(odl_flow b))"
else
	bail_out "e2e=on: no odl_tb5 login" "$(vm a /tmp/odl_xfer info 2>&1)" "$(vm b /tmp/odl_xfer info 2>&1)"
fi
w0=$(wedged)
xfer_bounded 150
stop_rx
w1=$(wedged)
diag "e2e=on: transfer exit $XFER_RC; model e2e_wedged a+b $w0 -> $w1; a: $(mit a); b: $(mit b)"
if [ "$XFER_RC" != 0 ] && ! echo "$XFER_OUT" | grep -q 'all acknowledged' &&
	[ "${w1:-0}" -gt "${w0:-0}" ] 2>/dev/null; then
	ok "e2e=on: the $N x 1 MiB transfer a -> b wedges (model e2e_wedged a+b $w0 -> $w1)" "$XFER_OUT"
else
	not_ok "e2e=on: the $N x 1 MiB transfer a -> b wedges (model e2e_wedged a+b $w0 -> $w1)" \
		"exit $XFER_RC" "$XFER_OUT" "$(nhi_stats a)" "$(nhi_stats b)"
fi
if [ "$(mit_key a e2e_fallbacks)" = 0 ] && [ "$(odl_flow a)" = e2e ] &&
	! vm a sh -c 'dmesg | grep -q "falling back to software credits"'; then
	ok "e2e=on: no fallback (still hardware E2E; the watchdog saw it: tx_wedges $(mit_key a tx_wedges))" "$(mit a)"
else
	not_ok "e2e=on: no fallback (still hardware E2E)" "$(mit a)" "$(odl_flow a)"
fi
for v in a b; do
	vm $v rmmod odl_tb5 || bail_out "cannot unload odl_tb5 on $v" "$(vm $v sh -c 'dmesg | tail -n 20')"
done

# --- 2. e2e=auto: the watchdog falls back to software credits ----------
w0=$(wedged)
# each side's first ring reallocation fails (test hook, as if memory had
# run out); each reallocates once, whichever falls back first (the other
# follows), so both ways of failing are taken
for v in a b; do
	vm $v dmesg -c >/dev/null
	odl_load $v e2e=auto tx_wedge_ms=3000 test_realloc_fail=1 || bail_out "cannot load odl_tb5 e2e=auto on $v"
done
if odl_wait_connected a 120 && odl_wait_connected b 120; then
	ok "e2e=auto: odl_tb5 logged in (flow_control $(odl_flow a)/$(odl_flow b))"
else
	bail_out "e2e=auto: no odl_tb5 login" "$(vm a /tmp/odl_xfer info 2>&1)" "$(vm b /tmp/odl_xfer info 2>&1)"
fi
xfer_bounded 900
w1=$(wedged)
if [ "$XFER_RC" = 0 ] && echo "$XFER_OUT" | grep -q ' 0 bad'; then
	ok "e2e=auto: $N x 1 MiB a -> b all verified and acknowledged" "$XFER_OUT"
else
	stop_rx
	not_ok "e2e=auto: $N x 1 MiB a -> b all verified and acknowledged" "exit $XFER_RC" "$XFER_OUT" \
		"a: $(vm a sh -c 'dmesg | grep odl_tb5 | tail -n 15')" "b: $(vm b sh -c 'dmesg | grep odl_tb5 | tail -n 15')"
fi
line=$(vm a sh -c 'dmesg | grep "TX ring wedged with E2E flow control; falling back to software credits"'; \
	vm b sh -c 'dmesg | grep "TX ring wedged with E2E flow control; falling back to software credits"')
if [ -n "$line" ] && [ "${w1:-0}" -gt "${w0:-0}" ] 2>/dev/null; then
	ok "e2e=auto: a TX ring wedged (model e2e_wedged a+b $w0 -> $w1) and the driver logged the fallback" "$line"
else
	not_ok "e2e=auto: a TX ring wedged (model e2e_wedged a+b $w0 -> $w1) and the driver logged the fallback" \
		"a: $(vm a sh -c 'dmesg | grep odl_tb5')" "b: $(vm b sh -c 'dmesg | grep odl_tb5')"
fi
fa=$(odl_flow a) fb=$(odl_flow b)
if [ "$fa/$fb" = sw-credits/sw-credits ] &&
	[ $(( $(mit_key a e2e_fallbacks) + $(mit_key b e2e_fallbacks) )) -ge 1 ]; then
	ok "e2e=auto: both sides report software credits, the fallback is counted" "a: $(mit a)" "b: $(mit b)"
else
	not_ok "e2e=auto: both sides report software credits, the fallback is counted" \
		"flow $fa/$fb" "a: $(mit a)" "b: $(mit b)"
fi
realloc_log() { vm "$1" sh -c 'dmesg | grep -E "odl_tb5.*(cannot allocate rings|rings allocated again)"'; }
realloc_ok() {
	realloc_log "$1" | grep -q 'cannot allocate rings: -12; trying again' &&
		realloc_log "$1" | grep -q 'rings allocated again' &&
		[ "$(vm "$1" cat /sys/module/odl_tb5/parameters/test_realloc_fail)" = 0 ]
}
desc="e2e=auto: on both sides the one ring reallocation (falling back, or following the peer) failed (test hook) and the rings came back before the next login; the transfer above was not affected"
if realloc_ok a && realloc_ok b; then
	ok "$desc" "a: $(realloc_log a)" "b: $(realloc_log b)" \
		"following the peer: $(for v in a b; do vm $v sh -c 'dmesg | grep -q "peer uses software credits"' && echo $v; done)"
else
	not_ok "$desc" "a: $(realloc_log a)" "b: $(realloc_log b)" \
		"test_realloc_fail a: $(vm a cat /sys/module/odl_tb5/parameters/test_realloc_fail 2>&1) b: $(vm b cat /sys/module/odl_tb5/parameters/test_realloc_fail 2>&1)" \
		"a: $(vm a sh -c 'dmesg | grep odl_tb5 | tail -n 20')" "b: $(vm b sh -c 'dmesg | grep odl_tb5 | tail -n 20')"
fi

# --- 3. lost completion interrupts: recovered by the completion poll ---
ra=$(vm a sh -c 'dmesg | sed -n "s/.*odl_tb5.*connected: .*RX HopID [0-9]* ring \([0-9]*\),.*/\1/p" | tail -n 1')
rb=$(vm b sh -c 'dmesg | sed -n "s/.*odl_tb5.*connected: .*RX HopID [0-9]* ring \([0-9]*\),.*/\1/p" | tail -n 1')
diag "odl_tb5 RX rings: a $ra, b $rb"
irq_dropped() { echo $(( $(nhi_stats a irq_dropped) + $(nhi_stats b irq_dropped) )); }
irq_recovered() { echo $(( $(mit_key a irq_recoveries) + $(mit_key b irq_recoveries) )); }
# lost_irq_phase EVERY WHAT: drop every EVERY-th RX completion interrupt of
# odl_tb5's RX ring on both hosts while N messages go a -> b; sets D0/D1
# (model irq_dropped) and R0/R1 (irq_recoveries) before and after
lost_irq_phase() {
	local every=$1 what=$2
	D0=$(irq_dropped) R0=$(irq_recovered)
	nhi_fault a "drop-irq rx=${ra:-2} every=$every" && nhi_fault b "drop-irq rx=${rb:-2} every=$every" ||
		bail_out "cannot set the drop-irq faults"
	xfer_bounded 900
	nhi_fault a clear
	nhi_fault b clear
	D1=$(irq_dropped) R1=$(irq_recovered)
	if [ "$XFER_RC" = 0 ] && echo "$XFER_OUT" | grep -q ' 0 bad'; then
		ok "$what lost: $N messages a -> b verified and acknowledged" "$XFER_OUT"
	else
		stop_rx
		not_ok "$what lost: $N messages a -> b verified and acknowledged" \
			"exit $XFER_RC" "$XFER_OUT" "a: $(mit a)" "b: $(mit b)"
	fi
}
N=24 SIZES=4096,65536,262144
lost_irq_phase 3 "every 3rd RX completion interrupt"
check "the model dropped RX completion interrupts ($D0 -> $D1)" [ "$D1" -gt "$D0" ]

# --- 4. every RX completion interrupt lost: only the poll sees frames ---
N=6
lost_irq_phase 1 "every RX completion interrupt"
if [ "$D1" -gt "$D0" ] && [ "$R1" -gt "$R0" ]; then
	ok "the model dropped interrupts ($D0 -> $D1) and the poll recovered them (irq_recoveries $R0 -> $R1)" \
		"a: $(mit a)" "b: $(mit b)"
else
	not_ok "the model dropped interrupts ($D0 -> $D1) and the poll recovered them (irq_recoveries $R0 -> $R1)" \
		"a: $(mit a)" "b: $(mit b)" "$(nhi_stats a)" "$(nhi_stats b)"
fi

# --- 5. the allocation fails again: the fallback's resume is given up ---
# Both unload before either loads: a new a that logged in to the old b
# (software credits since phase 2) would follow it and spend its two
# failures there, and then fall back with none left (seen once in a full
# local run: the check below failed, a's two failures logged at its first
# login, before b was reloaded)
for v in a b; do
	odl_unload $v || bail_out "cannot unload odl_tb5 on $v" "$(vm $v sh -c 'dmesg | tail -n 20')"
done
for v in a b; do
	vm $v dmesg -c >/dev/null
	odl_load $v e2e=auto tx_wedge_ms=3000 test_realloc_fail=2 || bail_out "cannot load odl_tb5 test_realloc_fail=2 on $v"
done
odl_wait_connected a 120 && odl_wait_connected b 120 || bail_out "test_realloc_fail=2: no odl_tb5 login"
N=40 SIZES=1048576
start_rx || bail_out "test_realloc_fail=2: cannot start the receiver on b"
# a file on each side that only holds a port: it hears every EVENT
for v in a b; do
	vm $v sh -c "setsid /tmp/odl_xfer hold -p 60 -t 900 > /tmp/hold.log 2>&1 < /dev/null &"
done
wait_for "vm b grep -q ready /tmp/rx.9 && vm a grep -q ready /tmp/hold.log && vm b grep -q ready /tmp/hold.log" 30 ||
	bail_out "test_realloc_fail=2: no receiver"
out=$("$VMPAIR" exec a --timeout 300 -- /tmp/odl_xfer send -p 7 -q 9 -n $N -s $SIZES 2>&1)
rc=$?
stop_rx
# the side(s) that fell back: each logged its two failed allocations, the
# second giving the resume up, and its holding file got LINK_DOWN (flags
# 0x2, -ECONNRESET)
x=$(for v in a b; do vm $v sh -c 'dmesg | grep -q "falling back to software credits"' && echo $v; done)
gave_up() { vm "$1" sh -c 'dmesg | grep -E "odl_tb5.*cannot allocate rings"'; }
gave_up_all() {
	[ -n "$x" ] || return 1
	for v in $x; do
		wait_for "gave_up $v | grep -q 'cannot allocate rings again: -12; the queued sends failed'" 30 &&
			wait_for "vm $v grep -q 'event status -104 flags 0x2' /tmp/hold.log" 30 || return 1
	done
}
desc="test_realloc_fail=2: the side that fell back (${x:-none}) could not allocate its rings again and gave the resume up: its queued sends failed, its files got LINK_DOWN, the transfer failed"
if [ "$rc" != 0 ] && gave_up_all; then
	ok "$desc" "$(for v in $x; do echo "$v: $(gave_up $v)"; done)" "a: $out"
else
	not_ok "$desc" "exit $rc" "a: $out" "b: $(vm b cat /tmp/rx.9 2>&1)" \
		"hold a: $(vm a cat /tmp/hold.log 2>&1)" "hold b: $(vm b cat /tmp/hold.log 2>&1)" \
		"a: $(vm a sh -c 'dmesg | grep odl_tb5 | tail -n 20')" "b: $(vm b sh -c 'dmesg | grep odl_tb5 | tail -n 20')"
fi
desc="test_realloc_fail=2: both sides allocated their rings again and logged in; a new transfer a -> b all verified"
# the stopped receiver's port is free again before the next one binds it
wait_for "! vm b sh -c 'kill -0 \$(cat /tmp/rx.pid) 2>/dev/null'" 30
if odl_wait_connected a 120 && odl_wait_connected b 120 &&
	vm a sh -c 'dmesg | grep -q "rings allocated again"' && vm b sh -c 'dmesg | grep -q "rings allocated again"' &&
	xfer_bounded 900 && [ "$XFER_RC" = 0 ] && echo "$XFER_OUT" | grep -q ' 0 bad'; then
	ok "$desc" "$XFER_OUT" "hold a: $(vm a cat /tmp/hold.log)" "hold b: $(vm b cat /tmp/hold.log)"
else
	stop_rx
	not_ok "$desc" "exit ${XFER_RC:-}" "${XFER_OUT:-}" \
		"a: $(vm a sh -c 'dmesg | grep odl_tb5 | tail -n 20')" "b: $(vm b sh -c 'dmesg | grep odl_tb5 | tail -n 20')"
fi

for v in a b; do vm $v sh -c 'kill $(pidof odl_xfer) 2>/dev/null; true'; done
out=$(for v in a b; do vm $v sh -c 'dmesg | grep -E "WARNING:|Oops|BUG:|general protection|Call Trace"'; done)
if [ -z "$out" ]; then
	ok "no WARN, oops or BUG on either host"
else
	not_ok "no WARN, oops or BUG on either host" "$out"
fi
tap_done
