// SPDX-License-Identifier: MIT
/*
 * Receiver SACK scoreboard (sack.[ch]): in-order advance, holes and fills,
 * duplicates, the 256-PSN window edge, the sender's floor, the wrap of the
 * 32-bit PSN space, the wire bit order of sack_to_bytes, and a long random
 * run against a deliberately naive reference model.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "sack.h"
#include "wire.h"

/* ---- helpers ------------------------------------------------------------------ */

/* The map as the ACK would carry it. */
static void bytes_of(const struct sack *s, uint8_t out[MROC_SACK_BYTES])
{
	memset(out, 0xee, MROC_SACK_BYTES);
	sack_to_bytes(s, out);
}

/* Exactly these offsets above cum (1..256) are set in the map, nothing else. */
static void assert_map(const struct sack *s, const unsigned *above, unsigned n)
{
	uint8_t want[MROC_SACK_BYTES] = { 0 }, got[MROC_SACK_BYTES];

	for (unsigned k = 0; k < n; k++) {
		unsigned i = above[k] - 1;

		assert_true(above[k] >= 1 && above[k] <= MROC_SACK_BITS);
		want[i / 8] |= (uint8_t)(1u << (i % 8));
	}
	bytes_of(s, got);
	assert_memory_equal(got, want, MROC_SACK_BYTES);
	for (unsigned i = 0; i < MROC_SACK_BITS; i++)
		assert_int_equal(sack_test(s, s->cum + 1 + i), sack_bytes_test(want, i));
	assert_int_equal(sack_has_holes(s), n != 0);
	assert_false(sack_test(s, s->cum));
}

static void assert_empty_at(const struct sack *s, uint32_t cum)
{
	assert_int_equal(s->cum, cum);
	assert_map(s, NULL, 0);
}

/* ---- basic behaviour ---------------------------------------------------------- */

static void test_init(void **state)
{
	struct sack s;

	(void)state;
	memset(&s, 0xa5, sizeof(s));
	sack_init(&s, 1000);
	assert_empty_at(&s, 1000);
	/* Everything below cum counts as received, cum itself and above do not. */
	assert_true(sack_test(&s, 999));
	assert_true(sack_test(&s, 0));
	assert_false(sack_test(&s, 1000));
	assert_false(sack_test(&s, 1001));
	assert_false(sack_test(&s, 1000 + MROC_SACK_BITS));
	assert_false(sack_test(&s, 1000 + MROC_SACK_BITS + 1));
}

static void test_in_order(void **state)
{
	struct sack s;

	(void)state;
	sack_init(&s, 7);
	for (uint32_t psn = 7; psn < 7 + 5000; psn++) {
		assert_int_equal(sack_set(&s, psn), SACK_NEW);
		assert_int_equal(s.cum, psn + 1);
		assert_false(sack_has_holes(&s));
		assert_true(sack_test(&s, psn));
	}
	assert_empty_at(&s, 7 + 5000);
}

static void test_holes_and_fills(void **state)
{
	struct sack s;

	(void)state;
	sack_init(&s, 100);
	assert_int_equal(sack_set(&s, 102), SACK_NEW);
	assert_int_equal(sack_set(&s, 104), SACK_NEW);
	assert_int_equal(sack_set(&s, 105), SACK_NEW);
	assert_int_equal(s.cum, 100);
	assert_map(&s, (const unsigned[]){ 2, 4, 5 }, 3);

	/* cum arrives, 101 is still missing: cum moves by one only. */
	assert_int_equal(sack_set(&s, 100), SACK_NEW);
	assert_int_equal(s.cum, 101);
	assert_map(&s, (const unsigned[]){ 1, 3, 4 }, 3);

	/* 101 fills the first hole: cum slides over 102 and stops at 103. */
	assert_int_equal(sack_set(&s, 101), SACK_NEW);
	assert_int_equal(s.cum, 103);
	assert_map(&s, (const unsigned[]){ 1, 2 }, 2);

	/* 103 fills the last hole: cum slides over 104, 105. */
	assert_int_equal(sack_set(&s, 103), SACK_NEW);
	assert_empty_at(&s, 106);
}

/* Holes that straddle the 64-bit words of the map. */
static void test_holes_across_words(void **state)
{
	static const unsigned above[] = { 1, 63, 64, 65, 127, 128, 129, 191, 192, 193, 255, 256 };
	struct sack s;

	(void)state;
	sack_init(&s, 5000);
	for (unsigned k = 0; k < sizeof(above) / sizeof(above[0]); k++)
		assert_int_equal(sack_set(&s, 5000 + above[k]), SACK_NEW);
	assert_int_equal(s.cum, 5000);
	assert_map(&s, above, sizeof(above) / sizeof(above[0]));

	/* Fill 5002..5062: with 5000 received too, cum slides to the next hole at 5066. */
	for (uint32_t p = 5002; p <= 5062; p++)
		assert_int_equal(sack_set(&s, p), SACK_NEW);
	assert_int_equal(sack_set(&s, 5000), SACK_NEW);
	assert_int_equal(s.cum, 5066);
	/* 5127, 5128, 5129, ... are now at 61, 62, 63, ... above 5066. */
	assert_map(&s, (const unsigned[]){ 61, 62, 63, 125, 126, 127, 189, 190 }, 8);
}

/* Every bit of the map set, then cum: the whole window slides out at once. */
static void test_full_map_slides_257(void **state)
{
	struct sack s;

	(void)state;
	sack_init(&s, 40);
	for (uint32_t p = 41; p <= 40 + MROC_SACK_BITS; p++)
		assert_int_equal(sack_set(&s, p), SACK_NEW);
	assert_int_equal(s.cum, 40);
	for (unsigned i = 0; i < MROC_SACK_BYTES; i++) {
		uint8_t b[MROC_SACK_BYTES];

		bytes_of(&s, b);
		assert_int_equal(b[i], 0xff);
	}
	assert_int_equal(sack_set(&s, 40), SACK_NEW);
	assert_empty_at(&s, 40 + MROC_SACK_BITS + 1);
	/* The next PSN continues normally. */
	assert_int_equal(sack_set(&s, 40 + MROC_SACK_BITS + 1), SACK_NEW);
	assert_empty_at(&s, 40 + MROC_SACK_BITS + 2);
}

static void test_duplicates(void **state)
{
	struct sack s, before;

	(void)state;
	sack_init(&s, 1000);
	for (uint32_t p = 1000; p < 1010; p++)
		sack_set(&s, p);
	sack_set(&s, 1012);
	sack_set(&s, 1300 - 40);
	before = s;

	/* Below cum: every one is a duplicate and changes nothing. */
	for (uint32_t p = 1000; p < 1010; p++) {
		assert_int_equal(sack_set(&s, p), SACK_DUP);
		assert_memory_equal(&s, &before, sizeof(s));
	}
	assert_int_equal(sack_set(&s, 0), SACK_DUP);
	assert_int_equal(sack_set(&s, 1010 - 0x7fffffffu), SACK_DUP);
	/* Inside the map. */
	assert_int_equal(sack_set(&s, 1012), SACK_DUP);
	assert_int_equal(sack_set(&s, 1260), SACK_DUP);
	assert_memory_equal(&s, &before, sizeof(s));
	/* A PSN that is merely near a set one is new. */
	assert_int_equal(sack_set(&s, 1011), SACK_NEW);
	assert_int_equal(s.cum, 1010);
	assert_int_equal(sack_set(&s, 1011), SACK_DUP);
}

static void test_window_edge(void **state)
{
	struct sack s, before;
	uint8_t b[MROC_SACK_BYTES];

	(void)state;
	sack_init(&s, 500);
	before = s;
	/* cum + 257 is one past the map: refused and not recorded. */
	assert_int_equal(sack_set(&s, 500 + MROC_SACK_BITS + 1), SACK_BEYOND);
	assert_memory_equal(&s, &before, sizeof(s));
	assert_int_equal(sack_set(&s, 500 + 100000), SACK_BEYOND);
	assert_int_equal(sack_set(&s, 500 + 0x7fffffffu), SACK_BEYOND);
	assert_memory_equal(&s, &before, sizeof(s));

	/* cum + 256 is the last bit: byte 31, bit 7. */
	assert_int_equal(sack_set(&s, 500 + MROC_SACK_BITS), SACK_NEW);
	assert_int_equal(s.cum, 500);
	bytes_of(&s, b);
	assert_int_equal(b[31], 0x80);
	for (unsigned i = 0; i < 31; i++)
		assert_int_equal(b[i], 0);
	assert_true(sack_test(&s, 500 + MROC_SACK_BITS));
	assert_int_equal(sack_set(&s, 500 + MROC_SACK_BITS), SACK_DUP);

	/* Once cum moves by one, what was beyond is inside. */
	assert_int_equal(sack_set(&s, 500), SACK_NEW);
	assert_int_equal(s.cum, 501);
	assert_int_equal(sack_set(&s, 501 + MROC_SACK_BITS), SACK_NEW);
	assert_map(&s, (const unsigned[]){ 255, 256 }, 2);
}

/* ---- the sender's floor -------------------------------------------------------- */

static void test_floor_not_after_cum(void **state)
{
	struct sack s, before;

	(void)state;
	sack_init(&s, 3000);
	sack_set(&s, 3002);
	sack_set(&s, 3200);
	before = s;
	sack_floor(&s, 3000);
	assert_memory_equal(&s, &before, sizeof(s));
	sack_floor(&s, 2999);
	sack_floor(&s, 0);
	sack_floor(&s, 3000 - 0x7fffffffu);
	assert_memory_equal(&s, &before, sizeof(s));
}

static void test_floor_inside_map(void **state)
{
	struct sack s;

	(void)state;
	sack_init(&s, 1000);
	sack_set(&s, 1002);
	sack_set(&s, 1005);
	sack_set(&s, 1010);

	/* Floor at a PSN not received: cum jumps there, bits above it keep their PSNs. */
	sack_floor(&s, 1003);
	assert_int_equal(s.cum, 1003);
	assert_map(&s, (const unsigned[]){ 2, 7 }, 2);
	/* 1002 lay below the floor: now below cum, so "received". */
	assert_true(sack_test(&s, 1001));

	/* Floor at a received PSN: cum slides past it (1006 is missing). */
	sack_floor(&s, 1005);
	assert_int_equal(s.cum, 1006);
	assert_map(&s, (const unsigned[]){ 4 }, 1);

	/* Floor at a received PSN with a run above it: cum slides over the run. */
	sack_set(&s, 1011);
	sack_set(&s, 1012);
	sack_set(&s, 1020);
	sack_floor(&s, 1010);
	assert_int_equal(s.cum, 1013);
	assert_map(&s, (const unsigned[]){ 7 }, 1);

	/* Floor at the last bit of the map, received: everything slides out. */
	sack_init(&s, 0);
	sack_set(&s, MROC_SACK_BITS);
	sack_floor(&s, MROC_SACK_BITS);
	assert_empty_at(&s, MROC_SACK_BITS + 1);

	/* Floor at the last bit, not received, with a bit below it. */
	sack_init(&s, 0);
	sack_set(&s, 5);
	sack_floor(&s, MROC_SACK_BITS);
	assert_empty_at(&s, MROC_SACK_BITS);
}

static void test_floor_beyond_map(void **state)
{
	struct sack s;

	(void)state;
	sack_init(&s, 200);
	sack_set(&s, 201);
	sack_set(&s, 300);
	sack_set(&s, 456);	/* cum + 256 */
	sack_floor(&s, 200 + MROC_SACK_BITS + 1);
	assert_empty_at(&s, 200 + MROC_SACK_BITS + 1);

	sack_set(&s, s.cum + 3);
	sack_floor(&s, s.cum + 1000000);
	assert_empty_at(&s, 200 + MROC_SACK_BITS + 1 + 1000000);
	/* Still fully usable afterwards. */
	assert_int_equal(sack_set(&s, s.cum + 1), SACK_NEW);
	assert_int_equal(sack_set(&s, s.cum), SACK_NEW);
	assert_false(sack_has_holes(&s));
}

/* ---- wrap of the PSN space ------------------------------------------------------ */

static void test_wrap(void **state)
{
	struct sack s;

	(void)state;
	/* In order across 0. */
	sack_init(&s, 0xfffffff0u);
	for (uint32_t i = 0; i < 64; i++)
		assert_int_equal(sack_set(&s, 0xfffffff0u + i), SACK_NEW);
	assert_empty_at(&s, 0x30);
	assert_int_equal(sack_set(&s, 0xfffffffau), SACK_DUP);
	assert_int_equal(sack_set(&s, 0x2f), SACK_DUP);

	/* Holes and fills across 0. */
	sack_init(&s, 0xfffffff0u);
	assert_int_equal(sack_set(&s, 0xffffffffu), SACK_NEW);
	assert_int_equal(sack_set(&s, 0), SACK_NEW);
	assert_int_equal(sack_set(&s, 5), SACK_NEW);
	assert_map(&s, (const unsigned[]){ 15, 16, 21 }, 3);
	assert_true(sack_test(&s, 0xffffffefu));
	assert_false(sack_test(&s, 1));
	assert_int_equal(sack_set(&s, 0), SACK_DUP);
	for (uint32_t p = 0xfffffff0u; p != 0xffffffffu; p++)
		assert_int_equal(sack_set(&s, p), SACK_NEW);
	assert_int_equal(s.cum, 1);
	assert_map(&s, (const unsigned[]){ 4 }, 1);

	/* Window edge across 0: 0xfffffff0 + 256 = 0xf0 is in, 0xf1 is beyond. */
	sack_init(&s, 0xfffffff0u);
	assert_int_equal(sack_set(&s, 0xf1), SACK_BEYOND);
	assert_int_equal(sack_set(&s, 0xf0), SACK_NEW);
	assert_map(&s, (const unsigned[]){ 256 }, 1);

	/* Floor across 0. */
	sack_init(&s, 0xfffffff0u);
	sack_set(&s, 0xfffffff8u);
	sack_set(&s, 3);
	sack_set(&s, 4);
	sack_floor(&s, 2);
	assert_int_equal(s.cum, 2);
	assert_map(&s, (const unsigned[]){ 1, 2 }, 2);
	sack_floor(&s, 3);
	assert_empty_at(&s, 5);
	sack_init(&s, 0xffffff00u);
	sack_set(&s, 0xffffff01u);
	sack_floor(&s, 0x1000);
	assert_empty_at(&s, 0x1000);
}

/* ---- wire bit order --------------------------------------------------------------- */

static void test_to_bytes_bit_order(void **state)
{
	struct sack s;
	uint8_t b[MROC_SACK_BYTES];

	(void)state;
	for (unsigned i = 0; i < MROC_SACK_BITS; i++) {
		sack_init(&s, 0x12345678u);
		assert_int_equal(sack_set(&s, 0x12345678u + 1 + i), SACK_NEW);
		bytes_of(&s, b);
		for (unsigned j = 0; j < MROC_SACK_BYTES; j++)
			assert_int_equal(b[j], j == i / 8 ? 1u << (i % 8) : 0);
		for (unsigned j = 0; j < MROC_SACK_BITS; j++)
			assert_int_equal(sack_bytes_test(b, j), j == i);
	}
	/* The examples of docs/PROTOCOL.md 3.3. */
	sack_init(&s, 0);
	sack_set(&s, 1);
	sack_set(&s, 8);
	sack_set(&s, 9);
	sack_set(&s, 256);
	bytes_of(&s, b);
	assert_int_equal(b[0], 0x81);
	assert_int_equal(b[1], 0x01);
	assert_int_equal(b[31], 0x80);
}

static void test_bytes_agree_with_test(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	struct sack s;
	uint8_t b[MROC_SACK_BYTES];

	(void)state;
	for (int round = 0; round < 200; round++) {
		uint32_t cum = (uint32_t)(x >> 7);

		sack_init(&s, cum);
		for (int k = 0; k < round; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			sack_set(&s, cum + 1 + (uint32_t)(x % MROC_SACK_BITS));
		}
		bytes_of(&s, b);
		for (unsigned i = 0; i < MROC_SACK_BITS; i++)
			assert_int_equal(sack_bytes_test(b, i), sack_test(&s, cum + 1 + i));
		assert_int_equal(s.cum, cum);
	}
}

/* ---- randomized model check ----------------------------------------------------- */

/*
 * Reference: the lowest missing PSN, plus the received PSNs above it kept in
 * a table indexed by PSN modulo 1024 (every entry lies within 256 above cum,
 * so slots never alias).  Nothing clever: it advances one PSN at a time.
 */
#define REF_SLOTS 1024

struct ref {
	uint32_t cum;
	bool got[REF_SLOTS];
};

static bool ref_has(const struct ref *r, uint32_t psn)
{
	int32_t d = seq_diff(psn, r->cum);

	if (d < 0)
		return true;
	if (d == 0 || d > MROC_SACK_BITS)
		return false;
	return r->got[psn % REF_SLOTS];
}

/* Move cum to psn, forgetting what falls below. */
static void ref_move(struct ref *r, uint32_t to)
{
	if (seq_diff(to, r->cum) > MROC_SACK_BITS + 1) {
		memset(r->got, 0, sizeof(r->got));
		r->cum = to;
		return;
	}
	while (r->cum != to)
		r->got[r->cum++ % REF_SLOTS] = false;
}

static void ref_slide(struct ref *r)
{
	while (r->got[r->cum % REF_SLOTS]) {
		r->got[r->cum % REF_SLOTS] = false;
		r->cum++;
	}
}

static enum sack_result ref_set(struct ref *r, uint32_t psn)
{
	int32_t d = seq_diff(psn, r->cum);

	if (d < 0)
		return SACK_DUP;
	if (d > MROC_SACK_BITS)
		return SACK_BEYOND;
	if (d > 0 && r->got[psn % REF_SLOTS])
		return SACK_DUP;
	r->got[psn % REF_SLOTS] = true;
	ref_slide(r);
	return SACK_NEW;
}

static void ref_floor(struct ref *r, uint32_t floor)
{
	if (seq_diff(floor, r->cum) <= 0)
		return;
	ref_move(r, floor);
	ref_slide(r);
}

static uint64_t rnd(uint64_t *x)
{
	/* splitmix64: fixed seed, so a failure reproduces. */
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void compare(const struct sack *s, const struct ref *r, unsigned step)
{
	uint8_t b[MROC_SACK_BYTES];
	bool holes = false;

	if (s->cum != r->cum)
		fail_msg("step %u: cum 0x%08x, reference 0x%08x", step, s->cum, r->cum);
	bytes_of(s, b);
	for (unsigned i = 0; i < MROC_SACK_BITS; i++) {
		bool want = ref_has(r, r->cum + 1 + i);

		if (sack_bytes_test(b, i) != want || sack_test(s, r->cum + 1 + i) != want)
			fail_msg("step %u: bit %u (psn 0x%08x) want %d", step, i, r->cum + 1 + i, want);
		holes |= want;
	}
	assert_int_equal(sack_has_holes(s), holes);
	assert_false(sack_test(s, s->cum));
	assert_true(sack_test(s, s->cum - 1));
}

static void test_random_model(void **state)
{
	static struct ref r;
	uint64_t seed = 20240601;
	struct sack s;
	unsigned floors = 0, beyond = 0, dups = 0, news = 0;

	(void)state;
	/* Start just below the wrap so the run crosses 0 early. */
	sack_init(&s, 0xffffe000u);
	memset(&r, 0, sizeof(r));
	r.cum = 0xffffe000u;
	for (unsigned step = 0; step < 100000; step++) {
		uint64_t x = rnd(&seed);
		unsigned kind = x % 100;
		int32_t off;
		uint32_t psn;

		if (kind < 80) {
			/* Mostly near cum, a little below, sometimes just past the edge. */
			off = (int32_t)((x >> 8) % 300) - 20;
			if (kind < 30)
				off = (int32_t)((x >> 8) % 8);	/* near in-order arrivals */
			psn = r.cum + (uint32_t)off;
			enum sack_result want = ref_set(&r, psn), got = sack_set(&s, psn);

			if (got != want)
				fail_msg("step %u: set 0x%08x got %d want %d", step, psn, got, want);
			news += got == SACK_NEW;
			dups += got == SACK_DUP;
			beyond += got == SACK_BEYOND;
		} else if (kind < 97) {
			off = (int32_t)((x >> 8) % 280) - 10;
			psn = r.cum + (uint32_t)off;
			ref_floor(&r, psn);
			sack_floor(&s, psn);
			floors++;
		} else if (kind < 99) {
			/* Far away in either direction. */
			psn = r.cum + (uint32_t)(x >> 16);
			enum sack_result want = ref_set(&r, psn), got = sack_set(&s, psn);

			if (got != want)
				fail_msg("step %u: far set 0x%08x got %d want %d", step, psn, got, want);
		} else {
			psn = r.cum + 257 + (uint32_t)((x >> 8) % 5000);
			ref_floor(&r, psn);
			sack_floor(&s, psn);
		}
		compare(&s, &r, step);
	}
	/* The mix really exercised every outcome, and the run crossed the wrap. */
	assert_true(news > 10000);
	assert_true(dups > 1000);
	assert_true(beyond > 100);
	assert_true(floors > 1000);
	assert_true(s.cum < 0xffffe000u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_holes_and_fills),
		cmocka_unit_test(test_holes_across_words),
		cmocka_unit_test(test_full_map_slides_257),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_window_edge),
		cmocka_unit_test(test_floor_not_after_cum),
		cmocka_unit_test(test_floor_inside_map),
		cmocka_unit_test(test_floor_beyond_map),
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_to_bytes_bit_order),
		cmocka_unit_test(test_bytes_agree_with_test),
		cmocka_unit_test(test_random_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
