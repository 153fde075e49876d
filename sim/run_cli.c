// SPDX-License-Identifier: MIT
/*
 * `mroc-sim run` and `mroc-sim incast`: the options of one configurable
 * transfer (run_opt, shared by both: incast takes run's fabric and
 * workload options), and the printing of its result, path state, packet
 * trace and counters.  mroc_sim.c dispatches to them and prints the help
 * text whose run and incast sections (run_cli_usage) are here.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliargs.h"
#include "incast.h"
#include "run_cli.h"
#include "scenario.h"

#define MSEC		1000000ULL

const char run_cli_usage[] =
"run options (defaults: the bench fabric, a mixed workload):\n"
"  --planes N        planes (4)            --rate RATE     per plane, bit/s (25G)\n"
"  --nic RATE        NIC rate (sum)        --delay NS      propagation (2000)\n"
"  --queue SIZE      drop-tail (512K)      --ecn SIZE      marking threshold (64K)\n"
"  --loss P          random loss, 0..1     --route hash|path|linux\n"
"  --plane-loss N:P  plane N loses P instead of --loss (both ways; repeatable)\n"
"  --jitter US       each packet's delay plus a uniform 0..US on every plane, both\n"
"                    ways: packets of a path overtake each other (0)\n"
"  --duplicate P     each packet arrives twice with probability P, 0..1 (0)\n"
"  --ecmp-net N      --route linux: hosts at 10.N.1.h / 10.N.2.1 (from --seed)\n"
"  --ecmp-seed N     --route linux: the leaves' fib_multipath_hash_seed (12345)\n"
"  --mode metaroce|rocev2                  --paths N       paths per QP (4)\n"
"  --mtu N           payload bytes (4096)  --bytes SIZE    total (64M)\n"
"  --msg SIZE        per WR (64K)          --outstanding N WRs in flight (16)\n"
"  --msg-min SIZE    random sizes in [msg-min, msg] (0 = fixed)\n"
"  --mix W,WI,S,R[,A] op weights (1,1,1,1,0; A: 8-byte FETCH_ADDs)\n"
"  --blackhole PLANE@US[+US]  plane dies at US (and comes back after +US)\n"
"  --settle US       after-failure window start (1000)\n"
"  --clock-skew US   each host's engine clock ahead of the simulation's by a\n"
"                    random offset below US (0: one clock for both)\n"
"  --clock-drift PPM ... and faster or slower by up to PPM parts per million (0)\n"
"  --rto-min US      engine's minimum RTO (default 200)\n"
"  --rto-init US     engine's first RTO\n"
"  --burst SIZE      planes shaped by a token bucket this deep (TBF), not a link\n"
"  --ecn-virtual     mark CE on a virtual queue in front of the planes, blind to\n"
"                    the TBF's bucket, as scripts/fabric's impair.bpf.c does\n"
"  --loss-first      random loss before the queue (as tc on the fabric), not on the wire\n"
"  --daemon          mrocd's engine defaults (no link rate: no rate hints)\n"
"  --host-delay US@MS  every ACK delayed US more from MS on (a busy host)\n"
"  --host-rx POLL,STALL,EVERY[,hold]  (us) each host's worker takes its ring\n"
"                    every POLL and is off its CPU for STALL about every EVERY\n"
"                    (hold: its timers and sends wait out the stall too)\n"
"  --like-fabric     bench-fabric's fabric-bound set-up (rates, TBF, ECN, the leaves'\n"
"                    hash, busy hosts, daemon timers)\n"
"  --like-fabric-busy  --like-fabric with hosts as busy as the real runs' (a poll\n"
"                    every 50 us, 500 us off the CPU about every 2 ms): their CE\n"
"                    share, alpha and windows\n"
"  --like-fabric-held  --like-fabric whose stalls hold the whole worker (timers,\n"
"                    sends): the real fabric's RTOs at 10 % loss\n"
"  --peer-window N   data packets in flight to the peer host (mrocd's\n"
"                    transport.peer_window_pkts; 0: no cap, the default here)\n"
"  --peer-host-delay US  and that window's endpoint delay target\n"
"                    (transport.peer_host_delay_us; 0: off)\n"
"  --round-rtts N    a path's round counts as its length in N base RTTs (1..4\n"
"                    of them) when its moves are judged (transport.repath_round_rtts)\n"
"  --delay-target US queueing delay a path may add before its window is cut\n"
"                    (0 = no delay signal; default: the engine's)\n"
"  --seed N          simulation seed       --wl-seed N     workload seed\n"
"  --limit MS        simulated-time limit (1000)\n"
"  --trace FILE      write one line per packet sent, dropped or delivered\n"
"  -v, --verbose     print per-plane and per-path state\n"
"\n"
"incast options (defaults: 3 senders, 16M each of 64K WRITEs, 16 outstanding,\n"
"the bench fabric; every plane has a downlink in front of each host, and the\n"
"receiver's are the shared bottleneck):\n"
"  --senders N       senders (3)           --hints on|off|both   rate hints (both)\n"
"  --hint-interval US  receiver's active-sender window (engine default)\n"
"  --planes, --rate, --delay, --queue, --ecn, --route, --paths, --mtu, --bytes\n"
"  (per sender), --msg, --outstanding, --rto-min, --seed, --wl-seed, --limit,\n"
"  --trace, -v       as for run (--queue and --ecn also set the downlinks)\n"
"  --loss, --plane-loss, --blackhole, --jitter, --duplicate  as for run, on\n"
"                    the host-pair links (a blackhole timed from the first\n"
"                    sender's first post)\n";

/* ---- parsing ---------------------------------------------------------------- */

/* W,WI,S,R and optionally ,A (FETCH_ADD; 0 when left out, as before atomics). */
static int parse_mix(const char *s, uint32_t mix[WL_OP__COUNT])
{
	unsigned w[WL_OP__COUNT] = { 0 };
	int n = sscanf(s, "%u,%u,%u,%u,%u", &w[0], &w[1], &w[2], &w[3], &w[4]);

	if (n != 4 && n != 5)
		return -EINVAL;
	for (int i = 0; i < WL_OP__COUNT; i++)
		mix[i] = w[i];
	return 0;
}

/* Time the event loop only: buffer set-up and verification are not the simulator. */
void run_time_hook(void *ctx, bool end)
{
	double *t = ctx;

	t[end] = sim_wall_now();
}

/* Goodput so far, also for a transfer that did not finish in time. */
double run_gbps(const struct scn_result *r)
{
	uint64_t end = r->wl.done ? r->wl.t_last_cqe : r->t_end_ns;

	if (r->wl.done)
		return r->goodput_gbps;
	if (!r->wl.t_first_post || end <= r->wl.t_first_post)
		return 0;
	return (double)r->wl.bytes_done * 8 / (double)(end - r->wl.t_first_post);
}

/* ---- run ------------------------------------------------------------------------ */

static void print_paths(struct engine *eng, uint32_t qpn, const char *who)
{
	struct engine_qp_info qi;

	if (engine_qp_info(eng, qpn, &qi))
		return;
	printf("%s qp %u: state %u mode %u paths %u qwnd %" PRIu64 " pacing %" PRIu64
	       " hint %u Mbit/s tx %" PRIu64 " rx %" PRIu64 " sq_out %u rq %u errors %" PRIu64 "\n",
	       who, qpn, qi.state, qi.mode, qi.npaths, qi.qwnd_bytes, qi.pacing_bps,
	       qi.rate_hint_mbps, qi.tx_bytes, qi.rx_bytes, qi.sq_outstanding, qi.rq_posted,
	       qi.errors);
	for (unsigned p = 0; p < qi.npaths; p++) {
		struct engine_path_info pi;

		if (engine_path_info(eng, qpn, p, &pi))
			continue;
		printf("  path %u sport %u srtt %" PRIu64 " min_rtt %" PRIu64 " rto %" PRIu64
		       " pwnd %u inflight %u sent %" PRIu64 " retx %" PRIu64 " lost %" PRIu64
		       " ce %" PRIu64 " timeouts %" PRIu64 " repaths %" PRIu64 " alpha %u ppm"
		       " delay_cuts %" PRIu64 " delay_rebases %" PRIu64 " loss_cuts %" PRIu64
		       " loss_trims %" PRIu64 "\n",
		       p, pi.sport, pi.srtt_ns, pi.min_rtt_ns, pi.rto_ns, pi.pwnd_bytes,
		       pi.inflight_bytes, pi.sent, pi.retx, pi.lost, pi.ce, pi.timeouts,
		       pi.repaths, pi.dctcp_alpha_ppm, pi.delay_cuts, pi.delay_rebases,
		       pi.loss_cuts, pi.loss_trims);
	}
}

static void inspect_run(struct sim *sim, struct workload *wl, void *ctx)
{
	print_paths(sim_host_engine(sim, 0), wl_client_qpn(wl), "client");
	print_paths(sim_host_engine(sim, 1), wl_server_qpn(wl), "server");
}

/*
 * The figures issue #27 compares with bench-fabric's per-run counters: the
 * client's moves per path per 10 s of the run (the target: under 1 where no
 * plane is worse than another), without the timeouts' too, and the share of
 * the data packets the server took that carried CE.
 */
static void print_rates(const struct scn_config *cfg, const struct scn_result *r)
{
	const uint64_t *c = r->eng[0].c, *s = r->eng[1].c;
	double per = cfg->wl.npaths && r->t_end_ns ?
		     10e9 / ((double)cfg->wl.npaths * (double)r->t_end_ns) : 0;

	printf("moves per path per 10 s: %.2f (%.2f without timeouts), CE on %.3f of the "
	       "packets received\n", (double)c[EC_REPATH] * per,
	       (double)(c[EC_REPATH] - c[EC_REPATH_TIMEOUT]) * per,
	       s[EC_RX_PKTS] ? (double)s[EC_CE] / (double)s[EC_RX_PKTS] : 0);
}

static void print_result(const struct scn_config *cfg, const struct scn_result *r, bool verbose)
{
	const struct wl_result *w = &r->wl;

	printf("result: %s\n", r->err ? "FAILED" : "ok");
	if (r->err)
		printf("why: %s\n", r->why);
	printf("ops %" PRIu64 "/%" PRIu64 " (WRITE %" PRIu64 " WRITE_IMM %" PRIu64 " SEND %" PRIu64
	       " READ %" PRIu64, w->ops_done, w->ops_total, w->ops[WL_WRITE], w->ops[WL_WRITE_IMM],
	       w->ops[WL_SEND], w->ops[WL_READ]);
	/* Only when the mix has them: the line stays as it was for older scripts. */
	if (cfg->wl.mix[WL_FETCH_ADD])
		printf(" FETCH_ADD %" PRIu64, w->ops[WL_FETCH_ADD]);
	printf("), bytes %" PRIu64 "\n", w->bytes_done);
	printf("connected %.3f us, first post %.3f us, last completion %.3f us, end %.3f us\n",
	       (double)w->t_connected / 1e3, (double)w->t_first_post / 1e3,
	       (double)w->t_last_cqe / 1e3, (double)r->t_end_ns / 1e3);
	printf("goodput %.3f Gbit/s of %.3f capacity (%.3f)\n", run_gbps(r), r->capacity_gbps,
	       run_gbps(r) / r->capacity_gbps);
	if (cfg->blackhole_plane >= 0)
		printf("after failure %.3f Gbit/s of %.3f (%.3f)\n", r->after_gbps,
		       r->after_capacity_gbps, r->after_gbps / r->after_capacity_gbps);
	if (cfg->host_delay_ns)
		printf("after host delay step %.3f Gbit/s of %.3f (%.3f)\n", r->after_gbps,
		       r->capacity_gbps, r->after_gbps / r->capacity_gbps);
	printf("sim: events %" PRIu64 ", packets %" PRIu64 " sent, %" PRIu64 " rejected by rx, "
	       "timer spins %" PRIu64 ", pool %" PRIu64 "\n", r->sim.events, r->sim.hosts.tx_pkts,
	       r->sim.hosts.rx_rejected, r->sim.hosts.timer_spins, r->sim.pool_pkts);
	for (uint32_t p = 0; verbose && p < cfg->planes; p++) {
		const struct sim_link_stats *l = &r->plane[p];

		printf("plane %u: enq %" PRIu64 " deliv %" PRIu64 " tail %" PRIu64 " random %" PRIu64
		       " blackhole %" PRIu64 " ce %" PRIu64 " maxq %" PRIu64 "\n", p, l->enqueued,
		       l->delivered, l->dropped_tail, l->dropped_random, l->dropped_blackhole,
		       l->marked_ce, l->max_queue_bytes);
	}
	for (int h = 0; verbose && h < 2; h++) {
		printf("%s engine:", h ? "server" : "client");
		for (int c = 0; c < EC__COUNT; c++)
			if (r->eng[h].c[c])
				printf(" %s=%" PRIu64, engine_counter_name(c), r->eng[h].c[c]);
		printf("\n");
	}
	if (verbose)
		print_rates(cfg, r);
}

enum {
	OPT_PLANES = 256, OPT_RATE, OPT_NIC, OPT_DELAY, OPT_QUEUE, OPT_ECN, OPT_LOSS, OPT_ROUTE,
	OPT_MODE, OPT_PATHS, OPT_MTU, OPT_BYTES, OPT_MSG, OPT_OUTSTANDING, OPT_MIX,
	OPT_BLACKHOLE, OPT_SETTLE, OPT_SEED, OPT_WL_SEED, OPT_LIMIT, OPT_TRACE,
	OPT_MSG_MIN, OPT_RTO_MIN, OPT_DELAY_TARGET, OPT_SENDERS, OPT_HINTS, OPT_HINT_INTERVAL,
	OPT_BURST, OPT_ECN_VIRTUAL, OPT_LOSS_FIRST, OPT_RTO_INIT, OPT_DAEMON, OPT_HOST_DELAY, OPT_LIKE_FABRIC,
	OPT_LIKE_FABRIC_BUSY, OPT_LIKE_FABRIC_HELD,
	OPT_CLOCK_SKEW, OPT_CLOCK_DRIFT, OPT_ECMP_NET, OPT_ECMP_SEED, OPT_HOST_RX, OPT_PLANE_LOSS,
	OPT_PEER_WINDOW, OPT_PEER_HOST_DELAY, OPT_ROUND_RTTS, OPT_JITTER, OPT_DUP,
};

static const struct option run_opts[] = {
	{ "planes", required_argument, NULL, OPT_PLANES },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "nic", required_argument, NULL, OPT_NIC },
	{ "delay", required_argument, NULL, OPT_DELAY },
	{ "queue", required_argument, NULL, OPT_QUEUE },
	{ "ecn", required_argument, NULL, OPT_ECN },
	{ "loss", required_argument, NULL, OPT_LOSS },
	{ "plane-loss", required_argument, NULL, OPT_PLANE_LOSS },
	{ "jitter", required_argument, NULL, OPT_JITTER },
	{ "duplicate", required_argument, NULL, OPT_DUP },
	{ "route", required_argument, NULL, OPT_ROUTE },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "paths", required_argument, NULL, OPT_PATHS },
	{ "mtu", required_argument, NULL, OPT_MTU },
	{ "bytes", required_argument, NULL, OPT_BYTES },
	{ "msg", required_argument, NULL, OPT_MSG },
	{ "msg-min", required_argument, NULL, OPT_MSG_MIN },
	{ "rto-min", required_argument, NULL, OPT_RTO_MIN },
	{ "delay-target", required_argument, NULL, OPT_DELAY_TARGET },
	{ "peer-window", required_argument, NULL, OPT_PEER_WINDOW },
	{ "peer-host-delay", required_argument, NULL, OPT_PEER_HOST_DELAY },
	{ "round-rtts", required_argument, NULL, OPT_ROUND_RTTS },
	{ "outstanding", required_argument, NULL, OPT_OUTSTANDING },
	{ "mix", required_argument, NULL, OPT_MIX },
	{ "blackhole", required_argument, NULL, OPT_BLACKHOLE },
	{ "settle", required_argument, NULL, OPT_SETTLE },
	{ "clock-skew", required_argument, NULL, OPT_CLOCK_SKEW },
	{ "clock-drift", required_argument, NULL, OPT_CLOCK_DRIFT },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "wl-seed", required_argument, NULL, OPT_WL_SEED },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "trace", required_argument, NULL, OPT_TRACE },
	{ "burst", required_argument, NULL, OPT_BURST },
	{ "ecn-virtual", no_argument, NULL, OPT_ECN_VIRTUAL },
	{ "loss-first", no_argument, NULL, OPT_LOSS_FIRST },
	{ "rto-init", required_argument, NULL, OPT_RTO_INIT },
	{ "daemon", no_argument, NULL, OPT_DAEMON },
	{ "host-delay", required_argument, NULL, OPT_HOST_DELAY },
	{ "like-fabric", no_argument, NULL, OPT_LIKE_FABRIC },
	{ "like-fabric-busy", no_argument, NULL, OPT_LIKE_FABRIC_BUSY },
	{ "like-fabric-held", no_argument, NULL, OPT_LIKE_FABRIC_HELD },
	{ "ecmp-net", required_argument, NULL, OPT_ECMP_NET },
	{ "ecmp-seed", required_argument, NULL, OPT_ECMP_SEED },
	{ "host-rx", required_argument, NULL, OPT_HOST_RX },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

/* One option into cfg; returns 0 or -EINVAL. */
static int run_opt(struct scn_config *cfg, int opt, const char *arg)
{
	uint64_t v = 0;
	unsigned plane;
	double us, at, dur;
	int n;

	switch (opt) {
	case OPT_PLANES: case OPT_DELAY: case OPT_PATHS: case OPT_MTU: case OPT_OUTSTANDING:
	case OPT_SEED: case OPT_WL_SEED: case OPT_LIMIT: case OPT_SETTLE: case OPT_RTO_MIN: case OPT_DELAY_TARGET:
	case OPT_CLOCK_SKEW: case OPT_CLOCK_DRIFT: case OPT_PEER_WINDOW: case OPT_PEER_HOST_DELAY:
	case OPT_ROUND_RTTS:
		if (sim_parse_scaled(arg, 1000, &v))
			return -EINVAL;
		break;
	}
	switch (opt) {
	case OPT_PLANES: cfg->planes = (uint32_t)v; return v && v <= SIM_MAX_PLANES ? 0 : -EINVAL;
	case OPT_RATE: return sim_parse_scaled(arg, 1000, &cfg->plane_rate_bps);
	case OPT_NIC: return sim_parse_scaled(arg, 1000, &cfg->nic_rate_bps);
	case OPT_DELAY: cfg->delay_ns = v; return 0;
	case OPT_QUEUE: return sim_parse_scaled(arg, 1024, &cfg->queue_bytes);
	case OPT_ECN: return sim_parse_scaled(arg, 1024, &cfg->ecn_bytes);
	case OPT_LOSS: return sim_parse_double(arg, 0, 1, &cfg->loss);
	case OPT_JITTER:
		if (sim_parse_double(arg, 0, 1e6, &us))
			return -EINVAL;
		cfg->jitter_ns = (uint64_t)(us * 1e3);
		return 0;
	case OPT_DUP: return sim_parse_double(arg, 0, 1, &cfg->dup);
	case OPT_PLANE_LOSS:
		n = -1;
		if (sscanf(arg, "%u:%n", &plane, &n) != 1 || n < 0 || plane >= SIM_MAX_PLANES ||
		    sim_parse_double(arg + n, 0, 1, &cfg->plane_loss[plane]))
			return -EINVAL;
		cfg->plane_loss_set |= 1ULL << plane;
		return 0;
	case OPT_ROUTE:
		if (!strcmp(arg, "hash"))
			cfg->route = SIM_ROUTE_HASH;
		else if (!strcmp(arg, "path"))
			cfg->route = SIM_ROUTE_PATH_ID;
		else if (!strcmp(arg, "linux"))
			cfg->route = SIM_ROUTE_LINUX;
		else
			return -EINVAL;
		return 0;
	case OPT_ECMP_NET:
		if (sim_parse_scaled(arg, 1000, &v) || !v || v > 255)
			return -EINVAL;
		cfg->ecmp_net = (uint32_t)v;
		return 0;
	case OPT_HOST_RX: {
		double poll, stall, every;

		if (sscanf(arg, "%lf,%lf,%lf%n", &poll, &stall, &every, &n) != 3 ||
		    (arg[n] && strcmp(arg + n, ",hold")) ||
		    poll < 0 || stall < 0 || every < 0 || poll > 1e6 || stall > 1e6 || every > 1e9)
			return -EINVAL;
		cfg->host_rx.poll_ns = (uint64_t)(poll * 1000);
		cfg->host_rx.stall_ns = (uint64_t)(stall * 1000);
		cfg->host_rx.stall_every_ns = (uint64_t)(every * 1000);
		cfg->host_rx.hold_worker = arg[n] != 0;
		return 0;
	}
	case OPT_ECMP_SEED:
		if (sim_parse_scaled(arg, 1000, &v) || !v || v > UINT32_MAX)
			return -EINVAL;
		cfg->ecmp_seed = (uint32_t)v;
		return 0;
	case OPT_MODE:
		if (!strcmp(arg, "metaroce"))
			cfg->wl.mode = MROC_MODE_METAROCE;
		else if (!strcmp(arg, "rocev2"))
			cfg->wl.mode = MROC_MODE_ROCEV2;
		else
			return -EINVAL;
		return 0;
	case OPT_PATHS: cfg->wl.npaths = (uint8_t)v; return v && v <= MROC_MAX_PATHS ? 0 : -EINVAL;
	case OPT_MTU: cfg->mtu = (uint32_t)v; return 0;
	case OPT_BYTES: return sim_parse_scaled(arg, 1024, &cfg->wl.total_bytes);
	case OPT_MSG:
		if (sim_parse_scaled(arg, 1024, &v) || !v || v > UINT32_MAX)
			return -EINVAL;
		cfg->wl.msg_bytes = (uint32_t)v;
		return 0;
	case OPT_MSG_MIN:
		if (sim_parse_scaled(arg, 1024, &v) || v > UINT32_MAX)
			return -EINVAL;
		cfg->wl.msg_min = (uint32_t)v;
		return 0;
	case OPT_OUTSTANDING: cfg->wl.outstanding = (uint32_t)v; return v ? 0 : -EINVAL;
	case OPT_MIX: return parse_mix(arg, cfg->wl.mix);
	case OPT_BLACKHOLE:
		dur = 0;
		n = sscanf(arg, "%u@%lf+%lf", &plane, &us, &dur);
		if (n < 2 || us < 0 || dur < 0)
			return -EINVAL;
		cfg->blackhole_plane = (int32_t)plane;
		cfg->blackhole_at_ns = (uint64_t)(us * 1e3);
		cfg->blackhole_ns = (uint64_t)(dur * 1e3);
		return 0;
	case OPT_SETTLE: cfg->settle_ns = v * 1000; return 0;
	case OPT_CLOCK_SKEW: cfg->clock_skew_ns = v * 1000; return 0;
	case OPT_CLOCK_DRIFT: cfg->clock_drift_ppm = (uint32_t)v; return v <= 1000 ? 0 : -EINVAL;
	case OPT_RTO_MIN: cfg->rto_min_ns = v * 1000; return 0;
	case OPT_PEER_WINDOW: cfg->peer_window_pkts = (uint32_t)v; return v <= 1048576 ? 0 : -EINVAL;
	case OPT_PEER_HOST_DELAY: cfg->peer_host_delay_ns = v * 1000; return 0;
	case OPT_ROUND_RTTS:
		cfg->repath_round_rtts = (uint32_t)v;
		return v <= 1000 ? 0 : -EINVAL;
	case OPT_DELAY_TARGET:
		cfg->delay_target_set = true;
		cfg->delay_target_ns = v * 1000;
		return 0;
	case OPT_BURST: return sim_parse_scaled(arg, 1024, &cfg->burst_bytes);
	case OPT_ECN_VIRTUAL: cfg->ecn_virtual = true; return 0;
	case OPT_LOSS_FIRST: cfg->loss_at_enqueue = true; return 0;
	case OPT_RTO_INIT:
		if (sim_parse_scaled(arg, 1000, &v))
			return -EINVAL;
		cfg->rto_init_ns = v * 1000;
		return 0;
	case OPT_DAEMON: cfg->daemon_engine = true; return 0;
	case OPT_HOST_DELAY:
		if (sscanf(arg, "%lf@%lf", &us, &at) != 2 || us < 0 || at < 0)
			return -EINVAL;
		cfg->host_delay_ns = (uint64_t)(us * 1e3);
		cfg->host_delay_at_ns = (uint64_t)(at * 1e6);
		return 0;
	case OPT_LIKE_FABRIC: scn_config_like_fabric(cfg); return 0;
	case OPT_LIKE_FABRIC_BUSY: scn_config_like_fabric_busy(cfg); return 0;
	case OPT_LIKE_FABRIC_HELD: scn_config_like_fabric_held(cfg); return 0;
	case OPT_SEED: cfg->seed = v; return 0;
	case OPT_WL_SEED: cfg->wl.seed = v; return 0;
	case OPT_LIMIT: cfg->time_limit_ns = v * MSEC; return 0;
	}
	return -EINVAL;
}

void sim_trace_pkt(void *ctx, uint64_t now, enum sim_trace_what what, const struct sim_pkt *pkt)
{
	static const char *const whats[] = { "send", "drop-tail", "drop-random", "drop-bh",
					     "deliver", "wait" };
	struct wire_pkt w;
	enum wire_err why;
	FILE *f = ctx;

	fprintf(f, "%" PRIu64 " %s %u>%u plane %u sport %u path %u len %u%s%s", now, whats[what],
		pkt->src, pkt->dst, pkt->plane, pkt->sport, pkt->path_id, pkt->len,
		pkt->ect ? " ect" : "", pkt->ce ? " ce" : "");
	if (wire_parse(pkt->data, pkt->len, &w, &why)) {
		fprintf(f, " malformed %s\n", wire_err_name(why));
		return;
	}
	fprintf(f, " op %#x fl %#x qp %u", w.hdr.opcode, w.hdr.flags, w.hdr.dst_qpn);
	if (mroc_op_is_data(w.hdr.opcode))
		fprintf(f, " psn %u floor %u dsn %u msn %u off %u", w.data.psn, w.data.psn_floor,
			w.data.dsn, w.data.msn, w.data.offset);
	else if (w.hdr.opcode == MROC_OP_ACK)
		fprintf(f, " cum_psn %u cum_dsn %u rcv %u ce %u nak %u/%u@%u", w.ack.cum_psn,
			w.ack.cum_dsn, w.ack.rcv_pkts, w.ack.ce_pkts, w.ack.nak_code,
			w.ack.nak_seq, w.ack.nak_dsn);
	fputc('\n', f);
}

int run_cmd(int argc, char **argv, void (*usage)(void))
{
	struct scn_config cfg;
	static struct scn_result res;
	bool verbose = false;
	double t[2] = { 0, 0 };
	int opt;

	scn_config_default(&cfg);
	while ((opt = getopt_long(argc, argv, "vh", run_opts, NULL)) != -1) {
		if (opt == 'v') {
			verbose = true;
		} else if (opt == OPT_TRACE) {
			if (cfg.trace_ctx)
				fclose(cfg.trace_ctx);
			cfg.trace_ctx = fopen(optarg, "w");
			if (!cfg.trace_ctx) {
				fprintf(stderr, "mroc-sim run: %s: %s\n", optarg, strerror(errno));
				return 1;
			}
			cfg.trace = sim_trace_pkt;
		} else if (opt == 'h') {
			usage();
			return 0;
		} else if (opt == '?' || run_opt(&cfg, opt, optarg)) {
			fprintf(stderr, "mroc-sim run: bad option %s%s%s\n", argv[optind - 1],
				optarg ? " " : "", optarg ? optarg : "");
			return 2;
		}
	}
	if (verbose)
		cfg.inspect = inspect_run;
	cfg.run_hook = run_time_hook;
	cfg.run_hook_ctx = t;
	scn_run(&cfg, &res);
	if (cfg.trace_ctx)
		fclose(cfg.trace_ctx);
	print_result(&cfg, &res, verbose);
	printf("event loop: %.3f s wall, %.2f M events/s\n", t[1] - t[0],
	       (double)res.sim.events / (t[1] - t[0]) / 1e6);
	return res.err ? 1 : 0;
}

/* ---- incast ----------------------------------------------------------------------- */

static const struct option incast_opts[] = {
	{ "senders", required_argument, NULL, OPT_SENDERS },
	{ "hints", required_argument, NULL, OPT_HINTS },
	{ "hint-interval", required_argument, NULL, OPT_HINT_INTERVAL },
	{ "planes", required_argument, NULL, OPT_PLANES },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "delay", required_argument, NULL, OPT_DELAY },
	{ "queue", required_argument, NULL, OPT_QUEUE },
	{ "ecn", required_argument, NULL, OPT_ECN },
	{ "route", required_argument, NULL, OPT_ROUTE },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "paths", required_argument, NULL, OPT_PATHS },
	{ "mtu", required_argument, NULL, OPT_MTU },
	{ "bytes", required_argument, NULL, OPT_BYTES },
	{ "msg", required_argument, NULL, OPT_MSG },
	{ "msg-min", required_argument, NULL, OPT_MSG_MIN },
	{ "mix", required_argument, NULL, OPT_MIX },
	{ "outstanding", required_argument, NULL, OPT_OUTSTANDING },
	{ "rto-min", required_argument, NULL, OPT_RTO_MIN },
	{ "loss", required_argument, NULL, OPT_LOSS },
	{ "plane-loss", required_argument, NULL, OPT_PLANE_LOSS },
	{ "jitter", required_argument, NULL, OPT_JITTER },
	{ "duplicate", required_argument, NULL, OPT_DUP },
	{ "blackhole", required_argument, NULL, OPT_BLACKHOLE },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "wl-seed", required_argument, NULL, OPT_WL_SEED },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "trace", required_argument, NULL, OPT_TRACE },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static void inspect_incast(struct sim *sim, struct workload *const *wl, uint32_t n, void *ctx)
{
	char who[32];

	for (uint32_t i = 0; i < n; i++) {
		snprintf(who, sizeof(who), "sender %u", i);
		print_paths(sim_host_engine(sim, i), wl_client_qpn(wl[i]), who);
	}
	for (uint32_t i = 0; i < n; i++) {
		snprintf(who, sizeof(who), "receiver (from %u)", i);
		print_paths(sim_host_engine(sim, n), wl_server_qpn(wl[i]), who);
	}
}

static void print_incast(const struct inc_config *cfg, const struct inc_result *r, bool verbose)
{
	const struct sim_link_stats *d = &r->bottleneck;

	printf("rate hints %s: %s\n", cfg->rate_hints ? "on" : "off", r->err ? "FAILED" : "ok");
	if (r->err)
		printf("why: %s\n", r->why);
	for (uint32_t i = 0; i < r->senders; i++) {
		const struct inc_sender *s = &r->s[i];

		printf("  sender %u: %" PRIu64 "/%" PRIu64 " ops, %7.3f Gbit/s (%7.3f while all were "
		       "active), hint %u Mbit/s, first post %.3f us, last completion %.3f ms, "
		       "retx %" PRIu64 ", rto %" PRIu64 "\n", i, s->wl.ops_done, s->wl.ops_total,
		       s->gbps, s->contended_gbps, s->hint_mbps, (double)s->wl.t_first_post / 1e3,
		       (double)s->wl.t_last_cqe / 1e6, s->eng.c[EC_TX_RETX], s->eng.c[EC_RTO]);
	}
	printf("  total %.3f Gbit/s of %.3f bottleneck capacity (%.3f); Jain %.4f, while all were "
	       "active %.4f (%.3f .. %.3f ms)\n", r->total_gbps, r->capacity_gbps,
	       r->total_gbps / r->capacity_gbps, r->jain, r->jain_contended,
	       (double)r->t_contended_start / 1e6, (double)r->t_contended_end / 1e6);
	printf("  receiver downlinks: max queue %" PRIu64 " B, drops %" PRIu64 " (tail %" PRIu64
	       "), CE %" PRIu64 ", delivered %" PRIu64 "\n", d->max_queue_bytes,
	       d->dropped_tail + d->dropped_random + d->dropped_blackhole, d->dropped_tail,
	       d->marked_ce, d->delivered);
	printf("  host-pair links: max queue %" PRIu64 " B, drops %" PRIu64 "; sim: events %" PRIu64
	       ", timer fires %" PRIu64 ", timer spins %" PRIu64 "\n", r->sim.links.max_queue_bytes,
	       r->sim.links.dropped_tail, r->sim.events, r->sim.hosts.timer_fires,
	       r->sim.hosts.timer_spins);
	for (uint32_t p = 0; verbose && p < cfg->planes; p++) {
		d = &r->bottleneck_plane[p];
		printf("  downlink plane %u: enq %" PRIu64 " deliv %" PRIu64 " tail %" PRIu64 " ce %"
		       PRIu64 " maxq %" PRIu64 "\n", p, d->enqueued, d->delivered, d->dropped_tail,
		       d->marked_ce, d->max_queue_bytes);
	}
}

int incast_cmd(int argc, char **argv, void (*usage)(void))
{
	static struct inc_result res;
	struct inc_config cfg;
	struct scn_config sc;	/* the options run shares, parsed by run_opt */
	bool verbose = false;
	int hints = -1;		/* both */
	int opt, failed = 0;
	uint64_t v;

	inc_config_default(&cfg);
	scn_config_default(&sc);
	sc.planes = cfg.planes;
	sc.plane_rate_bps = cfg.plane_rate_bps;
	sc.delay_ns = cfg.delay_ns;
	sc.queue_bytes = cfg.queue_bytes;
	sc.ecn_bytes = cfg.ecn_bytes;
	sc.route = cfg.route;
	sc.mtu = cfg.mtu;
	sc.rto_min_ns = cfg.rto_min_ns;
	sc.wl = cfg.wl;
	sc.time_limit_ns = cfg.time_limit_ns;
	sc.seed = cfg.seed;
	while ((opt = getopt_long(argc, argv, "vh", incast_opts, NULL)) != -1) {
		switch (opt) {
		case 'v': verbose = true; continue;
		case 'h': usage(); return 0;
		case OPT_SENDERS:
			if (sim_parse_scaled(optarg, 1000, &v) || !v || v > INC_MAX_SENDERS)
				goto bad;
			cfg.senders = (uint32_t)v;
			continue;
		case OPT_HINTS:
			if (!strcmp(optarg, "on"))
				hints = 1;
			else if (!strcmp(optarg, "off"))
				hints = 0;
			else if (!strcmp(optarg, "both"))
				hints = -1;
			else
				goto bad;
			continue;
		case OPT_HINT_INTERVAL:
			if (sim_parse_scaled(optarg, 1000, &v) || !v)
				goto bad;
			cfg.hint_interval_ns = v * 1000;
			continue;
		case OPT_TRACE:
			if (cfg.trace_ctx)
				fclose(cfg.trace_ctx);
			cfg.trace_ctx = fopen(optarg, "w");
			if (!cfg.trace_ctx) {
				fprintf(stderr, "mroc-sim incast: %s: %s\n", optarg, strerror(errno));
				return 1;
			}
			cfg.trace = sim_trace_pkt;
			continue;
		case '?':
			goto bad;
		}
		if (run_opt(&sc, opt, optarg))
			goto bad;
	}
	cfg.planes = sc.planes;
	cfg.plane_rate_bps = sc.plane_rate_bps;
	cfg.delay_ns = sc.delay_ns;
	cfg.queue_bytes = sc.queue_bytes;
	cfg.ecn_bytes = sc.ecn_bytes;
	cfg.route = sc.route;
	cfg.mtu = sc.mtu;
	cfg.rto_min_ns = sc.rto_min_ns;
	cfg.wl = sc.wl;
	cfg.time_limit_ns = sc.time_limit_ns;
	cfg.seed = sc.seed;
	cfg.loss = sc.loss;
	memcpy(cfg.plane_loss, sc.plane_loss, sizeof(cfg.plane_loss));
	cfg.plane_loss_set = sc.plane_loss_set;
	cfg.jitter_ns = sc.jitter_ns;
	cfg.dup = sc.dup;
	cfg.blackhole_plane = sc.blackhole_plane;
	cfg.blackhole_at_ns = sc.blackhole_at_ns;
	cfg.blackhole_ns = sc.blackhole_ns;
	if (verbose)
		cfg.inspect = inspect_incast;
	printf("incast: %u senders -> host %u, %" PRIu64 " bytes each, %u planes x %.3g Gbit/s, "
	       "seed %" PRIu64 "\n", cfg.senders, cfg.senders, cfg.wl.total_bytes, cfg.planes,
	       (double)cfg.plane_rate_bps / 1e9, cfg.seed);
	for (int h = 1; h >= 0; h--) {
		double t[2] = { 0, 0 };

		if (hints >= 0 && hints != h)
			continue;
		cfg.rate_hints = h;
		cfg.run_hook = run_time_hook;
		cfg.run_hook_ctx = t;
		failed |= inc_run(&cfg, &res) != 0;
		print_incast(&cfg, &res, verbose);
		printf("  event loop: %.3f s wall, %.2f M events/s\n", t[1] - t[0],
		       (double)res.sim.events / (t[1] - t[0]) / 1e6);
	}
	if (cfg.trace_ctx)
		fclose(cfg.trace_ctx);
	return failed;
bad:
	fprintf(stderr, "mroc-sim incast: bad %s %s (see mroc-sim --help)\n",
		optarg ? "value" : "option", optarg ? optarg : argv[optind - 1]);
	if (cfg.trace_ctx)
		fclose(cfg.trace_ctx);
	return 2;
}
