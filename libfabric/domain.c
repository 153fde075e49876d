// SPDX-License-Identifier: MIT
/*
 * The domain (one libmroc context: one mrocd) and memory registration.
 *
 * mrocd can only reach memory shared with it (sealed memfds), so an
 * application buffer is not handed to the daemon: each connection has a
 * libmroc region of staging slots, and data is copied between it and the
 * application's buffers.  fi_mr_reg records (address, length, access) under
 * a key, for the targets of RMA (checked on every access) and as the
 * descriptor fi_mr_desc returns; and it makes the buffer's whole pages an
 * mroc region where it can (zcopy.c), so large messages from and to it move
 * by rendezvous READ without a staging copy (rndv.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <mroc/mroc.h>

#include "mrocfi.h"

/* ---- memory regions --------------------------------------------------------- */

static size_t mr_slot(const struct mfi_domain *d, uint64_t key, bool *found)
{
	size_t lo = 0, hi = d->nmrs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (d->mrs[mid]->mr_fid.key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < d->nmrs && d->mrs[lo]->mr_fid.key == key;
	return lo;
}

struct mfi_mr *mfi_mr_find(struct mfi_domain *d, uint64_t key)
{
	bool found;
	size_t i = mr_slot(d, key, &found);

	return found ? d->mrs[i] : NULL;
}

/*
 * The bytes [addr, addr + len) of the region named key, if access allows:
 * 0 and *out (and the registration's *gen unless gen is NULL), or -FI_EACCES
 * (bad key, bounds or rights).
 */
int mfi_mr_target(struct mfi_domain *d, uint64_t key, uint64_t addr, uint64_t len,
		  uint64_t access, uint8_t **out, uint64_t *gen)
{
	struct mfi_mr *mr = mfi_mr_find(d, key);
	uint64_t off;

	if (!mr || (mr->access & access) != access)
		return -FI_EACCES;
	off = (d->mr_mode & FI_MR_VIRT_ADDR) ? addr - (uint64_t)(uintptr_t)mr->base : addr;
	if ((d->mr_mode & FI_MR_VIRT_ADDR) && addr < (uint64_t)(uintptr_t)mr->base)
		return -FI_EACCES;
	if (off > mr->len || len > mr->len - off)
		return -FI_EACCES;
	*out = mr->base + off;
	if (gen)
		*gen = mr->gen;
	return 0;
}

/* The registration mfi_mr_target found is still open (an RMA checks it at every chunk). */
bool mfi_mr_alive(struct mfi_domain *d, uint64_t key, uint64_t gen)
{
	struct mfi_mr *mr = mfi_mr_find(d, key);

	return mr && mr->gen == gen;
}

static int mr_close(struct fid *fid)
{
	struct mfi_mr *mr = container_of(fid, struct mfi_mr, mr_fid.fid);
	struct mfi_domain *d = mr->dom;
	bool found;
	size_t i;

	mfi_lock(d);
	i = mr_slot(d, mr->mr_fid.key, &found);
	if (found && d->mrs[i] == mr) {
		memmove(&d->mrs[i], &d->mrs[i + 1], (d->nmrs - i - 1) * sizeof(*d->mrs));
		d->nmrs--;
	}
	d->refs--;
	mfi_zc_dereg(mr);
	mfi_unlock(d);
	free(mr);
	return 0;
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = mfi_no_bind,
	.control = mfi_no_control,
	.ops_open = mfi_no_ops_open,
	.tostr = mfi_no_tostr,
	.ops_set = mfi_no_ops_set,
};

static int mr_insert(struct mfi_domain *d, struct mfi_mr *mr)
{
	bool found;
	size_t i = mr_slot(d, mr->mr_fid.key, &found);

	if (found)
		return -FI_ENOKEY;
	if (d->nmrs == d->mrs_cap) {
		size_t cap = d->mrs_cap ? d->mrs_cap * 2 : 64;
		struct mfi_mr **n = realloc(d->mrs, cap * sizeof(*n));

		if (!n)
			return -FI_ENOMEM;
		d->mrs = n;
		d->mrs_cap = cap;
	}
	memmove(&d->mrs[i + 1], &d->mrs[i], (d->nmrs - i) * sizeof(*d->mrs));
	d->mrs[i] = mr;
	d->nmrs++;
	return 0;
}

static int mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
		      struct fid_mr **out)
{
	struct mfi_domain *d = container_of(fid, struct mfi_domain, domain_fid.fid);
	struct mfi_mr *mr;
	int err;

	if (!attr || attr->iov_count != 1 || (flags & ~(uint64_t)0) & FI_RMA_EVENT)
		return -FI_EINVAL;
	if (attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->dom = d;
	mr->base = attr->mr_iov[0].iov_base;
	mr->len = attr->mr_iov[0].iov_len;
	mr->access = attr->access;
	mr->mr_fid.fid.fclass = FI_CLASS_MR;
	mr->mr_fid.fid.context = attr->context;
	mr->mr_fid.fid.ops = &mr_fi_ops;
	mr->mr_fid.mem_desc = mr;
	mfi_lock(d);
	mr->mr_fid.key = (d->mr_mode & FI_MR_PROV_KEY) ? d->next_key++ : attr->requested_key;
	mr->gen = ++d->next_gen;
	err = mr_insert(d, mr);
	if (!err) {
		d->refs++;
		mfi_zc_reg(d, mr);
	}
	mfi_unlock(d);
	if (err) {
		free(mr);
		return err;
	}
	*out = &mr->mr_fid;
	return 0;
}

static int mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
		   uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		   void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov, .iov_count = count, .access = access, .offset = offset,
		.requested_key = requested_key, .context = context, .iface = FI_HMEM_SYSTEM,
	};

	return mr_regattr(fid, &attr, flags, mr);
}

static int mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
		  uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr, context);
}

static struct fi_ops_mr mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = mr_reg,
	.regv = mr_regv,
	.regattr = mr_regattr,
};

/* ---- domain ------------------------------------------------------------------ */

static int domain_close(struct fid *fid)
{
	struct mfi_domain *d = container_of(fid, struct mfi_domain, domain_fid.fid);

	if (d->refs)
		return -FI_EBUSY;
	mroc_close(d->ctx);
	if (d->locked)
		pthread_mutex_destroy(&d->lock);
	mfi_fabric_ref(d->fab, -1);
	free(d->mrs);
	free(d);
	return 0;
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = domain_close,
	.bind = mfi_no_bind,
	.control = mfi_no_control,
	.ops_open = mfi_no_ops_open,
	.tostr = mfi_no_tostr,
	.ops_set = mfi_no_ops_set,
};

static int no_scalable_ep(struct fid_domain *domain, struct fi_info *info, struct fid_ep **sep,
			  void *context)
{
	return -FI_ENOSYS;
}

static int no_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
			struct fid_poll **pollset)
{
	return -FI_ENOSYS;
}

static int no_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr, struct fid_stx **stx,
		      void *context)
{
	return -FI_ENOSYS;
}

static int no_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
		      void *context)
{
	return -FI_ENOSYS;
}

static int no_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
			       struct fi_collective_attr *attr, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int endpoint2(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
		     uint64_t flags, void *context)
{
	return flags ? -FI_EINVAL : mfi_ep_open(domain, info, ep, context);
}

static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = mfi_av_open,
	.cq_open = mfi_cq_open,
	.endpoint = mfi_ep_open,
	.scalable_ep = no_scalable_ep,
	.cntr_open = mfi_cntr_open,
	.poll_open = no_poll_open,
	.stx_ctx = no_stx_ctx,
	.srx_ctx = no_srx_ctx,
	.query_atomic = mfi_query_atomic,
	.query_collective = no_query_collective,
	.endpoint2 = endpoint2,
};

int mfi_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **out,
		    void *context)
{
	struct mfi_fabric *fab = container_of(fabric, struct mfi_fabric, fabric_fid);
	/* Never yield inside libmroc: a CQ read decides for all its QPs at once (cq.c). */
	struct mroc_ctx_opts o = { .sz = sizeof(o), .spin_us = MROC_SPIN_FOREVER };
	struct mfi_domain *d;
	int err;

	if (!info || !info->domain_attr)
		return -FI_EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -FI_ENOMEM;
	d->fab = fab;
	d->ctx = mroc_open(&o);
	if (!d->ctx) {
		err = -errno;
		free(d);
		/* No mrocd on this host (or not ours to use): no such domain. */
		return err == -ENOENT || err == -ECONNREFUSED ? -FI_ENODEV :
		       mfi_mroc_err(err, "opening mrocd's context");
	}
	d->locked = info->domain_attr->threading != FI_THREAD_DOMAIN &&
		    info->domain_attr->threading != FI_THREAD_UNSPEC;
	if (d->locked) {
		pthread_mutexattr_t a;

		/* Recursive: progress inside a locked call may close over the same domain. */
		pthread_mutexattr_init(&a);
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
		pthread_mutex_init(&d->lock, &a);
		pthread_mutexattr_destroy(&a);
	}
	switch (info->domain_attr->mr_mode) {
	case FI_MR_BASIC:	d->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY; break;
	case FI_MR_SCALABLE:	d->mr_mode = 0; break;
	default:		d->mr_mode = info->domain_attr->mr_mode; break;
	}
	d->next_key = 1;
	d->api = info->fabric_attr && info->fabric_attr->api_version ?
		 info->fabric_attr->api_version : MFI_API_VERSION;
	d->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	d->domain_fid.fid.context = context;
	d->domain_fid.fid.ops = &domain_fi_ops;
	d->domain_fid.ops = &domain_ops;
	d->domain_fid.mr = &mr_ops;
	mfi_fabric_ref(fab, 1);
	*out = &d->domain_fid;
	return 0;
}
