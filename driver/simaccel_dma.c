// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: DMA mappings that must not outlive the device's binding.
 *
 * Buffers and pinned pages can outlive the binding: a file opened before
 * an unbind keeps its buffers until it is closed. Their DMA mappings must
 * not, since the DMA API forbids a driver to leave mappings of a device it
 * no longer drives (and an IOMMU would keep them reachable). Every mapping
 * of system memory for the device is tracked here; removal undoes those
 * that are left, once the hardware is stopped, and their owners' releases
 * then find nothing to undo.
 */
#include <drm/drm_managed.h>

#include "simaccel_dma.h"

int simaccel_dma_init(struct simaccel_device *sdev)
{
	INIT_LIST_HEAD(&sdev->dma_maps);
	return drmm_mutex_init(&sdev->drm, &sdev->dma_lock);
}

/* @map was just made, inside drm_dev_enter(): removal will undo it. */
void simaccel_dma_track(struct simaccel_device *sdev,
			struct simaccel_dma_map *map,
			void (*unmap)(struct simaccel_dma_map *map))
{
	map->unmap = unmap;
	map->live = true;
	mutex_lock(&sdev->dma_lock);
	list_add_tail(&map->link, &sdev->dma_maps);
	mutex_unlock(&sdev->dma_lock);
}

/* The owner lets go: undo the mapping unless removal did. */
void simaccel_dma_untrack(struct simaccel_device *sdev,
			  struct simaccel_dma_map *map)
{
	mutex_lock(&sdev->dma_lock);
	list_del_init(&map->link);
	if (map->live)
		map->unmap(map);
	map->live = false;
	mutex_unlock(&sdev->dma_lock);
}

/* Removal, with the hardware stopped: undo every mapping left. */
void simaccel_dma_revoke_all(struct simaccel_device *sdev)
{
	struct simaccel_dma_map *map, *next;

	mutex_lock(&sdev->dma_lock);
	list_for_each_entry_safe(map, next, &sdev->dma_maps, link) {
		list_del_init(&map->link);
		map->unmap(map);
		map->live = false;
	}
	mutex_unlock(&sdev->dma_lock);
}
