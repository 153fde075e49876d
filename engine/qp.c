// SPDX-License-Identifier: MIT
/* QP life cycle, completion queue and timer bookkeeping; what its send and receive sides share:
 * messages by MSN, completing work in posting order, flush and the error state. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Starting sizes of the growable rings (ring.c): what an idle QP holds. */
#define RING_START	16

static uint32_t start_cap(uint32_t max)
{
	return max < RING_START ? max : RING_START;
}

struct qp *qp_alloc(struct engine *eng, const struct engine_qp_attr *attr)
{
	/* On a line of its own: struct qp's hot fields are its first three lines. */
	size_t size = (sizeof(struct qp) + 63) & ~(size_t)63;
	struct qp *qp = aligned_alloc(64, size);
	int err = 0;

	if (!qp)
		return NULL;
	memset(qp, 0, size);
	qp->mode = attr->mode;
	qp->mops = mode_ops_of(attr->mode);
	qp->npaths = attr->npaths < qp->mops->max_paths ? attr->npaths : qp->mops->max_paths;
	qp->pd = attr->pd;
	qp->user = attr->user;
	qp->sq_depth = attr->sq_depth;
	qp->rq_depth = attr->rq_depth;

	/* Logical sizes from the depths; the arrays start small and grow. */
	qp->txm_max = pow2_up(attr->sq_depth + MROC_MAX_RD);
	qp->rq_max = pow2_up(attr->rq_depth);
	qp->cq_cap = pow2_up(attr->sq_depth + attr->rq_depth + 8);
	err |= SEQRING_ALLOC(qp->txm, qp->txm_mask, start_cap(qp->txm_max));
	err |= SEQRING_ALLOC(qp->dsn, qp->dsn_mask, RING_START);
	err |= SEQRING_ALLOC(qp->rtxq, qp->rtx_mask, RING_START);
	err |= SEQRING_ALLOC(qp->rcv_map, qp->map_mask, 1);
	err |= SEQRING_ALLOC(qp->rxm, qp->rxm_mask, RING_START);
	err |= SEQRING_ALLOC(qp->rq, qp->rq_mask, start_cap(qp->rq_max));
	err |= SEQRING_ALLOC(qp->cq, qp->cq_mask, start_cap(qp->cq_cap));
	qp->paths = calloc(qp->npaths, sizeof(*qp->paths));
	if (err || !qp->paths)
		goto fail;
	for (unsigned i = 0; i < qp->npaths; i++)
		if (SEQRING_ALLOC(qp->paths[i].sb, qp->paths[i].sb_mask, RING_START))
			goto fail;
	/* Ties between paths go round-robin from here: not path 0 for every QP of a host. */
	qp->rr = prng_below(&eng->rng, qp->npaths);
	qp->fixed_isn = attr->fixed_isn;
	qp->isn_psn = attr->isn_psn;
	qp->isn_dsn = attr->isn_dsn;
	qp_new_isn(eng, qp);
	return qp;
fail:
	qp_free(qp);
	return NULL;
}

/*
 * Fresh initial sequence numbers for a connection (unless the application
 * fixed them): a QP that connects again must not accept, nor have accepted,
 * a packet of its last connection still in the network (issue #23: it
 * reused the first connection's numbers).
 */
void qp_new_isn(struct engine *eng, struct qp *qp)
{
	if (qp->fixed_isn)
		return;
	qp->isn_psn = sec_rand32(eng);
	qp->isn_dsn = sec_rand32(eng);
}

void qp_free(struct qp *qp)
{
	if (!qp)
		return;
	if (qp->paths)
		for (unsigned i = 0; i < qp->npaths; i++)
			free(qp->paths[i].sb);
	free(qp->paths);
	free(qp->txm);
	free(qp->dsn);
	free(qp->rtxq);
	free(qp->rcv_map);
	free(qp->rxm);
	free(qp->rq);
	free(qp->cq);
	free(qp->rxp);
	free(qp);
}

/*
 * Work to send and nothing that will ever look at it: not on tx_ready or
 * its peer's blocked list, no packet in flight whose ACK or RTO would wake
 * it, no timer of its own (pacing, RNR, probes, RACK, a stall), no READ
 * answer to wait for.  A state no code path should leave (engine_check
 * fails on it); qp_timers counts it (EC_TX_STRANDED) and engine_advance
 * wakes it, at the latest a dead-peer interval later.
 */
bool qp_stranded(const struct qp *qp)
{
	if (qp->snd_nxt == qp->dsn_alloc && qp->rtx_head == qp->rtx_tail && !qp->gbn_active)
		return false;
	if (list_linked(&qp->tx_node) || qp->pace_blocked || qp->rnr_deadline ||
	    qp->rack_deadline || qp->stall_since || qp->rd_out)
		return false;
	for (unsigned k = 0; k < qp->npaths; k++)
		if (qp->paths[k].inflight || qp->paths[k].rto_deadline || qp->paths[k].probe_at)
			return false;
	return true;
}

/* Connected: set up the send side's sequence spaces and paths. */
void qp_start(struct engine *eng, struct qp *qp, uint64_t now)
{
	peer_detach(eng, qp);
	qp->state = ENGINE_QPS_CONNECTED;
	qp->starts++;
	qp->snd_nxt = qp->snd_una = qp->dsn_alloc = qp->isn_dsn;
	qp->msn_head = qp->msn_tail = qp->msn_seg = 0;
	/* A reconnected QP starts clean: the new peer numbers from zero. */
	qp->ssn_next = 0;
	qp->nak_seen = 0;
	qp->una_retries = 0;
	qp->stall_since = 0;
	qp->rnr_deadline = 0;
	qp->rack_valid = false;	/* the last connection's deliveries say nothing */
	qp->rack_deadline = 0;
	qp->rtx_head = qp->rtx_tail = 0;
	qp->gbn_active = false;
	qp->pace_next = 0;
	qp->pace_blocked = false;
	qp->hint_mbps = 0;
	qp->rd_out = qp->rd_resp = 0;
	qp->ans_deadline = 0;
	qp->ans_tries = 0;
	qp->ka_request = qp->ka_reply = false;
	qp->ka_wait = 0;
	qp->last_progress = qp->last_rx = qp->ka_sent = now;
	/* Another peer QP numbers its keepalives from its own start. */
	if (qp->ka_rx_peer != qp->peer || qp->ka_rx_qpn != qp->peer_qpn) {
		qp->ka_rx_peer = qp->peer;
		qp->ka_rx_qpn = qp->peer_qpn;
		qp->ka_rx_seq = 0;
	}
	path_first_ports(eng, qp);
	for (unsigned i = 0; i < qp->npaths; i++)
		path_init(eng, qp, &qp->paths[i], (uint8_t)i, now);
	/* path_init cleared every path's timers and probes */
	qp->path_due = (struct due_sum){ 0 };
	qp->probes_owed = 0;
	peer_attach(eng, qp);
	qp_wake(eng, qp);
}

uint32_t qp_cq_room(const struct qp *qp)
{
	return qp->cq_cap - (qp->cq_tail - qp->cq_head);
}

int qp_push_cqe(struct engine *eng, struct qp *qp, const struct engine_cqe *cqe)
{
	uint32_t used = qp->cq_tail - qp->cq_head;
	int err = SEQRING_RESERVE(qp->cq, qp->cq_mask, qp->cq_head, used + 1, qp->cq_cap);

	if (err) {
		qp->errors++;
		return err;
	}
	qp->cq[qp->cq_tail++ & qp->cq_mask] = *cqe;
	if (!list_linked(&qp->cq_node))
		list_add_tail(&eng->cq_ready, &qp->cq_node);
	return 0;
}

/* Events use slots the QP reserved (cq sized sq + rq + 8), so they fit. */
static void push_event(struct engine *eng, struct qp *qp, uint8_t wc_op, uint8_t status,
		       uint8_t reason)
{
	struct engine_cqe e = {
		.wr_id = qp->user,
		.qpn = qp->qpn,
		.opcode = wc_op,
		.status = status,
		.reason = reason,
	};

	qp_push_cqe(eng, qp, &e);
}

void qp_event(struct engine *eng, struct qp *qp, uint8_t wc_op, uint8_t status)
{
	push_event(eng, qp, wc_op, status, 0);
}

/*
 * The connect failed: the QP goes to ERROR, its event saying why
 * (ENGINE_CONN_NO_ANSWER, or a CM reason: a peer's as cm_peer_reason reads it).
 */
void qp_connect_failed(struct engine *eng, struct qp *qp, uint8_t reason)
{
	qp->state = ENGINE_QPS_ERROR;
	qp->err_status = ENGINE_WC_CONNECT_ERR;
	qp->err_why = reason;
	qp->cm_pending = CM_NONE;
	qp->cm_deadline = 0;
	push_event(eng, qp, ENGINE_WC_EV_ERROR, ENGINE_WC_CONNECT_ERR, reason);
}

/* qp_keepalive_due with the peer last heard at heard (qp_heard: read once a call). */
static uint64_t keepalive_due(const struct engine *eng, const struct qp *qp, uint64_t heard)
{
	if (qp->ka_sent > heard)		/* the last one is unanswered */
		return qp->ka_sent + qp->ka_wait;
	return heard + eng->cfg.keepalive_ns;
}

/* When the next keepalive request is due (qp_timers' keepalive_next). */
uint64_t qp_keepalive_due(const struct engine *eng, const struct qp *qp)
{
	return keepalive_due(eng, qp, qp_heard(qp));
}

/* The earliest of the paths' timers (struct due_sum): read again only when stale. */
static uint64_t due_paths(struct qp *qp)
{
	struct due_sum *s = &qp->path_due;

	if (s->stale) {
		s->at = 0;
		for (unsigned i = 0; i < qp->npaths; i++) {
			s->at = deadline_min(s->at, qp->paths[i].rto_deadline);
			s->at = deadline_min(s->at, qp->paths[i].probe_at);
		}
		s->stale = false;
	}
	return s->at;
}

static uint64_t due_acks(struct qp *qp)
{
	struct due_sum *s = &qp->ack_due;

	if (s->stale) {
		s->at = 0;
		for (unsigned i = 0; i < qp->nrxp; i++)
			s->at = deadline_min(s->at, qp->rxp[i].ack_deadline);
		s->stale = false;
	}
	return s->at;
}

/*
 * m with deadline d (0: none) taken in, where m is the earliest so far less
 * one: less one, "none" is the largest value and the earliest a plain
 * minimum, without deadline_min's two tests a term (qp_update_deadline runs
 * after every packet, issue #22).
 */
static inline uint64_t earlier(uint64_t m, uint64_t d)
{
	return min_u64(m, d - 1);
}

void qp_update_deadline(struct engine *eng, struct qp *qp)
{
	uint64_t m = qp->cm_deadline - 1;	/* the earliest deadline less one (UINT64_MAX: none) */

	if (qp->state == ENGINE_QPS_CONNECTED || qp->state == ENGINE_QPS_CLOSING) {
		m = earlier(m, due_paths(qp));
		m = earlier(m, qp->rack_deadline);
		m = earlier(m, due_acks(qp));
		m = earlier(m, qp->rnr_deadline);
		m = earlier(m, qp->ans_deadline);
		if (qp->pace_blocked)
			m = earlier(m, qp->pace_next);
		if (qp->stall_since)
			m = earlier(m, qp->stall_since + eng->cfg.rto_min_ns * 4);
		if (eng->cfg.keepalive_ns && qp->state == ENGINE_QPS_CONNECTED) {
			uint64_t heard = qp_heard(qp);	/* once: this runs on every packet */

			m = earlier(m, keepalive_due(eng, qp, heard));
			m = earlier(m, heard + eng->cfg.dead_peer_ns);
		} else if (qp->snd_una != qp->snd_nxt) {
			/*
			 * No keepalives: the dead-peer check of data in flight
			 * (qp_timers) has a deadline of its own.  It ran only when
			 * some path timer did, and those may be rto_max apart: a
			 * QP whose peer fell silent failed 22 ms after its last
			 * progress, not 8 (test_engine_sec
			 * test_replayed_ack_no_progress, once its timed-out paths
			 * probed their new ports at once and left no probe time
			 * to fall after it).
			 */
			m = earlier(m, qp->last_progress + eng->cfg.dead_peer_ns);
		}
	}
	timer_set(eng, qp, m + 1);
}

/* A KEEPALIVE with the QP's next number (PROTOCOL 3.4a); buf holds MROC_KA_PKT_LEN. */
size_t qp_put_keepalive(struct qp *qp, uint8_t *buf, uint8_t flags, uint8_t path_id, uint64_t now)
{
	size_t n = qp_put_hdr(qp, buf, MROC_OP_KEEPALIVE, flags, path_id, now);

	return n + wire_put_ka(buf + n, ++qp->ka_tx_seq);
}

/*
 * A keepalive of the peer's: taken (a sign of life) only above the last one
 * taken, so a replayed one proves nothing; one without a number (a peer from
 * before it) only where nothing seals.  Not taken: counted, and not answered.
 */
bool qp_ka_fresh(struct engine *eng, struct qp *qp, const struct wire_pkt *pkt)
{
	if (pkt->ka.has_seq ? pkt->ka.seq <= qp->ka_rx_seq :
			      eng->cfg.sec_mode == MROC_SEC_AEAD) {
		eng->st.c[EC_RX_STALE_KA]++;
		return false;
	}
	if (pkt->ka.has_seq)
		qp->ka_rx_seq = pkt->ka.seq;
	return true;
}

static void push_send_cqe(struct engine *eng, struct qp *qp, const struct tx_msg *m)
{
	struct engine_cqe c = {
		.wr_id = m->wr_id,
		.qpn = qp->qpn,
		.opcode = m->wc_op,
		.status = m->status,
		.byte_len = mroc_op_is_atomic(m->op) ? 8 : m->len,
	};

	qp_push_cqe(eng, qp, &c);
}

static bool msg_done(const struct qp *qp, const struct tx_msg *m)
{
	if (m->state == TXM_DONE)
		return true;
	if (!seq_le(m->first_dsn + m->nseg, qp->snd_una))
		return false;
	return !mroc_op_is_request(m->op) || m->read_done;
}

/*
 * Retire finished messages in MSN order; app WRs complete in posting order.
 * Returns true when one was retired: a READ_REQ waiting for room in the
 * message ring may go now (qp_deliver, the caller's: qp_rx.c is above us).
 */
bool qp_complete_sends(struct engine *eng, struct qp *qp)
{
	bool freed = false;

	while (qp->msn_head != qp->msn_tail) {
		struct tx_msg *m = qp_msg(qp, qp->msn_head);

		if (!msg_done(qp, m))
			break;
		if (m->op == MROC_OP_READ_RESP || m->op == MROC_OP_ATOMIC_RESP) {
			qp->rd_resp--;
		} else {
			if (m->signaled || m->status != ENGINE_WC_SUCCESS)
				push_send_cqe(eng, qp, m);
			qp->sq_used--;
			qp->tx_msgs++;
			if (mroc_op_is_request(m->op) && m->started && !--qp->rd_out)
				qp->ans_deadline = qp->ans_tries = 0;
		}
		m->state = TXM_FREE;
		qp->msn_head++;
		freed = true;
	}
	return freed;
}

/*
 * Fail every outstanding message with status (unless one already has its
 * own) and retire them; returns qp_complete_sends's answer.
 */
bool qp_flush_sends(struct engine *eng, struct qp *qp, uint8_t status)
{
	for (uint32_t msn = qp->msn_head; msn != qp->msn_tail; msn++) {
		struct tx_msg *m = qp_msg(qp, msn);

		if (m->state != TXM_DONE) {
			m->state = TXM_DONE;
			m->status = status;
		}
	}
	return qp_complete_sends(eng, qp);
}

/* The rest of a flush: every RECV completes with status, nothing is in flight any more. */
void qp_flush_rest(struct engine *eng, struct qp *qp, uint8_t status)
{
	while (qp->rq_count) {
		struct rq_entry *r = &qp->rq[qp->rq_head & qp->rq_mask];
		struct engine_cqe c = {
			.wr_id = r->wr_id,
			.qpn = qp->qpn,
			.opcode = ENGINE_WC_RECV,
			.status = status,
		};

		qp_push_cqe(eng, qp, &c);
		qp->rq_head++;
		qp->rq_count--;
	}
	qp->rtx_head = qp->rtx_tail;
	qp->gbn_active = false;
	qp->snd_nxt = qp->snd_una = qp->dsn_alloc;
	peer_detach(eng, qp);
	for (unsigned i = 0; i < qp->npaths; i++) {
		path_set_rto_deadline(qp, &qp->paths[i], 0);
		qp->paths[i].inflight = 0;
		qp->paths[i].floor = qp->paths[i].next_psn;
	}
	qp->rnr_deadline = 0;
	qp->stall_since = 0;
	qp->rack_deadline = 0;
	/*
	 * Nothing left to pace, and only qp_tx_data clears it, which a QP
	 * closing (CLOSING keeps its timers) never reaches: its pacing time
	 * stayed a deadline in the past, run again at every timer run.
	 */
	qp->pace_blocked = false;
}

/* A QP that is not connected (nothing of it may be delivered any more): everything fails. */
void qp_flush(struct engine *eng, struct qp *qp, uint8_t status)
{
	qp_flush_sends(eng, qp, status);
	qp_flush_rest(eng, qp, status);
}

/*
 * The QP fails with cause: the rest of its work completes with FLUSH_ERR,
 * the error event carries the cause, the peer is told.
 */
void qp_set_error(struct engine *eng, struct qp *qp, uint8_t cause, uint64_t now)
{
	if (qp->state == ENGINE_QPS_ERROR)
		return;
	qp->errors++;
	qp->state = ENGINE_QPS_ERROR;
	qp->err_status = cause;
	qp_flush(eng, qp, ENGINE_WC_FLUSH_ERR);
	qp_event(eng, qp, ENGINE_WC_EV_ERROR, cause);
	qp->cm_pending = CM_SEND_DISC;
	qp->cm_reason = MROC_CM_ERROR;
	qp->cm_tries = 0;
	qp->cm_deadline = 0;
	/*
	 * On the control list: a WR that failed inside engine_tx left the QP on
	 * the data list, which engine_tx then leaves it off (it sends no data),
	 * and the DISCONNECT never went out (issue #23, finding 7).
	 */
	qp_wake_ctl(eng, qp);
	(void)now;
}
