// SPDX-License-Identifier: MIT
/*
 * libaccel's headers in one translation unit with PaddlePaddle's
 * custom-device declarations, in either order (PADDLE_FIRST), as C and as
 * C++: a Paddle plugin includes both. Paddle's declarations are written
 * out here as paddle/phi/backends/device_ext.h has them (its handles and
 * status, the callback type, its unprefixed data type, layout and
 * reduction enumerators, which a library header must not take either, the
 * collective and profiler types, the table's head, the runtime parameters
 * with their field "interface", the version macros and InitPlugin). Compiled
 * only (scripts/check-lib.sh): it fails to compile where a name clashes or
 * the layouts libaccel promises differ.
 */
#ifndef PADDLE_FIRST
#include <accel/accel.h>
#include <accel/memory.h>
#include <accel/dlpack.h>
#endif

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

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

typedef void (*C_Callback)(C_Device device, C_Stream stream, void *user_data,
			   C_Status *status);

typedef enum {
	UNDEFINED = 0,
	BOOL,
	UINT8,
	UINT16,
	UINT32,
	UINT64,
	INT8,
	INT16,
	INT32,
	INT64,
	FLOAT16,
	FLOAT32,
	FLOAT64,
	BFLOAT16,
	COMPLEX64,
	COMPLEX128,
} C_DataType;

typedef enum {
	ANY = 0,
	NHWC,
	NCHW,
	NCDHW,
	NDHWC,
	STRIDED,
	NUM_DATA_LAYOUTS,
	ALL_LAYOUT = ANY,
} C_DataLayout;

typedef enum { SUM = 0, AVG, MAX, MIN, PRODUCT } C_CCLReduceOp;

typedef struct C_CCLComm_st *C_CCLComm;

typedef struct {
	void *data;
	size_t sz;
} C_CCLRootId;

typedef struct C_Profiler_st *C_Profiler;

void profiler_add_runtime_trace_event(C_Profiler prof, void *event);
void profiler_add_device_trace_event(C_Profiler prof, void *event);

/* the table, by its first fields only: their names are what could clash */
typedef struct C_DeviceInterface {
	size_t size;
	C_Status (*initialize)(void);
	C_Status (*finalize)(void);
	C_Status (*init_device)(const C_Device device);
	C_Status (*device_memory_allocate)(const C_Device device, void **ptr,
					   size_t size);
	C_Status (*xccl_all_reduce)(void *send_buf, void *recv_buf, size_t count,
				    C_DataType data_type, C_CCLReduceOp op,
				    C_CCLComm comm, C_Stream stream);
} C_DeviceInterface;

struct CustomRuntimeVersion {
	size_t major, minor, patch;
};

typedef struct CustomRuntimeParams {
	size_t size;
	C_DeviceInterface *interface;
	struct CustomRuntimeVersion version;
	char *device_type;
	char *sub_device_type;
	char reserved[32];
} CustomRuntimeParams;

#define PADDLE_CUSTOM_RUNTIME_MAJOR_VERSION 0
#define PADDLE_CUSTOM_RUNTIME_MINOR_VERSION 1
#define PADDLE_CUSTOM_RUNTIME_PATCH_VERSION 2

void InitPlugin(CustomRuntimeParams *params);

#ifdef __cplusplus
}
#endif

#ifdef PADDLE_FIRST
#include <accel/accel.h>
#include <accel/memory.h>
#include <accel/dlpack.h>
#endif

#ifdef __cplusplus
#define SAME(cond, what) static_assert(cond, what)
#else
#define SAME(cond, what) _Static_assert(cond, what)
#endif

SAME(C_SUCCESS == (int)ACCEL_SUCCESS && C_WARNING == (int)ACCEL_WARNING &&
     C_FAILED == (int)ACCEL_FAILED && C_ERROR == (int)ACCEL_ERROR &&
     C_INTERNAL_ERROR == (int)ACCEL_INTERNAL_ERROR, "the statuses' values");
SAME(sizeof(C_Status) == sizeof(accel_status_t), "the statuses' size");
SAME(sizeof(struct C_Device_st) == sizeof(struct accel_device_id) &&
     offsetof(struct C_Device_st, id) == offsetof(struct accel_device_id, id),
     "a device is its id");
SAME(sizeof(C_Stream) == sizeof(accel_stream_t) &&
     sizeof(C_Event) == sizeof(accel_event_t), "handles are pointers");

/* A forwarder as a plugin writes it: Paddle's values passed on as libaccel's. */
C_Status forward_allocate(const C_Device device, void **ptr, size_t size);

C_Status forward_allocate(const C_Device device, void **ptr, size_t size)
{
	return (C_Status)accel_device_memory_allocate((accel_device_t)device,
						      ptr, size);
}
