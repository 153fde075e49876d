// SPDX-License-Identifier: MIT
/*
 * mroc-perf atomic tests: atomic_bw and atomic_lat (perftest's ib_atomic_bw
 * and ib_atomic_lat, -A FETCH_AND_ADD or CMP_AND_SWAP), 8 bytes each.
 *
 * Every atomic of QP q targets the 8-byte word at offset 0 of the server's
 * region of q, which the server zeroes before each run.  Message k of a QP
 * is FETCH_ADD 1, or CMP_SWAP k -> k + 1, so the word counts the atomics
 * either way and message k must return k: a QP's atomics are performed in
 * order, each exactly once (mrocd never performs a retransmitted request
 * again).  The client checks every returned value with --verify (every
 * request signaled, results in distinct slots); the server checks that the
 * word equals the client's count at the end of every run, always.
 */
#include <errno.h>
#include <inttypes.h>

#include "perf.h"

#define ATOMIC_WORD	0	/* offset of the target word in the server's region */

bool perf_is_cswap(const struct perf *pf)
{
	return pf->p.flags & OOB_F_CSWAP;
}

void atomic_wr(const struct perf *pf, uint64_t seq, struct mroc_send_wr *wr)
{
	wr->remote_offset = ATOMIC_WORD;
	if (perf_is_cswap(pf)) {
		wr->opcode = MROC_WR_ATOMIC_CMP_SWP;
		wr->compare_add = seq;
		wr->swap = seq + 1;
	} else {
		wr->opcode = MROC_WR_ATOMIC_FETCH_ADD;
		wr->compare_add = 1;
	}
}

/* The word the daemon changes under us: read it as the atomic it is. */
static uint64_t word_load(const uint8_t *p)
{
	return __atomic_load_n((const uint64_t *)(const void *)p, __ATOMIC_ACQUIRE);
}

int atomic_check_result(struct perf *pf, struct perf_qp *q, uint64_t seq, const uint8_t *res)
{
	uint64_t v = word_load(res);

	if (v == seq)
		return 0;
	return perf_fail(pf, -EPROTO, "qp %u: atomic %" PRIu64 " returned %" PRIu64 ", expected %"
			 PRIu64 " (an atomic lost, reordered or performed twice)", q->idx, seq, v,
			 seq);
}

void atomic_prepare(struct perf *pf)
{
	if (!pf->server)
		return;
	for (unsigned int i = 0; i < pf->nqp; i++)
		__atomic_store_n((uint64_t *)(void *)(pf->qp[i].buf + ATOMIC_WORD), 0,
				 __ATOMIC_RELEASE);
}

int atomic_check_counters(struct perf *pf)
{
	for (unsigned int i = 0; i < pf->nqp; i++) {
		uint64_t want = i < pf->done.n ? pf->done.msgs[i] : 0;
		uint64_t v = word_load(pf->qp[i].buf + ATOMIC_WORD);

		if (v != want)
			return perf_fail(pf, -EPROTO, "qp %u: the target word is %" PRIu64 " after %"
					 PRIu64 " atomics (each must count once)", i, v, want);
	}
	return 0;
}
