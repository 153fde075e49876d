// SPDX-License-Identifier: MIT
/*
 * The engine's receive path at work, two engines back to back
 * (rx_fx.h): every operation byte-exact with its completions, zero
 * lengths, completion order, out-of-order placement, duplicates and RNR;
 * every operation again with split messages (PROTOCOL 5.2) and split by
 * ports.  The split rule's shape and refusals: test_engine_split.c; what
 * the receive path must refuse: test_engine_refuse.c.
 *
 * Packets are captured from engine_tx, altered at the byte offsets of
 * docs/PROTOCOL.md 3.1-3.3 (the PKT_* names of engine_pair.h) when needed,
 * and fed straight to engine_rx.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rx_fx.h"

/* ---- transfers ------------------------------------------------------------------- */

static void test_connected(void **state)
{
	struct fx *f = *state;
	struct engine_qp_info ia, ib;

	assert_int_equal(engine_qp_info(f->x.p->s[PAIR_A].eng, f->x.p->s[PAIR_A].qpn, &ia), 0);
	assert_int_equal(engine_qp_info(f->x.p->s[PAIR_B].eng, f->x.p->s[PAIR_B].qpn, &ib), 0);
	assert_int_equal(ia.peer, PAIR_B);
	assert_int_equal(ib.peer, PAIR_A);
	assert_int_equal(ia.peer_qpn, f->x.p->s[PAIR_B].qpn);
	assert_int_equal(ib.peer_qpn, f->x.p->s[PAIR_A].qpn);
	assert_int_equal(ia.npaths, 4);
	assert_int_equal(ia.mode, MROC_MODE_METAROCE);
	assert_int_equal(f->x.p->s[PAIR_A].sent[MROC_OP_CONNECT_REQ], 1);
	assert_int_equal(f->x.p->s[PAIR_B].sent[MROC_OP_CONNECT_REP], 1);
	assert_int_equal(f->x.p->s[PAIR_A].stray + f->x.p->s[PAIR_B].stray, 0);
	pair_expect_none(f->x.p, PAIR_A);
	pair_expect_none(f->x.p, PAIR_B);
}

static const uint32_t sizes[] = {
	1, 100, MTU - 1, MTU, MTU + 1, 3 * MTU, 5 * MTU + 77, 40000,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void test_write(void **state)
{
	struct fx *f = *state;

	for (unsigned i = 0; i < NSIZES; i++) {
		uint64_t placed = stat_b(f, EC_RX_BYTES_PLACED);
		struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 10 + i, 13 * i, sizes[i], 1000 + i);
		const struct engine_cqe *c;

		pair_mem_reset(f->x.b);
		post(f, &wr);
		settle(f);
		c = pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 10 + i);
		assert_int_equal(c->byte_len, sizes[i]);
		assert_int_equal(c->qpn, f->x.p->s[PAIR_A].qpn);
		pair_expect_none(f->x.p, PAIR_A);
		pair_expect_none(f->x.p, PAIR_B);	/* a plain WRITE is silent at the target */
		pair_mem_expect(f->x.b, 1000 + i, f->x.a->buf + 13 * i, sizes[i]);
		assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED) - placed, sizes[i]);
	}
}

static void test_write_imm(void **state)
{
	struct fx *f = *state;

	for (unsigned i = 0; i < NSIZES; i++) {
		struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE_IMM, 20 + i, 7 * i, sizes[i], 64 * i);
		const struct engine_cqe *c;

		wr.imm = 0xabc00000u + i;
		pair_mem_reset(f->x.b);
		/* The RECV a WRITE_IMM consumes needs no buffer. */
		assert_int_equal(pair_post_recv(f->x.p, PAIR_B, 200 + i, 0, 0, 0), 0);
		post(f, &wr);
		settle(f);
		c = pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE_IMM, ENGINE_WC_SUCCESS, 20 + i);
		assert_int_equal(c->byte_len, sizes[i]);
		c = pair_expect(f->x.p, PAIR_B, ENGINE_WC_RECV_RDMA_IMM, ENGINE_WC_SUCCESS, 200 + i);
		assert_int_equal(c->byte_len, sizes[i]);
		assert_int_equal(c->imm, 0xabc00000u + i);
		assert_int_equal(c->flags, ENGINE_WC_WITH_IMM);
		assert_int_equal(c->qpn, f->x.p->s[PAIR_B].qpn);
		pair_mem_expect(f->x.b, 64 * i, f->x.a->buf + 7 * i, sizes[i]);
		pair_expect_none(f->x.p, PAIR_A);
		pair_expect_none(f->x.p, PAIR_B);
	}
}

static void do_send(struct fx *f, uint8_t op)
{
	for (unsigned i = 0; i < NSIZES; i++) {
		struct engine_wr wr = pair_fx_wr(&f->x, op, 30 + i, 5 * i, sizes[i], 0);
		const struct engine_cqe *c;

		wr.rkey = 0;
		wr.imm = 0x5e000000u + i;
		pair_mem_reset(f->x.b);
		recv_b(f, 300 + i, 500, 64 * 1024);
		post(f, &wr);
		settle(f);
		c = pair_expect(f->x.p, PAIR_A, op == ENGINE_WR_SEND ? ENGINE_WC_SEND :
				ENGINE_WC_SEND_IMM, ENGINE_WC_SUCCESS, 30 + i);
		assert_int_equal(c->byte_len, sizes[i]);
		c = pair_expect(f->x.p, PAIR_B, ENGINE_WC_RECV, ENGINE_WC_SUCCESS, 300 + i);
		assert_int_equal(c->byte_len, sizes[i]);
		if (op == ENGINE_WR_SEND_IMM) {
			assert_int_equal(c->flags, ENGINE_WC_WITH_IMM);
			assert_int_equal(c->imm, 0x5e000000u + i);
		} else {
			assert_int_equal(c->flags, 0);
		}
		pair_mem_expect(f->x.b, 500, f->x.a->buf + 5 * i, sizes[i]);
		pair_expect_none(f->x.p, PAIR_A);
		pair_expect_none(f->x.p, PAIR_B);
	}
}

static void test_send(void **state)
{
	do_send(*state, ENGINE_WR_SEND);
}

static void test_send_imm(void **state)
{
	do_send(*state, ENGINE_WR_SEND_IMM);
}

static void test_read(void **state)
{
	struct fx *f = *state;

	pair_mem_fill(f->x.b, 77);
	for (unsigned i = 0; i < NSIZES; i++) {
		struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_READ, 40 + i, 300 + i, sizes[i], 11 * i);
		const struct engine_cqe *c;

		pair_mem_reset(f->x.a);
		post(f, &wr);
		settle(f);
		c = pair_expect(f->x.p, PAIR_A, ENGINE_WC_READ, ENGINE_WC_SUCCESS, 40 + i);
		assert_int_equal(c->byte_len, sizes[i]);
		pair_mem_expect(f->x.a, 300 + i, f->x.b->buf + 11 * i, sizes[i]);
		pair_expect_none(f->x.p, PAIR_A);
		pair_expect_none(f->x.p, PAIR_B);	/* the responder reports nothing */
	}
}

static void test_zero_length(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr;
	const struct engine_cqe *c;

	recv_b(f, 301, 0, 0);
	recv_b(f, 302, 0, 16);
	recv_b(f, 303, 0, 0);
	wr = pair_fx_wr(&f->x, ENGINE_WR_SEND, 1, 0, 0, 0);
	post(f, &wr);
	wr = pair_fx_wr(&f->x, ENGINE_WR_SEND_IMM, 2, 0, 0, 0);
	wr.imm = 0x1111;
	post(f, &wr);
	wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE_IMM, 3, 0, 0, 0);
	wr.imm = 0x2222;
	post(f, &wr);
	wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 4, 0, 0, 0);
	post(f, &wr);
	wr = pair_fx_wr(&f->x, ENGINE_WR_READ, 5, 0, 0, 0);
	post(f, &wr);
	settle(f);
	for (int i = 0; i < 5; i++) {
		static const uint8_t ops[] = { ENGINE_WC_SEND, ENGINE_WC_SEND_IMM,
					       ENGINE_WC_WRITE_IMM, ENGINE_WC_WRITE, ENGINE_WC_READ };

		c = pair_expect(f->x.p, PAIR_A, ops[i], ENGINE_WC_SUCCESS, 1 + i);
		assert_int_equal(c->byte_len, 0);
	}
	c = pair_expect(f->x.p, PAIR_B, ENGINE_WC_RECV, ENGINE_WC_SUCCESS, 301);
	assert_int_equal(c->byte_len, 0);
	assert_int_equal(c->flags, 0);
	c = pair_expect(f->x.p, PAIR_B, ENGINE_WC_RECV, ENGINE_WC_SUCCESS, 302);
	assert_int_equal(c->byte_len, 0);
	assert_int_equal(c->flags, ENGINE_WC_WITH_IMM);
	assert_int_equal(c->imm, 0x1111);
	c = pair_expect(f->x.p, PAIR_B, ENGINE_WC_RECV_RDMA_IMM, ENGINE_WC_SUCCESS, 303);
	assert_int_equal(c->byte_len, 0);
	assert_int_equal(c->imm, 0x2222);
	pair_expect_none(f->x.p, PAIR_B);
	pair_mem_untouched(f->x.b);
	assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED), 0);
}

/* Mixed work: completions in posting order on A, RECVs consumed in order on B. */
static void test_completion_order(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr;
	const struct engine_cqe *c;

	pair_mem_fill(f->x.b, 5);
	recv_b(f, 101, 100000, 4096);
	recv_b(f, 102, 0, 0);
	recv_b(f, 103, 110000, 4096);
	post(f, &(struct engine_wr){ .wr_id = 1, .opcode = ENGINE_WR_WRITE,
				     .flags = ENGINE_WR_SIGNALED, .lkey = f->x.a->lkey, .laddr = 0,
				     .len = 3000, .rkey = f->x.b->rkey, .raddr = 50000 });
	wr = pair_fx_wr(&f->x, ENGINE_WR_SEND, 2, 4000, 2000, 0);
	post(f, &wr);
	/* Reads what WRITE 1 wrote: delivery is in order. */
	wr = pair_fx_wr(&f->x, ENGINE_WR_READ, 3, 60000, 3000, 50000);
	post(f, &wr);
	wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE_IMM, 4, 0, 100, 70000);
	wr.imm = 4;
	post(f, &wr);
	wr = pair_fx_wr(&f->x, ENGINE_WR_SEND_IMM, 5, 8000, 1500, 0);
	wr.imm = 5;
	post(f, &wr);
	wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 6, 0, 10, 80000);
	wr.flags = 0;	/* unsignaled: no completion on success */
	post(f, &wr);
	wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 7, 0, 10, 80010);
	post(f, &wr);
	settle(f);

	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_SEND, ENGINE_WC_SUCCESS, 2);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_READ, ENGINE_WC_SUCCESS, 3);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE_IMM, ENGINE_WC_SUCCESS, 4);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_SEND_IMM, ENGINE_WC_SUCCESS, 5);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 7);
	pair_expect_none(f->x.p, PAIR_A);
	c = pair_expect(f->x.p, PAIR_B, ENGINE_WC_RECV, ENGINE_WC_SUCCESS, 101);
	assert_int_equal(c->byte_len, 2000);
	c = pair_expect(f->x.p, PAIR_B, ENGINE_WC_RECV_RDMA_IMM, ENGINE_WC_SUCCESS, 102);
	assert_int_equal(c->imm, 4);
	c = pair_expect(f->x.p, PAIR_B, ENGINE_WC_RECV, ENGINE_WC_SUCCESS, 103);
	assert_int_equal(c->imm, 5);
	pair_expect_none(f->x.p, PAIR_B);
	assert_memory_equal(f->x.b->buf + 50000, f->x.a->buf, 3000);
	assert_memory_equal(f->x.a->buf + 60000, f->x.a->buf, 3000);
	assert_memory_equal(f->x.b->buf + 100000, f->x.a->buf + 4000, 2000);
	assert_memory_equal(f->x.b->buf + 110000, f->x.a->buf + 8000, 1500);
	assert_memory_equal(f->x.b->buf + 70000, f->x.a->buf, 100);
	assert_memory_equal(f->x.b->buf + 80000, f->x.a->buf, 10);
	assert_memory_equal(f->x.b->buf + 80010, f->x.a->buf, 10);
}

/* More READs than may be outstanding at once (MROC_MAX_RD = 16): all complete, in order. */
static void test_many_reads(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr;

	pair_mem_fill(f->x.b, 3);
	pair_mem_reset(f->x.a);
	for (int i = 0; i < 40; i++) {
		wr = pair_fx_wr(&f->x, ENGINE_WR_READ, 100 + i, 1000 * i, 900 + i, 2000 * i);
		post(f, &wr);
	}
	settle(f);
	for (int i = 0; i < 40; i++) {
		const struct engine_cqe *c = pair_expect(f->x.p, PAIR_A, ENGINE_WC_READ,
							 ENGINE_WC_SUCCESS, 100 + i);

		assert_int_equal(c->byte_len, 900 + i);
		assert_memory_equal(f->x.a->buf + 1000 * i, f->x.b->buf + 2000 * i, 900 + i);
	}
	pair_expect_none(f->x.p, PAIR_A);
	pair_expect_none(f->x.p, PAIR_B);
}

/* Several connected QP pairs at once: each its own data and completions, in order. */
static void test_many_qps(void **state)
{
	struct fx *f = *state;
	enum { NQP = 4, NWR = 20, LEN = 2500 };
	uint32_t qa[NQP], qb[NQP];
	unsigned next[NQP] = { 0 };
	const struct engine_cqe *c;

	qa[0] = f->x.p->s[PAIR_A].qpn;
	qb[0] = f->x.p->s[PAIR_B].qpn;
	for (int q = 1; q < NQP; q++) {
		struct engine_qp_attr a = pair_test_attr();

		a.npaths = (uint8_t)(q + 1);
		a.user = 0x100 + q;
		qb[q] = pair_qp_create(f->x.p, PAIR_B, &a);
		qa[q] = pair_qp_create(f->x.p, PAIR_A, &a);
		assert_int_equal(engine_qp_listen(f->x.p->s[PAIR_B].eng, qb[q], 100 + q), 0);
		assert_int_equal(engine_qp_connect(f->x.p->s[PAIR_A].eng, qa[q], PAIR_B, 100 + q,
						   pair_clock(f->x.p, PAIR_A)), 0);
	}
	pair_pump(f->x.p);
	/* Events come in order per QP only: take them as a set. */
	for (int side = 0; side < 2; side++) {
		unsigned seen = 0;

		for (int k = 1; k < NQP; k++) {
			const uint32_t *qpn = side == PAIR_A ? qa : qb;
			unsigned q;

			c = pair_expect(f->x.p, side, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS,
					PAIR_ANY_ID);
			assert_in_range(c->wr_id, 0x101, 0x100 + NQP - 1);
			q = (unsigned)(c->wr_id - 0x100);
			assert_int_equal(c->qpn, qpn[q]);
			seen |= 1u << q;
		}
		assert_int_equal(seen, (1u << NQP) - 2);
	}
	/* Interleaved posts: WR i of QP q writes its own slice of B's region. */
	for (int i = 0; i < NWR; i++)
		for (int q = 0; q < NQP; q++) {
			struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, q * 1000 + i, 97 * i + q,
						    LEN, (uint64_t)(q * NWR + i) * LEN);

			assert_int_equal(engine_post_send(f->x.p->s[PAIR_A].eng, qa[q], &wr,
							  pair_clock(f->x.p, PAIR_A)), 0);
		}
	settle(f);
	while ((c = pair_cqe(f->x.p, PAIR_A))) {
		int q = (int)(c->wr_id / 1000);

		assert_in_range(q, 0, NQP - 1);
		assert_int_equal(c->qpn, qa[q]);
		assert_int_equal(c->opcode, ENGINE_WC_WRITE);
		assert_int_equal(c->status, ENGINE_WC_SUCCESS);
		assert_int_equal(c->wr_id % 1000, next[q]);	/* in order within its QP */
		next[q]++;
	}
	for (int q = 0; q < NQP; q++) {
		assert_int_equal(next[q], NWR);
		for (int i = 0; i < NWR; i++)
			assert_memory_equal(f->x.b->buf + (uint64_t)(q * NWR + i) * LEN,
					    f->x.a->buf + 97 * i + q, LEN);
	}
	pair_expect_none(f->x.p, PAIR_B);
}

/* ---- order of arrival ---------------------------------------------------------- */

/* A 5-segment WRITE delivered last segment first. */
static void test_reverse_order(void **state)
{
	struct fx *f = *state;
	uint32_t len = 5 * MTU - 100;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, len, 100);
	struct pair_capture *cap;
	struct pair_pkt seg[5];

	post(f, &wr);
	cap = capture_a_data(f, 5);
	memcpy(seg, cap->pkt, sizeof(seg));
	for (int k = 0; k < 5; k++) {
		assert_int_equal(seg[k].data[PKT_OPCODE], MROC_OP_WRITE);
		assert_int_equal(pkt_get32(seg[k].data, PKT_DSN), pkt_get32(seg[0].data, PKT_DSN) + k);
		assert_int_equal(pkt_get32(seg[k].data, PKT_OFFSET), k * MTU);
	}
	for (int k = 4; k >= 0; k--) {
		uint32_t from = k * MTU, to = len;

		assert_int_equal(pair_deliver(f->x.p, &seg[k]), 0);
		/* Placed at once, wherever it falls in the message. */
		pair_mem_expect(f->x.b, 100 + from, f->x.a->buf + from, to - from);
		/*
		 * ACKs flow back, delayed ones too (A's probes and resends stay
		 * captured): no completion before the last segment.
		 */
		pair_run_for(f->x.p, 20 * PAIR_US);
		if (k)
			pair_expect_none(f->x.p, PAIR_A);
	}
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_capture_stop(f->x.p);
	settle(f);
	pair_expect_none(f->x.p, PAIR_A);
	pair_expect_none(f->x.p, PAIR_B);
	pair_mem_expect(f->x.b, 100, f->x.a->buf, len);
	assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED), len);
}

/*
 * A bulk message goes out in runs of ack_every (4) packets per path, each
 * run ACKed at once by one ACK (issue #22: sprayed a packet per path, a QP
 * among hundreds had each path's delayed ACK fire for every packet); the
 * next run takes another path.  Bulk: a whole run for every path (4 x 4).
 */
static void test_bulk_runs(void **state)
{
	struct fx *f = *state;
	uint32_t len = 16 * MTU;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, len, 0);
	struct pair_capture *cap;
	struct pair_pkt seg[16];
	uint64_t acks;

	post(f, &wr);
	cap = capture_a_data(f, 16);
	memcpy(seg, cap->pkt, sizeof(seg));
	for (int r = 0; r < 4; r++) {
		for (int k = 1; k < 4; k++)
			assert_int_equal(seg[4 * r + k].data[PKT_PATH], seg[4 * r].data[PKT_PATH]);
		for (int o = 0; o < r; o++)
			assert_int_not_equal(seg[4 * r].data[PKT_PATH], seg[4 * o].data[PKT_PATH]);
	}
	acks = stat_b(f, EC_TX_ACKS);
	for (int k = 0; k < 16; k++)
		assert_int_equal(pair_deliver(f->x.p, &seg[k]), 0);
	pair_run_for(f->x.p, 20 * PAIR_US);
	assert_int_equal(stat_b(f, EC_TX_ACKS) - acks, 4);	/* one per run */
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_capture_stop(f->x.p);
	settle(f);
	pair_expect_none(f->x.p, PAIR_A);
	pair_mem_expect(f->x.b, 0, f->x.a->buf, len);
}

/*
 * A message too short to give every path a run is sprayed a packet per
 * path (issue #23): in runs, each 4-packet message of a 64-host AllToAll
 * crossed one plane of four, picked by chance, and the AllToAll took 19 %
 * longer than a QP per plane.  8 packets on 4 paths: each path takes one
 * in turn, twice.
 */
static void test_short_sprayed(void **state)
{
	struct fx *f = *state;
	uint32_t len = 8 * MTU;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, len, 0);
	struct pair_capture *cap;
	struct pair_pkt seg[8];

	post(f, &wr);
	cap = capture_a_data(f, 8);
	memcpy(seg, cap->pkt, sizeof(seg));
	for (int k = 0; k < 8; k++) {
		for (int o = k < 4 ? 0 : 4; o < k; o++)
			assert_int_not_equal(seg[k].data[PKT_PATH], seg[o].data[PKT_PATH]);
		if (k >= 4)
			assert_int_equal(seg[k].data[PKT_PATH], seg[k - 4].data[PKT_PATH]);
	}
	for (int k = 0; k < 8; k++)
		assert_int_equal(pair_deliver(f->x.p, &seg[k]), 0);
	pair_run_for(f->x.p, 20 * PAIR_US);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_capture_stop(f->x.p);
	settle(f);
	pair_expect_none(f->x.p, PAIR_A);
	pair_mem_expect(f->x.b, 0, f->x.a->buf, len);
}

/* A WRITE_IMM completes at the target only once the WRITE before it is placed. */
static void test_write_imm_waits_for_write(void **state)
{
	struct fx *f = *state;
	struct engine_wr w1 = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 3 * MTU, 0);
	struct engine_wr w2 = pair_fx_wr(&f->x, ENGINE_WR_WRITE_IMM, 2, 5000, 200, 10000);
	struct pair_capture *cap;
	struct pair_pkt pk[4];
	const struct engine_cqe *c;

	w2.imm = 0xfeed;
	recv_b(f, 77, 0, 0);
	post(f, &w1);
	post(f, &w2);
	cap = capture_a_data(f, 4);
	memcpy(pk, cap->pkt, sizeof(pk));
	assert_int_equal(pk[3].data[PKT_OPCODE], MROC_OP_WRITE_IMM);

	assert_int_equal(pair_deliver(f->x.p, &pk[3]), 0);
	pair_run_for(f->x.p, 20 * PAIR_US);
	pair_expect_none(f->x.p, PAIR_B);
	pair_expect_none(f->x.p, PAIR_A);
	/* Its payload is placed already; only its completion waits. */
	assert_memory_equal(f->x.b->buf + 10000, f->x.a->buf + 5000, 200);
	for (int k = 2; k >= 0; k--) {
		assert_int_equal(pair_deliver(f->x.p, &pk[k]), 0);
		pair_run_for(f->x.p, 20 * PAIR_US);
		if (k) {
			pair_expect_none(f->x.p, PAIR_B);
			pair_expect_none(f->x.p, PAIR_A);
		}
	}
	c = pair_expect(f->x.p, PAIR_B, ENGINE_WC_RECV_RDMA_IMM, ENGINE_WC_SUCCESS, 77);
	assert_int_equal(c->imm, 0xfeed);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE_IMM, ENGINE_WC_SUCCESS, 2);
	assert_memory_equal(f->x.b->buf, f->x.a->buf, 3 * MTU);
	assert_memory_equal(f->x.b->buf + 10000, f->x.a->buf + 5000, 200);
}

/* ---- duplicates ------------------------------------------------------------------ */

static void test_duplicate_write(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 200, 300);
	struct pair_capture *cap;
	struct pair_pkt pk;

	post(f, &wr);
	cap = capture_a_data(f, 1);
	pk = cap->pkt[0];
	assert_int_equal(pair_deliver(f->x.p, &pk), 0);
	pair_mem_expect(f->x.b, 300, f->x.a->buf, 200);
	/* The application reuses the buffer: a duplicate must not place again. */
	memset(f->x.b->buf + 300, 0x77, 200);
	assert_int_equal(pair_deliver(f->x.p, &pk), -EALREADY);
	assert_int_equal(stat_b(f, EC_RX_DUP), 1);
	assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED), 200);
	for (int i = 0; i < 200; i++)
		assert_int_equal(f->x.b->buf[300 + i], 0x77);
	pair_capture_stop(f->x.p);
	settle(f);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_expect_none(f->x.p, PAIR_A);
	pair_expect_none(f->x.p, PAIR_B);
}

/*
 * A resend of data B already has, from another source port: its ACK was lost
 * (the way back went down under it) and the sender moved the path.  B takes it
 * as a duplicate and acknowledges it on that source port, so the driver must
 * hear of it (engine_rx_heard) and send the ACK back the way it came.  mrocd
 * heard only of new data: the ACK went by the old way (AF_XDP: the port that
 * source port last came in on, or sport % ports), lost again; a moved path's
 * resends are all duplicates, so it timed out until its port hashed to a live
 * one (test_fabric_ports.sh: every path of A's dead p2 ended on p1).
 */
static void test_duplicate_is_heard(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 200, 300);
	struct pair_capture *cap;
	struct pair_pkt pk, bad;
	int ret;

	post(f, &wr);
	cap = capture_a_data(f, 1);
	pk = cap->pkt[0];
	assert_true(engine_rx_heard(pair_deliver(f->x.p, &pk)));
	/* B's ACK is lost. */
	cap = pair_capture_start(f->x.p, PAIR_B, PAIR_OP_BIT(MROC_OP_ACK), false);
	pair_run_for(f->x.p, 100 * PAIR_US);
	assert_int_not_equal(cap->n, 0);
	assert_int_equal(cap->pkt[cap->n - 1].sport, pk.sport);
	/* The resend, from a port that B never had new data from. */
	pk.sport = (uint16_t)(pk.sport + 1);
	pk.data[PKT_FLAGS] |= MROC_F_RETX;
	cap = pair_capture_start(f->x.p, PAIR_B, PAIR_OP_BIT(MROC_OP_ACK), true);
	ret = pair_deliver(f->x.p, &pk);
	assert_int_equal(ret, -EALREADY);
	assert_true(engine_rx_heard(ret));
	assert_int_equal(stat_b(f, EC_RX_DUP), 1);
	/* Its ACK goes back on that port. */
	pair_run_for(f->x.p, 100 * PAIR_US);
	assert_int_not_equal(cap->n, 0);
	assert_int_equal(cap->pkt[0].sport, pk.sport);
	pair_capture_stop(f->x.p);
	settle(f);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	/* What the engine refuses is not heard: a packet to a QP B does not have. */
	bad = pk;
	bad.sport = (uint16_t)(pk.sport + 2);
	pkt_put32(bad.data, PKT_DST_QPN, pkt_get32(pk.data, PKT_DST_QPN) ^ 0x5a5a);
	ret = pair_deliver(f->x.p, &bad);
	assert_int_not_equal(ret, 0);
	assert_false(engine_rx_heard(ret));
}

/* A duplicated SEND consumes one RECV, not two. */
static void test_duplicate_send(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_SEND, 1, 0, 300, 0);
	struct pair_capture *cap;
	struct engine_qp_info info;
	struct pair_pkt pk;

	recv_b(f, 11, 0, 1000);
	recv_b(f, 12, 1000, 1000);
	post(f, &wr);
	cap = capture_a_data(f, 1);
	pk = cap->pkt[0];
	assert_int_equal(pair_deliver(f->x.p, &pk), 0);
	assert_int_equal(pair_deliver(f->x.p, &pk), -EALREADY);
	assert_int_equal(pair_deliver(f->x.p, &pk), -EALREADY);
	assert_int_equal(stat_b(f, EC_RX_DUP), 2);
	pair_capture_stop(f->x.p);
	settle(f);
	pair_expect(f->x.p, PAIR_B, ENGINE_WC_RECV, ENGINE_WC_SUCCESS, 11);
	pair_expect_none(f->x.p, PAIR_B);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_SEND, ENGINE_WC_SUCCESS, 1);
	pair_expect_none(f->x.p, PAIR_A);
	assert_int_equal(engine_qp_info(f->x.p->s[PAIR_B].eng, f->x.p->s[PAIR_B].qpn, &info), 0);
	assert_int_equal(info.rq_posted, 1);
	pair_mem_expect(f->x.b, 0, f->x.a->buf, 300);
}

/*
 * The same DSN again under a PSN its path has not seen (as a resend on another
 * path would be): a DSN duplicate, acknowledged but not placed again, both
 * while the message is incomplete (the DSN map) and after (below cum_dsn).
 */
static void test_duplicate_dsn_new_psn(void **state)
{
	struct fx *f = *state;
	uint32_t len = 2 * MTU + 50;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, len, 0);
	struct pair_capture *cap;
	struct pair_pkt seg[3], fake;

	post(f, &wr);
	cap = capture_a_data(f, 3);
	memcpy(seg, cap->pkt, sizeof(seg));
	/* One segment per path, so PSN + 1 is a PSN its path has not used. */
	assert_int_not_equal(seg[0].data[PKT_PATH], seg[2].data[PKT_PATH]);
	assert_int_not_equal(seg[1].data[PKT_PATH], seg[2].data[PKT_PATH]);

	assert_int_equal(pair_deliver(f->x.p, &seg[2]), 0);
	memset(f->x.b->buf + 2 * MTU, 0x77, 50);
	fake = seg[2];
	pkt_put32(fake.data, PKT_PSN, pkt_get32(seg[2].data, PKT_PSN) + 1);
	fake.data[PKT_FLAGS] |= MROC_F_RETX;
	assert_int_equal(pair_deliver(f->x.p, &fake), -EALREADY);
	assert_int_equal(stat_b(f, EC_RX_DUP), 1);
	for (int i = 0; i < 50; i++)
		assert_int_equal(f->x.b->buf[2 * MTU + i], 0x77);

	assert_int_equal(pair_deliver(f->x.p, &seg[0]), 0);
	assert_int_equal(pair_deliver(f->x.p, &seg[1]), 0);
	pair_run_for(f->x.p, 20 * PAIR_US);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);

	memset(f->x.b->buf, 0x66, MTU);
	fake = seg[0];
	pkt_put32(fake.data, PKT_PSN, pkt_get32(seg[0].data, PKT_PSN) + 1);
	fake.data[PKT_FLAGS] |= MROC_F_RETX;
	assert_int_equal(pair_deliver(f->x.p, &fake), -EALREADY);
	assert_int_equal(stat_b(f, EC_RX_DUP), 2);
	for (int i = 0; i < MTU; i++)
		assert_int_equal(f->x.b->buf[i], 0x66);
	assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED), len);
	pair_capture_stop(f->x.p);
	settle(f);
	pair_expect_none(f->x.p, PAIR_A);
	pair_expect_none(f->x.p, PAIR_B);
	assert_int_equal(pair_state(f->x.p, PAIR_A), ENGINE_QPS_CONNECTED);
}

/* ---- RNR --------------------------------------------------------------------------- */

/*
 * SEND with no RECV posted: RNR NAK, nothing completes; the RECV is posted,
 * and one RNR delay after the NAK the SEND is resent and completes
 * (docs/PROTOCOL.md 8.4), not only after the 4 * rto_min stall net (8.7).
 * (Regression: the NAK was acted on before the ACK's SACK walk, so no
 * segment waited in RNR state and the SEND completed at t0 + 800 us instead
 * of about t0 + 100 us; fixed in 77defe7.)
 */
static void test_rnr_then_recv(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_SEND, 1, 0, 2 * MTU + 5, 0);
	uint64_t t0 = f->x.p->now, delay = f->x.p->s[PAIR_A].cfg.rnr_delay_ns;
	const struct engine_cqe *c;

	post(f, &wr);
	pair_run_for(f->x.p, delay / 2);
	assert_true(stat_b(f, EC_RX_RNR) >= 1);
	assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED), 0);
	pair_expect_none(f->x.p, PAIR_A);
	pair_expect_none(f->x.p, PAIR_B);
	pair_mem_untouched(f->x.b);

	recv_b(f, 50, 200, 8192);
	/* One RNR delay after the NAK, the SEND goes again and completes. */
	pair_run(f->x.p, t0 + delay + delay / 2);
	c = pair_expect(f->x.p, PAIR_B, ENGINE_WC_RECV, ENGINE_WC_SUCCESS, 50);
	assert_int_equal(c->byte_len, 2 * MTU + 5);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_SEND, ENGINE_WC_SUCCESS, 1);
	pair_mem_expect(f->x.b, 200, f->x.a->buf, 2 * MTU + 5);
	settle(f);
	pair_expect_none(f->x.p, PAIR_A);
	pair_expect_none(f->x.p, PAIR_B);
}

static void rnr_exceeded(void **state, uint32_t retries)
{
	struct engine_config ca;
	struct fx *f;
	struct engine_wr wr;

	pair_test_config(&ca);
	ca.rnr_retry = retries;
	f = fx_new(state, &ca, NULL);
	pair_connect(f->x.p, NULL, NULL, SVC);
	wr = pair_fx_wr(&f->x, ENGINE_WR_SEND_IMM, 3, 0, 100, 0);
	post(f, &wr);
	pair_run_for(f->x.p, 20 * PAIR_MS);
	/* The first NAK and one more per retry. */
	assert_int_equal(stat_b(f, EC_RX_RNR), retries + 1);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_SEND_IMM, ENGINE_WC_RNR_RETRY_EXC_ERR, 3);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_EV_ERROR, PAIR_ANY_STATUS, 0xa);
	assert_int_equal(pair_state(f->x.p, PAIR_A), ENGINE_QPS_ERROR);
	pair_mem_untouched(f->x.b);
}

static void test_rnr_retry_zero(void **state)
{
	rnr_exceeded(state, 0);
}

static void test_rnr_retry_two(void **state)
{
	rnr_exceeded(state, 2);
}

/*
 * rnr_retry = 7 is "forever": a receiver 50 RNR delays late still gets the
 * SEND.  (Regression, issue #10: RNR resends counted against max_retx, so
 * the QP died with RETRY_EXC after about 33 refusals.)
 */
static void test_rnr_forever(void **state)
{
	struct engine_config ca;
	struct fx *f;
	struct engine_wr wr;
	uint64_t delay;

	pair_test_config(&ca);
	ca.rnr_retry = 7;
	f = fx_new(state, &ca, NULL);
	pair_connect(f->x.p, NULL, NULL, SVC);
	delay = ca.rnr_delay_ns;
	wr = pair_fx_wr(&f->x, ENGINE_WR_SEND, 4, 0, 100, 0);
	post(f, &wr);
	pair_run_for(f->x.p, 50 * delay);
	assert_true(stat_b(f, EC_RX_RNR) > ca.max_retx + 1);
	pair_expect_none(f->x.p, PAIR_A);
	recv_b(f, 51, 0, 4096);
	pair_run_for(f->x.p, 2 * delay);
	pair_expect(f->x.p, PAIR_B, ENGINE_WC_RECV, ENGINE_WC_SUCCESS, 51);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_SEND, ENGINE_WC_SUCCESS, 4);
	assert_int_equal(pair_state(f->x.p, PAIR_A), ENGINE_QPS_CONNECTED);
}

/*
 * rnr_retry counts RNR episodes, not refused segments: a 4-segment SEND to a
 * receiver one and a half RNR delays late is refused in two episodes and
 * completes with rnr_retry = 3.  (Regression, issue #10: the first episode's
 * four NAKs used up the retries.)
 */
static void test_rnr_counts_episodes(void **state)
{
	struct engine_config ca;
	struct fx *f;
	struct engine_wr wr;
	uint64_t t0;

	struct engine_qp_attr one = pair_test_attr();

	/* One packet at a time, so each refusal is a NAK of its own, as on a wire. */
	pair_test_config(&ca);
	ca.rnr_retry = 3;
	ca.init_pwnd_pkts = 1;
	one.npaths = 1;
	one.user = 0xa;
	f = fx_new(state, &ca, NULL);
	pair_connect(f->x.p, &one, NULL, SVC);
	t0 = f->x.p->now;
	wr = pair_fx_wr(&f->x, ENGINE_WR_SEND, 5, 0, 4 * MTU, 0);
	post(f, &wr);
	pair_run(f->x.p, t0 + ca.rnr_delay_ns + ca.rnr_delay_ns / 2);
	assert_true(stat_b(f, EC_RX_RNR) >= 4);
	recv_b(f, 52, 0, 8192);
	pair_run_for(f->x.p, 3 * ca.rnr_delay_ns);
	pair_expect(f->x.p, PAIR_B, ENGINE_WC_RECV, ENGINE_WC_SUCCESS, 52);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_SEND, ENGINE_WC_SUCCESS, 5);
	pair_mem_expect(f->x.b, 0, f->x.a->buf, 4 * MTU);
}

/*
 * A QP that disconnects and connects again, to a new QP of the peer, starts
 * clean: its SENDs number from SSN 0 and its NAK sequence from the new peer's
 * first NAK.  (Regression, issue #10: qp_start kept ssn_next and nak_seen,
 * so the new peer refused the SEND and its RNR NAK was ignored as old.)
 */
static void test_reconnect_clean(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_SEND, 6, 0, 100, 0);
	uint64_t t0, delay = f->x.p->s[PAIR_A].cfg.rnr_delay_ns;
	struct engine_qp_attr attr = pair_test_attr();
	struct pair_side *a = &f->x.p->s[PAIR_A], *b = &f->x.p->s[PAIR_B];
	uint32_t b2;

	/* First connection: an RNR episode, then the SEND completes. */
	post(f, &wr);
	pair_run_for(f->x.p, delay / 2);
	recv_b(f, 60, 0, 4096);
	pair_run_for(f->x.p, 2 * delay);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_SEND, ENGINE_WC_SUCCESS, 6);
	pair_expect(f->x.p, PAIR_B, ENGINE_WC_RECV, ENGINE_WC_SUCCESS, 60);
	pair_mem_reset(f->x.b);

	assert_int_equal(engine_qp_disconnect(a->eng, a->qpn, pair_clock(f->x.p, PAIR_A)), 0);
	settle(f);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_EV_DISCONNECTED, PAIR_ANY_STATUS, PAIR_ANY_ID);
	pair_expect(f->x.p, PAIR_B, ENGINE_WC_EV_DISCONNECTED, PAIR_ANY_STATUS, PAIR_ANY_ID);

	/* Second connection, to a fresh QP: again an RNR episode first. */
	attr.user = 0xb2;
	b2 = pair_qp_create(f->x.p, PAIR_B, &attr);
	assert_int_equal(engine_qp_listen(b->eng, b2, SVC + 1), 0);
	assert_int_equal(engine_qp_connect(a->eng, a->qpn, PAIR_B, SVC + 1, pair_clock(f->x.p, PAIR_A)), 0);
	pair_run_for(f->x.p, 100 * PAIR_US);
	pair_expect(f->x.p, PAIR_B, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xb2);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, PAIR_ANY_ID);
	b->qpn = b2;
	wr.wr_id = 7;
	t0 = f->x.p->now;
	post(f, &wr);
	pair_run_for(f->x.p, delay / 2);
	recv_b(f, 70, 512, 4096);
	/* Acted on the RNR NAK: resent one RNR delay later, not after the stall net. */
	pair_run(f->x.p, t0 + delay + delay / 2);
	pair_expect(f->x.p, PAIR_B, ENGINE_WC_RECV, ENGINE_WC_SUCCESS, 70);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_SEND, ENGINE_WC_SUCCESS, 7);
	pair_mem_expect(f->x.b, 512, f->x.a->buf, 100);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define TB(fn) cmocka_unit_test_setup_teardown(fn, setup_bare, teardown)
#define TS(fn) cmocka_unit_test_setup_teardown(fn, setup_split, teardown)
#define TP(fn) cmocka_unit_test_setup_teardown(fn, setup_split_planes, teardown)
	const struct CMUnitTest tests[] = {
		T(test_connected),
		T(test_write),
		T(test_write_imm),
		T(test_send),
		T(test_send_imm),
		T(test_read),
		T(test_zero_length),
		T(test_completion_order),
		T(test_many_reads),
		T(test_many_qps),
		T(test_reverse_order),
		T(test_bulk_runs),
		T(test_short_sprayed),
		T(test_write_imm_waits_for_write),
		T(test_duplicate_write),
		T(test_duplicate_is_heard),
		T(test_duplicate_send),
		T(test_duplicate_dsn_new_psn),
		T(test_rnr_then_recv),
		TB(test_rnr_retry_zero),
		TB(test_rnr_retry_two),
		TB(test_rnr_forever),
		TB(test_rnr_counts_episodes),
		T(test_reconnect_clean),
		/* split messages (test_engine_split.c): every operation and size as above */
		TS(test_write),
		TS(test_write_imm),
		TS(test_send),
		TS(test_send_imm),
		TS(test_read),
		TS(test_zero_length),
		TS(test_completion_order),
		TS(test_many_reads),
		TS(test_many_qps),
		/* split by ports: 8 paths over 4 ports, every operation */
		TP(test_write),
		TP(test_write_imm),
		TP(test_send),
		TP(test_send_imm),
		TP(test_read),
		TP(test_completion_order),
	};
#undef T
#undef TB
#undef TS
#undef TP

	return cmocka_run_group_tests(tests, NULL, NULL);
}
