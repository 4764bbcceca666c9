// SPDX-License-Identifier: MIT
/*
 * The handle table: every pool, memory handle, array, stream and event the
 * library hands out is named by a handle value, never by its address, so
 * that a released handle stays refused for the life of the process however
 * malloc reuses memory.
 *
 * A value is generation << 32 | slot index << 4 | kind. A slot's state word
 * holds the generation of the handle it serves, a live bit and a count of
 * the references that calls hold. A lookup takes a reference with one
 * compare-and-swap that also checks the generation and the live bit; ending
 * a handle clears the live bit (so new lookups fail), waits for the
 * references of calls under way to drop, and then moves the slot to the
 * next generation. A slot whose generation would wrap is retired, never
 * reused, so that no value is ever valid twice.
 *
 * Slots live in pages that are allocated once and never freed: a lookup
 * reads them with no lock.
 *
 * A pool's lookup holds its slot by this thread's hazard pointer instead
 * where it can (hazard.c): pools are looked up by every allocation and free,
 * and the compare-and-swap and the decrement cost those calls about 10%.
 * Ending a pool's handle waits for the hazards that hold its slot too.
 */
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "core/internal.h"

_Static_assert(sizeof(uintptr_t) == 8, "handle values need 64 bits");

#define KIND_BITS 4
#define INDEX_BITS 28
#define PAGE_BITS 12
#define PAGE_SLOTS (1u << PAGE_BITS)
#define NPAGES (1u << (INDEX_BITS - PAGE_BITS))

#define LIVE (1ull << 31)
#define REFS (LIVE - 1)

struct slot {
	/* generation << 32 | LIVE | references */
	_Atomic uint64_t state;
	void *obj;
	enum accel_handle_kind kind;
	uint32_t next_free;
};

static _Atomic(struct slot *) pages[NPAGES];

static struct {
	pthread_mutex_t lock;
	uint32_t next_index;	/* slots below it have been used */
	uint32_t free_head;	/* slot index + 1; 0: none */
} table = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint32_t gen_of(uint64_t state)
{
	return (uint32_t)(state >> 32);
}

static struct slot *slot_at(uint32_t index)
{
	struct slot *page = atomic_load_explicit(&pages[index >> PAGE_BITS],
						 memory_order_acquire);

	return page ? &page[index & (PAGE_SLOTS - 1)] : NULL;
}

/* Table lock held: a free slot's index, or false when none can be had. */
static bool take_slot(uint32_t *index)
{
	struct slot *page;

	if (table.free_head) {
		*index = table.free_head - 1;
		table.free_head = slot_at(*index)->next_free;
		return true;
	}
	if (table.next_index >= NPAGES * PAGE_SLOTS)
		return false;
	*index = table.next_index;
	if (!(*index & (PAGE_SLOTS - 1))) {
		page = calloc(PAGE_SLOTS, sizeof(*page));
		if (!page)
			return false;
		atomic_store_explicit(&pages[*index >> PAGE_BITS], page,
				      memory_order_release);
	}
	table.next_index++;
	return true;
}

bool accel_handle_new(enum accel_handle_kind kind, void *obj)
{
	struct slot *s;
	uint32_t index, gen;
	bool ok;

	pthread_mutex_lock(&table.lock);
	ok = take_slot(&index);
	pthread_mutex_unlock(&table.lock);
	if (!ok)
		return false;
	s = slot_at(index);
	gen = gen_of(atomic_load_explicit(&s->state, memory_order_relaxed));
	if (!gen)	/* a slot never used */
		gen = 1;
	s->obj = obj;
	s->kind = kind;
	*(uintptr_t *)obj = (uintptr_t)gen << 32 |
			    (uintptr_t)index << KIND_BITS | kind;
	atomic_store_explicit(&s->state, (uint64_t)gen << 32 | LIVE,
			      memory_order_release);
	return true;
}

/*
 * With @s published as this thread's hazard: its object if it is still the
 * live one of @gen and @kind; else the hazard goes.
 */
static void *hazard_checked(struct slot *s, uint32_t gen,
			    enum accel_handle_kind kind)
{
	uint64_t state = atomic_load_explicit(&s->state, memory_order_acquire);

	if (gen_of(state) == gen && (state & LIVE) && s->kind == kind)
		return s->obj;
	accel_hazard_drop(s);
	return NULL;
}

void *accel_handle_get(const void *value, enum accel_handle_kind kind)
{
	uintptr_t v = (uintptr_t)value;
	uint32_t gen = (uint32_t)(v >> 32);
	struct slot *s;
	uint64_t state;

	if ((v & ((1u << KIND_BITS) - 1)) != kind || !gen)
		return NULL;
	s = slot_at((uint32_t)(v >> KIND_BITS) & ((1u << INDEX_BITS) - 1));
	if (!s)
		return NULL;
	if (kind == ACCEL_HANDLE_POOL && accel_hazard_take(s))
		return hazard_checked(s, gen, kind);
	state = atomic_load_explicit(&s->state, memory_order_relaxed);
	do {
		if (gen_of(state) != gen || !(state & LIVE) ||
		    (state & REFS) == REFS)
			return NULL;
	} while (!atomic_compare_exchange_weak_explicit(&s->state, &state,
							state + 1,
							memory_order_acquire,
							memory_order_relaxed));
	if (s->kind != kind) {	/* a forged value: another kind's slot */
		atomic_fetch_sub_explicit(&s->state, 1, memory_order_release);
		return NULL;
	}
	return s->obj;
}

static struct slot *slot_of(const void *obj)
{
	uintptr_t v = *(const uintptr_t *)obj;

	return slot_at((uint32_t)(v >> KIND_BITS) & ((1u << INDEX_BITS) - 1));
}

void accel_handle_put(const void *obj)
{
	struct slot *s = slot_of(obj);

	/* a call inside a call on the same pool holds a count: either goes */
	if (!accel_hazard_drop(s))
		atomic_fetch_sub_explicit(&s->state, 1, memory_order_release);
}

/*
 * A pool's handle was closed: the caller's own reference is counted from
 * now on, and the hazards published by lookups that raced the close are
 * made visible.
 */
static void close_hazards(struct slot *s)
{
	atomic_fetch_add(&s->state, 1);
	if (!accel_hazard_drop(s))
		atomic_fetch_sub(&s->state, 1);
	accel_hazard_sync();
}

/* Whether calls other than the caller's still hold @s. */
static bool held_by_others(struct slot *s, bool pool)
{
	return (atomic_load_explicit(&s->state, memory_order_acquire) & REFS) > 1 ||
	       (pool && accel_hazard_held(s));
}

void accel_handle_drop(void *objp)
{
	void *obj = *(void **)objp;

	if (obj)
		accel_handle_put(obj);
}

bool accel_handle_close(void *obj)
{
	uint32_t gen = (uint32_t)(*(uintptr_t *)obj >> 32);
	struct slot *s = slot_of(obj);
	uint64_t state = atomic_load_explicit(&s->state, memory_order_relaxed);
	bool pool;

	do {
		if (gen_of(state) != gen || !(state & LIVE))
			return false;
	} while (!atomic_compare_exchange_weak(&s->state, &state,
					       state & ~LIVE));
	pool = s->kind == ACCEL_HANDLE_POOL;
	if (pool)
		close_hazards(s);
	/*
	 * The calls under way finish; ours is the one reference left. Most
	 * take microseconds; a synchronize may take seconds: back off.
	 */
	for (unsigned int spins = 0; held_by_others(s, pool); spins++) {
		if (spins < 64)
			sched_yield();
		else
			nanosleep(&(struct timespec){ .tv_nsec = 100000 }, NULL);
	}
	return true;
}

void accel_handle_reopen(void *obj)
{
	atomic_fetch_or_explicit(&slot_of(obj)->state, LIVE,
				 memory_order_release);
}

void accel_handle_retire(void *obj)
{
	uint32_t gen = (uint32_t)(*(uintptr_t *)obj >> 32), index;
	struct slot *s = slot_of(obj);

	gen++;
	atomic_store_explicit(&s->state, (uint64_t)gen << 32,
			      memory_order_release);
	if (!gen)	/* it would wrap: retired */
		return;
	index = (uint32_t)(*(uintptr_t *)obj >> KIND_BITS) &
		((1u << INDEX_BITS) - 1);
	pthread_mutex_lock(&table.lock);
	s->next_free = table.free_head;
	table.free_head = index + 1;
	pthread_mutex_unlock(&table.lock);
}

bool accel_handle_end(void *obj)
{
	if (!accel_handle_close(obj))
		return false;
	accel_handle_retire(obj);
	return true;
}
