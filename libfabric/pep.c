// SPDX-License-Identifier: MIT
/*
 * The passive endpoint (FI_EP_MSG's listener): it keeps MFI_LISTENERS QPs
 * listening on its service in a context of its own; a listening QP that a
 * client connects becomes, once the client's HELLO (with fi_connect's private
 * data) has come, a FI_CONNREQ whose fi_info->handle names it.  fi_accept
 * (ep.c) moves it to the new endpoint; fi_reject answers with a HELLO that
 * says so (and carries its data) and closes it once that is delivered (the
 * client sees FI_ECONNREFUSED).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <mroc/mroc.h>

#include "mrocfi.h"

/*
 * The connection requests raised and not yet accepted, refused or closed: a
 * fi_info's handle is looked up here before it is used, so a stale one (its request
 * rejected, accepted or gone since) is refused instead of read after its free.
 */
static pthread_mutex_t creq_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mfi_conn **creqs;
static size_t ncreqs, creqs_cap;

static bool creq_add(struct mfi_conn *c)
{
	bool ok = true;

	pthread_mutex_lock(&creq_lock);
	if (ncreqs == creqs_cap) {
		size_t cap = creqs_cap ? 2 * creqs_cap : 16;
		struct mfi_conn **n = realloc(creqs, cap * sizeof(*n));

		if (n) {
			creqs = n;
			creqs_cap = cap;
		} else {
			ok = false;
		}
	}
	if (ok)
		creqs[ncreqs++] = c;
	pthread_mutex_unlock(&creq_lock);
	return ok;
}

/* c's entry out of the registry (under creq_lock); whether it was there. */
static bool creq_del_locked(const struct fid *handle)
{
	for (size_t i = 0; i < ncreqs; i++)
		if (&creqs[i]->handle == handle) {
			creqs[i] = creqs[--ncreqs];
			return true;
		}
	return false;
}

void mfi_connreq_forget(struct mfi_conn *c)
{
	pthread_mutex_lock(&creq_lock);
	creq_del_locked(&c->handle);
	if (!ncreqs) {
		free(creqs);
		creqs = NULL;
		creqs_cap = 0;
	}
	pthread_mutex_unlock(&creq_lock);
}

/* c's client said HELLO: the application hears of it, with fi_connect's data. */
static void connreq(struct mfi_pep *pep, struct mfi_conn *c, const uint8_t *cm, size_t cm_len)
{
	struct fi_info *info = fi_dupinfo(pep->info);

	c->connreq = true;
	if (info && !creq_add(c)) {
		fi_freeinfo(info);
		info = NULL;
	}
	if (!info)
		return;
	info->handle = &c->handle;
	if (!pep->eq || mfi_eq_push(pep->eq, FI_CONNREQ, &pep->pep_fid.fid, info, 0, cm, cm_len))
		fi_freeinfo(info);
}

/*
 * A listening QP's connection, then the client's HELLO: the rest waits in the
 * QP for the endpoint that accepts.  A rejected one until its answer is
 * delivered.  Closed: one whose client left before FI_CONNREQ, or rejected.
 */
static void listener_progress(struct mfi_pep *pep, struct mfi_conn *c)
{
	struct mroc_wc wc;
	const uint8_t *cm;
	size_t cm_len;
	int r;

	if (c->state == MFI_CONN_LISTEN) {
		if (mroc_poll_cq(c->qp, &wc, 1) != 1)
			return;
		c->state = wc.opcode == MROC_WC_CONNECTED ? MFI_CONN_UP : MFI_CONN_DOWN;
	}
	if (c->state != MFI_CONN_UP || c->connreq) {
		if (c->rejecting && mfi_conn_reject_sent(c))
			c->state = MFI_CONN_DOWN;
		return;
	}
	r = mfi_conn_await_hello(c, &cm, &cm_len);	/* it may be there already */
	if (r > 0)
		connreq(pep, c, cm, cm_len);
	else if (r < 0)
		c->state = MFI_CONN_DOWN;
}

void mfi_pep_progress(struct mfi_pep *pep)
{
	struct mfi_conn *c, **pp;

	for (pp = &pep->listeners; (c = *pp);) {
		listener_progress(pep, c);
		if (c->state == MFI_CONN_DOWN) {
			*pp = c->next;
			mfi_conn_destroy(c);
		} else {
			pp = &c->next;
		}
	}
	/* Keep MFI_LISTENERS QPs listening. */
	for (int n = 0;;) {
		for (n = 0, c = pep->listeners; c; c = c->next)
			n += c->state == MFI_CONN_LISTEN;
		if (n >= MFI_LISTENERS || !pep->listening ||
		    mfi_conn_create(NULL, pep->dom, &c))
			break;
		c->pep = pep;
		if (mfi_conn_listen(c, mfi_addr_service(&pep->addr))) {
			mfi_conn_destroy(c);
			break;
		}
		c->next = pep->listeners;
		pep->listeners = c;
		mfi_eq_watch_conn(pep->eq, c);
	}
}

static int pep_listen(struct fid_pep *fid)
{
	struct mfi_pep *pep = container_of(fid, struct mfi_pep, pep_fid);

	if (pep->listening)
		return 0;
	pep->listening = true;
	mfi_pep_progress(pep);
	return pep->listeners ? 0 : -FI_ENODEV;
}

/*
 * The answer goes in a HELLO; the QP closes once it is delivered (mfi_pep_progress).
 * The handle is compared with our requests' before anything reads it: a request
 * rejected already may be freed (its answer delivered at once when the client is on
 * this mrocd), so a second fi_reject of it is -FI_ENOENT, not a read after free.
 */
static int pep_reject(struct fid_pep *fid, fid_t handle, const void *param, size_t paramlen)
{
	struct mfi_pep *pep = container_of(fid, struct mfi_pep, pep_fid);
	struct mfi_conn *c;

	if (!handle || paramlen > MFI_CM_DATA_MAX || (paramlen && !param))
		return -FI_EINVAL;
	for (c = pep->listeners; c; c = c->next)
		if (&c->handle == handle && c->connreq && !c->rejecting)
			break;
	if (!c)
		return -FI_ENOENT;	/* not a request of ours waiting (so not read) */
	mfi_connreq_forget(c);	/* its handle names nothing from now on */
	c->rejecting = true;
	if (c->state == MFI_CONN_UP && !mfi_send_hello(c, param, paramlen, MFI_HELLO_REJECT))
		mfi_conn_kick(c);
	else
		c->state = MFI_CONN_DOWN;	/* the client sees the QP close: refused all the same */
	mfi_pep_progress(pep);
	return 0;
}

static int pep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	/* The most a FI_CONNREQ can carry. */
	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	if (*optlen < sizeof(size_t))
		return -FI_ETOOSMALL;
	*(size_t *)optval = MFI_CM_DATA_MAX;
	*optlen = sizeof(size_t);
	return 0;
}

static int pep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct mfi_pep *pep = container_of(fid, struct mfi_pep, pep_fid.fid);

	return mfi_name_copy(&pep->addr, addr, addrlen);
}

/* Before fi_listen: its listening QPs are on the name's service. */
static int pep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct mfi_pep *pep = container_of(fid, struct mfi_pep, pep_fid.fid);
	int err;

	if (pep->listening)
		return -FI_EOPBADSTATE;
	err = mfi_rename(&pep->addr, &pep->port_fd, addr, addrlen);
	if (!err && pep->info->src_addr)
		pep->info->src_addrlen = mfi_addr_to_sa(&pep->addr, pep->info->src_addr);
	return err;
}

/*
 * A FI_CONNREQ's connection for fi_accept: out of its passive endpoint's hands (its
 * name in *local), or of the fabric's when that endpoint has closed since.  NULL if
 * neither holds it (accepted already, rejected).  Under the accepting domain's lock.
 */
struct mfi_conn *mfi_connreq_take(const struct fid *handle, struct mfi_addr *local)
{
	struct mfi_conn *c = container_of(handle, struct mfi_conn, handle);
	struct mfi_pep *pep;
	struct mfi_fabric *fab;
	struct mfi_conn **pp;
	bool live;

	/* Not read before it is known to be a request still waiting. */
	pthread_mutex_lock(&creq_lock);
	live = creq_del_locked(handle) && !c->rejecting;
	pthread_mutex_unlock(&creq_lock);
	if (!live)
		return NULL;
	pep = c->pep;
	fab = c->orphan_of;
	if (pep) {
		for (pp = &pep->listeners; *pp && *pp != c; pp = &(*pp)->next)
			;
		if (*pp)
			*pp = c->next;
		c->pep = NULL;
		*local = pep->addr;
		return c;
	}
	if (!fab)
		return NULL;
	pthread_mutex_lock(&fab->lock);
	for (pp = &fab->connreqs; *pp && *pp != c; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = c->next;
	pthread_mutex_unlock(&fab->lock);
	c->orphan_of = NULL;
	*local = c->local;
	return c;
}

/* The fabric closes: requests nobody accepted are refused (their QPs close). */
void mfi_connreqs_close(struct mfi_fabric *fab)
{
	while (fab->connreqs) {
		struct mfi_conn *c = fab->connreqs;

		fab->connreqs = c->next;
		mfi_conn_destroy(c);
	}
}

static int pep_close(struct fid *fid)
{
	struct mfi_pep *pep = container_of(fid, struct mfi_pep, pep_fid.fid);
	struct mfi_domain *d = pep->dom;

	if (pep->eq)
		mfi_eq_unwatch(pep->eq, &pep->pep_fid.fid);
	while (pep->listeners) {
		struct mfi_conn *c = pep->listeners;

		pep->listeners = c->next;
		/*
		 * A FI_CONNREQ raised (its fi_info's handle names c) stays the application's
		 * to fi_accept, as verbs' and tcp's do: freed here, fi_accept used it freed.
		 * The fabric keeps it (a QP of our private domain, which lives on with it).
		 */
		if (c->connreq && !c->rejecting && c->state == MFI_CONN_UP) {
			c->pep = NULL;
			c->local = pep->addr;
			c->orphan_of = pep->fab;
			pthread_mutex_lock(&pep->fab->lock);
			c->next = pep->fab->connreqs;
			pep->fab->connreqs = c;
			pthread_mutex_unlock(&pep->fab->lock);
			continue;
		}
		mfi_conn_destroy(c);
	}
	/* Accepted connections keep using the context: it closes with the last of them. */
	d->orphan = true;
	if (!d->refs) {
		mroc_close(d->ctx);
		free(d);
	}
	if (pep->port_fd >= 0)
		close(pep->port_fd);
	mfi_fabric_ref(pep->fab, -1);
	fi_freeinfo(pep->info);
	free(pep);
	return 0;
}

static int pep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct mfi_pep *pep = container_of(fid, struct mfi_pep, pep_fid.fid);
	int err;

	if (bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	pep->eq = container_of(bfid, struct mfi_eq, eq_fid.fid);
	err = mfi_eq_watch(pep->eq, fid);
	for (struct mfi_conn *c = pep->listeners; c && !err; c = c->next)
		err = mfi_eq_watch_conn(pep->eq, c);
	return err;
}

static struct fi_ops pep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pep_close,
	.bind = pep_bind,
	.control = mfi_no_control,
	.ops_open = mfi_no_ops_open,
	.tostr = mfi_no_tostr,
	.ops_set = mfi_no_ops_set,
};

static struct fi_ops_ep pep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = NULL,
	.getopt = pep_getopt,
	.setopt = mfi_no_setopt,
	.tx_ctx = mfi_no_tx_ctx,
	.rx_ctx = mfi_no_rx_ctx,
	.rx_size_left = NULL,
	.tx_size_left = NULL,
};

static struct fi_ops_cm pep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = pep_setname,
	.getname = pep_getname,
	.getpeer = mfi_no_getpeer,
	.connect = mfi_no_connect,
	.listen = pep_listen,
	.accept = mfi_no_accept,
	.reject = pep_reject,
	.shutdown = mfi_no_shutdown,
	.join = mfi_no_join,
};

int mfi_pep_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **out,
		 void *context)
{
	/* Never yield inside libmroc: an EQ or CQ read decides for all its QPs (cq.c). */
	struct mroc_ctx_opts o = { .sz = sizeof(o), .spin_us = MROC_SPIN_FOREVER };
	struct mfi_pep *pep;
	int err;

	if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_MSG)
		return -FI_EINVAL;
	pep = calloc(1, sizeof(*pep));
	if (!pep)
		return -FI_ENOMEM;
	pep->port_fd = -1;
	pep->fab = container_of(fabric, struct mfi_fabric, fabric_fid);
	pep->info = fi_dupinfo(info);
	pep->dom = calloc(1, sizeof(*pep->dom));
	err = -FI_ENOMEM;
	if (!pep->info || !pep->dom)
		goto err;
	pep->dom->ctx = mroc_open(&o);
	if (!pep->dom->ctx) {
		err = errno == ENOENT || errno == ECONNREFUSED ? -FI_ENODEV :
		      mfi_mroc_err(-errno, "opening mrocd's context");
		goto err;
	}
	pep->port_fd = mfi_bind_addr(info, &pep->addr);
	if (pep->port_fd < 0) {
		err = pep->port_fd;
		goto err;
	}
	/* Those the passive endpoint hands out name it as their source. */
	free(pep->info->src_addr);
	pep->info->src_addr = malloc(sizeof(struct sockaddr_storage));
	if (pep->info->src_addr)
		pep->info->src_addrlen = mfi_addr_to_sa(&pep->addr, pep->info->src_addr);
	pep->pep_fid.fid.fclass = FI_CLASS_PEP;
	pep->pep_fid.fid.context = context;
	pep->pep_fid.fid.ops = &pep_fi_ops;
	pep->pep_fid.ops = &pep_ops;
	pep->pep_fid.cm = &pep_cm_ops;
	mfi_fabric_ref(pep->fab, 1);
	*out = &pep->pep_fid;
	return 0;
err:
	if (pep->dom && pep->dom->ctx)
		mroc_close(pep->dom->ctx);
	free(pep->dom);
	fi_freeinfo(pep->info);
	free(pep);
	return err;
}
