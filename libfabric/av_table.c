// SPDX-License-Identifier: MIT
/* The address vector's table (av_table.h); the fid around it is in av.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "av_table.h"

void mfi_addr_to_sin(const struct mfi_addr *a, struct sockaddr_in *sin)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(a->port);
	sin->sin_addr.s_addr = a->ip;
}

int mfi_addr_from_sin(const void *buf, size_t len, struct mfi_addr *a)
{
	struct sockaddr_in sin;

	if (!buf || len < sizeof(sin))
		return -EINVAL;
	memcpy(&sin, buf, sizeof(sin));
	if (sin.sin_family != AF_INET || !sin.sin_addr.s_addr || !sin.sin_port)
		return -EINVAL;
	a->ip = sin.sin_addr.s_addr;
	a->port = ntohs(sin.sin_port);
	return 0;
}

int mfi_addr_str(const struct mfi_addr *a, char *buf, size_t len)
{
	char ip[INET_ADDRSTRLEN];
	struct in_addr in = { .s_addr = a->ip };

	inet_ntop(AF_INET, &in, ip, sizeof(ip));
	return snprintf(buf, len, "fi_sockaddr_in://%s:%u", ip, a->port);
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
