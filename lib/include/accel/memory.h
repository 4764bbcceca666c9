/* SPDX-License-Identifier: MIT */
/*
 * libaccel memory objects: typed memory handles (OCCA's occa::memory and
 * wrapMemory), host-accessible memory (the Taichi runtime's allocations,
 * map and unmap) and n-dimensional arrays (Numba's device, pinned and
 * mapped arrays and the CUDA array interface), on every backend.
 *
 * Handles. Every accel_memory_t and accel_array_t is a handle the caller
 * owns and gives back with its release function. Handles on the same
 * storage (slices, casts, array views) share it: the storage lives until
 * the last handle on it is released, or until accel_memory_free() frees it
 * at once; every other handle on it then reports that it is no longer valid
 * instead of touching freed memory: memory and array functions given one
 * fail with ACCEL_ERROR_INVALID_HANDLE and say it was freed (the array
 * functions that only read the layout, the *_like constructors, too), and
 * the predicates (accel_memory_is_valid(), accel_array_has_interface(),
 * accel_array_is_c_contiguous(), accel_array_is_f_contiguous()) return 0;
 * only the release works. Wrapped memory is never freed by the
 * library. A handle is an opaque value, never an address: a released
 * handle is refused by every function with ACCEL_ERROR_INVALID_HANDLE for
 * the life of the process, whatever is allocated since, and so are a
 * memory handle passed as an array (or the other way round) and values the
 * library never gave out; NULL is refused the same way, except by the
 * release functions, for which it does nothing. A handle released by one
 * thread while others use it is released once their calls return.
 *
 * Device memory comes from the device's default caching pool
 * (accel_device_pool()), host-accessible memory is unified memory, pinned
 * and mapped arrays are pinned host memory. Errors are reported as in
 * <accel/accel.h>: ACCEL_FAILED and accel_get_last_error().
 */
#ifndef ACCEL_MEMORY_H
#define ACCEL_MEMORY_H

#include <stddef.h>

#include <accel/accel.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Data types */

/* A data type: a name and a size in bytes. Types live as long as the process. */
typedef const struct accel_dtype *accel_dtype_t;

/* The built-in types, the C scalar types under NumPy's names. */
enum accel_scalar {
	ACCEL_BOOL,	/* "bool", 1 byte */
	ACCEL_INT8,	/* "int8", alias "char" */
	ACCEL_UINT8,	/* "uint8", alias "byte" */
	ACCEL_INT16,	/* "int16", alias "short" */
	ACCEL_UINT16,	/* "uint16" */
	ACCEL_INT32,	/* "int32", alias "int" */
	ACCEL_UINT32,	/* "uint32" */
	ACCEL_INT64,	/* "int64", alias "long" */
	ACCEL_UINT64,	/* "uint64" */
	ACCEL_FLOAT32,	/* "float32", alias "float" */
	ACCEL_FLOAT64,	/* "float64", alias "double" */
	ACCEL_SCALAR_COUNT
};

/* accel_dtype - the built-in type @scalar, or NULL if there is none */
ACCEL_EXPORT accel_dtype_t accel_dtype(enum accel_scalar scalar);

/*
 * accel_dtype_find - the type called @name (a built-in name or alias, or a
 * registered name), into *dtype
 */
ACCEL_EXPORT accel_status_t accel_dtype_find(const char *name,
					     accel_dtype_t *dtype);

/*
 * accel_dtype_register - add a type of @size bytes called @name
 * @name: 1 to 63 characters, not the name of another type
 *
 * Its array-interface typestr is "|V<size>" (opaque bytes).
 */
ACCEL_EXPORT accel_status_t accel_dtype_register(const char *name, size_t size,
						 accel_dtype_t *dtype);

/* accel_dtype_name - the type's name, or NULL for a NULL type */
ACCEL_EXPORT const char *accel_dtype_name(accel_dtype_t dtype);

/* accel_dtype_size - the type's size in bytes, or 0 for a NULL type */
ACCEL_EXPORT size_t accel_dtype_size(accel_dtype_t dtype);

/*
 * accel_dtype_typestr - the type in NumPy's array-interface notation, such
 * as "<f8", or NULL for a NULL type
 */
ACCEL_EXPORT const char *accel_dtype_typestr(accel_dtype_t dtype);

/* ------------------------------------------------------------------ */
/* Memory handles */

typedef struct accel_memory_handle *accel_memory_t;

/* Allocation flags: the host may map the memory to read, to write. */
#define ACCEL_MEMORY_HOST_READ	(1u << 0)
#define ACCEL_MEMORY_HOST_WRITE	(1u << 1)
#define ACCEL_MEMORY_FLAGS_VALID (ACCEL_MEMORY_HOST_READ | ACCEL_MEMORY_HOST_WRITE)

/* As a count: every entry from the offset to the end. */
#define ACCEL_ALL ((size_t)-1)

/* What a memory handle is. */
struct accel_memory_info {
	size_t entries;		/* of dtype */
	size_t bytes;		/* entries * the dtype's size */
	accel_dtype_t dtype;
	int device;		/* the device's id */
	void *ptr;		/* the native pointer of the first entry */
	unsigned int flags;	/* the ACCEL_MEMORY_HOST_* it allows */
	int wrapped;		/* 1: wraps the caller's memory, never freed here */
	int mapped;		/* times mapped and not yet unmapped */
};

/*
 * accel_memory_create - allocate @entries entries of @dtype on @device
 * @src: host memory to initialise it from (entries * size bytes), or NULL
 * @flags: 0 for device-only memory, or ACCEL_MEMORY_HOST_READ and/or
 *	ACCEL_MEMORY_HOST_WRITE for memory the host may map
 *
 * Device-only memory comes from the device's default pool, host-accessible
 * memory is unified memory. 0 entries give a valid, empty handle.
 */
ACCEL_EXPORT accel_status_t accel_memory_create(const accel_device_t device,
						size_t entries,
						accel_dtype_t dtype,
						const void *src,
						unsigned int flags,
						accel_memory_t *mem);

/*
 * accel_memory_wrap - a handle on memory the caller owns
 * @ptr: a native pointer of @device: device (or unified) memory of it,
 *	pinned or registered host memory of it, or on a cpu device any host
 *	memory; [ptr, ptr + entries * size) must lie inside it (for pool
 *	memory, inside a live block; on a cpu device, host memory that is an
 *	allocation of another device of the library is held to that
 *	allocation the same way); aligned for @dtype (accel_memory_cast())
 *
 * The library never frees wrapped memory, not even when the last handle
 * on it goes or accel_memory_free() is called: the caller frees it, after
 * releasing the handles.
 */
ACCEL_EXPORT accel_status_t accel_memory_wrap(const accel_device_t device,
					      void *ptr, size_t entries,
					      accel_dtype_t dtype,
					      accel_memory_t *mem);

/*
 * accel_memory_release - give the handle back; the storage goes with the
 * last handle on it (wrapped memory stays the caller's)
 *
 * NULL does nothing. After the call the handle is refused by every function.
 * The release does not wait for the device: device memory is reused only
 * once the work submitted before the release, on every stream, has
 * completed. The last handle on mapped memory is not released (the mapping
 * would point at freed memory): the call fails with ACCEL_ERROR_IN_USE and
 * the handle stays valid; unmap it, then release it. Other handles on the
 * storage may be released while it is mapped.
 */
ACCEL_EXPORT accel_status_t accel_memory_release(accel_memory_t mem);

/*
 * accel_memory_free - free the storage now and release @mem
 *
 * The call does not wait for the device: device, unified and pinned memory
 * is reused only once the work submitted before the call, on every stream,
 * has completed. (Plain host memory waits for the transfers queued on it.) Every other handle on the
 * storage stays to be released but is no longer valid: functions given one
 * fail and say so. On a handle whose storage is freed already, this only
 * releases it. Mapped memory is not freed: the call fails until it is
 * unmapped.
 */
ACCEL_EXPORT accel_status_t accel_memory_free(accel_memory_t mem);

/*
 * accel_memory_is_valid - 1 if @mem is a live handle on storage that has
 * not been freed, else 0
 */
ACCEL_EXPORT int accel_memory_is_valid(accel_memory_t mem);

/* accel_memory_get_info - what @mem is, into *info */
ACCEL_EXPORT accel_status_t accel_memory_get_info(
	accel_memory_t mem, struct accel_memory_info *info);

/*
 * accel_memory_slice - a handle on @count entries of @mem from entry
 * @offset, on the same storage (ACCEL_ALL: to the end)
 */
ACCEL_EXPORT accel_status_t accel_memory_slice(accel_memory_t mem,
					       size_t offset, size_t count,
					       accel_memory_t *slice);

/*
 * accel_memory_cast - a handle on the same bytes as entries of @dtype,
 * whose size must divide the bytes
 *
 * The first entry's address must be a multiple of @dtype's alignment: its
 * size for the built-in types, 1 for registered types (opaque bytes). A
 * slice of bytes at an odd offset is no int16 memory.
 */
ACCEL_EXPORT accel_status_t accel_memory_cast(accel_memory_t mem,
					      accel_dtype_t dtype,
					      accel_memory_t *cast);

/*
 * accel_memory_clone - new storage of the same kind on the same device,
 * holding a copy of @mem's entries
 *
 * A clone of wrapped memory is owned by the library: device memory, or on
 * a cpu device, for wrapped host memory, device memory too.
 */
ACCEL_EXPORT accel_status_t accel_memory_clone(accel_memory_t mem,
					       accel_memory_t *clone);

/*
 * accel_memory_copy_from - copy @count entries from host memory @src into
 * @mem from entry @offset, and wait for completion
 * @count: ACCEL_ALL for every entry from @offset to the end
 *
 * A range past the end of @mem is an error and copies nothing.
 */
ACCEL_EXPORT accel_status_t accel_memory_copy_from(accel_memory_t mem,
						   const void *src,
						   size_t count, size_t offset);

/* accel_memory_copy_to - copy @count entries of @mem from @offset to @dst */
ACCEL_EXPORT accel_status_t accel_memory_copy_to(accel_memory_t mem, void *dst,
						 size_t count, size_t offset);

/*
 * accel_memory_copy - copy @count entries of @src from @src_offset to @dst
 * at @dst_offset, and wait for completion
 * @count: ACCEL_ALL for the rest of @src from @src_offset
 *
 * The two dtypes must have the same size. Memory of two devices is copied
 * peer to peer. Ranges that overlap in one storage are refused
 * (ACCEL_ERROR_INVALID_VALUE), as accel_memory_copy_d2d() refuses them;
 * the same range as source and destination is allowed and changes nothing.
 */
ACCEL_EXPORT accel_status_t accel_memory_copy(accel_memory_t dst,
					      accel_memory_t src, size_t count,
					      size_t dst_offset,
					      size_t src_offset);

/*
 * accel_memory_copy_from_async - as accel_memory_copy_from(), queued on
 * @stream, a stream of the memory's device
 *
 * The rules of accel_async_memory_copy_h2d() apply to @src.
 */
ACCEL_EXPORT accel_status_t accel_memory_copy_from_async(accel_memory_t mem,
							 accel_stream_t stream,
							 const void *src,
							 size_t count,
							 size_t offset);

/*
 * accel_memory_copy_to_async - as accel_memory_copy_to(), queued on
 * @stream; read @dst after synchronizing
 */
ACCEL_EXPORT accel_status_t accel_memory_copy_to_async(accel_memory_t mem,
						       accel_stream_t stream,
						       void *dst, size_t count,
						       size_t offset);

/*
 * accel_memory_copy_async - as accel_memory_copy(), queued on @stream
 *
 * Between the memories of two devices, @stream is a stream of either;
 * between host memory (of any device) and a device's memory, a stream of
 * that device, whose engine runs the copy: no stream of another device
 * can order it (ACCEL_ERROR_INVALID_HANDLE).
 */
ACCEL_EXPORT accel_status_t accel_memory_copy_async(accel_memory_t dst,
						    accel_memory_t src,
						    accel_stream_t stream,
						    size_t count,
						    size_t dst_offset,
						    size_t src_offset);

/* ------------------------------------------------------------------ */
/* Host access (host-accessible memory) */

/* Access wanted from accel_memory_map(). */
#define ACCEL_MAP_READ	ACCEL_MEMORY_HOST_READ
#define ACCEL_MAP_WRITE	ACCEL_MEMORY_HOST_WRITE

/*
 * accel_memory_map - a host pointer to @mem's first entry
 * @access: ACCEL_MAP_READ and/or ACCEL_MAP_WRITE, each of which the memory
 *	must have been allocated for
 *
 * Waits until the device's queued work is done, so the host sees what it
 * wrote. Device-only memory cannot be mapped: the call fails and says so.
 * Until as many accel_memory_unmap() calls, the device does not use the
 * storage: copies to or from it fail.
 */
ACCEL_EXPORT accel_status_t accel_memory_map(accel_memory_t mem,
					     unsigned int access, void **ptr);

/*
 * accel_memory_unmap - end one accel_memory_map(), publishing the host's
 * writes to the device
 */
ACCEL_EXPORT accel_status_t accel_memory_unmap(accel_memory_t mem);

/*
 * accel_memory_read - copy @bytes from the start of host-readable memory
 * to @dst, through a mapping
 */
ACCEL_EXPORT accel_status_t accel_memory_read(accel_memory_t mem, void *dst,
					      size_t bytes);

/*
 * accel_memory_write - copy @bytes from @src to the start of host-writable
 * memory, through a mapping
 */
ACCEL_EXPORT accel_status_t accel_memory_write(accel_memory_t mem,
					       const void *src, size_t bytes);

/* ------------------------------------------------------------------ */
/* Arrays */

typedef struct accel_array_handle *accel_array_t;

/* The most dimensions an array has (NumPy's NPY_MAXDIMS). */
#define ACCEL_MAX_DIMS 32

/* Where an array's data lies. */
enum accel_array_kind {
	ACCEL_ARRAY_DEVICE,	/* device memory */
	ACCEL_ARRAY_PINNED,	/* pinned (page-locked) host memory */
	ACCEL_ARRAY_MAPPED,	/* pinned host memory the device reaches directly */
	ACCEL_ARRAY_HOST,	/* ordinary host memory */
};

/* What an array is. Strides are in bytes. */
struct accel_array_info {
	enum accel_array_kind kind;
	int device;		/* the device's id; -1 for host arrays */
	int ndim;
	size_t shape[ACCEL_MAX_DIMS];
	ptrdiff_t strides[ACCEL_MAX_DIMS];
	accel_dtype_t dtype;
	size_t size;		/* entries: the product of the shape */
	size_t nbytes;		/* size * the dtype's size */
	void *data;		/* the first entry; NULL when size is 0 */
	accel_stream_t stream;	/* the stream it was made for, or NULL */
	int readonly;
};

/*
 * The CUDA array interface, version 3: what __cuda_array_interface__
 * holds, so that other libraries can use an array's memory.
 */
struct accel_array_interface {
	int version;		/* 3 */
	int ndim;
	size_t shape[ACCEL_MAX_DIMS];
	char typestr[16];	/* such as "<f4" */
	void *data;		/* device pointer; NULL when the size is 0 */
	int readonly;
	int has_strides;	/* 0: C-contiguous, strides is None */
	ptrdiff_t strides[ACCEL_MAX_DIMS];
	accel_stream_t stream;	/* to synchronize before use; NULL for None */
};

/*
 * accel_device_array - an uninitialised device array (numpy.empty on the
 * device)
 * @ndim: 0 to ACCEL_MAX_DIMS
 * @shape: @ndim extents, whose product (an empty axis counted as 1) times
 *	the dtype's size fits in a ptrdiff_t, as NumPy asks
 * @dtype: the entries' type; NULL for float64 (Numba's and NumPy's
 *	default), in every array constructor
 * @strides: @ndim strides in bytes, each at least 0, or NULL for the
 *	contiguous strides of @order; the stride of every axis longer than
 *	one entry a multiple of the dtype's alignment (accel_memory_cast()),
 *	so that no entry is misaligned, in every array constructor and view
 * @order: 'C' (row major) or 'F' (column major)
 * @stream: the stream the array is made for (its memory comes from that
 *	stream's share of the pool), or NULL; a live stream of @device, checked in
 *	every array constructor even where the array needs none (empty, mapped)
 */
ACCEL_EXPORT accel_status_t accel_device_array(const accel_device_t device,
					       int ndim, const size_t *shape,
					       accel_dtype_t dtype,
					       const ptrdiff_t *strides,
					       char order,
					       accel_stream_t stream,
					       accel_array_t *ary);

/*
 * accel_device_array_like - accel_device_array() with the shape and dtype
 * of @like, contiguous with its axes in @like's stride order
 */
ACCEL_EXPORT accel_status_t accel_device_array_like(const accel_device_t device,
						    accel_array_t like,
						    accel_stream_t stream,
						    accel_array_t *ary);

/* accel_pinned_array - an array in pinned host memory; as above */
ACCEL_EXPORT accel_status_t accel_pinned_array(const accel_device_t device,
					       int ndim, const size_t *shape,
					       accel_dtype_t dtype,
					       const ptrdiff_t *strides,
					       char order, accel_array_t *ary);

/* accel_pinned_array_like - accel_pinned_array() like @like */
ACCEL_EXPORT accel_status_t accel_pinned_array_like(const accel_device_t device,
						    accel_array_t like,
						    accel_array_t *ary);

/*
 * accel_mapped_array - an array in pinned host memory that the device
 * reaches directly: the host reads and writes it, and it takes the place of
 * a device array in every transfer and in the array interface
 */
ACCEL_EXPORT accel_status_t accel_mapped_array(const accel_device_t device,
					       int ndim, const size_t *shape,
					       accel_dtype_t dtype,
					       const ptrdiff_t *strides,
					       char order,
					       accel_stream_t stream,
					       accel_array_t *ary);

/* Flags of accel_mapped_array_flags() (Numba's mapped_array(portable, wc)). */
/* pinned for every visible device, not only @device: any of them copies it directly */
#define ACCEL_ARRAY_PORTABLE		(1u << 0)
/*
 * write-combined: fast for the host to write and the device to read, very
 * slow for the host to read. On cuda, cuMemHostAlloc's WRITECOMBINED; on
 * accel, the device's host-visible memory through its write-combined BAR
 * mapping (it counts against device memory); on cpu, ordinary memory.
 */
#define ACCEL_ARRAY_WRITE_COMBINED	(1u << 1)
#define ACCEL_ARRAY_FLAGS_VALID (ACCEL_ARRAY_PORTABLE | ACCEL_ARRAY_WRITE_COMBINED)

/*
 * accel_mapped_array_flags - accel_mapped_array() with ACCEL_ARRAY_* @flags
 * (0: the same as accel_mapped_array())
 *
 * Portable memory is ordinary host pages registered with every visible
 * device (as accel_host_memory_register() does) until the array's memory
 * goes; cuda's write-combined memory is portable between cuda devices
 * already and is registered with the devices of other backends. Elsewhere
 * (accel) write-combined memory cannot be pinned by another device: with
 * both flags, portability wins and the memory is not write-combined.
 *
 * Unlike other memory, portable memory is not freed behind the device's
 * work: the release of its last handle waits for the work queued before it
 * on every stream of every device (as accel_host_memory_unregister() does),
 * then ends the registrations and unmaps the pages. A registration may end
 * only after the transfers that use it, and the pages are unmapped only
 * after every registration has ended; the library has no deferred path that
 * orders those steps across devices yet, so it waits.
 */
ACCEL_EXPORT accel_status_t accel_mapped_array_flags(
	const accel_device_t device, int ndim, const size_t *shape,
	accel_dtype_t dtype, const ptrdiff_t *strides, char order,
	accel_stream_t stream, unsigned int flags, accel_array_t *ary);

/* accel_mapped_array_like - accel_mapped_array() like @like */
ACCEL_EXPORT accel_status_t accel_mapped_array_like(const accel_device_t device,
						    accel_array_t like,
						    accel_stream_t stream,
						    accel_array_t *ary);

/*
 * accel_host_array - a host array (a NumPy ndarray) over @data, or over new
 * host memory when @data is NULL
 * @readonly: 1 if the array must not be written (copies into it fail)
 *
 * The caller keeps ownership of @data and keeps it alive while the array
 * is used.
 */
ACCEL_EXPORT accel_status_t accel_host_array(void *data, int ndim,
					     const size_t *shape,
					     accel_dtype_t dtype,
					     const ptrdiff_t *strides,
					     char order, int readonly,
					     accel_array_t *ary);

/*
 * accel_array_release - give the array handle back; its memory goes with
 * the last handle on it (a host array's caller-provided data stays). A
 * registered host array is unregistered first. NULL does nothing. The last
 * handle on mapped memory (see accel_memory_map()) is not released: the call
 * fails with ACCEL_ERROR_IN_USE and the array stays valid.
 */
ACCEL_EXPORT accel_status_t accel_array_release(accel_array_t ary);

/* accel_array_get_info - what @ary is, into *info */
ACCEL_EXPORT accel_status_t accel_array_get_info(accel_array_t ary,
						 struct accel_array_info *info);

/*
 * accel_to_device - a new device array with the shape, strides and dtype of
 * @host, holding a copy of its data
 * @stream: NULL to copy synchronously, else the copy is queued on it
 */
ACCEL_EXPORT accel_status_t accel_to_device(const accel_device_t device,
					    accel_array_t host,
					    accel_stream_t stream,
					    accel_array_t *ary);

/*
 * accel_to_device_ex - Numba's to_device(obj, stream, copy): @host on
 * @device, without a copy where it is there already
 * @host: any array
 * @stream: as for accel_to_device()
 * @copy: 1: the new device array holds a copy of @host's data (as
 *	accel_to_device()); 0: it is only allocated, uninitialised
 *
 * If @host is usable by the device as it is (a device array of @device, or
 * a mapped array or registered-mapped host array of it), *@ary is a new
 * handle on the same memory, with the same layout, and nothing is
 * allocated or copied, whatever @copy says; release it as any other.
 */
ACCEL_EXPORT accel_status_t accel_to_device_ex(const accel_device_t device,
					       accel_array_t host,
					       accel_stream_t stream, int copy,
					       accel_array_t *ary);

/*
 * accel_array_copy_to_device - copy @src's data into the device (or
 * mapped) array @dst, of the same dtype, shape and strides
 * @stream: NULL to copy synchronously, else the copy is queued on it
 */
ACCEL_EXPORT accel_status_t accel_array_copy_to_device(accel_array_t dst,
						       accel_array_t src,
						       accel_stream_t stream);

/*
 * accel_array_copy_to_host - copy @ary's data to host memory
 * @dst: a host (or pinned, or mapped) array of the same dtype, shape and
 *	strides to copy into, or NULL for a new host array
 * @stream: NULL: synchronous, the function returns after the copy is
 *	finished; else the copy is queued on @stream
 * @host: set to the host array: @dst itself when given (no new handle;
 *	@host may be NULL then), else the new array, which the caller releases
 */
ACCEL_EXPORT accel_status_t accel_array_copy_to_host(accel_array_t ary,
						     accel_array_t dst,
						     accel_stream_t stream,
						     accel_array_t *host);

/* accel_array_is_c_contiguous - 1 if row-major contiguous, else 0 */
ACCEL_EXPORT int accel_array_is_c_contiguous(accel_array_t ary);

/* accel_array_is_f_contiguous - 1 if column-major contiguous, else 0 */
ACCEL_EXPORT int accel_array_is_f_contiguous(accel_array_t ary);

/*
 * accel_array_ravel - a one-dimensional view of a contiguous array,
 * without copying
 * @order: 'C', 'F', or 'A' (whichever the array is)
 *
 * An array not contiguous in @order would need a copy: the call fails,
 * for a one-dimensional array with gaps too (as Numba's ravel raises). A
 * 0-d array gives shape (1,), as NumPy's ravel.
 */
ACCEL_EXPORT accel_status_t accel_array_ravel(accel_array_t ary, char order,
					      accel_array_t *flat);

/*
 * accel_array_reshape - a view with another shape and the same entries,
 * without copying
 * @shape: @ndim extents with the same product as @ary's; one may be -1
 *	(as (size_t)-1), computed from the others
 * @order: 'C' or 'F': the order the entries are read in, or 'A'
 *
 * An array not contiguous in @order would need a copy: the call fails,
 * unless the shape is the array's own, when the view keeps its strides (as
 * Numba's and NumPy's reshape do).
 */
ACCEL_EXPORT accel_status_t accel_array_reshape(accel_array_t ary, int ndim,
						const size_t *shape, char order,
						accel_array_t *view);

/*
 * accel_array_register - pin a host array's memory for @device until
 * accel_array_unregister() (Numba's pinned and mapped scopes)
 * @mapped: 0: the array becomes pinned; 1: mapped, reached by the device
 *	directly
 */
ACCEL_EXPORT accel_status_t accel_array_register(const accel_device_t device,
						 accel_array_t host,
						 int mapped);

/* accel_array_unregister - end accel_array_register() on @host */
ACCEL_EXPORT accel_status_t accel_array_unregister(accel_array_t host);

/*
 * accel_array_has_interface - 1 if @ary exports the CUDA array interface
 * (device and mapped arrays), else 0; says nothing of its validity
 */
ACCEL_EXPORT int accel_array_has_interface(accel_array_t ary);

/* accel_array_get_interface - @ary's CUDA array interface, into *iface */
ACCEL_EXPORT accel_status_t accel_array_get_interface(
	accel_array_t ary, struct accel_array_interface *iface);

/*
 * accel_array_from_interface - a device array viewing the memory that
 * @iface describes (numba.cuda.as_cuda_array), without copying
 * @sync: 1 to synchronize the interface's stream first
 *
 * The data must be memory of @device that accel_memory_wrap() accepts,
 * aligned for the typestr's type (the first entry and every stride, as
 * accel_device_array() says), and the extent the shape and strides span
 * from it must lie inside its allocation (for pool memory, its live
 * block). Where the data lies in the library's own memory (a memory
 * handle's or an array's storage, of whatever device: portable memory of
 * another device, or on a cpu device memory of another cpu device), the
 * view holds a reference to that storage, as a slice does, and the extent
 * must lie inside it: it stays valid after the producer is released
 * (accel_memory_free() on the producer still ends it). Mapped through any
 * handle on that storage or through the view, the bytes are mapped for all
 * of them (accel_memory_map()), and a copy between the view and that
 * storage refuses overlapping ranges as a slice's does. Other memory (the
 * caller's, wrapped) is not kept alive.
 */
ACCEL_EXPORT accel_status_t accel_array_from_interface(
	const accel_device_t device, const struct accel_array_interface *iface,
	int sync, accel_array_t *ary);

/* ------------------------------------------------------------------ */
/* Between memory handles and arrays */

/*
 * accel_memory_as_array - an array over @mem's entries, without copying
 * @ndim, @shape, @strides, @order: as for accel_device_array(); the dtype
 *	is @mem's
 *
 * The array starts at @mem's first entry and may span no more than its
 * bytes. It shares the storage, as a slice does: it stays valid after @mem
 * is released, and accel_memory_free() on any handle ends it too.
 */
ACCEL_EXPORT accel_status_t accel_memory_as_array(accel_memory_t mem, int ndim,
						  const size_t *shape,
						  const ptrdiff_t *strides,
						  char order,
						  accel_array_t *ary);

/*
 * accel_array_as_memory - a memory handle on a contiguous array's entries,
 * without copying
 *
 * The handle has the array's dtype and size in entries (in memory order),
 * and shares its storage as accel_memory_as_array() does. A host array (of
 * no device), a read-only array or one that is not contiguous ('C' or 'F')
 * has no memory handle: the call fails.
 */
ACCEL_EXPORT accel_status_t accel_array_as_memory(accel_array_t ary,
						  accel_memory_t *mem);

/* ------------------------------------------------------------------ */
/* Pointer attributes (cudaPointerGetAttributes) */

/* What memory a pointer is in. */
enum accel_pointer_type {
	/* host memory the library does not know, or NULL (not an error) */
	ACCEL_POINTER_UNREGISTERED,
	ACCEL_POINTER_DEVICE,		/* device memory */
	ACCEL_POINTER_PINNED_HOST,	/* pinned host memory the library allocated */
	ACCEL_POINTER_UNIFIED,		/* unified (managed) memory */
	ACCEL_POINTER_REGISTERED_HOST,	/* the caller's host memory, registered */
};

/* What accel_pointer_get_attributes() reports. */
struct accel_pointer_attributes {
	enum accel_pointer_type type;
	/*
	 * the device's id (the lowest, for host memory registered with
	 * several); -1 for unregistered memory
	 */
	int device;
	void *base;		/* the allocation holding the pointer; NULL if none */
	size_t size;		/* its size in bytes */
	/*
	 * 1: the allocation is a caching pool's (a chunk carved into blocks,
	 * or a large block of its own): what the caller owns is a block
	 */
	int pooled;
	int block_live;		/* pooled: 1 if the pointer is in a block in use */
	void *block_base;	/* pooled and live: the block the pool handed out */
	size_t block_size;	/* the bytes that block was asked for */
};

/*
 * accel_pointer_get_attributes - what @ptr points into, as
 * cudaPointerGetAttributes() says it (CUDA 11 and later)
 * @ptr: any pointer: device, pinned, unified or registered memory of a
 *	visible device, anywhere inside an allocation, or any other address
 *
 * A pointer the library does not know (ordinary host memory, NULL, freed
 * memory) is reported as ACCEL_POINTER_UNREGISTERED with device -1, not as
 * an error. For memory of a caching pool, base and size are the pool's
 * allocation from the device, and block_base and block_size the live block
 * that holds @ptr, the range that copies into it may use; a pointer into a
 * free part of the pool, or past the end of a live block (into the pool's
 * rounding of its size), has block_live 0.
 */
ACCEL_EXPORT accel_status_t accel_pointer_get_attributes(
	const void *ptr, struct accel_pointer_attributes *attr);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_MEMORY_H */
