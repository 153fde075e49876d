// SPDX-License-Identifier: MIT
/*
 * Atomics across real daemons (end-to-end test helper, tests/e2e/test_atomic.sh).
 *
 *   atomic_client server SOCKET SERVICE QPS DIR
 *       a region with REMOTE_ATOMIC rights, word 0 the counter, word 1 the
 *       compare-and-swap counter, both 0; QPS QPs listen on SERVICE; writes
 *       the rkey to DIR/key; once DIR/done exists, prints "counter C cswap S"
 *   atomic_client client SOCKET SERVICE PEER DIR QPS N ADD M
 *       QPS QPs, each: N FETCH_ADDs of ADD to word 0 (8 outstanding), printing
 *       each original value on a line of its own; then M increments of word 1
 *       by compare-and-swap (read by FETCH_ADD 0, CMP_SWP v -> v + 1, again on
 *       a lost race); an original CMP_SWP value other than the compared one
 *       must be a newer one (the counter only grows)
 * The test checks that the originals of every client together are exactly
 * 0, ADD, 2 ADD, ... (each add performed once) and the counters the sums.
 * Exit 0 when everything behaved.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mroc/mroc.h"

#define REGION		4096
#define DEPTH		8	/* FETCH_ADDs in flight per QP */
#define MAX_QPS		16
#define WAIT_MS		30000

static int fail(const char *what, int err)
{
	fprintf(stderr, "atomic_client: %s: %s\n", what, err ? mroc_strerror(err) : "failed");
	return 1;
}

static struct mroc_ctx *open_ctx(const char *sock)
{
	struct mroc_ctx_opts o = { .sz = sizeof(o), .socket_path = sock };

	return mroc_open(&o);
}

static int server(const char *sock, uint64_t service, int nqp, const char *dir)
{
	struct mroc_qp_attr attr = { .sz = sizeof(attr) };
	struct mroc_ctx *ctx = open_ctx(sock);
	char path[512], final[512];
	struct mroc_mr *mr;
	uint64_t *w;
	FILE *f;

	if (!ctx)
		return fail("open", -errno);
	mr = mroc_mr_alloc(ctx, REGION, MROC_ACCESS_LOCAL_WRITE | MROC_ACCESS_REMOTE_ATOMIC);
	if (!mr)
		return fail("mr", -errno);
	w = mroc_mr_addr(mr);
	for (int i = 0; i < nqp; i++) {
		struct mroc_qp *qp = mroc_qp_create(ctx, &attr);

		if (!qp || mroc_qp_listen(qp, service))
			return fail("listen", -errno);
	}
	snprintf(path, sizeof(path), "%s/key.tmp", dir);
	snprintf(final, sizeof(final), "%s/key", dir);
	f = fopen(path, "w");
	if (!f)
		return fail("key file", -errno);
	fprintf(f, "%u\n", mroc_mr_rkey(mr));
	fclose(f);
	rename(path, final);
	snprintf(path, sizeof(path), "%s/done", dir);
	for (int i = 0; i < 1200 && access(path, F_OK); i++)
		usleep(100000);
	printf("counter %" PRIu64 " cswap %" PRIu64 "\n", __atomic_load_n(&w[0], __ATOMIC_ACQUIRE),
	       __atomic_load_n(&w[1], __ATOMIC_ACQUIRE));
	mroc_close(ctx);
	return 0;
}

struct cqp {
	struct mroc_qp *qp;
	uint64_t *res;		/* DEPTH result words, then one for the compare-and-swap loop */
	uint32_t lkey;
	uint64_t posted, done;
};

/* One completion of q (waiting up to WAIT_MS); it must be a successful opcode. */
static int next_wc(struct cqp *q, uint8_t opcode, struct mroc_wc *wc)
{
	for (;;) {
		int n = mroc_poll_cq(q->qp, wc, 1), err;

		if (n < 0)
			return fail("poll", n);
		if (n) {
			if (wc->status != MROC_WC_SUCCESS || wc->opcode != opcode || wc->byte_len != 8) {
				fprintf(stderr, "atomic_client: completion opcode %u status %s len %u\n",
					wc->opcode, mroc_wc_status_str(wc->status), wc->byte_len);
				return 1;
			}
			return 0;
		}
		err = mroc_wait_cq(q->qp, WAIT_MS);
		if (err)
			return fail("waiting for a completion", err);
	}
}

static int post_atomic(struct cqp *q, uint8_t opcode, uint64_t *res, uint32_t rkey, uint64_t off,
		       uint64_t compare_add, uint64_t swap, uint64_t wr_id)
{
	struct mroc_send_wr wr = {
		.wr_id = wr_id, .opcode = opcode, .flags = MROC_SEND_SIGNALED,
		.sg = { res, 8, q->lkey }, .rkey = rkey, .remote_offset = off,
		.compare_add = compare_add, .swap = swap,
	};
	int err = mroc_post_send(q->qp, &wr);

	return err ? fail("post", err) : 0;
}

/* N FETCH_ADDs of add on word 0 from every QP, round robin, DEPTH in flight each. */
static int fetch_adds(struct cqp *qs, int nqp, uint32_t rkey, uint64_t n, uint64_t add)
{
	uint64_t left = n * (uint64_t)nqp;
	struct mroc_wc wc;

	while (left) {
		for (int i = 0; i < nqp; i++) {
			struct cqp *q = &qs[i];

			while (q->posted < n && q->posted - q->done < DEPTH) {
				if (post_atomic(q, MROC_WR_ATOMIC_FETCH_ADD, &q->res[q->posted % DEPTH],
						rkey, 0, add, 0, q->posted))
					return 1;
				q->posted++;
			}
			if (q->done == q->posted)
				continue;
			if (next_wc(q, MROC_WC_ATOMIC_FETCH_ADD, &wc))
				return 1;
			if (wc.wr_id != q->done)
				return fprintf(stderr, "atomic_client: completion %" PRIu64 " out of order\n",
					       wc.wr_id), 1;
			printf("%" PRIu64 "\n", q->res[q->done % DEPTH]);
			q->done++;
			left--;
		}
	}
	return 0;
}

/* m increments of word 1 by compare-and-swap, from QP q. */
static int cswap_increments(struct cqp *q, uint32_t rkey, uint64_t m)
{
	uint64_t *res = &q->res[DEPTH], v;
	struct mroc_wc wc;

	if (post_atomic(q, MROC_WR_ATOMIC_FETCH_ADD, res, rkey, 8, 0, 0, 0) ||
	    next_wc(q, MROC_WC_ATOMIC_FETCH_ADD, &wc))
		return 1;
	v = *res;
	for (uint64_t done = 0; done < m;) {
		if (post_atomic(q, MROC_WR_ATOMIC_CMP_SWP, res, rkey, 8, v, v + 1, 0) ||
		    next_wc(q, MROC_WC_ATOMIC_CMP_SWP, &wc))
			return 1;
		if (*res == v) {
			done++;
			v++;
		} else if (*res > v) {
			v = *res;	/* another QP got there first: try from its value */
		} else {
			return fprintf(stderr, "atomic_client: CMP_SWP saw %" PRIu64 " after %" PRIu64
				       "\n", *res, v), 1;
		}
	}
	return 0;
}

static int client(const char *sock, uint64_t service, const char *peer, const char *dir,
		  int nqp, uint64_t n, uint64_t add, uint64_t m)
{
	struct mroc_qp_attr attr = { .sz = sizeof(attr) };
	struct mroc_ctx *ctx = open_ctx(sock);
	struct cqp qs[MAX_QPS] = { 0 };
	unsigned int rkey = 0;
	struct mroc_mr *mr;
	char path[512];
	FILE *f = NULL;
	int err;

	if (!ctx)
		return fail("open", -errno);
	snprintf(path, sizeof(path), "%s/key", dir);
	for (int i = 0; i < 100 && !(f = fopen(path, "r")); i++)
		usleep(100000);
	if (!f || fscanf(f, "%u", &rkey) != 1)
		return fail("no key from the server", 0);
	fclose(f);
	mr = mroc_mr_alloc(ctx, REGION, MROC_ACCESS_LOCAL_WRITE);
	if (!mr)
		return fail("mr", -errno);
	for (int i = 0; i < nqp; i++) {
		qs[i].qp = mroc_qp_create(ctx, &attr);
		if (!qs[i].qp)
			return fail("qp", -errno);
		qs[i].res = (uint64_t *)mroc_mr_addr(mr) + i * (DEPTH + 1);
		qs[i].lkey = mroc_mr_lkey(mr);
		err = mroc_qp_connect(qs[i].qp, peer, service);
		if (!err)
			err = mroc_qp_wait_connected(qs[i].qp, 10000);
		if (err)
			return fail("connect", err);
	}
	if (fetch_adds(qs, nqp, rkey, n, add))
		return 1;
	for (int i = 0; i < nqp; i++)
		if (cswap_increments(&qs[i], rkey, m))
			return 1;
	mroc_close(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	int nqp = argc > 4 ? atoi(argv[4]) : 0;

	if (argc == 6 && !strcmp(argv[1], "server") && nqp > 0)
		return server(argv[2], strtoull(argv[3], NULL, 0), nqp, argv[5]);
	nqp = argc > 6 ? atoi(argv[6]) : 0;
	if (argc == 10 && !strcmp(argv[1], "client") && nqp > 0 && nqp <= MAX_QPS)
		return client(argv[2], strtoull(argv[3], NULL, 0), argv[4], argv[5], nqp,
			      strtoull(argv[7], NULL, 0), strtoull(argv[8], NULL, 0),
			      strtoull(argv[9], NULL, 0));
	fprintf(stderr, "usage: atomic_client server SOCKET SERVICE QPS DIR | "
		"client SOCKET SERVICE PEER DIR QPS N ADD M\n");
	return 2;
}
