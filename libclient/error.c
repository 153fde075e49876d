// SPDX-License-Identifier: MIT
/*
 * Error texts and diagnostics.  The print callback is the library's only
 * global; nothing is printed unless the application installs one.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "internal.h"

static _Atomic(mroc_print_fn) print_fn;

mroc_print_fn mroc_set_print(mroc_print_fn fn)
{
	return atomic_exchange(&print_fn, fn);
}

void libmroc_pr(enum mroc_print_level level, const char *fmt, ...)
{
	mroc_print_fn fn = atomic_load(&print_fn);
	int saved = errno;	/* the library leaves errno alone, callbacks included */
	va_list ap;

	if (!fn)
		return;
	va_start(ap, fmt);
	fn(level, fmt, ap);
	va_end(ap);
	errno = saved;
}

/* Texts for what this library's functions document or produce; the rest is libc's. */
static const char *own_text(int err)
{
	switch (err) {
	case 0:
		return "success";
	case ENOENT:
		return "mrocd's socket does not exist (is mrocd running, is the socket path right?)";
	case ECONNREFUSED:
		return "mrocd is not running or refused the connection (is the socket path right?)";
	case EACCES:
		return "permission denied by mrocd or its socket (is this user allowed to use it?)";
	case EPROTO:
		return "mrocd speaks another protocol version than this libmroc, or sent a bad reply";
	case EUSERS:
		return "mrocd has as many clients as it accepts (in all, or of this user)";
	case ENOTCONN:
		return "the connection to mrocd is lost (did mrocd stop?)";
	case EAGAIN:
		return "the queue is full (or empty): try again later";
	case EFAULT:
		return "buffer outside the memory region named by its local key";
	case EBADMSG:
		return "the shared rings are corrupted (an index moved impossibly)";
	case ETIMEDOUT:
		return "timed out";
	case ECONNRESET:
		return "the connection was closed (by the peer or by mrocd)";
	case ENOBUFS:
		return "too many completions arrived while waiting: poll the completion queue";
	case EDQUOT:
		return "a limit of this client in mrocd is reached (QPs, regions, registered bytes "
		       "or pinned bytes: limits.*_per_client), or its user's share of mrocd's QPs "
		       "or regions (limits.uid_share_percent)";
	case ENOMEM:
		return "out of memory, or mrocd cannot pin (lock) more memory for clients "
		       "(its RLIMIT_MEMLOCK: LimitMEMLOCK= in mrocd.service)";
	case EPERM:
		return "operation not permitted (a memfd to register must allow sealing "
		       "(MFD_ALLOW_SEALING), not be closed to seals (F_SEAL_SEAL) and not be "
		       "sealed against writes: mrocd seals what it registers against new writable "
		       "mappings (F_SEAL_FUTURE_WRITE): a memfd registered before can be registered "
		       "again only by the context that registered it, with mroc_mr_reg_memfd)";
	case EOPNOTSUPP:
		return "operation not supported (mrocd registers ordinary memfds only, not "
		       "hugetlbfs ones: MFD_HUGETLB)";
	case EADDRINUSE:
		return "the service id is bound by another client of mrocd (one client listens on "
		       "a service id until it exits or destroys its listening QPs)";
	case ENODATA:
		return "mrocd pins only memory the application has allocated: a page of the memfd "
		       "was never written or mapped with MAP_POPULATE (or is swapped out); "
		       "mroc_mr_alloc and mroc_mr_reg_memfd populate it";
	case EINVAL:
		return "invalid argument";
	}
	return NULL;
}

const char *mroc_strerror(int err)
{
	char buf[64];
	const char *s;

	if (err < 0)
		err = -err;
	s = own_text(err);
	if (s)
		return s;
	/*
	 * GNU strerror_r returns libc's static text for a known errno and only
	 * writes into buf for an unknown one, which we cannot return.
	 */
	s = strerror_r(err, buf, sizeof(buf));
	return s == buf ? "unknown error" : s;
}

static const char *const wc_status_text[] = {
	[MROC_WC_SUCCESS] = "success",
	[MROC_WC_LOC_LEN_ERR] = "local length error",
	[MROC_WC_LOC_PROT_ERR] = "local protection error",
	[MROC_WC_REM_ACCESS_ERR] = "remote access error",
	[MROC_WC_REM_INV_REQ_ERR] = "remote invalid request error",
	[MROC_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
	[MROC_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
	[MROC_WC_FLUSH_ERR] = "work request flushed",
	[MROC_WC_CONNECT_ERR] = "connection failed",
	[MROC_WC_BAD_WR] = "work request refused by mrocd",
};

const char *mroc_wc_status_str(int status)
{
	if (status < 0 || status >= (int)(sizeof(wc_status_text) / sizeof(wc_status_text[0])) ||
	    !wc_status_text[status])
		return "unknown status";
	return wc_status_text[status];
}

static const char *const conn_err_text[] = {
	[MROC_CONN_ERR_NONE] = "no error",
	[MROC_CONN_ERR_NO_LISTENER] = "nobody listens on that service id",
	[MROC_CONN_ERR_BAD_PARAM] = "the peer refused the QP's mode, MTU or paths",
	[MROC_CONN_ERR_NO_RESOURCES] = "no resources for the QP",
	[MROC_CONN_ERR_CLOSED] = "the peer's QP was closed",
	[MROC_CONN_ERR_REFUSED] = "refused",
	[MROC_CONN_ERR_SECURITY] = "the daemons' security modes differ",
	[MROC_CONN_ERR_BUSY] = "the listener is busy with other requesters",
	[MROC_CONN_ERR_NO_ANSWER] = "no answer",
};

const char *mroc_conn_err_str(int conn_err)
{
	if (conn_err < 0 || conn_err >= (int)(sizeof(conn_err_text) / sizeof(conn_err_text[0])) ||
	    !conn_err_text[conn_err])
		return "unknown reason";
	return conn_err_text[conn_err];
}
