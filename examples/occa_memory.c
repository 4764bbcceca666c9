// SPDX-License-Identifier: MIT
/*
 * occa::memory in C (seed 000): a handle to memory allocated by a device;
 * copyFrom and copyTo, whose count defaults to the whole memory; a slice
 * that keeps its own offset and size; a clone; a cast; reference counting,
 * and free.
 */
#include <string.h>

#include "example.h"

#define N 8

static void print(const char *what, accel_memory_t mem)
{
	struct accel_memory_info info;
	float v[N];

	TRY(accel_memory_get_info(mem, &info));
	TRY(accel_memory_copy_to(mem, v, ACCEL_ALL, 0));
	printf("%-22s", what);
	for (size_t i = 0; i < info.entries; i++)
		printf(" %4.1f", v[i]);
	printf("\n");
}

int main(void)
{
	struct accel_device_id dev;
	accel_dtype_t f32 = accel_dtype(ACCEL_FLOAT32);
	float a[N], part[3] = { 20, 21, 22 };
	accel_memory_t mem, slice, clone, words;
	struct accel_memory_info info, orig;
	float first;

	printf("device %s\n", example_device(&dev));
	for (int i = 0; i < N; i++)
		a[i] = (float)i + 0.5f;

	/* device.malloc<float>(N, a) */
	TRY(accel_memory_create(&dev, N, f32, a, 0, &mem));
	print("memory", mem);

	/* a slice: a reference to the original with its own offset and size */
	TRY(accel_memory_slice(mem, 2, 3, &slice));
	TRY(accel_memory_copy_from(slice, part, ACCEL_ALL, 0));
	print("slice(2, 3)", slice);
	print("memory after slice", mem);

	/* a clone: a copy in new memory */
	TRY(accel_memory_clone(mem, &clone));
	TRY(accel_memory_copy_from(clone, a, ACCEL_ALL, 0));
	print("clone, rewritten", clone);
	print("memory unchanged", mem);

	/* a cast: the same bytes as another type */
	TRY(accel_memory_cast(mem, accel_dtype(ACCEL_INT16), &words));
	TRY(accel_memory_get_info(words, &info));
	TRY(accel_memory_get_info(mem, &orig));
	printf("cast to %s: %zu entries, same pointer: %s\n",
	       accel_dtype_name(info.dtype), info.entries,
	       info.ptr == orig.ptr ? "yes" : "no");
	EXPECT(info.entries == 2 * N && info.ptr == orig.ptr);

	/* reference counting: the slice keeps the storage alive */
	TRY(accel_memory_release(mem));
	TRY(accel_memory_copy_to(slice, &first, 1, 2));
	printf("after releasing the memory, the slice still reads %.1f\n", first);
	EXPECT(first == 22.0f);

	/* free: the storage goes at once, and every handle knows it */
	TRY(accel_memory_free(slice));
	printf("after free, the cast is %s\n",
	       accel_memory_is_valid(words) ? "valid" : "no longer valid");
	EXPECT(!accel_memory_is_valid(words));
	EXPECT(accel_memory_copy_to(words, a, ACCEL_ALL, 0) == ACCEL_FAILED);
	printf("using it fails: %s\n", accel_get_last_error());
	TRY(accel_memory_release(words));
	TRY(accel_memory_release(clone));
	return 0;
}
