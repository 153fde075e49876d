// SPDX-License-Identifier: MIT
/*
 * misuse: a net plugin called wrongly gets its error code, never a crash, a
 * hang or a write outside a buffer (2 ranks: rank 0 sends, rank 1 receives).
 *  - each rank alone: a listen comm closed twice, accept on a closed listen comm
 *    (ncclInvalidArgument); connect with a handle whose connect state is garbage
 *    (ncclInvalidArgument); connect to the handle of a listener that is gone (an
 *    error, within 10 s);
 *  - between them: deregMr of the region a receive or a zero-copy send in flight
 *    uses (ncclInvalidUsage, the transfer then completes intact), test() of a request
 *    already completed, irecv of 0 or more than maxRecvs buffers (ncclInvalidArgument),
 *    a send larger than the receive's buffer: refused at the isend when the CTS names
 *    the size (ncclInvalidUsage), an error at the receiver for an eager one, the bytes
 *    after the buffer untouched; closeSend/closeRecv twice (ncclInvalidArgument);
 *    test() of a completed request whose slot a new request took, isend/irecv on a
 *    closed comm and test() of a request whose comm closed (ncclInvalidArgument: a
 *    handle that names nothing, as a closed comm's close is).
 */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define BIG	(64 << 10)	/* a receive above the plugin's eager limit: it sends a CTS */

static void fillp(uint8_t *p, size_t len, int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 9));
}

static void expectp(const uint8_t *p, size_t len, int seed, const char *what)
{
	for (size_t i = 0; i < len; i++)
		H_CHECK(p[i] == (uint8_t)(seed * 31 + i * 7 + (i >> 9)), "%s: byte %zu of %zu differs",
			what, i, len);
}

static void *send_retry(struct hnet *n, void *sc, void *data, size_t size, int tag, void *mh)
{
	double end = h_now() + H.timeout_s;
	void *req = NULL;

	while (!req) {
		H_CHECK(!n->isend(n, sc, data, size, tag, mh, &req), "isend of %zu bytes", size);
		H_CHECK(req || h_now() < end, "isend never accepted");
	}
	return req;
}

static void *recv_retry(struct hnet *n, void *rc, void *data, size_t size, int tag, void *mh)
{
	double end = h_now() + H.timeout_s;
	void *req = NULL;

	while (!req) {
		H_CHECK(!n->irecv(n, rc, 1, &data, &size, &tag, &mh, &req), "irecv of %zu bytes",
			size);
		H_CHECK(req || h_now() < end, "irecv never accepted");
	}
	return req;
}

/* Calls on comms closed, and handles that name no connection to make. */
static void alone(struct hnet *n)
{
	char handle[NCCL_HANDLE_BYTES], bad[NCCL_HANDLE_BYTES];
	void *lc, *rc = NULL, *sc = NULL;
	double end;
	int r = 0;

	H_CHECK(!n->listen(n, handle, &lc) && lc, "listen");
	H_CHECK(!n->close_listen(n, lc), "closeListen");
	r = n->accept(n, lc, &rc);
	H_CHECK(r == NCCL_ERR_INVALID_ARG && !rc, "accept on a closed listen comm: %d, comm %p", r,
		rc);
	r = n->close_listen(n, lc);
	H_CHECK(r == NCCL_ERR_INVALID_ARG, "closeListen twice: %d", r);
	printf("ok: misuse: accept on a closed listen comm and closeListen twice: "
	       "ncclInvalidArgument\n");

	/* The plugin's connect keeps its state in the handle (handle.stage, .pending, after
	 * magic, version, flags, service id and the address): garbage there names no comm. */
	H_CHECK(!n->listen(n, handle, &lc) && lc, "listen");
	memcpy(bad, handle, sizeof(bad));
	memset(bad + 6, 1, 1);					/* stage: "connecting" */
	memset(bad + 16 + 46 + 2, 0x5a, 8);			/* pending: garbage */
	r = n->connect(n, bad, &sc);
	H_CHECK(r == NCCL_ERR_INVALID_ARG && !sc, "connect with a garbage connect state: %d", r);
	memset(bad, 0xa5, sizeof(bad));
	r = n->connect(n, bad, &sc);
	H_CHECK(r == NCCL_ERR_INVALID_ARG && !sc, "connect with a garbage handle: %d", r);
	printf("ok: misuse: connect with a garbage handle, or a garbage connect state in a "
	       "handle: ncclInvalidArgument\n");

	/* The listener is gone (as a dead process's is): connect fails, it does not hang. */
	H_CHECK(!n->close_listen(n, lc), "closeListen");
	end = h_now() + 10;
	while (!(r = n->connect(n, handle, &sc)) && !sc) {
		H_CHECK(h_now() < end, "connect to a closed listener: no answer in 10 s");
		sched_yield();
	}
	H_CHECK(r && !sc, "connect to a closed listener: %d, comm %p", r, sc);
	printf("ok: misuse: connect to the handle of a closed listener: error %d\n", r);
}

static void receiver(struct hnet *n, struct h_link *l, uint8_t *buf)
{
	void *mh, *req, *stale, *bad[9];
	size_t sizes[9];
	int tags[9] = { 0 }, done = 0, sz = 0, r;

	for (int k = 0; k < 9; k++) {
		bad[k] = buf;
		sizes[k] = 16;
	}
	H_CHECK(!n->reg(n, l->rc, buf, 4 * BIG, &mh), "regMr");
	r = n->irecv(n, l->rc, 9, bad, sizes, tags, bad, &req);
	H_CHECK(r == NCCL_ERR_INVALID_ARG, "irecv of 9 buffers (maxRecvs 8): %d", r);
	r = n->irecv(n, l->rc, 0, bad, sizes, tags, bad, &req);
	H_CHECK(r == NCCL_ERR_INVALID_ARG, "irecv of 0 buffers: %d", r);
	r = n->irecv(n, l->rc, 1, NULL, sizes, tags, bad, &req);
	H_CHECK(r == NCCL_ERR_INVALID_ARG, "irecv with no data array: %d", r);
	r = n->irecv(n, l->rc, 1, bad, sizes, NULL, bad, &req);
	H_CHECK(r == NCCL_ERR_INVALID_ARG, "irecv with no tags array: %d", r);
	printf("ok: misuse: irecv of 0 or 9 buffers, or with no data or tags array: "
	       "ncclInvalidArgument\n");

	/* deregMr while a receive into it is in flight: refused; the receive still lands. */
	memset(buf, 0, 4 * BIG);
	req = recv_retry(n, l->rc, buf, BIG, 1, mh);
	r = n->dereg(n, l->rc, mh);
	H_CHECK(r == NCCL_ERR_INVALID_USAGE, "deregMr of a region a receive in flight uses: %d", r);
	h_put("posted", 1, "", 1);
	h_wait(n, req, &sz);
	H_CHECK(sz == BIG, "%d bytes", sz);
	expectp(buf, BIG, 1, "the receive after deregMr was refused");
	r = n->test(n, req, &done, &sz);
	H_CHECK(r == NCCL_ERR_INVALID_ARG, "test() of a request already completed: %d", r);
	printf("ok: misuse: deregMr of a region in use: ncclInvalidUsage, the receive landed "
	       "intact; test() of a completed request: ncclInvalidArgument\n");

	/* A larger send into a receive with a CTS: refused at the sender, then the right one. */
	memset(buf, 0, 4 * BIG);
	stale = req;
	req = recv_retry(n, l->rc, buf, BIG, 2, mh);
	/* The completed request's slot is the new receive's: its handle still names nothing
	 * (a pointer reused would have answered for the new receive, or ended it). */
	r = n->test(n, stale, &done, &sz);
	H_CHECK(r == NCCL_ERR_INVALID_ARG, "test() of a completed request whose slot a new "
		"receive took: %d, done %d", r, done);
	printf("ok: misuse: test() of a completed request whose slot a new receive took: "
	       "ncclInvalidArgument, the new receive unaffected\n");
	h_put("posted2", 1, "", 1);
	h_wait(n, req, &sz);
	H_CHECK(sz == BIG, "%d bytes", sz);
	expectp(buf, BIG, 2, "after a larger send was refused");

	/* An eager send larger than its receive: an error here, nothing written past it. */
	memset(buf, 0xee, 4 * BIG);
	req = recv_retry(n, l->rc, buf, 1024, 3, mh);
	h_put("posted3", 1, "", 1);
	{
		double end = h_now() + H.timeout_s;

		done = 0;
		while (!(r = n->test(n, req, &done, &sz)) && !done)
			H_CHECK(h_now() < end, "a receive smaller than its eager send never ended");
	}
	/* Reported as NCCL's socket transport reports a truncated message: ncclInvalidUsage. */
	H_CHECK(r == NCCL_ERR_INVALID_USAGE && !done,
		"a 4 KiB send into a 1 KiB receive: test %d, done %d (%d bytes)", r, done, sz);
	for (size_t i = 1024; i < 4 * BIG; i++)
		H_CHECK(buf[i] == 0xee, "byte %zu after a 1 KiB receive was written", i);
	printf("ok: misuse: a 4 KiB eager send into a 1 KiB receive: ncclInvalidUsage at the "
	       "receiver's test(), no byte written past the buffer\n");
	H_CHECK(!n->close_recv(n, l->rc), "closeRecv");
	r = n->close_recv(n, l->rc);
	H_CHECK(r == NCCL_ERR_INVALID_ARG, "closeRecv twice: %d", r);
	H_CHECK(!n->dereg(n, NULL, mh), "deregMr");
}

static void sender(struct hnet *n, struct h_link *l, uint8_t *buf)
{
	void *mh, *req = NULL;
	int done = 0, sz, r;
	char c;

	H_CHECK(!n->reg(n, l->sc, buf, 4 * BIG, &mh), "regMr");
	h_get("posted", 1, &c, 1);
	fillp(buf, BIG, 1);
	req = send_retry(n, l->sc, buf, BIG, 1, mh);
	/* Zero-copy (above the eager limit): the QP reads the region until test() says done. */
	r = n->dereg(n, l->sc, mh);
	H_CHECK(r == NCCL_ERR_INVALID_USAGE, "deregMr of a region a send in flight uses: %d", r);
	h_wait(n, req, NULL);
	r = n->test(n, req, &done, &sz);
	H_CHECK(r == NCCL_ERR_INVALID_ARG, "test() of a send already completed: %d", r);

	h_get("posted2", 1, &c, 1);
	fillp(buf, 2 * BIG, 2);
	{
		double end = h_now() + H.timeout_s;

		/* NULL until the CTS is here; then the size it names refuses the larger send. */
		while (!(r = n->isend(n, l->sc, buf, 2 * BIG, 2, mh, &req)) && !req)
			H_CHECK(h_now() < end, "no answer to a send larger than its receive");
	}
	H_CHECK(r == NCCL_ERR_INVALID_USAGE && !req, "a 128 KiB send into a 64 KiB receive: %d",
		r);
	h_wait(n, send_retry(n, l->sc, buf, BIG, 2, mh), NULL);
	printf("ok: misuse: a send larger than the buffer its CTS names: ncclInvalidUsage\n");

	h_get("posted3", 1, &c, 1);
	fillp(buf, 4096, 3);
	req = send_retry(n, l->sc, buf, 4096, 3, mh);
	/* Staged: done at once; the receiver finds it too large. */
	h_barrier("eager-mismatch");
	H_CHECK(!n->close_send(n, l->sc), "closeSend");
	r = n->close_send(n, l->sc);
	H_CHECK(r == NCCL_ERR_INVALID_ARG, "closeSend twice: %d", r);
	H_CHECK(!n->dereg(n, NULL, mh), "deregMr");
}

static int fd_count(void)
{
	int c = 0;

	for (int fd = 0; fd < 4096; fd++)
		c += fcntl(fd, F_GETFD) != -1;
	return c;
}

/*
 * Comms closed with a request of theirs never tested (rank 1: a receive still in
 * flight; rank 0: a small send, done at once): the request died with its comm, and
 * the comm takes nothing more.
 */
static void closed_comms(struct hnet *n, struct h_link *l, void *stale, uint8_t *buf, void *mh)
{
	void *req = NULL;
	int done = 0, sz = 0, tag = 1, r;

	r = n->test(n, stale, &done, &sz);
	H_CHECK(r == NCCL_ERR_INVALID_ARG && !done, "test() of a %s whose comm closed: %d",
		H.rank ? "receive" : "send", r);
	r = n->isend(n, l->sc, buf, 8, 1, mh, &req);
	H_CHECK(r == NCCL_ERR_INVALID_ARG && !req, "isend on a closed send comm: %d", r);
	r = n->irecv(n, l->rc, 1, (void **)&buf, &(size_t){ 64 }, &tag, &mh, &req);
	H_CHECK(r == NCCL_ERR_INVALID_ARG && !req, "irecv on a closed receive comm: %d", r);
	printf("ok: misuse: isend and irecv on closed comms, test() of a request whose comm "
	       "closed: ncclInvalidArgument\n");
}

/* Connections made, used and closed over and over: no descriptor (a QP's) left behind. */
static void churn(struct hnet *n, uint8_t *buf)
{
	int before = -1, rounds = 30;
	void *mh;

	H_CHECK(!n->reg(n, NULL, buf, 4096, &mh), "regMr");
	for (int i = 0; i < rounds; i++) {
		struct h_link l;
		char key[32];
		void *req, *stale = NULL;
		int sz;

		snprintf(key, sizeof(key), "churn%d", i);
		h_connect_pair(n, key, 1 - H.rank, 1 - H.rank, &l);
		req = H.rank ? recv_retry(n, l.rc, buf, 4096, 0, mh) :
			       send_retry(n, l.sc, buf, 100, 0, mh);
		h_wait(n, req, &sz);
		if (i == rounds - 1)
			stale = H.rank ? recv_retry(n, l.rc, buf, 4096, 1, mh) :
					 send_retry(n, l.sc, buf, 100, 1, mh);
		snprintf(key, sizeof(key), "churned%d", i);
		h_barrier(key);
		H_CHECK(!n->close_send(n, l.sc) && !n->close_recv(n, l.rc) &&
			!n->close_listen(n, l.lc), "close");
		if (stale)
			closed_comms(n, &l, stale, buf, mh);
		if (i == 1)
			before = fd_count();
	}
	H_CHECK(fd_count() == before, "%d descriptors open after %d connections made and closed, "
		"%d before", fd_count(), rounds, before);
	H_CHECK(!n->dereg(n, NULL, mh), "deregMr");
	printf("ok: misuse: %d connections made, used and closed: no descriptor left behind\n",
	       rounds);
}

int h_misuse(struct hnet *n)
{
	uint8_t *buf = h_alloc(4 * BIG);
	struct h_link l;

	H_CHECK(H.nranks == 2, "misuse: 2 ranks");
	alone(n);
	churn(n, buf);
	h_connect_pair(n, "m", 1 - H.rank, 1 - H.rank, &l);
	if (H.rank == 1) {
		receiver(n, &l, buf);
		h_barrier("eager-mismatch");
		H_CHECK(!n->close_send(n, l.sc), "closeSend");
	} else {
		sender(n, &l, buf);
		H_CHECK(!n->close_recv(n, l.rc), "closeRecv");
	}
	H_CHECK(!n->close_listen(n, l.lc), "closeListen");
	printf("ok: misuse: closeSend and closeRecv twice: ncclInvalidArgument\n");
	h_free(buf, 4 * BIG);
	return 0;
}
