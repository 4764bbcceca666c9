// SPDX-License-Identifier: MIT
/*
 * libpaddle-accel.so: a PaddlePaddle custom-device plugin over libaccel.
 *
 * Paddle dlopen()s the plugin and calls InitPlugin(), which fills the
 * function table. The memory functions are libaccel's own: their
 * signatures are the plugin interface's. Allocation goes straight to the
 * backend, since Paddle caches on its own and reads the device's real free
 * memory from the stats. The device functions add what Paddle expects of
 * a runtime: a current device per thread, and stream callbacks.
 */
#include <stdbool.h>
#include <string.h>

#include "callbacks.h"

/* Paddle's current device, per thread as in CUDA. */
static _Thread_local int current_device;

static C_Status device_exists(const C_Device device)
{
	const char *name;

	return accel_get_device_name(device, &name);
}

static C_Status initialize(void)
{
	size_t count;

	return accel_get_device_count(&count);
}

static C_Status finalize(void)
{
	callbacks_stop();
	return C_SUCCESS;
}

/* The ids Paddle uses are libaccel's: nothing to translate. */
static C_Status init_device(const C_Device device)
{
	return device_exists(device);
}

static C_Status set_device(const C_Device device)
{
	if (device_exists(device) != C_SUCCESS)
		return C_FAILED;
	current_device = device->id;
	return C_SUCCESS;
}

static C_Status get_device(const C_Device device)
{
	if (!device)
		return C_FAILED;
	device->id = current_device;
	return C_SUCCESS;
}

static C_Status deinit_device(const C_Device device)
{
	if (accel_device_synchronize(device) != C_SUCCESS)
		return C_FAILED;
	callbacks_wait(NULL);
	return C_SUCCESS;
}

static C_Status destroy_stream(const C_Device device, C_Stream stream)
{
	callbacks_wait(stream);
	return accel_stream_destroy(device, stream);
}

static C_Status query_stream(const C_Device device, C_Stream stream)
{
	C_Status ret = accel_stream_query(device, stream);

	if (ret == C_SUCCESS && callbacks_pending(stream))
		return C_WARNING;
	return ret;
}

static C_Status synchronize_device(const C_Device device)
{
	C_Status ret = accel_device_synchronize(device);

	callbacks_wait(NULL);
	return ret;
}

static C_Status synchronize_stream(const C_Device device, C_Stream stream)
{
	C_Status ret = accel_stream_synchronize(device, stream);

	if (ret == C_SUCCESS)
		callbacks_wait(stream);
	return ret;
}

/* Whether a visible device belongs to @backend. */
static bool has_backend(const char *backend, size_t count)
{
	size_t len = strlen(backend);

	for (size_t i = 0; i < count; i++) {
		struct C_Device_st dev = { (int)i };
		const char *name;

		if (accel_get_device_name(&dev, &name) == C_SUCCESS &&
		    !strncmp(name, backend, len) && name[len] == ':')
			return true;
	}
	return false;
}

/*
 * The backends of the visible devices, such as "accel" or "accel,cpu":
 * Paddle's sub-device type.
 */
static char *backends(void)
{
	static const char *const known[] = { "accel", "cuda", "cpu" };
	static char names[32];
	size_t count = 0;

	names[0] = '\0';
	if (accel_get_device_count(&count) == C_SUCCESS) {
		for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++) {
			if (!has_backend(known[k], count))
				continue;
			if (names[0])
				strcat(names, ",");
			strcat(names, known[k]);
		}
	}
	return names[0] ? names : strcpy(names, "none");
}

static void fill_device_functions(C_DeviceInterface *t)
{
	t->initialize = initialize;
	t->finalize = finalize;
	t->init_device = init_device;
	t->set_device = set_device;
	t->get_device = get_device;
	t->deinit_device = deinit_device;
	t->create_stream = accel_stream_create;
	t->destroy_stream = destroy_stream;
	t->query_stream = query_stream;
	t->stream_add_callback = callbacks_add;
	t->create_event = accel_event_create;
	t->record_event = accel_event_record;
	t->destroy_event = accel_event_destroy;
	t->query_event = accel_event_query;
	t->synchronize_device = synchronize_device;
	t->synchronize_stream = synchronize_stream;
	t->synchronize_event = accel_event_synchronize;
	t->stream_wait_event = accel_stream_wait_event;
}

static void fill_memory_functions(C_DeviceInterface *t)
{
	t->device_memory_allocate = accel_device_memory_allocate;
	t->device_memory_deallocate = accel_device_memory_deallocate;
	t->device_memory_set = accel_device_memory_set;
	t->host_memory_allocate = accel_host_memory_allocate;
	t->host_memory_deallocate = accel_host_memory_deallocate;
	t->unified_memory_allocate = accel_unified_memory_allocate;
	t->unified_memory_deallocate = accel_unified_memory_deallocate;
	t->memory_copy_h2d = accel_memory_copy_h2d;
	t->memory_copy_d2h = accel_memory_copy_d2h;
	t->memory_copy_d2d = accel_memory_copy_d2d;
	t->memory_copy_p2p = accel_memory_copy_p2p;
	t->async_memory_copy_h2d = accel_async_memory_copy_h2d;
	t->async_memory_copy_d2h = accel_async_memory_copy_d2h;
	t->async_memory_copy_d2d = accel_async_memory_copy_d2d;
	t->async_memory_copy_p2p = accel_async_memory_copy_p2p;
}

static void fill_info_functions(C_DeviceInterface *t)
{
	t->get_device_count = accel_get_device_count;
	t->get_device_list = accel_get_device_list;
	t->device_memory_stats = accel_device_memory_stats;
	t->device_min_chunk_size = accel_device_min_chunk_size;
	t->device_max_chunk_size = accel_device_max_chunk_size;
	t->device_max_alloc_size = accel_device_max_alloc_size;
	t->device_extra_padding_size = accel_device_extra_padding_size;
	t->device_init_alloc_size = accel_device_init_alloc_size;
	t->device_realloc_size = accel_device_realloc_size;
}

__attribute__((visibility("default"))) void InitPlugin(CustomRuntimeParams *params)
{
	/* a caller with smaller structs would be written past their end */
	if (!params || params->size < sizeof(*params) || !params->interface ||
	    params->interface->size < sizeof(C_DeviceInterface))
		return;
	params->version.major = PADDLE_CUSTOM_RUNTIME_MAJOR_VERSION;
	params->version.minor = PADDLE_CUSTOM_RUNTIME_MINOR_VERSION;
	params->version.patch = PADDLE_CUSTOM_RUNTIME_PATCH_VERSION;
	fill_device_functions(params->interface);
	fill_memory_functions(params->interface);
	fill_info_functions(params->interface);
	params->sub_device_type = backends();
	params->device_type = (char *)"accel";
}
