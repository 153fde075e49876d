// SPDX-License-Identifier: MIT
/*
 * The peer table: a dense array of peers indexed by handle, and an
 * open-addressing hash (linear probing, at most half full, deletion by
 * backward shift so no tombstones) from address to handle.  A slot names a
 * handle and which of its addresses it holds: the primary, or port address
 * i (an alias): sized for every peer with PEERS_MAX_ALIASES of them, so the
 * hash stays at most half full whatever peers announce.  How to reach a
 * peer is not the table's business (nexthop.h, egress.h).
 *
 * Entries leave the table (docs/ARCHITECTURE.md, "Peers"): a sweep every
 * PEERS_SWEEP_NS asks the engine which handles its QPs use; a peer no QP
 * uses goes after PEERS_UNPROVEN_NS if no QP ever used it (what a forged
 * CONNECT_REQ leaves), after PEERS_IDLE_NS otherwise.  A full table evicts
 * a peer no QP used at the last sweep and nothing asked for since, so a
 * flood of forged requests holds it for one sweep at most.  Why that is
 * safe: every reference the engine holds came from a handle this table
 * handed out (peers_get_handle, peers_lookup), and handing one out marks it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "engine.h"
#include "peers.h"
#include "portaddr.h"

_Static_assert(PORTADDR_MAX == PEERS_MAX_ALIASES, "a port address per port");

/*
 * A hash slot: a peer's index + 1 in the low 24 bits, above them 0 (primary)
 * or 1 + the port of an alias.  Index PEERS_INDEX_MASK is never given out,
 * so no handle is ENGINE_PEER_NONE.
 */
#define PEERS_MAX	PEERS_INDEX_MASK
#define SLOT_INDEX	0xffffffu
#define SLOT_KIND_SHIFT	24
_Static_assert(PEERS_INDEX_BITS < SLOT_KIND_SHIFT, "an index fits a hash slot");

struct peers {
	uint32_t max, count;		/* count: live peers */
	uint32_t limit;			/* every handle ever given out is below it */
	uint32_t mask;			/* hash slots - 1 */
	uint32_t *slots;		/* index + 1, kind; 0 = empty */
	struct peer *peer;		/* [max], by index (peers_index) */
	uint32_t *free;			/* released indices, reused first */
	uint32_t nfree;
	uint32_t hand;			/* where the next eviction search starts */
	const struct engine *eng;	/* whose QPs hold references; NULL: none */
	uint32_t *qpns;			/* scratch for the sweep */
	int nqpns;
	uint64_t now, next_sweep, last_refs;
	void (*release)(void *ctx, uint32_t handle);
	void *release_ctx;
	struct peers_stats st;
};

struct peers *peers_create(uint32_t max)
{
	struct peers *p;
	uint64_t nslots = 2;

	if (!max || max > PEERS_MAX) {
		errno = EINVAL;
		return NULL;
	}
	while (nslots < 2ull * max * (1 + PEERS_MAX_ALIASES))
		nslots <<= 1;
	if (nslots > UINT32_MAX)
		goto err;
	p = calloc(1, sizeof(*p));
	if (!p)
		goto err;
	p->slots = calloc(nslots, sizeof(*p->slots));
	p->peer = calloc(max, sizeof(*p->peer));
	p->free = calloc(max, sizeof(*p->free));
	if (!p->slots || !p->peer || !p->free)
		goto err_free;
	p->max = max;
	p->mask = (uint32_t)(nslots - 1);
	return p;

err_free:
	free(p->slots);
	free(p->peer);
	free(p->free);
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
	free(p->free);
	free(p->qpns);
	free(p);
}

void peers_set_engine(struct peers *p, const struct engine *eng)
{
	p->eng = eng;
}

void peers_set_release_hook(struct peers *p, void (*fn)(void *ctx, uint32_t handle), void *ctx)
{
	p->release = fn;
	p->release_ctx = ctx;
}

static uint32_t slot_make(uint32_t handle, unsigned kind)
{
	return (peers_index(handle) + 1) | (uint32_t)kind << SLOT_KIND_SHIFT;
}

/* The peer a hash slot names. */
static uint32_t slot_index(uint32_t slot)
{
	return (slot & SLOT_INDEX) - 1;
}

/* handle's peer if it is in the table and handle is its (not an earlier holder's of the slot). */
static struct peer *live_peer(const struct peers *p, uint32_t handle)
{
	struct peer *pe = &p->peer[peers_index(handle)];

	return peers_index(handle) < p->limit && pe->live && pe->handle == handle ? pe : NULL;
}

/* 0: the primary address; 1 + i: port address i. */
static unsigned slot_kind(uint32_t slot)
{
	return slot >> SLOT_KIND_SHIFT;
}

static const struct mroc_addr *slot_addr(const struct peers *p, uint32_t slot)
{
	const struct peer *pe = &p->peer[slot_index(slot)];
	unsigned kind = slot_kind(slot);

	return kind ? &pe->alias[kind - 1] : &pe->addr;
}

/* The slot holding addr, or the empty slot where it would go. */
static uint32_t peers_slot(const struct peers *p, const struct mroc_addr *addr)
{
	uint32_t i = addr_hash(addr) & p->mask, s;

	while ((s = p->slots[i]) && !addr_eq(slot_addr(p, s), addr))
		i = (i + 1) & p->mask;
	return i;
}

/* The index of slot value want (an exact (handle, kind)) for addr; it is there. */
static uint32_t slot_find(const struct peers *p, const struct mroc_addr *addr, uint32_t want)
{
	uint32_t i = addr_hash(addr) & p->mask;

	while (p->slots[i] && p->slots[i] != want)
		i = (i + 1) & p->mask;
	return i;
}

/* The empty slot where another entry for addr goes (after those it has). */
static uint32_t slot_empty(const struct peers *p, const struct mroc_addr *addr)
{
	uint32_t i = addr_hash(addr) & p->mask;

	while (p->slots[i])
		i = (i + 1) & p->mask;
	return i;
}

/*
 * The slot of the peer whose primary address is addr, or the empty slot
 * ending addr's run.  An address can be one peer's primary and other
 * peers' port addresses (claims, peers.h): CONNECT_REQs find primaries only.
 */
static uint32_t slot_primary(const struct peers *p, const struct mroc_addr *addr)
{
	uint32_t i = addr_hash(addr) & p->mask, s;

	while ((s = p->slots[i]) && (slot_kind(s) || !addr_eq(slot_addr(p, s), addr)))
		i = (i + 1) & p->mask;
	return i;
}

/* Empty slot i, moving later entries of its run back so every lookup still finds them. */
static void slot_delete(struct peers *p, uint32_t i)
{
	uint32_t j = i, h, home;

	for (;;) {
		j = (j + 1) & p->mask;
		h = p->slots[j];
		if (!h)
			break;
		home = addr_hash(slot_addr(p, h)) & p->mask;
		/* An entry whose home lies cyclically in (i, j] is where it belongs. */
		if (i <= j ? i < home && home <= j : i < home || home <= j)
			continue;
		p->slots[i] = h;
		i = j;
	}
	p->slots[i] = 0;
}

static void alias_drop(struct peers *p, struct peer *pe, unsigned i)
{
	slot_delete(p, slot_find(p, &pe->alias[i], slot_make(pe->handle, 1 + i)));
	pe->alias_mask &= (uint16_t)~(1u << i);
	memset(&pe->alias[i], 0, sizeof(pe->alias[i]));
}

static void peer_release(struct peers *p, struct peer *pe)
{
	for (unsigned i = 0; i < PEERS_MAX_ALIASES; i++)
		if (pe->alias_mask & (1u << i))
			alias_drop(p, pe, i);
	pe->speaks_ports = false;
	slot_delete(p, slot_find(p, &pe->addr, slot_make(pe->handle, 0)));
	pe->live = false;
	p->free[p->nfree++] = peers_index(pe->handle);
	p->count--;
	if (p->release)
		p->release(p->release_ctx, pe->handle);
}

/* 0 when addr is in the table as anyone's address, -ENOENT if not (marks nothing). */
static int peers_lookup_quiet(const struct peers *p, const struct mroc_addr *addr)
{
	return p->slots[peers_slot(p, addr)] ? 0 : -ENOENT;
}

bool peers_claims(const struct peers *p, uint32_t handle, const struct mroc_addr *addr)
{
	const struct peer *pe = live_peer(p, handle);

	if (!pe)
		return false;
	if (addr_eq(&pe->addr, addr))
		return true;
	for (unsigned i = 0; i < PEERS_MAX_ALIASES; i++)
		if ((pe->alias_mask & (1u << i)) && addr_eq(&pe->alias[i], addr))
			return true;
	return false;
}

int peers_find(const struct peers *p, const struct mroc_addr *addr, uint32_t *handle)
{
	uint32_t s;

	if (!addr_len(addr))
		return -EINVAL;
	s = p->slots[peers_slot(p, addr)];
	if (!s)
		return -ENOENT;
	*handle = p->peer[slot_index(s)].handle;
	return 0;
}

/* Asked for now: kept until the next sweep, and through this tick whatever happens (new_peer). */
static void mark(struct peers *p, struct peer *pe)
{
	pe->touched = true;
	pe->handed_ns = p->now;
}

void peers_touch(struct peers *p, uint32_t handle)
{
	struct peer *pe = live_peer(p, handle);

	if (pe)
		mark(p, pe);
}

int peers_lookup(struct peers *p, const struct mroc_addr *addr, uint32_t *handle)
{
	int err = peers_find(p, addr, handle);

	if (!err)
		peers_touch(p, *handle);
	return err;
}

/* Which handles the engine's QPs use now (every QP, whatever its state). */
static void mark_refs(struct peers *p)
{
	int n;

	for (uint32_t i = 0; i < p->limit; i++)
		p->peer[i].referenced = false;
	p->last_refs = p->now;
	if (!p->eng)
		return;
	n = engine_qp_list(p->eng, p->qpns, p->nqpns);
	if (n > p->nqpns) {
		uint32_t *q = realloc(p->qpns, (size_t)n * sizeof(*q));

		if (!q) {
			/* Cannot tell: count every peer as used, evict nothing. */
			for (uint32_t i = 0; i < p->limit; i++)
				p->peer[i].referenced = true;
			return;
		}
		p->qpns = q;
		p->nqpns = n;
		n = engine_qp_list(p->eng, p->qpns, p->nqpns);
	}
	for (int i = 0; i < n && i < p->nqpns; i++) {
		struct engine_qp_info qi;

		struct peer *pe;

		if (!engine_qp_info(p->eng, p->qpns[i], &qi) && (pe = live_peer(p, qi.peer)) &&
		    (qi.state != ENGINE_QPS_IDLE && qi.state != ENGINE_QPS_LISTEN)) {
			pe->referenced = true;
			pe->proven = true;
		}
	}
}

/*
 * A peer that no QP used at the last sweep and nobody asked for since:
 * nothing can refer to it.  Searched from where the last search stopped.
 */
static struct peer *evictable(struct peers *p)
{
	for (uint32_t k = 0; k < p->limit; k++) {
		struct peer *pe = &p->peer[(p->hand + k) % p->limit];

		if (pe->live && !pe->referenced && !pe->touched) {
			p->hand = (peers_index(pe->handle) + 1) % p->limit;
			return pe;
		}
	}
	return NULL;
}

static struct peer *new_peer(struct peers *p)
{
	struct peer *pe;

	if (p->nfree)
		return &p->peer[p->free[--p->nfree]];
	if (p->limit < p->max)
		return &p->peer[p->limit++];
	pe = evictable(p);
	/*
	 * None: a fresh look at the engine, at most every PEERS_REFS_MIN_NS.
	 * Peers handed out in this tick keep their mark: the engine's answer
	 * to the packet that asked (a REP, a REJ; no QP holds the handle yet)
	 * leaves at the tick's end, to the handle.  Given to another address
	 * by a flood of REQs from new sources later in the tick, a REP with
	 * the requester's QPN and key went to the flood's address.
	 */
	if (!pe && p->now - p->last_refs >= PEERS_REFS_MIN_NS) {
		for (uint32_t i = 0; i < p->limit; i++)
			if (p->peer[i].handed_ns != p->now)
				p->peer[i].touched = false;
		mark_refs(p);
		pe = evictable(p);
	}
	if (!pe)
		return NULL;
	p->st.evicted++;
	peer_release(p, pe);
	return &p->peer[p->free[--p->nfree]];
}

/*
 * Peers owner added that are in use: a QP used them at the last look, or
 * they were asked for since (what the eviction would not take).
 */
static uint32_t owned_in_use(const struct peers *p, uint32_t owner)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < p->limit; i++) {
		const struct peer *pe = &p->peer[i];

		n += pe->live && pe->owner == owner && (pe->referenced || pe->touched);
	}
	return n;
}

static int get_handle(struct peers *p, const struct mroc_addr *addr, bool req, uint32_t owner,
		      uint32_t max_owned, uint32_t *handle)
{
	struct peer *pe;
	uint32_t i, h;

	if (!addr_len(addr))
		return -EINVAL;
	/*
	 * A CONNECT_REQ comes from its sender's primary address, and is not
	 * authenticated yet: it finds that peer, or makes one, and never takes
	 * an address from a peer that claims it as a port address (#24: one
	 * spoofed REQ from each of a peer's port addresses cut it off).
	 */
	i = req ? slot_primary(p, addr) : peers_slot(p, addr);
	if (p->slots[i]) {
		pe = &p->peer[slot_index(p->slots[i])];
		mark(p, pe);
		*handle = pe->handle;
		return 0;
	}
	/* A scan of the table, only for a tenant's new peer (its QP_CONNECT). */
	if (owner && owned_in_use(p, owner) >= max_owned) {
		p->st.owner_refused++;
		return -EDQUOT;
	}
	pe = new_peer(p);
	if (!pe) {
		p->st.full++;
		return -ENOSPC;
	}
	/*
	 * A slot used before takes its next generation: the engine may still
	 * hold the old handle (a half-open entry's REP or REJ BUSY, engine/
	 * cm_half.c: no QP, so nothing kept the peer), and what it sends there
	 * must reach nobody, not this address (peers_get).  16 bits: a stale
	 * handle could name a slot's holder again only after 65,536 more,
	 * hours of a flood of new sources, long past any entry's dead_peer.
	 */
	h = (uint32_t)(pe - p->peer);
	if (pe->used)
		h |= (pe->handle + (1u << PEERS_INDEX_BITS)) & ~PEERS_INDEX_MASK;
	memset(pe, 0, sizeof(*pe));
	pe->handle = h;
	pe->used = true;
	pe->owner = owner;
	pe->live = true;
	mark(p, pe);
	pe->seen_ns = p->now;
	pe->addr.family = addr->family;
	memcpy(pe->addr.bytes, addr->bytes, addr_len(addr));
	/* The eviction may have moved entries: find an empty slot again. */
	p->slots[slot_empty(p, addr)] = slot_make(h, 0);
	p->count++;
	p->st.added++;
	*handle = h;
	return 0;
}

int peers_get_handle(struct peers *p, const struct mroc_addr *addr, uint32_t *handle)
{
	return get_handle(p, addr, false, 0, 0, handle);
}

int peers_get_handle_owned(struct peers *p, const struct mroc_addr *addr, uint32_t owner,
			   uint32_t max_owned, uint32_t *handle)
{
	return get_handle(p, addr, false, owner, max_owned, handle);
}

int peers_get_handle_req(struct peers *p, const struct mroc_addr *addr, uint32_t *handle)
{
	return get_handle(p, addr, true, 0, 0, handle);
}

uint32_t peers_max(const struct peers *p)
{
	return p->max;
}

int peers_set_aliases(struct peers *p, uint32_t handle, const struct mroc_addr *addr,
		      uint16_t mask)
{
	struct peer *pe = peers_get(p, handle);
	bool changed = false;
	int n = 0;

	if (!pe)
		return -ENOENT;
	for (unsigned i = 0; i < PEERS_MAX_ALIASES; i++)
		if ((mask & (1u << i)) && !addr_len(&addr[i]))
			return -EINVAL;
	pe->speaks_ports = true;
	for (unsigned i = 0; i < PEERS_MAX_ALIASES; i++) {
		bool have = pe->alias_mask & (1u << i), want = mask & (1u << i);
		uint32_t j;

		if (have && want && addr_eq(&pe->alias[i], &addr[i])) {
			n++;
			continue;	/* announced again, as it was */
		}
		if (have) {
			alias_drop(p, pe, i);
			changed = true;
		}
		if (!want)
			continue;
		j = slot_primary(p, &addr[i]);
		if (p->slots[j]) {
			/* A live peer's primary (or its own): a host's own address, refused. */
			p->st.alias_refused++;
			continue;
		}
		/* Another peer's port address too: both claims stand (peers_claims). */
		if (!peers_lookup_quiet(p, &addr[i]))
			p->st.alias_shared++;
		j = slot_empty(p, &addr[i]);
		pe->alias[i] = addr[i];
		pe->alias_mask |= (uint16_t)(1u << i);
		p->slots[j] = slot_make(handle, 1 + i);
		p->st.alias_added++;
		changed = true;
		n++;
	}
	if (changed && p->release)
		p->release(p->release_ctx, handle);
	return n;
}

void peers_announce(void *ctx, uint32_t handle, const uint8_t *ext, size_t len)
{
	struct peers *p = ctx;
	struct mroc_addr addr[PORTADDR_MAX];
	uint16_t mask;

	if (portaddr_decode(ext, len, addr, &mask)) {
		p->st.alias_bad++;
		return;
	}
	peers_set_aliases(p, handle, addr, mask);
}

uint64_t peers_sweep(struct peers *p, uint64_t now)
{
	p->now = now;
	if (now < p->next_sweep)
		return p->next_sweep;
	p->next_sweep = now + PEERS_SWEEP_NS;
	mark_refs(p);
	for (uint32_t i = 0; i < p->limit; i++) {
		struct peer *pe = &p->peer[i];
		uint64_t idle;

		if (!pe->live)
			continue;
		if (pe->touched || pe->referenced)
			pe->seen_ns = now;
		pe->touched = false;
		idle = now - pe->seen_ns;
		if (!pe->referenced &&
		    idle >= (pe->proven ? PEERS_IDLE_NS : PEERS_UNPROVEN_NS)) {
			p->st.aged_out++;
			peer_release(p, pe);
		}
	}
	return p->next_sweep;
}

struct peer *peers_get(struct peers *p, uint32_t handle)
{
	struct peer *pe = live_peer(p, handle);

	/* A slot given out again (or released) since: what the engine kept goes nowhere. */
	if (!pe && handle != ENGINE_PEER_NONE && peers_index(handle) < p->limit)
		p->st.stale++;
	return pe;
}

struct peer *peers_at(struct peers *p, uint32_t index)
{
	return index < p->limit && p->peer[index].live ? &p->peer[index] : NULL;
}

uint32_t peers_count(const struct peers *p)
{
	return p->limit;
}

uint32_t peers_live(const struct peers *p)
{
	return p->count;
}

void peers_get_stats(const struct peers *p, struct peers_stats *out)
{
	*out = p->st;
}
