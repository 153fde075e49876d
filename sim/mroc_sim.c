// SPDX-License-Identifier: MIT
/*
 * mroc-sim: run the mroc engine through the simulated network.
 *
 *   mroc-sim [--help] { bench | run | incast | cluster } [OPTIONS] | help
 *
 * `bench` measures the figures the issue sets targets for (loss tolerance,
 * multipath scaling, failover) and incast fairness; `run` runs one
 * configurable transfer and prints everything about it, which is how a
 * failing test is reproduced; `incast` does the same for N senders into
 * one receiver (both in run_cli.c; `cluster`: cluster_cli.c; `engine`:
 * enginebench.c).
 * Simulated time is what is measured; the wall clock only gives the
 * simulator's own speed (events per second).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliargs.h"
#include "cluster_cli.h"
#include "enginebench.h"
#include "incast.h"
#include "run_cli.h"
#include "scenario.h"

#define MIB		((uint64_t)1 << 20)
#define MSEC		1000000ULL
#define GBPS		1000000000ULL

static const char usage_head[] =
"usage: mroc-sim [--help] COMMAND [OPTIONS]\n"
"\n"
"commands:\n"
"  bench   measure loss tolerance, multipath scaling, failover and incast (default)\n"
"  run     run one transfer and print its statistics\n"
"  incast  run N senders into one receiver, rate hints on and off\n"
"  cluster collectives on a 64-host leaf/spine cluster, MetaRoCE vs RoCEv2\n"
"          (its options: mroc-sim cluster --help)\n"
"  engine  the engine's CPU time per data packet at 1..4,000 QPs, no network\n"
"          (its options: mroc-sim engine --help)\n"
"  help    this text\n"
"\n"
"bench options:\n"
"  --csv FILE        also write every row as CSV\n"
"  --bytes SIZE      bytes per transfer (default 64M; the failover runs move 2x,\n"
"                    each incast sender SIZE/4)\n"
"  --seed N          first simulation seed (default 1)\n"
"  --seeds N         seeds per point, figures are means (default 3)\n"
"  --limit MS        simulated-time limit per run (default 1000)\n"
"\n";

static const char usage_tail[] =
"\n"
"SIZE takes K, M, G (powers of 1024); RATE takes K, M, G (powers of 1000).\n";

/* The whole help: run's and incast's sections are run_cli.c's. */
static void usage(void)
{
	fputs(usage_head, stdout);
	fputs(run_cli_usage, stdout);
	fputs(usage_tail, stdout);
}

static int cmd_run(int argc, char **argv)
{
	return run_cmd(argc, argv, usage);
}

static int cmd_incast(int argc, char **argv)
{
	return incast_cmd(argc, argv, usage);
}

enum { OPT_CSV = 256, OPT_BYTES, OPT_SEED, OPT_SEEDS, OPT_LIMIT };

/* ---- bench ------------------------------------------------------------------------ */

struct bench {
	FILE *csv;
	uint64_t bytes;
	uint64_t seed;
	uint32_t seeds;
	uint64_t limit_ns;
	uint64_t events;
	double wall;
	int failures;
};

/* The mean over the bench's seeds of one configuration. */
struct point {
	double gbps;		/* goodput (of the part done, if unfinished) */
	double after_gbps;	/* failover: from blackhole + settle to the end */
	double capacity, after_capacity;
	bool all_done;
};

/* The bench workload (scn_config_bench): WRITEs only, ROUTE_PATH_ID. */
static void bench_cfg(const struct bench *b, struct scn_config *cfg)
{
	scn_config_bench(cfg);
	cfg->time_limit_ns = b->limit_ns;
	cfg->wl.total_bytes = b->bytes;
}

/* One CSV line; the columns are the header's (cmd_bench). */
static void csv_line(struct bench *b, const char *section, uint8_t mode, uint8_t route,
		     uint32_t planes, uint32_t paths, double loss, int32_t blackhole_plane,
		     uint64_t bytes, uint64_t seed, bool done, double gbps, double cap,
		     uint64_t events, double wall)
{
	if (!b->csv)
		return;
	fprintf(b->csv, "%s,%s,%s,%u,%u,%g,%d,%" PRIu64 ",%" PRIu64 ",%d,%.4f,%.4f,%.4f,%" PRIu64
		",%.3f\n", section, mode == MROC_MODE_ROCEV2 ? "rocev2" : "metaroce",
		route == SIM_ROUTE_HASH ? "hash" : route == SIM_ROUTE_LINUX ? "linux" : "path", planes,
		paths, loss, blackhole_plane, bytes, seed, done, gbps, cap, gbps / cap, events, wall);
}

static void csv_row(struct bench *b, const char *section, const struct scn_config *cfg,
		    const struct scn_result *r, double gbps, double cap, double wall)
{
	csv_line(b, section, cfg->wl.mode, cfg->route, cfg->planes, cfg->wl.npaths, cfg->loss,
		 cfg->blackhole_plane, cfg->wl.total_bytes, cfg->seed, r->wl.done, gbps, cap,
		 r->sim.events, wall);
}

/* Run cfg once per seed; CSV gets every run, the caller the means. */
static struct point bench_point(struct bench *b, const char *section, struct scn_config *cfg)
{
	static struct scn_result r;
	struct point pt = { .all_done = true };

	for (uint32_t k = 0; k < b->seeds; k++) {
		double t[2] = { 0, 0 };

		cfg->seed = b->seed + k;
		cfg->run_hook = run_time_hook;
		cfg->run_hook_ctx = t;
		scn_run(cfg, &r);
		b->events += r.sim.events;
		b->wall += t[1] - t[0];
		if (r.err && r.err != -ETIMEDOUT) {
			b->failures++;
			fprintf(stderr, "  run failed (seed %" PRIu64 "): %s\n", cfg->seed, r.why);
		}
		pt.all_done &= r.wl.done;
		pt.gbps += run_gbps(&r) / b->seeds;
		pt.after_gbps += r.after_gbps / b->seeds;
		pt.capacity = r.capacity_gbps;
		pt.after_capacity = r.after_capacity_gbps;
		if (cfg->blackhole_plane >= 0)
			csv_row(b, section, cfg, &r, r.after_gbps, r.after_capacity_gbps,
				t[1] - t[0]);
		else
			csv_row(b, section, cfg, &r, run_gbps(&r), r.capacity_gbps, t[1] - t[0]);
	}
	return pt;
}

/* (a) goodput at loss 0 / 0.1 / 1 / 5 / 10 %, MetaRoCE on 4 paths and RoCEv2. */
static void bench_loss(struct bench *b)
{
	static const double loss[] = { 0, 0.001, 0.01, 0.05, 0.10 };
	double ref[2] = { 0, 0 };

	printf("\n(a) random loss on every link, 4 planes x 25 Gbit/s, ROUTE_PATH_ID\n"
	       "    Gbit/s, fraction of the 4 planes' goodput capacity, fraction of the mode's own\n"
	       "    lossless goodput.  RoCEv2 has one path, so it can use one plane of 4.\n");
	printf("    %-6s | %-24s | %-24s\n", "loss", "MetaRoCE (4 paths)", "RoCEv2 (1 path)");
	printf("    %-6s | %-24s | %-24s\n", "", " Gbit/s    cap    own", " Gbit/s    cap    own");
	for (size_t i = 0; i < sizeof(loss) / sizeof(loss[0]); i++) {
		printf("    %5.1f%%", loss[i] * 100);
		for (int m = 0; m < 2; m++) {
			struct scn_config cfg;
			struct point pt;

			bench_cfg(b, &cfg);
			cfg.loss = loss[i];
			cfg.wl.mode = m ? MROC_MODE_ROCEV2 : MROC_MODE_METAROCE;
			cfg.wl.npaths = m ? 1 : 4;
			pt = bench_point(b, "loss", &cfg);
			if (i == 0)
				ref[m] = pt.gbps;
			printf(" | %7.2f  %5.3f  %5.3f%s", pt.gbps, pt.gbps / pt.capacity,
			       ref[m] > 0 ? pt.gbps / ref[m] : 0, pt.all_done ? "   " : " * ");
		}
		printf("\n");
	}
	printf("    (* = a run did not finish within the time limit: goodput of the part done)\n");
}

/* (b) P equal rate-limited paths: throughput / (P x one path). */
static void bench_scaling(struct bench *b)
{
	static const uint32_t paths[] = { 1, 2, 4, 8 };
	double one[2] = { 0, 0 };

	printf("\n(b) multipath scaling: P planes x 25 Gbit/s, P paths, NIC = P x 25 Gbit/s\n"
	       "    Gbit/s, throughput / (P x one path), fraction of the P planes' capacity\n");
	printf("    %-3s | %-24s | %-24s\n", "P", "ROUTE_PATH_ID", "ROUTE_HASH");
	printf("    %-3s | %-24s | %-24s\n", "", " Gbit/s  x1path   cap", " Gbit/s  x1path   cap");
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		printf("    %-3u", paths[i]);
		for (int h = 0; h < 2; h++) {
			struct scn_config cfg;
			struct point pt;

			bench_cfg(b, &cfg);
			cfg.route = h ? SIM_ROUTE_HASH : SIM_ROUTE_PATH_ID;
			cfg.planes = paths[i];
			cfg.wl.npaths = (uint8_t)paths[i];
			pt = bench_point(b, "scaling", &cfg);
			if (i == 0)
				one[h] = pt.gbps;
			printf(" | %7.2f  %5.3f  %5.3f%s", pt.gbps, pt.gbps / (paths[i] * one[h]),
			       pt.gbps / pt.capacity, pt.all_done ? "   " : " * ");
		}
		printf("\n");
	}
}

/* (c) one of 4 planes blackholed mid-transfer, both routings. */
static void bench_failover(struct bench *b)
{
	printf("\n(c) failover: plane 2 of 4 blackholed 1 ms into a %" PRIu64 " MiB WRITE transfer;\n"
	       "    goodput from 4 ms after the failure to the end, against the 3 remaining\n"
	       "    planes' capacity\n", 2 * b->bytes / MIB);
	for (int h = 0; h < 2; h++) {
		struct scn_config cfg;
		struct point pt;

		bench_cfg(b, &cfg);
		cfg.route = h ? SIM_ROUTE_HASH : SIM_ROUTE_PATH_ID;
		cfg.wl.total_bytes = 2 * b->bytes;
		cfg.blackhole_plane = 2;
		cfg.blackhole_at_ns = 1 * MSEC;
		cfg.settle_ns = 4 * MSEC;
		pt = bench_point(b, "failover", &cfg);
		printf("    %-13s %s; %7.2f Gbit/s after the failure = %.3f of %.2f\n",
		       h ? "ROUTE_HASH" : "ROUTE_PATH_ID",
		       pt.all_done ? "completed    " : "NOT completed", pt.after_gbps,
		       pt.after_gbps / pt.after_capacity, pt.after_capacity);
	}
}

/* The mean over the bench's seeds of one incast setting. */
struct inc_point {
	double gbps[INC_MAX_SENDERS];	/* per sender, own transfer */
	double total, capacity, jain, jain_contended, drops;
	uint64_t max_queue;		/* largest over the seeds */
	bool all_done;
};

static struct inc_point bench_incast_point(struct bench *b, struct inc_config *cfg)
{
	static struct inc_result r;
	struct inc_point pt = { .all_done = true };
	const char *on = cfg->rate_hints ? "on" : "off";

	for (uint32_t k = 0; k < b->seeds; k++) {
		double t[2] = { 0, 0 };
		char section[32];

		cfg->seed = b->seed + k;
		cfg->run_hook = run_time_hook;
		cfg->run_hook_ctx = t;
		inc_run(cfg, &r);
		b->events += r.sim.events;
		b->wall += t[1] - t[0];
		if (r.err && r.err != -ETIMEDOUT) {
			b->failures++;
			fprintf(stderr, "  incast run failed (hints %s, seed %" PRIu64 "): %s\n", on,
				cfg->seed, r.why);
		}
		pt.all_done &= r.done;
		for (uint32_t i = 0; i < cfg->senders; i++) {
			pt.gbps[i] += r.s[i].gbps / b->seeds;
			/* A sender's row: against its fair share of the bottleneck. */
			snprintf(section, sizeof(section), "incast-%s-s%u", on, i);
			csv_line(b, section, cfg->wl.mode, cfg->route, cfg->planes, cfg->wl.npaths, 0,
				 -1, cfg->wl.total_bytes, cfg->seed, r.s[i].wl.done, r.s[i].gbps,
				 r.capacity_gbps / cfg->senders, r.sim.events, t[1] - t[0]);
		}
		snprintf(section, sizeof(section), "incast-%s", on);
		csv_line(b, section, cfg->wl.mode, cfg->route, cfg->planes, cfg->wl.npaths, 0, -1,
			 cfg->wl.total_bytes * cfg->senders, cfg->seed, r.done, r.total_gbps,
			 r.capacity_gbps, r.sim.events, t[1] - t[0]);
		pt.total += r.total_gbps / b->seeds;
		pt.jain += r.jain / b->seeds;
		pt.jain_contended += r.jain_contended / b->seeds;
		pt.drops += (double)(r.bottleneck.dropped_tail + r.bottleneck.dropped_random +
				     r.bottleneck.dropped_blackhole) / b->seeds;
		if (r.bottleneck.max_queue_bytes > pt.max_queue)
			pt.max_queue = r.bottleneck.max_queue_bytes;
		pt.capacity = r.capacity_gbps;
	}
	return pt;
}

/* (d) N senders write to one receiver at once: fairness with rate hints on and off. */
static void bench_incast(struct bench *b)
{
	struct inc_config cfg;
	struct inc_point pt[2];

	inc_config_default(&cfg);
	cfg.wl.total_bytes = b->bytes / 4 ? b->bytes / 4 : 1;
	cfg.time_limit_ns = b->limit_ns;
	for (int h = 0; h < 2; h++) {
		cfg.rate_hints = !h;
		pt[h] = bench_incast_point(b, &cfg);
	}
	printf("\n(d) incast: %u senders -> 1 receiver, %.4g MiB each of 64 KiB WRITEs (%u outstanding),\n"
	       "    %u planes x 25 Gbit/s, ROUTE_PATH_ID, every engine's link rate %u Gbit/s.  The\n"
	       "    receiver's %u downlinks (512 KiB queues, ECN above 64 KiB) are the shared bottleneck:\n"
	       "    %.2f Gbit/s of payload.  Gbit/s per sender (its own transfer), total (first post to\n"
	       "    last completion) and its fraction of the bottleneck, Jain's index over the senders\n"
	       "    (whole transfers; * = while every sender was active), the receiver's largest\n"
	       "    downlink queue (over seeds) and its drops (mean per run)\n",
	       cfg.senders, (double)cfg.wl.total_bytes / MIB, cfg.wl.outstanding, cfg.planes,
	       (unsigned)(cfg.plane_rate_bps * cfg.planes / GBPS), cfg.planes, pt[0].capacity);
	printf("    %-5s |", "hints");
	for (uint32_t i = 0; i < cfg.senders; i++) {
		char name[24];

		snprintf(name, sizeof(name), "sender %u", i);
		printf(" %9s", name);
	}
	printf(" |  total    cap |  Jain  Jain* | max queue  drops\n");
	for (int h = 0; h < 2; h++) {
		printf("    %-5s |", h ? "off" : "on");
		for (uint32_t i = 0; i < cfg.senders; i++)
			printf(" %9.2f", pt[h].gbps[i]);
		printf(" | %6.2f  %5.3f | %5.3f  %5.3f | %5.0f KiB %6.0f%s\n", pt[h].total,
		       pt[h].total / pt[h].capacity, pt[h].jain, pt[h].jain_contended,
		       (double)pt[h].max_queue / 1024, pt[h].drops,
		       pt[h].all_done ? "" : "  (a run did not finish in time)");
	}
}

static const struct option bench_opts[] = {
	{ "csv", required_argument, NULL, OPT_CSV },
	{ "bytes", required_argument, NULL, OPT_BYTES },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "seeds", required_argument, NULL, OPT_SEEDS },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static int cmd_bench(int argc, char **argv)
{
	struct bench b = { .bytes = 64 * MIB, .seed = 1, .seeds = 3, .limit_ns = 1000 * MSEC };
	const char *csv = NULL;
	uint64_t v;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", bench_opts, NULL)) != -1) {
		switch (opt) {
		case OPT_CSV: csv = optarg; break;
		case OPT_BYTES:
			if (sim_parse_scaled(optarg, 1024, &b.bytes) || !b.bytes)
				goto bad;
			break;
		case OPT_SEED:
			if (sim_parse_scaled(optarg, 1000, &b.seed))
				goto bad;
			break;
		case OPT_SEEDS:
			if (sim_parse_scaled(optarg, 1000, &v) || !v || v > 1000)
				goto bad;
			b.seeds = (uint32_t)v;
			break;
		case OPT_LIMIT:
			if (sim_parse_scaled(optarg, 1000, &v) || !v)
				goto bad;
			b.limit_ns = v * MSEC;
			break;
		case 'h': usage(); return 0;
		default: goto bad;
		}
	}
	if (csv) {
		b.csv = fopen(csv, "w");
		if (!b.csv) {
			fprintf(stderr, "mroc-sim bench: %s: %s\n", csv, strerror(errno));
			return 1;
		}
		fprintf(b.csv, "section,mode,route,planes,paths,loss,blackhole_plane,bytes,seed,done,"
			"goodput_gbps,capacity_gbps,frac_capacity,events,wall_s\n");
	}
	printf("mroc-sim bench: MTU 4096, 2 us propagation, 512 KiB queues, ECN above 64 KiB,\n"
	       "%" PRIu64 " MiB of 64 KiB WRITEs, 32 outstanding, engine defaults; means over seeds "
	       "%" PRIu64 "..%" PRIu64 "\n", b.bytes / MIB, b.seed, b.seed + b.seeds - 1);
	bench_loss(&b);
	bench_scaling(&b);
	bench_failover(&b);
	bench_incast(&b);
	printf("\nsimulator: %" PRIu64 " events in %.2f s of event loop = %.2f M events/s\n"
	       "(buffer set-up and byte-exact verification are not counted)\n", b.events, b.wall,
	       (double)b.events / b.wall / 1e6);
	if (b.csv)
		fclose(b.csv);
	return b.failures ? 1 : 0;
bad:
	fprintf(stderr, "mroc-sim bench: bad option %s (see mroc-sim --help)\n", argv[optind - 1]);
	return 2;
}

/* ---- main ------------------------------------------------------------------------- */

static int cmd_help(int argc, char **argv)
{
	usage();
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "bench", cmd_bench },	/* first = default */
	{ "run", cmd_run },
	{ "incast", cmd_incast },
	{ "cluster", cluster_cmd },
	{ "engine", enginebench_cmd },
	{ "help", cmd_help },
};

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return cmd_help(argc, argv);
	if (argc < 2)
		return commands[0].fn(argc, argv);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "mroc-sim: unknown command '%s' (see mroc-sim --help)\n", argv[1]);
	return 2;
}
