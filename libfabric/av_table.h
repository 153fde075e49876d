/* SPDX-License-Identifier: MIT */
/*
 * Address vector: the table behind fi_av_insert/fi_av_lookup.  An mroc
 * endpoint's name is a struct sockaddr_in (FI_SOCKADDR_IN): the IPv4 address of
 * its host's mrocd and the endpoint's port (its mroc service is
 * MFI_SERVICE_BASE + port).  fi_addr_t is the index in the table for both
 * FI_AV_TABLE and FI_AV_MAP.  A reverse lookup (address -> fi_addr_t) names
 * the source of messages arriving on connections the peer opened (FI_SOURCE).
 * Pure data structure: no libfabric objects, unit-tested on its own.
 */
#ifndef MROC_FI_AV_TABLE_H
#define MROC_FI_AV_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#define MFI_SERVICE_BASE	0x6d666900000000ull	/* "mfi" << 32 */

struct mfi_addr {
	uint32_t ip;		/* network order */
	uint16_t port;		/* host order */
};

struct mfi_av {
	struct mfi_addr *addrs;
	bool *used;
	size_t count, cap;	/* count: entries handed out (indices < count) */
};

static inline uint64_t mfi_addr_service(const struct mfi_addr *a)
{
	return MFI_SERVICE_BASE | a->port;
}

static inline bool mfi_addr_eq(const struct mfi_addr *a, const struct mfi_addr *b)
{
	return a->ip == b->ip && a->port == b->port;
}

/* The FI_SOCKADDR_IN form of a name and back (-EINVAL for anything else). */
void mfi_addr_to_sin(const struct mfi_addr *a, struct sockaddr_in *sin);
int mfi_addr_from_sin(const void *buf, size_t len, struct mfi_addr *a);
/* "fi_sockaddr_in://10.0.0.1:1234" */
int mfi_addr_str(const struct mfi_addr *a, char *buf, size_t len);

int mfi_av_init(struct mfi_av *av, size_t hint);
void mfi_av_fini(struct mfi_av *av);
/* Insert one name; returns its index (>= 0) or -errno. */
int64_t mfi_av_insert(struct mfi_av *av, const struct mfi_addr *a);
int mfi_av_remove(struct mfi_av *av, uint64_t idx);
/* NULL when idx names no entry. */
const struct mfi_addr *mfi_av_get(const struct mfi_av *av, uint64_t idx);
/* Index of a name, or -ENOENT. */
int64_t mfi_av_find(const struct mfi_av *av, const struct mfi_addr *a);

#endif
