/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: DMA mappings that must not outlive the device's binding.
 */
#ifndef __SIMACCEL_DMA_H__
#define __SIMACCEL_DMA_H__

#include <linux/list.h>

#include "simaccel_drv.h"

/**
 * struct simaccel_dma_map - a DMA mapping of system memory for the device
 * @link: in sdev->dma_maps while tracked
 * @unmap: undoes the mapping
 * @live: the mapping exists
 */
struct simaccel_dma_map {
	struct list_head link;
	void (*unmap)(struct simaccel_dma_map *map);
	bool live;
};

int simaccel_dma_init(struct simaccel_device *sdev);
void simaccel_dma_track(struct simaccel_device *sdev,
			struct simaccel_dma_map *map,
			void (*unmap)(struct simaccel_dma_map *map));
void simaccel_dma_untrack(struct simaccel_device *sdev,
			  struct simaccel_dma_map *map);
void simaccel_dma_revoke_all(struct simaccel_device *sdev);

#endif /* __SIMACCEL_DMA_H__ */
