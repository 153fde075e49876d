// SPDX-License-Identifier: MIT
/*
 * A misbehaving libmroc client for the end-to-end tests: it speaks the raw
 * protocol of libclient/abi.h (no libmroc, which would refuse to misbehave)
 * and checks that mrocd answers bad requests with errors, bad work requests
 * with error completions, and corrupted ring indices by disconnecting it —
 * while staying up for everyone else.
 *
 *   evil_client SOCKET              garbage requests, bad work requests, corrupted rings
 *   evil_client SOCKET stall SECS   hostile fds: a pipe, a socket or a semaphore eventfd
 *                                   refused; then, for SECS, a blocking eventfd at its
 *                                   maximum as the completion channel and the context's
 *                                   doorbell drained behind the daemon's back (which
 *                                   loses only its own wake-ups: the QP's doorbell is
 *                                   rung too), while error completions keep coming
 *                                   (the worker must not stall)
 *   evil_client SOCKET limits       reserved service ids and addresses that are not
 *                                   unicast refused (loopback too, by default)
 *   evil_client SOCKET users N      N clients that complete HELLO, one after another:
 *                                   prints how many were accepted and the error after
 *   evil_client SOCKET idle N SECS  N connections that never speak, held SECS: prints
 *                                   how many the daemon closed within 1 s (refused),
 *                                   later (cut) and not at all (open)
 *   evil_client ADMIN idle-admin N SECS   the same on the admin socket
 *
 * Exit 0 when the daemon behaved, 1 otherwise (users and idle only report).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <arpa/inet.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/falloc.h>

#include "abi.h"
#include "mroc/mroc.h"
#include "ring.h"

static int sock;
static uint32_t seq;

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "evil_client: FAIL: " __VA_ARGS__);	\
			fprintf(stderr, "\n");				\
			exit(1);					\
		}							\
	} while (0)

/* One request with fds, one reply; returns the reply's status. */
static int request(void *msg, size_t len, const int *fds, int nfds, void *reply)
{
	union {
		struct cmsghdr align;
		char b[CMSG_SPACE(4 * sizeof(int))];
	} cbuf;
	struct mroc_msg_hdr *h = msg;
	struct iovec iov = { msg, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	h->seq = ++seq;
	h->len = (uint32_t)len;
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
	if (sendmsg(sock, &mh, 0) != (ssize_t)len)
		return -errno;
	n = recv(sock, reply, MROC_MSG_MAX, 0);
	if (n < (ssize_t)sizeof(struct mroc_msg_hdr))
		return -EPIPE;
	return ((struct mroc_msg_hdr *)reply)->status;
}

/* Sealed against shrinking; with populate, every page allocated (as libmroc leaves it). */
static int memfd_of(size_t len, bool populate)
{
	int fd = memfd_create("evil", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void *m;

	CHECK(fd >= 0 && !ftruncate(fd, (off_t)len) && !fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK),
	      "memfd");
	if (populate) {
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
		CHECK(m != MAP_FAILED, "mmap");
		munmap(m, len);
	}
	return fd;
}

static int sealed_memfd(size_t len)
{
	return memfd_of(len, true);
}

static int open_unix(const char *path, int type)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	CHECK(strlen(path) < sizeof(sa.sun_path), "socket path too long");
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof(sa)), "connect %s", path);
	return fd;
}

static void connect_to(const char *path)
{
	sock = open_unix(path, SOCK_SEQPACKET);
}

static int garbage(void)
{
	uint8_t reply[MROC_MSG_MAX];
	uint32_t sq_off, rq_off, cq_off, lkey;
	struct ring_view sq, cq;
	uint64_t rlen;
	void *region;
	int ret, fds[3], db, rfd, cqfd, got = 0;

	/* Before HELLO, nothing is allowed. */
	struct mroc_msg_mr_dereg early = { .h.type = MROC_MSG_MR_DEREG, .lkey = 1 };
	CHECK(request(&early, sizeof(early), NULL, 0, reply) == -EPROTO, "request before HELLO");
	/* A message of the wrong size. */
	struct mroc_msg_hello shorty = { .h.type = MROC_MSG_HELLO };
	CHECK(request(&shorty, 20, NULL, 0, reply) == -EBADMSG, "short message accepted");
	/* A HELLO of another ABI version. */
	db = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct mroc_msg_hello hello = { .h.type = MROC_MSG_HELLO, .abi_version = 99 };
	CHECK(request(&hello, sizeof(hello), &db, 1, reply) == -EPROTO, "wrong ABI accepted");
	hello.abi_version = MROC_ABI_VERSION;
	CHECK(request(&hello, sizeof(hello), &db, 1, reply) == 0, "HELLO refused");

	/* Unsealed memory would let us SIGBUS the daemon: refused. */
	int bad = memfd_create("evil-unsealed", MFD_CLOEXEC);
	CHECK(bad >= 0 && !ftruncate(bad, 4096), "memfd");
	struct mroc_msg_mr_reg mr = { .h.type = MROC_MSG_MR_REG, .len = 4096,
				      .access = MROC_ACCESS_LOCAL_WRITE };
	CHECK(request(&mr, sizeof(mr), &bad, 1, reply) == -EPERM, "unsealed memfd accepted");
	/* Longer than the file: refused. */
	int small = sealed_memfd(4096);
	mr.len = 1 << 20;
	CHECK(request(&mr, sizeof(mr), &small, 1, reply) == -EINVAL, "region beyond the file");
	/*
	 * Memory we never allocated: mrocd's mlock would allocate it, charged to mrocd's
	 * memory cgroup, not ours: refused (ENODATA), also with one page of 16 missing.
	 */
	int sparse = memfd_of(16 * 4096, false);
	mr.len = 16 * 4096;
	CHECK(request(&mr, sizeof(mr), &sparse, 1, reply) == -ENODATA, "unallocated memfd pinned");
	void *half = mmap(NULL, 16 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, sparse, 0);
	CHECK(half != MAP_FAILED, "mmap");
	memset(half, 1, 15 * 4096);
	CHECK(request(&mr, sizeof(mr), &sparse, 1, reply) == -ENODATA,
	      "memfd with a page never allocated pinned");
	((volatile uint8_t *)half)[15 * 4096] = 1;
	CHECK(request(&mr, sizeof(mr), &sparse, 1, reply) == 0, "allocated memfd refused");
	struct mroc_msg_mr_dereg gone = { .h.type = MROC_MSG_MR_DEREG,
					  .lkey = ((struct mroc_msg_mr_reg *)reply)->lkey };
	CHECK(request(&gone, sizeof(gone), NULL, 0, reply) == 0, "MR_DEREG refused");
	munmap(half, 16 * 4096);
	close(sparse);
	/* A proper one. */
	mr.len = 4096;
	CHECK(request(&mr, sizeof(mr), &small, 1, reply) == 0, "MR_REG refused");
	lkey = ((struct mroc_msg_mr_reg *)reply)->lkey;
	/*
	 * Its pages dropped under mrocd's pinned mapping (PROTOCOL 11a): the daemon's next
	 * access would fault them in again on its own account.  mrocd sealed it: EPERM.
	 */
	CHECK(fallocate(small, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096) == -1 &&
	      errno == EPERM, "punched a hole in a registered memfd");
	/* A memfd closed to new seals: mrocd could not seal it, refused. */
	int closed = sealed_memfd(4096);
	CHECK(!fcntl(closed, F_ADD_SEALS, F_SEAL_SEAL), "F_SEAL_SEAL");
	CHECK(request(&mr, sizeof(mr), &closed, 1, reply) == -EPERM, "memfd closed to seals accepted");

	/* A QP whose ring region does not match its announced layout: refused. */
	rlen = mroc_shm_layout(16, 16, 64, &sq_off, &rq_off, &cq_off);
	rfd = sealed_memfd(rlen);
	region = mmap(NULL, rlen, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
	CHECK(region != MAP_FAILED, "mmap");
	cqfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	fds[0] = rfd;
	fds[1] = cqfd;
	fds[2] = db;	/* the context's doorbell is the QP's too: ringing it wakes either way */
	struct mroc_msg_qp_create qc = { .h.type = MROC_MSG_QP_CREATE, .sq_entries = 16,
					 .rq_entries = 16, .cq_entries = 64, .region_len = rlen };
	CHECK(request(&qc, sizeof(qc), fds, 3, reply) == -EINVAL, "QP without a header accepted");
	*(struct mroc_shm_hdr *)region = (struct mroc_shm_hdr){
		.magic = MROC_SHM_MAGIC, .abi_version = MROC_ABI_VERSION, .sq_entries = 16,
		.rq_entries = 16, .cq_entries = 64, .sq_off = sq_off, .rq_off = rq_off,
		.cq_off = cq_off, .region_len = rlen,
	};
	qc.cq_entries = 32;	/* too small for sq + rq + events */
	CHECK(request(&qc, sizeof(qc), fds, 3, reply) == -EINVAL, "CQ too small accepted");
	{
		/*
		 * #24 item 10: a CQ of 2^28 entries in a sparse memfd of its size
		 * (8 GiB: 2,048 such QPs filled mrocd's address space): refused.
		 */
		uint32_t bsq, brq, bcq;
		uint64_t blen = mroc_shm_layout(16, 16, 1u << 28, &bsq, &brq, &bcq);
		int bfds[3] = { sealed_memfd(blen), cqfd, db };
		struct mroc_shm_hdr *bh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
					       bfds[0], 0);
		struct mroc_msg_qp_create big = qc;

		CHECK(bh != MAP_FAILED, "mmap");
		*bh = (struct mroc_shm_hdr){
			.magic = MROC_SHM_MAGIC, .abi_version = MROC_ABI_VERSION, .sq_entries = 16,
			.rq_entries = 16, .cq_entries = 1u << 28, .sq_off = bsq, .rq_off = brq,
			.cq_off = bcq, .region_len = blen,
		};
		big.cq_entries = 1u << 28;
		big.region_len = blen;
		CHECK(request(&big, sizeof(big), bfds, 3, reply) == -EINVAL,
		      "a CQ of 2^28 entries accepted");
		munmap(bh, 4096);
		close(bfds[0]);
	}
	qc.cq_entries = 64;
	CHECK(request(&qc, sizeof(qc), fds, 3, reply) == 0, "QP_CREATE refused");

	/* Garbage work requests (the QP is not even connected): error completions. */
	ring_view_init(&sq, region, sq_off, 16, sizeof(struct mroc_sqe), true);
	ring_view_init(&cq, region, cq_off, 64, sizeof(struct mroc_cqe), false);
	struct mroc_sqe junk[4] = {
		{ .wr_id = 1, .opcode = 77 },					/* bad opcode */
		{ .wr_id = 2, .opcode = MROC_WR_WRITE, .flags = 0x80 },	/* bad flags */
		{ .wr_id = 3, .opcode = MROC_WR_WRITE, .lkey = lkey, .laddr = 4000, .len = 200 },
		{ .wr_id = 4, .opcode = MROC_WR_SEND, .lkey = 0xdead, .len = 8 },	/* bad key */
	};
	for (int i = 0; i < 4; i++) {
		memcpy(ring_prod_slot(&sq), &junk[i], sizeof(junk[i]));
		ring_prod_commit(&sq, 1);
	}
	uint64_t one = 1;
	CHECK(write(db, &one, sizeof(one)) == sizeof(one), "doorbell");
	for (int tries = 0; tries < 300 && got < 4; tries++) {
		int64_t n = ring_cons_avail(&cq);

		for (int64_t i = 0; i < n; i++) {
			const struct mroc_cqe *e = ring_cons_slot(&cq, (uint32_t)i);

			CHECK(e->status != MROC_WC_SUCCESS, "garbage WR %lu completed successfully",
			      (unsigned long)e->wr_id);
			got++;
		}
		if (n > 0)
			ring_cons_release(&cq, (uint32_t)n);
		usleep(10000);
	}
	CHECK(got == 4, "%d of 4 bad work requests got an error completion", got);

	/* Impossible ring indices: the daemon must hang up on us. */
	atomic_store((_Atomic uint32_t *)&sq.ctl->prod, sq.head + 100000);
	CHECK(write(db, &one, sizeof(one)) == sizeof(one), "doorbell");
	struct pollfd p = { .fd = sock, .events = POLLIN };
	ret = poll(&p, 1, 5000);
	CHECK(ret == 1 && recv(sock, reply, sizeof(reply), 0) == 0,
	      "corrupted indices did not get us disconnected");
	printf("evil_client: the daemon refused every bad request and disconnected us\n");
	return 0;
}

/* ---- stall: fds that could make the daemon's worker wait on us -------------------- */

static int hello(int doorbell)
{
	uint8_t reply[MROC_MSG_MAX];
	struct mroc_msg_hello m = { .h.type = MROC_MSG_HELLO, .abi_version = MROC_ABI_VERSION };

	return request(&m, sizeof(m), &doorbell, 1, reply);
}

static void clear_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	CHECK(fl >= 0 && !fcntl(fd, F_SETFL, fl & ~O_NONBLOCK), "fcntl");
}

/* A pipe whose write end is full: a write(2) to it blocks. */
static int full_pipe(void)
{
	char junk[4096] = { 0 };
	int p[2];

	CHECK(!pipe2(p, O_CLOEXEC | O_NONBLOCK), "pipe");
	while (write(p[1], junk, sizeof(junk)) > 0)
		;
	clear_nonblock(p[1]);
	return p[1];
}

struct stall_qp {
	struct ring_view sq, cq;
	uint32_t qpn;
	int doorbell;		/* the QP's own (ABI 4) */
	int status;
};

/* QP_CREATE with cqfd as the completion channel (16/16/64 entries). */
static void create_qp(int cqfd, struct stall_qp *q)
{
	uint8_t reply[MROC_MSG_MAX];
	uint32_t sq_off, rq_off, cq_off;
	uint64_t len = mroc_shm_layout(16, 16, 64, &sq_off, &rq_off, &cq_off);
	int rfd = sealed_memfd(len), fds[3] = { rfd, cqfd, eventfd(0, EFD_CLOEXEC) };
	void *region = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
	struct mroc_msg_qp_create m = { .h.type = MROC_MSG_QP_CREATE, .sq_entries = 16,
					.rq_entries = 16, .cq_entries = 64, .region_len = len };

	CHECK(region != MAP_FAILED, "mmap");
	*(struct mroc_shm_hdr *)region = (struct mroc_shm_hdr){
		.magic = MROC_SHM_MAGIC, .abi_version = MROC_ABI_VERSION, .sq_entries = 16,
		.rq_entries = 16, .cq_entries = 64, .sq_off = sq_off, .rq_off = rq_off,
		.cq_off = cq_off, .region_len = len,
	};
	q->status = request(&m, sizeof(m), fds, 3, reply);
	q->doorbell = fds[2];
	q->qpn = ((struct mroc_msg_qp_create *)reply)->qpn;
	close(rfd);
	ring_view_init(&q->sq, region, sq_off, 16, sizeof(struct mroc_sqe), true);
	ring_view_init(&q->cq, region, cq_off, 64, sizeof(struct mroc_cqe), false);
}

/* Eats every doorbell ring (blocking reads), racing the daemon's worker for it. */
static void *eat_doorbell(void *arg)
{
	int fd = *(int *)arg;
	uint64_t v;

	for (;;)
		if (read(fd, &v, sizeof(v)) < 0 && errno != EINTR)
			return NULL;
}

static int stall(int secs)
{
	struct stall_qp q;
	uint64_t max = 0xfffffffffffffffeULL, one = 1;
	int sv[2], db, cqfd, posted = 0, got = 0;
	pthread_t eater;

	/* Doorbells that are not (plain) eventfds: refused with EBADFD. */
	CHECK(hello(full_pipe()) == -EBADFD, "a full pipe accepted as doorbell");
	CHECK(!socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), "socketpair");
	CHECK(hello(sv[0]) == -EBADFD, "a socket accepted as doorbell");
	CHECK(hello(eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC)) == -EBADFD,
	      "a semaphore eventfd accepted as doorbell");
	db = eventfd(0, EFD_CLOEXEC);
	CHECK(hello(db) == 0, "HELLO with an eventfd refused");
	clear_nonblock(db);	/* the daemon set O_NONBLOCK: we take it back */

	/* Completion channels likewise. */
	create_qp(full_pipe(), &q);
	CHECK(q.status == -EBADFD, "a full pipe accepted as completion channel (%d)", q.status);
	create_qp(sv[1], &q);
	CHECK(q.status == -EBADFD, "a socket accepted as completion channel (%d)", q.status);
	cqfd = eventfd(0, EFD_CLOEXEC);
	create_qp(cqfd, &q);
	CHECK(q.status == 0, "QP_CREATE with an eventfd refused (%d)", q.status);
	/* Blocking again, and one short of the maximum: a write(2) of 1 would sleep. */
	clear_nonblock(cqfd);
	CHECK(write(cqfd, &max, sizeof(max)) == sizeof(max), "eventfd to its maximum");
	CHECK(!pthread_create(&eater, NULL, eat_doorbell, &db), "thread");

	/*
	 * A bad work request (opcode 77) every 10 ms, each with the CQ armed:
	 * every error completion makes the daemon signal the saturated channel.
	 * Fewer than the daemon's bad-request limit, so we are not disconnected.
	 */
	for (int i = 0; i < secs * 100 && posted < 900; i++) {
		struct mroc_sqe junk = { .wr_id = (uint64_t)i, .opcode = 77 };
		int64_t n = ring_cons_avail(&q.cq);

		CHECK(n >= 0, "CQ indices");
		got += (int)n;
		if (n > 0)
			ring_cons_release(&q.cq, (uint32_t)n);
		ring_cons_prepare_sleep(&q.cq, MROC_RING_ARMED);
		if (ring_prod_space(&q.sq) > 0) {
			memcpy(ring_prod_slot(&q.sq), &junk, sizeof(junk));
			ring_prod_commit(&q.sq, 1);
			posted++;
		}
		/*
		 * Both doorbells: the context's, which the thread eats (mrocd never
		 * reads a doorbell, so that only costs us its wake-ups), and the QP's.
		 */
		CHECK(write(db, &one, sizeof(one)) == sizeof(one), "doorbell");
		CHECK(write(q.doorbell, &one, sizeof(one)) == sizeof(one), "QP doorbell");
		usleep(10000);
	}
	for (int tries = 0; tries < 300 && got < posted; tries++) {
		int64_t n = ring_cons_avail(&q.cq);

		got += n > 0 ? (int)n : 0;
		if (n > 0)
			ring_cons_release(&q.cq, (uint32_t)n);
		usleep(10000);
	}
	CHECK(got == posted, "%d of %d bad work requests completed", got, posted);
	printf("evil_client: hostile fds refused; %d completions signalled on a saturated "
	       "blocking eventfd with the doorbell eaten\n", got);
	return 0;
}

/* ---- limits: what a client may not do ---------------------------------------------- */

static int qp_connect(uint32_t qpn, int family, const char *addr, uint64_t service)
{
	uint8_t reply[MROC_MSG_MAX];
	struct mroc_msg_qp_connect m = { .h.type = MROC_MSG_QP_CONNECT, .qpn = qpn,
					 .family = (uint32_t)family, .service_id = service };

	CHECK(inet_pton(family, addr, m.addr) == 1, "address %s", addr);
	return request(&m, sizeof(m), NULL, 0, reply);
}

static int limits(void)
{
	static const char *const bad4[] = { "0.0.0.0", "255.255.255.255", "224.0.0.1",
					    "239.1.2.3", "127.0.0.1", "127.1.2.3" };
	static const char *const bad6[] = { "::", "::1", "ff02::1", "::ffff:127.0.0.1",
					    "::ffff:255.255.255.255" };
	uint8_t reply[MROC_MSG_MAX];
	const uint64_t reserved = 0x6d726f6300000001ULL;	/* MROCD_SERVICE_CONTROL */
	struct mroc_msg_qp_listen ql = { .h.type = MROC_MSG_QP_LISTEN };
	struct stall_qp q, q2;

	CHECK(hello(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == 0, "HELLO refused");
	create_qp(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), &q);
	CHECK(q.status == 0, "QP_CREATE refused (%d)", q.status);
	ql.qpn = q.qpn;
	ql.service_id = reserved;
	CHECK(request(&ql, sizeof(ql), NULL, 0, reply) == -EACCES,
	      "LISTEN on the daemons' link service accepted");
	ql.service_id = reserved + 41;	/* the whole "mroc" range is theirs */
	CHECK(request(&ql, sizeof(ql), NULL, 0, reply) == -EACCES,
	      "LISTEN on a reserved service accepted");
	CHECK(qp_connect(q.qpn, AF_INET, "10.1.2.3", reserved) == -EACCES,
	      "CONNECT to the daemons' link service accepted");
	for (size_t i = 0; i < sizeof(bad4) / sizeof(bad4[0]); i++)
		CHECK(qp_connect(q.qpn, AF_INET, bad4[i], 4242) == -EADDRNOTAVAIL,
		      "CONNECT to %s accepted", bad4[i]);
	for (size_t i = 0; i < sizeof(bad6) / sizeof(bad6[0]); i++)
		CHECK(qp_connect(q.qpn, AF_INET6, bad6[i], 4242) == -EADDRNOTAVAIL,
		      "CONNECT to %s accepted", bad6[i]);
	/* The same QP may still listen on an ordinary service, another connect anywhere. */
	ql.service_id = 4242;
	CHECK(request(&ql, sizeof(ql), NULL, 0, reply) == 0, "LISTEN on service 4242 refused");
	create_qp(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), &q2);
	CHECK(q2.status == 0, "second QP_CREATE refused (%d)", q2.status);
	CHECK(qp_connect(q2.qpn, AF_INET, "192.0.2.7", 4242) == 0, "CONNECT to 192.0.2.7 refused");
	printf("evil_client: reserved services and non-unicast addresses refused\n");
	return 0;
}

/* ---- users, idle: what one user may hold ------------------------------------------- */

static int users(const char *path, int n)
{
	int accepted = 0, err = 0;

	for (int i = 0; i < n && !err; i++) {
		connect_to(path);	/* sock: each client keeps its own, open until we exit */
		err = hello(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
		accepted += !err;
	}
	printf("accepted=%d error=%d\n", accepted, err);
	return 0;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int idle(const char *path, int type, int n, int secs)
{
	struct pollfd *p = calloc((size_t)n, sizeof(*p));
	int refused = 0, cut = 0, open = n;
	double t0 = mono_s(), now;

	CHECK(p, "calloc");
	for (int i = 0; i < n; i++)
		p[i] = (struct pollfd){ .fd = open_unix(path, type), .events = POLLIN };
	while (open && (now = mono_s()) < t0 + secs) {
		CHECK(poll(p, (nfds_t)n, 100) >= 0, "poll");
		for (int i = 0; i < n; i++) {
			char b[64];

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			if (recv(p[i].fd, b, sizeof(b), MSG_DONTWAIT) > 0)
				continue;	/* (an answer: not ours to send) */
			close(p[i].fd);
			p[i].fd = -1;
			open--;
			if (now < t0 + 1)
				refused++;
			else
				cut++;
		}
	}
	printf("refused=%d cut=%d open=%d\n", refused, cut, open);
	for (int i = 0; i < n; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	free(p);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[2], "limits")) {
		connect_to(argv[1]);
		return limits();
	}
	if (argc == 4 && !strcmp(argv[2], "users"))
		return users(argv[1], atoi(argv[3]));
	if (argc == 5 && !strcmp(argv[2], "idle"))
		return idle(argv[1], SOCK_SEQPACKET, atoi(argv[3]), atoi(argv[4]));
	if (argc == 5 && !strcmp(argv[2], "idle-admin"))
		return idle(argv[1], SOCK_STREAM, atoi(argv[3]), atoi(argv[4]));
	if (argc == 2) {
		connect_to(argv[1]);
		return garbage();
	}
	if (argc == 4 && !strcmp(argv[2], "stall")) {
		connect_to(argv[1]);
		return stall(atoi(argv[3]));
	}
	fprintf(stderr, "usage: evil_client SOCKET [stall SECS | limits | users N | idle N SECS]\n"
			"       evil_client ADMIN idle-admin N SECS\n");
	return 2;
}
