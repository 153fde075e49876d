// SPDX-License-Identifier: MIT
/*
 * The cluster simulator (sim/cluster.h) on small topologies with the real
 * engine: 8 hosts, 2 planes of 4 leaves x 2 spines, 25 Gbit/s, fragmented
 * placement (every ring hop crosses the spines).
 *
 *  - conservation: ring AllReduce (real reduction) and AllToAll, permutation
 *    and incast (byte-exact) complete with verified data, and the engines
 *    placed exactly the bytes the operation moves: once each, also under 2%
 *    random loss where retransmissions happen;
 *  - determinism: the same seed gives the same run, event for event;
 *  - a spine blackholed mid-operation with no routing convergence is routed
 *    around by MetaRoCE's repathing; RoCEv2 needs the fabric to converge;
 *  - efficiency: lossless, no packet is sent twice, and each message takes
 *    exactly its number of MTU segments.
 *
 * Seeds are fixed; limits are simulated time; nothing reads a clock.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cluster.h"

#define KIB	1024ULL
#define MSEC	1000000ULL

static void small_cfg(struct clu_config *cfg, enum coll_kind kind, enum clu_transport t)
{
	clu_config_default(cfg);
	cfg->net.fab.nhosts = 8;
	cfg->net.fab.nplanes = 2;
	cfg->net.fab.leaves = 4;
	cfg->net.fab.spines = 2;
	cfg->kind = kind;
	cfg->transport = t;
	cfg->qps = 2;
	cfg->senders = 3;
	cfg->bytes = 256 * KIB;
	cfg->msg_bytes = 64 * KIB;
	cfg->verify = true;
	cfg->time_limit_ns = 500 * MSEC;
	cfg->seed = 5;
}

static void report(const char *name, const struct clu_config *cfg, const struct clu_result *r)
{
	print_message("%s: %s %s %" PRIu64 " B: %s, %.2f us, busbw %.3f GB/s, tx %" PRIu64
		      " retx %" PRIu64 " rto %" PRIu64 " repath %" PRIu64 ", placed %" PRIu64
		      " of %" PRIu64 ", %" PRIu64 " events\n", name, coll_kind_name(cfg->kind),
		      clu_transport_name(cfg->transport), cfg->bytes, r->err ? "FAILED" : "ok",
		      r->coll.time_us, r->coll.busbw_gbps, r->eng.c[EC_TX_DATA],
		      r->eng.c[EC_TX_RETX], r->eng.c[EC_RTO], r->eng.c[EC_REPATH],
		      r->payload_placed, r->coll.payload_bytes, r->net.events);
	if (r->err)
		print_message("  why: %s\n", r->why);
}

/* Completed, verified, every byte placed exactly once, the simulator clean. */
static void run_ok(const char *name, const struct clu_config *cfg, struct clu_result *r)
{
	int err = clu_run(cfg, r);

	report(name, cfg, r);
	assert_int_equal(err, 0);
	assert_true(r->coll.done);
	assert_true(r->coll.time_us > 0);
	assert_int_equal(r->payload_placed, r->coll.payload_bytes);
	assert_int_equal(r->net.hosts.tx_bad_peer, 0);
	assert_int_equal(r->net.hosts.tx_errors, 0);
	assert_int_equal(r->net.hosts.timer_spins, 0);
}

static void test_conservation(void **state)
{
	static const uint8_t kinds[] = { COLL_ALLREDUCE, COLL_ALLTOALL, COLL_PERMUTATION,
					 COLL_INCAST };
	struct clu_config cfg;
	struct clu_result r;

	for (size_t k = 0; k < sizeof(kinds); k++)
		for (int t = 0; t < CLU__TRANSPORTS; t++) {
			small_cfg(&cfg, kinds[k], t);
			run_ok("conservation", &cfg, &r);
		}
}

/* Odd sizes: chunks that do not divide, WRs cut short, a byte per rank. */
static void test_odd_sizes(void **state)
{
	static const uint64_t sizes[] = { 1, 8, 1000, 100003 };
	struct clu_config cfg;
	struct clu_result r;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		small_cfg(&cfg, COLL_ALLREDUCE, CLU_ROCEV2_QPS);
		cfg.bytes = sizes[i];
		cfg.msg_bytes = 4 * KIB;
		run_ok("odd size", &cfg, &r);
	}
}

static void test_loss_exactly_once(void **state)
{
	struct clu_config cfg;
	struct clu_result r;

	for (int t = 0; t < CLU__TRANSPORTS; t++) {
		small_cfg(&cfg, COLL_ALLTOALL, t);
		cfg.bytes = 1024 * KIB;
		cfg.net.fab.loss = 0.02;
		/* A tail loss costs the PFC baselines a 1.07 s NIC timeout. */
		if (clu_transport_pfc(cfg.transport))
			cfg.time_limit_ns = 60000 * MSEC;
		run_ok("2% loss", &cfg, &r);
		assert_true(r.eng.c[EC_TX_RETX] > 0);
		assert_true(r.net.fab.kind[FAB_UP].dropped_random > 0);
	}
}

/*
 * Each host's engine on a clock of its own (issue #23): offsets up to 5 s
 * (past 2^31 ns between some pairs) and drifts up to 500 ppm, 2% loss,
 * every transport: completed, verified, every byte placed exactly once;
 * MetaRoCE refuses no ACK's echo.
 */
static void test_own_clocks(void **state)
{
	struct clu_config cfg;
	struct clu_result r;

	for (int t = 0; t < CLU__TRANSPORTS; t++) {
		small_cfg(&cfg, COLL_ALLTOALL, t);
		cfg.bytes = 1024 * KIB;
		cfg.net.fab.loss = 0.02;
		cfg.net.clock_skew_ns = 5000 * MSEC;
		cfg.net.clock_drift_ppm = 500;
		if (clu_transport_pfc(cfg.transport))
			cfg.time_limit_ns = 60000 * MSEC;
		run_ok("own clocks, 2% loss", &cfg, &r);
		assert_true(r.eng.c[EC_TX_RETX] > 0);
		/* RoCEv2's go-back reuses PSNs: a late ACK of a first transmission may be refused. */
		if (t == CLU_METAROCE)
			assert_int_equal(r.eng.c[EC_RX_BAD_ECHO], 0);
	}
}

static void test_determinism(void **state)
{
	struct clu_config cfg;
	struct clu_result a, b, c;

	small_cfg(&cfg, COLL_ALLREDUCE, CLU_METAROCE);
	cfg.net.fab.loss = 0.01;
	run_ok("seed 5", &cfg, &a);
	run_ok("seed 5 again", &cfg, &b);
	assert_int_equal(a.coll.t_end - a.coll.t_start, b.coll.t_end - b.coll.t_start);
	assert_int_equal(a.net.events, b.net.events);
	assert_int_equal(a.net.hosts.tx_pkts, b.net.hosts.tx_pkts);
	assert_int_equal(a.eng.c[EC_TX_RETX], b.eng.c[EC_TX_RETX]);
	assert_int_equal(a.net.fab.kind[FAB_UP].dropped_random,
			 b.net.fab.kind[FAB_UP].dropped_random);
	assert_memory_equal(&a.net.fab, &b.net.fab, sizeof(a.net.fab));
	cfg.seed = 6;
	run_ok("seed 6", &cfg, &c);
	assert_true(c.net.events != a.net.events || c.coll.t_end != a.coll.t_end);
}

/*
 * Spine 0 of plane 0 dies 50 us into an AllReduce and the fabric never
 * converges: half of plane 0's ECMP choices lead into the blackhole.
 * MetaRoCE moves its paths (new source ports) and completes; a RoCEv2 QP
 * hashed onto the dead spine cannot, until the fabric stops using it.
 *
 * RoCEv2 mode waits for its RTO proper (rto_min 200 us here, doubling per
 * timeout without progress), as a RoCE NIC does: without convergence its
 * stuck QPs are still backing off (an RTO every 200 us x 2^k, so max_retx
 * is far off) when the 500 ms time limit ends the run: -ETIMEDOUT, not a
 * RETRY_EXC completion.  Once the fabric converges (300 us after the
 * failure), its next retransmission takes a live route and it completes.
 */
static void test_blackholed_spine(void **state)
{
	struct clu_config cfg;
	struct clu_result r;

	small_cfg(&cfg, COLL_ALLREDUCE, CLU_METAROCE);
	cfg.bytes = 2048 * KIB;
	cfg.failure = CLU_FAIL_SPINE;
	cfg.fail_plane = 0;
	cfg.fail_spine = 0;
	cfg.fail_after_ns = 50000;
	cfg.net.fab.converge_ns = SIM_NEVER;
	run_ok("spine blackholed, no convergence", &cfg, &r);
	assert_true(r.net.fab.kind[FAB_LS].dropped_blackhole +
		    r.net.fab.kind[FAB_SL].dropped_blackhole > 0);
	assert_true(r.eng.c[EC_REPATH] > 0);

	cfg.transport = CLU_ROCEV2;
	assert_int_equal(clu_run(&cfg, &r), -ETIMEDOUT);
	report("rocev2, spine blackholed, no convergence", &cfg, &r);
	assert_false(r.coll.done);
	assert_true(r.eng.c[EC_RTO] > 0);

	cfg.net.fab.converge_ns = 300000;
	run_ok("spine blackholed, converges in 300 us", &cfg, &r);
}

/*
 * A spine dies under a MetaRoCE ring AllReduce of 1 MiB (three
 * draws of session 28's failover sweep): the run with the failure takes at
 * most 1.8 x the same run without it.  Each step's QP sends a message and
 * waits, so RACK across paths (qp_ack.c rack_scan) declares the packets on
 * a path through the dead spine lost once siblings' later ones are
 * acknowledged, and each goes again on a sibling.  That emptied the path,
 * its next packet armed a fresh RTO, and a dead path never timed out, so
 * never moved: it took a share of every step's packets into the dead
 * spine for as long as the ring ran (2.05, 2.89 and 3.70 x).  Its RTO now
 * runs on from the unanswered packets RACK took off it (path.c
 * path_rearm_send): 1.41, 1.41 and 1.63 x (1.36, 1.41 and 1.61 since
 * session 32's scouts beside live siblings).
 */
static void test_failover_in_steps(void **state)
{
	static const struct {
		uint64_t seed;
		uint32_t hosts, planes, spines, plane;
		uint64_t at_us;
		double loss;
	} runs[] = {
		{ 775365019, 8, 2, 2, 0, 297, 0 },
		{ 553321968, 16, 4, 3, 0, 247, 0 },
		{ 731149151, 32, 4, 2, 2, 269, 0.001 },
	};
	static struct clu_result r;
	struct clu_config cfg;

	(void)state;
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		double base;

		clu_config_default(&cfg);
		cfg.net.fab.nhosts = runs[i].hosts;
		cfg.net.fab.nplanes = runs[i].planes;
		cfg.net.fab.leaves = 2;
		cfg.net.fab.spines = runs[i].spines;
		cfg.net.fab.loss = runs[i].loss;
		cfg.kind = COLL_ALLREDUCE;
		cfg.transport = CLU_METAROCE;
		cfg.bytes = 1024 * KIB;
		cfg.verify = true;
		cfg.time_limit_ns = 500 * MSEC;
		cfg.seed = runs[i].seed;
		run_ok("ring allreduce, no failure", &cfg, &r);
		base = r.coll.time_us;
		cfg.failure = CLU_FAIL_SPINE;
		cfg.fail_plane = runs[i].plane;
		cfg.fail_after_ns = runs[i].at_us * 1000;
		run_ok("ring allreduce, a spine dies", &cfg, &r);
		print_message("  %.2f x the time without the failure\n", r.coll.time_us / base);
		assert_true(r.coll.time_us < 1.8 * base);
	}
}

/* The 16-host ring AllReduce of 4 MiB, QPs of 2 paths over 4 planes of 4 leaves x 2 spines. */
static void allreduce_2paths(struct clu_config *cfg, uint64_t seed)
{
	clu_config_default(cfg);
	cfg->net.fab.nhosts = 16;
	cfg->net.fab.nplanes = 4;
	cfg->net.fab.leaves = 4;
	cfg->net.fab.spines = 2;
	cfg->net.fab.loss = 0.001;
	cfg->npaths = 2;
	cfg->kind = COLL_ALLREDUCE;
	cfg->transport = CLU_METAROCE;
	cfg->bytes = 4096 * KIB;
	cfg->verify = true;
	cfg->time_limit_ns = 500 * MSEC;
	cfg->seed = seed;
}

/*
 * A spine dies under a 16-host ring AllReduce of 4 MiB whose QPs have 2
 * paths over 4 planes of 2 spines (session 32's sweep, seed 90, run 2378,
 * and seed 2 of the same set-up).  A path through the dead spine times out
 * beside a live sibling and moves to a drawn port, which crosses the dead
 * spine again one time in two: an RTO more each time, and each ring step
 * waits for its slowest QP (2.18 and 1.79 x the time without the failure,
 * 37 and 35 RTOs).  Such a path's probe now goes with 2 scouts by other
 * ports (path_repath.c scouts_for, SCOUT_LIVE) and the first that answers takes
 * it: 1.70 and 1.46 x, 18 and 19 RTOs.
 */
static void test_failover_scouts_beside_live(void **state)
{
	static const uint64_t seeds[] = { 23434278, 2 };
	static struct clu_result r;
	struct clu_config cfg;

	(void)state;
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		double base;

		allreduce_2paths(&cfg, seeds[i]);
		run_ok("ring allreduce, 2 paths, no failure", &cfg, &r);
		base = r.coll.time_us;
		cfg.failure = CLU_FAIL_SPINE;
		cfg.fail_plane = 0;
		cfg.fail_after_ns = 11000;
		run_ok("ring allreduce, 2 paths, a spine dies", &cfg, &r);
		print_message("  %.2f x the time without the failure, %" PRIu64 " RTOs, %" PRIu64
			      " scouts\n", r.coll.time_us / base, r.eng.c[EC_RTO],
			      r.eng.c[EC_TX_SCOUT]);
		assert_true(r.eng.c[EC_TX_SCOUT] > 0);
		assert_true(r.coll.time_us < 1.75 * base);
	}
}

/*
 * One direction of a leaf-spine cable dies (spine 0 to leaf 1 on plane 0)
 * 11 us into the same AllReduce: what crosses it toward leaf 1's hosts is
 * lost, what leaves them still goes.  A path whose ACKs came back that way
 * before its first one arrived never had an RTT sample; its data arrived
 * and its DSNs were acknowledged through its sibling, so it let its flight
 * go at each probe time and never timed out (qp_timers.c release_settled):
 * seed 6, 1.70 x the time without the failure, seed 2 1.36 x.  Now it
 * times out once silent for rto_min and moves: 1.13 and 1.10 x.
 */
static void test_failover_downlink(void **state)
{
	static const uint64_t seeds[] = { 6, 2 };
	static struct clu_result r;
	struct clu_config cfg;

	(void)state;
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		double base;

		allreduce_2paths(&cfg, seeds[i]);
		run_ok("ring allreduce, 2 paths, no failure", &cfg, &r);
		base = r.coll.time_us;
		cfg.failure = CLU_FAIL_DOWNLINK;
		cfg.fail_plane = 0;
		cfg.fail_spine = 0;
		cfg.fail_leaf = 1;
		cfg.fail_after_ns = 11000;
		run_ok("ring allreduce, 2 paths, a spine-to-leaf link dies", &cfg, &r);
		print_message("  %.2f x the time without the failure, %" PRIu64 " RTOs\n",
			      r.coll.time_us / base, r.eng.c[EC_RTO]);
		assert_true(r.coll.time_us < 1.25 * base);
	}
}

/*
 * Connection setup at 20, 40 and 50 % loss (issue #23): 16 hosts, one plane
 * of 4 leaves x 3 spines, a 1 KiB alltoall, seeds 41-60 (not the ones the
 * change was measured on, 1-40): every QP connects, and the operation
 * completes verified.  Each try of a REQ and of an RTU sends up to three
 * copies when nothing came back (engine/cm_tx.c try_arm); before, a try
 * needed one REQ and one REP through, and of seeds 1-40 9 runs failed with
 * "QPs did not connect" at 20 %, all 40 at 40 % (of these seeds 2 and 20);
 * with two copies 6 of these seeds at 50 %.  At 50 % a run still fails
 * now and then by the draw (the cluster loses packets at the hosts'
 * uplinks only, one generator for the whole run, so any change of what is
 * sent reorders every later draw): 1 in 400 (seeds 1-400) on a16781c, 6 in
 * 400 once the CM's sends again took other ports (cm_tx.c cm_route), seed 59
 * here.  So: none at 20 and 40 %, at most one in the 20 at 50 %.
 */
static void test_connect_heavy_loss(void **state)
{
	struct clu_config cfg;
	struct clu_result r;
	unsigned failed = 0, failed_50 = 0;

	for (unsigned k = 0; k < 60; k++) {
		double loss = k < 20 ? 0.2 : k < 40 ? 0.4 : 0.5;
		uint64_t seed = 41 + k % 20;

		clu_config_default(&cfg);
		cfg.net.fab.nhosts = 16;
		cfg.net.fab.nplanes = 1;
		cfg.net.fab.leaves = 4;
		cfg.net.fab.spines = 3;
		cfg.kind = COLL_ALLTOALL;
		cfg.bytes = 1 * KIB;
		cfg.net.fab.loss = loss;
		cfg.verify = true;
		cfg.seed = seed;
		if (clu_run(&cfg, &r) || !r.coll.done || !r.t_connected) {
			print_message("loss %.2f seed %" PRIu64 ": %s\n", loss, seed, r.why);
			if (loss < 0.5)
				failed++;
			else
				failed_50++;
		}
	}
	assert_int_equal(failed, 0);
	assert_true(failed_50 <= 1);
}

/* Lossless and uncongested: no retransmission, and exactly the segments the data needs. */
static void test_efficiency(void **state)
{
	struct clu_config cfg;
	struct clu_result r;

	for (int t = 0; t < CLU__TRANSPORTS; t++) {
		uint64_t segs;

		small_cfg(&cfg, COLL_PERMUTATION, t);
		cfg.bytes = 256 * KIB;	/* 4 WRs of 64 KiB, 16 segments of 4 KiB each */
		run_ok("efficiency", &cfg, &r);
		segs = cfg.net.fab.nhosts * (cfg.bytes / cfg.net.engine.mtu);
		assert_int_equal(r.eng.c[EC_TX_RETX], 0);
		assert_int_equal(r.eng.c[EC_RTO], 0);
		assert_int_equal(r.eng.c[EC_TX_DATA], segs);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conservation),
		cmocka_unit_test(test_odd_sizes),
		cmocka_unit_test(test_loss_exactly_once),
		cmocka_unit_test(test_own_clocks),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_blackholed_spine),
		cmocka_unit_test(test_failover_in_steps),
		cmocka_unit_test(test_failover_scouts_beside_live),
		cmocka_unit_test(test_failover_downlink),
		cmocka_unit_test(test_efficiency),
		cmocka_unit_test(test_connect_heavy_loss),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
