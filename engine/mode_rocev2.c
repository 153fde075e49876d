// SPDX-License-Identifier: MIT
/*
 * The RoCEv2 baseline's mode (mode.h): one path; the receiver takes only
 * the next PSN and answers a gap with one PSN_SEQ NAK; the sender goes back
 * N on that NAK, on its timeout and on an RNR or a stall, and sends no
 * tail-loss probes (a RoCE NIC waits for its transport timer).  Every
 * comparison runs it on the same engine and network as MetaRoCE.
 */
#include <errno.h>

#include "internal.h"

/* RoCEv2 mode: forget everything from psn on and resend it in order. */
static void go_back(struct engine *eng, struct qp *qp, struct path *p, uint32_t psn)
{
	struct sb_entry *s;
	uint32_t dsn;

	if (!seq_lt(psn, p->next_psn) || seq_lt(psn, p->floor))
		return;
	s = sb_ent(p, psn);
	if (s->state != SB_INFLIGHT)
		return;
	dsn = s->dsn;
	for (uint32_t q = psn; q != p->next_psn; q++) {
		struct sb_entry *x = sb_ent(p, q);

		if (x->state == SB_INFLIGHT) {
			p->inflight -= x->bytes;
			peer_release(eng, qp, 1);
			/*
			 * From the oldest DSN forgotten here, not psn's own: a
			 * go-back from an RNR delay's end (resend) sends older
			 * DSNs at newer PSNs than those still in flight, and
			 * went back to psn's DSN, those older ones were never
			 * sent again (the QP failed at the dead-peer timer).
			 */
			if (seq_lt(x->dsn, dsn))
				dsn = x->dsn;
		}
		x->state = SB_FREE;
	}
	/* Nor past a go-back under way: the DSNs it had still to resend. */
	if (qp->gbn_active && seq_lt(qp->gbn_next, dsn))
		dsn = qp->gbn_next;
	if (seq_lt(dsn, qp->snd_una))
		dsn = qp->snd_una;
	p->next_psn = psn;
	for (uint32_t d = dsn; d != qp->snd_nxt; d++)
		dsn_ent(qp, d)->state = DSN_LOST;
	qp->gbn_next = dsn;
	qp->gbn_active = true;
	qp_wake(eng, qp);
}

/* RoCEv2 mode: only the expected PSN is taken; anything else is dropped. */
static int in_order(struct engine *eng, struct qp *qp, struct rx_path *rp, uint32_t psn)
{
	int32_t d = seq_diff(psn, rp->sack.cum);

	if (d == 0) {
		rp->seq_nak_sent = false;
		return 0;
	}
	rxp_ack_now(qp, rp);	/* duplicate: re-ACK; gap: NAK once */
	if (d > 0) {
		eng->st.c[EC_RX_SEQ_ERR]++;
		return -EILSEQ;
	}
	eng->st.c[EC_RX_DUP]++;
	/* A go-back-N resend looks the same as a replay: only its ACK is owed. */
	eng->rx_repeat = true;
	return -EALREADY;
}

static int rx_order(struct engine *eng, struct qp *qp, struct rx_path *rp, uint32_t psn)
{
	int err = in_order(eng, qp, rp, psn);

	if (err == -EILSEQ && !rp->seq_nak_sent) {
		rp->seq_nak_sent = true;
		qp_set_nak(qp, rp, MROC_NAK_PSN_SEQ, qp->rcv_cum);
	}
	return err;
}

static void on_timeout(struct engine *eng, struct qp *qp, struct path *p)
{
	go_back(eng, qp, p, p->floor);
}

/* Go-Back-N: resend in order from d, with new PSNs. */
static bool resend(struct engine *eng, struct qp *qp, uint32_t d)
{
	/* Nor past a go-back under way (go_back's reason). */
	if (qp->gbn_active && seq_lt(qp->gbn_next, d) && !seq_lt(qp->gbn_next, qp->snd_una))
		d = qp->gbn_next;
	for (uint32_t x = d; x != qp->snd_nxt; x++)
		dsn_ent(qp, x)->state = DSN_LOST;
	qp->gbn_next = d;
	qp->gbn_active = true;
	qp_wake(eng, qp);
	return true;
}

static struct path *pick_path(struct engine *eng, struct qp *qp, uint32_t bytes)
{
	return path_can_send(eng, &qp->paths[0], bytes) ? &qp->paths[0] : NULL;
}

const struct mode_ops mode_rocev2 = {
	.name = "rocev2",
	.max_paths = 1,
	.tail_probe = false,
	.rtx_queue = false,
	.repath = false,	/* a RoCE NIC keeps its QP's source port */
	.classic_window = true,
	.rx_order = rx_order,
	.on_seq_nak = go_back,
	.on_timeout = on_timeout,
	.resend = resend,
	.pick_path = pick_path,
};
