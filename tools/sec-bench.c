// SPDX-License-Identifier: MIT
/*
 * sec-bench: the CPU cost of security mode "aead" per packet (daemon/dataplane/aead.c):
 * AES-256-GCM seal on the sender plus open on the receiver, one thread, for
 * data packets of several payload sizes and for an ACK.  A benchmark (it
 * reads a clock); scripts/bench-sec.sh runs it beside the end-to-end figures.
 *
 *   sec-bench [PACKETS]      (default 200000 per size; prints min/median/max of 5 runs)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aead.h"

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* ns of CPU per seal + open of a packet of op with plen payload bytes. */
static double run(struct aead *tx, struct aead *rx, uint8_t op, uint32_t plen, long n)
{
	static uint8_t buf[MROC_DATA_OVERHEAD + 8192 + AEAD_TRAILER_LEN];
	uint32_t hlen = op == MROC_OP_ACK ? MROC_HDR_LEN + MROC_ACK_HDR_LEN : MROC_DATA_OVERHEAD;
	double t0 = cpu_now();
	/* IPv4 addresses in the seal, as on a real fabric (daemon/dataplane/aead.c). */
	struct mroc_addr src = { .family = AF_INET, .bytes = { 10, 0, 0, 1 } },
			 dst = { .family = AF_INET, .bytes = { 10, 0, 0, 2 } };
	uint8_t sealed;

	for (long i = 0; i < n; i++) {
		struct engine_txbuf b = { .data = buf, .cap = sizeof(buf), .len = hlen + plen };

		memset(buf, 0, MROC_HDR_LEN);
		buf[0] = MROC_WIRE_VERSION;
		buf[1] = op;
		if (aead_seal(tx, &b, &src, &dst) ||
		    aead_open(rx, buf, b.len, &src, &dst, &sealed) != (int)(hlen + plen)) {
			fprintf(stderr, "sec-bench: seal/open failed\n");
			exit(1);
		}
	}
	return (cpu_now() - t0) * 1e9 / (double)n;
}

int main(int argc, char **argv)
{
	static const uint32_t sizes[] = { 0, 1024, 3328, 8192 };
	struct aead_keyset ks = { .n = 1 };
	long n = argc > 1 ? atol(argv[1]) : 200000;
	struct aead *tx, *rx;

	if (n <= 0) {
		fprintf(stderr, "usage: sec-bench [PACKETS]\n");
		return 2;
	}
	ks.k[0].id = 1;
	memset(ks.k[0].key, 0x5a, AEAD_KEY_LEN);
	if (aead_create(&ks, 0, &tx) || aead_create(&ks, 0, &rx)) {
		fprintf(stderr, "sec-bench: no AES-256-GCM here\n");
		return 1;
	}
	printf("# aead: CPU ns per packet, seal + open, %ld packets per run, 5 runs\n", n);
	printf("%-8s %8s %10s %10s %10s %10s\n", "packet", "payload", "min_ns", "median_ns",
	       "max_ns", "Gbit/s");
	for (unsigned s = 0; s <= sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint8_t op = s < sizeof(sizes) / sizeof(sizes[0]) ? MROC_OP_WRITE : MROC_OP_ACK;
		uint32_t plen = op == MROC_OP_ACK ? 0 : sizes[s];
		double v[5];

		for (int r = 0; r < 5; r++)
			v[r] = run(tx, rx, op, plen, n);
		qsort(v, 5, sizeof(v[0]), cmp_double);
		printf("%-8s %8u %10.1f %10.1f %10.1f %10.2f\n", op == MROC_OP_ACK ? "ACK" : "WRITE",
		       plen, v[0], v[2], v[4], plen ? plen * 8.0 / v[2] : 0.0);
	}
	aead_destroy(tx);
	aead_destroy(rx);
	return 0;
}
