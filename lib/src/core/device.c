// SPDX-License-Identifier: MIT
/*
 * Devices: every backend is probed once, on first use; the visible devices
 * are numbered in the order ACCEL_VISIBLE_DEVICES gives, or backend by
 * backend.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

static const struct accel_backend *const backends[] = {
	&accel_backend_driver,
	&accel_backend_cuda,
	&accel_backend_cpu,
};
#define NUM_BACKENDS (sizeof(backends) / sizeof(backends[0]))

static struct {
	pthread_once_t once;
	struct accel_device *all[ACCEL_MAX_DEVICES];
	int num_all;
	struct accel_device *visible[ACCEL_MAX_DEVICES];
	int num_visible;
	int backend_devices[NUM_BACKENDS];
	char backend_why[NUM_BACKENDS][256];
	char init_error[256];	/* why no device can be used, or "" */
} state = { .once = PTHREAD_ONCE_INIT };

/*
 * Synchronous calls hold the stream lock as readers while they wait, and
 * readers that overlap would keep a stream's creation or destruction out
 * for ever: writers go first. No reader takes it twice, and the work a
 * reader waits for never needs the lock, so this cannot deadlock.
 */
static void init_stream_lock(pthread_rwlock_t *lock)
{
	pthread_rwlockattr_t attr;

	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr,
				      PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(lock, &attr);
	pthread_rwlockattr_destroy(&attr);
}

struct accel_device *accel_device_add(const struct accel_backend *be,
				      int index, void *priv, size_t min_chunk)
{
	struct accel_device *dev;

	if (state.num_all == ACCEL_MAX_DEVICES)
		return NULL;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	dev->id = -1;
	snprintf(dev->name, sizeof(dev->name), "%s:%d", be->name, index);
	dev->be = be;
	dev->priv = priv;
	dev->min_chunk = min_chunk;
	dev->chunk_granule = min_chunk;
	pthread_mutex_init(&dev->reg_lock, NULL);
	init_stream_lock(&dev->stream_lock);
	pthread_mutex_init(&dev->deferred_lock, NULL);
	pthread_mutex_init(&dev->pool_lock, NULL);
	pthread_mutex_init(&dev->default_pool_lock, NULL);
	atomic_init(&dev->pools_cap, SIZE_MAX);
	state.all[state.num_all++] = dev;
	return dev;
}

static int backend_index(const char *name, size_t len)
{
	for (size_t i = 0; i < NUM_BACKENDS; i++)
		if (strlen(backends[i]->name) == len &&
		    !strncmp(backends[i]->name, name, len))
			return (int)i;
	return -1;
}

static void make_visible(struct accel_device *dev)
{
	if (dev->id >= 0)
		return;
	dev->id = state.num_visible;
	state.visible[state.num_visible++] = dev;
}

/* Add the devices one ACCEL_VISIBLE_DEVICES entry names; false on error. */
static bool select_entry(const char *entry, size_t len)
{
	const char *colon = memchr(entry, ':', len);
	size_t name_len = colon ? (size_t)(colon - entry) : len;
	int b = backend_index(entry, name_len);
	bool found = false;

	if (b < 0) {
		snprintf(state.init_error, sizeof(state.init_error),
			 "ACCEL_VISIBLE_DEVICES: '%.*s' is not a backend (accel, cuda, cpu) or a device (backend:N)",
			 (int)len, entry);
		return false;
	}
	if (!state.backend_devices[b]) {
		snprintf(state.init_error, sizeof(state.init_error),
			 "ACCEL_VISIBLE_DEVICES names '%.*s', but backend %s is unavailable: %s",
			 (int)len, entry, backends[b]->name,
			 state.backend_why[b]);
		return false;
	}
	for (int i = 0; i < state.num_all; i++) {
		struct accel_device *dev = state.all[i];

		if (dev->be != backends[b])
			continue;
		if (colon && (strlen(dev->name) != len ||
			      strncmp(dev->name, entry, len)))
			continue;
		make_visible(dev);
		found = true;
	}
	if (!found)
		snprintf(state.init_error, sizeof(state.init_error),
			 "ACCEL_VISIBLE_DEVICES names '%.*s', but backend %s has %d device(s), %s:0 to %s:%d",
			 (int)len, entry, backends[b]->name,
			 state.backend_devices[b], backends[b]->name,
			 backends[b]->name, state.backend_devices[b] - 1);
	return found;
}

static void select_visible(void)
{
	const char *env = getenv("ACCEL_VISIBLE_DEVICES");

	if (!env) {
		for (int i = 0; i < state.num_all; i++)
			make_visible(state.all[i]);
		return;
	}
	while (*env) {
		size_t len = strcspn(env, ",");
		const char *entry = env;

		env += len + (env[len] == ',');
		while (len && (*entry == ' ' || *entry == '\t')) {
			entry++;
			len--;
		}
		while (len && (entry[len - 1] == ' ' || entry[len - 1] == '\t'))
			len--;
		if (len && !select_entry(entry, len))
			return;
	}
}

static void probe_all(void)
{
	for (size_t b = 0; b < NUM_BACKENDS; b++) {
		int before = state.num_all;
		accel_status_t st;

		st = backends[b]->probe(state.backend_why[b],
					sizeof(state.backend_why[b]));
		state.backend_devices[b] = state.num_all - before;
		if (st == ACCEL_SUCCESS && !state.backend_devices[b])
			snprintf(state.backend_why[b],
				 sizeof(state.backend_why[b]), "no devices");
		else if (st == ACCEL_SUCCESS)
			state.backend_why[b][0] = '\0';
	}
	select_visible();
	accel_pools_probed();
}

static bool init(void)
{
	pthread_once(&state.once, probe_all);
	if (state.init_error[0]) {
		accel_fail(ACCEL_ERROR_UNAVAILABLE, "%s", state.init_error);
		return false;
	}
	return true;
}

/* Device @id if it is a visible device's id, else NULL; no error. */
struct accel_device *accel_device_by_id(int id)
{
	return id >= 0 && id < state.num_visible ? state.visible[id] : NULL;
}

struct accel_device *accel_device_lookup(const accel_device_t device)
{
	if (!init())
		return NULL;
	if (!device) {
		accel_error("the device is NULL");
		return NULL;
	}
	if (device->id < 0 || device->id >= state.num_visible) {
		accel_error("device id %d does not exist (%d visible device%s)",
			    device->id, state.num_visible,
			    state.num_visible == 1 ? "" : "s");
		return NULL;
	}
	accel_error_device(state.visible[device->id]);
	return state.visible[device->id];
}

/*
 * Devices whose streams queued an async transfer with a host side that is
 * none of their own allocations: pageable memory to them, which may be
 * pinned or unified memory of another device.
 */
static _Atomic uint64_t host_users;

static uint64_t device_bit(const struct accel_device *dev)
{
	return dev->id >= 0 ? (uint64_t)1 << dev->id : 0;
}

void accel_device_touch(struct accel_device *owner, struct accel_device *run)
{
	uint64_t bit = device_bit(run);

	if (owner != run &&
	    !(atomic_load_explicit(&owner->users, memory_order_relaxed) & bit))
		atomic_fetch_or(&owner->users, bit);
}

void accel_device_touch_host(struct accel_device *run)
{
	uint64_t bit = device_bit(run);

	if (!(atomic_load_explicit(&host_users, memory_order_relaxed) & bit))
		atomic_fetch_or(&host_users, bit);
}

/* Append to @m events recorded now on the busy streams of @dev. */
static accel_status_t mark_streams(struct accel_device *dev, struct accel_mark **m,
			     size_t *n, size_t *cap)
{
	accel_status_t ret = ACCEL_SUCCESS;

	if (!atomic_load_explicit(&dev->nstreams, memory_order_acquire))
		return ACCEL_SUCCESS;
	pthread_rwlock_rdlock(&dev->stream_lock);
	for (struct accel_stream *s = dev->streams; s; s = s->next) {
		void *ev;

		if (*n == *cap) {
			size_t c = *cap ? 2 * *cap : 8;
			struct accel_mark *g = realloc(*m, c * sizeof(*g));

			if (!g) {
				ret = accel_oom_error("out of host memory");
				break;
			}
			*m = g;
			*cap = c;
		}
		if (dev->be->event_create(dev, &ev) != ACCEL_SUCCESS) {
			ret = ACCEL_FAILED;
			break;
		}
		if (dev->be->event_record(dev, s->priv, ev) != ACCEL_SUCCESS) {
			dev->be->event_destroy(dev, ev);
			ret = ACCEL_FAILED;
			break;
		}
		(*m)[(*n)++] = (struct accel_mark){ dev, ev };
	}
	pthread_rwlock_unlock(&dev->stream_lock);
	return ret;
}

struct accel_mark *accel_device_mark(struct accel_device *dev,
				     unsigned int which, size_t *n,
				     accel_status_t *ret)
{
	struct accel_mark *m = NULL;
	uint64_t users = 0;
	size_t cap = 0;

	*n = 0;
	if (which & ACCEL_MARK_USERS)
		users = atomic_load(&dev->users);
	/* every device may have taken such memory for pageable memory */
	if ((which & ACCEL_MARK_USERS) && dev->be->device_memory_is_host)
		which |= ACCEL_MARK_HOST_USERS;
	if (which & ACCEL_MARK_HOST_USERS)
		users |= atomic_load(&host_users);
	users &= ~device_bit(dev);
	*ret = ACCEL_SUCCESS;
	/* no stream anywhere to mark: a free's fast path */
	if (!users &&
	    !atomic_load_explicit(&dev->nstreams, memory_order_acquire))
		return NULL;
	*ret = mark_streams(dev, &m, n, &cap);
	for (int i = 0; *ret == ACCEL_SUCCESS && i < state.num_visible; i++)
		if (users & ((uint64_t)1 << i))
			*ret = mark_streams(state.visible[i], &m, n, &cap);
	if (*ret != ACCEL_SUCCESS || accel_marks_done(m, n)) {
		accel_marks_destroy(m, *n);
		free(m);
		*n = 0;
		return NULL;
	}
	return m;
}

bool accel_marks_done(struct accel_mark *m, size_t *n)
{
	size_t kept = 0;

	for (size_t i = 0; i < *n; i++) {
		struct accel_device *dev = m[i].dev;

		if (dev->be->event_query(dev, m[i].ev) == ACCEL_WARNING)
			m[kept++] = m[i];
		else
			dev->be->event_destroy(dev, m[i].ev);
	}
	*n = kept;
	return !kept;
}

accel_status_t accel_marks_sync(struct accel_mark *m, size_t n)
{
	accel_status_t ret = ACCEL_SUCCESS;

	for (size_t i = 0; i < n; i++)
		if (m[i].dev->be->event_sync(m[i].dev, m[i].ev) != ACCEL_SUCCESS)
			ret = ACCEL_FAILED;
	return ret;
}

void accel_marks_destroy(struct accel_mark *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		m[i].dev->be->event_destroy(m[i].dev, m[i].ev);
}

/* Without memory for marks: one stream after another. */
static void drain_each(struct accel_device *dev)
{
	if (!atomic_load_explicit(&dev->nstreams, memory_order_acquire))
		return;
	pthread_rwlock_rdlock(&dev->stream_lock);
	for (struct accel_stream *s = dev->streams; s; s = s->next)
		dev->be->stream_drain(dev, s->priv);
	pthread_rwlock_unlock(&dev->stream_lock);
}

/*
 * Every stream is marked before any is waited for: waiting for one stream
 * first would let work queued meanwhile on the next one delay the call.
 */
void accel_device_drain_for(struct accel_device *dev, unsigned int which)
{
	struct accel_mark *m;
	size_t n;
	accel_status_t ret;

	m = accel_device_mark(dev, which, &n, &ret);
	if (ret != ACCEL_SUCCESS) {
		uint64_t users = which ? atomic_load(&dev->users) |
			atomic_load(&host_users) : 0;

		drain_each(dev);
		for (int i = 0; i < state.num_visible; i++)
			if (users & ((uint64_t)1 << i))
				drain_each(state.visible[i]);
		return;
	}
	accel_marks_sync(m, n);
	accel_marks_destroy(m, n);
	free(m);
}

void accel_device_drain(struct accel_device *dev)
{
	accel_device_drain_for(dev, ACCEL_MARK_OWN);
}

void accel_devices_drain(uint64_t ids)
{
	struct accel_mark *m = NULL;
	size_t n = 0, cap = 0;

	if (!init())
		return;
	for (int i = 0; i < state.num_visible; i++) {
		if (!(ids & ((uint64_t)1 << i)))
			continue;
		if (mark_streams(state.visible[i], &m, &n, &cap) != ACCEL_SUCCESS)
			drain_each(state.visible[i]);
	}
	accel_marks_sync(m, n);
	accel_marks_destroy(m, n);
	free(m);
}

bool accel_host_of_other_device(const struct accel_device *dev,
				const void *ptr, size_t size)
{
	bool found = false;

	for (int i = 0; !found && i < state.num_visible; i++) {
		struct accel_device *d = state.visible[i];

		if (d == dev)
			continue;
		pthread_mutex_lock(&d->reg_lock);
		found = accel_registry_overlap(&d->host_space, (uintptr_t)ptr,
					       size) != NULL;
		pthread_mutex_unlock(&d->reg_lock);
	}
	return found;
}

accel_status_t accel_get_device_count(size_t *count)
{
	ACCEL_ENTER();
	if (!count)
		return accel_error("count is NULL");
	if (!init())
		return ACCEL_FAILED;
	*count = (size_t)state.num_visible;
	return ACCEL_SUCCESS;
}

accel_status_t accel_get_device_list(size_t *ids)
{
	ACCEL_ENTER();
	if (!ids)
		return accel_error("ids is NULL");
	if (!init())
		return ACCEL_FAILED;
	for (int i = 0; i < state.num_visible; i++)
		ids[i] = (size_t)i;
	return ACCEL_SUCCESS;
}

accel_status_t accel_get_device_name(const accel_device_t device, const char **name)
{
	struct accel_device *dev;

	ACCEL_ENTER();
	if (!name)
		return accel_error("name is NULL");
	dev = accel_device_lookup(device);
	if (!dev)
		return ACCEL_FAILED;
	*name = dev->name;
	return ACCEL_SUCCESS;
}

accel_status_t accel_find_device(const char *name, int *id)
{
	ACCEL_ENTER();
	if (!name || !id)
		return accel_error("%s is NULL", name ? "id" : "name");
	if (!init())
		return ACCEL_FAILED;
	for (int i = 0; i < state.num_visible; i++) {
		const char *n = state.visible[i]->name;
		size_t be_len = strcspn(n, ":");

		if (!strcmp(n, name) ||
		    (strlen(name) == be_len && !strncmp(n, name, be_len))) {
			*id = i;
			return ACCEL_SUCCESS;
		}
	}
	return accel_fail(ACCEL_ERROR_UNAVAILABLE,
			  "no visible device is called '%s'", name);
}

accel_status_t accel_get_backend_info(const char *backend, int *available,
				const char **reason)
{
	int b;

	ACCEL_ENTER();
	if (!backend || !available || !reason)
		return accel_error("%s is NULL", !backend ? "backend" :
				   !available ? "available" : "reason");
	b = backend_index(backend, strlen(backend));
	if (b < 0)
		return accel_error("'%s' is not a backend (accel, cuda, cpu)", backend);
	pthread_once(&state.once, probe_all);
	*available = state.backend_devices[b] > 0;
	*reason = state.backend_why[b];
	return ACCEL_SUCCESS;
}

/*
 * Two passes, as accel_device_drain(): every stream marked, then waited
 * for. Work that failed is reported by the streams that are then idle; a
 * stream busy with later work reports it to a later synchronization.
 */
/* ACCEL_FAILED if work of a stream of @dev failed (reported once) */
static accel_status_t streams_failed(struct accel_device *dev)
{
	accel_status_t ret = ACCEL_SUCCESS;

	pthread_rwlock_rdlock(&dev->stream_lock);
	for (struct accel_stream *s = dev->streams; s; s = s->next)
		if (dev->be->stream_query(dev, s->priv) == ACCEL_FAILED)
			ret = ACCEL_FAILED;
	pthread_rwlock_unlock(&dev->stream_lock);
	return ret;
}

accel_status_t accel_devices_synchronize(uint64_t ids)
{
	struct accel_mark *m = NULL;
	size_t n = 0, cap = 0;
	accel_status_t ret = ACCEL_SUCCESS;

	for (int i = 0; ret == ACCEL_SUCCESS && i < state.num_visible; i++)
		if (ids & ((uint64_t)1 << i))
			ret = mark_streams(state.visible[i], &m, &n, &cap);
	if (ret == ACCEL_SUCCESS)
		ret = accel_marks_sync(m, n);
	accel_marks_destroy(m, n);
	free(m);
	for (int i = 0; ret == ACCEL_SUCCESS && i < state.num_visible; i++)
		if (ids & ((uint64_t)1 << i))
			ret = streams_failed(state.visible[i]);
	return ret;
}

accel_status_t accel_device_synchronize(const accel_device_t device)
{
	struct accel_device *dev;

	ACCEL_ENTER();
	dev = accel_device_lookup(device);
	if (!dev)
		return ACCEL_FAILED;
	if (accel_devices_synchronize(device_bit(dev)) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	accel_pools_synchronized(dev);
	return ACCEL_SUCCESS;
}
