// SPDX-License-Identifier: MIT
/*
 * The device's caching pool as PyTorch's torch.cuda memory functions show
 * theirs: memory_stats() with PyTorch's key names where the meaning is the
 * same, empty_cache(), reset_peak_memory_stats() and
 * set_per_process_memory_fraction(), on the current device unless one is
 * given.
 */
#include "accel_py.h"

/* The device @obj names (None: the current one); -1 with an exception set */
static int device_or_current(PyObject *obj)
{
	return obj == Py_None ? current_device() : device_from_object(obj);
}

/* The default pool of the device @obj names; -1 with an exception set. */
static int default_pool(PyObject *obj, accel_pool_t *pool)
{
	int id = device_or_current(obj);

	if (id < 0)
		return -1;
	if (accel_device_pool(device_handle(id), pool) != ACCEL_SUCCESS) {
		raise_accel();
		return -1;
	}
	return 0;
}

/* dict[key] = n; -1 with an exception set */
static int put(PyObject *dict, const char *key, size_t n)
{
	PyObject *v = PyLong_FromSize_t(n);
	int ret = v ? PyDict_SetItemString(dict, key, v) : -1;

	Py_XDECREF(v);
	return ret;
}

/* The pool's figures under PyTorch's keys, and the pool's own. */
static PyObject *stats_dict(const struct accel_pool_stats *s)
{
	const struct { const char *key; size_t value; } keys[] = {
		{ "allocated_bytes.all.current", s->allocated },
		{ "allocated_bytes.all.peak", s->allocated_peak },
		{ "reserved_bytes.all.current", s->reserved },
		{ "reserved_bytes.all.peak", s->reserved_peak },
		{ "requested_bytes.all.current", s->requested },
		{ "requested_bytes.all.peak", s->requested_peak },
		{ "active_bytes.all.current", s->active },
		{ "inactive_split_bytes.all.current", s->inactive_split },
		{ "allocation.all.current", s->blocks },
		{ "allocation.all.allocated", s->allocations },
		{ "allocation.all.freed", s->frees },
		{ "segment.all.current", s->backend_allocs - s->backend_frees },
		{ "segment.all.allocated", s->backend_allocs },
		{ "segment.all.freed", s->backend_frees },
		{ "num_device_alloc", s->backend_allocs },
		{ "num_device_free", s->backend_frees },
		{ "num_ooms", s->ooms },
		{ "num_alloc_retries", s->oom_retries },
		/* the pool's own: no PyTorch key means the same */
		{ "free_blocks", s->free_blocks },
		{ "largest_free_block_bytes", s->largest_free },
		{ "limit_bytes", s->limit },
	};
	PyObject *d = PyDict_New();

	for (size_t i = 0; d && i < sizeof(keys) / sizeof(keys[0]); i++)
		if (put(d, keys[i].key, keys[i].value) < 0)
			Py_CLEAR(d);
	return d;
}

PyObject *py_memory_stats(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "device", NULL };
	PyObject *device = Py_None;
	struct accel_pool_stats s;
	accel_pool_t pool;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:memory_stats", kwlist,
					 &device) ||
	    default_pool(device, &pool) < 0)
		return NULL;
	if (accel_pool_get_stats(pool, &s) != ACCEL_SUCCESS)
		return raise_accel();
	return stats_dict(&s);
}

PyObject *py_empty_cache(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "device", NULL };
	PyObject *device = Py_None;
	accel_pool_t pool;
	accel_status_t st;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:empty_cache", kwlist,
					 &device) ||
	    default_pool(device, &pool) < 0)
		return NULL;
	WITHOUT_GIL(st, accel_pool_trim(pool));
	if (st != ACCEL_SUCCESS)
		return raise_accel();
	Py_RETURN_NONE;
}

PyObject *py_reset_peak_memory_stats(PyObject *self, PyObject *args,
				     PyObject *kwds)
{
	static char *kwlist[] = { "device", NULL };
	PyObject *device = Py_None;
	accel_pool_t pool;

	if (!PyArg_ParseTupleAndKeywords(args, kwds,
					 "|O:reset_peak_memory_stats", kwlist,
					 &device) ||
	    default_pool(device, &pool) < 0)
		return NULL;
	if (accel_pool_reset_peaks(pool) != ACCEL_SUCCESS)
		return raise_accel();
	Py_RETURN_NONE;
}

PyObject *py_set_per_process_memory_fraction(PyObject *self, PyObject *args,
					     PyObject *kwds)
{
	static char *kwlist[] = { "fraction", "device", NULL };
	PyObject *device = Py_None;
	double fraction;
	int id;

	if (!PyArg_ParseTupleAndKeywords(args, kwds,
					 "d|O:set_per_process_memory_fraction",
					 kwlist, &fraction, &device))
		return NULL;
	id = device_or_current(device);
	if (id < 0)
		return NULL;
	if (accel_device_set_memory_fraction(device_handle(id), fraction) !=
	    ACCEL_SUCCESS)
		return raise_accel();
	Py_RETURN_NONE;
}
