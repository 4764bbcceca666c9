// SPDX-License-Identifier: MIT
/*
 * accel.Stream: a library stream of one device, which keeps what its
 * queued transfers use (host arrays, the objects lending them) until it
 * is synchronized, so that a caller may drop them at once, as Numba's
 * caller may.
 */
#include "accel_py.h"

PyObject *stream_new(int dev)
{
	StreamObject *s = PyObject_GC_New(StreamObject, Stream_Type);
	accel_status_t st;

	if (!s)
		return NULL;
	s->dev = dev;
	s->stream = NULL;
	s->pending = PyList_New(0);
	PyObject_GC_Track(s);
	if (!s->pending) {
		Py_DECREF(s);
		return NULL;
	}
	WITHOUT_GIL(st, accel_stream_create(device_handle(dev), &s->stream));
	if (st != ACCEL_SUCCESS) {
		s->stream = NULL;
		Py_DECREF(s);
		return raise_accel();
	}
	return (PyObject *)s;
}

int stream_from_object(PyObject *obj, int dev, accel_stream_t *stream)
{
	StreamObject *s = (StreamObject *)obj;

	*stream = NULL;
	if (!obj || obj == Py_None)
		return 0;
	if (PyLong_Check(obj)) {
		long v = PyLong_AsLong(obj);

		if (v == 0)
			return 0;
		if (!PyErr_Occurred())
			PyErr_Format(PyExc_ValueError,
				     "stream %ld: a stream is 0 (synchronous) or an accel.Stream",
				     v);
		return -1;
	}
	if (!PyObject_TypeCheck(obj, Stream_Type)) {
		raise_not(obj, "a stream is 0 or an accel.Stream");
		return -1;
	}
	if (!s->stream) {
		PyErr_SetString(PyExc_ValueError, "the stream was destroyed");
		return -1;
	}
	if (s->dev != dev) {
		PyErr_Format(PyExc_ValueError,
			     "the stream is one of device %d, not of device %d",
			     s->dev, dev);
		return -1;
	}
	*stream = s->stream;
	return 0;
}

int stream_keep(PyObject *stream_obj, PyObject *obj)
{
	if (!stream_obj || !PyObject_TypeCheck(stream_obj, Stream_Type))
		return 0;
	return PyList_Append(((StreamObject *)stream_obj)->pending, obj);
}

/* Wait for the stream; what its transfers used goes afterwards. */
static int stream_sync(StreamObject *self)
{
	accel_status_t st;

	if (!self->stream)
		return 0;
	WITHOUT_GIL(st, accel_stream_synchronize(device_handle(self->dev),
						 self->stream));
	if (PyList_SetSlice(self->pending, 0, PY_SSIZE_T_MAX, NULL) < 0)
		return -1;
	if (st != ACCEL_SUCCESS) {
		raise_accel();
		return -1;
	}
	return 0;
}

static PyObject *Stream_synchronize(StreamObject *self, PyObject *unused)
{
	if (stream_sync(self) < 0)
		return NULL;
	Py_RETURN_NONE;
}

/* auto_synchronize(): a context manager that synchronizes at its end */
typedef struct {
	PyObject_HEAD
	PyObject *stream;	/* the Stream */
} AutoSyncObject;

static PyTypeObject *AutoSync_Type;

static PyObject *Stream_auto_synchronize(StreamObject *self, PyObject *unused)
{
	AutoSyncObject *a = PyObject_New(AutoSyncObject, AutoSync_Type);

	if (!a)
		return NULL;
	a->stream = Py_NewRef((PyObject *)self);
	return (PyObject *)a;
}

static PyObject *AutoSync_enter(AutoSyncObject *self, PyObject *unused)
{
	return Py_NewRef(self->stream);
}

static PyObject *AutoSync_exit(AutoSyncObject *self, PyObject *args)
{
	if (stream_sync((StreamObject *)self->stream) < 0)
		return NULL;
	Py_RETURN_FALSE;
}

static void AutoSync_dealloc(AutoSyncObject *self)
{
	PyTypeObject *type = Py_TYPE((PyObject *)self);

	Py_XDECREF(self->stream);
	PyObject_Free(self);
	Py_DECREF((PyObject *)type);
}

static PyMethodDef AutoSync_methods[] = {
	{ "__enter__", (PyCFunction)AutoSync_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)AutoSync_exit, METH_VARARGS, NULL },
	{ NULL }
};

static PyType_Slot AutoSync_slots[] = {
	{ Py_tp_dealloc, AutoSync_dealloc },
	{ Py_tp_methods, AutoSync_methods },
	{ 0, NULL }
};

static PyType_Spec AutoSync_spec = {
	.name = "accel._AutoSynchronize",
	.basicsize = sizeof(AutoSyncObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
		 Py_TPFLAGS_DISALLOW_INSTANTIATION,
	.slots = AutoSync_slots,
};

static PyObject *Stream_repr(StreamObject *self)
{
	return PyUnicode_FromFormat("<accel.Stream %p on device %d>",
				    (void *)self->stream, self->dev);
}

/* the type too, as a heap type's instances must */
static int Stream_traverse(StreamObject *self, visitproc visit, void *arg)
{
	Py_VISIT(Py_TYPE((PyObject *)self));
	Py_VISIT(self->pending);
	return 0;
}

static int Stream_clear(StreamObject *self)
{
	Py_CLEAR(self->pending);
	return 0;
}

/* destroying waits for the queued work, then what it used goes */
static void Stream_dealloc(StreamObject *self)
{
	PyTypeObject *type = Py_TYPE((PyObject *)self);

	PyObject_GC_UnTrack(self);
	if (self->stream) {
		accel_status_t st;

		WITHOUT_GIL(st, accel_stream_destroy(device_handle(self->dev),
						     self->stream));
		(void)st;
	}
	Stream_clear(self);
	PyObject_GC_Del(self);
	Py_DECREF((PyObject *)type);
}

static PyMethodDef Stream_methods[] = {
	{ "synchronize", (PyCFunction)Stream_synchronize, METH_NOARGS,
	  "synchronize() waits for the work queued on the stream" },
	{ "auto_synchronize", (PyCFunction)Stream_auto_synchronize, METH_NOARGS,
	  "auto_synchronize() -> a context manager that synchronizes the stream at its end" },
	{ NULL }
};

static PyType_Slot Stream_slots[] = {
	{ Py_tp_doc, "A stream of a device: accel.stream() makes one." },
	{ Py_tp_repr, Stream_repr },
	{ Py_tp_dealloc, Stream_dealloc },
	{ Py_tp_traverse, Stream_traverse },
	{ Py_tp_clear, Stream_clear },
	{ Py_tp_methods, Stream_methods },
	{ 0, NULL }
};

/* made by accel.stream() only, as a static type without tp_new was */
static PyType_Spec Stream_spec = {
	.name = "accel.Stream",
	.basicsize = sizeof(StreamObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_HAVE_GC |
		 Py_TPFLAGS_DISALLOW_INSTANTIATION,
	.slots = Stream_slots,
};

PyTypeObject *Stream_Type;

int stream_init(PyObject *m)
{
	Stream_Type = new_type(m, &Stream_spec, NULL);
	AutoSync_Type = Stream_Type ? new_type(NULL, &AutoSync_spec, NULL) : NULL;
	return AutoSync_Type ? 0 : -1;
}
