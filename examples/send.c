// SPDX-License-Identifier: MIT
/*
 * send: one message by SEND/RECV, the sending side (recv.c is the other).
 *
 *   send PEER_IP [SERVICE] [TEXT]  # default service 43, text "hello by SEND"
 */
#include <errno.h>
#include <mroc/mroc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct mroc_qp_attr attr = { .sz = sizeof(attr), .mode = MROC_QP_METAROCE };
	uint64_t service = argc > 2 ? strtoull(argv[2], NULL, 0) : 43;
	const char *text = argc > 3 ? argv[3] : "hello by SEND";
	struct mroc_ctx *ctx = mroc_open(NULL);
	struct mroc_send_wr wr;
	struct mroc_mr *mr;
	struct mroc_qp *qp;
	struct mroc_wc wc;
	int n;

	if (!ctx || argc < 2)
		return fprintf(stderr, "usage: send PEER_IP [SERVICE] [TEXT] (mrocd running?)\n"), 1;
	if (strlen(text) > 4096)
		return fprintf(stderr, "send: the text is longer than 4096 bytes\n"), 1;
	/* Each step says why it failed (mrocd's limits refuse with EUSERS, EDQUOT...). */
	mr = mroc_mr_alloc(ctx, 4096, MROC_ACCESS_LOCAL_WRITE);
	if (!mr)
		return fprintf(stderr, "send: mr_alloc: %s\n", strerror(errno)), 1;
	qp = mroc_qp_create(ctx, &attr);
	if (!qp)
		return fprintf(stderr, "send: qp_create: %s\n", strerror(errno)), 1;
	/* Which step failed, and why: a refused CONNECT and a timeout need different fixes. */
	n = mroc_qp_connect(qp, argv[1], service);
	if (n)
		return fprintf(stderr, "send: connect: %s\n", mroc_strerror(n)), 1;
	n = mroc_qp_wait_connected(qp, 5000);
	if (n)
		return fprintf(stderr, "send: waiting for the connection: %s\n", mroc_strerror(n)), 1;
	memcpy(mroc_mr_addr(mr), text, strlen(text));
	wr = (struct mroc_send_wr){
		.wr_id = 1, .opcode = MROC_WR_SEND, .flags = MROC_SEND_SIGNALED,
		.sg = { mroc_mr_addr(mr), (uint32_t)strlen(text), mroc_mr_lkey(mr) },
	};
	if (mroc_post_send(qp, &wr))
		return fprintf(stderr, "send: post failed\n"), 1;
	while ((n = mroc_poll_cq(qp, &wc, 1)) == 0)
		mroc_wait_cq(qp, 1000);
	printf("send: %s\n", n < 0 ? mroc_strerror(n) : mroc_wc_status_str(wc.status));
	mroc_close(ctx);
	return n < 0 || wc.status != MROC_WC_SUCCESS;
}
