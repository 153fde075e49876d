// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "rng.h"

static const char *const transport_names[CLU__TRANSPORTS] = {
	[CLU_METAROCE] = "metaroce",
	[CLU_ROCEV2] = "rocev2-lossy",
	[CLU_ROCEV2_QPS] = "rocev2-qps",
	[CLU_ROCEV2_PFC] = "rocev2-pfc",
	[CLU_ROCEV2_QPP] = "rocev2-qp-per-plane",
};

static const char *const placement_names[CLU__PLACEMENTS] = {
	[CLU_PACKED] = "packed",
	[CLU_FRAGMENTED] = "fragmented",
	[CLU_RANDOM] = "random",
};

const char *clu_transport_name(enum clu_transport t)
{
	return t < CLU__TRANSPORTS ? transport_names[t] : "?";
}

int clu_transport_parse(const char *s, enum clu_transport *out)
{
	if (!strcmp(s, "rocev2")) {	/* its name before the deployed baselines came */
		*out = CLU_ROCEV2;
		return 0;
	}
	for (int i = 0; i < CLU__TRANSPORTS; i++)
		if (!strcmp(s, transport_names[i])) {
			*out = (enum clu_transport)i;
			return 0;
		}
	return -EINVAL;
}

const char *clu_placement_name(enum clu_placement p)
{
	return p < CLU__PLACEMENTS ? placement_names[p] : "?";
}

int clu_placement_parse(const char *s, enum clu_placement *out)
{
	for (int i = 0; i < CLU__PLACEMENTS; i++)
		if (!strcmp(s, placement_names[i])) {
			*out = (enum clu_placement)i;
			return 0;
		}
	return -EINVAL;
}

void clu_config_default(struct clu_config *cfg)
{
	*cfg = (struct clu_config){
		.transport = CLU_METAROCE,
		.qps = 4,
		.nic_timeout_ns = clu_ib_timeout_ns(CLU_IB_TIMEOUT_DEFAULT),
		.nic_retry = CLU_IB_RETRY_DEFAULT,
		.kind = COLL_ALLREDUCE,
		.placement = CLU_FRAGMENTED,
		.bytes = 1 << 20,
		.msg_bytes = 1 << 20,
		.senders = 7,
		.time_limit_ns = 2000000000ULL,
		.bg_warmup_ns = 200000,
		.iters = 1,
		.seed = 1,
	};
	cnet_config_default(&cfg->net);
	/*
	 * A path's rounds count as their length in 2 base RTTs when its moves
	 * are judged (engine.h repath_round_rtts): under a permutation's queues
	 * a round is 4-8 base RTTs, and paths were judged ~1 ms into a 2.5 ms
	 * run.  16 MiB permutation, fresh seeds 601-640: lossless 1.2 % faster
	 * (35 of 40 seeds), at 1 % 1.0 %, at 10 % (seeds 301-320) 0.8 %.
	 */
	cfg->net.engine.repath_round_rtts = 2;
}

int clu_place(const struct fabric *f, enum clu_placement p, uint32_t n, uint64_t seed,
	      uint32_t *rank_host)
{
	uint32_t hosts = f->cfg.nhosts, leaves = f->cfg.leaves;
	struct rng rng;

	if (n < 2 || n > hosts)
		return -EINVAL;
	switch (p) {
	case CLU_PACKED:
		for (uint32_t i = 0; i < n; i++)
			rank_host[i] = i;
		return 0;
	case CLU_FRAGMENTED:
		/* Leaf by leaf round-robin; full leaves (uneven sizes) are skipped. */
		for (uint32_t i = 0, k = 0; i < n; k++) {
			uint32_t h = (k % leaves) * f->per_leaf + k / leaves;

			if (k >= leaves * f->per_leaf)
				return -EINVAL;
			if (h < hosts)
				rank_host[i++] = h;
		}
		return 0;
	case CLU_RANDOM: {
		uint32_t *all = malloc(hosts * sizeof(*all));

		if (!all)
			return -ENOMEM;
		for (uint32_t i = 0; i < hosts; i++)
			all[i] = i;
		rng_seed(&rng, seed ^ 0x706c6163ULL /* "plac" */);
		for (uint32_t i = hosts - 1; i > 0; i--) {
			uint32_t j = (uint32_t)rng_below(&rng, i + 1), t = all[i];

			all[i] = all[j];
			all[j] = t;
		}
		memcpy(rank_host, all, n * sizeof(*all));
		free(all);
		return 0;
	}
	default:
		return -EINVAL;
	}
}

struct fail_ctx {
	const struct clu_config *cfg;
	int err;
};

static void do_fail(struct cnet *cn, void *ctx)
{
	struct fail_ctx *fc = ctx;
	const struct clu_config *c = fc->cfg;
	struct fabric *f = cnet_fabric(cn);

	if (c->failure == CLU_FAIL_SPINE)
		fc->err = fab_fail_spine(f, c->fail_plane, c->fail_spine, cnet_now(cn));
	else if (c->failure == CLU_FAIL_CABLE)
		fc->err = fab_fail_cable(f, c->fail_plane, c->fail_leaf, c->fail_spine,
					 cnet_now(cn));
	else if (c->failure == CLU_FAIL_DOWNLINK)
		fc->err = fab_fail_downlink(f, c->fail_plane, c->fail_spine, c->fail_leaf,
					    cnet_now(cn));
}

static bool connecting(struct cnet *cn, void *ctx)
{
	const struct coll *c = ctx;

	(void)cn;
	return !coll_connected(c) && !coll_finished(c);
}

static bool running(struct cnet *cn, void *ctx)
{
	(void)cn;
	return !coll_finished(ctx);
}

static void net_config(const struct clu_config *cfg, struct cnet_config *net)
{
	struct engine_config *e = &net->engine;

	*net = cfg->net;
	net->fab.plane_select = cfg->transport == CLU_METAROCE ? FAB_PLANE_PATH_ID :
				FAB_PLANE_HASH;
	net->fab.seed = cfg->seed;
	net->seed = cfg->seed;
	/* MetaRoCE's path i crosses plane i mod planes (fabric.c): the engine knows its ports. */
	if (net->fab.plane_select == FAB_PLANE_PATH_ID)
		e->path_ports = (uint16_t)net->fab.nplanes;
	/* RoCEv2 as deployed (DCQCN) reacts to ECN alone: no delay signal. */
	if (cfg->transport != CLU_METAROCE)
		e->delay_target_ns = 0;
	if (!clu_transport_pfc(cfg->transport))
		return;
	net->fab.pfc = true;
	/* A NIC's local ACK timer: one fixed timeout, retried nic_retry times. */
	e->rto_min_ns = e->rto_init_ns = e->rto_max_ns = cfg->nic_timeout_ns;
	e->max_retx = cfg->nic_retry + 1 > 255 ? 255 : cfg->nic_retry + 1;
	if (e->dead_peer_ns < (uint64_t)(cfg->nic_retry + 2) * cfg->nic_timeout_ns)
		e->dead_peer_ns = (uint64_t)(cfg->nic_retry + 2) * cfg->nic_timeout_ns;
}

static void collect(struct cnet *cn, const uint32_t *rank_host, uint32_t n,
		    struct clu_result *res)
{
	const struct fabric *f = cnet_fabric(cn);
	uint32_t *per = calloc(f->cfg.leaves, sizeof(*per));

	cnet_get_stats(cn, &res->net);
	for (uint32_t h = 0; h < cnet_nhosts(cn); h++) {
		struct engine_stats s;

		engine_get_stats(cnet_engine(cn, h), &s);
		for (int i = 0; i < EC__COUNT; i++)
			res->eng.c[i] += s.c[i];
	}
	res->payload_placed = res->eng.c[EC_RX_BYTES_PLACED];
	for (uint32_t r = 0; per && r < n; r++)
		if (++per[fab_leaf_of(f, rank_host[r])] > res->hosts_on_leaf_max)
			res->hosts_on_leaf_max = per[fab_leaf_of(f, rank_host[r])];
	free(per);
}

static bool bg_connecting(struct cnet *cn, void *ctx)
{
	(void)cn;
	return !bg_connected(ctx);
}

static bool waiting(struct cnet *cn, void *ctx)
{
	(void)cn;
	(void)ctx;
	return true;
}

/* The background job: the hosts the measured job leaves free, or all of them. */
static int bg_begin(struct cnet *cn, const struct clu_config *cfg, const struct coll_config *cc,
		    const uint32_t *rank_host, uint32_t n, uint64_t connect_ns, struct bg **out)
{
	uint32_t nh = cnet_nhosts(cn), m = 0, *hosts = calloc(nh, sizeof(*hosts));
	bool *used = calloc(nh, sizeof(*used));
	struct bg_config bc;
	int err = -ENOMEM;

	*out = NULL;
	if (!hosts || !used)
		goto out;
	for (uint32_t r = 0; r < n; r++)
		used[rank_host[r]] = true;
	for (uint32_t h = 0; h < nh; h++)
		if (!used[h] || n == nh)
			hosts[m++] = h;
	if (cfg->bg_hosts && cfg->bg_nhosts <= nh) {
		m = cfg->bg_nhosts;
		memcpy(hosts, cfg->bg_hosts, m * sizeof(*hosts));
	}
	bc = (struct bg_config){
		.kind = cfg->bg, .load = cfg->bg_load, .nhosts = m, .hosts = hosts,
		.senders = cfg->bg_senders ? cfg->bg_senders : 7,
		.msg_bytes = cfg->bg_msg_bytes ? cfg->bg_msg_bytes : 64 * 1024, .max_out = 8,
		.mode = cc->mode, .npaths = cc->npaths, .pin_planes = cc->pin_planes,
		/*
		 * The other job runs NCCL over every port: a RoCEv2 flow is a QP per
		 * plane (pinned only for qp-per-plane), or it could not offer more
		 * than one port's rate; a MetaRoCE QP spreads over every plane.
		 */
		.qps_per_flow = cc->mode == MROC_MODE_ROCEV2 ? cnet_fabric(cn)->cfg.nplanes : 1,
		.seed = cfg->seed ^ 0x6267ULL,
	};
	if (bc.kind == BG_INCAST && bc.senders >= m)
		bc.senders = m - 1;
	*out = bg_create(cn, &bc);
	err = *out ? 0 : -errno;
	if (!err)
		err = cnet_run_while(cn, bg_connecting, *out, cnet_now(cn) + connect_ns);
	if (!err)
		err = bg_start(*out);
	/* Let the other job's queues and windows settle before measuring. */
	if (!err && cfg->bg_warmup_ns) {
		err = cnet_run_while(cn, waiting, NULL, cnet_now(cn) + cfg->bg_warmup_ns);
		err = err == -ETIMEDOUT ? 0 : err;
	}
out:
	free(hosts);
	free(used);
	return err;
}

/* One operation: set up, connect, run, check; its result into res->coll. */
static int run_once(struct cnet *cn, const struct clu_config *cfg, const struct coll_config *cc,
		    uint64_t connect_ns, bool first, struct fail_ctx *fc, struct clu_result *res)
{
	struct coll *c = coll_create(cn, cc);
	int err;

	if (!c) {
		err = -errno;
		snprintf(res->why, sizeof(res->why), "cannot set the %s up (%d)",
			 coll_kind_name(cfg->kind), err);
		return err;
	}
	/* Before the connect: a trace that misses the CM cannot show why QPs did not connect. */
	if (first && cfg->setup)
		cfg->setup(cn, cfg->setup_ctx);
	err = cnet_run_while(cn, connecting, c, cnet_now(cn) + connect_ns);
	if (err || !coll_connected(c)) {
		err = err ? err : -ENOTCONN;
		snprintf(res->why, sizeof(res->why), "QPs did not connect: %s",
			 coll_result(c)->err ? coll_result(c)->why : "timed out");
		goto out;
	}
	if (first) {
		res->t_connected = cnet_now(cn);
		if (cfg->failure != CLU_FAIL_NONE) {
			err = cnet_schedule(cn, cnet_now(cn) + cfg->fail_after_ns, do_fail, fc);
			if (err)
				goto out;
		}
	}
	err = coll_start(c);
	if (!err)
		err = cnet_run_while(cn, running, c, cnet_now(cn) + cfg->time_limit_ns);
	if (!err || err == -ETIMEDOUT || err == -EDEADLK)
		err = coll_verify(c);
	if (!err && fc->err)
		err = fc->err;
	res->coll = *coll_result(c);
	if (err)
		snprintf(res->why, sizeof(res->why), "%s", res->coll.why);
	if (cfg->report)
		cfg->report(cn, c, cfg->report_ctx);
out:
	coll_destroy(c);
	return err;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentiles of the iterations' times. */
static void distribution(double *t, uint32_t n, struct clu_result *res)
{
	double sum = 0;

	res->iters_done = n;
	if (!n)
		return;
	qsort(t, n, sizeof(*t), cmp_double);
	for (uint32_t i = 0; i < n; i++)
		sum += t[i];
	res->t_min_us = t[0];
	res->t_max_us = t[n - 1];
	res->t_p50_us = t[(n - 1) / 2];
	res->t_p99_us = t[(uint32_t)(0.99 * n + 0.999999) - 1];
	res->t_mean_us = sum / n;
}

int clu_run(const struct clu_config *cfg, struct clu_result *res)
{
	uint32_t iters = cfg->iters ? cfg->iters : 1, n, done = 0, *rank_host = NULL;
	struct fail_ctx fc = { .cfg = cfg };
	struct cnet_config net;
	struct coll_config cc;
	struct bg *bg = NULL;
	double *times = NULL;
	uint64_t connect_ns;
	struct cnet *cn;
	int err;

	*res = (struct clu_result){ 0 };
	net_config(cfg, &net);
	n = cfg->nranks ? cfg->nranks : net.fab.nhosts;
	cn = cnet_create(&net);
	if (!cn) {
		const char *why = "out of memory";

		res->err = -errno;
		if (!fab_config_check(&net.fab, &why))
			engine_config_check(&net.engine, &why);
		snprintf(res->why, sizeof(res->why), "%s", why);
		return res->err;
	}
	rank_host = calloc(n, sizeof(*rank_host));
	times = calloc(iters, sizeof(*times));
	err = rank_host && times ? clu_place(cnet_fabric(cn), cfg->placement, n, cfg->seed,
					     rank_host) : -ENOMEM;
	if (!err && cfg->rank_hosts)
		memcpy(rank_host, cfg->rank_hosts, n * sizeof(*rank_host));
	if (err) {
		snprintf(res->why, sizeof(res->why), "cannot place %u ranks", n);
		goto out;
	}
	cc = (struct coll_config){
		.kind = cfg->kind,
		.algo = cfg->algo,
		.nic_bps = net.fab.host_rate_bps * net.fab.nplanes,
		.nranks = n,
		.rank_host = rank_host,
		.bytes = cfg->bytes,
		.mode = cfg->transport == CLU_METAROCE ? MROC_MODE_METAROCE : MROC_MODE_ROCEV2,
		.npaths = cfg->npaths ? cfg->npaths :
			  (uint8_t)(2 * net.fab.nplanes > MROC_MAX_PATHS ? MROC_MAX_PATHS :
				    2 * net.fab.nplanes),
		.qps_per_conn = cfg->transport == CLU_ROCEV2_QPS ? cfg->qps :
				cfg->transport == CLU_ROCEV2_QPP ? net.fab.nplanes : 1,
		.pin_planes = cfg->transport == CLU_ROCEV2_QPP ? net.fab.nplanes : 0,
		.msg_bytes = cfg->msg_bytes,
		.senders = cfg->senders,
		.verify = cfg->verify,
		.seed = cfg->seed,
	};
	/* 100 ms to connect, plus ten connection-request timeouts (a NIC's is 1 s). */
	connect_ns = 100000000ULL + 10 * net.engine.rto_init_ns;
	if (cfg->bg != BG_NONE) {
		err = bg_begin(cn, cfg, &cc, rank_host, n, connect_ns, &bg);
		if (err) {
			snprintf(res->why, sizeof(res->why), "background traffic failed (%d)", err);
			goto out;
		}
	}
	for (done = 0; done < iters; done++) {
		err = run_once(cn, cfg, &cc, connect_ns, done == 0, &fc, res);
		if (err)
			break;
		times[done] = res->coll.time_us;
	}
	distribution(times, done, res);
	if (bg) {
		bg_stop(bg);
		bg_get_stats(bg, &res->bg);
	}
out:
	collect(cn, rank_host, rank_host ? n : 0, res);
	res->err = err;
	bg_destroy(bg);
	cnet_destroy(cn);
	free(rank_host);
	free(times);
	return err;
}
