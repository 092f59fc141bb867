#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# net-plugin: the RCCL/NCCL net plugin (rccl/) across the two VMs over
# odl_tb5. Both guests load the driver; the conformance harness runs one rank
# per guest with the plugin on /dev/odl_tb5_0 (found by the plugin's own
# discovery): table checks, properties of the kernel device, bad calls,
# handshakes in both orders, sizes 0 B .. 64 MiB (registered buffers up to
# the library's message size go zero copy: keyed receives straight into the
# receiver's buffer from the sender's pinned one; the rest, and unregistered
# buffers, in 256 KiB staged chunks), grouped receives n = 1..8, profiler
# events (v10+: every event checked by netconf's callback), saturation,
# truncation, regMrDmaBuf with DMA-bufs of the test exporter (odl_dmabuf_exp.ko;
# on 6.12 the kernel's DMA-BUF system heap instead:
# zero copy through the driver's import, staged through the plugin's mapping,
# NCCL_PTR_DMABUF advertised), 4 comms from 4 threads, close orders, then a ring all-reduce and
# an all-gather with verified results. Then the statistics files of both sides
# must agree (a's TX bytes = b's RX bytes and vice versa, also for the bytes
# that went zero copy, which must be a good part), the benchmark's pipelined
# all-reduce (bench/rccl.sh) runs short, out of place, in place and with the
# reductions in a thread of their own, verified, so does the latency
# benchmark's path (ping-pong and small all-reduces, 8 B to 64 KiB, every
# message checked), and the driver must count no drops or frame errors. Last, two ranks per
# machine (NCCL's one process per GPU): a's two processes take ports 78 and
# 79 by themselves, b's are given 79 and 78, so both pairs connect across
# port numbers at the same time (the shared-device sequence of netconf: bad calls,
# handshakes, sizes, grouped receives, all-reduce and all-gather, verified).
#
# The guests are busybox without a shared libc, so they run netconf.static:
# the same harness with the plugin's objects linked in (its tables taken from
# the exported ncclNetPlugin_vN symbols; the dlopen path of the real .so is
# tested on the host by `make unit-rccl`). The out-of-band channel (128-byte
# handles, barriers) is TCP over a virtio-net link between the guests
# (198.51.100.0/24, `vmpair up --virtio-net`), independent of the cable.
#
# Every run bounds each non-blocking plugin call at 2 s (--call-bound; the
# host default is 1 s: a loaded 2-core machine can take that much
# wall-clock time from a TCG vCPU in the middle of a call, and four ranks
# at once once failed a test() at 0.341 s under the old 0.25 s bound).
#
# Needs `make driver rccl`. NET_PLUGIN_API=7..12 picks the table (default:
# newest, v12); NET_PLUGIN_MAX=BYTES caps the sizes (default 64 MiB).
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
RCCL_BUILD=${RCCL_BUILD:-$SCEN_DIR/../../build/rccl}
NETCONF=$RCCL_BUILD/netconf.static
STATS=$RCCL_BUILD/odl_tb5_rccl_stats.static
API=${NET_PLUGIN_API:-}
MAX=${NET_PLUGIN_MAX:-67108864}
# the profiler events step: tables v10 and later
tap_plan $(( 33 + (${API:-12} >= 10) + (${API:-12} >= 11) ))
tap_timeout 1100
TAP_EXEC_TIMEOUT=900
odl_need_build
[ -x "$NETCONF" ] && [ -x "$STATS" ] ||
	bail_out "build/rccl/netconf.static or odl_tb5_rccl_stats.static missing: run 'make rccl'"
EXP_KO=$ODL_BUILD_DRIVER/odl_dmabuf_exp.ko
[ -f "$EXP_KO" ] || bail_out "build/driver/odl_dmabuf_exp.ko missing: run 'make driver'"

# the CPU model bench/rccl.sh uses (AVX2, which the benchmark's reduction
# takes; ERMS and 5-level paging off)
load_modules() { odl_load "$1" && vm "$1" insmod /tmp/odl_dmabuf_exp.ko; }
pair_up --virtio-net --mem 1024 --cpu "$BENCH_CPU_MODEL"
for v in a b; do
	odl_put $v && "$VMPAIR" put $v "$NETCONF" /tmp/netconf --mode 755 >/dev/null &&
		"$VMPAIR" put $v "$STATS" /tmp/rccl_stats --mode 755 >/dev/null &&
		"$VMPAIR" put $v "$EXP_KO" /tmp/odl_dmabuf_exp.ko >/dev/null ||
		bail_out "cannot copy the driver and the harness into $v"
	check "odl_tb5 and the DMA-buf test exporter load on $v" load_modules $v
done
if odl_wait_connected a 90 && odl_wait_connected b 90; then
	ok "both logged in (state connected)"
else
	not_ok "both logged in (state connected)" "$(vm a /tmp/odl_xfer info 2>&1)" "$(vm b /tmp/odl_xfer info 2>&1)"
fi
# out-of-band path: virtio-net
for v in a b; do
	[ $v = a ] && ip=198.51.100.1 || ip=198.51.100.2
	vm $v sh -c "ip link set eth0 up && ip addr add $ip/24 dev eth0" >/dev/null 2>&1
done
if wait_for "va ping -c 1 -W 2 198.51.100.2" 60; then
	ok "out-of-band path (virtio-net 198.51.100.0/24) up"
else
	not_ok "out-of-band path (virtio-net 198.51.100.0/24) up" "$(va ip addr 2>&1)"
fi

env="NETCONF_DEV=0 ODL_TB5_RCCL_PORT=78 ODL_TB5_RCCL_DMABUF=1"
# on a guest kernel with the kernel's DMA-BUF system heap (6.12) the
# DMA-bufs come from there, the exporter of real media stacks; on 6.1 from
# the test exporter
exporter=odl
kernel_at_least a 6 12 && exporter=heap
env="$env NETCONF_DMABUF_EXPORTER=$exporter"
# ranks OUT PORT LIMIT ARGS: rank 0 on a and rank 1 on b, both in the
# background, each writing its exit status last to /tmp/OUT; waits up to LIMIT
# seconds for both and leaves their output in $outa / $outb
ranks() {
	local out=/tmp/$1 port=$2 limit=$3 args=$4
	netconf_start a "$1" "$env" "--rank 0 --oob-listen $port $args"
	netconf_start b "$1" "$env" "--rank 1 --oob-connect 198.51.100.1:$port $args"
	wait_for "vm a grep -q netconf-exit= $out && vm b grep -q netconf-exit= $out" "$limit" 2
	outa=$(vm a cat "$out" 2>&1)
	outb=$(vm b cat "$out" 2>&1)
}

t0=$SECONDS
ranks nc.out 29500 900 "${API:+--api $API} --max-size $MAX --deadline 120 --call-bound 2 --dmabuf"
secs=$((SECONDS - t0))
conf_a=$outa
for v in a b; do
	[ $v = a ] && out=$outa r=0 || out=$outb r=1
	if printf '%s\n' "$out" | grep -q '^netconf-exit=0$' &&
		printf '%s\n' "$out" | grep -q "rank$r: all tests passed" &&
		! printf '%s\n' "$out" | grep -q '^not ok'; then
		ok "$v: rank $r conformance sequence passed over odl_tb5 (${secs}s)" \
			"$(printf '%s\n' "$out" | grep -E '^# (loaded|dev |all-reduce|DMA-buf)')"
	else
		not_ok "$v: rank $r conformance sequence passed over odl_tb5" \
			"$(printf '%s\n' "$out" | tail -n 60)"
	fi
done
# the individual steps, from rank 0's TAP
step() {
	if printf '%s\n' "$conf_a" | grep -qE "^ok [0-9]+ - rank0: $1"; then
		ok "$2"
	else
		not_ok "$2" "no 'ok ... rank0: $1' line in rank 0's output"
	fi
}
step 'init/devices/getProperties' "plugin init, one kernel device, properties (4 threads)"
step 'bad calls return NCCL error codes' "bad calls (NULL comm, oversize handle, unknown device) return NCCL errors"
if [ "$(printf '%s\n' "$conf_a" | grep -cE '^ok [0-9]+ - rank0: handshake: ')" = 4 ]; then
	ok "handshakes: connect first, accept first, interleaved, symmetric; closeListen after accept"
else
	not_ok "handshakes: connect first, accept first, interleaved, symmetric; closeListen after accept" \
		"$(printf '%s\n' "$conf_a" | grep handshake)"
fi
step "isend/irecv sizes 0 B \\.\\. $MAX B" "sizes 0 B .. $MAX B both ways at once, larger receives, 32 in flight"
step 'grouped receives n = 1..8' "grouped receives n = 1..8 with tags"
[ "${API:-12}" -ge 10 ] &&
	step 'profiler events' "profiler events (v10+): one per phandle, started in isend/irecv, updated with the size and stopped in test()"
step 'quiet wait' "a test() waiting on an unfinished receive is not woken by CTSs that finish nothing"
step 'saturation' "saturation to the request limits, NULL requests, all verified"
step 'receive smaller than send' "truncation fails one message only; iflush; regMr type check"
step 'regMrDmaBuf: ' "regMrDmaBuf ($exporter DMA-bufs): regions zero copy through the driver's import and staged, NCCL's addresses untouched"
step '4 comm pairs' "4 comm pairs per direction from 4 threads"
step 'deregMr with a send and a receive in flight' "deregMr with requests in flight fails them (ncclInvalidUsage), nothing moves through the freed registration"
step 'ring all-reduce' "ring all-reduce (sum) across the VMs, verified"
step 'ring all-gather' "ring all-gather across the VMs, verified"
# the table in use; from v11 on, NCCL >= 2.28's per-communicator contexts:
# the last finalize must close the kernel device (threads stopped) and the
# next init open it again
want=${API:-12}
what="table ncclNetPlugin_v$want in use"
[ "$want" -ge 11 ] && what="$what; contexts: bad ones refused, the last finalize closes the kernel device, init opens it again"
if printf '%s\n' "$conf_a" | grep -q "using ncclNetPlugin_v$want\$" &&
	{ [ "$want" -lt 11 ] || printf '%s\n' "$conf_a" | grep -qE '^ok [0-9]+ - rank0: v11\+ contexts'; }; then
	ok "$what"
else
	not_ok "$what" "$(printf '%s\n' "$conf_a" | grep -E 'ncclNetPlugin|contexts')"
fi
[ "$want" -ge 11 ] &&
	step 'v11\+ a registration kept past its device' "v11+: a registration kept past its device's close moves its own memory after init opens the device anew; its deregMr frees nothing new"

# statistics published by the plugin on each side must mirror each other;
# rank 1 (b) counts two peer resets: the send and the receive that its peer's
# deregMr with requests in flight failed (netconf t_dereg_inflight)
rccl_err_link_b=2
rccl_stats_check "statistics: a's TX bytes = b's RX bytes and vice versa, zero copy used, CTS urgent" '
assert a["zc_tx_bytes"] == b["zc_rx_bytes"] and b["zc_tx_bytes"] == a["zc_rx_bytes"], "zero-copy tx/rx mismatch"
for x in (a, b):
    assert x["tx_bytes"] > int(sys.argv[3]), "too few bytes"
    assert x["zc_regs"] > 0 and x["zc_tx_bytes"] > int(sys.argv[3]) // 4, "zero copy not used"
    assert x["cts_urgent"] > 0, "no CTS sent urgent (driver ABI 1.5)"
assert a["procs_attached"] == 0 and b["procs_attached"] == 0, "procs_attached"
print("a tx %d rx %d, b tx %d rx %d bytes; zero copy: a tx %d rx %d; urgent CTS a %d b %d" % (a["tx_bytes"], a["rx_bytes"],
      b["tx_bytes"], b["rx_bytes"], a["zc_tx_bytes"], a["zc_rx_bytes"], a["cts_urgent"], b["cts_urgent"]))' "$MAX"
# the benchmark's all-reduce (what bench/rccl.sh measures: registered buffers,
# zero copy, slices pipelined both ways), short, out of place, in place, and
# with a reducer thread beside the thread driving the plugin
bench_run() {
	ranks nb.out "$1" 300 "--bench 16777216 --slice 1048576 --iters 2 --deadline 120 --call-bound 2 ${3:-}"
	if printf '%s\n' "$outa" "$outb" | grep -c '^netconf-exit=0$' | grep -qx 2 &&
		[ "$(printf '%s\n' "$outa" "$outb" | grep -cE '^ok [0-9]+ - rank[01]: all-reduce benchmark, every iteration verified')" = 2 ]; then
		ok "all-reduce benchmark path $2 across the VMs, every iteration verified" \
			"$(printf '%s\n' "$outa" | grep -E '^# (bench \{|reduction)')"
	else
		not_ok "all-reduce benchmark path $2 across the VMs, every iteration verified" \
			"rank 0:" "$(printf '%s\n' "$outa" | tail -n 20)" "rank 1:" "$(printf '%s\n' "$outb" | tail -n 20)"
	fi
}
bench_run 29510 "out of place"
bench_run 29511 "in place" --in-place
bench_run 29512 "reduced by a thread of its own" "--reducer thread"
# the latency benchmark's path (bench/rccl.sh --what latency): ping-pong and
# small all-reduces of one word, one frame and several frames, every message
# checked; rank 0's summary per size must be whole and ordered. The callers
# busy-poll here (ODL_TB5_RCCL_BUSY_POLL_US; the 1-vCPU guests do not by
# default): the statistics below must show waits ended while polling.
env0=$env
env="$env ODL_TB5_RCCL_BUSY_POLL_US=500"
ranks nl.out 29513 300 "--bench-lat 8,4096,65536 --lat-iters 100 --deadline 120 --call-bound 2"
env=$env0
if printf '%s\n' "$outa" "$outb" | grep -c '^netconf-exit=0$' | grep -qx 2 &&
	[ "$(printf '%s\n' "$outa" "$outb" | grep -cE '^ok [0-9]+ - rank[01]: small-message latency')" = 2 ] &&
	res=$(printf '%s\n' "$outa" | sed -n 's/^# lat //p' | python3 -c '
import json, sys
got = [json.loads(l) for l in sys.stdin]
assert [j["size"] for j in got] == [8, 4096, 65536], "sizes %s" % [j["size"] for j in got]
for j in got:
    for k in ("pingpong", "allreduce"):
        v = j[k]
        assert 0 < v["min_us"] <= v["p50_us"] <= v["p99_us"], (j["size"], k, v)
    print("%d B: one-way p50 %.0f us, all-reduce p50 %.0f us" % (j["size"], j["pingpong"]["p50_us"], j["allreduce"]["p50_us"]))
' 2>&1); then
	ok "latency benchmark path across the VMs (ping-pong and all-reduce, 8 B to 64 KiB), every message checked" "$res"
else
	not_ok "latency benchmark path across the VMs (ping-pong and all-reduce, 8 B to 64 KiB), every message checked" \
		"${res:-}" "rank 0:" "$(printf '%s\n' "$outa" | tail -n 20)" "rank 1:" "$(printf '%s\n' "$outb" | tail -n 20)"
fi
# the guests got the CPU model asked for, and the reduction took its AVX2
if vm a sh -c "grep -qw avx2 /proc/cpuinfo && ! grep -qwE 'erms|la57' /proc/cpuinfo" &&
	vm a grep -q '^# reduction: AVX2' /tmp/nb.out; then
	ok "guests run -cpu $BENCH_CPU_MODEL; the reduction uses AVX2"
else
	not_ok "guests run -cpu $BENCH_CPU_MODEL; the reduction uses AVX2" \
		"$(vm a grep -m1 flags /proc/cpuinfo 2>&1)" "$(vm a grep reduction /tmp/nb.out 2>&1)"
fi

# two ranks per machine: P = a:78 <-> b:79, Q = a:79 <-> b:78
mr() { # VM OUT ENV ARGS
	netconf_start "$1" "$2" "NETCONF_DEV=0 $3" "$4 --shared --max-size 16777216 --deadline 120 --call-bound 2"
}
t0=$SECONDS
mr a mp.out "NETCONF_EXPECT_PORT=78" "--rank 0 --oob-listen 29520"
# the second process of a starts once the first has its port
wait_for "vm a grep -q '^# dev 0:' /tmp/mp.out" 120
mr a mq.out "NETCONF_EXPECT_PORT=79" "--rank 0 --oob-listen 29521"
wait_for "vm a grep -q '^# dev 0:' /tmp/mq.out" 120
mr b mp.out "ODL_TB5_RCCL_PORT=79 NETCONF_EXPECT_PORT=79" "--rank 1 --oob-connect 198.51.100.1:29520"
mr b mq.out "ODL_TB5_RCCL_PORT=78 NETCONF_EXPECT_PORT=78" "--rank 1 --oob-connect 198.51.100.1:29521"
wait_for "vm a grep -q netconf-exit= /tmp/mp.out && vm a grep -q netconf-exit= /tmp/mq.out && vm b grep -q netconf-exit= /tmp/mp.out && vm b grep -q netconf-exit= /tmp/mq.out" 600 2
secs=$((SECONDS - t0))
for f in mp mq; do
	eval "out_a_$f=\$(vm a cat /tmp/$f.out 2>&1)"
	eval "out_b_$f=\$(vm b cat /tmp/$f.out 2>&1)"
done
ports_a=$(printf '%s\n' "$out_a_mp" "$out_a_mq" | sed -n 's/^# dev 0: .* port \([0-9]*\)$/\1/p' | tr '\n' ' ')
if [ "$ports_a" = "78 79 " ]; then
	ok "two processes on a: ports 78 and 79, each taking the first free one"
else
	not_ok "two processes on a: ports 78 and 79, each taking the first free one" "got: $ports_a" \
		"$(printf '%s\n' "$out_a_mp" | head -n 20)" "$(printf '%s\n' "$out_a_mq" | head -n 20)"
fi
mr_check() { # NAME DESC
	local oa ob
	eval "oa=\$out_a_$1 ob=\$out_b_$1"
	if printf '%s\n' "$oa" "$ob" | grep -c '^netconf-exit=0$' | grep -qx 2 &&
		printf '%s\n' "$oa" | grep -q 'rank0: all tests passed (api v[0-9]*, device shared)' &&
		printf '%s\n' "$ob" | grep -q 'rank1: all tests passed (api v[0-9]*, device shared)' &&
		! printf '%s\n' "$oa" "$ob" | grep -q '^not ok'; then
		ok "$2 (${secs}s for both pairs at once)" "$(printf '%s\n' "$oa" | grep -E '^# all-reduce')"
	else
		not_ok "$2" "rank 0 on a:" "$(printf '%s\n' "$oa" | tail -n 30)" \
			"rank 1 on b:" "$(printf '%s\n' "$ob" | tail -n 30)"
	fi
}
mr_check mp "rank pair a:78 <-> b:79 across port numbers: handshakes, sizes to 16 MiB, grouped receives, all-reduce, all-gather"
mr_check mq "rank pair a:79 <-> b:78 at the same time, the same sequence"
rccl_stats_check "statistics after both pairs: a's TX = b's RX and vice versa, no link errors, every process detached, test() reaped by its caller, also while busy-polling" '
assert a["procs_attached"] == 0 and b["procs_attached"] == 0, "procs_attached"
assert a["peer_lost"] == 0 and b["peer_lost"] == 0, "peers lost"
assert a["caller_reaps"] > 0 and b["caller_reaps"] > 0, "no test() reaped its device itself"
assert 0 < a["busy_poll_reaps"] <= a["caller_reaps"] and 0 < b["busy_poll_reaps"] <= b["caller_reaps"], "no wait in test() ended while busy-polling"
print("a tx %d rx %d, b tx %d rx %d bytes; waits in test() reaped by the caller: a %d, b %d; of them ended while busy-polling: a %d, b %d" % (a["tx_bytes"], a["rx_bytes"], b["tx_bytes"], b["rx_bytes"], a["caller_reaps"], b["caller_reaps"], a["busy_poll_reaps"], b["busy_poll_reaps"]))'
odl_check_rx_stats "driver: no seq/len/descriptor errors, no drops on either side" a b
odl_check_clean
tap_done
