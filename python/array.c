// SPDX-License-Identifier: MIT
/*
 * accel.DeviceNDArray (Numba's DeviceNDArray): a library array of a
 * device, with the object that lends its memory (if any) and the stream it
 * was made for kept alive; and the constructors of the module.
 */
#include "accel_py.h"

/* ------------------------------------------------------------------ */
/* dtypes and layouts */

/* A sequence of @n non-negative integers (or one integer for n == 1). */
static int parse_sizes(PyObject *obj, const char *what, int *n, size_t *out,
		       bool allow_minus_one)
{
	PyObject *seq = NULL;
	Py_ssize_t len;

	if (PyLong_Check(obj))
		seq = PyTuple_Pack(1, obj);
	else if (!PyUnicode_Check(obj) && !PyBytes_Check(obj))
		seq = PySequence_Tuple(obj);
	if (!seq) {
		PyErr_Clear();
		raise_not(obj, "%s must be an int or a sequence of ints", what);
		return -1;
	}
	len = PyTuple_Size(seq);
	if (len > ACCEL_MAX_DIMS || (*n >= 0 && len != *n)) {
		if (*n >= 0)
			PyErr_Format(PyExc_ValueError, "%s must have %d entries, not %zd",
				     what, *n, len);
		else
			PyErr_Format(PyExc_ValueError, "%s has more than %d dimensions",
				     what, ACCEL_MAX_DIMS);
		Py_DECREF(seq);
		return -1;
	}
	*n = (int)len;
	for (int i = 0; i < *n; i++) {
		PyObject *item = PyTuple_GetItem(seq, i);
		long long v;

		if (!PyIndex_Check(item)) {
			raise_not(item, "%s must hold ints", what);
			Py_DECREF(seq);
			return -1;
		}
		v = PyLong_AsLongLong(item);
		if (v == -1 && PyErr_Occurred()) {
			Py_DECREF(seq);
			return -1;
		}
		if (v < 0 && !(allow_minus_one && v == -1)) {
			PyErr_Format(PyExc_ValueError, "%s must not be negative: %lld",
				     what, v);
			Py_DECREF(seq);
			return -1;
		}
		out[i] = (size_t)v;
	}
	Py_DECREF(seq);
	return 0;
}

static int parse_order(PyObject *obj, char *order, const char *allowed)
{
	const char *s;
	Py_ssize_t len;

	if (!obj) {
		*order = 'C';
		return 0;
	}
	if (!PyUnicode_Check(obj)) {
		raise_not(obj, "order must be a str");
		return -1;
	}
	s = PyUnicode_AsUTF8AndSize(obj, &len);
	/* one character, which strchr() would find for a NUL too */
	if (!s || len != 1 || !s[0] || !strchr(allowed, s[0])) {
		PyErr_Clear();
		PyErr_Format(PyExc_ValueError, "order must be one of '%s', not %R",
			     allowed, obj);
		return -1;
	}
	*order = s[0];
	return 0;
}

int parse_layout(PyObject *shape, PyObject *dtype, PyObject *strides,
		 PyObject *order, struct layout_args *l)
{
	memset(l, 0, sizeof(*l));
	l->ndim = -1;
	if (parse_sizes(shape, "shape", &l->ndim, l->shape, false) < 0)
		return -1;
	/* float64 by default, as numpy.dtype(None) is */
	l->dtype = dtype && dtype != Py_None ? dtype_of_descr(dtype) :
		   accel_dtype(ACCEL_FLOAT64);
	if (!l->dtype)
		return -1;
	if (strides && strides != Py_None) {
		int n = l->ndim;

		if (parse_sizes(strides, "strides", &n, (size_t *)l->strides,
				false) < 0)
			return -1;
		l->has_strides = true;
	}
	return parse_order(order, &l->order, "CF");
}

/* ------------------------------------------------------------------ */
/* The type */

int array_info(accel_array_t ary, struct accel_array_info *info)
{
	if (accel_array_get_info(ary, info) != ACCEL_SUCCESS) {
		raise_accel();
		return -1;
	}
	return 0;
}

PyObject *device_array_wrap(accel_array_t ary, int dev, PyObject *owner,
			    PyObject *stream)
{
	DeviceArrayObject *a = PyObject_GC_New(DeviceArrayObject,
					       DeviceArray_Type);

	if (!a) {
		accel_array_release(ary);
		return NULL;
	}
	a->ary = ary;
	a->dev = dev;
	Py_XINCREF(owner);
	a->owner = owner;
	a->stream = stream && PyObject_TypeCheck(stream, Stream_Type) ? stream :
		    NULL;
	Py_XINCREF(a->stream);
	a->weakrefs = NULL;
	PyObject_GC_Track(a);
	return (PyObject *)a;
}

/*
 * The object that lends the memory is not shown to the garbage collector:
 * clearing it (or what it holds) before the array would free memory that
 * a queued transfer still uses. A cycle through it stays uncollected
 * rather than freed under the device. The type is visited, as a heap
 * type's instances must.
 */
static int DeviceArray_traverse(DeviceArrayObject *self, visitproc visit,
				void *arg)
{
	Py_VISIT(Py_TYPE((PyObject *)self));
	Py_VISIT(self->stream);
	return 0;
}

/*
 * The memory goes first (a release may wait for the transfers queued on
 * it), then what lent it and the stream.
 */
static int DeviceArray_clear(DeviceArrayObject *self)
{
	accel_array_t ary = self->ary;
	accel_status_t st;

	self->ary = NULL;
	if (ary) {
		WITHOUT_GIL(st, accel_array_release(ary));
		(void)st;
	}
	Py_CLEAR(self->owner);
	Py_CLEAR(self->stream);
	return 0;
}

static void DeviceArray_dealloc(DeviceArrayObject *self)
{
	PyTypeObject *type = Py_TYPE((PyObject *)self);

	PyObject_GC_UnTrack(self);
	if (self->weakrefs)
		PyObject_ClearWeakRefs((PyObject *)self);
	DeviceArray_clear(self);
	PyObject_GC_Del(self);
	Py_DECREF((PyObject *)type);
}

/* A new device array of the current device, from Numba's arguments. */
static PyObject *make_device_array(PyObject *shape, PyObject *dtype,
				   PyObject *strides, PyObject *order,
				   PyObject *stream)
{
	struct layout_args l;
	accel_array_t ary;
	accel_stream_t s;
	accel_status_t st;
	int dev = current_device();

	if (dev < 0 || parse_layout(shape, dtype, strides, order, &l) < 0 ||
	    stream_from_object(stream, dev, &s) < 0)
		return NULL;
	WITHOUT_GIL(st, accel_device_array(device_handle(dev), l.ndim, l.shape,
					   l.dtype,
					   l.has_strides ? l.strides : NULL,
					   l.order, s, &ary));
	if (st != ACCEL_SUCCESS)
		return raise_accel();
	return device_array_wrap(ary, dev, NULL, stream);
}

/* DeviceNDArray(shape, strides, dtype, stream=0, gpu_data=None) */
static PyObject *DeviceArray_new(PyTypeObject *type, PyObject *args,
				 PyObject *kwds)
{
	static char *kw[] = { "shape", "strides", "dtype", "stream", "gpu_data", NULL };
	PyObject *shape, *strides, *dtype, *stream = NULL, *gpu_data = Py_None;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO|OO:DeviceNDArray", kw,
					 &shape, &strides, &dtype, &stream,
					 &gpu_data))
		return NULL;
	if (gpu_data != Py_None) {
		PyErr_SetString(PyExc_TypeError,
				"gpu_data is not supported: use accel.as_cuda_array() to view memory");
		return NULL;
	}
	return make_device_array(shape, dtype, strides, NULL, stream);
}

PyObject *sizes_tuple(int n, const void *v, bool is_signed)
{
	PyObject *t = PyTuple_New(n);

	for (int i = 0; t && i < n; i++) {
		PyObject *x = is_signed ?
			PyLong_FromSsize_t(((const ptrdiff_t *)v)[i]) :
			PyLong_FromSize_t(((const size_t *)v)[i]);

		if (!x || PyTuple_SetItem(t, i, x) < 0)
			Py_CLEAR(t);
	}
	return t;
}

static PyObject *DeviceArray_repr(DeviceArrayObject *self)
{
	struct accel_array_info info;
	PyObject *shape, *d, *r;

	if (array_info(self->ary, &info) < 0)
		return NULL;
	shape = sizes_tuple(info.ndim, info.shape, false);
	d = descr_of(info.dtype);
	r = shape && d ? PyUnicode_FromFormat("<accel.DeviceNDArray shape=%R dtype=%R device=%d>",
					      shape, d, self->dev) : NULL;
	Py_XDECREF(shape);
	Py_XDECREF(d);
	return r;
}

/* ------------------------------------------------------------------ */
/* Attributes */

#define INFO_GETTER(name, expr)						\
	static PyObject *DeviceArray_get_##name(DeviceArrayObject *self, \
						void *closure)		\
	{								\
		struct accel_array_info info;				\
									\
		if (array_info(self->ary, &info) < 0)			\
			return NULL;					\
		return (expr);						\
	}

INFO_GETTER(shape, sizes_tuple(info.ndim, info.shape, false))
INFO_GETTER(strides, sizes_tuple(info.ndim, info.strides, true))
INFO_GETTER(dtype, descr_of(info.dtype))
INFO_GETTER(size, PyLong_FromSize_t(info.size))
INFO_GETTER(nbytes, PyLong_FromSize_t(info.nbytes))
INFO_GETTER(ndim, PyLong_FromLong(info.ndim))

static PyObject *DeviceArray_get_device(DeviceArrayObject *self, void *closure)
{
	if (self->dev < 0)
		Py_RETURN_NONE;
	return device_object(self->dev);
}

static PyObject *DeviceArray_get_stream(DeviceArrayObject *self, void *closure)
{
	if (!self->stream)
		return PyLong_FromLong(0);
	Py_INCREF(self->stream);
	return self->stream;
}

static Py_ssize_t DeviceArray_len(DeviceArrayObject *self)
{
	struct accel_array_info info;

	if (array_info(self->ary, &info) < 0)
		return -1;
	if (!info.ndim) {
		PyErr_SetString(PyExc_TypeError, "len() of a 0-d array");
		return -1;
	}
	return (Py_ssize_t)info.shape[0];
}

/* ------------------------------------------------------------------ */
/* Methods */

/* a numpy array of the device array's layout, in new host memory */
static PyObject *copy_to_new_host(DeviceArrayObject *self, accel_stream_t s)
{
	accel_array_t host;
	PyObject *owner, *arr;
	accel_status_t st;

	WITHOUT_GIL(st, accel_array_copy_to_host(self->ary, NULL, s, &host));
	if (st != ACCEL_SUCCESS)
		return raise_accel();
	owner = device_array_wrap(host, -1, NULL, NULL);
	if (!owner)
		return NULL;
	arr = numpy_view(owner, ndarray_type);
	Py_DECREF(owner);
	return arr;
}

static PyObject *DeviceArray_copy_to_host(DeviceArrayObject *self,
					  PyObject *args, PyObject *kwds)
{
	static char *kw[] = { "ary", "stream", NULL };
	PyObject *ary = Py_None, *stream = NULL, *keep;
	struct numpy_layout l;
	accel_array_t host;
	accel_stream_t s;
	accel_status_t st;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OO:copy_to_host", kw,
					 &ary, &stream) ||
	    stream_from_object(stream, self->dev, &s) < 0)
		return NULL;
	if (ary == Py_None)
		return copy_to_new_host(self, s);
	if (!is_ndarray(ary))
		return raise_not(ary, "ary must be a numpy.ndarray");
	if (numpy_layout(ary, &l) < 0)
		return NULL;
	if (l.readonly) {
		PyErr_SetString(PyExc_ValueError, "ary is read-only");
		return NULL;
	}
	host = array_of_numpy(ary);
	if (!host)
		return NULL;
	WITHOUT_GIL(st, accel_array_copy_to_host(self->ary, host, s, NULL));
	if (st != ACCEL_SUCCESS) {
		accel_array_release(host);
		return raise_accel();
	}
	/* a queued copy keeps its destination until the stream is synchronized */
	keep = device_array_wrap(host, -1, ary, NULL);
	if (!keep || stream_keep(stream, keep) < 0) {
		Py_XDECREF(keep);
		return NULL;
	}
	Py_DECREF(keep);
	Py_INCREF(ary);
	return ary;
}

/*
 * The library array to copy from for @obj: a device array's own, else a
 * host array over NumPy's view of it (into *@keep, which holds both), made
 * aligned and contiguous in @order ('C', 'F', or 0 for as it is) as Numba
 * makes a host source like its destination (a copy only where needed)
 */
static accel_array_t source_of(PyObject *obj, char order, PyObject **keep)
{
	struct numpy_layout l;
	PyObject *arr;
	accel_array_t host = NULL;

	*keep = NULL;
	if (PyObject_TypeCheck(obj, DeviceArray_Type)) {
		*keep = Py_NewRef(obj);
		return ((DeviceArrayObject *)obj)->ary;
	}
	arr = numpy_asanyarray(obj);
	if (!arr || numpy_layout(arr, &l) < 0)
		goto out;
	if (!layout_aligned(&l) || (order == 'C' && !l.c_contiguous) ||
	    (order == 'F' && !l.f_contiguous)) {
		PyObject *copy = numpy_copy(arr, order ? order : 'K');

		Py_DECREF(arr);
		arr = copy;
		if (!arr)
			goto out;
	}
	host = array_of_numpy(arr);
	if (host)
		*keep = device_array_wrap(host, -1, arr, NULL);
out:
	Py_XDECREF(arr);
	return *keep ? host : NULL;
}

/* 'C' or 'F' for a contiguous array (C first), else 0 */
static char contiguous_order(accel_array_t ary)
{
	if (accel_array_is_c_contiguous(ary))
		return 'C';
	return accel_array_is_f_contiguous(ary) ? 'F' : 0;
}

static PyObject *DeviceArray_copy_to_device(DeviceArrayObject *self,
					    PyObject *args, PyObject *kwds)
{
	static char *kw[] = { "ary", "stream", NULL };
	PyObject *ary, *stream = NULL, *keep;
	accel_array_t src;
	accel_stream_t s;
	accel_status_t st;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:copy_to_device", kw,
					 &ary, &stream) ||
	    stream_from_object(stream, self->dev, &s) < 0)
		return NULL;
	src = source_of(ary, contiguous_order(self->ary), &keep);
	if (!src)
		return NULL;
	WITHOUT_GIL(st, accel_array_copy_to_device(self->ary, src, s));
	if (st != ACCEL_SUCCESS) {
		Py_DECREF(keep);
		return raise_accel();
	}
	if (stream_keep(stream, keep) < 0) {
		Py_DECREF(keep);
		return NULL;
	}
	Py_DECREF(keep);
	Py_RETURN_NONE;
}

static PyObject *DeviceArray_is_c_contiguous(DeviceArrayObject *self,
					     PyObject *unused)
{
	return PyBool_FromLong(accel_array_is_c_contiguous(self->ary));
}

static PyObject *DeviceArray_is_f_contiguous(DeviceArrayObject *self,
					     PyObject *unused)
{
	return PyBool_FromLong(accel_array_is_f_contiguous(self->ary));
}

/* a view made by the library: the same lender and stream */
static PyObject *view_result(DeviceArrayObject *self, accel_status_t st,
			     accel_array_t view)
{
	/* a view that would need a copy is an invalid value: a ValueError */
	if (st != ACCEL_SUCCESS)
		return raise_accel();
	return device_array_wrap(view, self->dev, self->owner, self->stream);
}

static PyObject *DeviceArray_ravel(DeviceArrayObject *self, PyObject *args,
				   PyObject *kwds)
{
	static char *kw[] = { "order", "stream", NULL };
	PyObject *order = NULL, *stream = NULL;
	accel_array_t view;
	accel_stream_t s;
	accel_status_t st;
	char o;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OO:ravel", kw, &order,
					 &stream) ||
	    parse_order(order, &o, "CFA") < 0 ||
	    stream_from_object(stream, self->dev, &s) < 0)
		return NULL;
	st = accel_array_ravel(self->ary, o, &view);
	return view_result(self, st, view);
}

static PyObject *DeviceArray_reshape(DeviceArrayObject *self, PyObject *args,
				     PyObject *kwds)
{
	size_t shape[ACCEL_MAX_DIMS];
	PyObject *order = NULL, *newshape;
	accel_array_t view;
	int ndim = -1;
	accel_status_t st;
	char o;

	if (kwds) {
		order = PyDict_GetItemString(kwds, "order");
		if (PyDict_Size(kwds) != (order ? 1 : 0)) {
			PyErr_SetString(PyExc_TypeError,
					"reshape() takes only the keyword order");
			return NULL;
		}
	}
	newshape = PyTuple_Size(args) == 1 ? PyTuple_GetItem(args, 0) : args;
	if (parse_sizes(newshape, "the new shape", &ndim, shape, true) < 0 ||
	    parse_order(order, &o, "CFA") < 0)
		return NULL;
	st = accel_array_reshape(self->ary, ndim, shape, o, &view);
	return view_result(self, st, view);
}

static PyMethodDef DeviceArray_methods[] = {
	{ "copy_to_host", (PyCFunction)(void (*)(void))DeviceArray_copy_to_host,
	  METH_VARARGS | METH_KEYWORDS,
	  "copy_to_host(ary=None, stream=0) -> the host array" },
	{ "copy_to_device", (PyCFunction)(void (*)(void))DeviceArray_copy_to_device,
	  METH_VARARGS | METH_KEYWORDS,
	  "copy_to_device(ary, stream=0) copies ary (host or device) into the array" },
	{ "is_c_contiguous", (PyCFunction)DeviceArray_is_c_contiguous, METH_NOARGS,
	  "is_c_contiguous() -> True if the array is C-contiguous" },
	{ "is_f_contiguous", (PyCFunction)DeviceArray_is_f_contiguous, METH_NOARGS,
	  "is_f_contiguous() -> True if the array is Fortran-contiguous" },
	{ "ravel", (PyCFunction)(void (*)(void))DeviceArray_ravel,
	  METH_VARARGS | METH_KEYWORDS,
	  "ravel(order='C', stream=0) -> a flat view of a contiguous array" },
	{ "reshape", (PyCFunction)(void (*)(void))DeviceArray_reshape,
	  METH_VARARGS | METH_KEYWORDS,
	  "reshape(*newshape, order='C') -> a view with another shape" },
	{ "__dlpack__", (PyCFunction)(void (*)(void))array_dlpack,
	  METH_VARARGS | METH_KEYWORDS, "__dlpack__(stream=None) -> a DLPack capsule" },
	{ "__dlpack_device__", (PyCFunction)array_dlpack_device, METH_NOARGS,
	  "__dlpack_device__() -> (device type, device id)" },
	{ "__array__", (PyCFunction)(void (*)(void))array_numpy,
	  METH_VARARGS | METH_KEYWORDS,
	  "__array__(dtype=None, copy=None) -> a NumPy view of host-accessible memory (a copy for another dtype or copy=True)" },
	{ NULL }
};

static PyGetSetDef DeviceArray_getset[] = {
	{ "shape", (getter)DeviceArray_get_shape, NULL, NULL, NULL },
	{ "strides", (getter)DeviceArray_get_strides, NULL, "in bytes", NULL },
	{ "dtype", (getter)DeviceArray_get_dtype, NULL, NULL, NULL },
	{ "size", (getter)DeviceArray_get_size, NULL, NULL, NULL },
	{ "nbytes", (getter)DeviceArray_get_nbytes, NULL, NULL, NULL },
	{ "ndim", (getter)DeviceArray_get_ndim, NULL, NULL, NULL },
	{ "device", (getter)DeviceArray_get_device, NULL, NULL, NULL },
	{ "stream", (getter)DeviceArray_get_stream, NULL, NULL, NULL },
	{ "__cuda_array_interface__", (getter)array_cuda_interface, NULL,
	  "the CUDA array interface, version 3 (cuda devices only)", NULL },
	{ "__array_interface__", (getter)array_numpy_interface, NULL,
	  "NumPy's array interface, version 3 (host-accessible memory only)", NULL },
	{ NULL }
};

static PyMemberDef DeviceArray_members[] = {
	{ "__weaklistoffset__", T_PYSSIZET, offsetof(DeviceArrayObject, weakrefs),
	  READONLY },
	{ NULL }
};

static PyType_Slot DeviceArray_slots[] = {
	{ Py_tp_doc, "DeviceNDArray(shape, strides, dtype, stream=0, gpu_data=None): an array of a device" },
	{ Py_tp_new, DeviceArray_new },
	{ Py_tp_dealloc, DeviceArray_dealloc },
	{ Py_tp_traverse, DeviceArray_traverse },
	{ Py_tp_clear, DeviceArray_clear },
	{ Py_tp_repr, DeviceArray_repr },
	{ Py_tp_members, DeviceArray_members },
	{ Py_tp_methods, DeviceArray_methods },
	{ Py_tp_getset, DeviceArray_getset },
	{ Py_sq_length, DeviceArray_len },
	{ Py_bf_getbuffer, array_getbuffer },
	{ Py_bf_releasebuffer, array_releasebuffer },
	{ 0, NULL }
};

PyTypeObject *DeviceArray_Type;

static PyType_Spec DeviceArray_spec = {
	.name = "accel.DeviceNDArray",
	.basicsize = sizeof(DeviceArrayObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_HAVE_GC,
	.slots = DeviceArray_slots,
};

int array_init(PyObject *m)
{
	DeviceArray_Type = new_type(m, &DeviceArray_spec, NULL);
	return DeviceArray_Type ? 0 : -1;
}

/* ------------------------------------------------------------------ */
/* Constructors */

PyObject *py_device_array(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kw[] = { "shape", "dtype", "strides", "order", "stream", NULL };
	PyObject *shape, *dtype = NULL, *strides = NULL, *order = NULL,
		 *stream = NULL;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OOOO:device_array", kw,
					 &shape, &dtype, &strides, &order,
					 &stream))
		return NULL;
	return make_device_array(shape, dtype, strides, order, stream);
}

PyObject *py_device_array_like(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kw[] = { "ary", "stream", NULL };
	PyObject *like, *stream = NULL, *keep;
	accel_array_t src, ary;
	accel_stream_t s;
	accel_status_t st;
	int dev;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:device_array_like",
					 kw, &like, &stream))
		return NULL;
	dev = current_device();
	if (dev < 0 || stream_from_object(stream, dev, &s) < 0)
		return NULL;
	src = source_of(like, 0, &keep);
	if (!src)
		return NULL;
	WITHOUT_GIL(st, accel_device_array_like(device_handle(dev), src, s, &ary));
	Py_DECREF(keep);
	if (st != ACCEL_SUCCESS)
		return raise_accel();
	return device_array_wrap(ary, dev, NULL, stream);
}
