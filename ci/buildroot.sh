#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A Debian build root for out-of-tree kernel modules of a guest kernel whose
# kbuild tools and compiler this host cannot run (Debian 13's 6.12 headers
# need trixie's gcc-14 and linux-kbuild; bookworm has neither).
#
#   ci/buildroot.sh [KERNEL|ABI]     prints the root directory (stdout, one line)
#   ci/buildroot.sh --kdir ABI|KERNEL   prints the headers directory *inside*
#                                    the root (/usr/src/linux-headers-ABI)
#   ci/buildroot.sh --kbuild ABI|KERNEL SRCDIR OUTDIR [MAKE ARGS...]
#                  copies SRCDIR (a Kbuild module directory) into the root,
#                  runs `make -C /usr/src/linux-headers-ABI M=... modules`
#                  there (chroot in a private mount namespace with /dev and
#                  /proc bound; nothing stays mounted), copies the *.ko to
#                  OUTDIR and prints the build log on failure
#
# KERNEL is a tag with a build/env-KERNEL.sh (`make images KERNEL=trixie`
# writes it; default: trixie), ABI a Debian kernel ABI such as
# 6.12.107+deb13-amd64. The Debian suite comes from the ABI (+deb13 ->
# trixie, +deb14 -> forky, 6.1.0-N -> bookworm).
#
# The root is `debootstrap --variant=minbase --include=gcc,make,libc6-dev,
# perl,linux-headers-ABI SUITE ROOT MIRROR`, MIRROR being the machine's own
# Debian mirror (ci/common.sh: odl_debian_mirror); perl because W=1 runs
# scripts/kernel-doc, which needs more than perl-base. It is cached in
# $ODL_CACHE/buildroot/ABI/root (marker .complete, holding the package
# list), built once under a lock; a second call touches neither the network
# nor the root. When the list grows, an existing root gets the new packages
# with apt-get inside it instead of a new debootstrap. Needs root (or
# sudo) for debootstrap. The headers package depends on the kernel image,
# so the root also gets linux-image (and builds an initramfs it never
# uses): one to a few minutes the first time, ~600 MB.
#
# `make driver-trixie` (mk/driver-buildroot.mk) builds odl_tb5.ko with
# --kbuild.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
# shellcheck source=common.sh
source "$HERE/common.sh"

want_kdir=0
kbuild=()
case "${1:-}" in
  --kdir) want_kdir=1; shift ;;
  --kbuild)
    [ $# -ge 4 ] || odl_die "usage: buildroot.sh --kbuild ABI|KERNEL SRCDIR OUTDIR [MAKE ARGS...]"
    kbuild=("${@:3}")
    set -- "$2"
    ;;
esac
ARG=${1:-trixie}

# KERNEL tag -> ABI (build/env-TAG.sh, made by `make images KERNEL=TAG`)
case "$ARG" in
  *-amd64) ABI=$ARG ;;
  *)
    env="$TOP/build/env-$ARG.sh"
    if [ ! -r "$env" ]; then
      odl_log "no $env: running make images KERNEL=$ARG"
      make -C "$TOP" --no-print-directory images KERNEL="$ARG" >&2 || odl_die "make images KERNEL=$ARG failed"
    fi
    ABI=$(. "$env"; printf '%s' "${ODL_KERNEL_ABI:-}")
    [ -n "$ABI" ] || odl_die "$env names no ODL_KERNEL_ABI"
    ;;
esac

case "$ABI" in
  *+deb13-*) SUITE=trixie ;;
  *+deb14-*) SUITE=forky ;;
  6.1.0-*) SUITE=bookworm ;;
  *) SUITE=${ODL_BUILDROOT_SUITE:-} ;;
esac
[ -n "$SUITE" ] || odl_die "cannot tell the Debian suite of kernel ABI $ABI (set ODL_BUILDROOT_SUITE)"

BR="$ODL_CACHE/buildroot"
DIR="$BR/$ABI"
ROOT="$DIR/root"
PKGS="gcc,make,libc6-dev,perl,linux-headers-$ABI"
complete() { [ -f "$DIR/.complete" ] && [ "$(cat "$DIR/.complete")" = "$PKGS" ]; }

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo

# do_kbuild SRCDIR OUTDIR [MAKE ARGS...] (the root exists)
do_kbuild() {
  local src=$1 out=$2 b rc=0
  shift 2
  [ -d "$src" ] || odl_die "no directory $src"
  mkdir -p "$out"
  b=$($SUDO mktemp -d "$ROOT/build/kb.XXXXXX")
  # shellcheck disable=SC2064
  trap "$SUDO rm -rf --one-file-system '$b'" EXIT
  $SUDO cp -r "$src/." "$b/"
  $SUDO unshare -m -- sh -c '
      root=$1; shift
      mount --rbind /dev "$root/dev" && mount -t proc proc "$root/proc" || exit 1
      exec chroot "$root" "$@"' sh "$ROOT" \
    make -C "/usr/src/linux-headers-$ABI" M="/build/${b##*/}" "$@" modules \
    > "$b.log" 2>&1 || rc=$?
  if [ $rc -ne 0 ]; then
    cat "$b.log" >&2
    $SUDO rm -f "$b.log"
    odl_die "kbuild in the $SUITE build root failed (exit $rc)"
  fi
  grep -E 'warning|error' "$b.log" >&2 || true
  $SUDO rm -f "$b.log"
  cp "$b"/*.ko "$out/"
  ls "$out"/*.ko
}

answer() {
  if [ ${#kbuild[@]} -gt 0 ]; then
    do_kbuild "${kbuild[@]}"
    exit 0
  fi
  if [ $want_kdir = 1 ]; then
    printf '%s\n' "/usr/src/linux-headers-$ABI"
  else
    printf '%s\n' "$ROOT"
  fi
  exit 0
}
complete && answer

mkdir -p "$BR"
exec 9>"$BR/.lock"
flock 9
complete && answer

# an older root with fewer packages: add the missing ones inside it
if [ -f "$DIR/.complete" ] && [ -x "$ROOT/usr/bin/apt-get" ]; then
  odl_log "adding packages to the $SUITE build root: $PKGS"
  if $SUDO unshare -m -- sh -c '
      root=$1; shift
      mount --rbind /dev "$root/dev" && mount -t proc proc "$root/proc" || exit 1
      exec chroot "$root" "$@"' sh "$ROOT" \
      sh -c "apt-get -qq update && DEBIAN_FRONTEND=noninteractive apt-get -qq -y --no-install-recommends install $(echo "$PKGS" | tr , ' ') && apt-get clean && rm -rf /var/lib/apt/lists/*" >&2; then
    printf '%s\n' "$PKGS" > "$DIR/.complete"
    answer
  fi
  odl_log "that failed: building the root again"
fi

command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] ||
  odl_die "debootstrap is not installed (make deps, or apt-get install debootstrap)"
DEBOOTSTRAP=$(command -v debootstrap || echo /usr/sbin/debootstrap)

mirror=$(odl_debian_mirror)
key=$(odl_keyring || true)
work=$(mktemp -d "$BR/.work.XXXXXX")
# shellcheck disable=SC2064
trap "$SUDO rm -rf --one-file-system '$work'" EXIT
odl_log "debootstrap $SUITE with linux-headers-$ABI (about a minute)"
t0=$SECONDS
if ! $SUDO "$DEBOOTSTRAP" --variant=minbase ${key:+--keyring="$key"} \
    --include="$PKGS" \
    "$SUITE" "$work/root" "$mirror" > "$work/debootstrap.log" 2>&1; then
  tail -n 30 "$work/debootstrap.log" >&2
  [ -r "$work/root/debootstrap/debootstrap.log" ] && tail -n 30 "$work/root/debootstrap/debootstrap.log" >&2
  odl_die "debootstrap failed"
fi
[ -f "$work/root/usr/src/linux-headers-$ABI/Makefile" ] ||
  odl_die "no /usr/src/linux-headers-$ABI/Makefile in the new root"
# nothing of the package cache is needed any more
$SUDO rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/lib/apt/lists/"* \
  "$work/root/boot/"initrd.img-* 2>/dev/null || true
$SUDO mkdir -p "$work/root/build"
cc=$($SUDO chroot "$work/root" gcc --version | head -n 1)
rm -rf "$DIR"
mv "$work" "$DIR"
trap - EXIT
printf 'suite=%s\nabi=%s\ncc=%s\nseconds=%s\n' "$SUITE" "$ABI" "$cc" $((SECONDS - t0)) > "$DIR/info"
printf '%s\n' "$PKGS" > "$DIR/.complete"
odl_log "build root for $ABI ($SUITE, $cc) in $ROOT, $((SECONDS - t0)) s"
answer
