// SPDX-License-Identifier: MIT
/*
 * Live blocks by address, for the free path: an open-addressing hash table
 * with linear probing, at most half full, deletion by backward shift (no
 * tombstones, so probes stay short however long the pool lives). Slots
 * hold the address next to the block, so probing touches no block.
 */
#include <stdlib.h>

#include "pool/pool.h"

#define MAP_MIN_CAPACITY 64

static size_t slot_of(const struct pool_map *m, uintptr_t addr)
{
	/* Fibonacci hashing: block addresses share their low bits */
	return (size_t)(((uint64_t)addr * 0x9e3779b97f4a7c15ull) >> 20) &
	       m->mask;
}

bool pool_map_init(struct pool_map *m)
{
	m->slots = calloc(MAP_MIN_CAPACITY, sizeof(*m->slots));
	m->mask = MAP_MIN_CAPACITY - 1;
	m->count = 0;
	return m->slots;
}

void pool_map_destroy(struct pool_map *m)
{
	free(m->slots);
	m->slots = NULL;
}

static void place(struct pool_map *m, struct pool_map_slot s)
{
	size_t i = slot_of(m, s.addr);

	while (m->slots[i].addr)
		i = (i + 1) & m->mask;
	m->slots[i] = s;
}

static bool grow(struct pool_map *m)
{
	struct pool_map_slot *old = m->slots;
	size_t old_cap = m->mask + 1;

	m->slots = calloc(old_cap * 2, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return false;
	}
	m->mask = old_cap * 2 - 1;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].addr)
			place(m, old[i]);
	free(old);
	return true;
}

bool pool_map_insert(struct pool_map *m, struct pool_block *b)
{
	if ((m->count + 1) * 2 > m->mask + 1 && !grow(m))
		return false;
	place(m, (struct pool_map_slot){ b->addr, b });
	m->count++;
	return true;
}

size_t pool_map_index(const struct pool_map *m, uintptr_t addr)
{
	for (size_t i = slot_of(m, addr); m->slots[i].addr;
	     i = (i + 1) & m->mask)
		if (m->slots[i].addr == addr)
			return i;
	return POOL_MAP_NONE;
}

struct pool_block *pool_map_find(const struct pool_map *m, uintptr_t addr)
{
	size_t i = pool_map_index(m, addr);

	return i == POOL_MAP_NONE ? NULL : m->slots[i].block;
}

/* Is @home cyclically in (hole, i]? Then the entry at i may not move to hole. */
static bool stays(size_t home, size_t hole, size_t i)
{
	return hole <= i ? hole < home && home <= i : hole < home || home <= i;
}

void pool_map_remove_at(struct pool_map *m, size_t hole)
{
	for (size_t i = (hole + 1) & m->mask; m->slots[i].addr;
	     i = (i + 1) & m->mask) {
		if (stays(slot_of(m, m->slots[i].addr), hole, i))
			continue;
		m->slots[hole] = m->slots[i];
		hole = i;
	}
	m->slots[hole] = (struct pool_map_slot){ 0 };
	m->count--;
}

void pool_map_remove(struct pool_map *m, struct pool_block *b)
{
	pool_map_remove_at(m, pool_map_index(m, b->addr));
}
