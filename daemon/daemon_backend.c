// SPDX-License-Identifier: MIT
/*
 * mrocd's backend at start-up (daemon.c calls mrocd_start_backend): AF_XDP on the
 * configured interfaces with the XDP program and its filters (our MACs,
 * addresses and VLANs, followed as they change), or the UDP fallback.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>


#include "afxdp.h"
#include "ctl.h"
#include "log.h"
#include "netlink.h"
#include "udp_backend.h"
#include "xdp_prog.h"

#include "daemon_priv.h"

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

void mrocd_detach_all(struct mrocd *d)
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
int mrocd_xdp_filter(struct mrocd *d, uint8_t (*macs)[6])
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
	err = mrocd_xdp_filter(d, NULL);
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
	err = mrocd_xdp_filter(d, macs);
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
	mrocd_detach_all(d);
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

int mrocd_start_backend(struct mrocd *d)
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
