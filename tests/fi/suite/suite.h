/* SPDX-License-Identifier: MIT */
/*
 * fi_suite (main.c says what it does): what its files share.  One file per
 * concern: common.c (failing, patterns, the out-of-band line, the objects of an
 * RDM test, completions), unit.c, cntr.c, bw.c (ping-pong and bandwidth),
 * atomic.c, msg.c (multi-receive, unexpected messages, cancel, several
 * clients), zcopy.c, cm.c (MSG endpoints' CM data).
 */
#ifndef MROC_TESTS_FI_SUITE_H
#define MROC_TESTS_FI_SUITE_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

/* common.c's, which fi_common.h's CHECK calls: print the message with the test, exit 1. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
#define FIC_HAVE_DIE

#include "fi_common.h"
#include "fi_mroc.h"

#define TIMEOUT_S	120
#define MAX_SIZES	32

/* main.c: the options, and the deadline every wait checks. */
extern const char *prov, *test, *server;
extern int port, iters, window, clients;
extern size_t sizes[MAX_SIZES];
extern int nsizes;
extern bool quick;
extern const char *hold_path;		/* -H */
extern bool srv;			/* no SERVER given: we are the server */
extern time_t deadline;

/* ---- common.c ---------------------------------------------------------------------- */

double now_s(void);
double ms_since(double t0);
uint8_t pat(uint64_t i, uint64_t seed);
void fill(uint8_t *b, size_t n, uint64_t seed);
void verify(const uint8_t *b, size_t n, uint64_t seed, const char *what);
/* An endpoint's name (a sockaddr_in or sockaddr_in6, by its family): its port, and the
 * name with another port or another host's address (ip of the name's family, else die). */
uint16_t name_port(const void *name);
void name_set_port(void *name, uint16_t p);
void name_set_ip(void *name, const char *ip);

/* The out-of-band line: a TCP connection (the client connects to SERVER:port). */
int oob_open(void);
void oob_xfer(int fd, void *out, const void *in, size_t len);
void oob_sync(int fd);
void hold(int oob, bool both);
extern struct fid_cq *progress_cq;	/* read while waiting out of band */

struct fab {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fid_mr *mr;
	uint8_t *buf;
	size_t len;
	void *desc;
	fi_addr_t peer;
	int oob;
};

struct fi_info *hints_for(uint64_t caps);
int fab_open_with(struct fab *f, uint64_t caps, size_t len, uint64_t access,
		  void (*bind)(struct fab *f));
int fab_open(struct fab *f, uint64_t caps, size_t len, uint64_t access);
void fab_close(struct fab *f);
void fab_meet(struct fab *f);

/* An operation context for each post (providers in FI_CONTEXT mode own it until completion). */
extern struct fi_context2 ctxs[4096];
extern unsigned ctx_i;
#define CTX ((void *)&ctxs[ctx_i++ % 4096])

/* The last completion reap took, and its source. */
extern struct fi_cq_tagged_entry last;
extern fi_addr_t last_src;
void reap(struct fab *f, int n);
size_t max_size(void);

#define POST(f, call) do {							\
	ssize_t _r;								\
	while ((_r = (call)) == -FI_EAGAIN) {					\
		fi_cq_read((f)->cq, NULL, 0);					\
		if (time(NULL) > deadline)					\
			die("timed out posting %s", #call);			\
	}									\
	if (_r)									\
		die("%s: %s", #call, fi_strerror((int)-_r));			\
} while (0)

#define EXPECT_ERR(call, want) do {						\
	int _r = (int)(call);							\
	if (_r != (want))							\
		die("%s: %d (%s), not %s", #call, _r, fi_strerror(-_r), #want);	\
} while (0)

/* ---- the tests (main.c runs the one named) ------------------------------------------ */

enum rma_kind { RMA_WRITE, RMA_READ, RMA_WRITEDATA };

void t_unit(void);					/* unit.c */
void unit_addrs(struct fab *f);				/* addr.c */
void unit_cntr_values(struct fab *f);			/* cntr.c */
void unit_cntr_bind(struct fab *f);
void t_cntr(void);
void pingpong(bool tagged, const size_t *sz, int nsz, int n);	/* bw.c */
void t_tagged_bw(void);
void t_rma_bw(enum rma_kind k);
void t_atomic(void);					/* atomic.c */
void t_multi_recv(void);				/* msg.c */
void t_unexpected(void);
void t_recv_cancel(void);
void t_multi_client(void);
void t_zcopy(void);					/* zcopy.c */
void t_cm_data(void);					/* cm.c */
void t_misuse(void);					/* misuse.c */
void t_misuse_msg(void);
void t_misuse_threads(void);
void t_misuse_mr(void);
void t_refused(void);					/* refused.c */

#endif
