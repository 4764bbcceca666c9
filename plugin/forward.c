// SPDX-License-Identifier: MIT
/*
 * The table entries that are libaccel's own calls: each passes Paddle's
 * values on as libaccel's (forward.h), and libaccel's status back.
 */
#include "forward.h"

static C_Status create_stream(const C_Device d, C_Stream *stream)
{
	return to_paddle(accel_stream_create(to_accel_device(d),
					     (accel_stream_t *)stream));
}

static C_Status stream_wait_event(const C_Device d, C_Stream stream,
				  C_Event event)
{
	return to_paddle(accel_stream_wait_event(to_accel_device(d),
						 to_accel_stream(stream),
						 to_accel_event(event)));
}

static C_Status create_event(const C_Device d, C_Event *event)
{
	return to_paddle(accel_event_create(to_accel_device(d),
					    (accel_event_t *)event));
}

static C_Status record_event(const C_Device d, C_Stream stream, C_Event event)
{
	return to_paddle(accel_event_record(to_accel_device(d),
					    to_accel_stream(stream),
					    to_accel_event(event)));
}

static C_Status destroy_event(const C_Device d, C_Event event)
{
	return to_paddle(accel_event_destroy(to_accel_device(d),
					     to_accel_event(event)));
}

static C_Status query_event(const C_Device d, C_Event event)
{
	return to_paddle(accel_event_query(to_accel_device(d),
					   to_accel_event(event)));
}

static C_Status synchronize_event(const C_Device d, C_Event event)
{
	return to_paddle(accel_event_synchronize(to_accel_device(d),
						 to_accel_event(event)));
}

static C_Status device_memory_allocate(const C_Device d, void **ptr, size_t size)
{
	return to_paddle(accel_device_memory_allocate(to_accel_device(d), ptr, size));
}

static C_Status device_memory_deallocate(const C_Device d, void *ptr, size_t size)
{
	return to_paddle(accel_device_memory_deallocate(to_accel_device(d), ptr, size));
}

static C_Status device_memory_set(const C_Device d, void *ptr,
				  unsigned char value, size_t size)
{
	return to_paddle(accel_device_memory_set(to_accel_device(d), ptr, value,
						 size));
}

static C_Status host_memory_allocate(const C_Device d, void **ptr, size_t size)
{
	return to_paddle(accel_host_memory_allocate(to_accel_device(d), ptr, size));
}

static C_Status host_memory_deallocate(const C_Device d, void *ptr, size_t size)
{
	return to_paddle(accel_host_memory_deallocate(to_accel_device(d), ptr, size));
}

static C_Status unified_memory_allocate(const C_Device d, void **ptr, size_t size)
{
	return to_paddle(accel_unified_memory_allocate(to_accel_device(d), ptr,
						       size));
}

static C_Status unified_memory_deallocate(const C_Device d, void *ptr,
					  size_t size)
{
	return to_paddle(accel_unified_memory_deallocate(to_accel_device(d), ptr,
							 size));
}

static C_Status memory_copy_h2d(const C_Device d, void *dst, const void *src,
				size_t size)
{
	return to_paddle(accel_memory_copy_h2d(to_accel_device(d), dst, src, size));
}

static C_Status memory_copy_d2h(const C_Device d, void *dst, const void *src,
				size_t size)
{
	return to_paddle(accel_memory_copy_d2h(to_accel_device(d), dst, src, size));
}

static C_Status memory_copy_d2d(const C_Device d, void *dst, const void *src,
				size_t size)
{
	return to_paddle(accel_memory_copy_d2d(to_accel_device(d), dst, src, size));
}

static C_Status memory_copy_p2p(const C_Device dst_device,
				const C_Device src_device, void *dst,
				const void *src, size_t size)
{
	return to_paddle(accel_memory_copy_p2p(to_accel_device(dst_device),
					       to_accel_device(src_device), dst,
					       src, size));
}

static C_Status async_memory_copy_h2d(const C_Device d, C_Stream stream,
				      void *dst, const void *src, size_t size)
{
	return to_paddle(accel_async_memory_copy_h2d(to_accel_device(d),
						     to_accel_stream(stream),
						     dst, src, size));
}

static C_Status async_memory_copy_d2h(const C_Device d, C_Stream stream,
				      void *dst, const void *src, size_t size)
{
	return to_paddle(accel_async_memory_copy_d2h(to_accel_device(d),
						     to_accel_stream(stream),
						     dst, src, size));
}

static C_Status async_memory_copy_d2d(const C_Device d, C_Stream stream,
				      void *dst, const void *src, size_t size)
{
	return to_paddle(accel_async_memory_copy_d2d(to_accel_device(d),
						     to_accel_stream(stream),
						     dst, src, size));
}

static C_Status async_memory_copy_p2p(const C_Device dst_device,
				      const C_Device src_device,
				      C_Stream stream, void *dst,
				      const void *src, size_t size)
{
	return to_paddle(accel_async_memory_copy_p2p(to_accel_device(dst_device),
						     to_accel_device(src_device),
						     to_accel_stream(stream),
						     dst, src, size));
}

static C_Status get_device_count(size_t *count)
{
	return to_paddle(accel_get_device_count(count));
}

static C_Status get_device_list(size_t *devices)
{
	return to_paddle(accel_get_device_list(devices));
}

static C_Status device_memory_stats(const C_Device d, size_t *total,
				    size_t *free)
{
	return to_paddle(accel_device_memory_stats(to_accel_device(d), total,
						   free));
}

/* The chunk sizes: one call each, the device and where the size goes. */
#define FORWARD_SIZE(name)						\
	static C_Status name(const C_Device d, size_t *size)		\
	{								\
		return to_paddle(accel_##name(to_accel_device(d), size)); \
	}

FORWARD_SIZE(device_min_chunk_size)
FORWARD_SIZE(device_max_chunk_size)
FORWARD_SIZE(device_max_alloc_size)
FORWARD_SIZE(device_extra_padding_size)
FORWARD_SIZE(device_init_alloc_size)
FORWARD_SIZE(device_realloc_size)

static void forward_device_functions(C_DeviceInterface *t)
{
	t->create_stream = create_stream;
	t->stream_wait_event = stream_wait_event;
	t->create_event = create_event;
	t->record_event = record_event;
	t->destroy_event = destroy_event;
	t->query_event = query_event;
	t->synchronize_event = synchronize_event;
}

static void forward_memory_functions(C_DeviceInterface *t)
{
	t->device_memory_allocate = device_memory_allocate;
	t->device_memory_deallocate = device_memory_deallocate;
	t->device_memory_set = device_memory_set;
	t->host_memory_allocate = host_memory_allocate;
	t->host_memory_deallocate = host_memory_deallocate;
	t->unified_memory_allocate = unified_memory_allocate;
	t->unified_memory_deallocate = unified_memory_deallocate;
	t->memory_copy_h2d = memory_copy_h2d;
	t->memory_copy_d2h = memory_copy_d2h;
	t->memory_copy_d2d = memory_copy_d2d;
	t->memory_copy_p2p = memory_copy_p2p;
	t->async_memory_copy_h2d = async_memory_copy_h2d;
	t->async_memory_copy_d2h = async_memory_copy_d2h;
	t->async_memory_copy_d2d = async_memory_copy_d2d;
	t->async_memory_copy_p2p = async_memory_copy_p2p;
}

static void forward_info_functions(C_DeviceInterface *t)
{
	t->get_device_count = get_device_count;
	t->get_device_list = get_device_list;
	t->device_memory_stats = device_memory_stats;
	t->device_min_chunk_size = device_min_chunk_size;
	t->device_max_chunk_size = device_max_chunk_size;
	t->device_max_alloc_size = device_max_alloc_size;
	t->device_extra_padding_size = device_extra_padding_size;
	t->device_init_alloc_size = device_init_alloc_size;
	t->device_realloc_size = device_realloc_size;
}

void forward_fill(C_DeviceInterface *t)
{
	forward_device_functions(t);
	forward_memory_functions(t);
	forward_info_functions(t);
}
