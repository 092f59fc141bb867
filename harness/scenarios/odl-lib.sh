# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers for the odl_tb5 scenarios (sourced after common.sh; not a scenario).
# Needs `make driver userlib` (build/driver/odl_tb5.ko, odl_xfer,
# build/userlib/odl_tb5_cli.static).
ODL_BUILD_DRIVER=${ODL_BUILD_DRIVER:-$SCEN_DIR/../../build/driver}
ODL_KO=$ODL_BUILD_DRIVER/odl_tb5.ko
ODL_XFER=$ODL_BUILD_DRIVER/odl_xfer
ODL_CLI_BIN=${ODL_CLI_BIN:-$SCEN_DIR/../../build/userlib/odl_tb5_cli.static}
# ring_size module parameter; empty = the driver's default (4096)
ODL_RING_SIZE=${ODL_RING_SIZE-}

odl_need_build() {
	[ -f "$ODL_KO" ] && [ -x "$ODL_XFER" ] ||
		bail_out "$ODL_KO or $ODL_XFER missing: run 'make driver' (or driver-KERNEL)"
	[ -x "$ODL_CLI_BIN" ] ||
		bail_out "build/userlib/odl_tb5_cli.static missing: run 'make userlib'"
}

# copy the module, the test tool and the CLI (/tmp/odl_tb5_cli) into guest $1
odl_put() {
	"$VMPAIR" put "$1" "$ODL_KO" /tmp/odl_tb5.ko >/dev/null &&
		"$VMPAIR" put "$1" "$ODL_XFER" /tmp/odl_xfer --mode 755 >/dev/null &&
		"$VMPAIR" put "$1" "$ODL_CLI_BIN" /tmp/odl_tb5_cli --mode 755 >/dev/null
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
# The client's output is left in $ODL_CLI_OUT.
ODL_CLI_OUT=
odl_cli_run() {
	local name=$1 tmo=$2 rc srv
	shift 2
	if ! odl_cli_server b; then
		not_ok "$name" "server did not start" "$(vm b cat /tmp/cli-server.log 2>&1)"
		return 1
	fi
	ODL_CLI_OUT=$("$VMPAIR" exec a --timeout "$tmo" -- /tmp/odl_tb5_cli --client --device 0 "$@" 2>&1)
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
		/odl_tb5: (ring_size|e2e=|busy_poll).*must be|odl_tb5: busy_poll/ { next }
		lvl <= 4 && /odl_tb5/ { print }'\'''
}

# odl_check_rx_stats DESC GUEST...: the driver counted no sequence, length or
# descriptor error and dropped nothing on each GUEST (odl_xfer stats)
odl_check_rx_stats() {
	local desc=$1 v s st="" bad=0
	shift
	for v in "$@"; do
		s=$(vm "$v" /tmp/odl_xfer stats 2>&1)
		st+="$v: $s"$'\n'
		printf '%s\n' "$s" | grep -q 'seq_errors=0 len_errors=0 desc_errors=0 drops=0' || bad=1
	done
	if [ $bad = 0 ]; then ok "$desc" "$st"; else not_ok "$desc" "$st"; fi
}

odl_check_clean() {
	local v out
	for v in a b; do
		out=$( { tb_problems "$v"; odl_problems "$v"; } 2>&1 | sort -u)
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

# rccl_stats_check NAME PYTHON [ARG...]: the net plugin's statistics of both
# guests (/tmp/rccl_stats --json) as a and b: ok NAME when a's TX is b's RX
# and the other way round, neither side counted link errors, and PYTHON
# (more asserts, then a print of what to show with ok; the ARGs from
# sys.argv[3]) passes
rccl_stats_check() {
	local sa sb res
	sa=$(vm a /tmp/rccl_stats --json 2>&1)
	sb=$(vm b /tmp/rccl_stats --json 2>&1)
	if res=$(python3 -c 'import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert a["tx_bytes"] == b["rx_bytes"] and b["tx_bytes"] == a["rx_bytes"], "tx/rx mismatch"
assert a["err_link"] == 0 and b["err_link"] == 0, "link errors"
'"$2" "$sa" "$sb" "${@:3}" 2>&1); then
		ok "$1" "$res"
	else
		not_ok "$1" "$res" "a: $sa" "b: $sb"
	fi
}
