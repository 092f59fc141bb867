#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tbnet-iommu: the tbnet scenario with the guests' DMA going through QEMU's
# intel-iommu (intel_iommu=on): the model's DMA is translated like real
# hardware's; any DMAR fault fails the dmesg checks.
export PAIR_EXTRA="--iommu ${PAIR_EXTRA:-}"
exec bash "$(dirname "$0")/tbnet.sh"
