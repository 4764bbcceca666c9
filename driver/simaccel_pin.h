/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: user memory pinned for the device.
 */
#ifndef __SIMACCEL_PIN_H__
#define __SIMACCEL_PIN_H__

#include <linux/dma-direction.h>
#include <linux/scatterlist.h>

#include "simaccel_dma.h"
#include "simaccel_drv.h"

/**
 * struct simaccel_pin - pages of a user range, pinned and mapped for DMA
 * @sgt: the DMA mapping; byte 0 of its DMA stream is the first page's
 * @offset: where the range starts in the first page
 * @size: bytes of the range
 * @pages: the pinned pages
 * @npages: how many
 * @user: the user charged for them (RLIMIT_MEMLOCK), held
 * @dir: DMA_TO_DEVICE for memory the device only reads
 * @sdev: the device it is mapped for; NULL until it is
 * @dma: the mapping's tracking, for removal
 */
struct simaccel_pin {
	struct sg_table sgt;
	u64 offset;
	u64 size;
	struct page **pages;
	unsigned long npages;
	struct user_struct *user;
	enum dma_data_direction dir;
	struct simaccel_device *sdev;
	struct simaccel_dma_map dma;
};

struct simaccel_pin *simaccel_pin_user(u64 user_addr, u64 size, bool read_only);
int simaccel_pin_map(struct simaccel_device *sdev, struct simaccel_pin *pin);
void simaccel_unpin(struct simaccel_pin *pin);

#endif /* __SIMACCEL_PIN_H__ */
