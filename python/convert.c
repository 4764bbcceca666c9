// SPDX-License-Identifier: MIT
/*
 * Other objects in: NumPy arrays as library host arrays (or as the
 * library's own pinned and mapped memory behind them), objects with
 * __cuda_array_interface__ or __dlpack__ viewed without copying
 * (as_cuda_array), and to_device().
 */
#include "accel_py.h"

accel_array_t host_array_of(PyObject *arr)
{
	struct numpy_layout l;
	accel_array_t h;

	if (numpy_layout(arr, &l) < 0)
		return NULL;
	for (int i = 0; i < l.ndim; i++) {
		if (l.strides[i] < 0) {
			PyErr_SetString(PyExc_ValueError,
					"arrays with negative strides are not supported");
			return NULL;
		}
	}
	if (accel_host_array(l.data, l.ndim, l.shape, l.dtype, l.strides, 'C',
			     l.readonly, &h) != ACCEL_SUCCESS) {
		raise_accel();
		return NULL;
	}
	return h;
}

/* @arr's layout and data as an array interface */
static int interface_of_numpy(PyObject *arr, struct accel_array_interface *iface)
{
	struct numpy_layout l;

	if (numpy_layout(arr, &l) < 0)
		return -1;
	memset(iface, 0, sizeof(*iface));
	iface->version = 3;
	iface->ndim = l.ndim;
	snprintf(iface->typestr, sizeof(iface->typestr), "%s",
		 accel_dtype_typestr(l.dtype));
	iface->data = l.data;
	iface->readonly = l.readonly;
	iface->has_strides = 1;
	memcpy(iface->shape, l.shape, sizeof(iface->shape));
	memcpy(iface->strides, l.strides, sizeof(iface->strides));
	return 0;
}

accel_array_t library_array_of(PyObject *arr)
{
	struct accel_array_interface iface;
	struct accel_array_info info;
	DeviceArrayObject *owner = numpy_lender(arr);
	accel_array_t view = NULL;
	accel_status_t st = ACCEL_SUCCESS;

	if (!owner)
		return NULL;
	/* pinned memory is host memory: only mapped memory is the device's */
	if (owner->dev < 0 || accel_array_get_info(owner->ary, &info) != ACCEL_SUCCESS ||
	    info.kind != ACCEL_ARRAY_MAPPED || interface_of_numpy(arr, &iface) < 0) {
		PyErr_Clear();
		goto out;
	}
	/* the stream it was made for, which exports wait for */
	if (owner->stream)
		iface.stream = ((StreamObject *)owner->stream)->stream;
	/* a view of the library's storage, holding it */
	st = accel_array_from_interface(device_handle(owner->dev), &iface, 0,
					&view);
	if (st != ACCEL_SUCCESS)
		raise_accel();
out:
	Py_DECREF(owner);
	return st == ACCEL_SUCCESS ? view : NULL;
}

accel_array_t array_of_numpy(PyObject *arr)
{
	accel_array_t a = library_array_of(arr);

	return a || PyErr_Occurred() ? a : host_array_of(arr);
}

/* ------------------------------------------------------------------ */
/* as_cuda_array: __cuda_array_interface__ and __dlpack__ */

/* an int entry of a tuple as a size (shape) or a signed byte count */
static int tuple_sizes(PyObject *t, const char *what, int n, void *out,
		       bool is_signed)
{
	if (!PyTuple_Check(t) || PyTuple_Size(t) != n) {
		PyErr_Format(PyExc_ValueError,
			     "__cuda_array_interface__'s %s must be a tuple of %d ints",
			     what, n);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		long long v = PyLong_AsLongLong(PyTuple_GetItem(t, i));

		if (v == -1 && PyErr_Occurred())
			return -1;
		if (v < 0) {
			PyErr_Format(PyExc_ValueError,
				     "__cuda_array_interface__'s %s holds %lld", what, v);
			return -1;
		}
		if (is_signed)
			((ptrdiff_t *)out)[i] = (ptrdiff_t)v;
		else
			((size_t *)out)[i] = (size_t)v;
	}
	return 0;
}

static PyObject *dict_item(PyObject *d, const char *key, bool required)
{
	PyObject *v = PyDict_GetItemString(d, key);

	if (!v && required)
		PyErr_Format(PyExc_ValueError,
			     "__cuda_array_interface__ has no '%s'", key);
	return v;
}

/* The interface a __cuda_array_interface__ dict describes. */
static int parse_cai(PyObject *d, struct accel_array_interface *iface,
		     PyObject **stream)
{
	PyObject *shape, *typestr, *data, *strides, *mask, *version;
	Py_ssize_t ts_len = 0;
	const char *ts;
	long v;

	memset(iface, 0, sizeof(*iface));
	if (!PyDict_Check(d)) {
		PyErr_SetString(PyExc_TypeError,
				"__cuda_array_interface__ must be a dict");
		return -1;
	}
	shape = dict_item(d, "shape", true);
	typestr = dict_item(d, "typestr", true);
	data = dict_item(d, "data", true);
	version = dict_item(d, "version", true);
	if (!shape || !typestr || !data || !version)
		return -1;
	mask = dict_item(d, "mask", false);
	if (mask && mask != Py_None) {
		PyErr_SetString(PyExc_ValueError, "masked arrays are not supported");
		return -1;
	}
	v = PyLong_Check(version) ? PyLong_AsLong(version) : 0;
	if (v < 1 || v > 3) {
		if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
			PyErr_Clear();
			PyErr_Format(PyExc_ValueError,
				     "__cuda_array_interface__'s version %R is not 1 to 3",
				     version);
		}
		return -1;
	}
	iface->version = (int)v;
	iface->ndim = PyTuple_Check(shape) ? (int)PyTuple_Size(shape) : -1;
	if (iface->ndim < 0 || iface->ndim > ACCEL_MAX_DIMS) {
		PyErr_SetString(PyExc_ValueError,
				"__cuda_array_interface__'s shape must be a tuple of at most 32 ints");
		return -1;
	}
	if (tuple_sizes(shape, "shape", iface->ndim, iface->shape, false) < 0)
		return -1;
	ts = PyUnicode_Check(typestr) ? PyUnicode_AsUTF8AndSize(typestr, &ts_len) :
	     NULL;
	if (!ts || (size_t)ts_len != strlen(ts) ||
	    strlen(ts) >= sizeof(iface->typestr)) {
		PyErr_Clear();
		PyErr_SetString(PyExc_ValueError,
				"__cuda_array_interface__'s typestr is not a dtype string");
		return -1;
	}
	strcpy(iface->typestr, ts);
	if (!PyTuple_Check(data) || PyTuple_Size(data) != 2) {
		PyErr_SetString(PyExc_ValueError,
				"__cuda_array_interface__'s data must be (pointer, read-only)");
		return -1;
	}
	iface->data = PyLong_AsVoidPtr(PyTuple_GetItem(data, 0));
	if (PyErr_Occurred())
		return -1;
	iface->readonly = PyObject_IsTrue(PyTuple_GetItem(data, 1));
	if (iface->readonly < 0)
		return -1;
	strides = dict_item(d, "strides", false);
	if (strides && strides != Py_None) {
		iface->has_strides = 1;
		if (tuple_sizes(strides, "strides", iface->ndim, iface->strides,
				true) < 0)
			return -1;
	}
	/* version 3: None, or a stream number, which is never 0 */
	*stream = dict_item(d, "stream", false);
	if (*stream && *stream != Py_None &&
	    (!PyLong_Check(*stream) || !PyObject_IsTrue(*stream))) {
		PyErr_Format(PyExc_ValueError,
			     "__cuda_array_interface__'s stream must be None or a stream number other than 0, not %R",
			     *stream);
		return -1;
	}
	return 0;
}

/*
 * Wait for a producer's stream (the CUDA array interface's: a CUstream
 * number, never 0). A cuda device waits for that very stream; elsewhere no
 * library but this one has streams, so the device's work is waited for.
 */
static int sync_foreign_stream(PyObject *stream, int dev)
{
	void *native = PyLong_Check(stream) ? PyLong_AsVoidPtr(stream) : NULL;
	accel_status_t st;

	if (!native) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_ValueError,
					"__cuda_array_interface__'s stream must be None or a stream number, not 0");
		return -1;
	}
	WITHOUT_GIL(st, accel_native_stream_synchronize(device_handle(dev),
							native));
	if (st != ACCEL_SUCCESS &&
	    accel_peek_last_error_code() == ACCEL_ERROR_NOT_SUPPORTED)
		WITHOUT_GIL(st, accel_device_synchronize(device_handle(dev)));
	if (st != ACCEL_SUCCESS) {
		raise_accel();
		return -1;
	}
	return 0;
}

static PyObject *view_of_cai(PyObject *obj, PyObject *cai, int dev, int sync)
{
	struct accel_array_interface iface;
	PyObject *stream = NULL, *d;
	accel_array_t ary;
	accel_status_t st;
	int r;

	/*
	 * Read from a copy: the dict's entries are borrowed while they are
	 * read, and reading them runs the producer's code (an __index__ or a
	 * __bool__), which could empty the producer's own dict meanwhile.
	 */
	d = PyDict_Check(cai) ? PyDict_Copy(cai) : Py_NewRef(cai);
	if (!d)
		return NULL;
	r = parse_cai(d, &iface, &stream);
	if (r == 0 && sync && stream && stream != Py_None)
		r = sync_foreign_stream(stream, dev);
	Py_DECREF(d);
	if (r < 0)
		return NULL;
	WITHOUT_GIL(st, accel_array_from_interface(device_handle(dev), &iface,
						   0, &ary));
	if (st != ACCEL_SUCCESS)
		return raise_accel();
	return device_array_wrap(ary, dev, obj, NULL);
}

static const char dltensor_name[] = "dltensor";
static const char used_name[] = "used_dltensor";

/*
 * a DLPack capsule's tensor viewed by @dev (-1: as host memory), keeping
 * @owner (the producer) alive too, as Numba's views keep theirs
 */
static PyObject *view_of_capsule(PyObject *capsule, int dev, PyObject *owner)
{
	DLManagedTensor *t = PyCapsule_GetPointer(capsule, dltensor_name);
	accel_array_t ary;
	accel_status_t st;

	if (!t) {
		PyErr_Clear();
		PyErr_SetString(PyExc_ValueError,
				"__dlpack__ gave no unused \"dltensor\" capsule");
		return NULL;
	}
	/*
	 * Claimed while the GIL is held: another thread consuming the same
	 * capsule meanwhile finds it used. A failed import gives it back.
	 */
	if (PyCapsule_SetName(capsule, used_name) < 0)
		return NULL;
	WITHOUT_GIL(st, accel_array_from_dlpack(dev < 0 ? NULL : device_handle(dev),
						t, &ary));
	if (st != ACCEL_SUCCESS) {
		PyCapsule_SetName(capsule, dltensor_name);
		return raise_accel();
	}
	return device_array_wrap(ary, dev, owner, NULL);
}

static PyObject *view_of_dlpack(PyObject *obj, int dev)
{
	PyObject *capsule = PyObject_CallMethod(obj, "__dlpack__", NULL), *r;

	if (!capsule)
		return NULL;
	r = view_of_capsule(capsule, dev, obj);
	Py_DECREF(capsule);
	return r;
}

PyObject *view_of_object(PyObject *obj, int dev, int sync)
{
	PyObject *cai, *r;

	if (PyObject_TypeCheck(obj, DeviceArray_Type) &&
	    ((DeviceArrayObject *)obj)->dev == dev) {
		Py_INCREF(obj);
		return obj;
	}
	cai = PyObject_GetAttrString(obj, "__cuda_array_interface__");
	if (cai) {
		r = view_of_cai(obj, cai, dev, sync);
		Py_DECREF(cai);
		return r;
	}
	if (!PyErr_ExceptionMatches(PyExc_AttributeError))
		return NULL;
	PyErr_Clear();
	if (PyObject_HasAttrString(obj, "__dlpack__"))
		return view_of_dlpack(obj, dev);
	return raise_not(obj, "as_cuda_array() takes an object with __cuda_array_interface__ or __dlpack__");
}

PyObject *py_as_cuda_array(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kw[] = { "obj", "sync", NULL };
	PyObject *obj;
	int sync = 1, dev;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|p:as_cuda_array", kw,
					 &obj, &sync))
		return NULL;
	dev = current_device();
	return dev < 0 ? NULL : view_of_object(obj, dev, sync);
}

PyObject *py_is_cuda_array(PyObject *self, PyObject *obj)
{
	return PyBool_FromLong(PyObject_HasAttrString(obj, "__cuda_array_interface__"));
}

/* ------------------------------------------------------------------ */
/* to_device */

/*
 * @src (a library array, kept by @keep) on @dev: the same memory where the
 * device uses it as it is, else a new device array, copied into if @copy
 */
static PyObject *to_device_from(accel_array_t src, PyObject *keep, int dev,
				PyObject *stream, int copy)
{
	accel_array_t out;
	accel_stream_t s;
	accel_status_t st;

	if (stream_from_object(stream, dev, &s) < 0)
		return NULL;
	WITHOUT_GIL(st, accel_to_device_ex(device_handle(dev), src, s, copy,
					   &out));
	if (st != ACCEL_SUCCESS)
		return raise_accel();
	/* a queued copy reads the source later */
	if (stream_keep(stream, keep) < 0) {
		accel_array_release(out);
		return NULL;
	}
	/* memory shared with the source is the library's, held by the array */
	return device_array_wrap(out, dev, NULL, stream);
}

/* A DLPack producer that is not NumPy: host memory in, device memory viewed. */
static PyObject *to_device_dlpack(PyObject *obj, int dev, PyObject *stream,
				  int copy)
{
	PyObject *dl = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
	PyObject *host, *r;
	long type;

	if (!dl)
		return NULL;
	type = PyTuple_Check(dl) && PyTuple_Size(dl) == 2 ?
	       PyLong_AsLong(PyTuple_GetItem(dl, 0)) : -1;
	Py_DECREF(dl);
	if (PyErr_Occurred())
		return NULL;
	if (type != kDLCPU && type != kDLCUDAHost)
		return view_of_dlpack(obj, dev);
	host = view_of_dlpack(obj, -1);
	if (!host)
		return NULL;
	r = to_device_from(((DeviceArrayObject *)host)->ary, host, dev, stream,
			   copy);
	Py_DECREF(host);
	return r;
}

/*
 * Anything NumPy takes, as an aligned NumPy array without negative strides
 * (the library's layouts have none), copied only where it is not one
 */
static PyObject *to_device_numpy(PyObject *obj, int dev, PyObject *stream,
				 int copy)
{
	PyObject *arr = numpy_asanyarray(obj), *keep, *r;
	struct numpy_layout l;
	accel_array_t src;
	bool reorder = false;

	if (!arr || numpy_layout(arr, &l) < 0) {
		Py_XDECREF(arr);
		return NULL;
	}
	for (int i = 0; i < l.ndim; i++)
		reorder |= l.strides[i] < 0;
	if (reorder || !layout_aligned(&l)) {
		PyObject *c = numpy_copy(arr, 'K');

		Py_DECREF(arr);
		if (!c)
			return NULL;
		arr = c;
	}
	src = array_of_numpy(arr);
	if (!src) {
		Py_DECREF(arr);
		return NULL;
	}
	keep = device_array_wrap(src, -1, arr, NULL);
	Py_DECREF(arr);
	if (!keep)
		return NULL;
	r = to_device_from(src, keep, dev, stream, copy);
	Py_DECREF(keep);
	return r;
}

PyObject *py_to_device(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kw[] = { "obj", "stream", "copy", "to", NULL };
	PyObject *obj, *stream = NULL, *to = Py_None;
	int copy = 1, dev;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OpO:to_device", kw,
					 &obj, &stream, &copy, &to))
		return NULL;
	dev = current_device();
	if (dev < 0)
		return NULL;
	if (to != Py_None) {
		PyObject *r;

		if (!PyObject_TypeCheck(to, DeviceArray_Type) &&
		    !PyObject_TypeCheck(to, MappedArray_Type))
			return raise_not(to, "to must be an accel.DeviceNDArray or MappedNDArray");
		r = PyObject_CallMethod(to, "copy_to_device", "OO", obj,
					stream ? stream : Py_None);
		if (!r)
			return NULL;
		Py_DECREF(r);
		Py_INCREF(to);
		return to;
	}
	if (PyObject_TypeCheck(obj, DeviceArray_Type)) {
		DeviceArrayObject *d = (DeviceArrayObject *)obj;

		if (d->dev == dev) {
			Py_INCREF(obj);
			return obj;
		}
		/* another device's array: copied, peer to peer */
		return to_device_from(d->ary, obj, dev, stream, copy);
	}
	if (!is_ndarray(obj)) {
		if (PyObject_HasAttrString(obj, "__cuda_array_interface__"))
			return view_of_object(obj, dev, 1);
		if (PyObject_HasAttrString(obj, "__dlpack__") &&
		    PyObject_HasAttrString(obj, "__dlpack_device__"))
			return to_device_dlpack(obj, dev, stream, copy);
	}
	return to_device_numpy(obj, dev, stream, copy);
}
