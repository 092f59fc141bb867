#!/usr/bin/env bash
# Builds (or reuses from the cache) a qemu-system-x86_64 that carries the
# OdinLink "usb4-nhi" PCI device, from the source of Debian's qemu package.
#
# Usage: ci/qemu.sh            (make qemu calls it)
# Prints the path of the linked binary on stdout; everything else goes to
# stderr. Afterwards:
#   $BUILD/qemu/qemu-system-x86_64  -> cached binary
#   $BUILD/qemu/datadir             -> firmware directory for qemu -L
#
# Cache layout ($ODL_CACHE/qemu):
#   apt (in $ODL_CACHE/apt/qemu-src)  private deb-src index
#   dl/        qemu_*.dsc, *.orig.tar.xz, *.debian.tar.xz
#   tree/src   dpkg-source -x tree with hw/misc/odl-usb4 wired in
#   tree/src/build  the configured build tree (ninja, incremental)
#   bin/<hash>/bin/qemu-system-x86_64   finished binaries, keyed by a hash of
#              our device sources, devices.mak, Kconfig and this script
#   datadir/   symlinks to Debian's firmware (seabios, ipxe-qemu,
#              qemu-system-data); bin/<hash>/share/qemu points at it, so the
#              binary finds its firmware even without -L
# Environment: ODL_CACHE, BUILD (default <repo>/build), ODL_JOBS (default 2).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
# shellcheck source=common.sh
source "$HERE/common.sh"

BUILD=${BUILD:-$TOP/build}
JOBS=${ODL_JOBS:-2}
QC="$ODL_CACHE/qemu"
SRC="$QC/tree/src"
BLD="$SRC/build"
mkdir -p "$QC/bin" "$BUILD/qemu"

CONFIGURE_ARGS=(
  --target-list=x86_64-softmmu
  --without-default-features --without-default-devices
  --enable-kvm --enable-tcg --disable-docs --disable-install-blobs
  --disable-werror
  --with-devices-x86_64=odinlink
)

# ---------------------------------------------------------------- inputs --
shopt -s nullglob
DEV_FILES=()   # "subdir file" pairs copied into hw/misc/odl-usb4/<subdir>/
for f in "$TOP"/hw-model/core/*.[ch];     do DEV_FILES+=("core $f"); done
for f in "$TOP"/hw-model/profiles/*.[ch]; do DEV_FILES+=("profiles $f"); done
for f in "$TOP"/hw-model/qemu/*.[ch];     do DEV_FILES+=("qemu $f"); done
[ -f "$TOP/sim/odl_link.h" ] && DEV_FILES+=("sim $TOP/sim/odl_link.h")
shopt -u nullglob

hash_inputs=()
for e in "${DEV_FILES[@]}"; do hash_inputs+=("${e#* }"); done
hash_inputs+=("$TOP/hw-model/qemu/devices.mak" "$TOP/hw-model/qemu/Kconfig"
              "$HERE/qemu.sh" "$HERE/common.sh")
# Name files by their repo-relative path inside the hash so moves count.
HASH=$(for f in "${hash_inputs[@]}"; do
         printf '%s\0' "${f#"$TOP"/}"; cat "$f"; printf '\0'
       done | sha256sum | cut -c1-16)

OUT_DIR="$QC/bin/$HASH"
OUT_BIN="$OUT_DIR/bin/qemu-system-x86_64"

# -------------------------------------------------------------- firmware --
# Debian strips the firmware blobs from its qemu source; it ships them as
# seabios, ipxe-qemu and qemu-system-data. Collect symlinks in one directory.
make_datadir() {
  local d="$QC/datadir" tmp f
  tmp=$(mktemp -d "$QC/datadir.XXXXXX")
  for f in /usr/share/qemu/* /usr/share/seabios/* /usr/lib/ipxe/qemu/*; do
    [ -e "$f" ] || continue
    ln -sfn "$f" "$tmp/${f##*/}"
  done
  [ -e "$tmp/bios-256k.bin" ] || odl_die "no bios-256k.bin: run 'make deps' (seabios)"
  [ -e "$tmp/linuxboot_dma.bin" ] || odl_die "no linuxboot_dma.bin: run 'make deps' (qemu-system-data)"
  if [ -d "$d" ] && diff -r "$tmp" "$d" >/dev/null 2>&1; then
    rm -rf "$tmp"
  else
    rm -rf "$d.old"; [ -d "$d" ] && mv "$d" "$d.old"
    mv "$tmp" "$d"; rm -rf "$d.old"
  fi
}

link_result() {
  ln -sfn "$OUT_BIN" "$BUILD/qemu/qemu-system-x86_64"
  ln -sfn "$QC/datadir" "$BUILD/qemu/datadir"
  echo "$HASH" > "$BUILD/qemu/hash"
  odl_log "qemu: $BUILD/qemu/qemu-system-x86_64 -> $OUT_BIN"
  odl_log "firmware (-L): $BUILD/qemu/datadir -> $QC/datadir"
  echo "$BUILD/qemu/qemu-system-x86_64"
}

# Fast path: nothing changed.
if [ -x "$OUT_BIN" ] && [ -d "$QC/datadir" ]; then
  link_result
  exit 0
fi

# Everything below mutates the shared cache: one builder at a time.
exec 9>"$QC/lock"
if ! flock -n 9; then
  odl_log "waiting for another QEMU build (lock $QC/lock)"
  flock 9
fi
make_datadir
if [ -x "$OUT_BIN" ]; then   # built by whoever held the lock before us
  link_result
  exit 0
fi

[ ${#DEV_FILES[@]} -gt 0 ] || odl_die "no device sources under hw-model/"
t0=$(date +%s)

# ------------------------------------------------------------ source tree --
fetch_source() {
  mkdir -p "$QC/dl"
  if ! ls "$QC"/dl/qemu_*.dsc >/dev/null 2>&1; then
    odl_apt_private qemu-src deb-src bookworm
    odl_log "downloading Debian's qemu source package"
    (cd "$QC/dl" && apt-get "${ODL_APT_OPTS[@]}" -qq source --download-only qemu >&2) \
      || odl_die "apt-get source qemu failed"
  fi
  DSC=$(ls "$QC"/dl/qemu_*.dsc | sort -V | tail -n1)
}
fetch_source

if [ "$(cat "$QC/tree/.dsc" 2>/dev/null)" != "${DSC##*/}" ] || [ ! -f "$SRC/configure" ]; then
  odl_log "unpacking ${DSC##*/} (dpkg-source -x applies Debian's patches)"
  rm -rf "$QC/tree"
  mkdir -p "$QC/tree"
  # apt-get source already checked the files against the signed Sources
  # index; dpkg-source's own gpgv check only warns (no debian-keyring).
  dpkg-source -x "$DSC" "$SRC" > "$QC/unpack.log" 2>&1 \
    || { cat "$QC/unpack.log" >&2; odl_die "dpkg-source -x failed"; }
  echo "${DSC##*/}" > "$QC/tree/.dsc"
fi

# Write $2 (content on stdin) to file $1 only if it differs: keeps mtimes of
# unchanged files so ninja recompiles only what really changed.
put_if_changed() {
  local dst=$1 tmp
  tmp=$(mktemp "$dst.XXXXXX")
  cat > "$tmp"
  if cmp -s "$tmp" "$dst"; then rm -f "$tmp"; else mv "$tmp" "$dst"; chmod 644 "$dst"; fi
}

# --------------------------------------------------- wire in our device --
DEV="$SRC/hw/misc/odl-usb4"
mkdir -p "$DEV"
declare -A want=()
csrcs=()
for e in "${DEV_FILES[@]}"; do
  sub=${e%% *}; f=${e#* }
  mkdir -p "$DEV/$sub"
  want["$sub/${f##*/}"]=1
  put_if_changed "$DEV/$sub/${f##*/}" < "$f"
  case "$f" in *.c) csrcs+=("$sub/${f##*/}") ;; esac
done
# Drop files that no longer exist in the repo.
while IFS= read -r -d '' f; do
  rel=${f#"$DEV"/}
  [ -n "${want[$rel]:-}" ] || rm -f "$f"
done < <(find "$DEV" -mindepth 2 -type f -print0)

put_if_changed "$DEV/Kconfig" < "$TOP/hw-model/qemu/Kconfig"
{
  echo "# Generated by ci/qemu.sh from the OdinLink repo; do not edit."
  echo "odl_usb4_inc = include_directories('.', 'core', 'profiles', 'qemu', 'sim')"
  echo "odl_usb4_dep = declare_dependency(include_directories: odl_usb4_inc)"
  echo "softmmu_ss.add(when: 'CONFIG_USB4_NHI', if_true: [odl_usb4_dep, files("
  for c in "${csrcs[@]}"; do echo "  '$c',"; done
  echo ")])"
} | put_if_changed "$DEV/meson.build"
for d in core profiles qemu sim; do mkdir -p "$DEV/$d"; done

grep -q "subdir('odl-usb4')" "$SRC/hw/misc/meson.build" \
  || echo "subdir('odl-usb4')" >> "$SRC/hw/misc/meson.build"
grep -q "source odl-usb4/Kconfig" "$SRC/hw/misc/Kconfig" \
  || printf '\nsource odl-usb4/Kconfig\n' >> "$SRC/hw/misc/Kconfig"
put_if_changed "$SRC/configs/devices/x86_64-softmmu/odinlink.mak" \
  < "$TOP/hw-model/qemu/devices.mak"

# -------------------------------------------------------------- configure --
cfg_sig=$(printf '%s\n' "${CONFIGURE_ARGS[@]}" | sha256sum | cut -c1-16)
if [ ! -f "$BLD/build.ninja" ] || [ "$(cat "$QC/tree/.configured" 2>/dev/null)" != "$cfg_sig" ]; then
  odl_log "configuring QEMU (${CONFIGURE_ARGS[*]})"
  rm -rf "$BLD" "$QC/tree/.configured"
  mkdir -p "$BLD"
  (cd "$BLD" && ../configure "${CONFIGURE_ARGS[@]}" > "$QC/tree/configure.log" 2>&1) || {
    tail -n 40 "$QC/tree/configure.log" >&2
    odl_die "QEMU configure failed (log: $QC/tree/configure.log)"
  }
  echo "$cfg_sig" > "$QC/tree/.configured"
fi

# ------------------------------------------------------------------ build --
odl_log "ninja -j$JOBS qemu-system-x86_64 in $BLD"
# -k 0: if our device does not compile, still build the rest of QEMU so the
# next attempt only recompiles our files.
if ! ninja -C "$BLD" -j"$JOBS" -k 0 qemu-system-x86_64 > "$QC/tree/build.log" 2>&1; then
  grep -E -A12 '^FAILED:|: error:' "$QC/tree/build.log" | grep -v -E '^(cc|c\+\+) ' | cut -c1-400 | head -n 80 >&2 \
    || tail -n 60 "$QC/tree/build.log" >&2
  odl_die "QEMU build failed (log: $QC/tree/build.log)"
fi
grep -c '^\[' "$QC/tree/build.log" | sed 's/^/ninja steps: /' >&2 || true
# Warnings from our own files are worth seeing.
grep -E 'odl-usb4/.*warning' "$QC/tree/build.log" >&2 || true

# Sanity: the device is there.
"$BLD/qemu-system-x86_64" -L "$QC/datadir" -device help 2>/dev/null | grep -q '"usb4-nhi"' \
  || odl_die "built QEMU has no usb4-nhi device (is TYPE \"usb4-nhi\" registered and CONFIG_USB4_NHI=y?)"

# ------------------------------------------------------------------ store --
tmp=$(mktemp -d "$QC/bin/.tmp.XXXXXX")
mkdir -p "$tmp/bin" "$tmp/share"
cp "$BLD/qemu-system-x86_64" "$tmp/bin/"
ln -s "$QC/datadir" "$tmp/share/qemu"
printf '%s\n' "${hash_inputs[@]#"$TOP"/}" > "$tmp/inputs"
rm -rf "$OUT_DIR"
mv "$tmp" "$OUT_DIR"
odl_log "built in $(( $(date +%s) - t0 ))s; cached as $OUT_DIR"
# Keep the cache bounded: the newest ODL_QEMU_KEEP (default 8) binaries.
ls -1dt "$QC"/bin/*/ 2>/dev/null | tail -n +$(( ${ODL_QEMU_KEEP:-8} + 1 )) | while read -r old; do
  [ "${old%/}" = "$OUT_DIR" ] || rm -rf "${old%/}"
done
link_result
