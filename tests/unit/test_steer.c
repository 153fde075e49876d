// SPDX-License-Identifier: MIT
/*
 * Several workers: engine/owner.c (QPN classes, a packet's
 * destination), daemon/dataplane/steer.c (the owner of a packet: its QPN's class, a
 * CONNECT_REQ by the service listened on) and daemon/dataplane/handoff.h (the SPSC
 * ring: full, empty, and two threads passing 200,000 entries in order).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "handoff.h"
#include "links.h"
#include "steer.h"
#include "wire.h"

static void test_qpn_fit(void **state)
{
	struct engine_config c = { 0 };
	static const uint32_t rs[] = { 0, 1, 2, 3, 12345, 0x7fffffff, UINT32_MAX - 1, UINT32_MAX };

	(void)state;
	assert_int_equal(engine_qpn_fit(&c, 77), 77);	/* no class: as it is */
	c.qpn_mod = 1;
	assert_int_equal(engine_qpn_fit(&c, 77), 77);
	for (uint32_t mod = 2; mod <= 16; mod++) {
		c.qpn_mod = mod;
		for (c.qpn_rem = 0; c.qpn_rem < mod; c.qpn_rem++)
			for (size_t i = 0; i < sizeof(rs) / sizeof(rs[0]); i++) {
				uint32_t q = engine_qpn_fit(&c, rs[i]);

				assert_int_equal(q % mod, c.qpn_rem);
				/* Near the random value: the QPN space stays spread. */
				assert_true(q <= rs[i] ? rs[i] - q < 2 * mod : q - rs[i] < mod);
			}
	}
}

/* A CONNECT_REQ for service (dst_qpn 0) into b; its length. */
static size_t connect_req(uint8_t *b, uint64_t service)
{
	struct mroc_hdr h = { .version = MROC_WIRE_VERSION, .opcode = MROC_OP_CONNECT_REQ,
			      .src_qpn = 99 };
	struct mroc_cm_hdr cm = { .service_id = service, .mtu = 1024, .npaths = 4 };
	size_t n = wire_put_hdr(b, &h);

	return n + wire_put_cm(b + n, &cm);
}

static size_t keepalive(uint8_t *b, uint32_t dst_qpn)
{
	struct mroc_hdr h = { .version = MROC_WIRE_VERSION, .opcode = MROC_OP_KEEPALIVE,
			      .dst_qpn = dst_qpn, .src_qpn = 5 };

	return wire_put_hdr(b, &h);
}

static void test_pkt_dest(void **state)
{
	uint8_t b[128];
	uint64_t svc;
	uint32_t qpn;
	size_t n;

	(void)state;
	n = keepalive(b, 0xdeadbeef);
	assert_int_equal(engine_pkt_dest(b, n, &qpn, &svc), 0);
	assert_int_equal(qpn, 0xdeadbeef);
	assert_int_equal(svc, 0);
	n = connect_req(b, 0x0123456789abcdefULL);
	assert_int_equal(engine_pkt_dest(b, n, &qpn, &svc), 0);
	assert_int_equal(qpn, 0);
	assert_int_equal(svc, 0x0123456789abcdefULL);
	assert_int_equal(engine_pkt_dest(b, n - 1, &qpn, &svc), -EBADMSG);	/* CM header cut */
	assert_int_equal(engine_pkt_dest(b, MROC_HDR_LEN - 1, &qpn, &svc), -EBADMSG);
	b[0] = MROC_WIRE_VERSION + 1;
	assert_int_equal(engine_pkt_dest(b, n, &qpn, &svc), -EBADMSG);
}

static void test_steer(void **state)
{
	struct steer *st;
	uint8_t b[128];
	size_t n;

	(void)state;
	assert_int_equal(steer_create(3, &st), 0);
	for (uint32_t q = 1; q < 100; q++) {
		n = keepalive(b, q * 7919);
		assert_int_equal(steer_owner(st, b, (uint32_t)n), q * 7919 % 3);
	}
	/* Nobody listens: worker 0 (it rejects); then the listener's worker. */
	n = connect_req(b, 0x4242);
	assert_int_equal(steer_owner(st, b, (uint32_t)n), 0);
	assert_int_equal(steer_listen(st, 0x4242, 2), 0);
	assert_int_equal(steer_owner(st, b, (uint32_t)n), 2);
	/* Not last-writer-wins (#24 item 8): another worker's LISTEN is refused. */
	assert_int_equal(steer_listen(st, 0x4242, 1), -EADDRINUSE);
	assert_int_equal(steer_owner(st, b, (uint32_t)n), 2);
	assert_int_equal(steer_listen(st, 0x4242, 2), 0);	/* the same worker's again */
	/* Many services, colliding slots: each finds its own worker. */
	for (uint64_t s = 1; s <= 600; s++)
		assert_int_equal(steer_listen(st, s << 20, (unsigned)(s % 3)), 0);
	for (uint64_t s = 1; s <= 600; s++) {
		n = connect_req(b, s << 20);
		assert_int_equal(steer_owner(st, b, (uint32_t)n), s % 3);
	}
	/* The daemons' own services are worker 0's, whatever listened. */
	steer_listen(st, MROCD_SERVICE_CONTROL, 2);
	n = connect_req(b, MROCD_SERVICE_CONTROL);
	assert_int_equal(steer_owner(st, b, (uint32_t)n), 0);
	/* Garbage: worker 0, whose engine counts it. */
	assert_int_equal(steer_owner(st, b, 3), 0);
	steer_destroy(st);
}

/* A listener's end frees its slot (#24 item 8: 1,024 slots, never freed before). */
static void test_steer_unlisten(void **state)
{
	struct steer *st;
	uint8_t b[128];
	uint64_t svc[1024];
	size_t n;

	(void)state;
	assert_int_equal(steer_create(4, &st), 0);
	for (unsigned i = 0; i < 1024; i++) {
		svc[i] = 0x1000 + (uint64_t)i * 7;
		assert_int_equal(steer_listen(st, svc[i], 1 + i % 3), 0);
	}
	assert_int_equal(steer_services(st), 1024);
	assert_int_equal(steer_listen(st, 0xabcdef, 1), -ENOSPC);	/* full: refused */
	/* Half go (every other one: the probe chains get holes), then new ones fit. */
	for (unsigned i = 0; i < 1024; i += 2)
		steer_unlisten(st, svc[i]);
	steer_unlisten(st, 0x77777);	/* nobody's: nothing changes */
	assert_int_equal(steer_services(st), 512);
	for (unsigned i = 0; i < 1024; i++) {
		n = connect_req(b, svc[i]);
		assert_int_equal(steer_owner(st, b, (uint32_t)n), i % 2 ? 1 + i % 3 : 0);
	}
	for (unsigned i = 0; i < 512; i++)
		assert_int_equal(steer_listen(st, 0x900000 + i, 3), 0);
	assert_int_equal(steer_services(st), 1024);
	for (unsigned i = 1; i < 1024; i += 2) {
		n = connect_req(b, svc[i]);
		assert_int_equal(steer_owner(st, b, (uint32_t)n), 1 + i % 3);
	}
	/* A freed service may be taken by another worker. */
	steer_unlisten(st, svc[1]);
	assert_int_equal(steer_listen(st, svc[1], 3), 0);
	n = connect_req(b, svc[1]);
	assert_int_equal(steer_owner(st, b, (uint32_t)n), 3);
	steer_destroy(st);
}

struct churn {
	struct steer *st;
	atomic_bool stop;
};

/* A writer binding and freeing services around a stable one. */
static void *churn(void *arg)
{
	struct churn *c = arg;

	for (unsigned r = 0; !atomic_load(&c->stop); r++) {
		for (uint64_t s = 0; s < 64; s++)
			steer_listen(c->st, 0x5000 + s * 1024, 1 + (unsigned)s % 2);
		for (uint64_t s = 0; s < 64; s++)
			steer_unlisten(c->st, 0x5000 + s * 1024);
	}
	return NULL;
}

/* Lock-free lookups while another thread rewrites the table never miss a live service. */
static void test_steer_concurrent(void **state)
{
	struct churn c = { 0 };
	pthread_t t;
	uint8_t b[128];
	size_t n = connect_req(b, 0x5000 + 17 * 1024 + 1);

	(void)state;
	assert_int_equal(steer_create(4, &c.st), 0);
	assert_int_equal(steer_listen(c.st, 0x5000 + 17 * 1024 + 1, 3), 0);
	assert_int_equal(pthread_create(&t, NULL, churn, &c), 0);
	for (unsigned i = 0; i < 200000; i++)
		assert_int_equal(steer_owner(c.st, b, (uint32_t)n), 3);
	atomic_store(&c.stop, true);
	pthread_join(t, NULL);
	steer_destroy(c.st);
}

static void test_ring_basic(void **state)
{
	struct handoff_ring *r = calloc(1, sizeof(*r));
	struct handoff_entry e = { .kind = HANDOFF_RETURN };

	(void)state;
	assert_non_null(r);
	assert_true(handoff_empty(r));
	assert_null(handoff_peek(r));
	assert_int_equal(handoff_room(r), HANDOFF_SLOTS);
	for (uint32_t i = 0; i < HANDOFF_SLOTS; i++) {
		e.addr = i;
		assert_true(handoff_push(r, &e));
	}
	assert_false(handoff_push(r, &e));	/* full */
	assert_int_equal(handoff_room(r), 0);
	assert_int_equal(handoff_peek(r)->addr, 0);
	handoff_pop(r);
	assert_int_equal(handoff_room(r), 1);	/* the producer sees the slot again */
	assert_true(handoff_push(r, &e));
	for (uint32_t i = 1; i <= HANDOFF_SLOTS; i++) {
		assert_non_null(handoff_peek(r));
		assert_int_equal(handoff_peek(r)->addr, i < HANDOFF_SLOTS ? i : HANDOFF_SLOTS - 1);
		handoff_pop(r);
	}
	assert_true(handoff_empty(r));
	free(r);
}

#define STRESS_N	200000u

static void *producer(void *arg)
{
	struct handoff_ring *r = arg;

	for (uint32_t i = 0; i < STRESS_N;) {
		struct handoff_entry e = { .addr = i, .len = ~i, .kind = HANDOFF_RX };

		if (handoff_push(r, &e))
			i++;
	}
	return NULL;
}

/* Every entry arrives once, in order, whole (the barriers: no torn or stale entry). */
static void test_ring_threads(void **state)
{
	struct handoff_ring *r = calloc(1, sizeof(*r));
	pthread_t t;
	uint32_t next = 0;

	(void)state;
	assert_non_null(r);
	assert_int_equal(pthread_create(&t, NULL, producer, r), 0);
	while (next < STRESS_N) {
		const struct handoff_entry *e = handoff_peek(r);

		if (!e)
			continue;
		if (e->addr != next || e->len != ~next)
			fail_msg("entry %u: addr %llu len %u", next, (unsigned long long)e->addr, e->len);
		handoff_pop(r);
		next++;
	}
	pthread_join(t, NULL);
	assert_true(handoff_empty(r));
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qpn_fit),
		cmocka_unit_test(test_pkt_dest),
		cmocka_unit_test(test_steer),
		cmocka_unit_test(test_steer_unlisten),
		cmocka_unit_test(test_steer_concurrent),
		cmocka_unit_test(test_ring_basic),
		cmocka_unit_test(test_ring_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
