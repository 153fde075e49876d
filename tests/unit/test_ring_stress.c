// SPDX-License-Identifier: MIT
/*
 * libclient/ring.h under two threads, producer and consumer on one small
 * ring, every entry checked (sequence number, payload) and a checksum of
 * everything compared at the end:
 *  - spinning, in random-sized batches, so the ring runs full, empty and
 *    everything in between, across the wrap of the 32-bit indices;
 *  - a consumer that sleeps on an eventfd when the ring is empty
 *    (ring_cons_prepare_sleep) and a producer that signals only when
 *    ring_prod_needs_wakeup says so, pausing now and then;
 *  - the same in lock-step, one entry at a time, the producer waiting for
 *    each to be consumed: every commit is then the last one before a
 *    possible sleep, so a lost wake-up cannot hide behind a later commit.
 *    It is counted (an entry not consumed for 2 s) and fails the test; once
 *    with the flag checked (SQ, RQ) and once taken (ring_prod_take_flag, CQ);
 *  - both sleeping tests again with one signal per sleep: the producer signals
 *    only if no commit did since the consumer raised the flag
 *    (ring_prod_needs_wakeup_once, RUNG: libmroc's doorbell).
 * A watchdog fails the whole program rather than letting it hang: when no
 * entry has moved for WATCHDOG_S (it used to bound the whole run, and on a
 * loaded 2-CPU machine the spinning test alone took longer than that).
 *
 * Also the ring's data-race check: build and run it under ThreadSanitizer
 *
 *   make SANITIZE=thread build-thread/tests/unit/test_ring_stress
 *   build-thread/tests/unit/test_ring_stress
 *
 * MROC_STRESS_ENTRIES overrides the number of entries of the spinning test
 * (default 10 million; the others move a fraction of that).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

#define DEFAULT_ENTRIES 10000000ull
#ifdef UNDER_TSAN
#define WATCHDOG_S	300
#else
#define WATCHDOG_S	60
#endif

/* Entries consumed so far, all tests together: the watchdog's sign of life. */
static _Atomic uint64_t progress;

#define ENTRIES		256
#define MAX_BATCH	64

struct entry {
	uint64_t seq;
	uint64_t payload;	/* mix(seq) */
	uint32_t pad[4];	/* entries the size of a CQE */
};

struct stress {
	_Alignas(MROC_CACHE_LINE) struct mroc_ring_ctl ctl;
	struct entry slots[ENTRIES];
	uint64_t count;
	uint32_t max_batch;	/* the producer commits 1..max_batch entries at a time */
	uint32_t idle_polls;	/* empty polls before the consumer sleeps */
	bool jitter;		/* the producer spins a random while between commits */
	bool lockstep;		/* the producer waits for each entry to be consumed */
	bool take;		/* one signal per request (ring_prod_take_flag), as for a CQ */
	bool once;		/* one signal per sleep (needs_wakeup_once), as a doorbell */
	int efd;		/* the consumer's wake-up eventfd; -1: the consumer spins */
	uint64_t prod_sum, cons_sum;
	uint64_t bad;		/* first wrong entry + 1 (0: none) */
	uint64_t sleeps, wakeups, spurious;
	uint64_t lost;		/* lock-step entries left unconsumed for STUCK_NS */
};

#define STUCK_NS 2000000000ll

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void signal_consumer(struct stress *s)
{
	uint64_t one = 1;

	if (write(s->efd, &one, sizeof(one)) != sizeof(one))
		abort();
}

/*
 * Lock-step: every commit is the producer's last until the consumer has
 * taken it, so a wake-up lost there leaves the consumer asleep for good.
 * Count it, wake the consumer and go on (the test then fails).
 */
static void wait_consumed(struct stress *s, struct ring_view *r)
{
	int64_t start = now_ns();

	while (ring_prod_space(r) != ENTRIES) {
		if (now_ns() - start > STUCK_NS) {
			s->lost++;
			signal_consumer(s);
			start = now_ns();
		}
		sched_yield();
	}
}

static uint64_t mix(uint64_t x)
{
	/* splitmix64's finaliser */
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t entries_wanted(void)
{
	const char *s = getenv("MROC_STRESS_ENTRIES");

	return s && *s ? strtoull(s, NULL, 0) : DEFAULT_ENTRIES;
}

static void *producer(void *arg)
{
	struct stress *s = arg;
	struct ring_view r;
	uint64_t seq = 0, rnd = 1;

	ring_view_init(&r, s, 0, ENTRIES, sizeof(struct entry), true);
	while (seq < s->count) {
		int64_t space = ring_prod_space(&r);
		uint32_t n;

		if (space < 0) {
			s->bad = UINT64_MAX;
			return NULL;
		}
		if (space == 0) {
			sched_yield();
			continue;
		}
		rnd = mix(rnd);
		n = 1 + rnd % s->max_batch;
		if (n > space)
			n = space;
		if (n > s->count - seq)
			n = s->count - seq;
		for (uint32_t i = 0; i < n; i++, seq++) {
			struct entry *e = ring_slot(&r, r.head + i);

			e->seq = seq;
			e->payload = mix(seq);
			e->pad[0] = e->pad[3] = (uint32_t)seq;
			s->prod_sum += e->payload;
		}
		ring_prod_commit(&r, n);
		if (s->efd >= 0 && (s->take ? ring_prod_take_flag(&r, MROC_RING_NEED_WAKEUP) :
				    s->once ? ring_prod_needs_wakeup_once(&r, MROC_RING_NEED_WAKEUP,
									  MROC_RING_RUNG) :
					      ring_prod_needs_wakeup(&r, MROC_RING_NEED_WAKEUP))) {
			signal_consumer(s);
			s->wakeups++;
		}
		/* Now and then stop long enough for a sleeping consumer to get to sleep. */
		if (s->efd >= 0 && (rnd >> 32) % 64 == 0)
			usleep(20);
		/* Or keep committing just as the consumer goes to sleep: the racy case. */
		for (uint32_t i = s->jitter ? (rnd >> 40) % 2048 : 0; i > 0; i--)
			atomic_signal_fence(memory_order_seq_cst);
		if (s->lockstep)
			wait_consumed(s, &r);
	}
	return NULL;
}

/* Sleep until the producer has something: the consumer's side of NEED_WAKEUP. */
static void consumer_sleep(struct stress *s, struct ring_view *r)
{
	uint64_t cnt;

	/* Raise the flag and look again: an entry may have slipped in. */
	if (s->once)
		ring_cons_clear_flag(r, MROC_RING_RUNG);	/* before the flag goes up */
	if (ring_cons_prepare_sleep(r, MROC_RING_NEED_WAKEUP)) {
		s->sleeps++;
		if (read(s->efd, &cnt, sizeof(cnt)) != sizeof(cnt))
			abort();
		if (ring_cons_avail(r) == 0)
			s->spurious++;	/* a late signal from an earlier round */
	}
	ring_cons_clear_flag(r, MROC_RING_NEED_WAKEUP);
}

static void *consumer(void *arg)
{
	struct stress *s = arg;
	struct ring_view r;
	uint64_t seq = 0, idle = 0;

	ring_view_init(&r, s, 0, ENTRIES, sizeof(struct entry), false);
	while (seq < s->count) {
		int64_t avail = ring_cons_avail(&r);

		if (avail < 0) {
			s->bad = UINT64_MAX;
			return NULL;
		}
		if (avail == 0) {
			if (s->efd >= 0 && ++idle > s->idle_polls)
				consumer_sleep(s, &r);
			else
				sched_yield();
			continue;
		}
		idle = 0;
		for (uint32_t i = 0; i < avail; i++, seq++) {
			const struct entry *e = ring_cons_slot(&r, i);

			if (!s->bad && (e->seq != seq || e->payload != mix(seq) ||
					e->pad[0] != (uint32_t)seq || e->pad[3] != (uint32_t)seq))
				s->bad = seq + 1;
			s->cons_sum += e->payload;
		}
		atomic_fetch_add_explicit(&progress, avail, memory_order_relaxed);
		/* Release in two steps now and then: partial releases are legal too. */
		if (avail > 1 && seq % 3 == 0) {
			ring_cons_release(&r, 1);
			ring_cons_release(&r, avail - 1);
		} else {
			ring_cons_release(&r, avail);
		}
	}
	return NULL;
}

/* Fails the program when no entry moved for WATCHDOG_S: a hang, not a slow machine. */
static void *watchdog(void *arg)
{
	uint64_t last = UINT64_MAX;
	unsigned still = 0;

	(void)arg;
	for (;;) {
		uint64_t now;

		sleep(1);
		now = atomic_load_explicit(&progress, memory_order_relaxed);
		still = now == last ? still + 1 : 0;
		last = now;
		if (still >= WATCHDOG_S) {
			fprintf(stderr, "test_ring_stress: watchdog: no entry moved for %d s: "
				"the ring hung (lost wake-up?)\n", WATCHDOG_S);
			_exit(1);
		}
	}
	return NULL;
}

static double run(struct stress *s)
{
	struct timespec t0, t1;
	pthread_t p, c;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(pthread_create(&c, NULL, consumer, s), 0);
	assert_int_equal(pthread_create(&p, NULL, producer, s), 0);
	assert_int_equal(pthread_join(p, NULL), 0);
	assert_int_equal(pthread_join(c, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
}

static struct stress *stress_new(uint64_t count, uint32_t start, bool sleeping,
				 uint32_t max_batch)
{
	struct stress *s = aligned_alloc(MROC_CACHE_LINE, sizeof(*s));

	assert_non_null(s);
	memset(s, 0, sizeof(*s));
	s->ctl.prod = s->ctl.cons = start;
	s->count = count;
	s->max_batch = max_batch;
	s->idle_polls = 4;
	s->efd = sleeping ? eventfd(0, EFD_CLOEXEC) : -1;	/* blocking reads */
	if (sleeping)
		assert_true(s->efd >= 0);
	return s;
}

static void check(struct stress *s, double secs, const char *what)
{
	printf("%s: %llu entries in %.2f s (%.1f M/s)", what, (unsigned long long)s->count, secs,
	       s->count / secs / 1e6);
	if (s->efd >= 0)
		printf(", %llu sleeps, %llu wake-ups signalled, %llu spurious",
		       (unsigned long long)s->sleeps, (unsigned long long)s->wakeups,
		       (unsigned long long)s->spurious);
	printf("\n");
	if (s->lost)
		fail_msg("%llu lost wake-ups", (unsigned long long)s->lost);
	if (s->bad)
		fail_msg("first bad entry: %llu", (unsigned long long)s->bad - 1);
	assert_int_equal(s->prod_sum, s->cons_sum);
	/* Everything was handed back: the ring is empty, both sides agree. */
	assert_int_equal(s->ctl.prod, s->ctl.cons);
	assert_int_equal((uint32_t)(s->ctl.prod - (uint32_t)(UINT32_MAX - 1000)),
			 (uint32_t)s->count);
}

static void test_spin(void **state)
{
	struct stress *s = stress_new(entries_wanted(), UINT32_MAX - 1000, false, MAX_BATCH);

	check(s, run(s), "spinning");
	free(s);
}

static void sleep_wakeup(bool once)
{
	struct stress *s = stress_new(entries_wanted() / 5, UINT32_MAX - 1000, true, MAX_BATCH);

	s->once = once;
	check(s, run(s), once ? "sleeping consumer, a signal per sleep" : "sleeping consumer");
	/* The test means nothing if the consumer never slept. */
	assert_true(s->sleeps > 0);
	assert_true(s->wakeups > 0);
	close(s->efd);
	free(s);
}

static void test_sleep_wakeup(void **state)
{
	sleep_wakeup(false);
}

static void test_sleep_wakeup_once(void **state)
{
	sleep_wakeup(true);
}

/*
 * One entry at a time in lock-step, the consumer sleeping whenever the ring
 * is empty; the producer checks the flag (SQ, RQ) or takes it (CQ).
 */
static void sleep_lockstep(bool take, bool once)
{
	struct stress *s = stress_new(entries_wanted() / 200, UINT32_MAX - 1000, true, 1);

	s->idle_polls = 0;
	s->jitter = true;
	s->lockstep = true;
	s->take = take;
	s->once = once;
	check(s, run(s), take ? "sleeping consumer, lock-step, flag taken" :
			 once ? "sleeping consumer, lock-step, a signal per sleep" :
				"sleeping consumer, lock-step");
	assert_true(s->sleeps > 0);
	close(s->efd);
	free(s);
}

static void test_sleep_lockstep(void **state)
{
	sleep_lockstep(false, false);
}

static void test_sleep_lockstep_take(void **state)
{
	sleep_lockstep(true, false);
}

static void test_sleep_lockstep_once(void **state)
{
	sleep_lockstep(false, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spin),
		cmocka_unit_test(test_sleep_wakeup),
		cmocka_unit_test(test_sleep_lockstep),
		cmocka_unit_test(test_sleep_lockstep_take),
		cmocka_unit_test(test_sleep_wakeup_once),
		cmocka_unit_test(test_sleep_lockstep_once),
	};

	pthread_t dog;

	if (pthread_create(&dog, NULL, watchdog, NULL))
		return 1;
	pthread_detach(dog);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
