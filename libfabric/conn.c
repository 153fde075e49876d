// SPDX-License-Identifier: MIT
/*
 * A connection: one libmroc QP and its region (credit words, MFI_RX_SLOTS
 * receive slots, MFI_TX_SLOTS staging slots), the send queue of operations
 * and the flow control that keeps every SEND landing in a posted receive
 * (mrocd would otherwise answer RNR and retry a millisecond later).
 *
 * Credits: each side posts all its receive slots before connecting, so a
 * sender may have MFI_RX_SLOTS SENDs unconsumed at the peer.  The receiver
 * counts slots it has processed and reposted ("freed") and tells the count in
 * every header it sends; when it has nothing to send and half its slots have
 * been freed since it last told, it RDMA-WRITEs the count into the sender's
 * credit word (no receive consumed, so credit updates can never deadlock).
 *
 * Chunks of one operation go out back to back; SENDs complete in order, so
 * staging slots are a ring and an operation is done when its last slot is.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/random.h>

#include <mroc/mroc.h>

#include "mrocfi.h"

static const uint8_t kind_op[] = {
	[TX_MSG] = MFI_OP_MSG, [TX_TAGGED] = MFI_OP_TAGGED, [TX_WRITE] = MFI_OP_WRITE,
	[TX_READ] = MFI_OP_READ_REQ, [TX_READRESP] = MFI_OP_READ_RESP,
	[TX_RMA_ACK] = MFI_OP_RMA_ACK, [TX_HELLO] = MFI_OP_HELLO,
	[TX_ATOMIC] = MFI_OP_ATOMIC, [TX_ATOMIC_RESP] = MFI_OP_ATOMIC_RESP,
	[TX_VERIFY] = MFI_OP_VERIFY, [TX_VERIFY_RESP] = MFI_OP_VERIFY_RESP,
};

static struct mroc_qp_attr qp_attr(void)
{
	struct mroc_qp_attr a = {
		.sz = sizeof(a), .sq_depth = MFI_TX_SLOTS + 16 + MFI_RNDV_MAX,
		.rq_depth = MFI_RX_SLOTS,
	};
	char *mode = NULL;
	int paths = 0;

	if (fi_param_get_str(&mfi_prov, "mode", &mode) == FI_SUCCESS && mode &&
	    !strcmp(mode, "rocev2"))
		a.mode = MROC_QP_ROCEV2;
	if (fi_param_get_int(&mfi_prov, "paths", &paths) == FI_SUCCESS && paths > 0 && paths <= 16)
		a.paths = (uint8_t)paths;
	return a;
}

static void link_conn(struct mfi_conn *c)
{
	if (c->ep) {
		c->next = c->ep->conns;
		c->ep->conns = c;
	}
}

int mfi_conn_create(struct mfi_ep *ep, struct mfi_domain *dom, struct mfi_conn **out)
{
	struct mroc_qp_attr attr = qp_attr();
	struct mfi_conn *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return -FI_ENOMEM;
	c->ep = ep;
	c->dom = dom;
	c->fiaddr = FI_ADDR_NOTAVAIL;
	c->handle.fclass = FI_CLASS_CONNREQ;
	c->verified = true;	/* until a HELLO on a connection the peer opened says otherwise */
	c->held = calloc(MFI_RX_SLOTS, sizeof(*c->held));
	if (!c->held || getrandom(&c->nonce, sizeof(c->nonce), 0) != sizeof(c->nonce)) {
		free(c->held);
		free(c);
		return -FI_ENOMEM;
	}
	c->qp = mroc_qp_create(dom->ctx, &attr);
	if (!c->qp)
		goto err_errno;
	c->mr = mroc_mr_alloc(dom->ctx, MFI_REGION_LEN,
			      MROC_ACCESS_LOCAL_WRITE | MROC_ACCESS_REMOTE_WRITE);
	if (!c->mr)
		goto err_errno;
	c->base = mroc_mr_addr(c->mr);
	for (uint32_t i = 0; i < MFI_RX_SLOTS; i++) {
		struct mroc_recv_wr wr = {
			.wr_id = i,
			.sg = { c->base + MFI_OFF_RX + (size_t)i * MFI_SLOT_SIZE, MFI_SLOT_SIZE,
				mroc_mr_lkey(c->mr) },
		};

		err = mroc_post_recv(c->qp, &wr);
		if (err)
			goto err;
	}
	dom->refs++;
	link_conn(c);
	if (ep)
		mfi_ep_watch(ep, c);
	*out = c;
	return 0;
err_errno:
	err = -errno;
err:
	if (c->mr)
		mroc_mr_dereg(c->mr);
	if (c->qp)
		mroc_qp_destroy(c->qp);
	free(c->held);
	free(c);
	return err == -ENOENT || err == -ECONNREFUSED ? -FI_ENODEV :
	       mfi_mroc_err(err, "a connection's QP and region");
}

int mfi_conn_create_self(struct mfi_ep *ep, struct mfi_conn **out)
{
	struct mfi_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return -FI_ENOMEM;
	c->selfbuf = malloc(MFI_SLOT_SIZE);
	if (!c->selfbuf) {
		free(c);
		return -FI_ENOMEM;
	}
	c->ep = ep;
	c->self = true;
	c->verified = true;
	c->state = MFI_CONN_UP;
	c->peer = ep->addr;
	c->peer_known = c->hello_seen = true;
	c->fiaddr = FI_ADDR_NOTAVAIL;
	link_conn(c);
	*out = c;
	return 0;
}

static void free_op(struct mfi_conn *c, struct mfi_txop *op, int err)
{
	if (c->ep && op->user)
		mfi_txop_done(c->ep, op, err);
	else if (c->ep)
		mfi_txop_put(c->ep, op);
	else
		free(op);
}

/* The last chunk of an operation has been sent (its SEND completed, or never will). */
static void last_sent(struct mfi_conn *c, struct mfi_txop *op, int err)
{
	if (op->kind == TX_HELLO && !err && c->ep)
		mfi_ep_hello_sent(c);
	if (!mfi_txop_answered(op)) {
		free_op(c, op, err);
		return;
	}
	/* Done when the answer has come too: whichever is second completes it. */
	op->sends_done = true;
	if (op->answered) {
		if (c->ep)
			mfi_txop_done(c->ep, op, op->status);
		else
			free_op(c, op, err);
	}
}

/* Everything queued or in flight ends with err (a connection that failed or closes). */
void mfi_conn_fail(struct mfi_conn *c, int err)
{
	struct mfi_txop *op;

	c->state = MFI_CONN_DOWN;
	for (; c->tx_head != c->tx_tail; c->tx_head++) {
		struct mfi_txslot *s = &c->txs[c->tx_head % MFI_TX_SLOTS];

		/* An operation still queued is failed below, not here. */
		if (s->last && s->op)
			last_sent(c, s->op, err);
		s->op = NULL;
	}
	while ((op = c->txq)) {
		c->txq = op->next;
		free_op(c, op, err);
	}
	c->txq_tail = NULL;
	c->nheld = 0;
	mfi_rx_conn_gone(c, err);
	if (c->ep)
		mfi_rma_fail_conn(c->ep, c, err);
}

/* A connection whose peer is not who it claims: closed, nothing of it read. */
void mfi_conn_refuse(struct mfi_conn *c)
{
	if (c->state == MFI_CONN_DOWN)
		return;
	if (c->qp)
		mroc_qp_destroy(c->qp);	/* the peer sees DISCONNECTED */
	c->qp = NULL;
	mfi_conn_fail(c, -FI_ECONNREFUSED);
}

void mfi_conn_destroy(struct mfi_conn *c)
{
	if (!c)
		return;
	mfi_conn_fail(c, -FI_ECANCELED);
	if (c->connreq)
		mfi_connreq_forget(c);	/* a FI_CONNREQ's handle names nothing now */
	if (c->qp)
		mroc_qp_destroy(c->qp);
	if (c->mr)
		mroc_mr_dereg(c->mr);
	if (c->dom && --c->dom->refs == 0 && c->dom->orphan) {
		mroc_close(c->dom->ctx);
		free(c->dom);
	}
	free(c->selfbuf);
	free(c->held);
	free(c);
}

int mfi_conn_listen(struct mfi_conn *c, uint64_t service)
{
	int err = mroc_qp_listen(c->qp, service);

	if (!err)
		c->state = MFI_CONN_LISTEN;
	return mfi_mroc_err(err, "listening on the service");
}

/*
 * How long a connect may go unanswered (FI_MROC_CONNECT_TIMEOUT_MS, default 30 s:
 * above the 25 s mrocd spends retrying a peer whose listeners are busy).  mrocd
 * gives up on a peer that never answers only where it can send to it: a connect to
 * its own address (another endpoint of this host) goes nowhere and is never
 * answered, so without this its operations would wait for ever.
 */
static int64_t connect_timeout_ms(void)
{
	int ms = MFI_CONNECT_TIMEOUT_MS;

	if (fi_param_get_int(&mfi_prov, "connect_timeout_ms", &ms) != FI_SUCCESS || ms < 0)
		ms = MFI_CONNECT_TIMEOUT_MS;
	return ms;
}

/* A connect (and its retries) still unanswered past FI_MROC_CONNECT_TIMEOUT_MS. */
bool mfi_conn_late(const struct mfi_conn *c)
{
	return c->state == MFI_CONN_CONNECTING && c->connect_by && mfi_now_ms() > c->connect_by;
}

int mfi_conn_connect(struct mfi_conn *c, const struct mfi_addr *peer)
{
	char ip[INET6_ADDRSTRLEN];
	int64_t ms = connect_timeout_ms();
	int err;

	mfi_addr_ntop(peer, ip, sizeof(ip));
	err = mroc_qp_connect(c->qp, ip, mfi_addr_service(peer));
	if (err)
		return mfi_mroc_err(err, "connecting");
	c->state = MFI_CONN_CONNECTING;
	c->connect_by = ms ? mfi_now_ms() + ms : 0;
	c->peer = *peer;
	c->peer_known = true;
	return 0;
}

/* ---- sending ------------------------------------------------------------------ */

static uint32_t credits(const struct mfi_conn *c)
{
	/* The peer's count may also arrive by RDMA WRITE into our credit word. */
	uint32_t w = __atomic_load_n((const uint32_t *)(c->base + MFI_OFF_CREDIT_IN),
				     __ATOMIC_ACQUIRE);
	uint32_t freed = (int32_t)(w - c->peer_freed) > 0 ? w : c->peer_freed;

	return MFI_RX_SLOTS + freed - (uint32_t)c->sends;
}

static bool can_send(const struct mfi_conn *c)
{
	return c->self || (c->tx_tail - c->tx_head < MFI_TX_SLOTS && credits(c) > 0);
}

/* Gather len bytes at offset off of an iov into dst. */
static void iov_gather(const struct iovec *iov, size_t n, uint64_t off, uint8_t *dst, size_t len)
{
	for (size_t i = 0; i < n && len; i++) {
		size_t l;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		l = iov[i].iov_len - off < len ? iov[i].iov_len - off : len;
		memcpy(dst, (const uint8_t *)iov[i].iov_base + off, l);
		dst += l;
		len -= l;
		off = 0;
	}
}

/*
 * One SEND of a slot holding h and len bytes at src (already copied by the
 * caller when src is NULL).  0, or -EAGAIN when the QP's ring is full.
 */
static int post_slot(struct mfi_conn *c, struct mfi_hdr *h, struct mfi_txop *op, bool last)
{
	uint32_t idx = c->tx_tail % MFI_TX_SLOTS;
	uint8_t *slot = c->self ? c->selfbuf : c->base + MFI_OFF_TX + (size_t)idx * MFI_SLOT_SIZE;
	struct mroc_send_wr wr;
	int err;

	h->credits = c->freed;
	mfi_hdr_encode(h, slot);
	if (c->self) {
		/* In-process: the chunk is consumed before this returns. */
		if (last && op && mfi_txop_answered(op))
			op->sends_done = true;	/* its answer is queued behind it */
		/* op ends in mfi_conn_kick, once off the queue (freed here, it was read after). */
		mfi_rx_chunk(c, h, slot + MFI_HDR_LEN, h->len);
		return 0;
	}
	wr = (struct mroc_send_wr){
		.wr_id = idx, .opcode = MROC_WR_SEND, .flags = MROC_SEND_SIGNALED,
		.sg = { slot, MFI_HDR_LEN + h->len, mroc_mr_lkey(c->mr) },
	};
	err = mroc_post_send(c->qp, &wr);
	if (err)
		return err;
	c->txs[idx] = (struct mfi_txslot){ .op = op, .last = last };
	c->tx_tail++;
	c->sends++;
	c->told = c->freed;
	return 0;
}

static uint8_t *slot_payload(struct mfi_conn *c)
{
	if (c->self)
		return c->selfbuf + MFI_HDR_LEN;
	return c->base + MFI_OFF_TX + (size_t)(c->tx_tail % MFI_TX_SLOTS) * MFI_SLOT_SIZE +
	       MFI_HDR_LEN;
}

/* The next chunk of op; true when it went out. */
static bool send_chunk(struct mfi_conn *c, struct mfi_txop *op)
{
	uint64_t left = op->total - op->sent;
	uint32_t len = left < MFI_CHUNK ? (uint32_t)left : (uint32_t)MFI_CHUNK;
	bool last = op->sent + len == op->total;
	struct mfi_hdr h = {
		.op = kind_op[op->kind], .len = len, .tag = op->tag, .data = op->data,
		.key = op->rkey, .addr = op->raddr, .req_id = op->req_id,
		.total = op->kind == TX_READ ? op->rlen : op->total,
	};

	if (op->kind == TX_RMA_ACK)
		h.total = (uint64_t)op->status;
	/* A read's region closed midway: the rest is not read, the reader told why. */
	if (op->kind == TX_READRESP && (!c->ep || !mfi_mr_alive(c->ep->dom, op->mr_key, op->mr_gen))) {
		if (c->ep)
			c->ep->cnt.mr_gone++;
		h.flags = (op->hdr_sent ? 0 : MFI_F_FIRST) | MFI_F_LAST | MFI_F_ABORT;
		h.len = 0;
		h.data = FI_EACCES;
		if (post_slot(c, &h, op, true))
			return false;
		op->sent = op->total;
		op->hdr_sent = true;
		return true;
	}
	h.flags = (op->hdr_sent ? 0 : MFI_F_FIRST) | (last ? MFI_F_LAST : 0) |
		  (op->flags & FI_REMOTE_CQ_DATA ? MFI_F_DATA : 0);
	if (op->rndv) {
		/* The RTS: the receiver READs the message from our region (rndv.c). */
		h.flags |= MFI_F_FIRST | MFI_F_LAST | MFI_F_RNDV;
		h.len = 0;
		h.key = op->zc_rkey;
		h.addr = op->zc_off;
		if (post_slot(c, &h, op, true))
			return false;
		op->sent = op->total;
		op->hdr_sent = true;
		if (c->ep)
			c->ep->traffic.rndv_sent++;
		return true;
	}
	iov_gather(op->iov, op->iov_count, op->sent, slot_payload(c), len);
	if (post_slot(c, &h, op, last))
		return false;
	if (c->ep && (op->kind == TX_MSG || op->kind == TX_TAGGED))
		c->ep->traffic.tx_staged += len;
	op->sent += len;
	op->hdr_sent = true;
	return true;
}

/*
 * A message that could go by rendezvous waits at the head of the queue for the
 * peer's HELLO, which says whether it can; without that, it is staged.  False:
 * wait (the HELLO has not come).
 */
static bool rndv_decided(struct mfi_conn *c, struct mfi_txop *op)
{
	if (!op->rndv || op->hdr_sent)
		return true;
	if (!c->hello_seen)
		return false;
	if (!c->peer_rndv && c->ep) {
		mfi_rma_take(c->ep, op->req_id);
		op->req_id = 0;
		op->rndv = false;
	}
	return true;
}

/* Send what the queue holds while slots, credits and the QP's ring allow. */
void mfi_conn_kick(struct mfi_conn *c)
{
	struct mfi_txop *op;

	if (c->state != MFI_CONN_UP)
		return;
	while ((op = c->txq) && can_send(c)) {
		/* HELLO is always first: it names us, and the peer needs it for credits. */
		if (!rndv_decided(c, op) || !send_chunk(c, op))
			break;
		if (op->hdr_sent && op->sent == op->total) {
			c->txq = op->next;
			if (!c->txq)
				c->txq_tail = NULL;
			op->next = NULL;
			/*
			 * In-process, its last chunk was consumed as it was posted: it is done
			 * now (answered kinds wait for their answer).  Ended inside post_slot,
			 * the pool's op->next (the free list) became the queue, and the first
			 * fi_send to our own address sent the pool's operations for ever.
			 */
			if (c->self && !mfi_txop_answered(op))
				free_op(c, op, 0);
		}
	}
}

void mfi_conn_queue(struct mfi_conn *c, struct mfi_txop *op)
{
	op->conn = c;
	op->next = NULL;
	if (c->txq_tail)
		c->txq_tail->next = op;
	else
		c->txq = op;
	c->txq_tail = op;
}

/*
 * An inject that can leave at once (connected, nothing queued, a slot and a
 * credit free): copied straight into a staging slot, no operation allocated.
 */
bool mfi_conn_post_inject(struct mfi_conn *c, enum mfi_txkind kind, const void *buf, size_t len,
			  uint64_t tag, uint64_t data, uint64_t flags, uint64_t key, uint64_t addr)
{
	struct mfi_hdr h = {
		.op = kind_op[kind], .flags = MFI_F_FIRST | MFI_F_LAST, .len = (uint32_t)len,
		.total = len, .tag = tag, .data = data, .key = key, .addr = addr,
	};

	if (c->state != MFI_CONN_UP || c->txq || !can_send(c) || len > MFI_CHUNK)
		return false;
	if (flags & FI_REMOTE_CQ_DATA)
		h.flags |= MFI_F_DATA;
	memcpy(slot_payload(c), buf, len);
	if (post_slot(c, &h, NULL, true))
		return false;
	if (c->ep && (kind == TX_MSG || kind == TX_TAGGED))
		c->ep->traffic.tx_staged += len;
	return true;
}

/* HELLO, first in the queue; an MSG connection's carries cm_len bytes of CM private data. */
int mfi_send_hello(struct mfi_conn *c, const void *cm, size_t cm_len, uint16_t flags)
{
	struct mfi_addr me = c->ep ? c->ep->addr : c->pep->addr;
	/* An IPv6 name: its 16 bytes after the hello (proto.h), IPv4's layout unchanged. */
	size_t ext = mfi_addr_is4(&me) ? 0 : MFI_HELLO_ADDR6_LEN;
	size_t len = sizeof(struct mfi_hello) + ext + cm_len;
	struct mfi_txop *op = calloc(1, sizeof(*op) + len);
	struct mfi_hello *hello = (struct mfi_hello *)(op + 1);

	if (!op)
		return -FI_ENOMEM;
	if (mfi_rndv_enabled())
		flags |= MFI_HELLO_RNDV;
	if (ext)
		flags |= MFI_HELLO_ADDR6;
	*hello = (struct mfi_hello){
		.ip = ext ? 0 : mfi_addr_ip4(&me), .port = htole16(me.port),
		.credit_rkey = htole32(mroc_mr_rkey(c->mr)), .nonce = htole64(c->nonce),
		.flags = htole16(flags),
	};
	if (ext)
		memcpy(hello + 1, me.ip.s6_addr, ext);
	if (cm_len)
		memcpy((uint8_t *)(hello + 1) + ext, cm, cm_len);
	op->kind = TX_HELLO;
	op->iov[0] = (struct iovec){ hello, len };
	op->iov_count = 1;
	op->total = len;
	/* First in the queue, whatever was posted while connecting. */
	op->conn = c;
	op->next = c->txq;
	c->txq = op;
	if (!c->txq_tail)
		c->txq_tail = op;
	return 0;
}

/* ---- completions ---------------------------------------------------------------- */

static void send_done(struct mfi_conn *c, const struct mroc_wc *wc)
{
	struct mfi_txslot *s;

	if (c->tx_head == c->tx_tail)
		return;		/* not ours (cannot happen: SENDs complete in order) */
	s = &c->txs[c->tx_head % MFI_TX_SLOTS];
	if (wc->status != MROC_WC_SUCCESS) {
		/*
		 * This slot too: mfi_conn_fail ends every slot from tx_head on (taken
		 * first, the operation whose SEND failed was never freed).
		 */
		mfi_conn_fail(c, -FI_EIO);
		if (c->ep)
			mfi_ep_conn_event(c, FI_SHUTDOWN, -FI_EIO);
		return;
	}
	c->tx_head++;
	if (s->last && s->op)
		last_sent(c, s->op, 0);
	s->op = NULL;
}

static void credit_update(struct mfi_conn *c)
{
	struct mroc_send_wr wr;

	if (c->freed - c->told < MFI_RX_SLOTS / 2 || !c->hello_seen || c->state != MFI_CONN_UP)
		return;
	/* Nothing queued would carry it soon: write it into the peer's credit word. */
	__atomic_store_n((uint32_t *)(c->base + MFI_OFF_CREDIT_OUT), c->freed, __ATOMIC_RELEASE);
	wr = (struct mroc_send_wr){
		.opcode = MROC_WR_WRITE, .sg = { c->base + MFI_OFF_CREDIT_OUT, sizeof(uint32_t),
						 mroc_mr_lkey(c->mr) },
		.rkey = c->peer_rkey, .remote_offset = MFI_OFF_CREDIT_IN,
	};
	if (mroc_post_send(c->qp, &wr) == 0)
		c->told = c->freed;
}

/* What may be read on a connection whose peer's identity is not yet confirmed. */
static bool identity_op(uint8_t op)
{
	return op == MFI_OP_HELLO || op == MFI_OP_VERIFY || op == MFI_OP_VERIFY_RESP;
}

static void recv_done(struct mfi_conn *c, const struct mroc_wc *wc, bool held)
{
	uint32_t i = (uint32_t)wc->wr_id;
	uint8_t *slot = c->base + MFI_OFF_RX + (size_t)i * MFI_SLOT_SIZE;
	struct mroc_recv_wr wr = {
		.wr_id = i, .sg = { slot, MFI_SLOT_SIZE, mroc_mr_lkey(c->mr) },
	};
	struct mfi_hdr h;

	if (i >= MFI_RX_SLOTS || wc->status != MROC_WC_SUCCESS || c->state == MFI_CONN_DOWN)
		return;		/* flushed, or refused earlier in this batch: going away */
	if (mfi_hdr_decode(slot, wc->byte_len, &h) == 0) {
		/*
		 * Not read before the peer is who it says (kept in order, slot and all).
		 * HELLO and VERIFY(_RESP) never wait: two peers checking each other at
		 * once would otherwise each hold the other's question behind data.
		 */
		if (!held && !identity_op(h.op) && (c->nheld || !c->verified)) {
			if (c->nheld < MFI_RX_SLOTS)
				c->held[(c->held_head + c->nheld++) % MFI_RX_SLOTS] = *wc;
			return;
		}
		if ((int32_t)(h.credits - c->peer_freed) > 0)
			c->peer_freed = h.credits;
		if (c->ep)
			c->ep->cnt.rx_chunks++;
		mfi_rx_chunk(c, &h, slot + MFI_HDR_LEN, h.len);
	} else if (c->ep) {
		c->ep->cnt.bad_msgs++;
	}
	/* Processed (copied out): the slot goes back to the peer. */
	if (c->qp && mroc_post_recv(c->qp, &wr) == 0)
		c->freed++;
}

/* A connection just confirmed: what arrived meanwhile, in order. */
static void release_held(struct mfi_conn *c)
{
	while (c->verified && c->nheld && c->state != MFI_CONN_DOWN) {
		struct mroc_wc wc = c->held[c->held_head];

		c->held_head = (c->held_head + 1) % MFI_RX_SLOTS;
		c->nheld--;
		recv_done(c, &wc, true);
	}
}

/*
 * A passive endpoint's connection before FI_CONNREQ: its completions one at a
 * time until the client's HELLO (its first SEND) has come, which stays in its
 * slot, held, for the endpoint that accepts (release_held reads it first).
 * 1 with *cm, *cm_len the HELLO's private data (in the slot), 0 while it has
 * not come, -FI_ECONNABORTED if the client went away (or spoke nonsense) first.
 */
int mfi_conn_await_hello(struct mfi_conn *c, const uint8_t **cm, size_t *cm_len)
{
	struct mroc_wc wc;
	struct mfi_hdr h;

	while (mroc_poll_cq(c->qp, &wc, 1) == 1) {
		const uint8_t *slot, *ip6;
		struct mfi_hello hello;

		if (wc.opcode == MROC_WC_DISCONNECTED || wc.opcode == MROC_WC_EVENT_ERROR)
			return -FI_ECONNABORTED;
		if (wc.opcode != MROC_WC_RECV)
			continue;
		if (wc.wr_id >= MFI_RX_SLOTS || wc.status != MROC_WC_SUCCESS)
			return -FI_ECONNABORTED;
		slot = c->base + MFI_OFF_RX + (size_t)wc.wr_id * MFI_SLOT_SIZE;
		if (mfi_hdr_decode(slot, wc.byte_len, &h) || h.op != MFI_OP_HELLO ||
		    mfi_hello_decode(slot + MFI_HDR_LEN, h.len, &hello, &ip6, cm, cm_len) ||
		    *cm_len > MFI_CM_DATA_MAX)
			return -FI_ECONNABORTED;
		c->held[(c->held_head + c->nheld++) % MFI_RX_SLOTS] = wc;
		return 1;
	}
	return 0;
}

/*
 * A rejected connection request: true once its HELLO (fi_reject's data) has
 * reached the client, or never will; the passive endpoint then closes it.
 */
bool mfi_conn_reject_sent(struct mfi_conn *c)
{
	struct mroc_wc wc[16];
	int n;

	mfi_conn_kick(c);
	while (c->qp && (n = mroc_poll_cq(c->qp, wc, 16)) > 0)
		for (int i = 0; i < n; i++)
			if (wc[i].opcode == MROC_WC_SEND || wc[i].opcode == MROC_WC_DISCONNECTED ||
			    wc[i].opcode == MROC_WC_EVENT_ERROR)
				return true;
	return !c->qp || c->state == MFI_CONN_DOWN;
}

/*
 * A refused connect that asking again cannot mend, as the error its operations
 * and the EQ get; 0 for the others (no listener yet, busy, no answer).
 */
static int conn_refused_err(const struct mroc_wc *wc)
{
	if (wc->opcode != MROC_WC_EVENT_ERROR || wc->status != MROC_WC_CONNECT_ERR)
		return 0;
	switch (wc->conn_err) {
	case MROC_CONN_ERR_SECURITY:
		return -FI_EACCES;	/* the daemons' security modes differ */
	case MROC_CONN_ERR_BAD_PARAM:
		return -FI_EINVAL;	/* the peer refused the QP's mode, MTU or paths */
	default:
		return 0;
	}
}

bool mfi_conn_refused_for_good(const struct mroc_wc *wc)
{
	return conn_refused_err(wc) != 0;
}

/* Run one connection: its completions, then whatever it can send. */
int mfi_conn_progress(struct mfi_conn *c)
{
	struct mroc_wc wc[16];
	int n, err, total = 0;

	if (c->self) {
		mfi_conn_kick(c);
		return 0;
	}
	release_held(c);
	while (c->qp && c->state != MFI_CONN_DOWN && (n = mroc_poll_cq(c->qp, wc, 16)) > 0) {
		for (int i = 0; i < n; i++) {
			switch (wc[i].opcode) {
			case MROC_WC_SEND:
				send_done(c, &wc[i]);
				break;
			case MROC_WC_RECV:
				recv_done(c, &wc[i], false);
				break;
			case MROC_WC_READ:
				mfi_rndv_read_done(c, &wc[i]);
				break;
			case MROC_WC_CONNECTED:
				c->state = MFI_CONN_UP;
				mfi_ep_conn_event(c, FI_CONNECTED, 0);
				break;
			case MROC_WC_DISCONNECTED:
			case MROC_WC_EVENT_ERROR:
				if (c->state == MFI_CONN_DOWN)
					break;
				/* Refused while connecting: its queue moves to a new attempt. */
				if (wc[i].opcode == MROC_WC_EVENT_ERROR && mfi_ep_conn_refused(c, &wc[i])) {
					c->state = MFI_CONN_DOWN;
					break;
				}
				if (mfi_conn_late(c)) {
					mfi_conn_fail(c, -FI_ETIMEDOUT);
					mfi_ep_conn_event(c, FI_SHUTDOWN, -FI_ETIMEDOUT);
					break;
				}
				err = conn_refused_err(&wc[i]);
				mfi_conn_fail(c, err ? err : -FI_ECONNABORTED);
				mfi_ep_conn_event(c, FI_SHUTDOWN, wc[i].opcode == MROC_WC_EVENT_ERROR ?
						  (err ? err : -FI_ECONNREFUSED) : 0);
				break;
			default:
				/* A credit WRITE failing means the connection failed. */
				if (wc[i].status != MROC_WC_SUCCESS && c->state == MFI_CONN_UP) {
					mfi_conn_fail(c, -FI_EIO);
					mfi_ep_conn_event(c, FI_SHUTDOWN, -FI_EIO);
				}
				break;
			}
		}
		total += n;
	}
	if (mfi_conn_late(c)) {
		/* Never answered: the QP stops trying, the endpoint goes on (a new send dials
		 * again), an MSG endpoint's EQ says FI_ETIMEDOUT. */
		mroc_qp_destroy(c->qp);
		c->qp = NULL;
		mfi_conn_fail(c, -FI_ETIMEDOUT);
		mfi_ep_conn_event(c, FI_SHUTDOWN, -FI_ETIMEDOUT);
		return total;
	}
	mfi_rndv_pump(c);
	mfi_conn_kick(c);
	credit_update(c);
	return total;
}
