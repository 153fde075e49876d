// SPDX-License-Identifier: MIT
/*
 * simnet core: the event loop, hosts (engine + egress NIC + timer) and the
 * fabric that routes a packet to one of its links (and, with downlinks, on
 * to its destination's downlink).  Links live in link.c.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "hosttimer.h"
#include "simnet.h"

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

enum sim_ev_type {
	EV_HOST_TIMER = 1,	/* the engine's deadline */
	EV_NIC_DONE,		/* the NIC has serialised its packet */
	EV_LINK_TX,		/* a link has serialised its head packet */
	EV_PKT_ARRIVE,		/* a packet reaches the far end of its link */
	EV_CALL,		/* sim_schedule */
};

#define CQ_BATCH	32

struct sim_host {
	struct sim_event timer;		/* exactly one pending engine timer */
	struct sim_event nic_done;
	struct engine *eng;
	struct sim_pkt *nic_pkt;	/* being serialised, NULL when the NIC is free */
	uint64_t nic_rate;
	uint64_t nic_rem;
	sim_cqe_fn cb;
	void *cb_ctx;
	bool in_drive, dirty;
	struct host_spin spin;
	uint32_t idx;
	uint64_t rx_delay_ns;		/* added to every arrival (a busy host; sim_set_host_rx_delay) */
	struct sim_host_stats st;
};

struct sim_call {
	struct sim_event ev;
	struct sim_call *prev, *next;	/* pending calls, freed at destroy */
	sim_call_fn fn;
	void *ctx;
};

struct sim {
	struct sim_config cfg;
	uint64_t now;
	uint64_t events;
	uint64_t hash_seed;
	struct evq q;
	struct rng rng;
	struct pktpool pool;
	struct link_env env;
	struct sim_host *hosts;
	struct sim_link *links;		/* [src][dst][plane] */
	struct sim_link *downlinks;	/* [host][plane], NULL without */
	struct sim_call *calls;
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

static void host_drive(struct sim *sim, struct sim_host *h);

static void host_poll_cq(struct sim *sim, struct sim_host *h)
{
	struct engine_cqe cqe[CQ_BATCH];
	int n;

	do {
		n = engine_poll_cq(h->eng, cqe, CQ_BATCH);
		for (int i = 0; i < n; i++) {
			h->st.cqes++;
			if (h->cb)
				h->cb(sim, h->idx, &cqe[i], h->cb_ctx);
		}
	} while (n == CQ_BATCH);
}

/* Route a packet the NIC has finished onto its plane's link. */
static void fabric_send(struct sim *sim, struct sim_pkt *pkt)
{
	uint32_t plane;

	if (pkt->dst >= sim->cfg.nhosts || pkt->dst == pkt->src) {
		sim->hosts[pkt->src].st.tx_bad_peer++;
		pktpool_put(&sim->pool, pkt);
		return;
	}
	if (sim->cfg.route == SIM_ROUTE_PATH_ID) {
		plane = pkt->path_id % sim->cfg.nplanes;
	} else {
		uint64_t key = (uint64_t)pkt->src << 40 | (uint64_t)pkt->dst << 16 | pkt->sport;

		plane = rng_mix64(key ^ sim->hash_seed) % sim->cfg.nplanes;
	}
	pkt->plane = plane;
	if (sim->drop && sim->drop(sim->drop_ctx, pkt)) {
		sim->hosts[pkt->src].st.tx_dropped++;
		pktpool_put(&sim->pool, pkt);
		return;
	}
	link_trace(&sim->env, sim->now, SIM_TR_SEND, pkt);
	link_enqueue(link_at(sim, pkt->src, pkt->dst, plane), &sim->env, pkt, sim->now);
}

/* The NIC is free: take one packet from the engine and start serialising it. */
static void host_nic_pull(struct sim *sim, struct sim_host *h)
{
	struct sim_pkt *pkt = pktpool_get(&sim->pool, EV_PKT_ARRIVE);
	struct engine_txbuf tb;
	int n;

	if (!pkt)
		return;
	tb = (struct engine_txbuf){ .data = pkt->data, .cap = sim->pool.buf_cap };
	n = engine_tx(h->eng, sim->now, &tb, 1);
	if (n != 1 || tb.len > sim->pool.buf_cap) {
		if (n < 0 || tb.len > sim->pool.buf_cap)
			h->st.tx_errors++;
		pktpool_put(&sim->pool, pkt);
		return;
	}
	pkt->len = tb.len;
	pkt->wire_len = tb.len + sim->cfg.wire_overhead;
	pkt->src = h->idx;
	pkt->dst = tb.peer;
	pkt->sport = tb.sport;
	pkt->path_id = tb.path_id;
	pkt->ect = tb.ect;
	pkt->host_delayed = false;
	h->st.tx_pkts++;
	h->st.tx_bytes += tb.len;
	h->nic_pkt = pkt;
	evq_push(&sim->q, &h->nic_done,
		 sim->now + sim_ser_ns(pkt->wire_len, h->nic_rate, &h->nic_rem));
}

/* Keep exactly one timer event, at the engine's deadline. */
static void host_arm_timer(struct sim *sim, struct sim_host *h)
{
	uint64_t d = host_timer_at(h->eng, sim->now, h->nic_pkt != NULL, &h->spin,
				   &h->st.timer_spins);

	if (d == UINT64_MAX)
		evq_cancel(&sim->q, &h->timer);
	else if (!evq_queued(&h->timer) || h->timer.time != d)
		evq_push(&sim->q, &h->timer, d);
}

/*
 * The driver loop an engine expects: run due timers, hand completions to
 * the callback, feed the NIC while it is free, rearm the timer.  Callbacks
 * may post work on this or another host; a host already being driven is
 * only marked dirty and loops once more.
 */
static void host_drive(struct sim *sim, struct sim_host *h)
{
	if (h->in_drive) {
		h->dirty = true;
		return;
	}
	h->in_drive = true;
	do {
		h->dirty = false;
		if (engine_next_deadline(h->eng) <= sim->now)
			engine_advance(h->eng, sim->now);
		host_poll_cq(sim, h);
		if (!h->nic_pkt) {
			host_nic_pull(sim, h);
			host_poll_cq(sim, h);
		}
	} while (h->dirty);
	host_arm_timer(sim, h);
	h->in_drive = false;
}

static void pkt_arrive(struct sim *sim, struct sim_pkt *pkt)
{
	struct sim_host *h = &sim->hosts[pkt->dst];
	struct engine_rx_meta meta = { .peer = pkt->src, .sport = pkt->sport, .ce = pkt->ce };

	/* Off the host-pair link: the destination's downlink is the last hop. */
	if (sim->downlinks && !pkt->link->downlink) {
		link_enqueue(downlink_at(sim, pkt->dst, pkt->plane), &sim->env, pkt, sim->now);
		return;
	}
	/* A constant delay keeps the order: every arrival waits alike. */
	if (h->rx_delay_ns && !pkt->host_delayed) {
		pkt->host_delayed = true;
		evq_push(&sim->q, &pkt->ev, sim->now + h->rx_delay_ns);
		return;
	}
	h->st.rx_pkts++;
	h->st.rx_bytes += pkt->len;
	link_trace(&sim->env, sim->now, SIM_TR_DELIVER, pkt);
	if (engine_rx(h->eng, sim->now, pkt->data, pkt->len, &meta) < 0)
		h->st.rx_rejected++;
	pktpool_put(&sim->pool, pkt);
	host_drive(sim, h);
}

/* ---- event loop ---------------------------------------------------------------- */

static void sim_dispatch(struct sim *sim, struct sim_event *ev)
{
	struct sim_host *h;
	struct sim_call *c;

	sim->events++;
	switch (ev->type) {
	case EV_HOST_TIMER:
		h = container_of(ev, struct sim_host, timer);
		h->st.timer_fires++;
		host_drive(sim, h);
		break;
	case EV_NIC_DONE:
		h = container_of(ev, struct sim_host, nic_done);
		fabric_send(sim, h->nic_pkt);
		h->nic_pkt = NULL;
		host_drive(sim, h);
		break;
	case EV_LINK_TX:
		link_tx_done(container_of(ev, struct sim_link, tx_done), &sim->env, sim->now);
		break;
	case EV_PKT_ARRIVE:
		pkt_arrive(sim, container_of(ev, struct sim_pkt, ev));
		break;
	case EV_CALL:
		c = container_of(ev, struct sim_call, ev);
		if (c->prev)
			c->prev->next = c->next;
		else
			sim->calls = c->next;
		if (c->next)
			c->next->prev = c->prev;
		c->fn(sim, c->ctx);
		free(c);
		break;
	}
}

static void sim_step(struct sim *sim)
{
	struct sim_event *ev = evq_pop(&sim->q);

	sim->now = ev->time;
	sim_dispatch(sim, ev);
}

int sim_run_until(struct sim *sim, uint64_t t)
{
	struct sim_event *ev;

	while ((ev = evq_peek(&sim->q)) && ev->time <= t)
		sim_step(sim);
	if (sim->now < t)
		sim->now = t;
	return 0;
}

int sim_run_while(struct sim *sim, sim_pred_fn pred, void *ctx, uint64_t time_limit)
{
	while (pred(sim, ctx)) {
		struct sim_event *ev = evq_peek(&sim->q);

		if (!ev)
			return -EDEADLK;
		if (ev->time > time_limit) {
			if (sim->now < time_limit)
				sim->now = time_limit;
			return -ETIMEDOUT;
		}
		sim_step(sim);
	}
	return 0;
}

int sim_schedule(struct sim *sim, uint64_t at, sim_call_fn fn, void *ctx)
{
	struct sim_call *c;
	int err;

	if (!fn || at < sim->now)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	evq_event_init(&c->ev, EV_CALL);
	c->fn = fn;
	c->ctx = ctx;
	err = evq_push(&sim->q, &c->ev, at);
	if (err) {
		free(c);
		return err;
	}
	c->next = sim->calls;
	if (c->next)
		c->next->prev = c;
	sim->calls = c;
	return 0;
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
		struct engine_config ec = cfg->engine;

		/* Distinct, seed-derived engine seeds: ports and keys differ per host. */
		ec.seed = rng_mix64(cfg->seed ^ rng_mix64(cfg->engine.seed + i + 1));
		/* The NIC is exactly the planes' sum, so it may judge spreading. */
		if (!ec.link_rate_bps) {
			ec.link_rate_bps = nic;
			ec.repath_spread = true;
		}
		if (cfg->engine_setup)
			cfg->engine_setup(i, &ec, cfg->engine_setup_ctx);
		if (engine_config_check(&ec, &(const char *){ NULL }))
			return -EINVAL;
		if (ec.mtu + MROC_DATA_OVERHEAD > buf_cap)
			buf_cap = ec.mtu + MROC_DATA_OVERHEAD;
		h->idx = i;
		h->nic_rate = nic;
		evq_event_init(&h->timer, EV_HOST_TIMER);
		evq_event_init(&h->nic_done, EV_NIC_DONE);
		h->eng = engine_create(&ec);
		if (!h->eng)
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
	if (cfg->route > SIM_ROUTE_PATH_ID)
		BAD("unknown routing");
	if (cfg->link.loss < 0 || cfg->link.loss > 1 ||
	    (cfg->downlinks && (cfg->downlink.loss < 0 || cfg->downlink.loss > 1)))
		BAD("loss must be 0..1");
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
	nlinks = (size_t)cfg->nhosts * cfg->nhosts * cfg->nplanes;
	sim->hosts = calloc(cfg->nhosts, sizeof(*sim->hosts));
	sim->links = calloc(nlinks, sizeof(*sim->links));
	if (cfg->downlinks)
		sim->downlinks = calloc((size_t)cfg->nhosts * cfg->nplanes,
					sizeof(*sim->downlinks));
	if (!sim->hosts || !sim->links || (cfg->downlinks && !sim->downlinks) ||
	    evq_init(&sim->q, 1024)) {
		err = -ENOMEM;
		goto fail;
	}
	sim->env = (struct link_env){ .q = &sim->q, .pool = &sim->pool, .rng = &sim->rng };
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
	struct sim_event *ev;

	if (!sim)
		return;
	/* Return every packet to the pool before the pool goes. */
	while ((ev = evq_pop(&sim->q))) {
		if (ev->type == EV_PKT_ARRIVE)
			pktpool_put(&sim->pool, container_of(ev, struct sim_pkt, ev));
	}
	while (sim->calls) {
		struct sim_call *c = sim->calls;

		sim->calls = c->next;
		free(c);
	}
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
		for (uint32_t i = 0; i < sim->cfg.nhosts; i++) {
			if (sim->hosts[i].nic_pkt)
				pktpool_put(&sim->pool, sim->hosts[i].nic_pkt);
			if (sim->hosts[i].eng)
				engine_destroy(sim->hosts[i].eng);
		}
	}
	pktpool_fini(&sim->pool);
	evq_fini(&sim->q);
	free(sim->links);
	free(sim->downlinks);
	free(sim->hosts);
	free(sim);
}

/* ---- accessors ----------------------------------------------------------------- */

uint64_t sim_now(const struct sim *sim)
{
	return sim->now;
}

const struct sim_config *sim_config(const struct sim *sim)
{
	return &sim->cfg;
}

struct engine *sim_host_engine(struct sim *sim, uint32_t host)
{
	return host < sim->cfg.nhosts ? sim->hosts[host].eng : NULL;
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
	int err;

	if (host >= sim->cfg.nhosts)
		return -EINVAL;
	err = engine_post_send(sim->hosts[host].eng, qpn, wr, sim->now);
	host_drive(sim, &sim->hosts[host]);
	return err;
}

int sim_post_recv(struct sim *sim, uint32_t host, uint32_t qpn, const struct engine_recv_wr *wr)
{
	int err;

	if (host >= sim->cfg.nhosts)
		return -EINVAL;
	err = engine_post_recv(sim->hosts[host].eng, qpn, wr);
	host_drive(sim, &sim->hosts[host]);
	return err;
}

int sim_qp_connect(struct sim *sim, uint32_t host, uint32_t qpn, uint32_t peer,
		   uint64_t service_id)
{
	int err;

	if (host >= sim->cfg.nhosts || peer >= sim->cfg.nhosts)
		return -EINVAL;
	err = engine_qp_connect(sim->hosts[host].eng, qpn, peer, service_id, sim->now);
	host_drive(sim, &sim->hosts[host]);
	return err;
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

static void host_stats_add(struct sim_host_stats *sum, const struct sim_host_stats *s)
{
	sum->tx_pkts += s->tx_pkts;
	sum->tx_bytes += s->tx_bytes;
	sum->rx_pkts += s->rx_pkts;
	sum->rx_bytes += s->rx_bytes;
	sum->rx_rejected += s->rx_rejected;
	sum->tx_errors += s->tx_errors;
	sum->tx_bad_peer += s->tx_bad_peer;
	sum->tx_dropped += s->tx_dropped;
	sum->timer_fires += s->timer_fires;
	sum->timer_spins += s->timer_spins;
	sum->cqes += s->cqes;
}

void sim_get_stats(const struct sim *sim, struct sim_stats *out)
{
	size_t n = (size_t)sim->cfg.nhosts * sim->cfg.nhosts * sim->cfg.nplanes;

	*out = (struct sim_stats){
		.now = sim->now,
		.events = sim->events,
		.pool_pkts = sim->pool.total,
		.pkts_in_use = sim->pool.in_use,
	};
	for (size_t i = 0; i < n; i++)
		link_stats_add(&out->links, &sim->links[i].st);
	for (size_t i = 0; sim->downlinks && i < (size_t)sim->cfg.nhosts * sim->cfg.nplanes; i++)
		link_stats_add(&out->downlinks, &sim->downlinks[i].st);
	for (uint32_t i = 0; i < sim->cfg.nhosts; i++)
		host_stats_add(&out->hosts, &sim->hosts[i].st);
}

int sim_host_stats(const struct sim *sim, uint32_t host, struct sim_host_stats *out)
{
	if (host >= sim->cfg.nhosts)
		return -EINVAL;
	*out = sim->hosts[host].st;
	return 0;
}

uint64_t sim_goodput_capacity(const struct sim *sim, uint64_t rate_bps)
{
	uint64_t mtu = sim->cfg.engine.mtu;

	return (uint64_t)((unsigned __int128)rate_bps * mtu /
			  (mtu + MROC_DATA_OVERHEAD + sim->cfg.wire_overhead));
}
