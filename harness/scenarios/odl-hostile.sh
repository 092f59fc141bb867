#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-hostile: what arrives over the cable is not trusted, and a damaged
# message is reported once. a floods b with numbered messages (odl_xfer
# flood, 64 B..1 MiB, single- and multi-frame, no acks) and b's sink
# (odl_xfer sink) accounts for every completion: whatever is delivered
# must be the right message, whole, in order; a failed message takes one
# RECV, never two (a second error would take the RECV of a good message
# behind it, and the receiver would miscount the stream).
#  * frames dropped, frames with CRC errors (`fault drop`, `fault
#    corrupt`): every message is either delivered whole, failed once, or
#    covered by a lost-message event: ok + failed + lost == sent;
#  * headers changed on the cable with the CRC intact (`fault tamper`, one
#    bit of the 32-byte frame header: what a broken or hostile peer sends;
#    src_port is left alone, nothing can check it): nothing wrong delivered,
#    no more receives than messages, and each changed frame costs at most
#    one message; b counts the header errors;
#  * one frame in the middle of a message, in sequence, naming another
#    port or message number: only its own message fails (once), no other
#    port hears of it, no later message is taken for a reported one;
# then, faults off: the exact stream again, a verified CLI transfer, and
# odl_tb5 unloaded and loaded on both sides (nothing leaked or stuck),
# logged in again with verified data; no oops or WARN.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 12
tap_timeout 2400
odl_setup
hop=$(odl_data_hop a)
diag "odl_tb5 data HopID a->b: $hop"

N=400
SIZES=64,4000,4064,4065,70000,1048576,300000
SINK=
SINK_RC=
HITS=0
# flood_run FAULT...: cable faults (each one rule) for one flood a -> b of
# $N messages; the sink's summary line in $SINK, its exit status in
# $SINK_RC, the rules' hits summed in $HITS, what happened in $OUT; 1 if
# the flood failed
OUT=
flood_run() {
	local r
	flood_steps "$@" > "$VMPAIR_STATE/flood.out" 2>&1
	r=$?
	OUT=$(cat "$VMPAIR_STATE/flood.out")
	SINK=$(vm b cat /tmp/sink.log)
	SINK_RC=$(vm b cat /tmp/sink.rc 2>/dev/null)
	OUT="$OUT
$SINK"
	return $r
}
flood_steps() {
	local f out rc list
	"$VMPAIR" cable fault clear >/dev/null
	vm b sh -c "rm -f /tmp/sink.log /tmp/sink.rc; setsid sh -c '/tmp/odl_xfer sink -p 7 -q 6 -n $N -s $SIZES -t 20 > /tmp/sink.log 2>&1; echo \$? > /tmp/sink.rc' < /dev/null > /dev/null 2>&1 &"
	wait_for "vm b grep -q ready /tmp/sink.log" 60 || { echo "sink did not start"; return 1; }
	for f in "$@"; do
		"$VMPAIR" cable fault $f >/dev/null || { echo "cable fault $f failed"; return 1; }
	done
	out=$("$VMPAIR" exec a --timeout 900 -- /tmp/odl_xfer flood -p 6 -q 7 -n $N -s $SIZES 2>&1)
	rc=$?
	wait_for "vm b test -s /tmp/sink.rc" 300
	list=$("$VMPAIR" cable fault list)
	HITS=$(printf '%s\n' "$list" | grep -o ' hits=[0-9]*' | sed 's/ hits=//' | awk '{ s += $1 } END { print s + 0 }')
	"$VMPAIR" cable fault clear >/dev/null
	echo "flood: $out"
	echo "cable: $list"
	[ $rc -eq 0 ]
}

# sink_field NAME: a number from the sink's summary
sink_field() {
	printf '%s\n' "$SINK" | sed -n "s/^sink: .* $1=\([0-9]*\).*/\1/p" | tail -n 1
}

# accounting DESC EXACT: the sink passed (nothing wrong delivered, no
# more receives than messages); EXACT=1: ok + failed + lost == N, with
# 1..HITS messages failed or lost (a lost frame costs its own message
# only); EXACT=0: ok >= N - HITS
accounting() {
	local desc=$1 exact=$2 log=$OUT ok err lost
	ok=$(sink_field ok)
	err=$(sink_field failed)
	lost=$(sink_field lost_events)
	if [ "$SINK_RC" != 0 ] || [ -z "$ok" ]; then
		not_ok "$desc" "sink exit ${SINK_RC:-none}" "$log" \
			"b: $(vm b /tmp/odl_xfer stats 2>&1 | tr '\n' ' ')"
	elif [ "$exact" = 1 ] && { [ $((ok + err + lost)) -ne $N ] || [ $((err + lost)) -eq 0 ] ||
		[ $((err + lost)) -gt "$HITS" ]; }; then
		not_ok "$desc" "ok $ok + failed $err + lost $lost: want $N, of them 1..$HITS (cable hits) failed or lost" "$log"
	elif [ "$exact" = 0 ] && { [ "$ok" -lt $((N - HITS)) ] || [ "$HITS" -eq 0 ]; }; then
		not_ok "$desc" "ok $ok < $N - $HITS frames changed" "$log"
	else
		ok "$desc" "$log"
	fi
}

# exact_stream DESC: a flood without faults; every message delivered whole
exact_stream() {
	if flood_run && [ "$SINK_RC" = 0 ] && [ "$(sink_field ok)" = $N ]; then
		ok "$1" "$OUT"
	else
		not_ok "$1" "$OUT"
	fi
}

exact_stream "no fault: $N messages delivered whole, in order, once"

flood_run "drop hop=$hop dir=a2b every=1009 count=15"
accounting "15 frames dropped: each damaged message failed or reported lost once, the rest whole" 1

flood_run "corrupt hop=$hop dir=a2b every=1013 count=15"
accounting "15 frames with CRC errors: each damaged message failed or reported lost once, the rest whole" 1
e=$(sink_field EIO)
[ -n "$e" ] && [ "$e" -gt 0 ] && ok "the CRC errors reached the receiver as -EIO ($e)" "$SINK" ||
	not_ok "the CRC errors reached the receiver as -EIO" "$SINK"

st0=$(vm b /tmp/odl_xfer stats)
flood_run "tamper hop=$hop dir=a2b every=101 count=75 bits=0-175" \
	"tamper hop=$hop dir=a2b every=103 count=75 bits=192-255"
st1=$(vm b /tmp/odl_xfer stats)
accounting "150 frame headers changed, CRC intact: nothing wrong delivered, at most one message per changed frame" 0
hdr() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }
h0=$(( $(hdr "$st0" len_errors) + $(hdr "$st0" seq_errors) ))
h1=$(( $(hdr "$st1" len_errors) + $(hdr "$st1" seq_errors) ))
[ "$h1" -gt "$h0" ] && ok "b counted the broken headers (length/sequence errors $h0 -> $h1)" "$st1" ||
	not_ok "b counted the broken headers (length/sequence errors $h0 -> $h1)" "$st0" "$st1"

# A frame in the middle of a message, in sequence, whose header names
# another port (dst bit 0: 7 -> 6, frame 100 of message 2) or another
# message number (bit 0: frame 100 of messages 4 and 5, so one of them
# names the message after it): it can only be the message's own (TX never
# interleaves messages), so that message fails once at its own port and
# nothing else is touched: no error for port 6 on b (nobody holds it:
# it would count in no_port), no later message taken for one already
# reported (until 2026-12-02 both happened). Messages of 1 MiB, 259
# frames each; a's data is not flow controlled by software credits, so
# only data frames travel a -> b on the HopID
if [ "$(odl_flow a)" = sw-credits ]; then
	not_ok "a frame with another port or message number mid-message fails only its own message" \
		"a's flow control is sw-credits: the frame count needs data frames alone"
else
	np0=$(odl_stat b no_port)
	N=40 SIZES=1048576 flood_run "tamper hop=$hop dir=a2b nth=618 count=1 bit=160" \
		"tamper hop=$hop dir=a2b nth=1136 count=1 bit=64" \
		"tamper hop=$hop dir=a2b nth=1395 count=1 bit=64"
	np1=$(odl_stat b no_port)
	ok_n=$(sink_field ok) err_n=$(sink_field failed) lost_n=$(sink_field lost_events)
	desc="a frame mid-message with another port or message number (3 frames): 3 messages failed once each, 37 whole, no error for port 6, none lost"
	if [ "$SINK_RC" = 0 ] && [ "$HITS" = 3 ] && [ "$ok_n" = 37 ] && [ "$err_n" = 3 ] &&
		[ "$lost_n" = 0 ] && [ "$np1" = "$np0" ]; then
		ok "$desc" "$OUT"
	else
		not_ok "$desc" "hits $HITS, ok $ok_n failed $err_n lost $lost_n, b's no_port $np0 -> $np1" "$OUT" \
			"b: $(vm b /tmp/odl_xfer stats 2>&1)"
	fi
fi

exact_stream "faults off: $N messages delivered whole, in order, once"
odl_cli_run "faults off: CLI 64 x 1 MiB verified" 900 \
	--test bandwidth --size 1M --iterations 64 --timeout 60000

# nothing held: both modules unload, load, log in and carry data
reload() {
	local v
	for v in a b; do
		odl_unload $v || { echo "$v: rmmod odl_tb5 failed"; return 1; }
	done
	odl_load a && odl_load b || { echo "insmod failed"; return 1; }
	odl_wait_connected a 180 && odl_wait_connected b 180 || { echo "no login after the reload"; return 1; }
	odl_xfer_run a b 1 2 8 4096,70000,1048576
}
if out=$(reload 2>&1); then
	ok "odl_tb5 unloads and loads on both, logs in, a -> b verified" "$out"
else
	not_ok "odl_tb5 unloads and loads on both, logs in, a -> b verified" "$out" \
		"$(vm a /tmp/odl_xfer info 2>&1)" "$(vm b /tmp/odl_xfer info 2>&1)"
fi
odl_check_clean
tap_done
