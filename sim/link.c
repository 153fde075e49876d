// SPDX-License-Identifier: MIT
#include <stddef.h>

#include "link.h"

void sim_link_cfg_default(struct sim_link_cfg *cfg)
{
	*cfg = (struct sim_link_cfg){
		.rate_bps = 25000000000ULL,
		.delay_ns = 2000,
		.queue_bytes = 512 * 1024,
		.ecn_bytes = 64 * 1024,
		.loss = 0.0,
		.blackhole_start_ns = SIM_NEVER,
		.blackhole_end_ns = SIM_NEVER,
	};
}

void link_init(struct sim_link *l, const struct sim_link_cfg *cfg, uint32_t src, uint32_t dst,
	       uint8_t plane, uint8_t tx_ev_type)
{
	*l = (struct sim_link){ .cfg = *cfg, .src = src, .dst = dst, .plane = plane };
	evq_event_init(&l->tx_done, tx_ev_type);
}

static void link_start(struct sim_link *l, struct link_env *env, uint64_t now)
{
	uint64_t ns = sim_ser_ns(l->head->wire_len, l->cfg.rate_bps, &l->ser_rem);

	evq_push(env->q, &l->tx_done, now + ns);
}

void link_enqueue(struct sim_link *l, struct link_env *env, struct sim_pkt *pkt, uint64_t now)
{
	if (link_blackholed(l, now)) {
		l->st.dropped_blackhole++;
		link_trace(env, now, SIM_TR_DROP_BLACKHOLE, pkt);
		pktpool_put(env->pool, pkt);
		return;
	}
	if (l->cfg.queue_bytes && l->q_bytes + pkt->wire_len > l->cfg.queue_bytes) {
		l->st.dropped_tail++;
		link_trace(env, now, SIM_TR_DROP_TAIL, pkt);
		pktpool_put(env->pool, pkt);
		return;
	}
	/* Instantaneous-queue marking at arrival, as DCTCP-style switches do. */
	if (pkt->ect && l->cfg.ecn_bytes && l->q_bytes > l->cfg.ecn_bytes) {
		pkt->ce = true;
		l->st.marked_ce++;
	}
	pkt->link = l;
	pkt->next = NULL;
	if (l->tail)
		l->tail->next = pkt;
	else
		l->head = pkt;
	l->tail = pkt;
	/* The packet being serialised still counts: it holds its buffer. */
	l->q_bytes += pkt->wire_len;
	if (l->q_bytes > l->st.max_queue_bytes)
		l->st.max_queue_bytes = l->q_bytes;
	l->st.enqueued++;
	if (l->head == pkt)
		link_start(l, env, now);
}

void link_tx_done(struct sim_link *l, struct link_env *env, uint64_t now)
{
	struct sim_pkt *pkt = l->head;

	l->head = pkt->next;
	if (!l->head)
		l->tail = NULL;
	l->q_bytes -= pkt->wire_len;
	if (l->head)
		link_start(l, env, now);

	if (link_blackholed(l, now)) {
		l->st.dropped_blackhole++;
		link_trace(env, now, SIM_TR_DROP_BLACKHOLE, pkt);
		pktpool_put(env->pool, pkt);
	} else if (l->cfg.loss > 0 && rng_double(env->rng) < l->cfg.loss) {
		l->st.dropped_random++;
		link_trace(env, now, SIM_TR_DROP_RANDOM, pkt);
		pktpool_put(env->pool, pkt);
	} else {
		l->st.delivered++;
		l->st.delivered_bytes += pkt->wire_len;
		evq_push(env->q, &pkt->ev, now + l->cfg.delay_ns);
	}
}

void link_flush(struct sim_link *l, struct link_env *env)
{
	while (l->head) {
		struct sim_pkt *pkt = l->head;

		l->head = pkt->next;
		pktpool_put(env->pool, pkt);
	}
	l->tail = NULL;
	l->q_bytes = 0;
	evq_cancel(env->q, &l->tx_done);
}

void link_stats_add(struct sim_link_stats *sum, const struct sim_link_stats *s)
{
	sum->enqueued += s->enqueued;
	sum->dropped_tail += s->dropped_tail;
	sum->dropped_random += s->dropped_random;
	sum->dropped_blackhole += s->dropped_blackhole;
	sum->marked_ce += s->marked_ce;
	sum->delivered += s->delivered;
	sum->delivered_bytes += s->delivered_bytes;
	if (s->max_queue_bytes > sum->max_queue_bytes)
		sum->max_queue_bytes = s->max_queue_bytes;
}
