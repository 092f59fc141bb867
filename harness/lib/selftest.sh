#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Self test of the harness: agent protocol, mux, vmpair client commands, tap.sh.
#   harness/lib/selftest.sh          fake pair (agents run on the host, seconds)
#   harness/lib/selftest.sh --real   a real pair of TCG guests (needs build/env.sh)
# Output is TAP.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
. "$HERE/tap.sh"
TAP_AUTO_EVIDENCE=0

MODE=fake
[ "${1:-}" = "--real" ] && MODE=real
TMP=$(mktemp -d /tmp/odl-selftest.XXXXXX)
export VMPAIR_STATE=${VMPAIR_STATE:-$TMP/pair}
AGENT=$REPO/build/agent/odl-agent
[ -x "$AGENT" ] || make -s -C "$REPO" "$AGENT" >/dev/null || bail_out "cannot build $AGENT"
tap_cleanup '"$VMPAIR" down >/dev/null 2>&1; rm -rf "$TMP"' 
tap_timeout 900

# 1. agent alone: garbage, unknown type, oversized frame, then PING
out=$(HERE=$HERE python3 - "$AGENT" <<'EOF'
import os, struct, subprocess, sys
sys.path.insert(0, os.environ["HERE"])
import odlproto as P
data = b"garbage!" * 3 + P.frame(0x7f, 5, b"x") + \
    struct.pack("<IBBHII", P.MAGIC, P.EXEC, 0, 0, 6, 5 << 20) + b"\0" * 64 + \
    P.frame(P.EXEC, 7, b"") + P.frame(P.KILL, 8, b"\x09\0\0\0") + \
    P.frame(P.PUTDATA, 9, b"zz") + P.frame(P.PING, 10, b"")
r = subprocess.run([sys.argv[1], "--stdio", "--name", "t"], input=data,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
frames = P.Parser().feed(r.stdout)
print(" ".join("%s:%d" % (P.NAMES.get(t, t), c) for t, c, _ in frames))
EOF
)
# the oversized frame's payload swallows the frames that follow it inside
# its announced length, so only the error for channel 6 and PONG are certain
case "$out" in
*"ERROR:5"*"ERROR:6"*) ok "agent replies ERROR to bad frames and keeps going" "$out" ;;
*) not_ok "agent replies ERROR to bad frames and keeps going" "$out" ;;
esac
out=$(HERE=$HERE python3 - "$AGENT" <<'EOF'
import os, subprocess, sys
sys.path.insert(0, os.environ["HERE"])
import odlproto as P
data = b"\x01\x02junk" + P.frame(P.EXEC, 7, b"") + P.frame(P.KILL, 8, b"\x09\0\0\0") + \
    P.frame(P.PUTDATA, 9, b"zz") + P.frame(P.PING, 10, b"")
r = subprocess.run([sys.argv[1], "--stdio", "--name", "t"], input=data,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
print(" ".join("%s:%d" % (P.NAMES.get(t, t), c) for t, c, _ in P.Parser().feed(r.stdout)))
EOF
)
is "$out" "ERROR:7 ERROR:8 ERROR:9 PONG:10" "agent: empty EXEC, stray KILL/PUTDATA rejected, PING answered"

# 2. pair up (a bad --smp is refused before anything starts)
out=$("$VMPAIR" up --fake --smp 9 2>&1)
rc=$?
if [ $rc -ne 0 ] && echo "$out" | grep -q -- '--smp must be 1..8' && ! "$VMPAIR" status >/dev/null 2>&1; then
	ok "vmpair up --smp 9 refused, nothing started" "$out"
else
	not_ok "vmpair up --smp 9 refused, nothing started" "exit $rc" "$out"
fi
T0=$SECONDS
if [ "$MODE" = fake ]; then
	check "vmpair up (fake pair)" "$VMPAIR" up --fake --smp 2
	case "$("$VMPAIR" status 2>&1)" in
	*"2 vCPU each"*) ok "vmpair status shows --smp" ;;
	*) not_ok "vmpair status shows --smp" "$("$VMPAIR" status 2>&1)" ;;
	esac
else
	check "vmpair up (TCG pair)" "$VMPAIR" up
fi
diag "up took $((SECONDS - T0)) s"
check "vmpair status" "$VMPAIR" status

is "$(va sh -c 'echo hi')" "hi" "exec stdout"
is "$(va sh -c 'echo e >&2' 2>&1 >/dev/null)" "e" "exec stderr goes to stderr"
va sh -c 'exit 42'
is "$?" 42 "exit status propagates"
va sh -c 'kill -KILL $$'
is "$?" 137 "signal -> 128+n"
va /no/such/program 2>/dev/null
is "$?" 127 "missing program -> 127"
"$VMPAIR" exec a --timeout 1 -- sleep 30 2>/dev/null
is "$?" 124 "timeout -> 124"
S=$SECONDS
out=$(va sh -c 'sleep 60 & echo $!')
rc=$?
if [ -n "$out" ] && [ $rc -eq 0 ] && [ $((SECONDS - S)) -le 5 ]; then
	ok "background child does not hold the channel" "$((SECONDS - S)) s"
else
	not_ok "background child does not hold the channel" "out=$out rc=$rc $((SECONDS - S)) s"
fi
va kill "$out"

S=$SECONDS
va sleep 2 & p1=$!
va sleep 2 & p2=$!
vb sleep 2 & p3=$!
wait $p1 $p2 $p3
if [ $((SECONDS - S)) -le 5 ]; then ok "parallel execs run concurrently" "$((SECONDS - S)) s"
else not_ok "parallel execs run concurrently" "$((SECONDS - S)) s"; fi

head -c $((3 * 1024 * 1024 + 17)) /dev/urandom > "$TMP/rand"
want=$(sha256sum < "$TMP/rand" | cut -d' ' -f1)
check "put 3 MiB" "$VMPAIR" put a "$TMP/rand" /tmp/odl-selftest-rand
is "$(va sha256sum /tmp/odl-selftest-rand | cut -d' ' -f1)" "$want" "sha256 in guest matches"
check "get 3 MiB" "$VMPAIR" get a /tmp/odl-selftest-rand "$TMP/back"
is "$(sha256sum < "$TMP/back" | cut -d' ' -f1)" "$want" "get round trip matches"
check_fails "put to a missing directory fails" "$VMPAIR" put a "$TMP/rand" /no/such/dir/x
check_fails "get of a missing file fails" "$VMPAIR" get a /no/such/file "$TMP/x"
printf 'abc\n' > "$TMP/in"
is "$("$VMPAIR" exec a --stdin "$TMP/in" -- tr a-z A-Z)" "ABC" "--stdin file"
is "$(echo xyz | "$VMPAIR" exec a -i -- cat)" "xyz" "-i passes stdin through"
is "$(head -c 2000000 "$TMP/rand" | "$VMPAIR" exec a -i -- wc -c | tr -d ' ')" "2000000" "2 MB through stdin"
is "$(va head -c 5000000 /dev/zero | wc -c | tr -d ' ')" "5000000" "5 MB through stdout"
va rm -f /tmp/odl-selftest-rand

wait_for "va test -e /tmp/odl-flag" 2 >/dev/null
is "$?" 1 "wait_for times out on a false condition"
(sleep 1; va touch /tmp/odl-flag) &
wait_for "va test -e /tmp/odl-flag" 30
is "$?" 0 "wait_for sees a condition become true"
va rm -f /tmp/odl-flag

if [ -S "$VMPAIR_STATE/cable/ctl.sock" ]; then
	check "cable status" "$VMPAIR" cable status
	check "cable unplug" "$VMPAIR" cable unplug
	check "cable plug" "$VMPAIR" cable plug
	check_fails "cable bogus command fails" "$VMPAIR" cable bogus
else
	not_ok "cable commands" "no cable running: vmpair up starts it when build/sim has it (make sim-bins)"
fi

check "down" "$VMPAIR" down
check "down again (idempotent)" "$VMPAIR" down
check_fails "exec after down fails" "$VMPAIR" exec a -- true
tap_done
