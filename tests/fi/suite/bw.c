// SPDX-License-Identifier: MIT
/*
 * fi_suite: ping-pong (rdm, tagged_pingpong) and bandwidth (tagged_bw, rma_write,
 * rma_read, rma_writedata).
 */
#include "suite.h"

/* ---- rdm and tagged ping-pong -------------------------------------------------------- */

void pingpong(bool tagged, const size_t *sz, int nsz, int n)
{
	struct fab f = { 0 };
	size_t m = 0;

	for (int i = 0; i < nsz; i++)
		m = sz[i] > m ? sz[i] : m;
	if (fab_open(&f, tagged ? FI_TAGGED : FI_MSG, 2 * m, 0))
		exit(77);
	fab_meet(&f);
	for (int s = 0; s < nsz; s++) {
		uint8_t *tx = f.buf, *rx = f.buf + m;
		double t0 = 0;

		oob_sync(f.oob);
		for (int i = -1; i < n; i++) {	/* i = -1: a warm-up round */
			uint64_t seed = (uint64_t)s * 1000 + (i + 1) * 2 + (srv ? 0 : 1);

			if (i == 0)
				t0 = now_s();
			if (srv) {
				fill(tx, sz[s], seed);
				if (tagged)
					POST(&f, fi_tsend(f.ep, tx, sz[s], f.desc, f.peer, seed, CTX));
				else
					POST(&f, fi_send(f.ep, tx, sz[s], f.desc, f.peer, CTX));
			}
			if (tagged)
				POST(&f, fi_trecv(f.ep, rx, sz[s], f.desc, f.peer, seed ^ 1, 0, CTX));
			else
				POST(&f, fi_recv(f.ep, rx, sz[s], f.desc, f.peer, CTX));
			if (!srv) {
				reap(&f, 1);
				verify(rx, sz[s], seed ^ 1, "ping");
				fill(tx, sz[s], seed);
				if (tagged)
					POST(&f, fi_tsend(f.ep, tx, sz[s], f.desc, f.peer, seed, CTX));
				else
					POST(&f, fi_send(f.ep, tx, sz[s], f.desc, f.peer, CTX));
				reap(&f, 1);
			} else {
				reap(&f, 2);
				verify(rx, sz[s], seed ^ 1, "pong");
			}
		}
		if (srv)
			printf("%-16s %8zu bytes %5d iters %10.2f us half round trip\n",
			       tagged ? "tagged_pingpong" : "rdm", sz[s], n,
			       (now_s() - t0) / n / 2 * 1e6);
	}
	oob_sync(f.oob);
	printf("ok: %s: %d sizes x %d round trips, every byte checked both ways\n",
	       tagged ? "tagged_pingpong" : "rdm", nsz, n);
	fab_close(&f);
}

/* ---- bandwidth: tagged and RMA ----------------------------------------------------------- */

static void report_bw(const char *name, size_t sz, int n, double secs)
{
	printf("%-16s %8zu bytes %5d x %3d %10.1f MB/s\n", name, sz, n, window,
	       (double)sz * n * window / secs / 1e6);
}

void t_tagged_bw(void)
{
	struct fab f = { 0 };
	size_t m = max_size();

	if (fab_open(&f, FI_TAGGED, m * (size_t)window, 0))
		exit(77);
	fab_meet(&f);
	for (int s = 0; s < nsizes; s++) {
		size_t sz = sizes[s];
		double t0 = 0;

		if (!srv)
			for (int w = 0; w < window; w++)
				fill(f.buf + w * sz, sz, (uint64_t)s * 100 + w);
		oob_sync(f.oob);
		for (int i = -1; i < iters; i++) {
			bool check = !quick || i <= 0 || i == iters - 1;

			if (i == 0) {
				hold(f.oob, true);
				t0 = now_s();
			}
			for (int w = 0; w < window; w++) {
				if (srv)
					POST(&f, fi_trecv(f.ep, f.buf + w * sz, sz, f.desc, f.peer, w, 0,
							  CTX));
				else
					POST(&f, fi_tsend(f.ep, f.buf + w * sz, sz, f.desc, f.peer, w,
							  CTX));
			}
			reap(&f, window);
			if (srv) {
				if (check)
					for (int w = 0; w < window; w++)
						verify(f.buf + w * sz, sz, (uint64_t)s * 100 + w,
						       "tagged_bw message");
				memset(f.buf, 0, check ? sz * window : 0);
				/* Ack: the sender's next window waits for our receives. */
				POST(&f, fi_tsend(f.ep, f.buf, 0, f.desc, f.peer, 1ull << 40, CTX));
				reap(&f, 1);
			} else {
				POST(&f, fi_trecv(f.ep, NULL, 0, NULL, f.peer, 1ull << 40, 0, CTX));
				reap(&f, 1);
			}
		}
		if (srv)
			report_bw("tagged_bw", sz, iters, now_s() - t0);
	}
	oob_sync(f.oob);
	printf("ok: tagged_bw: %d sizes x %d windows of %d, %s\n", nsizes, iters, window,
	       quick ? "first and last windows checked" : "every message checked");
	fab_close(&f);
}


void t_rma_bw(enum rma_kind k)
{
	static const char *names[] = { "rma_write", "rma_read", "rma_writedata" };
	struct fab f = { 0 };
	size_t m = max_size() * (size_t)window;
	uint64_t key, addr, kv[2];

	if (fab_open(&f, FI_RMA | FI_TAGGED, m, FI_REMOTE_READ | FI_REMOTE_WRITE))
		exit(77);
	if (k == RMA_WRITEDATA && !f.info->domain_attr->cq_data_size)
		exit(77);
	fab_meet(&f);
	/* The srv is the target: its key and address to the client. */
	kv[0] = fi_mr_key(f.mr);
	kv[1] = (f.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)f.buf : 0;
	{
		uint64_t theirs[2];

		oob_xfer(f.oob, theirs, kv, sizeof(kv));
		key = theirs[0];
		addr = theirs[1];
	}
	for (int s = 0; s < nsizes; s++) {
		size_t sz = sizes[s];
		double t0 = 0;

		/* The read's source, or what a write must leave. */
		if (srv && k == RMA_READ)
			for (int w = 0; w < window; w++)
				fill(f.buf + w * sz, sz, (uint64_t)s * 100 + w);
		if (!srv && k != RMA_READ)
			for (int w = 0; w < window; w++)
				fill(f.buf + w * sz, sz, (uint64_t)s * 100 + w);
		oob_sync(f.oob);
		for (int i = -1; i < iters && !srv; i++) {
			if (i == 0) {
				hold(f.oob, false);	/* the server is passive */
				t0 = now_s();
			}
			if (k == RMA_READ && (!quick || i <= 0 || i == iters - 1))
				memset(f.buf, 0, sz * window);
			for (int w = 0; w < window; w++) {
				uint8_t *b = f.buf + w * sz;
				uint64_t ra = addr + w * sz;

				if (k == RMA_WRITE)
					POST(&f, fi_write(f.ep, b, sz, f.desc, f.peer, ra, key, CTX));
				else if (k == RMA_READ)
					POST(&f, fi_read(f.ep, b, sz, f.desc, f.peer, ra, key, CTX));
				else
					POST(&f, fi_writedata(f.ep, b, sz, f.desc, (uint64_t)w, f.peer, ra,
							      key, NULL));
			}
			reap(&f, window);
			if (k == RMA_READ && (!quick || i <= 0 || i == iters - 1))
				for (int w = 0; w < window; w++)
					verify(f.buf + w * sz, sz, (uint64_t)s * 100 + w, "read");
		}
		if (srv && k == RMA_WRITEDATA) {
			/* One completion with its data per write, each window's 0 .. window-1. */
			uint64_t seen[256] = { 0 };

			for (int i = 0; i < (iters + 1) * window; i++) {
				reap(&f, 1);
				if (!(last.flags & FI_REMOTE_CQ_DATA) || last.data >= (uint64_t)window)
					die("writedata: completion flags %#" PRIx64 " data %" PRIu64,
					    last.flags, last.data);
				seen[last.data]++;
			}
			for (int w = 0; w < window; w++)
				if (seen[w] != (uint64_t)iters + 1)
					die("writedata: data %d seen %" PRIu64 " times", w, seen[w]);
		}
		if (!srv)
			report_bw(names[k], sz, iters, now_s() - t0);
		oob_sync(f.oob);
		if (srv && k != RMA_READ)
			for (int w = 0; w < window; w++)
				verify(f.buf + w * sz, sz, (uint64_t)s * 100 + w, "written region");
	}
	oob_sync(f.oob);
	printf("ok: %s: %d sizes x %d windows of %d, %s checked\n", names[k], nsizes, iters, window,
	       k == RMA_READ ? "the bytes read" : k == RMA_WRITE ? "the target's region" :
	       "every remote CQ data and the target's region");
	fab_close(&f);
}
