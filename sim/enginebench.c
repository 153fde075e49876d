// SPDX-License-Identifier: MIT
/*
 * mroc-sim engine: the engine's own cost per data packet, at any QP count.
 *
 * Two engines in one thread, wired back to back with no network model: every
 * packet one produces goes straight into the other, and a fake clock moves
 * on by a fixed time per packet (so timers fire as they would on a link of
 * that rate).  N QP pairs are connected; K of them keep WRITEs outstanding,
 * the others stay connected and idle (keepalives only).  What is measured
 * is the thread's CPU time per data packet, sender and receiver together,
 * over a steady-state window after a warm-up: the figure issue #10 asks to
 * stay flat from 1 to 4,000 QPs.  A benchmark, not a test: it reads a clock.
 *
 * It also counts, without a clock, what ACKs that cover several QPs would
 * save (issue #22, docs/PROTOCOL.md 3.3a, proposed): the receiver's ACKs of
 * each of its engine_tx batches grouped as a frame of several could carry
 * them, by UDP 5-tuple (the path's own source port, as today), by peer and
 * path number (a source port per path shared by every QP to a peer), or by
 * peer alone (any port), at most as many to a frame as fit in one of the
 * MTU.  How many data packets a batch holds is the driver's (--batch: mrocd
 * takes a receive batch, then sends what it owes).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cliargs.h"
#include "engine.h"
#include "enginebench.h"

#define BATCH		64
#define PKT_NS		100		/* fake wire time per packet: ~80 Gbit/s of 1 KiB */
#define REGION		(1u << 20)
#define WR_BYTES	(64u * 1024)
#define OUTSTANDING	4

struct side {
	struct engine *eng;
	uint8_t *mem;
	uint32_t lkey, rkey;
	uint32_t *qpn;
};

/* ACK frames if ACKs of several QPs shared one, by grouping (see above). */
enum { GRP_TUPLE, GRP_PATH, GRP_PEER, GRP__COUNT };

struct bench {
	struct side s[2];
	uint32_t nqps, active;
	uint32_t batch;			/* packets per engine_tx call, either side */
	uint32_t per_frame;		/* ACK entries a frame of the MTU holds */
	uint64_t seed;
	uint64_t frames[GRP__COUNT];	/* the receiver's ACK frames so grouped */
	uint64_t now;
	uint8_t bufs[BATCH][MROC_DATA_OVERHEAD + 8192 + MROC_TAG_LEN];	/* the engine's largest MTU */
	uint8_t sec;			/* enum mroc_sec: none or token */
	uint32_t peer_window;		/* transport.peer_window_pkts (0: no cap) */
	struct engine_txbuf tx[BATCH];
};

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * The ACKs among the n packets in b->tx as frames of up to per_frame, grouped
 * by key: the ACKs with one key, in batch order, fill frames one after
 * another.
 */
static uint64_t ack_frames(const struct bench *b, int n, int grp)
{
	uint32_t key[BATCH], cnt[BATCH];
	uint64_t frames = 0;
	int nk = 0;

	for (int i = 0; i < n; i++) {
		const struct engine_txbuf *t = &b->tx[i];
		uint32_t k;
		int j;

		if (t->len < MROC_HDR_LEN || t->data[1] != MROC_OP_ACK)
			continue;
		k = grp == GRP_TUPLE ? t->sport : grp == GRP_PATH ? t->path_id : 0;
		k |= t->peer << 16;
		for (j = 0; j < nk && key[j] != k; j++)
			;
		if (j == nk) {
			key[nk] = k;
			cnt[nk++] = 0;
		}
		if (cnt[j]++ % b->per_frame == 0)
			frames++;
	}
	return frames;
}

/* Move up to a batch from one engine into the other.  Returns packets moved. */
static int pump_one(struct bench *b, int from)
{
	struct engine_rx_meta meta = { .peer = (uint32_t)from };
	int n;

	for (uint32_t i = 0; i < b->batch; i++)
		b->tx[i] = (struct engine_txbuf){ .data = b->bufs[i], .cap = sizeof(b->bufs[i]) };
	n = engine_tx(b->s[from].eng, b->now, b->tx, (int)b->batch);
	for (int g = 0; from == 1 && g < GRP__COUNT; g++)
		b->frames[g] += ack_frames(b, n, g);
	for (int i = 0; i < n; i++) {
		meta.sport = b->tx[i].sport;
		engine_rx(b->s[!from].eng, b->now, b->bufs[i], b->tx[i].len, &meta);
	}
	return n;
}

static int post_write(struct bench *b, uint32_t q)
{
	struct engine_wr wr = {
		.wr_id = q, .opcode = ENGINE_WR_WRITE, .flags = ENGINE_WR_SIGNALED,
		.lkey = b->s[0].lkey, .laddr = 0, .len = WR_BYTES,
		.rkey = b->s[1].rkey, .raddr = (uint64_t)(q % 8) * WR_BYTES,
	};

	return engine_post_send(b->s[0].eng, b->s[0].qpn[q], &wr, b->now);
}

/* Completions: repost a finished WRITE; count connections made. */
static uint32_t drain(struct bench *b)
{
	struct engine_cqe c[BATCH];
	uint32_t connected = 0;
	int n;

	for (int side = 0; side < 2; side++)
		while ((n = engine_poll_cq(b->s[side].eng, c, BATCH)) > 0)
			for (int i = 0; i < n; i++) {
				if (c[i].opcode == ENGINE_WC_EV_CONNECTED)
					connected++;
				else if (side == 0 && c[i].opcode == ENGINE_WC_WRITE &&
					 c[i].wr_id < b->active)
					post_write(b, (uint32_t)c[i].wr_id);
			}
	return connected;
}

/* One round: both directions, completions, then time moves on. */
static uint32_t step(struct bench *b)
{
	int n = pump_one(b, 0) + pump_one(b, 1);
	uint32_t connected = drain(b);

	if (n) {
		b->now += (uint64_t)n * PKT_NS;
	} else {
		uint64_t d = engine_next_deadline(b->s[0].eng);
		uint64_t e = engine_next_deadline(b->s[1].eng);

		d = d < e ? d : e;
		b->now = d != UINT64_MAX && d > b->now ? d : b->now + PKT_NS;
	}
	engine_advance(b->s[0].eng, b->now);
	engine_advance(b->s[1].eng, b->now);
	return connected;
}

static int setup(struct bench *b, uint32_t mtu)
{
	struct engine_config cfg;
	struct engine_qp_attr attr = {
		.pd = 1, .mode = MROC_MODE_METAROCE, .npaths = 4, .sq_depth = 64, .rq_depth = 64,
		.max_rd = 16,
	};
	uint32_t connected = 0;

	engine_config_default(&cfg);
	cfg.max_qps = b->nqps + 8;
	cfg.mtu = mtu;
	cfg.sec_mode = b->sec;
	cfg.peer_window_pkts = b->peer_window;
	/* PROTOCOL 3.3a: a frame's header and count, then entries of QPNs, path and ACK header */
	b->per_frame = (mtu + MROC_DATA_OVERHEAD - MROC_HDR_LEN - 4) / (12 + MROC_ACK_HDR_LEN);
	for (int i = 0; i < 2; i++) {
		struct side *s = &b->s[i];

		cfg.seed = 2 * b->seed + (uint64_t)i + 1;
		s->eng = engine_create(&cfg);
		s->mem = calloc(1, REGION);
		s->qpn = calloc(b->nqps, sizeof(*s->qpn));
		if (!s->eng || !s->mem || !s->qpn ||
		    engine_mr_register(s->eng, 1, s->mem, REGION, ENGINE_ACCESS_ALL, &s->lkey,
				       &s->rkey))
			return -ENOMEM;
	}
	for (uint32_t q = 0; q < b->nqps; q++) {
		if (engine_qp_create(b->s[1].eng, &attr, &b->s[1].qpn[q]) ||
		    engine_qp_listen(b->s[1].eng, b->s[1].qpn[q], 1000 + q) ||
		    engine_qp_create(b->s[0].eng, &attr, &b->s[0].qpn[q]) ||
		    engine_qp_connect(b->s[0].eng, b->s[0].qpn[q], 1, 1000 + q, b->now))
			return -EINVAL;
	}
	for (int i = 0; i < 100000 && connected < 2 * b->nqps; i++)
		connected += step(b);
	if (connected < 2 * b->nqps)
		return -ETIMEDOUT;
	for (uint32_t q = 0; q < b->active; q++)
		for (int k = 0; k < OUTSTANDING; k++)
			if (post_write(b, q))
				return -EINVAL;
	return 0;
}

static void teardown(struct bench *b)
{
	for (int i = 0; i < 2; i++) {
		engine_destroy(b->s[i].eng);
		free(b->s[i].mem);
		free(b->s[i].qpn);
	}
}

/* Mean engine bytes per QP, both sides. */
static uint64_t mem_per_qp(const struct bench *b)
{
	uint64_t sum = 0;

	for (int side = 0; side < 2; side++)
		for (uint32_t q = 0; q < b->nqps; q++) {
			struct engine_qp_info qi;

			if (!engine_qp_info(b->s[side].eng, b->s[side].qpn[q], &qi))
				sum += qi.mem_bytes;
		}
	return sum / (2 * b->nqps);
}

static uint64_t data_sent(const struct bench *b)
{
	struct engine_stats st;

	engine_get_stats(b->s[0].eng, &st);
	return st.c[EC_TX_DATA];
}

/* One of the sending side's counters. */
static uint64_t sender_cnt(const struct bench *b, enum engine_counter c)
{
	struct engine_stats st;

	engine_get_stats(b->s[0].eng, &st);
	return st.c[c];
}

/* ACKs the receiving side has sent. */
static uint64_t acks_sent(const struct bench *b)
{
	struct engine_stats st;

	engine_get_stats(b->s[1].eng, &st);
	return st.c[EC_TX_ACKS];
}

/* What one run measured. */
struct run_res {
	double ns;			/* CPU per data packet */
	double acks;			/* the receiver's ACKs per data packet */
	double parked, kicked;		/* the sender's QPs parked at / let back into the peer window, per data packet */
	double frames[GRP__COUNT];	/* ... and ACK frames per data packet if grouped */
	uint64_t rto, mem_rest, mem_busy;
};

/* A point's parameters (struct bench's, without its buffers). */
struct run_cfg {
	uint32_t nqps, active, batch, peer_window;
	uint64_t seed;
	uint8_t sec;
};

/* 0 or a negative errno. */
static int run_one(const struct run_cfg *cfg, uint64_t packets, uint32_t mtu, struct run_res *res)
{
	struct bench *b = calloc(1, sizeof(*b));
	uint64_t d0, a0, p0, k0, f0[GRP__COUNT];
	struct engine_stats st;
	int err = -EINVAL;
	double t0;

	if (!b)
		return -ENOMEM;
	b->nqps = cfg->nqps;
	b->active = cfg->active;
	b->sec = cfg->sec;
	b->peer_window = cfg->peer_window;
	b->batch = cfg->batch;
	b->seed = cfg->seed;
	if (setup(b, mtu))
		goto out;
	res->mem_rest = mem_per_qp(b);	/* connected, WRITEs just posted */
	while (data_sent(b) < packets / 4)	/* warm-up: windows open, rings grow */
		step(b);
	d0 = data_sent(b);
	a0 = acks_sent(b);
	p0 = sender_cnt(b, EC_TX_PEER_BLOCKED);
	k0 = sender_cnt(b, EC_TX_PEER_KICKED);
	memcpy(f0, b->frames, sizeof(f0));
	t0 = cpu_now();
	while (data_sent(b) - d0 < packets)
		step(b);
	res->ns = (cpu_now() - t0) * 1e9 / (double)(data_sent(b) - d0);
	res->acks = (double)(acks_sent(b) - a0) / (double)(data_sent(b) - d0);
	res->parked = (double)(sender_cnt(b, EC_TX_PEER_BLOCKED) - p0) / (double)(data_sent(b) - d0);
	res->kicked = (double)(sender_cnt(b, EC_TX_PEER_KICKED) - k0) / (double)(data_sent(b) - d0);
	for (int g = 0; g < GRP__COUNT; g++)
		res->frames[g] = (double)(b->frames[g] - f0[g]) / (double)(data_sent(b) - d0);
	engine_get_stats(b->s[0].eng, &st);
	res->rto = st.c[EC_RTO];
	res->mem_busy = mem_per_qp(b);
	err = 0;
out:
	teardown(b);
	free(b);
	return err;
}

static const char usage[] =
"usage: mroc-sim engine [--qps LIST] [--active all|N] [--packets N] [--mtu N] [--runs N]\n"
"                      [--sec none|token] [--peer-window N] [--batch N] [--seed N]\n"
"  the engine's CPU time per data packet, two engines back to back in one thread\n"
"  --qps LIST     QP pairs, comma-separated (1,16,256,1000,4000)\n"
"  --active all|N QPs with WRITEs outstanding; the rest idle (all)\n"
"  --packets N    data packets measured per run (200000)\n"
"  --mtu N        payload bytes per packet, 64..8192 (1024)\n"
"  --runs N       runs per point: min / median / max (3)\n"
"  --sec MODE     security mode: none, or token (a SipHash tag per packet) (none)\n"
"  --peer-window N  data packets in flight to the peer host, all QPs (mrocd's\n"
"                 transport.peer_window_pkts, 512 there; 0: no cap) (0)\n"
"  --batch N      packets per engine_tx call, either side (a driver's batch) (64)\n"
"  --seed N       the engines' seeds (ports, QPNs, ISNs); run r takes N + r (0)\n"
"  acks/pkt: the receiver's ACKs per data packet (each a frame through the kernel)\n"
"  parked/pkt, kicked/pkt: the sender's QPs parked on the peer's full window\n"
"    (tx_peer_blocked) and given a turn there (tx_peer_kicked), per data packet\n"
"  frames/pkt: ACK frames per data packet if the ACKs of a batch shared frames of\n"
"    the MTU (PROTOCOL 3.3a, proposed), grouped by UDP 5-tuple (today's ports), by\n"
"    peer and path number (ports shared by a peer's QPs), by peer; min/median/max\n";

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int enginebench_cmd(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "qps", required_argument, NULL, 'q' }, { "active", required_argument, NULL, 'a' },
		{ "packets", required_argument, NULL, 'p' }, { "mtu", required_argument, NULL, 'm' },
		{ "runs", required_argument, NULL, 'r' }, { "help", no_argument, NULL, 'h' },
		{ "sec", required_argument, NULL, 's' },
		{ "peer-window", required_argument, NULL, 'w' },
		{ "batch", required_argument, NULL, 'b' }, { "seed", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	char qlist[256] = "1,16,256,1000,4000";
	uint64_t packets = 200000, mtu = 1024, runs = 3, active = 0, pwin = 0, batch = BATCH, seed = 0;
	uint8_t sec = MROC_SEC_NONE;
	double base = 0;
	int c, longindex = 0;

	while ((c = getopt_long(argc, argv, "h", opts, &longindex)) != -1) {
		switch (c) {
		case 'q': snprintf(qlist, sizeof(qlist), "%s", optarg); break;
		case 'a':
			if (strcmp(optarg, "all") && (sim_parse_scaled(optarg, 1000, &active) || !active))
				goto bad;
			break;
		case 'p': if (sim_parse_scaled(optarg, 1000, &packets) || !packets) goto bad; break;
		case 'm': if (sim_parse_scaled(optarg, 1024, &mtu) || mtu < 64 || mtu > 8192) goto bad;
			break;
		case 'r': if (sim_parse_scaled(optarg, 1, &runs) || !runs || runs > 99) goto bad; break;
		case 's':
			if (!strcmp(optarg, "token"))
				sec = MROC_SEC_TOKEN;
			else if (strcmp(optarg, "none"))
				goto bad;
			break;
		case 'w': if (sim_parse_scaled(optarg, 1, &pwin) || pwin > 1048576) goto bad; break;
		case 'b': if (sim_parse_scaled(optarg, 1, &batch) || !batch || batch > BATCH) goto bad;
			break;
		case 'S': if (sim_parse_scaled(optarg, 1, &seed) || seed > UINT32_MAX) goto bad; break;
		case 'h': fputs(usage, stdout); return 0;
		default: goto bad;
		}
	}
	printf("# engine CPU per data packet, sender + receiver, %" PRIu64 " packets per run, "
	       "MTU %" PRIu64 ", %s active, security %s, peer window %" PRIu64 ", batch %" PRIu64
	       ", seeds %" PRIu64 "..%" PRIu64 "\n", packets, mtu, active ? "some" : "all",
	       sec == MROC_SEC_TOKEN ? "token" : "none", pwin, batch, seed, seed + runs - 1);
	printf("%6s %6s %10s %10s %10s %8s %6s %9s %9s %8s %17s %17s %17s %17s %17s\n", "qps",
	       "active", "min_ns", "median_ns", "max_ns", "x_first", "rto", "B/qp_rest", "B/qp_busy",
	       "acks/pkt", "frames:tuple", "frames:path", "frames:peer", "parked/pkt", "kicked/pkt");
	for (char *tok = strtok(qlist, ","); tok; tok = strtok(NULL, ",")) {
		struct run_res res[100];
		/* the frames by grouping, then parked and kicked: min/median/max */
		double v[100], f[GRP__COUNT + 2][100];
		struct run_cfg cfg = {
			.sec = sec, .peer_window = (uint32_t)pwin, .batch = (uint32_t)batch,
		};
		char col[GRP__COUNT + 2][32];
		uint64_t n;

		if (sim_parse_scaled(tok, 1000, &n) || !n || n > 60000) {
			fprintf(stderr, "mroc-sim engine: bad QP count %s (1..60000)\n", tok);
			return 2;
		}
		cfg.nqps = (uint32_t)n;
		cfg.active = active && active < n ? (uint32_t)active : (uint32_t)n;
		for (uint64_t r = 0; r < runs; r++) {
			int err;

			cfg.seed = seed + r;
			err = run_one(&cfg, packets, (uint32_t)mtu, &res[r]);
			if (err) {
				fprintf(stderr, "mroc-sim engine: %" PRIu64 " QPs: %s\n", n, strerror(-err));
				return 1;
			}
			v[r] = res[r].ns;
			for (int g = 0; g < GRP__COUNT; g++)
				f[g][r] = res[r].frames[g];
			f[GRP__COUNT][r] = res[r].parked;
			f[GRP__COUNT + 1][r] = res[r].kicked;
		}
		qsort(v, runs, sizeof(v[0]), cmp_double);
		for (int g = 0; g < GRP__COUNT + 2; g++) {
			qsort(f[g], runs, sizeof(f[g][0]), cmp_double);
			snprintf(col[g], sizeof(col[g]), "%.3f/%.3f/%.3f", f[g][0], f[g][runs / 2],
				 f[g][runs - 1]);
		}
		if (!base)
			base = v[runs / 2];
		printf("%6" PRIu64 " %6u %10.1f %10.1f %10.1f %8.2f %6" PRIu64 " %9" PRIu64 " %9" PRIu64
		       " %8.3f %17s %17s %17s %17s %17s\n", n, cfg.active, v[0], v[runs / 2],
		       v[runs - 1], v[runs / 2] / base, res[runs - 1].rto, res[runs - 1].mem_rest,
		       res[runs - 1].mem_busy, res[runs - 1].acks, col[0], col[1], col[2],
		       col[GRP__COUNT], col[GRP__COUNT + 1]);
		fflush(stdout);
	}
	return 0;
bad:
	if (c != '?')	/* getopt named an unknown option itself */
		fprintf(stderr, "mroc-sim engine: bad --%s %s\n", opts[longindex].name, optarg);
	fputs(usage, stderr);
	return 2;
}
