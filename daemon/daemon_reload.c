// SPDX-License-Identifier: MIT
/* mrocd reload: the [reload] keys to their owners (SIGHUP, the admin "reload"). */

#include <errno.h>
#include <stdio.h>
#include <systemd/sd-daemon.h>

#include "clients.h"
#include "log.h"
#include "mroc_util.h"
#include "status.h"
#include "worker.h"

#include "daemon_priv.h"

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
void clients_limits_of(const struct mrocd_config *c, struct clients_limits *l)
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
		.ctl_rate = c->limits.ctl_rate_per_client,
		.ctl_burst = c->limits.ctl_burst_per_client,
	};
}

int mrocd_apply_worker_side(void *arg, uint64_t now)
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
		worker_call(d->wk[k].worker, mrocd_apply_worker_side, &d->wk[k]);
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
	if (d->prog && mrocd_xdp_filter(d, NULL))
		pr_warn("reload: our addresses into the XDP program failed: frames to new ones drop");
	sd_notifyf(0, "READY=1\nSTATUS=configuration reloaded: %s", why);
	return 0;
}

void mrocd_on_reload(void *ctx)
{
	char why[512];

	mrocd_reload(ctx, why, sizeof(why));
}
