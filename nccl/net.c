// SPDX-License-Identifier: MIT
/*
 * Connections: what NCCL's listen/connect/accept and close become on mroc
 * QPs (transfers are xfer.c's, the wire formats comm.h's).
 *
 * A connection is one mroc QP (multipath, METAROCE unless mrocd says
 * otherwise), used one way, as NCCL uses it.  The receiver drives:
 *
 *   irecv   receiver --SEND "clear to send"--> sender   for the connection's first
 *           receive and every one with a buffer above MNCCL_EAGER_MAX: its request
 *           slot and sequence, how many sends fill the receives before it, per
 *           buffer: tag, size, rkey, offset; and the eager slots the receiver has
 *           freed so far (a CTS of no buffers tells only that: a credit)
 *   isend   sender --WRITE_IMM--> receiver              the payload straight into the
 *           buffer the first CTS in the queue has for that tag (a zero-byte send is a
 *           SEND_IMM: no region to name); imm = seq:16 | slot:8 | buffer:8, the
 *           completion's byte_len is the size
 *   isend   sender --WRITE_IMM--> receiver              no CTS for it (its receive
 *   (eager) sends none, or the CTS is on its way) and at most MNCCL_EAGER_MAX bytes:
 *           tag, size and payload into eager slot e of the receive comm's control
 *           region; imm = count:16 | 0xff:8 | e:8; the receiver copies it out into
 *           the receive it matches (xfer.c)
 *
 * so sends and receives match in posting order (the QP delivers in order),
 * tags only choose a buffer within the first receive, a large isend with
 * no CTS yet returns a NULL request (NCCL calls again), and nothing is ever
 * sent that the receiver has no room for.  A small send does not wait a
 * one-way trip for a CTS, and a small receive sends none: a small message is
 * one packet (and its ACK).  A send comm keeps MNCCL_CTS_RECVS receives posted for
 * CTS messages; a receive comm keeps a zero-length receive posted for every
 * WRITE_IMM that may be in flight.
 *
 * Connection set-up never blocks: listen creates the QP that will be the
 * receive comm and listens on a random service id; the handle carries that
 * id and this host's mrocd address; connect creates its QP, starts the
 * connection and keeps its state in NCCL's handle (NCCL passes the same
 * handle again) until the QP reports MROC_WC_CONNECTED.
 */
#include <endian.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "comm.h"

#define HANDLE_MAGIC	0x6d6e636cu	/* "mncl" */
#define HANDLE_VERSION	4		/* 3: CTS3, no CTS for small receives; 4: CTS4, 32 eager slots */
#define HANDLE_EAGER	0x1		/* flags: eager sends, small receives send no CTS */
#define CLOSE_DRAIN_S	5		/* closeSend waits this long for staged sends to leave */

/* What travels in NCCL's 128-byte handle, from listen to connect. */
struct handle {
	uint32_t magic;
	uint16_t version;
	uint8_t stage;			/* connect's: 0 = not started, 1 = connecting */
	uint8_t flags;			/* the listener's: HANDLE_EAGER */
	uint64_t service_id;
	char addr[INET6_ADDRSTRLEN];	/* the listener's mrocd */
	void *pending;			/* connect's comm (its handle) while it connects */
};
static_assert(sizeof(struct handle) <= NCCL_HANDLE_BYTES, "fits NCCL's handle");

/* ---- set-up ------------------------------------------------------------------------ */

static nccl_res errno_res(int err)
{
	return err == -ENOMEM ? NCCL_ERR_SYSTEM :
	       err == -ECONNREFUSED || err == -ECONNRESET || err == -ENOTCONN ? NCCL_ERR_REMOTE :
	       NCCL_ERR_SYSTEM;
}

/* Its requests still in flight die with it: the registrations they held are free. */
static void comm_release_regs(struct comm *c)
{
	unsigned int i;

	if (c->kind == COMM_RECV)
		for (i = 0; i < MNCCL_MAX_REQS; i++)
			if (c->rreqs[i].h.used)
				req_release_regs(&c->rreqs[i].h);
	if (c->kind == COMM_SEND && c->sreqs)
		for (i = 0; i < MNCCL_MAX_SREQS; i++)
			if (c->sreqs[i].h.used)
				req_release_regs(&c->sreqs[i].h);
}

static void comm_free(struct comm *c)
{
	if (!c)
		return;
	comm_untrack(c);
	comm_release_regs(c);
	if (c->qp)
		mroc_qp_destroy(c->qp);
	if (c->ctl)
		mroc_mr_dereg(c->ctl);
	free(c->sreqs);
	free(c);
}

/* A send or receive comm: its QP, control region and the receives it keeps posted. */
static int comm_create(enum comm_kind kind, struct comm **out)
{
	struct mroc_qp_attr attr = {
		.sz = sizeof(attr),
		.mode = MROC_QP_DEFAULT,
		.sq_depth = kind == COMM_SEND ? SEND_SQ_DEPTH : MNCCL_CTS_RECVS + 16,
		.rq_depth = kind == COMM_SEND ? MNCCL_CTS_RECVS : RECV_RQ_DEPTH,
	};
	struct comm *c = calloc(1, sizeof(*c));
	unsigned int i;
	int err = -ENOMEM;

	if (!c)
		return -ENOMEM;
	c->kind = kind;
	if (comm_track(c)) {
		free(c);
		return -ENOMEM;
	}
	if (kind == COMM_SEND && !(c->sreqs = calloc(MNCCL_MAX_SREQS, sizeof(*c->sreqs))))
		goto fail;
	c->qp = mroc_qp_create(mnccl.ctx, &attr);
	if (!c->qp) {
		err = -errno;
		goto fail;
	}
	/* The peer WRITEs eager sends into a receive comm's. */
	c->ctl = mroc_mr_alloc(mnccl.ctx, CTL_BYTES(kind), kind == COMM_RECV ?
			       MROC_ACCESS_LOCAL_WRITE | MROC_ACCESS_REMOTE_WRITE :
			       MROC_ACCESS_LOCAL_WRITE);
	if (!c->ctl) {
		err = -errno;
		goto fail;
	}
	for (i = 0; i < (kind == COMM_SEND ? MNCCL_CTS_RECVS : RECV_RQ_DEPTH); i++) {
		err = kind == COMM_SEND ? comm_post_cts_recv(c, i) : comm_post_imm_recv(c);
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
	c->eager = !mnccl.no_stage;
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
	err = comm_track(l);
	if (!err) {
		err = listen_arm(l);
		if (err)
			comm_untrack(l);
	}
	if (err) {
		MNCCL_WARN("cannot listen: %s", mroc_strerror(err));
		free(l);
		return errno_res(err);
	}
	memset(h, 0, NCCL_HANDLE_BYTES);
	h->magic = HANDLE_MAGIC;
	h->version = HANDLE_VERSION;
	h->service_id = l->service_id;
	h->flags = mnccl.no_stage ? 0 : HANDLE_EAGER;
	memcpy(h->addr, mnccl.addr, sizeof(h->addr));
	*listen_comm = l->handle;
	return NCCL_OK;
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
	/* Connecting: the handle names our comm (a garbage one names none, or not ours). */
	if (h->stage > 1 || (h->stage == 1 && !comm_get(h->pending, COMM_SEND)))
		return NCCL_ERR_INVALID_ARG;
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
		/* The receiver's choice: it sends no CTS for a small receive when it is on. */
		c->eager = h->flags & HANDLE_EAGER;
		h->pending = c->handle;
		h->stage = 1;
	}
	c = comm_get(h->pending, COMM_SEND);
	comm_progress(c);
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
	*send_comm = c->handle;
	return NCCL_OK;
}

nccl_res mnccl_accept(void *listen_comm, void **recv_comm)
{
	struct comm *l = comm_get(listen_comm, COMM_LISTEN), *c;
	int err;

	if (!recv_comm)
		return NCCL_ERR_INVALID_ARG;
	*recv_comm = NULL;
	if (!l)
		return NCCL_ERR_INVALID_ARG;	/* closed (or never a listen comm) */
	/* Each accept takes one connection; the next accept listens again. */
	if (!l->next && (err = listen_arm(l))) {
		MNCCL_WARN("cannot listen again: %s", mroc_strerror(err));
		return errno_res(err);
	}
	c = l->next;
	comm_progress(c);
	if (c->failed) {
		comm_free(c);
		l->next = NULL;
		return NCCL_ERR_REMOTE;
	}
	if (!c->connected)
		return NCCL_OK;
	l->next = NULL;
	*recv_comm = c->handle;
	return NCCL_OK;
}

nccl_res mnccl_close_listen(void *listen_comm)
{
	struct comm *l = comm_get(listen_comm, COMM_LISTEN);

	if (!l)
		return NCCL_ERR_INVALID_ARG;
	comm_free(l->next);
	comm_untrack(l);
	free(l);
	return NCCL_OK;
}

/*
 * Outstanding work is flushed by the QP's destruction; its requests die with
 * the comm.  Except staged (small) sends: NCCL was told they were done, so
 * they leave first (for at most CLOSE_DRAIN_S, in case the peer is gone).
 */
nccl_res mnccl_close_send(void *send_comm)
{
	struct comm *c = comm_get(send_comm, COMM_SEND);
	struct timespec now, end;

	if (!c)
		return NCCL_ERR_INVALID_ARG;	/* closed already (or never a send comm) */
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += CLOSE_DRAIN_S;
	while (c->staged && !c->failed) {
		comm_progress(c);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec > end.tv_nsec)) {
			MNCCL_WARN("closing with %u sends not acknowledged", c->staged);
			break;
		}
		sched_yield();
	}
	MNCCL_INFO("send comm %#llx closed: %u sends: %u eager, %u staged, %u zero-copy; "
		   "%u polls, %u empty", (unsigned long long)c->service_id, c->st.sends,
		   c->st.eager, c->st.staged, c->st.zcopy, c->st.polls, c->st.empty);
	comm_free(c);
	return NCCL_OK;
}

nccl_res mnccl_close_recv(void *recv_comm)
{
	struct comm *c = comm_get(recv_comm, COMM_RECV);

	if (!c)
		return NCCL_ERR_INVALID_ARG;	/* closed already (or never a receive comm) */
	MNCCL_INFO("receive comm %#llx closed: %u receives, %u CTSs, %u credit messages; "
		   "%u polls, %u empty", (unsigned long long)c->service_id, c->st.recvs, c->st.cts,
		   c->st.credits, c->st.polls, c->st.empty);
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
