// SPDX-License-Identifier: MIT
/*
 * `mroc-sim cluster`: one collective (or a sweep of sizes) on the simulated
 * cluster, for each transport asked for, printed the way nccl-tests prints
 * (size, time, algbw, busbw) with the delta against the RoCEv2 baseline, and
 * the counters that explain it.  It lives in the library so that mroc_sim.c
 * only dispatches.  Simulated time is what is measured; the wall clock only
 * gives the simulator's speed.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliargs.h"
#include "cluster.h"
#include "cluster_cli.h"
#include "run_cli.h"
#include "simnet.h"
#include "wire.h"

#define MAX_SIZES	32

static const char cluster_usage[] =
"usage: mroc-sim cluster [OPTIONS]\n"
"\n"
"fabric (per plane: a leaf/spine network; every host has a port on every plane):\n"
"  --hosts N         hosts (64)              --planes N      planes, 1..8 (4)\n"
"  --leaves N        leaves per plane (8)    --spines N      spines per plane (8)\n"
"  --rate RATE       host port, bit/s (25G)  --core-rate RATE  leaf-spine (non-blocking)\n"
"  --delay NS        per cable (1000)        --queue SIZE    port buffer (512K)\n"
"  --ecn SIZE        CE threshold (64K)      --loss P        per packet, 0..1 (0)\n"
"  --core-loss P     per leaf-spine cable    --converge US   ECMP drops a failed hop (10000)\n"
"  --jitter US       each packet's delay on its host's uplink plus a uniform 0..US:\n"
"                    packets of a path overtake each other (0)\n"
"  --duplicate P     ... and it arrives twice with probability P, 0..1 (0)\n"
"  --pfc-xoff SIZE   rocev2-pfc: pause above (128K)\n"
"  --pfc-xon SIZE    rocev2-pfc: resume below (128K - 2 jumbo frames)\n"
"transport:\n"
"  --transport LIST  metaroce, rocev2-lossy (or rocev2), rocev2-qps, rocev2-pfc,\n"
"                    rocev2-qp-per-plane (default metaroce,rocev2)\n"
"  --qps K           QPs per connection for rocev2-qps (4)\n"
"  --paths N         MetaRoCE paths per QP (2 per plane, at most 16)\n"
"  --hints on|off    receiver rate hints (on)\n"
"  --rto-min US      engine's minimum RTO (200)\n"
"  --split SIZE      MetaRoCE: a small message posted alone goes in one part per\n"
"                    SIZE bytes, at most one per path, each on the path of least\n"
"                    RTT (32; 0 = by the MTU, on the path of most free window)\n"
"  --dup SIZE        MetaRoCE, with --split: such a message of at most SIZE bytes\n"
"                    also sends a copy of each part on another path (4K; 0 = never)\n"
"  --round-rtts N    MetaRoCE: a path's round counts as its length in N base RTTs\n"
"                    (1..4 of them) when its moves are judged (2; 0: as 1)\n"
"  --rack-srtt on|off MetaRoCE: a packet sent before one since acknowledged is lost\n"
"                    after its path's sRTT + sRTT/4 (on), or + max(sRTT/4, 4 RTTVAR)\n"
"                    (off, mrocd's default) (off)\n"
"  --hedge on|off    MetaRoCE: a resend that is a QP's tail also goes as a copy on\n"
"                    an idle path (on)\n"
"  --ib-timeout N    PFC transports: NIC local ACK timeout, 4.096 us x 2^N, 0..31 (18)\n"
"  --ib-retry N      PFC transports: NIC retries, 0..254 (7, NCCL_IB_RETRY_CNT)\n"
"job:\n"
"  --op OP           allreduce, allgather, reducescatter, alltoall, permutation,\n"
"                    incast (allreduce)\n"
"  --algo A          auto, ring, rd: recursive doubling (auto: the cheaper by\n"
"                    latency + bytes / NIC rate, rd only for 2^k ranks)\n"
"  --ranks N         ranks (every host)      --placement packed|fragmented|random\n"
"  --bytes SIZE      size (1M)               --sizes MIN:MAX  sweep, x4 per step\n"
"  --step N          sweep factor (4)        --msg SIZE      largest WR (1M)\n"
"  --senders N       incast senders (7)      --verify        real data, checked\n"
"  --iters N         the collective N times back to back, 1..100000 (1)\n"
"background traffic beside the job:\n"
"  --bg KIND         none, permutation, incast (none)\n"
"  --bg-load F       its share of each host's port rate, 0..1 (0.5)\n"
"  --bg-senders N    incast background senders (7)\n"
"failure:\n"
"  --fail spine|cable|downlink  --fail-plane N --fail-spine N --fail-leaf N\n"
"                    a spine, a leaf-spine cable, or its spine-to-leaf half\n"
"  --fail-at US      after the operation starts (0)\n"
"run:\n"
"  --seed N (1)      --limit MS (2000)       --csv FILE (appended)  --tag TEXT (CSV)\n"
"  -v                counters per run\n"
"  --flows FILE      per flow (permutation, alltoall, incast): ranks, hosts, when a\n"
"                    permutation's receiver had all, the sender's QP's paths summed\n"
"                    (packets, losses, timeouts, moves by reason, window cuts)\n"
"  --trace FILE      one line per packet between two hosts (--trace-hosts A,B;\n"
"                    0,1 by default) sent, dropped or delivered, from the start\n"
"  --trace-paths US  ... and every US the state of A's paths to B (window,\n"
"                    flight, RTT, alpha, losses, timeouts, cuts)\n"
"  --trace-waits     ... and each of their packets that a port queued behind\n"
"                    others: the port and the packets ahead (a 'behind' line)\n"
"  --clock-skew US   each host's engine clock ahead of the simulation's by a\n"
"                    random offset below US (0: one clock for all)\n"
"  --clock-drift PPM ... and faster or slower by up to PPM parts per million (0)\n"
"  --loss-seed N     which packets --loss drops, when not 0: the same routes and\n"
"                    engines as --seed, another draw of the loss (0: --seed's)\n"
"\n"
"Delta is (baseline time / time - 1) x 100 with the first transport listed as the\n"
"baseline: +30 means 30% faster than it.\n";

enum {
	O_HOSTS = 256, O_PLANES, O_LEAVES, O_SPINES, O_RATE, O_CORE_RATE, O_DELAY, O_QUEUE,
	O_ECN, O_LOSS, O_CORE_LOSS, O_CONVERGE, O_TRANSPORT, O_QPS, O_PATHS, O_HINTS,
	O_RTO_MIN, O_OP, O_RANKS, O_PLACEMENT, O_BYTES, O_SIZES, O_STEP, O_MSG, O_SENDERS,
	O_VERIFY, O_FAIL, O_FAIL_PLANE, O_FAIL_SPINE, O_FAIL_LEAF, O_FAIL_AT, O_SEED, O_LIMIT,
	O_CSV, O_TAG, O_IB_TIMEOUT, O_IB_RETRY, O_PFC_XOFF, O_PFC_XON, O_BG, O_BG_LOAD,
	O_BG_SENDERS, O_ITERS, O_ALGO, O_CLOCK_SKEW, O_CLOCK_DRIFT, O_LOSS_SEED, O_SPLIT,
	O_DUP, O_FLOWS, O_TRACE, O_TRACE_HOSTS, O_TRACE_PATHS, O_TRACE_WAITS, O_ROUND_RTTS,
	O_RACK_SRTT,
	O_HEDGE, O_JITTER, O_DUPLICATE,
};

static const struct option opts[] = {
	{ "hosts", required_argument, NULL, O_HOSTS },
	{ "planes", required_argument, NULL, O_PLANES },
	{ "leaves", required_argument, NULL, O_LEAVES },
	{ "spines", required_argument, NULL, O_SPINES },
	{ "rate", required_argument, NULL, O_RATE },
	{ "core-rate", required_argument, NULL, O_CORE_RATE },
	{ "delay", required_argument, NULL, O_DELAY },
	{ "queue", required_argument, NULL, O_QUEUE },
	{ "ecn", required_argument, NULL, O_ECN },
	{ "loss", required_argument, NULL, O_LOSS },
	{ "core-loss", required_argument, NULL, O_CORE_LOSS },
	{ "jitter", required_argument, NULL, O_JITTER },
	{ "duplicate", required_argument, NULL, O_DUPLICATE },
	{ "converge", required_argument, NULL, O_CONVERGE },
	{ "transport", required_argument, NULL, O_TRANSPORT },
	{ "qps", required_argument, NULL, O_QPS },
	{ "paths", required_argument, NULL, O_PATHS },
	{ "hints", required_argument, NULL, O_HINTS },
	{ "rto-min", required_argument, NULL, O_RTO_MIN },
	{ "op", required_argument, NULL, O_OP },
	{ "ranks", required_argument, NULL, O_RANKS },
	{ "placement", required_argument, NULL, O_PLACEMENT },
	{ "bytes", required_argument, NULL, O_BYTES },
	{ "sizes", required_argument, NULL, O_SIZES },
	{ "step", required_argument, NULL, O_STEP },
	{ "msg", required_argument, NULL, O_MSG },
	{ "senders", required_argument, NULL, O_SENDERS },
	{ "verify", no_argument, NULL, O_VERIFY },
	{ "fail", required_argument, NULL, O_FAIL },
	{ "fail-plane", required_argument, NULL, O_FAIL_PLANE },
	{ "fail-spine", required_argument, NULL, O_FAIL_SPINE },
	{ "fail-leaf", required_argument, NULL, O_FAIL_LEAF },
	{ "fail-at", required_argument, NULL, O_FAIL_AT },
	{ "seed", required_argument, NULL, O_SEED },
	{ "limit", required_argument, NULL, O_LIMIT },
	{ "csv", required_argument, NULL, O_CSV },
	{ "tag", required_argument, NULL, O_TAG },
	{ "ib-timeout", required_argument, NULL, O_IB_TIMEOUT },
	{ "ib-retry", required_argument, NULL, O_IB_RETRY },
	{ "pfc-xoff", required_argument, NULL, O_PFC_XOFF },
	{ "pfc-xon", required_argument, NULL, O_PFC_XON },
	{ "bg", required_argument, NULL, O_BG },
	{ "bg-load", required_argument, NULL, O_BG_LOAD },
	{ "bg-senders", required_argument, NULL, O_BG_SENDERS },
	{ "iters", required_argument, NULL, O_ITERS },
	{ "algo", required_argument, NULL, O_ALGO },
	{ "clock-skew", required_argument, NULL, O_CLOCK_SKEW },
	{ "clock-drift", required_argument, NULL, O_CLOCK_DRIFT },
	{ "loss-seed", required_argument, NULL, O_LOSS_SEED },
	{ "split", required_argument, NULL, O_SPLIT },
	{ "dup", required_argument, NULL, O_DUP },
	{ "round-rtts", required_argument, NULL, O_ROUND_RTTS },
	{ "rack-srtt", required_argument, NULL, O_RACK_SRTT },
	{ "hedge", required_argument, NULL, O_HEDGE },
	{ "flows", required_argument, NULL, O_FLOWS },
	{ "trace", required_argument, NULL, O_TRACE },
	{ "trace-hosts", required_argument, NULL, O_TRACE_HOSTS },
	{ "trace-paths", required_argument, NULL, O_TRACE_PATHS },
	{ "trace-waits", no_argument, NULL, O_TRACE_WAITS },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

struct cli {
	struct clu_config cfg;
	enum clu_transport tr[CLU__TRANSPORTS];
	int ntr;
	uint64_t sizes[MAX_SIZES];
	int nsizes;
	const char *csv;
	const char *tag;
	FILE *flows;			/* --flows: one line per flow and run */
	FILE *trace;			/* --trace: packets between trace_a and trace_b */
	uint32_t trace_a, trace_b;
	uint64_t sample_ns;		/* --trace-paths: trace_a's paths to trace_b this often */
	bool waits;			/* --trace-waits: and where their packets queued */
	struct cnet *cn;
	enum clu_transport cur;		/* the transport running (for the flows' lines) */
	const char *sweep;		/* --sizes, expanded once --step is known */
	bool verbose;
	bool senders_set;		/* --senders given (else 7, or every other rank if fewer) */
};

static int transports(struct cli *c, const char *arg)
{
	char buf[128], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", arg);
	c->ntr = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (c->ntr == CLU__TRANSPORTS || clu_transport_parse(t, &c->tr[c->ntr]))
			return -EINVAL;
		c->ntr++;
	}
	return c->ntr ? 0 : -EINVAL;
}

static int sweep(struct cli *c, const char *arg, uint64_t step)
{
	char buf[64], *colon;
	uint64_t lo, hi;

	snprintf(buf, sizeof(buf), "%s", arg);
	colon = strchr(buf, ':');
	if (!colon)
		return -EINVAL;
	*colon = 0;
	if (sim_parse_scaled(buf, 1024, &lo) || sim_parse_scaled(colon + 1, 1024, &hi) || !lo || lo > hi || step < 2)
		return -EINVAL;
	c->nsizes = 0;
	for (uint64_t s = lo; s <= hi && c->nsizes < MAX_SIZES; s *= step)
		c->sizes[c->nsizes++] = s;
	return 0;
}

static int fabric_opt(struct clu_config *cfg, int o, const char *arg)
{
	struct fab_config *f = &cfg->net.fab;
	uint64_t v = 0;
	double us;

	if (o == O_JITTER) {
		if (sim_parse_double(arg, 0, 1e6, &us))
			return -EINVAL;
		f->jitter_ns = (uint64_t)(us * 1e3);
		return 0;
	}
	if (o == O_DUPLICATE)
		return sim_parse_double(arg, 0, 1, &f->dup);
	if (o != O_LOSS && o != O_CORE_LOSS && sim_parse_scaled(arg, o == O_RATE || o == O_CORE_RATE ?
							1000 : 1024, &v))
		return -EINVAL;
	switch (o) {
	case O_HOSTS: f->nhosts = (uint32_t)v; break;
	case O_PLANES: f->nplanes = (uint32_t)v; break;
	case O_LEAVES: f->leaves = (uint32_t)v; break;
	case O_SPINES: f->spines = (uint32_t)v; break;
	case O_RATE: f->host_rate_bps = v; break;
	case O_CORE_RATE: f->core_rate_bps = v; break;
	case O_DELAY: f->delay_ns = v; break;
	case O_QUEUE: f->queue_bytes = v; break;
	case O_ECN: f->ecn_bytes = v; break;
	case O_LOSS: return sim_parse_double(arg, 0, 1, &f->loss);
	case O_CORE_LOSS: return sim_parse_double(arg, 0, 1, &f->core_loss);
	case O_CONVERGE: f->converge_ns = v * 1000; break;
	case O_PFC_XOFF: f->pfc_xoff_bytes = v; break;
	case O_PFC_XON: f->pfc_xon_bytes = v; break;
	default: return -EINVAL;
	}
	return 0;
}

/* --trace, --flows: a file written from the start (an earlier one given is closed). */
static int open_out(FILE **f, const char *path)
{
	if (*f)
		fclose(*f);
	*f = fopen(path, "w");
	if (!*f) {
		fprintf(stderr, "mroc-sim cluster: %s: %s\n", path, strerror(errno));
		return -EINVAL;
	}
	return 0;
}

/* "on" or "off" into *out; -EINVAL for anything else. */
static int on_off(const char *arg, bool *out)
{
	if (strcmp(arg, "on") && strcmp(arg, "off"))
		return -EINVAL;
	*out = !strcmp(arg, "on");
	return 0;
}

static int job_opt(struct cli *c, int o, const char *arg, uint64_t *step)
{
	struct clu_config *cfg = &c->cfg;
	enum coll_kind k;
	enum coll_algo a;
	enum clu_placement p;
	uint64_t v = 0;

	switch (o) {
	case O_TRANSPORT: return transports(c, arg);
	case O_HINTS:
		return on_off(arg, &cfg->net.engine.rate_hints);
	case O_RACK_SRTT:
		return on_off(arg, &cfg->net.engine.rack_reo_srtt);
	case O_HEDGE:
		return on_off(arg, &cfg->net.engine.tail_hedge);
	case O_OP:
		if (coll_kind_parse(arg, &k))
			return -EINVAL;
		cfg->kind = (uint8_t)k;
		return 0;
	case O_ALGO:
		if (coll_algo_parse(arg, &a))
			return -EINVAL;
		cfg->algo = (uint8_t)a;
		return 0;
	case O_PLACEMENT:
		if (clu_placement_parse(arg, &p))
			return -EINVAL;
		cfg->placement = (uint8_t)p;
		return 0;
	case O_SIZES: c->sweep = arg; return 0;
	case O_FAIL:
		if (!strcmp(arg, "spine"))
			cfg->failure = CLU_FAIL_SPINE;
		else if (!strcmp(arg, "cable"))
			cfg->failure = CLU_FAIL_CABLE;
		else if (!strcmp(arg, "downlink"))
			cfg->failure = CLU_FAIL_DOWNLINK;
		else
			return -EINVAL;
		return 0;
	case O_BG: {
		enum bg_kind b;

		if (bg_kind_parse(arg, &b))
			return -EINVAL;
		cfg->bg = (uint8_t)b;
		return 0;
	}
	case O_BG_LOAD:
		return sim_parse_double(arg, 0, 1, &cfg->bg_load);
	case O_CSV: c->csv = arg; return 0;
	case O_TRACE: return open_out(&c->trace, arg);
	case O_TRACE_PATHS:
		if (sim_parse_scaled(arg, 1000, &c->sample_ns) || !c->sample_ns)
			return -EINVAL;
		c->sample_ns *= 1000;
		return 0;
	case O_TRACE_WAITS: c->waits = true; return 0;
	case O_TRACE_HOSTS:
		return sscanf(arg, "%" SCNu32 ",%" SCNu32, &c->trace_a, &c->trace_b) == 2 ? 0 : -EINVAL;
	case O_FLOWS: return open_out(&c->flows, arg);
	case O_TAG: c->tag = arg; return 0;
	case O_VERIFY: cfg->verify = true; return 0;
	case O_LOSS: case O_CORE_LOSS: case O_JITTER: case O_DUPLICATE:
		return fabric_opt(cfg, o, arg);
	}
	if (sim_parse_scaled(arg, 1024, &v))
		return -EINVAL;
	switch (o) {
	case O_QPS: cfg->qps = (uint32_t)v; break;
	case O_IB_TIMEOUT:
		if (v > 31)
			return -EINVAL;
		cfg->nic_timeout_ns = clu_ib_timeout_ns((unsigned)v);
		break;
	case O_IB_RETRY:
		if (v > 254)
			return -EINVAL;
		cfg->nic_retry = (uint32_t)v;
		break;
	case O_PATHS: cfg->npaths = (uint8_t)v; break;
	case O_SPLIT:
		if (v % MROC_SPLIT_ALIGN || v > MROC_SPLIT_MAX)
			return -EINVAL;
		cfg->net.engine.split_unit = (uint32_t)v;
		break;
	case O_DUP:
		if (v > UINT32_MAX)
			return -EINVAL;
		cfg->net.engine.dup_max = (uint32_t)v;
		break;
	case O_ROUND_RTTS:
		if (v > 1000)
			return -EINVAL;
		cfg->net.engine.repath_round_rtts = (uint32_t)v;
		break;
	case O_RTO_MIN: sim_engine_rto_min(&cfg->net.engine, v * 1000); break;
	case O_CLOCK_SKEW: cfg->net.clock_skew_ns = v * 1000; break;
	case O_CLOCK_DRIFT:
		if (v > 1000)
			return -EINVAL;
		cfg->net.clock_drift_ppm = (uint32_t)v;
		break;
	case O_RANKS: cfg->nranks = (uint32_t)v; break;
	case O_BYTES: c->sizes[0] = v; c->nsizes = 1; break;
	case O_STEP: *step = v; break;
	case O_MSG: cfg->msg_bytes = (uint32_t)v; break;
	case O_SENDERS: cfg->senders = (uint32_t)v; c->senders_set = true; break;
	case O_BG_SENDERS: cfg->bg_senders = (uint32_t)v; break;
	case O_ITERS:
		if (!v || v > 100000)
			return -EINVAL;
		cfg->iters = (uint32_t)v;
		break;
	case O_FAIL_PLANE: cfg->fail_plane = (uint32_t)v; break;
	case O_FAIL_SPINE: cfg->fail_spine = (uint32_t)v; break;
	case O_FAIL_LEAF: cfg->fail_leaf = (uint32_t)v; break;
	case O_FAIL_AT: cfg->fail_after_ns = v * 1000; break;
	case O_SEED: cfg->seed = v; break;
	case O_LOSS_SEED: cfg->net.loss_seed = v; break;
	case O_LIMIT: cfg->time_limit_ns = v * 1000000ULL; break;
	default: return fabric_opt(cfg, o, arg);
	}
	return 0;
}

static const char csv_header[] =
	"tag,op,transport,hosts,planes,spines,placement,loss,hints,size,time_us,algbw_GBps,"
	"busbw_GBps,delta_pct,done,retx,lost,rto,repath,ce,tx_pkts,drop_tail,drop_random,"
	"drop_blackhole,maxq_core,maxq_down,imbalance,jain,flow_min_us,flow_max_us,events,wall_s,"
	"seed,pfc_pauses,pfc_paused_us,pfc_overflow,nic_waits,bg,bg_load,bg_achieved,iters,"
	"t_min_us,t_p50_us,t_p99_us,t_max_us,algo,lost_rack\n";

/* The background's delivered bytes over what it offered (1 = it got its load). */
static double bg_achieved(const struct clu_result *r)
{
	return r->bg.offered_bytes ? (double)r->bg.done_bytes / (double)r->bg.offered_bytes : 0;
}

/* The algorithm a stepped collective ran, "-" for the others. */
static const char *algo_of(const struct clu_config *cfg, const struct clu_result *r)
{
	enum coll_kind k = (enum coll_kind)cfg->kind;

	if (k != COLL_ALLREDUCE && k != COLL_ALLGATHER && k != COLL_REDUCESCATTER)
		return "-";
	return coll_algo_name((enum coll_algo)r->coll.algo);
}

static void csv_row(const struct cli *c, FILE *f, enum clu_transport t, uint64_t size,
		    const struct clu_result *r, double delta, double wall)
{
	const struct clu_config *cfg = &c->cfg;
	const struct fab_stats *fs = &r->net.fab;
	struct sim_link_stats pfc = { 0 };
	uint64_t drop[3] = { 0 };

	for (int k = 0; k < FAB__KINDS; k++) {
		link_stats_add(&pfc, &fs->kind[k]);
		drop[0] += fs->kind[k].dropped_tail;
		drop[1] += fs->kind[k].dropped_random;
		drop[2] += fs->kind[k].dropped_blackhole;
	}
	fprintf(f, "%s,%s,%s,%u,%u,%u,%s,%g,%s,%" PRIu64 ",%.3f,%.4f,%.4f,%.2f,%d,%" PRIu64
		",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f,%.4f,%.2f,%.2f,%" PRIu64 ",%.3f,%" PRIu64,
		c->tag ? c->tag : "", coll_kind_name(cfg->kind), clu_transport_name(t),
		cfg->net.fab.nhosts, cfg->net.fab.nplanes, cfg->net.fab.spines,
		clu_placement_name(cfg->placement), cfg->net.fab.loss,
		cfg->net.engine.rate_hints ? "on" : "off", size, r->coll.time_us,
		r->coll.algbw_gbps, r->coll.busbw_gbps, delta, r->coll.done,
		r->eng.c[EC_TX_RETX], r->eng.c[EC_LOST], r->eng.c[EC_RTO], r->eng.c[EC_REPATH],
		r->eng.c[EC_CE], r->net.hosts.tx_pkts, drop[0], drop[1], drop[2],
		fs->kind[FAB_LS].max_queue_bytes > fs->kind[FAB_SL].max_queue_bytes ?
		fs->kind[FAB_LS].max_queue_bytes : fs->kind[FAB_SL].max_queue_bytes,
		fs->kind[FAB_DOWN].max_queue_bytes, fs->core_imbalance, r->coll.jain,
		r->coll.flow_min_us, r->coll.flow_max_us, r->net.events, wall,
		cfg->seed);
	fprintf(f, ",%" PRIu64 ",%.3f,%" PRIu64 ",%" PRIu64 ",%s,%g,%.4f,%u,%.3f,%.3f,%.3f,%.3f",
		pfc.pfc_pauses, pfc.pfc_paused_ns / 1e3, pfc.pfc_overflow, r->net.hosts.nic_waits,
		bg_kind_name(cfg->bg), cfg->bg != BG_NONE ? cfg->bg_load : 0, bg_achieved(r),
		r->iters_done, r->t_min_us, r->t_p50_us, r->t_p99_us, r->t_max_us);
	fprintf(f, ",%s,%" PRIu64 "\n", algo_of(cfg, r), r->eng.c[EC_LOST_RACK]);
}

static void print_counters(const struct clu_result *r, double wall)
{
	const struct fab_stats *fs = &r->net.fab;
	static const char *const kn[FAB__KINDS] = { "up", "down", "leaf->spine", "spine->leaf" };

	printf("    engines: tx %" PRIu64 " pkts, retx %" PRIu64 ", dup %" PRIu64 ", lost %" PRIu64
	       ", rto %" PRIu64 " (spurious %" PRIu64 ", undone %" PRIu64 "), repath %" PRIu64
	       ", ce %" PRIu64 ", rtt held %" PRIu64 ", placed %" PRIu64 " B of %" PRIu64 "\n",
	       r->eng.c[EC_TX_PKTS], r->eng.c[EC_TX_RETX], r->eng.c[EC_TX_DUP], r->eng.c[EC_LOST],
	       r->eng.c[EC_RTO], r->eng.c[EC_RTO_SPURIOUS], r->eng.c[EC_RTO_UNDONE],
	       r->eng.c[EC_REPATH], r->eng.c[EC_CE], r->eng.c[EC_RTT_HELD],
	       r->payload_placed, r->coll.payload_bytes);
	printf("    repaths: timeout %" PRIu64 " loss %" PRIu64 " ce %" PRIu64 " slow %" PRIu64
	       " spread %" PRIu64 " explore %" PRIu64 "; looks %" PRIu64 " (busy %" PRIu64
	       "); back: slow %" PRIu64 " spread %" PRIu64 " explore %" PRIu64 "\n",
	       r->eng.c[EC_REPATH_TIMEOUT], r->eng.c[EC_REPATH_LOSS], r->eng.c[EC_REPATH_CE],
	       r->eng.c[EC_REPATH_SLOW], r->eng.c[EC_REPATH_SPREAD], r->eng.c[EC_REPATH_EXPLORE],
	       r->eng.c[EC_REPATH_LOOK], r->eng.c[EC_REPATH_LOOK_BUSY],
	       r->eng.c[EC_REPATH_SLOW_BACK], r->eng.c[EC_REPATH_SPREAD_BACK],
	       r->eng.c[EC_REPATH_EXPLORE_BACK]);
	for (int k = 0; k < FAB__KINDS; k++)
		printf("    %-11s: deliv %" PRIu64 " tail %" PRIu64 " random %" PRIu64 " bh %" PRIu64
		       " ce %" PRIu64 " maxq %" PRIu64 "\n", kn[k], fs->kind[k].delivered,
		       fs->kind[k].dropped_tail, fs->kind[k].dropped_random,
		       fs->kind[k].dropped_blackhole, fs->kind[k].marked_ce,
		       fs->kind[k].max_queue_bytes);
	for (int k = 0; k < FAB__KINDS; k++)
		if (fs->kind[k].pfc_pauses || fs->kind[k].pfc_overflow)
			printf("    %-11s: PFC pauses %" PRIu64 ", paused %.1f us, overflow %" PRIu64
			       ", max ingress %" PRIu64 " B\n", kn[k], fs->kind[k].pfc_pauses,
			       fs->kind[k].pfc_paused_ns / 1e3, fs->kind[k].pfc_overflow,
			       fs->kind[k].pfc_max_ingress);
	if (r->bg.flows)
		printf("    background: %u flows, %u QPs, offered %" PRIu64 " B, delivered %" PRIu64
		       " B (%.3f), %" PRIu64 " ticks skipped, %" PRIu64 " errors\n", r->bg.flows,
		       r->bg.qps, r->bg.offered_bytes, r->bg.done_bytes, bg_achieved(r),
		       r->bg.skipped, r->bg.errors);
	if (r->iters_done > 1)
		printf("    %u iterations: min %.2f p50 %.2f p99 %.2f max %.2f mean %.2f us\n",
		       r->iters_done, r->t_min_us, r->t_p50_us, r->t_p99_us, r->t_max_us,
		       r->t_mean_us);
	if (r->net.hosts.nic_waits)
		printf("    NICs held by a paused port %" PRIu64 " times\n", r->net.hosts.nic_waits);
	if (r->coll.jain > 0)
		printf("    incast: senders done from %.2f to %.2f us, Jain's index %.4f\n",
		       r->coll.flow_min_us, r->coll.flow_max_us, r->coll.jain);
	printf("    ECMP spread (busiest leaf->spine cable / mean) %.2f; %u QPs; max %u ranks/leaf;"
	       " %" PRIu64 " events in %.2f s = %.2f M events/s\n", fs->core_imbalance,
	       r->coll.qps, r->hosts_on_leaf_max, r->net.events, wall,
	       wall > 0 ? (double)r->net.events / wall / 1e6 : 0);
}

static const char flows_header[] =
	"# transport seed src dst src_host dst_host done_us paths sent retx lost rto "
	"moves timeout loss ce slow explore loss_cuts loss_trims delay_cuts rto_per_path "
	"uplink_queue_kb_per_plane\n";

/*
 * The leaf-spine links' utilisation over the operation (wire bytes at their
 * rate; the connection's few packets before it included): whether the core
 * was the bottleneck and stayed full.
 */
static void core_busy(struct cnet *cn, const struct coll *co, FILE *f)
{
	const struct fabric *fab = cnet_fabric(cn);
	const struct coll_result *r = coll_result(co);
	double secs = (double)(r->t_end - r->t_start) / 1e9, most = 0;
	unsigned over90 = 0, over75 = 0, n = 0;

	for (size_t i = fab->base[FAB_LS]; secs > 0 && i < fab->nlinks; i++, n++) {
		const struct sim_link *l = &fab->links[i];
		double u = (double)l->st.delivered_bytes * 8 / (double)l->cfg.rate_bps / secs;

		most = u > most ? u : most;
		over90 += u >= 0.9;
		over75 += u >= 0.75;
	}
	fprintf(f, "# core links: %u, busiest %.3f of its rate, %u at >= 0.9, %u at >= 0.75\n", n,
		most, over90, over75);
}

/* --flows: the operation's flows, each with its sender QP's paths summed. */
static void flows_report(struct cnet *cn, const struct coll *co, void *ctx)
{
	struct cli *c = ctx;
	struct coll_flow fl;

	core_busy(cn, co, c->flows);
	for (uint32_t i = 0; !coll_flow_get(co, i, &fl); i++) {
		const struct engine *eng = cnet_engine(cn, fl.src_host);
		struct engine_path_info sum = { 0 }, pi;
		char per[MROC_MAX_PATHS * 4 + 1] = "", *w = per, upq[FAB_MAX_PLANES * 8 + 1] = "";
		const struct fabric *fab = cnet_fabric(cn);
		unsigned n = 0;

		/* The standing queue a packet met at the sender's port of each plane. */
		w = upq;
		for (uint32_t p = 0; p < fab->cfg.nplanes; p++) {
			const struct sim_link_stats *st = &fab_up(fab, fl.src_host, p)->st;

			w += snprintf(w, (size_t)(upq + sizeof(upq) - w), "%s%.0f", p ? "," : "",
				      st->enqueued ? (double)st->queue_seen_bytes / st->enqueued / 1024 : 0);
		}
		w = per;
		for (unsigned p = 0; !engine_path_info(eng, fl.qpn, p, &pi); p++, n++) {
			sum.sent += pi.sent;
			sum.retx += pi.retx;
			sum.lost += pi.lost;
			sum.timeouts += pi.timeouts;
			sum.repaths += pi.repaths;
			sum.loss_cuts += pi.loss_cuts;
			sum.loss_trims += pi.loss_trims;
			sum.delay_cuts += pi.delay_cuts;
			for (int r = 0; r < ENGINE_REPATH__COUNT; r++)
				sum.repaths_why[r] += pi.repaths_why[r];
			w += snprintf(w, (size_t)(per + sizeof(per) - w), "%s%" PRIu64, p ? "," : "",
				      pi.timeouts);
		}
		fprintf(c->flows, "%s %" PRIu64 " %u %u %u %u %.2f %u %" PRIu64 " %" PRIu64 " %" PRIu64
			" %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
			" %" PRIu64 " %" PRIu64 " %" PRIu64 " %s %s\n", clu_transport_name(c->cur),
			c->cfg.seed, fl.src, fl.dst, fl.src_host, fl.dst_host, fl.t_done_ns / 1e3, n,
			sum.sent, sum.retx, sum.lost, sum.timeouts, sum.repaths,
			sum.repaths_why[ENGINE_REPATH_TIMEOUT], sum.repaths_why[ENGINE_REPATH_LOSS],
			sum.repaths_why[ENGINE_REPATH_CE], sum.repaths_why[ENGINE_REPATH_SLOW],
			sum.repaths_why[ENGINE_REPATH_EXPLORE], sum.loss_cuts, sum.loss_trims,
			sum.delay_cuts, per, upq);
	}
}

/*
 * --trace-waits: where a traced packet was queued behind others: the port
 * (its kind, ends and plane), when the one being sent is done, and each
 * packet ahead (hosts, opcode, flags, length): which hop of a route made it late,
 * and whose traffic (issue #23: a ring's parts behind other hops' ACKs).
 */
static void trace_behind(const struct cli *c, uint64_t now, const struct sim_pkt *pkt)
{
	static const char *const kinds[] = { "up", "down", "leaf-spine", "spine-leaf" };
	const struct sim_link *l = pkt->link;
	struct wire_pkt w;

	fprintf(c->trace, "%" PRIu64 " behind %s %u>%u plane %u done-in %" PRIu64 ":", now,
		kinds[fab_kind(cnet_fabric(c->cn), l)], l->src, l->dst, l->plane,
		l->busy && l->tx_done.time > now ? l->tx_done.time - now : 0);
	for (const struct sim_pkt *q = l->head; q && q != pkt; q = q->next) {
		bool ok = !wire_parse(q->data, q->len, &w, NULL);

		fprintf(c->trace, " %u>%u/%#x/%#x/%u", q->src, q->dst, ok ? w.hdr.opcode : 0,
			ok ? w.hdr.flags : 0, q->len);
	}
	fputc('\n', c->trace);
}

/* --trace: the packets between the two hosts asked for, either way. */
static void trace_pair(void *ctx, uint64_t now, enum sim_trace_what what, const struct sim_pkt *pkt)
{
	const struct cli *c = ctx;

	if ((pkt->src == c->trace_a && pkt->dst == c->trace_b) ||
	    (pkt->src == c->trace_b && pkt->dst == c->trace_a)) {
		sim_trace_pkt(c->trace, now, what, pkt);
		if (what == SIM_TR_WAIT)
			trace_behind(c, now, pkt);
	}
}

/* --trace-paths: a line per path of trace_a's QPs to trace_b, every sample_ns. */
static void trace_paths(struct cnet *cn, void *ctx)
{
	struct cli *c = ctx;
	const struct engine *eng = cnet_engine(cn, c->trace_a);
	uint32_t qpns[16];
	int n = engine_qp_list(eng, qpns, 16);

	for (int i = 0; i < n && i < 16; i++) {
		struct engine_qp_info qi;
		struct engine_path_info pi;

		if (engine_qp_info(eng, qpns[i], &qi) || qi.peer != c->trace_b || !qi.tx_bytes)
			continue;
		for (unsigned p = 0; !engine_path_info(eng, qpns[i], p, &pi); p++)
			fprintf(c->trace, "%" PRIu64 " path %u sport %u pwnd %u flight %u srtt %.1f "
				"rto %.1f alpha %.3f rate %.2f sent %" PRIu64 " lost %" PRIu64 " rto# %"
				PRIu64 " backoff %u%s cuts %" PRIu64 "/%" PRIu64 "/%" PRIu64 " moves %" PRIu64
				" una %u\n", cnet_now(cn), p, pi.sport, pi.pwnd_bytes, pi.inflight_bytes,
				pi.srtt_ns / 1e3, pi.rto_ns / 1e3, pi.dctcp_alpha_ppm / 1e6,
				pi.rate_bps / 1e9, pi.sent, pi.lost, pi.timeouts, pi.backoff,
				pi.timed_out ? " timedout" : "", pi.loss_cuts, pi.loss_trims,
				pi.delay_cuts, pi.repaths, qi.snd_una);
	}
	/* Until the run ends (its events outlive it, unrun, with the network). */
	if (cnet_schedule(cn, cnet_now(cn) + c->sample_ns, trace_paths, ctx))
		fprintf(c->trace, "# path samples stopped: no room for the event\n");
}

static void trace_setup(struct cnet *cn, void *ctx)
{
	struct cli *c = ctx;

	c->cn = cn;
	cnet_set_trace(cn, trace_pair, ctx);
	cnet_trace_waits(cn, c->waits);
	if (c->sample_ns)
		trace_paths(cn, ctx);
}

static uint32_t n_ranks(const struct clu_config *cfg)
{
	return cfg->nranks ? cfg->nranks : cfg->net.fab.nhosts;
}

static int run_all(struct cli *c)
{
	FILE *csv = NULL;
	int fails = 0;

	if (c->csv) {
		bool fresh;

		csv = fopen(c->csv, "a");
		if (!csv) {
			fprintf(stderr, "mroc-sim cluster: %s: %s\n", c->csv, strerror(errno));
			return 1;
		}
		fresh = ftell(csv) == 0;
		if (fresh)
			fputs(csv_header, csv);
	}
	printf("# %s, %u hosts, %u planes x %u leaves x %u spines, %s placement, loss %g, "
	       "hints %s, background %s (load %g), seed %" PRIu64 "\n",
	       coll_kind_name(c->cfg.kind), c->cfg.net.fab.nhosts,
	       c->cfg.net.fab.nplanes, c->cfg.net.fab.leaves, c->cfg.net.fab.spines,
	       clu_placement_name(c->cfg.placement), c->cfg.net.fab.loss,
	       c->cfg.net.engine.rate_hints ? "on" : "off", bg_kind_name(c->cfg.bg),
	       c->cfg.bg_load, c->cfg.seed);
	printf("# %12s %-19s %-4s %12s %12s %9s %9s %8s %7s %7s %6s\n", "size", "transport",
	       "algo", c->cfg.iters > 1 ? "p50(us)" : "time(us)", "p99(us)", "algbw", "busbw",
	       "delta%", "retx", "rto", "ok");
	for (int s = 0; s < c->nsizes; s++) {
		double base = 0;

		for (int t = 0; t < c->ntr; t++) {
			struct clu_config cfg = c->cfg;
			struct clu_result r;
			double w0, wall, delta = 0;
			int err;

			cfg.transport = (uint8_t)c->tr[t];
			cfg.bytes = c->sizes[s];
			c->cur = c->tr[t];
			w0 = sim_wall_now();
			err = clu_run(&cfg, &r);
			wall = sim_wall_now() - w0;
			/* Several iterations: the table's (and CSV's) time is their median. */
			if (r.iters_done > 1) {
				r.coll.time_us = r.t_p50_us;
				r.coll.algbw_gbps = (double)cfg.bytes / (r.t_p50_us * 1e3);
				r.coll.busbw_gbps = r.coll.algbw_gbps *
						    coll_bus_factor(cfg.kind, n_ranks(&cfg));
			}
			/* The first transport listed is the baseline of the others' delta. */
			if (t == 0 && !err)
				base = r.coll.time_us;
			else if (base > 0 && !err)
				delta = (base / r.coll.time_us - 1) * 100;
			printf("  %12" PRIu64 " %-19s %-4s %12.2f %12.2f %9.3f %9.3f %8.1f %7" PRIu64
			       " %7" PRIu64 " %6s\n", c->sizes[s], clu_transport_name(c->tr[t]),
			       algo_of(&cfg, &r), r.coll.time_us, r.iters_done > 1 ? r.t_p99_us : r.coll.time_us,
			       r.coll.algbw_gbps, r.coll.busbw_gbps, delta, r.eng.c[EC_TX_RETX],
			       r.eng.c[EC_RTO], err ? "FAIL" : "ok");
			if (err) {
				printf("    why: %s (%d)\n", r.why, err);
				fails++;
			}
			if (c->verbose)
				print_counters(&r, wall);
			if (csv)
				csv_row(c, csv, c->tr[t], c->sizes[s], &r, delta, wall);
		}
	}
	if (csv)
		fclose(csv);
	if (c->flows)
		fclose(c->flows);
	if (c->trace)
		fclose(c->trace);
	return fails ? 1 : 0;
}

int cluster_cmd(int argc, char **argv)
{
	struct cli c = { .ntr = 2, .tr = { CLU_ROCEV2, CLU_METAROCE }, .nsizes = 1 };
	uint64_t step = 4;
	int o;

	clu_config_default(&c.cfg);
	c.cfg.bg_load = 0.5;
	c.sizes[0] = c.cfg.bytes;
	optind = 1;
	while ((o = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		if (o == 'v') {
			c.verbose = true;
		} else if (o == 'h') {
			fputs(cluster_usage, stdout);
			return 0;
		} else if (o == '?' || job_opt(&c, o, optarg, &step)) {
			if (o != '?')
				fprintf(stderr, "mroc-sim cluster: bad value '%s'\n", optarg);
			fputs(cluster_usage, stderr);
			return 2;
		}
	}
	if (c.trace) {
		if (!c.trace_a && !c.trace_b)
			c.trace_b = 1;
		c.cfg.setup = trace_setup;
		c.cfg.setup_ctx = &c;
	}
	if (c.flows) {
		fputs(flows_header, c.flows);
		c.cfg.report = flows_report;
		c.cfg.report_ctx = &c;
	}
	if (c.sweep && sweep(&c, c.sweep, step)) {
		fprintf(stderr, "mroc-sim cluster: bad --sizes '%s'\n", c.sweep);
		return 2;
	}
	/* An incast has a receiver and up to every other rank sending. */
	if (!c.senders_set && c.cfg.senders >= n_ranks(&c.cfg))
		c.cfg.senders = n_ranks(&c.cfg) - 1;
	if (c.cfg.kind == COLL_INCAST && (!c.cfg.senders || c.cfg.senders >= n_ranks(&c.cfg))) {
		fprintf(stderr, "mroc-sim cluster: --senders must be 1..%u (one rank receives)\n",
			n_ranks(&c.cfg) - 1);
		return 2;
	}
	return run_all(&c);
}
