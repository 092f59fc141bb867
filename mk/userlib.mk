# SPDX-License-Identifier: MIT
# userlib/: libodl_tb5 (kernel + shm backends), odl_tb5_cli, their tests.
# Included by the top-level Makefile (uses TOP, BUILD, CC, CFLAGS_COMMON).
#
#   make userlib            $(BUILD)/userlib: libodl_tb5.so{,.1}, libodl_tb5.a,
#                           odl_tb5_cli (dynamic, rpath $ORIGIN),
#                           odl_tb5_cli.static (for guest images), odl_tb5.pc,
#                           odl_libvm.static (tests/guest: two threads on
#                           one handle, batch cancel; VM scenarios)
#   make unit-userlib       Check tests + CLI end-to-end tests over shm,
#                           normal and ASan/UBSan builds
#   make coverage-userlib   lcov line coverage of userlib/ into
#                           $(BUILD)/coverage/userlib; fails when core.c +
#                           shm.c + the CLI are below USERLIB_COV_MIN %
#                           (kernel.c is reported, not gated: it needs the
#                           driver, exercised by the VM scenarios)
#   make userlib-install    PREFIX=/usr/local DESTDIR= : lib, header, .pc, CLI
#
# Test selection: CK_RUN_SUITE / CK_RUN_CASE (Check env).

USERLIB_DIR   := $(TOP)/userlib
USERLIB_OUT   := $(BUILD)/userlib
USERLIB_TDIR  := $(TOP)/tests/userlib
USERLIB_SRCS  := $(USERLIB_DIR)/core.c $(USERLIB_DIR)/shm.c $(USERLIB_DIR)/kernel.c
USERLIB_CLI   := $(USERLIB_DIR)/cli/odl_tb5_cli.c
USERLIB_HDRS  := $(USERLIB_DIR)/include/odl_tb5/odl_tb5.h $(USERLIB_DIR)/odl_priv.h $(USERLIB_DIR)/odl_relax.h \
                 $(wildcard $(TOP)/driver/uapi/odl_tb5_uapi.h) $(TOP)/mk/userlib.mk
USERLIB_TSRCS := $(sort $(wildcard $(USERLIB_TDIR)/*.c))
USERLIB_THDRS := $(wildcard $(USERLIB_TDIR)/*.h)
USERLIB_SOVER := 1
USERLIB_VER   := 1.0.0
USERLIB_COV_MIN ?= 85
PREFIX        ?= /usr/local

USERLIB_CFLAGS := $(CFLAGS_COMMON) -I$(USERLIB_DIR)/include -I$(USERLIB_DIR) \
                  -I$(TOP)/driver/uapi -pthread
USERLIB_LIBFLAGS := -fPIC -fvisibility=hidden
USERLIB_SAN := -fsanitize=address,undefined -fno-omit-frame-pointer \
               -fno-sanitize-recover=all
USERLIB_LDLIBS := -pthread -lrt -lm

.PHONY: userlib unit-userlib unit-userlib-plain unit-userlib-asan \
        coverage-userlib userlib-install

userlib: $(USERLIB_OUT)/libodl_tb5.so $(USERLIB_OUT)/libodl_tb5.a \
         $(USERLIB_OUT)/odl_tb5_cli $(USERLIB_OUT)/odl_tb5_cli.static \
         $(USERLIB_OUT)/pkgconfig/odl_tb5.pc $(USERLIB_OUT)/odl_libvm.static

# --- the library -------------------------------------------------------
$(USERLIB_OUT)/lib/%.o: $(USERLIB_DIR)/%.c $(USERLIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(USERLIB_CFLAGS) $(USERLIB_LIBFLAGS) -c -o $@ $<

USERLIB_OBJS := $(patsubst $(USERLIB_DIR)/%.c,$(USERLIB_OUT)/lib/%.o,$(USERLIB_SRCS))

$(USERLIB_OUT)/libodl_tb5.so.$(USERLIB_VER): $(USERLIB_OBJS)
	$(CC) -shared -Wl,-soname,libodl_tb5.so.$(USERLIB_SOVER) -Wl,-z,defs \
	  -o $@ $^ $(USERLIB_LDLIBS)

$(USERLIB_OUT)/libodl_tb5.so: $(USERLIB_OUT)/libodl_tb5.so.$(USERLIB_VER)
	ln -sfn libodl_tb5.so.$(USERLIB_VER) $(USERLIB_OUT)/libodl_tb5.so.$(USERLIB_SOVER)
	ln -sfn libodl_tb5.so.$(USERLIB_VER) $@

$(USERLIB_OUT)/libodl_tb5.a: $(USERLIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(USERLIB_OUT)/odl_tb5_cli: $(USERLIB_CLI) $(USERLIB_OUT)/libodl_tb5.so $(USERLIB_HDRS)
	$(CC) $(USERLIB_CFLAGS) -o $@ $(USERLIB_CLI) -L$(USERLIB_OUT) -lodl_tb5 \
	  -Wl,-rpath,'$$ORIGIN' $(USERLIB_LDLIBS)

$(USERLIB_OUT)/odl_tb5_cli.static: $(USERLIB_CLI) $(USERLIB_OUT)/libodl_tb5.a $(USERLIB_HDRS)
	$(CC) $(USERLIB_CFLAGS) -static -o $@ $(USERLIB_CLI) $(USERLIB_OUT)/libodl_tb5.a \
	  $(USERLIB_LDLIBS)

$(USERLIB_OUT)/odl_libvm.static: $(TOP)/tests/guest/odl_libvm.c $(USERLIB_OUT)/libodl_tb5.a $(USERLIB_HDRS)
	$(CC) $(USERLIB_CFLAGS) -static -o $@ $< $(USERLIB_OUT)/libodl_tb5.a $(USERLIB_LDLIBS)

$(USERLIB_OUT)/pkgconfig/odl_tb5.pc: $(USERLIB_DIR)/odl_tb5.pc.in $(TOP)/mk/userlib.mk
	@mkdir -p $(@D)
	sed -e 's|@PREFIX@|$(USERLIB_OUT)|' -e 's|@LIBDIR@|$(USERLIB_OUT)|' \
	    -e 's|@INCLUDEDIR@|$(USERLIB_DIR)/include|' -e 's|@VERSION@|$(USERLIB_VER)|' \
	    $< > $@

userlib-install: userlib
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/odl_tb5 \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(USERLIB_OUT)/libodl_tb5.so.$(USERLIB_VER) $(DESTDIR)$(PREFIX)/lib/
	ln -sfn libodl_tb5.so.$(USERLIB_VER) $(DESTDIR)$(PREFIX)/lib/libodl_tb5.so.$(USERLIB_SOVER)
	ln -sfn libodl_tb5.so.$(USERLIB_VER) $(DESTDIR)$(PREFIX)/lib/libodl_tb5.so
	install -m 0644 $(USERLIB_OUT)/libodl_tb5.a $(DESTDIR)$(PREFIX)/lib/
	install -m 0644 $(USERLIB_DIR)/include/odl_tb5/odl_tb5.h $(DESTDIR)$(PREFIX)/include/odl_tb5/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(PREFIX)/lib|' \
	    -e 's|@INCLUDEDIR@|$(PREFIX)/include|' -e 's|@VERSION@|$(USERLIB_VER)|' \
	    $(USERLIB_DIR)/odl_tb5.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/odl_tb5.pc
	install -m 0755 $(USERLIB_OUT)/odl_tb5_cli $(DESTDIR)$(PREFIX)/bin/
	@# the installed CLI finds the library through the system path
	$(CC) $(USERLIB_CFLAGS) -o $(DESTDIR)$(PREFIX)/bin/odl_tb5_cli $(USERLIB_CLI) \
	  $(USERLIB_OUT)/libodl_tb5.so.$(USERLIB_VER) $(USERLIB_LDLIBS)

# --- test variants: library sources compiled into the test binary ---------
# userlib_variant(name, extra cflags): $(USERLIB_OUT)/<name>/test_userlib and
# $(USERLIB_OUT)/<name>/odl_tb5_cli (CLI linked with the same objects).
define userlib_variant
USERLIB_$(1)_LOBJS := $$(patsubst $(USERLIB_DIR)/%.c,$(USERLIB_OUT)/$(1)/lib/%.o,$(USERLIB_SRCS))
USERLIB_$(1)_TOBJS := $$(patsubst $(USERLIB_TDIR)/%.c,$(USERLIB_OUT)/$(1)/t/%.o,$(USERLIB_TSRCS))

$(USERLIB_OUT)/$(1)/lib/%.o: $(USERLIB_DIR)/%.c $(USERLIB_HDRS)
	@mkdir -p $$(@D)
	$(CC) $(USERLIB_CFLAGS) $(2) -c -o $$@ $$<

$(USERLIB_OUT)/$(1)/lib/cli.o: $(USERLIB_CLI) $(USERLIB_HDRS)
	@mkdir -p $$(@D)
	$(CC) $(USERLIB_CFLAGS) $(2) -c -o $$@ $$<

$(USERLIB_OUT)/$(1)/t/%.o: $(USERLIB_TDIR)/%.c $(USERLIB_HDRS) $(USERLIB_THDRS)
	@mkdir -p $$(@D)
	$(CC) $(USERLIB_CFLAGS) $$(CHECK_CFLAGS) $(2) -c -o $$@ $$<

$(USERLIB_OUT)/$(1)/test_userlib: $$(USERLIB_$(1)_LOBJS) $$(USERLIB_$(1)_TOBJS)
	$(CC) $(USERLIB_CFLAGS) $(2) -o $$@ $$^ $$(CHECK_LIBS) $(USERLIB_LDLIBS)

$(USERLIB_OUT)/$(1)/odl_tb5_cli: $$(USERLIB_$(1)_LOBJS) $(USERLIB_OUT)/$(1)/lib/cli.o
	$(CC) $(USERLIB_CFLAGS) $(2) -o $$@ $$^ $(USERLIB_LDLIBS)
endef

$(eval $(call userlib_variant,t-plain,))
$(eval $(call userlib_variant,t-asan,-O1 $(USERLIB_SAN)))
$(eval $(call userlib_variant,t-cov,-O0 --coverage))

# Segments of one test run are named after its pid, so parallel runs and
# left-overs never collide; the CLI test checks /dev/shm is clean afterwards.
unit-userlib-plain: $(USERLIB_OUT)/t-plain/test_userlib $(USERLIB_OUT)/t-plain/odl_tb5_cli userlib
	$(USERLIB_OUT)/t-plain/test_userlib
	bash $(USERLIB_TDIR)/cli_test.sh $(USERLIB_OUT)/odl_tb5_cli

unit-userlib-asan: $(USERLIB_OUT)/t-asan/test_userlib $(USERLIB_OUT)/t-asan/odl_tb5_cli
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(USERLIB_OUT)/t-asan/test_userlib
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  bash $(USERLIB_TDIR)/cli_test.sh $(USERLIB_OUT)/t-asan/odl_tb5_cli

unit-userlib: unit-userlib-plain unit-userlib-asan

USERLIB_COV_OUT := $(BUILD)/coverage/userlib
coverage-userlib: $(USERLIB_OUT)/t-cov/test_userlib $(USERLIB_OUT)/t-cov/odl_tb5_cli
	@rm -rf $(USERLIB_COV_OUT)
	@mkdir -p $(USERLIB_COV_OUT)
	@find $(USERLIB_OUT)/t-cov -name '*.gcda' -delete
	$(USERLIB_OUT)/t-cov/test_userlib
	bash $(USERLIB_TDIR)/cli_test.sh $(USERLIB_OUT)/t-cov/odl_tb5_cli
	@# (Debian's lcov 1.16 prints harmless perl "Subroutine ... redefined"
	@# warnings; they are filtered out, real errors still fail the target.)
	lcov --quiet --capture --directory $(USERLIB_OUT)/t-cov/lib \
	  --base-directory $(USERLIB_DIR) \
	  --output-file $(USERLIB_COV_OUT)/all.info 2>$(USERLIB_COV_OUT)/lcov.err; \
	  rc=$$?; grep -v 'Subroutine .* redefined at' $(USERLIB_COV_OUT)/lcov.err >&2; \
	  exit $$rc
	lcov --quiet --extract $(USERLIB_COV_OUT)/all.info '$(USERLIB_DIR)/*' \
	  --output-file $(USERLIB_COV_OUT)/userlib.info
	@# The kernel backend needs /dev/odl_tb5_N (VM scenarios); the gate
	@# applies to what host tests can reach: core, shm backend and CLI.
	lcov --quiet --remove $(USERLIB_COV_OUT)/userlib.info '$(USERLIB_DIR)/kernel.c' \
	  --output-file $(USERLIB_COV_OUT)/host.info
	genhtml --quiet $(USERLIB_COV_OUT)/userlib.info \
	  --output-directory $(USERLIB_COV_OUT)
	@lcov --list $(USERLIB_COV_OUT)/userlib.info 2>/dev/null | tee $(USERLIB_COV_OUT)/files.txt
	@lcov --summary $(USERLIB_COV_OUT)/userlib.info 2>&1 | \
	  sed -n 's/^ *lines\.*: */coverage-userlib: all of userlib (incl. kernel backend): /p'
	@bash $(TOP)/mk/cov-gate.sh coverage-userlib 'core + shm + CLI' $(USERLIB_COV_OUT)/host.info $(USERLIB_COV_MIN) $(USERLIB_COV_OUT)
