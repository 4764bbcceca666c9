/* SPDX-License-Identifier: MIT */
/*
 * The caching allocator's building blocks: blocks and chunks, the best-fit
 * index of free blocks, and the map from addresses to live blocks. None of
 * them locks; their owner (an arena) does.
 */
#ifndef ACCEL_POOL_H
#define ACCEL_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pool_arena;

/* A piece of device memory the pool took from the backend. */
struct pool_chunk {
	uintptr_t addr;
	size_t size;
	struct pool_arena *arena;	/* owner; NULL while shared */
	struct pool_block *first;	/* lowest block */
	struct pool_chunk *prev, *next;	/* in the owner's list */
};

enum block_state { BLOCK_FREE, BLOCK_USED, BLOCK_PENDING };

/*
 * A block: a free or used piece of a chunk. Blocks of a chunk are linked in
 * address order, so that a freed block merges with free neighbours; a chunk
 * is idle when its first block is free and alone. One cache line.
 */
struct pool_block {
	uintptr_t addr;
	size_t size;			/* a multiple of the granule */
	size_t requested;		/* what the caller asked for, while used */
	struct pool_block *prev, *next;	/* address neighbours */
	/* in the free index: a class list, or the tree of large blocks */
	struct pool_block *left, *right;
	uint32_t prio;			/* tree priority */
	uint8_t state;
	bool large;			/* in the tree, not a class list */
} __attribute__((aligned(64)));

/*
 * Free blocks by size. Sizes below POOL_CLASSES granules have one exact
 * class each, found through a two-level bitmap in O(1); larger ones sit in
 * a treap ordered by (size, address), found in O(log n). Either way the
 * block returned is the smallest that fits: best fit.
 */
#define POOL_CLASSES 4096

struct pool_index {
	unsigned int shift;			/* log2 of the granule */
	uint32_t seed;				/* treap priorities */
	uint64_t summary;			/* bit w: bits[w] != 0 */
	uint64_t bits[POOL_CLASSES / 64];	/* bit c: heads[c] != NULL */
	struct pool_block *heads[POOL_CLASSES];
	struct pool_block *large;		/* treap root */
	size_t count;
};

void pool_index_init(struct pool_index *ix, size_t granule);
void pool_index_insert(struct pool_index *ix, struct pool_block *b);
void pool_index_remove(struct pool_index *ix, struct pool_block *b);
/* the smallest free block of at least @size bytes, or NULL */
struct pool_block *pool_index_best_fit(const struct pool_index *ix,
				       size_t size);
/* the largest free block's size, 0 if none */
size_t pool_index_largest(const struct pool_index *ix);

/* Live blocks by address: open addressing, linear probing. */
struct pool_map_slot {
	uintptr_t addr;			/* 0: empty */
	struct pool_block *block;
};

struct pool_map {
	struct pool_map_slot *slots;
	size_t mask;		/* capacity - 1; capacity a power of two */
	size_t count;
};

bool pool_map_init(struct pool_map *m);
void pool_map_destroy(struct pool_map *m);
/* false when out of host memory */
bool pool_map_insert(struct pool_map *m, struct pool_block *b);
struct pool_block *pool_map_find(const struct pool_map *m, uintptr_t addr);
void pool_map_remove(struct pool_map *m, struct pool_block *b);

#endif /* ACCEL_POOL_H */
