/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: buffers as GEM objects, their device addresses, and the VRAM
 * range allocator.
 */
#ifndef __SIMACCEL_GEM_H__
#define __SIMACCEL_GEM_H__

#include <drm/drm_gem.h>
#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_mm.h>

#include "simaccel_dma.h"
#include "simaccel_drv.h"
#include "simaccel_pin.h"

/**
 * struct simaccel_bo - a buffer
 * @base: the GEM object; only HOST buffers use its shmem part
 * @kind: DRM_SIMACCEL_BO_*
 * @node: the VRAM range in sdev->vram_mm, or the device-address range in
 *	sdev->host_mm of system memory
 * @dev_addr: device address of byte 0
 * @size: bytes addressable from @dev_addr
 * @sgt: HOST, USERPTR, IMPORTED: the DMA mapping of the memory
 * @pin: USERPTR: the pinned user pages
 * @quota: VRAM: the user it is charged to, for @size bytes
 * @clear: VRAM: the fence of the device's clearing of it, or NULL
 * @active: jobs that use it and have not finished, for fdinfo
 * @on_hardware: IMPORTED from a peer's VRAM: jobs on the hardware that
 *	reach it, which the peer's removal waits for
 * @dma: HOST, IMPORTED: @sgt's tracking, for removal
 * @attach: IMPORTED: the dma-buf attachment @sgt maps; NULL once removal
 *	detached it
 * @import_buf: IMPORTED: the dma-buf, referenced until the buffer is freed
 * @peer: IMPORTED from another simaccel's VRAM: that device, whose removal
 *	revokes this buffer
 * @peer_link: in @peer's peer_imports
 * @import_link: IMPORTED: in its device's imports, one per dma-buf
 * @revoked: the peer is gone: no job may reach this buffer any more
 */
struct simaccel_bo {
	struct drm_gem_shmem_object base;
	u32 kind;
	struct drm_mm_node node;
	u64 dev_addr;
	u64 size;
	struct sg_table *sgt;
	struct simaccel_pin *pin;
	struct simaccel_quota *quota;
	struct dma_fence *clear;
	atomic_t active;
	atomic_t on_hardware;
	struct simaccel_dma_map dma;
	struct dma_buf_attachment *attach;
	struct dma_buf *import_buf;
	struct simaccel_device *peer;
	struct list_head peer_link;
	struct list_head import_link;
	bool revoked;
};

static inline struct simaccel_bo *to_simaccel_bo(struct drm_gem_object *obj)
{
	return container_of(obj, struct simaccel_bo, base.base);
}

static inline bool simaccel_bo_is_vram(const struct simaccel_bo *bo)
{
	return bo->kind == DRM_SIMACCEL_BO_VRAM ||
	       bo->kind == DRM_SIMACCEL_BO_VRAM_MAPPABLE;
}

/**
 * struct simaccel_span - where a resolved device-address range lies
 * @bo: the buffer, referenced
 * @offset: byte offset in the buffer
 */
struct simaccel_span {
	struct simaccel_bo *bo;
	u64 offset;
};

int simaccel_gem_init(struct simaccel_device *sdev);
void simaccel_gem_file_init(struct simaccel_file *sfile);
void simaccel_gem_file_fini(struct simaccel_file *sfile);
bool simaccel_bo_writable(const struct simaccel_bo *bo);
int simaccel_bo_open(struct drm_gem_object *obj, struct drm_file *file);
void simaccel_bo_close(struct drm_gem_object *obj, struct drm_file *file);
int simaccel_gem_take_host_range(struct simaccel_device *sdev,
				 struct simaccel_bo *bo, u64 size);
void simaccel_gem_created(struct simaccel_device *sdev, struct simaccel_bo *bo);
void simaccel_gem_release_range(struct simaccel_device *sdev,
				struct simaccel_bo *bo);
int simaccel_mem_info_ioctl(struct drm_device *drm, void *data,
			    struct drm_file *file);
int simaccel_bo_info_ioctl(struct drm_device *drm, void *data,
			   struct drm_file *file);
int simaccel_gem_resolve(struct simaccel_file *sfile, u64 addr, u64 size,
			 struct simaccel_span *span);
struct drm_gem_object *simaccel_gem_create_object(struct drm_device *drm,
						  size_t size);
void simaccel_gem_show_fdinfo(struct drm_printer *p, struct drm_file *file);
int simaccel_bo_create_ioctl(struct drm_device *drm, void *data,
			     struct drm_file *file);
int simaccel_bo_userptr_ioctl(struct drm_device *drm, void *data,
			      struct drm_file *file);

#endif /* __SIMACCEL_GEM_H__ */
