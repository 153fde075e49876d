// SPDX-License-Identifier: MIT
/*
 * recv: one message by SEND/RECV, the receiving side.  It posts a receive
 * before it listens (a SEND needs one waiting at its target, as in
 * InfiniBand), waits for the completion and prints the message.
 *
 *   recv [SERVICE]                # default service 43
 *   send PEER_IP [SERVICE] [TEXT] # on the other host
 */
#include <errno.h>
#include <mroc/mroc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN	4096

int main(int argc, char **argv)
{
	struct mroc_qp_attr attr = { .sz = sizeof(attr), .mode = MROC_QP_METAROCE };
	uint64_t service = argc > 1 ? strtoull(argv[1], NULL, 0) : 43;
	struct mroc_ctx *ctx = mroc_open(NULL);
	struct mroc_recv_wr rwr;
	struct mroc_mr *mr;
	struct mroc_qp *qp;
	struct mroc_wc wc;
	int n;

	if (!ctx)
		return fprintf(stderr, "recv: %s (mrocd running?)\n", mroc_strerror(-errno)), 1;
	/* Each step says why it failed (mrocd's limits refuse with EUSERS, EDQUOT...). */
	mr = mroc_mr_alloc(ctx, LEN, MROC_ACCESS_LOCAL_WRITE);
	if (!mr)
		return fprintf(stderr, "recv: mr_alloc: %s\n", strerror(errno)), 1;
	qp = mroc_qp_create(ctx, &attr);
	if (!qp)
		return fprintf(stderr, "recv: qp_create: %s\n", strerror(errno)), 1;
	rwr = (struct mroc_recv_wr){ .wr_id = 1, .sg = { mroc_mr_addr(mr), LEN, mroc_mr_lkey(mr) } };
	n = mroc_post_recv(qp, &rwr);
	if (n)
		return fprintf(stderr, "recv: post_recv: %s\n", mroc_strerror(n)), 1;
	n = mroc_qp_listen(qp, service);
	if (n)
		return fprintf(stderr, "recv: listen: %s\n", mroc_strerror(n)), 1;
	printf("listening on service %llu\n", (unsigned long long)service);
	fflush(stdout);
	/* The first completion is the connection; the receive's follows. */
	do {
		while ((n = mroc_poll_cq(qp, &wc, 1)) == 0)
			mroc_wait_cq(qp, 1000);
	} while (n > 0 && wc.opcode == MROC_WC_CONNECTED);
	if (n < 0 || wc.opcode != MROC_WC_RECV || wc.status != MROC_WC_SUCCESS)
		return fprintf(stderr, "recv: %s\n", n < 0 ? mroc_strerror(n)
							  : mroc_wc_status_str(wc.status)), 1;
	printf("received %u bytes: %.*s\n", wc.byte_len, (int)wc.byte_len,
	       (const char *)mroc_mr_addr(mr));
	mroc_close(ctx);
	return 0;
}
