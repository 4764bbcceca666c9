// SPDX-License-Identifier: MIT
/*
 * Transfers between storages and the caller's host memory: each pair of
 * places goes to the copy function that moves between them.
 */
#include <string.h>

#include "objects/object.h"

static void *end_ptr(const struct xfer_end *e)
{
	return e->st ? (char *)e->st->ptr + e->offset : e->host;
}

static bool end_on_device(const struct xfer_end *e)
{
	return e->st && storage_on_device(e->st);
}

static int end_dev(const struct xfer_end *e)
{
	return e->st ? e->st->dev_id : -1;
}

struct xfer_end xfer_owner(const struct xfer_end *e)
{
	struct xfer_end r = *e;

	if (e->st && e->st->backing) {
		r.st = e->st->backing;
		r.offset += (size_t)((char *)e->st->ptr - (char *)r.st->ptr);
	}
	return r;
}

/*
 * A host-side view whose bytes are device memory of @runner, whose engine
 * runs the copy (a cpu device's view of another cpu device's memory), is
 * that memory to the engine: as host memory it would refuse it.
 */
static void engine_end(struct xfer_end *e, int runner)
{
	struct storage *own = e->st ? storage_owner(e->st) : NULL;

	if (own && own != e->st && own->dev_id == runner &&
	    storage_on_device(own) && !storage_on_device(e->st))
		*e = xfer_owner(e);
}

/* A map of the bytes through any handle on them keeps the device off. */
static accel_status_t not_mapped(const struct xfer_end *e)
{
	if (e->st && atomic_load(&storage_owner(e->st)->maps))
		return accel_fail(ACCEL_ERROR_IN_USE, "the memory is mapped for the host: unmap it before the device uses it");
	return ACCEL_SUCCESS;
}

/* Wait for device @id's work (on @stream, if given); -1 is no device. */
static accel_status_t settle(int id, accel_stream_t stream)
{
	struct accel_device_id d = { id };

	if (id < 0)
		return ACCEL_SUCCESS;
	return stream ? accel_stream_synchronize(&d, stream) :
			accel_device_synchronize(&d);
}

/* The device @stream belongs to, or -1: asking sets no error. */
static int stream_dev(accel_stream_t stream)
{
	struct accel_stream *s = accel_handle_get(stream, ACCEL_HANDLE_STREAM);
	int id = -1;

	if (s) {
		id = s->dev->id;
		accel_handle_put(s);
	}
	return id;
}

accel_status_t stream_check(int dev_id, accel_stream_t stream)
{
	int id;

	if (!stream)
		return ACCEL_SUCCESS;
	id = stream_dev(stream);
	if (id < 0)
		return accel_handle_error("stream %p is not a live stream",
					  (void *)stream);
	if (id != dev_id)
		return accel_handle_error("stream %p is a stream of device %d, not of device %d",
					  (void *)stream, id, dev_id);
	return ACCEL_SUCCESS;
}

/*
 * @stream may order a transfer between @dst and @src, empty or not: a
 * stream of the device whose engine runs it between host memory and a
 * device's (the device side's), else of the device of either end.
 */
static accel_status_t transfer_stream_check(const struct xfer_end *dst,
				      const struct xfer_end *src,
				      accel_stream_t stream)
{
	bool dd = end_on_device(dst), sd = end_on_device(src);
	int other = end_dev(src) != end_dev(dst) ? end_dev(src) : -1;

	if (!stream || dd != sd)
		return stream_check(dd ? end_dev(dst) : end_dev(src), stream);
	if (end_dev(dst) < 0 && other < 0)	/* no device to order */
		return stream_check(stream_dev(stream), stream);
	if (other >= 0 && stream_dev(stream) == other)
		return ACCEL_SUCCESS;
	return stream_check(end_dev(dst) >= 0 ? end_dev(dst) : other, stream);
}

/*
 * Host to host: after the work that may still use either side. The stream
 * belongs to one of the two devices; which one is asked first, so that a
 * successful copy leaves no error of a failed guess behind.
 */
static accel_status_t host_copy(const struct xfer_end *dst,
			  const struct xfer_end *src, size_t bytes,
			  accel_stream_t stream)
{
	int first = end_dev(dst) >= 0 ? end_dev(dst) : end_dev(src);
	int second = end_dev(src) != first ? end_dev(src) : -1;
	accel_status_t ret;

	if (stream && second >= 0 && stream_dev(stream) == second)
		ret = settle(second, stream);
	else if (stream)
		ret = settle(first, stream);
	else	/* both devices' streams marked before either is waited for */
		ret = accel_devices_synchronize(device_bits(first) |
						device_bits(second));
	if (ret != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	memmove(end_ptr(dst), end_ptr(src), bytes);
	return ACCEL_SUCCESS;
}

static accel_status_t device_copy(const struct xfer_end *dst,
			    const struct xfer_end *src, size_t bytes,
			    accel_stream_t stream)
{
	struct accel_device_id d = { end_dev(dst) }, s = { end_dev(src) };
	void *to = end_ptr(dst), *from = end_ptr(src);

	if (d.id != s.id)
		return stream ? accel_async_memory_copy_p2p(&d, &s, stream, to,
							    from, bytes) :
				accel_memory_copy_p2p(&d, &s, to, from, bytes);
	return stream ? accel_async_memory_copy_d2d(&d, stream, to, from, bytes) :
			accel_memory_copy_d2d(&d, to, from, bytes);
}

/* Between host memory and memory of device @id: h2d or d2h. */
static accel_status_t host_device_copy(int id, bool h2d, void *to, void *from,
				 size_t bytes, accel_stream_t stream)
{
	struct accel_device_id d = { id };

	if (h2d)
		return stream ? accel_async_memory_copy_h2d(&d, stream, to, from, bytes) :
				accel_memory_copy_h2d(&d, to, from, bytes);
	return stream ? accel_async_memory_copy_d2h(&d, stream, to, from, bytes) :
			accel_memory_copy_d2h(&d, to, from, bytes);
}

/* Host bytes, and lent ones, a queued transfer uses must outlive it. */
static void note_async(const struct xfer_end *e, int dev_id)
{
	if (e->st && (e->st->kind == STORAGE_HOST || e->st->lender_release) &&
	    dev_id >= 0 && dev_id < 64)
		atomic_fetch_or(&e->st->async_devs, (uint64_t)1 << dev_id);
}

/* Move the bytes between the two ends, by the engine that reaches both. */
static accel_status_t move(const struct xfer_end *dst, const struct xfer_end *src,
		     size_t bytes, accel_stream_t stream)
{
	bool dd = end_on_device(dst), sd = end_on_device(src);
	/* the device whose engine runs it: the destination's, or the source's */
	int runner = dd ? end_dev(dst) : end_dev(src);
	accel_status_t ret;

	if (!end_ptr(dst) || !end_ptr(src))
		return accel_error("host memory for %zu bytes is NULL", bytes);
	if (!dd && !sd)
		return host_copy(dst, src, bytes, stream);
	if (dd && sd)
		ret = device_copy(dst, src, bytes, stream);
	else
		ret = host_device_copy(runner, dd, end_ptr(dst), end_ptr(src),
				       bytes, stream);
	if (ret == ACCEL_SUCCESS && stream) {
		note_async(dst, runner);
		note_async(src, runner);
	}
	return ret;
}

accel_status_t transfer(const struct xfer_end *dst, const struct xfer_end *src,
		  size_t bytes, accel_stream_t stream)
{
	struct xfer_end to = *dst, from = *src;
	bool dd = end_on_device(dst), sd = end_on_device(src);

	if (transfer_stream_check(dst, src, stream) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (!bytes)
		return ACCEL_SUCCESS;
	if (not_mapped(dst) != ACCEL_SUCCESS || not_mapped(src) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (dd != sd) {
		int runner = dd ? end_dev(dst) : end_dev(src);

		engine_end(&to, runner);
		engine_end(&from, runner);
	}
	return move(&to, &from, bytes, stream);
}
