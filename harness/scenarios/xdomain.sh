#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# xdomain: each host finds the other as XDomain 0-1 whose unique_id is the
# other host's own router UUID; lanes bond to 2 x 20 Gb/s.
. "$(dirname "$0")/common.sh"
tap_plan 8
tap_timeout 900
pair_up
check_xdomain_peers
for v in a b; do
	wait_for "vm $v sh -c 'grep -q 2 /sys/bus/thunderbolt/devices/0-1/rx_lanes'" 60
	got=$(vm $v sh -c 'cd /sys/bus/thunderbolt/devices/0-1 && echo "$(cat tx_lanes)x$(cat tx_speed) $(cat rx_lanes)x$(cat rx_speed)"')
	is "$got" "2x20.0 Gb/s 2x20.0 Gb/s" "$v: link reported as 2 lanes x 20 Gb/s each way"
done
check_clean_dmesg
tap_done
