# AMD Strix Halo on-die USB4 host (Ryzen AI Max+ 395), docs/profiles.md,
# quirks.md 2.2.2. USB4 Gen 3 x2. Quirks: REG_CAPS reports 3 hops of 7;
# only one E2E RX ring works (a second one makes the NHI drop incoming
# credit grants: TX wedges silently); ~12.1 Gb/s per-ring DMA ceiling;
# DMA_MISC has only bit 17.
name = amd-strix-halo
pci_vendor = 0x1022
pci_device = 0x158d
pci_subsys_vendor = 0x1022
pci_subsys_device = 0x158d
pci_class = 0x0c0340
pci_revision = 0x00
# router device ID of Strix Halo is not public: 0x0210 is a stand-in [I]
router_vendor = 0x0438
router_device = 0x0210
router_revision = 0x00
usb4_version = 0x20
hop_count = 7
hop_count_reported = 3
# completions on hops 3-6 raise no MSI-X [I: TBV polled them]
hidden_hop_silent = 1
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
dma_misc_writable = 0x20000
e2e_rx_slots = 1
# 0: grants for every E2E TX path are dropped while two E2E RX rings are
# active ("whichever ring carries traffic wedges"); 1: only the second's
e2e_victim = 0
ring_mbps = 12100
