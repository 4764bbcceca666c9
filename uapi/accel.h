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

/*
 * Memory
 *
 * Every allocation has a device address: VRAM allocations live at
 * ACCEL_VRAM_BASE + their VRAM offset, host memory above ACCEL_HOST_BASE.
 * Any address inside an allocation,
 * base + k, is valid for copies and fills, and a range must lie inside one
 * allocation the caller owns.
 */
#define ACCEL_VRAM_BASE		0x0000100000000000ull
/* Host memory (ACCEL_MEM_HOST and registered user memory) lives here. */
#define ACCEL_HOST_BASE		0x0000200000000000ull

/* Kinds of memory */
#define ACCEL_MEM_DEVICE	1	/* VRAM, not mappable */
#define ACCEL_MEM_HOST_VISIBLE	2	/* VRAM, mappable through BAR2 (write-combined) */
#define ACCEL_MEM_HOST		3	/* pinned system memory, DMA-mapped, mappable */

#define ACCEL_ALLOC_MIN_ALIGN	256
#define ACCEL_ALLOC_MAX_ALIGN	_BITULL(30)

/**
 * struct accel_alloc - ACCEL_IOCTL_ALLOC: allocate memory
 * @size: in, bytes, at least 1
 * @align: in, 0 for ACCEL_ALLOC_MIN_ALIGN, else a power of two up to
 *	ACCEL_ALLOC_MAX_ALIGN (smaller values are raised to the minimum)
 * @kind: in, ACCEL_MEM_*
 * @flags: in, must be zero
 * @handle: out, never 0
 * @pad: must be zero
 * @dev_addr: out, device address of the first byte
 * @mmap_offset: out, offset to pass to mmap(), 0 if not mappable
 */
struct accel_alloc {
	__u64 size;
	__u64 align;
	__u32 kind;
	__u32 flags;
	__u32 handle;
	__u32 pad;
	__u64 dev_addr;
	__u64 mmap_offset;
};

/**
 * struct accel_free - ACCEL_IOCTL_FREE: release a handle
 * @handle: in
 * @pad: must be zero
 *
 * The memory is freed once no mapping uses it any more.
 */
struct accel_free {
	__u32 handle;
	__u32 pad;
};

/*
 * struct accel_copy flags. *_USER: the address is a user pointer, not a
 * device address. *_PEER: the address is a device address of the file
 * peer_fd (another accel device, or another open of this one), and the copy
 * goes device to device through the peer's BAR (peer to peer).
 */
#define ACCEL_COPY_SRC_USER	_BITUL(0)
#define ACCEL_COPY_DST_USER	_BITUL(1)
#define ACCEL_COPY_SRC_PEER	_BITUL(2)
#define ACCEL_COPY_DST_PEER	_BITUL(3)
#define ACCEL_COPY_FLAGS_VALID	(ACCEL_COPY_SRC_USER | ACCEL_COPY_DST_USER | \
				 ACCEL_COPY_SRC_PEER | ACCEL_COPY_DST_PEER)

/**
 * struct accel_copy - ACCEL_IOCTL_COPY: copy and wait for completion
 * @dst: in, destination: device address, or user pointer with DST_USER
 * @src: in, source: device address, or user pointer with SRC_USER
 * @size: in, bytes; 0 does nothing
 * @flags: in, ACCEL_COPY_*
 * @pad: must be zero
 * @peer_fd: in, with a *_PEER flag: an open /dev/accelM that owns that side
 * @pad2: must be zero
 *
 * User memory is pinned for the duration of the transfer. A side cannot be
 * both USER and PEER, and a PEER side must be VRAM of the peer.
 */
struct accel_copy {
	__u64 dst;
	__u64 src;
	__u64 size;
	__u32 flags;
	__u32 pad;
	__s32 peer_fd;
	__u32 pad2;
};

/**
 * struct accel_memset - ACCEL_IOCTL_MEMSET: fill device memory and wait
 * @dst: in, device address
 * @size: in, bytes; 0 does nothing
 * @value: in, the byte, 0 to 255
 * @flags: in, must be zero
 */
struct accel_memset {
	__u64 dst;
	__u64 size;
	__u32 value;
	__u32 flags;
};

/**
 * struct accel_mem_stats - ACCEL_IOCTL_MEM_STATS: memory usage
 * @flags: in, must be zero
 * @pad: must be zero
 * @vram_total: out, bytes of VRAM
 * @vram_used: out, bytes allocated by all processes
 * @vram_free: out, vram_total - vram_used
 * @ctx_vram_used: out, bytes allocated through this file
 * @ctx_allocations: out, live allocations of this file
 * @pad2: must be zero
 * @host_pinned: out, bytes of host memory pinned for the device
 *	(ACCEL_MEM_HOST and registered user memory), by all processes
 * @ctx_host_pinned: out, the part of @host_pinned this file holds
 */
struct accel_mem_stats {
	__u32 flags;
	__u32 pad;
	__u64 vram_total;
	__u64 vram_used;
	__u64 vram_free;
	__u64 ctx_vram_used;
	__u32 ctx_allocations;
	__u32 pad2;
	__u64 host_pinned;
	__u64 ctx_host_pinned;
};

/* struct accel_userptr flags */
#define ACCEL_USERPTR_READ_ONLY	_BITUL(0)	/* the device only reads it */
#define ACCEL_USERPTR_FLAGS_VALID ACCEL_USERPTR_READ_ONLY

/**
 * struct accel_userptr - ACCEL_IOCTL_USERPTR: register user memory for DMA
 * @user_addr: in, start of the buffer, any alignment
 * @size: in, bytes, at least 1
 * @flags: in, ACCEL_USERPTR_*
 * @handle: out, release it with ACCEL_IOCTL_FREE
 * @dev_addr: out, device address of @user_addr
 *
 * The pages stay pinned (FOLL_LONGTERM) and mapped for DMA until the
 * handle is freed; copies to and from dev_addr + k need no pinning.
 */
struct accel_userptr {
	__u64 user_addr;
	__u64 size;
	__u32 flags;
	__u32 handle;
	__u64 dev_addr;
};

/*
 * Queues and fences
 *
 * A queue (a stream) runs its work in submission order and asynchronously to
 * the caller; queues of all contexts share the hardware queues round-robin.
 * Every submission returns a fence, a 64-bit value that is never 0, which
 * ACCEL_IOCTL_WAIT waits for. The file is readable for poll() when all the
 * work of this context has completed.
 */

/**
 * struct accel_queue_create - ACCEL_IOCTL_QUEUE_CREATE
 * @flags: in, must be zero
 * @handle: out, the queue, never 0
 * @hw_queue: out, the hardware queue it runs on (for information)
 * @pad: must be zero
 */
struct accel_queue_create {
	__u32 flags;
	__u32 handle;
	__u32 hw_queue;
	__u32 pad;
};

/**
 * struct accel_queue_destroy - ACCEL_IOCTL_QUEUE_DESTROY: wait for the
 *	queue's work to finish and destroy it
 * @handle: in
 * @pad: must be zero
 */
struct accel_queue_destroy {
	__u32 handle;
	__u32 pad;
};

/* What a submission does */
#define ACCEL_SUBMIT_COPY	1	/* like ACCEL_IOCTL_COPY */
#define ACCEL_SUBMIT_MEMSET	2	/* like ACCEL_IOCTL_MEMSET, byte in @value */
#define ACCEL_SUBMIT_BARRIER	3	/* nothing but the wait for @wait_fence */

/**
 * struct accel_submit - ACCEL_IOCTL_SUBMIT: queue work, get its fence
 * @queue: in, queue handle
 * @op: in, ACCEL_SUBMIT_*
 * @dst: in, as in struct accel_copy (MEMSET: device address)
 * @src: in, as in struct accel_copy (unused by MEMSET and BARRIER)
 * @size: in, bytes (0 is allowed and does nothing but signal its fence)
 * @flags: in, ACCEL_COPY_* for COPY, zero otherwise
 * @value: in, MEMSET byte, 0 to 255; zero otherwise
 * @peer_fd: in, as in struct accel_copy
 * @pad: must be zero
 * @wait_fence: in, 0 or a fence of any queue of this file: the work starts
 *	only once that fence has signalled (without a round trip to user space)
 * @fence: out, signalled when the work is complete
 *
 * User memory named by a USER side is pinned until the work completes; the
 * caller must not change a source before the fence signals.
 */
struct accel_submit {
	__u32 queue;
	__u32 op;
	__u64 dst;
	__u64 src;
	__u64 size;
	__u32 flags;
	__u32 value;
	__s32 peer_fd;
	__u32 pad;
	__u64 wait_fence;
	__u64 fence;
};

/**
 * struct accel_wait - ACCEL_IOCTL_WAIT: wait for a fence
 * @fence: in
 * @timeout_ns: in, 0 to poll, negative to wait forever
 * @flags: in, must be zero
 * @pad: must be zero
 *
 * Returns 0 when the work completed, -EBUSY when @timeout_ns is 0 and it has
 * not, -ETIMEDOUT when the time ran out, -EIO when the device failed the
 * work or made no progress on it for the driver's DMA time-out (the queue is
 * then reset and later work runs), -ENOENT for a fence of a destroyed queue,
 * -EINVAL for a fence never issued, -ERESTARTSYS/-EINTR on a signal.
 */
struct accel_wait {
	__u64 fence;
	__s64 timeout_ns;
	__u32 flags;
	__u32 pad;
};

#define ACCEL_IOCTL_ALLOC	_IOWR(ACCEL_IOCTL_TYPE, 0x01, struct accel_alloc)
#define ACCEL_IOCTL_FREE	_IOW(ACCEL_IOCTL_TYPE, 0x02, struct accel_free)
#define ACCEL_IOCTL_COPY	_IOW(ACCEL_IOCTL_TYPE, 0x03, struct accel_copy)
#define ACCEL_IOCTL_MEMSET	_IOW(ACCEL_IOCTL_TYPE, 0x04, struct accel_memset)
#define ACCEL_IOCTL_MEM_STATS	_IOWR(ACCEL_IOCTL_TYPE, 0x05, struct accel_mem_stats)
#define ACCEL_IOCTL_USERPTR	_IOWR(ACCEL_IOCTL_TYPE, 0x06, struct accel_userptr)
#define ACCEL_IOCTL_QUEUE_CREATE _IOWR(ACCEL_IOCTL_TYPE, 0x07, struct accel_queue_create)
#define ACCEL_IOCTL_QUEUE_DESTROY _IOW(ACCEL_IOCTL_TYPE, 0x08, struct accel_queue_destroy)
#define ACCEL_IOCTL_SUBMIT	_IOWR(ACCEL_IOCTL_TYPE, 0x09, struct accel_submit)
#define ACCEL_IOCTL_WAIT	_IOW(ACCEL_IOCTL_TYPE, 0x0a, struct accel_wait)

#endif /* _UAPI_ACCEL_H */
