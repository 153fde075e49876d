// SPDX-License-Identifier: MIT
/*
 * Port addresses in the CM extension (daemon/net/portaddr.c): IPv4 and IPv6
 * round trips, ports without an address, an empty announcement, and every
 * malformed form refused whole, addresses of no host (addr_unicast) included.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "portaddr.h"

static struct mroc_addr addr(const char *s)
{
	struct mroc_addr a;

	assert_int_equal(addr_parse(s, &a), 0);
	return a;
}

static void test_round_trip(void **state)
{
	struct mroc_addr in[PORTADDR_MAX] = { 0 }, out[PORTADDR_MAX];
	uint8_t buf[PORTADDR_LEN(PORTADDR_MAX)];
	uint16_t mask = 0;
	int n;

	(void)state;
	in[0] = addr("10.1.0.2");
	in[3] = addr("10.4.0.2");
	n = portaddr_encode(in, 4, buf, sizeof(buf));
	assert_int_equal(n, PORTADDR_LEN(2));
	assert_int_equal(buf[0], 2);
	assert_int_equal(buf[1], 0);		/* port */
	assert_int_equal(buf[2], 4);		/* family */
	assert_int_equal(buf[3], 10);
	assert_int_equal(portaddr_decode(buf, (size_t)n, out, &mask), 0);
	assert_int_equal(mask, 0x9);
	assert_true(addr_eq(&out[0], &in[0]));
	assert_true(addr_eq(&out[3], &in[3]));
	assert_int_equal(out[1].family, 0);

	/* IPv6, every port. */
	for (unsigned i = 0; i < PORTADDR_MAX; i++) {
		char s[32];

		snprintf(s, sizeof(s), "fd%02x::2", i + 1);
		in[i] = addr(s);
	}
	n = portaddr_encode(in, PORTADDR_MAX, buf, sizeof(buf));
	assert_int_equal(n, PORTADDR_LEN(PORTADDR_MAX));
	assert_int_equal(portaddr_decode(buf, (size_t)n, out, &mask), 0);
	assert_int_equal(mask, 0xffff);
	for (unsigned i = 0; i < PORTADDR_MAX; i++)
		assert_true(addr_eq(&out[i], &in[i]));

	/* None: one byte, count 0, still an announcement. */
	memset(in, 0, sizeof(in));
	n = portaddr_encode(in, 2, buf, sizeof(buf));
	assert_int_equal(n, 1);
	assert_int_equal(buf[0], 0);
	assert_int_equal(portaddr_decode(buf, 1, out, &mask), 0);
	assert_int_equal(mask, 0);
}

static void test_encode_limits(void **state)
{
	struct mroc_addr in[PORTADDR_MAX + 1] = { 0 };
	uint8_t buf[PORTADDR_LEN(1)];

	(void)state;
	in[0] = addr("10.1.0.2");
	in[1] = addr("10.2.0.2");
	assert_int_equal(portaddr_encode(in, PORTADDR_MAX + 1, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(portaddr_encode(in, 2, buf, sizeof(buf)), -ENOSPC);
	assert_int_equal(portaddr_encode(in, 1, buf, sizeof(buf)), PORTADDR_LEN(1));
	assert_int_equal(portaddr_encode(in, 1, buf, 0), -ENOSPC);
}

/* A good announcement of ports 1 (IPv4) and 2 (IPv6), spoiled one way per case. */
static void expect_bad(void (*spoil)(uint8_t *b, size_t *len))
{
	struct mroc_addr in[3] = { { 0 }, addr("10.2.0.2"), addr("fd03::2") }, out[PORTADDR_MAX];
	uint8_t buf[PORTADDR_LEN(4)] = { 0 };
	uint16_t mask = 0xbeef;
	size_t len = (size_t)portaddr_encode(in, 3, buf, sizeof(buf));

	assert_int_equal(len, PORTADDR_LEN(2));
	assert_int_equal(portaddr_decode(buf, len, out, &mask), 0);
	mask = 0xbeef;
	spoil(buf, &len);
	assert_int_equal(portaddr_decode(buf, len, out, &mask), -EBADMSG);
	assert_int_equal(mask, 0xbeef);		/* untouched */
}

static void count_high(uint8_t *b, size_t *len) { b[0] = 3; (void)len; }
static void count_huge(uint8_t *b, size_t *len) { b[0] = 17; *len = PORTADDR_LEN(17); }
static void short_by_one(uint8_t *b, size_t *len) { (void)b; (*len)--; }
static void long_by_one(uint8_t *b, size_t *len) { (void)b; (*len)++; }
static void empty(uint8_t *b, size_t *len) { (void)b; *len = 0; }
static void port_16(uint8_t *b, size_t *len) { b[1] = 16; (void)len; }
static void port_twice(uint8_t *b, size_t *len) { b[1 + PORTADDR_ENTRY_LEN] = 1; (void)len; }
static void family_5(uint8_t *b, size_t *len) { b[2] = 5; (void)len; }
static void v4_padding(uint8_t *b, size_t *len) { b[3 + 4] = 1; (void)len; }
static void v4_zero(uint8_t *b, size_t *len) { memset(b + 3, 0, 4); (void)len; }
static void v6_zero(uint8_t *b, size_t *len)
{
	memset(b + 3 + PORTADDR_ENTRY_LEN, 0, 16);
	(void)len;
}

/* No host's address (addr_unicast, #24): our data to a group, a link, ourselves. */
static void v4_at(uint8_t *b, const char *s)
{
	struct mroc_addr a = addr(s);

	memcpy(b + 3, a.bytes, 4);
}

static void v6_at(uint8_t *b, const char *s)
{
	struct mroc_addr a = addr(s);

	memcpy(b + 3 + PORTADDR_ENTRY_LEN, a.bytes, 16);
}

static void v4_multicast(uint8_t *b, size_t *len) { v4_at(b, "224.0.0.1"); (void)len; }
static void v4_broadcast(uint8_t *b, size_t *len) { v4_at(b, "255.255.255.255"); (void)len; }
static void v4_loopback(uint8_t *b, size_t *len) { v4_at(b, "127.0.0.1"); (void)len; }
static void v4_this_net(uint8_t *b, size_t *len) { v4_at(b, "0.1.2.3"); (void)len; }
static void v6_linklocal(uint8_t *b, size_t *len) { v6_at(b, "fe80::1"); (void)len; }
static void v6_multicast(uint8_t *b, size_t *len) { v6_at(b, "ff02::1"); (void)len; }
static void v6_loopback(uint8_t *b, size_t *len) { v6_at(b, "::1"); (void)len; }
static void v6_v4mapped(uint8_t *b, size_t *len) { v6_at(b, "::ffff:10.2.0.2"); (void)len; }

static void test_unicast(void **state)
{
	static const char *const yes[] = { "10.2.0.2", "1.0.0.1", "223.255.255.254", "169.254.0.1",
					   "fd03::2", "2001:db8::1", "::10.2.0.2" };
	static const char *const no[] = { "0.0.0.0", "0.1.2.3", "127.0.0.1", "224.0.0.1",
					  "239.255.255.255", "240.0.0.1", "255.255.255.255",
					  "::", "::1", "fe80::1", "febf::1", "ff02::1",
					  "ff0e::1", "::ffff:10.2.0.2" };
	struct mroc_addr unset = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		struct mroc_addr a = addr(yes[i]);

		if (!addr_unicast(&a))
			fail_msg("%s refused", yes[i]);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		struct mroc_addr a = addr(no[i]);

		if (addr_unicast(&a))
			fail_msg("%s taken", no[i]);
	}
	assert_false(addr_unicast(&unset));
}

/* Loopback: refused by addr_unicast, a peer only with network.allow_loopback (worker.c). */
static void test_loopback(void **state)
{
	static const char *const yes[] = { "127.0.0.1", "127.0.0.2", "127.255.255.254", "::1" };
	static const char *const no[] = { "10.2.0.2", "128.0.0.1", "126.255.255.255", "::2",
					  "::ffff:127.0.0.1", "fe80::1" };

	(void)state;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		struct mroc_addr a = addr(yes[i]);

		if (!addr_loopback(&a) || addr_unicast(&a))
			fail_msg("%s: not loopback, or taken as unicast", yes[i]);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		struct mroc_addr a = addr(no[i]);

		if (addr_loopback(&a))
			fail_msg("%s taken as loopback", no[i]);
	}
}

static void test_decode_malformed(void **state)
{
	(void)state;
	expect_bad(count_high);
	expect_bad(count_huge);
	expect_bad(short_by_one);
	expect_bad(long_by_one);
	expect_bad(empty);
	expect_bad(port_16);
	expect_bad(port_twice);
	expect_bad(family_5);
	expect_bad(v4_padding);
	expect_bad(v4_zero);
	expect_bad(v6_zero);
	expect_bad(v4_multicast);
	expect_bad(v4_broadcast);
	expect_bad(v4_loopback);
	expect_bad(v4_this_net);
	expect_bad(v6_linklocal);
	expect_bad(v6_multicast);
	expect_bad(v6_loopback);
	expect_bad(v6_v4mapped);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_encode_limits),
		cmocka_unit_test(test_decode_malformed),
		cmocka_unit_test(test_unicast),
		cmocka_unit_test(test_loopback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
