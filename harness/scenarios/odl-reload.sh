#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-reload: odl_tb5 is unloaded and loaded again on b, ODL_RELOAD_CYCLES
# (20) times while idle, then as many times during traffic: a CLI mimo run
# (b client, a server, both directions) is killed on b and the module
# removed at once, with frames in flight both ways. Each time: a's device
# goes away and its server stops with an error, b's module comes back, both
# log in again (a keeps index 0) and a verified transfer works. No oops or
# WARN on either side.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
CYCLES=${ODL_RELOAD_CYCLES:-20}
tap_plan $((CYCLES * 2 + 3))
tap_timeout 3300
odl_setup

# reload_b: unload (retrying while a killed process's files close) and load
reload_b() {
	odl_unload b || return 1
	wait_for "! vm a test -e /dev/odl_tb5_0" 120 || { echo "a's device stayed after b unloaded"; return 1; }
	odl_load b || return 1
	odl_wait_connected a 180 && odl_wait_connected b 180 || { echo "no login after reload"; return 1; }
}

for i in $(seq 1 "$CYCLES"); do
	if out=$(reload_b 2>&1) && out="$out$(odl_xfer_run a b 1 2 2 4096,70000 2>&1)"; then
		ok "idle reload $i: b unloaded/loaded, login, a -> b verified"
	else
		not_ok "idle reload $i: b unloaded/loaded, login, a -> b verified" "$out" \
			"$(vm a /tmp/odl_xfer info 2>&1)" "$(vm b /tmp/odl_xfer info 2>&1)"
	fi
done
for i in $(seq 1 "$CYCLES"); do
	out=
	vm a sh -c "rm -f /tmp/cli-server.log; setsid /tmp/odl_tb5_cli --server --device 0 --timeout 60000 > /tmp/cli-server.log 2>&1 < /dev/null &"
	wait_for "vm a grep -q 'waiting for a client' /tmp/cli-server.log" 60
	vm b sh -c "setsid /tmp/odl_tb5_cli --client --device 0 --test mimo --streams 2 --size 64K --duration 600 --timeout 60000 > /tmp/cli-client.log 2>&1 < /dev/null &"
	# traffic both ways: b received and sent frames since the login
	if ! wait_for "vm b sh -c '/tmp/odl_xfer stats | grep -q \"rx_frames=[1-9][0-9][0-9]\"'" 120; then
		out="no traffic before the reload: $(vm b /tmp/odl_xfer stats 2>&1) $(vm b cat /tmp/cli-client.log)"
	fi
	vm b sh -c 'kill -9 $(pidof odl_tb5_cli) 2>/dev/null; true'
	if [ -z "$out" ] && out=$(reload_b 2>&1) &&
		wait_for "! vm a pidof odl_tb5_cli" 120 &&
		vm a grep -q 'odl_tb5_cli: error' /tmp/cli-server.log &&
		out="$out$(odl_xfer_run a b 1 2 2 4096,70000 2>&1)"; then
		ok "reload $i during traffic: a's server stopped with an error, login again, verified" \
			"$(vm a grep error /tmp/cli-server.log)"
	else
		not_ok "reload $i during traffic: a's server stopped with an error, login again, verified" "$out" \
			"a server: $(vm a cat /tmp/cli-server.log 2>&1)" "b client: $(vm b cat /tmp/cli-client.log 2>&1)" \
			"$(vm a /tmp/odl_xfer info 2>&1)" "$(vm b /tmp/odl_xfer info 2>&1)"
		vm a sh -c 'kill -9 $(pidof odl_tb5_cli) 2>/dev/null; true'
	fi
done
is "$(vm a /tmp/odl_xfer info | sed -n 's/^index=//p')" 0 "a: b kept device index 0 through $((CYCLES * 2)) reloads"
odl_check_clean
tap_done
