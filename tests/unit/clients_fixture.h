/* SPDX-License-Identifier: MIT */
/*
 * The fixture of the tests of mrocd's clients (daemon/clients/):
 * test_clients.c (tenancy) and test_clients_ctl.c (control budgets,
 * doorbells).  A real engine and peer table, the clients driven through
 * their control messages as libmroc sends them; the test plays the worker
 * thread (worker_call runs at once, counted) and its clock (now_ns: no
 * tick, zombies stay until something frees them).  Included by one test
 * file of a binary: it defines worker_call and mrocd_now_ns.
 */
#ifndef MROC_TEST_CLIENTS_FIXTURE_H
#define MROC_TEST_CLIENTS_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "abi.h"
#include "clients.h"
#include "clients_priv.h"
#include "log.h"
#include "mroc/mroc.h"
#include "peers.h"
#include "ring.h"
#include "steer.h"
#include "wire.h"
#include "worker.h"

#define TABLE	8	/* the engine's QP and region tables */

/* The test is the worker: calls run at once, on this thread (counted). */
static unsigned ncalls;

int worker_call(struct worker *w, int (*fn)(void *arg, uint64_t now), void *arg)
{
	(void)w;
	ncalls++;
	return fn(arg, 1000000);
}

/* (worker.c's, with worker_call: not linked); test_ctl_budget moves it. */
static uint64_t now_ns = 1000000;

uint64_t mrocd_now_ns(void)
{
	return now_ns;
}

struct env {
	struct engine *eng;
	struct peers *peers;
	struct steer *steer;
	struct clients *cs;
};

struct tc {
	void *cl;
	int sock[2];
	int doorbell;		/* the client's context doorbell (mrocd holds this very fd) */
};

static struct env E;

static inline void env_up2(uint32_t share_pct, uint32_t reserve_pct)
{
	const struct clients_limits lim = {
		.max_clients = 8, .max_per_uid = 8, .max_qps = 16, .max_mrs = 16,
		.max_mr_bytes = 1 << 20, .max_locked_bytes = 64 << 20,
		.max_sq_depth = 64, .max_rq_depth = 64, .default_paths = 2,
		.uid_share = share_pct, .total_mrs = TABLE, .admin_reserve = reserve_pct,
	};
	struct engine_config ec;

	log_set_level(LOG_EMERG);
	engine_config_default(&ec);
	ec.max_qps = TABLE;
	ec.max_mrs = TABLE;
	ec.seed = 1;
	E.eng = engine_create(&ec);
	E.peers = peers_create(16);
	assert_non_null(E.eng);
	assert_non_null(E.peers);
	assert_int_equal(steer_create(2, &E.steer), 0);
	E.cs = clients_create(E.eng, E.peers, TABLE, &lim, NULL);
	assert_non_null(E.cs);
	clients_set_worker(E.cs, NULL, 1, E.steer);	/* worker 1 of 2 */
}

static inline void env_up(uint32_t share_pct)
{
	env_up2(share_pct, 0);
}

static inline void env_down(void)
{
	clients_destroy(E.cs);
	steer_destroy(E.steer);
	engine_destroy(E.eng);
	peers_destroy(E.peers);
}

static inline int msg(struct tc *c, void *m, size_t len, int *fds, int nfds)
{
	union {
		struct mroc_msg_hdr h;
		uint8_t b[MROC_MSG_MAX];
	} r;
	size_t rlen = sizeof(r);

	((struct mroc_msg_hdr *)m)->len = (uint32_t)len;
	clients_msg(E.cs, c->cl, m, len, fds, nfds, &r, &rlen);
	memcpy(m, &r, len < rlen ? len : rlen);
	return r.h.status;
}

/* A client of uid (root: the administrator, as ctl.c finds one); its HELLO's status. */
static inline int try_client(struct tc *c, uid_t uid)
{
	struct ucred cred = { .pid = 100 + (pid_t)uid, .uid = uid, .gid = uid };
	struct mroc_msg_hello m = { .h.type = MROC_MSG_HELLO, .abi_version = MROC_ABI_VERSION };
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, c->sock), 0);
	c->cl = clients_open(E.cs, c->sock[0], &cred, uid == 0);
	assert_non_null(c->cl);
	c->doorbell = fd;
	return msg(c, &m, sizeof(m), &fd, 1);	/* the fd is the callee's either way */
}

static inline void open_client(struct tc *c, uid_t uid)
{
	assert_int_equal(try_client(c, uid), 0);
}

static inline void close_client(struct tc *c)
{
	clients_close(E.cs, c->cl);
	close(c->sock[0]);
	close(c->sock[1]);
}

/* Sealed against shrinking, its pages not allocated (mrocd refuses to pin it: ENODATA). */
static inline int sparse_memfd(size_t len)
{
	int fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	assert_true(fd >= 0 && !ftruncate(fd, (off_t)len) && !fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK));
	return fd;
}

/* ... with every page allocated, as libmroc leaves the memory it registers. */
static inline int sealed_memfd(size_t len)
{
	int fd = sparse_memfd(len);
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);

	assert_true(m != MAP_FAILED);
	munmap(m, len);
	return fd;
}

/* A QP as libmroc makes it, seen from the client's side. */
struct tqp {
	uint32_t qpn;
	int doorbell;		/* its own (mrocd holds this very fd) */
	struct ring_view sq;	/* producer */
	void *map;
	size_t len;
};

/*
 * A QP with rings laid out as libmroc lays them: 0 and its QPN, or -errno.
 * t: keep the client's side of it (unmap with tqp_unmap).
 */
static inline int qp_create_t(struct tc *c, uint32_t *qpn, struct tqp *t)
{
	struct mroc_msg_qp_create m = { .h.type = MROC_MSG_QP_CREATE, .mode = MROC_QP_DEFAULT,
					.sq_entries = 8, .rq_entries = 8, .cq_entries = 32 };
	uint32_t sq_off, rq_off, cq_off;
	uint64_t len = mroc_shm_layout(8, 8, 32, &sq_off, &rq_off, &cq_off);
	int fds[3] = { sealed_memfd(len), eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC),
		       eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC) };
	void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	int err, doorbell = fds[2];

	assert_true(map != MAP_FAILED);
	*(struct mroc_shm_hdr *)map = (struct mroc_shm_hdr){
		.magic = MROC_SHM_MAGIC, .abi_version = MROC_ABI_VERSION, .sq_entries = 8,
		.rq_entries = 8, .cq_entries = 32, .sq_off = sq_off, .rq_off = rq_off,
		.cq_off = cq_off, .region_len = len,
	};
	m.region_len = len;
	err = msg(c, &m, sizeof(m), fds, 3);
	*qpn = m.qpn;
	if (!t) {
		munmap(map, len);
		return err;
	}
	*t = (struct tqp){ .qpn = m.qpn, .doorbell = doorbell, .map = map, .len = len };
	ring_view_init(&t->sq, map, sq_off, 8, sizeof(struct mroc_sqe), true);
	return err;
}

static inline int qp_create(struct tc *c, uint32_t *qpn)
{
	return qp_create_t(c, qpn, NULL);
}

static inline int qp_listen(struct tc *c, uint32_t qpn, uint64_t service)
{
	struct mroc_msg_qp_listen m = { .h.type = MROC_MSG_QP_LISTEN, .qpn = qpn,
					.service_id = service };

	return msg(c, &m, sizeof(m), NULL, 0);
}

static inline int qp_destroy(struct tc *c, uint32_t qpn)
{
	struct mroc_msg_qp_destroy m = { .h.type = MROC_MSG_QP_DESTROY, .qpn = qpn };

	return msg(c, &m, sizeof(m), NULL, 0);
}

static inline int mr_reg(struct tc *c)
{
	struct mroc_msg_mr_reg m = { .h.type = MROC_MSG_MR_REG, .len = 4096,
				     .access = MROC_ACCESS_LOCAL_WRITE };
	int fd = sealed_memfd(4096);

	return msg(c, &m, sizeof(m), &fd, 1);
}

/* The worker a CONNECT_REQ for service goes to. */
static inline unsigned steered(uint64_t service)
{
	struct mroc_hdr h = { .version = MROC_WIRE_VERSION, .opcode = MROC_OP_CONNECT_REQ,
			      .src_qpn = 99 };
	struct mroc_cm_hdr cm = { .service_id = service, .mtu = 1024, .npaths = 4 };
	uint8_t b[128];
	size_t n = wire_put_hdr(b, &h);

	n += wire_put_cm(b + n, &cm);
	return steer_owner(E.steer, b, (uint32_t)n);
}

static inline void stats(struct clients_stats *st)
{
	clients_get_stats(E.cs, st);
}

#endif
