/* SPDX-License-Identifier: MIT */
/*
 * Linux's ECMP choice for a forwarded IPv4 packet, as scripts/fabric's leaves
 * make it (net.ipv4.fib_multipath_hash_policy = 1, the 5-tuple; a legacy
 * multipath route of equal weights): so a simulated fabric puts a source port
 * on the plane the real one would (issue #27).
 *
 * The hash (net/core/flow_dissector.c, include/net/ip_fib.h): a struct
 * flow_keys holding only the addresses, ports and IP protocol, made the same
 * both ways (the smaller address first, the smaller port first, each pair on
 * its own, compared as an x86 kernel loads them), then SipHash-2-4 of its 48
 * bytes from the `basic` key on, keyed by the netns's
 * net.ipv4.fib_multipath_hash_seed in all four 32-bit words; its low 32 bits
 * (0 made 1), shifted right once.  The route's nexthop i covers the hashes up
 * to round((i + 1) * 2^31 / n) - 1 (fib_rebalance), the first that covers
 * the hash is taken (fib_select_multipath).
 *
 * Because the keys are symmetric, an ACK (addresses swapped, ports as the
 * data's) hashes as its data packet does: the fabric's two leaves, listing the
 * planes in one order, carry both over one plane.
 */
#ifndef MROC_SIM_ECMP_H
#define MROC_SIM_ECMP_H

#include <stdint.h>

#define ECMP_FABRIC_SEED	12345	/* scripts/fabric's fib_multipath_hash_seed */
#define ECMP_MROC_PORT		4793	/* mrocd's network.udp_port: every packet's destination port */
#define ECMP_PROTO_UDP		17

/* The multipath hash (31 bits) of a UDP/TCP packet; addresses and ports in host order. */
uint32_t ecmp_linux_hash(uint32_t saddr, uint32_t daddr, uint16_t sport, uint16_t dport,
			 uint8_t proto, uint32_t seed);

/* The nexthop (0..n-1) of n equal ones that a hash from ecmp_linux_hash takes; n >= 1. */
unsigned ecmp_linux_nexthop(uint32_t hash, unsigned n);

/*
 * scripts/fabric's host addresses (leaves, not --ports): the hosts before the
 * last at 10.NET.1.(h + 1), the last at 10.NET.2.1.
 */
uint32_t ecmp_fabric_addr(unsigned net, unsigned host, unsigned nhosts);

#endif
