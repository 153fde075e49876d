// SPDX-License-Identifier: MIT
/* mrocd start-up, admin requests, reload and shutdown (see daemon.h). */
#include <errno.h>
#include <grp.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "afxdp.h"
#include "clients.h"
#include "ctl.h"
#include "daemon.h"
#include "engine.h"
#include "frame.h"
#include "links.h"
#include "log.h"
#include "mroc_util.h"
#include "netlink.h"
#include "peers.h"
#include "portaddr.h"
#include "status.h"
#include "steer.h"
#include "udp_backend.h"
#include "worker.h"
#include "xdp_prog.h"

#include "daemon_priv.h"

/* ---- worker callbacks ---------------------------------------------------------- */

static void on_cqe(void *ctx, const struct engine_cqe *c, uint64_t now)
{
	struct mrocd_wk *w = ctx;

	if ((w->links && links_on_cqe(w->links, c, now)) || clients_on_cqe(w->clients, c, now))
		return;
	pr_debug("completion for unowned QP %u (opcode %u status %u)", c->qpn, c->opcode, c->status);
}

static uint64_t min_ns(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t on_tick(void *ctx, uint64_t now)
{
	struct mrocd_wk *w = ctx;
	uint64_t next;

	next = min_ns(clients_tick(w->clients, now), peers_sweep(w->peers, now));
	return w->links ? min_ns(next, links_tick(w->links, now)) : next;
}

static int on_poll(void *ctx, uint64_t now)
{
	return clients_poll(((struct mrocd_wk *)ctx)->clients, now);
}

static int extra_fds(void *ctx, int *fds, int max)
{
	return clients_fds(((struct mrocd_wk *)ctx)->clients, fds, max);
}

static bool on_idle(void *ctx, uint64_t now)
{
	return clients_idle(((struct mrocd_wk *)ctx)->clients, now);
}

static bool may_sleep(void *ctx)
{
	return clients_may_sleep(((struct mrocd_wk *)ctx)->clients);
}

static void fd_ready(void *ctx, int i)
{
	clients_fd_ready(((struct mrocd_wk *)ctx)->clients, i);
}

static void on_flush(void *ctx)
{
	clients_flush(((struct mrocd_wk *)ctx)->clients);
}

/* ---- start-up ---------------------------------------------------------------- */

static int check_mtu(struct mrocd *d, const struct nl_link *l)
{
	/* IPv6 + UDP is the larger encapsulation: 48 bytes; the ICRC ends every packet. */
	uint32_t need = d->cfg.network.mtu + MROC_DATA_OVERHEAD + config_sec_overhead(&d->cfg) +
			FRAME_ICRC_LEN + 48;

	if (l->mtu && l->mtu < need) {
		pr_err("interface %s: MTU %u is below the %u bytes network.mtu %u needs", l->name,
		       l->mtu, need, d->cfg.network.mtu);
		return -EINVAL;
	}
	return 0;
}

static void detach_all(struct mrocd *d)
{
	if (d->addr_mon >= 0) {
		ctl_watch(d->ctl, -1, NULL);
		close(d->addr_mon);
		d->addr_mon = -1;
	}
	for (unsigned i = 0; i < d->nattached; i++)
		xdp_prog_detach(d->prog, d->attached[i]);
	d->nattached = 0;
	xdp_prog_close(d->prog);
	d->prog = NULL;
}

/*
 * The source address of every frame: network.address, or with several
 * ports the first interface's (the peer must see one address on every
 * port), or with one port whatever its routes prefer (family 0).
 */
static int frame_source(struct mrocd *d, int first_ifindex, struct mroc_addr *src)
{
	int err;

	*src = d->cfg.network.address;
	if (src->family || d->nattached < 2)
		return 0;
	err = nl_addr_first(d->wk[0].nl, first_ifindex, 0, src);
	if (err)
		snprintf(d->fallback_why, sizeof(d->fallback_why), "network.address is not set "
			 "and %s has no address to use on every port: %s",
			 d->cfg.network.interfaces.v[0].name, strerror(-err));
	else
		pr_info("network.address is not set: every port sends from %s's address",
			d->cfg.network.interfaces.v[0].name);
	return err;
}

/* A port's own address must be one of its interface's: the peers send to it there. */
static int check_port_addr(struct mrocd *d, unsigned i, int ifindex)
{
	const struct mrocd_iface *ifc = &d->cfg.network.interfaces.v[i];
	char a[MROC_ADDR_STRLEN];
	int err;

	if (!ifc->address.family)
		return 0;
	err = nl_addr_has(d->wk[0].nl, ifindex, &ifc->address);
	if (err)
		snprintf(d->fallback_why, sizeof(d->fallback_why),
			 "network.interfaces[%u].address %s is not an address of %s%s%s", i,
			 addr_str(&ifc->address, a, sizeof(a)), ifc->name,
			 err == -EADDRNOTAVAIL ? "" : ": ", err == -EADDRNOTAVAIL ? "" : strerror(-err));
	return err;
}

/*
 * Every unicast address of this host (this network namespace), by
 * getifaddrs: the destinations the XDP program lets MetaRoCE frames have.
 * Up to max; returns how many, or -errno.
 */
static int host_addrs(struct mroc_addr *out, unsigned max)
{
	struct ifaddrs *ifa, *i;
	unsigned n = 0;

	if (getifaddrs(&ifa))
		return -errno;
	for (i = ifa; i && n < max; i = i->ifa_next) {
		const struct sockaddr *sa = i->ifa_addr;

		if (!sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
			continue;
		out[n] = (struct mroc_addr){ .family = sa->sa_family };
		if (sa->sa_family == AF_INET)
			out[n].v4 = ((const struct sockaddr_in *)sa)->sin_addr;
		else
			out[n].v6 = ((const struct sockaddr_in6 *)sa)->sin6_addr;
		n++;
	}
	freeifaddrs(ifa);
	return (int)n;
}

/*
 * The VLAN ids of this host's VLAN devices on each attached interface: the
 * tags frames to our port may carry there (mroc_xdp.h, drop_not_our_vlan).
 * Asked on a netlink socket of its own: the control thread calls this
 * while the workers use theirs.  Taken at start and with the addresses: a
 * VLAN device without an address has nothing of ours to reach.
 */
static int xdp_vlans(struct mrocd *d)
{
	static uint16_t vids[MROC_XDP_MAX_VLANS];
	struct if_nameindex *ifs, *i;
	struct nl *nl;
	int err;

	err = nl_open(&nl);
	if (err)
		return err;
	ifs = if_nameindex();
	if (!ifs) {
		nl_close(nl);
		return -errno;
	}
	for (unsigned a = 0; !err && a < d->nattached; a++) {
		unsigned n = 0;

		for (i = ifs; i->if_index && n < MROC_XDP_MAX_VLANS; i++) {
			struct nl_link l;

			if (!nl_link_get(nl, (int)i->if_index, NULL, &l) && l.vlan_id &&
			    l.link_ifindex == d->attached[a])
				vids[n++] = l.vlan_id;
		}
		err = xdp_prog_set_vlans(d->prog, d->attached[a], vids, n);
	}
	if_freenameindex(ifs);
	nl_close(nl);
	return err;
}

/*
 * docs/PROTOCOL.md 11a: only frames to this host reach the engine.  The XDP
 * program drops (and counts) frames to our port that are not to an
 * interface's own MAC or not to one of the host's addresses: another host's
 * (a promiscuous bridge or macvlan port), broadcast, multicast.  The
 * addresses first, then the MACs that turn the check on.  Addresses added
 * or removed later are taken when netlink tells (addrs_changed), and at
 * every reload.
 */
static int xdp_filter(struct mrocd *d, uint8_t (*macs)[6])
{
	static struct mroc_addr addr[MROC_XDP_MAX_ADDRS];
	int n = host_addrs(addr, MROC_XDP_MAX_ADDRS), err;

	if (n < 0)
		return n;
	err = xdp_prog_set_addrs(d->prog, addr, (unsigned)n);
	/* The VLANs before the MACs turn the checks on. */
	if (!err)
		err = xdp_vlans(d);
	for (unsigned i = 0; !err && macs && i < d->nattached; i++)
		err = xdp_prog_set_mac(d->prog, d->attached[i], macs[i]);
	return err;
}

/* An address came or went on some interface (netlink, control thread): the XDP program follows. */
static void addrs_changed(void *ctx)
{
	struct mrocd *d = ctx;
	int err;

	if (nl_monitor_drain(d->addr_mon) <= 0 || !d->prog)
		return;
	err = xdp_filter(d, NULL);
	if (err)
		pr_warn_rl("our addresses changed, and setting them in the XDP program failed: %s; "
			   "frames to new ones drop until the next change or reload",
			   strerror(-err));
	else
		pr_debug("our addresses changed: the XDP program has them");
}

static int start_afxdp(struct mrocd *d)
{
	const struct mrocd_iface_list *ifs = &d->cfg.network.interfaces;
	struct xdp_prog_opts po = {
		.sz = sizeof(po),
		.udp_port = d->cfg.network.udp_port,
	};
	struct afxdp_cfg ac = {
		.frame_size = d->cfg.network.frame_size,
		.nframes = d->cfg.network.umem_frames,
		.ring_size = d->cfg.network.ring_size,
		.zero_copy = d->cfg.network.zero_copy == MROCD_ZC_ON ? AFXDP_ZC_ON :
			     d->cfg.network.zero_copy == MROCD_ZC_OFF ? AFXDP_ZC_OFF : AFXDP_ZC_AUTO,
		.udp_port = d->cfg.network.udp_port,
		.port_dead_ns = (uint64_t)d->cfg.network.port_dead_ms * 1000000ULL,
	};
	uint8_t macs[MROCD_MAX_IFACES][6];
	enum xdp_prog_mode mode = d->cfg.network.xdp_mode == MROCD_XDP_NATIVE ? XDP_PROG_MODE_NATIVE :
				  d->cfg.network.xdp_mode == MROCD_XDP_GENERIC ? XDP_PROG_MODE_GENERIC :
										  XDP_PROG_MODE_AUTO;
	int err;

	if (!ifs->n) {
		snprintf(d->fallback_why, sizeof(d->fallback_why), "no network.interfaces");
		return -EINVAL;
	}
	err = xdp_prog_open(&d->prog, &po);
	if (err) {
		snprintf(d->fallback_why, sizeof(d->fallback_why), "loading the XDP program: %s",
			 strerror(-err));
		return err;
	}
	for (uint32_t i = 0; i < ifs->n; i++) {
		struct nl_link l;

		err = nl_link_get(d->wk[0].nl, 0, ifs->v[i].name, &l);
		if (!err)
			err = check_mtu(d, &l);
		if (!err)
			err = xdp_prog_attach(d->prog, l.ifindex, mode);
		if (err) {
			snprintf(d->fallback_why, sizeof(d->fallback_why), "XDP on %s: %s",
				 ifs->v[i].name, strerror(-err));
			goto fail;
		}
		memcpy(macs[d->nattached], l.mac, sizeof(l.mac));
		d->attached[d->nattached++] = l.ifindex;
		if (!d->ecfg.link_rate_bps && l.speed_mbps)
			d->ecfg.link_rate_bps = (uint64_t)l.speed_mbps * 1000000ULL;
		if (ac.nifs + ifs->v[i].nqueues > AFXDP_MAX_SOCKS) {
			snprintf(d->fallback_why, sizeof(d->fallback_why),
				 "more than %d (interface, queue) sockets, at %s", AFXDP_MAX_SOCKS,
				 ifs->v[i].name);
			err = -E2BIG;
			goto fail;
		}
		err = check_port_addr(d, i, l.ifindex);
		if (err)
			goto fail;
		for (uint32_t q = 0; q < ifs->v[i].nqueues; q++) {
			snprintf(ac.ifs[ac.nifs].name, sizeof(ac.ifs[ac.nifs].name), "%s",
				 ifs->v[i].name);
			ac.ifs[ac.nifs].addr = ifs->v[i].address;
			ac.ifs[ac.nifs++].queue = ifs->v[i].queues[q];
		}
	}
	/* Opened before the addresses are read, so that no change falls between. */
	err = nl_addr_monitor_open(&d->addr_mon);
	if (err) {
		d->addr_mon = -1;
		pr_warn("no address change notifications (%s): frames to addresses added later "
			"are dropped until a reload (SIGHUP)", strerror(-err));
	} else {
		ctl_watch(d->ctl, d->addr_mon, addrs_changed);
	}
	err = xdp_filter(d, macs);
	if (err) {
		snprintf(d->fallback_why, sizeof(d->fallback_why),
			 "our addresses into the XDP program: %s", strerror(-err));
		goto fail;
	}
	ac.prog = d->prog;
	ac.nl = d->wk[0].nl;
	ac.max_peers = PEER_SLOTS;
	err = frame_source(d, d->attached[0], &ac.src);
	if (err)
		goto fail;
	d->src = ac.src;
	err = afxdp_create(&ac, d->wk[0].peers, &d->wk[0].be, d->fallback_why,
			   sizeof(d->fallback_why));
	if (err)
		goto fail;
	d->nsocks = ac.nifs;
	/* A packet leaves by port sport % ports: a QP's paths start on every port. */
	d->ecfg.sport_classes = (uint16_t)ifs->n;
	return 0;
fail:
	detach_all(d);
	return err;
}

static int start_udp(struct mrocd *d)
{
	struct udp_backend_cfg uc;
	int err;

	udp_backend_cfg_default(&uc);
	uc.local = d->cfg.network.address;
	uc.udp_port = d->cfg.network.udp_port;
	uc.sport_min = d->cfg.network.sport_min;
	uc.sport_max = d->cfg.network.sport_max;
	uc.buf_size = d->cfg.network.mtu + MROC_DATA_OVERHEAD + config_sec_overhead(&d->cfg);
	err = udp_backend_create(&uc, d->wk[0].peers, &d->wk[0].be);
	if (err) {
		pr_err("UDP backend: %s", strerror(-err));
		return err;
	}
	/* The engine must pick source ports that have a socket. */
	udp_backend_sports(d->wk[0].be, &d->ecfg.sport_min, &d->ecfg.sport_max);
	return 0;
}

static int start_backend(struct mrocd *d)
{
	enum mrocd_backend want = d->cfg.network.backend;
	int err;

	if (want != MROCD_BACKEND_UDP) {
		err = start_afxdp(d);
		if (!err)
			return 0;
		if (want == MROCD_BACKEND_AF_XDP) {
			pr_err("AF_XDP backend: %s", d->fallback_why);
			return err;
		}
		d->fallback = true;
		pr_warn("AF_XDP unavailable (%s): falling back to UDP sockets", d->fallback_why);
	}
	return start_udp(d);
}

static int socket_gid(const char *key, const char *group, gid_t *gid)
{
	struct group *g;

	*gid = (gid_t)-1;
	if (!group[0])
		return 0;
	g = getgrnam(group);
	if (!g) {
		pr_err("%s: no group '%s'", key, group);
		return -ENOENT;
	}
	*gid = g->gr_gid;
	return 0;
}

/* Parent directory of a socket path, made if missing (RuntimeDirectory does it under systemd). */
static void make_parent(const char *path)
{
	char dir[MROCD_SOCKPATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		mkdir(dir, 0755);
	}
}

static void reload(void *ctx);
static void clients_limits_of(const struct mrocd_config *c, struct clients_limits *l);
static int apply_worker_side(void *arg, uint64_t now);

/*
 * The client socket's callbacks: the clients module exists once the engine
 * does.  A new client goes to the worker with the fewest clients: all its
 * QPs and regions live there.
 */
static void *cl_open(void *ctx, int fd, const struct ucred *cred, bool admin)
{
	struct mrocd *d = ctx;
	struct mrocd_wk *w = &d->wk[0];
	void *cl;

	for (unsigned k = 1; k < d->nworkers; k++)
		if (d->wk[k].nclients < w->nclients)
			w = &d->wk[k];
	cl = clients_open(w->clients, fd, cred, admin);
	if (cl)
		w->nclients++;
	return cl;
}

static bool cl_msg(void *ctx, void *client, const void *msg, size_t len, int *fds, int nfds,
		   void *reply, size_t *reply_len)
{
	return clients_msg(ctx, client, msg, len, fds, nfds, reply, reply_len);
}

static void cl_close(void *ctx, void *client)
{
	struct mrocd *d = ctx;

	d->wk[clients_worker(client)].nclients--;
	clients_close(ctx, client);
}

static int start_ctl(struct mrocd *d)
{
	struct ctl_cfg cc = {
		.admin_path = d->cfg.daemon.admin_socket[0] ? d->cfg.daemon.admin_socket : NULL,
		.mode = d->cfg.daemon.socket_mode,
		.handle = admin_handle,
		.reload = reload,
		.client_path = d->cfg.daemon.control_socket[0] ? d->cfg.daemon.control_socket : NULL,
		.client_open = cl_open,
		.client_msg = cl_msg,
		.client_close = cl_close,
		.ctx = d,
	};
	uint64_t usec = 0;
	int err;

	err = socket_gid("daemon.socket_group", d->cfg.daemon.socket_group, &cc.gid);
	if (!err)
		err = socket_gid("daemon.admin_group", d->cfg.daemon.admin_group, &cc.admin_gid);
	if (err)
		return err;
	if (sd_watchdog_enabled(0, &usec) > 0)
		cc.watchdog_usec = usec;
	if (cc.admin_path)
		make_parent(cc.admin_path);
	if (cc.client_path)
		make_parent(cc.client_path);
	return ctl_create(&cc, &d->ctl);
}

/*
 * Every client QP keeps one file open here (its completion eventfd), so
 * thousands of QPs need more than the usual soft limit of 1,024.  We never
 * use select(), so the hard limit is safe to take.
 */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		pr_warn("cannot raise the open file limit: %s", strerror(errno));
}

/*
 * daemon.workers, or one per socket capped by the CPUs the workers may use;
 * never more than the sockets, one with the UDP backend.
 */
static unsigned workers_wanted(const struct mrocd *d)
{
	unsigned n = d->cfg.daemon.workers, cpus;

	if (!d->nsocks) {
		if (n > 1)
			pr_info("daemon.workers = %u: the UDP backend runs one worker", n);
		return 1;
	}
	if (!n) {
		long online = sysconf(_SC_NPROCESSORS_ONLN);

		cpus = d->cfg.daemon.cpu_affinity.n ? d->cfg.daemon.cpu_affinity.n :
		       online > 0 ? (unsigned)online : 1;
		n = d->nsocks < cpus ? d->nsocks : cpus;
	}
	if (n > d->nsocks) {
		pr_info("daemon.workers = %u: only %u socket(s), so %u worker(s)", n, d->nsocks,
			d->nsocks);
		n = d->nsocks;
	}
	return n ? n : 1;
}

/* Workers 1..n-1's netlink sockets, peer tables and backend views (worker 0's exist). */
static int split_workers(struct mrocd *d)
{
	struct backend *bes[MROCD_MAX_WORKERS];
	struct peers *peers[MROCD_MAX_WORKERS];
	struct nl *nls[MROCD_MAX_WORKERS];
	int err;

	for (unsigned k = 1; k < d->nworkers; k++) {
		err = nl_open(&d->wk[k].nl);
		if (err) {
			pr_err("netlink: %s", strerror(-err));
			return err;
		}
		d->wk[k].peers = peers_create(PEER_SLOTS);
		if (!d->wk[k].peers)
			return -ENOMEM;
	}
	for (unsigned k = 0; k < d->nworkers; k++) {
		peers[k] = d->wk[k].peers;
		nls[k] = d->wk[k].nl;
	}
	err = steer_create(d->nworkers, &d->steer);
	if (err)
		return err;
	err = afxdp_add_views(d->wk[0].be, d->nworkers, peers, nls, steer_owner, d->steer, bes,
			      d->fallback_why, sizeof(d->fallback_why));
	if (err) {
		pr_err("AF_XDP workers: %s", d->fallback_why);
		return err;
	}
	for (unsigned k = 1; k < d->nworkers; k++)
		d->wk[k].be = bes[k];
	return 0;
}

/*
 * security.mode "aead": the keys (config_load checked the file; it may have changed
 * since), and a sealer per worker: its own contexts, sender id and counter.
 */
static int start_aead(struct mrocd *d)
{
	const typeof(d->cfg.security) *s = &d->cfg.security;
	struct aead_keyset *ks;
	char err[300];
	int rc;

	if (s->mode != MROC_SEC_AEAD)
		return 0;
	ks = calloc(1, sizeof(*ks));
	if (!ks)
		return -ENOMEM;
	rc = aead_keys_load(s->key_file, ks, err, sizeof(err));
	if (rc)
		pr_err("security.key_file: %s", err);
	for (unsigned k = 0; !rc && k < d->nworkers; k++) {
		if ((rc = aead_create(ks, s->key_id, &d->wk[k].aead)))
			pr_err("security: AES-GCM with key %u: %s", s->key_id, strerror(-rc));
		else	/* a replayed CONNECT_REQ may reach any worker */
			aead_share_replay(d->wk[k].aead, d->wk[0].aead);
	}
	explicit_bzero(ks, sizeof(*ks));
	free(ks);
	return rc;
}

/*
 * What every CONNECT_REQ/REP announces (portaddr.h): the ports' own
 * addresses, by port index, on AF_XDP; none on UDP, whose sockets send from
 * network.address only.  Even none tells the peer we take packets from its
 * port addresses.
 */
static int announce_ports(struct mrocd *d)
{
	const struct mrocd_iface_list *ifs = &d->cfg.network.interfaces;
	struct mroc_addr addr[PORTADDR_MAX] = { 0 };
	unsigned n = d->nsocks ? ifs->n : 0;
	int len;

	for (unsigned i = 0; i < n && i < PORTADDR_MAX; i++)
		if (!addr_eq(&ifs->v[i].address, &d->src))	/* the primary: known already */
			addr[i] = ifs->v[i].address;
	len = portaddr_encode(addr, n < PORTADDR_MAX ? n : PORTADDR_MAX, d->ecfg.cm_ext,
			      sizeof(d->ecfg.cm_ext));
	if (len < 0)
		return len;
	d->ecfg.cm_ext_len = (uint16_t)len;
	return 0;
}

static void on_cm_ext(void *ctx, uint32_t peer, const uint8_t *ext, size_t len)
{
	peers_announce(((struct mrocd_wk *)ctx)->peers, peer, ext, len);
}

/* Worker k's engine (its class of QPNs), clients and, on worker 0, control links. */
static int make_worker_state(struct mrocd *d, unsigned k)
{
	struct mrocd_wk *w = &d->wk[k];
	struct engine_config ec = d->ecfg;
	struct clients_limits lim;

	ec.qpn_mod = d->nworkers;
	ec.qpn_rem = k;
	/* A lone packet leaves by this worker's own sockets' ports (no hand-off, issue #26). */
	if (d->nworkers > 1 && d->cfg.daemon.lone_home_port)
		afxdp_home_classes(w->be, &ec.home_mod, &ec.home_mask);
	ec.seed += k * 0x9e3779b97f4a7c15ULL;
	w->eng = engine_create(&ec);
	if (!w->eng) {
		pr_err("engine: bad parameters");
		return -EINVAL;
	}
	peers_set_engine(w->peers, w->eng);
	engine_set_cm_ext_hook(w->eng, on_cm_ext, w);
	if (!k) {
		w->links = links_create(w->eng, w->peers, d->cfg.network.peers.v,
					d->cfg.network.peers.n);
		if (!w->links)
			return -ENOMEM;
	}
	clients_limits_of(&d->cfg, &lim);
	w->clients = clients_create(w->eng, w->peers, d->cfg.limits.max_qps, &lim,
				    k ? d->wk[0].clients : NULL);
	return w->clients ? 0 : -ENOMEM;
}

static int start_worker(struct mrocd *d, unsigned k)
{
	struct mrocd_wk *w = &d->wk[k];
	const struct mrocd_cpu_list *cpus = &d->cfg.daemon.cpu_affinity;
	struct worker_cfg wc = {
		.eng = w->eng,
		.be = w->be,
		.index = k,
		.cpu = cpus->n ? cpus->v[k % cpus->n] : -1,
		.busy_poll_us = d->cfg.daemon.busy_poll_us,
		.allow_loopback = d->cfg.network.allow_loopback,
		.aead = w->aead,
		.on_cqe = on_cqe,
		.on_tick = on_tick,
		.on_poll = on_poll,
		.extra_fds = extra_fds,
		.on_idle = on_idle,
		.may_sleep = may_sleep,
		.fd_ready = fd_ready,
		.on_flush = on_flush,
		.ctx = w,
	};
	int err = worker_start(&wc, &w->worker);

	if (err) {
		pr_err("worker thread %u: %s", k, strerror(-err));
		return err;
	}
	clients_set_worker(w->clients, w->worker, k, d->steer);
	return 0;
}

int mrocd_start(const struct mrocd_config *cfg, const char *cfg_path, struct mrocd **out)
{
	struct mrocd *d = calloc(1, sizeof(*d));
	int err;

	if (!d)
		return -ENOMEM;
	d->cfg = *cfg;
	snprintf(d->cfg_path, sizeof(d->cfg_path), "%s", cfg_path);
	d->started_ns = mrocd_now_ns();
	d->addr_mon = -1;
	d->nworkers = 1;
	for (unsigned k = 0; k < MROCD_MAX_WORKERS; k++) {
		d->wk[k].d = d;
		d->wk[k].idx = k;
	}
	log_set_level(cfg->daemon.log_level);
	xdp_prog_init_logging();
	raise_nofile();
	/* The control loop blocks signals: do it before any thread exists. */
	err = start_ctl(d);
	if (err)
		goto fail;
	err = config_engine(cfg, &d->ecfg);
	if (err)
		goto fail;
	if (getrandom(&d->ecfg.seed, sizeof(d->ecfg.seed), 0) != sizeof(d->ecfg.seed))
		d->ecfg.seed ^= mrocd_now_ns();
	/* "token" keys must be unpredictable to whoever saw other connections' keys. */
	if (getrandom(d->ecfg.sec_secret, sizeof(d->ecfg.sec_secret), 0) !=
	    sizeof(d->ecfg.sec_secret)) {
		err = -EIO;
		goto fail;
	}
	err = nl_open(&d->wk[0].nl);
	if (err) {
		pr_err("netlink: %s", strerror(-err));
		goto fail;
	}
	d->wk[0].peers = peers_create(PEER_SLOTS);
	if (!d->wk[0].peers) {
		err = -ENOMEM;
		goto fail;
	}
	err = start_backend(d);
	if (err)
		goto fail;
	err = announce_ports(d);
	if (err)
		goto fail;
	d->nworkers = workers_wanted(d);
	if (d->nworkers > 1) {
		err = split_workers(d);
		if (err)
			goto fail;
	}
	for (unsigned k = 0; k < d->nworkers; k++) {
		err = make_worker_state(d, k);
		if (err)
			goto fail;
	}
	err = start_aead(d);
	if (err)
		goto fail;
	/* No worker thread yet: the worker's side of the runtime values is set from here. */
	for (unsigned k = 0; k < d->nworkers; k++)
		apply_worker_side(&d->wk[k], 0);
	if (d->steer)
		(void)steer_listen(d->steer, MROCD_SERVICE_CONTROL, 0);
	for (unsigned k = 0; k < d->nworkers; k++) {
		err = start_worker(d, k);
		if (err)
			goto fail;
	}
	pr_info("mrocd %s running: backend %s%s, UDP port %u, %u worker(s), %u peer(s) configured, "
		"security %s", MROCD_VERSION, d->wk[0].be->ops->describe(d->wk[0].be),
		d->fallback ? " (fallback)" : "", cfg->network.udp_port, d->nworkers,
		cfg->network.peers.n,
		config_enum_name(config_key_find("security.mode"), (int)cfg->security.mode));
	sd_notifyf(0, "READY=1\nSTATUS=backend %s%s, port %u, %u worker(s)",
		   d->wk[0].be->ops->describe(d->wk[0].be), d->fallback ? " (fallback)" : "",
		   cfg->network.udp_port, d->nworkers);
	*out = d;
	return 0;
fail:
	mrocd_stop(d);
	return err;
}

int mrocd_run(struct mrocd *d)
{
	int sig = ctl_run(d->ctl);

	pr_info("signal %d: stopping", sig);
	return 0;
}

/* ---- shutdown ---------------------------------------------------------------- */

static int close_all(void *arg, uint64_t now)
{
	struct mrocd_wk *w = arg;
	uint32_t qpns[256];
	int n = engine_qp_list(w->eng, qpns, 256);

	if (w->links)
		links_close_all(w->links, now);
	for (int i = 0; i < n && i < 256; i++)
		engine_qp_disconnect(w->eng, qpns[i], now);
	return 0;
}

static int count_closing(void *arg, uint64_t now)
{
	struct mrocd_wk *w = arg;
	uint32_t qpns[256];
	int n = engine_qp_list(w->eng, qpns, 256), closing = 0;

	(void)now;
	for (int i = 0; i < n && i < 256; i++) {
		struct engine_qp_info qi;

		if (!engine_qp_info(w->eng, qpns[i], &qi) && qi.state == ENGINE_QPS_CLOSING)
			closing++;
	}
	return closing;
}

static int closing_total(struct mrocd *d)
{
	int n = 0;

	for (unsigned k = 0; k < d->nworkers; k++)
		if (d->wk[k].worker)
			n += worker_call(d->wk[k].worker, count_closing, &d->wk[k]);
	return n;
}

void mrocd_stop(struct mrocd *d)
{
	bool running = false;

	if (!d)
		return;
	sd_notify(0, "STOPPING=1\nSTATUS=stopping");
	for (unsigned k = 0; k < d->nworkers; k++)
		running |= d->wk[k].worker != NULL;
	/* Clients first: their clean-up runs on the workers. */
	if (d->ctl && running)
		ctl_close_clients(d->ctl);
	if (running) {
		/* Tell peers (DISCONNECT), and give the answers a moment to come back. */
		for (unsigned k = 0; k < d->nworkers; k++)
			if (d->wk[k].worker)
				worker_call(d->wk[k].worker, close_all, &d->wk[k]);
		for (int i = 0; i < 25 && closing_total(d) > 0; i++)
			usleep(20 * 1000);
		for (unsigned k = 0; k < d->nworkers; k++)
			worker_stop(d->wk[k].worker);
	}
	/* Backwards: worker 0's clients, backend view and peers are the others' base. */
	for (unsigned k = d->nworkers; k-- > 0;) {
		struct mrocd_wk *w = &d->wk[k];

		links_destroy(w->links);
		clients_destroy(w->clients);
		engine_destroy(w->eng);
		aead_destroy(w->aead);
		if (w->be)
			w->be->ops->destroy(w->be);
	}
	if (d->prog)
		detach_all(d);
	for (unsigned k = d->nworkers; k-- > 0;) {
		peers_destroy(d->wk[k].peers);
		nl_close(d->wk[k].nl);
	}
	steer_destroy(d->steer);
	ctl_destroy(d->ctl);
	free(d);
}

/* ---- reload -------------------------------------------------------------------- */

/*
 * The [reload] keys (config.c's table) reach their owners in one place,
 * the same at start and at every reload, never from a copy made at start:
 *   daemon.log_level              log_set_level (here)
 *   limits.*, transport.paths/mode  clients_set_limits (control thread: here)
 *   transport.paths/mode          links_set_qp_defaults (worker thread)
 *   daemon.busy_poll_us           worker_set_busy_poll (each worker's thread)
 *   network.allow_loopback        worker_set_allow_loopback (each worker's thread)
 * The worker's part runs through worker_call once the worker runs (before,
 * directly): the control thread waits meanwhile, so d->cfg is not written
 * while the worker reads it.
 */
static void clients_limits_of(const struct mrocd_config *c, struct clients_limits *l)
{
	*l = (struct clients_limits){
		.max_clients = c->limits.max_clients,
		.max_per_uid = c->limits.max_clients_per_uid,
		.allow_loopback = c->network.allow_loopback,
		.max_qps = c->limits.max_qps_per_client,
		.max_mrs = c->limits.max_mrs_per_client,
		.max_mr_bytes = c->limits.max_mr_bytes_per_client,
		.max_locked_bytes = c->limits.max_locked_bytes_per_client,
		.max_sq_depth = c->limits.max_sq_depth,
		.max_rq_depth = c->limits.max_rq_depth,
		.default_paths = c->transport.paths,
		.default_mode = (uint8_t)c->transport.mode,
		.uid_share = c->limits.uid_share_percent,
		.admin_reserve = c->limits.admin_reserve_percent,
		.total_mrs = c->limits.max_mrs,
	};
}

static int apply_worker_side(void *arg, uint64_t now)
{
	struct mrocd_wk *w = arg;
	struct mrocd *d = w->d;

	if (w->links)
		links_set_qp_defaults(w->links, (uint8_t)d->cfg.transport.paths,
				      (uint8_t)d->cfg.transport.mode);
	if (w->worker) {
		worker_set_busy_poll(w->worker, d->cfg.daemon.busy_poll_us);
		worker_set_allow_loopback(w->worker, d->cfg.network.allow_loopback);
	}
	(void)now;
	return 0;
}

static void apply_runtime(struct mrocd *d)
{
	struct clients_limits lim;

	log_set_level(d->cfg.daemon.log_level);
	clients_limits_of(&d->cfg, &lim);
	clients_set_limits(d->wk[0].clients, &lim);
	for (unsigned k = 0; k < d->nworkers; k++)
		worker_call(d->wk[k].worker, apply_worker_side, &d->wk[k]);
}

/* ", N what (a b)" into why at *off: the names as far as they fit. */
static void say_keys(char *why, size_t n, size_t *off, const char *what, const char **names,
		     size_t k)
{
	int w;

	w = snprintf(why + *off, n - *off, "%s%zu %s", *off ? ", " : "", k, what);
	for (size_t i = 0; w > 0 && i < k && i < 64; i++) {
		*off += (size_t)w < n - *off ? (size_t)w : n - *off - 1;
		w = snprintf(why + *off, n - *off, "%s%s%s", i ? " " : " (", names[i],
			     i + 1 == k || i + 1 == 64 ? ")" : "");
	}
	if (w > 0)
		*off += (size_t)w < n - *off ? (size_t)w : n - *off - 1;
}

int mrocd_reload(struct mrocd *d, char *why, size_t n)
{
	struct mrocd_config next;
	const char *names[64];
	size_t k, off = 0;

	/* systemd shows "reloading" until READY=1 (MONOTONIC_USEC: which reload this is). */
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading %s",
		   (unsigned long long)(mono_ns() / 1000), d->cfg_path);
	if (config_load(d->cfg_path, &next, why, n)) {
		pr_err("reload failed, the running configuration stays: %s", why);
		sd_notifyf(0, "READY=1\nSTATUS=reload failed, the running configuration stays: %s",
			   why);
		return -EINVAL;
	}
	k = config_diff_reload(&d->cfg, &next, names, 64);
	for (size_t i = 0; i < k && i < 64; i++)
		pr_info("reload: %s applied", names[i]);
	say_keys(why, n, &off, "applied", names, k);
	k = config_diff_restart(&d->cfg, &next, names, 64);
	for (size_t i = 0; i < k && i < 64; i++)
		pr_warn("reload: %s changed: needs a restart to take effect", names[i]);
	say_keys(why, n, &off, "need a restart", names, k);
	config_apply_reload(&d->cfg, &next);
	apply_runtime(d);
	if (d->prog && xdp_filter(d, NULL))
		pr_warn("reload: our addresses into the XDP program failed: frames to new ones drop");
	sd_notifyf(0, "READY=1\nSTATUS=configuration reloaded: %s", why);
	return 0;
}

static void reload(void *ctx)
{
	char why[512];

	mrocd_reload(ctx, why, sizeof(why));
}
