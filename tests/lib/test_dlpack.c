// SPDX-License-Identifier: MIT
/*
 * DLPack (<accel/dlpack.h>), from its contract and DLPack 0.6's: the device
 * type that tells the truth about every kind of array on every backend,
 * strides in entries, the exported tensor's reference (the memory outlives
 * the array; the deleter may run on any thread), imported tensors given
 * back exactly once and only after the transfers queued on their memory,
 * and every malformed tensor refused with the tensor left to the caller.
 */
#include <pthread.h>
#include <stdatomic.h>

#include <accel/dlpack.h>

#include "suite.h"

#define F64 accel_dtype(ACCEL_FLOAT64)
#define F32 accel_dtype(ACCEL_FLOAT32)
#define I32 accel_dtype(ACCEL_INT32)

/* ------------------------------------------------------------------ */
/* A producer of our own: host memory with a deleter that counts */

struct foreign {
	DLManagedTensor t;
	int64_t shape[2];
	int64_t strides[2];
	void *buf;
	size_t bytes;
	atomic_int deleted;
	/* what the deleter writes over the bytes before "freeing" them */
	bool poison;
};

static void foreign_deleter(DLManagedTensor *t)
{
	struct foreign *f = t->manager_ctx;

	if (f->poison)
		memset(f->buf, 0xee, f->bytes);
	atomic_fetch_add(&f->deleted, 1);
}

/* @n float64 entries of malloc'd memory, one dimension, the pattern @seed */
static struct foreign *foreign_new(size_t n, uint32_t seed)
{
	struct foreign *f = xmalloc(sizeof(*f));

	memset(f, 0, sizeof(*f));
	f->bytes = n * 8;
	f->buf = xmalloc(f->bytes ? f->bytes : 1);
	fill_pattern(f->buf, f->bytes, seed);
	f->shape[0] = (int64_t)n;
	f->t.dl_tensor = (DLTensor){
		.data = f->buf, .device = { kDLCPU, 0 }, .ndim = 1,
		.dtype = { kDLFloat, 64, 1 }, .shape = f->shape,
	};
	f->t.manager_ctx = f;
	f->t.deleter = foreign_deleter;
	return f;
}

static void foreign_free(struct foreign *f)
{
	free(f->buf);
	free(f);
}

/* ------------------------------------------------------------------ */
/* Which DLPack device each kind of array is, per backend */

static bool on(struct suite_ctx *ctx, const char *backend)
{
	size_t n = strlen(backend);

	return !strncmp(ctx->name, backend, n) && ctx->name[n] == ':';
}

static int index_in_backend(struct suite_ctx *ctx)
{
	return atoi(strchr(ctx->name, ':') + 1);
}

static void check_device(accel_array_t a, DLDeviceType type, int id)
{
	DLManagedTensor *t;
	DLDevice d;

	REQUIRE_OK(accel_array_dlpack_device(a, &d));
	CHECK(d.device_type == type && d.device_id == id);
	if (d.device_type != type || d.device_id != id)
		printf("#   device %d:%d, not %d:%d\n", d.device_type,
		       d.device_id, type, id);
	REQUIRE_OK(accel_array_to_dlpack(a, 1, &t));
	CHECK(t->dl_tensor.device.device_type == type &&
	      t->dl_tensor.device.device_id == id);
	t->deleter(t);
}

static accel_array_t unified_array(struct suite_ctx *ctx, size_t n)
{
	const size_t shape[1] = { n };
	accel_memory_t m;
	accel_array_t a;

	REQUIRE_OK(accel_memory_create(ctx->dev, n, F64, NULL,
				       ACCEL_MEMORY_HOST_READ | ACCEL_MEMORY_HOST_WRITE,
				       &m));
	REQUIRE_OK(accel_memory_as_array(m, 1, shape, NULL, 'C', &a));
	OK(accel_memory_release(m));
	return a;
}

/* "The device type tells the truth about the memory" */
TEST(dlpack_device_type_tells_the_truth)
{
	const size_t shape[1] = { 64 };
	bool cuda = on(ctx, "cuda"), accel = on(ctx, "accel");
	int idx = index_in_backend(ctx);
	accel_array_t dev, pinned, mapped, host, unified;

	REQUIRE_OK(accel_device_array(ctx->dev, 1, shape, F64, NULL, 'C', NULL, &dev));
	REQUIRE_OK(accel_pinned_array(ctx->dev, 1, shape, F64, NULL, 'C', &pinned));
	REQUIRE_OK(accel_mapped_array(ctx->dev, 1, shape, F64, NULL, 'C', NULL, &mapped));
	REQUIRE_OK(accel_host_array(NULL, 1, shape, F64, NULL, 'C', 0, &host));
	unified = unified_array(ctx, 64);

	/* a cpu device's memory is host memory; accel's only the device reads */
	check_device(dev, cuda ? kDLCUDA : accel ? kDLExtDev : kDLCPU,
		     cuda || accel ? idx : 0);
	check_device(pinned, cuda ? kDLCUDAHost : kDLCPU, 0);
	check_device(mapped, cuda ? kDLCUDAHost : kDLCPU, 0);
	check_device(host, kDLCPU, 0);
	check_device(unified, cuda ? kDLCUDAManaged : kDLCPU, cuda ? idx : 0);
	OK(accel_array_release(unified));
	OK(accel_array_release(host));
	OK(accel_array_release(mapped));
	OK(accel_array_release(pinned));
	OK(accel_array_release(dev));
}

/* shape, strides in entries, type, data: DLTensor's fields */
TEST(dlpack_export_describes_the_array)
{
	const size_t shape[2] = { 3, 4 };
	const ptrdiff_t strides[2] = { 8, 24 };	/* int32, Fortran order */
	struct accel_array_info info;
	DLManagedTensor *t;
	accel_array_t a, c, empty, scalar;

	REQUIRE_OK(accel_mapped_array(ctx->dev, 2, shape, I32, strides, 'C', NULL, &a));
	REQUIRE_OK(accel_array_get_info(a, &info));
	REQUIRE_OK(accel_array_to_dlpack(a, 1, &t));
	CHECK(t->dl_tensor.data == info.data && t->dl_tensor.byte_offset == 0);
	CHECK(t->dl_tensor.ndim == 2);
	CHECK(t->dl_tensor.dtype.code == kDLInt && t->dl_tensor.dtype.bits == 32 &&
	      t->dl_tensor.dtype.lanes == 1);
	CHECK(t->dl_tensor.shape[0] == 3 && t->dl_tensor.shape[1] == 4);
	REQUIRE(t->dl_tensor.strides);
	CHECK(t->dl_tensor.strides[0] == 2 && t->dl_tensor.strides[1] == 6);
	t->deleter(t);

	/* every built-in numeric type, float32 here */
	REQUIRE_OK(accel_mapped_array(ctx->dev, 2, shape, F32, NULL, 'C', NULL, &c));
	REQUIRE_OK(accel_array_to_dlpack(c, 1, &t));
	CHECK(t->dl_tensor.dtype.code == kDLFloat && t->dl_tensor.dtype.bits == 32);
	CHECK(t->dl_tensor.strides[0] == 4 && t->dl_tensor.strides[1] == 1);
	t->deleter(t);

	/* empty and 0-d arrays are tensors too */
	const size_t none[1] = { 0 };
	REQUIRE_OK(accel_mapped_array(ctx->dev, 1, none, F64, NULL, 'C', NULL, &empty));
	REQUIRE_OK(accel_array_to_dlpack(empty, 1, &t));
	CHECK(t->dl_tensor.ndim == 1 && t->dl_tensor.shape[0] == 0);
	t->deleter(t);
	REQUIRE_OK(accel_mapped_array(ctx->dev, 0, NULL, F64, NULL, 'C', NULL, &scalar));
	REQUIRE_OK(accel_array_to_dlpack(scalar, 1, &t));
	CHECK(t->dl_tensor.ndim == 0 && t->dl_tensor.data);
	t->deleter(t);
	OK(accel_array_release(scalar));
	OK(accel_array_release(empty));
	OK(accel_array_release(c));
	OK(accel_array_release(a));
}

/* "The exported tensor holds a reference": the memory outlives the array */
TEST(dlpack_tensor_keeps_the_memory_alive)
{
	const size_t shape[1] = { 4096 };
	DLManagedTensor *t;
	accel_array_t a, host, back;
	double *p;

	REQUIRE_OK(accel_pinned_array(ctx->dev, 1, shape, F64, NULL, 'C', &a));
	REQUIRE_OK(accel_array_to_dlpack(a, 1, &t));
	p = t->dl_tensor.data;
	fill_pattern(p, 4096 * 8, 7);
	OK(accel_array_release(a));
	/* the pinned bytes are still there, and still the device's to copy */
	CHECK(check_pattern(p, 4096 * 8, 7));
	REQUIRE_OK(accel_array_from_dlpack(NULL, t, &host));
	REQUIRE_OK(accel_to_device(ctx->dev, host, NULL, &back));
	OK(accel_array_release(host));	/* gives t back */
	{
		accel_array_t out;
		struct accel_array_info info;

		REQUIRE_OK(accel_array_copy_to_host(back, NULL, NULL, &out));
		REQUIRE_OK(accel_array_get_info(out, &info));
		CHECK(check_pattern(info.data, 4096 * 8, 7));
		OK(accel_array_release(out));
	}
	OK(accel_array_release(back));
}

/* device memory: the tensor keeps it, and importing it back shares it */
TEST(dlpack_device_memory_round_trip)
{
	const size_t shape[1] = { 1000 };
	struct accel_array_info hi, di, ri;
	DLManagedTensor *t;
	accel_array_t host, dev, again, out;

	REQUIRE_OK(accel_host_array(NULL, 1, shape, F64, NULL, 'C', 0, &host));
	REQUIRE_OK(accel_array_get_info(host, &hi));
	fill_pattern(hi.data, hi.nbytes, 3);
	REQUIRE_OK(accel_to_device(ctx->dev, host, NULL, &dev));
	REQUIRE_OK(accel_array_get_info(dev, &di));
	REQUIRE_OK(accel_array_to_dlpack(dev, 1, &t));
	OK(accel_array_release(dev));
	REQUIRE_OK(accel_array_from_dlpack(ctx->dev, t, &again));
	REQUIRE_OK(accel_array_get_info(again, &ri));
	CHECK(ri.kind == ACCEL_ARRAY_DEVICE && ri.data == di.data);
	REQUIRE_OK(accel_array_copy_to_host(again, NULL, NULL, &out));
	{
		struct accel_array_info oi;

		REQUIRE_OK(accel_array_get_info(out, &oi));
		CHECK(check_pattern(oi.data, oi.nbytes, 3));
	}
	OK(accel_array_release(out));
	OK(accel_array_release(again));
	OK(accel_array_release(host));
}

/* "its deleter releases it (from any thread)" */
struct deleting {
	DLManagedTensor **t;
	int n;
};

static void *delete_all(void *arg)
{
	struct deleting *d = arg;

	for (int i = 0; i < d->n; i++)
		d->t[i]->deleter(d->t[i]);
	return NULL;
}

TEST(dlpack_deleters_on_other_threads)
{
	enum { THREADS = 4, EACH = 64 };
	const size_t shape[1] = { 256 };
	DLManagedTensor *t[THREADS][EACH];
	struct deleting d[THREADS];
	pthread_t th[THREADS];
	accel_array_t a[EACH];

	for (int i = 0; i < EACH; i++) {
		REQUIRE_OK(accel_mapped_array(ctx->dev, 1, shape, F64, NULL, 'C', NULL, &a[i]));
		for (int k = 0; k < THREADS; k++)
			REQUIRE_OK(accel_array_to_dlpack(a[i], 0, &t[k][i]));
	}
	for (int k = 0; k < THREADS; k++) {
		d[k] = (struct deleting){ t[k], EACH };
		REQUIRE(!pthread_create(&th[k], NULL, delete_all, &d[k]));
	}
	/* the arrays go meanwhile: whoever is last frees the memory */
	for (int i = 0; i < EACH; i++)
		OK(accel_array_release(a[i]));
	for (int k = 0; k < THREADS; k++)
		pthread_join(th[k], NULL);
}

/* what DLPack 0.6 cannot say is refused, and nothing is made */
TEST(dlpack_export_refusals)
{
	const size_t shape[2] = { 1, 4 };
	const ptrdiff_t odd[2] = { 3, 8 };	/* a length-1 axis may have any stride */
	double data[4] = { 0 };
	DLManagedTensor *t = (DLManagedTensor *)&t;
	accel_dtype_t opaque;
	accel_memory_t m;
	accel_array_t ro, b, v, odd_a, gone;

	REQUIRE_OK(accel_host_array(data, 1, shape + 1, F64, NULL, 'C', 1, &ro));
	FAILS_WITH(ACCEL_ERROR_NOT_SUPPORTED, accel_array_to_dlpack(ro, 1, &t));
	CHECK(t == NULL);
	REQUIRE_OK(accel_mapped_array(ctx->dev, 1, shape + 1, accel_dtype(ACCEL_BOOL),
				      NULL, 'C', NULL, &b));
	FAILS_WITH(ACCEL_ERROR_NOT_SUPPORTED, accel_array_to_dlpack(b, 1, &t));
	if (accel_dtype_find("dlpack_test_rgb", &opaque) != ACCEL_SUCCESS)
		REQUIRE_OK(accel_dtype_register("dlpack_test_rgb", 3, &opaque));
	REQUIRE_OK(accel_mapped_array(ctx->dev, 1, shape + 1, opaque, NULL, 'C', NULL, &v));
	FAILS_WITH(ACCEL_ERROR_NOT_SUPPORTED, accel_array_to_dlpack(v, 1, &t));
	REQUIRE_OK(accel_mapped_array(ctx->dev, 2, shape, F64, odd, 'C', NULL, &odd_a));
	FAILS(accel_array_to_dlpack(odd_a, 1, &t));
	FAILS(accel_array_to_dlpack(odd_a, 1, NULL));
	{
		DLDevice d;

		FAILS(accel_array_dlpack_device(odd_a, NULL));
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE, accel_array_dlpack_device(NULL, &d));
	}
	/* freed memory and released handles */
	REQUIRE_OK(accel_memory_create(ctx->dev, 4, F64, NULL, 0, &m));
	REQUIRE_OK(accel_memory_as_array(m, 1, shape + 1, NULL, 'C', &gone));
	OK(accel_memory_free(m));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE, accel_array_to_dlpack(gone, 1, &t));
	OK(accel_array_release(gone));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE, accel_array_to_dlpack(gone, 1, &t));
	OK(accel_array_release(odd_a));
	OK(accel_array_release(v));
	OK(accel_array_release(b));
	OK(accel_array_release(ro));
}

/* sync 1: the work queued on the array's stream is done first */
TEST(dlpack_export_waits_for_the_array_stream)
{
	const size_t n = 8u << 20, shape[1] = { n };
	struct accel_array_info info;
	DLManagedTensor *t;
	accel_array_t src, dst;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_host_array(NULL, 1, shape, F64, NULL, 'C', 0, &src));
	REQUIRE_OK(accel_array_get_info(src, &info));
	fill_pattern(info.data, info.nbytes, 11);
	REQUIRE_OK(accel_mapped_array(ctx->dev, 1, shape, F64, NULL, 'C', s, &dst));
	REQUIRE_OK(accel_array_copy_to_device(dst, src, s));
	REQUIRE_OK(accel_array_to_dlpack(dst, 1, &t));
	CHECK(check_pattern(t->dl_tensor.data, n * 8, 11));
	t->deleter(t);
	OK(accel_array_release(dst));
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_array_release(src));
	OK(accel_stream_destroy(ctx->dev, s));
}

/* ------------------------------------------------------------------ */
/* Import */

/* host memory as a host array: the deleter exactly once, after the last handle */
TEST(dlpack_import_host_memory)
{
	struct foreign *f = foreign_new(1024, 5);
	const size_t shape[2] = { 32, 32 };
	struct accel_array_info info;
	accel_array_t a, view, dev, out;

	REQUIRE_OK(accel_array_from_dlpack(NULL, &f->t, &a));
	REQUIRE_OK(accel_array_get_info(a, &info));
	CHECK(info.kind == ACCEL_ARRAY_HOST && info.data == f->buf);
	CHECK(info.ndim == 1 && info.shape[0] == 1024 && info.strides[0] == 8);
	CHECK(info.dtype == F64 && !info.readonly);
	REQUIRE_OK(accel_array_reshape(a, 2, shape, 'C', &view));
	OK(accel_array_release(a));
	CHECK(atomic_load(&f->deleted) == 0);	/* the view holds it */
	REQUIRE_OK(accel_to_device(ctx->dev, view, NULL, &dev));
	REQUIRE_OK(accel_array_copy_to_host(dev, NULL, NULL, &out));
	REQUIRE_OK(accel_array_get_info(out, &info));
	CHECK(check_pattern(info.data, 8192, 5));
	OK(accel_array_release(view));
	CHECK(atomic_load(&f->deleted) == 1);
	OK(accel_array_release(out));
	OK(accel_array_release(dev));
	CHECK(atomic_load(&f->deleted) == 1);
	foreign_free(f);
}

/* strides in entries and byte_offset are honoured */
TEST(dlpack_import_strides_and_offset)
{
	struct foreign *f = foreign_new(64, 9);
	struct accel_array_info info;
	accel_array_t a;

	f->t.dl_tensor.ndim = 2;
	f->shape[0] = 4;
	f->shape[1] = 3;
	f->strides[0] = 1;
	f->strides[1] = 8;
	f->t.dl_tensor.strides = f->strides;
	f->t.dl_tensor.byte_offset = 16;
	REQUIRE_OK(accel_array_from_dlpack(NULL, &f->t, &a));
	REQUIRE_OK(accel_array_get_info(a, &info));
	CHECK(info.data == (char *)f->buf + 16);
	CHECK(info.strides[0] == 8 && info.strides[1] == 64);
	CHECK(info.shape[0] == 4 && info.shape[1] == 3);
	OK(accel_array_release(a));
	CHECK(atomic_load(&f->deleted) == 1);
	foreign_free(f);
}

/* malformed tensors: an error, and the tensor stays the caller's */
TEST(dlpack_import_refusals)
{
	struct foreign *f = foreign_new(16, 1);
	DLTensor *t = &f->t.dl_tensor, saved = *t;
	accel_array_t a = (accel_array_t)&a;

	FAILS(accel_array_from_dlpack(NULL, NULL, &a));
	CHECK(a == NULL);
	FAILS(accel_array_from_dlpack(NULL, &f->t, NULL));
	t->dtype = (DLDataType){ kDLFloat, 16, 1 };	/* no float16 dtype */
	FAILS_WITH(ACCEL_ERROR_NOT_SUPPORTED, accel_array_from_dlpack(NULL, &f->t, &a));
	t->dtype = (DLDataType){ kDLFloat, 32, 2 };	/* vector lanes */
	FAILS_WITH(ACCEL_ERROR_NOT_SUPPORTED, accel_array_from_dlpack(NULL, &f->t, &a));
	t->dtype = (DLDataType){ kDLBfloat, 16, 1 };
	FAILS_WITH(ACCEL_ERROR_NOT_SUPPORTED, accel_array_from_dlpack(NULL, &f->t, &a));
	t->dtype = (DLDataType){ kDLComplex, 128, 1 };
	FAILS_WITH(ACCEL_ERROR_NOT_SUPPORTED, accel_array_from_dlpack(NULL, &f->t, &a));
	*t = saved;
	t->ndim = ACCEL_MAX_DIMS + 1;
	FAILS(accel_array_from_dlpack(NULL, &f->t, &a));
	t->ndim = -1;
	FAILS(accel_array_from_dlpack(NULL, &f->t, &a));
	*t = saved;
	f->shape[0] = -1;
	FAILS(accel_array_from_dlpack(NULL, &f->t, &a));
	f->shape[0] = 16;
	t->shape = NULL;
	FAILS(accel_array_from_dlpack(NULL, &f->t, &a));
	*t = saved;
	f->strides[0] = -1;
	t->strides = f->strides;
	FAILS(accel_array_from_dlpack(NULL, &f->t, &a));
	f->strides[0] = INT64_MAX / 4;	/* overflows in bytes */
	FAILS(accel_array_from_dlpack(NULL, &f->t, &a));
	*t = saved;
	t->byte_offset = 4;	/* float64 at a 4-byte boundary */
	FAILS(accel_array_from_dlpack(NULL, &f->t, &a));
	*t = saved;
	t->data = NULL;
	FAILS(accel_array_from_dlpack(NULL, &f->t, &a));
	*t = saved;
	/* device memory is no host memory */
	t->device = (DLDevice){ kDLCUDA, 0 };
	FAILS(accel_array_from_dlpack(NULL, &f->t, &a));
	t->device = (DLDevice){ kDLExtDev, 0 };
	FAILS(accel_array_from_dlpack(NULL, &f->t, &a));
	*t = saved;
	CHECK(atomic_load(&f->deleted) == 0);
	/* and after all that, the same tensor imports */
	REQUIRE_OK(accel_array_from_dlpack(NULL, &f->t, &a));
	OK(accel_array_release(a));
	CHECK(atomic_load(&f->deleted) == 1);
	foreign_free(f);
}

/* another device's memory is refused by this one, the tensor kept */
TEST(dlpack_import_checks_the_device)
{
	struct foreign *f = foreign_new(16, 2);
	DLTensor *t = &f->t.dl_tensor;
	bool cuda = on(ctx, "cuda"), accel = on(ctx, "accel");
	int idx = index_in_backend(ctx);
	accel_array_t a;

	t->device = (DLDevice){ kDLCUDA, cuda ? idx + 1 : 0 };
	FAILS(accel_array_from_dlpack(ctx->dev, &f->t, &a));
	t->device = (DLDevice){ kDLExtDev, accel ? idx + 1 : idx };
	FAILS(accel_array_from_dlpack(ctx->dev, &f->t, &a));
	t->device = (DLDevice){ kDLOpenCL, 0 };
	FAILS(accel_array_from_dlpack(ctx->dev, &f->t, &a));
	t->device = (DLDevice){ kDLCPU, 0 };
	if (is_cpu(ctx)) {
		/* a cpu device's memory is host memory */
		REQUIRE_OK(accel_array_from_dlpack(ctx->dev, &f->t, &a));
		OK(accel_array_release(a));
		CHECK(atomic_load(&f->deleted) == 1);
	} else {
		/* host memory the device has not pinned */
		FAILS(accel_array_from_dlpack(ctx->dev, &f->t, &a));
		CHECK(atomic_load(&f->deleted) == 0);
		REQUIRE_OK(accel_host_memory_register(ctx->dev, f->buf, f->bytes));
		REQUIRE_OK(accel_array_from_dlpack(ctx->dev, &f->t, &a));
		OK(accel_array_release(a));
		CHECK(atomic_load(&f->deleted) == 1);
		OK(accel_host_memory_unregister(ctx->dev, f->buf));
	}
	foreign_free(f);
}

/* accel_memory_free() gives the tensor back at once, and only once */
TEST(dlpack_import_freed_explicitly)
{
	struct foreign *f = foreign_new(64, 4);
	accel_memory_t m;
	accel_array_t a;

	f->t.dl_tensor.device = (DLDevice){ kDLCPU, 0 };
	if (!is_cpu(ctx))
		REQUIRE_OK(accel_host_memory_register(ctx->dev, f->buf, f->bytes));
	REQUIRE_OK(accel_array_from_dlpack(ctx->dev, &f->t, &a));
	REQUIRE_OK(accel_array_as_memory(a, &m));
	OK(accel_memory_free(m));
	CHECK(atomic_load(&f->deleted) == 1);
	OK(accel_array_release(a));
	CHECK(atomic_load(&f->deleted) == 1);
	if (!is_cpu(ctx))
		OK(accel_host_memory_unregister(ctx->dev, f->buf));
	foreign_free(f);
}

/*
 * The deleter runs after the transfers queued on the lent memory: a
 * producer may reuse it as soon as it is told (this one poisons it).
 */
TEST(dlpack_import_given_back_after_queued_transfers)
{
	const size_t n = 8u << 20;
	struct foreign *f = foreign_new(n, 6);
	struct accel_array_info info;
	accel_array_t lent, dev, out;
	accel_stream_t s;

	f->poison = true;
	if (!is_cpu(ctx))
		REQUIRE_OK(accel_host_memory_register(ctx->dev, f->buf, f->bytes));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_array_from_dlpack(ctx->dev, &f->t, &lent));
	REQUIRE_OK(accel_device_array_like(ctx->dev, lent, s, &dev));
	REQUIRE_OK(accel_array_copy_to_device(dev, lent, s));
	OK(accel_array_release(lent));
	CHECK(atomic_load(&f->deleted) == 1);
	OK(accel_stream_synchronize(ctx->dev, s));
	REQUIRE_OK(accel_array_copy_to_host(dev, NULL, NULL, &out));
	REQUIRE_OK(accel_array_get_info(out, &info));
	CHECK(check_pattern(info.data, n * 8, 6));
	OK(accel_array_release(out));
	OK(accel_array_release(dev));
	OK(accel_stream_destroy(ctx->dev, s));
	if (!is_cpu(ctx))
		OK(accel_host_memory_unregister(ctx->dev, f->buf));
	foreign_free(f);
}

/* ------------------------------------------------------------------ */
/* Native streams: CUDA's, what other libraries' protocols name */

TEST(native_streams_are_cudas)
{
	void *native = (void *)&native;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	if (!on(ctx, "cuda")) {
		FAILS_WITH(ACCEL_ERROR_NOT_SUPPORTED,
			   accel_stream_get_native(ctx->dev, s, &native));
		CHECK(native == NULL);
		FAILS_WITH(ACCEL_ERROR_NOT_SUPPORTED,
			   accel_native_stream_synchronize(ctx->dev, (void *)1));
	} else {
		REQUIRE_OK(accel_stream_get_native(ctx->dev, s, &native));
		CHECK(native != NULL);
		OK(accel_native_stream_synchronize(ctx->dev, native));
		/* the CUDA array interface's legacy and per-thread defaults */
		OK(accel_native_stream_synchronize(ctx->dev, (void *)1));
		OK(accel_native_stream_synchronize(ctx->dev, (void *)2));
	}
	FAILS(accel_stream_get_native(ctx->dev, s, NULL));
	OK(accel_stream_destroy(ctx->dev, s));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_stream_get_native(ctx->dev, s, &native));
}
