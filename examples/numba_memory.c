// SPDX-License-Identifier: MIT
/*
 * Numba's memory management page (seed 004) in C: to_device with and
 * without a stream, copy_to_host to a new and to an existing array, and
 * the example's kernel followed by reshape(2, 5, order='F').
 *
 * The accelerator copies and fills but does not compute, so the example
 * kernel's "io_array[pos] *= 2" runs on the host between two transfers.
 */
#include <stdint.h>

#include "example.h"

static void print_array(const char *what, accel_array_t ary)
{
	struct accel_array_info a;

	TRY(accel_array_get_info(ary, &a));
	printf("%s: ", what);
	if (a.ndim == 1) {
		printf("array([");
		for (size_t i = 0; i < a.shape[0]; i++)
			printf("%s%lld", i ? ", " : "",
			       (long long)*(int64_t *)((char *)a.data + i * a.strides[0]));
		printf("])\n");
		return;
	}
	printf("array([");
	for (size_t r = 0; r < a.shape[0]; r++) {
		printf("%s[", r ? ",\n       " : "");
		for (size_t c = 0; c < a.shape[1]; c++)
			printf("%s%2lld", c ? ", " : "",
			       (long long)*(int64_t *)((char *)a.data +
						       r * a.strides[0] +
						       c * a.strides[1]));
		printf("]");
	}
	printf("])\n");
}

/* my_kernel[100, 100](d_arr): io_array[pos] *= 2, on the host */
static void my_kernel(accel_array_t d_arr)
{
	struct accel_array_info a;
	accel_array_t h;

	TRY(accel_array_copy_to_host(d_arr, NULL, NULL, &h));
	TRY(accel_array_get_info(h, &a));
	for (size_t pos = 0; pos < a.size; pos++)
		((int64_t *)a.data)[pos] *= 2;
	TRY(accel_array_copy_to_device(d_arr, h, NULL));
	TRY(accel_array_release(h));
}

int main(void)
{
	static const int64_t want[2][5] = { { 0, 4, 8, 12, 16 }, { 2, 6, 10, 14, 18 } };
	struct accel_device_id dev;
	accel_dtype_t i64 = accel_dtype(ACCEL_INT64);
	const size_t n = 10, shape[2] = { 2, 5 };
	int64_t arr[10], empty[10];
	accel_array_t ary, d_ary, hary, out, d_arr;
	struct accel_array_info a;
	accel_stream_t stream;

	printf("device %s\n", example_device(&dev));
	/* ary = np.arange(10); d_ary = cuda.to_device(ary) */
	for (int i = 0; i < 10; i++)
		arr[i] = i;
	TRY(accel_host_array(arr, 1, &n, i64, NULL, 'C', 0, &ary));
	TRY(accel_to_device(&dev, ary, NULL, &d_ary));
	TRY(accel_array_release(d_ary));

	/* stream = cuda.stream(); d_ary = cuda.to_device(ary, stream=stream) */
	TRY(accel_stream_create(&dev, &stream));
	TRY(accel_to_device(&dev, ary, stream, &d_ary));

	/* hary = d_ary.copy_to_host() */
	TRY(accel_array_copy_to_host(d_ary, NULL, NULL, &hary));
	print_array("hary", hary);

	/* ary = np.empty(shape=d_ary.shape, dtype=d_ary.dtype); d_ary.copy_to_host(ary) */
	TRY(accel_array_get_info(d_ary, &a));
	TRY(accel_host_array(empty, a.ndim, a.shape, a.dtype, NULL, 'C', 0, &out));
	TRY(accel_array_copy_to_host(d_ary, out, NULL, NULL));
	print_array("ary", out);

	/* hary = d_ary.copy_to_host(stream=stream) */
	TRY(accel_array_release(hary));
	TRY(accel_array_copy_to_host(d_ary, NULL, stream, &hary));
	TRY(accel_stream_synchronize(&dev, stream));
	TRY(accel_array_get_info(hary, &a));
	for (int i = 0; i < 10; i++)
		EXPECT(((int64_t *)a.data)[i] == i && empty[i] == i);

	/* arr = np.arange(10); d_arr = cuda.to_device(arr); my_kernel; copy back */
	TRY(accel_to_device(&dev, ary, NULL, &d_arr));
	my_kernel(d_arr);
	TRY(accel_array_release(hary));
	TRY(accel_array_copy_to_host(d_arr, NULL, NULL, &hary));
	print_array("d_arr.copy_to_host()", hary);

	/* d_arr = d_arr.reshape(2, 5, order='F'); d_arr.copy_to_host() */
	{
		accel_array_t reshaped;

		TRY(accel_array_reshape(d_arr, 2, shape, 'F', &reshaped));
		TRY(accel_array_release(d_arr));
		d_arr = reshaped;
	}
	TRY(accel_array_release(hary));
	TRY(accel_array_copy_to_host(d_arr, NULL, NULL, &hary));
	print_array("reshaped", hary);
	TRY(accel_array_get_info(hary, &a));
	for (size_t r = 0; r < 2; r++)
		for (size_t c = 0; c < 5; c++)
			EXPECT(*(int64_t *)((char *)a.data + r * a.strides[0] +
					    c * a.strides[1]) == want[r][c]);

	TRY(accel_array_release(hary));
	TRY(accel_array_release(d_arr));
	TRY(accel_array_release(out));
	TRY(accel_array_release(d_ary));
	TRY(accel_stream_destroy(&dev, stream));
	TRY(accel_array_release(ary));
	return 0;
}
