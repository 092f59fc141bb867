#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fetches Debian's kernel headers for a kernel ABI (linux-headers-<abi>,
# linux-headers-<abi-common>, linux-kbuild-<ver>) and unpacks them into
# $ODL_CACHE/kheaders/<abi>/ without installing anything; prints the
# directory to pass as `make -C DIR M=...` (stdout, one line).
#
# Usage: ci/kheaders.sh [ABI]        (default: ODL_KERNEL_ABI of
#                                     build/env-default.sh, else the newest
#                                     bookworm 6.1 ABI known to apt)
# Only bookworm ABIs (6.1.0-N-amd64) are handled: their kbuild tools run on
# this bookworm host. A second call does not touch the network.
#
#        ci/kheaders.sh --checkpatch DIR
# puts scripts/checkpatch.pl (+ spelling.txt, const_structs.checkpatch) from
# Debian's linux-source-6.1 package into DIR (for `make driver-check`).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$HERE/common.sh"

if [ "${1:-}" = --checkpatch ]; then
  out=${2:?usage: kheaders.sh --checkpatch DIR}
  [ -x "$out/scripts/checkpatch.pl" ] && exit 0
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  deb=$(ls /tmp/ksrc/linux-source-6.1_*_all.deb 2>/dev/null | head -n1 || true)
  if [ -z "$deb" ]; then
    odl_log "downloading linux-source-6.1 (for checkpatch.pl)"
    (cd "$work" && apt-get -o APT::Sandbox::User=root -qq download linux-source-6.1 >&2) \
      || odl_die "apt-get download linux-source-6.1 failed"
    deb=$(ls "$work"/linux-source-6.1_*.deb)
  fi
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work" ./usr/src/linux-source-6.1.tar.xz
  tar -xJf "$work/usr/src/linux-source-6.1.tar.xz" -C "$work" \
    linux-source-6.1/scripts/checkpatch.pl linux-source-6.1/scripts/spelling.txt \
    linux-source-6.1/scripts/const_structs.checkpatch
  mkdir -p "$out/scripts"
  cp "$work"/linux-source-6.1/scripts/{checkpatch.pl,spelling.txt,const_structs.checkpatch} "$out/scripts/"
  printf '%s\n' "$out"
  exit 0
fi

ABI=${1:-}
if [ -z "$ABI" ] && [ -r "$HERE/../build/env-default.sh" ]; then
  ABI=$(. "$HERE/../build/env-default.sh"; printf '%s' "${ODL_KERNEL_ABI:-}")
fi
if [ -z "$ABI" ]; then
  ABI=$(apt-cache pkgnames linux-headers-6.1.0- | grep -E '^linux-headers-6\.1\.0-[0-9]+-amd64$' | sort -V | tail -n1)
  ABI=${ABI#linux-headers-}
fi
[ -n "$ABI" ] || odl_die "no kernel ABI given and none found"

KH="$ODL_CACHE/kheaders"
DIR="$KH/$ABI"
KDIR="$DIR/root/usr/src/linux-headers-$ABI"
if [ -f "$DIR/.complete" ]; then
  printf '%s\n' "$KDIR"
  exit 0
fi

mkdir -p "$KH"
exec 9>"$KH/.lock"
flock 9
if [ -f "$DIR/.complete" ]; then
  printf '%s\n' "$KDIR"
  exit 0
fi

APT=(-o APT::Sandbox::User=root)
PKG="linux-headers-$ABI"
deps() { apt-cache "${APT[@]}" show "$PKG" 2>/dev/null | awk '/^Depends:/ { sub(/^Depends: */, ""); print; exit }'; }
if [ -z "$(deps)" ] && [ "$(id -u)" -eq 0 ]; then
  odl_log "$PKG unknown to apt; apt-get update"
  apt-get -qq update >&2
fi
dep_line=$(deps)
[ -n "$dep_line" ] || odl_die "apt knows no package $PKG"
# linux-headers-<abi-common> (= V), linux-kbuild-6.1 (>= V), compiler
common=$(printf '%s\n' "$dep_line" | tr ',' '\n' | sed -n 's/^ *\(linux-headers-[^ ]*-common[^ ]*\) .*/\1/p' | head -n1)
kbuild=$(printf '%s\n' "$dep_line" | tr ',' '\n' | sed -n 's/^ *\(linux-kbuild-[^ ]*\) .*/\1/p' | head -n1)
[ -n "$common" ] && [ -n "$kbuild" ] || odl_die "cannot parse dependencies of $PKG: $dep_line"

work=$(mktemp -d "$KH/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
odl_log "downloading $PKG $common $kbuild"
(cd "$work" && apt-get "${APT[@]}" -qq download "$PKG" "$common" "$kbuild" >&2) \
  || odl_die "apt-get download failed"
for deb in "$work"/*.deb; do
  dpkg-deb -x "$deb" "$work/root"
done
rm -f "$work"/*.deb

# The per-flavour Makefile includes the common tree by absolute path and
# scripts/tools are symlinks into /usr/lib/linux-kbuild-*: point both into
# the unpacked root.
R="$work/root"
sed -i "s|/usr/src/|$DIR/root/usr/src/|g" "$R/usr/src/linux-headers-$ABI/Makefile"
for l in "$R"/usr/src/linux-headers-*/scripts "$R"/usr/src/linux-headers-*/tools \
         "$R"/usr/src/linux-headers-*-common/scripts "$R"/usr/src/linux-headers-*-common/tools; do
  [ -L "$l" ] || continue
  t=$(readlink "$l")
  case "$t" in /*) ln -sfn "$DIR/root$t" "$l" ;; esac
done
rm -rf "$DIR"
mv "$work" "$DIR"
trap - EXIT
[ -f "$KDIR/Makefile" ] || odl_die "no $KDIR/Makefile after unpacking"
touch "$DIR/.complete"
odl_log "headers for $ABI in $KDIR"
printf '%s\n' "$KDIR"
