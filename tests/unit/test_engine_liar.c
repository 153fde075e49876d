// SPDX-License-Identifier: MIT
/*
 * A peer whose ACKs lie (authenticated, so nothing on the wire tells): the
 * engine cannot keep the data the lie claims delivered, but it must not
 * stay busy for it forever either.  An ACK claimed the peer's cumulative
 * DSN past a segment the peer never got, and later ACKs told the truth
 * again: the peer's cumulative DSN stood below ours for good, every new
 * segment was acknowledged on its path and never cumulatively, and the
 * stall net (PROTOCOL 8.7) resent them every 4 rto_min without end: each
 * resend's ACK was news (no dead peer), and a stalled resend is no retry
 * (max_retx never reached).  A's WRITE never completed, the QP never
 * failed, 66,000 packets a second.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>

#include "engine_pair.h"

#define REG_LEN		(256 * 1024)
#define SVC		42

static int teardown(void **state)
{
	return pair_fx_teardown(state);
}

/* Drop A's first data packet; raise the cum_dsn of B's first ACK after it past it. */
struct liar {
	bool dropped, lied;
	uint32_t dsn;
	uint64_t a_data;
};

static bool lie_once(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct liar *l = arg;

	(void)p;
	if (pkt->from == PAIR_A && mroc_op_is_data(pkt->data[PKT_OPCODE])) {
		l->a_data++;
		if (l->dropped)
			return true;
		l->dropped = true;
		l->dsn = pkt_get32(pkt->data, PKT_DSN);
		return false;
	}
	if (pkt->from == PAIR_B && pkt->data[PKT_OPCODE] == MROC_OP_ACK && l->dropped && !l->lied) {
		l->lied = true;
		pkt_put32(pkt->data, PKT_ACK_CUM_DSN, l->dsn + 4);
	}
	return true;
}

static void test_cum_dsn_lie_no_livelock(void **state)
{
	struct engine_qp_attr qa = pair_test_attr(), qb = pair_test_attr();
	struct liar l = { 0 };
	struct engine_config cfg;
	struct pair_fx *x;
	struct engine_wr wr;
	const struct engine_cqe *c;
	uint64_t t0, sent0;

	qa.npaths = qb.npaths = 1;
	pair_test_config(&cfg);
	x = pair_fx_open(state, sizeof(*x), &cfg, NULL, REG_LEN, ENGINE_ACCESS_ALL, 1);
	pair_connect(x->p, &qa, &qb, SVC);
	pair_set_delay(x->p, PAIR_A, 10 * PAIR_US);
	pair_set_delay(x->p, PAIR_B, 10 * PAIR_US);
	x->p->filter = lie_once;
	x->p->filter_arg = &l;

	/* 4 segments: the first is lost, the lie says all four arrived. */
	wr = pair_fx_wr(x, ENGINE_WR_WRITE, 1, 0, 4 * cfg.mtu, 0);
	assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
	pair_run_for(x->p, 10 * PAIR_MS);
	assert_true(l.lied);
	pair_expect(x->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);

	/* The next WRITE arrives whole, and the peer's cumulative DSN cannot pass it. */
	wr = pair_fx_wr(x, ENGINE_WR_WRITE, 2, 0, 4 * cfg.mtu, 0);
	assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
	t0 = x->p->now;
	sent0 = l.a_data;
	pair_run_for(x->p, 2 * cfg.dead_peer_ns);
	c = pair_cqe(x->p, PAIR_A);
	print_message("%.1f ms later: %llu data packets, WRITE 2 %s, QP state %u\n",
		      (double)(x->p->now - t0) / PAIR_MS, (unsigned long long)(l.a_data - sent0),
		      c ? (c->status == ENGINE_WC_SUCCESS ? "done" : "failed") : "outstanding",
		      pair_state(x->p, PAIR_A));
	/* Not done (the peer lacks a segment), but failed: no endless resending. */
	assert_non_null(c);
	assert_int_equal(c->wr_id, 2);
	assert_int_equal(c->status, ENGINE_WC_RETRY_EXC_ERR);
	assert_int_equal(pair_state(x->p, PAIR_A), ENGINE_QPS_ERROR);
	/* Within max_retx stalls of 4 rto_min each, a few packets each. */
	assert_true(l.a_data - sent0 <= 8ULL * (cfg.max_retx + 2));
}

/*
 * A peer whose segments of one message disagree (a field at a time): the
 * receiver took the message's shape from the first segment it had and each
 * later one's placement from that segment's own header, so a second
 * segment could claim another length, opcode, place or RECV and be written
 * there.  A segment that disagrees with the message its MSN names is a
 * protocol error on the QP: counted (EC_RX_MSG_MISMATCH), not placed, and
 * NAKed INVALID (the sender's WR fails, its QP goes to error).
 */
enum lie_field { LIE_MSG_LEN, LIE_OPCODE, LIE_RADDR, LIE_SSN, LIE_IMM };

struct seg_liar {
	enum lie_field what;
	unsigned seen;
	bool lied;
};

static bool lie_second_segment(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct seg_liar *l = arg;
	uint8_t *d = pkt->data;

	(void)p;
	if (pkt->from != PAIR_A || !mroc_op_is_data(d[PKT_OPCODE]) || ++l->seen != 2)
		return true;
	l->lied = true;
	switch (l->what) {
	case LIE_MSG_LEN:
		pkt_put32(d, PKT_MSG_LEN, pkt_get32(d, PKT_MSG_LEN) + 1024);
		break;
	case LIE_OPCODE:
		d[PKT_OPCODE] = d[PKT_OPCODE] == MROC_OP_WRITE ? MROC_OP_SEND : MROC_OP_WRITE;
		break;
	case LIE_RADDR:
		pkt_put64(d, PKT_RADDR, pkt_get64(d, PKT_RADDR) + 64 * 1024);
		break;
	case LIE_SSN:
		pkt_put32(d, PKT_SSN, pkt_get32(d, PKT_SSN) + 1);
		break;
	case LIE_IMM:
		pkt_put32(d, PKT_IMM, pkt_get32(d, PKT_IMM) ^ 1);
		break;
	}
	return true;
}

static void segments_disagree(void **state, uint8_t op, enum lie_field what)
{
	struct engine_qp_attr qa = pair_test_attr(), qb = pair_test_attr();
	struct seg_liar l = { .what = what };
	struct engine_config cfg;
	struct pair_fx *x;
	struct engine_wr wr;
	const struct engine_cqe *c;

	qa.npaths = qb.npaths = 1;
	pair_test_config(&cfg);
	x = pair_fx_open(state, sizeof(*x), &cfg, NULL, REG_LEN, ENGINE_ACCESS_ALL, 1);
	pair_connect(x->p, &qa, &qb, SVC);
	/* Two RECVs far apart in B's buffer: a SEND's, and the next one's. */
	assert_int_equal(pair_post_recv(x->p, PAIR_B, 1, x->b->lkey, 128 * 1024, 4096), 0);
	assert_int_equal(pair_post_recv(x->p, PAIR_B, 2, x->b->lkey, 192 * 1024, 4096), 0);
	x->p->filter = lie_second_segment;
	x->p->filter_arg = &l;
	wr = pair_fx_wr(x, op, 7, 0, 2 * cfg.mtu, 0);
	wr.imm = 5;
	assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
	pair_run_for(x->p, 20 * PAIR_MS);
	assert_true(l.lied);
	c = pair_cqe(x->p, PAIR_A);
	print_message("op %u, lie %u: A %s (status %d), B counted %llu, B completions %u\n", op,
		      what, c ? "completed" : "nothing", c ? c->status : -1,
		      (unsigned long long)pair_stat(x->p, PAIR_B, EC_RX_MSG_MISMATCH),
		      pair_pending(x->p, PAIR_B));
	assert_int_equal(pair_stat(x->p, PAIR_B, EC_RX_MSG_MISMATCH), 1);
	assert_non_null(c);
	assert_int_equal(c->wr_id, 7);
	assert_int_equal(c->status, ENGINE_WC_REM_INV_REQ_ERR);
	assert_int_equal(pair_state(x->p, PAIR_A), ENGINE_QPS_ERROR);
	/* Only the first segment was placed: where the message said. */
	if (op == ENGINE_WR_WRITE) {
		pair_mem_expect(x->b, 0, x->a->buf, cfg.mtu);
	} else {
		pair_mem_expect(x->b, 128 * 1024, x->a->buf, cfg.mtu);
		/* Neither RECV completed but flushed: B's QP went down with A's. */
		while ((c = pair_cqe(x->p, PAIR_B)))
			assert_false(c->opcode == ENGINE_WC_RECV && c->status == ENGINE_WC_SUCCESS);
	}
}

static void test_segment_lies_msg_len(void **state)
{
	segments_disagree(state, ENGINE_WR_WRITE, LIE_MSG_LEN);
}

static void test_segment_lies_opcode(void **state)
{
	segments_disagree(state, ENGINE_WR_WRITE, LIE_OPCODE);
}

static void test_segment_lies_raddr(void **state)
{
	segments_disagree(state, ENGINE_WR_WRITE, LIE_RADDR);
}

static void test_send_segment_lies_ssn(void **state)
{
	segments_disagree(state, ENGINE_WR_SEND, LIE_SSN);
}

static void test_send_segment_lies_opcode(void **state)
{
	segments_disagree(state, ENGINE_WR_SEND, LIE_OPCODE);
}

static void test_send_segment_lies_imm(void **state)
{
	segments_disagree(state, ENGINE_WR_SEND_IMM, LIE_IMM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_cum_dsn_lie_no_livelock, teardown),
		cmocka_unit_test_teardown(test_segment_lies_msg_len, teardown),
		cmocka_unit_test_teardown(test_segment_lies_opcode, teardown),
		cmocka_unit_test_teardown(test_segment_lies_raddr, teardown),
		cmocka_unit_test_teardown(test_send_segment_lies_ssn, teardown),
		cmocka_unit_test_teardown(test_send_segment_lies_opcode, teardown),
		cmocka_unit_test_teardown(test_send_segment_lies_imm, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
