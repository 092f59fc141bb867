# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers for the odl_tb5 scenarios (sourced after common.sh; not a scenario).
# Needs `make driver userlib` (build/driver/odl_tb5.ko, odl_xfer,
# build/userlib/odl_tb5_cli.static).
ODL_BUILD_DRIVER=${ODL_BUILD_DRIVER:-$SCEN_DIR/../../build/driver}
ODL_KO=$ODL_BUILD_DRIVER/odl_tb5.ko
ODL_XFER=$ODL_BUILD_DRIVER/odl_xfer
ODL_CLI_BIN=${ODL_CLI_BIN:-$SCEN_DIR/../../build/userlib/odl_tb5_cli.static}
ODL_LIBVM_BIN=${ODL_LIBVM_BIN:-$SCEN_DIR/../../build/userlib/odl_libvm.static}
# ring_size module parameter; empty = the driver's default (4096)
ODL_RING_SIZE=${ODL_RING_SIZE-}

odl_need_build() {
	[ -f "$ODL_KO" ] && [ -x "$ODL_XFER" ] ||
		bail_out "$ODL_KO or $ODL_XFER missing: run 'make driver' (or driver-KERNEL)"
	[ -x "$ODL_CLI_BIN" ] && [ -x "$ODL_LIBVM_BIN" ] ||
		bail_out "build/userlib/odl_tb5_cli.static or odl_libvm.static missing: run 'make userlib'"
}

# copy the module, the test tools and the CLI (/tmp/odl_tb5_cli) into guest $1
odl_put() {
	"$VMPAIR" put "$1" "$ODL_KO" /tmp/odl_tb5.ko >/dev/null &&
		"$VMPAIR" put "$1" "$ODL_XFER" /tmp/odl_xfer --mode 755 >/dev/null &&
		"$VMPAIR" put "$1" "$ODL_CLI_BIN" /tmp/odl_tb5_cli --mode 755 >/dev/null &&
		"$VMPAIR" put "$1" "$ODL_LIBVM_BIN" /tmp/odl_libvm --mode 755 >/dev/null
}

# load the module in guest $1 (extra module parameters after it).
# Stock thunderbolt (6.1 and 6.12, xdomain.c) acts on a peer's "properties
# changed" notification only once its own XDomain device is registered; a
# directory registered while the other side is still enumerating its
# XDomain can go unseen there (the service never appears, logins go
# unanswered; seen once in odl-data@trixie). With the link up, load only
# when both sides list their XDomain (docs/testing.md).
odl_load() {
	local v=$1
	shift
	if "$VMPAIR" cable status 2>/dev/null | grep -q '"link_up":true'; then
		wait_xdomain a 120 && wait_xdomain b 120 || return 1
	fi
	vm "$v" insmod /tmp/odl_tb5.ko ${ODL_RING_SIZE:+ring_size="$ODL_RING_SIZE"} "$@"
}

# odl_setup [vmpair up options]: pair up, driver + tools in both, loaded,
# both logged in (bails out otherwise)
odl_setup() {
	local v
	odl_need_build
	pair_up "$@"
	for v in a b; do
		odl_put $v && odl_load $v || bail_out "cannot load odl_tb5 on $v"
	done
	odl_wait_connected a 120 && odl_wait_connected b 120 ||
		bail_out "no odl_tb5 login" "$(vm a /tmp/odl_xfer info 2>&1)" "$(vm b /tmp/odl_xfer info 2>&1)"
}

# odl_cli_server GUEST [server options]: start `odl_tb5_cli --server` in the
# background (log /tmp/cli-server.log) once no earlier CLI runs there, and
# wait until it listens
odl_cli_server() {
	local v=$1
	shift
	wait_for "! vm $v pidof odl_tb5_cli" 60 || return 1
	vm "$v" sh -c "rm -f /tmp/cli-server.log; setsid /tmp/odl_tb5_cli --server --device 0 $* > /tmp/cli-server.log 2>&1 < /dev/null &" || return 1
	wait_for "vm $v grep -q 'waiting for a client' /tmp/cli-server.log" 60
}

# odl_cli_run NAME TIMEOUT CLIENT-OPTIONS...: server on b, client on a over
# /dev/odl_tb5_0 (the library's kernel backend); one TAP line for both
# sides: the client exits 0 and the server reports all data verified.
# The client's output is left in $ODL_CLI_OUT; ODL_CLI_ENV (VAR=value
# words) is the client's extra environment.
ODL_CLI_OUT=
ODL_CLI_ENV=
odl_cli_run() {
	local name=$1 tmo=$2 rc srv
	shift 2
	if ! odl_cli_server b; then
		not_ok "$name" "server did not start" "$(vm b cat /tmp/cli-server.log 2>&1)"
		return 1
	fi
	ODL_CLI_OUT=$("$VMPAIR" exec a --timeout "$tmo" -- env $ODL_CLI_ENV /tmp/odl_tb5_cli --client --device 0 "$@" 2>&1)
	rc=$?
	wait_for "! vm b pidof odl_tb5_cli" 60
	srv=$(vm b cat /tmp/cli-server.log 2>&1)
	if [ $rc -eq 0 ] && echo "$srv" | grep -q 'all data verified'; then
		ok "$name" "$ODL_CLI_OUT" "$srv"
		return 0
	fi
	not_ok "$name" "client exit $rc:" "$ODL_CLI_OUT" "server:" "$srv" \
		"a: $(vm a /tmp/odl_xfer stats 2>&1 | tr '\n' ' ')" "b: $(vm b /tmp/odl_xfer stats 2>&1 | tr '\n' ' ')"
	return 1
}

# odl_libvm_start GUEST LOG ARGS...: tests/guest/odl_libvm ARGS in the
# background on GUEST, its output and then "odl_libvm exit N" in LOG (ARGS
# and LOG are put into a guest shell command line: plain words only)
odl_libvm_start() {
	local v=$1 log=$2
	shift 2
	vm "$v" sh -c "rm -f $log; setsid sh -c '/tmp/odl_libvm $*; echo \"odl_libvm exit \$?\"' > $log 2>&1 < /dev/null &"
}

# odl_libvm_bg GUEST TIMEOUT ARGS...: odl_libvm ARGS run on GUEST from the
# host, in the background (its output goes to the file LIBVM_BG_OUT, its
# pid is LIBVM_BG_PID); odl_libvm_bg_wait waits for it and sets LIBVM_BG
# (the output) and LIBVM_BG_RC (the exit status)
LIBVM_BG_OUT=
LIBVM_BG_PID=
LIBVM_BG=
LIBVM_BG_RC=
odl_libvm_bg() {
	local v=$1 t=$2
	shift 2
	LIBVM_BG_OUT=$(mktemp)
	"$VMPAIR" exec "$v" --timeout "$t" -- /tmp/odl_libvm "$@" > "$LIBVM_BG_OUT" 2>&1 &
	LIBVM_BG_PID=$!
}

odl_libvm_bg_wait() {
	wait "$LIBVM_BG_PID"
	LIBVM_BG_RC=$?
	LIBVM_BG=$(cat "$LIBVM_BG_OUT")
	rm -f "$LIBVM_BG_OUT"
}

# odl_libvm_pair RXVM "RX-ARGS" TXVM "TX-ARGS": tests/guest/odl_libvm with
# RX-ARGS in the background on RXVM until it prints "posted", then with
# TX-ARGS on TXVM; true when both exit 0. Their output: LIBVM_RX, LIBVM_TX.
LIBVM_RX=
LIBVM_TX=
odl_libvm_pair() {
	local rx=$1 rxa=$2 tx=$3 txa=$4 rc
	odl_libvm_start "$rx" /tmp/libvm.log "$rxa"
	if wait_for "vm $rx grep -q posted /tmp/libvm.log" 90; then
		# shellcheck disable=SC2086
		LIBVM_TX=$("$VMPAIR" exec "$tx" --timeout 120 -- /tmp/odl_libvm $txa 2>&1)
		rc=$?
	else
		LIBVM_TX="$rx's side did not post its receive"
		rc=1
	fi
	wait_for "vm $rx grep -q 'odl_libvm exit' /tmp/libvm.log" 90
	LIBVM_RX=$(vm "$rx" cat /tmp/libvm.log 2>&1)
	LIBVM_TX="$LIBVM_TX
(exit $rc)"
	[ "$rc" = 0 ] && printf '%s\n' "$LIBVM_RX" | grep -q '^odl_libvm exit 0$'
}

# odl_cli_json_field KEY: a number from the client's --json output
odl_cli_json_field() {
	printf '%s\n' "$ODL_CLI_OUT" | sed -n "s/.*\"$1\":\([-0-9.e+]*\).*/\1/p" | head -n 1
}

odl_wait_dev() {
	wait_for "vm $1 test -c /dev/odl_tb5_0" "${2:-60}"
}

odl_wait_connected() {
	wait_for "vm $1 sh -c '/tmp/odl_xfer info | grep -q state=connected'" "${2:-60}"
}

# odl_unload GUEST: rmmod odl_tb5, retrying for up to 10 s while files of
# a process that was just killed are still closing
odl_unload() {
	vm "$1" sh -c 'for i in $(seq 1 200); do rmmod odl_tb5 2>/dev/null && exit 0; usleep 50000; done; rmmod odl_tb5'
}

# odl_data_hop GUEST: the HopID GUEST's odl_tb5 data frames carry on the
# cable (its TX HopID, from the driver's "connected" line; 8 if not found)
odl_data_hop() {
	local hop
	"$VMPAIR" cable status >/dev/null
	hop=$(vm "$1" sh -c 'dmesg | sed -n "s/.*odl_tb5.*connected: .*TX HopID \([0-9]*\) .*/\1/p" | tail -n 1')
	echo "${hop:-8}"
}

# odl_problems GUEST: dmesg lines from odl_tb5 at warning level or worse,
# and any WARN/oops
odl_problems() {
	vm "$1" sh -c 'dmesg -r | awk '\''
		{ lvl = substr($0, 2, index($0, ">") - 2) + 0; lvl = lvl % 8 }
		/WARNING:|Call Trace|Oops|BUG:|general protection|Kernel panic/ { print; next }
		/module verification failed|taints kernel/ { next }
		/odl_tb5: (ring_size|e2e=|busy_poll|features_off).*must be|odl_tb5: busy_poll/ { next }
		lvl <= 4 && /odl_tb5/ { print }'\'''
}

# odl_stat GUEST NAME: one of the driver's counters (odl_xfer stats)
odl_stat() {
	vm "$1" /tmp/odl_xfer stats | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# odl_flood_sink N IDLE RULE...: N x 1 MiB a -> b one way (odl_xfer flood
# from a's port 17, sink on b's port 19 ending IDLE s after its last
# receive), with the cable fault RULEs set once the sink is ready (all
# cleared before and after). Sets FS_RC (the flood's exit status), FS_OUT,
# FS_SINK (the sink's log) and FS_LIST (the rules with their hits)
odl_flood_sink() {
	local n=$1 idle=$2 r
	shift 2
	"$VMPAIR" cable fault clear >/dev/null
	vm b sh -c "rm -f /tmp/fsink.log; setsid /tmp/odl_xfer sink -p 19 -q 17 -n $n -s 1048576 -t $idle > /tmp/fsink.log 2>&1 < /dev/null &"
	wait_for "vm b grep -q ready /tmp/fsink.log" 30 ||
		bail_out "odl_xfer sink did not start on b" "$(vm b cat /tmp/fsink.log)"
	for r in "$@"; do
		"$VMPAIR" cable fault $r >/dev/null || bail_out "cable fault $r failed"
	done
	FS_OUT=$("$VMPAIR" exec a --timeout 300 -- /tmp/odl_xfer flood -p 17 -q 19 -n "$n" -s 1048576 2>&1)
	FS_RC=$?
	wait_for "vm b grep -q 'sink: ' /tmp/fsink.log" $((idle + 120)) >&2
	FS_LIST=$("$VMPAIR" cable fault list)
	"$VMPAIR" cable fault clear >/dev/null
	FS_SINK=$(vm b cat /tmp/fsink.log)
	vm b sh -c 'kill $(pidof odl_xfer) 2>/dev/null; true'
}

# fs_field NAME: a number from the summary in FS_SINK (ok, failed,
# lost_events, bad, receives)
fs_field() {
	printf '%s\n' "$FS_SINK" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1
}

# odl_flow GUEST: how its odl_tb5_0 is flow controlled now (sysfs
# flow_control: e2e, sw-credits, none)
odl_flow() {
	vm "$1" cat /sys/class/odl_tb5/odl_tb5_0/flow_control 2>&1
}

# odl_strix_tbnet_pair: the pair on the amd-strix-halo profile (its E2E
# credit bug) with thunderbolt-net up on both, so each NHI has one E2E RX
# ring before odl_tb5 loads (docs/profiles.md); one TAP check, bails out
# when thunderbolt0 does not come up
odl_strix_tbnet_pair() {
	pair_up --profile amd-strix-halo
	if wait_xdomain a && wait_xdomain b && tbnet_up; then
		ok "thunderbolt-net loaded and up on both hosts (one E2E RX ring each)"
	else
		bail_out "thunderbolt0 did not come up"
	fi
}

# odl_check_rx_stats DESC GUEST...: the driver counted no sequence, length or
# descriptor error and dropped ODL_EXPECT_DROPS messages (default none) on
# each GUEST (odl_xfer stats)
odl_check_rx_stats() {
	local desc=$1 v s st="" bad=0
	shift
	for v in "$@"; do
		s=$(vm "$v" /tmp/odl_xfer stats 2>&1)
		st+="$v: $s"$'\n'
		printf '%s\n' "$s" | grep -q "seq_errors=0 len_errors=0 desc_errors=0 drops=${ODL_EXPECT_DROPS:-0} " || bad=1
	done
	if [ $bad = 0 ]; then ok "$desc" "$st"; else not_ok "$desc" "$st"; fi
}

# odl_dmesg_problems GUEST: tb_problems and odl_problems together, sorted,
# each line once (empty: clean)
odl_dmesg_problems() {
	{ tb_problems "$1"; odl_problems "$1"; } 2>&1 | sort -u
}

odl_check_clean() {
	local v out
	for v in a b; do
		out=$(odl_dmesg_problems "$v")
		if [ -z "$out" ]; then
			ok "$v: dmesg clean (no odl_tb5/thunderbolt error, WARN or oops)"
		else
			not_ok "$v: dmesg clean (no odl_tb5/thunderbolt error, WARN or oops)" "$out"
		fi
	done
}

# odl_keyed_run: odl_xfer_run with keyed delivery (odl_xfer krecv/ksend)
odl_keyed_run() {
	ODL_XFER_MODE=k odl_xfer_run "$@"
}

# odl_urgent_run FROM TO PORT_FROM PORT_TO [-N]: urgent messages overtake
# queued ones (odl_xfer usend/urecv): TO holds its RECVs until FROM has
# queued everything, then checks the arrival order (-N: no urgent flag, FIFO)
odl_urgent_run() {
	local from=$1 to=$2 pf=$3 pt=$4 opts=${5:-} go=/tmp/urg.go.$4 stall r
	# the held message may wait for TO's RECVs longer than rx_stall_ms on a
	# loaded machine; restored below
	stall=$(vm "$to" cat /sys/module/odl_tb5/parameters/rx_stall_ms) || return 1
	vm "$to" sh -c 'echo 120000 > /sys/module/odl_tb5/parameters/rx_stall_ms' || return 1
	odl_urgent_steps "$from" "$to" "$pf" "$pt" "$opts" "$go"
	r=$?
	vm "$to" sh -c "echo $stall > /sys/module/odl_tb5/parameters/rx_stall_ms" || return 1
	return $r
}

odl_urgent_steps() {
	local from=$1 to=$2 pf=$3 pt=$4 opts=$5 go=$6
	vm "$to" sh -c "rm -f /tmp/rx.$pt $go; setsid /tmp/odl_xfer urecv $opts -g $go -p $pt -q $pf > /tmp/rx.$pt 2>&1 < /dev/null &" || return 1
	wait_for "vm $to grep -q ready /tmp/rx.$pt" 30 || return 1
	vm "$from" sh -c "rm -f /tmp/tx.$pf; setsid /tmp/odl_xfer usend $opts -p $pf -q $pt > /tmp/tx.$pf 2>&1 < /dev/null &" || return 1
	wait_for "vm $from grep -q queued /tmp/tx.$pf" 60 || { vm "$from" cat /tmp/tx.$pf; return 1; }
	vm "$to" touch $go || return 1
	wait_for "vm $to grep -q received /tmp/rx.$pt" 120 || { vm "$to" cat /tmp/rx.$pt; return 1; }
	wait_for "vm $from grep -q sent /tmp/tx.$pf" 60 || { vm "$from" cat /tmp/tx.$pf; return 1; }
	vm "$from" cat /tmp/tx.$pf
	vm "$to" cat /tmp/rx.$pt
	vm "$to" grep -q ' 0 bad' /tmp/rx.$pt
}

# odl_xfer_run FROM TO PORT_FROM PORT_TO COUNT SIZES [OPTS]: verified transfer
# (OPTS for both ends: -D DMA-bufs, -U registered user memory;
# ODL_XFER_MODE=k: keyed delivery, odl_xfer krecv/ksend)
odl_xfer_run() {
	local from=$1 to=$2 pf=$3 pt=$4 n=$5 sizes=$6 opts=${7:-} out m=${ODL_XFER_MODE:-}
	vm "$to" sh -c "rm -f /tmp/rx.$pt; setsid /tmp/odl_xfer ${m}recv $opts -p $pt -q $pf -n $n -s $sizes > /tmp/rx.$pt 2>&1 < /dev/null &" || return 1
	wait_for "vm $to grep -q ready /tmp/rx.$pt" 30 || return 1
	out=$(vm "$from" /tmp/odl_xfer "${m}send" $opts -p "$pf" -q "$pt" -n "$n" -s "$sizes" 2>&1) || {
		echo "$out"
		vm "$to" cat /tmp/rx.$pt
		return 1
	}
	wait_for "vm $to grep -q received /tmp/rx.$pt" 60 || { vm "$to" cat /tmp/rx.$pt; return 1; }
	echo "$out"
	vm "$to" cat /tmp/rx.$pt
	vm "$to" grep -q ' 0 bad' /tmp/rx.$pt
}

# netconf_start VM OUT 'ENV...' 'ARGS...': the net plugin's conformance
# harness (/tmp/netconf) in the background on VM, its output in /tmp/OUT,
# "netconf-exit=STATUS" the last line once it is done
netconf_start() {
	vm "$1" sh -c "rm -f /tmp/$2; setsid sh -c '$3 /tmp/netconf $4; echo netconf-exit=\$?' > /tmp/$2 2>&1 < /dev/null &"
}

# netconf_passed VM OUT LIMIT PATTERN: that run ended within LIMIT s,
# exited 0, and printed a line matching PATTERN (grep -E)
netconf_passed() {
	wait_for "vm $1 grep -q netconf-exit= /tmp/$2" "$3" 2 &&
		vm "$1" grep -q '^netconf-exit=0$' "/tmp/$2" && vm "$1" grep -qE "$4" "/tmp/$2"
}

# rccl_stats_eval NAME PYTHON [ARG...]: the net plugin's statistics of
# both guests (/tmp/rccl_stats --json) as a and b (dicts): ok NAME when
# PYTHON (asserts, then a print of what to show with ok; the ARGs from
# sys.argv[3]) passes, else not_ok with both files
rccl_stats_eval() {
	local sa sb res
	sa=$(vm a /tmp/rccl_stats --json 2>&1)
	sb=$(vm b /tmp/rccl_stats --json 2>&1)
	if res=$(python3 -c 'import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
'"$2" "$sa" "$sb" "${@:3}" 2>&1); then
		ok "$1" "$res"
	else
		not_ok "$1" "$res" "a: $sa" "b: $sb"
	fi
}
# rccl_stats_check NAME PYTHON [ARG...]: rccl_stats_eval, and a's TX is b's
# RX and the other way round, and neither side counted link errors (b:
# exactly $rccl_err_link_b, default 0, where a test makes some on purpose)
rccl_stats_check() {
	rccl_stats_eval "$1" 'assert a["tx_bytes"] == b["rx_bytes"] and b["tx_bytes"] == a["rx_bytes"], "tx/rx mismatch"
assert a["err_link"] == 0 and b["err_link"] == '"${rccl_err_link_b:-0}"', "link errors (b: %s expected)" % '"${rccl_err_link_b:-0}"'
'"$2" "${@:3}"
}

# The net plugin under a pulled cable (netconf --fail unplug; see
# t_link_failure in rccl/tests/netconf.c). PF_OUT: the file (in /tmp of
# both guests) the two ranks write to.
# pf_rx_mib GUEST: MiB the plugin received there so far (its statistics)
pf_rx_mib() {
	vm "$1" /tmp/rccl_stats --json 2>/dev/null |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["rx_bytes"] >> 20)' 2>/dev/null || echo 0
}
# pf_both PATTERN: both ranks printed it
pf_both() { vm a grep -q "$1" "/tmp/$PF_OUT" && vm b grep -q "$1" "/tmp/$PF_OUT"; }
pf_outputs() {
	echo "rank 0 (a):"; vm a cat "/tmp/$PF_OUT" 2>&1 | tail -n 30
	echo "rank 1 (b):"; vm b cat "/tmp/$PF_OUT" 2>&1 | tail -n 30
}
# plugin_peer_gone_round CABLES DEVICE: round 3 of netconf's --fail
# unplug: once both ranks are quiet, rank 1's process is killed with the
# cables left in (CABLES: "the cable", "both cables"); rank 0's keepalive
# must fail its comms with ncclRemoteError and find DEVICE ("the device")
# usable, and it must exit 0. Two checks.
plugin_peer_gone_round() {
	if wait_for "pf_both '# fault: round 3 quiet'" 180 2 && vm b sh -c 'kill -9 $(pidof netconf)'; then
		ok "round 3: both ranks quiet; rank 1's process killed, $1 left in"
	else
		not_ok "round 3: both ranks quiet; rank 1's process killed, $1 left in" "$(pf_outputs)"
	fi
	if wait_for "pf_both netconf-exit=" 120 2 &&
		netconf_passed a "$PF_OUT" 0 '^ok [0-9]+ - rank0: peer process gone with the link up'; then
		ok "round 3: rank 0 got ncclRemoteError from the keepalive, closed cleanly, $2 stayed usable; exited 0" \
			"$(vm a grep '^# fault: ' "/tmp/$PF_OUT" | tail -n 2)"
	else
		not_ok "round 3: rank 0 got ncclRemoteError from the keepalive, closed cleanly, $2 stayed usable; exited 0" "$(pf_outputs)"
	fi
}
# plugin_steps_passed NAME STEPS N: ok NAME when each rank printed N
# passes whose text matches STEPS (grep -E) in /tmp/$PF_OUT
plugin_steps_passed() {
	if [ "$(vm a grep -cE "^ok [0-9]+ - rank0: ($2)" "/tmp/$PF_OUT")" = "$3" ] &&
		[ "$(vm b grep -cE "^ok [0-9]+ - rank1: ($2)" "/tmp/$PF_OUT")" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1" "$(pf_outputs)"
	fi
}
# plugin_unplug_round N KIND LINK DEV_A DEV_B: round N of netconf's
# --fail unplug, pulling cable LINK: when both ranks are at the round
# ("streaming": once a has received 8 MiB more; "quiet": only unmatched
# receives posted) the cable is pulled; both must report the failure as
# handled, a's DEV_A and b's DEV_B (the cable's device nodes) go away, and
# after the replug both must report the round's reconnection. Four checks;
# five with a sixth argument "fused": before the replug both must also
# have made new comms over the cable left and moved data over them
# (netconf's "degraded exchange done").
plugin_unplug_round() {
	local n=$1 kind=$2 link=$3 da=$4 db=$5 fused=${6:-} base out=/tmp/$PF_OUT
	if wait_for "pf_both '# fault: round $n $kind'" 180 2; then
		base=$(pf_rx_mib a)
		if [ "$kind" = quiet ] || wait_for '[ "$(pf_rx_mib a)" -ge $((base + 8)) ]' 120 2; then
			"$VMPAIR" cable --link "$link" unplug >/dev/null
			ok "round $n: both ranks $kind (a has received $(pf_rx_mib a) MiB); cable $link pulled"
		else
			not_ok "round $n: both ranks $kind, data moving; cable $link pulled" "$(pf_outputs)" "$(vm a /tmp/rccl_stats 2>&1)"
		fi
	else
		not_ok "round $n: both ranks $kind; cable $link pulled" "$(pf_outputs)"
	fi
	if wait_for "pf_both 'fault: round $n link down handled' || vm a grep -q netconf-exit= $out || vm b grep -q netconf-exit= $out" 300 2 &&
		pf_both "fault: round $n link down handled"; then
		ok "round $n: both ranks got NCCL errors, in-flight requests ended, new ones refused, close and deregMr worked" \
			"$(vm a grep '^# fault: .* returned' "$out" | tail -n 1)" "$(vm b grep '^# fault: .* returned' "$out" | tail -n 1)"
	else
		not_ok "round $n: both ranks got NCCL errors, in-flight requests ended, new ones refused, close and deregMr worked" "$(pf_outputs)"
	fi
	# the devices go with the cable (netconf lets go of them), then come back
	if wait_for "! vm a test -e $da && ! vm b test -e $db" 120; then
		ok "round $n: the odl_tb5 devices of cable $link ($da on a, $db on b) went away with it"
	else
		not_ok "round $n: the odl_tb5 devices of cable $link ($da on a, $db on b) went away with it" \
			"$(vm a ls /dev 2>&1 | grep odl)" "$("$VMPAIR" cable --link "$link" status)"
	fi
	if [ -n "$fused" ]; then
		if wait_for "pf_both 'fault: round $n degraded exchange done' || vm a grep -q netconf-exit= $out || vm b grep -q netconf-exit= $out" 300 2 &&
			pf_both "fault: round $n degraded exchange done"; then
			ok "round $n: with cable $link out, both made new comms over the fused device's other cable, 0 B .. 4 MiB both ways verified" \
				"$(vm a grep "^# fault: round $n degraded" "$out")" "$(vm b grep "^# fault: round $n degraded" "$out")"
		else
			not_ok "round $n: with cable $link out, both made new comms over the fused device's other cable, 0 B .. 4 MiB both ways verified" "$(pf_outputs)"
		fi
	fi
	"$VMPAIR" cable --link "$link" plug >/dev/null
	if wait_for "pf_both 'fault: round $n reconnected' || vm a grep -q netconf-exit= $out || vm b grep -q netconf-exit= $out" 400 2 &&
		pf_both "fault: round $n reconnected"; then
		ok "round $n: after the replug both processes connected again, 0 B .. 4 MiB both ways verified" \
			"$(vm a grep "^# fault: round $n device usable" "$out")" "$(vm b grep "^# fault: round $n device usable" "$out")"
	else
		not_ok "round $n: after the replug both processes connected again, 0 B .. 4 MiB both ways verified" "$(pf_outputs)" "$("$VMPAIR" cable --link "$link" status)"
	fi
}

# Pairs cabled more than once (vmpair up --links N): a controller per cable.
# ctl_uuid V K: the UUID of guest V's controller on cable K (domain K)
ctl_uuid() {
	vm "$1" cat "/sys/bus/thunderbolt/devices/$2-0/unique_id"
}
# odl_dev_for V K: guest V's odl_tb5 device node whose peer is the other
# guest's controller on cable K
odl_dev_for() {
	local w u
	[ "$1" = a ] && w=b || w=a
	u=$(ctl_uuid $w "$2") || return 1
	vm "$1" sh -c 'for d in /dev/odl_tb5_*; do
		/tmp/odl_xfer info -d $d 2>/dev/null | grep -qx "peer_uuid=$0" && { echo $d; exit 0; }
	done; exit 1' "$u"
}

# rccl_need_build: NETCONF and STATS, the static net plugin harness and
# statistics reader the scenarios copy into the guests (RCCL_BUILD, or
# build/rccl); bails out when they are not built
rccl_need_build() {
	local b=${RCCL_BUILD:-$SCEN_DIR/../../build/rccl}
	NETCONF=$b/netconf.static
	STATS=$b/odl_tb5_rccl_stats.static
	[ -x "$NETCONF" ] && [ -x "$STATS" ] ||
		bail_out "build/rccl/netconf.static or odl_tb5_rccl_stats.static missing: run 'make rccl'"
}
# xdomain_on_both_links V: guest V's two domains (vmpair up --links 2) list
# the peer as XDomain (wait before the driver loads)
xdomain_on_both_links() {
	wait_xdomain "$1" 120 && wait_for "vm $1 test -e /sys/bus/thunderbolt/devices/1-1/unique_id" 120
}
# odl_both_links_up V: guest V has two odl_tb5 devices, both logged in
odl_both_links_up() {
	wait_for "vm $1 sh -c 'test -c /dev/odl_tb5_0 && test -c /dev/odl_tb5_1 &&
		/tmp/odl_xfer info -d /dev/odl_tb5_0 | grep -q state=connected &&
		/tmp/odl_xfer info -d /dev/odl_tb5_1 | grep -q state=connected'" 180
}
