#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# demo: README's first command, `make demo` (harness/demo), runs to its end
# in this scenario's pair, and what it prints is true: each stock Linux
# found the other (a's peer is b's own router and the other way round, two
# lanes), 32 MiB of TCP each way over thunderbolt-net arrived intact, the
# odl_tb5 bandwidth run verified every byte, the latency rows have figures,
# and the RCCL/NCCL net plugin's all-reduce verified every iteration, its
# ping-pong has figures and its statistics show the data it moved; the
# link in the summary's title is what odl_tb5_cli --list and the cable say.
. "$(dirname "$0")/common.sh"
tap_plan 9
tap_timeout 1100

t0=$SECONDS
out=$(DEMO_KEEP=0 timeout -k 30 1000 bash "$SCEN_DIR/../demo" 2>&1)
rc=$?
if [ "$rc" = 0 ] && [ "$(printf '%s\n' "$out" | tail -n 1)" = "demo: done" ]; then
	ok "make demo ran to its end ($((SECONDS - t0)) s)" \
		"$(printf '%s\n' "$out" | sed -n '/^summary /,$p')"
else
	not_ok "make demo ran to its end (exit $rc)" "$out"
fi
# row LABEL: the value of the summary row that starts with LABEL (the demo
# prints each label in 44 columns and a space: a longer one gives nothing)
row() {
	printf '%s\n' "$out" | sed -n '/^summary /,$p' | awk -v l="$1" '
		index($0, l) == 1 && substr($0, 45, 1) == " " { v = substr($0, 46); sub(/^ +/, "", v); print v; exit }'
}
# num TEXT: its first number
num() { printf '%s\n' "$1" | grep -oE '[0-9]+(\.[0-9]+)?' | head -n 1; }
# positive VALUE...: every one a number above 0
positive() {
	local x
	[ $# -gt 0 ] || return 1
	for x; do
		awk -v x="$x" 'BEGIN { exit !(x + 0 > 0) }' || return 1
	done
}

peers=$(printf '%s\n' "$out" | awk '($1 == "a" || $1 == "b") && $2 ~ /^[0-9a-f]+-[0-9a-f]+-/ { print $1, $2, $3, $4 }')
if printf '%s\n' "$peers" | awk '
	{ own[$1] = $2; peer[$1] = $3; lanes[$1] = $4 }
	END { exit !(own["a"] != "" && own["b"] != "" && own["a"] != own["b"] &&
		peer["a"] == own["b"] && peer["b"] == own["a"] && lanes["a"] == 2 && lanes["b"] == 2) }'; then
	ok "the table of peers: a found b and b found a, two lanes" "$peers"
else
	not_ok "the table of peers: a found b and b found a, two lanes" "$peers"
fi
# the summary's title: the link odl_tb5 reports (odl_tb5_cli --list, shown
# connected), the same as the cable's (its "link up ..." line)
title=$(printf '%s\n' "$out" | sed -n 's/^summary (.*, emulated \([0-9]*\) x \([0-9]*\) Gb\/s link).*/\1 \2/p')
cable=$(printf '%s\n' "$out" | sed -n 's/^link up True, \([0-9]*\) lanes x \([0-9]*\) Gb\/s$/\1 \2/p')
listed=$(printf '%s\n' "$out" | sed -n '/^a: odl_tb5_cli --list$/,/^a: \/dev/p')
if [ -n "$title" ] && [ "$title" = "$cable" ] && printf '%s\n' "$listed" | grep -q 'state: *connected' &&
	printf '%s\n' "$listed" | grep -q "link: .*(${title% *} x ${title#* } Gb/s)"; then
	ok "the summary's link ($title) is the one odl_tb5_cli --list and the cable report" "$listed"
else
	not_ok "the summary's link is the one odl_tb5_cli --list and the cable report" \
		"title '$title', cable '$cable'" "$listed"
fi
tcp=$(printf '%s\n' "$out" | grep -E '^(a -> b|b -> a) ')
is "$(printf '%s\n' "$tcp" | grep -c ' match ')" 2 "thunderbolt-net: 32 MiB each way, SHA-256 of both ends the same"
is "$(row 'odl_tb5 data moved / verified')" "256 MiB / yes" "odl_tb5: 256 MiB moved, every byte verified"
lat4k=$(row 'odl_tb5 latency 4 KiB')
lat64=$(row 'odl_tb5 latency 64 B')
bw=$(row 'odl_tb5 bandwidth, 1 MiB messages (avg)')
if positive "$(num "$bw")" "$(num "$lat4k")" "$(num "$lat64")"; then
	ok "odl_tb5 bandwidth and latency rows have figures" "$bw; 4 KiB $lat4k; 64 B $lat64"
else
	not_ok "odl_tb5 bandwidth and latency rows have figures" "bw '$bw' 4 KiB '$lat4k' 64 B '$lat64'"
fi
arv=$(row 'net plugin all-reduce iterations / verified')
arbw=$(row 'net plugin all-reduce 32 MiB, busbw')
if [ "$arv" = "3 / yes" ] && positive "$(num "$arbw")"; then
	ok "net plugin: 32 MiB all-reduce, 3 iterations verified, busbw $arbw"
else
	not_ok "net plugin: 32 MiB all-reduce, 3 iterations verified" "verified '$arv', busbw '$arbw'"
fi
p8=$(row 'net plugin latency 8 B')
p4k=$(row 'net plugin latency 4 KiB')
if positive "$(num "$p8")" "$(num "$p4k")"; then
	ok "net plugin: latency rows of 8 B and 4 KiB have figures" "8 B $p8; 4 KiB $p4k"
else
	not_ok "net plugin: latency rows of 8 B and 4 KiB have figures" "8 B '$p8' 4 KiB '$p4k'"
fi
# the all-reduce's warm-up and 3 iterations move 4 x 32 MiB each way
st=$(row 'net plugin statistics a: TX / RX')
if printf '%s\n' "$st" | awk '{ exit !($1 >= 128 && $3 >= 128 && $4 == "MiB") }'; then
	ok "net plugin statistics: a sent and received at least 128 MiB" "$st"
else
	not_ok "net plugin statistics: a sent and received at least 128 MiB" "'$st'"
fi
tap_done
