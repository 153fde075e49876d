// SPDX-License-Identifier: MIT
/*
 * mrocd configuration: the checks that span several keys (sizes that must
 * fit together, addresses and interfaces, security files, and whatever the
 * engine itself refuses), each reported against a key the file sets.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aead.h"
#include "config_parse.h"
#include "engine.h"
#include "frame.h"
#include "portaddr.h"

/* The kernel keeps XDP_PACKET_HEADROOM bytes at the start of every RX frame. */
#define CONFIG_XDP_HEADROOM	256

/*
 * Report against the first of keys[] that the file sets (so the line points
 * at something the user wrote), or the first key when all are defaults.
 */
__attribute__((format(printf, 3, 4)))
static int xerr(struct cparse *p, const char *const keys[], const char *fmt, ...)
{
	const config_setting_t *s = NULL;
	const char *key = keys[0];
	char msg[256];
	va_list ap;

	for (size_t i = 0; keys[i]; i++) {
		if ((s = config_lookup(p->cf, keys[i]))) {
			key = keys[i];
			break;
		}
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return config_err(p, s, key, "%s", msg);
}

#define KEYS(...)	((const char *const[]){ __VA_ARGS__, NULL })

/* The AF_XDP sockets the interfaces ask for: one per (interface, queue). */
static uint32_t umem_sockets(const typeof(((struct mrocd_config *)0)->network) *n)
{
	uint32_t socks = 0;

	for (uint32_t i = 0; i < n->interfaces.n; i++)
		socks += n->interfaces.v[i].nqueues;
	return socks ? socks : 1;
}

/* Each socket's fill ring and TX ring full at once (afxdp_create's rule). */
static uint32_t umem_need(const typeof(((struct mrocd_config *)0)->network) *n)
{
	return 2 * n->ring_size * umem_sockets(n);
}

void config_derive(struct cparse *p, struct mrocd_config *c)
{
	typeof(c->network) *n = &c->network;
	uint32_t need = umem_need(n), frames = n->umem_frames;

	if (config_lookup(p->cf, "network.umem_frames"))
		return;
	/* The default, or the next power of two that holds every socket's rings. */
	while (frames < need && frames < (1u << 30))
		frames <<= 1;
	n->umem_frames = frames;
}

/* Map an engine_config_check message to the key it is about. */
static const char *engine_why_key(const char *why)
{
	static const struct { const char *prefix, *key; } map[] = {
		{ "max_qps", "limits.max_qps" },
		{ "max_mrs", "limits.max_mrs" },
		{ "mtu", "network.mtu" },
		{ "need 0 < rto_min", "transport.rto_init_us" },
		{ "rto_max", "transport.rto_max_ms" },
		{ "rto", "transport.rto_init_us" },
		{ "ack_every", "transport.ack_every" },
		{ "dupthresh", "transport.dupthresh" },
		{ "max_pwnd_pkts", "transport.max_pwnd_pkts" },
		{ "init_pwnd_pkts", "transport.init_pwnd_pkts" },
		{ "loss_md_pkts", "transport.loss_md_pkts" },
		{ "max_retx", "transport.max_retx" },
		{ "rnr_retry", "transport.rnr_retry" },
		{ "rnr_delay", "transport.rnr_delay_us" },
		{ "cm_retries", "transport.cm_retries" },
		{ "dead_peer", "transport.dead_peer_ms" },
		{ "hint_interval", "transport.hint_interval_us" },
		{ "keepalive", "transport.keepalive_ms" },
		{ "need 1024 <= sport_min", "network.sport_min" },
		{ "sport", "network.sport_min" },
		{ "link_rate", "transport.link_rate_gbps" },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strncmp(why, map[i].prefix, strlen(map[i].prefix)))
			return map[i].key;
	return "transport";
}

/* Messages name every key involved: xerr may report any of them. */
static int check_network(struct cparse *p, const struct mrocd_config *c)
{
	const typeof(c->network) *n = &c->network;
	uint32_t room = n->frame_size - MROC_DATA_OVERHEAD - FRAME_HEADROOM - FRAME_ICRC_LEN -
			CONFIG_XDP_HEADROOM - config_sec_overhead(c);
	char buf[MROC_ADDR_STRLEN], buf2[MROC_ADDR_STRLEN];

	if (n->sport_min > n->sport_max)
		return xerr(p, KEYS("network.sport_min", "network.sport_max"),
			    "network.sport_min (%u) must not exceed network.sport_max (%u)",
			    n->sport_min, n->sport_max);
	if ((uint32_t)n->sport_max - n->sport_min + 1 < c->transport.paths)
		return xerr(p, KEYS("network.sport_max", "network.sport_min", "transport.paths"),
			    "network.sport_min..sport_max (%u..%u) has fewer ports than "
			    "transport.paths (%u)", n->sport_min, n->sport_max, c->transport.paths);
	if (n->udp_port >= n->sport_min && n->udp_port <= n->sport_max)
		return xerr(p, KEYS("network.udp_port", "network.sport_min", "network.sport_max"),
			    "network.udp_port (%u) lies inside the path source ports "
			    "network.sport_min..sport_max (%u..%u)", n->udp_port, n->sport_min,
			    n->sport_max);
	if (n->backend == MROCD_BACKEND_AF_XDP && !n->interfaces.n)
		return xerr(p, KEYS("network.backend", "network.interfaces"),
			    "network.backend \"af_xdp\" needs at least one network.interfaces entry");
	if (n->backend != MROCD_BACKEND_UDP && n->mtu > room)
		return xerr(p, KEYS("network.mtu", "network.frame_size", "network.backend"),
			    "network.mtu (%u) does not fit an AF_XDP frame of network.frame_size "
			    "(%u): at most %u (or frame_size 4096, or backend \"udp\")", n->mtu,
			    n->frame_size, room);
	if (n->backend != MROCD_BACKEND_UDP && n->umem_frames < umem_need(n))
		return xerr(p, KEYS("network.umem_frames", "network.ring_size", "network.interfaces"),
			    "network.umem_frames (%u) is too few for %u AF_XDP sockets with rings "
			    "of network.ring_size (%u): need at least %u (or leave umem_frames "
			    "out: it is then sized from the sockets)", n->umem_frames,
			    umem_sockets(n), n->ring_size, umem_need(n));
	for (uint32_t i = 0; i < n->interfaces.n; i++) {
		const struct mroc_addr *a = &n->interfaces.v[i].address;
		/* Every address of the host, the primary's first, is of one family. */
		const struct mroc_addr *fam = n->address.family ? &n->address : NULL;

		for (uint32_t j = 0; !fam && j < i; j++)
			if (n->interfaces.v[j].address.family)
				fam = &n->interfaces.v[j].address;
		if (!a->family)
			continue;
		if (fam && a->family != fam->family)
			return xerr(p, KEYS("network.interfaces", "network.address"),
				    "network.interfaces[%u].address %s is not of the family of %s",
				    i, addr_str(a, buf, sizeof(buf)), addr_str(fam, buf2, sizeof(buf2)));
		for (uint32_t j = 0; j < i; j++)
			if (addr_eq(a, &n->interfaces.v[j].address))
				return xerr(p, KEYS("network.interfaces"),
					    "network.interfaces[%u].address %s is also "
					    "network.interfaces[%u]'s: each port has its own", i,
					    addr_str(a, buf, sizeof(buf)), j);
	}
	for (uint32_t i = 0, naddr = 0; i < n->interfaces.n; i++) {
		/* A CONNECT_REQ with its key and every port address fits a packet of mtu. */
		naddr += n->interfaces.v[i].address.family != 0;
		if (MROC_HDR_LEN + MROC_CM_HDR_LEN + MROC_CM_KEY_LEN + 2 + PORTADDR_LEN(naddr) >
		    n->mtu + MROC_DATA_OVERHEAD)
			return xerr(p, KEYS("network.mtu", "network.interfaces"),
				    "network.mtu (%u) is too small for the CONNECT_REQ that "
				    "announces %u port addresses (network.interfaces)", n->mtu, naddr);
	}
	for (uint32_t i = 0; n->address.family && i < n->peers.n; i++)
		if (n->peers.v[i].family != n->address.family)
			return xerr(p, KEYS("network.peers", "network.address"),
				    "%s is not of the family of network.address (%s)",
				    addr_str(&n->peers.v[i], buf, sizeof(buf)),
				    addr_str(&n->address, buf2, sizeof(buf2)));
	return 0;
}

static int check_transport(struct cparse *p, const struct mrocd_config *c)
{
	const typeof(c->transport) *t = &c->transport;

	if (t->rto_min_us > t->rto_init_us)
		return xerr(p, KEYS("transport.rto_min_us", "transport.rto_init_us"),
			    "transport.rto_min_us (%u) must not exceed transport.rto_init_us (%u)",
			    t->rto_min_us, t->rto_init_us);
	if ((uint64_t)t->rto_init_us > (uint64_t)t->rto_max_ms * 1000)
		return xerr(p, KEYS("transport.rto_init_us", "transport.rto_max_ms"),
			    "transport.rto_init_us (%u us) must not exceed transport.rto_max_ms "
			    "(%u ms)", t->rto_init_us, t->rto_max_ms);
	if (t->init_pwnd_pkts > t->max_pwnd_pkts)
		return xerr(p, KEYS("transport.init_pwnd_pkts", "transport.max_pwnd_pkts"),
			    "transport.init_pwnd_pkts (%u) must not exceed "
			    "transport.max_pwnd_pkts (%u)", t->init_pwnd_pkts, t->max_pwnd_pkts);
	if (t->keepalive_ms && t->keepalive_ms >= t->dead_peer_ms)
		return xerr(p, KEYS("transport.keepalive_ms", "transport.dead_peer_ms"),
			    "transport.keepalive_ms (%u) must be below transport.dead_peer_ms "
			    "(%u), or 0 for none", t->keepalive_ms, t->dead_peer_ms);
	return 0;
}

/* "aead" needs a key file it can read, safe from others, holding the sending key. */
static int check_security(struct cparse *p, const struct mrocd_config *c)
{
	const typeof(c->security) *s = &c->security;
	struct aead_keyset *ks;
	char kerr[300];
	int rc = 0;

	if (s->mode != MROC_SEC_AEAD)
		return 0;
	if (s->key_file[0] != '/')
		return xerr(p, KEYS("security.key_file", "security.mode"),
			    "security.mode \"aead\" needs security.key_file, an absolute path");
	ks = calloc(1, sizeof(*ks));
	if (!ks)
		return -ENOMEM;
	if (aead_keys_load(s->key_file, ks, kerr, sizeof(kerr)))
		rc = xerr(p, KEYS("security.key_file"), "%s", kerr);
	else if (s->key_id && !aead_keys_find(ks, s->key_id))
		rc = xerr(p, KEYS("security.key_id", "security.key_file"),
			  "security.key_id %u is not in %s", s->key_id, s->key_file);
	explicit_bzero(ks, sizeof(*ks));
	free(ks);
	return rc;
}

int config_check_all(struct cparse *p, const struct mrocd_config *c)
{
	const typeof(c->limits) *l = &c->limits;
	struct engine_config ec;
	const char *why = "?";
	int rc;

	if (!strcmp(c->daemon.control_socket, c->daemon.admin_socket))
		return xerr(p, KEYS("daemon.admin_socket", "daemon.control_socket"),
			    "daemon.admin_socket and daemon.control_socket must differ (\"%s\")",
			    c->daemon.control_socket);
	if (l->max_qps_per_client > l->max_qps)
		return xerr(p, KEYS("limits.max_qps_per_client", "limits.max_qps"),
			    "limits.max_qps_per_client (%u) must not exceed limits.max_qps (%u)",
			    l->max_qps_per_client, l->max_qps);
	if (l->max_mrs_per_client > l->max_mrs)
		return xerr(p, KEYS("limits.max_mrs_per_client", "limits.max_mrs"),
			    "limits.max_mrs_per_client (%u) must not exceed limits.max_mrs (%u)",
			    l->max_mrs_per_client, l->max_mrs);
	rc = check_network(p, c);
	rc = rc ? rc : check_transport(p, c);
	rc = rc ? rc : check_security(p, c);
	if (rc)
		return rc;
	/* The engine's own rules, should they ever be stricter than ours. */
	config_engine(c, &ec);
	if (engine_config_check(&ec, &why))
		return xerr(p, KEYS(engine_why_key(why)), "refused by the engine: %s", why);
	return 0;
}
