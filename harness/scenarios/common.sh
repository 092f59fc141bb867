# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Shared helpers for scenarios: each scenario boots its own pair in
# $VMPAIR_STATE (set by harness/sim-test) and tears it down on exit.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/python.sh"

SCEN_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export VMPAIR_STATE=${VMPAIR_STATE:-/tmp/odl-vmpair-$(id -un)/scenario-$$}
# The guests' CPU model for the plugin benchmark (bench/rccl.sh, which says
# why) and the net-plugin scenario that checks it: AVX2, no ERMS, no LA57.
BENCH_CPU_MODEL=max,erms=off,la57=off

pair_down() {
	[ "${KEEP_PAIR:-0}" = 1 ] && return 0
	"$VMPAIR" down >/dev/null 2>&1 || true
}

# pair_profile [vmpair up options]: the profile host a will run (the last
# --profile/--profile-a given, else SIM_PROFILE, else generic)
pair_profile() {
	local p=${SIM_PROFILE:-generic}
	while [ $# -gt 0 ]; do
		case $1 in
		--profile|--profile-a) p=$2; shift ;;
		--qemu-extra) break ;;
		esac
		shift
	done
	echo "$p"
}

# pair_up [vmpair up options]: boot the pair or bail out with the evidence.
pair_up() {
	local out extra=()
	tap_cleanup pair_down
	# intel-falcon-ridge: Linux takes the software CM only on an Apple
	# machine (docs/profiles.md); the DMI vendor makes the VM one.
	case " $* ${SIM_PROFILE:-} " in
	*" intel-falcon-ridge "*)
		extra=(--qemu-extra -smbios "type=1,manufacturer=Apple Inc.") ;;
	esac
	# SIM_KERNEL (set by sim-test for NAME@KERNEL) picks the guest kernel,
	# SIM_PROFILE (NAME%PROFILE) the controller profile of both hosts (a
	# scenario's own --profile options come later and win),
	# SIM_CAPTURE=1 adds --capture (cable/capture.odlcap; sim-test keeps it
	# only when the scenario fails).
	# PAIR_EXTRA: more vmpair up options from a scenario variant (--iommu)
	# shellcheck disable=SC2086
	if ! out=$("$VMPAIR" up ${SIM_KERNEL:+--kernel "$SIM_KERNEL"} \
		${SIM_PROFILE:+--profile "$SIM_PROFILE"} \
		$([ "${SIM_CAPTURE:-0}" = 1 ] && echo --capture) \
		${PAIR_EXTRA:-} "$@" "${extra[@]}" 2>&1); then
		diag "vmpair up failed:" "$out"
		evidence
		bail_out "could not start the VM pair"
	fi
	# a boot retried after a guest kernel died before /init loaded a driver
	# for the controller (vmpair
	# says so on a line of its own; sim-test repeats it in the summary)
	printf '%s\n' "$out" | grep -E '^vmpair: boot retry' | while read -r l; do diag "$l"; done
	diag "$(printf '%s\n' "$out" | tail -n 1)"
}

# The guest's kernel release (uname -r) and whether it is at least X.Y.
kernel_at_least() { # GUEST MAJOR MINOR
	local r
	r=$(vm "$1" uname -r) || return 2
	awk -v r="$r" -v M="$2" -v m="$3" 'BEGIN { split(r, v, /[.-]/);
		exit !(v[1] > M || (v[1] == M && v[2] >= m)) }'
}

# QMP and the usb4-nhi QOM properties (docs/profiles.md, "Fault hooks").
# qmp GUEST JSON...: send each command (after qmp_capabilities) to QEMU of
# GUEST ($VMPAIR_STATE/GUEST-qmp.sock); prints each "return" as JSON, one
# line per command; non-zero on an error reply.
qmp() {
	local v=$1
	shift
	python3 - "$VMPAIR_STATE/$v-qmp.sock" "$@" <<'PYEOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(30)
s.connect(sys.argv[1])
f = s.makefile("rw")
def reply():
    while True:
        m = json.loads(f.readline())
        if "return" in m or "error" in m:
            return m
json.loads(f.readline())  # greeting
f.write(json.dumps({"execute": "qmp_capabilities"}) + "\n"); f.flush(); reply()
rc = 0
for cmd in sys.argv[2:]:
    f.write(cmd + "\n"); f.flush()
    m = reply()
    if "error" in m:
        print("qmp error: %s" % m["error"].get("desc"), file=sys.stderr)
        rc = 1
    else:
        print(json.dumps(m["return"]))
sys.exit(rc)
PYEOF
}

# nhi_qom_path GUEST: QOM path of the usb4-nhi device (remembered when
# called outside a command substitution)
nhi_qom_path() {
	local var=_NHI_QOM_$1 p
	if [ -z "${!var:-}" ]; then
		p=$(qmp "$1" '{"execute":"qom-list","arguments":{"path":"/machine/peripheral-anon"}}' |
			python3 -c 'import json, sys
for e in json.loads(sys.stdin.read() or "[]"):
    if e.get("type") == "child<usb4-nhi>":
        print("/machine/peripheral-anon/" + e["name"]); break') || return 1
		[ -n "$p" ] || return 1
		printf -v "$var" '%s' "$p"
	fi
	echo "${!var}"
}

# nhi_stats GUEST [KEY]: the model's counters ("k=v k=v ..."), or one value
nhi_stats() {
	local p s
	p=$(nhi_qom_path "$1") || return 1
	s=$(qmp "$1" "{\"execute\":\"qom-get\",\"arguments\":{\"path\":\"$p\",\"property\":\"stats\"}}") || return 1
	s=$(printf '%s' "$s" | python3 -c 'import json, sys; print(json.loads(sys.stdin.read()))')
	if [ $# -ge 2 ]; then
		printf '%s\n' "$s" | tr ' ' '\n' | sed -n "s/^$2=//p"
	else
		printf '%s\n' "$s"
	fi
}

# nhi_rings GUEST: the model's ring state (hw-model nhi_rings_describe: an
# interrupt line, then a line per enabled ring with its indices, E2E
# credits, held frames and late completions)
nhi_rings() {
	local p
	p=$(nhi_qom_path "$1") || return 1
	qmp "$1" "{\"execute\":\"qom-get\",\"arguments\":{\"path\":\"$p\",\"property\":\"rings\"}}" |
		python3 -c 'import json, sys; sys.stdout.write(json.loads(sys.stdin.read()))'
}

# link_evidence: what a stalled data path leaves behind, from both models,
# both guests' network view and the cable (for a failed check's diagnostics)
link_evidence() {
	local v
	for v in a b; do
		echo "$v: model stats: $(nhi_stats $v 2>&1)"
		nhi_rings $v 2>&1 | sed "s/^/$v: model /"
		vm $v sh -c 'ip -s link show thunderbolt0 2>/dev/null; netstat -tn 2>/dev/null | grep -E "^tcp"; dmesg | tail -n 6' 2>&1 |
			sed "s/^/$v: /"
	done
	echo "cable: $("$VMPAIR" cable status 2>&1)"
}

# nhi_fault GUEST "TEXT": set the model's fault property (e.g.
# "drop-irq rx=1 nth=3", "clear")
nhi_fault() {
	local p
	p=$(nhi_qom_path "$1") || return 1
	qmp "$1" "$(python3 -c 'import json, sys
print(json.dumps({"execute": "qom-set", "arguments": {"path": sys.argv[1], "property": "fault", "value": sys.argv[2]}}))' "$p" "$2")" >/dev/null
}

# profile_key PROFILE KEY: a key of hw-model/profiles/PROFILE.profile (or of
# a profile file given as a path; keys it lacks come from generic)
profile_key() {
	local f v
	case $1 in */*) f=$1 ;; *) f=$SCEN_DIR/../../hw-model/profiles/$1.profile ;; esac
	for f in "$f" "$SCEN_DIR/../../hw-model/profiles/generic.profile"; do
		v=$(sed -n "s/^[[:space:]]*$2[[:space:]]*=[[:space:]]*\([^#[:space:]]*\).*/\1/p" "$f" 2>/dev/null | tail -n 1)
		[ -n "$v" ] && { echo "$v"; return 0; }
	done
	return 1
}

# The NHI's PCI address in guest $1: class 0c0340, or the PCI ID of one of
# the profiles (intel-falcon-ridge has class 088000, as the real part)
nhi_bdf() {
	local ids="" f
	for f in "$SCEN_DIR"/../../hw-model/profiles/*.profile; do
		ids="$ids $(sed -n 's/^pci_vendor *= *\(0x[0-9a-fA-F]*\).*/\1/p' "$f"):$(sed -n 's/^pci_device *= *\(0x[0-9a-fA-F]*\).*/\1/p' "$f")"
	done
	vm "$1" sh -c 'for d in /sys/bus/pci/devices/*; do
		[ "$(cat $d/class)" = 0x0c0340 ] && { basename $d; exit 0; }
	done
	for d in /sys/bus/pci/devices/*; do
		case " $0 " in *" $(cat $d/vendor):$(cat $d/device) "*) basename $d; exit 0 ;; esac
	done; exit 1' "$ids"
}

# Lines of guest $1's kernel log that show a thunderbolt error, warning,
# or any WARN/oops/BUG. Empty output means clean.
# One stock-Linux message is not counted: TCP's "Driver has suspect GRO
# implementation" heuristic, which thunderbolt-net triggers by design
# (ThunderboltIP carries whole TSO super-packets, received as one skb
# without GSO metadata; drivers/net/thunderbolt.c, tcp_measure_rcv_mss()).
# Newer kernels (6.5+) also warn that the platform firmware (ACPI) declares
# no device links from tunnelled PCIe/USB3 ports to the NHI: a VM's ACPI
# tables describe no such ports, a fact about the platform, not the NHI.
# Linux >= 6.8 logs a USB4 v2 host router's successful reset at probe
# (nhi_reset(); intel-barlow-ridge) with dev_warn: not a problem either.
# Nor is a properties-changed notification that failed once and was
# retried: stock xdomain.c logs its error line for every failed attempt,
# also the ones it retries (after a debug line "..., retrying"); a notifier
# that gave up (no retry) still counts. Nor is "failed to parse XDomain
# properties" when the peer announced a change of its properties within
# 1 s before or 5 s after: its block changed between the requests of one
# read (stock xdomain.c does not compare their generations; docs/testing.md).
# The filter is tb-problems.awk, run on the host over the guest's
# `dmesg -r` (tests/harness checks it).
# TB_PROBLEMS_ALLOW: fixed strings, one a line, that a scenario expects from
# stock Linux in what it provokes (set with the reason next to it): lines
# with them are not problems there.
tb_problems() {
	local race=0
	[ -e "$VMPAIR_STATE/tbnet-login-race-$1" ] && race=1
	vm "$1" dmesg -r | awk -v race=$race -f "$SCEN_DIR/tb-problems.awk" |
		if [ -n "${TB_PROBLEMS_ALLOW:-}" ]; then grep -vF -- "$TB_PROBLEMS_ALLOW"; else cat; fi
}

check_clean_dmesg() {
	local v out
	for v in a b; do
		out=$(tb_problems "$v" 2>&1)
		if [ -z "$out" ]; then
			ok "$v: no thunderbolt error, WARN or oops in dmesg"
		else
			not_ok "$v: no thunderbolt error, WARN or oops in dmesg" "$out"
		fi
	done
}

# wait until guest $1 lists the XDomain 0-1
wait_xdomain() {
	wait_for "vm $1 test -e /sys/bus/thunderbolt/devices/0-1/unique_id" "${2:-120}"
}

# four checks: both guests list the XDomain 0-1, and each one's 0-1 is the
# other's own domain (UUIDs)
check_xdomain_peers() {
	local v
	for v in a b; do
		if wait_xdomain $v 120; then ok "$v: XDomain 0-1 appeared"; else not_ok "$v: XDomain 0-1 appeared"; fi
	done
	is "$(vm a cat /sys/bus/thunderbolt/devices/0-1/unique_id)" \
		"$(vm b cat /sys/bus/thunderbolt/devices/0-0/unique_id)" "a's 0-1 unique_id is b's own UUID"
	is "$(vm b cat /sys/bus/thunderbolt/devices/0-1/unique_id)" \
		"$(vm a cat /sys/bus/thunderbolt/devices/0-0/unique_id)" "b's 0-1 unique_id is a's own UUID"
}

wait_no_xdomain() {
	wait_for "! vm $1 test -e /sys/bus/thunderbolt/devices/0-1" "${2:-60}"
}

# Bring thunderbolt0 up on both guests with 192.0.2.1 (a) / .2 (b) and
# wait for the carrier (both logins done, DMA paths enabled).
#
# Stock thunderbolt-net has a login race (drivers/net/thunderbolt.c, 6.1
# and 6.12; docs/testing.md): netif_running() is already true while
# tbnet_open() runs, before it has allocated its transmit HopID, so a
# peer's LOGIN arriving in that window is answered and our own LOGIN goes
# out with transmit_path 0. The peer then fails "failed to allocate Rx
# HopID" for good (it keeps the bad path until we log in again, which we
# never do: we are connected). It hits real machines as much as VMs, when
# both ends open the interface at about the same time; under TCG the window
# is a few ms per ifup. tbnet_up recognises exactly that state (one side
# with carrier, the other without and with that message) and re-opens the
# interface on both sides once, saying so; anything else still fails. The
# marker file lets tb_problems accept that one message in this scenario.
tbnet_carrier() {
	vm "$1" sh -c 'grep -q 1 /sys/class/net/thunderbolt0/carrier'
}
# tbnet_race_logged GUEST: its log has the race's message
tbnet_race_logged() {
	vm "$1" sh -c 'dmesg | grep -q "thunderbolt0: failed to allocate Rx HopID"'
}
tbnet_login_race() {
	local v w
	for v in a b; do
		[ $v = a ] && w=b || w=a
		if ! tbnet_carrier $v && tbnet_carrier $w && tbnet_race_logged $v; then
			echo $v
			return 0
		fi
	done
	return 1
}
tbnet_up() {
	local v ip side
	for v in a b; do
		wait_for "vm $v test -e /sys/class/net/thunderbolt0" 90 || return 1
	done
	for v in a b; do
		[ $v = a ] && ip=192.0.2.1 || ip=192.0.2.2
		vm $v sh -c "ip addr flush dev thunderbolt0 && ip addr add $ip/24 dev thunderbolt0 && ip link set thunderbolt0 up" || return 1
	done
	wait_for "{ tbnet_carrier a && tbnet_carrier b; } || tbnet_login_race" 120 || return 1
	if side=$(tbnet_login_race); then
		diag "tbnet_up: stock thunderbolt-net login race: $side got the peer's LOGIN with transmit path 0 (\"failed to allocate Rx HopID\"); re-opening thunderbolt0 on both (harness/scenarios/common.sh)"
		touch "$VMPAIR_STATE/tbnet-login-race-$side"
		for v in a b; do
			vm $v ip link set thunderbolt0 down || return 1
		done
		for v in a b; do
			vm $v ip link set thunderbolt0 up || return 1
		done
	fi
	for v in a b; do
		wait_for "tbnet_carrier $v" 120 || return 1
	done
	# the same race, got over by stock thunderbolt-net itself: the side
	# that sent the bad LOGIN had not connected yet and logged in again
	# with its HopID (the message, then carrier on both a second later)
	for v in a b; do
		[ -e "$VMPAIR_STATE/tbnet-login-race-$v" ] && continue
		if tbnet_race_logged $v; then
			diag "tbnet_up: stock thunderbolt-net login race on $v (\"failed to allocate Rx HopID\"), over by itself: the peer logged in again"
			touch "$VMPAIR_STATE/tbnet-login-race-$v"
		fi
	done
}

# tcp_transfer FROM TO BYTES PORT: random data FROM -> TO over thunderbolt0;
# prints "sha_from sha_to seconds" as its only line on stdout (callers read
# it; diagnostics go to stderr). When the data does not all arrive, the
# evidence (link_evidence, taken then) is left for tcp_evidence.
tcp_evidence() {
	[ -s "$VMPAIR_STATE/tcp-evidence" ] && cat "$VMPAIR_STATE/tcp-evidence"
	return 0
}
tcp_transfer() {
	local from=$1 to=$2 bytes=$3 port=$4 dst out lim
	[ "$to" = b ] && dst=192.0.2.2 || dst=192.0.2.1
	vm "$from" sh -c "head -c $bytes /dev/urandom > /tmp/xfer.src" || return 1
	vm "$to" sh -c "rm -f /tmp/xfer.dst; setsid sh -c 'sleep 100000 | nc -l -p $port > /tmp/xfer.dst' </dev/null >/dev/null 2>&1 &" || return 1
	wait_for "vm $to sh -c 'netstat -ltn 2>/dev/null | grep -q :$port'" 30 >&2 || return 1
	rm -f "$VMPAIR_STATE/tcp-evidence"
	out=$(vm "$from" sh -c "t0=\$(cut -d' ' -f1 /proc/uptime); nc $dst $port < /tmp/xfer.src || exit 1; t1=\$(cut -d' ' -f1 /proc/uptime); echo \$t0 \$t1")
	# a sender that did not finish (vm's timeout) leaves its evidence too
	[ -n "$out" ] && lim=120 || lim=10
	wait_for "vm $to sh -c '[ \$(wc -c < /tmp/xfer.dst) -eq $bytes ]'" $lim >&2 ||
		{ echo "tcp_transfer $from -> $to: $(vm "$to" sh -c 'wc -c < /tmp/xfer.dst' 2>&1) of $bytes bytes arrived"
		  link_evidence; } > "$VMPAIR_STATE/tcp-evidence" 2>&1
	vm "$to" sh -c "pkill -f 'nc -l -p $port' ; pkill -f 'sleep 100000'" >/dev/null 2>&1
	printf '%s %s %s\n' \
		"$(vm "$from" sha256sum /tmp/xfer.src | cut -d' ' -f1)" \
		"$(vm "$to" sha256sum /tmp/xfer.dst | cut -d' ' -f1)" \
		"$(echo "$out" | awk '{ printf "%.2f", $2 - $1 }')"
}
