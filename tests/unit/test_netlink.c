// SPDX-License-Identifier: MIT
/*
 * Route replies as daemon/net/netlink.c parses them (nl_route_parse), from
 * canned RTM_NEWROUTE messages: the multipath next hop on a given port of
 * an IPv6 RTM_F_FIB_MATCH reply (a link-local gateway, an RFC 5549 IPv4
 * route via IPv6), and malformed next-hop lists.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <string.h>

#include "netlink.h"

#define BUF_SIZE	1024

/* The message under construction, with room behind it for bytes it does not own. */
static uint8_t buf[BUF_SIZE] __attribute__((aligned(8)));

static struct nlmsghdr *route_msg(uint8_t family)
{
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;

	memset(buf, 0, sizeof(buf));
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWROUTE;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = family;
	rtm->rtm_type = RTN_UNICAST;
	rtm->rtm_flags = RTM_F_FIB_MATCH;
	mnl_attr_put_u32(nlh, RTA_TABLE, RT_TABLE_MAIN);
	return nlh;
}

static struct mroc_addr addr(const char *s)
{
	struct mroc_addr a = { .family = strchr(s, ':') ? AF_INET6 : AF_INET };

	assert_int_equal(inet_pton(a.family, s, a.bytes), 1);
	return a;
}

static void put_addr(struct nlmsghdr *nlh, uint16_t type, const char *s)
{
	struct mroc_addr a = addr(s);

	mnl_attr_put(nlh, type, addr_len(&a), a.bytes);
}

/* One next hop of an RTA_MULTIPATH being built: its rtnexthop, then its gateway. */
static void put_nexthop(struct nlmsghdr *nlh, int ifindex, uint16_t type, const char *gw)
{
	struct rtnexthop *nh = mnl_nlmsg_put_extra_header(nlh, sizeof(*nh));

	nh->rtnh_ifindex = ifindex;
	if (type == RTA_VIA) {
		struct mroc_addr a = addr(gw);
		uint8_t via[sizeof(struct rtvia) + 16];
		struct rtvia *v = (struct rtvia *)via;

		v->rtvia_family = (unsigned short)a.family;
		memcpy(v->rtvia_addr, a.bytes, addr_len(&a));
		mnl_attr_put(nlh, RTA_VIA, sizeof(*v) + addr_len(&a), via);
	} else if (gw) {
		put_addr(nlh, type, gw);
	}
	nh->rtnh_len = (unsigned short)((uint8_t *)mnl_nlmsg_get_payload_tail(nlh) - (uint8_t *)nh);
}

static void expect_addr(const struct mroc_addr *got, const char *want)
{
	struct mroc_addr w = addr(want);

	assert_int_equal(got->family, w.family);
	assert_memory_equal(got->bytes, w.bytes, addr_len(&w));
}

/*
 * `ip -6 route get DST oif p2 fibmatch` of the fabric's ECMP route: the next
 * hop on p2 (ifindex 3), a link-local gateway as a BGP-unnumbered fabric has.
 */
static void test_ipv6_fibmatch_port(void **state)
{
	struct nlmsghdr *nlh = route_msg(AF_INET6);
	struct nlattr *mp;
	struct nl_route rt;

	(void)state;
	put_addr(nlh, RTA_DST, "fd6d:c4:9::");
	put_addr(nlh, RTA_PREFSRC, "fd6d:c4:9::1");
	mp = mnl_attr_nest_start(nlh, RTA_MULTIPATH);
	put_nexthop(nlh, 2, RTA_GATEWAY, "fd6d:c4:1f::2");
	put_nexthop(nlh, 3, RTA_GATEWAY, "fe80::4c16:64ff:feee:ea9c");
	mnl_attr_nest_end(nlh, mp);
	mnl_attr_put_u8(nlh, RTA_PREF, 0);

	assert_int_equal(nl_route_parse(nlh, 3, &rt), 0);
	assert_int_equal(rt.type, RTN_UNICAST);
	assert_int_equal(rt.ifindex, 3);
	expect_addr(&rt.gw, "fe80::4c16:64ff:feee:ea9c");
	expect_addr(&rt.src, "fd6d:c4:9::1");

	assert_int_equal(nl_route_parse(nlh, 2, &rt), 0);
	assert_int_equal(rt.ifindex, 2);
	expect_addr(&rt.gw, "fd6d:c4:1f::2");

	/* No next hop on the port: no interface (the caller keeps the first answer). */
	assert_int_equal(nl_route_parse(nlh, 7, &rt), 0);
	assert_int_equal(rt.ifindex, 0);
	assert_int_equal(rt.gw.family, 0);
	/* Without a port, a multipath route says nothing about next hops. */
	assert_int_equal(nl_route_parse(nlh, 0, &rt), 0);
	assert_int_equal(rt.ifindex, 0);
}

/*
 * The last next hop's attributes end with the message: what lies behind it
 * in the receive buffer (an older, longer reply) is not one of them.
 */
static void test_last_nexthop_ends_with_message(void **state)
{
	struct nlmsghdr *nlh = route_msg(AF_INET6);
	struct nlattr *mp;
	struct nl_route rt;
	uint32_t len;

	(void)state;
	mp = mnl_attr_nest_start(nlh, RTA_MULTIPATH);
	put_nexthop(nlh, 2, RTA_GATEWAY, "fd6d:c4:1f::2");
	put_nexthop(nlh, 3, RTA_GATEWAY, "fd6d:c4:20::2");
	mnl_attr_nest_end(nlh, mp);
	len = nlh->nlmsg_len;
	/* Stale bytes behind the message that read as another gateway attribute. */
	put_addr(nlh, RTA_GATEWAY, "fd6d:dead::1");
	nlh->nlmsg_len = len;

	assert_int_equal(nl_route_parse(nlh, 3, &rt), 0);
	assert_int_equal(rt.ifindex, 3);
	expect_addr(&rt.gw, "fd6d:c4:20::2");
}

/* An IPv4 route over IPv6 next hops (RFC 5549, RTA_VIA), and an on-link next hop. */
static void test_ipv4_via_ipv6(void **state)
{
	struct nlmsghdr *nlh = route_msg(AF_INET);
	struct nlattr *mp;
	struct nl_route rt;

	(void)state;
	put_addr(nlh, RTA_DST, "10.9.0.0");
	mp = mnl_attr_nest_start(nlh, RTA_MULTIPATH);
	put_nexthop(nlh, 2, 0, NULL);
	put_nexthop(nlh, 3, RTA_VIA, "fe80::1");
	mnl_attr_nest_end(nlh, mp);

	assert_int_equal(nl_route_parse(nlh, 3, &rt), 0);
	assert_int_equal(rt.ifindex, 3);
	expect_addr(&rt.gw, "fe80::1");
	assert_int_equal(nl_route_parse(nlh, 2, &rt), 0);
	assert_int_equal(rt.ifindex, 2);
	assert_int_equal(rt.gw.family, 0);
}

/* A plain reply: RTA_OIF and RTA_GATEWAY at the top. */
static void test_single_path(void **state)
{
	struct nlmsghdr *nlh = route_msg(AF_INET);
	struct nl_route rt;

	(void)state;
	mnl_attr_put_u32(nlh, RTA_OIF, 4);
	put_addr(nlh, RTA_GATEWAY, "10.20.31.2");
	put_addr(nlh, RTA_PREFSRC, "10.20.9.1");
	assert_int_equal(nl_route_parse(nlh, 4, &rt), 0);
	assert_int_equal(rt.ifindex, 4);
	expect_addr(&rt.gw, "10.20.31.2");
	expect_addr(&rt.src, "10.20.9.1");
}

/* Malformed next-hop lists and attributes: ignored, never read past. */
static void test_malformed(void **state)
{
	struct nlmsghdr *nlh = route_msg(AF_INET6);
	struct nlattr *mp;
	struct rtnexthop *nh;
	struct nl_route rt;

	(void)state;
	/* A next hop longer than the list, then an empty RTA_VIA at the top. */
	mp = mnl_attr_nest_start(nlh, RTA_MULTIPATH);
	nh = mnl_nlmsg_put_extra_header(nlh, sizeof(*nh));
	nh->rtnh_ifindex = 3;
	nh->rtnh_len = 200;
	mnl_attr_nest_end(nlh, mp);
	mnl_attr_put(nlh, RTA_VIA, 0, NULL);
	assert_int_equal(nl_route_parse(nlh, 3, &rt), 0);
	assert_int_equal(rt.ifindex, 0);
	assert_int_equal(rt.gw.family, 0);

	/* A gateway of the wrong length. */
	nlh = route_msg(AF_INET6);
	mnl_attr_put_u32(nlh, RTA_GATEWAY, 0x0a000001);
	assert_int_equal(nl_route_parse(nlh, 0, &rt), 0);
	assert_int_equal(rt.gw.family, 0);

	/* Not a route, or too short for one. */
	nlh = route_msg(AF_INET6);
	nlh->nlmsg_type = RTM_NEWLINK;
	assert_int_equal(nl_route_parse(nlh, 0, &rt), -ENODATA);
	nlh->nlmsg_type = RTM_NEWROUTE;
	nlh->nlmsg_len = sizeof(*nlh) + 2;
	assert_int_equal(nl_route_parse(nlh, 0, &rt), -ENODATA);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv6_fibmatch_port),
		cmocka_unit_test(test_last_nexthop_ends_with_message),
		cmocka_unit_test(test_ipv4_via_ipv6),
		cmocka_unit_test(test_single_path),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
