// SPDX-License-Identifier: MIT
/* Background traffic: the flows, their QPs, the open-loop ticks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "background.h"
#include "rng.h"

#define SQ_DEPTH	64
#define SERVICE_BASE	0x62676e640000ULL	/* "bgnd" */

struct bg_qp {
	uint32_t qpn[2];		/* [0] the sender's, [1] the receiver's */
	uint32_t out;			/* WRs posted, not completed */
	bool up[2];			/* connected */
};

struct bg_flow {
	uint32_t src, dst;		/* hosts */
	uint32_t next_q;		/* round-robin over its QPs */
};

struct bg {
	struct cnet *cn;
	struct bg_config cfg;
	struct bg_flow *flows;
	struct bg_qp *qps;		/* flow f's QPs: qps[f * k .. f * k + k - 1] */
	uint32_t nflows, k;
	uint32_t *lkey, *rkey;		/* per job host index */
	uint8_t *scratch;
	uint32_t eps_up;
	uint64_t interval_ns;
	bool running;
	struct bg_stats st;
};

static const char *const kind_names[BG__KINDS] = {
	[BG_NONE] = "none",
	[BG_PERMUTATION] = "permutation",
	[BG_INCAST] = "incast",
};

const char *bg_kind_name(enum bg_kind k)
{
	return k < BG__KINDS ? kind_names[k] : "?";
}

int bg_kind_parse(const char *s, enum bg_kind *out)
{
	for (int i = 0; i < BG__KINDS; i++)
		if (!strcmp(s, kind_names[i])) {
			*out = (enum bg_kind)i;
			return 0;
		}
	return -EINVAL;
}

/* wr_id and attr.user: the background bit, the QP index, the side. */
static uint64_t qp_tag(uint32_t qi, unsigned side)
{
	return CNET_WR_BACKGROUND | (uint64_t)qi << 1 | side;
}

static void on_cqe(struct cnet *cn, uint32_t host, const struct engine_cqe *cqe, void *ctx)
{
	struct bg *b = ctx;
	uint64_t id = cqe->wr_id & ~CNET_WR_BACKGROUND;
	uint32_t qi = (uint32_t)(id >> 1);
	unsigned side = id & 1;
	struct bg_qp *qp;

	(void)cn;
	(void)host;
	if (qi >= b->nflows * b->k)
		return;
	qp = &b->qps[qi];
	if (cqe->status != ENGINE_WC_SUCCESS || cqe->opcode == ENGINE_WC_EV_ERROR) {
		b->st.errors++;
		return;
	}
	if (cqe->opcode == ENGINE_WC_EV_CONNECTED && !qp->up[side]) {
		qp->up[side] = true;
		b->eps_up++;
	} else if (cqe->opcode == ENGINE_WC_WRITE && qp->out) {
		qp->out--;
		b->st.done_bytes += cqe->byte_len;
	}
}

static void tick(struct cnet *cn, void *ctx)
{
	struct bg *b = ctx;

	if (!b->running)
		return;
	b->st.ticks++;
	for (uint32_t f = 0; f < b->nflows; f++) {
		struct bg_flow *fl = &b->flows[f];
		uint32_t qi = f * b->k + fl->next_q;
		struct bg_qp *qp = &b->qps[qi];
		struct engine_wr wr = {
			.wr_id = qp_tag(qi, 0),
			.opcode = ENGINE_WR_WRITE,
			.flags = ENGINE_WR_SIGNALED,
			.lkey = b->lkey[fl->src],
			.len = b->cfg.msg_bytes,
			.rkey = b->rkey[fl->dst],
		};

		b->st.offered_bytes += b->cfg.msg_bytes;
		fl->next_q = (fl->next_q + 1) % b->k;
		if (qp->out >= b->cfg.max_out ||
		    cnet_post_send(cn, b->cfg.hosts[fl->src], qp->qpn[0], &wr)) {
			b->st.skipped++;
			continue;
		}
		qp->out++;
		b->st.posted_bytes += b->cfg.msg_bytes;
	}
	if (cnet_schedule(cn, cnet_now(cn) + b->interval_ns, tick, b))
		b->running = false;
}

static int plan(struct bg *b)
{
	const struct bg_config *c = &b->cfg;
	uint32_t n = c->nhosts, *perm;
	struct rng rng;

	if (c->kind == BG_INCAST) {
		if (!c->senders || c->senders >= n)
			return -EINVAL;
		b->nflows = c->senders;
		for (uint32_t i = 0; i < b->nflows; i++)
			b->flows[i] = (struct bg_flow){ .src = i + 1, .dst = 0 };
		return 0;
	}
	/* Sattolo's shuffle: one cycle, nobody sends to itself. */
	perm = malloc(n * sizeof(*perm));
	if (!perm)
		return -ENOMEM;
	rng_seed(&rng, c->seed ^ 0x62677065726dULL);
	for (uint32_t i = 0; i < n; i++)
		perm[i] = i;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)rng_below(&rng, i), t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	b->nflows = n;
	for (uint32_t i = 0; i < n; i++)
		b->flows[i] = (struct bg_flow){ .src = i, .dst = perm[i] };
	free(perm);
	return 0;
}

static int setup(struct bg *b)
{
	const struct bg_config *c = &b->cfg;
	struct engine_qp_attr attr = {
		.mode = c->mode, .npaths = c->npaths, .sq_depth = SQ_DEPTH, .rq_depth = 1,
		.max_rd = 1,
	};
	int err;

	/* One scratch region, registered by every host: content is not checked. */
	b->scratch = calloc(1, c->msg_bytes);
	if (!b->scratch)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->nhosts; i++) {
		err = engine_mr_register(cnet_engine(b->cn, c->hosts[i]), 0, b->scratch,
					 c->msg_bytes, ENGINE_ACCESS_ALL, &b->lkey[i], &b->rkey[i]);
		if (err)
			return err;
	}
	for (uint32_t qi = 0; qi < b->nflows * b->k; qi++) {
		const struct bg_flow *fl = &b->flows[qi / b->k];
		uint32_t host[2] = { c->hosts[fl->src], c->hosts[fl->dst] };

		for (unsigned s = 0; s < 2; s++) {
			attr.user = qp_tag(qi, s);
			err = engine_qp_create(cnet_engine(b->cn, host[s]), &attr, &b->qps[qi].qpn[s]);
			if (!err && c->pin_planes)
				err = cnet_pin_qp(b->cn, host[s], b->qps[qi].qpn[s],
						  qi % b->k % c->pin_planes);
			if (err)
				return err;
		}
		err = engine_qp_listen(cnet_engine(b->cn, host[1]), b->qps[qi].qpn[1],
				       SERVICE_BASE + qi);
		if (!err)
			err = cnet_qp_connect(b->cn, host[0], b->qps[qi].qpn[0], host[1],
					      SERVICE_BASE + qi);
		if (err)
			return err;
	}
	return 0;
}

struct bg *bg_create(struct cnet *cn, const struct bg_config *cfg)
{
	uint64_t cap;
	struct bg *b;
	int err = -EINVAL;

	if (!cfg->hosts || cfg->nhosts < 2 || !cfg->msg_bytes || !cfg->max_out ||
	    !cfg->qps_per_flow || !(cfg->load > 0 && cfg->load <= 1) ||
	    (cfg->kind != BG_PERMUTATION && cfg->kind != BG_INCAST)) {
		errno = EINVAL;
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		errno = ENOMEM;
		return NULL;
	}
	b->cn = cn;
	b->cfg = *cfg;
	b->cfg.hosts = malloc(cfg->nhosts * sizeof(*cfg->hosts));
	b->k = cfg->qps_per_flow;
	b->flows = calloc(cfg->nhosts, sizeof(*b->flows));
	b->lkey = calloc(cfg->nhosts, sizeof(*b->lkey));
	b->rkey = calloc(cfg->nhosts, sizeof(*b->rkey));
	b->qps = calloc((size_t)cfg->nhosts * b->k, sizeof(*b->qps));
	if (!b->cfg.hosts || !b->flows || !b->lkey || !b->rkey || !b->qps) {
		err = -ENOMEM;
		goto fail;
	}
	memcpy((uint32_t *)b->cfg.hosts, cfg->hosts, cfg->nhosts * sizeof(*cfg->hosts));
	for (uint32_t i = 0; i < cfg->nhosts; i++)
		if (cfg->hosts[i] >= cnet_nhosts(cn))
			goto fail;
	/* Payload capacity of a NIC: every plane's port, headers counted. */
	cap = cnet_goodput_capacity(cn, cnet_fabric(cn)->cfg.host_rate_bps *
				    cnet_fabric(cn)->cfg.nplanes);
	b->interval_ns = (uint64_t)((double)cfg->msg_bytes * 8e9 / (cfg->load * (double)cap));
	if (!b->interval_ns)
		b->interval_ns = 1;
	err = plan(b);
	if (err)
		goto fail;
	cnet_set_bg_cqe_cb(cn, on_cqe, b);
	err = setup(b);
	if (err)
		goto fail;
	b->st.flows = b->nflows;
	b->st.qps = b->nflows * b->k;
	return b;
fail:
	bg_destroy(b);
	errno = -err;
	return NULL;
}

void bg_destroy(struct bg *b)
{
	if (!b)
		return;
	b->running = false;
	cnet_set_bg_cqe_cb(b->cn, NULL, NULL);
	for (uint32_t qi = 0; b->qps && qi < b->nflows * b->k; qi++)
		for (unsigned s = 0; s < 2; s++)
			if (b->qps[qi].qpn[s])
				engine_qp_destroy(cnet_engine(b->cn, b->cfg.hosts[s ?
						  b->flows[qi / b->k].dst : b->flows[qi / b->k].src]),
						  b->qps[qi].qpn[s]);
	for (uint32_t i = 0; b->lkey && i < b->cfg.nhosts; i++)
		if (b->lkey[i])
			engine_mr_deregister(cnet_engine(b->cn, b->cfg.hosts[i]), b->lkey[i]);
	free((uint32_t *)b->cfg.hosts);
	free(b->flows);
	free(b->lkey);
	free(b->rkey);
	free(b->qps);
	free(b->scratch);
	free(b);
}

bool bg_connected(const struct bg *b)
{
	return b->eps_up == 2 * b->nflows * b->k;
}

int bg_start(struct bg *b)
{
	if (!bg_connected(b) || b->running)
		return -EINVAL;
	b->running = true;
	b->st.t_start = cnet_now(b->cn);
	tick(b->cn, b);
	return b->running ? 0 : -ENOMEM;
}

void bg_stop(struct bg *b)
{
	if (b->running)
		b->st.t_stop = cnet_now(b->cn);
	b->running = false;
}

void bg_get_stats(const struct bg *b, struct bg_stats *out)
{
	*out = b->st;
	if (b->running)
		out->t_stop = cnet_now(b->cn);
}
