# AMD Phoenix / Hawk Point USB4 host ("Pink Sardine", the 8845HS box),
# docs/profiles.md. USB4 Gen 3 x2 (40 Gb/s each way). Bound by class code;
# non-Intel interrupt path (DMA_MISC bit 17, write-1-to-clear). Several E2E
# RX rings work side by side (quirks.md 2.2.1) - the contrast to Strix Halo.
name = amd-phoenix
# 1022:1668 per public lspci dumps of Ryzen 7040 machines [I]
pci_vendor = 0x1022
pci_device = 0x1668
pci_subsys_vendor = 0x1022
pci_subsys_device = 0x1668
pci_class = 0x0c0340
pci_revision = 0x00
# router vendor 0438 (AMD USB4); 020a is in Linux's CLx-disable list for
# Yellow Carp / Pink Sardine (which of 0208-020b is Phoenix: not public) [I]
router_vendor = 0x0438
router_device = 0x020a
router_revision = 0x00
usb4_version = 0x20
# hop count not found (quirks.md 2.2.1) -> 12 [I]
hop_count = 12
lanes = 2
speed_code = 0x4
supported_speeds = 0xc
lane_gbps = 20
lane_max_hopid = 19
lane_total_buffers = 60
nhi_total_buffers = 32
ba_max_hi = 14
e2e_hold_frames = 256
irq_throttle = 0
# only bit 17 (disable auto-clear) exists on AMD [I: as measured on Strix]
dma_misc_writable = 0x20000
