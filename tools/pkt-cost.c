// SPDX-License-Identifier: MIT
/*
 * pkt-cost: what mrocd's user space spends per data packet apart from the
 * kernel and the AF_XDP rings, counted without a clock (issue #22).  Two
 * engines back to back in one thread, one QP of 4 paths moving 1 MiB WRITEs
 * (4 outstanding), a fake clock; every packet either way (data and ACKs)
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
 *   pkt-cost [PACKETS [PAYLOAD [none|token [frames|bare]]]]
 *            (100000, 1024, token, frames; "bare": no framing, the engine alone)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "engine.h"
#include "frame.h"
#include "wire.h"

#define BATCH		64
#define PKT_NS		100		/* fake wire time per packet */
#define REGION		(4u << 20)
#define WR_BYTES	(1u << 20)
#define OUTSTANDING	4
#define FRAME_SIZE	4096		/* mrocd's frames above payload 1024 (2048 at 1024: fits too) */
#define UDP_PORT	4791

struct end {
	struct engine *eng;
	uint8_t *mem;
	uint32_t lkey, rkey, qpn;
	struct frame_tx ft;		/* this end's headers (addresses, MACs) */
};

struct run {
	struct end e[2];
	uint64_t now;
	bool frames;
	uint8_t buf[BATCH][FRAME_SIZE];
	struct engine_txbuf tx[BATCH];
	struct frame_rx rx[BATCH];
	uint64_t bad;			/* frames frame_parse refused: must stay 0 */
	struct frame_tmpls tmpls[2];	/* each end's headers, as the backend keeps them */
};

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * What the backend does for one packet from end `from`: frame it, parse it.
 * Its payload into rx[i] for the other end (NULL: refused).
 */
static void frame_one(struct run *r, int from, int i)
{
	struct engine_txbuf *b = &r->tx[i];
	struct frame_tx ft = r->e[from].ft;
	struct frame_rx *fr = &r->rx[i];
	enum frame_err why;
	int off;

	if (!r->frames) {
		*fr = (struct frame_rx){ .payload = b->data, .payload_len = b->len,
					 .sport = b->sport, .src = ft.src };
		return;
	}
	ft.sport = b->sport;
	ft.ecn = b->ect ? FRAME_ECN_ECT0 : FRAME_ECN_NOT_ECT;
	off = frame_build_cached(&r->tmpls[from], r->buf[i], b->len, &ft);
	if (off < 0 || frame_parse(r->buf[i] + off, frame_len(off, b->len, &ft), fr, &why) ||
	    fr->dport != UDP_PORT) {
		fr->payload = NULL;
		r->bad++;
	}
}

/* A batch from one end into the other, as mrocd's worker takes a received batch. */
static int pump(struct run *r, int from)
{
	int n;

	for (int i = 0; i < BATCH; i++)
		r->tx[i] = (struct engine_txbuf){
			.data = r->buf[i] + FRAME_HEADROOM,
			.cap = FRAME_SIZE - FRAME_HEADROOM - FRAME_ICRC_LEN,
		};
	n = engine_tx(r->e[from].eng, r->now, r->tx, BATCH);
	for (int i = 0; i < n; i++)
		frame_one(r, from, i);
	for (int i = 0; i < n; i++) {
		struct frame_rx *fr = &r->rx[i];
		struct engine_rx_meta meta = { .peer = (uint32_t)from, .sport = fr->sport,
					       .ce = fr->ecn == FRAME_ECN_CE, .src = &fr->src };

		if (fr->payload)
			engine_rx(r->e[!from].eng, r->now, fr->payload, fr->payload_len, &meta);
	}
	return n;
}

static int post(struct run *r, uint64_t id)
{
	struct engine_wr wr = {
		.wr_id = id, .opcode = ENGINE_WR_WRITE, .flags = ENGINE_WR_SIGNALED,
		.lkey = r->e[0].lkey, .laddr = (id % OUTSTANDING) * WR_BYTES, .len = WR_BYTES,
		.rkey = r->e[1].rkey, .raddr = (id % OUTSTANDING) * WR_BYTES,
	};

	return engine_post_send(r->e[0].eng, r->e[0].qpn, &wr, r->now);
}

/* Both directions, completions (a finished WRITE posted again), then time moves on. */
static int step(struct run *r)
{
	struct engine_cqe c[BATCH];
	int n = pump(r, 0) + pump(r, 1), connected = 0, got;

	for (int side = 0; side < 2; side++)
		while ((got = engine_poll_cq(r->e[side].eng, c, BATCH)) > 0)
			for (int i = 0; i < got; i++) {
				if (c[i].opcode == ENGINE_WC_EV_CONNECTED)
					connected++;
				else if (side == 0 && c[i].opcode == ENGINE_WC_WRITE &&
					 post(r, c[i].wr_id + OUTSTANDING))
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
	int connected = 0, n;

	engine_config_default(&cfg);
	cfg.max_qps = 8;
	cfg.mtu = mtu;
	cfg.sec_mode = sec;
	for (int i = 0; i < 2; i++) {
		struct end *e = &r->e[i];

		cfg.seed = (uint64_t)i + 1;
		set_end(e, (uint8_t)(i + 1));
		e->eng = engine_create(&cfg);
		e->mem = calloc(1, REGION);
		if (!e->eng || !e->mem ||
		    engine_mr_register(e->eng, 1, e->mem, REGION, ENGINE_ACCESS_ALL, &e->lkey,
				       &e->rkey))
			return -ENOMEM;
	}
	if (engine_qp_create(r->e[1].eng, &attr, &r->e[1].qpn) ||
	    engine_qp_listen(r->e[1].eng, r->e[1].qpn, 1000) ||
	    engine_qp_create(r->e[0].eng, &attr, &r->e[0].qpn) ||
	    engine_qp_connect(r->e[0].eng, r->e[0].qpn, 1, 1000, r->now))
		return -EINVAL;
	for (int i = 0; i < 100000 && connected < 2; i++) {
		n = step(r);
		if (n < 0)
			return n;
		connected += n;
	}
	if (connected < 2)
		return -ETIMEDOUT;
	for (uint64_t k = 0; k < OUTSTANDING; k++)
		if (post(r, k))
			return -EINVAL;
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t packets = argc > 1 ? strtoull(argv[1], NULL, 0) : 100000;
	uint32_t mtu = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) : 1024;
	const char *secname = argc > 3 ? argv[3] : "token";
	struct run *r = calloc(1, sizeof(*r));
	uint64_t d0, a0, a1, d1;
	double t0, t1;
	uint8_t sec;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		puts("usage: pkt-cost [PACKETS [PAYLOAD [none|token [frames|bare]]]]\n"
		     "  mrocd's user-space work per data packet but the rings and kernel: two engines\n"
		     "  back to back, every packet framed and parsed as the AF_XDP backend does (frames)\n"
		     "  or not (bare); count it with valgrind --tool=callgrind --toggle-collect=pkt_loop");
		return 0;
	}
	if (!strcmp(secname, "token"))
		sec = MROC_SEC_TOKEN;
	else if (!strcmp(secname, "none"))
		sec = MROC_SEC_NONE;
	else
		sec = 0xff;
	if (!r || !packets || mtu < 64 || mtu > FRAME_SIZE - FRAME_HEADROOM - FRAME_ICRC_LEN -
	    MROC_DATA_OVERHEAD - MROC_TAG_LEN || sec == 0xff ||
	    (argc > 4 && strcmp(argv[4], "frames") && strcmp(argv[4], "bare"))) {
		fprintf(stderr, "pkt-cost: bad arguments (pkt-cost --help)\n");
		return 2;
	}
	r->frames = argc <= 4 || !strcmp(argv[4], "frames");
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
	t0 = cpu_now();
	if (pkt_loop(r, packets))
		return 1;
	t1 = cpu_now();
	d1 = counter(r, 0, EC_TX_DATA);
	a1 = counter(r, 1, EC_TX_ACKS);
	printf("{\"payload\": %u, \"security\": \"%s\", \"frames\": %s, \"data_pkts\": %" PRIu64
	       ", \"warmup_pkts\": %" PRIu64 ", \"acks\": %" PRIu64 ", \"bad_frames\": %" PRIu64
	       ", \"cpu_ns_per_pkt\": %.1f}\n", mtu, secname, r->frames ? "true" : "false", d1 - d0,
	       d0, a1 - a0, r->bad, (t1 - t0) * 1e9 / (double)(d1 - d0));
	return r->bad ? 1 : 0;
}
