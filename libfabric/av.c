// SPDX-License-Identifier: MIT
/* The address vector object around av_table.c: FI_AV_TABLE and FI_AV_MAP, synchronous. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netdb.h>
#include <arpa/inet.h>

#include "mrocfi.h"

static int av_close(struct fid *fid)
{
	struct mfi_av_fid *av = container_of(fid, struct mfi_av_fid, av_fid.fid);

	mfi_lock(av->dom);
	/* An endpoint bound to it reads it at every send (it kept a freed pointer). */
	if (av->eps) {
		mfi_unlock(av->dom);
		return -FI_EBUSY;
	}
	av->dom->refs--;
	mfi_unlock(av->dom);
	mfi_av_fini(&av->av);
	free(av);
	return 0;
}

static int av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;	/* no asynchronous inserts: no EQ to bind */
}

static struct fi_ops av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_close,
	.bind = av_bind,
	.control = mfi_no_control,
	.ops_open = mfi_no_ops_open,
	.tostr = mfi_no_tostr,
	.ops_set = mfi_no_ops_set,
};

static int av_insert(struct fid_av *fid, const void *addr, size_t count, fi_addr_t *fi_addr,
		     uint64_t flags, void *context)
{
	struct mfi_av_fid *av = container_of(fid, struct mfi_av_fid, av_fid);
	int n = 0;

	if (flags & ~FI_MORE)
		return -FI_EBADFLAGS;
	if (count && !addr)
		return -FI_EINVAL;	/* the second entry was read at address 16 */
	mfi_lock(av->dom);
	/*
	 * Names are sockaddr_in or sockaddr_in6 (FI_SOCKADDR: either), each as long
	 * as its family's, one after the other, as libfabric's own AVs read them.
	 * One AV may hold both families.  A name of neither family ends the list:
	 * its length is not known, so nothing after it can be read.
	 */
	const char *p = addr;

	for (size_t i = 0; i < count; i++) {
		size_t len = p ? mfi_sa_len(p) : 0;
		struct mfi_addr a;
		int64_t idx = -FI_EINVAL;

		if (len && !mfi_addr_from_sa(p, len, false, &a))
			idx = mfi_av_insert(&av->av, &a);
		p = len ? p + len : NULL;
		if (fi_addr)
			fi_addr[i] = idx >= 0 ? (fi_addr_t)idx : FI_ADDR_NOTAVAIL;
		if (idx >= 0)
			n++;
	}
	mfi_unlock(av->dom);
	return n;
}

static int av_insertsvc(struct fid_av *fid, const char *node, const char *service,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV }, *res;
	int n;

	/* An address of either family, numeric (no resolver under the AV's lock). */
	if (!node || !service || getaddrinfo(node, service, &hints, &res))
		return -FI_EINVAL;
	n = res->ai_family == AF_INET || res->ai_family == AF_INET6 ?
	    av_insert(fid, res->ai_addr, 1, fi_addr, flags, context) : -FI_EINVAL;
	freeaddrinfo(res);
	return n;
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt, const char *service,
			size_t svccnt, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static int av_remove(struct fid_av *fid, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	struct mfi_av_fid *av = container_of(fid, struct mfi_av_fid, av_fid);
	int err = 0;

	if (count && !fi_addr)
		return -FI_EINVAL;
	mfi_lock(av->dom);
	for (size_t i = 0; i < count; i++)
		if (mfi_av_remove(&av->av, fi_addr[i]))
			err = -FI_EINVAL;
	mfi_unlock(av->dom);
	return err;
}

static int av_lookup(struct fid_av *fid, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	struct mfi_av_fid *av = container_of(fid, struct mfi_av_fid, av_fid);
	const struct mfi_addr *a;
	struct sockaddr_storage ss;
	int err = 0;

	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	mfi_lock(av->dom);
	a = mfi_av_get(&av->av, fi_addr);
	if (a) {
		/* fi_av(3): as much as fits, and the size the whole name needs. */
		size_t len = mfi_addr_to_sa(a, &ss);

		memcpy(addr, &ss, *addrlen < len ? *addrlen : len);
		*addrlen = len;
	} else {
		err = -FI_ENOENT;
	}
	mfi_unlock(av->dom);
	return err;
}

static const char *av_straddr(struct fid_av *av, const void *addr, char *buf, size_t *len)
{
	struct mfi_addr a;
	char tmp[96];
	int n;

	if (!len || (*len && !buf))
		return NULL;
	if (mfi_addr_from_sa(addr, mfi_sa_len(addr), true, &a))
		n = snprintf(tmp, sizeof(tmp), "fi_sockaddr://invalid");
	else
		n = mfi_addr_str(&a, tmp, sizeof(tmp));
	if (*len)
		snprintf(buf, *len, "%s", tmp);
	*len = (size_t)n + 1;
	return buf;
}

static int av_set(struct fid_av *av, struct fi_av_set_attr *attr, struct fid_av_set **av_set,
		  void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = av_insert,
	.insertsvc = av_insertsvc,
	.insertsym = av_insertsym,
	.remove = av_remove,
	.lookup = av_lookup,
	.straddr = av_straddr,
	.av_set = av_set,
};

int mfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **out,
		void *context)
{
	struct mfi_domain *d = container_of(domain, struct mfi_domain, domain_fid);
	struct mfi_av_fid *av;

	if (!attr || (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP &&
		      attr->type != FI_AV_TABLE))
		return -FI_EINVAL;
	if (attr->flags & (FI_EVENT | FI_READ | FI_SYMMETRIC) || attr->name || attr->rx_ctx_bits)
		return -FI_ENOSYS;	/* no asynchronous, shared or named AVs */
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	if (mfi_av_init(&av->av, attr->count)) {
		free(av);
		return -FI_ENOMEM;
	}
	av->dom = d;
	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = &av_fi_ops;
	av->av_fid.ops = &av_ops;
	mfi_lock(d);
	d->refs++;
	mfi_unlock(d);
	*out = &av->av_fid;
	return 0;
}
