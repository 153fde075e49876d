// SPDX-License-Identifier: MIT
/*
 * What arrives on a connection: one chunk at a time, in order (proto.h).
 * A message's first chunk is matched against the posted receives (match.c);
 * without a match it is buffered as unexpected.  The rest of its chunks
 * follow where the first went (conn->cur).  RMA is served here from the
 * registered regions (domain.c checks key, bounds and rights) and answered
 * on the same connection; so are atomics (one chunk each, atomic_ops.c
 * applies them).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mrocfi.h"

/* Copy len bytes into a receive's buffers at offset off; what does not fit is dropped. */
static void iov_scatter(struct mfi_rxop *rx, uint64_t off, const uint8_t *src, size_t len)
{
	for (size_t i = 0; i < rx->iov_count && len; i++) {
		size_t l;

		if (off >= rx->iov[i].iov_len) {
			off -= rx->iov[i].iov_len;
			continue;
		}
		l = rx->iov[i].iov_len - off < len ? rx->iov[i].iov_len - off : len;
		memcpy((uint8_t *)rx->iov[i].iov_base + off, src, l);
		src += l;
		len -= l;
		off = 0;
	}
}

void mfi_rx_complete(struct mfi_ep *ep, struct mfi_rxop *rx, int err)
{
	struct mfi_cqe e = { 0 };
	uint64_t got = rx->msg_len < rx->len ? rx->msg_len : rx->len;

	/* A claimed message discarded was never meant to fit (fabtests' fi_rdm_tagged_peek). */
	if (!err && rx->msg_len > rx->len && !(rx->flags & FI_DISCARD))
		err = -FI_ETRUNC;
	mfi_cntr_count(ep, MFI_CNTR_RECV, err);	/* each message of a multi-receive buffer */
	if (ep->rxcq && (rx->completion || err)) {
		e.e = (struct fi_cq_tagged_entry){
			.op_context = rx->context,
			.flags = FI_RECV | (rx->kind == MFI_KIND_TAGGED ? FI_TAGGED : FI_MSG) |
				 (rx->has_data ? FI_REMOTE_CQ_DATA : 0),
			.len = got, .buf = rx->iov_count ? rx->iov[0].iov_base : NULL,
			.data = rx->data, .tag = rx->msg_tag,
		};
		e.src = rx->msg_src;
		if (rx->multi_release)
			e.e.flags |= FI_MULTI_RECV;
		if (err) {
			e.err = true;
			e.err_no = -err;
			e.olen = err == -FI_ETRUNC ? rx->msg_len - rx->len : 0;
		}
		mfi_cqring_push(&ep->rxcq->ring, &e);
	}
	mfi_rxop_put(&ep->match, rx);
}

/* The source of what arrives on c, as the application's AV names it. */
static fi_addr_t conn_src(struct mfi_conn *c)
{
	int64_t i;

	if (c->fiaddr != FI_ADDR_NOTAVAIL || !c->peer_known || !c->ep->av)
		return c->fiaddr;
	/* Looked up until found: the application may insert the peer after it spoke. */
	i = mfi_av_find(&c->ep->av->av, &c->peer);
	if (i >= 0)
		c->fiaddr = (fi_addr_t)i;
	return c->fiaddr;
}

static void rx_hello(struct mfi_conn *c, const uint8_t *p, uint32_t len)
{
	struct mfi_hello h;
	const uint8_t *ip6, *cm;
	size_t cm_len;

	if (mfi_hello_decode(p, len, &h, &ip6, &cm, &cm_len) || cm_len > MFI_CM_DATA_MAX ||
	    c->hello_seen) {
		c->ep->cnt.bad_msgs++;
		return;
	}
	c->hello_seen = true;
	c->peer_rkey = le32toh(h.credit_rkey);
	c->peer_nonce = le64toh(h.nonce);
	c->peer_rndv = le16toh(h.flags) & MFI_HELLO_RNDV;
	if (!c->peer_known) {
		c->peer = mfi_addr4(h.ip, le16toh(h.port));
		if (ip6)
			memcpy(c->peer.ip.s6_addr, ip6, MFI_HELLO_ADDR6_LEN);
		c->peer_known = true;
		/* A claim: an RDM endpoint reads this connection once the claimed endpoint,
		 * asked on a connection we open to it, confirms the nonce (proto.h). */
		if (c->accepted && c->ep->type == FI_EP_RDM) {
			c->verified = false;
			mfi_ep_verify(c);
			return;
		}
	}
	conn_src(c);
	/* The peer introduced itself; an MSG server also said yes or no, with its data. */
	mfi_ep_hello(c, cm, cm_len, le16toh(h.flags) & MFI_HELLO_REJECT);
}

static void rx_first_msg(struct mfi_conn *c, const struct mfi_hdr *h)
{
	struct mfi_ep *ep = c->ep;
	enum mfi_kind kind = h->op == MFI_OP_TAGGED ? MFI_KIND_TAGGED : MFI_KIND_MSG;
	fi_addr_t src = conn_src(c);
	struct mfi_rxop *rx;
	struct mfi_unexp *ux;

	bool rndv = h->flags & MFI_F_RNDV;

	/* An RTS is one header-only SEND. */
	if (h->total > MFI_MAX_MSG_SIZE ||
	    (rndv && (h->len || !(h->flags & MFI_F_LAST) || h->total > UINT32_MAX))) {
		ep->cnt.bad_msgs++;
		c->cur.kind = RX_DROP;
		return;
	}
	rx = mfi_match_arrival(&ep->match, kind, src, h->tag);
	if (rx && (rx->flags & FI_MULTI_RECV))
		rx = mfi_rx_multi_carve(ep, rx, h->total, true);
	c->cur = (struct mfi_rxcur){ .total = h->total };
	if (rx) {
		rx->msg_len = h->total;
		rx->msg_tag = h->tag;
		rx->data = h->data;
		rx->has_data = h->flags & MFI_F_DATA;
		rx->msg_src = src;
		if (rndv) {
			mfi_rndv_start(c, rx, h->req_id, (uint32_t)h->key, h->addr, h->total);
			return;
		}
		c->cur.kind = RX_POSTED;
		c->cur.rx = rx;
		return;
	}
	ux = calloc(1, sizeof(*ux));
	if (ux && !rndv)
		ux->buf = malloc(h->total ? h->total : 1);
	if (!ux || (!rndv && !ux->buf)) {
		/* Out of memory: the message is lost, as a NIC out of buffers would lose it. */
		free(ux);
		c->cur.kind = RX_DROP;
		return;
	}
	ux->kind = kind;
	ux->src = src;
	ux->conn = c;
	ux->tag = h->tag;
	ux->data = h->data;
	ux->has_data = h->flags & MFI_F_DATA;
	ux->total = h->total;
	if (rndv) {
		/* Read when a receive takes it: nothing more arrives on the connection. */
		ux->rndv = true;
		ux->complete = true;
		ux->rndv_rkey = (uint32_t)h->key;
		ux->rndv_off = h->addr;
		ux->rndv_req = h->req_id;
		mfi_match_add_unexp(&ep->match, ux);
		return;
	}
	mfi_match_add_unexp(&ep->match, ux);
	c->cur.kind = RX_UNEXP;
	c->cur.ux = ux;
}

/*
 * A message for a multi-receive buffer m: a receive for its place in it (the
 * next total bytes).  The buffer stays posted (first in its queue when
 * requeue) while at least min_multi_recv bytes are left; else this receive's
 * completion releases it (FI_MULTI_RECV).  NULL when the pool of receives is
 * empty (m then stays posted).
 */
struct mfi_rxop *mfi_rx_multi_carve(struct mfi_ep *ep, struct mfi_rxop *m, uint64_t total,
				    bool requeue)
{
	struct mfi_rxop *sub = mfi_rxop_get(&ep->match);
	uint64_t room = m->len - m->multi_off;

	if (!sub) {
		if (requeue)
			mfi_match_requeue_head(&ep->match, m);
		return NULL;
	}
	*sub = (struct mfi_rxop){
		.kind = m->kind, .iov_count = 1, .len = room, .tag = m->tag, .ignore = m->ignore,
		.src = m->src, .context = m->context, .flags = m->flags & ~FI_MULTI_RECV,
		.completion = m->completion,
	};
	sub->iov[0] = (struct iovec){ (uint8_t *)m->iov[0].iov_base + m->multi_off, room };
	m->multi_off += total < room ? total : room;
	if (m->len - m->multi_off < ep->min_multi_recv || total >= room) {
		sub->multi_release = true;
		mfi_rxop_put(&ep->match, m);
	} else if (requeue) {
		mfi_match_requeue_head(&ep->match, m);
	}
	return sub;
}

/* An unexpected message meets its receive: copy it out, complete, free it. */
static void deliver_unexp(struct mfi_ep *ep, struct mfi_unexp *ux, struct mfi_rxop *rx)
{
	rx->msg_len = ux->total;
	rx->msg_tag = ux->tag;
	rx->data = ux->data;
	rx->has_data = ux->has_data;
	rx->msg_src = ux->src;
	if (ux->rndv) {
		mfi_rndv_start(ux->conn, rx, ux->rndv_req, ux->rndv_rkey, ux->rndv_off, ux->total);
		mfi_unexp_free(ux);
		return;
	}
	if (!(rx->flags & FI_DISCARD))
		iov_scatter(rx, 0, ux->buf, ux->total);
	mfi_rx_complete(ep, rx, 0);
	mfi_unexp_free(ux);
}

/* A receive was posted (or claims a message): deliver now or when the rest arrives. */
void mfi_rx_take_unexp(struct mfi_ep *ep, struct mfi_unexp *ux, struct mfi_rxop *rx)
{
	if (ux->complete)
		deliver_unexp(ep, ux, rx);
	else
		ux->waiting = rx;
}

/*
 * FI_PEEK|FI_DISCARD (or a claimed message discarded): out of every queue
 * already; its buffer goes now, the struct when its last chunk has arrived
 * (the connection still points at it until then).
 */
void mfi_rx_discard_unexp(struct mfi_unexp *ux)
{
	if (ux->rndv) {
		struct mfi_conn *c = ux->conn;

		/* Never read: the sender is told it was taken (libfabric's DISCARD). */
		if (c->state == MFI_CONN_UP)
			mfi_rndv_fin(c, ux->rndv_req, 0);
		mfi_unexp_free(ux);
		return;
	}
	if (ux->complete) {
		mfi_unexp_free(ux);
		return;
	}
	free(ux->buf);
	ux->buf = NULL;
	ux->discard = true;
}

/* The connection is going away in the middle of a message: whatever waits for it ends. */
void mfi_rx_conn_gone(struct mfi_conn *c, int err)
{
	struct mfi_rxcur *cur = &c->cur;
	struct mfi_unexp *ux = cur->ux;

	mfi_rndv_conn_gone(c, err);
	/* Announced here and not yet matched: they can no longer be read. */
	while (c->ep && (ux = mfi_match_take_rndv(&c->ep->match, c)))
		mfi_unexp_free(ux);
	ux = cur->ux;
	if (cur->kind == RX_POSTED && c->ep) {
		mfi_rx_complete(c->ep, cur->rx, err);
	} else if (cur->kind == RX_UNEXP) {
		/* Never complete now: no receive may match it any more. */
		if (ux->waiting && c->ep)
			mfi_rx_complete(c->ep, ux->waiting, err);
		else if (!ux->discard && c->ep)
			mfi_match_remove_unexp(&c->ep->match, ux);
		mfi_unexp_free(ux);
	}
	cur->kind = RX_NONE;
}

static struct mfi_txop *queue_internal(struct mfi_conn *c, enum mfi_txkind kind, uint32_t req_id,
				       int status, void *src, uint64_t len)
{
	struct mfi_txop *op = calloc(1, sizeof(*op));

	if (!op)
		return NULL;	/* the initiator's operation then never completes: as a lost answer */
	op->kind = kind;
	op->req_id = req_id;
	op->status = status;
	if (len) {
		op->iov[0] = (struct iovec){ src, len };
		op->iov_count = 1;
		op->total = len;
	}
	mfi_conn_queue(c, op);
	return op;
}

/*
 * The operation an answer names, if it is one: sent on this connection, of a
 * kind that answer answers, sent whole.  Anything else is refused and counted
 * (a peer completing another's operation, or a READ_RESP on a write's id).
 */
static struct mfi_txop *answered_op(struct mfi_conn *c, uint32_t req_id, uint8_t answer)
{
	struct mfi_txop *op = mfi_rma_peek(c->ep, req_id);
	bool kind_ok = false;

	if (op) {
		switch (answer) {
		case MFI_OP_READ_RESP:
			kind_ok = op->kind == TX_READ;
			break;
		case MFI_OP_RMA_ACK:
			kind_ok = op->kind == TX_WRITE || op->kind == TX_READ ||
				  op->kind == TX_ATOMIC || op->rndv;	/* rndv: the FIN */
			break;
		case MFI_OP_ATOMIC_RESP:
			kind_ok = op->kind == TX_ATOMIC &&
				  mfi_atomic_desc_decode(op->tag).kind != MFI_ATOMIC_WRITE;
			break;
		}
	}
	if (!kind_ok || op->conn != c || !op->hdr_sent || op->sent != op->total) {
		c->ep->cnt.answer_refused++;
		return NULL;
	}
	return op;
}

static void rx_first(struct mfi_conn *c, const struct mfi_hdr *h)
{
	struct mfi_ep *ep = c->ep;
	uint8_t *p;
	int err;

	if (c->cur.kind == RX_POSTED)	/* the previous message was cut short: a broken peer */
		mfi_rx_complete(ep, c->cur.rx, -FI_EIO);
	c->cur = (struct mfi_rxcur){ .kind = RX_NONE };
	switch (h->op) {
	case MFI_OP_MSG:
	case MFI_OP_TAGGED:
		rx_first_msg(c, h);
		break;
	case MFI_OP_WRITE: {
		uint64_t gen = 0;

		err = mfi_mr_target(ep->dom, h->key, h->addr, h->total, FI_REMOTE_WRITE, &p, &gen);
		c->cur = (struct mfi_rxcur){
			.kind = RX_WRITE, .dst = err ? NULL : p, .total = h->total, .status = err,
			.req_id = h->req_id, .data = h->data, .has_data = h->flags & MFI_F_DATA,
			.key = h->key, .gen = gen,
		};
		break;
	}
	case MFI_OP_READ_REQ: {
		struct mfi_txop *resp;
		uint64_t gen = 0;

		err = mfi_mr_target(ep->dom, h->key, h->addr, h->total, FI_REMOTE_READ, &p, &gen);
		if (!err)	/* counted as it is served: the region is read from now on */
			mfi_cntr_count(ep, MFI_CNTR_REMOTE_READ, 0);
		if (err || !h->total) {
			queue_internal(c, TX_RMA_ACK, h->req_id, -err, NULL, 0);
		} else {
			resp = queue_internal(c, TX_READRESP, h->req_id, 0, p, h->total);
			if (resp) {
				resp->mr_key = h->key;
				resp->mr_gen = gen;
			}
		}
		break;
	}
	case MFI_OP_READ_RESP: {
		struct mfi_txop *rd = answered_op(c, h->req_id, MFI_OP_READ_RESP);

		if (rd && h->total != rd->rlen) {	/* not what was asked for */
			ep->cnt.answer_refused++;
			rd = NULL;
		}
		c->cur = (struct mfi_rxcur){
			.kind = RX_READRESP, .rd = rd, .total = h->total, .req_id = h->req_id,
		};
		break;
	}
	case MFI_OP_RMA_ACK: {
		struct mfi_txop *op = answered_op(c, h->req_id, MFI_OP_RMA_ACK);
		uint64_t st = h->total;

		if (op)
			mfi_rma_answer(ep, op, st ? -(int)(st < FI_ERRNO_MAX ? st : FI_EIO) : 0);
		break;
	}
	default:
		if (!(h->flags & MFI_F_FIRST) || h->op == MFI_OP_HELLO)
			break;
		ep->cnt.bad_msgs++;	/* a first chunk of nothing we know */
		c->cur.kind = RX_DROP;
		break;
	}
}

/* What an atomic needs of the target's region: read, write, or both when it fetches. */
static uint64_t atomic_access(const struct mfi_atomic_desc *d)
{
	if (d->op == FI_ATOMIC_READ)
		return FI_REMOTE_READ;
	return d->kind == MFI_ATOMIC_WRITE ? FI_REMOTE_WRITE : FI_REMOTE_READ | FI_REMOTE_WRITE;
}

/* Operand bytes of an ATOMIC: none for ATOMIC_READ, twice count for the compare family. */
static uint64_t atomic_payload(const struct mfi_atomic_desc *d, size_t size)
{
	uint64_t b = (uint64_t)d->count * size;

	if (d->op == FI_ATOMIC_READ)
		return 0;
	return d->kind == MFI_ATOMIC_COMPARE ? 2 * b : b;
}

/*
 * An atomic at its target, in one chunk: checked (operation, count, key,
 * bounds, rights), applied to the registered region, answered on the same
 * connection with the original values (fetching) or an RMA_ACK.
 */
static void rx_atomic(struct mfi_conn *c, const struct mfi_hdr *h, const uint8_t *p, uint32_t len)
{
	struct mfi_ep *ep = c->ep;
	struct mfi_atomic_desc d = mfi_atomic_desc_decode(h->tag);
	size_t size = mfi_atomic_dtsize(d.datatype), max = 0;
	uint64_t bytes = (uint64_t)d.count * size;
	struct mfi_txop *resp = NULL;
	uint8_t *dst = NULL;
	int err;

	err = mfi_atomic_valid(d.kind, d.datatype, d.op, &max);
	if (!err && (!d.count || d.count > max || len != atomic_payload(&d, size) ||
		     !(h->flags & MFI_F_LAST)))
		err = -FI_EINVAL;
	if (!err)
		err = mfi_mr_target(ep->dom, h->key, h->addr, bytes, atomic_access(&d), &dst, NULL);
	if (!err && d.kind != MFI_ATOMIC_WRITE) {
		resp = calloc(1, sizeof(*resp) + bytes);
		err = resp ? 0 : -FI_ENOMEM;
	}
	if (!err)
		err = mfi_atomic_apply(d.datatype, d.op, dst, p, p + bytes, resp ? resp + 1 : NULL,
				       d.count);
	if (err || !resp) {
		free(resp);
		queue_internal(c, TX_RMA_ACK, h->req_id, -err, NULL, 0);
	} else {
		resp->kind = TX_ATOMIC_RESP;
		resp->req_id = h->req_id;
		resp->iov[0] = (struct iovec){ resp + 1, bytes };
		resp->iov_count = 1;
		resp->total = bytes;
		mfi_conn_queue(c, resp);
	}
	if (!err)	/* fi_endpoint(3): fetching and compare atomics are remote reads */
		mfi_cntr_count(ep, d.kind == MFI_ATOMIC_WRITE ? MFI_CNTR_REMOTE_WRITE :
				   MFI_CNTR_REMOTE_READ, 0);
	if (!err && (h->flags & MFI_F_DATA) && ep->rxcq) {
		struct mfi_cqe e = { .src = conn_src(c) };

		e.e.flags = FI_ATOMIC | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA;
		e.e.data = h->data;
		mfi_cqring_push(&ep->rxcq->ring, &e);
	}
}

/* The original values of a fetching atomic: into its result buffers, and done. */
static void rx_atomic_resp(struct mfi_conn *c, const struct mfi_hdr *h, const uint8_t *p,
			   uint32_t len)
{
	struct mfi_txop *op = answered_op(c, h->req_id, MFI_OP_ATOMIC_RESP);
	struct mfi_rxop tmp = { 0 };
	struct mfi_atomic_desc d;

	if (!op)
		return;
	d = mfi_atomic_desc_decode(op->tag);
	if (len != (uint64_t)d.count * mfi_atomic_dtsize(d.datatype)) {
		c->ep->cnt.answer_refused++;	/* not the size of what was asked */
		return;
	}
	tmp.iov_count = op->res_count;
	memcpy(tmp.iov, op->res, sizeof(tmp.iov));
	iov_scatter(&tmp, 0, p, len);
	mfi_rma_answer(c->ep, op, 0);
}

static void rx_write_done(struct mfi_conn *c)
{
	struct mfi_ep *ep = c->ep;

	queue_internal(c, TX_RMA_ACK, c->cur.req_id, -c->cur.status, NULL, 0);
	if (!c->cur.status)	/* the bytes are all in place */
		mfi_cntr_count(ep, MFI_CNTR_REMOTE_WRITE, 0);
	if (!c->cur.status && c->cur.has_data && ep->rxcq) {
		struct mfi_cqe e = { .src = conn_src(c) };

		e.e.flags = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA;
		e.e.data = c->cur.data;
		e.e.len = c->cur.total;
		mfi_cqring_push(&ep->rxcq->ring, &e);
	}
}

void mfi_rx_chunk(struct mfi_conn *c, const struct mfi_hdr *h, const uint8_t *payload,
		  uint32_t len)
{
	struct mfi_rxcur *cur = &c->cur;

	if (!c->ep)
		return;		/* a passive endpoint's connection is not read before fi_accept */
	switch (h->op) {
	case MFI_OP_HELLO:
		rx_hello(c, payload, len);
		return;
	case MFI_OP_ATOMIC:		/* one chunk, between messages */
		rx_atomic(c, h, payload, len);
		return;
	case MFI_OP_ATOMIC_RESP:
		rx_atomic_resp(c, h, payload, len);
		return;
	case MFI_OP_VERIFY:		/* zero-length, between messages */
		mfi_ep_verify_ask(c, h->data);
		return;
	case MFI_OP_VERIFY_RESP:
		mfi_ep_verify_answer(c, h->data, h->tag == 1);
		return;
	default:
		break;
	}
	if (h->flags & MFI_F_FIRST)
		rx_first(c, h);
	else if (cur->kind == RX_NONE)
		c->ep->cnt.bad_msgs++;	/* a chunk of no message */
	/* Never past what the first chunk announced. */
	if (cur->off > cur->total || len > cur->total - cur->off)
		len = cur->off <= cur->total ? (uint32_t)(cur->total - cur->off) : 0;
	switch (cur->kind) {
	case RX_POSTED:
		iov_scatter(cur->rx, cur->off, payload, len);
		c->ep->traffic.rx_staged += len;
		break;
	case RX_UNEXP:
		if (!cur->ux->discard)
			memcpy(cur->ux->buf + cur->off, payload, len);
		c->ep->traffic.rx_staged += len;
		break;
	case RX_WRITE:
		/* The region closed midway: the rest is not written, the writer told. */
		if (cur->dst && !mfi_mr_alive(c->ep->dom, cur->key, cur->gen)) {
			cur->dst = NULL;
			cur->status = -FI_EACCES;
			cur->gone = true;
		}
		if (cur->dst)
			memcpy(cur->dst + cur->off, payload, len);
		else if (cur->gone)
			c->ep->cnt.mr_gone++;
		break;
	case RX_READRESP:
		if (cur->rd) {
			struct mfi_rxop tmp = { .iov_count = cur->rd->iov_count };

			memcpy(tmp.iov, cur->rd->iov, sizeof(tmp.iov));
			iov_scatter(&tmp, cur->off, payload, len);
		}
		break;
	default:
		return;
	}
	cur->off += len;
	if (!(h->flags & MFI_F_LAST))
		return;
	switch (cur->kind) {
	case RX_POSTED:
		mfi_rx_complete(c->ep, cur->rx, 0);
		break;
	case RX_UNEXP:
		cur->ux->complete = true;
		cur->ux->received = cur->off;
		if (cur->ux->discard)
			mfi_unexp_free(cur->ux);
		else if (cur->ux->waiting)
			deliver_unexp(c->ep, cur->ux, cur->ux->waiting);
		break;
	case RX_WRITE:
		rx_write_done(c);
		break;
	case RX_READRESP:
		if (cur->rd && mfi_rma_peek(c->ep, cur->req_id) == cur->rd) {
			int st = 0;

			if (h->flags & MFI_F_ABORT)
				st = -(int)(h->data && h->data < FI_ERRNO_MAX ? h->data : FI_EIO);
			else if (cur->off != cur->total)
				st = -FI_EIO;
			mfi_rma_answer(c->ep, cur->rd, st);
		}
		break;
	default:
		break;
	}
	cur->kind = RX_NONE;
}
