// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel.ko's trace events (<tracefs>/events/simaccel), read from tracefs
 * as root in the VM:
 *
 * - one job from the ioctl to its end: simaccel_job_submit names the
 *   file's client id, its queue, the submission's seqno and the bytes;
 *   drm_sched's drm_sched_job and drm_run_job follow with the same job id,
 *   then simaccel_job_run and simaccel_job_done with the same id and
 *   hardware fence, whose dma_fence_signaled follows, and then the
 *   finished fence's, in that order;
 * - a VRAM buffer: simaccel_bo_create, the clearing's clear_begin, its job
 *   (queue 0, the kernel's) and clear_end, and simaccel_bo_destroy once it
 *   is freed, all with its device address;
 * - a device fault (fault injection): simaccel_fault with the device's
 *   error code, the job done with -EIO, then the queue's reset;
 * - a PCI reset with a job stalled on the hardware: the job done with
 *   -ECANCELED, then simaccel_device_reset with the device, cause=requested
 *   and failed=1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "simaccel_util.h"
#include "../../include/accel_hw.h"

#define TRACE_BYTES	(4 << 20)

static char tracing[64];

/* tracefs, mounted if it is not */
static int tracing_dir(void)
{
	if (!access("/sys/kernel/tracing/trace", F_OK) ||
	    !mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL)) {
		snprintf(tracing, sizeof(tracing), "/sys/kernel/tracing");
		return 0;
	}
	mount("none", "/sys/kernel/debug", "debugfs", 0, NULL);
	snprintf(tracing, sizeof(tracing), "/sys/kernel/debug/tracing");
	return access("/sys/kernel/debug/tracing/trace", F_OK);
}

static int tracing_write(const char *file, const char *text)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", tracing, file);
	return write_file(path, text);
}

static const char *const event_systems[] = {
	"events/simaccel/enable", "events/gpu_scheduler/enable",
	"events/dma_fence/enable",
};

/* An empty buffer, recording this driver's, drm_sched's and dma_fence's events. */
static int trace_start(void)
{
	char path[128];
	int fd;

	/* the order of events on different CPUs: the local clock is per CPU */
	if (tracing_write("tracing_on", "0") ||
	    tracing_write("buffer_size_kb", "4096") ||
	    tracing_write("trace_clock", "global"))
		return -1;
	snprintf(path, sizeof(path), "%s/trace", tracing);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -1;
	close(fd);
	for (size_t i = 0; i < sizeof(event_systems) / sizeof(*event_systems); i++)
		if (tracing_write(event_systems[i], "1"))
			return -1;
	return tracing_write("tracing_on", "1");
}

/* What was recorded so far, NUL-terminated; the recording goes on. */
static char *trace_read(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/trace", tracing);
	return read_text(path, TRACE_BYTES);
}

static void trace_stop(void)
{
	tracing_write("tracing_on", "0");
	tracing_write("trace_clock", "local");
	for (size_t i = 0; i < sizeof(event_systems) / sizeof(*event_systems); i++)
		tracing_write(event_systems[i], "0");
}

/*
 * The first line at or after @from of event @event (" name: ") that
 * contains @what; NULL if none.
 */
static const char *find_event(const char *from, const char *event,
			      const char *what)
{
	char tag[64];
	const char *line;

	if (!from)
		return NULL;
	snprintf(tag, sizeof(tag), " %s: ", event);
	for (line = strstr(from, tag); line; line = strstr(line + 1, tag)) {
		const char *end = strchr(line, '\n');
		const char *hit = strstr(line, what);

		if (hit && (!end || hit < end))
			return line;
	}
	return NULL;
}

/*
 * What was recorded, once it holds event @event with @what or after two
 * seconds: events of work that goes on after a fence signals come later.
 */
static char *trace_read_until(const char *event, const char *what)
{
	char *text = NULL;

	for (int i = 0; i < 40; i++) {
		free(text);
		text = trace_read();
		if (!text || find_event(text, event, what))
			break;
		usleep(50000);
	}
	return text;
}

/* Whether the line at @line contains @what. */
static bool in_line(const char *line, const char *what)
{
	const char *hit = line ? strstr(line, what) : NULL;
	const char *end = line ? strchr(line, '\n') : NULL;

	return hit && (!end || hit < end);
}

/* The text of field @key ("id=") in the line at @line, up to a blank or comma. */
static void field(const char *line, const char *key, char *val, size_t len)
{
	const char *p = line ? strstr(line, key) : NULL;
	const char *end = line ? strchr(line, '\n') : NULL;
	size_t n;

	val[0] = 0;
	if (!p || (end && p > end))
		return;
	p += strlen(key);
	n = strcspn(p, " ,\n");
	snprintf(val, len, "%.*s", (int)(n < len ? n : len - 1), p);
}

FIXTURE(trace) {
	int fd;
	uint32_t queue;
	char client[32];
	char *text;
};

FIXTURE_SETUP(trace)
{
	self->text = NULL;
	ASSERT_EQ(0, tracing_dir()) TH_LOG("no tracefs");
	self->fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, queue_create(self->fd, &self->queue));
	ASSERT_TRUE(fdinfo(self->fd, "drm-client-id", self->client,
			   sizeof(self->client)));
}

FIXTURE_TEARDOWN(trace)
{
	trace_stop();
	free(self->text);
	close(self->fd);
}

/* A copy of @len bytes from @src to @dst, waited for; its seqno in @seqno. */
static int submit_copy(int fd, uint32_t queue, uint64_t dst, uint64_t src,
		       uint64_t len, uint64_t *seqno)
{
	struct drm_simaccel_op op = {
		.op = DRM_SIMACCEL_OP_COPY, .dst = dst, .src = src, .size = len,
	};
	struct drm_simaccel_submit s = {
		.queue = queue, .flags = DRM_SIMACCEL_SUBMIT_WAIT,
		.ops = (uintptr_t)&op, .op_count = 1,
	};
	int ret = ioctl(fd, DRM_IOCTL_SIMACCEL_SUBMIT, &s) ? -errno : 0;

	*seqno = s.seqno;
	return ret;
}

TEST_F(trace, a_jobs_events_follow_it_from_submit_to_its_fences)
{
	struct drm_simaccel_bo_create a, b;
	char want[192], dev[64], hwq[16], id[32], fence[64], hw[64], ctx[32], seq[32];
	const char *submit, *queued, *run, *hwrun, *done, *hwsig, *finished;
	uint64_t seqno;

	ASSERT_EQ(0, bo_create(self->fd, 65536, DRM_SIMACCEL_BO_HOST, &a));
	ASSERT_EQ(0, bo_create(self->fd, 65536, DRM_SIMACCEL_BO_HOST, &b));
	ASSERT_EQ(0, trace_start());
	ASSERT_EQ(0, submit_copy(self->fd, self->queue, a.dev_addr, b.dev_addr,
				 65536, &seqno));
	self->text = trace_read();
	ASSERT_NE(NULL, self->text);

	snprintf(want, sizeof(want), "client=%s queue=%u submission=%llu ",
		 self->client, self->queue, (unsigned long long)seqno);
	submit = find_event(self->text, "simaccel_job_submit", want);
	ASSERT_NE(NULL, submit) TH_LOG("no simaccel_job_submit with %s in:\n%s",
				       want, self->text);
	EXPECT_TRUE(in_line(submit, " bytes=65536\n"));
	field(submit, "dev=", dev, sizeof(dev));
	field(submit, "hwq=", hwq, sizeof(hwq));
	field(submit, "id=", id, sizeof(id));
	field(submit, "fence=", fence, sizeof(fence));
	ASSERT_NE(0, id[0]);
	ASSERT_NE(0, hwq[0]);
	ASSERT_NE(NULL, strchr(fence, ':'));

	/* drm_sched's events for the same job (its scheduler counts ids), after the push */
	snprintf(want, sizeof(want), "id=%s, fence=", id);
	queued = find_event(submit, "drm_sched_job", want);
	EXPECT_NE(NULL, queued) TH_LOG("no drm_sched_job %s", want);
	snprintf(want, sizeof(want), "ring=%s-q%s,", dev, hwq);
	EXPECT_TRUE(in_line(queued, want));
	snprintf(want, sizeof(want), "id=%s, fence=", id);
	run = find_event(queued, "drm_run_job", want);
	EXPECT_NE(NULL, run) TH_LOG("no drm_run_job %s after drm_sched_job", want);

	/* on the ring, and done, with one hardware fence */
	snprintf(want, sizeof(want), "hwq=%s id=%s hw=", hwq, id);
	hwrun = find_event(run, "simaccel_job_run", want);
	ASSERT_NE(NULL, hwrun) TH_LOG("no simaccel_job_run %s after drm_run_job", want);
	field(hwrun, "hw=", hw, sizeof(hw));
	snprintf(want, sizeof(want), "hwq=%s id=%s hw=%s ", hwq, id, hw);
	done = find_event(hwrun, "simaccel_job_done", want);
	ASSERT_NE(NULL, done) TH_LOG("no simaccel_job_done %s", want);
	EXPECT_TRUE(in_line(done, " error=0 "));

	/* the hardware fence signals, then the finished one */
	snprintf(ctx, sizeof(ctx), "%.*s", (int)strcspn(hw, ":"), hw);
	snprintf(seq, sizeof(seq), "%s", strchr(hw, ':') + 1);
	snprintf(want, sizeof(want), "context=%s seqno=%s\n", ctx, seq);
	hwsig = find_event(done, "dma_fence_signaled", want);
	EXPECT_NE(NULL, hwsig) TH_LOG("no dma_fence_signaled %s after done", want);
	snprintf(ctx, sizeof(ctx), "%.*s", (int)strcspn(fence, ":"), fence);
	snprintf(seq, sizeof(seq), "%s", strchr(fence, ':') + 1);
	snprintf(want, sizeof(want), "context=%s seqno=%s\n", ctx, seq);
	finished = find_event(hwsig, "dma_fence_signaled", want);
	EXPECT_NE(NULL, finished) TH_LOG("no dma_fence_signaled %s (finished)", want);
}

TEST_F(trace, a_vram_buffers_creation_clearing_and_destruction_are_traced)
{
	struct drm_simaccel_bo_create v;
	const char *created, *begin, *job, *end, *destroyed;
	char want[128];

	ASSERT_EQ(0, trace_start());
	ASSERT_EQ(0, bo_create(self->fd, 1 << 20, DRM_SIMACCEL_BO_VRAM, &v));
	ASSERT_EQ(0, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_FILL, 0,
			    v.dev_addr, 0x5a, 4096));
	ASSERT_EQ(0, gem_close(self->fd, v.handle));
	ASSERT_EQ(0, settle(self->fd));

	snprintf(want, sizeof(want), "kind=vram addr=%#llx size=1048576\n",
		 (unsigned long long)v.dev_addr);
	self->text = trace_read_until("simaccel_bo_destroy", want);
	ASSERT_NE(NULL, self->text);
	destroyed = find_event(self->text, "simaccel_bo_destroy", want);
	created = find_event(self->text, "simaccel_bo_create", want);
	ASSERT_NE(NULL, created) TH_LOG("no simaccel_bo_create %s in:\n%s",
					want, self->text);
	snprintf(want, sizeof(want), "addr=%#llx size=1048576 ",
		 (unsigned long long)v.dev_addr);
	begin = find_event(created, "simaccel_clear_begin", want);
	EXPECT_NE(NULL, begin) TH_LOG("no simaccel_clear_begin %s", want);
	/* the kernel's job, in this file's window */
	snprintf(want, sizeof(want), "client=%s queue=0 ", self->client);
	job = find_event(begin, "simaccel_job_submit", want);
	EXPECT_NE(NULL, job) TH_LOG("no clearing job %s", want);
	snprintf(want, sizeof(want), "addr=%#llx size=1048576 ",
		 (unsigned long long)v.dev_addr);
	end = find_event(job, "simaccel_clear_end", want);
	EXPECT_NE(NULL, end) TH_LOG("no simaccel_clear_end %s", want);
	EXPECT_TRUE(in_line(end, " error=0\n"));
	EXPECT_NE(NULL, destroyed) TH_LOG("no simaccel_bo_destroy");
	EXPECT_TRUE(destroyed > created);
}

TEST_F(trace, a_device_fault_traces_the_fault_the_failed_job_and_the_reset)
{
	struct drm_simaccel_bo_create v;
	const char *submit, *fault, *done, *reset;
	char want[128], hwq[16], id[32];
	struct drm_simaccel_op op = { .op = DRM_SIMACCEL_OP_FILL, .size = 4096 };
	struct drm_simaccel_submit s = {
		.queue = self->queue, .flags = DRM_SIMACCEL_SUBMIT_WAIT,
		.ops = (uintptr_t)&op, .op_count = 1,
	};

	ASSERT_EQ(0, bo_create(self->fd, 4096, DRM_SIMACCEL_BO_VRAM, &v));
	ASSERT_EQ(0, settle(self->fd));
	op.dst = v.dev_addr;
	ASSERT_EQ(0, trace_start());
	ASSERT_EQ(0, inject_all("1"));
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_SIMACCEL_SUBMIT, &s));
	EXPECT_EQ(EIO, errno);
	ASSERT_EQ(0, inject_all("0"));
	/* the queue restarts after its failed job's fence has signaled */
	self->text = trace_read_until("simaccel_queue_reset", " error=-5 ");
	ASSERT_NE(NULL, self->text);

	snprintf(want, sizeof(want), "client=%s queue=%u submission=%llu ",
		 self->client, self->queue, (unsigned long long)s.seqno);
	submit = find_event(self->text, "simaccel_job_submit", want);
	ASSERT_NE(NULL, submit) TH_LOG("no simaccel_job_submit %s in:\n%s",
				       want, self->text);
	field(submit, "hwq=", hwq, sizeof(hwq));
	field(submit, "id=", id, sizeof(id));
	snprintf(want, sizeof(want), "hwq=%s status=", hwq);
	fault = find_event(submit, "simaccel_fault", want);
	ASSERT_NE(NULL, fault) TH_LOG("no simaccel_fault %s in:\n%s", want,
				      self->text);
	snprintf(want, sizeof(want), " error=%u ", ACCEL_ERR_INJECTED);
	EXPECT_TRUE(in_line(fault, want));
	snprintf(want, sizeof(want), "hwq=%s id=%s ", hwq, id);
	done = find_event(fault, "simaccel_job_done", want);
	ASSERT_NE(NULL, done) TH_LOG("no simaccel_job_done %s after the fault", want);
	EXPECT_TRUE(in_line(done, " error=-5 "));
	snprintf(want, sizeof(want), "hwq=%s error=-5 ", hwq);
	reset = find_event(done, "simaccel_queue_reset", want);
	EXPECT_NE(NULL, reset) TH_LOG("no simaccel_queue_reset after the job");
}

TEST_F(trace, a_pci_reset_traces_the_canceled_job_and_the_device_reset)
{
	struct drm_simaccel_bo_create v;
	struct drm_simaccel_op op = { .op = DRM_SIMACCEL_OP_FILL, .size = 4096 };
	const char *done, *reset;
	char addr[64], path[128], want[128];

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	ASSERT_EQ(0, bo_create(self->fd, 4096, DRM_SIMACCEL_BO_VRAM, &v));
	ASSERT_EQ(0, settle(self->fd));
	op.dst = v.dev_addr;
	ASSERT_EQ(0, trace_start());
	ASSERT_EQ(0, inject_all("0x10000"));
	ASSERT_EQ(0, submit(self->fd, self->queue, 0, &op, 1, NULL, 0, NULL));
	usleep(300000);		/* on the hardware, well before the time-out */
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/reset", addr);
	ASSERT_EQ(0, write_file(path, "1"));
	self->text = trace_read();
	ASSERT_NE(NULL, self->text);
	done = find_event(self->text, "simaccel_job_done", " error=-125 ");
	ASSERT_NE(NULL, done) TH_LOG("no job done with -ECANCELED in:\n%s",
				     self->text);
	snprintf(want, sizeof(want), "dev=%s cause=requested failed=1", addr);
	reset = find_event(done, "simaccel_device_reset", want);
	EXPECT_NE(NULL, reset) TH_LOG("no simaccel_device_reset %s after it", want);
}

TEST_HARNESS_MAIN
