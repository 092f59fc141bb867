# OdinLink device set for qemu-system-x86_64 (--with-devices-x86_64).
# ci/qemu.sh copies this file to configs/devices/x86_64-softmmu/odinlink.mak
# in Debian's QEMU tree. QEMU is configured --without-default-devices, so
# every device the harness needs is named here explicitly.

# Machines: pc (i440fx) and q35
CONFIG_I440FX=y
CONFIG_Q35=y

# Serial console (ttyS0)
CONFIG_SERIAL_ISA=y
CONFIG_SERIAL_PCI=y

# PCI and PCIe plumbing: PCI devices, PCIe root ports, switches, bridges
CONFIG_PCI_DEVICES=y
CONFIG_PCIE_PORT=y
CONFIG_IOH3420=y
CONFIG_XIO3130=y
CONFIG_I82801B11=y

# IOMMU (intel-iommu) so DMA through the model can fault like on hardware
CONFIG_VTD=y

# virtio over PCI: console/serial ports (guest agent), net (bench peer), rng
CONFIG_VIRTIO=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_SERIAL=y
CONFIG_VIRTIO_NET=y
CONFIG_VIRTIO_RNG=y

# The USB4/Thunderbolt host interface (hw-model/qemu)
CONFIG_USB4_NHI=y
