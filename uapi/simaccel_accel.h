/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * simaccel: user-space interface of the DRM accel driver for the simulated
 * PCIe accelerator (/dev/accel/accelN).
 *
 * Conventions, as in the other DRM drivers' interfaces:
 * - fields are fixed size, pointers are passed as __u64;
 * - padding and reserved fields must be zero, flags are checked against a
 *   mask; anything else is -EINVAL;
 * - 0 is never a valid handle;
 * - argument structs may grow at their end: DRM copies in what the caller
 *   passed, zero-fills the rest, and copies out only the caller's size, so
 *   older and newer callers keep working.
 *
 * User space includes it with libdrm's headers on the include path
 * (pkg-config --cflags libdrm), for "drm.h".
 */
#ifndef _UAPI_SIMACCEL_ACCEL_H
#define _UAPI_SIMACCEL_ACCEL_H

#include <linux/const.h>

#include "drm.h"

#if defined(__cplusplus)
extern "C" {
#endif

#define DRM_SIMACCEL_GET_INFO		0x00
#define DRM_SIMACCEL_BO_CREATE		0x01

#define DRM_IOCTL_SIMACCEL_GET_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_SIMACCEL_GET_INFO, struct drm_simaccel_info)
#define DRM_IOCTL_SIMACCEL_BO_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_SIMACCEL_BO_CREATE, struct drm_simaccel_bo_create)

/* Capabilities in drm_simaccel_info.caps, as reported by the hardware */
#define DRM_SIMACCEL_CAP_COPY		_BITUL(0)
#define DRM_SIMACCEL_CAP_FILL		_BITUL(1)
#define DRM_SIMACCEL_CAP_FENCE		_BITUL(2)
#define DRM_SIMACCEL_CAP_P2P		_BITUL(3)
#define DRM_SIMACCEL_CAP_FAULT_INJECT	_BITUL(4)

/**
 * struct drm_simaccel_info - DRM_IOCTL_SIMACCEL_GET_INFO: what the device is
 * @flags: in, must be zero
 * @pad: must be zero
 * @vendor_id: out, PCI vendor ID
 * @device_id: out, PCI device ID
 * @subsystem_vendor_id: out, PCI subsystem vendor ID
 * @subsystem_id: out, PCI subsystem ID
 * @revision: out, PCI revision ID
 * @class_code: out, PCI class code (base class, subclass, interface)
 * @pci_domain: out, PCI domain (segment) number
 * @pci_bus: out, PCI bus number
 * @pci_devfn: out, PCI device and function, as PCI_DEVFN()
 * @num_queues: out, hardware DMA queues
 * @vram_size: out, bytes of device memory
 * @hw_version: out, device version, major << 16 | minor
 * @driver_version: out, driver version, major << 16 | minor << 8 | patch
 * @caps: out, DRM_SIMACCEL_CAP_* bits
 * @pad2: must be zero
 */
struct drm_simaccel_info {
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
	__u32 pad2;
};

/*
 * Memory
 *
 * Buffers are GEM objects: a handle per file, closed with
 * DRM_IOCTL_GEM_CLOSE; the memory goes once no handle and no mapping uses
 * it. Every buffer has a device address: VRAM buffers live at
 * DRM_SIMACCEL_VRAM_BASE + their VRAM offset. Any address inside a buffer,
 * base + k, is valid for copies and fills, resolved per file: addresses of
 * another file's buffers resolve to nothing.
 */
#define DRM_SIMACCEL_VRAM_BASE		0x0000100000000000ull

/* Kinds of buffers */
#define DRM_SIMACCEL_BO_VRAM		1	/* VRAM, not mappable */
#define DRM_SIMACCEL_BO_VRAM_MAPPABLE	2	/* VRAM, mappable through BAR2, write-combined */

#define DRM_SIMACCEL_BO_MIN_ALIGN	256
#define DRM_SIMACCEL_BO_MAX_ALIGN	_BITULL(30)

/**
 * struct drm_simaccel_bo_create - DRM_IOCTL_SIMACCEL_BO_CREATE: a buffer
 * @size: in, bytes, at least 1; VRAM buffers are cleared before they are
 *	handed out, so no buffer shows what an earlier one held
 * @align: in, 0 for DRM_SIMACCEL_BO_MIN_ALIGN, else a power of two up to
 *	DRM_SIMACCEL_BO_MAX_ALIGN (smaller values are raised to the minimum)
 * @kind: in, DRM_SIMACCEL_BO_*
 * @flags: in, must be zero
 * @handle: out, the GEM handle, never 0
 * @pad: must be zero
 * @dev_addr: out, device address of the first byte
 * @mmap_offset: out, the offset to pass to mmap() on this file; 0 if the
 *	kind is not mappable. A mapping covers at most the buffer's pages;
 *	after the device is unbound, touching it raises SIGBUS.
 *
 * Errors: EINVAL for a bad size, alignment, kind, flags or padding; ENOSPC
 * when VRAM has no free range of that size and alignment; ENODEV after the
 * device is unbound.
 */
struct drm_simaccel_bo_create {
	__u64 size;
	__u64 align;
	__u32 kind;
	__u32 flags;
	__u32 handle;
	__u32 pad;
	__u64 dev_addr;
	__u64 mmap_offset;
};

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_SIMACCEL_ACCEL_H */
