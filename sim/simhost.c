// SPDX-License-Identifier: MIT
/* The simulated networks' event loop, host clocks and host driver (see simhost.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "link.h"
#include "rng.h"
#include "simhost.h"

#define CQ_BATCH	32

/* ---- the event loop ------------------------------------------------------------ */

int simloop_schedule(struct simloop *l, uint64_t at, void (*fn)(void), void *ctx)
{
	struct simloop_call *c;
	int err;

	if (!fn || at < l->now)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	evq_event_init(&c->ev, SIMLOOP_EV_CALL);
	c->fn = fn;
	c->ctx = ctx;
	err = evq_push(&l->q, &c->ev, at);
	if (err) {
		free(c);
		return err;
	}
	c->next = l->calls;
	if (c->next)
		c->next->prev = c;
	l->calls = c;
	return 0;
}

struct simloop_call *simloop_call_take(struct simloop *l, struct sim_event *ev)
{
	struct simloop_call *c = container_of(ev, struct simloop_call, ev);

	if (c->prev)
		c->prev->next = c->next;
	else
		l->calls = c->next;
	if (c->next)
		c->next->prev = c->prev;
	return c;
}

int simloop_next(struct simloop *l, uint64_t time_limit, struct sim_event **out)
{
	struct sim_event *ev = evq_peek(&l->q);

	if (!ev)
		return -EDEADLK;
	if (ev->time > time_limit) {
		if (l->now < time_limit)
			l->now = time_limit;
		return -ETIMEDOUT;
	}
	evq_pop(&l->q);
	l->now = ev->time;
	l->events++;
	*out = ev;
	return 0;
}

void simloop_drain(struct simloop *l, struct pktpool *pool)
{
	struct sim_event *ev;

	while (l->q.heap && (ev = evq_pop(&l->q)))
		if (ev->type == SIMLOOP_EV_PKT_ARRIVE)
			pktpool_put(pool, container_of(ev, struct sim_pkt, ev));
	while (l->calls) {
		struct simloop_call *c = l->calls;

		l->calls = c->next;
		free(c);
	}
}

/* ---- a host's own clock ---------------------------------------------------------- */

void host_clock_draw(struct host_clock *c, uint64_t skew_ns, uint32_t ppm, uint64_t seed,
		     uint32_t i)
{
	uint64_t x = rng_mix64(seed ^ rng_mix64(0xc10c4ULL + i));

	c->offset = skew_ns ? x % skew_ns : 0;
	c->ppm = ppm ? (int32_t)(rng_mix64(x) % (2 * (uint64_t)ppm + 1)) - (int32_t)ppm : 0;
}

static __int128 local_of(const struct host_clock *c, __int128 now)
{
	return now + now * c->ppm / 1000000 + (__int128)c->offset;
}

uint64_t host_clock_local(const struct host_clock *c, uint64_t now)
{
	return (uint64_t)local_of(c, now);
}

uint64_t host_clock_sim(const struct host_clock *c, uint64_t t)
{
	__int128 x;

	if (t == UINT64_MAX || (!c->offset && !c->ppm))
		return t;
	x = ((__int128)t - (__int128)c->offset) * 1000000 / (1000000 + c->ppm);
	if (x < 0)
		return 0;
	while (local_of(c, x) < (__int128)t)
		x++;
	while (x > 0 && local_of(c, x - 1) >= (__int128)t)
		x--;
	return (uint64_t)x;
}

/* ---- the hosts ----------------------------------------------------------------- */

void simhost_stats_add(struct simhost_stats *sum, const struct simhost_stats *s)
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
	sum->tx_dropped += s->tx_dropped;
	sum->nic_waits += s->nic_waits;
	sum->cqes += s->cqes;
}

void simhost_engine_config(struct engine_config *ec, const struct engine_config *base,
			   uint64_t seed, uint32_t i, uint64_t nic_rate)
{
	*ec = *base;
	ec->seed = rng_mix64(seed ^ rng_mix64(base->seed + i + 1));
	if (!ec->link_rate_bps) {
		ec->link_rate_bps = nic_rate;
		ec->repath_spread = true;
	}
}

void simhost_init(struct simhost *h, uint32_t idx, struct engine *eng, uint64_t nic_rate,
		  const struct host_clock *clk)
{
	h->idx = idx;
	h->eng = eng;
	h->nic_rate = nic_rate;
	h->clk = *clk;
	evq_event_init(&h->timer, SIMLOOP_EV_HOST_TIMER);
	evq_event_init(&h->nic_done, SIMLOOP_EV_NIC_DONE);
}

void simhost_fini(struct simhost *h, struct pktpool *pool)
{
	if (h->nic_pkt)
		pktpool_put(pool, h->nic_pkt);
	h->nic_pkt = NULL;
	if (h->eng)
		engine_destroy(h->eng);
	h->eng = NULL;
}

/*
 * When to fire the host's timer, in its clock: UINT64_MAX for never (cancel
 * it), also when the deadline is due and the NIC is busy (its done event
 * drives the host anyway).  Due now with the NIC idle: now, so that it runs
 * after this instant's other events; after HOST_SPIN_LIMIT of those, 1 ns
 * later, counted in *spins.
 */
static uint64_t timer_at(struct engine *eng, uint64_t now, bool nic_busy, struct host_spin *sp,
			 uint64_t *spins)
{
	uint64_t d = engine_next_deadline(eng);

	if (d == UINT64_MAX || d > now)
		return d;
	if (nic_busy)
		return UINT64_MAX;
	if (sp->at != now) {
		sp->at = now;
		sp->n = 0;
	}
	if (++sp->n > HOST_SPIN_LIMIT) {
		(*spins)++;
		sp->n = 0;
		return now + 1;
	}
	return now;
}

/* Keep exactly one timer event, at the engine's deadline (in simulation time). */
static void arm_timer(struct simhost *h, const struct simhost_env *env)
{
	struct simloop *l = env->loop;
	uint64_t local = simhost_now(h, l);
	uint64_t d = timer_at(h->eng, local, h->nic_pkt != NULL, &h->spin, &h->st.timer_spins);

	if (d != UINT64_MAX) {
		/* Back to simulation time; a deadline past now stays past now. */
		uint64_t sim_d = host_clock_sim(&h->clk, d);

		d = d > local && sim_d <= l->now ? l->now + 1 : sim_d < l->now ? l->now : sim_d;
	}
	if (d == UINT64_MAX)
		evq_cancel(&l->q, &h->timer);
	else if (!evq_queued(&h->timer) || h->timer.time != d)
		evq_push(&l->q, &h->timer, d);
}

static void poll_cq(struct simhost *h, const struct simhost_env *env)
{
	struct engine_cqe cqe[CQ_BATCH];
	int n;

	do {
		n = engine_poll_cq(h->eng, cqe, CQ_BATCH);
		for (int i = 0; i < n; i++) {
			h->st.cqes++;
			env->cqe(env->net, h, &cqe[i]);
		}
	} while (n == CQ_BATCH);
}

/* The NIC is free: take one packet from the engine, at the NIC's rate. */
static void nic_pull(struct simhost *h, const struct simhost_env *env)
{
	struct pktpool *pool = env->pool;
	struct sim_pkt *pkt = pktpool_get(pool, SIMLOOP_EV_PKT_ARRIVE);
	uint64_t now = env->loop->now;
	struct engine_txbuf tb;
	int n;

	if (!pkt)
		return;
	tb = (struct engine_txbuf){ .data = pkt->data, .cap = pool->buf_cap };
	n = engine_tx(h->eng, simhost_now(h, env->loop), &tb, 1);
	if (n != 1 || tb.len > pool->buf_cap) {
		if (n < 0 || tb.len > pool->buf_cap)
			h->st.tx_errors++;
		pktpool_put(pool, pkt);
		return;
	}
	pkt->len = tb.len;
	pkt->wire_len = tb.len + env->wire_overhead;
	pkt->src = h->idx;
	pkt->dst = tb.peer;
	pkt->sport = tb.sport;
	pkt->path_id = tb.path_id;
	pkt->ect = tb.ect;
	h->st.tx_pkts++;
	h->st.tx_bytes += tb.len;
	h->nic_pkt = pkt;
	evq_push(&env->loop->q, &h->nic_done,
		 now + sim_ser_ns(pkt->wire_len, h->nic_rate, &h->nic_rem));
}

static void check_engine(struct simhost *h, const struct simloop *l)
{
	char why[256];

	if (!h->eng || ++h->drives % SIMHOST_CHECK_EVERY || !engine_check(h->eng, why, sizeof(why)))
		return;
	fprintf(stderr, "host %u at %llu ns: engine check failed: %s\n", h->idx,
		(unsigned long long)l->now, why);
	abort();
}

/*
 * The worker is off its CPU (simhost_env.held_until): nothing runs until
 * then, when the timer event drives the host (or the first of the packets
 * the network held for that instant does, as at any poll).
 */
static bool held(struct simhost *h, const struct simhost_env *env)
{
	uint64_t until = env->held_until ? env->held_until(env->net, h, env->loop->now) : 0;

	if (until <= env->loop->now)
		return false;
	if (!evq_queued(&h->timer) || h->timer.time != until)
		evq_push(&env->loop->q, &h->timer, until);
	return true;
}

void simhost_drive(struct simhost *h, const struct simhost_env *env)
{
	if (h->in_drive) {
		h->dirty = true;
		return;
	}
	if (held(h, env))
		return;
	h->in_drive = true;
	do {
		uint64_t now = simhost_now(h, env->loop);

		h->dirty = false;
		if (engine_next_deadline(h->eng) <= now)
			engine_advance(h->eng, now);
		poll_cq(h, env);
		if (!h->nic_pkt) {
			nic_pull(h, env);
			poll_cq(h, env);
		}
	} while (h->dirty);
	arm_timer(h, env);
	h->in_drive = false;
	check_engine(h, env->loop);
}

void simhost_timer(struct simhost *h, const struct simhost_env *env)
{
	h->st.timer_fires++;
	simhost_drive(h, env);
}

void simhost_rx(struct simhost *h, const struct simhost_env *env, struct sim_pkt *pkt)
{
	struct engine_rx_meta meta = { .peer = pkt->src, .sport = pkt->sport, .ce = pkt->ce };

	if (pkt->stamp_at)
		meta.arrival = host_clock_local(&h->clk, pkt->stamp_at);

	h->st.rx_pkts++;
	h->st.rx_bytes += pkt->len;
	if (engine_rx(h->eng, simhost_now(h, env->loop), pkt->data, pkt->len, &meta) < 0)
		h->st.rx_rejected++;
	pktpool_put(env->pool, pkt);
	simhost_drive(h, env);
}

int simhost_post_send(struct simhost *h, const struct simhost_env *env, uint32_t qpn,
		      const struct engine_wr *wr)
{
	int err = engine_post_send(h->eng, qpn, wr, simhost_now(h, env->loop));

	simhost_drive(h, env);
	return err;
}

int simhost_qp_connect(struct simhost *h, const struct simhost_env *env, uint32_t qpn,
		       uint32_t peer, uint64_t service_id)
{
	int err = engine_qp_connect(h->eng, qpn, peer, service_id, simhost_now(h, env->loop));

	simhost_drive(h, env);
	return err;
}
