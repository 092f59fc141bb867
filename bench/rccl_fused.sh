#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fused-device benchmark of the RCCL/NCCL net plugin: two VMs cabled twice
# (vmpair up --links 2, a controller per cable on each side), the all-reduce
# over the plugin's fused device (makeVDevice: every message cut in two, a
# part per cable) against raw odl_tb5_cli over both cables at once, and
# against the plugin's other ways to use the cables, in the same run (the
# order of the runs rotates from round to round).
#
#   bench/rccl_fused.sh [--size MiB] [--rounds N] [--iters N] [--cpu MODEL]
#
# Per round:
#   raw2   odl_tb5_cli --test mimo --streams 1 on both cables at once
#          (SIZE MiB each way on each, 1 MiB messages, --no-verify); per
#          cable the rate per direction, min(tx, rx); the two added up
#   raw1   the same on cable 0 alone
#   fused  netconf.static --rails 2 --fuse --bench: two-rank ring all-reduce
#          (int32 sum, reducer thread, 2 channels, 4 MiB slices) of SIZE MiB
#          over the fused device, ITERS timed iterations after a warm-up,
#          every result verified; busbw = S / t (two ranks)
#   rails  netconf.static --rails 2 --bench: the same with a channel on each
#          cable (two NICs, as NCCL without fusion)
#   one    netconf.static --bench on cable 0 alone (each side's plugin given
#          only the device whose peer is the other side's cable-0 controller)
# Ratios (medians; per round against the same round's figures):
#   fused / raw2  what the plugin keeps of two cables (the single-cable
#                 bench's target, 0.9, applies)
#   fused / rails fusion against a channel per cable
#   fused / one   what the second cable adds
#   rails / raw2, one / raw1
# --cpu MODEL: QEMU -cpu for the guests (default BENCH_CPU_MODEL of
# harness/scenarios/common.sh, as bench/rccl.sh; "default": QEMU's own).
# Results: bench/results/rccl-fused-<UTC>.{txt,json}.
# Needs `make driver userlib rccl`. VMPAIR_STATE defaults to
# build/bench/rccl-fused-pair.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
size=64
rounds=4
iters=3
cpu=
while [ $# -gt 0 ]; do
	case $1 in
	--size) size=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--cpu) cpu=$2; shift 2 ;;
	-h|--help) sed -n '3,/^# build\/bench/p' "$0"; exit 0 ;;
	*) echo "bench/rccl_fused.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
for v in "$size" "$rounds" "$iters"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "bench/rccl_fused.sh: --size, --rounds and --iters take positive integers" >&2; exit 2; }
done
export VMPAIR_STATE=${VMPAIR_STATE:-$top/build/bench/rccl-fused-pair}
. "$top/harness/scenarios/common.sh"
. "$top/harness/scenarios/odl-lib.sh"
. "$here/rccl-lib.sh"
bench_init bench/rccl_fused.sh

echo "bench/rccl_fused.sh: booting the pair (two usb4-nhi cables, virtio-net for the out-of-band channel)"
bench_boot --links 2
# both domains list their XDomain before the driver loads (odl-multilink)
xdomain_on_both_links a && xdomain_on_both_links b ||
	fail "the guests do not see each other on both cables"
bench_guests
for v in a b; do
	odl_both_links_up $v || fail "$v: two odl_tb5 devices did not connect"
done
wait_for "va ping -c 1 -W 2 198.51.100.2" 60 || fail "virtio-net path does not ping"
# ua[K], ub[K]: the UUID of a's and b's controller on cable K; each side
# opens its end of cable K by the other side's UUID
declare -a ua ub
for k in 0 1; do
	ua[k]=$(ctl_uuid a $k) && ub[k]=$(ctl_uuid b $k) ||
		fail "no controller UUID for cable $k"
done

# raw CABLE...: odl_tb5_cli mimo on the given cables at once (a server on
# b per cable, the clients on a started together); prints each client's
# JSON, one line per cable in the order given
raw() {
	local k cmd=
	for k in "$@"; do
		vb sh -c "rm -f /tmp/srv$k.out; setsid /tmp/odl_tb5_cli --server --device ${ua[k]} > /tmp/srv$k.out 2>&1 < /dev/null &" ||
			return 1
	done
	for k in "$@"; do
		wait_for "vb grep -q 'waiting for a client' /tmp/srv$k.out" 60 || { vb cat "/tmp/srv$k.out" >&2; return 1; }
		cmd+="/tmp/odl_tb5_cli --client --device ${ub[k]} --json --test mimo --streams 1 --size 1M --iterations $((bytes >> 20)) --no-verify > /tmp/cli$k.out 2>&1 & "
	done
	va sh -c "$cmd wait" || return 1
	wait_for "vb sh -c '! pidof odl_tb5_cli'" 60 || { vb sh -c 'cat /tmp/srv*.out' >&2; return 1; }
	for k in "$@"; do
		va grep '^{' "/tmp/cli$k.out" || { va cat "/tmp/cli$k.out" >&2; return 1; }
	done
}
# plugin PORT ENV_A ENV_B ARGS: an all-reduce benchmark; prints rank 0's
# bench JSON
plugin() {
	local out
	out=$(netconf_ranks nf.out "$1" "$2" "--bench $bytes --iters $iters --slice 4194304 --reducer thread --channels 2 --deadline 300 $4" "$3") ||
		return 1
	printf '%s\n' "$out" | sed -n 's/^# bench //p' | grep '^{'
}

declare -A res=()
port=29700
kinds=(raw2 raw1 fused rails one)
for r in $(seq 1 "$rounds"); do
	# rotate the order: each kind goes first in some round
	order=("${kinds[@]:$(((r - 1) % 5))}" "${kinds[@]:0:$(((r - 1) % 5))}")
	for kind in "${order[@]}"; do
		port=$((port + 1))
		case $kind in
		raw2)
			j=$(raw 0 1) || fail "raw mimo on both cables failed"
			v=$(awk '{ s += $1 } END { print s }' <<<"$(while read -r l; do per_dir "$l"; done <<<"$j")")
			;;
		raw1)
			j=$(raw 0) || fail "raw mimo on cable 0 failed"
			v=$(per_dir "$j")
			;;
		fused)
			j=$(plugin $port "" "" "--rails 2 --fuse") || fail "all-reduce over the fused device failed"
			v=$(json_field "$j" busbw_avg_gbps)
			;;
		rails)
			j=$(plugin $port "" "" "--rails 2") || fail "all-reduce with a channel per cable failed"
			v=$(json_field "$j" busbw_avg_gbps)
			;;
		one)
			j=$(plugin $port "ODL_TB5_DEVICE=${ub[0]}" "ODL_TB5_DEVICE=${ua[0]}" "") ||
				fail "all-reduce over cable 0 failed"
			v=$(json_field "$j" busbw_avg_gbps)
			;;
		esac
		res[$kind]+="$v "
		echo "bench/rccl_fused.sh: round $r $kind: $v Gb/s"
	done
done

ts=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$top/bench/results"
out=$top/bench/results/rccl-fused-$ts
declare -A med=()
for k in "${kinds[@]}"; do med[$k]=$(median "${res[$k]}"); done
label() {
	case $1 in
	raw2) echo "odl_tb5_cli mimo, both cables at once, per direction (sum)" ;;
	raw1) echo "odl_tb5_cli mimo, cable 0, per direction" ;;
	fused) echo "plugin all-reduce busbw, fused device (both cables)" ;;
	rails) echo "plugin all-reduce busbw, a channel per cable" ;;
	one) echo "plugin all-reduce busbw, cable 0 alone" ;;
	esac
}
ratio() { # A B: median ratio and the per-round ones
	echo "$(div "${med[$1]}" "${med[$2]}") (per round: $(round_ratios "${res[$1]}" "${res[$2]}"))"
}
{
	echo "OdinLink net plugin fused-device bench $ts ($(nproc) host cores, load $(cut -d' ' -f1-3 /proc/loadavg), TCG guests 1 vCPU ($(va sh -c 'grep -m1 "model name" /proc/cpuinfo' | sed 's/.*: //')${cpu:+, -cpu $cpu}) / 1 GiB, kernel $(va uname -r), clocksource $(guest_clock), two cables)"
	echo "all-reduce: 2 ranks (one per VM), int32 sum (reducer thread), $size MiB over 2 channels, 4 MiB slices, $iters timed iterations per run after a warm-up, all verified; $rounds rounds, order rotating; medians"
	printf '%-58s %10s  %s\n' path median "rounds (Gb/s)"
	for k in "${kinds[@]}"; do printf '%-58s %10s  %s\n' "$(label $k)" "${med[$k]}" "${res[$k]}"; done
	echo "RATIO fused / both cables raw: $(ratio fused raw2) (target >= 0.9)"
	echo "RATIO fused / a channel per cable: $(ratio fused rails)"
	echo "RATIO fused / cable 0 alone: $(ratio fused one)"
	echo "RATIO a channel per cable / both cables raw: $(ratio rails raw2)"
	echo "RATIO cable 0 alone / cable 0 raw: $(ratio one raw1)"
} | tee "$out.txt"
{
	printf '{"timestamp":"%s","size_mib":%s,"rounds":%s,"iters":%s,"host_cores":%s,"cpu":"%s","clocksource":"%s"' \
		"$ts" "$size" "$rounds" "$iters" "$(nproc)" "${cpu:-default}" "$(guest_clock)"
	for k in "${kinds[@]}"; do printf ',"%s_gbps":[%s]' "$k" "$(arr "${res[$k]}")"; done
	printf ',"ratio_fused_raw2":%s,"ratio_fused_rails":%s,"ratio_fused_one":%s}\n' \
		"$(div "${med[fused]}" "${med[raw2]}")" "$(div "${med[fused]}" "${med[rails]}")" \
		"$(div "${med[fused]}" "${med[one]}")"
} > "$out.json"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out.json" || fail "$out.json is not JSON"
echo "bench/rccl_fused.sh: results in $out.{txt,json}"
