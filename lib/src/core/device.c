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
		C_Status st;

		st = backends[b]->probe(state.backend_why[b],
					sizeof(state.backend_why[b]));
		state.backend_devices[b] = state.num_all - before;
		if (st == C_SUCCESS && !state.backend_devices[b])
			snprintf(state.backend_why[b],
				 sizeof(state.backend_why[b]), "no devices");
		else if (st == C_SUCCESS)
			state.backend_why[b][0] = '\0';
	}
	select_visible();
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

struct accel_device *accel_device_lookup(const C_Device device)
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
	return state.visible[device->id];
}

void accel_device_drain(struct accel_device *dev)
{
	if (!atomic_load_explicit(&dev->nstreams, memory_order_acquire))
		return;
	pthread_rwlock_rdlock(&dev->stream_lock);
	for (struct accel_stream *s = dev->streams; s; s = s->next)
		dev->be->stream_drain(dev, s->priv);
	pthread_rwlock_unlock(&dev->stream_lock);
}

void **accel_device_mark(struct accel_device *dev, size_t *n, C_Status *ret)
{
	void **events = NULL;

	*n = 0;
	*ret = C_SUCCESS;
	if (!atomic_load_explicit(&dev->nstreams, memory_order_acquire))
		return NULL;
	pthread_rwlock_rdlock(&dev->stream_lock);
	events = malloc((size_t)atomic_load(&dev->nstreams) * sizeof(*events));
	if (!events)
		*ret = accel_oom_error("out of host memory");
	for (struct accel_stream *s = dev->streams; events && s; s = s->next) {
		void *ev;

		if (dev->be->event_create(dev, &ev) != C_SUCCESS) {
			*ret = C_FAILED;
			break;
		}
		events[(*n)++] = ev;
		if (dev->be->event_record(dev, s->priv, ev) != C_SUCCESS) {
			*ret = C_FAILED;
			break;
		}
	}
	pthread_rwlock_unlock(&dev->stream_lock);
	if (*ret != C_SUCCESS || accel_events_done(dev, events, n)) {
		for (size_t i = 0; i < *n; i++)
			dev->be->event_destroy(dev, events[i]);
		free(events);
		*n = 0;
		return NULL;
	}
	return events;
}

bool accel_events_done(struct accel_device *dev, void **events, size_t *n)
{
	size_t kept = 0;

	for (size_t i = 0; i < *n; i++) {
		if (dev->be->event_query(dev, events[i]) == C_WARNING)
			events[kept++] = events[i];
		else
			dev->be->event_destroy(dev, events[i]);
	}
	*n = kept;
	return !kept;
}

C_Status accel_get_device_count(size_t *count)
{
	ACCEL_ENTER();
	if (!count)
		return accel_error("count is NULL");
	if (!init())
		return C_FAILED;
	*count = (size_t)state.num_visible;
	return C_SUCCESS;
}

C_Status accel_get_device_list(size_t *ids)
{
	ACCEL_ENTER();
	if (!ids)
		return accel_error("ids is NULL");
	if (!init())
		return C_FAILED;
	for (int i = 0; i < state.num_visible; i++)
		ids[i] = (size_t)i;
	return C_SUCCESS;
}

C_Status accel_get_device_name(const C_Device device, const char **name)
{
	struct accel_device *dev;

	ACCEL_ENTER();
	if (!name)
		return accel_error("name is NULL");
	dev = accel_device_lookup(device);
	if (!dev)
		return C_FAILED;
	*name = dev->name;
	return C_SUCCESS;
}

C_Status accel_find_device(const char *name, int *id)
{
	ACCEL_ENTER();
	if (!name || !id)
		return accel_error("%s is NULL", name ? "id" : "name");
	if (!init())
		return C_FAILED;
	for (int i = 0; i < state.num_visible; i++) {
		const char *n = state.visible[i]->name;
		size_t be_len = strcspn(n, ":");

		if (!strcmp(n, name) ||
		    (strlen(name) == be_len && !strncmp(n, name, be_len))) {
			*id = i;
			return C_SUCCESS;
		}
	}
	return accel_fail(ACCEL_ERROR_UNAVAILABLE,
			  "no visible device is called '%s'", name);
}

C_Status accel_get_backend_info(const char *backend, int *available,
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
	return C_SUCCESS;
}

C_Status accel_device_synchronize(const C_Device device)
{
	struct accel_device *dev;
	C_Status ret = C_SUCCESS;

	ACCEL_ENTER();
	dev = accel_device_lookup(device);
	if (!dev)
		return C_FAILED;
	pthread_rwlock_rdlock(&dev->stream_lock);
	for (struct accel_stream *s = dev->streams; s; s = s->next)
		if (dev->be->stream_sync(dev, s->priv) != C_SUCCESS)
			ret = C_FAILED;
	pthread_rwlock_unlock(&dev->stream_lock);
	return ret;
}
