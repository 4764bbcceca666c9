// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: sharing buffers as dma-bufs (PRIME).
 *
 * HOST buffers are exported as DRM's helpers export shmem: any importer
 * maps their pages. VRAM buffers are exported with their own dma-buf ops:
 * an importer gets the bus addresses of the buffer's range of BAR2, mapped
 * for it with dma_map_resource() (through its IOMMU, if any), so that its
 * DMA reaches this device's VRAM peer to peer. Only simaccel devices may
 * attach to them: other importers expect pages behind a scatterlist. A
 * VRAM buffer is exported only once its clearing is done, since a peer's
 * jobs do not wait for this device's fences.
 *
 * Importing a dma-buf of this very device gives back the buffer itself
 * (another process gets a handle to the same memory: that is IPC). A
 * dma-buf of another device, or another driver, becomes an imported buffer:
 * its attachment's DMA addresses get a device address of system memory
 * here, so that jobs copy to and from it like any buffer; a peer's VRAM
 * buffer so imported is the way to peer-to-peer copies.
 */
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>
#include <drm/drm_prime.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>

#include "simaccel_gem.h"
#include "simaccel_hwq.h"
#include "simaccel_pm.h"
#include "simaccel_prime.h"

/* Woken when a job lets go of a peer's buffer. */
static DECLARE_WAIT_QUEUE_HEAD(simaccel_peer_idle);

/* The largest piece of a VRAM buffer one scatterlist entry describes. */
#define SIMACCEL_PRIME_SEG	SZ_1G

static const struct dma_buf_ops simaccel_vram_dmabuf_ops;

static int simaccel_vram_attach(struct dma_buf *dma_buf,
				struct dma_buf_attachment *attach)
{
	struct drm_gem_object *obj = dma_buf->priv;
	struct device_driver *ours = obj->dev->dev->driver;

	if (!dev_is_pci(attach->dev) || attach->dev->driver != ours)
		return -EOPNOTSUPP;
	return 0;
}

static void simaccel_vram_unmap_sgt(struct device *dev, struct sg_table *sgt,
				    enum dma_data_direction dir)
{
	struct scatterlist *sg;
	unsigned int i;

	for_each_sgtable_dma_sg(sgt, sg, i)
		dma_unmap_resource(dev, sg_dma_address(sg), sg_dma_len(sg), dir,
				   DMA_ATTR_SKIP_CPU_SYNC);
	sg_free_table(sgt);
	kfree(sgt);
}

/* The buffer's BAR range, mapped for the importer, in 1 GiB pieces. */
static struct sg_table *simaccel_vram_map(struct dma_buf_attachment *attach,
					  enum dma_data_direction dir)
{
	struct drm_gem_object *obj = attach->dmabuf->priv;
	struct simaccel_device *sdev = to_simaccel(obj->dev);
	struct simaccel_bo *bo = to_simaccel_bo(obj);
	u64 n = DIV_ROUND_UP(obj->size, SIMACCEL_PRIME_SEG), i;
	struct sg_table *sgt;
	int ret, idx;

	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL_ACCOUNT);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table(sgt, n, GFP_KERNEL_ACCOUNT);
	if (ret) {
		kfree(sgt);
		return ERR_PTR(ret);
	}
	sgt->nents = 0;
	if (!drm_dev_enter(obj->dev, &idx)) {
		simaccel_vram_unmap_sgt(attach->dev, sgt, dir);
		return ERR_PTR(-ENODEV);
	}
	for (i = 0; i < n; i++) {
		struct scatterlist *sg = &sgt->sgl[i];
		u64 off = i * SIMACCEL_PRIME_SEG;
		u64 len = min_t(u64, obj->size - off, SIMACCEL_PRIME_SEG);
		dma_addr_t addr;

		addr = dma_map_resource(attach->dev,
					sdev->vram_bar + bo->node.start + off,
					len, dir, DMA_ATTR_SKIP_CPU_SYNC);
		if (dma_mapping_error(attach->dev, addr)) {
			drm_dev_exit(idx);
			simaccel_vram_unmap_sgt(attach->dev, sgt, dir);
			return ERR_PTR(-EIO);
		}
		sg_dma_address(sg) = addr;
		sg_dma_len(sg) = len;
		sgt->nents++;
	}
	drm_dev_exit(idx);
	return sgt;
}

static void simaccel_vram_unmap(struct dma_buf_attachment *attach,
				struct sg_table *sgt,
				enum dma_data_direction dir)
{
	simaccel_vram_unmap_sgt(attach->dev, sgt, dir);
}

static const struct dma_buf_ops simaccel_vram_dmabuf_ops = {
	.attach = simaccel_vram_attach,
	.map_dma_buf = simaccel_vram_map,
	.unmap_dma_buf = simaccel_vram_unmap,
	.release = drm_gem_dmabuf_release,
	.mmap = drm_gem_dmabuf_mmap,
};

/* drm_gem_object_funcs.export of VRAM buffers */
static struct dma_buf *simaccel_vram_export(struct drm_gem_object *obj,
					    int flags)
{
	struct simaccel_bo *bo = to_simaccel_bo(obj);
	DEFINE_DMA_BUF_EXPORT_INFO(info);

	/*
	 * No wait here: DRM core calls this with its device-wide GEM handle
	 * lock held, where any user's buffer creation would wait behind our
	 * clearing, unkillable. simaccel_prime_handle_to_fd() waited before
	 * it took the lock, and tries again if the handle's buffer changed.
	 */
	if (bo->clear && !dma_fence_is_signaled(bo->clear))
		return ERR_PTR(-EBUSY);
	if (bo->clear && bo->clear->error)
		return ERR_PTR(-EIO);
	info.exp_name = KBUILD_MODNAME;
	info.owner = obj->dev->driver->fops->owner;
	info.ops = &simaccel_vram_dmabuf_ops;
	info.size = obj->size;
	info.flags = flags;
	info.priv = obj;
	info.resv = obj->resv;
	return drm_gem_dmabuf_export(obj->dev, &info);
}

/*
 * A new VRAM buffer is exported once the device has cleared it, which may
 * be queued behind the caller's own work: wait for that, interruptibly and
 * holding nothing. Returns 0, or the wait's error; an unknown handle is DRM
 * core's to refuse.
 */
static int simaccel_prime_wait_exportable(struct drm_file *file, u32 handle)
{
	struct drm_gem_object *obj = drm_gem_object_lookup(file, handle);
	struct simaccel_bo *bo;
	long ret = 0;

	if (!obj)
		return 0;
	bo = to_simaccel_bo(obj);
	/* a failed clearing is the export's to report */
	if (bo->clear)
		ret = dma_fence_wait(bo->clear, true);
	drm_gem_object_put(obj);
	return ret;
}

/**
 * simaccel_prime_handle_to_fd - drm_driver.prime_handle_to_fd
 * @drm: the device
 * @file: the caller's
 * @handle: the buffer's handle
 * @flags: the dma-buf file's flags
 * @fd: where its fd goes
 *
 * DRM core's export, after the wait for the buffer's clearing, which must
 * not happen under DRM core's device-wide GEM handle lock. The export
 * refuses (-EBUSY) a buffer that is not cleared: the caller's other thread
 * closed the handle and a new buffer got it meanwhile; wait for that one.
 */
int simaccel_prime_handle_to_fd(struct drm_device *drm, struct drm_file *file,
				u32 handle, u32 flags, int *fd)
{
	int ret;

	do {
		ret = simaccel_prime_wait_exportable(file, handle);
		if (!ret)
			ret = drm_gem_prime_handle_to_fd(drm, file, handle, flags, fd);
	} while (ret == -EBUSY);
	return ret;
}

/* drm_gem_object_funcs.export: by kind; a USERPTR buffer is the caller's. */
struct dma_buf *simaccel_prime_export(struct drm_gem_object *obj, int flags)
{
	struct simaccel_bo *bo = to_simaccel_bo(obj);

	if (simaccel_bo_is_vram(bo))
		return simaccel_vram_export(obj, flags);
	if (bo->kind == DRM_SIMACCEL_BO_HOST)
		return drm_gem_prime_export(obj, flags);
	return ERR_PTR(-EINVAL);
}

/* drm_driver.gem_prime_import: this device's own buffers come back as such. */
/* This device's import of @dma_buf, referenced, if it has a live one. */
static struct drm_gem_object *
simaccel_prime_cached_import(struct simaccel_device *sdev,
			     struct dma_buf *dma_buf)
{
	struct simaccel_bo *bo;

	lockdep_assert_held(&sdev->import_lock);
	list_for_each_entry(bo, &sdev->imports, import_link)
		if (bo->import_buf == dma_buf &&
		    kref_get_unless_zero(&bo->base.base.refcount))
			return &bo->base.base;
	return NULL;
}

/*
 * One import of a dma-buf per device, whichever of its files import it:
 * DRM core shares an import only within a file, and each import attaches
 * and maps the exporter's memory for this device again (DMA-API debugging
 * refuses more than seven mappings of one page).
 */
static struct drm_gem_object *simaccel_prime_import_once(struct drm_device *drm,
							 struct dma_buf *dma_buf)
{
	struct simaccel_device *sdev = to_simaccel(drm);
	struct drm_gem_object *obj, *cached;

	mutex_lock(&sdev->import_lock);
	cached = simaccel_prime_cached_import(sdev, dma_buf);
	mutex_unlock(&sdev->import_lock);
	if (cached)
		return cached;
	/* not under the lock: a failed import frees, which takes it */
	obj = drm_gem_prime_import(drm, dma_buf);
	if (IS_ERR(obj) || to_simaccel_bo(obj)->kind != DRM_SIMACCEL_BO_IMPORTED)
		return obj;
	mutex_lock(&sdev->import_lock);
	cached = simaccel_prime_cached_import(sdev, dma_buf);
	if (!cached)
		list_add(&to_simaccel_bo(obj)->import_link, &sdev->imports);
	mutex_unlock(&sdev->import_lock);
	if (!cached)
		return obj;
	drm_gem_object_put(obj);
	return cached;
}

struct drm_gem_object *simaccel_prime_import(struct drm_device *drm,
					     struct dma_buf *dma_buf)
{
	struct drm_gem_object *obj = dma_buf->priv;

	if (dma_buf->ops == &simaccel_vram_dmabuf_ops && obj->dev == drm) {
		drm_gem_object_get(obj);
		return obj;
	}
	return simaccel_prime_import_once(drm, dma_buf);
}

/*
 * The exporter's mapping of an imported buffer for this device, undone:
 * the attachment goes too, since exporters that cache their mapping in it
 * (the GEM helpers' do) undo the mapping only when it is detached. The
 * buffer keeps its reference to the dma-buf until it is freed.
 */
static void simaccel_imported_bo_unmap(struct simaccel_dma_map *map)
{
	struct simaccel_bo *bo = container_of(map, struct simaccel_bo, dma);

	dma_buf_unmap_attachment_unlocked(bo->attach, bo->sgt,
					  DMA_BIDIRECTIONAL);
	dma_buf_detach(bo->attach->dmabuf, bo->attach);
	bo->base.base.import_attach = NULL;
	bo->attach = NULL;
	bo->sgt = NULL;
}

int simaccel_prime_init(struct simaccel_device *sdev)
{
	int ret;

	INIT_LIST_HEAD(&sdev->peer_imports);
	INIT_LIST_HEAD(&sdev->imports);
	ret = drmm_mutex_init(&sdev->drm, &sdev->peer_lock);
	return ret ?: drmm_mutex_init(&sdev->drm, &sdev->import_lock);
}

/* @bo, an import, is not on its exporter's list of imports any more. */
static void simaccel_prime_unlist_import(struct simaccel_bo *bo)
{
	if (!bo->peer)
		return;
	mutex_lock(&bo->peer->peer_lock);
	list_del(&bo->peer_link);
	mutex_unlock(&bo->peer->peer_lock);
}

/* A job let go of @bo. */
void simaccel_prime_bo_idle(struct simaccel_bo *bo)
{
	atomic_dec(&bo->active);
}

/**
 * simaccel_prime_bo_reach - a job is about to put @bo on the hardware
 * @bo: a buffer of the job, imported from a peer's VRAM
 *
 * Return: false if the peer is gone: the job must fail instead. Otherwise
 * the peer's removal waits for simaccel_prime_bo_left(), and the peer
 * stays in D0 until then: its VRAM BAR does not decode in D3hot.
 */
bool simaccel_prime_bo_reach(struct simaccel_bo *bo)
{
	if (simaccel_pm_get(bo->peer))
		return false;
	atomic_inc(&bo->on_hardware);
	/* pairs with the barrier in simaccel_prime_revoke_importers() */
	smp_mb__after_atomic();
	if (!READ_ONCE(bo->revoked))
		return true;
	simaccel_prime_bo_left(bo);
	return false;
}

/* The job that reached @bo is off the hardware (its fence signalled). */
void simaccel_prime_bo_left(struct simaccel_bo *bo)
{
	simaccel_pm_put(bo->peer);
	if (atomic_dec_and_test(&bo->on_hardware))
		wake_up_all(&simaccel_peer_idle);
}

/* Revoke every import of this device's VRAM that other devices hold. */
static void simaccel_prime_revoke_all(struct simaccel_device *sdev)
{
	struct simaccel_bo *bo;

	mutex_lock(&sdev->peer_lock);
	list_for_each_entry(bo, &sdev->peer_imports, peer_link)
		WRITE_ONCE(bo->revoked, true);
	mutex_unlock(&sdev->peer_lock);
}

/*
 * An import that a job on the hardware reaches, referenced, and its
 * device too (whose rings the caller looks at); NULL if none.
 */
static struct simaccel_bo *simaccel_prime_busy_import(struct simaccel_device *sdev)
{
	struct simaccel_bo *bo, *busy = NULL;

	mutex_lock(&sdev->peer_lock);
	list_for_each_entry(bo, &sdev->peer_imports, peer_link) {
		if (atomic_read(&bo->on_hardware)) {
			drm_gem_object_get(&bo->base.base);
			drm_dev_get(bo->base.base.dev);
			busy = bo;
			break;
		}
	}
	mutex_unlock(&sdev->peer_lock);
	return busy;
}

/*
 * Removal, after drm_dev_unplug(): no other device reaches this VRAM any
 * more. Removal does not drain the peers' work: their jobs that have not
 * reached the hardware fail when they would (and so do new ones), those on
 * a peer's ring that its device has not reached are made to move nothing
 * there, and it waits only for a job that a peer's device is running: a
 * slice, or its time-out.
 */
void simaccel_prime_revoke_importers(struct simaccel_device *sdev)
{
	struct simaccel_bo *bo;

	simaccel_prime_revoke_all(sdev);
	/* pairs with the barrier in simaccel_prime_bo_reach() */
	smp_mb();
	while ((bo = simaccel_prime_busy_import(sdev))) {
		struct drm_device *importer = bo->base.base.dev;

		simaccel_hwq_revoke_import(to_simaccel(importer), bo);
		wait_event(simaccel_peer_idle, !atomic_read(&bo->on_hardware));
		drm_gem_object_put(&bo->base.base);
		drm_dev_put(importer);
	}
}

static void simaccel_imported_bo_free(struct drm_gem_object *obj)
{
	struct simaccel_device *sdev = to_simaccel(obj->dev);
	struct simaccel_bo *bo = to_simaccel_bo(obj);

	mutex_lock(&sdev->import_lock);
	list_del_init(&bo->import_link);
	mutex_unlock(&sdev->import_lock);
	simaccel_prime_unlist_import(bo);
	simaccel_gem_release_range(sdev, bo);
	/* undoes the mapping and detaches, unless removal did */
	simaccel_dma_untrack(sdev, &bo->dma);
	dma_buf_put(bo->import_buf);
	drm_gem_object_release(obj);
	kfree(bo);
}

static const struct drm_gem_object_funcs simaccel_imported_bo_funcs = {
	.free = simaccel_imported_bo_free,
	.open = simaccel_bo_open,
	.close = simaccel_bo_close,
};

/* drm_driver.gem_prime_import_sg_table: another device's memory. */
struct drm_gem_object *
simaccel_prime_import_sg_table(struct drm_device *drm,
			       struct dma_buf_attachment *attach,
			       struct sg_table *sgt)
{
	struct simaccel_bo *bo;
	int ret;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL_ACCOUNT);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	bo->kind = DRM_SIMACCEL_BO_IMPORTED;
	INIT_LIST_HEAD(&bo->import_link);
	bo->sgt = sgt;
	bo->attach = attach;
	/* the reference drm_gem_prime_import() took, dropped at free */
	bo->import_buf = attach->dmabuf;
	/* the dma-buf, which this buffer holds, holds the exporter */
	if (attach->dmabuf->ops == &simaccel_vram_dmabuf_ops) {
		struct drm_gem_object *exported = attach->dmabuf->priv;

		bo->peer = to_simaccel(exported->dev);
		mutex_lock(&bo->peer->peer_lock);
		list_add_tail(&bo->peer_link, &bo->peer->peer_imports);
		mutex_unlock(&bo->peer->peer_lock);
	}
	bo->base.base.funcs = &simaccel_imported_bo_funcs;
	drm_gem_private_object_init(drm, &bo->base.base, attach->dmabuf->size);
	ret = simaccel_gem_take_host_range(to_simaccel(drm), bo,
					   attach->dmabuf->size);
	if (ret) {
		simaccel_prime_unlist_import(bo);
		drm_gem_object_release(&bo->base.base);
		kfree(bo);
		return ERR_PTR(ret);
	}
	simaccel_dma_track(to_simaccel(drm), &bo->dma,
			   simaccel_imported_bo_unmap);
	simaccel_gem_created(to_simaccel(drm), bo);
	return &bo->base.base;
}
