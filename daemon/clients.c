// SPDX-License-Identifier: MIT
/*
 * libmroc clients on the daemon side (see clients.h).  Ownership: the
 * control thread owns struct client and its regions; the worker owns the
 * list of active QPs (their ring views, accounting) and the zombies.  They
 * meet only inside worker_call(), which is synchronous, so nothing here
 * needs a lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "abi.h"
#include "clients.h"
#include "evfd.h"
#include "links.h"
#include "log.h"
#include "mroc/mroc.h"
#include "peers.h"
#include "qpmap.h"
#include "ring.h"
#include "steer.h"
#include "worker.h"

#define QP_BATCH		32	/* work requests taken from one QP per loop */
#define CLIENT_BATCH		64	/* ... and from all of one client's QPs */
#define UIDS_MAX		4096	/* users with clients: limits.max_clients' largest value */
#define CQ_EVENT_ROOM		8	/* connection events need CQ room too */
#define BAD_WR_LIMIT		1024	/* then the client is disconnected */
#define ZOMBIE_NS		(2ULL * 1000000000ULL)
#define MAX_CLIENTS		4096	/* limits.max_clients' upper bound */
/*
 * The worker's per-loop cost must not grow with the number of QPs (issue
 * #10): it looks at no more than POLL_BUDGET busy ("hot") QPs and
 * SWEEP_BUDGET idle ("cold") ones per loop, round-robin.  A hot QP that
 * found nothing to do for HOT_NS goes cold: its rings get NEED_WAKEUP for
 * good, so the client rings its doorbell on the next post, and the worker
 * looks at that client's QPs.  The sweep only bounds the delay when the
 * worker is too busy to sleep (and so to see doorbells).
 */
#define POLL_BUDGET		256
#define SWEEP_BUDGET		32
#define HOT_NS			1000000ULL
#define NOT_LISTED		UINT32_MAX

/* The library's codes are the engine's, so they pass through unchanged. */
static_assert((int)MROC_WR_READ == (int)ENGINE_WR_READ &&
	      (int)MROC_WR_ATOMIC_FETCH_ADD == (int)ENGINE_WR_ATOMIC_FETCH_ADD &&
	      (int)MROC_WR_ATOMIC_CMP_SWP == (int)ENGINE_WR_ATOMIC_CMP_SWP &&
	      MROC_SEND_SIGNALED == ENGINE_WR_SIGNALED, "work request opcodes");
static_assert((int)MROC_WC_EVENT_ERROR == (int)ENGINE_WC_EV_ERROR &&
	      (int)MROC_WC_ATOMIC_FETCH_ADD == (int)ENGINE_WC_ATOMIC_FETCH_ADD &&
	      (int)MROC_WC_ATOMIC_CMP_SWP == (int)ENGINE_WC_ATOMIC_CMP_SWP &&
	      (int)MROC_WC_CONNECT_ERR == (int)ENGINE_WC_CONNECT_ERR, "completion codes");
static_assert(MROC_ACCESS_REMOTE_READ == ENGINE_ACCESS_REMOTE_READ &&
	      MROC_ACCESS_REMOTE_ATOMIC == ENGINE_ACCESS_REMOTE_ATOMIC,
	      "access flags pass through");

struct cmr {
	uint32_t lkey, rkey;
	void *map;
	size_t len;
};

struct client;

struct cqp {
	struct client *cl;
	uint32_t qpn;
	void *region;
	size_t region_len;
	int cq_fd;
	/* Worker only from here. */
	struct ring_view sq, rq, cq;
	uint32_t cq_entries;
	uint32_t active_idx;		/* in clients.active */
	uint32_t hot_idx;		/* in clients.hot, or NOT_LISTED (cold) */
	uint64_t last_work;		/* ns */
	struct cqp *cl_next, *cl_prev;	/* the client's active QPs */
};

struct client {
	struct clients *cs;		/* its worker's: every QP and region of it lives there */
	uint32_t id;			/* also the engine protection domain */
	int fd;
	pid_t pid;
	uid_t uid;
	int doorbell;			/* -1 until HELLO */
	struct cmr *mrs;
	uint32_t nmrs, mrs_cap;		/* mrs_cap: max_mrs when it connected */
	struct cqp **qps;
	uint32_t nqps, qps_cap;
	uint64_t mr_bytes;
	uint32_t bad_wrs;		/* worker */
	uint32_t loop_wrs;		/* worker: taken in loop number loop */
	uint64_t loop;
	bool kicked;			/* worker: disconnected for misbehaving */
	bool counted;			/* established: counted in nclients and by uid */
	uint32_t widx;			/* worker: in clients.wcl, or NOT_LISTED */
	struct cqp *wqps;		/* worker: its active QPs */
};

/* A destroyed QP the engine still tells its peer about. */
struct zombie {
	uint32_t qpn;			/* 0: reaped already */
	uint64_t deadline;
};

struct clients {
	/*
	 * One per worker (its engine, peers, QPs); the control thread's part
	 * (limits, counts by user, client ids) lives in the first one, ctl.
	 */
	struct clients *ctl;
	struct engine *eng;
	struct peers *peers;
	struct worker *worker;
	unsigned widx;			/* the worker's index, for the listener steering */
	struct steer *steer;
	struct clients_limits lim;	/* control thread: clients_set_limits */
	uint32_t max_total_qps;		/* the engine's QP table */
	uint32_t nclients, next_id;	/* control thread: established clients, ids */
	struct uid_count {		/* control thread: established clients per user */
		uid_t uid;
		uint32_t n;
	} *uids;			/* [UIDS_MAX], nuids in use */
	uint32_t nuids;
	/* Worker from here. */
	uint64_t loop;			/* clients_poll calls */
	struct evfd_signaller *sig;	/* completion channels */
	struct qpmap map;		/* qpn -> struct cqp */
	struct cqp **active;		/* max_total_qps */
	uint32_t nactive, sweep;	/* sweep: next cold QP to look at */
	struct cqp **hot;		/* max_total_qps */
	uint32_t nhot, hot_next;
	struct client *wcl[MAX_CLIENTS];	/* clients with a doorbell */
	uint32_t nwcl;
	/* Zombies in deadline order (a ring), found by QPN; reap: destroy at the next tick. */
	struct qpmap zmap;		/* qpn -> struct zombie */
	struct zombie *zombies;
	uint32_t zhead, nzombies;
	uint32_t *reap, nreap;
	struct clients_stats st;	/* worker (clients/qps/mrs counts too) */
};

struct clients *clients_create(struct engine *eng, struct peers *peers, uint32_t max_total_qps,
			       const struct clients_limits *lim, struct clients *share)
{
	struct clients *cs = calloc(1, sizeof(*cs));
	uint32_t n = max_total_qps;

	if (!cs)
		return NULL;
	if (evfd_signaller_create(&cs->sig)) {
		free(cs);
		return NULL;
	}
	cs->ctl = share ? share : cs;
	cs->eng = eng;
	cs->peers = peers;
	cs->max_total_qps = n;
	clients_set_limits(cs, lim);
	cs->next_id = 1;	/* pd 0 is the daemon's own (control links) */
	cs->active = calloc(n, sizeof(*cs->active));
	cs->hot = calloc(n, sizeof(*cs->hot));
	cs->zombies = calloc(n, sizeof(*cs->zombies));
	cs->reap = calloc(n, sizeof(*cs->reap));
	cs->uids = share ? NULL : calloc(UIDS_MAX, sizeof(*cs->uids));
	if (!n || !cs->active || !cs->hot || !cs->zombies || !cs->reap || (!share && !cs->uids) ||
	    qpmap_init(&cs->map, n) || qpmap_init(&cs->zmap, n)) {
		clients_destroy(cs);
		return NULL;
	}
	return cs;
}

void clients_set_limits(struct clients *cs, const struct clients_limits *lim)
{
	cs->lim = *lim;
}

void clients_set_worker(struct clients *cs, struct worker *w, unsigned widx, struct steer *steer)
{
	cs->worker = w;
	cs->widx = widx;
	cs->steer = steer;
}

void clients_destroy(struct clients *cs)
{
	if (!cs)
		return;
	evfd_signaller_destroy(cs->sig);
	qpmap_free(&cs->map);
	qpmap_free(&cs->zmap);
	free(cs->active);
	free(cs->hot);
	free(cs->zombies);
	free(cs->reap);
	free(cs->uids);
	free(cs);
}

/* ---- worker side: QPs, rings, completions ----------------------------------- */

static void zombify(struct clients *cs, uint32_t qpn, uint64_t now)
{
	uint32_t size = cs->max_total_qps;
	struct zombie *z;

	engine_qp_disconnect(cs->eng, qpn, now);
	if (cs->nzombies == size) {
		engine_qp_destroy(cs->eng, qpn);
		return;
	}
	/* now + ZOMBIE_NS only grows: the ring stays in deadline order. */
	z = &cs->zombies[(cs->zhead + cs->nzombies++) % size];
	*z = (struct zombie){ qpn, now + ZOMBIE_NS };
	qpmap_add(&cs->zmap, qpn, z);
}

/* Hot: polled every loop (within POLL_BUDGET); the client need not ring. */
static void heat(struct clients *cs, struct cqp *q, uint64_t now)
{
	q->last_work = now;
	/* A QP of a client kicked meanwhile (a bad work request in the poll that found
	 * this work) has left the lists for good: listed again, it would outlive its rings. */
	if (q->hot_idx != NOT_LISTED || q->cl->kicked)
		return;
	ring_cons_clear_flag(&q->sq, MROC_RING_NEED_WAKEUP);
	ring_cons_clear_flag(&q->rq, MROC_RING_NEED_WAKEUP);
	q->hot_idx = cs->nhot;
	cs->hot[cs->nhot++] = q;
}

static void unlist_hot(struct clients *cs, struct cqp *q)
{
	struct cqp *last = cs->hot[--cs->nhot];

	cs->hot[q->hot_idx] = last;
	last->hot_idx = q->hot_idx;
	q->hot_idx = NOT_LISTED;
}

/*
 * Cold: ask for the doorbell, then look once more (ring.h's no-lost-wakeup
 * pairing).  False, and still hot, if work arrived meanwhile.
 */
static bool cool(struct clients *cs, struct cqp *q)
{
	bool empty = ring_cons_prepare_sleep(&q->sq, MROC_RING_NEED_WAKEUP);

	empty &= ring_cons_prepare_sleep(&q->rq, MROC_RING_NEED_WAKEUP);
	if (q->hot_idx == NOT_LISTED)
		return empty;
	if (!empty) {
		ring_cons_clear_flag(&q->sq, MROC_RING_NEED_WAKEUP);
		ring_cons_clear_flag(&q->rq, MROC_RING_NEED_WAKEUP);
		return false;
	}
	unlist_hot(cs, q);
	return true;
}

static void deactivate(struct clients *cs, struct cqp *q, uint64_t now)
{
	struct cqp *last = cs->active[--cs->nactive];
	struct client *cl = q->cl;

	cs->active[q->active_idx] = last;
	last->active_idx = q->active_idx;
	if (q->hot_idx != NOT_LISTED)
		unlist_hot(cs, q);
	if (q->cl_prev)
		q->cl_prev->cl_next = q->cl_next;
	else
		cl->wqps = q->cl_next;
	if (q->cl_next)
		q->cl_next->cl_prev = q->cl_prev;
	qpmap_del(&cs->map, q->qpn);
	zombify(cs, q->qpn, now);
	cs->st.qps--;
}

static void deactivate_all(struct clients *cs, struct client *cl, uint64_t now)
{
	while (cl->wqps)
		deactivate(cs, cl->wqps, now);
}

/* A client that broke the rules: its QPs stop now; the control thread closes it. */
static void kick(struct clients *cs, struct client *cl, const char *why, uint64_t now)
{
	if (cl->kicked)
		return;
	cl->kicked = true;
	cs->st.kicked++;
	pr_warn_rl("client %u (pid %d): %s: disconnecting it", cl->id, (int)cl->pid, why);
	deactivate_all(cs, cl, now);
	shutdown(cl->fd, SHUT_RDWR);	/* the control loop sees EOF and cleans up */
}

static bool cq_push(struct clients *cs, struct cqp *q, const struct mroc_cqe *e, uint64_t now)
{
	int64_t space = ring_prod_space(&q->cq);

	if (space <= 0) {
		cs->st.cq_overflows++;
		kick(cs, q->cl, space < 0 ? "corrupted its CQ ring" : "CQ overflow", now);
		return false;
	}
	memcpy(ring_prod_slot(&q->cq), e, sizeof(*e));
	ring_prod_commit(&q->cq, 1);
	cs->st.cqes++;
	if (ring_prod_take_flag(&q->cq, MROC_RING_ARMED)) {
		int err = evfd_signal(cs->sig, q->cq_fd);

		if (err)
			pr_warn_rl("client %u: completion channel: %s", q->cl->id, strerror(-err));
	}
	return true;
}

/* The completion opcode of a send work request's opcode (an unknown one: SEND). */
static uint8_t send_wc_opcode(uint8_t wr_opcode)
{
	if (wr_opcode <= MROC_WR_READ)
		return wr_opcode;	/* the first five are the same (mroc.h) */
	if (wr_opcode == MROC_WR_ATOMIC_FETCH_ADD)
		return MROC_WC_ATOMIC_FETCH_ADD;
	if (wr_opcode == MROC_WR_ATOMIC_CMP_SWP)
		return MROC_WC_ATOMIC_CMP_SWP;
	return MROC_WC_SEND;
}

/* wc_opcode: enum mroc_wc_opcode. */
static void bad_wr(struct clients *cs, struct cqp *q, uint64_t wr_id, uint8_t wc_opcode,
		   uint8_t status, uint64_t now)
{
	struct mroc_cqe e = {
		.wr_id = wr_id,
		.qpn = q->qpn,
		.opcode = wc_opcode,
		.status = status,
	};

	cs->st.bad_wrs++;
	if (++q->cl->bad_wrs > BAD_WR_LIMIT) {
		kick(cs, q->cl, "too many bad work requests", now);
		return;
	}
	cq_push(cs, q, &e, now);
}

static uint8_t post_status(int err)
{
	return err == -EFAULT ? MROC_WC_LOC_PROT_ERR : MROC_WC_BAD_WR;
}

/* Room for this many more work requests without any completion overflowing the CQ. */
static int64_t cq_budget(struct clients *cs, struct cqp *q)
{
	struct engine_qp_info qi;
	int64_t free = ring_prod_space(&q->cq);

	if (free < 0 || engine_qp_info(cs->eng, q->qpn, &qi))
		return -EBADMSG;
	return free - (int64_t)qi.sq_outstanding - (int64_t)qi.rq_posted - CQ_EVENT_ROOM;
}

/*
 * Consume posted RECVs, then sends, at most max of them.  Returns work done;
 * -EBADMSG if the client is broken.
 */
static int poll_qp(struct clients *cs, struct cqp *q, int64_t max, uint64_t now)
{
	int64_t budget, ravail = ring_cons_avail(&q->rq), savail = ring_cons_avail(&q->sq);
	int done = 0, err;

	if (ravail < 0 || savail < 0)
		return -EBADMSG;
	if (!ravail && !savail)
		return 0;	/* the common case, without asking the engine */
	budget = cq_budget(cs, q);
	if (budget < 0)
		return budget == -EBADMSG ? -EBADMSG : 0;
	if (budget > max)
		budget = max;
	while (ravail > 0 && budget > 0) {
		const struct mroc_rqe *r = ring_cons_slot(&q->rq, 0);
		struct engine_recv_wr rw = {
			.wr_id = r->wr_id, .lkey = r->lkey, .laddr = r->laddr, .len = r->len,
		};

		err = engine_post_recv(cs->eng, q->qpn, &rw);
		if (err == -ENOSPC)
			break;		/* the engine's receive queue is full: later */
		ring_cons_release(&q->rq, 1);
		ravail--;
		budget--;
		done++;
		cs->st.wrs++;
		if (err)
			bad_wr(cs, q, rw.wr_id, MROC_WC_RECV, post_status(err), now);
	}
	while (savail > 0 && budget > 0) {
		const struct mroc_sqe *s = ring_cons_slot(&q->sq, 0);
		struct engine_wr wr = {
			.wr_id = s->wr_id, .opcode = s->opcode, .flags = s->flags,
			.lkey = s->lkey, .laddr = s->laddr, .len = s->len,
			.rkey = s->rkey, .raddr = s->raddr, .imm = s->imm,
			.compare_add = s->compare_add, .swap = s->swap,
		};

		err = s->opcode > MROC_WR_ATOMIC_CMP_SWP || (s->flags & ~MROC_SEND_SIGNALED) ? -EINVAL :
		      engine_post_send(cs->eng, q->qpn, &wr, now);
		if (err == -ENOSPC)
			break;		/* the engine's send queue is full: later */
		ring_cons_release(&q->sq, 1);
		savail--;
		budget--;
		done++;
		cs->st.wrs++;
		if (err)
			bad_wr(cs, q, wr.wr_id, send_wc_opcode(wr.opcode), post_status(err), now);
	}
	return done;
}

/*
 * Take work from one QP within the fairness caps: at most CLIENT_BATCH work
 * requests per client per loop, QP_BATCH per QP, so a client with deep rings
 * or many QPs cannot keep the worker from the others.
 */
static int poll_capped(struct clients *cs, struct cqp *q, uint64_t now)
{
	struct client *cl = q->cl;
	int n;

	if (cl->loop != cs->loop) {
		cl->loop = cs->loop;
		cl->loop_wrs = 0;
	}
	if (cl->loop_wrs >= CLIENT_BATCH)
		return 0;
	n = poll_qp(cs, q, CLIENT_BATCH - cl->loop_wrs < QP_BATCH ?
		    CLIENT_BATCH - cl->loop_wrs : QP_BATCH, now);
	if (n > 0)
		cl->loop_wrs += (uint32_t)n;
	return n;
}

/* Hot QPs, round-robin; those idle for HOT_NS go cold. */
static int poll_hot(struct clients *cs, uint64_t now)
{
	uint32_t n = cs->nhot < POLL_BUDGET ? cs->nhot : POLL_BUDGET;
	int work = 0;

	for (uint32_t k = 0; k < n && cs->nhot; k++) {
		struct cqp *q;
		int got;

		if (cs->hot_next >= cs->nhot)
			cs->hot_next = 0;
		q = cs->hot[cs->hot_next];
		got = poll_capped(cs, q, now);
		if (got < 0) {
			kick(cs, q->cl, "corrupted its rings", now);
			continue;	/* its QPs left the list: this index holds another */
		}
		if (got > 0) {
			q->last_work = now;
			work += got;
		} else if (now - q->last_work >= HOT_NS && cool(cs, q)) {
			continue;	/* the last hot QP took its index */
		}
		cs->hot_next++;
	}
	return work;
}

/* A few cold QPs, round-robin: the backstop while the worker is too busy to sleep. */
static int sweep_cold(struct clients *cs, uint64_t now)
{
	uint32_t n = cs->nactive < SWEEP_BUDGET ? cs->nactive : SWEEP_BUDGET;
	int work = 0;

	for (uint32_t k = 0; k < n && cs->nactive; k++) {
		struct cqp *q;
		int got;

		if (cs->sweep >= cs->nactive)
			cs->sweep = 0;
		q = cs->active[cs->sweep++];
		if (q->hot_idx != NOT_LISTED)
			continue;
		got = poll_capped(cs, q, now);
		if (got < 0) {
			kick(cs, q->cl, "corrupted its rings", now);
			continue;
		}
		if (got > 0) {
			heat(cs, q, now);
			work += got;
		}
	}
	return work;
}

int clients_poll(void *ctx, uint64_t now)
{
	struct clients *cs = ctx;

	cs->loop++;
	return poll_hot(cs, now) + sweep_cold(cs, now);
}

bool clients_on_cqe(struct clients *cs, const struct engine_cqe *c, uint64_t now)
{
	struct cqp *q = qpmap_get(&cs->map, c->qpn);
	struct zombie *z;
	struct mroc_cqe e;

	if (!q) {
		z = qpmap_get(&cs->zmap, c->qpn);
		if (!z)
			return false;
		if (c->opcode == ENGINE_WC_EV_DISCONNECTED || c->opcode == ENGINE_WC_EV_ERROR) {
			/* Done: destroy at the next tick (not under the engine's completion loop). */
			qpmap_del(&cs->zmap, z->qpn);
			cs->reap[cs->nreap++] = z->qpn;
			z->qpn = 0;
		}
		return true;
	}
	e = (struct mroc_cqe){
		.wr_id = c->wr_id,
		.qpn = c->qpn,
		.opcode = c->opcode,
		.status = c->status,
		.flags = c->flags,
		.byte_len = c->byte_len,
		.imm = c->imm,
	};
	cq_push(cs, q, &e, now);
	return true;
}

uint64_t clients_tick(struct clients *cs, uint64_t now)
{
	uint32_t size = cs->max_total_qps;

	for (uint32_t i = 0; i < cs->nreap; i++)
		engine_qp_destroy(cs->eng, cs->reap[i]);
	cs->nreap = 0;
	while (cs->nzombies) {
		struct zombie *z = &cs->zombies[cs->zhead];

		if (z->qpn && now < z->deadline)
			return z->deadline;
		if (z->qpn) {
			qpmap_del(&cs->zmap, z->qpn);
			engine_qp_destroy(cs->eng, z->qpn);
		}
		cs->zhead = (cs->zhead + 1) % size;
		cs->nzombies--;
	}
	return UINT64_MAX;
}

/* One doorbell per client, not per QP. */
int clients_fds(void *ctx, int *fds, int max)
{
	struct clients *cs = ctx;
	int n = 0;

	for (uint32_t i = 0; i < cs->nwcl && n < max; i++)
		fds[n++] = cs->wcl[i]->doorbell;
	return n;
}

/* The i-th fd of clients_fds rang: that client posted on a cold QP. */
void clients_fd_ready(void *ctx, int i)
{
	struct clients *cs = ctx;
	uint64_t now = mrocd_now_ns();

	if (i < 0 || (uint32_t)i >= cs->nwcl)
		return;
	for (struct cqp *q = cs->wcl[i]->wqps; q; q = q->cl_next) {
		int64_t r = ring_cons_avail(&q->rq), s = ring_cons_avail(&q->sq);

		if (r || s)	/* corrupted (< 0) too: the next poll kicks it */
			heat(cs, q, now);
	}
}

/* About to sleep: every hot QP goes cold (asks for the doorbell); false if one got work. */
bool clients_may_sleep(void *ctx)
{
	struct clients *cs = ctx;

	while (cs->nhot)
		if (!cool(cs, cs->hot[cs->nhot - 1]))
			return false;
	return true;
}

void clients_get_stats(struct clients *cs, struct clients_stats *out)
{
	*out = cs->st;
	out->qps_hot = cs->nhot;
}

/* ---- worker calls made by the control thread ------------------------------- */

struct op {
	struct clients *cs;
	struct client *cl;
	struct cqp *q;
	struct engine_qp_attr attr;
	void *map;
	uint64_t len, service_id;
	uint32_t access, lkey, rkey, qpn;
	struct mroc_addr addr;
};

static int op_mr_reg(void *arg, uint64_t now)
{
	struct op *o = arg;

	(void)now;
	return engine_mr_register(o->cs->eng, o->cl->id, o->map, o->len, o->access, &o->lkey,
				  &o->rkey);
}

static int op_mr_dereg(void *arg, uint64_t now)
{
	struct op *o = arg;

	(void)now;
	return engine_mr_deregister(o->cs->eng, o->lkey);
}

static int op_qp_create(void *arg, uint64_t now)
{
	struct op *o = arg;
	struct clients *cs = o->cs;
	struct cqp *q = o->q;
	struct client *cl = o->cl;
	int err;

	if (cs->nactive == cs->max_total_qps)
		return -ENOSPC;
	err = engine_qp_create(cs->eng, &o->attr, &q->qpn);
	if (err)
		return err;
	err = qpmap_add(&cs->map, q->qpn, q);
	if (err) {
		engine_qp_destroy(cs->eng, q->qpn);
		return err;
	}
	q->active_idx = cs->nactive;
	cs->active[cs->nactive++] = q;
	q->cl_prev = NULL;
	q->cl_next = cl->wqps;
	if (cl->wqps)
		cl->wqps->cl_prev = q;
	cl->wqps = q;
	/* Cold until the client posts (it rings then); hot at once if it already did. */
	q->hot_idx = NOT_LISTED;
	if (!cool(cs, q))
		heat(cs, q, now);
	cs->st.qps++;
	return 0;
}

/* The QP must be one of this client's active ones. */
static struct cqp *own_qp(struct op *o)
{
	struct cqp *q = qpmap_get(&o->cs->map, o->qpn);

	return q && q->cl == o->cl ? q : NULL;
}

static int reserved(const struct client *cl, const char *what, uint64_t service_id)
{
	pr_warn_rl("client %u (pid %d): may not %s service %#llx (the daemons' own)", cl->id,
		   (int)cl->pid, what, (unsigned long long)service_id);
	return -EACCES;
}

static int op_qp_connect(void *arg, uint64_t now)
{
	struct op *o = arg;
	uint32_t peer;
	int err;

	if (!own_qp(o))
		return -ENOENT;
	if (mrocd_service_reserved(o->service_id))
		return reserved(o->cl, "connect to", o->service_id);
	err = peers_get_handle(o->cs->peers, &o->addr, &peer);
	if (err)
		return err;
	return engine_qp_connect(o->cs->eng, o->qpn, peer, o->service_id, now);
}

static int op_qp_listen(void *arg, uint64_t now)
{
	struct op *o = arg;

	(void)now;
	if (!own_qp(o))
		return -ENOENT;
	if (mrocd_service_reserved(o->service_id))
		return reserved(o->cl, "listen on", o->service_id);
	/* Connection requests for it, on whichever worker's socket, come here. */
	if (o->cs->steer)
		steer_listen(o->cs->steer, o->service_id, o->cs->widx);
	return engine_qp_listen(o->cs->eng, o->qpn, o->service_id);
}

static int op_qp_destroy(void *arg, uint64_t now)
{
	struct op *o = arg;
	struct cqp *q = own_qp(o);

	if (!q)
		return -ENOENT;
	deactivate(o->cs, q, now);
	return 0;
}

/* The client is gone: stop its QPs (peers are told), drop its regions. */
static int op_client_gone(void *arg, uint64_t now)
{
	struct op *o = arg;
	struct clients *cs = o->cs;

	deactivate_all(cs, o->cl, now);
	if (o->cl->widx != NOT_LISTED) {
		struct client *last = cs->wcl[--cs->nwcl];

		cs->wcl[o->cl->widx] = last;
		last->widx = o->cl->widx;
		o->cl->widx = NOT_LISTED;
	}
	for (uint32_t i = 0; i < o->cl->nmrs; i++)
		engine_mr_deregister(cs->eng, o->cl->mrs[i].lkey);
	cs->st.mrs -= o->cl->nmrs;
	cs->st.clients--;
	cs->st.closed++;
	return 0;
}

static int op_count_client(void *arg, uint64_t now)
{
	struct op *o = arg;

	(void)now;
	o->cs->st.clients++;
	o->cs->st.opened++;
	return 0;
}

/* HELLO: the worker sleeps on the client's doorbell from now on. */
static int op_client_hello(void *arg, uint64_t now)
{
	struct op *o = arg;
	struct clients *cs = o->cs;

	(void)now;
	if (cs->nwcl == MAX_CLIENTS)
		return -EUSERS;
	o->cl->widx = cs->nwcl;
	cs->wcl[cs->nwcl++] = o->cl;
	return 0;
}

static int op_count_mr(void *arg, uint64_t now)
{
	struct op *o = arg;

	(void)now;
	o->cs->st.mrs += o->access;	/* +1 or -1 (as unsigned) */
	return 0;
}

/* ---- control thread: messages ---------------------------------------------------- */

static int call(struct clients *cs, int (*fn)(void *, uint64_t), struct op *o)
{
	o->cs = cs;
	return worker_call(cs->worker, fn, o);
}

void *clients_open(void *ctx, int fd, const struct ucred *cred)
{
	struct clients *cs = ctx;
	struct client *cl;
	struct op o = { 0 };

	cl = calloc(1, sizeof(*cl));
	if (cl) {
		cl->mrs_cap = cs->ctl->lim.max_mrs;
		cl->qps_cap = cs->ctl->lim.max_qps;
		cl->mrs = calloc(cl->mrs_cap, sizeof(*cl->mrs));
		cl->qps = calloc(cl->qps_cap, sizeof(*cl->qps));
	}
	if (!cl || !cl->mrs || !cl->qps) {
		if (cl) {
			free(cl->mrs);
			free(cl->qps);
		}
		free(cl);
		return NULL;
	}
	cl->cs = cs;
	cl->id = cs->ctl->next_id++;
	cl->fd = fd;
	cl->pid = cred->pid;
	cl->uid = cred->uid;
	cl->doorbell = -1;
	cl->widx = NOT_LISTED;
	o.cl = cl;
	call(cs, op_count_client, &o);
	pr_info("client %u connected (pid %d, uid %u)", cl->id, (int)cl->pid, (unsigned)cl->uid);
	return cl;
}

static void free_qp(struct cqp *q)
{
	if (q->region)
		munmap(q->region, q->region_len);
	if (q->cq_fd >= 0)
		close(q->cq_fd);
	free(q);
}

/* Established clients of uid, changed by delta (+1, -1) unless 0. */
static uint32_t uid_count(struct clients *cs, uid_t uid, int delta)
{
	uint32_t i;

	for (i = 0; i < cs->nuids && cs->uids[i].uid != uid; i++)
		;
	if (i == cs->nuids) {
		if (delta <= 0 || cs->nuids == UIDS_MAX)
			return 0;
		cs->uids[cs->nuids++] = (struct uid_count){ .uid = uid };
	}
	cs->uids[i].n += (uint32_t)delta;
	if (cs->uids[i].n)
		return cs->uids[i].n;
	cs->uids[i] = cs->uids[--cs->nuids];	/* its last client went */
	return 0;
}

void clients_close(void *ctx, void *client)
{
	struct client *cl = client;
	struct clients *cs = cl->cs;
	struct op o = { .cl = cl };

	call(cs, op_client_gone, &o);
	for (uint32_t i = 0; i < cl->nqps; i++)
		free_qp(cl->qps[i]);
	for (uint32_t i = 0; i < cl->nmrs; i++)
		munmap(cl->mrs[i].map, cl->mrs[i].len);
	if (cl->doorbell >= 0)
		close(cl->doorbell);
	pr_info("client %u gone: %u QP(s), %u region(s) released", cl->id, cl->nqps, cl->nmrs);
	if (cl->counted) {
		cs->ctl->nclients--;
		uid_count(cs->ctl, cl->uid, -1);
	}
	free(cl->mrs);
	free(cl->qps);
	free(cl);
}

unsigned clients_worker(const void *client)
{
	return ((const struct client *)client)->cs->widx;
}

/* A memfd we can map safely: sealed against shrinking, at least len bytes. */
static int check_memfd(int fd, uint64_t len)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EPERM;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < len)
		return -EINVAL;
	return 0;
}

/*
 * The worker reads doorbells and signals completion channels: anything but
 * an eventfd (a full pipe, a socket) could make it wait on the client.
 */
static int not_eventfd(struct client *cl, const char *what)
{
	pr_warn_rl("client %u (pid %d): its %s is not an eventfd: refused", cl->id, (int)cl->pid,
		   what);
	return -EBADFD;
}

static int msg_hello(struct clients *cs, struct client *cl, const struct mroc_msg_hello *m,
		     int *fds, int nfds, struct mroc_msg_hello *r)
{
	int err;

	if (cl->doorbell >= 0)
		return -EALREADY;
	/*
	 * Limits count established clients only (a connection that never sends
	 * HELLO takes no slot; ctl.c cuts it).  Over one, the client is still
	 * answered, so it learns why (EUSERS), then closed.
	 */
	if (cs->ctl->nclients >= cs->ctl->lim.max_clients ||
	    uid_count(cs->ctl, cl->uid, 0) >= cs->ctl->lim.max_per_uid) {
		pr_warn_rl("refusing client pid %d (uid %u): %s reached", (int)cl->pid,
			   (unsigned)cl->uid, cs->ctl->nclients >= cs->ctl->lim.max_clients ?
			   "limits.max_clients" : "limits.max_clients_per_uid");
		shutdown(cl->fd, SHUT_RD);	/* the reply still goes out; then EOF closes it */
		return -EUSERS;
	}
	if (m->abi_version != MROC_ABI_VERSION)
		return -EPROTO;
	if (nfds != 1)
		return -EINVAL;
	if (evfd_check(fds[0]))
		return not_eventfd(cl, "doorbell");
	cl->doorbell = fds[0];
	err = call(cs, op_client_hello, &(struct op){ .cl = cl });
	if (err) {
		cl->doorbell = -1;
		return err;
	}
	fds[0] = -1;
	cl->counted = true;
	cs->ctl->nclients++;
	uid_count(cs->ctl, cl->uid, +1);
	r->abi_version = MROC_ABI_VERSION;
	r->client_id = cl->id;
	r->max_qps = cl->qps_cap < cs->ctl->lim.max_qps ? cl->qps_cap : cs->ctl->lim.max_qps;
	r->max_mrs = cl->mrs_cap < cs->ctl->lim.max_mrs ? cl->mrs_cap : cs->ctl->lim.max_mrs;
	r->max_mr_bytes = cs->ctl->lim.max_mr_bytes;
	r->max_sq_depth = cs->ctl->lim.max_sq_depth;
	r->max_rq_depth = cs->ctl->lim.max_rq_depth;
	r->default_paths = cs->ctl->lim.default_paths;
	return 0;
}

static int msg_mr_reg(struct clients *cs, struct client *cl, const struct mroc_msg_mr_reg *m,
		      int *fds, int nfds, struct mroc_msg_mr_reg *r)
{
	struct op o = { .cl = cl, .len = m->len, .access = m->access };
	int err;

	if (nfds != 1 || !m->len || (m->access & ~(uint32_t)ENGINE_ACCESS_ALL))
		return -EINVAL;
	if (cl->nmrs >= cs->ctl->lim.max_mrs || cl->nmrs >= cl->mrs_cap ||
	    cl->mr_bytes + m->len > cs->ctl->lim.max_mr_bytes)
		return -EDQUOT;
	err = check_memfd(fds[0], m->len);
	if (err)
		return err;
	o.map = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (o.map == MAP_FAILED)
		return -errno;
	err = call(cs, op_mr_reg, &o);
	if (err) {
		munmap(o.map, m->len);
		return err;
	}
	cl->mrs[cl->nmrs++] = (struct cmr){ .lkey = o.lkey, .rkey = o.rkey, .map = o.map,
					    .len = m->len };
	cl->mr_bytes += m->len;
	o.access = 1;
	call(cs, op_count_mr, &o);
	r->lkey = o.lkey;
	r->rkey = o.rkey;
	return 0;
}

static int msg_mr_dereg(struct clients *cs, struct client *cl, const struct mroc_msg_mr_dereg *m)
{
	struct op o = { .cl = cl, .lkey = m->lkey };

	for (uint32_t i = 0; i < cl->nmrs; i++) {
		struct cmr *mr = &cl->mrs[i];
		int err;

		if (mr->lkey != m->lkey)
			continue;
		err = call(cs, op_mr_dereg, &o);
		if (err)
			return err;
		/* The engine no longer knows the key: nothing can touch the mapping now. */
		munmap(mr->map, mr->len);
		cl->mr_bytes -= mr->len;
		*mr = cl->mrs[--cl->nmrs];
		o.access = (uint32_t)-1;
		call(cs, op_count_mr, &o);
		return 0;
	}
	return -ENOENT;
}

static bool pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

/* Map and check the ring region exactly as the library laid it out. */
static int map_rings(struct cqp *q, const struct mroc_msg_qp_create *m, int fd)
{
	uint32_t sq_off, rq_off, cq_off;
	uint64_t len = mroc_shm_layout(m->sq_entries, m->rq_entries, m->cq_entries, &sq_off,
				       &rq_off, &cq_off);
	const struct mroc_shm_hdr *h;
	int err;

	if (m->region_len != len)
		return -EINVAL;
	err = check_memfd(fd, len);
	if (err)
		return err;
	q->region = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (q->region == MAP_FAILED) {
		q->region = NULL;
		return -errno;
	}
	q->region_len = len;
	h = q->region;
	if (h->magic != MROC_SHM_MAGIC || h->abi_version != MROC_ABI_VERSION ||
	    h->sq_entries != m->sq_entries || h->rq_entries != m->rq_entries ||
	    h->cq_entries != m->cq_entries || h->sq_off != sq_off || h->rq_off != rq_off ||
	    h->cq_off != cq_off || h->region_len != len)
		return -EINVAL;
	/* Our views keep the sizes privately; indices start where the region says. */
	ring_view_init(&q->sq, q->region, sq_off, m->sq_entries, sizeof(struct mroc_sqe), false);
	ring_view_init(&q->rq, q->region, rq_off, m->rq_entries, sizeof(struct mroc_rqe), false);
	ring_view_init(&q->cq, q->region, cq_off, m->cq_entries, sizeof(struct mroc_cqe), true);
	q->cq_entries = m->cq_entries;
	return 0;
}

static int msg_qp_create(struct clients *cs, struct client *cl, const struct mroc_msg_qp_create *m,
			 int *fds, int nfds, struct mroc_msg_qp_create *r)
{
	struct op o = { .cl = cl };
	struct cqp *q;
	int err;

	if (nfds != 2 || (m->mode > MROC_QP_ROCEV2 && m->mode != MROC_QP_DEFAULT) ||
	    m->paths > MROC_MAX_PATHS ||
	    !pow2(m->sq_entries) || !pow2(m->rq_entries) || !pow2(m->cq_entries) ||
	    m->sq_entries > cs->ctl->lim.max_sq_depth || m->rq_entries > cs->ctl->lim.max_rq_depth ||
	    (uint64_t)m->cq_entries < (uint64_t)m->sq_entries + m->rq_entries + CQ_EVENT_ROOM)
		return -EINVAL;
	if (cl->nqps >= cs->ctl->lim.max_qps || cl->nqps >= cl->qps_cap)
		return -EDQUOT;
	if (evfd_check(fds[1]))
		return not_eventfd(cl, "completion channel");
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->cl = cl;
	q->cq_fd = -1;
	err = map_rings(q, m, fds[0]);
	if (err) {
		free_qp(q);
		return err;
	}
	q->cq_fd = fds[1];
	fds[1] = -1;
	o.q = q;
	o.attr = (struct engine_qp_attr){
		.pd = cl->id,
		.mode = m->mode == MROC_QP_DEFAULT ? cs->ctl->lim.default_mode : m->mode,
		.npaths = m->paths ? m->paths : (uint8_t)cs->ctl->lim.default_paths,
		/* The engine's limit (sq + reads <= 1024) may be below the ring's size. */
		.sq_depth = m->sq_entries < 1008 ? m->sq_entries : 1008,
		.rq_depth = m->rq_entries,
	};
	err = call(cs, op_qp_create, &o);
	if (err) {
		free_qp(q);
		return err;
	}
	cl->qps[cl->nqps++] = q;
	r->qpn = q->qpn;
	return 0;
}

static int msg_qp_destroy(struct clients *cs, struct client *cl, uint32_t qpn)
{
	struct op o = { .cl = cl, .qpn = qpn };

	for (uint32_t i = 0; i < cl->nqps; i++) {
		int err;

		if (cl->qps[i]->qpn != qpn)
			continue;
		err = call(cs, op_qp_destroy, &o);
		if (err && err != -ENOENT)
			return err;
		/* The worker dropped it from its list: the mapping is ours to undo. */
		free_qp(cl->qps[i]);
		cl->qps[i] = cl->qps[--cl->nqps];
		return 0;
	}
	return -ENOENT;
}

/*
 * Why a client may not connect to a, or NULL: only unicast peers, loopback
 * only where the operator allows it (network.allow_loopback).  IPv4-mapped
 * IPv6 addresses are judged as the IPv4 address they carry.
 */
static const char *not_unicast(const struct mroc_addr *a, bool loopback_ok)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	const uint8_t *b = a->bytes;

	if (a->family == AF_INET6 && !memcmp(b, mapped, sizeof(mapped)))
		b += 12;
	else if (a->family == AF_INET6) {
		static const uint8_t zero[16], one[16] = { [15] = 1 };

		if (!memcmp(b, zero, 16))
			return "unspecified address";
		if (b[0] == 0xff)
			return "multicast address";
		if (!memcmp(b, one, 16))
			return loopback_ok ? NULL : "loopback (network.allow_loopback is false)";
		return NULL;
	}
	if (b[0] == 0)
		return "unspecified address";
	if (b[0] == 255 && b[1] == 255 && b[2] == 255 && b[3] == 255)
		return "broadcast address";
	if (b[0] >= 224 && b[0] <= 239)
		return "multicast address";
	if (b[0] == 127)
		return loopback_ok ? NULL : "loopback (network.allow_loopback is false)";
	return NULL;
}

static int msg_qp_connect(struct clients *cs, struct client *cl,
			  const struct mroc_msg_qp_connect *m)
{
	struct op o = { .cl = cl, .qpn = m->qpn, .service_id = m->service_id };

	const char *why;

	if (m->family != AF_INET && m->family != AF_INET6)
		return -EAFNOSUPPORT;
	o.addr.family = (int)m->family;
	memcpy(o.addr.bytes, m->addr, m->family == AF_INET ? 4 : 16);
	why = not_unicast(&o.addr, cs->ctl->lim.allow_loopback);
	if (why) {
		char buf[MROC_ADDR_STRLEN];

		pr_warn_rl("client %u (pid %d): QP_CONNECT to %s refused: %s", cl->id, (int)cl->pid,
			   addr_str(&o.addr, buf, sizeof(buf)), why);
		return -EADDRNOTAVAIL;
	}
	return call(cs, op_qp_connect, &o);
}

static const size_t msg_size[] = {
	[MROC_MSG_HELLO] = sizeof(struct mroc_msg_hello),
	[MROC_MSG_MR_REG] = sizeof(struct mroc_msg_mr_reg),
	[MROC_MSG_MR_DEREG] = sizeof(struct mroc_msg_mr_dereg),
	[MROC_MSG_QP_CREATE] = sizeof(struct mroc_msg_qp_create),
	[MROC_MSG_QP_CONNECT] = sizeof(struct mroc_msg_qp_connect),
	[MROC_MSG_QP_LISTEN] = sizeof(struct mroc_msg_qp_listen),
	[MROC_MSG_QP_DESTROY] = sizeof(struct mroc_msg_qp_destroy),
};

bool clients_msg(void *ctx, void *client, const void *msg, size_t len, int *fds, int nfds,
		 void *reply, size_t *reply_len)
{
	struct client *cl = client;
	struct clients *cs = cl->cs;
	union {
		struct mroc_msg_hdr h;
		uint8_t b[MROC_MSG_MAX];
	} in = { 0 };
	struct mroc_msg_hdr *out = reply;
	int err;

	memset(reply, 0, *reply_len < MROC_MSG_MAX ? *reply_len : MROC_MSG_MAX);
	if (len < sizeof(in.h) || len > sizeof(in)) {
		err = -EBADMSG;
		len = sizeof(in.h);
		goto done;
	}
	memcpy(&in, msg, len);	/* aligned, and the client cannot change it under us */
	*out = in.h;
	if (in.h.type == 0 || in.h.type >= sizeof(msg_size) / sizeof(msg_size[0]) ||
	    len != msg_size[in.h.type] || in.h.len != len) {
		err = -EBADMSG;
		goto done;
	}
	if (in.h.type != MROC_MSG_HELLO && cl->doorbell < 0) {
		err = -EPROTO;	/* HELLO first */
		goto done;
	}
	switch (in.h.type) {
	case MROC_MSG_HELLO:
		err = msg_hello(cs, cl, (void *)&in, fds, nfds, reply);
		break;
	case MROC_MSG_MR_REG:
		err = msg_mr_reg(cs, cl, (void *)&in, fds, nfds, reply);
		break;
	case MROC_MSG_MR_DEREG:
		err = msg_mr_dereg(cs, cl, (void *)&in);
		break;
	case MROC_MSG_QP_CREATE:
		err = msg_qp_create(cs, cl, (void *)&in, fds, nfds, reply);
		break;
	case MROC_MSG_QP_CONNECT:
		err = msg_qp_connect(cs, cl, (void *)&in);
		break;
	case MROC_MSG_QP_LISTEN: {
		const struct mroc_msg_qp_listen *m = (void *)&in;
		struct op o = { .cl = cl, .qpn = m->qpn, .service_id = m->service_id };

		err = call(cs, op_qp_listen, &o);
		break;
	}
	default: /* MROC_MSG_QP_DESTROY */
		err = msg_qp_destroy(cs, cl, ((const struct mroc_msg_qp_destroy *)&in)->qpn);
		break;
	}
done:
	/* fds a handler did not keep are closed: nothing leaks from a bad message. */
	for (int i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	out->status = err;
	out->len = (uint32_t)len;
	*reply_len = len;
	return cl->doorbell >= 0;
}
