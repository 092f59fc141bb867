#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-basic: odl_tb5 loads on both guests (cable unplugged), the cable is
# plugged, /dev/odl_tb5_0 appears on both within 10 s and both log in;
# GET_INFO shows the peer's UUID as the thunderbolt core sees it.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 10
tap_timeout 600
odl_need_build
pair_up --unplugged
for v in a b; do
	odl_put $v || bail_out "cannot copy the driver into $v"
	check "odl_tb5 loads on $v" odl_load $v
done
"$VMPAIR" cable plug >/dev/null || bail_out "cable plug failed"
t0=$(date +%s.%N)
if odl_wait_dev a 10 && odl_wait_dev b 10; then
	t1=$(date +%s.%N)
	ok "/dev/odl_tb5_0 on both within 10 s of plugging" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f s", b - a }')"
else
	not_ok "/dev/odl_tb5_0 on both within 10 s of plugging" \
		"a: $(vm a ls /dev/ | grep odl)" "b: $(vm b ls /dev/ | grep odl)"
	odl_wait_dev a 60
	odl_wait_dev b 60
fi
if odl_wait_connected a 30 && odl_wait_connected b 30; then
	ok "both logged in (state connected)"
else
	not_ok "both logged in (state connected)" "$(vm a /tmp/odl_xfer info 2>&1)" "$(vm b /tmp/odl_xfer info 2>&1)"
fi
for v in a b; do
	want=$(vm $v cat /sys/bus/thunderbolt/devices/0-1/unique_id)
	got=$(vm $v /tmp/odl_xfer info | sed -n 's/^peer_uuid=//p')
	is "$got" "$want" "$v: GET_INFO peer UUID = XDomain 0-1 unique_id"
done
is "$(vm a /tmp/odl_xfer info | sed -n 's/^local_uuid=//p')" \
	"$(vm b /tmp/odl_xfer info | sed -n 's/^peer_uuid=//p')" "a's local UUID is b's peer UUID"
check "device mode 0660" vm a sh -c '[ "$(stat -c %a /dev/odl_tb5_0)" = 660 ]'
odl_check_clean
tap_done
