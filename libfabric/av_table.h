/* SPDX-License-Identifier: MIT */
/*
 * Address vector: the table behind fi_av_insert/fi_av_lookup.  An mroc
 * endpoint's name is a struct sockaddr_in (FI_SOCKADDR_IN) or sockaddr_in6
 * (FI_SOCKADDR_IN6): the address of its host's mrocd and the endpoint's port
 * (its mroc service is MFI_SERVICE_BASE + port).  Inside, both are one
 * struct mfi_addr: an IPv6 address, IPv4 as ::ffff:a.b.c.d, so a name of
 * either family compares, hashes and travels whole (never truncated).  fi_addr_t is the index in the table for both
 * FI_AV_TABLE and FI_AV_MAP.  A reverse lookup (address -> fi_addr_t) names
 * the source of messages arriving on connections the peer opened (FI_SOURCE).
 * Pure data structure: no libfabric objects, unit-tested on its own.
 */
#ifndef MROC_FI_AV_TABLE_H
#define MROC_FI_AV_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define MFI_SERVICE_BASE	0x6d666900000000ull	/* "mfi" << 32 */

struct mfi_addr {
	struct in6_addr ip;	/* IPv4 as the v4-mapped ::ffff:a.b.c.d */
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
	return !memcmp(&a->ip, &b->ip, sizeof(a->ip)) && a->port == b->port;
}

/* An IPv4 address (the v4-mapped form) or an IPv6 one. */
static inline bool mfi_addr_is4(const struct mfi_addr *a)
{
	return IN6_IS_ADDR_V4MAPPED(&a->ip);
}

/* The IPv4 address of a v4-mapped name (network order). */
static inline uint32_t mfi_addr_ip4(const struct mfi_addr *a)
{
	uint32_t ip;

	memcpy(&ip, &a->ip.s6_addr[12], sizeof(ip));
	return ip;
}

/* A name of an IPv4 address (network order) and a port (host order). */
static inline struct mfi_addr mfi_addr4(uint32_t ip, uint16_t port)
{
	struct mfi_addr a = { .port = port };

	a.ip.s6_addr[10] = a.ip.s6_addr[11] = 0xff;
	memcpy(&a.ip.s6_addr[12], &ip, sizeof(ip));
	return a;
}

/* No address at all (:: or 0.0.0.0): "not known yet". */
static inline bool mfi_addr_unspec(const struct mfi_addr *a)
{
	return mfi_addr_is4(a) ? !mfi_addr_ip4(a) : IN6_IS_ADDR_UNSPECIFIED(&a->ip);
}

/*
 * A name's sockaddr: sockaddr_in for IPv4, sockaddr_in6 for IPv6 (into *ss);
 * returns its length.
 */
size_t mfi_addr_to_sa(const struct mfi_addr *a, struct sockaddr_storage *ss);
/*
 * A sockaddr_in or sockaddr_in6 of len bytes (at least its family's size) as a
 * name: 0, or -EINVAL for another family, a short buffer, or an address or port
 * of 0 unless any is true (a hint: a host without its port, a port on any host).
 */
int mfi_addr_from_sa(const void *buf, size_t len, bool any, struct mfi_addr *a);
/* The size of the sockaddr at buf (by its family), 0 if neither IPv4 nor IPv6. */
size_t mfi_sa_len(const void *buf);
/* The same text as inet_ntop for the name's address (IPv4 dotted, IPv6 colons). */
const char *mfi_addr_ntop(const struct mfi_addr *a, char *buf, size_t len);
/* "fi_sockaddr_in://10.0.0.1:1234", "fi_sockaddr_in6://[fd00::1]:1234" (as libfabric's) */
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
