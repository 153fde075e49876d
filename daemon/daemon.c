// SPDX-License-Identifier: MIT
/* mrocd start-up, admin requests, reload and shutdown (see daemon.h). */
#include <errno.h>
#include <grp.h>
#include <limits.h>
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
#include "netlink.h"
#include "peers.h"
#include "status.h"
#include "udp_backend.h"
#include "worker.h"
#include "xdp_prog.h"

#include "daemon_priv.h"

/* ---- worker callbacks ---------------------------------------------------------- */

static void on_cqe(void *ctx, const struct engine_cqe *c, uint64_t now)
{
	struct mrocd *d = ctx;

	if (links_on_cqe(d->links, c, now) || clients_on_cqe(d->clients, c, now))
		return;
	pr_debug("completion for unowned QP %u (opcode %u status %u)", c->qpn, c->opcode, c->status);
}

#define PEER_MAX_AGE_NS	(30ULL * 1000000000ULL)

static uint64_t min_ns(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t on_tick(void *ctx, uint64_t now)
{
	struct mrocd *d = ctx;
	uint64_t next;

	/* Re-learn routes and MACs now and then: our traffic never confirms a neighbour. */
	if (now >= d->next_expire) {
		peers_expire(d->peers, now, PEER_MAX_AGE_NS);
		d->next_expire = now + PEER_MAX_AGE_NS / 3;
	}
	next = min_ns(clients_tick(d->clients, now), peers_sweep(d->peers, now));
	return min_ns(next, links_tick(d->links, now));
}

static int on_poll(void *ctx, uint64_t now)
{
	return clients_poll(((struct mrocd *)ctx)->clients, now);
}

static int extra_fds(void *ctx, int *fds, int max)
{
	return clients_fds(((struct mrocd *)ctx)->clients, fds, max);
}

static bool may_sleep(void *ctx)
{
	return clients_may_sleep(((struct mrocd *)ctx)->clients);
}

static void fd_ready(void *ctx, int i)
{
	clients_fd_ready(((struct mrocd *)ctx)->clients, i);
}

/* ---- start-up ---------------------------------------------------------------- */

static int check_mtu(struct mrocd *d, const struct nl_link *l)
{
	/* IPv6 + UDP is the larger encapsulation: 48 bytes; the ICRC ends every packet. */
	uint32_t need = d->cfg.network.mtu + MROC_DATA_OVERHEAD + FRAME_ICRC_LEN + 48;

	if (l->mtu && l->mtu < need) {
		pr_err("interface %s: MTU %u is below the %u bytes network.mtu %u needs", l->name,
		       l->mtu, need, d->cfg.network.mtu);
		return -EINVAL;
	}
	return 0;
}

static void detach_all(struct mrocd *d)
{
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
	err = nl_addr_first(d->nl, first_ifindex, 0, src);
	if (err)
		snprintf(d->fallback_why, sizeof(d->fallback_why), "network.address is not set "
			 "and %s has no address to use on every port: %s",
			 d->cfg.network.interfaces.v[0].name, strerror(-err));
	else
		pr_info("network.address is not set: every port sends from %s's address",
			d->cfg.network.interfaces.v[0].name);
	return err;
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
	};
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

		err = nl_link_get(d->nl, 0, ifs->v[i].name, &l);
		if (!err)
			err = check_mtu(d, &l);
		if (!err)
			err = xdp_prog_attach(d->prog, l.ifindex, mode);
		if (err) {
			snprintf(d->fallback_why, sizeof(d->fallback_why), "XDP on %s: %s",
				 ifs->v[i].name, strerror(-err));
			goto fail;
		}
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
		for (uint32_t q = 0; q < ifs->v[i].nqueues; q++) {
			snprintf(ac.ifs[ac.nifs].name, sizeof(ac.ifs[ac.nifs].name), "%s",
				 ifs->v[i].name);
			ac.ifs[ac.nifs++].queue = ifs->v[i].queues[q];
		}
	}
	ac.prog = d->prog;
	ac.nl = d->nl;
	ac.max_peers = PEER_SLOTS;
	err = frame_source(d, d->attached[0], &ac.src);
	if (err)
		goto fail;
	err = afxdp_create(&ac, d->peers, &d->be, d->fallback_why, sizeof(d->fallback_why));
	if (err)
		goto fail;
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
	uc.buf_size = d->cfg.network.mtu + MROC_DATA_OVERHEAD;
	err = udp_backend_create(&uc, d->peers, &d->be);
	if (err) {
		pr_err("UDP backend: %s", strerror(-err));
		return err;
	}
	/* The engine must pick source ports that have a socket. */
	udp_backend_sports(d->be, &d->ecfg.sport_min, &d->ecfg.sport_max);
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

static int socket_gid(const char *group, gid_t *gid)
{
	struct group *g;

	*gid = (gid_t)-1;
	if (!group[0])
		return 0;
	g = getgrnam(group);
	if (!g) {
		pr_err("daemon.socket_group: no group '%s'", group);
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

/* The client socket's callbacks: the clients module exists once the engine does. */
static void *cl_open(void *ctx, int fd, const struct ucred *cred)
{
	return clients_open(((struct mrocd *)ctx)->clients, fd, cred);
}

static bool cl_msg(void *ctx, void *client, const void *msg, size_t len, int *fds, int nfds,
		   void *reply, size_t *reply_len)
{
	return clients_msg(((struct mrocd *)ctx)->clients, client, msg, len, fds, nfds, reply,
			   reply_len);
}

static void cl_close(void *ctx, void *client)
{
	clients_close(((struct mrocd *)ctx)->clients, client);
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

	err = socket_gid(d->cfg.daemon.socket_group, &cc.gid);
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

int mrocd_start(const struct mrocd_config *cfg, const char *cfg_path, struct mrocd **out)
{
	struct mrocd *d = calloc(1, sizeof(*d));
	struct clients_limits lim;
	struct worker_cfg wc;
	int err;

	if (!d)
		return -ENOMEM;
	d->cfg = *cfg;
	snprintf(d->cfg_path, sizeof(d->cfg_path), "%s", cfg_path);
	d->started_ns = mrocd_now_ns();
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
	err = nl_open(&d->nl);
	if (err) {
		pr_err("netlink: %s", strerror(-err));
		goto fail;
	}
	d->peers = peers_create(PEER_SLOTS, d->nl);
	if (!d->peers) {
		err = -ENOMEM;
		goto fail;
	}
	err = start_backend(d);
	if (err)
		goto fail;
	d->eng = engine_create(&d->ecfg);
	if (!d->eng) {
		pr_err("engine: bad parameters");
		err = -EINVAL;
		goto fail;
	}
	peers_set_engine(d->peers, d->eng);
	d->links = links_create(d->eng, d->peers, cfg->network.peers.v, cfg->network.peers.n);
	if (!d->links) {
		err = -ENOMEM;
		goto fail;
	}
	clients_limits_of(&d->cfg, &lim);
	d->clients = clients_create(d->eng, d->peers, cfg->limits.max_qps, &lim);
	if (!d->clients) {
		err = -ENOMEM;
		goto fail;
	}
	/* No worker thread yet: the worker's side of the runtime values is set from here. */
	apply_worker_side(d, 0);
	wc = (struct worker_cfg){
		.eng = d->eng,
		.be = d->be,
		.cpu = cfg->daemon.cpu_affinity.n ? cfg->daemon.cpu_affinity.v[0] : -1,
		.busy_poll_us = cfg->daemon.busy_poll_us,
		.on_cqe = on_cqe,
		.on_tick = on_tick,
		.on_poll = on_poll,
		.extra_fds = extra_fds,
		.may_sleep = may_sleep,
		.fd_ready = fd_ready,
		.ctx = d,
	};
	err = worker_start(&wc, &d->worker);
	if (err) {
		pr_err("worker thread: %s", strerror(-err));
		goto fail;
	}
	clients_set_worker(d->clients, d->worker);
	pr_info("mrocd %s running: backend %s%s, UDP port %u, %u peer(s) configured",
		MROCD_VERSION, d->be->ops->describe(d->be), d->fallback ? " (fallback)" : "",
		cfg->network.udp_port, cfg->network.peers.n);
	sd_notifyf(0, "READY=1\nSTATUS=backend %s%s, port %u", d->be->ops->describe(d->be),
		   d->fallback ? " (fallback)" : "", cfg->network.udp_port);
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
	struct mrocd *d = arg;
	uint32_t qpns[256];
	int n = engine_qp_list(d->eng, qpns, 256);

	links_close_all(d->links, now);
	for (int i = 0; i < n && i < 256; i++)
		engine_qp_disconnect(d->eng, qpns[i], now);
	return 0;
}

static int count_closing(void *arg, uint64_t now)
{
	struct mrocd *d = arg;
	uint32_t qpns[256];
	int n = engine_qp_list(d->eng, qpns, 256), closing = 0;

	for (int i = 0; i < n && i < 256; i++) {
		struct engine_qp_info qi;

		if (!engine_qp_info(d->eng, qpns[i], &qi) && qi.state == ENGINE_QPS_CLOSING)
			closing++;
	}
	return closing;
}

void mrocd_stop(struct mrocd *d)
{
	if (!d)
		return;
	sd_notify(0, "STOPPING=1\nSTATUS=stopping");
	/* Clients first: their clean-up runs on the worker. */
	if (d->ctl && d->worker)
		ctl_close_clients(d->ctl);
	if (d->worker) {
		/* Tell peers (DISCONNECT), and give the answers a moment to come back. */
		worker_call(d->worker, close_all, d);
		for (int i = 0; i < 25 && worker_call(d->worker, count_closing, d) > 0; i++)
			usleep(20 * 1000);
		worker_stop(d->worker);
	}
	links_destroy(d->links);
	clients_destroy(d->clients);
	engine_destroy(d->eng);
	if (d->be)
		d->be->ops->destroy(d->be);
	if (d->prog)
		detach_all(d);
	peers_destroy(d->peers);
	nl_close(d->nl);
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
 *   daemon.busy_poll_us           worker_set_busy_poll (worker thread)
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
		.max_sq_depth = c->limits.max_sq_depth,
		.max_rq_depth = c->limits.max_rq_depth,
		.default_paths = c->transport.paths,
		.default_mode = (uint8_t)c->transport.mode,
	};
}

static int apply_worker_side(void *arg, uint64_t now)
{
	struct mrocd *d = arg;

	links_set_qp_defaults(d->links, (uint8_t)d->cfg.transport.paths,
			      (uint8_t)d->cfg.transport.mode);
	if (d->worker)
		worker_set_busy_poll(d->worker, d->cfg.daemon.busy_poll_us);
	(void)now;
	return 0;
}

static void apply_runtime(struct mrocd *d)
{
	struct clients_limits lim;

	log_set_level(d->cfg.daemon.log_level);
	clients_limits_of(&d->cfg, &lim);
	clients_set_limits(d->clients, &lim);
	worker_call(d->worker, apply_worker_side, d);
}

static uint64_t monotonic_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
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
		   (unsigned long long)monotonic_usec(), d->cfg_path);
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
	sd_notifyf(0, "READY=1\nSTATUS=configuration reloaded: %s", why);
	return 0;
}

static void reload(void *ctx)
{
	char why[512];

	mrocd_reload(ctx, why, sizeof(why));
}
