// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "workload.h"

#define WL_PD		1
#define WL_USER_CLIENT	0xc11e47ULL	/* attr.user: comes back in events */
#define WL_USER_SERVER	0x5e7e7ULL
/* The engine keeps at most 16 READs outstanding per QP (as IB's max_rd_atomic). */
#define WL_MAX_RD	16

struct wl_msg {
	uint64_t off;
	uint64_t before;		/* FETCH_ADD: the counter it must find */
	uint32_t len;
	uint8_t op;			/* enum wl_op */
};

struct wl_region {
	uint8_t *buf;
	uint32_t lkey, rkey;
	bool registered;
};

struct workload {
	struct sim *sim;
	struct wl_config cfg;
	struct wl_result res;
	struct wl_msg *msgs;		/* in posting order: wr_id = index */
	uint32_t *recv_msgs;		/* RECV j is consumed by message recv_msgs[j] */
	uint32_t nmsgs, nrecvs;
	uint32_t next_post, next_cqe;	/* client send queue */
	uint32_t next_recv_post, next_recv_cqe;
	uint32_t cqpn, sqpn;
	bool client_up, server_up;
	struct wl_region csrc, cdst;	/* on the client */
	struct wl_region sdst, ssrc;	/* on the server */
	struct wl_region catom, satom;	/* FETCH_ADD results (a slot per WR in flight), counter */
	uint64_t atom_sum;		/* what the counter must end at */
};

static const uint8_t wc_of_op[WL_OP__COUNT] = {
	[WL_WRITE] = ENGINE_WC_WRITE,
	[WL_WRITE_IMM] = ENGINE_WC_WRITE_IMM,
	[WL_SEND] = ENGINE_WC_SEND,
	[WL_READ] = ENGINE_WC_READ,
	[WL_FETCH_ADD] = ENGINE_WC_ATOMIC_FETCH_ADD,
};

static const uint8_t wr_of_op[WL_OP__COUNT] = {
	[WL_WRITE] = ENGINE_WR_WRITE,
	[WL_WRITE_IMM] = ENGINE_WR_WRITE_IMM,
	[WL_SEND] = ENGINE_WR_SEND,
	[WL_READ] = ENGINE_WR_READ,
	[WL_FETCH_ADD] = ENGINE_WR_ATOMIC_FETCH_ADD,
};

static const char *const op_name[WL_OP__COUNT] = {
	"WRITE", "WRITE_IMM", "SEND", "READ", "FETCH_ADD",
};

#define ATOM_LEN	8

void wl_config_default(struct wl_config *cfg)
{
	*cfg = (struct wl_config){
		.client = 0,
		.server = 1,
		.total_bytes = 64ULL << 20,
		.msg_bytes = 64 << 10,
		.outstanding = 16,
		.mix = { 1, 1, 1, 1, 0 },
		.mode = MROC_MODE_METAROCE,
		.npaths = 4,
		.seed = 1,
		.service_id = 0x6d726f63,	/* "mroc" */
	};
}

/* Record the first failure only: later ones are usually its consequences. */
__attribute__((format(printf, 3, 4)))
static void wl_fail(struct workload *wl, int err, const char *fmt, ...)
{
	va_list ap;

	if (wl->res.err)
		return;
	wl->res.err = err;
	va_start(ap, fmt);
	vsnprintf(wl->res.why, sizeof(wl->res.why), fmt, ap);
	va_end(ap);
}

static inline uint32_t wl_imm(const struct workload *wl, uint32_t i)
{
	return (uint32_t)rng_mix64(wl->cfg.seed ^ ((uint64_t)i << 20) ^ 0x1337);
}

/* Where dst differs from src: the first offset, or -1. */
static int64_t first_diff(const uint8_t *dst, const uint8_t *src, uint64_t len)
{
	if (!memcmp(dst, src, len))
		return -1;
	for (uint64_t i = 0; i < len; i++)
		if (dst[i] != src[i])
			return (int64_t)i;
	return -1;
}

static int64_t first_nonzero(const uint8_t *p, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++)
		if (p[i])
			return (int64_t)i;
	return -1;
}

/* The destination of message i, and where its data comes from. */
static void msg_bufs(const struct workload *wl, const struct wl_msg *m, const uint8_t **src,
		     const uint8_t **dst, const uint8_t **other)
{
	const struct wl_region *o = m->op == WL_READ ? &wl->sdst : &wl->cdst;

	if (m->op == WL_READ) {
		*src = wl->ssrc.buf + m->off;
		*dst = wl->cdst.buf + m->off;
	} else {
		*src = wl->csrc.buf + m->off;
		*dst = wl->sdst.buf + m->off;
	}
	/* NULL when the mix has no op of the other direction. */
	*other = o->buf ? o->buf + m->off : NULL;
}

static uint64_t *atom_slot(const struct workload *wl, uint32_t i)
{
	return (uint64_t *)(void *)wl->catom.buf + i % wl->cfg.outstanding;
}

/* A completion says message i is placed: check its bytes now. */
static void check_placed(struct workload *wl, uint32_t i, const char *who)
{
	const struct wl_msg *m = &wl->msgs[i];
	const uint8_t *src, *dst, *other;
	int64_t d;

	if (m->op == WL_FETCH_ADD) {
		if (*atom_slot(wl, i) != m->before)
			wl_fail(wl, -EIO, "%s completion of msg %u (FETCH_ADD): the counter was %"
				PRIu64 ", expected %" PRIu64 " (an add lost, reordered or twice)",
				who, i, *atom_slot(wl, i), m->before);
		return;
	}
	msg_bufs(wl, m, &src, &dst, &other);
	d = first_diff(dst, src, m->len);
	if (d >= 0)
		wl_fail(wl, -EIO, "%s completion of msg %u (%s off %" PRIu64 " len %u): data "
			"not in place at transfer offset %" PRIu64, who, i, op_name[m->op],
			m->off, m->len, m->off + (uint64_t)d);
}

/* ---- op sequence ------------------------------------------------------------------ */

/* Message i's size: fixed, or drawn from [msg_min, msg_bytes]. */
static uint32_t plan_len(const struct wl_config *cfg, struct rng *r, uint64_t left)
{
	uint64_t len = cfg->msg_bytes;

	if (cfg->msg_min && cfg->msg_min < cfg->msg_bytes)
		len = cfg->msg_min + rng_below(r, cfg->msg_bytes - cfg->msg_min + 1);
	return (uint32_t)(left < len ? left : len);
}

/* FETCH_ADDs take 8 bytes whatever the message size: the plan outgrows its first guess. */
static int plan_grow(struct workload *wl, uint64_t *cap)
{
	uint64_t n = *cap * 2;
	struct wl_msg *m;
	uint32_t *r;

	if (n > UINT32_MAX / 2)
		return -EINVAL;
	m = realloc(wl->msgs, n * sizeof(*m));
	if (m)
		wl->msgs = m;
	r = realloc(wl->recv_msgs, n * sizeof(*r));
	if (r)
		wl->recv_msgs = r;
	if (!m || !r)
		return -ENOMEM;
	memset(m + *cap, 0, (n - *cap) * sizeof(*m));
	*cap = n;
	return 0;
}

static int wl_plan(struct workload *wl)
{
	const struct wl_config *cfg = &wl->cfg;
	uint32_t smallest = cfg->msg_min && cfg->msg_min < cfg->msg_bytes ? cfg->msg_min :
			    cfg->msg_bytes;
	uint64_t cap = (cfg->total_bytes + smallest - 1) / smallest, off = 0;
	uint32_t wsum = 0, n = 0;
	struct rng r;

	for (int t = 0; t < WL_OP__COUNT; t++)
		wsum += cfg->mix[t];
	if (!wsum || !cap || cap > UINT32_MAX / 2)
		return -EINVAL;
	wl->msgs = calloc(cap, sizeof(*wl->msgs));
	wl->recv_msgs = calloc(cap, sizeof(*wl->recv_msgs));
	if (!wl->msgs || !wl->recv_msgs)
		return -ENOMEM;
	rng_seed(&r, cfg->seed ^ 0x6f7073ULL);
	while (off < cfg->total_bytes) {
		struct wl_msg *m;
		uint32_t pick;

		if (n == cap) {
			int err = plan_grow(wl, &cap);

			if (err)
				return err;
		}
		m = &wl->msgs[n];
		pick = (uint32_t)rng_below(&r, wsum);
		m->off = off;
		m->len = plan_len(cfg, &r, cfg->total_bytes - off);
		for (m->op = 0; pick >= cfg->mix[m->op]; m->op++)
			pick -= cfg->mix[m->op];
		if (m->op == WL_SEND || m->op == WL_WRITE_IMM)
			wl->recv_msgs[wl->nrecvs++] = n;
		if (m->op == WL_FETCH_ADD) {
			m->len = (uint32_t)(cfg->total_bytes - off < ATOM_LEN ? cfg->total_bytes - off :
					    ATOM_LEN);
			m->before = wl->atom_sum;
			wl->atom_sum += m->off + 1;
		}
		off += m->len;
		n++;
	}
	wl->nmsgs = n;
	wl->res.ops_total = n;
	return 0;
}

/* ---- posting ------------------------------------------------------------------------ */

static void post_sends(struct workload *wl)
{
	while (!wl->res.err && wl->next_post < wl->nmsgs &&
	       wl->next_post - wl->next_cqe < wl->cfg.outstanding) {
		uint32_t i = wl->next_post;
		const struct wl_msg *m = &wl->msgs[i];
		struct engine_wr wr = {
			.wr_id = i,
			.opcode = wr_of_op[m->op],
			.flags = ENGINE_WR_SIGNALED,
			.lkey = m->op == WL_READ ? wl->cdst.lkey : wl->csrc.lkey,
			.laddr = m->off,
			.len = m->len,
			.rkey = m->op == WL_READ ? wl->ssrc.rkey : wl->sdst.rkey,
			.raddr = m->off,
			.imm = m->op == WL_WRITE_IMM ? wl_imm(wl, i) : 0,
		};

		if (m->op == WL_FETCH_ADD) {
			wr.lkey = wl->catom.lkey;
			wr.laddr = (uint64_t)(i % wl->cfg.outstanding) * ATOM_LEN;
			wr.len = ATOM_LEN;
			wr.rkey = wl->satom.rkey;
			wr.raddr = 0;
			wr.compare_add = m->off + 1;
		}
		int err = sim_post_send(wl->sim, wl->cfg.client, wl->cqpn, &wr);

		if (err == -ENOSPC)
			return;		/* the next completion makes room */
		if (err) {
			wl_fail(wl, err, "engine_post_send(msg %u, %s) failed: %s", i,
				op_name[m->op], strerror(-err));
			return;
		}
		if (i == 0)
			wl->res.t_first_post = sim_now(wl->sim);
		wl->next_post++;
	}
}

static void post_recvs(struct workload *wl)
{
	while (!wl->res.err && wl->next_recv_post < wl->nrecvs &&
	       wl->next_recv_post - wl->next_recv_cqe < wl->cfg.recv_ahead) {
		uint32_t j = wl->next_recv_post;
		const struct wl_msg *m = &wl->msgs[wl->recv_msgs[j]];
		/* WRITE_IMM places by raddr; its RECV carries no buffer, as in IB. */
		struct engine_recv_wr wr = {
			.wr_id = j,
			.lkey = wl->sdst.lkey,
			.laddr = m->op == WL_SEND ? m->off : 0,
			.len = m->op == WL_SEND ? m->len : 0,
		};
		int err = sim_post_recv(wl->sim, wl->cfg.server, wl->sqpn, &wr);

		if (err == -ENOSPC)
			return;
		if (err) {
			wl_fail(wl, err, "engine_post_recv(%u) failed: %s", j, strerror(-err));
			return;
		}
		wl->next_recv_post++;
	}
}

/* ---- completions ------------------------------------------------------------------- */

static void update_done(struct workload *wl)
{
	uint64_t now = sim_now(wl->sim);

	if (now > wl->res.t_last_cqe)
		wl->res.t_last_cqe = now;
	if (wl->next_cqe == wl->nmsgs && wl->next_recv_cqe == wl->nrecvs && !wl->res.done) {
		uint64_t dt = wl->res.t_last_cqe - wl->res.t_first_post;

		wl->res.done = true;
		wl->res.goodput_gbps = dt ? (double)wl->res.bytes_done * 8 / (double)dt : 0;
	}
}

static bool event_cqe(struct workload *wl, const struct engine_cqe *c, const char *who,
		      bool *up)
{
	if (c->opcode == ENGINE_WC_EV_CONNECTED) {
		*up = true;
		return true;
	}
	if (c->opcode == ENGINE_WC_EV_DISCONNECTED || c->opcode == ENGINE_WC_EV_ERROR) {
		wl_fail(wl, -ECONNRESET, "%s: unexpected event %u (status %u) after %u/%u msgs",
			who, c->opcode, c->status, wl->next_cqe, wl->nmsgs);
		return true;
	}
	return false;
}

static void client_cqe(struct sim *sim, uint32_t host, const struct engine_cqe *c, void *ctx)
{
	struct workload *wl = ctx;
	const struct wl_msg *m;
	uint32_t i = wl->next_cqe;

	if (event_cqe(wl, c, "client", &wl->client_up)) {
		if (c->opcode == ENGINE_WC_EV_CONNECTED) {
			wl->res.t_connected = sim_now(sim);
			post_sends(wl);
		}
		return;
	}
	if (wl->res.err)
		return;
	if (i >= wl->nmsgs || c->wr_id != i) {
		wl_fail(wl, -EIO, "client: completion wr_id %" PRIu64 " (status %u) out of order, "
			"expected %u", c->wr_id, c->status, i);
		return;
	}
	m = &wl->msgs[i];
	if (c->status != ENGINE_WC_SUCCESS || c->opcode != wc_of_op[m->op] || c->qpn != wl->cqpn) {
		wl_fail(wl, -EIO, "client: msg %u (%s) completed with status %u opcode %u qpn %u",
			i, op_name[m->op], c->status, c->opcode, c->qpn);
		return;
	}
	check_placed(wl, i, "client");
	wl->next_cqe++;
	wl->res.ops_done++;
	wl->res.ops[m->op]++;
	wl->res.bytes_done += m->len;
	update_done(wl);
	post_sends(wl);
}

static void server_cqe(struct sim *sim, uint32_t host, const struct engine_cqe *c, void *ctx)
{
	struct workload *wl = ctx;
	uint32_t j = wl->next_recv_cqe, i;
	const struct wl_msg *m;
	bool imm;

	if (event_cqe(wl, c, "server", &wl->server_up)) {
		if (c->opcode == ENGINE_WC_EV_CONNECTED)
			post_recvs(wl);
		return;
	}
	if (wl->res.err)
		return;
	if (j >= wl->nrecvs || c->wr_id != j) {
		wl_fail(wl, -EIO, "server: RECV completion wr_id %" PRIu64 " (status %u) out of "
			"order, expected %u", c->wr_id, c->status, j);
		return;
	}
	i = wl->recv_msgs[j];
	m = &wl->msgs[i];
	imm = m->op == WL_WRITE_IMM;
	if (c->status != ENGINE_WC_SUCCESS ||
	    c->opcode != (imm ? ENGINE_WC_RECV_RDMA_IMM : ENGINE_WC_RECV) ||
	    c->byte_len != m->len || !!(c->flags & ENGINE_WC_WITH_IMM) != imm ||
	    (imm && c->imm != wl_imm(wl, i))) {
		wl_fail(wl, -EIO, "server: RECV %u for msg %u (%s len %u) completed with status %u "
			"opcode %u byte_len %u flags %#x imm %#x", j, i, op_name[m->op], m->len,
			c->status, c->opcode, c->byte_len, c->flags, c->imm);
		return;
	}
	check_placed(wl, i, "server RECV");
	wl->next_recv_cqe++;
	update_done(wl);
	post_recvs(wl);
}

bool wl_cqe(struct workload *wl, uint32_t host, const struct engine_cqe *cqe)
{
	if (host == wl->cfg.client)
		client_cqe(wl->sim, host, cqe, wl);
	else if (host == wl->cfg.server)
		server_cqe(wl->sim, host, cqe, wl);
	else
		return false;
	return true;
}

/* ---- setup -------------------------------------------------------------------------- */

static int region_init(struct sim *sim, uint32_t host, struct wl_region *r, uint64_t len,
		       uint32_t access)
{
	r->buf = calloc(1, len);
	if (!r->buf)
		return -ENOMEM;
	/*
	 * Fault every page in now: first-touch faults are set-up, not
	 * simulation (volatile, or the compiler folds it into calloc).
	 */
	for (uint64_t i = 0; i < len; i += 4096)
		((volatile uint8_t *)r->buf)[i] = 0;
	int err = engine_mr_register(sim_host_engine(sim, host), WL_PD, r->buf, len, access,
				     &r->lkey, &r->rkey);
	r->registered = !err;
	return err;
}

static void region_fini(struct sim *sim, uint32_t host, struct wl_region *r)
{
	if (r->registered)
		engine_mr_deregister(sim_host_engine(sim, host), r->lkey);
	free(r->buf);
}

static int qp_init(struct workload *wl, uint32_t host, uint64_t user, uint32_t *qpn)
{
	struct engine_qp_attr attr = {
		.pd = WL_PD,
		.mode = wl->cfg.mode,
		.npaths = wl->cfg.npaths,
		.sq_depth = wl->cfg.outstanding,
		.rq_depth = wl->cfg.recv_ahead,
		.max_rd = wl->cfg.outstanding < WL_MAX_RD ? wl->cfg.outstanding : WL_MAX_RD,
		.user = user,
	};

	return engine_qp_create(sim_host_engine(wl->sim, host), &attr, qpn);
}

struct workload *wl_create(struct sim *sim, const struct wl_config *cfg)
{
	const uint32_t rw = ENGINE_ACCESS_LOCAL_WRITE | ENGINE_ACCESS_REMOTE_WRITE;
	bool pushes = cfg->mix[WL_WRITE] || cfg->mix[WL_WRITE_IMM] || cfg->mix[WL_SEND];
	bool reads = cfg->mix[WL_READ], atomics = cfg->mix[WL_FETCH_ADD];
	struct workload *wl;
	struct rng r;
	int err = -EINVAL;

	if (!cfg->total_bytes || !cfg->msg_bytes || !cfg->outstanding ||
	    cfg->client == cfg->server || !sim_host_engine(sim, cfg->client) ||
	    !sim_host_engine(sim, cfg->server)) {
		errno = EINVAL;
		return NULL;
	}
	wl = calloc(1, sizeof(*wl));
	if (!wl) {
		errno = ENOMEM;
		return NULL;
	}
	wl->sim = sim;
	wl->cfg = *cfg;
	if (!wl->cfg.recv_ahead)
		wl->cfg.recv_ahead = 2 * cfg->outstanding;
	err = wl_plan(wl);
	/* Only the regions the mix uses: a WRITE-only run needs half the memory. */
	if (!err && pushes)
		err = region_init(sim, cfg->client, &wl->csrc, cfg->total_bytes,
				  ENGINE_ACCESS_LOCAL_WRITE);
	if (!err && reads)
		err = region_init(sim, cfg->client, &wl->cdst, cfg->total_bytes,
				  ENGINE_ACCESS_LOCAL_WRITE);
	if (!err && pushes)
		err = region_init(sim, cfg->server, &wl->sdst, cfg->total_bytes, rw);
	if (!err && reads)
		err = region_init(sim, cfg->server, &wl->ssrc, cfg->total_bytes,
				  ENGINE_ACCESS_LOCAL_WRITE | ENGINE_ACCESS_REMOTE_READ);
	if (!err && atomics)
		err = region_init(sim, cfg->client, &wl->catom,
				  (uint64_t)cfg->outstanding * ATOM_LEN, ENGINE_ACCESS_LOCAL_WRITE);
	if (!err && atomics)
		err = region_init(sim, cfg->server, &wl->satom, ATOM_LEN,
				  ENGINE_ACCESS_LOCAL_WRITE | ENGINE_ACCESS_REMOTE_ATOMIC);
	if (!err)
		err = qp_init(wl, cfg->client, WL_USER_CLIENT, &wl->cqpn);
	if (!err)
		err = qp_init(wl, cfg->server, WL_USER_SERVER, &wl->sqpn);
	if (err) {
		wl_destroy(wl);
		errno = -err;
		return NULL;
	}
	/* Two different patterns, so a READ of the wrong region cannot pass. */
	rng_seed(&r, cfg->seed ^ 0x637372ULL);
	if (pushes)
		rng_fill(&r, wl->csrc.buf, cfg->total_bytes);
	rng_seed(&r, cfg->seed ^ 0x737372ULL);
	if (reads)
		rng_fill(&r, wl->ssrc.buf, cfg->total_bytes);
	sim_host_set_cqe_cb(sim, cfg->client, client_cqe, wl);
	sim_host_set_cqe_cb(sim, cfg->server, server_cqe, wl);
	return wl;
}

void wl_destroy(struct workload *wl)
{
	if (!wl)
		return;
	sim_host_set_cqe_cb(wl->sim, wl->cfg.client, NULL, NULL);
	sim_host_set_cqe_cb(wl->sim, wl->cfg.server, NULL, NULL);
	region_fini(wl->sim, wl->cfg.client, &wl->csrc);
	region_fini(wl->sim, wl->cfg.client, &wl->cdst);
	region_fini(wl->sim, wl->cfg.server, &wl->sdst);
	region_fini(wl->sim, wl->cfg.server, &wl->ssrc);
	region_fini(wl->sim, wl->cfg.client, &wl->catom);
	region_fini(wl->sim, wl->cfg.server, &wl->satom);
	free(wl->msgs);
	free(wl->recv_msgs);
	free(wl);
}

int wl_start(struct workload *wl)
{
	struct engine *srv = sim_host_engine(wl->sim, wl->cfg.server);
	int err = engine_qp_listen(srv, wl->sqpn, wl->cfg.service_id);

	if (err) {
		wl_fail(wl, err, "engine_qp_listen failed: %s", strerror(-err));
		return err;
	}
	sim_host_kick(wl->sim, wl->cfg.server);
	err = sim_qp_connect(wl->sim, wl->cfg.client, wl->cqpn, wl->cfg.server,
			     wl->cfg.service_id);
	if (err)
		wl_fail(wl, err, "engine_qp_connect failed: %s", strerror(-err));
	return err;
}

/* ---- running and checking ---------------------------------------------------------- */

bool wl_finished(const struct workload *wl)
{
	return wl->res.done || wl->res.err;
}

static bool wl_running(struct sim *sim, void *ctx)
{
	return !wl_finished(ctx);
}

/* Say where a stalled transfer stands, for a bug report. */
static void wl_describe_stall(struct workload *wl, int err)
{
	struct engine_qp_info ci = { 0 }, si = { 0 };

	engine_qp_info(sim_host_engine(wl->sim, wl->cfg.client), wl->cqpn, &ci);
	engine_qp_info(sim_host_engine(wl->sim, wl->cfg.server), wl->sqpn, &si);
	wl_fail(wl, err, "%s at t=%" PRIu64 " ns: client %s, %u/%u msgs completed, %u posted; "
		"server %s, %u/%u RECVs completed, %u posted; client qp state %u sq_out %u "
		"tx_bytes %" PRIu64 " qwnd %" PRIu64 "; server qp state %u rx_bytes %" PRIu64,
		err == -EDEADLK ? "deadlock (no event left)" : "time limit",
		sim_now(wl->sim), wl->client_up ? "up" : "not connected", wl->next_cqe,
		wl->nmsgs, wl->next_post, wl->server_up ? "up" : "not connected",
		wl->next_recv_cqe, wl->nrecvs, wl->next_recv_post, ci.state, ci.sq_outstanding,
		ci.tx_bytes, ci.qwnd_bytes, si.state, si.rx_bytes);
}

int wl_run(struct workload *wl, uint64_t time_limit)
{
	int err = sim_run_while(wl->sim, wl_running, wl, time_limit);

	if (err && !wl->res.err)
		wl_describe_stall(wl, err);
	return wl->res.err;
}

/* A FETCH_ADD's share of the transfer: no region has anything there. */
static int verify_atomic(struct workload *wl, uint32_t i)
{
	const struct wl_msg *m = &wl->msgs[i];
	const struct wl_region *r[] = { &wl->sdst, &wl->cdst };

	for (size_t k = 0; k < sizeof(r) / sizeof(r[0]); k++) {
		int64_t d = r[k]->buf ? first_nonzero(r[k]->buf + m->off, m->len) : -1;

		if (d >= 0) {
			wl_fail(wl, -EIO, "stray write: %s at transfer offset %" PRIu64 " (msg %u "
				"is a FETCH_ADD) is %#x, expected 0", k ? "client cdst" :
				"server sdst", m->off + (uint64_t)d, i, r[k]->buf[m->off + d]);
			return -EIO;
		}
	}
	return 0;
}

static int verify_msg(struct workload *wl, uint32_t i)
{
	const struct wl_msg *m = &wl->msgs[i];
	const uint8_t *src, *dst, *other;
	int64_t d;

	if (m->op == WL_FETCH_ADD)
		return verify_atomic(wl, i);
	msg_bufs(wl, m, &src, &dst, &other);
	d = first_diff(dst, src, m->len);
	if (d >= 0) {
		wl_fail(wl, -EIO, "memory mismatch: msg %u (%s) at transfer offset %" PRIu64
			" (byte %#x, expected %#x)", i, op_name[m->op], m->off + (uint64_t)d,
			dst[d], src[d]);
		return -EIO;
	}
	/* The other side's region at these offsets belongs to no message. */
	d = other ? first_nonzero(other, m->len) : -1;
	if (d >= 0) {
		wl_fail(wl, -EIO, "stray write: %s region at transfer offset %" PRIu64
			" (msg %u is a %s) is %#x, expected 0",
			m->op == WL_READ ? "server sdst" : "client cdst", m->off + (uint64_t)d, i,
			op_name[m->op], other[d]);
		return -EIO;
	}
	return 0;
}

int wl_verify_memory(struct workload *wl)
{
	uint64_t counter;

	for (uint32_t i = 0; i < wl->nmsgs; i++) {
		int err = verify_msg(wl, i);

		if (err)
			return err;
	}
	if (!wl->satom.buf)
		return 0;
	memcpy(&counter, wl->satom.buf, sizeof(counter));
	if (counter != wl->atom_sum) {
		wl_fail(wl, -EIO, "FETCH_ADD counter is %" PRIu64 ", expected %" PRIu64
			" (the sum of every add, each once)", counter, wl->atom_sum);
		return -EIO;
	}
	return 0;
}

const struct wl_result *wl_result(const struct workload *wl)
{
	return &wl->res;
}

uint8_t *wl_buffer(const struct workload *wl, enum wl_buf which)
{
	switch (which) {
	case WL_BUF_CSRC: return wl->csrc.buf;
	case WL_BUF_CDST: return wl->cdst.buf;
	case WL_BUF_SDST: return wl->sdst.buf;
	case WL_BUF_SSRC: return wl->ssrc.buf;
	case WL_BUF_SATOM: return wl->satom.buf;
	}
	return NULL;
}

uint32_t wl_client_qpn(const struct workload *wl)
{
	return wl->cqpn;
}

uint32_t wl_server_qpn(const struct workload *wl)
{
	return wl->sqpn;
}
