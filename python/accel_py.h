/* SPDX-License-Identifier: MIT */
/*
 * The Python module accel: Numba's memory-management API (seed 004) over
 * libaccel, with DLPack, the CUDA array interface and NumPy's protocols.
 * One file per concern: module.c (devices, errors, the module), array.c
 * (DeviceNDArray), convert.c (NumPy and foreign objects in), protocols.c
 * (DLPack, the CUDA array interface, buffers out), host.c (pinned and
 * mapped memory), stream.c (streams), numpy.c (NumPy itself).
 *
 * One binary for every CPython from 3.11 and every NumPy from 1.x: the
 * module uses only the stable ABI (abi3) and NumPy only through its
 * Python API, never its C API, whose ABI changed with NumPy 2.
 */
#ifndef ACCEL_PY_H
#define ACCEL_PY_H

#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030B0000
#include <Python.h>
#include <structmember.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <accel/accel.h>
#include <accel/dlpack.h>
#include <accel/memory.h>

/*
 * A library call that may wait, with the GIL released around it; while the
 * pools record their history, tagged with the caller's Python stack.
 */
#define WITHOUT_GIL(status, call)					\
	do {								\
		bool tagged_ = history_recording &&			\
			       history_context_capture();		\
		Py_BEGIN_ALLOW_THREADS					\
		(status) = (call);					\
		Py_END_ALLOW_THREADS					\
		if (tagged_)						\
			accel_pool_set_history_context(0);		\
	} while (0)

/* history.c: whether any default pool records its history */
extern bool history_recording;
/*
 * set the calling thread's history context to its Python stack's number;
 * that number (0 if it has none)
 */
uint64_t history_context_capture(void);

/* ------------------------------------------------------------------ */
/* module.c */

extern PyObject *accel_py_error;	/* accel.AccelError */

/* raise AccelError with the calling thread's last library error; NULL */
PyObject *raise_accel(void);
/*
 * raise TypeError "<@fmt's message>, not <@obj's type>" (the type's
 * qualified name, as tp_name was, which the limited API does not show); NULL
 */
PyObject *raise_not(PyObject *obj, const char *fmt, ...);
/* a new heap type of @spec (@bases: NULL or a tuple), also added to @m if any */
PyTypeObject *new_type(PyObject *m, PyType_Spec *spec, PyObject *bases);
/* the number of visible devices; -1 with an exception set */
int device_count(void);
/* the visible device @id as the library's handle */
accel_device_t device_handle(int id);
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
	accel_stream_t stream;	/* NULL: the synchronous "stream 0" */
	/* objects the stream's queued transfers use, dropped at synchronize */
	PyObject *pending;	/* list */
} StreamObject;

extern PyTypeObject *Stream_Type;
int stream_init(PyObject *m);
/*
 * The stream argument @obj (0, None or a Stream of device @dev) into
 * *@stream (NULL for synchronous); -1 with an exception set
 */
int stream_from_object(PyObject *obj, int dev, accel_stream_t *stream);
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

extern PyTypeObject *DeviceArray_Type;
int array_init(PyObject *m);

/*
 * A new DeviceNDArray over @ary (whose handle it takes over, released on
 * failure too), lent by @owner and made for @stream (both may be NULL)
 */
PyObject *device_array_wrap(accel_array_t ary, int dev, PyObject *owner,
			    PyObject *stream);
/* a tuple of @n sizes (size_t) or, @is_signed, byte strides (ptrdiff_t) */
PyObject *sizes_tuple(int n, const void *v, bool is_signed);
/* the array's info; -1 with an exception set */
int array_info(accel_array_t ary, struct accel_array_info *info);
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
/* numpy.c */

extern PyTypeObject *ndarray_type;	/* numpy.ndarray */
int numpy_init(void);
static inline bool is_ndarray(PyObject *obj)
{
	return PyObject_TypeCheck(obj, ndarray_type);
}
/* the NumPy dtype of @dtype (new reference) */
PyObject *descr_of(accel_dtype_t dtype);
/* the library's dtype of what numpy.dtype() makes of @obj; NULL with an exception set */
accel_dtype_t dtype_of_descr(PyObject *obj);
/* a NumPy array's layout, read through the buffer protocol */
struct numpy_layout {
	int ndim;
	size_t shape[ACCEL_MAX_DIMS];
	ptrdiff_t strides[ACCEL_MAX_DIMS];
	accel_dtype_t dtype;
	size_t itemsize;
	void *data;		/* NULL when the array is empty */
	bool readonly;
	bool c_contiguous, f_contiguous;	/* as NumPy's flags say */
};
/* the layout of NumPy array @arr; -1 with an exception set */
int numpy_layout(PyObject *arr, struct numpy_layout *l);
/* whether @l is aligned for its dtype, as NumPy's ALIGNED flag says */
bool layout_aligned(const struct numpy_layout *l);
/* numpy.asanyarray(@obj) (new reference) */
PyObject *numpy_asanyarray(PyObject *obj);
/* a copy of NumPy array @arr in @order ('C', 'F' or 'K'), as arr.copy() */
PyObject *numpy_copy(PyObject *arr, char order);
/*
 * A NumPy array of @type over the host-accessible memory of @owner (a
 * DeviceNDArray), which its base keeps alive; NULL with an exception set
 */
PyObject *numpy_view(PyObject *owner, PyTypeObject *type);
/*
 * The DeviceNDArray whose memory NumPy array @arr views (numpy_view()'s,
 * through any views of it), as a new reference; NULL (no exception) if none
 */
DeviceArrayObject *numpy_lender(PyObject *arr);

/* ------------------------------------------------------------------ */
/* convert.c */

/*
 * A library host array over NumPy array @arr's memory (which must stay
 * alive while it is used); NULL with an exception set
 */
accel_array_t host_array_of(PyObject *arr);
/*
 * The library's own mapped array behind NumPy array @arr (a MappedNDArray
 * or a view of one), as a new handle with @arr's layout, or NULL (no
 * exception) when its memory is not mapped memory of the library's
 */
accel_array_t library_array_of(PyObject *arr);
/*
 * The library array for NumPy array @arr: its mapped memory's, else a host
 * array over it; NULL with an exception set
 */
accel_array_t array_of_numpy(PyObject *arr);
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
PyObject *array_numpy(DeviceArrayObject *self, PyObject *args, PyObject *kwds);
PyObject *array_numpy_interface(DeviceArrayObject *self, void *closure);
int array_getbuffer(DeviceArrayObject *self, Py_buffer *view, int flags);
void array_releasebuffer(DeviceArrayObject *self, Py_buffer *view);

/* ------------------------------------------------------------------ */
/* host.c */

extern PyTypeObject *MappedArray_Type;	/* accel.MappedNDArray */
/* MappedNDArray and the pinned() and mapped() scopes */
int host_init(PyObject *m);
PyObject *py_pinned_array(PyObject *self, PyObject *args, PyObject *kwds);
PyObject *py_pinned_array_like(PyObject *self, PyObject *args, PyObject *kwds);
PyObject *py_mapped_array(PyObject *self, PyObject *args, PyObject *kwds);
PyObject *py_mapped_array_like(PyObject *self, PyObject *args, PyObject *kwds);

#endif /* ACCEL_PY_H */
