// SPDX-License-Identifier: MIT
/*
 * The cpu backend: "device" memory is host memory, like Paddle's custom_cpu
 * or OCCA's Serial mode. Each device has a fixed capacity so that stats and
 * out-of-memory behave as on a real device. A stream is a worker thread
 * running its operations in order.
 *
 * Every piece of work on a stream takes a ticket, in submission order; to
 * drain a stream is to wait for the tickets taken before the drain, so that
 * work queued later, by any thread, cannot delay it. An event record is a
 * mark of its own: a wait binds to the mark current when it is queued, a
 * query or synchronize to the latest one.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/internal.h"

#define CPU_MAX_DEVICES 16
#define CPU_MIN_CHUNK 256
/*
 * An async copy from pageable memory is staged up to this size, while the
 * stream holds less than CPU_STAGE_LIMIT bytes staged: else it waits for
 * its own copy, so that the memory a stream takes stays bounded.
 */
#define CPU_STAGE_MAX (64u << 20)
#define CPU_STAGE_LIMIT (256u << 20)

struct cpu_dev {
	pthread_mutex_t lock;
	size_t capacity;
	size_t used;
};

/* One record of an event: reached once the work queued before it is done. */
struct cpu_mark {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool reached;
	atomic_int refs;	/* the event while current, and queued ops */
};

struct cpu_event {
	pthread_mutex_t lock;
	struct cpu_mark *last;	/* the latest record; NULL: never recorded */
};

enum cpu_op_type { OP_COPY, OP_SET, OP_SIGNAL, OP_WAIT };

struct cpu_op {
	enum cpu_op_type type;
	void *dst;
	const void *src;
	size_t size;
	uint8_t value;
	void *staged;		/* freed once the op ran */
	struct cpu_mark *mark;	/* OP_SIGNAL reaches it, OP_WAIT waits */
	uint64_t ticket;
	struct cpu_op *next;
};

struct cpu_stream {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t work;	/* an op was queued, or stop */
	pthread_cond_t idle;	/* a ticket's work is done, for drainers */
	struct cpu_op *head, *tail;
	uint64_t submitted;	/* the last ticket taken */
	uint64_t current;	/* the ticket the worker runs, 0: none */
	uint64_t claim;		/* the ticket a caller runs, 0: none */
	int drainers;		/* threads waiting for tickets */
	bool stop;
	atomic_size_t staged;	/* bytes of queued copies' staged sources */
};

/* ------------------------------------------------------------------ */
/* Events */

static struct cpu_mark *mark_new(void)
{
	struct cpu_mark *m = calloc(1, sizeof(*m));

	if (!m) {
		accel_oom_error("out of host memory");
		return NULL;
	}
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->cond, NULL);
	atomic_init(&m->refs, 1);
	return m;
}

static void mark_put(struct cpu_mark *m)
{
	if (m && atomic_fetch_sub(&m->refs, 1) == 1) {
		pthread_mutex_destroy(&m->lock);
		pthread_cond_destroy(&m->cond);
		free(m);
	}
}

static void mark_reach(struct cpu_mark *m)
{
	pthread_mutex_lock(&m->lock);
	m->reached = true;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
}

static bool mark_reached(struct cpu_mark *m)
{
	bool reached;

	pthread_mutex_lock(&m->lock);
	reached = m->reached;
	pthread_mutex_unlock(&m->lock);
	return reached;
}

static void mark_wait(struct cpu_mark *m)
{
	pthread_mutex_lock(&m->lock);
	while (!m->reached)
		pthread_cond_wait(&m->cond, &m->lock);
	pthread_mutex_unlock(&m->lock);
}

/* The event's latest record, with a reference; NULL if never recorded. */
static struct cpu_mark *event_last(struct cpu_event *ev)
{
	struct cpu_mark *m;

	pthread_mutex_lock(&ev->lock);
	m = ev->last;
	if (m)
		atomic_fetch_add(&m->refs, 1);
	pthread_mutex_unlock(&ev->lock);
	return m;
}

/* ------------------------------------------------------------------ */
/* Stream worker */

static void op_free(struct cpu_op *op)
{
	mark_put(op->mark);
	free(op->staged);
	free(op);
}

static void run_op(struct cpu_op *op)
{
	switch (op->type) {
	case OP_COPY:
		memcpy(op->dst, op->src, op->size);
		break;
	case OP_SET:
		memset(op->dst, op->value, op->size);
		break;
	case OP_SIGNAL:
		mark_reach(op->mark);
		break;
	case OP_WAIT:
		mark_wait(op->mark);
		break;
	}
	op_free(op);
}

static void *stream_worker(void *arg)
{
	struct cpu_stream *s = arg;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct cpu_op *op;
		size_t staged;

		/* work a caller runs on its own thread comes before the queue's */
		while ((!s->head || s->claim) && !s->stop)
			pthread_cond_wait(&s->work, &s->lock);
		if (!s->head)
			break;
		op = s->head;
		s->head = op->next;
		if (!s->head)
			s->tail = NULL;
		if (op->type == OP_SIGNAL) {
			/*
			 * Reached under the stream's lock: whoever the mark
			 * wakes (a synchronous call) finds the stream past
			 * it, not still running it.
			 */
			mark_reach(op->mark);
			if (s->drainers)
				pthread_cond_broadcast(&s->idle);
			pthread_mutex_unlock(&s->lock);
			op_free(op);
			pthread_mutex_lock(&s->lock);
			continue;
		}
		s->current = op->ticket;
		pthread_mutex_unlock(&s->lock);
		staged = op->staged ? op->size : 0;
		run_op(op);
		atomic_fetch_sub(&s->staged, staged);
		pthread_mutex_lock(&s->lock);
		s->current = 0;
		if (s->drainers)
			pthread_cond_broadcast(&s->idle);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Queue @op; its ticket (@op may be gone once it ran). */
static uint64_t enqueue(struct cpu_stream *s, struct cpu_op *op)
{
	uint64_t ticket;

	pthread_mutex_lock(&s->lock);
	ticket = op->ticket = ++s->submitted;
	if (s->tail)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	pthread_cond_signal(&s->work);
	pthread_mutex_unlock(&s->lock);
	return ticket;
}

static struct cpu_op *new_op(enum cpu_op_type type)
{
	struct cpu_op *op = calloc(1, sizeof(*op));

	if (!op)
		accel_oom_error("out of host memory");
	else
		op->type = type;
	return op;
}

/* Caller holds s->lock. */
static bool stream_idle(const struct cpu_stream *s)
{
	return !s->head && !s->current && !s->claim;
}

/* Caller holds s->lock: whether work of a ticket up to @ticket is left. */
static bool pending_upto(const struct cpu_stream *s, uint64_t ticket)
{
	return (s->current && s->current <= ticket) ||
	       (s->head && s->head->ticket <= ticket) ||
	       (s->claim && s->claim <= ticket);
}

/*
 * Take a ticket for work to run on the caller's thread if the stream is
 * idle (nothing before it to wait for).
 */
static bool claim_idle(struct cpu_stream *s)
{
	bool idle;

	pthread_mutex_lock(&s->lock);
	idle = stream_idle(s);
	if (idle)
		s->claim = ++s->submitted;
	pthread_mutex_unlock(&s->lock);
	return idle;
}

static void release_claim(struct cpu_stream *s)
{
	pthread_mutex_lock(&s->lock);
	s->claim = 0;
	if (s->head)	/* queued meanwhile, behind the claim */
		pthread_cond_signal(&s->work);
	if (s->drainers)
		pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
}

/* Wait for the work of the tickets up to @ticket; later work does not count. */
static void wait_ticket(struct cpu_stream *s, uint64_t ticket)
{
	pthread_mutex_lock(&s->lock);
	s->drainers++;
	while (pending_upto(s, ticket))
		pthread_cond_wait(&s->idle, &s->lock);
	s->drainers--;
	pthread_mutex_unlock(&s->lock);
}

/* Wait for the work submitted before the call. */
static void cpu_stream_drain(struct accel_device *dev, void *stream)
{
	struct cpu_stream *s = stream;
	uint64_t ticket;

	(void)dev;
	pthread_mutex_lock(&s->lock);
	ticket = s->submitted;
	pthread_mutex_unlock(&s->lock);
	wait_ticket(s, ticket);
}

/*
 * Room for @size more staged bytes on @s, taken before the copy is made,
 * so that callers at once cannot all pass the limit; false if none.
 */
static bool stage_reserve(struct cpu_stream *s, size_t size)
{
	if (size > CPU_STAGE_MAX)
		return false;
	if (atomic_fetch_add(&s->staged, size) + size <= CPU_STAGE_LIMIT)
		return true;
	atomic_fetch_sub(&s->staged, size);
	return false;
}

/*
 * Queue a copy. A pageable source must be captured before returning: run
 * the copy here when the stream is idle, else stage the source, else (too
 * large to stage) queue it from the caller's source and wait for that op
 * alone: a wait for an idle stream could last as long as other threads
 * keep it busy.
 */
static accel_status_t queue_copy(struct cpu_stream *s, void *dst, const void *src,
			   size_t size, bool capture_src)
{
	struct cpu_op *op;

	if (capture_src && claim_idle(s)) {
		memcpy(dst, src, size);
		release_claim(s);
		return ACCEL_SUCCESS;
	}
	op = new_op(OP_COPY);
	if (!op)
		return ACCEL_FAILED;
	op->dst = dst;
	op->src = src;
	op->size = size;
	if (capture_src && !stage_reserve(s, size)) {
		wait_ticket(s, enqueue(s, op));
		return ACCEL_SUCCESS;
	}
	if (capture_src) {
		op->staged = malloc(size);
		if (!op->staged) {
			atomic_fetch_sub(&s->staged, size);
			free(op);
			return accel_oom_error("out of host memory staging %zu bytes",
					   size);
		}
		memcpy(op->staged, src, size);
		op->src = op->staged;
	}
	enqueue(s, op);
	return ACCEL_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Memory */

static size_t granule(size_t size)
{
	return (size + CPU_MIN_CHUNK - 1) & ~(size_t)(CPU_MIN_CHUNK - 1);
}

static accel_status_t cpu_alloc(struct accel_device *dev, enum accel_kind kind,
			  size_t size, struct accel_allocation *out)
{
	struct cpu_dev *cd = dev->priv;
	bool counted = kind != ACCEL_KIND_HOST;
	size_t need = granule(size);
	void *p;

	if (size > SIZE_MAX - CPU_MIN_CHUNK)
		return accel_error("%zu bytes is more than %s can hold",
				   size, dev->name);
	if (counted) {
		pthread_mutex_lock(&cd->lock);
		if (need > cd->capacity - cd->used) {
			size_t free = cd->capacity - cd->used;

			pthread_mutex_unlock(&cd->lock);
			return accel_oom_error("out of memory on %s: %zu bytes requested, %zu of %zu free",
					   dev->name, size, free, cd->capacity);
		}
		cd->used += need;
		pthread_mutex_unlock(&cd->lock);
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		int err = errno;

		if (counted) {
			pthread_mutex_lock(&cd->lock);
			cd->used -= need;
			pthread_mutex_unlock(&cd->lock);
		}
		return accel_errno_error(err, "cannot map %zu bytes for %s",
					 size, dev->name);
	}
	out->addr = (uintptr_t)p;
	out->dev_addr = (uintptr_t)p;
	return ACCEL_SUCCESS;
}

static accel_status_t cpu_free(struct accel_device *dev, const struct accel_allocation *a)
{
	struct cpu_dev *cd = dev->priv;

	munmap((void *)a->addr, a->size);
	if (a->kind != ACCEL_KIND_HOST) {
		pthread_mutex_lock(&cd->lock);
		cd->used -= granule(a->size);
		pthread_mutex_unlock(&cd->lock);
	}
	return ACCEL_SUCCESS;
}

/* Host memory is the device's memory: there is nothing to pin. */
static accel_status_t cpu_host_register(struct accel_device *dev, void *ptr,
				  size_t size, struct accel_allocation *out)
{
	(void)dev;
	(void)size;
	out->dev_addr = (uintptr_t)ptr;
	return ACCEL_SUCCESS;
}

static accel_status_t cpu_host_unregister(struct accel_device *dev,
				    const struct accel_allocation *a)
{
	(void)dev;
	(void)a;
	return ACCEL_SUCCESS;
}

static accel_status_t cpu_copy(struct accel_device *dev, void *stream,
			 const struct accel_side *dst,
			 const struct accel_side *src, size_t size)
{
	(void)dev;
	if (!stream) {
		memcpy(dst->ptr, src->ptr, size);
		return ACCEL_SUCCESS;
	}
	return queue_copy(stream, dst->ptr, src->ptr, size, !src->in_alloc);
}

static accel_status_t cpu_set(struct accel_device *dev, void *stream,
			const struct accel_side *dst, uint8_t value,
			size_t size)
{
	struct cpu_op *op;

	(void)dev;
	if (!stream) {
		memset(dst->ptr, value, size);
		return ACCEL_SUCCESS;
	}
	op = new_op(OP_SET);
	if (!op)
		return ACCEL_FAILED;
	op->dst = dst->ptr;
	op->value = value;
	op->size = size;
	enqueue(stream, op);
	return ACCEL_SUCCESS;
}

static accel_status_t cpu_copy_peer(struct accel_device *run, void *stream,
			      struct accel_device *dst_dev,
			      const struct accel_side *dst,
			      struct accel_device *src_dev,
			      const struct accel_side *src, size_t size)
{
	(void)dst_dev;
	(void)src_dev;
	return cpu_copy(run, stream, dst, src, size);
}

static accel_status_t cpu_stats(struct accel_device *dev, size_t *total,
			  size_t *free)
{
	struct cpu_dev *cd = dev->priv;

	pthread_mutex_lock(&cd->lock);
	*total = cd->capacity;
	*free = cd->capacity - cd->used;
	pthread_mutex_unlock(&cd->lock);
	return ACCEL_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Streams and events */

static accel_status_t cpu_stream_create(struct accel_device *dev, void **stream)
{
	struct cpu_stream *s = calloc(1, sizeof(*s));
	int err;

	(void)dev;
	if (!s)
		return accel_oom_error("out of host memory");
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->work, NULL);
	pthread_cond_init(&s->idle, NULL);
	err = pthread_create(&s->thread, NULL, stream_worker, s);
	if (err) {
		free(s);
		return accel_errno_error(err, "cannot start the stream's thread");
	}
	*stream = s;
	return ACCEL_SUCCESS;
}

static void cpu_stream_destroy(struct accel_device *dev, void *stream)
{
	struct cpu_stream *s = stream;

	(void)dev;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->work);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->work);
	pthread_cond_destroy(&s->idle);
	free(s);
}

static accel_status_t cpu_stream_query(struct accel_device *dev, void *stream)
{
	struct cpu_stream *s = stream;
	bool idle;

	(void)dev;
	pthread_mutex_lock(&s->lock);
	idle = stream_idle(s);
	pthread_mutex_unlock(&s->lock);
	return idle ? ACCEL_SUCCESS : ACCEL_WARNING;
}

/* Host memory copies cannot fail once queued: there is nothing to report. */
static accel_status_t cpu_stream_sync(struct accel_device *dev, void *stream)
{
	cpu_stream_drain(dev, stream);
	return ACCEL_SUCCESS;
}

static accel_status_t cpu_event_create(struct accel_device *dev, void **event)
{
	struct cpu_event *ev = calloc(1, sizeof(*ev));

	(void)dev;
	if (!ev)
		return accel_oom_error("out of host memory");
	pthread_mutex_init(&ev->lock, NULL);
	*event = ev;
	return ACCEL_SUCCESS;
}

/* Queued ops hold their own references to the marks they name. */
static void cpu_event_destroy(struct accel_device *dev, void *event)
{
	struct cpu_event *ev = event;

	(void)dev;
	mark_put(ev->last);
	pthread_mutex_destroy(&ev->lock);
	free(ev);
}

/* Queue an op on @m; the op takes a reference of its own. */
static accel_status_t queue_mark_op(struct cpu_stream *s, enum cpu_op_type type,
			      struct cpu_mark *m)
{
	struct cpu_op *op = new_op(type);

	if (!op)
		return ACCEL_FAILED;
	atomic_fetch_add(&m->refs, 1);
	op->mark = m;
	enqueue(s, op);
	return ACCEL_SUCCESS;
}

/*
 * A new mark, reached at once on an idle stream (nothing before it), else
 * by an op behind the stream's work. Waits queued earlier keep the mark
 * they were bound to.
 */
static accel_status_t cpu_event_record(struct accel_device *dev, void *stream,
				 void *event)
{
	struct cpu_event *ev = event;
	struct cpu_mark *m = mark_new(), *old;
	accel_status_t ret = ACCEL_SUCCESS;

	(void)dev;
	if (!m)
		return ACCEL_FAILED;
	if (claim_idle(stream)) {
		mark_reach(m);
		release_claim(stream);
	} else {
		ret = queue_mark_op(stream, OP_SIGNAL, m);
	}
	if (ret != ACCEL_SUCCESS) {
		mark_put(m);
		return ret;
	}
	pthread_mutex_lock(&ev->lock);
	old = ev->last;
	ev->last = m;
	pthread_mutex_unlock(&ev->lock);
	mark_put(old);
	return ACCEL_SUCCESS;
}

static accel_status_t cpu_event_query(struct accel_device *dev, void *event)
{
	struct cpu_mark *m = event_last(event);
	bool reached = !m || mark_reached(m);

	(void)dev;
	mark_put(m);
	return reached ? ACCEL_SUCCESS : ACCEL_WARNING;
}

static accel_status_t cpu_event_sync(struct accel_device *dev, void *event)
{
	struct cpu_mark *m = event_last(event);

	(void)dev;
	if (m)
		mark_wait(m);
	mark_put(m);
	return ACCEL_SUCCESS;
}

static accel_status_t cpu_stream_wait_event(struct accel_device *dev, void *stream,
				      void *event)
{
	struct cpu_mark *m = event_last(event);
	accel_status_t ret = ACCEL_SUCCESS;

	(void)dev;
	if (m && !mark_reached(m))
		ret = queue_mark_op(stream, OP_WAIT, m);
	mark_put(m);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Probe */

static accel_status_t cpu_probe(char *why, size_t why_len)
{
	const char *n_env = getenv("ACCEL_CPU_DEVICES");
	const char *mem_env = getenv("ACCEL_CPU_MEMORY");
	uint64_t count = 1, capacity;

	if (n_env && (accel_parse_size(n_env, &count) || count > CPU_MAX_DEVICES)) {
		snprintf(why, why_len, "ACCEL_CPU_DEVICES=%s is not a number from 0 to %d",
			 n_env, CPU_MAX_DEVICES);
		return ACCEL_FAILED;
	}
	if (!count) {
		snprintf(why, why_len, "ACCEL_CPU_DEVICES is 0");
		return ACCEL_FAILED;
	}
	capacity = (uint64_t)sysconf(_SC_PHYS_PAGES) *
		   (uint64_t)sysconf(_SC_PAGESIZE) / 2;
	if (mem_env && (accel_parse_size(mem_env, &capacity) ||
			capacity < CPU_MIN_CHUNK)) {
		snprintf(why, why_len, "ACCEL_CPU_MEMORY=%s is not a size of at least %d bytes (such as 512M or 4G)",
			 mem_env, CPU_MIN_CHUNK);
		return ACCEL_FAILED;
	}
	for (int i = 0; i < (int)count; i++) {
		struct cpu_dev *cd = calloc(1, sizeof(*cd));

		if (!cd || !accel_device_add(&accel_backend_cpu, i, cd,
					     CPU_MIN_CHUNK)) {
			free(cd);
			snprintf(why, why_len, "out of host memory");
			return ACCEL_FAILED;
		}
		pthread_mutex_init(&cd->lock, NULL);
		cd->capacity = capacity & ~(uint64_t)(CPU_MIN_CHUNK - 1);
	}
	return ACCEL_SUCCESS;
}

const struct accel_backend accel_backend_cpu = {
	.name = "cpu",
	.known_as = ACCEL_FOREIGN_HOST,
	.device_memory_is_host = true,	/* malloc()ed: any device takes it as host memory */
	.probe = cpu_probe,
	.alloc = cpu_alloc,
	.free = cpu_free,
	.host_register = cpu_host_register,
	.host_unregister = cpu_host_unregister,
	.copy = cpu_copy,
	.set = cpu_set,
	.copy_peer = cpu_copy_peer,
	.stats = cpu_stats,
	.stream_create = cpu_stream_create,
	.stream_destroy = cpu_stream_destroy,
	.stream_query = cpu_stream_query,
	.stream_sync = cpu_stream_sync,
	.stream_drain = cpu_stream_drain,
	.event_create = cpu_event_create,
	.event_destroy = cpu_event_destroy,
	.event_record = cpu_event_record,
	.event_query = cpu_event_query,
	.event_sync = cpu_event_sync,
	.stream_wait_event = cpu_stream_wait_event,
};
