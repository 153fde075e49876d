// SPDX-License-Identifier: MIT
/*
 * Connection management's timers, two engines back to back (cm_pair.h):
 * when a request nobody answers fails (CONNECT_ERR after cm_retries tries,
 * at the same time with the copies), what it sends until then, and a
 * REP that comes after its try's wait ran out, before the timers ran,
 * and a proof held back (its round trip not the host's largest RTT).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_pair.h"

/*
 * Nobody answers: CONNECT_REQ is retried cm_retries times with backoff, then
 * CONNECT_ERR, at the same time as before the copies; each try sends its REQ
 * four times (copies at a quarter, half and three quarters of its wait,
 * cm_tx.c try_arm), and from the second try on each twice (by two ports at
 * once, cm_tx.c twin_owed), so 4 + 8 x cm_retries REQs.
 */
static void test_connect_unanswered(void **state)
{
	struct engine_config ca;
	struct pair *p;
	struct engine_qp_attr a = attr_of(0, 0xa);
	uint64_t t0, rto = 0;
	uint32_t qa;

	pair_test_config(&ca);
	ca.cm_retries = 3;
	p = open_pair(state, &ca, NULL);
	qa = pair_qp_create(p, PAIR_A, &a);
	p->s[PAIR_A].qpn = qa;
	t0 = p->now;
	/* Peer handle 7: the pump delivers it nowhere. */
	assert_int_equal(engine_qp_connect(p->s[PAIR_A].eng, qa, 7, SVC, pair_clock(p, PAIR_A)), 0);
	for (uint32_t i = 0; i <= ca.cm_retries; i++)
		rto += ca.rto_init_ns << i;
	pair_run(p, t0 + rto - 1);
	pair_expect_none(p, PAIR_A);
	assert_int_equal(pair_state(p, PAIR_A), ENGINE_QPS_CONNECTING);
	pair_run_for(p, 1 * PAIR_MS);
	assert_int_equal(pair_expect(p, PAIR_A, ENGINE_WC_EV_ERROR, ENGINE_WC_CONNECT_ERR,
				     0xa)->reason, ENGINE_CONN_NO_ANSWER);
	assert_int_equal(p->s[PAIR_A].sent[MROC_OP_CONNECT_REQ], 4 + 8 * ca.cm_retries);
	assert_int_equal(p->s[PAIR_A].stray, 4 + 8 * ca.cm_retries);
	assert_int_equal(pair_stat(p, PAIR_A, EC_CM_COPY), 3 * (ca.cm_retries + 1));
	assert_int_equal(pair_stat(p, PAIR_A, EC_CM_TWIN), 4 * ca.cm_retries);
	pair_run_for(p, 100 * PAIR_MS);
	assert_int_equal(p->s[PAIR_A].sent[MROC_OP_CONNECT_REQ], 4 + 8 * ca.cm_retries);
	pair_expect_none(p, PAIR_A);
}

/*
 * The requester's RTU never gets through (the server never binds, so
 * nothing of the QP's comes back), or the server goes silent after its REP:
 * the requester never counts itself connected, and after cm_retries tries
 * its QP fails with CONNECT_ERR (a connection that was never made, not
 * RETRY_EXC_ERR) exactly when it did while it only repeated its RTU: each
 * try after the first asks with its REQ again (the server may have lost
 * our entry, test_rtu_entry_pushed_out), and the RTU of the REP it gets
 * goes within that try.  Each try's RTU, or its REQ when no REP came back,
 * goes four times (cm_tx.c try_arm): the copies change the counts, not the
 * time.
 * The server listens on, no completion.
 */
struct rtu_loss {
	bool server_gone;	/* drop everything B sends after its first REP */
	unsigned reps;
};

static bool rtu_loss_filter(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct rtu_loss *l = arg;

	(void)p;
	if (pkt->from == PAIR_B)
		return pkt->data[PKT_OPCODE] == MROC_OP_CONNECT_REP && !l->reps++ ? true :
		       !l->server_gone;
	return pkt->data[PKT_OPCODE] != MROC_OP_KEEPALIVE;
}

static void rtu_unanswered(void **state, bool server_gone)
{
	struct pair *p = open_pair(state, NULL, NULL);
	struct engine_qp_attr a = attr_of(0, 0xa), b = attr_of(0, 0xb);
	struct rtu_loss l = { .server_gone = server_gone };
	const struct engine_config *c = &p->s[PAIR_A].cfg;
	uint32_t retries = c->cm_retries;
	uint64_t t0 = p->now, wait = 0;
	uint64_t cap = c->dead_peer_ns / 3 > c->rto_init_ns ? c->dead_peer_ns / 3 : c->rto_init_ns;

	p->filter = rtu_loss_filter;
	p->filter_arg = &l;
	/* The tries' waits: rto_init doubling, at most max(rto_init, dead_peer / 3) (cm.c). */
	for (uint32_t i = 0; i <= retries; i++) {
		uint64_t w = c->rto_init_ns << (i < 6 ? i : 6);

		wait += w < cap ? w : cap;
	}
	start_connect(p, &a, &b, SVC, SVC);
	pair_run_for(p, 100 * PAIR_US);
	pair_expect_none(p, PAIR_A);
	assert_int_equal(pair_state(p, PAIR_A), ENGINE_QPS_CONNECTING);
	assert_int_equal(p->s[PAIR_A].sent[MROC_OP_KEEPALIVE], 1);	/* the RTU, at once */
	pair_run(p, t0 + wait - 1);
	pair_expect_none(p, PAIR_A);
	assert_int_equal(pair_state(p, PAIR_A), ENGINE_QPS_CONNECTING);
	pair_run_for(p, 1 * PAIR_MS);
	pair_expect(p, PAIR_A, ENGINE_WC_EV_ERROR, ENGINE_WC_CONNECT_ERR, 0xa);
	/*
	 * The first REQ, then one a try after an unanswered RTU, and with the
	 * server gone its three copies too (no REP came back); an RTU and its
	 * three copies for each REP.  From the second try on each goes twice
	 * (cm_tx.c twin_owed).
	 */
	assert_int_equal(p->s[PAIR_A].sent[MROC_OP_CONNECT_REQ],
			 server_gone ? 1 + 8 * retries : 1 + 2 * retries);
	assert_int_equal(pair_stat(p, PAIR_A, EC_CM_REQ_AGAIN), server_gone ? 1 : retries);
	assert_int_equal(p->s[PAIR_A].sent[MROC_OP_KEEPALIVE], server_gone ? 4 : 4 + 8 * retries);
	assert_int_equal(pair_stat(p, PAIR_A, EC_CM_COPY), 3 * (retries + 1));	/* three a try */
	assert_int_equal(pair_stat(p, PAIR_A, EC_CM_TWIN), server_gone ? 4 * retries : 5 * retries);
	/* B answered each REQ, gone or not; a twin together with its REQ: one REP (queued once) */
	assert_int_equal(l.reps, server_gone ? 1 + 4 * retries : 1 + retries);
	assert_int_equal(pair_state(p, PAIR_B), ENGINE_QPS_LISTEN);
	pair_expect_none(p, PAIR_B);
	assert_int_equal(p->stuck_deadlines, 0);
	/* Nothing more from A. */
	pair_run_for(p, 100 * PAIR_MS);
	assert_int_equal(p->s[PAIR_A].sent[MROC_OP_CONNECT_REQ],
			 server_gone ? 1 + 8 * retries : 1 + 2 * retries);
	pair_expect_none(p, PAIR_A);
}

static void test_rtu_unanswered(void **state)
{
	rtu_unanswered(state, false);
}

static void test_rtu_server_gone(void **state)
{
	rtu_unanswered(state, true);
}

/*
 * The REP to a REQ sent again (after an unanswered RTU and its copies)
 * reaches the requester after that try's wait has run out, before its
 * timers ran: a host late to its timers (mrocd's worker off the CPU, a
 * sanitizer build at load); the REPs to the REQ's copies are lost.  Its RTU goes once, with a
 * wait of its own, and the connection is made.  (Before: the RTU's deadline was the REQ's, already passed, so the
 * RTU stayed due and engine_tx filled every buffer with it, without end:
 * the worker never left its send loop, and mrocd stopped answering.)
 */
struct late_rep {
	unsigned rtus, reps;
	bool held;
	struct pair_pkt rep;
};

static bool late_rep_filter(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct late_rep *l = arg;
	uint8_t op = pkt->data[PKT_OPCODE];

	if (pkt->from == PAIR_A)
		return op != MROC_OP_KEEPALIVE || pair_state(p, PAIR_A) != ENGINE_QPS_CONNECTING ||
		       ++l->rtus > 4;	/* the first RTU and its copies are lost */
	if (op != MROC_OP_CONNECT_REP || ++l->reps < 2)
		return true;
	if (l->reps == 2) {
		l->rep = *pkt;		/* the REP to the REQ sent again: held */
		l->held = true;
	}
	return l->reps > 5;		/* the REPs to that REQ's copies: lost */
}

static void test_rtu_of_late_rep(void **state)
{
	struct pair *p = open_pair(state, NULL, NULL);
	struct engine_qp_attr a = attr_of(0, 0xa), b = attr_of(0, 0xb);
	struct late_rep l = { 0 };
	uint64_t d, until = p->now + 100 * p->s[PAIR_A].cfg.rto_init_ns;

	p->filter = late_rep_filter;
	p->filter_arg = &l;
	start_connect(p, &a, &b, SVC, SVC);
	while (l.reps < 5 && p->now < until)
		pair_run_for(p, PAIR_US);
	assert_true(l.held);
	assert_int_equal(pair_stat(p, PAIR_A, EC_CM_REQ_AGAIN), 1);
	/* The first, the one sent again and its copies (no REP came back to it), each twice. */
	assert_int_equal(p->s[PAIR_A].sent[MROC_OP_CONNECT_REQ], 9);
	/* A's next deadline is that try's end: the REP comes a whole wait after it. */
	d = engine_next_deadline(p->s[PAIR_A].eng);
	assert_true(d && d != UINT64_MAX);
	d = pair_base_of(p, PAIR_A, d);
	pair_run(p, d - 1);
	assert_int_equal(p->s[PAIR_A].sent[MROC_OP_CONNECT_REQ], 9);
	p->now = d + p->s[PAIR_A].cfg.rto_init_ns;
	assert_int_equal(pair_deliver(p, &l.rep), 0);
	pair_pump(p);			/* before: "engines never go quiet" */
	/* the lost RTU, its lost copies, and this one and its twin (cm_tx.c twin_owed) */
	assert_int_equal(p->s[PAIR_A].sent[MROC_OP_KEEPALIVE], 6);
	pair_run_for(p, 10 * PAIR_MS);
	pair_expect(p, PAIR_A, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xa);
	pair_expect(p, PAIR_B, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xb);
	assert_int_equal(p->s[PAIR_A].sent[MROC_OP_CONNECT_REQ], 9);
	assert_int_equal(p->stuck_deadlines, 0);
	p->filter = NULL;
	a_writes(p);
}

/*
 * The server's handshake sample (cm.c take_hs_rtt) runs from its REP to the
 * proof.  A proof held back (a requester that waits, or one spoofed late
 * where nothing seals) must not raise the host's largest RTT, the floor of
 * every path's timer (5/4 of it, for 30-60 s), past what a new path waits
 * anyway (rto_init): before, a proof held 3 ms on a host whose rto_init is
 * 1 ms gave every QP's timers at least 3.75 ms.  Nor past a quarter of
 * rto_init, where the proof may be an RTU's copy (cm.c cm_bind_proven).
 * A proof a little late (under that) still counts, as an ACK's late echo
 * does.  A's own RTU wait is long (rto_init 50 ms), so it never tries
 * again meanwhile.
 */
struct held_proof {
	bool held, done;
	struct pair_pkt rtu;
};

static bool held_proof_filter(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct held_proof *h = arg;

	(void)p;
	if (h->done || pkt->from != PAIR_A || pkt->data[PKT_OPCODE] != MROC_OP_KEEPALIVE)
		return true;
	if (!h->held) {
		h->rtu = *pkt;
		h->held = true;
	}
	return false;		/* the RTU's copies: lost */
}

static uint64_t timer_after_held_proof(void **state, uint64_t hold)
{
	struct engine_config ca, cb;
	struct pair *p;
	struct engine_qp_attr a = attr_of(0, 0xa), b = attr_of(0, 0xb), c = attr_of(0, 0xc);
	struct held_proof h = { 0 };
	struct engine_path_info pi;
	uint64_t t;
	uint32_t qb2;

	pair_test_config(&ca);
	pair_test_config(&cb);
	ca.rto_init_ns = 50 * PAIR_MS;
	ca.rto_max_ns = 200 * PAIR_MS;
	p = open_pair(state, &ca, &cb);
	pair_set_delay(p, PAIR_A, 20 * PAIR_US);
	pair_set_delay(p, PAIR_B, 20 * PAIR_US);
	p->filter = held_proof_filter;
	p->filter_arg = &h;
	start_connect(p, &a, &b, SVC, SVC);
	t = p->now;
	while (!h.held && p->now < t + PAIR_MS)
		pair_run_for(p, PAIR_US);
	assert_true(h.held);
	pair_run(p, t + hold);
	assert_int_equal(pair_state(p, PAIR_B), ENGINE_QPS_LISTEN);
	h.done = true;
	assert_int_equal(pair_deliver(p, &h.rtu), 0);
	pair_run_for(p, PAIR_MS);
	pair_expect(p, PAIR_B, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xb);
	pair_expect(p, PAIR_A, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xa);
	/* A second QP, its handshake prompt: its timer is the host's floor. */
	qb2 = pair_qp_create(p, PAIR_B, &c);
	assert_int_equal(engine_qp_listen(p->s[PAIR_B].eng, qb2, SVC + 1), 0);
	p->s[PAIR_A].qpn = pair_qp_create(p, PAIR_A, &c);
	assert_int_equal(engine_qp_connect(p->s[PAIR_A].eng, p->s[PAIR_A].qpn, PAIR_B, SVC + 1,
					   pair_clock(p, PAIR_A)), 0);
	pair_run_for(p, PAIR_MS);
	pair_expect(p, PAIR_B, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xc);
	assert_int_equal(engine_path_info(p->s[PAIR_B].eng, qb2, 0, &pi), 0);
	assert_int_equal(p->stuck_deadlines, 0);
	return pi.rto_timer_ns;
}

static void test_proof_a_little_late(void **state)
{
	/* held 240 us of B's rto_init 1 ms (the REP sent 20 us in): counts, 5/4 of it */
	assert_true(timer_after_held_proof(state, 240 * PAIR_US) >= 5 * 190 * PAIR_US / 4);
}

static void test_proof_held_back(void **state)
{
	/* held 3 ms: not counted (it was: 3.7 ms), the new QP's from its own handshake */
	assert_true(timer_after_held_proof(state, 3 * PAIR_MS) < PAIR_MS);
}

/*
 * The requester's sample runs from the send its answer answered: B's
 * answer to A's first RTU is lost, the copy a quarter of A's wait later
 * (250 us) is answered.  Session 30: the sample ran from the first send
 * (250 us on a 40 us round trip) and went into the host's largest RTT, so
 * a second QP's timers were at least 5/4 of it (312 us) for 30-60 s; then
 * no sample at all after a copy, and the QP's paths started at rto_init.
 * Now the answer, by the copy's port and path, dates the copy (cm.c
 * cm_log_rtt): the QP's first RTO is its handshake's (rto_min here), and
 * the second QP's too.
 */
static bool drop_first_answer(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	unsigned *dropped = arg;

	(void)p;
	if (pkt->from != PAIR_B || pkt->data[PKT_OPCODE] != MROC_OP_KEEPALIVE || *dropped)
		return true;
	(*dropped)++;
	return false;
}

static void test_rtu_copy_dated(void **state)
{
	struct pair *p = open_pair(state, NULL, NULL);
	struct engine_qp_attr a = attr_of(0, 0xa), b = attr_of(0, 0xb), c = attr_of(0, 0xc);
	struct engine_path_info pi;
	unsigned dropped = 0;
	uint32_t qa, qa2;

	pair_set_delay(p, PAIR_A, 20 * PAIR_US);
	pair_set_delay(p, PAIR_B, 20 * PAIR_US);
	p->filter = drop_first_answer;
	p->filter_arg = &dropped;
	qa = start_connect(p, &a, &b, SVC, SVC);
	pair_run_for(p, 2 * PAIR_MS);
	assert_int_equal(dropped, 1);
	assert_int_equal(pair_stat(p, PAIR_A, EC_CM_COPY), 1);
	pair_expect(p, PAIR_A, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xa);
	pair_expect(p, PAIR_B, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xb);
	assert_int_equal(engine_path_info(p->s[PAIR_A].eng, qa, 0, &pi), 0);
	/* the copy's own round trip (40 us): rto_min, not rto_init nor 3 x 250 us */
	assert_int_equal(pi.rto_ns, p->s[PAIR_A].cfg.rto_min_ns);
	/* A second QP from A, its handshake prompt. */
	p->filter = NULL;
	p->s[PAIR_B].qpn = pair_qp_create(p, PAIR_B, &c);
	assert_int_equal(engine_qp_listen(p->s[PAIR_B].eng, p->s[PAIR_B].qpn, SVC + 1), 0);
	qa2 = pair_qp_create(p, PAIR_A, &c);
	assert_int_equal(engine_qp_connect(p->s[PAIR_A].eng, qa2, PAIR_B, SVC + 1,
					   pair_clock(p, PAIR_A)), 0);
	pair_run_for(p, PAIR_MS);
	pair_expect(p, PAIR_A, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xc);
	assert_int_equal(engine_path_info(p->s[PAIR_A].eng, qa2, 0, &pi), 0);
	assert_true(pi.rto_timer_ns < 300 * PAIR_US);	/* it was 5/4 of 250 us at least */
	assert_int_equal(p->stuck_deadlines, 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_teardown(fn, teardown)
	const struct CMUnitTest tests[] = {
		T(test_connect_unanswered),
		T(test_rtu_unanswered),
		T(test_rtu_server_gone),
		T(test_rtu_of_late_rep),
		T(test_proof_a_little_late),
		T(test_proof_held_back),
		T(test_rtu_copy_dated),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
