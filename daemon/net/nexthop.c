// SPDX-License-Identifier: MIT
/*
 * Next hops per (peer, port) (see nexthop.h): a dense table, row per peer
 * handle, column per port, two entries each (primary addresses, port
 * addresses), each resolved on first use and retried with a backoff while
 * it fails.  The port entry is used only where it differs from the primary
 * one, so hosts without port addresses resolve each (peer, port) once.
 */
#include <errno.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if_arp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "netlink.h"
#include "nexthop.h"
#include "peers.h"

_Static_assert(PEERS_MAX_ALIASES == NEXTHOP_MAX_PORTS, "a peer's port address per port");

int nexthop_resolve(struct nl *nl, const struct mroc_addr *dst, int oif, struct nexthop *out)
{
	struct nl_route rt;
	struct nl_link link;
	const struct mroc_addr *nh;
	uint8_t dmac[ETH_ALEN_];
	uint16_t state = 0;
	int err;

	err = nl_route_get_oif(nl, dst, oif, &rt);
	if (err)
		return err;
	if (rt.type != RTN_UNICAST || rt.ifindex <= 0)
		return -ENETUNREACH;
	err = nl_link_get(nl, rt.ifindex, NULL, &link);
	if (err)
		return err;
	if (link.type != ARPHRD_ETHER)
		return -EOPNOTSUPP;

	nh = rt.gw.family ? &rt.gw : dst;
	err = nl_neigh_get(nl, rt.ifindex, nh, dmac, &state);
	if (err == -EAGAIN) {
		err = nl_neigh_resolve(nl, rt.ifindex, nh);
		return err ? err : -EAGAIN;
	}
	if (err)
		return err;
	/*
	 * AF_XDP traffic never confirms a neighbour to the kernel, so a STALE
	 * entry stays STALE: have the kernel probe it (we use the MAC meanwhile;
	 * a failed probe shows at the next re-resolution).
	 */
	if (state & NUD_STALE)
		nl_neigh_resolve(nl, rt.ifindex, nh);

	out->ifindex = link.vlan_id && link.link_ifindex > 0 ? link.link_ifindex : rt.ifindex;
	out->vlan = link.vlan_id;
	out->src = rt.src;
	memcpy(out->smac, link.mac, ETH_ALEN_);
	memcpy(out->dmac, dmac, ETH_ALEN_);
	return 0;
}

struct entry {
	struct nexthop hop;
	bool resolved;
	uint32_t tries;			/* failed resolutions since the last success */
	int last_err;
	uint64_t next_try_ns;		/* unresolved: when to ask the kernel again */
	uint64_t resolved_at_ns;
};

struct nexthops {
	struct nl *nl;
	struct peers *peers;
	uint32_t max_peers;
	unsigned nports;
	int port_ifindex[NEXTHOP_MAX_PORTS];
	struct mroc_addr src;
	struct mroc_addr port_src[NEXTHOP_MAX_PORTS];	/* family 0: src */
	struct entry *e;		/* [max_peers][nports][2] */
};

/* Which entry: the primary addresses', or the port addresses'. */
enum { KIND_PRIMARY, KIND_PORT, NKINDS };

int nexthops_create(const struct nexthops_cfg *cfg, struct nexthops **out)
{
	struct nexthops *t;

	if (!cfg->nl || !cfg->peers || !cfg->max_peers || !cfg->nports ||
	    cfg->nports > NEXTHOP_MAX_PORTS)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->e = calloc((size_t)cfg->max_peers * cfg->nports * NKINDS, sizeof(*t->e));
	if (!t->e) {
		free(t);
		return -ENOMEM;
	}
	t->nl = cfg->nl;
	t->peers = cfg->peers;
	t->max_peers = cfg->max_peers;
	t->nports = cfg->nports;
	memcpy(t->port_ifindex, cfg->port_ifindex, cfg->nports * sizeof(int));
	t->src = cfg->src;
	for (unsigned p = 0; cfg->port_src && p < cfg->nports; p++)
		t->port_src[p] = cfg->port_src[p];
	*out = t;
	return 0;
}

void nexthops_destroy(struct nexthops *t)
{
	if (!t)
		return;
	free(t->e);
	free(t);
}

static struct entry *entry(const struct nexthops *t, uint32_t peer, unsigned port, unsigned kind)
{
	peer = peers_index(peer);	/* a handle, or a slot (nexthops_expire) */
	if (peer >= t->max_peers || port >= t->nports)
		return NULL;
	return &t->e[((size_t)peer * t->nports + port) * NKINDS + kind];
}

/* The port entry only where an address differs from the primary one's. */
static unsigned kind_of(const struct nexthops *t, const struct peer *pe, unsigned port, bool own)
{
	if (!own || !pe->speaks_ports || port >= t->nports)
		return KIND_PRIMARY;
	return t->port_src[port].family || (pe->alias_mask & (1u << port)) ? KIND_PORT :
									      KIND_PRIMARY;
}

/*
 * The route out of the port; a route through a VLAN device on top of the
 * port (which `oif PORT` does not find) is taken as the kernel chooses it.
 * Port entries go from the port's address to the peer's on that port.
 */
static int resolve_port(struct nexthops *t, const struct peer *pe, unsigned port, unsigned kind,
			struct nexthop *hop)
{
	bool alias = kind == KIND_PORT && (pe->alias_mask & (1u << port));
	const struct mroc_addr *dst = alias ? &pe->alias[port] : &pe->addr;
	const struct mroc_addr *src = kind == KIND_PORT && t->port_src[port].family ?
				      &t->port_src[port] : &t->src;
	int ifindex = t->port_ifindex[port];
	int err = nexthop_resolve(t->nl, dst, t->nports > 1 ? ifindex : 0, hop);

	if (err == -ENETUNREACH && t->nports > 1 && !nexthop_resolve(t->nl, dst, 0, hop) &&
	    hop->vlan && hop->ifindex == ifindex)
		err = 0;
	if (!err && hop->ifindex != ifindex)
		err = -ENETUNREACH;	/* the kernel would leave by another device */
	if (err)
		return err;
	if (src->family)
		hop->src = *src;
	hop->dst = *dst;
	return hop->src.family == dst->family ? 0 : -EADDRNOTAVAIL;
}

static uint64_t backoff_ns(uint32_t tries)
{
	uint64_t d = NEXTHOP_BACKOFF_MIN_NS;

	while (tries-- && d < NEXTHOP_BACKOFF_MAX_NS)
		d <<= 1;
	return d < NEXTHOP_BACKOFF_MAX_NS ? d : NEXTHOP_BACKOFF_MAX_NS;
}

const struct nexthop *nexthops_get(struct nexthops *t, uint32_t peer, unsigned port, bool own,
				   uint64_t now)
{
	const struct peer *pe = peers_get(t->peers, peer);
	unsigned kind = pe ? kind_of(t, pe, port, own) : KIND_PRIMARY;
	struct entry *e = entry(t, peer, port, kind);
	int err;

	if (!e || !pe)
		return NULL;
	if (e->resolved)
		return &e->hop;
	if (now < e->next_try_ns)
		return NULL;
	err = resolve_port(t, pe, port, kind, &e->hop);
	if (err) {
		e->last_err = err;
		e->next_try_ns = now + backoff_ns(e->tries);
		if (e->tries < UINT32_MAX)
			e->tries++;
		return NULL;
	}
	e->resolved = true;
	e->resolved_at_ns = now;
	e->tries = 0;
	e->last_err = 0;
	return &e->hop;
}

int nexthops_err(const struct nexthops *t, uint32_t peer, unsigned port, bool own)
{
	const struct peer *pe = peers_get(t->peers, peer);
	const struct entry *e = entry(t, peer, port, pe ? kind_of(t, pe, port, own) : KIND_PRIMARY);

	if (!e)
		return -EINVAL;
	/* 10 tries take about a second: ARP has given up by then. */
	return e->last_err == -EAGAIN && e->tries < 10 ? 0 : e->last_err;
}

void nexthops_forget(struct nexthops *t, uint32_t peer)
{
	for (unsigned port = 0; port < t->nports; port++) {
		for (unsigned kind = 0; kind < NKINDS; kind++) {
			struct entry *e = entry(t, peer, port, kind);

			if (e)
				*e = (struct entry){ 0 };
		}
	}
}

void nexthops_expire(struct nexthops *t, uint64_t now, uint64_t max_age_ns)
{
	uint32_t n = peers_count(t->peers);

	for (uint32_t p = 0; p < n && p < t->max_peers; p++) {
		for (unsigned k = 0; k < t->nports * NKINDS; k++) {
			struct entry *e = entry(t, p, k / NKINDS, k % NKINDS);

			if (max_age_ns && !(e->resolved && now - e->resolved_at_ns >= max_age_ns))
				continue;
			e->resolved = false;
			e->next_try_ns = now;
			e->tries = 0;
		}
	}
}
