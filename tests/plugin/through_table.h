/* SPDX-License-Identifier: MIT */
/*
 * Included first into every file of the libaccel conformance suite to
 * build tests/plugin_suite: each libaccel function that the plugin's table
 * has is called through the table of a loaded libpaddle-accel.so instead.
 * The rest (errors, device names, pools, memory objects) is libaccel's,
 * the same instance the plugin uses.
 */
#ifndef THROUGH_TABLE_H
#define THROUGH_TABLE_H

#include <accel/accel.h>

#include "load.h"

/* libaccel's values as Paddle's and back: the same layout (plugin/forward.h) */
#define PD(d) ((C_Device)(d))
#define PS(s) ((C_Stream)(s))
#define PE(e) ((C_Event)(e))
#define AS(status) ((accel_status_t)(status))

#define accel_device_synchronize(d) AS(plugin_table()->synchronize_device(PD(d)))
#define accel_stream_create(d, s) AS(plugin_table()->create_stream(PD(d), (C_Stream *)(s)))
#define accel_stream_destroy(d, s) AS(plugin_table()->destroy_stream(PD(d), PS(s)))
#define accel_stream_query(d, s) AS(plugin_table()->query_stream(PD(d), PS(s)))
#define accel_stream_synchronize(d, s) AS(plugin_table()->synchronize_stream(PD(d), PS(s)))
#define accel_stream_wait_event(d, s, e) AS(plugin_table()->stream_wait_event(PD(d), PS(s), PE(e)))
#define accel_event_create(d, e) AS(plugin_table()->create_event(PD(d), (C_Event *)(e)))
#define accel_event_record(d, s, e) AS(plugin_table()->record_event(PD(d), PS(s), PE(e)))
#define accel_event_query(d, e) AS(plugin_table()->query_event(PD(d), PE(e)))
#define accel_event_synchronize(d, e) AS(plugin_table()->synchronize_event(PD(d), PE(e)))
#define accel_event_destroy(d, e) AS(plugin_table()->destroy_event(PD(d), PE(e)))

#define accel_device_memory_allocate(d, ...) AS(plugin_table()->device_memory_allocate(PD(d), __VA_ARGS__))
#define accel_device_memory_deallocate(d, ...) AS(plugin_table()->device_memory_deallocate(PD(d), __VA_ARGS__))
#define accel_device_memory_set(d, ...) AS(plugin_table()->device_memory_set(PD(d), __VA_ARGS__))
#define accel_host_memory_allocate(d, ...) AS(plugin_table()->host_memory_allocate(PD(d), __VA_ARGS__))
#define accel_host_memory_deallocate(d, ...) AS(plugin_table()->host_memory_deallocate(PD(d), __VA_ARGS__))
#define accel_unified_memory_allocate(d, ...) AS(plugin_table()->unified_memory_allocate(PD(d), __VA_ARGS__))
#define accel_unified_memory_deallocate(d, ...) AS(plugin_table()->unified_memory_deallocate(PD(d), __VA_ARGS__))
#define accel_memory_copy_h2d(d, ...) AS(plugin_table()->memory_copy_h2d(PD(d), __VA_ARGS__))
#define accel_memory_copy_d2h(d, ...) AS(plugin_table()->memory_copy_d2h(PD(d), __VA_ARGS__))
#define accel_memory_copy_d2d(d, ...) AS(plugin_table()->memory_copy_d2d(PD(d), __VA_ARGS__))
#define accel_memory_copy_p2p(dd, sd, ...) AS(plugin_table()->memory_copy_p2p(PD(dd), PD(sd), __VA_ARGS__))
#define accel_async_memory_copy_h2d(d, s, ...) AS(plugin_table()->async_memory_copy_h2d(PD(d), PS(s), __VA_ARGS__))
#define accel_async_memory_copy_d2h(d, s, ...) AS(plugin_table()->async_memory_copy_d2h(PD(d), PS(s), __VA_ARGS__))
#define accel_async_memory_copy_d2d(d, s, ...) AS(plugin_table()->async_memory_copy_d2d(PD(d), PS(s), __VA_ARGS__))
#define accel_async_memory_copy_p2p(dd, sd, s, ...) AS(plugin_table()->async_memory_copy_p2p(PD(dd), PD(sd), PS(s), __VA_ARGS__))

#define accel_get_device_count(...) AS(plugin_table()->get_device_count(__VA_ARGS__))
#define accel_get_device_list(...) AS(plugin_table()->get_device_list(__VA_ARGS__))
#define accel_device_memory_stats(d, ...) AS(plugin_table()->device_memory_stats(PD(d), __VA_ARGS__))
#define accel_device_min_chunk_size(d, ...) AS(plugin_table()->device_min_chunk_size(PD(d), __VA_ARGS__))
#define accel_device_max_chunk_size(d, ...) AS(plugin_table()->device_max_chunk_size(PD(d), __VA_ARGS__))
#define accel_device_max_alloc_size(d, ...) AS(plugin_table()->device_max_alloc_size(PD(d), __VA_ARGS__))
#define accel_device_extra_padding_size(d, ...) AS(plugin_table()->device_extra_padding_size(PD(d), __VA_ARGS__))
#define accel_device_init_alloc_size(d, ...) AS(plugin_table()->device_init_alloc_size(PD(d), __VA_ARGS__))
#define accel_device_realloc_size(d, ...) AS(plugin_table()->device_realloc_size(PD(d), __VA_ARGS__))

#endif /* THROUGH_TABLE_H */
