// SPDX-License-Identifier: MIT
/* Port addresses in the CM extension (see portaddr.h). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "portaddr.h"

int portaddr_encode(const struct mroc_addr *addr, unsigned n, uint8_t *buf, size_t cap)
{
	size_t off = 1;
	unsigned count = 0;

	if (n > PORTADDR_MAX)
		return -EINVAL;
	if (cap < 1)
		return -ENOSPC;
	for (unsigned i = 0; i < n; i++) {
		uint8_t *e = buf + off;

		if (!addr_len(&addr[i]))
			continue;
		if (cap - off < PORTADDR_ENTRY_LEN)
			return -ENOSPC;
		e[0] = (uint8_t)i;
		e[1] = addr[i].family == AF_INET ? 4 : 6;
		memset(e + 2, 0, 16);
		memcpy(e + 2, addr[i].bytes, addr_len(&addr[i]));
		off += PORTADDR_ENTRY_LEN;
		count++;
	}
	buf[0] = (uint8_t)count;
	return (int)off;
}

static const uint8_t zero[16];

int portaddr_decode(const uint8_t *buf, size_t len, struct mroc_addr *addr, uint16_t *mask)
{
	struct mroc_addr out[PORTADDR_MAX];
	uint16_t seen = 0;

	if (len < 1 || buf[0] > PORTADDR_MAX || len != PORTADDR_LEN((size_t)buf[0]))
		return -EBADMSG;
	memset(out, 0, sizeof(out));
	for (unsigned k = 0; k < buf[0]; k++) {
		const uint8_t *e = buf + PORTADDR_LEN(k);
		unsigned port = e[0];
		size_t alen = e[1] == 4 ? 4 : 16;

		if (port >= PORTADDR_MAX || (seen & (1u << port)) || (e[1] != 4 && e[1] != 6))
			return -EBADMSG;
		if (!memcmp(e + 2, zero, alen) || (alen == 4 && memcmp(e + 6, zero, 12)))
			return -EBADMSG;
		out[port].family = e[1] == 4 ? AF_INET : AF_INET6;
		memcpy(out[port].bytes, e + 2, alen);
		/* Our data would go to a group, a link or ourselves (#24): refused whole. */
		if (!addr_unicast(&out[port]))
			return -EBADMSG;
		seen |= (uint16_t)(1u << port);
	}
	memcpy(addr, out, sizeof(out));
	*mask = seen;
	return 0;
}

bool portaddr_has(const uint8_t *buf, size_t len, const struct mroc_addr *a)
{
	struct mroc_addr addr[PORTADDR_MAX];
	uint16_t mask;

	if (portaddr_decode(buf, len, addr, &mask))
		return false;
	for (unsigned i = 0; i < PORTADDR_MAX; i++)
		if ((mask & (1u << i)) && addr_eq(&addr[i], a))
			return true;
	return false;
}
