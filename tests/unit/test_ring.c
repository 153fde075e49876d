// SPDX-License-Identifier: MIT
/*
 * libclient/ring.h, one thread: empty and full, the slot of an index, the
 * wrap of the free-running 32-bit indices (starting near UINT32_MAX),
 * views picking up indices already in shared memory, -EBADMSG for every
 * impossible index a peer can write into the control block, and the
 * NEED_WAKEUP/ARMED flag protocol (the consumer's prepare/clear, the
 * producer's check and test-and-clear).  The two-thread stress (also built under
 * ThreadSanitizer) is test_ring_stress.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "ring.h"

#define ENTRIES 8

/* A control block and ENTRIES uint64_t slots, as one ring of a QP region. */
struct test_ring {
	_Alignas(MROC_CACHE_LINE) struct mroc_ring_ctl ctl;
	uint64_t slots[ENTRIES];
};

static struct test_ring *ring_new(uint32_t start)
{
	struct test_ring *t = aligned_alloc(MROC_CACHE_LINE, sizeof(*t));

	assert_non_null(t);
	memset(t, 0, sizeof(*t));
	t->ctl.prod = start;
	t->ctl.cons = start;
	return t;
}

static void views(struct test_ring *t, struct ring_view *p, struct ring_view *c)
{
	ring_view_init(p, t, 0, ENTRIES, sizeof(uint64_t), true);
	ring_view_init(c, t, 0, ENTRIES, sizeof(uint64_t), false);
}

static void push(struct ring_view *p, uint64_t v)
{
	assert_true(ring_prod_space(p) > 0);
	memcpy(ring_prod_slot(p), &v, sizeof(v));
	ring_prod_commit(p, 1);
}

static uint64_t pop(struct ring_view *c)
{
	uint64_t v;

	assert_true(ring_cons_avail(c) > 0);
	memcpy(&v, ring_cons_slot(c, 0), sizeof(v));
	ring_cons_release(c, 1);
	return v;
}

static void test_view_init(void **state)
{
	struct test_ring *t = ring_new(0);
	struct ring_view p, c;

	t->ctl.prod = 5;
	t->ctl.cons = 3;
	views(t, &p, &c);
	assert_ptr_equal(p.ctl, &t->ctl);
	assert_ptr_equal(p.entries, (uint8_t *)t->slots);
	assert_int_equal(p.mask, ENTRIES - 1);
	assert_int_equal(p.entry_size, sizeof(uint64_t));
	assert_int_equal(p.head, 5);	/* a producer resumes from prod */
	assert_int_equal(c.head, 3);	/* a consumer from cons */
	assert_int_equal(ring_cons_avail(&c), 2);
	assert_int_equal(ring_prod_space(&p), ENTRIES - 2);
	free(t);
}

static void test_empty_full(void **state)
{
	struct test_ring *t = ring_new(0);
	struct ring_view p, c;

	views(t, &p, &c);
	assert_int_equal(ring_cons_avail(&c), 0);
	assert_int_equal(ring_prod_space(&p), ENTRIES);
	for (uint64_t i = 0; i < ENTRIES; i++) {
		assert_int_equal(ring_prod_space(&p), ENTRIES - i);
		push(&p, 100 + i);
		assert_int_equal(ring_cons_avail(&c), i + 1);
	}
	assert_int_equal(ring_prod_space(&p), 0);
	assert_int_equal(t->ctl.prod, ENTRIES);
	/* Entries land in slot index & mask. */
	for (int i = 0; i < ENTRIES; i++)
		assert_int_equal(t->slots[i], 100 + i);

	/* The consumer sees all of them at once, by offset from its head. */
	for (uint32_t i = 0; i < ENTRIES; i++)
		assert_int_equal(*(uint64_t *)ring_cons_slot(&c, i), 100 + i);
	ring_cons_release(&c, 3);
	assert_int_equal(t->ctl.cons, 3);
	assert_int_equal(ring_cons_avail(&c), ENTRIES - 3);
	assert_int_equal(ring_prod_space(&p), 3);

	/* Refill: slots 0..2 are reused. */
	push(&p, 200);
	assert_int_equal(t->slots[0], 200);
	assert_int_equal(pop(&c), 103);
	free(t);
}

static void test_batch_commit(void **state)
{
	struct test_ring *t = ring_new(0);
	struct ring_view p, c;

	views(t, &p, &c);
	/* Entries written but not committed are invisible. */
	for (uint32_t i = 0; i < 3; i++)
		*(uint64_t *)ring_slot(&p, p.head + i) = i;
	assert_int_equal(ring_cons_avail(&c), 0);
	ring_prod_commit(&p, 3);
	assert_int_equal(ring_cons_avail(&c), 3);
	assert_int_equal(ring_prod_space(&p), ENTRIES - 3);
	free(t);
}

static void test_wrap_u32(void **state)
{
	const uint32_t start = UINT32_MAX - 3;
	struct test_ring *t = ring_new(start);
	struct ring_view p, c;
	uint64_t next = 0, expect = 0;

	views(t, &p, &c);
	assert_int_equal(p.head, start);
	/* Many passes over the wrap, at every fill level. */
	for (int round = 0; round < 50; round++) {
		int n = 1 + round % ENTRIES;

		for (int i = 0; i < n; i++)
			push(&p, next++);
		assert_int_equal(ring_cons_avail(&c), n);
		assert_int_equal(ring_prod_space(&p), ENTRIES - n);
		for (int i = 0; i < n; i++)
			assert_int_equal(pop(&c), expect++);
	}
	assert_true(p.head < start);	/* it did wrap */
	assert_int_equal(p.head, (uint32_t)(start + next));

	/* Full across the wrap. */
	t->ctl.prod = t->ctl.cons = UINT32_MAX - 2;
	views(t, &p, &c);
	for (int i = 0; i < ENTRIES; i++)
		push(&p, i);
	assert_int_equal(ring_prod_space(&p), 0);
	assert_int_equal(ring_cons_avail(&c), ENTRIES);
	assert_int_equal(t->ctl.prod, ENTRIES - 3);
	for (int i = 0; i < ENTRIES; i++)
		assert_int_equal(pop(&c), i);
	free(t);
}

static void test_bad_indices(void **state)
{
	struct test_ring *t = ring_new(UINT32_MAX - 1);
	struct ring_view p, c;
	uint32_t head;

	views(t, &p, &c);
	push(&p, 1);
	push(&p, 2);
	head = p.head;

	/* A consumer index ahead of the producer, or more than a ring behind: impossible. */
	t->ctl.cons = head + 1;
	assert_int_equal(ring_prod_space(&p), -EBADMSG);
	t->ctl.cons = head - ENTRIES - 1;
	assert_int_equal(ring_prod_space(&p), -EBADMSG);
	t->ctl.cons = head ^ 0x80000000u;
	assert_int_equal(ring_prod_space(&p), -EBADMSG);
	/* The limits themselves are fine: exactly full and exactly empty. */
	t->ctl.cons = head - ENTRIES;
	assert_int_equal(ring_prod_space(&p), 0);
	t->ctl.cons = head;
	assert_int_equal(ring_prod_space(&p), ENTRIES);

	/* A producer index behind the consumer, or more than a ring ahead: impossible. */
	t->ctl.prod = c.head - 1;
	assert_int_equal(ring_cons_avail(&c), -EBADMSG);
	t->ctl.prod = c.head + ENTRIES + 1;
	assert_int_equal(ring_cons_avail(&c), -EBADMSG);
	t->ctl.prod = 0xdeadbeef;
	assert_int_equal(ring_cons_avail(&c), -EBADMSG);
	t->ctl.prod = c.head + ENTRIES;
	assert_int_equal(ring_cons_avail(&c), ENTRIES);

	/* The private views were not changed by any of it. */
	assert_int_equal(p.head, head);
	assert_int_equal(p.mask, ENTRIES - 1);
	free(t);
}

/* One doorbell per sleep: the first post after NEED_WAKEUP rings, the next ones do not. */
static void test_wakeup_once(void **state)
{
	struct test_ring *t = ring_new(0);
	struct ring_view p, c;

	(void)state;
	views(t, &p, &c);
	push(&p, 1);
	assert_false(ring_prod_needs_wakeup_once(&p, MROC_RING_NEED_WAKEUP, MROC_RING_RUNG));
	assert_int_equal(t->ctl.flags, 0);
	pop(&c);
	/* Asleep: the first commit rings (and says so), the second does not. */
	assert_true(ring_cons_prepare_sleep(&c, MROC_RING_NEED_WAKEUP));
	push(&p, 2);
	assert_true(ring_prod_needs_wakeup_once(&p, MROC_RING_NEED_WAKEUP, MROC_RING_RUNG));
	assert_int_equal(t->ctl.flags, MROC_RING_NEED_WAKEUP | MROC_RING_RUNG);
	push(&p, 3);
	assert_false(ring_prod_needs_wakeup_once(&p, MROC_RING_NEED_WAKEUP, MROC_RING_RUNG));
	/* Woken: awake, nobody rings; asleep again (RUNG cleared first), the next commit rings. */
	ring_cons_clear_flag(&c, MROC_RING_NEED_WAKEUP);
	pop(&c);
	pop(&c);
	push(&p, 4);
	assert_false(ring_prod_needs_wakeup_once(&p, MROC_RING_NEED_WAKEUP, MROC_RING_RUNG));
	pop(&c);
	ring_cons_clear_flag(&c, MROC_RING_RUNG);
	assert_true(ring_cons_prepare_sleep(&c, MROC_RING_NEED_WAKEUP));
	push(&p, 5);
	assert_true(ring_prod_needs_wakeup_once(&p, MROC_RING_NEED_WAKEUP, MROC_RING_RUNG));
	free(t);
}

static void test_wakeup_flags(void **state)
{
	struct test_ring *t = ring_new(0);
	struct ring_view p, c;

	views(t, &p, &c);
	/* Consumer awake: the producer does not signal. */
	push(&p, 1);
	assert_false(ring_prod_needs_wakeup(&p, MROC_RING_NEED_WAKEUP));
	/* Entries waiting: prepare_sleep says do not sleep (the flag is up anyway). */
	assert_false(ring_cons_prepare_sleep(&c, MROC_RING_NEED_WAKEUP));
	assert_int_equal(t->ctl.flags, MROC_RING_NEED_WAKEUP);
	ring_cons_clear_flag(&c, MROC_RING_NEED_WAKEUP);
	assert_int_equal(t->ctl.flags, 0);
	pop(&c);

	/* Empty: the consumer may sleep, and the next commit must wake it. */
	assert_true(ring_cons_prepare_sleep(&c, MROC_RING_NEED_WAKEUP));
	push(&p, 2);
	assert_true(ring_prod_needs_wakeup(&p, MROC_RING_NEED_WAKEUP));
	/* Woken, it clears the flag: the producer stops signalling. */
	ring_cons_clear_flag(&c, MROC_RING_NEED_WAKEUP);
	push(&p, 3);
	assert_false(ring_prod_needs_wakeup(&p, MROC_RING_NEED_WAKEUP));

	/* Only the named bit is touched. */
	t->ctl.flags = 0x10;
	assert_false(ring_cons_prepare_sleep(&c, MROC_RING_ARMED));
	assert_int_equal(t->ctl.flags, 0x10 | MROC_RING_ARMED);
	assert_false(ring_prod_needs_wakeup(&p, 0x2));
	ring_cons_clear_flag(&c, MROC_RING_ARMED);
	assert_int_equal(t->ctl.flags, 0x10);

	/* The producer's test-and-clear: one wake-up per request. */
	assert_false(ring_prod_take_flag(&p, MROC_RING_ARMED));
	t->ctl.flags = 0x10 | MROC_RING_ARMED;
	assert_true(ring_prod_take_flag(&p, MROC_RING_ARMED));
	assert_int_equal(t->ctl.flags, 0x10);
	assert_false(ring_prod_take_flag(&p, MROC_RING_ARMED));
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_view_init),
		cmocka_unit_test(test_empty_full),
		cmocka_unit_test(test_batch_commit),
		cmocka_unit_test(test_wrap_u32),
		cmocka_unit_test(test_bad_indices),
		cmocka_unit_test(test_wakeup_flags),
		cmocka_unit_test(test_wakeup_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
