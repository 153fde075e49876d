// SPDX-License-Identifier: MIT
/* JSON views of the daemon's state (see status.h). */
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "status.h"

#define SET(o, k, v) json_object_set_new(o, k, json_integer((json_int_t)(v)))

json_t *status_engine_counters(const struct engine_stats *st)
{
	json_t *o = json_object(), *m = json_object();

	for (int i = 0; i < EC__COUNT; i++)
		SET(o, engine_counter_name((enum engine_counter)i), st->c[i]);
	for (int i = 1; i < WIRE_ERR__COUNT; i++)
		SET(m, wire_err_name((enum wire_err)i), st->rx_malformed[i]);
	json_object_set_new(o, "rx_malformed_by_reason", m);
	return o;
}

json_t *status_backend_counters(const struct backend_stats *st)
{
	json_t *o = json_object();

	SET(o, "rx_pkts", st->rx_pkts);
	SET(o, "rx_bytes", st->rx_bytes);
	SET(o, "tx_pkts", st->tx_pkts);
	SET(o, "tx_bytes", st->tx_bytes);
	SET(o, "rx_bad_frame", st->rx_bad_frame);
	SET(o, "rx_bad_icrc", st->rx_bad_icrc);
	SET(o, "rx_not_unicast", st->rx_not_unicast);
	SET(o, "tx_no_route", st->tx_no_route);
	SET(o, "tx_ring_full", st->tx_ring_full);
	SET(o, "tx_kick_errors", st->tx_kick_errors);
	SET(o, "xsk_rx_dropped", st->xsk_rx_dropped);
	SET(o, "xsk_rx_invalid_descs", st->xsk_rx_invalid_descs);
	SET(o, "xsk_tx_invalid_descs", st->xsk_tx_invalid_descs);
	SET(o, "xsk_rx_ring_full", st->xsk_rx_ring_full);
	SET(o, "xsk_rx_fill_ring_empty", st->xsk_rx_fill_ring_empty);
	SET(o, "xsk_tx_ring_empty", st->xsk_tx_ring_empty);
	SET(o, "handoff_rx_out", st->handoff_rx_out);
	SET(o, "handoff_rx_in", st->handoff_rx_in);
	SET(o, "handoff_tx_out", st->handoff_tx_out);
	SET(o, "handoff_tx_in", st->handoff_tx_in);
	SET(o, "handoff_full", st->handoff_full);
	SET(o, "handoff_tx_waited", st->handoff_tx_waited);
	SET(o, "handoff_return_full", st->handoff_return_full);
	SET(o, "handoff_tx_unpaid", st->handoff_tx_unpaid);
	SET(o, "handoff_repaid", st->handoff_repaid);
	SET(o, "handoff_owed", st->handoff_owed);
	SET(o, "fill_refills", st->fill_refills);
	SET(o, "rx_batches", st->rx_batches);
	SET(o, "tx_batches", st->tx_batches);
	SET(o, "loopback_pkts", st->loopback_pkts);
	SET(o, "loopback_handed", st->loopback_handed);
	SET(o, "loopback_drops", st->loopback_drops);
	SET(o, "rx_src_ours", st->rx_src_ours);
	SET(o, "port_dead", st->port_dead);
	SET(o, "ports_down", st->ports_down);
	return o;
}

json_t *status_worker(const struct worker_stats *st)
{
	json_t *o = json_object();

	SET(o, "loops", st->loops);
	SET(o, "sleeps", st->sleeps);
	SET(o, "wakeups_doorbell", st->wakeups_doorbell);
	SET(o, "calls", st->calls);
	SET(o, "idle_yields", st->idle_yields);
	SET(o, "rx_pkts", st->rx_pkts);
	SET(o, "rx_rejected", st->rx_rejected);
	SET(o, "rx_unknown_source", st->rx_unknown_source);
	SET(o, "rx_bad_source", st->rx_bad_source);
	SET(o, "tx_pkts", st->tx_pkts);
	SET(o, "busy_ns", st->busy_ns);
	SET(o, "idle_ns", st->idle_ns);
	SET(o, "spin_ns", st->spin_ns);
	SET(o, "cpu_ns", st->cpu_ns);
	SET(o, "runq_ns", st->runq_ns);
	SET(o, "minor_faults", st->minor_faults);
	SET(o, "major_faults", st->major_faults);
	SET(o, "aead_tx_sealed", st->aead.tx_sealed);
	SET(o, "aead_tx_failed", st->aead.tx_failed);
	SET(o, "aead_rx_opened", st->aead.rx_opened);
	SET(o, "aead_rx_bad_tag", st->aead.rx_bad_tag);
	SET(o, "aead_rx_bad_key", st->aead.rx_bad_key);
	SET(o, "aead_rx_short", st->aead.rx_short);
	SET(o, "aead_rx_plain", st->aead.rx_plain);
	SET(o, "aead_rx_stale", st->aead.rx_stale);
	SET(o, "aead_rx_derive_limited", st->aead.rx_derive_limited);
	SET(o, "aead_cookie_sent", st->aead.cookie_sent);
	SET(o, "aead_cookie_limited", st->aead.cookie_limited);
	SET(o, "aead_cookie_ok", st->aead.cookie_ok);
	SET(o, "aead_cookie_bad", st->aead.cookie_bad);
	SET(o, "aead_cookie_got", st->aead.cookie_got);
	return o;
}

json_t *status_link(const struct link_info *li, uint64_t now)
{
	static const char *const states[] = { "idle", "connecting", "up" };
	char a[MROC_ADDR_STRLEN];
	json_t *o = json_object();

	json_object_set_new(o, "peer", json_string(addr_str(&li->addr, a, sizeof(a))));
	json_object_set_new(o, "state", json_string(li->state < 3 ? states[li->state] : "?"));
	json_object_set_new(o, "outgoing", json_boolean(li->outgoing));
	SET(o, "qpn", li->qpn);
	SET(o, "connects", li->connects);
	SET(o, "failures", li->failures);
	SET(o, "up_since_ns", li->up_since_ns);
	SET(o, "up_for_ns", li->state == LINK_UP && now > li->up_since_ns ? now - li->up_since_ns : 0);
	return o;
}

json_t *status_qp(const struct engine_qp_info *qi)
{
	static const char *const states[] = {
		"idle", "listen", "connecting", "connected", "closing", "error",
	};
	json_t *o = json_object();

	SET(o, "qpn", qi->qpn);
	SET(o, "peer_handle", qi->peer);
	SET(o, "peer_qpn", qi->peer_qpn);
	json_object_set_new(o, "state", json_string(qi->state < 6 ? states[qi->state] : "?"));
	json_object_set_new(o, "mode", json_string(qi->mode == MROC_MODE_ROCEV2 ? "rocev2" :
						   "metaroce"));
	SET(o, "npaths", qi->npaths);
	SET(o, "qwnd_bytes", qi->qwnd_bytes);
	SET(o, "pacing_bps", qi->pacing_bps);
	SET(o, "rate_hint_mbps", qi->rate_hint_mbps);
	SET(o, "tx_bytes", qi->tx_bytes);
	SET(o, "rx_bytes", qi->rx_bytes);
	SET(o, "tx_msgs", qi->tx_msgs);
	SET(o, "rx_msgs", qi->rx_msgs);
	SET(o, "sq_outstanding", qi->sq_outstanding);
	SET(o, "rq_posted", qi->rq_posted);
	SET(o, "msgs_outstanding", qi->msgs_outstanding);
	SET(o, "snd_una", qi->snd_una);
	SET(o, "snd_nxt", qi->snd_nxt);
	SET(o, "rcv_cum", qi->rcv_cum);
	SET(o, "errors", qi->errors);
	SET(o, "mem_bytes", qi->mem_bytes);
	SET(o, "inflight_pkts", qi->inflight_pkts);
	SET(o, "peer_inflight_pkts", qi->peer_inflight_pkts);
	SET(o, "peer_window_pkts", qi->peer_window_pkts);
	json_object_set_new(o, "peer_blocked", json_boolean(qi->peer_blocked));
	if (qi->state == ENGINE_QPS_ERROR)
		json_object_set_new(o, "error", json_string(engine_qp_error_text(qi->err_status,
									       qi->err_why)));
	return o;
}

/* Every move of a path by its reason: {"timeout": N, "loss": N, ...} (engine_repath_name). */
static json_t *status_repaths_why(const struct engine_path_info *pi)
{
	json_t *why = json_object();

	for (unsigned i = ENGINE_REPATH_NONE + 1; i < ENGINE_REPATH__COUNT; i++)
		json_object_set_new(why, engine_repath_name(i),
				    json_integer((json_int_t)pi->repaths_why[i]));
	return why;
}

json_t *status_path(const struct engine_path_info *pi, uint64_t now)
{
	json_t *o = json_object();

	SET(o, "path_id", pi->path_id);
	SET(o, "sport", pi->sport);
	json_object_set_new(o, "state", json_string(pi->timed_out ? "timed_out" : "active"));
	SET(o, "srtt_ns", pi->srtt_ns);
	SET(o, "min_rtt_ns", pi->min_rtt_ns);
	SET(o, "rttvar_ns", pi->rttvar_ns);
	SET(o, "rto_ns", pi->rto_ns);
	SET(o, "rto_timer_ns", pi->rto_timer_ns);
	SET(o, "pwnd_bytes", pi->pwnd_bytes);
	SET(o, "inflight_bytes", pi->inflight_bytes);
	SET(o, "rate_bps", pi->rate_bps);
	SET(o, "sent", pi->sent);
	SET(o, "retx", pi->retx);
	SET(o, "lost", pi->lost);
	SET(o, "ce", pi->ce);
	SET(o, "acked", pi->acked);
	SET(o, "timeouts", pi->timeouts);
	SET(o, "repaths", pi->repaths);
	/* How it last moved: why, from which source port, how long ago. */
	json_object_set_new(o, "moved", json_string(engine_repath_name(pi->repath_why)));
	if (pi->repath_why != ENGINE_REPATH_NONE) {
		SET(o, "prev_sport", pi->prev_sport);
		SET(o, "moved_ago_ns", now > pi->repath_at_ns ? now - pi->repath_at_ns : 0);
	}
	json_object_set_new(o, "repaths_why", status_repaths_why(pi));
	SET(o, "backoff", pi->backoff);
	SET(o, "dctcp_alpha_ppm", pi->dctcp_alpha_ppm);
	SET(o, "delay_cuts", pi->delay_cuts);
	SET(o, "delay_rebases", pi->delay_rebases);
	SET(o, "loss_cuts", pi->loss_cuts);
	SET(o, "loss_trims", pi->loss_trims);
	return o;
}

const char *status_path_health(const struct engine_path_info *pi, const char *port,
			       const char (*down)[16], unsigned ndown, char *why, size_t len)
{
	for (unsigned i = 0; port && *port && i < ndown; i++) {
		if (strncmp(port, down[i], 16))
			continue;
		snprintf(why, len, "port %s is counted down for this peer (nothing came back "
			 "through it): nothing is sent on it", port);
		return "denied";
	}
	if (pi->timed_out) {
		snprintf(why, len, "timed out (%llu timeouts, backoff %u): probes only, until an "
			 "ACK revives it", (unsigned long long)pi->timeouts, pi->backoff);
		return "assumed_bad";
	}
	if (pi->backoff) {
		snprintf(why, len, "%u retransmission timeouts without progress", pi->backoff);
		return "assumed_bad";
	}
	/*
	 * A move taken back leaves prev_sport 0 (a trial that did not pay, a
	 * timeout's move undone) or the port it is on again (an RTO undone).
	 */
	if (pi->repath_why != ENGINE_REPATH_NONE && (!pi->prev_sport || pi->prev_sport == pi->sport))
		snprintf(why, len, "moved (%s), then back to source port %u",
			 engine_repath_name(pi->repath_why), pi->sport);
	else if (pi->repath_why != ENGINE_REPATH_NONE)
		snprintf(why, len, "moved from source port %u (%s)", pi->prev_sport,
			 engine_repath_name(pi->repath_why));
	else if (len)
		why[0] = 0;
	return "good";
}

void status_path_set_health(json_t *o, const struct engine_path_info *pi, const char *port,
			    const char (*down)[16], unsigned ndown)
{
	char why[160];
	const char *h = status_path_health(pi, port, down, ndown, why, sizeof(why));

	json_object_set_new(o, "health", json_string(h));
	json_object_set_new(o, "why", json_string(why));
}

void status_subtract(json_t *o, const json_t *base, const char *const *keep)
{
	const char *key;
	json_t *v;

	json_object_foreach(o, key, v) {
		const json_t *b = json_object_get(base, key);
		const char *const *k;

		if (!b)
			continue;
		/* keep names gauges (values), not groups: the group "clients" holds counters. */
		if (json_is_object(v)) {
			status_subtract(v, b, keep);
			continue;
		}
		for (k = keep; k && *k && strcmp(*k, key); k++)
			;
		if (k && *k)
			continue;
		if (json_is_integer(v) && json_is_integer(b)) {
			json_int_t x = json_integer_value(v), y = json_integer_value(b);

			json_integer_set(v, x > y ? x - y : 0);
		}
	}
}
