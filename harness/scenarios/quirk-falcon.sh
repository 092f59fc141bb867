#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# quirk-falcon: intel-falcon-ridge's E2E quirk (docs/profiles.md): an E2E
# RX ring must return its credits through reserved HopID 1, else the NHI
# loses its frames from the second credit grant on, silently. Linux knows
# the controller by PCI ID and sets QUIRK_E2E (rings from HopID 2, credits
# through HopID 1) - the workaround this profile exists to exercise.
# Mitigation off: the same NHI model under a PCI ID Linux does not quirk
# (the generic USB4 NHI's; a profile file made from intel-falcon-ridge's).
# odl_tb5 takes ring 1, thunderbolt-net's E2E rings come second (ring 2,
# credits through HopID 2): pings get through while the first credit grant
# lasts, then are lost; the model counts e2e_rx_lost, no error is logged.
# Mitigation on: the real intel-falcon-ridge ID (Apple DMI, so Linux runs
# its software CM): the same sequence loses nothing, and an odl_tb5
# transfer verifies next to it.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 9
tap_timeout 2400
odl_need_build
PINGS=${FALCON_PINGS:-400}
prof=$(mktemp /tmp/odl-falcon-unquirked.XXXXXX.profile)
tap_cleanup "rm -f '$prof'"
src=$SCEN_DIR/../../hw-model/profiles/intel-falcon-ridge.profile
sed -e 's/^name = .*/name = falcon-unquirked/' \
	-e 's/^pci_device = .*/pci_device = 0x0b45/' \
	-e 's/^pci_class = .*/pci_class = 0x0c0340/' "$src" > "$prof" ||
	bail_out "cannot write $prof"
grep -q '^e2e_reserved_hop = 1' "$prof" || bail_out "intel-falcon-ridge has no e2e_reserved_hop"

# bring_up: odl_tb5 (ring first) and thunderbolt-net on both
bring_up() {
	local v
	for v in a b; do
		odl_put $v && odl_load $v e2e=on || bail_out "cannot load odl_tb5 on $v"
	done
	odl_wait_connected a 120 && odl_wait_connected b 120 || bail_out "no odl_tb5 login"
	tbnet_up || bail_out "thunderbolt0 did not come up" "$(vm a dmesg | tail -n 20)"
	vm a sh -c 'f=/proc/sys/net/ipv6/conf/thunderbolt0/disable_ipv6; [ -e $f ] && echo 1 > $f' || true
	vm b sh -c 'f=/proc/sys/net/ipv6/conf/thunderbolt0/disable_ipv6; [ -e $f ] && echo 1 > $f' || true
}
# loss: packet loss % of $PINGS pings a -> b
ping_loss() {
	vm a ping -q -c "$PINGS" -i 0.05 -W 2 192.0.2.2 2>&1 |
		sed -n 's/.* \([0-9.]*\)% packet loss.*/\1/p'
}

# --- mitigation off: an unquirked PCI ID
pair_up --profile "$prof"
bring_up
rings=$(vm a sh -c 'dmesg | grep -o "enabling E2E for RX ring [0-9]* with TX HopID [0-9]*" | sort -u | tr "\n" ";"')
diag "unquirked: $rings"
loss=$(ping_loss)
lost=$(nhi_stats b e2e_rx_lost)
diag "symptom: $PINGS pings a -> b: ${loss:-?}% lost; b e2e_rx_lost=$lost"
awk -v l="${loss:-0}" 'BEGIN { exit !(l > 0) }' &&
	ok "mitigation off: thunderbolt-net's second E2E ring loses pings (${loss}%)" ||
	not_ok "mitigation off: thunderbolt-net's second E2E ring loses pings" "loss '${loss}'" "$rings"
[ "${lost:-0}" -gt 0 ] 2>/dev/null &&
	ok "mitigation off: the model counted silently lost frames (e2e_rx_lost=$lost)" ||
	not_ok "mitigation off: the model counted silently lost frames" "$(nhi_stats b)"
is "$(tb_problems b)" "" "mitigation off: the loss is silent (no thunderbolt error on b)"
pair_down

# --- mitigation on: the real ID, Linux's QUIRK_E2E
pair_up --profile intel-falcon-ridge
bring_up
rings=$(vm a sh -c 'dmesg | grep -o "enabling E2E for RX ring [0-9]* with TX HopID [0-9]*" | sort -u | tr "\n" ";"')
diag "quirked: $rings"
loss=$(ping_loss)
is "$loss" "0" "QUIRK_E2E: $PINGS pings a -> b, none lost"
is "$(nhi_stats b e2e_rx_lost)" 0 "QUIRK_E2E: e2e_rx_lost=0 on b"
odl_cli_run "QUIRK_E2E: odl_tb5 64 x 1 MiB a -> b verified next to thunderbolt-net" 900 \
	--test bandwidth --size 1M --iterations 64 --timeout 60000
check "QUIRK_E2E: ping a -> b still answered" vm a ping -c 3 -W 5 192.0.2.2
odl_check_clean
tap_done
