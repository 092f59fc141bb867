# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# TAP helpers for OdinLink scenario scripts.  Source it:
#
#   . "$(dirname "$0")/../lib/tap.sh"      (or harness/lib/tap.sh)
#   tap_plan 3
#   tap_timeout 600                  # whole-scenario watchdog -> "Bail out!"
#   check "a sees the link"  va sh -c 'dmesg | grep -q "link is up"'
#   wait_for "va test -e /sys/bus/thunderbolt/devices/0-1" 60 && ok "peer appeared" || not_ok "peer appeared"
#   is "$(va cat /tmp/x)" "hello" "file content"
#   tap_done                         # exit status: 0 iff all planned tests passed
#
# Functions:
#   tap_plan N            print the plan "1..N" (or call tap_done without a plan)
#   ok DESC [DIAG...]     / not_ok DESC [DIAG...]   one test result; DIAG lines as "# ..."
#   check DESC CMD...     run CMD; ok if status 0, else not_ok with its output
#   check_fails DESC CMD... ok if CMD fails
#   is GOT WANT DESC      string equality
#   skip DESC REASON      "ok N - DESC # SKIP REASON"
#   diag TEXT...          "# TEXT" (multi-line safe), to stdout
#   wait_for "SHELL CMD" TIMEOUT [MAX_INTERVAL]
#                         poll (eval) until the command succeeds; 0 on success,
#                         1 on timeout.  Intervals grow 0.1 s .. MAX_INTERVAL (2 s).
#   wait_until TIMEOUT CMD...   same with an argv command
#   va CMD... / vb CMD... run CMD in guest a / b (vmpair exec; status propagated;
#                         per-command timeout $TAP_EXEC_TIMEOUT, default 120 s)
#   vm a|b CMD...         same, guest chosen by the first argument
#   evidence [LINES]      dmesg tails of both guests, cable status and trace tail, as
#                         diagnostics.  not_ok prints it once per scenario
#                         (TAP_AUTO_EVIDENCE=0 turns that off).
#   tap_timeout SECONDS   watchdog: prints evidence and "Bail out!" and exits 1
#   tap_cleanup "CMD"     run CMD (eval) when the script exits, last registered first
#                         (tap.sh owns the EXIT trap; do not set your own)
#   bail_out REASON       "Bail out! REASON", exit 1
#   tap_done              missing plan -> prints it; exits 1 on any failure or miscount
#
# Environment: VMPAIR (path of harness/vmpair; default: next to this file),
# VMPAIR_STATE (which pair; see docs/vmpair.md).

TAP_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VMPAIR=${VMPAIR:-$TAP_LIB_DIR/../vmpair}
TAP_N=0
TAP_FAILED=0
TAP_PLANNED=
TAP_EVIDENCE_SHOWN=0
TAP_AUTO_EVIDENCE=${TAP_AUTO_EVIDENCE:-1}
TAP_EXEC_TIMEOUT=${TAP_EXEC_TIMEOUT:-120}
TAP_WATCHDOG=
TAP_CLEANUP=()

# tap.sh owns the EXIT trap: register cleanups with tap_cleanup instead of trap.
_tap_exit() {
	local i
	_tap_stop_watchdog
	for ((i = ${#TAP_CLEANUP[@]} - 1; i >= 0; i--)); do
		eval "${TAP_CLEANUP[$i]}"
	done
}
trap _tap_exit EXIT

tap_cleanup() {
	TAP_CLEANUP+=("$*")
}

diag() {
	local line
	printf '%s\n' "$*" | while IFS= read -r line; do printf '# %s\n' "$line"; done
}

tap_plan() {
	TAP_PLANNED=$1
	echo "1..$1"
}

ok() {
	local desc=$1
	shift
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $desc"
	[ $# -gt 0 ] && diag "$@"
	return 0
}

not_ok() {
	local desc=$1
	shift
	TAP_N=$((TAP_N + 1))
	TAP_FAILED=$((TAP_FAILED + 1))
	echo "not ok $TAP_N - $desc"
	[ $# -gt 0 ] && diag "$@"
	if [ "$TAP_AUTO_EVIDENCE" = 1 ] && [ "$TAP_EVIDENCE_SHOWN" = 0 ]; then
		TAP_EVIDENCE_SHOWN=1
		evidence
	fi
	return 1
}

skip() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $1 # SKIP ${2:-}"
}

check() {
	local desc=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		ok "$desc"
	else
		not_ok "$desc" "command: $*" "status: $rc" "$(printf '%s\n' "$out" | tail -n 40)"
	fi
}

check_fails() {
	local desc=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	if [ $rc -ne 0 ]; then
		ok "$desc" "status $rc (failure expected)"
	else
		not_ok "$desc" "command: $*" "succeeded but should have failed" "$(printf '%s\n' "$out" | tail -n 40)"
	fi
}

is() {
	if [ "$1" = "$2" ]; then
		ok "$3"
	else
		not_ok "$3" "got:  '$1'" "want: '$2'"
	fi
}

# Sleep for a fraction of a second without relying on a non-POSIX sleep.
_tap_nap() { sleep "$1" 2>/dev/null || sleep 1; }

wait_for() {
	local cmd=$1 timeout=${2:-60} maxint=${3:-2}
	local start=$SECONDS int=0.1
	while :; do
		if eval "$cmd" >/dev/null 2>&1; then
			return 0
		fi
		if [ $((SECONDS - start)) -ge "${timeout%.*}" ]; then
			diag "wait_for: '$cmd' still false after ${timeout}s"
			return 1
		fi
		_tap_nap "$int"
		int=$(awk -v i="$int" -v m="$maxint" 'BEGIN { i *= 2; if (i > m) i = m; print i }')
	done
}

wait_until() {
	local timeout=$1
	shift
	local q
	printf -v q '%q ' "$@"
	wait_for "$q" "$timeout"
}

vm() {
	local v=$1
	shift
	"$VMPAIR" exec "$v" --timeout "$TAP_EXEC_TIMEOUT" -- "$@"
}
va() { vm a "$@"; }
vb() { vm b "$@"; }

evidence() {
	local lines=${1:-40} v out
	diag "---- evidence (vmpair state: ${VMPAIR_STATE:-default}) ----"
	for v in a b; do
		if out=$("$VMPAIR" exec "$v" --timeout 30 -- dmesg 2>&1); then
			diag "-- dmesg $v (last $lines lines):" "$(printf '%s\n' "$out" | tail -n "$lines")"
		else
			diag "-- dmesg $v unavailable ($out); console log tail:" \
				"$("$VMPAIR" logs "$v" -n "$lines" 2>&1)"
		fi
	done
	diag "-- cable status:" "$("$VMPAIR" cable status 2>&1)"
	for d in "${VMPAIR_STATE:-/nonexistent}"/cable[1-9]; do
		[ -d "$d" ] && diag "-- ${d##*/} status:" "$("$VMPAIR" cable --link "${d##*/cable}" status 2>&1)"
	done
	diag "-- cable log and trace tail:" "$("$VMPAIR" logs cable -n "$lines" 2>&1)"
	diag "---- end of evidence ----"
}

bail_out() {
	echo "Bail out! $*"
	exit 1
}

_tap_on_watchdog() {
	trap - TERM
	echo "not ok $((TAP_N + 1)) - scenario watchdog expired"
	TAP_EVIDENCE_SHOWN=1
	evidence
	echo "Bail out! scenario exceeded its time limit"
	exit 1
}

_tap_stop_watchdog() {
	if [ -n "$TAP_WATCHDOG" ]; then
		pkill -P "$TAP_WATCHDOG" 2>/dev/null
		kill "$TAP_WATCHDOG" 2>/dev/null
		TAP_WATCHDOG=
	fi
}

tap_timeout() {
	_tap_stop_watchdog
	trap _tap_on_watchdog TERM
	# "&&": killing the sleep (tap_done) must not fire the watchdog
	(sleep "$1" && kill -TERM $$) 2>/dev/null &
	TAP_WATCHDOG=$!
}

tap_done() {
	_tap_stop_watchdog
	if [ -z "$TAP_PLANNED" ]; then
		echo "1..$TAP_N"
		TAP_PLANNED=$TAP_N
	fi
	if [ "$TAP_N" -ne "$TAP_PLANNED" ]; then
		diag "planned $TAP_PLANNED tests but ran $TAP_N"
		exit 1
	fi
	if [ "$TAP_FAILED" -ne 0 ]; then
		diag "failed $TAP_FAILED of $TAP_N"
		exit 1
	fi
	exit 0
}
