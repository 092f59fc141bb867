# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Sourced by harness/sim-test and harness/scenarios/common.sh: when
# `python3` on PATH is a version manager's shim (pyenv's are bash scripts
# that take a few hundred milliseconds of CPU per start, seconds on a loaded
# two-core machine), put the interpreter the shim would run first on PATH.
# The harness starts python hundreds of times a scenario (every vmpair
# call), beside the guests' QEMUs on the same cores.
odl_direct_python() {
	local py real dir
	[ -n "${ODL_DIRECT_PYTHON:-}" ] && return 0
	export ODL_DIRECT_PYTHON=1
	py=$(command -v python3) || return 0
	case $py in */shims/*) ;; *) return 0 ;; esac
	real=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || return 0
	case $real in /*) ;; *) return 0 ;; esac
	[ -x "$real" ] || return 0
	dir=${TMPDIR:-/tmp}/odl-python-$(id -u)-$(printf '%s' "$real" | cksum | cut -d' ' -f1)
	mkdir -p "$dir" && ln -sfn "$real" "$dir/python3" || return 0
	export PATH="$dir:$PATH"
}
odl_direct_python
