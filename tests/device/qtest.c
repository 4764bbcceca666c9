// SPDX-License-Identifier: GPL-2.0-or-later
#define _GNU_SOURCE
#include "qtest.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define QTEST_TIMEOUT_MS 60000
#define MAX_ARGS 128
/* lines of a sanitizer's report printed: its stacks, not a whole log */
#define REPORT_LINES 80

static const char *qemu_path(void)
{
	const char *p = getenv("QEMU");

	return p ? p : "build/qemu-system-x86_64";
}

/*
 * A QEMU built with sanitizers reports to its log and may go on: print the
 * report and count it as a death.
 */
static bool sanitizer_reported(const char *logpath)
{
	static const char *const marks[] = {
		"ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
		"runtime error:", "WARNING: ThreadSanitizer",
	};
	FILE *f = fopen(logpath, "r");
	char line[512];
	bool found = false;
	unsigned printed = 0;
	size_t i;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		for (i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
			found |= strstr(line, marks[i]) != NULL;
		/* the report, not the rest of the run that UBSan goes on with */
		if (found && printed++ < REPORT_LINES)
			fprintf(stderr, "  qemu: %s", line);
	}
	fclose(f);
	return found;
}

/*
 * Protocol failures are test-infrastructure failures: stop at once, with
 * what QEMU's sanitizers said if it died of a report.
 */
static void __attribute__((noreturn, format(printf, 2, 3)))
die(struct qtest *qt, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "qtest: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	if (qt && qt->pid > 0) {
		kill(qt->pid, SIGKILL);
		waitpid(qt->pid, NULL, 0);
		if (!sanitizer_reported(qt->logpath))
			fprintf(stderr, "qtest: QEMU's output is in %s\n",
				qt->logpath);
	}
	exit(2);
}

static int split_args(char *buf, char **argv, int max)
{
	int n = 0;
	char *save, *tok;

	for (tok = strtok_r(buf, " ", &save); tok && n < max - 1;
	     tok = strtok_r(NULL, " ", &save))
		argv[n++] = tok;
	argv[n] = NULL;
	return n;
}

static pid_t spawn_qemu(const char *extra, const char *qtest_arg,
			const char *log)
{
	char base[512], *buf;
	char *argv[MAX_ARGS];
	int n;
	pid_t pid;

	snprintf(base, sizeof(base),
		 "%s -machine q35 -accel qtest -nodefaults -display none "
		 "-L /usr/share/qemu -L /usr/share/seabios -m 512M %s",
		 qemu_path(), qtest_arg);
	if (asprintf(&buf, "%s %s", base, extra) < 0)
		return -1;
	n = split_args(buf, argv, MAX_ARGS);
	if (n == MAX_ARGS - 1)
		return -1;

	pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		/* QEMU must not outlive a test that crashed */
		prctl(PR_SET_PDEATHSIG, SIGKILL);

		if (fd >= 0) {
			dup2(fd, 2);
			dup2(fd, 1);
		}
		execv(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	free(buf);
	return pid;
}

static int accept_timeout(int lfd, int ms)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };

	if (poll(&p, 1, ms) != 1)
		return -1;
	return accept(lfd, NULL, NULL);
}

struct qtest *qtest_start(const char *args)
{
	struct qtest *qt = calloc(1, sizeof(*qt));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char qarg[160];
	int lfd;

	if (!qt)
		return NULL;
	snprintf(qt->sockdir, sizeof(qt->sockdir), "/tmp/accel-qtest-XXXXXX");
	if (!mkdtemp(qt->sockdir))
		goto fail;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", qt->sockdir);
	snprintf(qt->logpath, sizeof(qt->logpath), "%s/log", qt->sockdir);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (void *)&sa, sizeof(sa)) || listen(lfd, 1))
		goto fail;
	snprintf(qarg, sizeof(qarg), "-qtest unix:%s", sa.sun_path);
	qt->pid = spawn_qemu(args, qarg, qt->logpath);
	if (qt->pid < 0)
		goto fail;
	qt->fd = accept_timeout(lfd, QTEST_TIMEOUT_MS);
	close(lfd);
	unlink(sa.sun_path);
	if (qt->fd < 0) {
		char err[512] = "";
		FILE *f = fopen(qt->logpath, "r");

		if (f) {
			size_t n = fread(err, 1, sizeof(err) - 1, f);

			err[n] = 0;
			fclose(f);
		}
		fprintf(stderr, "qtest: QEMU did not connect: %s\n", err);
		kill(qt->pid, SIGKILL);
		waitpid(qt->pid, NULL, 0);
		goto fail;
	}
	return qt;
fail:
	free(qt);
	return NULL;
}

bool qtest_alive(struct qtest *qt)
{
	return waitpid(qt->pid, NULL, WNOHANG) == 0;
}

bool qtest_quit(struct qtest *qt)
{
	int status = 0;
	bool ok = qtest_alive(qt);

	kill(qt->pid, SIGTERM);
	waitpid(qt->pid, &status, 0);
	if (sanitizer_reported(qt->logpath))
		ok = false;
	close(qt->fd);
	unlink(qt->logpath);
	rmdir(qt->sockdir);
	free(qt->rbuf);
	free(qt);
	return ok;
}

int qemu_run_expect_exit(const char *args, char *err, size_t errlen)
{
	char log[] = "/tmp/accel-qemu-err-XXXXXX";
	int fd = mkstemp(log), status;
	pid_t pid;
	ssize_t n;

	if (fd < 0)
		return -1;
	pid = spawn_qemu(args, "", log);
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -1;
	n = read(fd, err, errlen - 1);
	err[n > 0 ? n : 0] = 0;
	close(fd);
	unlink(log);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void send_all(struct qtest *qt, const char *s, size_t len)
{
	while (len) {
		ssize_t n = write(qt->fd, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die(qt, "write to QEMU failed: %s", strerror(errno));
		s += n;
		len -= n;
	}
}

/* Read one reply line; the returned string is valid until the next call. */
static char *recv_line(struct qtest *qt)
{
	static char *line;
	char *nl;

	for (;;) {
		nl = qt->rlen ? memchr(qt->rbuf, '\n', qt->rlen) : NULL;
		if (nl)
			break;
		if (qt->rcap - qt->rlen < 65536) {
			qt->rcap = qt->rcap * 2 + 65536;
			qt->rbuf = realloc(qt->rbuf, qt->rcap);
			if (!qt->rbuf)
				die(qt, "out of memory");
		}
		struct pollfd p = { .fd = qt->fd, .events = POLLIN };

		if (poll(&p, 1, QTEST_TIMEOUT_MS) != 1)
			die(qt, "QEMU did not answer within %d ms", QTEST_TIMEOUT_MS);
		ssize_t n = read(qt->fd, qt->rbuf + qt->rlen, qt->rcap - qt->rlen);

		if (n <= 0)
			die(qt, "QEMU closed the qtest socket (crashed?)");
		qt->rlen += n;
	}
	*nl = 0;
	free(line);
	line = strdup(qt->rbuf);
	qt->rlen -= nl + 1 - qt->rbuf;
	memmove(qt->rbuf, nl + 1, qt->rlen);
	return line;
}

static char * __attribute__((format(printf, 2, 3)))
command(struct qtest *qt, const char *fmt, ...)
{
	char *buf, *reply;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		die(qt, "out of memory");
	send_all(qt, buf, n);
	reply = recv_line(qt);
	if (strncmp(reply, "OK", 2))
		die(qt, "command '%.60s' failed: %s", buf, reply);
	free(buf);
	return reply + 2;
}

static uint64_t command_value(struct qtest *qt, const char *cmd, uint64_t arg)
{
	return strtoull(command(qt, "%s 0x%" PRIx64 "\n", cmd, arg), NULL, 0);
}

uint32_t qtest_readl(struct qtest *qt, uint64_t addr)
{
	return command_value(qt, "readl", addr);
}

void qtest_writel(struct qtest *qt, uint64_t addr, uint32_t val)
{
	command(qt, "writel 0x%" PRIx64 " 0x%x\n", addr, val);
}

uint64_t qtest_readq(struct qtest *qt, uint64_t addr)
{
	return command_value(qt, "readq", addr);
}

void qtest_writeq(struct qtest *qt, uint64_t addr, uint64_t val)
{
	command(qt, "writeq 0x%" PRIx64 " 0x%" PRIx64 "\n", addr, val);
}

uint32_t qtest_inl(struct qtest *qt, uint16_t port)
{
	return command_value(qt, "inl", port);
}

void qtest_outl(struct qtest *qt, uint16_t port, uint32_t val)
{
	command(qt, "outl 0x%x 0x%x\n", port, val);
}

uint16_t qtest_inw(struct qtest *qt, uint16_t port)
{
	return command_value(qt, "inw", port);
}

void qtest_outw(struct qtest *qt, uint16_t port, uint16_t val)
{
	command(qt, "outw 0x%x 0x%x\n", port, val);
}

uint8_t qtest_inb(struct qtest *qt, uint16_t port)
{
	return command_value(qt, "inb", port);
}

void qtest_outb(struct qtest *qt, uint16_t port, uint8_t val)
{
	command(qt, "outb 0x%x 0x%x\n", port, val);
}

static int hexval(char c)
{
	return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

#define QTEST_CHUNK (256 * 1024)

void qtest_memread(struct qtest *qt, uint64_t addr, void *buf, size_t len)
{
	uint8_t *out = buf;

	while (len) {
		size_t n = len < QTEST_CHUNK ? len : QTEST_CHUNK, i;
		const char *hex = command(qt, "read 0x%" PRIx64 " 0x%zx\n", addr, n);

		if (strncmp(hex, " 0x", 3) || strlen(hex + 3) != 2 * n)
			die(qt, "malformed read reply");
		for (i = 0; i < n; i++)
			out[i] = hexval(hex[3 + 2 * i]) << 4 | hexval(hex[4 + 2 * i]);
		out += n;
		addr += n;
		len -= n;
	}
}

void qtest_memwrite(struct qtest *qt, uint64_t addr, const void *buf, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	const uint8_t *in = buf;
	char *hex = malloc(2 * QTEST_CHUNK + 1);

	if (!hex)
		die(qt, "out of memory");
	while (len) {
		size_t n = len < QTEST_CHUNK ? len : QTEST_CHUNK, i;

		for (i = 0; i < n; i++) {
			hex[2 * i] = digits[in[i] >> 4];
			hex[2 * i + 1] = digits[in[i] & 15];
		}
		hex[2 * n] = 0;
		command(qt, "write 0x%" PRIx64 " 0x%zx 0x%s\n", addr, n, hex);
		in += n;
		addr += n;
		len -= n;
	}
	free(hex);
}

void qtest_memset(struct qtest *qt, uint64_t addr, uint8_t val, size_t len)
{
	command(qt, "memset 0x%" PRIx64 " 0x%zx 0x%x\n", addr, len, val);
}

int64_t qtest_clock_step(struct qtest *qt, int64_t ns)
{
	return strtoll(command(qt, "clock_step %" PRId64 "\n", ns), NULL, 0);
}

/* One line from @fd into @buf (truncated), within QTEST_TIMEOUT_MS; false on EOF. */
static bool qmp_read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;
	char c;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, QTEST_TIMEOUT_MS) != 1 || read(fd, &c, 1) != 1)
			return false;
		if (c == '\n')
			break;
		if (n + 1 < len)
			buf[n++] = c;
	}
	buf[n] = 0;
	return true;
}

bool qmp_execute(int fd, const char *command)
{
	char line[4096];
	size_t len = strlen(command);

	if (write(fd, command, len) != (ssize_t)len || write(fd, "\n", 1) != 1)
		return false;
	while (qmp_read_line(fd, line, sizeof(line))) {
		if (strstr(line, "\"return\""))
			return true;
		if (strstr(line, "\"error\""))
			return false;
	}
	return false;	/* events are skipped; EOF or time-out ends it */
}

int qmp_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char greeting[4096];
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (void *)&sa, sizeof(sa)) ||
	    !qmp_read_line(fd, greeting, sizeof(greeting)) ||
	    !qmp_execute(fd, "{\"execute\": \"qmp_capabilities\"}")) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}
