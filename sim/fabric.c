// SPDX-License-Identifier: MIT
/* Leaf/spine planes: building the links, ECMP routing, failures, statistics. */
#include <errno.h>
#include <stdlib.h>

#include "fabric.h"
#include "rng.h"

#define UDP_DPORT	4793	/* the fifth field of the tuple: the same for every packet */
#define JUMBO_FRAME	9216	/* the largest frame a PFC headroom must take */

void fab_config_default(struct fab_config *cfg)
{
	*cfg = (struct fab_config){
		.nhosts = 64,
		.nplanes = 4,
		.leaves = 8,
		.spines = 8,
		.host_rate_bps = 25000000000ULL,
		.delay_ns = 1000,
		.queue_bytes = 512 * 1024,
		.ecn_bytes = 64 * 1024,
		.plane_select = FAB_PLANE_PATH_ID,
		.converge_ns = 10000000,
		.pfc_xoff_bytes = 128 * 1024,
		.pfc_xon_bytes = 128 * 1024 - 2 * JUMBO_FRAME,
		.seed = 1,
	};
}

static void port_cfg(const struct fab_config *c, uint64_t rate, double loss,
		     struct sim_link_cfg *out)
{
	sim_link_cfg_default(out);
	out->rate_bps = rate;
	out->delay_ns = c->delay_ns;
	out->queue_bytes = c->queue_bytes;
	out->ecn_bytes = c->ecn_bytes;
	out->loss = loss;
	if (c->pfc) {
		out->pfc_xoff_bytes = c->pfc_xoff_bytes;
		out->pfc_xon_bytes = c->pfc_xon_bytes;
		out->pfc_headroom_bytes = c->pfc_headroom_bytes ? c->pfc_headroom_bytes :
			2 * c->delay_ns * rate / 8000000000ULL + 3 * JUMBO_FRAME;
	}
}

int fab_config_check(const struct fab_config *c, const char **why)
{
	const char *dummy;

	if (!why)
		why = &dummy;
#define BAD(msg) do { *why = msg; return -EINVAL; } while (0)
	if (c->nhosts < 2)
		BAD("hosts must be at least 2");
	if (!c->nplanes || c->nplanes > FAB_MAX_PLANES)
		BAD("planes must be 1..8");
	if (!c->leaves || c->leaves > c->nhosts)
		BAD("leaves must be 1..hosts (a leaf without hosts)");
	if (!c->spines || c->spines > FAB_MAX_SPINES)
		BAD("spines must be 1..64");
	if (!c->host_rate_bps)
		BAD("the host port rate must be > 0");
	if (c->loss < 0 || c->loss > 1 || c->core_loss < 0 || c->core_loss > 1)
		BAD("loss must be 0..1");
	if (c->dup < 0 || c->dup > 1)
		BAD("duplicates must be 0..1");
	if (c->plane_select > FAB_PLANE_HASH)
		BAD("unknown plane selection");
	if (c->pfc && (!c->pfc_xoff_bytes || c->pfc_xon_bytes >= c->pfc_xoff_bytes))
		BAD("PFC needs 0 < XON < XOFF");
	return 0;
#undef BAD
}

int fab_init(struct fabric *f, const struct fab_config *cfg, uint8_t link_ev, uint8_t pfc_ev)
{
	const struct fab_config *c = cfg;
	struct sim_link_cfg host, down, core;
	uint64_t core_rate;
	size_t hp, lsn;

	*f = (struct fabric){ .cfg = *cfg };
	if (fab_config_check(c, NULL))
		return -EINVAL;
	f->per_leaf = (c->nhosts + c->leaves - 1) / c->leaves;
	hp = (size_t)c->nhosts * c->nplanes;
	lsn = (size_t)c->nplanes * c->leaves * c->spines;
	f->base[FAB_UP] = 0;
	f->base[FAB_DOWN] = hp;
	f->base[FAB_LS] = 2 * hp;
	f->base[FAB_SL] = 2 * hp + lsn;
	f->nlinks = 2 * hp + 2 * lsn;
	f->links = calloc(f->nlinks, sizeof(*f->links));
	f->dead_since = malloc(f->nlinks * sizeof(*f->dead_since));
	if (!f->links || !f->dead_since) {
		free(f->links);
		free(f->dead_since);
		return -ENOMEM;
	}
	core_rate = c->core_rate_bps ? c->core_rate_bps :
		    c->host_rate_bps * f->per_leaf / c->spines;
	port_cfg(c, c->host_rate_bps, c->loss, &host);
	host.jitter_ns = c->jitter_ns;
	host.dup = c->dup;
	port_cfg(c, c->host_rate_bps, 0, &down);
	down.pfc_xoff_bytes = 0;	/* its far end is a host */
	port_cfg(c, core_rate, c->core_loss, &core);
	for (size_t i = 0; i < f->nlinks; i++)
		f->dead_since[i] = SIM_NEVER;
	for (uint32_t h = 0; h < c->nhosts; h++)
		for (uint32_t p = 0; p < c->nplanes; p++) {
			/* Loss on the uplink only: once per packet, whatever its route. */
			link_init(fab_up(f, h, p), &host, h, fab_leaf_of(f, h), (uint8_t)p, link_ev);
			link_init(fab_down(f, h, p), &down, fab_leaf_of(f, h), h, (uint8_t)p,
				  link_ev);
		}
	for (uint32_t p = 0; p < c->nplanes; p++)
		for (uint32_t l = 0; l < c->leaves; l++)
			for (uint32_t s = 0; s < c->spines; s++) {
				link_init(fab_ls(f, p, l, s), &core, l, s, (uint8_t)p, link_ev);
				link_init(fab_sl(f, p, s, l), &core, s, l, (uint8_t)p, link_ev);
			}
	for (size_t i = 0; i < f->nlinks; i++)
		link_pfc_init(&f->links[i], pfc_ev);
	return 0;
}

void fab_fini(struct fabric *f, struct link_env *env)
{
	for (size_t i = 0; f->links && i < f->nlinks; i++)
		link_flush(&f->links[i], env);
	free(f->links);
	free(f->dead_since);
	f->links = NULL;
	f->dead_since = NULL;
}

enum fab_link_kind fab_kind(const struct fabric *f, const struct sim_link *l)
{
	size_t i = (size_t)(l - f->links);

	if (i >= f->base[FAB_SL])
		return FAB_SL;
	if (i >= f->base[FAB_LS])
		return FAB_LS;
	return i >= f->base[FAB_DOWN] ? FAB_DOWN : FAB_UP;
}

/*
 * The 5-tuple hash.  salt differs per switch (and for the host's port
 * choice), as real switches seed their hash per device; one salt everywhere
 * would correlate the choices of consecutive hops.
 */
static uint64_t tuple_hash(const struct fabric *f, const struct sim_pkt *pkt, uint64_t salt)
{
	uint64_t k = (uint64_t)pkt->src << 32 | pkt->dst;

	k = rng_mix64(k ^ rng_mix64(f->cfg.seed + salt));
	return rng_mix64(k ^ ((uint64_t)pkt->sport << 16 | UDP_DPORT));
}

struct sim_link *fab_first_hop(const struct fabric *f, struct sim_pkt *pkt, int pin)
{
	uint32_t plane;

	if (pin >= 0)
		plane = (uint32_t)pin % f->cfg.nplanes;
	else if (f->cfg.plane_select == FAB_PLANE_PATH_ID)
		plane = pkt->path_id % f->cfg.nplanes;
	else
		plane = (uint32_t)(tuple_hash(f, pkt, 0x6e6963 /* "nic" */) % f->cfg.nplanes);
	pkt->plane = (uint8_t)plane;
	return fab_up(f, pkt->src, plane);
}

static bool withdrawn(const struct fabric *f, const struct sim_link *l, uint64_t now)
{
	uint64_t t = f->dead_since[l - f->links];

	return t != SIM_NEVER && f->cfg.converge_ns != SIM_NEVER && now >= t + f->cfg.converge_ns;
}

/* ECMP at leaf toward dleaf: the hash picks among spines still advertising a route. */
static uint32_t ecmp_spine(const struct fabric *f, const struct sim_pkt *pkt, uint32_t leaf,
			   uint32_t dleaf, uint64_t now)
{
	uint32_t live[FAB_MAX_SPINES], n = 0, p = pkt->plane;
	uint64_t h = tuple_hash(f, pkt, 1 + (uint64_t)p * 1024 + leaf);

	for (uint32_t s = 0; s < f->cfg.spines; s++)
		if (!withdrawn(f, fab_ls(f, p, leaf, s), now) &&
		    !withdrawn(f, fab_sl(f, p, s, dleaf), now))
			live[n++] = s;
	if (!n)
		return (uint32_t)(h % f->cfg.spines);	/* nothing left: blackholed anyway */
	return live[h % n];
}

struct sim_link *fab_next_hop(const struct fabric *f, const struct sim_pkt *pkt, uint64_t now)
{
	const struct sim_link *l = pkt->link;
	uint32_t dleaf = fab_leaf_of(f, pkt->dst), p = pkt->plane;

	switch (fab_kind(f, l)) {
	case FAB_UP:
		if (l->dst == dleaf)
			return fab_down(f, pkt->dst, p);
		return fab_ls(f, p, l->dst, ecmp_spine(f, pkt, l->dst, dleaf, now));
	case FAB_LS:
		return fab_sl(f, p, l->dst, dleaf);
	case FAB_SL:
		return fab_down(f, pkt->dst, p);
	default:
		return NULL;
	}
}

static void kill_link(struct fabric *f, struct sim_link *l, uint64_t now)
{
	l->cfg.blackhole_start_ns = now;
	l->cfg.blackhole_end_ns = SIM_NEVER;
	if (f->dead_since[l - f->links] == SIM_NEVER)
		f->dead_since[l - f->links] = now;
}

int fab_fail_cable(struct fabric *f, uint32_t plane, uint32_t leaf, uint32_t spine, uint64_t now)
{
	if (plane >= f->cfg.nplanes || leaf >= f->cfg.leaves || spine >= f->cfg.spines)
		return -EINVAL;
	kill_link(f, fab_ls(f, plane, leaf, spine), now);
	kill_link(f, fab_sl(f, plane, spine, leaf), now);
	return 0;
}

int fab_fail_downlink(struct fabric *f, uint32_t plane, uint32_t spine, uint32_t leaf, uint64_t now)
{
	if (plane >= f->cfg.nplanes || leaf >= f->cfg.leaves || spine >= f->cfg.spines)
		return -EINVAL;
	kill_link(f, fab_sl(f, plane, spine, leaf), now);
	return 0;
}

int fab_fail_spine(struct fabric *f, uint32_t plane, uint32_t spine, uint64_t now)
{
	if (plane >= f->cfg.nplanes || spine >= f->cfg.spines)
		return -EINVAL;
	for (uint32_t l = 0; l < f->cfg.leaves; l++)
		fab_fail_cable(f, plane, l, spine, now);
	return 0;
}

void fab_get_stats(const struct fabric *f, struct fab_stats *out)
{
	uint64_t max = 0, sum = 0, n = 0;

	*out = (struct fab_stats){ 0 };
	for (size_t i = 0; i < f->nlinks; i++)
		link_stats_add(&out->kind[fab_kind(f, &f->links[i])], &f->links[i].st);
	for (uint32_t p = 0; p < f->cfg.nplanes; p++)
		for (uint32_t l = 0; l < f->cfg.leaves; l++) {
			uint64_t leaf_sum = 0;

			for (uint32_t s = 0; s < f->cfg.spines; s++)
				leaf_sum += fab_ls(f, p, l, s)->st.delivered_bytes;
			if (!leaf_sum)
				continue;
			for (uint32_t s = 0; s < f->cfg.spines; s++) {
				uint64_t b = fab_ls(f, p, l, s)->st.delivered_bytes;

				if (b > max)
					max = b;
			}
			sum += leaf_sum;
			n += f->cfg.spines;
		}
	out->core_imbalance = n && sum ? (double)max * (double)n / (double)sum : 0;
}
