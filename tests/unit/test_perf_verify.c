// SPDX-License-Identifier: MIT
/*
 * mroc-perf --verify patterns (cli/perf/verify.c): fill and check agree at
 * every length and alignment; the pattern is pinned (two builds must agree
 * on the wire); streams, iterations and sizes give different messages; a
 * flipped, stale, missing or shifted byte is found with its offset, the
 * expected and actual values and the count of wrong bytes; the text of a
 * mismatch; and the slot and stream helpers of perf.h.
 *
 * The code under test is compiled into this program (the Makefile links unit
 * tests with the project's libraries, not with cli/perf objects).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "../../cli/perf/verify.c"
#include "../../cli/perf/perf.h"

static const size_t lengths[] = { 0, 1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 4093, 65536 };

#define NLEN (sizeof(lengths) / sizeof(lengths[0]))

static void test_fill_check_roundtrip(void **state)
{
	uint8_t *buf = malloc(65536 + 16);

	assert_non_null(buf);
	for (size_t i = 0; i < NLEN; i++)
		for (size_t align = 0; align < 8; align++) {
			uint8_t *p = buf + align;

			memset(buf, 0xa5, 65536 + 16);
			verify_fill(p, lengths[i], 3, 17);
			assert_int_equal(verify_check(p, lengths[i], 3, 17, NULL), 0);
			/* Nothing written outside the message. */
			for (size_t k = 0; k < align; k++)
				assert_int_equal(buf[k], 0xa5);
			for (size_t k = align + lengths[i]; k < 65536 + 16; k++)
				assert_int_equal(buf[k], 0xa5);
		}
	free(buf);
}

static void test_byte_agrees_with_fill(void **state)
{
	uint8_t buf[200];

	verify_fill(buf, sizeof(buf), 42, 99);
	for (size_t off = 0; off < sizeof(buf); off++)
		assert_int_equal(buf[off], verify_byte(42, 99, off));
}

/* A prefix of a longer message is the shorter message: offsets, not lengths, decide. */
static void test_prefix_property(void **state)
{
	uint8_t a[100], b[37];

	verify_fill(a, sizeof(a), 5, 6);
	verify_fill(b, sizeof(b), 5, 6);
	assert_memory_equal(a, b, sizeof(b));
}

/* The pattern is part of mroc-perf's protocol: both ends compute it. */
static void test_pattern_pinned(void **state)
{
	uint8_t buf[16];
	static const uint8_t want[16] = {
		0xb0, 0xf2, 0x9e, 0x5b, 0xb5, 0x5f, 0xcb, 0x2c,
		0xd8, 0x74, 0x76, 0x14, 0xa2, 0x90, 0x60, 0x62,
	};

	verify_fill(buf, sizeof(buf), 0, 0);
	assert_memory_equal(buf, want, sizeof(buf));
}

static void test_streams_and_iterations_differ(void **state)
{
	uint8_t a[4096], b[4096];
	struct verify_mismatch m;

	verify_fill(a, sizeof(a), 1, 10);
	verify_fill(b, sizeof(b), 1, 11);
	assert_memory_not_equal(a, b, sizeof(a));
	assert_int_equal(verify_check(a, sizeof(a), 1, 11, &m), 1);
	/* Unrelated bytes: about 255 of 256 differ. */
	assert_true(m.bad_bytes > 4000);
	verify_fill(b, sizeof(b), 2, 10);
	assert_memory_not_equal(a, b, sizeof(a));
	assert_int_equal(verify_check(a, sizeof(a), 2, 10, NULL), 1);
	/* Streams of the same QP but another size differ too. */
	verify_fill(b, sizeof(b), perf_stream(4096, 0, 0), 0);
	verify_fill(a, sizeof(a), perf_stream(8192, 0, 0), 0);
	assert_memory_not_equal(a, b, sizeof(a));
}

static void test_one_flipped_byte(void **state)
{
	uint8_t buf[1000];
	struct verify_mismatch m;

	for (size_t off = 0; off < sizeof(buf); off += 37) {
		verify_fill(buf, sizeof(buf), 7, 3);
		buf[off] ^= 0x10;
		memset(&m, 0, sizeof(m));
		assert_int_equal(verify_check(buf, sizeof(buf), 7, 3, &m), 1);
		assert_int_equal(m.offset, off);
		assert_int_equal(m.expected, verify_byte(7, 3, off));
		assert_int_equal(m.actual, verify_byte(7, 3, off) ^ 0x10);
		assert_int_equal(m.bad_bytes, 1);
		assert_int_equal(m.stream, 7);
		assert_int_equal(m.iter, 3);
	}
}

static void test_first_of_several(void **state)
{
	uint8_t buf[300];
	struct verify_mismatch m;

	verify_fill(buf, sizeof(buf), 1, 1);
	buf[299] ^= 1;
	buf[150] ^= 1;
	buf[9] ^= 1;
	assert_int_equal(verify_check(buf, sizeof(buf), 1, 1, &m), 1);
	assert_int_equal(m.offset, 9);
	assert_int_equal(m.bad_bytes, 3);
}

/* The last bytes of a length that is not a multiple of 8 are checked too. */
static void test_tail_checked(void **state)
{
	uint8_t buf[13];
	struct verify_mismatch m;

	verify_fill(buf, sizeof(buf), 9, 9);
	buf[12] ^= 0xff;
	assert_int_equal(verify_check(buf, sizeof(buf), 9, 9, &m), 1);
	assert_int_equal(m.offset, 12);
	assert_int_equal(m.bad_bytes, 1);
}

/* A READ that brought nothing: the poison differs from the message at every byte. */
static void test_poison(void **state)
{
	uint8_t buf[777];
	struct verify_mismatch m;

	verify_poison(buf, sizeof(buf), 4, 5);
	assert_int_equal(verify_check(buf, sizeof(buf), 4, 5, &m), 1);
	assert_int_equal(m.offset, 0);
	assert_int_equal(m.bad_bytes, sizeof(buf));
	assert_int_equal(m.actual, (uint8_t)~m.expected);
}

/* Data placed one byte off is caught at its first byte. */
static void test_shifted(void **state)
{
	uint8_t ref[257], buf[256];
	struct verify_mismatch m;

	verify_fill(ref, sizeof(ref), 2, 2);
	memcpy(buf, ref + 1, sizeof(buf));
	assert_int_equal(verify_check(buf, sizeof(buf), 2, 2, &m), 1);
	assert_true(m.bad_bytes > 200);
}

static void test_zero_length(void **state)
{
	struct verify_mismatch m;

	assert_int_equal(verify_check("", 0, 1, 1, &m), 0);
	verify_fill(NULL, 0, 1, 1);
}

static void test_format(void **state)
{
	struct verify_mismatch m = {
		.stream = 1, .iter = 17, .offset = 4096, .expected = 0x5c, .actual = 0,
		.bad_bytes = 12,
	};
	volatile size_t small = 8;	/* not a constant: no -Wformat-truncation */
	char text[128];

	verify_format(text, sizeof(text), &m, 65536);
	assert_string_equal(text, "message 17: byte 4096 is 0x00, expected 0x5c "
				  "(12 of 65536 bytes wrong)");
	/* Cut short, still terminated. */
	verify_format(text, small, &m, 65536);
	assert_string_equal(text, "message");
}

static void test_slots(void **state)
{
	assert_int_equal(perf_slots(1 << 20, 65536), 16);
	assert_int_equal(perf_slots(100, 65536), 1);	/* never 0 */
	assert_int_equal(perf_slots(1 << 30, 8), PERF_SLOTS_MAX);
	assert_int_equal(perf_slots(3 * 8, 8), 3);
	/* Streams of distinct (size, qp, direction) never collide. */
	assert_int_not_equal(perf_stream(8, 0, 0), perf_stream(8, 0, 1));
	assert_int_not_equal(perf_stream(8, 1, 0), perf_stream(8, 0, 1));
	assert_int_not_equal(perf_stream(8, 255, 1), perf_stream(16, 0, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fill_check_roundtrip),
		cmocka_unit_test(test_byte_agrees_with_fill),
		cmocka_unit_test(test_prefix_property),
		cmocka_unit_test(test_pattern_pinned),
		cmocka_unit_test(test_streams_and_iterations_differ),
		cmocka_unit_test(test_one_flipped_byte),
		cmocka_unit_test(test_first_of_several),
		cmocka_unit_test(test_tail_checked),
		cmocka_unit_test(test_poison),
		cmocka_unit_test(test_shifted),
		cmocka_unit_test(test_zero_length),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_slots),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
