// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "scenario.h"

void scn_config_default(struct scn_config *cfg)
{
	*cfg = (struct scn_config){
		.planes = 4,
		.plane_rate_bps = 25000000000ULL,
		.delay_ns = 2000,
		.queue_bytes = 512 * 1024,
		.ecn_bytes = 64 * 1024,
		.route = SIM_ROUTE_HASH,
		.blackhole_plane = -1,
		.settle_ns = 1000000,
		.mtu = 4096,
		/*
		 * A fabric with ~10 us round trips: 200 us is 20 RTTs.  The engine's
		 * own default (2 ms) is for hosts whose scheduler adds milliseconds.
		 */
		.rto_min_ns = 200000,
		.time_limit_ns = 1000000000ULL,
		.seed = 1,
		.verify = true,
	};
	wl_config_default(&cfg->wl);
}

void scn_config_bench(struct scn_config *cfg)
{
	scn_config_default(cfg);
	cfg->route = SIM_ROUTE_PATH_ID;
	memset(cfg->wl.mix, 0, sizeof(cfg->wl.mix));
	cfg->wl.mix[WL_WRITE] = 1;
	/* 2 MiB in flight: 16 x 64 KiB caps 8 x 25 Gbit/s at ~0.94 of capacity. */
	cfg->wl.outstanding = 32;
}

void scn_config_like_fabric(struct scn_config *cfg)
{
	cfg->planes = 4;
	cfg->plane_rate_bps = 250000000ULL;
	cfg->burst_bytes = 64 * 1024;
	cfg->queue_bytes = 250000000ULL / 8 / 50 + 64 * 1024;
	cfg->ecn_bytes = 64 * 1024;
	cfg->ecn_virtual = true;
	cfg->loss_at_enqueue = true;
	cfg->nic_rate_bps = 10000000000ULL;
	cfg->delay_ns = 10000;
	cfg->route = SIM_ROUTE_LINUX;
	cfg->host_rx = (struct sim_host_rx){
		.poll_ns = 16000,
		.stall_ns = 200000,
		.stall_every_ns = 1000000,
	};
	cfg->mtu = 3380;
	cfg->rto_min_ns = 5000000;
	cfg->rto_init_ns = 20000000;
	cfg->daemon_engine = true;
	memset(cfg->wl.mix, 0, sizeof(cfg->wl.mix));
	cfg->wl.mix[WL_WRITE] = 1;
	cfg->wl.msg_bytes = 64 * 1024;
	cfg->wl.outstanding = 128;
	cfg->wl.total_bytes = 256ULL << 20;
	cfg->time_limit_ns = 8000000000ULL;
}

void scn_config_like_fabric_busy(struct scn_config *cfg)
{
	scn_config_like_fabric(cfg);
	cfg->host_rx = (struct sim_host_rx){
		.poll_ns = 50000,
		.stall_ns = 500000,
		.stall_every_ns = 2000000,
	};
}

void scn_config_like_fabric_held(struct scn_config *cfg)
{
	scn_config_like_fabric(cfg);
	cfg->host_rx.hold_worker = true;
}

/* What a blackhole run samples when the settling time is over. */
struct scn_sample {
	struct workload *wl;
	uint64_t t, bytes;
	bool taken;
};

static void take_sample(struct sim *sim, void *ctx)
{
	struct scn_sample *s = ctx;

	s->t = sim_now(sim);
	s->bytes = wl_result(s->wl)->bytes_done;
	s->taken = true;
}

/* The blackhole is timed from the first post, which only the workload knows. */
struct scn_bh {
	struct scn_sample sample;
	const struct scn_config *cfg;
	bool armed;
};

static bool before_first_post(struct sim *sim, void *ctx)
{
	struct scn_bh *bh = ctx;

	return !wl_finished(bh->sample.wl) && !wl_result(bh->sample.wl)->t_first_post;
}

static int arm_blackhole(struct sim *sim, struct scn_bh *bh)
{
	const struct scn_config *cfg = bh->cfg;
	uint64_t t0, at;
	struct sim_link_cfg lc;
	int err;

	err = sim_run_while(sim, before_first_post, bh, cfg->time_limit_ns);
	if (err)
		return 0;	/* wl_run reports the stall */
	t0 = wl_result(bh->sample.wl)->t_first_post;
	at = t0 + cfg->blackhole_at_ns;
	if (cfg->outage_ns) {
		/* A whole-fabric outage: every plane dark for a while, then back. */
		for (uint32_t p = 0; p < cfg->planes; p++) {
			err = sim_link_get(sim, 0, 1, p, &lc);
			if (err)
				return err;
			lc.blackhole_start_ns = at;
			lc.blackhole_end_ns = at + cfg->outage_ns;
			err = sim_plane_set(sim, p, &lc);
			if (err)
				return err;
		}
		bh->armed = false;
		return 0;
	}
	err = sim_link_get(sim, 0, 1, (uint32_t)cfg->blackhole_plane, &lc);
	if (err)
		return err;
	lc.blackhole_start_ns = at;
	lc.blackhole_end_ns = cfg->blackhole_ns ? at + cfg->blackhole_ns : SIM_NEVER;
	err = sim_plane_set(sim, (uint32_t)cfg->blackhole_plane, &lc);
	if (!err)
		err = sim_schedule(sim, at + cfg->settle_ns, take_sample, &bh->sample);
	bh->armed = !err;
	return err;
}

/* mrocd's engine: the link rate unknown (0), so no rate hints and no spreading. */
static void daemon_engine(uint32_t host, struct engine_config *ec, void *ctx)
{
	(void)host;
	(void)ctx;
	ec->link_rate_bps = 0;
	ec->repath_spread = false;
}

/* The host delay step (scn_config.host_delay_ns): the client's receive path slows. */
struct scn_step {
	struct scn_sample sample;
	const struct scn_config *cfg;
};

static void host_delay_step(struct sim *sim, void *ctx)
{
	struct scn_step *st = ctx;

	sim_set_host_rx_delay(sim, 0, st->cfg->host_delay_ns);
}

/* NULL with errno and *why on a configuration the simulation refuses. */
static struct sim *scn_sim(const struct scn_config *cfg, const char **why)
{
	struct sim_config sc;

	sim_config_default(&sc);
	sc.nhosts = 2;
	sc.nplanes = cfg->planes;
	sc.route = cfg->route;
	sc.ecmp_net = cfg->ecmp_net;
	sc.ecmp_seed = cfg->ecmp_seed;
	sc.seed = cfg->seed;
	sc.nic_rate_bps = cfg->nic_rate_bps;
	sc.link.rate_bps = cfg->plane_rate_bps;
	sc.link.delay_ns = cfg->delay_ns;
	sc.link.queue_bytes = cfg->queue_bytes;
	sc.link.ecn_bytes = cfg->ecn_bytes;
	sc.link.ecn_virtual = cfg->ecn_virtual;
	sc.link.loss = cfg->loss;
	sc.link.loss_at_enqueue = cfg->loss_at_enqueue;
	sc.link.jitter_ns = cfg->jitter_ns;
	sc.link.dup = cfg->dup;
	sc.link.burst_bytes = cfg->burst_bytes;
	sc.clock_skew_ns = cfg->clock_skew_ns;
	sc.clock_drift_ppm = cfg->clock_drift_ppm;
	sc.engine.mtu = cfg->mtu;
	if (cfg->rto_min_ns)
		sim_engine_rto_min(&sc.engine, cfg->rto_min_ns);
	if (cfg->rto_init_ns > sc.engine.rto_init_ns)
		sc.engine.rto_init_ns = cfg->rto_init_ns;
	if (cfg->daemon_engine)
		sc.engine_setup = daemon_engine;
	if (cfg->delay_target_set)
		sc.engine.delay_target_ns = cfg->delay_target_ns;
	sc.engine.peer_window_pkts = cfg->peer_window_pkts;
	sc.engine.peer_host_delay_ns = cfg->peer_host_delay_ns;
	sc.engine.repath_round_rtts = cfg->repath_round_rtts;
	sc.engine.max_qps = 4;	/* one QP per host */
	if (sim_config_check(&sc, why)) {
		errno = EINVAL;
		return NULL;
	}
	return sim_create(&sc);
}

static void scn_collect(struct sim *sim, const struct scn_config *cfg, struct scn_result *res,
			const struct scn_bh *bh)
{
	const struct wl_result *w = &res->wl;
	double plane_cap = (double)sim_goodput_capacity(sim, cfg->plane_rate_bps) / 1e9;
	/* A NIC slower than its planes is the capacity (--nic 1G beside 4 x 400G planes). */
	double nic_cap = cfg->nic_rate_bps ?
				 (double)sim_goodput_capacity(sim, cfg->nic_rate_bps) / 1e9 :
				 plane_cap * cfg->planes;

	res->goodput_gbps = w->goodput_gbps;
	res->capacity_gbps = fmin(plane_cap * cfg->planes, nic_cap);
	res->t_end_ns = sim_now(sim);
	if (bh->armed) {
		res->after_capacity_gbps = fmin(plane_cap * (cfg->planes - !cfg->blackhole_ns),
						nic_cap);
		/* An unfinished run still says how fast it was going. */
		uint64_t end = w->done ? w->t_last_cqe : res->t_end_ns;

		if (bh->sample.taken && end > bh->sample.t)
			res->after_gbps = (double)(w->bytes_done - bh->sample.bytes) * 8 /
					  (double)(end - bh->sample.t);
	}
	sim_get_stats(sim, &res->sim);
	engine_get_stats(sim_host_engine(sim, 0), &res->eng[0]);
	engine_get_stats(sim_host_engine(sim, 1), &res->eng[1]);
	for (uint32_t p = 0; p < cfg->planes && p < SIM_MAX_PLANES; p++)
		sim_plane_stats(sim, p, &res->plane[p]);
}

int scn_run(const struct scn_config *cfg, struct scn_result *res)
{
	struct scn_bh bh = { .cfg = cfg };
	struct scn_step step = { .cfg = cfg };
	struct workload *wl = NULL;
	const char *why = NULL;
	struct sim *sim;
	int err;

	memset(res, 0, sizeof(*res));
	if (cfg->blackhole_plane >= (int32_t)cfg->planes) {
		snprintf(res->why, sizeof(res->why), "blackhole plane %d: there are %u planes",
			 cfg->blackhole_plane, cfg->planes);
		return res->err = -EINVAL;
	}
	if (cfg->planes < 64 && cfg->plane_loss_set >> cfg->planes) {
		snprintf(res->why, sizeof(res->why), "plane loss on a plane past the %u planes",
			 cfg->planes);
		return res->err = -EINVAL;
	}
	sim = scn_sim(cfg, &why);
	if (!sim) {
		snprintf(res->why, sizeof(res->why), "bad configuration: %s",
			 why ? why : strerror(errno));
		return res->err = -errno;
	}
	wl = wl_create(sim, &cfg->wl);
	if (!wl) {
		err = -errno;
		snprintf(res->why, sizeof(res->why), "wl_create: %s", strerror(errno));
		goto out;
	}
	bh.sample.wl = wl;
	if (cfg->trace)
		sim_set_trace(sim, cfg->trace, cfg->trace_ctx);
	if (cfg->drop)
		sim_set_drop(sim, cfg->drop, cfg->drop_ctx);
	for (uint32_t p = 0; p < cfg->planes && p < SIM_MAX_PLANES; p++) {
		struct sim_link_cfg lc;

		if (!cfg->plane_delay_ns[p] && !(cfg->plane_loss_set & 1ULL << p))
			continue;
		err = sim_link_get(sim, 0, 1, p, &lc);
		if (!err) {
			if (cfg->plane_delay_ns[p])
				lc.delay_ns = cfg->plane_delay_ns[p];
			if (cfg->plane_loss_set & 1ULL << p)
				lc.loss = cfg->plane_loss[p];
			err = sim_plane_set(sim, p, &lc);
		}
		if (err)
			goto out;
	}
	for (uint32_t h = 0; h < 2; h++) {
		err = sim_set_host_rx(sim, h, &cfg->host_rx);
		if (err)
			goto out;
	}
	if (cfg->host_delay_ns) {
		step.sample.wl = wl;
		err = sim_schedule(sim, cfg->host_delay_at_ns, host_delay_step, &step);
		if (!err)
			err = sim_schedule(sim, cfg->host_delay_at_ns + cfg->settle_ns, take_sample,
					   &step.sample);
		if (err)
			goto out;
	}
	err = wl_start(wl);
	if (cfg->run_hook)
		cfg->run_hook(cfg->run_hook_ctx, false);
	if (!err && (cfg->blackhole_plane >= 0 || cfg->outage_ns))
		err = arm_blackhole(sim, &bh);
	if (!err)
		err = wl_run(wl, cfg->time_limit_ns);
	if (cfg->run_hook)
		cfg->run_hook(cfg->run_hook_ctx, true);
	if (!err && cfg->verify)
		err = wl_verify_memory(wl);
	res->wl = *wl_result(wl);
	if (err && res->wl.why[0])
		snprintf(res->why, sizeof(res->why), "%s", res->wl.why);
	scn_collect(sim, cfg, res, &bh);
	if (step.sample.taken) {
		uint64_t end = res->wl.done ? res->wl.t_last_cqe : res->t_end_ns;

		if (end > step.sample.t)
			res->after_gbps = (double)(res->wl.bytes_done - step.sample.bytes) * 8 /
					  (double)(end - step.sample.t);
	}
	if (cfg->inspect)
		cfg->inspect(sim, wl, cfg->inspect_ctx);
out:
	wl_destroy(wl);
	sim_destroy(sim);
	return res->err = err;
}
