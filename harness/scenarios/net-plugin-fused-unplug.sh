#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# net-plugin-fused-unplug: net-plugin-unplug over a fused device. The
# machines are cabled twice (vmpair up --links 2), and each rank fuses its
# two devices into one (netconf --rails 2 --fuse --fail unplug: makeVDevice,
# every message cut in two, a part per cable). One cable is pulled under the
# running processes and plugged back, twice: cable 1 while both ranks stream
# 1 MiB messages both ways, cable 0 while each has only receives posted that
# its peer never matches. A fused comm works only while all of its cables
# do: each time both ranks must get NCCL errors (ncclSystemError /
# ncclRemoteError; no hang, no crash), every request in flight must end,
# new ones must be refused, and close and deregMr must work; the pulled
# cable's devices go away. With that cable still out, both must make new
# comms over the fused device, which then use the cable left, and move
# 0 B .. 4 MiB both ways, verified; after the replug the same processes must
# listen and connect over both cables again (the statistics count no
# listen or connect over fewer) and move the same, verified. Round 3 leaves both cables in and kills rank 1's process:
# rank 0's keepalive (ODL_TB5_RCCL_PEER_TIMEOUT_MS, 4 s here) must fail the
# fused comms with ncclRemoteError and leave the fused device usable. The
# out-of-band channel is virtio-net. Needs `make driver rccl`.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 16
tap_timeout 1200
TAP_EXEC_TIMEOUT=900
odl_need_build
rccl_need_build

pair_up --links 2 --virtio-net --mem 1024
# both domains must list their XDomain before the driver loads (odl_load)
xdomain_on_both_links a && xdomain_on_both_links b ||
	bail_out "the guests do not see each other on both cables"
for v in a b; do
	odl_put $v && "$VMPAIR" put $v "$NETCONF" /tmp/netconf --mode 755 >/dev/null &&
		"$VMPAIR" put $v "$STATS" /tmp/rccl_stats --mode 755 >/dev/null && odl_load $v ||
		bail_out "cannot load odl_tb5 and copy the harness into $v"
done
for v in a b; do
	odl_both_links_up $v || bail_out "$v: the two odl_tb5 devices did not log in"
done
# each cable's device node on each side (numbers follow login order)
for k in 0 1; do
	da[k]=$(odl_dev_for a $k) && db[k]=$(odl_dev_for b $k) || bail_out "no device for cable $k"
done
for v in a b; do
	[ $v = a ] && ip=198.51.100.1 || ip=198.51.100.2
	vm $v sh -c "ip link set eth0 up && ip addr add $ip/24 dev eth0" >/dev/null 2>&1
done
wait_for "vm a ping -c 1 -W 2 198.51.100.2" 60 || bail_out "out-of-band path (virtio-net) does not ping"

PF_OUT=nf.out
env="ODL_TB5_RCCL_PEER_TIMEOUT_MS=4000"
args="--rails 2 --fuse --fail unplug --deadline 60 --call-bound 2"
netconf_start a $PF_OUT "$env" "--rank 0 --oob-listen 29540 $args"
netconf_start b $PF_OUT "$env" "--rank 1 --oob-connect 198.51.100.1:29540 $args"
plugin_unplug_round 1 streaming 1 "${da[1]}" "${db[1]}" fused
plugin_unplug_round 2 quiet 0 "${da[0]}" "${db[0]}" fused
plugin_peer_gone_round "both cables" "the fused device"
plugin_steps_passed "both processes made the fused device and passed every step of rounds 1 and 2 (two failures, two exchanges over the cable left, two reconnections)" \
	'fuse:|link failure|with a cable of the fused device out|after the replug' 7
rccl_stats_eval "statistics: both count a revival per pulled cable, the fused traffic and the listens and connects over one cable; a the comms its keepalive failed; no process left alive" '
for n, s in (("a", a), ("b", b)):
    assert s["revivals"] >= 2, "%s: revivals %d" % (n, s["revivals"])
    assert s["fused_ops"] > 0, "%s: no fused send or receive" % n
    assert s["fused_degraded"] >= 6, "%s: fused_degraded %d" % (n, s["fused_degraded"])
    assert s["procs_live"] == 0, "%s: procs_live %d" % (n, s["procs_live"])
    if n == "a":
        assert s["peer_lost"] >= 2, "a: peer_lost %d" % s["peer_lost"]
    print("%s: revivals %d, fused sends and receives %d, listens and connects over one cable %d, peer_lost %d, errors %d" % (n, s["revivals"], s["fused_ops"], s["fused_degraded"], s["peer_lost"], s["errors"]))'
odl_check_clean
tap_done
