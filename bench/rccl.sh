#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# RCCL/NCCL net plugin benchmark: all-reduce bus bandwidth over the plugin
# between the two VMs against odl_tb5_cli's raw bandwidth over the same
# driver, measured in the same run (rounds alternate which goes first).
#
#   bench/rccl.sh [--size MiB] [--rounds N] [--iters N] [--slice BYTES]...
#                 [--cpu MODEL] [--smp N] [--reducer inline|thread] [--no-staged]
#                 [--what all|bandwidth|latency] [--lat-sizes LIST] [--lat-iters N]
#
# --what (default all): the bandwidth part below, the latency part (after
# it), or both in the same rounds.
# Per round (the order of raw and plugin alternates between rounds):
#   raw        odl_tb5_cli --test bandwidth, SIZE MiB in 1 MiB messages a->b,
#              --no-verify; the receiver's rate (rx_bw_gbps: bytes delivered /
#              time, as the all-reduce counts delivered bytes)
#   bidir      odl_tb5_cli --test mimo (both directions at once), --streams 1
#              (SIZE MiB each way) and --streams 4 (SIZE/4 MiB per stream),
#              per-direction rate min(tx, rx); the reference is the better of
#              the two (the stronger raw peer)
#   plugin     netconf.static --bench: two-rank ring all-reduce (int32 sum) of
#              SIZE MiB over the plugin (its newest table, v12), ITERS (4) timed
#              iterations after a warm-up, every result verified; one run per
#              --slice (default 4 MiB and 512 KiB; the first is the headline).
#              busbw = S * 2(n-1)/n / t = S / t for two ranks (nccl-tests).
#              The plugin moves registered buffers zero copy (keyed receives
#              into NCCL's buffer, docs/net-plugin.md); the headline slice is
#              also run with ODL_TB5_RCCL_ZEROCOPY=0 (every byte staged, one
#              copy on each side) for the A/B in the same run (--no-staged:
#              not), and with --op none: the same data movement with the
#              reduction skipped (every byte received still checked): the
#              plugin's transport alone, without the int32 adds that a GPU
#              system does on the GPU and that here take the guest's one
#              emulated CPU. The headline slice also runs with the other
#              reducer (--reducer: who does the int32 adds, see below),
#              unless --channels 1 over one channel, and with
#              ODL_TB5_RCCL_CALLER_REAP=0 (the progress thread hands every
#              completion over to test(), as before 2026-11-27 evening).
#              --channels N (default 2): the all-reduce is divided between N
#              connections (comm pairs), each with its own 8 slices in
#              flight, one thread driving them all: NCCL's ring channels
#              (its topology search finds at least one ring and NCCL always
#              doubles them, so a ring over one NIC has two, each its own
#              connection; one proxy thread drives them).
# Headline ratio = median plugin busbw / median bidirectional raw per direction
# (a two-rank ring all-reduce moves S/2 each way in each phase, both directions
# at once: the peer that does the same is the bidirectional one); the ratio
# against one-way raw is shown too, and per-round ratios (same round's raw).
# --cpu MODEL boots the guests with QEMU's -cpu MODEL. Default
# max,erms=off,la57=off (BENCH_CPU_MODEL in harness/scenarios/common.sh): a CPU with AVX2 like any TB5 host (the reduction
# uses it: under TCG ~0.05 s per 64 MiB against 0.06 s for the plain loop),
# without ERMS (QEMU 7.2's TCG runs `rep movsb`, which the kernel's copies
# take when ERMS is there, one byte per step) and without 5-level paging.
# --cpu default: QEMU's own model (qemu64: no AVX2).
# --smp N: vCPUs per guest (default 1). --reducer thread (default) or inline:
# the reductions run in a thread of their own beside the thread that drives
# the plugin (as on a GPU system, where the GPU reduces while NCCL's proxy
# thread drives the network), or in the driving thread as each slice arrives;
# every round also runs the other one on the headline slice.
# Latency, per round in the same pair (order alternating like the rest):
#   raw        odl_tb5_cli --test latency (ping-pong, verified) per size of
#              --lat-sizes (default 8,4096,65536), --lat-iters (2000)
#              messages: one-way latency = round trip / 2
#   plugin     netconf.static --bench-lat: the same ping-pong over the
#              plugin (registered buffers, receives posted ahead as NCCL's
#              proxy keeps them, test() polled; every message checked), and
#              a two-rank ring all-reduce of that size (two steps: the
#              reduce-scatter exchange, the adds, the all-gather exchange);
#              the same again with ODL_TB5_RCCL_CALLER_REAP=0 (the progress
#              thread hands every completion over to test(); the plugin
#              before 2026-11-27 evening), in alternating order, for the
#              A/B of the caller reaping its device itself
#   ratio      plugin one-way p50 / raw one-way p50 (what the plugin adds
#              to a message), the all-reduce p50 against two raw one-way
#              latencies (its two exchanges, the floor on this link)
# Results: bench/results/rccl-allreduce-<UTC>.{txt,json} (bandwidth) and
# bench/results/rccl-latency-<UTC>.{txt,json} (latency).
# Needs `make driver userlib rccl`. VMPAIR_STATE defaults to build/bench/rccl-pair.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
size=64
rounds=5
iters=4
slices=()
staged=1
cpu=
smp=1
reducer=thread
channels=2
what_sel=all
lat_sizes=8,4096,65536
lat_iters=2000
while [ $# -gt 0 ]; do
	case $1 in
	--no-staged) staged=0; shift ;;
	--size) size=$2; shift 2 ;;
	--cpu) cpu=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--reducer) reducer=$2; shift 2 ;;
	--channels) channels=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--slice) slices+=("$2"); shift 2 ;;
	--what) what_sel=$2; shift 2 ;;
	--lat-sizes) lat_sizes=$2; shift 2 ;;
	--lat-iters) lat_iters=$2; shift 2 ;;
	-h|--help) sed -n '3,/^# Needs/p' "$0"; exit 0 ;;
	*) echo "bench/rccl.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ ${#slices[@]} -gt 0 ] || slices=(4194304 524288)
case $reducer in
inline) other_reducer=thread ;;
thread) other_reducer=inline ;;
*) echo "bench/rccl.sh: --reducer takes inline or thread" >&2; exit 2 ;;
esac
case $what_sel in
all|bandwidth|latency) ;;
*) echo "bench/rccl.sh: --what takes all, bandwidth or latency" >&2; exit 2 ;;
esac
[[ $lat_sizes =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "bench/rccl.sh: --lat-sizes takes sizes in bytes separated by commas" >&2; exit 2; }
[[ $lat_iters =~ ^[0-9]+$ ]] && [ "$lat_iters" -ge 10 ] || { echo "bench/rccl.sh: --lat-iters takes a count of at least 10" >&2; exit 2; }
bw=0; lat=0
[ "$what_sel" = latency ] || bw=1
[ "$what_sel" = bandwidth ] || lat=1
case $smp in
[1-8]) ;;
*) echo "bench/rccl.sh: --smp takes 1..8" >&2; exit 2 ;;
esac
case $channels in
[1-8]) ;;
*) echo "bench/rccl.sh: --channels takes 1..8" >&2; exit 2 ;;
esac
export VMPAIR_STATE=${VMPAIR_STATE:-$top/build/bench/rccl-pair}
. "$top/harness/scenarios/common.sh"
. "$top/harness/scenarios/odl-lib.sh"
. "$here/rccl-lib.sh"
bench_init bench/rccl.sh

echo "bench/rccl.sh: booting the pair (usb4-nhi cable for odl_tb5, virtio-net for the out-of-band channel)"
bench_boot --smp "$smp"
bench_guests
odl_wait_connected a 90 && odl_wait_connected b 90 || fail "odl_tb5 did not connect"
wait_for "va ping -c 1 -W 2 198.51.100.2" 60 || fail "virtio-net path does not ping"


# raw_cli CLIENT-OPTIONS...: one odl_tb5_cli run (server on b); prints the
# client's JSON with "guest_busy_pct" added: how busy guest a was while the
# client ran (/proc/schedstat run time of all its CPUs against /proc/uptime,
# read around it: percent of one CPU)
raw_cli() {
	local j out
	vb sh -c 'rm -f /tmp/srv.out; setsid /tmp/odl_tb5_cli --server --device 0 --json > /tmp/srv.out 2>&1 < /dev/null &' || return 1
	sleep 1
	out=$(va sh -c 'busy() { awk '"'"'$1 ~ /^cpu[0-9]/ { b += $8 } END { getline u < "/proc/uptime"; split(u, f, " "); printf "%.0f %.0f\n", b, f[1] * 1e9 }'"'"' /proc/schedstat; }
		echo "busy0 $(busy)"; "$@"; echo "busy1 $(busy)"' sh /tmp/odl_tb5_cli --client --device 0 --json "$@" 2>&1) || return 1
	j=$(echo "$out" | grep '^{') || return 1
	wait_for "vb sh -c '! pidof odl_tb5_cli'" 30 || return 1
	python3 -c 'import json,sys; j=json.loads(sys.argv[1]); a=sys.argv[2].split(); b=sys.argv[3].split()
j["guest_busy_pct"]=round(100*(int(b[1])-int(a[1]))/(int(b[2])-int(a[2]))); print(json.dumps(j))' \
		"$j" "$(echo "$out" | grep '^busy0')" "$(echo "$out" | grep '^busy1')"
}
# raw TEST [CLI options]: a bandwidth-type run, SIZE MiB in 1 MiB messages
raw() {
	local test=$1
	shift
	raw_cli --test "$test" --size 1M --iterations $((bytes >> 20)) --no-verify "$@"
}


# plugin SLICE PORT [ZEROCOPY [OP [REDUCER [EXTRA]]]]: all-reduce benchmark
# over $channels channels (EXTRA: more netconf options, e.g. --in-place or
# --channels 1; plugin_env: more of the plugin's environment); prints rank
# 0's bench JSON
plugin() {
	local slice=$1 port=$2 zc=${3:-1} op=${4:-sum} red=${5:-$reducer} out
	out=$(netconf_ranks nb.out "$port" "ODL_TB5_RCCL_ZEROCOPY=$zc ${plugin_env:-}" \
		"--bench $bytes --iters $iters --slice $slice --op $op --reducer $red --channels $channels --deadline 300 ${6:-}") || return 1
	printf '%s\n' "$out" | sed -n 's/^# bench //p' | grep '^{'
}

# plugin_lat PORT [ENV]: netconf --bench-lat over the plugin; prints rank 0's
# "# lat" JSON lines (one per size)
plugin_lat() {
	local out
	out=$(netconf_ranks nl.out "$1" "${2:-}" "--bench-lat $lat_sizes --lat-iters $lat_iters --deadline 120") || return 1
	printf '%s\n' "$out" | sed -n 's/^# lat //p' | grep '^{'
}
lat_field() { python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(j[sys.argv[2]][sys.argv[3]])' "$1" "$2" "$3"; }

declare -A res=()   # key -> space-separated values, one per round
# row KEY LABEL ZEROCOPY [OP [REDUCER [EXTRA]]]: one more plugin run on the
# headline slice $s in round $r; its busbw goes to res[KEY$s], j keeps its JSON
row() {
	local key=$1 label=$2
	shift 2
	port=$((port + 1))
	j=$(plugin "$s" $port "$@") || fail "plugin all-reduce $label (slice $s) failed"
	res[$key$s]+="$(json_field "$j" busbw_avg_gbps) "
	echo "bench/rccl.sh: round $r plugin all-reduce $label, slice $s: busbw $(json_field "$j" busbw_avg_gbps) Gb/s (rank 0 process CPU $(json_field "$j" cpu_s_avg) s per iteration)"
}
port=29600
for r in $(seq 1 "$rounds"); do
	order="raw plugin"
	[ $((r % 2)) = 0 ] && order="plugin raw"
	for what in $order; do
		if [ $lat = 1 ] && [ $what = raw ]; then
			for n in ${lat_sizes//,/ }; do
				j=$(raw_cli --test latency --size "$n" --iterations "$lat_iters") || fail "raw latency run ($n B) failed"
				res[lraw$n]+="$(lat_field "$j" latency median_us) "
				res[lraw99$n]+="$(lat_field "$j" latency p99_us) "
				echo "bench/rccl.sh: round $r raw latency $n B: one-way p50 $(last "${res[lraw$n]}") us, p99 $(last "${res[lraw99$n]}") us"
			done
		elif [ $lat = 1 ]; then
			variants="reap handover"
			[ $((r % 2)) = 0 ] && variants="handover reap"
			for v in $variants; do
				port=$((port + 1))
				env=
				[ $v = handover ] && env=ODL_TB5_RCCL_CALLER_REAP=0
				out=$(plugin_lat $port "$env") || fail "plugin latency run${env:+ ($env)} failed"
				for n in ${lat_sizes//,/ }; do
					j=$(echo "$out" | grep "^{\"size\":$n,") || fail "plugin latency: no line for $n B"
					if [ $v = reap ]; then
						res[lpp$n]+="$(lat_field "$j" pingpong p50_us) "
						res[lpp99$n]+="$(lat_field "$j" pingpong p99_us) "
						res[lar$n]+="$(lat_field "$j" allreduce p50_us) "
						res[lar99$n]+="$(lat_field "$j" allreduce p99_us) "
						echo "bench/rccl.sh: round $r plugin latency $n B: ping-pong one-way p50 $(last "${res[lpp$n]}") us (p99 $(last "${res[lpp99$n]}")), all-reduce p50 $(last "${res[lar$n]}") us (p99 $(last "${res[lar99$n]}"))"
					else
						res[lho$n]+="$(lat_field "$j" pingpong p50_us) "
						res[lhoar$n]+="$(lat_field "$j" allreduce p50_us) "
						echo "bench/rccl.sh: round $r plugin latency $n B, progress thread hands over (ODL_TB5_RCCL_CALLER_REAP=0): ping-pong one-way p50 $(last "${res[lho$n]}") us, all-reduce p50 $(last "${res[lhoar$n]}") us"
					fi
				done
			done
		fi
		if [ $bw = 0 ]; then
			:
		elif [ $what = raw ]; then
			j=$(raw bandwidth) || fail "raw bandwidth run failed"
			res[raw]+="$(json_field "$j" rx_bw_gbps) "
			res[raw_tx]+="$(json_field "$j" bw_avg_gbps) "
			j=$(raw mimo --streams 1) || fail "raw mimo (1 stream) run failed"
			res[bidir1]+="$(per_dir "$j") "
			res[busy_raw]+="$(json_field "$j" guest_busy_pct) "
			j=$(raw mimo --streams 4 --iterations $((bytes >> 22))) || fail "raw mimo (4 streams) run failed"
			res[bidir4]+="$(per_dir "$j") "
			b1=$(last "${res[bidir1]}"); b4=$(last "${res[bidir4]}")
			res[bidir]+="$(awk -v a="$b1" -v b="$b4" 'BEGIN { print (a > b) ? a : b }') "
			echo "bench/rccl.sh: round $r raw: one-way rx $(last "${res[raw]}") Gb/s (client $(last "${res[raw_tx]}")), bidirectional per direction $b1 (1 stream; guest a busy $(last "${res[busy_raw]}") %) / $b4 (4 streams) Gb/s"
		else
			for s in "${slices[@]}"; do
				port=$((port + 1))
				j=$(plugin "$s" $port) || fail "plugin all-reduce (slice $s) failed"
				res[p$s]+="$(json_field "$j" busbw_avg_gbps) "
				res[cpu$s]+="$(json_field "$j" cpu_s_avg) "
				res[red$s]+="$(json_field "$j" reduce_s_avg) "
				# guest a busy during the timed iterations: busy s / iteration s
				res[busy$s]+="$(awk -v b="$(json_field "$j" busy_s_avg)" -v g="$(json_field "$j" busbw_avg_gbps)" -v n="$bytes" \
					'BEGIN { printf "%.0f", b < 0 ? -1 : 100 * b / (n * 8 / (g * 1e9)) }') "
				echo "bench/rccl.sh: round $r plugin all-reduce slice $s: busbw $(json_field "$j" busbw_avg_gbps) Gb/s (rank 0 per iteration: process CPU $(json_field "$j" cpu_s_avg) s, reducing $(json_field "$j" reduce_s_avg) s; guest a busy $(last "${res[busy$s]}") %)"
			done
			s=${slices[0]}
			row nop "data movement (reduction skipped)" 1 none
			row ip "in place" 1 sum "$reducer" --in-place
			row or "reducer $other_reducer" 1 sum "$other_reducer"
			[ "$channels" = 1 ] || row c1 "1 channel" 1 sum "$reducer" "--channels 1"
			plugin_env=ODL_TB5_RCCL_CALLER_REAP=0 row ho "progress thread hands over" 1
			if [ "$staged" = 1 ]; then
				row st "staged (zero copy off)" 0
				res[stcpu$s]+="$(json_field "$j" cpu_s_avg) "
			fi
		fi
	done
done

ts=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$top/bench/results"
if [ $bw = 1 ]; then
	rawm=$(median "${res[raw]}")
	rawtxm=$(median "${res[raw_tx]}")
	b1m=$(median "${res[bidir1]}")
	b4m=$(median "${res[bidir4]}")
	bidm=$(awk -v a="$b1m" -v b="$b4m" 'BEGIN { print (a > b) ? a : b }')
	head=${slices[0]}
	plm=$(median "${res[p$head]}")
	ratio=$(div "$plm" "$bidm")
	ratio1=$(div "$plm" "$rawm")
	rr=$(round_ratios "${res[p$head]}" "${res[bidir]}")
	out=$top/bench/results/rccl-allreduce-$ts
	{
		echo "OdinLink RCCL/NCCL net plugin bench $ts ($(nproc) host cores, load $(cut -d' ' -f1-3 /proc/loadavg), TCG guests $smp vCPU ($(va sh -c 'grep -m1 "model name" /proc/cpuinfo' | sed 's/.*: //')${cpu:+, -cpu $cpu}) / 1 GiB, kernel $(va uname -r), clocksource $(guest_clock))"
		echo "all-reduce: 2 ranks (one per VM), int32 sum (reducer: $reducer), $size MiB over $channels channels, $iters timed iterations per run after a warm-up, all verified; $rounds rounds; medians"
		printf '%-58s %10s  %s\n' path "median" "rounds (Gb/s)"
		printf '%-58s %10s  %s\n' "odl_tb5_cli bandwidth a->b, 1 MiB msgs (receiver rate)" "$rawm" "${res[raw]}"
		printf '%-58s %10s  %s\n' "odl_tb5_cli bandwidth a->b (client rate)" "$rawtxm" "${res[raw_tx]}"
		printf '%-58s %10s  %s\n' "odl_tb5_cli mimo, both directions, per direction, 1 stream" "$b1m" "${res[bidir1]}"
		printf '%-58s %10s  %s\n' "odl_tb5_cli mimo, both directions, per direction, 4 streams" "$b4m" "${res[bidir4]}"
		for s in "${slices[@]}"; do
			printf '%-58s %10s  %s\n' "plugin all-reduce busbw, slice $((s >> 10)) KiB" "$(median "${res[p$s]}")" "${res[p$s]}"
		done
		printf '%-58s %10s  %s\n' "plugin all-reduce busbw, slice $((head >> 10)) KiB, in place" "$(median "${res[ip$head]}")" "${res[ip$head]}"
		printf '%-58s %10s  %s\n' "plugin all-reduce busbw, slice $((head >> 10)) KiB, reducer $other_reducer" "$(median "${res[or$head]}")" "${res[or$head]}"
		if [ "$channels" != 1 ]; then
			printf '%-58s %10s  %s\n' "plugin all-reduce busbw, slice $((head >> 10)) KiB, 1 channel" "$(median "${res[c1$head]}")" "${res[c1$head]}"
		fi
		printf '%-58s %10s  %s\n' "plugin all-reduce busbw, slice $((head >> 10)) KiB, hand-over" "$(median "${res[ho$head]}")" "${res[ho$head]}"
		if [ "$staged" = 1 ]; then
			printf '%-58s %10s  %s\n' "plugin all-reduce busbw, slice $((head >> 10)) KiB, staged" "$(median "${res[st$head]}")" "${res[st$head]}"
		fi
		printf '%-58s %10s  %s\n' "plugin all-reduce data movement, no reduction, $((head >> 10)) KiB" "$(median "${res[nop$head]}")" "${res[nop$head]}"
		echo "RATIO plugin all-reduce busbw (slice $((head >> 10)) KiB) / bidirectional raw per direction: $ratio (target >= 0.9)"
		echo "  per round (same round's raw): $rr"
		echo "  against one-way raw: $ratio1"
		echo "RATIO plugin all-reduce in place (slice $((head >> 10)) KiB) / bidirectional raw: $(div "$(median "${res[ip$head]}")" "$bidm") (per round: $(round_ratios "${res[ip$head]}" "${res[bidir]}"))"
		echo "RATIO plugin all-reduce, reducer $other_reducer (slice $((head >> 10)) KiB) / bidirectional raw: $(div "$(median "${res[or$head]}")" "$bidm") (per round: $(round_ratios "${res[or$head]}" "${res[bidir]}"))"
		if [ "$channels" != 1 ]; then
			echo "RATIO plugin all-reduce, 1 channel (slice $((head >> 10)) KiB) / bidirectional raw: $(div "$(median "${res[c1$head]}")" "$bidm") (per round: $(round_ratios "${res[c1$head]}" "${res[bidir]}"))"
		fi
		echo "RATIO plugin all-reduce, progress thread hands over (ODL_TB5_RCCL_CALLER_REAP=0; slice $((head >> 10)) KiB) / bidirectional raw: $(div "$(median "${res[ho$head]}")" "$bidm") (per round: $(round_ratios "${res[ho$head]}" "${res[bidir]}")); caller reaps / hands over: $(div "$plm" "$(median "${res[ho$head]}")") (per round: $(round_ratios "${res[p$head]}" "${res[ho$head]}"))"
		echo "RATIO plugin transport (all-reduce data movement, reduction skipped) / bidirectional raw: $(div "$(median "${res[nop$head]}")" "$bidm") (per round: $(round_ratios "${res[nop$head]}" "${res[bidir]}"))"
		echo "  guest a busy (% of the time): raw mimo 1 stream (client run) ${res[busy_raw]}; plugin all-reduce (timed iterations) ${res[busy$head]}"
		if [ "$staged" = 1 ]; then
			echo "  zero copy vs staged (slice $((head >> 10)) KiB, same rounds): $(div "$plm" "$(median "${res[st$head]}")") (per round: $(round_ratios "${res[p$head]}" "${res[st$head]}")); staged vs bidirectional raw $(div "$(median "${res[st$head]}")" "$bidm"); rank 0 process CPU per iteration staged ${res[stcpu$head]}s"
		fi
		for s in "${slices[@]}"; do
			echo "  slice $((s >> 10)) KiB: vs bidirectional $(div "$(median "${res[p$s]}")" "$bidm") (per round: $(round_ratios "${res[p$s]}" "${res[bidir]}")), vs one-way $(div "$(median "${res[p$s]}")" "$rawm"); rank 0 per iteration: process CPU ${res[cpu$s]}s, reducing ${res[red$s]}s"
		done
	} | tee "$out.txt"
	# per_slice NAME KEY: ' "NAME":{"<slice>":[<rounds>],...},' from res[KEY<slice>]
	per_slice() {
		local s sep=
		printf ' "%s":{' "$1"
		for s in "${slices[@]}"; do printf '%s"%s":[%s]' "$sep" "$s" "$(arr "${res[$2$s]}")"; sep=,; done
		printf '},\n'
	}
	{
		printf '{"timestamp":"%s","size_mib":%s,"rounds":%s,"iters":%s,"host_cores":%s,"cpu":"%s","smp":%s,"reducer":"%s","channels":%s,"clocksource":"%s",\n' "$ts" "$size" "$rounds" "$iters" "$(nproc)" "${cpu:-default}" "$smp" "$reducer" "$channels" "$(guest_clock)"
		printf ' "raw_rx_gbps":[%s],"raw_client_gbps":[%s],"raw_bidir1_per_dir_gbps":[%s],"raw_bidir4_per_dir_gbps":[%s],\n' \
			"$(arr "${res[raw]}")" "$(arr "${res[raw_tx]}")" "$(arr "${res[bidir1]}")" "$(arr "${res[bidir4]}")"
		per_slice plugin_busbw_gbps p
		per_slice plugin_cpu_s cpu
		per_slice plugin_reduce_s red
		per_slice plugin_guest_a_busy_pct busy
		printf ' "raw_bidir1_guest_a_busy_pct":[%s],\n' "$(arr "${res[busy_raw]}")"
		printf ' "plugin_inplace_busbw_gbps":[%s],"ratio_inplace":%s,\n' "$(arr "${res[ip$head]}")" "$(div "$(median "${res[ip$head]}")" "$bidm")"
		printf ' "plugin_other_reducer":"%s","plugin_other_reducer_busbw_gbps":[%s],"ratio_other_reducer":%s,\n' "$other_reducer" "$(arr "${res[or$head]}")" "$(div "$(median "${res[or$head]}")" "$bidm")"
		if [ "$channels" != 1 ]; then
			printf ' "plugin_1ch_busbw_gbps":[%s],"ratio_1ch":%s,\n' "$(arr "${res[c1$head]}")" "$(div "$(median "${res[c1$head]}")" "$bidm")"
		fi
		printf ' "plugin_handover_busbw_gbps":[%s],"ratio_handover":%s,\n' "$(arr "${res[ho$head]}")" "$(div "$(median "${res[ho$head]}")" "$bidm")"
		printf ' "plugin_staged_busbw_gbps":[%s],"plugin_staged_cpu_s":[%s],\n' "$(arr "${res[st$head]:-}")" "$(arr "${res[stcpu$head]:-}")"
		printf ' "plugin_noreduce_busbw_gbps":[%s],"ratio_transport":%s,\n' "$(arr "${res[nop$head]}")" "$(div "$(median "${res[nop$head]}")" "$bidm")"
		printf ' "median":{"raw":%s,"raw_client":%s,"bidir1":%s,"bidir4":%s,"bidir":%s,"plugin":%s},"headline_slice":%s,\n' \
			"$rawm" "$rawtxm" "$b1m" "$b4m" "$bidm" "$plm" "$head"
		printf ' "ratio":%s,"ratio_per_round":[%s],"ratio_one_way":%s}\n' "$ratio" "$(arr "$rr")" "$ratio1"
	} > "$out.json"
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out.json" || echo "bench/rccl.sh: warning: JSON not valid" >&2
	# one run cannot tell 0.89 from 0.91 here: every recorded run made the
	# same way, pooled, with the 95 % interval of the mean
	{
		echo "HISTORY (bench/rccl_history.py: the runs in bench/results made the way this one was)"
		python3 "$top/bench/rccl_history.py" --dir "$top/bench/results" ||
			echo "bench/rccl.sh: warning: bench/rccl_history.py failed" >&2
	} | tee -a "$out.txt"
	echo "bench/rccl.sh: saved $out.txt and $out.json"
fi

if [ $lat = 1 ]; then
	out=$top/bench/results/rccl-latency-$ts
	{
		echo "OdinLink RCCL/NCCL net plugin latency $ts ($(nproc) host cores, load $(cut -d' ' -f1-3 /proc/loadavg), TCG guests $smp vCPU ($(va sh -c 'grep -m1 "model name" /proc/cpuinfo' | sed 's/.*: //')${cpu:+, -cpu $cpu}) / 1 GiB, kernel $(va uname -r), clocksource $(guest_clock))"
		echo "one-way latency (round trip / 2) of a ping-pong, $lat_iters messages per size and round after a warm-up, every message verified; $rounds rounds; medians of the rounds' p50 (us)"
		printf '%-10s %12s %14s %8s %16s %10s  %s\n' size "raw p50" "plugin p50" ratio "all-reduce p50" "/ 2 raw" "per round: plugin/raw"
		for n in ${lat_sizes//,/ }; do
			rl=$(median "${res[lraw$n]}"); pl=$(median "${res[lpp$n]}"); al=$(median "${res[lar$n]}")
			printf '%-10s %12s %14s %8s %16s %10s  %s\n' "$n B" "$rl" "$pl" "$(div "$pl" "$rl")" "$al" \
				"$(awk -v a="$al" -v b="$rl" 'BEGIN { printf "%.2f", a / (2 * b) }')" "$(round_ratios "${res[lpp$n]}" "${res[lraw$n]}")"
		done
		echo "A/B: test() reaping the device in the caller (the default) against the progress thread handing completions over (ODL_TB5_RCCL_CALLER_REAP=0), same rounds"
		printf '%-10s %14s %14s %8s %16s %16s %8s\n' size "reap p50" "hand-over p50" ratio "all-red. reap" "all-red. hand" ratio
		for n in ${lat_sizes//,/ }; do
			pl=$(median "${res[lpp$n]}"); hl=$(median "${res[lho$n]}")
			al=$(median "${res[lar$n]}"); hal=$(median "${res[lhoar$n]}")
			printf '%-10s %14s %14s %8s %16s %16s %8s  per round (ping-pong): %s\n' "$n B" "$pl" "$hl" "$(div "$pl" "$hl")" \
				"$al" "$hal" "$(div "$al" "$hal")" "$(round_ratios "${res[lpp$n]}" "${res[lho$n]}")"
		done
		echo "rounds (us):"
		for n in ${lat_sizes//,/ }; do
			echo "  $n B: raw p50 ${res[lraw$n]}/ p99 ${res[lraw99$n]}"
			echo "  $n B: plugin ping-pong p50 ${res[lpp$n]}/ p99 ${res[lpp99$n]}"
			echo "  $n B: plugin all-reduce p50 ${res[lar$n]}/ p99 ${res[lar99$n]}"
			echo "  $n B: hand-over ping-pong p50 ${res[lho$n]}/ all-reduce p50 ${res[lhoar$n]}"
		done
	} | tee "$out.txt"
	{
		printf '{"timestamp":"%s","rounds":%s,"iters":%s,"host_cores":%s,"cpu":"%s","smp":%s,"clocksource":"%s","sizes":{' "$ts" "$rounds" "$lat_iters" "$(nproc)" "${cpu:-default}" "$smp" "$(guest_clock)"
		sep=
		for n in ${lat_sizes//,/ }; do
			printf '%s\n "%s":{"raw_p50_us":[%s],"raw_p99_us":[%s],"plugin_pingpong_p50_us":[%s],"plugin_pingpong_p99_us":[%s],"plugin_allreduce_p50_us":[%s],"plugin_allreduce_p99_us":[%s],"ratio_pingpong":%s,"handover_pingpong_p50_us":[%s],"handover_allreduce_p50_us":[%s],"ratio_reap_handover":%s}' \
				"$sep" "$n" "$(arr "${res[lraw$n]}")" "$(arr "${res[lraw99$n]}")" "$(arr "${res[lpp$n]}")" "$(arr "${res[lpp99$n]}")" \
				"$(arr "${res[lar$n]}")" "$(arr "${res[lar99$n]}")" "$(div "$(median "${res[lpp$n]}")" "$(median "${res[lraw$n]}")")" \
				"$(arr "${res[lho$n]}")" "$(arr "${res[lhoar$n]}")" "$(div "$(median "${res[lpp$n]}")" "$(median "${res[lho$n]}")")"
			sep=,
		done
		printf '}}\n'
	} > "$out.json"
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out.json" || echo "bench/rccl.sh: warning: JSON not valid" >&2
	# per size, every recorded latency run made the same way, pooled
	{
		echo "HISTORY (bench/rccl_history.py --latency: the latency runs in bench/results made the way this one was)"
		python3 "$top/bench/rccl_history.py" --latency --dir "$top/bench/results" ||
			echo "bench/rccl.sh: warning: bench/rccl_history.py --latency failed" >&2
	} | tee -a "$out.txt"
	echo "bench/rccl.sh: saved $out.txt and $out.json"
fi
