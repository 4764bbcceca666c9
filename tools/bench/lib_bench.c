// SPDX-License-Identifier: MIT
/*
 * libaccel copy bandwidth on one device: h2d and d2h from pinned and
 * pageable memory, d2d, sync and async. With -DWITH_CUDART the same copies
 * through plain cudaMemcpy are measured in the same run as the reference.
 *
 *   lib_bench [-d DEVICE] [-s SIZE_MIB] [-r REPS]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <accel/accel.h>
#ifdef WITH_CUDART
#include <cuda_runtime_api.h>
#endif

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#define MAX_REPS 100

static double median_gbs(double *t, int reps, size_t size)
{
	qsort(t, (size_t)reps, sizeof(double), cmp_double);
	return size / t[reps / 2] / 1e9;
}

/*
 * GB/s (median repetition) of @copy into @result, and of @ref into
 * @ref_result; the two alternate, so that drift of the machine hits both
 */
#define MEASURE(result, ref_result, reps, size, copy, ref)		\
	do {								\
		double t_[MAX_REPS], r_[MAX_REPS], t0_;			\
		copy; ref; /* warm-up */				\
		for (int i_ = 0; i_ < (reps); i_++) {			\
			t0_ = now();					\
			ref;						\
			r_[i_] = now() - t0_;				\
			t0_ = now();					\
			copy;						\
			t_[i_] = now() - t0_;				\
		}							\
		(result) = median_gbs(t_, (reps), (size));		\
		(ref_result) = median_gbs(r_, (reps), (size));		\
	} while (0)

static void die(const char *what)
{
	fprintf(stderr, "lib_bench: %s: %s\n", what, accel_get_last_error());
	exit(1);
}

#define CHECKED(call) ((call) != ACCEL_SUCCESS ? die(#call) : (void)0)

static void report(const char *what, double gbs, double ref)
{
	if (ref > 0)
		printf("%-26s %8.2f GB/s   reference %8.2f GB/s   %5.1f%%\n",
		       what, gbs, ref, 100 * gbs / ref);
	else
		printf("%-26s %8.2f GB/s\n", what, gbs);
}

int main(int argc, char **argv)
{
	const char *name = NULL;
	size_t size = 256 << 20;
	int reps = 20, c;
	struct accel_device_id dev = { 0 };
	void *d, *d2, *pinned, *pageable;
	accel_stream_t s;
	double g, ref = 0;

	while ((c = getopt(argc, argv, "d:s:r:")) != -1) {
		switch (c) {
		case 'd': name = optarg; break;
		case 's': size = (size_t)atol(optarg) << 20; break;
		case 'r': reps = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: lib_bench [-d DEVICE] [-s MIB] [-r REPS]\n");
			return 2;
		}
	}
	if (reps < 1 || reps > MAX_REPS || !size)
		return 2;
	if (name)
		CHECKED(accel_find_device(name, &dev.id));
	CHECKED(accel_get_device_name(&dev, &name));
	CHECKED(accel_device_memory_allocate(&dev, &d, size));
	CHECKED(accel_device_memory_allocate(&dev, &d2, size));
	CHECKED(accel_host_memory_allocate(&dev, &pinned, size));
	CHECKED(accel_stream_create(&dev, &s));
	pageable = malloc(size);
	if (!pageable)
		return 1;
	memset(pageable, 1, size);
	memset(pinned, 2, size);
	printf("device %s, %zu MiB per copy, median of %d\n", name, size >> 20, reps);

#ifdef WITH_CUDART
	void *cd, *cd2, *cpinned;

	if (cudaMalloc(&cd, size) || cudaMalloc(&cd2, size) ||
	    cudaMallocHost(&cpinned, size)) {
		fprintf(stderr, "lib_bench: cudaMalloc failed\n");
		return 1;
	}
	memset(cpinned, 2, size);
#define REF(copy) copy
#define HAVE_REF 1
#else
#define REF(copy) (void)0
#define HAVE_REF 0
#endif
	/* without the CUDA runtime there is no reference */
#define MEASURE_REF(what, copy, ref_copy)				\
	do {								\
		MEASURE(g, ref, reps, size, copy, REF(ref_copy));	\
		report(what, g, HAVE_REF ? ref : 0);			\
	} while (0)

	MEASURE_REF("h2d pinned", CHECKED(accel_memory_copy_h2d(&dev, d, pinned, size)),
		    cudaMemcpy(cd, cpinned, size, cudaMemcpyHostToDevice));
	MEASURE_REF("d2h pinned", CHECKED(accel_memory_copy_d2h(&dev, pinned, d, size)),
		    cudaMemcpy(cpinned, cd, size, cudaMemcpyDeviceToHost));
	MEASURE_REF("h2d pageable", CHECKED(accel_memory_copy_h2d(&dev, d, pageable, size)),
		    cudaMemcpy(cd, pageable, size, cudaMemcpyHostToDevice));
	MEASURE_REF("d2h pageable", CHECKED(accel_memory_copy_d2h(&dev, pageable, d, size)),
		    cudaMemcpy(pageable, cd, size, cudaMemcpyDeviceToHost));
	MEASURE_REF("d2d", CHECKED(accel_memory_copy_d2d(&dev, d2, d, size)),
		    (cudaMemcpy(cd2, cd, size, cudaMemcpyDeviceToDevice), cudaDeviceSynchronize()));
	MEASURE_REF("async h2d pinned + sync",
		    (CHECKED(accel_async_memory_copy_h2d(&dev, s, d, pinned, size)),
		     CHECKED(accel_stream_synchronize(&dev, s))),
		    (cudaMemcpyAsync(cd, cpinned, size, cudaMemcpyHostToDevice, 0),
		     cudaStreamSynchronize(0)));
	MEASURE_REF("async d2h pinned + sync",
		    (CHECKED(accel_async_memory_copy_d2h(&dev, s, pinned, d, size)),
		     CHECKED(accel_stream_synchronize(&dev, s))),
		    (cudaMemcpyAsync(cpinned, cd, size, cudaMemcpyDeviceToHost, 0),
		     cudaStreamSynchronize(0)));

	CHECKED(accel_stream_destroy(&dev, s));
	CHECKED(accel_host_memory_deallocate(&dev, pinned, size));
	CHECKED(accel_device_memory_deallocate(&dev, d, size));
	CHECKED(accel_device_memory_deallocate(&dev, d2, size));
	free(pageable);
	return 0;
}
