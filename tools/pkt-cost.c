// SPDX-License-Identifier: MIT
/*
 * pkt-cost: what mrocd's user space spends per data packet apart from the
 * kernel and the AF_XDP rings, counted without a clock (issue #22).  Two
 * engines back to back in one thread, one QP of 4 paths moving 1 MiB WRITEs
 * (4 outstanding; --qps N: N QPs to the same peer, each with 4 outstanding),
 * a fake clock; every packet either way (data and ACKs)
 * framed as the AF_XDP backend frames it (frame_build_cached with the ICRC, into a
 * frame-sized buffer) and parsed as it parses one (frame_parse: lengths,
 * the IPv4 header checksum, the ICRC) before the other engine takes it.
 * So it covers the engine (the copy from the sender's region, the token's
 * tag, the placement copy) and frame.c; not the rings, kicks, egress and
 * peer look-ups, nor the worker loop (see docs/PERF.md).
 *
 * The steady-state loop is pkt_loop, kept out of line, so callgrind can
 * count it alone, which no load on the machine changes:
 *
 *   valgrind --tool=callgrind --toggle-collect=pkt_loop build/pkt-cost 100000 1024 token
 *   (instructions of pkt_loop / the data packets it prints)
 *
 * Natively it also prints CPU ns per data packet (a clock: an anecdote on a
 * loaded machine).
 *
 *   pkt-cost [--qps N] [--peer-window N] [--wr BYTES] [--seed N] [--rx-batch N]
 *            [--ack-every N] [--ack-batch N] [PACKETS [PAYLOAD [none|token [frames|bare]]]]
 *            (100000, 1024, token, frames; "bare": no framing, the engine alone)
 *
 * At many QPs the engine's per-QP state no longer stays in cache, and that,
 * not instructions, is what grows (issue #22): add callgrind's cache model
 * (--cache-sim=yes) for D1 and LL misses per data packet, per function.
 * mrocd caps the packets in flight to a peer (transport.peer_window_pkts,
 * 512): --peer-window 512 gives each of 256 QPs the ~2 packets in flight it
 * has there, and so its ACK pattern.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>

#include "engine.h"
#include "frame.h"
#include "wire.h"

#define BATCH		64
#define PKT_NS		100		/* fake wire time per packet */
#define REGION		(4u << 20)
#define WR_BYTES	(1u << 20)	/* --wr's default */
#define OUTSTANDING	4
#define MAX_QPS		8000
#define FRAME_SIZE	4096		/* mrocd's frames above payload 1024 (2048 at 1024: fits too) */
#define UDP_PORT	4791

struct end {
	struct engine *eng;
	uint8_t *mem;
	uint32_t lkey, rkey;
	uint32_t *qpn;			/* nqps of them; the sender's posts by index */
	struct frame_tx ft;		/* this end's headers (addresses, MACs) */
};

struct run {
	struct end e[2];
	uint64_t now;
	bool frames;
	uint32_t nqps, wr_bytes, peer_window;
	uint64_t seed;			/* the engines' seeds: 2 seed + 1 and + 2 (ports, QPNs, ISNs) */
	uint32_t rx_batch;		/* --rx-batch: the receiver's ACKs go out after each this many */
	/* Per direction (the sender's data, the receiver's ACKs), so each has a batch in flight. */
	uint8_t buf[2][BATCH][FRAME_SIZE];
	struct engine_txbuf tx[2][BATCH];
	struct frame_rx rx[2][BATCH];
	int off[2][BATCH];		/* where each frame's headers begin in buf (frame_build_cached) */
	uint32_t flen[2][BATCH];
	uint64_t bad;			/* frames frame_parse refused: must stay 0 */
	struct frame_tmpls tmpls[2];	/* each end's headers, as the backend keeps them */
	/* Here, not above: moving buf would change the copies' and ICRC's alignment, and counts. */
	uint32_t ack_every;		/* --ack-every: both engines' (transport.ack_every) */
	uint32_t ack_batch;		/* --ack-batch: the sender takes the ACKs this many at a time */
	bool merge;			/* --merge-acks: the engines' merge_acks */
	uint64_t region;		/* --region-mb: each end's region, bytes */
	bool no_touch;			/* --no-touch: the regions' pages not read at set-up */
	uint8_t sink;
};

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Each end's half of the backend's work for packet i from end `from`:
 * framing it (the sending end), parsing it (the receiving end), its payload
 * then in rx[i] for the other end (NULL: refused).
 */
static void frame_one(struct run *r, int from, int i)
{
	struct engine_txbuf *b = &r->tx[from][i];
	struct frame_tx ft = r->e[from].ft;
	int *off = &r->off[from][i];

	if (!r->frames) {
		*off = 0;
		return;
	}
	ft.sport = b->sport;
	ft.ecn = b->ect ? FRAME_ECN_ECT0 : FRAME_ECN_NOT_ECT;
	*off = frame_build_cached(&r->tmpls[from], r->buf[from][i], b->len, &ft);
	r->flen[from][i] = *off < 0 ? 0 : frame_len(*off, b->len, &ft);
}

static void parse_one(struct run *r, int from, int i)
{
	struct engine_txbuf *b = &r->tx[from][i];
	struct frame_rx *fr = &r->rx[from][i];
	int off = r->off[from][i];
	enum frame_err why;

	if (!r->frames) {
		*fr = (struct frame_rx){ .payload = b->data, .payload_len = b->len,
					 .sport = b->sport, .src = r->e[from].ft.src };
		return;
	}
	if (off < 0 || frame_parse(r->buf[from][i] + off, r->flen[from][i], fr, &why) ||
	    fr->dport != UDP_PORT) {
		fr->payload = NULL;
		r->bad++;
	}
}

/*
 * A batch from end `from`: what its engine sends, framed, into its buffers
 * from base on.  Returns how many.  Offered as mrocd's worker offers them:
 * as many buffers as engine_tx_want says, and more after an offer it filled.
 */
static inline __attribute__((always_inline)) int pump_tx(struct run *r, int from, int base)
{
	int n = base, want, used;

	do {
		want = engine_tx_want(r->e[from].eng, BATCH - n);
		for (int i = n; i < n + want; i++)
			r->tx[from][i] = (struct engine_txbuf){
				.data = r->buf[from][i] + FRAME_HEADROOM,
				.cap = FRAME_SIZE - FRAME_HEADROOM - FRAME_ICRC_LEN,
			};
		used = want ? engine_tx(r->e[from].eng, r->now, r->tx[from] + n, want) : 0;
		n += used;
	} while (used && used == want && n < BATCH);
	for (int i = base; i < n; i++)
		frame_one(r, from, i);
	return n - base;
}

/*
 * Frames lo .. lo + n - 1 that end `from` sent, parsed and into the other
 * engine, as mrocd's worker takes a received batch.
 */
static inline __attribute__((always_inline)) void pump_rx(struct run *r, int from, int lo, int n)
{
	for (int i = lo; i < lo + n; i++)
		parse_one(r, from, i);
	engine_rx_begin(r->e[!from].eng);	/* as mrocd's worker (merge_acks) */
	for (int i = lo; i < lo + n; i++) {
		struct frame_rx *fr = &r->rx[from][i];
		struct engine_rx_meta meta = { .peer = (uint32_t)from, .sport = fr->sport,
					       .ce = fr->ecn == FRAME_ECN_CE, .src = &fr->src };

		if (fr->payload)
			engine_rx(r->e[!from].eng, r->now, fr->payload, fr->payload_len, &meta);
	}
	engine_rx_end(r->e[!from].eng, r->now);
}

/*
 * One function per end and direction, kept out of line, so callgrind counts
 * each end's share apart (scripts/pkt-instr.sh): the sending end's data out
 * and ACKs in, the receiving end's data in and ACKs out.
 */
static __attribute__((noinline)) int sender_tx(struct run *r)
{
	return pump_tx(r, 0, 0);
}

static __attribute__((noinline)) void receiver_rx(struct run *r, int lo, int n)
{
	pump_rx(r, 0, lo, n);
}

/* The receiver's ACKs after the `held` ones the sender has not taken yet. */
static __attribute__((noinline)) int receiver_tx(struct run *r, int held)
{
	return pump_tx(r, 1, held);
}

static __attribute__((noinline)) void sender_rx(struct run *r, int n)
{
	pump_rx(r, 1, 0, n);
}

/*
 * WR id: QP index x OUTSTANDING + its slot.  Each WR has its own place in
 * the region (wrapping), so many QPs' copies spread over the whole of it.
 */
static int post(struct run *r, uint64_t id)
{
	uint64_t off = id * r->wr_bytes % r->region;
	struct engine_wr wr = {
		.wr_id = id, .opcode = ENGINE_WR_WRITE, .flags = ENGINE_WR_SIGNALED,
		.lkey = r->e[0].lkey, .laddr = off, .len = r->wr_bytes,
		.rkey = r->e[1].rkey, .raddr = off,
	};

	return engine_post_send(r->e[0].eng, r->e[0].qpn[id / OUTSTANDING], &wr, r->now);
}

/* Both directions, completions (a finished WRITE posted again), then time moves on. */
static int step(struct run *r)
{
	struct engine_cqe c[BATCH];
	int n = sender_tx(r), connected = 0, got, held = 0;

	/*
	 * The receiver takes the sender's batch rx_batch packets at a time and
	 * sends its ACKs after each part, as mrocd's worker does after each
	 * receive batch: quietly its batches hold ~7 packets (issue #22,
	 * docs/PERF.md), and the ACKs that makes are work for the sender.  The
	 * sender takes them as they come, or (--ack-batch) ack_batch at a time
	 * and the rest at the step's end: mrocd's sender reads its receive
	 * ring after a window's worth of sending, ~60 ACKs at a time quietly.
	 */
	for (int lo = 0, sent = n; lo < sent; lo += (int)r->rx_batch) {
		int m;

		receiver_rx(r, lo, sent - lo < (int)r->rx_batch ? sent - lo : (int)r->rx_batch);
		m = receiver_tx(r, held);
		held += m;
		n += m;
		if (held >= (int)r->ack_batch || held > BATCH - 16) {
			sender_rx(r, held);
			held = 0;
		}
	}
	if (held)
		sender_rx(r, held);
	if (!n) {
		int m = receiver_tx(r, 0);	/* timers' packets (probes, keepalives) */

		sender_rx(r, m);
		n += m;
	}

	for (int side = 0; side < 2; side++)
		while ((got = engine_poll_cq(r->e[side].eng, c, BATCH)) > 0)
			for (int i = 0; i < got; i++) {
				if (c[i].opcode == ENGINE_WC_EV_CONNECTED)
					connected++;
				else if (side == 0 && c[i].opcode == ENGINE_WC_WRITE &&
					 post(r, c[i].wr_id))
					return -EIO;
			}
	if (n) {
		r->now += (uint64_t)n * PKT_NS;
	} else {
		uint64_t d = engine_next_deadline(r->e[0].eng), e = engine_next_deadline(r->e[1].eng);

		d = d < e ? d : e;
		r->now = d != UINT64_MAX && d > r->now ? d : r->now + PKT_NS;
	}
	engine_advance(r->e[0].eng, r->now);
	engine_advance(r->e[1].eng, r->now);
	return connected;
}

static uint64_t counter(const struct run *r, int side, int c)
{
	struct engine_stats st;

	engine_get_stats(r->e[side].eng, &st);
	return st.c[c];
}

/* The measured steady state: callgrind --toggle-collect=pkt_loop counts this alone. */
static __attribute__((noinline)) int pkt_loop(struct run *r, uint64_t packets)
{
	uint64_t d0 = counter(r, 0, EC_TX_DATA);

	while (counter(r, 0, EC_TX_DATA) - d0 < packets)
		if (step(r) < 0)
			return -EIO;
	return 0;
}

static void set_end(struct end *e, uint8_t last)
{
	e->ft = (struct frame_tx){
		.dmac = { 0x02, 0, 0, 0, 0, (uint8_t)(3 - last) },
		.smac = { 0x02, 0, 0, 0, 0, last },
		.src = { .family = AF_INET, .bytes = { 10, 0, 0, last } },
		.dst = { .family = AF_INET, .bytes = { 10, 0, 0, (uint8_t)(3 - last) } },
		.dport = UDP_PORT,
		.icrc = true,
	};
}

static int setup(struct run *r, uint32_t mtu, uint8_t sec)
{
	struct engine_qp_attr attr = {
		.pd = 1, .mode = MROC_MODE_METAROCE, .npaths = 4, .sq_depth = 64, .rq_depth = 64,
		.max_rd = 16,
	};
	struct engine_config cfg;
	uint32_t connected = 0;
	int n;

	engine_config_default(&cfg);
	cfg.max_qps = r->nqps + 8;
	cfg.mtu = mtu;
	cfg.sec_mode = sec;
	cfg.peer_window_pkts = r->peer_window;
	cfg.merge_acks = r->merge;
	if (r->ack_every)
		cfg.ack_every = r->ack_every;
	r->ack_every = cfg.ack_every;	/* the engine's default unless given */
	for (int i = 0; i < 2; i++) {
		struct end *e = &r->e[i];

		cfg.seed = 2 * r->seed + (uint64_t)i + 1;
		set_end(e, (uint8_t)(i + 1));
		e->eng = engine_create(&cfg);
		/*
		 * Populated and locked before the run, as mrocd's registration pins
		 * a client's region: no page is touched first, or reclaimed and
		 * faulted in again, inside it (calloc touched nothing).
		 */
		e->mem = mmap(NULL, r->region, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (e->mem == MAP_FAILED)
			e->mem = NULL;
		else if (mlock(e->mem, r->region))
			fprintf(stderr, "pkt-cost: mlock of the region: %s\n", strerror(errno));
		/* And read once a page from here, as mrocd does (clients_ctl.c touch_pages). */
		for (uint64_t o = 0; e->mem && !r->no_touch && o < r->region; o += 4096)
			r->sink ^= ((volatile uint8_t *)e->mem)[o];
		e->qpn = calloc(r->nqps, sizeof(*e->qpn));
		if (!e->eng || !e->mem || !e->qpn ||
		    engine_mr_register(e->eng, 1, e->mem, r->region, ENGINE_ACCESS_ALL, &e->lkey,
				       &e->rkey))
			return -ENOMEM;
	}
	for (uint32_t q = 0; q < r->nqps; q++)
		if (engine_qp_create(r->e[1].eng, &attr, &r->e[1].qpn[q]) ||
		    engine_qp_listen(r->e[1].eng, r->e[1].qpn[q], 1000 + q) ||
		    engine_qp_create(r->e[0].eng, &attr, &r->e[0].qpn[q]) ||
		    engine_qp_connect(r->e[0].eng, r->e[0].qpn[q], 1, 1000 + q, r->now))
			return -EINVAL;
	for (int i = 0; i < 100000 && connected < 2 * r->nqps; i++) {
		n = step(r);
		if (n < 0)
			return n;
		connected += (uint32_t)n;
	}
	if (connected < 2 * r->nqps)
		return -ETIMEDOUT;
	for (uint64_t k = 0; k < (uint64_t)r->nqps * OUTSTANDING; k++)
		if (post(r, k))
			return -EINVAL;
	return 0;
}

static const char usage[] =
"usage: pkt-cost [--qps N] [--peer-window N] [--wr BYTES] [--seed N] [--rx-batch N]\n"
"                [--ack-every N] [--ack-batch N] [--merge-acks] [--region-mb N]\n"
"                [--no-touch]\n"
"                [PACKETS [PAYLOAD [none|token [frames|bare]]]]\n"
"  mrocd's user-space work per data packet but the rings and kernel: two engines\n"
"  back to back, every packet framed and parsed as the AF_XDP backend does (frames)\n"
"  or not (bare); count it with valgrind --tool=callgrind --toggle-collect=pkt_loop\n"
"  --qps N          QPs to the one peer, 1..8000, each with 4 WRITEs outstanding (1)\n"
"  --peer-window N  data packets in flight to the peer, all QPs (mrocd: 512; 0: no cap) (0)\n"
"  --wr BYTES       bytes per WRITE, 1024..1 MiB (1 MiB)\n"
"  --seed N         the engines' seeds 2N + 1 and 2N + 2: ports, QPNs, ISNs (0)\n"
"  --rx-batch N     the receiver's ACKs go out after each N packets of a batch, 1..64,\n"
"                   as mrocd's after each receive batch (quietly ~7 packets) (64)\n"
"  --ack-every N    the receiver ACKs a path after N packets, 1..64, the sender's runs\n"
"                   as long (mrocd's transport.ack_every) (the engine's default, 4)\n"
"  --ack-batch N    the sender takes the receiver's ACKs N at a time, 1..64, the rest at\n"
"                   each step's end (mrocd's quiet sender: tens a receive batch) (1)\n"
"  --merge-acks     the engines' merge_acks (mrocd's transport.merge_acks): a path's\n"
"                   ACKs in one receive batch applied as its newest one\n"
"  --region-mb N    each end's region, MiB, 4..16384; the WRITEs go round it: with\n"
"                   --qps 4000 --wr 65536 --region-mb 1024 each lands where no cache\n"
"                   holds it, as at bench-scale's 4,000 QPs (4)\n"
"  --no-touch       the regions are populated and locked but not read page by page from\n"
"                   user space at set-up, as mrocd reads a registered region (on a VM\n"
"                   that shadows page tables each page's first touch then traps)\n";

/* A whole decimal or 0x number in [lo, hi], or -1. */
static int64_t arg_num(const char *s, uint64_t lo, uint64_t hi)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v < lo || v > hi)
		return -1;
	return (int64_t)v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "qps", required_argument, NULL, 'q' },
		{ "peer-window", required_argument, NULL, 'w' },
		{ "wr", required_argument, NULL, 'b' },
		{ "seed", required_argument, NULL, 's' },
		{ "rx-batch", required_argument, NULL, 'r' },
		{ "ack-every", required_argument, NULL, 'a' },
		{ "ack-batch", required_argument, NULL, 'k' },
		{ "merge-acks", no_argument, NULL, 'm' },
		{ "region-mb", required_argument, NULL, 'g' },
		{ "no-touch", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int64_t qps = 1, pwin = 0, wr = WR_BYTES, packets_arg = 100000, mtu_arg = 1024, seed = 0;
	int64_t rxb = BATCH, ack_every = 0, ack_batch = 1, region_mb = REGION >> 20;
	bool merge = false;
	const char *secname = "token";
	struct run *r = calloc(1, sizeof(*r));
	uint64_t d0, a0, a1, d1, m0, m1, packets;
	int c, nargs;
	double t0, t1;
	uint32_t mtu;
	char **args;
	uint8_t sec;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'q': qps = arg_num(optarg, 1, MAX_QPS); break;
		case 'w': pwin = arg_num(optarg, 0, 1u << 20); break;
		case 'b': wr = arg_num(optarg, 1024, WR_BYTES); break;
		case 's': seed = arg_num(optarg, 0, UINT32_MAX); break;
		case 'r': rxb = arg_num(optarg, 1, BATCH); break;
		case 'a': ack_every = arg_num(optarg, 1, 64); break;
		case 'k': ack_batch = arg_num(optarg, 1, BATCH); break;
		case 'm': merge = true; break;
		case 'g': region_mb = arg_num(optarg, 4, 16384); break;
		case 't': r->no_touch = true; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
		if (qps < 0 || pwin < 0 || wr < 0 || seed < 0 || rxb < 0 || ack_every < 0 ||
		    ack_batch < 0 || region_mb < 0) {
			fprintf(stderr, "pkt-cost: bad --%s %s (pkt-cost --help)\n",
				c == 'q' ? "qps" : c == 'w' ? "peer-window" : c == 's' ? "seed" :
				c == 'r' ? "rx-batch" : c == 'a' ? "ack-every" :
				c == 'k' ? "ack-batch" : c == 'g' ? "region-mb" : "wr",
				optarg);
			return 2;
		}
	}
	args = argv + optind;
	nargs = argc - optind;
	if (nargs > 0)
		packets_arg = arg_num(args[0], 1, UINT64_MAX >> 2);
	if (nargs > 1)
		mtu_arg = arg_num(args[1], 64, FRAME_SIZE - FRAME_HEADROOM - FRAME_ICRC_LEN -
				  MROC_DATA_OVERHEAD - MROC_TAG_LEN);
	if (nargs > 2)
		secname = args[2];
	if (!strcmp(secname, "token"))
		sec = MROC_SEC_TOKEN;
	else if (!strcmp(secname, "none"))
		sec = MROC_SEC_NONE;
	else
		sec = 0xff;
	if (!r || packets_arg < 0 || mtu_arg < 0 || sec == 0xff || nargs > 4 ||
	    (nargs > 3 && strcmp(args[3], "frames") && strcmp(args[3], "bare"))) {
		fprintf(stderr, "pkt-cost: bad arguments (pkt-cost --help)\n");
		return 2;
	}
	packets = (uint64_t)packets_arg;
	mtu = (uint32_t)mtu_arg;
	r->frames = nargs <= 3 || !strcmp(args[3], "frames");
	r->nqps = (uint32_t)qps;
	r->peer_window = (uint32_t)pwin;
	r->wr_bytes = (uint32_t)wr;
	r->seed = (uint64_t)seed;
	r->rx_batch = (uint32_t)rxb;
	r->ack_every = (uint32_t)ack_every;
	r->ack_batch = (uint32_t)ack_batch;
	r->merge = merge;
	r->region = (uint64_t)region_mb << 20;
	if (setup(r, mtu, sec)) {
		fprintf(stderr, "pkt-cost: the engines did not connect\n");
		return 1;
	}
	/* Warm-up, not counted (outside pkt_loop): windows open, rings grow. */
	for (d0 = counter(r, 0, EC_TX_DATA); counter(r, 0, EC_TX_DATA) - d0 < packets / 4;)
		if (step(r) < 0)
			return 1;
	d0 = counter(r, 0, EC_TX_DATA);
	a0 = counter(r, 1, EC_TX_ACKS);
	m0 = counter(r, 0, EC_RX_ACK_MERGED);
	t0 = cpu_now();
	if (pkt_loop(r, packets))
		return 1;
	t1 = cpu_now();
	d1 = counter(r, 0, EC_TX_DATA);
	a1 = counter(r, 1, EC_TX_ACKS);
	m1 = counter(r, 0, EC_RX_ACK_MERGED);
	printf("{\"payload\": %u, \"security\": \"%s\", \"frames\": %s, \"qps\": %u, "
	       "\"peer_window\": %u, \"wr_bytes\": %u, \"seed\": %" PRIu64 ", \"rx_batch\": %u"
	       ", \"ack_every\": %u, \"ack_batch\": %u, \"data_pkts\": %" PRIu64
	       ", \"warmup_pkts\": %" PRIu64 ", \"acks\": %" PRIu64 ", \"acks_merged\": %" PRIu64 ", \"bad_frames\": %" PRIu64
	       ", \"cpu_ns_per_pkt\": %.1f}\n", mtu, secname, r->frames ? "true" : "false",
	       r->nqps, r->peer_window, r->wr_bytes, r->seed, r->rx_batch, r->ack_every,
	       r->ack_batch, d1 - d0, d0, a1 - a0, m1 - m0, r->bad,
	       (t1 - t0) * 1e9 / (double)(d1 - d0));
	return r->bad ? 1 : 0;
}
