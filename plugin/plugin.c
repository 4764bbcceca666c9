// SPDX-License-Identifier: MIT
/*
 * libpaddle-accel.so: a PaddlePaddle custom-device plugin over libaccel.
 *
 * Paddle dlopen()s the plugin and calls InitPlugin(), which fills the
 * function table. The memory functions are libaccel's own, passed Paddle's
 * values (forward.c). Allocation goes straight to the
 * backend, since Paddle caches on its own and reads the device's real free
 * memory from the stats. The device functions add what Paddle expects of
 * a runtime: a current device per thread, and stream callbacks.
 */
#include <stdbool.h>
#include <string.h>

#include "callbacks.h"
#include "forward.h"

/* Paddle's current device, per thread as in CUDA. */
static _Thread_local int current_device;

static C_Status device_exists(const C_Device device)
{
	const char *name;

	return to_paddle(accel_get_device_name(to_accel_device(device), &name));
}

static C_Status initialize(void)
{
	size_t count;

	return to_paddle(accel_get_device_count(&count));
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
	if (accel_device_synchronize(to_accel_device(device)) != ACCEL_SUCCESS)
		return C_FAILED;
	callbacks_wait(NULL);
	return C_SUCCESS;
}

static C_Status destroy_stream(const C_Device device, C_Stream stream)
{
	callbacks_wait(stream);
	return to_paddle(accel_stream_destroy(to_accel_device(device),
					      to_accel_stream(stream)));
}

static C_Status query_stream(const C_Device device, C_Stream stream)
{
	C_Status ret = to_paddle(accel_stream_query(to_accel_device(device),
						    to_accel_stream(stream)));

	if (ret == C_SUCCESS && callbacks_pending(stream))
		return C_WARNING;
	return ret;
}

static C_Status synchronize_device(const C_Device device)
{
	C_Status ret = to_paddle(accel_device_synchronize(to_accel_device(device)));

	callbacks_wait(NULL);
	return ret;
}

static C_Status synchronize_stream(const C_Device device, C_Stream stream)
{
	C_Status ret = to_paddle(accel_stream_synchronize(to_accel_device(device),
							  to_accel_stream(stream)));

	if (ret == C_SUCCESS)
		callbacks_wait(stream);
	return ret;
}

/* Whether a visible device belongs to @backend. */
static bool has_backend(const char *backend, size_t count)
{
	size_t len = strlen(backend);

	for (size_t i = 0; i < count; i++) {
		struct accel_device_id dev = { (int)i };
		const char *name;

		if (accel_get_device_name(&dev, &name) == ACCEL_SUCCESS &&
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
	if (accel_get_device_count(&count) == ACCEL_SUCCESS) {
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

/* The device functions with what Paddle expects of a runtime added. */
static void fill_device_functions(C_DeviceInterface *t)
{
	t->initialize = initialize;
	t->finalize = finalize;
	t->init_device = init_device;
	t->set_device = set_device;
	t->get_device = get_device;
	t->deinit_device = deinit_device;
	t->destroy_stream = destroy_stream;
	t->query_stream = query_stream;
	t->stream_add_callback = callbacks_add;
	t->synchronize_device = synchronize_device;
	t->synchronize_stream = synchronize_stream;
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
	forward_fill(params->interface);
	params->sub_device_type = backends();
	params->device_type = (char *)"accel";
}
