// SPDX-License-Identifier: MIT
/*
 * cnet core: the event loop, the hosts (engine, NIC ports, timer) and the
 * hand-over of packets between the hosts and the fabric.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "cnet.h"
#include "hosttimer.h"
#include "rng.h"
#include "wire.h"

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

enum cnet_ev_type {
	EV_HOST_TIMER = 1,	/* the engine's deadline */
	EV_NIC_DONE,		/* a host's NIC has taken a packet from its engine */
	EV_LINK_TX,		/* a switch port has serialised a packet */
	EV_PKT_ARRIVE,		/* a packet reaches the far end of its link */
	EV_CALL,		/* cnet_schedule */
	EV_LINK_PFC,		/* a PAUSE or RESUME reaches a link's transmitter */
};

#define CQ_BATCH	32

struct cnet_host {
	struct sim_event timer;
	struct sim_event nic_done;
	struct engine *eng;
	struct sim_pkt *nic_pkt;	/* being taken in, NULL when the NIC is free */
	struct sim_link *nic_wait;	/* PFC: nic_pkt waits for room on this port */
	uint64_t nic_rem;
	struct cnet_pin *pins;		/* QPN -> plane, open addressing; NULL = none */
	uint32_t pin_cap, npins;
	bool in_drive, dirty;
	struct host_spin spin;
	struct host_clock clk;		/* the engine's own clock (cnet_config.clock_*) */
	uint32_t idx;
	struct cnet_host_stats st;
};

struct cnet_pin {
	uint32_t qpn;			/* 0 = free slot (no QP has QPN 0) */
	uint8_t plane;
};

struct cnet_call {
	struct sim_event ev;
	struct cnet_call *prev, *next;	/* pending, freed at destroy */
	cnet_call_fn fn;
	void *ctx;
};

struct cnet {
	struct cnet_config cfg;
	uint64_t now;
	uint64_t events;
	uint64_t nic_rate;		/* the sum of the host's ports */
	struct evq q;
	struct rng rng;
	struct pktpool pool;
	struct link_env env;
	struct fabric fab;
	struct cnet_host *hosts;
	struct cnet_call *calls;
	cnet_cqe_fn cb;
	void *cb_ctx;
	cnet_cqe_fn bg_cb;
	void *bg_ctx;
};

/* What host h's engine takes as now. */
static uint64_t host_now(const struct cnet *cn, const struct cnet_host *h)
{
	return host_clock_local(&h->clk, cn->now);
}

void cnet_config_default(struct cnet_config *cfg)
{
	*cfg = (struct cnet_config){ .wire_overhead = 64, .seed = 1 };
	fab_config_default(&cfg->fab);
	engine_config_default(&cfg->engine);
	cfg->engine.mtu = 4096;
	/* ~10 us round trips: 200 us is 20 of them (the engine's 2 ms is for real hosts). */
	cfg->engine.rto_min_ns = 200000;
	/* A path with no RTT sample yet waits rto_init for a lost tail: 1 ms cost single-packet
	 * collectives at 1% loss a millisecond per loss (seen in the first bench run). */
	cfg->engine.rto_init_ns = 200000;
	/* A small message alone on its QP crosses the planes in parts (PROTOCOL 5.2). */
	cfg->engine.split_unit = 32;
}

/* ---- hosts ------------------------------------------------------------------- */

static void host_poll_cq(struct cnet *cn, struct cnet_host *h)
{
	struct engine_cqe cqe[CQ_BATCH];
	int n;

	do {
		n = engine_poll_cq(h->eng, cqe, CQ_BATCH);
		for (int i = 0; i < n; i++) {
			h->st.cqes++;
			if (cqe[i].wr_id & CNET_WR_BACKGROUND) {
				if (cn->bg_cb)
					cn->bg_cb(cn, h->idx, &cqe[i], cn->bg_ctx);
			} else if (cn->cb) {
				cn->cb(cn, h->idx, &cqe[i], cn->cb_ctx);
			}
		}
	} while (n == CQ_BATCH);
}

/* The NIC is free: take one packet from the engine, at the NIC's rate. */
static void host_nic_pull(struct cnet *cn, struct cnet_host *h)
{
	struct sim_pkt *pkt = pktpool_get(&cn->pool, EV_PKT_ARRIVE);
	struct engine_txbuf tb;
	int n;

	if (!pkt)
		return;
	tb = (struct engine_txbuf){ .data = pkt->data, .cap = cn->pool.buf_cap };
	n = engine_tx(h->eng, host_now(cn, h), &tb, 1);
	if (n != 1 || tb.len > cn->pool.buf_cap) {
		if (n < 0 || tb.len > cn->pool.buf_cap)
			h->st.tx_errors++;
		pktpool_put(&cn->pool, pkt);
		return;
	}
	pkt->len = tb.len;
	pkt->wire_len = tb.len + cn->cfg.wire_overhead;
	pkt->src = h->idx;
	pkt->dst = tb.peer;
	pkt->sport = tb.sport;
	pkt->path_id = tb.path_id;
	pkt->ect = tb.ect;
	h->st.tx_pkts++;
	h->st.tx_bytes += tb.len;
	h->nic_pkt = pkt;
	evq_push(&cn->q, &h->nic_done,
		 cn->now + sim_ser_ns(pkt->wire_len, cn->nic_rate, &h->nic_rem));
}

static struct cnet_pin *pin_slot(const struct cnet_host *h, uint32_t qpn)
{
	uint32_t i = (uint32_t)(rng_mix64(qpn) & (h->pin_cap - 1));

	while (h->pins[i].qpn && h->pins[i].qpn != qpn)
		i = (i + 1) & (h->pin_cap - 1);
	return &h->pins[i];
}

/* The plane the packet's QP is pinned to, or -1. */
static int pkt_pin(const struct cnet_host *h, const struct sim_pkt *pkt)
{
	struct wire_pkt wp;
	struct cnet_pin *p;

	if (!h->npins || wire_parse(pkt->data, pkt->len, &wp, NULL))
		return -1;
	p = pin_slot(h, wp.hdr.src_qpn);
	return p->qpn ? p->plane : -1;
}

/*
 * Taken in: onto the port of its plane, whose queue marks and drops like a
 * switch's.  On a PFC fabric the port may be paused; a full port then holds
 * the NIC (nic_wait) rather than drop, as a lossless NIC does.
 */
static void host_nic_done(struct cnet *cn, struct cnet_host *h)
{
	struct sim_pkt *pkt = h->nic_pkt;
	struct sim_link *port;

	if (pkt->dst >= cn->cfg.fab.nhosts || pkt->dst == pkt->src) {
		h->nic_pkt = NULL;
		h->st.tx_bad_peer++;
		pktpool_put(&cn->pool, pkt);
		return;
	}
	port = h->nic_wait ? h->nic_wait : fab_first_hop(&cn->fab, pkt, pkt_pin(h, pkt));
	if (cn->cfg.fab.pfc && port->cfg.queue_bytes &&
	    port->q_bytes + pkt->wire_len > port->cfg.queue_bytes) {
		if (!h->nic_wait)
			h->st.nic_waits++;
		h->nic_wait = port;
		return;
	}
	h->nic_wait = NULL;
	h->nic_pkt = NULL;
	link_enqueue(port, &cn->env, pkt, cn->now);
}

/* Keep exactly one timer event, at the engine's deadline (in the host's clock). */
static void host_arm_timer(struct cnet *cn, struct cnet_host *h)
{
	uint64_t local = host_now(cn, h);
	uint64_t d = host_timer_at(h->eng, local, h->nic_pkt != NULL, &h->spin,
				   &h->st.timer_spins);

	if (d != UINT64_MAX) {
		/* Back to simulation time; a deadline past now stays past now. */
		uint64_t sim_d = host_clock_sim(&h->clk, d);

		d = d > local && sim_d <= cn->now ? cn->now + 1 : sim_d < cn->now ? cn->now : sim_d;
	}

	if (d == UINT64_MAX)
		evq_cancel(&cn->q, &h->timer);
	else if (!evq_queued(&h->timer) || h->timer.time != d)
		evq_push(&cn->q, &h->timer, d);
}

/*
 * The driver loop: due timers, completions to the callback (which may post
 * work here or elsewhere: a host being driven only notes it is dirty), the
 * NIC fed while it has room, one timer rearmed.
 */
static void host_drive(struct cnet *cn, struct cnet_host *h)
{
	if (h->in_drive) {
		h->dirty = true;
		return;
	}
	h->in_drive = true;
	do {
		h->dirty = false;
		if (engine_next_deadline(h->eng) <= host_now(cn, h))
			engine_advance(h->eng, host_now(cn, h));
		host_poll_cq(cn, h);
		if (!h->nic_pkt) {
			host_nic_pull(cn, h);
			host_poll_cq(cn, h);
		}
	} while (h->dirty);
	host_arm_timer(cn, h);
	h->in_drive = false;
}

static void pkt_arrive(struct cnet *cn, struct sim_pkt *pkt)
{
	struct sim_link *next = fab_next_hop(&cn->fab, pkt, cn->now);
	struct engine_rx_meta meta;
	struct cnet_host *h;

	if (next) {
		link_enqueue(next, &cn->env, pkt, cn->now);
		return;
	}
	h = &cn->hosts[pkt->dst];
	meta = (struct engine_rx_meta){ .peer = pkt->src, .sport = pkt->sport, .ce = pkt->ce };
	h->st.rx_pkts++;
	h->st.rx_bytes += pkt->len;
	if (engine_rx(h->eng, host_now(cn, h), pkt->data, pkt->len, &meta) < 0)
		h->st.rx_rejected++;
	pktpool_put(&cn->pool, pkt);
	host_drive(cn, h);
}

/* ---- event loop ---------------------------------------------------------------- */

static void dispatch(struct cnet *cn, struct sim_event *ev)
{
	struct cnet_host *h;
	struct cnet_call *c;

	cn->events++;
	switch (ev->type) {
	case EV_HOST_TIMER:
		h = container_of(ev, struct cnet_host, timer);
		h->st.timer_fires++;
		host_drive(cn, h);
		break;
	case EV_NIC_DONE:
		h = container_of(ev, struct cnet_host, nic_done);
		host_nic_done(cn, h);
		host_drive(cn, h);
		break;
	case EV_LINK_TX: {
		struct sim_link *l = container_of(ev, struct sim_link, tx_done);

		link_tx_done(l, &cn->env, cn->now);
		/* A NIC port made room: a NIC held by PFC may go on. */
		if (fab_kind(&cn->fab, l) == FAB_UP && cn->hosts[l->src].nic_wait == l) {
			h = &cn->hosts[l->src];
			host_nic_done(cn, h);
			host_drive(cn, h);
		}
		break;
	}
	case EV_LINK_PFC:
		link_pfc_arrive(container_of(ev, struct sim_link, pfc.ev), &cn->env, cn->now);
		break;
	case EV_PKT_ARRIVE:
		pkt_arrive(cn, container_of(ev, struct sim_pkt, ev));
		break;
	case EV_CALL:
		c = container_of(ev, struct cnet_call, ev);
		if (c->prev)
			c->prev->next = c->next;
		else
			cn->calls = c->next;
		if (c->next)
			c->next->prev = c->prev;
		c->fn(cn, c->ctx);
		free(c);
		break;
	}
}

int cnet_run_while(struct cnet *cn, cnet_pred_fn pred, void *ctx, uint64_t time_limit)
{
	while (pred(cn, ctx)) {
		struct sim_event *ev = evq_peek(&cn->q);

		if (!ev)
			return -EDEADLK;
		if (ev->time > time_limit) {
			if (cn->now < time_limit)
				cn->now = time_limit;
			return -ETIMEDOUT;
		}
		evq_pop(&cn->q);
		cn->now = ev->time;
		dispatch(cn, ev);
	}
	return 0;
}

int cnet_schedule(struct cnet *cn, uint64_t at, cnet_call_fn fn, void *ctx)
{
	struct cnet_call *c;
	int err;

	if (!fn || at < cn->now)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	evq_event_init(&c->ev, EV_CALL);
	c->fn = fn;
	c->ctx = ctx;
	err = evq_push(&cn->q, &c->ev, at);
	if (err) {
		free(c);
		return err;
	}
	c->next = cn->calls;
	if (c->next)
		c->next->prev = c;
	cn->calls = c;
	return 0;
}

/* ---- creation ---------------------------------------------------------------- */

static int hosts_create(struct cnet *cn)
{
	const struct cnet_config *cfg = &cn->cfg;
	uint64_t nic = cfg->fab.host_rate_bps * cfg->fab.nplanes;
	uint32_t buf_cap;

	for (uint32_t i = 0; i < cfg->fab.nhosts; i++) {
		struct cnet_host *h = &cn->hosts[i];
		struct engine_config ec = cfg->engine;

		/* Distinct, seed-derived engine seeds: ports and keys differ per host. */
		ec.seed = rng_mix64(cfg->seed ^ rng_mix64(cfg->engine.seed + i + 1));
		/* The NIC is exactly its ports' sum, so it may judge spreading. */
		if (!ec.link_rate_bps) {
			ec.link_rate_bps = nic;
			ec.repath_spread = true;
		}
		h->idx = i;
		host_clock_draw(&h->clk, cfg->clock_skew_ns, cfg->clock_drift_ppm, cfg->seed, i);
		evq_event_init(&h->timer, EV_HOST_TIMER);
		evq_event_init(&h->nic_done, EV_NIC_DONE);
		h->eng = engine_create(&ec);
		if (!h->eng)
			return -EINVAL;
	}
	buf_cap = cfg->engine.mtu + MROC_DATA_OVERHEAD;
	if (buf_cap < MROC_HDR_LEN + MROC_ACK_HDR_LEN)
		buf_cap = MROC_HDR_LEN + MROC_ACK_HDR_LEN;
	cn->nic_rate = nic;
	return pktpool_init(&cn->pool, buf_cap, 4096);
}

struct cnet *cnet_create(const struct cnet_config *cfg)
{
	struct cnet *cn;
	int err;

	if (!cfg || engine_config_check(&cfg->engine, NULL)) {
		errno = EINVAL;
		return NULL;
	}
	cn = calloc(1, sizeof(*cn));
	if (!cn) {
		errno = ENOMEM;
		return NULL;
	}
	cn->cfg = *cfg;
	rng_seed(&cn->rng, cfg->seed);
	err = fab_init(&cn->fab, &cfg->fab, EV_LINK_TX, EV_LINK_PFC);
	if (err) {
		free(cn);
		errno = -err;
		return NULL;
	}
	cn->env = (struct link_env){ .q = &cn->q, .pool = &cn->pool, .rng = &cn->rng };
	cn->hosts = calloc(cfg->fab.nhosts, sizeof(*cn->hosts));
	err = -ENOMEM;
	if (!cn->hosts || evq_init(&cn->q, 4096))
		goto fail;
	err = hosts_create(cn);
	if (err)
		goto fail;
	return cn;
fail:
	cnet_destroy(cn);
	errno = -err;
	return NULL;
}

void cnet_destroy(struct cnet *cn)
{
	struct sim_event *ev;

	if (!cn)
		return;
	while (cn->q.heap && (ev = evq_pop(&cn->q)))
		if (ev->type == EV_PKT_ARRIVE)
			pktpool_put(&cn->pool, container_of(ev, struct sim_pkt, ev));
	while (cn->calls) {
		struct cnet_call *c = cn->calls;

		cn->calls = c->next;
		free(c);
	}
	fab_fini(&cn->fab, &cn->env);
	for (uint32_t i = 0; cn->hosts && i < cn->cfg.fab.nhosts; i++) {
		if (cn->hosts[i].nic_pkt)
			pktpool_put(&cn->pool, cn->hosts[i].nic_pkt);
		engine_destroy(cn->hosts[i].eng);
		free(cn->hosts[i].pins);
	}
	pktpool_fini(&cn->pool);
	evq_fini(&cn->q);
	free(cn->hosts);
	free(cn);
}

/* ---- accessors ------------------------------------------------------------------- */

uint64_t cnet_now(const struct cnet *cn)
{
	return cn->now;
}

uint32_t cnet_nhosts(const struct cnet *cn)
{
	return cn->cfg.fab.nhosts;
}

struct engine *cnet_engine(struct cnet *cn, uint32_t host)
{
	return host < cn->cfg.fab.nhosts ? cn->hosts[host].eng : NULL;
}

struct fabric *cnet_fabric(struct cnet *cn)
{
	return &cn->fab;
}

void cnet_set_cqe_cb(struct cnet *cn, cnet_cqe_fn fn, void *ctx)
{
	cn->cb = fn;
	cn->cb_ctx = ctx;
}

void cnet_set_bg_cqe_cb(struct cnet *cn, cnet_cqe_fn fn, void *ctx)
{
	cn->bg_cb = fn;
	cn->bg_ctx = ctx;
}

void cnet_kick(struct cnet *cn, uint32_t host)
{
	if (host < cn->cfg.fab.nhosts)
		host_drive(cn, &cn->hosts[host]);
}

int cnet_pin_qp(struct cnet *cn, uint32_t host, uint32_t qpn, uint32_t plane)
{
	struct cnet_host *h;
	struct cnet_pin *p;

	if (host >= cn->cfg.fab.nhosts || !qpn || plane >= cn->cfg.fab.nplanes)
		return -EINVAL;
	h = &cn->hosts[host];
	if (2 * (h->npins + 1) > h->pin_cap) {
		struct cnet_host old = *h;
		uint32_t cap = h->pin_cap ? 2 * h->pin_cap : 64;

		h->pins = calloc(cap, sizeof(*h->pins));
		if (!h->pins) {
			h->pins = old.pins;
			return -ENOMEM;
		}
		h->pin_cap = cap;
		for (uint32_t i = 0; i < old.pin_cap; i++)
			if (old.pins[i].qpn)
				*pin_slot(h, old.pins[i].qpn) = old.pins[i];
		free(old.pins);
	}
	p = pin_slot(h, qpn);
	if (!p->qpn)
		h->npins++;
	*p = (struct cnet_pin){ .qpn = qpn, .plane = (uint8_t)plane };
	return 0;
}

int cnet_post_send(struct cnet *cn, uint32_t host, uint32_t qpn, const struct engine_wr *wr)
{
	int err;

	if (host >= cn->cfg.fab.nhosts)
		return -EINVAL;
	err = engine_post_send(cn->hosts[host].eng, qpn, wr, host_now(cn, &cn->hosts[host]));
	host_drive(cn, &cn->hosts[host]);
	return err;
}

int cnet_post_recv(struct cnet *cn, uint32_t host, uint32_t qpn, const struct engine_recv_wr *wr)
{
	if (host >= cn->cfg.fab.nhosts)
		return -EINVAL;
	/* A RECV makes nothing to send: no need to drive the host. */
	return engine_post_recv(cn->hosts[host].eng, qpn, wr);
}

int cnet_qp_connect(struct cnet *cn, uint32_t host, uint32_t qpn, uint32_t peer,
		    uint64_t service_id)
{
	int err;

	if (host >= cn->cfg.fab.nhosts || peer >= cn->cfg.fab.nhosts)
		return -EINVAL;
	err = engine_qp_connect(cn->hosts[host].eng, qpn, peer, service_id,
				host_now(cn, &cn->hosts[host]));
	host_drive(cn, &cn->hosts[host]);
	return err;
}

/* ---- statistics ------------------------------------------------------------------ */

static void host_stats_add(struct cnet_host_stats *sum, const struct cnet_host_stats *s)
{
	sum->tx_pkts += s->tx_pkts;
	sum->tx_bytes += s->tx_bytes;
	sum->rx_pkts += s->rx_pkts;
	sum->rx_bytes += s->rx_bytes;
	sum->rx_rejected += s->rx_rejected;
	sum->tx_errors += s->tx_errors;
	sum->tx_bad_peer += s->tx_bad_peer;
	sum->timer_fires += s->timer_fires;
	sum->timer_spins += s->timer_spins;
	sum->nic_waits += s->nic_waits;
	sum->cqes += s->cqes;
}

void cnet_get_stats(const struct cnet *cn, struct cnet_stats *out)
{
	*out = (struct cnet_stats){
		.now = cn->now,
		.events = cn->events,
		.pool_pkts = cn->pool.total,
		.pkts_in_use = cn->pool.in_use,
	};
	for (uint32_t i = 0; i < cn->cfg.fab.nhosts; i++)
		host_stats_add(&out->hosts, &cn->hosts[i].st);
	fab_get_stats(&cn->fab, &out->fab);
}

uint64_t cnet_goodput_capacity(const struct cnet *cn, uint64_t rate_bps)
{
	uint64_t mtu = cn->cfg.engine.mtu;

	return (uint64_t)((unsigned __int128)rate_bps * mtu /
			  (mtu + MROC_DATA_OVERHEAD + cn->cfg.wire_overhead));
}
