// SPDX-License-Identifier: MIT
/*
 * Hazard pointers: a reference that costs the thread taking it no atomic
 * read-modify-write. Pools are looked up by every allocation and free and
 * destroyed rarely, so their lookups hold them this way (handles.c); a
 * counted reference costs those calls about 10% of their time.
 *
 * Each thread has one record, and in it one published pointer: a lookup
 * made while the thread already holds one (a call inside a call) counts a
 * reference instead. The ordering is Dekker's: a holder publishes its
 * pointer, then reads whether the object is still live; an ender marks the
 * object dead, then reads the records. Both sides need a full barrier
 * between their store and their load. The ender's side is rare, so it pays
 * for both: membarrier(2) runs a barrier on every thread of the process,
 * and the holder's side is a compiler barrier only. Where the kernel
 * refuses membarrier(2) (old kernels, seccomp), no thread gets a record and
 * every lookup counts.
 *
 * Records are allocated once, kept on a list that is never shortened, and
 * given to a new thread when theirs exits.
 */
#include <linux/membarrier.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/internal.h"

ACCEL_TLS_HOT struct accel_hazard *accel_hazard_mine;
/* the thread gave its record back: it is exiting, and counts from now on */
static ACCEL_TLS_HOT bool exiting;

static _Atomic(struct accel_hazard *) records;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static bool membarrier_ok;

/* At thread exit: the record, empty, for another thread. */
static void record_give_back(void *p)
{
	struct accel_hazard *r = p;

	accel_hazard_mine = NULL;
	/*
	 * A call from a later destructor round counts its reference: a record
	 * claimed now would be given back by no one.
	 */
	exiting = true;
	atomic_store_explicit(&r->held, NULL, memory_order_relaxed);
	atomic_store_explicit(&r->taken, false, memory_order_release);
}

static void hazard_init(void)
{
	membarrier_ok = !pthread_key_create(&exit_key, record_give_back) &&
			!syscall(__NR_membarrier,
				 MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
}

static struct accel_hazard *record_reuse(void)
{
	for (struct accel_hazard *r = atomic_load(&records); r; r = r->next) {
		bool taken = false;

		if (atomic_compare_exchange_strong(&r->taken, &taken, true))
			return r;
	}
	return NULL;
}

static struct accel_hazard *record_new(void)
{
	struct accel_hazard *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	atomic_store(&r->taken, true);
	r->next = atomic_load(&records);
	while (!atomic_compare_exchange_weak(&records, &r->next, r))
		;
	return r;
}

struct accel_hazard *accel_hazard_claim(void)
{
	struct accel_hazard *r;

	pthread_once(&once, hazard_init);
	if (!membarrier_ok || exiting)
		return NULL;
	r = record_reuse();
	if (!r)
		r = record_new();
	if (!r)
		return NULL;
	if (pthread_setspecific(exit_key, r)) {
		record_give_back(r);
		return NULL;
	}
	accel_hazard_mine = r;
	return r;
}

void accel_hazard_sync(void)
{
	pthread_once(&once, hazard_init);
	/* no record exists without it: there is nothing to make visible */
	if (membarrier_ok)
		syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
}

bool accel_hazard_held(const void *p)
{
	for (struct accel_hazard *r = atomic_load(&records); r; r = r->next)
		if (atomic_load_explicit(&r->held, memory_order_acquire) == p)
			return true;
	return false;
}
