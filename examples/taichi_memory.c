// SPDX-License-Identifier: MIT
/*
 * The Taichi runtime's memory example (seed 003) in C: device-only and
 * host-accessible memory, map, unmap, read. Mapping device-only memory
 * fails with a message here, where Taichi would crash.
 */
#include <stdint.h>

#include "example.h"

int main(void)
{
	struct accel_device_id dev;
	accel_dtype_t u32 = accel_dtype(ACCEL_UINT32);
	accel_memory_t device_memory, host_accessible_memory;
	uint32_t readback_data[4];
	uint32_t *mapped;
	void *a_null_ptr;

	printf("device %s\n", example_device(&dev));
	/* runtime.allocate_memory(4 * sizeof(uint32_t)) */
	TRY(accel_memory_create(&dev, 4, u32, NULL, 0, &device_memory));
	/* runtime.allocate_memory(4 * sizeof(uint32_t), host_access=true) */
	TRY(accel_memory_create(&dev, 4, u32, NULL,
				ACCEL_MEMORY_HOST_READ | ACCEL_MEMORY_HOST_WRITE,
				&host_accessible_memory));

	TRY(accel_memory_map(host_accessible_memory, ACCEL_MAP_WRITE,
			     (void **)&mapped));
	for (uint32_t i = 0; i < 4; ++i)
		mapped[i] = i;
	TRY(accel_memory_unmap(host_accessible_memory));

	TRY(accel_memory_read(host_accessible_memory, readback_data,
			      sizeof(readback_data)));
	printf("readback data has the following values:");
	for (int i = 0; i < 4; i++)
		printf(" %u", readback_data[i]);
	printf("\n");
	for (uint32_t i = 0; i < 4; i++)
		EXPECT(readback_data[i] == i);

	/* void *a_null_ptr = device_memory.map(); */
	EXPECT(accel_memory_map(device_memory, ACCEL_MAP_READ, &a_null_ptr) ==
	       ACCEL_FAILED && !a_null_ptr);
	printf("mapping device-only memory: %s\n", accel_get_last_error());

	TRY(accel_memory_release(host_accessible_memory));
	TRY(accel_memory_release(device_memory));
	return 0;
}
