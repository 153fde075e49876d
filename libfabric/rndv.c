// SPDX-License-Identifier: MIT
/*
 * Rendezvous, the receiver's side (proto.h MFI_F_RNDV).  A message of more
 * than one chunk whose buffer is zero-copy memory (zcopy.c) is announced by
 * one header-only SEND (RTS): the sender's region, the message's offset in
 * it, its length, a req_id.  It is matched like any message (posted receive,
 * or unexpected until one is posted: PEEK, CLAIM and DISCARD see it as
 * usual); then the receiver posts one mroc RDMA READ of it:
 *  - straight into the receive's buffer when that lies in zero-copy memory
 *    (no copy on either side: the two mrocd move the bytes);
 *  - else into a bounce region of the receive's size, copied out at the end.
 * The READ's completion completes the receive and sends the FIN (an RMA_ACK
 * naming the sender's req_id, with a status); the sender's operation is done
 * with the FIN.  At most MFI_RNDV_MAX READs per connection are in flight;
 * the rest wait in order.  A peer announcing a message can only make us read
 * its own memory (its mrocd checks the rkey), into a receive it matched,
 * never past the receive's room.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <mroc/mroc.h>

#include "mrocfi.h"

void mfi_rndv_fin(struct mfi_conn *c, uint32_t req_id, int status)
{
	struct mfi_txop *op = calloc(1, sizeof(*op));

	if (!op)
		return;		/* the sender's operation then never completes: as a lost answer */
	op->kind = TX_RMA_ACK;
	op->req_id = req_id;
	op->status = status;
	mfi_conn_queue(c, op);
}

/* Copy len bytes into a receive's buffers from offset 0. */
static void scatter(struct mfi_rxop *rx, const uint8_t *src, uint64_t len)
{
	for (size_t i = 0; i < rx->iov_count && len; i++) {
		size_t l = rx->iov[i].iov_len < len ? rx->iov[i].iov_len : len;

		memcpy(rx->iov[i].iov_base, src, l);
		src += l;
		len -= l;
	}
}

static void finish(struct mfi_conn *c, struct mfi_rndv *r, int err)
{
	if (r->bounce) {
		if (!err)
			scatter(r->rx, mroc_mr_addr(r->bounce), r->len);
		mroc_mr_dereg(r->bounce);
	}
	if (c->ep)
		mfi_rx_complete(c->ep, r->rx, err);
	if (c->state == MFI_CONN_UP)
		mfi_rndv_fin(c, r->req_id, err ? FI_EIO : 0);
	free(r);
}

/* A READ for r; false when the QP's ring is full (r waits). */
static bool post_read(struct mfi_conn *c, struct mfi_rndv *r)
{
	struct mfi_zc zc;
	struct mroc_send_wr wr = {
		.opcode = MROC_WR_READ, .flags = MROC_SEND_SIGNALED,
		.rkey = r->rkey, .remote_offset = r->roff,
	};
	uint32_t i;
	int err;

	for (i = 0; i < MFI_RNDV_MAX && c->rd[i]; i++)
		;
	if (i == MFI_RNDV_MAX)
		return false;
	if (r->bounce) {
		wr.sg = (struct mroc_sge){ mroc_mr_addr(r->bounce), (uint32_t)r->len,
					   mroc_mr_lkey(r->bounce) };
	} else if (mfi_zc_find(c->ep->dom, r->rx->iov[0].iov_base, r->len, false, &zc)) {
		wr.sg = (struct mroc_sge){ zc.addr, (uint32_t)r->len, mroc_mr_lkey(zc.mr) };
	} else {
		finish(c, r, -FI_EIO);	/* its registration closed while it waited */
		return true;
	}
	wr.wr_id = MFI_WRID_RNDV | i;
	err = mroc_post_send(c->qp, &wr);
	if (err == -EAGAIN)
		return false;
	if (err) {
		finish(c, r, -FI_EIO);
		return true;
	}
	c->rd[i] = r;
	c->nrd++;
	if (r->bounce)
		c->ep->traffic.rndv_bounced += r->len;
	else
		c->ep->traffic.rndv_direct += r->len;
	return true;
}

/* Start what waits, in order, while READs may be added. */
void mfi_rndv_pump(struct mfi_conn *c)
{
	struct mfi_rndv *r;

	while ((r = c->rdq) && c->state == MFI_CONN_UP && c->nrd < MFI_RNDV_MAX) {
		c->rdq = r->next;
		if (!c->rdq)
			c->rdq_tail = NULL;
		r->next = NULL;
		if (!post_read(c, r)) {
			r->next = c->rdq;
			c->rdq = r;
			if (!r->next)
				c->rdq_tail = r;
			break;
		}
	}
}

/*
 * A rendezvous message matched rx (whose msg_* fields the caller set): read
 * what fits, complete rx when it is in (FI_ETRUNC if it did not all fit).
 */
void mfi_rndv_start(struct mfi_conn *c, struct mfi_rxop *rx, uint32_t req_id, uint32_t rkey,
		    uint64_t roff, uint64_t total)
{
	struct mfi_rndv *r;
	struct mfi_zc zc;

	if (!c->ep || c->state != MFI_CONN_UP) {
		if (c->ep)
			mfi_rx_complete(c->ep, rx, -FI_ECONNABORTED);
		return;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		mfi_rx_complete(c->ep, rx, -FI_ENOMEM);
		mfi_rndv_fin(c, req_id, FI_ENOMEM);
		return;
	}
	*r = (struct mfi_rndv){
		.rx = rx, .req_id = req_id, .rkey = rkey, .roff = roff,
		.len = total < rx->len ? total : rx->len,
	};
	if (!r->len || (rx->flags & FI_DISCARD)) {
		finish(c, r, 0);
		return;
	}
	if (rx->iov_count != 1 || !mfi_zc_find(c->ep->dom, rx->iov[0].iov_base, r->len, false, &zc)) {
		r->bounce = mroc_mr_alloc(c->ep->dom->ctx, r->len, MROC_ACCESS_LOCAL_WRITE);
		if (!r->bounce) {
			finish(c, r, -FI_ENOMEM);
			return;
		}
	}
	if (c->rdq_tail)
		c->rdq_tail->next = r;
	else
		c->rdq = r;
	c->rdq_tail = r;
	mfi_rndv_pump(c);
}

void mfi_rndv_read_done(struct mfi_conn *c, const struct mroc_wc *wc)
{
	uint64_t i = wc->wr_id & ~MFI_WRID_RNDV;
	struct mfi_rndv *r;

	if (!(wc->wr_id & MFI_WRID_RNDV) || i >= MFI_RNDV_MAX || !(r = c->rd[i]))
		return;		/* flushed after the connection failed: already ended */
	c->rd[i] = NULL;
	c->nrd--;
	finish(c, r, wc->status == MROC_WC_SUCCESS ? 0 : -FI_EIO);
	mfi_rndv_pump(c);
}

/* The connection failed or closes: every READ in flight or waiting ends with err. */
void mfi_rndv_conn_gone(struct mfi_conn *c, int err)
{
	struct mfi_rndv *r;

	for (uint32_t i = 0; i < MFI_RNDV_MAX; i++) {
		if ((r = c->rd[i])) {
			c->rd[i] = NULL;
			finish(c, r, err);
		}
	}
	c->nrd = 0;
	while ((r = c->rdq)) {
		c->rdq = r->next;
		finish(c, r, err);
	}
	c->rdq_tail = NULL;
}
