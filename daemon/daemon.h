/* SPDX-License-Identifier: MIT */
/*
 * mrocd as a whole: start-up in dependency order (peers and netlink, XDP
 * program and AF_XDP sockets or the UDP fallback, engine, control links,
 * worker, control loop), the admin requests, reload, and shutdown in the
 * reverse order.  main.c only parses arguments and calls these.
 */
#ifndef MROCD_DAEMON_H
#define MROCD_DAEMON_H

#include "config.h"

#define MROCD_VERSION	"0.1.0"	/* mrocd --version, the admin status, the start-up log */

struct mrocd;

int mrocd_start(const struct mrocd_config *cfg, const char *cfg_path, struct mrocd **out);
/* Serve until SIGTERM/SIGINT. */
int mrocd_run(struct mrocd *d);
/* Tell peers, stop the worker, close sockets, detach XDP, free everything. */
void mrocd_stop(struct mrocd *d);

#endif
