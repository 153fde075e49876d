// SPDX-License-Identifier: MIT
/*
 * The provider's entry point (fi_prov_ini), fi_getinfo and the fabric object.
 *
 * fi_getinfo answers with up to two entries, FI_EP_RDM then FI_EP_MSG, each
 * filtered by the hints: a capability, ordering, progress model, address
 * format, size or name we do not have removes the entry (so fi_getinfo says
 * FI_ENODATA), and what the hints leave open is filled with what we do.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <mroc/mroc.h>

#include "mrocfi.h"
#include "route_addr.h"

#define MFI_RDM_CAPS (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_RECV | FI_READ | \
		      FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_DIRECTED_RECV | FI_SOURCE | \
		      FI_MULTI_RECV | FI_RMA_EVENT | FI_LOCAL_COMM | FI_REMOTE_COMM)
#define MFI_MSG_CAPS (FI_MSG | FI_RMA | FI_ATOMIC | FI_SEND | FI_RECV | FI_READ | FI_WRITE | \
		      FI_REMOTE_READ | FI_REMOTE_WRITE | FI_MULTI_RECV | FI_RMA_EVENT | \
		      FI_LOCAL_COMM | FI_REMOTE_COMM)
/* One connection carries a direction's operations in order, so every ordering holds. */
#define MFI_ORDER (FI_ORDER_SAS | FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_WAR | FI_ORDER_WAW | \
		   FI_ORDER_SAR | FI_ORDER_SAW | FI_ORDER_RAS | FI_ORDER_WAS)
/*
 * libfabric's utility providers (ofi_rxm, ofi_rxd) ask core providers for
 * endpoints to layer on with this flag (OFI_CORE_PROV_ONLY in libfabric's
 * internal ofi.h, the same bit since 1.5).  We have our own RDM endpoint, so
 * "mroc;ofi_rxm" would only be a slower duplicate that MPI may pick first.
 */
#define MFI_FLAG_CORE_PROV_ONLY (1ULL << 59)
/* The MR modes we can work with; each one the application accepts is used. */
#define MFI_MR_MODES (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY)
/* libfabric's "generic" tag format (FI_TAG_GENERIC, internal): we match all 64 bits. */
#define MFI_TAG_FORMAT 0xAAAAAAAAAAAAAAAAull

static void mfi_cleanup(void)
{
	mfi_zc_fini();
}

struct fi_provider mfi_prov = {
	.name = MFI_PROV_NAME,
	.version = MFI_PROV_VERSION,
	.fi_version = MFI_API_VERSION,
	.getinfo = mfi_getinfo,
	.fabric = mfi_fabric_open,
	.cleanup = mfi_cleanup,
};

/*
 * An error of libmroc (a negative errno) on its way out to the application:
 * logged once here with libmroc's text, which names the cause (EDQUOT: which
 * mrocd limit), and returned as the nearest FI_E* code (errmap.c), since an
 * errno fi_errno.h lacks means nothing to fi_strerror or to the caller.
 */
int mfi_mroc_err(int err, const char *what)
{
	if (err >= 0)
		return err;
	FI_WARN(&mfi_prov, FI_LOG_CORE, "%s: %s\n", what, mroc_strerror(err));
	return mfi_errno_map(err);
}

/* A CQ's or EQ's fi_*_strerror: our prov_errno is an FI_E* code (either sign). */
const char *mfi_strerror(int prov_errno, char *buf, size_t len)
{
	const char *s = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);

	if (buf && len) {
		strncpy(buf, s, len - 1);
		buf[len - 1] = 0;
		return buf;
	}
	return s;
}

FI_EXT_INI
{
	fi_param_define(&mfi_prov, "addr", FI_PARAM_STRING,
			"IPv4 or IPv6 address of this host's mrocd, as peers reach it (default: "
			"the source address of the default route, IPv4's, else IPv6's)");
	fi_param_define(&mfi_prov, "paths", FI_PARAM_INT,
			"paths per connection, 1..16 (default: mrocd's)");
	fi_param_define(&mfi_prov, "mode", FI_PARAM_STRING,
			"QP mode: metaroce (default) or rocev2 (the single-path baseline)");
	fi_param_define(&mfi_prov, "spin_us", FI_PARAM_INT,
			"microseconds a CQ read finds nothing before it yields the CPU, at most "
			"once per 5 us (default 5; -1: never yield)");
	fi_param_define(&mfi_prov, "connect_timeout_ms", FI_PARAM_INT,
			"milliseconds a connect may go unanswered before the operations queued "
			"on it fail with FI_ETIMEDOUT (default 30000; 0: never)");
	fi_param_define(&mfi_prov, "rndv", FI_PARAM_BOOL,
			"large messages from and to registered memory move by rendezvous RDMA "
			"READ, without a staging copy (default 1; 0: every message is staged)");
	return &mfi_prov;
}

/* ---- addresses ---------------------------------------------------------------- */

/* A node name or address: family AF_INET, AF_INET6, or AF_UNSPEC for either (IPv4 first). */
static int parse_node(const char *node, int family, struct mfi_addr *out)
{
	struct addrinfo hints = { .ai_family = family }, *res, *r;
	int err = -FI_ENODATA;

	if (getaddrinfo(node, NULL, &hints, &res))
		return -FI_ENODATA;
	for (int pass = 0; pass < 2 && err; pass++)
		for (r = res; r && err; r = r->ai_next)
			if (r->ai_family == (pass ? AF_INET6 : AF_INET))
				err = mfi_addr_from_sa(r->ai_addr, r->ai_addrlen, true, out);
	freeaddrinfo(res);
	return err ? -FI_ENODATA : 0;
}

static int parse_service(const char *service, uint16_t *port)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(service, &end, 0);
	if (errno || *end || v == 0 || v > 65535)
		return -FI_EINVAL;
	*port = (uint16_t)v;
	return 0;
}

/* The socket family of an address format: AF_INET, AF_INET6, or AF_UNSPEC for either. */
static int format_family(uint32_t addr_format)
{
	return addr_format == FI_SOCKADDR_IN ? AF_INET :
	       addr_format == FI_SOCKADDR_IN6 ? AF_INET6 : AF_UNSPEC;
}

/* The family's route source (route_addr.h) as a name without a port. */
static int route_addr(int family, struct mfi_addr *out)
{
	struct sockaddr_storage ss;
	int err = mroc_route_src(family, &ss);

	if (!err && family == AF_INET6 && ((struct sockaddr_in6 *)&ss)->sin6_scope_id)
		err = -FI_EADDRNOTAVAIL;	/* link-local: no name peers can use */
	if (!err)
		err = mfi_addr_from_sa(&ss, sizeof(ss), true, out);
	if (!err)
		out->port = 0;
	return err;
}

/*
 * The address peers reach this host's mrocd at (port 0): info's source address
 * if it has one, else $FI_MROC_ADDR (IPv4 or IPv6), else the source of the
 * route out: the family info's address format asks for, or IPv4's then IPv6's
 * (a host with no IPv4 route: an IPv6-only fabric).
 */
int mfi_local_addr(const struct fi_info *info, struct mfi_addr *out)
{
	int family = info ? format_family(info->addr_format) : AF_UNSPEC;
	char *s = NULL;

	if (info && info->src_addr &&
	    !mfi_addr_from_sa(info->src_addr, info->src_addrlen, true, out) &&
	    !mfi_addr_unspec(out)) {
		out->port = 0;
		return 0;
	}
	if (fi_param_get_str(&mfi_prov, "addr", &s) == FI_SUCCESS && s && *s) {
		struct addrinfo hints = { .ai_flags = AI_NUMERICHOST }, *res;
		int err = -FI_EINVAL;

		if (!getaddrinfo(s, NULL, &hints, &res)) {
			err = mfi_addr_from_sa(res->ai_addr, res->ai_addrlen, true, out) ?
			      -FI_EINVAL : 0;
			freeaddrinfo(res);
		}
		if (!err)
			out->port = 0;
		return err;
	}
	if (family != AF_UNSPEC)
		return route_addr(family, out);	/* -FI_EADDRNOTAVAIL is -EADDRNOTAVAIL */
	return route_addr(AF_INET, out) ? route_addr(AF_INET6, out) : 0;
}

/*
 * An endpoint's port is reserved by binding a TCP socket to it (never
 * listened on) for the endpoint's life, so two endpoints on a host never
 * share an mroc service.  An IPv6 endpoint's socket is dual-stack (IPv6
 * and IPv4's port at once): mroc services are one space whatever the
 * family, so an IPv4 and an IPv6 endpoint never share a port either.
 * want 0: the kernel picks.
 */
int mfi_reserve_port(const struct mfi_addr *a, uint16_t want, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, off = 0;

	len = (socklen_t)mfi_addr_to_sa(&(struct mfi_addr){ .ip = mfi_addr_is4(a) ?
							  mfi_addr4(0, 0).ip : in6addr_any,
							  .port = want }, &ss);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if ((ss.ss_family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off))) ||
	    bind(fd, (struct sockaddr *)&ss, len) || getsockname(fd, (struct sockaddr *)&ss, &len)) {
		int err = errno == EADDRINUSE ? -FI_EADDRINUSE : -errno;

		close(fd);
		return err;
	}
	*port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
						 ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

/*
 * An endpoint's name: the host's address (mfi_local_addr) and a port reserved
 * for it (mfi_reserve_port; the one info->src_addr asks for, if any).  An
 * address of the other family than info's format (FI_SOCKADDR_IN or _IN6; not
 * FI_SOCKADDR, either) is refused: fi_getname's answer would not be the
 * format the application was told.  Returns the reserving socket (the
 * endpoint closes it when it goes) or -FI_E*.
 */
int mfi_bind_addr(const struct fi_info *info, struct mfi_addr *out)
{
	struct mfi_addr a, want = { 0 };
	int family = format_family(info->addr_format);
	uint16_t port;
	int fd, err = mfi_local_addr(info, &a);

	if (err)
		return err;
	if (family != AF_UNSPEC && (family == AF_INET) != mfi_addr_is4(&a)) {
		FI_WARN(&mfi_prov, FI_LOG_EP_CTRL, "this host's mrocd address is %s, not of the "
			"address format asked (%s)\n", mfi_addr_is4(&a) ? "IPv4" : "IPv6",
			fi_tostr(&info->addr_format, FI_TYPE_ADDR_FORMAT));
		return -FI_EADDRNOTAVAIL;
	}
	if (info->src_addr)
		mfi_addr_from_sa(info->src_addr, info->src_addrlen, true, &want);
	fd = mfi_reserve_port(&a, want.port, &port);
	if (fd < 0)
		return fd;
	a.port = port;
	*out = a;
	return fd;
}

/*
 * fi_setname before an endpoint is enabled (or a passive endpoint listens):
 * the name's address must be this host's mrocd's (the one *cur has) or
 * unspecified (0.0.0.0, ::: any), since mrocd has that one address; its port
 * is reserved as mfi_bind_addr's is (0: the kernel picks), the old one
 * released.  0, -FI_EINVAL (not a sockaddr_in or _in6 of that size),
 * -FI_EADDRNOTAVAIL (another address), -FI_EADDRINUSE (the port is taken).
 */
int mfi_rename(struct mfi_addr *cur, int *port_fd, const void *addr, size_t addrlen)
{
	struct mfi_addr want;
	uint16_t port;
	int fd;

	if (mfi_addr_from_sa(addr, addrlen, true, &want) || mfi_sa_len(addr) != addrlen)
		return -FI_EINVAL;
	if (!mfi_addr_unspec(&want) && memcmp(&want.ip, &cur->ip, sizeof(want.ip)))
		return -FI_EADDRNOTAVAIL;
	if (want.port && want.port == cur->port)
		return 0;
	fd = mfi_reserve_port(cur, want.port, &port);
	if (fd < 0)
		return fd;
	if (*port_fd >= 0)
		close(*port_fd);
	*port_fd = fd;
	cur->port = port;
	return 0;
}

/* fi_getname's answer: a's sockaddr_in(6), or -FI_ETOOSMALL with *addrlen the size wanted. */
int mfi_name_copy(const struct mfi_addr *a, void *addr, size_t *addrlen)
{
	struct sockaddr_storage ss;
	size_t room, len;

	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	room = *addrlen;
	len = mfi_addr_to_sa(a, &ss);
	*addrlen = len;
	if (room < len)
		return -FI_ETOOSMALL;
	memcpy(addr, &ss, len);
	return 0;
}

/* A name as a new sockaddr (of its family), its length in *len. */
static void *sa_dup(const struct mfi_addr *a, size_t *len)
{
	struct sockaddr_storage ss;
	size_t n = mfi_addr_to_sa(a, &ss);
	void *p = malloc(n);

	if (p) {
		memcpy(p, &ss, n);
		*len = n;
	}
	return p;
}

/* ---- building and filtering entries ---------------------------------------- */

/*
 * Which capabilities describe a transmit and which a receive context
 * (fi_getinfo(3)): fabtests' fi_getinfo_test refuses a tx_attr that holds
 * FI_RECV or FI_REMOTE_* and an rx_attr that holds FI_SEND, FI_READ or a
 * domain capability; both copied the endpoint's caps before.
 */
#define MFI_TX_CAPS_MASK (FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_MULTICAST | \
			  FI_NAMED_RX_CTX | FI_HMEM | FI_COLLECTIVE | FI_SEND | FI_READ | \
			  FI_WRITE | FI_TRIGGER | FI_FENCE | FI_RMA_PMEM)
#define MFI_RX_CAPS_MASK (FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_DIRECTED_RECV | \
			  FI_VARIABLE_MSG | FI_HMEM | FI_COLLECTIVE | FI_RECV | FI_REMOTE_READ | \
			  FI_REMOTE_WRITE | FI_RMA_PMEM | FI_SOURCE | FI_SOURCE_ERR | \
			  FI_RMA_EVENT | FI_MULTI_RECV | FI_TRIGGER)

static void split_caps(struct fi_info *fi)
{
	fi->tx_attr->caps = fi->caps & MFI_TX_CAPS_MASK;
	fi->rx_attr->caps = fi->caps & MFI_RX_CAPS_MASK;
}

static const char *domain_name(void)
{
	const char *s = getenv("MROC_SOCKET");

	return s && *s ? s : "/run/mroc/mrocd.sock";
}

static struct fi_info *template(enum fi_ep_type type)
{
	struct fi_info *fi = fi_allocinfo();
	uint64_t caps = type == FI_EP_RDM ? MFI_RDM_CAPS : MFI_MSG_CAPS;

	if (!fi)
		return NULL;
	fi->caps = caps;
	fi->mode = 0;
	fi->addr_format = FI_SOCKADDR_IN;
	split_caps(fi);
	fi->tx_attr->msg_order = MFI_ORDER;
	fi->tx_attr->comp_order = FI_ORDER_NONE;
	fi->tx_attr->inject_size = MFI_INJECT_SIZE;
	fi->tx_attr->size = MFI_TX_SIZE;
	fi->tx_attr->iov_limit = MFI_IOV_LIMIT;
	fi->tx_attr->rma_iov_limit = 1;
	fi->rx_attr->msg_order = MFI_ORDER;
	fi->rx_attr->comp_order = FI_ORDER_NONE;
	fi->rx_attr->size = MFI_RX_SIZE;
	fi->rx_attr->iov_limit = MFI_IOV_LIMIT;
	fi->ep_attr->type = type;
	fi->ep_attr->protocol = FI_PROTO_UNSPEC;
	fi->ep_attr->protocol_version = 1;
	fi->ep_attr->max_msg_size = MFI_MAX_MSG_SIZE;
	fi->ep_attr->mem_tag_format = type == FI_EP_RDM ? MFI_TAG_FORMAT : 0;
	fi->ep_attr->max_order_raw_size = MFI_MAX_MSG_SIZE;
	fi->ep_attr->max_order_war_size = MFI_MAX_MSG_SIZE;
	fi->ep_attr->max_order_waw_size = MFI_MAX_MSG_SIZE;
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;
	fi->domain_attr->name = strdup(domain_name());
	fi->domain_attr->threading = FI_THREAD_DOMAIN;
	fi->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
	fi->domain_attr->av_type = FI_AV_UNSPEC;
	fi->domain_attr->mr_mode = MFI_MR_MODES;
	fi->domain_attr->mr_key_size = sizeof(uint64_t);
	fi->domain_attr->cq_data_size = sizeof(uint64_t);
	fi->domain_attr->cq_cnt = 256;
	fi->domain_attr->cntr_cnt = 256;
	fi->domain_attr->ep_cnt = 128;
	fi->domain_attr->tx_ctx_cnt = 128;
	fi->domain_attr->rx_ctx_cnt = 128;
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->domain_attr->mr_iov_limit = 1;
	fi->domain_attr->mr_cnt = 65536;
	fi->domain_attr->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	fi->fabric_attr->name = strdup(MFI_FABRIC_NAME);
	fi->fabric_attr->prov_version = MFI_PROV_VERSION;
	fi->fabric_attr->api_version = MFI_API_VERSION;
	if (!fi->domain_attr->name || !fi->fabric_attr->name) {
		fi_freeinfo(fi);
		return NULL;
	}
	return fi;
}

static bool attrs_ok(const struct fi_info *fi, const struct fi_info *h)
{
	const struct fi_domain_attr *d = h->domain_attr;
	const struct fi_ep_attr *e = h->ep_attr;

	if ((h->caps & ~fi->caps) || (h->addr_format && h->addr_format != FI_SOCKADDR_IN &&
				      h->addr_format != FI_SOCKADDR_IN6 &&
				      h->addr_format != FI_SOCKADDR))
		return false;
	/* prov_name ("mroc", "mroc;^ofi_rxm") is libfabric's to match, not ours. */
	if (h->fabric_attr && h->fabric_attr->name && strcmp(h->fabric_attr->name, MFI_FABRIC_NAME))
		return false;
	if (e && ((e->max_msg_size > MFI_MAX_MSG_SIZE) ||
		  (e->protocol && e->protocol != FI_PROTO_UNSPEC) ||
		  (e->tx_ctx_cnt > 1 && e->tx_ctx_cnt != FI_SHARED_CONTEXT) || e->rx_ctx_cnt > 1 ||
		  e->auth_key_size))
		return false;
	if (d && ((d->name && strcmp(d->name, fi->domain_attr->name)) ||
		  (d->caps & ~fi->domain_attr->caps) ||	/* FI_SHARED_AV: none */
		  d->control_progress == FI_PROGRESS_AUTO || d->data_progress == FI_PROGRESS_AUTO ||
		  d->cq_data_size > sizeof(uint64_t) || d->mr_key_size > sizeof(uint64_t) ||
		  d->resource_mgmt == FI_RM_DISABLED || d->av_type == FI_AV_UNSPEC + 100))
		return false;
	if (h->tx_attr && ((h->tx_attr->msg_order & ~MFI_ORDER) ||
			   h->tx_attr->inject_size > MFI_INJECT_SIZE ||
			   (h->tx_attr->caps & ~fi->caps) || h->tx_attr->iov_limit > MFI_IOV_LIMIT ||
			   h->tx_attr->rma_iov_limit > 1))
		return false;
	if (h->rx_attr && ((h->rx_attr->msg_order & ~MFI_ORDER) || (h->rx_attr->caps & ~fi->caps) ||
			   h->rx_attr->iov_limit > MFI_IOV_LIMIT || h->rx_attr->total_buffered_recv))
		return false;
	return true;
}

/* What the hints ask for, where we can give it. */
static int apply_hints(uint32_t version, struct fi_info *fi, const struct fi_info *h)
{
	const struct fi_domain_attr *d = h->domain_attr;

	if (h->caps) {
		/* Primary capabilities as asked; FI_SOURCE etc. only when asked too. */
		fi->caps = h->caps;
		if (!(fi->caps & (FI_SEND | FI_RECV)) && (fi->caps & (FI_MSG | FI_TAGGED)))
			fi->caps |= FI_SEND | FI_RECV;
		if (!(fi->caps & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)) &&
		    (fi->caps & (FI_RMA | FI_ATOMIC)))
			fi->caps |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
		/*
		 * Counting RMA at its target costs nothing here (the target's
		 * provider applies every one), so FI_RMA_EVENT comes with it:
		 * fabtests' "-t counter" binds FI_REMOTE_* without asking for it.
		 */
		if ((fi->caps & (FI_RMA | FI_ATOMIC)) &&
		    (fi->caps & (FI_REMOTE_READ | FI_REMOTE_WRITE)))
			fi->caps |= FI_RMA_EVENT;
		split_caps(fi);
	}
	/* Tags are matched on all 64 bits: any format the application uses will do. */
	if (h->ep_attr && h->ep_attr->mem_tag_format && (fi->caps & FI_TAGGED))
		fi->ep_attr->mem_tag_format = h->ep_attr->mem_tag_format;
	if (h->tx_attr) {
		fi->tx_attr->op_flags = h->tx_attr->op_flags;
		if (h->tx_attr->msg_order)
			fi->tx_attr->msg_order = h->tx_attr->msg_order;
	}
	if (h->rx_attr) {
		fi->rx_attr->op_flags = h->rx_attr->op_flags;
		if (h->rx_attr->msg_order)
			fi->rx_attr->msg_order = h->rx_attr->msg_order;
	}
	if (!d)
		return 0;
	if (d->threading != FI_THREAD_UNSPEC)
		fi->domain_attr->threading = d->threading;
	if (d->av_type != FI_AV_UNSPEC)
		fi->domain_attr->av_type = d->av_type;
	if (d->resource_mgmt != FI_RM_UNSPEC)
		fi->domain_attr->resource_mgmt = d->resource_mgmt;
	/*
	 * MR mode: before API 1.5, FI_MR_BASIC means virtual addresses and
	 * provider keys, FI_MR_SCALABLE offsets and application keys.  From 1.5
	 * on, each bit the application sets is a requirement it can live with;
	 * we use those of ours it accepts (none is needed: see README.md), so
	 * none where it sets none (fabtests' fi_getinfo_test: mr_mode 0 got
	 * FI_MR_VIRT_ADDR | FI_MR_PROV_KEY).
	 */
	if (!FI_VERSION_GE(version, FI_VERSION(1, 5)) || d->mr_mode == FI_MR_BASIC ||
	    d->mr_mode == FI_MR_SCALABLE) {
		fi->domain_attr->mr_mode = d->mr_mode == FI_MR_SCALABLE ? FI_MR_SCALABLE :
					   FI_MR_BASIC;
	} else {
		fi->domain_attr->mr_mode = d->mr_mode & MFI_MR_MODES;
	}
	return 0;
}

/*
 * A hint's address: any sockaddr_in or sockaddr_in6, its address or port
 * possibly 0 (an entry of ours handed back, as fabtests' fi_multi_ep does with
 * fi_dupinfo: a host named without a port).  Anything else is no address of
 * ours.
 */
static int hint_addr(const void *a, size_t len, struct mfi_addr *out)
{
	return a && mfi_addr_from_sa(a, len, true, out) ? -FI_ENODATA : 0;
}

/* Does a name fit the format (FI_SOCKADDR takes either family)? */
static bool format_fits(uint32_t addr_format, const struct mfi_addr *a)
{
	int family = format_family(addr_format);

	return family == AF_UNSPEC || (family == AF_INET) == mfi_addr_is4(a);
}

/*
 * The entry's addresses and their format.  The hints' format if they give
 * one (an address of the other family is then no match: -FI_ENODATA), else
 * the family of the addresses the caller names (destination first), else of
 * this host's mrocd address: FI_SOCKADDR_IN or FI_SOCKADDR_IN6.
 */
static int set_addrs(struct fi_info *fi, const char *node, const char *service, uint64_t flags,
		     const struct fi_info *h)
{
	struct mfi_addr src = { 0 }, dst = { 0 }, local, *named;
	bool has_src = h && h->src_addr, has_dst = h && h->dest_addr;
	uint32_t format = h ? h->addr_format : FI_FORMAT_UNSPEC;
	uint16_t port = 0;
	int err;

	if (h && ((err = hint_addr(h->src_addr, h->src_addrlen, &src)) ||
		  (err = hint_addr(h->dest_addr, h->dest_addrlen, &dst))))
		return err;
	if (service && (err = parse_service(service, &port)))
		return -FI_ENODATA;
	if (node || service) {
		/* A node without a service names a host, its port to come (fi_av_insert). */
		bool to_src = (flags & FI_SOURCE) || !node;

		named = to_src ? &src : &dst;
		*(to_src ? &has_src : &has_dst) = true;
		*named = (struct mfi_addr){ .ip = format_family(format) == AF_INET6 ? in6addr_any :
						  mfi_addr4(0, 0).ip };
		if (node && (err = parse_node(node, format_family(format), named)))
			return err;
		named->port = port;
	}
	if (format == FI_FORMAT_UNSPEC) {
		const struct mfi_addr *by = has_dst ? &dst : has_src ? &src : NULL;

		if (!by && !mfi_local_addr(NULL, &local))
			by = &local;
		format = by && !mfi_addr_is4(by) ? FI_SOCKADDR_IN6 : FI_SOCKADDR_IN;
	}
	if ((has_src && !format_fits(format, &src)) || (has_dst && !format_fits(format, &dst)))
		return -FI_ENODATA;
	fi->addr_format = format;
	/*
	 * Every entry names its source (fabtests' fi_getinfo_test wants one
	 * whatever was asked): this host's address (of the format's family), the
	 * port the endpoint reserves when it opens (mfi_bind_addr).  Unknown yet
	 * (no route of that family): 0.0.0.0 or ::, the endpoint finds it, or says
	 * why.  $FI_MROC_ADDR of the other family: no entry, the endpoint could
	 * not be named in this format.
	 */
	if (!has_src) {
		if (mfi_local_addr(fi, &src))
			src = (struct mfi_addr){ .ip = format == FI_SOCKADDR_IN6 ? in6addr_any :
						 mfi_addr4(0, 0).ip };
		else if (!format_fits(format, &src))
			return -FI_ENODATA;
		src.port = 0;
	}
	free(fi->src_addr);
	free(fi->dest_addr);
	fi->src_addr = sa_dup(&src, &fi->src_addrlen);
	fi->dest_addr = has_dst ? sa_dup(&dst, &fi->dest_addrlen) : NULL;
	if (!has_dst)
		fi->dest_addrlen = 0;
	return fi->src_addr && (!has_dst || fi->dest_addr) ? 0 : -FI_ENOMEM;
}

int mfi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		const struct fi_info *hints, struct fi_info **info)
{
	static const enum fi_ep_type types[] = { FI_EP_RDM, FI_EP_MSG };
	struct fi_info *head = NULL, **tail = &head;
	int err = -FI_ENODATA;

	*info = NULL;
	if (flags & MFI_FLAG_CORE_PROV_ONLY)
		return -FI_ENODATA;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct fi_info *fi;

		if (hints && hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC &&
		    hints->ep_attr->type != types[i])
			continue;
		fi = template(types[i]);
		if (!fi) {
			err = -FI_ENOMEM;
			break;
		}
		if (hints && !attrs_ok(fi, hints)) {
			fi_freeinfo(fi);
			continue;
		}
		if (hints)
			apply_hints(version, fi, hints);
		err = set_addrs(fi, node, service, flags, hints);
		if (err) {
			fi_freeinfo(fi);
			break;
		}
		*tail = fi;
		tail = &fi->next;
	}
	if (!head) {
		return err ? err : -FI_ENODATA;
	}
	*info = head;
	return 0;
}

/* ---- fabric ---------------------------------------------------------------- */

static int fabric_close(struct fid *fid)
{
	struct mfi_fabric *fab = container_of(fid, struct mfi_fabric, fabric_fid.fid);

	/* Its domains, EQs and passive endpoints read it (an EQ its API version): not freed under them. */
	if (__atomic_load_n(&fab->refs, __ATOMIC_RELAXED))
		return -FI_EBUSY;
	mfi_connreqs_close(fab);
	pthread_mutex_destroy(&fab->lock);
	free(fab);
	return 0;
}

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = mfi_no_bind,
	.control = mfi_no_control,
	.ops_open = mfi_no_ops_open,
};

/* Each CQ, EQ and counter as cq.c and cntr.c say (mfi_cq_trywait): -FI_EAGAIN if any has something to read. */
static int fabric_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	int ret = 0;

	(void)fabric;
	for (int i = 0; i < count; i++) {
		int r;

		if (!fids || !fids[i])
			return -FI_EINVAL;
		if (fids[i]->fclass == FI_CLASS_CQ)
			r = mfi_cq_trywait(container_of(fids[i], struct mfi_cq, cq_fid.fid));
		else if (fids[i]->fclass == FI_CLASS_EQ)
			r = mfi_eq_trywait(container_of(fids[i], struct mfi_eq, eq_fid.fid));
		else if (fids[i]->fclass == FI_CLASS_CNTR)
			r = mfi_cntr_trywait(container_of(fids[i], struct mfi_cntr, cntr_fid.fid));
		else
			return -FI_EINVAL;	/* no wait sets */
		if (r && r != -FI_EAGAIN)
			return r;
		if (r)
			ret = r;
	}
	return ret;
}

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = mfi_domain_open,
	.passive_ep = mfi_pep_open,
	.eq_open = mfi_eq_open,
	.wait_open = mfi_no_wait_open,
	.trywait = fabric_trywait,
};

int mfi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	struct mfi_fabric *f;

	if (attr && attr->name && strcmp(attr->name, MFI_FABRIC_NAME))
		return -FI_EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -FI_ENOMEM;
	f->prov = &mfi_prov;
	pthread_mutex_init(&f->lock, NULL);
	f->api = attr && attr->api_version ? attr->api_version : MFI_API_VERSION;
	f->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	f->fabric_fid.fid.context = context;
	f->fabric_fid.fid.ops = &fabric_fi_ops;
	f->fabric_fid.ops = &fabric_ops;
	*fabric = &f->fabric_fid;
	return 0;
}
