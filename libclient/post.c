// SPDX-License-Identifier: MIT
/*
 * The data path: work requests into the SQ and RQ (validated, addresses
 * turned into region offsets, the daemon's doorbell rung only when it sleeps),
 * completions out of the CQ, the completion channel (the ARMED flag and
 * the completion eventfd) for sleeping instead of spinning, and the polling
 * policy between the two (spin.h).
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/*
 * After a commit: if the daemon polls the QP no more (NEED_WAKEUP), ring
 * the QP's doorbell, once per ring until the daemon asks again (RUNG): posts
 * in a row to a cold QP cost one system call, not one each.
 */
static void kick(struct mroc_qp *qp, struct ring_view *r)
{
	uint64_t one = 1;

	if (!ring_prod_needs_wakeup_once(r, MROC_RING_NEED_WAKEUP, MROC_RING_RUNG))
		return;
	/* The QP's own: mrocd looks at this QP only.  EAGAIN: the counter is full (abi.h). */
	if (write(qp->doorbell_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		pr_warn("cannot ring mrocd's doorbell: %s", mroc_strerror(-errno));
}

/* Free slots: 1 or more, -EAGAIN when full, -EBADMSG when the daemon corrupted the indices. */
static int prod_space(struct ring_view *r)
{
	int64_t space = ring_prod_space(r);

	if (space < 0) {
		pr_warn("ring indices corrupted (producer %u, consumer %u, %u entries)", r->head,
			atomic_load_explicit(ring_cons(r), memory_order_relaxed), r->mask + 1);
		return -EBADMSG;
	}
	return space ? 1 : -EAGAIN;
}

static bool wr_is_atomic(uint8_t opcode)
{
	return opcode == MROC_WR_ATOMIC_FETCH_ADD || opcode == MROC_WR_ATOMIC_CMP_SWP;
}

int mroc_post_send(struct mroc_qp *qp, const struct mroc_send_wr *wr)
{
	struct mroc_sqe e = { 0 };
	int err;

	if (!qp || !wr || wr->opcode > MROC_WR_ATOMIC_CMP_SWP ||
	    (wr->flags & ~MROC_SEND_SIGNALED))
		return -EINVAL;
	/* Refused here rather than as a BAD_WR completion: the caller's mistake, found at once. */
	if (wr_is_atomic(wr->opcode) && (wr->sg.length != 8 || (wr->remote_offset & 7)))
		return -EINVAL;
	if (atomic_load_explicit(&qp->ctx->dead, memory_order_relaxed))
		return -ENOTCONN;
	err = libmroc_sge_offset(qp->ctx, &qp->sq_cache, &wr->sg, &e.laddr);
	if (err)
		return err;
	err = prod_space(&qp->sq);
	if (err < 0)
		return err;
	e.wr_id = wr->wr_id;
	e.opcode = wr->opcode;
	e.flags = wr->flags;
	e.lkey = wr->sg.lkey;
	e.len = wr->sg.length;
	e.rkey = wr->rkey;
	e.raddr = wr->remote_offset;
	e.imm = wr->imm;
	e.compare_add = wr->compare_add;
	e.swap = wr->swap;
	memcpy(ring_prod_slot(&qp->sq), &e, sizeof(e));
	ring_prod_commit(&qp->sq, 1);
	kick(qp, &qp->sq);
	return 0;
}

int mroc_post_recv(struct mroc_qp *qp, const struct mroc_recv_wr *wr)
{
	struct mroc_rqe e = { 0 };
	int err;

	if (!qp || !wr)
		return -EINVAL;
	if (atomic_load_explicit(&qp->ctx->dead, memory_order_relaxed))
		return -ENOTCONN;
	err = libmroc_sge_offset(qp->ctx, &qp->rq_cache, &wr->sg, &e.laddr);
	if (err)
		return err;
	err = prod_space(&qp->rq);
	if (err < 0)
		return err;
	e.wr_id = wr->wr_id;
	e.lkey = wr->sg.lkey;
	e.len = wr->sg.length;
	memcpy(ring_prod_slot(&qp->rq), &e, sizeof(e));
	ring_prod_commit(&qp->rq, 1);
	kick(qp, &qp->rq);
	return 0;
}

/* What mroc_qp_wait_connected returns for a connect that failed so. */
static int conn_errno(uint8_t conn_err)
{
	switch (conn_err) {
	case MROC_CONN_ERR_NO_ANSWER:
		return -ETIMEDOUT;
	case MROC_CONN_ERR_SECURITY:
		return -EACCES;
	case MROC_CONN_ERR_BAD_PARAM:
		return -EINVAL;
	case MROC_CONN_ERR_NO_RESOURCES:
		return -EAGAIN;
	case MROC_CONN_ERR_CLOSED:
		return -ECONNRESET;
	default:
		return -ECONNREFUSED;
	}
}

void libmroc_cqe_to_wc(struct mroc_qp *qp, const void *slot, struct mroc_wc *wc)
{
	struct mroc_cqe c;

	memcpy(&c, slot, sizeof(c));	/* read shared memory once */
	*wc = (struct mroc_wc){
		.wr_id = c.wr_id, .qpn = c.qpn, .opcode = c.opcode, .status = c.status,
		.flags = c.flags, .conn_err = c.conn_err, .byte_len = c.byte_len, .imm = c.imm,
	};
	switch (c.opcode) {
	case MROC_WC_CONNECTED:
		atomic_store_explicit(&qp->conn, LIBMROC_CONN_UP, memory_order_relaxed);
		break;
	case MROC_WC_DISCONNECTED:
		atomic_store_explicit(&qp->conn, -ECONNRESET, memory_order_relaxed);
		break;
	case MROC_WC_EVENT_ERROR:
		atomic_store_explicit(&qp->conn, c.status == MROC_WC_CONNECT_ERR ?
				      conn_errno(c.conn_err) : -ECONNREFUSED, memory_order_relaxed);
		break;
	}
}

/* This thread's last yield on an empty poll (spin.h: one per LIBMROC_YIELD_EVERY_NS). */
static _Thread_local int64_t last_yield = -1;
/* When this thread's last poll found a completion, on any QP (< 0: never). */
static _Thread_local int64_t last_work = -1;

/*
 * An empty poll: -ENOTCONN if mrocd is gone; past the QP's spin budget, give
 * the CPU away, unless this thread did a moment ago (polling other QPs), or
 * it is not idle (spin.h, libmroc_thread_idle), or the QP's channel is armed.
 */
static int poll_empty(struct mroc_qp *qp)
{
	int64_t now = libmroc_now_ns();

	if (libmroc_ctx_gone(qp->ctx, now))
		return -ENOTCONN;
	if (libmroc_spin_empty(&qp->poll_spin, now) == LIBMROC_SPIN_POLL ||
	    !libmroc_thread_idle(last_work, now, qp->poll_spin.spin_ns))
		return 0;
	/* Armed: the caller looks once more before it sleeps on the channel (mroc_req_notify). */
	if (qp->armed)
		return 0;
	/*
	 * Counted from the yield's end: on a busy machine a yield lasts longer
	 * than the interval, and counted from its start every empty poll after
	 * it was due again (a sweep of 64 QPs made up to 64 yields, 12 us apart).
	 */
	if (libmroc_yield_due(&last_yield, now)) {
		sched_yield();
		last_yield = libmroc_now_ns();
	}
	return 0;
}

int mroc_poll_cq(struct mroc_qp *qp, struct mroc_wc *wc, int max)
{
	int n = 0;
	int64_t avail;

	if (!qp || !wc || max < 0)
		return -EINVAL;
	/* What mroc_qp_wait_connected set aside comes first: it is older. */
	for (; n < max && qp->stash_cnt; n++) {
		wc[n] = qp->stash[qp->stash_head];
		qp->stash_head = (qp->stash_head + 1) % qp->stash_cap;
		qp->stash_cnt--;
	}
	if (n == max)
		return n;
	avail = ring_cons_avail(&qp->cq);
	if (avail < 0) {
		pr_warn("CQ indices corrupted on QP %u", qp->qpn);
		return n ? n : -EBADMSG;
	}
	if (avail > max - n)
		avail = max - n;
	if (n + avail == 0)
		return max ? poll_empty(qp) : 0;
	libmroc_spin_reset(&qp->poll_spin);
	last_work = libmroc_now_ns();
	for (int i = 0; i < avail; i++)
		libmroc_cqe_to_wc(qp, ring_cons_slot(&qp->cq, i), &wc[n + i]);
	ring_cons_release(&qp->cq, avail);
	return n + avail;
}

/* ---- completion channel ---------------------------------------------------------- */

int mroc_cq_fd(const struct mroc_qp *qp)
{
	return qp ? qp->cq_fd : -EINVAL;
}

/*
 * The channel's flag: each arm mrocd takes (clears) it signals once.  Seen
 * down at our next arm or disarm, an arm of ours was taken: a signal is owed
 * to the next read.
 */
static void cq_flag_seen(struct mroc_qp *qp, uint32_t old, bool armed)
{
	if (qp->armed && !(old & MROC_RING_ARMED))
		qp->signal_owed = true;
	qp->armed = armed;
}

/* Arm, then look once more: true if the CQ is still empty (ring.h's pairing). */
static bool cq_arm(struct mroc_qp *qp)
{
	uint32_t old;
	bool empty = ring_cons_prepare_sleep_old(&qp->cq, MROC_RING_ARMED, &old);

	cq_flag_seen(qp, old, true);
	return empty;
}

static void cq_disarm(struct mroc_qp *qp)
{
	cq_flag_seen(qp, ring_cons_clear_flag(&qp->cq, MROC_RING_ARMED), false);
}

int mroc_req_notify(struct mroc_qp *qp)
{
	bool empty;

	if (!qp)
		return -EINVAL;
	/* Armed in any case: a caller that sleeps anyway is woken by the next one. */
	empty = cq_arm(qp);
	return empty && !qp->stash_cnt ? 0 : 1;
}

/*
 * Disarm and drain the counter.  The read is made only when mrocd took the
 * flag (it signals once for each arm it takes) or an earlier signal is still
 * owed (it takes the flag in its loop and writes the fd at the loop's end, so
 * a read in between finds nothing yet): a sleeper that disarms all of its
 * QPs after a wake-up pays a system call for those that fired only.
 */
int mroc_ack_notify(struct mroc_qp *qp)
{
	uint64_t cnt;

	if (!qp)
		return -EINVAL;
	cq_disarm(qp);
	if (!qp->signal_owed)
		return 0;	/* no arm was taken: nothing was or will be signalled */
	if (read(qp->cq_fd, &cnt, sizeof(cnt)) < 0) {
		if (errno != EAGAIN)
			return -errno;
		qp->signal_owed = true;	/* taken, not written yet: the next ack reads */
		return 0;
	}
	qp->signal_owed = false;
	return 0;
}

int64_t libmroc_now_ns(void)
{
	return (int64_t)mono_ns();
}

int64_t libmroc_deadline(int timeout_ms)
{
	return timeout_ms < 0 ? LIBMROC_FOREVER : libmroc_now_ns() + timeout_ms * 1000000LL;
}

/* poll(2)'s timeout until deadline, rounded up so that we never wake just before it. */
static int ms_left(int64_t deadline)
{
	int64_t left;

	if (deadline == LIBMROC_FOREVER)
		return -1;
	left = deadline - libmroc_now_ns();
	if (left <= 0)
		return 0;
	left = (left + 999999) / 1000000;
	return left > INT32_MAX ? INT32_MAX : (int)left;
}

int libmroc_cq_sleep(struct mroc_qp *qp, int64_t deadline)
{
	/* The socket too: a daemon that dies never signals the completion fd. */
	struct pollfd pfd[2] = {
		{ .fd = qp->cq_fd, .events = POLLIN },
		{ .fd = qp->ctx->sock, .events = POLLRDHUP },
	};
	int n;

	if (atomic_load_explicit(&qp->ctx->dead, memory_order_relaxed))
		return -ENOTCONN;
	if (!cq_arm(qp)) {
		cq_disarm(qp);
		return 0;
	}
	do
		n = poll(pfd, 2, ms_left(deadline));
	while (n < 0 && errno == EINTR);
	if (n > 0 && (pfd[1].revents & LIBMROC_HANGUP)) {
		libmroc_ctx_died(qp->ctx);
		n = -1;
		errno = ENOTCONN;
	}
	if (n <= 0 || !(pfd[0].revents & POLLIN)) {
		cq_disarm(qp);
		return n < 0 ? -errno : n == 0 ? -ETIMEDOUT : 0;
	}
	return mroc_ack_notify(qp);
}

int mroc_wait_cq(struct mroc_qp *qp, int timeout_ms)
{
	int64_t deadline = libmroc_deadline(timeout_ms), avail, now;
	struct libmroc_spin spin;
	int err;

	if (!qp)
		return -EINVAL;
	/* Spin, then yield as long again, then sleep (spin.h). */
	libmroc_spin_init(&spin, qp->ctx->spin_ns, qp->ctx->spin_ns);
	for (;;) {
		if (qp->stash_cnt)
			return 0;
		avail = ring_cons_avail(&qp->cq);
		if (avail)
			return avail > 0 ? 0 : -EBADMSG;
		now = libmroc_now_ns();
		if (libmroc_ctx_gone(qp->ctx, now))
			return -ENOTCONN;
		switch (now < deadline ? libmroc_spin_empty(&spin, now) : LIBMROC_SPIN_SLEEP) {
		case LIBMROC_SPIN_POLL:
			cpu_relax();
			break;
		case LIBMROC_SPIN_YIELD:
			sched_yield();
			break;
		case LIBMROC_SPIN_SLEEP:
			err = libmroc_cq_sleep(qp, deadline);
			/* -ENOTCONN: the completions already in the CQ come first. */
			if (err && err != -ENOTCONN)
				return err;
			break;
		}
	}
}
