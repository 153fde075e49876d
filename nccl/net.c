// SPDX-License-Identifier: MIT
/*
 * Connections and transfers: what NCCL's listen/connect/accept, isend/irecv,
 * test and close become on mroc QPs.
 *
 * A connection is one mroc QP (multipath, METAROCE unless mrocd says
 * otherwise), used one way, as NCCL uses it.  The receiver drives:
 *
 *   irecv   receiver --SEND "clear to send"--> sender   one per (multi-)receive:
 *           its request slot and sequence, and per buffer: tag, size, rkey, offset
 *   isend   sender --WRITE_IMM--> receiver              the payload straight into the
 *           buffer the first CTS in the queue has for that tag (a zero-byte send is a
 *           SEND_IMM: no region to name); imm = seq:16 | slot:8 | buffer:8, the
 *           completion's byte_len is the size
 *
 * so sends and receives match in posting order (the QP delivers in order),
 * tags only choose a buffer within the first receive, an isend with no CTS
 * yet returns a NULL request (NCCL calls again), and nothing is ever sent
 * that the receiver has no room for.  A send comm keeps MNCCL_CTS_RECVS
 * receives posted for CTS messages; a receive comm keeps a zero-length
 * receive posted for every WRITE_IMM that may be in flight.
 *
 * Connection set-up never blocks: listen creates the QP that will be the
 * receive comm and listens on a random service id; the handle carries that
 * id and this host's mrocd address; connect creates its QP, starts the
 * connection and keeps its state in NCCL's handle (NCCL passes the same
 * handle again) until the QP reports MROC_WC_CONNECTED.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "plugin.h"

#define HANDLE_MAGIC	0x6d6e636cu	/* "mncl" */
#define HANDLE_VERSION	1
#define CTS_MAGIC	0x43545331u	/* "CTS1" */
#define CTS_STRIDE	256		/* bytes per CTS buffer in a control region */
/* WRITE_IMMs in flight to one receive comm, at most, and a margin. */
#define RECV_RQ_DEPTH	(MNCCL_MAX_SREQS + 64)
#define SEND_SQ_DEPTH	(MNCCL_MAX_SREQS + 16)

/* What travels in NCCL's 128-byte handle, from listen to connect. */
struct handle {
	uint32_t magic;
	uint16_t version;
	uint8_t stage;			/* connect's: 0 = not started, 1 = connecting */
	uint8_t pad;
	uint64_t service_id;
	char addr[INET6_ADDRSTRLEN];	/* the listener's mrocd */
	struct comm *pending;		/* connect's comm while it connects (sender's copy) */
};
static_assert(sizeof(struct handle) <= NCCL_HANDLE_BYTES, "fits NCCL's handle");

/* One buffer of a CTS (little-endian on the wire). */
struct cts_buf {
	uint64_t off;			/* in the region of rkey */
	uint64_t size;			/* room: a send may be smaller, never larger */
	uint32_t rkey;
	int32_t tag;
};

struct cts {
	uint32_t magic;
	uint8_t slot;			/* the receive request's slot */
	uint8_t n;			/* buffers, 1 .. MNCCL_MAX_RECVS */
	uint16_t seq;			/* the receive's sequence number (low 16 bits) */
	struct cts_buf b[MNCCL_MAX_RECVS];
};
static_assert(sizeof(struct cts) == 8 + 24 * MNCCL_MAX_RECVS, "CTS layout");
static_assert(sizeof(struct cts) <= CTS_STRIDE, "a CTS fits its buffer");

enum comm_kind { COMM_LISTEN = 1, COMM_SEND, COMM_RECV };
enum req_kind { REQ_SEND = 1, REQ_RECV };

struct comm;

/* Both request kinds start with this: test() tells them apart. */
struct req_head {
	uint8_t kind;			/* enum req_kind */
	uint8_t used;
	uint8_t done;
	uint8_t failed;
	struct comm *c;
};

struct sreq {
	struct req_head h;
	int size;
};

struct rreq {
	struct req_head h;
	uint8_t n, ndone;
	uint16_t seq;
	uint8_t got[MNCCL_MAX_RECVS];
	int sizes[MNCCL_MAX_RECVS];
	void *data[MNCCL_MAX_RECVS];	/* for the copy out of a bounce region */
	struct mnccl_reg *reg[MNCCL_MAX_RECVS];
};

/* A CTS the sender has not used up: which of its buffers have had their send. */
struct cts_slot {
	struct cts m;
	uint8_t used[MNCCL_MAX_RECVS];
	uint8_t nused;
};

struct comm {
	enum comm_kind kind;
	struct mroc_qp *qp;
	struct mroc_mr *ctl;		/* CTS buffers: sent from (recv comm), received into (send) */
	uint64_t service_id;
	bool connected;
	int failed;			/* -errno once the connection failed */
	/* receive comm */
	struct rreq rreqs[MNCCL_MAX_REQS];
	uint16_t seq;
	/* send comm */
	struct cts_slot fifo[MNCCL_MAX_REQS];
	unsigned int fifo_head, fifo_cnt;
	struct sreq *sreqs;		/* [MNCCL_MAX_SREQS] */
	unsigned int sreq_hint;
	/* listen comm */
	struct comm *next;		/* the receive comm being connected */
};

/* ---- set-up ------------------------------------------------------------------------ */

static nccl_res errno_res(int err)
{
	return err == -ENOMEM ? NCCL_ERR_SYSTEM :
	       err == -ECONNREFUSED || err == -ECONNRESET || err == -ENOTCONN ? NCCL_ERR_REMOTE :
	       NCCL_ERR_SYSTEM;
}

static void comm_free(struct comm *c)
{
	if (!c)
		return;
	if (c->qp)
		mroc_qp_destroy(c->qp);
	if (c->ctl)
		mroc_mr_dereg(c->ctl);
	free(c->sreqs);
	free(c);
}

static int post_cts_recv(struct comm *c, unsigned int i)
{
	struct mroc_recv_wr wr = {
		.wr_id = i,
		.sg = { (char *)mroc_mr_addr(c->ctl) + (size_t)i * CTS_STRIDE, CTS_STRIDE,
			mroc_mr_lkey(c->ctl) },
	};

	return mroc_post_recv(c->qp, &wr);
}

static int post_imm_recv(struct comm *c)
{
	struct mroc_recv_wr wr = { .wr_id = 0 };

	return mroc_post_recv(c->qp, &wr);
}

/* A send or receive comm: its QP, control region and the receives it keeps posted. */
static int comm_create(enum comm_kind kind, struct comm **out)
{
	struct mroc_qp_attr attr = {
		.sz = sizeof(attr),
		.mode = MROC_QP_DEFAULT,
		.sq_depth = kind == COMM_SEND ? SEND_SQ_DEPTH : MNCCL_MAX_REQS + 16,
		.rq_depth = kind == COMM_SEND ? MNCCL_CTS_RECVS : RECV_RQ_DEPTH,
	};
	size_t nctl = kind == COMM_SEND ? MNCCL_CTS_RECVS : MNCCL_MAX_REQS;
	struct comm *c = calloc(1, sizeof(*c));
	unsigned int i;
	int err = -ENOMEM;

	if (!c)
		return -ENOMEM;
	c->kind = kind;
	if (kind == COMM_SEND && !(c->sreqs = calloc(MNCCL_MAX_SREQS, sizeof(*c->sreqs))))
		goto fail;
	c->qp = mroc_qp_create(mnccl.ctx, &attr);
	if (!c->qp) {
		err = -errno;
		goto fail;
	}
	c->ctl = mroc_mr_alloc(mnccl.ctx, nctl * CTS_STRIDE, MROC_ACCESS_LOCAL_WRITE);
	if (!c->ctl) {
		err = -errno;
		goto fail;
	}
	for (i = 0; i < (kind == COMM_SEND ? MNCCL_CTS_RECVS : RECV_RQ_DEPTH); i++) {
		err = kind == COMM_SEND ? post_cts_recv(c, i) : post_imm_recv(c);
		if (err)
			goto fail;
	}
	*out = c;
	return 0;
fail:
	comm_free(c);
	return err;
}

static uint64_t random_service_id(void)
{
	uint64_t v = 0;

	while (getrandom(&v, sizeof(v), 0) != sizeof(v))
		;
	/* The upper half 0xffffffff is mrocd's own (its control links). */
	return v & 0x7fffffffffffffffull;
}

/* The receive comm a listen comm hands to its next accept, listening. */
static int listen_arm(struct comm *l)
{
	struct comm *c;
	int err = comm_create(COMM_RECV, &c);

	if (err)
		return err;
	err = mroc_qp_listen(c->qp, l->service_id);
	if (err) {
		comm_free(c);
		return err;
	}
	c->service_id = l->service_id;
	l->next = c;
	return 0;
}

nccl_res mnccl_listen(int dev, void *handle, void **listen_comm)
{
	struct handle *h = handle;
	struct comm *l;
	int err;

	if (dev != 0 || !handle || !listen_comm)
		return NCCL_ERR_INVALID_ARG;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NCCL_ERR_SYSTEM;
	l->kind = COMM_LISTEN;
	l->service_id = random_service_id();
	err = listen_arm(l);
	if (err) {
		MNCCL_WARN("cannot listen: %s", mroc_strerror(err));
		free(l);
		return errno_res(err);
	}
	memset(h, 0, NCCL_HANDLE_BYTES);
	h->magic = HANDLE_MAGIC;
	h->version = HANDLE_VERSION;
	h->service_id = l->service_id;
	memcpy(h->addr, mnccl.addr, sizeof(h->addr));
	*listen_comm = l;
	return NCCL_OK;
}

/* ---- completions ---------------------------------------------------------------- */

static void fail_comm(struct comm *c, int err, const char *why)
{
	if (!c->failed)
		MNCCL_WARN("connection %#llx failed: %s", (unsigned long long)c->service_id, why);
	c->failed = err;
}

static void on_event(struct comm *c, const struct mroc_wc *wc)
{
	if (wc->opcode == MROC_WC_CONNECTED)
		c->connected = true;
	else if (wc->opcode == MROC_WC_DISCONNECTED)
		fail_comm(c, -ECONNRESET, "the peer closed it");
	else
		fail_comm(c, -ECONNREFUSED, mroc_wc_status_str(wc->status));
}

/* A CTS arrived (send comm): queue it, give its buffer back to the QP. */
static void on_cts(struct comm *c, const struct mroc_wc *wc)
{
	unsigned int i = (unsigned int)wc->wr_id;
	const struct cts *m;
	struct cts_slot *s;
	int k;

	if (i >= MNCCL_CTS_RECVS)
		return fail_comm(c, -EPROTO, "a receive completion names no CTS buffer");
	m = (const void *)((char *)mroc_mr_addr(c->ctl) + (size_t)i * CTS_STRIDE);
	if (wc->byte_len < offsetof(struct cts, b) || le32toh(m->magic) != CTS_MAGIC ||
	    !m->n || m->n > MNCCL_MAX_RECVS || m->slot >= MNCCL_MAX_REQS ||
	    wc->byte_len < offsetof(struct cts, b) + m->n * sizeof(struct cts_buf))
		return fail_comm(c, -EPROTO, "a malformed CTS");
	if (c->fifo_cnt == MNCCL_MAX_REQS)
		return fail_comm(c, -EPROTO, "more than 32 receives in flight");
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
	if (post_cts_recv(c, i))
		fail_comm(c, -EIO, "cannot repost a CTS buffer");
}

/* A payload arrived (receive comm): which receive and buffer the immediate names. */
static void on_data(struct comm *c, const struct mroc_wc *wc)
{
	unsigned int slot = (wc->imm >> 8) & 0xff, k = wc->imm & 0xff;
	struct rreq *r = slot < MNCCL_MAX_REQS ? &c->rreqs[slot] : NULL;

	if (post_imm_recv(c))
		fail_comm(c, -EIO, "cannot repost a receive");
	if (!r || !r->h.used || r->seq != wc->imm >> 16 || k >= r->n || r->got[k])
		return fail_comm(c, -EPROTO, "a write names no receive in flight");
	r->got[k] = 1;
	r->sizes[k] = (int)wc->byte_len;
	/* A bounce region (the application's buffer is not shared with mrocd): copy out. */
	if (r->reg[k] && r->reg[k]->copy && wc->byte_len)
		memcpy(r->data[k], mnccl_reg_laddr(r->reg[k], r->data[k]), wc->byte_len);
	if (++r->ndone == r->n)
		r->h.done = 1;
}

static void on_wc(struct comm *c, const struct mroc_wc *wc)
{
	if (wc->opcode == MROC_WC_CONNECTED || wc->opcode == MROC_WC_DISCONNECTED ||
	    wc->opcode == MROC_WC_EVENT_ERROR)
		return on_event(c, wc);
	if (wc->status != MROC_WC_SUCCESS) {
		if ((wc->opcode == MROC_WC_WRITE_IMM || wc->opcode == MROC_WC_SEND_IMM) &&
		    c->kind == COMM_SEND &&
		    wc->wr_id < MNCCL_MAX_SREQS)
			c->sreqs[wc->wr_id].h.failed = 1;
		return fail_comm(c, -EIO, mroc_wc_status_str(wc->status));
	}
	switch (wc->opcode) {
	case MROC_WC_RECV:
		if (c->kind == COMM_SEND)
			return on_cts(c, wc);
		if (wc->flags & MROC_WC_WITH_IMM)
			return on_data(c, wc);		/* a zero-byte send */
		return fail_comm(c, -EPROTO, "a SEND to a receive comm");
	case MROC_WC_RECV_RDMA_IMM:
		if (c->kind == COMM_RECV)
			return on_data(c, wc);
		return fail_comm(c, -EPROTO, "a write to a send comm");
	case MROC_WC_WRITE_IMM:
	case MROC_WC_SEND_IMM:
		if (wc->wr_id < MNCCL_MAX_SREQS)
			c->sreqs[wc->wr_id].h.done = 1;
		return;
	default:
		return;		/* SEND of a CTS: signaled only on error */
	}
}

/* Everything the comm's CQ holds, handled. */
static void progress(struct comm *c)
{
	struct mroc_wc wc[32];
	int n, i;

	do {
		n = mroc_poll_cq(c->qp, wc, 32);
		if (n < 0) {
			fail_comm(c, n, mroc_strerror(n));
			return;
		}
		for (i = 0; i < n; i++)
			on_wc(c, &wc[i]);
	} while (n == 32);
}

/* ---- connect / accept ---------------------------------------------------------------- */

nccl_res mnccl_connect(int dev, void *handle, void **send_comm)
{
	struct handle *h = handle;
	struct comm *c;
	int err;

	if (dev != 0 || !h || !send_comm || h->magic != HANDLE_MAGIC ||
	    h->version != HANDLE_VERSION || memchr(h->addr, 0, sizeof(h->addr)) == NULL)
		return NCCL_ERR_INVALID_ARG;
	*send_comm = NULL;
	if (h->stage == 0) {
		err = comm_create(COMM_SEND, &c);
		if (err) {
			MNCCL_WARN("cannot create a QP: %s", mroc_strerror(err));
			return errno_res(err);
		}
		err = mroc_qp_connect(c->qp, h->addr, h->service_id);
		if (err) {
			MNCCL_WARN("cannot connect to %s: %s", h->addr, mroc_strerror(err));
			comm_free(c);
			return errno_res(err);
		}
		c->service_id = h->service_id;
		h->pending = c;
		h->stage = 1;
	}
	c = h->pending;
	progress(c);
	if (c->failed) {
		MNCCL_WARN("connection to %s refused or failed", h->addr);
		comm_free(c);
		h->pending = NULL;
		h->stage = 0;
		return NCCL_ERR_REMOTE;
	}
	if (!c->connected)
		return NCCL_OK;		/* NCCL calls again */
	h->pending = NULL;
	h->stage = 0;
	MNCCL_INFO("connected to %s service %#llx", h->addr, (unsigned long long)c->service_id);
	*send_comm = c;
	return NCCL_OK;
}

nccl_res mnccl_accept(void *listen_comm, void **recv_comm)
{
	struct comm *l = listen_comm, *c;
	int err;

	if (!l || l->kind != COMM_LISTEN || !recv_comm)
		return NCCL_ERR_INVALID_ARG;
	*recv_comm = NULL;
	/* Each accept takes one connection; the next accept listens again. */
	if (!l->next && (err = listen_arm(l))) {
		MNCCL_WARN("cannot listen again: %s", mroc_strerror(err));
		return errno_res(err);
	}
	c = l->next;
	progress(c);
	if (c->failed) {
		comm_free(c);
		l->next = NULL;
		return NCCL_ERR_REMOTE;
	}
	if (!c->connected)
		return NCCL_OK;
	l->next = NULL;
	*recv_comm = c;
	return NCCL_OK;
}

nccl_res mnccl_close_listen(void *listen_comm)
{
	struct comm *l = listen_comm;

	if (!l || l->kind != COMM_LISTEN)
		return NCCL_ERR_INVALID_ARG;
	comm_free(l->next);
	free(l);
	return NCCL_OK;
}

/* Outstanding work is flushed by the QP's destruction; its requests die with the comm. */
nccl_res mnccl_close_send(void *send_comm)
{
	struct comm *c = send_comm;

	if (!c || c->kind != COMM_SEND)
		return NCCL_ERR_INVALID_ARG;
	comm_free(c);
	return NCCL_OK;
}

nccl_res mnccl_close_recv(void *recv_comm)
{
	struct comm *c = recv_comm;

	if (!c || c->kind != COMM_RECV)
		return NCCL_ERR_INVALID_ARG;
	comm_free(c);
	return NCCL_OK;
}

/* ---- registrations -------------------------------------------------------------------- */

nccl_res mnccl_reg_mr(void *comm, void *data, size_t size, int type, void **mh)
{
	struct mnccl_reg *r;
	nccl_res res;

	if (!mh || !(type & NCCL_PTR_HOST_MEM))
		return NCCL_ERR_INVALID_ARG;
	res = mnccl_reg(data, size, &r);
	if (res == NCCL_OK)
		*mh = r;
	return res;
}

nccl_res mnccl_dereg_mr(void *comm, void *mh)
{
	return mh ? mnccl_dereg(mh) : NCCL_OK;
}

/* ---- transfers ---------------------------------------------------------------------- */

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

nccl_res mnccl_isend(void *send_comm, void *data, size_t size, int tag, void *mh, void **req)
{
	struct comm *c = send_comm;
	struct mnccl_reg *reg = mh;
	struct mroc_send_wr wr = { .opcode = MROC_WR_WRITE_IMM, .flags = MROC_SEND_SIGNALED };
	struct cts_slot *s;
	struct sreq *q;
	int k, err;

	if (!c || c->kind != COMM_SEND || !req || size > MNCCL_MAX_MSG ||
	    (size && (!reg || !mnccl_reg_has(reg, data, size))))
		return NCCL_ERR_INVALID_ARG;
	*req = NULL;
	progress(c);
	if (c->failed)
		return NCCL_ERR_REMOTE;
	if (!c->fifo_cnt)
		return NCCL_OK;		/* the receiver has not posted it yet */
	s = &c->fifo[c->fifo_head];
	for (k = 0; k < s->m.n && (s->used[k] || s->m.b[k].tag != tag); k++)
		;
	if (k == s->m.n) {
		MNCCL_WARN("a send with tag %d matches no buffer of the first receive posted", tag);
		return NCCL_ERR_INVALID_USAGE;
	}
	if (size > s->m.b[k].size) {
		MNCCL_WARN("a send of %zu bytes into a receive of %llu", size,
			   (unsigned long long)s->m.b[k].size);
		return NCCL_ERR_INVALID_USAGE;
	}
	q = sreq_get(c);
	if (!q)
		return NCCL_OK;
	if (size) {
		/* A bounce region: the payload must be in it before the QP reads it. */
		if (reg->copy)
			memcpy(mnccl_reg_laddr(reg, data), data, size);
		wr.sg = (struct mroc_sge){ mnccl_reg_laddr(reg, data), (uint32_t)size,
					   mroc_mr_lkey(reg->mr) };
	}
	wr.wr_id = (uint64_t)(q - c->sreqs);
	if (size) {
		wr.rkey = s->m.b[k].rkey;
		wr.remote_offset = s->m.b[k].off;
	} else {
		wr.opcode = MROC_WR_SEND_IMM;	/* no bytes: no region to name (the receive may have none) */
	}
	wr.imm = (uint32_t)s->m.seq << 16 | (uint32_t)s->m.slot << 8 | (uint32_t)k;
	err = mroc_post_send(c->qp, &wr);
	if (err == -EAGAIN)
		return NCCL_OK;
	if (err) {
		fail_comm(c, err, mroc_strerror(err));
		return errno_res(err);
	}
	s->used[k] = 1;
	if (++s->nused == s->m.n) {
		c->fifo_head = (c->fifo_head + 1) % MNCCL_MAX_REQS;
		c->fifo_cnt--;
	}
	q->h = (struct req_head){ .kind = REQ_SEND, .used = 1, .c = c };
	q->size = (int)size;
	*req = q;
	return NCCL_OK;
}

nccl_res mnccl_irecv(void *recv_comm, int n, void **data, const size_t *sizes, const int *tags,
		     void **mhs, void **req)
{
	struct comm *c = recv_comm;
	struct mroc_send_wr wr = { .opcode = MROC_WR_SEND };
	struct rreq *r = NULL;
	struct cts *m;
	unsigned int slot;
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
	progress(c);
	if (c->failed)
		return NCCL_ERR_REMOTE;
	for (slot = 0; slot < MNCCL_MAX_REQS && c->rreqs[slot].h.used; slot++)
		;
	if (slot == MNCCL_MAX_REQS)
		return NCCL_OK;		/* 32 in flight: NCCL calls again */
	r = &c->rreqs[slot];
	m = (void *)((char *)mroc_mr_addr(c->ctl) + (size_t)slot * CTS_STRIDE);
	memset(m, 0, sizeof(*m));
	m->magic = htole32(CTS_MAGIC);
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
	wr.wr_id = slot;
	wr.sg = (struct mroc_sge){ m, (uint32_t)(offsetof(struct cts, b) + n * sizeof(m->b[0])),
				   mroc_mr_lkey(c->ctl) };
	err = mroc_post_send(c->qp, &wr);
	if (err == -EAGAIN)
		return NCCL_OK;
	if (err) {
		fail_comm(c, err, mroc_strerror(err));
		return errno_res(err);
	}
	memset(r, 0, sizeof(*r));
	r->h = (struct req_head){ .kind = REQ_RECV, .used = 1, .c = c };
	r->n = (uint8_t)n;
	r->seq = c->seq++;
	for (k = 0; k < n; k++) {
		r->data[k] = data[k];
		r->reg[k] = sizes[k] ? mhs[k] : NULL;
	}
	*req = r;
	return NCCL_OK;
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
		progress(c);
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
