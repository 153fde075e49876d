// SPDX-License-Identifier: MIT
/*
 * The peer table: a dense array of peers indexed by handle, and an
 * open-addressing hash (linear probing, at most half full, no deletions so
 * no tombstones) from address to handle.  Next hops come from netlink.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "netlink.h"
#include "nexthop.h"
#include "peers.h"

#define PEERS_MAX	(1u << 24)

struct peers {
	struct nl *nl;
	uint32_t max, count;
	uint32_t mask;			/* hash slots - 1 */
	uint32_t *slots;		/* handle + 1; 0 = empty */
	struct peer *peer;		/* [max] */
};

struct peers *peers_create(uint32_t max, struct nl *nl)
{
	struct peers *p;
	uint32_t nslots = 2;

	if (!max || max > PEERS_MAX) {
		errno = EINVAL;
		return NULL;
	}
	while (nslots < 2 * max)
		nslots <<= 1;
	p = calloc(1, sizeof(*p));
	if (!p)
		goto err;
	p->slots = calloc(nslots, sizeof(*p->slots));
	p->peer = calloc(max, sizeof(*p->peer));
	if (!p->slots || !p->peer)
		goto err_free;
	p->nl = nl;
	p->max = max;
	p->mask = nslots - 1;
	return p;

err_free:
	free(p->slots);
	free(p->peer);
	free(p);
err:
	errno = ENOMEM;
	return NULL;
}

void peers_destroy(struct peers *p)
{
	if (!p)
		return;
	free(p->slots);
	free(p->peer);
	free(p);
}

/* The slot holding addr, or the empty slot where it would go. */
static uint32_t peers_slot(const struct peers *p, const struct mroc_addr *addr)
{
	uint32_t i = addr_hash(addr) & p->mask, h;

	while ((h = p->slots[i]) && !addr_eq(&p->peer[h - 1].addr, addr))
		i = (i + 1) & p->mask;
	return i;
}

int peers_lookup(const struct peers *p, const struct mroc_addr *addr, uint32_t *handle)
{
	uint32_t h;

	if (!addr_len(addr))
		return -EINVAL;
	h = p->slots[peers_slot(p, addr)];
	if (!h)
		return -ENOENT;
	*handle = h - 1;
	return 0;
}

int peers_get_handle(struct peers *p, const struct mroc_addr *addr, uint32_t *handle)
{
	struct peer *pe;
	uint32_t i;

	if (!addr_len(addr))
		return -EINVAL;
	i = peers_slot(p, addr);
	if (p->slots[i]) {
		*handle = p->slots[i] - 1;
		return 0;
	}
	if (p->count == p->max)
		return -ENOSPC;
	pe = &p->peer[p->count];
	memset(pe, 0, sizeof(*pe));
	pe->handle = p->count;
	pe->addr.family = addr->family;
	memcpy(pe->addr.bytes, addr->bytes, addr_len(addr));
	p->slots[i] = ++p->count;
	*handle = pe->handle;
	return 0;
}

struct peer *peers_get(struct peers *p, uint32_t handle)
{
	return handle < p->count ? &p->peer[handle] : NULL;
}

uint32_t peers_count(const struct peers *p)
{
	return p->count;
}

/*
 * Asks the kernel how to reach pe: fills the next-hop fields and returns 0,
 * or returns negative errno (-EAGAIN: neighbour resolution under way).
 */
static int peer_resolve(struct peers *p, struct peer *pe)
{
	struct nexthop hop;
	int err;

	if (!p->nl)
		return -EOPNOTSUPP;
	err = nexthop_resolve(p->nl, &pe->addr, 0, &hop);
	if (err)
		return err;
	if (hop.src.family != pe->addr.family)
		return -EADDRNOTAVAIL;
	pe->ifindex = hop.ifindex;
	pe->vlan = hop.vlan;
	pe->src = hop.src;
	memcpy(pe->smac, hop.smac, ETH_ALEN_);
	memcpy(pe->dmac, hop.dmac, ETH_ALEN_);
	return 0;
}

static uint64_t backoff_ns(uint32_t tries)
{
	uint64_t d = PEERS_BACKOFF_MIN_NS;

	while (tries-- && d < PEERS_BACKOFF_MAX_NS)
		d <<= 1;
	return d < PEERS_BACKOFF_MAX_NS ? d : PEERS_BACKOFF_MAX_NS;
}

struct peer *peers_route(struct peers *p, uint32_t handle, uint64_t now)
{
	struct peer *pe = peers_get(p, handle);
	int err;

	if (!pe)
		return NULL;
	if (pe->resolved)
		return pe;
	if (now < pe->next_try_ns)
		return NULL;
	err = peer_resolve(p, pe);
	if (err) {
		pe->last_err = err;
		pe->next_try_ns = now + backoff_ns(pe->tries);
		if (pe->tries < UINT32_MAX)
			pe->tries++;
		return NULL;
	}
	pe->resolved = true;
	pe->resolved_at_ns = now;
	pe->tries = 0;
	pe->last_err = 0;
	return pe;
}

void peers_expire(struct peers *p, uint64_t now, uint64_t max_age_ns)
{
	for (uint32_t i = 0; i < p->count; i++) {
		struct peer *pe = &p->peer[i];

		if (pe->resolved && now - pe->resolved_at_ns >= max_age_ns) {
			pe->resolved = false;
			pe->next_try_ns = now;
			pe->tries = 0;
		}
	}
}
