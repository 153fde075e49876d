// SPDX-License-Identifier: MIT
/*
 * The AF_XDP backend's set-up (see afxdp.h): the UMEM, a socket per
 * (interface, queue) bound copy or zero-copy, the ports, and with workers a
 * view per worker.  The data path and the teardown are afxdp.c's.
 */
#include <errno.h>
#include <net/if.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <xdp/xsk.h>

#include "afxdp_loop.h"
#include "afxdp_state.h"
#include "log.h"
#include "mroc_util.h"
#include "xdp_prog.h"

#define BUSY_TRIES	100
#define BUSY_WAIT_US	20000

/*
 * The first socket owns the UMEM and its bind flags say copy or zero-copy
 * and need_wakeup.  Every later one is an XDP_SHARED_UMEM bind, which the
 * kernel refuses (EINVAL) when it carries any of those flags: it inherits
 * the first socket's mode, and libxdp leaves its flags out.  It still gets
 * its own fill and completion rings, per (interface, queue).
 */
static int bind_sock(struct afxdp *x, const struct afxdp_cfg *cfg, unsigned s, bool zc)
{
	struct afxdp_sock *k = &x->socks[s];
	struct xsk_socket_config sc = {
		.rx_size = cfg->ring_size,
		.tx_size = cfg->ring_size,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = s ? 0 : XDP_USE_NEED_WAKEUP | (zc ? XDP_ZEROCOPY : XDP_COPY),
	};

	/* The first socket uses the UMEM's own fill/completion rings. */
	return xsk_socket__create_shared(&k->xsk, k->ifname, k->queue, x->umem, &k->rx, &k->tx,
					 &k->fq, &k->cq, &sc);
}

/* One bind, and for the first socket the zero-copy choice of cfg->zero_copy. */
static int bind_mode(struct afxdp *x, const struct afxdp_cfg *cfg, unsigned s)
{
	struct afxdp_sock *k = &x->socks[s];
	int err;

	if (s)
		return bind_sock(x, cfg, s, false);
	err = cfg->zero_copy == AFXDP_ZC_OFF ? -EOPNOTSUPP : bind_sock(x, cfg, s, true);
	if (err && err != -EBUSY && cfg->zero_copy != AFXDP_ZC_ON) {
		if (cfg->zero_copy == AFXDP_ZC_AUTO)
			pr_info("af_xdp: %s queue %u: no zero-copy (%s), using copy mode",
				k->ifname, k->queue, strerror(-err));
		err = bind_sock(x, cfg, s, false);
	}
	return err;
}

/* Fails with the reason, naming the interface and queue, in x->why. */
static int open_sock(struct afxdp *x, const struct afxdp_cfg *cfg, unsigned s)
{
	struct afxdp_sock *k = &x->socks[s];
	struct xdp_options opts;
	socklen_t len = sizeof(opts);
	int err;

	snprintf(k->ifname, sizeof(k->ifname), "%s", cfg->ifs[s].name);
	k->queue = cfg->ifs[s].queue;
	k->addr = cfg->ifs[s].addr;
	k->ifindex = (int)if_nametoindex(k->ifname);
	if (!k->ifindex) {
		snprintf(x->why, sizeof(x->why), "no interface %s", k->ifname);
		return -ENODEV;
	}
	/*
	 * EBUSY: the queue still has a socket, typically that of an mrocd that was
	 * just killed (the kernel releases it, and the stale program's socket map
	 * holding it, asynchronously).  A restart by systemd comes that fast, so
	 * wait a little for it rather than fail.
	 */
	for (int tries = 0;; tries++) {
		err = bind_mode(x, cfg, s);
		if (err != -EBUSY || tries >= BUSY_TRIES)
			break;
		if (!tries)
			pr_info("af_xdp: %s queue %u is busy (an earlier socket not released yet?): "
				"retrying for up to %d ms", k->ifname, k->queue,
				BUSY_TRIES * BUSY_WAIT_US / 1000);
		usleep(BUSY_WAIT_US);
	}
	if (err) {
		snprintf(x->why, sizeof(x->why), "socket on %s queue %u: %s%s", k->ifname,
			 k->queue, strerror(-err), err == -EINVAL ?
			 " (does the interface have that queue? see ethtool -l)" : "");
		return err;
	}
	if (!getsockopt(xsk_socket__fd(k->xsk), SOL_XDP, XDP_OPTIONS, &opts, &len))
		k->zero_copy = opts.flags & XDP_OPTIONS_ZEROCOPY;
	/*
	 * Copy mode sends a kick's descriptors in the system call: 32 a call
	 * by default, two or more calls for a worker's batch of 64.  A budget
	 * of the whole ring makes it one (issue #22: system calls are dear on
	 * a paravirtualised guest).  Older kernels keep 32.
	 */
	if (!k->zero_copy) {
		err = afxdp_set_tx_budget(xsk_socket__fd(k->xsk), cfg->ring_size);
		if (err)
			pr_debug("af_xdp: %s queue %u: TX budget %u: %s", k->ifname, k->queue,
				 cfg->ring_size, strerror(-err));
	}
	/* Returns the socket map slot. */
	err = xdp_prog_add_socket(x->prog, (uint32_t)k->ifindex, k->queue, xsk_socket__fd(k->xsk));
	if (err < 0) {
		snprintf(x->why, sizeof(x->why), "registering the socket of %s queue %u: %s",
			 k->ifname, k->queue, strerror(-err));
		return err;
	}
	k->registered = true;
	return 0;
}

/* The ports are the interfaces, in the order of their sockets; each one's sockets are consecutive. */
static int open_ports(struct afxdp *x)
{
	for (unsigned s = 0; s < x->nsocks; s++) {
		unsigned last = x->nports - (x->nports > 0);
		struct afxdp_port *port = &x->ports[last];
		struct egress_port *pc = &x->port_cfg[last];

		if (!x->nports || pc->ifindex != x->socks[s].ifindex) {
			if (x->nports == EGRESS_MAX_PORTS) {
				snprintf(x->why, sizeof(x->why), "more than %d interfaces",
					 EGRESS_MAX_PORTS);
				return -E2BIG;
			}
			port = &x->ports[x->nports];
			pc = &x->port_cfg[x->nports];
			x->nports++;
			pc->ifindex = x->socks[s].ifindex;
			pc->addr = x->socks[s].addr;
			memcpy(pc->ifname, x->socks[s].ifname, sizeof(pc->ifname));
			port->first = s;
		} else if (port->first + port->nsocks != s) {
			snprintf(x->why, sizeof(x->why), "the queues of %s are not listed together",
				 pc->ifname);
			return -EINVAL;
		}
		port->nsocks++;
		x->sock_port[s] = (uint8_t)(x->nports - 1);
	}
	return 0;
}

/* A view's own ports and next hops (every view sends out of every port): its egress. */
static int open_view_io(struct afxdp *x)
{
	struct egress_cfg ec = {
		.ports = x->port_cfg,
		.nports = x->nports,
		.nl = x->nl,
		.peers = x->b.peers,
		.max_peers = x->max_peers,
		.src = x->src,
		.port_dead_ns = x->port_dead_ns,
		.mute = x->idx != 0,	/* the first view speaks for all */
	};

	return egress_create(&ec, mono_ns(), &x->egress, x->why, sizeof(x->why));
}

int afxdp_create(const struct afxdp_cfg *cfg, struct peers *peers, struct backend **out,
		 char *why, size_t why_len)
{
	struct xsk_umem_config uc = {
		.fill_size = cfg->ring_size,
		.comp_size = cfg->ring_size,
		.frame_size = cfg->frame_size,
	};
	struct afxdp *x;
	size_t off = 0;
	int err;

	if (!cfg->nifs || cfg->nifs > AFXDP_MAX_SOCKS || !cfg->prog) {
		snprintf(why, why_len, "%u sockets (1..%d)", cfg->nifs, AFXDP_MAX_SOCKS);
		return -EINVAL;
	}
	if (cfg->nframes < 2 * cfg->ring_size * cfg->nifs) {
		snprintf(why, why_len, "%u UMEM frames are too few for %u sockets with rings of %u: "
			 "need network.umem_frames >= %u", cfg->nframes, cfg->nifs, cfg->ring_size,
			 2 * cfg->ring_size * cfg->nifs);
		return -EINVAL;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->b.ops = &afxdp_ops;
	x->b.peers = peers;
	x->nl = cfg->nl;
	x->wake_fd = -1;
	x->tx_reserve = cfg->nframes / 8;
	x->ring_size = cfg->ring_size;
	x->frame_size = cfg->frame_size;
	x->udp_port = cfg->udp_port;
	x->prog = cfg->prog;
	x->nframes = cfg->nframes;
	x->area_len = (size_t)cfg->nframes * cfg->frame_size;
	x->area = mmap(NULL, x->area_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	x->free = calloc(cfg->nframes, sizeof(*x->free));
	if (x->area == MAP_FAILED || !x->free) {
		x->area = x->area == MAP_FAILED ? NULL : x->area;
		err = -ENOMEM;
		goto fail;
	}
	/*
	 * Written once from here before the kernel pins it: the worker's first
	 * touch of each frame's page would otherwise be in the data path, and on
	 * a VM whose hypervisor shadows page tables each such touch traps
	 * (clients_ctl.c touch_pages).
	 */
	memset(x->area, 0, x->area_len);
	/*
	 * One UMEM for every socket: the engine fills a TX buffer before it
	 * names the packet's peer and path, so only then is the port (socket)
	 * known, and the buffer must be valid on any of them.
	 */
	err = xsk_umem__create(&x->umem, x->area, x->area_len, &x->socks[0].fq, &x->socks[0].cq, &uc);
	if (err) {
		snprintf(x->why, sizeof(x->why), "UMEM of %zu bytes: %s", x->area_len,
			 strerror(-err));
		goto fail;
	}
	for (uint32_t i = 0; i < cfg->nframes; i++)
		x->free[x->nfree++] = (uint64_t)(cfg->nframes - 1 - i) * cfg->frame_size;
	for (unsigned s = 0; s < cfg->nifs; s++) {
		err = open_sock(x, cfg, s);
		if (x->socks[s].xsk) {
			x->own[x->nown++] = s;
			x->nsocks++;	/* destroy deletes it, also when registering failed */
		}
		if (err)
			goto fail;
		afxdp_refill(x, &x->socks[s], cfg->ring_size);
	}
	x->max_peers = cfg->max_peers;
	x->src = cfg->src;
	x->port_dead_ns = cfg->port_dead_ns;
	err = open_ports(x);
	if (!err)
		err = open_view_io(x);
	if (!err)
		err = afxdp_loop_create(x);
	if (err)
		goto fail;
	for (unsigned s = 0; s < x->nsocks; s++) {
		int n = snprintf(x->desc + off, sizeof(x->desc) - off, "%s%s:q%u", s ? " " : "",
				 x->socks[s].ifname, x->socks[s].queue);

		off += n > 0 && (size_t)n < sizeof(x->desc) - off ? (size_t)n : 0;
	}
	/* Shared-UMEM sockets take the first one's mode. */
	snprintf(x->desc + off, sizeof(x->desc) - off, " %s", x->socks[0].zero_copy ?
		 "zero-copy" : "copy-mode");
	*out = &x->b;
	return 0;
fail:
	snprintf(why, why_len, "%s", x->why[0] ? x->why : strerror(-err));
	afxdp_ops.destroy(&x->b);
	return err;
}

/* View idx of b0: a copy with its own sockets, frames, next hops and monitor. */
static int make_view(struct afxdp *x0, unsigned idx, struct peers *peers, struct nl *nl,
		     struct afxdp **out)
{
	struct afxdp *x = malloc(sizeof(*x));
	int err;

	if (!x)
		return -ENOMEM;
	*x = *x0;
	x->idx = idx;
	x->b.peers = peers;
	x->nl = nl;
	x->nfree = 0;
	x->nown = 0;
	x->egress = NULL;
	x->loop = NULL;
	x->wake_mask = 0;
	atomic_init(&x->sleeping, false);
	memset(&x->st, 0, sizeof(x->st));
	x->free = calloc(x->nframes, sizeof(*x->free));
	x->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	*out = x;
	if (!x->free || x->wake_fd < 0)
		return x->free ? -errno : -ENOMEM;
	err = open_view_io(x);
	if (!err)
		err = afxdp_loop_create(x);
	if (err)
		snprintf(x0->why, sizeof(x0->why), "worker %u: %.120s", idx,
			 x->why[0] ? x->why : strerror(-err));
	return err;
}

int afxdp_add_views(struct backend *b0, unsigned n, struct peers **peers, struct nl **nls,
		    afxdp_owner_fn owner, void *ctx, struct backend **out, char *why,
		    size_t why_len)
{
	struct afxdp *x0 = (struct afxdp *)b0;
	struct afxdp_views *vs;
	uint32_t share;
	unsigned k;
	int err = 0;

	if (n < 2 || n > AFXDP_MAX_VIEWS || n > x0->nsocks || x0->vs) {
		snprintf(why, why_len, "%u workers for %u sockets", n, x0->nsocks);
		return -EINVAL;
	}
	vs = calloc(1, sizeof(*vs));
	if (!vs || !(vs->rings = calloc((size_t)n * n, sizeof(*vs->rings))) ||
	    !(vs->backlogs = calloc((size_t)n * n, sizeof(*vs->backlogs)))) {
		if (vs)
			free(vs->rings);
		free(vs);
		return -ENOMEM;
	}
	vs->n = n;
	vs->owner = owner;
	vs->owner_ctx = ctx;
	x0->vs = vs;
	x0->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	vs->v[0] = x0;
	out[0] = b0;
	for (k = 1; k < n && !err; k++) {
		err = make_view(x0, k, peers[k], nls[k], &vs->v[k]);
		out[k] = &vs->v[k]->b;
	}
	if (x0->wake_fd < 0 && !err)
		err = -errno;
	if (err) {
		snprintf(why, why_len, "%s", x0->why[0] ? x0->why : strerror(-err));
		for (unsigned j = k; j-- > 1;)
			afxdp_ops.destroy(out[j]);
		x0->vs = NULL;
		free(vs->rings);
		free(vs->backlogs);
		free(vs);
		return err;
	}
	/* Socket s to view s % n; the free frames shared out evenly. */
	x0->nown = 0;
	for (unsigned s = 0; s < x0->nsocks; s++) {
		struct afxdp *v = vs->v[s % n];

		v->own[v->nown++] = s;
		for (k = 0; k < n; k++)
			vs->v[k]->sock_view[s] = (uint8_t)(s % n);
	}
	share = x0->nfree / n;
	for (k = 1; k < n; k++) {
		struct afxdp *v = vs->v[k];

		for (uint32_t i = 0; i < share; i++)
			v->free[v->nfree++] = x0->free[--x0->nfree];
	}
	for (k = 0; k < n; k++)
		vs->v[k]->tx_reserve = x0->nframes / 8 / n;
	return 0;
}

/* A packet of source port sport leaves by socket port->first + (sport / nports) % port->nsocks. */
void afxdp_home_classes(const struct backend *b, uint16_t *mod, uint64_t *mask)
{
	const struct afxdp *x = (const struct afxdp *)b;
	unsigned m = 1, c;

	*mod = 0;
	*mask = 0;
	if (!x->vs || !x->nports)
		return;
	/* The pattern repeats every nports x (the least common multiple of the ports' queues). */
	for (unsigned p = 0; p < x->nports; p++) {
		unsigned q = x->ports[p].nsocks, g = m, r = q;

		if (!q)
			return;
		while (r) {
			unsigned t = g % r;

			g = r;
			r = t;
		}
		m = m / g * q;
		if (m * x->nports > 64)
			return;
	}
	m *= x->nports;
	for (c = 0; c < m; c++) {
		const struct afxdp_port *port = &x->ports[c % x->nports];

		if (x->sock_view[port->first + (c / x->nports) % port->nsocks] == x->idx)
			*mask |= 1ull << c;
	}
	*mod = *mask ? (uint16_t)m : 0;
}
