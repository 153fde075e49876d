// SPDX-License-Identifier: MIT
/*
 * mroc-perf session: the conversation on the side channel (oob.h has the
 * message sequence), libmroc resources, and the loop over message sizes.
 * The client's options decide the test; the server creates its QPs, listens
 * on service_id + i for QP i and tells the client where its mrocd is.
 *
 * Regions: one per QP, allocated by libmroc (shared with mrocd), readable,
 * writable and remotely accessible.  Bandwidth tests size them for up to
 * PERF_SLOTS_MAX messages of the largest size within PERF_QP_BUDGET per QP
 * and PERF_BUDGET in all, or --slots (each side its own: mrocd pins them,
 * and 16 processes of 250 QPs pinned 4 GiB per host); latency tests use
 * three messages (lat.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "perf.h"

#define CONTROL_SERVICE	0x6d726f6300000001ull	/* mrocd's own links: never ours */

int perf_fail(struct perf *pf, int err, const char *fmt, ...)
{
	va_list ap;

	if (!pf->failed) {
		pf->failed = true;
		va_start(ap, fmt);
		vsnprintf(pf->err, sizeof(pf->err), fmt, ap);
		va_end(ap);
		fprintf(stderr, "mroc-perf: %s\n", pf->err);
	}
	return err < 0 ? err : -EIO;
}

static void perf_init(struct perf *pf, const struct perf_opts *o, bool server)
{
	const char *env = getenv("MROC_SOCKET");

	memset(pf, 0, sizeof(*pf));
	pf->o = o;
	pf->server = server;
	pf->epfd = -1;
	oob_init(&pf->oob);
	/* libmroc's documented order: the option, $MROC_SOCKET, /run/mroc/mrocd.sock. */
	snprintf(pf->socket_path, sizeof(pf->socket_path), "%s",
		 o->socket_path ? o->socket_path : env && *env ? env : "/run/mroc/mrocd.sock");
}

/* Region and queue sizes, computed alike on both sides from the parameters. */
static void perf_layout(struct perf *pf)
{
	const struct oob_params *p = &pf->p;
	uint64_t max = p->flags & OOB_F_ALL ? PERF_ALL_MAX : p->size, len;

	pf->max_size = max;
	if (pf->t->lat) {
		len = 3 * max;
	} else {
		uint64_t budget = PERF_BUDGET / p->qps, slots;

		if (budget > PERF_QP_BUDGET)
			budget = PERF_QP_BUDGET;
		slots = budget / max;
		if (pf->o->slots && slots > pf->o->slots)
			slots = pf->o->slots;
		slots = slots < 1 ? 1 : slots > PERF_SLOTS_MAX ? PERF_SLOTS_MAX : slots;
		len = slots * max;
	}
	pf->region_len = (size_t)((len + 4095) & ~4095ull);
	pf->recv_slots = 0;
	if (pf->t->verb == PERF_SEND && pf->t->lat) {
		pf->recv_slots = PERF_LAT_RECVS;
	} else if (pf->t->verb == PERF_SEND) {
		unsigned int distinct = perf_slots(pf->region_len, max);

		pf->recv_slots = p->rx_depth;
		if ((p->flags & OOB_F_VERIFY) && distinct < pf->recv_slots)
			pf->recv_slots = distinct;
	}
}

int perf_params_check(const struct oob_params *p, char *why, size_t n)
{
	const struct perf_test_info *t = p->test < PERF_NTESTS ? &perf_tests[p->test] : NULL;

	if (p->version != OOB_VERSION)
		return snprintf(why, n, "side channel version %u, this mroc-perf speaks %u",
				p->version, OOB_VERSION), -EPROTO;
	if (!t)
		return snprintf(why, n, "unknown test %u", p->test), -EINVAL;
	if (p->mode > MROC_QP_ROCEV2 && p->mode != MROC_QP_DEFAULT)
		return snprintf(why, n, "unknown mode %u", p->mode), -EINVAL;
	if (p->paths > 16)
		return snprintf(why, n, "--paths %u: 1..16", p->paths), -EINVAL;
	if (!p->qps || p->qps > OOB_MAX_QPS || (t->lat && p->qps != 1))
		return snprintf(why, n, "-q %u: %s", p->qps,
				t->lat ? "latency tests use one QP" : "1..256"), -EINVAL;
	if (!(p->flags & OOB_F_ALL) && (!p->size || p->size > PERF_MAX_SIZE))
		return snprintf(why, n, "-s %" PRIu64 ": 1..%u", p->size, PERF_MAX_SIZE), -EINVAL;
	if (!p->tx_depth || p->tx_depth > PERF_MAX_DEPTH)
		return snprintf(why, n, "-t %u: 1..%u", p->tx_depth, PERF_MAX_DEPTH), -EINVAL;
	if (!p->rx_depth || p->rx_depth > PERF_MAX_DEPTH)
		return snprintf(why, n, "-r %u: 1..%u", p->rx_depth, PERF_MAX_DEPTH), -EINVAL;
	if (!p->cq_mod || p->cq_mod > PERF_MAX_DEPTH)
		return snprintf(why, n, "-Q %u: 1..%u", p->cq_mod, PERF_MAX_DEPTH), -EINVAL;
	if (!p->iters == !p->duration_s)
		return snprintf(why, n, "either iterations or a duration"), -EINVAL;
	if ((p->flags & OOB_F_BIDIR) && t->lat)
		return snprintf(why, n, "-b: bidirectional runs are bandwidth tests (as perftest's)"),
		       -EINVAL;
	/* Each side's region is the source of its messages and the target of the peer's. */
	if ((p->flags & OOB_F_BIDIR) && (p->flags & OOB_F_VERIFY))
		return snprintf(why, n, "-b and --verify exclude each other: both sides' messages "
				"share the regions"), -EINVAL;
	if ((p->flags & OOB_F_BIDIR) && t->verb == PERF_READ && p->tx_depth > PERF_BIDIR_READS)
		return snprintf(why, n, "read_bw -b: -t %u or less (mrocd queues READ responses "
				"behind its own READ requests, so more in flight both ways stall)",
				PERF_BIDIR_READS), -EINVAL;
	if (t->verb == PERF_ATOMIC && ((p->flags & OOB_F_ALL) || p->size != PERF_ATOMIC_SIZE))
		return snprintf(why, n, "%s: atomics are %u bytes (-s %u, no -a)", t->name,
				PERF_ATOMIC_SIZE, PERF_ATOMIC_SIZE), -EINVAL;
	if (t->verb == PERF_ATOMIC && (p->flags & OOB_F_BIDIR))
		return snprintf(why, n, "%s -b: not offered (both sides would count on one word)",
				t->name), -EINVAL;
	if (t->verb != PERF_ATOMIC && (p->flags & OOB_F_CSWAP))
		return snprintf(why, n, "-A: atomic tests only"), -EINVAL;
	if (p->duration_s > 86400)
		return snprintf(why, n, "-D %u: 1..86400", p->duration_s), -EINVAL;
	return 0;
}

/* ---- libmroc resources -------------------------------------------------------------- */

/* Open the daemon's context once (the server does it before it waits for a client). */
static int perf_open_ctx(struct perf *pf)
{
	struct mroc_ctx_opts co = { .sz = sizeof(co), .socket_path = pf->o->socket_path };
	int err;

	if (pf->ctx)
		return 0;
	pf->ctx = mroc_open(&co);
	if (pf->ctx)
		return 0;
	err = -errno;
	return perf_fail(pf, err, "cannot use mrocd at %s: %s", pf->socket_path, mroc_strerror(err));
}

static int perf_open(struct perf *pf)
{
	unsigned int access = MROC_ACCESS_LOCAL_WRITE | MROC_ACCESS_REMOTE_WRITE |
			      MROC_ACCESS_REMOTE_READ | MROC_ACCESS_REMOTE_ATOMIC;
	struct mroc_qp_attr attr = {
		.sz = sizeof(attr),
		.mode = pf->p.mode,
		.paths = pf->p.paths,
		.sq_depth = pf->t->lat ? 16 : pow2_up(pf->p.tx_depth < 16 ? 16 : pf->p.tx_depth),
		.rq_depth = pow2_up(pf->recv_slots < 16 ? 16 : pf->recv_slots),
	};
	int err = perf_open_ctx(pf);

	if (err)
		return err;
	pf->nqp = pf->p.qps;
	pf->qp = calloc(pf->nqp, sizeof(*pf->qp));
	if (!pf->qp)
		return perf_fail(pf, -ENOMEM, "out of memory");
	for (unsigned int i = 0; i < pf->nqp; i++) {
		struct perf_qp *q = &pf->qp[i];

		q->idx = i;
		q->mr = mroc_mr_alloc(pf->ctx, pf->region_len, access);
		if (!q->mr)
			return perf_fail(pf, -errno, "qp %u: mroc_mr_alloc(%zu bytes): %s", i,
					 pf->region_len, mroc_strerror(-errno));
		q->buf = mroc_mr_addr(q->mr);
		q->len = mroc_mr_len(q->mr);
		q->lkey = mroc_mr_lkey(q->mr);
		q->qp = mroc_qp_create(pf->ctx, &attr);
		if (!q->qp)
			return perf_fail(pf, -errno, "qp %u: mroc_qp_create: %s", i,
					 mroc_strerror(-errno));
		q->local.qpn = mroc_qp_num(q->qp);
		q->local.rkey = mroc_mr_rkey(q->mr);
		q->local.region_len = q->len;
	}
	return 0;
}

static void perf_close(struct perf *pf)
{
	for (unsigned int i = 0; pf->qp && i < pf->nqp; i++) {
		if (pf->qp[i].qp)
			mroc_qp_destroy(pf->qp[i].qp);
		if (pf->qp[i].mr)
			mroc_mr_dereg(pf->qp[i].mr);
	}
	free(pf->qp);
	pf->qp = NULL;
	if (pf->epfd >= 0)
		close(pf->epfd);
	pf->epfd = -1;
	if (pf->ctx)
		mroc_close(pf->ctx);
	pf->ctx = NULL;
	oob_close(&pf->oob);
	samples_free(&pf->lat);
	report_free(&pf->rep);
	if (pf->json_file) {
		report_free(&pf->rep_json);
		fclose(pf->json_file);
		pf->json_file = NULL;
	}
}

static void qps_message(struct perf *pf, struct oob_qps *m)
{
	m->n = pf->nqp;
	for (unsigned int i = 0; i < pf->nqp; i++)
		m->qp[i] = pf->qp[i].local;
}

static int take_remote_qps(struct perf *pf, const struct oob_qps *m)
{
	if (m->n != pf->nqp)
		return perf_fail(pf, -EPROTO, "the peer has %u QPs, not %u", m->n, pf->nqp);
	for (unsigned int i = 0; i < pf->nqp; i++)
		pf->qp[i].remote = m->qp[i];
	return 0;
}

/* What a failed connect's errno (mroc_qp_wait_connected) says the peer's mrocd did. */
static const char *connect_failure(int err)
{
	switch (err) {
	case -ETIMEDOUT:
		return "did not answer";
	case -ECONNREFUSED:
		return "refused it (nobody listens on the service, or it is busy)";
	case -EACCES:
		return "refused it: the daemons' security modes differ";
	case -EINVAL:
		return "refused its mode, MTU or paths";
	case -EAGAIN:
		return "had no room for it";
	case -ECONNRESET:
		return "closed it";
	default:
		return NULL;
	}
}

static int wait_connected(struct perf *pf)
{
	for (unsigned int i = 0; i < pf->nqp; i++) {
		int err = mroc_qp_wait_connected(pf->qp[i].qp, PERF_CONNECT_MS);
		const char *why = connect_failure(err);

		/* libmroc's texts for these errnos are about its own socket. */
		if (why)
			return perf_fail(pf, err, "qp %u: mrocd %s %s (service 0x%" PRIx64 ")", i,
					 pf->server ? "of the client" : pf->mrocd, why,
					 pf->service_id + i);
		if (err)
			return perf_fail(pf, err, "qp %u: connection to mrocd %s, service 0x%" PRIx64
					 " failed: %s", i, pf->server ? "(client)" : pf->mrocd,
					 pf->service_id + i, mroc_strerror(err));
	}
	return 0;
}

/* ---- output ------------------------------------------------------------------------- */

static void perf_report_init(struct perf *pf)
{
	static const char *const modes[] = { "metaroce", "rocev2" };

	/* perftest's title names the atomic: "Atomic FETCH_AND_ADD BW Test". */
	if (pf->t->verb == PERF_ATOMIC)
		snprintf(pf->title, sizeof(pf->title), "Atomic %s %s",
			 perf_is_cswap(pf) ? "CMP_AND_SWAP" : "FETCH_AND_ADD",
			 pf->t->lat ? "Latency Test" : "BW Test");
	else
		snprintf(pf->title, sizeof(pf->title), "%s", pf->t->title);

	struct report_hdr h = {
		.test = pf->t->name,
		.title = pf->title,
		.side = pf->server ? "server" : "client",
		.lat = pf->t->lat,
		.qps = pf->p.qps,
		.mode = pf->p.mode <= MROC_QP_ROCEV2 ? modes[pf->p.mode] : "mrocd's",
		.paths = pf->p.paths,
		.tx_depth = pf->t->lat ? 1 : pf->p.tx_depth,
		.rx_depth = pf->recv_slots,
		.cq_mod = pf->t->lat ? 1 : pf->p.cq_mod,
		.iters = pf->p.iters,
		.duration_s = pf->p.duration_s,
		.verify = pf->p.flags & OOB_F_VERIFY,
		.sleep = pf->o->sleep,
		.port = pf->o->port,
		.socket_path = pf->socket_path,
		.gbits = pf->o->gbits,
		.bidir = pf->p.flags & OOB_F_BIDIR,
		.cpu_util = pf->o->cpu_util,
	};

	report_init(&pf->rep, stdout, pf->o->json, &h);
	/* --out_json: the same document in a file, the text on stdout as usual. */
	if (pf->o->out_json && !pf->json_file) {
		pf->json_file = fopen(pf->o->out_json, "we");
		if (pf->json_file)
			report_init(&pf->rep_json, pf->json_file, true, &h);
		else
			fprintf(stderr, "mroc-perf: --out_json %s: %s\n", pf->o->out_json,
				strerror(errno));
	}
}

static int perf_report_begin(struct perf *pf)
{
	struct report_qp *rq = calloc(pf->nqp, sizeof(*rq));
	int err;

	if (!rq)
		return perf_fail(pf, -ENOMEM, "out of memory");
	for (unsigned int i = 0; i < pf->nqp; i++) {
		const struct perf_qp *q = &pf->qp[i];

		rq[i] = (struct report_qp){
			.qpn = q->local.qpn, .rkey = q->local.rkey, .region_len = q->local.region_len,
			.rqpn = q->remote.qpn, .rrkey = q->remote.rkey,
			.rregion_len = q->remote.region_len,
			.mrocd = pf->server ? NULL : pf->mrocd, .service_id = pf->service_id + i,
		};
	}
	err = report_begin(&pf->rep, rq, pf->nqp);
	if (!err && pf->json_file)
		err = report_begin(&pf->rep_json, rq, pf->nqp);
	free(rq);
	return err ? perf_fail(pf, err, "out of memory") : 0;
}

/*
 * One row: d is what one side measured; with -b, peer is the other direction,
 * added (perftest's duplex report).  NULL otherwise.
 */
static int perf_report_row(struct perf *pf, const struct oob_done *d, const struct oob_done *peer,
			   const char *by)
{
	struct report_row row = { .lat = d->kind == OOB_RES_LAT, .measured_by = by,
				  .cpu = pf->cpu };

	if (row.lat) {
		row.size = d->lat_size;
		row.iters = d->lat_iters;
		row.st = d->lat;
	} else {
		row.bw = d->bw;
		if (peer && peer->kind == OOB_RES_BW) {
			stats_bw_add(&row.bw, &peer->bw);
			row.measured_by = "both";
		}
	}
	if (report_row(&pf->rep, &row) || (pf->json_file && report_row(&pf->rep_json, &row)))
		return perf_fail(pf, -ENOMEM, "out of memory");
	return 0;
}

/* --cpu_util: the run starts / ends now. */
static void perf_cpu_start(struct perf *pf)
{
	if (pf->o->cpu_util)
		cpu_sample(&pf->cpu0);
}

static void perf_cpu_end(struct perf *pf)
{
	struct cpu_sample now;

	if (!pf->o->cpu_util)
		return;
	cpu_sample(&now);
	cpu_util_between(&pf->cpu0, &now, &pf->cpu);
}

/* ---- one message size --------------------------------------------------------------- */

/* This side's measurement of the run just done, as DONE / DONE_ACK carry it. */
static void fill_done(struct perf *pf, struct oob_done *d, bool measured,
		      const struct bw_result *bw, const struct lat_stats *st)
{
	memset(d, 0, sizeof(*d));
	d->kind = !measured ? OOB_RES_NONE : pf->t->lat ? OOB_RES_LAT : OOB_RES_BW;
	if (bw)
		d->bw = *bw;
	if (st) {
		d->lat = *st;
		d->lat_size = pf->size;
		/* The server has one sample fewer than it answered pings. */
		d->lat_iters = pf->server && pf->done.n ? pf->done.msgs[0] : st->n;
	}
	d->n = pf->nqp;
	for (unsigned int i = 0; i < pf->nqp; i++) {
		const struct perf_qp *q = &pf->qp[i];

		if (pf->t->lat)
			d->msgs[i] = pf->server && pf->done.n ? pf->done.msgs[0] : pf->lat.n;
		else if (pf->p.flags & OOB_F_BIDIR)
			d->msgs[i] = q->completed;	/* what this side sent */
		else
			d->msgs[i] = pf->server ? q->received : q->completed;
	}
}

static int client_size(struct perf *pf, uint64_t size)
{
	bool bidir = pf->p.flags & OOB_F_BIDIR;
	struct oob_msg m = { .type = OOB_RUN };
	struct oob_done mine;
	struct bw_result bw;
	struct lat_stats st;
	int err;

	pf->size = size;
	pf->iters = pf->p.duration_s ? 0 : pf->p.iters;
	pf->duration_s = pf->p.duration_s;
	pf->done_seen = false;
	/* -b send_bw: the server's messages need receives here before it starts. */
	err = pf->t->lat ? lat_prepare(pf) : bidir ? bw_prepare(pf) : 0;
	if (err)
		return err;
	m.u.run = (struct oob_run){ .size = size, .iters = pf->iters, .duration_s = pf->duration_s };
	err = oob_send(&pf->oob, &m);
	if (err)
		return perf_fail(pf, err, "side channel: %s", strerror(-err));
	err = perf_expect(pf, OOB_READY, &m, PERF_OOB_MS);
	if (err)
		return err;
	if (m.u.status.status) {
		pf->peer_failed = true;
		return perf_fail(pf, m.u.status.status, "server: %s", m.u.status.text);
	}
	perf_cpu_start(pf);
	err = pf->t->lat ? lat_client(pf, &st) : bw_client(pf, &bw);
	if (err)
		return err;
	m.type = OOB_DONE;
	fill_done(pf, &m.u.done, true, pf->t->lat ? NULL : &bw, pf->t->lat ? &st : NULL);
	mine = m.u.done;
	err = oob_send(&pf->oob, &m);
	if (err)
		return perf_fail(pf, err, "side channel: %s", strerror(-err));
	/* -b send_bw: keep receiving until the server's last message (its DONE_ACK says how many). */
	if (bidir && pf->t->verb == PERF_SEND) {
		err = bw_recv_rest(pf);
		if (err)
			return err;
	}
	perf_cpu_end(pf);
	if (pf->done_seen)
		m.u.done = pf->done;
	else
		err = perf_expect(pf, OOB_DONE_ACK, &m, PERF_OOB_MS + (int)pf->o->timeout_s * 1000);
	if (err)
		return err;
	if (m.u.done.st.status) {
		pf->peer_failed = true;
		return perf_fail(pf, m.u.done.st.status, "server: %s", m.u.done.st.text);
	}
	return perf_report_row(pf, &mine, bidir ? &m.u.done : NULL, "client");
}

static int server_size(struct perf *pf, const struct oob_run *run)
{
	struct oob_msg m;
	struct bw_result bw;
	struct lat_stats st;
	bool measured;
	int err;

	if (!run->size || run->size > pf->max_size || !run->iters == !run->duration_s)
		return perf_fail(pf, -EPROTO, "side channel: RUN of %" PRIu64 " bytes, %" PRIu64
				 " iterations, %u s", run->size, run->iters, run->duration_s);
	pf->size = run->size;
	pf->iters = run->iters;
	pf->duration_s = run->duration_s;
	pf->done_seen = false;
	err = pf->t->lat ? lat_prepare(pf) : bw_prepare(pf);
	if (err)
		return err;
	err = oob_send_status(&pf->oob, OOB_READY, 0, NULL);
	if (err)
		return perf_fail(pf, err, "side channel: %s", strerror(-err));
	perf_cpu_start(pf);
	err = pf->t->lat ? lat_server(pf, &st, &measured) : bw_server(pf, &bw, &measured);
	perf_cpu_end(pf);
	if (err)
		return err;
	if (!pf->done_seen) {
		err = perf_expect(pf, OOB_DONE, &m, PERF_OOB_MS + (int)pf->o->timeout_s * 1000);
		if (err)
			return err;
		pf->done = m.u.done;
		pf->done_seen = true;
	}
	m.type = OOB_DONE_ACK;
	fill_done(pf, &m.u.done, measured, measured && !pf->t->lat ? &bw : NULL,
		  measured && pf->t->lat ? &st : NULL);
	err = oob_send(&pf->oob, &m);
	if (err)
		return perf_fail(pf, err, "side channel: %s", strerror(-err));
	/* The row: what this side measured (-b: and the client's), else the client's figures. */
	if (pf->p.flags & OOB_F_BIDIR)
		return perf_report_row(pf, &m.u.done, &pf->done, "server");
	return measured ? perf_report_row(pf, &m.u.done, NULL, "server")
			: perf_report_row(pf, &pf->done, NULL, "client");
}

static int for_each_size(struct perf *pf)
{
	uint64_t size = pf->p.flags & OOB_F_ALL ? PERF_ALL_MIN : pf->p.size;

	for (; size <= pf->max_size; size *= 2) {
		int err = client_size(pf, size);

		if (err)
			return err;
		if (!(pf->p.flags & OOB_F_ALL))
			break;
	}
	return 0;
}

/* ---- client and server ------------------------------------------------------------------ */

static void params_of(const struct perf_opts *o, struct oob_params *p)
{
	memset(p, 0, sizeof(*p));
	p->version = OOB_VERSION;
	p->test = (uint8_t)o->test;
	p->mode = o->mode;
	p->paths = (uint8_t)o->paths;
	p->flags = (o->verify ? OOB_F_VERIFY : 0) | (o->all ? OOB_F_ALL : 0) |
		   (o->bidir ? OOB_F_BIDIR : 0);
	p->qps = o->qps;
	p->tx_depth = o->tx_depth;
	p->rx_depth = o->rx_depth;
	p->cq_mod = o->cq_mod;
	p->size = o->size;
	p->iters = o->duration_s ? 0 : o->iters;
	p->duration_s = o->duration_s;
}

static int client_setup(struct perf *pf)
{
	const struct perf_opts *o = pf->o;
	struct oob_msg m = { .type = OOB_PARAMS };
	int err;

	err = oob_connect(&pf->oob, o->server, o->port, 5000);
	if (err)
		return perf_fail(pf, err, "cannot reach the server %s, TCP port %u: %s", o->server,
				 o->port, strerror(-err));
	m.u.params = pf->p;
	err = oob_send(&pf->oob, &m);
	if (err)
		return perf_fail(pf, err, "side channel: %s", strerror(-err));
	err = perf_expect(pf, OOB_SETUP, &m, PERF_OOB_MS);
	if (err)
		return err;
	pf->service_id = m.u.qps.service_id;
	snprintf(pf->mrocd, sizeof(pf->mrocd), "%s",
		 o->mroc_addr ? o->mroc_addr : m.u.qps.mrocd[0] ? m.u.qps.mrocd : pf->oob.peer);
	err = perf_open(pf);
	if (!err)
		err = take_remote_qps(pf, &m.u.qps);
	for (unsigned int i = 0; !err && i < pf->nqp; i++) {
		err = mroc_qp_connect(pf->qp[i].qp, pf->mrocd, pf->service_id + i);
		if (err)
			err = perf_fail(pf, err, "qp %u: mroc_qp_connect(%s, 0x%" PRIx64 "): %s", i,
					pf->mrocd, pf->service_id + i, mroc_strerror(err));
	}
	if (!err)
		err = wait_connected(pf);
	if (err)
		return err;
	m.type = OOB_CLIENT_QPS;
	memset(&m.u.qps, 0, sizeof(m.u.qps));
	qps_message(pf, &m.u.qps);
	err = oob_send(&pf->oob, &m);
	return err ? perf_fail(pf, err, "side channel: %s", strerror(-err)) : 0;
}

/* Tell the peer why we stop, unless it told us. */
static void perf_finish(struct perf *pf)
{
	if (pf->failed && !pf->peer_failed && pf->oob.fd >= 0)
		oob_send_status(&pf->oob, OOB_ERROR, -EIO, pf->err);
	report_end(&pf->rep, pf->failed ? pf->err : NULL);
	if (pf->json_file)
		report_end(&pf->rep_json, pf->failed ? pf->err : NULL);
}

int perf_client(const struct perf_opts *o)
{
	struct perf pf;
	int err;

	perf_init(&pf, o, false);
	params_of(o, &pf.p);
	pf.t = &perf_tests[o->test];
	perf_layout(&pf);
	perf_report_init(&pf);
	err = client_setup(&pf);
	if (!err)
		err = perf_report_begin(&pf);
	if (!err)
		err = for_each_size(&pf);
	/* --run_infinitely: perftest's, a result every -D seconds until interrupted. */
	while (!err && o->run_infinitely)
		err = for_each_size(&pf);
	if (!err)
		oob_send_type(&pf.oob, OOB_BYE);
	perf_finish(&pf);
	perf_close(&pf);
	return pf.failed ? 1 : 0;
}

/* Test options given to the server too: the client's win; say so when they differ. */
static void server_note_ignored(const struct perf_opts *o, const struct oob_params *p)
{
	if ((o->given & PERF_GIVEN_SIZE) && (o->size != p->size || o->all != !!(p->flags & OOB_F_ALL)))
		fprintf(stderr, "mroc-perf: the client's message size is used, not the server's\n");
	if ((o->given & PERF_GIVEN_ITERS) &&
	    (o->duration_s != p->duration_s || (!o->duration_s && o->iters != p->iters)))
		fprintf(stderr, "mroc-perf: the client's iterations/duration are used, not the "
			"server's\n");
	if ((o->given & PERF_GIVEN_QPS) && o->qps != p->qps)
		fprintf(stderr, "mroc-perf: the client's -q %u is used, not -q %u\n", p->qps, o->qps);
	if ((o->given & PERF_GIVEN_DEPTH) && o->tx_depth != p->tx_depth)
		fprintf(stderr, "mroc-perf: the client's -t %u is used, not -t %u\n", p->tx_depth,
			o->tx_depth);
}

static int server_params(struct perf *pf)
{
	const struct perf_opts *o = pf->o;
	struct oob_msg m;
	char why[OOB_TEXT];
	int err;

	err = perf_expect(pf, OOB_PARAMS, &m, PERF_OOB_MS);
	if (err)
		return err;
	err = perf_params_check(&m.u.params, why, sizeof(why));
	if (err)
		return perf_fail(pf, err, "the client's parameters: %s", why);
	if (m.u.params.test != o->test)
		return perf_fail(pf, -EINVAL, "this server runs %s, the client asked for %s",
				 perf_tests[o->test].name, perf_tests[m.u.params.test].name);
	server_note_ignored(o, &m.u.params);
	pf->p = m.u.params;
	return 0;
}

static int server_setup(struct perf *pf)
{
	const struct perf_opts *o = pf->o;
	struct oob_msg m;
	int err;

	/* The daemon first: a server without one would wait for a client it cannot serve. */
	err = perf_open_ctx(pf);
	if (err)
		return err;
	err = oob_listen(&pf->oob, o->port);
	if (err)
		return perf_fail(pf, err, "cannot listen on TCP port %u: %s", o->port, strerror(-err));
	if (!o->json)
		printf("\n************************************\n"
		       "* Waiting for client to connect... *\n"
		       "************************************\n");
	fflush(stdout);
	err = oob_accept(&pf->oob, -1);
	if (err)
		return perf_fail(pf, err, "accept: %s", strerror(-err));
	err = server_params(pf);
	if (err)
		return err;
	perf_layout(pf);
	perf_report_init(pf);
	do {
		if (getrandom(&pf->service_id, sizeof(pf->service_id), 0) != sizeof(pf->service_id))
			pf->service_id = mono_ns();
		pf->service_id &= ~(0xffffull << 48);	/* room for + i */
	} while (pf->service_id <= CONTROL_SERVICE && pf->service_id + OOB_MAX_QPS > CONTROL_SERVICE);
	snprintf(pf->mrocd, sizeof(pf->mrocd), "%s", o->mroc_addr ? o->mroc_addr : "");
	err = perf_open(pf);
	for (unsigned int i = 0; !err && i < pf->nqp; i++) {
		err = mroc_qp_listen(pf->qp[i].qp, pf->service_id + i);
		if (err)
			err = perf_fail(pf, err, "qp %u: mroc_qp_listen(0x%" PRIx64 "): %s", i,
					pf->service_id + i, mroc_strerror(err));
	}
	if (err)
		return err;
	memset(&m, 0, sizeof(m));
	m.type = OOB_SETUP;
	m.u.qps.service_id = pf->service_id;
	snprintf(m.u.qps.mrocd, sizeof(m.u.qps.mrocd), "%s", pf->mrocd);
	qps_message(pf, &m.u.qps);
	err = oob_send(&pf->oob, &m);
	if (err)
		return perf_fail(pf, err, "side channel: %s", strerror(-err));
	err = perf_expect(pf, OOB_CLIENT_QPS, &m, PERF_OOB_MS + PERF_CONNECT_MS);
	if (!err)
		err = take_remote_qps(pf, &m.u.qps);
	return err ? err : wait_connected(pf);
}

static int server_loop(struct perf *pf)
{
	struct oob_msg m;

	for (;;) {
		int err = perf_recv(pf, &m, -1);

		if (err)
			return err;
		if (m.type == OOB_BYE)
			return 0;
		if (m.type != OOB_RUN)
			return perf_fail(pf, -EPROTO, "side channel: %s from the client, expected RUN "
					 "or BYE", oob_type_name(m.type));
		err = server_size(pf, &m.u.run);
		if (err)
			return err;
	}
}

int perf_server(const struct perf_opts *o)
{
	struct perf pf;
	int err;

	perf_init(&pf, o, true);
	pf.t = &perf_tests[o->test];
	pf.p.test = (uint8_t)o->test;
	pf.p.qps = o->qps;
	perf_report_init(&pf);
	err = server_setup(&pf);
	if (!err)
		err = perf_report_begin(&pf);
	if (!err)
		err = server_loop(&pf);
	perf_finish(&pf);
	perf_close(&pf);
	return pf.failed ? 1 : 0;
}
