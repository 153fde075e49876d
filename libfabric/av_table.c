// SPDX-License-Identifier: MIT
/* The address vector's table (av_table.h); the fid around it is in av.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "av_table.h"

size_t mfi_addr_to_sa(const struct mfi_addr *a, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (mfi_addr_is4(a)) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(a->port);
		sin->sin_addr.s_addr = mfi_addr_ip4(a);
		return sizeof(*sin);
	}
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(a->port);
	sin6->sin6_addr = a->ip;
	return sizeof(*sin6);
}

size_t mfi_sa_len(const void *buf)
{
	sa_family_t f;

	if (!buf)
		return 0;
	memcpy(&f, buf, sizeof(f));
	return f == AF_INET ? sizeof(struct sockaddr_in) :
	       f == AF_INET6 ? sizeof(struct sockaddr_in6) : 0;
}

int mfi_addr_from_sa(const void *buf, size_t len, bool any, struct mfi_addr *a)
{
	size_t need = mfi_sa_len(buf);

	if (!need || len < need)
		return -EINVAL;
	if (need == sizeof(struct sockaddr_in)) {
		struct sockaddr_in sin;

		memcpy(&sin, buf, sizeof(sin));
		*a = mfi_addr4(sin.sin_addr.s_addr, ntohs(sin.sin_port));
	} else {
		struct sockaddr_in6 sin6;

		memcpy(&sin6, buf, sizeof(sin6));
		/* A scope (link-local) would need the interface at mrocd: not a name of ours. */
		if (sin6.sin6_scope_id)
			return -EINVAL;
		*a = (struct mfi_addr){ .ip = sin6.sin6_addr, .port = ntohs(sin6.sin6_port) };
	}
	if (!any && (mfi_addr_unspec(a) || !a->port))
		return -EINVAL;
	return 0;
}

const char *mfi_addr_ntop(const struct mfi_addr *a, char *buf, size_t len)
{
	if (mfi_addr_is4(a)) {
		struct in_addr in = { .s_addr = mfi_addr_ip4(a) };

		return inet_ntop(AF_INET, &in, buf, (socklen_t)len);
	}
	return inet_ntop(AF_INET6, &a->ip, buf, (socklen_t)len);
}

int mfi_addr_str(const struct mfi_addr *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "";

	mfi_addr_ntop(a, ip, sizeof(ip));
	if (mfi_addr_is4(a))
		return snprintf(buf, len, "fi_sockaddr_in://%s:%u", ip, a->port);
	return snprintf(buf, len, "fi_sockaddr_in6://[%s]:%u", ip, a->port);
}

int mfi_av_init(struct mfi_av *av, size_t hint)
{
	memset(av, 0, sizeof(*av));
	av->cap = hint ? hint : 16;
	av->addrs = calloc(av->cap, sizeof(*av->addrs));
	av->used = calloc(av->cap, sizeof(*av->used));
	if (!av->addrs || !av->used) {
		mfi_av_fini(av);
		return -ENOMEM;
	}
	return 0;
}

void mfi_av_fini(struct mfi_av *av)
{
	free(av->addrs);
	free(av->used);
	memset(av, 0, sizeof(*av));
}

int64_t mfi_av_insert(struct mfi_av *av, const struct mfi_addr *a)
{
	if (av->count == av->cap) {
		size_t cap = av->cap * 2;
		struct mfi_addr *na = realloc(av->addrs, cap * sizeof(*na));
		bool *nu;

		if (!na)
			return -ENOMEM;
		av->addrs = na;
		nu = realloc(av->used, cap * sizeof(*nu));
		if (!nu)
			return -ENOMEM;
		memset(nu + av->cap, 0, (cap - av->cap) * sizeof(*nu));
		av->used = nu;
		av->cap = cap;
	}
	/* Indices are never reused: a removed fi_addr_t must not silently name a new peer. */
	av->addrs[av->count] = *a;
	av->used[av->count] = true;
	return (int64_t)av->count++;
}

int mfi_av_remove(struct mfi_av *av, uint64_t idx)
{
	if (idx >= av->count || !av->used[idx])
		return -EINVAL;
	av->used[idx] = false;
	return 0;
}

const struct mfi_addr *mfi_av_get(const struct mfi_av *av, uint64_t idx)
{
	return idx < av->count && av->used[idx] ? &av->addrs[idx] : NULL;
}

int64_t mfi_av_find(const struct mfi_av *av, const struct mfi_addr *a)
{
	/* Linear: done once per connection a peer opens, never per message. */
	for (size_t i = 0; i < av->count; i++)
		if (av->used[i] && mfi_addr_eq(&av->addrs[i], a))
			return (int64_t)i;
	return -ENOENT;
}
