#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-iommu: odl-bw with the guests' IOMMU on (vmpair --iommu: QEMU's
# intel-iommu, intel_iommu=on; plus iommu.strict=1 so every unmap is
# flushed at once): every DMA of the NHI model goes through the vIOMMU's
# translation (pci_dma_*) and an unmapped or stale address is a DMA fault. Bandwidth 1100 x 1 MiB, latency, mimo, all verified; no DMAR
# fault in the guests, no "DMA fault" in the model's logs.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_plan 8
tap_timeout 1800
odl_setup --iommu --append "iommu.strict=1"
for v in a b; do
	grp=$(vm $v sh -c "readlink /sys/bus/pci/devices/$(nhi_bdf $v)/iommu_group; cat /sys/kernel/iommu_groups/*/type 2>/dev/null | sort -u | tr '\n' ' '")
	if vm $v test -e /sys/class/iommu/dmar0 && [ -n "$grp" ]; then
		ok "$v: DMAR IOMMU active, NHI in an IOMMU group" "$grp"
	else
		not_ok "$v: DMAR IOMMU active, NHI in an IOMMU group" "$(vm $v sh -c 'dmesg | grep -i -e dmar -e iommu')"
	fi
done
odl_cli_run "bandwidth through the IOMMU: 1100 x 1 MiB verified" 1500 \
	--test bandwidth --size 1M --iterations 1100 --timeout 60000
odl_cli_run "latency through the IOMMU: 4 KiB x 1000 verified" 600 \
	--test latency --size 4K --iterations 1000 --timeout 60000
odl_cli_run "mimo through the IOMMU: 4 streams x 100 x 100000 B verified" 600 \
	--test mimo --streams 4 --size 100000 --iterations 100 --timeout 60000
faults=$( { vm a sh -c 'dmesg | grep -i -e "DMAR.*fault" -e "PTE Read access" -e "PTE Write access"';
	vm b sh -c 'dmesg | grep -i -e "DMAR.*fault" -e "PTE Read access" -e "PTE Write access"';
	grep -h "DMA fault" "$VMPAIR_STATE"/a-qemu.log "$VMPAIR_STATE"/b-qemu.log; } 2>&1)
if [ -z "$faults" ]; then
	ok "no DMA fault (guest DMAR, model)"
else
	not_ok "no DMA fault (guest DMAR, model)" "$faults"
fi
odl_check_clean
tap_done
