// SPDX-License-Identifier: MIT
/*
 * The passive endpoint (FI_EP_MSG's listener): it keeps MFI_LISTENERS QPs
 * listening on its service in a context of its own; a listening QP that a
 * client connects becomes a FI_CONNREQ whose fi_info->handle names it, which
 * fi_accept (ep.c) moves to the new endpoint and fi_reject closes (the client
 * sees FI_ECONNREFUSED).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <mroc/mroc.h>

#include "mrocfi.h"

void mfi_pep_progress(struct mfi_pep *pep)
{
	struct mfi_conn *c;

	/* Only the connection event: the rest waits in the QP for the endpoint that accepts. */
	for (c = pep->listeners; c; c = c->next) {
		struct mroc_wc wc;
		struct fi_info *info;

		if (c->state != MFI_CONN_LISTEN || mroc_poll_cq(c->qp, &wc, 1) != 1)
			continue;
		if (wc.opcode != MROC_WC_CONNECTED) {
			c->state = MFI_CONN_DOWN;
			continue;
		}
		c->state = MFI_CONN_UP;
		info = fi_dupinfo(pep->info);
		if (!info)
			continue;
		info->handle = &c->handle;
		if (pep->eq)
			mfi_eq_push(pep->eq, FI_CONNREQ, &pep->pep_fid.fid, info, 0);
		else
			fi_freeinfo(info);
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

static int pep_reject(struct fid_pep *fid, fid_t handle, const void *param, size_t paramlen)
{
	struct mfi_pep *pep = container_of(fid, struct mfi_pep, pep_fid);
	struct mfi_conn **pp;

	if (!handle || handle->fclass != FI_CLASS_CONNREQ)
		return -FI_EINVAL;
	for (pp = &pep->listeners; *pp; pp = &(*pp)->next)
		if (&(*pp)->handle == handle) {
			struct mfi_conn *c = *pp;

			*pp = c->next;
			mfi_conn_destroy(c);	/* the client sees the QP close: refused */
			return 0;
		}
	return -FI_ENOENT;
}

static int pep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct mfi_pep *pep = container_of(fid, struct mfi_pep, pep_fid.fid);

	return mfi_name_copy(&pep->addr, addr, addrlen);
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
	fi_freeinfo(pep->info);
	free(pep);
	return 0;
}

static int pep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct mfi_pep *pep = container_of(fid, struct mfi_pep, pep_fid.fid);

	if (bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	pep->eq = container_of(bfid, struct mfi_eq, eq_fid.fid);
	return mfi_eq_watch(pep->eq, fid);
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
	.getopt = mfi_no_getopt,
	.setopt = mfi_no_setopt,
	.tx_ctx = mfi_no_tx_ctx,
	.rx_ctx = mfi_no_rx_ctx,
	.rx_size_left = NULL,
	.tx_size_left = NULL,
};

static struct fi_ops_cm pep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = mfi_no_setname,
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
	pep->info->src_addr = malloc(sizeof(struct sockaddr_in));
	if (pep->info->src_addr) {
		mfi_addr_to_sin(&pep->addr, pep->info->src_addr);
		pep->info->src_addrlen = sizeof(struct sockaddr_in);
	}
	pep->pep_fid.fid.fclass = FI_CLASS_PEP;
	pep->pep_fid.fid.context = context;
	pep->pep_fid.fid.ops = &pep_fi_ops;
	pep->pep_fid.ops = &pep_ops;
	pep->pep_fid.cm = &pep_cm_ops;
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
