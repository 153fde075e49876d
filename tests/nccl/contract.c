// SPDX-License-Identifier: MIT
/*
 * The contract NCCL relies on (plugins/net/README.md), between two ranks:
 * rank 0 sends, rank 1 receives, over one connection (and a second one after
 * the first was closed with requests in flight).  Each step is ordered
 * through the side channel so that what is checked is deterministic: an
 * accept before the peer connects gives NULL, an isend before the receiver
 * posted gives a NULL request, a 33rd receive gives a NULL request; then
 * posting order, a multi-receive with tags and sizes (a size-0 send among
 * them, the tags sent out of order), 32 receives in flight and 32 x 8
 * sends in flight, close with requests in flight, a registration inside a
 * registration.  Every payload is checked byte for byte.
 *
 * The plugin's eager sends (small sends before their receive is posted,
 * once the connection has carried a CTS): a multi-receive's three sends
 * (tags out of order, one of 0 bytes) and then small sends until one gives a
 * NULL request (the receiver's eager slots are finite) are all accepted
 * before the receiver posts anything, while a 64 KiB send waits (NULL); the
 * receiver then posts and gets every one, in posting order, placed by tag.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MAXR	8
#define EAGER_TRY	64	/* small sends tried before the receiver posts (the plugin has 16 slots) */

static uint8_t pat(int msg, size_t i) { return (uint8_t)(msg * 37 + i * 11 + (i >> 8)); }

static void fill(void *p, size_t len, int msg)
{
	for (size_t i = 0; i < len; i++)
		((uint8_t *)p)[i] = pat(msg, i);
}

static void expect(const void *p, size_t len, int msg, const char *what)
{
	for (size_t i = 0; i < len; i++)
		H_CHECK(((const uint8_t *)p)[i] == pat(msg, i), "%s: byte %zu of %zu differs", what, i,
			len);
}

/* isend, called again while it gives a NULL request (NCCL's loop). */
static void *send_retry(struct hnet *n, void *sc, void *data, size_t size, int tag, void *mh)
{
	double end = h_now() + H.timeout_s;
	void *req = NULL;

	while (!req) {
		H_CHECK(!n->isend(n, sc, data, size, tag, mh, &req), "isend of %zu bytes, tag %d", size,
			tag);
		H_CHECK(req || h_now() < end, "isend never accepted");
	}
	return req;
}

/*
 * The receives the plugin must send a CTS for: the connection's first (it tells the
 * sender where the eager slots are) and any with a buffer above the eager limit
 * (MNCCL_EAGER_MAX, nccl/plugin.h); every other one is served by eager sends alone.
 */
#define PLUGIN_EAGER_MAX	8192
static unsigned int recvs_posted, recvs_cts;

/* irecv, and which of the receives posted need a CTS (NULL request: nothing posted). */
static void *post_recv(struct hnet *n, void *rc, int nb, void **data, size_t *sizes, int *tags,
		       void **mhs)
{
	void *req = NULL;
	bool large = false;

	H_CHECK(!n->irecv(n, rc, nb, data, sizes, tags, mhs, &req), "irecv of %d buffers", nb);
	for (int k = 0; k < nb; k++)
		large |= sizes[k] > PLUGIN_EAGER_MAX;
	if (req)
		recvs_cts += !recvs_posted++ || large;
	return req;
}

static void *recv_one(struct hnet *n, void *rc, void *data, size_t size, int tag, void *mh)
{
	return post_recv(n, rc, 1, &data, &size, &tag, &mh);
}

/* ---- sender (rank 0) ------------------------------------------------------------ */

/*
 * Nothing posted at the receiver: the plugin sends small messages at once
 * (eager), until its eager slots run out; a large one waits for its CTS.
 * Then (receiver posted) one more small and the large one, in order.
 */
static void eager_sender(struct hnet *n, struct h_link *l, uint8_t *buf, void *mh)
{
	static const int gtags[3] = { 5, 3, 4 };
	static const size_t gsizes[3] = { 10, 0, 30 };
	void *req, *reqs[3 + EAGER_TRY];
	int i, k, nreq = 0;

	for (i = 0; i < 3; i++) {
		fill(buf + (size_t)i * 128, gsizes[i], 40 + gtags[i]);
		H_CHECK(!n->isend(n, l->sc, buf + (size_t)i * 128, gsizes[i], gtags[i], mh, &req) &&
			req, "a small isend (tag %d) before its receive: NULL, not eager", gtags[i]);
		reqs[nreq++] = req;
	}
	fill(buf + 65536, 65536, 60);
	H_CHECK(!n->isend(n, l->sc, buf + 65536, 65536, 0, mh, &req), "isend of 64 KiB");
	H_CHECK(!req, "a 64 KiB isend before its receive was posted gave a request");
	for (k = 0; k < EAGER_TRY; k++) {
		fill(buf + 1024 + (size_t)k * 256, 200, 200 + k);
		H_CHECK(!n->isend(n, l->sc, buf + 1024 + (size_t)k * 256, 200, 0, mh, &req), "isend");
		if (!req)
			break;
		reqs[nreq++] = req;
	}
	H_CHECK(k >= 1 && k < EAGER_TRY, "%d small sends accepted before any receive", k);
	h_put("eager", 0, &k, sizeof(k));
	for (i = 0; i < nreq; i++)
		h_wait(n, reqs[i], NULL);
	/* The receiver posts: one more small send, then the 64 KiB one gets its CTS. */
	fill(buf + 512, 100, 61);
	h_wait(n, send_retry(n, l->sc, buf + 512, 100, 0, mh), NULL);
	h_wait(n, send_retry(n, l->sc, buf + 65536, 65536, 0, mh), NULL);
	printf("ok: eager: a multi-receive's 3 sends and %d more small ones accepted before any "
	       "receive, then NULL; a 64 KiB send waited for its CTS\n", k);
}

static void sender(struct hnet *n, struct h_link *l, uint8_t *buf, void *mh)
{
	void *req, *reqs[NCCL_REQS_PER_COMM * MAXR];
	int i, got, tags[4] = { 12, 10, 13, 11 };
	size_t sizes[4] = { 0, 4000, 65536, 1 };
	char c;

	/* Nothing posted at the receiver yet: the request is NULL, "call again". */
	H_CHECK(!n->isend(n, l->sc, buf, 64, 0, mh, &req), "isend");
	H_CHECK(!req, "an isend before any receive was posted gave a request");
	h_put("bp", 0, "", 1);
	printf("ok: isend before the receiver posted: NULL request (back-pressure)\n");

	/* Posting order: three messages, three receives. */
	for (i = 0; i < 3; i++)
		fill(buf + i * 8192, 1000 * (size_t)(i + 1), i + 1);
	for (i = 0; i < 3; i++)
		reqs[i] = send_retry(n, l->sc, buf + i * 8192, 1000 * (size_t)(i + 1), 0, mh);
	for (i = 0; i < 3; i++) {
		h_wait(n, reqs[i], &got);
		H_CHECK(got == 1000 * (i + 1), "send %d: test says %d bytes", i, got);
	}

	/* A multi-receive of 4: tags sent out of order, one of them 0 bytes. */
	for (i = 0; i < 4; i++)
		fill(buf + 65536 + (size_t)i * 65536, sizes[i], 20 + tags[i]);
	for (i = 0; i < 4; i++)
		reqs[i] = send_retry(n, l->sc, buf + 65536 + (size_t)i * 65536, sizes[i], tags[i], mh);
	for (i = 0; i < 4; i++)
		h_wait(n, reqs[i], NULL);

	if (n->version)		/* the plugin's eager sends; another transport may differ */
		eager_sender(n, l, buf, mh);

	/* 32 receives in flight: 32 sends posted before any is tested. */
	h_get("r32", 1, &c, 1);
	for (i = 0; i < 32; i++)
		fill(buf + (size_t)i * 4096, 4096, 100 + i);
	for (i = 0; i < 32; i++)
		reqs[i] = send_retry(n, l->sc, buf + (size_t)i * 4096, 4096, 0, mh);
	for (i = 0; i < 32; i++)
		h_wait(n, reqs[i], NULL);

	/* 32 multi-receives of 8: 256 sends in flight at once. */
	h_get("r256", 1, &c, 1);
	for (i = 0; i < 256; i++)
		fill(buf + (size_t)i * 1024, 1024, i);
	for (i = 0; i < 256; i++)
		reqs[i] = send_retry(n, l->sc, buf + (size_t)i * 1024, 1024, i % 8, mh);
	for (i = 0; i < 256; i++)
		h_wait(n, reqs[i], NULL);
	printf("ok: 32 x 8 sends in flight on one comm\n");

	/* Close with sends in flight: two posted, none tested. */
	h_get("rclose", 1, &c, 1);
	fill(buf, 1 << 20, 7);
	send_retry(n, l->sc, buf, 1 << 20, 0, mh);
	send_retry(n, l->sc, buf, 1 << 20, 0, mh);
	h_put("sposted", 0, "", 1);
	H_CHECK(!n->close_send(n, l->sc), "closeSend with sends in flight");
}

/* ---- receiver (rank 1) ---------------------------------------------------------- */

/* eager_sender's sends, received only once they were all sent: every byte, in order. */
static void eager_receiver(struct hnet *n, struct h_link *l, uint8_t *buf, void *mh)
{
	void *data[3], *mhs[3] = { mh, mh, mh }, *req;
	size_t room[3] = { 100, 100, 100 };
	int tags[3] = { 3, 4, 5 }, want[3] = { 0, 30, 10 }, sz[3], i, k;

	h_get("eager", 0, &k, sizeof(k));
	memset(buf, 0, 1 << 20);
	for (i = 0; i < 3; i++)
		data[i] = buf + (size_t)i * 128;
	H_CHECK((req = post_recv(n, l->rc, 3, data, room, tags, mhs)), "irecv n=3");
	h_wait(n, req, sz);
	for (i = 0; i < 3; i++) {
		H_CHECK(sz[i] == want[i], "eager multi-receive buffer %d (tag %d): %d bytes, sent %d",
			i, tags[i], sz[i], want[i]);
		expect(data[i], (size_t)sz[i], 40 + tags[i], "eager multi-receive");
	}
	for (i = 0; i < k; i++) {
		req = recv_one(n, l->rc, buf + 1024 + (size_t)i * 256, 256, 0, mh);
		H_CHECK(req, "irecv %d", i);
		h_wait(n, req, sz);
		H_CHECK(sz[0] == 200, "eager receive %d: %d bytes, sent 200", i, sz[0]);
		expect(buf + 1024 + (size_t)i * 256, 200, 200 + i, "eager sends in order");
	}
	H_CHECK((req = recv_one(n, l->rc, buf + 512, 128, 0, mh)), "irecv");
	h_wait(n, req, sz);
	H_CHECK(sz[0] == 100, "%d bytes, sent 100", sz[0]);
	expect(buf + 512, 100, 61, "the small send after the eager ones");
	H_CHECK((req = recv_one(n, l->rc, buf + 65536, 65536, 0, mh)), "irecv");
	h_wait(n, req, sz);
	H_CHECK(sz[0] == 65536, "%d bytes, sent 65536", sz[0]);
	expect(buf + 65536, 65536, 60, "the 64 KiB send that waited");
	printf("ok: eager: a multi-receive of 3 placed by tag (one of 0 bytes), %d eager sends in "
	       "order, then the sends that waited, every byte checked\n", k);
}

static void receiver(struct hnet *n, struct h_link *l, uint8_t *buf, void *mh)
{
	void *reqs[NCCL_REQS_PER_COMM], *req;
	int i, k, sz[MAXR];
	char c;

	h_get("bp", 0, &c, 1);
	/* Posting order. */
	for (i = 0; i < 3; i++)
		H_CHECK((reqs[i] = recv_one(n, l->rc, buf + i * 8192, 8192, 0, mh)), "irecv %d", i);
	for (i = 0; i < 3; i++) {
		h_wait(n, reqs[i], sz);
		H_CHECK(sz[0] == 1000 * (i + 1), "receive %d: %d bytes, sent %d (posting order)", i,
			sz[0], 1000 * (i + 1));
		expect(buf + i * 8192, (size_t)sz[0], i + 1, "posting order");
	}
	printf("ok: three sends matched three receives in posting order\n");

	/* A multi-receive: buffers of 4096, 100, 64 and 65536 bytes for tags 10 .. 13. */
	{
		void *data[4];
		size_t room[4] = { 4096, 100, 64, 65536 };
		int tags[4] = { 10, 11, 12, 13 }, want[4] = { 4000, 1, 0, 65536 };
		void *mhs[4] = { mh, mh, mh, mh };

		for (i = 0; i < 4; i++)
			data[i] = buf + 65536 + (size_t)i * 65536;
		H_CHECK((req = post_recv(n, l->rc, 4, data, room, tags, mhs)), "irecv n=4");
		h_wait(n, req, sz);
		for (i = 0; i < 4; i++) {
			H_CHECK(sz[i] == want[i], "multi-receive buffer %d (tag %d): %d bytes, sent %d", i,
				tags[i], sz[i], want[i]);
			expect(data[i], (size_t)sz[i], 20 + tags[i], "multi-receive");
		}
		printf("ok: a multi-receive of 4 (tags sent out of order, sizes 4000/1/0/65536) "
		       "placed by tag, test gives each size\n");
	}

	if (n->version)
		eager_receiver(n, l, buf, mh);

	/* 32 in flight; the 33rd is refused with a NULL request. */
	for (i = 0; i < 32; i++)
		H_CHECK((reqs[i] = recv_one(n, l->rc, buf + (size_t)i * 4096, 4096, 0, mh)),
			"irecv %d of 32 gave a NULL request", i);
	req = recv_one(n, l->rc, buf + 200 * 4096, 4096, 0, mh);
	H_CHECK(!req, "a 33rd receive in flight was accepted");
	h_put("r32", 1, "", 1);
	for (i = 0; i < 32; i++) {
		h_wait(n, reqs[i], sz);
		expect(buf + (size_t)i * 4096, 4096, 100 + i, "32 in flight");
	}
	printf("ok: 32 receives in flight, the 33rd refused (NULL request), all 32 delivered\n");

	/* 32 multi-receives of 8 buffers (tags 0 .. 7). */
	for (i = 0; i < 32; i++) {
		void *data[MAXR], *mhs[MAXR];
		size_t room[MAXR];
		int tags[MAXR];

		for (k = 0; k < MAXR; k++) {
			data[k] = buf + (size_t)(i * MAXR + k) * 1024;
			room[k] = 1024;
			tags[k] = k;
			mhs[k] = mh;
		}
		H_CHECK((reqs[i] = post_recv(n, l->rc, MAXR, data, room, tags, mhs)),
			"multi-receive %d", i);
	}
	h_put("r256", 1, "", 1);
	for (i = 0; i < 32; i++) {
		h_wait(n, reqs[i], sz);
		for (k = 0; k < MAXR; k++)
			expect(buf + (size_t)(i * MAXR + k) * 1024, 1024, i * MAXR + k, "32 x 8");
	}
	printf("ok: 32 multi-receives of 8 in flight, 256 payloads checked\n");

	/* Close with receives in flight: four posted, two may be matched, none tested. */
	for (i = 0; i < 4; i++)
		H_CHECK(recv_one(n, l->rc, buf + (size_t)i * (1 << 20), 1 << 20, 0, mh), "irecv");
	h_put("rclose", 1, "", 1);
	/* Closed once the sender has posted its two (so the CTSs left before the QP went). */
	h_get("sposted", 0, &c, 1);
}

/*
 * The plugin's CTSs (counted from the line it logs as the receive comm closes): none for
 * a receive the sender can fill with eager sends alone, so that a small message is one
 * packet, not two (a CTS per receive doubled the packets of a ring of small steps).
 */
static void cts_count(void)
{
	const struct h_plugin_stats *t = &h_pstats;

	H_CHECK(t->recv_comms == 1 && t->recvs == recvs_posted,
		"the plugin logged %u receive comms, %u receives (%u posted)", t->recv_comms,
		t->recvs, recvs_posted);
	H_CHECK(t->cts == recvs_cts, "%u receives sent %u CTSs, not %u (the first and those with "
		"a buffer above %d bytes)", t->recvs, t->cts, recvs_cts, PLUGIN_EAGER_MAX);
	printf("ok: %u receives sent %u CTSs (the first, and one per receive with a buffer above "
	       "%d bytes) and %u credit messages\n", t->recvs, t->cts, PLUGIN_EAGER_MAX, t->credits);
}

int h_contract(struct hnet *n)
{
	size_t len = 4 << 20;
	uint8_t *buf = h_alloc(len);
	struct h_link l = { 0 };
	struct nccl_props_v9 p;
	void *mh, *sub, *req = NULL, *lc;
	char handle[NCCL_HANDLE_BYTES], c;
	int tries = 0;

	H_CHECK(H.nranks == 2, "contract: 2 ranks");
	H_CHECK(!n->props(n, &p) && p.reg_is_global, "regIsGlobal");
	if (H.rank == 1) {
		/* accept before the sender connects: NULL, and it does not block. */
		H_CHECK(!n->listen(n, handle, &lc) && lc, "listen");
		h_put("c1", 1, handle, sizeof(handle));
		for (tries = 0; tries < 3; tries++) {
			H_CHECK(!n->accept(n, lc, &l.rc), "accept");
			H_CHECK(!l.rc, "accept gave a comm before anyone connected");
		}
		h_put("c1go", 1, "", 1);
		/* Yielding between turns, as NCCL's proxy thread (h_connect_pair says why). */
		while (!l.rc) {
			H_CHECK(!n->accept(n, lc, &l.rc), "accept");
			if (!l.rc)
				sched_yield();
		}
		printf("ok: accept before the peer connected: success with a NULL comm, 3 times\n");
		H_CHECK(!n->reg(n, l.rc, buf, len, &mh), "regMr");
		receiver(n, &l, buf, mh);
		H_CHECK(!n->close_recv(n, l.rc), "closeRecv with receives in flight");
		if (n->version)
			cts_count();
		H_CHECK(!n->close_listen(n, lc), "closeListen");
	} else {
		h_get("c1", 1, handle, sizeof(handle));
		h_get("c1go", 1, &c, 1);
		while (!l.sc) {
			H_CHECK(!n->connect(n, handle, &l.sc), "connect");
			if (!l.sc)
				sched_yield();
			tries++;
		}
		printf("ok: connect: success with a NULL comm %d times, then the comm\n", tries - 1);
		H_CHECK(!n->reg(n, l.sc, buf, len, &mh), "regMr");
		/* A registration inside a registration (regIsGlobal: the cache answers). */
		H_CHECK(!n->reg(n, l.sc, buf + 4096, 8192, &sub) && sub, "regMr inside a registration");
		H_CHECK(!n->dereg(n, l.sc, sub), "deregMr of the inner registration");
		sender(n, &l, buf, mh);
	}
	printf("ok: closed with requests in flight\n");
	/* The plugin still works: a new connection, 1 MiB checked. */
	h_barrier("closed");
	h_connect_pair(n, "c2", 1 - H.rank, 1 - H.rank, &l);
	if (H.rank == 0) {
		fill(buf, 1 << 20, 99);
		h_wait(n, send_retry(n, l.sc, buf, 1 << 20, 0, mh), NULL);
	} else {
		int sz;

		memset(buf, 0, 1 << 20);
		req = recv_one(n, l.rc, buf, 1 << 20, 0, mh);
		H_CHECK(req, "irecv");
		h_wait(n, req, &sz);
		H_CHECK(sz == 1 << 20, "%d bytes", sz);
		expect(buf, 1 << 20, 99, "after close");
	}
	h_barrier("c2done");
	H_CHECK(!n->close_send(n, l.sc) && !n->close_recv(n, l.rc) && !n->close_listen(n, l.lc),
		"close");
	H_CHECK(!n->dereg(n, NULL, mh), "deregMr");
	h_free(buf, len);
	printf("ok: a new connection after the close moved 1 MiB intact\n");
	return 0;
}
