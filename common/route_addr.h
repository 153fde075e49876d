/* SPDX-License-Identifier: MIT */
/*
 * The address this host's traffic leaves from: the source address of the
 * route to a remote address (TEST-NET-1, 192.0.2.1, for IPv4; the
 * documentation prefix, 2001:db8::1, for IPv6), which is what peers reach a
 * host's mrocd at when nothing says otherwise (the libfabric provider and the
 * NCCL plugin ask it).  Connecting a UDP socket sends nothing; it only asks
 * the routing table.  Header-only; not for the engine, which does no I/O.
 */
#ifndef MROC_COMMON_ROUTE_ADDR_H
#define MROC_COMMON_ROUTE_ADDR_H

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

/*
 * The source of the route to the family's remote address into *ss (a
 * sockaddr_in or sockaddr_in6, port 9): 0, -errno without a socket of that
 * family, -EADDRNOTAVAIL without a route.
 */
static inline int mroc_route_src(int family, struct sockaddr_storage *ss)
{
	socklen_t len = family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	int fd, err;

	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(9);
		inet_pton(AF_INET6, "2001:db8::1", &sin6->sin6_addr);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(9);
		inet_pton(AF_INET, "192.0.2.1", &sin->sin_addr);
	}
	fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	err = connect(fd, (struct sockaddr *)ss, len) ||
	      getsockname(fd, (struct sockaddr *)ss, &len) ? -EADDRNOTAVAIL : 0;
	close(fd);
	return err;
}

/* IPv4: 0 with *out set; -errno without a socket, -EADDRNOTAVAIL without a route. */
static inline int mroc_route_src_addr(struct in_addr *out)
{
	struct sockaddr_storage ss;
	int err = mroc_route_src(AF_INET, &ss);

	if (!err)
		*out = ((struct sockaddr_in *)&ss)->sin_addr;
	return err;
}

/* IPv6: the same (a link-local source, scoped to an interface, is no answer). */
static inline int mroc_route_src_addr6(struct in6_addr *out)
{
	struct sockaddr_storage ss;
	int err = mroc_route_src(AF_INET6, &ss);
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&ss;

	if (!err && (IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr) || sin6->sin6_scope_id))
		err = -EADDRNOTAVAIL;
	if (!err)
		*out = sin6->sin6_addr;
	return err;
}

/*
 * The host's address as text: IPv4's route first, IPv6's when the host has no
 * IPv4 route (an IPv6-only fabric); -EADDRNOTAVAIL when neither has one.
 */
static inline int mroc_route_src_str(char *out, size_t len)
{
	struct in6_addr a6;
	struct in_addr a;

	if (!mroc_route_src_addr(&a))
		return inet_ntop(AF_INET, &a, out, (socklen_t)len) ? 0 : -ENOSPC;
	if (!mroc_route_src_addr6(&a6))
		return inet_ntop(AF_INET6, &a6, out, (socklen_t)len) ? 0 : -ENOSPC;
	return -EADDRNOTAVAIL;
}

#endif
