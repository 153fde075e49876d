// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "addr.h"

int addr_parse(const char *s, struct mroc_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, s, &out->v4) == 1) {
		out->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, &out->v6) == 1) {
		out->family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

const char *addr_str(const struct mroc_addr *a, char *buf, size_t len)
{
	if (!a->family || !inet_ntop(a->family, a->bytes, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

size_t addr_len(const struct mroc_addr *a)
{
	return a->family == AF_INET ? 4 : a->family == AF_INET6 ? 16 : 0;
}

bool addr_unicast(const struct mroc_addr *a)
{
	if (a->family == AF_INET) {
		uint8_t top = a->bytes[0];

		/* 0/8 (this network), 127/8, 224/4 (multicast), 240/4 (class E, 255.255.255.255) */
		return top != 0 && top != 127 && top < 224;
	}
	if (a->family != AF_INET6)
		return false;
	return !IN6_IS_ADDR_UNSPECIFIED(&a->v6) && !IN6_IS_ADDR_LOOPBACK(&a->v6) &&
	       !IN6_IS_ADDR_MULTICAST(&a->v6) && !IN6_IS_ADDR_LINKLOCAL(&a->v6) &&
	       !IN6_IS_ADDR_V4MAPPED(&a->v6);
}

bool addr_group(const struct mroc_addr *a)
{
	if (a->family == AF_INET)
		return (a->bytes[0] >= 224 && a->bytes[0] < 240) ||
		       (a->bytes[0] == 255 && a->bytes[1] == 255 && a->bytes[2] == 255 &&
			a->bytes[3] == 255);
	return a->family == AF_INET6 && IN6_IS_ADDR_MULTICAST(&a->v6);
}

bool addr_loopback(const struct mroc_addr *a)
{
	if (a->family == AF_INET)
		return a->bytes[0] == 127;
	return a->family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&a->v6);
}

bool addr_eq(const struct mroc_addr *a, const struct mroc_addr *b)
{
	return a->family == b->family && !memcmp(a->bytes, b->bytes, addr_len(a));
}

uint32_t addr_hash(const struct mroc_addr *a)
{
	uint32_t h = 2166136261u;	/* FNV-1a */

	for (size_t i = 0; i < addr_len(a); i++)
		h = (h ^ a->bytes[i]) * 16777619u;
	return h;
}
