// SPDX-License-Identifier: MIT
/*
 * Answers a requester is owed: a READ or atomic the responder acknowledged
 * (its DSN is delivered) and never answers.  Nothing of the request is in
 * flight and the peer answers keepalives, so neither an RTO nor the dead
 * peer ends the wait: the requester times the answer itself, over the
 * retry budget (max_retx), and fails the WR with RETRY_EXC.  A responder
 * that is only slow (its answer streams, or waits behind its own sends)
 * keeps the request alive.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>

#include "engine_pair.h"

#define REG_LEN		(1024 * 1024)
#define SVC		42

static int teardown(void **state)
{
	return pair_fx_teardown(state);
}

/* B's answers (READ_RESP, ATOMIC_RESP) are dropped while on; its ACKs while no_acks. */
struct mute {
	bool on;
	bool no_acks;
	uint64_t dropped;
};

static bool drop_answers(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct mute *m = arg;
	uint8_t op = pkt->data[PKT_OPCODE];

	(void)p;
	if (m->no_acks && pkt->from == PAIR_B && op == MROC_OP_ACK)
		return false;
	if (!m->on || pkt->from != PAIR_B ||
	    (op != MROC_OP_READ_RESP && op != MROC_OP_ATOMIC_RESP))
		return true;
	m->dropped++;
	return false;
}

static void run_until_cqe(struct pair *p, int side, uint64_t limit)
{
	uint64_t end = p->now + limit;

	while (!pair_pending(p, side) && p->now < end)
		pair_run_for(p, 100 * PAIR_US);
}

/* A's retry budget max_retx (0: the test config's). */
static struct pair_fx *open_pair_retx(void **state, struct mute *m, uint32_t max_retx)
{
	struct engine_config ca, cb;
	struct pair_fx *x;

	pair_test_config(&ca);
	cb = ca;
	if (max_retx)
		ca.max_retx = max_retx;
	cb.seed = 2;
	/*
	 * B stands for a responder whose answers never come but which lives on
	 * (answers keepalives, acknowledges): its own QP keeps resending the
	 * answers A never gets for minutes, not the 2 s its retry budget and
	 * dead-peer time would take in the test config (then it fails and A
	 * learns of it: FLUSH).
	 */
	cb.rto_max_ns = 1000 * PAIR_MS;
	cb.max_retx = 255;
	cb.dead_peer_ns = 1000000 * PAIR_MS;
	x = pair_fx_open(state, sizeof(*x), &ca, &cb, REG_LEN, ENGINE_ACCESS_ALL, 1);
	pair_connect(x->p, NULL, NULL, SVC);
	pair_set_delay(x->p, PAIR_A, 10 * PAIR_US);
	pair_set_delay(x->p, PAIR_B, 10 * PAIR_US);
	x->p->filter = drop_answers;
	x->p->filter_arg = m;
	return x;
}

static struct pair_fx *open_pair(void **state, struct mute *m)
{
	return open_pair_retx(state, m, 0);
}

/*
 * A READ whose every answer is lost: the requester fails it with RETRY_EXC
 * (the QP goes to error), within the retry budget of RTOs, instead of
 * waiting for good with nothing outstanding.
 */
static void test_read_never_answered(void **state)
{
	struct mute m = { .on = true };
	struct pair_fx *x = open_pair(state, &m);
	struct engine_wr wr = pair_fx_wr(x, ENGINE_WR_READ, 7, 0, 16 * 1024, 0);
	uint64_t t0 = x->p->now;

	assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
	run_until_cqe(x->p, PAIR_A, 10000 * PAIR_MS);
	print_message("READ never answered: %u completions after %.3f s, %llu answers dropped, "
		      "%llu timeouts\n", pair_pending(x->p, PAIR_A),
		      (double)(x->p->now - t0) / 1e9, (unsigned long long)m.dropped,
		      (unsigned long long)pair_stat(x->p, PAIR_A, EC_RX_ANSWER_TIMEOUT));
	pair_expect(x->p, PAIR_A, ENGINE_WC_READ, ENGINE_WC_RETRY_EXC_ERR, 7);
	assert_true(x->p->now - t0 < 2000 * PAIR_MS);
	assert_true(m.dropped > 0);
	assert_int_equal(pair_stat(x->p, PAIR_A, EC_RX_ANSWER_TIMEOUT),
			 x->p->s[PAIR_A].cfg.max_retx + 1);
	assert_int_equal(pair_state(x->p, PAIR_A), ENGINE_QPS_ERROR);
}

/*
 * The same with the largest retry budget the config takes (255): the
 * count of waits was a byte, and its 256th wrapped to 0 where it had to
 * pass 255, so the READ waited for good (and the waits started over
 * short).
 */
static void test_read_never_answered_max_retx(void **state)
{
	struct mute m = { .on = true };
	struct pair_fx *x = open_pair_retx(state, &m, 255);
	struct engine_wr wr = pair_fx_wr(x, ENGINE_WR_READ, 9, 0, 16 * 1024, 0);
	uint64_t t0 = x->p->now;

	assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
	run_until_cqe(x->p, PAIR_A, 20000 * PAIR_MS);
	print_message("READ never answered, max_retx 255: %u completions after %.3f s, "
		      "%llu timeouts\n", pair_pending(x->p, PAIR_A),
		      (double)(x->p->now - t0) / 1e9,
		      (unsigned long long)pair_stat(x->p, PAIR_A, EC_RX_ANSWER_TIMEOUT));
	pair_expect(x->p, PAIR_A, ENGINE_WC_READ, ENGINE_WC_RETRY_EXC_ERR, 9);
	assert_int_equal(pair_stat(x->p, PAIR_A, EC_RX_ANSWER_TIMEOUT), 256);
	assert_int_equal(pair_state(x->p, PAIR_A), ENGINE_QPS_ERROR);
}

/* The same for a FETCH_ADD. */
static void test_atomic_never_answered(void **state)
{
	struct mute m = { .on = true };
	struct pair_fx *x = open_pair(state, &m);
	struct engine_wr wr = pair_fx_wr(x, ENGINE_WR_ATOMIC_FETCH_ADD, 8, 0, 8, 0);

	assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
	run_until_cqe(x->p, PAIR_A, 10000 * PAIR_MS);
	pair_expect(x->p, PAIR_A, ENGINE_WC_ATOMIC_FETCH_ADD, ENGINE_WC_RETRY_EXC_ERR, 8);
}

/*
 * Answers lost for a while (less than the budget), then through: the READ
 * completes, and a READ after it completes at once (the count starts over).
 */
static void test_read_answered_late(void **state)
{
	struct mute m = { .on = true };
	struct pair_fx *x = open_pair(state, &m);
	struct engine_wr wr = pair_fx_wr(x, ENGINE_WR_READ, 9, 0, 16 * 1024, 0);

	assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
	pair_run_for(x->p, 60 * PAIR_MS);
	assert_int_equal(pair_pending(x->p, PAIR_A), 0);
	m.on = false;
	run_until_cqe(x->p, PAIR_A, 10000 * PAIR_MS);
	print_message("READ answered late: %llu dropped, %llu timeouts\n",
		      (unsigned long long)m.dropped,
		      (unsigned long long)pair_stat(x->p, PAIR_A, EC_RX_ANSWER_TIMEOUT));
	pair_expect(x->p, PAIR_A, ENGINE_WC_READ, ENGINE_WC_SUCCESS, 9);
	wr = pair_fx_wr(x, ENGINE_WR_READ, 10, 0, 16 * 1024, 0);
	assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
	run_until_cqe(x->p, PAIR_A, 10 * PAIR_MS);
	pair_expect(x->p, PAIR_A, ENGINE_WC_READ, ENGINE_WC_SUCCESS, 10);
	assert_int_equal(pair_state(x->p, PAIR_A), ENGINE_QPS_CONNECTED);
}

/*
 * A long READ (8 MiB) whose answer streams for longer than the budget's
 * time: every answer packet is progress, and it completes.
 */
static void test_long_read_streams(void **state)
{
	struct mute m = { .on = false };
	struct pair_fx *x = open_pair(state, &m);
	struct engine_wr wr = pair_fx_wr(x, ENGINE_WR_READ, 11, 0, REG_LEN, 0);

	pair_set_delay(x->p, PAIR_B, 2 * PAIR_MS);	/* a slow way back */
	assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
	run_until_cqe(x->p, PAIR_A, 20000 * PAIR_MS);
	pair_expect(x->p, PAIR_A, ENGINE_WC_READ, ENGINE_WC_SUCCESS, 11);
	assert_int_equal(pair_stat(x->p, PAIR_A, EC_RX_ANSWER_TIMEOUT), 0);
}

/*
 * The wait stops while every answer owed is in (READ 1's came; READ 1 and
 * the WRITE before it wait for B's lost ACKs to retire).  READ 2, posted
 * then, is timed all the same (answer_arm whenever no answer is timed, not
 * only for the first request outstanding).  Here READ 2 leaves only once
 * the ACKs are back and the others retired, so the first-request rule
 * passes too: the case it missed (a request sent while an answered one
 * waits to retire and the timer is stopped) needs READ 2 to leave in a
 * window this harness cannot hold open; kept as the case around it.
 */
static void test_second_read_timed(void **state)
{
	struct mute m = { .no_acks = true };
	struct pair_fx *x = open_pair(state, &m);
	struct engine_wr w = pair_fx_wr(x, ENGINE_WR_WRITE, 1, 0, 4096, 0);
	struct engine_wr r1 = pair_fx_wr(x, ENGINE_WR_READ, 2, 8192, 1024, 8192);
	struct engine_wr r2 = pair_fx_wr(x, ENGINE_WR_READ, 3, 16384, 1024, 16384);

	assert_int_equal(pair_post(x->p, PAIR_A, &w), 0);
	assert_int_equal(pair_post(x->p, PAIR_A, &r1), 0);
	pair_run_for(x->p, 200 * PAIR_MS);	/* READ 1 answered, the wait over */
	assert_int_equal(pair_pending(x->p, PAIR_A), 0);
	m.on = true;
	assert_int_equal(pair_post(x->p, PAIR_A, &r2), 0);
	pair_run_for(x->p, 5 * PAIR_MS);
	m.no_acks = false;
	run_until_cqe(x->p, PAIR_A, 1000 * PAIR_MS);
	pair_expect(x->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	run_until_cqe(x->p, PAIR_A, 1000 * PAIR_MS);
	pair_expect(x->p, PAIR_A, ENGINE_WC_READ, ENGINE_WC_SUCCESS, 2);
	run_until_cqe(x->p, PAIR_A, 10000 * PAIR_MS);
	print_message("READ 2 never answered, posted while READ 1 waited to retire: %u completions, "
		      "%llu timeouts\n", pair_pending(x->p, PAIR_A),
		      (unsigned long long)pair_stat(x->p, PAIR_A, EC_RX_ANSWER_TIMEOUT));
	pair_expect(x->p, PAIR_A, ENGINE_WC_READ, ENGINE_WC_RETRY_EXC_ERR, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_read_never_answered, teardown),
		cmocka_unit_test_teardown(test_read_never_answered_max_retx, teardown),
		cmocka_unit_test_teardown(test_atomic_never_answered, teardown),
		cmocka_unit_test_teardown(test_read_answered_late, teardown),
		cmocka_unit_test_teardown(test_long_read_streams, teardown),
		cmocka_unit_test_teardown(test_second_read_timed, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
