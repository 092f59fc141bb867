#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-faults: frames of a bandwidth run corrupted or dropped on the data
# HopID by the cable (`fault corrupt` / `fault drop`, docs/link-protocol.md
# section 6): the receiver reports the message as failed (-EIO / -EPROTO
# through the library), never as good data (no verify mismatch), and the
# driver's counters show it; after the fault the link carries verified data.
# A whole one-frame message dropped (no frame of it arrives, the driver's
# EVENT with ODL_TB5_CF_MSG_LOST) is reported by the library as a lost
# message (poll -EBADMSG), never as the next message in its place.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 11
tap_timeout 1500
odl_setup
hop=$(odl_data_hop a)
diag "odl_tb5 data HopID a->b: $hop"

# fault_run NAME FAULT WANT [CLI-ARGS]: one bandwidth run (64 x 1 MiB
# unless CLI-ARGS) with the cable fault; b's counters before and after in
# $FAULT_ST
FAULT_ST=
FAULT_ST0=
FAULT_ST1=
fault_run() {
	local name=$1 fault=$2 want=$3 args=${4:---size 1M --iterations 64} out rc srv st0 st1
	"$VMPAIR" cable fault clear >/dev/null
	st0=$(vm b /tmp/odl_xfer stats)
	odl_cli_server b || { not_ok "$name" "server did not start"; return; }
	"$VMPAIR" cable fault $fault >/dev/null || { not_ok "$name" "cable fault $fault failed"; return; }
	out=$("$VMPAIR" exec a --timeout 600 -- /tmp/odl_tb5_cli --client --device 0 \
		--test bandwidth $args --timeout 60000 2>&1)
	rc=$?
	wait_for "! vm b pidof odl_tb5_cli" 120
	srv=$(vm b cat /tmp/cli-server.log)
	st1=$(vm b /tmp/odl_xfer stats)
	if [ $rc -ne 0 ] && echo "$srv" | grep -q "error (server): receive: $want" &&
		! echo "$srv$out" | grep -q 'data mismatch'; then
		ok "$name: the message failed ($want), no bad data delivered" \
			"$(echo "$srv" | grep error)" "$("$VMPAIR" cable fault list)"
	else
		not_ok "$name: the message failed ($want), no bad data delivered" \
			"client exit $rc:" "$out" "server:" "$srv" "$("$VMPAIR" cable fault list)"
	fi
	FAULT_ST="$st0
$st1"
	FAULT_ST0=$(echo "$st0" | tr '\n' ' ')
	FAULT_ST1=$(echo "$st1" | tr '\n' ' ')
}
fault_run "bit flip in frame 3000 a->b" "corrupt hop=$hop dir=a2b nth=3000 count=1" "I/O error"
d=$(echo "$FAULT_ST" | tail -n 1 | sed -n 's/.*desc_errors=\([1-9][0-9]*\).*/\1/p')
[ -n "$d" ] && ok "b counted the descriptor (CRC) error" "$FAULT_ST" || not_ok "b counted the descriptor (CRC) error" "$FAULT_ST"
fault_run "frame 3000 a->b dropped" "drop hop=$hop dir=a2b nth=3000 count=1" "protocol error"
d=$(echo "$FAULT_ST" | tail -n 1 | sed -n 's/.*seq_errors=\([1-9][0-9]*\).*/\1/p')
[ -n "$d" ] && ok "b counted the sequence gap" "$FAULT_ST" || not_ok "b counted the sequence gap" "$FAULT_ST"
fault_run "frame 3000 a->b dropped, one-frame messages: a whole message lost" \
	"drop hop=$hop dir=a2b nth=3000 count=1" "message lost or corrupted in transit" \
	"--size 4000 --iterations 6000"
d0=$(echo "$FAULT_ST0" | sed -n 's/.*seq_errors=\([0-9]*\).*/\1/p')
d1=$(echo "$FAULT_ST1" | sed -n 's/.*seq_errors=\([0-9]*\).*/\1/p')
[ -n "$d0" ] && [ -n "$d1" ] && [ "$d1" -gt "$d0" ] &&
	ok "b counted the sequence gap of the lost message" "$FAULT_ST" ||
	not_ok "b counted the sequence gap of the lost message" "$FAULT_ST"
fault_run "5 frames corrupted (every 700th)" "corrupt hop=$hop dir=a2b every=700 count=5" "I/O error"
"$VMPAIR" cable fault clear >/dev/null
odl_cli_run "after the faults: 256 x 1 MiB verified" 900 \
	--test bandwidth --size 1M --iterations 256 --timeout 60000
odl_cli_run "after the faults: latency 4 KiB x 500 verified" 600 \
	--test latency --size 4K --iterations 500 --timeout 60000
odl_check_clean
tap_done
