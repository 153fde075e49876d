// SPDX-License-Identifier: MIT
/*
 * Linux's IPv4 ECMP hash and nexthop choice (ecmp.h says what and why).
 */
#include <string.h>

#include <sodium.h>

#include "ecmp.h"

/*
 * struct flow_keys from its `basic` member on, as hashed for IPv4: basic
 * (n_proto, ip_proto, padding), tags, vlan, cvlan, keyid, ports, icmp, then
 * the addresses union of which the hash covers the IPv4 pair and 4 bytes more
 * (flow_keys_hash_length: the struct's 8-byte alignment).  Only the fields
 * the multipath hash fills are written; the rest stays zero, as its memset.
 */
#define KEYS_LEN	48
#define OFF_IP_PROTO	2
#define OFF_SPORT	28
#define OFF_DPORT	30
#define OFF_SADDR	36
#define OFF_DADDR	40

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	put_be16(p, (uint16_t)(v >> 16));
	put_be16(p + 2, (uint16_t)v);
}

/* What an x86 kernel compares: the network-order bytes loaded little-endian. */
static uint32_t as_le32(uint32_t v)
{
	return __builtin_bswap32(v);
}

static uint16_t as_le16(uint16_t v)
{
	return __builtin_bswap16(v);
}

uint32_t ecmp_linux_hash(uint32_t saddr, uint32_t daddr, uint16_t sport, uint16_t dport,
			 uint8_t proto, uint32_t seed)
{
	uint8_t keys[KEYS_LEN] = { 0 }, key[crypto_shorthash_siphash24_KEYBYTES], out[8];
	uint64_t k = (uint64_t)seed << 32 | seed, h = 0;
	uint32_t hash;

	/* __flow_hash_consistentify: addresses and ports each sorted on their own. */
	if (as_le32(daddr) < as_le32(saddr)) {
		uint32_t t = saddr;

		saddr = daddr;
		daddr = t;
	}
	if (as_le16(dport) < as_le16(sport)) {
		uint16_t t = sport;

		sport = dport;
		dport = t;
	}
	keys[OFF_IP_PROTO] = proto;
	put_be16(keys + OFF_SPORT, sport);
	put_be16(keys + OFF_DPORT, dport);
	put_be32(keys + OFF_SADDR, saddr);
	put_be32(keys + OFF_DADDR, daddr);
	/* fib_multipath_hash_construct_key: the seed in both halves of both key words (LE). */
	for (int i = 0; i < 8; i++)
		key[i] = key[8 + i] = (uint8_t)(k >> (8 * i));
	crypto_shorthash_siphash24(out, keys, sizeof(keys), key);
	for (int i = 7; i >= 0; i--)
		h = h << 8 | out[i];
	hash = (uint32_t)h;
	return (hash ? hash : 1) >> 1;
}

unsigned ecmp_linux_nexthop(uint32_t hash, unsigned n)
{
	for (unsigned i = 0; i + 1 < n; i++) {
		/* DIV_ROUND_CLOSEST_ULL((u64)w << 31, total) - 1 */
		uint64_t upper = (((uint64_t)(i + 1) << 31) + n / 2) / n - 1;

		if (hash <= upper)
			return i;
	}
	return n ? n - 1 : 0;
}

uint32_t ecmp_fabric_addr(unsigned net, unsigned host, unsigned nhosts)
{
	uint32_t base = 10u << 24 | (net & 0xff) << 16;

	return host + 1 < nhosts ? base | 1u << 8 | (host + 1) : base | 2u << 8 | 1;
}
