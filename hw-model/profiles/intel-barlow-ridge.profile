# Intel Barlow Ridge host (TB5 / USB4 v2, 80G NHI), docs/profiles.md.
# PCI 8086:5781 binds through Linux's explicit nhi_ids entry; Intel vendor:
# auto-clear interrupt semantics (DMA_MISC bit 2, read-to-clear status).
# Router 8087:5781 reports USB4 version 2 (ROUTER_CS_4 0x40) and REG_CAPS
# version 0x40, so Linux >= 6.8 resets the host router (REG_RESET.HRR) at
# probe. The link trains at Gen 4 (40 Gb/s per lane, bonded: 80 Gb/s each
# way) and can switch to 120/40 asymmetric (PORT_CS_18.CSA). Linux 6.1
# cannot drive a USB4 v2 router: use a 6.12 guest (--kernel trixie).
name = intel-barlow-ridge
pci_vendor = 0x8086
pci_device = 0x5781
pci_subsys_vendor = 0x8086
pci_subsys_device = 0x0000
pci_class = 0x0c0340
pci_revision = 0x85
router_vendor = 0x8087
router_device = 0x5781
router_revision = 0x85
usb4_version = 0x40
caps_version = 0x40
# hop count: not in any public source (quirks.md 2.1.5) -> Intel's 12 [I]
hop_count = 12
lanes = 2
speed_code = 0x2
supported_speeds = 0xe
lane_gbps = 40
lane_max_hopid = 19
lane_total_buffers = 60
nhi_total_buffers = 32
ba_max_hi = 14
e2e_hold_frames = 256
irq_throttle = 0
asym_capable = 1
