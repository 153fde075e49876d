/* SPDX-License-Identifier: MIT */
/*
 * mroc-perf --verify: every message carries a pattern that depends on its
 * stream (mroc-perf mixes the message size, the QP and the direction into
 * it), its iteration (message number) and each byte's offset, so a byte that lands in the wrong message, the wrong place or the
 * wrong QP, a stale byte from an earlier message and a byte never written are
 * all told apart from the right one.  Pure functions, no libmroc, no I/O:
 * tests/unit/test_perf_verify.c links this file alone.
 *
 * The pattern: 64-bit words, word w of (stream, iter) is splitmix64 of a seed
 * mixed from stream and iter, stepped w + 1 times; byte o of a message is
 * byte (o % 8) of word (o / 8), least significant byte first, whatever the
 * host's byte order.  Messages need not be aligned.
 */
#ifndef MROC_PERF_VERIFY_H
#define MROC_PERF_VERIFY_H

#include <stddef.h>
#include <stdint.h>

/* The first wrong byte of a message, and how many were wrong. */
struct verify_mismatch {
	uint64_t stream, iter;
	size_t offset;			/* in the message */
	uint8_t expected, actual;
	size_t bad_bytes;		/* in the whole message (or the part checked) */
};

/* The byte at offset off of message iter of stream. */
uint8_t verify_byte(uint64_t stream, uint64_t iter, size_t off);

/* Write the len-byte message (stream, iter) into buf. */
void verify_fill(void *buf, size_t len, uint64_t stream, uint64_t iter);

/*
 * Compare len bytes at buf with message (stream, iter).  Returns 0 when
 * every byte matches, 1 on a mismatch (the first one and the count of wrong
 * bytes in *m, which may be NULL).
 */
int verify_check(const void *buf, size_t len, uint64_t stream, uint64_t iter,
		 struct verify_mismatch *m);

/*
 * Overwrite buf with the complement of message (stream, iter), so that every
 * byte a READ fails to bring differs from what verify_check() expects there.
 */
void verify_poison(void *buf, size_t len, uint64_t stream, uint64_t iter);

/*
 * "message 17: byte 4096 is 0x00, expected 0x5c (12 of 65536 bytes wrong)"
 * into out (size n, always terminated), len being the bytes checked;
 * returns what snprintf returns.
 */
int verify_format(char *out, size_t n, const struct verify_mismatch *m, size_t len);

#endif
