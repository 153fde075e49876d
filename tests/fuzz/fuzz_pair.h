/* SPDX-License-Identifier: MIT */
/*
 * The engine pair fuzz_engine_rx starts from, and gen_seeds records real
 * traffic on: two connected engines (tests/unit/engine_pair.h), a region on
 * each side open to remote writes and reads, RECVs posted on both.  Both
 * programs build it the same way, with the same seeds, so the recorded
 * packets carry the QPNs, keys and sequence numbers the harness expects.
 *
 * Engine input records (fuzz_engine_rx's format, gen_seeds writes it):
 *   u8 ctl, u16 UDP source port, u16 len (big-endian), len bytes
 *   ctl bit 0: to B (else to A); bits 1-3: advance the clock by that many
 *   x 100 us first; bit 4: from a stranger's handle (an off-path source);
 *   bit 7: pump both ways afterwards.
 */
#ifndef MROC_FUZZ_PAIR_H
#define MROC_FUZZ_PAIR_H

#include "engine_pair.h"

#define FUZZ_SERVICE	0x66757a7aULL
#define FUZZ_MEM_LEN	65536
#define FUZZ_RECVS	8
#define FUZZ_STRANGER	7	/* a peer handle neither side connected to */

#define FUZZ_TO_B	0x01
#define FUZZ_STRANGE	0x10
#define FUZZ_PUMP	0x80
#define FUZZ_REC_HDR	5
/*
 * The pair's driver loop (engine_pair.h, pair.tick): timers run at most once
 * a microsecond, about a turn of mrocd's worker loop.  The fake wire's RTT
 * is ~1 ns, so a tail probe timed by it re-armed every 2 ns until the RTO:
 * inputs that got there ran the timers up to a million times in their
 * 30 ms, 2.3 s of CPU each under the sanitizers.  The engine's probe time
 * now has a floor (engine/path.c); MROC_FUZZ_TICK_NS=0 runs without the
 * loop's tick, so that fuzz_engine_rx sees any timer storm the engine
 * itself makes (test_fuzz.sh replays the seeds and regressions so).
 */
#define FUZZ_TICK	(1 * PAIR_US)

static inline uint64_t fuzz_tick(void)
{
	static int64_t tick = -1;

	if (tick < 0) {
		const char *e = getenv("MROC_FUZZ_TICK_NS");

		tick = e ? strtoll(e, NULL, 10) : (int64_t)FUZZ_TICK;
		if (tick < 0)
			tick = FUZZ_TICK;
	}
	return (uint64_t)tick;
}

struct fuzz_pair {
	struct pair *p;
	struct pair_mem *mem[2];
};

/*
 * Both engines' configurations in security mode sec (enum mroc_sec: none or
 * token), announcing a port address in their CM as mrocd does (portaddr.h:
 * one entry, port 0, 10.1.0.2).
 */
static inline void fuzz_pair_config(struct engine_config *ca, struct engine_config *cb,
				    uint8_t sec)
{
	static const uint8_t ports[] = { 1, 0, 4, 10, 1, 0, 2 };

	pair_test_config(ca);
	ca->sec_mode = sec;
	memset(ca->cm_ext, 0, 19);
	memcpy(ca->cm_ext, ports, sizeof(ports));
	ca->cm_ext_len = 19;
	*cb = *ca;
	cb->seed = 2;			/* as pair_new's defaults: B with another seed */
}

/*
 * Two engines in security mode sec, connected.  f zeroed: built; f set up
 * before: the same pair and buffers reset (pair_reset) and set up again,
 * which gives what a new one would (the same QPNs, keys, sequence numbers
 * and buffer contents) without the allocations: fuzz_engine_rx checks that.
 */
static inline void fuzz_pair_setup(struct fuzz_pair *f, uint8_t sec)
{
	uint32_t rights = ENGINE_ACCESS_ALL;
	struct engine_config ca, cb;

	fuzz_pair_config(&ca, &cb, sec);
	if (f->p)
		pair_reset(f->p, &ca, &cb);
	else
		f->p = pair_new(&ca, &cb);
	f->p->tick = fuzz_tick();
	pair_connect(f->p, NULL, NULL, FUZZ_SERVICE);
	for (int side = 0; side < 2; side++) {
		if (f->mem[side])
			pair_mem_register(f->p, f->mem[side]);
		else
			f->mem[side] = pair_mem_new(f->p, side, FUZZ_MEM_LEN, 1, rights);
		for (uint32_t i = 0; i < FUZZ_RECVS; i++)
			pair_post_recv(f->p, side, 100 + i, f->mem[side]->lkey,
				       (uint64_t)i * 4096, 4096);
	}
	pair_pump(f->p);
}

#endif
