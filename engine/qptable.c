// SPDX-License-Identifier: MIT
/*
 * Where the QPs live: the table of slots (a stack of free ones, so creating
 * a QP searches nothing), the QPN hash, and the lists of QPs ready to send
 * that the scheduler serves (engine_tx).  Every file of the engine finds a
 * QP and wakes it here; none calls up into engine.c for it.
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

int qp_table_init(struct engine *eng)
{
	uint32_t max = eng->cfg.max_qps, n = pow2_up(max);

	eng->hash_mask = n - 1;		/* also the CM's and the peers' hashes (cm.c, peer.c) */
	eng->qps = calloc(max, sizeof(*eng->qps));
	eng->free_slots = calloc(max, sizeof(*eng->free_slots));
	eng->qpn_hash = calloc(n, sizeof(*eng->qpn_hash));
	if (!eng->qps || !eng->free_slots || !eng->qpn_hash)
		return -ENOMEM;
	/* Popped from the top: slot 0 first, as a fresh table fills. */
	for (uint32_t i = 0; i < max; i++)
		eng->free_slots[eng->nfree++] = max - 1 - i;
	list_init(&eng->ctl_ready);
	list_init(&eng->tx_ready);
	list_init(&eng->undrawn);
	list_init(&eng->cq_ready);
	return 0;
}

/* The QPs themselves are freed by the caller (qp_free) first. */
void qp_table_free(struct engine *eng)
{
	free(eng->qps);
	free(eng->free_slots);
	free(eng->qpn_hash);
}

/*
 * QPNs are random 32-bit numbers, found through a hash: with the peer's QPN,
 * which every packet also carries and which is checked, an off-path host
 * has 64 unpredictable bits to guess before it can touch a connection.
 */
static struct qp **qpn_bucket(struct engine *eng, uint32_t qpn)
{
	return &eng->qpn_hash[(qpn * 0x9e3779b1u) >> 7 & eng->hash_mask];
}

struct qp *qp_lookup(struct engine *eng, uint32_t qpn)
{
	struct qp *qp;

	if (!qpn)
		return NULL;
	for (qp = *qpn_bucket(eng, qpn); qp; qp = qp->qpn_next)
		if (qp->qpn == qpn)
			return qp;
	return NULL;
}

void qp_table_add(struct engine *eng, struct qp *qp, uint32_t qpn)
{
	uint32_t i = eng->free_slots[--eng->nfree];
	struct qp **b = qpn_bucket(eng, qpn);

	qp->qpn = qpn;
	qp->slot = i;
	eng->qps[i] = qp;
	qp->qpn_next = *b;
	*b = qp;
}

void qp_table_remove(struct engine *eng, struct qp *qp)
{
	for (struct qp **pp = qpn_bucket(eng, qp->qpn); *pp; pp = &(*pp)->qpn_next)
		if (*pp == qp) {
			*pp = qp->qpn_next;
			break;
		}
	eng->qps[qp->slot] = NULL;
	eng->free_slots[eng->nfree++] = qp->slot;
}

void qp_wake(struct engine *eng, struct qp *qp)
{
	if (!list_linked(&qp->tx_node))
		list_add_tail(&eng->tx_ready, &qp->tx_node);
}

void qp_wake_ctl(struct engine *eng, struct qp *qp)
{
	if (!list_linked(&qp->ctl_node))
		list_add_tail(&eng->ctl_ready, &qp->ctl_node);
}
