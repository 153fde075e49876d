// SPDX-License-Identifier: MIT
/*
 * The engine's bookkeeping checked against itself, for tests and debug
 * builds (not the data path: it walks every QP, path and packet in flight).
 * Each count the engine keeps apart from its scoreboards must agree with
 * them, or something waits for a release that never comes: a peer host's
 * window that counts a packet no path holds parks its QPs with nothing in
 * flight to wake them (the write_bw stalls of session 17).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

int check_fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (why && len)
		vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -EFAULT;
}

/* A path's packets in flight (count and window bytes) from its scoreboard. */
static int path_check(const struct qp *qp, struct path *p, uint32_t *pkts, char *why, size_t len)
{
	uint64_t bytes = 0;

	if (seq_lt(p->next_psn, p->floor) || p->next_psn - p->floor > p->sb_mask + 1)
		return check_fail(why, len, "QP 0x%x path %u: floor %u above next %u", qp->qpn, p->id,
			    p->floor, p->next_psn);
	for (uint32_t q = p->floor; q != p->next_psn; q++) {
		const struct sb_entry *s = sb_ent(p, q);

		if (s->state == SB_INFLIGHT) {
			bytes += s->bytes;
			(*pkts)++;
		}
	}
	if (bytes != p->inflight)
		return check_fail(why, len, "QP 0x%x path %u: inflight %u bytes, scoreboard %" PRIu64,
			    qp->qpn, p->id, p->inflight, bytes);
	return 0;
}

int engine_check(struct engine *eng, char *why, size_t len)
{
	for (uint32_t i = 0; i < eng->cfg.max_qps; i++) {
		struct qp *qp = eng->qps[i];
		uint32_t pkts = 0;
		int err;

		if (!qp || (!qp->ph && qp->state != ENGINE_QPS_CONNECTED))
			continue;
		for (unsigned k = 0; k < qp->npaths; k++) {
			err = path_check(qp, &qp->paths[k], &pkts, why, len);
			if (err)
				return err;
		}
		if (qp->ph && qp->ph_pkts != pkts)
			return check_fail(why, len, "QP 0x%x: %u packets in its peer's window, %u on its paths",
				    qp->qpn, qp->ph_pkts, pkts);
		if (qp->ph_blocked && !qp->ph)
			return check_fail(why, len, "QP 0x%x: blocked without a peer host", qp->qpn);
		if (qp->state == ENGINE_QPS_CONNECTED && qp_stranded(qp))
			return check_fail(why, len, "QP 0x%x: DSNs %u..%u and %u resends to send,"
					  " nothing in flight, not ready, no timer", qp->qpn,
					  qp->snd_nxt, qp->dsn_alloc, qp->rtx_tail - qp->rtx_head);
	}
	return peer_check(eng, why, len);
}
