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
 * (CONNECT_REJ BUSY) asks again later.
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

static void conn_unlink(struct engine *eng, struct qp *qp)
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

static uint64_t cm_backoff(const struct engine *eng, uint32_t n);

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

/* A try's sends after its first, its copies (try_arm). */
#define CM_COPIES 3

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
static void cm_log_send(struct qp *qp, uint16_t sport, uint8_t path, uint64_t now)
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
		qp->state = ENGINE_QPS_ERROR;
		qp->cm_pending = CM_NONE;
		qp->cm_deadline = 0;
		qp_event(eng, qp, ENGINE_WC_EV_ERROR, ENGINE_WC_CONNECT_ERR);
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
			qp->state = ENGINE_QPS_ERROR;
			qp->cm_pending = CM_NONE;
			qp->cm_deadline = 0;
			qp_event(eng, qp, ENGINE_WC_EV_ERROR, ENGINE_WC_CONNECT_ERR);
			tag_reply(eng, qp, ctl_reply(eng, pkt, meta, qp->qpn, MROC_OP_DISCONNECT,
						     MROC_CM_BAD_PARAM));
			return -EINVAL;
		}
		qp->cm_pending = CM_NONE;
		qp->cm_deadline = 0;
		if (take_peer(eng, qp, pkt)) {
			qp->state = ENGINE_QPS_ERROR;
			qp_event(eng, qp, ENGINE_WC_EV_ERROR, ENGINE_WC_CONNECT_ERR);
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
		qp->state = ENGINE_QPS_ERROR;
		qp->cm_pending = CM_NONE;
		qp->cm_deadline = 0;
		qp_event(eng, qp, ENGINE_WC_EV_ERROR, ENGINE_WC_CONNECT_ERR);
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
			qp->state = ENGINE_QPS_ERROR;
			qp->cm_pending = CM_NONE;
			qp->cm_deadline = 0;
			qp_event(eng, qp, ENGINE_WC_EV_ERROR, ENGINE_WC_CONNECT_ERR);
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
static uint64_t cm_backoff(const struct engine *eng, uint32_t n)
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
		qp->state = ENGINE_QPS_ERROR;
		qp_event(eng, qp, ENGINE_WC_EV_ERROR, ENGINE_WC_CONNECT_ERR);
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
