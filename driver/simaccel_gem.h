/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: buffers as GEM objects, and the VRAM range allocator.
 */
#ifndef __SIMACCEL_GEM_H__
#define __SIMACCEL_GEM_H__

#include <drm/drm_gem.h>
#include <drm/drm_mm.h>

#include "simaccel_drv.h"

/**
 * struct simaccel_bo - a buffer
 * @base: the GEM object; its size is @node's, rounded up to pages
 * @node: the VRAM range, in sdev->vram_mm
 * @kind: DRM_SIMACCEL_BO_*
 */
struct simaccel_bo {
	struct drm_gem_object base;
	struct drm_mm_node node;
	u32 kind;
};

static inline struct simaccel_bo *to_simaccel_bo(struct drm_gem_object *obj)
{
	return container_of(obj, struct simaccel_bo, base);
}

int simaccel_vram_init(struct simaccel_device *sdev);
void simaccel_gem_show_fdinfo(struct drm_printer *p, struct drm_file *file);
int simaccel_bo_create_ioctl(struct drm_device *drm, void *data,
			     struct drm_file *file);

#endif /* __SIMACCEL_GEM_H__ */
