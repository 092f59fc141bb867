#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# net-plugin-unplug: the cable is pulled under the RCCL/NCCL net plugin and
# plugged back, twice, the same two processes running throughout (netconf
# --fail unplug, one rank per VM over /dev/odl_tb5_0; see t_link_failure in
# rccl/tests/netconf.c). Round 1 pulls it while both ranks stream 1 MiB
# messages both ways; round 2 while each rank has only receives posted that
# its peer never matches (the failure must reach a caller that only tests).
# Each time the failure must reach both ranks as NCCL errors
# (ncclSystemError / ncclRemoteError: no hang, no crash), every request in
# flight must end, new requests must be refused, and closeSend/closeRecv/
# deregMr must still work (NCCL's abort path); after the replug the same
# plugin instance must listen and connect again (the device is opened anew,
# found by its peer's UUID) and move 0 B .. 4 MiB both ways, verified; the
# statistics count both revivals. Round 3 leaves the cable in and kills rank
# 1's process while both have only unmatched receives posted: rank 0's
# keepalive (ODL_TB5_RCCL_PEER_TIMEOUT_MS, 4 s here) must fail its waiting
# comms with ncclRemoteError, and the device must stay usable. Round 4: one
# process on a with comms to two processes on b (ports 78 and 79, the first
# free ones); the one on 79 stops itself while the other keeps exchanging
# data with a's: the keepalive works per peer port, so only the stopped
# process's comms may fail (netconf --fail stop-one). The
# out-of-band channel is virtio-net, as in net-plugin. Needs `make driver rccl`.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 19
tap_timeout 900
odl_need_build
rccl_need_build

pair_up --virtio-net --mem 1024
for v in a b; do
	odl_put $v && "$VMPAIR" put $v "$NETCONF" /tmp/netconf --mode 755 >/dev/null &&
		"$VMPAIR" put $v "$STATS" /tmp/rccl_stats --mode 755 >/dev/null ||
		bail_out "cannot copy the driver and the harness into $v"
	check "odl_tb5 loads on $v" odl_load $v
done
odl_wait_connected a 90 && odl_wait_connected b 90 || bail_out "no login"
for v in a b; do
	[ $v = a ] && ip=198.51.100.1 || ip=198.51.100.2
	vm $v sh -c "ip link set eth0 up && ip addr add $ip/24 dev eth0" >/dev/null 2>&1
done
wait_for "va ping -c 1 -W 2 198.51.100.2" 60 || bail_out "out-of-band path (virtio-net) does not ping"

env="NETCONF_DEV=0 ODL_TB5_RCCL_PORT=78 ODL_TB5_RCCL_PEER_TIMEOUT_MS=4000"
args="--fail unplug --deadline 60 --call-bound 2"
netconf_start a nf.out "$env" "--rank 0 --oob-listen 29520 $args"
netconf_start b nf.out "$env" "--rank 1 --oob-connect 198.51.100.1:29520 $args"
PF_OUT=nf.out
round() { plugin_unplug_round "$1" "$2" 0 /dev/odl_tb5_0 /dev/odl_tb5_0; }
round 1 streaming
round 2 quiet
# round 3: the link stays up, rank 1's process goes (killed while both have
# only unmatched receives posted): rank 0's keepalive must fail its waiting
# comms with ncclRemoteError (ODL_TB5_RCCL_PEER_TIMEOUT_MS=4000 here) and
# leave the device usable
plugin_peer_gone_round "the cable" "the device"
plugin_steps_passed "both processes passed every step of rounds 1 and 2 (two failures, two reconnections)" \
	'link failure|after the replug' 4
# round 4: one process on a, two on b, each taking the first free port
# (78 and 79 on b); the one on 79 posts receives and stops itself
# (SIGSTOP) while the one on 78 keeps exchanging verified data with a's:
# the keepalive works per peer port, so a's comms with the stopped process
# must fail with ncclRemoteError although messages from b keep arriving,
# and those with the other must go on working
env4="NETCONF_DEV=0 ODL_TB5_RCCL_PEER_TIMEOUT_MS=4000"
args4="--deadline 60 --call-bound 2"
netconf_start a n4.out "$env4" "--rank 0 --oob-listen 29530 --oob-listen2 29531 --fail stop-one $args4"
netconf_start b n4p.out "$env4 NETCONF_EXPECT_PORT=78" "--rank 1 --oob-connect 198.51.100.1:29530 --fail stop-one $args4"
wait_for "vm b grep -q '^# dev 0:' /tmp/n4p.out" 120 2
netconf_start b n4s.out "$env4 NETCONF_EXPECT_PORT=79" "--rank 1 --oob-connect 198.51.100.1:29531 --fail stop $args4"
out4() {
	echo "a:"; vm a cat /tmp/n4.out 2>&1 | tail -n 30
	echo "b, the peer that stays (78):"; vm b cat /tmp/n4p.out 2>&1 | tail -n 30
	echo "b, the peer that stops (79):"; vm b cat /tmp/n4s.out 2>&1 | tail -n 30
}
if wait_for "vm b grep -q '# fault: round 1 quiet' /tmp/n4s.out && vm a grep -q '# stop-one: one peer stopped' /tmp/n4.out" 180 2; then
	ok "round 4: a's process has comms with two processes of b (ports 78 and 79, the first free ones); the one on 79 stopped with its receives posted" \
		"$(vm b grep '^# dev 0:' /tmp/n4p.out /tmp/n4s.out 2>&1)"
else
	not_ok "round 4: a's process has comms with two processes of b (ports 78 and 79); the one on 79 stopped with its receives posted" "$(out4)"
fi
if netconf_passed a n4.out 240 '^ok [0-9]+ - rank0: stop-one: of two peer processes one stopped'; then
	ok "round 4: a's comms with the stopped process failed with ncclRemoteError while the other kept exchanging verified data; exited 0" \
		"$(vm a grep '^# stop-one: the stopped' /tmp/n4.out)"
else
	not_ok "round 4: a's comms with the stopped process failed with ncclRemoteError while the other kept exchanging verified data; exited 0" "$(out4)"
fi
if netconf_passed b n4p.out 120 'stop-one: exchanged verified data with rank 0'; then
	ok "round 4: b's other process exchanged verified data throughout and exited 0" "$(vm b grep '^# stop-one' /tmp/n4p.out)"
else
	not_ok "round 4: b's other process exchanged verified data throughout and exited 0" "$(out4)"
fi
vm b sh -c 'kill -9 $(pidof netconf)' >/dev/null 2>&1
wait_for "vm b grep -q netconf-exit= /tmp/n4s.out" 60 2
rccl_stats_eval "statistics: both count the two revivals; a the keepalive's PINGs and the comms it failed; no process left alive" '
for n, s in (("a", a), ("b", b)):
    assert s["revivals"] >= 2, "%s: revivals %d" % (n, s["revivals"])
    if n == "a":
        assert s["pings"] >= 2 and s["peer_lost"] >= 4, "a: pings %d peer_lost %d" % (s["pings"], s["peer_lost"])
        assert s["procs_attached"] == 0, "a: procs_attached %d" % s["procs_attached"]
    # b: two processes were killed (rounds 3 and 4): not alive, whatever
    # procs_attached says since the last detach there
    assert s["procs_live"] == 0, "%s: procs_live %d" % (n, s["procs_live"])
    print("%s: revivals %d, pings %d, peer_lost %d, errors %d, tx %d rx %d bytes" % (n, s["revivals"], s["pings"], s["peer_lost"], s["errors"], s["tx_bytes"], s["rx_bytes"]))'
odl_check_clean
tap_done
