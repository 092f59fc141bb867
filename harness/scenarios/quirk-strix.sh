#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# quirk-strix: the amd-strix-halo single-E2E-RX-ring limit, mitigation off
# (docs/profiles.md). Stock thunderbolt-net alone (its one E2E RX ring)
# works on both hosts: pings and a TCP transfer, no credit dropped, REG_CAPS
# reports 3 paths. Then odl_tb5 is loaded with e2e=on - a second E2E RX ring
# on each NHI - and thunderbolt-net's TX side wedges silently: a TCP
# transfer a -> b stalls, the model drops the peer's credit grants
# (stats e2e_credits_dropped > 0, e2e_wedged > 0), a's TX frame count stops
# moving while data is queued (descriptors posted, never consumed), pings
# fail, and no thunderbolt error is logged.
# Needs build/driver (make driver), or ODL_BUILD_DRIVER for NAME@KERNEL.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 11
tap_timeout 1200
odl_need_build
pair_up --profile amd-strix-halo
check "a: REG_CAPS reports 3 paths (7 rings exist)" vm a sh -c 'dmesg | grep -q "total paths: 3"'
if wait_xdomain a && wait_xdomain b && tbnet_up; then
	ok "thunderbolt0 up with carrier on both hosts"
else
	bail_out "thunderbolt0 did not come up"
fi
check "thunderbolt-net alone: ping a -> b" va ping -c 3 -W 5 192.0.2.2
read -r s_from s_to secs < <(tcp_transfer a b $((4 << 20)) 5001)
if [ -n "$s_from" ] && [ "$s_from" = "$s_to" ]; then
	ok "thunderbolt-net alone: 4 MiB TCP a -> b, SHA-256 matches" "${secs}s"
else
	not_ok "thunderbolt-net alone: 4 MiB TCP a -> b, SHA-256 matches" "sent $s_from" "got  $s_to" "$(tcp_evidence)"
fi
st_a=$(nhi_stats a)
is "$(nhi_stats a e2e_credits_dropped)/$(nhi_stats b e2e_credits_dropped)" "0/0" \
	"thunderbolt-net alone: no E2E credit grant dropped (a/b)" "a: $st_a"

# --- a second E2E RX ring on each NHI: odl_tb5 with e2e=on (mitigation off)
for v in a b; do
	odl_put $v && odl_load $v e2e=on || bail_out "cannot load odl_tb5 e2e=on on $v"
done
if odl_wait_connected a 120 && odl_wait_connected b 120; then
	ok "odl_tb5 (e2e=on) logged in alongside thunderbolt-net" \
		"$(vm a sh -c 'dmesg | grep odl_tb5 | tail -n 3')"
else
	not_ok "odl_tb5 (e2e=on) logged in alongside thunderbolt-net" \
		"$(vm a /tmp/odl_xfer info 2>&1)" "$(vm b /tmp/odl_xfer info 2>&1)"
fi
diag "a E2E RX rings: $(vm a sh -c 'dmesg | grep -iE "enabling E2E|e2e on" | tr "\n" ";"')"
# traffic on thunderbolt-net: a 16 MiB stream a -> b (far more frames than
# one credit window), bounded: it must not finish
vm b sh -c "rm -f /tmp/w.dst; setsid sh -c 'sleep 100000 | nc -l -p 5002 > /tmp/w.dst' </dev/null >/dev/null 2>&1 &"
wait_for "vm b sh -c 'netstat -ltn 2>/dev/null | grep -q :5002'" 30
vm a sh -c "head -c $((16 << 20)) /dev/urandom > /tmp/w.src; setsid sh -c 'nc 192.0.2.2 5002 < /tmp/w.src; echo \$? > /tmp/w.rc' </dev/null >/dev/null 2>&1 &"
# the wedge: a's credit grants are dropped and its TX frame count freezes
wait_for "[ \"\$(nhi_stats a e2e_wedged)\" -gt 0 ] 2>/dev/null" 180
tx1=$(nhi_stats a tx_frames)
sleep 10
tx2=$(nhi_stats a tx_frames)
st_a=$(nhi_stats a)
got_b=$(vm b sh -c 'wc -c < /tmp/w.dst')
diag "symptom: a stats after wedge: $st_a"
diag "symptom: b received $got_b of $((16 << 20)) bytes; a tx_frames $tx1 -> $tx2 over 10 s"
if [ "$(nhi_stats a e2e_credits_dropped)" -gt 0 ] 2>/dev/null && [ "$(nhi_stats a e2e_wedged)" -gt 0 ] 2>/dev/null; then
	ok "a drops the peer's credit grants and its TX ring wedges (e2e_credits_dropped, e2e_wedged)" "$st_a"
else
	not_ok "a drops the peer's credit grants and its TX ring wedges (e2e_credits_dropped, e2e_wedged)" "$st_a"
fi
if [ -n "$tx1" ] && [ "$tx1" = "$tx2" ] && ! vm a test -e /tmp/w.rc; then
	ok "a's TX descriptors are not consumed: no frame sent in 10 s with the transfer pending" \
		"tx_frames $tx1 -> $tx2, b has $got_b bytes"
else
	not_ok "a's TX descriptors are not consumed: no frame sent in 10 s with the transfer pending" \
		"tx_frames $tx1 -> $tx2, transfer rc $(vm a cat /tmp/w.rc 2>&1), b has $got_b bytes"
fi
[ "${got_b:-0}" -lt $((16 << 20)) ] 2>/dev/null &&
	ok "the transfer stalled short of 16 MiB" "$got_b bytes" ||
	not_ok "the transfer stalled short of 16 MiB" "$got_b bytes"
check_fails "ping a -> b now fails (TX wedged)" va ping -c 2 -W 3 192.0.2.2
# silent: thunderbolt logs nothing about it (an RCU stall report of an
# overloaded TCG host is not about thunderbolt: only its lines count)
out=$(tb_problems a 2>&1 | grep -E 'thunderbolt|usb4|WARNING:')
if [ -z "$out" ]; then
	ok "the wedge is silent: no thunderbolt error or WARN on a"
else
	not_ok "the wedge is silent: no thunderbolt error or WARN on a" "$out"
fi
vm a sh -c "pkill -f 'nc 192.0.2.2 5002'" >/dev/null 2>&1
vm b sh -c "pkill -f 'nc -l -p 5002'; pkill -f 'sleep 100000'" >/dev/null 2>&1
tap_done
