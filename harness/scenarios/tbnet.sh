#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tbnet: thunderbolt-net carries IP over the emulated cable: pings both
# ways (also 60 KiB), a 64 MiB random TCP transfer with matching SHA-256.
. "$(dirname "$0")/common.sh"
tap_plan 9
tap_timeout 1500
pair_up
if wait_xdomain a && wait_xdomain b && tbnet_up; then
	ok "thunderbolt0 up with carrier on both hosts"
else
	not_ok "thunderbolt0 up with carrier on both hosts"
fi
check "ping a -> b" va ping -c 3 -W 5 192.0.2.2
check "ping b -> a" vb ping -c 3 -W 5 192.0.2.1
check "60 KiB ping a -> b" va ping -c 2 -W 10 -s 61440 192.0.2.2
check "60 KiB ping b -> a" vb ping -c 2 -W 10 -s 61440 192.0.2.1
read -r s_from s_to secs < <(tcp_transfer a b $((64 << 20)) 5001)
if [ -n "$s_from" ] && [ "$s_from" = "$s_to" ]; then
	ok "64 MiB TCP a -> b, SHA-256 matches" "sha256 $s_from, ${secs}s guest time, $(awk -v s="$secs" 'BEGIN { if (s > 0) printf "%.1f", 64 * 8 * 1.048576 / s }') Mb/s"
else
	not_ok "64 MiB TCP a -> b, SHA-256 matches" "sent $s_from" "got  $s_to" "$(tcp_evidence)"
fi
check "thunderbolt-net counters show no RX errors on b" \
	vb sh -c '[ "$(cat /sys/class/net/thunderbolt0/statistics/rx_errors)" = 0 ]'
check_clean_dmesg
tap_done
