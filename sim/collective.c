// SPDX-License-Identifier: MIT
/*
 * Collectives: connections of k QPs between ranks, the pieces of data that
 * AllReduce steps and flows send over them, and the receive-side accounting
 * that decides when a rank has everything.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "rng.h"

#define SQ_DEPTH	256
#define RQ_DEPTH	512
#define SERVICE_BASE	0x636f6c6c0000ULL	/* "coll" */

/* One end of one QP: its WRs wait here while its send queue is full. */
struct coll_ep {
	uint32_t qpn;
	uint32_t rank;
	uint32_t recv_left;		/* RECVs still to post (one per WRITE_IMM to come) */
	struct engine_wr *pend;
	uint32_t ph, pt, pcap;
	bool connected;
};

struct coll_qp {
	struct coll_ep ep[2];		/* [0]: the connection's lower rank, [1]: the higher */
};

struct coll_conn {
	uint32_t a, b;			/* ranks, a < b */
	uint32_t first;			/* its k QPs: qps[first .. first + k - 1] */
};

struct coll_rank {
	uint32_t host;
	uint32_t lkey, rkey;
	uint8_t *mem;			/* the registered region: send area, then receive area */
	uint64_t expect, got;		/* flows: bytes to receive, received */
	uint64_t rx_bytes;		/* every kind: payload received */
	uint64_t *step_got;		/* stepped kinds: bytes received per step */
	uint32_t steps_rx;		/* stepped kinds: steps received and processed, in order */
	uint8_t *acc, *in;		/* stepped kinds with verify: accumulator, input */
	uint64_t t_done;		/* when it had everything (coll_flow_get) */
	bool done;
};

struct coll {
	struct cnet *cn;
	struct coll_config cfg;
	uint32_t n, k, nsteps;
	uint8_t algo;			/* stepped kinds: enum coll_algo, resolved */
	uint32_t ring_s0;		/* ring: the AllReduce step this operation's step 0 is */
	uint64_t *step_off;		/* stepped kinds: step s's place in the send/receive areas */
	uint64_t chunk;			/* stepped kinds: bytes per chunk (bytes / n); flows: per flow */
	uint64_t send_len, recv_len;
	struct coll_rank *ranks;
	struct coll_conn *conns;
	uint32_t nconns;
	int32_t *conn_of;		/* [a * n + b], a < b: connection index or -1 */
	struct coll_qp *qps;
	uint32_t nqps;
	uint32_t *dst_of;		/* permutation: each rank's destination */
	uint8_t *scratch;		/* without verify: every host's region */
	uint64_t *src_got, *src_t;	/* incast: bytes from each sender, when it was all there */
	uint32_t eps_connected;
	uint32_t ranks_done;
	bool started;
	struct coll_result res;
};

__attribute__((format(printf, 3, 4)))
static void fail(struct coll *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (c->res.err)
		return;
	c->res.err = err;
	va_start(ap, fmt);
	vsnprintf(c->res.why, sizeof(c->res.why), fmt, ap);
	va_end(ap);
}

/* ---- connections and pieces ------------------------------------------------- */

static int conn_add(struct coll *c, uint32_t x, uint32_t y)
{
	uint32_t a = x < y ? x : y, b = x < y ? y : x;

	if (x == y)
		return -EINVAL;
	if (c->conn_of[a * c->n + b] >= 0)
		return 0;
	c->conn_of[a * c->n + b] = (int32_t)c->nconns;
	c->conns[c->nconns++] = (struct coll_conn){ .a = a, .b = b };
	return 0;
}

static struct coll_ep *ep_of(struct coll *c, uint32_t src, uint32_t dst, uint32_t q,
			     struct coll_ep **peer)
{
	uint32_t a = src < dst ? src : dst, b = src < dst ? dst : src;
	struct coll_conn *cn = &c->conns[c->conn_of[a * c->n + b]];
	struct coll_qp *qp = &c->qps[cn->first + q];
	unsigned side = src == cn->a ? 0 : 1;

	*peer = &qp->ep[!side];
	return &qp->ep[side];
}

/* An end's identity in wr_id and attr.user: qp index * 2 + side. */
static uint64_t ep_id(const struct coll *c, const struct coll_ep *ep)
{
	_Static_assert(sizeof(struct coll_qp) == 2 * sizeof(struct coll_ep), "ep[] is the qp");
	return (uint64_t)(ep - &c->qps[0].ep[0]);
}

static struct coll_ep *ep_from_id(struct coll *c, uint64_t id)
{
	if (id >= 2ULL * c->nqps)
		return NULL;
	return &c->qps[id / 2].ep[id % 2];
}

static int ep_post(struct coll *c, struct coll_ep *ep, const struct engine_wr *wr)
{
	int err;

	if (ep->ph == ep->pt) {
		err = cnet_post_send(c->cn, c->ranks[ep->rank].host, ep->qpn, wr);
		if (err != -ENOSPC)
			return err;
	}
	if (ep->pt - ep->ph == ep->pcap) {
		uint32_t cap = ep->pcap ? ep->pcap * 2 : 64;
		struct engine_wr *p = malloc(cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		for (uint32_t i = 0; i < ep->pt - ep->ph; i++)
			p[i] = ep->pend[(ep->ph + i) % ep->pcap];
		free(ep->pend);
		ep->pend = p;
		ep->pt -= ep->ph;
		ep->ph = 0;
		ep->pcap = cap;
	}
	ep->pend[ep->pt++ % ep->pcap] = *wr;
	return 0;
}

static void ep_drain(struct coll *c, struct coll_ep *ep)
{
	while (ep->ph != ep->pt) {
		int err = cnet_post_send(c->cn, c->ranks[ep->rank].host, ep->qpn,
					 &ep->pend[ep->ph % ep->pcap]);

		if (err == -ENOSPC)
			return;
		if (err) {
			fail(c, err, "post_send on rank %u failed (%d)", ep->rank, err);
			return;
		}
		ep->ph++;
	}
}

/*
 * Send len bytes from src's send area at soff to dst's receive area at doff,
 * tagged imm: k equal parts, one per QP, in WRs of at most msg_bytes.  dry
 * only counts the WRITE_IMMs each receiving end will need a RECV for.
 */
static int send_piece(struct coll *c, uint32_t src, uint32_t dst, uint64_t len, uint64_t soff,
		      uint64_t doff, uint32_t imm, bool dry)
{
	for (uint32_t q = 0; q < c->k; q++) {
		uint64_t lo = len * q / c->k, hi = len * (q + 1) / c->k;
		struct coll_ep *peer, *ep = ep_of(c, src, dst, q, &peer);

		for (uint64_t off = lo; off < hi; off += c->cfg.msg_bytes) {
			uint64_t n = hi - off < c->cfg.msg_bytes ? hi - off : c->cfg.msg_bytes;
			struct engine_wr wr = {
				.wr_id = ep_id(c, ep),
				.opcode = ENGINE_WR_WRITE_IMM,
				.flags = ENGINE_WR_SIGNALED,
				.lkey = c->ranks[src].lkey,
				.laddr = soff + off,
				.len = (uint32_t)n,
				.rkey = c->ranks[dst].rkey,
				.raddr = c->send_len + doff + off,
				.imm = imm,
			};
			int err;

			if (dry) {
				peer->recv_left++;
				continue;
			}
			err = ep_post(c, ep, &wr);
			if (err)
				return err;
		}
	}
	return 0;
}

/* ---- what each operation sends ------------------------------------------------ */

/*
 * Stepped kinds.  Ring: AllReduce step s of rank r sends one chunk to r + 1;
 * ReduceScatter is steps 0 .. n-2 of it, AllGather steps n-1 .. 2n-3 (ring_s0),
 * so rank r starts AllGather holding chunk r + 1 and ends ReduceScatter
 * holding the sum of chunk r + 1.  Recursive doubling: see collective.h.
 */
static uint32_t ring_chunk_sent(const struct coll *c, uint32_t r, uint32_t s)
{
	uint32_t n = c->n;

	s += c->ring_s0;
	return s < n - 1 ? (r + n - s % n) % n : (r + 1 + n - (s - (n - 1)) % n) % n;
}

/* Recursive doubling: the partner's distance at step s. */
static uint32_t rd_dist(const struct coll *c, uint32_t s)
{
	return c->cfg.kind == COLL_REDUCESCATTER ? c->n >> (s + 1) : 1u << s;
}

static uint32_t step_to(const struct coll *c, uint32_t r, uint32_t s)
{
	return c->algo == COLL_ALGO_RD ? r ^ rd_dist(c, s) : (r + 1) % c->n;
}

static uint32_t step_from(const struct coll *c, uint32_t r, uint32_t s)
{
	return c->algo == COLL_ALGO_RD ? r ^ rd_dist(c, s) : (r + c->n - 1) % c->n;
}

/* The chunks [*first, *first + *count) rank r sends at step s. */
static void step_chunks(const struct coll *c, uint32_t r, uint32_t s, uint32_t *first,
			uint32_t *count)
{
	uint32_t d;

	if (c->algo != COLL_ALGO_RD) {
		*first = ring_chunk_sent(c, r, s);
		*count = 1;
		return;
	}
	d = rd_dist(c, s);
	switch (c->cfg.kind) {
	case COLL_REDUCESCATTER:	/* the half of r's block of 2d not holding chunk r */
		*first = (r & ~(2 * d - 1)) + (r & d ? 0 : d);
		*count = d;
		return;
	case COLL_ALLGATHER:		/* r's block of d */
		*first = r & ~(d - 1);
		*count = d;
		return;
	default:			/* AllReduce: everything */
		*first = 0;
		*count = c->n;
	}
}

static uint64_t step_len(const struct coll *c, uint32_t s)
{
	uint32_t first, count;

	step_chunks(c, 0, s, &first, &count);
	return count * c->chunk;
}

/* Does the receiver add (reduce) step s, or copy it? */
static bool step_reduces(const struct coll *c, uint32_t s)
{
	switch (c->cfg.kind) {
	case COLL_ALLGATHER:
		return false;
	case COLL_REDUCESCATTER:
		return true;
	default:
		return c->algo == COLL_ALGO_RD || s < c->n - 1;
	}
}

static int step_send(struct coll *c, uint32_t r, uint32_t s, bool dry)
{
	uint64_t off = c->cfg.verify ? c->step_off[s] : 0, len = step_len(c, s);
	uint32_t first, count;

	if (c->cfg.verify && !dry) {
		step_chunks(c, r, s, &first, &count);
		memcpy(c->ranks[r].mem + off, c->ranks[r].acc + first * c->chunk, len);
	}
	return send_piece(c, r, step_to(c, r, s), len, off, off, s, dry);
}

/* Step s fully received at rank r: reduce or copy into the accumulator. */
static void step_absorb(struct coll *c, uint32_t r, uint32_t s)
{
	struct coll_rank *rk = &c->ranks[r];
	uint32_t first, count;
	uint64_t len;
	uint8_t *acc, *rx;

	if (!c->cfg.verify)
		return;
	step_chunks(c, step_from(c, r, s), s, &first, &count);
	len = (uint64_t)count * c->chunk;
	acc = rk->acc + first * c->chunk;
	rx = rk->mem + c->send_len + c->step_off[s];
	if (step_reduces(c, s))
		for (uint64_t i = 0; i < len; i++)
			acc[i] = (uint8_t)(acc[i] + rx[i]);
	else
		memcpy(acc, rx, len);
}

/* Flow i of the operation (i < nflows): source, destination, offsets. */
static bool flow_at(const struct coll *c, uint64_t i, uint32_t *src, uint32_t *dst,
		    uint64_t *soff, uint64_t *doff)
{
	uint32_t n = c->n;
	bool v = c->cfg.verify;

	switch (c->cfg.kind) {
	case COLL_ALLTOALL:
		if (i >= (uint64_t)n * (n - 1))
			return false;
		*src = (uint32_t)(i / (n - 1));
		*dst = (uint32_t)(i % (n - 1));
		*dst += *dst >= *src;
		*soff = v ? *dst * c->chunk : 0;
		*doff = v ? *src * c->chunk : 0;
		return true;
	case COLL_PERMUTATION:
		if (i >= n)
			return false;
		*src = (uint32_t)i;
		*dst = c->dst_of[i];
		*soff = *doff = 0;
		return true;
	case COLL_INCAST:
		if (i >= c->cfg.senders)
			return false;
		*src = (uint32_t)i + 1;
		*dst = 0;
		*soff = 0;
		*doff = v ? *src * c->chunk : 0;
		return true;
	}
	return false;
}

static int send_all(struct coll *c, bool dry)
{
	uint32_t src, dst;
	uint64_t soff, doff;
	int err = 0;

	if (coll_stepped(c->cfg.kind)) {
		if (dry) {
			for (uint32_t r = 0; r < c->n && !err; r++)
				for (uint32_t s = 0; s < c->nsteps && !err; s++)
					err = step_send(c, r, s, true);
			return err;
		}
		for (uint32_t r = 0; r < c->n && !err; r++)
			err = step_send(c, r, 0, false);
		return err;
	}
	for (uint64_t i = 0; !err && flow_at(c, i, &src, &dst, &soff, &doff); i++) {
		if (dry)
			c->ranks[dst].expect += c->chunk;
		err = send_piece(c, src, dst, c->chunk, soff, doff, src, dry);
	}
	return err;
}

/* ---- completions ---------------------------------------------------------------- */

static void rank_done(struct coll *c, struct coll_rank *rk)
{
	rk->done = true;
	rk->t_done = cnet_now(c->cn);
	if (++c->ranks_done == c->n)
		c->res.t_end = cnet_now(c->cn);
}

static void on_recv(struct coll *c, struct coll_ep *ep, const struct engine_cqe *cqe)
{
	struct coll_rank *rk = &c->ranks[ep->rank];
	uint32_t r = ep->rank;

	if (ep->recv_left) {
		struct engine_recv_wr rw = { .wr_id = ep_id(c, ep) };

		if (cnet_post_recv(c->cn, rk->host, ep->qpn, &rw))
			fail(c, -EIO, "rank %u: RECV not posted", r);
		ep->recv_left--;
	}
	rk->rx_bytes += cqe->byte_len;
	if (c->cfg.kind == COLL_INCAST && cqe->imm < c->n) {
		c->src_got[cqe->imm] += cqe->byte_len;
		if (c->src_got[cqe->imm] == c->chunk)
			c->src_t[cqe->imm] = cnet_now(c->cn);
	}
	if (!coll_stepped(c->cfg.kind)) {
		rk->got += cqe->byte_len;
		if (rk->got == rk->expect && !rk->done)
			rank_done(c, rk);
		return;
	}
	if (cqe->imm >= c->nsteps) {
		fail(c, -EIO, "rank %u: immediate %u is no step", r, cqe->imm);
		return;
	}
	rk->step_got[cqe->imm] += cqe->byte_len;
	/* Steps can complete out of order across QPs and partners: take them in order. */
	while (rk->steps_rx < c->nsteps &&
	       rk->step_got[rk->steps_rx] == step_len(c, rk->steps_rx)) {
		step_absorb(c, r, rk->steps_rx);
		if (++rk->steps_rx < c->nsteps) {
			int err = step_send(c, r, rk->steps_rx, false);

			if (err)
				fail(c, err, "rank %u: step %u not posted", r, rk->steps_rx);
		} else {
			rank_done(c, rk);
		}
	}
}

static void on_cqe(struct cnet *cn, uint32_t host, const struct engine_cqe *cqe, void *ctx)
{
	struct coll *c = ctx;
	struct coll_ep *ep = ep_from_id(c, cqe->wr_id);

	(void)cn;
	if (!ep || c->ranks[ep->rank].host != host) {
		fail(c, -EIO, "host %u: completion for no endpoint of it (opcode %u)", host,
		     cqe->opcode);
		return;
	}
	if (cqe->status != ENGINE_WC_SUCCESS || cqe->opcode == ENGINE_WC_EV_ERROR ||
	    cqe->opcode == ENGINE_WC_EV_DISCONNECTED) {
		fail(c, -EIO, "rank %u: completion status %u", ep->rank,
		     cqe->status ? cqe->status : 100 + cqe->opcode);
		return;
	}
	switch (cqe->opcode) {
	case ENGINE_WC_EV_CONNECTED:
		if (!ep->connected) {
			ep->connected = true;
			c->eps_connected++;
		}
		break;
	case ENGINE_WC_WRITE_IMM:
		ep_drain(c, ep);
		break;
	case ENGINE_WC_RECV_RDMA_IMM:
		on_recv(c, ep, cqe);
		break;
	default:
		fail(c, -EIO, "rank %u: unexpected opcode %u", ep->rank, cqe->opcode);
	}
}

/* ---- set-up ---------------------------------------------------------------------- */

/* Steps, their places in the send and receive areas, and the connections they use. */
static int plan_stepped(struct coll *c)
{
	const struct coll_config *cfg = &c->cfg;
	uint32_t n = c->n;
	uint64_t off = 0, most = 0;

	c->algo = (uint8_t)coll_algo_pick(cfg->kind, cfg->algo, n, cfg->bytes, cfg->nic_bps);
	c->res.algo = c->algo;
	c->chunk = (cfg->bytes + n - 1) / n;
	if (!c->chunk)
		c->chunk = 1;
	if (c->algo == COLL_ALGO_RD)
		c->nsteps = coll_log2_exact(n);
	else
		c->nsteps = cfg->kind == COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;
	c->ring_s0 = c->algo == COLL_ALGO_RING && cfg->kind == COLL_ALLGATHER ? n - 1 : 0;
	c->step_off = calloc(c->nsteps, sizeof(*c->step_off));
	if (!c->step_off)
		return -ENOMEM;
	for (uint32_t s = 0; s < c->nsteps; s++) {
		uint64_t len = step_len(c, s);

		c->step_off[s] = off;
		off += len;
		most = len > most ? len : most;
		for (uint32_t r = 0; r < n; r++)
			conn_add(c, r, step_to(c, r, s));
	}
	/* Without verify every step reuses the start of the shared scratch region. */
	c->send_len = c->recv_len = cfg->verify ? off : most;
	c->res.payload_bytes = (uint64_t)n * off;
	return 0;
}

static int plan(struct coll *c)
{
	const struct coll_config *cfg = &c->cfg;
	uint32_t n = c->n;
	struct rng rng;

	switch (cfg->kind) {
	case COLL_ALLREDUCE:
	case COLL_ALLGATHER:
	case COLL_REDUCESCATTER:
		return plan_stepped(c);
	case COLL_ALLTOALL:
		c->chunk = cfg->bytes / n ? cfg->bytes / n : 1;
		c->send_len = c->recv_len = cfg->verify ? n * c->chunk : c->chunk;
		c->res.payload_bytes = (uint64_t)n * (n - 1) * c->chunk;
		for (uint32_t a = 0; a < n; a++)
			for (uint32_t b = a + 1; b < n; b++)
				conn_add(c, a, b);
		break;
	case COLL_PERMUTATION:
		/* Sattolo's shuffle: one cycle through every rank, so nobody sends to itself. */
		rng_seed(&rng, cfg->seed ^ 0x7065726dULL);
		for (uint32_t i = 0; i < n; i++)
			c->dst_of[i] = i;
		for (uint32_t i = n - 1; i > 0; i--) {
			uint32_t j = (uint32_t)rng_below(&rng, i), t = c->dst_of[i];

			c->dst_of[i] = c->dst_of[j];
			c->dst_of[j] = t;
		}
		c->chunk = cfg->bytes ? cfg->bytes : 1;
		c->send_len = c->recv_len = c->chunk;
		c->res.payload_bytes = (uint64_t)n * c->chunk;
		for (uint32_t r = 0; r < n; r++)
			conn_add(c, r, c->dst_of[r]);
		break;
	case COLL_INCAST:
		if (!cfg->senders || cfg->senders >= n)
			return -EINVAL;
		c->chunk = cfg->bytes ? cfg->bytes : 1;
		c->send_len = c->chunk;
		c->recv_len = cfg->verify ? (uint64_t)(cfg->senders + 1) * c->chunk : c->chunk;
		c->res.payload_bytes = (uint64_t)cfg->senders * c->chunk;
		for (uint32_t r = 1; r <= cfg->senders; r++)
			conn_add(c, r, 0);
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

/*
 * The chunk rank r starts AllGather with and ends ReduceScatter with: the
 * ring's (r + 1, see ring_chunk_sent) or recursive doubling's (r).
 */
static uint32_t own_chunk(const struct coll *c, uint32_t r)
{
	return c->algo == COLL_ALGO_RD ? r : (r + 1) % c->n;
}

/* Memory: real per-rank data with verify, one shared scratch region without. */
static int regions(struct coll *c)
{
	uint64_t len = c->send_len + c->recv_len;
	struct rng rng;

	if (!c->cfg.verify) {
		c->scratch = calloc(1, len);
		if (!c->scratch)
			return -ENOMEM;
	}
	for (uint32_t r = 0; r < c->n; r++) {
		struct coll_rank *rk = &c->ranks[r];
		int err;

		rk->mem = c->scratch ? c->scratch : calloc(1, len);
		if (!rk->mem)
			return -ENOMEM;
		if (c->cfg.verify) {
			rng_seed(&rng, c->cfg.seed * 1000003 + r);
			if (coll_stepped(c->cfg.kind)) {
				rk->in = malloc(c->n * c->chunk);
				rk->acc = calloc(c->n, c->chunk);
				if (!rk->in || !rk->acc)
					return -ENOMEM;
				rng_fill(&rng, rk->in, c->n * c->chunk);
				if (c->cfg.kind != COLL_ALLGATHER)
					memcpy(rk->acc, rk->in, c->n * c->chunk);
				else	/* AllGather: a rank has only its own chunk */
					memcpy(rk->acc + own_chunk(c, r) * c->chunk,
					       rk->in + own_chunk(c, r) * c->chunk, c->chunk);
			} else {
				rng_fill(&rng, rk->mem, c->send_len);
			}
		}
		if (coll_stepped(c->cfg.kind)) {
			rk->step_got = calloc(c->nsteps, sizeof(*rk->step_got));
			if (!rk->step_got)
				return -ENOMEM;
		}
		err = engine_mr_register(cnet_engine(c->cn, rk->host), 0, rk->mem, len,
					 ENGINE_ACCESS_ALL, &rk->lkey, &rk->rkey);
		if (err)
			return err;
	}
	return 0;
}

static int qps_create(struct coll *c)
{
	struct engine_qp_attr attr = {
		.mode = c->cfg.mode,
		.npaths = c->cfg.npaths,
		.sq_depth = SQ_DEPTH,
		.rq_depth = RQ_DEPTH,
		.max_rd = 1,
	};

	c->nqps = c->nconns * c->k;
	c->qps = calloc(c->nqps, sizeof(*c->qps));
	if (!c->qps)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->nconns; i++) {
		struct coll_conn *cn = &c->conns[i];

		cn->first = i * c->k;
		for (uint32_t q = 0; q < c->k; q++) {
			struct coll_qp *qp = &c->qps[cn->first + q];
			uint32_t rank[2] = { cn->a, cn->b };

			for (int s = 0; s < 2; s++) {
				struct engine *eng = cnet_engine(c->cn, c->ranks[rank[s]].host);
				int err;

				qp->ep[s].rank = rank[s];
				attr.user = ep_id(c, &qp->ep[s]);
				err = engine_qp_create(eng, &attr, &qp->ep[s].qpn);
				if (!err && c->cfg.pin_planes)
					err = cnet_pin_qp(c->cn, c->ranks[rank[s]].host, qp->ep[s].qpn,
							  q % c->cfg.pin_planes);
				if (err)
					return err;
			}
		}
	}
	return 0;
}

/* RECVs for what will arrive (as many as fit; on_recv posts the rest), then connect. */
static int qps_connect(struct coll *c)
{
	for (uint32_t i = 0; i < c->nqps; i++) {
		struct coll_qp *qp = &c->qps[i];
		uint64_t sid = SERVICE_BASE + i;
		int err;

		err = engine_qp_listen(cnet_engine(c->cn, c->ranks[qp->ep[1].rank].host),
				       qp->ep[1].qpn, sid);
		if (err)
			return err;
		err = cnet_qp_connect(c->cn, c->ranks[qp->ep[0].rank].host, qp->ep[0].qpn,
				      c->ranks[qp->ep[1].rank].host, sid);
		if (err)
			return err;
	}
	return 0;
}

static int recvs_post(struct coll *c)
{
	for (uint32_t i = 0; i < 2 * c->nqps; i++) {
		struct coll_ep *ep = ep_from_id(c, i);
		uint32_t host = c->ranks[ep->rank].host;

		while (ep->recv_left) {
			struct engine_recv_wr rw = { .wr_id = i };
			int err = cnet_post_recv(c->cn, host, ep->qpn, &rw);

			if (err == -ENOSPC)
				break;
			if (err)
				return err;
			ep->recv_left--;
		}
	}
	return 0;
}

struct coll *coll_create(struct cnet *cn, const struct coll_config *cfg)
{
	struct coll *c;
	uint32_t n = cfg->nranks;
	int err = -EINVAL;

	if (n < 2 || !cfg->rank_host || !cfg->qps_per_conn || !cfg->msg_bytes ||
	    cfg->kind >= COLL__KINDS) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->cn = cn;
	c->cfg = *cfg;
	c->cfg.rank_host = NULL;
	c->n = n;
	c->k = cfg->qps_per_conn;
	c->ranks = calloc(n, sizeof(*c->ranks));
	c->conns = calloc((size_t)n * n / 2 + n, sizeof(*c->conns));
	c->conn_of = malloc((size_t)n * n * sizeof(*c->conn_of));
	c->dst_of = calloc(n, sizeof(*c->dst_of));
	c->src_got = calloc(n, sizeof(*c->src_got));
	c->src_t = calloc(n, sizeof(*c->src_t));
	if (!c->ranks || !c->conns || !c->conn_of || !c->dst_of || !c->src_got || !c->src_t) {
		err = -ENOMEM;
		goto fail;
	}
	memset(c->conn_of, 0xff, (size_t)n * n * sizeof(*c->conn_of));
	for (uint32_t r = 0; r < n; r++) {
		c->ranks[r].host = cfg->rank_host[r];
		if (cfg->rank_host[r] >= cnet_nhosts(cn))
			goto fail;
		for (uint32_t q = 0; q < r; q++)
			if (cfg->rank_host[q] == cfg->rank_host[r])
				goto fail;	/* one rank per host */
	}
	err = plan(c);
	if (!err)
		err = regions(c);
	if (!err)
		err = qps_create(c);
	if (!err)
		err = send_all(c, true);	/* counts the RECVs each end needs */
	if (!err)
		err = recvs_post(c);
	if (err)
		goto fail;
	cnet_set_cqe_cb(cn, on_cqe, c);
	err = qps_connect(c);
	if (err)
		goto fail;
	c->res.qps = c->nqps;
	return c;
fail:
	coll_destroy(c);
	errno = -err;
	return NULL;
}

void coll_destroy(struct coll *c)
{
	if (!c)
		return;
	cnet_set_cqe_cb(c->cn, NULL, NULL);
	for (uint32_t i = 0; c->qps && i < c->nqps; i++)
		for (int s = 0; s < 2; s++) {
			struct coll_ep *ep = &c->qps[i].ep[s];

			if (ep->qpn)
				engine_qp_destroy(cnet_engine(c->cn, c->ranks[ep->rank].host),
						  ep->qpn);
			free(ep->pend);
		}
	for (uint32_t r = 0; c->ranks && r < c->n; r++) {
		struct coll_rank *rk = &c->ranks[r];

		if (rk->lkey)
			engine_mr_deregister(cnet_engine(c->cn, rk->host), rk->lkey);
		if (!c->scratch)
			free(rk->mem);
		free(rk->acc);
		free(rk->in);
		free(rk->step_got);
	}
	free(c->scratch);
	free(c->step_off);
	free(c->qps);
	free(c->ranks);
	free(c->conns);
	free(c->conn_of);
	free(c->dst_of);
	free(c->src_got);
	free(c->src_t);
	free(c);
}

bool coll_connected(const struct coll *c)
{
	return c->eps_connected == 2 * c->nqps;
}

int coll_start(struct coll *c)
{
	int err;

	if (!coll_connected(c) || c->started)
		return -EINVAL;
	c->started = true;
	c->res.t_start = cnet_now(c->cn);
	/* Incast: only the receiver receives; the others have nothing to wait for. */
	for (uint32_t r = 0; !coll_stepped(c->cfg.kind) && r < c->n; r++)
		if (!c->ranks[r].expect)
			rank_done(c, &c->ranks[r]);
	err = send_all(c, false);
	if (err)
		fail(c, err, "posting the operation failed (%d)", err);
	return err;
}

bool coll_finished(const struct coll *c)
{
	return c->res.err || c->ranks_done == c->n;
}

/*
 * AllReduce: every rank holds the sum of every input; ReduceScatter: its own
 * chunk of that sum; AllGather: every rank's own chunk of its input.
 */
static int verify_stepped(struct coll *c)
{
	uint64_t len = c->n * c->chunk, ch = c->chunk;
	uint8_t *want = calloc(1, len);

	if (!want)
		return -ENOMEM;
	for (uint32_t r = 0; r < c->n; r++) {
		uint64_t o = own_chunk(c, r) * ch;

		if (c->cfg.kind == COLL_ALLGATHER)
			memcpy(want + o, c->ranks[r].in + o, ch);
		else
			for (uint64_t i = 0; i < len; i++)
				want[i] = (uint8_t)(want[i] + c->ranks[r].in[i]);
	}
	for (uint32_t r = 0; r < c->n; r++) {
		uint64_t o = c->cfg.kind == COLL_REDUCESCATTER ? own_chunk(c, r) * ch : 0;
		uint64_t n = c->cfg.kind == COLL_REDUCESCATTER ? ch : len;

		if (memcmp(want + o, c->ranks[r].acc + o, n)) {
			fail(c, -EIO, "rank %u does not hold what %s should give it", r,
			     coll_kind_name(c->cfg.kind));
			break;
		}
	}
	free(want);
	return c->res.err;
}

static int verify_flows(struct coll *c)
{
	uint32_t src, dst;
	uint64_t soff, doff;

	for (uint64_t i = 0; flow_at(c, i, &src, &dst, &soff, &doff); i++)
		if (memcmp(c->ranks[src].mem + soff, c->ranks[dst].mem + c->send_len + doff,
			   c->chunk)) {
			fail(c, -EIO, "data from rank %u to rank %u differs", src, dst);
			break;
		}
	return c->res.err;
}

/* Incast: each sender's goodput over its own completion time, and Jain's index of them. */
static void incast_fairness(struct coll *c)
{
	struct coll_result *r = &c->res;
	double sum = 0, sq = 0;
	uint32_t m = c->cfg.senders;

	r->flow_min_us = 0;
	r->flow_max_us = 0;
	for (uint32_t s = 1; s <= m; s++) {
		double us = (double)(c->src_t[s] - r->t_start) / 1e3;
		double x = (double)c->chunk / us;

		if (!r->flow_min_us || us < r->flow_min_us)
			r->flow_min_us = us;
		if (us > r->flow_max_us)
			r->flow_max_us = us;
		sum += x;
		sq += x * x;
	}
	r->jain = sq > 0 ? sum * sum / (m * sq) : 0;
}

int coll_verify(struct coll *c)
{
	struct coll_result *r = &c->res;

	r->done = !r->err && c->ranks_done == c->n;
	r->rank_rx_min = r->rank_rx_max = c->ranks[0].rx_bytes;
	for (uint32_t i = 1; i < c->n; i++) {
		uint64_t b = c->ranks[i].rx_bytes;

		r->rank_rx_min = b < r->rank_rx_min ? b : r->rank_rx_min;
		r->rank_rx_max = b > r->rank_rx_max ? b : r->rank_rx_max;
	}
	if (r->done) {
		r->time_us = (double)(r->t_end - r->t_start) / 1e3;
		r->algbw_gbps = r->t_end > r->t_start ?
				(double)c->cfg.bytes / (double)(r->t_end - r->t_start) : 0;
		r->busbw_gbps = r->algbw_gbps * coll_bus_factor(c->cfg.kind, c->n);
		if (c->cfg.kind == COLL_INCAST)
			incast_fairness(c);
	}
	if (!r->done && !r->err)
		fail(c, -ETIMEDOUT, "%u of %u ranks have everything", c->ranks_done, c->n);
	if (r->err || !c->cfg.verify)
		return r->err;
	return coll_stepped(c->cfg.kind) ? verify_stepped(c) : verify_flows(c);
}

int coll_flow_get(const struct coll *c, uint32_t i, struct coll_flow *out)
{
	struct coll_ep *ep, *peer;
	uint32_t src, dst;
	uint64_t soff, doff;

	if (coll_stepped(c->cfg.kind) || !flow_at(c, i, &src, &dst, &soff, &doff))
		return -ENOENT;
	ep = ep_of((struct coll *)c, src, dst, 0, &peer);
	*out = (struct coll_flow){
		.src = src, .dst = dst, .src_host = c->ranks[src].host,
		.dst_host = c->ranks[dst].host, .qpn = ep->qpn,
		/* A permutation's receiver has one source: its end is the flow's. */
		.t_done_ns = c->cfg.kind == COLL_PERMUTATION && c->ranks[dst].done ?
			     c->ranks[dst].t_done - c->res.t_start : 0,
	};
	return 0;
}

const struct coll_result *coll_result(const struct coll *c)
{
	return &c->res;
}
