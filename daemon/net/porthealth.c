// SPDX-License-Identifier: MIT
/* Ports that reach a peer in name only (see porthealth.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "peers.h"
#include "porthealth.h"

struct seen {
	uint64_t nth_tx_ns;		/* when the DEAD_PKTS-th unanswered packet went out */
	uint64_t down_until_ns;		/* 0: up */
	uint32_t unanswered;		/* packets out since the last one in */
};

struct porthealth {
	uint32_t max_peers;
	unsigned nports;
	uint64_t dead_ns;
	struct seen *s;			/* [peer * nports + port] */
	uint64_t *heard_ns;		/* [peer]: the last packet in, any port */
};

int porthealth_create(uint32_t max_peers, unsigned nports, uint64_t dead_ns,
		      struct porthealth **out)
{
	struct porthealth *ph;

	*out = NULL;
	if (!dead_ns || nports < 2)
		return 0;
	ph = calloc(1, sizeof(*ph));
	if (!ph)
		return -ENOMEM;
	ph->s = calloc((size_t)max_peers * nports, sizeof(*ph->s));
	ph->heard_ns = calloc(max_peers, sizeof(*ph->heard_ns));
	if (!ph->s || !ph->heard_ns) {
		porthealth_destroy(ph);
		return -ENOMEM;
	}
	ph->max_peers = max_peers;
	ph->nports = nports;
	ph->dead_ns = dead_ns;
	*out = ph;
	return 0;
}

void porthealth_destroy(struct porthealth *ph)
{
	if (!ph)
		return;
	free(ph->s);
	free(ph->heard_ns);
	free(ph);
}

/* peer: a handle (its slot: peers_index), or a slot (porthealth_sweep). */
static struct seen *seen_of(const struct porthealth *ph, uint32_t peer, unsigned port)
{
	peer = peers_index(peer);
	if (!ph || peer >= ph->max_peers || port >= ph->nports)
		return NULL;
	return &ph->s[(size_t)peer * ph->nports + port];
}

void porthealth_rx(struct porthealth *ph, uint32_t peer, unsigned port, uint64_t now)
{
	struct seen *s = seen_of(ph, peer, port);

	if (!s)
		return;
	ph->heard_ns[peers_index(peer)] = now;
	s->unanswered = 0;
	s->nth_tx_ns = 0;
}

void porthealth_tx(struct porthealth *ph, uint32_t peer, unsigned port, uint64_t now)
{
	struct seen *s = seen_of(ph, peer, port);

	/* Down: only a packet with nowhere better to go came here, which proves nothing. */
	if (!s || s->down_until_ns)
		return;
	if (++s->unanswered == PORTHEALTH_DEAD_PKTS)
		s->nth_tx_ns = now;
}

/* Counts s (peer's, on port) down when its silence says so (porthealth.h). */
static bool judge(struct porthealth *ph, uint32_t peer, struct seen *s, uint64_t now)
{
	if (s->down_until_ns || s->unanswered < PORTHEALTH_DEAD_PKTS ||
	    now - s->nth_tx_ns < ph->dead_ns || ph->heard_ns[peers_index(peer)] <= s->nth_tx_ns)
		return false;
	*s = (struct seen){ .down_until_ns = now + PORTHEALTH_HOLD_FACTOR * ph->dead_ns };
	return true;
}

enum porthealth_state porthealth_check(struct porthealth *ph, uint32_t peer, unsigned port,
				       uint64_t now)
{
	struct seen *s = seen_of(ph, peer, port);

	if (!s)
		return PORTHEALTH_UP;
	if (s->down_until_ns) {
		if (now < s->down_until_ns)
			return PORTHEALTH_DOWN;
		*s = (struct seen){ 0 };	/* held long enough: a fresh allowance */
		return PORTHEALTH_UP;
	}
	return judge(ph, peer, s, now) ? PORTHEALTH_WENT_DOWN : PORTHEALTH_UP;
}

void porthealth_sweep(struct porthealth *ph, uint64_t now, porthealth_down_fn fn, void *ctx)
{
	for (uint32_t peer = 0; ph && peer < ph->max_peers; peer++) {
		if (!ph->heard_ns[peer])
			continue;	/* never heard: nothing to judge */
		for (unsigned port = 0; port < ph->nports; port++)
			if (judge(ph, peer, seen_of(ph, peer, port), now))
				fn(ctx, peer, port);
	}
}

bool porthealth_is_down(const struct porthealth *ph, uint32_t peer, unsigned port, uint64_t now)
{
	const struct seen *s = seen_of(ph, peer, port);

	return s && now < s->down_until_ns;
}

unsigned porthealth_count_down(const struct porthealth *ph, uint64_t now)
{
	unsigned n = 0;

	for (size_t i = 0; ph && i < (size_t)ph->max_peers * ph->nports; i++)
		n += now < ph->s[i].down_until_ns;
	return n;
}

void porthealth_forget(struct porthealth *ph, uint32_t peer)
{
	peer = peers_index(peer);
	if (!ph || peer >= ph->max_peers)
		return;
	memset(seen_of(ph, peer, 0), 0, ph->nports * sizeof(struct seen));
	ph->heard_ns[peer] = 0;
}

void porthealth_forget_port(struct porthealth *ph, unsigned port)
{
	for (uint32_t peer = 0; ph && port < ph->nports && peer < ph->max_peers; peer++)
		*seen_of(ph, peer, port) = (struct seen){ 0 };
}
