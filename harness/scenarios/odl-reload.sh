#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-reload: odl_tb5 is unloaded and loaded again on b, ODL_RELOAD_CYCLES
# (5; make sim-soak: 20) times while idle, then as many times during traffic: a CLI mimo run
# (b client, a server, both directions) is killed on b and the module
# removed at once, with frames in flight both ways. Each time: a's device
# goes away and its server stops with an error, b's module comes back, both
# log in again (a keeps index 0) and a verified transfer works. No oops or
# WARN on either side. Last, b's router refuses its next eight path
# activations (model fault path-refuse) before b loads again: odl_tb5 tries
# the enable again after its backoff (doubling past the login's 5 s cap)
# and connects (the only WARNs allowed are the stock driver's for the
# refusals).
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
CYCLES=${ODL_RELOAD_CYCLES:-5}
tap_plan $((CYCLES * 2 + 4))
tap_timeout 3300
odl_setup

# reload_b [CMD]: unload (retrying while a killed process's files close),
# run CMD (if given) while b has no driver, and load
reload_b() {
	odl_unload b || return 1
	wait_for "! vm a test -e /dev/odl_tb5_0" 120 || { echo "a's device stayed after b unloaded"; return 1; }
	[ $# = 0 ] || "$@" || { echo "failed while unloaded: $*"; return 1; }
	odl_load b || return 1
	odl_wait_connected a 180 && odl_wait_connected b 180 || { echo "not connected after reload"; return 1; }
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

# A refused path enable: b's host router refuses its next PF_N path
# activations (model fault path-refuse, answered with a Lock error, as a
# busy router does) and b loads again. The stock driver's enable fails (it
# WARNs in tb_path_activate and tears the tunnel down); odl_tb5 must try
# again after its backoff, not leave a logged-in pair that never carries
# data (a, whose own enable worked, waits for b's READY). After it, both
# connected and data verified both ways; the only new dmesg problems are
# those the refusals cause. After the clean checks: they are expected here.
pf_expected=$(printf '%s|' \
	'WARNING: .* at drivers/thunderbolt/path\.c:[0-9]+ tb_path_activate' \
	'thunderbolt .*: activation failed$' \
	'thunderbolt .*: DMA tunnel activation failed, aborting$' \
	'thunderbolt .*: [0-9]+:[0-9]+: downstream port is locked$' \
	'thunderbolt [0-9a-f:.]+: path activation failed$' \
	'odl_tb5 .*: failed to enable DMA paths: -[0-9]+; trying again in [0-9]+ ms$' \
	'\] +Call Trace:$' \
	'\] +(\? )?[A-Za-z_0-9.]+\+0x[0-9a-f]+/0x[0-9a-f]+( \[[a-z_0-9]+\])?$' \
	'\] +</?TASK>$' \
	'\] +(R[A-Z0-9]{1,2}|CS|FS|CR[0-9]|DR[0-7]|PKRU): ' \
	'\] +Code: ' \
	'\] +Modules linked in: ' \
	'\] +Workqueue: ')
pf_expected=${pf_expected%|}
# 8 refusals: the waits double from 100 ms to 12800 ms (about 26 s in all),
# past the login backoff's 5 s cap, up to the path retry's 60 s
PF_N=8 PF_LAST=$((100 << (PF_N - 1)))
pa0=$(odl_dmesg_problems a)
p0=$(odl_dmesg_problems b)
r0=$(nhi_stats b path_refused)
e0=$(vm b dmesg | grep -c 'failed to enable DMA paths')
err= xfer=
if ! out=$(reload_b nhi_fault b "path-refuse count=$PF_N" 2>&1); then
	err="reload with the refusals: ${out:-failed}"
elif ! xfer=$(odl_xfer_run a b 1 2 2 4096,70000 2>&1 && odl_xfer_run b a 1 2 2 4096,70000 2>&1); then
	err="a verified transfer failed"
fi
r1=$(nhi_stats b path_refused)
fl=$(vm b dmesg | grep 'failed to enable DMA paths')
e1=$(printf '%s' "$fl" | grep -c .)
new=$(comm -13 <(printf '%s\n' "$p0") <(odl_dmesg_problems b) | grep -vE "$pf_expected")
new="$new$(comm -13 <(printf '%s\n' "$pa0") <(odl_dmesg_problems a) | sed 's/^/a: /')"
last=$(printf '%s\n' "$fl" | tail -n 1)
desc="b's router refused $PF_N path activations: odl_tb5 enabled them again after its backoff (doubling past the login's 5 s cap: the last wait $PF_LAST ms), connected, verified both ways"
if [ -z "$err" ] && [ $((r1 - r0)) = "$PF_N" ] && [ $((e1 - e0)) = "$PF_N" ] && [ -z "$new" ] &&
	[ "${last##* in }" = "$PF_LAST ms" ]; then
	ok "$desc" "model path_refused $r0 -> $r1" "$fl"
else
	not_ok "$desc" "${err:-connected and verified}" "$xfer" "model path_refused $r0 -> $r1 (want +$PF_N)" \
		"odl_tb5 'failed to enable DMA paths' lines $e0 -> $e1 (want +$PF_N)" \
		"the last: ${last:-none} (want a wait of $PF_LAST ms)" "unexpected dmesg problems: $new" \
		"$(vm a /tmp/odl_xfer info 2>&1)" "$(vm b /tmp/odl_xfer info 2>&1)" "$(vm b dmesg | tail -n 40)"
fi
nhi_fault b clear
tap_done
