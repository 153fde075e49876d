// SPDX-License-Identifier: MIT
/* The control thread's io_uring loop (see ctl.h). */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#include <systemd/sd-daemon.h>

#include "ctl.h"
#include "log.h"
#include "mroc_util.h"

#define MAX_CONNS	64
#define REQ_MAX		65536
#define QUEUE_DEPTH	64

/* user_data of each request: a kind and, for connections, a slot. */
enum op {
	OP_SIGNAL = 1, OP_TIMER, OP_ACCEPT, OP_RECV, OP_SEND, OP_CACCEPT, OP_CRECV, OP_SWEEP,
	OP_WATCH, OP_CWAIT,
};

#define MAX_CLIENTS	1024
#define CLIENT_MSG_MAX	256
#define CLIENT_FDS_MAX	4

/*
 * Idle connections must not lock anyone out (issue 13): an admin request
 * and its reply get ADMIN_TIMEOUT_NS, a client its HELLO_TIMEOUT_NS to
 * finish its HELLO; a user holds at most ADMIN_PER_UID admin connections
 * and PENDING_PER_UID connections that have not finished HELLO (libmroc
 * sends HELLO at once; the room is for a job's ranks connecting at the
 * same moment).  Established clients are limited (in all and per user) by
 * the clients module, which counts only them: idle connections take no
 * client's place.
 */
#define ADMIN_TIMEOUT_NS	(5ULL * 1000000000ULL)
#define HELLO_TIMEOUT_NS	(5ULL * 1000000000ULL)
#define ADMIN_PER_UID		4
#define PENDING_PER_UID		64
#define SWEEP_NS		500000000ULL	/* deadlines are checked this often */

/* A libmroc client's control connection. */
struct cconn {
	int fd;
	uid_t uid;
	uint64_t deadline;		/* for HELLO; 0 once the client is established */
	bool cut;			/* shut down: its pending recv ends, then it closes */
	void *client;			/* from client_open */
	uint16_t gen;			/* which client of its slot an OP_CWAIT is for */
	struct msghdr mh;
	struct iovec iov;
	uint8_t buf[CLIENT_MSG_MAX];
	union {				/* aligned room for SCM_RIGHTS */
		struct cmsghdr align;
		uint8_t b[CMSG_SPACE(CLIENT_FDS_MAX * sizeof(int))];
	} cbuf;
};
#define UD(op, slot)	((uint64_t)(op) << 32 | (uint32_t)(slot))

struct conn {
	int fd;				/* -1 = free */
	uid_t uid;
	pid_t pid;
	bool admin;			/* see struct ctl_caller */
	uint64_t deadline;		/* request and reply done by then */
	bool cut;
	char *buf;
	size_t len;			/* bytes received, or reply bytes */
	size_t sent;
	bool trim;			/* a large reply: give its memory back when done */
};

/*
 * A reply this long (a "qps" reply of hundreds of QPs: 2.5 MB of text at
 * 1,000 QPs, built from tens of MiB of JSON objects) left the heap holding
 * what it freed, interleaved with what the clients' QPs allocated
 * meanwhile: 33 MiB more in mrocd after ten such replies at 1,000 QPs
 * (test_admin_memory.sh), 156 MiB at 4,000 in bench-scale, whose own
 * "qp -d" polls did it (issue #22).  malloc_trim gives the free pages of
 * every arena back, on this thread, once per such reply.
 */
#define CTL_TRIM_BYTES	(256 * 1024)

struct ctl {
	struct ctl_cfg cfg;
	struct io_uring ring;
	int sfd, tfd, lfd, wfd;		/* wfd: timerfd of the deadline sweep */
	int watch_fd;			/* ctl_watch: -1 = none */
	void (*watch)(void *ctx);
	struct signalfd_siginfo si;
	uint64_t ticks, sweeps;
	struct ctl_stats st;
	struct conn conns[MAX_CONNS];
	int cfd;			/* client socket, -1 = none */
	struct cconn *clients[MAX_CLIENTS];
	/* OP_CWAIT's timeouts (a client over its request budget, client_wait), by slot. */
	struct __kernel_timespec cwait_ts[MAX_CLIENTS];
	uint16_t cgen;
	int ended_by;
};

static int listen_admin(struct ctl *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(c->cfg.admin_path) >= sizeof(sa.sun_path)) {
		pr_err("admin socket path too long: %s", c->cfg.admin_path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, c->cfg.admin_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(c->cfg.admin_path);	/* left by a crashed run */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 16) ||
	    chmod(c->cfg.admin_path, c->cfg.mode) ||
	    (c->cfg.gid != (gid_t)-1 && chown(c->cfg.admin_path, (uid_t)-1, c->cfg.gid))) {
		int err = -errno;

		pr_err("admin socket %s: %s", c->cfg.admin_path, strerror(errno));
		close(fd);
		return err;
	}
	c->lfd = fd;
	return 0;
}

static struct io_uring_sqe *sqe(struct ctl *c)
{
	struct io_uring_sqe *s = io_uring_get_sqe(&c->ring);

	if (!s) {
		io_uring_submit(&c->ring);
		s = io_uring_get_sqe(&c->ring);
	}
	return s;
}

static void arm_signal(struct ctl *c)
{
	struct io_uring_sqe *s = sqe(c);

	io_uring_prep_read(s, c->sfd, &c->si, sizeof(c->si), 0);
	io_uring_sqe_set_data64(s, UD(OP_SIGNAL, 0));
}

static void arm_timer(struct ctl *c)
{
	struct io_uring_sqe *s = sqe(c);

	io_uring_prep_read(s, c->tfd, &c->ticks, sizeof(c->ticks), 0);
	io_uring_sqe_set_data64(s, UD(OP_TIMER, 0));
}

static void arm_watch(struct ctl *c)
{
	struct io_uring_sqe *s = sqe(c);

	io_uring_prep_poll_add(s, c->watch_fd, POLLIN);
	io_uring_sqe_set_data64(s, UD(OP_WATCH, 0));
}

void ctl_watch(struct ctl *c, int fd, void (*fn)(void *ctx))
{
	c->watch_fd = fd;
	c->watch = fn;
}

static void arm_sweep(struct ctl *c)
{
	struct io_uring_sqe *s = sqe(c);

	io_uring_prep_read(s, c->wfd, &c->sweeps, sizeof(c->sweeps), 0);
	io_uring_sqe_set_data64(s, UD(OP_SWEEP, 0));
}

/*
 * Connections past their deadline are shut down, not closed: the pending
 * recv (io_uring holds the file) then completes, and its handler closes the
 * slot as for any connection that ended.
 */
static void cut(int fd, bool *flag, uint64_t *counter)
{
	shutdown(fd, SHUT_RDWR);
	*flag = true;
	(*counter)++;
}

static void on_sweep(struct ctl *c)
{
	uint64_t now = mono_ns();

	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *k = &c->conns[i];

		if (k->fd >= 0 && !k->cut && now >= k->deadline)
			cut(k->fd, &k->cut, &c->st.admin_timeouts);
	}
	for (int i = 0; i < MAX_CLIENTS; i++) {
		struct cconn *k = c->clients[i];

		if (k && !k->cut && k->deadline && now >= k->deadline) {
			pr_warn_rl("client socket: uid %u sent no HELLO in %llu s: closing", k->uid,
				   HELLO_TIMEOUT_NS / 1000000000ULL);
			cut(k->fd, &k->cut, &c->st.hello_timeouts);
		}
	}
	arm_sweep(c);
}

static bool peer_uid(int fd, struct ucred *cred)
{
	socklen_t len = sizeof(*cred);

	return !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len);
}

static void arm_accept(struct ctl *c)
{
	struct io_uring_sqe *s = sqe(c);

	io_uring_prep_accept(s, c->lfd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(s, UD(OP_ACCEPT, 0));
}

static void arm_caccept(struct ctl *c)
{
	struct io_uring_sqe *s = sqe(c);

	io_uring_prep_accept(s, c->cfd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(s, UD(OP_CACCEPT, 0));
}

static void arm_crecv(struct ctl *c, int slot)
{
	struct cconn *k = c->clients[slot];
	struct io_uring_sqe *s = sqe(c);

	k->iov = (struct iovec){ .iov_base = k->buf, .iov_len = sizeof(k->buf) };
	k->mh = (struct msghdr){
		.msg_iov = &k->iov,
		.msg_iovlen = 1,
		.msg_control = k->cbuf.b,
		.msg_controllen = sizeof(k->cbuf.b),
	};
	io_uring_prep_recvmsg(s, k->fd, &k->mh, MSG_CMSG_CLOEXEC);
	io_uring_sqe_set_data64(s, UD(OP_CRECV, slot));
}

/*
 * The client's next message is read in ns: its request budget (client_wait).
 * The slot's generation goes with it: the client may be closed (shutdown)
 * and its slot taken by another before the timeout ends.
 */
static void arm_cwait(struct ctl *c, int slot, uint64_t ns)
{
	struct io_uring_sqe *s = sqe(c);

	c->cwait_ts[slot] = (struct __kernel_timespec){ .tv_sec = (long long)(ns / 1000000000ULL),
						      .tv_nsec = (long long)(ns % 1000000000ULL) };
	io_uring_prep_timeout(s, &c->cwait_ts[slot], 0, 0);
	io_uring_sqe_set_data64(s, UD(OP_CWAIT,
				      (uint32_t)c->clients[slot]->gen << 16 | (uint32_t)slot));
}

/* The client's next message (its first: its HELLO): at once, or when its budget allows. */
static void arm_next(struct ctl *c, int slot)
{
	struct cconn *k = c->clients[slot];
	uint64_t wait = c->cfg.client_wait ? c->cfg.client_wait(c->cfg.ctx, k->client) : 0;

	if (wait)
		arm_cwait(c, slot, wait);
	else
		arm_crecv(c, slot);
}

static void on_cwait(struct ctl *c, uint32_t v)
{
	int slot = (int)(v & 0xffff);
	struct cconn *k = slot < MAX_CLIENTS ? c->clients[slot] : NULL;

	if (k && k->gen == v >> 16)
		arm_crecv(c, slot);
}

static void arm_recv(struct ctl *c, int slot)
{
	struct conn *k = &c->conns[slot];
	struct io_uring_sqe *s = sqe(c);

	io_uring_prep_recv(s, k->fd, k->buf + k->len, REQ_MAX - 1 - k->len, 0);
	io_uring_sqe_set_data64(s, UD(OP_RECV, slot));
}

static void arm_send(struct ctl *c, int slot)
{
	struct conn *k = &c->conns[slot];
	struct io_uring_sqe *s = sqe(c);

	io_uring_prep_send(s, k->fd, k->buf + k->sent, k->len - k->sent, MSG_NOSIGNAL);
	io_uring_sqe_set_data64(s, UD(OP_SEND, slot));
}

static void conn_close(struct ctl *c, int slot)
{
	struct conn *k = &c->conns[slot];

	close(k->fd);
	free(k->buf);
	if (k->trim)
		malloc_trim(0);
	*k = (struct conn){ .fd = -1 };
}

static void cconn_close(struct ctl *c, int slot)
{
	struct cconn *k = c->clients[slot];

	if (k->client && c->cfg.client_close)
		c->cfg.client_close(c->cfg.ctx, k->client);
	close(k->fd);
	free(k);
	c->clients[slot] = NULL;
}

static bool is_admin(const struct ctl *c, int fd, const struct ucred *cred);

static void on_caccept(struct ctl *c, int res)
{
	struct ucred cred;
	struct cconn *k;
	unsigned pending = 0;
	int slot = -1;

	arm_caccept(c);
	if (res < 0) {
		pr_warn_rl("client socket: accept: %s", strerror(-res));
		return;
	}
	if (!peer_uid(res, &cred)) {
		close(res);
		return;
	}
	for (int i = 0; i < MAX_CLIENTS; i++) {
		if (!c->clients[i]) {
			if (slot < 0)
				slot = i;
			continue;
		}
		if (c->clients[i]->uid == cred.uid && c->clients[i]->deadline)
			pending++;
	}
	if (pending >= PENDING_PER_UID) {
		pr_warn_rl("client socket: uid %u has %u connections without HELLO: refusing more",
			   (unsigned)cred.uid, pending);
		c->st.clients_refused++;
		close(res);
		return;
	}
	k = slot >= 0 ? calloc(1, sizeof(*k)) : NULL;
	if (!k) {
		pr_warn_rl("client socket: cannot take a client (%s)", slot >= 0 ? strerror(errno) :
			   "too many connections");
		close(res);
		return;
	}
	k->fd = res;
	k->uid = cred.uid;
	k->gen = c->cgen++;
	k->deadline = mono_ns() + HELLO_TIMEOUT_NS;
	k->client = c->cfg.client_open(c->cfg.ctx, res, &cred, is_admin(c, res, &cred));
	if (!k->client) {
		close(res);
		free(k);
		return;
	}
	c->clients[slot] = k;
	arm_next(c, slot);
}

/* The fds that came with a message: now ours (or the callee's). */
static int take_fds(struct msghdr *mh, int *fds, int max)
{
	int n = 0;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		int cnt;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		cnt = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < cnt; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			if (n < max)
				fds[n++] = fd;
			else
				close(fd);	/* more than any message carries */
		}
	}
	return n;
}

static void on_crecv(struct ctl *c, int slot, int res)
{
	struct cconn *k = c->clients[slot];
	uint8_t reply[CLIENT_MSG_MAX];
	size_t rlen = sizeof(reply);
	int fds[CLIENT_FDS_MAX], nfds;

	if (!k)
		return;
	nfds = res > 0 ? take_fds(&k->mh, fds, CLIENT_FDS_MAX) : 0;
	if (res <= 0 || (k->mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		cconn_close(c, slot);	/* gone, or not one of ours */
		return;
	}
	if (c->cfg.client_msg(c->cfg.ctx, k->client, k->buf, (size_t)res, fds, nfds, reply, &rlen))
		k->deadline = 0;	/* established: no HELLO deadline any more */
	if (rlen && send(k->fd, reply, rlen, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)rlen) {
		cconn_close(c, slot);	/* a client that does not read its replies */
		return;
	}
	arm_next(c, slot);
}

static int listen_clients(struct ctl *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(c->cfg.client_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, c->cfg.client_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(c->cfg.client_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64) ||
	    chmod(c->cfg.client_path, c->cfg.mode) ||
	    (c->cfg.gid != (gid_t)-1 && chown(c->cfg.client_path, (uid_t)-1, c->cfg.gid))) {
		int err = -errno;

		pr_err("client socket %s: %s", c->cfg.client_path, strerror(errno));
		close(fd);
		return err;
	}
	c->cfd = fd;
	return 0;
}

static json_t *error_reply(const char *msg)
{
	return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

/* A complete request line is in the buffer: turn it into the reply. */
static void answer(struct ctl *c, int slot)
{
	struct conn *k = &c->conns[slot];
	json_error_t jerr;
	json_t *req, *reply;
	char *out;

	k->buf[k->len] = 0;
	req = json_loads(k->buf, JSON_DISABLE_EOF_CHECK, &jerr);
	if (!req || !json_is_object(req))
		reply = error_reply(req ? "request must be a JSON object" : jerr.text);
	else if (json_integer_value(json_object_get(req, "version")) != MROCD_ADMIN_VERSION)
		reply = error_reply("unsupported or missing \"version\" (this daemon speaks 1)");
	else
		reply = c->cfg.handle(c->cfg.ctx, req, &(struct ctl_caller){
			.uid = k->uid, .pid = k->pid, .admin = k->admin });
	json_decref(req);
	if (!reply)
		reply = error_reply("internal error");
	json_object_set_new(reply, "version", json_integer(MROCD_ADMIN_VERSION));
	out = json_dumps(reply, JSON_COMPACT);
	json_decref(reply);
	free(k->buf);
	if (!out) {
		k->buf = NULL;
		conn_close(c, slot);
		return;
	}
	k->len = strlen(out);
	k->trim = k->len >= CTL_TRIM_BYTES;
	out[k->len++] = '\n';	/* json_dumps left room: the string's NUL */
	k->buf = out;
	k->sent = 0;
	arm_send(c, slot);
}

/*
 * An administrator: root, mrocd's own user, or a member of admin_gid (its
 * primary group or a supplementary one, as the peer had them when it
 * connected).
 */
static bool is_admin(const struct ctl *c, int fd, const struct ucred *cred)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);

	if (cred->uid == 0 || cred->uid == geteuid())
		return true;
	if (c->cfg.admin_gid == (gid_t)-1)
		return false;
	if (cred->gid == c->cfg.admin_gid)
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len))
		return false;	/* ERANGE: more than 256 groups; not one of ours */
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == c->cfg.admin_gid)
			return true;
	return false;
}

static void on_accept(struct ctl *c, int res)
{
	struct ucred cred;
	int slot = -1, same = 0;

	arm_accept(c);
	if (res < 0) {
		pr_warn_rl("admin socket: accept: %s", strerror(-res));
		return;
	}
	if (!peer_uid(res, &cred)) {
		close(res);
		return;
	}
	for (int i = 0; i < MAX_CONNS; i++) {
		if (c->conns[i].fd < 0) {
			if (slot < 0)
				slot = i;
		} else if (c->conns[i].uid == cred.uid) {
			same++;
		}
	}
	if (slot < 0 || same >= ADMIN_PER_UID) {
		pr_warn_rl("admin socket: %s: refusing a connection of uid %u",
			   slot < 0 ? "too many connections" : "too many of this user's",
			   (unsigned)cred.uid);
		c->st.admin_refused++;
		close(res);
		return;
	}
	c->conns[slot] = (struct conn){ .fd = res, .uid = cred.uid, .pid = cred.pid,
					.admin = is_admin(c, res, &cred), .buf = malloc(REQ_MAX),
					.deadline = mono_ns() + ADMIN_TIMEOUT_NS };
	if (!c->conns[slot].buf) {
		conn_close(c, slot);
		return;
	}
	arm_recv(c, slot);
}

static void on_recv(struct ctl *c, int slot, int res)
{
	struct conn *k = &c->conns[slot];

	if (res < 0 || k->cut) {
		conn_close(c, slot);	/* a cut request is not answered, even if complete */
		return;
	}
	k->len += (size_t)res;
	if (res == 0 || memchr(k->buf + k->len - (size_t)res, '\n', (size_t)res)) {
		if (!k->len) {
			conn_close(c, slot);
			return;
		}
		answer(c, slot);
		return;
	}
	if (k->len >= REQ_MAX - 1) {
		conn_close(c, slot);	/* a request that big is not one of ours */
		return;
	}
	arm_recv(c, slot);
}

static void on_send(struct ctl *c, int slot, int res)
{
	struct conn *k = &c->conns[slot];

	if (res <= 0) {
		conn_close(c, slot);
		return;
	}
	k->sent += (size_t)res;
	if (k->sent < k->len)
		arm_send(c, slot);
	else
		conn_close(c, slot);
}

/* Returns true when the loop must end. */
static bool on_signal(struct ctl *c)
{
	switch (c->si.ssi_signo) {
	case SIGHUP:
		if (c->cfg.reload)
			c->cfg.reload(c->cfg.ctx);
		arm_signal(c);
		return false;
	case SIGTERM:
	case SIGINT:
		c->ended_by = (int)c->si.ssi_signo;
		return true;
	default:
		arm_signal(c);
		return false;
	}
}

int ctl_run(struct ctl *c)
{
	bool done = false;

	arm_signal(c);
	if (c->tfd >= 0)
		arm_timer(c);
	if (c->lfd >= 0)
		arm_accept(c);
	if (c->cfd >= 0)
		arm_caccept(c);
	arm_sweep(c);
	if (c->watch_fd >= 0)
		arm_watch(c);
	while (!done) {
		struct io_uring_cqe *cqe;
		int err = io_uring_submit_and_wait(&c->ring, 1);

		if (err < 0 && err != -EINTR) {
			pr_err("control loop: io_uring: %s", strerror(-err));
			return -err;
		}
		while (!done && io_uring_peek_cqe(&c->ring, &cqe) == 0) {
			uint64_t ud = io_uring_cqe_get_data64(cqe);
			int res = cqe->res, slot = (int)(uint32_t)ud;

			io_uring_cqe_seen(&c->ring, cqe);
			switch (ud >> 32) {
			case OP_SIGNAL:
				done = on_signal(c);
				break;
			case OP_TIMER:
				if (!c->cfg.healthy || !c->cfg.healthy(c->cfg.ctx))
					sd_notify(0, "WATCHDOG=1");
				else
					pr_warn_rl("watchdog: daemon unhealthy, not petting");
				arm_timer(c);
				break;
			case OP_ACCEPT:
				on_accept(c, res);
				break;
			case OP_RECV:
				on_recv(c, slot, res);
				break;
			case OP_SEND:
				on_send(c, slot, res);
				break;
			case OP_CACCEPT:
				on_caccept(c, res);
				break;
			case OP_CRECV:
				on_crecv(c, slot, res);
				break;
			case OP_SWEEP:
				on_sweep(c);
				break;
			case OP_CWAIT:
				on_cwait(c, (uint32_t)ud);
				break;
			case OP_WATCH:
				if (res < 0) {
					pr_warn("control loop: polling fd %d: %s; not watched any more",
						c->watch_fd, strerror(-res));
					break;
				}
				c->watch(c->cfg.ctx);
				arm_watch(c);
				break;
			}
		}
	}
	return c->ended_by;
}

int ctl_create(const struct ctl_cfg *cfg, struct ctl **out)
{
	struct ctl *c = calloc(1, sizeof(*c));
	sigset_t mask;
	int err;

	if (!c)
		return -ENOMEM;
	c->cfg = *cfg;
	c->sfd = c->tfd = c->lfd = c->cfd = c->wfd = c->watch_fd = -1;
	for (int i = 0; i < MAX_CONNS; i++)
		c->conns[i].fd = -1;
	err = io_uring_queue_init(QUEUE_DEPTH, &c->ring, 0);
	if (err) {
		pr_err("control loop: io_uring_queue_init: %s", strerror(-err));
		free(c);
		return err;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	/* Blocked in every thread (the worker is created after this), read through the fd. */
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	c->sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (c->sfd < 0) {
		err = -errno;
		goto fail;
	}
	if (cfg->watchdog_usec) {
		/* Pet twice per period, as sd_watchdog_enabled(3) advises. */
		uint64_t half = cfg->watchdog_usec / 2;
		struct itimerspec its = {
			.it_interval = { .tv_sec = (time_t)(half / 1000000),
					 .tv_nsec = (long)(half % 1000000) * 1000 },
		};

		its.it_value = its.it_interval;
		c->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		if (c->tfd < 0 || timerfd_settime(c->tfd, 0, &its, NULL)) {
			err = -errno;
			goto fail;
		}
	}
	c->wfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (c->wfd < 0 || timerfd_settime(c->wfd, 0, &(struct itimerspec){
			.it_interval = { .tv_nsec = (long)SWEEP_NS },
			.it_value = { .tv_nsec = (long)SWEEP_NS } }, NULL)) {
		err = -errno;
		goto fail;
	}
	if (cfg->admin_path) {
		err = listen_admin(c);
		if (err)
			goto fail;
	}
	if (cfg->client_path) {
		err = listen_clients(c);
		if (err)
			goto fail;
	}
	*out = c;
	return 0;
fail:
	ctl_destroy(c);
	return err;
}

void ctl_get_stats(const struct ctl *c, struct ctl_stats *out)
{
	*out = c->st;
}

void ctl_close_clients(struct ctl *c)
{
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (c->clients[i])
			cconn_close(c, i);
}

void ctl_destroy(struct ctl *c)
{
	if (!c)
		return;
	for (int i = 0; i < MAX_CONNS; i++)
		if (c->conns[i].fd >= 0)
			conn_close(c, i);
	if (c->lfd >= 0) {
		close(c->lfd);
		unlink(c->cfg.admin_path);
	}
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (c->clients[i])
			cconn_close(c, i);
	if (c->cfd >= 0) {
		close(c->cfd);
		unlink(c->cfg.client_path);
	}
	if (c->tfd >= 0)
		close(c->tfd);
	if (c->wfd >= 0)
		close(c->wfd);
	if (c->sfd >= 0)
		close(c->sfd);
	io_uring_queue_exit(&c->ring);
	free(c);
}
