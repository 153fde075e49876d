// SPDX-License-Identifier: MIT
/*
 * In-band connection management: CONNECT_REQ/REP/REJ and DISCONNECT/ACK.
 * Requests are retransmitted with backoff until answered; answers are sent
 * once and repeated when a duplicate request arrives.  A listener is bound
 * only once the requester proved it got our REP (cm_half.c); the requester
 * sends that proof (its RTU: a KEEPALIVE asking for an answer) at once,
 * repeats it like a request, and counts itself connected when something of
 * the bound QP's comes back; while nothing does, it asks with the REQ again
 * (rtu_unanswered: the server may have lost the REQ's entry).  A REQ or RTU
 * that nothing answered by a quarter of its try's wait goes again within
 * the try, three times at most (try_arm).  A requester whose listener went to another
 * (CONNECT_REJ BUSY) asks again later.  Receiving here; sending (ports,
 * copies, tries, replies to packets of no QP): cm_tx.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * Connection lookup without a walk of the QP table: listeners chained by
 * service id (first come, first served), and QPs by (peer, peer QPN) so a
 * duplicate CONNECT_REQ finds the QP it already connected.  Chains are
 * intrusive (qp->listen_next, qp->conn_next); buckets >= max_qps.
 */
static uint32_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return (uint32_t)x;
}

int cm_hash_init(struct engine *eng)
{
	uint32_t n = eng->hash_mask + 1;	/* qp_table_init's */

	eng->listen_hash = calloc(n, sizeof(*eng->listen_hash));
	eng->conn_hash = calloc(n, sizeof(*eng->conn_hash));
	if (!eng->listen_hash || !eng->conn_hash)
		return -ENOMEM;
	return cm_half_init(eng);
}

void cm_hash_free(struct engine *eng)
{
	free(eng->listen_hash);
	free(eng->conn_hash);
	cm_half_free(eng);
}

static struct qp **listen_bucket(struct engine *eng, uint64_t service_id)
{
	return &eng->listen_hash[hash64(service_id) & eng->hash_mask];
}

static struct qp **conn_bucket(struct engine *eng, uint32_t peer, uint32_t peer_qpn)
{
	return &eng->conn_hash[hash64((uint64_t)peer << 32 | peer_qpn) & eng->hash_mask];
}

static void listen_link(struct engine *eng, struct qp *qp)
{
	struct qp **pp = listen_bucket(eng, qp->service_id);

	while (*pp)
		pp = &(*pp)->listen_next;
	qp->listen_next = NULL;
	*pp = qp;
	qp->in_listen = true;
}

static void listen_unlink(struct engine *eng, struct qp *qp)
{
	struct qp **pp = listen_bucket(eng, qp->service_id);

	if (!qp->in_listen)
		return;
	while (*pp && *pp != qp)
		pp = &(*pp)->listen_next;
	if (*pp)
		*pp = qp->listen_next;
	qp->in_listen = false;
}

static void conn_link(struct engine *eng, struct qp *qp)
{
	struct qp **b = conn_bucket(eng, qp->peer, qp->peer_qpn);

	qp->conn_next = *b;
	*b = qp;
	qp->in_conn = true;
}

void conn_unlink(struct engine *eng, struct qp *qp)
{
	struct qp **pp = conn_bucket(eng, qp->peer, qp->peer_qpn);

	if (!qp->in_conn)
		return;
	while (*pp && *pp != qp)
		pp = &(*pp)->conn_next;
	if (*pp)
		*pp = qp->conn_next;
	qp->in_conn = false;
}

void cm_unlink(struct engine *eng, struct qp *qp)
{
	listen_unlink(eng, qp);
	conn_unlink(eng, qp);
}

int engine_qp_connect(struct engine *eng, uint32_t qpn, uint32_t peer, uint64_t service_id,
		      uint64_t now)
{
	struct qp *qp = qp_lookup(eng, qpn);

	if (!qp)
		return -ENOENT;
	if (qp->state != ENGINE_QPS_IDLE)
		return -EISCONN;
	conn_unlink(eng, qp);
	if (qp->cm_tries || qp->peer_npaths)
		qp_new_isn(eng, qp);	/* connected or tried before: new numbers */
	qp->state = ENGINE_QPS_CONNECTING;
	qp->peer = peer;
	qp->service_id = service_id;
	qp->has_tx_key = false;
	if (eng->sec_tag_len)
		sec_new_key(eng, qp->rx_key);
	qp->cm_pending = CM_SEND_REQ;
	qp->cm_again = false;
	qp->cm_copy = 0;
	qp->cm_twin = 0;
	qp->cm_twins = false;
	memset(qp->cm_log, 0, sizeof(qp->cm_log));
	qp->cm_tries = 0;
	qp->cm_rounds = 0;
	qp->cm_deadline = 0;
	qp_wake(eng, qp);
	(void)now;
	return 0;
}

int engine_qp_listen(struct engine *eng, uint32_t qpn, uint64_t service_id)
{
	struct qp *qp = qp_lookup(eng, qpn);

	if (!qp)
		return -ENOENT;
	if (qp->state != ENGINE_QPS_IDLE)
		return -EISCONN;
	conn_unlink(eng, qp);
	if (qp->peer_npaths)
		qp_new_isn(eng, qp);	/* connected before: new numbers */
	qp->state = ENGINE_QPS_LISTEN;
	qp->service_id = service_id;
	/* Entries of an earlier LISTEN of this QP (cm_half.c) are not this one's. */
	qp->half_head = 0;
	qp->listen_gen = ++eng->listen_gen;
	listen_link(eng, qp);
	return 0;
}

int engine_qp_disconnect(struct engine *eng, uint32_t qpn, uint64_t now)
{
	struct qp *qp = qp_lookup(eng, qpn);

	if (!qp)
		return -ENOENT;
	switch (qp->state) {
	case ENGINE_QPS_CONNECTED:
		qp->state = ENGINE_QPS_CLOSING;
		qp_flush(eng, qp, ENGINE_WC_FLUSH_ERR);
		qp->cm_reason = MROC_CM_LOCAL_CLOSE;
		break;
	case ENGINE_QPS_ERROR:
		if (qp->cm_pending == CM_SEND_DISC)
			return 0;	/* already telling the peer */
		qp->cm_reason = MROC_CM_ERROR;
		break;
	case ENGINE_QPS_CONNECTING:
	case ENGINE_QPS_LISTEN:
		cm_unlink(eng, qp);	/* a requester holding a REP is in conn_hash */
		qp->state = ENGINE_QPS_IDLE;
		qp->cm_pending = CM_NONE;
		qp->cm_deadline = 0;
		qp_event(eng, qp, ENGINE_WC_EV_DISCONNECTED, ENGINE_WC_FLUSH_ERR);
		return 0;
	default:
		return -ENOTCONN;
	}
	qp->cm_pending = CM_SEND_DISC;
	qp->cm_tries = 0;
	qp->cm_deadline = 0;
	qp_wake(eng, qp);
	(void)now;
	return 0;
}

void engine_set_cm_ext_hook(struct engine *eng,
			    void (*fn)(void *ctx, uint32_t peer, const uint8_t *ext, size_t len),
			    void *ctx)
{
	eng->cm_ext_fn = fn;
	eng->cm_ext_ctx = ctx;
}

void engine_set_addr_hook(struct engine *eng,
			  bool (*fn)(void *ctx, uint32_t peer, const struct engine_rx_meta *meta,
				     const uint8_t *ext, size_t len),
			  void *ctx)
{
	eng->addr_fn = fn;
	eng->addr_ctx = ctx;
}

/*
 * An accepted REP's extension, to the driver (port addresses: who may send
 * for the peer): it is proven (docs/PROTOCOL.md 11a), as it names the random
 * QPN of our REQ (in "token" with its tag; in "aead" sealed).  A REQ's waits
 * in its half-open entry until the requester proves it got our REP
 * (cm_bind_proven).
 */
static void cm_ext_up(struct engine *eng, struct qp *qp, const struct wire_pkt *pkt)
{
	if (eng->cm_ext_fn && pkt->cm.ext)
		eng->cm_ext_fn(eng->cm_ext_ctx, qp->peer, pkt->cm.ext, pkt->cm.ext_len);
}

/*
 * The packet is from qp's peer: the driver's handle for its source says
 * so, or the driver says that source is one of the peer's addresses (one
 * it announced).
 */
bool cm_peer_ok(struct engine *eng, struct qp *qp, const struct engine_rx_meta *meta)
{
	if (qp->peer == meta->peer)
		return true;
	return eng->addr_fn && eng->addr_fn(eng->addr_ctx, qp->peer, meta, NULL, 0);
}

static bool cm_params_ok(const struct engine *eng, const struct qp *qp,
			 const struct mroc_cm_hdr *c)
{
	if (c->mode != qp->mode || c->sec != eng->cfg.sec_mode)
		return false;
	if (c->mtu < 64 || c->mtu > eng->cfg.mtu)
		return false;
	if (!c->npaths || c->npaths > MROC_MAX_PATHS)
		return false;
	return c->npaths <= qp->mops->max_paths;
}

/*
 * Queue a one-shot CM answer; src_qpn is whom it speaks for (0 = no QP).
 * Returns it (to add a tag key), or NULL when the queue is full.
 */
static struct ctl_reply *ctl_reply(struct engine *eng, const struct wire_pkt *pkt,
				   const struct engine_rx_meta *meta, uint32_t src_qpn, uint8_t op,
				   uint8_t reason)
{
	struct ctl_reply *r;

	if (meta->peer == ENGINE_PEER_NONE)
		return NULL;	/* nobody to answer */
	if (eng->ctl_tail - eng->ctl_head >= 16)
		return NULL;	/* the peer retries; no need to queue without bound */
	r = &eng->ctl[eng->ctl_tail++ % 16];
	*r = (struct ctl_reply){ .peer = meta->peer, .dst_qpn = pkt->hdr.src_qpn,
				 .src_qpn = src_qpn, .sport = meta->sport,
				 .path_id = pkt->hdr.path_id, .op = op, .reason = reason };
	return r;
}

/* Answer a REQ: tagged with the key it carried, so a "token" requester can trust it. */
static void req_reply(struct engine *eng, const struct wire_pkt *pkt,
		      const struct engine_rx_meta *meta, uint8_t reason)
{
	struct ctl_reply *r = ctl_reply(eng, pkt, meta, 0, MROC_OP_CONNECT_REJ,
					reason);

	if (!r)
		return;
	r->has_key = pkt->cm.has_key;
	memcpy(r->key, pkt->cm.key, sizeof(r->key));
	/* "aead" refusing an unsealed REQ: the requester could not open a sealed REJ. */
	r->plain = meta->sealed != ENGINE_RX_SEALED;
}

/*
 * The peer's numbers from its REQ or REP: 0, or -ENOMEM (nothing changed but
 * peer_npaths) when the receive state cannot be had.
 */
static int take_peer(struct engine *eng, struct qp *qp, const struct wire_pkt *pkt)
{
	qp->peer_npaths = pkt->cm.npaths;
	if (qp_rx_reset(eng, qp, pkt->cm.isn_psn, pkt->cm.isn_dsn))
		return -ENOMEM;
	qp->has_tx_key = pkt->cm.has_key;
	memcpy(qp->tx_key, pkt->cm.key, sizeof(qp->tx_key));
	conn_unlink(eng, qp);
	qp->peer_qpn = pkt->hdr.src_qpn;
	conn_link(eng, qp);
	qp->peer_mtu = pkt->cm.mtu;
	/* Split messages go either way only when both ends announced a unit. */
	qp->peer_split = qp->mode == MROC_MODE_METAROCE && eng->cfg.split_unit ?
			 pkt->cm.split * MROC_SPLIT_ALIGN : 0;
	/* ... and by the sender's ports only when the peer announced its own (we always do). */
	qp->peer_split_ports = qp->peer_split ? (uint8_t)mroc_cm_ports_get(pkt->cm.ext_flags) : 0;
	return 0;
}

static void up(struct engine *eng, struct qp *qp, uint64_t now)
{
	qp_start(eng, qp, now);
	qp_event(eng, qp, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS);
}

/*
 * The first listener of the service for a new REQ: one no other REQ waits
 * on (so requesters at once spread over the listeners posted for them),
 * else the one reserved longest ago (a REQ always gets an answer: a ghost
 * on every listener must not keep a real requester out; cm_half.c).  A
 * reserved listener goes to the end of its chain.
 */
static struct qp *pick_listener(struct engine *eng, uint64_t service_id, uint64_t now)
{
	struct qp *l, *first = NULL;

	for (l = *listen_bucket(eng, service_id); l; l = l->listen_next) {
		if (l->state != ENGINE_QPS_LISTEN || l->service_id != service_id)
			continue;
		if (!cm_half_waiting(eng, l, now))
			return l;
		if (!first)
			first = l;
	}
	return first;
}

/*
 * A listener of the service was bound within dead_peer: requesters that
 * came at once, more than the listeners posted, wait for the application to
 * listen again (told BUSY) instead of failing NO_LISTENER.  A direct-mapped
 * cache: a service that loses its slot to another is only told NO_LISTENER
 * again, as before.
 */
static struct cm_served *served_slot(struct engine *eng, uint64_t service_id)
{
	return &eng->served[hash64(service_id) % (sizeof(eng->served) / sizeof(eng->served[0]))];
}

static bool served_lately(struct engine *eng, uint64_t service_id, uint64_t now)
{
	const struct cm_served *s = served_slot(eng, service_id);

	return s->until && s->service_id == service_id && now < s->until;
}

static int rx_req(struct engine *eng, const struct wire_pkt *pkt,
		  const struct engine_rx_meta *meta, uint64_t now)
{
	struct qp *listener, *qp;

	if (!sec_req_ok(eng, pkt, meta)) {
		eng->st.c[EC_CM_SEC_MISMATCH]++;
		req_reply(eng, pkt, meta, MROC_CM_SECURITY);
		return -EPROTO;
	}
	/* A duplicate: our REP was lost. */
	for (qp = *conn_bucket(eng, meta->peer, pkt->hdr.src_qpn); qp; qp = qp->conn_next) {
		if (qp->state == ENGINE_QPS_CONNECTED && qp->peer == meta->peer &&
		    qp->peer_qpn == pkt->hdr.src_qpn && qp->service_id == pkt->cm.service_id) {
			/*
			 * Only the REP again: a duplicate announces nothing (#24 item 3:
			 * in "token" anyone with the QPNs re-pointed our traffic).  The
			 * requester is alive: its dead-peer timer counts from here
			 * (docs/PROTOCOL.md 11a: what an unauthenticated REQ may change).
			 */
			peer_heard(qp, now);
			qp->cm_ask_sport = meta->sport;
			qp->cm_ask_path = pkt->hdr.path_id;
			qp->cm_pending = CM_SEND_REP;
			qp->cm_deadline = 0;
			qp_wake_ctl(eng, qp);
			return 0;
		}
	}
	/* A REQ we answered and still wait to see proven: the same REP again. */
	if (cm_half_repeat(eng, pkt, meta, now))
		return 0;
	listener = pick_listener(eng, pkt->cm.service_id, now);
	if (!listener && served_lately(eng, pkt->cm.service_id, now)) {
		/* Its listeners all went to requesters just now: ask again (11.3). */
		eng->st.c[EC_CM_BUSY]++;
		req_reply(eng, pkt, meta, MROC_CM_BUSY);
		return -EBUSY;
	}
	if (!listener) {
		req_reply(eng, pkt, meta, MROC_CM_NO_LISTENER);
		return -ECONNREFUSED;
	}
	if (!cm_params_ok(eng, listener, &pkt->cm)) {
		req_reply(eng, pkt, meta, MROC_CM_BAD_PARAM);
		return -EINVAL;
	}
	/* Answered, not bound: the listener waits for the requester's proof (cm_half.c). */
	if (cm_half_req(eng, listener, pkt, meta, now)) {
		req_reply(eng, pkt, meta, MROC_CM_NO_RESOURCES);
		return -ENOMEM;
	}
	listen_unlink(eng, listener);
	listen_link(eng, listener);	/* free listeners first */
	return 0;
}

/*
 * The handshake's round trip (0: none): the QP's paths' first RTO (path.c
 * first_rto) and, up to rto_init, the host's largest RTT.  A slower one is
 * no stall worth waiting for (a new path waits rto_init at most), and a
 * proof a requester holds back, or a late one spoofed where nothing seals,
 * would hold every path's RTO near rto_max for a minute.
 */
static void take_hs_rtt(struct engine *eng, struct qp *qp, uint64_t rtt, uint64_t now)
{
	qp->hs_rtt = rtt;
	if (rtt && rtt <= eng->cfg.rto_init_ns)
		path_note_rtt_max(eng, rtt, now);
}

void cm_bind_proven(struct engine *eng, struct qp *qp, const struct wire_pkt *pkt,
		    const struct engine_rx_meta *meta, uint64_t now)
{
	struct cm_half *h = cm_half_proven(eng, qp, pkt, meta, now);
	struct wire_pkt req;

	if (!h)
		return;
	/* The REP's numbers and key, the REQ's: as if the REQ had bound it. */
	qp->peer = h->peer;
	qp->isn_psn = h->isn_psn;
	qp->isn_dsn = h->isn_dsn;
	memcpy(qp->rx_key, h->rx_key, sizeof(qp->rx_key));
	req = (struct wire_pkt){ .hdr = { .src_qpn = h->peer_qpn }, .cm = h->req };
	if (take_peer(eng, qp, &req)) {
		cm_half_refused(eng, h);	/* no memory: the requester's RTUs go unanswered */
		return;
	}
	listen_unlink(eng, qp);
	*served_slot(eng, qp->service_id) = (struct cm_served){ qp->service_id,
							       now + eng->cfg.dead_peer_ns };
	/*
	 * Our one REP to the proof of it: a round trip, if the proof is the
	 * requester's first RTU.  A copy of it leaves a quarter of the try's
	 * wait after it at the soonest (try_arm), and its proof's sample was
	 * that much too long: 2.5 ms with rto_init 10 ms, which went into the
	 * host's largest RTT and so every path's RTO floor.
	 */
	take_hs_rtt(eng, qp, h->rep_sent && !h->rep_again && now > h->rep_at &&
				     now - h->rep_at < eng->cfg.rto_init_ns / (CM_COPIES + 1) ?
			     now - h->rep_at : 0, now);
	up(eng, qp, now);
	/* Proven now: the requester's port addresses go up (#24 items 1-3). */
	if (eng->cm_ext_fn && h->ext)
		eng->cm_ext_fn(eng->cm_ext_ctx, qp->peer, h->ext, h->ext_len);
	cm_half_bound(eng, qp, h, now);
}

/* A REQ or RTU leaves now by sport and path: remembered (cm_log_rtt). */
void cm_log_send(struct qp *qp, uint16_t sport, uint8_t path, uint64_t now)
{
	qp->cm_log[qp->cm_log_next] = (struct cm_send){ now, sport, path, qp->cm_pending };
	qp->cm_log_next = (uint8_t)((qp->cm_log_next + 1) % CM_LOG);
}

/*
 * An answer that came by the port and path of the send that asked (the
 * answer to an RTU, "sent from the request's source port"; a bound QP's
 * REP again, cm_build): a round trip from that send, when no other of the
 * sends remembered took that port and path (0: none).  Each send of a
 * connecting QP takes a port of its own (cm_route), so the copies and
 * twins of a try are told apart where their sent times are not: an RTU
 * answered after a copy went, or a handshake ended by a BOUND REP, gave
 * no sample before, and such a QP's paths waited rto_init for their first
 * RTO (10 ms in mrocd).  A server's first REP leaves by its listener's
 * port, not the asking one's, and is not dated so.
 */
static uint64_t cm_log_rtt(const struct qp *qp, const struct wire_pkt *pkt,
			   const struct engine_rx_meta *meta, uint64_t now)
{
	uint8_t asked;
	uint64_t at = 0;
	unsigned n = 0;

	if (pkt->hdr.opcode == MROC_OP_KEEPALIVE && !(pkt->hdr.flags & MROC_F_ACK_REQ))
		asked = CM_SEND_RTU;
	else if (pkt->hdr.opcode == MROC_OP_CONNECT_REP && (pkt->cm.ext_flags & MROC_CM_F_BOUND))
		asked = CM_SEND_REQ;
	else
		return 0;
	for (unsigned i = 0; i < CM_LOG; i++) {
		const struct cm_send *s = &qp->cm_log[i];

		if (s->at && s->pending == asked && s->sport == meta->sport &&
		    s->path == pkt->hdr.path_id) {
			at = s->at;
			n++;
		}
	}
	return n == 1 && now > at ? now - at : 0;
}

void cm_rtu_answered(struct engine *eng, struct qp *qp, const struct wire_pkt *pkt,
		     const struct engine_rx_meta *meta, uint64_t now)
{
	uint64_t rtt;

	/*
	 * The RTU's first send, answered before any copy went: a round trip.
	 * Not after a copy (the answer may be the copy's, sent a quarter of
	 * the try's wait later: the sample from the first send was that much
	 * too long, 2.5 ms with rto_init 10 ms, and raised every path's RTO
	 * floor through the host's largest RTT: mroc-sim incast --senders 5
	 * --planes 8 --paths 13 --route path --seed 540362373 --loss 0.01
	 * ..., sender 3 at 3.6 Gbit/s beside its peers' 150), nor after a try
	 * sent again, nor for a REQ sent again: the answer may be to the
	 * earlier one, and the sample too short (Karn).  Those are dated by
	 * the port the answer came by instead, where it names one send
	 * (cm_log_rtt).
	 */
	rtt = qp->cm_pending == CM_SEND_RTU && qp->cm_tries == 1 && !qp->cm_again &&
	      qp->cm_copy == CM_COPIES && now > qp->cm_sent ? now - qp->cm_sent : 0;
	take_hs_rtt(eng, qp, rtt ? rtt : cm_log_rtt(qp, pkt, meta, now), now);
	memset(qp->cm_log, 0, sizeof(qp->cm_log));
	qp->cm_pending = CM_NONE;
	qp->cm_copy = 0;
	qp->cm_deadline = 0;
	qp->cm_rounds = 0;
	up(eng, qp, now);
}

/* A reason a peer sent, as a failed connect's: one we do not know is an error. */
static uint8_t cm_peer_reason(uint8_t reason)
{
	return reason && reason <= MROC_CM_BUSY ? reason : MROC_CM_ERROR;
}

/*
 * Our listener went to another requester, or the server has none free for
 * now (REJ BUSY): ask again after the backoff of a request.  Each such
 * round is another requester served, so it is no sign of a dead server: up
 * to 4 x cm_retries of them (32 with the defaults, about 25 s with the
 * backoff's cap) before CONNECT_ERR.
 */
static void retry_later(struct engine *eng, struct qp *qp, uint64_t now)
{
	conn_unlink(eng, qp);
	qp->has_tx_key = false;
	qp->peer_npaths = 0;
	if (++qp->cm_rounds > 4 * eng->cfg.cm_retries) {
		qp_connect_failed(eng, qp, MROC_CM_BUSY);
		return;
	}
	eng->st.c[EC_CM_BUSY_RETRY]++;
	qp->cm_pending = CM_SEND_REQ;
	qp->cm_again = false;	/* a new round: its first REP's RTU has tries of its own */
	qp->cm_copy = 0;	/* the deadline below starts a try */
	qp->cm_tries = 0;
	qp->cm_deadline = now + cm_backoff(eng, qp->cm_rounds - 1);
}

/* A reply on behalf of a QP: tagged as its own packets are. */
static void tag_reply(struct engine *eng, const struct qp *qp, struct ctl_reply *r)
{
	const uint8_t *key = sec_qp_key(eng, qp);

	if (r && key) {
		r->has_key = true;
		memcpy(r->key, key, sizeof(r->key));
	}
}

int cm_rx(struct engine *eng, const struct wire_pkt *pkt, const struct engine_rx_meta *meta,
	  uint64_t now)
{
	struct engine_rx_meta m;
	struct qp *qp;

	if (pkt->hdr.opcode == MROC_OP_CONNECT_REQ) {
		if (meta->peer == ENGINE_PEER_NONE) {
			engine_count(eng, EC_RX_BAD_PEER);
			return -EPERM;
		}
		return rx_req(eng, pkt, meta, now);
	}
	qp = qp_lookup(eng, pkt->hdr.dst_qpn);
	if (!qp) {
		engine_count(eng, EC_RX_UNKNOWN_QP);
		if (pkt->hdr.opcode == MROC_OP_DISCONNECT)
			ctl_reply(eng, pkt, meta, pkt->hdr.dst_qpn, MROC_OP_DISCONNECT_ACK,
				  MROC_CM_OK);
		return -ENOENT;
	}
	if (qp->state == ENGINE_QPS_LISTEN && pkt->hdr.opcode == MROC_OP_DISCONNECT) {
		struct cm_half *h = cm_half_proven(eng, qp, pkt, meta, now);

		if (h) {
			/* The requester refused our REP (11.2): forget its REQ, tell it so. */
			struct ctl_reply *r = ctl_reply(eng, pkt, meta, qp->qpn,
							MROC_OP_DISCONNECT_ACK, MROC_CM_OK);

			if (r && h->req.has_key) {
				r->has_key = true;
				memcpy(r->key, h->req.key, sizeof(r->key));
			}
			cm_half_refused(eng, h);
			return 0;
		}
	}
	if (!cm_peer_ok(eng, qp, meta) ||
	    (qp->state != ENGINE_QPS_CONNECTING && qp->peer_qpn != pkt->hdr.src_qpn)) {
		engine_count(eng, EC_RX_BAD_PEER);
		return -EPERM;
	}
	m = *meta;
	m.peer = qp->peer;	/* maybe through one of its other addresses */
	meta = &m;
	switch (pkt->hdr.opcode) {
	case MROC_OP_CONNECT_REP:
		if (qp->state != ENGINE_QPS_CONNECTING || qp->cm_pending != CM_SEND_REQ)
			return 0;	/* duplicate */
		if (!cm_params_ok(eng, qp, &pkt->cm)) {
			/* Refuse, and tell the server so it does not stay half-open. */
			qp_connect_failed(eng, qp, MROC_CM_BAD_PARAM);
			tag_reply(eng, qp, ctl_reply(eng, pkt, meta, qp->qpn, MROC_OP_DISCONNECT,
						     MROC_CM_BAD_PARAM));
			return -EINVAL;
		}
		qp->cm_pending = CM_NONE;
		qp->cm_deadline = 0;
		if (take_peer(eng, qp, pkt)) {
			qp_connect_failed(eng, qp, MROC_CM_NO_RESOURCES);
			tag_reply(eng, qp, ctl_reply(eng, pkt, meta, qp->qpn, MROC_OP_DISCONNECT,
						     MROC_CM_NO_RESOURCES));
			return -ENOMEM;
		}
		cm_ext_up(eng, qp, pkt);
		/*
		 * The server's QP is bound to us already: our RTU reached it and
		 * its answer was lost (the REP answers our REQ sent again).  That
		 * answer would have said no more than this REP does, under our own
		 * key (sec.c), so there is nothing left to prove.  One lost packet
		 * fewer in each try: at 10 % loss each try needed REQ, REP, RTU and
		 * its answer through (0.66), and the clients of a 64-host cluster
		 * simulation failed to connect about once in 15 runs (seed 201).
		 */
		if (pkt->cm.ext_flags & MROC_CM_F_BOUND) {
			cm_rtu_answered(eng, qp, pkt, meta, now);
			return 0;
		}
		/*
		 * Our proof that we got the REP: the server binds its listener at
		 * it, and we count ourselves connected once the bound QP answers.
		 * The first REP of a round gives the RTU tries of its own (a REQ's
		 * budget); a REP to a REQ sent again (rtu_unanswered) is that try's,
		 * and its RTU goes at once within the try's wait (rtu_build).
		 */
		qp->cm_pending = CM_SEND_RTU;
		qp->cm_copy = 0;	/* the REQ's copies are not owed: the RTU goes now */
		if (!qp->cm_again)
			qp->cm_tries = 0;
		qp_wake(eng, qp);	/* as a REQ: its retry deadline is armed when it leaves */
		return 0;
	case MROC_OP_CONNECT_REJ:
		if (qp->state != ENGINE_QPS_CONNECTING)
			return 0;
		if (pkt->cm.reason == MROC_CM_BUSY) {
			/*
			 * Only the listener our REP named can say it went to another;
			 * before a REP, the server (src_qpn 0) that its listeners are
			 * all taken for now.
			 */
			if ((qp->cm_pending == CM_SEND_RTU && pkt->hdr.src_qpn == qp->peer_qpn) ||
			    (qp->cm_pending == CM_SEND_REQ && !pkt->hdr.src_qpn))
				retry_later(eng, qp, now);
			return 0;
		}
		if (qp->cm_pending == CM_SEND_RTU)
			return 0;	/* an answer to an earlier try: we hold a REP */
		if (pkt->cm.reason == MROC_CM_SECURITY)
			eng->st.c[EC_CM_SEC_MISMATCH]++;
		qp_connect_failed(eng, qp, cm_peer_reason(pkt->cm.reason));
		return 0;
	case MROC_OP_DISCONNECT:
		if (qp->state == ENGINE_QPS_CONNECTED || qp->state == ENGINE_QPS_CLOSING) {
			/* What retiring the sends lets through is delivered before the RECVs fail. */
			if (qp_flush_sends(eng, qp, ENGINE_WC_FLUSH_ERR) &&
			    qp->state == ENGINE_QPS_CONNECTED)
				qp_deliver(eng, qp);
			qp_flush_rest(eng, qp, ENGINE_WC_FLUSH_ERR);
			qp->state = ENGINE_QPS_IDLE;
			qp_event(eng, qp, ENGINE_WC_EV_DISCONNECTED, ENGINE_WC_SUCCESS);
		} else if (qp->state == ENGINE_QPS_ERROR && qp->cm_pending == CM_SEND_DISC) {
			qp->cm_pending = CM_NONE;	/* both sides said it */
			/*
			 * Its retry with it: a deadline left with nothing pending
			 * stayed due for good (cm_timer waits for cm_tx to re-arm
			 * it), and every timer run ran the QP again.
			 */
			qp->cm_deadline = 0;
		} else if (qp->state == ENGINE_QPS_CONNECTING && qp->cm_pending == CM_SEND_RTU &&
			   pkt->hdr.src_qpn == qp->peer_qpn) {
			/* The server bound us and closed before we heard from it. */
			qp_connect_failed(eng, qp, cm_peer_reason(pkt->cm.reason));
		}
		tag_reply(eng, qp, ctl_reply(eng, pkt, meta, qp->qpn, MROC_OP_DISCONNECT_ACK,
					     MROC_CM_OK));
		return 0;
	case MROC_OP_DISCONNECT_ACK:
		if (qp->cm_pending != CM_SEND_DISC)
			return 0;
		qp->cm_pending = CM_NONE;
		qp->cm_deadline = 0;
		if (qp->state == ENGINE_QPS_CLOSING) {
			qp->state = ENGINE_QPS_IDLE;
			qp_event(eng, qp, ENGINE_WC_EV_DISCONNECTED, ENGINE_WC_SUCCESS);
		}
		return 0;
	}
	return -EINVAL;
}
