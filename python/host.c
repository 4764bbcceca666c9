// SPDX-License-Identifier: MIT
/*
 * Pinned and mapped host memory: pinned_array() and mapped_array() as
 * NumPy arrays over the library's memory (a mapped one an
 * accel.MappedNDArray, which also acts as a device array), and the
 * pinned() and mapped() scopes that register NumPy arrays for a block.
 */
#include "accel_py.h"

/* A NumPy array of @type over the new library array @ary of @dev. */
static PyObject *numpy_over(accel_array_t ary, int dev, PyObject *stream,
			    PyTypeObject *type)
{
	PyObject *owner = device_array_wrap(ary, dev, NULL, stream), *arr;

	if (!owner)
		return NULL;
	arr = numpy_view(owner, type);
	Py_DECREF(owner);
	return arr;
}

PyObject *py_pinned_array(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kw[] = { "shape", "dtype", "strides", "order", NULL };
	PyObject *shape, *dtype = NULL, *strides = NULL, *order = NULL;
	struct layout_args l;
	accel_array_t ary;
	accel_status_t st;
	int dev;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OOO:pinned_array", kw,
					 &shape, &dtype, &strides, &order))
		return NULL;
	dev = current_device();
	if (dev < 0 || parse_layout(shape, dtype, strides, order, &l) < 0)
		return NULL;
	WITHOUT_GIL(st, accel_pinned_array(device_handle(dev), l.ndim, l.shape,
					   l.dtype,
					   l.has_strides ? l.strides : NULL,
					   l.order, &ary));
	if (st != ACCEL_SUCCESS)
		return raise_accel();
	return numpy_over(ary, dev, NULL, ndarray_type);
}

/* The shape, dtype and order (C unless only F-contiguous) of @obj. */
static PyObject *layout_like(PyObject *obj, PyObject **shape, PyObject **dtype,
			     PyObject **order)
{
	bool f;

	if (PyObject_TypeCheck(obj, DeviceArray_Type)) {
		DeviceArrayObject *d = (DeviceArrayObject *)obj;

		f = accel_array_is_f_contiguous(d->ary) &&
		    !accel_array_is_c_contiguous(d->ary);
		*shape = PyObject_GetAttrString(obj, "shape");
		*dtype = PyObject_GetAttrString(obj, "dtype");
	} else {
		PyObject *arr = numpy_asanyarray(obj);
		struct numpy_layout l;

		if (!arr)
			return NULL;
		if (numpy_layout(arr, &l) < 0) {
			Py_DECREF(arr);
			return NULL;
		}
		f = l.f_contiguous && !l.c_contiguous;
		*shape = PyObject_GetAttrString(arr, "shape");
		*dtype = PyObject_GetAttrString(arr, "dtype");
		Py_DECREF(arr);
	}
	*order = PyUnicode_FromString(f ? "F" : "C");
	if (!*shape || !*dtype || !*order) {
		Py_XDECREF(*shape);
		Py_XDECREF(*dtype);
		Py_XDECREF(*order);
		return NULL;
	}
	return obj;
}

/* a constructor called with @like's layout and the keywords @kwds */
static PyObject *call_like(PyObject *(*make)(PyObject *, PyObject *, PyObject *),
			   PyObject *like, PyObject *kwds)
{
	PyObject *shape, *dtype, *order, *args, *kw, *r = NULL;

	if (!layout_like(like, &shape, &dtype, &order))
		return NULL;
	args = PyTuple_Pack(1, shape);
	kw = kwds ? PyDict_Copy(kwds) : PyDict_New();
	if (args && kw && !PyDict_SetItemString(kw, "dtype", dtype) &&
	    !PyDict_SetItemString(kw, "order", order))
		r = make(NULL, args, kw);
	Py_XDECREF(args);
	Py_XDECREF(kw);
	Py_DECREF(shape);
	Py_DECREF(dtype);
	Py_DECREF(order);
	return r;
}

PyObject *py_pinned_array_like(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kw[] = { "ary", NULL };
	PyObject *like;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:pinned_array_like", kw,
					 &like))
		return NULL;
	return call_like(py_pinned_array, like, NULL);
}

PyObject *py_mapped_array(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kw[] = { "shape", "dtype", "strides", "order", "stream",
			      "portable", "wc", NULL };
	PyObject *shape, *dtype = NULL, *strides = NULL, *order = NULL,
		 *stream = NULL;
	int portable = 0, wc = 0, dev;
	struct layout_args l;
	accel_array_t ary;
	unsigned int flags;
	accel_stream_t s;
	accel_status_t st;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OOOOpp:mapped_array", kw,
					 &shape, &dtype, &strides, &order,
					 &stream, &portable, &wc))
		return NULL;
	dev = current_device();
	if (dev < 0 || parse_layout(shape, dtype, strides, order, &l) < 0 ||
	    stream_from_object(stream, dev, &s) < 0)
		return NULL;
	flags = (portable ? ACCEL_ARRAY_PORTABLE : 0) |
		(wc ? ACCEL_ARRAY_WRITE_COMBINED : 0);
	WITHOUT_GIL(st, accel_mapped_array_flags(device_handle(dev), l.ndim,
						 l.shape, l.dtype,
						 l.has_strides ? l.strides : NULL,
						 l.order, s, flags, &ary));
	if (st != ACCEL_SUCCESS)
		return raise_accel();
	return numpy_over(ary, dev, stream, MappedArray_Type);
}

PyObject *py_mapped_array_like(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kw[] = { "ary", "stream", "portable", "wc", NULL };
	PyObject *like, *stream = Py_None, *portable = Py_False, *wc = Py_False;
	PyObject *kw_out, *r = NULL;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OOO:mapped_array_like",
					 kw, &like, &stream, &portable, &wc))
		return NULL;
	kw_out = Py_BuildValue("{s:O,s:O,s:O}", "stream", stream, "portable",
			       portable, "wc", wc);
	if (kw_out)
		r = call_like(py_mapped_array, like, kw_out);
	Py_XDECREF(kw_out);
	return r;
}

/* ------------------------------------------------------------------ */
/* accel.MappedNDArray: a NumPy array that is also a device array */

/* the device array over a mapped array's memory (new reference) */
static PyObject *device_view(PyObject *self)
{
	DeviceArrayObject *owner = numpy_lender(self);
	accel_array_t view = owner ? library_array_of(self) : NULL;
	PyObject *r = NULL;

	if (view)
		r = device_array_wrap(view, owner->dev, NULL, owner->stream);
	else if (!PyErr_Occurred())
		PyErr_SetString(PyExc_ValueError,
				"this MappedNDArray's memory is not mapped memory (NumPy made it)");
	Py_XDECREF((PyObject *)owner);
	return r;
}

static PyObject *delegate(PyObject *self, const char *name, PyObject *args,
			  PyObject *kwds)
{
	PyObject *view = device_view(self), *method, *r = NULL;

	if (!view)
		return NULL;
	method = PyObject_GetAttrString(view, name);
	if (method) {
		r = PyObject_Call(method, args, kwds);
		Py_DECREF(method);
	}
	Py_DECREF(view);
	return r;
}

#define DELEGATE(name)							\
	static PyObject *Mapped_##name(PyObject *self, PyObject *args,	\
				       PyObject *kwds)			\
	{								\
		return delegate(self, #name, args, kwds);		\
	}

DELEGATE(copy_to_host)
DELEGATE(copy_to_device)
DELEGATE(__dlpack__)
DELEGATE(__dlpack_device__)

static PyObject *Mapped_cuda_interface(PyObject *self, void *closure)
{
	PyObject *view = device_view(self), *r;

	if (!view)
		return NULL;
	r = PyObject_GetAttrString(view, "__cuda_array_interface__");
	Py_DECREF(view);
	return r;
}

static PyMethodDef Mapped_methods[] = {
	{ "copy_to_host", (PyCFunction)(void (*)(void))Mapped_copy_to_host,
	  METH_VARARGS | METH_KEYWORDS, "as DeviceNDArray.copy_to_host()" },
	{ "copy_to_device", (PyCFunction)(void (*)(void))Mapped_copy_to_device,
	  METH_VARARGS | METH_KEYWORDS, "as DeviceNDArray.copy_to_device()" },
	{ "__dlpack__", (PyCFunction)(void (*)(void))Mapped___dlpack__,
	  METH_VARARGS | METH_KEYWORDS, "as DeviceNDArray.__dlpack__()" },
	{ "__dlpack_device__", (PyCFunction)(void (*)(void))Mapped___dlpack_device__,
	  METH_VARARGS | METH_KEYWORDS, "as DeviceNDArray.__dlpack_device__()" },
	{ NULL }
};

static PyGetSetDef Mapped_getset[] = {
	{ "__cuda_array_interface__", Mapped_cuda_interface, NULL,
	  "the CUDA array interface (cuda devices only)", NULL },
	{ NULL }
};

static PyType_Slot MappedArray_slots[] = {
	{ Py_tp_doc, "A NumPy array in pinned memory that the device reaches directly: mapped_array() makes one." },
	{ Py_tp_methods, Mapped_methods },
	{ Py_tp_getset, Mapped_getset },
	{ 0, NULL }
};

/*
 * A subclass of numpy.ndarray (its base, given when the module starts)
 * with no fields of its own: its size and everything else are NumPy's.
 */
static PyType_Spec MappedArray_spec = {
	.name = "accel.MappedNDArray",
	.basicsize = 0,
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_BASETYPE,
	.slots = MappedArray_slots,
};

PyTypeObject *MappedArray_Type;

/* ------------------------------------------------------------------ */
/* The pinned() and mapped() scopes */

typedef struct {
	PyObject_HEAD
	PyObject *arrays;	/* tuple of NumPy arrays */
	PyObject *stream;
	int dev;
	bool mapped;
	int nreg;		/* registered so far */
	accel_array_t *hosts;
} ScopeObject;

static PyObject *scope_new(PyTypeObject *type, PyObject *args, PyObject *kwds,
			   bool mapped)
{
	PyObject *stream = NULL;
	ScopeObject *s;
	accel_stream_t cs;
	int dev = current_device();

	if (dev < 0)
		return NULL;
	if (kwds) {
		stream = PyDict_GetItemString(kwds, "stream");
		if (PyDict_Size(kwds) != (mapped && stream ? 1 : 0)) {
			PyErr_SetString(PyExc_TypeError, mapped ?
					"mapped() takes only the keyword stream" :
					"pinned() takes no keywords");
			return NULL;
		}
	}
	if (stream_from_object(stream, dev, &cs) < 0)
		return NULL;
	for (Py_ssize_t i = 0; i < PyTuple_Size(args); i++) {
		if (!is_ndarray(PyTuple_GetItem(args, i)))
			return raise_not(PyTuple_GetItem(args, i),
					 "%s() takes numpy.ndarray objects",
					 mapped ? "mapped" : "pinned");
	}
	s = (ScopeObject *)PyType_GenericAlloc(type, 0);
	if (!s)
		return NULL;
	Py_INCREF(args);
	s->arrays = args;
	Py_XINCREF(stream);
	s->stream = stream;
	s->dev = dev;
	s->mapped = mapped;
	s->hosts = PyMem_Calloc(PyTuple_Size(args) + 1, sizeof(*s->hosts));
	if (!s->hosts) {
		Py_DECREF(s);
		return PyErr_NoMemory();
	}
	return (PyObject *)s;
}

static void scope_end(ScopeObject *self)
{
	accel_status_t st;

	for (int i = 0; i < self->nreg; i++) {
		WITHOUT_GIL(st, accel_array_unregister(self->hosts[i]));
		(void)st;
		accel_array_release(self->hosts[i]);
		self->hosts[i] = NULL;
	}
	self->nreg = 0;
}

/* the device arrays over the mapped memory: one, or a list */
static PyObject *mapped_views(ScopeObject *self)
{
	Py_ssize_t n = PyTuple_Size(self->arrays);
	PyObject *list = PyList_New(n), *r;

	for (Py_ssize_t i = 0; list && i < n; i++) {
		accel_array_t view;
		PyObject *d;

		accel_status_t st;

		WITHOUT_GIL(st, accel_to_device_ex(device_handle(self->dev),
						   self->hosts[i], NULL, 0, &view));
		if (st != ACCEL_SUCCESS) {
			Py_DECREF(list);
			return raise_accel();
		}
		d = device_array_wrap(view, self->dev, PyTuple_GetItem(self->arrays, i),
				      self->stream);
		if (!d || PyList_SetItem(list, i, d) < 0) {
			Py_DECREF(list);
			return NULL;
		}
	}
	if (!list || n != 1)
		return list;
	r = Py_NewRef(PyList_GetItem(list, 0));
	Py_DECREF(list);
	return r;
}

static PyObject *Scope_enter(ScopeObject *self, PyObject *unused)
{
	Py_ssize_t n = PyTuple_Size(self->arrays);
	accel_status_t st;

	if (self->nreg) {
		PyErr_SetString(PyExc_RuntimeError, "the scope is entered already");
		return NULL;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		accel_array_t h = host_array_of(PyTuple_GetItem(self->arrays, i));

		if (!h)
			goto fail;
		WITHOUT_GIL(st, accel_array_register(device_handle(self->dev), h,
						     self->mapped));
		if (st != ACCEL_SUCCESS) {
			raise_accel();
			accel_array_release(h);
			goto fail;
		}
		self->hosts[self->nreg++] = h;
	}
	if (self->mapped) {
		PyObject *views = mapped_views(self);

		if (views)
			return views;
		goto fail;
	}
	Py_RETURN_NONE;
fail:
	scope_end(self);
	return NULL;
}

static PyObject *Scope_exit(ScopeObject *self, PyObject *args)
{
	scope_end(self);
	Py_RETURN_FALSE;
}

static void Scope_dealloc(ScopeObject *self)
{
	PyTypeObject *type = Py_TYPE((PyObject *)self);

	if (self->hosts)
		scope_end(self);
	PyMem_Free(self->hosts);
	Py_XDECREF(self->arrays);
	Py_XDECREF(self->stream);
	PyObject_Free(self);
	Py_DECREF((PyObject *)type);
}

static PyObject *Pinned_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
	return scope_new(type, args, kwds, false);
}

static PyObject *Mapped_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
	return scope_new(type, args, kwds, true);
}

static PyMethodDef Scope_methods[] = {
	{ "__enter__", (PyCFunction)Scope_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)Scope_exit, METH_VARARGS, NULL },
	{ NULL }
};

static PyType_Slot Pinned_slots[] = {
	{ Py_tp_doc, "pinned(*arylist): a context manager that pins NumPy arrays for its block" },
	{ Py_tp_new, Pinned_new },
	{ Py_tp_dealloc, Scope_dealloc },
	{ Py_tp_methods, Scope_methods },
	{ 0, NULL }
};

static PyType_Slot Mapped_slots[] = {
	{ Py_tp_doc, "mapped(*arylist, stream=0): a context manager that maps NumPy arrays for its block and gives their device arrays" },
	{ Py_tp_new, Mapped_new },
	{ Py_tp_dealloc, Scope_dealloc },
	{ Py_tp_methods, Scope_methods },
	{ 0, NULL }
};

static PyType_Spec Pinned_spec = {
	.name = "accel.pinned",
	.basicsize = sizeof(ScopeObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
	.slots = Pinned_slots,
};

static PyType_Spec Mapped_spec = {
	.name = "accel.mapped",
	.basicsize = sizeof(ScopeObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
	.slots = Mapped_slots,
};

int host_init(PyObject *m)
{
	PyObject *bases = PyTuple_Pack(1, (PyObject *)ndarray_type);
	PyTypeObject *pinned, *mapped;

	MappedArray_Type = bases ? new_type(m, &MappedArray_spec, bases) : NULL;
	Py_XDECREF(bases);
	pinned = MappedArray_Type ? new_type(m, &Pinned_spec, NULL) : NULL;
	mapped = pinned ? new_type(m, &Mapped_spec, NULL) : NULL;
	/* the module holds the scopes' types */
	Py_XDECREF((PyObject *)pinned);
	Py_XDECREF((PyObject *)mapped);
	return mapped ? 0 : -1;
}
