// SPDX-License-Identifier: MIT
/*
 * One QP that leaves its paths and mode to mrocd (paths 0, MROC_QP_DEFAULT),
 * connected and held open, so that a test can look at what the daemon gave
 * it (end-to-end test helper: test_reload.sh).
 *
 *   qp_hold SOCKET listen SERVICE STOPFILE
 *   qp_hold SOCKET connect PEER SERVICE STOPFILE
 *
 * Prints "qpn N" once connected, then holds the QP until STOPFILE exists
 * (at most 30 s).  Exit 0 when it was connected.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mroc/mroc.h"

int main(int argc, char **argv)
{
	struct mroc_qp_attr attr = { .sz = sizeof(attr), .mode = MROC_QP_DEFAULT };
	bool listening = argc == 5 && !strcmp(argv[2], "listen");
	struct mroc_ctx_opts o = { .sz = sizeof(o) };
	const char *stop = argv[argc - 1];
	struct mroc_ctx *ctx;
	struct mroc_qp *qp;
	int err;

	if (!listening && !(argc == 6 && !strcmp(argv[2], "connect"))) {
		fprintf(stderr, "usage: qp_hold SOCKET listen SERVICE STOPFILE\n"
				"       qp_hold SOCKET connect PEER SERVICE STOPFILE\n");
		return 2;
	}
	o.socket_path = argv[1];
	ctx = mroc_open(&o);
	if (!ctx)
		return fprintf(stderr, "qp_hold: %s\n", mroc_strerror(-errno)), 1;
	qp = mroc_qp_create(ctx, &attr);
	if (!qp)
		return fprintf(stderr, "qp_hold: create: %s\n", mroc_strerror(-errno)), 1;
	err = listening ? mroc_qp_listen(qp, strtoull(argv[3], NULL, 0)) :
		       mroc_qp_connect(qp, argv[3], strtoull(argv[4], NULL, 0));
	if (!err)
		err = mroc_qp_wait_connected(qp, 20000);
	if (err)
		return fprintf(stderr, "qp_hold: %s\n", mroc_strerror(err)), 1;
	printf("qpn %u\n", mroc_qp_num(qp));
	fflush(stdout);
	for (int i = 0; i < 300 && access(stop, F_OK); i++)
		usleep(100000);
	mroc_close(ctx);
	return 0;
}
