/* SPDX-License-Identifier: MIT */
/*
 * The polling policy of mroc_poll_cq and mroc_wait_cq: what a poller that
 * found its CQ empty does next.  Busy-poll sockets (net.core.busy_poll) and
 * DPDK's power management (rte_power_pmd_mgmt) work the same way: spin
 * while a completion is likely to come soon, then give the CPU away.
 *
 * Why it matters here: mrocd's worker, not the client, moves the data.  A
 * client that spins on a CPU the worker needs (more runnable threads than
 * cores, no pinning) keeps it off that CPU until the scheduler preempts the
 * spinner, a whole slice (about 4 ms under EEVDF) per message.  So after a
 * short budget of pure spinning the poller yields between polls (the worker
 * runs at once if it was waiting for this CPU, and the yield costs well
 * under a microsecond when nobody was), and a waiter that may sleep (the
 * wait path) then arms the completion channel and blocks on its eventfd.
 *
 *   empty for:  0 ........ spin_ns ........ spin_ns + yield_ns ........
 *   step:       POLL (cpu_relax)   YIELD (sched_yield)    SLEEP (wait path)
 *
 * The clock is the caller's (the unit test drives it by hand); a poll that
 * finds work resets the streak.
 */
#ifndef LIBMROC_SPIN_H
#define LIBMROC_SPIN_H

#include <stdbool.h>
#include <stdint.h>

#define LIBMROC_SPIN_ALWAYS	INT64_MAX	/* a budget that never runs out */

enum libmroc_spin_step {
	LIBMROC_SPIN_POLL = 0,	/* look again at once */
	LIBMROC_SPIN_YIELD,	/* sched_yield(), then look again */
	LIBMROC_SPIN_SLEEP,	/* block on the completion channel (the poll path keeps yielding) */
};

struct libmroc_spin {
	int64_t spin_ns;	/* pure spinning before the first yield */
	int64_t yield_ns;	/* then yielding before sleeping; LIBMROC_SPIN_ALWAYS: never sleep */
	int64_t since;		/* start of the current empty streak; < 0: none */
};

static inline void libmroc_spin_init(struct libmroc_spin *s, int64_t spin_ns, int64_t yield_ns)
{
	s->spin_ns = spin_ns;
	s->yield_ns = yield_ns;
	s->since = -1;
}

/* A poll found work: the next empty one starts a new streak. */
static inline void libmroc_spin_reset(struct libmroc_spin *s)
{
	s->since = -1;
}

/* A poll at time now found nothing: what to do before the next one. */
static inline enum libmroc_spin_step libmroc_spin_empty(struct libmroc_spin *s, int64_t now)
{
	int64_t idle;

	if (s->since < 0 || now < s->since)
		s->since = now;
	idle = now - s->since;
	if (idle < s->spin_ns)
		return LIBMROC_SPIN_POLL;
	if (idle - s->spin_ns < s->yield_ns)
		return LIBMROC_SPIN_YIELD;
	return LIBMROC_SPIN_SLEEP;
}

/*
 * How often one thread may yield on empty polls: at most once per
 * LIBMROC_YIELD_EVERY_NS, however many CQs it sweeps.  The streak above is
 * per QP, so a thread polling 64 QPs' CQs in turn made 64 sched_yield()s a
 * sweep once each QP had been empty for the budget: 118 per completion at
 * 4 clients x 64 QPs (mroc-perf write_bw --sleep), each a trip through the
 * scheduler that gave nothing the first one had not.  Between yields the
 * poll returns at once, as a pure spin does.
 */
#define LIBMROC_YIELD_EVERY_NS	5000

/*
 * A poll at time now wants to yield: whether it should, given *last, the
 * thread's last yield (< 0: none yet), which it then updates.
 */
static inline bool libmroc_yield_due(int64_t *last, int64_t now)
{
	if (*last >= 0 && now >= *last && now - *last < LIBMROC_YIELD_EVERY_NS)
		return false;
	*last = now;
	return true;
}

/*
 * Whether a thread whose last poll that found work was at last_work (< 0:
 * never) is idle at now, with budget spin_ns: only an idle thread yields.
 * The streak of spin.h is per QP, and a thread sweeping many QPs finds each
 * one empty for far longer than the budget even while it takes completions
 * from the others every few microseconds: it yielded once per sweep (4
 * clients x 64 QPs of mroc-perf --sleep: 16 yields and 15 context switches
 * per completion, each client always runnable beside the daemon's workers).
 */
static inline bool libmroc_thread_idle(int64_t last_work, int64_t now, int64_t spin_ns)
{
	return last_work < 0 || now < last_work || now - last_work >= spin_ns;
}

#endif
