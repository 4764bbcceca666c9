# The devices of the VM's QEMU (scripts/build-qemu.sh plain): what
# scripts/vm-run.sh gives the guest, q35 with PCIe root ports, the
# accelerator, Intel's vIOMMU (--iommu), 9p shares over virtio-pci, and the
# HPET a default q35 has, instead of every device x86_64 has (a third of
# the build). The qtests run on it too: it has all of accel-qtest's.
CONFIG_Q35=y
CONFIG_PCIE_PORT=y
CONFIG_ACCEL_PCI=y
CONFIG_VTD=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_9P=y
CONFIG_HPET=y
