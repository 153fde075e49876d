/* SPDX-License-Identifier: MIT */
/*
 * The address this host's traffic leaves from: the source address of the
 * route to a remote address (TEST-NET-1), which is what peers reach a host's
 * mrocd at when nothing says otherwise (the libfabric provider and the NCCL
 * plugin ask it).  Connecting a UDP socket sends nothing; it only asks the
 * routing table.  Header-only; not for the engine, which does no I/O.
 */
#ifndef MROC_COMMON_ROUTE_ADDR_H
#define MROC_COMMON_ROUTE_ADDR_H

#include <errno.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* 0 with *out set; -errno without a socket, -EADDRNOTAVAIL without a route. */
static inline int mroc_route_src_addr(struct in_addr *out)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(9) };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int err;

	if (fd < 0)
		return -errno;
	inet_pton(AF_INET, "192.0.2.1", &sin.sin_addr);
	err = connect(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	      getsockname(fd, (struct sockaddr *)&sin, &len) ? -EADDRNOTAVAIL : 0;
	close(fd);
	if (!err)
		*out = sin.sin_addr;
	return err;
}

#endif
