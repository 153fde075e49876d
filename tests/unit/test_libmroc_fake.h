/* SPDX-License-Identifier: MIT */
/*
 * A fake mrocd for libmroc's unit tests (test_libmroc.c, test_libmroc_qp.c):
 * a thread serving a unix SOCK_SEQPACKET socket in a private folder, speaking
 * abi.h.  It checks what the library sends (fds, sizes, seals, the ring
 * header and layout), keeps its own mappings of the regions and rings, and
 * lets a test play the daemon's data path on them: take SQEs and RQEs,
 * produce CQEs (and signal the completion fd when the client armed it).
 *
 * Checks that fail in the server thread are collected in F.errors (a thread
 * other than the test's must not longjmp); every test's teardown fails if
 * there are any.  Knobs (F.hello_abi, F.fail[], ...) change its answers.
 *
 * Static functions in a header: the two test programs share it and the
 * Makefile builds every other .c file of this folder into every unit test.
 */
#ifndef TEST_LIBMROC_FAKE_H
#define TEST_LIBMROC_FAKE_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"
#include "mroc/mroc.h"
#include "ring.h"

#define FAKE_MAX_MRS	16
#define FAKE_MAX_QPS	8
#define FAKE_MSG_TYPES	(MROC_MSG_QP_DESTROY + 1)
#define FAKE_SQ_MAX	4096
#define FAKE_RQ_MAX	4096

/* Every program uses only some of these. */
#define FAKE_FN static __attribute__((unused))

struct fake_mr {
	bool live;
	bool keep;		/* MROC_MR_REG_KEEP_FILE */
	bool anchor;		/* its file's last region went: kept, as mrocd keeps a page */
	uint32_t lkey, rkey, access;
	uint8_t *map;
	uint64_t len;
	dev_t dev;
	ino_t ino;
};

struct fake_qp {
	bool live;
	uint32_t qpn;
	struct mroc_msg_qp_create req;
	uint8_t *region;
	uint64_t len;
	int cq_fd;
	int doorbell;			/* the QP's own (abi.h) */
	struct ring_view sq, rq;	/* the daemon consumes */
	struct ring_view cq;		/* the daemon produces */
};

struct fake {
	char dir[64], path[108];
	int lfd, stopfd;
	pthread_t thr;

	/* Knobs, set by a test before the request they change. */
	uint32_t hello_abi;		/* 0: MROC_ABI_VERSION */
	int32_t fail[FAKE_MSG_TYPES];	/* a negative status to answer instead */
	uint32_t bad_seq_on;		/* answer this type with a wrong seq */
	uint32_t close_on;		/* close the connection on this type, no answer */

	/* What it saw. */
	unsigned int conns;		/* connections accepted */
	/* Atomic: tests poll these while the fake's thread sees a client go. */
	_Atomic unsigned int closed;	/* connections seen closed */
	_Atomic int cfd;		/* the client's connection, while there is one */
	_Atomic int doorbell;
	unsigned int msgs[FAKE_MSG_TYPES];
	struct fake_mr mrs[FAKE_MAX_MRS];
	struct fake_qp qps[FAKE_MAX_QPS];
	struct mroc_msg_qp_connect connect;
	struct mroc_msg_qp_listen listen;
	uint32_t last_dereg, last_destroy;
	char errors[1024];
};

static struct fake F;

__attribute__((format(printf, 1, 2)))
FAKE_FN void fake_error(const char *fmt, ...)
{
	size_t n = strlen(F.errors);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(F.errors + n, sizeof(F.errors) - n, fmt, ap);
	va_end(ap);
	n = strlen(F.errors);
	if (n + 1 < sizeof(F.errors))
		strcat(F.errors, "\n");
}

#define FAKE_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fake_error("%s:%d: fake mrocd: %s", __FILE__, __LINE__, #cond);            \
			return -EINVAL;                                                            \
		}                                                                                  \
	} while (0)

FAKE_FN bool fd_is_eventfd(int fd)
{
	char link[64], target[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = 0;
	return strcmp(target, "anon_inode:[eventfd]") == 0;
}

/* A memfd as the daemon wants it: sealed against shrinking, at least len bytes. */
FAKE_FN int fake_check_memfd(int fd, uint64_t len, bool exact)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);

	FAKE_CHECK(seals >= 0 && (seals & F_SEAL_SHRINK));
	FAKE_CHECK(fstat(fd, &st) == 0 && S_ISREG(st.st_mode));
	FAKE_CHECK((uint64_t)st.st_size >= len);
	if (exact)
		FAKE_CHECK((uint64_t)st.st_size == len);
	return 0;
}

FAKE_FN int fake_hello(struct mroc_msg_hello *m, int *fds, int nfds)
{
	FAKE_CHECK(nfds == 1 && fd_is_eventfd(fds[0]));
	FAKE_CHECK(m->abi_version == MROC_ABI_VERSION);
	FAKE_CHECK(F.doorbell < 0);
	F.doorbell = fds[0];
	fds[0] = -1;
	m->abi_version = F.hello_abi ? F.hello_abi : MROC_ABI_VERSION;
	m->client_id = 7;
	m->max_qps = FAKE_MAX_QPS;
	m->max_mrs = FAKE_MAX_MRS;
	m->max_mr_bytes = 1ull << 30;
	m->max_sq_depth = FAKE_SQ_MAX;
	m->max_rq_depth = FAKE_RQ_MAX;
	m->default_paths = 4;
	return 0;
}

FAKE_FN int fake_mr_reg(struct mroc_msg_mr_reg *m, int *fds, int nfds)
{
	struct fake_mr *mr = NULL;
	struct stat st;
	int err;

	FAKE_CHECK(nfds == 1 && m->len > 0 && !(m->flags & ~MROC_MR_REG_KEEP_FILE));
	err = fake_check_memfd(fds[0], m->len, false);
	if (err)
		return err;
	for (int i = 0; i < FAKE_MAX_MRS && !mr; i++)
		if (!F.mrs[i].live && !F.mrs[i].anchor)
			mr = &F.mrs[i];
	if (!mr)
		return -EDQUOT;
	FAKE_CHECK(fstat(fds[0], &st) == 0);
	mr->map = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (mr->map == MAP_FAILED && errno == EPERM) {
		/* Sealed by an earlier registration: a copy of a live one's mapping, as mrocd. */
		const struct fake_mr *src = NULL;

		for (int i = 0; i < FAKE_MAX_MRS; i++)
			if ((F.mrs[i].live || F.mrs[i].anchor) && F.mrs[i].dev == st.st_dev &&
			    F.mrs[i].ino == st.st_ino && (!src || F.mrs[i].len > src->len))
				src = &F.mrs[i];
		if (!src)
			return -EPERM;
		mr->map = mremap(src->map, 0, m->len, MREMAP_MAYMOVE);
	} else if (mr->map != MAP_FAILED &&
		   fcntl(fds[0], F_ADD_SEALS, F_SEAL_FUTURE_WRITE)) {
		munmap(mr->map, m->len);	/* as mrocd: sealed against hole punching, or refused */
		return -EPERM;
	}
	FAKE_CHECK(mr->map != MAP_FAILED);
	mr->dev = st.st_dev;
	mr->ino = st.st_ino;
	mr->live = true;
	mr->keep = m->flags & MROC_MR_REG_KEEP_FILE;
	mr->len = m->len;
	mr->access = m->access;
	/* Keys the library cannot guess: a new one for every registration. */
	mr->lkey = 0x1000 + (uint32_t)(mr - F.mrs) + 0x100 * F.msgs[MROC_MSG_MR_REG];
	mr->rkey = 0xabc00000 | mr->lkey;
	m->lkey = mr->lkey;
	m->rkey = mr->rkey;
	return 0;
}

FAKE_FN int fake_mr_dereg(const struct mroc_msg_mr_dereg *m)
{
	F.last_dereg = m->lkey;
	for (int i = 0; i < FAKE_MAX_MRS; i++) {
		struct fake_mr *mr = &F.mrs[i];

		if (mr->live && mr->lkey == m->lkey) {
			mr->live = false;
			for (int j = 0; j < FAKE_MAX_MRS && mr->keep; j++)
				if ((F.mrs[j].live || F.mrs[j].anchor) && F.mrs[j].dev == mr->dev &&
				    F.mrs[j].ino == mr->ino)
					mr->keep = false;	/* another maps the file */
			mr->anchor = mr->keep;
			if (!mr->anchor)
				munmap(mr->map, mr->len);
			return 0;
		}
	}
	return -ENOENT;
}

/* Map the ring region and check it is laid out as abi.h says. */
FAKE_FN int fake_map_rings(struct fake_qp *q, const struct mroc_msg_qp_create *m, int fd)
{
	uint32_t sq_off, rq_off, cq_off;
	uint64_t len = mroc_shm_layout(m->sq_entries, m->rq_entries, m->cq_entries, &sq_off,
				       &rq_off, &cq_off);
	const struct mroc_shm_hdr *h;
	int err;

	FAKE_CHECK(m->region_len == len);
	err = fake_check_memfd(fd, len, true);
	if (err)
		return err;
	q->region = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	FAKE_CHECK(q->region != MAP_FAILED);
	q->len = len;
	/* As mrocd: the library must make no writable mapping of it after this. */
	FAKE_CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) == 0);
	h = (const struct mroc_shm_hdr *)q->region;
	FAKE_CHECK(h->magic == MROC_SHM_MAGIC && h->abi_version == MROC_ABI_VERSION);
	FAKE_CHECK(h->sq_entries == m->sq_entries && h->rq_entries == m->rq_entries &&
		   h->cq_entries == m->cq_entries);
	FAKE_CHECK(h->sq_off == sq_off && h->rq_off == rq_off && h->cq_off == cq_off);
	FAKE_CHECK(h->region_len == len);
	ring_view_init(&q->sq, q->region, sq_off, m->sq_entries, sizeof(struct mroc_sqe), false);
	ring_view_init(&q->rq, q->region, rq_off, m->rq_entries, sizeof(struct mroc_rqe), false);
	ring_view_init(&q->cq, q->region, cq_off, m->cq_entries, sizeof(struct mroc_cqe), true);
	/* A fresh region: every index and flag starts at 0. */
	FAKE_CHECK(q->sq.head == 0 && q->rq.head == 0 && q->cq.head == 0);
	FAKE_CHECK(q->sq.ctl->prod == 0 && q->cq.ctl->cons == 0 && q->cq.ctl->flags == 0);
	return 0;
}

FAKE_FN bool pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

FAKE_FN int fake_qp_create(struct mroc_msg_qp_create *m, int *fds, int nfds)
{
	struct fake_qp *q = NULL;
	int err;

	FAKE_CHECK(nfds == 3 && fd_is_eventfd(fds[1]) && fd_is_eventfd(fds[2]));
	FAKE_CHECK(pow2(m->sq_entries) && pow2(m->rq_entries) && pow2(m->cq_entries));
	FAKE_CHECK(m->sq_entries <= FAKE_SQ_MAX && m->rq_entries <= FAKE_RQ_MAX);
	FAKE_CHECK((uint64_t)m->cq_entries >= (uint64_t)m->sq_entries + m->rq_entries + 8);
	FAKE_CHECK(m->mode <= MROC_QP_ROCEV2 && m->paths <= 16);
	for (int i = 0; i < FAKE_MAX_QPS && !q; i++)
		if (!F.qps[i].live)
			q = &F.qps[i];
	if (!q)
		return -EDQUOT;
	memset(q, 0, sizeof(*q));
	err = fake_map_rings(q, m, fds[0]);
	if (err)
		return err;
	q->live = true;
	q->req = *m;
	q->qpn = 100 + (uint32_t)(q - F.qps) + 0x10 * F.msgs[MROC_MSG_QP_CREATE];
	q->cq_fd = fds[1];
	fds[1] = -1;
	q->doorbell = fds[2];
	fds[2] = -1;
	m->qpn = q->qpn;
	return 0;
}

FAKE_FN void fake_qp_free(struct fake_qp *q)
{
	munmap(q->region, q->len);
	close(q->cq_fd);
	close(q->doorbell);
	q->live = false;
}

FAKE_FN struct fake_qp *fake_qp_by_qpn(uint32_t qpn)
{
	for (int i = 0; i < FAKE_MAX_QPS; i++)
		if (F.qps[i].live && F.qps[i].qpn == qpn)
			return &F.qps[i];
	return NULL;
}

FAKE_FN int fake_handle(void *msg, size_t len, int *fds, int nfds)
{
	struct mroc_msg_hdr *h = msg;

	switch (h->type) {
	case MROC_MSG_HELLO:
		FAKE_CHECK(len == sizeof(struct mroc_msg_hello));
		return fake_hello(msg, fds, nfds);
	case MROC_MSG_MR_REG:
		FAKE_CHECK(len == sizeof(struct mroc_msg_mr_reg));
		return fake_mr_reg(msg, fds, nfds);
	case MROC_MSG_MR_DEREG:
		FAKE_CHECK(len == sizeof(struct mroc_msg_mr_dereg) && nfds == 0);
		return fake_mr_dereg(msg);
	case MROC_MSG_QP_CREATE:
		FAKE_CHECK(len == sizeof(struct mroc_msg_qp_create));
		return fake_qp_create(msg, fds, nfds);
	case MROC_MSG_QP_CONNECT:
		FAKE_CHECK(len == sizeof(struct mroc_msg_qp_connect) && nfds == 0);
		F.connect = *(struct mroc_msg_qp_connect *)msg;
		return fake_qp_by_qpn(F.connect.qpn) ? 0 : -ENOENT;
	case MROC_MSG_QP_LISTEN:
		FAKE_CHECK(len == sizeof(struct mroc_msg_qp_listen) && nfds == 0);
		F.listen = *(struct mroc_msg_qp_listen *)msg;
		return fake_qp_by_qpn(F.listen.qpn) ? 0 : -ENOENT;
	case MROC_MSG_QP_DESTROY: {
		struct fake_qp *q;

		FAKE_CHECK(len == sizeof(struct mroc_msg_qp_destroy) && nfds == 0);
		F.last_destroy = ((struct mroc_msg_qp_destroy *)msg)->qpn;
		q = fake_qp_by_qpn(F.last_destroy);
		if (!q)
			return -ENOENT;
		fake_qp_free(q);
		return 0;
	}
	}
	fake_error("fake mrocd: unknown message type %u", h->type);
	return -EBADMSG;
}

FAKE_FN int fake_recv(int fd, void *buf, size_t size, int *fds, int *nfds)
{
	char cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = { .iov_base = buf, .iov_len = size };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);

	*nfds = 0;
	if (n <= 0)
		return (int)n;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		int cnt = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));

		for (int i = 0; i < cnt && *nfds < 4; i++)
			memcpy(&fds[(*nfds)++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	}
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		fake_error("fake mrocd: truncated message");
	return (int)n;
}

/* Serve one client until it goes away (or the test stops the fake). */
FAKE_FN void fake_serve(int cfd)
{
	struct pollfd pfd[2] = { { .fd = cfd, .events = POLLIN }, { .fd = F.stopfd, .events = POLLIN } };

	F.cfd = cfd;
	for (;;) {
		uint8_t buf[MROC_MSG_MAX];
		struct mroc_msg_hdr *h = (struct mroc_msg_hdr *)buf;
		int fds[4], nfds, n, err;

		if (poll(pfd, 2, -1) < 0 || (pfd[1].revents & POLLIN))
			break;
		n = fake_recv(cfd, buf, sizeof(buf), fds, &nfds);
		if (n <= 0) {
			F.closed++;
			break;
		}
		if ((size_t)n < sizeof(*h) || h->len != (uint32_t)n || h->type == 0 ||
		    h->type >= FAKE_MSG_TYPES) {
			fake_error("fake mrocd: bad message (%d bytes)", n);
			break;
		}
		F.msgs[h->type]++;
		if (F.close_on == h->type) {
			F.close_on = 0;
			for (int i = 0; i < nfds; i++)
				close(fds[i]);
			break;
		}
		err = F.fail[h->type] ? F.fail[h->type] : fake_handle(buf, (size_t)n, fds, nfds);
		for (int i = 0; i < nfds; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		h->status = err;
		if (F.bad_seq_on == h->type) {
			F.bad_seq_on = 0;
			h->seq += 1;
		}
		if (send(cfd, buf, (size_t)n, MSG_NOSIGNAL) != n)
			break;
	}
	F.cfd = -1;
	close(cfd);
}

FAKE_FN void fake_forget_client(void)
{
	for (int i = 0; i < FAKE_MAX_QPS; i++)
		if (F.qps[i].live)
			fake_qp_free(&F.qps[i]);
	for (int i = 0; i < FAKE_MAX_MRS; i++)
		if (F.mrs[i].live) {
			munmap(F.mrs[i].map, F.mrs[i].len);
			F.mrs[i].live = false;
		}
	if (F.doorbell >= 0)
		close(F.doorbell);
	F.doorbell = -1;
}

FAKE_FN void *fake_thread(void *arg)
{
	struct pollfd pfd[2] = { { .fd = F.lfd, .events = POLLIN }, { .fd = F.stopfd, .events = POLLIN } };

	for (;;) {
		int cfd;

		if (poll(pfd, 2, -1) < 0 || (pfd[1].revents & POLLIN))
			break;
		cfd = accept4(F.lfd, NULL, NULL, SOCK_CLOEXEC);
		if (cfd < 0)
			continue;
		F.conns++;
		fake_serve(cfd);
		fake_forget_client();
	}
	return NULL;
}

/* Per-test setup: a fresh fake on a fresh socket. */
FAKE_FN int fake_start(void **state)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	memset(&F, 0, sizeof(F));
	F.doorbell = -1;
	F.cfd = -1;
	strcpy(F.dir, "/tmp/mroc-test-libmroc.XXXXXX");
	if (!mkdtemp(F.dir))
		return -1;
	snprintf(F.path, sizeof(F.path), "%s/mrocd.sock", F.dir);
	strcpy(sun.sun_path, F.path);
	F.lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	F.stopfd = eventfd(0, EFD_CLOEXEC);
	if (F.lfd < 0 || F.stopfd < 0 || bind(F.lfd, (struct sockaddr *)&sun, sizeof(sun)) ||
	    listen(F.lfd, 8))
		return -1;
	return pthread_create(&F.thr, NULL, fake_thread, NULL) ? -1 : 0;
}

/* Per-test teardown: stop the fake; fail if it found anything wrong. */
FAKE_FN int fake_stop(void **state)
{
	uint64_t one = 1;

	if (write(F.stopfd, &one, sizeof(one)) != sizeof(one))
		return -1;
	pthread_join(F.thr, NULL);
	close(F.lfd);
	close(F.stopfd);
	unlink(F.path);
	rmdir(F.dir);
	if (F.errors[0]) {
		fprintf(stderr, "%s", F.errors);
		return -1;
	}
	return 0;
}

FAKE_FN struct mroc_ctx *fake_open(void)
{
	struct mroc_ctx_opts opts = { .sz = sizeof(opts), .socket_path = F.path };

	return mroc_open(&opts);
}

/* ---- the daemon's data path, played by a test --------------------------------- */

FAKE_FN struct fake_qp *fake_qp_of(const struct mroc_qp *qp)
{
	return fake_qp_by_qpn(mroc_qp_num(qp));
}

FAKE_FN struct fake_mr *fake_mr_by_lkey(uint32_t lkey)
{
	for (int i = 0; i < FAKE_MAX_MRS; i++)
		if (F.mrs[i].live && F.mrs[i].lkey == lkey)
			return &F.mrs[i];
	return NULL;
}

FAKE_FN bool fake_take_sqe(struct fake_qp *q, struct mroc_sqe *e)
{
	if (ring_cons_avail(&q->sq) <= 0)
		return false;
	memcpy(e, ring_cons_slot(&q->sq, 0), sizeof(*e));
	ring_cons_release(&q->sq, 1);
	return true;
}

FAKE_FN bool fake_take_rqe(struct fake_qp *q, struct mroc_rqe *e)
{
	if (ring_cons_avail(&q->rq) <= 0)
		return false;
	memcpy(e, ring_cons_slot(&q->rq, 0), sizeof(*e));
	ring_cons_release(&q->rq, 1);
	return true;
}

/* Produce a completion as mrocd does: commit, then signal the fd if the client armed it. */
FAKE_FN bool fake_push_cqe(struct fake_qp *q, const struct mroc_cqe *c)
{
	if (ring_prod_space(&q->cq) <= 0)
		return false;
	memcpy(ring_prod_slot(&q->cq), c, sizeof(*c));
	ring_prod_commit(&q->cq, 1);
	if (ring_prod_take_flag(&q->cq, MROC_RING_ARMED)) {
		uint64_t one = 1;

		if (write(q->cq_fd, &one, sizeof(one)) != sizeof(one))
			return false;
	}
	return true;
}

FAKE_FN bool fake_push(struct fake_qp *q, uint8_t opcode, uint64_t wr_id, uint8_t status)
{
	struct mroc_cqe c = { .wr_id = wr_id, .qpn = q->qpn, .opcode = opcode, .status = status };

	return fake_push_cqe(q, &c);
}

/* Completions pushed from another thread after a delay. */
struct fake_later {
	pthread_t thr;
	struct fake_qp *q;
	int n;
	struct {
		int delay_ms;
		struct mroc_cqe c;
	} ev[4];
};

FAKE_FN void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

FAKE_FN void *fake_later_thread(void *arg)
{
	struct fake_later *l = arg;

	for (int i = 0; i < l->n; i++) {
		sleep_ms(l->ev[i].delay_ms);
		if (!fake_push_cqe(l->q, &l->ev[i].c))
			fake_error("fake mrocd: CQ full");
	}
	return NULL;
}

FAKE_FN void fake_later_add(struct fake_later *l, int delay_ms, uint8_t opcode, uint64_t wr_id)
{
	l->ev[l->n].delay_ms = delay_ms;
	l->ev[l->n].c = (struct mroc_cqe){ .wr_id = wr_id, .qpn = l->q->qpn, .opcode = opcode };
	l->n++;
}

FAKE_FN int fake_later_start(struct fake_later *l)
{
	return pthread_create(&l->thr, NULL, fake_later_thread, l);
}

FAKE_FN void fake_later_join(struct fake_later *l)
{
	pthread_join(l->thr, NULL);
}

FAKE_FN int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The print callback's messages, for tests that expect the library to say something. */
static unsigned int printed;
static char last_print[256];

FAKE_FN void count_print(enum mroc_print_level level, const char *fmt, va_list ap)
{
	printed++;
	vsnprintf(last_print, sizeof(last_print), fmt, ap);
}

#endif
