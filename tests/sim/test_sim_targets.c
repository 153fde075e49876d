// SPDX-License-Identifier: MIT
/*
 * The performance targets, in simulated time.  A failure here means
 * the engine misses a target, not that it is broken (test_sim_transfer
 * checks correctness); every test prints what it measured.
 *
 * Setup (scn_config_bench, as `mroc-sim bench`): planes of 25 Gbit/s, 2 us
 * propagation, 512 KiB queues, ECN above 64 KiB, MTU 4096, 64 KiB WRITEs,
 * 32 outstanding, ROUTE_PATH_ID unless said otherwise, the engine's default
 * configuration.  Goodputs are means over simulation seeds 1..SEEDS, so one
 * lucky or unlucky loss pattern does not decide a target.
 *
 *  - MetaRoCE keeps >= 95 % of its lossless goodput at 1 % random loss and
 *    >= 75 % at 10 % (4 paths).
 *  - P equal rate-limited paths give >= 0.95 x P x one path, P = 1..8.
 *  - With one of 4 paths blackholed the transfer completes and goodput
 *    settles at >= 90 % of the 3 remaining paths' goodput capacity: with
 *    ROUTE_PATH_ID (the path is pinned to the dead plane: the engine must
 *    stop using it) and with ROUTE_HASH (repathing can move it).
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "scenario.h"

#define MIB		(1ULL << 20)
#define MSEC		1000000ULL
#define SEEDS		3

/* Mean goodput over SEEDS simulation seeds; every run must complete. */
static double measure(const char *what, struct scn_config *cfg)
{
	static struct scn_result r;
	double sum = 0;

	print_message("%-30s", what);
	for (uint64_t s = 1; s <= SEEDS; s++) {
		int err;

		cfg->seed = s;
		err = scn_run(cfg, &r);
		print_message(" %7.2f", r.goodput_gbps);
		if (err)
			print_message("\n  seed %" PRIu64 " FAILED: %s\n", s, r.why);
		assert_int_equal(err, 0);
		sum += r.goodput_gbps;
	}
	print_message("  mean %.2f Gbit/s (%.3f of %.2f)\n", sum / SEEDS,
		      sum / SEEDS / r.capacity_gbps, r.capacity_gbps);
	return sum / SEEDS;
}

static bool check_ratio(const char *what, double got, double target)
{
	print_message("%-30s %.3f (target >= %.2f)%s\n", what, got, target,
		      got >= target ? "" : "  <-- MISSED");
	return got >= target;
}

static void loss_cfg(struct scn_config *cfg, double loss)
{
	scn_config_bench(cfg);
	cfg->wl.total_bytes = 64 * MIB;
	cfg->loss = loss;
	cfg->time_limit_ns = 1000 * MSEC;
}

static void target_loss(double loss, double target)
{
	struct scn_config cfg;
	char what[64];
	double base, lossy;

	loss_cfg(&cfg, 0);
	base = measure("metaroce 4 paths, loss 0", &cfg);
	loss_cfg(&cfg, loss);
	snprintf(what, sizeof(what), "metaroce 4 paths, loss %g%%", loss * 100);
	lossy = measure(what, &cfg);
	snprintf(what, sizeof(what), "loss %g%% / lossless", loss * 100);
	assert_true(check_ratio(what, lossy / base, target));
}

static void target_loss_1pct(void **state)
{
	target_loss(0.01, 0.95);
}

static void target_loss_10pct(void **state)
{
	target_loss(0.10, 0.75);
}

/* P planes, P paths, NIC = P x plane: throughput / (P x one path). */
static void target_scaling(void **state)
{
	double one = 0;
	bool all = true;

	for (uint32_t p = 1; p <= 8; p++) {
		struct scn_config cfg;
		char what[64];
		double gbps;

		scn_config_bench(&cfg);
		cfg.planes = p;
		cfg.wl.npaths = (uint8_t)p;
		cfg.wl.total_bytes = 64 * MIB;
		cfg.time_limit_ns = 1000 * MSEC;
		snprintf(what, sizeof(what), "%u path(s), ROUTE_PATH_ID", p);
		gbps = measure(what, &cfg);
		if (p == 1)
			one = gbps;
		snprintf(what, sizeof(what), "%u paths / (%u x one path)", p, p);
		all &= check_ratio(what, gbps / (p * one), 0.95);
	}
	assert_true(all);
}

/*
 * Plane 2 of 4 dies 1 ms into a 128 MiB transfer; goodput is measured from
 * 4 ms after the failure (two of the engine's default 2 ms minimum RTOs) to
 * the end.
 */
static void target_failover(uint8_t route)
{
	static struct scn_result r;
	struct scn_config cfg;
	double sum = 0;
	bool done = true;

	scn_config_bench(&cfg);
	cfg.route = route;
	cfg.wl.total_bytes = 128 * MIB;
	cfg.blackhole_plane = 2;
	cfg.blackhole_at_ns = 1 * MSEC;
	cfg.settle_ns = 4 * MSEC;
	cfg.time_limit_ns = 1000 * MSEC;
	for (uint64_t s = 1; s <= SEEDS; s++) {
		cfg.seed = s;
		scn_run(&cfg, &r);
		print_message("failover %s seed %" PRIu64 ": %s at %.3f ms, after failure %.2f "
			      "Gbit/s of %.2f%s%s\n", route == SIM_ROUTE_HASH ? "hash" : "path_id",
			      s, r.wl.done ? "completed" : "NOT completed",
			      (double)(r.wl.done ? r.wl.t_last_cqe : r.t_end_ns) / 1e6,
			      r.after_gbps, r.after_capacity_gbps, r.err ? ": " : "",
			      r.err ? r.why : "");
		done &= !r.err;
		sum += r.after_gbps / r.after_capacity_gbps;
	}
	check_ratio("after failure / 3 planes", sum / SEEDS, 0.90);
	assert_true(done);
	assert_true(sum / SEEDS >= 0.90);
}

static void target_failover_path_id(void **state)
{
	target_failover(SIM_ROUTE_PATH_ID);
}

static void target_failover_hash(void **state)
{
	target_failover(SIM_ROUTE_HASH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(target_loss_1pct),
		cmocka_unit_test(target_loss_10pct),
		cmocka_unit_test(target_scaling),
		cmocka_unit_test(target_failover_path_id),
		cmocka_unit_test(target_failover_hash),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
