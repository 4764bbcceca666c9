// SPDX-License-Identifier: MIT
/*
 * Data types: the built-in scalars and the types callers register. Types
 * are never freed, so a handle stays valid for the life of the process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects/object.h"

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ENDIAN "<"
#else
#define ENDIAN ">"
#endif

static const struct accel_dtype builtins[ACCEL_SCALAR_COUNT] = {
	[ACCEL_BOOL] = { "bool", 1, "|b1" },
	[ACCEL_INT8] = { "int8", 1, "|i1" },
	[ACCEL_UINT8] = { "uint8", 1, "|u1" },
	[ACCEL_INT16] = { "int16", 2, ENDIAN "i2" },
	[ACCEL_UINT16] = { "uint16", 2, ENDIAN "u2" },
	[ACCEL_INT32] = { "int32", 4, ENDIAN "i4" },
	[ACCEL_UINT32] = { "uint32", 4, ENDIAN "u4" },
	[ACCEL_INT64] = { "int64", 8, ENDIAN "i8" },
	[ACCEL_UINT64] = { "uint64", 8, ENDIAN "u8" },
	[ACCEL_FLOAT32] = { "float32", 4, ENDIAN "f4" },
	[ACCEL_FLOAT64] = { "float64", 8, ENDIAN "f8" },
};

/* The C names OCCA uses, for the built-ins they are. */
static const struct {
	const char *alias;
	enum accel_scalar scalar;
} aliases[] = {
	{ "char", ACCEL_INT8 },	    { "byte", ACCEL_UINT8 },
	{ "short", ACCEL_INT16 },   { "int", ACCEL_INT32 },
	{ "long", ACCEL_INT64 },    { "float", ACCEL_FLOAT32 },
	{ "double", ACCEL_FLOAT64 },
};

/* Registered types, in blocks that never move. */
#define BLOCK 64
static struct {
	pthread_mutex_t lock;
	struct accel_dtype *blocks[1024];
	size_t n;
} registered = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct accel_dtype *registered_at(size_t i)
{
	return &registered.blocks[i / BLOCK][i % BLOCK];
}

accel_dtype_t accel_dtype(enum accel_scalar scalar)
{
	if ((unsigned int)scalar >= ACCEL_SCALAR_COUNT)
		return NULL;
	return &builtins[scalar];
}

/* Caller holds registered.lock. */
static accel_dtype_t find_locked(const char *name)
{
	for (size_t i = 0; i < ACCEL_SCALAR_COUNT; i++)
		if (!strcmp(builtins[i].name, name))
			return &builtins[i];
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcmp(aliases[i].alias, name))
			return &builtins[aliases[i].scalar];
	for (size_t i = 0; i < registered.n; i++)
		if (!strcmp(registered_at(i)->name, name))
			return registered_at(i);
	return NULL;
}

accel_status_t accel_dtype_find(const char *name, accel_dtype_t *dtype)
{
	ACCEL_ENTER();
	if (!name || !dtype)
		return accel_error("name and dtype must not be NULL");
	pthread_mutex_lock(&registered.lock);
	*dtype = find_locked(name);
	pthread_mutex_unlock(&registered.lock);
	if (!*dtype)
		return accel_error("no dtype is called \"%s\"", name);
	return ACCEL_SUCCESS;
}

accel_status_t accel_dtype_register(const char *name, size_t size,
			      accel_dtype_t *dtype)
{
	struct accel_dtype *t;
	size_t len;

	ACCEL_ENTER();
	if (!name || !dtype)
		return accel_error("name and dtype must not be NULL");
	*dtype = NULL;
	len = strlen(name);
	if (!len || len >= sizeof(t->name))
		return accel_error("a dtype name has 1 to %zu characters, not %zu",
				   sizeof(t->name) - 1, len);
	if (!size || size > (size_t)1 << 30)
		return accel_error("dtype \"%s\": a size of %zu bytes is not 1 to 2^30",
				   name, size);
	pthread_mutex_lock(&registered.lock);
	if (find_locked(name)) {
		pthread_mutex_unlock(&registered.lock);
		return accel_error("a dtype called \"%s\" exists already", name);
	}
	if (registered.n % BLOCK == 0) {
		size_t b = registered.n / BLOCK;

		if (b == sizeof(registered.blocks) / sizeof(registered.blocks[0]) ||
		    !(registered.blocks[b] = calloc(BLOCK, sizeof(*t)))) {
			pthread_mutex_unlock(&registered.lock);
			return accel_error("no room to register dtype \"%s\"",
					   name);
		}
	}
	t = registered_at(registered.n);
	memcpy(t->name, name, len + 1);
	t->size = size;
	snprintf(t->typestr, sizeof(t->typestr), "|V%zu", size);
	registered.n++;
	pthread_mutex_unlock(&registered.lock);
	*dtype = t;
	return ACCEL_SUCCESS;
}

accel_dtype_t dtype_by_typestr(const char *typestr)
{
	accel_dtype_t found = NULL;

	for (size_t i = 0; i < ACCEL_SCALAR_COUNT; i++)
		if (!strcmp(builtins[i].typestr, typestr))
			return &builtins[i];
	pthread_mutex_lock(&registered.lock);
	for (size_t i = 0; i < registered.n && !found; i++)
		if (!strcmp(registered_at(i)->typestr, typestr))
			found = registered_at(i);
	pthread_mutex_unlock(&registered.lock);
	return found;
}

const char *accel_dtype_name(accel_dtype_t dtype)
{
	return dtype ? dtype->name : NULL;
}

size_t accel_dtype_size(accel_dtype_t dtype)
{
	return dtype ? dtype->size : 0;
}

const char *accel_dtype_typestr(accel_dtype_t dtype)
{
	return dtype ? dtype->typestr : NULL;
}

size_t dtype_align(accel_dtype_t dtype)
{
	bool builtin = dtype >= builtins && dtype < builtins + ACCEL_SCALAR_COUNT;

	return builtin ? dtype->size : 1;
}

accel_status_t dtype_check_aligned(size_t at, accel_dtype_t dtype, const char *what)
{
	size_t align = dtype_align(dtype);

	if (at % align)
		return accel_error("%s %#zx is not a multiple of %zu, the alignment of %s",
				   what, at, align, dtype->name);
	return ACCEL_SUCCESS;
}
