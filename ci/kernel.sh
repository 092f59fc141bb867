#!/usr/bin/env bash
# Fetches a Debian kernel image package and unpacks vmlinuz + modules into
# $ODL_CACHE/kernels/<abi>/, then prints that directory (stdout, one line).
#
# Usage: ci/kernel.sh [VERSION]
#   (none) | default   newest bookworm linux-image-6.1.0-N-amd64
#   6.1.0-47-amd64     a kernel ABI (also accepts linux-image-<abi>[-unsigned])
#   6.12.57+deb13-amd64   looked up in bookworm (system apt lists) first, then
#                      trixie, then sid, through private lists on the same mirror
#   trixie | sid | bookworm   newest plain <ver>-amd64 kernel of that suite
#   SUITE:ABI          that ABI from that suite
#
# Result layout:   <dir>/vmlinuz  <dir>/config  <dir>/abi
#                  <dir>/lib/modules/<abi>/...   (plain .ko, depmod'ed)
# A second call with the same argument does not touch the network (for a
# named ABI) or only reads local apt lists (default / suite name).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$HERE/common.sh"

ARG=${1:-default}
[ "$ARG" = "default" ] && ARG=""
KC="$ODL_CACHE/kernels"
mkdir -p "$KC"

# Kernel image packages we accept: flavour amd64 only (no cloud/rt/dbg).
PKG_RE='^linux-image-[0-9][0-9a-z.+~-]*-amd64(-unsigned)?$'

done_dir() { # ABI -> prints dir if complete
  [ -f "$KC/$1/.complete" ] && printf '%s\n' "$KC/$1"
}

# apt_q SUITE -> sets APT (array) for queries against SUITE.
# bookworm uses the machine's own apt lists (with security updates);
# other suites use a private list with the same mirror.
apt_for_suite() {
  case "$1" in
    ""|bookworm) APT=(-o APT::Sandbox::User=root) ;;
    *) odl_apt_private "bin-$1" deb "$1"; APT=("${ODL_APT_OPTS[@]}") ;;
  esac
}

newest_in_suite() { # SUITE -> package name
  apt_for_suite "$1"
  local re
  if [ -z "$1" ] || [ "$1" = bookworm ]; then
    re='^linux-image-6\.1\.0-[0-9]+-amd64$'
  else
    re='^linux-image-[0-9.]+(-[0-9]+|\+deb[0-9]+)?-amd64$'
  fi
  apt-cache "${APT[@]}" pkgnames linux-image- | grep -E "$re" | sort -V | tail -n1
}

has_pkg() { # PKG -> true if APT knows a candidate
  apt-cache "${APT[@]}" show "$1" 2>/dev/null | grep -q '^Filename:'
}

# ------------------------------------------------------ resolve the name --
SUITE="" ; ABI=""
case "$ARG" in
  "")                     SUITE=bookworm ;;
  bookworm|trixie|sid|forky|unstable|testing|stable) SUITE=$ARG ;;
  *:*)                    SUITE=${ARG%%:*}; ABI=${ARG#*:} ;;
  *)                      ABI=$ARG ;;
esac
ABI=${ABI#linux-image-}; ABI=${ABI%-unsigned}

# Named ABI already unpacked: nothing to do.
if [ -n "$ABI" ] && done_dir "$ABI"; then exit 0; fi

PKG=""
if [ -z "$ABI" ]; then
  PKG=$(newest_in_suite "$SUITE")
  if [ -z "$PKG" ] && [ "$SUITE" = bookworm ] && [ "$(id -u)" -eq 0 ]; then
    odl_log "no bookworm kernel in the apt lists; running apt-get update"
    apt-get -qq update >&2
    PKG=$(newest_in_suite bookworm)
  fi
  [ -n "$PKG" ] || odl_die "no linux-image-*-amd64 package found in suite $SUITE"
  ABI=${PKG#linux-image-}
  if done_dir "$ABI"; then exit 0; fi
else
  suites=("${SUITE:-bookworm}")
  [ -z "$SUITE" ] && suites=(bookworm trixie sid)
  for s in "${suites[@]}"; do
    apt_for_suite "$s"
    for cand in "linux-image-$ABI" "linux-image-$ABI-unsigned"; do
      if has_pkg "$cand"; then PKG=$cand; SUITE=$s; break 2; fi
    done
  done
  [ -n "$PKG" ] || odl_die "no package linux-image-$ABI[-unsigned] in ${suites[*]}"
fi
apt_for_suite "$SUITE"

# ------------------------------------------------------------ fetch/unpack --
exec 9>"$KC/.lock"
flock 9
if done_dir "$ABI"; then exit 0; fi

work=$(mktemp -d "$KC/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
odl_log "downloading $PKG ($SUITE)"
if ! (cd "$work" && apt-get "${APT[@]}" -qq download "$PKG" >&2); then
  # Stale lists name a package the mirror has dropped: refresh once, retry.
  [ "$SUITE" = bookworm ] && [ "$(id -u)" -eq 0 ] || odl_die "apt-get download $PKG failed"
  odl_log "download failed; apt-get update and retry"
  apt-get -qq update >&2
  if [ -z "$ARG" ]; then
    PKG=$(newest_in_suite bookworm); ABI=${PKG#linux-image-}
    if done_dir "$ABI"; then exit 0; fi
  fi
  (cd "$work" && apt-get "${APT[@]}" -qq download "$PKG" >&2) || odl_die "apt-get download $PKG failed"
fi
deb=$(ls "$work"/*.deb)
odl_log "unpacking ${deb##*/}"
dpkg-deb -x "$deb" "$work/root"
rm -f "$deb"

out="$work/out"
mkdir -p "$out/lib/modules"
vmlinuz=$(ls "$work"/root/boot/vmlinuz-* 2>/dev/null | head -n1)
[ -n "$vmlinuz" ] || odl_die "$PKG has no /boot/vmlinuz-*"
mv "$vmlinuz" "$out/vmlinuz"
cfg=$(ls "$work"/root/boot/config-* 2>/dev/null | head -n1 || true)
[ -n "$cfg" ] && mv "$cfg" "$out/config"
smap=$(ls "$work"/root/boot/System.map-* 2>/dev/null | head -n1 || true)
[ -n "$smap" ] && mv "$smap" "$out/System.map"
moddir=""
for d in "$work/root/lib/modules/$ABI" "$work/root/usr/lib/modules/$ABI"; do
  [ -d "$d" ] && moddir=$d
done
[ -n "$moddir" ] || odl_die "$PKG has no modules directory for $ABI (signed-only image? try the -unsigned package)"
mv "$moddir" "$out/lib/modules/$ABI"
rm -rf "$work/root"

# busybox insmod/modprobe cannot load compressed modules: decompress.
M="$out/lib/modules/$ABI"
nxz=$(find "$M" -name '*.ko.xz' | wc -l)
nzst=$(find "$M" -name '*.ko.zst' | wc -l)
ngz=$(find "$M" -name '*.ko.gz' | wc -l)
if [ $((nxz + nzst + ngz)) -gt 0 ]; then
  odl_log "decompressing $((nxz + nzst + ngz)) modules"
  [ "$nxz" -gt 0 ]  && find "$M" -name '*.ko.xz'  -print0 | xargs -0 -r -n 64 -P "$(nproc)" xz -d
  [ "$nzst" -gt 0 ] && find "$M" -name '*.ko.zst' -print0 | xargs -0 -r -n 64 -P "$(nproc)" zstd -q -d --rm
  [ "$ngz" -gt 0 ]  && find "$M" -name '*.ko.gz'  -print0 | xargs -0 -r -n 64 -P "$(nproc)" gzip -d
fi
# Regenerate modules.dep & co for plain .ko names.
depmod -b "$out" "$ABI" || odl_die "depmod failed"
echo "$ABI" > "$out/abi"
echo "$PKG $(apt-cache "${APT[@]}" show "$PKG" | awk '/^Version:/{print $2; exit}') $SUITE" > "$out/package"

rm -rf "${KC:?}/$ABI"
mv "$out" "$KC/$ABI"
touch "$KC/$ABI/.complete"
odl_log "kernel $ABI ready in $KC/$ABI"
printf '%s\n' "$KC/$ABI"
