#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl_tb5 benchmarks (called by bench/run, or alone):
#
#   bench/odl.sh [--rounds N] [--tcp-mib M] [--odl-msgs K] [--no-icount] [--icount-only]
#
# 1. Throughput, same pair, same run: odl_tb5_cli bandwidth (K x 1 MiB,
#    --no-verify like nc) against thunderbolt-net TCP (M MiB of random data
#    with busybox nc, SHA-256 checked after), both a -> b through the same
#    usb4-nhi model and cable, alternating, N rounds, medians compared; and
#    one odl_tb5 run with every byte verified by the receiver.
# 2. Latency: odl_tb5_cli latency (ping-pong, one-way = RTT/2), 64 B and
#    4 KiB, p50/p99.
# 3. Guest CPU cost, counted deterministically: a second pair runs under
#    QEMU's -icount shift=0 (every guest instruction advances the virtual
#    clock by exactly 1 ns; sleep=on: idle time passes at host speed and is not run time).
#    The guest kernel's per-CPU task run time (/proc/schedstat, ns of
#    virtual time spent running anything but the idle task) is then the
#    number of instructions executed. Divided by the driver's frame
#    counters: instructions per 4 KiB frame sent (a) and received (b),
#    whole stack (CLI + library + driver + thunderbolt core + interrupts),
#    with --no-verify so the CLI's pattern checks are not counted; once with
#    1 MiB messages (streaming), with 4064-byte messages (one frame per
#    message; the CLI's default window of 16 in flight, and 128 in flight),
#    and for thunderbolt-net TCP for comparison.
#
# Results: bench/results/odl-<UTC time>.{txt,json}.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
rounds=3
tcp_mib=64
odl_msgs=512
do_perf=1
do_icount=1
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--tcp-mib) tcp_mib=$2; shift 2 ;;
	--odl-msgs) odl_msgs=$2; shift 2 ;;
	--no-icount) do_icount=0; shift ;;
	--icount-only) do_perf=0; shift ;;
	*) echo "bench/odl.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
export VMPAIR_STATE=${VMPAIR_STATE:-$top/build/bench/odl-pair}
. "$top/harness/scenarios/common.sh"
. "$top/harness/scenarios/odl-lib.sh"
TAP_AUTO_EVIDENCE=0
fail() { echo "bench/odl: $*" >&2; evidence >&2; exit 1; }
say() { echo "bench/odl: $*" >&2; }
odl_need_build
tap_cleanup pair_down

# up_pair [vmpair options]: pair with odl_tb5 loaded and logged in
up_pair() {
	local out v
	"$VMPAIR" down >/dev/null 2>&1
	out=$("$VMPAIR" up --no-cable-trace "$@" 2>&1) || fail "vmpair up failed: $out"
	for v in a b; do
		odl_put $v && odl_load $v || fail "cannot load odl_tb5 on $v"
	done
	odl_wait_connected a 180 && odl_wait_connected b 180 || fail "odl_tb5 did not log in"
}

# cli NAME ARGS...: server on b, client on a (--json); last JSON line
cli() {
	local name=$1 out
	shift
	odl_cli_server b --timeout 120000 || fail "$name: CLI server did not start"
	out=$("$VMPAIR" exec a --timeout 1800 -- /tmp/odl_tb5_cli --client --device 0 --json \
		--timeout 120000 "$@" 2>&1) || fail "$name failed: $out $(vm b cat /tmp/cli-server.log)"
	wait_for "! vm b pidof odl_tb5_cli" 120
	printf '%s\n' "$out" | tail -n 1
}
jf() { python3 -c 'import json, sys; d = json.loads(sys.argv[1])
for k in sys.argv[2].split("."): d = d[k]
print(d)' "$1" "$2"; }
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

ts=$(date -u +%Y%m%dT%H%M%SZ)
res=$top/bench/results/odl-$ts
mkdir -p "$top/bench/results"
json_perf=null
json_icount=null
txt=$(mktemp)

if [ $do_perf = 1 ]; then
	say "pair 1 (TCG): odl_tb5 and thunderbolt-net on the same link"
	up_pair
	tbnet_up || fail "thunderbolt0 did not come up"
	kern=$(va uname -r)
	odl=()
	tcp=()
	port=6100
	for r in $(seq 1 "$rounds"); do
		for path in $( [ $((r % 2)) = 1 ] && echo "odl tcp" || echo "tcp odl"); do
			if [ $path = odl ]; then
				# like nc (and perftest): the data is not checked inline;
				# the verified figure is measured once below
				j=$(cli bandwidth --test bandwidth --size 1M --iterations "$odl_msgs" --no-verify)
				g=$(jf "$j" bw_avg_gbps)
				odl+=("$(awk -v g="$g" 'BEGIN { printf "%.1f", g * 1000 }')")
				say "round $r odl_tb5 ${odl[-1]} Mb/s"
			else
				port=$((port + 1))
				read -r s d t < <(tcp_transfer a b $((tcp_mib << 20)) $port)
				[ -n "$s" ] && [ "$s" = "$d" ] || fail "thunderbolt-net transfer: SHA-256 mismatch"
				tcp+=("$(awk -v s="$t" -v m="$tcp_mib" 'BEGIN { printf "%.1f", m * 8 * 1.048576 / s }')")
				say "round $r thunderbolt-net ${tcp[-1]} Mb/s"
			fi
		done
	done
	om=$(median "${odl[@]}")
	tm=$(median "${tcp[@]}")
	ratio=$(awk -v a="$om" -v b="$tm" 'BEGIN { printf "%.2f", a / b }')
	jv=$(cli bandwidth --test bandwidth --size 1M --iterations "$odl_msgs")
	[ "$(jf "$jv" errors)" = 0 ] || fail "odl_tb5 verify errors: $jv"
	ov=$(awk -v g="$(jf "$jv" bw_avg_gbps)" 'BEGIN { printf "%.1f", g * 1000 }')
	l4=$(cli latency --test latency --size 4K --iterations 2000)
	l64=$(cli latency --test latency --size 64 --iterations 2000)
	{
		echo "odl_tb5 benchmark $ts ($(nproc) host cores, TCG guests, kernel $kern, odl_tb5 ring_size ${ODL_RING_SIZE:-4096 (default)})"
		echo "throughput a -> b, same pair, alternating, $rounds rounds, median:"
		printf '  %-52s %10s Mb/s   (rounds: %s)\n' "odl_tb5_cli bandwidth, $odl_msgs x 1 MiB, --no-verify" "$om" "${odl[*]}"
		printf '  %-52s %10s Mb/s   (rounds: %s)\n' "thunderbolt-net TCP, $tcp_mib MiB nc, SHA-256 after" "$tm" "${tcp[*]}"
		echo "  ratio odl_tb5 / thunderbolt-net: $ratio (target >= 5)"
		printf '  %-52s %10s Mb/s   (every byte checked by b)\n' "odl_tb5_cli bandwidth, $odl_msgs x 1 MiB, verified" "$ov"
		echo "latency (odl_tb5_cli ping-pong, one-way = RTT/2, verified):"
		printf '  %-10s p50 %9.1f us   p99 %9.1f us   min %9.1f us\n' "64 B" \
			"$(jf "$l64" latency.median_us)" "$(jf "$l64" latency.p99_us)" "$(jf "$l64" latency.min_us)"
		printf '  %-10s p50 %9.1f us   p99 %9.1f us   min %9.1f us\n' "4 KiB" \
			"$(jf "$l4" latency.median_us)" "$(jf "$l4" latency.p99_us)" "$(jf "$l4" latency.min_us)"
	} | tee -a "$txt"
	json_perf="{\"kernel\":\"$kern\",\"rounds\":$rounds,\"odl_mbps\":[$(IFS=,; echo "${odl[*]}")],\"odl_median_mbps\":$om,
 \"odl_verified_mbps\":$ov,\"tbnet_mbps\":[$(IFS=,; echo "${tcp[*]}")],\"tbnet_median_mbps\":$tm,\"ratio\":$ratio,
 \"latency_64\":$l64,\"latency_4k\":$l4}"
	"$VMPAIR" down >/dev/null 2>&1
fi

if [ $do_icount = 1 ]; then
	say "pair 2 (TCG, -icount shift=0,sleep=on): instructions per frame"
	up_pair --qemu-extra -icount shift=0,sleep=on
	# run_ns GUEST: ns of virtual time cpu0 ran tasks (schedstat field 7)
	run_ns() { vm "$1" awk '$1 == "cpu0" { print $8 }' /proc/schedstat; }
	stat_of() { vm "$1" /tmp/odl_xfer stats | tr ' ' '\n' | sed -n "s/^$2=//p"; }
	# sample NAME CLI-ARGS...: "insns_a insns_b frames_tx_a frames_rx_b" of one run
	sample() {
		local name=$1 a0 b0 ta0 rb0 a1 b1 ta1 rb1
		shift
		odl_cli_server b --timeout 120000 || fail "server"
		ta0=$(stat_of a tx_frames); rb0=$(stat_of b rx_frames)
		a0=$(run_ns a); b0=$(run_ns b)
		"$VMPAIR" exec a --timeout 1800 -- /tmp/odl_tb5_cli --client --device 0 --no-verify \
			--timeout 120000 "$@" >/dev/null 2>&1 || fail "$name: client failed"
		wait_for "! vm b pidof odl_tb5_cli" 120
		a1=$(run_ns a); b1=$(run_ns b)
		ta1=$(stat_of a tx_frames); rb1=$(stat_of b rx_frames)
		echo "$((a1 - a0)) $((b1 - b0)) $((ta1 - ta0)) $((rb1 - rb0))"
	}
	# measure NAME SIZE N1 N2 [CLI-ARGS]: two runs of N1 and N2 messages; the
	# difference cancels what does not depend on the frame count (process
	# start, opening, mmap faults, the first window's buffer fill):
	# "NAME insns_a insns_b frames_a frames_b insn/frame_tx insn/frame_rx
	#  whole-run insn/frame_tx whole-run insn/frame_rx"
	measure() {
		local name=$1 size=$2 n1=$3 n2=$4 s1 s2
		shift 4
		s1=$(sample "$name" --test bandwidth --size "$size" --iterations "$n1" "$@")
		s2=$(sample "$name" --test bandwidth --size "$size" --iterations "$n2" "$@")
		echo "$name $s1 $s2" | awk '{ printf "%s %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f\n", $1,
			$6 - $2, $7 - $3, $8 - $4, $9 - $5,
			($6 - $2) / ($8 - $4), ($7 - $3) / ($9 - $5), $6 / $8, $7 / $9 }'
	}
	m1=$(measure stream1M 1M 128 384)
	m3=$(measure frame4064 4064 10000 30000)
	m5=$(measure frame4064w128 4064 10000 30000 --window 128)
	# thunderbolt-net for comparison: the nc transfer alone (file prepared
	# before, receiver writes to /dev/null), 4 KiB frames counted by the cable
	tbnet_up || fail "thunderbolt0 did not come up (icount pair)"
	tcp_sample() {
		local mib=$1 port=$2 c0 c1 a0 a1 b0 b1 r0
		vm b sh -c "setsid sh -c 'sleep 100000 | nc -l -p $port > /dev/null' </dev/null >/dev/null 2>&1 &"
		wait_for "vm b sh -c 'netstat -ltn | grep -q :$port'" 60 || fail "nc listener"
		c0=$("$VMPAIR" cable status | python3 -c 'import json,sys; print(json.load(sys.stdin)["ends"]["a"]["tx_msgs"])')
		r0=$(vm b cat /sys/class/net/thunderbolt0/statistics/rx_bytes)
		a0=$(run_ns a); b0=$(run_ns b)
		vm a sh -c "nc 192.0.2.2 $port < /tmp/tcp.src" || fail "nc send"
		wait_for "vm b sh -c '[ \$(cat /sys/class/net/thunderbolt0/statistics/rx_bytes) -ge $((r0 + (mib << 20))) ]'" 120
		a1=$(run_ns a); b1=$(run_ns b)
		c1=$("$VMPAIR" cable status | python3 -c 'import json,sys; print(json.load(sys.stdin)["ends"]["a"]["tx_msgs"])')
		vm b sh -c 'kill $(pidof sleep) 2>/dev/null; true'
		echo "$((a1 - a0)) $((b1 - b0)) $((c1 - c0)) $((c1 - c0))"
	}
	va sh -c "head -c $((64 << 20)) /dev/urandom > /tmp/tcp.src" || fail "no TCP source data"
	t1=$(tcp_sample 64 6201)
	t2=$(tcp_sample 64 6202)
	m4=$(echo "tbnet-tcp $t1 $t2" | awk '{ printf "%s %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f\n", $1,
		$2 + $6, $3 + $7, $4 + $8, $5 + $9, ($2 + $6) / ($4 + $8), ($3 + $7) / ($5 + $9),
		($2 + $6) / ($4 + $8), ($3 + $7) / ($5 + $9) }')
	{
		echo "guest instructions per 4 KiB frame (QEMU -icount shift=0,sleep=on: 1 instruction = 1 ns of"
		echo "virtual time; counted as the guest's task run time in /proc/schedstat), whole guest: CLI"
		echo "(--no-verify) + library + driver + thunderbolt core + interrupts; target <= 1500:"
		printf '  %-46s %11s %11s %9s %14s\n' workload "insn/frame" "insn/frame" frames "whole run"
		printf '  %-46s %11s %11s %9s %14s\n' "" "a (sent)" "b (recv)" "" "a / b"
		for m in "$m1" "$m3" "$m5" "$m4"; do
			set -- $m
			case $1 in
			stream1M) w="odl_tb5 1 MiB messages (384 - 128 runs)" ;;
			frame4064) w="odl_tb5 4064 B, 1 frame/message (30k - 10k)" ;;
			frame4064w128) w="  the same, 128 in flight (--window 128)" ;;
			tbnet-tcp) w="thunderbolt-net TCP, 2 x 64 MiB nc" ;;
			esac
			printf '  %-46s %11s %11s %9s %14s\n' "$w" "$6" "$7" "$4" "$8 / $9"
		done
	} | tee -a "$txt"
	json_icount=$(printf '%s\n' "$m1" "$m3" "$m5" "$m4" | awk 'BEGIN { printf "[" }
		{ printf "%s{\"workload\":\"%s\",\"insns_a\":%s,\"insns_b\":%s,\"frames_tx_a\":%s,\"frames_rx_b\":%s,\"insn_per_frame_tx\":%s,\"insn_per_frame_rx\":%s,\"whole_run_tx\":%s,\"whole_run_rx\":%s}", (NR > 1 ? "," : ""), $1, $2, $3, $4, $5, $6, $7, $8, $9 }
		END { printf "]" }')
	"$VMPAIR" down >/dev/null 2>&1
fi

cp "$txt" "$res.txt"
rm -f "$txt"
cat > "$res.json" <<JSON
{"timestamp":"$ts","host_cores":$(nproc),"perf":$json_perf,"icount":$json_icount}
JSON
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$res.json" || fail "bad JSON in $res.json"
echo "bench/odl: saved $res.txt and $res.json"
