// SPDX-License-Identifier: MIT
/*
 * NCCL's ring algorithms on a transport (struct hnet), with host buffers:
 *
 * AllReduce: the buffer in N chunks; N-1 reduce-scatter steps (step s: send
 * chunk r-s to rank r+1, receive chunk r-s-1 from rank r-1 and add it in),
 * then N-1 all-gather steps (send the chunk just completed, receive the next
 * one in place).  AllGather: the N-1 steps of the second half only.  Every
 * chunk moves in slices, `window` of them in flight each way, and slice j of
 * step s+1 leaves as soon as slice j of step s arrived: NCCL's pipeline.
 * Uneven chunks give short and zero-byte slices, as NCCL's do.
 *
 * Data: uint32 words, rank r's word i = seed * (r + 1) + i * 2654435761
 * (wrapping), so the sums are exact and every byte is checked.
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static uint32_t word(uint32_t seed, int rank, size_t i)
{
	return seed * (uint32_t)(rank + 1) + (uint32_t)i * 2654435761u;
}

void h_ring_setup(struct h_ring *r, struct hnet *net, size_t cap, size_t slice, int window)
{
	int n = H.nranks;

	memset(r, 0, sizeof(*r));
	r->net = net;
	r->cap = cap;
	r->slice = slice;
	r->window = window;
	r->buf = h_alloc(cap);
	r->tmp = h_alloc(slice * (size_t)window);
	static int rings;
	char key[32];

	snprintf(key, sizeof(key), "ring%d", rings++);
	h_connect_pair(net, key, (H.rank + 1) % n, (H.rank + n - 1) % n, &r->link);
	H_CHECK(!net->reg(net, r->link.rc, r->buf, cap, &r->mh_buf), "regMr buf");
	H_CHECK(!net->reg(net, r->link.rc, r->tmp, slice * (size_t)window, &r->mh_tmp), "regMr tmp");
}

void h_ring_teardown(struct h_ring *r)
{
	struct hnet *n = r->net;

	H_CHECK(!n->dereg(n, r->link.rc, r->mh_buf) && !n->dereg(n, r->link.rc, r->mh_tmp), "deregMr");
	H_CHECK(!n->close_send(n, r->link.sc) && !n->close_recv(n, r->link.rc) &&
		!n->close_listen(n, r->link.lc), "close");
	h_free(r->buf, r->cap);
	h_free(r->tmp, r->slice * (size_t)r->window);
}

/* The schedule: step s of `steps`, slice j; chunk sizes in words. */
struct sched {
	int n, rank, steps, first;		/* first: the global step the run starts at */
	size_t words, nslices, slice_words;
};

static size_t chunk_lo(const struct sched *s, int c) { return s->words * (size_t)c / (size_t)s->n; }

/* The chunk rank `rank` sends at global step g (0 .. 2n-3). */
static int send_chunk(const struct sched *s, int rank, int g)
{
	int n = s->n;

	return g < n - 1 ? ((rank - g) % n + n) % n : ((rank + 1 - (g - (n - 1))) % n + 2 * n) % n;
}

/* Words [lo, hi) of slice j of chunk c. */
static void slice_range(const struct sched *s, int c, size_t j, size_t *lo, size_t *hi)
{
	size_t a = chunk_lo(s, c), b = chunk_lo(s, c + 1);

	*lo = a + j * s->slice_words;
	*hi = *lo + s->slice_words;
	if (*lo > b)
		*lo = b;
	if (*hi > b)
		*hi = b;
}

/* AllGather: the rank whose word i is (chunk c is rank c - 1's). */
static int owner(const struct sched *s, size_t i)
{
	int c = 0;

	while (c < s->n - 1 && i >= chunk_lo(s, c + 1))
		c++;
	return (c + s->n - 1) % s->n;
}

struct op { void *req; size_t lo, hi; int g; size_t j; };

/*
 * --trace: when each slice's receive was posted (P) and done (R), and its send
 * posted (S) and done (D), on the monotonic clock every rank shares (one
 * machine), written after each run, outside its timing.  A send S at rank r
 * and the receive R of the same run, step and slice at rank r + 1 are one
 * hop: where a ring step's time goes (scripts/nccl-trace.awk).
 */
#define TRACE_MAX	4096
static struct tev { double t; int run, g; size_t j; char kind; } tev[TRACE_MAX];
static unsigned int ntev;
static int trace_run;

static void trace(char kind, int g, size_t j)
{
	if (H.trace && ntev < TRACE_MAX)
		tev[ntev++] = (struct tev){ h_now(), trace_run, g, j, kind };
}

static void trace_flush(void)
{
	static FILE *f;
	char path[512];
	unsigned int i;

	if (!H.trace)
		return;
	if (!f) {
		snprintf(path, sizeof(path), "%s.%d", H.trace, H.rank);
		f = fopen(path, "we");
		H_CHECK(f, "--trace %s: cannot write", path);
	}
	for (i = 0; i < ntev; i++)
		fprintf(f, "%d %c %d %d %zu %.3f\n", H.rank, tev[i].kind, tev[i].run, tev[i].g,
			tev[i].j, tev[i].t * 1e6);
	fflush(f);
	ntev = 0;
	trace_run++;
}

double h_ring_run(struct h_ring *r, enum h_coll coll, size_t bytes, uint32_t seed, unsigned flags)
{
	bool check = flags & H_RUN_CHECK;
	struct hnet *net = r->net;
	struct sched s = { .n = H.nranks, .rank = H.rank, .words = bytes / 4,
			   .slice_words = r->slice / 4 };
	int prev = (H.rank + s.n - 1) % s.n, W = r->window;
	struct op *sq = calloc((size_t)W, sizeof(*sq)), *rq = calloc((size_t)W, sizeof(*rq));
	size_t total, k, sent = 0, sdone = 0, rposted = 0, rdone = 0, i;
	size_t max_chunk = (s.words + (size_t)s.n - 1) / (size_t)s.n;
	double t0;

	H_CHECK(bytes % 4 == 0 && bytes <= r->cap && sq && rq, "ring: %zu bytes", bytes);
	s.nslices = max_chunk ? (max_chunk + s.slice_words - 1) / s.slice_words : 1;
	s.first = coll == H_ALLREDUCE ? 0 : s.n - 1;
	s.steps = coll == H_ALLREDUCE ? 2 * (s.n - 1) : s.n - 1;
	total = (size_t)s.steps * s.nslices;
	/* AllReduce: every word is the rank's; AllGather: only its own chunk (r + 1, where
	 * the gather steps start), the rest poisoned. */
	for (i = 0; check && i < s.words; i++)
		r->buf[i] = coll == H_ALLREDUCE || owner(&s, i) == s.rank ?
			    word(seed, s.rank, i) : 0xdeadbeefu;
	if (flags & H_RUN_SYNC)
		h_barrier(coll == H_ALLREDUCE ? "ar" : "ag");
	t0 = h_now();
	while (rdone < total || sdone < total) {
		size_t before = rposted + sent + rdone + sdone;

		/* Receives: in order, into tmp (reduce-scatter) or in place (gather). */
		while (rposted < total && rposted - rdone < (size_t)W) {
			struct op *o = &rq[rposted % (size_t)W];
			int g = s.first + (int)(rposted / s.nslices);
			size_t sz;
			void *dst;
			int tag = 0;

			o->g = g;
			o->j = rposted % s.nslices;
			slice_range(&s, send_chunk(&s, prev, g), o->j, &o->lo, &o->hi);
			sz = (o->hi - o->lo) * 4;
			dst = g < s.n - 1 ? (void *)(r->tmp + (rposted % (size_t)W) * r->slice) :
					    (void *)(r->buf + o->lo);
			H_CHECK(!net->irecv(net, r->link.rc, 1, &dst, &sz, &tag,
					    g < s.n - 1 ? &r->mh_tmp : &r->mh_buf, &o->req), "irecv");
			if (!o->req)
				break;		/* back-pressure: later */
			trace('P', g, o->j);
			rposted++;
		}
		/* Sends: slice j of step g once slice j of step g - 1 has arrived. */
		while (sent < total && sent - sdone < (size_t)W) {
			struct op *o = &sq[sent % (size_t)W];
			int g = s.first + (int)(sent / s.nslices);

			if (g > s.first && sent - s.nslices >= rdone)
				break;
			o->j = sent % s.nslices;
			slice_range(&s, send_chunk(&s, s.rank, g), o->j, &o->lo, &o->hi);
			H_CHECK(!net->isend(net, r->link.sc, r->buf + o->lo, (o->hi - o->lo) * 4, 0,
					    r->mh_buf, &o->req), "isend");
			if (!o->req)
				break;
			trace('S', g, o->j);
			sent++;
		}
		/* Completions, oldest first. */
		while (rdone < rposted) {
			struct op *o = &rq[rdone % (size_t)W];
			int done = 0, got = -1;

			H_CHECK(!net->test(net, o->req, &done, &got), "test (receive)");
			if (!done)
				break;
			H_CHECK(got == (int)((o->hi - o->lo) * 4), "received %d bytes, expected %zu", got,
				(o->hi - o->lo) * 4);
			if (o->g < s.n - 1) {
				const uint32_t *in = (const void *)(r->tmp + (rdone % (size_t)W) * r->slice);

				for (k = o->lo; k < o->hi; k++)
					r->buf[k] += in[k - o->lo];
			}
			trace('R', o->g, o->j);
			rdone++;
		}
		while (sdone < sent) {
			int done = 0;

			H_CHECK(!net->test(net, sq[sdone % (size_t)W].req, &done, NULL), "test (send)");
			if (!done)
				break;
			trace('D', s.first + (int)(sdone / s.nslices), sdone % s.nslices);
			sdone++;
		}
		/* Nothing moved: let the others run, as NCCL's proxy thread does when idle. */
		if (rposted + sent + rdone + sdone == before)
			sched_yield();
	}
	t0 = h_now() - t0;
	trace_flush();
	free(sq);
	free(rq);
	if (!check)
		return t0;
	for (i = 0; i < s.words; i++) {
		uint32_t want = 0;
		int q;

		if (coll == H_ALLREDUCE) {
			for (q = 0; q < s.n; q++)
				want += word(seed, q, i);
		} else {
			want = word(seed, owner(&s, i), i);
		}
		H_CHECK(r->buf[i] == want, "%s of %zu bytes: word %zu is %#x, expected %#x",
			coll == H_ALLREDUCE ? "AllReduce" : "AllGather", bytes, i, r->buf[i], want);
	}
	return t0;
}
