/* SPDX-License-Identifier: MIT */
/* The daemon's state, shared by daemon.c (life cycle) and admin.c (admin requests). */
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
struct ctl;
struct links;
struct nl;
struct peers;
struct worker;
struct xdp_prog;

#define PEER_SLOTS	1024

struct mrocd {
	struct mrocd_config cfg;
	char cfg_path[PATH_MAX];
	struct engine_config ecfg;
	struct nl *nl;
	struct peers *peers;
	struct xdp_prog *prog;
	int attached[MROCD_MAX_IFACES];	/* ifindexes with our program */
	unsigned nattached;
	struct backend *be;
	bool fallback;			/* UDP because AF_XDP could not be set up */
	char fallback_why[160];
	struct engine *eng;
	struct links *links;
	struct clients *clients;
	struct worker *worker;
	struct ctl *ctl;
	uint64_t started_ns;
	uint64_t next_expire;		/* worker: next peers_expire */
};

/*
 * Re-read the configuration file and apply its [reload] keys (SIGHUP, the
 * admin command "reload"; control thread).  0 with a summary in why, or
 * -EINVAL with the file's error in why: the running configuration stays.
 */
int mrocd_reload(struct mrocd *d, char *why, size_t n);

/* admin.c: answer one admin request (ctl.c's handle callback, ctx = struct mrocd). */
json_t *admin_handle(void *ctx, const json_t *req);

#endif
