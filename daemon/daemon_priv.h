/* SPDX-License-Identifier: MIT */
/*
 * The daemon's state, shared by daemon.c (start-up, shutdown), daemon_backend.c
 * (the backend's start-up), daemon_reload.c (reload) and admin.c (admin requests).
 */
#ifndef MROCD_DAEMON_PRIV_H
#define MROCD_DAEMON_PRIV_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "config.h"
#include "daemon.h"
#include "engine.h"

struct clients;
struct clients_limits;
struct ctl;
struct ctl_caller;
struct links;
struct nl;
struct peers;
struct steer;
struct worker;
struct xdp_prog;

#define PEER_SLOTS	1024

struct mrocd;

/*
 * A data-plane worker's share of the daemon: everything its thread owns.
 * Each has its own engine (its QPs: QPN % nworkers == idx), peer table,
 * netlink socket, backend view and clients; worker 0 also the control links.
 */
struct mrocd_wk {
	struct mrocd *d;
	unsigned idx;
	struct nl *nl;			/* worker 0: the daemon's (start-up uses it first) */
	struct peers *peers;
	struct backend *be;
	struct engine *eng;
	struct aead *aead;		/* security.mode "aead", else NULL */
	struct clients *clients;
	struct links *links;		/* worker 0 only, NULL on the others */
	struct worker *worker;
	uint32_t nclients;		/* control thread: clients placed here */
};

struct mrocd {
	struct mrocd_config cfg;
	char cfg_path[PATH_MAX];
	struct engine_config ecfg;
	struct xdp_prog *prog;
	int attached[MROCD_MAX_IFACES];	/* ifindexes with our program */
	unsigned nattached;
	struct mroc_addr src;		/* AF_XDP: every frame's source but the port addresses' */
	bool fallback;			/* UDP because AF_XDP could not be set up */
	char fallback_why[160];
	struct mrocd_wk wk[MROCD_MAX_WORKERS];
	unsigned nworkers;
	unsigned nsocks;		/* AF_XDP sockets (0: UDP backend) */
	struct steer *steer;		/* which worker owns a packet (NULL with one) */
	struct ctl *ctl;
	uint64_t started_ns;
	int addr_mon;			/* netlink: our addresses changed (AF_XDP); -1 = none */
};

/*
 * Re-read the configuration file and apply its [reload] keys (SIGHUP, the
 * admin command "reload"; control thread).  0 with a summary in why, or
 * -EINVAL with the file's error in why: the running configuration stays.
 */
int mrocd_reload(struct mrocd *d, char *why, size_t n);

/* daemon_backend.c: AF_XDP (with the XDP program) or UDP, as network.backend says; 0 or -errno. */
int mrocd_start_backend(struct mrocd *d);
/* Detach the XDP program from every interface, close it and the address monitor. */
void mrocd_detach_all(struct mrocd *d);
/* The host's addresses and VLANs, and macs unless NULL (one per attached interface), into the XDP program. */
int mrocd_xdp_filter(struct mrocd *d, uint8_t (*macs)[6]);

/* daemon_reload.c */
void clients_limits_of(const struct mrocd_config *c, struct clients_limits *l);
/* The worker's side of the runtime values (worker_call, or directly before it runs). */
int mrocd_apply_worker_side(void *arg, uint64_t now);
/* ctl.c's reload callback (ctx = struct mrocd). */
void mrocd_on_reload(void *ctx);

/* admin.c: answer one admin request (ctl.c's handle callback, ctx = struct mrocd). */
json_t *admin_handle(void *ctx, const json_t *req, const struct ctl_caller *who);

#endif
