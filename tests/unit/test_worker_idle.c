// SPDX-License-Identifier: MIT
/*
 * The worker's busy-poll turns (daemon/dataplane/idle.h), on a clock the
 * test moves by hand: one yield per IDLE_YIELD_EVERY_NS of spinning,
 * counted from the end of the last yield.  On a loaded machine a yield
 * takes longer than the interval; counted from its start, every turn after
 * a yield was due again and the worker yielded on every turn.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "idle.h"

#define US 1000ULL

static uint64_t clk;		/* ns */
static uint64_t yield_ns;	/* how long a yield keeps the CPU away */

static uint64_t fake_clock(void)
{
	return clk;
}

static void fake_yield(void)
{
	clk += yield_ns;
}

/* 1 ms of idle turns, each 1 us long (its polls): yields made, and turns that only spun. */
static void run(uint64_t per_yield, uint64_t *yields, uint64_t *spins)
{
	struct idle_spin s = { 0 };
	uint64_t end;

	clk = 1000 * US;
	yield_ns = per_yield;
	s.last_yield_end = clk;
	end = clk + 1000 * US;
	*spins = 0;
	while (clk < end) {
		uint64_t before = s.yields;

		idle_spin_turn(&s, fake_clock(), fake_clock, fake_yield);
		*spins += s.yields == before;
		clk += 1 * US;
	}
	*yields = s.yields;
}

static void test_quiet(void **state)
{
	uint64_t yields, spins;

	(void)state;
	/* A yield that returns at once: one per 10 us of turns. */
	run(0, &yields, &spins);
	assert_in_range(yields, 1000 / 11, 1000 / 10);
	assert_true(spins >= 9 * yields);
}

static void test_loaded(void **state)
{
	uint64_t yields, spins;

	(void)state;
	/*
	 * Each yield gives the CPU away for 30 us: still 10 us of spinning
	 * between two (counted from its start, 0: a yield on every turn).
	 */
	run(30 * US, &yields, &spins);
	assert_in_range(yields, 1000 / 41, 1000 / 40 + 1);
	assert_true(spins >= 9 * yields);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quiet),
		cmocka_unit_test(test_loaded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
