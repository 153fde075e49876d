// SPDX-License-Identifier: MIT
/*
 * write_client: the README's example, one RDMA WRITE into a peer's region.
 *
 *   write_server                  # on the peer: prints "rkey 0x..."
 *   write_client PEER_IP RKEY     # here: "write: success"
 *
 * The code below this comment is README.md's, byte for byte
 * (tests/e2e/test_examples.sh checks it).
 */
#include <mroc/mroc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct mroc_qp_attr attr = { .sz = sizeof(attr), .mode = MROC_QP_METAROCE };
	struct mroc_ctx *ctx = mroc_open(NULL);	/* /run/mroc/mrocd.sock */
	struct mroc_mr *mr;
	struct mroc_qp *qp;
	struct mroc_wc wc;
	int n;

	if (!ctx || argc != 3)
		return fprintf(stderr, "usage: %s PEER_IP RKEY (mrocd running?)\n", argv[0]), 1;
	mr = mroc_mr_alloc(ctx, 4096, MROC_ACCESS_LOCAL_WRITE);
	qp = mroc_qp_create(ctx, &attr);
	if (!mr || !qp || mroc_qp_connect(qp, argv[1], 42) || mroc_qp_wait_connected(qp, 5000))
		return fprintf(stderr, "setup failed\n"), 1;
	strcpy(mroc_mr_addr(mr), "hello over MetaRoCE");
	struct mroc_send_wr wr = {
		.wr_id = 1, .opcode = MROC_WR_WRITE, .flags = MROC_SEND_SIGNALED,
		.sg = { mroc_mr_addr(mr), 20, mroc_mr_lkey(mr) },
		.rkey = (uint32_t)strtoul(argv[2], NULL, 0), .remote_offset = 0,
	};
	if (mroc_post_send(qp, &wr))
		return 1;
	while ((n = mroc_poll_cq(qp, &wc, 1)) == 0)
		mroc_wait_cq(qp, 1000);
	printf("write: %s\n", n < 0 ? mroc_strerror(n) : mroc_wc_status_str(wc.status));
	mroc_close(ctx);
	return n < 0 || wc.status != MROC_WC_SUCCESS;
}
