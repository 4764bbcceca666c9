// SPDX-License-Identifier: MIT
/*
 * Storage: the bytes that memory handles and arrays share, with a
 * reference count, and a lock that keeps an explicit free from pulling
 * them out from under a transfer.
 */
#include <stdlib.h>
#include <string.h>

#include "objects/object.h"

/*
 * A storage's lock is a glibc rwlock, reader-preferring, so that a thread
 * may read-lock one it holds already (a transfer between two views of the
 * same bytes). Such a lock lets readers starve a writer: operations that
 * other threads start back to back keep it read-held, and a free waited for
 * as long as they went on. So a writer announces itself first (@writers),
 * and an operation waits for the writers of every storage it will lock
 * before it takes the first lock; a thread that holds a storage lock
 * already (read or write) never waits (the writer may be waiting for that
 * very lock), and finishes its operation, which is bounded. Readers do not
 * starve either: one waits for at most one write of each storage
 * (@write_gen), however many writers follow.
 */
static _Thread_local unsigned int locks_held;
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_open = PTHREAD_COND_INITIALIZER;

/* The storages an operation locks (two, and what they are views of). */
struct gate {
	struct storage *st[4];
	unsigned int gen[4];
	int n;
};

static void gate_add(struct gate *g, struct storage *st)
{
	for (int depth = 0; st && depth < 2; st = st->backing, depth++) {
		g->st[g->n] = st;
		g->gen[g->n++] = atomic_load(&st->write_gen);
	}
}

/* A writer waits for one of them, and has not written since we looked. */
static bool gate_closed(const struct gate *g)
{
	for (int i = 0; i < g->n; i++)
		if (atomic_load(&g->st[i]->writers) &&
		    atomic_load(&g->st[i]->write_gen) == g->gen[i])
			return true;
	return false;
}

/* Before an operation on @a and @b (or NULL) takes its first lock. */
static void pass_gate(struct storage *a, struct storage *b)
{
	struct gate g = { .n = 0 };

	if (locks_held)
		return;
	gate_add(&g, a);
	gate_add(&g, b);
	if (!gate_closed(&g))
		return;
	pthread_mutex_lock(&gate_lock);
	while (gate_closed(&g))
		pthread_cond_wait(&gate_open, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}

/* The locks of @st and of the storage it lies in if it is a view, into @l. */
static int locks_of(struct storage *st, pthread_rwlock_t **l)
{
	l[0] = &st->lock;
	if (!st->backing)
		return 1;
	l[1] = &st->backing->lock;
	return 2;
}

/*
 * Read-lock @n locks, lowest address first (a lock twice, if it comes
 * twice): every thread takes storages in one order. Readers are preferred,
 * so no order could deadlock, but one order is what lock checkers follow.
 */
static void read_lock_in_order(pthread_rwlock_t **l, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && l[j] < l[j - 1]; j--) {
			pthread_rwlock_t *x = l[j];

			l[j] = l[j - 1];
			l[j - 1] = x;
		}
	for (int i = 0; i < n; i++)
		pthread_rwlock_rdlock(l[i]);
}

/* Read-lock @st, and the storage it lies in if it is a view. */
static void lock_for_reading(struct storage *st)
{
	pthread_rwlock_t *l[2];

	read_lock_in_order(l, locks_of(st, l));
	locks_held++;
}

/* The same for @a and @b at once, each to be let go with read_unlock(). */
static void lock_both_for_reading(struct storage *a, struct storage *b)
{
	pthread_rwlock_t *l[4];
	int n = locks_of(a, l);

	read_lock_in_order(l, n + locks_of(b, l + n));
	locks_held += 2;
}

static void read_unlock(struct storage *st)
{
	locks_held--;
	if (st->backing)
		pthread_rwlock_unlock(&st->backing->lock);
	pthread_rwlock_unlock(&st->lock);
}

/* Read-locked: whether @st, or what it lies in, was freed. */
static bool freed_bytes(const struct storage *st)
{
	return st->freed || (st->backing && st->backing->freed);
}

static accel_status_t freed_error(const char *what)
{
	return accel_handle_error("%s was freed with accel_memory_free()",
				  what);
}

void storage_write_lock(struct storage *st)
{
	atomic_fetch_add(&st->writers, 1);
	pthread_rwlock_wrlock(&st->lock);
	locks_held++;
}

void storage_write_unlock(struct storage *st)
{
	locks_held--;
	pthread_rwlock_unlock(&st->lock);
	atomic_fetch_add(&st->write_gen, 1);
	atomic_fetch_sub(&st->writers, 1);
	pthread_mutex_lock(&gate_lock);
	pthread_cond_broadcast(&gate_open);
	pthread_mutex_unlock(&gate_lock);
}

static accel_status_t device_of(int dev_id, struct accel_device **dev)
{
	struct accel_device_id d = { dev_id };

	*dev = accel_device_lookup(&d);
	return *dev ? ACCEL_SUCCESS : ACCEL_FAILED;
}

static struct storage *storage_new(int dev_id, enum storage_kind kind,
				   void *ptr, size_t bytes)
{
	struct storage *st = calloc(1, sizeof(*st));

	if (!st) {
		accel_oom_error("out of host memory for a memory handle");
		return NULL;
	}
	atomic_init(&st->refs, 1);
	pthread_rwlock_init(&st->lock, NULL);
	st->kind = kind;
	st->dev_id = dev_id;
	st->ptr = ptr;
	st->bytes = bytes;
	atomic_init(&st->maps, 0);
	atomic_init(&st->writers, 0);
	atomic_init(&st->write_gen, 0);
	atomic_init(&st->async_devs, 0);
	st->registered_dev = -1;
	return st;
}

/* Where owned bytes of each kind come from. */
static accel_status_t bytes_alloc(int dev_id, enum storage_kind kind, size_t bytes,
			    accel_stream_t stream, void **ptr)
{
	struct accel_device_id d = { dev_id };
	accel_pool_t pool;

	*ptr = NULL;
	switch (kind) {
	case STORAGE_DEVICE:
		if (accel_device_pool(&d, &pool) != ACCEL_SUCCESS)
			return ACCEL_FAILED;
		return accel_pool_allocate(pool, stream, ptr, bytes);
	case STORAGE_UNIFIED:
		return accel_unified_memory_allocate(&d, ptr, bytes);
	case STORAGE_PINNED:
		return accel_host_memory_allocate(&d, ptr, bytes);
	case STORAGE_HOST:
		*ptr = malloc(bytes ? bytes : 1);
		if (!*ptr)
			return accel_oom_error("out of host memory: %zu bytes",
					   bytes);
		return ACCEL_SUCCESS;
	}
	return accel_error("unknown storage kind %d", kind);
}

static accel_status_t bytes_free(struct storage *st)
{
	struct accel_device_id d = { st->dev_id };
	accel_pool_t pool;

	switch (st->kind) {
	case STORAGE_DEVICE:
		if (accel_device_pool(&d, &pool) != ACCEL_SUCCESS)
			return ACCEL_FAILED;
		return accel_pool_deallocate(pool, NULL, st->ptr, st->bytes);
	case STORAGE_UNIFIED:
		return accel_unified_memory_deallocate(&d, st->ptr, st->bytes);
	case STORAGE_PINNED:
		return accel_host_memory_deallocate(&d, st->ptr, st->bytes);
	case STORAGE_HOST:
		free(st->ptr);
		return ACCEL_SUCCESS;
	}
	return accel_error("unknown storage kind %d", st->kind);
}

accel_status_t storage_alloc(int dev_id, enum storage_kind kind, size_t bytes,
		       unsigned int flags, accel_stream_t stream,
		       struct storage **out)
{
	struct accel_device *dev;
	struct storage *st;
	void *ptr = NULL;

	*out = NULL;
	if (dev_id >= 0 && device_of(dev_id, &dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if ((bytes || kind == STORAGE_HOST) &&
	    bytes_alloc(dev_id, kind, bytes, stream, &ptr) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	st = storage_new(dev_id, kind, ptr, bytes);
	if (!st) {
		struct storage tmp = { .kind = kind, .dev_id = dev_id,
				       .ptr = ptr, .bytes = bytes };

		if (ptr)
			bytes_free(&tmp);
		return ACCEL_FAILED;
	}
	st->owned = true;
	st->flags = flags;
	st->alloc_stream = stream;
	storage_index_add(st);
	*out = st;
	return ACCEL_SUCCESS;
}

/*
 * Host memory a cpu device takes may be memory of another device of the
 * library (a cpu device's memory is host memory too): then it must lie in
 * one of that device's allocations (for pool memory, a live block).
 */
static accel_status_t check_other_devices(struct accel_device *dev, void *ptr,
				    size_t bytes)
{
	size_t ids[ACCEL_MAX_DEVICES], n;
	enum accel_kind k;
	bool found = false;

	if (accel_get_device_count(&n) != ACCEL_SUCCESS ||
	    accel_get_device_list(ids) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	for (size_t i = 0; i < n && !found; i++) {
		struct accel_device *other;

		if ((int)ids[i] == dev->id)
			continue;
		if (device_of((int)ids[i], &other) != ACCEL_SUCCESS ||
		    accel_memory_kind_of(other, ptr, bytes, &found,
					 &k) != ACCEL_SUCCESS)
			return ACCEL_FAILED;
	}
	return ACCEL_SUCCESS;
}

/*
 * Pinned memory of a backend whose pinned memory is portable (cuda) is
 * pinned memory of each of its devices, though register_everywhere()
 * registered it with one of them only.
 */
static bool pinned_by_sibling(struct accel_device *dev, void *ptr,
			      size_t bytes)
{
	size_t ids[ACCEL_MAX_DEVICES], n;

	if (!dev->be->pinned_portable ||
	    accel_get_device_count(&n) != ACCEL_SUCCESS ||
	    accel_get_device_list(ids) != ACCEL_SUCCESS)
		return false;
	for (size_t i = 0; i < n; i++) {
		struct accel_device *other;
		enum accel_kind k;
		bool found = false;

		if ((int)ids[i] == dev->id ||
		    device_of((int)ids[i], &other) != ACCEL_SUCCESS ||
		    other->be != dev->be)
			continue;
		if (accel_memory_kind_of(other, ptr, bytes, &found,
					 &k) == ACCEL_SUCCESS &&
		    found && k == ACCEL_KIND_HOST)
			return true;
	}
	return false;
}

/* What a wrapped pointer of @dev is, or why it cannot be wrapped. */
static accel_status_t wrapped_kind(struct accel_device *dev, void *ptr,
			     size_t bytes, enum storage_kind *kind)
{
	enum accel_kind k;
	bool found;

	if (accel_memory_kind_of(dev, ptr, bytes, &found, &k) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (!found && pinned_by_sibling(dev, ptr, bytes)) {
		found = true;
		k = ACCEL_KIND_HOST;
	}
	if (!found) {
		if (!dev->be->device_memory_is_host)
			return accel_error("%p is no memory of %s: wrap device, unified, pinned or registered memory of it",
					   ptr, dev->name);
		*kind = STORAGE_HOST;	/* a cpu device's memory is host memory */
		return check_other_devices(dev, ptr, bytes);
	}
	*kind = k == ACCEL_KIND_DEVICE ? STORAGE_DEVICE :
		k == ACCEL_KIND_UNIFIED ? STORAGE_UNIFIED : STORAGE_PINNED;
	return ACCEL_SUCCESS;
}

accel_status_t storage_wrap(int dev_id, void *ptr, size_t bytes, bool for_array,
		      struct storage **out)
{
	enum storage_kind kind = STORAGE_DEVICE;
	struct accel_device *dev;
	struct storage *st;

	*out = NULL;
	if (device_of(dev_id, &dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (!ptr && bytes)
		return accel_error("cannot wrap NULL with %zu bytes", bytes);
	if (ptr && wrapped_kind(dev, ptr, bytes, &kind) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	st = storage_new(dev_id, kind, ptr, bytes);
	if (!st)
		return ACCEL_FAILED;
	/* pinned memory behind an array interface is mapped memory */
	st->mapped_kind = for_array && kind == STORAGE_PINNED;
	if (kind != STORAGE_DEVICE)
		st->flags = ACCEL_MEMORY_HOST_READ | ACCEL_MEMORY_HOST_WRITE;
	*out = st;
	return ACCEL_SUCCESS;
}

struct storage *storage_host(void *ptr, size_t bytes)
{
	return storage_new(-1, STORAGE_HOST, ptr, bytes);
}

void storage_get(struct storage *st)
{
	atomic_fetch_add_explicit(&st->refs, 1, memory_order_relaxed);
}

/*
 * Wait for the transfers queued on host bytes, by every device that
 * queued one: free() cannot wait on the device's side, nor can a lender
 * (it may reuse the bytes as soon as it is told).
 */
static void wait_async(struct storage *st)
{
	uint64_t devs = atomic_load(&st->async_devs);

	if (devs && (st->kind == STORAGE_HOST || st->lender_release))
		accel_devices_drain(devs);
}

static accel_status_t unregister(struct storage *st)
{
	struct accel_device_id d = { st->registered_dev };
	accel_status_t ret = ACCEL_SUCCESS;

	if (st->bytes)
		ret = accel_host_memory_unregister(&d, st->ptr);
	st->registered_dev = -1;
	st->dev_id = -1;
	st->kind = STORAGE_HOST;
	st->mapped_kind = false;
	return ret;
}

accel_status_t storage_unregister(struct storage *st)
{
	accel_status_t ret;

	storage_write_lock(st);
	if (st->registered_dev < 0)
		ret = accel_error("the array is not registered");
	else
		ret = unregister(st);
	storage_write_unlock(st);
	return ret;
}

/* Give back the bytes, once. Caller holds the write lock or the last ref. */
static accel_status_t release_bytes(struct storage *st)
{
	accel_status_t ret = ACCEL_SUCCESS;

	if (st->freed)
		return ACCEL_SUCCESS;
	st->freed = true;
	storage_index_remove(st);
	if (st->registered_dev >= 0)
		ret = unregister(st);
	if (st->portable_devs && storage_unportable(st) != ACCEL_SUCCESS)
		ret = ACCEL_FAILED;
	wait_async(st);
	if (st->owned && (st->ptr || st->kind == STORAGE_HOST) &&
	    bytes_free(st) != ACCEL_SUCCESS)
		ret = ACCEL_FAILED;
	if (st->lender_release)
		st->lender_release(st->lender);
	return ret;
}

/*
 * The last reference went: the bytes and the storage go. A view's backing
 * stays if its other references went meanwhile and it is mapped (a release
 * racing this one's saw them), and the mapping with it.
 */
static accel_status_t storage_gone(struct storage *st)
{
	accel_status_t ret = release_bytes(st), put;

	if (st->backing && (!storage_put_unmapped(st->backing, &put) ||
			    put != ACCEL_SUCCESS))
		ret = ACCEL_FAILED;
	pthread_rwlock_destroy(&st->lock);
	free(st);
	return ret;
}

accel_status_t storage_put(struct storage *st)
{
	if (atomic_fetch_sub_explicit(&st->refs, 1, memory_order_acq_rel) != 1)
		return ACCEL_SUCCESS;
	return storage_gone(st);
}

/*
 * Whether dropping a reference of @st, which has @refs, drops the last one
 * on mapped bytes: a view's storage holds one reference on its backing,
 * the bytes' last when the backing has no other.
 */
static bool last_on_mapped(struct storage *st, unsigned int refs)
{
	struct storage *own = storage_owner(st);

	return refs == 1 && atomic_load(&own->maps) &&
	       (own == st || atomic_load(&own->refs) == 1);
}

bool storage_put_unmapped(struct storage *st, accel_status_t *ret)
{
	unsigned int refs = atomic_load(&st->refs);

	do {
		if (last_on_mapped(st, refs)) {
			*ret = accel_fail(ACCEL_ERROR_IN_USE, "the memory is mapped: unmap it before releasing its last handle");
			return false;
		}
	} while (!atomic_compare_exchange_weak_explicit(&st->refs, &refs,
							refs - 1,
							memory_order_acq_rel,
							memory_order_relaxed));
	*ret = refs == 1 ? storage_gone(st) : ACCEL_SUCCESS;
	return true;
}

bool storage_last_mapped(struct storage *st)
{
	if (!last_on_mapped(st, atomic_load(&st->refs)))
		return false;
	accel_fail(ACCEL_ERROR_IN_USE, "the memory is mapped: unmap it before releasing its last handle");
	return true;
}

accel_status_t storage_free(struct storage *st)
{
	accel_status_t ret;

	/* a map through a view holds our lock too (storage_use()) */
	storage_write_lock(st);
	if (atomic_load(&storage_owner(st)->maps))
		ret = accel_fail(ACCEL_ERROR_IN_USE, "the memory is mapped: unmap it before freeing it");
	else
		ret = release_bytes(st);
	storage_write_unlock(st);
	return ret;
}

bool storage_is_freed(struct storage *st)
{
	bool freed;

	pass_gate(st, NULL);
	lock_for_reading(st);
	freed = freed_bytes(st);
	read_unlock(st);
	return freed;
}

/* After the gate: read-lock @st, unless it (or what it lies in) was freed. */
static accel_status_t use_past_gate(struct storage *st, const char *what)
{
	lock_for_reading(st);
	if (!freed_bytes(st))
		return ACCEL_SUCCESS;
	storage_done(st);
	return freed_error(what);
}

/*
 * A view's operation holds the storage it lies in too: a free of that
 * waits for the operation, as a free of the view itself would.
 */
accel_status_t storage_use(struct storage *st, const char *what)
{
	pass_gate(st, NULL);
	return use_past_gate(st, what);
}

accel_status_t storage_use_both(struct storage *a, const char *what_a,
			  struct storage *b, const char *what_b)
{
	pass_gate(a, b);
	lock_both_for_reading(a, b);
	if (!freed_bytes(a) && !freed_bytes(b))
		return ACCEL_SUCCESS;
	storage_done(a);
	storage_done(b);
	return freed_error(freed_bytes(a) ? what_a : what_b);
}

void storage_done(struct storage *st)
{
	read_unlock(st);
}

bool storage_on_device(const struct storage *st)
{
	return st->kind == STORAGE_DEVICE || st->kind == STORAGE_UNIFIED;
}
