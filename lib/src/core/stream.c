// SPDX-License-Identifier: MIT
/*
 * Streams and events: the core checks handles and devices, the backend
 * does the work.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

struct accel_stream *accel_stream_lookup(struct accel_device *dev,
					 accel_stream_t stream)
{
	struct accel_stream *s;

	if (!stream) {
		accel_error("the stream is NULL");
		return NULL;
	}
	s = accel_handle_get(stream, ACCEL_HANDLE_STREAM);
	if (!s) {
		accel_handle_error("stream %p is not a live stream (destroyed, or never one)",
				   (void *)stream);
		return NULL;
	}
	if (dev && s->dev != dev) {
		accel_handle_put(s);
		accel_handle_error("stream %p is not a live stream of %s",
				   (void *)stream, dev->name);
		return NULL;
	}
	accel_error_device(s->dev);
	return s;
}

/* @event, referenced, if it is a live event (of @dev, if @same_device) */
static struct accel_event *event_lookup(struct accel_device *dev,
					accel_event_t event, bool same_device)
{
	struct accel_event *e;

	if (!event) {
		accel_error("the event is NULL");
		return NULL;
	}
	e = accel_handle_get(event, ACCEL_HANDLE_EVENT);
	if (!e) {
		accel_handle_error("event %p is not a live event (destroyed, or never one)",
				   (void *)event);
		return NULL;
	}
	if (same_device && e->dev != dev) {
		accel_error("event %p belongs to %s, not %s", (void *)event,
			    e->dev->name, dev->name);
		accel_handle_put(e);
		return NULL;
	}
	return e;
}

/* @device and its live @stream, or NULL with the error set */
static struct accel_stream *device_stream(const accel_device_t device,
					 accel_stream_t stream,
					 struct accel_device **dev)
{
	*dev = accel_device_lookup(device);
	return *dev ? accel_stream_lookup(*dev, stream) : NULL;
}

/* @device and its live @event, or NULL with the error set */
static struct accel_event *device_event(const accel_device_t device, accel_event_t event,
				       struct accel_device **dev)
{
	*dev = accel_device_lookup(device);
	return *dev ? event_lookup(*dev, event, true) : NULL;
}

/*
 * The device a new stream is for, with *stream cleared so that a failure
 * leaves no stale handle; NULL with the error set
 */
static struct accel_device *new_stream_device(const accel_device_t device,
					      accel_stream_t *stream)
{
	struct accel_device *dev = accel_device_lookup(device);

	if (!dev || !stream) {	/* the device first: the error names it */
		if (stream)
			*stream = NULL;
		else if (dev)
			accel_error("stream is NULL");
		return NULL;
	}
	*stream = NULL;
	return dev;
}

/*
 * Every ACCEL_STREAM_DEPTH / ACCEL_CHECKPOINTS operations, an event marks
 * the stream. A call that finds more than ACCEL_STREAM_DEPTH +
 * ACCEL_STREAM_DEPTH / 4 operations not known complete waits for
 * checkpoints until at most ACCEL_STREAM_DEPTH are, as a CUDA launch
 * blocks on a full queue. Each call checks what it queued, whichever
 * thread crossed a checkpoint, so the work a stream holds stays bounded
 * with any number of threads queueing on it, and so do the memory it
 * takes and the wait of a synchronous call behind it.
 */
#define CHECKPOINT_EVERY (ACCEL_STREAM_DEPTH / ACCEL_CHECKPOINTS)
#define MAX_CHECKPOINTS (sizeof(((struct accel_stream *)0)->checkpoint) / \
			 sizeof(struct accel_checkpoint))

/* The first @upto operations of @s are complete. */
static void note_completed(struct accel_stream *s, uint64_t upto)
{
	uint64_t was = atomic_load(&s->completed);

	while (was < upto &&
	       !atomic_compare_exchange_weak(&s->completed, &was, upto))
		;
}

/* The oldest checkpoint of @s into *@c, out of its list. Holds depth_lock. */
static bool take_oldest(struct accel_stream *s, struct accel_checkpoint *c)
{
	if (!s->ncheckpoints)
		return false;
	*c = s->checkpoint[0];
	memmove(s->checkpoint, s->checkpoint + 1,
		--s->ncheckpoints * sizeof(s->checkpoint[0]));
	return true;
}

/* Wait for checkpoint @c, which is out of the list, and let it go. */
static accel_status_t pass_checkpoint(struct accel_stream *s,
				      const struct accel_checkpoint *c)
{
	struct accel_device *dev = s->dev;
	accel_status_t ret = dev->be->event_sync(dev, c->ev);

	dev->be->event_destroy(dev, c->ev);
	if (ret == ACCEL_SUCCESS)
		note_completed(s, c->upto);
	return ret;
}

/* Mark @s after its first @n operations; a full list passes its oldest. */
static accel_status_t add_checkpoint(struct accel_stream *s, uint64_t n)
{
	struct accel_checkpoint c = { .upto = n }, oldest;
	struct accel_device *dev = s->dev;
	bool full = false;
	accel_status_t ret;

	if (dev->be->event_create(dev, &c.ev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	pthread_mutex_lock(&s->depth_lock);
	ret = dev->be->event_record(dev, s->priv, c.ev);
	if (ret == ACCEL_SUCCESS) {
		if (s->ncheckpoints == MAX_CHECKPOINTS)
			full = take_oldest(s, &oldest);
		s->checkpoint[s->ncheckpoints++] = c;
	}
	pthread_mutex_unlock(&s->depth_lock);
	if (ret != ACCEL_SUCCESS) {
		dev->be->event_destroy(dev, c.ev);
		return ret;
	}
	return full ? pass_checkpoint(s, &oldest) : ACCEL_SUCCESS;
}

/* Wait until at most ACCEL_STREAM_DEPTH of the first @n are not complete. */
static accel_status_t drain_to_depth(struct accel_stream *s, uint64_t n)
{
	struct accel_checkpoint c;
	bool any;

	while (atomic_load(&s->completed) + ACCEL_STREAM_DEPTH < n) {
		pthread_mutex_lock(&s->depth_lock);
		any = take_oldest(s, &c);
		pthread_mutex_unlock(&s->depth_lock);
		if (any && pass_checkpoint(s, &c) != ACCEL_SUCCESS)
			return ACCEL_FAILED;
		if (any)
			continue;
		/* the checkpoint it needs is another thread's, not yet recorded */
		if (s->dev->be->stream_sync(s->dev, s->priv) != ACCEL_SUCCESS)
			return ACCEL_FAILED;
		note_completed(s, n);
	}
	return ACCEL_SUCCESS;
}

accel_status_t accel_stream_queued(struct accel_stream *s)
{
	uint64_t n = atomic_fetch_add(&s->queued, 1) + 1;

	if (n % CHECKPOINT_EVERY == 0 && add_checkpoint(s, n) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (atomic_load(&s->completed) + ACCEL_STREAM_DEPTH +
	    ACCEL_STREAM_DEPTH / 4 >= n)
		return ACCEL_SUCCESS;
	return drain_to_depth(s, n);
}

/* The checkpoints of a stream that is going (its work is done). */
static void stream_checkpoints_free(struct accel_stream *s)
{
	for (unsigned int i = 0; i < s->ncheckpoints; i++)
		s->dev->be->event_destroy(s->dev, s->checkpoint[i].ev);
	pthread_mutex_destroy(&s->depth_lock);
}

/* @priv, the backend's stream of @dev, as a new stream handle into *stream */
static accel_status_t stream_add(struct accel_device *dev, void *priv, bool external,
			   accel_stream_t *stream)
{
	struct accel_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return accel_oom_error("out of host memory");
	s->dev = dev;
	s->priv = priv;
	s->external = external;
	pthread_mutex_init(&s->depth_lock, NULL);
	if (!accel_handle_new(ACCEL_HANDLE_STREAM, s)) {
		stream_checkpoints_free(s);
		free(s);
		return accel_oom_error("out of host memory");
	}
	pthread_rwlock_wrlock(&dev->stream_lock);
	s->next = dev->streams;
	dev->streams = s;
	atomic_fetch_add(&dev->nstreams, 1);
	pthread_rwlock_unlock(&dev->stream_lock);
	*stream = (accel_stream_t)s->handle;
	return ACCEL_SUCCESS;
}

accel_status_t accel_stream_create(const accel_device_t device, accel_stream_t *stream)
{
	struct accel_device *dev;
	void *priv;

	ACCEL_ENTER();
	dev = new_stream_device(device, stream);
	if (!dev)
		return ACCEL_FAILED;
	if (dev->be->stream_create(dev, &priv) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (stream_add(dev, priv, false, stream) != ACCEL_SUCCESS) {
		dev->be->stream_destroy(dev, priv);
		return ACCEL_FAILED;
	}
	return ACCEL_SUCCESS;
}

accel_status_t accel_stream_destroy(const accel_device_t device, accel_stream_t stream)
{
	struct accel_device *dev;
	struct accel_stream **pp, *s;

	ACCEL_ENTER();
	s = device_stream(device, stream, &dev);
	if (!s)
		return ACCEL_FAILED;
	/* work being queued on it by other threads is queued first */
	if (!accel_handle_end(s)) {
		accel_handle_put(s);
		return accel_handle_error("stream %p was destroyed by another thread",
					  (void *)stream);
	}
	/*
	 * Its work stays in the device's list until it has completed: the
	 * synchronous calls, synchronizations and frees of other threads
	 * meanwhile wait for it (the ended handle keeps new work off it).
	 */
	dev->be->stream_drain(dev, s->priv);
	pthread_rwlock_wrlock(&dev->stream_lock);
	for (pp = &dev->streams; *pp != s; pp = &(*pp)->next)
		;
	*pp = s->next;
	atomic_fetch_sub(&dev->nstreams, 1);
	pthread_rwlock_unlock(&dev->stream_lock);
	accel_pools_stream_gone(dev, s);
	/* the events that marks and pools recorded on it since the drain */
	dev->be->stream_drain(dev, s->priv);
	stream_checkpoints_free(s);
	if (!s->external)
		dev->be->stream_destroy(dev, s->priv);
	free(s);
	return ACCEL_SUCCESS;
}

accel_status_t accel_stream_query(const accel_device_t device, accel_stream_t stream)
{
	struct accel_device *dev;
	struct accel_stream *s ACCEL_HANDLE_REF = NULL;

	ACCEL_ENTER();
	s = device_stream(device, stream, &dev);
	return s ? dev->be->stream_query(dev, s->priv) : ACCEL_FAILED;
}

accel_status_t accel_stream_synchronize(const accel_device_t device, accel_stream_t stream)
{
	struct accel_device *dev;
	struct accel_stream *s ACCEL_HANDLE_REF = NULL;

	ACCEL_ENTER();
	s = device_stream(device, stream, &dev);
	if (!s || dev->be->stream_sync(dev, s->priv) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	accel_pools_synchronized(dev);
	return ACCEL_SUCCESS;
}

/* Native streams are CUDA's: no other backend's is another library's. */
static accel_status_t native_streams(struct accel_device *dev)
{
	if (dev->be->known_as != ACCEL_FOREIGN_CUDA)
		return accel_fail(ACCEL_ERROR_NOT_SUPPORTED,
				  "%s has no streams other libraries know: only cuda devices do",
				  dev->name);
	return ACCEL_SUCCESS;
}

accel_status_t accel_stream_get_native(const accel_device_t device, accel_stream_t stream,
				 void **native)
{
	struct accel_device *dev;
	struct accel_stream *s ACCEL_HANDLE_REF = NULL;

	ACCEL_ENTER();
	if (!native)
		return accel_error("native is NULL");
	*native = NULL;
	s = device_stream(device, stream, &dev);
	if (!s || native_streams(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	*native = s->priv;
	return ACCEL_SUCCESS;
}

accel_status_t accel_stream_create_external(const accel_device_t device, void *native,
				      accel_stream_t *stream)
{
	struct accel_device *dev;
	void *priv;

	ACCEL_ENTER();
	dev = new_stream_device(device, stream);
	if (!dev || native_streams(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (dev->be->stream_adopt(dev, native, &priv) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return stream_add(dev, priv, true, stream);
}

accel_status_t accel_native_stream_synchronize(const accel_device_t device, void *native)
{
	struct accel_device *dev;

	ACCEL_ENTER();
	dev = accel_device_lookup(device);
	if (!dev || native_streams(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return dev->be->stream_sync(dev, native);
}

/*
 * Later work on @stream, the backend's stream of @dev, waits on the device
 * for @e's current record; an event of another device is waited for here.
 */
static accel_status_t wait_event(struct accel_device *dev, void *stream,
			   struct accel_event *e)
{
	if (e->dev != dev)
		return e->dev->be->event_sync(e->dev, e->priv);
	return dev->be->stream_wait_event(dev, stream, e->priv);
}

accel_status_t accel_native_stream_wait_event(const accel_device_t device, void *native,
					accel_event_t event)
{
	struct accel_device *dev;
	struct accel_event *e ACCEL_HANDLE_REF = NULL;

	ACCEL_ENTER();
	dev = accel_device_lookup(device);
	if (!dev || native_streams(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	e = event_lookup(dev, event, false);
	return e ? wait_event(dev, native, e) : ACCEL_FAILED;
}

accel_status_t accel_stream_wait_event(const accel_device_t device, accel_stream_t stream,
				 accel_event_t event)
{
	struct accel_device *dev;
	struct accel_stream *s ACCEL_HANDLE_REF = NULL;
	struct accel_event *e ACCEL_HANDLE_REF = NULL;

	ACCEL_ENTER();
	s = device_stream(device, stream, &dev);
	if (!s)
		return ACCEL_FAILED;
	e = event_lookup(dev, event, false);
	if (!e || wait_event(dev, s->priv, e) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return accel_stream_queued(s);
}

accel_status_t accel_event_create(const accel_device_t device, accel_event_t *event)
{
	struct accel_device *dev;
	struct accel_event *e;

	ACCEL_ENTER();
	if (!event)
		return accel_error("event is NULL");
	*event = NULL;	/* a failure leaves no stale handle */
	dev = accel_device_lookup(device);
	if (!dev)
		return ACCEL_FAILED;
	e = calloc(1, sizeof(*e));
	if (!e)
		return accel_oom_error("out of host memory");
	if (dev->be->event_create(dev, &e->priv) != ACCEL_SUCCESS) {
		free(e);
		return ACCEL_FAILED;
	}
	e->dev = dev;
	if (!accel_handle_new(ACCEL_HANDLE_EVENT, e)) {
		dev->be->event_destroy(dev, e->priv);
		free(e);
		return accel_oom_error("out of host memory");
	}
	*event = (accel_event_t)e->handle;
	return ACCEL_SUCCESS;
}

accel_status_t accel_event_record(const accel_device_t device, accel_stream_t stream,
			    accel_event_t event)
{
	struct accel_device *dev;
	struct accel_stream *s ACCEL_HANDLE_REF = NULL;
	struct accel_event *e ACCEL_HANDLE_REF = NULL;

	ACCEL_ENTER();
	s = device_stream(device, stream, &dev);
	e = s ? event_lookup(dev, event, true) : NULL;
	if (!e || dev->be->event_record(dev, s->priv, e->priv) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return accel_stream_queued(s);
}

accel_status_t accel_event_query(const accel_device_t device, accel_event_t event)
{
	struct accel_device *dev;
	struct accel_event *e ACCEL_HANDLE_REF = NULL;

	ACCEL_ENTER();
	e = device_event(device, event, &dev);
	return e ? dev->be->event_query(dev, e->priv) : ACCEL_FAILED;
}

accel_status_t accel_event_synchronize(const accel_device_t device, accel_event_t event)
{
	struct accel_device *dev;
	struct accel_event *e ACCEL_HANDLE_REF = NULL;

	ACCEL_ENTER();
	e = device_event(device, event, &dev);
	if (!e || dev->be->event_sync(dev, e->priv) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	accel_pools_synchronized(dev);
	return ACCEL_SUCCESS;
}

accel_status_t accel_event_destroy(const accel_device_t device, accel_event_t event)
{
	struct accel_device *dev;
	struct accel_event *e;

	ACCEL_ENTER();
	e = device_event(device, event, &dev);
	if (!e)
		return ACCEL_FAILED;
	if (!accel_handle_end(e)) {
		accel_handle_put(e);
		return accel_handle_error("event %p was destroyed by another thread",
					  (void *)event);
	}
	dev->be->event_destroy(dev, e->priv);
	free(e);
	return ACCEL_SUCCESS;
}
