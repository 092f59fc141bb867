#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# quirk-apple: an apple-m4 peer's low-power receive (docs/profiles.md): b
# runs apple-m4, a generic. Over stock thunderbolt-net, a ping after an
# idle pause waits for b's coalesced completion burst (~5 s, the
# profile's lowpower_period_ms) while back-to-back pings answer at once;
# b's model counts the bursts (stats lowpower_bursts).
. "$(dirname "$0")/common.sh"
tap_plan 6
tap_timeout 1200
period=$(profile_key apple-m4 lowpower_period_ms)
idle=$(profile_key apple-m4 lowpower_idle_ms)
[ -n "$period" ] && [ -n "$idle" ] || bail_out "apple-m4 has no low-power keys"
pair_up --profile generic --profile-b apple-m4
if wait_xdomain a && wait_xdomain b && tbnet_up; then
	ok "thunderbolt0 up with carrier (a generic, b apple-m4)"
else
	bail_out "thunderbolt0 did not come up"
fi
# no IPv6 chatter on the link: idle must mean idle; patient ARP: it gives
# up after 3 probes in 3 s by default, shorter than a burst period, so the
# first packet after idle would be dropped with its failed ARP entry
for v in a b; do
	vm $v sh -c 'f=/proc/sys/net/ipv6/conf/thunderbolt0/disable_ipv6; [ -e $f ] && echo 1 > $f
		n=/proc/sys/net/ipv4/neigh/thunderbolt0
		echo 20 > $n/mcast_solicit && echo 20 > $n/ucast_solicit &&
		echo 600000 > $n/base_reachable_time_ms' || bail_out "cannot tune ARP on $v"
done
# rtt LIST: "time=" values (ms) of a ping run, space separated; lost = -1
rtts() { sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p' | tr '\n' ' '; }
b0=$(nhi_stats b lowpower_bursts)
idle_rtts=
for i in 1 2 3; do
	sleep $(( idle / 1000 + 2 ))
	r=$(vm a ping -c 1 -W $(( period / 1000 * 2 + 5 )) 192.0.2.2 | rtts)
	idle_rtts="$idle_rtts${r:--1 }"
done
# back to back: right after a burst woke the ring (one exec, no gap that
# could let the ring idle again)
warm_rtts=$(vm a sh -c "ping -c 1 -W $(( period / 1000 * 2 + 5 )) 192.0.2.2 >/dev/null; ping -c 10 -i 0.2 -W 5 192.0.2.2" | rtts)
b1=$(nhi_stats b lowpower_bursts)
diag "symptom: RTT after ${idle} ms+ idle (ms): $idle_rtts"
diag "symptom: RTT back to back (ms): $warm_rtts"
diag "symptom: b lowpower_bursts $b0 -> $b1; b stats: $(nhi_stats b)"
# every post-idle ping answered, and the slowest of them waited for a burst
max_idle=$(echo "$idle_rtts" | awk '{ m = -1; for (i = 1; i <= NF; i++) if ($i > m) m = $i; print m }')
lost=$(echo "$idle_rtts" | awk '{ n = 0; for (i = 1; i <= NF; i++) if ($i < 0) n++; print n }')
is "$lost" 0 "every ping after an idle pause is answered (late, not lost)"
awk -v m="$max_idle" -v p="$period" 'BEGIN { exit !(m >= p * 0.4 && m <= p * 1.6) }' &&
	ok "a ping after idle waits for the coalesced burst: max RTT $max_idle ms (period $period ms)" ||
	not_ok "a ping after idle waits for the coalesced burst: max RTT $max_idle ms (period $period ms)" "$idle_rtts"
med=$(echo "$warm_rtts" | tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : -1) }')
awk -v m="$med" -v p="$period" 'BEGIN { exit !(m >= 0 && m < p * 0.2) }' &&
	ok "back-to-back pings are not held: median RTT $med ms" ||
	not_ok "back-to-back pings are not held: median RTT $med ms" "$warm_rtts"
[ "${b1:-0}" -gt "${b0:-0}" ] 2>/dev/null &&
	ok "b's model counted low-power bursts ($b0 -> $b1)" ||
	not_ok "b's model counted low-power bursts ($b0 -> $b1)"
is "$(nhi_stats a lowpower_bursts)" 0 "a (generic) never enters low-power receive"
tap_done
