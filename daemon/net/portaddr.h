/* SPDX-License-Identifier: MIT */
/*
 * The port addresses a daemon announces in its CONNECT_REQ and CONNECT_REP
 * (the engine's opaque CM extension, docs/PROTOCOL.md 3.4): a count, then per
 * port its index, its family and its address.  Sent by every mrocd, with a
 * count of 0 when no port has an address of its own: it also says "packets
 * from your port addresses are yours to me".
 */
#ifndef MROCD_PORTADDR_H
#define MROCD_PORTADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"

#define PORTADDR_MAX		16	/* ports (NEXTHOP_MAX_PORTS) */
#define PORTADDR_ENTRY_LEN	18	/* port, family (4 or 6), 16 address bytes */
#define PORTADDR_LEN(n)		(1 + (n) * PORTADDR_ENTRY_LEN)

/*
 * addr[i] for every port i < n that has one (family set), into buf.
 * Returns the length written, -EINVAL for n > PORTADDR_MAX, -ENOSPC when
 * buf is too small.
 */
int portaddr_encode(const struct mroc_addr *addr, unsigned n, uint8_t *buf, size_t cap);
/*
 * The announcement in buf: addr[i] for each port i set in *mask (addr has
 * PORTADDR_MAX entries).  Returns 0, or -EBADMSG (nothing filled in) for a
 * count above PORTADDR_MAX, a length that is not the count's, a port
 * outside 0..15 or listed twice, another family, an IPv4 address with bytes
 * after its fourth, or an unspecified address.
 */
int portaddr_decode(const uint8_t *buf, size_t len, struct mroc_addr *addr, uint16_t *mask);
/* a is one of the addresses the announcement in buf names (false if it does not decode). */
bool portaddr_has(const uint8_t *buf, size_t len, const struct mroc_addr *a);

#endif
