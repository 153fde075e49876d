// SPDX-License-Identifier: MIT
/*
 * Endpoints: FI_EP_RDM and FI_EP_MSG, their connections, the identity
 * check of a peer's HELLO, connection management and progress (the passive
 * endpoint is pep.c's; the operations an endpoint sends, txop.c's).
 *
 * RDM (connections on demand under the AV, as ofi_rxm does over verbs): an
 * enabled endpoint keeps MFI_LISTENERS QPs listening on its service; the
 * first send to an AV entry connects a QP to the peer's service.  Each side
 * sends on the first connection it has with a peer (its own or one the peer
 * opened and introduced with HELLO) and never switches, so a direction's
 * messages are always in order; two peers connecting at once simply keep
 * one connection per direction.  A connection refused (the peer's listeners
 * were all taken) is retried.
 *
 * MSG: fi_connect opens a QP to the passive endpoint's service and sends
 * HELLO with its private data once connected; the passive endpoint's
 * listening QP that takes it becomes a FI_CONNREQ (with that data) whose
 * fi_info->handle names it when that HELLO arrives; fi_accept moves it to
 * the new endpoint and sends HELLO with its data; the client reports
 * FI_CONNECTED (with it) when that HELLO arrives, the server once it is
 * delivered (its SEND completed).  fi_reject's HELLO says
 * MFI_HELLO_REJECT: the client reports FI_ECONNREFUSED with its data as
 * err_data (a QP closed without one: FI_ECONNREFUSED without data).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mroc/mroc.h>

#include "mrocfi.h"

#define MFI_CONNECT_RETRIES	200

/* ---- connections of an endpoint ---------------------------------------------------- */

static int add_listener(struct mfi_ep *ep)
{
	struct mfi_conn *c;
	int err = mfi_conn_create(ep, ep->dom, &c);

	if (err)
		return err;
	err = mfi_conn_listen(c, mfi_addr_service(&ep->addr));
	if (err) {
		ep->conns = c->next;
		mfi_conn_destroy(c);
		return err;
	}
	c->accepted = true;
	return 0;
}

/*
 * The connection we opened to a (or our own, in-process): found, or opened now
 * (it queues until connected).  Only these carry our data: mroc authenticates
 * the endpoint at the other end of a connection one opens, not the name a
 * peer gives in its HELLO.
 */
struct mfi_conn *mfi_ep_dial(struct mfi_ep *ep, const struct mfi_addr *a, int *err)
{
	struct mfi_conn *c;

	for (c = ep->conns; c; c = c->next)
		if (!c->accepted && c->state != MFI_CONN_DOWN && c->peer_known &&
		    mfi_addr_eq(&c->peer, a))
			break;
	if (!c && mfi_addr_eq(a, &ep->addr)) {
		*err = mfi_conn_create_self(ep, &c);
		if (*err)
			return NULL;
	} else if (!c) {
		*err = mfi_conn_create(ep, ep->dom, &c);
		if (*err)
			return NULL;
		*err = mfi_conn_connect(c, a);
		if (*err) {
			c->state = MFI_CONN_DOWN;
			return NULL;
		}
	}
	*err = 0;
	return c;
}

/* The connection ep sends to dest on: found, or opened now (it queues until connected). */
struct mfi_conn *mfi_ep_tx_conn(struct mfi_ep *ep, fi_addr_t dest, int *err)
{
	const struct mfi_addr *a;
	struct mfi_conn *c;

	if (ep->type == FI_EP_MSG) {
		/*
		 * Shut down (either side) or failed: nothing will carry it, so refused.
		 * It was queued on the connection that was down and never completed.
		 */
		if (!ep->msg_conn || ep->msg_conn->state == MFI_CONN_DOWN) {
			*err = -FI_ENOTCONN;
			return NULL;
		}
		*err = 0;
		return ep->msg_conn;
	}
	/*
	 * The AV first, even with a connection open: an address removed (fi_av_remove)
	 * is no longer one to send to, as one never inserted is not (its connection was
	 * found and the message delivered).
	 */
	a = ep->av ? mfi_av_get(&ep->av->av, dest) : NULL;
	if (!a) {
		*err = -FI_EINVAL;
		return NULL;
	}
	if (dest < ep->nby && ep->by_fiaddr[dest] && ep->by_fiaddr[dest]->state != MFI_CONN_DOWN)
		return ep->by_fiaddr[dest];
	if (dest >= ep->nby) {
		size_t n = dest + 64;
		struct mfi_conn **by = realloc(ep->by_fiaddr, n * sizeof(*by));

		if (!by) {
			*err = -FI_ENOMEM;
			return NULL;
		}
		memset(by + ep->nby, 0, (n - ep->nby) * sizeof(*by));
		ep->by_fiaddr = by;
		ep->nby = n;
	}
	c = mfi_ep_dial(ep, a, err);
	if (!c)
		return NULL;
	c->fiaddr = dest;
	ep->by_fiaddr[dest] = c;
	return c;
}

/* ---- identity (proto.h): a HELLO on a connection the peer opened is a claim ---------- */

static struct mfi_txop *internal_op(enum mfi_txkind kind, uint64_t nonce, uint64_t yes)
{
	struct mfi_txop *op = calloc(1, sizeof(*op));

	if (op) {
		op->kind = kind;
		op->data = nonce;
		op->tag = yes;
	}
	return op;
}

/* c (accepted) named its peer in HELLO: ask that endpoint, on our own connection to it. */
void mfi_ep_verify(struct mfi_conn *c)
{
	struct mfi_ep *ep = c->ep;
	struct mfi_txop *op;
	struct mfi_conn *d;
	int err;

	d = mfi_ep_dial(ep, &c->peer, &err);
	op = d ? internal_op(TX_VERIFY, c->peer_nonce, 0) : NULL;
	if (!op) {
		ep->cnt.hello_refused++;
		mfi_conn_refuse(c);
		return;
	}
	c->verify_sent = true;
	mfi_conn_queue(d, op);
	mfi_conn_kick(d);
}

/* The peer asks whether we opened a connection to it with this nonce: answer on c. */
void mfi_ep_verify_ask(struct mfi_conn *c, uint64_t nonce)
{
	struct mfi_txop *op;
	bool yes = false;

	for (struct mfi_conn *d = c->ep->conns; d; d = d->next)
		if (!d->accepted && !d->self && d->nonce == nonce && d->state != MFI_CONN_DOWN &&
		    (!c->hello_seen || mfi_addr_eq(&d->peer, &c->peer)))
			yes = true;
	op = internal_op(TX_VERIFY_RESP, nonce, yes);
	if (op) {
		mfi_conn_queue(c, op);
		mfi_conn_kick(c);
	}
}

/* The answer, on a connection we opened (so from the endpoint itself). */
void mfi_ep_verify_answer(struct mfi_conn *d, uint64_t nonce, bool yes)
{
	struct mfi_ep *ep = d->ep;

	if (d->accepted) {
		ep->cnt.bad_msgs++;	/* an answer we cannot trust: not on a connection we opened */
		return;
	}
	for (struct mfi_conn *c = ep->conns; c; c = c->next) {
		if (c->verified || !c->verify_sent || c->peer_nonce != nonce ||
		    !mfi_addr_eq(&c->peer, &d->peer) || c->state == MFI_CONN_DOWN)
			continue;
		if (!yes) {
			ep->cnt.hello_refused++;
			mfi_conn_refuse(c);
			continue;
		}
		ep->cnt.verified++;
		c->verified = true;
	}
}

/* Our connection to peer is gone: the claims we were checking through it are not confirmed. */
static void verify_fail_peer(struct mfi_ep *ep, const struct mfi_addr *peer)
{
	for (struct mfi_conn *c = ep->conns; c; c = c->next)
		if (!c->verified && c->verify_sent && mfi_addr_eq(&c->peer, peer) &&
		    c->state != MFI_CONN_DOWN) {
			ep->cnt.hello_refused++;
			mfi_conn_refuse(c);
		}
}

/*
 * A refused RDM connect: the peer had no free listener yet.  Try again with a fresh QP,
 * within the first attempt's time (mrocd also ends a connect nobody answers as refused:
 * retried anew each time, one to our own mrocd's address waited for ever).  Not when the
 * peer's mrocd said a why it would say again (security modes, parameters).
 */
static bool retry_connect(struct mfi_conn *c)
{
	struct mfi_conn *n;
	struct mfi_ep *ep = c->ep;

	if (ep->type != FI_EP_RDM || c->accepted || c->retries >= MFI_CONNECT_RETRIES ||
	    mfi_conn_late(c) || mfi_conn_create(ep, ep->dom, &n))
		return false;
	if (mfi_conn_connect(n, &c->peer)) {
		n->state = MFI_CONN_DOWN;
		return false;
	}
	n->connect_by = c->connect_by;
	n->retries = c->retries + 1;
	n->fiaddr = c->fiaddr;
	n->txq = c->txq;
	n->txq_tail = c->txq_tail;
	for (struct mfi_txop *op = n->txq; op; op = op->next)
		op->conn = n;
	c->txq = c->txq_tail = NULL;
	if (c->fiaddr < ep->nby && ep->by_fiaddr[c->fiaddr] == c)
		ep->by_fiaddr[c->fiaddr] = n;
	return true;
}

/*
 * The peer's HELLO came (after any identity check).  An MSG client learns the
 * server's answer: FI_CONNECTED with fi_accept's data, or FI_ECONNREFUSED with
 * fi_reject's (the connection then closes).
 */
void mfi_ep_hello(struct mfi_conn *c, const void *cm, size_t cm_len, bool reject)
{
	struct mfi_ep *ep = c->ep;
	bool waiting = ep->type == FI_EP_MSG && c == ep->msg_conn && !ep->accepted &&
		       !ep->connected_reported && !ep->shutdown_reported;

	if (reject && !waiting) {
		ep->cnt.bad_msgs++;	/* only a server answering our fi_connect refuses */
		return;
	}
	if (!waiting || !ep->eq)
		return;
	if (reject) {
		ep->shutdown_reported = true;
		mfi_eq_push(ep->eq, FI_CONNECTED, &ep->ep_fid.fid, NULL, FI_ECONNREFUSED, cm,
			    cm_len);
		mfi_conn_refuse(c);
		return;
	}
	ep->connected_reported = true;
	mfi_eq_push(ep->eq, FI_CONNECTED, &ep->ep_fid.fid, NULL, 0, cm, cm_len);
}

/*
 * Our HELLO has reached the peer.  The server side of an MSG connection is
 * connected then: the client has its answer before anything the server does
 * next (an fi_shutdown at once closed the QP under a HELLO not yet delivered,
 * and the client saw FI_ECONNREFUSED).
 */
void mfi_ep_hello_sent(struct mfi_conn *c)
{
	struct mfi_ep *ep = c->ep;

	if (ep->type != FI_EP_MSG || c != ep->msg_conn || !ep->accepted ||
	    ep->connected_reported || ep->shutdown_reported || !ep->eq)
		return;
	ep->connected_reported = true;
	/* Ours has no data (fi_cm(3): the data goes to the peer). */
	mfi_eq_push(ep->eq, FI_CONNECTED, &ep->ep_fid.fid, NULL, 0, NULL, 0);
}

/* What a connection tells its endpoint: FI_CONNECTED (the QP's), FI_SHUTDOWN. */
void mfi_ep_conn_event(struct mfi_conn *c, int event, int err_no)
{
	struct mfi_ep *ep = c->ep;

	if (!ep)
		return;
	switch (event) {
	case FI_CONNECTED:
		/* Whichever side opened it, each says HELLO first; fi_connect's with its data. */
		if (ep->type == FI_EP_MSG && c == ep->msg_conn)
			mfi_send_hello(c, ep->cm, ep->cm_len, 0);
		else
			mfi_send_hello(c, NULL, 0, 0);
		if (c->accepted)
			add_listener(ep);
		break;
	case FI_SHUTDOWN:
		if (ep->type == FI_EP_MSG && c == ep->msg_conn && ep->eq && !ep->shutdown_reported) {
			ep->shutdown_reported = true;
			if (ep->connected_reported)
				mfi_eq_push(ep->eq, FI_SHUTDOWN, &ep->ep_fid.fid, NULL, 0, NULL, 0);
			else
				mfi_eq_push(ep->eq, FI_CONNECTED, &ep->ep_fid.fid, NULL,
					    err_no ? -err_no : FI_ECONNREFUSED, NULL, 0);
		}
		if (ep->type == FI_EP_RDM && c->fiaddr < ep->nby && ep->by_fiaddr[c->fiaddr] == c)
			ep->by_fiaddr[c->fiaddr] = NULL;
		if (ep->type == FI_EP_RDM && !c->accepted && c->peer_known)
			verify_fail_peer(ep, &c->peer);
		break;
	}
}

/* A refused connect is retried before its queue is failed (conn.c calls this first). */
bool mfi_ep_conn_refused(struct mfi_conn *c, const struct mroc_wc *wc)
{
	return c->ep && c->state == MFI_CONN_CONNECTING && !mfi_conn_refused_for_good(wc) &&
	       retry_connect(c);
}

/* Every connection's completions, then what it can send; the completions found. */
int mfi_ep_progress(struct mfi_ep *ep)
{
	int n = 0;

	for (struct mfi_conn *c = ep->conns; c; c = c->next)
		if (c->state != MFI_CONN_DOWN)
			n += mfi_conn_progress(c);
	return n;
}

/* c's completion fd joins the wait sets of the CQs, counters and EQ ep is bound to. */
void mfi_ep_watch(struct mfi_ep *ep, struct mfi_conn *c)
{
	mfi_eq_watch_conn(ep->eq, c);
	if (ep->txcq)
		mfi_epset_watch(&ep->txcq->set, c);
	if (ep->rxcq && ep->rxcq != ep->txcq)
		mfi_epset_watch(&ep->rxcq->set, c);
	for (int k = 0; k < MFI_CNTR_KINDS; k++)
		if (ep->cntr[k])	/* a second time for the same set: EEXIST */
			mfi_epset_watch(&ep->cntr[k]->set, c);
}

/* An operation from the pool, after one round of progress if it is empty; NULL if none. */
struct mfi_txop *mfi_ep_txop_get(struct mfi_ep *ep)
{
	if (!ep->txfree)
		mfi_ep_progress(ep);	/* completions return operations to the pool */
	return mfi_txop_get(ep);
}

/* ---- endpoint object ----------------------------------------------------------- */

static int ep_close(struct fid *fid)
{
	struct mfi_ep *ep = container_of(fid, struct mfi_ep, ep_fid.fid);
	struct mfi_domain *d = ep->dom;

	struct mfi_rxop *rx;

	mfi_lock(d);
	/*
	 * What is outstanding ends with FI_ECANCELED on the CQs (still bound: a CQ
	 * cannot close before its endpoints): sends, RMA and atomics with their
	 * connections, then the receives still posted.  Nothing of the pools is
	 * freed one by one; a message half received goes with its connection.
	 */
	while (ep->conns) {
		struct mfi_conn *c = ep->conns;

		ep->conns = c->next;
		mfi_conn_destroy(c);
	}
	while ((rx = mfi_match_take_posted(&ep->match)))
		mfi_rx_complete(ep, rx, -FI_ECANCELED);
	if (ep->txcq)
		mfi_epset_del(&ep->txcq->set, ep);
	if (ep->rxcq)
		mfi_epset_del(&ep->rxcq->set, ep);
	mfi_cntr_unbind_ep(ep);
	if (ep->eq)
		mfi_eq_unwatch(ep->eq, &ep->ep_fid.fid);
	if (ep->av)
		ep->av->eps--;
	d->refs--;
	mfi_unlock(d);
	if (ep->port_fd >= 0)
		close(ep->port_fd);
	mfi_match_fini(&ep->match);
	free(ep->by_fiaddr);
	free(ep->rma_wait);
	fi_freeinfo(ep->info);
	free(ep);
	return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct mfi_ep *ep = container_of(fid, struct mfi_ep, ep_fid.fid);
	int err = 0;

	if (!bfid)
		return -FI_EINVAL;
	mfi_lock(ep->dom);
	switch (bfid->fclass) {
	case FI_CLASS_AV:
		/* Another domain's AV or CQ would run under that domain's lock, not ours. */
		if (ep->type != FI_EP_RDM ||
		    container_of(bfid, struct mfi_av_fid, av_fid.fid)->dom != ep->dom) {
			err = -FI_EINVAL;
		} else {
			if (ep->av)
				ep->av->eps--;
			ep->av = container_of(bfid, struct mfi_av_fid, av_fid.fid);
			ep->av->eps++;
		}
		break;
	case FI_CLASS_CQ: {
		struct mfi_cq *cq = container_of(bfid, struct mfi_cq, cq_fid.fid);

		if (!(flags & (FI_TRANSMIT | FI_RECV))) {
			err = -FI_EBADFLAGS;
			break;
		}
		if (cq->dom != ep->dom) {
			err = -FI_EINVAL;
			break;
		}
		/*
		 * One CQ per direction: a second one replaced the first here while the
		 * first kept us in its set (it could never close, and read us once freed).
		 */
		if (((flags & FI_TRANSMIT) && ep->txcq && ep->txcq != cq) ||
		    ((flags & FI_RECV) && ep->rxcq && ep->rxcq != cq)) {
			err = -FI_EINVAL;
			break;
		}
		if (flags & FI_TRANSMIT) {
			ep->txcq = cq;
			ep->tx_flags = flags & FI_SELECTIVE_COMPLETION;
		}
		if (flags & FI_RECV) {
			ep->rxcq = cq;
			ep->rx_flags = flags & FI_SELECTIVE_COMPLETION;
		}
		err = mfi_epset_add(&cq->set, ep);
		err = err < 0 ? err : 0;
		break;
	}
	case FI_CLASS_CNTR:
		err = mfi_cntr_bind_ep(container_of(bfid, struct mfi_cntr, cntr_fid.fid), ep,
				       flags);
		break;
	case FI_CLASS_EQ:
		/* One EQ: the first kept us among its objects (the same trouble as a CQ's). */
		if (ep->eq) {
			err = ep->eq == container_of(bfid, struct mfi_eq, eq_fid.fid) ? 0 : -FI_EINVAL;
			break;
		}
		ep->eq = container_of(bfid, struct mfi_eq, eq_fid.fid);
		err = mfi_eq_watch(ep->eq, &ep->ep_fid.fid);
		for (struct mfi_conn *c = ep->conns; c && !err; c = c->next)
			err = mfi_eq_watch_conn(ep->eq, c);
		break;
	default:
		err = -FI_ENOSYS;	/* stx/srx contexts */
		break;
	}
	mfi_unlock(ep->dom);
	return err;
}

/* Whether anything reports ep's completions: a CQ, or only counters. */
static bool ep_reports(const struct mfi_ep *ep)
{
	for (int k = 0; k < MFI_CNTR_KINDS; k++)
		if (ep->cntr[k])
			return true;
	return ep->txcq || ep->rxcq;
}

static int ep_enable(struct mfi_ep *ep)
{
	int err = 0;

	if (ep->enabled)
		return 0;
	if (!ep_reports(ep))
		return -FI_ENOCQ;
	if (ep->type == FI_EP_RDM) {
		if (!ep->av)
			return -FI_ENOAV;
		for (int i = 0; i < MFI_LISTENERS && !err; i++)
			err = add_listener(ep);
	}
	if (!err)
		ep->enabled = true;
	return err;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct mfi_ep *ep = container_of(fid, struct mfi_ep, ep_fid.fid);
	uint64_t *f = arg;
	int err = 0;

	mfi_lock(ep->dom);
	switch (command) {
	case FI_ENABLE:
		err = ep_enable(ep);
		break;
	case FI_GETOPSFLAG:
		*f = (*f & FI_TRANSMIT) ? ep->tx_op_flags : ep->rx_op_flags;
		break;
	case FI_SETOPSFLAG:
		if (*f & FI_TRANSMIT)
			ep->tx_op_flags = *f & ~(FI_TRANSMIT | FI_RECV);
		else
			ep->rx_op_flags = *f & ~(FI_TRANSMIT | FI_RECV);
		break;
	default:
		err = -FI_ENOSYS;
		break;
	}
	mfi_unlock(ep->dom);
	return err;
}

static int ep_counters(struct fid_ep *fid, struct fi_mroc_counters *out)
{
	struct mfi_ep *ep = container_of(fid, struct mfi_ep, ep_fid);

	mfi_lock(ep->dom);
	*out = ep->cnt;
	mfi_unlock(ep->dom);
	return 0;
}

static int ep_traffic(struct fid_ep *fid, struct fi_mroc_traffic *out)
{
	struct mfi_ep *ep = container_of(fid, struct mfi_ep, ep_fid);

	mfi_lock(ep->dom);
	*out = ep->traffic;
	mfi_unlock(ep->dom);
	return 0;
}

/* v1's table is v2's first part: one table serves both names. */
static struct fi_mroc_ops_2 mroc_ops = {
	.size = sizeof(struct fi_mroc_ops_2),
	.counters = ep_counters,
	.traffic = ep_traffic,
};

static int ep_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
		       void *context)
{
	if (!name || (strcmp(name, FI_MROC_OPS_1) && strcmp(name, FI_MROC_OPS_2)) || flags)
		return -FI_ENOSYS;
	*ops = &mroc_ops;
	return 0;
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = ep_ops_open,
	.tostr = mfi_no_tostr,
	.ops_set = mfi_no_ops_set,
};

static ssize_t ep_cancel(fid_t fid, void *context)
{
	struct mfi_ep *ep = container_of(fid, struct mfi_ep, ep_fid.fid);
	struct mfi_rxop *rx;

	struct mfi_unexp *ux = NULL;

	mfi_lock(ep->dom);
	rx = mfi_match_cancel(&ep->match, context);
	if (rx)
		mfi_rx_complete(ep, rx, -FI_ECANCELED);
	else if ((ux = mfi_match_unclaim(&ep->match, context)) && ep->rxcq) {
		/* A FI_PEEK|FI_CLAIM's claim: released (match.h), its context ends as a receive's. */
		struct mfi_cqe e = { .src = ux->src, .err = true, .err_no = FI_ECANCELED };

		e.e.op_context = context;
		e.e.flags = FI_RECV | (ux->kind == MFI_KIND_TAGGED ? FI_TAGGED : FI_MSG);
		e.e.tag = ux->tag;
		mfi_cqring_push(&ep->rxcq->ring, &e);
	}
	mfi_unlock(ep->dom);
	return rx || ux ? 0 : -FI_ENOENT;
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	struct mfi_ep *ep = container_of(fid, struct mfi_ep, ep_fid.fid);
	size_t v;

	if (fid->fclass != FI_CLASS_EP || level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname == FI_OPT_MIN_MULTI_RECV)
		v = ep->min_multi_recv;
	else if (optname == FI_OPT_CM_DATA_SIZE && ep->type == FI_EP_MSG)
		v = MFI_CM_DATA_MAX;
	else
		return -FI_ENOPROTOOPT;
	if (*optlen < sizeof(size_t))
		return -FI_ETOOSMALL;
	*(size_t *)optval = v;
	*optlen = sizeof(size_t);
	return 0;
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	struct mfi_ep *ep = container_of(fid, struct mfi_ep, ep_fid.fid);

	if (fid->fclass != FI_CLASS_EP || level != FI_OPT_ENDPOINT ||
	    optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (optlen != sizeof(size_t))
		return -FI_EINVAL;
	ep->min_multi_recv = *(const size_t *)optval;
	return 0;
}

static ssize_t rx_size_left(struct fid_ep *fid)
{
	struct mfi_ep *ep = container_of(fid, struct mfi_ep, ep_fid);
	ssize_t n = 0;

	/* FI_THREAD_SAFE: the free list changes under a poster in another thread. */
	mfi_lock(ep->dom);
	for (struct mfi_rxop *rx = ep->match.free; rx; rx = rx->next)
		n++;
	mfi_unlock(ep->dom);
	return n;
}

static ssize_t tx_size_left(struct fid_ep *fid)
{
	struct mfi_ep *ep = container_of(fid, struct mfi_ep, ep_fid);
	ssize_t n = 0;

	mfi_lock(ep->dom);
	for (struct mfi_txop *op = ep->txfree; op; op = op->next)
		n++;
	mfi_unlock(ep->dom);
	return n;
}

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = mfi_no_tx_ctx,
	.rx_ctx = mfi_no_rx_ctx,
	.rx_size_left = rx_size_left,
	.tx_size_left = tx_size_left,
};

/* ---- CM: names, connect, accept ------------------------------------------------ */

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct mfi_ep *ep = container_of(fid, struct mfi_ep, ep_fid.fid);

	return mfi_name_copy(&ep->addr, addr, addrlen);
}

/* Before fi_enable (and fi_connect, which enables): once listening, the name is in use. */
static int ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct mfi_ep *ep = container_of(fid, struct mfi_ep, ep_fid.fid);
	int err;

	mfi_lock(ep->dom);
	err = ep->enabled || ep->conns ? -FI_EOPBADSTATE :
	      mfi_rename(&ep->addr, &ep->port_fd, addr, addrlen);
	mfi_unlock(ep->dom);
	return err;
}

static int ep_getpeer(struct fid_ep *fid, void *addr, size_t *addrlen)
{
	struct mfi_ep *ep = container_of(fid, struct mfi_ep, ep_fid);

	if (!ep->msg_conn || !ep->msg_conn->peer_known)
		return -FI_ENOTCONN;
	return mfi_name_copy(&ep->msg_conn->peer, addr, addrlen);
}

static int ep_connect(struct fid_ep *fid, const void *addr, const void *param, size_t paramlen)
{
	struct mfi_ep *ep = container_of(fid, struct mfi_ep, ep_fid);
	struct mfi_addr a;
	struct mfi_conn *c;
	int err;

	/* More than FI_OPT_CM_DATA_SIZE: refused, not truncated, as tcp and verbs do. */
	if (ep->type != FI_EP_MSG || ep->msg_conn || paramlen > MFI_CM_DATA_MAX ||
	    (paramlen && !param))
		return -FI_EINVAL;
	if (mfi_addr_from_sa(addr, mfi_sa_len(addr), false, &a))
		return -FI_EINVAL;
	mfi_lock(ep->dom);
	if (paramlen)
		memcpy(ep->cm, param, paramlen);
	ep->cm_len = paramlen;
	err = ep_enable(ep);
	if (!err)
		err = mfi_conn_create(ep, ep->dom, &c);
	if (!err) {
		err = mfi_conn_connect(c, &a);
		if (err)
			c->state = MFI_CONN_DOWN;
		else
			ep->msg_conn = c;
	}
	mfi_unlock(ep->dom);
	return err;
}

static int ep_accept(struct fid_ep *fid, const void *param, size_t paramlen)
{
	struct mfi_ep *ep = container_of(fid, struct mfi_ep, ep_fid);
	struct mfi_conn *c;
	int err;

	/* The handle is not read here: it may be a request accepted or rejected since. */
	if (ep->type != FI_EP_MSG || ep->msg_conn || !ep->info->handle ||
	    paramlen > MFI_CM_DATA_MAX || (paramlen && !param))
		return -FI_EINVAL;
	mfi_lock(ep->dom);
	err = ep_enable(ep);
	/* Out of the passive endpoint's hands (or the fabric's: it closed since) into ours. */
	if (err || !(c = mfi_connreq_take(ep->info->handle, &ep->addr))) {
		mfi_unlock(ep->dom);
		return err ? err : -FI_EINVAL;
	}
	c->ep = ep;
	c->next = ep->conns;
	ep->conns = c;
	mfi_ep_watch(ep, c);
	ep->msg_conn = c;
	ep->accepted = true;
	err = mfi_send_hello(c, param, paramlen, 0);	/* FI_CONNECTED once it is delivered */
	mfi_conn_kick(c);
	mfi_unlock(ep->dom);
	return err;
}

static int ep_shutdown(struct fid_ep *fid, uint64_t flags)
{
	struct mfi_ep *ep = container_of(fid, struct mfi_ep, ep_fid);

	mfi_lock(ep->dom);
	if (ep->msg_conn && ep->msg_conn->state != MFI_CONN_DOWN) {
		mroc_qp_destroy(ep->msg_conn->qp);	/* the peer sees DISCONNECTED */
		ep->msg_conn->qp = NULL;
		mfi_conn_fail(ep->msg_conn, -FI_ECANCELED);
	}
	/*
	 * Our own FI_SHUTDOWN too, unless the peer's came first: fi_cm(3) names only
	 * the peer's, but applications wait for one after their own fi_shutdown
	 * (fabtests' fi_cm_data, both sides), and tcp and verbs give it.
	 */
	if (ep->eq && ep->connected_reported && !ep->shutdown_reported) {
		ep->shutdown_reported = true;
		mfi_eq_push(ep->eq, FI_SHUTDOWN, &ep->ep_fid.fid, NULL, 0, NULL, 0);
	}
	mfi_unlock(ep->dom);
	return 0;
}

static struct fi_ops_cm ep_cm_ops;

int mfi_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **out,
		void *context)
{
	struct mfi_domain *d = container_of(domain, struct mfi_domain, domain_fid);
	struct mfi_ep *ep;
	int err = -FI_ENOMEM;

	if (!info || !info->ep_attr ||
	    (info->ep_attr->type != FI_EP_RDM && info->ep_attr->type != FI_EP_MSG))
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->port_fd = -1;
	ep->dom = d;
	ep->type = info->ep_attr->type;
	ep->info = fi_dupinfo(info);
	ep->rma_cap = MFI_TX_SIZE;
	ep->min_multi_recv = MFI_INJECT_SIZE;
	ep->rma_wait = calloc(ep->rma_cap, sizeof(*ep->rma_wait));
	if (!ep->info || !ep->rma_wait || mfi_match_init(&ep->match, MFI_RX_SIZE))
		goto err;
	for (int i = MFI_TX_SIZE - 1; i >= 0; i--) {
		ep->txpool[i].next = ep->txfree;
		ep->txfree = &ep->txpool[i];
	}
	if (info->tx_attr)
		ep->tx_op_flags = info->tx_attr->op_flags;
	if (info->rx_attr)
		ep->rx_op_flags = info->rx_attr->op_flags;
	/* An accepted MSG endpoint takes the passive endpoint's name at fi_accept. */
	if (!info->handle) {
		ep->port_fd = mfi_bind_addr(info, &ep->addr);
		if (ep->port_fd < 0) {
			err = ep->port_fd;
			goto err;
		}
	}
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &ep_fi_ops;
	ep->ep_fid.ops = &ep_ops;
	ep->ep_fid.cm = &ep_cm_ops;
	ep->ep_fid.msg = &mfi_msg_ops;
	ep->ep_fid.tagged = &mfi_tagged_ops;
	ep->ep_fid.rma = &mfi_rma_ops;
	ep->ep_fid.atomic = &mfi_atomic_ops;
	mfi_lock(d);
	d->refs++;
	mfi_unlock(d);
	*out = &ep->ep_fid;
	return 0;
err:
	mfi_match_fini(&ep->match);
	free(ep->rma_wait);
	fi_freeinfo(ep->info);
	free(ep);
	return err;
}

static struct fi_ops_cm ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = ep_setname,
	.getname = ep_getname,
	.getpeer = ep_getpeer,
	.connect = ep_connect,
	.listen = mfi_no_listen,
	.accept = ep_accept,
	.reject = mfi_no_reject,
	.shutdown = ep_shutdown,
	.join = mfi_no_join,
};
