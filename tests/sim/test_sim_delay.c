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
 * there would be nothing to measure.
 *
 * Issue #22: host delay is not a queue.  Where each host's worker takes its
 * ring in batches and is off its CPU now and then (sim_set_host_rx: polls
 * every 16 us, stalls of 200 us about every millisecond, on both hosts),
 * the arrival stamps (the XDP program's in mrocd) and the ACKs' host_delay
 * keep those waits out of the delay signal: it no longer cuts, the transfer
 * keeps the goodput it has with the signal off, and a real queue is still
 * kept small.  Without the stamps (a driver that has none) the same waits
 * read as a queue, and cut.  Deterministic: simulated time, fixed seeds.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "scenario.h"
#include "simnet.h"
#include "workload.h"

#define MIB	(1ULL << 20)

/* Hosts that poll their rings every 16 us and stall 200 us about every millisecond. */
static const struct sim_host_rx busy_host = {
	.poll_ns = 16000,
	.stall_ns = 200000,
	.stall_every_ns = 1000000,
};

/* Mean queueing delay a packet met, in ns, over every plane. */
static double run_bulk_on(bool delay_signal, uint64_t seed, const struct sim_host_rx *rx,
			  double *capacity_share)
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
	if (rx)
		cfg.host_rx = *rx;
	assert_int_equal(scn_run(&cfg, &r), 0);
	assert_true(r.wl.done);
	mean_q = (double)r.sim.links.queue_seen_bytes / (double)r.sim.links.enqueued;
	*capacity_share = r.goodput_gbps / r.capacity_gbps;
	print_message("delay signal %-3s%s seed %" PRIu64 ": %.3f of capacity, mean queue met %.0f B "
		      "= %.2f us, max %" PRIu64 " B, tail drops %" PRIu64 "\n",
		      delay_signal ? "on" : "off", !rx ? "" : rx->no_stamp ? ", busy, unstamped" :
		      ", busy hosts", seed, *capacity_share, mean_q,
		      mean_q * 8 / 25e3, r.sim.links.max_queue_bytes, r.sim.links.dropped_tail);
	return mean_q * 8 / 25.0;	/* bytes at 25 Gbit/s -> ns */
}

static double run_bulk(bool delay_signal, uint64_t seed, double *capacity_share)
{
	return run_bulk_on(delay_signal, seed, NULL, capacity_share);
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

/* The client's delay cuts, over its QP's paths (inspect hook). */
static void count_cuts(struct sim *sim, struct workload *wl, void *ctx)
{
	uint64_t *cuts = ctx;

	for (uint32_t i = 0; i < 4; i++) {
		struct engine_path_info pi;

		if (!engine_path_info(sim_host_engine(sim, 0), wl_client_qpn(wl), i, &pi))
			*cuts += pi.delay_cuts;
	}
}

/* Goodput of a bulk transfer (Gbit/s) between two busy hosts; *cuts: its delay cuts. */
static double run_busy(bool delay_signal, bool stamps, uint64_t seed, uint64_t *cuts)
{
	static struct scn_result r;
	struct scn_config cfg;

	scn_config_bench(&cfg);
	cfg.ecn_bytes = 64 * MIB;		/* switches mark nothing */
	cfg.mtu = 1024;
	cfg.wl.outstanding = 128;
	cfg.wl.total_bytes = 64 * MIB;
	cfg.seed = seed;
	cfg.delay_target_set = true;
	cfg.delay_target_ns = delay_signal ? 50000 : 0;
	cfg.host_rx = busy_host;
	cfg.host_rx.no_stamp = !stamps;
	*cuts = 0;
	cfg.inspect = count_cuts;
	cfg.inspect_ctx = cuts;
	assert_int_equal(scn_run(&cfg, &r), 0);
	assert_true(r.wl.done);
	print_message("busy hosts, delay signal %-3s stamps %-3s seed %" PRIu64
		      ": %.3f Gbit/s, %" PRIu64 " delay cuts, rx wait %.1f us a packet\n",
		      delay_signal ? "on" : "off", stamps ? "on" : "off", seed, r.goodput_gbps,
		      *cuts, r.eng[0].c[EC_RX_STAMPED] ?
		      (double)r.eng[0].c[EC_RX_WAIT_NS] / 1e3 / (double)r.eng[0].c[EC_RX_STAMPED] : 0);
	return r.goodput_gbps;
}

static void test_host_jitter_is_not_a_queue(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 3; seed++) {
		uint64_t cuts_on, cuts_off, cuts_bare;
		double on = run_busy(true, true, seed, &cuts_on);
		double off = run_busy(false, true, seed, &cuts_off);
		double bare = run_busy(true, false, seed, &cuts_bare);

		assert_true(on >= 0.9 * off);
		assert_true(cuts_on * 10 <= cuts_bare);
		/* The waits are there: unstamped, the same signal reads them as a queue. */
		assert_true(bare < 0.9 * off);
	}
}

/*
 * A queue the transfer builds is still kept small between busy hosts: a
 * fifth of what it is without the signal, and smaller than without stamps
 * (the host's waits then sit in the path's minimum RTT, and the target
 * with them), at the goodput it has without stamps.  Not the quiet hosts'
 * 2 base RTTs: a worker that takes its ACKs every 16 us and after each
 * stall sends what they opened at once (ACK compression), and those bursts
 * are real queues.
 */
static void test_standing_queue_busy_hosts(void **state)
{
	struct sim_host_rx bare = busy_host;

	(void)state;
	bare.no_stamp = true;
	for (uint64_t seed = 1; seed <= 3; seed++) {
		double on_share, off_share, bare_share;
		double on = run_bulk_on(true, seed, &busy_host, &on_share);
		double off = run_bulk_on(false, seed, &busy_host, &off_share);
		double unstamped = run_bulk_on(true, seed, &bare, &bare_share);

		assert_true(off > 5 * on);
		assert_true(on < unstamped);
		assert_true(on_share >= 0.9 * bare_share);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_standing_queue),
		cmocka_unit_test(test_host_jitter_is_not_a_queue),
		cmocka_unit_test(test_standing_queue_busy_hosts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
