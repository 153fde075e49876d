// SPDX-License-Identifier: MIT
/*
 * Where a path's move gains and where it cannot (issues #23 target D, #27):
 *  - a plane much lossier than the rest moves its path away (`loss`):
 *    mroc-sim run --plane-loss N:P sets one plane's loss, so the rule's
 *    positive case has a test (test_sim_cc's test_random_loss_no_loss_moves
 *    has its negative one: 1 % on every plane, no `loss` move).
 * Deterministic: simulated time, fixed seeds.
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

static void run_ok(const char *name, const struct scn_config *cfg, struct scn_result *r)
{
	int err = scn_run(cfg, r);
	const uint64_t *c = r->eng[0].c;

	print_message("%-40s %s: %.3f Gbit/s (%.3f of capacity), repath %" PRIu64 " (loss %" PRIu64
		      " ce %" PRIu64 " slow %" PRIu64 " spread %" PRIu64 " explore %" PRIu64
		      "), looks %" PRIu64 " (busy %" PRIu64 ")\n", name,
		      err ? "FAILED" : "ok", r->goodput_gbps, r->goodput_gbps / r->capacity_gbps,
		      c[EC_REPATH], c[EC_REPATH_LOSS], c[EC_REPATH_CE], c[EC_REPATH_SLOW],
		      c[EC_REPATH_SPREAD], c[EC_REPATH_EXPLORE], c[EC_REPATH_LOOK],
		      c[EC_REPATH_LOOK_BUSY]);
	if (err)
		print_message("  why: %s\n", r->why);
	assert_int_equal(err, 0);
	assert_true(r->wl.done);
}

/*
 * One plane much lossier than the rest (mroc-sim run --like-fabric-busy
 * --paths 4 --loss 0.01 --plane-loss 2:0.25): the path on it loses a
 * quarter of its packets while its siblings lose 1 %, crosses the `loss`
 * line within some 50 packets and moves; the transfer keeps what the three
 * clean planes carry.  (The lossy plane, idle then, reads clear to a look,
 * so "slow" and "explore" moves take a path back onto it now and then, and
 * it moves off again for `loss`: 20-26 `loss` moves in 2.7 s; see
 * docs/notes/2026-12-05/s19-path19.md.)
 */
static void test_lossy_plane_moves(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;
	uint64_t all = 0;

	(void)state;
	scn_config_default(&cfg);
	scn_config_like_fabric_busy(&cfg);
	cfg.wl.npaths = 4;
	cfg.wl.total_bytes = 96 * MIB;
	cfg.loss = 0.01;
	cfg.plane_loss_set = 1ULL << 2;
	cfg.plane_loss[2] = 0.25;
	cfg.seed = 1;
	run_ok("like-fabric busy, 4 paths, plane 2 at 25%", &cfg, &r);
	for (uint32_t p = 0; p < cfg.planes; p++) {
		print_message("  plane %u: delivered %" PRIu64 ", random drops %" PRIu64 "\n", p,
			      r.plane[p].delivered, r.plane[p].dropped_random);
		all += r.plane[p].delivered;
	}
	assert_true(r.eng[0].c[EC_REPATH_LOSS] >= 1);
	assert_true(r.plane[2].delivered * 10 < all);
	assert_true(r.goodput_gbps >= 0.7 * r.capacity_gbps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lossy_plane_moves),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
