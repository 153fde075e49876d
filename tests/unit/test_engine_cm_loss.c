// SPDX-License-Identifier: MIT
/*
 * Connection management when its messages are lost, copied or late, two
 * engines back to back (cm_pair.h): a REQ or REP lost once; every order of
 * lost REQs, REPs and keepalives under PFC-style timers (#23 finding 1);
 * the RTU's answers lost, the server's half-open entry pushed out between
 * REP and RTU; one message lost as many times in a row as there are tries;
 * every copy delivered (cm_tx.c try_arm's copies).
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

/* ---- lost CM messages -------------------------------------------------------------- */

static void lost_cm(void **state, int from, uint8_t op)
{
	struct pair *p = open_pair(state, NULL, NULL);
	struct engine_qp_attr a = attr_of(0, 0xa), b = attr_of(0, 0xb);
	struct drop_first d = { .from = from, .op = op };
	struct pair_mem *ma = pair_mem_new(p, PAIR_A, 4096, 1, ENGINE_ACCESS_ALL);
	struct pair_mem *mb = pair_mem_new(p, PAIR_B, 4096, 1, ENGINE_ACCESS_ALL);
	struct engine_qp_info ia, ib;
	struct engine_wr wr;

	p->filter = drop_first_filter;
	p->filter_arg = &d;
	start_connect(p, &a, &b, SVC, SVC);
	pair_run_for(p, 5 * p->s[PAIR_A].cfg.rto_init_ns);
	assert_int_equal(d.dropped, 1);
	pair_expect(p, PAIR_A, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xa);
	pair_expect(p, PAIR_B, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xb);
	pair_expect_none(p, PAIR_A);
	pair_expect_none(p, PAIR_B);
	assert_int_equal(p->s[PAIR_A].sent[MROC_OP_CONNECT_REQ], 2);
	assert_int_equal(engine_qp_info(p->s[PAIR_A].eng, p->s[PAIR_A].qpn, &ia), 0);
	assert_int_equal(engine_qp_info(p->s[PAIR_B].eng, p->s[PAIR_B].qpn, &ib), 0);
	assert_int_equal(ia.peer_qpn, p->s[PAIR_B].qpn);
	assert_int_equal(ib.peer_qpn, p->s[PAIR_A].qpn);
	/* And data flows. */
	pair_mem_fill(ma, 9);
	wr = (struct engine_wr){ .wr_id = 1, .opcode = ENGINE_WR_WRITE, .flags = ENGINE_WR_SIGNALED,
				 .lkey = ma->lkey, .len = 3000, .rkey = mb->rkey };
	assert_int_equal(pair_post(p, PAIR_A, &wr), 0);
	pair_run_for(p, 1 * PAIR_MS);
	pair_expect(p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_mem_expect(mb, 0, ma->buf, 3000);
}

static void test_lost_connect_req(void **state)
{
	lost_cm(state, PAIR_A, MROC_OP_CONNECT_REQ);
}

static void test_lost_connect_rep(void **state)
{
	lost_cm(state, PAIR_B, MROC_OP_CONNECT_REP);
}

/*
 * Issue #23 finding 1 and deliverable 2: under PFC-style timers (one NIC
 * timeout of 1.07 s as rto_min = rto_init = rto_max, 7 retries, dead_peer
 * 9 x 1.07 s, keepalives at 1 s), lose the first n REQs, the first m REPs
 * and the first k keepalives (both ways), for every n, m, k in 0..3: both
 * sides connect, data flows and both stay connected.  Before the fix the
 * server counted as connected with its first REP, a repeated REQ did not
 * count as hearing from the client, the client dropped the server's
 * keepalives while it waited, and its retries at 0, 1.07, 3.2, 7.5 and
 * 16.1 s let the server declare it dead at 9.66 s first (3 REPs lost).
 */
struct cm_loss {
	unsigned req, rep, ka;		/* how many of each to drop, first ones */
	unsigned n_req, n_rep, n_ka;	/* seen so far */
};

static bool cm_loss_filter(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct cm_loss *l = arg;
	uint8_t op = pkt->data[PKT_OPCODE];

	(void)p;
	if (op == MROC_OP_CONNECT_REQ)
		return ++l->n_req > l->req;
	if (op == MROC_OP_CONNECT_REP)
		return ++l->n_rep > l->rep;
	if (op == MROC_OP_KEEPALIVE)
		return ++l->n_ka > l->ka;
	return true;
}

static void pfc_config(struct engine_config *c)
{
	pair_test_config(c);
	c->rto_min_ns = c->rto_init_ns = c->rto_max_ns = 1073741824ULL;	/* IB timeout 18 */
	c->max_retx = 8;
	c->dead_peer_ns = 9 * c->rto_init_ns;
	c->keepalive_ns = 1000 * PAIR_MS;
}

static void test_cm_losses_pfc_timers(void **state)
{
	struct engine_config c;
	unsigned failed = 0;

	pfc_config(&c);
	for (unsigned n = 0; n < 64; n++) {
		struct cm_loss l = { .req = n & 3, .rep = n >> 2 & 3, .ka = n >> 4 & 3 };
		struct engine_qp_attr a = attr_of(0, 0xa), b = attr_of(0, 0xb);
		struct pair *p = pair_new(&c, &c);
		struct pair_mem *ma, *mb;
		struct engine_wr wr;
		uint64_t t0 = p->now;
		const struct engine_cqe *ca, *cb, *cw;

		*state = p;
		ma = pair_mem_new(p, PAIR_A, 4096, 1, ENGINE_ACCESS_ALL);
		mb = pair_mem_new(p, PAIR_B, 4096, 1, ENGINE_ACCESS_ALL);
		p->filter = cm_loss_filter;
		p->filter_arg = &l;
		start_connect(p, &a, &b, SVC, SVC);
		while (p->now - t0 < 60ULL * 1000 * PAIR_MS &&
		       (pair_state(p, PAIR_A) == ENGINE_QPS_CONNECTING ||
			pair_state(p, PAIR_B) != ENGINE_QPS_CONNECTED))
			pair_run_for(p, 10 * PAIR_MS);
		ca = pair_cqe(p, PAIR_A);
		cb = pair_cqe(p, PAIR_B);
		wr = (struct engine_wr){ .wr_id = 1, .opcode = ENGINE_WR_WRITE,
					 .flags = ENGINE_WR_SIGNALED, .lkey = ma->lkey, .len = 3000,
					 .rkey = mb->rkey };
		cw = NULL;
		if (pair_state(p, PAIR_A) == ENGINE_QPS_CONNECTED && !pair_post(p, PAIR_A, &wr)) {
			pair_run_for(p, 20 * c.rto_init_ns);
			cw = pair_cqe(p, PAIR_A);
		}
		if (!ca || ca->opcode != ENGINE_WC_EV_CONNECTED || !cb ||
		    cb->opcode != ENGINE_WC_EV_CONNECTED || !cw || cw->opcode != ENGINE_WC_WRITE ||
		    cw->status != ENGINE_WC_SUCCESS || pair_state(p, PAIR_A) != ENGINE_QPS_CONNECTED ||
		    pair_state(p, PAIR_B) != ENGINE_QPS_CONNECTED) {
			print_message("lost %u REQ, %u REP, %u keepalives: A %s, B %s (%.2f s)\n",
				      l.req, l.rep, l.ka, ca ? (ca->opcode == ENGINE_WC_EV_CONNECTED ?
				      "connected" : "failed") : "nothing",
				      cb ? (cb->opcode == ENGINE_WC_EV_CONNECTED ? "connected" :
				      "failed") : "nothing", (double)(p->now - t0) / 1e9);
			failed++;
		} else {
			pair_expect_none(p, PAIR_A);
			pair_expect_none(p, PAIR_B);
		}
		pair_free(p);
		*state = NULL;
	}
	assert_int_equal(failed, 0);
}

/* ---- the RTU and its answer lost or refused ---------------------------------------- */

/*
 * The server binds at the requester's RTU, but every answer it sends as a
 * KEEPALIVE is lost (the RTU's and its three copies'): the requester's try
 * runs out and it asks with its REQ again; the bound QP's REP to it says so (MROC_CM_F_BOUND), under the
 * requester's own key, and the requester is connected at once, without a
 * third round (before, each try needed the RTU's answer through, and the
 * QP failed with CONNECT_ERR after cm_retries of them).  In each security
 * mode; data flows after.
 */
static bool drop_b_keepalives(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	unsigned *dropped = arg;

	(void)p;
	if (pkt->from != PAIR_B || pkt->data[PKT_OPCODE] != MROC_OP_KEEPALIVE)
		return true;
	(*dropped)++;
	return false;
}

static void test_rtu_answer_lost_bound_rep(void **state)
{
	static const uint8_t modes[] = { MROC_SEC_NONE, MROC_SEC_TOKEN };

	for (unsigned m = 0; m < sizeof(modes); m++) {
		struct engine_config c;
		struct pair *p;
		struct engine_qp_attr a = attr_of(0, 0xa), b = attr_of(0, 0xb);
		struct engine_path_info pi;
		unsigned dropped = 0;
		uint32_t qa;

		pair_test_config(&c);
		c.sec_mode = modes[m];
		p = open_pair(state, &c, &c);
		pair_set_delay(p, PAIR_A, 20 * PAIR_US);
		pair_set_delay(p, PAIR_B, 20 * PAIR_US);
		p->filter = drop_b_keepalives;
		p->filter_arg = &dropped;
		qa = start_connect(p, &a, &b, SVC, SVC);
		pair_run_for(p, 5 * c.rto_init_ns);
		pair_expect(p, PAIR_B, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xb);
		pair_expect(p, PAIR_A, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xa);
		/* The RTU's answer and its copies' (new keepalive numbers: answered too). */
		assert_int_equal(dropped, 4);
		/* The REQ again goes twice at once (cm_tx.c twin_owed): one REP to both. */
		assert_int_equal(p->s[PAIR_A].sent[MROC_OP_CONNECT_REQ], 3);
		assert_int_equal(p->s[PAIR_B].sent[MROC_OP_CONNECT_REP], 2);
		assert_int_equal(pair_stat(p, PAIR_A, EC_CM_REQ_AGAIN), 1);
		/* The RTU and its copies; none after the BOUND REP */
		assert_int_equal(p->s[PAIR_A].sent[MROC_OP_KEEPALIVE], 4);
		/*
		 * The BOUND REP came by the port and path of the REQ it answered:
		 * it dates that send (cm.c cm_log_rtt), and A's paths start at
		 * their handshake's RTO (rto_min here), not at rto_init (session
		 * 30: no sample, Karn).
		 */
		assert_int_equal(engine_path_info(p->s[PAIR_A].eng, qa, 0, &pi), 0);
		assert_int_equal(pi.rto_ns, c.rto_min_ns);
		a_writes(p);
		pair_expect_none(p, PAIR_A);
		pair_expect_none(p, PAIR_B);
		pair_free(p);
		*state = NULL;
	}
}

/*
 * As above, and besides every port of B's own leads nowhere back to A
 * (routes hashed per direction, B's paths' ports all across a dead plane):
 * only a packet of B's that leaves by the port A's last REQ came by
 * arrives.  B's REP again to A's REQ again goes by that port, as a REP to
 * a copy before the proof does (cm_half.c put_rep), so each of A's tries
 * draws it another route.  Before, the bound QP's REP went by its own
 * paths' ports: A never connected (mroc-sim incast --planes 2 --paths 3
 * --route hash --plane-loss 1:1, 1 QP in 800).
 */
struct asking_port {
	uint16_t req_sport;
	unsigned reps_lost;
};

static bool asking_port_filter(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct asking_port *a = arg;
	uint8_t op = pkt->data[PKT_OPCODE];

	(void)p;
	if (pkt->from == PAIR_A) {
		if (op == MROC_OP_CONNECT_REQ)
			a->req_sport = pkt->sport;
		return true;
	}
	if (op == MROC_OP_KEEPALIVE)
		return false;
	if (op == MROC_OP_CONNECT_REP && pkt->sport != a->req_sport) {
		a->reps_lost++;
		return false;
	}
	return true;
}

static void test_bound_rep_by_asking_port(void **state)
{
	struct pair *p = open_pair(state, NULL, NULL);
	struct engine_qp_attr a = attr_of(0, 0xa), b = attr_of(0, 0xb);
	struct asking_port ap = { 0 };

	p->filter = asking_port_filter;
	p->filter_arg = &ap;
	start_connect(p, &a, &b, SVC, SVC);
	pair_run_for(p, 10 * p->s[PAIR_A].cfg.rto_init_ns);
	pair_expect(p, PAIR_B, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xb);
	pair_expect(p, PAIR_A, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xa);
	/* The first REP (A's first REQ and B's listener both by sport_min), and the one again. */
	assert_int_equal(p->s[PAIR_B].sent[MROC_OP_CONNECT_REP], 2);
	assert_int_equal(ap.reps_lost, 0);
	assert_int_equal(pair_stat(p, PAIR_A, EC_CM_REQ_AGAIN), 1);
	p->filter = NULL;
	a_writes(p);
}

/*
 * A REQ flood cycles the server's half-open table between its REP and the
 * requester's RTU, three times over: the hook below sends B as many REQs
 * (from other hosts and QPNs) as its table holds just before the first RTU
 * of each of A's first three tries reaches it, so A's entry is pushed out
 * and the RTU proves nothing (rx_bad_peer), nor do its three copies (cm.c
 * try_arm) later in the try.  A asks with its REQ again at its next try, gets a
 * new entry and REP, and connects at the fourth; B binds its listener to
 * A's QP and to nothing else, in every security mode.  A flood that does so
 * before each of A's cm_retries + 1 tries but the last delays it to the
 * last; one that does so at every try fails it CONNECT_ERR, as a server
 * that never answers would.  (Before: A repeated its RTU to the entry that
 * was gone, cm_retries times, and failed CONNECT_ERR: s14-trust14 section 4.)
 */
struct evict {
	unsigned rounds, done;	/* tries to push A's entry out in; done so far */
	unsigned flood;		/* REQs a round: B's half-open table's size */
	bool rep;		/* B sent a REP since the last round: the next RTU is a try's first */
	bool have_req;
	struct pair_pkt req;	/* A's first REQ: the flood's copies' model */
	uint32_t next_qpn;
};

static bool evict_filter(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct evict *e = arg;
	uint8_t op = pkt->data[PKT_OPCODE];

	if (pkt->from != PAIR_A) {
		e->rep |= op == MROC_OP_CONNECT_REP;
		return true;
	}
	if (op == MROC_OP_CONNECT_REQ && !e->have_req) {
		e->req = *pkt;
		e->have_req = true;
	}
	/* A's RTU: a KEEPALIVE asking for an answer while A connects. */
	if (op != MROC_OP_KEEPALIVE || !(pkt->data[PKT_FLAGS] & MROC_F_ACK_REQ) ||
	    pair_state(p, PAIR_A) != ENGINE_QPS_CONNECTING || e->done >= e->rounds || !e->rep)
		return true;
	assert_true(e->have_req);
	e->rep = false;
	for (unsigned i = 0; i < e->flood; i++) {
		pkt_put32(e->req.data, PKT_SRC_QPN, 0x10000 + e->next_qpn++);
		/* From handles 7 on: B's REPs to them go nowhere. */
		assert_int_equal(pair_rx(p, PAIR_B, e->req.data, e->req.len, 7 + i, e->req.sport), 0);
	}
	e->done++;
	return true;
}

static void test_rtu_entry_pushed_out(void **state)
{
	/* rounds 0: A's cm_retries (it connects at its last try); ~0u: one more (it fails). */
	static const struct { uint8_t sec; unsigned rounds; } cases[] = {
		{ MROC_SEC_NONE, 3 }, { MROC_SEC_TOKEN, 3 }, { MROC_SEC_AEAD, 3 },
		{ MROC_SEC_NONE, 0 }, { MROC_SEC_TOKEN, ~0u },
	};

	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct engine_qp_attr a = attr_of(0, 0xa), b = attr_of(0, 0xb);
		struct engine_config ca, cb;
		struct engine_qp_info ib;
		struct evict e = { .flood = 64 };	/* max(64, 2 x max_qps 8) */
		uint64_t open;
		struct pair *p;
		bool fails;

		pair_test_config(&ca);
		ca.sec_mode = cases[k].sec;
		cb = ca;
		cb.seed = 2;
		e.rounds = cases[k].rounds == 0 ? ca.cm_retries :
			   cases[k].rounds == ~0u ? ca.cm_retries + 1 : cases[k].rounds;
		fails = e.rounds > ca.cm_retries;
		p = open_pair(state, &ca, &cb);
		/* "aead": the packets come in as the frame layer opened them (engine_pair.h). */
		p->s[PAIR_A].sealed = p->s[PAIR_B].sealed = cases[k].sec == MROC_SEC_AEAD;
		p->filter = evict_filter;
		p->filter_arg = &e;
		start_connect(p, &a, &b, SVC, SVC);
		pair_run_for(p, 1000 * ca.rto_init_ns);
		assert_int_equal(e.done, e.rounds);
		/*
		 * Each pushed-out entry's RTU and its copies proved nothing, and A asked
		 * again at each next try; from the second try each twice (cm.c
		 * twin_owed).
		 */
		assert_int_equal(pair_stat(p, PAIR_B, EC_RX_BAD_PEER), 8 * e.rounds - 4);
		assert_int_equal(pair_stat(p, PAIR_A, EC_CM_REQ_AGAIN), e.rounds - fails);
		assert_int_equal(p->s[PAIR_A].sent[MROC_OP_CONNECT_REQ],
				 1 + 2 * (e.rounds - fails));
		assert_int_equal(p->stuck_deadlines, 0);
		open = pair_stat(p, PAIR_B, EC_CM_HALF_OPEN);
		if (fails) {
			/* Pushed out at every try: CONNECT_ERR, in bounded time; B never bound. */
			pair_expect(p, PAIR_A, ENGINE_WC_EV_ERROR, ENGINE_WC_CONNECT_ERR, 0xa);
			assert_int_equal(pair_state(p, PAIR_B), ENGINE_QPS_LISTEN);
			pair_expect_none(p, PAIR_B);
			assert_int_equal(open, (1 + e.flood) * e.rounds);
		} else {
			pair_expect(p, PAIR_A, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xa);
			pair_expect(p, PAIR_B, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xb);
			pair_expect_none(p, PAIR_B);
			assert_int_equal(engine_qp_info(p->s[PAIR_B].eng, p->s[PAIR_B].qpn, &ib), 0);
			assert_int_equal(ib.peer, PAIR_A);
			assert_int_equal(ib.peer_qpn, p->s[PAIR_A].qpn);
			/* Every entry but the one A proved was dropped: pushed out, or busy at the bind. */
			assert_int_equal(open, (1 + e.flood) * e.rounds + 1);
			assert_int_equal(pair_stat(p, PAIR_B, EC_CM_HALF_DROPPED), open - 1);
			p->filter = NULL;
			a_writes(p);
		}
		pair_free(p);
		*state = NULL;
	}
}

/*
 * One message of the handshake lost as many times in a row as the requester
 * has tries (cm_retries + 1): its REQs, the server's REPs, or its RTUs.  The
 * third try's first copy gets through where the first two tries' four each
 * (cm_tx.c try_arm: three copies a try) and the third's first did not, and the connection is made, in
 * each security mode; data flows.  (Before the copies a try sent each
 * message once, and every case failed CONNECT_ERR.)
 */
struct in_a_row {
	int from;
	uint8_t op;
	unsigned n, lost;
};

static bool in_a_row_filter(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct in_a_row *r = arg;

	if (pkt->from != r->from || pkt->data[PKT_OPCODE] != r->op || r->lost >= r->n ||
	    pair_state(p, PAIR_A) != ENGINE_QPS_CONNECTING ||
	    (r->op == MROC_OP_KEEPALIVE && !(pkt->data[PKT_FLAGS] & MROC_F_ACK_REQ)))
		return true;
	r->lost++;
	return false;
}

static void test_cm_lost_tries_in_a_row(void **state)
{
	/*
	 * Copies: three in the first try; from the second each REQ and RTU goes
	 * twice at once (cm_tx.c twin_owed), so the ninth lost is a copy of the
	 * second try whose twin gets through (two copies there); B answers a
	 * REQ and its twin with one REP, so nine REPs lost take three copies in
	 * each of the first two tries and one in the third, as before twins.
	 */
	static const struct { int from; uint8_t op; uint64_t copies; } cases[] = {
		{ PAIR_A, MROC_OP_CONNECT_REQ, 5 }, { PAIR_B, MROC_OP_CONNECT_REP, 7 },
		{ PAIR_A, MROC_OP_KEEPALIVE, 5 },
	};
	static const uint8_t modes[] = { MROC_SEC_NONE, MROC_SEC_TOKEN, MROC_SEC_AEAD };

	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		for (unsigned m = 0; m < sizeof(modes); m++) {
			struct engine_qp_attr a = attr_of(0, 0xa), b = attr_of(0, 0xb);
			struct engine_config ca, cb;
			struct in_a_row r = { .from = cases[k].from, .op = cases[k].op };
			struct pair *p;

			pair_test_config(&ca);
			ca.sec_mode = modes[m];
			cb = ca;
			cb.seed = 2;
			r.n = ca.cm_retries + 1;
			p = open_pair(state, &ca, &cb);
			p->s[PAIR_A].sealed = p->s[PAIR_B].sealed = modes[m] == MROC_SEC_AEAD;
			p->filter = in_a_row_filter;
			p->filter_arg = &r;
			start_connect(p, &a, &b, SVC, SVC);
			pair_run_for(p, 200 * ca.rto_init_ns);
			assert_int_equal(r.lost, r.n);
			pair_expect(p, PAIR_A, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xa);
			pair_expect(p, PAIR_B, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xb);
			assert_int_equal(pair_stat(p, PAIR_A, EC_CM_COPY), cases[k].copies);
			assert_int_equal(pair_stat(p, PAIR_B, EC_CM_HALF_OPEN), 1);
			p->filter = NULL;
			a_writes(p);
			pair_expect_none(p, PAIR_A);
			pair_expect_none(p, PAIR_B);
			pair_free(p);
			*state = NULL;
		}
}

/*
 * Every copy delivered: each CM packet and keepalive arrives twice, the
 * second 0.05 x rto_init after the first, on a wire of 0.4 x rto_init each
 * way, so the requester's REQ and RTU copies go too (nothing is back half
 * way through a try) and reach the server after the firsts' answers left;
 * then, connected, the first REQ, REP and RTU of the handshake again.  In each security mode: one half-open entry, none dropped, one
 * connection each side and no event after it, the server's QP still the
 * requester's, and data flows.  A copy proves no more than its first: the
 * server answers a REQ again with the same REP (or, bound, with it flagged
 * BOUND, which a connected requester ignores), takes a second RTU as a
 * keepalive only above the last number (the replayed one is stale), and
 * the requester takes one REP.
 */
struct dups {
	struct pair_pkt first[3];	/* A's REQ, B's REP, A's RTU */
	bool have[3];
};

/* Onto the wire of pkt's side, to arrive after its delay and later more (FIFO). */
static void wire_put(struct pair *p, const struct pair_pkt *pkt, uint64_t later)
{
	struct pair_wire *w = &p->wire[pkt->from];
	unsigned at = (w->head + w->n) % PAIR_WIRE_MAX;

	assert_true(w->n < PAIR_WIRE_MAX);
	w->q[at] = *pkt;
	w->due[at] = p->now + w->delay + later;
	w->n++;
}

static bool dup_filter(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct dups *d = arg;
	uint8_t op = pkt->data[PKT_OPCODE];
	int k = op == MROC_OP_CONNECT_REQ ? 0 : op == MROC_OP_CONNECT_REP ? 1 :
		op == MROC_OP_KEEPALIVE && pkt->from == PAIR_A ? 2 : -1;

	if (!mroc_op_is_cm(op) && op != MROC_OP_KEEPALIVE)
		return true;
	if (k >= 0 && !d->have[k]) {
		d->first[k] = *pkt;
		d->have[k] = true;
	}
	/* Apart, so that the second finds the first's answer sent (queued ones are one). */
	wire_put(p, pkt, 0);
	wire_put(p, pkt, p->s[pkt->from].cfg.rto_init_ns / 20);
	return false;
}

static void test_cm_copies_all_delivered(void **state)
{
	static const uint8_t modes[] = { MROC_SEC_NONE, MROC_SEC_TOKEN, MROC_SEC_AEAD };

	for (unsigned m = 0; m < sizeof(modes); m++) {
		struct engine_qp_attr a = attr_of(0, 0xa), b = attr_of(0, 0xb);
		struct engine_config ca, cb;
		struct engine_qp_info ia, ib;
		struct dups d = { 0 };
		struct pair *p;
		uint64_t stale;

		pair_test_config(&ca);
		ca.sec_mode = modes[m];
		cb = ca;
		cb.seed = 2;
		p = open_pair(state, &ca, &cb);
		p->s[PAIR_A].sealed = p->s[PAIR_B].sealed = modes[m] == MROC_SEC_AEAD;
		pair_set_delay(p, PAIR_A, ca.rto_init_ns * 4 / 10);
		pair_set_delay(p, PAIR_B, ca.rto_init_ns * 4 / 10);
		p->filter = dup_filter;
		p->filter_arg = &d;
		start_connect(p, &a, &b, SVC, SVC);
		pair_run_for(p, 10 * ca.rto_init_ns);
		pair_expect(p, PAIR_A, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xa);
		pair_expect(p, PAIR_B, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, 0xb);
		assert_true(d.have[0] && d.have[1] && d.have[2]);
		/*
		 * The REQ's three copies and the RTU's went; each REQ that arrived
		 * got the one REP but the last, the third copy's second: it came at
		 * 1.2 rto_init with the RTU, which bound the listener before its
		 * REP left (an entry proven has no REP to send).
		 */
		assert_int_equal(pair_stat(p, PAIR_A, EC_CM_COPY), 6);
		assert_int_equal(p->s[PAIR_B].sent[MROC_OP_CONNECT_REP], 7);
		assert_int_equal(pair_stat(p, PAIR_B, EC_CM_HALF_OPEN), 1);
		assert_int_equal(pair_stat(p, PAIR_B, EC_CM_HALF_DROPPED), 0);
		assert_int_equal(pair_stat(p, PAIR_B, EC_CM_BUSY), 0);
		/* The handshake's first packets again, once connected: nothing changes. */
		p->filter = NULL;
		stale = pair_stat(p, PAIR_B, EC_RX_STALE_KA);
		for (int i = 0; i < 3; i++)
			pair_deliver(p, &d.first[i]);
		pair_run_for(p, 10 * ca.rto_init_ns);
		assert_true(pair_stat(p, PAIR_B, EC_RX_STALE_KA) > stale);
		pair_expect_none(p, PAIR_A);
		pair_expect_none(p, PAIR_B);
		assert_int_equal(pair_state(p, PAIR_A), ENGINE_QPS_CONNECTED);
		assert_int_equal(pair_state(p, PAIR_B), ENGINE_QPS_CONNECTED);
		assert_int_equal(pair_stat(p, PAIR_B, EC_CM_HALF_OPEN), 1);
		assert_int_equal(engine_qp_info(p->s[PAIR_A].eng, p->s[PAIR_A].qpn, &ia), 0);
		assert_int_equal(engine_qp_info(p->s[PAIR_B].eng, p->s[PAIR_B].qpn, &ib), 0);
		assert_int_equal(ia.peer_qpn, p->s[PAIR_B].qpn);
		assert_int_equal(ib.peer_qpn, p->s[PAIR_A].qpn);
		a_writes(p);
		pair_expect_none(p, PAIR_A);
		pair_expect_none(p, PAIR_B);
		pair_free(p);
		*state = NULL;
	}
}

int main(void)
{
#define T(fn) cmocka_unit_test_teardown(fn, teardown)
	const struct CMUnitTest tests[] = {
		T(test_lost_connect_req),
		T(test_lost_connect_rep),
		T(test_cm_losses_pfc_timers),
		T(test_rtu_answer_lost_bound_rep),
		T(test_bound_rep_by_asking_port),
		T(test_rtu_entry_pushed_out),
		T(test_cm_lost_tries_in_a_row),
		T(test_cm_copies_all_delivered),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
