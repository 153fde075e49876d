// SPDX-License-Identifier: MIT
/*
 * libmroc contexts: the connection to mrocd's client socket, the HELLO
 * handshake (doorbell eventfd out, ABI version and limits back), the
 * request/reply exchange every other call goes through (abi.h: one
 * SOCK_SEQPACKET message each way, fds as SCM_RIGHTS), and noticing that
 * mrocd went away (the socket hangs up), which fails every later call.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"

#define MAX_FDS 3	/* QP_CREATE sends the most: ring memfd, completion eventfd, doorbell */

static int send_msg(int sock, const void *msg, size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (nfds > 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	do
		/* MSG_NOSIGNAL: a daemon gone away is an error code, not SIGPIPE. */
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)len ? 0 : -EPROTO;
}

/* Close any fds that came with a reply (no reply carries any). */
static int close_passed_fds(struct msghdr *mh)
{
	int nfds = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		for (int i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			close(fd);
			nfds++;
		}
	}
	return nfds;
}

/* Receive one reply into buf; returns its length or a negative errno. */
static ssize_t recv_msg(int sock, void *buf, size_t size)
{
	union {
		char buf[CMSG_SPACE(MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = size };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	ssize_t n;

	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ENOTCONN;	/* the daemon closed the connection */
	if (close_passed_fds(&mh))
		pr_warn("mrocd sent file descriptors with a reply; closed them");
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		return -EPROTO;
	return n;
}

/* Check the reply in buf (n bytes) against the request hdr; 0 or negative errno. */
static int check_reply(const struct mroc_msg_hdr *req, const void *buf, ssize_t n, size_t len)
{
	struct mroc_msg_hdr h;

	if (n < (ssize_t)sizeof(h))
		goto bad;
	memcpy(&h, buf, sizeof(h));
	if (h.type != req->type || h.seq != req->seq || h.len != (uint32_t)n)
		goto bad;
	if (h.status < 0)
		return h.status >= -4095 ? h.status : -EPROTO;
	if (h.status > 0 || (size_t)n < len)
		goto bad;
	return 0;
bad:
	pr_warn("bad reply from mrocd to request %u (seq %u): %zd bytes", req->type, req->seq, n);
	return -EPROTO;
}

int libmroc_request(struct mroc_ctx *ctx, void *msg, size_t len, const int *fds, int nfds)
{
	struct mroc_msg_hdr *h = msg;
	uint8_t buf[MROC_MSG_MAX + 1];	/* one more: a longer reply shows as MSG_TRUNC */
	ssize_t n;
	int err;

	pthread_mutex_lock(&ctx->req_lock);
	if (atomic_load_explicit(&ctx->dead, memory_order_relaxed)) {
		err = -ENOTCONN;
		goto out;
	}
	h->seq = ++ctx->seq;
	h->status = 0;
	h->len = len;
	err = send_msg(ctx->sock, msg, len, fds, nfds);
	if (err)
		goto lost;
	n = recv_msg(ctx->sock, buf, sizeof(buf));
	if (n < 0) {
		err = n;
		goto lost;
	}
	err = check_reply(h, buf, n, len);
	if (err == -EPROTO)
		goto lost;	/* out of step: no later reply could be trusted */
	if (!err)
		memcpy(msg, buf, len);
	goto out;
lost:
	if (err != -ENOTCONN && !atomic_load_explicit(&ctx->dead, memory_order_relaxed))
		pr_warn("lost the connection to mrocd: %s", mroc_strerror(err));
	atomic_store_explicit(&ctx->dead, true, memory_order_relaxed);
	if (err != -EPROTO)
		err = -ENOTCONN;
out:
	pthread_mutex_unlock(&ctx->req_lock);
	return err;
}

void libmroc_ctx_died(struct mroc_ctx *ctx)
{
	if (!atomic_exchange_explicit(&ctx->dead, true, memory_order_relaxed))
		pr_warn("mrocd closed the connection (it exited or was killed): every QP has failed");
}

bool libmroc_ctx_gone(struct mroc_ctx *ctx, int64_t now)
{
	struct pollfd p = { .fd = ctx->sock, .events = POLLRDHUP };

	if (atomic_load_explicit(&ctx->dead, memory_order_relaxed))
		return true;
	if (now < atomic_load_explicit(&ctx->alive_check, memory_order_relaxed))
		return false;
	/* Several pollers may all look now: harmless, and rarer than a lock. */
	atomic_store_explicit(&ctx->alive_check, now + LIBMROC_ALIVE_CHECK_NS,
			      memory_order_relaxed);
	/* POLLRDHUP, not POLLIN: a reply to another thread's request is no hang-up. */
	if (poll(&p, 1, 0) <= 0 || !(p.revents & LIBMROC_HANGUP))
		return false;
	libmroc_ctx_died(ctx);
	return true;
}

int mroc_ctx_fd(const struct mroc_ctx *ctx)
{
	return ctx ? ctx->sock : -EINVAL;
}

int mroc_ctx_limits(const struct mroc_ctx *ctx, struct mroc_ctx_limits *out)
{
	struct mroc_ctx_limits l = {
		.max_qps = ctx ? ctx->max_qps : 0, .max_mrs = ctx ? ctx->max_mrs : 0,
		.max_mr_bytes = ctx ? ctx->max_mr_bytes : 0,
		.max_sq_depth = ctx ? ctx->max_sq_depth : 0,
		.max_rq_depth = ctx ? ctx->max_rq_depth : 0,
		.default_paths = ctx ? ctx->default_paths : 0,
	};
	size_t sz;

	if (!ctx || !out || out->sz < offsetof(struct mroc_ctx_limits, max_qps) + sizeof(uint32_t))
		return -EINVAL;
	/* An older caller's smaller struct gets what it has room for; sz stays its own. */
	sz = out->sz < sizeof(l) ? out->sz : sizeof(l);
	l.sz = out->sz;
	memcpy(out, &l, sz);
	return 0;
}

static int connect_socket(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		err = -errno;
		close(fd);
		/* A socket file nobody listens on, or one of another type, is no daemon. */
		return err == -EPROTOTYPE ? -ECONNREFUSED : err;
	}
	return fd;
}

static int hello(struct mroc_ctx *ctx)
{
	struct mroc_msg_hello m = { .h.type = MROC_MSG_HELLO, .abi_version = MROC_ABI_VERSION };
	int err;

	err = libmroc_request(ctx, &m, sizeof(m), &ctx->doorbell_fd, 1);
	if (err == -ENOTCONN)
		return -ECONNREFUSED;	/* closed on us before any reply: no service */
	if (err)
		return err;
	if (m.abi_version != MROC_ABI_VERSION) {
		pr_info("mrocd speaks ABI version %u, this libmroc %u", m.abi_version,
			MROC_ABI_VERSION);
		return -EPROTO;
	}
	ctx->client_id = m.client_id;
	ctx->max_qps = m.max_qps;
	ctx->max_mrs = m.max_mrs;
	ctx->max_mr_bytes = m.max_mr_bytes;
	ctx->max_sq_depth = m.max_sq_depth;
	ctx->max_rq_depth = m.max_rq_depth;
	ctx->default_paths = m.default_paths;
	return 0;
}

static const char *socket_path(const struct mroc_ctx_opts *opts)
{
	const char *path = LIBMROC_OPT(opts, socket_path, NULL);

	if (!path)
		path = secure_getenv("MROC_SOCKET");	/* not for set-uid programs */
	if (!path || !*path)
		path = MROC_DEFAULT_SOCKET;
	return path;
}

/* $MROC_SPIN_US: microseconds (0: none), or "forever"; MROC_SPIN_DEFAULT when unset. */
static int spin_env(int *us)
{
	const char *s = secure_getenv("MROC_SPIN_US");
	char *end;
	long v;

	*us = MROC_SPIN_DEFAULT;
	if (!s || !*s)
		return 0;
	if (!strcmp(s, "forever")) {
		*us = MROC_SPIN_FOREVER;
		return 0;
	}
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > INT_MAX)
		return -EINVAL;
	*us = v ? (int)v : MROC_SPIN_NONE;
	return 0;
}

/* The polling budget in ns (spin.h) from the options, else the environment, else the default. */
static int spin_budget(const struct mroc_ctx_opts *opts, int64_t *ns)
{
	int us = LIBMROC_OPT(opts, spin_us, MROC_SPIN_DEFAULT), err;

	if (us == MROC_SPIN_DEFAULT) {
		err = spin_env(&us);
		if (err)
			return err;
		if (us == MROC_SPIN_DEFAULT)
			us = MROC_SPIN_US_DEFAULT;
	}
	if (us == MROC_SPIN_FOREVER)
		*ns = LIBMROC_SPIN_ALWAYS;
	else if (us == MROC_SPIN_NONE)
		*ns = 0;
	else if (us > 0)
		*ns = us * 1000LL;
	else
		return -EINVAL;
	return 0;
}

struct mroc_ctx *mroc_open(const struct mroc_ctx_opts *opts)
{
	struct mroc_ctx *ctx;
	int64_t spin_ns;
	int err;

	if ((opts && !libmroc_opts_valid(opts, opts->sz, sizeof(*opts))) ||
	    spin_budget(opts, &spin_ns)) {
		errno = EINVAL;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->spin_ns = spin_ns;
	ctx->doorbell_fd = -1;
	pthread_mutex_init(&ctx->req_lock, NULL);
	pthread_mutex_init(&ctx->list_lock, NULL);
	atomic_init(&ctx->mr_gen, 0);
	atomic_init(&ctx->dead, false);
	atomic_init(&ctx->alive_check, 0);

	ctx->sock = connect_socket(socket_path(opts));
	if (ctx->sock < 0) {
		err = ctx->sock;
		goto err_free;
	}
	ctx->doorbell_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ctx->doorbell_fd < 0) {
		err = -errno;
		goto err_sock;
	}
	err = hello(ctx);
	if (err)
		goto err_doorbell;
	return ctx;

err_doorbell:
	close(ctx->doorbell_fd);
err_sock:
	close(ctx->sock);
err_free:
	pthread_mutex_destroy(&ctx->list_lock);
	pthread_mutex_destroy(&ctx->req_lock);
	free(ctx);
	errno = -err;
	return NULL;
}

void mroc_close(struct mroc_ctx *ctx)
{
	if (!ctx)
		return;
	/* QPs first: their work names the regions. */
	libmroc_qp_drop_all(ctx);
	libmroc_mr_drop_all(ctx);
	close(ctx->sock);
	close(ctx->doorbell_fd);
	pthread_mutex_destroy(&ctx->list_lock);
	pthread_mutex_destroy(&ctx->req_lock);
	free(ctx);
}
