// SPDX-License-Identifier: MIT
/*
 * Device arrays out: DLPack capsules (__dlpack__, __dlpack_device__), the
 * CUDA array interface (cuda devices), and NumPy's buffer protocol and
 * __array__ for host-accessible memory. Device-only memory refuses NumPy
 * with a BufferError.
 */
#include "accel_py.h"

static const char dltensor_name[] = "dltensor";

static bool host_accessible(DLDevice d)
{
	return d.device_type == kDLCPU || d.device_type == kDLCUDAHost ||
	       d.device_type == kDLCUDAManaged;
}

static int dlpack_device(DeviceArrayObject *self, DLDevice *d)
{
	if (accel_array_dlpack_device(self->ary, d) != ACCEL_SUCCESS) {
		raise_accel();
		return -1;
	}
	return 0;
}

PyObject *array_dlpack_device(DeviceArrayObject *self, PyObject *unused)
{
	DLDevice d;

	if (dlpack_device(self, &d) < 0)
		return NULL;
	return Py_BuildValue("(ii)", (int)d.device_type, d.device_id);
}

/* ------------------------------------------------------------------ */
/* __dlpack__ */

/*
 * An exported tensor of an array whose memory a Python object lends (a
 * view of another framework's memory): the object lives as long as the
 * tensor.
 */
struct lent_tensor {
	DLManagedTensor outer;
	DLManagedTensor *inner;
	PyObject *owner;
};

static void lent_deleter(DLManagedTensor *t)
{
	struct lent_tensor *l = t->manager_ctx;
	PyGILState_STATE g;

	l->inner->deleter(l->inner);
	g = PyGILState_Ensure();
	Py_DECREF(l->owner);
	PyGILState_Release(g);
	free(l);
}

static DLManagedTensor *keep_owner(DLManagedTensor *t, PyObject *owner)
{
	struct lent_tensor *l;

	if (!owner)
		return t;
	/* the deleter may run without the GIL: not Python's allocator */
	l = malloc(sizeof(*l));
	if (!l) {
		t->deleter(t);
		PyErr_NoMemory();
		return NULL;
	}
	l->outer.dl_tensor = t->dl_tensor;
	l->outer.manager_ctx = l;
	l->outer.deleter = lent_deleter;
	l->inner = t;
	Py_INCREF(owner);
	l->owner = owner;
	return &l->outer;
}

/* An unused capsule goes with its tensor; a consumer renames it first. */
static void capsule_destructor(PyObject *capsule)
{
	DLManagedTensor *t;
	PyObject *type, *value, *tb;

	if (!PyCapsule_IsValid(capsule, dltensor_name))
		return;
	PyErr_Fetch(&type, &value, &tb);
	t = PyCapsule_GetPointer(capsule, dltensor_name);
	if (t && t->deleter) {
		Py_BEGIN_ALLOW_THREADS
		t->deleter(t);
		Py_END_ALLOW_THREADS
	}
	PyErr_Restore(type, value, tb);
}

/*
 * The consumer's @stream (DLPack): None asks for the array's data ready for
 * any stream (the only value for host memory), -1 for no ordering at all,
 * and on a device another number names the consumer's stream (1 and 2:
 * CUDA's legacy and per-thread default streams), into *native. *sync: the
 * export itself must wait for the array's stream.
 */
static int consumer_stream(PyObject *stream, DLDevice d, int *sync,
			   void **native)
{
	long v;

	*sync = 1;
	*native = NULL;
	if (!stream || stream == Py_None)
		return 0;
	if (!PyLong_Check(stream)) {
		raise_not(stream, "stream must be None or an int");
		return -1;
	}
	if (host_accessible(d) && d.device_type == kDLCPU) {
		PyErr_SetString(PyExc_BufferError,
				"the array is host memory (kDLCPU): __dlpack__'s stream must be None");
		return -1;
	}
	v = PyLong_AsLong(stream);
	if (v == -1 && PyErr_Occurred())
		return -1;
	*sync = v != -1;
	if (v != -1 && (d.device_type == kDLCUDA || d.device_type == kDLCUDAHost ||
			d.device_type == kDLCUDAManaged)) {
		/* DLPack: 0 is ambiguous on CUDA, and no stream is negative */
		if (v < 1) {
			PyErr_Format(PyExc_ValueError,
				     "__dlpack__: stream %ld names no CUDA stream (-1: none; 1, 2: the default streams; else a CUstream)",
				     v);
			return -1;
		}
		*native = PyLong_AsVoidPtr(stream);
		if (!*native && PyErr_Occurred())
			return -1;
		*sync = 0;
	}
	return 0;
}

/*
 * Make the consumer's CUstream @native wait, on the device, for the work
 * queued on the array's stream so far, without a wait here: an event
 * recorded there, waited for on the consumer's stream. An array with no
 * stream has nothing queued for it.
 */
static accel_status_t order_consumer(DeviceArrayObject *self, void *native)
{
	accel_device_t dev = device_handle(self->dev);
	struct accel_array_interface iface;
	accel_event_t e;
	accel_status_t st;

	if (accel_array_get_interface(self->ary, &iface) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (!iface.stream)
		return ACCEL_SUCCESS;
	if (accel_event_create(dev, &e) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	st = accel_event_record(dev, iface.stream, e);
	if (st == ACCEL_SUCCESS)
		st = accel_native_stream_wait_event(dev, native, e);
	accel_event_destroy(dev, e);
	return st;
}

/*
 * The array API's other keywords: any max_version gets the unversioned
 * capsule (DLPack 0.6's, which consumers take); dl_device must be the
 * array's own; copy=True cannot be honoured without a copy, refused.
 */
static int check_export(DLDevice d, PyObject *dl_device, PyObject *copy)
{
	int want_type, want_id, copying;

	if (dl_device && dl_device != Py_None) {
		if (!PyTuple_Check(dl_device)) {
			raise_not(dl_device, "dl_device must be a (device_type, device_id) tuple");
			return -1;
		}
		if (!PyArg_ParseTuple(dl_device, "ii:dl_device", &want_type, &want_id))
			return -1;
		if (want_type != (int)d.device_type || want_id != d.device_id) {
			PyErr_Format(PyExc_BufferError,
				     "__dlpack__: the array is on (%d, %d), not (%d, %d), and is not copied",
				     (int)d.device_type, d.device_id, want_type, want_id);
			return -1;
		}
	}
	copying = copy && copy != Py_None ? PyObject_IsTrue(copy) : 0;
	if (copying > 0)
		PyErr_SetString(PyExc_BufferError,
				"__dlpack__: copy=True is not supported: the export shares the array's memory");
	return copying ? -1 : 0;
}

PyObject *array_dlpack(DeviceArrayObject *self, PyObject *args, PyObject *kwds)
{
	static char *kw[] = { "stream", "max_version", "dl_device", "copy", NULL };
	PyObject *stream = Py_None, *max_version = NULL, *dl_device = NULL;
	PyObject *copy = NULL, *capsule;
	DLManagedTensor *t;
	void *native;
	DLDevice d;
	accel_status_t st;
	int sync;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$OOOO:__dlpack__", kw,
					 &stream, &max_version, &dl_device,
					 &copy) ||
	    dlpack_device(self, &d) < 0 || check_export(d, dl_device, copy) < 0 ||
	    consumer_stream(stream, d, &sync, &native) < 0)
		return NULL;
	/* a stream is a CUstream only where the array has the interface */
	if (native && !accel_array_has_interface(self->ary))
		sync = 1;
	else if (native) {
		WITHOUT_GIL(st, order_consumer(self, native));
		if (st != ACCEL_SUCCESS)
			return raise_accel();
	}
	WITHOUT_GIL(st, accel_array_to_dlpack(self->ary, sync, &t));
	if (st != ACCEL_SUCCESS) {
		if (accel_peek_last_error_code() == ACCEL_ERROR_NOT_SUPPORTED) {
			PyErr_SetString(PyExc_BufferError, accel_get_last_error());
			return NULL;
		}
		return raise_accel();
	}
	t = keep_owner(t, self->owner);
	if (!t)
		return NULL;
	capsule = PyCapsule_New(t, dltensor_name, capsule_destructor);
	if (!capsule)
		t->deleter(t);
	return capsule;
}

/* ------------------------------------------------------------------ */
/* __cuda_array_interface__ */

static bool on_cuda(int dev)
{
	const char *name = "";

	return dev >= 0 &&
	       accel_get_device_name(device_handle(dev), &name) == ACCEL_SUCCESS &&
	       !strncmp(name, "cuda:", 5);
}

static PyObject *cai_dict(const struct accel_array_interface *i)
{
	PyObject *shape = sizes_tuple(i->ndim, i->shape, false), *strides, *d;

	strides = i->has_strides ? sizes_tuple(i->ndim, i->strides, true) :
		  Py_NewRef(Py_None);
	if (!shape || !strides) {
		Py_XDECREF(shape);
		Py_XDECREF(strides);
		return NULL;
	}
	d = Py_BuildValue("{s:N,s:s,s:(NO),s:i,s:N}",
			  "shape", shape, "typestr", i->typestr,
			  "data", PyLong_FromVoidPtr(i->data),
			  i->readonly ? Py_True : Py_False,
			  "version", 3, "strides", strides);
	return d;
}

PyObject *array_cuda_interface(DeviceArrayObject *self, void *closure)
{
	struct accel_array_interface iface;

	if (!on_cuda(self->dev) || !accel_array_has_interface(self->ary)) {
		PyErr_SetString(PyExc_AttributeError,
				"__cuda_array_interface__: only device and mapped arrays of cuda devices have it");
		return NULL;
	}
	PyObject *d, *stream;
	void *native = NULL;

	if (accel_array_get_interface(self->ary, &iface) != ACCEL_SUCCESS)
		return raise_accel();
	/* the array's CUstream, for the consumer to order itself after; None: ready */
	if (iface.stream &&
	    accel_stream_get_native(device_handle(self->dev), iface.stream,
				    &native) != ACCEL_SUCCESS)
		return raise_accel();
	d = cai_dict(&iface);
	stream = native ? PyLong_FromVoidPtr(native) : Py_NewRef(Py_None);
	if (!d || !stream || PyDict_SetItemString(d, "stream", stream) < 0)
		Py_CLEAR(d);
	Py_XDECREF(stream);
	return d;
}

/* ------------------------------------------------------------------ */
/* NumPy: __array__ and the buffer protocol */

static int check_host_accessible(DeviceArrayObject *self)
{
	const char *name = "?";
	DLDevice d;

	if (dlpack_device(self, &d) < 0)
		return -1;
	if (host_accessible(d))
		return 0;
	accel_get_device_name(device_handle(self->dev), &name);
	PyErr_Format(PyExc_BufferError,
		     "the array is device-only memory of %s, which the host cannot read: copy_to_host() it",
		     name);
	return -1;
}

/*
 * __array__(dtype=None, copy=None), NumPy 2's protocol: copy=None copies
 * only where needed, True always, False never (ValueError where it would
 * be needed). Another dtype needs a copy; the array's own dtype does not.
 */
PyObject *array_numpy(DeviceArrayObject *self, PyObject *args, PyObject *kwds)
{
	static char *kw[] = { "dtype", "copy", NULL };
	PyObject *dtype = Py_None, *copy_obj = Py_None, *arr, *r;
	int copy = -1;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OO:__array__", kw, &dtype,
					 &copy_obj) ||
	    (copy_obj != Py_None && (copy = PyObject_IsTrue(copy_obj)) < 0) ||
	    check_host_accessible(self) < 0)
		return NULL;
	arr = numpy_view((PyObject *)self, ndarray_type);
	if (!arr || (dtype == Py_None && copy != 1))
		return arr;
	if (copy != 1) {
		/* astype(copy=False) is the array itself where no copy is needed */
		r = PyObject_CallMethod(arr, "astype", "OssOO", dtype, "K",
					"unsafe", Py_True, Py_False);
		if (r && r != arr && !copy) {
			Py_CLEAR(r);
			PyErr_SetString(PyExc_ValueError,
					"__array__: another dtype needs a copy, which copy=False refuses");
		}
	} else if (dtype == Py_None) {
		r = PyObject_CallMethod(arr, "copy", NULL);
	} else {
		r = PyObject_CallMethod(arr, "astype", "Os", dtype, "C");
	}
	Py_DECREF(arr);
	return r;
}

/* __array_interface__, version 3, of host-accessible memory */
PyObject *array_numpy_interface(DeviceArrayObject *self, void *closure)
{
	struct accel_array_info info;
	struct accel_array_interface iface = { .version = 3 };
	PyObject *d;
	DLDevice dl;

	if (dlpack_device(self, &dl) < 0)
		return NULL;
	if (!host_accessible(dl)) {
		PyErr_SetString(PyExc_AttributeError,
				"__array_interface__: the array is device-only memory");
		return NULL;
	}
	if (array_info(self->ary, &info) < 0)
		return NULL;
	iface.ndim = info.ndim;
	memcpy(iface.shape, info.shape, sizeof(iface.shape));
	memcpy(iface.strides, info.strides, sizeof(iface.strides));
	iface.has_strides = !accel_array_is_c_contiguous(self->ary);
	snprintf(iface.typestr, sizeof(iface.typestr), "%s",
		 accel_dtype_typestr(info.dtype));
	iface.data = info.data;
	iface.readonly = info.readonly;
	/* NumPy's interface has no stream */
	d = cai_dict(&iface);
	return d;
}

static const char *format_of(accel_dtype_t dtype)
{
	static const char *const formats[ACCEL_SCALAR_COUNT] = {
		[ACCEL_BOOL] = "?", [ACCEL_INT8] = "b", [ACCEL_UINT8] = "B",
		[ACCEL_INT16] = "h", [ACCEL_UINT16] = "H", [ACCEL_INT32] = "i",
		[ACCEL_UINT32] = "I", [ACCEL_INT64] = "q", [ACCEL_UINT64] = "Q",
		[ACCEL_FLOAT32] = "f", [ACCEL_FLOAT64] = "d",
	};

	for (int i = 0; i < ACCEL_SCALAR_COUNT; i++)
		if (accel_dtype(i) == dtype)
			return formats[i];
	return "B";
}

/* whether @flags ask for a contiguity the array lacks */
static bool contiguity_refused(DeviceArrayObject *self, int flags)
{
	bool c = accel_array_is_c_contiguous(self->ary);
	bool f = accel_array_is_f_contiguous(self->ary);

	if ((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS)
		return !c;
	if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS)
		return !f;
	if ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS)
		return !c && !f;
	/* without strides, the consumer assumes C order */
	return !(flags & PyBUF_STRIDES) && !c;
}

int array_getbuffer(DeviceArrayObject *self, Py_buffer *view, int flags)
{
	struct accel_array_info info;
	Py_ssize_t *dims;

	view->obj = NULL;
	if (check_host_accessible(self) < 0 || array_info(self->ary, &info) < 0)
		return -1;
	if ((flags & PyBUF_WRITABLE) && info.readonly) {
		PyErr_SetString(PyExc_BufferError, "the array is read-only");
		return -1;
	}
	if (contiguity_refused(self, flags)) {
		PyErr_SetString(PyExc_BufferError,
				"the array is not contiguous as the buffer asks");
		return -1;
	}
	dims = PyMem_Malloc(sizeof(*dims) * 2 * (info.ndim ? info.ndim : 1));
	if (!dims) {
		PyErr_NoMemory();
		return -1;
	}
	for (int i = 0; i < info.ndim; i++) {
		dims[i] = (Py_ssize_t)info.shape[i];
		dims[info.ndim + i] = info.strides[i];
	}
	/* an empty array has no data: any valid address will do */
	view->buf = info.data ? info.data : (void *)dims;
	view->len = (Py_ssize_t)info.nbytes;
	view->readonly = info.readonly;
	view->itemsize = (Py_ssize_t)accel_dtype_size(info.dtype);
	view->format = (flags & PyBUF_FORMAT) ? (char *)format_of(info.dtype) : NULL;
	view->ndim = info.ndim;
	view->shape = (flags & PyBUF_ND) ? dims : NULL;
	view->strides = (flags & PyBUF_STRIDES) ? dims + info.ndim : NULL;
	view->suboffsets = NULL;
	view->internal = dims;
	view->obj = Py_NewRef((PyObject *)self);
	return 0;
}

void array_releasebuffer(DeviceArrayObject *self, Py_buffer *view)
{
	PyMem_Free(view->internal);
}
