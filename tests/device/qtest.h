/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A minimal client of QEMU's qtest protocol: starts QEMU with the qtest
 * accelerator and talks to it over a unix socket, one command at a time.
 */
#ifndef ACCEL_QTEST_H
#define ACCEL_QTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct qtest {
	pid_t pid;
	int fd;
	char *rbuf;
	size_t rlen;
	size_t rcap;
	char sockdir[64];
	char logpath[96];
};

/*
 * Start QEMU (path in $QEMU, default build/qemu-system-x86_64) on q35 with
 * the qtest accelerator and the extra arguments in @args (a shell-free,
 * space-separated list). Returns NULL with a message on stderr on failure.
 */
struct qtest *qtest_start(const char *args);
/* Kill QEMU and free @qt; returns false if QEMU had died on its own. */
bool qtest_quit(struct qtest *qt);
/* True while QEMU is running. */
bool qtest_alive(struct qtest *qt);

/* Run QEMU to completion with @args (no qtest socket); returns its exit
 * status and copies the start of its stderr into @err. */
int qemu_run_expect_exit(const char *args, char *err, size_t errlen);

/*
 * QEMU's monitor (QMP) at the unix socket @path, of a QEMU started with
 * "-qmp unix:PATH,server=on,wait=off": a connected, negotiated fd or -1.
 */
int qmp_connect(const char *path);
/* Send the one-line JSON @command; true once it returned, false on an error. */
bool qmp_execute(int fd, const char *command);

uint32_t qtest_readl(struct qtest *qt, uint64_t addr);
void qtest_writel(struct qtest *qt, uint64_t addr, uint32_t val);
uint64_t qtest_readq(struct qtest *qt, uint64_t addr);
void qtest_writeq(struct qtest *qt, uint64_t addr, uint64_t val);
uint32_t qtest_inl(struct qtest *qt, uint16_t port);
void qtest_outl(struct qtest *qt, uint16_t port, uint32_t val);
uint16_t qtest_inw(struct qtest *qt, uint16_t port);
void qtest_outw(struct qtest *qt, uint16_t port, uint16_t val);
uint8_t qtest_inb(struct qtest *qt, uint16_t port);
void qtest_outb(struct qtest *qt, uint16_t port, uint8_t val);
void qtest_memread(struct qtest *qt, uint64_t addr, void *buf, size_t len);
void qtest_memwrite(struct qtest *qt, uint64_t addr, const void *buf, size_t len);
void qtest_memset(struct qtest *qt, uint64_t addr, uint8_t val, size_t len);
/* Advance the virtual clock by @ns (at least 1) and return its new value. */
int64_t qtest_clock_step(struct qtest *qt, int64_t ns);

#endif
