/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: sharing buffers as dma-bufs (PRIME).
 */
#ifndef __SIMACCEL_PRIME_H__
#define __SIMACCEL_PRIME_H__

#include <drm/drm_gem.h>

#include "simaccel_drv.h"

struct dma_buf *simaccel_prime_export(struct drm_gem_object *obj, int flags);
int simaccel_prime_handle_to_fd(struct drm_device *drm, struct drm_file *file,
				u32 handle, u32 flags, int *fd);
struct drm_gem_object *simaccel_prime_import(struct drm_device *drm,
					     struct dma_buf *dma_buf);
struct simaccel_bo;

int simaccel_prime_init(struct simaccel_device *sdev);
void simaccel_prime_revoke_importers(struct simaccel_device *sdev);
void simaccel_prime_bo_idle(struct simaccel_bo *bo);
bool simaccel_prime_bo_reach(struct simaccel_bo *bo);
void simaccel_prime_bo_left(struct simaccel_bo *bo);
struct drm_gem_object *
simaccel_prime_import_sg_table(struct drm_device *drm,
			       struct dma_buf_attachment *attach,
			       struct sg_table *sgt);

#endif /* __SIMACCEL_PRIME_H__ */
