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
 *
 * One pair serves every input: reset (pair_reset: new engines, the same
 * buffers) and connected again before each, as a new one would be, so an
 * input's outcome does not depend on the inputs before it and a finding
 * reproduces from its input alone.  Building a pair per input (allocations,
 * ASan's allocator) cost about a third of the time.  With
 * MROC_FUZZ_CHECK_RESET=1 every input also runs on a pair built for it
 * alone, and the two runs must agree on an outcome digest (every packet
 * either side sent, engine_rx's answers, both engines' counters and
 * completions, both buffers): a reset that missed any state fails there
 * (test_fuzz.sh sets it while replaying the seeds and regression inputs).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "fuzz_pair.h"

static void guards_intact(const struct pair_mem *m)
{
	for (size_t i = 0; i < PAIR_GUARD_LEN; i++)
		if (m->base[i] != PAIR_CANARY || m->buf[m->len + i] != PAIR_CANARY)
			abort();
}

/* ---- outcome digest (MROC_FUZZ_CHECK_RESET) ------------------------------------- */

static void mix(uint64_t *h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		*h = (*h ^ b[i]) * 0x100000001b3ULL;	/* FNV-1a */
}

static void mix64(uint64_t *h, uint64_t v)
{
	mix(h, &v, sizeof(v));
}

/* The filter: every packet either side sends, delivered unchanged. */
static bool digest_pkt(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	uint64_t *h = arg;

	(void)p;
	mix64(h, (uint64_t)pkt->from << 48 | (uint64_t)pkt->sport << 32 | pkt->len);
	mix(h, pkt->data, pkt->len);
	return true;
}

static void digest_end(uint64_t *h, struct fuzz_pair *f)
{
	for (int side = 0; side < 2; side++) {
		struct pair_side *s = &f->p->s[side];
		struct engine_stats st;

		engine_get_stats(s->eng, &st);
		mix(h, st.c, sizeof(st.c));
		mix(h, st.rx_malformed, sizeof(st.rx_malformed));
		for (unsigned i = 0; i < s->ncqe; i++) {
			const struct engine_cqe *c = &s->cqe[i];

			mix64(h, c->wr_id);
			mix64(h, (uint64_t)c->qpn << 32 | c->byte_len);
			mix64(h, (uint64_t)c->imm << 24 | (uint64_t)c->opcode << 16 |
				 (uint64_t)c->status << 8 | c->flags);
		}
		mix(h, s->sent, sizeof(s->sent));
		mix64(h, s->stray);
		mix64(h, engine_next_deadline(s->eng));
		mix(h, f->mem[side]->base, f->mem[side]->len + 2 * PAIR_GUARD_LEN);
	}
	mix64(h, f->p->now);
	mix64(h, f->p->stuck_deadlines);
	mix64(h, f->p->ticked);
}

/* ---- the input ---------------------------------------------------------------- */

static uint64_t run(struct fuzz_pair *f, const uint8_t *d, size_t n, bool digest)
{
	uint64_t h = 0xcbf29ce484222325ULL, wakeups;

	/* Odd-sized inputs run security mode token: its tag check sees every record first. */
	fuzz_pair_setup(f, n & 1 ? MROC_SEC_TOKEN : MROC_SEC_NONE);
	if (digest) {
		f->p->filter = digest_pkt;
		f->p->filter_arg = &h;
	}
	while (n >= FUZZ_REC_HDR) {
		uint8_t ctl = d[0];
		uint16_t sport = (uint16_t)(d[1] << 8 | d[2]);
		size_t len = (size_t)(d[3] << 8 | d[4]);
		int to = ctl & FUZZ_TO_B ? PAIR_B : PAIR_A;
		int ret;

		d += FUZZ_REC_HDR;
		n -= FUZZ_REC_HDR;
		if (len > n)
			len = n;
		f->p->now += ((ctl >> 1) & 7) * 100 * PAIR_US;
		ret = pair_rx(f->p, to, d, len, ctl & FUZZ_STRANGE ? FUZZ_STRANGER : (uint32_t)!to,
			      sport);
		if (digest)
			mix64(&h, (uint64_t)(int64_t)ret);
		if (ctl & FUZZ_PUMP)
			pair_pump(f->p);
		d += len;
		n -= len;
	}
	wakeups = f->p->wakeups;
	pair_run_for(f->p, 30 * PAIR_MS);
	/*
	 * No timer storm, also without the driver's tick (MROC_FUZZ_TICK_NS=0):
	 * more than three timer runs a microsecond means a timer re-armed a few
	 * ns on without doing anything (a path waiting for an older packet's
	 * answer woke every 2 ns on a nanosecond RTT: 805,000 times in 1.7 ms).
	 */
	if (f->p->wakeups - wakeups > 3 * 30 * PAIR_MS / PAIR_US) {
		fprintf(stderr, "fuzz_engine_rx: %llu timer wake-ups in 30 ms: a timer storm\n",
			(unsigned long long)(f->p->wakeups - wakeups));
		abort();
	}
	guards_intact(f->mem[PAIR_A]);
	guards_intact(f->mem[PAIR_B]);
	if (digest)
		digest_end(&h, f);
	return h;
}

/*
 * ASan's quarantine (256 MB by default) keeps freed memory from being reused,
 * so every input's allocations landed on fresh pages: page faults and
 * zeroing were a third of the time (CPU per input 1,025 us, 730 us with
 * 16 MB).  16 MB still holds the memory of the last hundred inputs or so:
 * a use after free inside an input is still caught.  ASAN_OPTIONS overrides.
 */
const char *__asan_default_options(void);

const char *__asan_default_options(void)
{
	return "quarantine_size_mb=16";
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static struct fuzz_pair kept;
	static int check = -1;
	struct fuzz_pair alone = { 0 };
	uint64_t h;

	if (check < 0) {
		const char *e = getenv("MROC_FUZZ_CHECK_RESET");

		check = e && !strcmp(e, "1");
	}
	h = run(&kept, d, n, check);
	if (!check)
		return 0;
	/* The same input on a pair of its own must end the same. */
	if (run(&alone, d, n, true) != h) {
		fprintf(stderr, "fuzz_engine_rx: this input ends otherwise on a new pair than on "
			"the reset one: pair_reset misses some state\n");
		abort();
	}
	pair_free(alone.p);
	return 0;
}
