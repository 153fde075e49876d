// SPDX-License-Identifier: MIT
/*
 * What we do not implement answers -FI_ENOSYS (libfabric's own fi_no_*
 * helpers are internal to libfabric.so, not exported to providers); an
 * option asked of an object that has none, -FI_ENOPROTOOPT.
 */
#include "mrocfi.h"

int mfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int mfi_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

int mfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
	return -FI_ENOSYS;
}

int mfi_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		     struct fid_wait **waitset)
{
	return -FI_ENOSYS;
}

int mfi_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	return -FI_ENOSYS;
}

int mfi_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *context)
{
	return -FI_ENOSYS;
}

int mfi_no_getname(fid_t fid, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

int mfi_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

int mfi_no_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

int mfi_no_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

int mfi_no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

int mfi_no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

int mfi_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

int mfi_no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
		void *context)
{
	return -FI_ENOSYS;
}

int mfi_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr, struct fid_ep **ep,
		  void *context)
{
	return -FI_ENOSYS;
}

int mfi_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr, struct fid_ep **ep,
		  void *context)
{
	return -FI_ENOSYS;
}

/* An object without options: every option is one it does not know. */
int mfi_no_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	return -FI_ENOPROTOOPT;
}

int mfi_no_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	return -FI_ENOPROTOOPT;
}
