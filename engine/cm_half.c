// SPDX-License-Identifier: MIT
/*
 * Half-open connections: CONNECT_REQs answered with a CONNECT_REP whose
 * listener is not bound yet (docs/PROTOCOL.md 11.3 and 11a; #24: ghost
 * connections).  A REQ proves nothing about its sender in "none" and
 * "token" (anyone can send one, from any address), nor in "aead" when an
 * on-path host replays it from another address.  So a REQ only gets an
 * entry here, with the numbers and "token" key our REP gives it; the
 * listening QP stays listening, and is bound (EV_CONNECTED) at the first
 * packet that shows the requester got that REP: to the listener's random
 * QPN, from the requester's QP and address (or one its REQ announced), in
 * "token" tagged under the REP's key.  The requester sends one at once (its
 * RTU, cm.c).  A spoofed or replayed REQ costs one entry, never a listener.
 *
 * The table holds max(64, max_qps) entries, each for dead_peer after the
 * last REQ for it (a requester whose REPs are lost asks again); a full table gives the oldest entry's place to the new REQ (counted, as an
 * expired one: EC_CM_HALF_DROPPED), so a flood of REQs cannot keep real
 * requesters out for longer than it takes to cycle the table.  Entries are
 * found by the requester's QPN (chained hash), REPs to send wait in a queue
 * of 16 (a REQ that finds it full is answered when it is sent again).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define HALF_MIN	64

int cm_half_init(struct engine *eng)
{
	eng->nhalf = pow2_up(eng->cfg.max_qps > HALF_MIN ? eng->cfg.max_qps : HALF_MIN);
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
	return &eng->half_hash[((peer_qpn * 0x9e3779b1u) >> 7) & (eng->nhalf - 1)];
}

static uint32_t index_of(const struct engine *eng, const struct cm_half *h)
{
	return (uint32_t)(h - eng->half);
}

/* Out of its chain and emptied; unproven: counted as dropped. */
static void clear(struct engine *eng, struct cm_half *h, bool unproven)
{
	uint32_t *pp = bucket(eng, h->peer_qpn), me = index_of(eng, h) + 1;

	while (*pp && *pp != me)
		pp = &eng->half[*pp - 1].next;
	if (*pp)
		*pp = h->next;
	if (unproven)
		eng->st.c[EC_CM_HALF_DROPPED]++;
	free(h->ext);
	memset(h, 0, sizeof(*h));
}

/* Still good: not expired, its listener still listening on its service. */
static bool live(struct engine *eng, struct cm_half *h, uint64_t now)
{
	struct qp *l;

	if (!h->deadline)
		return false;
	l = qp_lookup(eng, h->listener);
	if (now < h->deadline && l && l->state == ENGINE_QPS_LISTEN &&
	    l->service_id == h->service_id)
		return true;
	clear(eng, h, true);
	return false;
}

static void queue_rep(struct engine *eng, struct cm_half *h)
{
	if (h->rep_due || eng->half_qtail - eng->half_qhead >= 16)
		return;		/* queued already, or the requester asks again */
	h->rep_due = true;
	eng->half_q[eng->half_qtail++ % 16] = index_of(eng, h);
}

static struct cm_half *find(struct engine *eng, uint32_t peer, uint32_t peer_qpn,
			    uint64_t service_id, uint64_t now)
{
	for (uint32_t i = *bucket(eng, peer_qpn); i;) {
		struct cm_half *h = &eng->half[i - 1];

		i = h->next;
		if (h->peer_qpn == peer_qpn && h->peer == peer && h->service_id == service_id &&
		    live(eng, h, now))
			return h;
	}
	return NULL;
}

bool cm_half_repeat(struct engine *eng, const struct wire_pkt *pkt,
		    const struct engine_rx_meta *meta, uint64_t now)
{
	struct cm_half *h = find(eng, meta->peer, pkt->hdr.src_qpn, pkt->cm.service_id, now);

	if (!h)
		return false;
	/* Our REP was lost: the same one again; the requester is still there. */
	h->deadline = now + eng->cfg.dead_peer_ns;
	queue_rep(eng, h);
	return true;
}

int cm_half_req(struct engine *eng, struct qp *l, const struct wire_pkt *pkt,
		const struct engine_rx_meta *meta, uint64_t now)
{
	struct cm_half *h = &eng->half[eng->half_next];
	uint32_t *b;

	if (h->deadline)
		clear(eng, h, true);	/* the oldest: expired, or pushed out */
	*h = (struct cm_half){
		.deadline = now + eng->cfg.dead_peer_ns,
		.service_id = pkt->cm.service_id,
		.listener = l->qpn,
		.peer = meta->peer,
		.peer_qpn = pkt->hdr.src_qpn,
		.isn_psn = l->isn_psn,
		.isn_dsn = l->isn_dsn,
		.req = pkt->cm,
	};
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
	if (!l->fixed_isn) {
		h->isn_psn = sec_rand32(eng);
		h->isn_dsn = sec_rand32(eng);
	}
	if (eng->sec_tag_len)
		sec_new_key(eng, h->rx_key);
	b = bucket(eng, h->peer_qpn);
	h->next = *b;
	*b = eng->half_next + 1;
	eng->half_next = (eng->half_next + 1) & (eng->nhalf - 1);
	eng->st.c[EC_CM_HALF_OPEN]++;
	queue_rep(eng, h);
	return 0;
}

void cm_half_tag(struct engine *eng, struct qp *l, const uint8_t *buf, size_t len)
{
	uint32_t src = (uint32_t)buf[8] << 24 | (uint32_t)buf[9] << 16 | (uint32_t)buf[10] << 8 |
		       buf[11];

	for (uint32_t i = *bucket(eng, src); i;) {
		struct cm_half *h = &eng->half[i - 1];

		if (h->deadline && h->peer_qpn == src && h->listener == l->qpn &&
		    sec_tag_ok(h->rx_key, buf, len)) {
			eng->half_tagged = i;
			return;
		}
		i = h->next;
	}
}

struct cm_half *cm_half_proven(struct engine *eng, struct qp *l, const struct wire_pkt *pkt,
			       const struct engine_rx_meta *meta, uint64_t now)
{
	for (uint32_t i = *bucket(eng, pkt->hdr.src_qpn); i;) {
		struct cm_half *h = &eng->half[i - 1];
		uint32_t me = i;

		i = h->next;
		if (h->peer_qpn != pkt->hdr.src_qpn || h->listener != l->qpn ||
		    (eng->sec_tag_len && eng->half_tagged != me) || !live(eng, h, now))
			continue;
		/* From the requester's address, or one its REQ announced (mrocd's port addresses). */
		if (h->peer == meta->peer ||
		    (eng->addr_fn && eng->addr_fn(eng->addr_ctx, h->peer, meta, h->ext, h->ext_len)))
			return h;
	}
	return NULL;
}

void cm_half_done(struct engine *eng, struct cm_half *h, bool bound)
{
	clear(eng, h, !bound);
}

int cm_half_tx(struct engine *eng, uint64_t now, struct engine_txbuf *b)
{
	while (eng->half_qhead != eng->half_qtail) {
		struct cm_half *h;
		struct mroc_cm_hdr c;
		struct qp *l;
		size_t n;

		/* engine_config_check made sure this fits every buffer */
		if (b->cap < MROC_HDR_LEN + MROC_CM_HDR_LEN + MROC_CM_KEY_LEN + 2u +
			     eng->cfg.cm_ext_len)
			return 0;
		h = &eng->half[eng->half_q[eng->half_qhead++ % 16]];
		if (!h->rep_due)
			continue;	/* cleared (and maybe reused) since */
		h->rep_due = false;
		if (!live(eng, h, now))
			continue;
		l = qp_lookup(eng, h->listener);
		c = (struct mroc_cm_hdr){
			.service_id = h->service_id,
			.isn_dsn = h->isn_dsn,
			.isn_psn = h->isn_psn,
			.mtu = (uint16_t)eng->cfg.mtu,
			.npaths = l->npaths,
			.mode = l->mode,
			.sec = eng->cfg.sec_mode,
			.ext_flags = eng->cfg.cm_ext_len ? MROC_CM_F_EXT : 0,
			.split = l->mode == MROC_MODE_METAROCE ?
				 (uint8_t)(eng->cfg.split_unit / MROC_SPLIT_ALIGN) : 0,
		};
		n = wire_put_hdr(b->data, &(struct mroc_hdr){
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
		b->peer = h->peer;
		b->sport = l->npaths && l->paths[0].sport ? l->paths[0].sport : eng->cfg.sport_min;
		b->path_id = 0;
		b->ect = false;
		/* tagged with the requester's key, which its REQ carried */
		sec_tx_seal(eng, h->req.has_key ? h->req.key : NULL, b);
		eng->st.c[EC_TX_CM]++;
		return 1;
	}
	return 0;
}
