#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# matrix-v2refuse: a USB4 v2 host router (sim-test
# matrix-v2refuse%intel-barlow-ridge) on Debian 12's 6.1, which cannot drive
# one (docs/profiles.md): the thunderbolt driver refuses it cleanly - 6.1
# reads router version 0x40 as a legacy Thunderbolt switch, finds no
# plug-events capability and aborts ("cannot find TB_VSE_CAP_PLUG_EVENTS
# aborting"); the NHI is left unbound with no domain, no XDomain appears,
# nothing WARNs and the guest stays usable. The profile itself runs on 6.12
# (probe/matrix-xdomain/tbnet%intel-barlow-ridge@trixie).
. "$(dirname "$0")/common.sh"
tap_plan 7
tap_timeout 600
prof=$(pair_profile)
[ "$(profile_key "$prof" usb4_version)" = 0x40 ] || bail_out "profile $prof is not USB4 v2"
pair_up
if kernel_at_least a 6 8; then
	bail_out "guest runs $(vm a uname -r): this scenario is about kernels before USB4 v2 support"
fi
for v in a b; do
	# thunderbolt.ko had its go at the NHI and gave up
	if wait_for "vm $v sh -c 'dmesg | grep -qE \"thunderbolt .*: (shutdown|NHI initialized)\"'" 120 &&
		vm $v sh -c 'dmesg | grep -qE "thunderbolt .*(TB_VSE_CAP_PLUG_EVENTS aborting|unsupported switch)"'; then
		ok "$v: 6.1 refuses the USB4 v2 host router" \
			"$(vm $v sh -c 'dmesg | grep -E "thunderbolt .*(unsupported switch|TB Version|aborting)"')"
	else
		not_ok "$v: 6.1 refuses the USB4 v2 host router" "$(vm $v sh -c 'dmesg | grep -i thunderbolt | tail -n 30')"
	fi
done
for v in a b; do
	bdf=$(nhi_bdf $v)
	if [ -n "$bdf" ] && ! vm $v test -e /sys/bus/pci/devices/$bdf/driver &&
		! vm $v test -e /sys/bus/thunderbolt/devices/domain0; then
		ok "$v: NHI $bdf left unbound, no thunderbolt domain"
	else
		not_ok "$v: NHI left unbound, no thunderbolt domain" "bdf=$bdf" \
			"$(vm $v ls -l /sys/bus/pci/devices/$bdf/ /sys/bus/thunderbolt/devices/ 2>&1)"
	fi
done
check_fails "no XDomain appears on a" va test -e /sys/bus/thunderbolt/devices/0-1
for v in a b; do
	out=$(vm $v sh -c 'dmesg | grep -E "WARNING:|Call Trace|Oops|BUG:|general protection|Kernel panic"' 2>&1)
	if [ -z "$out" ] && vm $v true; then
		ok "$v: no WARN or oops, guest usable"
	else
		not_ok "$v: no WARN or oops, guest usable" "$out"
	fi
done
tap_done
