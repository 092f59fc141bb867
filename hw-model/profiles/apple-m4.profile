# Apple M4-generation Mac as a USB4 peer (TB5 port, linked to a USB4 host
# at 40 Gb/s), docs/profiles.md, quirks.md 2.3. Meant for the peer VM.
# NHI-level behaviour only: 12 HopIDs, E2E on many rings, and the
# low-power receive state: after a data RX ring has been idle, its
# completions are delivered in coalesced bursts every 5 s (virtual time).
# The AD/FA57 advertisement, UC-only verbs and ThunderboltIP-first login
# are the Mac's software, not its NHI: they belong to the peer's software.
name = apple-m4
# Apple's NHI is a platform device, not PCI: IDs are stand-ins [I]
pci_vendor = 0x106b
pci_device = 0x10f5
pci_subsys_vendor = 0x106b
pci_subsys_device = 0x0001
pci_class = 0x0c0340
pci_revision = 0x00
router_vendor = 0x106b
router_device = 0x10f5
router_revision = 0x00
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
irq_throttle = 0
# entry after 1 s idle is a guess: the sources give only the ~5 s period [I]
lowpower_idle_ms = 1000
lowpower_period_ms = 5000
