// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the engine's receive path (engine_rx and everything it
 * reaches: CM, data placement, ACKs, NAKs, timers) on two connected engines
 * (fuzz_pair.h), fed records of packets to either side, from its peer or
 * from a stranger, with the clock moving between them; then the timers run
 * for 30 ms.  Inputs of odd length run security mode "token" (the tag check in
 * front of everything, the key exchange; the pumped traffic is tagged).  Besides the sanitizers, engine_pair's own checks apply (every
 * packet the engines send is well formed, no livelock), and nothing may be
 * written outside a registered region (its guards keep their canary).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "fuzz_pair.h"

static void guards_intact(const struct pair_mem *m)
{
	for (size_t i = 0; i < PAIR_GUARD_LEN; i++)
		if (m->base[i] != PAIR_CANARY || m->buf[m->len + i] != PAIR_CANARY)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct fuzz_pair f;

	/* Odd-sized inputs run security mode token: its tag check sees every record first. */
	fuzz_pair_setup(&f, n & 1 ? MROC_SEC_TOKEN : MROC_SEC_NONE);
	while (n >= FUZZ_REC_HDR) {
		uint8_t ctl = d[0];
		uint16_t sport = (uint16_t)(d[1] << 8 | d[2]);
		size_t len = (size_t)(d[3] << 8 | d[4]);
		int to = ctl & FUZZ_TO_B ? PAIR_B : PAIR_A;

		d += FUZZ_REC_HDR;
		n -= FUZZ_REC_HDR;
		if (len > n)
			len = n;
		f.p->now += ((ctl >> 1) & 7) * 100 * PAIR_US;
		pair_rx(f.p, to, d, len, ctl & FUZZ_STRANGE ? FUZZ_STRANGER : (uint32_t)!to, sport);
		if (ctl & FUZZ_PUMP)
			pair_pump(f.p);
		d += len;
		n -= len;
	}
	pair_run_for(f.p, 30 * PAIR_MS);
	guards_intact(f.mem[PAIR_A]);
	guards_intact(f.mem[PAIR_B]);
	pair_free(f.p);
	return 0;
}
