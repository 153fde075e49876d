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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_cum_dsn_lie_no_livelock, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
