// SPDX-License-Identifier: MIT
/*
 * The module accel: its functions, errors as exceptions, and devices (a
 * current device per thread, as a CUDA context is current per thread).
 */
#include "accel_py.h"

PyObject *accel_py_error;
/* an invalid value: an AccelError that is a ValueError too */
static PyObject *accel_py_value_error;

static struct accel_device_id handles[64];
static _Thread_local int current = -1;

PyObject *raise_accel(void)
{
	enum accel_error code = accel_peek_last_error_code();
	PyObject *type = code == ACCEL_ERROR_INVALID_VALUE ?
			 accel_py_value_error : accel_py_error;
	PyObject *exc, *value;

	exc = PyObject_CallFunction(type, "s", accel_get_last_error());
	if (!exc)
		return NULL;
	value = PyLong_FromLong(code);
	if (value) {
		PyObject_SetAttrString(exc, "code", value);
		Py_DECREF(value);
	}
	value = PyUnicode_FromString(accel_error_name(code));
	if (value) {
		PyObject_SetAttrString(exc, "code_name", value);
		Py_DECREF(value);
	}
	PyErr_SetObject(type, exc);
	Py_DECREF(exc);
	return NULL;
}

PyObject *raise_not(PyObject *obj, const char *fmt, ...)
{
	PyObject *type = (PyObject *)Py_TYPE(obj), *msg, *module, *name;
	va_list ap;

	va_start(ap, fmt);
	msg = PyUnicode_FromFormatV(fmt, ap);
	va_end(ap);
	module = PyObject_GetAttrString(type, "__module__");
	name = PyObject_GetAttrString(type, "__qualname__");
	if (msg && module && name) {
		/* the builtins' names are theirs alone, as in tp_name */
		if (PyUnicode_Check(module) &&
		    !PyUnicode_CompareWithASCIIString(module, "builtins"))
			PyErr_Format(PyExc_TypeError, "%U, not %U", msg, name);
		else
			PyErr_Format(PyExc_TypeError, "%U, not %S.%U", msg,
				     module, name);
	}
	Py_XDECREF(msg);
	Py_XDECREF(module);
	Py_XDECREF(name);
	return NULL;
}

PyTypeObject *new_type(PyObject *m, PyType_Spec *spec, PyObject *bases)
{
	PyObject *type = PyType_FromSpecWithBases(spec, bases);

	if (type && m && PyModule_AddType(m, (PyTypeObject *)type) < 0)
		Py_CLEAR(type);
	return (PyTypeObject *)type;
}

accel_device_t device_handle(int id)
{
	handles[id].id = id;
	return &handles[id];
}

int device_count(void)
{
	size_t n;

	if (accel_get_device_count(&n) != ACCEL_SUCCESS) {
		raise_accel();
		return -1;
	}
	return (int)n;
}

int current_device(void)
{
	if (current < 0) {
		int n = device_count();

		if (n < 0)
			return -1;
		if (!n) {
			PyErr_SetString(accel_py_error, "no visible device");
			return -1;
		}
		current = 0;
	}
	return current;
}

/* ------------------------------------------------------------------ */
/* accel.Device */

typedef struct {
	PyObject_HEAD
	int id;
} DeviceObject;

static PyTypeObject *Device_Type;

PyObject *device_object(int id)
{
	DeviceObject *d = PyObject_New(DeviceObject, Device_Type);

	if (d)
		d->id = id;
	return (PyObject *)d;
}

int device_from_object(PyObject *obj)
{
	int n = device_count(), id;

	if (n < 0)
		return -1;
	if (PyObject_TypeCheck(obj, Device_Type))
		return ((DeviceObject *)obj)->id;
	if (PyLong_Check(obj)) {
		long long v = PyLong_AsLongLong(obj);

		if (v == -1 && PyErr_Occurred())
			return -1;
		if (v < 0 || v >= n) {
			PyErr_Format(PyExc_ValueError,
				     "no visible device %lld (there are %d)", v, n);
			return -1;
		}
		return (int)v;
	}
	if (PyUnicode_Check(obj)) {
		const char *name = PyUnicode_AsUTF8AndSize(obj, NULL);

		if (!name)
			return -1;
		if (accel_find_device(name, &id) != ACCEL_SUCCESS) {
			PyErr_Format(PyExc_ValueError, "no visible device \"%s\": %s",
				     name, accel_get_last_error());
			return -1;
		}
		return id;
	}
	raise_not(obj, "a device is an accel.Device, a visible id or a name");
	return -1;
}

static const char *device_name(int id)
{
	const char *name = "?";

	accel_get_device_name(device_handle(id), &name);
	return name;
}

static PyObject *Device_repr(DeviceObject *self)
{
	return PyUnicode_FromFormat("<accel.Device %d '%s'>", self->id,
				    device_name(self->id));
}

static PyObject *Device_richcompare(PyObject *a, PyObject *b, int op)
{
	if (!PyObject_TypeCheck(b, Device_Type) || (op != Py_EQ && op != Py_NE))
		Py_RETURN_NOTIMPLEMENTED;
	if ((((DeviceObject *)a)->id == ((DeviceObject *)b)->id) == (op == Py_EQ))
		Py_RETURN_TRUE;
	Py_RETURN_FALSE;
}

static Py_hash_t Device_hash(DeviceObject *self)
{
	return self->id + 1;
}

static PyObject *Device_get_name(DeviceObject *self, void *closure)
{
	return PyUnicode_FromString(device_name(self->id));
}

static PyObject *Device_get_backend(DeviceObject *self, void *closure)
{
	const char *name = device_name(self->id);

	return PyUnicode_FromStringAndSize(name, (Py_ssize_t)strcspn(name, ":"));
}

static PyObject *Device_get_id(DeviceObject *self, void *closure)
{
	return PyLong_FromLong(self->id);
}

static PyObject *Device_mem_info(DeviceObject *self, PyObject *unused)
{
	size_t total, free;
	accel_status_t st;

	WITHOUT_GIL(st, accel_device_memory_stats(device_handle(self->id),
						  &total, &free));
	if (st != ACCEL_SUCCESS)
		return raise_accel();
	return Py_BuildValue("(nn)", (Py_ssize_t)free, (Py_ssize_t)total);
}

static PyObject *Device_pool_stats(DeviceObject *self, PyObject *unused)
{
	struct accel_pool_stats s;
	accel_pool_t pool;

	if (accel_device_pool(device_handle(self->id), &pool) != ACCEL_SUCCESS ||
	    accel_pool_get_stats(pool, &s) != ACCEL_SUCCESS)
		return raise_accel();
	return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:O}",
			     "reserved", (Py_ssize_t)s.reserved,
			     "reserved_peak", (Py_ssize_t)s.reserved_peak,
			     "allocated", (Py_ssize_t)s.allocated,
			     "allocated_peak", (Py_ssize_t)s.allocated_peak,
			     "requested", (Py_ssize_t)s.requested,
			     "requested_peak", (Py_ssize_t)s.requested_peak,
			     "chunks", (Py_ssize_t)s.chunks,
			     "blocks", (Py_ssize_t)s.blocks,
			     "free_blocks", (Py_ssize_t)s.free_blocks,
			     "largest_free", (Py_ssize_t)s.largest_free,
			     "backend_allocs", (Py_ssize_t)s.backend_allocs,
			     "backend_frees", (Py_ssize_t)s.backend_frees,
			     "caching", s.caching ? Py_True : Py_False);
}

static PyObject *synchronize_device(int id)
{
	accel_status_t st;

	WITHOUT_GIL(st, accel_device_synchronize(device_handle(id)));
	if (st != ACCEL_SUCCESS)
		return raise_accel();
	Py_RETURN_NONE;
}

static PyObject *Device_synchronize(DeviceObject *self, PyObject *unused)
{
	return synchronize_device(self->id);
}

static PyMethodDef Device_methods[] = {
	{ "mem_info", (PyCFunction)Device_mem_info, METH_NOARGS,
	  "mem_info() -> (free, total) bytes of device memory" },
	{ "pool_stats", (PyCFunction)Device_pool_stats, METH_NOARGS,
	  "pool_stats() -> the default caching pool's statistics" },
	{ "synchronize", (PyCFunction)Device_synchronize, METH_NOARGS,
	  "synchronize() waits for all work queued on the device" },
	{ NULL }
};

static PyGetSetDef Device_getset[] = {
	{ "id", (getter)Device_get_id, NULL, "the visible id", NULL },
	{ "name", (getter)Device_get_name, NULL, "such as 'accel:0'", NULL },
	{ "backend", (getter)Device_get_backend, NULL, "'cpu', 'accel' or 'cuda'", NULL },
	{ NULL }
};

static PyType_Slot Device_slots[] = {
	{ Py_tp_doc, "A visible device: accel.devices() lists them." },
	{ Py_tp_repr, Device_repr },
	{ Py_tp_hash, Device_hash },
	{ Py_tp_richcompare, Device_richcompare },
	{ Py_tp_methods, Device_methods },
	{ Py_tp_getset, Device_getset },
	{ 0, NULL }
};

/* made by the module only, as a static type without tp_new was */
static PyType_Spec Device_spec = {
	.name = "accel.Device",
	.basicsize = sizeof(DeviceObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
		 Py_TPFLAGS_DISALLOW_INSTANTIATION,
	.slots = Device_slots,
};

/* ------------------------------------------------------------------ */
/* Module functions */

static PyObject *py_devices(PyObject *self, PyObject *unused)
{
	int n = device_count();
	PyObject *list;

	if (n < 0)
		return NULL;
	list = PyList_New(n);
	for (int i = 0; list && i < n; i++) {
		PyObject *d = device_object(i);

		if (!d || PyList_SetItem(list, i, d) < 0)
			Py_CLEAR(list);
	}
	return list;
}

static PyObject *py_select_device(PyObject *self, PyObject *arg)
{
	int id = device_from_object(arg);

	if (id < 0)
		return NULL;
	current = id;
	return device_object(id);
}

static PyObject *py_get_current_device(PyObject *self, PyObject *unused)
{
	int id = current_device();

	return id < 0 ? NULL : device_object(id);
}

static PyObject *py_synchronize(PyObject *self, PyObject *unused)
{
	int id = current_device();

	return id < 0 ? NULL : synchronize_device(id);
}

static PyObject *py_stream(PyObject *self, PyObject *unused)
{
	int id = current_device();

	return id < 0 ? NULL : stream_new(id);
}

/* array.c's and convert.c's module functions */
PyObject *py_device_array(PyObject *self, PyObject *args, PyObject *kwds);
PyObject *py_device_array_like(PyObject *self, PyObject *args, PyObject *kwds);
PyObject *py_to_device(PyObject *self, PyObject *args, PyObject *kwds);
PyObject *py_as_cuda_array(PyObject *self, PyObject *args, PyObject *kwds);
PyObject *py_is_cuda_array(PyObject *self, PyObject *obj);

/* history.c's */
PyObject *py_memory_snapshot(PyObject *self, PyObject *unused);
PyObject *py_record_memory_history(PyObject *self, PyObject *args,
				   PyObject *kwds);
PyObject *py_dump_snapshot(PyObject *self, PyObject *args, PyObject *kwds);

/* pool.c's */
PyObject *py_memory_stats(PyObject *self, PyObject *args, PyObject *kwds);
PyObject *py_empty_cache(PyObject *self, PyObject *args, PyObject *kwds);
PyObject *py_reset_peak_memory_stats(PyObject *self, PyObject *args,
				     PyObject *kwds);
PyObject *py_set_per_process_memory_fraction(PyObject *self, PyObject *args,
					     PyObject *kwds);

static PyMethodDef module_methods[] = {
	{ "memory_stats", (PyCFunction)(void (*)(void))py_memory_stats,
	  METH_VARARGS | METH_KEYWORDS,
	  "memory_stats(device=None) -> the device's caching pool's statistics, under torch.cuda.memory_stats()'s keys" },
	{ "empty_cache", (PyCFunction)(void (*)(void))py_empty_cache,
	  METH_VARARGS | METH_KEYWORDS,
	  "empty_cache(device=None): give the pool's idle memory back to the device" },
	{ "reset_peak_memory_stats",
	  (PyCFunction)(void (*)(void))py_reset_peak_memory_stats,
	  METH_VARARGS | METH_KEYWORDS,
	  "reset_peak_memory_stats(device=None): the pool's peaks start from now" },
	{ "set_per_process_memory_fraction",
	  (PyCFunction)(void (*)(void))py_set_per_process_memory_fraction,
	  METH_VARARGS | METH_KEYWORDS,
	  "set_per_process_memory_fraction(fraction, device=None): the device's pools reserve at most that share of its memory" },
	{ "memory_snapshot", py_memory_snapshot, METH_NOARGS,
	  "memory_snapshot() -> every device's pool segments and history, as torch.cuda.memory_snapshot() in PyTorch 2" },
	{ "_record_memory_history",
	  (PyCFunction)(void (*)(void))py_record_memory_history,
	  METH_VARARGS | METH_KEYWORDS,
	  "_record_memory_history(enabled=True, max_entries=100000, device=None): record the pools' last max_entries events with their Python stacks (enabled false: stop)" },
	{ "_dump_snapshot", (PyCFunction)(void (*)(void))py_dump_snapshot,
	  METH_VARARGS | METH_KEYWORDS,
	  "_dump_snapshot(filename='dump_snapshot.pickle', legacy=False): pickle memory_snapshot() (legacy: its list of segments, as PyTorch 1.13's _memory_viz reads)" },
	{ "devices", py_devices, METH_NOARGS,
	  "devices() -> the visible devices" },
	{ "select_device", py_select_device, METH_O,
	  "select_device(dev) -> make dev (a Device, id or name) the calling thread's current device" },
	{ "get_current_device", py_get_current_device, METH_NOARGS,
	  "get_current_device() -> the calling thread's current device" },
	{ "synchronize", py_synchronize, METH_NOARGS,
	  "synchronize() waits for all work queued on the current device" },
	{ "stream", py_stream, METH_NOARGS,
	  "stream() -> a new stream of the current device" },
	{ "device_array", (PyCFunction)(void (*)(void))py_device_array,
	  METH_VARARGS | METH_KEYWORDS,
	  "device_array(shape, dtype=np.float64, strides=None, order='C', stream=0)" },
	{ "device_array_like", (PyCFunction)(void (*)(void))py_device_array_like,
	  METH_VARARGS | METH_KEYWORDS, "device_array_like(ary, stream=0)" },
	{ "to_device", (PyCFunction)(void (*)(void))py_to_device,
	  METH_VARARGS | METH_KEYWORDS,
	  "to_device(obj, stream=0, copy=True, to=None)" },
	{ "as_cuda_array", (PyCFunction)(void (*)(void))py_as_cuda_array,
	  METH_VARARGS | METH_KEYWORDS, "as_cuda_array(obj, sync=True)" },
	{ "is_cuda_array", py_is_cuda_array, METH_O,
	  "is_cuda_array(obj) -> whether obj has __cuda_array_interface__" },
	{ "pinned_array", (PyCFunction)(void (*)(void))py_pinned_array,
	  METH_VARARGS | METH_KEYWORDS,
	  "pinned_array(shape, dtype=np.float64, strides=None, order='C')" },
	{ "pinned_array_like", (PyCFunction)(void (*)(void))py_pinned_array_like,
	  METH_VARARGS | METH_KEYWORDS, "pinned_array_like(ary)" },
	{ "mapped_array", (PyCFunction)(void (*)(void))py_mapped_array,
	  METH_VARARGS | METH_KEYWORDS,
	  "mapped_array(shape, dtype=np.float64, strides=None, order='C', stream=0, portable=False, wc=False)" },
	{ "mapped_array_like", (PyCFunction)(void (*)(void))py_mapped_array_like,
	  METH_VARARGS | METH_KEYWORDS,
	  "mapped_array_like(ary, stream=0, portable=False, wc=False)" },
	{ NULL }
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "accel",
	.m_doc = "Device memory of accel, cpu and cuda devices with Numba's API "
		 "(numba.cuda's memory management), DLPack and the CUDA array "
		 "interface. See docs/python.md.",
	.m_size = -1,
	.m_methods = module_methods,
};

/* accel.AccelError, and accel.AccelValueError, also a ValueError */
static int add_errors(PyObject *m)
{
	PyObject *bases;

	accel_py_error = PyErr_NewExceptionWithDoc(
		"accel.AccelError",
		"A libaccel call failed: the library's message, with code and code_name.",
		PyExc_RuntimeError, NULL);
	if (!accel_py_error)
		return -1;
	bases = PyTuple_Pack(2, accel_py_error, PyExc_ValueError);
	accel_py_value_error = bases ? PyErr_NewExceptionWithDoc(
		"accel.AccelValueError",
		"A libaccel call refused an argument (ACCEL_ERROR_INVALID_VALUE): an AccelError and a ValueError.",
		bases, NULL) : NULL;
	Py_XDECREF(bases);
	if (!accel_py_value_error ||
	    PyModule_AddObjectRef(m, "AccelError", accel_py_error) < 0 ||
	    PyModule_AddObjectRef(m, "AccelValueError", accel_py_value_error) < 0)
		return -1;
	return 0;
}

PyMODINIT_FUNC PyInit_accel(void)
{
	PyObject *m = PyModule_Create(&module_def);

	if (!m)
		return NULL;
	Device_Type = new_type(m, &Device_spec, NULL);
	if (!Device_Type || add_errors(m) < 0 || numpy_init() < 0 ||
	    stream_init(m) < 0 || array_init(m) < 0 || host_init(m) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
