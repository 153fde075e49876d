// SPDX-License-Identifier: MIT
/*
 * simnet core: the fabric that routes a packet its host's NIC has finished
 * to one of its links (and, with downlinks, on to its destination's
 * downlink), the events that adds to the loop, and the hosts' callbacks.
 * The hosts (engine, egress NIC, timer, clock) are driven by simhost.c;
 * links live in link.c.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ecmp.h"
#include "simhost.h"
#include "simnet.h"

/* Events of ours beside the loop's and the hosts' (simhost.h). */
enum sim_ev_type {
	EV_LINK_TX = SIMLOOP_EV_NET,	/* a link has serialised its head packet */
};

/* A host: the driver (simhost.h) and the test's completion callback. */
struct sim_host {
	struct simhost d;
	sim_cqe_fn cb;
	void *cb_ctx;
	uint64_t rx_delay_ns;		/* added to every arrival (a busy host; sim_set_host_rx_delay) */
	struct sim_host_rx rx;		/* the worker's polls and stalls (sim_set_host_rx) */
	struct rng rx_rng;		/* ... its stalls' gaps */
	uint64_t stall_at, stall_end;	/* the current or next stall */
};

struct sim {
	struct sim_config cfg;
	struct simloop loop;
	struct simhost_env henv;	/* what the hosts' driver needs of us */
	uint64_t hash_seed;
	uint32_t ecmp_seed, ecmp_net;	/* SIM_ROUTE_LINUX (sim_config) */
	struct rng rng;
	struct pktpool pool;
	struct link_env env;
	struct sim_host *hosts;
	struct sim_link *links;		/* [src][dst][plane] */
	struct sim_link *downlinks;	/* [host][plane], NULL without */
	sim_drop_fn drop;
	void *drop_ctx;
};

void sim_config_default(struct sim_config *cfg)
{
	*cfg = (struct sim_config){
		.nhosts = 2,
		.nplanes = 4,
		.route = SIM_ROUTE_HASH,
		.seed = 1,
		.wire_overhead = 64,
	};
	sim_link_cfg_default(&cfg->link);
	sim_link_cfg_default(&cfg->downlink);
	cfg->downlink.delay_ns = 0;
	engine_config_default(&cfg->engine);
}

static inline struct sim_link *link_at(const struct sim *sim, uint32_t src, uint32_t dst,
				       uint32_t plane)
{
	uint32_t n = sim->cfg.nhosts;

	return &sim->links[((size_t)src * n + dst) * sim->cfg.nplanes + plane];
}

static inline struct sim_link *downlink_at(const struct sim *sim, uint32_t host, uint32_t plane)
{
	return &sim->downlinks[(size_t)host * sim->cfg.nplanes + plane];
}

static int downlink_ok(const struct sim *sim, uint32_t host, uint32_t plane)
{
	if (!sim->downlinks)
		return -ENODEV;
	return host < sim->cfg.nhosts && plane < sim->cfg.nplanes ? 0 : -EINVAL;
}

static bool link_ok(const struct sim *sim, uint32_t src, uint32_t dst, uint32_t plane)
{
	return src < sim->cfg.nhosts && dst < sim->cfg.nhosts && src != dst &&
	       plane < sim->cfg.nplanes;
}

/* ---- hosts ------------------------------------------------------------------- */

static void host_cqe(void *net, struct simhost *d, const struct engine_cqe *cqe)
{
	struct sim_host *h = container_of(d, struct sim_host, d);

	if (h->cb)
		h->cb(net, d->idx, cqe, h->cb_ctx);
}

static void host_drive(struct sim *sim, struct sim_host *h)
{
	simhost_drive(&h->d, &sim->henv);
}

/* Route a packet the NIC has finished onto its plane's link. */
static void fabric_send(struct sim *sim, struct sim_pkt *pkt)
{
	uint32_t plane;

	pkt->host_delayed = pkt->host_polled = false;
	pkt->stamp_at = 0;
	if (pkt->dst >= sim->cfg.nhosts || pkt->dst == pkt->src) {
		sim->hosts[pkt->src].d.st.tx_bad_peer++;
		pktpool_put(&sim->pool, pkt);
		return;
	}
	if (sim->cfg.route == SIM_ROUTE_PATH_ID) {
		plane = pkt->path_id % sim->cfg.nplanes;
	} else if (sim->cfg.route == SIM_ROUTE_LINUX) {
		uint32_t n = sim->cfg.nhosts, net = sim->ecmp_net;
		uint32_t h = ecmp_linux_hash(ecmp_fabric_addr(net, pkt->src, n),
					     ecmp_fabric_addr(net, pkt->dst, n), pkt->sport,
					     ECMP_MROC_PORT, ECMP_PROTO_UDP, sim->ecmp_seed);

		plane = ecmp_linux_nexthop(h, sim->cfg.nplanes);
	} else {
		uint64_t key = (uint64_t)pkt->src << 40 | (uint64_t)pkt->dst << 16 | pkt->sport;

		plane = rng_mix64(key ^ sim->hash_seed) % sim->cfg.nplanes;
	}
	pkt->plane = plane;
	if (sim->drop && sim->drop(sim->drop_ctx, pkt)) {
		sim->hosts[pkt->src].d.st.tx_dropped++;
		pktpool_put(&sim->pool, pkt);
		return;
	}
	link_trace(&sim->env, sim->loop.now, SIM_TR_SEND, pkt);
	link_enqueue(link_at(sim, pkt->src, pkt->dst, plane), &sim->env, pkt, sim->loop.now);
}

/*
 * When host h's worker takes a packet stamped at t: at its next poll, or
 * when the stall that covers that poll ends.  Never earlier for a later t,
 * so the order of packets is kept.
 */
/*
 * The stall that covers t or comes next: the stalls are drawn in order, each
 * from the end of the last, whoever asks first, so asking more often (a
 * held worker's timers) changes none of them.
 */
static void host_stall_next(struct sim_host *h, uint64_t t)
{
	while (h->stall_end <= t) {
		uint64_t every = h->rx.stall_every_ns;

		h->stall_at = h->stall_end + every / 2 + rng_below(&h->rx_rng, every + 1);
		h->stall_end = h->stall_at + h->rx.stall_ns;
	}
}

static uint64_t host_poll_at(struct sim_host *h, uint64_t t)
{
	uint64_t at = t;

	if (h->rx.poll_ns)
		at = (t + h->rx.poll_ns - 1) / h->rx.poll_ns * h->rx.poll_ns;
	if (!h->rx.stall_ns || !h->rx.stall_every_ns)
		return at;
	host_stall_next(h, at);
	return at >= h->stall_at ? h->stall_end : at;
}

/* simhost_env.held_until: a stall holds the whole worker (sim_host_rx.hold_worker). */
static uint64_t host_held_until(void *net, struct simhost *d, uint64_t now)
{
	struct sim_host *h = container_of(d, struct sim_host, d);

	(void)net;
	if (!h->rx.hold_worker || !h->rx.stall_ns || !h->rx.stall_every_ns)
		return 0;
	host_stall_next(h, now);
	return now >= h->stall_at ? h->stall_end : 0;
}

static void pkt_arrive(struct sim *sim, struct sim_pkt *pkt)
{
	struct sim_host *h = &sim->hosts[pkt->dst];

	/* Off the host-pair link: the destination's downlink is the last hop. */
	if (sim->downlinks && !pkt->link->downlink) {
		link_enqueue(downlink_at(sim, pkt->dst, pkt->plane), &sim->env, pkt, sim->loop.now);
		return;
	}
	/* A constant delay keeps the order: every arrival waits alike. */
	if (h->rx_delay_ns && !pkt->host_delayed) {
		pkt->host_delayed = true;
		evq_push(&sim->loop.q, &pkt->ev, sim->loop.now + h->rx_delay_ns);
		return;
	}
	if (!pkt->host_polled) {
		uint64_t at = host_poll_at(h, sim->loop.now);

		pkt->host_polled = true;
		pkt->stamp_at = h->rx.no_stamp ? 0 : sim->loop.now;
		if (at > sim->loop.now) {
			evq_push(&sim->loop.q, &pkt->ev, at);
			return;
		}
	}
	link_trace(&sim->env, sim->loop.now, SIM_TR_DELIVER, pkt);
	simhost_rx(&h->d, &sim->henv, pkt);
}

/* ---- event loop ---------------------------------------------------------------- */

static void sim_dispatch(struct sim *sim, struct sim_event *ev)
{
	struct simhost *h;
	struct simloop_call *c;

	switch (ev->type) {
	case SIMLOOP_EV_HOST_TIMER:
		simhost_timer(container_of(ev, struct simhost, timer), &sim->henv);
		break;
	case SIMLOOP_EV_NIC_DONE:
		h = container_of(ev, struct simhost, nic_done);
		fabric_send(sim, h->nic_pkt);
		h->nic_pkt = NULL;
		simhost_drive(h, &sim->henv);
		break;
	case EV_LINK_TX:
		link_tx_done(container_of(ev, struct sim_link, tx_done), &sim->env, sim->loop.now);
		break;
	case SIMLOOP_EV_PKT_ARRIVE:
		pkt_arrive(sim, container_of(ev, struct sim_pkt, ev));
		break;
	case SIMLOOP_EV_CALL:
		c = simloop_call_take(&sim->loop, ev);
		((sim_call_fn)c->fn)(sim, c->ctx);
		free(c);
		break;
	}
}

int sim_run_until(struct sim *sim, uint64_t t)
{
	struct sim_event *ev;

	while (!simloop_next(&sim->loop, t, &ev))
		sim_dispatch(sim, ev);
	if (sim->loop.now < t)
		sim->loop.now = t;
	return 0;
}

int sim_run_while(struct sim *sim, sim_pred_fn pred, void *ctx, uint64_t time_limit)
{
	while (pred(sim, ctx)) {
		struct sim_event *ev;
		int err = simloop_next(&sim->loop, time_limit, &ev);

		if (err)
			return err;
		sim_dispatch(sim, ev);
	}
	return 0;
}

int sim_schedule(struct sim *sim, uint64_t at, sim_call_fn fn, void *ctx)
{
	return simloop_schedule(&sim->loop, at, (void (*)(void))fn, ctx);
}

/* ---- creation ---------------------------------------------------------------- */

static int sim_hosts_create(struct sim *sim)
{
	const struct sim_config *cfg = &sim->cfg;
	uint64_t nic = cfg->nic_rate_bps ? cfg->nic_rate_bps : cfg->link.rate_bps * cfg->nplanes;
	uint32_t buf_cap = 0;
	int err;

	for (uint32_t i = 0; i < cfg->nhosts; i++) {
		struct sim_host *h = &sim->hosts[i];
		struct engine_config ec;
		struct host_clock clk;

		simhost_engine_config(&ec, &cfg->engine, cfg->seed, i, nic);
		if (cfg->engine_setup)
			cfg->engine_setup(i, &ec, cfg->engine_setup_ctx);
		if (engine_config_check(&ec, &(const char *){ NULL }))
			return -EINVAL;
		if (ec.mtu + MROC_DATA_OVERHEAD > buf_cap)
			buf_cap = ec.mtu + MROC_DATA_OVERHEAD;
		host_clock_draw(&clk, cfg->clock_skew_ns, cfg->clock_drift_ppm, cfg->seed, i);
		simhost_init(&h->d, i, engine_create(&ec), nic, &clk);
		if (!h->d.eng)
			return errno ? -errno : -ENOMEM;
	}
	if (buf_cap < MROC_HDR_LEN + MROC_ACK_HDR_LEN)
		buf_cap = MROC_HDR_LEN + MROC_ACK_HDR_LEN;
	err = pktpool_init(&sim->pool, buf_cap, 1024);
	return err;
}

int sim_config_check(const struct sim_config *cfg, const char **why)
{
	const char *dummy;
	uint64_t pkt;

	if (!why)
		why = &dummy;
#define BAD(msg) do { *why = msg; return -EINVAL; } while (0)
	if (!cfg)
		BAD("no configuration");
	if (cfg->nhosts < 2 || cfg->nhosts > (1u << 20))
		BAD("hosts must be 2..1048576");
	if (!cfg->nplanes || cfg->nplanes > SIM_MAX_PLANES)
		BAD("planes must be 1..64");
	if (cfg->route > SIM_ROUTE_LINUX)
		BAD("unknown routing");
	if (cfg->route == SIM_ROUTE_LINUX && (cfg->nhosts > 254 || cfg->ecmp_net > 255))
		BAD("linux routing: the fabric's address plan has 254 hosts, NET 1..255");
	if (cfg->link.loss < 0 || cfg->link.loss > 1 ||
	    (cfg->downlinks && (cfg->downlink.loss < 0 || cfg->downlink.loss > 1)))
		BAD("loss must be 0..1");
	if (cfg->link.dup < 0 || cfg->link.dup > 1 ||
	    (cfg->downlinks && (cfg->downlink.dup < 0 || cfg->downlink.dup > 1)))
		BAD("duplicates must be 0..1");
	if (cfg->clock_drift_ppm > 1000)
		BAD("clock drift must be 0..1000 ppm");
	if (engine_config_check(&cfg->engine, why))
		return -EINVAL;
	/* The largest packet on the wire, counting a security tag whether or not there is one. */
	pkt = (uint64_t)cfg->engine.mtu + MROC_DATA_OVERHEAD + MROC_TAG_LEN + cfg->wire_overhead;
	if ((cfg->link.queue_bytes && cfg->link.queue_bytes < pkt) ||
	    (cfg->downlinks && cfg->downlink.queue_bytes && cfg->downlink.queue_bytes < pkt))
		BAD("a queue must hold one full packet (MTU + 68 bytes of headers + wire overhead)");
	return 0;
#undef BAD
}

struct sim *sim_create(const struct sim_config *cfg)
{
	struct sim *sim;
	size_t nlinks;
	int err = -EINVAL;

	if (sim_config_check(cfg, NULL)) {
		errno = EINVAL;
		return NULL;
	}
	sim = calloc(1, sizeof(*sim));
	if (!sim) {
		errno = ENOMEM;
		return NULL;
	}
	sim->cfg = *cfg;
	rng_seed(&sim->rng, cfg->seed);
	sim->hash_seed = rng_mix64(cfg->seed ^ 0x65636d70ULL /* "ecmp" */);
	sim->ecmp_seed = cfg->ecmp_seed ? cfg->ecmp_seed : ECMP_FABRIC_SEED;
	sim->ecmp_net = cfg->ecmp_net ? cfg->ecmp_net : 20 + (uint32_t)(sim->hash_seed % 200);
	nlinks = (size_t)cfg->nhosts * cfg->nhosts * cfg->nplanes;
	sim->hosts = calloc(cfg->nhosts, sizeof(*sim->hosts));
	sim->links = calloc(nlinks, sizeof(*sim->links));
	if (cfg->downlinks)
		sim->downlinks = calloc((size_t)cfg->nhosts * cfg->nplanes,
					sizeof(*sim->downlinks));
	if (!sim->hosts || !sim->links || (cfg->downlinks && !sim->downlinks) ||
	    evq_init(&sim->loop.q, 1024)) {
		err = -ENOMEM;
		goto fail;
	}
	sim->env = (struct link_env){ .q = &sim->loop.q, .pool = &sim->pool, .rng = &sim->rng };
	sim->henv = (struct simhost_env){ .loop = &sim->loop, .pool = &sim->pool,
					  .wire_overhead = cfg->wire_overhead, .cqe = host_cqe,
					  .held_until = host_held_until, .net = sim };
	for (uint32_t s = 0; s < cfg->nhosts; s++)
		for (uint32_t d = 0; d < cfg->nhosts; d++)
			for (uint32_t p = 0; p < cfg->nplanes; p++)
				link_init(link_at(sim, s, d, p), &cfg->link, s, d, p, EV_LINK_TX);
	for (uint32_t h = 0; sim->downlinks && h < cfg->nhosts; h++)
		for (uint32_t p = 0; p < cfg->nplanes; p++) {
			struct sim_link *l = downlink_at(sim, h, p);

			link_init(l, &cfg->downlink, h, h, p, EV_LINK_TX);
			l->downlink = true;
		}
	err = sim_hosts_create(sim);
	if (err)
		goto fail;
	return sim;
fail:
	sim_destroy(sim);
	errno = -err;
	return NULL;
}

void sim_destroy(struct sim *sim)
{
	if (!sim)
		return;
	/* Return every packet to the pool before the pool goes. */
	simloop_drain(&sim->loop, &sim->pool);
	if (sim->links) {
		size_t n = (size_t)sim->cfg.nhosts * sim->cfg.nhosts * sim->cfg.nplanes;

		for (size_t i = 0; i < n; i++)
			link_flush(&sim->links[i], &sim->env);
	}
	if (sim->downlinks) {
		size_t n = (size_t)sim->cfg.nhosts * sim->cfg.nplanes;

		for (size_t i = 0; i < n; i++)
			link_flush(&sim->downlinks[i], &sim->env);
	}
	if (sim->hosts) {
		for (uint32_t i = 0; i < sim->cfg.nhosts; i++)
			simhost_fini(&sim->hosts[i].d, &sim->pool);
	}
	pktpool_fini(&sim->pool);
	evq_fini(&sim->loop.q);
	free(sim->links);
	free(sim->downlinks);
	free(sim->hosts);
	free(sim);
}

/* ---- accessors ----------------------------------------------------------------- */

uint64_t sim_now(const struct sim *sim)
{
	return sim->loop.now;
}

const struct sim_config *sim_config(const struct sim *sim)
{
	return &sim->cfg;
}

struct engine *sim_host_engine(struct sim *sim, uint32_t host)
{
	return host < sim->cfg.nhosts ? sim->hosts[host].d.eng : NULL;
}

void sim_host_set_cqe_cb(struct sim *sim, uint32_t host, sim_cqe_fn fn, void *ctx)
{
	if (host >= sim->cfg.nhosts)
		return;
	sim->hosts[host].cb = fn;
	sim->hosts[host].cb_ctx = ctx;
}

void sim_host_kick(struct sim *sim, uint32_t host)
{
	if (host < sim->cfg.nhosts)
		host_drive(sim, &sim->hosts[host]);
}

int sim_post_send(struct sim *sim, uint32_t host, uint32_t qpn, const struct engine_wr *wr)
{
	if (host >= sim->cfg.nhosts)
		return -EINVAL;
	return simhost_post_send(&sim->hosts[host].d, &sim->henv, qpn, wr);
}

int sim_post_recv(struct sim *sim, uint32_t host, uint32_t qpn, const struct engine_recv_wr *wr)
{
	int err;

	if (host >= sim->cfg.nhosts)
		return -EINVAL;
	err = engine_post_recv(sim->hosts[host].d.eng, qpn, wr);
	host_drive(sim, &sim->hosts[host]);
	return err;
}

int sim_qp_connect(struct sim *sim, uint32_t host, uint32_t qpn, uint32_t peer,
		   uint64_t service_id)
{
	if (host >= sim->cfg.nhosts || peer >= sim->cfg.nhosts)
		return -EINVAL;
	return simhost_qp_connect(&sim->hosts[host].d, &sim->henv, qpn, peer, service_id);
}

void sim_set_trace(struct sim *sim, sim_trace_fn fn, void *ctx)
{
	sim->env.trace = fn;
	sim->env.trace_ctx = ctx;
}

void sim_set_drop(struct sim *sim, sim_drop_fn fn, void *ctx)
{
	sim->drop = fn;
	sim->drop_ctx = ctx;
}

/* ---- links and statistics ----------------------------------------------------------- */

int sim_link_set(struct sim *sim, uint32_t src, uint32_t dst, uint32_t plane,
		 const struct sim_link_cfg *cfg)
{
	if (!link_ok(sim, src, dst, plane) || !cfg || cfg->loss < 0 || cfg->loss > 1)
		return -EINVAL;
	link_at(sim, src, dst, plane)->cfg = *cfg;
	return 0;
}

int sim_link_get(const struct sim *sim, uint32_t src, uint32_t dst, uint32_t plane,
		 struct sim_link_cfg *out)
{
	if (!link_ok(sim, src, dst, plane))
		return -EINVAL;
	*out = link_at(sim, src, dst, plane)->cfg;
	return 0;
}

int sim_set_host_rx_delay(struct sim *sim, uint32_t host, uint64_t ns)
{
	if (host >= sim->cfg.nhosts)
		return -EINVAL;
	sim->hosts[host].rx_delay_ns = ns;
	return 0;
}

int sim_set_host_rx(struct sim *sim, uint32_t host, const struct sim_host_rx *rx)
{
	struct sim_host *h;

	if (host >= sim->cfg.nhosts || !rx)
		return -EINVAL;
	h = &sim->hosts[host];
	h->rx = *rx;
	rng_seed(&h->rx_rng, rng_mix64(sim->cfg.seed ^ (0x5157ULL << 32 | host)));
	h->stall_at = h->stall_end = sim->loop.now;
	return 0;
}

int sim_plane_set(struct sim *sim, uint32_t plane, const struct sim_link_cfg *cfg)
{
	if (plane >= sim->cfg.nplanes || !cfg)
		return -EINVAL;
	for (uint32_t s = 0; s < sim->cfg.nhosts; s++)
		for (uint32_t d = 0; d < sim->cfg.nhosts; d++)
			if (s != d) {
				int err = sim_link_set(sim, s, d, plane, cfg);

				if (err)
					return err;
			}
	return 0;
}

int sim_link_stats(const struct sim *sim, uint32_t src, uint32_t dst, uint32_t plane,
		   struct sim_link_stats *out)
{
	if (!link_ok(sim, src, dst, plane))
		return -EINVAL;
	*out = link_at(sim, src, dst, plane)->st;
	return 0;
}

int sim_plane_stats(const struct sim *sim, uint32_t plane, struct sim_link_stats *out)
{
	if (plane >= sim->cfg.nplanes)
		return -EINVAL;
	*out = (struct sim_link_stats){ 0 };
	for (uint32_t s = 0; s < sim->cfg.nhosts; s++)
		for (uint32_t d = 0; d < sim->cfg.nhosts; d++)
			link_stats_add(out, &link_at(sim, s, d, plane)->st);
	return 0;
}

int sim_downlink_set(struct sim *sim, uint32_t host, uint32_t plane,
		     const struct sim_link_cfg *cfg)
{
	int err = downlink_ok(sim, host, plane);

	if (err)
		return err;
	if (!cfg || cfg->loss < 0 || cfg->loss > 1)
		return -EINVAL;
	downlink_at(sim, host, plane)->cfg = *cfg;
	return 0;
}

int sim_downlink_get(const struct sim *sim, uint32_t host, uint32_t plane,
		     struct sim_link_cfg *out)
{
	int err = downlink_ok(sim, host, plane);

	if (!err)
		*out = downlink_at(sim, host, plane)->cfg;
	return err;
}

int sim_downlink_stats(const struct sim *sim, uint32_t host, uint32_t plane,
		       struct sim_link_stats *out)
{
	int err = downlink_ok(sim, host, plane);

	if (!err)
		*out = downlink_at(sim, host, plane)->st;
	return err;
}

int sim_host_downlink_stats(const struct sim *sim, uint32_t host, struct sim_link_stats *out)
{
	int err = downlink_ok(sim, host, 0);

	if (err)
		return err;
	*out = (struct sim_link_stats){ 0 };
	for (uint32_t p = 0; p < sim->cfg.nplanes; p++)
		link_stats_add(out, &downlink_at(sim, host, p)->st);
	return 0;
}

void sim_get_stats(const struct sim *sim, struct sim_stats *out)
{
	size_t n = (size_t)sim->cfg.nhosts * sim->cfg.nhosts * sim->cfg.nplanes;

	*out = (struct sim_stats){
		.now = sim->loop.now,
		.events = sim->loop.events,
		.pool_pkts = sim->pool.total,
		.pkts_in_use = sim->pool.in_use,
	};
	for (size_t i = 0; i < n; i++)
		link_stats_add(&out->links, &sim->links[i].st);
	for (size_t i = 0; sim->downlinks && i < (size_t)sim->cfg.nhosts * sim->cfg.nplanes; i++)
		link_stats_add(&out->downlinks, &sim->downlinks[i].st);
	for (uint32_t i = 0; i < sim->cfg.nhosts; i++)
		simhost_stats_add(&out->hosts, &sim->hosts[i].d.st);
}

int sim_host_stats(const struct sim *sim, uint32_t host, struct simhost_stats *out)
{
	if (host >= sim->cfg.nhosts)
		return -EINVAL;
	*out = sim->hosts[host].d.st;
	return 0;
}

uint64_t sim_goodput_capacity(const struct sim *sim, uint64_t rate_bps)
{
	return simhost_goodput_capacity(rate_bps, sim->cfg.engine.mtu, sim->cfg.wire_overhead);
}
