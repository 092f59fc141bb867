#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-basic: odl_tb5 loads on both guests (cable unplugged), the cable is
# plugged, /dev/odl_tb5_0 appears on both within 10 s and both log in;
# GET_INFO shows the peer's UUID as the thunderbolt core sees it, and
# `odl_tb5_cli --list` shows the device as the core and the driver see it
# (peer, link rate and lanes, state, flow control, the features agreed at
# login), as text and as JSON; the driver's sysfs features file shows both
# offered keys and empty messages and agreed on them.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 14
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
# odl_tb5_cli --list --json on $1 against the core's view of the link
cli_list_check() {
	local v=$1 o=$2
	vm "$v" /tmp/odl_tb5_cli --list --json >"$VMPAIR_STATE/list-$v.json" 2>&1 &&
		python3 - "$VMPAIR_STATE/list-$v.json" \
			"$(vm "$v" cat /sys/bus/thunderbolt/devices/0-1/unique_id)" \
			"$(vm "$o" cat /sys/bus/thunderbolt/devices/0-1/unique_id)" \
			"$(vm "$v" cat /sys/bus/thunderbolt/devices/0-1/rx_speed)" \
			"$(vm "$v" cat /sys/bus/thunderbolt/devices/0-1/rx_lanes)" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
peer, local, speed, lanes = sys.argv[2].lower(), sys.argv[3].lower(), sys.argv[4], int(sys.argv[5])
d = j["devices"]
assert len(d) == 1, "%d devices listed" % len(d)
d = d[0]
assert d["name"] == "/dev/odl_tb5_0" and d["index"] == 0, d
assert d["state"] == "connected", d["state"]
assert d["peer_uuid"] == peer, "peer %s, the core says %s" % (d["peer_uuid"], peer)
assert d["local_uuid"] == local, "local %s, the peer's core says %s" % (d["local_uuid"], local)
assert d["lane_gbps"] == int(float(speed.split()[0])), "lane %d Gb/s, the core says %s" % (d["lane_gbps"], speed)
assert d["lanes"] == lanes and d["link_gbps"] == lanes * d["lane_gbps"] > 0, d
assert d["flow_control"] in ("e2e", "sw-credits", "none"), d["flow_control"]
assert d["max_msg_size"] > 0 and d["ring_bytes"] > 0, d
# agreed with the peer at login (both sides run this driver: everything)
want = {"keyed", "empty", "urgent", "ports"}
assert want <= set(d["features"]), "features %s, want %s too" % (d["features"], sorted(want - set(d["features"])))
print("%s: %d Gb/s (%d x %d), ABI %s, flow control %s, features %s" % (d["name"], d["link_gbps"], d["lanes"], d["lane_gbps"], d["abi"], d["flow_control"], " ".join(d["features"])))
PYEOF
}
for v in a b; do
	[ $v = a ] && o=b || o=a
	if out=$(cli_list_check $v $o 2>&1); then
		ok "$v: odl_tb5_cli --list --json: one device, connected, the core's peer UUID, link rate and lanes, the features agreed at login" "$out"
	else
		not_ok "$v: odl_tb5_cli --list --json: one device, connected, the core's peer UUID, link rate and lanes, the features agreed at login" \
			"$out" "$(cat "$VMPAIR_STATE/list-$v.json")"
	fi
done
check "odl_tb5_cli --list (text) on a: the device, connected, its link, its features" \
	vm a sh -c '/tmp/odl_tb5_cli --list | grep -q "^/dev/odl_tb5_0" &&
		/tmp/odl_tb5_cli --list | grep -q "state: *connected" &&
		/tmp/odl_tb5_cli --list | grep -Eq "link: *[0-9]+ Gb/s \([0-9]+ x [0-9]+ Gb/s\)" &&
		/tmp/odl_tb5_cli --list | grep -Eq "features: .*keyed.* empty"'
# the driver's own account of the login features (sysfs features): both
# offered everything, nothing withheld, keys and empty messages agreed
feat_ok=1 feat_out=
for v in a b; do
	f=$(vm $v cat /sys/class/odl_tb5/odl_tb5_0/features 2>&1)
	feat_out="$feat_out$v: $f
"
	printf ' %s\n' "$f" | grep -Eq ' agreed=([a-z0-9-]+,)*keyed,empty( |$)' &&
		printf ' %s\n' "$f" | grep -Eq ' peer=([a-z0-9-]+,)*keyed,empty( |$)' &&
		printf ' %s\n' "$f" | grep -q ' withheld=-$' || feat_ok=0
done
if [ $feat_ok = 1 ]; then
	ok "sysfs features on both: keyed and empty messages offered by the peer and agreed, nothing withheld" "$feat_out"
else
	not_ok "sysfs features on both: keyed and empty messages offered by the peer and agreed, nothing withheld" "$feat_out"
fi
check "device mode 0660" vm a sh -c '[ "$(stat -c %a /dev/odl_tb5_0)" = 660 ]'
odl_check_clean
tap_done
