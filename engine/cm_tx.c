// SPDX-License-Identifier: MIT
/*
 * Connection management, sending: the CM packet due on a QP (REQ, REP,
 * RTU, DISCONNECT and their answers), by which port and path, its copies
 * within a try and the tries' backoff (cm_timer), and the listener's
 * replies to packets of no QP (cm_tx_ctl).
 */
#include <string.h>

#include "internal.h"

/*
 * The route of the QP's next CM packet op (REQ, RTU, a REP again, a
 * DISCONNECT): its source port and the path it goes as (*path, in its
 * header and to the driver).  The first send of a message by path 0 (its
 * port; the requester's paths have none before they connect: sport_min),
 * and each copy and try after it by another path: the next one's port, or
 * before the paths have ports one drawn from the QPN and the count (no
 * draw from the engine's generator: the paths' first ports stay what they
 * were).  In an ECMP fabric the port is the route (and with ports per
 * plane, sport mod N, the host's port); a driver that places paths on its
 * ports by their id (engine_config.path_ports: the simulator's planes)
 * takes the path.  All by one port, a QP whose route crossed a dead plane
 * never connected however many copies and tries it sent (mroc-sim run
 * --plane-loss P:1, 4 planes, seeds 1-4: 7 of 16 runs); by one path id,
 * the same with --route path and plane 0 dead (every seed), and in the
 * cluster a collective's next QPs behind a dead leaf-spine cable of plane
 * 0.  The server's answers take the asking packet's port and path once its
 * first REP went (cm_half.c put_rep).
 *
 * The next message (the RTU after a REP, a REQ again after the RTU's tries)
 * starts by the last one's path, the one most likely answered, and walks on
 * from there.  Each started by path 0 once: a REQ walked its tries to a
 * path through, the RTU's four sends a try then went by paths 0-3 again,
 * and with hashed routes a QP whose first four paths all crossed a dead
 * plane of two never connected (mroc-sim run --planes 2 --paths 8 --route
 * hash --plane-loss 0:1 --bytes 1M --mix 1,0,0,0 --seed S: S = 12, 39, 59
 * of 1-60).
 */
static uint16_t cm_route(const struct engine *eng, struct qp *qp, uint8_t op, uint8_t *path)
{
	uint32_t lo = eng->cfg.sport_min, span = (uint32_t)eng->cfg.sport_max - lo + 1, k;
	uint16_t s;

	if (qp->cm_sport_op != op) {
		qp->cm_sport_op = op;
		if (qp->cm_sends)
			qp->cm_sends--;
	}
	k = qp->cm_sends++;
	*path = (uint8_t)(qp->npaths ? k % qp->npaths : 0);
	s = qp->npaths ? qp->paths[*path].sport : 0;
	if (s)
		return s;
	if (!k)
		return (uint16_t)lo;
	return (uint16_t)(lo + (qp->qpn + k * 2654435761u) % span);
}

static uint8_t cm_op(uint8_t pending)
{
	switch (pending) {
	case CM_SEND_REQ: return MROC_OP_CONNECT_REQ;
	case CM_SEND_REP: return MROC_OP_CONNECT_REP;
	case CM_SEND_REJ: return MROC_OP_CONNECT_REJ;
	case CM_SEND_DISC: return MROC_OP_DISCONNECT;
	default: return MROC_OP_DISCONNECT_ACK;
	}
}

/*
 * How long try n (from 0) of a request waits for its answer: rto_init,
 * doubling, but never more than a third of dead_peer.  A server counts as
 * connected once it sent its REP and declares the client dead dead_peer
 * after it last heard from it (a repeated REQ counts): with PFC timers
 * (rto_init 1.07 s, dead_peer 9.66 s) tries at 0, 1.07, 3.2, 7.5 and 16.1 s
 * let the server give up first when three REPs were lost (issue #23,
 * finding 1).
 */
uint64_t cm_backoff(const struct engine *eng, uint32_t n)
{
	uint64_t wait = eng->cfg.rto_init_ns << (n < 6 ? n : 6);
	uint64_t cap = max_u64(eng->cfg.rto_init_ns, eng->cfg.dead_peer_ns / 3);

	return min_u64(wait, cap);
}

/*
 * A try's REQ or RTU just left at now; the try ends at end.  If nothing has
 * come back a quarter of the way there, the same message goes again, and
 * again at half and at three quarters (cm_timer, copy_sent): a try then
 * fails only when all four exchanges do (REQ and REP, or RTU and its
 * answer; the server answers each copy, a repeated REQ with its REP again,
 * another RTU, a new keepalive number, with an answer of its own).  Each was one packet each
 * way per try, and with cm_retries tries at 20 % loss (REQ, REP, then the
 * RTU through once) 9 in 40 runs of a 16-host alltoall in mroc-sim failed
 * to connect (about one connection in 800), at 30 % 35 in 40.  Copies, not
 * more tries: the tries and their waits stay as they were, so a server
 * that is gone fails the QP when it did, and only the requester sends more
 * (four packets a try at most, and only while nothing comes back).  One
 * copy (at half the wait) still failed 10 in 40 of those runs at 40 % loss,
 * two (at a third and two thirds) 9 in 40 at 50 %, where the data path
 * completed every run that connected; three fail none at 50 % (seeds
 * 1-60), and at 60 % 26 in 40 against all 40.  A quarter of the wait: past
 * any round trip the wait was sized for (rto_init), with as long again for
 * each copy's answer.
 */
static void try_arm(struct qp *qp, uint64_t now, uint64_t end)
{
	qp->cm_try_end = end;
	qp->cm_copy = CM_COPIES;
	qp->cm_deadline = now + (end - now + CM_COPIES) / (CM_COPIES + 1);
}

/*
 * The REQ or RTU leaving now is a copy of its try's: the next deadline is
 * the next copy's, or the try's end (a moment from now if the timers came
 * that late: cm_timer decides what follows, never another send on a
 * deadline passed).  Returns false when it is the first of a try.
 */
static bool copy_sent(struct engine *eng, struct qp *qp, uint64_t now)
{
	if (!qp->cm_copy)
		return false;
	qp->cm_copy--;
	qp->cm_deadline = qp->cm_try_end > now ?
			  now + (qp->cm_try_end - now + qp->cm_copy) / (qp->cm_copy + 1u) : now + 1;
	eng->st.c[EC_CM_COPY]++;
	return true;
}

/*
 * A packet for this QP came from its peer while it waits for the answer to
 * its CONNECT_REQ: the peer counts the connection as made, so its REP was
 * lost.  Ask again now instead of at the backed-off retry (a quarter of
 * rto_min after the last request at the soonest, so a stream of the peer's
 * packets does not become a stream of requests).
 */
void cm_peer_early(struct engine *eng, struct qp *qp, uint64_t now)
{
	if (qp->cm_pending != CM_SEND_REQ || !qp->cm_tries ||
	    now < qp->cm_sent + eng->cfg.rto_min_ns / 4 || qp->cm_tries > eng->cfg.cm_retries)
		return;
	eng->st.c[EC_CM_EARLY_RETRY]++;
	qp->cm_deadline = now;
	qp_wake_ctl(eng, qp);
}

uint8_t cm_split(const struct engine *eng, uint8_t mode)
{
	return mode == MROC_MODE_METAROCE ? (uint8_t)(eng->cfg.split_unit / MROC_SPLIT_ALIGN) : 0;
}

/*
 * How many of a QP's npaths paths leave by ports of their own, as the
 * driver says (sport_classes: mrocd's interfaces, one of them included;
 * path_ports: the simulator's planes); a driver that says nothing gets
 * npaths, the rule without ports.  The paths start on distinct ports; a
 * repath may later put two on one, and parts then keep off shared ports
 * as long as they can (qp_tx_path.c pick_path_alone).
 */
uint32_t cm_split_ports(const struct engine *eng, uint32_t npaths)
{
	uint32_t ports = eng->cfg.sport_classes > 1 ? eng->cfg.sport_classes :
			 eng->cfg.path_ports ? eng->cfg.path_ports : eng->cfg.sport_classes;

	return ports && ports < npaths ? ports : npaths;
}

uint8_t cm_split_ext(const struct engine *eng, uint8_t mode, uint32_t npaths)
{
	return cm_split(eng, mode) ? mroc_cm_ports_put(cm_split_ports(eng, npaths)) : 0;
}

/*
 * Once a try of a connection went unanswered (its four sends), each later
 * REQ and RTU of it, a try's first and its copies, goes twice
 * at once, the second by the next port (cm_route walks them): where routes
 * hash per direction and one plane of two is dead, a send and its answer
 * both get through one time in four, and 8 senders of one path into a host
 * over such planes left 3 of 100 seeds unconnected after 1 s (mroc-sim
 * incast --planes 2 --paths 1 --route hash --plane-loss 1:1 --senders 8,
 * seeds 34, 40, 91: 28 sends by then, each answered with chance 1/4).  Two
 * ports a send: 7 in 16.  The tries and their waits stay as they were; a
 * server that is gone gets twice as many small packets, and the first try
 * (all but a few connections) as many as before.  Returns whether this
 * send was the twin (nothing more to account).
 */
static bool twin_sent(struct engine *eng, struct qp *qp)
{
	if (qp->cm_twin != qp->cm_pending)
		return false;
	qp->cm_twin = 0;
	eng->st.c[EC_CM_TWIN]++;
	return true;
}

static void twin_owed(struct engine *eng, struct qp *qp)
{
	if (qp->cm_twins) {
		qp->cm_twin = qp->cm_pending;
		qp_wake_ctl(eng, qp);
	}
}

/* The QP's pending CM message, due now, into b.  Returns 1 or 0. */
static int cm_build(struct engine *eng, struct qp *qp, uint64_t now, struct engine_txbuf *b)
{
	struct mroc_cm_hdr c = {
		.service_id = qp->service_id,
		.isn_dsn = qp->isn_dsn,
		.isn_psn = qp->isn_psn,
		.mtu = (uint16_t)eng->cfg.mtu,
		.npaths = qp->npaths,
		.mode = qp->mode,
		.reason = qp->cm_reason,
		.sec = eng->cfg.sec_mode,
	};
	uint8_t op = cm_op(qp->cm_pending), path;
	bool ext = eng->cfg.cm_ext_len &&
		   (op == MROC_OP_CONNECT_REQ || op == MROC_OP_CONNECT_REP);
	size_t n;

	/* engine_config_check made sure this fits every buffer */
	if (b->cap < MROC_HDR_LEN + MROC_CM_HDR_LEN + MROC_CM_KEY_LEN + 2u + eng->cfg.cm_ext_len)
		return 0;
	c.ext_flags = ext ? MROC_CM_F_EXT : 0;
	if (op == MROC_OP_CONNECT_REP && qp->state == ENGINE_QPS_CONNECTED)
		c.ext_flags |= MROC_CM_F_BOUND;	/* a REQ sent again: its RTU's answer was lost */
	if (op == MROC_OP_CONNECT_REQ || op == MROC_OP_CONNECT_REP) {
		c.split = cm_split(eng, qp->mode);
		c.ext_flags |= cm_split_ext(eng, qp->mode, qp->npaths);
	}
	b->sport = cm_route(eng, qp, op, &path);
	/*
	 * A REP again (a REQ sent again: the answer to its RTU was lost) by
	 * the port and path the REQ came by, as cm_half.c put_rep does before
	 * the proof: each of the requester's tries then draws the REP another
	 * route.  By our own paths' ports, with routes hashed per direction
	 * all of them could cross a dead plane back: 1 QP in 8 of 3 paths
	 * over 2 planes, one dead, never connected (mroc-sim incast --planes
	 * 2 --paths 3 --route hash --plane-loss 1:1 --senders 8 --seed
	 * 1019916938, sender 3).
	 */
	if (op == MROC_OP_CONNECT_REP && qp->state == ENGINE_QPS_CONNECTED && qp->cm_ask_sport) {
		b->sport = qp->cm_ask_sport;
		path = qp->cm_ask_path;
	}
	n = qp_put_hdr(qp, b->data, op, 0, path, now);
	if (op == MROC_OP_CONNECT_REQ)
		wire_put_hdr(b->data, &(struct mroc_hdr){ .version = MROC_WIRE_VERSION, .opcode = op,
				     .path_id = path, .src_qpn = qp->qpn, .ts = (uint32_t)now });
	n += wire_put_cm(b->data + n, &c);
	/* "token": our receive key, for the peer to tag its packets with */
	if (eng->sec_tag_len && (op == MROC_OP_CONNECT_REQ || op == MROC_OP_CONNECT_REP)) {
		memcpy(c.key, qp->rx_key, sizeof(c.key));
		n += wire_put_cm_key(b->data + n, &c);
	}
	if (ext)
		n += wire_put_cm_ext(b->data + n, eng->cfg.cm_ext, eng->cfg.cm_ext_len);
	b->len = (uint32_t)n;
	b->peer = qp->peer;
	b->path_id = path;
	b->ect = false;
	eng->st.c[EC_TX_CM]++;
	if (qp->cm_pending == CM_SEND_REQ) {
		cm_log_send(qp, b->sport, path, now);
		if (twin_sent(eng, qp))
			return 1;
		qp->cm_sent = now;
		if (!copy_sent(eng, qp, now)) {
			qp->cm_tries++;
			try_arm(qp, now, now + cm_backoff(eng, qp->cm_tries - 1));
		}
		twin_owed(eng, qp);
	} else if (qp->cm_pending == CM_SEND_DISC) {
		qp->cm_copy = 0;	/* none for a DISCONNECT: the peer's dead-peer timer ends it */
		qp->cm_tries++;
		qp->cm_sent = now;
		qp->cm_deadline = now + cm_backoff(eng, qp->cm_tries - 1);
	} else {
		qp->cm_pending = CM_NONE;
		qp->cm_deadline = 0;
	}
	return 1;
}

/*
 * The requester's RTU: a KEEPALIVE asking for an answer, on path 0, tagged
 * as every packet of the QP is (under the key of the REP); tried like a
 * request, with copies (try_arm; each a new keepalive number, so the
 * server, bound at the first, answers the copies too).  The RTU of a REQ
 * sent again (cm_again) takes no try of its own: it goes within the REQ's,
 * whose end stands unless it has passed, and its copies a quarter, half
 * and three quarters of the way from it to that end.  Returns 1 or 0.
 */
static int rtu_build(struct engine *eng, struct qp *qp, uint64_t now, struct engine_txbuf *b)
{
	uint64_t wait;
	uint8_t path;

	if (b->cap < MROC_KA_PKT_LEN)
		return 0;
	b->sport = cm_route(eng, qp, MROC_OP_KEEPALIVE, &path);
	b->len = (uint32_t)qp_put_keepalive(qp, b->data, MROC_F_ACK_REQ, path, now);
	b->peer = qp->peer;
	b->path_id = path;
	b->ect = false;
	eng->st.c[EC_TX_CM]++;	/* a CM message in a keepalive's form */
	cm_log_send(qp, b->sport, path, now);
	if (twin_sent(eng, qp))
		return 1;
	if (copy_sent(eng, qp, now)) {
		twin_owed(eng, qp);
		return 1;
	}
	if (!qp->cm_again) {
		qp->cm_tries++;
		qp->cm_sent = now;
	}
	twin_owed(eng, qp);
	wait = cm_backoff(eng, qp->cm_tries - 1);
	/*
	 * The REP came after the REQ's wait had run out, before our timers ran
	 * (a host late to them: a worker off the CPU): the RTU still gets that
	 * wait, from now.  A deadline already passed would leave the RTU due,
	 * and every buffer of engine_tx would be filled with it, without end.
	 */
	try_arm(qp, now, qp->cm_again && qp->cm_try_end > now ? qp->cm_try_end : now + wait);
	return 1;
}

/*
 * Send the QP's pending CM message if it is due.  Returns 1 or 0.  Asked
 * before every packet a QP sends: the message is built only when there is
 * one (filling its header first cost 33 instructions a data packet).
 */
int cm_tx(struct engine *eng, struct qp *qp, uint64_t now, struct engine_txbuf *b)
{
	if (!cm_tx_due(qp, now))
		return 0;
	if (qp->cm_twin && qp->cm_twin != qp->cm_pending) {
		qp->cm_twin = 0;	/* another message is pending now: the twin's went */
		if (!cm_tx_due(qp, now))
			return 0;
	}
	if (qp->cm_pending == CM_SEND_RTU)
		return rtu_build(eng, qp, now, b);
	return cm_build(eng, qp, now, b);
}

/*
 * Our RTU's wait ran out and nothing of the REP's QP came back (no answer,
 * no data, no ACK): ask with the REQ again, not the RTU (#24).  The server
 * answers a REQ whatever became of ours: its half-open entry waiting (the
 * same REP: the RTU or its answer was lost), gone (a REQ flood cycled its
 * table between our REP and our RTU: a new entry, a new REP), bound to us
 * (the REP again: the answer was lost) or to another (BUSY, or a free
 * listener's REP); an RTU to an entry that is gone is dropped unanswered
 * (rx_bad_peer), and that used to fail us after cm_retries RTUs.  The REQ
 * is the one we sent (our QPN, numbers and key), so every such answer is
 * one we can take.  Each try after the first asks so, its REP's RTU
 * within the try (rtu_build): the tries and their waits are the RTU's as
 * before, so a server that went still fails us with CONNECT_ERR when it
 * did.  What the REP gave us is forgotten until the next one comes, as at
 * a BUSY.
 */
static void rtu_unanswered(struct engine *eng, struct qp *qp)
{
	conn_unlink(eng, qp);
	qp->has_tx_key = false;
	qp->peer_npaths = 0;
	qp->cm_pending = CM_SEND_REQ;
	qp->cm_again = true;
	eng->st.c[EC_CM_REQ_AGAIN]++;
}

/* A try's copy, or give up on a request nobody answers. */
void cm_timer(struct engine *eng, struct qp *qp, uint64_t now)
{
	if (!qp->cm_deadline || now < qp->cm_deadline)
		return;
	if (qp->cm_copy && (qp->cm_pending == CM_SEND_REQ || qp->cm_pending == CM_SEND_RTU)) {
		if (now < qp->cm_try_end) {
			qp_wake(eng, qp);	/* nothing came back: cm_tx sends the copy */
			return;
		}
		qp->cm_copy = 0;	/* timers this late: the try is over, copies or not */
	}
	if (qp->cm_tries <= eng->cfg.cm_retries) {
		qp->cm_twins = true;	/* a try went unanswered: two ports a send (twin_owed) */
		if (qp->cm_pending == CM_SEND_RTU)
			rtu_unanswered(eng, qp);
		qp_wake(eng, qp);
		return;
	}
	if (qp->cm_pending == CM_SEND_REQ || qp->cm_pending == CM_SEND_RTU) {
		/* RTU: no answer, the server never bound us (or went) */
		qp_connect_failed(eng, qp, ENGINE_CONN_NO_ANSWER);
	} else if (qp->cm_pending == CM_SEND_DISC && qp->state == ENGINE_QPS_CLOSING) {
		qp->state = ENGINE_QPS_IDLE;
		qp_event(eng, qp, ENGINE_WC_EV_DISCONNECTED, ENGINE_WC_RETRY_EXC_ERR);
	}
	qp->cm_pending = CM_NONE;
	qp->cm_deadline = 0;
}

/* Replies for QPs we do not have (REJ, DISCONNECT_ACK).  Returns 1 or 0. */
int cm_tx_ctl(struct engine *eng, uint64_t now, struct engine_txbuf *b)
{
	struct ctl_reply *r;
	struct mroc_cm_hdr c = { .sec = eng->cfg.sec_mode };
	size_t n;

	if (eng->ctl_head == eng->ctl_tail || b->cap < MROC_HDR_LEN + MROC_CM_HDR_LEN)
		return 0;
	r = &eng->ctl[eng->ctl_head++ % 16];
	c.reason = r->reason;
	n = wire_put_hdr(b->data, &(struct mroc_hdr){ .version = MROC_WIRE_VERSION, .opcode = r->op,
			 .dst_qpn = r->dst_qpn, .src_qpn = r->src_qpn, .ts = (uint32_t)now });
	n += wire_put_cm(b->data + n, &c);
	b->len = (uint32_t)n;
	b->peer = r->peer;
	b->sport = r->sport;
	b->path_id = r->path_id;
	b->ect = false;
	b->plain = r->plain;
	b->echo = true;
	sec_tx_seal(eng, r->has_key ? r->key : NULL, b);
	eng->st.c[EC_TX_CM]++;
	return 1;
}
