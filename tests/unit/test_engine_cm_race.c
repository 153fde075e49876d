// SPDX-License-Identifier: MIT
/*
 * Many requesters at once (engine/cm_half.c, #24): a REQ takes no listener
 * until its requester proves it got our REP, and requesters that connect
 * at the same time must all get through, as they did when a REQ bound its
 * listener at once (e2e/test_atomic.sh's clients, bench-scale's 16 x 250):
 *  - requesters as many as the listeners posted for them spread over them;
 *  - more requesters than listeners, the server posting one more after
 *    each connection: the losers are told BUSY and ask again, none fails;
 *  - 4,000 QPs connecting at once between two engines;
 *  - every order of losing REQs, REPs, RTUs, their answers and BUSYs;
 *  - a BUSY nobody can check moves nothing.
 * Before this file's change (f419cb5), every REQ of a service got the first
 * listener, the first proof bound it and the others' QPs failed RETRY_EXC.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_pair.h"

#define SVC		0x5e5
#define MAX_REQ		4000

static int teardown(void **state)
{
	pair_free(*state);
	return 0;
}

static struct engine_config race_config(uint8_t sec, uint32_t max_qps)
{
	struct engine_config c;

	pair_test_config(&c);
	c.sec_mode = sec;
	c.max_qps = max_qps;
	return c;
}

/* Both engines of c, B with another seed (other QPNs, keys, ISNs). */
static struct pair *race_pair(const struct engine_config *c)
{
	struct engine_config cb = *c;

	cb.seed = c->seed + 1;
	return pair_new(c, &cb);
}

/* Small QPs: thousands of them stay cheap. */
static struct engine_qp_attr small_attr(uint64_t user)
{
	struct engine_qp_attr a = pair_test_attr();

	a.npaths = 1;
	a.sq_depth = 4;
	a.rq_depth = 4;
	a.user = user;
	return a;
}

struct race {
	struct pair *p;
	unsigned n;			/* requesters, A's QPs */
	uint32_t qa[MAX_REQ];
	unsigned connected_a, connected_b, failed;
	uint32_t peer_of_b[MAX_REQ];	/* A's QPN each of B's connections names */
	bool repost;			/* B listens again after each connection */
	uint64_t service;		/* 0: each requester its own (SVC + i) */
};

/* A race on c's pair, every requester to one service; *state holds the pair for teardown. */
static struct race *race_new(void **state, const struct engine_config *c, bool repost)
{
	struct race *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	r->p = race_pair(c);
	*state = r->p;
	r->service = SVC;
	r->repost = repost;
	return r;
}

static void race_free(void **state, struct race *r)
{
	pair_free(r->p);
	*state = NULL;
	free(r);
}

static void listen_one(struct race *r, uint64_t service, uint64_t user)
{
	struct engine_qp_attr b = small_attr(user);
	uint32_t qb = pair_qp_create(r->p, PAIR_B, &b);

	assert_int_equal(engine_qp_listen(r->p->s[PAIR_B].eng, qb, service), 0);
}

/* Take both sides' completions: connections counted, B listening again if asked. */
static void reap(struct race *r)
{
	const struct engine_cqe *c;
	struct engine_qp_info ib;

	while ((c = pair_cqe(r->p, PAIR_B))) {
		if (c->opcode != ENGINE_WC_EV_CONNECTED) {
			r->failed++;
			continue;
		}
		assert_int_equal(engine_qp_info(r->p->s[PAIR_B].eng, c->qpn, &ib), 0);
		r->peer_of_b[r->connected_b++] = ib.peer_qpn;
		if (r->repost && r->connected_b < r->n)
			listen_one(r, r->service, 0xb);
	}
	while ((c = pair_cqe(r->p, PAIR_A))) {
		if (c->opcode == ENGINE_WC_EV_CONNECTED) {
			r->connected_a++;
		} else {
			print_message("A's QP %#x: event %u status %u at %.3f ms (busy %llu, "
				      "retry %llu, connected %u)\n", c->qpn, c->opcode, c->status,
				      (double)r->p->now / 1e6,
				      (unsigned long long)pair_stat(r->p, PAIR_B, EC_CM_BUSY),
				      (unsigned long long)pair_stat(r->p, PAIR_A, EC_CM_BUSY_RETRY),
				      r->connected_b);
			r->failed++;
		}
	}
}

/* n requesters of A, listeners posted on B: `listeners` now (repost: one more per connection). */
static void race_start(struct race *r, unsigned n, unsigned listeners)
{
	assert_true(n <= MAX_REQ);
	r->n = n;
	for (unsigned i = 0; i < listeners; i++)
		listen_one(r, r->service ? r->service : SVC + i, 0xb);
	for (unsigned i = 0; i < n; i++) {
		struct engine_qp_attr a = small_attr(0xa);

		r->qa[i] = pair_qp_create(r->p, PAIR_A, &a);
		assert_int_equal(engine_qp_connect(r->p->s[PAIR_A].eng, r->qa[i], PAIR_B,
						   r->service ? r->service : SVC + i,
						   pair_clock(r->p, PAIR_A)), 0);
	}
}

/* Run until every requester connected or `limit` of fake time passed. */
static void race_run(struct race *r, uint64_t limit)
{
	uint64_t t0 = r->p->now;

	while (r->p->now - t0 < limit && (r->connected_a < r->n || r->connected_b < r->n) &&
	       !r->failed) {
		pair_run_for(r->p, 50 * PAIR_US);
		reap(r);
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Every requester connected, each to its own QP of B, and nothing failed. */
static void race_expect_all(struct race *r)
{
	uint32_t *a = malloc(r->n * sizeof(*a)), *b = malloc(r->n * sizeof(*b));

	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(r->failed, 0);
	assert_int_equal(r->connected_a, r->n);
	assert_int_equal(r->connected_b, r->n);
	memcpy(a, r->qa, r->n * sizeof(*a));
	memcpy(b, r->peer_of_b, r->n * sizeof(*b));
	qsort(a, r->n, sizeof(*a), cmp_u32);
	qsort(b, r->n, sizeof(*b), cmp_u32);
	assert_memory_equal(a, b, r->n * sizeof(*a));
	for (unsigned i = 0; i < r->n; i++)
		assert_int_equal(engine_qp_info(r->p->s[PAIR_A].eng, r->qa[i],
						&(struct engine_qp_info){ 0 }), 0);
	free(a);
	free(b);
}

/* One WRITE from each of A's QPs (the first `count`) lands, whole. */
static void race_writes(struct race *r, unsigned count)
{
	struct pair_mem *ma = pair_mem_new(r->p, PAIR_A, 4096, 1, ENGINE_ACCESS_ALL);
	struct pair_mem *mb = pair_mem_new(r->p, PAIR_B, 4096, 1, ENGINE_ACCESS_ALL);
	const struct engine_cqe *c;
	unsigned done = 0;

	pair_mem_fill(ma, 3);
	for (unsigned i = 0; i < count && i < r->n; i++) {
		struct engine_wr wr = { .wr_id = i, .opcode = ENGINE_WR_WRITE,
					.flags = ENGINE_WR_SIGNALED, .lkey = ma->lkey,
					.laddr = 16 * i, .len = 16, .rkey = mb->rkey,
					.raddr = 16 * i };

		assert_int_equal(engine_post_send(r->p->s[PAIR_A].eng, r->qa[i], &wr,
						  pair_clock(r->p, PAIR_A)), 0);
	}
	pair_run_for(r->p, 5 * PAIR_MS);
	while ((c = pair_cqe(r->p, PAIR_A))) {
		assert_int_equal(c->opcode, ENGINE_WC_WRITE);
		assert_int_equal(c->status, ENGINE_WC_SUCCESS);
		done++;
	}
	assert_int_equal(done, count < r->n ? count : r->n);
	pair_mem_expect(mb, 0, ma->buf, 16 * done);
}

static uint8_t qp_state(struct pair *p, int side, uint32_t qpn)
{
	struct engine_qp_info info;

	assert_int_equal(engine_qp_info(p->s[side].eng, qpn, &info), 0);
	return info.state;
}

static const uint8_t modes[] = { MROC_SEC_NONE, MROC_SEC_TOKEN };

/*
 * 12 requesters, 12 listeners on one service (e2e/test_atomic.sh's server):
 * each REQ takes a listener no other REQ waits on, so all connect in one
 * round trip each and nobody is told BUSY.
 */
static void test_requesters_spread(void **state)
{
	for (unsigned m = 0; m < sizeof(modes); m++) {
		struct engine_config c = race_config(modes[m], 32);
		struct race *r = race_new(state, &c, false);

		race_start(r, 12, 12);
		race_run(r, 10 * PAIR_MS);
		race_expect_all(r);
		assert_int_equal(pair_stat(r->p, PAIR_B, EC_CM_BUSY), 0);
		assert_int_equal(pair_stat(r->p, PAIR_A, EC_CM_BUSY_RETRY), 0);
		assert_int_equal(pair_stat(r->p, PAIR_B, EC_CM_HALF_OPEN), 12);
		race_writes(r, 12);
		race_free(state, r);
	}
}

/*
 * 10 requesters at once, one listener; B listens again after each
 * connection (a server accepting one at a time).  Every requester
 * connects, none fails: those whose listener went to another are told
 * BUSY and ask again.
 */
static void test_requesters_one_listener(void **state)
{
	for (unsigned m = 0; m < sizeof(modes); m++) {
		struct engine_config c = race_config(modes[m], 32);
		struct race *r = race_new(state, &c, true);

		race_start(r, 10, 1);
		race_run(r, 5000 * PAIR_MS);
		race_expect_all(r);
		assert_true(pair_stat(r->p, PAIR_B, EC_CM_BUSY) >= 9);
		assert_true(pair_stat(r->p, PAIR_A, EC_CM_BUSY_RETRY) >= 9);
		race_writes(r, 10);
		race_free(state, r);
	}
}

/*
 * 4,000 QPs connecting at once between two engines: 2,000 on one service
 * with 2,000 listeners, 2,000 on a service each.  All connect.
 */
static void test_connect_4000_at_once(void **state)
{
	struct engine_config c = race_config(MROC_SEC_TOKEN, 4096);
	struct race *r = calloc(1, sizeof(*r)), *r2 = calloc(1, sizeof(*r2));

	assert_non_null(r);
	assert_non_null(r2);
	r->p = r2->p = race_pair(&c);
	*state = r->p;
	r->service = SVC + MAX_REQ;
	race_start(r, 2000, 2000);
	race_start(r2, 2000, 2000);	/* service 0: SVC + i each */
	/* r reaps both: move r2's QPs in so one count covers the 4,000 */
	memcpy(&r->qa[2000], r2->qa, 2000 * sizeof(r->qa[0]));
	r->n = 4000;
	race_run(r, 2000 * PAIR_MS);
	race_expect_all(r);
	assert_int_equal(pair_stat(r->p, PAIR_B, EC_CM_BUSY), 0);
	assert_int_equal(pair_stat(r->p, PAIR_B, EC_CM_HALF_DROPPED), 0);
	race_writes(r, 64);
	free(r2);
	free(r);
}

/*
 * Losses in every order: 3 requesters, one listener re-posted after each
 * connection.  For each kind (REQ, REP, RTU, the RTU's answer, REJ BUSY)
 * drop any subset of its first two; every requester connects in each run.
 */
enum { L_REQ, L_REP, L_RTU, L_ANS, L_BUSY, L_KINDS };

struct loss {
	unsigned mask[L_KINDS];		/* bit i: drop the i-th of the kind (i < 2) */
	unsigned seen[L_KINDS];
};

static int kind_of(const struct pair_pkt *pkt)
{
	uint8_t op = pkt->data[PKT_OPCODE];

	if (op == MROC_OP_CONNECT_REQ)
		return L_REQ;
	if (op == MROC_OP_CONNECT_REP)
		return L_REP;
	if (op == MROC_OP_KEEPALIVE)
		return pkt->from == PAIR_A ? L_RTU : L_ANS;
	if (op == MROC_OP_CONNECT_REJ && pkt->data[PKT_CM_REASON] == MROC_CM_BUSY)
		return L_BUSY;
	return -1;
}

static bool loss_filter(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct loss *l = arg;
	int k = kind_of(pkt);
	unsigned i;

	(void)p;
	if (k < 0)
		return true;
	i = l->seen[k]++;
	return !(i < 2 && (l->mask[k] >> i & 1));
}

static void test_losses_every_order(void **state)
{
	struct engine_config c = race_config(MROC_SEC_TOKEN, 16);
	unsigned failed = 0, busy = 0;

	for (unsigned n = 0; n < 1u << (2 * L_KINDS); n++) {
		struct race *r = race_new(state, &c, true);
		struct loss l = { 0 };

		for (unsigned k = 0; k < L_KINDS; k++)
			l.mask[k] = n >> (2 * k) & 3;
		r->p->filter = loss_filter;
		r->p->filter_arg = &l;
		race_start(r, 3, 1);
		race_run(r, 2000 * PAIR_MS);
		busy += pair_stat(r->p, PAIR_B, EC_CM_BUSY) > 0;
		if (r->failed || r->connected_a != 3 || r->connected_b != 3) {
			print_message("lost REQ %u REP %u RTU %u answer %u BUSY %u: A %u, B %u "
				      "connected, %u failed\n", l.mask[L_REQ], l.mask[L_REP],
				      l.mask[L_RTU], l.mask[L_ANS], l.mask[L_BUSY], r->connected_a,
				      r->connected_b, r->failed);
			failed++;
		} else {
			race_expect_all(r);
		}
		race_free(state, r);
	}
	assert_int_equal(failed, 0);
	assert_true(busy > 0);		/* the BUSY path was taken */
}

/*
 * A CONNECT_REJ BUSY moves only a requester waiting for its RTU's answer,
 * and only when it can check it: in "token" one without the tag of the
 * requester's key is refused (rx_bad_tag), and a BUSY to a connected QP
 * changes nothing in any mode.
 */
static void test_busy_forged(void **state)
{
	for (unsigned m = 0; m < sizeof(modes); m++) {
		struct engine_config c = race_config(modes[m], 16);
		struct pair_capture *cap;
		struct race *r = race_new(state, &c, false);
		uint8_t rej[MROC_HDR_LEN + MROC_CM_HDR_LEN] = { 0 };
		uint32_t qb;
		uint64_t bad_tag;

		/* B's answers to the RTU held back: A waits with its REP. */
		cap = pair_capture_start(r->p, PAIR_B, PAIR_OP_BIT(MROC_OP_KEEPALIVE), false);
		race_start(r, 1, 1);
		pair_run_for(r->p, 100 * PAIR_US);
		assert_int_equal(qp_state(r->p, PAIR_A, r->qa[0]), ENGINE_QPS_CONNECTING);
		assert_true(cap->n >= 1);
		qb = pkt_get32(cap->pkt[0].data, PKT_SRC_QPN);
		rej[PKT_VERSION] = MROC_WIRE_VERSION;
		rej[PKT_OPCODE] = MROC_OP_CONNECT_REJ;
		pkt_put32(rej, PKT_DST_QPN, r->qa[0]);
		pkt_put32(rej, PKT_SRC_QPN, qb);
		rej[PKT_CM_REASON] = MROC_CM_BUSY;
		rej[MROC_HDR_LEN + 21] = modes[m];	/* sec */
		bad_tag = pair_stat(r->p, PAIR_A, EC_RX_BAD_TAG);
		if (modes[m] == MROC_SEC_TOKEN) {
			pair_rx(r->p, PAIR_A, rej, sizeof(rej), PAIR_B, 0);
			assert_int_equal(pair_stat(r->p, PAIR_A, EC_RX_BAD_TAG), bad_tag + 1);
			assert_int_equal(pair_stat(r->p, PAIR_A, EC_CM_BUSY_RETRY), 0);
		}
		pair_capture_stop(r->p);
		race_run(r, 50 * PAIR_MS);
		race_expect_all(r);
		/* Connected: a BUSY, even one that passes the security checks of "none", is stale. */
		pair_rx(r->p, PAIR_A, rej, sizeof(rej), PAIR_B, 0);
		assert_int_equal(qp_state(r->p, PAIR_A, r->qa[0]), ENGINE_QPS_CONNECTED);
		assert_int_equal(pair_stat(r->p, PAIR_A, EC_CM_BUSY_RETRY), 0);
		race_writes(r, 1);
		race_free(state, r);
	}
}

#define T(fn) cmocka_unit_test_teardown(fn, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_requesters_spread),
		T(test_requesters_one_listener),
		T(test_connect_4000_at_once),
		T(test_losses_every_order),
		T(test_busy_forged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
