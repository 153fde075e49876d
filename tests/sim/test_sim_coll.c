// SPDX-License-Identifier: MIT
/*
 * Issue #16's collectives on the cluster simulator (sim/collective.h): ring
 * and recursive-doubling AllGather, ReduceScatter and AllReduce on 8 hosts,
 * 2 planes of 4 leaves x 2 spines, the real engine, real data.
 *
 *  - every kind, algorithm and transport completes with the result checked
 *    byte for byte (sum, own chunk of the sum, gathered chunks), every rank
 *    received exactly the bytes its algorithm's formula says, and the
 *    engines placed each byte once;
 *  - under 2% random loss on every cable they still do, exactly once;
 *  - the algorithm auto picks: recursive doubling for small sizes on 2^k
 *    ranks, the ring for large ones and for other rank counts;
 *  - busbw factors are nccl-tests';
 *  - a small AllReduce on 32 ranks of the default fabric is never slower with
 *    MetaRoCE than with any RoCEv2 baseline, alone or beside background
 *    traffic (issue #23: small messages split over paths);
 *  - a lossless 1 MiB AllToAll on 64 hosts sends at most 1 % of its data
 *    again as tail-loss probes (issue #23: probes timed by borrowed RTTs);
 *  - at 1 % loss its paths do not time out over packets whose data arrived
 *    through another path (issue #23).
 *
 * Seeds are fixed; limits are simulated time; nothing reads a clock.
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
#define NHOSTS	8

static const uint8_t kinds[] = { COLL_ALLGATHER, COLL_REDUCESCATTER, COLL_ALLREDUCE };

static void cfg_for(struct clu_config *cfg, enum coll_kind k, enum coll_algo a,
		    enum clu_transport t, uint64_t bytes)
{
	clu_config_default(cfg);
	cfg->net.fab.nhosts = NHOSTS;
	cfg->net.fab.nplanes = 2;
	cfg->net.fab.leaves = 4;
	cfg->net.fab.spines = 2;
	cfg->kind = k;
	cfg->algo = a;
	cfg->transport = t;
	cfg->qps = 2;
	cfg->bytes = bytes;
	cfg->msg_bytes = 16 * KIB;
	cfg->verify = true;
	cfg->time_limit_ns = 500 * MSEC;
	cfg->seed = 9;
}

/* What each rank receives: chunks of ceil(bytes / n), log2 n steps for rd. */
static uint64_t rx_formula(enum coll_kind k, enum coll_algo a, uint32_t n, uint64_t bytes)
{
	uint64_t chunk = (bytes + n - 1) / n;
	uint32_t l = 0;

	while ((1u << l) < n)
		l++;
	if (k == COLL_ALLREDUCE)
		return a == COLL_ALGO_RD ? (uint64_t)l * n * chunk : 2ULL * (n - 1) * chunk;
	return (uint64_t)(n - 1) * chunk;	/* AllGather, ReduceScatter: either algorithm */
}

static void run_checked(const struct clu_config *cfg)
{
	static struct clu_result r;
	uint64_t want = rx_formula(cfg->kind, cfg->algo, NHOSTS, cfg->bytes);
	int err = clu_run(cfg, &r);

	print_message("%-13s %-4s %-19s %7" PRIu64 " B loss %.2f: %s, %8.2f us, algbw %.3f "
		      "busbw %.3f GB/s, rank rx %" PRIu64 "..%" PRIu64 " (formula %" PRIu64
		      "), retx %" PRIu64 "\n", coll_kind_name(cfg->kind),
		      coll_algo_name(cfg->algo), clu_transport_name(cfg->transport), cfg->bytes,
		      cfg->net.fab.loss, err ? r.why : "ok", r.coll.time_us, r.coll.algbw_gbps,
		      r.coll.busbw_gbps, r.coll.rank_rx_min, r.coll.rank_rx_max, want,
		      r.eng.c[EC_TX_RETX]);
	assert_int_equal(err, 0);
	assert_true(r.coll.done);
	assert_int_equal(r.coll.algo, cfg->algo);
	assert_int_equal(r.coll.rank_rx_min, want);
	assert_int_equal(r.coll.rank_rx_max, want);
	assert_int_equal(r.coll.payload_bytes, NHOSTS * want);
	assert_int_equal(r.payload_placed, r.coll.payload_bytes);
	assert_true(r.coll.busbw_gbps > 0);
}

static void test_every_kind(void **state)
{
	static const uint64_t sizes[] = { 8, 1000, 256 * KIB };
	struct clu_config cfg;

	(void)state;
	for (size_t k = 0; k < sizeof(kinds); k++)
		for (int a = COLL_ALGO_RING; a <= COLL_ALGO_RD; a++)
			for (int t = 0; t < CLU__TRANSPORTS; t++)
				for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
					cfg_for(&cfg, kinds[k], a, t, sizes[s]);
					run_checked(&cfg);
				}
}

static void test_under_loss(void **state)
{
	static const uint8_t tr[] = { CLU_METAROCE, CLU_ROCEV2 };
	struct clu_config cfg;

	(void)state;
	for (size_t k = 0; k < sizeof(kinds); k++)
		for (int a = COLL_ALGO_RING; a <= COLL_ALGO_RD; a++)
			for (size_t t = 0; t < sizeof(tr); t++) {
				cfg_for(&cfg, kinds[k], a, tr[t], 256 * KIB);
				cfg.net.fab.loss = 0.02;
				run_checked(&cfg);
			}
}

static void test_auto_rule(void **state)
{
	const uint64_t nic = 100000000000ULL;	/* 4 x 25 Gbit/s */

	(void)state;
	for (size_t k = 0; k < sizeof(kinds); k++) {
		/* Latency-bound: log2 n steps beat n - 1 or 2(n - 1). */
		assert_int_equal(coll_algo_pick(kinds[k], COLL_ALGO_AUTO, 32, 8, nic), COLL_ALGO_RD);
		assert_int_equal(coll_algo_pick(kinds[k], COLL_ALGO_AUTO, 32, 32 * KIB, nic),
				 COLL_ALGO_RD);
		/* Not a power of two: the ring, whatever was asked. */
		assert_int_equal(coll_algo_pick(kinds[k], COLL_ALGO_RD, 24, 8, nic),
				 COLL_ALGO_RING);
		assert_int_equal(coll_algo_pick(kinds[k], COLL_ALGO_RING, 32, 8, nic),
				 COLL_ALGO_RING);
	}
	/* AllReduce by doubling sends log2 n whole buffers: the ring wins when bandwidth-bound. */
	assert_int_equal(coll_algo_pick(COLL_ALLREDUCE, COLL_ALGO_AUTO, 32, 16 * KIB * KIB, nic),
			 COLL_ALGO_RING);
	/* Unstepped kinds have no algorithm to pick. */
	assert_int_equal(coll_algo_pick(COLL_ALLTOALL, COLL_ALGO_RD, 32, 8, nic), COLL_ALGO_RING);
}

/*
 * Issue #23: a small AllReduce (recursive doubling, 32 of the default 64
 * hosts, 4 planes of 25 Gbit/s, MTU 4096) is never slower with MetaRoCE than
 * with a RoCEv2 baseline, lossless, alone and beside a permutation at half
 * load.  A QP per plane cut a 4 KiB step into four 1 KiB packets, one per
 * plane, and was 40 % faster than MetaRoCE's one 4 KiB packet on one path;
 * MetaRoCE now splits a message posted alone and sends each part on the
 * path of least RTT (docs/PROTOCOL.md 5.2, split unit 32 B, the cluster's
 * default); without that it is still slower here (the check that this test
 * sees it).
 */
/* t's AllReduce of bytes on 32 of the default 64 hosts, iters times, in 100 ms at most. */
static void small_config(struct clu_config *cfg, uint8_t t, uint64_t bytes, uint32_t iters)
{
	clu_config_default(cfg);
	cfg->transport = t;
	cfg->bytes = bytes;
	cfg->nranks = 32;
	cfg->iters = iters;
	cfg->time_limit_ns = 100 * MSEC;
}

static double small_run(uint8_t t, uint64_t bytes, uint32_t split, uint8_t bg, uint32_t iters,
			uint64_t seed)
{
	static struct clu_result r;
	struct clu_config cfg;

	small_config(&cfg, t, bytes, iters);
	cfg.bg = bg;
	cfg.bg_load = 0.5;
	if (bg == BG_INCAST)
		cfg.bg_senders = 16;
	cfg.seed = seed;
	cfg.net.engine.split_unit = split;
	assert_int_equal(clu_run(&cfg, &r), 0);
	assert_int_equal(r.coll.algo, COLL_ALGO_RD);
	assert_int_equal(r.iters_done, iters);
	print_message("%-19s %6" PRIu64 " B split %3u bg %u seed %" PRIu64 ": p50 %7.2f us\n",
		      clu_transport_name(t), bytes, split, bg, seed, r.t_p50_us);
	return r.t_p50_us;
}

static double small_p50(uint8_t t, uint64_t bytes, uint32_t split, uint8_t bg)
{
	return small_run(t, bytes, split, bg, 5, 4);
}

static void test_small_never_slower(void **state)
{
	static const uint8_t base[] = { CLU_ROCEV2_PFC, CLU_ROCEV2_QPP, CLU_ROCEV2 };
	static const uint64_t sizes[] = { 64, 512, 4 * KIB, 32 * KIB };
	static const uint8_t bgs[] = { BG_NONE, BG_PERMUTATION };

	(void)state;
	for (size_t b = 0; b < sizeof(bgs); b++)
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			double m = small_p50(CLU_METAROCE, sizes[s], 32, bgs[b]);

			for (size_t t = 0; t < sizeof(base); t++)
				assert_true(m <= small_p50(base[t], sizes[s], 32, bgs[b]));
		}
	assert_true(small_p50(CLU_METAROCE, 4 * KIB, 0, BG_NONE) >
		    small_p50(CLU_ROCEV2_QPP, 4 * KIB, 0, BG_NONE));
}

/*
 * Issue #23: the same AllReduce beside an incast (16 background senders at
 * half their port rate into one host, 32 hosts the job does not use), over
 * 100 iterations, so that the p50 is not a coin: on about one iteration in
 * two some job packet waits behind a background packet on a cable into the
 * receiver's leaf.  A step ends when its last part arrives, so a message
 * split in 2 (64 B) or 8 (512 B) parts met such a wait more often than the
 * one packet of a RoCEv2 QP or the 4 parts of a QP per plane: MetaRoCE was
 * 0.3-2 % behind rocev2-lossy at 64 B and 1-3.5 % behind a QP per plane at
 * 512 B on seeds 1-5 (s11-eng11 section 1).  Seed 1 here; docs/PERF.md has
 * the sweep over seeds 1-5.
 */
static void test_small_beside_incast(void **state)
{
	static const uint8_t base[] = { CLU_ROCEV2, CLU_ROCEV2_QPP };
	static const uint64_t sizes[] = { 8, 64, 512 };

	(void)state;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		double m = small_run(CLU_METAROCE, sizes[s], 32, BG_INCAST, 100, 1);

		for (size_t t = 0; t < sizeof(base); t++)
			assert_true(m <= small_run(base[t], sizes[s], 32, BG_INCAST, 100, 1));
	}
}

/*
 * Issue #23: the ring AllReduce with packed ranks (32 of the default 64
 * hosts, 8 to a leaf: 4 of the 32 hops cross the spines), 10 iterations, is
 * never slower with MetaRoCE than with a QP per plane.  Each step is a
 * message alone in 4 parts, a part a plane; the parts take the planes in
 * their order on every host (docs/PROTOCOL.md 5.2), as the QPs per plane do.
 * In an order of each host's own (by RTT), a part met on the cable into the
 * receiver the ACK that the receiver's other neighbour returned by the
 * plane of the receiver's own part, 46 ns at 25 Gbit/s: 8 KiB was 152.908
 * us against 152.905, now 152.889.  2 KiB (2 parts: fewer than the planes,
 * by RTT) 149.67 against 149.87.  4 KiB is level with a QP per plane within
 * the simulator's nanosecond (150.792 against 150.788 here).
 */
static double ring_packed_p50(uint8_t t, uint64_t bytes)
{
	static struct clu_result r;
	struct clu_config cfg;

	small_config(&cfg, t, bytes, 10);
	cfg.placement = CLU_PACKED;
	cfg.algo = COLL_ALGO_RING;
	assert_int_equal(clu_run(&cfg, &r), 0);
	assert_int_equal(r.iters_done, 10);
	print_message("%-19s %6" PRIu64 " B packed ring: p50 %8.3f us\n", clu_transport_name(t),
		      bytes, r.t_p50_us);
	return r.t_p50_us;
}

static void test_ring_packed_never_slower(void **state)
{
	(void)state;
	for (uint64_t b = 2 * KIB; b <= 8 * KIB; b *= 2)
		assert_true(ring_packed_p50(CLU_METAROCE, b) <= ring_packed_p50(CLU_ROCEV2_QPP, b));
}

/*
 * Issue #23: a step of a small collective posted alone goes before the ACK
 * owed for the step just received only while all it has left fits, times
 * the ports, in one full packet (engine.c lone_first): then the ACK waits
 * no longer than it could behind a packet that had just begun.  Recursive
 * doubling's 4 KiB steps (8 parts of 512 B, two a port) do not: sent before
 * the ACK, they held it ~0.5 us on the NIC and its port, the peers took
 * their RTTs as held up (qp_ack.c note_held) and copied every message from
 * then on (20 iterations, seed 4: 246 held samples, 23,296 copies; 100
 * iterations 22.00 -> 22.21 us).  The packed ring's steps fit (4 KiB: 4
 * parts of 32 B): 150.79 -> 150.47 us, a QP per plane 150.79 (above).
 */
static void test_rd_acks_not_held(void **state)
{
	static struct clu_result r;
	struct clu_config cfg;

	(void)state;
	small_config(&cfg, CLU_METAROCE, 4 * KIB, 20);
	cfg.seed = 4;
	assert_int_equal(clu_run(&cfg, &r), 0);
	assert_int_equal(r.coll.algo, COLL_ALGO_RD);
	assert_int_equal(r.iters_done, 20);
	print_message("rd 4 KiB: p50 %.3f us, held %" PRIu64 ", copies %" PRIu64 "\n", r.t_p50_us,
		      r.eng.c[EC_RTT_HELD], r.eng.c[EC_TX_DUP]);
	assert_int_equal(r.eng.c[EC_RTT_HELD], 0);
	assert_int_equal(r.eng.c[EC_TX_DUP], 0);
}

/*
 * Issue #23: a lossless 1 MiB AllToAll on the default 64-host fabric (a
 * 16 KiB message from every host to every other, all posted at once) loses
 * nothing, so every copy a tail-loss probe sends is one the receiver
 * already has or is about to get.  The probes' RTT came from the host's
 * first, unqueued samples while the burst's packets sat behind deep
 * receiver queues: 2,374 copies for 16,128 data packets (15 % more bytes).
 * At most 1 % now (113).
 */
/* A 1 MiB AllToAll on the default 64-host fabric at random loss p (seed 1). */
static void run_alltoall_1m(double p, struct clu_result *r)
{
	struct clu_config cfg;

	clu_config_default(&cfg);
	cfg.kind = COLL_ALLTOALL;
	cfg.bytes = KIB * KIB;
	cfg.net.fab.loss = p;
	cfg.time_limit_ns = 100 * MSEC;
	assert_int_equal(clu_run(&cfg, r), 0);
}

static void test_alltoall_probes(void **state)
{
	static struct clu_result r;
	uint64_t dropped = 0;

	(void)state;
	run_alltoall_1m(0, &r);
	print_message("AllToAll 1 MiB, 64 hosts, lossless: %.1f us, data %" PRIu64 " copies %" PRIu64
		      " duplicates received %" PRIu64 " rto %" PRIu64 "\n", r.coll.time_us,
		      r.eng.c[EC_TX_DATA], r.eng.c[EC_TX_RETX], r.eng.c[EC_RX_DUP], r.eng.c[EC_RTO]);
	for (int k = 0; k < FAB__KINDS; k++)
		dropped += r.net.fab.kind[k].dropped_tail;
	assert_int_equal(dropped, 0);	/* nothing lost: any resend is needless */
	assert_true(r.eng.c[EC_TX_RETX] * 100 <= r.eng.c[EC_TX_DATA]);
}

/*
 * The same AllToAll at 1 % loss (seed 1): a packet whose data the peer
 * acknowledged through another path (a sibling's probe carried it) does not
 * wait in flight for its own path's RTO.  Before, 255 RTOs for 383 random
 * drops, 146 of them on such paths (each QP's message is one packet on each
 * of 4 new paths): each counted a timeout, cut a window and moved a path
 * for data already delivered.
 */
static void test_alltoall_lossy_settled(void **state)
{
	static struct clu_result r;
	uint64_t drops = 0;

	(void)state;
	run_alltoall_1m(0.01, &r);
	for (int k = 0; k < FAB__KINDS; k++)
		drops += r.net.fab.kind[k].dropped_random;
	print_message("AllToAll 1 MiB, 64 hosts, 1 %% loss: %.1f us, drops %" PRIu64 " lost %" PRIu64
		      " rto %" PRIu64 " settled %" PRIu64 "\n", r.coll.time_us, drops,
		      r.eng.c[EC_LOST], r.eng.c[EC_RTO], r.eng.c[EC_FLIGHT_SETTLED]);
	assert_true(r.coll.done);
	assert_true(drops > 300);
	/* At most one RTO for every two drops (was two for every three). */
	assert_true(r.eng.c[EC_RTO] * 2 <= drops);
	assert_true(r.eng.c[EC_FLIGHT_SETTLED] > 0);
}

static void test_bus_factors(void **state)
{
	(void)state;
	assert_true(coll_bus_factor(COLL_ALLREDUCE, 8) == 2.0 * 7 / 8);
	assert_true(coll_bus_factor(COLL_ALLGATHER, 8) == 7.0 / 8);
	assert_true(coll_bus_factor(COLL_REDUCESCATTER, 8) == 7.0 / 8);
	assert_true(coll_bus_factor(COLL_ALLTOALL, 8) == 7.0 / 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_kind),
		cmocka_unit_test(test_under_loss),
		cmocka_unit_test(test_auto_rule),
		cmocka_unit_test(test_small_never_slower),
		cmocka_unit_test(test_small_beside_incast),
		cmocka_unit_test(test_ring_packed_never_slower),
		cmocka_unit_test(test_rd_acks_not_held),
		cmocka_unit_test(test_alltoall_probes),
		cmocka_unit_test(test_alltoall_lossy_settled),
		cmocka_unit_test(test_bus_factors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
