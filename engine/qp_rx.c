// SPDX-License-Identifier: MIT
/*
 * Receive side of a QP: window checks, validation before any byte is
 * written, out-of-order placement straight into the final buffer, DSN
 * dedupe, in-order message delivery (completions, READ responses), and
 * the per-path ACKs that carry SACK, echo, CE counts, rate hint and NAKs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Receive state for a new connection; peer_npaths is set.  0 or -ENOMEM. */
int qp_rx_reset(struct engine *eng, struct qp *qp, uint32_t peer_isn_psn, uint32_t peer_isn_dsn)
{
	(void)eng;
	if (qp->nrxp != qp->peer_npaths) {
		struct rx_path *rxp = calloc(qp->peer_npaths, sizeof(*rxp));

		if (!rxp)
			return -ENOMEM;
		free(qp->rxp);
		qp->rxp = rxp;
		qp->nrxp = qp->peer_npaths;
	}
	for (unsigned i = 0; i < qp->nrxp; i++) {
		qp->rxp[i] = (struct rx_path){ 0 };
		sack_init(&qp->rxp[i].sack, peer_isn_psn);
	}
	qp->ack_due = (struct due_sum){ 0 };
	qp->acks_owed = 0;
	qp->rcv_cum = peer_isn_dsn;
	/* The peer's SSNs start at 0; RECVs posted before (re)connecting keep their slots. */
	qp->ssn_base = qp->rq_head;
	qp->nak_seq = 0;
	qp->nak_code = MROC_NAK_NONE;
	memset(qp->rcv_map, 0, (qp->map_mask + 1) * sizeof(*qp->rcv_map));
	memset(qp->rxm, 0, (qp->rxm_mask + 1) * sizeof(*qp->rxm));
	qp->rcv_msn = 0;
	return 0;
}

int qp_post_recv(struct engine *eng, struct qp *qp, const struct engine_recv_wr *wr)
{
	if (qp->state == ENGINE_QPS_ERROR)
		return -ENOTCONN;
	if (qp->rq_count >= qp->rq_depth || !qp_cq_budget(qp))
		return -ENOSPC;
	if (SEQRING_RESERVE(qp->rq, qp->rq_mask, qp->rq_head, qp->rq_count + 1, qp->rq_max))
		return -ENOMEM;
	if (wr->len && !mr_check_lkey(eng, qp->pd, wr->lkey, ENGINE_ACCESS_LOCAL_WRITE, wr->laddr,
				      wr->len))
		return -EFAULT;
	qp->rq[(qp->rq_head + qp->rq_count) & qp->rq_mask] = (struct rq_entry){
		.wr_id = wr->wr_id, .lkey = wr->lkey, .laddr = wr->laddr, .len = wr->len,
	};
	qp->rq_count++;
	return 0;
}

static bool map_test(const struct qp *qp, uint32_t dsn)
{
	return qp->rcv_map[(dsn / 64) & qp->map_mask] & (1ULL << (dsn % 64));
}

static void map_flip(struct qp *qp, uint32_t dsn)
{
	qp->rcv_map[(dsn / 64) & qp->map_mask] ^= 1ULL << (dsn % 64);
}

/*
 * Room in the receive rings for this segment: the DSN map up to its DSN
 * (at or above rcv_cum) and the message ring up to its MSN.
 */
/* Word indices (dsn / 64) live in a space of 2^26 that wraps with the DSN's. */
#define MAP_WORD_MASK	(UINT32_MAX / 64)

static int rx_reserve(struct engine *eng, struct qp *qp, uint32_t dsn, uint32_t msn)
{
	/*
	 * Serial arithmetic in that space: with rcv_cum 0xfffffffa and DSN 3
	 * the plain difference was 0xfc000003 words, refused, and the segment
	 * waited for the stall safety net (issue #23, finding 6).
	 */
	uint32_t words = ((dsn / 64 - qp->rcv_cum / 64) & MAP_WORD_MASK) + 1;

	if (SEQRING_RESERVE(qp->rcv_map, qp->map_mask, qp->rcv_cum / 64, words,
			    2 * eng->dsn_window / 64))
		return -ENOMEM;
	return SEQRING_RESERVE(qp->rxm, qp->rxm_mask, qp->rcv_msn, msn - qp->rcv_msn + 1,
			       MROC_MSG_WINDOW);
}

/* Record a placed DSN and slide the cumulative DSN over contiguous ones. */
static void dsn_received(struct qp *qp, uint32_t dsn)
{
	map_flip(qp, dsn);
	while (map_test(qp, qp->rcv_cum)) {
		map_flip(qp, qp->rcv_cum);
		qp->rcv_cum++;
	}
}

/* MetaRoCE: PSNs below the sender's floor are given up on; none may hold the SACK window. */
void rx_apply_floor(struct rx_path *rp, const struct mroc_data_hdr *d)
{
	if (seq_le(d->psn_floor, d->psn) && seq_diff(d->psn, d->psn_floor) < MROC_SACK_BITS)
		sack_floor(&rp->sack, d->psn_floor);
}

void qp_set_nak(struct qp *qp, struct rx_path *rp, uint8_t code, uint32_t dsn)
{
	qp->nak_code = code;
	qp->nak_dsn = dsn;
	if (!++qp->nak_seq)
		qp->nak_seq = 1;
	rxp_ack_now(qp, rp);
}

/* RECV for ssn, or NULL with *nak set (RNR when not posted yet). */
static struct rq_entry *recv_for(struct qp *qp, uint32_t peer_ssn, uint8_t *nak)
{
	uint32_t ssn = peer_ssn + qp->ssn_base;
	int32_t d = seq_diff(ssn, qp->rq_head);

	if (d >= 0 && (uint32_t)d < qp->rq_count)
		return &qp->rq[ssn & qp->rq_mask];
	*nak = d >= 0 ? MROC_NAK_RNR : MROC_NAK_INVALID;
	return NULL;
}

static uint64_t get_be64(const uint8_t *b)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

/*
 * The 8-byte word an atomic names, or NULL with *err: -EINVAL when it is
 * not aligned, else what the key check said (remote atomic rights needed).
 */
static uint64_t *atomic_target(struct engine *eng, struct qp *qp, uint32_t rkey, uint64_t raddr,
			       int *err)
{
	uint8_t *t = mr_check_rkey(eng, qp->pd, rkey, ENGINE_ACCESS_REMOTE_ATOMIC, raddr, 8, err);

	if (t && ((uintptr_t)t & 7)) {
		*err = -EINVAL;
		return NULL;
	}
	return (uint64_t *)t;
}

/* A path that heard from the peer, for an answer no path asked for (rxp[0] may never have). */
static struct rx_path *heard_path(struct qp *qp)
{
	for (unsigned i = 0; i < qp->nrxp; i++)
		if (qp->rxp[i].sport)
			return &qp->rxp[i];
	return &qp->rxp[0];
}

/*
 * Responder: perform a delivered atomic, once, and answer with the word's
 * original value.  -ENOSPC (nothing done) when the message ring is full:
 * delivery stops and resumes when a message retires.  The region may have
 * gone since placement: then the requester gets an ACCESS NAK.
 */
static int answer_atomic(struct engine *eng, struct qp *qp, const struct rx_msg *mi)
{
	uint64_t *t, old;
	struct tx_msg *m;
	int err;

	t = atomic_target(eng, qp, mi->key, mi->raddr, &err);
	if (!t) {
		eng->st.c[EC_RX_ACCESS_ERR]++;
		qp_set_nak(qp, heard_path(qp), MROC_NAK_ACCESS, mi->last_dsn);
		qp_wake_ctl(eng, qp);
		return 0;
	}
	m = qp_queue_atomic_resp(eng, qp, mi->msn);
	if (!m)
		return -ENOSPC;
	/* Atomic for other atomics and for the host's CPUs alike. */
	if (mi->op == MROC_OP_FETCH_ADD) {
		old = __atomic_fetch_add(t, mi->arg[0], __ATOMIC_SEQ_CST);
	} else {
		old = mi->arg[0];
		__atomic_compare_exchange_n(t, &old, mi->arg[1], false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
	}
	for (int i = 7; i >= 0; i--, old >>= 8)
		m->atomic[i] = (uint8_t)old;
	return 0;
}

/*
 * Where this segment's payload goes, after every check; NULL with *nak and
 * the counter bumped when it must not be written.  *dst stays NULL for
 * segments without payload.
 */
static int place_target(struct engine *eng, struct qp *qp, const struct wire_pkt *pkt,
			uint8_t **dst, uint8_t *nak)
{
	const struct mroc_data_hdr *d = &pkt->data;
	uint32_t plen = pkt->payload_len;
	struct rq_entry *r;
	struct tx_msg *m;
	int err;

	*dst = NULL;
	switch (pkt->hdr.opcode) {
	case MROC_OP_WRITE_IMM:
		if (!recv_for(qp, d->ssn, nak))
			goto rnr;
		/* fall through */
	case MROC_OP_WRITE:
		if (d->raddr > UINT64_MAX - d->offset)
			goto bounds_remote;
		*dst = mr_check_rkey(eng, qp->pd, d->key, ENGINE_ACCESS_REMOTE_WRITE,
				     d->raddr + d->offset, plen, &err);
		if (!*dst)
			goto remote_err;
		return 0;
	case MROC_OP_SEND:
	case MROC_OP_SEND_IMM:
		r = recv_for(qp, d->ssn, nak);
		if (!r)
			goto rnr;
		if ((uint64_t)d->offset + plen > r->len || d->msg_len > r->len) {
			*nak = MROC_NAK_INVALID;
			goto bounds;
		}
		if (!plen)
			return 0;
		*dst = mr_check_lkey(eng, qp->pd, r->lkey, ENGINE_ACCESS_LOCAL_WRITE,
				     r->laddr + d->offset, plen);
		if (!*dst) {
			*nak = MROC_NAK_INVALID;
			goto bounds;
		}
		return 0;
	case MROC_OP_READ_REQ:
		if (!mr_check_rkey(eng, qp->pd, d->key, ENGINE_ACCESS_REMOTE_READ, d->raddr,
				   d->msg_len, &err) && d->msg_len)
			goto remote_err;
		if (!d->msg_len && !mr_check_rkey(eng, qp->pd, d->key, ENGINE_ACCESS_REMOTE_READ,
						  0, 0, &err))
			goto remote_err;
		return 0;
	case MROC_OP_FETCH_ADD:
	case MROC_OP_CMP_SWAP:
		/* Checked now, done at delivery (in order): the word must be ours to change. */
		if (!atomic_target(eng, qp, d->key, d->raddr, &err)) {
			*nak = err == -EINVAL ? MROC_NAK_INVALID : MROC_NAK_ACCESS;
			if (err == -EINVAL)
				goto bounds;
			goto remote_err;
		}
		return 0;
	case MROC_OP_ATOMIC_RESP:
		m = qp_msg(qp, d->key);
		if (m->state != TXM_ACTIVE || m->msn != d->key || !mroc_op_is_atomic(m->op) ||
		    !m->started) {
			*nak = MROC_NAK_INVALID;
			eng->st.c[EC_RX_ACCESS_ERR]++;
			return -EACCES;
		}
		*dst = mr_check_lkey(eng, qp->pd, m->src_key, ENGINE_ACCESS_LOCAL_WRITE, m->src_addr,
				     MROC_ATOMIC_RESP_LEN);
		if (!*dst) {
			*nak = MROC_NAK_INVALID;
			goto bounds;
		}
		return 0;
	case MROC_OP_READ_RESP:
		m = qp_msg(qp, d->key);
		if (m->state != TXM_ACTIVE || m->msn != d->key || m->op != MROC_OP_READ_REQ ||
		    !m->started) {
			/* Not a READ of ours: the key is wrong, not the size. */
			*nak = MROC_NAK_INVALID;
			eng->st.c[EC_RX_ACCESS_ERR]++;
			return -EACCES;
		}
		if (d->msg_len != m->len) {
			*nak = MROC_NAK_INVALID;
			goto bounds;
		}
		if (!plen)
			return 0;
		*dst = mr_check_lkey(eng, qp->pd, m->src_key, ENGINE_ACCESS_LOCAL_WRITE,
				     m->src_addr + d->offset, plen);
		if (!*dst) {
			*nak = MROC_NAK_INVALID;
			goto bounds;
		}
		return 0;
	}
	*nak = MROC_NAK_INVALID;
	return -EINVAL;
rnr:
	eng->st.c[*nak == MROC_NAK_RNR ? EC_RX_RNR : EC_RX_BOUNDS_ERR]++;
	return -EAGAIN;
remote_err:
	*nak = MROC_NAK_ACCESS;
	eng->st.c[err == -ERANGE ? EC_RX_BOUNDS_ERR : EC_RX_ACCESS_ERR]++;
	return -EACCES;
bounds_remote:
	*nak = MROC_NAK_ACCESS;
bounds:
	eng->st.c[EC_RX_BOUNDS_ERR]++;
	return -ERANGE;
}

/* The last DSN of the message a segment belongs to, as its header tells. */
static uint32_t msg_last_dsn(const struct wire_pkt *pkt, uint32_t seg_len)
{
	const struct mroc_data_hdr *d = &pkt->data;
	uint32_t nseg = d->msg_len ? (uint32_t)(((uint64_t)d->msg_len + seg_len - 1) / seg_len) : 1;

	if (mroc_op_is_request(pkt->hdr.opcode))
		nseg = 1;
	return d->dsn - d->offset / seg_len + nseg - 1;
}

/*
 * Whether a segment agrees with the message its MSN names, once a segment
 * of it was taken (note_msg): the same opcode, length, key, address, SSN,
 * immediate and DSNs, as every segment a sender builds carries (qp_tx.c).
 * The message's shape was the first segment's, and each later one was
 * placed by its own header: one that claimed another length, opcode, place
 * or RECV was written there (test_engine_liar.c: a WRITE's second segment
 * as a SEND filled a posted RECV, one 64 KiB further on landed outside the
 * WRITE, and both WRs succeeded).
 */
static bool msg_agrees(const struct qp *qp, const struct wire_pkt *pkt, uint32_t seg_len)
{
	const struct mroc_data_hdr *d = &pkt->data;
	const struct rx_msg *mi = &qp->rxm[d->msn & qp->rxm_mask];

	if (!mi->valid || mi->msn != d->msn)
		return true;
	return mi->op == pkt->hdr.opcode && mi->len == d->msg_len && mi->key == d->key &&
	       mi->raddr == d->raddr && mi->ssn == d->ssn && mi->imm == d->imm &&
	       mi->last_dsn == msg_last_dsn(pkt, seg_len);
}

/* Remember what we need to deliver message msn once all its DSNs are in. */
static void note_msg(struct engine *eng, struct qp *qp, const struct wire_pkt *pkt,
		     uint32_t seg_len)
{
	const struct mroc_data_hdr *d = &pkt->data;
	struct rx_msg *mi = &qp->rxm[d->msn & qp->rxm_mask];

	(void)eng;
	if (mi->valid && mi->msn == d->msn)
		return;
	*mi = (struct rx_msg){
		.valid = 1,
		.op = pkt->hdr.opcode,
		.msn = d->msn,
		.last_dsn = msg_last_dsn(pkt, seg_len),
		.len = d->msg_len,
		.ssn = d->ssn,
		.imm = d->imm,
		.key = d->key,
		.raddr = d->raddr,
	};
	if (mroc_op_is_atomic(pkt->hdr.opcode)) {
		mi->arg[0] = get_be64(pkt->payload);
		mi->arg[1] = get_be64(pkt->payload + 8);
	}
}

/* Deliver complete messages in MSN order. */
void qp_deliver(struct engine *eng, struct qp *qp)
{
	for (;;) {
		struct rx_msg *mi = &qp->rxm[qp->rcv_msn & qp->rxm_mask];

		if (!mi->valid || mi->msn != qp->rcv_msn || !seq_lt(mi->last_dsn, qp->rcv_cum))
			return;
		if (mroc_op_uses_recv(mi->op)) {
			struct rq_entry *r = &qp->rq[qp->rq_head & qp->rq_mask];
			struct engine_cqe c = {
				.wr_id = r->wr_id,
				.qpn = qp->qpn,
				.opcode = mi->op == MROC_OP_WRITE_IMM ? ENGINE_WC_RECV_RDMA_IMM :
									 ENGINE_WC_RECV,
				.byte_len = mi->len,
				.imm = mi->imm,
				.flags = mroc_op_has_imm(mi->op) ? ENGINE_WC_WITH_IMM : 0,
			};

			/* Placement checked the RECV for this SSN; it is the head. */
			if (!qp->rq_count || mi->ssn + qp->ssn_base != qp->rq_head)
				c.status = ENGINE_WC_LOC_LEN_ERR;
			if (qp->rq_count) {
				qp->rq_head++;
				qp->rq_count--;
			}
			qp_push_cqe(eng, qp, &c);
		} else if (mroc_op_is_request(mi->op) && qp->rd_resp >= MROC_MAX_RD) {
			/*
			 * As many answers queued as a requester may have READs
			 * and atomics outstanding: one that ignores the cap
			 * waits here, retried when an answer retires, instead
			 * of filling the message ring our own sends need
			 * (issue #23: engine_post_send failed with -ENOSPC).
			 */
			return;
		} else if (mi->op == MROC_OP_READ_REQ) {
			if (qp_queue_read_resp(eng, qp, mi))
				return;	/* ring full: retried when a message retires */
		} else if (mroc_op_is_atomic(mi->op)) {
			if (answer_atomic(eng, qp, mi))
				return;	/* ring full: retried when a message retires */
		} else if (mi->op == MROC_OP_READ_RESP || mi->op == MROC_OP_ATOMIC_RESP) {
			struct tx_msg *m = qp_msg(qp, mi->key);

			if (m->state == TXM_ACTIVE && m->msn == mi->key)
				m->read_done = 1;
		}
		qp->rx_msgs++;
		mi->valid = 0;
		qp->rcv_msn++;
		/* A READ_REQ this lets through is this loop's next turn. */
		if (mi->op == MROC_OP_READ_RESP || mi->op == MROC_OP_ATOMIC_RESP)
			qp_complete_sends(eng, qp);
	}
}

/*
 * At once: what asks for it, arrives out of order or leaves a hole, and a
 * packet that fills one (the cumulative PSN jumps, RFC 5681 4.2).  The
 * sender's reorder window is how much later the late packet's ACK came
 * (qp_ack.c note_reorder); held for ack_every packets or ack_delay, that
 * ACK added the receiver's wait to it, which the window's users (loss by
 * time, a look's clear band) then took for the route's reordering.
 */
static void schedule_ack(struct engine *eng, struct qp *qp, struct rx_path *rp,
			 const struct wire_pkt *pkt, uint32_t old_cum, uint64_t now)
{
	bool in_order = pkt->data.psn == old_cum;

	rp->unacked++;
	if ((pkt->hdr.flags & MROC_F_ACK_REQ) || !in_order || sack_has_holes(&rp->sack) ||
	    seq_diff(rp->sack.cum, old_cum) > 1 ||
	    rp->unacked >= eng->cfg.ack_every)
		rxp_ack_now(qp, rp);
	else if (!rp->ack_deadline)
		rxp_set_ack_deadline(qp, rp, now + eng->cfg.ack_delay_ns);
}

/*
 * The packet an ACK of its path echoes from now on: its send stamp, when
 * we took it (rx_taken: no earlier than it arrived) and how long it waited
 * in the host before (rx_arrival), which the ACK's host_delay gives back.
 */
static void rx_took(const struct engine *eng, struct rx_path *rp, const struct wire_pkt *pkt,
		    const struct engine_rx_meta *meta, uint64_t now)
{
	uint64_t taken = rx_taken(eng, meta, now);

	rp->last_ts = pkt->hdr.ts;
	rp->last_ts_at = taken;
	rp->last_wait = (uint32_t)min_u64(taken - rx_arrival(eng, meta, now), UINT32_MAX);
}

int qp_rx_data(struct engine *eng, struct qp *qp, const struct wire_pkt *pkt,
	       const struct engine_rx_meta *meta, uint64_t now)
{
	const struct mroc_data_hdr *d = &pkt->data;
	struct rx_path *rp;
	int32_t dd = seq_diff(d->dsn, qp->rcv_cum);
	uint32_t old_cum, seg_len = qp->peer_mtu;
	uint8_t *dst, nak = MROC_NAK_NONE;
	int err;

	if (qp->state != ENGINE_QPS_CONNECTED && qp->state != ENGINE_QPS_CLOSING) {
		eng->st.c[EC_RX_BAD_STATE]++;
		return -ENOTCONN;
	}
	/*
	 * Segments have the shape the sender's MTU gives them, or the split
	 * rule's (PROTOCOL 5.2) if the peer and we agreed on it; anything else
	 * is cut or forged.
	 */
	if (pkt->hdr.flags & MROC_F_SPLIT)
		seg_len = qp->peer_split && !mroc_op_is_request(pkt->hdr.opcode) ?
			  mroc_split_seg(d->msg_len, qp->peer_mtu, qp->peer_npaths,
					 qp->peer_split, qp->peer_split_ports) : 0;
	if (!seg_len || d->offset % seg_len ||
	    (pkt->hdr.opcode != MROC_OP_READ_REQ &&
	     pkt->payload_len != min_u64(seg_len, d->msg_len - d->offset))) {
		eng->st.c[EC_RX_MALFORMED]++;
		eng->st.rx_malformed[WIRE_ERR_LENGTH]++;
		return -EBADMSG;
	}
	if (pkt->hdr.path_id >= qp->nrxp) {
		eng->st.c[EC_RX_OUT_OF_WINDOW]++;
		return -ERANGE;
	}
	rp = &qp->rxp[pkt->hdr.path_id];
	/*
	 * Where the path's packets come from now, before anything below owes
	 * it an ACK (a duplicate's, a RoCEv2 out-of-order NAK): an ACK owed on
	 * a path that had received nothing went out from source port 0.
	 */
	rp->sport = meta->sport;
	/* The floor first: PSNs the sender gave up on must not hold the window. */
	if (qp->mops->rx_floor)
		qp->mops->rx_floor(rp, d);
	/* Beyond any window: drop without acknowledging, the sender resends. */
	if (seq_diff(d->psn, rp->sack.cum) > MROC_SACK_BITS ||
	    dd >= (int32_t)eng->dsn_window ||
	    ((uint32_t)seq_diff(d->msn, qp->rcv_msn) >= MROC_MSG_WINDOW && dd >= 0)) {
		eng->st.c[EC_RX_OUT_OF_WINDOW]++;
		return -ERANGE;
	}
	if (!rp->active) {
		/*
		 * A path's first packet: what an ACK owed below echoes, even a
		 * RoCEv2 NAK of it; the echo was our own clock (issue #23, finding 4).
		 */
		rx_took(eng, rp, pkt, meta, now);
	}
	if (qp->mops->rx_order) {
		err = qp->mops->rx_order(eng, qp, rp, d->psn);
		if (err)
			return err;
	}
	old_cum = rp->sack.cum;
	if (sack_set(&rp->sack, d->psn) == SACK_DUP) {
		eng->st.c[EC_RX_DUP]++;
		rxp_ack_now(qp, rp);
		eng->rx_repeat = true;	/* a PSN its path had: a replay or the network's copy */
		return -EALREADY;
	}
	/* A PSN new on its path: sent since the last one, a sign of life (a replay is not). */
	peer_heard(qp, now);
	rp->rcv_pkts++;
	if (meta->ce) {
		rp->ce_pkts++;
		eng->st.c[EC_CE]++;
	}
	rx_took(eng, rp, pkt, meta, now);
	rp->active = true;
	/*
	 * A packet of a delivered DSN that asks for no ACK is a small
	 * message's copy whose first transmission came first (PROTOCOL 5.2):
	 * its sender let go of it when that was acknowledged, so it waits for
	 * the path's next ACK.  Acknowledged on its own (after the ACK delay),
	 * it took this host's NIC as it sent a ring AllReduce's later steps
	 * (4 KiB, 32 ranks, idle: 267.5 us against 266.2 without copies).
	 */
	if (dd >= 0 || (pkt->hdr.flags & MROC_F_ACK_REQ))
		schedule_ack(eng, qp, rp, pkt, old_cum, now);
	cc_rate_hint(eng, qp, now);

	if (dd < 0) {
		eng->st.c[EC_RX_DUP]++;
		return -EALREADY;
	}
	if (rx_reserve(eng, qp, d->dsn, d->msn)) {
		rxp_ack_now(qp, rp);	/* memory ran out: the sender resends */
		return -ENOMEM;
	}
	if (map_test(qp, d->dsn)) {
		eng->st.c[EC_RX_DUP]++;
		return -EALREADY;
	}
	if (!msg_agrees(qp, pkt, seg_len)) {
		eng->st.c[EC_RX_MSG_MISMATCH]++;
		qp_set_nak(qp, rp, MROC_NAK_INVALID, d->dsn);
		return -EPROTO;
	}
	err = place_target(eng, qp, pkt, &dst, &nak);
	if (err) {
		qp_set_nak(qp, rp, nak, d->dsn);
		return err;
	}
	if (dst && pkt->hdr.opcode == MROC_OP_ATOMIC_RESP) {
		uint64_t v = get_be64(pkt->payload);	/* wire order to the host's */

		memcpy(dst, &v, sizeof(v));
		eng->st.c[EC_RX_BYTES_PLACED] += pkt->payload_len;
	} else if (dst && pkt->payload_len) {
		memcpy(dst, pkt->payload, pkt->payload_len);
		eng->st.c[EC_RX_BYTES_PLACED] += pkt->payload_len;
		qp->rx_bytes += pkt->payload_len;
	}
	if (qp->rd_out)
		qp->ans_progress = now;	/* the peer answers, or sends what it owes first */
	note_msg(eng, qp, pkt, seg_len);
	dsn_received(qp, d->dsn);
	qp_deliver(eng, qp);
	return 0;
}

/* A keepalive request or answer, if one is due.  Returns 1 or 0. */
int qp_tx_keepalive(struct engine *eng, struct qp *qp, uint64_t now, struct engine_txbuf *b)
{
	uint8_t flags, path_id;
	uint16_t sport;

	if (!qp_ka_owed(qp) || b->cap < MROC_KA_PKT_LEN)
		return 0;
	/* A request goes on our path ka_path, an answer back on the request's own port. */
	if (qp->ka_request) {
		flags = MROC_F_ACK_REQ;
		path_id = qp->ka_path;
		sport = qp->paths[path_id].sport;
		qp->ka_sent = now;
	} else {
		flags = 0;
		path_id = qp->ka_reply_path;
		sport = qp->ka_reply_sport;
	}
	qp->ka_request = qp->ka_reply = false;
	b->len = (uint32_t)qp_put_keepalive(qp, b->data, flags, path_id, now);
	b->peer = qp->peer;
	b->sport = sport;
	b->path_id = path_id;
	b->ect = false;
	b->echo = !(flags & MROC_F_ACK_REQ);
	eng->st.c[EC_TX_KEEPALIVE]++;
	return 1;
}

/*
 * How long ago the path's newest packet was taken (rx_took): 0 for an ACK
 * built on a clock older than that packet's arrival stamp (the caller read
 * its clock before the packet came), never the wrapped difference.
 */
static uint64_t since_taken(const struct rx_path *rp, uint64_t now)
{
	return now > rp->last_ts_at ? now - rp->last_ts_at : 0;
}

/*
 * The echo is moved on by the time the ACK waited here beyond the delayed
 * ACK's own allowance (which the sender's RTO already adds): behind
 * thousands of QPs' ACKs, a busy receiver must not look like a slow network
 * or like loss.  The sender's RTT keeps the network and its own queues.
 */
static uint32_t ack_held(const struct engine *eng, const struct rx_path *rp, uint64_t now)
{
	uint64_t held = since_taken(rp, now);

	return held > eng->cfg.ack_delay_ns ? (uint32_t)(held - eng->cfg.ack_delay_ns) : 0;
}

/*
 * The host time the echo still holds (byte host_delay, PROTOCOL 3.3): what
 * the newest packet waited before the engine took it (a receive ring, the
 * worker's batch) and the delayed ACK's allowance.  The RTO keeps both, as
 * before; the sender's delay signal takes them out: a host that polls in
 * batches, or waits for a CPU, is not a queue on the path (issue #22).
 */
static uint8_t ack_host_delay(const struct engine *eng, const struct rx_path *rp, uint64_t now)
{
	uint64_t held = since_taken(rp, now);

	return mroc_host_delay_enc(rp->last_wait + min_u64(held, eng->cfg.ack_delay_ns));
}

/* Build a pending ACK, if any path owes one now.  Returns 1 or 0. */
int qp_tx_ack(struct engine *eng, struct qp *qp, uint64_t now, struct engine_txbuf *b)
{
	/* Most calls find nothing owed: decided without the rx paths (qp->acks_owed). */
	if (!qp_ack_maybe_due(qp, now))
		return 0;
	for (unsigned i = 0; i < qp->nrxp; i++) {
		struct rx_path *rp = &qp->rxp[i];
		struct mroc_ack_hdr a;
		size_t n;

		if (!(qp->acks_owed & (1u << i)) && !(rp->ack_deadline && now >= rp->ack_deadline))
			continue;
		if (b->cap < MROC_HDR_LEN + MROC_ACK_HDR_LEN)
			return 0;
		a = (struct mroc_ack_hdr){
			.cum_psn = rp->sack.cum,
			.cum_dsn = qp->rcv_cum,
			.ts_echo = rp->last_ts + ack_held(eng, rp, now),
			.rcv_pkts = rp->rcv_pkts,
			.ce_pkts = rp->ce_pkts,
			.rate_hint = cc_rate_hint(eng, qp, now),
			.nak_dsn = qp->nak_dsn,
			.nak_seq = qp->nak_seq,
			.nak_code = qp->nak_code,
			.host_delay = ack_host_delay(eng, rp, now),
		};
		sack_to_bytes(&rp->sack, a.sack);
		if (!(qp->acks_owed & (1u << i)))
			eng->st.c[EC_TX_ACK_DELAYED]++;
		n = qp_put_hdr(qp, b->data, MROC_OP_ACK, 0, (uint8_t)i, now);
		n += wire_put_ack(b->data + n, &a);
		b->len = (uint32_t)n;
		b->peer = qp->peer;
		b->sport = rp->sport;
		b->path_id = (uint8_t)i;
		b->ect = false;
		b->echo = true;
		qp->acks_owed &= (uint16_t)~(1u << i);
		rxp_set_ack_deadline(qp, rp, 0);
		rp->unacked = 0;
		eng->st.c[EC_TX_ACKS]++;
		return 1;
	}
	return 0;
}
