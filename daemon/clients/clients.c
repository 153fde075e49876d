// SPDX-License-Identifier: MIT
/*
 * libmroc clients on the daemon side (see clients.h), the worker's part:
 * the active QPs' lists (hot ones polled every loop, cold ones woken by
 * doorbells), work requests from their rings into the engine,
 * completions back, zombies; and the per-worker state's life.  The control
 * thread's part is clients_ctl.c; what they share, and who owns what,
 * clients_priv.h.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "clients.h"
#include "clients_priv.h"
#include "evfd.h"
#include "log.h"
#include "services.h"
#include "toucher.h"
#include "worker.h"

struct clients *clients_create(struct engine *eng, struct peers *peers, uint32_t max_total_qps,
			       const struct clients_limits *lim, struct clients *share)
{
	struct clients *cs = calloc(1, sizeof(*cs));
	uint32_t n = max_total_qps;

	if (!cs)
		return NULL;
	cs->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (cs->epfd < 0 || evfd_signaller_create(&cs->sig)) {
		if (cs->epfd >= 0)
			close(cs->epfd);
		free(cs);
		return NULL;
	}
	cs->ctl = share ? share : cs;
	cs->eng = eng;
	cs->peers = peers;
	cs->max_total_qps = n;
	clients_set_limits(cs, lim);
	cs->next_id = 1;
	cs->next_pd = 1;	/* pd 0 is the daemon's own (control links) */
	cs->active = calloc(n, sizeof(*cs->active));
	cs->hot = calloc(n, sizeof(*cs->hot));
	cs->zombies = calloc(n, sizeof(*cs->zombies));
	cs->reap = calloc(n, sizeof(*cs->reap));
	cs->sigq = calloc(n, sizeof(*cs->sigq));
	cs->uids = share ? NULL : calloc(UIDS_MAX, sizeof(*cs->uids));
	if (!n || !cs->active || !cs->hot || !cs->zombies || !cs->reap || !cs->sigq ||
	    (!share && (!cs->uids || services_create(&cs->svc) || toucher_create(&cs->toucher))) ||
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
	close(cs->epfd);
	qpmap_free(&cs->map);
	qpmap_free(&cs->zmap);
	free(cs->active);
	free(cs->hot);
	free(cs->zombies);
	free(cs->reap);
	free(cs->sigq);
	free(cs->uids);
	toucher_destroy(cs->toucher);
	services_destroy(cs->svc);
	free(cs);
}

/* ---- worker side: QPs, rings, completions ----------------------------------- */

static void zombify(struct clients *cs, uint32_t qpn, uint64_t now)
{
	uint32_t size = cs->max_total_qps;
	struct zombie *z;

	/*
	 * Nothing to tell a peer (never connected, or closed already): the slot is
	 * free now, not in ZOMBIE_NS (#24 item 12: idle QPs created and destroyed
	 * in a loop held the table).
	 */
	if (engine_qp_disconnect(cs->eng, qpn, now) == -ENOTCONN || cs->nzombies == size) {
		engine_qp_destroy(cs->eng, qpn);
		return;
	}
	/* now + ZOMBIE_NS only grows: the ring stays in deadline order. */
	z = &cs->zombies[(cs->zhead + cs->nzombies++) % size];
	*z = (struct zombie){ qpn, now + ZOMBIE_NS };
	qpmap_add(&cs->zmap, qpn, z);
}

/* Hot: polled every loop (within POLL_BUDGET); the client need not ring. */
void clients_qp_heat(struct clients *cs, struct cqp *q, uint64_t now)
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
bool clients_qp_cool(struct clients *cs, struct cqp *q)
{
	bool empty;

	/* A doorbell per ring per cold spell (abi.h): RUNG goes before NEED_WAKEUP comes. */
	ring_cons_clear_flag(&q->sq, MROC_RING_RUNG);
	ring_cons_clear_flag(&q->rq, MROC_RING_RUNG);
	empty = ring_cons_prepare_sleep(&q->sq, MROC_RING_NEED_WAKEUP);

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

void clients_qp_deactivate(struct clients *cs, struct cqp *q, uint64_t now)
{
	struct cqp *last = cs->active[--cs->nactive];
	struct client *cl = q->cl;

	/* No queued signal outlives its channel (the control thread closes it next). */
	clients_flush(cs);
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
	if (q->sending)
		cs->st.qps_sending--;
	/* Before the control thread closes it (clients_doorbell_add says why). */
	if (epoll_ctl(cs->epfd, EPOLL_CTL_DEL, q->doorbell, NULL))
		pr_warn_rl("QP %u: its doorbell left the epoll set: %s", q->qpn, strerror(errno));
	zombify(cs, q->qpn, now);
	cs->st.qps--;
}

void clients_deactivate_all(struct clients *cs, struct client *cl, uint64_t now)
{
	while (cl->wqps)
		clients_qp_deactivate(cs, cl->wqps, now);
}

/* A client that broke the rules: its QPs stop now; the control thread closes it. */
static void kick(struct clients *cs, struct client *cl, const char *why, uint64_t now)
{
	if (cl->kicked)
		return;
	cl->kicked = true;
	cs->st.kicked++;
	pr_warn_rl("client %u (pid %d): %s: disconnecting it", cl->id, (int)cl->pid, why);
	clients_deactivate_all(cs, cl, now);
	shutdown(cl->fd, SHUT_RDWR);	/* the control loop sees EOF and cleans up */
}

static bool cq_push(struct clients *cs, struct cqp *q, const struct mroc_cqe *e, uint64_t now)
{
	int64_t space = ring_prod_space(&q->cq);

	if (space <= 0) {
		cs->st.cq_overflows++;
		q->cl->cq_overflows++;
		kick(cs, q->cl, space < 0 ? "corrupted its CQ ring" : "CQ overflow", now);
		return false;
	}
	memcpy(ring_prod_slot(&q->cq), e, sizeof(*e));
	ring_prod_commit(&q->cq, 1);
	cs->st.cqes++;
	q->cl->cqes++;
	/* The client sleeps on the channel: signalled at the end of this loop, with the others. */
	if (ring_prod_take_flag(&q->cq, MROC_RING_ARMED)) {
		if (cs->nsigq == cs->max_total_qps)
			clients_flush(cs);
		cs->sigq[cs->nsigq++] = q->cq_fd;
	}
	return true;
}

void clients_flush(void *ctx)
{
	struct clients *cs = ctx;
	unsigned int calls = 0, failed = 0;
	int err;

	if (!cs->nsigq)
		return;
	err = evfd_signal_many(cs->sig, cs->sigq, cs->nsigq, &calls, &failed);
	if (err)
		pr_warn_rl("completion channels: %s", strerror(-err));
	cs->st.cq_signals += cs->nsigq;
	cs->st.cq_signal_calls += calls;
	cs->st.cq_signal_failed += failed;
	cs->nsigq = 0;
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
	struct client *cl = q->cl;

	cs->st.bad_wrs++;
	cl->bad_wrs++;
	if (now - cl->bad_burst_from >= BAD_WR_WINDOW_NS) {
		cl->bad_burst_from = now;
		cl->bad_burst = 0;
	}
	if (++cl->bad_burst > BAD_WR_LIMIT) {
		kick(cs, cl, "too many bad work requests", now);
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
 * A ring slot into a private copy: the client may rewrite the slot at any
 * moment, so the daemon reads it once and checks and uses only the copy.
 * The compiler barrier keeps the compiler from reading the slot again in
 * place of the copy (a double fetch, as READ_ONCE prevents in Linux).
 */
static void copy_slot(void *dst, const void *slot, size_t len)
{
	memcpy(dst, slot, len);
	atomic_signal_fence(memory_order_seq_cst);
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
		struct mroc_rqe r;
		struct engine_recv_wr rw;

		copy_slot(&r, ring_cons_slot(&q->rq, 0), sizeof(r));
		rw = (struct engine_recv_wr){
			.wr_id = r.wr_id, .lkey = r.lkey, .laddr = r.laddr, .len = r.len,
		};

		err = engine_post_recv(cs->eng, q->qpn, &rw);
		if (err == -ENOSPC)
			break;		/* the engine's receive queue is full: later */
		ring_cons_release(&q->rq, 1);
		ravail--;
		budget--;
		done++;
		cs->st.wrs++;
		q->cl->wrs++;
		if (err)
			bad_wr(cs, q, rw.wr_id, MROC_WC_RECV, post_status(err), now);
	}
	while (savail > 0 && budget > 0) {
		struct mroc_sqe s;
		struct engine_wr wr;

		copy_slot(&s, ring_cons_slot(&q->sq, 0), sizeof(s));
		wr = (struct engine_wr){
			.wr_id = s.wr_id, .opcode = s.opcode, .flags = s.flags,
			.lkey = s.lkey, .laddr = s.laddr, .len = s.len,
			.rkey = s.rkey, .raddr = s.raddr, .imm = s.imm,
			.compare_add = s.compare_add, .swap = s.swap,
		};
		err = wr.opcode > MROC_WR_ATOMIC_CMP_SWP || (wr.flags & ~MROC_SEND_SIGNALED) ? -EINVAL :
		      engine_post_send(cs->eng, q->qpn, &wr, now);
		if (err == -ENOSPC)
			break;		/* the engine's send queue is full: later */
		ring_cons_release(&q->sq, 1);
		savail--;
		budget--;
		done++;
		cs->st.wrs++;
		q->cl->wrs++;
		if (!q->sending) {
			q->sending = true;
			cs->st.qps_sending++;
		}
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
		} else if (now - q->last_work >= HOT_NS && clients_qp_cool(cs, q)) {
			continue;	/* the last hot QP took its index */
		}
		cs->hot_next++;
	}
	return work;
}

/*
 * A doorbell's epoll data: the client whose context's doorbell it is, or
 * (DOORBELL_QP set: both are malloc'd, so bit 0 is free) the QP whose own.
 * Edge-triggered and never read: each write(2) of the client is one event,
 * and a client that fills its counter (a write then fails with EAGAIN)
 * silences only that doorbell.
 */
#define DOORBELL_QP	1ULL

static int doorbell_add(struct clients *cs, int fd, uint64_t data)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = data };

	return epoll_ctl(cs->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

int clients_doorbell_add(struct clients *cs, struct client *cl)
{
	return doorbell_add(cs, cl->doorbell, (uint64_t)(uintptr_t)cl);
}

int clients_qp_doorbell_add(struct clients *cs, struct cqp *q)
{
	return doorbell_add(cs, q->doorbell, (uint64_t)(uintptr_t)q | DOORBELL_QP);
}

void clients_doorbell_del(struct clients *cs, struct client *cl)
{
	if (epoll_ctl(cs->epfd, EPOLL_CTL_DEL, cl->doorbell, NULL))
		pr_warn_rl("client %u: its doorbell left the epoll set: %s", cl->id, strerror(errno));
}

/* A QP with work goes hot (a corrupted one too: the next poll kicks its client). */
static void qp_rang(struct clients *cs, struct cqp *q, uint64_t now)
{
	cs->st.doorbell_qps++;
	if (q->hot_idx == NOT_LISTED && (ring_cons_avail(&q->rq) || ring_cons_avail(&q->sq)))
		clients_qp_heat(cs, q, now);
}

static void rang(struct clients *cs, uint64_t data, uint64_t now)
{
	if (data & DOORBELL_QP) {
		qp_rang(cs, (struct cqp *)(uintptr_t)(data & ~DOORBELL_QP), now);
		return;
	}
	for (struct cqp *q = ((struct client *)(uintptr_t)data)->wqps; q; q = q->cl_next)
		qp_rang(cs, q, now);
}

/*
 * The doorbells rung since the last look, DOORBELL_BATCH at a time (the
 * rest stay ready for the next): one system call however many clients.
 */
static void take_doorbells(struct clients *cs, uint64_t now)
{
	struct epoll_event ev[DOORBELL_BATCH];
	int n;

	for (int round = 0; round < 4; round++) {
		n = epoll_wait(cs->epfd, ev, DOORBELL_BATCH, 0);
		cs->st.doorbell_calls++;
		if (n <= 0)
			return;
		cs->st.doorbells += (uint64_t)n;
		/* Nothing here leaves the lists (the control thread's calls run between loops). */
		for (int i = 0; i < n; i++)
			rang(cs, ev[i].data.u64, now);
		if (n < DOORBELL_BATCH)
			return;
	}
}

/*
 * Cold QPs whose rings hold work at two sweeps in a row, not consumed in
 * between (so no doorbell brought them hot meanwhile): taken now (SWEEP_NS).
 * A corrupted ring goes hot too: its next poll disconnects the client.
 */
static void sweep_cold(struct clients *cs, uint64_t now)
{
	for (uint32_t i = 0; i < cs->nactive; i++) {
		struct cqp *q = cs->active[i];
		bool work;

		if (q->hot_idx != NOT_LISTED || q->cl->kicked) {
			q->swept = false;
			continue;
		}
		work = ring_cons_avail(&q->sq) || ring_cons_avail(&q->rq);
		if (!work || !q->swept || q->swept_sq != q->sq.head || q->swept_rq != q->rq.head) {
			q->swept = work;
			q->swept_sq = q->sq.head;
			q->swept_rq = q->rq.head;
			continue;
		}
		q->swept = false;
		cs->st.rings_stranded++;
		pr_warn_rl("QP %u (client %u): work waited %llu ms in its rings without a doorbell",
			   q->qpn, q->cl->id, (unsigned long long)(SWEEP_NS / 1000000));
		clients_qp_heat(cs, q, now);
	}
}

int clients_poll(void *ctx, uint64_t now)
{
	struct clients *cs = ctx;

	cs->loop++;
	/*
	 * A busy worker does not sleep on the doorbells: it looks now and then,
	 * and always before a sweep (a worker kept off its CPU past a sweep
	 * would otherwise find rung work there and count it stranded).
	 */
	if (now >= cs->next_doorbells || now >= cs->next_sweep) {
		cs->next_doorbells = now + DOORBELL_POLL_NS;
		take_doorbells(cs, now);
	}
	if (now >= cs->next_sweep) {
		cs->next_sweep = now + SWEEP_NS;
		sweep_cold(cs, now);
	}
	return poll_hot(cs, now);
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
		.conn_err = c->reason,
		.byte_len = c->byte_len,
		.imm = c->imm,
	};
	cq_push(cs, q, &e, now);
	return true;
}

bool clients_zombie_free(struct clients *cs)
{
	uint32_t size = cs->max_total_qps;

	if (cs->nreap) {
		/* Done already, destroyed at the next tick: now. */
		engine_qp_destroy(cs->eng, cs->reap[--cs->nreap]);
		return true;
	}
	while (cs->nzombies) {
		struct zombie *z = &cs->zombies[cs->zhead];
		uint32_t qpn = z->qpn;

		cs->zhead = (cs->zhead + 1) % size;
		cs->nzombies--;
		if (!qpn)
			continue;	/* reaped (and destroyed above or by the tick) */
		qpmap_del(&cs->zmap, qpn);
		engine_qp_destroy(cs->eng, qpn);
		cs->st.zombies_cut++;
		return true;
	}
	return false;
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

/* The worker sleeps on one fd for every doorbell (clients_doorbell_add). */
int clients_fds(void *ctx, int *fds, int max)
{
	struct clients *cs = ctx;

	if (max < 1)
		return 0;
	fds[0] = cs->epfd;
	return 1;
}

/* The epoll set is readable: a doorbell rang while the worker slept. */
void clients_fd_ready(void *ctx, int i)
{
	struct clients *cs = ctx;

	(void)i;
	take_doorbells(cs, mrocd_now_ns());
}

bool clients_idle(void *ctx, uint64_t now)
{
	struct clients *cs = ctx;
	uint64_t rung = cs->st.doorbells;

	if (now < cs->next_idle_look)
		return false;
	cs->next_idle_look = now + DOORBELL_IDLE_NS;
	cs->next_doorbells = now + DOORBELL_POLL_NS;
	take_doorbells(cs, now);
	return cs->st.doorbells != rung;
}

/* About to sleep: every hot QP goes cold (asks for the doorbell); false if one got work. */
bool clients_may_sleep(void *ctx)
{
	struct clients *cs = ctx;

	while (cs->nhot)
		if (!clients_qp_cool(cs, cs->hot[cs->nhot - 1]))
			return false;
	return true;
}

void clients_get_stats(struct clients *cs, struct clients_stats *out)
{
	*out = cs->st;
	out->qps_hot = cs->nhot;
	/* The control thread's, read while it waits in worker_call (admin.c's snapshot). */
	out->clients = cs->conns;
	out->opened = cs->opened;
	out->closed = cs->closed;
	/* The control thread's, read while it waits in worker_call (admin.c's snapshot). */
	if (cs->ctl == cs) {
		out->listen_refused = cs->listen_refused;
		out->share_refused = cs->share_refused;
		out->reserve_refused = cs->reserve_refused;
		out->unpopulated_refused = cs->unpopulated_refused;
		out->seal_refused = cs->seal_refused;
		out->ctl_deferred = cs->ctl_deferred;
		out->services = services_count(cs->svc);
	}
}

void clients_uid_stats(const struct clients *cs, uid_t uid, struct clients_uid_stats *out)
{
	for (uint32_t i = 0; i < cs->nwcl; i++) {
		const struct client *cl = cs->wcl[i];

		if (cl->uid != uid)
			continue;
		out->clients++;
		/* The control thread's fields: it waits in worker_call meanwhile. */
		out->qps += cl->nqps;
		out->mrs += cl->nmrs;
		out->locked_bytes += cl->locked_bytes;
		out->wrs += cl->wrs;
		out->bad_wrs += cl->bad_wrs;
		out->cqes += cl->cqes;
		out->cq_overflows += cl->cq_overflows;
	}
}

int clients_qp_owner(const struct clients *cs, uint32_t qpn, struct clients_owner *out)
{
	const struct cqp *q = qpmap_get(&cs->map, qpn);

	struct ring_view *r[3];

	if (!q || !q->cl)
		return -ENOENT;
	*out = (struct clients_owner){ .pid = q->cl->pid, .uid = q->cl->uid, .client = q->cl->id };
	/* (const: the views are only read; ring.h's accessors take them non-const.) */
	r[0] = (struct ring_view *)&q->sq;
	r[1] = (struct ring_view *)&q->rq;
	r[2] = (struct ring_view *)&q->cq;
	out->rings.sq_prod = atomic_load_explicit(ring_prod(r[0]), memory_order_relaxed);
	out->rings.sq_cons = atomic_load_explicit(ring_cons(r[0]), memory_order_relaxed);
	out->rings.rq_prod = atomic_load_explicit(ring_prod(r[1]), memory_order_relaxed);
	out->rings.rq_cons = atomic_load_explicit(ring_cons(r[1]), memory_order_relaxed);
	out->rings.cq_prod = atomic_load_explicit(ring_prod(r[2]), memory_order_relaxed);
	out->rings.cq_cons = atomic_load_explicit(ring_cons(r[2]), memory_order_relaxed);
	out->rings.sq_flags = atomic_load_explicit(ring_flags(r[0]), memory_order_relaxed);
	out->rings.rq_flags = atomic_load_explicit(ring_flags(r[1]), memory_order_relaxed);
	out->rings.cq_flags = atomic_load_explicit(ring_flags(r[2]), memory_order_relaxed);
	out->rings.hot = q->hot_idx != NOT_LISTED;
	return 0;
}
