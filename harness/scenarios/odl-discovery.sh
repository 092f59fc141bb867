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
# b's service, both log in, data verifies.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 8
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
odl_check_clean
tap_done
