// SPDX-License-Identifier: MIT
/*
 * NumPy through its Python API only: its C API's ABI is not the same in
 * NumPy 1.x and 2.x, and a module built against one is refused by the
 * other, while its Python API is the same in both. Arrays are read
 * through the buffer protocol, made over the library's memory with
 * numpy.ndarray(shape, dtype, buffer=..., strides=...) and copied with
 * their own methods.
 */
#include "accel_py.h"

PyTypeObject *ndarray_type;
/*
 * numpy.ndarray's own buffer slots: a subclass's __buffer__ (Python 3.12
 * on) could export other memory, which this module would then use after
 * the export is released, while the array holds only its own
 */
static int (*ndarray_getbuffer)(PyObject *, Py_buffer *, int);
static void (*ndarray_releasebuffer)(PyObject *, Py_buffer *);
static PyObject *dtype_type;		/* numpy.dtype */
static PyObject *asanyarray;		/* numpy.asanyarray */
/* the dtypes of the library's scalars, made once: attributes ask often */
static PyObject *scalar_dtypes[ACCEL_SCALAR_COUNT];

/* ------------------------------------------------------------------ */
/* dtypes */

PyObject *descr_of(accel_dtype_t dtype)
{
	for (int i = 0; i < ACCEL_SCALAR_COUNT; i++)
		if (accel_dtype(i) == dtype)
			return Py_NewRef(scalar_dtypes[i]);
	return PyObject_CallFunction(dtype_type, "s", accel_dtype_typestr(dtype));
}

/*
 * NumPy's typestr (dtype.str) of a library scalar is the library's: a
 * byte order other than the native one, or any other kind, differs.
 */
accel_dtype_t dtype_of_descr(PyObject *obj)
{
	PyObject *d, *str;
	const char *s;
	accel_dtype_t found = NULL;

	/* NumPy's dtypes of the native scalars are singletons: no call then */
	for (int i = 0; i < ACCEL_SCALAR_COUNT; i++)
		if (obj == scalar_dtypes[i])
			return accel_dtype(i);
	d = PyObject_CallFunctionObjArgs(dtype_type, obj, NULL);
	str = d ? PyObject_GetAttrString(d, "str") : NULL;
	s = str ? PyUnicode_AsUTF8AndSize(str, NULL) : NULL;
	for (int i = 0; s && !found && i < ACCEL_SCALAR_COUNT; i++)
		if (!strcmp(s, accel_dtype_typestr(accel_dtype(i))))
			found = accel_dtype(i);
	if (s && !found)
		PyErr_Format(PyExc_TypeError,
			     "dtype %R is not supported: bool, integers of 8 to 64 bits and float32 and float64 in native byte order are",
			     d);
	Py_XDECREF(str);
	Py_XDECREF(d);
	return found;
}

/* ------------------------------------------------------------------ */
/* Arrays in */

/* PyBuffer_Release() with numpy.ndarray's own slot (of any subclass) */
static void release_ndarray_buffer(Py_buffer *view)
{
	if (ndarray_releasebuffer)
		ndarray_releasebuffer(view->obj, view);
	Py_CLEAR(view->obj);
}

int numpy_layout(PyObject *arr, struct numpy_layout *l)
{
	PyObject *dtype = PyObject_GetAttrString(arr, "dtype");
	Py_buffer view;
	bool empty = false;

	memset(l, 0, sizeof(*l));
	l->dtype = dtype ? dtype_of_descr(dtype) : NULL;
	Py_XDECREF(dtype);
	if (!l->dtype || ndarray_getbuffer(arr, &view, PyBUF_STRIDES) < 0)
		return -1;
	if (view.ndim > ACCEL_MAX_DIMS) {
		PyErr_Format(PyExc_ValueError, "%d dimensions: at most %d are supported",
			     view.ndim, ACCEL_MAX_DIMS);
		release_ndarray_buffer(&view);
		return -1;
	}
	/* a subclass's dtype property may lie: its entries would overrun the memory */
	if ((size_t)view.itemsize != accel_dtype_size(l->dtype)) {
		PyErr_Format(PyExc_ValueError,
			     "the array's dtype says %zu-byte entries, its memory has %zd-byte ones",
			     accel_dtype_size(l->dtype), view.itemsize);
		release_ndarray_buffer(&view);
		return -1;
	}
	l->ndim = view.ndim;
	for (int i = 0; i < view.ndim; i++) {
		l->shape[i] = (size_t)view.shape[i];
		l->strides[i] = view.strides[i];
		empty |= !view.shape[i];
	}
	l->itemsize = (size_t)view.itemsize;
	l->data = empty ? NULL : view.buf;
	l->readonly = view.readonly;
	/* CPython's test is NumPy's: axes one entry long take any stride */
	l->c_contiguous = PyBuffer_IsContiguous(&view, 'C');
	l->f_contiguous = PyBuffer_IsContiguous(&view, 'F');
	/* the memory stays with @arr, which the caller holds */
	release_ndarray_buffer(&view);
	return 0;
}

/*
 * NumPy's test: the data and the strides of the dimensions longer than
 * one are multiples of the dtype's alignment, which for the library's
 * scalars is their size.
 */
bool layout_aligned(const struct numpy_layout *l)
{
	uintptr_t bits = (uintptr_t)l->data;

	for (int i = 0; i < l->ndim; i++)
		if (l->shape[i] > 1)
			bits |= (uintptr_t)l->strides[i];
	return !(bits % l->itemsize);
}

PyObject *numpy_asanyarray(PyObject *obj)
{
	/* what numpy.asanyarray() gives an array, without the call */
	if (is_ndarray(obj))
		return Py_NewRef(obj);
	return PyObject_CallFunctionObjArgs(asanyarray, obj, NULL);
}

PyObject *numpy_copy(PyObject *arr, char order)
{
	const char s[2] = { order, 0 };

	return PyObject_CallMethod(arr, "copy", "s", s);
}

/* ------------------------------------------------------------------ */
/* Arrays out: accel._HostMemory, what NumPy views of library memory hold */

/*
 * The bytes that a library array's layout spans, as one flat buffer,
 * for numpy.ndarray(buffer=...), which takes only contiguous ones (a
 * DeviceNDArray's own buffer has the array's layout): NumPy keeps it as
 * the view's base, and it keeps the DeviceNDArray and so the memory.
 */
typedef struct {
	PyObject_HEAD
	PyObject *owner;	/* the DeviceNDArray */
	void *data;
	Py_ssize_t len;
	int readonly;
} HostMemoryObject;

static PyTypeObject *HostMemory_Type;

static int HostMemory_getbuffer(HostMemoryObject *self, Py_buffer *view,
				int flags)
{
	return PyBuffer_FillInfo(view, (PyObject *)self, self->data, self->len,
				 self->readonly, flags);
}

static void HostMemory_dealloc(HostMemoryObject *self)
{
	PyTypeObject *type = Py_TYPE((PyObject *)self);

	Py_XDECREF(self->owner);
	PyObject_Free(self);
	Py_DECREF((PyObject *)type);
}

static PyType_Slot HostMemory_slots[] = {
	{ Py_tp_doc, "The host memory of an accel array that a NumPy array views." },
	{ Py_tp_dealloc, HostMemory_dealloc },
	{ Py_bf_getbuffer, HostMemory_getbuffer },
	{ 0, NULL }
};

static PyType_Spec HostMemory_spec = {
	.name = "accel._HostMemory",
	.basicsize = sizeof(HostMemoryObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
		 Py_TPFLAGS_DISALLOW_INSTANTIATION,
	.slots = HostMemory_slots,
};

/* the bytes from the first entry to the end of the last (no negative strides) */
static size_t extent_of(const struct accel_array_info *info)
{
	size_t end = accel_dtype_size(info->dtype);

	for (int i = 0; i < info->ndim; i++)
		end += (info->shape[i] - 1) * (size_t)info->strides[i];
	return end;
}

static PyObject *host_memory(PyObject *owner, const struct accel_array_info *info)
{
	HostMemoryObject *m = PyObject_New(HostMemoryObject, HostMemory_Type);

	if (!m)
		return NULL;
	m->owner = Py_NewRef(owner);
	m->data = info->data;
	m->len = (Py_ssize_t)extent_of(info);
	m->readonly = info->readonly;
	return (PyObject *)m;
}

PyObject *numpy_view(PyObject *owner, PyTypeObject *type)
{
	struct accel_array_info info;
	PyObject *args = NULL, *kw = NULL, *shape, *dtype, *strides, *memory;
	PyObject *arr = NULL;

	if (array_info(((DeviceArrayObject *)owner)->ary, &info) < 0)
		return NULL;
	shape = sizes_tuple(info.ndim, info.shape, false);
	dtype = descr_of(info.dtype);
	strides = sizes_tuple(info.ndim, info.strides, true);
	/* an empty array has no data of ours to point at: NumPy allocates */
	memory = info.data ? host_memory(owner, &info) : Py_NewRef(Py_None);
	if (shape && dtype && strides && memory) {
		args = PyTuple_Pack(2, shape, dtype);
		kw = Py_BuildValue("{s:O,s:O}", "strides", strides, "buffer", memory);
	}
	if (args && kw)
		arr = PyObject_Call((PyObject *)type, args, kw);
	Py_XDECREF(args);
	Py_XDECREF(kw);
	Py_XDECREF(shape);
	Py_XDECREF(dtype);
	Py_XDECREF(strides);
	Py_XDECREF(memory);
	return arr;
}

DeviceArrayObject *numpy_lender(PyObject *arr)
{
	PyObject *base = Py_NewRef(arr), *next;
	DeviceArrayObject *owner = NULL;

	while (is_ndarray(base)) {
		next = PyObject_GetAttrString(base, "base");
		Py_DECREF(base);
		if (!next) {
			PyErr_Clear();
			return NULL;
		}
		base = next;
	}
	if (Py_IS_TYPE(base, HostMemory_Type))
		owner = (DeviceArrayObject *)Py_NewRef(((HostMemoryObject *)base)->owner);
	Py_DECREF(base);
	return owner;
}

/* ------------------------------------------------------------------ */

/* what the module uses of NumPy, fetched once */
int numpy_init(void)
{
	PyObject *numpy = PyImport_ImportModule("numpy");

	if (!numpy)
		return -1;
	ndarray_type = (PyTypeObject *)PyObject_GetAttrString(numpy, "ndarray");
	dtype_type = PyObject_GetAttrString(numpy, "dtype");
	asanyarray = PyObject_GetAttrString(numpy, "asanyarray");
	Py_DECREF(numpy);
	if (!ndarray_type || !dtype_type || !asanyarray)
		return -1;
	ndarray_getbuffer = PyType_GetSlot(ndarray_type, Py_bf_getbuffer);
	ndarray_releasebuffer = PyType_GetSlot(ndarray_type, Py_bf_releasebuffer);
	if (!ndarray_getbuffer) {
		PyErr_SetString(PyExc_ImportError, "numpy.ndarray has no buffer slot");
		return -1;
	}
	for (int i = 0; i < ACCEL_SCALAR_COUNT; i++) {
		scalar_dtypes[i] = PyObject_CallFunction(dtype_type, "s",
							 accel_dtype_typestr(accel_dtype(i)));
		if (!scalar_dtypes[i])
			return -1;
	}
	HostMemory_Type = new_type(NULL, &HostMemory_spec, NULL);
	return HostMemory_Type ? 0 : -1;
}
