#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-multilink: two cables between the machines (vmpair up --links 2), each
# host with one controller per cable, as on machines with two USB4 host
# routers (AMD Strix Halo, two-controller Intel systems) cabled twice to one
# peer. Stock thunderbolt runs a domain per controller and finds the peer on
# each; odl_tb5 gives a device per link. The devices are told apart by the
# peer controller's UUID, not by their numbers (those follow login order).
# Both links carry verified data at the same time; pulling one cable in the
# middle of a transfer fails only that link's transfer while the other
# link's runs on verified; after the replug the link's device comes back
# with its old number and carries data again. Last, the net plugin over
# both cables (netconf --rails 2): a device per cable with distinct GUIDs
# and PCI paths, an all-reduce divided between the two, and a connect
# asked of the device on the other cable goes over the cable that reaches
# the listener (the out-of-band channel is virtio-net, as in net-plugin).
# Then the all-reduce benchmark with a channel on each cable, one thread
# driving both devices as NCCL's proxy does (netconf --rails 2 --bench):
# verified, and the plugin's statistics show that test() callers reaped
# the devices themselves (with two kernel devices they wait on both
# descriptors at once) on both machines. Last, the two cables fused into
# one device (netconf --rails 2 --fuse: makeVDevice, as NCCL's NIC fusion
# calls it): the conformance sequence (with DMA-buf registrations, which
# the driver imports on both cables) and the benchmark over it, verified,
# with both cables carrying their share of every large message.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 23
tap_timeout 1800
TAP_EXEC_TIMEOUT=900
odl_need_build
rccl_need_build
EXP_KO=$ODL_BUILD_DRIVER/odl_dmabuf_exp.ko
[ -f "$EXP_KO" ] || bail_out "build/driver/odl_dmabuf_exp.ko missing: run 'make driver'"
pair_up --links 2 --virtio-net

# cable_tx K: bytes a sent into cable K
cable_tx() {
	"$VMPAIR" cable --link "$1" status | python3 -c 'import json, sys
print(json.load(sys.stdin)["ends"]["a"]["tx_bytes"])'
}
# bw_start K CLIENT-OPTIONS...: odl_tb5_cli bandwidth test of 1 MiB messages
# over cable K in the background (server on b, client on a, each picking
# its device by the peer's UUID); logs /tmp/srvK.log on b, /tmp/cliK.log on a
bw_start() {
	local k=$1 ua ub
	shift
	ua=$(ctl_uuid a "$k") && ub=$(ctl_uuid b "$k") || return 1
	# the server's shell prints srv-exit= once the server has exited and
	# its files are closed (its port free again): busybox pgrep -f stops
	# matching it earlier, while it still holds the port
	vm b sh -c "rm -f /tmp/srv$k.log; setsid sh -c '/tmp/odl_tb5_cli --server --device $ua --timeout 60000; echo srv-exit=\$?' > /tmp/srv$k.log 2>&1 < /dev/null &" ||
		return 1
	wait_for "vm b grep -q 'waiting for a client' /tmp/srv$k.log" 60 || return 1
	vm a sh -c "rm -f /tmp/cli$k.log; setsid sh -c 'read t _ < /proc/uptime; echo cli-start=\$t
		/tmp/odl_tb5_cli --client --device $ub --test bandwidth --size 1M --timeout 60000 $*
		r=\$?; read t _ < /proc/uptime; echo cli-end=\$t; echo cli-exit=\$r' > /tmp/cli$k.log 2>&1 < /dev/null &"
}
# cli_time K start|end: when cable K's client started or ended (a's uptime)
cli_time() {
	vm a sed -n "s/^cli-$2=//p" "/tmp/cli$1.log"
}
# bw_wait K: wait for both ends of cable K's run; 0 when the client exited 0
# and the server verified everything
bw_wait() {
	wait_for "vm a grep -q cli-exit= /tmp/cli$1.log" 900 2 &&
		wait_for "vm b grep -q srv-exit= /tmp/srv$1.log" 120 2 &&
		vm a grep -q '^cli-exit=0$' "/tmp/cli$1.log" &&
		vm b grep -q 'all data verified' "/tmp/srv$1.log"
}
bw_logs() {
	echo "client (a):"
	vm a cat "/tmp/cli$1.log" 2>&1
	echo "server (b):"
	vm b cat "/tmp/srv$1.log" 2>&1
}

# both domains must list their XDomain before the driver loads (odl_load)
for v in a b; do
	if xdomain_on_both_links $v; then
		ok "$v: a domain per controller, each with the peer as XDomain (0-1, 1-1)"
	else
		not_ok "$v: a domain per controller, each with the peer as XDomain (0-1, 1-1)" \
			"$(vm $v ls /sys/bus/thunderbolt/devices 2>&1)"
	fi
done
for k in 0 1; do
	is "$(vm a cat /sys/bus/thunderbolt/devices/$k-1/unique_id)" "$(ctl_uuid b $k)" \
		"cable $k: a's XDomain $k-1 is b's controller $k-0"
done
for v in a b; do
	odl_put $v && "$VMPAIR" put $v "$NETCONF" /tmp/netconf --mode 755 >/dev/null &&
		"$VMPAIR" put $v "$STATS" /tmp/rccl_stats --mode 755 >/dev/null &&
		"$VMPAIR" put $v "$EXP_KO" /tmp/odl_dmabuf_exp.ko >/dev/null && odl_load $v &&
		vm $v insmod /tmp/odl_dmabuf_exp.ko ||
		bail_out "cannot load odl_tb5 and the DMA-buf test exporter on $v"
done
for v in a b; do
	if odl_both_links_up $v && odl_dev_for $v 0 >/dev/null && odl_dev_for $v 1 >/dev/null && [ "$(odl_dev_for $v 0)" != "$(odl_dev_for $v 1)" ]; then
		ok "$v: two odl_tb5 devices, both logged in, one per link (by peer UUID)" \
			"link 0: $(odl_dev_for $v 0), link 1: $(odl_dev_for $v 1)"
	else
		not_ok "$v: two odl_tb5 devices, both logged in, one per link (by peer UUID)" \
			"$(vm $v sh -c 'for d in /dev/odl_tb5_*; do echo $d; /tmp/odl_xfer info -d $d; done' 2>&1)"
	fi
done
dev1_a=$(odl_dev_for a 1)

# both links at once
tx0=$(cable_tx 0) tx1=$(cable_tx 1)
bw_start 0 --iterations 64 && bw_start 1 --iterations 64 || bail_out "cannot start the transfers" "$(bw_logs 0)" "$(bw_logs 1)"
for k in 0 1; do
	if bw_wait $k; then
		ok "both links at once: cable $k carried 64 x 1 MiB, verified" "$(vm a grep -A1 '#bytes' /tmp/cli$k.log)"
	else
		not_ok "both links at once: cable $k carried 64 x 1 MiB, verified" "$(bw_logs $k)"
	fi
done
d0=$(( $(cable_tx 0) - tx0 )) d1=$(( $(cable_tx 1) - tx1 ))
check "each cable carried its own 64 MiB (a sent $d0 and $d1 bytes into cables 0 and 1)" \
	test "$d0" -ge $((64 << 20)) -a "$d1" -ge $((64 << 20))

# pull cable 1 in the middle of a transfer on each link: cable 0's runs for
# 30 s, cable 1's starts after it and is cut after 6000 frames (~23 MiB)
bw_start 0 --duration 30 || bail_out "cannot start the transfer" "$(bw_logs 0)"
"$VMPAIR" cable --link 1 fault unplug-after frames=6000 >/dev/null || bail_out "cable fault command failed"
bw_start 1 --iterations 100000 || bail_out "cannot start the transfer" "$(bw_logs 1)"
if wait_for "vm a grep -q cli-exit= /tmp/cli1.log" 600 2 && ! vm a grep -q '^cli-exit=0$' /tmp/cli1.log &&
	vm a grep -q 'odl_tb5_cli: error' /tmp/cli1.log; then
	ok "cable 1 pulled: its transfer stopped with an error" "$(vm a grep error /tmp/cli1.log)"
else
	not_ok "cable 1 pulled: its transfer stopped with an error" "$(bw_logs 1)" "$("$VMPAIR" cable --link 1 status)"
fi
if bw_wait 0 && awk -v s="$(cli_time 0 start)" -v f="$(cli_time 1 end)" -v e="$(cli_time 0 end)" \
	'BEGIN { exit !(s < f && f < e) }'; then
	ok "cable 0 went on: 30 s of 1 MiB messages verified across cable 1's pull" "$(vm a grep -A1 '#bytes' /tmp/cli0.log)" \
		"cable 0's run: $(cli_time 0 start) s to $(cli_time 0 end) s; cable 1's failed at $(cli_time 1 end) s"
else
	not_ok "cable 0 went on: 30 s of 1 MiB messages verified across cable 1's pull" "$(bw_logs 0)" \
		"cable 1's client:" "$(vm a cat /tmp/cli1.log)"
fi
wait_for "vm b grep -q srv-exit= /tmp/srv0.log && vm b grep -q srv-exit= /tmp/srv1.log" 120
"$VMPAIR" cable --link 1 fault clear >/dev/null
wait_for "! vm a test -e $dev1_a" 60
"$VMPAIR" cable --link 1 plug >/dev/null
if wait_for "vm a sh -c '/tmp/odl_xfer info -d $dev1_a | grep -q state=connected'" 180 &&
	[ "$(odl_dev_for a 1)" = "$dev1_a" ]; then
	ok "cable 1 replugged: a's device for it is back as $dev1_a and logged in"
else
	not_ok "cable 1 replugged: a's device for it is back as $dev1_a and logged in" \
		"$(vm a sh -c 'for d in /dev/odl_tb5_*; do echo $d; /tmp/odl_xfer info -d $d; done' 2>&1)"
fi
wait_for "vm b sh -c '/tmp/odl_xfer info -d $(odl_dev_for b 1) | grep -q state=connected'" 180
bw_start 1 --iterations 64 || bail_out "cannot start the transfer" "$(bw_logs 1)"
if bw_wait 1; then
	ok "after the replug cable 1 carries 64 x 1 MiB again, verified" "$(vm a grep -A1 '#bytes' /tmp/cli1.log)"
else
	not_ok "after the replug cable 1 carries 64 x 1 MiB again, verified" "$(bw_logs 1)"
fi

# the net plugin over both cables
for v in a b; do
	[ $v = a ] && ip=198.51.100.1 || ip=198.51.100.2
	vm $v sh -c "ip link set eth0 up && ip addr add $ip/24 dev eth0" >/dev/null 2>&1
done
wait_for "vm a ping -c 1 -W 2 198.51.100.2" 60 || bail_out "no out-of-band path (virtio-net)"
# rails_pass NAME OUT PORT ENV ARGS PATTERN EVIDENCE: netconf on both
# guests (rank 0 on a, rank 1 on b); ok NAME when both passed and each
# rank's output has "rankR... PATTERN", with a's lines matching EVIDENCE
rails_pass() {
	local out=$2
	netconf_start a "$out" "$4" "--rank 0 --oob-listen $3 $5"
	netconf_start b "$out" "$4" "--rank 1 --oob-connect 198.51.100.1:$3 $5"
	if netconf_passed a "$out" 600 "rank0.* $6" && netconf_passed b "$out" 120 "rank1.* $6"; then
		ok "$1" "$(vm a grep -E "$7" "/tmp/$out")"
	else
		not_ok "$1" "a:" "$(vm a grep -v handle_msg "/tmp/$out" | tail -n 40)" \
			"b:" "$(vm b grep -v handle_msg "/tmp/$out" | tail -n 40)"
	fi
}
tx0=$(cable_tx 0) tx1=$(cable_tx 1)
rails_pass "net plugin over both cables: a device each, an all-reduce divided between them, verified" \
	rails.out 29530 NETCONF_VERBOSE=1 "--rails 2 --deadline 120 --call-bound 2" \
	'rails: an all-reduce divided' '^# (dev |rails)'
routed=$( { vm a cat /tmp/rails.out; vm b cat /tmp/rails.out; } | grep -c 'the listener is on the cable of device')
check "a connect asked of the other cable's device went over the cable that reaches the listener ($routed times)" \
	test "$routed" -ge 1
d0=$(( $(cable_tx 0) - tx0 )) d1=$(( $(cable_tx 1) - tx1 ))
check "the plugin used both cables (a sent $d0 and $d1 bytes into cables 0 and 1)" \
	test "$d0" -ge $((8 << 20)) -a "$d1" -ge $((8 << 20))
rails_pass "all-reduce benchmark with a channel on each cable, one thread driving both devices, verified" \
	railb.out 29531 "" "--rails 2 --bench 16777216 --channels 2 --iters 3 --deadline 120 --call-bound 2" \
	'all-reduce benchmark, every iteration verified' '^# bench '
# the two cables fused into one device (makeVDevice, NCCL's NIC fusion):
# the conformance sequence over it, then the benchmark; every message is
# cut in two, one part per cable
# (with DMA-bufs registered on both cables: from the kernel's system heap on
# 6.12, else from the test exporter, as in net-plugin)
exporter=odl
kernel_at_least a 6 12 && exporter=heap
tx0=$(cable_tx 0) tx1=$(cable_tx 1)
rails_pass "a fused device of both cables: the conformance sequence over it, DMA-bufs too, verified" \
	fused.out 29532 "ODL_TB5_RCCL_DMABUF=1 NETCONF_DMABUF_EXPORTER=$exporter" \
	"--rails 2 --fuse --quick --dmabuf --deadline 120 --call-bound 2" \
	'all tests passed' '^# fused device|^# DMA-buf|all tests passed'
rails_pass "all-reduce benchmark over the fused device, verified" \
	fusedb.out 29533 "" "--rails 2 --fuse --bench 16777216 --channels 2 --iters 3 --deadline 120 --call-bound 2" \
	'all-reduce benchmark, every iteration verified' '^# bench '
d0=$(( $(cable_tx 0) - tx0 )) d1=$(( $(cable_tx 1) - tx1 ))
check "the fused device striped over both cables (a sent $d0 and $d1 bytes into cables 0 and 1)" \
	test "$d0" -ge $((16 << 20)) -a "$d1" -ge $((16 << 20))
rccl_stats_check "plugin statistics: TX = RX across, no link errors, test() callers reaped the two devices themselves, fused comms counted" '
assert a["caller_reaps"] > 0 and b["caller_reaps"] > 0, "no test() reaped the devices itself"
assert a["fused_ops"] > 0 and b["fused_ops"] > 0, "no send or receive on the fused device"
print("waits in test() reaped by the caller over two devices: a %d, b %d; sends and receives on the fused device: a %d, b %d" % (a["caller_reaps"], b["caller_reaps"], a["fused_ops"], b["fused_ops"]))'
odl_check_clean
tap_done
