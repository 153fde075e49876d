// SPDX-License-Identifier: MIT
/*
 * mroc-perf bandwidth tests: write_bw, send_bw, read_bw, atomic_bw (atomic.c
 * says what its atomics do and how they are checked).
 *
 * The client keeps up to tx depth work requests outstanding on every QP,
 * asks for a completion every cq_mod-th one (and the last), and counts a
 * signaled completion as completing every work request before it (they
 * complete in order).  Message k of QP q uses local slot k % slots and remote
 * slot k % rslots of the regions.  The peak is the best 1 ms window, the
 * average is all bytes over the whole run (perftest's definitions).
 *
 * --verify: every work request is signaled and at most `slots` are in
 * flight, so a slot is rewritten only after its message completed.
 *   write: the client stops after each batch of rslots messages (once all
 *     completed, they are in the server's memory) and sends VERIFY over the
 *     side channel; the server checks every byte of the batch and answers.
 *   send:  the server checks each message as its RECV completes.
 *   read:  the server fills slot s with message s once per size; the client
 *     poisons a slot before each READ and checks it when the READ completes.
 * Time spent in VERIFY exchanges is not counted in the bandwidth.
 *
 * -b (bidirectional, perftest's duplex): the server runs bw_client too, so
 * both sides post at once.  send_bw: both sides also keep receives posted
 * (bw_reap handles the peer's messages beside its own completions) and,
 * once their own sends are done, receive the rest (bw_recv_rest) until the
 * peer's count: -n, or the number its DONE / DONE_ACK carries after -D.
 * Each side's row adds both directions.  Not with --verify: a region is the
 * source of one direction and the target of the other.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#define RECV_TAG	(1ull << 63)

static unsigned int umin(unsigned int a, unsigned int b)
{
	return a < b ? a : b;
}

static uint8_t *slot_addr(struct perf_qp *q, uint64_t seq, uint64_t size)
{
	return q->buf + (size_t)(seq % q->slots) * size;
}

/* ---- client ------------------------------------------------------------------------ */

struct bw_state {
	enum perf_verb verb;
	uint64_t size;
	bool verify;
	unsigned int depth, cq_mod;
	uint64_t limit;			/* messages per QP; UINT64_MAX until a duration ends */
	uint64_t batch, batch_start, batch_end;	/* write --verify checkpoints */
	uint64_t deadline;
	uint64_t verify_ns;		/* spent in checkpoints */
};

static int bw_post(struct perf *pf, struct bw_state *s, struct perf_qp *q)
{
	uint64_t seq = q->posted;
	uint8_t *addr = slot_addr(q, seq, s->size);
	bool last = seq + 1 == s->limit || seq + 1 == s->batch_end;
	struct mroc_send_wr wr = {
		.wr_id = seq,
		.flags = (seq + 1) % s->cq_mod == 0 || last ? MROC_SEND_SIGNALED : 0,
		.sg = { addr, (uint32_t)s->size, q->lkey },
		.rkey = q->remote.rkey,
		.remote_offset = (seq % q->rslots) * s->size,
	};
	uint64_t stream = perf_stream(s->size, q->idx, 0);

	switch (s->verb) {
	case PERF_WRITE:
		wr.opcode = MROC_WR_WRITE;
		if (s->verify)
			verify_fill(addr, s->size, stream, seq);
		break;
	case PERF_SEND:
		wr.opcode = MROC_WR_SEND;
		wr.rkey = 0;
		wr.remote_offset = 0;
		if (s->verify)
			verify_fill(addr, s->size, stream, seq);
		break;
	case PERF_READ:
		wr.opcode = MROC_WR_READ;
		if (s->verify)
			verify_poison(addr, s->size, perf_stream(s->size, q->idx, 1), seq % q->rslots);
		break;
	case PERF_ATOMIC:
		atomic_wr(pf, seq, &wr);
		break;
	}
	return perf_post_send(pf, q, &wr);
}

static int bw_recv_one(struct perf *pf, struct perf_qp *q, const struct mroc_wc *wc);
static int bw_fill_recvs(struct perf *pf);

/* Handle q's completions (-b send_bw: the peer's messages too); returns how many, or < 0. */
static int bw_reap(struct perf *pf, struct bw_state *s, struct perf_qp *q)
{
	struct mroc_wc wc[PERF_WC_BATCH];
	struct verify_mismatch mm;
	int n = cq_poll(pf, q, wc, PERF_WC_BATCH), err;
	bool recvs = false;

	for (int i = 0; i < n; i++) {
		uint64_t seq = wc[i].wr_id;

		if (wc[i].opcode == MROC_WC_RECV && (pf->p.flags & OOB_F_BIDIR)) {
			err = bw_recv_one(pf, q, &wc[i]);
			if (err)
				return err;
			recvs = true;
			continue;
		}
		if (wc[i].opcode == MROC_WC_RECV || seq < q->completed || seq >= q->posted)
			return perf_fail(pf, -EPROTO, "qp %u: unexpected completion (opcode %u, "
					 "wr_id 0x%" PRIx64 ")", q->idx, wc[i].opcode, seq);
		q->completed = seq + 1;
		if (s->verb == PERF_READ && s->verify &&
		    verify_check(slot_addr(q, seq, s->size), s->size,
				 perf_stream(s->size, q->idx, 1), seq % q->rslots, &mm))
			return perf_mismatch(pf, q->idx, &mm, s->size);
		if (s->verb == PERF_ATOMIC && s->verify) {
			err = atomic_check_result(pf, q, seq, slot_addr(q, seq, s->size));
			if (err)
				return err;
		}
	}
	if (recvs) {
		err = bw_fill_recvs(pf);
		if (err)
			return err;
	}
	return n;
}

/* write --verify: the batch is complete everywhere; the server checks it. */
static int bw_checkpoint(struct perf *pf, struct bw_state *s)
{
	struct oob_msg m = { .type = OOB_VERIFY };
	uint64_t t = mono_ns();
	int err;

	m.u.verify.first = s->batch_start;
	m.u.verify.count = s->batch_end - s->batch_start;
	err = oob_send(&pf->oob, &m);
	if (err)
		return perf_fail(pf, err, "side channel: %s", strerror(-err));
	err = perf_expect(pf, OOB_VERIFY_ACK, &m, PERF_OOB_MS);
	if (err)
		return err;
	if (m.u.status.status) {
		pf->peer_failed = true;
		return perf_fail(pf, m.u.status.status, "server: %s", m.u.status.text);
	}
	s->batch_start = s->batch_end;
	s->batch_end = s->batch_end + s->batch < s->limit ? s->batch_end + s->batch : s->limit;
	s->verify_ns += mono_ns() - t;
	return 0;
}

static void bw_setup(struct perf *pf, struct bw_state *s)
{
	memset(s, 0, sizeof(*s));
	s->verb = pf->t->verb;
	s->size = pf->size;
	s->verify = pf->p.flags & OOB_F_VERIFY;
	s->depth = pf->p.tx_depth;
	s->limit = pf->iters ? pf->iters : UINT64_MAX;
	for (unsigned int i = 0; i < pf->nqp; i++) {
		struct perf_qp *q = &pf->qp[i];

		q->posted = q->completed = 0;
		q->slots = perf_slots(q->len, s->size);
		q->rslots = perf_slots(q->remote.region_len, s->size);
		if (s->verify) {
			s->depth = umin(s->depth, q->slots);
			if (s->verb == PERF_WRITE)
				s->batch = s->batch ? umin((unsigned int)s->batch, q->rslots) : q->rslots;
		}
	}
	if (s->verify && s->verb == PERF_SEND)
		s->depth = umin(s->depth, pf->recv_slots);
	s->cq_mod = s->verify ? 1 : umin(pf->p.cq_mod, s->depth);
	s->batch_end = s->batch && s->batch < s->limit ? s->batch : s->limit;
}

/* The duration is over: finish at a signaled work request (or the batch end). */
static void bw_stop(struct perf *pf, struct bw_state *s)
{
	uint64_t max = 0;

	for (unsigned int i = 0; i < pf->nqp; i++)
		if (pf->qp[i].posted > max)
			max = pf->qp[i].posted;
	if (s->batch)
		s->limit = s->batch_end;
	else
		s->limit = (max + s->cq_mod - 1) / s->cq_mod * s->cq_mod;
	if (!s->limit)
		s->limit = s->cq_mod;
	if (s->batch_end > s->limit)
		s->batch_end = s->limit;
}

/*
 * --sleep over several QPs (without --verify or -b): event-driven, so a pass
 * costs what the QPs with something to do cost, not every QP's (issue #22:
 * at 16 clients x 250 QPs each client polled 250 CQs per pass, and armed,
 * polled and disarmed 250 channels per sleep).  A QP whose window is full
 * and whose CQ is empty is armed and left alone until its channel fires;
 * the others are visited every pass, and one epoll_wait per pass takes the
 * fired channels (it sleeps when no QP has anything to do).
 */
struct ready {
	unsigned int *list, n;		/* QPs to visit next pass */
	bool *armed;			/* [nqp]: armed, so not in the list */
	unsigned int narmed;
};

/* QP i has nothing to do until a completion: arm it, or keep it if one came meanwhile. */
static int ready_arm(struct perf *pf, struct ready *r, unsigned int i, unsigned int *keep)
{
	int err = mroc_req_notify(pf->qp[i].qp);

	if (err < 0)
		return perf_fail(pf, err, "qp %u: mroc_req_notify: %s", i, mroc_strerror(err));
	if (err > 0) {
		r->list[(*keep)++] = i;
		err = mroc_ack_notify(pf->qp[i].qp);	/* visited anyway: no signal */
		return err ? perf_fail(pf, err, "qp %u: mroc_ack_notify: %s", i,
				       mroc_strerror(err)) : 0;
	}
	r->armed[i] = true;
	r->narmed++;
	return 0;
}

/* Every QP not done at limit into the list, disarmed; *ndone: those done. */
static int ready_all(struct perf *pf, struct ready *r, uint64_t limit, unsigned int *ndone)
{
	*ndone = 0;
	r->n = 0;
	for (unsigned int i = 0; i < pf->nqp; i++) {
		if (r->armed[i]) {
			int err = mroc_ack_notify(pf->qp[i].qp);

			if (err)
				return perf_fail(pf, err, "qp %u: mroc_ack_notify: %s", i,
						 mroc_strerror(err));
			r->armed[i] = false;
		}
		if (pf->qp[i].completed >= limit)
			(*ndone)++;
		else
			r->list[r->n++] = i;
	}
	r->narmed = 0;
	return 0;
}

/* One pass over the listed QPs: post, reap, and arm those left with nothing to do. */
static int ready_pass(struct perf *pf, struct bw_state *s, struct ready *r, uint64_t *done_msgs,
		      unsigned int *ndone, bool *progress, bool *drained)
{
	unsigned int keep = 0;

	for (unsigned int k = 0; k < r->n; k++) {
		unsigned int i = r->list[k];
		struct perf_qp *q = &pf->qp[i];
		uint64_t before = q->completed;
		bool ring_full = false;
		int err = 0, n;

		while (q->posted < s->limit && q->posted - q->completed < s->depth) {
			err = bw_post(pf, s, q);
			if (err == -EAGAIN) {
				ring_full = true;
				break;
			}
			if (err)
				return err;
			q->posted++;
			*progress = true;
		}
		n = bw_reap(pf, s, q);
		if (n < 0)
			return n;
		*progress |= n > 0;
		*done_msgs += q->completed - before;
		if (q->completed >= s->limit) {
			*ndone += before < s->limit;
			continue;	/* done: nothing more will come */
		}
		/* (keep <= k: the list is rewritten behind the reading.) */
		if (n == PERF_WC_BATCH || ring_full ||
		    (q->posted < s->limit && q->posted - q->completed < s->depth)) {
			*drained &= n < PERF_WC_BATCH;
			r->list[keep++] = i;
			continue;
		}
		err = ready_arm(pf, r, i, &keep);
		if (err)
			return err;
	}
	r->n = keep;
	return 0;
}

/*
 * What a stall names: the QPs not done, how many of them wait armed (r: the
 * ready loop's; NULL in the plain loop), and the first few with their counts
 * (mroc-cli -d qp shows the rings of that QPN).
 */
static const char *stuck_qps(struct perf *pf, const struct bw_state *s, const struct ready *r,
			     char *buf, size_t len)
{
	unsigned int left = 0, shown = 0;
	size_t off;

	for (unsigned int i = 0; i < pf->nqp; i++)
		left += pf->qp[i].completed < s->limit;
	off = (size_t)snprintf(buf, len, "bandwidth client: %u QPs not done", left);
	if (r && off < len)
		off += (size_t)snprintf(buf + off, len - off, ", %u armed", r->narmed);
	for (unsigned int i = 0; i < pf->nqp && shown < 3 && off < len; i++) {
		const struct perf_qp *q = &pf->qp[i];

		if (q->completed >= s->limit)
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%s qp %u (QPN 0x%04x) %" PRIu64
					" posted, %" PRIu64 " completed%s", shown ? ";" : ":", i,
					mroc_qp_num(q->qp), q->posted, q->completed,
					r && r->armed[i] ? ", armed" : "");
		shown++;
	}
	return buf;
}

/*
 * How long a client with every QP armed may sleep: until its -D ends or its
 * stall timeout, at most READY_WAIT_MAX_MS.  Completions, the side channel
 * and mrocd's socket wake it before (cq.c's wait set).  It was 10 ms, so a
 * client woke 100 times a second with nothing to do (and libmroc, finding its
 * CQs empty, looked at mrocd's socket each time): at 16 x 250, 4 of every 5
 * wake-ups of bench-scale's clients (issue #22).
 */
#define READY_WAIT_MAX_MS	1000

static int ready_wait_ms(const struct perf *pf, const struct bw_state *s, uint64_t now,
			 uint64_t last_progress)
{
	uint64_t until = now + READY_WAIT_MAX_MS * 1000000ull, t;

	if (s->deadline && s->limit == UINT64_MAX && s->deadline < until)
		until = s->deadline;
	t = last_progress + (uint64_t)pf->o->timeout_s * 1000000000ull;
	if (t < until)
		until = t;
	return until <= now ? 0 : (int)((until - now + 999999) / 1000000);
}

static int bw_client_ready(struct perf *pf, struct bw_state *s, struct bw_result *res)
{
	struct ready r = { 0 };
	struct peak peak;
	uint64_t t0, t_last, last_progress, done_msgs = 0;
	unsigned int ndone = 0, fired[64];
	char what[200];
	int err = 0, got;

	r.list = calloc(pf->nqp, sizeof(*r.list));
	r.armed = calloc(pf->nqp, sizeof(*r.armed));
	if (!r.list || !r.armed) {
		err = perf_fail(pf, -ENOMEM, "out of memory");
		goto out;
	}
	for (unsigned int i = 0; i < pf->nqp; i++)
		r.list[r.n++] = i;
	peak_init(&peak, PEAK_WINDOW_NS);
	t0 = t_last = last_progress = mono_ns();
	s->deadline = pf->duration_s ? t0 + pf->duration_s * 1000000000ull : 0;
	peak_update(&peak, t0, 0);
	while (ndone < pf->nqp) {
		uint64_t now = mono_ns(), msgs = done_msgs;
		bool progress = false, drained = true;

		if (s->deadline && now >= s->deadline && s->limit == UINT64_MAX) {
			bw_stop(pf, s);
			/* Every QP again: each may have its last messages to post. */
			err = ready_all(pf, &r, s->limit, &ndone);
			if (err)
				goto out;
		}
		err = ready_pass(pf, s, &r, &done_msgs, &ndone, &progress, &drained);
		if (err)
			goto out;
		if (r.narmed) {
			got = cq_wait_fired(pf, r.n ? 0 : ready_wait_ms(pf, s, now, last_progress),
					    fired, 64);
			if (got < 0) {
				err = got;
				goto out;
			}
			for (int j = 0; j < got; j++) {
				if (!r.armed[fired[j]])
					continue;	/* visited already (an old signal) */
				r.armed[fired[j]] = false;
				r.narmed--;
				r.list[r.n++] = fired[j];
			}
		}
		if (done_msgs != msgs)
			t_last = now;
		if (progress) {
			last_progress = now;
			if (drained)	/* as in bw_client */
				peak_update(&peak, now, done_msgs * s->size);
			continue;
		}
		/* (the QPs named only in a stall, from half its timeout: stuck_qps walks them all) */
		err = now - last_progress < (uint64_t)pf->o->timeout_s * 500000000ull ? 0 :
		      perf_stalled(pf, now, last_progress, stuck_qps(pf, s, &r, what, sizeof(what)));
		if (pf->oob_fired)
			pf->next_peer_check = 0;	/* the peer said something: now */
		if (!err)
			err = perf_peer_check(pf, now);
		if (err)
			goto out;
		if (r.n)
			cpu_relax();	/* a QP whose ring was full (-EAGAIN) */
	}
	stats_bw(res, s->size, done_msgs, pf->nqp, t_last - t0, &peak);
out:
	for (unsigned int i = 0; r.armed && i < pf->nqp; i++)
		if (r.armed[i])
			mroc_ack_notify(pf->qp[i].qp);
	free(r.list);
	free(r.armed);
	return err;
}

int bw_client(struct perf *pf, struct bw_result *res)
{
	struct bw_state s;
	struct peak peak;
	uint64_t t0, t_last, last_progress, done_msgs = 0;
	char what[200];
	int err;

	bw_setup(pf, &s);
	if (pf->o->sleep && pf->nqp > 1 && !s.verify && !(pf->p.flags & OOB_F_BIDIR))
		return bw_client_ready(pf, &s, res);
	peak_init(&peak, PEAK_WINDOW_NS);
	t0 = t_last = last_progress = mono_ns();
	s.deadline = pf->duration_s ? t0 + pf->duration_s * 1000000000ull : 0;
	peak_update(&peak, t0, 0);

	for (;;) {
		uint64_t now = mono_ns(), cap = s.batch_end < s.limit ? s.batch_end : s.limit;
		bool progress = false, all_done = true, batch_done = true, drained = true;

		if (s.deadline && now >= s.deadline && s.limit == UINT64_MAX) {
			bw_stop(pf, &s);
			cap = s.batch_end < s.limit ? s.batch_end : s.limit;
		}
		done_msgs = 0;
		for (unsigned int i = 0; i < pf->nqp; i++) {
			struct perf_qp *q = &pf->qp[i];

			while (q->posted < cap && q->posted - q->completed < s.depth) {
				err = bw_post(pf, &s, q);
				if (err == -EAGAIN)
					break;
				if (err)
					return err;
				q->posted++;
				progress = true;
			}
			err = bw_reap(pf, &s, q);
			if (err < 0)
				return err;
			if (err > 0) {
				progress = true;
				t_last = now;
			}
			if (err == PERF_WC_BATCH)
				drained = false;
			done_msgs += q->completed;
			if (q->completed < s.limit)
				all_done = false;
			if (q->completed < s.batch_end)
				batch_done = false;
		}
		if (progress) {
			last_progress = now;
			/*
			 * Only with the CQs drained are the bytes counted those done by
			 * now: a backlog read later would inflate the next window.
			 */
			if (drained)
				peak_update(&peak, now - s.verify_ns, done_msgs * s.size);
		}
		if (s.batch && batch_done) {
			err = bw_checkpoint(pf, &s);
			if (err)
				return err;
			last_progress = mono_ns();
		}
		if (all_done)
			break;
		if (!progress) {
			err = now - last_progress < (uint64_t)pf->o->timeout_s * 500000000ull ? 0 :
			      perf_stalled(pf, now, last_progress,
					   stuck_qps(pf, &s, NULL, what, sizeof(what)));
			if (!err)
				err = perf_peer_check(pf, now);
			if (err)
				return err;
			if (pf->o->sleep)
				cq_wait(pf, 10);
			else
				cpu_relax();
		}
	}
	stats_bw(res, s.size, done_msgs, pf->nqp, t_last - t0 - s.verify_ns, &peak);
	return 0;
}

/* ---- server ------------------------------------------------------------------------ */

/* send_bw: receives posted on every QP up to recv_slots, each for max_size bytes. */
static int bw_fill_recvs(struct perf *pf)
{
	unsigned int distinct = perf_slots(pf->region_len, pf->max_size);

	for (unsigned int i = 0; i < pf->nqp; i++) {
		struct perf_qp *q = &pf->qp[i];

		while (q->recv_posted - q->recv_done < pf->recv_slots) {
			uint64_t slot = q->recv_posted % distinct;
			int err = perf_post_recv(pf, q, RECV_TAG | slot,
						 q->buf + slot * pf->max_size,
						 (uint32_t)pf->max_size);

			if (err)
				return err;
		}
	}
	return 0;
}

int bw_prepare(struct perf *pf)
{
	bool verify = pf->p.flags & OOB_F_VERIFY;

	for (unsigned int i = 0; i < pf->nqp; i++) {
		struct perf_qp *q = &pf->qp[i];

		q->received = 0;
		q->slots = perf_slots(q->len, pf->size);
		if (pf->t->verb == PERF_ATOMIC)
			atomic_prepare(pf);
		if (pf->t->verb == PERF_READ && verify)
			for (unsigned int s = 0; s < q->slots; s++)
				verify_fill(q->buf + (size_t)s * pf->size, pf->size,
					    perf_stream(pf->size, q->idx, 1), s);
	}
	return pf->t->verb == PERF_SEND ? bw_fill_recvs(pf) : 0;
}

/* write --verify: check messages first..first+count-1 of every QP. */
static int bw_check_batch(struct perf *pf, const struct oob_verify *v)
{
	struct verify_mismatch mm;

	if (!v->count || v->count > PERF_SLOTS_MAX)
		return perf_fail(pf, -EPROTO, "side channel: VERIFY of %" PRIu64 " messages",
				 v->count);
	for (unsigned int i = 0; i < pf->nqp; i++) {
		struct perf_qp *q = &pf->qp[i];

		if (v->count > q->slots)
			return perf_fail(pf, -EPROTO, "side channel: VERIFY of %" PRIu64
					 " messages, the region holds %u", v->count, q->slots);
		for (uint64_t k = v->first; k < v->first + v->count; k++)
			if (verify_check(slot_addr(q, k, pf->size), pf->size,
					 perf_stream(pf->size, q->idx, 0), k, &mm))
				return perf_mismatch(pf, q->idx, &mm, pf->size);
	}
	return 0;
}

/*
 * A passive server's QP i: its CQ taken dry (a failed QP ends the test in
 * cq_poll), then its completion channel armed, so that the server hears of
 * the next completion, which only a failure makes, without looking.
 */
static int server_arm(struct perf *pf, unsigned int i)
{
	struct mroc_wc wc[PERF_WC_BATCH];
	int err;

	for (;;) {
		err = mroc_req_notify(pf->qp[i].qp);
		if (err < 0)
			return perf_fail(pf, err, "qp %u: mroc_req_notify: %s", i, mroc_strerror(err));
		if (!err)
			return 0;
		/* Something came meanwhile: disarmed, taken, armed again. */
		err = mroc_ack_notify(pf->qp[i].qp);
		if (err)
			return perf_fail(pf, err, "qp %u: mroc_ack_notify: %s", i, mroc_strerror(err));
		err = cq_poll(pf, &pf->qp[i], wc, PERF_WC_BATCH);
		if (err < 0)
			return err;
	}
}

/*
 * write_bw, read_bw: the server's memory is the target; answer VERIFY until
 * DONE.  It sleeps on the side channel and every QP's completion channel at
 * once (cq.c's wait set) and looks at a QP only when its channel fires
 * (issue #22: a sweep of every CQ each 100 ms, each empty poll a candidate
 * for sched_yield, cost 16 servers of 250 QPs 4.4 % of a core at load 12
 * doing nothing: 5,853 sched_yields and 6,164 context switches in 4 s).
 */
static int bw_server_passive(struct perf *pf)
{
	unsigned int fired[64];
	struct oob_msg m;
	int err, n = 0;

	for (unsigned int i = 0; i < pf->nqp; i++) {
		err = server_arm(pf, i);
		if (err)
			return err;
	}
	while (!pf->done_seen) {
		/* The fired QPs of the last turn, once its message was read (below). */
		for (int k = 0; k < n; k++) {
			err = server_arm(pf, fired[k]);
			if (err)
				return err;
		}
		n = cq_wait_fired(pf, 1000, fired, sizeof(fired) / sizeof(fired[0]));
		if (n < 0)
			return n;
		/*
		 * The side channel first: a client that is done sends DONE and
		 * then destroys its QPs, whose disconnection may be here before
		 * DONE is; so a QP that fired waits up to PERF_REASON_MS for a
		 * message (DONE ends the test, ERROR says why) before its CQ is read.
		 */
		err = n > 0 ? oob_wait(&pf->oob, PERF_REASON_MS) : oob_readable(&pf->oob);
		if (err < 0)
			return perf_fail(pf, err, "side channel: %s", strerror(-err));
		if (!err)
			continue;
		err = oob_recv(&pf->oob, &m, 100);
		if (err == -ETIMEDOUT)
			continue;	/* part of a message: the rest comes */
		if (err == -ECONNRESET)
			return perf_fail(pf, err, "side channel: the client went away");
		if (err)
			return perf_fail(pf, err, "side channel: %s", strerror(-err));
		if (m.type == OOB_VERIFY) {
			int bad = bw_check_batch(pf, &m.u.verify);

			err = oob_send_status(&pf->oob, OOB_VERIFY_ACK, bad, bad ? pf->err : NULL);
			if (bad)
				return bad;
			if (err)
				return perf_fail(pf, err, "side channel: %s", strerror(-err));
			continue;
		}
		if (m.type == OOB_ERROR) {
			pf->peer_failed = true;
			return perf_fail(pf, -ECONNABORTED, "client: %s", m.u.status.text);
		}
		if (m.type != OOB_DONE)
			return perf_fail(pf, -EPROTO, "side channel: unexpected %s from the client",
					 oob_type_name(m.type));
		pf->done = m.u.done;
		pf->done_seen = true;
	}
	return pf->t->verb == PERF_ATOMIC ? atomic_check_counters(pf) : 0;
}

static int bw_recv_one(struct perf *pf, struct perf_qp *q, const struct mroc_wc *wc)
{
	uint64_t slot = wc->wr_id & ~RECV_TAG;
	struct verify_mismatch mm;

	if (wc->opcode != MROC_WC_RECV || !(wc->wr_id & RECV_TAG))
		return perf_fail(pf, -EPROTO, "qp %u: unexpected completion (opcode %u, wr_id 0x%"
				 PRIx64 ")", q->idx, wc->opcode, wc->wr_id);
	if (wc->byte_len != pf->size)
		return perf_fail(pf, -EPROTO, "qp %u: message %" PRIu64 " has %u bytes, expected %"
				 PRIu64, q->idx, q->received, wc->byte_len, pf->size);
	if ((pf->p.flags & OOB_F_VERIFY) &&
	    verify_check(q->buf + slot * pf->max_size, pf->size, perf_stream(pf->size, q->idx, 0),
			 q->received, &mm))
		return perf_mismatch(pf, q->idx, &mm, pf->size);
	q->received++;
	q->recv_done++;
	return 0;
}

/* Every QP got what the client sent (iterations, or the counts in its DONE). */
static bool bw_all_received(struct perf *pf, int *err)
{
	for (unsigned int i = 0; i < pf->nqp; i++) {
		uint64_t want = pf->iters;

		if (pf->done_seen)
			want = i < pf->done.n ? pf->done.msgs[i] : 0;
		else if (!want)
			return false;
		if (pf->qp[i].received > want) {
			*err = perf_fail(pf, -EPROTO, "qp %u: %" PRIu64 " messages received, the "
					 "client sent %" PRIu64, i, pf->qp[i].received, want);
			return false;
		}
		if (pf->qp[i].received < want)
			return false;
	}
	return true;
}

/* send_bw: receive, check, re-post; measure from the first completion. */
static int bw_recv_loop(struct perf *pf, struct bw_result *res)
{
	uint64_t t_start = mono_ns(), t_first = 0, first_msgs = 0, t_last = 0, total = 0;
	uint64_t last_progress = t_start;
	struct mroc_wc wc[PERF_WC_BATCH];
	struct peak peak;
	int err = 0;

	peak_init(&peak, PEAK_WINDOW_NS);
	while (!bw_all_received(pf, &err)) {
		uint64_t now = mono_ns();
		bool progress = false, drained = true;

		if (err)
			return err;
		for (unsigned int i = 0; i < pf->nqp; i++) {
			struct perf_qp *q = &pf->qp[i];
			int n = cq_poll(pf, q, wc, PERF_WC_BATCH);

			if (n < 0)
				return n;
			for (int k = 0; k < n; k++) {
				err = bw_recv_one(pf, q, &wc[k]);
				if (err)
					return err;
			}
			if (n == PERF_WC_BATCH)
				drained = false;
			if (n) {
				total += (uint64_t)n;
				progress = true;
				err = bw_fill_recvs(pf);
				if (err)
					return err;
			}
		}
		if (progress) {
			if (!t_first) {
				t_first = now;
				first_msgs = total;
			}
			t_last = last_progress = now;
			if (drained)	/* as in bw_client */
				peak_update(&peak, now, total * pf->size);
			continue;
		}
		err = perf_stalled(pf, now, last_progress, "send_bw receiver");
		if (!err)
			err = perf_peer_check(pf, now);
		if (err)
			return err;
		if (pf->o->sleep)
			cq_wait(pf, 10);
		else
			cpu_relax();
	}
	if (err)
		return err;
	/* The first batch only starts the clock. */
	if (total > first_msgs && t_last > t_first)
		stats_bw(res, pf->size, total - first_msgs, pf->nqp, t_last - t_first, &peak);
	else
		stats_bw(res, pf->size, total, pf->nqp, t_last - t_start, NULL);
	res->msgs = total;
	res->iters = (total + pf->nqp - 1) / pf->nqp;
	return 0;
}

int bw_recv_rest(struct perf *pf)
{
	struct bw_result unused;

	return bw_recv_loop(pf, &unused);
}

int bw_server(struct perf *pf, struct bw_result *res, bool *measured)
{
	int err;

	*measured = false;
	if (pf->p.flags & OOB_F_BIDIR) {
		/* -b: the server runs the client's loop too; its row adds both. */
		err = bw_client(pf, res);
		if (!err && pf->t->verb == PERF_SEND)
			err = bw_recv_rest(pf);
		*measured = !err;
		return err;
	}
	if (pf->t->verb != PERF_SEND)
		return bw_server_passive(pf);
	err = bw_recv_loop(pf, res);
	if (err)
		return err;
	*measured = true;
	return 0;
}
