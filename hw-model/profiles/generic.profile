# Generic USB4 host controller (USB4 Gen3, 2 lanes x 20 Gb/s).
# Class-code match in Linux's thunderbolt driver, non-Intel vendor: the
# driver takes its generic path (write-1-to-clear interrupt status,
# software connection manager). Keys are documented in docs/profiles.md.
name = generic
pci_vendor = 0x1234
pci_device = 0x0b45
pci_subsys_vendor = 0x1234
pci_subsys_device = 0x0001
pci_class = 0x0c0340
pci_revision = 0x01
router_vendor = 0x1234
router_device = 0x0b46
router_revision = 0x01
usb4_version = 0x20
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
# Interrupt moderation per REG_INT_THROTTLE. Off: under TCG the virtual
# clock runs at host speed, so 128 us windows only add latency.
irq_throttle = 0
