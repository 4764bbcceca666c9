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

#define accel_device_synchronize(...) plugin_table()->synchronize_device(__VA_ARGS__)
#define accel_stream_create(...) plugin_table()->create_stream(__VA_ARGS__)
#define accel_stream_destroy(...) plugin_table()->destroy_stream(__VA_ARGS__)
#define accel_stream_query(...) plugin_table()->query_stream(__VA_ARGS__)
#define accel_stream_synchronize(...) plugin_table()->synchronize_stream(__VA_ARGS__)
#define accel_stream_wait_event(...) plugin_table()->stream_wait_event(__VA_ARGS__)
#define accel_event_create(...) plugin_table()->create_event(__VA_ARGS__)
#define accel_event_record(...) plugin_table()->record_event(__VA_ARGS__)
#define accel_event_query(...) plugin_table()->query_event(__VA_ARGS__)
#define accel_event_synchronize(...) plugin_table()->synchronize_event(__VA_ARGS__)
#define accel_event_destroy(...) plugin_table()->destroy_event(__VA_ARGS__)

#define accel_device_memory_allocate(...) plugin_table()->device_memory_allocate(__VA_ARGS__)
#define accel_device_memory_deallocate(...) plugin_table()->device_memory_deallocate(__VA_ARGS__)
#define accel_device_memory_set(...) plugin_table()->device_memory_set(__VA_ARGS__)
#define accel_host_memory_allocate(...) plugin_table()->host_memory_allocate(__VA_ARGS__)
#define accel_host_memory_deallocate(...) plugin_table()->host_memory_deallocate(__VA_ARGS__)
#define accel_unified_memory_allocate(...) plugin_table()->unified_memory_allocate(__VA_ARGS__)
#define accel_unified_memory_deallocate(...) plugin_table()->unified_memory_deallocate(__VA_ARGS__)
#define accel_memory_copy_h2d(...) plugin_table()->memory_copy_h2d(__VA_ARGS__)
#define accel_memory_copy_d2h(...) plugin_table()->memory_copy_d2h(__VA_ARGS__)
#define accel_memory_copy_d2d(...) plugin_table()->memory_copy_d2d(__VA_ARGS__)
#define accel_memory_copy_p2p(...) plugin_table()->memory_copy_p2p(__VA_ARGS__)
#define accel_async_memory_copy_h2d(...) plugin_table()->async_memory_copy_h2d(__VA_ARGS__)
#define accel_async_memory_copy_d2h(...) plugin_table()->async_memory_copy_d2h(__VA_ARGS__)
#define accel_async_memory_copy_d2d(...) plugin_table()->async_memory_copy_d2d(__VA_ARGS__)
#define accel_async_memory_copy_p2p(...) plugin_table()->async_memory_copy_p2p(__VA_ARGS__)

#define accel_get_device_count(...) plugin_table()->get_device_count(__VA_ARGS__)
#define accel_get_device_list(...) plugin_table()->get_device_list(__VA_ARGS__)
#define accel_device_memory_stats(...) plugin_table()->device_memory_stats(__VA_ARGS__)
#define accel_device_min_chunk_size(...) plugin_table()->device_min_chunk_size(__VA_ARGS__)
#define accel_device_max_chunk_size(...) plugin_table()->device_max_chunk_size(__VA_ARGS__)
#define accel_device_max_alloc_size(...) plugin_table()->device_max_alloc_size(__VA_ARGS__)
#define accel_device_extra_padding_size(...) plugin_table()->device_extra_padding_size(__VA_ARGS__)
#define accel_device_init_alloc_size(...) plugin_table()->device_init_alloc_size(__VA_ARGS__)
#define accel_device_realloc_size(...) plugin_table()->device_realloc_size(__VA_ARGS__)

#endif /* THROUGH_TABLE_H */
