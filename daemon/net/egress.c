// SPDX-License-Identifier: MIT
/* Egress: which port and next hop a packet leaves by (see egress.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"
#include "log.h"
#include "netlink.h"
#include "peers.h"
#include "porthealth.h"

#define NO_PORT		0xff

/*
 * Where packets of (peer address, UDP source port) last came in: replies go
 * back through that port.  Direct-mapped, a collision overwrites.
 */
#define ARRIVAL_SLOTS	4096

struct arrival {
	struct mroc_addr src;
	uint16_t sport;
	uint8_t port;
};

struct egress {
	struct egress_port ports[EGRESS_MAX_PORTS];
	bool up[EGRESS_MAX_PORTS];	/* administratively up, carrier, oper up */
	unsigned nports;
	bool mute;
	struct nl *nl;
	struct peers *peers;
	uint32_t max_peers;
	struct arrival *arrivals;	/* [ARRIVAL_SLOTS] */
	uint8_t *heard_port;		/* [peer]: the port it was last heard through; NO_PORT */
	uint8_t *req_port;		/* [peer]: an unauthenticated REQ's since; NO_PORT */
	struct nexthops *hops;		/* per (peer, port) */
	uint64_t port_dead_ns;		/* porthealth.h; 0 = off */
	struct porthealth *health;	/* NULL: off, or one port */
	uint64_t port_dead;		/* events */
	int mon_fd;			/* link and route changes; -1 if none */
	uint64_t next_mon_ns, next_expire_ns, next_sweep_ns;
};

/* ---- the arrival table ------------------------------------------------------------ */

static struct arrival *arrival_of(const struct egress *e, const struct mroc_addr *src,
				  uint16_t sport)
{
	return &e->arrivals[(addr_hash(src) ^ sport * 2654435761u) % ARRIVAL_SLOTS];
}

void egress_arrived(struct egress *e, const struct mroc_addr *src, uint16_t sport, unsigned port)
{
	struct arrival *a;

	if (e->nports < 2)
		return;
	a = arrival_of(e, src, sport);
	if (a->port != port || a->sport != sport || !addr_eq(&a->src, src))
		*a = (struct arrival){ .src = *src, .sport = sport, .port = (uint8_t)port };
}

static bool arrived_from(const struct egress *e, const struct mroc_addr *src, uint16_t sport,
			 unsigned *port)
{
	const struct arrival *a = arrival_of(e, src, sport);

	if (a->sport != sport || !addr_eq(&a->src, src))
		return false;
	*port = a->port;
	return true;
}

void egress_heard(struct egress *e, uint32_t peer, const struct mroc_addr *src, uint16_t sport,
		  unsigned port, uint64_t now, enum egress_heard_as as)
{
	peer = peers_index(peer);
	if (peer >= e->max_peers || port >= e->nports)
		return;
	if (as == EGRESS_HEARD_REQ) {
		e->req_port[peer] = (uint8_t)port;	/* only CONNECT_REP and _REJ follow it */
		return;
	}
	/*
	 * Where answers to (src, sport) go back: only once the packet passed
	 * the engine's checks and the mode's (docs/PROTOCOL.md 11a): one
	 * spoofed packet with a peer's address and path port moved its ACKs.
	 */
	egress_arrived(e, src, sport, port);
	if (as == EGRESS_HEARD_REPEAT)
		return;
	e->heard_port[peer] = (uint8_t)port;
	e->req_port[peer] = NO_PORT;
	porthealth_rx(e->health, peer, port, now);
}

/* ---- the link monitor ----------------------------------------------------------- */

/*
 * Reads every port's link state and says what changed (quiet is for
 * start-up).  Returns the ports that came up (bit p: port p).
 */
static uint32_t ports_read(struct egress *e, bool quiet)
{
	uint32_t came_up = 0;

	for (unsigned p = 0; p < e->nports; p++) {
		const struct egress_port *port = &e->ports[p];
		struct nl_link l;
		bool up = !nl_link_get(e->nl, port->ifindex, NULL, &l) && (l.flags & IFF_UP) &&
			  (l.flags & IFF_RUNNING);

		if (up == e->up[p])
			continue;
		e->up[p] = up;
		porthealth_forget_port(e->health, p);
		if (up)
			came_up |= 1u << p;
		/* Every worker's egress watches the links; one says so. */
		if ((quiet && up) || e->mute)
			continue;
		if (e->nports > 1 && up)
			pr_info("egress: port %s is up: it takes its paths back", port->ifname);
		else if (e->nports > 1)
			pr_warn("egress: port %s is down: its paths go out of the other ports",
				port->ifname);
		else
			pr_warn("egress: %s is %s", port->ifname, up ? "up" : "down");
	}
	return came_up;
}

/* Port p was just counted down for peer (porthealth.h): count it and say so. */
static void port_went_down(void *ctx, uint32_t peer, unsigned p)
{
	struct egress *e = ctx;
	/* From the port health sweep: peer is a slot (peers_index), the handle's generation unknown. */
	const struct peer *pe = peers_at(e->peers, peers_index(peer));
	char a[MROC_ADDR_STRLEN];

	e->port_dead++;
	pr_warn_rl("egress: nothing from %s came back through port %s for %llu ms while other "
		   "ports heard it: its paths to that peer leave by the other ports for %llu s",
		   pe ? addr_str(&pe->addr, a, sizeof(a)) : "?", e->ports[p].ifname,
		   (unsigned long long)(e->port_dead_ns / 1000000),
		   (unsigned long long)(PORTHEALTH_HOLD_FACTOR * e->port_dead_ns / 1000000000));
}

uint32_t egress_tick(struct egress *e, uint64_t now)
{
	uint32_t came_up = 0;

	if (now < e->next_mon_ns)
		return 0;
	e->next_mon_ns = now + EGRESS_MON_NS;
	if (e->mon_fd >= 0 && nl_monitor_drain(e->mon_fd) > 0) {
		came_up = ports_read(e, false);
		nexthops_expire(e->hops, now, 0);	/* routes may have changed too */
	}
	if (now >= e->next_expire_ns) {
		nexthops_expire(e->hops, now, EGRESS_HOP_MAX_AGE_NS);
		e->next_expire_ns = now + EGRESS_HOP_MAX_AGE_NS / 3;
	}
	/* Silent ports no packet wants any more still count down (porthealth.h). */
	if (e->health && now >= e->next_sweep_ns) {
		porthealth_sweep(e->health, now, port_went_down, e);
		e->next_sweep_ns = now + e->port_dead_ns / 4;
	}
	return e->nports > 1 ? came_up : 0;
}

int egress_fd(const struct egress *e)
{
	return e->mon_fd;
}

/* ---- port choice -------------------------------------------------------------- */

/*
 * The port packets of (peer, sport) want: sport % nports, or for a reply on
 * the peer's path (echo) where that path's packets come in, from the peer's
 * port addresses first (its data; the primary carries only CM once it has
 * them).  Connection requests and answers (cm) go by the port the peer was
 * last heard through: the CM sends every try from the same source port
 * (cm.c), and an answer from the answering QP's own source port, which may
 * pick a port whose far end is down (which we cannot see) for every try;
 * the request that an answer answers came in through a port that works.
 * Only authenticated packets move that port (docs/PROTOCOL.md 11a): a
 * CONNECT_REQ that the mode could not authenticate moves only where the
 * answers to REQs go (answer: CONNECT_REP, CONNECT_REJ) until the peer's
 * next authenticated packet, so a spoofed REQ cannot send the CM of a
 * peer's live connections (DISCONNECT, our REQs) out of a port of its choice.
 */
static unsigned port_wanted(const struct egress *e, const struct peer *pe, uint16_t sport,
			    bool echo, bool cm, bool answer)
{
	unsigned port = sport % e->nports;
	uint32_t slot = peers_index(pe->handle);

	if (e->nports < 2)
		return port;
	if (cm && answer && slot < e->max_peers && e->req_port[slot] < e->nports)
		return e->req_port[slot];
	if (cm && slot < e->max_peers && e->heard_port[slot] < e->nports)
		return e->heard_port[slot];
	if (!echo)
		return port;
	for (unsigned i = 0; i < PEERS_MAX_ALIASES; i++)
		if ((pe->alias_mask & (1u << i)) && arrived_from(e, &pe->alias[i], sport, &port))
			return port;
	arrived_from(e, &pe->addr, sport, &port);
	return port;
}

/* Port p may take a packet to peer pe now (porthealth.h). */
static bool port_usable(struct egress *e, const struct peer *pe, unsigned p, uint64_t now)
{
	switch (porthealth_check(e->health, pe->handle, p, now)) {
	case PORTHEALTH_UP:
		return true;
	case PORTHEALTH_WENT_DOWN:
		port_went_down(e, pe->handle, p);
		return false;
	default:
		return false;
	}
}

/*
 * The sender of a path picks its port: its UDP source port modulo the
 * number of ports, so a path that the engine moves (a new source port)
 * usually changes port, as ECMP in a routed fabric would move it to another
 * plane.  Replies (echo: the peer's path, its source port echoed) go back
 * through the port that path's packets last came in on, so a path keeps to
 * one plane both ways, also when the sender moved it off a port that went
 * down, or has another number of ports.  A port that is down, cannot reach
 * the peer, or is counted down for it (porthealth.h) hands its paths to the
 * others; one counted down is still better than none.
 *
 * Only replies follow the arrivals.  If a sender followed them too, a
 * reply that had to leave by another port (its next hop on the path's port
 * not yet resolved: seconds while IPv6 link-local addresses are tentative
 * after a port comes up) would move the sender's path there, the replies
 * would follow the path, and it would never come back.  own: not CM (see
 * nexthops_get).
 */
static const struct nexthop *port_for(struct egress *e, const struct peer *pe, uint16_t sport,
				      bool echo, bool own, bool answer, uint64_t now, unsigned *port)
{
	unsigned want = port_wanted(e, pe, sport, echo, !own, answer);

	for (unsigned t = 0; t < 2 * e->nports; t++) {
		const struct nexthop *h;

		*port = porthealth_choice(e->nports, want, sport, t % e->nports);
		if (!e->up[*port] || (t < e->nports && !port_usable(e, pe, *port, now)))
			continue;
		h = nexthops_get(e->hops, pe->handle, *port, own, now);
		if (h)
			return h;
	}
	return NULL;
}

static void warn_unreachable(const struct egress *e, const struct peer *pe, uint16_t sport,
			     bool own)
{
	unsigned want = sport % e->nports;
	char a[MROC_ADDR_STRLEN];
	int err = nexthops_err(e->hops, pe->handle, want, own);

	if (!err && e->up[want])
		return;		/* still resolving */
	pr_warn_rl("egress: %s is unreachable out of every port (%s: %s%s)",
		   addr_str(&pe->addr, a, sizeof(a)), e->ports[want].ifname,
		   e->up[want] ? "" : "down", e->up[want] ? strerror(-err) : "");
}

const struct nexthop *egress_route(struct egress *e, uint32_t peer, uint16_t sport, bool echo,
				   bool own, bool answer, bool data, uint64_t now, unsigned *port)
{
	const struct peer *pe = peers_get(e->peers, peer);
	const struct nexthop *h;

	if (!pe)
		return NULL;
	h = port_for(e, pe, sport, echo, own, answer, now, port);
	if (!h) {
		warn_unreachable(e, pe, sport, own);
		return NULL;
	}
	/* Only what the peer acknowledges tells whether the port reaches it (porthealth.h). */
	if (data)
		porthealth_tx(e->health, peer, *port, now);
	return h;
}

const char *egress_port_name(const struct egress *e, uint32_t peer, uint16_t sport, uint64_t now)
{
	const struct peer *pe = peers_get(e->peers, peer);
	unsigned want;

	if (!pe)
		return NULL;
	want = port_wanted(e, pe, sport, false, false, false);
	for (unsigned t = 0; t < 2 * e->nports; t++) {
		unsigned p = porthealth_choice(e->nports, want, sport, t % e->nports);

		if (e->up[p] && !nexthops_err(e->hops, peer, p, true) &&
		    (t >= e->nports || !porthealth_is_down(e->health, peer, p, now)))
			return e->ports[p].ifname;
	}
	return NULL;
}

unsigned egress_ports_down(const struct egress *e, uint32_t peer, const char **names,
			   unsigned max, uint64_t now)
{
	unsigned n = 0;

	for (unsigned p = 0; p < e->nports && n < max; p++)
		if (porthealth_is_down(e->health, peer, p, now))
			names[n++] = e->ports[p].ifname;
	return n;
}

unsigned egress_count_down(const struct egress *e, uint64_t now)
{
	return porthealth_count_down(e->health, now);
}

uint64_t egress_port_dead(const struct egress *e)
{
	return e->port_dead;
}

/* ---- life cycle ------------------------------------------------------------------ */

/* The peer table gave a handle up (or its port addresses changed): what we know of it goes. */
static void forget_peer(void *ctx, uint32_t peer)
{
	struct egress *e = ctx;

	nexthops_forget(e->hops, peer);
	porthealth_forget(e->health, peer);
	peer = peers_index(peer);
	if (peer < e->max_peers)
		e->heard_port[peer] = e->req_port[peer] = NO_PORT;
}

/* The monitor opens before the first reading of the links so that no change falls between. */
int egress_create(const struct egress_cfg *cfg, uint64_t now, struct egress **out, char *why,
		  size_t why_len)
{
	struct nexthops_cfg hc = {
		.nl = cfg->nl,
		.peers = cfg->peers,
		.max_peers = cfg->max_peers,
		.src = cfg->src,
		.nports = cfg->nports,
	};
	int ifindex[EGRESS_MAX_PORTS];
	struct mroc_addr port_src[EGRESS_MAX_PORTS];
	struct egress *e;
	int err;

	*out = NULL;
	if (!cfg->nports || cfg->nports > EGRESS_MAX_PORTS || !cfg->max_peers) {
		snprintf(why, why_len, "%u ports (1..%d)", cfg->nports, EGRESS_MAX_PORTS);
		return -EINVAL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	memcpy(e->ports, cfg->ports, cfg->nports * sizeof(*cfg->ports));
	e->nports = cfg->nports;
	e->mute = cfg->mute;
	e->nl = cfg->nl;
	e->peers = cfg->peers;
	e->max_peers = cfg->max_peers;
	e->port_dead_ns = cfg->port_dead_ns;
	e->mon_fd = -1;
	for (unsigned p = 0; p < e->nports; p++) {
		ifindex[p] = e->ports[p].ifindex;
		port_src[p] = e->ports[p].addr;
	}
	hc.port_ifindex = ifindex;
	hc.port_src = port_src;
	e->arrivals = calloc(ARRIVAL_SLOTS, sizeof(*e->arrivals));
	e->heard_port = malloc(e->max_peers);
	e->req_port = malloc(e->max_peers);
	if (!e->arrivals || !e->heard_port || !e->req_port) {
		err = -ENOMEM;
		snprintf(why, why_len, "arrival table: %s", strerror(-err));
		goto fail;
	}
	memset(e->heard_port, NO_PORT, e->max_peers);
	memset(e->req_port, NO_PORT, e->max_peers);
	err = nexthops_create(&hc, &e->hops);
	if (err) {
		snprintf(why, why_len, "next-hop table: %s", strerror(-err));
		goto fail;
	}
	/* A handle the peer table gives up may come back for another address. */
	peers_set_release_hook(e->peers, forget_peer, e);
	err = porthealth_create(e->max_peers, e->nports, e->port_dead_ns, &e->health);
	if (err) {
		snprintf(why, why_len, "port health table: %s", strerror(-err));
		goto fail;
	}
	err = nl_monitor_open(&e->mon_fd);
	if (err)
		pr_warn("egress: no link change notifications (%s): a port going down is "
			"noticed by its lost packets only", strerror(-err));
	ports_read(e, true);
	e->next_expire_ns = now + EGRESS_HOP_MAX_AGE_NS / 3;
	*out = e;
	return 0;
fail:
	egress_destroy(e);
	return err;
}

void egress_destroy(struct egress *e)
{
	if (!e)
		return;
	if (e->mon_fd >= 0)
		close(e->mon_fd);
	if (e->hops && e->peers)
		peers_set_release_hook(e->peers, NULL, NULL);
	nexthops_destroy(e->hops);
	porthealth_destroy(e->health);
	free(e->heard_port);
	free(e->req_port);
	free(e->arrivals);
	free(e);
}
