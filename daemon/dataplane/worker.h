/* SPDX-License-Identifier: MIT */
/*
 * The data-plane worker: the one thread that owns the engine.  It moves
 * packets between the backend and the engine, runs the engine's timers and
 * hands completions to their owners.  It spins briefly when work dries up,
 * then sleeps in poll() on the backend's fds, a doorbell eventfd and the
 * engine's next deadline, so an idle daemon costs no CPU.
 *
 * Other threads never touch the engine: they ask the worker to run a
 * function for them (worker_call) and wait for it.
 */
#ifndef MROCD_WORKER_H
#define MROCD_WORKER_H

#include <stdint.h>

#include "aead.h"
#include "backend.h"
#include "engine.h"

struct worker;

/* Called on the worker thread for each completion or event of the engine. */
typedef void (*worker_cqe_fn)(void *ctx, const struct engine_cqe *cqe, uint64_t now);
/* Called on the worker thread every loop iteration (cheap), e.g. for reconnect timers. */
typedef uint64_t (*worker_tick_fn)(void *ctx, uint64_t now);

struct worker_cfg {
	struct engine *eng;
	struct backend *be;
	struct aead *aead;		/* security mode "aead": seal and open; else NULL */
	unsigned index;			/* of several workers (thread name mrocd-workerN) */
	int cpu;			/* pin to this CPU, -1 = no pinning */
	uint32_t busy_poll_us;		/* spin this long without work before sleeping */
	bool allow_loopback;		/* network.allow_loopback: 127/8 and ::1 may be peers */
	worker_cqe_fn on_cqe;
	worker_tick_fn on_tick;		/* returns its next deadline (ns) or UINT64_MAX */
	/* Client rings (clients.c): consume posted work; returns how much it did. */
	int (*on_poll)(void *ctx, uint64_t now);
	/* More fds to sleep on (client doorbells). */
	int (*extra_fds)(void *ctx, int *fds, int max);
	/* The i-th of extra_fds' fds was readable (the worker has read it). */
	void (*fd_ready)(void *ctx, int i);
	/* A turn of busy-polling found nothing: true if it found work elsewhere (doorbells). */
	bool (*on_idle)(void *ctx, uint64_t now);
	/* About to sleep: ask clients for doorbells; false if work appeared meanwhile. */
	bool (*may_sleep)(void *ctx);
	/* End of every loop: what was batched in it goes out (completion channels). */
	void (*on_flush)(void *ctx);
	void *ctx;
};

struct worker_stats {
	uint64_t loops, sleeps, wakeups_doorbell;
	uint64_t calls;			/* worker_call()s served: the control thread's, each a stop */
	uint64_t idle_yields;		/* sched_yield()s while busy-polling (idle.h) */
	uint64_t rx_pkts, rx_rejected, rx_unknown_source, tx_pkts;
	uint64_t rx_bad_source;		/* from no host's address (addr_unicast): dropped first */
	uint64_t busy_ns, idle_ns;	/* time with work or spinning idle vs. asleep */
	/*
	 * Of busy_ns, the spells of busy polling that found nothing (until
	 * work came or the worker slept): a sending worker that spins while
	 * its QPs have work waits for windows, not for CPU (issue #22).
	 */
	uint64_t spin_ns;
	/*
	 * The thread's time on a CPU and waiting on a run queue for one
	 * (/proc/thread-self/schedstat): busy_ns and spin_ns are clock spans,
	 * so a worker preempted on a busy host counts its wait there too.
	 */
	uint64_t cpu_ns, runq_ns;
	/* The worker thread's page faults (getrusage RUSAGE_THREAD): 0 growth once clients registered. */
	uint64_t minor_faults, major_faults;
	struct aead_stats aead;		/* zero unless security mode "aead" */
};

int worker_start(const struct worker_cfg *cfg, struct worker **out);
/* Stop the thread and wait for it; the engine and backend stay for the caller. */
void worker_stop(struct worker *w);

/* Run fn(arg, now) on the worker thread and wait; returns what fn returned. */
int worker_call(struct worker *w, int (*fn)(void *arg, uint64_t now), void *arg);
/* Worker thread only, e.g. from a function run by worker_call. */
void worker_get_stats(struct worker *w, struct worker_stats *out);
void worker_set_busy_poll(struct worker *w, uint32_t us);
/* On the worker's own thread (a reload's call), as worker_set_busy_poll. */
void worker_set_allow_loopback(struct worker *w, bool allow);

uint64_t mrocd_now_ns(void);

#endif
