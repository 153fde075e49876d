// SPDX-License-Identifier: MIT
/*
 * A hostile tenant of mrocd for the end-to-end tests (test_hostile_tenant.sh):
 * it speaks the raw protocol of libclient/abi.h (libmroc would refuse to
 * misbehave) and attacks the shared rings, the control socket and the
 * daemon's shared tables, checking that each attack ends in an error for it
 * alone (an error reply, an error completion, or its own disconnection).
 *
 *   tenant_attack SOCKET rings      descriptors naming memory out of bounds
 *                                   (offset + length past 2^64, lengths of 2^32 - 1,
 *                                   key indices past the table, a RECV at a region's
 *                                   end), a header rewritten after QP_CREATE; then, each
 *                                   on a connection of its own, an RQ producer index far
 *                                   ahead, an SQ producer index moved back and a CQ
 *                                   consumer index ahead of the daemon's: disconnected
 *   tenant_attack SOCKET ctl        messages of bad lengths and types, header lengths
 *                                   that lie, a registered memfd shrunk, too many fds (and fds on messages that take
 *                                   none), fds of the wrong kinds (a directory, /dev/zero,
 *                                   an O_PATH fd, a socket, an eventfd as memory, a memfd
 *                                   as an eventfd), out-of-range sizes, modes, flags,
 *                                   families, other QPNs and keys: each refused, and the
 *                                   connection still answers; then 40 clients that die
 *                                   in the middle of a QP_CREATE
 *   tenant_attack SOCKET peers N NET STOPFILE
 *                                   N QPs, each connecting to an address of its own
 *                                   (NET.x.y: addresses nobody answers): prints
 *                                   "connected=K refused=R error=E" (E: the first
 *                                   refusal's errno), then holds them until STOPFILE
 *                                   exists or the daemon hangs up (at most 120 s)
 *   tenant_attack SOCKET connect ADDR
 *                                   one QP connecting to ADDR: prints "status=S"
 *   tenant_attack SOCKET listen N SERVICE STOPFILE
 *                                   N QPs, each listening on a service of its own
 *                                   (SERVICE + i): prints "listening=K refused=R error=E",
 *                                   then holds them as peers does
 *   tenant_attack SOCKET flood N SECONDS
 *                                   one QP, then QP_LISTEN on it (a worker call each)
 *                                   in a loop, N times or for SECONDS: prints
 *                                   "served=K seconds=T errors=E"
 *   tenant_attack SOCKET churn N [nohello]
 *                                   N clients one after the other: connect, HELLO
 *                                   (none with nohello), hang up; prints "churned=K"
 *
 * rings and ctl exit 0 when the daemon behaved, 1 otherwise; peers, connect and
 * listen only report (exit 1 if the daemon stopped answering).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"
#include "mroc/mroc.h"
#include "ring.h"

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "tenant_attack: FAIL: " __VA_ARGS__);	\
			fprintf(stderr, "\n");				\
			exit(1);					\
		}							\
	} while (0)

static const char *path;
static int sock = -1;
static uint32_t seq;

static void connect_daemon(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (sock >= 0)
		close(sock);
	CHECK(strlen(path) < sizeof(sa.sun_path), "socket path too long");
	strcpy(sa.sun_path, path);
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECK(sock >= 0 && !connect(sock, (struct sockaddr *)&sa, sizeof(sa)), "connect %s", path);
}

/* Send len bytes (the header's len as given) with nfds fds; the reply's status, -EPIPE if none. */
static int raw_request(const void *msg, size_t len, const int *fds, int nfds, void *reply)
{
	union {
		struct cmsghdr align;
		char b[CMSG_SPACE(16 * sizeof(int))];
	} cbuf;
	struct iovec iov = { (void *)msg, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct pollfd p = { .fd = sock, .events = POLLIN };
	ssize_t n;

	if (nfds) {
		struct cmsghdr *cm;

		mh.msg_control = cbuf.b;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) != (ssize_t)len)
		return -errno;
	/* Bounded: a daemon that hangs fails the test instead of holding it. */
	if (poll(&p, 1, 10000) != 1)
		return -ETIMEDOUT;
	n = recv(sock, reply, MROC_MSG_MAX, 0);
	if (n < (ssize_t)sizeof(struct mroc_msg_hdr))
		return -EPIPE;
	return ((struct mroc_msg_hdr *)reply)->status;
}

static int request(void *msg, size_t len, const int *fds, int nfds, void *reply)
{
	struct mroc_msg_hdr *h = msg;

	h->seq = ++seq;
	h->len = (uint32_t)len;
	return raw_request(msg, len, fds, nfds, reply);
}

static int hello(void)
{
	uint8_t reply[MROC_MSG_MAX];
	struct mroc_msg_hello m = { .h.type = MROC_MSG_HELLO, .abi_version = MROC_ABI_VERSION };
	int db = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), err;

	err = request(&m, sizeof(m), &db, 1, reply);
	close(db);
	return err;
}

/* Sealed against shrinking and populated, as libmroc leaves it. */
static int memfd_of(size_t len)
{
	int fd = memfd_create("attack", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void *m;

	CHECK(fd >= 0 && !ftruncate(fd, (off_t)len) && !fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK),
	      "memfd");
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	CHECK(m != MAP_FAILED, "mmap");
	munmap(m, len);
	return fd;
}

struct qp {
	void *region;
	uint64_t len;
	struct mroc_shm_hdr *hdr;
	struct ring_view sq, rq, cq;
	uint32_t qpn;
	int doorbell, cqfd;
};

#define SQ_N	16
#define RQ_N	16
#define CQ_N	64

/* QP_CREATE (16/16/64): its status; q filled on success. */
static int create_qp(struct qp *q)
{
	uint8_t reply[MROC_MSG_MAX];
	uint32_t sq_off, rq_off, cq_off;
	uint64_t len = mroc_shm_layout(SQ_N, RQ_N, CQ_N, &sq_off, &rq_off, &cq_off);
	int rfd = memfd_of(len), fds[3], err;
	struct mroc_msg_qp_create m = { .h.type = MROC_MSG_QP_CREATE, .sq_entries = SQ_N,
					.rq_entries = RQ_N, .cq_entries = CQ_N, .region_len = len };

	q->region = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
	CHECK(q->region != MAP_FAILED, "mmap");
	q->len = len;
	q->hdr = q->region;
	*q->hdr = (struct mroc_shm_hdr){
		.magic = MROC_SHM_MAGIC, .abi_version = MROC_ABI_VERSION, .sq_entries = SQ_N,
		.rq_entries = RQ_N, .cq_entries = CQ_N, .sq_off = sq_off, .rq_off = rq_off,
		.cq_off = cq_off, .region_len = len,
	};
	q->cqfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	q->doorbell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	fds[0] = rfd;
	fds[1] = q->cqfd;
	fds[2] = q->doorbell;
	err = request(&m, sizeof(m), fds, 3, reply);
	close(rfd);
	if (err) {
		munmap(q->region, len);
		close(q->cqfd);
		close(q->doorbell);
		return err;
	}
	q->qpn = ((struct mroc_msg_qp_create *)reply)->qpn;
	ring_view_init(&q->sq, q->region, sq_off, SQ_N, sizeof(struct mroc_sqe), true);
	ring_view_init(&q->rq, q->region, rq_off, RQ_N, sizeof(struct mroc_rqe), true);
	ring_view_init(&q->cq, q->region, cq_off, CQ_N, sizeof(struct mroc_cqe), false);
	return 0;
}

static void ring_doorbell(struct qp *q)
{
	uint64_t one = 1;

	CHECK(write(q->doorbell, &one, sizeof(one)) == sizeof(one), "doorbell");
}

/* Error completions for n work requests just posted, none a success. */
static void expect_errors(struct qp *q, int n, const char *what)
{
	int got = 0;

	ring_doorbell(q);
	for (int tries = 0; tries < 500 && got < n; tries++) {
		int64_t k = ring_cons_avail(&q->cq);

		CHECK(k >= 0, "CQ indices");
		for (int64_t i = 0; i < k; i++) {
			const struct mroc_cqe *e = ring_cons_slot(&q->cq, (uint32_t)i);

			CHECK(e->status != MROC_WC_SUCCESS, "%s: work request %llu succeeded", what,
			      (unsigned long long)e->wr_id);
		}
		got += (int)k;
		if (k > 0)
			ring_cons_release(&q->cq, (uint32_t)k);
		usleep(10000);
	}
	CHECK(got == n, "%s: %d of %d error completions", what, got, n);
}

/* The daemon hangs up on us within 5 s (and answers nothing before). */
static void expect_disconnect(const char *what)
{
	struct pollfd p = { .fd = sock, .events = POLLIN };
	char b[MROC_MSG_MAX];

	CHECK(poll(&p, 1, 5000) == 1 && recv(sock, b, sizeof(b), 0) == 0,
	      "%s: not disconnected", what);
}

static void post_sqe(struct qp *q, const struct mroc_sqe *s)
{
	CHECK(ring_prod_space(&q->sq) > 0, "SQ full");
	memcpy(ring_prod_slot(&q->sq), s, sizeof(*s));
	ring_prod_commit(&q->sq, 1);
}

static void post_rqe(struct qp *q, const struct mroc_rqe *r)
{
	CHECK(ring_prod_space(&q->rq) > 0, "RQ full");
	memcpy(ring_prod_slot(&q->rq), r, sizeof(*r));
	ring_prod_commit(&q->rq, 1);
}

#define REGION	65536

static uint32_t reg_region(void)
{
	uint8_t reply[MROC_MSG_MAX];
	struct mroc_msg_mr_reg mr = { .h.type = MROC_MSG_MR_REG, .len = REGION,
				      .access = MROC_ACCESS_LOCAL_WRITE | MROC_ACCESS_REMOTE_WRITE |
						MROC_ACCESS_REMOTE_READ | MROC_ACCESS_REMOTE_ATOMIC };
	int fd = memfd_of(REGION);

	CHECK(request(&mr, sizeof(mr), &fd, 1, reply) == 0, "MR_REG refused");
	close(fd);
	return ((struct mroc_msg_mr_reg *)reply)->lkey;
}

/* ---- rings ---------------------------------------------------------------------- */

static int rings(void)
{
	struct qp q;
	uint32_t lkey;
	int n = 0;

	connect_daemon();
	CHECK(hello() == 0, "HELLO refused");
	lkey = reg_region();
	CHECK(create_qp(&q) == 0, "QP_CREATE refused");

	/* Descriptors naming memory they may not (the QP is not connected: errors either way,
	 * but the daemon must get there without touching anything). */
	const struct mroc_sqe bad_sq[] = {
		{ .wr_id = 1, .opcode = MROC_WR_WRITE, .lkey = lkey, .laddr = UINT64_MAX - 8,
		  .len = 16 },					/* offset + length wraps */
		{ .wr_id = 2, .opcode = MROC_WR_SEND, .lkey = lkey, .laddr = 0, .len = UINT32_MAX },
		{ .wr_id = 3, .opcode = MROC_WR_READ, .lkey = lkey | 0xfff, .len = 8 },
		{ .wr_id = 4, .opcode = MROC_WR_SEND, .lkey = lkey, .laddr = REGION, .len = 1 },
		{ .wr_id = 5, .opcode = MROC_WR_ATOMIC_CMP_SWP, .lkey = lkey, .laddr = REGION - 4,
		  .len = 8 },
		{ .wr_id = 6, .opcode = 0xff, .flags = 0xff, .lkey = lkey, .len = 8 },
	};
	for (size_t i = 0; i < sizeof(bad_sq) / sizeof(bad_sq[0]); i++, n++)
		post_sqe(&q, &bad_sq[i]);
	expect_errors(&q, n, "SQ descriptors out of bounds");
	const struct mroc_rqe bad_rq[] = {
		{ .wr_id = 11, .lkey = lkey, .laddr = UINT64_MAX - 8, .len = 16 },
		{ .wr_id = 12, .lkey = lkey, .laddr = 0, .len = UINT32_MAX },
		{ .wr_id = 13, .lkey = lkey, .laddr = REGION, .len = 1 },
		{ .wr_id = 14, .lkey = 0xffffffffu, .len = 1 },
	};
	n = 0;
	for (size_t i = 0; i < sizeof(bad_rq) / sizeof(bad_rq[0]); i++, n++)
		post_rqe(&q, &bad_rq[i]);
	expect_errors(&q, n, "RQ descriptors out of bounds");

	/* The header rewritten after QP_CREATE: the daemon keeps its own sizes. */
	q.hdr->sq_entries = q.hdr->rq_entries = q.hdr->cq_entries = 1u << 30;
	q.hdr->sq_off = q.hdr->rq_off = q.hdr->cq_off = 0x7fffffff;
	q.hdr->region_len = UINT64_MAX;
	post_sqe(&q, &(struct mroc_sqe){ .wr_id = 21, .opcode = 77 });
	expect_errors(&q, 1, "after the header was rewritten");
	printf("tenant_attack: out-of-bounds descriptors and a rewritten header: error completions\n");

	/* Each on a connection of its own: indices no consumer or producer could have. */
	connect_daemon();
	CHECK(hello() == 0, "HELLO refused");
	CHECK(create_qp(&q) == 0, "QP_CREATE refused");
	atomic_store((_Atomic uint32_t *)&q.rq.ctl->prod, q.rq.head + (1u << 31));
	ring_doorbell(&q);
	expect_disconnect("an RQ producer index 2^31 ahead");

	connect_daemon();
	CHECK(hello() == 0, "HELLO refused");
	CHECK(create_qp(&q) == 0, "QP_CREATE refused");
	post_sqe(&q, &(struct mroc_sqe){ .wr_id = 31, .opcode = 77 });
	expect_errors(&q, 1, "a bad opcode");
	atomic_store((_Atomic uint32_t *)&q.sq.ctl->prod, q.sq.head - 1);
	ring_doorbell(&q);
	expect_disconnect("an SQ producer index moved back");

	connect_daemon();
	CHECK(hello() == 0, "HELLO refused");
	CHECK(create_qp(&q) == 0, "QP_CREATE refused");
	atomic_store((_Atomic uint32_t *)&q.cq.ctl->cons, 1000);
	post_sqe(&q, &(struct mroc_sqe){ .wr_id = 41, .opcode = 77 });
	ring_doorbell(&q);
	expect_disconnect("a CQ consumer index ahead of the producer's");
	printf("tenant_attack: impossible ring indices: disconnected\n");
	return 0;
}

/* ---- ctl ------------------------------------------------------------------------- */

/* The connection still answers an ordinary request (MR_DEREG of no region: ENOENT). */
static void still_answers(const char *after)
{
	uint8_t reply[MROC_MSG_MAX];
	struct mroc_msg_mr_dereg m = { .h.type = MROC_MSG_MR_DEREG, .lkey = 0x12345 };

	CHECK(request(&m, sizeof(m), NULL, 0, reply) == -ENOENT, "no answer after %s", after);
}

static void expect_status(int got, int want, const char *what)
{
	CHECK(got == want, "%s: status %d (%s), want %d (%s)", what, got, strerror(-got), want,
	      strerror(-want));
}

static int ctl(void)
{
	uint8_t big[MROC_MSG_MAX * 2] = { 0 }, reply[MROC_MSG_MAX];
	struct mroc_msg_hdr *h = (void *)big;
	int fds[16], ev, mfd, dir, zero, opath, sv[2];

	connect_daemon();
	CHECK(hello() == 0, "HELLO refused");
	/* Lengths: short, one over, the largest the daemon takes plus one, beyond its buffer. */
	static const size_t lens[] = { 1, 15, 17, MROC_MSG_MAX + 1, 200 };
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		memset(big, 0, sizeof(big));
		h->type = MROC_MSG_MR_DEREG;
		expect_status(request(big, lens[i], NULL, 0, reply), -EBADMSG, "a bad length");
	}
	/* A header length that lies, types out of range. */
	memset(big, 0, sizeof(big));
	*h = (struct mroc_msg_hdr){ .type = MROC_MSG_MR_DEREG, .len = 4096 };
	expect_status(raw_request(big, sizeof(struct mroc_msg_mr_dereg), NULL, 0, reply), -EBADMSG,
		      "a header length that lies");
	static const uint32_t types[] = { 0, MROC_MSG_QP_DESTROY + 1, 0x80000000u, UINT32_MAX };
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		h->type = types[i];
		expect_status(request(big, sizeof(struct mroc_msg_qp_destroy), NULL, 0, reply),
			      -EBADMSG, "a bad type");
	}
	still_answers("bad lengths and types");

	/* Four fds on a message that takes none: closed, ENOENT as without them. */
	for (int i = 0; i < 4; i++)
		fds[i] = eventfd(0, EFD_CLOEXEC);
	struct mroc_msg_mr_dereg dr = { .h.type = MROC_MSG_MR_DEREG, .lkey = 7 };
	expect_status(request(&dr, sizeof(dr), fds, 4, reply), -ENOENT, "fds on MR_DEREG");
	for (int i = 0; i < 4; i++)
		close(fds[i]);

	/* Fds of the wrong kinds as memory. */
	ev = eventfd(0, EFD_CLOEXEC);
	dir = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	zero = open("/dev/zero", O_RDWR | O_CLOEXEC);
	opath = open("/dev/zero", O_PATH | O_CLOEXEC);
	CHECK(ev >= 0 && dir >= 0 && zero >= 0 && opath >= 0 &&
	      !socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), "fds");
	struct mroc_msg_mr_reg mr = { .h.type = MROC_MSG_MR_REG, .len = 4096,
				      .access = MROC_ACCESS_LOCAL_WRITE };
	const int not_memory[] = { ev, dir, zero, opath, sv[0], sock };
	for (size_t i = 0; i < sizeof(not_memory) / sizeof(not_memory[0]); i++) {
		int err = request(&mr, sizeof(mr), &not_memory[i], 1, reply);

		CHECK(err < 0 && err != -EPIPE && err != -ETIMEDOUT,
		      "fd %zu of the wrong kind registered as memory (%d)", i, err);
	}
	still_answers("fds of the wrong kinds");
	/* Region sizes, access bits, flags. */
	mfd = memfd_of(8192);
	static const uint64_t mr_lens[] = { 0, 8193, UINT64_MAX, UINT64_MAX - 4095, 1ull << 63 };
	for (size_t i = 0; i < sizeof(mr_lens) / sizeof(mr_lens[0]); i++) {
		mr.len = mr_lens[i];
		int err = request(&mr, sizeof(mr), &mfd, 1, reply);

		CHECK(err == -EINVAL || err == -EDQUOT, "MR_REG of %llu bytes: %d",
		      (unsigned long long)mr_lens[i], err);
	}
	/* Registered, then shrunk (SIGBUS at mrocd's next access): the seal refuses it. */
	mr.len = 8192;
	expect_status(request(&mr, sizeof(mr), &mfd, 1, reply), 0, "MR_REG");
	CHECK(ftruncate(mfd, 4096) == -1 && errno == EPERM, "shrank a registered memfd");
	dr.lkey = ((struct mroc_msg_mr_reg *)reply)->lkey;
	expect_status(request(&dr, sizeof(dr), NULL, 0, reply), 0, "MR_DEREG");
	mr.len = 4096;
	mr.access = 0x80;
	expect_status(request(&mr, sizeof(mr), &mfd, 1, reply), -EINVAL, "unknown access bits");
	mr.access = MROC_ACCESS_LOCAL_WRITE;
	mr.flags = 0x2;
	expect_status(request(&mr, sizeof(mr), &mfd, 1, reply), -EINVAL, "unknown MR_REG flags");
	mr.flags = 0;
	expect_status(request(&mr, sizeof(mr), NULL, 0, reply), -EINVAL, "MR_REG without its fd");
	/* Eight fds: more than any message carries (the daemon drops the connection). */
	for (int i = 0; i < 8; i++)
		fds[i] = mfd;
	int err = request(&mr, sizeof(mr), fds, 8, reply);
	CHECK(err == -EPIPE || err == -EINVAL, "MR_REG with eight fds: %d", err);
	connect_daemon();
	CHECK(hello() == 0, "HELLO refused after eight fds");

	/* QP_CREATE: sizes, modes, paths; a memfd as an eventfd. */
	uint32_t sq_off, rq_off, cq_off;
	uint64_t rlen = mroc_shm_layout(SQ_N, RQ_N, CQ_N, &sq_off, &rq_off, &cq_off);
	struct mroc_msg_qp_create qc = { .h.type = MROC_MSG_QP_CREATE, .sq_entries = SQ_N,
					 .rq_entries = RQ_N, .cq_entries = CQ_N, .region_len = rlen };
	int rfd = memfd_of(rlen), qfds[3] = { rfd, mfd, eventfd(0, EFD_CLOEXEC) };
	expect_status(request(&qc, sizeof(qc), qfds, 3, reply), -EBADFD, "a memfd as an eventfd");
	qfds[1] = eventfd(0, EFD_CLOEXEC);
	qfds[0] = qfds[1];
	err = request(&qc, sizeof(qc), qfds, 3, reply);
	CHECK(err < 0 && err != -EPIPE, "an eventfd as the ring memfd: %d", err);
	qfds[0] = rfd;
	struct mroc_msg_qp_create bad_qc[] = { qc, qc, qc, qc, qc, qc, qc };
	bad_qc[0].sq_entries = 0;
	bad_qc[1].rq_entries = 3;
	bad_qc[2].cq_entries = 1u << 31;
	bad_qc[3].sq_entries = 1u << 31;
	bad_qc[4].mode = 7;
	bad_qc[5].paths = 200;
	bad_qc[6].region_len = UINT64_MAX;
	for (size_t i = 0; i < sizeof(bad_qc) / sizeof(bad_qc[0]); i++)
		expect_status(request(&bad_qc[i], sizeof(qc), qfds, 3, reply), -EINVAL,
			      "QP_CREATE out of range");
	expect_status(request(&qc, sizeof(qc), qfds, 2, reply), -EINVAL, "QP_CREATE with 2 fds");

	/* QPNs and keys that are not ours. */
	struct mroc_msg_qp_connect cn = { .h.type = MROC_MSG_QP_CONNECT, .qpn = 1,
					  .family = AF_INET, .addr = { 192, 0, 2, 9 },
					  .service_id = 4242 };
	for (uint32_t qpn = 0; qpn < 64; qpn++) {
		cn.qpn = qpn;
		expect_status(request(&cn, sizeof(cn), NULL, 0, reply), -ENOENT,
			      "QP_CONNECT of a QP not ours");
	}
	cn.family = 99;
	expect_status(request(&cn, sizeof(cn), NULL, 0, reply), -EAFNOSUPPORT, "family 99");
	struct mroc_msg_qp_listen ls = { .h.type = MROC_MSG_QP_LISTEN, .service_id = 4243 };
	struct mroc_msg_qp_destroy ds = { .h.type = MROC_MSG_QP_DESTROY };
	for (uint32_t qpn = 0; qpn < 64; qpn++) {
		ls.qpn = ds.qpn = qpn;
		expect_status(request(&ls, sizeof(ls), NULL, 0, reply), -ENOENT,
			      "QP_LISTEN of a QP not ours");
		expect_status(request(&ds, sizeof(ds), NULL, 0, reply), -ENOENT,
			      "QP_DESTROY of a QP not ours");
	}
	for (uint32_t k = 1; k < 64; k++) {
		dr.lkey = k * 0x1001;
		expect_status(request(&dr, sizeof(dr), NULL, 0, reply), -ENOENT,
			      "MR_DEREG of a region not ours");
	}
	still_answers("QPNs and keys not ours");
	printf("tenant_attack: bad control messages and fds refused, the connection answers\n");

	/* Clients that die in the middle of a request: the daemon carries on. */
	for (int i = 0; i < 40; i++) {
		pid_t pid = fork();

		CHECK(pid >= 0, "fork");
		if (!pid) {
			connect_daemon();
			if (hello())
				_exit(1);
			qfds[1] = eventfd(0, EFD_CLOEXEC);
			qfds[2] = eventfd(0, EFD_CLOEXEC);
			qc.h.seq = 1;
			qc.h.len = sizeof(qc);
			/* Sent, then gone before the reply (or while the daemon maps the rings). */
			struct iovec iov = { &qc, sizeof(qc) };
			union {
				struct cmsghdr a;
				char b[CMSG_SPACE(3 * sizeof(int))];
			} cb;
			struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
					     .msg_control = cb.b, .msg_controllen = sizeof(cb.b) };
			struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(3 * sizeof(int));
			memcpy(CMSG_DATA(cm), qfds, sizeof(qfds));
			sendmsg(sock, &mh, MSG_NOSIGNAL);
			if (i & 1)
				usleep((useconds_t)(i * 50));
			_exit(0);
		}
		CHECK(waitpid(pid, NULL, 0) == pid, "waitpid");
	}
	connect_daemon();
	CHECK(hello() == 0, "HELLO refused after 40 clients died mid-request");
	still_answers("40 clients died mid-request");
	printf("tenant_attack: 40 clients that died mid-request: the daemon answers\n");
	return 0;
}

/* ---- peers, connect --------------------------------------------------------------- */

static int qp_connect(uint32_t qpn, const uint8_t addr[4])
{
	uint8_t reply[MROC_MSG_MAX];
	struct mroc_msg_qp_connect m = { .h.type = MROC_MSG_QP_CONNECT, .qpn = qpn,
					 .family = AF_INET, .service_id = 4242 };

	memcpy(m.addr, addr, 4);
	return request(&m, sizeof(m), NULL, 0, reply);
}

/* Until stopfile exists, the daemon hangs up, or 120 s passed. */
static void hold(const char *stopfile)
{
	for (int i = 0; i < 1200 && access(stopfile, F_OK); i++) {
		struct pollfd p = { .fd = sock, .events = POLLIN };

		if (poll(&p, 1, 100) != 0)
			return;
	}
}

static int peers(int n, const char *net, const char *stopfile)
{
	int connected = 0, refused = 0, first = 0, a, b;
	struct qp q;

	CHECK(sscanf(net, "%d.%d", &a, &b) == 2, "NET: two octets, as 10.97");
	connect_daemon();
	CHECK(hello() == 0, "HELLO refused");
	for (int i = 0; i < n; i++) {
		uint8_t addr[4] = { (uint8_t)a, (uint8_t)b, (uint8_t)(i / 250), (uint8_t)(i % 250 + 1) };
		int err = create_qp(&q);

		if (!err)
			err = qp_connect(q.qpn, addr);
		CHECK(err != -EPIPE && err != -ETIMEDOUT, "the daemon stopped answering");
		if (!err) {
			connected++;
			continue;
		}
		refused++;
		if (!first)
			first = err;
	}
	printf("connected=%d refused=%d error=%d\n", connected, refused, first);
	fflush(stdout);
	hold(stopfile);
	return 0;
}

/* N QPs, each listening on a service of its own (base + i). */
static int listen_many(int n, uint64_t base, const char *stopfile)
{
	int listening = 0, refused = 0, first = 0;
	uint8_t reply[MROC_MSG_MAX];
	struct qp q;

	connect_daemon();
	CHECK(hello() == 0, "HELLO refused");
	for (int i = 0; i < n; i++) {
		struct mroc_msg_qp_listen m = { .h.type = MROC_MSG_QP_LISTEN,
						.service_id = base + (uint64_t)i };
		int err = create_qp(&q);

		if (!err) {
			m.qpn = q.qpn;
			err = request(&m, sizeof(m), NULL, 0, reply);
		}
		CHECK(err != -EPIPE && err != -ETIMEDOUT, "the daemon stopped answering");
		if (!err) {
			listening++;
			continue;
		}
		refused++;
		if (!first)
			first = err;
	}
	printf("listening=%d refused=%d error=%d\n", listening, refused, first);
	fflush(stdout);
	hold(stopfile);
	return 0;
}

static int connect_one(const char *addr)
{
	uint8_t a[4];
	struct qp q;
	int err;

	CHECK(inet_pton(AF_INET, addr, a) == 1, "address %s", addr);
	connect_daemon();
	CHECK(hello() == 0, "HELLO refused");
	err = create_qp(&q);
	if (!err)
		err = qp_connect(q.qpn, a);
	CHECK(err != -EPIPE && err != -ETIMEDOUT, "the daemon stopped answering");
	printf("status=%d\n", err);
	return 0;
}

/* ---- control-request floods ------------------------------------------------------ */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int flood(long n, double seconds)
{
	struct mroc_msg_qp_listen m = { .h.type = MROC_MSG_QP_LISTEN, .service_id = 0x4f00d };
	uint8_t reply[MROC_MSG_MAX];
	long served = 0, errors = 0;
	double t0, t;
	struct qp q;

	connect_daemon();
	CHECK(hello() == 0, "HELLO refused");
	CHECK(create_qp(&q) == 0, "QP_CREATE refused");
	m.qpn = q.qpn;
	t0 = now_s();
	do {
		int err = request(&m, sizeof(m), NULL, 0, reply);

		CHECK(err != -EPIPE && err != -ETIMEDOUT, "the daemon stopped answering");
		if (err)
			errors++;
		else
			served++;
		t = now_s() - t0;
	} while (served + errors < n && t < seconds);
	printf("served=%ld seconds=%.3f errors=%ld\n", served, t, errors);
	return 0;
}

static int churn(int n, bool say_hello)
{
	int done = 0;

	for (int i = 0; i < n; i++) {
		connect_daemon();
		if (!say_hello || hello() == 0)
			done++;
		close(sock);
		sock = -1;
	}
	printf("churned=%d\n", done);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		goto usage;
	path = argv[1];
	if (argc == 3 && !strcmp(argv[2], "rings"))
		return rings();
	if (argc == 3 && !strcmp(argv[2], "ctl"))
		return ctl();
	if (argc == 6 && !strcmp(argv[2], "peers"))
		return peers(atoi(argv[3]), argv[4], argv[5]);
	if (argc == 4 && !strcmp(argv[2], "connect"))
		return connect_one(argv[3]);
	if (argc == 6 && !strcmp(argv[2], "listen"))
		return listen_many(atoi(argv[3]), strtoull(argv[4], NULL, 0), argv[5]);
	if (argc == 5 && !strcmp(argv[2], "flood"))
		return flood(atol(argv[3]), atof(argv[4]));
	if ((argc == 4 || (argc == 5 && !strcmp(argv[4], "nohello"))) && !strcmp(argv[2], "churn"))
		return churn(atoi(argv[3]), argc == 4);
usage:
	fprintf(stderr, "usage: tenant_attack SOCKET rings | ctl | peers N NET STOPFILE | "
			"connect ADDR | listen N SERVICE STOPFILE | flood N SECONDS | churn N [nohello]\n");
	return 2;
}
