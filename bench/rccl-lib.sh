# SPDX-License-Identifier: MIT
# Helpers shared by the net plugin's benchmarks between the VMs
# (bench/rccl.sh, bench/rccl_fused.sh); sourced after
# harness/scenarios/common.sh and odl-lib.sh (va, vb, wait_for, odl_put).

# bench_init NAME: after the options (size, cpu): the guests' CPU model
# (cpu '' takes BENCH_CPU_MODEL, "default" QEMU's own), the tools copied
# into the guests (they must be built), bytes; NAME prefixes fail()'s
# messages
bench_init() {
	bench_name=$1
	case $cpu in
	'') cpu=$BENCH_CPU_MODEL ;;
	default) cpu= ;;
	esac
	TAP_AUTO_EVIDENCE=0
	TAP_EXEC_TIMEOUT=600
	CLI=$top/build/userlib/odl_tb5_cli.static
	NETCONF=$top/build/rccl/netconf.static
	bytes=$((size << 20))
	for f in "$ODL_KO" "$ODL_XFER" "$CLI" "$NETCONF"; do
		[ -f "$f" ] || { echo "$bench_name: $f missing: run 'make driver userlib rccl'" >&2; exit 1; }
	done
}
fail() { echo "$bench_name: $*" >&2; evidence >&2; exit 1; }

# bench_boot VMPAIR-UP-OPTIONS...: the pair up (virtio-net for the
# out-of-band channel), taken down when the benchmark exits
bench_boot() {
	local out
	out=$("$VMPAIR" up --virtio-net --no-cable-trace --mem 1024 ${cpu:+--cpu "$cpu"} "$@" 2>&1) ||
		fail "vmpair up failed: $out"
	tap_cleanup pair_down
}

# bench_guests: odl_tb5, odl_tb5_cli and netconf into both guests, the
# driver loaded, eth0 with its address (a 198.51.100.1, b .2)
bench_guests() {
	local v ip
	for v in a b; do
		odl_put $v && "$VMPAIR" put $v "$CLI" /tmp/odl_tb5_cli --mode 755 >/dev/null &&
			"$VMPAIR" put $v "$NETCONF" /tmp/netconf --mode 755 >/dev/null &&
			odl_load $v || fail "cannot set up $v"
		[ $v = a ] && ip=198.51.100.1 || ip=198.51.100.2
		vm $v sh -c "ip link set eth0 up && ip addr add $ip/24 dev eth0" || fail "eth0 setup on $v"
	done
}

# guest_clock: guest a's clocksource (under TCG not the TSC: vmpair's
# tsc=unstable; results record it, bench/rccl_history.py pools by it)
guest_clock() { va cat /sys/devices/system/clocksource/clocksource0/current_clocksource; }

# json_field JSON KEY: one field of a JSON object
json_field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

# netconf_ranks FILE PORT ENV ARGS [ENV_B]: netconf rank 0 on a (in the
# background, its output in /tmp/FILE) and rank 1 on b, both with ENV (words
# VAR=VALUE, may be empty; ENV_B: b's instead) and ARGS; prints rank 0's
# output once both ended well, else the failing side's output to stderr and
# returns 1
netconf_ranks() {
	local f=/tmp/$1 port=$2 env=$3 args=$4 envb=${5-$3} out
	va sh -c "rm -f $f; setsid sh -c 'env $env /tmp/netconf --rank 0 --oob-listen $port $args; echo netconf-exit=\$?' > $f 2>&1 < /dev/null &" || return 1
	out=$(vb env $envb /tmp/netconf --rank 1 --oob-connect 198.51.100.1:"$port" $args 2>&1) || { echo "$out" >&2; return 1; }
	wait_for "va grep -q netconf-exit=0 $f" 60 || { va cat "$f" >&2; return 1; }
	va cat "$f"
}

# per_dir JSON: an odl_tb5_cli mimo run's rate per direction (the lower one)
per_dir() { python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(min(j["tx_gbps"], j["rx_gbps"]))' "$1"; }
# last LIST: the last word
last() { echo "$1" | awk '{ print $NF }'; }
# median LIST (numbers separated by spaces)
median() { printf '%s\n' $1 | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# div A B: A / B to two decimals
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# per-round ratios: the plugin against the same round's raw figures
round_ratios() {
	local p=($1) q=($2) i out=
	for i in "${!p[@]}"; do out+="$(div "${p[$i]}" "${q[$i]}") "; done
	echo "$out"
}
# arr LIST: the words separated by commas (a JSON array's inside)
arr() { echo "$1" | xargs | tr ' ' ,; }
