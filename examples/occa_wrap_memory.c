// SPDX-License-Identifier: MIT
/*
 * occa::device::wrapMemory in C (seed 001): wrap a pointer allocated
 * through the backend's own API in a memory handle; the type gives the
 * bytes; wrapped memory is never garbage collected, so the pointer is
 * still the caller's to free.
 */
#include <string.h>

#include "example.h"

#define N 16

int main(void)
{
	struct accel_device_id dev;
	accel_dtype_t f64 = accel_dtype(ACCEL_FLOAT64);
	struct accel_memory_info info;
	accel_memory_t mem;
	double in[N], out[N];
	void *native;

	printf("device %s\n", example_device(&dev));
	for (int i = 0; i < N; i++)
		in[i] = i * 1.25;

	/* the backend's allocation: cudaMalloc on CUDA, malloc on Serial */
	TRY(accel_device_memory_allocate(&dev, &native, sizeof(in)));
	TRY(accel_memory_wrap(&dev, native, N, f64, &mem));
	TRY(accel_memory_get_info(mem, &info));
	printf("wrapped %p: %zu entries of %s, %zu bytes, wrapped=%d\n",
	       info.ptr, info.entries, accel_dtype_name(info.dtype),
	       info.bytes, info.wrapped);
	EXPECT(info.ptr == native && info.bytes == sizeof(in));

	TRY(accel_memory_copy_from(mem, in, ACCEL_ALL, 0));
	TRY(accel_memory_copy_d2h(&dev, out, native, sizeof(out)));
	printf("read through the native pointer: %g ... %g\n", out[0], out[N - 1]);
	EXPECT(!memcmp(in, out, sizeof(in)));

	/* no garbage collection: the last release leaves the memory alone */
	TRY(accel_memory_release(mem));
	TRY(accel_device_memory_set(&dev, native, 0, sizeof(in)));
	printf("after the release the pointer is still allocated; freeing it\n");
	TRY(accel_device_memory_deallocate(&dev, native, sizeof(in)));
	return 0;
}
