// SPDX-License-Identifier: MIT
/*
 * Admin requests (JSON over the admin socket, see ctl.h): each command takes
 * a snapshot on the worker thread (worker_call) and builds its reply on the
 * control thread, so reading statistics never slows the data path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients.h"
#include "daemon_priv.h"
#include "links.h"
#include "peers.h"
#include "status.h"
#include "worker.h"
#include "xdp_prog.h"

#define SNAP_QPS	64
#define SNAP_PATHS	MROC_MAX_PATHS

struct snapshot {
	struct engine_stats eng;
	struct backend_stats be;
	struct worker_stats wk;
	struct link_info links[LINKS_MAX];
	int nlinks;
	struct engine_qp_info qps[SNAP_QPS];
	struct engine_path_info paths[SNAP_QPS][SNAP_PATHS];
	int nqps;
	uint32_t npeers;
	struct clients_stats cls;
	struct mrocd *d;
};

/* On the worker thread: copy everything a reply may need. */
static int take_snapshot(void *arg, uint64_t now)
{
	struct snapshot *s = arg;
	struct mrocd *d = s->d;
	uint32_t qpns[SNAP_QPS];
	int n;

	engine_get_stats(d->eng, &s->eng);
	d->be->ops->get_stats(d->be, &s->be);
	worker_get_stats(d->worker, &s->wk);
	s->nlinks = links_info(d->links, s->links, LINKS_MAX);
	n = engine_qp_list(d->eng, qpns, SNAP_QPS);
	s->nqps = 0;
	for (int i = 0; i < n && i < SNAP_QPS; i++) {
		struct engine_qp_info *qi = &s->qps[s->nqps];

		if (engine_qp_info(d->eng, qpns[i], qi))
			continue;
		for (unsigned p = 0; p < qi->npaths && p < SNAP_PATHS; p++)
			engine_path_info(d->eng, qpns[i], p, &s->paths[s->nqps][p]);
		s->nqps++;
	}
	s->npeers = peers_count(d->peers);
	clients_get_stats(d->clients, &s->cls);
	(void)now;
	return 0;
}

static json_t *reply_status(struct mrocd *d, const struct snapshot *s)
{
	json_t *o = json_object(), *ifs = json_array();
	const char *mode = NULL;

	for (unsigned i = 0; i < d->nattached; i++) {
		int m = xdp_prog_attach_mode(d->prog, d->attached[i]);

		mode = m >= 0 ? xdp_prog_mode_name((enum xdp_prog_mode)m) : "?";
	}
	for (uint32_t i = 0; i < d->cfg.network.interfaces.n; i++)
		json_array_append_new(ifs, json_string(d->cfg.network.interfaces.v[i].name));
	json_object_set_new(o, "ok", json_true());
	json_object_set_new(o, "daemon_version", json_string(MROCD_VERSION));
	json_object_set_new(o, "uptime_ns", json_integer((json_int_t)(mrocd_now_ns() -
								       d->started_ns)));
	json_object_set_new(o, "backend", json_string(d->be->ops->name));
	json_object_set_new(o, "backend_detail", json_string(d->be->ops->describe(d->be)));
	json_object_set_new(o, "fallback", json_boolean(d->fallback));
	if (d->fallback)
		json_object_set_new(o, "fallback_reason", json_string(d->fallback_why));
	json_object_set_new(o, "interfaces", ifs);
	if (d->prog) {
		json_object_set_new(o, "xdp_prog_id", json_integer(xdp_prog_id(d->prog)));
		json_object_set_new(o, "xdp_mode", json_string(mode ? mode : "?"));
	}
	json_object_set_new(o, "udp_port", json_integer(d->cfg.network.udp_port));
	json_object_set_new(o, "peers_known", json_integer(s->npeers));
	json_object_set_new(o, "qps", json_integer(s->nqps));
	json_object_set_new(o, "clients", json_integer(s->cls.clients));
	return o;
}

static json_t *reply_counters(struct mrocd *d, const struct snapshot *s)
{
	json_t *o = json_object();

	json_object_set_new(o, "ok", json_true());
	json_object_set_new(o, "engine", status_engine_counters(&s->eng));
	json_object_set_new(o, "backend", status_backend_counters(&s->be));
	json_object_set_new(o, "worker", status_worker(&s->wk));
	json_object_set_new(o, "clients", json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"clients", (json_int_t)s->cls.clients, "qps", (json_int_t)s->cls.qps,
		"mrs", (json_int_t)s->cls.mrs, "opened", (json_int_t)s->cls.opened,
		"closed", (json_int_t)s->cls.closed, "kicked", (json_int_t)s->cls.kicked,
		"wrs", (json_int_t)s->cls.wrs, "bad_wrs", (json_int_t)s->cls.bad_wrs,
		"cqes", (json_int_t)s->cls.cqes, "cq_overflows", (json_int_t)s->cls.cq_overflows));
	if (d->prog) {
		struct xdp_prog_counters xc;
		json_t *x = json_object();

		if (!xdp_prog_read_counters(d->prog, &xc)) {
			const uint64_t *v = (const uint64_t *)&xc;

			for (unsigned i = 0; i < sizeof(xc) / sizeof(uint64_t); i++)
				json_object_set_new(x, xdp_prog_counter_name(i),
						    json_integer((json_int_t)v[i]));
		}
		json_object_set_new(o, "xdp", x);
	}
	return o;
}

static json_t *reply_links(const struct snapshot *s)
{
	json_t *o = json_object(), *a = json_array();

	for (int i = 0; i < s->nlinks; i++)
		json_array_append_new(a, status_link(&s->links[i]));
	json_object_set_new(o, "ok", json_true());
	json_object_set_new(o, "links", a);
	return o;
}

static json_t *reply_qps(const struct snapshot *s)
{
	json_t *o = json_object(), *a = json_array();

	for (int i = 0; i < s->nqps; i++) {
		json_t *q = status_qp(&s->qps[i]), *paths = json_array();

		for (unsigned p = 0; p < s->qps[i].npaths && p < SNAP_PATHS; p++)
			json_array_append_new(paths, status_path(&s->paths[i][p]));
		json_object_set_new(q, "paths", paths);
		json_array_append_new(a, q);
	}
	json_object_set_new(o, "ok", json_true());
	json_object_set_new(o, "qps", a);
	return o;
}

static json_t *reply_config(struct mrocd *d)
{
	json_t *o = json_object();
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (f) {
		config_dump(f, &d->cfg);
		fclose(f);
	}
	json_object_set_new(o, "ok", json_true());
	json_object_set_new(o, "path", json_string(d->cfg_path));
	json_object_set_new(o, "config", json_string(text ? text : ""));
	free(text);
	return o;
}

json_t *admin_handle(void *ctx, const json_t *req)
{
	struct mrocd *d = ctx;
	const char *cmd = json_string_value(json_object_get(req, "cmd"));
	struct snapshot *s;
	json_t *reply;

	if (!cmd)
		return json_pack("{s:b, s:s}", "ok", 0, "error", "missing \"cmd\"");
	if (!strcmp(cmd, "config"))
		return reply_config(d);
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->d = d;
	worker_call(d->worker, take_snapshot, s);
	if (!strcmp(cmd, "status"))
		reply = reply_status(d, s);
	else if (!strcmp(cmd, "counters"))
		reply = reply_counters(d, s);
	else if (!strcmp(cmd, "links"))
		reply = reply_links(s);
	else if (!strcmp(cmd, "qps"))
		reply = reply_qps(s);
	else
		reply = json_pack("{s:b, s:s}", "ok", 0, "error", "unknown \"cmd\"");
	free(s);
	return reply;
}

