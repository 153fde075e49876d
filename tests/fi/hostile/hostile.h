/* SPDX-License-Identifier: MIT */
/*
 * fi_hostile (main.c says what it does): what its files share.  One file per
 * concern: common.c (failing, the deadline, patterns, the control line), fab.c
 * (the libfabric endpoints), raw.c (the protocol spoken by hand), victim.c,
 * attacker.c.
 */
#ifndef MROC_TESTS_FI_HOSTILE_H
#define MROC_TESTS_FI_HOSTILE_H

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <mroc/mroc.h>

/* common.c's, which fi_common.h's CHECK calls: print the message with the role, exit 1. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
#define FIC_HAVE_DIE

#include "av_table.h"
#include "fi_common.h"
#include "fi_mroc.h"
#include "proto.h"

/* The provider's connection layout (libfabric/mrocfi.h), as a peer must know it. */
#define SLOTS		32
#define SLOT		(64 * 1024 + 64)
#define CHUNK		(SLOT - MFI_HDR_LEN)
#define OFF_CREDIT_IN	0
#define OFF_RX		64
#define OFF_TX		(OFF_RX + SLOTS * SLOT)
#define REGION		(OFF_TX + SLOTS * SLOT)
#define SERVICE_BASE	0x6d666900000000ull

#define MARK		0x4d41524b00000000ull	/* marker tags: MARK | scenario */
#define T18		0x1818
#define T17		0x1717
#define T20		0x2020
#define T20B		0x2021
#define T21		0x2121
#define T21B		0x2122
#define TIMEOUT_S	(getenv("FI_HOSTILE_TIMEOUT") ? atoi(getenv("FI_HOSTILE_TIMEOUT")) : 90)

struct fab {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fi_mroc_ops *ops;
	struct sockaddr_in name;
};

struct done {
	void *ctx;
	uint64_t flags, tag, len;
	int err;
	fi_addr_t src;
};

struct chunk {
	struct mfi_hdr h;
	uint8_t *p;
};

struct raw {
	struct mroc_qp *qp;
	struct mroc_mr *mr;
	uint8_t *base;
	bool up, dead, listener;
	uint64_t sends, completed;
	uint32_t peer_freed, freed, told;
	bool withhold;			/* tell no freed slots: the peer runs out of credits */
	struct chunk *in;		/* everything received, in order */
	size_t nin, capin;
};

#define POST(f, call) do {							\
	ssize_t _r;								\
	while ((_r = (call)) == -FI_EAGAIN)					\
		reap(f);							\
	if (_r)									\
		die("%s: %s", #call, fi_strerror((int)-_r));			\
} while (0)

/* common.c */
extern const char *role;
extern int ctl;
extern time_t deadline;
extern void (*idle_fn)(void);
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void check_deadline(const char *what);
void fill(uint8_t *b, size_t n, uint8_t seed);
bool is_pat(const uint8_t *b, size_t n, uint8_t seed, uint64_t off);
bool all(const uint8_t *b, size_t n, uint8_t v);
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *hear(void);
void expect(const char *word);

/* fab.c */
extern struct done dones[4096];
extern size_t ndone;
extern struct fab V, X;
extern bool x_running;
void ep_open(struct fab *f);
void fab_open(struct fab *f);
struct fi_mroc_counters counters(struct fab *f);
void reap(struct fab *f);
struct done *find_done(void *ctx);
int count_done(void *ctx);
struct done *wait_done(struct fab *f, void *ctx, const char *what);

/* raw.c */
extern struct mroc_ctx *raw_ctx;
extern struct raw *lis[16];
extern size_t nlis;
extern struct mfi_addr M_id, X_id;
extern struct raw *raws[64];
extern size_t nraws;
uint32_t raw_credits(struct raw *r);
void raw_poll(struct raw *r);
void raw_send(struct raw *r, struct mfi_hdr *h, const void *p);
void raw_flush(struct raw *r);
struct raw *raw_dial(const struct mfi_addr *victim, const struct mfi_addr *claim);
void pump(void);
void withhold_all(struct raw *q, bool on);
struct raw *wait_op(struct raw *q, uint8_t op, size_t *from, const char *what);
void mark_all(struct raw *q, size_t *from);
void raw_marker(struct raw *r, uint64_t n);

/* victim.c, attacker.c */
int victim(int port);
int attacker(const char *vip, int port, const char *own, long fuzz);

#endif
