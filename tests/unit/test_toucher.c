// SPDX-License-Identifier: MIT
/*
 * daemon/clients/toucher.[ch]: every page of what is queued gets read once;
 * a range forgotten and unmapped at any moment (before, while or after the
 * thread reads it) is never read afterwards (it would be a SIGSEGV here);
 * the counts add up; stopping with ranges queued loses nothing but them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "toucher.h"

static uint64_t page_size(void)
{
	return (uint64_t)sysconf(_SC_PAGESIZE);
}

static void *map_anon(uint64_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(m != MAP_FAILED);
	return m;
}

/* Until nothing is queued: the thread always gets there (no clock involved). */
static void drain(struct toucher *t, uint64_t *done)
{
	uint64_t queued;

	for (;;) {
		toucher_counts(t, done, &queued);
		if (!queued)
			return;
		sched_yield();
	}
}

static void test_every_page_once(void **state)
{
	uint64_t pg = page_size(), lens[] = { 1, pg, 3 * pg + 1, (5u << 20) + pg, 64 * pg };
	void *maps[5];
	uint64_t want = 0, done;
	struct toucher *t;

	(void)state;
	assert_int_equal(toucher_create(&t), 0);
	for (unsigned i = 0; i < 5; i++) {
		maps[i] = map_anon(lens[i]);
		assert_int_equal(toucher_add(t, maps[i], lens[i]), 0);
		want += (lens[i] + pg - 1) / pg;
	}
	assert_int_equal(toucher_add(t, maps[0], 0), 0);	/* nothing to read */
	drain(t, &done);
	assert_int_equal(done, want);
	/* Done ranges forgotten: nothing to wait for, nothing changes. */
	for (unsigned i = 0; i < 5; i++) {
		toucher_forget(t, maps[i]);
		munmap(maps[i], lens[i]);
	}
	toucher_forget(t, (void *)0x1000);	/* never queued */
	drain(t, &done);
	assert_int_equal(done, want);
	toucher_destroy(t);
	toucher_destroy(NULL);
}

/*
 * Ranges unmapped right after they are forgotten, at every point of the
 * thread's work: any read after forget() returned would fault.
 */
static void test_forget_then_unmap(void **state)
{
	uint64_t pg = page_size(), done, queued;
	struct toucher *t;

	(void)state;
	srandom(7);
	assert_int_equal(toucher_create(&t), 0);
	for (int round = 0; round < 300; round++) {
		uint64_t len = (1 + (uint64_t)random() % 1024) * pg * 4;	/* 16 KiB .. 4 MiB */
		void *a = map_anon(len), *b = map_anon(pg);

		assert_int_equal(toucher_add(t, a, len), 0);
		assert_int_equal(toucher_add(t, b, pg), 0);
		for (long y = random() % 4; y > 0; y--)
			sched_yield();
		toucher_forget(t, a);
		munmap(a, len);
		if (round % 2) {
			toucher_forget(t, b);
			munmap(b, pg);
		} else {
			drain(t, &done);	/* b read in full while mapped */
			toucher_forget(t, b);
			munmap(b, pg);
		}
	}
	toucher_counts(t, &done, &queued);
	assert_int_equal(queued, 0);
	assert_true(done > 0);
	toucher_destroy(t);
}

/* Stopped with GiBs queued: the thread ends after its chunk, the queue is freed. */
static void test_destroy_with_work(void **state)
{
	uint64_t len = 256u << 20;
	void *m = map_anon(len);
	struct toucher *t;

	(void)state;
	assert_int_equal(toucher_create(&t), 0);
	assert_int_equal(toucher_add(t, m, len), 0);
	assert_int_equal(toucher_add(t, m, len), 0);
	toucher_destroy(t);
	munmap(m, len);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_page_once),
		cmocka_unit_test(test_forget_then_unmap),
		cmocka_unit_test(test_destroy_with_work),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
