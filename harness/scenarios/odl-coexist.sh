#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-coexist: thunderbolt-net and odl_tb5 on the same link at once: both
# services log in over the one XDomain (own rings and HopIDs); a TCP
# transfer over thunderbolt0 and an odl_tb5_cli bandwidth run go at the
# same time and both verify (SHA-256 / every byte); then each again alone.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 8
tap_timeout 1800
odl_setup
if tbnet_up; then
	ok "thunderbolt0 up on both with odl_tb5 loaded"
else
	bail_out "thunderbolt0 did not come up" "$(vm a ip link 2>&1)"
fi
check "ping a -> b over thunderbolt0" va ping -c 3 -W 5 192.0.2.2
hops=$(vm a sh -c 'dmesg | grep -e "Out HopID" | sort -u | tr "\n" ";"')
diag "paths on a: $hops"
# both at once: the CLI in the background (host side), TCP in the foreground
odl_cli_server b || bail_out "CLI server did not start"
out=$(mktemp)
"$VMPAIR" exec a --timeout 1200 -- /tmp/odl_tb5_cli --client --device 0 --test bandwidth \
	--size 1M --iterations 512 --timeout 60000 > "$out" 2>&1 &
cli_pid=$!
read -r s1 d1 t1 < <(tcp_transfer a b $((48 << 20)) 5201)
wait $cli_pid
cli_rc=$?
wait_for "! vm b pidof odl_tb5_cli" 120
srv=$(vm b cat /tmp/cli-server.log)
if [ -n "$s1" ] && [ "$s1" = "$d1" ]; then
	ok "concurrently: 48 MiB TCP a -> b over thunderbolt-net, SHA-256 match" "$t1 s"
else
	not_ok "concurrently: 48 MiB TCP a -> b over thunderbolt-net, SHA-256 match" "$s1 vs $d1" "$(tcp_evidence)"
fi
if [ $cli_rc -eq 0 ] && echo "$srv" | grep -q 'all data verified'; then
	ok "concurrently: odl_tb5 512 x 1 MiB a -> b verified" "$(tail -n 4 "$out")" "$srv"
else
	not_ok "concurrently: odl_tb5 512 x 1 MiB a -> b verified" "client exit $cli_rc" "$(cat "$out")" "$srv"
fi
rm -f "$out"
read -r s2 d2 t2 < <(tcp_transfer b a $((16 << 20)) 5202)
[ -n "$s2" ] && [ "$s2" = "$d2" ] && ok "then: 16 MiB TCP b -> a, SHA-256 match" || not_ok "then: 16 MiB TCP b -> a, SHA-256 match" "$s2 vs $d2" "$(tcp_evidence)"
odl_cli_run "then: odl_tb5 latency 4 KiB x 500 verified" 600 \
	--test latency --size 4K --iterations 500 --timeout 60000
odl_check_clean
tap_done
