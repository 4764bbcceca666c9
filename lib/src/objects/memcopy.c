// SPDX-License-Identifier: MIT
/*
 * Copies of memory handles (OCCA's copyFrom and copyTo): counts and
 * offsets in entries, the whole memory by default, every range checked.
 */
#include "objects/object.h"

/*
 * An async copy's stream must be given; checked once its memory is known,
 * so that the error names the device.
 */
static accel_status_t stream_given(bool async, accel_stream_t stream)
{
	return async && !stream ? accel_error("the stream is NULL") :
				  ACCEL_SUCCESS;
}

/*
 * Between @mem's entries [offset, offset + count) and the host's @host, on
 * @stream if @async.
 */
static accel_status_t copy_host(accel_memory_t mem, bool async,
				accel_stream_t stream, void *host,
				bool into_mem, size_t count, size_t offset)
{
	struct accel_memory *obj;
	struct xfer_end m = { 0 }, h = { .host = host };
	accel_status_t ret;

	obj = memory_use(mem);
	if (!obj)
		return ACCEL_FAILED;
	ret = stream_given(async, stream);
	if (ret == ACCEL_SUCCESS)
		ret = entry_range(obj->entries, offset, &count);
	if (ret == ACCEL_SUCCESS) {
		size_t bytes = count * obj->dtype->size;

		m.st = obj->st;
		m.offset = obj->offset + offset * obj->dtype->size;
		ret = into_mem ? transfer(&m, &h, bytes, stream) :
				 transfer(&h, &m, bytes, stream);
	}
	memory_done(obj);
	return ret;
}

accel_status_t accel_memory_copy_from(accel_memory_t mem, const void *src,
				size_t count, size_t offset)
{
	ACCEL_ENTER();
	return copy_host(mem, false, NULL, (void *)src, true, count, offset);
}

accel_status_t accel_memory_copy_to(accel_memory_t mem, void *dst, size_t count,
			      size_t offset)
{
	ACCEL_ENTER();
	return copy_host(mem, false, NULL, dst, false, count, offset);
}

accel_status_t accel_memory_copy_from_async(accel_memory_t mem, accel_stream_t stream,
				      const void *src, size_t count,
				      size_t offset)
{
	ACCEL_ENTER();
	return copy_host(mem, true, stream, (void *)src, true, count, offset);
}

accel_status_t accel_memory_copy_to_async(accel_memory_t mem, accel_stream_t stream,
				    void *dst, size_t count, size_t offset)
{
	ACCEL_ENTER();
	return copy_host(mem, true, stream, dst, false, count, offset);
}

/*
 * Whether @bytes from @a and from @b overlap in the storage that owns them:
 * a view of another device's storage holds it as a slice does.
 */
static bool ends_overlap(const struct xfer_end *a, const struct xfer_end *b,
			 size_t bytes)
{
	struct xfer_end x = xfer_owner(a), y = xfer_owner(b);

	return x.st == y.st && bytes && x.offset < y.offset + bytes &&
	       y.offset < x.offset + bytes;
}

/* The byte ranges of a copy, checked. */
static accel_status_t copy_ranges(struct accel_memory *dst, struct accel_memory *src,
			    size_t count, size_t dst_offset, size_t src_offset,
			    struct xfer_end *to, struct xfer_end *from,
			    size_t *bytes)
{
	size_t size = src->dtype->size;

	if (dst->dtype->size != size)
		return accel_error("entries of %s (%zu bytes) and %s (%zu bytes) differ in size; cast one first",
				   dst->dtype->name, dst->dtype->size,
				   src->dtype->name, size);
	if (entry_range(src->entries, src_offset, &count) != ACCEL_SUCCESS ||
	    entry_range(dst->entries, dst_offset, &count) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	*bytes = count * size;
	to->st = dst->st;
	to->offset = dst->offset + dst_offset * size;
	from->st = src->st;
	from->offset = src->offset + src_offset * size;
	if (xfer_owner(to).st == xfer_owner(from).st &&
	    xfer_owner(to).offset == xfer_owner(from).offset)
		*bytes = 0;	/* the same range: nothing changes */
	else if (ends_overlap(to, from, *bytes))
		return accel_error("the source and destination ranges overlap");
	return ACCEL_SUCCESS;
}

static accel_status_t copy_memory(accel_memory_t dst, accel_memory_t src,
			    bool async, accel_stream_t stream, size_t count,
			    size_t dst_offset, size_t src_offset)
{
	struct xfer_end to = { 0 }, from = { 0 };
	size_t bytes = 0;
	struct accel_memory *d, *s;
	accel_status_t ret;

	if (memory_use_both(dst, src, &d, &s) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	ret = stream_given(async, stream);
	if (ret == ACCEL_SUCCESS)
		ret = copy_ranges(d, s, count, dst_offset, src_offset, &to,
				  &from, &bytes);
	if (ret == ACCEL_SUCCESS)
		ret = transfer(&to, &from, bytes, stream);
	memory_done(s);
	memory_done(d);
	return ret;
}

accel_status_t accel_memory_copy(accel_memory_t dst, accel_memory_t src,
			   size_t count, size_t dst_offset, size_t src_offset)
{
	ACCEL_ENTER();
	return copy_memory(dst, src, false, NULL, count, dst_offset,
			   src_offset);
}

accel_status_t accel_memory_copy_async(accel_memory_t dst, accel_memory_t src,
				 accel_stream_t stream, size_t count,
				 size_t dst_offset, size_t src_offset)
{
	ACCEL_ENTER();
	return copy_memory(dst, src, true, stream, count, dst_offset,
			   src_offset);
}
