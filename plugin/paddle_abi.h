/* SPDX-License-Identifier: MIT */
/*
 * PaddlePaddle's custom-device plugin ABI, declared in C.
 *
 * Paddle's header (paddle/phi/backends/device_ext.h) is C++ only; these
 * structs have its layout on 64-bit Linux, as docs/paddle.md and
 * ../shared/reference/paddle-plugin-abi.md describe, and the static
 * assertions below pin every offset. Only the fields every Paddle version
 * has are declared: the caller's structs may be larger, never smaller.
 */
#ifndef PADDLE_ABI_H
#define PADDLE_ABI_H

#include <assert.h>
#include <stddef.h>

/* Paddle's status and handles, as device_ext.h declares them */
typedef enum {
	C_SUCCESS = 0,
	C_WARNING,
	C_FAILED,
	C_ERROR,
	C_INTERNAL_ERROR
} C_Status;

typedef struct C_Device_st {
	int id;
} *C_Device;

typedef struct C_Stream_st *C_Stream;

typedef struct C_Event_st *C_Event;

/* The plugin API version this plugin implements (Paddle accepts >= 0.1.1). */
#define PADDLE_CUSTOM_RUNTIME_MAJOR_VERSION 0
#define PADDLE_CUSTOM_RUNTIME_MINOR_VERSION 1
#define PADDLE_CUSTOM_RUNTIME_PATCH_VERSION 1

typedef void (*C_Callback)(C_Device device, C_Stream stream, void *user_data,
			   C_Status *status);

typedef struct C_DeviceInterface {
	size_t size;

	C_Status (*initialize)(void);
	C_Status (*finalize)(void);
	C_Status (*init_device)(const C_Device device);
	C_Status (*set_device)(const C_Device device);
	C_Status (*get_device)(const C_Device device);
	C_Status (*deinit_device)(const C_Device device);
	C_Status (*create_stream)(const C_Device device, C_Stream *stream);
	C_Status (*destroy_stream)(const C_Device device, C_Stream stream);
	C_Status (*query_stream)(const C_Device device, C_Stream stream);
	C_Status (*stream_add_callback)(const C_Device device, C_Stream stream,
					C_Callback callback, void *user_data);
	C_Status (*create_event)(const C_Device device, C_Event *event);
	C_Status (*record_event)(const C_Device device, C_Stream stream,
				 C_Event event);
	C_Status (*destroy_event)(const C_Device device, C_Event event);
	C_Status (*query_event)(const C_Device device, C_Event event);
	C_Status (*synchronize_device)(const C_Device device);
	C_Status (*synchronize_stream)(const C_Device device, C_Stream stream);
	C_Status (*synchronize_event)(const C_Device device, C_Event event);
	C_Status (*stream_wait_event)(const C_Device device, C_Stream stream,
				      C_Event event);
	void *reserved_dev_api[8];

	C_Status (*device_memory_allocate)(const C_Device device, void **ptr,
					   size_t size);
	C_Status (*device_memory_deallocate)(const C_Device device, void *ptr,
					     size_t size);
	C_Status (*device_memory_set)(const C_Device device, void *ptr,
				      unsigned char value, size_t size);
	C_Status (*host_memory_allocate)(const C_Device device, void **ptr,
					 size_t size);
	C_Status (*host_memory_deallocate)(const C_Device device, void *ptr,
					   size_t size);
	C_Status (*unified_memory_allocate)(const C_Device device, void **ptr,
					    size_t size);
	C_Status (*unified_memory_deallocate)(const C_Device device, void *ptr,
					      size_t size);
	C_Status (*memory_copy_h2d)(const C_Device device, void *dst,
				    const void *src, size_t size);
	C_Status (*memory_copy_d2h)(const C_Device device, void *dst,
				    const void *src, size_t size);
	C_Status (*memory_copy_d2d)(const C_Device device, void *dst,
				    const void *src, size_t size);
	C_Status (*memory_copy_p2p)(const C_Device dst_device,
				    const C_Device src_device, void *dst,
				    const void *src, size_t size);
	C_Status (*async_memory_copy_h2d)(const C_Device device, C_Stream stream,
					  void *dst, const void *src,
					  size_t size);
	C_Status (*async_memory_copy_d2h)(const C_Device device, C_Stream stream,
					  void *dst, const void *src,
					  size_t size);
	C_Status (*async_memory_copy_d2d)(const C_Device device, C_Stream stream,
					  void *dst, const void *src,
					  size_t size);
	C_Status (*async_memory_copy_p2p)(const C_Device dst_device,
					  const C_Device src_device,
					  C_Stream stream, void *dst,
					  const void *src, size_t size);
	void *reserved_mem_api[8];

	C_Status (*get_device_count)(size_t *count);
	C_Status (*get_device_list)(size_t *devices);
	C_Status (*device_memory_stats)(const C_Device device, size_t *total,
					size_t *free);
	C_Status (*device_min_chunk_size)(C_Device device, size_t *size);
	C_Status (*device_max_chunk_size)(C_Device device, size_t *size);
	C_Status (*device_max_alloc_size)(C_Device device, size_t *size);
	C_Status (*device_extra_padding_size)(C_Device device, size_t *size);
	C_Status (*device_init_alloc_size)(const C_Device device, size_t *size);
	C_Status (*device_realloc_size)(const C_Device device, size_t *size);
	/* later fields differ between Paddle versions: left NULL by the caller */
} C_DeviceInterface;

typedef struct CustomRuntimeVersion {
	size_t major, minor, patch;
} CustomRuntimeVersion;

/* The 88-byte layout of older Paddle; newer ones append before reserved. */
typedef struct CustomRuntimeParams {
	size_t size;
	C_DeviceInterface *interface;
	CustomRuntimeVersion version;
	char *device_type;
	char *sub_device_type;
	char reserved[32];
} CustomRuntimeParams;

#define PADDLE_AT(type, field, off) \
	static_assert(offsetof(type, field) == (off), #type "." #field " at " #off)

PADDLE_AT(C_DeviceInterface, size, 0);
PADDLE_AT(C_DeviceInterface, initialize, 8);
PADDLE_AT(C_DeviceInterface, finalize, 16);
PADDLE_AT(C_DeviceInterface, init_device, 24);
PADDLE_AT(C_DeviceInterface, set_device, 32);
PADDLE_AT(C_DeviceInterface, get_device, 40);
PADDLE_AT(C_DeviceInterface, deinit_device, 48);
PADDLE_AT(C_DeviceInterface, create_stream, 56);
PADDLE_AT(C_DeviceInterface, destroy_stream, 64);
PADDLE_AT(C_DeviceInterface, query_stream, 72);
PADDLE_AT(C_DeviceInterface, stream_add_callback, 80);
PADDLE_AT(C_DeviceInterface, create_event, 88);
PADDLE_AT(C_DeviceInterface, record_event, 96);
PADDLE_AT(C_DeviceInterface, destroy_event, 104);
PADDLE_AT(C_DeviceInterface, query_event, 112);
PADDLE_AT(C_DeviceInterface, synchronize_device, 120);
PADDLE_AT(C_DeviceInterface, synchronize_stream, 128);
PADDLE_AT(C_DeviceInterface, synchronize_event, 136);
PADDLE_AT(C_DeviceInterface, stream_wait_event, 144);
PADDLE_AT(C_DeviceInterface, reserved_dev_api, 152);
PADDLE_AT(C_DeviceInterface, device_memory_allocate, 216);
PADDLE_AT(C_DeviceInterface, device_memory_deallocate, 224);
PADDLE_AT(C_DeviceInterface, device_memory_set, 232);
PADDLE_AT(C_DeviceInterface, host_memory_allocate, 240);
PADDLE_AT(C_DeviceInterface, host_memory_deallocate, 248);
PADDLE_AT(C_DeviceInterface, unified_memory_allocate, 256);
PADDLE_AT(C_DeviceInterface, unified_memory_deallocate, 264);
PADDLE_AT(C_DeviceInterface, memory_copy_h2d, 272);
PADDLE_AT(C_DeviceInterface, memory_copy_d2h, 280);
PADDLE_AT(C_DeviceInterface, memory_copy_d2d, 288);
PADDLE_AT(C_DeviceInterface, memory_copy_p2p, 296);
PADDLE_AT(C_DeviceInterface, async_memory_copy_h2d, 304);
PADDLE_AT(C_DeviceInterface, async_memory_copy_d2h, 312);
PADDLE_AT(C_DeviceInterface, async_memory_copy_d2d, 320);
PADDLE_AT(C_DeviceInterface, async_memory_copy_p2p, 328);
PADDLE_AT(C_DeviceInterface, reserved_mem_api, 336);
PADDLE_AT(C_DeviceInterface, get_device_count, 400);
PADDLE_AT(C_DeviceInterface, get_device_list, 408);
PADDLE_AT(C_DeviceInterface, device_memory_stats, 416);
PADDLE_AT(C_DeviceInterface, device_min_chunk_size, 424);
PADDLE_AT(C_DeviceInterface, device_max_chunk_size, 432);
PADDLE_AT(C_DeviceInterface, device_max_alloc_size, 440);
PADDLE_AT(C_DeviceInterface, device_extra_padding_size, 448);
PADDLE_AT(C_DeviceInterface, device_init_alloc_size, 456);
PADDLE_AT(C_DeviceInterface, device_realloc_size, 464);
static_assert(sizeof(C_DeviceInterface) == 472, "C_DeviceInterface is 472 bytes up to device_realloc_size");

PADDLE_AT(CustomRuntimeParams, size, 0);
PADDLE_AT(CustomRuntimeParams, interface, 8);
PADDLE_AT(CustomRuntimeParams, version, 16);
PADDLE_AT(CustomRuntimeParams, device_type, 40);
PADDLE_AT(CustomRuntimeParams, sub_device_type, 48);
PADDLE_AT(CustomRuntimeParams, reserved, 56);
static_assert(sizeof(CustomRuntimeParams) == 88, "CustomRuntimeParams is 88 bytes in its oldest layout");
static_assert(sizeof(CustomRuntimeVersion) == 24, "CustomRuntimeVersion is three size_t");
static_assert(sizeof(struct C_Device_st) == 4, "C_Device_st is one int");

/* The plugin's entry point, found by Paddle with dlsym(). */
void InitPlugin(CustomRuntimeParams *params);

#endif /* PADDLE_ABI_H */
