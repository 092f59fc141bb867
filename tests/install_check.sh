#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make userlib-install and rccl-install into a scratch DESTDIR, then use
# what was installed from there (LD_LIBRARY_PATH and pkg-config's sysroot
# stand in for the system paths): a program built against libodl_tb5 with
# pkg-config talks over shm, the installed CLI runs a verified test, the
# plugin is loaded from the installed directory by the loader rules (RCCL's
# and NCCL's file name), the statistics reader and the public headers work.
# TAP output. Run from the top of the tree (make unit-install).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; [ -f "$tmp/log" ] && sed 's/^/# /' "$tmp/log" | tail -n 20; }

root=$tmp/root prefix=/opt/odl
lib=$root$prefix/lib
if make -s -C "$top" userlib-install rccl-install DESTDIR="$root" PREFIX="$prefix" >"$tmp/log" 2>&1; then
	ok "make userlib-install rccl-install DESTDIR=... PREFIX=$prefix"
else
	notok "make userlib-install rccl-install"
	echo "1..$n"
	exit 1
fi
want="bin/odl_tb5_cli bin/odl_tb5_rccl_stats include/odl_tb5/odl_tb5.h
include/odl_tb5/odl_tb5_rccl_stats.h include/odl_tb5/odl_tb5_rccl_profiler.h
lib/libodl_tb5.so lib/libodl_tb5.a lib/pkgconfig/odl_tb5.pc
lib/librccl-net-odl_tb5.so lib/libnccl-net-odl_tb5.so"
missing=
for f in $want; do [ -e "$root$prefix/$f" ] || missing="$missing $f"; done
if [ -z "$missing" ]; then ok "every file in place"; else notok "missing:$missing"; fi

# a program built with pkg-config against the installed library: a message
# over shm between two of its handles
cat >"$tmp/p.c" <<'CEOF'
#include <stdio.h>
#include <string.h>
#include <odl_tb5/odl_tb5.h>
int main(int argc, char **argv)
{
	odl_tb5_t *a, *b;
	struct odl_tb5_open_opts oa, ob;
	struct odl_tb5_completion c;
	uint32_t ia, ib;
	char *pa, *pb;
	int r;

	(void)argc;
	odl_tb5_open_opts_init(&oa);
	odl_tb5_open_opts_init(&ob);
	oa.role = ODL_TB5_ROLE_A;
	ob.role = ODL_TB5_ROLE_B;
	if (odl_tb5_open(argv[1], &oa, &a) || odl_tb5_open(argv[1], &ob, &b))
		return 2;
	if (odl_tb5_wait_peer(a, 5000) || odl_tb5_wait_peer(b, 5000))
		return 3;
	if (odl_tb5_buf_alloc(a, 4096, 0, &ia, (void **)&pa) ||
	    odl_tb5_buf_alloc(b, 4096, 0, &ib, (void **)&pb))
		return 4;
	strcpy(pa, "installed");
	if (odl_tb5_post_recv(b, ib, 0, 4096, 7, 0) || odl_tb5_send(a, ia, 0, 10, 8, 0))
		return 5;
	r = odl_tb5_poll(b, &c, 1, 5000, 0);
	if (r != 1 || c.status != 0 || c.length != 10 || strcmp(pb, "installed"))
		return 6;
	puts(pb);
	odl_tb5_close(a);
	odl_tb5_close(b);
	return 0;
}
CEOF
export PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_LIBDIR=$lib/pkgconfig
if cc -std=c11 -Wall -Wextra -Werror -o "$tmp/p" "$tmp/p.c" $(pkg-config --cflags --libs odl_tb5) >"$tmp/log" 2>&1 &&
	LD_LIBRARY_PATH=$lib "$tmp/p" "shm:inst$$" >"$tmp/log" 2>&1 && grep -qx installed "$tmp/log"; then
	ok "a program built with pkg-config against the installed libodl_tb5 moves a message over shm"
else
	notok "a program built with pkg-config against the installed libodl_tb5 (exit $?)"
fi
if LD_LIBRARY_PATH=$lib ldd "$tmp/p" 2>/dev/null | grep -q "libodl_tb5.so.* => $lib/"; then
	ok "it runs with the installed libodl_tb5 (its soname link)"
else
	LD_LIBRARY_PATH=$lib ldd "$tmp/p" >"$tmp/log" 2>&1
	notok "it runs with the installed libodl_tb5"
fi

# the installed CLI, a short verified test over shm
cli=$root$prefix/bin/odl_tb5_cli
LD_LIBRARY_PATH=$lib timeout 60 "$cli" --server --device "shm:instc$$" --timeout 20000 >"$tmp/srv" 2>&1 &
sp=$!
if LD_LIBRARY_PATH=$lib timeout 60 "$cli" --client --device "shm:instc$$" --test bandwidth \
	--size 64K --iterations 100 >"$tmp/log" 2>&1 && wait $sp && grep -q 'all data verified' "$tmp/log"; then
	ok "the installed odl_tb5_cli runs a verified bandwidth test"
else
	wait $sp 2>/dev/null
	notok "the installed odl_tb5_cli runs a verified bandwidth test"
fi

# the plugin, found on the library path by the loader rules (only
# NCCL_NET_PLUGIN set) under RCCL's and NCCL's names: the file mapped must
# be the installed one (the harness's own RUNPATH points at build/rccl)
for fl in rccl nccl; do
	if env -i NCCL_NET_PLUGIN=odl_tb5 LD_LIBRARY_PATH=$lib LD_DEBUG=files \
		"$top/build/rccl/netconf" --load-only --flavour $fl >"$tmp/log" 2>&1 &&
		grep -q "^ok 2 " "$tmp/log" && grep -Eq "calling init: $lib/lib${fl}-net-odl_tb5.so" "$tmp/log"; then
		ok "$fl: NCCL_NET_PLUGIN=odl_tb5 loads $prefix/lib/lib${fl}-net-odl_tb5.so"
	else
		notok "$fl: NCCL_NET_PLUGIN=odl_tb5 loads $prefix/lib/lib${fl}-net-odl_tb5.so"
	fi
done

# the statistics reader and the public header: a file written through the
# header's layout, read back by the installed tool
cat >"$tmp/s.c" <<'CEOF'
#include <stdio.h>
#include <odl_tb5/odl_tb5_rccl_stats.h>
#include <odl_tb5/odl_tb5_rccl_profiler.h>
int main(void)
{
	printf("%zu\n", sizeof(struct odl_tb5_rccl_stats));
	return 0;
}
CEOF
if cc -std=c11 -Wall -Wextra -Werror -I"$root$prefix/include" -o "$tmp/s" "$tmp/s.c" >"$tmp/log" 2>&1 &&
	[ "$("$tmp/s")" -gt 0 ] && "$root$prefix/bin/odl_tb5_rccl_stats" --layout >"$tmp/log" 2>&1 &&
	grep -q fused_degraded "$tmp/log"; then
	ok "the installed statistics and profiler headers compile; odl_tb5_rccl_stats --layout runs"
else
	notok "the installed statistics and profiler headers compile; odl_tb5_rccl_stats --layout runs"
fi

echo "1..$n"
[ $fails = 0 ] || { echo "# $fails of $n install checks failed" >&2; exit 1; }
