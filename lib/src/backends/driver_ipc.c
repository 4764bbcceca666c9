// SPDX-License-Identifier: MIT
/*
 * Buffers shared with other processes (the accel backend's IPC): a buffer
 * travels as its PRIME dma-buf, over a Unix socket.
 *
 * The exporting process keeps one dma-buf file per exported buffer, until
 * the buffer is freed, and serves them on an abstract Unix socket of its
 * own (a thread, started by the first export). A handle names the socket
 * and carries the buffer's token, 128 random bits, which the importer
 * sends to get the file (SCM_RIGHTS); the token is the capability, as
 * CUDA's handles are. A socket rather than pidfd_getfd(): that needs
 * ptrace rights over the exporter, which Yama's usual setting
 * (ptrace_scope 1) refuses to a child over its parent and between siblings.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "backends/driver.h"

#define TOKEN_LEN 16
/* how long either side waits for the other's message */
#define IPC_TIMEOUT_S 5
/* tries of a request while the connection closes without an answer */
#define IPC_ANSWER_TRIES 10

/* What a handle carries for the accel backend (its backend_data). */
struct drv_wire {
	uint64_t socket_id;	/* the exporter's socket: IPC_SOCKET_NAME */
	uint8_t token[TOKEN_LEN];
	uint64_t buf_size;	/* the dma-buf's size */
};
_Static_assert(sizeof(struct drv_wire) <=
	       sizeof(((struct accel_ipc_wire *)0)->backend_data),
	       "the accel backend's part fits a handle");

#define IPC_SOCKET_NAME "accel-ipc-%016llx"

/* A block of this process that other processes may open. */
struct export {
	struct accel_device *dev;
	struct accel_allocation alloc;	/* the registry's record of its buffer */
	uint64_t offset, size;		/* the block in the buffer */
	uint8_t token[TOKEN_LEN];
	int dmabuf;
	ino_t ino;			/* the dma-buf's, to know it again */
	off_t buf_size;			/* the dma-buf's */
};

/* What an importer asks for: the memory a handle names. */
struct request {
	uint8_t token[TOKEN_LEN];
	uint64_t offset, size;
};

/*
 * The exports and the socket, shared by the devices of the process.
 * exports_lock is taken under pool and registry locks (frees forget
 * exports): holding it, take none of them.
 */
static pthread_mutex_t exports_lock = PTHREAD_MUTEX_INITIALIZER;
static struct export *exports;
static size_t n_exports;
static int listen_fd = -1;
static uint64_t socket_id;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* The server's reply: 0 and the file, or an errno. */
struct reply {
	int32_t err;
};

static void socket_address(uint64_t id, struct sockaddr_un *a,
			   socklen_t *len)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	/* abstract: sun_path[0] is 0, the name follows, unterminated */
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
		snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1,
			 IPC_SOCKET_NAME, (unsigned long long)id));
}

static void set_timeouts(int s, int seconds)
{
	struct timeval tv = { .tv_sec = seconds };

	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int send_reply(int s, int32_t err, int fd)
{
	struct reply r = { .err = err };
	struct iovec iov = { .iov_base = &r, .iov_len = sizeof(r) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (fd >= 0) {
		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(s, &m, MSG_NOSIGNAL) == (ssize_t)sizeof(r) ? 0 : -1;
}

/*
 * Is the block still allocated: the whole buffer, or a live block of the
 * pool's chunk that it is part of? A freed block's export is revoked; this
 * catches a free that races the request. Called holding no lock.
 */
static bool still_allocated(const struct export *e)
{
	struct accel_pool_span span;
	uintptr_t base = e->alloc.addr;

	if (!e->alloc.pooled)
		return true;
	return accel_pool_span(e->dev, base, base + e->offset, &span) &&
	       span.live && span.base == base + e->offset &&
	       span.size == e->size;
}

/* Tokens compared in a time that tells nothing of where they differ. */
static bool same_token(const uint8_t *a, const uint8_t *b)
{
	uint8_t diff = 0;

	for (size_t i = 0; i < TOKEN_LEN; i++)
		diff |= a[i] ^ b[i];
	return !diff;
}

/* The export @r asks for, its dma-buf duplicated: 0, or an errno. */
static int find_export(const struct request *r, struct export *out)
{
	int err = ENOENT;

	pthread_mutex_lock(&exports_lock);
	for (size_t i = 0; i < n_exports; i++) {
		const struct export *e = &exports[i];

		if (!same_token(e->token, r->token) ||
		    e->offset != r->offset || e->size != r->size)
			continue;
		*out = *e;
		out->dmabuf = fcntl(e->dmabuf, F_DUPFD_CLOEXEC, 0);
		err = out->dmabuf < 0 ? errno : 0;
		break;
	}
	pthread_mutex_unlock(&exports_lock);
	return err;
}

/*
 * One request on @s: from a process of this user, answered with the
 * block's dma-buf, or ENOENT for a token it does not know (or a freed
 * block), or the errno that kept it from sending it; from another user,
 * EACCES before anything of the request is read.
 */
static void answer(int s)
{
	struct ucred who;
	socklen_t len = sizeof(who);
	struct export e;
	struct request r;
	int err;

	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &who, &len))
		return;
	set_timeouts(s, 1);
	if (who.uid != geteuid()) {
		/*
		 * Not waited for: another user must not hold the server. What
		 * came is taken off, since a close with a request unread would
		 * reset the connection before the client reads the answer.
		 */
		(void)!recv(s, &r, sizeof(r), MSG_DONTWAIT);
		send_reply(s, EACCES, -1);
		return;
	}
	if (recv(s, &r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return;
	err = find_export(&r, &e);
	if (!err && !still_allocated(&e)) {
		close(e.dmabuf);
		err = ENOENT;
	}
	send_reply(s, err, err ? -1 : e.dmabuf);
	if (!err)
		close(e.dmabuf);
}

static void *serve(void *arg)
{
	const struct timespec pause = { .tv_nsec = 10 * 1000 * 1000 };
	int l = (int)(intptr_t)arg;

	for (;;) {
		int s = accept4(l, NULL, NULL, SOCK_CLOEXEC);

		if (s >= 0) {
			answer(s);
			close(s);
		} else if (errno == EBADF || errno == ENOTSOCK ||
			   errno == EINVAL) {
			return NULL;	/* the socket is gone: serve no more */
		} else if (errno != EINTR && errno != ECONNABORTED) {
			nanosleep(&pause, NULL);	/* out of files: no busy loop */
		}
	}
}

/*
 * A fork's child has the socket and the dma-bufs but not the thread: it
 * lets them go, so that its life does not keep the parent's buffers, nor
 * its socket answering (with nothing) after the parent exits.
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&exports_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&exports_lock);
}

static void fork_child(void)
{
	for (size_t i = 0; i < n_exports; i++)
		close(exports[i].dmabuf);
	n_exports = 0;
	if (listen_fd >= 0)
		close(listen_fd);
	listen_fd = -1;
	pthread_mutex_unlock(&exports_lock);
}

static void watch_forks(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* The socket and its thread, at the first export. Holds exports_lock. */
static int start_server(void)
{
	struct sockaddr_un a;
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t thread;
	socklen_t len;
	int l, err;

	if (listen_fd >= 0)
		return 0;
	pthread_once(&fork_once, watch_forks);
	if (getrandom(&socket_id, sizeof(socket_id), 0) != sizeof(socket_id))
		return -errno;
	l = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (l < 0)
		return -errno;
	socket_address(socket_id, &a, &len);
	if (bind(l, (struct sockaddr *)&a, len) || listen(l, 64)) {
		err = -errno;
		close(l);
		return err;
	}
	/* the program's signals are not the server's to take */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = -pthread_create(&thread, &attr, serve, (void *)(intptr_t)l);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		close(l);
		return err;
	}
	listen_fd = l;
	return 0;
}

/* A new export of @dev's block, with its own dma-buf file and token. */
static int export_new(struct accel_device *dev,
		      const struct accel_allocation *a, uint64_t offset,
		      uint64_t size, struct export *e)
{
	struct drm_prime_handle p = {
		.handle = (uint32_t)a->handle, .flags = DRM_CLOEXEC,
	};
	struct stat st;
	int err;

	if (getrandom(e->token, sizeof(e->token), 0) != sizeof(e->token))
		return -errno;
	err = drv_ioctl(drv_of(dev)->fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p);
	if (err)
		return err;
	e->buf_size = lseek(p.fd, 0, SEEK_END);
	if (e->buf_size < 0 || fstat(p.fd, &st)) {
		err = -errno;
		close(p.fd);
		return err;
	}
	e->dev = dev;
	e->alloc = *a;
	e->offset = offset;
	e->size = size;
	e->dmabuf = p.fd;
	e->ino = st.st_ino;
	return 0;
}

static void export_drop(size_t i)
{
	close(exports[i].dmabuf);
	exports[i] = exports[--n_exports];
}

/* The export of @dev's block, made if there is none. Holds exports_lock. */
static struct export *export_of(struct accel_device *dev,
				const struct accel_allocation *a,
				uint64_t offset, uint64_t size, int *err)
{
	struct export *grown;

	for (size_t i = 0; i < n_exports; i++) {
		const struct export *e = &exports[i];

		if (e->dev != dev || e->alloc.handle != a->handle ||
		    e->offset != offset)
			continue;
		if (e->size == size && e->alloc.addr == a->addr)
			return &exports[i];
		export_drop(i);	/* of a block freed before, not revoked */
		break;
	}
	grown = realloc(exports, (n_exports + 1) * sizeof(*exports));
	if (!grown) {
		*err = -ENOMEM;
		return NULL;
	}
	exports = grown;
	*err = export_new(dev, a, offset, size, &exports[n_exports]);
	return *err ? NULL : &exports[n_exports++];
}

accel_status_t drv_ipc_export(struct accel_device *dev,
			const struct accel_allocation *a,
			struct accel_ipc_wire *w)
{
	struct drv_wire dw = { 0 };
	struct export *e = NULL;
	int err;

	pthread_mutex_lock(&exports_lock);
	err = start_server();
	if (!err)
		e = export_of(dev, a, w->offset, w->size, &err);
	if (e) {
		dw.socket_id = socket_id;
		memcpy(dw.token, e->token, sizeof(dw.token));
		dw.buf_size = (uint64_t)e->buf_size;
	}
	pthread_mutex_unlock(&exports_lock);
	if (!e)
		return accel_errno_error(-err, "%s cannot share the memory at %p",
					 dev->name, (void *)(a->addr + w->offset));
	memcpy(w->backend_data, &dw, sizeof(dw));
	return ACCEL_SUCCESS;
}

/* Drop the exports of @dev's buffer @handle: all, or the block at @offset. */
static void exports_drop(struct accel_device *dev, uint64_t handle,
			 bool all, uint64_t offset)
{
	pthread_mutex_lock(&exports_lock);
	for (size_t i = 0; i < n_exports;) {
		const struct export *e = &exports[i];

		if (e->dev == dev && e->alloc.handle == handle &&
		    (all || e->offset == offset))
			export_drop(i);
		else
			i++;
	}
	pthread_mutex_unlock(&exports_lock);
}

void drv_ipc_revoke(struct accel_device *dev, const struct accel_allocation *a,
		    uint64_t offset)
{
	exports_drop(dev, a->handle, false, offset);
}

void drv_ipc_forget(struct accel_device *dev, uint32_t handle)
{
	exports_drop(dev, handle, true, 0);
}

/* Is @fd the dma-buf of one of this process's exports? */
static bool own_export(int fd)
{
	struct stat st;
	bool own = false;

	if (fstat(fd, &st))
		return false;
	pthread_mutex_lock(&exports_lock);
	for (size_t i = 0; i < n_exports && !own; i++)
		own = exports[i].ino == st.st_ino;
	pthread_mutex_unlock(&exports_lock);
	return own;
}

/* The file of an SCM_RIGHTS message of @m, or -1. */
static int passed_fd(struct msghdr *m)
{
	struct cmsghdr *c = CMSG_FIRSTHDR(m);
	int fd = -1;

	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/*
 * -@err for a failure of this process's own calls: an EACCES (a security
 * module's) must not read as the exporter's answer to another user.
 */
static int local_error(int err)
{
	return err == EACCES ? -EPERM : -err;
}

/* The dma-buf a handle names, from its exporter's socket: fd or -errno. */
static int fetch_dmabuf(const struct accel_ipc_wire *w,
			const struct drv_wire *dw)
{
	struct request req = { .offset = w->offset, .size = w->size };
	struct reply r = { .err = EPROTO };
	struct iovec iov = { .iov_base = &r, .iov_len = sizeof(r) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	struct sockaddr_un a;
	socklen_t len;
	int s, fd, err;
	ssize_t n;

	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return local_error(errno);
	socket_address(dw->socket_id, &a, &len);
	set_timeouts(s, IPC_TIMEOUT_S);
	memcpy(req.token, dw->token, sizeof(req.token));
	if (connect(s, (struct sockaddr *)&a, len)) {
		err = local_error(errno == ECONNREFUSED ? ESRCH : errno);
		close(s);
		return err;
	}
	err = send(s, &req, sizeof(req), MSG_NOSIGNAL) == (ssize_t)sizeof(req) ?
	      0 : local_error(errno);
	n = recvmsg(s, &m, MSG_CMSG_CLOEXEC | (err ? MSG_DONTWAIT : 0));
	/* a server that answered and closed early: its answer is still here */
	if (n < 0 && errno == ECONNRESET)
		n = recvmsg(s, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n >= 0)
		err = 0;
	else if (!err)
		err = local_error(errno);
	close(s);
	/* a file came with whatever came: it is closed on every failure */
	fd = n >= 0 ? passed_fd(&m) : -1;
	if (!err && n == 0)
		err = -ECONNABORTED;	/* closed without an answer */
	else if (!err && (n != (ssize_t)sizeof(r) || r.err || fd < 0))
		err = n == (ssize_t)sizeof(r) && r.err ? -r.err : -EPROTO;
	if (err && fd >= 0)
		close(fd);
	return err ? err : fd;
}

/*
 * fetch_dmabuf(), again while the socket closes without an answer. An
 * exporter that has exited (and was reaped) may still have its socket
 * accepting connections for a moment: the kernel can release an exiting
 * process's last file references after the process is gone. Then a
 * connection is accepted and closed; a moment later it is refused, which
 * says the exporter has exited. A live exporter that dropped a request
 * (its read timed out) answers the next one.
 */
static int fetch_dmabuf_answered(const struct accel_ipc_wire *w,
				 const struct drv_wire *dw)
{
	const struct timespec pause = { .tv_nsec = 20 * 1000 * 1000 };
	int fd;

	for (int tries = 1;; tries++) {
		fd = fetch_dmabuf(w, dw);
		if (fd != -ECONNABORTED)
			return fd;
		if (tries == IPC_ANSWER_TRIES)
			return -EPROTO;
		nanosleep(&pause, NULL);
	}
}

/* Take a reference of opened memory on the import @handle. Holds peer_lock. */
static int ipc_ref(struct drv_dev *dd, uint32_t handle)
{
	struct drv_ipc_ref *grown;

	for (size_t i = 0; i < dd->n_ipc_refs; i++)
		if (dd->ipc_refs[i].handle == handle) {
			dd->ipc_refs[i].refs++;
			return 0;
		}
	grown = realloc(dd->ipc_refs, (dd->n_ipc_refs + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	dd->ipc_refs = grown;
	dd->ipc_refs[dd->n_ipc_refs++] = (struct drv_ipc_ref){ handle, 1 };
	return 0;
}

/* Import @dmabuf and hold it for opened memory. */
static int import_held(struct drv_dev *dd, int dmabuf, uint32_t *handle,
		       uint64_t *dev_addr)
{
	int err;

	pthread_mutex_lock(&dd->peer_lock);
	err = drv_import(dd, dmabuf, handle, dev_addr);
	if (!err) {
		err = ipc_ref(dd, *handle);
		if (err)
			drv_import_close(dd, *handle);
	}
	pthread_mutex_unlock(&dd->peer_lock);
	return err;
}

static accel_status_t open_failed(struct accel_device *dev,
			    const struct accel_ipc_wire *w, int err)
{
	if (err == -EACCES)
		return accel_fail(ACCEL_ERROR_UNAVAILABLE,
				  "process %d shares memory only with processes of its own user",
				  (int)w->pid);
	if (err == -ESRCH || err == -ENOENT)
		return accel_fail(ACCEL_ERROR_INVALID_HANDLE,
				  err == -ESRCH ?
				  "the process that exported the memory (pid %d) has exited" :
				  "the memory was freed by the process that exported it (pid %d)",
				  (int)w->pid);
	return accel_errno_error(-err, "%s cannot open the memory of process %d",
				 dev->name, (int)w->pid);
}

accel_status_t drv_ipc_open(struct accel_device *dev, const struct accel_ipc_wire *w,
		      struct accel_allocation *out)
{
	struct drv_dev *dd = drv_of(dev);
	struct drv_wire dw;
	uint32_t handle;
	off_t size;
	int fd, err;

	memcpy(&dw, w->backend_data, sizeof(dw));
	for (size_t i = sizeof(dw); i < sizeof(w->backend_data); i++)
		if (w->backend_data[i])
			return accel_error("the handle is damaged: its padding is not zero");
	if (w->offset > dw.buf_size || w->size > dw.buf_size - w->offset)
		return accel_error("the handle is damaged: its memory runs past its buffer");
	fd = fetch_dmabuf_answered(w, &dw);
	if (fd < 0)
		return open_failed(dev, w, fd);
	/*
	 * This process's own buffer, however the handle came back (another
	 * process may pass it on): importing it would give the buffer's own
	 * handle, which closing the opened memory would close.
	 */
	if (own_export(fd)) {
		close(fd);
		return accel_error("the handle names memory of this process: use its own pointer");
	}
	/* a dma-buf's size is its end */
	size = lseek(fd, 0, SEEK_END);
	if (size < 0 || (uint64_t)size != dw.buf_size) {
		close(fd);
		return accel_error("the handle is damaged: its buffer is not the exporter's");
	}
	err = import_held(dd, fd, &handle, &out->dev_addr);
	close(fd);
	if (err)
		return accel_errno_error(-err, "%s cannot import the memory of process %d",
					 dev->name, (int)w->pid);
	out->handle = handle;
	out->buf_offset = w->offset;
	out->dev_addr += w->offset;
	out->addr = out->dev_addr + dd->va_offset;
	return ACCEL_SUCCESS;
}

accel_status_t drv_ipc_close(struct accel_device *dev,
		       const struct accel_allocation *a)
{
	struct drv_dev *dd = drv_of(dev);
	uint32_t handle = (uint32_t)a->handle;

	pthread_mutex_lock(&dd->peer_lock);
	for (size_t i = 0; i < dd->n_ipc_refs; i++) {
		if (dd->ipc_refs[i].handle != handle)
			continue;
		if (!--dd->ipc_refs[i].refs) {
			dd->ipc_refs[i] = dd->ipc_refs[--dd->n_ipc_refs];
			drv_gem_close(dd->fd, handle);
		}
		break;
	}
	pthread_mutex_unlock(&dd->peer_lock);
	return ACCEL_SUCCESS;
}
