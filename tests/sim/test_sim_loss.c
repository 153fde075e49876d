// SPDX-License-Identifier: MIT
/*
 * Issue #16: the lone-loss signal.  A lost packet that was the last one in
 * flight on its path has nothing behind it on that path for the SACK to
 * expose; the engine finds it by time across the QP's paths (qp_ack.c's
 * rack_scan): a packet sent later on another path has been acknowledged,
 * and the lost one has had its own path's RTT and a reorder window.
 *
 *  - lone loss: small WRITEs, four at a time on four paths; one chosen
 *    packet is dropped once.  The transfer ends within a few RTTs of the
 *    lossless run's end, not an RTO (200 us) later: one loss found across
 *    paths, no timeout;
 *  - true tail: the very last packet dropped (nothing later is ever sent):
 *    the tail-loss probe recovers it, still without a timeout;
 *  - a collective's lone packets: recursive-doubling AllGather of 8 B on 32
 *    ranks at 1% loss, where each QP carries one packet per iteration and
 *    its paths may have no RTT sample yet: the probe borrows the host's RTT
 *    and the median iteration pays tens of microseconds, not the RTO;
 *  - skew: planes 1, 4, 12 and 30 us long, lossless, small WRITEs and bulk:
 *    not one loss declared, no retransmission but one probe (see there);
 *  - bulk tail: any one of a bulk WRITE's last 40 packets dropped: its last
 *    round asks for immediate ACKs, so the loss costs no delayed ACK's wait;
 *  - tails at 10 % random loss on bench-fabric's planes with hosts whose
 *    stalls hold the whole worker (mroc-sim run --like-fabric-held, issue
 *    #27): a bulk QP's probes answer the tail before the RTO;
 *  - tails in deep queues: the 64-host permutation on 16 paths a QP at 1 %
 *    loss, whose flows' lost last packets wait sRTT + sRTT/4 across paths
 *    with engine.h rack_reo_srtt, not sRTT + 4 RTTVAR (issue #23 target D).
 *
 * Deterministic: simulated time, fixed seeds, one exactly placed loss.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cluster.h"
#include "scenario.h"
#include "wire.h"

#define USEC	1000ULL

/* Drop the nth data packet (first transmissions counted from 1) host 0 sends, once. */
struct dropper {
	uint64_t nth;
	uint64_t seen;
	uint64_t dropped;
};

/* Whether pkt is a first transmission of data by host 0 (parsed into w). */
static bool first_data_of_0(const struct sim_pkt *pkt, struct wire_pkt *w)
{
	enum wire_err why;

	return pkt->src == 0 && !wire_parse(pkt->data, pkt->len, w, &why) &&
	       mroc_op_is_data(w->hdr.opcode) && !(w->hdr.flags & MROC_F_RETX);
}

static bool drop_nth(void *ctx, const struct sim_pkt *pkt)
{
	struct dropper *d = ctx;
	struct wire_pkt w;

	if (!first_data_of_0(pkt, &w))
		return false;
	if (++d->seen != d->nth || d->dropped)
		return false;
	d->dropped++;
	return true;
}

/* 256 WRITEs of 512 B, four outstanding, four paths on four planes. */
static void small_writes(struct scn_config *cfg)
{
	scn_config_bench(cfg);
	cfg->planes = 4;
	cfg->wl.npaths = 4;
	cfg->wl.msg_bytes = 512;
	cfg->wl.total_bytes = 256 * 512;
	cfg->wl.outstanding = 4;
	cfg->seed = 3;
}

static void run(struct scn_config *cfg, struct dropper *d, struct scn_result *r)
{
	if (d) {
		cfg->drop = drop_nth;
		cfg->drop_ctx = d;
	}
	assert_int_equal(scn_run(cfg, r), 0);
	assert_true(r->wl.done);
}

static uint64_t eng(const struct scn_result *r, enum engine_counter c)
{
	return r->eng[0].c[c] + r->eng[1].c[c];
}

/* The small WRITEs with their nth data packet dropped: how much later they end. */
static uint64_t late_by_drop(uint64_t nth, struct scn_result *lossy)
{
	static struct scn_result clean;
	struct scn_config cfg;
	struct dropper d = { .nth = nth };

	small_writes(&cfg);
	run(&cfg, NULL, &clean);
	small_writes(&cfg);
	run(&cfg, &d, lossy);
	assert_int_equal(d.dropped, 1);
	return lossy->wl.t_last_cqe - clean.wl.t_last_cqe;
}

static void test_lone_loss(void **state)
{
	static struct scn_result lossy;
	uint64_t late;

	(void)state;
	late = late_by_drop(101, &lossy);
	print_message("lone loss: done %.1f us after the lossless run (base RTT ~6 us); "
		      "lost %" PRIu64 " (across paths %" PRIu64 "), retx %" PRIu64 ", rto %" PRIu64
		      "\n", (double)late / USEC, eng(&lossy, EC_LOST), eng(&lossy, EC_LOST_RACK),
		      eng(&lossy, EC_TX_RETX), eng(&lossy, EC_RTO));
	assert_int_equal(eng(&lossy, EC_RTO), 0);
	assert_int_equal(eng(&lossy, EC_LOST_RACK), 1);
	assert_int_equal(eng(&lossy, EC_TX_RETX), 1);
	/*
	 * About an RTT: well under the probe's 2 SRTT + 20 us ACK delay (28.6 us
	 * late without the detector), far under the RTO.
	 */
	assert_true(late < 20 * USEC);
}

static void test_true_tail(void **state)
{
	static struct scn_result lossy;
	uint64_t late;

	(void)state;
	late = late_by_drop(256, &lossy);
	print_message("true tail: done %.1f us after the lossless run; retx %" PRIu64
		      ", rto %" PRIu64 "\n", (double)late / USEC, eng(&lossy, EC_TX_RETX),
		      eng(&lossy, EC_RTO));
	assert_int_equal(eng(&lossy, EC_RTO), 0);
	/* The probe after 2 SRTT (the packet asked for an immediate ACK), then an RTT. */
	assert_true(late < 20 * USEC);
}

static void test_collective_lone(void **state)
{
	static struct clu_result r;
	struct clu_config cfg;

	(void)state;
	clu_config_default(&cfg);
	cfg.kind = COLL_ALLGATHER;
	cfg.algo = COLL_ALGO_RD;
	cfg.nranks = 32;
	cfg.bytes = 8;
	cfg.iters = 10;
	cfg.net.fab.loss = 0.01;
	cfg.seed = 2;
	assert_int_equal(clu_run(&cfg, &r), 0);
	print_message("AllGather 8 B, 32 ranks, 1%% loss: p50 %.1f us p99 %.1f us (lossless 16.9), "
		      "retx %" PRIu64 " rto %" PRIu64 "\n", r.t_p50_us, r.t_p99_us,
		      r.eng.c[EC_TX_RETX], r.eng.c[EC_RTO]);
	/*
	 * Every iteration here loses a packet or two; before, each cost the 200 us
	 * RTO.  At most 4 RTOs in the 10 iterations: the connection handshake's
	 * RTU (#24, engine/cm_half.c) moves which packets the loss takes.  Seeds
	 * 1-12 gave 1,4,0,3,0,1,0,0,3,0,0,2 RTOs with it (14 in all; session 9
	 * measured 3,2,2,1,3,0,3,3,3,0,2,0 without, 22 in all): seed 2 went from
	 * 2 to 4, the others did not get worse.
	 */
	assert_true(r.t_p50_us < 60);
	assert_true(r.eng.c[EC_RTO] <= 4);
}

static void skewed(struct scn_config *cfg)
{
	static const uint64_t delay_us[4] = { 1, 4, 12, 30 };

	for (int p = 0; p < 4; p++)
		cfg->plane_delay_ns[p] = delay_us[p] * USEC;
}

static void test_skew_lossless(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	for (uint64_t seed = 1; seed <= 3; seed++) {
		small_writes(&cfg);
		cfg.seed = seed;
		cfg.wl.seed = seed;
		skewed(&cfg);
		run(&cfg, NULL, &r);
		print_message("skew, small WRITEs, seed %" PRIu64 ": retx %" PRIu64 " lost %" PRIu64
			      "\n", seed, eng(&r, EC_TX_RETX), eng(&r, EC_LOST));
		/*
		 * No loss declared, so nothing resent as lost.  The one
		 * retransmission is path.c's tail-loss probe: the 30 us plane's
		 * first packet borrows a 2 us sibling's RTT for its probe time
		 * and is copied once (the same without the detector).
		 */
		assert_int_equal(eng(&r, EC_LOST), 0);
		assert_int_equal(eng(&r, EC_LOST_RACK), 0);
		assert_true(eng(&r, EC_TX_RETX) <= 1);

		scn_config_bench(&cfg);
		cfg.planes = 4;
		cfg.wl.npaths = 4;
		cfg.wl.total_bytes = 16ULL << 20;
		cfg.seed = seed;
		cfg.wl.seed = seed;
		skewed(&cfg);
		run(&cfg, NULL, &r);
		print_message("skew, 16 MiB bulk, seed %" PRIu64 ": retx %" PRIu64 " lost %" PRIu64
			      ", %.1f Gbit/s\n", seed, eng(&r, EC_TX_RETX), eng(&r, EC_LOST),
			      r.goodput_gbps);
		assert_int_equal(eng(&r, EC_TX_RETX), 0);
		assert_int_equal(eng(&r, EC_LOST), 0);
	}
}

/*
 * One bulk WRITE of 1 MiB on eight paths over four planes (4 KiB MTU: 256
 * packets), the NIC at half the planes' rate: the paths' windows are not
 * full, so their last packets do not ask for an ACK by filling them.
 */
static void bulk_write(struct scn_config *cfg)
{
	scn_config_bench(cfg);
	cfg->planes = 4;
	cfg->wl.npaths = 8;
	cfg->wl.msg_bytes = 1 << 20;
	cfg->wl.total_bytes = 1 << 20;
	cfg->wl.outstanding = 1;
	cfg->nic_rate_bps = cfg->planes * cfg->plane_rate_bps / 2;
	cfg->seed = 3;
}

/*
 * Issue #23: each of the last 40 packets of a bulk WRITE dropped once (a run
 * each): the WRITE ends less than 20 us after the lossless run.  The last
 * packet of each path has nothing after it on its path; before its packets
 * asked for an immediate ACK (qp_tx_path.c bulk_tail), the cross-path rule gave
 * each a delayed ACK's allowance on top of sRTT + 4 RTTVAR and those
 * WRITEs ended 28-53 us late (base RTT ~6 us).
 */
static void test_bulk_tail(void **state)
{
	static struct scn_result clean, lossy;
	struct scn_config cfg;
	int64_t worst = 0;
	uint64_t npkts;

	(void)state;
	bulk_write(&cfg);
	run(&cfg, NULL, &clean);
	npkts = eng(&clean, EC_TX_DATA);
	assert_int_equal(eng(&clean, EC_TX_RETX), 0);
	for (uint64_t nth = npkts - 40; nth < npkts; nth++) {
		struct dropper d = { .nth = nth };
		int64_t late;

		bulk_write(&cfg);
		run(&cfg, &d, &lossy);
		assert_int_equal(d.dropped, 1);
		assert_int_equal(eng(&lossy, EC_RTO), 0);
		late = (int64_t)(lossy.wl.t_last_cqe - clean.wl.t_last_cqe);
		worst = late > worst ? late : worst;
		if (late >= (int64_t)(20 * USEC))
			print_message("packet %" PRIu64 " of %" PRIu64 " dropped: %.1f us late\n", nth,
				      npkts, (double)late / USEC);
		assert_true(late < (int64_t)(20 * USEC));
	}
	print_message("bulk tail: any of the last 40 of %" PRIu64 " packets dropped: at most "
		      "%.1f us late\n", npkts, (double)worst / USEC);
}

/* Count host 0's first transmissions of data, and those that ask for an immediate ACK. */
struct req_count {
	uint64_t data;
	uint64_t ack_req;
};

static bool count_req(void *ctx, const struct sim_pkt *pkt)
{
	struct req_count *c = ctx;
	struct wire_pkt w;

	if (!first_data_of_0(pkt, &w))
		return false;
	c->data++;
	c->ack_req += !!(w.hdr.flags & MROC_F_ACK_REQ);
	return false;
}

/*
 * The RoCEv2 baseline keeps a RoCE NIC's ACK requests: the last-round rule
 * above is MetaRoCE's (the baseline has no probe and no cross-path rule for
 * it to speed up).  A lossless 1 MiB WRITE on one path: the message's last
 * packet asks, not the whole last round (1 of 256 packets; with the rule
 * 7).  MetaRoCE's last round still asks (8 paths: 22 of 256).
 */
static void test_bulk_tail_baseline(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;
	struct req_count roce = { 0 }, mroc = { 0 };

	(void)state;
	bulk_write(&cfg);
	cfg.planes = 1;
	cfg.wl.npaths = 1;
	cfg.wl.mode = MROC_MODE_ROCEV2;
	cfg.nic_rate_bps = cfg.plane_rate_bps;
	cfg.drop = count_req;
	cfg.drop_ctx = &roce;
	assert_int_equal(scn_run(&cfg, &r), 0);
	assert_true(r.wl.done);
	bulk_write(&cfg);
	cfg.drop = count_req;
	cfg.drop_ctx = &mroc;
	assert_int_equal(scn_run(&cfg, &r), 0);
	assert_true(r.wl.done);
	print_message("ACK_REQ on first transmissions: rocev2 %" PRIu64 " of %" PRIu64
		      ", metaroce %" PRIu64 " of %" PRIu64 "\n", roce.ack_req, roce.data,
		      mroc.ack_req, mroc.data);
	assert_true(roce.data >= 256 && mroc.data >= 256);
	assert_true(roce.ack_req <= 2);
	assert_true(mroc.ack_req >= 16);
}

/*
 * 10 % random loss both ways on bench-fabric's planes (--like-fabric-held:
 * the model with the real fabric's RTOs, 2.8-3.7 per 10,000 data packets
 * there), 96 MiB, seed 2, 4 and 8 paths: a path's window is a few packets,
 * so its whole tail and the ACKs of it are lost now and then, and a probe
 * goes unanswered one time in five.  With three probes before the RTO,
 * 10 and 27 RTOs (2.9 and 7.9 per 10,000 data packets), each a window of
 * one and a move, and 0.959 / 0.973 of capacity; with five on a lossy path
 * of a QP that has new data to send (path.c path_probe_max), 1 and 1 RTO,
 * 0.996 / 0.995.  (Seeds 1 and 3 with 4 paths keep two paths on one plane
 * the whole run, RTOs or not: 0.88 and 0.86 with none, where 6-7 RTOs'
 * random moves had found the free plane now and then: 0.88 and 0.91.)
 */
static void test_tail_probes_held_hosts(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	for (uint8_t paths = 4; paths <= 8; paths += 4) {
		const uint64_t *c = r.eng[0].c;
		double rate;

		scn_config_default(&cfg);
		scn_config_like_fabric_held(&cfg);
		cfg.wl.npaths = paths;
		cfg.wl.total_bytes = 96ULL << 20;
		cfg.loss = 0.1;
		cfg.seed = 2;
		assert_int_equal(scn_run(&cfg, &r), 0);
		assert_true(r.wl.done);
		rate = 1e4 * (double)c[EC_RTO] / (double)c[EC_TX_DATA];
		print_message("held hosts, %u paths, 10%% loss: %.3f of capacity, %" PRIu64
			      " RTOs (%.2f per 10k data packets), %" PRIu64 " lost\n", paths,
			      r.goodput_gbps / r.capacity_gbps, c[EC_RTO], rate, c[EC_LOST]);
		assert_true(c[EC_LOST] > 2000);
		assert_true(rate < 1.0);
		assert_true(r.goodput_gbps >= 0.98 * r.capacity_gbps);
	}
}

/*
 * Issue #23 target D: the 64-host permutation, 4 MiB a flow, 16 paths a QP,
 * at 1 % loss against its lossless run, seeds 1-8.  Every flow ends
 * application-limited with some of its last packets lost, found by the
 * cross-path rule; under the permutation's queues a path's RTTVAR is a
 * third of its sRTT and more, so with sRTT + 4 RTTVAR (rack_reo_srtt off,
 * mrocd's default) the lossy runs took 1.076 / 1.130 / 1.260 times as long
 * as the lossless (seeds 1-3, mean 1.155); with sRTT + sRTT/4, 0.996 /
 * 1.046 / 1.105 (mean 1.049).
 *
 * The rule copies packets that were only late, too (lossless: ~16,000
 * declared lost of 65,536 sent).  Their ACKs echo send times the path's
 * echo floor has passed: refused as bad echoes (244-355 a run), the rule's
 * wait never learnt their long RTTs.  Known as late (qp_ack.c rack_late)
 * they are samples: half as many declared, 1 bad echo a run, and the
 * lossless and lossy runs both faster (lossy 634 / 667 / 633 us -> 627 /
 * 611 / 594).
 *
 * A seed's ratio is one draw of the fabric's trajectory: any change to
 * what is sent (session 27: CM copies on other planes) moves it by up to
 * 0.1 either way (seed 1: x1.093 -> x1.147, seed 7 x1.290 -> x0.995;
 * means over seeds 1-16 1.062 and 1.050).  So the figures are the mean and
 * the worst of 8 seeds, with room for such a draw (seeds 1-8: mean 1.073,
 * worst 1.290 before it, 1.042 and 1.147 after), and the rule's gain over
 * their sum (0.831 of the 4 RTTVAR runs' time).
 */
static void test_tail_in_queues(void **state)
{
	static struct clu_result r;
	struct clu_config cfg;
	double sum = 0, worst = 0, on = 0, off = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= 8; seed++) {
		double t0, t1, t_off;

		clu_config_default(&cfg);
		cfg.kind = COLL_PERMUTATION;
		cfg.bytes = 4 << 20;
		cfg.npaths = 16;
		cfg.seed = seed;
		cfg.net.engine.rack_reo_srtt = true;
		assert_int_equal(clu_run(&cfg, &r), 0);
		t0 = r.coll.time_us;
		print_message("lossless: %" PRIu64 " declared lost across paths, %" PRIu64 " of them "
			      "late, %" PRIu64 " bad echoes, %" PRIu64 " resent\n",
			      r.eng.c[EC_LOST_RACK], r.eng.c[EC_LOST_RACK_LATE],
			      r.eng.c[EC_RX_BAD_ECHO], r.eng.c[EC_TX_RETX]);
		/* The late ones are known as such: their ACKs are samples, not bad echoes. */
		assert_true(r.eng.c[EC_LOST_RACK_LATE] > 0);
		assert_true(r.eng.c[EC_RX_BAD_ECHO] * 100 < r.eng.c[EC_LOST_RACK_LATE]);
		cfg.net.fab.loss = 0.01;
		assert_int_equal(clu_run(&cfg, &r), 0);
		t1 = r.coll.time_us;
		assert_true(r.eng.c[EC_LOST_RACK] > 0);
		cfg.net.engine.rack_reo_srtt = false;
		assert_int_equal(clu_run(&cfg, &r), 0);
		t_off = r.coll.time_us;
		print_message("permutation 4 MiB, 16 paths, seed %" PRIu64 ": lossless %.1f us, "
			      "1%% loss %.1f (x%.3f; with 4 RTTVAR %.1f, x%.3f)\n", seed, t0, t1,
			      t1 / t0, t_off, t_off / t0);
		sum += t1 / t0;
		worst = t1 / t0 > worst ? t1 / t0 : worst;
		on += t1;
		off += t_off;
	}
	print_message("mean x%.3f, worst x%.3f; the rule's runs %.3f of the 4 RTTVAR ones\n",
		      sum / 8, worst, on / off);
	assert_true(sum / 8 < 1.10);
	assert_true(worst < 1.35);
	assert_true(on < 0.9 * off);
}

/*
 * Packets that overtake each other on a path (a jitter of several packet
 * times: no path is FIFO) and packets that arrive twice, beside random loss,
 * in both modes, with every op type and FETCH_ADDs: every byte lands where
 * it belongs, every READ's data and every FETCH_ADD is applied once (the
 * simulator checks each returned value and the counter's sum), and the
 * receivers count the copies as duplicates.  The simulator had neither
 * before session 31; an outside review's harness had jitter.
 */
static void test_reordered_and_duplicated(void **state)
{
	static const uint8_t modes[] = { MROC_MODE_METAROCE, MROC_MODE_ROCEV2 };
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	for (unsigned m = 0; m < 2; m++)
		for (uint64_t seed = 1; seed <= 3; seed++) {
			scn_config_default(&cfg);
			cfg.wl.mode = modes[m];
			cfg.wl.npaths = modes[m] == MROC_MODE_METAROCE ? 4 : 1;
			for (unsigned op = 0; op < WL_OP__COUNT; op++)
				cfg.wl.mix[op] = 1;
			cfg.wl.msg_bytes = 16384;
			cfg.wl.total_bytes = 4ULL << 20;
			cfg.loss = 0.01;
			cfg.jitter_ns = 5000;
			cfg.dup = 0.05;
			cfg.seed = seed;
			run(&cfg, NULL, &r);
			print_message("%s seed %" PRIu64 ": %" PRIu64 " ops, %" PRIu64 " copies "
				      "delivered, rx_dup %" PRIu64 ", retx %" PRIu64 ", done at %.1f us\n",
				      m ? "rocev2" : "metaroce", seed, r.wl.ops_done,
				      r.sim.links.duplicated, eng(&r, EC_RX_DUP),
				      eng(&r, EC_TX_RETX), (double)r.wl.t_last_cqe / 1e3);
			assert_int_equal(r.wl.ops_done, r.wl.ops_total);
			assert_true(r.sim.links.duplicated > 0);
			assert_true(eng(&r, EC_RX_DUP) > 0);
		}
}

/*
 * A route that reorders (each packet's delay plus up to 20 us at random,
 * against a base RTT of ~8 us): the paths see their late packets arrive
 * (EC_REORDER) and declare losses by time with the lateness seen, not by
 * dupthresh later PSNs.  Before (session 31), every late packet beyond
 * dupthresh was declared lost, resent and cut its window: 0.40 and 0.54
 * of the capacity on these seeds, 0.65 since, 0.650 and 0.887 since
 * session 32's looks (test_reordering_route_looks); 0.99-1.08 in order.
 */
static void test_reordering_route(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	for (uint64_t seed = 1; seed <= 2; seed++) {
		scn_config_default(&cfg);
		cfg.wl.total_bytes = 64ULL << 20;
		cfg.jitter_ns = 20000;
		cfg.seed = seed;
		run(&cfg, NULL, &r);
		print_message("jitter 20 us, seed %" PRIu64 ": %.3f of the capacity, reorder %"
			      PRIu64 ", lost %" PRIu64 ", retx %" PRIu64 "\n", seed,
			      r.goodput_gbps / r.capacity_gbps, eng(&r, EC_REORDER),
			      eng(&r, EC_LOST), eng(&r, EC_TX_RETX));
		assert_int_equal(r.wl.ops_done, r.wl.ops_total);
		assert_true(eng(&r, EC_REORDER) > 0);
		assert_true(r.goodput_gbps > 0.6 * r.capacity_gbps);
	}
}

/*
 * Paths hashed onto one plane of a route that reorders (jitter 20 us on
 * ~8 us routes, WRITEs only): a path moves off the shared plane only after
 * its looks find the new route clear, and an idle route's samples spread
 * as far as its packets overtake each other.  Judged by half the minimum
 * RTT, every look read busy: two paths stayed on one plane, 0.495 of the
 * capacity on each of these seeds (session 32); judged by the path's
 * reorder window, 0.705-0.757.  Also: the ACK of a packet that fills a
 * hole leaves at once, so the window measures the route, not ack_delay.
 */
static void test_reordering_route_looks(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	for (uint64_t seed = 1; seed <= 3; seed++) {
		scn_config_default(&cfg);
		memset(cfg.wl.mix, 0, sizeof(cfg.wl.mix));
		cfg.wl.mix[WL_WRITE] = 1;
		cfg.jitter_ns = 20000;
		cfg.seed = seed;
		run(&cfg, NULL, &r);
		print_message("jitter 20 us, WRITEs, seed %" PRIu64 ": %.3f of the capacity, "
			      "looks %" PRIu64 " (busy %" PRIu64 "), moves %" PRIu64 "\n", seed,
			      r.goodput_gbps / r.capacity_gbps, eng(&r, EC_REPATH_LOOK),
			      eng(&r, EC_REPATH_LOOK_BUSY), eng(&r, EC_REPATH));
		assert_int_equal(r.wl.ops_done, r.wl.ops_total);
		assert_true(eng(&r, EC_REPATH_LOOK_BUSY) < eng(&r, EC_REPATH_LOOK));
		assert_true(r.goodput_gbps > 0.65 * r.capacity_gbps);
	}
}

/*
 * Routes that keep order see no reordering, whatever else happens: loss,
 * a plane dying under the transfer (timeouts, moves, packets of the route
 * a path left arriving after the new route's), busy hosts' looks.
 */
static void test_in_order_no_reorder(void **state)
{
	static struct scn_result r;
	struct scn_config cfg;

	(void)state;
	for (unsigned c = 0; c < 3; c++) {
		scn_config_default(&cfg);
		cfg.wl.total_bytes = 32ULL << 20;
		cfg.seed = 2;
		if (c == 0)
			cfg.loss = 0.05;
		if (c == 1) {
			cfg.blackhole_plane = 1;
			cfg.blackhole_at_ns = 300000;
		}
		if (c == 2)
			scn_config_like_fabric_busy(&cfg);
		run(&cfg, NULL, &r);
		print_message("case %u: reorder %" PRIu64 ", lost %" PRIu64 ", repath %" PRIu64 "\n",
			      c, eng(&r, EC_REORDER), eng(&r, EC_LOST), eng(&r, EC_REPATH));
		assert_int_equal(r.wl.ops_done, r.wl.ops_total);
		assert_int_equal(eng(&r, EC_REORDER), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lone_loss),
		cmocka_unit_test(test_true_tail),
		cmocka_unit_test(test_collective_lone),
		cmocka_unit_test(test_skew_lossless),
		cmocka_unit_test(test_bulk_tail),
		cmocka_unit_test(test_bulk_tail_baseline),
		cmocka_unit_test(test_tail_probes_held_hosts),
		cmocka_unit_test(test_tail_in_queues),
		cmocka_unit_test(test_reordered_and_duplicated),
		cmocka_unit_test(test_reordering_route),
		cmocka_unit_test(test_reordering_route_looks),
		cmocka_unit_test(test_in_order_no_reorder),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
