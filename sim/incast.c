// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "incast.h"

void inc_config_default(struct inc_config *cfg)
{
	*cfg = (struct inc_config){
		.senders = 3,
		.planes = 4,
		.plane_rate_bps = 25000000000ULL,
		.delay_ns = 2000,
		.queue_bytes = 512 * 1024,
		.ecn_bytes = 64 * 1024,
		.route = SIM_ROUTE_PATH_ID,
		.blackhole_plane = -1,
		.rate_hints = true,
		.mtu = 4096,
		.rto_min_ns = 200000,	/* as scn_config_default: ~20 fabric RTTs */
		.time_limit_ns = 1000000000ULL,
		.seed = 1,
		.verify = true,
	};
	wl_config_default(&cfg->wl);
	memset(cfg->wl.mix, 0, sizeof(cfg->wl.mix));
	cfg->wl.mix[WL_WRITE] = 1;
	cfg->wl.total_bytes = 16ULL << 20;
}

double inc_jain(const double *x, uint32_t n)
{
	double sum = 0, sq = 0;

	for (uint32_t i = 0; i < n; i++) {
		sum += x[i];
		sq += x[i] * x[i];
	}
	return n && sq > 0 ? sum * sum / (n * sq) : 0;
}

/* One run: the workloads and the window in which all of them are active. */
struct inc_run {
	const struct inc_config *cfg;
	struct sim *sim;
	struct workload *wl[INC_MAX_SENDERS];
	uint32_t n, receiver;
	bool started, ended;
	uint64_t t_start, t_end;
	uint64_t bytes_start[INC_MAX_SENDERS], bytes_end[INC_MAX_SENDERS];
	uint32_t hint_mbps[INC_MAX_SENDERS];
};

/* Bytes done by each sender now, and the hint each is pacing at. */
static void sample(struct inc_run *r, uint64_t *bytes, bool hints)
{
	for (uint32_t i = 0; i < r->n; i++) {
		bytes[i] = wl_result(r->wl[i])->bytes_done;
		if (hints) {
			struct engine_qp_info qi = { 0 };

			engine_qp_info(sim_host_engine(r->sim, i), wl_client_qpn(r->wl[i]), &qi);
			r->hint_mbps[i] = qi.rate_hint_mbps;
		}
	}
}

/* After each completion: open the window when the last sender starts, close it at the first finish. */
static void track_window(struct inc_run *r)
{
	bool all_posted = true, one_done = false;

	for (uint32_t i = 0; i < r->n; i++) {
		const struct wl_result *w = wl_result(r->wl[i]);

		all_posted &= w->t_first_post != 0;
		one_done |= w->done;
	}
	if (!r->started && all_posted) {
		r->started = true;
		r->t_start = sim_now(r->sim);
		sample(r, r->bytes_start, false);
	}
	if (r->started && !r->ended && one_done) {
		r->ended = true;
		r->t_end = sim_now(r->sim);
		sample(r, r->bytes_end, true);
	}
}

/* Sender i is host i; the receiver's completions go to the workload owning the QP. */
static void inc_cqe(struct sim *sim, uint32_t host, const struct engine_cqe *cqe, void *ctx)
{
	struct inc_run *r = ctx;

	if (host < r->n) {
		wl_cqe(r->wl[host], host, cqe);
	} else {
		for (uint32_t i = 0; i < r->n; i++)
			if (wl_server_qpn(r->wl[i]) == cqe->qpn) {
				wl_cqe(r->wl[i], host, cqe);
				break;
			}
	}
	track_window(r);
}

static bool inc_running(struct sim *sim, void *ctx)
{
	struct inc_run *r = ctx;
	bool running = false;

	for (uint32_t i = 0; i < r->n; i++) {
		const struct wl_result *w = wl_result(r->wl[i]);

		if (w->err)
			return false;
		running |= !w->done;
	}
	return running;
}

/* NULL with errno and *why on a configuration the simulation refuses. */
static struct sim *inc_sim(const struct inc_config *cfg, const char **why)
{
	struct sim_config sc;

	sim_config_default(&sc);
	sc.nhosts = cfg->senders + 1;
	sc.nplanes = cfg->planes;
	sc.route = cfg->route;
	sc.seed = cfg->seed;
	sc.link.rate_bps = cfg->plane_rate_bps;
	sc.link.delay_ns = cfg->delay_ns;
	sc.link.queue_bytes = cfg->queue_bytes;
	sc.link.ecn_bytes = cfg->ecn_bytes;
	sc.link.loss = cfg->loss;
	sc.link.jitter_ns = cfg->jitter_ns;
	sc.link.dup = cfg->dup;
	sc.downlinks = true;
	sc.downlink = sc.link;
	sc.downlink.delay_ns = 0;
	/* A packet meets the faults once, on its host-pair link. */
	sc.downlink.loss = 0;
	sc.downlink.jitter_ns = 0;
	sc.downlink.dup = 0;
	sc.engine.mtu = cfg->mtu;
	if (cfg->rto_min_ns)
		sim_engine_rto_min(&sc.engine, cfg->rto_min_ns);
	if (cfg->hint_interval_ns)
		sc.engine.hint_interval_ns = cfg->hint_interval_ns;
	sc.engine.rate_hints = cfg->rate_hints;
	/* The access rate: the NIC and the downlinks carry this much. */
	sc.engine.link_rate_bps = cfg->plane_rate_bps * cfg->planes;
	/* The receiver has a QP per sender; a small table keeps the engine's scans cheap. */
	sc.engine.max_qps = cfg->senders + 1;
	if (sim_config_check(&sc, why)) {
		errno = EINVAL;
		return NULL;
	}
	return sim_create(&sc);
}

/* Planes that carry anything in the end: not lost for good, not blackholed for good. */
static uint32_t live_planes(const struct inc_config *cfg)
{
	uint32_t n = 0;

	for (uint32_t p = 0; p < cfg->planes; p++)
		n += !(p < SIM_MAX_PLANES && cfg->plane_loss_set & 1ULL << p &&
		       cfg->plane_loss[p] >= 1) &&
		     !(cfg->blackhole_plane == (int32_t)p && !cfg->blackhole_ns);
	return n;
}

static void inc_collect(struct inc_run *r, struct inc_result *res)
{
	const struct inc_config *cfg = r->cfg;
	double gbps[INC_MAX_SENDERS], cont[INC_MAX_SENDERS];
	uint64_t bytes = 0, first = UINT64_MAX, last = 0;

	res->t_end_ns = sim_now(r->sim);
	res->done = true;
	for (uint32_t i = 0; i < r->n; i++) {
		struct inc_sender *s = &res->s[i];
		const struct wl_result *w = &s->wl;
		uint64_t end;

		s->wl = *wl_result(r->wl[i]);
		/* An unfinished sender still says how fast it was going. */
		end = w->done ? w->t_last_cqe : res->t_end_ns;
		res->done &= w->done;
		if (w->t_first_post && end > w->t_first_post)
			s->gbps = (double)w->bytes_done * 8 / (double)(end - w->t_first_post);
		if (r->ended && r->t_end > r->t_start)
			s->contended_gbps = (double)(r->bytes_end[i] - r->bytes_start[i]) * 8 /
					    (double)(r->t_end - r->t_start);
		s->hint_mbps = r->hint_mbps[i];
		engine_get_stats(sim_host_engine(r->sim, i), &s->eng);
		gbps[i] = s->gbps;
		cont[i] = s->contended_gbps;
		bytes += w->bytes_done;
		if (w->t_first_post && w->t_first_post < first)
			first = w->t_first_post;
		if (end > last)
			last = end;
	}
	res->t_first_post = first == UINT64_MAX ? 0 : first;
	res->t_last_cqe = last;
	if (last > res->t_first_post && res->t_first_post)
		res->total_gbps = (double)bytes * 8 / (double)(last - res->t_first_post);
	res->capacity_gbps = (double)sim_goodput_capacity(r->sim, cfg->plane_rate_bps) *
			     live_planes(cfg) / 1e9;
	res->jain = inc_jain(gbps, r->n);
	res->jain_contended = r->ended ? inc_jain(cont, r->n) : 0;
	res->t_contended_start = r->t_start;
	res->t_contended_end = r->t_end;
	sim_host_downlink_stats(r->sim, r->receiver, &res->bottleneck);
	for (uint32_t p = 0; p < cfg->planes && p < SIM_MAX_PLANES; p++)
		sim_downlink_stats(r->sim, r->receiver, p, &res->bottleneck_plane[p]);
	sim_get_stats(r->sim, &res->sim);
	engine_get_stats(sim_host_engine(r->sim, r->receiver), &res->rx_eng);
}

/* The first failure among the senders, named. */
static int first_failure(struct inc_run *r, struct inc_result *res)
{
	for (uint32_t i = 0; i < r->n; i++) {
		const struct wl_result *w = wl_result(r->wl[i]);

		if (w->err) {
			snprintf(res->why, sizeof(res->why), "sender %u: %s", i, w->why);
			return w->err;
		}
	}
	return 0;
}

/* A plane's own loss (--plane-loss), on every host-pair link of it. */
static int set_plane_loss(struct inc_run *r)
{
	const struct inc_config *cfg = r->cfg;

	for (uint32_t p = 0; p < cfg->planes && p < SIM_MAX_PLANES; p++) {
		struct sim_link_cfg lc;
		int err;

		if (!(cfg->plane_loss_set & 1ULL << p))
			continue;
		err = sim_link_get(r->sim, 0, r->receiver, p, &lc);
		if (!err) {
			lc.loss = cfg->plane_loss[p];
			err = sim_plane_set(r->sim, p, &lc);
		}
		if (err)
			return err;
	}
	return 0;
}

static bool none_posted(struct sim *sim, void *ctx)
{
	struct inc_run *r = ctx;

	(void)sim;
	for (uint32_t i = 0; i < r->n; i++)
		if (wl_result(r->wl[i])->t_first_post)
			return false;
	return inc_running(sim, ctx);
}

/* The blackhole, timed from the first sender's first post. */
static int arm_blackhole(struct inc_run *r)
{
	const struct inc_config *cfg = r->cfg;
	struct sim_link_cfg lc;
	uint64_t t0 = UINT64_MAX;
	int err;

	if (sim_run_while(r->sim, none_posted, r, cfg->time_limit_ns))
		return 0;	/* the run's own end says why */
	for (uint32_t i = 0; i < r->n; i++) {
		uint64_t t = wl_result(r->wl[i])->t_first_post;

		if (t && t < t0)
			t0 = t;
	}
	if (t0 == UINT64_MAX)
		return 0;	/* a sender failed before posting: inc_go says which */
	err = sim_link_get(r->sim, 0, r->receiver, (uint32_t)cfg->blackhole_plane, &lc);
	if (err)
		return err;
	lc.blackhole_start_ns = t0 + cfg->blackhole_at_ns;
	lc.blackhole_end_ns = cfg->blackhole_ns ? lc.blackhole_start_ns + cfg->blackhole_ns :
						  SIM_NEVER;
	return sim_plane_set(r->sim, (uint32_t)cfg->blackhole_plane, &lc);
}

static int inc_go(struct inc_run *r, struct inc_result *res)
{
	const struct inc_config *cfg = r->cfg;
	int err = 0;

	for (uint32_t i = 0; i < r->n && !err; i++)
		err = wl_start(r->wl[i]);
	if (err)
		return first_failure(r, res) ?: err;
	if (cfg->run_hook)
		cfg->run_hook(cfg->run_hook_ctx, false);
	if (cfg->blackhole_plane >= 0)
		err = arm_blackhole(r);
	if (!err)
		err = sim_run_while(r->sim, inc_running, r, cfg->time_limit_ns);
	if (cfg->run_hook)
		cfg->run_hook(cfg->run_hook_ctx, true);
	if (first_failure(r, res))
		return first_failure(r, res);
	if (err) {
		/*
		 * Time limit or deadlock: wl_run on an unfinished workload returns
		 * at once (nothing is due before the limit, or nothing is left)
		 * and says where it stands.
		 */
		for (uint32_t i = 0; i < r->n; i++)
			if (!wl_finished(r->wl[i]))
				wl_run(r->wl[i], cfg->time_limit_ns);
		return first_failure(r, res) ?: err;
	}
	for (uint32_t i = 0; cfg->verify && i < r->n; i++) {
		err = wl_verify_memory(r->wl[i]);
		if (err)
			return first_failure(r, res) ?: err;
	}
	return 0;
}

int inc_run(const struct inc_config *cfg, struct inc_result *res)
{
	struct inc_run r = { .cfg = cfg, .n = cfg->senders, .receiver = cfg->senders };
	const char *why = NULL;
	int err = 0;

	memset(res, 0, sizeof(*res));
	res->senders = cfg->senders;
	if (!cfg->senders || cfg->senders > INC_MAX_SENDERS) {
		snprintf(res->why, sizeof(res->why), "senders must be 1..%u", INC_MAX_SENDERS);
		return res->err = -EINVAL;
	}
	if (cfg->blackhole_plane >= (int32_t)cfg->planes ||
	    (cfg->planes < 64 && cfg->plane_loss_set >> cfg->planes)) {
		snprintf(res->why, sizeof(res->why), "a fault on a plane past the %u planes",
			 cfg->planes);
		return res->err = -EINVAL;
	}
	r.sim = inc_sim(cfg, &why);
	if (!r.sim) {
		snprintf(res->why, sizeof(res->why), "bad configuration: %s",
			 why ? why : strerror(errno));
		return res->err = -errno;
	}
	for (uint32_t i = 0; i < r.n; i++) {
		struct wl_config wc = cfg->wl;

		wc.client = i;
		wc.server = r.receiver;
		wc.seed = cfg->wl.seed + i;
		wc.service_id = cfg->wl.service_id + i;
		r.wl[i] = wl_create(r.sim, &wc);
		if (!r.wl[i]) {
			err = -errno;
			snprintf(res->why, sizeof(res->why), "wl_create(sender %u): %s", i,
				 strerror(errno));
			goto out;
		}
	}
	/* wl_create made each workload its hosts' callback: route by QP instead. */
	for (uint32_t h = 0; h <= r.n; h++)
		sim_host_set_cqe_cb(r.sim, h, inc_cqe, &r);
	if (cfg->trace)
		sim_set_trace(r.sim, cfg->trace, cfg->trace_ctx);
	err = set_plane_loss(&r);
	if (err) {
		snprintf(res->why, sizeof(res->why), "plane loss: %s", strerror(-err));
		goto out;
	}
	if (cfg->setup)
		cfg->setup(r.sim, cfg->setup_ctx);
	err = inc_go(&r, res);
	inc_collect(&r, res);
	if (cfg->inspect)
		cfg->inspect(r.sim, r.wl, r.n, cfg->inspect_ctx);
out:
	for (uint32_t i = 0; i < r.n; i++)
		wl_destroy(r.wl[i]);
	sim_destroy(r.sim);
	return res->err = err;
}
