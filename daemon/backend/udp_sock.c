// SPDX-License-Identifier: MIT
/*
 * UDP backend: its sockets (the receive socket, the send sockets of the
 * source-port range, the ephemeral one) and socket addresses (udp_state.h).
 */
#include <errno.h>
#include <linux/filter.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log.h"
#include "udp_state.h"

/* ---- addresses ------------------------------------------------------------ */

/* a:port as a destination for our sockets; false when they cannot reach it. */
bool udp_sa_from_addr(const struct udp_backend *u, const struct mroc_addr *a, uint16_t port,
		  union udp_sa *sa, socklen_t *len)
{
	if (a->family == AF_INET && u->family == AF_INET) {
		sa->sin = (struct sockaddr_in){
			.sin_family = AF_INET,
			.sin_port = htons(port),
			.sin_addr = a->v4,
		};
		*len = sizeof(sa->sin);
		return true;
	}
	if (u->family != AF_INET6 || (a->family == AF_INET && !u->dual) ||
	    (a->family != AF_INET && a->family != AF_INET6))
		return false;
	sa->sin6 = (struct sockaddr_in6){ .sin6_family = AF_INET6, .sin6_port = htons(port) };
	if (a->family == AF_INET6) {
		sa->sin6.sin6_addr = a->v6;
	} else {			/* IPv4-mapped, ::ffff:a.b.c.d */
		sa->sin6.sin6_addr.s6_addr[10] = 0xff;
		sa->sin6.sin6_addr.s6_addr[11] = 0xff;
		memcpy(&sa->sin6.sin6_addr.s6_addr[12], &a->v4, 4);
	}
	*len = sizeof(sa->sin6);
	return true;
}

/* A received source address; IPv4-mapped IPv6 comes back as IPv4. */
bool udp_sa_to_addr(const void *name, uint32_t len, struct mroc_addr *a, uint16_t *port)
{
	union udp_sa sa;

	memset(&sa, 0, sizeof(sa));
	memcpy(&sa, name, len < sizeof(sa) ? len : sizeof(sa));
	memset(a, 0, sizeof(*a));
	if (sa.sa.sa_family == AF_INET && len >= sizeof(sa.sin)) {
		a->family = AF_INET;
		a->v4 = sa.sin.sin_addr;
		*port = ntohs(sa.sin.sin_port);
		return true;
	}
	if (sa.sa.sa_family != AF_INET6 || len < sizeof(sa.sin6))
		return false;
	if (IN6_IS_ADDR_V4MAPPED(&sa.sin6.sin6_addr)) {
		a->family = AF_INET;
		memcpy(&a->v4, &sa.sin6.sin6_addr.s6_addr[12], 4);
	} else {
		a->family = AF_INET6;
		a->v6 = sa.sin6.sin6_addr;
	}
	*port = ntohs(sa.sin6.sin6_port);
	return true;
}

/* ---- sockets -------------------------------------------------------------- */

void udp_sock_opt(int fd, int level, int name, int val, const char *what)
{
	if (setsockopt(fd, level, name, &val, sizeof(val)))
		pr_warn("udp: %s: %s", what, strerror(errno));
}

/* A socket of our family bound to local:port (0: ephemeral); returns the fd or -errno. */
int udp_sock_open(struct udp_backend *u, uint16_t port, bool rx, uint32_t rcvbuf)
{
	union udp_sa sa;
	socklen_t len;
	int fd, err;

	fd = socket(u->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memset(&sa, 0, sizeof(sa));
	if (u->family == AF_INET6) {
		udp_sock_opt(fd, IPPROTO_IPV6, IPV6_V6ONLY, !u->dual, "IPV6_V6ONLY");
		sa.sin6.sin6_family = AF_INET6;
		sa.sin6.sin6_port = htons(port);
		if (u->local.family)
			sa.sin6.sin6_addr = u->local.v6;
		len = sizeof(sa.sin6);
	} else {
		sa.sin.sin_family = AF_INET;
		sa.sin.sin_port = htons(port);
		if (u->local.family)
			sa.sin.sin_addr = u->local.v4;
		len = sizeof(sa.sin);
	}
	if (rx) {
		/* The ECN bits of every packet come with it, for CE. */
		if (u->family == AF_INET || u->dual)
			udp_sock_opt(fd, IPPROTO_IP, IP_RECVTOS, 1, "IP_RECVTOS");
		if (u->family == AF_INET6)
			udp_sock_opt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1, "IPV6_RECVTCLASS");
		/*
		 * The address each packet was sent to: "aead" opens with it.
		 * IPv4 packets on a dual-stack socket get IP_PKTINFO too: its
		 * local address tells a subnet broadcast apart (rx_cmsgs).
		 */
		if (u->family == AF_INET || u->dual)
			udp_sock_opt(fd, IPPROTO_IP, IP_PKTINFO, 1, "IP_PKTINFO");
		if (u->family == AF_INET6)
			udp_sock_opt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1, "IPV6_RECVPKTINFO");
		if (rcvbuf && setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)))
			udp_sock_opt(fd, SOL_SOCKET, SO_RCVBUF, (int)rcvbuf, "SO_RCVBUF");
	} else {
		/* Send sockets receive nothing: packets to their ports are dropped at once. */
		struct sock_filter drop = BPF_STMT(BPF_RET | BPF_K, 0);
		struct sock_fprog prog = { .len = 1, .filter = &drop };

		if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)))
			pr_debug("udp: SO_ATTACH_FILTER: %s", strerror(errno));
	}
	if (bind(fd, &sa.sa, len)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int bind_err(const struct udp_backend *u, uint16_t port, int err)
{
	char a[MROC_ADDR_STRLEN];

	pr_err("udp: binding %s port %u: %s",
	       u->local.family ? addr_str(&u->local, a, sizeof(a)) : "any address", port,
	       strerror(-err));
	return err;
}

/*
 * Send sockets open as their ports are used, up to one per port of the
 * range: let the process have that many fds if its hard limit allows.
 */
static void fd_limit(uint32_t span)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)span + 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		pr_warn("udp: raising the open-file limit to %llu: %s",
			(unsigned long long)rl.rlim_cur, strerror(errno));
}

int udp_sockets_open(struct udp_backend *u, const struct udp_backend_cfg *cfg)
{
	int fd;

	u->family = cfg->local.family ? cfg->local.family : AF_INET6;
	u->dual = !cfg->local.family;
	fd = udp_sock_open(u, cfg->udp_port, true, cfg->rcvbuf);
	if (fd == -EAFNOSUPPORT && u->dual) {
		pr_info("udp: no IPv6 here, IPv4 only");
		u->family = AF_INET;
		u->dual = false;
		fd = udp_sock_open(u, cfg->udp_port, true, cfg->rcvbuf);
	}
	if (fd < 0)
		return bind_err(u, cfg->udp_port, fd);
	u->rx_sock = fd;
	fd = udp_sock_open(u, 0, false, 0);
	if (fd < 0)
		return bind_err(u, 0, fd);
	u->eph_sock = fd;
	{
		union udp_sa sa;
		socklen_t len = sizeof(sa);

		if (getsockname(fd, &sa.sa, &len))
			return -errno;
		u->eph_port = ntohs(sa.sa.sa_family == AF_INET ? sa.sin.sin_port : sa.sin6.sin6_port);
	}
	u->span = cfg->sport_max - cfg->sport_min + 1u;
	u->tx_socks = malloc(u->span * sizeof(*u->tx_socks));
	if (!u->tx_socks)
		return -ENOMEM;
	for (uint32_t i = 0; i < u->span; i++)
		u->tx_socks[i] = TX_SOCK_NONE;
	fd_limit(u->span);
	return 0;
}
