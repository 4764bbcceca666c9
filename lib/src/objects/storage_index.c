// SPDX-License-Identifier: MIT
/*
 * The storages whose bytes the library owns, so that a pointer into them
 * coming back from outside (a CUDA array interface) finds the storage it
 * lies in, and the view made from it holds a reference, as Numba's
 * as_cuda_array does on its producer.
 */
#include "objects/object.h"

static pthread_mutex_t index_lock = PTHREAD_MUTEX_INITIALIZER;
static struct storage *index_head;

void storage_index_add(struct storage *st)
{
	if (!st->ptr || !st->bytes)
		return;
	pthread_mutex_lock(&index_lock);
	st->index_prev = NULL;
	st->index_next = index_head;
	if (index_head)
		index_head->index_prev = st;
	index_head = st;
	st->indexed = true;
	pthread_mutex_unlock(&index_lock);
}

void storage_index_remove(struct storage *st)
{
	pthread_mutex_lock(&index_lock);
	if (st->indexed) {
		if (st->index_prev)
			st->index_prev->index_next = st->index_next;
		else
			index_head = st->index_next;
		if (st->index_next)
			st->index_next->index_prev = st->index_prev;
		st->indexed = false;
	}
	pthread_mutex_unlock(&index_lock);
}

/* A reference unless the last one is gone (its bytes are being freed). */
static bool get_if_live(struct storage *st)
{
	unsigned int n = atomic_load(&st->refs);

	while (n)
		if (atomic_compare_exchange_weak(&st->refs, &n, n + 1))
			return true;
	return false;
}

struct storage *storage_index_find(const void *ptr)
{
	uintptr_t p = (uintptr_t)ptr;
	struct storage *st;

	pthread_mutex_lock(&index_lock);
	for (st = index_head; st; st = st->index_next)
		if (p - (uintptr_t)st->ptr < st->bytes &&
		    get_if_live(st))
			break;
	pthread_mutex_unlock(&index_lock);
	return st;
}
