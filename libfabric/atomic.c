// SPDX-License-Identifier: MIT
/*
 * FI_ATOMIC: fi_atomic*, fi_fetch_atomic*, fi_compare_atomic*, fi_inject_atomic
 * and the *valid queries, for both endpoint types.
 *
 * mrocd's native atomics (MROC_WR_ATOMIC_FETCH_ADD / _CMP_SWP) work on
 * memory mrocd can reach, and an application's fi_mr_reg'd buffer is not
 * (domain.c), so an atomic is a request of the provider's own (proto.h
 * ATOMIC), sent on the connection like an RMA and applied at the target's
 * progress by atomic_ops.c, whose answer (ATOMIC_RESP with the original
 * values, or RMA_ACK) completes it.  The operands and compare values are
 * copied when the call is made, so their buffers may be reused at once; the
 * result buffers must stay valid until the completion.  One operation
 * carries at most MFI_ATOMIC_MAX_BYTES of operands (the count the *valid
 * calls report), so it always fits one chunk.
 */
#include <stdlib.h>
#include <string.h>

#include "mrocfi.h"

struct atomic_args {
	enum mfi_atomic_kind kind;
	const struct fi_ioc *iov;	/* operands (their count: ATOMIC_READ's too) */
	size_t count;
	const struct fi_ioc *cmp;	/* compare family */
	size_t cmp_count;
	const struct fi_ioc *res;	/* fetch and compare families */
	size_t res_count;
	fi_addr_t dest;
	uint64_t addr, key;
	enum fi_datatype dt;
	enum fi_op op;
	uint64_t flags, data;
	void *context;
	bool inject;			/* fi_inject_atomic: never completes */
};

/* Elements in n iocs, or SIZE_MAX when more than MFI_IOV_LIMIT iocs. */
static size_t ioc_elems(const struct fi_ioc *v, size_t n)
{
	size_t e = 0;

	if (n > MFI_IOV_LIMIT || (n && !v))
		return SIZE_MAX;
	for (size_t i = 0; i < n; i++)
		e += v[i].count;
	return e;
}

/* Copy the elements of n iocs to dst; the bytes copied. */
static size_t ioc_gather(uint8_t *dst, const struct fi_ioc *v, size_t n, size_t size)
{
	size_t off = 0;

	for (size_t i = 0; i < n; i++) {
		memcpy(dst + off, v[i].addr, v[i].count * size);
		off += v[i].count * size;
	}
	return off;
}

/* The call's arguments make sense: -FI_EOPNOTSUPP or -FI_EINVAL if not. */
static int check_args(const struct atomic_args *a, size_t *elems)
{
	size_t max, size = mfi_atomic_dtsize(a->dt), n = ioc_elems(a->iov, a->count);

	if (mfi_atomic_valid(a->kind, a->dt, a->op, &max))
		return -FI_EOPNOTSUPP;
	if (!n || n > max || (a->inject && n * size > MFI_INJECT_SIZE))
		return -FI_EINVAL;
	if (a->kind != MFI_ATOMIC_WRITE && ioc_elems(a->res, a->res_count) != n)
		return -FI_EINVAL;
	if (a->kind == MFI_ATOMIC_COMPARE && ioc_elems(a->cmp, a->cmp_count) != n)
		return -FI_EINVAL;
	for (size_t i = 0; a->op != FI_ATOMIC_READ && i < a->count; i++)
		if (a->iov[i].count && !a->iov[i].addr)
			return -FI_EINVAL;
	/* Compare values are copied now, results written when the answer comes: NULL neither. */
	for (size_t i = 0; a->kind == MFI_ATOMIC_COMPARE && i < a->cmp_count; i++)
		if (a->cmp[i].count && !a->cmp[i].addr)
			return -FI_EINVAL;
	for (size_t i = 0; a->kind != MFI_ATOMIC_WRITE && i < a->res_count; i++)
		if (a->res[i].count && !a->res[i].addr)
			return -FI_EINVAL;
	*elems = n;
	return 0;
}

static ssize_t post_atomic(struct mfi_ep *ep, const struct atomic_args *a)
{
	bool completion = !a->inject && (!(ep->tx_flags & FI_SELECTIVE_COMPLETION) ||
					 (a->flags & FI_COMPLETION));
	size_t n, size = mfi_atomic_dtsize(a->dt), payload;
	struct mfi_atomic_desc d;
	struct mfi_txop *op;
	struct mfi_conn *c;
	uint8_t *buf;
	int err = check_args(a, &n);

	if (err)
		return err;
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	d = (struct mfi_atomic_desc){ .op = (uint8_t)a->op, .datatype = (uint8_t)a->dt,
				      .kind = (uint8_t)a->kind, .count = (uint32_t)n };
	payload = a->op == FI_ATOMIC_READ ? 0 : n * size * (a->kind == MFI_ATOMIC_COMPARE ? 2 : 1);
	buf = malloc(payload ? payload : 1);
	if (!buf)
		return -FI_ENOMEM;
	if (payload) {
		size_t off = ioc_gather(buf, a->iov, a->count, size);

		if (a->kind == MFI_ATOMIC_COMPARE)
			ioc_gather(buf + off, a->cmp, a->cmp_count, size);
	}
	mfi_lock(ep->dom);
	c = mfi_ep_tx_conn(ep, a->dest, &err);
	if (!c)
		goto out;
	op = mfi_ep_txop_get(ep);
	if (!op) {
		err = -FI_EAGAIN;
		goto out;
	}
	op->kind = TX_ATOMIC;
	op->tag = mfi_atomic_desc_encode(&d);
	op->data = a->data;
	op->rkey = a->key;
	op->raddr = a->addr;
	op->flags = a->flags;
	op->context = a->context;
	op->completion = completion;
	op->iov[0] = (struct iovec){ buf, payload };
	op->iov_count = 1;
	op->owned = true;
	op->total = payload;
	buf = NULL;
	for (size_t i = 0; a->kind != MFI_ATOMIC_WRITE && i < a->res_count; i++)
		op->res[i] = (struct iovec){ a->res[i].addr, a->res[i].count * size };
	op->res_count = a->kind != MFI_ATOMIC_WRITE ? a->res_count : 0;
	op->req_id = mfi_rma_track(ep, op);
	mfi_conn_queue(c, op);
	mfi_conn_kick(c);
	err = 0;
out:
	mfi_unlock(ep->dom);
	free(buf);
	return err;
}

#define EP(fid) container_of(fid, struct mfi_ep, ep_fid)
#define IOC1(buf, n) (&(struct fi_ioc){ .addr = (void *)(buf), .count = (n) })

/* ---- fi_atomic ------------------------------------------------------------------ */

static ssize_t a_write(struct fid_ep *ep, const void *buf, size_t count, void *desc,
		       fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
		       enum fi_op op, void *context)
{
	return post_atomic(EP(ep), &(struct atomic_args){
		.kind = MFI_ATOMIC_WRITE, .iov = IOC1(buf, count), .count = 1, .dest = dest,
		.addr = addr, .key = key, .dt = dt, .op = op, .flags = EP(ep)->tx_op_flags,
		.context = context });
}

static ssize_t a_writev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
			fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
			enum fi_op op, void *context)
{
	return post_atomic(EP(ep), &(struct atomic_args){
		.kind = MFI_ATOMIC_WRITE, .iov = iov, .count = count, .dest = dest, .addr = addr,
		.key = key, .dt = dt, .op = op, .flags = EP(ep)->tx_op_flags, .context = context });
}

static ssize_t a_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *m, uint64_t flags)
{
	if (!m || m->rma_iov_count != 1 || !m->rma_iov)
		return -FI_EINVAL;
	return post_atomic(EP(ep), &(struct atomic_args){
		.kind = MFI_ATOMIC_WRITE, .iov = m->msg_iov, .count = m->iov_count,
		.dest = m->addr, .addr = m->rma_iov[0].addr, .key = m->rma_iov[0].key,
		.dt = m->datatype, .op = m->op, .flags = flags, .data = m->data,
		.context = m->context });
}

static ssize_t a_inject(struct fid_ep *ep, const void *buf, size_t count, fi_addr_t dest,
			uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op)
{
	return post_atomic(EP(ep), &(struct atomic_args){
		.kind = MFI_ATOMIC_WRITE, .iov = IOC1(buf, count), .count = 1, .dest = dest,
		.addr = addr, .key = key, .dt = dt, .op = op, .inject = true });
}

/* ---- fi_fetch_atomic -------------------------------------------------------------- */

static ssize_t a_readwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			   void *result, void *result_desc, fi_addr_t dest, uint64_t addr,
			   uint64_t key, enum fi_datatype dt, enum fi_op op, void *context)
{
	return post_atomic(EP(ep), &(struct atomic_args){
		.kind = MFI_ATOMIC_FETCH, .iov = IOC1(buf, count), .count = 1,
		.res = IOC1(result, count), .res_count = 1, .dest = dest, .addr = addr,
		.key = key, .dt = dt, .op = op, .flags = EP(ep)->tx_op_flags, .context = context });
}

static ssize_t a_readwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
			    size_t count, struct fi_ioc *resultv, void **result_desc,
			    size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
			    enum fi_datatype dt, enum fi_op op, void *context)
{
	return post_atomic(EP(ep), &(struct atomic_args){
		.kind = MFI_ATOMIC_FETCH, .iov = iov, .count = count, .res = resultv,
		.res_count = result_count, .dest = dest, .addr = addr, .key = key, .dt = dt,
		.op = op, .flags = EP(ep)->tx_op_flags, .context = context });
}

static ssize_t a_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *m,
			      struct fi_ioc *resultv, void **result_desc, size_t result_count,
			      uint64_t flags)
{
	if (!m || m->rma_iov_count != 1 || !m->rma_iov)
		return -FI_EINVAL;
	return post_atomic(EP(ep), &(struct atomic_args){
		.kind = MFI_ATOMIC_FETCH, .iov = m->msg_iov, .count = m->iov_count,
		.res = resultv, .res_count = result_count, .dest = m->addr,
		.addr = m->rma_iov[0].addr, .key = m->rma_iov[0].key, .dt = m->datatype,
		.op = m->op, .flags = flags, .data = m->data, .context = m->context });
}

/* ---- fi_compare_atomic ------------------------------------------------------------ */

static ssize_t a_compwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			   const void *compare, void *compare_desc, void *result,
			   void *result_desc, fi_addr_t dest, uint64_t addr, uint64_t key,
			   enum fi_datatype dt, enum fi_op op, void *context)
{
	return post_atomic(EP(ep), &(struct atomic_args){
		.kind = MFI_ATOMIC_COMPARE, .iov = IOC1(buf, count), .count = 1,
		.cmp = IOC1(compare, count), .cmp_count = 1, .res = IOC1(result, count),
		.res_count = 1, .dest = dest, .addr = addr, .key = key, .dt = dt, .op = op,
		.flags = EP(ep)->tx_op_flags, .context = context });
}

static ssize_t a_compwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
			    size_t count, const struct fi_ioc *comparev, void **compare_desc,
			    size_t compare_count, struct fi_ioc *resultv, void **result_desc,
			    size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
			    enum fi_datatype dt, enum fi_op op, void *context)
{
	return post_atomic(EP(ep), &(struct atomic_args){
		.kind = MFI_ATOMIC_COMPARE, .iov = iov, .count = count, .cmp = comparev,
		.cmp_count = compare_count, .res = resultv, .res_count = result_count,
		.dest = dest, .addr = addr, .key = key, .dt = dt, .op = op,
		.flags = EP(ep)->tx_op_flags, .context = context });
}

static ssize_t a_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *m,
			      const struct fi_ioc *comparev, void **compare_desc,
			      size_t compare_count, struct fi_ioc *resultv, void **result_desc,
			      size_t result_count, uint64_t flags)
{
	if (!m || m->rma_iov_count != 1 || !m->rma_iov)
		return -FI_EINVAL;
	return post_atomic(EP(ep), &(struct atomic_args){
		.kind = MFI_ATOMIC_COMPARE, .iov = m->msg_iov, .count = m->iov_count,
		.cmp = comparev, .cmp_count = compare_count, .res = resultv,
		.res_count = result_count, .dest = m->addr, .addr = m->rma_iov[0].addr,
		.key = m->rma_iov[0].key, .dt = m->datatype, .op = m->op, .flags = flags,
		.data = m->data, .context = m->context });
}

/* ---- what is supported ------------------------------------------------------------ */

static int a_writevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	return mfi_atomic_valid(MFI_ATOMIC_WRITE, dt, op, count);
}

static int a_readwritevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op,
			    size_t *count)
{
	return mfi_atomic_valid(MFI_ATOMIC_FETCH, dt, op, count);
}

static int a_compwritevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op,
			    size_t *count)
{
	return mfi_atomic_valid(MFI_ATOMIC_COMPARE, dt, op, count);
}

/* fi_query_atomic: flags 0, FI_FETCH_ATOMIC or FI_COMPARE_ATOMIC name the family. */
int mfi_query_atomic(struct fid_domain *domain, enum fi_datatype dt, enum fi_op op,
		     struct fi_atomic_attr *attr, uint64_t flags)
{
	enum mfi_atomic_kind kind = MFI_ATOMIC_WRITE;
	size_t n;
	int err;

	if (!attr || (flags & ~(uint64_t)(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC)) ||
	    (flags & FI_FETCH_ATOMIC && flags & FI_COMPARE_ATOMIC))
		return -FI_EINVAL;
	if (flags & FI_FETCH_ATOMIC)
		kind = MFI_ATOMIC_FETCH;
	else if (flags & FI_COMPARE_ATOMIC)
		kind = MFI_ATOMIC_COMPARE;
	err = mfi_atomic_valid(kind, dt, op, &n);
	if (err)
		return err;
	attr->count = n;
	attr->size = mfi_atomic_dtsize(dt);
	return 0;
}

struct fi_ops_atomic mfi_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = a_write,
	.writev = a_writev,
	.writemsg = a_writemsg,
	.inject = a_inject,
	.readwrite = a_readwrite,
	.readwritev = a_readwritev,
	.readwritemsg = a_readwritemsg,
	.compwrite = a_compwrite,
	.compwritev = a_compwritev,
	.compwritemsg = a_compwritemsg,
	.writevalid = a_writevalid,
	.readwritevalid = a_readwritevalid,
	.compwritevalid = a_compwritevalid,
};
