// SPDX-License-Identifier: MIT
/*
 * mrocd start-up, the workers' callbacks and shutdown (see daemon.h).  The
 * backend's start-up (AF_XDP and the XDP program, or UDP) is daemon_backend.c,
 * reload daemon_reload.c, the admin requests admin.c.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "afxdp.h"
#include "clients.h"
#include "ctl.h"
#include "daemon.h"
#include "log.h"
#include "netlink.h"
#include "peers.h"
#include "portaddr.h"
#include "status.h"
#include "steer.h"
#include "xdp_prog.h"

#include "daemon_priv.h"

/* ---- worker callbacks ---------------------------------------------------------- */

static void on_cqe(void *ctx, const struct engine_cqe *c, uint64_t now)
{
	struct mrocd_wk *w = ctx;

	if ((w->links && links_on_cqe(w->links, c, now)) || clients_on_cqe(w->clients, c, now))
		return;
	pr_debug_rl("completion for unowned QP %u (opcode %u status %u)", c->qpn, c->opcode, c->status);
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

static uint64_t cl_wait(void *ctx, void *client)
{
	return clients_wait_ns(client);
}

static int start_ctl(struct mrocd *d)
{
	struct ctl_cfg cc = {
		.admin_path = d->cfg.daemon.admin_socket[0] ? d->cfg.daemon.admin_socket : NULL,
		.mode = d->cfg.daemon.socket_mode,
		.handle = admin_handle,
		.reload = mrocd_on_reload,
		.client_path = d->cfg.daemon.control_socket[0] ? d->cfg.daemon.control_socket : NULL,
		.client_open = cl_open,
		.client_msg = cl_msg,
		.client_close = cl_close,
		.client_wait = cl_wait,
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
		else {	/* a replayed CONNECT_REQ may reach any worker */
			aead_share_replay(d->wk[k].aead, d->wk[0].aead);
			aead_set_cookies_always(d->wk[k].aead, s->cookies);
		}
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
	err = mrocd_start_backend(d);
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
		mrocd_apply_worker_side(&d->wk[k], 0);
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
		mrocd_detach_all(d);
	for (unsigned k = d->nworkers; k-- > 0;) {
		peers_destroy(d->wk[k].peers);
		nl_close(d->wk[k].nl);
	}
	steer_destroy(d->steer);
	ctl_destroy(d->ctl);
	free(d);
}
