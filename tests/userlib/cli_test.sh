#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end tests of odl_tb5_cli over the shm backend: a server and a
# client process per case, every test type, bad arguments, a verify failure
# and a vanished server must fail. TAP output. Usage: cli_test.sh CLI
set -u
CLI=${1:?usage: cli_test.sh path/to/odl_tb5_cli}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
n=0 fails=0
NAME="clit$$"

ok()   { n=$((n+1)); echo "ok $n - $*"; }
notok(){ n=$((n+1)); fails=$((fails+1)); echo "not ok $n - $*"; sed 's/^/# /' "$TMP"/out "$TMP"/srv 2>/dev/null | tail -20; }

# pair EXPECT(0|1) DESC GREP CLIENT-ARGS... : server + client, both exit codes checked
pair() {
	local expect=$1 desc=$2 pat=$3; shift 3
	local dev="shm:${NAME}_$n"
	timeout 60 "$CLI" --server --device "$dev" --timeout 20000 >"$TMP"/srv 2>&1 &
	local sp=$!
	timeout 60 "$CLI" --client --device "$dev" "$@" >"$TMP"/out 2>&1
	local crc=$?
	wait $sp; local src=$?
	if [ "$expect" = 0 ]; then
		if [ $crc = 0 ] && [ $src = 0 ] && grep -Eq -- "$pat" "$TMP"/out; then
			ok "$desc"; else notok "$desc (client $crc, server $src)"; fi
	else
		if [ $crc != 0 ] && [ $src != 0 ] && grep -Eq -- "$pat" "$TMP"/out "$TMP"/srv; then
			ok "$desc"; else notok "$desc (client $crc, server $src; expected failure)"; fi
	fi
}

# single EXPECT-RC DESC GREP ARGS... : one process
single() {
	local expect=$1 desc=$2 pat=$3; shift 3
	timeout 30 "$CLI" "$@" >"$TMP"/out 2>&1
	local rc=$?
	if [ $rc = "$expect" ] && grep -Eq -- "$pat" "$TMP"/out; then ok "$desc"
	else notok "$desc (rc $rc)"; fi
}

pair 0 "bandwidth 64K x 2000" 'BW average\[Gb/sec\]' --test bandwidth --size 64K --iterations 2000
pair 0 "bandwidth 4 MiB, busy poll" 'all data verified' --test bandwidth --size 4M --iterations 40 --busy-poll
pair 0 "bandwidth sizes 0 / 1 / 4097" '#bytes' --test bandwidth --size 0 --iterations 50
pair 0 "bandwidth size 1" ' 1 +50 ' --test bandwidth --size 1 --iterations 50
pair 0 "bandwidth size 4097, json" '"bw_avg_gbps":' --test bandwidth --size 4097 --iterations 300 --json
pair 0 "bandwidth by duration" 'BW peak' --test bandwidth --duration 0.5 --size 256K
pair 0 "latency" 't_median\[usec\]' --test latency --iterations 2000
pair 0 "latency json" '"p99_us":' --test latency --iterations 500 --size 4096 --json
pair 0 "jitter with histogram" 'Latency histogram' --test jitter --iterations 2000
pair 0 "jitter json" '"histogram":\[' --test jitter --duration 0.3 --json
pair 0 "latency-load" 'background load' --test latency-load --iterations 1000
pair 0 "mimo 3 streams" 'aggregate:' --test mimo --streams 3 --iterations 300 --size 32K
pair 0 "mimo json, duration" '"aggregate_gbps":' --test mimo --streams 2 --duration 0.3 --json
pair 0 "no-verify" 'not verified' --test bandwidth --iterations 100 --no-verify
pair 0 "bandwidth from user memory (registered, verified)" 'buffers: user memory \(registered\); library copied 0 bytes' --test bandwidth --size 100K --iterations 200 --user-memory
pair 0 "latency with user memory" 'buffers: user memory' --test latency --iterations 300 --size 5000 --user-memory
pair 0 "mimo with user memory" 'buffers: user memory' --test mimo --streams 2 --iterations 100 --size 64K --user-memory
pair 1 "verify failure with user memory fails both sides" 'data mismatch' --test bandwidth --iterations 100 --corrupt-at 37 --user-memory
pair 1 "verify failure (bandwidth) fails both sides" 'data mismatch' --test bandwidth --iterations 100 --corrupt-at 37
pair 1 "verify failure (latency) fails both sides" 'data mismatch' --test latency --iterations 100 --corrupt-at 5
pair 1 "verify failure (mimo) fails" 'data mismatch' --test mimo --streams 2 --iterations 100 --corrupt-at 10

# a message lost in transit (the client's 50th data message never arrives:
# ODL_TB5_SHM_DROP, like a frame the cable drops): the server reports the
# loss, never the next message in its place (no data mismatch), both fail
dev="shm:${NAME}_lost"
timeout 60 "$CLI" --server --device "$dev" --timeout 20000 >"$TMP"/srv 2>&1 &
sp=$!
# the client's control handle sends HELLO and DONE only: 50 hits the data
timeout 60 env ODL_TB5_SHM_DROP=50 "$CLI" --client --device "$dev" --test bandwidth \
	--iterations 100 --size 8K >"$TMP"/out 2>&1
crc=$?
wait $sp; src=$?
if [ $crc != 0 ] && [ $src != 0 ] &&
	grep -q 'error (server): receive: message lost or corrupted in transit' "$TMP"/srv &&
	! grep -q 'data mismatch' "$TMP"/out "$TMP"/srv; then
	ok "message lost in transit: reported as lost, not as a data mismatch"
else
	notok "message lost in transit (client $crc, server $src)"
fi

# bad arguments: non-zero exit and a clear message
single 1 "no role" 'exactly one of --server and --client'
single 1 "both roles" 'exactly one of' --server --client
single 1 "unknown test" "unknown test 'foo'" --client --test foo
single 1 "bad size" "bad size" --client --size 12Q
single 1 "negative size" "bad size" --client --size -5
single 1 "iterations and duration" 'not both' --client -n 5 -D 1
single 1 "streams without mimo" 'for --test mimo' --client --streams 2
single 1 "too many streams" 'streams must be' --client --test mimo --streams 99
single 1 "bad duration" 'bad duration' --client -D abc
single 1 "bad port" 'port must be' --client --port 0
single 1 "stray argument" 'unexpected argument' --client foo
single 1 "unknown option" 'usage:' --client --bogus
single 0 "help" 'usage:' --help
single 1 "bad device spec" "cannot open device 'nonsense'" --client --device nonsense
single 1 "missing kernel device" 'cannot open device .*No such device|no such device' --client --device 4242
single 1 "no server: bounded wait" 'no server \(timed out\)' --client --device "shm:${NAME}_none" --timeout 300
single 1 "size above the maximum" 'exceeds the device' --client --device "shm:${NAME}_big" --size 65M --timeout 300
single 1 "--list takes no --server" 'takes no --server or --client' --list --server
# --list: the kernel devices of this machine (none on a build host; the
# odl-basic VM scenario checks a real one against the thunderbolt core)
if ls /dev/odl_tb5_[0-9]* >/dev/null 2>&1; then
	single 0 "--list names this machine's devices" '^/dev/odl_tb5_[0-9]+$' --list
	single 0 "--list --json" '^\{"devices":\[\{"name":"/dev/odl_tb5_' --list --json
else
	single 1 "--list without a device: exit 1, says so" 'no odl_tb5 devices \(is odl_tb5.ko loaded' --list
	single 1 "--list --json without a device: an empty list, exit 1" '^\{"devices":\[\]\}$' --list --json
fi

# the server disappears in the middle of a run: the client fails, no hang
dev="shm:${NAME}_kill"
"$CLI" --server --device "$dev" >"$TMP"/srv 2>&1 &
sp=$!
( sleep 0.5; kill -9 $sp ) &
timeout 30 "$CLI" --client --device "$dev" --test bandwidth --duration 5 --size 64K >"$TMP"/out 2>&1
rc=$?
wait $sp 2>/dev/null
if [ $rc = 1 ] && grep -q 'peer disconnected' "$TMP"/out; then ok "server killed mid-run: client fails cleanly"
else notok "server killed mid-run (rc $rc)"; fi

# nothing of ours left in /dev/shm (the killed server's segment is stale
# and recycled by the next open; remove it like a next run would)
"$CLI" --server --device "$dev" --timeout 100 >/dev/null 2>&1
left=$(ls /dev/shm 2>/dev/null | grep -c "odl_tb5\.${NAME}" || true)
if [ "$left" = 0 ]; then ok "no shared memory segments left"
else notok "segments left: $(ls /dev/shm | grep "odl_tb5\.${NAME}")"; fi

echo "1..$n"
[ $fails = 0 ] || { echo "# $fails of $n CLI tests failed" >&2; exit 1; }
