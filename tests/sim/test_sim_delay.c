// SPDX-License-Identifier: MIT
/*
 * Issue #17: short queues without help from the switches.  A bulk transfer
 * over 4 planes whose switches mark nothing (the ECN threshold above the
 * buffer): with the engine's delay signal the queue a packet meets stays
 * within about a base RTT (the delay target is the path's minimum RTT again
 * when delay_target_ns is smaller), and the transfer keeps its throughput;
 * without it, windows grow until the drop-tail buffers hold tens to
 * hundreds of microseconds.  The NIC sends at twice the planes' sum, so the
 * planes are the bottleneck: with packets shared evenly over the paths
 * (issue #16's path choice) a NIC at exactly their sum never queues, and
 * there would be nothing to measure.  Deterministic: simulated time, fixed
 * seeds.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "scenario.h"

#define MIB	(1ULL << 20)

/* Mean queueing delay a packet met, in ns, over every plane. */
static double run_bulk(bool delay_signal, uint64_t seed, double *capacity_share)
{
	static struct scn_result r;
	struct scn_config cfg;
	double mean_q;

	scn_config_bench(&cfg);
	cfg.ecn_bytes = 64 * MIB;		/* switches mark nothing */
	cfg.wl.total_bytes = 64 * MIB;
	cfg.wl.outstanding = 128;		/* the window, not the workload, bounds what is in flight */
	cfg.nic_rate_bps = 2 * cfg.planes * cfg.plane_rate_bps;	/* the planes are the bottleneck */
	cfg.seed = seed;
	cfg.delay_target_set = true;
	cfg.delay_target_ns = delay_signal ? 1 : 0;	/* target: twice the path's minimum RTT */
	assert_int_equal(scn_run(&cfg, &r), 0);
	assert_true(r.wl.done);
	mean_q = (double)r.sim.links.queue_seen_bytes / (double)r.sim.links.enqueued;
	*capacity_share = r.goodput_gbps / r.capacity_gbps;
	print_message("delay signal %-3s seed %" PRIu64 ": %.3f of capacity, mean queue met %.0f B "
		      "= %.2f us, max %" PRIu64 " B, tail drops %" PRIu64 "\n",
		      delay_signal ? "on" : "off", seed, *capacity_share, mean_q,
		      mean_q * 8 / 25e3, r.sim.links.max_queue_bytes, r.sim.links.dropped_tail);
	return mean_q * 8 / 25.0;	/* bytes at 25 Gbit/s -> ns */
}

static void test_standing_queue(void **state)
{
	/* Base RTT: 2 x (2 us propagation + serialisation) of this fabric, ~ 6 us. */
	const double base_rtt_ns = 6000;

	(void)state;
	for (uint64_t seed = 1; seed <= 3; seed++) {
		double on_share, off_share;
		double on = run_bulk(true, seed, &on_share);
		double off = run_bulk(false, seed, &off_share);

		assert_true(on < 2 * base_rtt_ns);
		assert_true(off > 5 * on);
		assert_true(on_share >= 0.9 * off_share);
		assert_true(on_share >= 0.9);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_standing_queue),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
