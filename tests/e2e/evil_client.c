// SPDX-License-Identifier: MIT
/*
 * A misbehaving libmroc client for the end-to-end tests: it speaks the raw
 * protocol of libclient/abi.h (no libmroc, which would refuse to misbehave)
 * and checks that mrocd answers bad requests with errors, bad work requests
 * with error completions, and corrupted ring indices by disconnecting it —
 * while staying up for everyone else.
 *
 *   evil_client SOCKET    exit 0 when the daemon behaved, 1 otherwise
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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

static int sealed_memfd(size_t len)
{
	int fd = memfd_create("evil", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	CHECK(fd >= 0 && !ftruncate(fd, (off_t)len) && !fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK),
	      "memfd");
	return fd;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint8_t reply[MROC_MSG_MAX];
	uint32_t sq_off, rq_off, cq_off, lkey;
	struct ring_view sq, cq;
	uint64_t rlen;
	void *region;
	int ret, fds[2], db, rfd, cqfd, got = 0;

	if (argc != 2 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: evil_client SOCKET\n");
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECK(sock >= 0 && !connect(sock, (struct sockaddr *)&sa, sizeof(sa)), "connect %s", argv[1]);

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
	/* A proper one. */
	mr.len = 4096;
	CHECK(request(&mr, sizeof(mr), &small, 1, reply) == 0, "MR_REG refused");
	lkey = ((struct mroc_msg_mr_reg *)reply)->lkey;

	/* A QP whose ring region does not match its announced layout: refused. */
	rlen = mroc_shm_layout(16, 16, 64, &sq_off, &rq_off, &cq_off);
	rfd = sealed_memfd(rlen);
	region = mmap(NULL, rlen, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
	CHECK(region != MAP_FAILED, "mmap");
	cqfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	fds[0] = rfd;
	fds[1] = cqfd;
	struct mroc_msg_qp_create qc = { .h.type = MROC_MSG_QP_CREATE, .sq_entries = 16,
					 .rq_entries = 16, .cq_entries = 64, .region_len = rlen };
	CHECK(request(&qc, sizeof(qc), fds, 2, reply) == -EINVAL, "QP without a header accepted");
	*(struct mroc_shm_hdr *)region = (struct mroc_shm_hdr){
		.magic = MROC_SHM_MAGIC, .abi_version = MROC_ABI_VERSION, .sq_entries = 16,
		.rq_entries = 16, .cq_entries = 64, .sq_off = sq_off, .rq_off = rq_off,
		.cq_off = cq_off, .region_len = rlen,
	};
	qc.cq_entries = 32;	/* too small for sq + rq + events */
	CHECK(request(&qc, sizeof(qc), fds, 2, reply) == -EINVAL, "CQ too small accepted");
	qc.cq_entries = 64;
	CHECK(request(&qc, sizeof(qc), fds, 2, reply) == 0, "QP_CREATE refused");

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
