// SPDX-License-Identifier: MIT
/*
 * The best-fit index of free blocks: exact size classes behind a two-level
 * bitmap for the sizes most requests have, a treap for the rest.
 */
#include <string.h>

#include "pool/pool.h"

void pool_index_init(struct pool_index *ix, size_t granule)
{
	memset(ix, 0, sizeof(*ix));
	ix->shift = (unsigned int)__builtin_ctzll(granule);
	ix->seed = 0x9e3779b9u;
}

static size_t class_of(const struct pool_index *ix, size_t size)
{
	return size >> ix->shift;
}

static bool in_classes(const struct pool_index *ix, size_t size)
{
	return class_of(ix, size) < POOL_CLASSES;
}

/* ------------------------------------------------------------------ */
/* Exact classes */

static void class_insert(struct pool_index *ix, struct pool_block *b)
{
	size_t c = class_of(ix, b->size);

	b->left = NULL;
	b->right = ix->heads[c];
	if (b->right)
		b->right->left = b;
	ix->heads[c] = b;
	ix->bits[c / 64] |= 1ull << (c % 64);
	ix->summary |= 1ull << (c / 64);
}

static void class_remove(struct pool_index *ix, struct pool_block *b)
{
	size_t c = class_of(ix, b->size);

	if (b->left)
		b->left->right = b->right;
	else
		ix->heads[c] = b->right;
	if (b->right)
		b->right->left = b->left;
	if (!ix->heads[c]) {
		ix->bits[c / 64] &= ~(1ull << (c % 64));
		if (!ix->bits[c / 64])
			ix->summary &= ~(1ull << (c / 64));
	}
}

/* The lowest non-empty class >= @c, or POOL_CLASSES. */
static size_t class_at_least(const struct pool_index *ix, size_t c)
{
	size_t w = c / 64;
	uint64_t word = ix->bits[w] & (~0ull << (c % 64));
	uint64_t rest;

	if (word)
		return w * 64 + (size_t)__builtin_ctzll(word);
	rest = w + 1 < 64 ? ix->summary & (~0ull << (w + 1)) : 0;
	if (!rest)
		return POOL_CLASSES;
	w = (size_t)__builtin_ctzll(rest);
	return w * 64 + (size_t)__builtin_ctzll(ix->bits[w]);
}

/* ------------------------------------------------------------------ */
/* The treap of large blocks, ordered by (size, addr) */

static bool before(const struct pool_block *a, const struct pool_block *b)
{
	return a->size < b->size || (a->size == b->size && a->addr < b->addr);
}

static uint32_t next_prio(struct pool_index *ix)
{
	uint32_t x = ix->seed;	/* xorshift32 */

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	ix->seed = x;
	return x;
}

static struct pool_block *rotate_right(struct pool_block *t)
{
	struct pool_block *l = t->left;

	t->left = l->right;
	l->right = t;
	return l;
}

static struct pool_block *rotate_left(struct pool_block *t)
{
	struct pool_block *r = t->right;

	t->right = r->left;
	r->left = t;
	return r;
}

static struct pool_block *treap_insert(struct pool_block *t,
				       struct pool_block *b)
{
	if (!t)
		return b;
	if (before(b, t)) {
		t->left = treap_insert(t->left, b);
		if (t->left->prio > t->prio)
			t = rotate_right(t);
	} else {
		t->right = treap_insert(t->right, b);
		if (t->right->prio > t->prio)
			t = rotate_left(t);
	}
	return t;
}

/* Join two treaps whose keys are all ordered, a before b. */
static struct pool_block *treap_join(struct pool_block *a,
				     struct pool_block *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (a->prio > b->prio) {
		a->right = treap_join(a->right, b);
		return a;
	}
	b->left = treap_join(a, b->left);
	return b;
}

static struct pool_block *treap_remove(struct pool_block *t,
				       struct pool_block *b)
{
	if (t == b)
		return treap_join(t->left, t->right);
	if (before(b, t))
		t->left = treap_remove(t->left, b);
	else
		t->right = treap_remove(t->right, b);
	return t;
}

static struct pool_block *treap_lower_bound(struct pool_block *t, size_t size)
{
	struct pool_block *best = NULL;

	while (t) {
		if (t->size >= size) {
			best = t;
			t = t->left;
		} else {
			t = t->right;
		}
	}
	return best;
}

/* ------------------------------------------------------------------ */

void pool_index_insert(struct pool_index *ix, struct pool_block *b)
{
	b->large = !in_classes(ix, b->size);
	if (b->large) {
		b->left = b->right = NULL;
		b->prio = next_prio(ix);
		ix->large = treap_insert(ix->large, b);
	} else {
		class_insert(ix, b);
	}
	ix->count++;
}

void pool_index_remove(struct pool_index *ix, struct pool_block *b)
{
	if (b->large)
		ix->large = treap_remove(ix->large, b);
	else
		class_remove(ix, b);
	ix->count--;
}

struct pool_block *pool_index_best_fit(const struct pool_index *ix,
				       size_t size)
{
	if (in_classes(ix, size)) {
		size_t c = class_at_least(ix, class_of(ix, size));

		if (c < POOL_CLASSES)
			return ix->heads[c];
	}
	return treap_lower_bound(ix->large, size);
}

size_t pool_index_largest(const struct pool_index *ix)
{
	const struct pool_block *t = ix->large;
	size_t w;

	if (t) {
		while (t->right)
			t = t->right;
		return t->size;
	}
	if (!ix->summary)
		return 0;
	w = 63 - (size_t)__builtin_clzll(ix->summary);
	return (w * 64 + 63 - (size_t)__builtin_clzll(ix->bits[w])) << ix->shift;
}
