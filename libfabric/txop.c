// SPDX-License-Identifier: MIT
/*
 * An endpoint's operations: the pool every send, RMA and atomic is taken
 * from, their completions on the transmit CQ, and the table (by req_id) of
 * those waiting for the target's answer (proto.h READ_RESP, RMA_ACK,
 * ATOMIC_RESP).
 */
#include <stdlib.h>
#include <string.h>

#include "mrocfi.h"

/* An operation from the pool, cleared; NULL when it is empty (mfi_ep_txop_get progresses first). */
struct mfi_txop *mfi_txop_get(struct mfi_ep *ep)
{
	struct mfi_txop *op = ep->txfree;

	if (op) {
		ep->txfree = op->next;
		memset(op, 0, sizeof(*op));
		op->user = true;
	}
	return op;
}

void mfi_txop_put(struct mfi_ep *ep, struct mfi_txop *op)
{
	/* No answer may find it any more (it may be failed while still queued). */
	if (op->user && op->req_id && op->req_id <= ep->rma_cap &&
	    ep->rma_wait[op->req_id - 1] == op)
		ep->rma_wait[op->req_id - 1] = NULL;
	if (op->owned)
		free(op->iov[0].iov_base);
	if (op >= ep->txpool && op < ep->txpool + MFI_TX_SIZE) {
		op->next = ep->txfree;
		ep->txfree = op;
	} else {
		free(op);	/* internal: HELLO, read responses, RMA answers */
	}
}

static uint64_t tx_flags_of(const struct mfi_txop *op)
{
	switch (op->kind) {
	case TX_MSG:	return FI_SEND | FI_MSG;
	case TX_TAGGED:	return FI_SEND | FI_TAGGED;
	case TX_WRITE:	return FI_RMA | FI_WRITE;
	case TX_READ:	return FI_RMA | FI_READ;
	case TX_ATOMIC:	/* a fetching atomic reads (libfabric's convention) */
		return FI_ATOMIC | (mfi_atomic_desc_decode(op->tag).kind == MFI_ATOMIC_WRITE ?
				    FI_WRITE : FI_READ);
	default:	return 0;
	}
}

/* Which counter an operation of these flags (tx_flags_of) counts in. */
static enum mfi_cntr_kind cntr_kind_of(uint64_t flags)
{
	if (flags & FI_SEND)
		return MFI_CNTR_SEND;
	return flags & FI_READ ? MFI_CNTR_READ : MFI_CNTR_WRITE;
}

/*
 * A user's operation is over: its counter counts it (whatever FI_COMPLETION
 * said), its CQ gets an entry if one is wanted or it failed.  Internal ones
 * (HELLO, read responses, RMA answers, VERIFY) are neither.
 */
void mfi_txop_done(struct mfi_ep *ep, struct mfi_txop *op, int err)
{
	if (op->user)
		mfi_cntr_count(ep, cntr_kind_of(tx_flags_of(op)), err);
	if (op->user && ep->txcq && (op->completion || err)) {
		struct mfi_cqe e = {
			.e = { .op_context = op->context, .flags = tx_flags_of(op),
			       .len = op->kind == TX_READ ? op->rlen :
				      op->kind == TX_ATOMIC ? 0 : op->total },
			.src = FI_ADDR_NOTAVAIL, .err = err != 0, .err_no = -err,
		};

		if (err)
			e.e.len = 0;
		mfi_cqring_push(&ep->txcq->ring, &e);
	}
	mfi_txop_put(ep, op);
}

uint32_t mfi_rma_track(struct mfi_ep *ep, struct mfi_txop *op)
{
	for (size_t i = 0; i < ep->rma_cap; i++) {
		size_t k = (ep->next_req + i) % ep->rma_cap;

		if (!ep->rma_wait[k]) {
			ep->rma_wait[k] = op;
			ep->next_req = (uint32_t)(k + 1);
			return (uint32_t)k + 1;
		}
	}
	return 0;	/* cannot happen: rma_cap >= the pool's size */
}

struct mfi_txop *mfi_rma_peek(struct mfi_ep *ep, uint32_t req_id)
{
	return req_id && req_id <= ep->rma_cap ? ep->rma_wait[req_id - 1] : NULL;
}

struct mfi_txop *mfi_rma_take(struct mfi_ep *ep, uint32_t req_id)
{
	struct mfi_txop *op = mfi_rma_peek(ep, req_id);

	if (op)
		ep->rma_wait[req_id - 1] = NULL;
	return op;
}

/* Those still waiting for an answer on c (sent whole: the queued ones went with the queue). */
void mfi_rma_fail_conn(struct mfi_ep *ep, struct mfi_conn *c, int err)
{
	for (size_t i = 0; i < ep->rma_cap; i++) {
		struct mfi_txop *op = ep->rma_wait[i];

		if (op && op->conn == c) {
			ep->rma_wait[i] = NULL;
			mfi_txop_done(ep, op, err);
		}
	}
}

/*
 * The answer of a write, read or atomic has come (rx.c checked it names this
 * operation): done now if its last SEND has completed, else when it does (the
 * staging slot still points at it until then).
 */
void mfi_rma_answer(struct mfi_ep *ep, struct mfi_txop *op, int status)
{
	mfi_rma_take(ep, op->req_id);
	if (op->sends_done) {
		mfi_txop_done(ep, op, status);
		return;
	}
	op->answered = true;
	op->status = status;
}
