// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel.ko: whole-device reset through the PCI core, as root in the VM
 * (docs/uapi.md, "Device reset"):
 * - a reset of the PCI function (sysfs "reset") with jobs of two files
 *   stalled on the hardware fails both jobs with ECANCELED, keeps their
 *   VRAM buffers' contents and mappings, counts itself in reset_count,
 *   and the files' later jobs run;
 * - a reset while a file with a job in flight is being closed, and one
 *   racing an unbind, neither deadlock nor leak (the VM run fails on a
 *   hung task or a lockdep report), and the device works afterwards;
 * - a file whose jobs time out three times is banned: its next submission
 *   fails with ECANCELED, while another file's work runs;
 * - so is a user (not root) whose jobs time out three times within the
 *   ban period from three files, wherever the period starts: the user's
 *   new files too, until the period is over, while another user's work
 *   runs;
 * - a device that hangs (its queue resets do not take) or reports a fatal
 *   error is reset by the driver on its own: the job that timed out fails
 *   with ETIMEDOUT, the others on the rings with ECANCELED, buffers and
 *   mappings survive, later work runs, and resets/hang or resets/fatal
 *   counts it;
 * - an uncorrectable PCIe error, fatal or not, that QEMU reports for the
 *   device (AER, injected through scripts/vm-run.sh --qmp) with jobs of
 *   two files on the hardware: PCI error recovery fails both jobs with
 *   ECANCELED, buffers and mappings survive, resets/pci_error and
 *   reset_count count it, and later work runs; a correctable error resets
 *   nothing. Without the QMP channel, or a kernel without AER, these
 *   skip.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "simaccel_util.h"
#include "simaccel_devcd.h"

static void *map_bo(int fd, const struct drm_simaccel_bo_create *bo)
{
	return mmap(NULL, bo->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    bo->mmap_offset);
}

static int reset_function(const char *addr)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/reset", addr);
	return write_file(path, "1");
}

static long long reset_count(const char *addr)
{
	return device_total_of(addr, "reset_count");
}

/*
 * The device at @addr has a devcoredump for @reason, or for @or_reason if
 * not NULL (devcoredump keeps the first of two dumps written at once), of
 * a job failed with ECANCELED if by a reset; dismissed.
 */
static void expect_coredump(struct __test_metadata *_metadata, const char *addr,
			    const char *reason, const char *or_reason)
{
	char dir[256], want[128], *line, *text;

	ASSERT_TRUE(wait_coredump(addr, dir, sizeof(dir)));
	text = read_coredump(dir);
	ASSERT_NE(NULL, text);
	line = strstr(text, "\nreason: ");
	ASSERT_NE(NULL, line);
	line += strlen("\nreason: ");
	snprintf(want, sizeof(want), "%s\n", reason);
	if (strncmp(line, want, strlen(want)) && or_reason)
		snprintf(want, sizeof(want), "%s\n", or_reason);
	EXPECT_EQ(0, strncmp(line, want, strlen(want)))
		TH_LOG("reason is not %s in:\n%s", want, text);
	if (!strncmp(line, "device reset", 12))
		EXPECT_EQ(-ECANCELED, dump_value(text, "error"));
	free(text);
	EXPECT_TRUE(dismiss_coredump(dir));
}

struct stalled {
	int fd;
	uint32_t queue;
	uint64_t dst;
	int ret;
};

/* One fill that the stalled hardware holds, waited for. */
static void *run_stalled(void *arg)
{
	struct stalled *s = arg;

	s->ret = run_op(s->fd, s->queue, DRM_SIMACCEL_OP_FILL, 0, s->dst, 9, 1);
	return NULL;
}

/*
 * Two files on accel0, each with a queue and a mapped VRAM buffer whose
 * upper half they filled with 0x40 + i, and then a one-byte fill of its
 * lower half in flight (run_stalled).
 */
struct two_files {
	struct stalled s[2];
	struct drm_simaccel_bo_create v[2];
	uint8_t *m[2];
	pthread_t t[2];
};

static void two_files_open(struct __test_metadata *_metadata,
			   struct two_files *w)
{
	for (int i = 0; i < 2; i++) {
		w->s[i].fd = open(NODE, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, w->s[i].fd);
		ASSERT_EQ(0, queue_create(w->s[i].fd, &w->s[i].queue));
		ASSERT_EQ(0, bo_create(w->s[i].fd, 8192,
				       DRM_SIMACCEL_BO_VRAM_MAPPABLE, &w->v[i]));
		w->m[i] = map_bo(w->s[i].fd, &w->v[i]);
		ASSERT_NE(MAP_FAILED, w->m[i]);
		ASSERT_EQ(0, run_op(w->s[i].fd, w->s[i].queue, DRM_SIMACCEL_OP_FILL,
				    0, w->v[i].dev_addr + 4096, 0x40 + i, 4096));
		w->s[i].dst = w->v[i].dev_addr;
	}
}

/* Both files' fills in flight; with @stalled, held on the hardware. */
static void two_files_submit(struct __test_metadata *_metadata,
			     struct two_files *w, bool stalled)
{
	if (stalled)
		ASSERT_EQ(0, inject_all("0x10000"));
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&w->t[i], NULL, run_stalled, &w->s[i]));
	if (stalled)
		usleep(300000);	/* on the hardware, well before the time-out */
}

static void two_files_join(struct two_files *w)
{
	for (int i = 0; i < 2; i++)
		pthread_join(w->t[i], NULL);
}

/*
 * After the reset: VRAM and its mappings survived, the failed fills did
 * nothing, and the files' later work runs. Closes them.
 */
static void two_files_survive(struct __test_metadata *_metadata,
			      struct two_files *w)
{
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(0x40 + i, w->m[i][4096]);
		EXPECT_EQ(0x40 + i, w->m[i][8191]);
		EXPECT_EQ(0, w->m[i][0]);
		EXPECT_EQ(0, run_op(w->s[i].fd, w->s[i].queue, DRM_SIMACCEL_OP_FILL,
				    0, w->v[i].dev_addr, 0x50 + i, 4096));
		EXPECT_EQ(0x50 + i, w->m[i][0]);
		EXPECT_EQ(0x40 + i, w->m[i][4096]);
		munmap(w->m[i], 8192);
		close(w->s[i].fd);
	}
}

TEST(a_pci_reset_cancels_the_jobs_in_flight_and_keeps_the_buffers)
{
	struct two_files w;
	char addr[64];
	long long before;

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	before = reset_count(addr);
	ASSERT_LE(0, before);
	ASSERT_TRUE(no_coredump(addr));
	two_files_open(_metadata, &w);
	two_files_submit(_metadata, &w, true);
	ASSERT_EQ(0, reset_function(addr));
	two_files_join(&w);
	for (int i = 0; i < 2; i++)
		EXPECT_EQ(-ECANCELED, w.s[i].ret);
	EXPECT_EQ(before + 1, reset_count(addr));
	expect_coredump(_metadata, addr, "device reset (requested)", NULL);
	/* the reset also cleared the fault injection */
	two_files_survive(_metadata, &w);
}

/*
 * A new file with @jobs fills submitted on a queue of accel0, whose hardware
 * queues all stall: the first stays on the hardware. Returns the file.
 */
static int busy_file(int jobs)
{
	struct drm_simaccel_bo_create v;
	struct drm_simaccel_op op;
	uint32_t queue;
	int fd = open(NODE, O_RDWR | O_CLOEXEC);

	/* the buffer's clearing ends first: the stall is for the fills */
	if (fd < 0 || queue_create(fd, &queue) ||
	    bo_create(fd, 4096, DRM_SIMACCEL_BO_VRAM, &v) || settle(fd) ||
	    inject_all("0x10000"))
		return -1;
	op = (struct drm_simaccel_op){
		.op = DRM_SIMACCEL_OP_FILL, .dst = v.dev_addr, .src = 1, .size = 4096,
	};
	while (jobs--)
		if (submit(fd, queue, 0, &op, 1, NULL, 0, NULL))
			return -1;
	return fd;
}

/* Whether a new file's job on accel0 runs: the device works. */
static int device_works(void)
{
	struct drm_simaccel_bo_create v;
	uint32_t queue;
	int fd = open(NODE, O_RDWR | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = queue_create(fd, &queue);
	if (!ret)
		ret = bo_create(fd, 4096, DRM_SIMACCEL_BO_VRAM, &v);
	if (!ret)
		ret = run_op(fd, queue, DRM_SIMACCEL_OP_FILL, 0, v.dev_addr, 2, 4096);
	close(fd);
	return ret;
}

struct race {
	char addr[64];
	int fd;
};

static void *close_file(void *arg)
{
	close(((struct race *)arg)->fd);
	return NULL;
}

static void *unbind(void *arg)
{
	write_file(DRIVER_DIR "/unbind", ((struct race *)arg)->addr);
	return NULL;
}

/*
 * A PCI reset of accel0, with a busy file's jobs on its stalled queues,
 * while a thread does @other: the reset must go through before, during or
 * after it.
 */
static int reset_racing(struct race *r, void *(*other)(void *))
{
	pthread_t t;
	int ret;

	if (pci_addr(r->addr, sizeof(r->addr)))
		return -1;
	r->fd = busy_file(4);
	if (r->fd < 0 || pthread_create(&t, NULL, other, r))
		return -1;
	ret = reset_function(r->addr);
	pthread_join(t, NULL);
	return ret;
}

TEST(a_pci_reset_while_a_busy_file_closes_neither_hangs_nor_leaks)
{
	struct race r;

	EXPECT_EQ(0, reset_racing(&r, close_file));
	/* the queue's jobs drain after the reset; the device works */
	ASSERT_EQ(0, inject_all("0"));
	EXPECT_EQ(0, device_works());
}

TEST(a_pci_reset_racing_an_unbind_neither_hangs_nor_leaks)
{
	struct race r;

	EXPECT_EQ(0, reset_racing(&r, unbind));
	close(r.fd);
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", r.addr));
	EXPECT_EQ(0, device_works());
}

TEST(a_file_that_hangs_three_times_is_banned_and_others_go_on)
{
	struct drm_simaccel_bo_create v[2];
	uint32_t queue[2];
	int fd[2], i;

	ASSERT_EQ(0, rebind_with_timeout("300"));
	for (i = 0; i < 2; i++) {	/* the guilty file and the other */
		fd[i] = open(NODE, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fd[i]);
		ASSERT_EQ(0, queue_create(fd[i], &queue[i]));
		ASSERT_EQ(0, bo_create(fd[i], 4096, DRM_SIMACCEL_BO_VRAM, &v[i]));
	}
	/*
	 * The buffers' clearings end before the stall: a clearing that hangs
	 * fails its buffer's jobs with ECANCELED, not the fills below.
	 */
	ASSERT_EQ(0, settle(fd[0]));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, inject_all("0x10000"));
		EXPECT_EQ(-ETIMEDOUT, run_op(fd[0], queue[0], DRM_SIMACCEL_OP_FILL,
					     0, v[0].dev_addr, 1, 1));
	}
	ASSERT_EQ(0, inject_all("0"));
	EXPECT_EQ(-ECANCELED, run_op(fd[0], queue[0], DRM_SIMACCEL_OP_FILL, 0,
				     v[0].dev_addr, 1, 1));
	close(fd[0]);
	EXPECT_EQ(0, run_op(fd[1], queue[1], DRM_SIMACCEL_OP_FILL, 0,
			    v[1].dev_addr, 1, 4096));
	close(fd[1]);
	ASSERT_EQ(0, rebind_with_timeout("2000"));
}

#define BAN_PERIOD_PARAM "/sys/module/simaccel/parameters/ban_period_ms"

/* accel0 opened as user nobody, with its VRAM buffer and queue. */
static int open_as_nobody(uint32_t *queue, struct drm_simaccel_bo_create *v)
{
	int fd, err;

	if (seteuid(65534))
		return -1;
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	err = errno;
	if (seteuid(0))
		abort();
	errno = err;
	if (fd < 0 || queue_create(fd, queue) ||
	    bo_create(fd, 4096, DRM_SIMACCEL_BO_VRAM, v) || settle(fd))
		return -1;
	return fd;
}

/* Sleep until @t (seconds()). */
static void sleep_until(double t)
{
	double now = seconds();

	if (t > now)
		usleep((useconds_t)((t - now) * 1e6));
}

/*
 * One hang of @fd's job on a stalled device: returns when it timed out,
 * with no stall left armed for the next clearing.
 */
static int hang_once(int fd, uint32_t queue, uint64_t dst)
{
	int ret;

	if (inject_all("0x10000"))
		return -1000;
	ret = run_op(fd, queue, DRM_SIMACCEL_OP_FILL, 0, dst, 1, 1);
	if (inject_all("0"))
		return -1001;
	return ret;
}

TEST(a_user_whose_files_hang_three_times_is_banned_for_the_period)
{
	struct drm_simaccel_bo_create v[5];
	uint32_t queue[5];
	int fd[5], i;

	ASSERT_EQ(0, write_file(BAN_PERIOD_PARAM, "4000"));
	ASSERT_EQ(0, rebind_with_timeout("300"));
	ASSERT_EQ(0, chmod(NODE, 0666));
	/* three files of nobody's hang once each: no file is banned by itself */
	for (i = 0; i < 3; i++) {
		fd[i] = open_as_nobody(&queue[i], &v[i]);
		ASSERT_LE(0, fd[i]);
		EXPECT_EQ(-ETIMEDOUT, hang_once(fd[i], queue[i], v[i].dev_addr));
	}
	/* the user is: its files, old and new */
	fd[3] = open_as_nobody(&queue[3], &v[3]);
	ASSERT_LE(0, fd[3]);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(-ECANCELED, run_op(fd[i], queue[i], DRM_SIMACCEL_OP_FILL,
					     0, v[i].dev_addr, 1, 1));
	/* root's work runs */
	fd[4] = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd[4]);
	ASSERT_EQ(0, queue_create(fd[4], &queue[4]));
	ASSERT_EQ(0, bo_create(fd[4], 4096, DRM_SIMACCEL_BO_VRAM, &v[4]));
	EXPECT_EQ(0, run_op(fd[4], queue[4], DRM_SIMACCEL_OP_FILL, 0,
			    v[4].dev_addr, 1, 4096));
	/* once the period is over, the user works again */
	sleep(5);
	EXPECT_EQ(0, run_op(fd[3], queue[3], DRM_SIMACCEL_OP_FILL, 0,
			    v[3].dev_addr, 1, 4096));
	for (i = 0; i < 5; i++)
		close(fd[i]);
	ASSERT_EQ(0, write_file(BAN_PERIOD_PARAM, "60000"));
	ASSERT_EQ(0, rebind_with_timeout("2000"));
}

/* Make the whole device at @addr hang ("1") or fail fatally ("2"). */
static int device_fault(const char *addr, const char *what)
{
	char dir[256], path[300];

	debugfs_dir_of(addr, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/fault_inject", dir);
	return write_file(path, what);
}

/*
 * Two files' fills on accel0, in flight when the whole device fails with
 * @fault: the driver resets it for @cause. Each job fails with ETIMEDOUT
 * (it timed out) or ECANCELED (the reset took it off its ring), at least
 * one of them as @first; the buffers keep their contents and later work
 * runs. A fault that the driver sees at once (@on_the_rings) comes once
 * both jobs are on the hardware, held there by stalled queues.
 */
static void device_fails_and_comes_back(struct __test_metadata *_metadata,
					const char *fault, const char *cause,
					int first, bool on_the_rings,
					const char *dump_reason,
					const char *or_dump_reason)
{
	struct two_files w;
	char addr[64], counter[64];
	long long before, total;
	int i, firsts = 0;

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	snprintf(counter, sizeof(counter), "resets/%s", cause);
	before = device_total_of(addr, counter);
	total = reset_count(addr);
	ASSERT_LE(0, before);
	ASSERT_TRUE(no_coredump(addr));
	two_files_open(_metadata, &w);
	if (!on_the_rings)
		ASSERT_EQ(0, device_fault(addr, fault));
	two_files_submit(_metadata, &w, on_the_rings);
	if (on_the_rings)
		ASSERT_EQ(0, device_fault(addr, fault));
	two_files_join(&w);
	for (i = 0; i < 2; i++) {
		EXPECT_TRUE(w.s[i].ret == -ETIMEDOUT || w.s[i].ret == -ECANCELED)
			TH_LOG("job %d: %d", i, w.s[i].ret);
		firsts += w.s[i].ret == first;
	}
	EXPECT_LE(1, firsts);
	/* the reset restarts the queues after it failed their jobs */
	EXPECT_EQ(before + 1, wait_device_total_of(addr, counter, before + 1, 5));
	EXPECT_EQ(total + 1, reset_count(addr));
	expect_coredump(_metadata, addr, dump_reason, or_dump_reason);
	two_files_survive(_metadata, &w);
}

TEST(a_hung_device_is_reset_by_the_driver_and_work_goes_on)
{
	ASSERT_EQ(0, rebind_with_timeout("300"));
	/* the time-out's dump and the reset's race: devcoredump keeps one */
	device_fails_and_comes_back(_metadata, "1", "hang", -ETIMEDOUT, false,
				    "time-out", "device reset (hang)");
	ASSERT_EQ(0, rebind_with_timeout("2000"));
}

TEST(a_fatal_error_resets_the_device_at_once)
{
	/* a time-out longer than the test: the error interrupt resets it */
	ASSERT_EQ(0, rebind_with_timeout("60000"));
	device_fails_and_comes_back(_metadata, "2", "fatal", -ECANCELED, true,
				    "device reset (fatal)", NULL);
	ASSERT_EQ(0, rebind_with_timeout("2000"));
}

/*
 * Whether an injected error reaches the driver: QEMU relays commands
 * (vm-run.sh --qmp), and the kernel handles the device's AER (its AER
 * statistics exist with CONFIG_PCIEAER and the capability).
 */
static const char *aer_unusable(const char *addr)
{
	char path[300];

	if (access(QMP_PORT, F_OK))
		return "no QMP channel to QEMU (vm-run.sh --qmp)";
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/aer_dev_fatal",
		 addr);
	if (access(path, F_OK))
		return "the kernel does not handle the device's AER";
	return NULL;
}

/*
 * Have QEMU report the PCIe error @error (pcie_aer_inject_error's name of
 * an error status bit) for the device at PCI address @addr.
 */
static int inject_aer(struct __test_metadata *_metadata, const char *addr,
		      const char *error)
{
	char id[16], line[128], reply[512];
	unsigned int bus, want;
	const char *at;

	if (qdev_id_of(addr, id, sizeof(id)) ||
	    sscanf(addr, "%*x:%x:", &want) != 1)
		return -1;
	snprintf(line, sizeof(line), "pcie_aer_inject_error %s %s", id, error);
	if (hmp(line, reply, sizeof(reply)))
		return -1;
	/* "OK id: acc0 root bus: 0000:00, bus: 1 devfn: 0.0": the right one */
	at = strstr(reply, "OK id: ");
	at = at ? strstr(at, ", bus: ") : NULL;
	if (!at || sscanf(at, ", bus: %x", &bus) != 1 || bus != want) {
		TH_LOG("%s: %s", line, reply);
		return -1;
	}
	return 0;
}

/*
 * Two files' fills stalled on accel0's hardware when QEMU reports the
 * uncorrectable error @error: the PCI core's recovery (error_detected,
 * slot_reset, resume) fails them with ECANCELED and resets the device,
 * which works again with the buffers as they were.
 */
static void aer_recovers(struct __test_metadata *_metadata, const char *error)
{
	struct two_files w;
	char addr[64];
	long long before, total;
	const char *why;
	int i;

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	why = aer_unusable(addr);
	if (why)
		SKIP(return, "%s", why);
	/* a time-out longer than the test: the recovery fails the jobs */
	ASSERT_EQ(0, rebind_with_timeout("60000"));
	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	/*
	 * A reset through the PCI core first: restoring config space after it
	 * used up the state saved at probe, which a link reset needs again
	 */
	ASSERT_EQ(0, reset_function(addr));
	before = device_total_of(addr, "resets/pci_error");
	total = reset_count(addr);
	ASSERT_LE(0, before);
	two_files_open(_metadata, &w);
	two_files_submit(_metadata, &w, true);
	ASSERT_EQ(0, inject_aer(_metadata, addr, error));
	two_files_join(&w);
	for (i = 0; i < 2; i++)
		EXPECT_EQ(-ECANCELED, w.s[i].ret);
	/* resume restarts the queues after error_detected failed the jobs */
	EXPECT_EQ(before + 1, wait_device_total_of(addr, "resets/pci_error",
						   before + 1, 10));
	EXPECT_EQ(total + 1, reset_count(addr));
	two_files_survive(_metadata, &w);
	EXPECT_EQ(0, device_works());
	ASSERT_EQ(0, rebind_with_timeout("2000"));
}

TEST(a_fatal_pcie_error_is_recovered_from)
{
	/* Malformed TLP: fatal by default; the PCI core resets the link */
	aer_recovers(_metadata, "MALF_TLP");
}

TEST(a_non_fatal_pcie_error_is_recovered_from)
{
	/* Poisoned TLP: non-fatal by default; the driver resets the device */
	aer_recovers(_metadata, "POISON_TLP");
}

TEST(a_correctable_pcie_error_resets_nothing)
{
	char addr[64];
	long long total, pci_errors;
	const char *why;

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	why = aer_unusable(addr);
	if (why)
		SKIP(return, "%s", why);
	total = reset_count(addr);
	pci_errors = device_total_of(addr, "resets/pci_error");
	ASSERT_LE(0, pci_errors);
	/* Bad TLP: corrected by the link's replay */
	ASSERT_EQ(0, inject_aer(_metadata, addr, "BAD_TLP"));
	usleep(500000);		/* time for the AER driver to handle it */
	EXPECT_EQ(0, device_works());
	EXPECT_EQ(total, reset_count(addr));
	EXPECT_EQ(pci_errors, device_total_of(addr, "resets/pci_error"));
}

/*
 * A user whose jobs time out 3 times within ban_period_ms is banned,
 * wherever a period would start: three hangs of nobody's within ~1.2 s of
 * a 4 s period, the first of them late in the period since an earlier
 * hang, ban the user.
 */
TEST(three_hangs_within_any_period_ban_the_user)
{
	struct drm_simaccel_bo_create v[5];
	uint32_t queue[5];
	double h[4];
	int fd[5], i, ret;

	ASSERT_EQ(0, write_file(BAN_PERIOD_PARAM, "4000"));
	ASSERT_EQ(0, rebind_with_timeout("300"));
	ASSERT_EQ(0, chmod(NODE, 0666));
	for (i = 0; i < 5; i++) {
		fd[i] = open_as_nobody(&queue[i], &v[i]);
		ASSERT_LE(0, fd[i]);
	}
	EXPECT_EQ(-ETIMEDOUT, hang_once(fd[0], queue[0], v[0].dev_addr));
	h[0] = seconds();
	sleep_until(h[0] + 3.3);
	EXPECT_EQ(-ETIMEDOUT, hang_once(fd[1], queue[1], v[1].dev_addr));
	h[1] = seconds();
	sleep_until(h[0] + 4.3);	/* past the window that h[0] began */
	EXPECT_EQ(-ETIMEDOUT, hang_once(fd[2], queue[2], v[2].dev_addr));
	h[2] = seconds();
	EXPECT_EQ(-ETIMEDOUT, hang_once(fd[3], queue[3], v[3].dev_addr));
	h[3] = seconds();
	TH_LOG("hangs at +%.2f +%.2f +%.2f +%.2f s; the last three within %.2f s",
	       0.0, h[1] - h[0], h[2] - h[0], h[3] - h[0], h[3] - h[1]);
	ASSERT_LT(h[3] - h[1], 3.5);
	/* three hangs of the user within the period: a new file is refused */
	ret = run_op(fd[4], queue[4], DRM_SIMACCEL_OP_FILL, 0, v[4].dev_addr, 1, 4096);
	EXPECT_EQ(-ECANCELED, ret);
	for (i = 0; i < 5; i++)
		close(fd[i]);
	ASSERT_EQ(0, write_file(BAN_PERIOD_PARAM, "60000"));
	ASSERT_EQ(0, rebind_with_timeout("2000"));
}

#define NBUSY 4

struct busy {
	int fd;
	uint32_t queue;
	uint64_t dst;
	int ret;
	pthread_barrier_t *go;
};

static void *run_busy(void *arg)
{
	struct busy *b = arg;

	pthread_barrier_wait(b->go);
	b->ret = run_op(b->fd, b->queue, DRM_SIMACCEL_OP_FILL, 0, b->dst, 9, 4096);
	return NULL;
}

/*
 * A device that hangs while every hardware queue runs another file's job,
 * three times: per hang one job fails with ETIMEDOUT and counts against
 * its file, the others fail with ECANCELED, and the device is reset once
 * (resets/hang), though every queue times out.
 */
TEST(a_device_hang_blames_one_job_and_resets_once)
{
	struct drm_simaccel_bo_create v[NBUSY];
	struct busy b[NBUSY];
	pthread_t t[NBUSY];
	pthread_barrier_t go;
	char addr[64];
	long long before, after;
	int i, round, timedout, total_timedout = 0, banned = 0;

	ASSERT_EQ(0, rebind_with_timeout("300"));
	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	for (i = 0; i < NBUSY; i++) {
		b[i].fd = open(NODE, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, b[i].fd);
		ASSERT_EQ(0, queue_create(b[i].fd, &b[i].queue));
		ASSERT_EQ(0, bo_create(b[i].fd, 4096, DRM_SIMACCEL_BO_VRAM, &v[i]));
		b[i].dst = v[i].dev_addr;
		b[i].go = &go;
	}
	ASSERT_EQ(0, settle(b[0].fd));
	for (round = 0; round < 3; round++) {
		before = device_total_of(addr, "resets/hang");
		ASSERT_EQ(0, pthread_barrier_init(&go, NULL, NBUSY + 1));
		for (i = 0; i < NBUSY; i++)
			ASSERT_EQ(0, pthread_create(&t[i], NULL, run_busy, &b[i]));
		ASSERT_EQ(0, device_fault(addr, "1"));
		pthread_barrier_wait(&go);
		timedout = 0;
		for (i = 0; i < NBUSY; i++) {
			pthread_join(t[i], NULL);
			timedout += b[i].ret == -ETIMEDOUT;
		}
		pthread_barrier_destroy(&go);
		usleep(500000);
		after = device_total_of(addr, "resets/hang");
		TH_LOG("round %d: results %d %d %d %d, hang resets +%lld", round,
		       b[0].ret, b[1].ret, b[2].ret, b[3].ret, after - before);
		EXPECT_EQ(1, timedout);
		EXPECT_EQ(before + 1, after);
		total_timedout += timedout;
	}
	/* at most one file per device hang counted; each file hung <= 3 */
	for (i = 0; i < NBUSY; i++)
		banned += run_op(b[i].fd, b[i].queue, DRM_SIMACCEL_OP_FILL, 0,
				 b[i].dst, 1, 4096) == -ECANCELED;
	TH_LOG("%d ETIMEDOUT over 3 device hangs; %d of %d files banned",
	       total_timedout, banned, NBUSY);
	EXPECT_LE(banned, 1);
	for (i = 0; i < NBUSY; i++)
		close(b[i].fd);
	ASSERT_EQ(0, rebind_with_timeout("2000"));
}

TEST_HARNESS_MAIN
