# The devices of the qtest builds of QEMU (scripts/build-qemu.sh fuzz):
# q35 with PCIe root ports and the accelerator, what the qtests and the
# fuzzers use, instead of every device x86_64 has.
CONFIG_Q35=y
CONFIG_PCIE_PORT=y
CONFIG_ACCEL_PCI=y
