// SPDX-License-Identifier: MIT
/*
 * bench-fabric's fabric-bound planes with hosts as busy as its real runs'
 * (mroc-sim run --like-fabric-busy, issue #27 deliverable 3), the scenarios
 * issue #27's engine work is tuned against:
 *  - the model marks as the real fabric did (a share of the packets, not all
 *    of them), where --like-fabric's quicker hosts have nearly every packet
 *    marked and windows of one packet;
 *  - random loss on that congested ECN fabric: what 1 % and 10 % keep of the
 *    lossless goodput with 4 and 8 paths;
 *  - equal congestion on every plane (8 paths, two on each plane, lossless):
 *    the moves per path per simulated 10 s.
 *  - 10 % random loss with 4 paths where the hosts take every packet within
 *    16 us (--like-fabric --host-rx 16,0,0): the one set-up that has the real
 *    10 % row's timeouts (40-55 RTOs in 4 s against a real 49-50) and its
 *    goodput (0.80-0.88 of capacity against 0.79-0.87); --like-fabric-busy
 *    has 9-15 RTOs there and keeps 0.94-0.97.
 * Each asserts what holds on the engine of session 15's start, with the
 * figure printed; issue #27's targets (0.97 and 0.85 kept, under one move
 * per path per 10 s) are not all met there, see
 * docs/notes/2026-12-05/s15-sim15.md.  Deterministic: simulated time, fixed
 * seeds.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "scenario.h"
#include "simnet.h"
#include "workload.h"

#define MIB	(1ULL << 20)
#define MSEC	1000000ULL

/* Each loss run's transfer: ~0.8 s of simulated time lossless. */
#define LOSS_BYTES	(96 * MIB)

static void busy_cfg(struct scn_config *cfg, uint8_t paths, double loss, uint64_t bytes,
		     uint64_t seed)
{
	scn_config_default(cfg);
	scn_config_like_fabric_busy(cfg);
	cfg->wl.npaths = paths;
	cfg->wl.total_bytes = bytes;
	cfg->loss = loss;
	cfg->seed = seed;
}

static void run_ok(const char *name, const struct scn_config *cfg, struct scn_result *r)
{
	int err = scn_run(cfg, r);
	const uint64_t *c = r->eng[0].c, *s = r->eng[1].c;

	print_message("%-36s %s: %.3f of capacity, CE on %.3f, retx %" PRIu64 ", rto %" PRIu64
		      ", repath %" PRIu64 " (timeout %" PRIu64 " loss %" PRIu64 " ce %" PRIu64
		      " slow %" PRIu64 ") in %.2f s\n", name, err ? "FAILED" : "ok",
		      r->goodput_gbps / r->capacity_gbps,
		      s[EC_RX_PKTS] ? (double)s[EC_CE] / (double)s[EC_RX_PKTS] : 0, c[EC_TX_RETX],
		      c[EC_RTO], c[EC_REPATH], c[EC_REPATH_TIMEOUT], c[EC_REPATH_LOSS],
		      c[EC_REPATH_CE], c[EC_REPATH_SLOW], (double)r->t_end_ns / 1e9);
	if (err)
		print_message("  why: %s\n", r->why);
	assert_int_equal(err, 0);
	assert_true(r->wl.done);
}

static double ce_share(const struct scn_result *r)
{
	const uint64_t *s = r->eng[1].c;

	return s[EC_RX_PKTS] ? (double)s[EC_CE] / (double)s[EC_RX_PKTS] : 0;
}

/*
 * 4 paths, lossless, seed 2 (a plane per path from the start), ~2 s: the
 * quiet real runs of session 15 had 0.72-0.78 of their data packets marked
 * CE (the receivers' counters); --like-fabric marks 0.88 here (0.94 over
 * 4 s), --like-fabric-busy 0.71 (0.78 over 4 s).
 */
static void test_busy_marks_like_real(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;
	double quick;

	(void)state;
	scn_config_default(&cfg);
	scn_config_like_fabric(&cfg);
	cfg.wl.npaths = 4;
	cfg.wl.total_bytes = 256 * MIB;
	cfg.seed = 2;
	run_ok("like-fabric, 4 paths", &cfg, &r);
	quick = ce_share(&r);
	busy_cfg(&cfg, 4, 0, 256 * MIB, 2);
	run_ok("like-fabric-busy, 4 paths", &cfg, &r);
	assert_true(quick > 0.85);
	assert_true(ce_share(&r) >= 0.65 && ce_share(&r) <= 0.8);
	assert_true(r.goodput_gbps >= 0.95 * r.capacity_gbps);
}

/*
 * Random loss on the congested ECN fabric, 4 and 8 paths hashed onto the
 * planes (seed 2), 0 / 1 / 10 % on every plane both ways: the issue's
 * targets, 0.97 of the lossless goodput kept at 1 % and 0.85 at 10 %.  The
 * engine of session 15's start keeps 1.00 and 0.94 (4 paths), 1.00 and
 * 1.00 (8): the simulator meets them where the real fabric (0.86 and 0.82
 * with 4 paths) does not, see the report for why (RTOs).
 */
static void test_random_loss_busy_fabric(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	for (unsigned i = 0; i < 2; i++) {
		uint8_t paths = i ? 8 : 4;
		double lossless, kept1, kept10;

		busy_cfg(&cfg, paths, 0, LOSS_BYTES, 2);
		run_ok(i ? "busy fabric, 8 paths, lossless" : "busy fabric, 4 paths, lossless",
		       &cfg, &r);
		lossless = r.goodput_gbps;
		busy_cfg(&cfg, paths, 0.01, LOSS_BYTES, 2);
		run_ok("  1% loss", &cfg, &r);
		kept1 = r.goodput_gbps / lossless;
		busy_cfg(&cfg, paths, 0.1, LOSS_BYTES, 2);
		run_ok("  10% loss", &cfg, &r);
		kept10 = r.goodput_gbps / lossless;
		assert_true(r.eng[0].c[EC_TX_RETX] > 0);
		print_message("  kept: 1%% %.3f (target 0.97), 10%% %.3f (target 0.85)\n", kept1,
			      kept10);
		assert_true(kept1 >= 0.97);
		assert_true(kept10 >= 0.85);
	}
}

/*
 * Equal congestion on every plane: 8 paths, lossless, ~2 s of simulated
 * time; the target is under one move per path per 10 s where no
 * plane is worse than another.
 *  - Two paths on each plane for good (a NIC port per path: a move changes
 *    the source port, not the plane): no move buys anything, and none is
 *    made (0 today).
 *  - Hashed by the leaves, as the real runs are (seeds 1, 2, 4: every plane
 *    carries a path; seed 2 hashes them 3/2/2/1, which puts three paths at
 *    2/3 of the median, the "slow" rule's line): 2.9-4.2 moves per path
 *    per 10 s before moves looked first (path_trial.c path_look_sample), every
 *    one a "slow" trial taken back; 0.6, 0.6 and 0 with looks (105, 145
 *    and 27 looks, one of each of the first two found a route clear).
 *    The target, under 1, is asserted on each.
 */
static double moves_per_10s(const struct scn_config *cfg, const struct scn_result *r)
{
	return (double)r->eng[0].c[EC_REPATH] * 10e9 /
	       ((double)cfg->wl.npaths * (double)r->t_end_ns);
}

static void test_equal_congestion_busy(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	busy_cfg(&cfg, 8, 0, 240 * MIB, 2);
	cfg.route = SIM_ROUTE_PATH_ID;
	run_ok("busy fabric, 8 paths, 2 per plane", &cfg, &r);
	assert_true(r.t_end_ns > 1500 * MSEC);
	for (uint32_t p = 0; p < cfg.planes; p++)
		assert_true(r.plane[p].marked_ce > 0);
	print_message("  %.2f moves per path per 10 s (target under 1)\n", moves_per_10s(&cfg, &r));
	assert_true(r.goodput_gbps >= 0.95 * r.capacity_gbps);
	assert_true(moves_per_10s(&cfg, &r) < 1);

	for (uint64_t seed = 1; seed <= 4; seed++) {
		if (seed == 3)
			continue;	/* a plane idle: test_idle_plane_found_busy */
		busy_cfg(&cfg, 8, 0, 240 * MIB, seed);
		run_ok("busy fabric, 8 paths hashed", &cfg, &r);
		assert_true(r.t_end_ns > 1500 * MSEC);
		print_message("  seed %" PRIu64 ": %.2f moves per path per 10 s (target under 1), "
			      "%" PRIu64 " looks\n", seed, moves_per_10s(&cfg, &r),
			      r.eng[0].c[EC_REPATH_LOOK]);
		assert_true(r.goodput_gbps >= 0.95 * r.capacity_gbps);
		assert_true(moves_per_10s(&cfg, &r) < 1);
	}
}

/*
 * The placement the equal case must not cost: 8 paths hashed with a plane
 * left idle (seed 3: one path alone, seven on two planes, 4/3/1/0 or so,
 * where no path is under 2/3 of the median).  Before moves looked first,
 * noise set off 17 trials in 2 s, three of which stayed: 0.940 of
 * capacity; with looks 47, one clear, one move: 0.976.
 */
static void test_idle_plane_found_busy(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	busy_cfg(&cfg, 8, 0, 240 * MIB, 3);
	run_ok("busy fabric, 8 paths hashed, one idle", &cfg, &r);
	print_message("  %.3f of capacity, %.2f moves per path per 10 s, %" PRIu64 " looks\n",
		      r.goodput_gbps / r.capacity_gbps, moves_per_10s(&cfg, &r),
		      r.eng[0].c[EC_REPATH_LOOK]);
	assert_true(r.goodput_gbps >= 0.96 * r.capacity_gbps);
	assert_true(moves_per_10s(&cfg, &r) < 2);
}

/*
 * 10 % random loss, 4 paths hashed, hosts that stall nowhere (a poll every
 * 16 us), seeds 1-3, ~1.3 s each: 0.788 0.820 0.888 of capacity, 12-16 RTOs,
 * each moving its path (about half of them back later).  The issue's
 * target on this scenario is 0.85 of the real lossless goodput (0.99 of
 * capacity): a median of 0.84.  With "slow" moves judged by their outcome
 * (cc15, path.c slow_move_judged): 0.827 0.911 0.899, 24-31 slow moves a run
 * where there were more; asserted: the target, and the minimum less a margin.
 */
#define QUIET_SEEDS	3

static void test_random_loss_quiet_hosts(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;
	double eff[QUIET_SEEDS], lo = 1;

	(void)state;
	for (unsigned i = 0; i < QUIET_SEEDS; i++) {
		scn_config_default(&cfg);
		scn_config_like_fabric(&cfg);
		cfg.host_rx = (struct sim_host_rx){ .poll_ns = 16000 };
		cfg.wl.npaths = 4;
		cfg.wl.total_bytes = 128 * MIB;
		cfg.loss = 0.1;
		cfg.seed = 1 + i;
		run_ok("quiet hosts, 4 paths, 10% loss", &cfg, &r);
		assert_true(r.eng[0].c[EC_LOST] > 1000);
		eff[i] = r.goodput_gbps / r.capacity_gbps;
		if (eff[i] < lo)
			lo = eff[i];
	}
	for (unsigned i = 1; i < QUIET_SEEDS; i++)
		for (unsigned j = i; j && eff[j - 1] > eff[j]; j--) {
			double t = eff[j];

			eff[j] = eff[j - 1];
			eff[j - 1] = t;
		}
	print_message("  median %.3f of capacity (target 0.84), min %.3f\n", eff[QUIET_SEEDS / 2],
		      lo);
	assert_true(eff[QUIET_SEEDS / 2] >= 0.84);
	assert_true(lo >= 0.78);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busy_marks_like_real),
		cmocka_unit_test(test_random_loss_busy_fabric),
		cmocka_unit_test(test_equal_congestion_busy),
		cmocka_unit_test(test_idle_plane_found_busy),
		cmocka_unit_test(test_random_loss_quiet_hosts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
