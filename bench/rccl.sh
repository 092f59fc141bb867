#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# RCCL/NCCL net plugin benchmark: all-reduce bus bandwidth over the plugin
# between the two VMs against odl_tb5_cli's raw bandwidth over the same
# driver, measured in the same run (rounds alternate which goes first).
#
#   bench/rccl.sh [--size MiB] [--rounds N] [--iters N] [--slice BYTES]...
#
# Per round:
#   raw        odl_tb5_cli --test bandwidth, SIZE MiB in 1 MiB messages a->b,
#              --no-verify; reference = the receiver's rate (rx_bw_gbps: bytes
#              delivered / time, as the all-reduce counts delivered bytes)
#   raw-bidir  odl_tb5_cli --test mimo --streams 1 (both directions at once),
#              per-direction rate, for information
#   plugin     netconf.static --bench: two-rank ring all-reduce (int32 sum) of
#              SIZE MiB over the plugin (ncclNetPlugin_v10 table), ITERS timed
#              iterations after a warm-up, every result verified; one run per
#              --slice (default 4 MiB and 512 KiB; the first is the headline).
#              busbw = S * 2(n-1)/n / t = S / t for two ranks (nccl-tests).
# Ratio = median plugin busbw / median raw bandwidth (target >= 0.9).
# Results: bench/results/rccl-allreduce-<UTC>.{txt,json}.
# Needs `make driver userlib rccl`. VMPAIR_STATE defaults to build/bench/rccl-pair.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
size=64
rounds=3
iters=2
slices=()
while [ $# -gt 0 ]; do
	case $1 in
	--size) size=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--slice) slices+=("$2"); shift 2 ;;
	-h|--help) sed -n '3,24p' "$0"; exit 0 ;;
	*) echo "bench/rccl.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ ${#slices[@]} -gt 0 ] || slices=(4194304 524288)
export VMPAIR_STATE=${VMPAIR_STATE:-$top/build/bench/rccl-pair}
. "$top/harness/scenarios/common.sh"
. "$top/harness/scenarios/odl-lib.sh"
TAP_AUTO_EVIDENCE=0
TAP_EXEC_TIMEOUT=600
CLI=$top/build/userlib/odl_tb5_cli.static
NETCONF=$top/build/rccl/netconf.static
bytes=$((size << 20))

fail() { echo "bench/rccl.sh: $*" >&2; evidence >&2; exit 1; }
for f in "$ODL_KO" "$ODL_XFER" "$CLI" "$NETCONF"; do
	[ -f "$f" ] || { echo "bench/rccl.sh: $f missing: run 'make driver userlib rccl'" >&2; exit 1; }
done

echo "bench/rccl.sh: booting the pair (usb4-nhi cable for odl_tb5, virtio-net for the out-of-band channel)"
out=$("$VMPAIR" up --virtio-net --no-cable-trace --mem 1024 2>&1) || fail "vmpair up failed: $out"
tap_cleanup pair_down
for v in a b; do
	odl_put $v && "$VMPAIR" put $v "$CLI" /tmp/odl_tb5_cli --mode 755 >/dev/null &&
		"$VMPAIR" put $v "$NETCONF" /tmp/netconf --mode 755 >/dev/null &&
		odl_load $v || fail "cannot set up $v"
	[ $v = a ] && ip=198.51.100.1 || ip=198.51.100.2
	vm $v sh -c "ip link set eth0 up && ip addr add $ip/24 dev eth0" || fail "eth0 setup on $v"
done
odl_wait_connected a 90 && odl_wait_connected b 90 || fail "odl_tb5 did not connect"
wait_for "va ping -c 1 -W 2 198.51.100.2" 60 || fail "virtio-net path does not ping"

json_field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

# raw TEST: one odl_tb5_cli run (server on b); prints the client's JSON
raw() {
	local test=$1 j
	vb sh -c 'rm -f /tmp/srv.out; setsid /tmp/odl_tb5_cli --server --device 0 --json > /tmp/srv.out 2>&1 < /dev/null &' || return 1
	sleep 1
	j=$(va /tmp/odl_tb5_cli --client --device 0 --test "$test" --size 1M \
		--iterations $((bytes >> 20)) --no-verify --json 2>&1 | grep '^{') || return 1
	wait_for "vb sh -c '! pidof odl_tb5_cli'" 30 || return 1
	echo "$j"
}

# plugin SLICE PORT: all-reduce benchmark; prints rank 0's bench JSON
plugin() {
	local slice=$1 port=$2 args out
	args="--bench $bytes --iters $iters --slice $slice --deadline 300"
	va sh -c "rm -f /tmp/nb.out; setsid sh -c '/tmp/netconf --rank 0 --oob-listen $port $args; echo netconf-exit=\$?' > /tmp/nb.out 2>&1 < /dev/null &" || return 1
	out=$(vb /tmp/netconf --rank 1 --oob-connect 198.51.100.1:"$port" $args 2>&1) || { echo "$out" >&2; return 1; }
	wait_for "va grep -q netconf-exit=0 /tmp/nb.out" 60 || { va cat /tmp/nb.out >&2; return 1; }
	va cat /tmp/nb.out | sed -n 's/^# bench //p' | grep '^{'
}

declare -A res=()   # key -> space-separated Gb/s values
port=29600
for r in $(seq 1 "$rounds"); do
	order="raw plugin"
	[ $((r % 2)) = 0 ] && order="plugin raw"
	for what in $order; do
		if [ $what = raw ]; then
			j=$(raw bandwidth) || fail "raw bandwidth run failed"
			res[raw]+="$(json_field "$j" rx_bw_gbps) "
			res[raw_tx]+="$(json_field "$j" bw_avg_gbps) "
			j=$(raw mimo) || fail "raw mimo run failed"
			res[bidir]+="$(python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(min(j["tx_gbps"], j["rx_gbps"]))' "$j") "
			echo "bench/rccl.sh: round $r raw: rx $(echo ${res[raw]} | awk '{print $NF}') Gb/s (client $(echo ${res[raw_tx]} | awk '{print $NF}')), bidirectional per direction $(echo ${res[bidir]} | awk '{print $NF}') Gb/s"
		else
			for s in "${slices[@]}"; do
				port=$((port + 1))
				j=$(plugin "$s" $port) || fail "plugin all-reduce (slice $s) failed"
				res[p$s]+="$(json_field "$j" busbw_avg_gbps) "
				echo "bench/rccl.sh: round $r plugin all-reduce slice $s: busbw $(json_field "$j" busbw_avg_gbps) Gb/s"
			done
		fi
	done
done

median() { printf '%s\n' $1 | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
rawm=$(median "${res[raw]}")
rawtxm=$(median "${res[raw_tx]}")
bidm=$(median "${res[bidir]}")
head=${slices[0]}
plm=$(median "${res[p$head]}")
ratio=$(awk -v a="$plm" -v b="$rawm" 'BEGIN { printf "%.2f", a / b }')
ts=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$top/bench/results"
out=$top/bench/results/rccl-allreduce-$ts
{
	echo "OdinLink RCCL/NCCL net plugin bench $ts ($(nproc) host cores, load $(cut -d' ' -f1-3 /proc/loadavg), TCG guests 1 vCPU / 1 GiB, kernel $(va uname -r))"
	echo "all-reduce: 2 ranks (one per VM), int32 sum, $size MiB, $iters timed iterations per run after a warm-up, all verified; $rounds rounds; medians"
	printf '%-58s %10s  %s\n' path "median" "rounds (Gb/s)"
	printf '%-58s %10s  %s\n' "odl_tb5_cli bandwidth a->b, 1 MiB msgs (receiver rate)" "$rawm" "${res[raw]}"
	printf '%-58s %10s  %s\n' "odl_tb5_cli bandwidth a->b (client rate)" "$rawtxm" "${res[raw_tx]}"
	printf '%-58s %10s  %s\n' "odl_tb5_cli mimo, both directions, per direction" "$bidm" "${res[bidir]}"
	for s in "${slices[@]}"; do
		printf '%-58s %10s  %s\n' "plugin all-reduce busbw, slice $((s >> 10)) KiB" "$(median "${res[p$s]}")" "${res[p$s]}"
	done
	echo "ratio plugin all-reduce busbw (slice $((head >> 10)) KiB) / raw bandwidth: $ratio (target >= 0.9)"
	for s in "${slices[@]}"; do
		echo "  slice $((s >> 10)) KiB: vs raw $(awk -v a="$(median "${res[p$s]}")" -v b="$rawm" 'BEGIN { printf "%.2f", a / b }'), vs bidirectional per direction $(awk -v a="$(median "${res[p$s]}")" -v b="$bidm" 'BEGIN { printf "%.2f", a / b }')"
	done
} | tee "$out.txt"
{
	printf '{"timestamp":"%s","size_mib":%s,"rounds":%s,"iters":%s,"host_cores":%s,\n' "$ts" "$size" "$rounds" "$iters" "$(nproc)"
	printf ' "raw_rx_gbps":[%s],"raw_client_gbps":[%s],"raw_bidir_per_dir_gbps":[%s],\n' \
		"$(echo ${res[raw]} | tr ' ' ,)" "$(echo ${res[raw_tx]} | tr ' ' ,)" "$(echo ${res[bidir]} | tr ' ' ,)"
	printf ' "plugin_busbw_gbps":{'
	sep=
	for s in "${slices[@]}"; do printf '%s"%s":[%s]' "$sep" "$s" "$(echo ${res[p$s]} | tr ' ' ,)"; sep=,; done
	printf '},\n "median":{"raw":%s,"raw_client":%s,"bidir":%s,"plugin":%s},"headline_slice":%s,"ratio":%s}\n' \
		"$rawm" "$rawtxm" "$bidm" "$plm" "$head" "$ratio"
} > "$out.json"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out.json" || echo "bench/rccl.sh: warning: JSON not valid" >&2
echo "bench/rccl.sh: saved $out.txt and $out.json"
