// SPDX-License-Identifier: MIT
/*
 * Send side of a QP: posting work, cutting messages into segments, choosing
 * the segment (retransmissions first) and the path (most free window), and
 * building data packets (pacing: cc_rate.c; completion: qp.c).
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

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
 * The path with the most free window that can take this packet, the free
 * window counted up to PICK_FREE_SEGS packets; ties round-robin.  The cap
 * (issue #16): a path whose window grew while it alone carried a QP's
 * traffic had the most free window for good and took every packet, so a
 * 4-packet message went out on one path of eight (88% of them in a 64-rank
 * 1 MiB ring AllReduce); with it, paths with room share the packets and a
 * nearly full one still yields.  Timed-out paths carry only probes while
 * any path is alive.  A path with nothing in flight counts as having the
 * whole cap free, whatever its window: one whose window a loss burst cut
 * below the cap lost every pick to siblings with more room while the QP was
 * held back elsewhere (the application's outstanding messages, the peer's
 * room), so it never filled its window, which grows only while it limits
 * the sender (cc_window.c), and stayed starved for good: the paths moved
 * back onto a port that came up carried 6 Mbit/s beside siblings' 100
 * (test_fabric_ports.sh, "p2 came back up, but its paths did not").
 */
#define PICK_FREE_SEGS	4

/*
 * Runs (issue #22): the path picked goes on taking the QP's next packets, up
 * to ack_every in a row, while it is active and can.  The receiver ACKs a
 * path after ack_every packets or, failing that, after ack_delay; sprayed
 * one packet per path, a QP's packets reached each path one per round of
 * the host's QPs, the delayed ACK fired for every one of them, and ACK frames
 * (each a whole frame through the kernel at both ends) grew with the QPs:
 * per data packet 0.062 at 1 QP, 0.25 at 16, 1.00 from 256 up (mroc-sim
 * engine).  A run of ack_every is ACKed at once, by one ACK; the next run
 * takes the path with the most free window, so the paths still share the
 * QP's packets.  Only a message that gives every path a whole run (at
 * least npaths x ack_every segments) runs, and only its first
 * transmissions (qp->run_ok): shorter messages and resends are sprayed,
 * as issue #16 wants (a lost packet is then found across paths, a short
 * message's packets do not wait behind each other).  A short message in
 * runs crossed one plane of several: in a 64-host AllToAll of 1 MiB each
 * host posts 63 messages of 4 packets at once, each went whole onto one
 * of 4 planes picked by chance, the planes' shares at both ends were
 * uneven, and the AllToAll took 216 us against 175 sprayed (a packet per
 * plane), 19 % behind a QP per plane (issue #23).  Sprayed, such a message
 * costs an ACK per path it used, as a run per path would; a host that
 * gave its runs to its lanes in turn made it worse (780 us: every host
 * turned the same way at once).
 *
 * And only where spraying would not let the delayed ACK gather packets
 * (sparse_qp): a QP that sent fewer than npaths x ack_every / 2 data
 * packets in its last ack_delay (one of many QPs on the host: at 256 QPs
 * each sends a packet every 25 us).  A QP that has the host to itself
 * reaches every path often enough: in a 64-host permutation of 16 MiB
 * (one QP per host, 8 paths, a packet every 0.6 us) runs saved no ACK
 * (345k packets either way), made the lossless run 1 % faster and the one
 * at 1 % loss 1.4 % slower: the goodput kept at 1 % loss fell from 0.999
 * to 0.979 median and from 0.981 to 0.943 min (seeds 31-35, issue #23).
 */
static bool sparse_qp(const struct engine *eng, const struct qp *qp, const struct tx_msg *m)
{
	return m->nseg >= (uint32_t)eng->cfg.ack_every * qp->npaths && !qp->tx_dense;
}

/* Bytes the QP has in flight on all its paths. */
static uint64_t qp_flight(const struct qp *qp)
{
	uint64_t flight = 0;

	for (unsigned i = 0; i < qp->npaths; i++)
		flight += qp->paths[i].inflight;
	return flight;
}

/*
 * A packet of a bulk transfer's last round: what the QP has left to send
 * after it is less than it has in flight (the paths' windows take the rest
 * before this one's ACK is due), and its message is long enough to be
 * ACKed by runs of ack_every on every path (a shorter one is ACKed per
 * path anyway).  Its path may carry nothing after it, so the receiver's
 * delayed ACK would hold it: asked for at once, a lost one is found by the
 * cross-path rule (qp_ack.c rack_wait) and the probe without the ACK
 * delay's allowance (20 us by default).  At the end of a 64-host
 * permutation at 1 % loss the slowest flow's lost tail packets waited
 * sRTT + 4 RTTVAR + 20 us (70-95 us against RTTs of 40-50) and its tail,
 * last new packet to done, was 76-97 us against 33 lossless (seed 131, 4
 * draws of the loss in 5; issue #23).  Not in a mode without tail-loss
 * probes (the RoCEv2 baseline: no probe, no cross-path rule, nothing that
 * waits for the ACK delay's allowance): a RoCE NIC asks for an ACK on a
 * message's last packet, not on its last round, and there the rule only
 * made the yardstick ask for more ACKs than a NIC does (mroc-sim bench,
 * RoCEv2 at 5 % loss: 11.05 -> 11.01 Gbit/s).
 */
static bool bulk_tail(const struct engine *eng, const struct qp *qp, const struct path *p,
		      const struct tx_msg *m)
{
	uint64_t left = (uint64_t)(uint32_t)(qp->dsn_alloc - qp->snd_nxt) * eng->seg_bytes;

	if (!qp->mops->tail_probe || left >= (uint64_t)qp->npaths * p->pwnd ||
	    m->nseg < (uint32_t)eng->cfg.ack_every * qp->npaths)
		return false;
	return left < qp_flight(qp);
}

/* One data packet sent at now: count it in the QP's ack_delay window. */
static void tx_count_window(struct engine *eng, struct qp *qp, uint64_t now)
{
	if (now - qp->tx_win_at >= eng->cfg.ack_delay_ns) {
		/* An idle spell of more than a window is a sparse one too. */
		qp->tx_dense = now - qp->tx_win_at < 2 * eng->cfg.ack_delay_ns &&
			       2 * qp->tx_win_pkts >= (uint32_t)eng->cfg.ack_every * qp->npaths;
		qp->tx_win_at = now;
		qp->tx_win_pkts = 0;
	}
	qp->tx_win_pkts++;
}
/*
 * The path after id, round the QP's paths: where the next pick starts
 * (qp->rr, drawn below npaths at qp_alloc and only ever set here, so the
 * picks start their walk at it as it is).  Not id + 1 modulo npaths: the
 * picks ran two integer divisions a data packet, tens of cycles of latency
 * each (issue #22).
 */
static inline uint32_t path_after(const struct qp *qp, unsigned id)
{
	return id + 1u < qp->npaths ? id + 1u : 0;
}

/* A path's free window as the picks weigh it: at most PICK_FREE_SEGS packets, idle as that. */
static uint32_t pick_free(const struct engine *eng, const struct path *p)
{
	return p->inflight ? (uint32_t)min_u64(path_free(p), PICK_FREE_SEGS * eng->seg_bytes) :
			     PICK_FREE_SEGS * eng->seg_bytes;
}

/*
 * From qp->rr on, the path with the most free window that can take bytes,
 * the first of equals; only live ones (*alive: whether there is one), or
 * any.
 */
static inline struct path *most_free(const struct engine *eng, struct qp *qp, uint32_t bytes,
				     bool live, bool *alive)
{
	struct path *best = NULL;
	uint32_t best_free = 0;

	for (unsigned k = 0, i = qp->rr; k < qp->npaths;
	     k++, i = i + 1 == qp->npaths ? 0 : i + 1) {
		struct path *p = &qp->paths[i];
		uint32_t f;

		if (live) {
			if (p->state != PATH_ACTIVE)
				continue;
			*alive = true;
		}
		if (!path_can_send(eng, p, bytes))
			continue;
		f = pick_free(eng, p);
		if (!best || f > best_free) {
			best = p;
			best_free = f;
		}
	}
	return best;
}

struct path *tx_pick_path(struct engine *eng, struct qp *qp, uint32_t bytes)
{
	struct path *best;
	bool any_alive = false;

	if (!qp->run_ok)
		qp->run_left = 0;
	if (qp->run_left && qp->run_path < qp->npaths) {
		struct path *p = &qp->paths[qp->run_path];

		if (p->state == PATH_ACTIVE && path_can_send(eng, p, bytes)) {
			qp->run_left--;
			return p;
		}
	}
	qp->run_left = 0;
	/*
	 * The live paths, in one walk that also finds whether any is; all of
	 * them only when none is (a walk of its own to find that first was ~30
	 * instructions a data packet, issue #22).
	 */
	best = most_free(eng, qp, bytes, true, &any_alive);
	if (!any_alive)
		best = most_free(eng, qp, bytes, false, &any_alive);
	if (best) {
		qp->rr = path_after(qp, best->id);
		qp->run_path = best->id;
		qp->run_left = qp->run_ok ? (uint8_t)min_u64(eng->cfg.ack_every - 1, UINT8_MAX) : 0;
	}
	return best;
}

/*
 * A message posted alone (tx_msg.alone) waits for nothing but the network:
 * each of its packets goes where it should arrive first, the path with the
 * least smoothed RTT (a path without a sample: its siblings' best, or the
 * host's) plus the time its bytes in flight take at a path's share of the
 * link; ties round-robin.  Spread by most free window, a message split in 8
 * met the deepest of 8 paths' queues beside a half-loaded permutation (a
 * 512 B AllReduce step 1.8x slower than one packet), and a lone packet took
 * whichever path came next (issue #23).  Timed-out paths carry only probes
 * while any path is alive.  A copy (dup) avoids the paths that carry its
 * segment: it is there for the case that path is held up.
 */
/* Whether p has a transmission of a DSN in [lo, lo + n) in flight. */
static bool path_carries(const struct path *p, uint32_t lo, uint32_t n)
{
	for (uint32_t q = p->floor; q != p->next_psn; q++) {
		const struct sb_entry *s = &p->sb[q & p->sb_mask];

		if (s->state == SB_INFLIGHT && s->dsn - lo < n)
			return true;
	}
	return false;
}

/* The port a path leaves by, or -1 when the driver did not say (engine_config). */
static int path_port(const struct engine *eng, const struct path *p)
{
	if (eng->cfg.sport_classes > 1)
		return p->sport % eng->cfg.sport_classes;
	return eng->cfg.path_ports ? (int)(p->id % eng->cfg.path_ports) : -1;
}

/*
 * A port's backlog: what this engine sent by it lately (ACKs included), at
 * the port's share of the link, still to leave; the parts of a split
 * message count it in their cost, so the first parts leave by the ports
 * that are free.  In a ring AllReduce a rank sends the ACKs of the step it
 * received (each by the port its part came in on), then the next step's
 * parts: a part sent by the port of an ACK just sent waited behind it (46
 * ns at 25 Gbit/s), and the rank's turn from a step received to the next
 * sent took 31 ns against a QP per plane's 26.6 (32 ranks packed, 8 KiB;
 * issue #23).  Only with split messages (split_unit) and a link rate, and
 * for ports the driver names (at most MROC_MAX_PATHS).
 */
#define PORT_FRAMING	64	/* Ethernet, IP and UDP headers and framing, about */

static int buf_port(const struct engine *eng, const struct engine_txbuf *b)
{
	if (eng->cfg.sport_classes > 1)
		return b->sport % eng->cfg.sport_classes;
	return eng->cfg.path_ports ? (int)(b->path_id % eng->cfg.path_ports) : -1;
}

static uint32_t port_count(const struct engine *eng)
{
	return eng->cfg.sport_classes > 1 ? eng->cfg.sport_classes : eng->cfg.path_ports;
}

/* A data segment's bytes on the wire beyond its payload: headers, tag, framing. */
static uint32_t seg_overhead(const struct engine *eng)
{
	return MROC_DATA_OVERHEAD + eng->sec_tag_len + PORT_FRAMING;
}

/* The ports lone_first's bytes are multiplied by (at least 1: no ports configured). */
static uint32_t ahead_ports(const struct engine *eng)
{
	uint32_t ports = port_count(eng);

	return ports > 1 ? ports : 1;
}

uint32_t qp_tx_full_pkt(const struct engine *eng)
{
	return eng->cfg.mtu + seg_overhead(eng);
}

uint32_t qp_tx_ahead_cost(const struct engine *eng, uint32_t len)
{
	return (len + eng->sec_tag_len + PORT_FRAMING) * ahead_ports(eng);
}

/*
 * Times the ports: behind data spread over them, an ACK waits for its
 * port's share at the port's share of the link; behind data all on its
 * port, for all of it.  So the product bounds its wait, NIC and port.
 */
uint32_t qp_tx_lone_left(const struct engine *eng, const struct qp *qp, uint32_t msn)
{
	const struct tx_msg *m;
	uint32_t left;
	uint64_t bytes;

	if (qp->state != ENGINE_QPS_CONNECTED || qp->msn_seg != msn || msn + 1 != qp->msn_tail ||
	    qp->rtx_head != qp->rtx_tail || qp->gbn_active)
		return 0;
	m = &qp->txm[msn & qp->txm_mask];
	if (!m->alone)
		return 0;
	left = m->first_dsn + m->nseg - qp->snd_nxt;
	bytes = (uint64_t)m->len - (uint64_t)(qp->snd_nxt - m->first_dsn) * m->seg_len +
		(uint64_t)left * seg_overhead(eng);
	bytes *= ahead_ports(eng);
	return bytes < UINT32_MAX ? (uint32_t)bytes : UINT32_MAX;
}

void qp_tx_ports_note(struct engine *eng, const struct engine_txbuf *bufs, int lo, int hi,
		      uint64_t now)
{
	uint32_t nports = port_count(eng);

	if (!eng->cfg.split_unit || !eng->cfg.link_rate_bps || nports < 2 ||
	    nports > MROC_MAX_PATHS)
		return;
	for (int i = lo; i < hi; i++) {
		int port = buf_port(eng, &bufs[i]);

		eng->port_free[port] = max_u64(eng->port_free[port], now) +
				       ((uint64_t)bufs[i].len + PORT_FRAMING) * 8 * NSEC_PER_SEC *
				       nports / eng->cfg.link_rate_bps;
	}
}

static uint64_t port_backlog(const struct engine *eng, const struct path *p, uint64_t now)
{
	int port = path_port(eng, p);

	if (port < 0 || port >= MROC_MAX_PATHS || eng->port_free[port] <= now)
		return 0;
	return eng->port_free[port] - now;
}

/* Whether a path of qp that leaves by p's port carries a DSN of [lo, lo + n). */
static bool port_carries(const struct engine *eng, const struct qp *qp, const struct path *p,
			 uint32_t lo, uint32_t n)
{
	int port = path_port(eng, p);

	if (port < 0)
		return path_carries(p, lo, n);
	for (unsigned i = 0; i < qp->npaths; i++)
		if (path_port(eng, &qp->paths[i]) == port && path_carries(&qp->paths[i], lo, n))
			return true;
	return false;
}

/*
 * Whether a part goes by path p (its port's backlog bl, port, cost) before
 * the best so far: the free ports first, then by port, then by cost
 * (pick_alone_off).
 */
static bool part_before(uint64_t bl, int port, uint64_t cost, uint64_t best_bl, int best_port,
			uint64_t best_cost)
{
	if (bl != best_bl)
		return bl < best_bl;
	return port != best_port ? port < best_port : cost < best_cost;
}

/*
 * The path of least cost that carries no DSN of [lo, lo + n) (n = 0: any),
 * nor, with by_port, shares a port with a path that does; with now (else
 * 0: a copy, or this host's RTTs were held up lately), the cost adds the
 * port's backlog.  Ordered (now, a message of one part a port, ports the
 * driver names), a part takes the ports in their order instead,
 * port 0 first, the free ones before those still sending what this host
 * sent by them (port_backlog), and on its port the path of least cost.
 * Every host then sends its parts in the same order of ports, so two
 * messages that meet at a host's ports meet there at the same time on each
 * of them, or on none.  By RTT, each host took its own order, and a part
 * met the ACK of the receiver's own last part, which the receiver's other
 * neighbour sends back by the port that part took, on whichever port the
 * two orders crossed: in the 32-rank ring AllReduce with packed ranks
 * (4 KiB, 4 parts of 32 B, a part a plane), a step in 4 of a cross-leaf
 * hop ended 20-48 ns late, a part behind such an ACK on the cable into
 * the receiver (a QP per plane's parts, in plane order on every host,
 * never waited), and the ring took 150.90 us against a QP per plane's
 * 150.79, now 150.79 (issue #23).
 * The RTTs of paths that are not held up differ by what a packet or two
 * met on the way (an ACK, a part), which says nothing of the next part's
 * way; held up, the least cost decides as before.  Other messages keep
 * the least cost: with fewer parts than ports, in port order every host
 * would put every such message on the same first ports (32 ranks beside a
 * permutation, 64 B in 2 parts: 20.06 -> 20.19 us, median of seeds 1-5);
 * with two parts a port, it cost the recursive-doubling steps more than
 * it gained (idle, 4 KiB in 8 parts: 22.00 -> 22.05 us on 2 seeds of 5;
 * the packed ring's 32 KiB: 162.16 -> 162.14).
 */
static struct path *pick_alone_off(struct engine *eng, struct qp *qp, uint32_t bytes,
				   uint32_t lo, uint32_t n, bool by_port, uint64_t now, bool ordered)
{
	uint64_t rate = eng->cfg.link_rate_bps / qp->npaths, sib = 0, best_cost = 0, best_bl = 0;
	struct path *best = NULL;
	bool any_alive = false;
	int best_port = -1;

	for (unsigned k = 0; k < qp->npaths; k++) {
		const struct path *p = &qp->paths[k];

		any_alive |= p->state == PATH_ACTIVE;
		if (p->srtt && (!sib || p->srtt < sib))
			sib = p->srtt;
	}
	if (!sib)
		sib = eng->host_srtt;
	for (unsigned k = 0, i = qp->rr; k < qp->npaths;
	     k++, i = i + 1 == qp->npaths ? 0 : i + 1) {
		struct path *p = &qp->paths[i];
		int port = ordered ? path_port(eng, p) : -1;
		uint64_t cost, bl;

		if ((any_alive && p->state != PATH_ACTIVE) || !path_can_send(eng, p, bytes) ||
		    (n && (by_port ? port_carries(eng, qp, p, lo, n) : path_carries(p, lo, n))))
			continue;
		cost = (p->srtt ? p->srtt : sib) +
		       (rate ? (uint64_t)p->inflight * 8 * NSEC_PER_SEC / rate : 0);
		bl = now ? port_backlog(eng, p, now) : 0;
		if (!best || (port < 0 ? cost + bl < best_cost + best_bl :
				 part_before(bl, port, cost, best_bl, best_port, best_cost))) {
			best = p;
			best_cost = cost;
			best_bl = bl;
			best_port = port;
		}
	}
	if (best)
		qp->rr = path_after(qp, best->id);
	return best;
}

/*
 * A copy avoids the paths that carry its segment, and goes late (NULL) if
 * every path does.  A part of a split message (first_dsn: its first; the
 * DSN itself for any other) keeps off the ports, then the paths, that carry
 * the parts of its message sent before it while another can take it: two
 * parts on one path or port queue one behind the other, and the cost above
 * (the path's RTT plus its bytes in flight at a path's share of the link)
 * let the RTTs' noise of a few tens of ns outweigh a part already waiting
 * there.  In the 32-rank ring AllReduce of 4 KiB (parts of 32 B, no
 * copies), 4 paths: 45 % of the steps put two parts on one path, and those
 * steps took 27-47 ns longer (266.28 us against 265.76 with each part on a
 * path of its own; 265.74 with a QP per plane); 8 paths on 4 planes: 36 %
 * of the steps put two parts on one plane (266.32 us against 265.77 with
 * each on a port of its own; issue #23).  Only split messages: they have
 * at most a part per path, so the look at the paths' packets in flight
 * stays short of a large message's windows.  With now (else 0), the parts
 * also count their port's backlog (port_backlog).
 */
static struct path *pick_path_alone(struct engine *eng, struct qp *qp, uint32_t bytes, bool dup,
				    uint32_t dsn, const struct tx_msg *m, uint64_t now)
{
	uint32_t first_dsn = m->split ? m->first_dsn : dsn;
	bool ordered = now && m->nseg == port_count(eng);
	struct path *p = NULL;

	if (dup)
		return pick_alone_off(eng, qp, bytes, dsn, 1, false, now, false);
	if (dsn != first_dsn) {
		p = pick_alone_off(eng, qp, bytes, first_dsn, dsn - first_dsn, true, now, ordered);
		if (!p && path_port(eng, &qp->paths[0]) >= 0)
			p = pick_alone_off(eng, qp, bytes, first_dsn, dsn - first_dsn, false, now,
					   ordered);
	}
	return p ? p : pick_alone_off(eng, qp, bytes, 0, 0, false, now, ordered);
}

/*
 * A message of one packet with at most HOME_BURST_SEGS - 1 segments queued
 * behind it (a small collective's step, a ping-pong, a few such steps posted
 * together) leaves by a path of this engine's own thread's ports
 * (cfg.home_mod/home_mask), the one with most free window; its ACK comes back
 * on the same port.  On the other ports every packet, and its ACK, crossed
 * between the driver's threads (mrocd: a hand-off ring and often a wake-up
 * of a sleeping worker), about one hand-off a packet in an 8 B ring (issue
 * #26).  NULL: no home path alive with room; the usual pick then.
 */
/*
 * A ring step that finds two slices arrived posts two sends at once; with
 * only the last one "lone", the first took the usual pick, most often a
 * path of the other thread's port (an idle one has the most free window):
 * a fifth of an 8 B ring's packets crossed (issue #26, s13-prov13).  Four
 * one-packet segments are still no stream worth every port; a message of
 * more, or one queued before a larger message, spreads as before.
 */
#define HOME_BURST_SEGS	4

static struct path *pick_path_home(struct engine *eng, struct qp *qp, uint32_t bytes)
{
	struct path *best = NULL;
	uint32_t best_free = 0;

	for (unsigned k = 0, i = qp->rr; k < qp->npaths;
	     k++, i = i + 1 == qp->npaths ? 0 : i + 1) {
		struct path *p = &qp->paths[i];
		uint32_t f;

		if (p->state != PATH_ACTIVE ||
		    !(eng->cfg.home_mask >> (p->sport % eng->cfg.home_mod) & 1) ||
		    !path_can_send(eng, p, bytes))
			continue;
		f = pick_free(eng, p);
		if (!best || f > best_free) {
			best = p;
			best_free = f;
		}
	}
	if (best)
		qp->rr = path_after(qp, best->id);
	return best;
}

/*
 * A segment sent ALONE_AFTER_TRIES - 1 times and lost each time goes alone,
 * once the QP has nothing in flight on its live paths (qp_drained; it sends
 * nothing else until then).  Random loss does that to one segment in 10,000
 * at 10% loss; a queue that holds exactly one packet does it every time to a
 * small packet sent right behind a full one (a READ request resent behind a
 * data packet: issue #23, tail-dropped until RETRY_EXC), which no window of
 * two or more packets avoids.  After 2 losses instead of 4, drop-tail queues
 * losing 17% (64 KiB, no ECN) waited for drained paths often enough to time
 * out 56 times and lose 22% of the goodput.
 */
#define ALONE_AFTER_TRIES	5

/* Packets a QP may have in flight with a resend for the resend to be its tail (hedge_tail). */
#define HEDGE_PKTS	2

/*
 * A resend that is all a QP with nothing new to send has in flight but a
 * packet is the transfer's tail: lost again, nothing sent after it can
 * show it (the cross-path rule needs a later packet acknowledged), and only
 * its path's tail-loss probe finds it, two sRTTs of a path whose queue the
 * transfer itself built.  With cfg.tail_hedge it also goes as a copy (the
 * dup_max copies' mechanism, owed once) on a path with nothing in flight:
 * a packet per such resend.  Seen: the 64-host 16 MiB permutation at 1 %
 * loss, 16 paths, seed 882: the slowest flow's last resend was dropped too
 * and sent again 110 us later, 115 us after every other packet of it was
 * in (2085.6 us against 1918.1 lossless; hedged, 1943.5).  docs/PERF.md,
 * session 25, has the fresh seeds.
 */
static bool hedge_tail(const struct engine *eng, const struct qp *qp)
{
	return eng->cfg.tail_hedge && qp->mode == MROC_MODE_METAROCE && qp->npaths >= 2 &&
	       qp->snd_nxt == qp->dsn_alloc && qp->dup_next == qp->dup_end &&
	       qp_flight(qp) <= HEDGE_PKTS * (uint64_t)eng->seg_bytes;
}

/*
 * Whether no live path of the QP has anything in flight: where the
 * ALONE_AFTER_TRIES resends wait.  A path with nothing in flight is no idle
 * link where the QP's paths share one: 9 paths on one plane, a 601-byte
 * queue (one packet of MTU 256), no propagation delay; the QP's new data on
 * the other paths kept the queue full, and a SEND's segment, resent 33
 * times on whichever path had drained, was tail-dropped each time until
 * RETRY_EXC (sweep seed 64, test_sim_sweep test_one_packet_queue_shared).
 * Timed-out paths do not count: they carry probes, and drain only at their
 * RTO.
 */
static bool qp_drained(const struct qp *qp)
{
	for (unsigned k = 0; k < qp->npaths; k++)
		if (qp->paths[k].state == PATH_ACTIVE && qp->paths[k].inflight)
			return false;
	return true;
}

static struct path *idle_path(struct engine *eng, struct qp *qp, uint32_t bytes)
{
	bool any_alive = false;

	for (unsigned k = 0; k < qp->npaths; k++) {
		struct path *p = &qp->paths[k];

		if (p->state != PATH_ACTIVE)
			continue;
		any_alive = true;
		if (!p->inflight && !path_sb_full(p))
			return p;
	}
	/* No path alive: the timed-out ones carry it as they carry everything. */
	return any_alive ? NULL : tx_pick_path(eng, qp, bytes);
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
		if (!m->started && mroc_op_is_request(m->op))
			qp->rd_out++;
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
		.dsn = dsn, .ts = (uint32_t)now, .bytes = (uint16_t)bytes, .state = SB_INFLIGHT,
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
