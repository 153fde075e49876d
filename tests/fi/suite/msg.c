// SPDX-License-Identifier: MIT
/*
 * fi_suite: messages: multi_recv, unexpected_msg, recv_cancel, multi_client.
 */
#include "suite.h"

/* ---- multi_recv ------------------------------------------------------------------------------ */

void t_multi_recv(void)
{
	const int nmsg = 200;
	const size_t msz = 1024, bsz = 64 * 1024;
	struct fab f = { 0 };
	size_t minr = 2 * msz;

	if (fab_open(&f, FI_MSG | FI_MULTI_RECV, 2 * bsz, 0)) {
		printf("SKIP: multi_recv: the provider offers no FI_MULTI_RECV\n");
		exit(77);
	}
	fab_meet(&f);
	if (srv) {
		int got = 0, released = 0;
		bool seen[256] = { 0 };

		CHECK(fi_setopt(&f.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &minr,
				sizeof(minr)));
		for (int b = 0; b < 2; b++) {
			struct iovec iov = { f.buf + b * bsz, bsz };
			struct fi_msg m = { .msg_iov = &iov, .desc = &f.desc, .iov_count = 1,
					    .addr = FI_ADDR_UNSPEC, .context = f.buf + b * bsz };

			POST(&f, fi_recvmsg(f.ep, &m, FI_MULTI_RECV));
		}
		oob_sync(f.oob);
		while (got < nmsg) {
			uint8_t *p;
			uint32_t idx;

			reap(&f, 1);
			p = last.buf;
			if (last.len) {
				if (last.len != msz || !p || p < f.buf || p + msz > f.buf + 2 * bsz)
					die("multi_recv: a message of %zu bytes at %p (buffers %p + %zu)",
					    (size_t)last.len, (void *)p, (void *)f.buf, 2 * bsz);
				memcpy(&idx, p, sizeof(idx));
				if (idx >= (uint32_t)nmsg || seen[idx])
					die("multi_recv: message index %u at +%td twice or out of range",
					    idx, p - f.buf);
				seen[idx] = true;
				verify(p + 4, msz - 4, idx, "multi_recv message");
				got++;
			}
			if (last.flags & FI_MULTI_RECV) {
				/* A buffer released (its messages all read): post it again. */
				uint8_t *base = last.op_context;
				struct iovec iov = { base, bsz };
				struct fi_msg m = { .msg_iov = &iov, .desc = &f.desc, .iov_count = 1,
						    .addr = FI_ADDR_UNSPEC, .context = base };

				released++;
				POST(&f, fi_recvmsg(f.ep, &m, FI_MULTI_RECV));
			}
		}
		oob_sync(f.oob);
		if (released < 2)
			die("multi_recv: %d buffers released for %d messages of %zu in %zu-byte buffers",
			    released, nmsg, msz, bsz);
		printf("ok: multi_recv: %d messages of %zu bytes into 2 x %zu-byte buffers, %d "
		       "releases flagged FI_MULTI_RECV, every message checked\n", nmsg, msz, bsz,
		       released);
	} else {
		oob_sync(f.oob);
		for (uint32_t i = 0; i < (uint32_t)nmsg; i++) {
			uint8_t *p = f.buf + (i % 32) * msz;

			memcpy(p, &i, sizeof(i));
			fill(p + 4, msz - 4, i);
			POST(&f, fi_send(f.ep, p, msz, f.desc, f.peer, CTX));
			if (i % 32 == 31)
				reap(&f, 32);
		}
		reap(&f, nmsg % 32);
		oob_sync(f.oob);
		printf("ok: multi_recv: %d messages sent\n", nmsg);
	}
	fab_close(&f);
}

/* ---- unexpected messages, cancel --------------------------------------------------------- */

void t_unexpected(void)
{
	const int n = 64;
	const size_t sz = 8192;
	struct fab f = { 0 };

	if (fab_open(&f, FI_TAGGED, n * sz, 0))
		exit(77);
	fab_meet(&f);
	if (!srv) {
		for (int i = 0; i < n; i++) {
			fill(f.buf + i * sz, sz, 7000 + i);
			POST(&f, fi_tsend(f.ep, f.buf + i * sz, sz, f.desc, f.peer, 7000 + i, CTX));
		}
		reap(&f, n);
		oob_sync(f.oob);
		oob_sync(f.oob);
		printf("ok: unexpected_msg: %d messages sent before any receive\n", n);
	} else {
		oob_sync(f.oob);	/* all sent (delivered) before a single receive is posted */
		{
			struct fi_msg_tagged m = { .tag = 7000 + n - 1, .addr = FI_ADDR_UNSPEC };

			for (;;) {
				struct fi_cq_tagged_entry e;
				ssize_t r;

				POST(&f, fi_trecvmsg(f.ep, &m, FI_PEEK));
				while ((r = fi_cq_read(f.cq, &e, 1)) == -FI_EAGAIN)
					;
				if (r == 1) {
					if (e.len != sz || e.tag != 7000 + (uint64_t)n - 1)
						die("unexpected_msg: FI_PEEK saw %zu bytes tag %" PRIu64,
						    (size_t)e.len, e.tag);
					break;
				}
				fi_cq_readerr(f.cq, &(struct fi_cq_err_entry){ 0 }, 0);
				if (time(NULL) > deadline)
					die("unexpected_msg: FI_PEEK never saw the last message");
			}
		}
		for (int i = n - 1; i >= 0; i--) {
			POST(&f, fi_trecv(f.ep, f.buf + i * sz, sz, f.desc, FI_ADDR_UNSPEC, 7000 + i, 0,
					  CTX));
			reap(&f, 1);
			if (last.tag != 7000 + (uint64_t)i || last.len != sz)
				die("unexpected_msg: receive for tag %d got tag %" PRIu64, 7000 + i,
				    last.tag);
			verify(f.buf + i * sz, sz, 7000 + i, "unexpected message");
		}
		oob_sync(f.oob);
		printf("ok: unexpected_msg: %d messages buffered before their receives, FI_PEEK saw "
		       "the last, received in reverse tag order, every byte checked\n", n);
	}
	fab_close(&f);
}

void t_recv_cancel(void)
{
	const size_t sz = 4096;
	struct fab f = { 0 };
	static int cctx, rctx;

	if (fab_open(&f, FI_TAGGED, 3 * sz, 0))
		exit(77);
	fab_meet(&f);
	if (srv) {
		struct fi_cq_err_entry ee = { 0 };
		ssize_t r;

		memset(f.buf, 0x5A, sz);
		POST(&f, fi_trecv(f.ep, f.buf, sz, f.desc, FI_ADDR_UNSPEC, 0xCA, 0, &cctx));
		CHECK(fi_cancel(&f.ep->fid, &cctx));
		while ((r = fi_cq_read(f.cq, &last, 1)) == -FI_EAGAIN)
			if (time(NULL) > deadline)
				die("recv_cancel: no completion for the cancelled receive");
		if (r != -FI_EAVAIL || fi_cq_readerr(f.cq, &ee, 0) != 1 || ee.err != FI_ECANCELED ||
		    ee.op_context != &cctx)
			die("recv_cancel: the cancelled receive completed %zd, err %d", r, ee.err);
		POST(&f, fi_trecv(f.ep, f.buf + sz, sz, f.desc, FI_ADDR_UNSPEC, 0xCA, 0, &rctx));
		oob_sync(f.oob);
		reap(&f, 1);
		if (last.op_context != &rctx)
			die("recv_cancel: the message completed another receive");
		verify(f.buf + sz, sz, 0xCA, "recv_cancel message");
		for (size_t i = 0; i < sz; i++)
			if (f.buf[i] != 0x5A)
				die("recv_cancel: the cancelled receive's buffer was written");
		oob_sync(f.oob);
		printf("ok: recv_cancel: FI_ECANCELED with its context, buffer untouched, the "
		       "message went to the next receive\n");
	} else {
		oob_sync(f.oob);
		fill(f.buf, sz, 0xCA);
		POST(&f, fi_tsend(f.ep, f.buf, sz, f.desc, f.peer, 0xCA, CTX));
		reap(&f, 1);
		oob_sync(f.oob);
		printf("ok: recv_cancel: message sent\n");
	}
	fab_close(&f);
}

/* ---- several clients -------------------------------------------------------------------------- */

void t_multi_client(void)
{
	const size_t sz = 4096;
	struct fab f = { 0 };

	if (fab_open(&f, FI_TAGGED, 2 * sz * (size_t)(clients + 1), 0))
		exit(77);
	if (!srv) {
		uint32_t id;

		fab_meet(&f);
		oob_xfer(f.oob, &id, &(uint32_t){ 0 }, sizeof(id));
		for (int i = 0; i < iters; i++) {
			uint64_t seed = (uint64_t)id << 20 | (uint64_t)i;

			fill(f.buf, sz, seed);
			POST(&f, fi_trecv(f.ep, f.buf + sz, sz, f.desc, f.peer, seed ^ 1, 0, CTX));
			POST(&f, fi_tsend(f.ep, f.buf, sz, f.desc, f.peer, seed, CTX));
			reap(&f, 2);
			verify(f.buf + sz, sz, seed ^ 1, "multi_client reply");
		}
		oob_sync(f.oob);
		printf("ok: multi_client: client %u, %d round trips checked\n", id, iters);
	} else {
		fi_addr_t peers[64];
		int oobs[64];
		uint8_t mine[128] = { 0 };
		size_t l = sizeof(mine) - 8;

		CHECK(fi_getname(&f.ep->fid, mine + 8, &l));
		memcpy(mine, &l, sizeof(l));
		for (uint32_t c = 0; c < (uint32_t)clients; c++) {
			uint8_t theirs[128];
			uint32_t dummy;

			oobs[c] = oob_open();
			oob_xfer(oobs[c], theirs, mine, sizeof(mine));
			if (fi_av_insert(f.av, theirs + 8, 1, &peers[c], 0, NULL) != 1)
				die("fi_av_insert");
			oob_xfer(oobs[c], &dummy, &c, sizeof(c));
		}
		/* Every client's messages, as they come, each answered to its sender. */
		for (int k = 0; k < clients * iters; k++) {
			uint8_t *rx = f.buf, *tx = f.buf + sz;
			uint64_t seed;
			uint32_t c;

			POST(&f, fi_trecv(f.ep, rx, sz, f.desc, FI_ADDR_UNSPEC, 0, ~0ull, CTX));
			reap(&f, 1);
			seed = last.tag;
			c = (uint32_t)(seed >> 20);
			if (c >= (uint32_t)clients)
				die("multi_client: tag %#" PRIx64 " names no client", seed);
			verify(rx, sz, seed, "multi_client request");
			fill(tx, sz, seed ^ 1);
			POST(&f, fi_tsend(f.ep, tx, sz, f.desc, peers[c], seed ^ 1, CTX));
			reap(&f, 1);
		}
		for (int c = 0; c < clients; c++)
			oob_sync(oobs[c]);
		printf("ok: multi_client: %d clients x %d round trips, every byte checked\n", clients,
		       iters);
	}
	fab_close(&f);
}
