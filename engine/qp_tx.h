/* SPDX-License-Identifier: MIT */
/*
 * What qp_tx.c (segments, packets) and qp_tx_path.c (the path of each
 * packet) share and no other file of the engine needs.
 */
#ifndef MROC_ENGINE_QP_TX_H
#define MROC_ENGINE_QP_TX_H

#include "internal.h"

/*
 * A segment sent ALONE_AFTER_TRIES - 1 times and lost each time goes alone,
 * once the QP has nothing in flight on its live paths (qp_drained; it sends
 * nothing else until then).  Random loss does that to one segment in 10,000
 * at 10% loss; a queue that holds exactly one packet does it every time to a
 * small packet sent right behind a full one (a READ request resent behind a
 * data packet: issue #23, tail-dropped until RETRY_EXC), which no window of
 * two or more packets avoids.  After 2 losses instead of 4, drop-tail queues
 * losing 17% (64 KiB, no ECN) waited for drained paths often enough to time
 * out 56 times and lose 22% of the goodput.
 */
#define ALONE_AFTER_TRIES	5

/*
 * A ring step that finds two slices arrived posts two sends at once; with
 * only the last one "lone", the first took the usual pick, most often a
 * path of the other thread's port (an idle one has the most free window):
 * a fifth of an 8 B ring's packets crossed (issue #26, s13-prov13).  Four
 * one-packet segments are still no stream worth every port; a message of
 * more, or one queued before a larger message, spreads as before.
 */
#define HOME_BURST_SEGS	4

/* qp_tx_path.c */
bool sparse_qp(const struct engine *eng, const struct qp *qp, const struct tx_msg *m);
bool bulk_tail(const struct engine *eng, const struct qp *qp, const struct path *p,
	       const struct tx_msg *m);
void tx_count_window(struct engine *eng, struct qp *qp, uint64_t now);
struct path *pick_path_alone(struct engine *eng, struct qp *qp, uint32_t bytes, bool dup,
			     uint32_t dsn, const struct tx_msg *m, uint64_t now);
struct path *pick_path_home(struct engine *eng, struct qp *qp, uint32_t bytes);
bool hedge_tail(const struct engine *eng, const struct qp *qp);
bool qp_drained(const struct qp *qp);
struct path *idle_path(struct engine *eng, struct qp *qp, uint32_t bytes);

#endif
