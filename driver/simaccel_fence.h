/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: the fences users hold, which outlive the device and keep the
 * module.
 */
#ifndef __SIMACCEL_FENCE_H__
#define __SIMACCEL_FENCE_H__

#include <linux/dma-fence.h>

struct simaccel_timeline;
struct simaccel_fence;

struct simaccel_timeline *simaccel_timeline_new(const char *name);
void simaccel_timeline_put(struct simaccel_timeline *tl);

struct simaccel_fence *simaccel_fence_alloc(void);
void simaccel_fence_free(struct simaccel_fence *fence);
struct dma_fence *simaccel_fence_follow(struct simaccel_fence *fence,
					struct simaccel_timeline *tl, u64 seqno,
					struct dma_fence *followed);

#endif /* __SIMACCEL_FENCE_H__ */
