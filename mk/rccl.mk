# SPDX-License-Identifier: MIT
# rccl/: the OdinLink RCCL/NCCL net plugin, its stats reader and the
# conformance harness. Included by the top-level Makefile (TOP, BUILD, CC,
# CFLAGS_COMMON).
#
#   make rccl        $(BUILD)/rccl/librccl-net-odl_tb5.so (+ libnccl-net-odl_tb5.so
#                    beside it), odl_tb5_rccl_stats, netconf, and for the busybox
#                    guests (no shared libc) netconf.static + odl_tb5_rccl_stats.static:
#                    the harness with the plugin's objects linked in (tables taken
#                    from the exported ncclNetPlugin_vN symbols, no dlopen)
#   make unit-rccl   ABI/export checks, loader test in a fresh process, the
#                    conformance harness over libodl_tb5's shm backend (API v7
#                    and v10), then again with the plugin and harness under
#                    ASan/UBSan, then the static guest build (v9, and a short
#                    all-reduce benchmark runs)
#   make rccl-install PREFIX=/usr/local DESTDIR= : the plugin under both file
#                    names in PREFIX/lib (on the loader's path once ldconfig
#                    knows PREFIX/lib), its public headers (statistics,
#                    profiler) in PREFIX/include/odl_tb5, the statistics reader
#   make unit-install both install targets into a scratch DESTDIR, then what
#                    was installed is used from there: a program built with
#                    pkg-config against libodl_tb5, the CLI, the plugin loaded
#                    by the loader rules, the statistics reader and headers
#   make bench-rccl  bench/rccl.sh: plugin all-reduce between the VMs against raw
#                    odl_tb5_cli (one-way and bidirectional) in the same run;
#                    `make bench` runs it first (BENCH_RCCL=0 skips it)
#   make bench-rccl-fused  bench/rccl_fused.sh: two cables, the all-reduce over
#                    the plugin's fused device (makeVDevice) against raw over
#                    both, a channel per cable, one cable; part of `make bench`
#   make bench-rccl-host  bench/rccl_host_lat.py: the plugin's small-message
#                    latency on the host over shm, per way test() waits
#
# libodl_tb5 is compiled into the plugin (static, symbols kept private by
# rccl/src/exports.map), so the plugin has no run-time dependency besides libc.
# Across two machines with glibc: copy $(BUILD)/rccl/{librccl-net-odl_tb5.so,netconf}
# to both, then `ODL_TB5_DEVICE=0 NCCL_NET_PLUGIN=odl_tb5 LD_LIBRARY_PATH=DIR
# netconf --rank 0 --oob-listen 29500` on one and `--rank 1 --oob-connect
# IP:29500` on the other. Across the two VMs: harness/scenarios/net-plugin.sh
# (netconf.static) and bench/rccl.sh.

RCCL_DIR      := $(TOP)/rccl
RCCL_OUT      := $(BUILD)/rccl
RCCL_UL_SRCS  := $(sort $(wildcard $(TOP)/userlib/*.c))
RCCL_UL_INC   := -I$(TOP)/userlib/include -I$(TOP)/userlib -I$(TOP)/driver/uapi
RCCL_HDRS     := $(wildcard $(RCCL_DIR)/include/*.h) $(wildcard $(TOP)/userlib/*.h) \
                 $(wildcard $(TOP)/userlib/include/odl_tb5/*.h) $(TOP)/mk/rccl.mk
RCCL_CFLAGS   := $(CFLAGS_COMMON) -I$(RCCL_DIR)/include $(RCCL_UL_INC)
RCCL_SO_FLAGS := -shared -fPIC -fvisibility=hidden \
                 -Wl,--version-script=$(RCCL_DIR)/src/exports.map -Wl,-z,defs \
                 -Wl,-z,now
RCCL_SAN      := -fsanitize=address,undefined -fno-omit-frame-pointer \
                 -fno-sanitize-recover=all
RCCL_SO_NAME  := librccl-net-odl_tb5.so
RCCL_SO       := $(RCCL_OUT)/$(RCCL_SO_NAME)
RCCL_SO_NCCL  := $(RCCL_OUT)/libnccl-net-odl_tb5.so
RCCL_STATS    := $(RCCL_OUT)/odl_tb5_rccl_stats
RCCL_NETCONF  := $(RCCL_OUT)/netconf
RCCL_ASAN_OUT := $(RCCL_OUT)/asan
RCCL_COV_OUT  := $(RCCL_OUT)/cov
# coverage-rccl: lcov line coverage of rccl/src/plugin.c from the host runs
# over shm; fails below RCCL_COV_MIN %
RCCL_COV_MIN  ?= 80
RCCL_NETCONF_STATIC := $(RCCL_OUT)/netconf.static
RCCL_STATS_STATIC   := $(RCCL_OUT)/odl_tb5_rccl_stats.static
# Tests: how long the harness may run, the stats file they use.
RCCL_TIMEOUT  ?= 600
RCCL_TEST_STATS := $(RCCL_OUT)/test/rccl_stats

.PHONY: coverage-rccl rccl-install unit-install
.PHONY: rccl unit-rccl unit-rccl-abi unit-rccl-wire unit-rccl-load unit-rccl-conf unit-rccl-asan unit-rccl-stats \
        unit-rccl-static unit-rccl-hostlat bench-rccl bench-rccl-fused bench-rccl-host

rccl: $(RCCL_SO) $(RCCL_SO_NCCL) $(RCCL_STATS) $(RCCL_NETCONF) $(RCCL_NETCONF_STATIC) \
      $(RCCL_STATS_STATIC)

# plugin(out dir, extra flags)
define rccl_plugin
$(1)/$(RCCL_SO_NAME): $(RCCL_DIR)/src/plugin.c $(RCCL_UL_SRCS) $(RCCL_DIR)/src/exports.map $(RCCL_HDRS)
	@mkdir -p $$(@D)
	$(CC) $(RCCL_CFLAGS) $(2) $(RCCL_SO_FLAGS) -o $$@ $(RCCL_DIR)/src/plugin.c \
	  $(RCCL_UL_SRCS) -lpthread
$(1)/libnccl-net-odl_tb5.so: $(1)/$(RCCL_SO_NAME)
	ln -sf $(RCCL_SO_NAME) $$@
# the harness carries a RUNPATH to the plugin directory, the way an installed
# libnccl/librccl finds a plugin placed beside it
$(1)/netconf: $(RCCL_DIR)/tests/netconf.c $(RCCL_HDRS)
	@mkdir -p $$(@D)
	$(CC) $(RCCL_CFLAGS) $(2) -o $$@ $$< -Wl,-rpath,$(1) -ldl -lpthread
endef
$(eval $(call rccl_plugin,$(RCCL_OUT),))
$(eval $(call rccl_plugin,$(RCCL_ASAN_OUT),$(RCCL_SAN)))
$(eval $(call rccl_plugin,$(RCCL_COV_OUT),-O0 --coverage -fprofile-update=atomic))

$(RCCL_STATS): $(RCCL_DIR)/tools/odl_tb5_rccl_stats.c $(RCCL_HDRS)
	@mkdir -p $(@D)
	$(CC) $(RCCL_CFLAGS) -o $@ $<

# Static guest build: the same harness source with -DNETCONF_STATIC, linked
# with the plugin and libodl_tb5 sources (the objects the .so is made of).
$(RCCL_NETCONF_STATIC): $(RCCL_DIR)/tests/netconf.c $(RCCL_DIR)/src/plugin.c $(RCCL_UL_SRCS) $(RCCL_HDRS)
	@mkdir -p $(@D)
	$(CC) $(RCCL_CFLAGS) -DNETCONF_STATIC -static -pthread -o $@ $(RCCL_DIR)/tests/netconf.c \
	  $(RCCL_DIR)/src/plugin.c $(RCCL_UL_SRCS)

$(RCCL_STATS_STATIC): $(RCCL_DIR)/tools/odl_tb5_rccl_stats.c $(RCCL_HDRS)
	@mkdir -p $(@D)
	$(CC) $(RCCL_CFLAGS) -static -o $@ $<

$(RCCL_OUT)/abi_check: $(RCCL_DIR)/tests/abi_check.c $(RCCL_HDRS)
	@mkdir -p $(@D)
	$(CC) $(RCCL_CFLAGS) -pedantic -o $@ $<

unit-rccl: unit-rccl-abi unit-rccl-wire unit-rccl-load unit-rccl-conf unit-rccl-asan unit-rccl-static \
  unit-rccl-stats unit-rccl-hostlat

# bench/rccl_host_lat.py, one short round into a scratch directory: every way
# of waiting runs and is in the result; a bad --ways is refused
unit-rccl-hostlat: $(RCCL_NETCONF) $(RCCL_SO) $(RCCL_SO_NCCL)
	@rm -rf $(RCCL_OUT)/hostlat-test
	python3 $(TOP)/bench/rccl_host_lat.py --netconf $(RCCL_NETCONF) --rounds 2 --iters 100 \
	  --sizes 8,4096 --out-dir $(RCCL_OUT)/hostlat-test
	@python3 -c 'import glob,json; f = glob.glob("$(RCCL_OUT)/hostlat-test/rccl-hostlat-*.json"); \
	  assert len(f) == 1, f; j = json.load(open(f[0])); s = j["summary"]; \
	  assert sorted(s) == ["4096", "8"] and len(j["rounds"]) == 2, j["info"]; \
	  ways = ["hands-over", "no-wait", "polls", "sleeps"]; \
	  assert all(sorted(s[z][k]) == ways for z in s for k in ("pingpong", "allreduce")), s; \
	  assert all(0 < s[z][k][w]["p50_us"] <= s[z][k][w]["p99_us"] for z in s for k in s[z] for w in ways), s; \
	  print("ok - bench/rccl_host_lat.py: 2 sizes x 4 ways of waiting, 2 rounds, in its result file")'
	@if python3 $(TOP)/bench/rccl_host_lat.py --netconf $(RCCL_NETCONF) --ways polls,polls >/dev/null 2>&1; then \
	   echo "unit-rccl-hostlat: --ways polls,polls was taken" >&2; exit 1; fi; \
	 echo "ok - bench/rccl_host_lat.py refuses a way named twice"

# The statistics reader: --layout, a file written from it read back, --watch
# over a file whose counters the check adds to (the reported changes and
# rates must account for exactly that), refusals
unit-rccl-stats: $(RCCL_STATS)
	python3 $(RCCL_DIR)/tests/stats_tool_check.py $(RCCL_STATS) $(RCCL_OUT)/stats-tool-check

# Check tests of the plugin's pure wire checks (plugin.c included, with the
# sanitizers): a hostile peer's DATA header must not reach memcpy
$(RCCL_OUT)/test_wire: $(RCCL_DIR)/tests/test_wire.c $(RCCL_DIR)/src/plugin.c $(RCCL_UL_SRCS) $(RCCL_HDRS)
	@mkdir -p $(@D)
	$(CC) $(RCCL_CFLAGS) $(RCCL_SAN) $(CHECK_CFLAGS) -o $@ $(RCCL_DIR)/tests/test_wire.c \
	  $(RCCL_UL_SRCS) $(CHECK_LIBS) -lpthread
unit-rccl-wire: $(RCCL_OUT)/test_wire
	$(RCCL_OUT)/test_wire

# ABI: the header's _Static_asserts compiled (C11 -pedantic), sizes printed;
# exported dynamic symbols are exactly the six tables (v7..v12).
unit-rccl-abi: $(RCCL_OUT)/abi_check $(RCCL_SO)
	$(RCCL_OUT)/abi_check
	@syms=$$(nm -D --defined-only $(RCCL_SO) | awk '$$2 ~ /[A-Za-z]/ {print $$3}' | sort | tr '\n' ' '); \
	 want="ncclNetPlugin_v10 ncclNetPlugin_v11 ncclNetPlugin_v12 ncclNetPlugin_v7 ncclNetPlugin_v8 ncclNetPlugin_v9 "; \
	 if [ "$$syms" != "$$want" ]; then echo "unit-rccl-abi: exports: $$syms (want $$want)" >&2; exit 1; fi; \
	 echo "unit-rccl-abi: exports $$syms"

# Loader rules in fresh processes with only NCCL_NET_PLUGIN set (the harness's
# RUNPATH plays libnccl's): RCCL name, NCCL name, file name given verbatim.
unit-rccl-load: $(RCCL_NETCONF) $(RCCL_SO) $(RCCL_SO_NCCL)
	env -i NCCL_NET_PLUGIN=odl_tb5 $(RCCL_NETCONF) --load-only --flavour rccl
	env -i NCCL_NET_PLUGIN=odl_tb5 $(RCCL_NETCONF) --load-only --flavour nccl --api 7
	env -i NCCL_NET_PLUGIN=$(RCCL_SO_NAME) $(RCCL_NETCONF) --load-only --flavour rccl
	@if env -i NCCL_NET_PLUGIN=ODL_TB5 $(RCCL_NETCONF) --load-only >/dev/null 2>&1; then \
	   echo "unit-rccl-load: wrong-case suffix ODL_TB5 loaded (names are case-sensitive)" >&2; exit 1; \
	 else echo "ok - wrong-case NCCL_NET_PLUGIN=ODL_TB5 is not found (as with NCCL/RCCL)"; fi

# Two ranks (two processes) over the shm backend, v7 then v10 tables (the v10
# run with test() never waiting for the progress thread: pure polling, with
# zero copy off: every message staged, CTS not urgent, and NCCL_PTR_DMABUF
# advertised (ODL_TB5_RCCL_DMABUF=1)). The statistics show both paths. Then
# the peer dies mid-transfer (--fail kill): the survivor gets NCCL errors;
# and the peer stops (--fail stop, SIGSTOP): the keepalive fails the waiting
# comms with ncclRemoteError after ODL_TB5_RCCL_PEER_TIMEOUT_MS; the killed
# rank must not stay counted in procs_attached (liveness locks). Last, three
# rank pairs share one shm device at once (--pairs 3): each process takes
# the first free port (pair k: 78 + k on both sides, checked), and a
# listener on another port is refused at once (shm cannot send there; and
# test() waits for the progress threads, ODL_TB5_RCCL_CALLER_REAP=0); the
# same with one ODL_TB5_RCCL_PORT for all: the second pair's init must fail
# with a message that names the variable. Between them the all-reduce
# benchmark over two shm devices, a channel each, driven by one thread; the
# conformance sequence and the benchmark over the two devices fused into one
# (--fuse: makeVDevice, every message striped over both; through v12 with
# all sizes and the statistics checked, and two connects of one process to
# one fused listener with their rails crossed by
# ODL_TB5_RCCL_TEST_CONNECT_STEP; and through v9); and
# a quick run with ODL_TB5_RCCL_BUSY_POLL_US: waits in test() must end while
# polling.
unit-rccl-conf: $(RCCL_NETCONF) $(RCCL_SO) $(RCCL_SO_NCCL) $(RCCL_STATS)
	@rm -rf $(dir $(RCCL_TEST_STATS)) && mkdir -p $(dir $(RCCL_TEST_STATS))
	NCCL_NET_PLUGIN=odl_tb5 ODL_TB5_RCCL_STATS=$(RCCL_TEST_STATS) \
	  $(RCCL_NETCONF) --api 7 --timeout $(RCCL_TIMEOUT)
	@$(RCCL_STATS) --json $(RCCL_TEST_STATS) | python3 -c 'import json,sys; s=json.load(sys.stdin); \
	  assert s["zc_regs"] > 0 and s["zc_rx_bytes"] == s["zc_tx_bytes"] > 64*2**20, s; \
	  assert s["cts_urgent"] > 0, s; \
	  assert s["caller_reaps"] > 0, s; \
	  import os; few = len(os.sched_getaffinity(0)) < 4; \
	  assert s["busy_poll_reaps"] == 0 if few else s["busy_poll_reaps"] <= s["caller_reaps"], s; \
	  print("ok - zero copy: %d of %d bytes moved without a staging copy; %d CTS sent urgent; %d waits in test() reaped by the caller%s" % (s["zc_tx_bytes"], s["tx_bytes"], s["cts_urgent"], s["caller_reaps"], ", none polling (fewer than 4 CPUs)" if few else "")); \
	  open("$(RCCL_TEST_STATS).zc", "w").write("%d %d %d %d" % (s["zc_tx_bytes"], s["cts_urgent"], s["caller_reaps"], s["busy_poll_reaps"]))'
	NCCL_NET_PLUGIN=odl_tb5 ODL_TB5_RCCL_STATS=$(RCCL_TEST_STATS) ODL_TB5_RCCL_TEST_WAIT_US=0 \
	  ODL_TB5_RCCL_ZEROCOPY=0 ODL_TB5_RCCL_URGENT_CTS=0 ODL_TB5_RCCL_DMABUF=1 \
	  $(RCCL_NETCONF) --api 10 --flavour nccl --max-size 16777216 --timeout $(RCCL_TIMEOUT)
	$(RCCL_STATS) $(RCCL_TEST_STATS)
	@$(RCCL_STATS) --json $(RCCL_TEST_STATS) | python3 -c 'import json,sys; s=json.load(sys.stdin); \
	  assert s["tx_bytes"] > 2*64*2**20 and s["rx_bytes"] == s["tx_bytes"], s; \
	  assert s["procs_attached"] == 0 and s["inits"] == 4 and s["err_truncated"] >= 4, s; \
	  zc, urg, reaps, busy = (int(v) for v in open("$(RCCL_TEST_STATS).zc").read().split()); \
	  assert s["zc_tx_bytes"] == zc and s["cts_urgent"] == urg and s["caller_reaps"] == reaps, s; \
	  assert s["busy_poll_reaps"] == busy, s; \
	  print("ok - statistics file consistent (staged run without urgent CTS and without waits in test() added no zero-copy bytes, no urgent CTS, no reaping caller)")'
	NCCL_NET_PLUGIN=odl_tb5 ODL_TB5_RCCL_STATS=$(RCCL_TEST_STATS) $(RCCL_NETCONF) --fail kill --timeout $(RCCL_TIMEOUT)
	@$(RCCL_STATS) --json $(RCCL_TEST_STATS) | python3 -c 'import json,sys; s=json.load(sys.stdin); \
	  assert s["inits"] == 6 and s["procs_attached"] == 0 and s["procs_live"] == 0, s; \
	  print("ok - statistics: the SIGKILLed rank is not counted as attached (procs_attached 0, procs_live 0)")'
	NCCL_NET_PLUGIN=odl_tb5 ODL_TB5_RCCL_STATS=off ODL_TB5_RCCL_PEER_TIMEOUT_MS=2000 \
	  $(RCCL_NETCONF) --fail stop --timeout $(RCCL_TIMEOUT)
	NCCL_NET_PLUGIN=odl_tb5 ODL_TB5_RCCL_STATS=off ODL_TB5_RCCL_CALLER_REAP=0 \
	  $(RCCL_NETCONF) --pairs 3 --quick --timeout $(RCCL_TIMEOUT)
	NCCL_NET_PLUGIN=odl_tb5 ODL_TB5_RCCL_STATS=off $(RCCL_NETCONF) --rails 2 --quick --timeout $(RCCL_TIMEOUT)
	NCCL_NET_PLUGIN=odl_tb5 ODL_TB5_RCCL_STATS=off $(RCCL_NETCONF) --rails 2 --bench 3000000 --slice 262144 \
	  --channels 2 --iters 2 --timeout $(RCCL_TIMEOUT)
	NCCL_NET_PLUGIN=odl_tb5 ODL_TB5_RCCL_STATS=$(RCCL_TEST_STATS).fused ODL_TB5_RCCL_TEST_CONNECT_STEP=1 \
	  $(RCCL_NETCONF) --rails 2 --fuse --timeout $(RCCL_TIMEOUT)
	@$(RCCL_STATS) --json $(RCCL_TEST_STATS).fused | python3 -c 'import json,sys; s=json.load(sys.stdin); \
	  assert s["fused_ops"] > 0 and s["rx_bytes"] == s["tx_bytes"] > 64*2**20 and s["zc_tx_bytes"] > 0, s; \
	  print("ok - fused device: %d sends and receives striped over both shm devices, %d bytes each way, %d zero copy" % (s["fused_ops"], s["tx_bytes"], s["zc_tx_bytes"]))'
	NCCL_NET_PLUGIN=odl_tb5 ODL_TB5_RCCL_STATS=off $(RCCL_NETCONF) --api 9 --rails 2 --fuse --quick \
	  --timeout $(RCCL_TIMEOUT)
	NCCL_NET_PLUGIN=odl_tb5 ODL_TB5_RCCL_STATS=off $(RCCL_NETCONF) --rails 2 --fuse --bench 3000000 \
	  --slice 262144 --channels 2 --iters 2 --timeout $(RCCL_TIMEOUT)
	NCCL_NET_PLUGIN=odl_tb5 ODL_TB5_RCCL_STATS=$(RCCL_TEST_STATS).busy ODL_TB5_RCCL_BUSY_POLL_US=2000 \
	  $(RCCL_NETCONF) --quick --timeout $(RCCL_TIMEOUT)
	@$(RCCL_STATS) --json $(RCCL_TEST_STATS).busy | python3 -c 'import json,sys; s=json.load(sys.stdin); \
	  assert 0 < s["busy_poll_reaps"] <= s["caller_reaps"], s; \
	  print("ok - busy polling: %d of %d waits in test() ended by polling without sleeping" % (s["busy_poll_reaps"], s["caller_reaps"]))'
	@# staging slots of 256 KiB here, 64 KiB at the peer: chunks fit the smaller
	NCCL_NET_PLUGIN=odl_tb5 ODL_TB5_RCCL_STATS=off ODL_TB5_RCCL_ZEROCOPY=0 ODL_TB5_RCCL_CHUNK=262144 \
	  $(RCCL_NETCONF) --quick --rank1-env ODL_TB5_RCCL_CHUNK=65536 --timeout $(RCCL_TIMEOUT)
	@out=$$(NCCL_NET_PLUGIN=odl_tb5 ODL_TB5_RCCL_STATS=off ODL_TB5_RCCL_PORT=90 ODL_TB5_RCCL_DEBUG=1 \
	  $(RCCL_NETCONF) --pairs 2 --quick --timeout 120 2>&1); rc=$$?; \
	 if [ $$rc -eq 0 ] || ! printf '%s\n' "$$out" | grep -q 'port 90 (ODL_TB5_RCCL_PORT) is held by another process'; then \
	   printf '%s\n' "$$out" | tail -n 30; \
	   echo "unit-rccl-conf: a second process on the same ODL_TB5_RCCL_PORT was not refused with a clear message (exit $$rc)" >&2; exit 1; fi; \
	 echo "ok - two processes given the same ODL_TB5_RCCL_PORT: the second one's init fails, saying why"

# (LD_LIBRARY_PATH: under ASan dlopen is intercepted by libasan, whose
# RUNPATH, not the harness's, is then "the caller's")
RCCL_ASAN_RUN = NCCL_NET_PLUGIN=odl_tb5 ODL_TB5_RCCL_STATS=off LD_LIBRARY_PATH=$(RCCL_ASAN_OUT) \
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  $(RCCL_ASAN_OUT)/netconf --timeout $(RCCL_TIMEOUT)
unit-rccl-asan: $(RCCL_ASAN_OUT)/netconf $(RCCL_ASAN_OUT)/$(RCCL_SO_NAME)
	$(RCCL_ASAN_RUN) --api 7 --max-size 16777216
	$(RCCL_ASAN_RUN) --api 11 --quick
	$(RCCL_ASAN_RUN) --fail kill
	ODL_TB5_RCCL_PEER_TIMEOUT_MS=2000 $(RCCL_ASAN_RUN) --fail stop
	$(RCCL_ASAN_RUN) --pairs 2 --quick
	$(RCCL_ASAN_RUN) --rails 2 --quick
	ODL_TB5_RCCL_TEST_CONNECT_STEP=1 $(RCCL_ASAN_RUN) --rails 2 --fuse --quick
	$(RCCL_ASAN_RUN) --rails 2 --fuse --bench 3000000 --slice 262144 --iters 2
	$(RCCL_ASAN_RUN) --bench 3000000 --slice 262144 --iters 2
	$(RCCL_ASAN_RUN) --bench 3000000 --slice 262144 --iters 2 --in-place
	$(RCCL_ASAN_RUN) --bench 3000000 --slice 262144 --iters 2 --reducer thread
	$(RCCL_ASAN_RUN) --bench-lat 8,4096,65536 --lat-iters 200
	ODL_TB5_RCCL_BUSY_POLL_US=500 $(RCCL_ASAN_RUN) --bench-lat 8,4096 --lat-iters 200

# The static guest build over shm on the host (what the net-plugin scenario
# runs in the VMs, there over /dev/odl_tb5_0): conformance through the v9
# table, then short all-reduce benchmarks (one slice per phase; several
# slices with a short last one, out of place and in place; 32 small slices
# in flight; reduced by a thread of its own, both ways; the timeline of both
# reducers checked against the pipeline's dependencies; the same without the reduction, every byte received checked,
# both ways), then the latency benchmark (ping-pong and small all-reduces,
# every message checked) and its refusal of bad sizes; it must not depend on
# libdl/NSS.
RCCL_STATIC_RUN = ODL_TB5_RCCL_STATS=off $(RCCL_NETCONF_STATIC) --timeout $(RCCL_TIMEOUT)
unit-rccl-static: $(RCCL_NETCONF_STATIC) $(RCCL_STATS_STATIC)
	@if readelf -d $(RCCL_NETCONF_STATIC) 2>/dev/null | grep -q NEEDED; then \
	   echo "unit-rccl-static: netconf.static has dynamic dependencies" >&2; exit 1; fi
	$(RCCL_STATIC_RUN) --api 9 --max-size 16777216
	$(RCCL_STATIC_RUN) --bench 8388608 --iters 2
	$(RCCL_STATIC_RUN) --bench 3000000 --slice 262144 --iters 2
	$(RCCL_STATIC_RUN) --bench 3000000 --slice 262144 --iters 2 --in-place
	$(RCCL_STATIC_RUN) --bench 3000000 --slice 65536 --steps 32 --iters 2
	$(RCCL_STATIC_RUN) --bench 3000000 --slice 262144 --iters 2 --reducer thread
	$(RCCL_STATIC_RUN) --bench 3000000 --slice 262144 --iters 2 --reducer thread --in-place
	set -o pipefail; for r in thread inline; do for c in 1 2 3; do \
	  $(RCCL_STATIC_RUN) --bench 3000000 --slice 262144 --iters 2 --reducer $$r --channels $$c --timeline | \
	    python3 $(RCCL_DIR)/tests/timeline_check.py 2 2 $$c 6 || exit 1; done; done
	$(RCCL_STATIC_RUN) --bench 3000000 --slice 262144 --iters 2 --op none
	$(RCCL_STATIC_RUN) --bench 3000000 --slice 262144 --iters 2 --op none --in-place
	$(RCCL_STATIC_RUN) --bench-lat 8,4096,65536,1048576 --lat-iters 300
	@for bad in 0 12 8,x 8,,16 4194312 8,16,24,32,40,48,56,64,72; do \
	  if $(RCCL_STATIC_RUN) --bench-lat $$bad >/dev/null 2>&1; then \
	    echo "unit-rccl-static: --bench-lat $$bad was taken" >&2; exit 1; fi; done; \
	 echo "ok - --bench-lat refuses sizes that are not multiples of 8 in 8 B..4 MiB, or more than 8 of them"

# The plugin benchmark between the VMs (bench/rccl.sh; results in
# bench/results/rccl-allreduce-*). `make bench` runs it before bench/run.
BENCH_RCCL ?= 1
bench-rccl: vm-prereqs
	@if [ "$(BENCH_RCCL)" = 1 ]; then bash $(TOP)/bench/rccl.sh; else echo "bench-rccl: skipped (BENCH_RCCL=$(BENCH_RCCL))"; fi
bench: bench-rccl bench-rccl-fused bench-rccl-host
# Two cables (bench/rccl_fused.sh; results in bench/results/rccl-fused-*):
# the all-reduce over the fused device against raw over both cables, a
# channel per cable and one cable (BENCH_RCCL=0 skips it too)
bench-rccl-fused: vm-prereqs
	@if [ "$(BENCH_RCCL)" = 1 ]; then bash $(TOP)/bench/rccl_fused.sh; else echo "bench-rccl-fused: skipped (BENCH_RCCL=$(BENCH_RCCL))"; fi
bench-rccl-host: $(RCCL_NETCONF) $(RCCL_SO) $(RCCL_SO_NCCL)
	python3 $(TOP)/bench/rccl_host_lat.py --netconf $(RCCL_NETCONF)

# Line coverage of the plugin (rccl/src/plugin.c; the libodl_tb5 sources
# compiled into it have coverage-userlib) from the host's runs: the Check
# tests of the wire checks (a hostile peer's messages), then over shm the
# conformance sequence through v7 and v11 (zero copy, then staged with the
# CTS in order and DMA-buf advertised), briefly through v8, v9 and v10
# (their own entry points), a killed and a stopped peer, three
# rank pairs on one device, two devices, the fused device with its bad
# fusions and its benchmark, the latency benchmark busy polling. What only
# a kernel device reaches (pciPath, link speed, the driver's DMA-buf import,
# a pulled cable and the reopening, a caller waiting on several devices'
# descriptors) runs in the VM scenarios, not here.
RCCL_COV_RUN = NCCL_NET_PLUGIN=odl_tb5 LD_LIBRARY_PATH=$(RCCL_COV_OUT) $(RCCL_COV_OUT)/netconf \
  --timeout $(RCCL_TIMEOUT)
RCCL_COV_REPORT := $(BUILD)/coverage/rccl
$(RCCL_COV_OUT)/test_wire: $(RCCL_DIR)/tests/test_wire.c $(RCCL_DIR)/src/plugin.c $(RCCL_UL_SRCS) $(RCCL_HDRS)
	@mkdir -p $(@D)
	$(CC) $(RCCL_CFLAGS) -O0 --coverage -fprofile-update=atomic $(CHECK_CFLAGS) -o $@ \
	  $(RCCL_DIR)/tests/test_wire.c $(RCCL_UL_SRCS) $(CHECK_LIBS) -lpthread
coverage-rccl: $(RCCL_COV_OUT)/netconf $(RCCL_COV_OUT)/$(RCCL_SO_NAME) $(RCCL_COV_OUT)/libnccl-net-odl_tb5.so \
  $(RCCL_COV_OUT)/test_wire
	@rm -rf $(RCCL_COV_REPORT) && mkdir -p $(RCCL_COV_REPORT)
	@find $(RCCL_COV_OUT) -name '*.gcda' -delete
	$(RCCL_COV_OUT)/test_wire
	ODL_TB5_RCCL_STATS=$(RCCL_COV_REPORT)/stats $(RCCL_COV_RUN) --api 7 --max-size 16777216
	ODL_TB5_RCCL_STATS=off ODL_TB5_RCCL_TEST_WAIT_US=0 ODL_TB5_RCCL_ZEROCOPY=0 \
	  ODL_TB5_RCCL_URGENT_CTS=0 ODL_TB5_RCCL_DMABUF=1 $(RCCL_COV_RUN) --api 11 --flavour nccl --quick
	ODL_TB5_RCCL_STATS=off $(RCCL_COV_RUN) --fail kill
	ODL_TB5_RCCL_STATS=off ODL_TB5_RCCL_PEER_TIMEOUT_MS=2000 $(RCCL_COV_RUN) --fail stop
	ODL_TB5_RCCL_STATS=off ODL_TB5_RCCL_CALLER_REAP=0 $(RCCL_COV_RUN) --pairs 3 --quick
	ODL_TB5_RCCL_STATS=off $(RCCL_COV_RUN) --rails 2 --quick
	ODL_TB5_RCCL_STATS=off ODL_TB5_RCCL_TEST_CONNECT_STEP=1 $(RCCL_COV_RUN) --rails 2 --fuse --quick
	ODL_TB5_RCCL_STATS=off $(RCCL_COV_RUN) --api 9 --rails 2 --fuse --quick
	ODL_TB5_RCCL_STATS=off $(RCCL_COV_RUN) --api 10 --quick
	ODL_TB5_RCCL_STATS=off $(RCCL_COV_RUN) --api 8 --quick
	ODL_TB5_RCCL_STATS=off $(RCCL_COV_RUN) --rails 2 --fuse --bench 3000000 --slice 262144 --iters 2
	ODL_TB5_RCCL_STATS=off ODL_TB5_RCCL_BUSY_POLL_US=500 $(RCCL_COV_RUN) --bench-lat 8,4096 --lat-iters 200
	@# (Debian's lcov 1.16 prints harmless perl "Subroutine ... redefined"
	@# warnings; they are filtered out, real errors still fail the target.)
	lcov --quiet --capture --directory $(RCCL_COV_OUT) --base-directory $(RCCL_DIR) \
	  --output-file $(RCCL_COV_REPORT)/all.info 2>$(RCCL_COV_REPORT)/lcov.err; \
	  rc=$$?; grep -v 'Subroutine .* redefined at' $(RCCL_COV_REPORT)/lcov.err >&2; \
	  exit $$rc
	lcov --quiet --extract $(RCCL_COV_REPORT)/all.info '$(RCCL_DIR)/src/*' \
	  --output-file $(RCCL_COV_REPORT)/plugin.info
	genhtml --quiet $(RCCL_COV_REPORT)/plugin.info --output-directory $(RCCL_COV_REPORT)
	@bash $(TOP)/mk/cov-gate.sh coverage-rccl 'rccl/src/plugin.c' $(RCCL_COV_REPORT)/plugin.info $(RCCL_COV_MIN) $(RCCL_COV_REPORT)

rccl-install: rccl
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/odl_tb5 $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(RCCL_SO) $(DESTDIR)$(PREFIX)/lib/
	ln -sfn $(RCCL_SO_NAME) $(DESTDIR)$(PREFIX)/lib/libnccl-net-odl_tb5.so
	install -m 0644 $(RCCL_DIR)/include/odl_tb5_rccl_stats.h \
	  $(RCCL_DIR)/include/odl_tb5_rccl_profiler.h $(DESTDIR)$(PREFIX)/include/odl_tb5/
	install -m 0755 $(RCCL_STATS) $(DESTDIR)$(PREFIX)/bin/

unit-install: userlib rccl
	bash $(TOP)/tests/install_check.sh
