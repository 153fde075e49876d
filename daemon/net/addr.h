/* SPDX-License-Identifier: MIT */
/* IPv4/IPv6 addresses as mrocd passes them around (network byte order inside). */
#ifndef MROCD_ADDR_H
#define MROCD_ADDR_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mroc_addr {
	int family;			/* AF_INET or AF_INET6; 0 = unset */
	union {
		struct in_addr v4;
		struct in6_addr v6;
		uint8_t bytes[16];
	};
};

#define MROC_ADDR_STRLEN INET6_ADDRSTRLEN

/* Parse "10.0.0.1" or "fd00::1"; 0 or -EINVAL. */
int addr_parse(const char *s, struct mroc_addr *out);
/* Into buf (at least MROC_ADDR_STRLEN); returns buf. */
const char *addr_str(const struct mroc_addr *a, char *buf, size_t len);
bool addr_eq(const struct mroc_addr *a, const struct mroc_addr *b);
uint32_t addr_hash(const struct mroc_addr *a);
size_t addr_len(const struct mroc_addr *a);	/* 4, 16, or 0 */
/*
 * Whether a can be a peer's address (a packet's source, an announced port
 * address): one host's unicast address.  Not unspecified, loopback,
 * multicast, IPv4's limited broadcast and class E, IPv6 link-local (no
 * scope here: the same on every port) or IPv4-mapped (an IPv4 host under
 * another family's name).  An answer to any of them is no answer to a
 * host: docs/PROTOCOL.md 11a.
 */
bool addr_unicast(const struct mroc_addr *a);
/* 127.0.0.0/8 or ::1: a host's own, a peer only where network.allow_loopback says so. */
bool addr_loopback(const struct mroc_addr *a);
/*
 * A destination no packet to this host alone has: IPv4 limited broadcast or
 * 224/4, IPv6 multicast (a subnet's broadcast address needs the kernel's
 * word: udp_backend.c).  Unset (family 0): false.
 */
bool addr_group(const struct mroc_addr *a);

#endif
