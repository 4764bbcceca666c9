// SPDX-License-Identifier: MIT
/*
 * Streams and events: the core checks handles and devices, the backend
 * does the work.
 */
#include <stdlib.h>

#include "internal.h"

#define STREAM_MAGIC 0x5354524dU	/* "STRM" */
#define EVENT_MAGIC 0x45564e54U		/* "EVNT" */

/* Caller holds dev->stream_lock. */
static struct C_Stream_st *find_stream(struct accel_device *dev,
				       C_Stream stream)
{
	for (struct C_Stream_st *s = dev->streams; s; s = s->next)
		if (s == stream)
			return s;
	return NULL;
}

struct C_Stream_st *accel_stream_find(struct accel_device *dev,
				      C_Stream stream)
{
	struct C_Stream_st *s;

	pthread_rwlock_rdlock(&dev->stream_lock);
	s = find_stream(dev, stream);
	pthread_rwlock_unlock(&dev->stream_lock);
	return s;
}

struct C_Stream_st *accel_stream_lookup(struct accel_device *dev,
					C_Stream stream)
{
	struct C_Stream_st *s;

	if (!stream) {
		accel_error("the stream is NULL");
		return NULL;
	}
	s = accel_stream_find(dev, stream);
	if (!s)
		accel_handle_error("stream %p is not a live stream of %s", (void *)stream,
			    dev->name);
	return s;
}

static struct C_Event_st *event_lookup(struct accel_device *dev,
				       C_Event event, bool same_device)
{
	if (!event) {
		accel_error("the event is NULL");
		return NULL;
	}
	if (!accel_handle_live(event) || event->magic != EVENT_MAGIC) {
		accel_handle_error("event %p is not a live event", (void *)event);
		return NULL;
	}
	if (same_device && event->dev != dev) {
		accel_error("event %p belongs to %s, not %s", (void *)event,
			    event->dev->name, dev->name);
		return NULL;
	}
	return event;
}

/* @device and its live @stream, or NULL with the error set */
static struct C_Stream_st *device_stream(const C_Device device,
					 C_Stream stream,
					 struct accel_device **dev)
{
	*dev = accel_device_lookup(device);
	return *dev ? accel_stream_lookup(*dev, stream) : NULL;
}

/* @device and its live @event, or NULL with the error set */
static struct C_Event_st *device_event(const C_Device device, C_Event event,
				       struct accel_device **dev)
{
	*dev = accel_device_lookup(device);
	return *dev ? event_lookup(*dev, event, true) : NULL;
}

C_Status accel_stream_create(const C_Device device, C_Stream *stream)
{
	struct accel_device *dev;
	struct C_Stream_st *s;

	ACCEL_ENTER();
	dev = accel_device_lookup(device);
	if (!dev)
		return C_FAILED;
	if (!stream)
		return accel_error("stream is NULL");
	s = calloc(1, sizeof(*s));
	if (!s)
		return accel_oom_error("out of host memory");
	if (dev->be->stream_create(dev, &s->priv) != C_SUCCESS) {
		free(s);
		return C_FAILED;
	}
	s->magic = STREAM_MAGIC;
	s->dev = dev;
	pthread_rwlock_wrlock(&dev->stream_lock);
	s->next = dev->streams;
	dev->streams = s;
	atomic_fetch_add(&dev->nstreams, 1);
	pthread_rwlock_unlock(&dev->stream_lock);
	*stream = s;
	return C_SUCCESS;
}

C_Status accel_stream_destroy(const C_Device device, C_Stream stream)
{
	struct accel_device *dev;
	struct C_Stream_st **pp, *s = NULL;

	ACCEL_ENTER();
	dev = accel_device_lookup(device);
	if (!dev)
		return C_FAILED;
	if (!stream)
		return accel_error("the stream is NULL");
	pthread_rwlock_wrlock(&dev->stream_lock);
	for (pp = &dev->streams; *pp; pp = &(*pp)->next) {
		if (*pp == stream) {
			s = *pp;
			*pp = s->next;
			atomic_fetch_sub(&dev->nstreams, 1);
			break;
		}
	}
	pthread_rwlock_unlock(&dev->stream_lock);
	if (!s)
		return accel_handle_error("stream %p is not a live stream of %s",
				   (void *)stream, dev->name);
	dev->be->stream_drain(dev, s->priv);
	accel_pools_stream_gone(dev, s);
	dev->be->stream_destroy(dev, s->priv);
	s->magic = 0;
	free(s);
	return C_SUCCESS;
}

C_Status accel_stream_query(const C_Device device, C_Stream stream)
{
	struct accel_device *dev;
	struct C_Stream_st *s;

	ACCEL_ENTER();
	s = device_stream(device, stream, &dev);
	return s ? dev->be->stream_query(dev, s->priv) : C_FAILED;
}

C_Status accel_stream_synchronize(const C_Device device, C_Stream stream)
{
	struct accel_device *dev;
	struct C_Stream_st *s;

	ACCEL_ENTER();
	s = device_stream(device, stream, &dev);
	return s ? dev->be->stream_sync(dev, s->priv) : C_FAILED;
}

C_Status accel_stream_wait_event(const C_Device device, C_Stream stream,
				 C_Event event)
{
	struct accel_device *dev;
	struct C_Stream_st *s;
	struct C_Event_st *e;

	ACCEL_ENTER();
	s = device_stream(device, stream, &dev);
	if (!s)
		return C_FAILED;
	e = event_lookup(dev, event, false);
	if (!e)
		return C_FAILED;
	if (e->dev != dev)	/* another device's work: wait here */
		return e->dev->be->event_sync(e->dev, e->priv);
	return dev->be->stream_wait_event(dev, s->priv, e->priv);
}

C_Status accel_event_create(const C_Device device, C_Event *event)
{
	struct accel_device *dev;
	struct C_Event_st *e;

	ACCEL_ENTER();
	dev = accel_device_lookup(device);
	if (!dev)
		return C_FAILED;
	if (!event)
		return accel_error("event is NULL");
	e = calloc(1, sizeof(*e));
	if (!e)
		return accel_oom_error("out of host memory");
	if (dev->be->event_create(dev, &e->priv) != C_SUCCESS) {
		free(e);
		return C_FAILED;
	}
	e->magic = EVENT_MAGIC;
	e->dev = dev;
	if (!accel_handle_add(e)) {
		dev->be->event_destroy(dev, e->priv);
		free(e);
		return accel_oom_error("out of host memory");
	}
	*event = e;
	return C_SUCCESS;
}

C_Status accel_event_record(const C_Device device, C_Stream stream,
			    C_Event event)
{
	struct accel_device *dev;
	struct C_Stream_st *s;
	struct C_Event_st *e;

	ACCEL_ENTER();
	s = device_stream(device, stream, &dev);
	e = s ? event_lookup(dev, event, true) : NULL;
	return e ? dev->be->event_record(dev, s->priv, e->priv) : C_FAILED;
}

C_Status accel_event_query(const C_Device device, C_Event event)
{
	struct accel_device *dev;
	struct C_Event_st *e;

	ACCEL_ENTER();
	e = device_event(device, event, &dev);
	return e ? dev->be->event_query(dev, e->priv) : C_FAILED;
}

C_Status accel_event_synchronize(const C_Device device, C_Event event)
{
	struct accel_device *dev;
	struct C_Event_st *e;

	ACCEL_ENTER();
	e = device_event(device, event, &dev);
	return e ? dev->be->event_sync(dev, e->priv) : C_FAILED;
}

C_Status accel_event_destroy(const C_Device device, C_Event event)
{
	struct accel_device *dev;
	struct C_Event_st *e;

	ACCEL_ENTER();
	e = device_event(device, event, &dev);
	if (!e)
		return C_FAILED;
	if (!accel_handle_remove(e))	/* another thread destroyed it */
		return accel_handle_error("event %p is not a live event", (void *)e);
	dev->be->event_destroy(dev, e->priv);
	e->magic = 0;
	free(e);
	return C_SUCCESS;
}
