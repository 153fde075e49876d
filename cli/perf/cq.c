// SPDX-License-Identifier: MIT
/*
 * mroc-perf: completions, posting, sleeping and the peer's messages during a
 * run.  Any completion with an error status, a DISCONNECTED or an error
 * event ends the test here, naming the status, the wr_id and the QP.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "perf.h"

static const char *wc_opcode_name(unsigned int op)
{
	static const char *const names[] = {
		[MROC_WC_WRITE] = "WRITE", [MROC_WC_WRITE_IMM] = "WRITE_IMM",
		[MROC_WC_SEND] = "SEND", [MROC_WC_SEND_IMM] = "SEND_IMM", [MROC_WC_READ] = "READ",
		[MROC_WC_RECV] = "RECV", [MROC_WC_RECV_RDMA_IMM] = "RECV_RDMA_IMM",
		[MROC_WC_CONNECTED] = "CONNECTED", [MROC_WC_DISCONNECTED] = "DISCONNECTED",
		[MROC_WC_EVENT_ERROR] = "EVENT_ERROR",
		[MROC_WC_ATOMIC_FETCH_ADD] = "ATOMIC_FETCH_ADD", [MROC_WC_ATOMIC_CMP_SWP] = "ATOMIC_CMP_SWP",
	};

	return op < sizeof(names) / sizeof(names[0]) && names[op] ? names[op] : "?";
}

static int peer_message(struct perf *pf, const struct oob_msg *m);

/*
 * A QP torn down under us is usually the peer stopping on an error of its
 * own, which it sends on the side channel as it goes: wait a little for it,
 * so that the first error printed is the cause, not the flush.
 */
static int peer_reason(struct perf *pf)
{
	struct pollfd p = { .fd = pf->oob.fd, .events = POLLIN };
	struct oob_msg m;

	if (pf->oob.fd < 0 || poll(&p, 1, PERF_REASON_MS) <= 0)
		return 0;
	if (oob_recv(&pf->oob, &m, PERF_REASON_MS) || m.type != OOB_ERROR)
		return 0;
	return peer_message(pf, &m);
}

/* 0 to keep the completion, 1 to drop it (a late CONNECTED), < 0 to end the test. */
static int cq_check(struct perf *pf, struct perf_qp *q, const struct mroc_wc *wc)
{
	int err;

	if (wc->opcode == MROC_WC_CONNECTED)
		return 1;
	if (wc->opcode == MROC_WC_DISCONNECTED || wc->opcode == MROC_WC_EVENT_ERROR ||
	    wc->status == MROC_WC_FLUSH_ERR) {
		err = peer_reason(pf);
		if (err)
			return err;
	}
	if (wc->opcode == MROC_WC_DISCONNECTED)
		return perf_fail(pf, -ECONNRESET, "qp %u (QPN 0x%04x): disconnected by the peer",
				 q->idx, mroc_qp_num(q->qp));
	if (wc->opcode == MROC_WC_EVENT_ERROR)
		return perf_fail(pf, -EIO, "qp %u (QPN 0x%04x): QP error event: %s (status %u)",
				 q->idx, mroc_qp_num(q->qp), mroc_wc_status_str(wc->status),
				 wc->status);
	if (wc->status != MROC_WC_SUCCESS)
		return perf_fail(pf, -EIO, "qp %u: %s completion with error: %s (status %u), wr_id 0x%"
				 PRIx64, q->idx, wc_opcode_name(wc->opcode),
				 mroc_wc_status_str(wc->status), wc->status, wc->wr_id);
	return 0;
}

int cq_poll(struct perf *pf, struct perf_qp *q, struct mroc_wc *wc, int max)
{
	int n, kept = 0;

	if (q->wcpos < q->nwc) {
		n = q->nwc - q->wcpos < max ? q->nwc - q->wcpos : max;
		memcpy(wc, &q->wc[q->wcpos], (size_t)n * sizeof(*wc));
		q->wcpos += n;
	} else {
		n = mroc_poll_cq(q->qp, wc, max);
		if (n < 0)
			return perf_fail(pf, n, "qp %u: mroc_poll_cq: %s", q->idx, mroc_strerror(n));
	}
	for (int i = 0; i < n; i++) {
		int r = cq_check(pf, q, &wc[i]);

		if (r < 0)
			return r;
		if (!r)
			wc[kept++] = wc[i];
	}
	return kept;
}

/* Into q's stash (empty when called); 1 when something came. */
static int stash_fill(struct perf *pf, struct perf_qp *q)
{
	int n = mroc_poll_cq(q->qp, q->wc, PERF_WC_BATCH);

	if (n < 0)
		return perf_fail(pf, n, "qp %u: mroc_poll_cq: %s", q->idx, mroc_strerror(n));
	q->nwc = n;
	q->wcpos = 0;
	return n > 0;
}

#define WAIT_OOB	UINT32_MAX		/* epoll data of the side channel */
#define WAIT_CTX	(UINT32_MAX - 1)	/* ... and of mrocd's connection */

/*
 * The epoll set of every QP's completion fd, the side channel and mrocd's
 * connection (a daemon that dies signals no completion fd), made at the
 * first sleep: each sleep then costs one epoll_wait, not a poll(2) that
 * registers on every QP's fd again.
 */
static int wait_set(struct perf *pf)
{
	struct epoll_event ev;
	int fd;

	if (pf->epfd >= 0)
		return 0;
	fd = epoll_create1(EPOLL_CLOEXEC);
	if (fd < 0)
		return perf_fail(pf, -errno, "epoll_create1: %s", strerror(errno));
	pf->epfd = fd;
	for (unsigned int i = 0; i < pf->nqp; i++) {
		ev = (struct epoll_event){ .events = EPOLLIN, .data.u32 = i };
		if (epoll_ctl(fd, EPOLL_CTL_ADD, mroc_cq_fd(pf->qp[i].qp), &ev))
			return perf_fail(pf, -errno, "qp %u: epoll_ctl: %s", i, strerror(errno));
	}
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u32 = WAIT_OOB };
	if (pf->oob.fd >= 0 && epoll_ctl(fd, EPOLL_CTL_ADD, pf->oob.fd, &ev))
		return perf_fail(pf, -errno, "side channel: epoll_ctl: %s", strerror(errno));
	ev = (struct epoll_event){ .events = EPOLLRDHUP, .data.u32 = WAIT_CTX };
	if (epoll_ctl(fd, EPOLL_CTL_ADD, mroc_ctx_fd(pf->ctx), &ev))
		return perf_fail(pf, -errno, "mrocd's socket: epoll_ctl: %s", strerror(errno));
	return 0;
}

/* Every QP's channel down again: a read only for those mrocd signalled (mroc_ack_notify). */
static int disarm_all(struct perf *pf)
{
	for (unsigned int i = 0; i < pf->nqp; i++) {
		int err = mroc_ack_notify(pf->qp[i].qp);

		if (err)
			return perf_fail(pf, err, "qp %u: mroc_ack_notify: %s", i, mroc_strerror(err));
	}
	return 0;
}

int cq_wait(struct perf *pf, int timeout_ms)
{
	struct epoll_event ev[8];
	int n, err;

	for (unsigned int i = 0; i < pf->nqp; i++)
		if (pf->qp[i].wcpos < pf->qp[i].nwc)
			return 0;
	/* One QP: libmroc's own arm / re-check / sleep / acknowledge sequence. */
	if (pf->nqp == 1) {
		err = mroc_wait_cq(pf->qp[0].qp, timeout_ms);
		if (err && err != -ETIMEDOUT)
			return perf_fail(pf, err, "mroc_wait_cq: %s", mroc_strerror(err));
		return 0;
	}
	err = wait_set(pf);
	if (err)
		return err;
	/*
	 * Several: arm each, look once more (a completion may have slipped in),
	 * sleep on all; then disarm all, so that mrocd signals none of them while
	 * this process is awake anyway (it would cost mrocd a write and this
	 * process a read and a spurious wake-up each).
	 */
	for (unsigned int i = 0; i < pf->nqp; i++) {
		err = mroc_req_notify(pf->qp[i].qp);
		if (err < 0)
			return perf_fail(pf, err, "qp %u: mroc_req_notify: %s", i, mroc_strerror(err));
	}
	/* (req_notify returns 1 when its CQ is not empty: the poll below sees that too.) */
	for (unsigned int i = 0; i < pf->nqp; i++) {
		err = stash_fill(pf, &pf->qp[i]);
		if (err)
			return err < 0 ? err : disarm_all(pf);
	}
	n = epoll_wait(pf->epfd, ev, (int)(sizeof(ev) / sizeof(ev[0])), timeout_ms);
	if (n < 0 && errno != EINTR)
		return perf_fail(pf, -errno, "epoll_wait: %s", strerror(errno));
	for (int i = 0; i < n; i++)
		if (ev[i].data.u32 == WAIT_CTX && (ev[i].events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR)))
			return perf_fail(pf, -ENOTCONN, "%s", mroc_strerror(-ENOTCONN));
	return disarm_all(pf);
}

int cq_wait_fired(struct perf *pf, int timeout_ms, unsigned int *fired, unsigned int max)
{
	struct epoll_event ev[64];
	int n, got = 0, err;

	err = wait_set(pf);
	if (err)
		return err;
	if (max > sizeof(ev) / sizeof(ev[0]))
		max = sizeof(ev) / sizeof(ev[0]);
	n = epoll_wait(pf->epfd, ev, (int)max, timeout_ms);
	if (n < 0 && errno != EINTR)
		return perf_fail(pf, -errno, "epoll_wait: %s", strerror(errno));
	pf->oob_fired = false;
	for (int i = 0; i < n; i++) {
		uint32_t k = ev[i].data.u32;

		if (k == WAIT_CTX && (ev[i].events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR)))
			return perf_fail(pf, -ENOTCONN, "%s", mroc_strerror(-ENOTCONN));
		if (k == WAIT_OOB)
			pf->oob_fired = true;
		if (k >= pf->nqp)
			continue;	/* the side channel: perf_peer_check reads it */
		err = mroc_ack_notify(pf->qp[k].qp);
		if (err)
			return perf_fail(pf, err, "qp %u: mroc_ack_notify: %s", k, mroc_strerror(err));
		fired[got++] = k;
	}
	return got;
}

static int peer_message(struct perf *pf, const struct oob_msg *m)
{
	if (m->type == OOB_ERROR) {
		pf->peer_failed = true;
		return perf_fail(pf, -ECONNABORTED, "%s: %s", pf->server ? "client" : "server",
				 m->u.status.text);
	}
	/* -b send_bw: the client receives while it waits for the server's DONE_ACK. */
	if (((m->type == OOB_DONE && pf->server) ||
	     (m->type == OOB_DONE_ACK && !pf->server && (pf->p.flags & OOB_F_BIDIR))) &&
	    !pf->done_seen) {
		pf->done = m->u.done;
		pf->done_seen = true;
		return 0;
	}
	return perf_fail(pf, -EPROTO, "side channel: unexpected %s from the %s",
			 oob_type_name(m->type), pf->server ? "client" : "server");
}

int perf_peer_check(struct perf *pf, uint64_t now)
{
	struct oob_msg m;
	int err;

	if (now < pf->next_peer_check)
		return 0;
	pf->next_peer_check = now + PERF_PEER_CHECK_NS;
	err = oob_readable(&pf->oob);
	if (err <= 0)
		return err;
	err = oob_recv(&pf->oob, &m, PERF_OOB_MS);
	if (err == -ECONNRESET)
		return perf_fail(pf, err, "side channel: the %s went away",
				 pf->server ? "client" : "server");
	if (err)
		return perf_fail(pf, err, "side channel: %s", strerror(-err));
	return peer_message(pf, &m);
}

int perf_recv(struct perf *pf, struct oob_msg *m, int timeout_ms)
{
	int err = oob_recv(&pf->oob, m, timeout_ms);

	if (err == -ECONNRESET)
		return perf_fail(pf, err, "side channel: the %s went away",
				 pf->server ? "client" : "server");
	if (err == -ETIMEDOUT)
		return perf_fail(pf, err, "side channel: no answer from the %s within %d s",
				 pf->server ? "client" : "server", timeout_ms / 1000);
	if (err)
		return perf_fail(pf, err, "side channel: %s", strerror(-err));
	if (m->type == OOB_ERROR)
		return peer_message(pf, m);
	return 0;
}

int perf_expect(struct perf *pf, uint16_t want, struct oob_msg *m, int timeout_ms)
{
	for (;;) {
		int err = perf_recv(pf, m, timeout_ms);

		if (err || m->type == want)
			return err;
		/* The server may hear the client's DONE before it looks for it. */
		if (!(m->type == OOB_DONE && pf->server))
			break;
		err = peer_message(pf, m);
		if (err)
			return err;
	}
	return perf_fail(pf, -EPROTO, "side channel: %s from the %s, expected %s",
			 oob_type_name(m->type), pf->server ? "client" : "server",
			 oob_type_name(want));
}

int perf_post_send(struct perf *pf, struct perf_qp *q, const struct mroc_send_wr *wr)
{
	int err = mroc_post_send(q->qp, wr);

	if (err && err != -EAGAIN)
		return perf_fail(pf, err, "qp %u: mroc_post_send (wr_id 0x%" PRIx64 "): %s", q->idx,
				 wr->wr_id, mroc_strerror(err));
	return err;
}

int perf_post_recv(struct perf *pf, struct perf_qp *q, uint64_t wr_id, void *addr, uint32_t len)
{
	struct mroc_recv_wr wr = { .wr_id = wr_id, .sg = { addr, len, q->lkey } };
	int err = mroc_post_recv(q->qp, &wr);

	if (err == -EAGAIN)
		return perf_fail(pf, err, "qp %u: receive queue full (%" PRIu64 " posted)", q->idx,
				 q->recv_posted - q->recv_done);
	if (err)
		return perf_fail(pf, err, "qp %u: mroc_post_recv: %s", q->idx, mroc_strerror(err));
	q->recv_posted++;
	return 0;
}

int perf_stalled(struct perf *pf, uint64_t now, uint64_t last, const char *what)
{
	uint64_t limit = (uint64_t)pf->o->timeout_s * 1000000000ull;

	if (now - last >= limit / 2 && pf->stall_told != last) {
		pf->stall_told = last;
		fprintf(stderr, "mroc-perf: stalling: no progress for %" PRIu64 " ms (%s)\n",
			(now - last) / 1000000, what);
	}
	if (now - last < limit)
		return 0;
	return perf_fail(pf, -ETIMEDOUT, "no progress for %u s (%s)", pf->o->timeout_s, what);
}

int perf_drain(struct perf *pf, uint64_t timeout_ns)
{
	uint64_t start = mono_ns();
	struct mroc_wc wc[PERF_WC_BATCH];

	for (;;) {
		bool all = true;

		for (unsigned int i = 0; i < pf->nqp; i++) {
			struct perf_qp *q = &pf->qp[i];
			int n = cq_poll(pf, q, wc, PERF_WC_BATCH);

			if (n < 0)
				return n;
			for (int k = 0; k < n; k++) {
				if (wc[k].opcode == MROC_WC_RECV)
					return perf_fail(pf, -EPROTO, "qp %u: a message arrived after the "
							 "run", q->idx);
				if (wc[k].wr_id >= q->completed)
					q->completed = wc[k].wr_id + 1;
			}
			if (q->completed < q->posted)
				all = false;
		}
		if (all)
			return 0;
		if (mono_ns() - start > timeout_ns)
			return perf_fail(pf, -ETIMEDOUT, "the last work requests did not complete");
		if (pf->o->sleep)
			cq_wait(pf, 10);
	}
}

int perf_mismatch(struct perf *pf, unsigned int qp, const struct verify_mismatch *m, size_t len)
{
	char text[OOB_TEXT];

	verify_format(text, sizeof(text), m, len);
	return perf_fail(pf, -EILSEQ, "verify: qp %u, %" PRIu64 "-byte messages: %s", qp, pf->size,
			 text);
}
