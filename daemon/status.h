/* SPDX-License-Identifier: MIT */
/*
 * JSON views of the daemon's state for the admin socket: snake_case keys,
 * raw integers (ns, bytes, packets), one function per object.
 */
#ifndef MROCD_STATUS_H
#define MROCD_STATUS_H

#include <jansson.h>

#include "backend.h"
#include "engine.h"
#include "links.h"
#include "worker.h"

json_t *status_engine_counters(const struct engine_stats *st);
json_t *status_backend_counters(const struct backend_stats *st);
json_t *status_worker(const struct worker_stats *st);
/* now: the daemon's clock (mrocd_now_ns), for "up_for_ns". */
json_t *status_link(const struct link_info *li, uint64_t now);
json_t *status_qp(const struct engine_qp_info *qi);
/* now: the engine's clock, for how long ago the path last moved. */
json_t *status_path(const struct engine_path_info *pi, uint64_t now);
/*
 * A path's state in the words users of MRC and UEC know, and why:
 *   "good"         carrying data;
 *   "assumed_bad"  timed out (it carries only probes until an ACK revives it), or
 *                  retransmission timeouts without progress (backing off);
 *   "denied"       its port (port, "" unknown) is among the ports counted down for the
 *                  peer (down[0 .. ndown)): nothing is sent on it.
 * why (len bytes) says it in a sentence, "" for a good path that never moved.
 */
const char *status_path_health(const struct engine_path_info *pi, const char *port,
			       const char (*down)[16], unsigned ndown, char *why, size_t len);
/* The same, as "health" and "why" keys added to path object o. */
void status_path_set_health(json_t *o, const struct engine_path_info *pi, const char *port,
			    const char (*down)[16], unsigned ndown);
/*
 * Counters since a baseline: every integer of o (recursively) minus the
 * integer at the same place in base, never below 0.  Keys named in keep
 * (NULL-terminated; gauges such as "clients") are left alone.
 */
void status_subtract(json_t *o, const json_t *base, const char *const *keep);

#endif
