// SPDX-License-Identifier: MIT
/*
 * Congestion control's signals each doing their own job (issues #27 and #23):
 *  - random loss on a congested fabric that marks ECN is not congestion:
 *    loss bursts there trim windows, they do not halve them, and it does
 *    not cost the transfer its goodput: scripts/bench-fabric.sh's fabric-bound planes
 *    (4 x 250 Mbit/s shaped by a token bucket, CE above 64 KiB, loss in
 *    front of the shaper, its daemons' timers), each path on its own plane,
 *    and with the ECMP hash picking the planes (mroc-sim run --like-fabric);
 *  - paths do not move between equally congested planes (every plane busy
 *    alike; with random loss too), yet a plane that comes back is found;
 *  - where nothing marks ECN (drop-tail queues, with and without the delay
 *    signal) loss still backs off: no collapse;
 *  - a host that starts adding 136 us to every ACK is not a queue: the delay
 *    signal lets go of it within a few rounds;
 *  - a window that never limits the sender does not grow (MetaRoCE).
 * A plane dead under the paths: test_sim_deadplane.c.
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

	print_message("%-40s %s: %.3f Gbit/s (%.3f of capacity), retx %" PRIu64 ", rto %" PRIu64
		      ", repath %" PRIu64 " (loss %" PRIu64 " ce %" PRIu64
		      " slow %" PRIu64 "), tail drops %" PRIu64 "\n", name,
		      err ? "FAILED" : "ok", r->goodput_gbps, r->goodput_gbps / r->capacity_gbps,
		      c[EC_TX_RETX], c[EC_RTO], c[EC_REPATH], c[EC_REPATH_LOSS], c[EC_REPATH_CE],
		      c[EC_REPATH_SLOW], r->sim.links.dropped_tail);
	if (err)
		print_message("  why: %s\n", r->why);
	assert_int_equal(err, 0);
	assert_true(r->wl.done);
}

/*
 * bench-fabric's fabric-bound planes and daemons (mroc-sim run --like-fabric)
 * as these tests were tuned on: a path per plane, CE on the real queue, hosts
 * that take every packet at once.
 */
static void fabric_cfg(struct scn_config *cfg, uint8_t paths, double loss, uint64_t seed)
{
	scn_config_default(cfg);
	scn_config_like_fabric(cfg);
	cfg->ecn_virtual = false;
	cfg->route = SIM_ROUTE_PATH_ID;
	cfg->host_rx = (struct sim_host_rx){ 0 };
	cfg->loss = loss;
	cfg->wl.npaths = paths;
	cfg->wl.total_bytes = 48 * MIB;
	cfg->seed = seed;
}

static void test_random_loss_ecn_fabric(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	for (uint8_t paths = 4; paths <= 8; paths += 4) {
		double lossless;

		fabric_cfg(&cfg, paths, 0, 3);
		run_ok(paths == 4 ? "ECN fabric, 4 paths, lossless" : "ECN fabric, 8 paths, lossless",
		       &cfg, &r);
		lossless = r.goodput_gbps;
		assert_true(lossless >= 0.9 * r.capacity_gbps);
		fabric_cfg(&cfg, paths, 0.01, 3);
		run_ok("  1% loss", &cfg, &r);
		assert_true(r.goodput_gbps >= 0.97 * lossless);
		fabric_cfg(&cfg, paths, 0.1, 3);
		run_ok("  10% loss", &cfg, &r);
		assert_true(r.goodput_gbps >= 0.85 * lossless);
	}
}

/*
 * The same planes as bench-fabric has them: the ECMP hash of each path's
 * source port picks its plane (mroc-sim run --like-fabric), so paths must
 * find planes of their own and keep them through the loss.  Over 5 seeds
 * (medians; where the hash puts paths is a lottery per seed): 10% loss
 * delivers 0.8 of capacity and keeps 0.85 of the lossless goodput, 1% keeps
 * 0.97.  On main before issue
 * #27's repath rules paths moved between planes 150-270 times per run at
 * 10% loss (for "slow", from noise) and the median was 0.65 of capacity.
 */
static void hashed_cfg(struct scn_config *cfg, double loss, uint64_t seed)
{
	fabric_cfg(cfg, 4, loss, seed);
	cfg->route = SIM_ROUTE_HASH;
	cfg->wl.total_bytes = 128 * MIB;
}

#define HASH_SEEDS	5

static double median_of(double *v, unsigned n)
{
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j && v[j - 1] > v[j]; j--) {
			double t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

/*
 * mroc-sim run --like-fabric, lossless, 4 paths, where the leaves' Linux
 * hash puts them (seeds 1-5, not chosen: the draws include 2/2/0/0 and
 * 3/1/0/0): the paths find a plane each, as every quiet real run did
 * (0.96 Gbit/s, 1.00 of capacity, 0-15 moves).  With the simulator's former
 * hash and quiet hosts three of these five stayed at 0.500 for the whole run.
 */
static void test_lossless_like_fabric_spreads(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;
	double eff[HASH_SEEDS];

	(void)state;
	for (unsigned i = 0; i < HASH_SEEDS; i++) {
		scn_config_default(&cfg);
		scn_config_like_fabric(&cfg);
		cfg.wl.npaths = 4;
		cfg.wl.total_bytes = 128 * MIB;
		cfg.seed = 1 + i;
		run_ok("like-fabric, 4 paths hashed, lossless", &cfg, &r);
		eff[i] = r.goodput_gbps / r.capacity_gbps;
		assert_true(eff[i] >= 0.85);
	}
	assert_true(median_of(eff, HASH_SEEDS) >= 0.95);
}

/*
 * mroc-sim run --like-fabric, 4 paths, 10 % random loss, seeds 1-10: each
 * RTO moves its path to a random port, three times in four onto a
 * sibling's plane, leaving a plane idle (bench-fabric: 0.80 of lossless).
 * A timeout move that delivers less, once the path has matured on its new
 * port, goes back to the port it left (repath_back).  Median of capacity:
 * 0.848 before, 0.883 with it (every seed's figure in docs/PERF.md).
 */
#define BACK_SEEDS	10

static void test_timeout_move_goes_back(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;
	double eff[BACK_SEEDS];
	uint64_t back = 0;

	(void)state;
	for (unsigned i = 0; i < BACK_SEEDS; i++) {
		scn_config_default(&cfg);
		scn_config_like_fabric(&cfg);
		cfg.wl.npaths = 4;
		cfg.wl.total_bytes = 128 * MIB;
		cfg.loss = 0.1;
		cfg.seed = 1 + i;
		run_ok("like-fabric, 4 paths hashed, 10% loss", &cfg, &r);
		eff[i] = r.goodput_gbps / r.capacity_gbps;
		back += r.eng[0].c[EC_REPATH_BACK];
	}
	print_message("  moves back %" PRIu64 "\n", back);
	assert_true(back > 0);
	assert_true(median_of(eff, BACK_SEEDS) >= 0.87);
}


static void test_random_loss_hashed_fabric(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;
	double eff[HASH_SEEDS], kept[HASH_SEEDS], kept1[HASH_SEEDS];

	(void)state;
	for (unsigned i = 0; i < HASH_SEEDS; i++) {
		double lossless;

		hashed_cfg(&cfg, 0, 11 + i);
		run_ok("hashed planes, 4 paths, lossless", &cfg, &r);
		lossless = r.goodput_gbps;
		hashed_cfg(&cfg, 0.01, 11 + i);
		run_ok("  1% loss", &cfg, &r);
		kept1[i] = r.goodput_gbps / lossless;
		hashed_cfg(&cfg, 0.1, 11 + i);
		run_ok("  10% loss", &cfg, &r);
		eff[i] = r.goodput_gbps / r.capacity_gbps;
		kept[i] = r.goodput_gbps / lossless;
		print_message("  kept %.3f (1%%: %.3f)\n", kept[i], kept1[i]);
	}
	print_message("medians: 10%% loss %.3f of capacity, kept %.3f; 1%% kept %.3f\n",
		      median_of(eff, HASH_SEEDS), median_of(kept, HASH_SEEDS),
		      median_of(kept1, HASH_SEEDS));
	assert_true(median_of(eff, HASH_SEEDS) >= 0.8);
	assert_true(median_of(kept, HASH_SEEDS) >= 0.85);
	assert_true(median_of(kept1, HASH_SEEDS) >= 0.97);
}

/*
 * 8 paths over 4 planes, 2 on each (routed by path), every plane marking
 * alike: no path is worse than its siblings, so none moves.
 */
static void test_equal_congestion_stays(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	fabric_cfg(&cfg, 8, 0, 5);
	cfg.wl.total_bytes = 96 * MIB;
	run_ok("equal planes, 8 paths", &cfg, &r);
	assert_true(r.plane[0].marked_ce > 0);
	assert_int_equal(r.eng[0].c[EC_REPATH], 0);
}

/*
 * The same with 10% random loss on every plane: under one move per path
 * per 10 s (issue #27).  It was 33 moves of 8 paths in 2 s, 31 of them
 * "slow": paths pinned at the delay signal's floor by a minimum RTT from
 * the token bucket's burst, whose rebase every CE mark blocked, delivered
 * less than their plane-mates and moved, every ~18 rounds.
 */
static void test_equal_congestion_lossy_stays(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	fabric_cfg(&cfg, 8, 0.1, 5);
	cfg.wl.total_bytes = 224 * MIB;
	run_ok("equal planes, 8 paths, 10% loss", &cfg, &r);
	assert_true(r.t_end_ns > 1900 * MSEC);
	assert_true((double)(r.eng[0].c[EC_REPATH] - r.eng[0].c[EC_REPATH_TIMEOUT]) <
		    8.0 * (double)r.t_end_ns / 10e9);
}

/*
 * Every plane full, and no move can gain: 5 paths on 4 planes of
 * bench-fabric's kind (busy hosts, CE on the virtual queue), each path
 * pinned to plane id mod 4, so two always share plane 0 and deliver half
 * what the others do, which is exactly what the "slow" rule looks for.
 * Today's rule moved them 450 times in 2 s.  A slow move is now judged by
 * its outcome and taken back when it gained nothing; after SLOW_FREE (4)
 * such failures the QP waits 100 ms, then 0.8 s, ...: 7 slow moves in
 * these 2 s, all taken back, and 12 moves in all.  Now a slow move looks
 * first (path_trial.c path_look_sample), and every plane is busy: no slow move,
 * 2 "ce" moves (not looked before: path_check_siblings says why).
 */
static void test_more_paths_than_planes_stays(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;
	const uint64_t *c;

	(void)state;
	scn_config_default(&cfg);
	scn_config_like_fabric(&cfg);
	cfg.route = SIM_ROUTE_PATH_ID;
	cfg.wl.npaths = 5;
	cfg.wl.total_bytes = 240 * MIB;
	cfg.seed = 1;
	run_ok("5 paths on 4 full planes, pinned", &cfg, &r);
	c = r.eng[0].c;
	print_message("  %.2f s: %" PRIu64 " moves (%" PRIu64 " slow, %" PRIu64 " of them back)\n",
		      (double)r.t_end_ns / 1e9, c[EC_REPATH], c[EC_REPATH_SLOW],
		      c[EC_REPATH_SLOW_BACK]);
	assert_true(r.t_end_ns > 1900 * MSEC);
	assert_true(c[EC_REPATH_LOOK] > 0);
	assert_int_equal(c[EC_REPATH_SLOW] + c[EC_REPATH_EXPLORE], 0);
	assert_true(c[EC_REPATH] <= 3);
}

/*
 * The 3/3/2/0 trap: 8 paths hashed over 4 planes, one left idle (mroc-sim
 * run --like-fabric --paths 8 --bytes 480M --seed 3).  No path is under
 * 2/3 of its median sibling (1/3 and 1/2 of a plane), so only exploring
 * finds the idle plane; an exploratory move came at most once per 2.5 s
 * after the QP's last move, and every move reset that clock: 0.848 of
 * capacity, 11 slow moves (7 back), no explore.  Now the slowest path
 * looks at a random port every 78 ms (a look costs a packet, not a move)
 * and moves when a route is clear: 1 move (issue #27).
 */
static void test_idle_plane_found(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	scn_config_default(&cfg);
	scn_config_like_fabric(&cfg);
	cfg.wl.npaths = 8;
	cfg.wl.total_bytes = 480 * MIB;
	cfg.seed = 3;
	run_ok("8 paths hashed 3/3/2/0", &cfg, &r);
	print_message("  %" PRIu64 " looks, %" PRIu64 " explore moves\n", r.eng[0].c[EC_REPATH_LOOK],
		      r.eng[0].c[EC_REPATH_EXPLORE]);
	assert_true(r.goodput_gbps >= 0.95 * r.capacity_gbps);
	assert_true(r.eng[0].c[EC_REPATH] <= 4);
}

/*
 * A plane that comes back is found again, now that moves need a path
 * clearly worse than its siblings (issue #27): 8 paths hashed over 2
 * planes, plane 1 dark for 2 s.  Its paths time out and move to plane 0;
 * when it is back the paths there find it (timed-out paths probing, a
 * slow path, or exploration: the QP's slowest path looking at a random
 * port now and then, and moving where the route is clear), and
 * exploratory moves stay under one per path per 10 s (issue #27's
 * target; 12 in 18.9 s, when they came once per 2.5 s after any move, 7).
 */
static void test_plane_back_found(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;
	uint64_t moves;

	(void)state;
	fabric_cfg(&cfg, 8, 0, 2);
	cfg.planes = 2;
	cfg.route = SIM_ROUTE_HASH;
	cfg.blackhole_plane = 1;
	cfg.blackhole_at_ns = 200 * MSEC;
	cfg.blackhole_ns = 2000 * MSEC;
	cfg.settle_ns = 10000 * MSEC;	/* measure from 8 s after plane 1 is back */
	cfg.wl.total_bytes = 1024 * MIB;
	cfg.time_limit_ns = 40000 * MSEC;
	run_ok("plane 1 dark for 2 s, 8 paths over 2", &cfg, &r);
	moves = r.eng[0].c[EC_REPATH_EXPLORE];
	print_message("  from 8 s after plane 1 came back: %.3f Gbit/s of %.3f; %" PRIu64
		      " exploratory moves in %.1f s\n", r.after_gbps, r.after_capacity_gbps, moves,
		      (double)r.t_end_ns / 1e9);
	assert_true(r.after_gbps >= 0.8 * r.after_capacity_gbps);
	assert_true((double)moves < (double)cfg.wl.npaths * (double)r.t_end_ns / 10e9);
}

/*
 * No ECN anywhere (drop-tail queues of 64 KiB, a NIC twice the planes so the
 * planes queue, 2 paths per plane so they contend): with the delay signal
 * and without it, loss still slows the senders down; they do not resend
 * their way into a collapse.
 */
static void test_no_ecn_no_collapse(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	for (int dt = 0; dt < 2; dt++) {
		scn_config_bench(&cfg);
		cfg.planes = 2;
		cfg.ecn_bytes = 0;
		cfg.queue_bytes = 64 * 1024;
		cfg.nic_rate_bps = 4 * cfg.plane_rate_bps;
		cfg.wl.npaths = 4;
		cfg.wl.outstanding = 128;
		cfg.wl.total_bytes = 64 * MIB;
		cfg.delay_target_set = true;
		cfg.delay_target_ns = dt ? 50000 : 0;
		run_ok(dt ? "drop-tail, no ECN, delay signal" : "drop-tail, no ECN, no delay signal",
		       &cfg, &r);
		/* Drop-tail loses some 17% here, before as now; what must not come is RTOs. */
		assert_true(r.goodput_gbps >= 0.9 * r.capacity_gbps);
		assert_true(r.eng[0].c[EC_RTO] <= 8);
	}
}

/*
 * Issue #23, finding 3: after a step of +136 us on every ACK the client
 * receives (a busy host), 4 paths at MTU 1024, no ECN, the delay signal
 * pinned every path at its floor (from 2 ms after the step 0.93 Gbit/s
 * against 59.3 with the signal off).  Now delay that cuts do not lower
 * becomes the base RTT: the transfer keeps >= 0.8 of the goodput with the
 * signal off.
 */
static double host_step(bool delay_signal)
{
	static struct scn_result r;
	struct scn_config cfg;

	scn_config_bench(&cfg);
	cfg.ecn_bytes = 64 * MIB;		/* nothing marks */
	cfg.mtu = 1024;
	cfg.wl.outstanding = 128;
	cfg.wl.total_bytes = 384 * MIB;
	cfg.delay_target_set = true;
	cfg.delay_target_ns = delay_signal ? 50000 : 0;
	cfg.host_delay_ns = 136000;
	cfg.host_delay_at_ns = 2 * MSEC;
	cfg.settle_ns = 2 * MSEC;
	cfg.time_limit_ns = 4000 * MSEC;
	run_ok(delay_signal ? "host delay +136 us, delay signal on" :
			      "host delay +136 us, delay signal off", &cfg, &r);
	print_message("  from 2 ms after the step: %.3f Gbit/s\n", r.after_gbps);
	return r.after_gbps;
}

static void test_host_delay_is_not_a_queue(void **state)
{
	double on, off;

	(void)state;
	on = host_step(true);
	off = host_step(false);
	assert_true(off > 0);
	assert_true(on >= 0.8 * off);
}

/*
 * Issue #26: hosts whose worker is off its CPU 1.4 ms of every 1.5 ms (as
 * 4 daemons and 4 ranks on 2 CPUs were): every packet and ACK waits in the
 * hosts whatever the peer window.  A host-delay target (100 us) that cut
 * at every round held the window at its floor: 0.906 Gbit/s against 3.045
 * with the target off.  A cut the next round's waits do not answer is now
 * undone (peer.c cut_paid): the transfer keeps >= 0.9 of the goodput with
 * the target off.
 */
static double starved_host(uint64_t target)
{
	static struct scn_result r;
	struct scn_config cfg;

	scn_config_default(&cfg);
	cfg.wl.total_bytes = 256 * MIB;
	cfg.host_rx = (struct sim_host_rx){ .poll_ns = 200000, .stall_ns = 1400000,
					    .stall_every_ns = 1500000, .hold_worker = true };
	cfg.peer_window_pkts = 512;
	cfg.peer_host_delay_ns = target;
	run_ok(target ? "starved hosts, host-delay target 100 us" :
			"starved hosts, no host-delay target", &cfg, &r);
	assert_int_equal(r.eng[0].c[EC_PEER_HOST_CUT] > 0, target > 0);
	return r.goodput_gbps;
}

static void test_host_stalls_are_not_a_queue(void **state)
{
	double on, off;

	(void)state;
	on = starved_host(100000);
	off = starved_host(0);
	assert_true(off > 0);
	assert_true(on >= 0.9 * off);
}

/* The client's loss bursts at the end, over its paths (inspect hook). */
struct bursts_seen {
	uint64_t halved, trimmed;
	int err;
};

static void see_bursts(struct sim *sim, struct workload *wl, void *ctx)
{
	struct bursts_seen *b = ctx;
	struct engine_qp_info qi;

	b->err = engine_qp_info(sim_host_engine(sim, 0), wl_client_qpn(wl), &qi);
	for (unsigned i = 0; !b->err && i < qi.npaths; i++) {
		struct engine_path_info pi;

		b->err = engine_path_info(sim_host_engine(sim, 0), wl_client_qpn(wl), i, &pi);
		b->halved += pi.loss_cuts;
		b->trimmed += pi.loss_trims;
	}
}

/*
 * Random loss on a congested plane that marks ECN is not congestion (issue
 * #27): bench-fabric's planes, a path per plane, 10% loss, and a base RTT
 * of 1 ms (250 us a hop) as the real fabric's hosts add.  Every plane
 * queues up to its marking threshold, so the paths' RTT is always above
 * the delay limit and most rounds carry a CE mark or two: on main before
 * this rule 111 of the 120 loss bursts halved a window (seed 1), the
 * response to congestion.  Now only a burst in a heavily marked round (half
 * of it or more) halves; the rest trim 1/8.  On the same planes without
 * ECN every burst still halves: a fabric that never marked keeps the
 * classic response (test_no_ecn_no_collapse runs it on drop-tail queues).
 */
static void test_random_loss_not_congestion(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	for (int ecn = 1; ecn >= 0; ecn--) {
		struct bursts_seen b = { .err = -1 };

		fabric_cfg(&cfg, 4, 0.1, 1);
		cfg.delay_ns = 250000;
		cfg.wl.total_bytes = 64 * MIB;
		if (!ecn)
			cfg.ecn_bytes = 0;
		cfg.inspect = see_bursts;
		cfg.inspect_ctx = &b;
		run_ok(ecn ? "ECN planes, 1 ms base RTT, 10% loss" :
			     "no ECN, 1 ms base RTT, 10% loss", &cfg, &r);
		assert_int_equal(b.err, 0);
		print_message("  loss bursts: %" PRIu64 " halved, %" PRIu64 " trimmed 1/8\n",
			      b.halved, b.trimmed);
		assert_true(b.halved + b.trimmed >= 40);
		if (ecn) {
			assert_true(4 * b.halved <= b.halved + b.trimmed);
			assert_true(r.goodput_gbps >= 0.85 * r.capacity_gbps);
		} else {
			assert_int_equal(b.trimmed, 0);
		}
	}
}

/*
 * Issue #27's real planes, as scripts/fabric marks them: CE on a virtual
 * queue in front of the TBF, blind to its 64 KiB bucket, so a packet is
 * marked as soon as anything queues (sim_link_cfg.ecn_virtual).  The paths
 * then run at windows of a packet or two (srtt ~0.1 ms, as the real ones
 * did), where a lost packet has nothing behind it to SACK: each loss waits
 * for the tail-loss probe, and with one probe, a lost probe or ACK (one
 * time in five at 10 % both ways) meant an RTO, a window of one and a new
 * port.  Seed 3, 10 % loss: 54 RTOs (4 paths) and 146 (8 paths) for ~1,550
 * losses, 0.79 / 0.90 of lossless; with up to three probes a probe time
 * apart, 4 and 12 RTOs, 0.98 / 1.00 of lossless.
 */
static void test_random_loss_shallow_marking(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	for (uint8_t paths = 4; paths <= 8; paths += 4) {
		double lossless;
		uint64_t lost, rto;

		fabric_cfg(&cfg, paths, 0, 3);
		cfg.ecn_virtual = true;
		run_ok(paths == 4 ? "marking at any queue, 4 paths, lossless" :
				    "marking at any queue, 8 paths, lossless", &cfg, &r);
		lossless = r.goodput_gbps;
		assert_true(lossless >= 0.9 * r.capacity_gbps);
		fabric_cfg(&cfg, paths, 0.1, 3);
		cfg.ecn_virtual = true;
		run_ok("  10% loss", &cfg, &r);
		lost = r.eng[0].c[EC_LOST];
		rto = r.eng[0].c[EC_RTO];
		print_message("  %" PRIu64 " packets lost, %" PRIu64 " RTOs, %.3f of lossless\n", lost,
			      rto, r.goodput_gbps / lossless);
		assert_true(lost >= 1000);
		assert_true(rto * 50 <= lost);
		assert_true(r.goodput_gbps >= 0.95 * lossless);
	}
}

/* What the client's path 0 looks like at the end (inspect hook). */
struct path_seen {
	struct engine_path_info pi;
	int err;
};

static void see_path(struct sim *sim, struct workload *wl, void *ctx)
{
	struct path_seen *s = ctx;

	s->err = engine_path_info(sim_host_engine(sim, 0), wl_client_qpn(wl), 0, &s->pi);
}

/*
 * Issue #23, finding 2's other half: one 4 KiB WRITE at a time on one path
 * never fills the initial window of 16 packets, so the window must not
 * grow; it grew to 256 packets (1,063,936 bytes) with one in flight.
 * MetaRoCE validates its windows (they grow only while they limit the
 * sender, RFC 7661's idea); the RoCEv2 baseline keeps the rule it was
 * measured with.
 */
static void test_window_validated(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;
	struct path_seen seen = { .err = -1 };

	(void)state;
	scn_config_bench(&cfg);
	cfg.wl.npaths = 1;
	cfg.wl.msg_bytes = 4096;
	cfg.wl.outstanding = 1;
	cfg.wl.total_bytes = 4 * MIB;
	cfg.inspect = see_path;
	cfg.inspect_ctx = &seen;
	run_ok("one 4 KiB WRITE at a time", &cfg, &r);
	assert_int_equal(seen.err, 0);
	print_message("  window %u bytes\n", seen.pi.pwnd_bytes);
	assert_true(seen.pi.pwnd_bytes <= 16 * (4096 + 60));
}

/*
 * bench-fabric's planes with hosts as busy as the real runs'
 * (mroc-sim run --like-fabric-busy), 4 paths, lossless: a path that moves
 * onto a clearer plane still has packets on the old one, and the new
 * route's ACKs overtake them.  Counted against the new route's order they
 * were declared lost and resent: seeds 10, 15 and 18 lost 2, 2 and 7 of
 * nothing lost (mroc-sim run --like-fabric-busy --paths 4 --bytes 480M
 * --seed S -v, counter lost).  Loss detection keeps the old route's own
 * order (qp_ack.c ack_detect_loss, route_psn): none.
 */
static void test_move_loses_nothing(void **state)
{
	static const uint64_t seeds[] = { 10, 15, 18 };
	static struct scn_result r;
	struct scn_config cfg;
	uint64_t lost = 0, moves = 0;

	(void)state;
	for (unsigned i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		scn_config_default(&cfg);
		scn_config_like_fabric_busy(&cfg);
		cfg.wl.npaths = 4;
		cfg.wl.total_bytes = 480 * MIB;
		cfg.seed = seeds[i];
		run_ok("like-fabric busy, 4 paths, lossless", &cfg, &r);
		lost += r.eng[0].c[EC_LOST];
		moves += r.eng[0].c[EC_REPATH];
	}
	print_message("  lost %" PRIu64 " in %" PRIu64 " moves\n", lost, moves);
	assert_true(moves >= 3);
	assert_true(lost <= 1);
}

/*
 * The same, at 1 % random loss on every plane: no path is worse than
 * another, so nothing moves for loss.  With the loss fraction smoothed per
 * round (1/16), a path's round is 3-4 packets, one loss raised it 2 %, and
 * three in 16 rounds took a path over its siblings' mean x 2 + 5 %: seeds 2
 * and 20 moved 8 and 9 times for loss in 4 s, each move most likely onto a
 * sibling's plane (then `ce` and `slow` moves after it: 23 and 24 moves,
 * 0.984 and 0.983 of capacity).  Smoothed per packet (path.c loss_avg):
 * none, 1 and 2 moves, 0.999 and 0.997.
 */
static void test_random_loss_no_loss_moves(void **state)
{
	static const uint64_t seeds[] = { 2, 20 };
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	for (unsigned i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		scn_config_default(&cfg);
		scn_config_like_fabric_busy(&cfg);
		cfg.wl.npaths = 4;
		cfg.wl.total_bytes = 480 * MIB;
		cfg.loss = 0.01;
		cfg.seed = seeds[i];
		run_ok("like-fabric busy, 4 paths, 1% loss", &cfg, &r);
		assert_int_equal(r.eng[0].c[EC_REPATH_LOSS], 0);
		assert_true(r.eng[0].c[EC_REPATH] <= 6);
		assert_true(r.goodput_gbps >= 0.99 * r.capacity_gbps);
	}
}

/*
 * A `ce` move looks first (path_trial.c path_check_siblings): moved at once, a
 * path with a one-packet window and CE on nearly every round (0.91-1.00
 * against its siblings' 0.58-0.70) landed on a sibling's plane, whose CE
 * then rose, and it moved too: seed 17 at 1 % moved 8 times for `ce` in two
 * cascades of 80 ms and kept 0.901 of capacity.  Looking, a move goes only
 * to a clear route: 2 moves, 0.993.
 */
static void test_ce_move_looks(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	scn_config_default(&cfg);
	scn_config_like_fabric_busy(&cfg);
	cfg.wl.npaths = 4;
	cfg.wl.total_bytes = 480 * MIB;
	cfg.loss = 0.01;
	cfg.seed = 17;
	run_ok("like-fabric busy, 4 paths, 1% loss", &cfg, &r);
	assert_true(r.eng[0].c[EC_REPATH_CE] <= 1);
	assert_true(r.goodput_gbps >= 0.98 * r.capacity_gbps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_loss_ecn_fabric),
		cmocka_unit_test(test_random_loss_hashed_fabric),
		cmocka_unit_test(test_lossless_like_fabric_spreads),
		cmocka_unit_test(test_timeout_move_goes_back),
		cmocka_unit_test(test_random_loss_not_congestion),
		cmocka_unit_test(test_random_loss_shallow_marking),
		cmocka_unit_test(test_equal_congestion_stays),
		cmocka_unit_test(test_equal_congestion_lossy_stays),
		cmocka_unit_test(test_more_paths_than_planes_stays),
		cmocka_unit_test(test_idle_plane_found),
		cmocka_unit_test(test_plane_back_found),
		cmocka_unit_test(test_no_ecn_no_collapse),
		cmocka_unit_test(test_host_delay_is_not_a_queue),
		cmocka_unit_test(test_host_stalls_are_not_a_queue),
		cmocka_unit_test(test_window_validated),
		cmocka_unit_test(test_move_loses_nothing),
		cmocka_unit_test(test_random_loss_no_loss_moves),
		cmocka_unit_test(test_ce_move_looks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

