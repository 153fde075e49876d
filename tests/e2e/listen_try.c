// SPDX-License-Identifier: MIT
/*
 * A client that tries to listen on a service id (end-to-end test helper,
 * test_services.sh: service ids have owners, #24 item 8).
 *
 *   listen_try SOCKET SERVICE N SECS
 *
 * One client, N QPs, each listening on SERVICE: prints one line per QP,
 * "listen 0" or "listen -ERRNO TEXT" (mroc_strerror's), and "create -ERRNO
 * TEXT" for the first QP mrocd refused (then no more), then holds the client
 * and its QPs SECS seconds.  Exit 0 once it ran (the test judges the lines),
 * 1 when it could not connect.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "mroc/mroc.h"

int main(int argc, char **argv)
{
	struct mroc_qp_attr attr = { .sz = sizeof(attr) };
	struct mroc_ctx_opts o = { .sz = sizeof(o) };
	struct mroc_ctx *ctx;
	uint64_t service;
	int n, secs;

	if (argc != 5) {
		fprintf(stderr, "usage: listen_try SOCKET SERVICE N SECS\n");
		return 2;
	}
	o.socket_path = argv[1];
	service = strtoull(argv[2], NULL, 0);
	n = atoi(argv[3]);
	secs = atoi(argv[4]);
	ctx = mroc_open(&o);
	if (!ctx)
		return fprintf(stderr, "listen_try: %s\n", mroc_strerror(-errno)), 1;
	for (int i = 0; i < n; i++) {
		struct mroc_qp *qp = mroc_qp_create(ctx, &attr);
		int err;

		if (!qp) {
			printf("create %d %s\n", -errno, mroc_strerror(-errno));
			break;
		}
		err = mroc_qp_listen(qp, service);
		if (err)
			printf("listen %d %s\n", err, mroc_strerror(err));
		else
			printf("listen 0\n");
	}
	fflush(stdout);
	sleep((unsigned)secs);
	mroc_close(ctx);
	return 0;
}
