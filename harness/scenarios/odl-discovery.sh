#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-discovery: a peer that missed our service. Stock thunderbolt re-reads
# a peer's properties on its PROPERTIES_CHANGED notification only when its
# own XDomain device is registered (xdomain.c); a notification that goes
# unanswered is retried and then given up. Either way the peer never
# learns of a directory registered after its last read - it has no service
# device for us and leaves our LOGIN unanswered. Reproduced
# deterministically: odl_tb5 on a, then on b while the cable drops every
# control packet b -> a, until b gives up notifying. a has no device for
# b. When the fault is gone, b's unanswered LOGINs make odl_tb5 ask every
# peer to re-read its properties (odl_nudge_peers: the core's "properties
# changed" notification without a change of b's property block), a finds
# b's service, both log in, data verifies. Part 2 (below): a peer whose
# core gave up discovering us is restarted by a UUID request.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 13
tap_timeout 1200
odl_need_build
pair_up
wait_xdomain a && wait_xdomain b || bail_out "no XDomain peer"
for v in a b; do
	odl_put $v || bail_out "cannot copy the driver into $v"
done
odl_load a || bail_out "cannot load odl_tb5 on a"
# b learns of a's service (a's notification reaches b's registered
# XDomain): a service under odl_tb5's directory key
wait_for "vm b sh -c 'cat /sys/bus/thunderbolt/devices/0-1.*/key 2>/dev/null | grep -qx odltb5'" 60 ||
	bail_out "b never saw a's odl_tb5 service" "$(vm b sh -c 'grep . /sys/bus/thunderbolt/devices/0-1.*/key')"
"$VMPAIR" cable fault drop hop=ctrl dir=b2a every=1 >/dev/null || bail_out "cable fault failed"
# known stock message: b gives up its notifications while the cable drops them
TB_PROBLEMS_ALLOW="failed to send properties changed notification"
vm b insmod /tmp/odl_tb5.ko || bail_out "cannot load odl_tb5 on b"
# b's notification series is over when all 11 attempts (XDOMAIN_RETRIES
# + 1) failed and none was sent for 5 s (stock 6.1 logs the error line on
# every failed attempt, "retrying" or not)
settled=$(mktemp)
tap_cleanup "rm -f '$settled'"
cat > "$settled" <<'SH'
n=$(dmesg | grep -c 'failed to send properties changed notification$')
last=$(dmesg | grep 'sending properties changed notification' | tail -n 1 |
	sed 's/^\[ *\([0-9.]*\)\].*/\1/')
now=$(cut -d' ' -f1 /proc/uptime)
[ "$n" -ge 11 ] && awk -v l="${last:-0}" -v t="$now" 'BEGIN { exit !(t - l > 5) }'
SH
"$VMPAIR" put b "$settled" /tmp/settled.sh >/dev/null || bail_out "cannot copy a script into b"
if wait_for "vm b sh /tmp/settled.sh" 300; then
	ok "b gave up notifying a of its new directory (control packets b -> a dropped)" \
		"$(vm b sh -c 'dmesg | grep -c "failed to send properties changed notification\$"') failed attempts"
else
	not_ok "b gave up notifying a of its new directory" "$(vm b dmesg | grep -i propert | tail -n 20)"
fi
check "a has no odl_tb5 device for b (b's service unseen)" vm a sh -c '! test -e /dev/odl_tb5_0'
"$VMPAIR" cable fault clear >/dev/null || bail_out "cable fault clear failed"
t0=$SECONDS
if odl_wait_connected a 240 && odl_wait_connected b 120; then
	ok "after the fault: a found b's service and both logged in ($((SECONDS - t0)) s)"
else
	not_ok "after the fault: a found b's service and both logged in" \
		"a: $(vm a ls /sys/bus/thunderbolt/devices/ | tr '\n' ' ')" \
		"$(vm b dmesg | grep odl_tb5 | tail -n 10)"
fi
check "b logged that it asked the peer to re-read its properties" \
	vm b sh -c 'dmesg | grep -q "asking it to re-read our properties"'
check "a -> b: 16 messages verified" odl_xfer_run a b 1 2 16 1,4096,65536,1048576
check "b -> a: 16 messages verified" odl_xfer_run b a 3 4 16 1,4096,65536,1048576

# Part 2: a peer that gave up. Only the guest with the higher domain UUID
# (H; L the other) may be restarted (odl_restart_peer says why). odl_tb5
# leaves L and H drops L's service; then the cable drops every control
# packet H -> L while odl_tb5 comes back on L: L's notifications reach H,
# none of H's property reads is answered, and after 10 retries H's core
# stops its handshake with L (error state: notifications ignored from then
# on). L's unanswered LOGINs make it send H a UUID request, which restarts
# H's handshake: H reads L's properties again and finds the service.
ua=$(vm a cat /sys/bus/thunderbolt/devices/0-0/unique_id)
ub=$(vm b cat /sys/bus/thunderbolt/devices/0-0/unique_id)
# byte order (the kernel's memcmp), whatever the locale
if [ "$(printf '%s\n%s\n' "$ua" "$ub" | LC_ALL=C sort | tail -n 1)" = "$ua" ]; then
	H=a L=b
else
	H=b L=a
fi
diag "domain UUIDs: a $ua, b $ub: $H is the higher"
odl_unload $L || bail_out "cannot unload odl_tb5 on $L"
wait_for "vm $H sh -c '! test -e /dev/odl_tb5_0'" 60 ||
	bail_out "$H kept its odl_tb5 device for $L" "$(vm $H ls /sys/bus/thunderbolt/devices/)"
"$VMPAIR" cable fault drop hop=ctrl dir=${H}2$L every=1 >/dev/null || bail_out "cable fault failed"
# known stock messages: H gives up reading L's properties, L gives up
# notifying H (both provoked by the fault)
TB_PROBLEMS_ALLOW="failed to send properties changed notification
failed read XDomain properties from"
vm $L insmod /tmp/odl_tb5.ko || bail_out "cannot load odl_tb5 on $L"
if wait_for "vm $H sh -c 'dmesg | grep -q failed.read.XDomain.properties.from'" 300; then
	ok "$H gave up reading $L's properties (control packets $H -> $L dropped)"
else
	not_ok "$H gave up reading $L's properties" "$(vm $H dmesg | grep -i -e propert -e state | tail -n 20)"
fi
"$VMPAIR" cable fault clear >/dev/null || bail_out "cable fault clear failed"
check "$H has no odl_tb5 device for $L" vm $H sh -c '! test -e /dev/odl_tb5_0'
t0=$SECONDS
if odl_wait_connected $H 300 && odl_wait_connected $L 120; then
	ok "$L's UUID request restarted $H's handshake: $H found the service, both logged in ($((SECONDS - t0)) s)"
else
	not_ok "$L's UUID request restarted $H's handshake: $H found the service, both logged in" \
		"$H: $(vm $H ls /sys/bus/thunderbolt/devices/ | tr '\n' ' ')" \
		"$(vm $H dmesg | grep -e XDomain -e handshake -e state | tail -n 12)" \
		"$(vm $L dmesg | grep odl_tb5 | tail -n 10)"
fi
check "$H logged the restart of its handshake" vm $H sh -c 'dmesg | grep -q "restarting handshake"'
check "$L -> $H: 16 messages verified (after the restart)" odl_xfer_run $L $H 1 2 16 1,4096,65536,1048576
odl_check_clean
tap_done
