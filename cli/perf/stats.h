/* SPDX-License-Identifier: MIT */
/*
 * mroc-perf statistics: latency percentiles, median, standard deviation and
 * the bandwidth peak, computed as perftest computes them.  Pure functions, no
 * libmroc, no I/O: tests/unit/test_perf_report.c links this file alone.
 */
#ifndef MROC_PERF_STATS_H
#define MROC_PERF_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- latency ---------------------------------------------------------------- */

/* Latency samples in nanoseconds, grown on demand (duration runs). */
struct samples {
	uint64_t *v;
	size_t n, cap;
};

/* 0, or -ENOMEM (the sample is dropped, the array is unchanged). */
int samples_add(struct samples *s, uint64_t ns);
void samples_reset(struct samples *s);
void samples_free(struct samples *s);

/* All in microseconds. */
struct lat_stats {
	uint64_t n;			/* samples */
	double min, max;
	double typical;			/* the median: sorted[n / 2], as perftest's t_typical */
	double avg;
	double stdev;			/* population standard deviation */
	double p99, p999;		/* nearest-rank percentiles */
};

/*
 * Sort the n samples (ns) in place and fill *st, each sample divided by
 * divisor first (2 for ping-pong tests, which report half the round trip as
 * perftest does; 1 for READ).  n == 0 gives all zeros.
 */
void stats_lat(uint64_t *ns, size_t n, double divisor, struct lat_stats *st);

/* Nearest-rank percentile (0 < pct <= 100) of n sorted values: sorted[ceil(pct/100 * n) - 1]. */
uint64_t stats_percentile(const uint64_t *sorted, size_t n, double pct);

/* ---- bandwidth -------------------------------------------------------------- */

/*
 * Peak: the best rate over consecutive windows of at least window_ns, each
 * closed at the first update at or after its end (so a window spans whole
 * completion batches, like perftest's per-completion deltas, but never less
 * than the window).  A run shorter than one window has no peak of its own:
 * peak_result() then returns the average it is given.
 */
struct peak {
	uint64_t window_ns;
	uint64_t start_ns, start_bytes;
	double best_bps;		/* bytes per second */
	bool started, closed;
};

#define PEAK_WINDOW_NS	1000000ull	/* 1 ms */

void peak_init(struct peak *p, uint64_t window_ns);
/* Total bytes done so far at time now_ns (monotonic); the first call starts the first window. */
void peak_update(struct peak *p, uint64_t now_ns, uint64_t bytes_total);
/* Best window rate in bytes/s, or avg_bps when no window closed. */
double peak_result(const struct peak *p, double avg_bps);

/* One row of a bandwidth table. */
struct bw_result {
	uint64_t size;			/* bytes per message */
	uint64_t iters;			/* per QP, the "#iterations" column */
	uint64_t msgs;			/* all QPs */
	uint64_t ns;			/* time the average is over */
	double peak_gbps, avg_gbps;	/* Gb/sec = 10^9 bit/s */
	double mpps;			/* 10^6 messages/s */
};

/* bytes over ns, in Gb/sec (10^9 bits per second); 0 when ns is 0. */
double stats_gbps(uint64_t bytes, uint64_t ns);
/* messages over ns, in Mpps; 0 when ns is 0. */
double stats_mpps(uint64_t msgs, uint64_t ns);
/*
 * Fill a row: msgs messages of size bytes over ns, on qps QPs; peak from p
 * (NULL: peak = average).
 */
void stats_bw(struct bw_result *r, uint64_t size, uint64_t msgs, unsigned int qps, uint64_t ns,
	      const struct peak *p);
/*
 * -b: the other direction's row added to r (perftest's duplex report sums
 * both sides' figures); the iterations stay per direction.
 */
void stats_bw_add(struct bw_result *r, const struct bw_result *other);

#endif
