// SPDX-License-Identifier: MIT
/*
 * Admin requests (JSON over the admin socket, see ctl.h): each command takes
 * a snapshot on each worker thread in turn (worker_call), adds them up and
 * builds its reply on the control thread, so reading statistics never slows
 * the data path.
 *
 * Commands ("cmd"); every reply has "ok", and "error" when it is false:
 *   status          daemon, backend, interfaces and queues, XDP program, counts
 *   counters        totals since start or the last counters_reset ("raw": true
 *                   ignores the reset: monotonic values, e.g. for Prometheus)
 *   counters_reset  remember the counters now; later replies subtract them
 *   links           control connections to other daemons
 *   qps             every QP with its owner (pid, comm, uid, client; "owner": "mrocd" for
 *                   its control links), paths (with their health in words) and peer
 *                   address ("qpn": N for one)
 *   config          the effective configuration text
 *   reload          re-read the configuration file (as SIGHUP), answer when done
 *
 * Who may ask what (#24 item 11, struct ctl_caller): an administrator
 * everything; any other user who may open the socket "config", "status" with
 * its own clients' counts in place of the daemon's totals ("scope": "uid": no
 * peers, links, ports down, page faults), "qps" of its own clients' QPs only (another's QPN is "no QP", as one that
 * does not exist), "counters" of its own clients only (the group "clients",
 * "scope": "uid"); "links", "reload" and "counters_reset" are refused with
 * "permission denied" ("denied": true).
 */
#include <errno.h>
#include <net/if.h>
#include <assert.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "clients.h"
#include "ctl.h"
#include "daemon_priv.h"
#include "links.h"
#include "log.h"
#include "peers.h"
#include "status.h"
#include "worker.h"
#include "xdp_prog.h"

#define SNAP_PATHS	MROC_MAX_PATHS
#define SNAP_QPS_MIN	64
#define SNAP_DOWN	16	/* ports counted down per QP (network.interfaces entries) */

struct snap_qp {
	struct engine_qp_info info;
	struct engine_path_info paths[SNAP_PATHS];
	char port[SNAP_PATHS][IF_NAMESIZE];	/* the port each path leaves by; "" unknown */
	unsigned npaths;		/* valid entries of paths[] */
	char down[SNAP_DOWN][IF_NAMESIZE];	/* ports counted down for its peer (porthealth.h) */
	unsigned ndown;
	unsigned worker;		/* its owner */
	bool has_peer;
	struct mroc_addr peer;
	bool has_owner;			/* a client's (else mrocd's own: a control link) */
	struct clients_owner owner;
};
static_assert(IF_NAMESIZE == 16, "status_path_health takes port names of 16 bytes");

/* One worker's own counters (the totals add them up). */
struct snap_wk {
	struct backend_stats be;
	struct worker_stats wk;
	struct clients_stats cls;
	uint32_t qps;
};

struct snapshot {
	/* in: what to take */
	struct mrocd *d;
	bool want_qps;			/* QP and path details (qps) */
	bool own_only;			/* a user who is no administrator: uid's clients only */
	uid_t uid;
	bool one_qp;			/* only the QP numbered qpn */
	uint32_t qpn;
	uint32_t cap;			/* room in qps[] and qpns[] */
	struct snap_qp *qps;
	uint32_t *qpns;
	unsigned cur;			/* the worker take_snapshot runs on */
	/* out: every worker's, added up; from here on zeroed before each try */
	uint64_t now;
	struct engine_stats eng;
	struct backend_stats be;
	struct worker_stats wk;
	struct link_info links[LINKS_MAX];
	int nlinks;
	struct links_stats lks;
	uint32_t nqps;			/* in qps[] */
	uint32_t qps_total;		/* in the engines */
	bool no_room;			/* qps[] was too small: take it again */
	uint32_t npeers;		/* peer table entries, every worker's */
	struct peers_stats peers;
	struct clients_stats cls;
	struct clients_uid_stats own;	/* own_only: uid's clients */
	struct snap_wk wks[MROCD_MAX_WORKERS];
};

/*
 * counters_reset's baseline: the counter groups of a raw counters reply.
 * Control thread only (admin requests are answered there); one daemon per
 * process.
 */
static json_t *counters_base;
static uint64_t counters_base_ns;

/* Gauges inside the counter groups: never subtracted. */
static const char *const gauges[] = { "clients", "qps", "mrs", "locked_bytes", "ports_down",
				      "qps_hot", "qps_sending",
				      "services", "handoff_owed", NULL };

static void snap_one_qp(struct mrocd_wk *w, uint32_t qpn, struct snap_qp *q)
{
	const char *down[SNAP_DOWN];
	struct peer *p;

	q->npaths = 0;
	q->ndown = 0;
	q->worker = w->idx;
	q->has_peer = false;
	q->has_owner = !clients_qp_owner(w->clients, qpn, &q->owner);
	if (q->info.state < ENGINE_QPS_CONNECTING)
		return;		/* idle or listening: neither peer nor paths yet */
	for (unsigned i = 0; i < q->info.npaths && i < SNAP_PATHS; i++) {
		const char *port;

		if (engine_path_info(w->eng, qpn, i, &q->paths[q->npaths]))
			continue;
		port = w->be->ops->port_name ? w->be->ops->port_name(w->be, q->info.peer,
								q->paths[q->npaths].sport) : NULL;
		snprintf(q->port[q->npaths], IF_NAMESIZE, "%s", port ? port : "");
		q->npaths++;
	}
	if (w->be->ops->ports_down)
		q->ndown = w->be->ops->ports_down(w->be, q->info.peer, down, SNAP_DOWN);
	for (unsigned i = 0; i < q->ndown; i++)
		snprintf(q->down[i], IF_NAMESIZE, "%s", down[i]);
	p = peers_get(w->peers, q->info.peer);
	if (p) {
		q->has_peer = true;
		q->peer = p->addr;
	}
}

/* dst += src, for structs of uint64_t counters only. */
static void add_counters(void *dst, const void *src, size_t size)
{
	uint64_t *a = dst;
	const uint64_t *b = src;

	for (size_t i = 0; i < size / sizeof(uint64_t); i++)
		a[i] += b[i];
}

static_assert(sizeof(struct engine_stats) % 8 == 0 && sizeof(struct backend_stats) % 8 == 0 &&
	      sizeof(struct worker_stats) % 8 == 0 && sizeof(struct peers_stats) % 8 == 0,
	      "counter structs are uint64_t only");

static void add_clients_stats(struct clients_stats *a, const struct clients_stats *b)
{
	a->clients += b->clients;
	a->qps += b->qps;
	a->mrs += b->mrs;
	a->qps_hot += b->qps_hot;
	a->qps_sending += b->qps_sending;
	a->opened += b->opened;
	a->closed += b->closed;
	a->kicked += b->kicked;
	a->wrs += b->wrs;
	a->bad_wrs += b->bad_wrs;
	a->cqes += b->cqes;
	a->cq_overflows += b->cq_overflows;
	a->cq_signals += b->cq_signals;
	a->cq_signal_calls += b->cq_signal_calls;
	a->cq_signal_failed += b->cq_signal_failed;
	a->doorbells += b->doorbells;
	a->doorbell_calls += b->doorbell_calls;
	a->doorbell_qps += b->doorbell_qps;
	a->rings_stranded += b->rings_stranded;
	a->listen_refused += b->listen_refused;
	a->share_refused += b->share_refused;
	a->reserve_refused += b->reserve_refused;
	a->unpopulated_refused += b->unpopulated_refused;
	a->seal_refused += b->seal_refused;
	a->ctl_deferred += b->ctl_deferred;
	a->zombies_cut += b->zombies_cut;
	a->services += b->services;
}

/* The QPs of worker w into qps[] after the earlier workers': -ENOSPC when they do not fit. */
static int snap_qps(struct snapshot *s, struct mrocd_wk *w, uint32_t n)
{
	if (s->one_qp) {
		if (s->qpn % s->d->nworkers != w->idx)
			return 0;
		if (engine_qp_info(w->eng, s->qpn, &s->qps[0].info))
			return -ENOENT;
		snap_one_qp(w, s->qpn, &s->qps[0]);
		s->nqps = 1;
		return 0;
	}
	if (s->nqps + n > s->cap)
		return -ENOSPC;
	for (uint32_t i = 0; i < n; i++) {
		struct snap_qp *q = &s->qps[s->nqps];

		if (engine_qp_info(w->eng, s->qpns[i], &q->info))
			continue;
		snap_one_qp(w, s->qpns[i], q);
		s->nqps++;
	}
	return 0;
}

/*
 * On worker s->cur's thread: copy its share of what a reply may need.
 * no_room when qps[] is too small (qps_total says how many there are).
 */
static int take_snapshot(void *arg, uint64_t now)
{
	struct snapshot *s = arg;
	struct mrocd_wk *w = &s->d->wk[s->cur];
	struct snap_wk *sw = &s->wks[s->cur];
	struct engine_stats es;
	struct peers_stats ps;
	int n;

	s->now = now;
	engine_get_stats(w->eng, &es);
	add_counters(&s->eng, &es, sizeof(es));
	w->be->ops->get_stats(w->be, &sw->be);
	add_counters(&s->be, &sw->be, sizeof(sw->be));
	worker_get_stats(w->worker, &sw->wk);
	add_counters(&s->wk, &sw->wk, sizeof(sw->wk));
	if (w->links) {
		s->nlinks = links_info(w->links, s->links, LINKS_MAX);
		links_get_stats(w->links, &s->lks);
	}
	s->npeers += peers_live(w->peers);
	peers_get_stats(w->peers, &ps);
	add_counters(&s->peers, &ps, sizeof(ps));
	clients_get_stats(w->clients, &sw->cls);
	add_clients_stats(&s->cls, &sw->cls);
	if (s->own_only)
		clients_uid_stats(w->clients, s->uid, &s->own);
	n = engine_qp_list(w->eng, s->qpns, (int)s->cap);
	sw->qps = n > 0 ? (uint32_t)n : 0;
	s->qps_total += sw->qps;
	if (!s->want_qps || s->no_room)
		return 0;
	n = snap_qps(s, w, sw->qps);
	if (n == -ENOSPC)
		s->no_room = true;
	return n == -ENOSPC ? 0 : n;
}

static void snapshot_free(struct snapshot *s)
{
	if (!s)
		return;
	free(s->qps);
	free(s->qpns);
	free(s);
}

/* Room for cap QPs (none: the QPs are only counted). */
static int snapshot_room(struct snapshot *s, uint32_t cap)
{
	free(s->qps);
	free(s->qpns);
	s->qps = NULL;
	s->qpns = NULL;
	s->cap = cap;
	if (!cap)
		return 0;
	s->qps = calloc(cap, sizeof(*s->qps));
	s->qpns = calloc(cap, sizeof(*s->qpns));
	return s->qps && s->qpns ? 0 : -ENOMEM;
}

/*
 * A snapshot, with room for every QP when want_qps (QPs may come and go
 * meanwhile): each worker in turn copies its share (worker_call), so none
 * stops for longer than its own copy takes.
 */
static int snapshot_take(struct mrocd *d, struct snapshot *s)
{
	uint32_t cap = SNAP_QPS_MIN;
	int err = 0;

	s->d = d;
	for (int tries = 0; tries < 4; tries++) {
		err = snapshot_room(s, !s->want_qps ? 0 : s->one_qp ? 1 : cap);
		if (err)
			return err;
		memset(&s->now, 0, sizeof(*s) - offsetof(struct snapshot, now));
		for (s->cur = 0; s->cur < d->nworkers && !err; s->cur++)
			err = worker_call(d->wk[s->cur].worker, take_snapshot, s);
		if (!err && s->one_qp && !s->nqps)
			err = -ENOENT;
		if (err || !s->no_room)
			return err;
		cap = s->qps_total + s->qps_total / 4 + 16;
	}
	return -ENOSPC;
}

static json_t *error_reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static json_t *error_reply(const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

/* ---- status ---------------------------------------------------------------- */

static json_t *interface_info(struct mrocd *d)
{
	const struct mrocd_iface_list *ifs = &d->cfg.network.interfaces;
	json_t *a = json_array();
	unsigned sock = 0;

	for (uint32_t i = 0; i < ifs->n; i++) {
		json_t *o = json_object(), *qs = json_array(), *ws = json_array();

		json_object_set_new(o, "name", json_string(ifs->v[i].name));
		/* Socket k (config order) is worker k % nworkers's (afxdp_add_views). */
		for (uint32_t q = 0; q < ifs->v[i].nqueues; q++, sock++) {
			json_array_append_new(qs, json_integer(ifs->v[i].queues[q]));
			json_array_append_new(ws, json_integer(sock % d->nworkers));
		}
		json_object_set_new(o, "queues", qs);
		if (d->nsocks)
			json_object_set_new(o, "queue_workers", ws);
		else
			json_decref(ws);
		/* attached[] follows the configured order (start_afxdp) */
		if (d->prog && i < d->nattached) {
			int m = xdp_prog_attach_mode(d->prog, d->attached[i]);

			json_object_set_new(o, "ifindex", json_integer(d->attached[i]));
			json_object_set_new(o, "xdp_mode", json_string(
				m >= 0 ? xdp_prog_mode_name((enum xdp_prog_mode)m) : "?"));
		}
		json_array_append_new(a, o);
	}
	return a;
}

/*
 * Page faults (the process's, and its workers' alone: those stay flat once
 * clients registered, see clients_ctl.c's pinning) and the memory pinned
 * for clients against RLIMIT_MEMLOCK (-1: unlimited).
 */
static void memory_info(json_t *o, struct mrocd *d, const struct snapshot *s)
{
	struct rusage ru = { 0 };
	struct rlimit rl = { 0 };

	getrusage(RUSAGE_SELF, &ru);
	getrlimit(RLIMIT_MEMLOCK, &rl);
	json_object_set_new(o, "minor_faults", json_integer(ru.ru_minflt));
	json_object_set_new(o, "major_faults", json_integer(ru.ru_majflt));
	json_object_set_new(o, "worker_minor_faults", json_integer((json_int_t)s->wk.minor_faults));
	json_object_set_new(o, "worker_major_faults", json_integer((json_int_t)s->wk.major_faults));
	json_object_set_new(o, "locked_bytes",
			    json_integer((json_int_t)clients_locked_bytes(d->wk[0].clients)));
	json_object_set_new(o, "memlock_limit", json_integer(rl.rlim_cur == RLIM_INFINITY ? -1 :
							     (json_int_t)rl.rlim_cur));
}

static json_t *reply_status(struct mrocd *d, const struct snapshot *s)
{
	json_t *o = json_object(), *ifs = json_array();
	struct backend *be = d->wk[0].be;
	const char *detail = be->ops->describe(be);
	const char *mode = NULL;
	int up = 0;

	for (unsigned i = 0; i < d->nattached; i++) {
		int m = xdp_prog_attach_mode(d->prog, d->attached[i]);

		mode = m >= 0 ? xdp_prog_mode_name((enum xdp_prog_mode)m) : "?";
	}
	for (uint32_t i = 0; i < d->cfg.network.interfaces.n; i++)
		json_array_append_new(ifs, json_string(d->cfg.network.interfaces.v[i].name));
	for (int i = 0; i < s->nlinks; i++)
		up += s->links[i].state == LINK_UP;
	json_object_set_new(o, "ok", json_true());
	json_object_set_new(o, "daemon_version", json_string(MROCD_VERSION));
	json_object_set_new(o, "pid", json_integer(getpid()));
	json_object_set_new(o, "uptime_ns", json_integer((json_int_t)(mrocd_now_ns() -
								       d->started_ns)));
	json_object_set_new(o, "config_path", json_string(d->cfg_path));
	json_object_set_new(o, "backend", json_string(be->ops->name));
	json_object_set_new(o, "backend_detail", json_string(detail));
	/* afxdp.c's description ends with "zero-copy" or "copy-mode" */
	if (!strcmp(be->ops->name, "af_xdp"))
		json_object_set_new(o, "zero_copy", json_boolean(strstr(detail, "zero-copy")));
	json_object_set_new(o, "fallback", json_boolean(d->fallback));
	if (d->fallback)
		json_object_set_new(o, "fallback_reason", json_string(d->fallback_why));
	json_object_set_new(o, "interfaces", ifs);
	json_object_set_new(o, "interface_info", interface_info(d));
	if (d->prog) {
		json_object_set_new(o, "xdp_prog_id", json_integer(xdp_prog_id(d->prog)));
		json_object_set_new(o, "xdp_mode", json_string(mode ? mode : "?"));
		json_object_set_new(o, "xdp_stamps", json_boolean(xdp_prog_stamps(d->prog)));
	}
	json_object_set_new(o, "udp_port", json_integer(d->cfg.network.udp_port));
	json_object_set_new(o, "workers", json_integer(d->nworkers));
	if (s->own_only) {
		/* Not the daemon's totals: how many others use it, and with whom, is theirs. */
		json_object_set_new(o, "scope", json_string("uid"));
		json_object_set_new(o, "uid", json_integer(s->uid));
		json_object_set_new(o, "qps", json_integer(s->own.qps));
		json_object_set_new(o, "clients", json_integer(s->own.clients));
		json_object_set_new(o, "locked_bytes", json_integer((json_int_t)s->own.locked_bytes));
		return o;
	}
	json_object_set_new(o, "peers_known", json_integer(s->npeers));
	json_object_set_new(o, "qps", json_integer(s->qps_total));
	json_object_set_new(o, "clients", json_integer(s->cls.clients));
	json_object_set_new(o, "links", json_integer(s->nlinks));
	json_object_set_new(o, "links_up", json_integer(up));
	memory_info(o, d, s);
	/* (peer, port) pairs counted down now over every worker, and how often that happened */
	if (!strcmp(be->ops->name, "af_xdp")) {
		json_object_set_new(o, "ports_down", json_integer((json_int_t)s->be.ports_down));
		json_object_set_new(o, "port_dead", json_integer((json_int_t)s->be.port_dead));
	}
	return o;
}

/* ---- counters -------------------------------------------------------------- */

/*
 * Each worker's share: its QPs and clients, its packets and what it handed
 * to (out) and took from (in) the other workers.  An object by "worker_N", so
 * that counters_reset subtracts it as the other groups.
 */
static json_t *worker_groups(struct mrocd *d, const struct snapshot *s)
{
	json_t *o = json_object();

	for (unsigned k = 0; k < d->nworkers; k++) {
		const struct snap_wk *w = &s->wks[k];
		char key[20];

		snprintf(key, sizeof(key), "worker_%u", k);
		json_object_set_new(o, key, json_pack(
			"{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			"qps", (json_int_t)w->qps, "clients", (json_int_t)w->cls.clients,
			"minor_faults", (json_int_t)w->wk.minor_faults,
			"major_faults", (json_int_t)w->wk.major_faults,
			"rx_pkts", (json_int_t)w->wk.rx_pkts, "tx_pkts", (json_int_t)w->wk.tx_pkts,
			"busy_ns", (json_int_t)w->wk.busy_ns,
			"handoff_rx_out", (json_int_t)w->be.handoff_rx_out,
			"handoff_rx_in", (json_int_t)w->be.handoff_rx_in,
			"handoff_tx_out", (json_int_t)w->be.handoff_tx_out,
			"handoff_tx_in", (json_int_t)w->be.handoff_tx_in,
			"handed_off", (json_int_t)(w->be.handoff_rx_out + w->be.handoff_tx_out),
			"handoff_full", (json_int_t)w->be.handoff_full));
	}
	return o;
}

/* The counter groups, as read now (monotonic since the daemon started). */
static json_t *counter_groups(struct mrocd *d, const struct snapshot *s)
{
	json_t *o = json_object();
	struct ctl_stats cs;

	json_object_set_new(o, "engine", status_engine_counters(&s->eng));
	json_object_set_new(o, "backend", status_backend_counters(&s->be));
	json_object_set_new(o, "worker", status_worker(&s->wk));
	json_object_set_new(o, "workers", worker_groups(d, s));
	json_object_set_new(o, "clients", json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"clients", (json_int_t)s->cls.clients, "qps", (json_int_t)s->cls.qps,
		"qps_sending", (json_int_t)s->cls.qps_sending,
		"locked_bytes", (json_int_t)clients_locked_bytes(d->wk[0].clients),
		"qps_hot", (json_int_t)s->cls.qps_hot,
		"mrs", (json_int_t)s->cls.mrs, "opened", (json_int_t)s->cls.opened,
		"closed", (json_int_t)s->cls.closed, "kicked", (json_int_t)s->cls.kicked,
		"wrs", (json_int_t)s->cls.wrs, "bad_wrs", (json_int_t)s->cls.bad_wrs,
		"cqes", (json_int_t)s->cls.cqes, "cq_overflows", (json_int_t)s->cls.cq_overflows,
		"cq_signals", (json_int_t)s->cls.cq_signals,
		"cq_signal_syscalls", (json_int_t)s->cls.cq_signal_calls,
		"cq_signal_failed", (json_int_t)s->cls.cq_signal_failed,
		"doorbells", (json_int_t)s->cls.doorbells,
		"doorbell_syscalls", (json_int_t)s->cls.doorbell_calls,
		"doorbell_qps", (json_int_t)s->cls.doorbell_qps,
		"rings_stranded", (json_int_t)s->cls.rings_stranded,
		"services", (json_int_t)s->cls.services,
		"listen_refused", (json_int_t)s->cls.listen_refused,
		"share_refused", (json_int_t)s->cls.share_refused,
		"reserve_refused", (json_int_t)s->cls.reserve_refused,
		"unpopulated_refused", (json_int_t)s->cls.unpopulated_refused,
		"seal_refused", (json_int_t)s->cls.seal_refused,
		"ctl_deferred", (json_int_t)s->cls.ctl_deferred,
		"zombies_cut", (json_int_t)s->cls.zombies_cut));
	ctl_get_stats(d->ctl, &cs);
	json_object_set_new(o, "sockets", json_pack("{s:I, s:I, s:I, s:I}",
		"hello_timeouts", (json_int_t)cs.hello_timeouts,
		"clients_refused", (json_int_t)cs.clients_refused,
		"admin_timeouts", (json_int_t)cs.admin_timeouts,
		"admin_refused", (json_int_t)cs.admin_refused));
	json_object_set_new(o, "peers", json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"added", (json_int_t)s->peers.added, "aged_out", (json_int_t)s->peers.aged_out,
		"evicted", (json_int_t)s->peers.evicted, "full", (json_int_t)s->peers.full,
		"owner_refused", (json_int_t)s->peers.owner_refused,
		"alias_added", (json_int_t)s->peers.alias_added,
		"alias_refused", (json_int_t)s->peers.alias_refused,
		"alias_shared", (json_int_t)s->peers.alias_shared,
		"alias_bad", (json_int_t)s->peers.alias_bad,
		"stale", (json_int_t)s->peers.stale));
	json_object_set_new(o, "links", json_pack("{s:I, s:I, s:I}",
		"in_accepted", (json_int_t)s->lks.in_accepted,
		"in_evicted", (json_int_t)s->lks.in_evicted,
		"in_refused", (json_int_t)s->lks.in_refused));
	if (d->prog) {
		struct xdp_prog_counters xc;
		json_t *x = json_object();

		if (!xdp_prog_read_counters(d->prog, &xc)) {
			for (unsigned i = 0; i < MROC_XDP_CNT__COUNT; i++)
				json_object_set_new(x, xdp_prog_counter_name(i),
						    json_integer((json_int_t)xc.v[i]));
		}
		json_object_set_new(o, "xdp", x);
	}
	return o;
}

static json_t *reply_counters(struct mrocd *d, const struct snapshot *s, const json_t *req)
{
	json_t *o = json_object(), *groups = counter_groups(d, s);
	bool raw = json_is_true(json_object_get(req, "raw"));
	uint64_t uptime = s->now - d->started_ns;
	bool reset = !raw && counters_base;

	if (reset)
		status_subtract(groups, counters_base, gauges);
	json_object_set_new(o, "ok", json_true());
	json_object_set_new(o, "uptime_ns", json_integer((json_int_t)uptime));
	json_object_set_new(o, "reset", json_boolean(reset));
	json_object_set_new(o, "counting_ns", json_integer((json_int_t)(reset ?
		s->now - counters_base_ns : uptime)));
	json_object_update(o, groups);
	json_decref(groups);
	return o;
}

static json_t *reply_counters_reset(struct mrocd *d, const struct snapshot *s)
{
	json_decref(counters_base);
	counters_base = counter_groups(d, s);
	counters_base_ns = s->now;
	return json_pack("{s:b, s:I}", "ok", 1, "uptime_ns",
			 (json_int_t)(s->now - d->started_ns));
}

/* ---- links, QPs, config --------------------------------------------------------- */

static json_t *reply_links(const struct snapshot *s)
{
	json_t *o = json_object(), *a = json_array();

	for (int i = 0; i < s->nlinks; i++)
		json_array_append_new(a, status_link(&s->links[i], s->now));
	json_object_set_new(o, "ok", json_true());
	json_object_set_new(o, "links", a);
	return o;
}

/* A client QP's rings (clients_owner.rings): "rings": {"sq": [prod, cons, flags], ...}. */
static void set_rings(json_t *q, const struct clients_owner *o)
{
	json_t *r = json_object();

	json_object_set_new(r, "sq", json_pack("[I, I, I]", (json_int_t)o->rings.sq_prod,
					       (json_int_t)o->rings.sq_cons,
					       (json_int_t)o->rings.sq_flags));
	json_object_set_new(r, "rq", json_pack("[I, I, I]", (json_int_t)o->rings.rq_prod,
					       (json_int_t)o->rings.rq_cons,
					       (json_int_t)o->rings.rq_flags));
	json_object_set_new(r, "cq", json_pack("[I, I, I]", (json_int_t)o->rings.cq_prod,
					       (json_int_t)o->rings.cq_cons,
					       (json_int_t)o->rings.cq_flags));
	json_object_set_new(r, "hot", json_boolean(o->rings.hot));
	json_object_set_new(q, "rings", r);
}

/* The owner of a QP: its process (pid, command name, uid) or mrocd itself. */
static void set_owner(json_t *q, const struct snap_qp *sq)
{
	char path[32], comm[64] = "";
	FILE *f;

	if (!sq->has_owner) {
		json_object_set_new(q, "owner", json_string("mrocd"));
		json_object_set_new(q, "pid", json_integer(getpid()));
		json_object_set_new(q, "comm", json_string("mrocd"));
		return;
	}
	/* Read here, on the control thread: the process may have gone since (comm ""). */
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)sq->owner.pid);
	f = fopen(path, "re");
	if (f) {
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	json_object_set_new(q, "owner", json_string("client"));
	json_object_set_new(q, "pid", json_integer(sq->owner.pid));
	json_object_set_new(q, "comm", json_string(comm));
	json_object_set_new(q, "uid", json_integer(sq->owner.uid));
	json_object_set_new(q, "client", json_integer(sq->owner.client));
	set_rings(q, &sq->owner);
}

/* A QP the caller may see: any for an administrator, else its own clients'. */
static bool visible(const struct snapshot *s, const struct snap_qp *sq)
{
	return !s->own_only || (sq->has_owner && sq->owner.uid == s->uid);
}

static json_t *reply_qps(const struct snapshot *s)
{
	json_t *o = json_object(), *a = json_array();

	for (uint32_t i = 0; i < s->nqps; i++) {
		const struct snap_qp *sq = &s->qps[i];
		json_t *q, *paths, *down;
		char buf[MROC_ADDR_STRLEN];

		if (!visible(s, sq))
			continue;
		q = status_qp(&sq->info);
		paths = json_array();
		down = json_array();

		json_object_set_new(q, "worker", json_integer(sq->worker));
		set_owner(q, sq);
		if (sq->has_peer)
			json_object_set_new(q, "peer", json_string(addr_str(&sq->peer, buf,
									     sizeof(buf))));
		for (unsigned p = 0; p < sq->npaths; p++) {
			json_t *pj = status_path(&sq->paths[p], s->now);

			if (sq->port[p][0])
				json_object_set_new(pj, "port", json_string(sq->port[p]));
			status_path_set_health(pj, &sq->paths[p], sq->port[p],
					       (const char (*)[16])sq->down, sq->ndown);
			json_array_append_new(paths, pj);
		}
		json_object_set_new(q, "paths", paths);
		/* What the paths above avoid: taken in the same worker call. */
		for (unsigned p = 0; p < sq->ndown; p++)
			json_array_append_new(down, json_string(sq->down[p]));
		json_object_set_new(q, "ports_down", down);
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

/*
 * A user who is no administrator asked for counters: its own clients' only
 * (the daemon's packets, peers and other users' clients are not its to see).
 */
static json_t *reply_own_counters(struct mrocd *d, const struct snapshot *s)
{
	const struct clients_uid_stats *u = &s->own;

	return json_pack("{s:b, s:I, s:I, s:b, s:s, s:I, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}}",
		"ok", 1, "uptime_ns", (json_int_t)(s->now - d->started_ns),
		"counting_ns", (json_int_t)(s->now - d->started_ns), "reset", 0,
		"scope", "uid", "uid", (json_int_t)s->uid,
		"clients", "clients", (json_int_t)u->clients, "qps", (json_int_t)u->qps,
		"mrs", (json_int_t)u->mrs, "locked_bytes", (json_int_t)u->locked_bytes,
		"wrs", (json_int_t)u->wrs, "bad_wrs", (json_int_t)u->bad_wrs,
		"cqes", (json_int_t)u->cqes, "cq_overflows", (json_int_t)u->cq_overflows);
}

static json_t *denied(const char *cmd, const struct ctl_caller *who)
{
	json_t *r = error_reply("permission denied: \"%s\" is for administrators (root, mrocd's "
				"user or a member of daemon.admin_group); uid %u is not one", cmd,
				(unsigned)who->uid);

	json_object_set_new(r, "denied", json_true());
	return r;
}

/* The answer comes after the reload: "ok" false with the file's error when it failed. */
static json_t *reply_reload(struct mrocd *d)
{
	char why[512];

	if (mrocd_reload(d, why, sizeof(why)))
		return error_reply("reload failed, the running configuration stays: %s", why);
	return json_pack("{s:b, s:s}", "ok", 1, "result", why);
}

/* ---- dispatch -------------------------------------------------------------------- */

static const char *const snapshot_cmds[] = {
	"status", "counters", "counters_reset", "links", "qps", NULL,
};

/* Commands only an administrator may send. */
static const char *const admin_cmds[] = { "reload", "counters_reset", "links", NULL };

json_t *admin_handle(void *ctx, const json_t *req, const struct ctl_caller *who)
{
	struct mrocd *d = ctx;
	const char *cmd = json_string_value(json_object_get(req, "cmd"));
	const json_t *qpn = json_object_get(req, "qpn");
	const char *const *c;
	struct snapshot *s;
	json_t *reply;
	int err;

	if (!cmd)
		return error_reply("missing \"cmd\"");
	for (c = admin_cmds; !who->admin && *c; c++)
		if (!strcmp(*c, cmd)) {
			pr_info_rl("admin socket: \"%s\" of uid %u (pid %d) refused: not an "
				   "administrator", cmd, (unsigned)who->uid, (int)who->pid);
			return denied(cmd, who);
		}
	if (!strcmp(cmd, "config"))
		return reply_config(d);
	if (!strcmp(cmd, "reload"))
		return reply_reload(d);
	for (c = snapshot_cmds; *c && strcmp(*c, cmd); c++)
		;
	if (!*c)
		return error_reply("unknown \"cmd\" \"%.64s\"", cmd);
	if (qpn && (!json_is_integer(qpn) || json_integer_value(qpn) < 0 ||
		    json_integer_value(qpn) > UINT32_MAX))
		return error_reply("\"qpn\" must be an integer 0..4294967295");
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->want_qps = !strcmp(cmd, "qps");
	s->one_qp = s->want_qps && qpn;
	s->qpn = (uint32_t)json_integer_value(qpn);
	s->own_only = !who->admin;
	s->uid = who->uid;
	err = snapshot_take(d, s);
	/* Another user's QP is as one that does not exist. */
	if (!err && s->one_qp && !visible(s, &s->qps[0]))
		err = -ENOENT;
	if (err == -ENOENT)
		reply = error_reply("no QP %u", s->qpn);
	else if (err)
		reply = error_reply("snapshot: %s", strerror(-err));
	else if (!strcmp(cmd, "status"))
		reply = reply_status(d, s);
	else if (!strcmp(cmd, "counters"))
		reply = s->own_only ? reply_own_counters(d, s) : reply_counters(d, s, req);
	else if (!strcmp(cmd, "counters_reset"))
		reply = reply_counters_reset(d, s);
	else if (!strcmp(cmd, "links"))
		reply = reply_links(s);
	else
		reply = reply_qps(s);
	snapshot_free(s);
	return reply;
}
