// SPDX-License-Identifier: MIT
/*
 * Stream callbacks. Each callback gets an event recorded on its stream when
 * it is added; one thread takes the callbacks in order, waits for each
 * event and calls the callback with the outcome. Synchronizing a stream
 * also waits for its callbacks, as CUDA's does.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "callbacks.h"
#include "forward.h"

struct callback {
	struct callback *next;
	uint64_t seq;
	struct C_Device_st dev;
	C_Stream stream;
	accel_event_t event;
	C_Callback fn;
	void *user_data;
};

/* The last callback added on a stream. */
struct stream_mark {
	C_Stream stream;
	uint64_t seq;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t added, ran;
	struct callback *head, *tail;
	uint64_t last_seq, done_seq;
	struct stream_mark *marks;
	size_t nmarks, cap;
	bool running, stopping;
	pthread_t thread;
} q = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.added = PTHREAD_COND_INITIALIZER,
	.ran = PTHREAD_COND_INITIALIZER,
};

static _Thread_local bool on_callback_thread;

static struct callback *take(void)
{
	struct callback *cb;

	pthread_mutex_lock(&q.lock);
	while (!q.head && !q.stopping)
		pthread_cond_wait(&q.added, &q.lock);
	cb = q.head;
	if (cb) {
		q.head = cb->next;
		if (!q.head)
			q.tail = NULL;
	}
	pthread_mutex_unlock(&q.lock);
	return cb;
}

static void *run_callbacks(void *arg)
{
	struct callback *cb;

	(void)arg;
	on_callback_thread = true;
	while ((cb = take())) {
		C_Status status = to_paddle(accel_event_synchronize(to_accel_device(&cb->dev),
								    cb->event));

		cb->fn(&cb->dev, cb->stream, cb->user_data, &status);
		accel_event_destroy(to_accel_device(&cb->dev), cb->event);
		pthread_mutex_lock(&q.lock);
		q.done_seq = cb->seq;
		pthread_cond_broadcast(&q.ran);
		pthread_mutex_unlock(&q.lock);
		free(cb);
	}
	return NULL;
}

/* Remember @seq as @stream's last callback. Caller holds q.lock. */
static bool mark(C_Stream stream, uint64_t seq)
{
	for (size_t i = 0; i < q.nmarks; i++) {
		if (q.marks[i].stream == stream) {
			q.marks[i].seq = seq;
			return true;
		}
	}
	if (q.nmarks == q.cap) {
		size_t cap = q.cap ? 2 * q.cap : 16;
		struct stream_mark *m = realloc(q.marks, cap * sizeof(*m));

		if (!m)
			return false;
		q.marks = m;
		q.cap = cap;
	}
	q.marks[q.nmarks++] = (struct stream_mark){ stream, seq };
	return true;
}

/* The last callback added on @stream (NULL: any). Caller holds q.lock. */
static uint64_t last_of(C_Stream stream)
{
	if (!stream)
		return q.last_seq;
	for (size_t i = 0; i < q.nmarks; i++)
		if (q.marks[i].stream == stream)
			return q.marks[i].seq;
	return 0;
}

C_Status callbacks_add(const C_Device device, C_Stream stream, C_Callback fn,
		       void *user_data)
{
	struct callback *cb;

	if (!device || !stream || !fn)
		return C_FAILED;
	cb = calloc(1, sizeof(*cb));
	if (!cb)
		return C_FAILED;
	cb->dev = *device;
	cb->stream = stream;
	cb->fn = fn;
	cb->user_data = user_data;
	if (accel_event_create(to_accel_device(device), &cb->event) != ACCEL_SUCCESS ||
	    accel_event_record(to_accel_device(device), to_accel_stream(stream),
			       cb->event) != ACCEL_SUCCESS)
		goto fail;
	pthread_mutex_lock(&q.lock);
	if (!q.running) {
		q.stopping = false;
		if (pthread_create(&q.thread, NULL, run_callbacks, NULL)) {
			pthread_mutex_unlock(&q.lock);
			goto fail;
		}
		q.running = true;
	}
	cb->seq = q.last_seq + 1;
	if (!mark(stream, cb->seq)) {
		pthread_mutex_unlock(&q.lock);
		goto fail;
	}
	q.last_seq = cb->seq;
	if (q.tail)
		q.tail->next = cb;
	else
		q.head = cb;
	q.tail = cb;
	pthread_cond_signal(&q.added);
	pthread_mutex_unlock(&q.lock);
	return C_SUCCESS;
fail:
	if (cb->event)
		accel_event_destroy(to_accel_device(device), cb->event);
	free(cb);
	return C_FAILED;
}

bool callbacks_pending(C_Stream stream)
{
	bool pending;

	pthread_mutex_lock(&q.lock);
	pending = q.done_seq < last_of(stream);
	pthread_mutex_unlock(&q.lock);
	return pending;
}

void callbacks_wait(C_Stream stream)
{
	if (on_callback_thread)	/* a callback waiting for itself */
		return;
	pthread_mutex_lock(&q.lock);
	for (uint64_t target = last_of(stream); q.done_seq < target;)
		pthread_cond_wait(&q.ran, &q.lock);
	pthread_mutex_unlock(&q.lock);
}

void callbacks_stop(void)
{
	pthread_mutex_lock(&q.lock);
	if (!q.running || on_callback_thread) {
		pthread_mutex_unlock(&q.lock);
		return;
	}
	q.stopping = true;
	pthread_cond_signal(&q.added);
	pthread_mutex_unlock(&q.lock);
	pthread_join(q.thread, NULL);
	pthread_mutex_lock(&q.lock);
	q.running = false;
	free(q.marks);
	q.marks = NULL;
	q.nmarks = q.cap = 0;
	pthread_mutex_unlock(&q.lock);
}
