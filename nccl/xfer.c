// SPDX-License-Identifier: MIT
/*
 * Transfers: isend/irecv/test and the completions behind them (the protocol
 * is net.c's header comment; the wire formats are comm.h's).
 *
 * Matching: sends fill receives in posting order, each receive taking as
 * many sends as it has buffers, a send's tag choosing the buffer.  A direct
 * send knows its receive from the CTS it uses; an eager send (no CTS yet)
 * does not, so both ends run the same rule over the same order:
 *  - the receiver gives each arriving send to the receive match_seq names
 *    (the oldest one not full), or keeps an eager one unexpected until that
 *    receive is posted;
 *  - the sender remembers the tags of its eager sends (pend_tag) and, when
 *    the CTSs of their receives come, marks those buffers used before any
 *    direct send takes one.
 * A send therefore goes eager only while the CTS queue is empty (every CTS
 * the sender has is used up, so the next send is for a receive it has not
 * heard of), it fits an eager slot and the receiver has a slot free (it
 * tells how many it freed in every CTS).  Otherwise it waits for the CTS,
 * which always comes once the receive is posted.
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

/* Send comm: eager sends made before their CTS take its buffers first (the receiver did). */
static void settle_eager(struct comm *c)
{
	while (c->pend_cnt && c->fifo_cnt) {
		struct cts_slot *s = &c->fifo[c->fifo_head];
		int k = cts_find(s, c->pend_tag[c->pend_head]);

		if (k < 0)
			return comm_fail(c, -EPROTO, "an eager send's tag is not in its receive");
		cts_use(c, s, k);
		c->pend_head = (c->pend_head + 1) % MNCCL_EAGER_SLOTS;
		c->pend_cnt--;
	}
}

/* A CTS arrived (send comm): queue it, give its buffer back to the QP. */
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
	    !m->n || m->n > MNCCL_MAX_RECVS || m->slot >= MNCCL_MAX_REQS ||
	    wc->byte_len < offsetof(struct cts, b) + m->n * sizeof(struct cts_buf))
		return comm_fail(c, -EPROTO, "a malformed CTS");
	if (c->fifo_cnt == MNCCL_MAX_REQS)
		return comm_fail(c, -EPROTO, "more than 32 receives in flight");
	freed = le32toh(m->eager_freed);
	if ((int32_t)(freed - c->peer_freed) > 0) {
		if ((int32_t)(c->eager_sent - freed) < 0)
			return comm_fail(c, -EPROTO, "a CTS frees eager slots never sent");
		c->peer_freed = freed;
	}
	c->eager_rkey = le32toh(m->eager_rkey);
	c->eager_ok = true;
	s = &c->fifo[(c->fifo_head + c->fifo_cnt++) % MNCCL_MAX_REQS];
	memset(s, 0, sizeof(*s));
	s->m.slot = m->slot;
	s->m.n = m->n;
	s->m.seq = le16toh(m->seq);
	for (k = 0; k < m->n; k++) {
		s->m.b[k].off = le64toh(m->b[k].off);
		s->m.b[k].size = le64toh(m->b[k].size);
		s->m.b[k].rkey = le32toh(m->b[k].rkey);
		s->m.b[k].tag = (int32_t)le32toh((uint32_t)m->b[k].tag);
	}
	if (comm_post_cts_recv(c, i))
		return comm_fail(c, -EIO, "cannot repost a CTS buffer");
	settle_eager(c);
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
	if (size > r->room[k])
		return comm_fail(c, -EPROTO, "an eager send larger than its receive");
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

/* A payload arrived (receive comm): which receive and buffer the immediate names. */
static void on_data(struct comm *c, const struct mroc_wc *wc)
{
	unsigned int slot = (wc->imm >> 8) & 0xff, k = wc->imm & 0xff;
	struct rreq *r = slot < MNCCL_MAX_REQS ? &c->rreqs[slot] : NULL;

	if (comm_post_imm_recv(c))
		return comm_fail(c, -EIO, "cannot repost a receive");
	if (slot == IMM_EAGER && wc->opcode == MROC_WC_RECV_RDMA_IMM)
		return on_eager(c, wc);
	if (!r || !r->h.used || r->seq != wc->imm >> 16 || k >= r->n || r->got[k])
		return comm_fail(c, -EPROTO, "a write names no receive in flight");
	/* Sends fill receives in order: an earlier one not full means the two ends disagree. */
	if (r->seq != c->match_seq || c->unexp_cnt)
		return comm_fail(c, -EPROTO, "a write for a receive out of order");
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
			c->sreqs[wc->wr_id].h.failed = 1;
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

/* Everything the comm's CQ holds, handled. */
void comm_progress(struct comm *c)
{
	struct mroc_wc wc[32];
	int n, i;

	do {
		n = mroc_poll_cq(c->qp, wc, 32);
		if (n < 0) {
			comm_fail(c, n, mroc_strerror(n));
			return;
		}
		for (i = 0; i < n; i++)
			on_wc(c, &wc[i]);
	} while (n == 32);
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
 * the CTS names; without, into the receive comm's next eager slot.
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
	if (s) {
		cts_use(c, s, k);
	} else {
		c->eager_sent++;
		c->pend_tag[(c->pend_head + c->pend_cnt++) % MNCCL_EAGER_SLOTS] = tag;
	}
	q->h = (struct req_head){ .kind = REQ_SEND, .used = 1, .done = 1, .c = c };
	q->size = (int)size;
	*out = q;
	return 1;
}

nccl_res mnccl_isend(void *send_comm, void *data, size_t size, int tag, void *mh, void **req)
{
	struct comm *c = send_comm;
	struct mnccl_reg *reg = mh;
	struct mroc_send_wr wr = { .opcode = MROC_WR_WRITE_IMM, .flags = MROC_SEND_SIGNALED };
	struct cts_slot *s;
	struct sreq *q = NULL;
	int k, st, err;

	if (!c || c->kind != COMM_SEND || !req || size > MNCCL_MAX_MSG ||
	    (size && (!reg || !mnccl_reg_has(reg, data, size))))
		return NCCL_ERR_INVALID_ARG;
	*req = NULL;
	comm_progress(c);
	if (c->failed)
		return NCCL_ERR_REMOTE;
	st = size <= MNCCL_EAGER_MAX && !mnccl.no_stage ? stage_get(c) : -1;
	if (!c->fifo_cnt) {
		/* The receiver has not posted it yet, or its CTS is on its way: eager if it
		 * fits and the receiver has an eager slot free, else NCCL calls again. */
		if (st < 0 || !c->eager_ok || c->eager_sent - c->peer_freed >= MNCCL_EAGER_SLOTS)
			return NCCL_OK;
		err = send_staged(c, data, size, tag, NULL, 0, st, &q);
		if (err < 0)
			return post_res(c, err);
		*req = q;
		return NCCL_OK;
	}
	s = &c->fifo[c->fifo_head];
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
		*req = q;
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
	q->h = (struct req_head){ .kind = REQ_SEND, .used = 1, .c = c };
	q->size = (int)size;
	*req = q;
	return NCCL_OK;
}

nccl_res mnccl_irecv(void *recv_comm, int n, void **data, const size_t *sizes, const int *tags,
		     void **mhs, void **req)
{
	struct comm *c = recv_comm;
	struct mroc_send_wr wr = { .opcode = MROC_WR_SEND, .flags = MROC_SEND_SIGNALED };
	struct rreq *r = NULL;
	unsigned int slot, take = 0, b = c ? c->cts_next % MNCCL_CTS_RECVS : 0;
	struct cts *m;
	int k, err;

	if (!c || c->kind != COMM_RECV || !req || n < 1 || n > MNCCL_MAX_RECVS)
		return NCCL_ERR_INVALID_ARG;
	for (k = 0; k < n; k++) {
		struct mnccl_reg *reg = mhs ? mhs[k] : NULL;

		if (sizes[k] > MNCCL_MAX_MSG ||
		    (sizes[k] && (!reg || !mnccl_reg_has(reg, data[k], sizes[k]))))
			return NCCL_ERR_INVALID_ARG;
	}
	*req = NULL;
	comm_progress(c);
	if (c->failed)
		return NCCL_ERR_REMOTE;
	for (slot = 0; slot < MNCCL_MAX_REQS && c->rreqs[slot].h.used; slot++)
		;
	if (slot == MNCCL_MAX_REQS || c->cts_busy[b])
		return NCCL_OK;		/* 32 in flight, or no CTS buffer free: NCCL calls again */
	/* Eager sends waiting for this receive: it takes them below; the CTS says so. */
	if (c->seq == c->match_seq)
		take = c->unexp_cnt < (unsigned int)n ? c->unexp_cnt : (unsigned int)n;
	r = &c->rreqs[slot];
	m = (void *)((char *)mroc_mr_addr(c->ctl) + (size_t)b * CTS_STRIDE);
	memset(m, 0, sizeof(*m));
	m->magic = htole32(CTS_MAGIC);
	m->slot = (uint8_t)slot;
	m->n = (uint8_t)n;
	m->seq = htole16(c->seq);
	m->eager_rkey = htole32(mroc_mr_rkey(c->ctl));
	m->eager_freed = htole32(c->eager_freed + take);
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
	wr.sg = (struct mroc_sge){ m, (uint32_t)(offsetof(struct cts, b) + n * sizeof(m->b[0])),
				   mroc_mr_lkey(c->ctl) };
	err = mroc_post_send(c->qp, &wr);
	if (err == -EAGAIN)
		return NCCL_OK;
	if (err)
		return post_res(c, err);
	c->cts_busy[b] = 1;
	c->cts_next++;
	memset(r, 0, sizeof(*r));
	r->h = (struct req_head){ .kind = REQ_RECV, .used = 1, .c = c };
	r->n = (uint8_t)n;
	r->seq = c->seq++;
	c->seq_slot[r->seq % MNCCL_MAX_REQS] = (uint8_t)slot;
	for (k = 0; k < n; k++) {
		r->data[k] = data[k];
		r->tags[k] = tags[k];
		r->room[k] = sizes[k];
		r->reg[k] = sizes[k] ? mhs[k] : NULL;
	}
	for (; take && !c->failed; take--) {
		eager_deliver(c, r, c->unexp[c->unexp_head]);
		c->unexp_head = (c->unexp_head + 1) % MNCCL_EAGER_SLOTS;
		c->unexp_cnt--;
	}
	*req = r;
	return c->failed ? NCCL_ERR_REMOTE : NCCL_OK;
}

nccl_res mnccl_test(void *request, int *done, int *sizes)
{
	struct req_head *h = request;
	struct comm *c;

	if (!h || !done || !h->used)
		return NCCL_ERR_INVALID_ARG;
	c = h->c;
	*done = 0;
	if (!h->done)
		comm_progress(c);
	if (h->failed || (!h->done && c->failed)) {
		h->used = 0;
		return NCCL_ERR_REMOTE;
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
	h->used = 0;
	*done = 1;
	return NCCL_OK;
}
