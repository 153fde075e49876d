// SPDX-License-Identifier: MIT
/*
 * Half-open connections: CONNECT_REQs answered with a CONNECT_REP whose
 * listener is not bound yet (docs/PROTOCOL.md 11.3 and 11a; #24: ghost
 * connections).  A REQ proves nothing about its sender in "none" and
 * "token" (anyone can send one, from any address), nor in "aead" when an
 * on-path host replays it from another address.  So a REQ gets an entry
 * here, with the numbers and "token" key our REP gives it; the listening QP
 * stays listening, and is bound (EV_CONNECTED) at the first packet that
 * shows the requester got that REP: to the listener's random QPN, from the
 * requester's QP and address (or one its REQ announced), in "token" tagged
 * under the REP's key.  The requester sends one at once (its RTU, cm.c).
 * A spoofed or replayed REQ costs one entry, never a listener.
 *
 * Several requesters at once: a REQ takes a listener of its service that
 * has no waiting entry when there is one (cm.c), so requesters spread over
 * the listeners posted for them.  Only when every listener has one does a
 * REQ share one (a ghost must not keep real requesters out); the first
 * proof binds it, and every other entry of that listener becomes *busy*:
 * its requester is sent CONNECT_REJ BUSY (tagged under the key its REQ
 * carried: only it can check it), again at each proof it sends, and asks
 * again later (cm.c), as if it had found no free listener.
 *
 * The table holds max(64, 2 x max_qps) entries (rounded up to a power of
 * 2), each for dead_peer after the last REQ or proof for it; a full table gives the oldest entry's place to
 * the new REQ (counted: EC_CM_HALF_DROPPED), so a flood of REQs cannot keep
 * real requesters out for longer than it takes to cycle the table.
 * Entries are found by the requester's QPN (chained hash) and by their
 * listener (a list per listener); what they send (REP, REJ BUSY) waits in
 * a queue through the entries, so it holds as many as there are entries.
 *
 * A REQ costs the same whatever the flood before it (#24): the listener's
 * list is linked both ways (the entry pushed out, the oldest, sits at its
 * tail: found by walking it, a flood of 16,384 entries on one listener
 * cost every REQ two walks of the whole table), "is there a waiting entry"
 * stops at the first live one, and a hash chain holds at most HALF_CHAIN
 * entries: REQs that all name one QPN (from as many addresses), or QPNs
 * chosen to share a bucket, push out their own chain's oldest, not walk
 * it (the multiplier is secret besides, so a chain cannot be aimed at).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define HALF_MIN	64
#define HALF_CHAIN	8	/* entries a hash chain holds (a real one: 1 or 2) */

/*
 * The chains' multiplier, mixed from the generator's key rather than drawn
 * from the generator: every number the engine draws later stays as it was
 * (tests and the simulator replay them from the seed).
 */
static uint32_t secret_mult(const uint8_t key[32])
{
	uint64_t x, y;

	memcpy(&x, key + 16, sizeof(x));
	memcpy(&y, key + 24, sizeof(y));
	x ^= y * 0x9e3779b97f4a7c15ULL;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (uint32_t)x | 1;
}

int cm_half_init(struct engine *eng)
{
	uint32_t n = 2 * eng->cfg.max_qps;	/* every QP listening, and as many ghosts */

	eng->nhalf = pow2_up(n > HALF_MIN ? n : HALF_MIN);
	eng->half_mult = secret_mult(eng->rand_key);
	eng->half = calloc(eng->nhalf, sizeof(*eng->half));
	eng->half_hash = calloc(eng->nhalf, sizeof(*eng->half_hash));
	return eng->half && eng->half_hash ? 0 : -ENOMEM;
}

void cm_half_free(struct engine *eng)
{
	if (eng->half)
		for (uint32_t i = 0; i < eng->nhalf; i++)
			free(eng->half[i].ext);
	free(eng->half);
	free(eng->half_hash);
}

static uint32_t *bucket(struct engine *eng, uint32_t peer_qpn)
{
	return &eng->half_hash[((peer_qpn * eng->half_mult) >> 7) & (eng->nhalf - 1)];
}

static uint32_t index_of(const struct engine *eng, const struct cm_half *h)
{
	return (uint32_t)(h - eng->half);
}

/* The listening QP of a waiting entry, if it still listens as it did for the REQ. */
static struct qp *listener_of(struct engine *eng, const struct cm_half *h)
{
	struct qp *l = qp_lookup(eng, h->listener);

	return l && l->state == ENGINE_QPS_LISTEN && l->listen_gen == h->gen &&
	       l->service_id == h->service_id ? l : NULL;
}

/*
 * Out of the listener's list (a waiting entry).  Only while the listener
 * listens as it did for the REQ: after that its list is gone (a new LISTEN
 * starts an empty one, a bound listener's entries are busy), and the links
 * of its entries may name slots that other entries took since.
 */
static void listener_unlink(struct engine *eng, struct cm_half *h)
{
	struct qp *l = listener_of(eng, h);
	uint32_t me = index_of(eng, h) + 1, *from;

	if (l) {
		from = h->lprev ? &eng->half[h->lprev - 1].lnext : &l->half_head;
		if (*from == me) {
			*from = h->lnext;
			if (h->lnext)
				eng->half[h->lnext - 1].lprev = h->lprev;
		}
	}
	h->lnext = 0;
	h->lprev = 0;
}

/*
 * Out of its chains and emptied; never proven: counted as dropped.  The
 * send queue keeps its link (queued, tx_next): cm_half_tx skips it.
 */
static void clear(struct engine *eng, struct cm_half *h, bool unproven)
{
	uint32_t *pp = bucket(eng, h->peer_qpn), me = index_of(eng, h) + 1, tx_next = h->tx_next;
	bool queued = h->queued;

	while (*pp && *pp != me)
		pp = &eng->half[*pp - 1].next;
	if (*pp)
		*pp = h->next;
	if (!h->busy)
		listener_unlink(eng, h);
	if (unproven)
		eng->st.c[EC_CM_HALF_DROPPED]++;
	free(h->ext);
	memset(h, 0, sizeof(*h));
	h->queued = queued;
	h->tx_next = tx_next;
}

/* Still good: not expired; waiting: its listener still listening as it was. */
static bool live(struct engine *eng, struct cm_half *h, uint64_t now)
{
	if (!h->deadline)
		return false;
	if (now < h->deadline && (h->busy || listener_of(eng, h)))
		return true;
	clear(eng, h, !h->busy);	/* a busy one was counted when its listener went */
	return false;
}

static void queue_tx(struct engine *eng, struct cm_half *h, uint8_t what)
{
	uint32_t me = index_of(eng, h) + 1;

	h->due = what;
	if (h->queued)
		return;
	h->queued = true;
	h->tx_next = 0;
	if (eng->half_qtail)
		eng->half[eng->half_qtail - 1].tx_next = me;
	else
		eng->half_qhead = me;
	eng->half_qtail = me;
}

bool cm_half_waiting(struct engine *eng, struct qp *l, uint64_t now)
{
	for (uint32_t i = l->half_head; i;) {
		struct cm_half *h = &eng->half[i - 1];

		i = h->lnext;
		if (live(eng, h, now))	/* an expired one leaves the list */
			return true;
	}
	return false;
}

bool cm_half_repeat(struct engine *eng, const struct wire_pkt *pkt,
		    const struct engine_rx_meta *meta, uint64_t now)
{
	for (uint32_t i = *bucket(eng, pkt->hdr.src_qpn); i;) {
		struct cm_half *h = &eng->half[i - 1];

		i = h->next;
		if (h->peer_qpn != pkt->hdr.src_qpn || h->peer != meta->peer ||
		    h->service_id != pkt->cm.service_id || h->busy || !live(eng, h, now))
			continue;
		/* Our REP was lost: the same one again; the requester is still there. */
		h->deadline = now + eng->cfg.dead_peer_ns;
		h->sport = meta->sport;
		h->path_id = pkt->hdr.path_id;
		queue_tx(eng, h, HALF_REP);
		return true;
	}
	return false;
}

int cm_half_req(struct engine *eng, struct qp *l, const struct wire_pkt *pkt,
		const struct engine_rx_meta *meta, uint64_t now)
{
	struct cm_half *h = &eng->half[eng->half_next];
	uint32_t *b, n = 0, last = 0;

	if (h->deadline)
		clear(eng, h, !h->busy);	/* the oldest: expired, or pushed out */
	/* A full chain gives its oldest (its last) entry's place, as the table does. */
	for (uint32_t i = *bucket(eng, pkt->hdr.src_qpn); i; i = eng->half[i - 1].next) {
		n++;
		last = i;
	}
	if (n >= HALF_CHAIN)
		clear(eng, &eng->half[last - 1], !eng->half[last - 1].busy);
	h->deadline = now + eng->cfg.dead_peer_ns;
	h->service_id = pkt->cm.service_id;
	h->listener = l->qpn;
	h->gen = l->listen_gen;
	h->peer = meta->peer;
	h->peer_qpn = pkt->hdr.src_qpn;
	h->sport = meta->sport;
	h->path_id = pkt->hdr.path_id;
	h->rep_sent = h->rep_again = false;
	h->req = pkt->cm;
	h->req.ext = NULL;
	if (pkt->cm.ext) {
		h->ext = malloc(pkt->cm.ext_len ? pkt->cm.ext_len : 1);
		if (!h->ext) {
			h->deadline = 0;
			return -ENOMEM;
		}
		memcpy(h->ext, pkt->cm.ext, pkt->cm.ext_len);
		h->ext_len = pkt->cm.ext_len;
	}
	/* Every REP its own numbers and key: only the proven one's reach the QP. */
	h->isn_psn = l->isn_psn;
	h->isn_dsn = l->isn_dsn;
	if (!l->fixed_isn) {
		h->isn_psn = sec_rand32(eng);
		h->isn_dsn = sec_rand32(eng);
	}
	if (eng->sec_tag_len)
		sec_new_key(eng, h->rx_key);
	b = bucket(eng, h->peer_qpn);
	h->next = *b;
	*b = eng->half_next + 1;
	h->lnext = l->half_head;
	h->lprev = 0;
	if (l->half_head)
		eng->half[l->half_head - 1].lprev = eng->half_next + 1;
	l->half_head = eng->half_next + 1;
	eng->half_next = (eng->half_next + 1) & (eng->nhalf - 1);
	eng->st.c[EC_CM_HALF_OPEN]++;
	queue_tx(eng, h, HALF_REP);
	return 0;
}

/* The entry of QP qpn from requester QP src, waiting or busy, that passes test. */
static struct cm_half *find(struct engine *eng, uint32_t qpn, uint32_t src, bool busy,
			    uint64_t now)
{
	for (uint32_t i = *bucket(eng, src); i;) {
		struct cm_half *h = &eng->half[i - 1];
		uint32_t me = i;

		i = h->next;
		if (h->peer_qpn != src || h->listener != qpn || h->busy != busy ||
		    (eng->sec_tag_len && eng->half_tagged != me) || !live(eng, h, now))
			continue;
		return h;
	}
	return NULL;
}

bool cm_half_tag(struct engine *eng, uint32_t qpn, const uint8_t *buf, size_t len)
{
	uint32_t src = (uint32_t)buf[8] << 24 | (uint32_t)buf[9] << 16 | (uint32_t)buf[10] << 8 |
		       buf[11];

	for (uint32_t i = *bucket(eng, src); i;) {
		struct cm_half *h = &eng->half[i - 1];

		if (h->deadline && h->peer_qpn == src && h->listener == qpn &&
		    sec_tag_ok(h->rx_key, buf, len)) {
			eng->half_tagged = i;
			return true;
		}
		i = h->next;
	}
	return false;
}

/* From the requester's address, or one its REQ announced (mrocd's port addresses). */
static bool from_requester(struct engine *eng, const struct cm_half *h,
			   const struct engine_rx_meta *meta)
{
	return h->peer == meta->peer ||
	       (eng->addr_fn && eng->addr_fn(eng->addr_ctx, h->peer, meta, h->ext, h->ext_len));
}

struct cm_half *cm_half_proven(struct engine *eng, struct qp *l, const struct wire_pkt *pkt,
			       const struct engine_rx_meta *meta, uint64_t now)
{
	struct cm_half *h = find(eng, l->qpn, pkt->hdr.src_qpn, false, now);

	return h && from_requester(eng, h, meta) ? h : NULL;
}

void cm_half_bound(struct engine *eng, struct qp *l, struct cm_half *h, uint64_t now)
{
	uint32_t i = l->half_head;

	/* The others who got a REP naming l: told at once, and at each proof they send. */
	l->half_head = 0;
	while (i) {
		struct cm_half *o = &eng->half[i - 1];

		i = o->lnext;
		o->lnext = 0;
		o->lprev = 0;
		o->busy = true;		/* out of the list: clear() must not look for it there */
		if (o == h)
			continue;
		if (!o->deadline || now >= o->deadline) {
			clear(eng, o, true);
			continue;
		}
		eng->st.c[EC_CM_HALF_DROPPED]++;
		queue_tx(eng, o, HALF_BUSY);
	}
	h->busy = true;
	clear(eng, h, false);
}

void cm_half_refused(struct engine *eng, struct cm_half *h)
{
	clear(eng, h, true);
}

bool cm_half_busy(struct engine *eng, uint32_t qpn, const struct wire_pkt *pkt,
		  const struct engine_rx_meta *meta, uint64_t now)
{
	struct cm_half *h = find(eng, qpn, pkt->hdr.src_qpn, true, now);

	if (!h || !from_requester(eng, h, meta))
		return false;
	h->deadline = now + eng->cfg.dead_peer_ns;
	h->sport = meta->sport;
	h->path_id = pkt->hdr.path_id;
	queue_tx(eng, h, HALF_BUSY);
	return true;
}

/* The REP of a waiting entry, into b. */
static void put_rep(struct engine *eng, const struct cm_half *h, const struct qp *l,
		    uint64_t now, struct engine_txbuf *b)
{
	struct mroc_cm_hdr c = {
		.service_id = h->service_id,
		.isn_dsn = h->isn_dsn,
		.isn_psn = h->isn_psn,
		.mtu = (uint16_t)eng->cfg.mtu,
		.npaths = l->npaths,
		.mode = l->mode,
		.sec = eng->cfg.sec_mode,
		.ext_flags = (uint8_t)((eng->cfg.cm_ext_len ? MROC_CM_F_EXT : 0) |
				       cm_split_ext(eng, l->mode, l->npaths)),
		.split = cm_split(eng, l->mode),
	};
	size_t n = wire_put_hdr(b->data, &(struct mroc_hdr){
		.version = MROC_WIRE_VERSION, .opcode = MROC_OP_CONNECT_REP,
		.dst_qpn = h->peer_qpn, .src_qpn = l->qpn, .ts = (uint32_t)now });

	n += wire_put_cm(b->data + n, &c);
	/* "token": our receive key for this requester, to tag its proof with */
	if (eng->sec_tag_len) {
		memcpy(c.key, h->rx_key, sizeof(c.key));
		n += wire_put_cm_key(b->data + n, &c);
	}
	if (eng->cfg.cm_ext_len)
		n += wire_put_cm_ext(b->data + n, eng->cfg.cm_ext, eng->cfg.cm_ext_len);
	b->len = (uint32_t)n;
	/*
	 * The first by the listener's path 0; again (the REQ came again, its
	 * REP lost) by the port the asking copy came from: each copy takes
	 * another route (cm_tx.c cm_route), and so does the answer to it.
	 */
	if (h->rep_sent && h->sport) {
		b->sport = h->sport;
		b->path_id = h->path_id;
	} else {
		b->sport = l->npaths && l->paths[0].sport ? l->paths[0].sport : eng->cfg.sport_min;
		b->path_id = 0;
	}
}

/* The REJ BUSY of an entry whose listener went to another requester, into b. */
static void put_busy(struct engine *eng, const struct cm_half *h, uint64_t now,
		     struct engine_txbuf *b)
{
	struct mroc_cm_hdr c = { .service_id = h->service_id, .reason = MROC_CM_BUSY,
				 .sec = eng->cfg.sec_mode };
	size_t n = wire_put_hdr(b->data, &(struct mroc_hdr){
		.version = MROC_WIRE_VERSION, .opcode = MROC_OP_CONNECT_REJ,
		.dst_qpn = h->peer_qpn, .src_qpn = h->listener, .ts = (uint32_t)now });

	n += wire_put_cm(b->data + n, &c);
	b->len = (uint32_t)n;
	b->sport = h->sport;
	b->path_id = h->path_id;
	b->echo = true;		/* back the way the requester's packet came */
}

int cm_half_tx(struct engine *eng, uint64_t now, struct engine_txbuf *b)
{
	/* engine_config_check made sure a REP fits every buffer */
	if (b->cap < MROC_HDR_LEN + MROC_CM_HDR_LEN + MROC_CM_KEY_LEN + 2u + eng->cfg.cm_ext_len)
		return 0;
	while (eng->half_qhead) {
		struct cm_half *h = &eng->half[eng->half_qhead - 1];
		uint8_t due = h->due;
		struct qp *l;

		eng->half_qhead = h->tx_next;
		if (!eng->half_qhead)
			eng->half_qtail = 0;
		h->queued = false;
		h->tx_next = 0;
		h->due = HALF_NONE;
		if (due == HALF_NONE || !live(eng, h, now))
			continue;	/* cleared (and maybe reused) since */
		if (due == HALF_BUSY) {
			put_busy(eng, h, now, b);
			eng->st.c[EC_CM_BUSY]++;
		} else {
			l = listener_of(eng, h);
			if (!l || h->busy)
				continue;
			put_rep(eng, h, l, now, b);
			h->rep_again = h->rep_sent;
			if (!h->rep_sent)
				h->rep_at = now;
			h->rep_sent = true;
		}
		b->peer = h->peer;
		b->ect = false;
		/* tagged with the requester's key, which its REQ carried */
		sec_tx_seal(eng, h->req.has_key ? h->req.key : NULL, b);
		eng->st.c[EC_TX_CM]++;
		return 1;
	}
	return 0;
}
