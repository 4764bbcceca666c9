// SPDX-License-Identifier: MIT
/*
 * Device memory shared between processes (accel_ipc_*, CUDA's IPC calls):
 * each test forks a second process before either starts the library, and
 * the two pass handles and turns through pipes.
 */
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "suite.h"

#define N (256u << 10)

/* The other process: its pid and the pipes to and from it. */
struct other {
	pid_t pid;
	int rd, wr;
};

static void put(int fd, const void *buf, size_t n)
{
	REQUIRE(write(fd, buf, n) == (ssize_t)n);
}

/* false at the end of the pipe (the other process ended or skipped) */
static bool get(int fd, void *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = read(fd, (char *)buf + done, n - done);

		if (r == 0)
			return false;
		REQUIRE(r > 0);
		done += (size_t)r;
	}
	return true;
}

static void turn(struct other *o)
{
	put(o->wr, "t", 1);
}

static void wait_turn(struct other *o)
{
	char c;

	REQUIRE(get(o->rd, &c, 1));
}

/*
 * Fork; the child opens the devices and runs @fn, which ends it. In the
 * parent, *ctx gets the devices too. Call before any library call.
 */
static struct other start(struct suite_ctx *ctx, enum suite_needs needs,
			  void (*fn)(struct suite_ctx *ctx, struct other *o))
{
	int to[2], from[2];
	struct other o;

	REQUIRE(!pipe(to) && !pipe(from));
	fflush(stdout);
	o.pid = fork();
	REQUIRE(o.pid >= 0);
	if (!o.pid) {
		struct other parent = { getppid(), to[0], from[1] };

		close(to[1]);
		close(from[0]);
		suite_start_timer();
		suite_open(ctx, needs);
		fn(ctx, &parent);
		suite_exit();
	}
	close(to[0]);
	close(from[1]);
	o.rd = from[0];
	o.wr = to[1];
	suite_open(ctx, needs);
	return o;
}

/* The other process ended, and passed its checks. */
static void finish(struct other *o)
{
	int status;

	close(o->wr);
	REQUIRE(waitpid(o->pid, &status, 0) == o->pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(o->rd);
}

#define NO_IPC "the backend cannot share memory between processes"

/* End the other process (it sees the pipe end), then skip. */
static void __attribute__((noreturn)) skip_both(struct other *o,
						const char *why)
{
	finish(o);
	suite_skip(why);
}

/* Skip where the backend cannot share memory. */
static void needs_ipc(struct suite_ctx *ctx, struct other *o)
{
	accel_ipc_mem_handle_t h;
	void *p = dalloc(ctx, ctx->min_chunk);
	accel_status_t st = accel_ipc_get_mem_handle(ctx->dev, &h, p);

	dfree(ctx, p, ctx->min_chunk);
	if (st == ACCEL_SUCCESS)
		return;
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_NOT_SUPPORTED);
	skip_both(o, NO_IPC);
}

/* Skip where the second device is of another backend than the first. */
static void needs_peer_of_the_backend(struct suite_ctx *ctx, struct other *o)
{
	if (peer_on_another_backend(ctx))
		skip_both(o, "the second device is of another backend");
}

/*
 * The exporting child's first handle: false (and nothing sent) where the
 * backend cannot share memory, for the parent to skip.
 */
static bool first_handle(struct suite_ctx *ctx, accel_ipc_mem_handle_t *h,
			 void *ptr)
{
	if (accel_ipc_get_mem_handle(ctx->dev, h, ptr) == ACCEL_SUCCESS)
		return true;
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_NOT_SUPPORTED);
	return false;
}

/* The child's side when the parent may skip: false if it did. */
static bool get_handle(struct other *o, accel_ipc_mem_handle_t *h)
{
	return get(o->rd, h, sizeof(*h));
}

/* ------------------------------------------------------------------ */

/* Device memory holding pattern @seed, its handle sent to the other process. */
static uint8_t *send_filled(struct suite_ctx *ctx, struct other *o,
			    uint32_t seed)
{
	uint8_t *d = dalloc(ctx, N), *h = xmalloc(N);
	accel_ipc_mem_handle_t handle;

	fill_pattern(h, N, seed);
	OK(accel_memory_copy_h2d(ctx->dev, d, h, N));
	REQUIRE_OK(accel_ipc_get_mem_handle(ctx->dev, &handle, d));
	put(o->wr, &handle, sizeof(handle));
	free(h);
	return d;
}

/* The other process ended; @d, N bytes, holds pattern @seed; freed. */
static void finish_holding(struct suite_ctx *ctx, struct other *o, uint8_t *d,
			   uint32_t seed)
{
	uint8_t *got;

	finish(o);
	got = read_back(ctx, d, N);
	CHECK(check_pattern(got, N, seed));
	dfree(ctx, d, N);
	free(got);
}

/* Memory holding pattern @seed, lent to the other process until it ends. */
static void lend_filled(struct suite_ctx *ctx, struct other *o, uint32_t seed)
{
	uint8_t *d = send_filled(ctx, o, seed);

	finish(o);
	dfree(ctx, d, N);
}

static void open_read_write(struct suite_ctx *ctx, struct other *o)
{
	accel_ipc_mem_handle_t h;
	uint8_t *p, *got, *mine = xmalloc(N);

	if (!get_handle(o, &h))
		return;
	REQUIRE_OK(accel_ipc_open_mem_handle(ctx->dev, (void **)&p, &h));
	got = read_back(ctx, p, N);
	CHECK(check_pattern(got, N, 201));
	fill_pattern(mine, N, 202);
	OK(accel_memory_copy_h2d(ctx->dev, p, mine, N));
	OK(accel_ipc_close_mem_handle(ctx->dev, p));
	free(got);
	free(mine);
}

/* What one process writes, the other reads, both ways, with no copy. */
TEST_NOINIT(ipc_memory_is_shared_both_ways)
{
	struct other o = start(ctx, NEEDS_DEVICE, open_read_write);
	uint8_t *d;

	needs_ipc(ctx, &o);
	d = send_filled(ctx, &o, 201);
	finish_holding(ctx, &o, d, 202);
}

static void open_block(struct suite_ctx *ctx, struct other *o)
{
	accel_ipc_mem_handle_t h;
	uint8_t *p, *got, byte;

	if (!get_handle(o, &h))
		return;
	REQUIRE_OK(accel_ipc_open_mem_handle(ctx->dev, (void **)&p, &h));
	/* the block's first byte, whichever byte of it was exported */
	got = read_back(ctx, p, N);
	CHECK(check_pattern(got, N, 211));
	/* the block and no further: its neighbours are not the importer's */
	FAILS(accel_memory_copy_d2h(ctx->dev, got, p, N + 1));
	FAILS(accel_memory_copy_d2h(ctx->dev, &byte, p + N, 1));
	FAILS(accel_device_memory_set(ctx->dev, p + N - 1, 0, 2));
	OK(accel_memory_copy_d2h(ctx->dev, &byte, p + N - 1, 1));
	OK(accel_ipc_close_mem_handle(ctx->dev, p));
	free(got);
}

/* A pool's block is shared as the block, from any byte of it. */
TEST_NOINIT(ipc_pool_block_is_shared_as_the_block)
{
	struct other o = start(ctx, NEEDS_DEVICE, open_block);
	uint8_t *b[3], *h = xmalloc(N);
	accel_ipc_mem_handle_t handle, again;
	accel_pool_t pool;

	needs_ipc(ctx, &o);
	REQUIRE_OK(accel_device_pool(ctx->dev, &pool));
	for (int i = 0; i < 3; i++)
		REQUIRE_OK(accel_pool_allocate(pool, NULL, (void **)&b[i], N));
	fill_pattern(h, N, 211);
	OK(accel_memory_copy_h2d(ctx->dev, b[1], h, N));
	REQUIRE_OK(accel_ipc_get_mem_handle(ctx->dev, &handle, b[1] + 100));
	OK(accel_ipc_get_mem_handle(ctx->dev, &again, b[1]));
	CHECK(!memcmp(&handle, &again, sizeof(handle)));
	put(o.wr, &handle, sizeof(handle));
	finish(&o);
	for (int i = 0; i < 3; i++)
		OK(accel_pool_deallocate(pool, NULL, b[i], N));
	free(h);
}

static void export_then_free(struct suite_ctx *ctx, struct other *o)
{
	accel_ipc_mem_handle_t h;
	uint8_t *d = dalloc(ctx, N), *src = xmalloc(N), *other;

	fill_pattern(src, N, 221);
	OK(accel_memory_copy_h2d(ctx->dev, d, src, N));
	if (!first_handle(ctx, &h, d))
		return;
	put(o->wr, &h, sizeof(h));
	wait_turn(o);		/* the parent opened it */
	dfree(ctx, d, N);
	pool_trim(ctx);
	/* memory freed since goes on to others: it must not be the shared one */
	other = dalloc(ctx, N);
	OK(accel_device_memory_set(ctx->dev, other, 0x5a, N));
	OK(accel_device_synchronize(ctx->dev));
	free(src);
}

/* Opened memory stays allocated after its exporter frees it and exits. */
TEST_NOINIT(ipc_opened_memory_outlives_its_exporter)
{
	struct other o = start(ctx, NEEDS_DEVICE, export_then_free);
	accel_ipc_mem_handle_t h;
	uint8_t *p, *got;

	if (!get_handle(&o, &h))
		skip_both(&o, NO_IPC);
	REQUIRE_OK(accel_ipc_open_mem_handle(ctx->dev, (void **)&p, &h));
	turn(&o);
	finish(&o);
	got = read_back(ctx, p, N);
	CHECK(check_pattern(got, N, 221));
	OK(accel_device_memory_set(ctx->dev, p, 7, N));
	OK(accel_ipc_close_mem_handle(ctx->dev, p));
	free(got);
}

/* Kept open by the test: the exporter's own child lives until it closes. */
static int hold_child[2];

/* Export, fork a child that outlives this process, and exit. */
static void export_fork_and_exit(struct suite_ctx *ctx, struct other *o)
{
	accel_ipc_mem_handle_t h;
	void *d = dalloc(ctx, N);
	pid_t child;
	char c;

	close(hold_child[1]);
	if (!first_handle(ctx, &h, d))
		return;
	fflush(stdout);
	child = fork();
	REQUIRE(child >= 0);
	if (!child) {
		(void)!read(hold_child[0], &c, 1);
		_exit(0);
	}
	put(o->wr, &h, sizeof(h));
}

/*
 * A child forked by the exporter holds neither its socket nor its
 * dma-bufs: once the exporter exited, its handles are refused at once
 * (rather than timing out on a socket nobody serves).
 */
TEST_NOINIT(ipc_the_exporters_children_serve_nothing)
{
	struct other o;
	accel_ipc_mem_handle_t h;
	void *p = NULL;

	REQUIRE(!pipe(hold_child));
	o = start(ctx, NEEDS_DEVICE, export_fork_and_exit);
	close(hold_child[0]);
	if (!get_handle(&o, &h)) {
		close(hold_child[1]);
		skip_both(&o, NO_IPC);
	}
	finish(&o);
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_ipc_open_mem_handle(ctx->dev, &p, &h));
	CHECK(strstr(accel_get_last_error(), "exited") != NULL);
	CHECK(p == NULL);
	close(hold_child[1]);
}

static void export_free_and_wait(struct suite_ctx *ctx, struct other *o)
{
	uint8_t *busy = dalloc(ctx, 2 * BUSY_HALF);
	accel_ipc_mem_handle_t h[3];
	accel_pool_t pool;
	void *d, *b;
	accel_stream_t s;

	REQUIRE_OK(accel_device_pool(ctx->dev, &pool));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	d = dalloc(ctx, N);
	REQUIRE_OK(accel_pool_allocate(pool, NULL, &b, N));
	if (!first_handle(ctx, &h[0], d))
		return;
	REQUIRE_OK(accel_ipc_get_mem_handle(ctx->dev, &h[1], b));
	REQUIRE_OK(accel_ipc_get_mem_handle(ctx->dev, &h[2], d));
	/*
	 * Freed behind queued work: the buffer goes back to the device later,
	 * its handles at once. The block's chunk lives on in the pool, the
	 * block does not.
	 */
	busy_chain(ctx->dev, s, busy, BUSY_START);
	dfree(ctx, d, N);
	OK(accel_pool_deallocate(pool, NULL, b, N));
	put(o->wr, h, sizeof(h));
	wait_turn(o);
}

/* A handle whose memory was freed, or whose exporter exited, is refused. */
TEST_NOINIT(ipc_stale_handles_are_refused)
{
	struct other o = start(ctx, NEEDS_DEVICE, export_free_and_wait);
	accel_ipc_mem_handle_t h[3];
	void *p = NULL;

	if (!get_handle(&o, &h[0]))
		skip_both(&o, NO_IPC);
	REQUIRE(get(o.rd, &h[1], 2 * sizeof(h[0])));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_ipc_open_mem_handle(ctx->dev, &p, &h[0]));
	CHECK(strstr(accel_get_last_error(), "freed") != NULL);
	CHECK(p == NULL);
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_ipc_open_mem_handle(ctx->dev, &p, &h[1]));
	turn(&o);
	finish(&o);
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_ipc_open_mem_handle(ctx->dev, &p, &h[2]));
	CHECK(strstr(accel_get_last_error(), "exited") != NULL);
}

#define NOBODY 65534

/* Become nobody (only root can): false where this process cannot. */
static bool become_another_user(void)
{
	return geteuid() == 0 && !setgroups(0, NULL) &&
	       !setresgid(NOBODY, NOBODY, NOBODY) &&
	       !setresuid(NOBODY, NOBODY, NOBODY);
}

/* Opened the library as root, then became nobody; its files stay open. */
static void open_as_another_user(struct suite_ctx *ctx, struct other *o)
{
	accel_ipc_mem_handle_t h;
	char became = become_another_user();
	void *p = NULL;

	put(o->wr, &became, 1);
	if (!became || !get_handle(o, &h))
		return;
	/* each time: the answer must not be lost to the exporter's close */
	for (int i = 0; i < 20; i++) {
		FAILS_WITH(ACCEL_ERROR_UNAVAILABLE,
			   accel_ipc_open_mem_handle(ctx->dev, &p, &h));
		CHECK(strstr(accel_get_last_error(), "own user") != NULL);
		CHECK(p == NULL);
	}
}

/* Another user's process, even with a good handle, opens nothing. */
TEST_NOINIT(ipc_another_user_is_refused)
{
	struct other o = start(ctx, NEEDS_DEVICE, open_as_another_user);
	uint8_t *d;
	char became;

	REQUIRE(get(o.rd, &became, 1));
	if (!became)
		skip_both(&o, "needs root, to run the importer as another user");
	needs_ipc(ctx, &o);
	d = send_filled(ctx, &o, 203);
	finish_holding(ctx, &o, d, 203);
}

static void open_twice(struct suite_ctx *ctx, struct other *o)
{
	accel_ipc_mem_handle_t h;
	void *p, *q;

	if (!get_handle(o, &h))
		return;
	REQUIRE_OK(accel_ipc_open_mem_handle(ctx->dev, &p, &h));
	REQUIRE_OK(accel_ipc_open_mem_handle(ctx->dev, &q, &h));
	CHECK(p == q);
	FAILS(accel_device_memory_deallocate(ctx->dev, p, N));
	FAILS(accel_ipc_get_mem_handle(ctx->dev, &h, p));
	OK(accel_ipc_close_mem_handle(ctx->dev, p));
	/* open once more: the memory works */
	OK(accel_device_memory_set(ctx->dev, q, 3, N));
	OK(accel_ipc_close_mem_handle(ctx->dev, q));
	FAILS(accel_ipc_close_mem_handle(ctx->dev, q));
	FAILS(accel_memory_copy_d2h(ctx->dev, &h, q, 1));
	turn(o);
}

/* Each open needs its close; opened memory is not the opener's to free. */
TEST_NOINIT(ipc_every_open_needs_its_close)
{
	struct other o = start(ctx, NEEDS_DEVICE, open_twice);
	accel_ipc_mem_handle_t h;
	void *d;

	needs_ipc(ctx, &o);
	d = dalloc(ctx, N);
	REQUIRE_OK(accel_ipc_get_mem_handle(ctx->dev, &h, d));
	put(o.wr, &h, sizeof(h));
	wait_turn(&o);
	finish(&o);
	dfree(ctx, d, N);
}

static void quit(struct suite_ctx *ctx, struct other *o)
{
	(void)ctx;
	(void)o;
}

/* Bad arguments and handles are refused, and say why. */
TEST_NOINIT(ipc_bad_handles_are_refused)
{
	struct other o = start(ctx, NEEDS_DEVICE, quit);
	accel_ipc_mem_handle_t h, bad;
	void *d, *host, *unified, *p = (void *)1;
	uint8_t *mine = xmalloc(N);

	needs_ipc(ctx, &o);
	finish(&o);
	d = dalloc(ctx, N);
	REQUIRE_OK(accel_host_memory_allocate(ctx->dev, &host, N));
	FAILS(accel_ipc_get_mem_handle(ctx->dev, NULL, d));
	FAILS(accel_ipc_get_mem_handle(ctx->dev, &h, NULL));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_ipc_get_mem_handle(ctx->dev, &h, host));
	memset(&bad, 0, sizeof(bad));
	CHECK(!memcmp(&h, &bad, sizeof(h)));	/* cleared on failure */
	REQUIRE_OK(accel_unified_memory_allocate(ctx->dev, &unified, N));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_ipc_get_mem_handle(ctx->dev, &h, unified));
	REQUIRE_OK(accel_host_memory_register(ctx->dev, mine, N));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_ipc_get_mem_handle(ctx->dev, &h, mine));
	FAILS(accel_ipc_get_mem_handle(ctx->dev, &h, &h));
	REQUIRE_OK(accel_ipc_get_mem_handle(ctx->dev, &h, d));
	/* this process's own handle: the pointer is d */
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_ipc_open_mem_handle(ctx->dev, &p, &h));
	CHECK(p == NULL);
	/* however it comes back: with another pid, or on the other device */
	bad = h;
	bad.reserved[16] ^= 0x41;
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_ipc_open_mem_handle(ctx->dev, &p, &bad));
	if (ctx->peer && !peer_on_another_backend(ctx))
		FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
			   accel_ipc_open_mem_handle(ctx->peer, &p, &h));
	OK(accel_memory_copy_h2d(ctx->dev, d, mine, N));	/* d is whole */
	FAILS(accel_ipc_open_mem_handle(ctx->dev, NULL, &h));
	FAILS(accel_ipc_open_mem_handle(ctx->dev, &p, NULL));
	memset(&bad, 0, sizeof(bad));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_ipc_open_mem_handle(ctx->dev, &p, &bad));
	for (size_t i = 0; i < sizeof(bad); i++)
		bad.reserved[i] = (unsigned char)(i * 37 + 11);
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_ipc_open_mem_handle(ctx->dev, &p, &bad));
	FAILS(accel_ipc_close_mem_handle(ctx->dev, d));
	FAILS(accel_ipc_close_mem_handle(ctx->dev, NULL));
	OK(accel_host_memory_unregister(ctx->dev, mine));
	OK(accel_unified_memory_deallocate(ctx->dev, unified, N));
	OK(accel_host_memory_deallocate(ctx->dev, host, N));
	dfree(ctx, d, N);
	free(mine);
}

static void forge(struct suite_ctx *ctx, struct other *o)
{
	accel_ipc_mem_handle_t h, f;
	void *p = NULL;

	if (!get_handle(o, &h))
		return;
	/*
	 * The layout is libaccel's business, but a forged handle must not
	 * open anything: flip each byte in turn (the pid's bytes open
	 * another process's socket, or none).
	 */
	for (size_t i = 0; i < sizeof(h); i++) {
		f = h;
		f.reserved[i] ^= 0x41;
		if (accel_ipc_open_mem_handle(ctx->dev, &p, &f) == ACCEL_SUCCESS) {
			/* only the pid, which names no socket, may change */
			CHECK(i >= 16 && i < 20);
			OK(accel_ipc_close_mem_handle(ctx->dev, p));
		}
	}
	REQUIRE_OK(accel_ipc_open_mem_handle(ctx->dev, &p, &h));
	OK(accel_ipc_close_mem_handle(ctx->dev, p));
	turn(o);
}

/* A handle changed in any byte opens nothing it did not name. */
TEST_NOINIT(ipc_forged_handles_open_nothing)
{
	struct other o = start(ctx, NEEDS_DEVICE, forge);
	accel_ipc_mem_handle_t h;
	accel_pool_t pool;
	void *b[2];

	needs_ipc(ctx, &o);
	REQUIRE_OK(accel_device_pool(ctx->dev, &pool));
	for (int i = 0; i < 2; i++)
		REQUIRE_OK(accel_pool_allocate(pool, NULL, &b[i], N));
	REQUIRE_OK(accel_ipc_get_mem_handle(ctx->dev, &h, b[0]));
	put(o.wr, &h, sizeof(h));
	wait_turn(&o);
	finish(&o);
	for (int i = 0; i < 2; i++)
		OK(accel_pool_deallocate(pool, NULL, b[i], N));
}

struct opener {
	struct suite_ctx *ctx;
	accel_ipc_mem_handle_t h;
};

static void *open_close_many(void *arg)
{
	struct opener *op = arg;
	void *p;

	for (int i = 0; i < 200; i++) {
		REQUIRE_OK(accel_ipc_open_mem_handle(op->ctx->dev, &p, &op->h));
		OK(accel_device_memory_set(op->ctx->dev, p, (uint8_t)i, 64));
		OK(accel_ipc_close_mem_handle(op->ctx->dev, p));
	}
	return NULL;
}

static void open_from_threads(struct suite_ctx *ctx, struct other *o)
{
	struct opener op = { .ctx = ctx };
	pthread_t t[4];
	void *p;

	if (!get_handle(o, &op.h))
		return;
	/* one open held throughout: the others come and go around it */
	REQUIRE_OK(accel_ipc_open_mem_handle(ctx->dev, &p, &op.h));
	for (int i = 0; i < 4; i++)
		REQUIRE(!pthread_create(&t[i], NULL, open_close_many, &op));
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	OK(accel_device_memory_set(ctx->dev, p, 0xee, N));
	OK(accel_ipc_close_mem_handle(ctx->dev, p));
	FAILS(accel_ipc_close_mem_handle(ctx->dev, p));
	turn(o);
}

/* Threads opening and closing one handle keep its count. */
TEST_NOINIT(ipc_threads_open_and_close_one_handle)
{
	struct other o = start(ctx, NEEDS_DEVICE, open_from_threads);
	accel_ipc_mem_handle_t h;
	uint8_t *d, *got;

	needs_ipc(ctx, &o);
	d = dalloc(ctx, N);
	REQUIRE_OK(accel_ipc_get_mem_handle(ctx->dev, &h, d));
	put(o.wr, &h, sizeof(h));
	wait_turn(&o);
	finish(&o);
	got = read_back(ctx, d, N);
	CHECK(check_bytes(got, N, 0xee));
	dfree(ctx, d, N);
	free(got);
}

static void open_on_both(struct suite_ctx *ctx, struct other *o)
{
	accel_ipc_mem_handle_t h;
	uint8_t *on_dev, *on_peer, *got;

	if (!get_handle(o, &h))
		return;
	REQUIRE_OK(accel_ipc_open_mem_handle(ctx->dev, (void **)&on_dev, &h));
	REQUIRE_OK(accel_ipc_open_mem_handle(ctx->peer, (void **)&on_peer, &h));
	got = xmalloc(N);
	OK(accel_memory_copy_d2h(ctx->peer, got, on_peer, N));
	CHECK(check_pattern(got, N, 231));
	/* a peer copy between the two openings of the one buffer */
	OK(accel_memory_copy_p2p(ctx->dev, ctx->peer, on_dev + N / 2,
				 on_peer, N / 2));
	OK(accel_memory_copy_p2p(ctx->peer, ctx->dev, on_peer + N / 2,
				 on_dev, N / 2));
	/* both openings still work */
	OK(accel_device_memory_set(ctx->dev, on_dev, 1, 16));
	OK(accel_device_memory_set(ctx->peer, on_peer + 16, 2, 16));
	OK(accel_memory_copy_d2h(ctx->dev, got, on_dev, 32));
	CHECK(check_bytes(got, 16, 1) && check_bytes(got + 16, 16, 2));
	OK(accel_ipc_close_mem_handle(ctx->dev, on_dev));
	OK(accel_ipc_close_mem_handle(ctx->peer, on_peer));
	free(got);
}

/* Memory of one device opened on another is reached peer to peer. */
TEST_NOINIT(ipc_open_on_another_device)
{
	struct other o = start(ctx, NEEDS_PEER, open_on_both);

	needs_ipc(ctx, &o);
	needs_peer_of_the_backend(ctx, &o);
	lend_filled(ctx, &o, 231);
}

static void close_under_work(struct suite_ctx *ctx, struct other *o)
{
	accel_ipc_mem_handle_t h;
	uint8_t *p, *out = xmalloc(N);
	accel_stream_t s;

	if (!get_handle(o, &h))
		return;
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_ipc_open_mem_handle(ctx->dev, (void **)&p, &h));
	OK(accel_async_memory_copy_d2h(ctx->dev, s, out, p, N));
	OK(accel_ipc_close_mem_handle(ctx->dev, p));
	OK(accel_stream_synchronize(ctx->dev, s));
	CHECK(check_pattern(out, N, 241));
	OK(accel_stream_destroy(ctx->dev, s));
	free(out);
}

/* Work queued on opened memory before its close completes. */
TEST_NOINIT(ipc_close_waits_for_queued_work)
{
	struct other o = start(ctx, NEEDS_DEVICE, close_under_work);

	needs_ipc(ctx, &o);
	lend_filled(ctx, &o, 241);
}

static void open_pool_block_on_both(struct suite_ctx *ctx, struct other *o)
{
	accel_ipc_mem_handle_t h;
	uint8_t *p, *local, *got = xmalloc(N), *src = xmalloc(N);

	if (!get_handle(o, &h))
		return;
	REQUIRE_OK(accel_ipc_open_mem_handle(ctx->dev, (void **)&p, &h));
	REQUIRE_OK(accel_device_memory_allocate(ctx->peer, (void **)&local, N));
	/* the peer's engine, or this device's, reaches the block, not its chunk */
	OK(accel_memory_copy_p2p(ctx->peer, ctx->dev, local, p, N));
	OK(accel_memory_copy_d2h(ctx->peer, got, local, N));
	CHECK(check_pattern(got, N, 252));
	fill_pattern(src, N, 253);
	OK(accel_memory_copy_h2d(ctx->peer, local, src, N));
	OK(accel_memory_copy_p2p(ctx->dev, ctx->peer, p, local, N));
	OK(accel_device_memory_deallocate(ctx->peer, local, N));
	OK(accel_ipc_close_mem_handle(ctx->dev, p));
	turn(o);
	free(got);
	free(src);
}

/* Peer copies on an opened pool block reach that block of the chunk. */
TEST_NOINIT(ipc_peer_copies_reach_an_opened_pool_block)
{
	struct other o = start(ctx, NEEDS_PEER, open_pool_block_on_both);
	uint8_t *b[2], *h = xmalloc(N), *got;
	accel_ipc_mem_handle_t handle;
	accel_pool_t pool;

	needs_ipc(ctx, &o);
	needs_peer_of_the_backend(ctx, &o);
	REQUIRE_OK(accel_device_pool(ctx->dev, &pool));
	for (int i = 0; i < 2; i++) {
		REQUIRE_OK(accel_pool_allocate(pool, NULL, (void **)&b[i], N));
		fill_pattern(h, N, 251 + i);
		OK(accel_memory_copy_h2d(ctx->dev, b[i], h, N));
	}
	REQUIRE_OK(accel_ipc_get_mem_handle(ctx->dev, &handle, b[1]));
	put(o.wr, &handle, sizeof(handle));
	wait_turn(&o);
	finish(&o);
	got = read_back(ctx, b[1], N);
	CHECK(check_pattern(got, N, 253));
	free(got);
	got = read_back(ctx, b[0], N);	/* its neighbour is untouched */
	CHECK(check_pattern(got, N, 251));
	for (int i = 0; i < 2; i++)
		OK(accel_pool_deallocate(pool, NULL, b[i], N));
	free(got);
	free(h);
}

static void reuse_block(struct suite_ctx *ctx, struct other *o)
{
	accel_ipc_mem_handle_t h[2];
	accel_pool_t pool;
	void *b, *again;

	REQUIRE_OK(accel_device_pool(ctx->dev, &pool));
	REQUIRE_OK(accel_pool_allocate(pool, NULL, &b, N));
	if (!first_handle(ctx, &h[0], b))
		return;
	OK(accel_pool_deallocate(pool, NULL, b, N));
	OK(accel_device_synchronize(ctx->dev));
	REQUIRE_OK(accel_pool_allocate(pool, NULL, &again, N));
	REQUIRE_OK(accel_ipc_get_mem_handle(ctx->dev, &h[1], again));
	CHECK(memcmp(&h[0], &h[1], sizeof(h[0])));
	put(o->wr, h, sizeof(h));
	put(o->wr, &again, sizeof(again));
	put(o->wr, &b, sizeof(b));
	wait_turn(o);
	OK(accel_pool_deallocate(pool, NULL, again, N));
}

/* A pool block given out again has a handle of its own; the old one is stale. */
TEST_NOINIT(ipc_a_reused_pool_block_has_a_new_handle)
{
	struct other o = start(ctx, NEEDS_DEVICE, reuse_block);
	accel_ipc_mem_handle_t h[2];
	void *p = NULL, *again, *b;

	if (!get_handle(&o, &h[0]))
		skip_both(&o, NO_IPC);
	REQUIRE(get(o.rd, &h[1], sizeof(h[1])));
	REQUIRE(get(o.rd, &again, sizeof(again)) && get(o.rd, &b, sizeof(b)));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_ipc_open_mem_handle(ctx->dev, &p, &h[0]));
	REQUIRE_OK(accel_ipc_open_mem_handle(ctx->dev, &p, &h[1]));
	OK(accel_ipc_close_mem_handle(ctx->dev, p));
	turn(&o);
	finish(&o);
	if (again != b)
		suite_skip("the pool gave another block: the reuse was not seen");
}
