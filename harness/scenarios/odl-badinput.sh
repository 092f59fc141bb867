#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-badinput: the table of bad ioctl arguments in odl_xfer badinput
# (each with its expected errno, and the state unchanged afterwards), then
# 60 s of random ioctl calls (odl_xfer fuzz, seeded: ODL_FUZZ_SEED,
# ODL_FUZZ_SECONDS) on both guests at once; then the device still moves
# verified data. Last, b is loaded again withholding keyed and empty
# messages at login (features_off=0x18, as a driver before them); while a
# holds its paths back (test_path_delay_ms) its GET_INFO reports state
# disconnected and no features; neither side has them afterwards, a's SEND with a key and its empty SEND are
# refused (-EOPNOTSUPP, in the bad-input table), odl_tb5_cli refuses
# --size 0 saying why; a keyed and an empty message sent to b anyway (a
# hostile peer: a's testing parameter test_send_unagreed) are dropped by b
# as bad headers and nothing of them reaches b's receiver; data still
# moves. dmesg is clean (no oops, no WARN).
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 14
tap_timeout 1200
FUZZ_SEED=${ODL_FUZZ_SEED:-0x0d1f022}
FUZZ_SECONDS=${ODL_FUZZ_SECONDS:-60}
odl_need_build
pair_up
for v in a b; do
	odl_put $v || bail_out "cannot copy the driver into $v"
done
check "bad module parameters refused (ring_size=100, 32768; e2e=maybe; features_off=0x1, 0x20)" \
	vm b sh -c '! insmod /tmp/odl_tb5.ko ring_size=100 && ! insmod /tmp/odl_tb5.ko ring_size=32768 &&
		! insmod /tmp/odl_tb5.ko e2e=maybe && ! insmod /tmp/odl_tb5.ko features_off=0x1 &&
		! insmod /tmp/odl_tb5.ko features_off=0x20 && dmesg | grep -q "ring_size 100: must be" &&
		dmesg | grep -q "features_off 0x20: must be"'
for v in a b; do
	odl_load $v || bail_out "cannot load odl_tb5 on $v"
done
odl_wait_connected a 90 && odl_wait_connected b 90 || bail_out "no login"
out=$(vm a /tmp/odl_xfer badinput 2>&1)
rc=$?
n=$(echo "$out" | grep -c '^ok')
if [ $rc -eq 0 ]; then
	ok "bad-input table on a: $n cases, each with its errno" "$out"
else
	not_ok "bad-input table on a" "$(echo "$out" | grep -v '^ok')"
fi
check "device still works: a -> b verified" odl_xfer_run a b 1 2 8 1,5000,70000
# random ioctls on both sides at once (b in the background)
vm b sh -c "setsid /tmp/odl_xfer fuzz -n $FUZZ_SECONDS -S $((FUZZ_SEED + 1)) > /tmp/fuzz.log 2>&1 < /dev/null &"
out=$("$VMPAIR" exec a --timeout $((FUZZ_SECONDS + 240)) -- /tmp/odl_xfer fuzz -n "$FUZZ_SECONDS" -S "$FUZZ_SEED" 2>&1)
rc=$?
if [ $rc -eq 0 ] && echo "$out" | grep -q '^fuzz: '; then
	ok "a: $FUZZ_SECONDS s of random ioctl calls (seed $FUZZ_SEED)" "$out"
else
	not_ok "a: $FUZZ_SECONDS s of random ioctl calls (seed $FUZZ_SEED)" "exit $rc" "$out"
fi
if wait_for "! vm b pidof odl_xfer" $((FUZZ_SECONDS + 240)) && vm b grep -q '^fuzz: ' /tmp/fuzz.log; then
	ok "b: $FUZZ_SECONDS s of random ioctl calls at the same time" "$(vm b cat /tmp/fuzz.log)"
else
	not_ok "b: $FUZZ_SECONDS s of random ioctl calls at the same time" "$(vm b cat /tmp/fuzz.log)"
fi
odl_wait_connected a 60 && odl_wait_connected b 60
check "device still works after the random calls: b -> a verified" odl_xfer_run b a 3 4 8 1,5000,70000

# b as a peer without keyed and empty messages: features_off withholds them
# at login, and the agreement leaves both sides without them
features() {
	vm "$1" /tmp/odl_xfer info 2>/dev/null | sed -n 's/^features=//p'
}
odl_unload b || bail_out "cannot unload odl_tb5 on b"
wait_for "! vm a test -e /dev/odl_tb5_0" 120 || bail_out "a's device stayed after b unloaded"
# a holds its paths back once logged in (test_path_delay_ms, up to 60 s
# or until set to 0 again, as here right after the read), so its device
# shows before data can flow: GET_INFO reports no features then (nothing
# agreed in force; a driver before 2026-12-02 gave its own offer)
PD=/sys/module/odl_tb5/parameters/test_path_delay_ms
vm a sh -c "echo 60000 > $PD" || bail_out "cannot set test_path_delay_ms on a"
odl_load b features_off=0x18 || bail_out "cannot load odl_tb5 on b with features_off=0x18"
wait_for "vm a test -e /dev/odl_tb5_0" 180 || bail_out "a's device did not come back with b loaded"
early=$(vm a /tmp/odl_xfer info 2>&1)
vm a sh -c "echo 0 > $PD"
if printf '%s\n' "$early" | grep -qx 'state=disconnected' &&
	printf '%s\n' "$early" | grep -qx 'features=0x0'; then
	ok "a's GET_INFO before data can flow: state disconnected, no features agreed" "$early"
else
	not_ok "a's GET_INFO before data can flow: state disconnected, no features agreed" "$early"
fi
odl_wait_connected a 180 && odl_wait_connected b 180 || bail_out "no login with features_off=0x18 on b"
fa=$(features a) fb=$(features b)
# the drivers' account (sysfs features): b withheld them, a saw them missing
# from b's offer while offering them itself
sa=$(vm a cat /sys/class/odl_tb5/odl_tb5_0/features 2>&1)
sb=$(vm b cat /sys/class/odl_tb5/odl_tb5_0/features 2>&1)
# the library's view (odl_tb5_list): no keyed, no empty; urgent is the
# driver's own
lf=$(vm a /tmp/odl_tb5_cli --list --json 2>&1 | python3 -c 'import json, sys
print(" ".join(json.load(sys.stdin)["devices"][0]["features"]))' 2>&1)
# 0x2: software credits, which every login keeps
desc="b withholds keyed and empty messages (features_off=0x18): neither side has them after the login"
if [ -n "$fa" ] && [ -n "$fb" ] && [ $((fa & 0x18)) = 0 ] && [ $((fb & 0x18)) = 0 ] &&
	[ $((fa & 0x2)) != 0 ] && [ $((fb & 0x2)) != 0 ] &&
	printf ' %s \n' "$lf" | grep -q ' urgent ' && ! printf ' %s \n' "$lf" | grep -Eq ' (keyed|empty) ' &&
	printf ' %s\n' "$sb" | grep -q ' withheld=keyed,empty$' &&
	printf ' %s\n' "$sa" | grep -Eq ' offered=([a-z0-9-]+,)*keyed,empty ' &&
	! printf ' %s\n' "$sa" | grep -Eq ' (peer|agreed)=[^ ]*(keyed|empty)'; then
	ok "$desc (GET_INFO a $fa, b $fb; a's odl_tb5_cli --list: $lf)" "a: $sa" "b: $sb"
else
	not_ok "$desc" "a: features '$fa'" "b: features '$fb'" "a: odl_tb5_cli --list: $lf" \
		"a: sysfs features: $sa" "b: sysfs features: $sb" "$(vm a /tmp/odl_xfer info 2>&1)"
fi
out=$(vm a /tmp/odl_xfer badinput 2>&1)
rc=$?
if [ $rc -eq 0 ] && echo "$out" | grep -q '^ok .*SEND length 0 (peer without empty messages) -> ' &&
	echo "$out" | grep -q '^ok .*SEND with a key (peer without keyed messages) -> '; then
	ok "bad-input table on a with that peer: an empty SEND and a keyed one refused (EOPNOTSUPP)" \
		"$(echo "$out" | grep 'peer without')"
else
	not_ok "bad-input table on a with that peer: an empty SEND and a keyed one refused (EOPNOTSUPP)" \
		"exit $rc" "$(echo "$out" | grep -v '^ok')" "$(echo "$out" | grep 'peer without')"
fi
out=$("$VMPAIR" exec a --timeout 120 -- /tmp/odl_tb5_cli --client --device 0 --test latency \
	--size 0 --iterations 10 --timeout 30000 2>&1)
rc=$?
if [ $rc -ne 0 ] && echo "$out" | grep -q -- '--size 0: this device carries 1.. bytes'; then
	ok "odl_tb5_cli --size 0 with that peer: refused, saying why (exit $rc)" "$out"
else
	not_ok "odl_tb5_cli --size 0 with that peer: refused, saying why" "exit $rc" "$out"
fi
# a as a hostile peer (testing parameter test_send_unagreed): a keyed and
# an empty message to b, which agreed to neither; b drops both as bad
# headers (len_errors + 2) and its receiver on that port gets the verified
# messages that follow, nothing before them
UA=/sys/module/odl_tb5/parameters/test_send_unagreed
le0=$(odl_stat b len_errors)
vm b sh -c "rm -f /tmp/rx.6; setsid /tmp/odl_xfer recv -p 6 -q 5 -n 8 -s 1,5000,70000 > /tmp/rx.6 2>&1 < /dev/null &"
wait_for "vm b grep -q ready /tmp/rx.6" 30 || bail_out "the receiver on b did not start" "$(vm b cat /tmp/rx.6)"
vm a sh -c "echo 1 > $UA" || bail_out "cannot set test_send_unagreed on a"
uout=$(vm a /tmp/odl_xfer unagreed -p 5 -q 6 2>&1)
urc=$?
vm a sh -c "echo 0 > $UA"
wait_for "[ \$(odl_stat b len_errors) -ge $((le0 + 2)) ]" 60 >&2
le1=$(odl_stat b len_errors)
sout=$(vm a /tmp/odl_xfer send -p 5 -q 6 -n 8 -s 1,5000,70000 2>&1)
src=$?
wait_for "vm b grep -q received /tmp/rx.6" 60 >&2
rout=$(vm b cat /tmp/rx.6)
desc="a sends b a keyed and an empty message b did not agree to (test_send_unagreed): b drops both (len_errors +2), then receives 8 messages verified, nothing before them"
if [ $urc = 0 ] && [ "$le1" = $((le0 + 2)) ] && [ $src = 0 ] &&
	printf '%s\n' "$rout" | grep -q 'received 8 .* 0 bad'; then
	ok "$desc" "a: $uout" "b: len_errors $le0 -> $le1" "a: $sout" "b: $rout"
else
	not_ok "$desc" "a: exit $urc: $uout" "b: len_errors $le0 -> $le1" "a: exit $src: $sout" "b: $rout" \
		"b: $(vm b /tmp/odl_xfer stats 2>&1)"
fi
check "with that peer data still moves: a -> b verified" odl_xfer_run a b 5 6 8 1,5000,70000
odl_check_clean
tap_done
