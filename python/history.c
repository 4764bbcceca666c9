// SPDX-License-Identifier: MIT
/*
 * The default pools' allocation history and snapshots as torch.cuda.memory
 * shows its own: _record_memory_history(), memory_snapshot() and
 * _dump_snapshot(), in PyTorch 2's format (or 1.13's list of segments).
 *
 * The library knows nothing of Python: each history event carries the
 * context the calling thread set (accel_pool_set_history_context()). While
 * recording, every call the module makes with the GIL released
 * (WITHOUT_GIL, the calls that allocate and free) first captures the
 * Python frames, keeps each distinct stack once, and sets its number as
 * the context; a snapshot turns the numbers back into frames. Frames are
 * kept once too, shared by the stacks they are in. Stacks that no recorded
 * event refers to any more are dropped whenever the table has doubled, so
 * that it stays within some multiple of the rings' events.
 */
#include <dlfcn.h>

#include "accel_py.h"

/* at most this many frames of a stack, the innermost */
#define MAX_FRAMES 64

/* devices whose default pool records; while none, the tables are empty */
static int recording_devices;
static bool *recording_on;	/* by visible id */
static int ndevices;
/* the distinct frames: (filename, line, name) -> (that key, PyTorch's dict) */
static PyObject *frame_table;
/* the distinct stacks: a tuple of frame_table's keys -> its number */
static PyObject *stack_numbers;
/* a number -> its stack's frames (frame_table's dicts) */
static PyObject *stack_frames;
static unsigned long long last_number;
/* the table's size at which the stacks no event refers to go */
#define MIN_PRUNE 4096
static Py_ssize_t prune_at = MIN_PRUNE;

bool history_recording;

/* A frame as PyTorch's snapshots have them; NULL with an exception set. */
static PyObject *frame_dict(PyObject *filename, PyObject *line, PyObject *name)
{
	return Py_BuildValue("{s:O,s:O,s:O}", "filename", filename, "line",
			     line, "name", name);
}

/* the attributes read of frames and code objects, made once */
enum { F_CODE, F_LINENO, F_BACK, CO_FILENAME, CO_NAME, NATTRS };
static PyObject *attr[NATTRS];

static int make_attr_names(void)
{
	static const char *const names[NATTRS] = {
		"f_code", "f_lineno", "f_back", "co_filename", "co_name",
	};

	for (int i = 0; i < NATTRS; i++)
		if (!attr[i] && !(attr[i] = PyUnicode_InternFromString(names[i])))
			return -1;
	return 0;
}

/* (filename, line, name) of a frame object; NULL with an exception set. */
static PyObject *frame_key(PyObject *frame)
{
	PyObject *code = PyObject_GetAttr(frame, attr[F_CODE]);
	PyObject *line = PyObject_GetAttr(frame, attr[F_LINENO]);
	PyObject *file = code ? PyObject_GetAttr(code, attr[CO_FILENAME]) : NULL;
	PyObject *name = code ? PyObject_GetAttr(code, attr[CO_NAME]) : NULL;
	PyObject *key = NULL;

	if (line == Py_None) {	/* a frame between lines has none */
		Py_DECREF(line);
		line = PyLong_FromLong(0);
	}
	if (file && name && line)
		key = PyTuple_Pack(3, file, line, name);
	Py_XDECREF(code);
	Py_XDECREF(line);
	Py_XDECREF(file);
	Py_XDECREF(name);
	return key;
}

/* frame_table's entry for @key, made if new (borrowed); NULL on error */
static PyObject *known_frame(PyObject *key)
{
	PyObject *entry = PyDict_GetItemWithError(frame_table, key), *dict;
	int ret;

	if (entry || PyErr_Occurred())
		return entry;
	dict = frame_dict(PyTuple_GetItem(key, 0), PyTuple_GetItem(key, 1),
			  PyTuple_GetItem(key, 2));
	entry = dict ? PyTuple_Pack(2, key, dict) : NULL;
	ret = entry ? PyDict_SetItem(frame_table, key, entry) : -1;
	Py_XDECREF(dict);
	Py_XDECREF(entry);
	return ret < 0 ? NULL : entry;	/* the table holds it */
}

/*
 * The calling thread's Python stack, innermost first, as a tuple of
 * frame_table's keys.
 */
static PyObject *stack_key(void)
{
	PyObject *keys = PyList_New(0), *frame, *tuple = NULL;

	frame = (PyObject *)PyEval_GetFrame();	/* borrowed */
	Py_XINCREF(frame);
	while (keys && frame && frame != Py_None &&
	       PyList_Size(keys) < MAX_FRAMES) {
		PyObject *key = frame_key(frame), *back;
		PyObject *entry = key ? known_frame(key) : NULL;

		Py_XDECREF(key);
		if (!entry || PyList_Append(keys, PyTuple_GetItem(entry, 0)) < 0) {
			Py_CLEAR(keys);
			break;
		}
		back = PyObject_GetAttr(frame, attr[F_BACK]);
		Py_DECREF(frame);
		frame = back;
	}
	Py_XDECREF(frame);
	if (keys)
		tuple = PyList_AsTuple(keys);
	Py_XDECREF(keys);
	return tuple;
}

/* The default pool of visible device @id; -1 with an exception set. */
static int pool_of(int id, accel_pool_t *pool)
{
	if (accel_device_pool(device_handle(id), pool) != ACCEL_SUCCESS) {
		raise_accel();
		return -1;
	}
	return 0;
}

/* The context numbers that device @id's recorded events carry, into @used. */
static int add_used_numbers(int id, PyObject *used)
{
	struct accel_pool_snapshot *s;
	accel_pool_t pool;
	int ret = 0;

	if (pool_of(id, &pool) < 0)
		return -1;
	if (accel_pool_get_snapshot(pool, &s) != ACCEL_SUCCESS) {
		raise_accel();
		return -1;
	}
	for (size_t i = 0; !ret && i < s->nevents; i++) {
		PyObject *n = PyLong_FromUnsignedLongLong(s->events[i].context);

		ret = n ? PySet_Add(used, n) : -1;
		Py_XDECREF(n);
	}
	accel_pool_snapshot_free(s);
	return ret;
}

/* Drop the frames that no stack is made of; -1 on error. */
static int keep_used_frames(void)
{
	PyObject *kept = PyDict_New(), *stacks = PyDict_Keys(stack_numbers);
	int ret = kept && stacks ? 0 : -1;

	for (Py_ssize_t i = 0; !ret && i < PyList_Size(stacks); i++) {
		PyObject *stack = PyList_GetItem(stacks, i);

		for (Py_ssize_t k = 0; !ret && k < PyTuple_Size(stack); k++) {
			PyObject *key = PyTuple_GetItem(stack, k);

			ret = PyDict_SetItem(kept, key,
					     PyDict_GetItem(frame_table, key));
		}
	}
	Py_XDECREF(stacks);
	if (ret) {
		Py_XDECREF(kept);
		return -1;
	}
	Py_DECREF(frame_table);
	frame_table = kept;
	return 0;
}

/* Drop the stacks that no recorded event refers to; -1 on error. */
static int prune_stacks(void)
{
	PyObject *used = PySet_New(NULL), *items = NULL;
	int ret = used ? 0 : -1;

	for (int id = 0; !ret && id < ndevices; id++)
		if (recording_on[id])
			ret = add_used_numbers(id, used);
	if (!ret)
		items = PyDict_Items(stack_numbers);
	ret = items ? 0 : -1;
	for (Py_ssize_t i = 0; !ret && i < PyList_Size(items); i++) {
		PyObject *kv = PyList_GetItem(items, i);
		PyObject *number = PyTuple_GetItem(kv, 1);
		int in_use = PySet_Contains(used, number);

		if (in_use < 0 ||
		    (!in_use && (PyDict_DelItem(stack_numbers,
						PyTuple_GetItem(kv, 0)) < 0 ||
				 PyDict_DelItem(stack_frames, number) < 0)))
			ret = -1;
	}
	Py_XDECREF(items);
	Py_XDECREF(used);
	if (!ret)
		ret = keep_used_frames();
	prune_at = 2 * PyDict_Size(stack_frames);
	if (prune_at < MIN_PRUNE)
		prune_at = MIN_PRUNE;
	return ret;
}

/* Number @key's stack, new or known; 0 with an exception set. */
static uint64_t stack_number(PyObject *key)
{
	PyObject *known = PyDict_GetItemWithError(stack_numbers, key);
	PyObject *frames, *number;
	Py_ssize_t n;
	int ret;

	if (known)
		return PyLong_AsUnsignedLongLong(known);
	if (PyErr_Occurred())
		return 0;
	n = PyTuple_Size(key);
	frames = PyList_New(n);
	for (Py_ssize_t i = 0; frames && i < n; i++) {
		PyObject *entry = PyDict_GetItem(frame_table,
						 PyTuple_GetItem(key, i));
		PyObject *f = PyTuple_GetItem(entry, 1);

		Py_INCREF(f);
		PyList_SetItem(frames, i, f);	/* takes f */
	}
	number = frames ? PyLong_FromUnsignedLongLong(last_number + 1) : NULL;
	ret = number ? PyDict_SetItem(stack_frames, number, frames) : -1;
	if (!ret)
		ret = PyDict_SetItem(stack_numbers, key, number);
	Py_XDECREF(frames);
	Py_XDECREF(number);
	return ret < 0 ? 0 : ++last_number;
}

uint64_t history_context_capture(void)
{
	PyObject *type, *value, *tb, *key;
	uint64_t n = 0;

	/* a free from a destructor may run while an exception propagates */
	PyErr_Fetch(&type, &value, &tb);
	/* before the stack's frames join the table, which a pruning rebuilds */
	if (PyDict_Size(stack_frames) >= prune_at)
		prune_stacks();
	key = stack_key();
	if (key)
		n = stack_number(key);
	Py_XDECREF(key);
	PyErr_Clear();	/* no frames is no reason to fail the call */
	PyErr_Restore(type, value, tb);
	accel_pool_set_history_context(n);
	return n;
}

/*
 * The frames of the call that caused @e: its Python stack, else the C code
 * that called the library (as its nearest exported symbol), else none.
 */
static PyObject *frames_of(const struct accel_pool_event *e)
{
	Dl_info info = { 0 };
	char name[64];

	if (e->context && stack_frames) {
		PyObject *n = PyLong_FromUnsignedLongLong(e->context);
		PyObject *f = n ? PyDict_GetItemWithError(stack_frames, n) : NULL;

		Py_XDECREF(n);
		if (f || PyErr_Occurred()) {
			Py_XINCREF(f);
			return f;
		}
	}
	if (!e->caller)
		return PyList_New(0);
	/* not from Python: the C code that called, as its nearest symbol */
	if (!dladdr(e->caller, &info) || !info.dli_fname)
		info.dli_fname = "??";
	if (info.dli_sname)
		snprintf(name, sizeof(name), "%s", info.dli_sname);
	else
		snprintf(name, sizeof(name), "%p", e->caller);
	return Py_BuildValue("[{s:s,s:i,s:s}]", "filename", info.dli_fname,
			     "line", 0, "name", name);
}

static const char *action_name(int action)
{
	static const char *const names[] = {
		[ACCEL_POOL_ALLOC] = "alloc",
		[ACCEL_POOL_FREE_REQUESTED] = "free_requested",
		[ACCEL_POOL_FREE_COMPLETED] = "free_completed",
		[ACCEL_POOL_SEGMENT_ALLOC] = "segment_alloc",
		[ACCEL_POOL_SEGMENT_FREE] = "segment_free",
	};

	return names[action];
}

static const char *state_name(int state)
{
	static const char *const names[] = {
		[ACCEL_POOL_BLOCK_FREE] = "inactive",
		[ACCEL_POOL_BLOCK_ALLOCATED] = "active_allocated",
		[ACCEL_POOL_BLOCK_PENDING_FREE] = "active_pending_free",
	};

	return names[state];
}

/* One trace entry of PyTorch 2's device_traces; NULL with an exception set. */
static PyObject *trace_entry(const struct accel_pool_event *e)
{
	PyObject *frames = frames_of(e);

	if (!frames)
		return NULL;
	return Py_BuildValue("{s:s,s:K,s:n,s:n,s:K,s:N,s:K}",
			     "action", action_name(e->action),
			     "addr", (unsigned long long)e->addr,
			     "size", (Py_ssize_t)e->size,
			     "requested_size", (Py_ssize_t)e->requested,
			     "stream", (unsigned long long)(uintptr_t)e->stream,
			     "frames", frames,
			     "time_us", (unsigned long long)(e->time_ns / 1000));
}

/*
 * The allocation that made @b what it is: the latest ALLOC at its start,
 * if recorded and the block is not free; NULL if none.
 */
static const struct accel_pool_event *
allocation_of(const struct accel_pool_block_info *b)
{
	if (b->state == ACCEL_POOL_BLOCK_FREE)
		return NULL;
	for (size_t i = b->nhistory; i-- > 0;)
		if (b->history[i].action == ACCEL_POOL_ALLOC &&
		    b->history[i].addr == b->addr)
			return &b->history[i];
	return NULL;
}

/*
 * A block, with 1.13's history (the allocation it holds, whose size is
 * what was asked for: the rest shows as gaps) and 2.x's frames.
 */
static PyObject *block_dict(const struct accel_pool_block_info *b)
{
	const struct accel_pool_event *a = allocation_of(b);
	PyObject *frames = a ? frames_of(a) : PyList_New(0);
	PyObject *history;

	if (!frames)
		return NULL;
	if (a)
		history = Py_BuildValue("[{s:K,s:n,s:O}]", "addr",
					(unsigned long long)a->addr, "real_size",
					(Py_ssize_t)a->requested, "frames",
					frames);
	else
		history = PyList_New(0);
	if (!history) {
		Py_DECREF(frames);
		return NULL;
	}
	return Py_BuildValue("{s:K,s:n,s:n,s:s,s:N,s:N}",
			     "address", (unsigned long long)b->addr,
			     "size", (Py_ssize_t)b->size,
			     "requested_size", (Py_ssize_t)b->requested,
			     "state", state_name(b->state),
			     "frames", frames, "history", history);
}

/* PyTorch's "small" segments are of its 2 MiB pool; the others "large". */
#define SMALL_SEGMENT (2u << 20)

/*
 * A segment's stream: its arena's, or for a direct block the one it was
 * allocated for, as PyTorch shows it, when the history has its allocation.
 */
static accel_stream_t stream_of(const struct accel_pool_segment *seg)
{
	const struct accel_pool_event *a =
		seg->direct ? allocation_of(&seg->blocks[0]) : NULL;

	return a ? a->stream : seg->stream;
}

static PyObject *segment_dict(int dev, const struct accel_pool_segment *seg)
{
	PyObject *blocks = PyList_New((Py_ssize_t)seg->nblocks);
	size_t requested = 0;

	for (size_t i = 0; blocks && i < seg->nblocks; i++) {
		PyObject *b = block_dict(&seg->blocks[i]);

		if (seg->blocks[i].state == ACCEL_POOL_BLOCK_ALLOCATED)
			requested += seg->blocks[i].requested;
		if (!b || PyList_SetItem(blocks, (Py_ssize_t)i, b) < 0)
			Py_CLEAR(blocks);
	}
	if (!blocks)
		return NULL;
	return Py_BuildValue("{s:i,s:K,s:n,s:n,s:n,s:n,s:K,s:s,s:N}",
			     "device", dev,
			     "address", (unsigned long long)seg->addr,
			     "total_size", (Py_ssize_t)seg->size,
			     "allocated_size", (Py_ssize_t)seg->allocated,
			     "active_size", (Py_ssize_t)seg->active,
			     "requested_size", (Py_ssize_t)requested,
			     "stream", (unsigned long long)(uintptr_t)stream_of(seg),
			     "segment_type",
			     !seg->direct && seg->size <= SMALL_SEGMENT ?
				     "small" : "large",
			     "blocks", blocks);
}

/* Append each of @n items that @make makes of @items to @list; -1 on error. */
static int append_each(PyObject *list, const void *items, size_t n,
		       size_t item_size, PyObject *(*make)(int, const void *),
		       int dev)
{
	for (size_t i = 0; i < n; i++) {
		PyObject *o = make(dev, (const char *)items + i * item_size);
		int ret = o ? PyList_Append(list, o) : -1;

		Py_XDECREF(o);
		if (ret < 0)
			return -1;
	}
	return 0;
}

static PyObject *make_segment(int dev, const void *seg)
{
	return segment_dict(dev, seg);
}

static PyObject *make_trace_entry(int dev, const void *e)
{
	(void)dev;
	return trace_entry(e);
}

/* Device @id's segments onto @segments, its trace onto @traces. */
static int snapshot_device(int id, PyObject *segments, PyObject *traces)
{
	struct accel_pool_snapshot *s;
	accel_pool_t pool;
	accel_status_t st;
	PyObject *trace;
	int ret;

	if (pool_of(id, &pool) < 0)
		return -1;
	WITHOUT_GIL(st, accel_pool_get_snapshot(pool, &s));
	if (st != ACCEL_SUCCESS) {
		raise_accel();
		return -1;
	}
	trace = PyList_New(0);
	ret = trace ? 0 : -1;
	if (!ret)
		ret = append_each(segments, s->segments, s->nsegments,
				  sizeof(*s->segments), make_segment, id);
	if (!ret)
		ret = append_each(trace, s->events, s->nevents,
				  sizeof(*s->events), make_trace_entry, id);
	if (!ret)
		ret = PyList_Append(traces, trace);
	Py_XDECREF(trace);
	accel_pool_snapshot_free(s);
	return ret;
}

PyObject *py_memory_snapshot(PyObject *self, PyObject *unused)
{
	PyObject *segments = PyList_New(0), *traces = PyList_New(0);
	int n = device_count();

	for (int id = 0; segments && traces && id < n; id++)
		if (snapshot_device(id, segments, traces) < 0)
			Py_CLEAR(segments);
	if (!segments || !traces || n < 0) {
		Py_XDECREF(segments);
		Py_XDECREF(traces);
		return NULL;
	}
	return Py_BuildValue("{s:N,s:N}", "segments", segments,
			     "device_traces", traces);
}

/* Start or stop device @id's history; -1 with an exception set. */
static int record_device(int id, size_t max_entries)
{
	accel_pool_t pool;

	if (pool_of(id, &pool) < 0)
		return -1;
	if (accel_pool_record_history(pool, max_entries) != ACCEL_SUCCESS) {
		raise_accel();
		return -1;
	}
	if (recording_on[id] != (max_entries > 0))
		recording_devices += max_entries ? 1 : -1;
	recording_on[id] = max_entries > 0;
	return 0;
}

/* The stack tables, made or (no device records) emptied; -1 on error. */
static int settle_tables(void)
{
	history_recording = recording_devices > 0;
	if (history_recording && !stack_numbers) {
		frame_table = PyDict_New();
		stack_numbers = PyDict_New();
		stack_frames = PyDict_New();
		if (frame_table && stack_numbers && stack_frames &&
		    make_attr_names() == 0)
			return 0;
		history_recording = false;	/* no stacks, then */
	}
	if (!history_recording) {
		Py_CLEAR(frame_table);
		Py_CLEAR(stack_numbers);
		Py_CLEAR(stack_frames);
	}
	return recording_devices > 0 && !history_recording ? -1 : 0;
}

/*
 * Whether @enabled turns recording on: as torch.cuda.memory's, "all" or
 * "state" (both record every event and its frames here) or None, and a
 * truth value as its older releases took; 1, 0, or -1 with an exception.
 */
static int recording_wanted(PyObject *enabled)
{
	if (enabled == Py_None)
		return 0;
	if (PyUnicode_Check(enabled)) {
		if (!PyUnicode_CompareWithASCIIString(enabled, "all") ||
		    !PyUnicode_CompareWithASCIIString(enabled, "state"))
			return 1;
		PyErr_Format(PyExc_ValueError,
			     "enabled is %R, not \"all\", \"state\", None or a bool",
			     enabled);
		return -1;
	}
	return PyObject_IsTrue(enabled);
}

PyObject *py_record_memory_history(PyObject *self, PyObject *args,
				   PyObject *kwds)
{
	static char *kwlist[] = { "enabled", "max_entries", "device", NULL };
	PyObject *enabled = Py_True, *device = Py_None;
	Py_ssize_t max_entries = 100000;
	int n = device_count(), on, first = 0, last;

	if (!PyArg_ParseTupleAndKeywords(args, kwds,
					 "|OnO:_record_memory_history", kwlist,
					 &enabled, &max_entries, &device))
		return NULL;
	on = recording_wanted(enabled);
	if (on < 0 || n < 0)
		return NULL;
	if (on && max_entries <= 0)
		return PyErr_Format(PyExc_ValueError,
				    "max_entries is %zd, not a positive count",
				    max_entries);
	if (device != Py_None && (first = device_from_object(device)) < 0)
		return NULL;
	last = device == Py_None ? n - 1 : first;
	if (!recording_on) {
		recording_on = calloc((size_t)n + 1, sizeof(bool));
		if (!recording_on)
			return PyErr_NoMemory();
		ndevices = n;
	}
	for (int id = first; id <= last; id++)
		if (record_device(id, on ? (size_t)max_entries : 0) < 0)
			break;
	if (settle_tables() < 0 || PyErr_Occurred())
		return NULL;
	Py_RETURN_NONE;
}

PyObject *py_dump_snapshot(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "filename", "legacy", NULL };
	const char *filename = "dump_snapshot.pickle";
	PyObject *path = NULL;	/* bytes, from a str or path-like object */
	int legacy = 0;
	PyObject *snap, *pickle, *data;
	Py_ssize_t len;
	char *bytes;
	FILE *f;
	bool written;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O&p:_dump_snapshot",
					 kwlist, PyUnicode_FSConverter, &path,
					 &legacy))
		return NULL;
	if (path)
		filename = PyBytes_AsString(path);
	snap = py_memory_snapshot(self, NULL);
	pickle = snap ? PyImport_ImportModule("pickle") : NULL;
	data = pickle ? PyObject_CallMethod(pickle, "dumps", "O",
					    legacy ? PyDict_GetItemString(snap, "segments") :
						     snap) :
			NULL;
	Py_XDECREF(snap);
	Py_XDECREF(pickle);
	if (!data || PyBytes_AsStringAndSize(data, &bytes, &len) < 0) {
		Py_XDECREF(data);
		Py_XDECREF(path);
		return NULL;
	}
	f = fopen(filename, "wb");
	written = f && fwrite(bytes, 1, (size_t)len, f) == (size_t)len;
	if (f && fclose(f))
		written = false;
	Py_DECREF(data);
	if (!written)
		PyErr_SetFromErrnoWithFilename(PyExc_OSError, filename);
	Py_XDECREF(path);
	if (!written)
		return NULL;
	Py_RETURN_NONE;
}
