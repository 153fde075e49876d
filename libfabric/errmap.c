// SPDX-License-Identifier: MIT
/*
 * A negative errno as the nearest code fi_errno.h defines (errmap.h).  The
 * libfabric codes that are errno values are listed once here; fi_errno.h's
 * own (FI_EOTHER .. FI_ENORX) are above FI_ERRNO_OFFSET.
 */
#include <errno.h>
#include <stddef.h>

#include <rdma/fi_errno.h>

#include "errmap.h"

static const int fi_errnos[] = {
	FI_EPERM, FI_ENOENT, FI_EINTR, FI_EIO, FI_E2BIG, FI_EBADF, FI_EAGAIN, FI_ENOMEM,
	FI_EACCES, FI_EFAULT, FI_EBUSY, FI_ENODEV, FI_EINVAL, FI_EMFILE, FI_ENOSPC, FI_ENOSYS,
	FI_EWOULDBLOCK, FI_ENOMSG, FI_ENODATA, FI_EOVERFLOW, FI_EMSGSIZE, FI_ENOPROTOOPT,
	FI_EOPNOTSUPP, FI_EADDRINUSE, FI_EADDRNOTAVAIL, FI_ENETDOWN, FI_ENETUNREACH,
	FI_ECONNABORTED, FI_ECONNRESET, FI_ENOBUFS, FI_EISCONN, FI_ENOTCONN, FI_ESHUTDOWN,
	FI_ETIMEDOUT, FI_ECONNREFUSED, FI_EHOSTDOWN, FI_EHOSTUNREACH, FI_EALREADY,
	FI_EINPROGRESS, FI_EREMOTEIO, FI_ECANCELED, FI_EKEYREJECTED,
};

bool mfi_is_fi_errno(int err)
{
	int e = -err;

	if (e >= FI_ERRNO_OFFSET && e < FI_ERRNO_MAX)
		return true;
	for (size_t i = 0; i < sizeof(fi_errnos) / sizeof(fi_errnos[0]); i++)
		if (fi_errnos[i] == e)
			return true;
	return false;
}

int mfi_errno_map(int err)
{
	if (err >= 0 || mfi_is_fi_errno(err))
		return err;
	switch (-err) {
	case EDQUOT:		/* a per-client limit of mrocd (QPs, regions, bytes) */
		return -FI_ENOSPC;
	case EUSERS:		/* mrocd has all the clients it accepts */
	case EEXIST:
		return -FI_EBUSY;
	case ENFILE:
		return -FI_EMFILE;
	case ENXIO:
	case ESRCH:
		return -FI_ENODEV;
	case EPROTO:		/* mrocd speaks another protocol version, or a bad reply */
	case EBADMSG:		/* the shared rings are corrupted */
	case EPIPE:
		return -FI_EIO;
	case ERANGE:
	case EFBIG:
		return -FI_EINVAL;
	default:
		return -FI_EOTHER;
	}
}
