/* SPDX-License-Identifier: MIT */
/* Finding and loading libpaddle-accel.so for the plugin tests. */
#ifndef PLUGIN_LOAD_H
#define PLUGIN_LOAD_H

#include "paddle_abi.h"

/*
 * The plugin: $ACCEL_PLUGIN, else ../plugin/libpaddle-accel.so next to
 * this program (the build tree's layout)
 */
const char *plugin_path(void);

/* dlopen() the plugin and find InitPlugin; exits on failure */
void (*plugin_entry(void))(CustomRuntimeParams *);

/*
 * The plugin's function table, loaded and initialised as Paddle does it
 * on first use; exits if the plugin refuses
 */
const C_DeviceInterface *plugin_table(void);

#endif /* PLUGIN_LOAD_H */
