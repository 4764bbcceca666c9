// SPDX-License-Identifier: MIT
/*
 * Copy routing and set: within one device, between devices of one
 * backend (peer copies) and of different backends (through host memory).
 */
#include <stdlib.h>

#include "memory/memory.h"

/* Pageable host data between devices of different backends goes in pieces. */
#define BOUNCE_CHUNK (4u << 20)

static struct accel_side side_advance(const struct accel_side *s, size_t n)
{
	struct accel_side r = *s;

	r.ptr = (char *)s->ptr + n;
	r.offset += n;
	return r;
}

enum direction { H2D, D2H, D2D };

static accel_status_t resolve_pair(struct accel_device *dev, enum direction dir,
			     void *dst, const void *src, size_t size,
			     struct accel_side *d, struct accel_side *s)
{
	accel_status_t ret;

	if (dir == D2H)
		ret = accel_resolve_host(dev, "dst", dst, size, d);
	else
		ret = accel_resolve_device(dev, "dst", dst, size, d);
	if (ret != ACCEL_SUCCESS)
		return ret;
	if (dir == H2D)
		return accel_resolve_host(dev, "src", src, size, s);
	return accel_resolve_device(dev, "src", src, size, s);
}

/*
 * Overlapping ranges have no order of bytes that every backend keeps
 * (CUDA leaves it undefined, a cpu device copies with memcpy()): refused
 * everywhere. The same range is no overlap to order: *@same, and nothing
 * to copy.
 */
static accel_status_t refuse_overlap(const struct accel_device *dev,
				     const void *dst, const void *src,
				     size_t size, bool *same)
{
	uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;

	*same = d == s;
	if (*same || d >= s + size || s >= d + size)
		return ACCEL_SUCCESS;
	return accel_error("the destination %p and the source %p of a %zu-byte copy on %s overlap",
			   dst, src, size, dev->name);
}

static accel_status_t copy_sync(const accel_device_t device, enum direction dir,
			  void *dst, const void *src, size_t size)
{
	struct accel_device *dev = accel_device_lookup(device);
	struct accel_side d, s;
	bool same = false;

	if (!dev)
		return ACCEL_FAILED;
	if (!size)
		return ACCEL_SUCCESS;
	if (resolve_pair(dev, dir, dst, src, size, &d, &s) != ACCEL_SUCCESS ||
	    (dir == D2D && refuse_overlap(dev, dst, src, size, &same)))
		return ACCEL_FAILED;
	accel_device_drain(dev);
	return same ? ACCEL_SUCCESS : dev->be->copy(dev, NULL, &d, &s, size);
}

static accel_status_t copy_async(const accel_device_t device, accel_stream_t stream,
			   enum direction dir, void *dst, const void *src,
			   size_t size)
{
	struct accel_device *dev = accel_device_lookup(device);
	struct accel_stream *st ACCEL_HANDLE_REF = NULL;
	struct accel_side d, s;
	bool same = false;

	if (!dev)
		return ACCEL_FAILED;
	st = accel_stream_lookup(dev, stream);
	if (!st)
		return ACCEL_FAILED;
	if (!size)
		return ACCEL_SUCCESS;
	if (resolve_pair(dev, dir, dst, src, size, &d, &s) != ACCEL_SUCCESS ||
	    (dir == D2D && refuse_overlap(dev, dst, src, size, &same)))
		return ACCEL_FAILED;
	if (same)
		return ACCEL_SUCCESS;
	if ((dir == D2H && !d.in_alloc) || (dir == H2D && !s.in_alloc))
		accel_device_touch_host(dev);	/* maybe another's memory */
	if (dev->be->copy(dev, st->priv, &d, &s, size) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return accel_stream_queued(st);
}

accel_status_t accel_memory_copy_h2d(const accel_device_t device, void *dst,
			       const void *src, size_t size)
{
	ACCEL_ENTER();
	return copy_sync(device, H2D, dst, src, size);
}

accel_status_t accel_memory_copy_d2h(const accel_device_t device, void *dst,
			       const void *src, size_t size)
{
	ACCEL_ENTER();
	return copy_sync(device, D2H, dst, src, size);
}

accel_status_t accel_memory_copy_d2d(const accel_device_t device, void *dst,
			       const void *src, size_t size)
{
	ACCEL_ENTER();
	return copy_sync(device, D2D, dst, src, size);
}

accel_status_t accel_async_memory_copy_h2d(const accel_device_t device, accel_stream_t stream,
				     void *dst, const void *src, size_t size)
{
	ACCEL_ENTER();
	return copy_async(device, stream, H2D, dst, src, size);
}

accel_status_t accel_async_memory_copy_d2h(const accel_device_t device, accel_stream_t stream,
				     void *dst, const void *src, size_t size)
{
	ACCEL_ENTER();
	return copy_async(device, stream, D2H, dst, src, size);
}

accel_status_t accel_async_memory_copy_d2d(const accel_device_t device, accel_stream_t stream,
				     void *dst, const void *src, size_t size)
{
	ACCEL_ENTER();
	return copy_async(device, stream, D2D, dst, src, size);
}

/* ------------------------------------------------------------------ */
/* Copies between devices */

/* Through host memory, for devices of different backends. */
static accel_status_t copy_bounce(struct accel_device *dst_dev,
			    const struct accel_side *d,
			    struct accel_device *src_dev,
			    const struct accel_side *s, size_t size)
{
	size_t chunk = size < BOUNCE_CHUNK ? size : BOUNCE_CHUNK;
	struct accel_side host = { 0 };
	accel_status_t ret = ACCEL_SUCCESS;

	host.ptr = malloc(chunk);
	if (!host.ptr)
		return accel_oom_error("out of host memory for a %zu-byte bounce buffer",
				   chunk);
	for (size_t done = 0; done < size && ret == ACCEL_SUCCESS; done += chunk) {
		struct accel_side dn = side_advance(d, done);
		struct accel_side sn = side_advance(s, done);

		if (chunk > size - done)
			chunk = size - done;
		ret = src_dev->be->copy(src_dev, NULL, &host, &sn, chunk);
		if (ret == ACCEL_SUCCESS)
			ret = dst_dev->be->copy(dst_dev, NULL, &dn, &host, chunk);
	}
	free(host.ptr);
	return ret;
}

/* Peer to peer, on @stream if @async (which must then be given). */
static accel_status_t copy_between(const accel_device_t dst_device,
			     const accel_device_t src_device, bool async,
			     accel_stream_t stream, void *dst, const void *src,
			     size_t size)
{
	struct accel_device *dd = accel_device_lookup(dst_device);
	struct accel_device *sd = dd ? accel_device_lookup(src_device) : NULL;
	struct accel_stream *st ACCEL_HANDLE_REF = NULL;
	struct accel_device *run = sd;
	struct accel_side d, s;
	bool same = false;

	if (!sd)
		return ACCEL_FAILED;
	if (async) {
		st = accel_stream_lookup(NULL, stream);
		if (!st)
			return ACCEL_FAILED;
		if (st->dev != dd && st->dev != sd)
			return accel_handle_error("stream %p is not a live stream of %s or %s",
					   (void *)stream, dd->name, sd->name);
		run = st->dev;
	}
	if (!size)
		return ACCEL_SUCCESS;
	if (accel_resolve_device(dd, "dst", dst, size, &d) != ACCEL_SUCCESS ||
	    accel_resolve_device(sd, "src", src, size, &s) != ACCEL_SUCCESS ||
	    refuse_overlap(dd, dst, src, size, &same))
		return ACCEL_FAILED;
	if (dd == sd) {
		/* a d2d copy: synchronous ones wait for what came before */
		if (!st)
			accel_device_drain(dd);
		if (same)
			return ACCEL_SUCCESS;
		if (!st)
			return dd->be->copy(dd, NULL, &d, &s, size);
		if (dd->be->copy(dd, st->priv, &d, &s, size) != ACCEL_SUCCESS)
			return ACCEL_FAILED;
		return accel_stream_queued(st);
	}
	if (dd->be == sd->be && st) {
		/* a free of either side must wait for this stream too */
		accel_device_touch(dd, run);
		accel_device_touch(sd, run);
		if (run->be->copy_peer(run, st->priv, dd, &d, sd, &s, size) !=
		    ACCEL_SUCCESS)
			return ACCEL_FAILED;
		return accel_stream_queued(st);
	}

	/* synchronous from here on: wait for what came before */
	if (st && run->be->stream_sync(run, st->priv) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	/* both devices' streams marked before either is waited for */
	accel_devices_drain((uint64_t)1 << dd->id | (uint64_t)1 << sd->id);
	if (dd->be == sd->be)
		return sd->be->copy_peer(sd, NULL, dd, &d, sd, &s, size);
	return copy_bounce(dd, &d, sd, &s, size);
}

accel_status_t accel_memory_copy_p2p(const accel_device_t dst_device,
			       const accel_device_t src_device, void *dst,
			       const void *src, size_t size)
{
	ACCEL_ENTER();
	return copy_between(dst_device, src_device, false, NULL, dst, src,
			    size);
}

accel_status_t accel_async_memory_copy_p2p(const accel_device_t dst_device,
				     const accel_device_t src_device,
				     accel_stream_t stream, void *dst,
				     const void *src, size_t size)
{
	ACCEL_ENTER();
	return copy_between(dst_device, src_device, true, stream, dst, src,
			    size);
}

/* ------------------------------------------------------------------ */
/* Set */

accel_status_t accel_device_memory_set(const accel_device_t device, void *ptr,
				 unsigned char value, size_t size)
{
	struct accel_device *dev;
	struct accel_side d;

	ACCEL_ENTER();
	dev = accel_device_lookup(device);
	if (!dev)
		return ACCEL_FAILED;
	if (!size)
		return ACCEL_SUCCESS;
	if (accel_resolve_device(dev, "ptr", ptr, size, &d) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	accel_device_drain(dev);
	return dev->be->set(dev, NULL, &d, value, size);
}
