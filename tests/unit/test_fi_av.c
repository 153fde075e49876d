// SPDX-License-Identifier: MIT
/* The mroc provider's address vector table (libfabric/av_table.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "av_table.h"
#include "proto.h"

static struct mfi_addr A(const char *ip, uint16_t port)
{
	struct mfi_addr a = { .port = port };
	uint32_t ip4;

	if (inet_pton(AF_INET, ip, &ip4) == 1)
		return mfi_addr4(ip4, port);
	assert_int_equal(inet_pton(AF_INET6, ip, &a.ip), 1);
	return a;
}

static void test_insert_lookup_find(void **state)
{
	struct mfi_av av;
	struct mfi_addr a = A("10.0.0.1", 1000), b = A("10.0.0.2", 1000), c = A("10.0.0.1", 1001);

	assert_int_equal(mfi_av_init(&av, 1), 0);
	assert_int_equal(mfi_av_insert(&av, &a), 0);
	assert_int_equal(mfi_av_insert(&av, &b), 1);
	assert_int_equal(mfi_av_insert(&av, &c), 2);	/* grows past the hint */
	assert_true(mfi_addr_eq(mfi_av_get(&av, 1), &b));
	assert_null(mfi_av_get(&av, 3));
	/* Same host, other port: another endpoint. */
	assert_int_equal(mfi_av_find(&av, &c), 2);
	assert_int_equal(mfi_av_find(&av, &(struct mfi_addr){ .ip = b.ip, .port = 9 }), -ENOENT);
	mfi_av_fini(&av);
}

static void test_remove_never_reuses(void **state)
{
	struct mfi_av av;
	struct mfi_addr a = A("10.0.0.1", 7), b = A("10.0.0.2", 7);

	assert_int_equal(mfi_av_init(&av, 4), 0);
	assert_int_equal(mfi_av_insert(&av, &a), 0);
	assert_int_equal(mfi_av_remove(&av, 0), 0);
	assert_int_equal(mfi_av_remove(&av, 0), -EINVAL);	/* twice */
	assert_int_equal(mfi_av_remove(&av, 5), -EINVAL);	/* never inserted */
	assert_null(mfi_av_get(&av, 0));
	assert_int_equal(mfi_av_find(&av, &a), -ENOENT);
	/* A removed fi_addr_t must not come to name a new peer. */
	assert_int_equal(mfi_av_insert(&av, &b), 1);
	mfi_av_fini(&av);
}

static void test_names(void **state)
{
	struct mfi_addr a = A("192.168.1.9", 4242), back;
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	char buf[64];

	assert_int_equal(mfi_addr_to_sa(&a, &ss), sizeof(*sin));
	assert_int_equal(sin->sin_family, AF_INET);
	assert_int_equal(ntohs(sin->sin_port), 4242);
	assert_int_equal(mfi_sa_len(&ss), sizeof(*sin));
	assert_int_equal(mfi_addr_from_sa(&ss, sizeof(*sin), false, &back), 0);
	assert_true(mfi_addr_eq(&a, &back));
	assert_true(mfi_addr_is4(&back));
	assert_int_equal(mfi_addr_service(&a), MFI_SERVICE_BASE | 4242);
	mfi_addr_str(&a, buf, sizeof(buf));
	assert_string_equal(buf, "fi_sockaddr_in://192.168.1.9:4242");
	/* Refused: short, another family, no port, no address (unless a hint's). */
	assert_int_equal(mfi_addr_from_sa(&ss, sizeof(*sin) - 1, false, &back), -EINVAL);
	sin->sin_family = AF_UNIX;
	assert_int_equal(mfi_addr_from_sa(&ss, sizeof(ss), false, &back), -EINVAL);
	mfi_addr_to_sa(&(struct mfi_addr){ .ip = a.ip, .port = 0 }, &ss);
	assert_int_equal(mfi_addr_from_sa(&ss, sizeof(ss), false, &back), -EINVAL);
	assert_int_equal(mfi_addr_from_sa(&ss, sizeof(ss), true, &back), 0);
	mfi_addr_to_sa(&(struct mfi_addr){ .ip = A("0.0.0.0", 1).ip, .port = 1 }, &ss);
	assert_int_equal(mfi_addr_from_sa(&ss, sizeof(ss), false, &back), -EINVAL);
	assert_int_equal(mfi_addr_from_sa(NULL, 16, false, &back), -EINVAL);
}

/* IPv6 names: whole 16 bytes, never truncated; fi_av_straddr's form is libfabric's. */
static void test_names6(void **state)
{
	struct mfi_addr a = A("fd07:1::2", 4242), b = A("fd07:1::3", 4242), back;
	struct sockaddr_storage ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	struct mfi_addr v4 = A("10.0.0.1", 4242), c = A("fd07:1::4", 4242);
	struct mfi_av av;
	char buf[80];

	assert_false(mfi_addr_is4(&a));
	assert_int_equal(mfi_addr_to_sa(&a, &ss), sizeof(*sin6));
	assert_int_equal(sin6->sin6_family, AF_INET6);
	assert_int_equal(ntohs(sin6->sin6_port), 4242);
	assert_memory_equal(&sin6->sin6_addr, &a.ip, 16);
	assert_int_equal(mfi_addr_from_sa(&ss, sizeof(*sin6), false, &back), 0);
	assert_true(mfi_addr_eq(&a, &back));
	/* A sockaddr_in's size is not a sockaddr_in6's. */
	assert_int_equal(mfi_addr_from_sa(&ss, sizeof(struct sockaddr_in), false, &back), -EINVAL);
	/* Addresses that differ only in their last bytes are other endpoints. */
	assert_false(mfi_addr_eq(&a, &b));
	mfi_addr_str(&a, buf, sizeof(buf));
	assert_string_equal(buf, "fi_sockaddr_in6://[fd07:1::2]:4242");
	/* A scoped (link-local) address needs an interface: refused. */
	sin6->sin6_scope_id = 3;
	assert_int_equal(mfi_addr_from_sa(&ss, sizeof(*sin6), false, &back), -EINVAL);
	/* :: is no address; a v4-mapped one is IPv4. */
	mfi_addr_to_sa(&(struct mfi_addr){ .port = 5 }, &ss);
	assert_int_equal(mfi_addr_from_sa(&ss, sizeof(*sin6), false, &back), -EINVAL);
	back = A("::ffff:10.1.2.3", 9);
	assert_true(mfi_addr_is4(&back));
	c = A("10.1.2.3", 9);
	assert_true(mfi_addr_eq(&back, &c));
	c = A("fd07:1::4", 4242);
	/* One AV holds both families, each found by its whole name. */
	assert_int_equal(mfi_av_init(&av, 2), 0);
	assert_int_equal(mfi_av_insert(&av, &a), 0);
	assert_int_equal(mfi_av_insert(&av, &v4), 1);
	assert_int_equal(mfi_av_insert(&av, &b), 2);
	assert_int_equal(mfi_av_find(&av, &b), 2);
	assert_int_equal(mfi_av_find(&av, &v4), 1);
	assert_int_equal(mfi_av_find(&av, &c), -ENOENT);
	mfi_av_fini(&av);
}

/*
 * The HELLO names its sender: an IPv4 one in the 24 bytes every version sent
 * (an older provider reads it unchanged), an IPv6 one in 16 more after them
 * (MFI_HELLO_ADDR6), the CM data after either; too short for its flags: refused.
 */
static void test_hello_names(void **state)
{
	uint8_t buf[sizeof(struct mfi_hello) + MFI_HELLO_ADDR6_LEN + 3];
	struct mfi_hello h = { .port = htole16(7) };
	struct mfi_addr a6 = A("fd07:1::2", 7), a4 = A("10.0.0.9", 7);
	const uint8_t *ip6, *cm;
	size_t cm_len;

	/* IPv4: the old layout, then 3 bytes of CM data. */
	h.ip = mfi_addr_ip4(&a4);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), "abc", 3);
	assert_int_equal(mfi_hello_decode(buf, sizeof(h) + 3, &h, &ip6, &cm, &cm_len), 0);
	assert_null(ip6);
	assert_int_equal(cm_len, 3);
	assert_memory_equal(cm, "abc", 3);
	assert_int_equal(h.ip, mfi_addr_ip4(&a4));
	/* IPv6: the flag, ip 0, the address after the fixed part, the CM data after it. */
	h = (struct mfi_hello){ .port = htole16(7), .flags = htole16(MFI_HELLO_ADDR6 | MFI_HELLO_RNDV) };
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), a6.ip.s6_addr, MFI_HELLO_ADDR6_LEN);
	memcpy(buf + sizeof(h) + MFI_HELLO_ADDR6_LEN, "abc", 3);
	assert_int_equal(mfi_hello_decode(buf, sizeof(buf), &h, &ip6, &cm, &cm_len), 0);
	assert_non_null(ip6);
	assert_memory_equal(ip6, a6.ip.s6_addr, 16);
	assert_int_equal(cm_len, 3);
	assert_memory_equal(cm, "abc", 3);
	/* The flag with fewer than 16 bytes after, or less than the fixed part: refused. */
	assert_int_equal(mfi_hello_decode(buf, sizeof(h) + 15, &h, &ip6, &cm, &cm_len), -EBADMSG);
	assert_int_equal(mfi_hello_decode(buf, sizeof(h) - 1, &h, &ip6, &cm, &cm_len), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_insert_lookup_find),
		cmocka_unit_test(test_remove_never_reuses),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_names6),
		cmocka_unit_test(test_hello_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
