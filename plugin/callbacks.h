/* SPDX-License-Identifier: MIT */
/*
 * Host callbacks on streams: run on a plugin thread, in the order they were
 * added, each once the work queued on its stream before it has completed.
 */
#ifndef PADDLE_CALLBACKS_H
#define PADDLE_CALLBACKS_H

#include <stdbool.h>

#include "paddle_abi.h"

/* queue @cb(@device, @stream, @user_data, &status) behind @stream's work */
C_Status callbacks_add(const C_Device device, C_Stream stream, C_Callback cb,
		       void *user_data);
/* whether callbacks added on @stream (NULL: on any stream) have not run yet */
bool callbacks_pending(C_Stream stream);
/* wait until the callbacks added so far on @stream (NULL: any) have run */
void callbacks_wait(C_Stream stream);
/* run what is queued, then stop the thread */
void callbacks_stop(void);

#endif /* PADDLE_CALLBACKS_H */
