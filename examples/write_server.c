// SPDX-License-Identifier: MIT
/*
 * write_server: the peer of write_client (the README's example).  It offers
 * a 4 KiB region for remote writes, listens on service 42, prints the
 * region's rkey for the writer, and prints what lands in the region.
 *
 *   write_server [SECONDS]        # default: wait 60 s for the write
 *
 * An RDMA WRITE makes no completion at its target, so the server watches its
 * memory: the region starts filled with 0xff and the text is complete when
 * its terminating NUL has arrived (the write is one packet here; a longer
 * one would need a flag written last, or WRITE_IMM, which makes a RECV
 * completion at the target).
 */
#include <errno.h>
#include <mroc/mroc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REGION	4096
#define SERVICE	42

int main(int argc, char **argv)
{
	struct mroc_qp_attr attr = { .sz = sizeof(attr), .mode = MROC_QP_METAROCE };
	int seconds = argc > 1 ? atoi(argv[1]) : 60;
	struct mroc_ctx *ctx = mroc_open(NULL);	/* $MROC_SOCKET, else /run/mroc/mrocd.sock */
	volatile char *buf;
	struct mroc_mr *mr;
	struct mroc_qp *qp;
	int err;

	if (!ctx)
		return fprintf(stderr, "write_server: %s (mrocd running?)\n", mroc_strerror(-errno)), 1;
	mr = mroc_mr_alloc(ctx, REGION, MROC_ACCESS_LOCAL_WRITE | MROC_ACCESS_REMOTE_WRITE);
	qp = mroc_qp_create(ctx, &attr);
	if (!mr || !qp || (err = mroc_qp_listen(qp, SERVICE)))
		return fprintf(stderr, "write_server: setup failed\n"), 1;
	buf = mroc_mr_addr(mr);
	memset((char *)buf, 0xff, REGION);
	printf("rkey 0x%x\n", mroc_mr_rkey(mr));
	fflush(stdout);		/* the writer's script reads it now, not at exit */
	err = mroc_qp_wait_connected(qp, seconds * 1000);
	if (err)
		return fprintf(stderr, "write_server: no writer: %s\n", mroc_strerror(err)), 1;
	for (int ms = 0; ms < seconds * 1000; ms++) {
		if (memchr((const char *)buf, '\0', REGION)) {
			printf("received: %s\n", (const char *)buf);
			mroc_close(ctx);
			return 0;
		}
		usleep(1000);
	}
	fprintf(stderr, "write_server: nothing written within %d s\n", seconds);
	mroc_close(ctx);
	return 1;
}
