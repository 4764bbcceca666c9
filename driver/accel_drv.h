/* SPDX-License-Identifier: GPL-2.0 */
/*
 * accel: driver-wide definitions.
 */
#ifndef __ACCEL_DRV_H__
#define __ACCEL_DRV_H__

#include <linux/genalloc.h>
#include <linux/interrupt.h>
#include <linux/interval_tree.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/poll.h>
#include <linux/rwsem.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "../include/accel_hw.h"
#include "../uapi/accel.h"

#define DRIVER_NAME		"accel"
#define ACCEL_DRIVER_MAJOR	0
#define ACCEL_DRIVER_MINOR	1
#define ACCEL_DRIVER_PATCH	0

struct accel_device;
struct accel_engine;
struct accel_uqueue;
struct accel_xfer;

/**
 * struct accel_dma_seg - a contiguous run of a host allocation, for DMA
 * @start: offset of the run in the allocation
 * @addr: bus address
 * @len: bytes
 */
struct accel_dma_seg {
	u64 start;
	u64 addr;
	u64 len;
};

/**
 * struct accel_ring - a descriptor ring on one hardware queue (accel_ring.c)
 * @adev: the device
 * @queue: hardware queue index
 * @descs: @size descriptors, coherent DMA memory
 * @descs_dma: bus address of @descs
 * @size: entries, a power of two
 * @fence: 64-bit word the FENCE descriptors write, coherent DMA memory
 * @fence_dma: bus address of @fence
 * @tail: next free entry
 * @seq: last fence value submitted
 */
struct accel_ring {
	struct accel_device *adev;
	u32 queue;
	struct accel_desc *descs;
	dma_addr_t descs_dma;
	u32 size;
	__le64 *fence;
	dma_addr_t fence_dma;
	u32 tail;
	u64 seq;
};

/**
 * struct accel_queue_vector - context of one queue's MSI-X vector
 * @adev: the device
 * @queue: the queue index
 */
struct accel_queue_vector {
	struct accel_device *adev;
	u32 queue;
};

/**
 * struct accel_fault_file - a debugfs fault-injection file
 * @adev: the device
 * @queue: the hardware queue it targets
 */
struct accel_fault_file {
	struct accel_device *adev;
	u32 queue;
};

/**
 * struct accel_device - one accelerator
 * @pdev: the PCI device, or NULL once it is removed
 * @regs: BAR0 control registers
 * @vram_bar: bus address of BAR2 (all of VRAM)
 * @vram_size: bytes of VRAM
 * @num_queues: DMA queues the hardware has
 * @hw_version: the device's version register
 * @caps: the device's capability register
 * @index: N of /dev/accelN
 * @name: "accelN"
 * @misc: the character device
 * @ref: held by the PCI binding and by every open file
 * @remove_lock: writers remove the device; readers use the hardware
 * @removed: set under @remove_lock when the PCI device goes away
 * @vectors: context of each queue's MSI-X vector
 * @vram_pool: VRAM allocator, addresses are device addresses
 * @host_pool: allocator of device addresses for host memory
 * @host_bos: allocations backed by host pages, mapped for DMA
 * @host_lock: protects @host_bos and their DMA mappings
 * @host_pinned: bytes of host memory pinned for the device
 * @ctxs: open contexts (a mapped file keeps its context)
 * @ctxs_lock: protects @ctxs
 * @engines: one per hardware queue; 0 runs synchronous work
 * @nr_engines: number of @engines
 * @next_engine: where the next user queue goes
 * @wq: runs the engines
 * @debugfs: debugfs directory
 * @fault_files: data of the debugfs fault-injection files
 * @p2p_users: transfers of other devices that map this device's BAR
 * @p2p_wq: woken when @p2p_users drops to zero
 */
struct accel_device {
	struct pci_dev *pdev;
	void __iomem *regs;
	resource_size_t vram_bar;
	u64 vram_size;
	u32 num_queues;
	u32 hw_version;
	u32 caps;
	int index;
	char name[16];
	struct miscdevice misc;
	struct kref ref;
	struct rw_semaphore remove_lock;
	bool removed;
	struct accel_queue_vector vectors[ACCEL_MAX_QUEUES];
	struct gen_pool *vram_pool;
	struct gen_pool *host_pool;
	struct list_head host_bos;
	struct mutex host_lock;	/* host_bos and their DMA mappings */
	atomic64_t host_pinned;
	struct list_head ctxs;
	struct mutex ctxs_lock;	/* ctxs */
	struct accel_engine *engines;
	unsigned int nr_engines;
	atomic_t next_engine;
	struct workqueue_struct *wq;
	struct dentry *debugfs;
	struct accel_fault_file fault_files[ACCEL_MAX_QUEUES];
	atomic_t p2p_users;
	wait_queue_head_t p2p_wq;
};

/**
 * struct accel_ctx - what one open() of /dev/accelN owns
 * @adev: the device (a reference is held)
 * @mapping: the file's address space, to revoke its mappings on removal
 * @pid: the process that opened the file
 * @comm: its name
 * @link: in adev->ctxs
 * @handles: handle -> struct accel_bo
 * @lock: protects @va and the counters
 * @va: the context's allocations by device address
 * @vram_used: bytes of VRAM allocated through this context
 * @host_pinned: bytes of host memory pinned through this context
 * @nr_allocs: live allocations
 * @queues: handle -> user queue
 * @sync_queue: the queue synchronous calls use, created on first use
 * @inflight: jobs submitted and not completed
 * @poll_wq: woken when @inflight drops to zero
 */
struct accel_ctx {
	struct accel_device *adev;
	struct address_space *mapping;
	struct pid *pid;
	char comm[TASK_COMM_LEN];
	struct list_head link;
	struct xarray handles;
	struct mutex lock;	/* handles, address tree and counters */
	struct rb_root_cached va;
	u64 vram_used;
	u64 host_pinned;
	u32 nr_allocs;
	struct xarray queues;
	u32 next_queue;		/* handles go round, not reused at once */
	struct accel_uqueue *sync_queue;
	atomic_t inflight;
	wait_queue_head_t poll_wq;
};

/* Registered user memory: a kind of allocation user space does not ask for. */
#define ACCEL_BO_USERPTR	0x100

/**
 * struct accel_bo - one allocation
 * @ref: held by the handle and by every mapping
 * @adev: the device (a reference is held)
 * @kind: ACCEL_MEM_* or ACCEL_BO_USERPTR
 * @size: bytes asked for
 * @alloc_size: bytes reserved in the address pool (and pinned, for host memory)
 * @pool_addr: what the address pool returned
 * @node: device address range, in the owning context's tree
 * @pages: host pages of ACCEL_MEM_HOST and ACCEL_BO_USERPTR
 * @npages: number of @pages
 * @writable: the device may write the pages
 * @sgt: the pages as seen by the device
 * @dma_segs: the DMA runs of @sgt by offset, for slicing in O(log n)
 * @dma_nsegs: number of @dma_segs
 * @dma_mapped: @sgt is mapped (until the device goes away)
 * @host_link: in adev->host_bos
 */
struct accel_bo {
	struct kref ref;
	struct accel_device *adev;
	u32 kind;
	u64 size;
	u64 alloc_size;
	unsigned long pool_addr;
	struct interval_tree_node node;
	struct page **pages;
	unsigned int npages;
	bool writable;
	struct sg_table sgt;
	struct accel_dma_seg *dma_segs;
	unsigned int dma_nsegs;
	bool dma_mapped;
	struct list_head host_link;
};

static inline bool accel_bo_is_host(const struct accel_bo *bo)
{
	return bo->kind == ACCEL_MEM_HOST || bo->kind == ACCEL_BO_USERPTR;
}

/* Where device address @addr of @adev's VRAM is on the bus: in its BAR. */
static inline phys_addr_t accel_vram_phys(const struct accel_device *adev,
					  u64 addr)
{
	return adev->vram_bar + (addr - ACCEL_VRAM_BASE);
}

static inline u32 accel_read(struct accel_device *adev, u32 reg)
{
	return readl(adev->regs + reg);
}

static inline void accel_write(struct accel_device *adev, u32 reg, u32 val)
{
	writel(val, adev->regs + reg);
}

void accel_device_put(struct accel_device *adev);
struct accel_ctx *accel_file_ctx(struct file *file);

static inline u64 accel_bo_addr(struct accel_bo *bo)
{
	return bo->node.start;
}

/* accel_ring.c */
int accel_ring_init(struct accel_ring *ring, struct accel_device *adev, u32 queue,
		    u32 size);
void accel_ring_free(struct accel_ring *ring);
void accel_ring_reset(struct accel_ring *ring);
u32 accel_ring_space(struct accel_ring *ring);
void accel_ring_push(struct accel_ring *ring, const struct accel_desc *d);
u64 accel_ring_submit(struct accel_ring *ring);
u64 accel_ring_done(struct accel_ring *ring);
u32 accel_ring_error(struct accel_ring *ring);

/* accel_mem.c */
int accel_mem_init(struct accel_device *adev);
void accel_mem_fini(struct accel_device *adev);
u64 accel_vram_used(struct accel_device *adev);
struct accel_ctx *accel_ctx_create(struct accel_device *adev,
				   struct address_space *mapping);
void accel_mem_revoke_mappings(struct accel_device *adev);
void accel_ctx_destroy(struct accel_ctx *ctx);
int accel_bo_alloc(struct accel_ctx *ctx, struct accel_alloc *args);
int accel_bo_userptr(struct accel_ctx *ctx, struct accel_userptr *args);
int accel_bo_free(struct accel_ctx *ctx, u32 handle);
void accel_mem_unmap_all(struct accel_device *adev);
struct accel_bo *accel_ctx_lookup(struct accel_ctx *ctx, u64 addr, u64 size);
void accel_bo_put(struct accel_bo *bo);
int accel_mmap(struct file *file, struct vm_area_struct *vma);

/* accel_dma.c */
int accel_dma_copy(struct accel_ctx *ctx, const struct accel_copy *args);
int accel_dma_memset(struct accel_ctx *ctx, const struct accel_memset *args);

unsigned int accel_dma_timeout_ms(void);
int accel_xfer_prepare(struct accel_ctx *ctx, const struct accel_submit *args,
		       struct accel_xfer **xfer, struct accel_desc **descs,
		       unsigned int *n);
void accel_xfer_release(struct accel_device *adev, struct accel_xfer *xfer);

/* accel_queue.c */
int accel_engines_init(struct accel_device *adev);
void accel_engines_fini(struct accel_device *adev);
void accel_engine_irq(struct accel_device *adev, u32 queue);
void accel_engines_error_irq(struct accel_device *adev);
int accel_queue_create(struct accel_ctx *ctx, struct accel_queue_create *args);
int accel_queue_destroy(struct accel_ctx *ctx, u32 handle);
void accel_queues_fini(struct accel_ctx *ctx);
int accel_queue_submit(struct accel_ctx *ctx, struct accel_submit *args);
int accel_queue_run_sync(struct accel_ctx *ctx, struct accel_submit *args);
int accel_queue_wait(struct accel_ctx *ctx, const struct accel_wait *args);
__poll_t accel_poll(struct file *file, poll_table *wait);

/* accel_debugfs.c */
void accel_debugfs_register(void);
void accel_debugfs_unregister(void);
void accel_debugfs_init(struct accel_device *adev);
void accel_debugfs_fini(struct accel_device *adev);

/* accel_hw.c */
int accel_hw_init(struct accel_device *adev);
void accel_hw_reset(struct accel_device *adev);

/* accel_irq.c */
int accel_irq_init(struct accel_device *adev);
void accel_irq_fini(struct accel_device *adev);

/* accel_ioctl.c */
long accel_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

/* accel_sysfs.c */
extern const struct attribute_group *accel_groups[];

#endif /* __ACCEL_DRV_H__ */
