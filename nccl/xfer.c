// SPDX-License-Identifier: MIT
/*
 * Transfers: isend/irecv/test and the completions behind them (the protocol
 * is net.c's header comment; the wire formats are comm.h's).
 *
 * Matching: sends fill receives in posting order, each receive taking as
 * many sends as it has buffers, a send's tag choosing the buffer.  So both
 * ends number the sends alike: the sender counts its own (`sends`), the
 * receiver knows how many fill the receives before receive R (their buffers
 * added up: `first` in R's CTS).  A receive sends a CTS only when it must:
 * the connection's first (it tells where the eager slots are) and one with a
 * buffer above MNCCL_EAGER_MAX (a large send needs a buffer to WRITE into).
 * A small receive's sends are eager, so a small message is one packet, not
 * two.  A send goes
 *  - direct when the CTS at the head of the queue is its receive's (sends >=
 *    its first): into the buffer of its tag;
 *  - eager when it has no CTS (its receive sent none, or the CTS is on its
 *    way), fits an eager slot and the receiver has one free; the receiver
 *    gives each arriving eager send to the receive match_seq names (the
 *    oldest one not full), or keeps it unexpected until that is posted;
 *  - later (a NULL request) when it is large and its CTS has not come, or no
 *    eager or staging slot is free.
 * An eager send made with no CTS queued may be for a receive whose CTS is on
 * its way: the sender keeps its number and tag (pend) and, when that CTS
 * comes, marks the buffers its eager sends filled before any direct send
 * takes one; sends numbered below a CTS's first went to receives that sent
 * none.
 *
 * Credits: the receiver tells how many eager slots it has freed in every CTS
 * and, once half the slots were freed since it last told, in a credit (a CTS
 * of no buffers): one packet per MNCCL_EAGER_SLOTS / 2 small messages, not
 * one per message.  It cannot stall: a sender out of slots has all of them
 * sent and not told freed, so when the receiver has copied all of them out
 * (its receives are posted) at least half were freed since it last told.
 * (32 slots, not 16: a credit per 16 small messages, not per 8, which in a
 * ring of small steps was an eighth of the packets, completions and work
 * requests a step cost; 264 KiB of control region per receive comm.)  Once the
 * sender hears slot n freed, the receive it filled was posted and its CTS,
 * if it sent one, came before (one QP, in order): that pend entry can go.
 *
 * A small send (eager or not) is staged: its payload is copied to a staging
 * slot of the send comm and its request is done when it is posted, so NCCL
 * may reuse its buffer at once and a ring of small steps does not wait for
 * the acknowledgement of its last send (NCCL's socket transport completes a
 * send once the kernel has it, the same promise).  The staging slot is busy
 * until mroc completes the WRITE; closeSend waits for that.  With every
 * staging slot busy a small send goes zero-copy, as a large one does.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "comm.h"

/* ---- completions ---------------------------------------------------------------- */

void comm_fail(struct comm *c, int err, const char *why)
{
	if (!c->failed)
		MNCCL_WARN("connection %#llx failed: %s", (unsigned long long)c->service_id, why);
	c->failed = err;
}

int comm_post_cts_recv(struct comm *c, unsigned int i)
{
	struct mroc_recv_wr wr = {
		.wr_id = i,
		.sg = { (char *)mroc_mr_addr(c->ctl) + (size_t)i * CTS_STRIDE, CTS_STRIDE,
			mroc_mr_lkey(c->ctl) },
	};

	return mroc_post_recv(c->qp, &wr);
}

int comm_post_imm_recv(struct comm *c)
{
	struct mroc_recv_wr wr = { .wr_id = 0 };

	return mroc_post_recv(c->qp, &wr);
}

static void on_event(struct comm *c, const struct mroc_wc *wc)
{
	if (wc->opcode == MROC_WC_CONNECTED)
		c->connected = true;
	else if (wc->opcode == MROC_WC_DISCONNECTED)
		comm_fail(c, -ECONNRESET, "the peer closed it");
	else
		comm_fail(c, -ECONNREFUSED, mroc_wc_status_str(wc->status));
}

/* Send comm: a buffer of the CTS at the queue's head has had its send. */
static void cts_use(struct comm *c, struct cts_slot *s, int k)
{
	s->used[k] = 1;
	if (++s->nused == s->m.n) {
		c->fifo_head = (c->fifo_head + 1) % MNCCL_MAX_REQS;
		c->fifo_cnt--;
	}
}

/* Send comm: the first unused buffer of s for tag, or -1. */
static int cts_find(const struct cts_slot *s, int tag)
{
	int k;

	for (k = 0; k < s->m.n; k++)
		if (!s->used[k] && s->m.b[k].tag == tag)
			return k;
	return -1;
}

/* Send comm: the oldest eager send whose CTS might still have come, forgotten. */
static void pend_pop(struct comm *c)
{
	c->pend_head = (c->pend_head + 1) % MNCCL_EAGER_SLOTS;
	c->pend_cnt--;
}

/*
 * Send comm: eager sends made before their CTS take its buffers first (the
 * receiver did); those numbered below its first filled receives that sent no CTS.
 */
static void settle_eager(struct comm *c)
{
	while (c->pend_cnt && c->fifo_cnt) {
		const struct pend *p = &c->pend[c->pend_head];
		struct cts_slot *s = &c->fifo[c->fifo_head];
		int32_t d = (int32_t)(p->idx - s->m.first);
		int k;

		if (d >= s->m.n)
			return comm_fail(c, -EPROTO, "an eager send past the receive its CTS names");
		if (d >= 0) {
			k = cts_find(s, p->tag);
			if (k < 0)
				return comm_fail(c, -EPROTO, "an eager send's tag is not in its receive");
			cts_use(c, s, k);
		}
		pend_pop(c);
	}
}

/* Send comm: eager sends the receiver has freed are settled (see the top): forgotten. */
static void pend_prune(struct comm *c)
{
	while (c->pend_cnt && (int32_t)(c->pend[c->pend_head].eno - c->peer_freed) < 0)
		pend_pop(c);
}

/* A CTS or a credit arrived (send comm): queue it, give its buffer back to the QP. */
static void on_cts(struct comm *c, const struct mroc_wc *wc)
{
	unsigned int i = (unsigned int)wc->wr_id;
	const struct cts *m;
	struct cts_slot *s;
	uint32_t freed;
	int k;

	if (i >= MNCCL_CTS_RECVS)
		return comm_fail(c, -EPROTO, "a receive completion names no CTS buffer");
	m = (const void *)((char *)mroc_mr_addr(c->ctl) + (size_t)i * CTS_STRIDE);
	if (wc->byte_len < offsetof(struct cts, b) || le32toh(m->magic) != CTS_MAGIC ||
	    m->n > MNCCL_MAX_RECVS || (m->n && m->slot >= MNCCL_MAX_REQS) ||
	    wc->byte_len < offsetof(struct cts, b) + m->n * sizeof(struct cts_buf))
		return comm_fail(c, -EPROTO, "a malformed CTS");
	if (m->n && c->fifo_cnt == MNCCL_MAX_REQS)
		return comm_fail(c, -EPROTO, "more than 32 receives in flight");
	freed = le32toh(m->eager_freed);
	if ((int32_t)(freed - c->peer_freed) > 0) {
		if ((int32_t)(c->eager_sent - freed) < 0)
			return comm_fail(c, -EPROTO, "a CTS frees eager slots never sent");
		c->peer_freed = freed;
	}
	c->eager_rkey = le32toh(m->eager_rkey);
	c->eager_ok = true;
	if (!m->n)
		goto done;		/* a credit: no receive */
	s = &c->fifo[(c->fifo_head + c->fifo_cnt++) % MNCCL_MAX_REQS];
	memset(s, 0, sizeof(*s));
	s->m.slot = m->slot;
	s->m.n = m->n;
	s->m.seq = le16toh(m->seq);
	s->m.first = le32toh(m->first);
	for (k = 0; k < m->n; k++) {
		s->m.b[k].off = le64toh(m->b[k].off);
		s->m.b[k].size = le64toh(m->b[k].size);
		s->m.b[k].rkey = le32toh(m->b[k].rkey);
		s->m.b[k].tag = (int32_t)le32toh((uint32_t)m->b[k].tag);
	}
done:
	if (comm_post_cts_recv(c, i))
		return comm_fail(c, -EIO, "cannot repost a CTS buffer");
	settle_eager(c);
	pend_prune(c);
}

/* Receive comm: the receive the next arriving send belongs to, if it is posted. */
static struct rreq *match_recv(struct comm *c)
{
	struct rreq *r = &c->rreqs[c->seq_slot[c->match_seq % MNCCL_MAX_REQS]];

	return r->h.used && r->seq == c->match_seq && r->ndone < r->n ? r : NULL;
}

/* Receive comm: buffer k of r has its send (size bytes); the receive is full at n. */
static void recv_got(struct comm *c, struct rreq *r, int k, int size)
{
	r->got[k] = 1;
	r->sizes[k] = size;
	if (++r->ndone == r->n) {
		r->h.done = 1;
		c->match_seq++;
	}
}

/* Receive comm: eager slot e into receive r (the buffer its tag names), and free it. */
static void eager_deliver(struct comm *c, struct rreq *r, unsigned int e)
{
	const struct eager_hdr *hd = comm_slot(c, e);
	int32_t tag = (int32_t)le32toh((uint32_t)hd->tag);
	uint32_t size = le32toh(hd->size);
	int k;

	for (k = 0; k < r->n && (r->got[k] || r->tags[k] != tag); k++)
		;
	if (k == r->n)
		return comm_fail(c, -EPROTO, "an eager send's tag matches no buffer of its receive");
	if (size > r->room[k]) {
		/* Nothing copied; the receive reports a truncation (ncclInvalidUsage, as NCCL's
		 * socket transport does); the comm, its sends and receives out of step, fails. */
		r->h.failed = REQ_TRUNCATED;
		return comm_fail(c, -EPROTO, "an eager send larger than its receive");
	}
	if (size)
		memcpy(r->data[k], (const char *)hd + EAGER_HDR, size);
	c->eager_freed++;
	recv_got(c, r, k, (int)size);
}

/* An eager send arrived (receive comm): into its receive, or kept until that is posted. */
static void on_eager(struct comm *c, const struct mroc_wc *wc)
{
	unsigned int e = wc->imm & 0xff;
	const struct eager_hdr *hd;
	struct rreq *r;

	if (e >= MNCCL_EAGER_SLOTS || e != c->eager_rcvd % MNCCL_EAGER_SLOTS ||
	    wc->imm >> 16 != (c->eager_rcvd & 0xffff) || wc->byte_len < EAGER_HDR)
		return comm_fail(c, -EPROTO, "an eager send out of sequence");
	hd = comm_slot(c, e);
	if (le32toh(hd->size) != wc->byte_len - EAGER_HDR || le32toh(hd->size) > MNCCL_EAGER_MAX)
		return comm_fail(c, -EPROTO, "an eager send's size differs from its header");
	if (c->eager_rcvd - c->eager_freed >= MNCCL_EAGER_SLOTS)
		return comm_fail(c, -EPROTO, "an eager send into a slot not freed");
	c->eager_rcvd++;
	if (!c->unexp_cnt && (r = match_recv(c)))
		return eager_deliver(c, r, e);
	c->unexp[(c->unexp_head + c->unexp_cnt++) % MNCCL_EAGER_SLOTS] = (uint8_t)e;
}

/* Receive comm: a WRITE_IMM used a receive; given back IMM_REPOST_BATCH at a time (comm.h). */
static int imm_repost(struct comm *c)
{
	if (++c->imm_owed < IMM_REPOST_BATCH)
		return 0;
	for (; c->imm_owed; c->imm_owed--)
		if (comm_post_imm_recv(c))
			return -EIO;
	return 0;
}

/* A payload arrived (receive comm): which receive and buffer the immediate names. */
static void on_data(struct comm *c, const struct mroc_wc *wc)
{
	unsigned int slot = (wc->imm >> 8) & 0xff, k = wc->imm & 0xff;
	struct rreq *r = slot < MNCCL_MAX_REQS ? &c->rreqs[slot] : NULL;

	if (imm_repost(c))
		return comm_fail(c, -EIO, "cannot repost a receive");
	if (slot == IMM_EAGER && wc->opcode == MROC_WC_RECV_RDMA_IMM)
		return on_eager(c, wc);
	if (!r || !r->h.used || r->seq != wc->imm >> 16 || k >= r->n || r->got[k])
		return comm_fail(c, -EPROTO, "a write names no receive in flight");
	/* Sends fill receives in order: an earlier one not full means the two ends disagree. */
	if (r->seq != c->match_seq || c->unexp_cnt)
		return comm_fail(c, -EPROTO, "a write for a receive out of order");
	/*
	 * The CTS named the receive's size; a WRITE past it (a broken or hostile
	 * peer: the rkey covers the whole registration) is not copied out of a
	 * bounce region past the application's buffer, nor reported as data.
	 */
	if (wc->byte_len > r->room[k])
		return comm_fail(c, -EPROTO, "a write larger than its receive");
	/* A bounce region (the application's buffer is not shared with mrocd): copy out. */
	if (r->reg[k] && r->reg[k]->copy && wc->byte_len)
		memcpy(r->data[k], mnccl_reg_laddr(r->reg[k], r->data[k]), wc->byte_len);
	recv_got(c, r, (int)k, (int)wc->byte_len);
}

static void on_wc(struct comm *c, const struct mroc_wc *wc)
{
	if (wc->opcode == MROC_WC_CONNECTED || wc->opcode == MROC_WC_DISCONNECTED ||
	    wc->opcode == MROC_WC_EVENT_ERROR)
		return on_event(c, wc);
	if (c->kind == COMM_SEND &&
	    (wc->opcode == MROC_WC_WRITE_IMM || wc->opcode == MROC_WC_SEND_IMM) &&
	    wc->wr_id >= STAGE_WRID && wc->wr_id - STAGE_WRID < MNCCL_STAGE_SLOTS &&
	    (c->stage_busy >> (wc->wr_id - STAGE_WRID) & 1)) {
		/* A staged send is done: its slot is free (NCCL was told at the post). */
		c->stage_busy &= ~(1ull << (wc->wr_id - STAGE_WRID));
		c->staged--;
		if (wc->status != MROC_WC_SUCCESS)
			comm_fail(c, -EIO, mroc_wc_status_str(wc->status));
		return;
	}
	if (wc->status != MROC_WC_SUCCESS) {
		if ((wc->opcode == MROC_WC_WRITE_IMM || wc->opcode == MROC_WC_SEND_IMM) &&
		    c->kind == COMM_SEND &&
		    wc->wr_id < MNCCL_MAX_SREQS)
			c->sreqs[wc->wr_id].h.failed = REQ_FAILED;
		return comm_fail(c, -EIO, mroc_wc_status_str(wc->status));
	}
	switch (wc->opcode) {
	case MROC_WC_RECV:
		if (c->kind == COMM_SEND)
			return on_cts(c, wc);
		if (wc->flags & MROC_WC_WITH_IMM)
			return on_data(c, wc);		/* a zero-byte send */
		return comm_fail(c, -EPROTO, "a SEND to a receive comm");
	case MROC_WC_RECV_RDMA_IMM:
		if (c->kind == COMM_RECV)
			return on_data(c, wc);
		return comm_fail(c, -EPROTO, "a write to a send comm");
	case MROC_WC_WRITE_IMM:
	case MROC_WC_SEND_IMM:
		if (c->kind == COMM_SEND && wc->wr_id < MNCCL_MAX_SREQS)
			c->sreqs[wc->wr_id].h.done = 1;
		return;
	case MROC_WC_SEND:
		/* A CTS left: its buffer may be rewritten. */
		if (c->kind == COMM_RECV && wc->wr_id < MNCCL_CTS_RECVS)
			c->cts_busy[wc->wr_id] = 0;
		return;
	default:
		return;
	}
}

/* Receive comm: CTS buffer b, its header written (a credit's whole message). */
static struct cts *cts_start(struct comm *c, unsigned int b, uint32_t freed)
{
	struct cts *m = (void *)((char *)mroc_mr_addr(c->ctl) + (size_t)b * CTS_STRIDE);

	memset(m, 0, sizeof(*m));
	m->magic = htole32(CTS_MAGIC);
	m->eager_rkey = htole32(mroc_mr_rkey(c->ctl));
	m->eager_freed = htole32(freed);
	m->first = htole32(c->bufs);
	return m;
}

/*
 * Receive comm: a credit (a CTS of no buffers) once half the eager slots were
 * freed since the sender last heard; with the next CTS buffer still in flight,
 * or no room on the QP, the next progress tries again.
 */
static void send_credit(struct comm *c)
{
	unsigned int b = c->cts_next % MNCCL_CTS_RECVS;
	struct mroc_send_wr wr = { .opcode = MROC_WR_SEND, .flags = MROC_SEND_SIGNALED, .wr_id = b };
	int err;

	if (c->eager_freed - c->freed_told < MNCCL_EAGER_SLOTS / 2 || c->cts_busy[b] || c->failed)
		return;
	wr.sg = (struct mroc_sge){ cts_start(c, b, c->eager_freed), offsetof(struct cts, b),
				   mroc_mr_lkey(c->ctl) };
	err = mroc_post_send(c->qp, &wr);
	if (err == -EAGAIN)
		return;
	if (err)
		return comm_fail(c, err, mroc_strerror(err));
	c->cts_busy[b] = 1;
	c->cts_next++;
	c->freed_told = c->eager_freed;
	c->st.credits++;
}

/* Everything the comm's CQ holds, handled. */
void comm_progress(struct comm *c)
{
	struct mroc_wc wc[32];
	int n, i;

	do {
		n = mroc_poll_cq(c->qp, wc, 32);
		c->st.polls++;
		c->st.empty += n == 0;
		if (n < 0) {
			comm_fail(c, n, mroc_strerror(n));
			return;
		}
		for (i = 0; i < n; i++)
			on_wc(c, &wc[i]);
	} while (n == 32);
	if (c->kind == COMM_RECV)
		send_credit(c);
}

/* ---- transfers ---------------------------------------------------------------------- */

/* A post the QP refused (not for room): the comm has failed; what NCCL is told. */
static nccl_res post_res(struct comm *c, int err)
{
	comm_fail(c, err, mroc_strerror(err));
	return err == -ECONNREFUSED || err == -ECONNRESET || err == -ENOTCONN ? NCCL_ERR_REMOTE :
	       NCCL_ERR_SYSTEM;
}

static struct sreq *sreq_get(struct comm *c)
{
	unsigned int i;

	for (i = 0; i < MNCCL_MAX_SREQS; i++) {
		struct sreq *s = &c->sreqs[(c->sreq_hint + i) % MNCCL_MAX_SREQS];

		if (!s->h.used) {
			c->sreq_hint = (c->sreq_hint + i + 1) % MNCCL_MAX_SREQS;
			return s;
		}
	}
	return NULL;
}

/* A free staging slot of the send comm, or -1. */
static int stage_get(const struct comm *c)
{
	uint64_t free_ = ~c->stage_busy & (MNCCL_STAGE_SLOTS == 64 ? ~0ull :
					   (1ull << MNCCL_STAGE_SLOTS) - 1);

	return free_ ? __builtin_ctzll(free_) : -1;
}

/*
 * A small send, staged: the payload copied into a staging slot (after an eager
 * header), the request done at once, the slot busy until mroc completes.  With
 * s (the CTS at the queue's head, buffer k) it goes straight into the buffer
 * the CTS names; without, into the receive comm's next eager slot (kept in
 * pend when the CTS queue is empty: the receive may send one yet).
 * 1: posted (*out), 0: no room (NULL request), or -errno.
 */
static int send_staged(struct comm *c, const void *data, size_t size, int tag,
		       struct cts_slot *s, int k, int st, struct sreq **out)
{
	struct mroc_send_wr wr = { .opcode = MROC_WR_WRITE_IMM, .flags = MROC_SEND_SIGNALED };
	unsigned int e = c->eager_sent % MNCCL_EAGER_SLOTS;
	struct eager_hdr *hd = comm_slot(c, (unsigned int)st);
	struct sreq *q = sreq_get(c);
	int err;

	if (!q)
		return 0;
	hd->tag = (int32_t)htole32((uint32_t)tag);
	hd->size = htole32((uint32_t)size);
	if (size)
		memcpy((char *)hd + EAGER_HDR, data, size);
	wr.wr_id = STAGE_WRID + (unsigned int)st;
	if (!s) {
		wr.sg = (struct mroc_sge){ hd, (uint32_t)(EAGER_HDR + size), mroc_mr_lkey(c->ctl) };
		wr.rkey = c->eager_rkey;
		wr.remote_offset = CTL_SLOT_BASE + (uint64_t)e * EAGER_SLOT;
		wr.imm = (c->eager_sent & 0xffff) << 16 | IMM_EAGER << 8 | e;
	} else {
		if (size) {
			wr.sg = (struct mroc_sge){ (char *)hd + EAGER_HDR, (uint32_t)size,
						   mroc_mr_lkey(c->ctl) };
			wr.rkey = s->m.b[k].rkey;
			wr.remote_offset = s->m.b[k].off;
		} else {
			wr.opcode = MROC_WR_SEND_IMM;	/* no bytes: no region to name */
		}
		wr.imm = (uint32_t)s->m.seq << 16 | (uint32_t)s->m.slot << 8 | (uint32_t)k;
	}
	err = mroc_post_send(c->qp, &wr);
	if (err)
		return err == -EAGAIN ? 0 : err;
	c->stage_busy |= 1ull << st;
	c->staged++;
	c->st.sends++;
	if (s) {
		c->st.staged++;
		cts_use(c, s, k);
	} else {
		c->st.eager++;
		if (!c->fifo_cnt)
			c->pend[(c->pend_head + c->pend_cnt++) % MNCCL_EAGER_SLOTS] =
				(struct pend){ .idx = c->sends, .eno = c->eager_sent, .tag = tag };
		c->eager_sent++;
	}
	c->sends++;
	q->h = (struct req_head){ .kind = REQ_SEND, .used = 1, .done = 1, .c = c };
	q->size = (int)size;
	q->reg = NULL;		/* copied: the registration is free at once */
	req_name(c, &q->h, (unsigned int)(q - c->sreqs));
	*out = q;
	return 1;
}

nccl_res mnccl_isend(void *send_comm, void *data, size_t size, int tag, void *mh, void **req)
{
	struct comm *c = comm_get(send_comm, COMM_SEND);
	struct mnccl_reg *reg = mh;
	struct mroc_send_wr wr = { .opcode = MROC_WR_WRITE_IMM, .flags = MROC_SEND_SIGNALED };
	struct cts_slot *s;
	struct sreq *q = NULL;
	int k, st, err;

	if (!c || !req || size > MNCCL_MAX_MSG ||
	    (size && (!reg || !mnccl_reg_has(reg, data, size))))
		return NCCL_ERR_INVALID_ARG;
	*req = NULL;
	comm_progress(c);
	if (c->failed)
		return NCCL_ERR_REMOTE;
	st = size <= MNCCL_EAGER_MAX && c->eager ? stage_get(c) : -1;
	s = c->fifo_cnt ? &c->fifo[c->fifo_head] : NULL;
	if (s && (int32_t)(c->sends - s->m.first) < 0) {
		/* Its receive comes before the first CTS queued: it sent none, so it has no
		 * buffer above the eager limit. */
		if (size > MNCCL_EAGER_MAX) {
			MNCCL_WARN("a send of %zu bytes into a receive of at most %d", size,
				   MNCCL_EAGER_MAX);
			return NCCL_ERR_INVALID_USAGE;
		}
		s = NULL;
	}
	if (!s) {
		/* No CTS for it: its receive sends none, or has not been posted, or its CTS is
		 * on its way.  Eager if it fits and the receiver has an eager slot free, else
		 * NCCL calls again (a large send until its CTS comes). */
		if (st < 0 || !c->eager_ok || c->eager_sent - c->peer_freed >= MNCCL_EAGER_SLOTS)
			return NCCL_OK;
		err = send_staged(c, data, size, tag, NULL, 0, st, &q);
		if (err < 0)
			return post_res(c, err);
		*req = q ? q->h.handle : NULL;
		return NCCL_OK;
	}
	if ((int32_t)(c->sends - s->m.first) >= s->m.n)
		return post_res(c, -EPROTO);	/* cannot be: the head CTS is used up first */
	k = cts_find(s, tag);
	if (k < 0) {
		MNCCL_WARN("a send with tag %d matches no buffer of the first receive posted", tag);
		return NCCL_ERR_INVALID_USAGE;
	}
	if (size > s->m.b[k].size) {
		MNCCL_WARN("a send of %zu bytes into a receive of %llu", size,
			   (unsigned long long)s->m.b[k].size);
		return NCCL_ERR_INVALID_USAGE;
	}
	if (st >= 0) {
		err = send_staged(c, data, size, tag, s, k, st, &q);
		if (err < 0)
			return post_res(c, err);
		*req = q ? q->h.handle : NULL;
		return NCCL_OK;
	}
	/* Zero-copy: the QP reads the application's buffer (its request done at mroc's ACK). */
	q = sreq_get(c);
	if (!q)
		return NCCL_OK;
	if (size) {
		/* A bounce region: the payload must be in it before the QP reads it. */
		if (reg->copy)
			memcpy(mnccl_reg_laddr(reg, data), data, size);
		wr.sg = (struct mroc_sge){ mnccl_reg_laddr(reg, data), (uint32_t)size,
					   mroc_mr_lkey(reg->mr) };
		wr.rkey = s->m.b[k].rkey;
		wr.remote_offset = s->m.b[k].off;
	} else {
		wr.opcode = MROC_WR_SEND_IMM;	/* no bytes: no region to name (the receive may have none) */
	}
	wr.wr_id = (uint64_t)(q - c->sreqs);
	wr.imm = (uint32_t)s->m.seq << 16 | (uint32_t)s->m.slot << 8 | (uint32_t)k;
	err = mroc_post_send(c->qp, &wr);
	if (err == -EAGAIN)
		return NCCL_OK;
	if (err)
		return post_res(c, err);
	cts_use(c, s, k);
	c->sends++;
	c->st.sends++;
	c->st.zcopy++;
	q->h = (struct req_head){ .kind = REQ_SEND, .used = 1, .c = c };
	q->size = (int)size;
	q->reg = size ? reg : NULL;	/* the QP reads it until done: deregMr waits */
	mnccl_reg_hold(q->reg, 1);
	req_name(c, &q->h, (unsigned int)(q - c->sreqs));
	*req = q->h.handle;
	return NCCL_OK;
}

nccl_res mnccl_irecv(void *recv_comm, int n, void **data, const size_t *sizes, const int *tags,
		     void **mhs, void **req)
{
	struct comm *c = comm_get(recv_comm, COMM_RECV);
	struct mroc_send_wr wr = { .opcode = MROC_WR_SEND, .flags = MROC_SEND_SIGNALED };
	struct rreq *r = NULL;
	unsigned int slot, take = 0, b = c ? c->cts_next % MNCCL_CTS_RECVS : 0;
	bool cts;
	struct cts *m;
	int k, err;

	/* The arrays are read for every buffer (a NULL one was dereferenced). */
	if (!c || !req || n < 1 || n > MNCCL_MAX_RECVS || !data ||
	    !sizes || !tags)
		return NCCL_ERR_INVALID_ARG;
	/* A CTS unless eager sends can fill it (see the top) and the sender knows the slots. */
	cts = !c->eager || !c->told;
	for (k = 0; k < n; k++) {
		struct mnccl_reg *reg = mhs ? mhs[k] : NULL;

		if (sizes[k] > MNCCL_MAX_MSG ||
		    (sizes[k] && (!reg || !mnccl_reg_has(reg, data[k], sizes[k]))))
			return NCCL_ERR_INVALID_ARG;
		cts |= sizes[k] > MNCCL_EAGER_MAX;
	}
	*req = NULL;
	comm_progress(c);
	if (c->failed)
		return NCCL_ERR_REMOTE;
	for (slot = 0; slot < MNCCL_MAX_REQS && c->rreqs[slot].h.used; slot++)
		;
	if (slot == MNCCL_MAX_REQS || (cts && c->cts_busy[b]))
		return NCCL_OK;		/* 32 in flight, or no CTS buffer free: NCCL calls again */
	/* Eager sends waiting for this receive: it takes them below; the CTS says so. */
	if (c->seq == c->match_seq)
		take = c->unexp_cnt < (unsigned int)n ? c->unexp_cnt : (unsigned int)n;
	r = &c->rreqs[slot];
	if (cts) {
		m = cts_start(c, b, c->eager_freed + take);
		m->slot = (uint8_t)slot;
		m->n = (uint8_t)n;
		m->seq = htole16(c->seq);
		for (k = 0; k < n; k++) {
			struct mnccl_reg *reg = sizes[k] ? mhs[k] : NULL;

			m->b[k].size = htole64(sizes[k]);
			m->b[k].tag = (int32_t)htole32((uint32_t)tags[k]);
			if (reg) {
				m->b[k].off = htole64(mnccl_reg_off(reg, data[k]));
				m->b[k].rkey = htole32(mroc_mr_rkey(reg->mr));
			}
		}
		wr.wr_id = b;
		wr.sg = (struct mroc_sge){ m, (uint32_t)(offsetof(struct cts, b) +
							 n * sizeof(m->b[0])),
					   mroc_mr_lkey(c->ctl) };
		err = mroc_post_send(c->qp, &wr);
		if (err == -EAGAIN)
			return NCCL_OK;
		if (err)
			return post_res(c, err);
		c->cts_busy[b] = 1;
		c->cts_next++;
		c->told = true;
		c->freed_told = c->eager_freed + take;
		c->st.cts++;
	}
	c->st.recvs++;
	memset(r, 0, sizeof(*r));
	r->h = (struct req_head){ .kind = REQ_RECV, .used = 1, .c = c };
	req_name(c, &r->h, slot);
	r->n = (uint8_t)n;
	r->seq = c->seq++;
	c->bufs += (uint32_t)n;
	c->seq_slot[r->seq % MNCCL_MAX_REQS] = (uint8_t)slot;
	for (k = 0; k < n; k++) {
		r->data[k] = data[k];
		r->tags[k] = tags[k];
		r->room[k] = sizes[k];
		r->reg[k] = sizes[k] ? mhs[k] : NULL;
		mnccl_reg_hold(r->reg[k], 1);	/* written (or copied out of) until done */
	}
	for (; take && !c->failed; take--) {
		eager_deliver(c, r, c->unexp[c->unexp_head]);
		c->unexp_head = (c->unexp_head + 1) % MNCCL_EAGER_SLOTS;
		c->unexp_cnt--;
	}
	send_credit(c);
	*req = r->h.handle;
	/* A send already here that does not fit is this receive's to report (test()). */
	return c->failed && r->h.failed != REQ_TRUNCATED ? NCCL_ERR_REMOTE : NCCL_OK;
}

/* A request ends (reported, or its comm closed): the registrations it held are free. */
void req_release_regs(struct req_head *h)
{
	if (h->kind == REQ_SEND) {
		struct sreq *q = (struct sreq *)h;

		mnccl_reg_hold(q->reg, -1);
		q->reg = NULL;
	} else {
		struct rreq *r = (struct rreq *)h;

		for (int k = 0; k < r->n; k++) {
			mnccl_reg_hold(r->reg[k], -1);
			r->reg[k] = NULL;
		}
	}
}

nccl_res mnccl_test(void *request, int *done, int *sizes)
{
	struct req_head *h = req_get(request);
	struct comm *c;

	/* Completed, failed, gone with its comm or never ours: it names nothing. */
	if (!h || !done)
		return NCCL_ERR_INVALID_ARG;
	c = h->c;
	*done = 0;
	if (!h->done)
		comm_progress(c);
	if (h->failed || (!h->done && c->failed)) {
		req_release_regs(h);
		h->used = 0;
		return h->failed == REQ_TRUNCATED ? NCCL_ERR_INVALID_USAGE : NCCL_ERR_REMOTE;
	}
	if (!h->done)
		return NCCL_OK;
	if (h->kind == REQ_SEND) {
		if (sizes)
			sizes[0] = ((struct sreq *)h)->size;
	} else if (sizes) {
		struct rreq *r = (struct rreq *)h;

		memcpy(sizes, r->sizes, r->n * sizeof(int));
	}
	req_release_regs(h);
	h->used = 0;
	*done = 1;
	return NCCL_OK;
}
