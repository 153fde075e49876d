// SPDX-License-Identifier: MIT
/*
 * libmroc's QPs and data path against a fake mrocd (test_libmroc_fake.h),
 * the test playing the daemon's side of the rings: ring sizes and the
 * region's layout, attributes, connect and listen requests; work requests
 * translated into SQEs and RQEs (addresses into region offsets, every field),
 * bounds and argument checks (-EFAULT, -EINVAL, nothing reaching the ring),
 * -EAGAIN on a full queue, the doorbell only when the daemon sleeps; polling
 * completions; the completion channel (req_notify, ack_notify, wait_cq and
 * the eventfd); mroc_qp_wait_connected keeping the completions around the
 * connection event; indices corrupted by the "daemon" giving -EBADMSG,
 * not a crash; and a daemon that dies: every waiter wakes with -ENOTCONN,
 * completions already made first, every later call -ENOTCONN.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>

#include "test_libmroc_fake.h"

struct env {
	struct mroc_ctx *ctx;
	struct mroc_mr *mr;
	struct mroc_qp *qp;
	struct fake_qp *fq;
	uint8_t *buf;		/* the region's memory */
};

static struct env E;

#define MR_LEN 65536

/* Setup: the fake, a context, a 64 KiB region and a QP of the given depths. */
static void env_qp(uint32_t sq, uint32_t rq)
{
	struct mroc_qp_attr attr = { .sz = sizeof(attr), .sq_depth = sq, .rq_depth = rq };

	E.qp = mroc_qp_create(E.ctx, &attr);
	assert_non_null(E.qp);
	E.fq = fake_qp_of(E.qp);
	assert_non_null(E.fq);
}

static int env_start(void **state)
{
	if (fake_start(state))
		return -1;
	memset(&E, 0, sizeof(E));
	E.ctx = fake_open();
	E.mr = E.ctx ? mroc_mr_alloc(E.ctx, MR_LEN, MROC_ACCESS_LOCAL_WRITE) : NULL;
	if (!E.mr)
		return -1;
	E.buf = mroc_mr_addr(E.mr);
	return 0;
}

static int env_stop(void **state)
{
	mroc_close(E.ctx);
	return fake_stop(state);
}

static struct mroc_sge sge(void *addr, uint32_t len)
{
	return (struct mroc_sge){ .addr = addr, .length = len, .lkey = mroc_mr_lkey(E.mr) };
}

/* ---- creation ----------------------------------------------------------------- */

static void test_qp_sizes(void **state)
{
	struct mroc_qp_attr attr = { .sz = sizeof(attr), .mode = MROC_QP_ROCEV2, .paths = 3,
				     .sq_depth = 100 };
	struct fake_qp *fq;
	struct mroc_qp *qp;

	/* Depths round up to powers of two; the CQ holds everything plus a few events. */
	qp = mroc_qp_create(E.ctx, &attr);
	assert_non_null(qp);
	fq = fake_qp_of(qp);
	assert_non_null(fq);	/* the fake checked the header and layout */
	assert_int_equal(fq->req.sq_entries, 128);
	assert_int_equal(fq->req.rq_entries, 256);	/* 0: the default */
	assert_int_equal(fq->req.cq_entries, 512);	/* roundup(128 + 256 + 8) */
	assert_int_equal(fq->req.mode, MROC_QP_ROCEV2);
	assert_int_equal(fq->req.paths, 3);
	assert_int_equal(mroc_qp_num(qp), fq->qpn);
	assert_int_equal(mroc_qp_destroy(qp), 0);
	assert_int_equal(F.last_destroy, fq->qpn);
	assert_false(fq->live);

	/* No attributes at all: defaults. */
	qp = mroc_qp_create(E.ctx, NULL);
	assert_non_null(qp);
	fq = fake_qp_of(qp);
	assert_int_equal(fq->req.sq_entries, 256);
	assert_int_equal(fq->req.rq_entries, 256);
	assert_int_equal(fq->req.cq_entries, 1024);
	assert_int_equal(fq->req.mode, MROC_QP_METAROCE);
	assert_int_equal(fq->req.paths, 0);
	/* The completion fd is the eventfd the daemon got. */
	assert_true(fd_is_eventfd(mroc_cq_fd(qp)));
	assert_int_equal(mroc_qp_destroy(qp), 0);

	/* Exact powers of two stay; depth 1 is a ring of 1. */
	attr = (struct mroc_qp_attr){ .sz = sizeof(attr), .sq_depth = 1, .rq_depth = 4096 };
	qp = mroc_qp_create(E.ctx, &attr);
	assert_non_null(qp);
	fq = fake_qp_of(qp);
	assert_int_equal(fq->req.sq_entries, 1);
	assert_int_equal(fq->req.rq_entries, 4096);
	assert_int_equal(fq->req.cq_entries, 8192);
	assert_int_equal(mroc_qp_destroy(qp), 0);
	assert_int_equal(mroc_qp_destroy(NULL), -EINVAL);
}

static void test_qp_bad_attr(void **state)
{
	struct {
		struct mroc_qp_attr a;
		uint64_t newer;
	} big = { .a = { .sz = sizeof(big) } };
	const struct mroc_qp_attr bad[] = {
		{ .sz = sizeof(struct mroc_qp_attr), .mode = 2 },
		{ .sz = sizeof(struct mroc_qp_attr), .paths = 17 },
		{ .sz = sizeof(struct mroc_qp_attr), .sq_depth = FAKE_SQ_MAX + 1 },	/* over the daemon's limit */
		{ .sz = sizeof(struct mroc_qp_attr), .rq_depth = UINT32_MAX },
		{ .sz = 0 },
	};
	struct mroc_qp *qp;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		assert_null(mroc_qp_create(E.ctx, &bad[i]));
		assert_int_equal(errno, EINVAL);
	}
	/* A struct from a newer library: fine while its new fields are zero. */
	qp = mroc_qp_create(E.ctx, &big.a);
	assert_non_null(qp);
	mroc_qp_destroy(qp);
	big.newer = 1;
	errno = 0;
	assert_null(mroc_qp_create(E.ctx, &big.a));
	assert_int_equal(errno, EINVAL);
	/* The daemon's refusal. */
	F.fail[MROC_MSG_QP_CREATE] = -EDQUOT;
	errno = 0;
	assert_null(mroc_qp_create(E.ctx, NULL));
	assert_int_equal(errno, EDQUOT);
	assert_int_equal(F.msgs[MROC_MSG_QP_CREATE], 2);
}

static void test_connect_listen(void **state)
{
	uint8_t v6[16];

	env_qp(0, 0);
	assert_int_equal(mroc_qp_connect(E.qp, "192.0.2.7", 99), 0);
	assert_int_equal(F.connect.qpn, mroc_qp_num(E.qp));
	assert_int_equal(F.connect.family, AF_INET);
	assert_memory_equal(F.connect.addr, "\xc0\x00\x02\x07", 4);
	assert_int_equal(F.connect.service_id, 99);

	assert_int_equal(mroc_qp_connect(E.qp, "2001:db8::1", UINT64_MAX), 0);
	assert_int_equal(F.connect.family, AF_INET6);
	inet_pton(AF_INET6, "2001:db8::1", v6);
	assert_memory_equal(F.connect.addr, v6, 16);
	assert_true(F.connect.service_id == UINT64_MAX);

	/* Not an address: refused here. */
	assert_int_equal(mroc_qp_connect(E.qp, "mrocd.example", 1), -EINVAL);
	assert_int_equal(mroc_qp_connect(E.qp, "", 1), -EINVAL);
	assert_int_equal(mroc_qp_connect(E.qp, NULL, 1), -EINVAL);
	assert_int_equal(F.msgs[MROC_MSG_QP_CONNECT], 2);
	/* The daemon's answer is the return value. */
	F.fail[MROC_MSG_QP_CONNECT] = -EHOSTUNREACH;
	assert_int_equal(mroc_qp_connect(E.qp, "192.0.2.8", 1), -EHOSTUNREACH);

	assert_int_equal(mroc_qp_listen(E.qp, 1234), 0);
	assert_int_equal(F.listen.qpn, mroc_qp_num(E.qp));
	assert_int_equal(F.listen.service_id, 1234);
	assert_int_equal(mroc_qp_listen(NULL, 1), -EINVAL);
}

/* ---- work requests ------------------------------------------------------------- */

static void test_post_send_fields(void **state)
{
	struct mroc_send_wr wr = {
		.wr_id = 0x1122334455667788ull, .opcode = MROC_WR_WRITE_IMM,
		.flags = MROC_SEND_SIGNALED, .sg = sge(E.buf + 100, 200), .rkey = 0xabc01001,
		.remote_offset = 1ull << 40, .imm = 0xdeadbeef,
	};
	struct mroc_recv_wr rwr = { .wr_id = 42, .sg = sge(E.buf + 4096, 1024) };
	struct mroc_sqe e;
	struct mroc_rqe r;

	env_qp(0, 0);
	assert_int_equal(mroc_post_send(E.qp, &wr), 0);
	assert_true(fake_take_sqe(E.fq, &e));
	assert_true(e.wr_id == wr.wr_id);
	assert_int_equal(e.opcode, MROC_WR_WRITE_IMM);
	assert_int_equal(e.flags, MROC_SEND_SIGNALED);
	assert_int_equal(e.lkey, mroc_mr_lkey(E.mr));
	assert_int_equal(e.laddr, 100);		/* an offset in the region, not a pointer */
	assert_int_equal(e.len, 200);
	assert_int_equal(e.rkey, 0xabc01001);
	assert_true(e.raddr == 1ull << 40);
	assert_int_equal(e.imm, 0xdeadbeef);
	assert_int_equal(e.rsvd, 0);
	assert_int_equal(e.rsvd2, 0);
	assert_false(fake_take_sqe(E.fq, &e));

	assert_int_equal(mroc_post_recv(E.qp, &rwr), 0);
	assert_true(fake_take_rqe(E.fq, &r));
	assert_int_equal(r.wr_id, 42);
	assert_int_equal(r.lkey, mroc_mr_lkey(E.mr));
	assert_int_equal(r.laddr, 4096);
	assert_int_equal(r.len, 1024);
	assert_int_equal(r.rsvd, 0);

	/* Atomics carry their operands; the rest of the entry stays as posted. */
	wr.opcode = MROC_WR_ATOMIC_CMP_SWP;
	wr.sg = sge(E.buf + 64, 8);
	wr.remote_offset = 4096 + 8;
	wr.compare_add = 0x0102030405060708ull;
	wr.swap = 0xf0e0d0c0b0a09080ull;
	assert_int_equal(mroc_post_send(E.qp, &wr), 0);
	assert_true(fake_take_sqe(E.fq, &e));
	assert_int_equal(e.opcode, MROC_WR_ATOMIC_CMP_SWP);
	assert_int_equal(e.laddr, 64);
	assert_int_equal(e.len, 8);
	assert_true(e.raddr == 4096 + 8);
	assert_true(e.compare_add == 0x0102030405060708ull);
	assert_true(e.swap == 0xf0e0d0c0b0a09080ull);
	wr.compare_add = wr.swap = 0;

	/* Every non-atomic opcode; the whole region; its last byte. */
	for (uint8_t op = MROC_WR_WRITE; op <= MROC_WR_READ; op++) {
		wr.opcode = op;
		wr.sg = sge(E.buf, MR_LEN);
		assert_int_equal(mroc_post_send(E.qp, &wr), 0);
		assert_true(fake_take_sqe(E.fq, &e));
		assert_int_equal(e.opcode, op);
		assert_int_equal(e.laddr, 0);
		assert_int_equal(e.len, MR_LEN);
	}
	wr.sg = sge(E.buf + MR_LEN - 1, 1);
	assert_int_equal(mroc_post_send(E.qp, &wr), 0);
	assert_true(fake_take_sqe(E.fq, &e));
	assert_int_equal(e.laddr, MR_LEN - 1);

	/* No bytes: no region needed (a RECV for a WRITE_IMM). */
	rwr.sg = (struct mroc_sge){ 0 };
	assert_int_equal(mroc_post_recv(E.qp, &rwr), 0);
	assert_true(fake_take_rqe(E.fq, &r));
	assert_int_equal(r.len, 0);
	assert_int_equal(r.laddr, 0);
}

static void test_post_two_regions(void **state)
{
	struct mroc_mr *mr2 = mroc_mr_alloc(E.ctx, 4096, 0);
	uint8_t *b2 = mroc_mr_addr(mr2);
	struct mroc_send_wr wr = { .opcode = MROC_WR_SEND };
	struct mroc_sqe e;

	assert_non_null(mr2);
	env_qp(0, 0);
	/* Alternating keys: each address is translated in its own region. */
	for (int i = 0; i < 6; i++) {
		bool second = i % 2;

		wr.sg = second ? (struct mroc_sge){ .addr = b2 + 10 + i, .length = 8,
						    .lkey = mroc_mr_lkey(mr2) } :
				 sge(E.buf + 1000 + i, 8);
		assert_int_equal(mroc_post_send(E.qp, &wr), 0);
		assert_true(fake_take_sqe(E.fq, &e));
		assert_int_equal(e.lkey, second ? mroc_mr_lkey(mr2) : mroc_mr_lkey(E.mr));
		assert_int_equal(e.laddr, (second ? 10 : 1000) + i);
	}
	/* An address of one region under the other's key. */
	wr.sg = (struct mroc_sge){ .addr = E.buf, .length = 8, .lkey = mroc_mr_lkey(mr2) };
	assert_int_equal(mroc_post_send(E.qp, &wr), -EFAULT);

	/* A deregistered region is gone for the data path at once (no stale cache). */
	wr.sg = (struct mroc_sge){ .addr = b2, .length = 8, .lkey = mroc_mr_lkey(mr2) };
	assert_int_equal(mroc_post_send(E.qp, &wr), 0);
	assert_true(fake_take_sqe(E.fq, &e));
	assert_int_equal(mroc_mr_dereg(mr2), 0);
	assert_int_equal(mroc_post_send(E.qp, &wr), -EFAULT);
	assert_false(fake_take_sqe(E.fq, &e));
}

static void test_post_bad(void **state)
{
	struct mroc_send_wr wr = { .opcode = MROC_WR_WRITE };
	struct mroc_recv_wr rwr = { 0 };
	struct mroc_sqe e;
	struct mroc_rqe r;

	env_qp(0, 0);
	/* Outside the region, by one byte either way, or far. */
	wr.sg = sge(E.buf - 1, 8);
	assert_int_equal(mroc_post_send(E.qp, &wr), -EFAULT);
	wr.sg = sge(E.buf + MR_LEN - 7, 8);
	assert_int_equal(mroc_post_send(E.qp, &wr), -EFAULT);
	wr.sg = sge(E.buf + MR_LEN, 1);
	assert_int_equal(mroc_post_send(E.qp, &wr), -EFAULT);
	wr.sg = sge((void *)(uintptr_t)-4096, 8);
	assert_int_equal(mroc_post_send(E.qp, &wr), -EFAULT);
	wr.sg = sge(E.buf, 8);
	wr.sg.lkey = 0x7777;	/* no such region */
	assert_int_equal(mroc_post_send(E.qp, &wr), -EFAULT);
	rwr.sg = sge(E.buf + MR_LEN - 100, 101);
	assert_int_equal(mroc_post_recv(E.qp, &rwr), -EFAULT);

	/* Lengths above INT32_MAX, unknown opcodes and flags, NULLs. */
	wr.sg = sge(E.buf, (uint32_t)INT32_MAX + 1);
	assert_int_equal(mroc_post_send(E.qp, &wr), -EINVAL);
	rwr.sg = sge(E.buf, UINT32_MAX);
	assert_int_equal(mroc_post_recv(E.qp, &rwr), -EINVAL);
	wr.sg = sge(E.buf, 8);
	wr.opcode = MROC_WR_ATOMIC_CMP_SWP + 1;
	assert_int_equal(mroc_post_send(E.qp, &wr), -EINVAL);
	/* Atomics: 8 local bytes, an 8-aligned remote offset. */
	wr.opcode = MROC_WR_ATOMIC_FETCH_ADD;
	wr.sg = sge(E.buf, 4);
	assert_int_equal(mroc_post_send(E.qp, &wr), -EINVAL);
	wr.sg = sge(E.buf, 16);
	assert_int_equal(mroc_post_send(E.qp, &wr), -EINVAL);
	wr.sg = sge(E.buf, 8);
	wr.remote_offset = 12;
	assert_int_equal(mroc_post_send(E.qp, &wr), -EINVAL);
	wr.opcode = MROC_WR_ATOMIC_CMP_SWP;
	assert_int_equal(mroc_post_send(E.qp, &wr), -EINVAL);
	wr.remote_offset = 0;
	wr.opcode = MROC_WR_SEND;
	wr.flags = 0x80;
	assert_int_equal(mroc_post_send(E.qp, &wr), -EINVAL);
	assert_int_equal(mroc_post_send(NULL, &wr), -EINVAL);
	assert_int_equal(mroc_post_send(E.qp, NULL), -EINVAL);
	assert_int_equal(mroc_post_recv(E.qp, NULL), -EINVAL);

	/* None of it reached the daemon. */
	assert_false(fake_take_sqe(E.fq, &e));
	assert_false(fake_take_rqe(E.fq, &r));
}

static void test_queue_full(void **state)
{
	struct mroc_send_wr wr = { .opcode = MROC_WR_SEND, .sg = sge(E.buf, 8) };
	struct mroc_recv_wr rwr = { .sg = sge(E.buf, 8) };
	struct mroc_sqe e;
	struct mroc_rqe r;

	env_qp(4, 2);
	for (int i = 0; i < 4; i++) {
		wr.wr_id = i;
		assert_int_equal(mroc_post_send(E.qp, &wr), 0);
	}
	assert_int_equal(mroc_post_send(E.qp, &wr), -EAGAIN);
	assert_int_equal(mroc_post_send(E.qp, &wr), -EAGAIN);
	/* The daemon takes one: room for one more. */
	assert_true(fake_take_sqe(E.fq, &e));
	assert_int_equal(e.wr_id, 0);
	wr.wr_id = 4;
	assert_int_equal(mroc_post_send(E.qp, &wr), 0);
	assert_int_equal(mroc_post_send(E.qp, &wr), -EAGAIN);
	for (uint64_t i = 1; i <= 4; i++) {
		assert_true(fake_take_sqe(E.fq, &e));
		assert_int_equal(e.wr_id, i);
	}

	assert_int_equal(mroc_post_recv(E.qp, &rwr), 0);
	assert_int_equal(mroc_post_recv(E.qp, &rwr), 0);
	assert_int_equal(mroc_post_recv(E.qp, &rwr), -EAGAIN);
	assert_true(fake_take_rqe(E.fq, &r));
	assert_int_equal(mroc_post_recv(E.qp, &rwr), 0);
}

static uint64_t doorbell_read_fd(int fd)
{
	uint64_t cnt = 0;

	/* The doorbell is non-blocking: nothing rung reads EAGAIN. */
	if (read(fd, &cnt, sizeof(cnt)) < 0)
		assert_int_equal(errno, EAGAIN);
	return cnt;
}

/* The QP's own doorbell (ABI 4); the context's stays silent (mrocd would scan every QP). */
static uint64_t doorbell_read(void)
{
	assert_int_equal(doorbell_read_fd(F.doorbell), 0);
	return doorbell_read_fd(E.fq->doorbell);
}

static void test_doorbell(void **state)
{
	struct mroc_send_wr wr = { .opcode = MROC_WR_SEND, .sg = sge(E.buf, 8) };
	struct mroc_recv_wr rwr = { .sg = sge(E.buf, 8) };
	struct mroc_sqe e;

	env_qp(0, 0);
	/* The daemon is awake: posting is silent. */
	assert_int_equal(mroc_post_send(E.qp, &wr), 0);
	assert_int_equal(mroc_post_recv(E.qp, &rwr), 0);
	assert_int_equal(doorbell_read(), 0);
	assert_true(fake_take_sqe(E.fq, &e));

	/* It goes to sleep on the SQ: the next post rings, the ones after it do not (RUNG). */
	assert_true(ring_cons_prepare_sleep(&E.fq->sq, MROC_RING_NEED_WAKEUP));
	assert_int_equal(mroc_post_send(E.qp, &wr), 0);
	assert_int_equal(doorbell_read(), 1);
	assert_int_equal(mroc_post_send(E.qp, &wr), 0);
	assert_int_equal(mroc_post_send(E.qp, &wr), 0);
	assert_int_equal(doorbell_read(), 0);
	/* Awake again. */
	ring_cons_clear_flag(&E.fq->sq, MROC_RING_NEED_WAKEUP);
	assert_int_equal(mroc_post_send(E.qp, &wr), 0);
	assert_int_equal(doorbell_read(), 0);
	/* Asleep again (RUNG cleared first, as mrocd does): one ring again. */
	ring_cons_clear_flag(&E.fq->sq, MROC_RING_RUNG);
	ring_cons_prepare_sleep(&E.fq->sq, MROC_RING_NEED_WAKEUP);
	assert_int_equal(mroc_post_send(E.qp, &wr), 0);
	assert_int_equal(mroc_post_send(E.qp, &wr), 0);
	assert_int_equal(doorbell_read(), 1);
	ring_cons_clear_flag(&E.fq->sq, MROC_RING_NEED_WAKEUP);

	/* The RQ has its own flags, and the same doorbell. */
	ring_cons_prepare_sleep(&E.fq->rq, MROC_RING_NEED_WAKEUP);
	assert_int_equal(mroc_post_recv(E.qp, &rwr), 0);
	assert_int_equal(doorbell_read(), 1);
	assert_int_equal(mroc_post_send(E.qp, &wr), 0);
	assert_int_equal(doorbell_read(), 0);
}

/* ---- completions ------------------------------------------------------------------ */

static void test_poll_cq(void **state)
{
	struct mroc_cqe c = { .wr_id = 7, .opcode = MROC_WC_RECV_RDMA_IMM,
			      .status = MROC_WC_SUCCESS, .flags = MROC_WC_WITH_IMM,
			      .byte_len = 4096, .imm = 0x01020304 };
	struct mroc_wc wc[8];

	env_qp(0, 0);
	c.qpn = E.fq->qpn;
	assert_int_equal(mroc_poll_cq(E.qp, wc, 8), 0);
	assert_true(fake_push_cqe(E.fq, &c));
	assert_true(fake_push(E.fq, MROC_WC_WRITE, 8, MROC_WC_REM_ACCESS_ERR));
	assert_true(fake_push(E.fq, MROC_WC_SEND, 9, MROC_WC_SUCCESS));

	/* In order, max at a time, every field. */
	assert_int_equal(mroc_poll_cq(E.qp, wc, 2), 2);
	assert_int_equal(wc[0].wr_id, 7);
	assert_int_equal(wc[0].qpn, mroc_qp_num(E.qp));
	assert_int_equal(wc[0].opcode, MROC_WC_RECV_RDMA_IMM);
	assert_int_equal(wc[0].status, MROC_WC_SUCCESS);
	assert_int_equal(wc[0].flags, MROC_WC_WITH_IMM);
	assert_int_equal(wc[0].byte_len, 4096);
	assert_int_equal(wc[0].imm, 0x01020304);
	assert_int_equal(wc[1].wr_id, 8);
	assert_int_equal(wc[1].status, MROC_WC_REM_ACCESS_ERR);
	assert_int_equal(mroc_poll_cq(E.qp, wc, 0), 0);
	assert_int_equal(mroc_poll_cq(E.qp, wc, 8), 1);
	assert_int_equal(wc[0].wr_id, 9);
	assert_int_equal(mroc_poll_cq(E.qp, wc, 8), 0);
	/* The slots went back to the daemon. */
	assert_int_equal(ring_prod_space(&E.fq->cq), E.fq->req.cq_entries);

	assert_int_equal(mroc_poll_cq(E.qp, NULL, 1), -EINVAL);
	assert_int_equal(mroc_poll_cq(E.qp, wc, -1), -EINVAL);
	assert_int_equal(mroc_poll_cq(NULL, wc, 1), -EINVAL);
}

static bool fd_readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

static void test_notify(void **state)
{
	struct mroc_wc wc[4];
	int fd;

	env_qp(0, 0);
	fd = mroc_cq_fd(E.qp);
	assert_int_equal(mroc_cq_fd(NULL), -EINVAL);
	/* Nothing there: armed, and the fd stays quiet. */
	assert_int_equal(mroc_req_notify(E.qp), 0);
	assert_int_equal(E.fq->cq.ctl->flags & MROC_RING_ARMED, MROC_RING_ARMED);
	assert_false(fd_readable(fd));
	/* A completion fires the fd, once. */
	assert_true(fake_push(E.fq, MROC_WC_SEND, 1, 0));
	assert_true(fd_readable(fd));
	assert_int_equal(mroc_ack_notify(E.qp), 0);
	assert_false(fd_readable(fd));
	assert_int_equal(E.fq->cq.ctl->flags & MROC_RING_ARMED, 0);
	assert_true(fake_push(E.fq, MROC_WC_SEND, 2, 0));
	assert_false(fd_readable(fd));	/* not re-armed */
	/* Completions already there: req_notify says so. */
	assert_int_equal(mroc_req_notify(E.qp), 1);
	assert_int_equal(mroc_poll_cq(E.qp, wc, 4), 2);
	assert_int_equal(mroc_ack_notify(E.qp), 0);	/* nothing to ack: fine */
	/* Acknowledging disarms, even if the daemon did not take the flag. */
	assert_int_equal(mroc_req_notify(E.qp), 0);
	assert_int_equal(mroc_ack_notify(E.qp), 0);
	assert_int_equal(E.fq->cq.ctl->flags & MROC_RING_ARMED, 0);
	assert_int_equal(mroc_req_notify(NULL), -EINVAL);
	assert_int_equal(mroc_ack_notify(NULL), -EINVAL);
}

/*
 * mroc_ack_notify reads the eventfd only for an arm mrocd took (issue #22:
 * a sleeper on many QPs disarms them all after each wake-up, a read per QP
 * that fired only), and still drains a signal that mrocd writes after the
 * ack (it takes the flag in its loop and writes the fd at the loop's end).
 */
static void test_notify_reads_taken_arms(void **state)
{
	struct mroc_wc wc[4];
	uint64_t one = 1, cnt;
	int fd;

	env_qp(0, 0);
	fd = mroc_cq_fd(E.qp);
	/* Not taken: disarmed without a read (a count written by hand stays). */
	assert_int_equal(mroc_req_notify(E.qp), 0);
	assert_int_equal(write(E.fq->cq_fd, &one, sizeof(one)), sizeof(one));
	assert_int_equal(mroc_ack_notify(E.qp), 0);
	assert_int_equal(E.fq->cq.ctl->flags & MROC_RING_ARMED, 0);
	assert_true(fd_readable(fd));
	assert_int_equal(read(fd, &cnt, sizeof(cnt)), sizeof(cnt));
	/* Taken, written late: the ack finds nothing yet, the next one drains it. */
	assert_int_equal(mroc_req_notify(E.qp), 0);
	assert_true(ring_prod_take_flag(&E.fq->cq, MROC_RING_ARMED));
	assert_int_equal(mroc_ack_notify(E.qp), 0);
	assert_int_equal(write(E.fq->cq_fd, &one, sizeof(one)), sizeof(one));
	assert_true(fd_readable(fd));
	assert_int_equal(mroc_req_notify(E.qp), 0);
	assert_int_equal(mroc_ack_notify(E.qp), 0);
	assert_false(fd_readable(fd));
	/* Taken before a second arm: seen there, read at the ack. */
	assert_int_equal(mroc_req_notify(E.qp), 0);
	assert_true(fake_push(E.fq, MROC_WC_SEND, 1, 0));
	assert_int_equal(mroc_req_notify(E.qp), 1);
	assert_int_equal(mroc_poll_cq(E.qp, wc, 4), 1);
	assert_true(fd_readable(fd));
	assert_int_equal(mroc_ack_notify(E.qp), 0);
	assert_false(fd_readable(fd));
}

static void test_wait_cq(void **state)
{
	struct fake_later later = { 0 };
	struct mroc_wc wc[4];
	int64_t t0;

	env_qp(0, 0);
	/* Nothing comes: -ETIMEDOUT after the timeout, disarmed. */
	t0 = mono_ms();
	assert_int_equal(mroc_wait_cq(E.qp, 50), -ETIMEDOUT);
	assert_true(mono_ms() - t0 >= 49);
	assert_int_equal(E.fq->cq.ctl->flags & MROC_RING_ARMED, 0);
	assert_int_equal(mroc_wait_cq(E.qp, 0), -ETIMEDOUT);

	/* A completion already there: at once. */
	assert_true(fake_push(E.fq, MROC_WC_SEND, 1, 0));
	assert_int_equal(mroc_wait_cq(E.qp, 0), 0);
	assert_int_equal(mroc_wait_cq(E.qp, -1), 0);
	assert_int_equal(mroc_poll_cq(E.qp, wc, 4), 1);

	/* One that comes while we sleep wakes us (no limit, and a long limit). */
	later.q = E.fq;
	fake_later_add(&later, 30, MROC_WC_RECV, 2);
	fake_later_add(&later, 30, MROC_WC_RECV, 3);
	assert_int_equal(fake_later_start(&later), 0);
	t0 = mono_ms();
	for (uint64_t next = 2; next <= 3;) {
		int n;

		assert_int_equal(mroc_wait_cq(E.qp, next == 2 ? -1 : 10000), 0);
		n = mroc_poll_cq(E.qp, wc, 4);
		assert_true(n >= 1);	/* woken for something */
		for (int i = 0; i < n; i++)
			assert_int_equal(wc[i].wr_id, next++);
	}
	assert_true(mono_ms() - t0 < 5000);
	fake_later_join(&later);
	assert_int_equal(mroc_wait_cq(NULL, 0), -EINVAL);
}

/* ---- the connection event ----------------------------------------------------------- */

static void test_wait_connected_keeps_completions(void **state)
{
	struct mroc_wc wc[8];

	env_qp(0, 0);
	assert_true(fake_push(E.fq, MROC_WC_RECV, 1, 0));
	assert_true(fake_push(E.fq, MROC_WC_SEND, 2, MROC_WC_FLUSH_ERR));
	assert_true(fake_push(E.fq, MROC_WC_CONNECTED, 0, 0));
	assert_int_equal(mroc_qp_wait_connected(E.qp, 1000), 0);
	/* The ring is empty, but what was set aside counts as there. */
	assert_int_equal(mroc_wait_cq(E.qp, 0), 0);
	assert_int_equal(mroc_req_notify(E.qp), 1);
	assert_true(fake_push(E.fq, MROC_WC_WRITE, 3, 0));
	/* The others, in order, without the event; then what followed it. */
	assert_int_equal(mroc_poll_cq(E.qp, wc, 1), 1);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(mroc_poll_cq(E.qp, wc, 8), 2);
	assert_int_equal(wc[0].wr_id, 2);
	assert_int_equal(wc[0].status, MROC_WC_FLUSH_ERR);
	assert_int_equal(wc[1].wr_id, 3);
	assert_int_equal(wc[1].opcode, MROC_WC_WRITE);
	assert_int_equal(mroc_poll_cq(E.qp, wc, 8), 0);
	/* Connected stays connected. */
	assert_int_equal(mroc_qp_wait_connected(E.qp, 0), 0);
	assert_int_equal(mroc_qp_wait_connected(NULL, 0), -EINVAL);
}

static void test_wait_connected_sleeps(void **state)
{
	struct fake_later later = { 0 };
	struct mroc_wc wc[4];

	env_qp(0, 0);
	assert_int_equal(mroc_qp_connect(E.qp, "192.0.2.1", 5), 0);
	assert_int_equal(mroc_qp_wait_connected(E.qp, 20), -ETIMEDOUT);
	later.q = E.fq;
	fake_later_add(&later, 20, MROC_WC_RECV, 1);
	fake_later_add(&later, 20, MROC_WC_CONNECTED, 0);
	assert_int_equal(fake_later_start(&later), 0);
	assert_int_equal(mroc_qp_wait_connected(E.qp, -1), 0);
	fake_later_join(&later);
	assert_int_equal(mroc_poll_cq(E.qp, wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 1);
}

static void test_wait_connected_fails(void **state)
{
	struct mroc_wc wc[4];

	env_qp(0, 0);
	assert_true(fake_push(E.fq, MROC_WC_EVENT_ERROR, 0, MROC_WC_CONNECT_ERR));
	assert_int_equal(mroc_qp_wait_connected(E.qp, 100), -ECONNREFUSED);
	assert_int_equal(mroc_qp_wait_connected(E.qp, 0), -ECONNREFUSED);

	/* A new attempt forgets the old outcome. */
	assert_int_equal(mroc_qp_connect(E.qp, "192.0.2.1", 5), 0);
	assert_int_equal(mroc_qp_wait_connected(E.qp, 0), -ETIMEDOUT);
	assert_true(fake_push(E.fq, MROC_WC_EVENT_ERROR, 0, MROC_WC_CONNECT_ERR));
	assert_int_equal(mroc_qp_wait_connected(E.qp, 0), -ECONNREFUSED);
	assert_int_equal(mroc_qp_listen(E.qp, 5), 0);
	assert_int_equal(mroc_qp_wait_connected(E.qp, 0), -ETIMEDOUT);
	assert_true(fake_push(E.fq, MROC_WC_DISCONNECTED, 0, 0));
	assert_int_equal(mroc_qp_wait_connected(E.qp, 100), -ECONNRESET);

	/* An event the application polled itself counts too. */
	assert_int_equal(mroc_qp_connect(E.qp, "192.0.2.1", 5), 0);
	assert_true(fake_push(E.fq, MROC_WC_CONNECTED, 0, 0));
	assert_int_equal(mroc_poll_cq(E.qp, wc, 4), 1);
	assert_int_equal(wc[0].opcode, MROC_WC_CONNECTED);
	assert_int_equal(mroc_qp_wait_connected(E.qp, 0), 0);
}

/* Why a connect failed: in the completion, and as mroc_qp_wait_connected's errno. */
static void test_wait_connected_says_why(void **state)
{
	static const struct { uint8_t why; int err; } cases[] = {
		{ MROC_CONN_ERR_NO_ANSWER, -ETIMEDOUT },
		{ MROC_CONN_ERR_SECURITY, -EACCES },
		{ MROC_CONN_ERR_BAD_PARAM, -EINVAL },
		{ MROC_CONN_ERR_NO_RESOURCES, -EAGAIN },
		{ MROC_CONN_ERR_CLOSED, -ECONNRESET },
		{ MROC_CONN_ERR_NO_LISTENER, -ECONNREFUSED },
		{ MROC_CONN_ERR_BUSY, -ECONNREFUSED },
		{ 99, -ECONNREFUSED },		/* a reason this library does not know */
	};
	struct mroc_wc wc;

	env_qp(0, 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(mroc_qp_connect(E.qp, "192.0.2.1", 5), 0);
		assert_true(fake_push_cqe(E.fq, &(struct mroc_cqe){
			.qpn = E.fq->qpn, .opcode = MROC_WC_EVENT_ERROR,
			.status = MROC_WC_CONNECT_ERR, .conn_err = cases[i].why }));
		assert_int_equal(mroc_poll_cq(E.qp, &wc, 1), 1);
		assert_int_equal(wc.status, MROC_WC_CONNECT_ERR);
		assert_int_equal(wc.conn_err, cases[i].why);
		assert_int_equal(mroc_qp_wait_connected(E.qp, 100), cases[i].err);
	}
	assert_string_equal(mroc_conn_err_str(MROC_CONN_ERR_SECURITY),
			    "the daemons' security modes differ");
	assert_string_equal(mroc_conn_err_str(99), "unknown reason");
	/* The field is what was padding: the completion's layout is unchanged. */
	assert_int_equal(sizeof(struct mroc_wc), 24);
	assert_int_equal(offsetof(struct mroc_wc, byte_len), 16);
}

static void test_wait_connected_stash_full(void **state)
{
	struct mroc_wc wc[32];
	uint32_t cq;

	env_qp(1, 1);
	cq = E.fq->req.cq_entries;
	assert_int_equal(cq, 16);
	/* A CQ full of completions, taken into the stash while waiting... */
	for (uint32_t i = 0; i < cq; i++)
		assert_true(fake_push(E.fq, MROC_WC_RECV, i, 0));
	assert_int_equal(mroc_qp_wait_connected(E.qp, 0), -ETIMEDOUT);
	/* ...and one more than the stash holds: the caller must poll first. */
	assert_true(fake_push(E.fq, MROC_WC_RECV, cq, 0));
	assert_true(fake_push(E.fq, MROC_WC_CONNECTED, 0, 0));
	assert_int_equal(mroc_qp_wait_connected(E.qp, 0), -ENOBUFS);
	/* Nothing lost, nothing reordered; the event is the application's now. */
	assert_int_equal(mroc_poll_cq(E.qp, wc, 32), cq + 2);
	for (uint32_t i = 0; i <= cq; i++)
		assert_int_equal(wc[i].wr_id, i);
	assert_int_equal(wc[cq + 1].opcode, MROC_WC_CONNECTED);
	assert_int_equal(mroc_qp_wait_connected(E.qp, 0), 0);
}

/* ---- a daemon that corrupts the rings ------------------------------------------------ */

static void test_corrupt_indices(void **state)
{
	struct mroc_send_wr wr = { .opcode = MROC_WR_SEND, .sg = sge(E.buf, 8) };
	struct mroc_recv_wr rwr = { .sg = sge(E.buf, 8) };
	mroc_print_fn old = mroc_set_print(count_print);
	struct mroc_wc wc[4];
	struct mroc_sqe e;

	env_qp(0, 0);
	printed = 0;
	/* The CQ producer index far ahead, then behind. */
	E.fq->cq.ctl->prod = E.fq->cq.head + 100000;
	assert_int_equal(mroc_poll_cq(E.qp, wc, 4), -EBADMSG);
	assert_int_equal(mroc_wait_cq(E.qp, 0), -EBADMSG);
	assert_int_equal(mroc_qp_wait_connected(E.qp, 0), -EBADMSG);
	E.fq->cq.ctl->prod = E.fq->cq.head - 1;
	assert_int_equal(mroc_poll_cq(E.qp, wc, 4), -EBADMSG);
	E.fq->cq.ctl->prod = E.fq->cq.head;

	/* The SQ and RQ consumer indices ahead of what was posted. */
	E.fq->sq.ctl->cons = 5;
	assert_int_equal(mroc_post_send(E.qp, &wr), -EBADMSG);
	E.fq->rq.ctl->cons = 0x80000000u;
	assert_int_equal(mroc_post_recv(E.qp, &rwr), -EBADMSG);
	assert_true(printed > 0);
	mroc_set_print(old);

	/* Put right, it all works again. */
	E.fq->sq.ctl->cons = 0;
	E.fq->rq.ctl->cons = 0;
	assert_int_equal(mroc_post_send(E.qp, &wr), 0);
	assert_true(fake_take_sqe(E.fq, &e));
	assert_int_equal(mroc_poll_cq(E.qp, wc, 4), 0);

	/* Garbage in a completion is handed over as it is, without harm. */
	memset(ring_prod_slot(&E.fq->cq), 0xff, sizeof(struct mroc_cqe));
	ring_prod_commit(&E.fq->cq, 1);
	assert_int_equal(mroc_poll_cq(E.qp, wc, 4), 1);
	assert_int_equal(wc[0].opcode, 0xff);
	assert_string_equal(mroc_wc_status_str(wc[0].status), "unknown status");
}

/* ---- a daemon that goes away ------------------------------------------------------- */

/* mrocd dies: its end of the client connection closes (the kernel does that for a killed one). */
static void kill_daemon(void)
{
	int fd = atomic_load(&F.cfd);

	assert_true(fd >= 0);
	assert_int_equal(shutdown(fd, SHUT_RDWR), 0);
}

struct waiter {
	pthread_t thr;
	struct mroc_qp *qp;
	int ret;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->ret = mroc_wait_cq(w->qp, -1);
	return NULL;
}

static void test_daemon_dies_wakes_waiters(void **state)
{
	struct mroc_send_wr wr = { .opcode = MROC_WR_SEND, .sg = sge(E.buf, 8) };
	struct mroc_recv_wr rwr = { .sg = sge(E.buf, 8) };
	struct waiter w[2] = { { .ret = 1 }, { .ret = 1 } };
	struct mroc_qp *qp2;
	struct pollfd p;
	struct mroc_wc wc[4];

	env_qp(0, 0);
	qp2 = mroc_qp_create(E.ctx, NULL);
	assert_non_null(qp2);
	w[0].qp = E.qp;
	w[1].qp = qp2;
	/* Two threads wait without a time limit (whether they sleep yet or not does not matter). */
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&w[i].thr, NULL, waiter_main, &w[i]), 0);
	kill_daemon();
	for (int i = 0; i < 2; i++) {
		pthread_join(w[i].thr, NULL);
		assert_int_equal(w[i].ret, -ENOTCONN);
	}
	/* Every QP is failed for every call. */
	assert_int_equal(mroc_poll_cq(E.qp, wc, 4), -ENOTCONN);
	assert_int_equal(mroc_poll_cq(qp2, wc, 4), -ENOTCONN);
	assert_int_equal(mroc_wait_cq(qp2, 0), -ENOTCONN);
	assert_int_equal(mroc_post_send(E.qp, &wr), -ENOTCONN);
	assert_int_equal(mroc_post_recv(E.qp, &rwr), -ENOTCONN);
	assert_int_equal(mroc_qp_wait_connected(qp2, -1), -ENOTCONN);
	assert_int_equal(mroc_qp_connect(E.qp, "192.0.2.1", 5), -ENOTCONN);
	/* An application's own poll() on the context's fd sees the hang-up. */
	p = (struct pollfd){ .fd = mroc_ctx_fd(E.ctx), .events = POLLRDHUP };
	assert_int_equal(poll(&p, 1, 0), 1);
	assert_true(p.revents & (POLLHUP | POLLRDHUP));
	assert_int_equal(mroc_ctx_fd(NULL), -EINVAL);
	/* Freeing still works (mroc_close in the teardown frees qp2). */
	assert_int_equal(mroc_qp_destroy(E.qp), -ENOTCONN);
	E.qp = NULL;
}

static void test_daemon_dies_completions_first(void **state)
{
	struct mroc_wc wc[4];

	env_qp(0, 0);
	assert_true(fake_push(E.fq, MROC_WC_RECV, 1, 0));
	assert_true(fake_push(E.fq, MROC_WC_SEND, 2, 0));
	kill_daemon();
	/* What the daemon completed before it died is the application's. */
	assert_int_equal(mroc_wait_cq(E.qp, -1), 0);
	assert_int_equal(mroc_poll_cq(E.qp, wc, 1), 1);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(mroc_wait_cq(E.qp, -1), 0);
	assert_int_equal(mroc_poll_cq(E.qp, wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 2);
	/* Then the error, at once. */
	assert_int_equal(mroc_wait_cq(E.qp, -1), -ENOTCONN);
	assert_int_equal(mroc_poll_cq(E.qp, wc, 4), -ENOTCONN);
}

#define T(f) cmocka_unit_test_setup_teardown(f, env_start, env_stop)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_qp_sizes),
		T(test_qp_bad_attr),
		T(test_connect_listen),
		T(test_post_send_fields),
		T(test_post_two_regions),
		T(test_post_bad),
		T(test_queue_full),
		T(test_doorbell),
		T(test_poll_cq),
		T(test_notify),
		T(test_notify_reads_taken_arms),
		T(test_wait_cq),
		T(test_wait_connected_keeps_completions),
		T(test_wait_connected_sleeps),
		T(test_wait_connected_fails),
		T(test_wait_connected_says_why),
		T(test_wait_connected_stash_full),
		T(test_corrupt_indices),
		T(test_daemon_dies_wakes_waiters),
		T(test_daemon_dies_completions_first),
	};

	alarm(120);	/* a hang is a failure */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
