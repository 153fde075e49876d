// SPDX-License-Identifier: MIT
/*
 * counter: a counter in one host's memory that peers increment with RDMA
 * atomics (FETCH_ADD, as InfiniBand's): each add returns the value it found,
 * so every caller gets a distinct number, and the owner's CPU does nothing.
 *
 *   counter serve [SECONDS]       # an 8-byte counter on service 44; prints its rkey,
 *                                 # then its value when the peer disconnects
 *   counter add PEER_IP RKEY [N]  # N adds of 1 (default 10), each printing what it found
 */
#include <errno.h>
#include <mroc/mroc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SERVICE	44

/* The next completion other than the connection event (0 = none within ms). */
static int next_wc(struct mroc_qp *qp, struct mroc_wc *wc, int ms)
{
	for (int waited = 0; waited <= ms; waited += 100) {
		int n = mroc_poll_cq(qp, wc, 1);

		if (n < 0 || (n > 0 && wc->opcode != MROC_WC_CONNECTED))
			return n;
		if (!n)
			mroc_wait_cq(qp, 100);
	}
	return 0;
}

static int serve(struct mroc_ctx *ctx, int seconds)
{
	struct mroc_qp_attr attr = { .sz = sizeof(attr), .mode = MROC_QP_METAROCE };
	struct mroc_mr *mr = mroc_mr_alloc(ctx, 4096, MROC_ACCESS_LOCAL_WRITE |
					   MROC_ACCESS_REMOTE_ATOMIC);
	struct mroc_qp *qp = mroc_qp_create(ctx, &attr);
	volatile uint64_t *counter;
	struct mroc_wc wc;
	int n;

	if (!mr || !qp || mroc_qp_listen(qp, SERVICE))
		return fprintf(stderr, "counter: setup failed\n"), 1;
	counter = mroc_mr_addr(mr);	/* the first word of the region; regions start zeroed */
	printf("rkey 0x%x\n", mroc_mr_rkey(mr));
	fflush(stdout);
	if (mroc_qp_wait_connected(qp, seconds * 1000))
		return fprintf(stderr, "counter: nobody connected\n"), 1;
	/* Atomics make no completion here: the peer's disconnect is the end. */
	n = next_wc(qp, &wc, seconds * 1000);
	if (n <= 0 || wc.opcode != MROC_WC_DISCONNECTED)
		return fprintf(stderr, "counter: %s\n", n < 0 ? mroc_strerror(n) : "no disconnect"), 1;
	printf("counter = %llu\n", (unsigned long long)*counter);
	return 0;
}

static int add(struct mroc_ctx *ctx, const char *peer, uint32_t rkey, int count)
{
	struct mroc_qp_attr attr = { .sz = sizeof(attr), .mode = MROC_QP_METAROCE };
	struct mroc_mr *mr = mroc_mr_alloc(ctx, 4096, MROC_ACCESS_LOCAL_WRITE);
	struct mroc_qp *qp = mroc_qp_create(ctx, &attr);
	uint64_t *found;
	struct mroc_wc wc;

	if (!mr || !qp || mroc_qp_connect(qp, peer, SERVICE) || mroc_qp_wait_connected(qp, 5000))
		return fprintf(stderr, "counter: setup failed\n"), 1;
	found = mroc_mr_addr(mr);
	for (int i = 0; i < count; i++) {
		struct mroc_send_wr wr = {
			.wr_id = (uint64_t)i, .opcode = MROC_WR_ATOMIC_FETCH_ADD,
			.flags = MROC_SEND_SIGNALED,
			.sg = { found, sizeof(*found), mroc_mr_lkey(mr) },	/* the old value */
			.rkey = rkey, .remote_offset = 0, .compare_add = 1,
		};
		int n;

		if (mroc_post_send(qp, &wr))
			return fprintf(stderr, "counter: post failed\n"), 1;
		n = next_wc(qp, &wc, 5000);
		if (n <= 0 || wc.status != MROC_WC_SUCCESS)
			return fprintf(stderr, "counter: %s\n", n < 0 ? mroc_strerror(n) :
				       n ? mroc_wc_status_str(wc.status) : "no completion"), 1;
		printf("add %d: counter was %llu\n", i + 1, (unsigned long long)*found);
	}
	mroc_qp_destroy(qp);	/* disconnects: the server prints the value */
	return 0;
}

int main(int argc, char **argv)
{
	struct mroc_ctx *ctx;
	int rc = 2;

	if (!(argc >= 2 && !strcmp(argv[1], "serve")) && !(argc >= 4 && !strcmp(argv[1], "add")))
		return fprintf(stderr, "usage: counter serve [SECONDS] | "
				       "counter add PEER_IP RKEY [N]\n"), 2;
	ctx = mroc_open(NULL);
	if (!ctx)
		return fprintf(stderr, "counter: %s (mrocd running?)\n", mroc_strerror(-errno)), 1;
	if (!strcmp(argv[1], "serve"))
		rc = serve(ctx, argc > 2 ? atoi(argv[2]) : 60);
	else
		rc = add(ctx, argv[2], (uint32_t)strtoul(argv[3], NULL, 0),
			 argc > 4 ? atoi(argv[4]) : 10);
	mroc_close(ctx);
	return rc;
}
