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
#define DRM_SIMACCEL_BO_USERPTR		0x02
#define DRM_SIMACCEL_QUEUE_CREATE	0x03
#define DRM_SIMACCEL_QUEUE_DESTROY	0x04
#define DRM_SIMACCEL_SUBMIT		0x05
#define DRM_SIMACCEL_QUEUE_QUERY	0x06
#define DRM_SIMACCEL_BO_INFO		0x07
#define DRM_SIMACCEL_MEM_INFO		0x08

#define DRM_IOCTL_SIMACCEL_GET_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_SIMACCEL_GET_INFO, struct drm_simaccel_info)
#define DRM_IOCTL_SIMACCEL_BO_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_SIMACCEL_BO_CREATE, struct drm_simaccel_bo_create)
#define DRM_IOCTL_SIMACCEL_BO_USERPTR \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_SIMACCEL_BO_USERPTR, struct drm_simaccel_bo_userptr)
#define DRM_IOCTL_SIMACCEL_QUEUE_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_SIMACCEL_QUEUE_CREATE, struct drm_simaccel_queue_create)
#define DRM_IOCTL_SIMACCEL_QUEUE_DESTROY \
	DRM_IOW(DRM_COMMAND_BASE + DRM_SIMACCEL_QUEUE_DESTROY, struct drm_simaccel_queue_destroy)
#define DRM_IOCTL_SIMACCEL_SUBMIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_SIMACCEL_SUBMIT, struct drm_simaccel_submit)
#define DRM_IOCTL_SIMACCEL_QUEUE_QUERY \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_SIMACCEL_QUEUE_QUERY, struct drm_simaccel_queue_query)
#define DRM_IOCTL_SIMACCEL_BO_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_SIMACCEL_BO_INFO, struct drm_simaccel_bo_info)
#define DRM_IOCTL_SIMACCEL_MEM_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_SIMACCEL_MEM_INFO, struct drm_simaccel_mem_info)

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
 * DRM_IOCTL_GEM_CLOSE; the memory goes once no handle, no mapping and no
 * job uses it. Every buffer has a device address: VRAM buffers live at
 * DRM_SIMACCEL_VRAM_BASE + their VRAM offset, system memory (HOST and
 * USERPTR buffers) above DRM_SIMACCEL_HOST_BASE. Any address inside a
 * buffer, base + k, is valid for copies and fills, resolved per file:
 * addresses of buffers this file holds no handle to resolve to nothing.
 */
#define DRM_SIMACCEL_VRAM_BASE		0x0000100000000000ull
#define DRM_SIMACCEL_HOST_BASE		0x0000200000000000ull

/* Kinds of buffers */
#define DRM_SIMACCEL_BO_VRAM		1	/* VRAM, not mappable */
#define DRM_SIMACCEL_BO_VRAM_MAPPABLE	2	/* VRAM, mappable through BAR2, write-combined */
#define DRM_SIMACCEL_BO_HOST		3	/* system memory, pinned, mappable, cached */
/* Kinds BO_INFO reports, which BO_CREATE does not make */
#define DRM_SIMACCEL_BO_USER		4	/* from BO_USERPTR */
#define DRM_SIMACCEL_BO_IMPORTED	5	/* a dma-buf of another device */

#define DRM_SIMACCEL_BO_MIN_ALIGN	256
#define DRM_SIMACCEL_BO_MAX_ALIGN	_BITULL(30)

/**
 * struct drm_simaccel_bo_create - DRM_IOCTL_SIMACCEL_BO_CREATE: a buffer
 * @size: in, bytes, at least 1. Every buffer reads as zeros at first, so
 *	that none shows what an earlier owner wrote: the device clears VRAM
 *	buffers (work that uses the buffer, and its mapping, wait for that),
 *	system memory comes zeroed. HOST memory is charged to the creator's
 *	memory cgroup.
 * @align: in, 0 for DRM_SIMACCEL_BO_MIN_ALIGN, else a power of two up to
 *	DRM_SIMACCEL_BO_MAX_ALIGN (smaller values are raised to the minimum)
 * @kind: in, DRM_SIMACCEL_BO_*
 * @flags: in, must be zero
 * @handle: out, the GEM handle, never 0
 * @pad: must be zero
 * @dev_addr: out, device address of the first byte
 * @mmap_offset: out, the offset to pass to mmap() on this file; 0 if the
 *	kind is not mappable. A mapping covers at most the buffer's pages and
 *	must be shared (MAP_SHARED). After the device is unbound, touching a
 *	VRAM mapping raises SIGBUS; HOST mappings stay valid.
 *
 * Errors: EINVAL for a bad size, alignment, kind, flags or padding; ENOSPC
 * when VRAM has no free range of that size and alignment; EDQUOT when the
 * calling user's VRAM buffers would pass the administrator's limit (the
 * device's sysfs attribute vram_limit_per_user); ENODEV after the device is
 * unbound.
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

/**
 * struct drm_simaccel_bo_info - DRM_IOCTL_SIMACCEL_BO_INFO: what a handle is
 * @handle: in
 * @flags: in, must be zero
 * @size: out, bytes addressable from @dev_addr
 * @kind: out, DRM_SIMACCEL_BO_*
 * @pad: must be zero
 * @dev_addr: out, device address of the first byte, in this file
 * @mmap_offset: out, the offset to pass to mmap() on this file; 0 if the
 *	buffer cannot be mapped through it
 *
 * For a handle from DRM_IOCTL_PRIME_FD_TO_HANDLE or DRM_IOCTL_GEM_OPEN.
 *
 * Sharing: DRM_IOCTL_PRIME_HANDLE_TO_FD exports a VRAM or HOST buffer as a
 * dma-buf (a USERPTR buffer: EINVAL; a VRAM buffer once the device cleared
 * it). Imported into a file of the same device (another process: IPC), it
 * is the same buffer at the same device address. Imported into another
 * simaccel device, it is a DRM_SIMACCEL_BO_IMPORTED buffer there, with a
 * device address of system memory, and copies to and from it go peer to
 * peer to the exporter's VRAM (or to the HOST buffer's pages). When the
 * exporter is unbound, jobs that name an import of its VRAM fail with
 * ENODEV; an import of a HOST buffer stays usable, since its pages are
 * system memory that the dma-buf holds. Only simaccel devices can import
 * VRAM buffers.
 */
struct drm_simaccel_bo_info {
	__u32 handle;
	__u32 flags;
	__u64 size;
	__u32 kind;
	__u32 pad;
	__u64 dev_addr;
	__u64 mmap_offset;
};

/* struct drm_simaccel_mem_info flags */
#define DRM_SIMACCEL_MEM_INFO_SETTLE	_BITUL(0)	/* wait for clearings first */
#define DRM_SIMACCEL_MEM_INFO_FLAGS	DRM_SIMACCEL_MEM_INFO_SETTLE

/**
 * struct drm_simaccel_mem_info - DRM_IOCTL_SIMACCEL_MEM_INFO: the device's
 *	memory in use, by every file
 * @flags: in, DRM_SIMACCEL_MEM_INFO_*
 * @pad: must be zero
 * @vram_total: out, bytes of VRAM
 * @vram_used: out, bytes of VRAM that buffers hold (whole pages)
 * @host_pinned: out, bytes of system memory pinned for the device: HOST
 *	and USERPTR buffers, user memory of jobs in flight
 *
 * A freed VRAM buffer holds its memory until the device has finished
 * clearing it and every job that used it is over and has let it go. With
 * DRM_SIMACCEL_MEM_INFO_SETTLE the call first waits until the clearings
 * under way at the call, and the releases of finished jobs' buffers, are
 * over (not those started meanwhile), for at most two seconds
 * (interruptibly), so that @vram_used no longer counts the buffers freed
 * before the call whose work is over, as a creation that finds VRAM full
 * waits for them.
 * The counts are the same as the device's sysfs files vram_total,
 * vram_used and host_pinned.
 */
struct drm_simaccel_mem_info {
	__u32 flags;
	__u32 pad;
	__u64 vram_total;
	__u64 vram_used;
	__u64 host_pinned;
};

/* struct drm_simaccel_bo_userptr flags */
#define DRM_SIMACCEL_USERPTR_READ_ONLY	_BITUL(0)	/* the device only reads it */
#define DRM_SIMACCEL_USERPTR_FLAGS	DRM_SIMACCEL_USERPTR_READ_ONLY

/**
 * struct drm_simaccel_bo_userptr - DRM_IOCTL_SIMACCEL_BO_USERPTR: user
 *	memory as a buffer
 * @user_addr: in, first byte, any alignment
 * @size: in, bytes, at least 1
 * @flags: in, DRM_SIMACCEL_USERPTR_*
 * @handle: out, the GEM handle, never 0
 * @dev_addr: out, device address of @user_addr
 *
 * The pages stay pinned (FOLL_LONGTERM) and mapped for DMA until the buffer
 * is gone, charged to the caller's user against RLIMIT_MEMLOCK, as io_uring
 * charges them: all the pins of one user count together, whichever process
 * made them and whether or not it still lives (CAP_IPC_LOCK lifts the
 * limit). Such a buffer cannot be mapped through this file, nor exported:
 * the caller has it.
 * A READ_ONLY buffer may be read-only memory; a copy into it fails.
 *
 * Errors: EINVAL for a bad range or flags; EFAULT when the range is not
 * mapped (or not writable without READ_ONLY); ENOMEM past RLIMIT_MEMLOCK.
 */
struct drm_simaccel_bo_userptr {
	__u64 user_addr;
	__u64 size;
	__u32 flags;
	__u32 handle;
	__u64 dev_addr;
};

/*
 * Queues and jobs
 *
 * A queue runs its jobs in submission order, asynchronously to the caller;
 * the queues of all files share the hardware queues, fairly. A job is a
 * list of copies and fills. It may wait for fences from syncobjs (any
 * queue, any file, any device) and signal one: a binary syncobj, or a point
 * of a timeline syncobj (DRM_IOCTL_SYNCOBJ_*). The fence of a job that
 * failed carries its error:
 *   EIO		the device failed it (a bus error, fault injection);
 *   ETIMEDOUT	it made no progress for the driver's time-out (module
 *		parameter job_timeout_ms); its queue was reset first;
 *   ECANCELED	a fence it waited for carried an error;
 *   ENODEV	the device was unbound;
 *   ESRCH	its queue went away with a process that was exiting or
 *		killed, and the job had not reached the hardware within a
 *		second (drm_sched's grace for an exiting process).
 * A submission is one job: all of it succeeds or its fence carries the
 * error. Work after a failed job runs. A job's buffers and pages are let go
 * as soon as its fence signals.
 */
#define DRM_SIMACCEL_MAX_QUEUES_PER_FILE	1024
/* DRM_IOCTL_SYNCOBJ_CREATE and _FD_TO_HANDLE fail with EMFILE past it */
#define DRM_SIMACCEL_MAX_SYNCOBJS_PER_FILE	16384
#define DRM_SIMACCEL_MAX_JOBS_PER_QUEUE	256	/* in flight; SUBMIT waits */

/**
 * struct drm_simaccel_queue_create - DRM_IOCTL_SIMACCEL_QUEUE_CREATE
 * @flags: in, must be zero
 * @handle: out, the queue, never 0; handles are not reused soon
 *
 * Errors: EMFILE past DRM_SIMACCEL_MAX_QUEUES_PER_FILE queues (a destroyed
 * queue counts until its jobs have reached the hardware).
 */
struct drm_simaccel_queue_create {
	__u32 flags;
	__u32 handle;
};

/**
 * struct drm_simaccel_queue_destroy - DRM_IOCTL_SIMACCEL_QUEUE_DESTROY
 * @handle: in
 * @pad: must be zero
 *
 * Jobs already submitted still run and signal their fences; the call
 * returns once they have all been handed to the hardware. (Closing the
 * file destroys its queues the same way, except when the process is
 * exiting: see ESRCH above.)
 */
struct drm_simaccel_queue_destroy {
	__u32 handle;
	__u32 pad;
};

/* struct drm_simaccel_op opcodes */
#define DRM_SIMACCEL_OP_COPY		1
#define DRM_SIMACCEL_OP_FILL		2

/*
 * struct drm_simaccel_op flags: the address is a pointer in the caller's
 * memory, pinned and charged as a USERPTR buffer while the job lives
 */
#define DRM_SIMACCEL_OP_SRC_USER	_BITUL(0)
#define DRM_SIMACCEL_OP_DST_USER	_BITUL(1)
#define DRM_SIMACCEL_OP_FLAGS		(DRM_SIMACCEL_OP_SRC_USER | \
					 DRM_SIMACCEL_OP_DST_USER)

/**
 * struct drm_simaccel_op - one copy or fill
 * @op: DRM_SIMACCEL_OP_*
 * @flags: DRM_SIMACCEL_OP_* flags (FILL: DST_USER only)
 * @dst: destination: device address, or pointer with DST_USER
 * @src: COPY: source, device address or pointer with SRC_USER; FILL: the
 *	byte, 0 to 255
 * @size: bytes, at least 1; a range must lie inside one buffer
 */
struct drm_simaccel_op {
	__u32 op;
	__u32 flags;
	__u64 dst;
	__u64 src;
	__u64 size;
};

/**
 * struct drm_simaccel_sync - a syncobj and, for a timeline, a point
 * @handle: the syncobj
 * @pad: must be zero
 * @point: the timeline point; 0 for a binary syncobj
 */
struct drm_simaccel_sync {
	__u32 handle;
	__u32 pad;
	__u64 point;
};

#define DRM_SIMACCEL_MAX_OPS		256
#define DRM_SIMACCEL_MAX_DESCS		16383
#define DRM_SIMACCEL_MAX_IN_SYNCS	64

/* struct drm_simaccel_submit flags */
#define DRM_SIMACCEL_SUBMIT_WAIT	_BITUL(0)	/* return once it is done */
#define DRM_SIMACCEL_SUBMIT_FLAGS	DRM_SIMACCEL_SUBMIT_WAIT

/**
 * struct drm_simaccel_submit - DRM_IOCTL_SIMACCEL_SUBMIT: queue a job
 * @queue: in, the queue handle
 * @flags: in, DRM_SIMACCEL_SUBMIT_*
 * @ops: in, pointer to @op_count struct drm_simaccel_op
 * @op_count: in, 0 to DRM_SIMACCEL_MAX_OPS; a job of no operations waits
 *	for its in-syncs and signals its fence (a barrier)
 * @in_sync_count: in, 0 to DRM_SIMACCEL_MAX_IN_SYNCS
 * @in_syncs: in, pointer to @in_sync_count struct drm_simaccel_sync: the
 *	job starts once all their fences have signalled
 * @out_sync: in, 0 or a struct drm_simaccel_sync that gets the job's fence
 * @seqno: out, the job's number in its queue: 1, 2, ... in submission order
 *
 * With DRM_SIMACCEL_SUBMIT_WAIT the call waits for the job (only a fatal
 * signal interrupts it: the job stays queued) and returns its error, as
 * listed above. A submission that would exceed
 * DRM_SIMACCEL_MAX_JOBS_PER_QUEUE jobs in flight waits (interruptibly,
 * before anything is queued) for earlier ones; destroying the queue ends
 * the wait with ENOENT.
 *
 * Errors of the call itself: EINVAL for bad flags, ops or padding, or an
 * in-sync with no fence (yet) at that point; ENOENT for an unknown queue or
 * syncobj, or an address that no buffer of this file holds (or a range
 * that passes the end of its buffer: VRAM and HOST buffers are whole
 * pages); EACCES for a copy into a READ_ONLY buffer; E2BIG when the job
 * needs more than DRM_SIMACCEL_MAX_DESCS DMA descriptors (a descriptor
 * moves at most 4 MiB that are contiguous on the bus on both sides, less
 * on a throttled device: split the work); EFAULT, ENOMEM for user memory
 * as in BO_USERPTR; ENODEV after the device is unbound.
 */
struct drm_simaccel_submit {
	__u32 queue;
	__u32 flags;
	__u64 ops;
	__u32 op_count;
	__u32 in_sync_count;
	__u64 in_syncs;
	struct drm_simaccel_sync out_sync;
	__u64 seqno;
};

/**
 * struct drm_simaccel_queue_query - DRM_IOCTL_SIMACCEL_QUEUE_QUERY: what
 *	became of a queue's jobs
 * @handle: in, the queue
 * @pad: must be zero
 * @submitted: out, the seqno of its last job, 0 if none
 * @failed: out, how many of its jobs have failed so far
 * @failed_seqno: out, the seqno of the last job that failed, 0 if none
 * @error: out, that job's errno (positive), as listed above
 * @recent_count: in, room at @recent (0: none wanted); out, entries written
 * @recent: in, 0 or a pointer to @recent_count struct drm_simaccel_failure:
 *	the queue's last failures, the most recent first, at most
 *	DRM_SIMACCEL_QUEUE_FAILURES of them
 *
 * A job counts once its fence has signalled, and the counts only grow: a
 * caller that waited for job N and sees @failed grown learns that work
 * failed, as CUDA reports errors at the next synchronization, and @recent
 * says which jobs, as far back as the driver remembers. The driver keeps
 * counters and the last few failures, not a record per job.
 */
struct drm_simaccel_queue_query {
	__u32 handle;
	__u32 pad;
	__u64 submitted;
	__u64 failed;
	__u64 failed_seqno;
	__s32 error;
	__u32 recent_count;
	__u64 recent;
};

#define DRM_SIMACCEL_QUEUE_FAILURES	16

/**
 * struct drm_simaccel_failure - one failed job of a queue
 * @seqno: its seqno
 * @error: its errno, positive
 * @pad: zero
 */
struct drm_simaccel_failure {
	__u64 seqno;
	__s32 error;
	__u32 pad;
};

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_SIMACCEL_ACCEL_H */
