#!/usr/bin/env bash
# Installs the Debian packages OdinLink needs on the host (idempotent).
# Usage: ci/deps.sh [--check]   (--check: only report what is missing)
set -euo pipefail

PKGS=(
  build-essential pkg-config check lcov python3 python3-venv
  meson ninja-build libglib2.0-dev libpixman-1-dev flex bison zlib1g-dev
  libfdt-dev dpkg-dev busybox-static cpio xz-utils zstd kmod
  util-linux gzip debootstrap
  # make unit-dkms: the driver built by DKMS
  dkms
  # firmware blobs stripped from Debian's qemu source (used via qemu -L)
  seabios ipxe-qemu qemu-system-data
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${1:-}" = "--check" ]; then
  printf '%s\n' "${missing[@]}"
  exit 0
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
