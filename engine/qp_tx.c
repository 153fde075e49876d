// SPDX-License-Identifier: MIT
/*
 * Send side of a QP: posting work, cutting messages into segments, choosing
 * the segment (retransmissions first; its path: qp_tx_path.c), and
 * building data packets (pacing: cc_rate.c; completion: qp.c).
 */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "qp_tx.h"

/*
 * A new message of op goes alone: it is cut by the split rule (PROTOCOL 5.2)
 * and its packets choose their paths by RTT (pick_path_alone), when the
 * peer takes split messages and nothing waits to be sent before this one,
 * so that its segments leave at once on as many paths
 * and each hop serialises a part: a 4 KiB message of one packet crossed 4
 * store-and-forward hops at 1.3 us each (25 Gbit/s), where a QP per plane
 * sent four 1 KiB packets in parallel, and a small collective was up to 40%
 * slower than that (issue #23).  Messages queued behind others keep the
 * mtu: there the NIC and the paths are busy anyway and smaller packets only
 * cost headers.  "Behind others" is on the QP (data not yet sent), and, at
 * a post (now > 0) with a link rate, on the host: what was posted lately on
 * any QP would not have left at the link rate yet (an AllToAll posts to
 * every peer at once).  Whether a QP is on the ready list says nothing
 * here: an ACK wakes it, with nothing to send.  Else segments of the mtu.
 */
static bool sent_alone(const struct engine *eng, const struct qp *qp, uint8_t op, uint64_t now)
{
	return qp->peer_split && !mroc_op_is_request(op) && op != MROC_OP_ATOMIC_RESP &&
	       qp->snd_nxt == qp->dsn_alloc && (!now || eng->posted_until <= now);
}

/*
 * Split a message that goes alone only if this engine declared no loss for
 * SPLIT_QUIET_RTOS minimum RTOs (as of a post): each part can be lost, and
 * a lost part costs its step a tail-loss probe.  At 1% random loss a 512 B
 * AllReduce step in 8 parts lost 8 times as often, and the 32-rank
 * AllReduce's p50 went from 34.6 to 108 us (15-45 RTOs per run, against
 * 0-2), for a gain of 2 us without loss.  Losses are seen from the engine's
 * counter at each post, so the quiet time starts at the first post after.
 */
#define SPLIT_QUIET_RTOS	10

static bool split_quiet(struct engine *eng, uint64_t now)
{
	if (eng->st.c[EC_LOST] != eng->split_lost) {
		eng->split_lost = eng->st.c[EC_LOST];
		eng->split_lost_at = now;
	}
	return !eng->split_lost || now - eng->split_lost_at >= SPLIT_QUIET_RTOS * eng->cfg.rto_min_ns;
}

/*
 * Whether this host's packets were held up on their way lately: an RTT
 * sample of a message posted alone, in the last HELD_RTOS minimum RTOs,
 * exceeded its QP's best by more than an mtu packet and twice the message
 * take at the link rate (qp_ack.c note_held).
 */
#define HELD_RTOS	10

static bool held_up(const struct engine *eng, uint64_t now)
{
	return eng->held_at && now - eng->held_at < HELD_RTOS * eng->cfg.rto_min_ns;
}

/* A post of len bytes at now: when everything posted would have left at the link rate. */
static void posted(struct engine *eng, uint32_t len, uint64_t now)
{
	if (!eng->cfg.link_rate_bps)
		return;
	eng->posted_until = max_u64(eng->posted_until, now) +
			    ((uint64_t)len + MROC_DATA_OVERHEAD) * 8 * NSEC_PER_SEC /
			    eng->cfg.link_rate_bps;
}

static uint32_t nseg_of(uint32_t len, uint32_t seg_len)
{
	return len ? (uint32_t)(((uint64_t)len + seg_len - 1) / seg_len) : 1;
}

static const uint8_t wr_to_wire[] = {
	[ENGINE_WR_WRITE] = MROC_OP_WRITE,
	[ENGINE_WR_WRITE_IMM] = MROC_OP_WRITE_IMM,
	[ENGINE_WR_SEND] = MROC_OP_SEND,
	[ENGINE_WR_SEND_IMM] = MROC_OP_SEND_IMM,
	[ENGINE_WR_READ] = MROC_OP_READ_REQ,
	[ENGINE_WR_ATOMIC_FETCH_ADD] = MROC_OP_FETCH_ADD,
	[ENGINE_WR_ATOMIC_CMP_SWP] = MROC_OP_CMP_SWAP,
};

static const uint8_t wr_to_wc[] = {
	[ENGINE_WR_WRITE] = ENGINE_WC_WRITE,
	[ENGINE_WR_WRITE_IMM] = ENGINE_WC_WRITE_IMM,
	[ENGINE_WR_SEND] = ENGINE_WC_SEND,
	[ENGINE_WR_SEND_IMM] = ENGINE_WC_SEND_IMM,
	[ENGINE_WR_READ] = ENGINE_WC_READ,
	[ENGINE_WR_ATOMIC_FETCH_ADD] = ENGINE_WC_ATOMIC_FETCH_ADD,
	[ENGINE_WR_ATOMIC_CMP_SWP] = ENGINE_WC_ATOMIC_CMP_SWP,
};

static void put_be64(uint8_t *b, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		b[i] = (uint8_t)v;
}

/* Every WR and pending completion must fit the CQ, so none is ever dropped. */
bool qp_cq_budget(const struct qp *qp)
{
	uint32_t pending = qp->cq_tail - qp->cq_head;

	return qp->sq_used + qp->rq_count + pending + 8 < qp->cq_cap;
}

/*
 * A new message of op and len: one segment (nseg_1), or cut by the split
 * rule if it goes alone (sent_alone; now: the post's time, 0 for the
 * responder's answers, which are not split) and no loss was seen lately
 * (split_quiet), else by the mtu.
 */
static struct tx_msg *msg_alloc(struct engine *eng, struct qp *qp, uint8_t op, uint32_t len,
				bool nseg_1, uint64_t now)
{
	bool alone = sent_alone(eng, qp, op, now);
	uint32_t seg_len = alone && !nseg_1 && now && split_quiet(eng, now) ?
			   mroc_split_seg(len, eng->cfg.mtu, qp->npaths, eng->cfg.split_unit,
					  qp->peer_split_ports ? cm_split_ports(eng, qp->npaths) : 0) :
			   eng->cfg.mtu;
	uint32_t nseg = nseg_1 ? 1 : nseg_of(len, seg_len);
	struct tx_msg *m;

	if (nseg == 1)
		seg_len = eng->cfg.mtu;	/* one segment: nothing to split */

	if (qp->msn_tail - qp->msn_head >= qp->txm_max ||
	    SEQRING_RESERVE(qp->txm, qp->txm_mask, qp->msn_head,
			    qp->msn_tail - qp->msn_head + 1, qp->txm_max))
		return NULL;
	m = qp_msg(qp, qp->msn_tail);
	*m = (struct tx_msg){
		.msn = qp->msn_tail++,
		.first_dsn = qp->dsn_alloc,
		.nseg = nseg,
		.len = len,
		.seg_len = seg_len,
		.op = op,
		.state = TXM_ACTIVE,
		.split = seg_len != eng->cfg.mtu,
		.alone = alone,
	};
	qp->dsn_alloc += nseg;
	/*
	 * Copies (dup_max): a step of a small collective ends when its last
	 * part arrives, and beside an incast one part in a hundred or so waits
	 * behind a background packet (1.3 us at 25 Gbit/s) on a cable into the
	 * receiver's leaf; with a copy on a second path a part waits only when
	 * both do.  Always while every copy finds a path of its own (2 x nseg <=
	 * npaths); on paths that already carry a part, only while this host's
	 * RTTs show such waits (held_up): there the copies cost every step a
	 * little serialisation (a 512 B AllReduce in 8 parts and 8 copies:
	 * 17.89 us idle against 17.83, and 18.30 against 20.02 beside the
	 * incast).  A message that does not go alone ends the copies still
	 * owed: the NIC is busy then.
	 */
	qp->dup_next = qp->dup_end;
	if (alone && now && len <= eng->cfg.dup_max &&
	    (2 * nseg <= qp->npaths || held_up(eng, now))) {
		qp->dup_next = m->first_dsn;
		qp->dup_end = qp->dsn_alloc;
		m->copied = 1;
	}
	if (mroc_op_uses_recv(op))
		m->ssn = qp->ssn_next++;
	return m;
}

int qp_post_send(struct engine *eng, struct qp *qp, const struct engine_wr *wr, uint64_t now)
{
	struct tx_msg *m;
	uint32_t access;

	if (qp->state != ENGINE_QPS_CONNECTED)
		return -ENOTCONN;
	bool atomic = wr->opcode == ENGINE_WR_ATOMIC_FETCH_ADD ||
		      wr->opcode == ENGINE_WR_ATOMIC_CMP_SWP;

	if (wr->opcode > ENGINE_WR_ATOMIC_CMP_SWP || (wr->flags & ~ENGINE_WR_SIGNALED) ||
	    wr->len > INT32_MAX)
		return -EINVAL;
	/* An atomic works on one aligned 8-byte word, and returns it into 8 local bytes. */
	if (atomic && (wr->len != 8 || (wr->raddr & 7)))
		return -EINVAL;
	if (qp->sq_used >= qp->sq_depth || !qp_cq_budget(qp))
		return -ENOSPC;
	/* The local side is checked now; the remote side by the peer. */
	access = wr->opcode == ENGINE_WR_READ || atomic ? ENGINE_ACCESS_LOCAL_WRITE : 0;
	if (wr->len && !mr_check_lkey(eng, qp->pd, wr->lkey, access, wr->laddr, wr->len))
		return -EFAULT;
	if (atomic)
		m = msg_alloc(eng, qp, wr_to_wire[wr->opcode], MROC_ATOMIC_REQ_LEN, true, now);
	else
		m = msg_alloc(eng, qp, wr_to_wire[wr->opcode], wr->len,
			      wr->opcode == ENGINE_WR_READ, now);
	if (!m)
		return -ENOSPC;
	posted(eng, wr->opcode == ENGINE_WR_READ ? 0 : m->len, now);
	if (atomic) {
		put_be64(m->atomic, wr->compare_add);
		put_be64(m->atomic + 8, wr->opcode == ENGINE_WR_ATOMIC_CMP_SWP ? wr->swap : 0);
	}
	m->wr_id = wr->wr_id;
	m->wc_op = wr_to_wc[wr->opcode];
	m->signaled = wr->flags & ENGINE_WR_SIGNALED;
	m->imm = wr->imm;
	m->key = wr->rkey;
	m->raddr = wr->raddr;
	m->src_key = wr->lkey;
	m->src_addr = wr->laddr;
	qp->sq_used++;
	qp_wake(eng, qp);
	if (qp->snd_una == qp->snd_nxt)
		qp->last_progress = now;
	return 0;
}

/* Responder: a delivered READ_REQ becomes a READ_RESP message of ours. */
/*
 * Responder: the answer to atomic request req_msn, the original value to be
 * filled in by the caller (who performs the operation only once this
 * succeeded, so a full ring never makes it run twice).  NULL when full.
 */
struct tx_msg *qp_queue_atomic_resp(struct engine *eng, struct qp *qp, uint32_t req_msn)
{
	struct tx_msg *m = msg_alloc(eng, qp, MROC_OP_ATOMIC_RESP, MROC_ATOMIC_RESP_LEN, true, 0);

	if (!m)
		return NULL;
	m->key = req_msn;
	qp->rd_resp++;
	qp_wake(eng, qp);
	return m;
}

int qp_queue_read_resp(struct engine *eng, struct qp *qp, const struct rx_msg *req)
{
	struct tx_msg *m = msg_alloc(eng, qp, MROC_OP_READ_RESP, req->len, false, 0);

	if (!m)
		return -ENOSPC;
	m->key = req->msn;
	m->src_key = req->key;
	m->src_addr = req->raddr;
	qp->rd_resp++;
	qp_wake(eng, qp);
	return 0;
}

bool qp_has_data(const struct engine *eng, const struct qp *qp)
{
	(void)eng;
	return qp->rtx_head != qp->rtx_tail || qp->gbn_active || qp->snd_nxt != qp->dsn_alloc;
}

/*
 * Room for one more DSN in the retransmit FIFO.  It holds each live DSN at
 * most once (e->queued), but also DSNs that fell below snd_una before their
 * turn; when the window's worth is reached those are dropped by compacting.
 */
static bool rtxq_room(struct engine *eng, struct qp *qp)
{
	uint32_t n = qp->rtx_tail - qp->rtx_head, live = 0;

	if (!SEQRING_RESERVE(qp->rtxq, qp->rtx_mask, qp->rtx_head, n + 1, eng->dsn_window))
		return true;
	/*
	 * In place, in ring order: the write position never passes the read
	 * one.  A live DSN dropped here (acknowledged after it was queued)
	 * leaves the queue, so its flag goes too, as pick_dsn clears it: left
	 * set, a later loss of that DSN would never queue it again, and only
	 * the dead-peer timer would end the wait (issue #23).
	 */
	for (uint32_t i = qp->rtx_head; i != qp->rtx_tail; i++) {
		uint32_t d = qp->rtxq[i & qp->rtx_mask];

		if (seq_lt(d, qp->snd_una))
			continue;
		if (dsn_ent(qp, d)->state == DSN_LOST)
			qp->rtxq[(qp->rtx_head + live++) & qp->rtx_mask] = d;
		else
			dsn_ent(qp, d)->queued = 0;
	}
	qp->rtx_tail = qp->rtx_head + live;
	return live < qp->rtx_mask + 1;
}

void qp_mark_lost(struct engine *eng, struct qp *qp, uint32_t dsn)
{
	struct dsn_entry *e;

	(void)eng;
	if (seq_lt(dsn, qp->snd_una) || !seq_lt(dsn, qp->snd_nxt))
		return;
	e = dsn_ent(qp, dsn);
	if (e->state != DSN_INFLIGHT && e->state != DSN_RNR_WAIT)
		return;
	e->state = DSN_LOST;
	if (!qp->mops->rtx_queue || e->queued)
		return;
	if (rtxq_room(eng, qp)) {
		e->queued = 1;
		qp->rtxq[qp->rtx_tail++ & qp->rtx_mask] = dsn;
	}
	qp_wake(eng, qp);
}

/* Next segment to send: a queued retransmission, a go-back resend, or new data. */
static int pick_dsn(struct engine *eng, struct qp *qp, uint32_t *dsn, bool *retx)
{
	while (qp->rtx_head != qp->rtx_tail) {
		uint32_t d = qp->rtxq[qp->rtx_head & qp->rtx_mask];
		struct dsn_entry *e = dsn_ent(qp, d);

		if (seq_lt(d, qp->snd_una) || e->state != DSN_LOST) {
			if (!seq_lt(d, qp->snd_una))
				e->queued = 0;
			qp->rtx_head++;
			continue;
		}
		*dsn = d;
		*retx = true;
		return 0;
	}
	if (qp->gbn_active) {
		if (qp->gbn_next != qp->snd_nxt) {
			*dsn = qp->gbn_next;
			*retx = true;
			return 0;
		}
		qp->gbn_active = false;
	}
	if (qp->snd_nxt == qp->dsn_alloc)
		return -ENODATA;
	if ((uint32_t)seq_diff(qp->snd_nxt, qp->snd_una) >= eng->dsn_window ||
	    SEQRING_RESERVE(qp->dsn, qp->dsn_mask, qp->snd_una, qp->snd_nxt - qp->snd_una + 1,
			    eng->dsn_window))
		return -ENOBUFS;
	{
		struct tx_msg *m = qp_msg(qp, qp->msn_seg);

		if (mroc_op_is_request(m->op) && !m->started && qp->rd_out >= MROC_MAX_RD)
			return -ENOBUFS;
	}
	*dsn = qp->snd_nxt;
	*retx = false;
	return 0;
}

/*
 * The oldest PSN whose scoreboard slot must survive the next packet: the
 * floor, or what the path's last RTO declared lost while an ACK may still
 * take it back (qp_ack.c ack_unlose), unless that would stretch the
 * scoreboard past the SACK's width: then the RTO's range is given up.
 */
static uint32_t path_sb_low(struct path *p)
{
	if (p->rto_range && seq_diff(p->next_psn, p->rto_lo) >= MROC_SACK_BITS)
		p->rto_range = p->unlose = false;
	return p->rto_range ? p->rto_lo : p->floor;
}

/*
 * The next segment of a message is most likely the next packet this QP
 * sends: its bytes in the client's region are asked for now, so they
 * arrive while this packet is framed, sealed and checksummed.  The
 * hardware prefetcher did not hide them: the sending mrocd spent 135-150
 * ns a 1 KiB copy in profile-pkt (load 11-21), 30-40 ns with this (issue
 * #22).  A hint only: it never faults, also past a region's end, so four
 * lines a turn (up to three past the segment, which are the next one's):
 * a line a turn, the loop was ~80 instructions a 1 KiB data packet, 3 % of
 * the sender's (pkt-cost).
 */
static inline void prefetch_next_segment(const uint8_t *p, uint32_t len)
{
	for (uint32_t o = 0; o < len; o += 4 * 64) {
		__builtin_prefetch(p + o, 0, 3);
		__builtin_prefetch(p + o + 64, 0, 3);
		__builtin_prefetch(p + o + 128, 0, 3);
		__builtin_prefetch(p + o + 192, 0, 3);
	}
}

static uint8_t *segment_source(struct engine *eng, struct qp *qp, const struct tx_msg *m,
			       uint32_t off, uint32_t plen)
{
	int err;

	if (!plen)
		return (uint8_t *)"";
	if (mroc_op_is_atomic(m->op) || m->op == MROC_OP_ATOMIC_RESP)
		return (uint8_t *)m->atomic;
	if (m->op == MROC_OP_READ_RESP)
		return mr_check_rkey(eng, qp->pd, m->src_key, ENGINE_ACCESS_REMOTE_READ,
				     m->src_addr + off, plen, &err);
	if (m->src_addr > UINT64_MAX - off)
		return NULL;
	return mr_check_lkey(eng, qp->pd, m->src_key, 0, m->src_addr + off, plen);
}

/* Newest segment of p in flight under its own DSN transmission. */
static bool newest_inflight(const struct qp *qp, const struct path *p, uint32_t *dsn)
{
	for (uint32_t q = p->next_psn; q != p->floor; q--) {
		const struct sb_entry *s = &p->sb[(q - 1) & p->sb_mask];

		if (s->state == SB_INFLIGHT && !s->copy && !seq_lt(s->dsn, qp->snd_una) &&
		    seq_lt(s->dsn, qp->snd_nxt) &&
		    qp->dsn[s->dsn & qp->dsn_mask].state == DSN_INFLIGHT) {
			*dsn = s->dsn;
			return true;
		}
	}
	return false;
}

/*
 * What a timed-out path probes with: a copy of a segment that is outstanding
 * anyway (a queued retransmission, one in flight on a live path, or the
 * oldest), so nothing ever waits on a path that may be dead.
 */
static bool probe_copy(const struct qp *qp, const struct path *self, uint32_t *dsn)
{
	if (qp->rtx_head != qp->rtx_tail) {
		*dsn = qp->rtxq[qp->rtx_head & qp->rtx_mask];
		if (!seq_lt(*dsn, qp->snd_una) && seq_lt(*dsn, qp->snd_nxt))
			return true;
	}
	for (unsigned i = 0; i < qp->npaths; i++)
		if (&qp->paths[i] != self && qp->paths[i].state == PATH_ACTIVE &&
		    newest_inflight(qp, &qp->paths[i], dsn))
			return true;
	if (qp->snd_una != qp->snd_nxt) {
		*dsn = qp->snd_una;
		return true;
	}
	return false;
}

/*
 * Choose the segment, and whether this transmission is a copy (a probe whose
 * loss says nothing about its DSN, which is outstanding anyway).  A live
 * path's tail-loss probe carries new data when there is some, else a copy
 * of its newest segment; a timed-out path only ever carries copies.
 */
static int pick_segment(struct engine *eng, struct qp *qp, struct path **probe, uint32_t *dsn,
			bool *retx, bool *copy, struct path **spent)
{
	struct path *pp = NULL;

	*copy = false;
	*retx = false;
	*spent = NULL;
	/* The owed probes by path id, lowest first (qp->probes_owed: no path read for none). */
	for (unsigned owed = qp->probes_owed; owed && !pp; owed &= owed - 1) {
		struct path *x = &qp->paths[__builtin_ctz(owed)];

		/*
		 * A probe may exceed the window by a packet, never the scoreboard:
		 * PSN floor + 256 would take the slot of the oldest packet in
		 * flight, whose bytes then never leave the window.  With 256 in
		 * flight the path's RTO is armed and speaks for it.
		 */
		if (path_sb_full(x))
			path_probe_owed(qp, x, false);
		else
			pp = x;
	}
	if (pp && pp->state == PATH_TIMEDOUT) {
		if (probe_copy(qp, pp, dsn)) {
			path_probe_owed(qp, pp, false);
			*spent = pp;
			*probe = pp;
			*copy = true;
			return 0;
		}
		pp = NULL;	/* nothing outstanding: probe when there is */
	}
	if (pp) {
		path_probe_owed(qp, pp, false);
		*spent = pp;
	}
	*probe = NULL;
	if (pick_dsn(eng, qp, dsn, retx)) {
		/* Nothing new nor lost: the copies a lone small message still owes (dup_max). */
		while (!pp && qp->dup_next != qp->dup_end) {
			uint32_t d = qp->dup_next++;

			if (!seq_lt(d, qp->snd_una) && seq_lt(d, qp->snd_nxt) &&
			    dsn_ent(qp, d)->state == DSN_INFLIGHT) {
				*dsn = d;
				*copy = true;
				return 0;
			}
		}
		if (!pp || !newest_inflight(qp, pp, dsn))
			return -ENODATA;
		*copy = true;
		*probe = pp;
		return 0;
	}
	/* A retransmission goes first on the best path; its ACK serves as well. */
	if (pp && !*retx && *dsn == qp->snd_nxt)
		*probe = pp;
	return 0;
}

static int fail_wr(struct engine *eng, struct qp *qp, struct tx_msg *m, uint8_t status,
		   uint64_t now)
{
	m->status = status;
	m->state = TXM_DONE;
	qp_set_error(eng, qp, status, now);
	return 0;
}

/* Build one data packet if window, pacing and work allow.  Returns 1 or 0. */
int qp_tx_data(struct engine *eng, struct qp *qp, uint64_t now, struct engine_txbuf *b)
{
	struct mroc_data_hdr d = { 0 };
	struct dsn_entry *e;
	struct tx_msg *m;
	struct path *p, *probe, *spent;
	uint32_t dsn, seg, off, plen, bytes, lo;
	uint8_t flags = 0, *src;
	bool retx, copy, dup, route_probe, look;
	uint16_t sport;
	size_t n;

	/*
	 * Only pacing, not a full window, makes the pacing time a deadline.  A
	 * run once started goes out whole (tx_pick_path), its packets charged
	 * to the pacer as they go, so the rate holds over the runs: paced a
	 * packet at a time, 256 QPs' runs reached the receiver a packet per
	 * hint gap, each after its delayed ACK had fired (issue #22).
	 */
	qp->pace_blocked = qp->pace_next > now && !qp->run_left;
	if (qp->pace_blocked) {
		eng->st.c[EC_TX_PACED]++;
		return 0;
	}
	if (!peer_room(eng, qp)) {
		if (qp->run_left)
			eng->st.c[EC_TX_RUN_CUT]++;	/* past even a run's slack (peer_room) */
		return 0;
	}
	if (pick_segment(eng, qp, &probe, &dsn, &retx, &copy, &spent))
		return 0;
	dup = copy && !probe;	/* a lone small message's copy: not a probe, not a resend */
	e = dsn_ent(qp, dsn);
	m = qp_msg(qp, dsn != qp->snd_nxt ? e->msn : qp->msn_seg);
	seg = dsn - m->first_dsn;
	off = seg * m->seg_len;
	plen = m->op == MROC_OP_READ_REQ ? 0 : m->len - off;
	if (plen > m->seg_len)
		plen = m->seg_len;
	bytes = MROC_DATA_OVERHEAD + plen + ENGINE_L2L4_OVERHEAD;
	if (b->cap < MROC_DATA_OVERHEAD + plen)
		goto unspend;
	qp->run_ok = !retx && !copy && !m->split && sparse_qp(eng, qp, m);
	if (probe)
		p = probe;	/* a probe may exceed the window by one packet */
	else if (retx && e->tx_count >= ALONE_AFTER_TRIES && qp->mode == MROC_MODE_METAROCE)
		p = qp_drained(qp) ? idle_path(eng, qp, bytes) : NULL;
	else if (!retx && !dup && m->nseg == 1 && qp->dsn_alloc - dsn <= HOME_BURST_SEGS &&
		 eng->cfg.home_mod &&
		 qp->mode == MROC_MODE_METAROCE && (p = pick_path_home(eng, qp, bytes)))
		;	/* a lone packet (or a short burst): this thread's own ports */
	else if (dup && !m->alone && (p = idle_path(eng, qp, bytes)))
		;	/* a tail's resend's copy (hedge_tail): another path */
	else if (m->alone && !retx)
		/*
		 * The port's backlog for parts only, while this host's RTTs
		 * were not held up lately: a copy is there for a held-up path,
		 * and beside other traffic the paths' RTTs are the fabric's
		 * queues (32 ranks beside a permutation, 512 B / 4 KiB, seed
		 * 1: 22.95 / 27.67 us without, 24.10 / 28.58 with copies and
		 * held-up RTTs counting it, 23.29 / 27.87 parts only).
		 */
		p = pick_path_alone(eng, qp, bytes, dup, dsn, m,
				    m->split && !dup && !held_up(eng, now) ? now : 0);
	else
		p = qp->mops->pick_path(eng, qp, bytes);
	/*
	 * A retransmission that took a live path's tail-loss probe turn goes on
	 * the best path; with no window anywhere, on the probing path as the
	 * probe (issue #23: the probe was spent and nothing sent, so the path
	 * waited for its RTO).
	 */
	if (!p && spent)
		p = spent;
	/*
	 * The retransmission went on another path: the probing path sent
	 * nothing, so its probe is still owed (the next turn, or a copy of its
	 * newest once nothing is queued).  Spent, it was one of the path's
	 * probes gone before its RTO: in about half the RTOs of mroc-sim run
	 * --like-fabric-held at 10 % loss a probe turn had gone to a sibling
	 * (s19-cc19 section 1), where stalls leave the probe owed and losses
	 * queued at once (seed 2: 4 % of ~5,000 probe turns).  Re-owed, 4
	 * paths, seeds 1-10: capacity mean 0.974 -> 0.985, RTOs 18 -> 14.  On
	 * the probing path itself it is the probe: it asks for an ACK as
	 * every resend does.
	 */
	if (spent && p && p != spent)
		path_probe_owed(qp, spent, true);
	if (!p && dup)
		qp->dup_next = qp->dup_end;	/* no path of its own: copies are late from here on */
	if (!p) {
		eng->st.c[EC_TX_PATH_BLOCKED]++;
		goto unspend;
	}
	lo = path_sb_low(p);
	if (SEQRING_RESERVE(p->sb, p->sb_mask, lo, p->next_psn - lo + 1, MROC_SACK_BITS))
		goto unspend;
	src = segment_source(eng, qp, m, off, plen);
	if (!src)
		return fail_wr(eng, qp, m, ENGINE_WC_LOC_PROT_ERR, now);
	/* Like IB's retry count: resends of the oldest segment without progress. */
	if (!copy && dsn == qp->snd_una && e->tx_count && ++qp->una_retries > eng->cfg.max_retx)
		return fail_wr(eng, qp, m, ENGINE_WC_RETRY_EXC_ERR, now);

	/* Commit: sequence numbers, scoreboards, window. */
	if (m->split)
		flags |= MROC_F_SPLIT;
	if (dup) {
		/*
		 * No ACK_REQ: the segment's own ACK answers for it; asked for at
		 * once, the copy's ACK took the receiver's NIC just as it sent the
		 * collective's next step (64 B idle: 17.18 us against 17.12).
		 */
		eng->st.c[EC_TX_DUP]++;
	} else if (copy || retx) {
		flags |= MROC_F_RETX | MROC_F_ACK_REQ;
		p->st_retx++;
		eng->st.c[EC_TX_RETX]++;
	}
	if (retx) {
		if (qp->gbn_active && dsn == qp->gbn_next)
			qp->gbn_next++;
		else
			qp->rtx_head++;
		e->queued = 0;
	} else if (!copy) {
		/*
		 * Progress is timed from the first packet in flight, not from the
		 * post: at 4,000 QPs a QP may wait seconds for its turn in its
		 * peer's window, and then failed as dead at its first timer.
		 */
		if (qp->snd_una == qp->snd_nxt)
			qp->last_progress = now;
		*e = (struct dsn_entry){ .msn = m->msn };
		if (!m->started && mroc_op_is_request(m->op)) {
			qp->rd_out++;
			/* Not only the first: the timer stops while every answer is in. */
			if (!qp->ans_deadline)
				answer_arm(eng, qp, now);
		}
		m->started = 1;
		if (++qp->snd_nxt == m->first_dsn + m->nseg)
			qp->msn_seg++;
	}
	if (!copy) {
		e->state = DSN_INFLIGHT;
		e->tx_count++;
	}

	/*
	 * Sent with nothing outstanding on the path (no RoCEv2 go-back left
	 * older packets in the network, no RTO waits for an ACK to judge it):
	 * no later ACK can echo an older send (path_on_echo).
	 */
	if (p->floor == p->next_psn && p->psn_hw == p->next_psn && !p->rto_fired_at)
		p->echo_lo = now;
	d.psn = p->next_psn++;
	if (seq_lt(p->psn_hw, p->next_psn))
		p->psn_hw = p->next_psn;
	d.psn_floor = p->floor;
	d.dsn = dsn;
	d.msn = m->msn;
	d.ssn = m->ssn;
	d.offset = off;
	d.msg_len = m->len;
	d.key = m->key;
	d.imm = m->imm;
	d.raddr = m->raddr;
	p->sb[d.psn & p->sb_mask] = (struct sb_entry){
		.sent = now, .dsn = dsn, .bytes = (uint16_t)bytes, .state = SB_INFLIGHT,
		.copy = copy, .dup = dup, .part = m->split && !m->copied && m->len <= eng->cfg.mtu,
	};
	qp->dups_out |= dup;
	p->inflight += bytes;
	/* Not a retry after an RNR NAK: its copy would only be refused as well. */
	if (retx && !m->rnr_tries && hedge_tail(eng, qp)) {
		qp->dup_next = dsn;
		qp->dup_end = dsn + 1;
	}
	peer_sent(eng, qp, now);
	/* A split message's segments go one to a path: each is its path's last. */
	if (!dup && (off + plen == m->len || m->split || !path_can_send(eng, p, eng->seg_bytes) ||
		     bulk_tail(eng, qp, p, m)))
		flags |= MROC_F_ACK_REQ;
	/*
	 * A timeout move wants to go back and its old port has shown no life
	 * yet (path_trial.c timeout_move_back): this packet goes by that port,
	 * answered at once, and its fate decides.  Not a small message's copy:
	 * those leave flight unanswered (drop_dups).
	 */
	route_probe = p->route_probe == ROUTE_PROBE_WANT && !dup;
	if (route_probe) {
		flags |= MROC_F_ACK_REQ;
		p->route_probe = ROUTE_PROBE_SENT;
		p->probe_psn = d.psn;
	}
	/* A look at the port a "slow" or "explore" move would take (path_trial.c path_look_sample). */
	look = p->look == LOOK_WANT && !dup && !route_probe;
	if (look) {
		flags |= MROC_F_ACK_REQ;
		p->look = LOOK_SENT;
		p->look_psn = d.psn;
		p->look_ts = (uint32_t)now;
	}
	sport = route_probe ? p->prev_sport : look ? p->look_sport : p->sport;
	/*
	 * A stuck QP's probe (a timed-out path carries data only while no path
	 * is live: tx_pick_path), or one of its scouts by a port of its own
	 * (path_repath.c path_scout).
	 */
	if (p->state == PATH_TIMEDOUT && p->scouts) {
		if (route_probe || look) {
			path_probe_owed(qp, p, true);	/* the round's probes go after it */
		} else {
			sport = path_scout(eng, qp, p, now);
			p->sb[d.psn & p->sb_mask].scout = sport != p->sport;
			flags |= MROC_F_ACK_REQ;
		}
	}
	p->sb[d.psn & p->sb_mask].ack_req = !!(flags & MROC_F_ACK_REQ);
	if (!p->rto_deadline)
		path_rearm_send(eng, qp, p, now);

	n = qp_put_hdr(qp, b->data, m->op, flags, p->id, now);
	n += wire_put_data(b->data + n, &d);
	if (off + plen < m->len)
		prefetch_next_segment(src + plen, m->len - off - plen < plen ?
						  m->len - off - plen : plen);
	memcpy(b->data + n, src, plen);
	b->len = (uint32_t)(n + plen);
	b->peer = qp->peer;
	b->sport = sport;
	b->path_id = p->id;
	b->ect = true;

	p->st_sent++;
	tx_count_window(eng, qp, now);
	qp->tx_bytes += plen;
	eng->st.c[EC_TX_DATA]++;
	cc_pace(eng, qp, now, bytes);
	return 1;
unspend:
	if (spent)
		path_probe_owed(qp, spent, true);	/* nothing went out: the probe is still owed */
	return 0;
}
