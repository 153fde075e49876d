// SPDX-License-Identifier: MIT
/*
 * The netlink module with nexthop_resolve (how the kernel's route and
 * neighbour tables say to reach an address); the peer table: test_peers.c.
 *
 * The tests need root: the process moves itself into a new, unnamed
 * network namespace (unshare), forks a child that holds a second one, and
 * joins them with a veth pair:
 *
 *   ours: v0 10.0.0.1/24 fd00::1/64  <-- veth -->  v1 10.0.0.2/24 fd00::2/64 :peer
 *         10.9.0.0/24 via 10.0.0.2, fd09::/64 via fd00::2
 *
 * The peer's kernel answers ARP and neighbour solicitations.  Both
 * namespaces are anonymous: they vanish when this process and its child
 * exit, whatever the exit path, and no traffic leaves them.  Without root
 * (or without namespaces or iproute2) they are skipped: exit 77.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>		/* before linux/if.h */
#include <linux/if.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if_arp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "netlink.h"
#include "nexthop.h"
#include "peers.h"

#define MS	1000000ull

static const uint8_t mac_v0[6] = { 0x02, 0x6d, 0x72, 0x6f, 0x63, 0x01 };
static const uint8_t mac_v1[6] = { 0x02, 0x6d, 0x72, 0x6f, 0x63, 0x02 };

static struct {
	pid_t holder;			/* child holding the peer namespace */
	int holder_pipe;		/* closing it ends the child */
	int peer_ns;			/* fd of the peer namespace */
	struct nl *nl;
	int v0;				/* ifindex of v0 */
} g = { .holder = -1, .holder_pipe = -1, .peer_ns = -1 };

/* ---- helpers ---------------------------------------------------------------------- */

static struct mroc_addr addr(const char *s)
{
	struct mroc_addr a;

	assert_int_equal(addr_parse(s, &a), 0);
	return a;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Runs a shell command in our namespace (ns < 0) or in ns; returns its status. */
static int run_in(int ns, const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	pid_t pid;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (ns >= 0 && setns(ns, CLONE_NEWNET) < 0)
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define sh(...)		assert_int_equal(run_in(-1, __VA_ARGS__), 0)
#define sh_peer(...)	assert_int_equal(run_in(g.peer_ns, __VA_ARGS__), 0)

/* Polls nl_neigh_get until it gives a MAC, re-triggering resolution. */
static int wait_neigh(int ifindex, const struct mroc_addr *ip, uint8_t mac[6], unsigned ms)
{
	uint64_t end = now_ns() + ms * MS;
	int err;

	do {
		err = nl_neigh_get(g.nl, ifindex, ip, mac, NULL);
		if (err != -EAGAIN)
			return err;
		nl_neigh_resolve(g.nl, ifindex, ip);
		sleep_ms(10);
	} while (now_ns() < end);
	return err;
}

/* Calls nexthop_resolve until it stops saying -EAGAIN (or ms pass); returns its last answer. */
static int wait_resolve(const char *dst, struct nexthop *hop, unsigned ms)
{
	struct mroc_addr a = addr(dst);
	uint64_t end = now_ns() + ms * MS;
	int err;

	do {
		err = nexthop_resolve(g.nl, &a, 0, hop);
		if (err != -EAGAIN)
			return err;
		sleep_ms(1);
	} while (now_ns() < end);
	return err;
}

/* ---- the namespaces ------------------------------------------------------------------- */

/*
 * Child: own network namespace, report, then wait until the parent closes
 * the pipe or dies (PDEATHSIG), and exit.
 */
static void holder(int ready_fd, int hold_fd)
{
	char c = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (unshare(CLONE_NEWNET) < 0)
		c = 1;
	if (write(ready_fd, &c, 1) != 1)
		_exit(1);
	while (read(hold_fd, &c, 1) > 0)
		;
	_exit(0);
}

/* 0, or 77 when namespaces cannot be made here, or 1 on a failure. */
static int ns_create(void)
{
	int ready[2], hold[2];
	char c = 1, path[64];

	if (run_in(-1, "ip -V >/dev/null 2>&1") != 0) {
		printf("skip: iproute2 (ip) not found\n");
		return 77;
	}
	if (unshare(CLONE_NEWNET) < 0) {
		printf("skip: unshare(CLONE_NEWNET): %s\n", strerror(errno));
		return 77;
	}
	if (pipe(ready) < 0 || pipe(hold) < 0)
		return 1;
	g.holder = fork();
	if (g.holder < 0)
		return 1;
	if (g.holder == 0) {
		close(ready[0]);
		close(hold[1]);
		holder(ready[1], hold[0]);
	}
	close(ready[1]);
	close(hold[0]);
	g.holder_pipe = hold[1];
	if (read(ready[0], &c, 1) != 1 || c != 0) {
		close(ready[0]);
		return 1;
	}
	close(ready[0]);
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)g.holder);
	g.peer_ns = open(path, O_RDONLY | O_CLOEXEC);
	return g.peer_ns < 0 ? 1 : 0;
}

static void ns_destroy(void)
{
	if (g.peer_ns >= 0)
		close(g.peer_ns);
	if (g.holder_pipe >= 0)
		close(g.holder_pipe);
	if (g.holder > 0)
		waitpid(g.holder, NULL, 0);
}

static int group_setup(void **state)
{
	struct nl_link l;
	uint64_t end;

	(void)state;
	if (run_in(-1, "ip link set lo up && "
		   "ip link add v0 address 02:6d:72:6f:63:01 type veth "
		   "peer name v1 address 02:6d:72:6f:63:02 netns %d && "
		   "ip addr add 10.0.0.1/24 dev v0 && ip addr add fd00::1/64 dev v0 nodad && "
		   "ip link set v0 up && "
		   "ip route add 10.9.0.0/24 via 10.0.0.2 && ip route add fd09::/64 via fd00::2 && "
		   "ip route add 10.8.0.0/24 via inet6 fd00::2 dev v0 && "
		   "ip route add unreachable 10.7.0.0/24 && "
		   /* an unanswered neighbour fails after 2 x 100 ms instead of 3 s */
		   "sysctl -qw net.ipv4.neigh.v0.retrans_time_ms=100 net.ipv4.neigh.v0.mcast_solicit=2",
		   (int)g.holder) != 0)
		return -1;
	if (run_in(g.peer_ns, "ip link set lo up && ip addr add 10.0.0.2/24 dev v1 && "
		   "ip addr add fd00::2/64 dev v1 nodad && ip link set v1 up") != 0)
		return -1;
	if (nl_open(&g.nl))
		return -1;
	/* wait until the link is up (carrier on both ends, qdisc attached) */
	end = now_ns() + 3000 * MS;
	do {
		if (nl_link_get(g.nl, 0, "v0", &l) == 0 && l.operstate == IF_OPER_UP)
			break;
		sleep_ms(5);
	} while (now_ns() < end);
	g.v0 = l.ifindex;
	return l.operstate == IF_OPER_UP ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	nl_close(g.nl);
	g.nl = NULL;
	return 0;
}

/* Each test starts with an empty neighbour table. */
static int flush_neigh(void **state)
{
	(void)state;
	return run_in(-1, "ip neigh flush dev v0 && ip -6 neigh flush dev v0") ? -1 : 0;
}

/* ---- netlink ---------------------------------------------------------------------- */

static void test_nl_link_get(void **state)
{
	struct nl_link l, m;

	(void)state;
	assert_int_equal(nl_link_get(g.nl, 0, "v0", &l), 0);
	assert_int_equal(l.ifindex, g.v0);
	assert_string_equal(l.name, "v0");
	assert_int_equal(l.type, ARPHRD_ETHER);
	assert_memory_equal(l.mac, mac_v0, 6);
	assert_int_equal(l.mtu, 1500);
	assert_true(l.flags & IFF_UP);
	assert_int_equal(l.operstate, IF_OPER_UP);
	assert_int_equal(l.speed_mbps, 10000);		/* veth says so */
	assert_int_equal(l.vlan_id, 0);

	assert_int_equal(nl_link_get(g.nl, g.v0, NULL, &m), 0);	/* by index */
	assert_string_equal(m.name, "v0");
	assert_memory_equal(m.mac, mac_v0, 6);

	sh("ip link set v0 mtu 4000");
	assert_int_equal(nl_link_get(g.nl, g.v0, NULL, &m), 0);
	assert_int_equal(m.mtu, 4000);
	sh("ip link set v0 mtu 1500");

	assert_int_equal(nl_link_get(g.nl, 0, "lo", &m), 0);
	assert_int_equal(m.type, ARPHRD_LOOPBACK);
	assert_int_equal(m.speed_mbps, 0);
	assert_int_equal(nl_link_get(g.nl, 0, "nosuchdev", &m), -ENODEV);
	assert_int_equal(nl_link_get(g.nl, 999, NULL, &m), -ENODEV);
	assert_int_equal(nl_link_get(g.nl, 0, NULL, &m), -EINVAL);
	assert_int_equal(nl_link_get(g.nl, 0, "", &m), -EINVAL);
	assert_int_equal(nl_link_get(g.nl, 0, "a-name-longer-than-ifnamsiz", &m), -EINVAL);
}

static void expect_route(const char *dst, int ifindex, const char *src, const char *gw)
{
	struct mroc_addr d = addr(dst), s = addr(src);
	struct nl_route r;

	assert_int_equal(nl_route_get(g.nl, &d, &r), 0);
	assert_int_equal(r.type, RTN_UNICAST);
	assert_int_equal(r.ifindex, ifindex);
	assert_true(addr_eq(&r.src, &s));
	if (gw) {
		struct mroc_addr w = addr(gw);

		assert_true(addr_eq(&r.gw, &w));
	} else {
		assert_int_equal(r.gw.family, 0);
	}
}

static void test_nl_route_get(void **state)
{
	struct nl_route r;
	struct mroc_addr d;

	(void)state;
	expect_route("10.0.0.2", g.v0, "10.0.0.1", NULL);
	expect_route("10.0.0.77", g.v0, "10.0.0.1", NULL);
	expect_route("10.9.0.5", g.v0, "10.0.0.1", "10.0.0.2");
	expect_route("10.8.0.5", g.v0, "10.0.0.1", "fd00::2");	/* RTA_VIA */
	expect_route("fd00::2", g.v0, "fd00::1", NULL);
	expect_route("fd09::5", g.v0, "fd00::1", "fd00::2");

	d = addr("10.0.0.1");					/* ourselves */
	assert_int_equal(nl_route_get(g.nl, &d, &r), 0);
	assert_int_equal(r.type, RTN_LOCAL);
	d = addr("192.0.2.1");					/* no route */
	assert_int_equal(nl_route_get(g.nl, &d, &r), -ENETUNREACH);
	d = addr("2001:db8::1");
	assert_int_equal(nl_route_get(g.nl, &d, &r), -ENETUNREACH);
	d = addr("10.7.0.1");					/* unreachable route */
	assert_int_equal(nl_route_get(g.nl, &d, &r), -EHOSTUNREACH);
	d.family = 0;
	assert_int_equal(nl_route_get(g.nl, &d, &r), -EAFNOSUPPORT);
}

static void test_nl_neigh_v4(void **state)
{
	struct mroc_addr ip = addr("10.0.0.2");
	uint8_t mac[6] = { 0 };
	uint16_t st = 0xffff;

	(void)state;
	/* absent: nobody asked yet */
	assert_int_equal(nl_neigh_get(g.nl, g.v0, &ip, mac, &st), -EAGAIN);
	assert_int_equal(st, 0xffff);
	assert_int_not_equal(run_in(-1, "ip neigh show 10.0.0.2 dev v0 | grep -q ."), 0);

	assert_int_equal(nl_neigh_resolve(g.nl, g.v0, &ip), 0);
	/* the entry exists now, as iproute2 sees it, and resolves */
	sh("ip neigh show 10.0.0.2 dev v0 | grep -q .");
	assert_int_equal(wait_neigh(g.v0, &ip, mac, 2000), 0);
	assert_memory_equal(mac, mac_v1, 6);
	assert_int_equal(nl_neigh_get(g.nl, g.v0, &ip, mac, &st), 0);
	assert_int_equal(st, NUD_REACHABLE);
	sh("ip neigh show 10.0.0.2 dev v0 | grep -q REACHABLE");

	/* resolving a reachable entry is harmless */
	assert_int_equal(nl_neigh_resolve(g.nl, g.v0, &ip), 0);
	assert_int_equal(nl_neigh_get(g.nl, g.v0, &ip, mac, &st), 0);
	assert_int_equal(st, NUD_REACHABLE);

	/* STALE still gives the MAC; resolving it makes the kernel probe (DELAY) */
	sh("ip neigh change 10.0.0.2 dev v0 lladdr 02:6d:72:6f:63:02 nud stale");
	assert_int_equal(nl_neigh_get(g.nl, g.v0, &ip, mac, &st), 0);
	assert_int_equal(st, NUD_STALE);
	assert_int_equal(nl_neigh_resolve(g.nl, g.v0, &ip), 0);
	assert_int_equal(nl_neigh_get(g.nl, g.v0, &ip, mac, &st), 0);
	assert_true(st & (NUD_DELAY | NUD_PROBE | NUD_REACHABLE));

	/* a permanent entry */
	ip = addr("10.0.0.50");
	sh("ip neigh add 10.0.0.50 lladdr 02:00:00:00:00:50 dev v0 nud permanent");
	assert_int_equal(nl_neigh_get(g.nl, g.v0, &ip, mac, &st), 0);
	assert_int_equal(st, NUD_PERMANENT);
	assert_memory_equal(mac, ((uint8_t[]){ 2, 0, 0, 0, 0, 0x50 }), 6);
	sh("ip neigh del 10.0.0.50 dev v0");

	assert_int_equal(nl_neigh_get(g.nl, 999, &ip, mac, NULL), -ENODEV);
	assert_int_equal(nl_neigh_resolve(g.nl, 999, &ip), -ENODEV);
	assert_int_equal(nl_neigh_get(g.nl, 0, &ip, mac, NULL), -EINVAL);
	ip.family = 0;
	assert_int_equal(nl_neigh_get(g.nl, g.v0, &ip, mac, NULL), -EAFNOSUPPORT);
	assert_int_equal(nl_neigh_resolve(g.nl, g.v0, &ip), -EAFNOSUPPORT);
}

/* Nobody answers for 10.0.0.9: INCOMPLETE, then FAILED; both -EAGAIN. */
static void test_nl_neigh_unanswered(void **state)
{
	struct mroc_addr ip = addr("10.0.0.9");
	uint64_t end = now_ns() + 3000 * MS;
	uint8_t mac[6];
	uint16_t st = 0;

	(void)state;
	assert_int_equal(nl_neigh_resolve(g.nl, g.v0, &ip), 0);
	assert_int_equal(nl_neigh_get(g.nl, g.v0, &ip, mac, &st), -EAGAIN);
	assert_int_equal(st, NUD_INCOMPLETE);
	do {
		sleep_ms(20);
		assert_int_equal(nl_neigh_get(g.nl, g.v0, &ip, mac, &st), -EAGAIN);
	} while (st != NUD_FAILED && now_ns() < end);
	assert_int_equal(st, NUD_FAILED);
	/* resolving a FAILED entry starts over */
	assert_int_equal(nl_neigh_resolve(g.nl, g.v0, &ip), 0);
	assert_int_equal(nl_neigh_get(g.nl, g.v0, &ip, mac, &st), -EAGAIN);
	assert_int_equal(st, NUD_INCOMPLETE);
}

/*
 * IPv6: neighbour solicitations sent in the first second or so after a veth
 * comes up go unanswered here (with or without DAD), so allow for the
 * kernel's one-second retransmission.
 */
static void test_nl_neigh_v6(void **state)
{
	struct mroc_addr ip = addr("fd00::2");
	uint8_t mac[6];
	uint16_t st;

	(void)state;
	assert_int_equal(nl_neigh_get(g.nl, g.v0, &ip, mac, NULL), -EAGAIN);
	assert_int_equal(nl_neigh_resolve(g.nl, g.v0, &ip), 0);
	sh("ip -6 neigh show fd00::2 dev v0 | grep -q .");
	assert_int_equal(wait_neigh(g.v0, &ip, mac, 5000), 0);
	assert_memory_equal(mac, mac_v1, 6);
	assert_int_equal(nl_neigh_get(g.nl, g.v0, &ip, mac, &st), 0);
	assert_int_equal(st, NUD_REACHABLE);
}

static void test_nl_timeout_and_errmsg(void **state)
{
	struct mroc_addr ip = addr("10.0.0.2");
	uint8_t mac[6];

	(void)state;
	nl_set_timeout(g.nl, 0);			/* ignored */
	nl_set_timeout(g.nl, 200);
	assert_int_equal(nl_neigh_get(g.nl, g.v0, &ip, mac, NULL), -EAGAIN);
	assert_true(strlen(nl_errmsg(g.nl)) > 0);	/* "Neighbour entry not found" */
	nl_set_timeout(g.nl, NL_TIMEOUT_MS_DEFAULT);
}

/* ---- next hops over netlink (nexthop_resolve) ------------------------------------------- */

static void expect_hop(const struct nexthop *hop, const char *src)
{
	struct mroc_addr s = addr(src);

	assert_int_equal(hop->ifindex, g.v0);
	assert_int_equal(hop->vlan, 0);
	assert_true(addr_eq(&hop->src, &s));
	assert_memory_equal(hop->smac, mac_v0, 6);
	assert_memory_equal(hop->dmac, mac_v1, 6);	/* the peer or the gateway: v1 */
}

/* No neighbour yet: -EAGAIN (the kernel was asked), then the next hop once it answers. */
static void test_nexthop_resolve(void **state)
{
	static const struct {
		const char *dst, *src;
		unsigned ms;
	} cases[] = {
		{ "10.0.0.2", "10.0.0.1", 2000 },	/* on-link */
		{ "10.9.0.5", "10.0.0.1", 2000 },	/* via 10.0.0.2 */
		{ "10.8.0.5", "10.0.0.1", 5000 },	/* via fd00::2 */
		{ "fd00::2", "fd00::1", 5000 },
		{ "fd09::5", "fd00::1", 5000 },		/* via fd00::2 */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mroc_addr a = addr(cases[i].dst);
		struct nexthop hop;

		assert_int_equal(flush_neigh(NULL), 0);
		assert_int_equal(nexthop_resolve(g.nl, &a, 0, &hop), -EAGAIN);
		assert_int_equal(wait_resolve(cases[i].dst, &hop, cases[i].ms), 0);
		expect_hop(&hop, cases[i].src);
	}
}

/* Peers that cannot be reached through an Ethernet next hop never resolve. */
static void test_nexthop_unroutable(void **state)
{
	static const struct {
		const char *dst;
		int err;
	} cases[] = {
		{ "10.0.0.1", -ENETUNREACH },		/* local address */
		{ "192.0.2.1", -ENETUNREACH },		/* no route */
		{ "10.7.0.1", -EHOSTUNREACH },		/* unreachable route */
		{ "127.0.0.1", -ENETUNREACH },		/* loopback */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mroc_addr a = addr(cases[i].dst);
		struct nexthop hop;

		assert_int_equal(nexthop_resolve(g.nl, &a, 0, &hop), cases[i].err);
	}
	/*
	 * Out of a given port (mrocd with several): no route is no route,
	 * though IPv4 `route get 192.0.2.1 oif v0` answers "dev v0" as if on
	 * that link, and each such address got a neighbour entry (#24: a REQ
	 * flood from spoofed off-link sources filled the neighbour table).
	 */
	assert_int_equal(flush_neigh(NULL), 0);
	for (int k = 1; k <= 3; k++) {
		char dst[32];
		struct mroc_addr a;
		struct nexthop hop;

		snprintf(dst, sizeof(dst), "192.0.2.%d", k);
		a = addr(dst);
		assert_int_equal(nexthop_resolve(g.nl, &a, g.v0, &hop), -ENETUNREACH);
	}
	assert_int_equal(run_in(-1, "ip neigh show dev v0 | grep -q 192.0.2."), 1);
	{
		struct mroc_addr a = addr("2001:db8::1");
		struct nexthop hop;

		assert_int_equal(nexthop_resolve(g.nl, &a, g.v0, &hop), -ENETUNREACH);
	}
	/* A link's own subnet, and a route through it, still resolve out of it. */
	{
		struct mroc_addr on = addr("10.0.0.2"), via = addr("10.9.0.5");
		struct nexthop hop;
		int err = nexthop_resolve(g.nl, &on, g.v0, &hop);

		assert_true(err == 0 || err == -EAGAIN);
		err = nexthop_resolve(g.nl, &via, g.v0, &hop);
		assert_true(err == 0 || err == -EAGAIN);
	}
}

/* A STALE neighbour's MAC is used at once and the kernel re-probes it. */
static void test_nexthop_stale(void **state)
{
	struct mroc_addr a = addr("10.0.0.2");
	struct nexthop hop;
	uint8_t mac[6];
	uint16_t st;

	(void)state;
	assert_int_equal(wait_resolve("10.0.0.2", &hop, 2000), 0);
	sh("ip neigh change 10.0.0.2 dev v0 lladdr 02:6d:72:6f:63:02 nud stale");
	assert_int_equal(nexthop_resolve(g.nl, &a, 0, &hop), 0);
	expect_hop(&hop, "10.0.0.1");
	assert_int_equal(nl_neigh_get(g.nl, g.v0, &a, mac, &st), 0);
	assert_true(st & (NUD_DELAY | NUD_PROBE | NUD_REACHABLE));
}

/* A route change is seen by the next resolution. */
static void test_nexthop_route_change(void **state)
{
	struct mroc_addr a = addr("10.6.0.1");
	struct nexthop hop;

	(void)state;
	assert_int_equal(nexthop_resolve(g.nl, &a, 0, &hop), -ENETUNREACH);
	sh("ip route add 10.6.0.0/24 via 10.0.0.2");
	assert_int_equal(wait_resolve("10.6.0.1", &hop, 3000), 0);
	expect_hop(&hop, "10.0.0.1");
	sh("ip route del 10.6.0.0/24");
	assert_int_equal(nexthop_resolve(g.nl, &a, 0, &hop), -ENETUNREACH);
}

int main(void)
{
	const struct CMUnitTest ns_tests[] = {
		cmocka_unit_test(test_nl_link_get),
		cmocka_unit_test(test_nl_route_get),
		cmocka_unit_test_setup(test_nl_neigh_v4, flush_neigh),
		cmocka_unit_test_setup(test_nl_neigh_unanswered, flush_neigh),
		cmocka_unit_test_setup(test_nl_neigh_v6, flush_neigh),
		cmocka_unit_test_setup(test_nl_timeout_and_errmsg, flush_neigh),
		cmocka_unit_test(test_nexthop_resolve),
		cmocka_unit_test_setup(test_nexthop_unroutable, flush_neigh),
		cmocka_unit_test_setup(test_nexthop_stale, flush_neigh),
		cmocka_unit_test_setup(test_nexthop_route_change, flush_neigh),
	};
	int rc;

	if (geteuid() != 0) {
		printf("skip: the netlink tests need root (network namespaces)\n");
		return 77;
	}
	rc = ns_create();
	if (rc == 0)
		rc = cmocka_run_group_tests_name("netlink in network namespaces", ns_tests,
						 group_setup, group_teardown) ? 1 : 0;
	ns_destroy();
	return rc;
}
