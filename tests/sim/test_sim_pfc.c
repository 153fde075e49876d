// SPDX-License-Identifier: MIT
/*
 * The PFC-lossless fabric (sim/link.h, sim/fabric.h) and the background
 * traffic (sim/background.h) with the real engine, on small fixed-seed
 * clusters:
 *
 *  - incast on a PFC fabric loses nothing (no tail drop, no headroom
 *    overflow, no retransmission) where the lossy fabric with the same
 *    buffers drops;
 *  - the pause spreads hop by hop: from the receiver's leaf to the spines,
 *    to the senders' leaves, to the senders' NICs, which then hold;
 *  - head-of-line blocking: a flow to an idle host is slowed by an incast
 *    beside it on a PFC fabric (its packets wait behind paused queues), far
 *    more than on a lossy fabric;
 *  - background traffic: a permutation at half load runs beside the
 *    measured job and the run is repeatable, event for event.
 *
 * Every figure is simulated time; nothing reads a clock.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "cluster.h"

#define KIB	1024ULL
#define MSEC	1000000ULL

/* 8 hosts, 2 planes of 4 leaves x 2 spines: two hosts per leaf. */
static void small_cfg(struct clu_config *cfg, enum coll_kind kind, enum clu_transport t)
{
	clu_config_default(cfg);
	cfg->net.fab.nhosts = 8;
	cfg->net.fab.nplanes = 2;
	cfg->net.fab.leaves = 4;
	cfg->net.fab.spines = 2;
	cfg->kind = kind;
	cfg->transport = t;
	cfg->senders = 7;
	cfg->bytes = 1024 * KIB;
	cfg->msg_bytes = 64 * KIB;
	cfg->verify = true;
	cfg->time_limit_ns = 500 * MSEC;
	cfg->seed = 3;
}

static uint64_t drops(const struct clu_result *r, enum fab_link_kind k)
{
	const struct sim_link_stats *s = &r->net.fab.kind[k];

	return s->dropped_tail + s->dropped_random + s->dropped_blackhole + s->pfc_overflow;
}

static void report(const char *name, const struct clu_config *cfg, const struct clu_result *r)
{
	static const char *const kn[FAB__KINDS] = { "up", "down", "leaf->spine", "spine->leaf" };

	print_message("%s: %s %s: %s, %.2f us, retx %" PRIu64 ", NIC waits %" PRIu64 "\n",
		      name, coll_kind_name(cfg->kind), clu_transport_name(cfg->transport),
		      r->err ? r->why : "ok", r->coll.time_us, r->eng.c[EC_TX_RETX],
		      r->net.hosts.nic_waits);
	for (int k = 0; k < FAB__KINDS; k++)
		print_message("  %-11s drops %" PRIu64 " pauses %" PRIu64 " paused %.1f us maxq %"
			      PRIu64 "\n", kn[k], drops(r, k), r->net.fab.kind[k].pfc_pauses,
			      r->net.fab.kind[k].pfc_paused_ns / 1e3,
			      r->net.fab.kind[k].max_queue_bytes);
}

static void run_ok(const char *name, const struct clu_config *cfg, struct clu_result *r)
{
	int err = clu_run(cfg, r);

	report(name, cfg, r);
	assert_int_equal(err, 0);
	assert_true(r->coll.done);
	assert_int_equal(r->net.hosts.timer_spins, 0);
}

/*
 * 7 senders x 1 MiB into one host, rate hints off and no ECN, so only the
 * fabric holds them back: with PFC nothing is lost; the lossy fabric with
 * the same 128 KiB of buffer per port drops at the receiver's port.
 */
static void test_incast_lossless(void **state)
{
	struct clu_config cfg;
	struct clu_result r;

	(void)state;
	small_cfg(&cfg, COLL_INCAST, CLU_ROCEV2_PFC);
	cfg.net.engine.rate_hints = false;
	cfg.net.fab.ecn_bytes = 0;
	cfg.net.fab.queue_bytes = 128 * KIB;
	run_ok("pfc incast", &cfg, &r);
	for (int k = 0; k < FAB__KINDS; k++)
		assert_int_equal(drops(&r, k), 0);
	assert_int_equal(r.eng.c[EC_TX_RETX], 0);
	assert_int_equal(r.eng.c[EC_RTO], 0);
	assert_true(r.net.fab.kind[FAB_SL].pfc_pauses > 0);
	/* The headroom held: no ingress ever went beyond XOFF + headroom. */
	for (int k = 0; k < FAB__KINDS; k++)
		assert_true(r.net.fab.kind[k].pfc_max_ingress <=
			    cfg.net.fab.pfc_xoff_bytes + 2 * 9216 + 3 * 9216 + 8 * KIB);

	cfg.transport = CLU_ROCEV2;
	cfg.net.engine.rto_min_ns = cfg.net.engine.rto_init_ns = 200000;
	run_ok("lossy incast", &cfg, &r);
	assert_true(drops(&r, FAB_DOWN) > 0);
	assert_true(r.eng.c[EC_TX_RETX] > 0);
	assert_int_equal(r.net.fab.kind[FAB_SL].pfc_pauses, 0);
}

/*
 * The pause walks back: the receiver's leaf pauses the spines' cables into
 * it, the spines pause the senders' leaves, the leaves pause the senders'
 * NIC ports, and the NICs hold.  1 plane of 2 leaves x 1 spine, senders all
 * on the other leaf, so every packet crosses the spine.
 */
static void test_pause_propagates(void **state)
{
	static const uint32_t ranks[] = { 4, 0, 1, 2, 3 };
	struct clu_config cfg;
	struct clu_result r;

	(void)state;
	small_cfg(&cfg, COLL_INCAST, CLU_ROCEV2_PFC);
	cfg.net.fab.nplanes = 1;
	cfg.net.fab.leaves = 2;
	cfg.net.fab.spines = 1;
	cfg.net.engine.rate_hints = false;
	cfg.net.fab.ecn_bytes = 0;
	cfg.nranks = 5;
	cfg.rank_hosts = ranks;
	cfg.senders = 4;
	cfg.net.fab.queue_bytes = 128 * KIB;	/* the NIC's port buffer */
	run_ok("pause propagation", &cfg, &r);
	for (int k = 0; k < FAB__KINDS; k++)
		assert_int_equal(drops(&r, k), 0);
	assert_true(r.net.fab.kind[FAB_SL].pfc_pauses > 0);	/* leaf 1 -> spine */
	assert_true(r.net.fab.kind[FAB_LS].pfc_pauses > 0);	/* spine -> leaf 0 */
	assert_true(r.net.fab.kind[FAB_UP].pfc_pauses > 0);	/* leaf 0 -> the NICs */
	assert_true(r.net.hosts.nic_waits > 0);
	assert_int_equal(r.net.fab.kind[FAB_DOWN].pfc_pauses, 0);	/* hosts never pause */
}

/*
 * Head-of-line blocking.  1 plane of 2 leaves x 1 spine (hosts 0-3 on leaf
 * 0, 4-7 on leaf 1).  The measured flow: host 3 -> host 5, 1 MiB.  Beside
 * it, hosts 0, 1, 2 each offer a full NIC to host 4: 3:1 into host 4's port.
 * The flow shares the spine's queue toward leaf 1 with the incast.  On the
 * PFC fabric leaf 1 pauses that queue for host 4's sake and the flow waits
 * behind it; on the lossy fabric host 4's port drops instead and the flow
 * to the idle host 5 goes on.  No ECN: only PFC holds the incast back (the
 * case DCQCN exists to make rare, and the one that shows what a pause does
 * to a bystander).
 */
static void hol_run(enum clu_transport t, bool incast, struct clu_result *r)
{
	static const uint32_t ranks[] = { 5, 3 }, bg[] = { 4, 0, 1, 2 };
	struct clu_config cfg;

	small_cfg(&cfg, COLL_INCAST, t);
	cfg.net.fab.nplanes = 1;
	cfg.net.fab.leaves = 2;
	cfg.net.fab.spines = 1;
	cfg.net.engine.rate_hints = false;
	cfg.net.fab.ecn_bytes = 0;
	cfg.nranks = 2;
	cfg.rank_hosts = ranks;
	cfg.senders = 1;
	cfg.verify = false;
	if (t == CLU_ROCEV2)
		cfg.net.engine.rto_min_ns = cfg.net.engine.rto_init_ns = 200000;
	if (incast) {
		cfg.bg = BG_INCAST;
		cfg.bg_load = 1.0;
		cfg.bg_hosts = bg;
		cfg.bg_nhosts = 4;
		cfg.bg_senders = 3;
	}
	run_ok(incast ? "victim beside an incast" : "victim alone", &cfg, r);
	if (incast)
		print_message("  background delivered %.3f of its offer\n",
			      (double)r->bg.done_bytes / (double)r->bg.offered_bytes);
}

static void test_hol_blocking(void **state)
{
	struct clu_result alone, pfc, lossy;

	(void)state;
	hol_run(CLU_ROCEV2_PFC, false, &alone);
	hol_run(CLU_ROCEV2_PFC, true, &pfc);
	hol_run(CLU_ROCEV2, true, &lossy);
	assert_int_equal(drops(&pfc, FAB_DOWN) + drops(&pfc, FAB_SL), 0);
	assert_true(pfc.net.fab.kind[FAB_SL].pfc_paused_ns > 0);
	assert_true(drops(&lossy, FAB_DOWN) > 0);
	/* Its own destination idle, the flow still takes far longer with PFC. */
	assert_true(pfc.coll.time_us > 1.5 * alone.coll.time_us);
	assert_true(pfc.coll.time_us > 1.3 * lossy.coll.time_us);
}

/* A permutation at half load beside a measured AllReduce: repeatable to the event. */
static void test_background_deterministic(void **state)
{
	struct clu_config cfg;
	struct clu_result a, b;

	(void)state;
	small_cfg(&cfg, COLL_ALLREDUCE, CLU_METAROCE);
	cfg.bytes = 64 * KIB;
	cfg.nranks = 4;
	cfg.bg = BG_PERMUTATION;
	cfg.bg_load = 0.5;
	cfg.iters = 5;
	run_ok("allreduce beside a permutation", &cfg, &a);
	run_ok("again", &cfg, &b);
	assert_int_equal(a.iters_done, 5);
	assert_true(a.bg.flows == 4 && a.bg.done_bytes > 0);
	assert_true(a.t_min_us <= a.t_p50_us && a.t_p50_us <= a.t_p99_us &&
		    a.t_p99_us <= a.t_max_us);
	assert_int_equal(a.net.events, b.net.events);
	assert_true(a.t_p50_us == b.t_p50_us && a.t_p99_us == b.t_p99_us);
	assert_int_equal(a.bg.done_bytes, b.bg.done_bytes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_incast_lossless),
		cmocka_unit_test(test_pause_propagates),
		cmocka_unit_test(test_hol_blocking),
		cmocka_unit_test(test_background_deterministic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
