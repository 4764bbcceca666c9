/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * accel: user-space interface of the accel.ko driver (/dev/accelN).
 *
 * Conventions, shared by every ioctl (see docs/uapi.md):
 * - fields are fixed size, pointers are passed as __u64;
 * - padding and reserved fields must be zero, flags are checked against a
 *   mask; anything else is -EINVAL;
 * - argument structs may grow at their end. The size is part of the ioctl
 *   number: a caller built against an older, shorter struct keeps working
 *   (the kernel fills only what it knows the caller has), and a caller
 *   built against a newer, longer struct works as long as the fields this
 *   kernel does not know are zero (otherwise -E2BIG).
 */
#ifndef _UAPI_ACCEL_H
#define _UAPI_ACCEL_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

#define ACCEL_IOCTL_TYPE	'A'

/* Capabilities in accel_info.caps, as reported by the hardware */
#define ACCEL_INFO_CAP_COPY		_BITUL(0)
#define ACCEL_INFO_CAP_FILL		_BITUL(1)
#define ACCEL_INFO_CAP_FENCE		_BITUL(2)
#define ACCEL_INFO_CAP_P2P		_BITUL(3)
#define ACCEL_INFO_CAP_FAULT_INJECT	_BITUL(4)

/**
 * struct accel_info - ACCEL_IOCTL_GET_INFO: what the device is
 * @flags: in, must be zero
 * @pad: must be zero
 * @vendor_id: PCI vendor ID
 * @device_id: PCI device ID
 * @subsystem_vendor_id: PCI subsystem vendor ID
 * @subsystem_id: PCI subsystem ID
 * @revision: PCI revision ID
 * @class_code: PCI class code (base class, subclass, programming interface)
 * @pci_domain: PCI domain (segment) number
 * @pci_bus: PCI bus number
 * @pci_devfn: PCI device and function, as PCI_DEVFN()
 * @num_queues: number of DMA queues
 * @vram_size: bytes of device memory
 * @hw_version: device version, major << 16 | minor
 * @driver_version: driver version, major << 16 | minor << 8 | patch
 * @caps: ACCEL_INFO_CAP_* bits
 * @index: N of /dev/accelN
 */
struct accel_info {
	__u32 flags;
	__u32 pad;
	__u32 vendor_id;
	__u32 device_id;
	__u32 subsystem_vendor_id;
	__u32 subsystem_id;
	__u32 revision;
	__u32 class_code;
	__u32 pci_domain;
	__u32 pci_bus;
	__u32 pci_devfn;
	__u32 num_queues;
	__u64 vram_size;
	__u32 hw_version;
	__u32 driver_version;
	__u32 caps;
	__u32 index;
};

#define ACCEL_IOCTL_GET_INFO	_IOWR(ACCEL_IOCTL_TYPE, 0x00, struct accel_info)

#endif /* _UAPI_ACCEL_H */
