// SPDX-License-Identifier: GPL-2.0
/*
 * accel: transfers, turned into descriptor chains for accel_queue.c.
 *
 * User memory is pinned and mapped for DMA (a scatter-gather list), host
 * allocations give a slice of their DMA runs, device addresses become VRAM
 * offsets and a peer's VRAM a mapping of its BAR; the two sides are then
 * merged into a chain of COPY (or FILL) descriptors. A transfer holds all
 * of that until its work completes.
 *
 * Synchronous copies and fills are work on the context's synchronous queue
 * and a wait; a copy runs in windows of at most ACCEL_XFER_WINDOW bytes.
 */
#include <linux/file.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "accel_drv.h"

#define ACCEL_XFER_WINDOW	(64ull << 20)

static unsigned int dma_timeout_ms = 10000;
module_param(dma_timeout_ms, uint, 0644);
MODULE_PARM_DESC(dma_timeout_ms,
		 "Time DMA may go without progress before its queue is reset (ms)");

unsigned int accel_dma_timeout_ms(void)
{
	return READ_ONCE(dma_timeout_ms);
}

/* One contiguous piece of a transfer: a VRAM offset or a bus address. */
struct accel_seg {
	u64 addr;
	u64 len;
};

/*
 * One side of a window of a transfer: VRAM, a slice of a host allocation's
 * scatter-gather table, or user memory pinned and mapped for the window.
 */
struct accel_side {
	bool vram;
	struct accel_seg *segs;
	unsigned int nsegs;
	struct accel_seg one;	/* the segment of a VRAM or peer side */
	struct page **pages;
	unsigned int npages;
	struct sg_table sgt;
	bool mapped;
	struct accel_device *peer;	/* one->addr maps this peer's BAR */
	enum dma_data_direction dir;
};

/* The DMA segments of @sgt, a freshly mapped table, in @side->segs. */
static int accel_side_sgt(struct accel_side *side, struct sg_table *sgt)
{
	struct scatterlist *sg;
	unsigned int i;

	side->segs = kvmalloc_array(sgt->nents, sizeof(*side->segs), GFP_KERNEL);
	if (!side->segs)
		return -ENOMEM;
	for_each_sgtable_dma_sg(sgt, sg, i) {
		side->segs[i].addr = sg_dma_address(sg);
		side->segs[i].len = sg_dma_len(sg);
	}
	side->nsegs = sgt->nents;
	return 0;
}

/* The index of the DMA run of @bo that holds byte @off. */
static unsigned int accel_bo_seg_at(const struct accel_bo *bo, u64 off)
{
	unsigned int lo = 0, hi = bo->dma_nsegs - 1, mid;

	while (lo < hi) {
		mid = lo + (hi - lo + 1) / 2;
		if (bo->dma_segs[mid].start <= off)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* Bytes [off, off + len) of a host allocation, from its DMA index. */
static int accel_side_host(struct accel_side *side, const struct accel_bo *bo,
			   u64 off, u64 len)
{
	unsigned int first = accel_bo_seg_at(bo, off), last, i;
	const struct accel_dma_seg *seg;
	u64 from, to;

	last = accel_bo_seg_at(bo, off + len - 1);
	side->segs = kvmalloc_array(last - first + 1, sizeof(*side->segs),
				    GFP_KERNEL);
	if (!side->segs)
		return -ENOMEM;
	for (i = first; i <= last; i++) {
		seg = &bo->dma_segs[i];
		from = max(seg->start, off);
		to = min(seg->start + seg->len, off + len);
		side->segs[side->nsegs].addr = seg->addr + from - seg->start;
		side->segs[side->nsegs].len = to - from;
		side->nsegs++;
	}
	return 0;
}

/* Pin and map [uaddr, uaddr + len) of user memory for DMA. */
static int accel_side_user(struct accel_device *adev, struct accel_side *side,
			   u64 uaddr, u64 len, enum dma_data_direction dir)
{
	unsigned int offset = offset_in_page(uaddr);
	u64 npages;
	int pinned, ret;

	if (uaddr + len < uaddr || !access_ok(u64_to_user_ptr(uaddr), len))
		return -EFAULT;
	/* more than the RAM cannot be pinned: fail before the page array */
	npages = DIV_ROUND_UP(offset + len, PAGE_SIZE);
	if (npages > totalram_pages())
		return -ENOMEM;
	side->dir = dir;
	side->pages = kvmalloc_array(npages, sizeof(*side->pages),
				     GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL |
				     __GFP_NOWARN);
	if (!side->pages)
		return -ENOMEM;
	pinned = pin_user_pages_fast(uaddr & PAGE_MASK, (int)npages,
				     dir == DMA_FROM_DEVICE ? FOLL_WRITE : 0,
				     side->pages);
	if (pinned != (int)npages) {
		if (pinned > 0)
			unpin_user_pages(side->pages, pinned);
		return pinned < 0 ? pinned : -EFAULT;
	}
	/* from here on the release unpins them */
	side->npages = npages;
	ret = sg_alloc_table_from_pages(&side->sgt, side->pages, side->npages,
					offset, len, GFP_KERNEL);
	if (ret)
		return ret;
	/*
	 * The same user pages may be mapped by several transfers at once:
	 * skip the implicit CPU syncs, whose cacheline tracking refuses
	 * overlapping mappings, and sync explicitly instead.
	 */
	ret = dma_map_sgtable(&adev->pdev->dev, &side->sgt, dir,
			      DMA_ATTR_SKIP_CPU_SYNC);
	if (ret)
		return ret;
	dma_sync_sgtable_for_device(&adev->pdev->dev, &side->sgt, dir);
	side->mapped = true;
	return accel_side_sgt(side, &side->sgt);
}

static void accel_side_vram(struct accel_side *side, u64 dev_addr, u64 len)
{
	side->vram = true;
	side->one.addr = dev_addr - ACCEL_VRAM_BASE;
	side->one.len = len;
	side->segs = &side->one;
	side->nsegs = 1;
}

/*
 * VRAM of another device, reached through its BAR: peer to peer. The peer
 * counts us as a user of its BAR until the transfer is released, and its
 * removal waits for that. Called with the peer present (its remove_lock
 * held by us or its p2p user count already raised by a caller).
 */
static int accel_side_peer(struct accel_device *adev, struct accel_side *side,
			   struct accel_bo *bo, u64 addr, u64 len,
			   enum dma_data_direction dir)
{
	struct accel_device *peer = bo->adev;
	phys_addr_t phys = accel_vram_phys(peer, addr);
	dma_addr_t dma;

	dma = dma_map_resource(&adev->pdev->dev, phys, len, dir, 0);
	if (dma_mapping_error(&adev->pdev->dev, dma))
		return -EIO;
	atomic_inc(&peer->p2p_users);
	side->dir = dir;
	side->one.addr = dma;
	side->one.len = len;
	side->segs = &side->one;
	side->nsegs = 1;
	side->peer = peer;
	return 0;
}

static void accel_side_release(struct accel_device *adev,
			       struct accel_side *side)
{
	if (side->peer) {
		dma_unmap_resource(&adev->pdev->dev, side->one.addr,
				   side->one.len, side->dir, 0);
		if (atomic_dec_and_test(&side->peer->p2p_users))
			wake_up_all(&side->peer->p2p_wq);
	}
	if (side->segs != &side->one)
		kvfree(side->segs);
	if (side->mapped) {
		dma_sync_sgtable_for_cpu(&adev->pdev->dev, &side->sgt, side->dir);
		dma_unmap_sgtable(&adev->pdev->dev, &side->sgt, side->dir,
				  DMA_ATTR_SKIP_CPU_SYNC);
	}
	if (side->sgt.sgl)
		sg_free_table(&side->sgt);
	if (side->npages)
		unpin_user_pages_dirty_lock(side->pages, side->npages,
					    side->dir == DMA_FROM_DEVICE);
	kvfree(side->pages);
}

/* Merge two segment lists into COPY descriptors; returns their number. */
static unsigned int accel_build_copy(const struct accel_side *src,
				     const struct accel_side *dst,
				     struct accel_desc *descs)
{
	u32 flags = (src->vram ? ACCEL_DESC_SRC_VRAM : 0) |
		    (dst->vram ? ACCEL_DESC_DST_VRAM : 0);
	unsigned int i = 0, j = 0, n = 0;
	u64 soff = 0, doff = 0, len;

	while (i < src->nsegs && j < dst->nsegs) {
		len = min(src->segs[i].len - soff, dst->segs[j].len - doff);
		descs[n].opcode = cpu_to_le32(ACCEL_OP_COPY);
		descs[n].flags = cpu_to_le32(flags);
		descs[n].src = cpu_to_le64(src->segs[i].addr + soff);
		descs[n].dst = cpu_to_le64(dst->segs[j].addr + doff);
		descs[n].len = cpu_to_le64(len);
		n++;
		soff += len;
		doff += len;
		if (soff == src->segs[i].len) {
			i++;
			soff = 0;
		}
		if (doff == dst->segs[j].len) {
			j++;
			doff = 0;
		}
	}
	return n;
}

/* One side of a copy: user memory (@bo NULL) or an allocation of the caller. */
static int accel_side_prepare(struct accel_ctx *ctx, struct accel_side *side,
			      struct accel_bo *bo, u64 addr, u64 len,
			      enum dma_data_direction dir)
{
	if (!bo)
		return accel_side_user(ctx->adev, side, addr, len, dir);
	if (bo->adev != ctx->adev)
		return accel_side_peer(ctx->adev, side, bo, addr, len, dir);
	if (!accel_bo_is_host(bo)) {
		accel_side_vram(side, addr, len);
		return 0;
	}
	if (dir == DMA_FROM_DEVICE && !bo->writable)
		return -EFAULT;
	return accel_side_host(side, bo, addr - accel_bo_addr(bo), len);
}

/* Check a device address range of the caller and hold its allocation. */
static int accel_hold(struct accel_ctx *ctx, u64 addr, u64 size,
		      struct accel_bo **bo)
{
	*bo = accel_ctx_lookup(ctx, addr, size);
	return *bo ? 0 : -EFAULT;
}

static bool accel_copy_flags_valid(u32 flags)
{
	const u32 src = ACCEL_COPY_SRC_USER | ACCEL_COPY_SRC_PEER;
	const u32 dst = ACCEL_COPY_DST_USER | ACCEL_COPY_DST_PEER;

	return !(flags & ~ACCEL_COPY_FLAGS_VALID) &&
	       (flags & src) != src && (flags & dst) != dst;
}

/*
 * Hold one side of a copy: none for user memory, else the allocation that
 * holds the range, looked up in @peer's context for a PEER side. A peer on
 * another device must be VRAM.
 */
static int accel_hold_side(struct accel_ctx *ctx, struct accel_ctx *peer,
			   u64 addr, u64 size, bool user, struct accel_bo **bo)
{
	int ret;

	*bo = NULL;
	if (user)
		return 0;
	ret = accel_hold(peer ? peer : ctx, addr, size, bo);
	if (!ret && (*bo)->adev != ctx->adev && accel_bo_is_host(*bo))
		ret = -EINVAL;
	return ret;
}

/*
 * Check a whole copy before any of it runs: a range the caller does not own
 * fails with nothing moved.
 */
/* Hold both sides of a copy of @size bytes described by @flags. */
static int accel_hold_sides(struct accel_ctx *ctx, struct accel_ctx *peer,
			    u32 flags, u64 dst, u64 src, u64 size,
			    struct accel_bo **dbo, struct accel_bo **sbo)
{
	int ret;

	*dbo = NULL;
	ret = accel_hold_side(ctx, flags & ACCEL_COPY_SRC_PEER ? peer : NULL,
			      src, size, flags & ACCEL_COPY_SRC_USER, sbo);
	if (!ret)
		ret = accel_hold_side(ctx, flags & ACCEL_COPY_DST_PEER ? peer : NULL,
				      dst, size, flags & ACCEL_COPY_DST_USER, dbo);
	return ret;
}

static int accel_copy_check_sides(struct accel_ctx *ctx, struct accel_ctx *peer,
				  const struct accel_copy *args)
{
	struct accel_bo *sbo, *dbo;
	int ret;

	ret = accel_hold_sides(ctx, peer, args->flags, args->dst, args->src,
			       args->size, &dbo, &sbo);
	if (sbo)
		accel_bo_put(sbo);
	if (dbo)
		accel_bo_put(dbo);
	return ret;
}

static int accel_copy_check(struct accel_ctx *ctx, const struct accel_copy *args)
{
	struct accel_ctx *peer;
	struct fd f;
	int ret;

	if (!(args->flags & (ACCEL_COPY_SRC_PEER | ACCEL_COPY_DST_PEER)))
		return accel_copy_check_sides(ctx, NULL, args);
	f = fdget(args->peer_fd);
	if (fd_empty(f))
		return -EBADF;
	peer = accel_file_ctx(fd_file(f));
	ret = peer ? accel_copy_check_sides(ctx, peer, args) : -EINVAL;
	fdput(f);
	return ret;
}

/*
 * Synchronous calls are asynchronous work on the context's own queue and a
 * wait. A copy runs one window at a time, so that at most ACCEL_XFER_WINDOW
 * bytes of user memory are pinned at once.
 */
int accel_dma_copy(struct accel_ctx *ctx, const struct accel_copy *args)
{
	struct accel_submit sub = {
		.op = ACCEL_SUBMIT_COPY,
		.flags = args->flags,
		.peer_fd = args->peer_fd,
	};
	u64 off, len;
	int ret;

	if (!accel_copy_flags_valid(args->flags) || args->pad || args->pad2)
		return -EINVAL;
	if (!args->size)
		return 0;
	if (args->src + args->size - 1 < args->src ||
	    args->dst + args->size - 1 < args->dst)
		return -EFAULT;
	ret = accel_copy_check(ctx, args);
	for (off = 0; !ret && off < args->size; off += len) {
		len = min(args->size - off, ACCEL_XFER_WINDOW);
		sub.dst = args->dst + off;
		sub.src = args->src + off;
		sub.size = len;
		ret = accel_queue_run_sync(ctx, &sub);
	}
	return ret;
}

int accel_dma_memset(struct accel_ctx *ctx, const struct accel_memset *args)
{
	struct accel_submit sub = {
		.op = ACCEL_SUBMIT_MEMSET,
		.dst = args->dst,
		.size = args->size,
		.value = args->value,
	};

	if (args->flags || args->value > 0xff)
		return -EINVAL;
	if (!args->size)
		return 0;
	return accel_queue_run_sync(ctx, &sub);
}

/* A FILL descriptor for every segment of @side. */
static struct accel_desc *accel_build_fill(const struct accel_side *side,
					   u8 value)
{
	struct accel_desc *descs;
	unsigned int i;

	descs = kvmalloc_array(side->nsegs, sizeof(*descs), GFP_KERNEL | __GFP_ZERO);
	for (i = 0; descs && i < side->nsegs; i++) {
		descs[i].opcode = cpu_to_le32(ACCEL_OP_FILL);
		descs[i].flags = cpu_to_le32(side->vram ? ACCEL_DESC_DST_VRAM : 0);
		descs[i].src = cpu_to_le64(value);
		descs[i].dst = cpu_to_le64(side->segs[i].addr);
		descs[i].len = cpu_to_le64(side->segs[i].len);
	}
	return descs;
}

/*
 * Work (accel_queue.c) holds what it needs until it completes:
 * its allocations, its user memory pinned and mapped, and its descriptors.
 */
struct accel_xfer {
	struct accel_side src;
	struct accel_side dst;
	struct accel_bo *sbo;
	struct accel_bo *dbo;
	struct accel_desc *descs;
};

static int accel_xfer_copy_sides(struct accel_ctx *ctx, struct accel_ctx *peer,
				 const struct accel_submit *args,
				 struct accel_xfer *x)
{
	int ret;

	ret = accel_hold_sides(ctx, peer, args->flags, args->dst, args->src,
			       args->size, &x->dbo, &x->sbo);
	if (!ret)
		ret = accel_side_prepare(ctx, &x->src, x->sbo, args->src, args->size,
					 DMA_TO_DEVICE);
	if (!ret)
		ret = accel_side_prepare(ctx, &x->dst, x->dbo, args->dst, args->size,
					 DMA_FROM_DEVICE);
	return ret;
}

/*
 * The peer's device is held (read trylock, see accel_copy_with_peer()) while
 * the transfer registers itself as a user of its BAR; from then on the
 * peer's removal waits for the transfer.
 */
static int accel_xfer_copy_peer(struct accel_ctx *ctx, struct accel_ctx *peer,
				const struct accel_submit *args,
				struct accel_xfer *x)
{
	struct accel_device *padev = peer->adev;
	int ret;

	if (padev == ctx->adev)
		return accel_xfer_copy_sides(ctx, peer, args, x);
	if (!down_read_trylock(&padev->remove_lock))
		return -EBUSY;
	ret = padev->removed ? -ENODEV : accel_xfer_copy_sides(ctx, peer, args, x);
	up_read(&padev->remove_lock);
	return ret;
}

static int accel_xfer_copy(struct accel_ctx *ctx, const struct accel_submit *args,
			   struct accel_xfer *x, unsigned int *n)
{
	struct accel_ctx *peer;
	struct fd f;
	int ret;

	if (!accel_copy_flags_valid(args->flags))
		return -EINVAL;
	if (args->src + args->size - 1 < args->src ||
	    args->dst + args->size - 1 < args->dst)
		return -EFAULT;
	if (args->flags & (ACCEL_COPY_SRC_PEER | ACCEL_COPY_DST_PEER)) {
		f = fdget(args->peer_fd);
		if (fd_empty(f))
			return -EBADF;
		peer = accel_file_ctx(fd_file(f));
		ret = peer ? accel_xfer_copy_peer(ctx, peer, args, x) : -EINVAL;
		fdput(f);
	} else {
		ret = accel_xfer_copy_sides(ctx, NULL, args, x);
	}
	if (ret)
		return ret;
	x->descs = kvmalloc_array(x->src.nsegs + x->dst.nsegs, sizeof(*x->descs),
				  GFP_KERNEL | __GFP_ZERO);
	if (!x->descs)
		return -ENOMEM;
	*n = accel_build_copy(&x->src, &x->dst, x->descs);
	return 0;
}

static int accel_xfer_fill(struct accel_ctx *ctx, const struct accel_submit *args,
			   struct accel_xfer *x, unsigned int *n)
{
	int ret;

	ret = accel_hold(ctx, args->dst, args->size, &x->dbo);
	if (!ret)
		ret = accel_side_prepare(ctx, &x->dst, x->dbo, args->dst, args->size,
					 DMA_FROM_DEVICE);
	if (ret)
		return ret;
	x->descs = accel_build_fill(&x->dst, args->value);
	*n = x->dst.nsegs;
	return x->descs ? 0 : -ENOMEM;
}

/* Prepare the work of @args; on failure accel_xfer_release() undoes it. */
int accel_xfer_prepare(struct accel_ctx *ctx, const struct accel_submit *args,
		       struct accel_xfer **xfer, struct accel_desc **descs,
		       unsigned int *n)
{
	struct accel_xfer *x = kzalloc(sizeof(*x), GFP_KERNEL);
	int ret = 0;

	*xfer = x;
	*n = 0;
	if (!x)
		return -ENOMEM;
	if (args->size && args->op == ACCEL_SUBMIT_COPY)
		ret = accel_xfer_copy(ctx, args, x, n);
	else if (args->size && args->op == ACCEL_SUBMIT_MEMSET)
		ret = accel_xfer_fill(ctx, args, x, n);
	*descs = x->descs;
	return ret;
}

void accel_xfer_release(struct accel_device *adev, struct accel_xfer *x)
{
	if (!x)
		return;
	accel_side_release(adev, &x->dst);
	accel_side_release(adev, &x->src);
	if (x->sbo)
		accel_bo_put(x->sbo);
	if (x->dbo)
		accel_bo_put(x->dbo);
	kvfree(x->descs);
	kfree(x);
}
