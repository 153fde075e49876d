// SPDX-License-Identifier: MIT
/*
 * Regressions found by scripts/sim-sweep.sh (random seeds and parameters
 * through the simulator): each test is the smallest deterministic case of
 * one bug the sweep found, and failed before its fix.
 *
 * Nothing here reads a clock: limits are simulated time.
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
#include <stdlib.h>

#include "cluster.h"
#include "cluster_cli.h"
#include "scenario.h"
#include "simnet.h"
#include "workload.h"

#define MIB		(1ULL << 20)
#define MSEC		1000000ULL

static void run_ok(const char *name, const struct scn_config *cfg, struct scn_result *r)
{
	int err = scn_run(cfg, r);

	print_message("%-34s %s: %" PRIu64 "/%" PRIu64 " ops, done at %.3f ms, blackholed %"
		      PRIu64 ", rto %" PRIu64 ", repath %" PRIu64 "\n", name,
		      err ? "FAILED" : "ok", r->wl.ops_done, r->wl.ops_total,
		      (double)r->wl.t_last_cqe / 1e6, r->sim.links.dropped_blackhole,
		      r->eng[0].c[EC_RTO] + r->eng[1].c[EC_RTO],
		      r->eng[0].c[EC_REPATH] + r->eng[1].c[EC_REPATH]);
	if (err)
		print_message("  why: %s\n", r->why);
	assert_int_equal(err, 0);
	assert_true(r->wl.done);
	assert_int_equal(r->wl.ops_done, r->wl.ops_total);
}

/*
 * A MetaRoCE QP of one path on a hash-routed fabric, one plane dead.  Data
 * and ACKs hash separately (the reverse route has its own 5-tuple), so with
 * two planes one of the two blackholes below cuts the QP's data or its ACKs
 * (here the server's READ responses or their ACKs).  Three bugs in a row:
 * the repath on RTO and on an unanswered keepalive was skipped for
 * npaths == 1 (a stand-in for "RoCEv2 mode", which keeps its port as a RoCE
 * NIC does), so the path never left the dead route; then its RTO backed off
 * to a second, and a new port works both ways one time in four, so a few
 * tries before dead_peer (3 s) often all failed, although the peer was
 * heard from (its keepalives); and a path with data in flight never moved
 * on an unanswered keepalive.  Each failed the QP with RETRY_EXC.  Sweep
 * reproducer: mroc-sim run --planes 2 --paths 1 --route hash --blackhole 1@1254
 * --seed 772304659 --wl-seed 15553657 --loss 0.273 --rto-min 5000 ...
 */
static void test_one_path_leaves_dead_plane(void **state)
{
	struct scn_config cfg;
	static struct scn_result r;
	char name[64];

	for (int plane = 0; plane < 2; plane++) {
		scn_config_default(&cfg);
		cfg.planes = 2;
		cfg.route = SIM_ROUTE_HASH;
		cfg.wl.npaths = 1;
		cfg.wl.total_bytes = 2 * MIB;
		cfg.wl.mix[WL_FETCH_ADD] = 1;
		cfg.blackhole_plane = plane;
		cfg.blackhole_at_ns = 50000;
		/* Well before dead_peer (3 s): a stuck QP fails, a moved one is long done. */
		cfg.time_limit_ns = 2500 * MSEC;
		snprintf(name, sizeof(name), "1 path, plane %d dies", plane);
		run_ok(name, &cfg, &r);
	}
}

/*
 * --rto-min above the engine's first RTO (10 ms for run and incast, 200 us
 * for cluster): the engine refuses rto_min > rto_init, and every such run
 * failed at once with "sim_create: Invalid argument" ("bad fabric or
 * engine configuration" for cluster).  The first RTO now rises with the
 * minimum.  Sweep reproducer: mroc-sim cluster --hosts 4 --leaves 4
 * --spines 1 --rto-min 10000 ...
 */
static void test_rto_min_above_first_rto(void **state)
{
	struct scn_config cfg;
	static struct scn_result r;
	struct clu_config cc;
	static struct clu_result cr;
	int err;

	scn_config_default(&cfg);
	cfg.wl.total_bytes = 1 * MIB;
	cfg.loss = 0.01;
	cfg.rto_min_ns = 20 * MSEC;
	run_ok("run, rto_min 20 ms", &cfg, &r);

	clu_config_default(&cc);
	cc.net.fab.nhosts = 4;
	cc.net.fab.nplanes = 2;
	cc.net.fab.leaves = 2;
	cc.net.fab.spines = 1;
	cc.bytes = 64 * 1024;
	cc.verify = true;
	sim_engine_rto_min(&cc.net.engine, 1 * MSEC);
	err = clu_run(&cc, &cr);
	print_message("cluster, rto_min 1 ms: %s %s\n", err ? "FAILED" : "ok", cr.why);
	assert_int_equal(err, 0);
}

/*
 * A queue smaller than one packet: every packet is tail-dropped, the
 * connect never completes, and the run stalled until its time limit.  Such
 * a fabric is refused, with the reason.
 */
static void test_queue_below_one_packet_refused(void **state)
{
	struct scn_config cfg;
	static struct scn_result r;
	struct sim_config sc;
	const char *why = NULL;

	scn_config_default(&cfg);
	cfg.wl.total_bytes = 64 * 1024;
	cfg.queue_bytes = 100;
	assert_int_equal(scn_run(&cfg, &r), -EINVAL);
	print_message("queue 100 B: %s\n", r.why);
	assert_non_null(strstr(r.why, "queue"));
	assert_int_equal(r.wl.t_first_post, 0);

	sim_config_default(&sc);
	sc.engine.mtu = 4096;
	sc.link.queue_bytes = 4096 + 60;
	assert_int_equal(sim_config_check(&sc, &why), -EINVAL);
	sc.link.queue_bytes = 0;	/* no limit */
	assert_int_equal(sim_config_check(&sc, &why), 0);
	sc.link.queue_bytes = 8192;
	assert_int_equal(sim_config_check(&sc, &why), 0);
	sc.downlinks = true;
	sc.downlink.queue_bytes = 1024;
	assert_int_equal(sim_config_check(&sc, &why), -EINVAL);
}

/*
 * A cluster with more leaves than hosts (mroc-sim cluster --hosts 2
 * --leaves 4) is refused, and says why: it said "bad fabric or engine
 * configuration", which is no help on the command line.
 */
static void test_cluster_refusal_says_why(void **state)
{
	struct clu_config cc;
	static struct clu_result cr;

	clu_config_default(&cc);
	cc.net.fab.nhosts = 2;
	cc.net.fab.leaves = 4;
	cc.bytes = 8;
	assert_int_equal(clu_run(&cc, &cr), -EINVAL);
	print_message("2 hosts, 4 leaves: %s\n", cr.why);
	assert_non_null(strstr(cr.why, "leaves"));
	cc.net.fab.leaves = 2;
	cc.net.engine.rto_min_ns = 2 * cc.net.engine.rto_max_ns;
	assert_int_equal(clu_run(&cc, &cr), -EINVAL);
	print_message("rto_min above rto_max: %s\n", cr.why);
	assert_non_null(strstr(cr.why, "rto_min"));
}

/*
 * mroc-sim cluster --op incast on fewer than 8 ranks: the default of 7
 * senders left no receiver, and the run failed with "cannot set the incast
 * up (-22)".  Without --senders every other rank sends; an explicit
 * --senders that leaves no receiver is a usage error (exit status 2).
 * Sweep reproducer: mroc-sim cluster --verify --hosts 3 --leaves 1
 * --spines 3 --bytes 1M --op incast --transport rocev2-qps ...
 */
static void test_cluster_incast_few_ranks(void **state)
{
	char *ok[] = { "cluster", "--hosts", "3", "--leaves", "1", "--bytes", "8", "--op",
		       "incast", "--verify", "--transport", "metaroce", NULL };
	char *bad[] = { "cluster", "--hosts", "3", "--leaves", "1", "--bytes", "8", "--op",
			"incast", "--senders", "3", NULL };

	assert_int_equal(cluster_cmd(12, ok), 0);
	assert_int_equal(cluster_cmd(11, bad), 2);
}

/*
 * Found by the sweep (issue #23, finding 2): a queue that holds exactly one
 * full packet (MTU + 132 bytes) on a plane of 1 Gbit/s, WRITEs, SENDs and
 * READs on one path.  Each ACK from the server clocks out one full data
 * packet and right behind it the READ request being retransmitted (60
 * bytes): it found the queue full and was tail-dropped, every time the same
 * way in this jitter-free simulation, 33 times, until max_retx ended the
 * READ with RETRY_EXC.  Now a segment lost at each of its first four tries
 * goes alone on a path with nothing in flight (qp_tx.c).  Sweep reproducer:
 * mroc-sim run --planes 1 --paths 1 --rate 1G --queue 4228 --mtu 4096
 * --msg 256K --bytes 4M (and incasts with --queue MTU+132).
 */
static void test_one_packet_queue_both_ways(void **state)
{
	struct scn_config cfg;
	static struct scn_result r;

	scn_config_default(&cfg);
	cfg.planes = 1;
	cfg.plane_rate_bps = 1000000000ULL;
	cfg.queue_bytes = 4096 + 132;
	cfg.wl.npaths = 1;
	cfg.wl.msg_bytes = 256 * 1024;
	cfg.wl.total_bytes = 4 * MIB;
	cfg.time_limit_ns = 20000 * MSEC;
	run_ok("one-packet queue, both ways", &cfg, &r);
}

/*
 * Found by the sweep (seed 64, session 29): the same with the QP's paths
 * sharing the queue.  9 paths on one plane of 25 Gbit/s, a 601-byte queue
 * (one packet of MTU 256), no propagation delay, SENDs, READs and atomics:
 * a SEND's segment resent 33 times was tail-dropped each time, the last
 * 25 on path 0, which had drained, while the QP's new data on the other 8
 * kept the shared queue full, until RETRY_EXC.  Such a resend now waits for
 * the QP to drain (qp_tx_path.c qp_drained).  Sweep reproducer: mroc-sim run
 * --planes 1 --paths 9 --mode metaroce --route hash --mtu 256 --msg 65536
 * --msg-min 25254 --mix 0,2,3,2,3 --loss 0 --rto-min 1 --seed 101641778
 * --wl-seed 991255907 --bytes 5849879 --outstanding 66 --queue 601 --ecn
 * 65536 --rate 25G --delay 0 --delay-target 50.
 */
static void test_one_packet_queue_shared(void **state)
{
	static const uint32_t mix[WL_OP__COUNT] = { 0, 2, 3, 2, 3 };
	struct scn_config cfg;
	static struct scn_result r;

	scn_config_default(&cfg);
	cfg.planes = 1;
	cfg.plane_rate_bps = 25000000000ULL;
	cfg.queue_bytes = 601;
	cfg.ecn_bytes = 65536;
	cfg.delay_ns = 0;
	cfg.mtu = 256;
	cfg.route = SIM_ROUTE_HASH;
	cfg.rto_min_ns = 1000;
	cfg.delay_target_set = true;
	cfg.delay_target_ns = 50000;
	cfg.seed = 101641778;
	cfg.wl.seed = 991255907;
	cfg.wl.npaths = 9;
	cfg.wl.msg_bytes = 65536;
	cfg.wl.msg_min = 25254;
	memcpy(cfg.wl.mix, mix, sizeof(mix));
	cfg.wl.total_bytes = 5849879;
	cfg.wl.outstanding = 66;
	cfg.time_limit_ns = 10000 * MSEC;
	run_ok("one-packet queue, 9 paths sharing it", &cfg, &r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_path_leaves_dead_plane),
		cmocka_unit_test(test_rto_min_above_first_rto),
		cmocka_unit_test(test_queue_below_one_packet_refused),
		cmocka_unit_test(test_cluster_refusal_says_why),
		cmocka_unit_test(test_cluster_incast_few_ranks),
		cmocka_unit_test(test_one_packet_queue_both_ways),
		cmocka_unit_test(test_one_packet_queue_shared),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
