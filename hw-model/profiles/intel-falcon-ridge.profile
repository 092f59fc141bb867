# Intel Falcon Ridge NHI (TB2), the original QUIRK_E2E, docs/profiles.md,
# quirks.md 2.1.1. PCI 8086:156c class 0x088000 binds Linux's explicit
# entry; Linux sets QUIRK_E2E (automatic HopIDs from 2, every E2E RX ring
# returns credits through reserved HopID 1). The model loses RX frames of
# an E2E ring that returns credits through any other HopID.
# Linux tries the firmware CM (ICM) for these IDs unless the machine is an
# Apple one: run the guest with an Apple DMI, e.g.
#   harness/vmpair up --profile intel-falcon-ridge \
#       --qemu-extra -smbios type=1,manufacturer="Apple Inc."
# Behind the NHI sits a USB4 (v1) router, not a TBT2 one: Linux's software
# CM cannot drive a TBT2 host router without its link-controller registers.
name = intel-falcon-ridge
pci_vendor = 0x8086
pci_device = 0x156c
pci_subsys_vendor = 0x8086
pci_subsys_device = 0x0000
pci_class = 0x088000
pci_revision = 0x00
# a USB4 router ID outside Linux's TBT generation table (156b/156d) [I]
router_vendor = 0x8086
router_device = 0x156c
router_revision = 0x00
usb4_version = 0x20
hop_count = 12
lanes = 2
# TB2: 2 x 10 Gb/s (Gen 2 code)
speed_code = 0x8
supported_speeds = 0x8
lane_gbps = 10
lane_max_hopid = 19
lane_total_buffers = 60
nhi_total_buffers = 32
ba_max_hi = 14
e2e_hold_frames = 256
irq_throttle = 0
e2e_reserved_hop = 1
