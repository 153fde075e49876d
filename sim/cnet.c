// SPDX-License-Identifier: MIT
/*
 * cnet core: the hosts (driven by simhost.c: engine, NIC, timer, clock),
 * what their NIC does with a packet (its plane's port, PFC's hold, pinned
 * QPs), the hand-over of packets between the hosts and the fabric, and the
 * events the fabric adds to the loop.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "cnet.h"
#include "rng.h"
#include "simhost.h"
#include "wire.h"

/* Events of ours beside the loop's and the hosts' (simhost.h). */
enum cnet_ev_type {
	EV_LINK_TX = SIMLOOP_EV_NET,	/* a switch port has serialised a packet */
	EV_LINK_PFC,		/* a PAUSE or RESUME reaches a link's transmitter */
};

/* A host: the driver (simhost.h: engine, NIC, timer) and its QPs' planes. */
struct cnet_host {
	struct simhost d;		/* d.nic_pkt: being taken in, NULL when the NIC is free */
	struct sim_link *nic_wait;	/* PFC: nic_pkt waits for room on this port */
	struct cnet_pin *pins;		/* QPN -> plane, open addressing; NULL = none */
	uint32_t pin_cap, npins;
};

struct cnet_pin {
	uint32_t qpn;			/* 0 = free slot (no QP has QPN 0) */
	uint8_t plane;
};

struct cnet {
	struct cnet_config cfg;
	struct simloop loop;
	struct simhost_env henv;	/* what the hosts' driver needs of us */
	uint64_t nic_rate;		/* the sum of the host's ports */
	struct rng rng;
	struct pktpool pool;
	struct link_env env;
	struct fabric fab;
	struct cnet_host *hosts;
	cnet_cqe_fn cb;
	void *cb_ctx;
	cnet_cqe_fn bg_cb;
	void *bg_ctx;
};

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
	cfg->engine.dup_max = 4096;
}

/* ---- hosts ------------------------------------------------------------------- */

static void host_cqe(void *net, struct simhost *h, const struct engine_cqe *cqe)
{
	struct cnet *cn = net;

	if (cqe->wr_id & CNET_WR_BACKGROUND) {
		if (cn->bg_cb)
			cn->bg_cb(cn, h->idx, cqe, cn->bg_ctx);
	} else if (cn->cb) {
		cn->cb(cn, h->idx, cqe, cn->cb_ctx);
	}
}

static void host_drive(struct cnet *cn, struct cnet_host *h)
{
	simhost_drive(&h->d, &cn->henv);
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
	struct sim_pkt *pkt = h->d.nic_pkt;
	struct sim_link *port;

	if (pkt->dst >= cn->cfg.fab.nhosts || pkt->dst == pkt->src) {
		h->d.nic_pkt = NULL;
		h->d.st.tx_bad_peer++;
		pktpool_put(&cn->pool, pkt);
		return;
	}
	port = h->nic_wait ? h->nic_wait : fab_first_hop(&cn->fab, pkt, pkt_pin(h, pkt));
	if (cn->cfg.fab.pfc && port->cfg.queue_bytes &&
	    port->q_bytes + pkt->wire_len > port->cfg.queue_bytes) {
		if (!h->nic_wait)
			h->d.st.nic_waits++;
		h->nic_wait = port;
		return;
	}
	h->nic_wait = NULL;
	h->d.nic_pkt = NULL;
	link_trace(&cn->env, cn->loop.now, SIM_TR_SEND, pkt);
	link_enqueue(port, &cn->env, pkt, cn->loop.now);
}

static void pkt_arrive(struct cnet *cn, struct sim_pkt *pkt)
{
	struct sim_link *next = fab_next_hop(&cn->fab, pkt, cn->loop.now);

	if (next) {
		link_enqueue(next, &cn->env, pkt, cn->loop.now);
		return;
	}
	link_trace(&cn->env, cn->loop.now, SIM_TR_DELIVER, pkt);
	simhost_rx(&cn->hosts[pkt->dst].d, &cn->henv, pkt);
}

/* ---- event loop ---------------------------------------------------------------- */

static void dispatch(struct cnet *cn, struct sim_event *ev)
{
	struct cnet_host *h;
	struct simloop_call *c;

	switch (ev->type) {
	case SIMLOOP_EV_HOST_TIMER:
		simhost_timer(container_of(ev, struct simhost, timer), &cn->henv);
		break;
	case SIMLOOP_EV_NIC_DONE:
		h = container_of(ev, struct cnet_host, d.nic_done);
		host_nic_done(cn, h);
		host_drive(cn, h);
		break;
	case EV_LINK_TX: {
		struct sim_link *l = container_of(ev, struct sim_link, tx_done);

		link_tx_done(l, &cn->env, cn->loop.now);
		/* A NIC port made room: a NIC held by PFC may go on. */
		if (fab_kind(&cn->fab, l) == FAB_UP && cn->hosts[l->src].nic_wait == l) {
			h = &cn->hosts[l->src];
			host_nic_done(cn, h);
			host_drive(cn, h);
		}
		break;
	}
	case EV_LINK_PFC:
		link_pfc_arrive(container_of(ev, struct sim_link, pfc.ev), &cn->env, cn->loop.now);
		break;
	case SIMLOOP_EV_PKT_ARRIVE:
		pkt_arrive(cn, container_of(ev, struct sim_pkt, ev));
		break;
	case SIMLOOP_EV_CALL:
		c = simloop_call_take(&cn->loop, ev);
		((cnet_call_fn)c->fn)(cn, c->ctx);
		free(c);
		break;
	}
}

int cnet_run_while(struct cnet *cn, cnet_pred_fn pred, void *ctx, uint64_t time_limit)
{
	while (pred(cn, ctx)) {
		struct sim_event *ev;
		int err = simloop_next(&cn->loop, time_limit, &ev);

		if (err)
			return err;
		dispatch(cn, ev);
	}
	return 0;
}

void cnet_set_trace(struct cnet *cn, sim_trace_fn fn, void *ctx)
{
	cn->env.trace = fn;
	cn->env.trace_ctx = ctx;
}

void cnet_trace_waits(struct cnet *cn, bool on)
{
	cn->env.trace_waits = on;
}

int cnet_schedule(struct cnet *cn, uint64_t at, cnet_call_fn fn, void *ctx)
{
	return simloop_schedule(&cn->loop, at, (void (*)(void))fn, ctx);
}

/* ---- creation ---------------------------------------------------------------- */

static int hosts_create(struct cnet *cn)
{
	const struct cnet_config *cfg = &cn->cfg;
	uint64_t nic = cfg->fab.host_rate_bps * cfg->fab.nplanes;
	uint32_t buf_cap;

	for (uint32_t i = 0; i < cfg->fab.nhosts; i++) {
		struct cnet_host *h = &cn->hosts[i];
		struct engine_config ec;
		struct host_clock clk;

		simhost_engine_config(&ec, &cfg->engine, cfg->seed, i, nic);
		host_clock_draw(&clk, cfg->clock_skew_ns, cfg->clock_drift_ppm, cfg->seed, i);
		simhost_init(&h->d, i, engine_create(&ec), nic, &clk);
		if (!h->d.eng)
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
	rng_seed(&cn->rng, cfg->loss_seed ? cfg->loss_seed : cfg->seed);
	err = fab_init(&cn->fab, &cfg->fab, EV_LINK_TX, EV_LINK_PFC);
	if (err) {
		free(cn);
		errno = -err;
		return NULL;
	}
	cn->env = (struct link_env){ .q = &cn->loop.q, .pool = &cn->pool, .rng = &cn->rng };
	cn->henv = (struct simhost_env){ .loop = &cn->loop, .pool = &cn->pool,
					 .wire_overhead = cfg->wire_overhead, .cqe = host_cqe,
					 .net = cn };
	cn->hosts = calloc(cfg->fab.nhosts, sizeof(*cn->hosts));
	err = -ENOMEM;
	if (!cn->hosts || evq_init(&cn->loop.q, 4096))
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
	if (!cn)
		return;
	simloop_drain(&cn->loop, &cn->pool);
	fab_fini(&cn->fab, &cn->env);
	for (uint32_t i = 0; cn->hosts && i < cn->cfg.fab.nhosts; i++) {
		simhost_fini(&cn->hosts[i].d, &cn->pool);
		free(cn->hosts[i].pins);
	}
	pktpool_fini(&cn->pool);
	evq_fini(&cn->loop.q);
	free(cn->hosts);
	free(cn);
}

/* ---- accessors ------------------------------------------------------------------- */

uint64_t cnet_now(const struct cnet *cn)
{
	return cn->loop.now;
}

uint32_t cnet_nhosts(const struct cnet *cn)
{
	return cn->cfg.fab.nhosts;
}

struct engine *cnet_engine(struct cnet *cn, uint32_t host)
{
	return host < cn->cfg.fab.nhosts ? cn->hosts[host].d.eng : NULL;
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
	if (host >= cn->cfg.fab.nhosts)
		return -EINVAL;
	return simhost_post_send(&cn->hosts[host].d, &cn->henv, qpn, wr);
}

int cnet_post_recv(struct cnet *cn, uint32_t host, uint32_t qpn, const struct engine_recv_wr *wr)
{
	if (host >= cn->cfg.fab.nhosts)
		return -EINVAL;
	/* A RECV makes nothing to send: no need to drive the host. */
	return engine_post_recv(cn->hosts[host].d.eng, qpn, wr);
}

int cnet_qp_connect(struct cnet *cn, uint32_t host, uint32_t qpn, uint32_t peer,
		    uint64_t service_id)
{
	if (host >= cn->cfg.fab.nhosts || peer >= cn->cfg.fab.nhosts)
		return -EINVAL;
	return simhost_qp_connect(&cn->hosts[host].d, &cn->henv, qpn, peer, service_id);
}

/* ---- statistics ------------------------------------------------------------------ */

void cnet_get_stats(const struct cnet *cn, struct cnet_stats *out)
{
	*out = (struct cnet_stats){
		.now = cn->loop.now,
		.events = cn->loop.events,
		.pool_pkts = cn->pool.total,
		.pkts_in_use = cn->pool.in_use,
	};
	for (uint32_t i = 0; i < cn->cfg.fab.nhosts; i++)
		simhost_stats_add(&out->hosts, &cn->hosts[i].d.st);
	fab_get_stats(&cn->fab, &out->fab);
}

uint64_t cnet_goodput_capacity(const struct cnet *cn, uint64_t rate_bps)
{
	return simhost_goodput_capacity(rate_bps, cn->cfg.engine.mtu, cn->cfg.wire_overhead);
}
