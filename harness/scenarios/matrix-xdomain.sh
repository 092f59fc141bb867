#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# matrix-xdomain: xdomain for any controller profile (sim-test
# matrix-xdomain%PROFILE): each host finds the other as XDomain 0-1 whose
# unique_id is the other host's own router UUID, and the link is reported
# at the rate the profile trains at (lane_gbps of the profile file; both
# hosts run it) on 2 bonded lanes.
. "$(dirname "$0")/common.sh"
tap_plan 8
tap_timeout 900
prof=$(pair_profile)
gbps=$(profile_key "$prof" lane_gbps)
[ -n "$gbps" ] || bail_out "no lane_gbps for profile $prof"
pair_up
check_xdomain_peers
want=$(printf '2x%d.0 Gb/s 2x%d.0 Gb/s' "$gbps" "$gbps")
for v in a b; do
	wait_for "vm $v sh -c 'grep -q 2 /sys/bus/thunderbolt/devices/0-1/rx_lanes'" 60
	got=$(vm $v sh -c 'cd /sys/bus/thunderbolt/devices/0-1 && echo "$(cat tx_lanes)x$(cat tx_speed) $(cat rx_lanes)x$(cat rx_speed)"')
	is "$got" "$want" "$v: $prof link reported as 2 lanes x $gbps Gb/s each way"
done
check_clean_dmesg
tap_done
