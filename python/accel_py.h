/* SPDX-License-Identifier: MIT */
/*
 * The Python module accel: Numba's memory-management API (seed 004) over
 * libaccel, with DLPack, the CUDA array interface and NumPy's protocols.
 * One file per concern: module.c (devices, errors, the module), array.c
 * (DeviceNDArray), convert.c (NumPy and foreign objects in), protocols.c
 * (DLPack, the CUDA array interface, buffers out), host.c (pinned and
 * mapped memory), stream.c (streams).
 */
#ifndef ACCEL_PY_H
#define ACCEL_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL accel_py_ARRAY_API
#ifndef ACCEL_PY_MODULE_C
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <accel/accel.h>
#include <accel/dlpack.h>
#include <accel/memory.h>

/* A library call that may wait, with the GIL released around it. */
#define WITHOUT_GIL(status, call)					\
	do {								\
		Py_BEGIN_ALLOW_THREADS					\
		(status) = (call);					\
		Py_END_ALLOW_THREADS					\
	} while (0)

/* ------------------------------------------------------------------ */
/* module.c */

extern PyObject *accel_py_error;	/* accel.AccelError */

/* raise AccelError with the calling thread's last library error; NULL */
PyObject *raise_accel(void);
/* the visible device @id as the library's handle */
C_Device device_handle(int id);
/* the calling thread's current device (the first visible one at first) */
int current_device(void);
/* a new accel.Device for visible device @id */
PyObject *device_object(int id);
/* the device @obj names (Device, id or name); -1 with an exception set */
int device_from_object(PyObject *obj);

/* ------------------------------------------------------------------ */
/* stream.c */

typedef struct {
	PyObject_HEAD
	int dev;
	C_Stream stream;	/* NULL: the synchronous "stream 0" */
	/* objects the stream's queued transfers use, dropped at synchronize */
	PyObject *pending;	/* list */
} StreamObject;

extern PyTypeObject Stream_Type;
/*
 * The stream argument @obj (0, None or a Stream of device @dev) into
 * *@stream (NULL for synchronous); -1 with an exception set
 */
int stream_from_object(PyObject *obj, int dev, C_Stream *stream);
/* keep @obj until @stream_obj is synchronized (nothing for stream 0) */
int stream_keep(PyObject *stream_obj, PyObject *obj);
PyObject *stream_new(int dev);

/* ------------------------------------------------------------------ */
/* array.c */

typedef struct {
	PyObject_HEAD
	accel_array_t ary;
	int dev;		/* -1 for host memory */
	PyObject *owner;	/* what lends the memory, kept alive, or NULL */
	PyObject *stream;	/* the Stream it was made for, or NULL */
	PyObject *weakrefs;
} DeviceArrayObject;

extern PyTypeObject DeviceArray_Type;
extern PyTypeObject MappedArray_Type;

/*
 * A new DeviceNDArray over @ary (whose handle it takes over, released on
 * failure too), lent by @owner and made for @stream (both may be NULL)
 */
PyObject *device_array_wrap(accel_array_t ary, int dev, PyObject *owner,
			    PyObject *stream);
/* the array's info; -1 with an exception set */
int array_info(accel_array_t ary, struct accel_array_info *info);
/* the NumPy dtype of @dtype (new reference) */
PyArray_Descr *descr_of(accel_dtype_t dtype);
/* the library's dtype of a NumPy one; NULL with an exception set */
accel_dtype_t dtype_of_descr(PyArray_Descr *descr);
/* shape, dtype, strides and order arguments as Numba's constructors take them */
struct layout_args {
	int ndim;
	size_t shape[ACCEL_MAX_DIMS];
	ptrdiff_t strides[ACCEL_MAX_DIMS];
	bool has_strides;
	accel_dtype_t dtype;
	char order;
};
int parse_layout(PyObject *shape, PyObject *dtype, PyObject *strides,
		 PyObject *order, struct layout_args *l);

/* ------------------------------------------------------------------ */
/* convert.c */

/*
 * A library host array over NumPy array @arr's memory (which must stay
 * alive while it is used); NULL with an exception set
 */
accel_array_t host_array_of(PyArrayObject *arr);
/*
 * The library's own mapped array behind NumPy array @arr (a MappedNDArray
 * or a view of one), as a new handle with @arr's layout, or NULL (no
 * exception) when its memory is not mapped memory of the library's
 */
accel_array_t library_array_of(PyArrayObject *arr);
/*
 * The library array for NumPy array @arr: its mapped memory's, else a host
 * array over it; NULL with an exception set
 */
accel_array_t array_of_numpy(PyArrayObject *arr);
/* NumPy array over a library array's host-accessible memory, kept by @base */
PyObject *numpy_view(accel_array_t ary, PyObject *base, PyTypeObject *type);
/*
 * A DeviceNDArray of device @dev viewing @obj's memory without a copy
 * (numba.cuda.as_cuda_array), from __cuda_array_interface__ or
 * __dlpack__; NULL with an exception set
 */
PyObject *view_of_object(PyObject *obj, int dev, int sync);

/* ------------------------------------------------------------------ */
/* protocols.c */

PyObject *array_dlpack(DeviceArrayObject *self, PyObject *args,
		       PyObject *kwds);
PyObject *array_dlpack_device(DeviceArrayObject *self, PyObject *unused);
PyObject *array_cuda_interface(DeviceArrayObject *self, void *closure);
PyObject *array_numpy(DeviceArrayObject *self, PyObject *args);
PyObject *array_numpy_interface(DeviceArrayObject *self, void *closure);
extern PyBufferProcs DeviceArray_as_buffer;

/* ------------------------------------------------------------------ */
/* host.c */

extern PyTypeObject Pinned_Type;	/* the pinned() scope */
extern PyTypeObject Mapped_Type;	/* the mapped() scope */
PyObject *py_pinned_array(PyObject *self, PyObject *args, PyObject *kwds);
PyObject *py_pinned_array_like(PyObject *self, PyObject *args, PyObject *kwds);
PyObject *py_mapped_array(PyObject *self, PyObject *args, PyObject *kwds);
PyObject *py_mapped_array_like(PyObject *self, PyObject *args, PyObject *kwds);

#endif /* ACCEL_PY_H */
