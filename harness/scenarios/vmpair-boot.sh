#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vmpair-boot: `vmpair up` boots the pair again, once, when a guest's kernel
# panics before its /init loads a driver for the controller (nothing has
# touched our usb4-nhi device yet: seen under TCG, oopses in the stock
# kernel's allocator 2 s into boot and in modprobe virtio_net), and never
# when the guest died after that. Kernels that have no /init to run panic
# before it; odl.crashearly makes /init crash the kernel right after its
# start mark, odl.crash right after its drivers mark (harness/guest/init).
. "$(dirname "$0")/common.sh"
tap_plan 9
tap_timeout 900
tap_cleanup pair_down
# no pair of this state may be left behind
gone() {
	"$VMPAIR" status 2>/dev/null | grep -q '^pair *down' && ! pgrep -f "$VMPAIR_STATE/" >/dev/null
}
# up_out OPTIONS...: vmpair up; its output in $out (indented: a retry line
# of our own making must not count as a real one in sim-test's summary),
# its status in $rc, the number of retry lines in $n
up_out() {
	out=$("$VMPAIR" up --timeout 240 "$@" 2>&1)
	rc=$?
	n=$(printf '%s\n' "$out" | grep -c '^vmpair: boot retry 1 of 1: guest [ab]')
	out=$(printf '%s\n' "$out" | tail -n 40 | sed 's/^/  /')
}

# 1. a panic before /init on every boot: one retry, then the failure
up_out --append "rdinit=/odl-none init=/odl-none"
if [ "$rc" != 0 ] && [ "$n" = 1 ] && printf '%s\n' "$out" | grep -q "Kernel panic"; then
	ok "a kernel that panics before /init: one boot retry, then the failure with the panic (rc $rc)"
else
	not_ok "a kernel that panics before /init: one boot retry, then the failure with the panic" \
		"rc=$rc retries=$n" "$out"
fi
check "the first boot's consoles are kept, the panic in them (*.bootcrash1)" \
	sh -c "test -e '$VMPAIR_STATE/a-console.log.bootcrash1' -a -e '$VMPAIR_STATE/b-console.log.bootcrash1' &&
		cat '$VMPAIR_STATE/a-console.log.bootcrash1' '$VMPAIR_STATE/b-console.log.bootcrash1' | grep -q 'Kernel panic'"
check "the failed pair is down (no QEMU, mux or cable left)" gone

# 1b. a crash after /init started, before its drivers mark: retried too
up_out --append "odl.crashearly"
crashed=$(for v in a b; do
	grep -q "odl-init: start" "$VMPAIR_STATE/$v-console.log.bootcrash1" 2>/dev/null &&
		grep -q "sysrq triggered crash" "$VMPAIR_STATE/$v-console.log.bootcrash1" &&
		! grep -q "odl-init: drivers" "$VMPAIR_STATE/$v-console.log.bootcrash1" && echo $v
done)
if [ "$rc" != 0 ] && [ "$n" = 1 ] && [ -n "$crashed" ]; then
	ok "a kernel that dies after /init started but before its drivers mark: one boot retry, then the failure (rc $rc)"
else
	not_ok "a kernel that dies after /init started but before its drivers mark: one boot retry, then the failure" \
		"rc=$rc retries=$n crashed between the marks: ${crashed:-none}" "$out"
fi
gone || bail_out "the pair of 1b was left running"

# 2. a crash after the drivers mark: no retry
up_out --append "odl.crash"
# the guest that crashed shows the mark, then the sysrq panic, on its console
crashed=$(for v in a b; do
	grep -q "odl-init: drivers" "$VMPAIR_STATE/$v-console.log" 2>/dev/null &&
		grep -q "sysrq triggered crash" "$VMPAIR_STATE/$v-console.log" && echo $v
done)
if [ "$rc" != 0 ] && [ "$n" = 0 ] && [ -n "$crashed" ]; then
	ok "a kernel that dies after /init's drivers mark: no retry, the failure at once (rc $rc)"
else
	not_ok "a kernel that dies after /init's drivers mark: no retry, the failure at once" \
		"rc=$rc retries=$n crashed after the mark: ${crashed:-none}" "$out"
fi
check "the failed pair is down again" gone

# 3. one panic before /init, then a good boot: the pair comes up
up_out --crash-first-boot
if [ "$rc" = 0 ] && [ "$n" = 1 ]; then
	ok "a kernel that panics before /init once: the pair comes up on the retry and says so"
else
	not_ok "a kernel that panics before /init once: the pair comes up on the retry and says so" \
		"rc=$rc retries=$n" "$out"
fi
printf '%s\n' "$out" | grep -E 'vmpair: (boot retry|pair up)' | while read -r l; do diag "(the test's own crash) $l"; done
for v in a b; do
	check "$v: the retried pair's agent answers" "$VMPAIR" exec $v --timeout 60 -- true
done
tap_done
