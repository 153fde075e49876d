// SPDX-License-Identifier: MIT
/*
 * mroc-perf statistics (see stats.h).  perftest's definitions: t_typical is
 * the middle sample of the sorted array, percentiles are nearest-rank, the
 * standard deviation is the population one, Gb/sec is 10^9 bits per second.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

int samples_add(struct samples *s, uint64_t ns)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint64_t *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = ns;
	return 0;
}

void samples_reset(struct samples *s)
{
	s->n = 0;
}

void samples_free(struct samples *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t stats_percentile(const uint64_t *sorted, size_t n, double pct)
{
	/* In thousandths of a percent, in integers: 99.9% of 1000 is exactly the 999th. */
	uint64_t k = (uint64_t)llround(pct * 1000.0), rank;

	if (!n)
		return 0;
	rank = (k * n + 99999) / 100000;
	if (rank < 1)
		rank = 1;
	return sorted[rank <= n ? rank - 1 : n - 1];
}

void stats_lat(uint64_t *ns, size_t n, double divisor, struct lat_stats *st)
{
	double us = 1000.0 * divisor, sum = 0, sq = 0;

	memset(st, 0, sizeof(*st));
	if (!n)
		return;
	qsort(ns, n, sizeof(*ns), cmp_u64);
	for (size_t i = 0; i < n; i++)
		sum += (double)ns[i];
	st->n = n;
	st->avg = sum / (double)n / us;
	for (size_t i = 0; i < n; i++) {
		double d = (double)ns[i] / us - st->avg;

		sq += d * d;
	}
	st->stdev = sqrt(sq / (double)n);
	st->min = (double)ns[0] / us;
	st->max = (double)ns[n - 1] / us;
	st->typical = (double)ns[n / 2] / us;
	st->p99 = (double)stats_percentile(ns, n, 99.0) / us;
	st->p999 = (double)stats_percentile(ns, n, 99.9) / us;
}

void peak_init(struct peak *p, uint64_t window_ns)
{
	memset(p, 0, sizeof(*p));
	p->window_ns = window_ns ? window_ns : PEAK_WINDOW_NS;
}

void peak_update(struct peak *p, uint64_t now_ns, uint64_t bytes_total)
{
	uint64_t dt;
	double bps;

	if (!p->started) {
		p->started = true;
		p->start_ns = now_ns;
		p->start_bytes = bytes_total;
		return;
	}
	dt = now_ns - p->start_ns;
	if (now_ns < p->start_ns || dt < p->window_ns)
		return;
	bps = (double)(bytes_total - p->start_bytes) * 1e9 / (double)dt;
	if (!p->closed || bps > p->best_bps)
		p->best_bps = bps;
	p->closed = true;
	p->start_ns = now_ns;
	p->start_bytes = bytes_total;
}

double peak_result(const struct peak *p, double avg_bps)
{
	return p->closed ? p->best_bps : avg_bps;
}

double stats_gbps(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes * 8.0 / (double)ns : 0;
}

double stats_mpps(uint64_t msgs, uint64_t ns)
{
	return ns ? (double)msgs * 1e3 / (double)ns : 0;
}

void stats_bw(struct bw_result *r, uint64_t size, uint64_t msgs, unsigned int qps, uint64_t ns,
	      const struct peak *p)
{
	uint64_t bytes = size * msgs;

	memset(r, 0, sizeof(*r));
	r->size = size;
	r->msgs = msgs;
	r->iters = qps ? (msgs + qps - 1) / qps : msgs;
	r->ns = ns;
	r->avg_gbps = stats_gbps(bytes, ns);
	r->mpps = stats_mpps(msgs, ns);
	r->peak_gbps = p ? peak_result(p, r->avg_gbps * 1e9 / 8.0) * 8.0 / 1e9 : r->avg_gbps;
	/* The whole run is a window too: the peak is never below the average. */
	if (r->peak_gbps < r->avg_gbps)
		r->peak_gbps = r->avg_gbps;
}

void stats_bw_add(struct bw_result *r, const struct bw_result *other)
{
	r->msgs += other->msgs;
	r->peak_gbps += other->peak_gbps;
	r->avg_gbps += other->avg_gbps;
	r->mpps += other->mpps;
	if (other->ns > r->ns)
		r->ns = other->ns;
}
