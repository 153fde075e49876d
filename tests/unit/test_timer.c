// SPDX-License-Identifier: MIT
/*
 * The engine's timer wheel (engine/timer.c) against a reference: a
 * plain array of deadlines.  Random sets, moves and cancels at every scale
 * (nanoseconds to hours, past and future), time moving in random steps;
 * after each step the wheel must give exactly the QPs the reference says
 * are due, each once, and its next deadline must never be later than the
 * true earliest one, nor earlier than now once everything due was taken
 * (a driver would spin on it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define NQ	512

static struct engine eng;
static struct qp qps[NQ];
static uint64_t ref[NQ];		/* deadline, 0 = none */
static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* A deadline relative to now at a random scale, now and then in the past. */
static uint64_t rnd_deadline(uint64_t now)
{
	static const uint64_t scale[] = { 1000, 70000, 5000000, 300000000, 20000000000ULL,
					  20000000000000ULL };
	uint64_t d = rnd() % scale[rnd() % 6];

	if (rnd() % 16 == 0)
		return now > d ? now - d + 1 : 1;
	return now + d + 1;
}

static uint64_t ref_min(void)
{
	uint64_t m = 0;

	for (int i = 0; i < NQ; i++)
		if (ref[i] && (!m || ref[i] < m))
			m = ref[i];
	return m;
}

static void check_advance(uint64_t now)
{
	bool got[NQ] = { false };
	struct qp *qp;
	uint64_t next;

	while ((qp = timer_pop_due(&eng, now))) {
		int i = (int)(qp - qps);

		assert_true(i >= 0 && i < NQ);
		assert_false(got[i]);
		assert_true(ref[i] && ref[i] <= now);
		got[i] = true;
		ref[i] = 0;
	}
	for (int i = 0; i < NQ; i++)
		assert_false(ref[i] && ref[i] <= now);	/* everything due came out */
	next = timer_next(&eng);
	if (!ref_min()) {
		assert_int_equal(next, 0);
	} else {
		assert_true(next <= ref_min());
		assert_true(next > now);
	}
}

static void run(uint64_t seed, int steps)
{
	uint64_t now = 1000;

	rng_state = seed;
	memset(&eng, 0, sizeof(eng));
	memset(qps, 0, sizeof(qps));
	memset(ref, 0, sizeof(ref));
	eng.cfg.max_qps = NQ;
	assert_int_equal(timer_init(&eng), 0);
	for (int s = 0; s < steps; s++) {
		int ops = (int)(rnd() % 8);

		for (int k = 0; k < ops; k++) {
			int i = (int)(rnd() % NQ);
			uint64_t d = rnd() % 5 ? rnd_deadline(now) : 0;

			timer_set(&eng, &qps[i], d);
			ref[i] = d;
		}
		/* A driver asks for the next deadline, then time moves on: to it, or by a step. */
		if (rnd() % 3 == 0 && ref_min())
			now = timer_next(&eng) > now ? timer_next(&eng) : now + 1;
		else
			now += rnd() % (rnd() % 4 == 0 ? 100000000ULL : 3000);
		check_advance(now);
	}
}

static void test_wheel_matches_reference(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 20; seed++)
		run(seed * 0x9e3779b97f4a7c15ULL, 20000);
}

/* A cancelled or moved-later timer never fires early, and the next deadline follows it. */
static void test_move_later(void **state)
{
	(void)state;
	memset(&eng, 0, sizeof(eng));
	memset(qps, 0, sizeof(qps));
	eng.cfg.max_qps = NQ;
	timer_init(&eng);
	timer_set(&eng, &qps[0], 5000);
	assert_int_equal(timer_next(&eng), 5000);
	timer_set(&eng, &qps[0], 2000000);
	assert_true(timer_next(&eng) <= 2000000);
	assert_null(timer_pop_due(&eng, 5000));
	assert_true(timer_next(&eng) > 5000);
	assert_null(timer_pop_due(&eng, 1999999));
	assert_ptr_equal(timer_pop_due(&eng, 2000000), &qps[0]);
	timer_set(&eng, &qps[1], 3000000);
	timer_cancel(&eng, &qps[1]);
	assert_int_equal(timer_next(&eng), 0);
	assert_null(timer_pop_due(&eng, 4000000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wheel_matches_reference),
		cmocka_unit_test(test_move_later),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
