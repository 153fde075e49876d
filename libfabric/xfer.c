// SPDX-License-Identifier: MIT
/*
 * The data transfer calls: fi_send*, fi_recv*, fi_tsend*, fi_trecv*, fi_read*,
 * fi_write* and their inject/data forms, all through post_tx and post_rx.
 *
 * A send is queued on its connection and leaves chunk by chunk as staging
 * slots and credits allow (the application's buffer is read then, so it must
 * stay valid until the completion, as libfabric requires).  An inject is
 * copied at once: straight into a staging slot when one is free, else into
 * a private copy that waits in the queue.  -FI_EAGAIN means the endpoint has
 * MFI_TX_SIZE operations (or MFI_RX_SIZE receives) outstanding; reading the
 * CQ makes progress.  FI_ATOMIC is atomic.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <mroc/mroc.h>

#include "mrocfi.h"

static uint64_t iov_len(const struct iovec *iov, size_t n)
{
	uint64_t l = 0;

	for (size_t i = 0; i < n; i++)
		l += iov[i].iov_len;
	return l;
}

/*
 * An application's iovs are usable: no more than MFI_IOV_LIMIT, and no NULL
 * where bytes are to be read or written.  Checked at the post: a NULL buffer
 * was copied from (inject) at once or, queued, in a later progress call, and
 * a receive's was written when its message came (SIGSEGV far from the call).
 */
/* Within iov_limit, no NULL buffer with a length, and lengths whose sum fits (2 x 2^63
 * was a zero-length message). */
static bool iov_ok(const struct iovec *iov, size_t n)
{
	uint64_t sum = 0;

	if (n > MFI_IOV_LIMIT || (n && !iov))
		return false;
	for (size_t i = 0; i < n; i++) {
		if ((!iov[i].iov_base && iov[i].iov_len) || sum + iov[i].iov_len < sum)
			return false;
		sum += iov[i].iov_len;
	}
	return true;
}

struct tx_args {
	enum mfi_txkind kind;
	const struct iovec *iov;
	size_t count;
	fi_addr_t dest;
	uint64_t tag, data, key, addr, flags;
	void *context;
	bool inject;		/* an inject call: copied now, never completes */
};

static ssize_t post_tx(struct mfi_ep *ep, const struct tx_args *a)
{
	uint64_t total;
	bool inject = a->inject || (a->flags & FI_INJECT);
	bool completion = !a->inject && (!(ep->tx_flags & FI_SELECTIVE_COMPLETION) ||
					 (a->flags & FI_COMPLETION));
	struct mfi_conn *c;
	struct mfi_txop *op;
	int err;

	if (!iov_ok(a->iov, a->count))
		return -FI_EINVAL;
	total = iov_len(a->iov, a->count);
	if (total > MFI_MAX_MSG_SIZE || (inject && total > MFI_INJECT_SIZE))
		return -FI_EINVAL;
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	mfi_lock(ep->dom);
	c = mfi_ep_tx_conn(ep, a->dest, &err);
	if (!c)
		goto out;
	/* The common small case: straight into a slot, nothing allocated. */
	if (inject && !completion && a->count == 1 && a->kind != TX_READ &&
	    mfi_conn_post_inject(c, a->kind, a->iov[0].iov_base, total, a->tag, a->data,
				 a->flags, a->key, a->addr)) {
		/* No operation to end later: counted now, as its buffer is free now. */
		mfi_cntr_count(ep, a->kind == TX_WRITE ? MFI_CNTR_WRITE : MFI_CNTR_SEND, 0);
		err = 0;
		goto out;
	}
	op = mfi_ep_txop_get(ep);
	if (!op) {
		err = -FI_EAGAIN;
		goto out;
	}
	op->kind = a->kind;
	op->tag = a->tag;
	op->data = a->data;
	op->rkey = a->key;
	op->raddr = a->addr;
	op->flags = a->flags;
	op->context = a->context;
	op->completion = completion;
	if (inject && a->kind != TX_READ) {
		uint8_t *copy = malloc(total ? total : 1);
		uint64_t off = 0;

		if (!copy) {
			mfi_txop_put(ep, op);
			err = -FI_ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < a->count; off += a->iov[i].iov_len, i++)
			if (a->iov[i].iov_len)	/* NULL with 0 bytes: memcpy's UB */
				memcpy(copy + off, a->iov[i].iov_base, a->iov[i].iov_len);
		op->iov[0] = (struct iovec){ copy, total };
		op->iov_count = 1;
		op->owned = true;
	} else {
		if (a->count)	/* a NULL iov of none: memcpy's UB */
			memcpy(op->iov, a->iov, a->count * sizeof(*a->iov));
		op->iov_count = a->count;
	}
	if (a->kind == TX_READ) {
		op->rlen = total;
		op->total = 0;
	} else {
		op->total = total;
	}
	if (a->kind == TX_READ || a->kind == TX_WRITE)
		op->req_id = mfi_rma_track(ep, op);
	/* Large, from zero-copy memory: the receiver READs it (rndv.c), no staging copy. */
	if ((a->kind == TX_MSG || a->kind == TX_TAGGED) && !op->owned && !c->self &&
	    a->count == 1 && total >= MFI_RNDV_MIN) {
		struct mfi_zc zc;

		if (mfi_zc_find(ep->dom, a->iov[0].iov_base, total, true, &zc)) {
			op->rndv = true;
			op->zc_rkey = mroc_mr_rkey(zc.mr);
			op->zc_off = zc.off;
			op->req_id = mfi_rma_track(ep, op);
		}
	}
	mfi_conn_queue(c, op);
	mfi_conn_kick(c);
	err = 0;
out:
	mfi_unlock(ep->dom);
	return err;
}

struct rx_args {
	enum mfi_kind kind;
	const struct iovec *iov;
	size_t count;
	fi_addr_t src;
	uint64_t tag, ignore, flags;
	void *context;
};

/* FI_PEEK: report the oldest matching unexpected message (FI_CLAIM: and reserve it). */
static void peek(struct mfi_ep *ep, const struct rx_args *a, fi_addr_t src)
{
	bool take = a->flags & (FI_CLAIM | FI_DISCARD);
	struct mfi_unexp *ux = mfi_match_peek(&ep->match, a->kind, src, a->tag, a->ignore,
					      take ? a->context : NULL);
	struct mfi_cqe e = { .src = ux ? ux->src : FI_ADDR_NOTAVAIL };

	/* FI_DISCARD: the message found is dropped (buffer now, the rest as it arrives). */
	if (ux && (a->flags & FI_DISCARD))
		mfi_match_remove_unexp(&ep->match, ux);
	e.e.op_context = a->context;
	e.e.flags = FI_RECV | (a->kind == MFI_KIND_TAGGED ? FI_TAGGED : FI_MSG);
	if (ux) {
		e.e.len = ux->total;
		e.e.tag = ux->tag;
		e.e.data = ux->data;
		if (ux->has_data)
			e.e.flags |= FI_REMOTE_CQ_DATA;
		if (a->flags & FI_DISCARD)
			mfi_rx_discard_unexp(ux);
	} else {
		e.err = true;
		e.err_no = FI_ENOMSG;
	}
	if (ep->rxcq)
		mfi_cqring_push(&ep->rxcq->ring, &e);
}

static ssize_t post_rx(struct mfi_ep *ep, const struct rx_args *a)
{
	fi_addr_t src = (ep->info->caps & FI_DIRECTED_RECV) ? a->src : FI_ADDR_UNSPEC;
	struct mfi_rxop *rx;
	struct mfi_unexp *ux;
	ssize_t err = 0;

	if (!iov_ok(a->iov, a->count) || ((a->flags & FI_MULTI_RECV) && a->count != 1))
		return -FI_EINVAL;
	mfi_lock(ep->dom);
	if (a->flags & FI_PEEK) {
		mfi_ep_progress(ep);	/* what has arrived by now is there to be seen */
		peek(ep, a, src);
		goto out;
	}
	rx = mfi_rxop_get(&ep->match);
	if (!rx) {
		err = -FI_EAGAIN;
		goto out;
	}
	rx->kind = a->kind;
	if (a->count)	/* a NULL iov of none (fi_recvv(ep, NULL, NULL, 0, ...)): memcpy's UB */
		memcpy(rx->iov, a->iov, a->count * sizeof(*a->iov));
	rx->iov_count = a->count;
	rx->len = iov_len(a->iov, a->count);
	rx->tag = a->tag;
	rx->ignore = a->ignore;
	rx->src = src;
	rx->context = a->context;
	rx->flags = a->flags;
	rx->completion = !(ep->rx_flags & FI_SELECTIVE_COMPLETION) || (a->flags & FI_COMPLETION);
	if (a->flags & FI_CLAIM) {
		ux = mfi_match_claimed(&ep->match, a->context);
		if (!ux) {
			mfi_rxop_put(&ep->match, rx);
			err = -FI_EINVAL;
			goto out;
		}
	} else if (a->flags & FI_MULTI_RECV) {
		/* Messages already here fill it first, back to back, while it has room. */
		while ((ux = mfi_match_post(&ep->match, rx))) {
			struct mfi_rxop *sub = mfi_rx_multi_carve(ep, rx, ux->total, false);

			if (!sub) {
				mfi_match_add_unexp(&ep->match, ux);	/* back, for later */
				mfi_match_requeue_head(&ep->match, rx);
				break;
			}
			mfi_rx_take_unexp(ep, ux, sub);
			if (sub->multi_release)
				break;
		}
		ux = NULL;
	} else {
		ux = mfi_match_post(&ep->match, rx);
	}
	if (ux)
		mfi_rx_take_unexp(ep, ux, rx);
out:
	mfi_unlock(ep->dom);
	return err;
}

#define EP(fid) container_of(fid, struct mfi_ep, ep_fid)
#define IOV1(buf, len) (&(struct iovec){ .iov_base = (void *)(buf), .iov_len = (len) })

/* ---- FI_MSG ------------------------------------------------------------------ */

static ssize_t msg_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
			void *context)
{
	return post_rx(EP(ep), &(struct rx_args){ MFI_KIND_MSG, IOV1(buf, len), 1, src, 0, 0,
						   EP(ep)->rx_op_flags, context });
}

static ssize_t msg_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t src, void *context)
{
	return post_rx(EP(ep), &(struct rx_args){ MFI_KIND_MSG, iov, count, src, 0, 0,
						   EP(ep)->rx_op_flags, context });
}

/* The *msg forms read the message at once: none is -FI_EINVAL (it was dereferenced). */
static ssize_t msg_recvmsg(struct fid_ep *ep, const struct fi_msg *m, uint64_t flags)
{
	if (!m)
		return -FI_EINVAL;
	return post_rx(EP(ep), &(struct rx_args){ MFI_KIND_MSG, m->msg_iov, m->iov_count, m->addr,
						   0, 0, flags, m->context });
}

static ssize_t msg_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			fi_addr_t dest, void *context)
{
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_MSG, .iov = IOV1(buf, len), .count = 1,
						   .dest = dest, .flags = EP(ep)->tx_op_flags,
						   .context = context });
}

static ssize_t msg_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t dest, void *context)
{
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_MSG, .iov = iov, .count = count,
						   .dest = dest, .flags = EP(ep)->tx_op_flags,
						   .context = context });
}

static ssize_t msg_sendmsg(struct fid_ep *ep, const struct fi_msg *m, uint64_t flags)
{
	if (!m)
		return -FI_EINVAL;
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_MSG, .iov = m->msg_iov,
						   .count = m->iov_count, .dest = m->addr,
						   .data = m->data, .flags = flags,
						   .context = m->context });
}

static ssize_t msg_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest)
{
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_MSG, .iov = IOV1(buf, len), .count = 1,
						   .dest = dest, .inject = true });
}

static ssize_t msg_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			    uint64_t data, fi_addr_t dest, void *context)
{
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_MSG, .iov = IOV1(buf, len), .count = 1,
						   .dest = dest, .data = data,
						   .flags = EP(ep)->tx_op_flags | FI_REMOTE_CQ_DATA,
						   .context = context });
}

static ssize_t msg_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
			      fi_addr_t dest)
{
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_MSG, .iov = IOV1(buf, len), .count = 1,
						   .dest = dest, .data = data,
						   .flags = FI_REMOTE_CQ_DATA, .inject = true });
}

struct fi_ops_msg mfi_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = msg_recv,
	.recvv = msg_recvv,
	.recvmsg = msg_recvmsg,
	.send = msg_send,
	.sendv = msg_sendv,
	.sendmsg = msg_sendmsg,
	.inject = msg_inject,
	.senddata = msg_senddata,
	.injectdata = msg_injectdata,
};

/* ---- FI_TAGGED ---------------------------------------------------------------- */

static ssize_t t_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
		      uint64_t tag, uint64_t ignore, void *context)
{
	return post_rx(EP(ep), &(struct rx_args){ MFI_KIND_TAGGED, IOV1(buf, len), 1, src, tag,
						   ignore, EP(ep)->rx_op_flags, context });
}

static ssize_t t_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
	return post_rx(EP(ep), &(struct rx_args){ MFI_KIND_TAGGED, iov, count, src, tag, ignore,
						   EP(ep)->rx_op_flags, context });
}

static ssize_t t_recvmsg(struct fid_ep *ep, const struct fi_msg_tagged *m, uint64_t flags)
{
	if (!m)
		return -FI_EINVAL;
	return post_rx(EP(ep), &(struct rx_args){ MFI_KIND_TAGGED, m->msg_iov, m->iov_count,
						   m->addr, m->tag, m->ignore, flags, m->context });
}

static ssize_t t_send(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
		      uint64_t tag, void *context)
{
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_TAGGED, .iov = IOV1(buf, len),
						   .count = 1, .dest = dest, .tag = tag,
						   .flags = EP(ep)->tx_op_flags, .context = context });
}

static ssize_t t_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t dest, uint64_t tag, void *context)
{
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_TAGGED, .iov = iov, .count = count,
						   .dest = dest, .tag = tag,
						   .flags = EP(ep)->tx_op_flags, .context = context });
}

static ssize_t t_sendmsg(struct fid_ep *ep, const struct fi_msg_tagged *m, uint64_t flags)
{
	if (!m)
		return -FI_EINVAL;
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_TAGGED, .iov = m->msg_iov,
						   .count = m->iov_count, .dest = m->addr,
						   .tag = m->tag, .data = m->data, .flags = flags,
						   .context = m->context });
}

static ssize_t t_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest,
			uint64_t tag)
{
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_TAGGED, .iov = IOV1(buf, len),
						   .count = 1, .dest = dest, .tag = tag,
						   .inject = true });
}

static ssize_t t_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			  uint64_t data, fi_addr_t dest, uint64_t tag, void *context)
{
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_TAGGED, .iov = IOV1(buf, len),
						   .count = 1, .dest = dest, .tag = tag, .data = data,
						   .flags = EP(ep)->tx_op_flags | FI_REMOTE_CQ_DATA,
						   .context = context });
}

static ssize_t t_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
			    fi_addr_t dest, uint64_t tag)
{
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_TAGGED, .iov = IOV1(buf, len),
						   .count = 1, .dest = dest, .tag = tag, .data = data,
						   .flags = FI_REMOTE_CQ_DATA, .inject = true });
}

struct fi_ops_tagged mfi_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = t_recv,
	.recvv = t_recvv,
	.recvmsg = t_recvmsg,
	.send = t_send,
	.sendv = t_sendv,
	.sendmsg = t_sendmsg,
	.inject = t_inject,
	.senddata = t_senddata,
	.injectdata = t_injectdata,
};

/* ---- FI_RMA --------------------------------------------------------------------- */

static ssize_t rma_read(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
			uint64_t addr, uint64_t key, void *context)
{
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_READ, .iov = IOV1(buf, len), .count = 1,
						   .dest = src, .key = key, .addr = addr,
						   .flags = EP(ep)->tx_op_flags, .context = context });
}

static ssize_t rma_readv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t src, uint64_t addr, uint64_t key, void *context)
{
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_READ, .iov = iov, .count = count,
						   .dest = src, .key = key, .addr = addr,
						   .flags = EP(ep)->tx_op_flags, .context = context });
}

static ssize_t rma_readmsg(struct fid_ep *ep, const struct fi_msg_rma *m, uint64_t flags)
{
	if (!m || m->rma_iov_count != 1 || !m->rma_iov)
		return -FI_EINVAL;
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_READ, .iov = m->msg_iov,
						   .count = m->iov_count, .dest = m->addr,
						   .key = m->rma_iov[0].key, .addr = m->rma_iov[0].addr,
						   .flags = flags, .context = m->context });
}

static ssize_t rma_write(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			 fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_WRITE, .iov = IOV1(buf, len),
						   .count = 1, .dest = dest, .key = key, .addr = addr,
						   .flags = EP(ep)->tx_op_flags, .context = context });
}

static ssize_t rma_writev(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
			  fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_WRITE, .iov = iov, .count = count,
						   .dest = dest, .key = key, .addr = addr,
						   .flags = EP(ep)->tx_op_flags, .context = context });
}

static ssize_t rma_writemsg(struct fid_ep *ep, const struct fi_msg_rma *m, uint64_t flags)
{
	if (!m || m->rma_iov_count != 1 || !m->rma_iov)
		return -FI_EINVAL;
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_WRITE, .iov = m->msg_iov,
						   .count = m->iov_count, .dest = m->addr,
						   .key = m->rma_iov[0].key, .addr = m->rma_iov[0].addr,
						   .data = m->data, .flags = flags,
						   .context = m->context });
}

static ssize_t rma_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest,
			  uint64_t addr, uint64_t key)
{
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_WRITE, .iov = IOV1(buf, len),
						   .count = 1, .dest = dest, .key = key, .addr = addr,
						   .inject = true });
}

static ssize_t rma_writedata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			     uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key,
			     void *context)
{
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_WRITE, .iov = IOV1(buf, len),
						   .count = 1, .dest = dest, .key = key, .addr = addr,
						   .data = data,
						   .flags = EP(ep)->tx_op_flags | FI_REMOTE_CQ_DATA,
						   .context = context });
}

static ssize_t rma_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
			      fi_addr_t dest, uint64_t addr, uint64_t key)
{
	return post_tx(EP(ep), &(struct tx_args){ .kind = TX_WRITE, .iov = IOV1(buf, len),
						   .count = 1, .dest = dest, .key = key, .addr = addr,
						   .data = data, .flags = FI_REMOTE_CQ_DATA,
						   .inject = true });
}

struct fi_ops_rma mfi_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rma_read,
	.readv = rma_readv,
	.readmsg = rma_readmsg,
	.write = rma_write,
	.writev = rma_writev,
	.writemsg = rma_writemsg,
	.inject = rma_inject,
	.writedata = rma_writedata,
	.injectdata = rma_injectdata,
};
