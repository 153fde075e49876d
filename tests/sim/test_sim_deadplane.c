// SPDX-License-Identifier: MIT
/*
 * A plane dead under a QP's paths (congestion control's timeouts and moves,
 * issues #27 and #23): a timeout move never goes back to a dead route;
 * connections made through a plane dead from the start, hashed or pinned,
 * with paths new on it and the CM walking past them; a QP with no live path
 * scouts for one; a timed-out path keeps probing and leaves its siblings
 * room.  Deterministic: simulated time, fixed seeds.
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
 * The move back never returns to a dead route: like-fabric, 4 paths, no
 * loss, one plane blackholed for good 300 ms in (each plane in turn, seeds
 * 1-3).  Without loss nothing times out but the dead plane (0 RTOs on the
 * same runs without the blackhole), so every timeout move leaves it; the
 * moved path lands on a sibling's plane, delivers less than it did alone,
 * and went back to the dead plane for another RTO (18 times in these 12
 * runs).  The port left showed no life after the path fell silent: the
 * move stays (repath_back_held).
 */
static void test_timeout_move_not_back_to_dead_plane(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;
	uint64_t back = 0, held = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= 3; seed++)
		for (int32_t plane = 0; plane < 4; plane++) {
			scn_config_default(&cfg);
			scn_config_like_fabric(&cfg);
			cfg.wl.npaths = 4;
			cfg.wl.total_bytes = 128 * MIB;
			cfg.blackhole_plane = plane;
			cfg.blackhole_at_ns = 300 * MSEC;
			cfg.time_limit_ns = 4000 * MSEC;
			cfg.seed = seed;
			run_ok("like-fabric, 4 paths, a plane dies", &cfg, &r);
			back += r.eng[0].c[EC_REPATH_BACK];
			held += r.eng[0].c[EC_REPATH_BACK_HELD];
		}
	print_message("  moves back %" PRIu64 ", held %" PRIu64 "\n", back, held);
	assert_int_equal(back, 0);
	assert_true(held > 0);
}

/* 4 MiB over 4 paths on 4 planes, routed by route, with plane dead from the start. */
static void dead_plane_cfg(struct scn_config *cfg, enum sim_route route, unsigned plane,
			   uint64_t seed)
{
	scn_config_default(cfg);
	cfg->route = route;
	cfg->wl.total_bytes = 4 * MIB;
	cfg->plane_loss_set = 1ULL << plane;
	cfg->plane_loss[plane] = 1.0;
	cfg->time_limit_ns = 1000 * MSEC;
	cfg->seed = seed;
}

/*
 * A plane dead from the start, before any QP connects (each plane in turn,
 * seeds 1-4, 4 paths hashed onto 4 planes): every QP connects and its
 * transfer completes.  The CM sent every REQ, copy and try, and the RTU,
 * by path 0's one port, and the server answered by its listener's: a QP
 * whose CM route crossed the dead plane never connected (7 of these 16
 * runs hit the 1 s limit unconnected); each send again now takes another
 * port (cm_tx.c cm_route), the server's REP again the asking copy's.
 *
 * And each moves its 4 MiB at over 0.3 of the capacity: where two paths
 * hashed onto the dead plane, each held its probe back for the other's
 * unanswered packets until rto_init (11 of the 16 runs at 0.017-0.033;
 * qp_timers.c older_unanswered); now 0.36-0.65.
 */
static void test_connect_through_dead_plane(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;
	uint64_t late = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= 4; seed++)
		for (unsigned plane = 0; plane < 4; plane++) {
			dead_plane_cfg(&cfg, SIM_ROUTE_HASH, plane, seed);
			run_ok("4 paths, a plane dead from the start", &cfg, &r);
			late += r.eng[0].c[EC_TX_CM] > 2;
			assert_true(r.goodput_gbps > 0.3 * r.capacity_gbps);
		}
	print_message("  runs whose CM sent more than REQ and RTU: %" PRIu64 "\n", late);
	assert_true(late > 0);	/* the dead plane did take some first sends */
}

/*
 * The same with every path pinned to a plane by its id (ROUTE_PATH_ID, a
 * NIC port per plane as engine_config.path_ports describes), each plane in
 * turn dead from the start, seeds 1-2: every QP connects and its transfer
 * completes, at over 0.4 of the capacity (3 planes of 4 are left).
 *
 * With plane 0 dead no run connected in 1 s: the CM's sends again took
 * other source ports but went as path 0 every time, so by plane 0
 * (engine_txbuf.path_id); in the cluster a collective's next QPs never
 * connected once a leaf's cable of plane 0 had died (mroc-sim cluster
 * --verify --op alltoall --seed 968048961 --hosts 16 --planes 4 --leaves 4
 * --spines 1 --bytes 1M --loss 0.01 --fail cable --fail-at 360 --iters 5:
 * "QPs did not connect" in the third).  Now each send again goes as the
 * path whose port it takes (cm_tx.c cm_route), the server's answers as the
 * asking packet came.  The server's first REP still goes by its path 0, so
 * with plane 0 dead only a REQ sent again gets it through.
 *
 * The dead plane's path then has no RTT sample, so its packets waited for
 * its first RTO, rto_init (20 ms here): 4 MiB took 20.3 ms, 0.017 of the
 * capacity, with any plane dead.  It times out once its probe is out,
 * rto_min has passed and its siblings answered everything sent before
 * (path.c path_silent_at, counted rto_silent_alone): 0.52.
 */
/* WRITEs alone: every byte one way, so the capacity is the sender's. */
static void writes_only(struct scn_config *cfg)
{
	memset(cfg->wl.mix, 0, sizeof(cfg->wl.mix));
	cfg->wl.mix[WL_WRITE] = 1;
}

/*
 * Paths pinned to 4 planes (npaths of them; 0: dead_plane_cfg's 4 paths and
 * mixed ops), each plane in turn dead from the start, seeds 1-2: each run
 * times a dead path out early (rto_silent_alone, or its RTO where the
 * handshake gave it one far below rto_init: path.c first_rto) and moves
 * over min_cap of the capacity.
 */
static void dead_pinned_plane_runs(const char *name, uint8_t npaths, uint64_t bytes,
				   double min_cap)
{
	static struct scn_result r;
	struct scn_config cfg;

	for (uint64_t seed = 1; seed <= 2; seed++)
		for (unsigned plane = 0; plane < 4; plane++) {
			dead_plane_cfg(&cfg, SIM_ROUTE_PATH_ID, plane, seed);
			if (npaths) {
				cfg.wl.npaths = npaths;
				cfg.wl.total_bytes = bytes;
				writes_only(&cfg);
			}
			run_ok(name, &cfg, &r);
			if (plane == 0)
				assert_true(r.eng[0].c[EC_TX_CM] > 2);
			assert_true(r.eng[0].c[EC_RTO] + r.eng[1].c[EC_RTO] > 0);
			assert_true(r.goodput_gbps > min_cap * r.capacity_gbps);
		}
}

static void test_connect_through_dead_pinned_plane(void **state)
{
	(void)state;
	dead_pinned_plane_runs("4 paths pinned, a plane dead from the start", 0, 0, 0.4);
}

/*
 * Two new paths on one dead plane: 8 paths pinned to 4 planes (two each),
 * each plane in turn dead from the start, 16 MiB of WRITEs, seeds 1-2:
 * over 0.6 of the capacity (3 planes of 4 are left).  Each dead path
 * deferred its probe, and its timeout, while a packet sent before its
 * newest was unanswered on another live path (qp_timers.c older_unanswered),
 * and each had such a packet on the other: neither probed before rto_init
 * (20 ms here), the QP's window stood full of their holes, 0.118 of the
 * capacity in every run.  A sibling never answered no longer counts once
 * one has an RTT sample: 0.70-0.71.
 */
static void test_two_new_paths_on_a_dead_plane(void **state)
{
	(void)state;
	dead_pinned_plane_runs("8 paths on 4 planes, one dead", 8, 16 * MIB, 0.6);
}

/*
 * The CM's messages after the first walk on over the paths: 8 paths hashed
 * onto 2 planes, plane 0 dead from the start, seeds 1-60: every QP
 * connects.  Each message (the RTU after a REP, a REQ again) started by
 * path 0, and a try's four sends went by paths 0-3: where those four all
 * hashed onto the dead plane the RTU never got through, whichever path the
 * REQ had found (seeds 12, 39 and 59 hit the limit unconnected).
 */
static void test_cm_walks_past_dead_paths(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	for (uint64_t seed = 1; seed <= 60; seed++) {
		dead_plane_cfg(&cfg, SIM_ROUTE_HASH, 0, seed);
		cfg.planes = 2;
		cfg.wl.npaths = 8;
		cfg.wl.total_bytes = 1 * MIB;
		writes_only(&cfg);
		assert_int_equal(scn_run(&cfg, &r), 0);
	}
}

/*
 * New paths that all cross a dead plane one way or the other time out by the
 * handshake's round trip, not rto_init: 2 planes, plane 1 dead from the
 * start, routes hashed per direction (a path works both ways one time in
 * four), 2 and 4 paths, 16 MiB of WRITEs, seeds 1-8: over 0.35 of the
 * capacity (one plane of two is left: 0.5 at most).  No path had an RTT
 * sample, nothing was heard on any, and every timeout and move waited
 * rto_init (10 ms): 5 of these 16 runs at 0.037-0.178.  The paths'
 * first RTO is now 3 x the handshake's round trip, at least rto_min (path.c
 * first_rto): 0.40-0.50.
 */
static void test_dead_plane_new_paths_time_out(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	for (uint8_t npaths = 2; npaths <= 4; npaths += 2)
		for (uint64_t seed = 1; seed <= 8; seed++) {
			dead_plane_cfg(&cfg, SIM_ROUTE_HASH, 1, seed);
			cfg.planes = 2;
			cfg.wl.npaths = npaths;
			cfg.wl.total_bytes = 16 * MIB;
			cfg.wl.seed = seed;
			writes_only(&cfg);
			run_ok("2 planes hashed, plane 1 dead", &cfg, &r);
			assert_true(r.goodput_gbps > 0.35 * r.capacity_gbps);
		}
}

/*
 * A QP of one path over 2 hashed planes, plane 1 dead from the start (its
 * port works both ways one time in four: data or ACKs cross the dead
 * plane), 16 MiB of WRITEs, seeds 1-12: over 0.45 of the capacity (0.5 at
 * most).  Each timeout drew one new port, and after a few the RTO doubled:
 * 0.089-0.5 (seed 8 0.089, seed 11 0.152).  A QP with no live path now
 * probes by several ports at each timeout (path_repath.c path_scout, scouts_for)
 * and moves to the one an ACK answers: 0.479-0.500.
 */
static void test_stuck_qp_scouts(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;
	uint64_t scouts = 0, moves = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= 12; seed++) {
		dead_plane_cfg(&cfg, SIM_ROUTE_HASH, 1, seed);
		cfg.planes = 2;
		cfg.wl.npaths = 1;
		cfg.wl.total_bytes = 16 * MIB;
		writes_only(&cfg);
		run_ok("1 path, 2 planes hashed, plane 1 dead", &cfg, &r);
		assert_true(r.goodput_gbps > 0.45 * r.capacity_gbps);
		scouts += r.eng[0].c[EC_TX_SCOUT];
		moves += r.eng[0].c[EC_SCOUT_MOVE];
	}
	print_message("scouts %" PRIu64 ", moves to a scout's port %" PRIu64 "\n", scouts, moves);
	assert_true(moves > 0 && moves <= scouts);
}

/*
 * A timed-out path must keep probing until a port answers: like-fabric, 2
 * paths hashed over 4 planes, plane 3 dead from the start, 1 % loss, seeds
 * 1-8.  A path whose first packets went into the dead plane timed out and
 * moved; where its new port hashed onto the dead plane too, its probe (a
 * copy of data the sibling had delivered) was let go at its timer as
 * settled (qp_timers.c release_settled), and the path, timed out, with
 * nothing in flight and no timer, never sent again: 0.250 of capacity
 * instead of 0.5 (seeds 5 and 7, to the end of the transfer).
 */
static void test_timed_out_path_probes_on(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	for (uint64_t seed = 1; seed <= 8; seed++) {
		scn_config_default(&cfg);
		scn_config_like_fabric(&cfg);
		cfg.wl.npaths = 2;
		cfg.wl.total_bytes = 32 * MIB;
		cfg.wl.seed = seed;
		cfg.loss = 0.01;
		cfg.plane_loss_set = 1ULL << 3;
		cfg.plane_loss[3] = 1.0;
		cfg.seed = seed;
		run_ok("like-fabric, 2 paths, plane 3 dead", &cfg, &r);
		assert_true(r.goodput_gbps > 0.45 * r.capacity_gbps);
	}
}

/*
 * Paths that cannot leave a dead plane must not crowd a slow NIC: 16 paths
 * pinned to 4 planes of 100 Gbit/s behind a 1 Gbit/s NIC (an 8 KiB packet
 * takes 66 us of it, against an RTO of ~240 us), plane 3 blackholed 2 ms
 * into 4 MiB of WRITEs, MTU 1500 and 8192, seeds 1-3: over 0.6 of the NIC's
 * capacity.  Each of the 4 dead paths moved at every RTO and, a sibling
 * alive, kept no backoff, so it probed its new port (on the same plane) at
 * once and again an RTO later; their probes go before data and filled the
 * NIC: at MTU 8192 the last 17 packets were never sent in 1 s, at 1500 0.35
 * of the capacity.  A path keeps a backoff after MUTE_MOVES_FREE moves
 * without an ACK (path_repath.c mute_backoff): 0.80-0.94.
 */
static void test_dead_plane_probes_leave_room(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;
	static const uint32_t mtus[] = { 1500, 8192 };

	(void)state;
	for (unsigned m = 0; m < 2; m++)
		for (uint64_t seed = 1; seed <= 3; seed++) {
			scn_config_default(&cfg);
			cfg.route = SIM_ROUTE_PATH_ID;
			cfg.plane_rate_bps = 100000000000ULL;
			cfg.nic_rate_bps = 1000000000ULL;
			cfg.delay_ns = 1000;
			cfg.mtu = mtus[m];
			cfg.wl.npaths = 16;
			cfg.wl.total_bytes = 4 * MIB;
			writes_only(&cfg);
			cfg.blackhole_plane = 3;
			cfg.blackhole_at_ns = 2 * MSEC;
			cfg.seed = seed;
			cfg.wl.seed = seed;
			run_ok("16 pinned paths, 1G NIC, plane 3 dies", &cfg, &r);
			assert_true(r.goodput_gbps > 0.6 * r.capacity_gbps);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timeout_move_not_back_to_dead_plane),
		cmocka_unit_test(test_connect_through_dead_plane),
		cmocka_unit_test(test_connect_through_dead_pinned_plane),
		cmocka_unit_test(test_two_new_paths_on_a_dead_plane),
		cmocka_unit_test(test_cm_walks_past_dead_paths),
		cmocka_unit_test(test_dead_plane_new_paths_time_out),
		cmocka_unit_test(test_stuck_qp_scouts),
		cmocka_unit_test(test_timed_out_path_probes_on),
		cmocka_unit_test(test_dead_plane_probes_leave_room),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
