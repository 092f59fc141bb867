# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers for the odl_tb5 scenarios (sourced after common.sh; not a scenario).
# Needs `make driver` (build/driver/odl_tb5.ko, odl_xfer).
ODL_BUILD_DRIVER=${ODL_BUILD_DRIVER:-$SCEN_DIR/../../build/driver}
ODL_KO=$ODL_BUILD_DRIVER/odl_tb5.ko
ODL_XFER=$ODL_BUILD_DRIVER/odl_xfer
ODL_RING_SIZE=${ODL_RING_SIZE:-256}

odl_need_build() {
	[ -f "$ODL_KO" ] && [ -x "$ODL_XFER" ] ||
		bail_out "build/driver/odl_tb5.ko or odl_xfer missing: run 'make driver'"
}

# copy the module and the test tool into guest $1
odl_put() {
	"$VMPAIR" put "$1" "$ODL_KO" /tmp/odl_tb5.ko >/dev/null &&
		"$VMPAIR" put "$1" "$ODL_XFER" /tmp/odl_xfer --mode 755 >/dev/null
}

# load the module in guest $1 (extra module parameters after it)
odl_load() {
	local v=$1
	shift
	vm "$v" insmod /tmp/odl_tb5.ko ring_size="$ODL_RING_SIZE" "$@"
}

odl_wait_dev() {
	wait_for "vm $1 test -c /dev/odl_tb5_0" "${2:-60}"
}

odl_wait_connected() {
	wait_for "vm $1 sh -c '/tmp/odl_xfer info | grep -q state=connected'" "${2:-60}"
}

# odl_problems GUEST: dmesg lines from odl_tb5 at warning level or worse,
# and any WARN/oops
odl_problems() {
	vm "$1" sh -c 'dmesg -r | awk '\''
		{ lvl = substr($0, 2, index($0, ">") - 2) + 0; lvl = lvl % 8 }
		/WARNING:|Call Trace|Oops|BUG:|general protection|Kernel panic/ { print; next }
		/module verification failed|taints kernel/ { next }
		/odl_tb5: (ring_size|e2e=|busy_poll).*must be|odl_tb5: busy_poll/ { next }
		lvl <= 4 && /odl_tb5/ { print }'\'''
}

odl_check_clean() {
	local v out
	for v in a b; do
		out=$( { tb_problems "$v"; odl_problems "$v"; } 2>&1 | sort -u)
		if [ -z "$out" ]; then
			ok "$v: dmesg clean (no odl_tb5/thunderbolt error, WARN or oops)"
		else
			not_ok "$v: dmesg clean (no odl_tb5/thunderbolt error, WARN or oops)" "$out"
		fi
	done
}

# odl_xfer_run FROM TO PORT_FROM PORT_TO COUNT SIZES: verified transfer
odl_xfer_run() {
	local from=$1 to=$2 pf=$3 pt=$4 n=$5 sizes=$6 out
	vm "$to" sh -c "rm -f /tmp/rx.$pt; setsid /tmp/odl_xfer recv -p $pt -q $pf -n $n -s $sizes > /tmp/rx.$pt 2>&1 < /dev/null &" || return 1
	wait_for "vm $to grep -q ready /tmp/rx.$pt" 30 || return 1
	out=$(vm "$from" /tmp/odl_xfer send -p "$pf" -q "$pt" -n "$n" -s "$sizes" 2>&1) || {
		echo "$out"
		vm "$to" cat /tmp/rx.$pt
		return 1
	}
	wait_for "vm $to grep -q received /tmp/rx.$pt" 60 || { vm "$to" cat /tmp/rx.$pt; return 1; }
	echo "$out"
	vm "$to" cat /tmp/rx.$pt
	vm "$to" grep -q ' 0 bad' /tmp/rx.$pt
}
