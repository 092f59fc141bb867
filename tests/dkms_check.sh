#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make driver-dkms-install into a scratch DESTDIR, then dkms itself (its own
# source, build and install trees: nothing of the machine's is touched)
# adds and builds the staged sources for the guest kernel's headers (KDIR,
# KERNEL_ABI): the module it builds must be odl_tb5 of the expected
# version, for that kernel, with the service alias. dkms.conf must carry
# the module's MODULE_VERSION. TAP. Usage: KERNEL_ABI=... KDIR=... dkms_check.sh VERSION
set -u
ver=${1:?version} abi=${KERNEL_ABI:?} kdir=${KDIR:?}
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; sed 's/^/# /' "$tmp/log" 2>/dev/null | tail -n 25; }
done_() { echo "1..$n"; [ $fails = 0 ] || { echo "# $fails of $n DKMS checks failed" >&2; exit 1; }; exit 0; }

command -v dkms >/dev/null || { echo "not ok 1 - dkms is not installed (ci/deps.sh installs it)"; echo "1..1"; exit 1; }
conf_ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$top/driver/dkms.conf")
if [ -n "$ver" ] && [ "$conf_ver" = "$ver" ]; then
	ok "driver/dkms.conf PACKAGE_VERSION $conf_ver = MODULE_VERSION"
else
	: >"$tmp/log"
	notok "driver/dkms.conf PACKAGE_VERSION '$conf_ver', MODULE_VERSION '$ver'"
fi
root=$tmp/root
if make -s -C "$top" driver-dkms-install DESTDIR="$root" >"$tmp/log" 2>&1 &&
	[ -f "$root/usr/src/odl_tb5-$ver/dkms.conf" ] && [ -f "$root/usr/src/odl_tb5-$ver/uapi/odl_tb5_uapi.h" ] &&
	[ -f "$root/etc/udev/rules.d/99-odl_tb5.rules" ] &&
	[ "$(cat "$root/etc/modules-load.d/odl_tb5.conf")" = odl_tb5 ]; then
	ok "make driver-dkms-install DESTDIR=...: sources, dkms.conf, udev rule and modules-load.d entry staged"
else
	notok "make driver-dkms-install DESTDIR=...: sources, dkms.conf, udev rule and modules-load.d entry staged"
	done_
fi
trees=(--sourcetree "$root/usr/src" --dkmstree "$tmp/dkms" --installtree "$tmp/install")
mkdir -p "$tmp/dkms" "$tmp/install"
if dkms add -m odl_tb5 -v "$ver" "${trees[@]}" >"$tmp/log" 2>&1 &&
	dkms build -m odl_tb5 -v "$ver" -k "$abi" --kernelsourcedir "$kdir" "${trees[@]}" >>"$tmp/log" 2>&1; then
	ok "dkms add and build odl_tb5/$ver for $abi"
else
	notok "dkms add and build odl_tb5/$ver for $abi"
	done_
fi
ko=$(find "$tmp/dkms/odl_tb5/$ver/$abi" -name odl_tb5.ko 2>/dev/null | head -n 1)
if [ -n "$ko" ] && modinfo -F vermagic "$ko" >"$tmp/log" 2>&1 && grep -q "^$abi " "$tmp/log" &&
	[ "$(modinfo -F version "$ko")" = "$ver" ] && modinfo -F alias "$ko" | grep -q '^tbsvc:kodltb5' &&
	[ "$(modinfo -F license "$ko")" = "Dual MIT/GPL" ]; then
	ok "the module dkms built: odl_tb5 $ver, vermagic $abi, the service alias, Dual MIT/GPL"
else
	[ -n "$ko" ] && modinfo "$ko" >"$tmp/log" 2>&1
	notok "the module dkms built: odl_tb5 $ver for $abi (${ko:-no odl_tb5.ko})"
fi
done_
