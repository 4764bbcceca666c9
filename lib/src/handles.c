// SPDX-License-Identifier: MIT
/*
 * The set of live events, so that a destroyed or foreign C_Event is
 * reported instead of dereferenced. Open addressing with linear probing.
 */
#include <stdlib.h>

#include "internal.h"

#define TOMBSTONE ((void *)1)

static struct {
	pthread_mutex_t lock;
	void **slots;
	size_t cap, used;	/* used counts tombstones too */
} set = { .lock = PTHREAD_MUTEX_INITIALIZER };

static size_t slot_of(const void *p, size_t cap)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 20) & (cap - 1);
}

/* Rehash into a table a quarter full of live entries, dropping tombstones. */
static bool rehash(void)
{
	size_t live = 1, cap = 256;
	void **slots;

	for (size_t i = 0; i < set.cap; i++)
		live += set.slots[i] && set.slots[i] != TOMBSTONE;
	while (cap < live * 4)
		cap *= 2;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return false;
	set.used = 0;
	for (size_t i = 0; i < set.cap; i++) {
		size_t j;

		if (!set.slots[i] || set.slots[i] == TOMBSTONE)
			continue;
		for (j = slot_of(set.slots[i], cap); slots[j]; j = (j + 1) & (cap - 1))
			;
		slots[j] = set.slots[i];
		set.used++;
	}
	free(set.slots);
	set.slots = slots;
	set.cap = cap;
	return true;
}

bool accel_handle_add(void *p)
{
	size_t i;
	bool ok = true;

	pthread_mutex_lock(&set.lock);
	if ((set.used + 1) * 2 > set.cap)
		ok = rehash();
	if (ok) {
		for (i = slot_of(p, set.cap); set.slots[i] && set.slots[i] != TOMBSTONE;
		     i = (i + 1) & (set.cap - 1))
			;
		if (!set.slots[i])
			set.used++;
		set.slots[i] = p;
	}
	pthread_mutex_unlock(&set.lock);
	return ok;
}

static size_t find(const void *p)
{
	if (!set.cap)
		return SIZE_MAX;
	for (size_t i = slot_of(p, set.cap); set.slots[i]; i = (i + 1) & (set.cap - 1))
		if (set.slots[i] == p)
			return i;
	return SIZE_MAX;
}

bool accel_handle_live(const void *p)
{
	bool live;

	pthread_mutex_lock(&set.lock);
	live = find(p) != SIZE_MAX;
	pthread_mutex_unlock(&set.lock);
	return live;
}

bool accel_handle_remove(const void *p)
{
	size_t i;

	pthread_mutex_lock(&set.lock);
	i = find(p);
	if (i != SIZE_MAX)
		set.slots[i] = TOMBSTONE;
	pthread_mutex_unlock(&set.lock);
	return i != SIZE_MAX;
}
