// SPDX-License-Identifier: MIT
/*
 * mroc-perf latency tests: write_lat, send_lat, read_lat, atomic_lat, one QP.
 *
 * Region of each side: [0, max) receives, [max, 2 max) and [2 max, 3 max)
 * are two source buffers used in turn, so a buffer is rewritten only after
 * the work request that sent from it two messages ago has completed (RDMA's
 * rule) without waiting for the last one's acknowledgement.
 *
 * write_lat is perftest's ping-pong: each side WRITEs into the other's
 * receive area and polls the last byte of its own, which carries a sequence
 * byte that differs from the previous message's.  A WRITE has no completion
 * at its target, so the receiver watches memory: the daemon writes the
 * shared region, we read the byte with an acquire load (it orders the reads
 * of the rest of the message after it).  With several paths the packets of a
 * message larger than the MTU may land in any order, so the last byte can
 * arrive before the others: --verify then waits (up to PERF_SETTLE_NS) for
 * every byte before declaring a mismatch; without --verify such a message's
 * time is the time of its last byte.
 * send_lat: SEND/RECV ping-pong.  read_lat: the time of one READ, one at a
 * time; atomic_lat the same for one atomic (atomic.c), its value always checked.  Ping-pong tests report half the round trip, as perftest does; both
 * sides measure (the server from its reply to the next ping).
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <string.h>

#include "perf.h"

#define RECV_TAG	(1ull << 63)
#define SPIN_CHECK	256	/* memory polls between clock reads */

struct lat_state {
	struct perf_qp *q;
	uint64_t size, max;
	bool verify;
	uint64_t deadline;
	uint64_t last_progress;
	bool stop;			/* server: the client's DONE came, and everything was served */
	uint64_t served;		/* server: pings answered */
};

static uint8_t *rcv_area(struct lat_state *s)
{
	return s->q->buf;
}

static uint8_t *src_area(struct lat_state *s, uint64_t i)
{
	return s->q->buf + s->max * (1 + i % 2);
}

/* What lat_poll found. */
enum { LAT_NONE = 0, LAT_SEND_DONE, LAT_RECV };

/*
 * Poll the CQ once: a send completion advances q->completed (LAT_SEND_DONE);
 * a RECV is copied to *recv (LAT_RECV); LAT_NONE when nothing came.
 */
static int lat_poll(struct perf *pf, struct lat_state *s, struct mroc_wc *recv)
{
	struct perf_qp *q = s->q;
	struct mroc_wc wc;
	int n = cq_poll(pf, q, &wc, 1);

	if (n <= 0)
		return n;
	s->last_progress = mono_ns();
	if (wc.opcode == MROC_WC_RECV && (wc.wr_id & RECV_TAG)) {
		if (!recv)
			return perf_fail(pf, -EPROTO, "qp 0: unexpected RECV completion");
		*recv = wc;
		q->recv_done++;
		return LAT_RECV;
	}
	if (wc.wr_id < q->completed || wc.wr_id >= q->posted)
		return perf_fail(pf, -EPROTO, "qp 0: unexpected completion (opcode %u, wr_id 0x%"
				 PRIx64 ")", wc.opcode, wc.wr_id);
	q->completed = wc.wr_id + 1;
	return LAT_SEND_DONE;
}

/* Housekeeping while waiting: the watchdog, the side channel, a stop from the client. */
static int lat_idle(struct perf *pf, struct lat_state *s, const char *what)
{
	uint64_t now = mono_ns();
	int err = perf_stalled(pf, now, s->last_progress, what);

	if (!err)
		err = perf_peer_check(pf, now);
	if (err)
		return err;
	if (pf->server && pf->done_seen) {
		uint64_t sent = pf->done.n ? pf->done.msgs[0] : 0;

		if (sent != s->served)
			return perf_fail(pf, -EPROTO, "the client sent %" PRIu64 " messages, the "
					 "server answered %" PRIu64, sent, s->served);
		s->stop = true;
	}
	return 0;
}

static void lat_pause(struct perf *pf)
{
	if (pf->o->sleep)
		sched_yield();
	else
		cpu_relax();
}

/* Before reusing the source buffer of message i: message i - 2 is done. */
static int lat_src_free(struct perf *pf, struct lat_state *s, uint64_t i)
{
	while (i >= 2 && s->q->completed < i - 1) {
		int err = lat_poll(pf, s, NULL);

		if (err < 0)
			return err;
		if (err == LAT_NONE) {
			err = lat_idle(pf, s, "waiting for a send completion");
			if (err)
				return err;
			if (pf->o->sleep)
				cq_wait(pf, 10);
		}
	}
	return 0;
}

static int lat_post(struct perf *pf, struct lat_state *s, uint8_t opcode, void *addr)
{
	struct perf_qp *q = s->q;
	struct mroc_send_wr wr = {
		.wr_id = q->posted,
		.opcode = opcode,
		.flags = MROC_SEND_SIGNALED,
		.sg = { addr, (uint32_t)s->size, q->lkey },
		.rkey = opcode == MROC_WR_SEND ? 0 : q->remote.rkey,
	};

	if (pf->t->verb == PERF_ATOMIC)
		atomic_wr(pf, q->posted, &wr);

	for (;;) {
		int err = perf_post_send(pf, q, &wr);

		if (!err)
			break;
		if (err != -EAGAIN)
			return err;
		err = lat_poll(pf, s, NULL);
		if (err < 0)
			return err;
		err = lat_idle(pf, s, "send queue full");
		if (err)
			return err;
	}
	q->posted++;
	return 0;
}

/* ---- write_lat ---------------------------------------------------------------------- */

static uint8_t seq_byte(uint64_t i)
{
	return (uint8_t)(i + 1);
}

/* The peer's message i is in (or, server, the client said it is done). */
static int lat_wait_byte(struct perf *pf, struct lat_state *s, uint64_t i)
{
	const uint8_t *last = rcv_area(s) + s->size - 1;
	uint8_t want = seq_byte(i);

	for (unsigned int spins = 1;; spins++) {
		if (__atomic_load_n(last, __ATOMIC_ACQUIRE) == want) {
			s->last_progress = mono_ns();
			return 0;
		}
		/*
		 * The CQ at every turn, though the WRITE we wait for makes no
		 * completion: past libmroc's spin budget an empty mroc_poll_cq
		 * yields the CPU, which mrocd's worker may be waiting for.
		 */
		int err = lat_poll(pf, s, NULL);

		if (err >= 0 && (spins % SPIN_CHECK == 0 || pf->o->sleep))
			err = lat_idle(pf, s, "write_lat: waiting for the peer's WRITE");
		if (err < 0)
			return err;
		if (s->stop)
			return 0;
		lat_pause(pf);
	}
}

/* --verify: message i from direction dir is all there, or the mismatch after PERF_SETTLE_NS. */
static int lat_check_write(struct perf *pf, struct lat_state *s, uint64_t i, unsigned int dir)
{
	uint64_t start = mono_ns(), stream = perf_stream(s->size, 0, dir);
	struct verify_mismatch mm;

	if (!s->verify)
		return 0;
	while (verify_check(rcv_area(s), s->size - 1, stream, i, &mm)) {
		if (mono_ns() - start > PERF_SETTLE_NS)
			return perf_mismatch(pf, 0, &mm, s->size);
		lat_pause(pf);
	}
	return 0;
}

static int lat_send_write(struct perf *pf, struct lat_state *s, uint64_t i, unsigned int dir)
{
	uint8_t *src = src_area(s, i);
	int err = lat_src_free(pf, s, i);

	if (err)
		return err;
	if (s->verify)
		verify_fill(src, s->size, perf_stream(s->size, 0, dir), i);
	src[s->size - 1] = seq_byte(i);
	return lat_post(pf, s, MROC_WR_WRITE, src);
}

static int write_lat_client(struct perf *pf, struct lat_state *s)
{
	for (uint64_t i = 0; !pf->iters || i < pf->iters; i++) {
		uint64_t t0;
		int err;

		if (s->deadline && mono_ns() >= s->deadline)
			break;
		t0 = mono_ns();
		err = lat_send_write(pf, s, i, 0);
		if (!err)
			err = lat_wait_byte(pf, s, i);
		if (err)
			return err;
		if (samples_add(&pf->lat, mono_ns() - t0))
			return perf_fail(pf, -ENOMEM, "out of memory for latency samples");
		err = lat_check_write(pf, s, i, 1);
		if (err)
			return err;
	}
	return 0;
}

static int write_lat_server(struct perf *pf, struct lat_state *s)
{
	uint64_t t_prev = 0;

	for (uint64_t i = 0; !pf->iters || i < pf->iters; i++) {
		int err = lat_wait_byte(pf, s, i);
		uint64_t t = mono_ns();

		if (err || s->stop)
			return err;
		if (i && samples_add(&pf->lat, t - t_prev))
			return perf_fail(pf, -ENOMEM, "out of memory for latency samples");
		err = lat_check_write(pf, s, i, 0);
		if (err)
			return err;
		t_prev = mono_ns();
		err = lat_send_write(pf, s, i, 1);
		if (err)
			return err;
		s->served = i + 1;
	}
	return 0;
}

/* ---- send_lat ----------------------------------------------------------------------- */

/* Keep PERF_LAT_RECVS receives posted, all into the receive area. */
static int lat_fill_recvs(struct perf *pf, struct perf_qp *q)
{
	while (q->recv_posted - q->recv_done < PERF_LAT_RECVS) {
		int err = perf_post_recv(pf, q, RECV_TAG | q->recv_posted, q->buf,
					 (uint32_t)pf->max_size);

		if (err)
			return err;
	}
	return 0;
}

static int lat_wait_recv(struct perf *pf, struct lat_state *s, struct mroc_wc *wc)
{
	for (unsigned int spins = 1;; spins++) {
		int err = lat_poll(pf, s, wc);

		if (err < 0 || err == LAT_RECV)
			return err < 0 ? err : 0;
		if (err == LAT_SEND_DONE)
			continue;
		if (spins % SPIN_CHECK == 0 || pf->o->sleep) {
			err = lat_idle(pf, s, "send_lat: waiting for the peer's SEND");
			if (err || s->stop)
				return err;
		}
		if (pf->o->sleep)
			cq_wait(pf, 10);
		else
			cpu_relax();
	}
}

static int lat_got_send(struct perf *pf, struct lat_state *s, const struct mroc_wc *wc,
			uint64_t i, unsigned int dir)
{
	struct verify_mismatch mm;

	if (wc->byte_len != s->size)
		return perf_fail(pf, -EPROTO, "qp 0: message %" PRIu64 " has %u bytes, expected %"
				 PRIu64, i, wc->byte_len, s->size);
	if (s->verify && verify_check(rcv_area(s), s->size, perf_stream(s->size, 0, dir), i, &mm))
		return perf_mismatch(pf, 0, &mm, s->size);
	return lat_fill_recvs(pf, s->q);
}

static int lat_send_send(struct perf *pf, struct lat_state *s, uint64_t i, unsigned int dir)
{
	uint8_t *src = src_area(s, i);
	int err = lat_src_free(pf, s, i);

	if (err)
		return err;
	if (s->verify)
		verify_fill(src, s->size, perf_stream(s->size, 0, dir), i);
	return lat_post(pf, s, MROC_WR_SEND, src);
}

static int send_lat_client(struct perf *pf, struct lat_state *s)
{
	struct mroc_wc wc;

	for (uint64_t i = 0; !pf->iters || i < pf->iters; i++) {
		uint64_t t0;
		int err;

		if (s->deadline && mono_ns() >= s->deadline)
			break;
		t0 = mono_ns();
		err = lat_send_send(pf, s, i, 0);
		if (!err)
			err = lat_wait_recv(pf, s, &wc);
		if (err)
			return err;
		if (samples_add(&pf->lat, mono_ns() - t0))
			return perf_fail(pf, -ENOMEM, "out of memory for latency samples");
		err = lat_got_send(pf, s, &wc, i, 1);
		if (err)
			return err;
	}
	return 0;
}

static int send_lat_server(struct perf *pf, struct lat_state *s)
{
	uint64_t t_prev = 0;
	struct mroc_wc wc;

	for (uint64_t i = 0; !pf->iters || i < pf->iters; i++) {
		int err = lat_wait_recv(pf, s, &wc);
		uint64_t t = mono_ns();

		if (err || s->stop)
			return err;
		if (i && samples_add(&pf->lat, t - t_prev))
			return perf_fail(pf, -ENOMEM, "out of memory for latency samples");
		err = lat_got_send(pf, s, &wc, i, 0);
		if (err)
			return err;
		t_prev = mono_ns();
		err = lat_send_send(pf, s, i, 1);
		if (err)
			return err;
		s->served = i + 1;
	}
	return 0;
}

/* ---- read_lat, atomic_lat ----------------------------------------------------------- */

static int read_lat_client(struct perf *pf, struct lat_state *s)
{
	uint64_t stream = perf_stream(s->size, 0, 1);
	bool atomic = pf->t->verb == PERF_ATOMIC;
	struct verify_mismatch mm;

	for (uint64_t i = 0; !pf->iters || i < pf->iters; i++) {
		uint64_t t0;
		int err;

		if (s->deadline && mono_ns() >= s->deadline)
			break;
		if (s->verify && !atomic)
			verify_poison(rcv_area(s), s->size, stream, 0);
		t0 = mono_ns();
		err = lat_post(pf, s, MROC_WR_READ, rcv_area(s));
		for (unsigned int spins = 1; !err && s->q->completed < s->q->posted; spins++) {
			err = lat_poll(pf, s, NULL);
			if (err)
				continue;	/* the READ (or an error) */
			if (spins % SPIN_CHECK == 0 || pf->o->sleep)
				err = lat_idle(pf, s, atomic ? "atomic_lat: waiting for an atomic" :
					       "read_lat: waiting for a READ");
			if (!err && pf->o->sleep)
				cq_wait(pf, 10);
		}
		if (err > 0)
			err = 0;
		if (err)
			return err;
		if (samples_add(&pf->lat, mono_ns() - t0))
			return perf_fail(pf, -ENOMEM, "out of memory for latency samples");
		if (atomic)
			err = atomic_check_result(pf, s->q, i, rcv_area(s));
		else if (s->verify && verify_check(rcv_area(s), s->size, stream, 0, &mm))
			err = perf_mismatch(pf, 0, &mm, s->size);
		if (err)
			return err;
	}
	return 0;
}

/* ---- entry points ------------------------------------------------------------------- */

int lat_prepare(struct perf *pf)
{
	struct perf_qp *q = &pf->qp[0];

	q->posted = q->completed = 0;
	q->received = 0;
	switch (pf->t->verb) {
	case PERF_WRITE:
		/* No stale sequence byte may look like the peer's first message. */
		memset(q->buf, 0, pf->size);
		return 0;
	case PERF_SEND:
		return lat_fill_recvs(pf, q);
	case PERF_READ:
		if (pf->server && (pf->p.flags & OOB_F_VERIFY))
			verify_fill(q->buf, pf->size, perf_stream(pf->size, 0, 1), 0);
		return 0;
	case PERF_ATOMIC:
		atomic_prepare(pf);
		return 0;
	}
	return 0;
}

static void lat_init(struct perf *pf, struct lat_state *s)
{
	memset(s, 0, sizeof(*s));
	s->q = &pf->qp[0];
	s->size = pf->size;
	s->max = pf->max_size;
	s->verify = pf->p.flags & OOB_F_VERIFY;
	s->last_progress = mono_ns();
	if (pf->duration_s)
		s->deadline = s->last_progress + pf->duration_s * 1000000000ull;
	samples_reset(&pf->lat);
}

int lat_client(struct perf *pf, struct lat_stats *st)
{
	struct lat_state s;
	int err;

	lat_init(pf, &s);
	switch (pf->t->verb) {
	case PERF_WRITE:
		err = write_lat_client(pf, &s);
		break;
	case PERF_SEND:
		err = send_lat_client(pf, &s);
		break;
	default:
		err = read_lat_client(pf, &s);
		break;
	}
	if (!err)
		err = perf_drain(pf, (uint64_t)pf->o->timeout_s * 1000000000ull);
	if (err)
		return err;
	/* One-sided operations: the whole round trip (perftest's read_lat, atomic_lat). */
	stats_lat(pf->lat.v, pf->lat.n,
		  pf->t->verb == PERF_READ || pf->t->verb == PERF_ATOMIC ? 1.0 : 2.0, st);
	return 0;
}

int lat_server(struct perf *pf, struct lat_stats *st, bool *measured)
{
	struct lat_state s;
	struct bw_result unused;
	int err;

	*measured = false;
	if (pf->t->verb == PERF_READ || pf->t->verb == PERF_ATOMIC)
		return bw_server(pf, &unused, measured);
	lat_init(pf, &s);
	err = pf->t->verb == PERF_WRITE ? write_lat_server(pf, &s) : send_lat_server(pf, &s);
	if (!err)
		err = perf_drain(pf, (uint64_t)pf->o->timeout_s * 1000000000ull);
	if (err)
		return err;
	stats_lat(pf->lat.v, pf->lat.n, 2.0, st);
	*measured = true;
	return 0;
}
