// SPDX-License-Identifier: MIT
/*
 * FI_ATOMIC: not offered yet (fi_getinfo never lists it, fi_query_atomic says
 * -FI_ENOSYS).  The plan: FI_SUM/FI_CSWAP on 8-byte integers map onto
 * libmroc's MROC_WR_ATOMIC_FETCH_ADD / MROC_WR_ATOMIC_CMP_SWP once the engine
 * has them (issue 14, item 1), posted on the same connection as RMA, the
 * target's MR checked as for RMA; everything else the target would apply in
 * software, like RMA today.  Until then every entry answers -FI_ENOSYS.
 */
#include "mrocfi.h"

static ssize_t a_write(struct fid_ep *ep, const void *buf, size_t count, void *desc,
		       fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
		       enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t a_writev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
			fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
			enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t a_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg, uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t a_inject(struct fid_ep *ep, const void *buf, size_t count, fi_addr_t dest,
			uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op)
{
	return -FI_ENOSYS;
}

static ssize_t a_readwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			   void *result, void *result_desc, fi_addr_t dest, uint64_t addr,
			   uint64_t key, enum fi_datatype dt, enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t a_readwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
			    size_t count, struct fi_ioc *resultv, void **result_desc,
			    size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
			    enum fi_datatype dt, enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t a_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			      struct fi_ioc *resultv, void **result_desc, size_t result_count,
			      uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t a_compwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			   const void *compare, void *compare_desc, void *result,
			   void *result_desc, fi_addr_t dest, uint64_t addr, uint64_t key,
			   enum fi_datatype dt, enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t a_compwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
			    size_t count, const struct fi_ioc *comparev, void **compare_desc,
			    size_t compare_count, struct fi_ioc *resultv, void **result_desc,
			    size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
			    enum fi_datatype dt, enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t a_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			      const struct fi_ioc *comparev, void **compare_desc,
			      size_t compare_count, struct fi_ioc *resultv, void **result_desc,
			      size_t result_count, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int a_valid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	return -FI_ENOSYS;
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
	.writevalid = a_valid,
	.readwritevalid = a_valid,
	.compwritevalid = a_valid,
};
