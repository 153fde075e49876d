// SPDX-License-Identifier: MIT
/* The engine's configuration from mrocd's (config.h: config_engine, config_sec_overhead). */
#include "aead.h"
#include "config.h"
#include "engine.h"

#define NS_PER_US	1000ull
#define NS_PER_MS	1000000ull

int config_engine(const struct mrocd_config *c, struct engine_config *out)
{
	const typeof(c->transport) *t = &c->transport;

	engine_config_default(out);
	out->max_qps = c->limits.max_qps;
	out->max_mrs = c->limits.max_mrs;
	out->mtu = c->network.mtu;
	out->link_rate_bps = (uint64_t)t->link_rate_gbps * 1000000000ull;
	out->ack_every = t->ack_every;
	out->ack_delay_ns = t->ack_delay_us * NS_PER_US;
	out->rto_init_ns = t->rto_init_us * NS_PER_US;
	out->rto_min_ns = t->rto_min_us * NS_PER_US;
	out->rto_max_ns = t->rto_max_ms * NS_PER_MS;
	out->dupthresh = t->dupthresh;
	out->init_pwnd_pkts = t->init_pwnd_pkts;
	out->max_pwnd_pkts = t->max_pwnd_pkts;
	out->peer_window_pkts = t->peer_window_pkts;
	out->peer_host_delay_ns = (uint64_t)t->peer_host_delay_us * NS_PER_US;
	out->loss_md_pkts = t->loss_md_pkts;
	out->delay_target_ns = (uint64_t)t->delay_target_us * NS_PER_US;
	out->hint_interval_ns = t->hint_interval_us * NS_PER_US;
	out->max_retx = t->max_retx;
	out->rnr_retry = t->rnr_retry;
	out->rnr_delay_ns = t->rnr_delay_us * NS_PER_US;
	out->dead_peer_ns = t->dead_peer_ms * NS_PER_MS;
	out->keepalive_ns = t->keepalive_ms * NS_PER_MS;
	out->cm_retries = t->cm_retries;
	out->rate_hints = t->rate_hints;
	out->repath = t->repath;
	out->merge_acks = t->merge_acks;
	out->repath_spread = t->repath_spread;
	out->repath_round_rtts = t->repath_round_rtts;
	out->rack_reo_srtt = t->rack_reo_srtt;
	out->tail_hedge = t->tail_hedge;
	out->split_unit = t->split_unit;
	out->dup_max = t->dup_max;
	out->sport_min = c->network.sport_min;
	out->sport_max = c->network.sport_max;
	out->sec_mode = (uint8_t)c->security.mode;
	return engine_config_check(out, NULL);
}

uint32_t config_sec_overhead(const struct mrocd_config *c)
{
	switch (c->security.mode) {
	case MROC_SEC_TOKEN:
		return MROC_TAG_LEN;
	case MROC_SEC_AEAD:
		return AEAD_TRAILER_LEN;
	default:
		return 0;
	}
}
