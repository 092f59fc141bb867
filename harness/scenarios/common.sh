# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Shared helpers for scenarios: each scenario boots its own pair in
# $VMPAIR_STATE (set by harness/sim-test) and tears it down on exit.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"

SCEN_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export VMPAIR_STATE=${VMPAIR_STATE:-/tmp/odl-vmpair-$(id -un)/scenario-$$}

pair_down() {
	[ "${KEEP_PAIR:-0}" = 1 ] && return 0
	"$VMPAIR" down >/dev/null 2>&1 || true
}

# pair_up [vmpair up options]: boot the pair or bail out with the evidence.
pair_up() {
	local out
	tap_cleanup pair_down
	# SIM_KERNEL (set by sim-test for NAME@KERNEL) picks the guest kernel
	# PAIR_EXTRA: more vmpair up options from a scenario variant (--iommu)
	# shellcheck disable=SC2086
	if ! out=$("$VMPAIR" up ${SIM_KERNEL:+--kernel "$SIM_KERNEL"} ${PAIR_EXTRA:-} "$@" 2>&1); then
		diag "vmpair up failed:" "$out"
		evidence
		bail_out "could not start the VM pair"
	fi
	diag "$(printf '%s\n' "$out" | tail -n 1)"
}

# The NHI's PCI address in guest $1 (class 0c0340).
nhi_bdf() {
	vm "$1" sh -c 'for d in /sys/bus/pci/devices/*; do
		[ "$(cat $d/class)" = 0x0c0340 ] && { basename $d; exit 0; }
	done; exit 1'
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
tb_problems() {
	vm "$1" sh -c 'dmesg -r | awk '\''
		{ lvl = substr($0, 2, index($0, ">") - 2) + 0; lvl = lvl % 8 }
		/WARNING:|Call Trace|Oops|BUG:|general protection|Kernel panic/ { print; next }
		/DMAR:.*(fault addr|handling fault)/ { print; next }
		/suspect GRO implementation/ { next }
		/device links to tunneled native ports are missing/ { next }
		lvl <= 4 && /thunderbolt|usb4/ { print }'\'''
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

wait_no_xdomain() {
	wait_for "! vm $1 test -e /sys/bus/thunderbolt/devices/0-1" "${2:-60}"
}

# Bring thunderbolt0 up on both guests with 192.0.2.1 (a) / .2 (b) and
# wait for the carrier (both logins done, DMA paths enabled).
tbnet_up() {
	local v ip
	for v in a b; do
		wait_for "vm $v test -e /sys/class/net/thunderbolt0" 90 || return 1
	done
	for v in a b; do
		[ $v = a ] && ip=192.0.2.1 || ip=192.0.2.2
		vm $v sh -c "ip addr flush dev thunderbolt0 && ip addr add $ip/24 dev thunderbolt0 && ip link set thunderbolt0 up" || return 1
	done
	for v in a b; do
		wait_for "vm $v sh -c 'grep -q 1 /sys/class/net/thunderbolt0/carrier'" 120 || return 1
	done
}

# tcp_transfer FROM TO BYTES PORT: random data FROM -> TO over thunderbolt0;
# prints "sha_from sha_to seconds".
tcp_transfer() {
	local from=$1 to=$2 bytes=$3 port=$4 dst t0 t1
	[ "$to" = b ] && dst=192.0.2.2 || dst=192.0.2.1
	vm "$from" sh -c "head -c $bytes /dev/urandom > /tmp/xfer.src" || return 1
	vm "$to" sh -c "rm -f /tmp/xfer.dst; setsid sh -c 'sleep 100000 | nc -l -p $port > /tmp/xfer.dst' </dev/null >/dev/null 2>&1 &" || return 1
	wait_for "vm $to sh -c 'netstat -ltn 2>/dev/null | grep -q :$port'" 30 || return 1
	out=$(vm "$from" sh -c "t0=\$(cut -d' ' -f1 /proc/uptime); nc $dst $port < /tmp/xfer.src || exit 1; t1=\$(cut -d' ' -f1 /proc/uptime); echo \$t0 \$t1") || return 1
	wait_for "vm $to sh -c '[ \$(wc -c < /tmp/xfer.dst) -eq $bytes ]'" 120 || true
	vm "$to" sh -c "pkill -f 'nc -l -p $port' ; pkill -f 'sleep 100000'" >/dev/null 2>&1
	printf '%s %s %s\n' \
		"$(vm "$from" sha256sum /tmp/xfer.src | cut -d' ' -f1)" \
		"$(vm "$to" sha256sum /tmp/xfer.dst | cut -d' ' -f1)" \
		"$(echo "$out" | awk '{ printf "%.2f", $2 - $1 }')"
}
