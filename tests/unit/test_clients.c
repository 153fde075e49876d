// SPDX-License-Identifier: MIT
/*
 * mrocd's clients as tenants of one daemon (daemon/clients/, #24 items 8
 * and 12), driven through their control messages as libmroc sends them,
 * with a real engine; the test plays the worker thread (worker_call runs at
 * once) and its clock (no tick: zombies stay until something frees them).
 *  - service ids have owners: another client's LISTEN gets EADDRINUSE, the
 *    owner's other QPs may listen too, the steering table (two workers) is
 *    written for the owner only and freed with the binding;
 *  - one user's share of the QP and region tables (limits.uid_share_percent):
 *    EDQUOT over it, another user unaffected;
 *  - the administrators' reserve (limits.admin_reserve_percent): users
 *    together cannot take the last clients, QPs and regions; root can;
 *  - zombies (destroyed QPs still telling their peers) give their engine
 *    slots to new QPs when the table is full;
 *  - a destroyed QP with nothing to tell a peer (never connected) is no
 *    zombie: its engine slot is free at once;
 *  - a registered memfd is sealed against hole punching (PROTOCOL 11a);
 *  - the RECV and CQ entries a QP may hold in the engine are charged to its
 *    client's bytes (limits.max_mr_bytes_per_client) until the QP goes:
 *    EDQUOT over them;
 *  - each client's control requests are budgeted (limits.ctl_rate_per_client,
 *    ctl_burst_per_client): a burst at once, then one per interval, the
 *    waits counted; another client's budget is its own; what a user's
 *    clients send before HELLO shares one budget of the user's, and a
 *    client that never said HELLO costs the worker no call; a user's spent
 *    budget pushed out of its table by its other uids stays spent;
 *  - doorbells (#22): the worker sleeps on one fd however many clients,
 *    and takes any number of rung doorbells with one system call;
 *    qps_sending counts the QPs a send work request was taken from.
 */
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

static void env_up2(uint32_t share_pct, uint32_t reserve_pct)
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

static void env_up(uint32_t share_pct)
{
	env_up2(share_pct, 0);
}

static void env_down(void)
{
	clients_destroy(E.cs);
	steer_destroy(E.steer);
	engine_destroy(E.eng);
	peers_destroy(E.peers);
}

static int msg(struct tc *c, void *m, size_t len, int *fds, int nfds)
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
static int try_client(struct tc *c, uid_t uid)
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

static void open_client(struct tc *c, uid_t uid)
{
	assert_int_equal(try_client(c, uid), 0);
}

static void close_client(struct tc *c)
{
	clients_close(E.cs, c->cl);
	close(c->sock[0]);
	close(c->sock[1]);
}

/* Sealed against shrinking, its pages not allocated (mrocd refuses to pin it: ENODATA). */
static int sparse_memfd(size_t len)
{
	int fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	assert_true(fd >= 0 && !ftruncate(fd, (off_t)len) && !fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK));
	return fd;
}

/* ... with every page allocated, as libmroc leaves the memory it registers. */
static int sealed_memfd(size_t len)
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
static int qp_create_t(struct tc *c, uint32_t *qpn, struct tqp *t)
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

static int qp_create(struct tc *c, uint32_t *qpn)
{
	return qp_create_t(c, qpn, NULL);
}

static int qp_listen(struct tc *c, uint32_t qpn, uint64_t service)
{
	struct mroc_msg_qp_listen m = { .h.type = MROC_MSG_QP_LISTEN, .qpn = qpn,
					.service_id = service };

	return msg(c, &m, sizeof(m), NULL, 0);
}

static int qp_destroy(struct tc *c, uint32_t qpn)
{
	struct mroc_msg_qp_destroy m = { .h.type = MROC_MSG_QP_DESTROY, .qpn = qpn };

	return msg(c, &m, sizeof(m), NULL, 0);
}

static int mr_reg(struct tc *c)
{
	struct mroc_msg_mr_reg m = { .h.type = MROC_MSG_MR_REG, .len = 4096,
				     .access = MROC_ACCESS_LOCAL_WRITE };
	int fd = sealed_memfd(4096);

	return msg(c, &m, sizeof(m), &fd, 1);
}

/* The worker a CONNECT_REQ for service goes to. */
static unsigned steered(uint64_t service)
{
	struct mroc_hdr h = { .version = MROC_WIRE_VERSION, .opcode = MROC_OP_CONNECT_REQ,
			      .src_qpn = 99 };
	struct mroc_cm_hdr cm = { .service_id = service, .mtu = 1024, .npaths = 4 };
	uint8_t b[128];
	size_t n = wire_put_hdr(b, &h);

	n += wire_put_cm(b + n, &cm);
	return steer_owner(E.steer, b, (uint32_t)n);
}

static void stats(struct clients_stats *st)
{
	clients_get_stats(E.cs, st);
}

static void test_service_owner(void **state)
{
	struct tc a, b, c;
	uint32_t qa1, qa2, qb, qc;
	struct clients_stats st;

	(void)state;
	env_up(100);
	open_client(&a, 1000);
	open_client(&b, 1000);	/* the same user, another client */
	open_client(&c, 2000);
	assert_int_equal(qp_create(&a, &qa1), 0);
	assert_int_equal(qp_create(&a, &qa2), 0);
	assert_int_equal(qp_create(&b, &qb), 0);
	assert_int_equal(qp_create(&c, &qc), 0);
	assert_int_equal(steered(0x5e71), 0);
	assert_int_equal(qp_listen(&a, qa1, 0x5e71), 0);
	assert_int_equal(steered(0x5e71), 1);			/* a's worker */
	assert_int_equal(qp_listen(&a, qa2, 0x5e71), 0);	/* the owner's second QP */
	assert_int_equal(qp_listen(&b, qb, 0x5e71), -EADDRINUSE);
	assert_int_equal(qp_listen(&c, qc, 0x5e71), -EADDRINUSE);
	assert_int_equal(qp_listen(&c, qc, 0x5e72), 0);	/* another service: its own */
	stats(&st);
	assert_int_equal(st.listen_refused, 2);
	assert_int_equal(st.services, 2);
	assert_int_equal(steer_services(E.steer), 2);
	/* One of the owner's listeners gone: still its; both gone: free. */
	assert_int_equal(qp_destroy(&a, qa1), 0);
	assert_int_equal(qp_listen(&b, qb, 0x5e71), -EADDRINUSE);
	assert_int_equal(qp_destroy(&a, qa2), 0);
	assert_int_equal(steered(0x5e71), 0);			/* slot freed with it */
	assert_int_equal(steer_services(E.steer), 1);
	assert_int_equal(qp_listen(&b, qb, 0x5e71), 0);
	/* The client's end frees its services too. */
	close_client(&b);
	close_client(&c);
	stats(&st);
	assert_int_equal(st.services, 0);
	assert_int_equal(steer_services(E.steer), 0);
	close_client(&a);
	env_down();
}

static void test_uid_share(void **state)
{
	struct tc a, b, c;
	uint32_t q[TABLE];
	struct clients_stats st;
	int n = 0, err;

	(void)state;
	env_up(50);	/* 4 QPs and 4 regions of the 8 per user */
	open_client(&a, 1000);
	open_client(&b, 1000);
	open_client(&c, 2000);
	/* Two clients of one user, each under its own limit (16): 4 QPs between them. */
	while ((err = qp_create(n % 2 ? &b : &a, &q[n])) == 0 && n < TABLE - 1)
		n++;
	assert_int_equal(n, 4);
	assert_int_equal(err, -EDQUOT);
	for (n = 0; (err = mr_reg(n % 2 ? &b : &a)) == 0 && n < TABLE; n++)
		;
	assert_int_equal(n, 4);
	assert_int_equal(err, -EDQUOT);
	/* Another user still gets its share. */
	for (n = 0; n < 4; n++)
		assert_int_equal(qp_create(&c, &q[n]), 0);
	assert_int_equal(mr_reg(&c), 0);
	stats(&st);
	assert_int_equal(st.share_refused, 2);
	/* A's QPs gone with it: its user may have them again. */
	close_client(&a);
	assert_int_equal(qp_create(&b, &q[0]), 0);
	close_client(&b);
	close_client(&c);
	env_down();
}

/*
 * The engine connects qpn as a requester would (its REQ is not looked at): a
 * CONNECT_REP from peer handle 1 answers it, and a KEEPALIVE of the peer's
 * QP answers its RTU (engine/cm.c: connected only then).
 */
static void connect_by_hand(uint32_t qpn, uint32_t peer_qpn)
{
	struct mroc_hdr h = { .version = MROC_WIRE_VERSION, .opcode = MROC_OP_CONNECT_REP,
			      .dst_qpn = qpn, .src_qpn = peer_qpn };
	struct mroc_cm_hdr cm = { .service_id = 0x5e71, .mtu = 1024, .npaths = 2,
				  .mode = MROC_MODE_METAROCE };
	struct engine_rx_meta meta = { .peer = 1, .sport = 49152 };
	struct engine_qp_info info;
	uint8_t b[128];
	size_t n = wire_put_hdr(b, &h);

	n += wire_put_cm(b + n, &cm);
	assert_int_equal(engine_qp_connect(E.eng, qpn, 1, 0x5e71, 1000000), 0);
	assert_int_equal(engine_rx(E.eng, 1000000, b, n, &meta), 0);
	h.opcode = MROC_OP_KEEPALIVE;
	n = wire_put_hdr(b, &h);
	assert_int_equal(engine_rx(E.eng, 1000000, b, n, &meta), 0);
	assert_int_equal(engine_qp_info(E.eng, qpn, &info), 0);
	assert_int_equal(info.state, ENGINE_QPS_CONNECTED);
}

/*
 * Several users together (each within its share) fill the tables but for
 * the administrators' reserve: 25 % of 8 clients, QPs and regions.
 */
/*
 * #24 case 9: protection domains are 64-bit and never reused.  Clients opened
 * across 2^32 get domains 2^32 - 1 and 2^32: the second neither wraps to the
 * daemon's own domain 0 nor to the first client's 1 (with 32-bit domains,
 * 2^32 connections brought domain 0 back, and with it its regions' keys).
 */
static void test_pd_no_wrap(void **state)
{
	struct tc a, b, c;

	(void)state;
	env_up(100);
	E.cs->ctl->next_pd = UINT32_MAX;
	assert_int_equal(try_client(&a, 1000), 0);
	assert_int_equal(try_client(&b, 1000), 0);
	assert_int_equal(try_client(&c, 1001), 0);
	assert_true(((struct client *)a.cl)->pd == UINT32_MAX);
	assert_true(((struct client *)b.cl)->pd == (uint64_t)UINT32_MAX + 1);
	assert_true(((struct client *)c.cl)->pd == (uint64_t)UINT32_MAX + 2);
	close_client(&a);
	close_client(&b);
	close_client(&c);
	env_down();
}

/* MR_REG of len bytes of fd (a duplicate: clients_msg takes the fds it is given). */
static int mr_reg_fd(struct tc *c, int fd, uint64_t len)
{
	struct mroc_msg_mr_reg m = { .h.type = MROC_MSG_MR_REG, .len = len,
				     .access = MROC_ACCESS_LOCAL_WRITE };
	int dup_fd = dup(fd);

	assert_true(dup_fd >= 0);
	return msg(c, &m, sizeof(m), &dup_fd, 1);
}

/*
 * Memory the client never allocated is not pinned: mrocd's mlock would
 * allocate it, charged to mrocd's memory cgroup instead of the client's.
 * A region or a QP's rings with one page missing: ENODATA, counted, nothing
 * locked; the same memfd once every page exists: registered.
 */
static void test_unallocated_refused(void **state)
{
	struct mroc_msg_qp_create qc = { .h.type = MROC_MSG_QP_CREATE, .mode = MROC_QP_DEFAULT,
					 .sq_entries = 64, .rq_entries = 64, .cq_entries = 256 };
	uint32_t sq_off, rq_off, cq_off;
	uint64_t rlen = mroc_shm_layout(64, 64, 256, &sq_off, &rq_off, &cq_off);
	struct clients_stats st;
	struct tc a;
	uint8_t *map;
	int fd, qfds[3];

	(void)state;
	env_up(100);
	open_client(&a, 1000);
	fd = sparse_memfd(8 * 4096);
	assert_int_equal(mr_reg_fd(&a, fd, 8 * 4096), -ENODATA);
	/* Refused before mrocd sealed it: the client can still mend it. */
	assert_false(fcntl(fd, F_GET_SEALS) & F_SEAL_FUTURE_WRITE);
	map = mmap(NULL, 8 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(map != MAP_FAILED);
	memset(map, 0, 7 * 4096);	/* the last page still missing */
	assert_int_equal(mr_reg_fd(&a, fd, 8 * 4096), -ENODATA);
	assert_int_equal(clients_locked_bytes(E.cs), 0);
	map[7 * 4096] = 0;
	assert_int_equal(mr_reg_fd(&a, fd, 8 * 4096), 0);
	assert_int_equal(clients_locked_bytes(E.cs), 8 * 4096);
	munmap(map, 8 * 4096);
	close(fd);

	/* The rings too (libmroc writes the header: the first page alone is there). */
	qfds[0] = sparse_memfd(rlen);
	qfds[1] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	qfds[2] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	map = mmap(NULL, rlen, PROT_READ | PROT_WRITE, MAP_SHARED, qfds[0], 0);
	assert_true(map != MAP_FAILED);
	*(struct mroc_shm_hdr *)map = (struct mroc_shm_hdr){
		.magic = MROC_SHM_MAGIC, .abi_version = MROC_ABI_VERSION, .sq_entries = 64,
		.rq_entries = 64, .cq_entries = 256, .sq_off = sq_off, .rq_off = rq_off,
		.cq_off = cq_off, .region_len = rlen,
	};
	qc.region_len = rlen;
	assert_true(rlen > 4096);
	assert_int_equal(msg(&a, &qc, sizeof(qc), qfds, 3), -ENODATA);
	stats(&st);
	assert_int_equal(st.unpopulated_refused, 3);
	assert_int_equal(clients_locked_bytes(E.cs), 8 * 4096);
	munmap(map, rlen);
	close_client(&a);
	assert_int_equal(clients_locked_bytes(E.cs), 0);
	env_down();
}

/* MR_REG of len bytes of fd: 0 and its lkey, or -errno. */
static int mr_reg_flags(struct tc *c, int fd, uint64_t len, uint32_t flags, uint32_t *lkey)
{
	struct mroc_msg_mr_reg m = { .h.type = MROC_MSG_MR_REG, .len = len,
				     .access = MROC_ACCESS_LOCAL_WRITE, .flags = flags };
	int dup_fd = dup(fd), err;

	assert_true(dup_fd >= 0);
	err = msg(c, &m, sizeof(m), &dup_fd, 1);
	*lkey = m.lkey;
	return err;
}

static int mr_reg_key(struct tc *c, int fd, uint64_t len, uint32_t *lkey)
{
	struct mroc_msg_mr_reg m = { .h.type = MROC_MSG_MR_REG, .len = len,
				     .access = MROC_ACCESS_LOCAL_WRITE };
	int dup_fd = dup(fd), err;

	assert_true(dup_fd >= 0);
	err = msg(c, &m, sizeof(m), &dup_fd, 1);
	*lkey = m.lkey;
	return err;
}

static int mr_dereg(struct tc *c, uint32_t lkey)
{
	struct mroc_msg_mr_dereg m = { .h.type = MROC_MSG_MR_DEREG, .lkey = lkey };

	return msg(c, &m, sizeof(m), NULL, 0);
}

/* The pinned mapping of c's region lkey (the daemon's side). */
static uint8_t *pinned_map(struct tc *c, uint32_t lkey)
{
	const struct client *cl = c->cl;

	for (uint32_t i = 0; i < cl->nmrs; i++)
		if (cl->mrs[i].lkey == lkey)
			return cl->mrs[i].map;
	fail();
	return NULL;
}

/*
 * A registered memfd keeps its pages (PROTOCOL 11a): once mrocd has mapped
 * it, it seals it against writes by new mappings (F_SEAL_FUTURE_WRITE), so
 * the client's hole punching (fallocate, madvise MADV_REMOVE) fails with
 * EPERM: it cannot drop pinned pages for mrocd's data path to fault in
 * again on mrocd's account.  The client's own mapping still writes, and
 * mrocd's sees it.  A memfd mrocd could not seal is refused, counted
 * (seal_refused): closed to new seals (F_SEAL_SEAL).  A QP's rings too.
 */
static void test_punch_refused(void **state)
{
	struct clients_stats st;
	struct tqp t;
	struct tc a;
	uint8_t *map;
	uint32_t qpn, k;
	int fd, fd2;

	(void)state;
	env_up(100);
	open_client(&a, 1000);
	fd = sparse_memfd(4 * 4096);
	map = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(mr_reg_key(&a, fd, 4 * 4096, &k), 0);
	assert_true(fcntl(fd, F_GET_SEALS) & F_SEAL_FUTURE_WRITE);
	assert_int_equal(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(madvise(map + 4096, 4096, MADV_REMOVE), -1);
	assert_int_equal(errno, EPERM);
	memset(map, 0x5a, 4 * 4096);
	assert_int_equal(pinned_map(&a, k)[0], 0x5a);
	assert_int_equal(pinned_map(&a, k)[4 * 4096 - 1], 0x5a);
	assert_true(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED);
	/* Closed to new seals: mrocd could not seal it. */
	fd2 = sealed_memfd(4096);
	assert_int_equal(fcntl(fd2, F_ADD_SEALS, F_SEAL_SEAL), 0);
	assert_int_equal(mr_reg_fd(&a, fd2, 4096), -EPERM);
	close(fd2);
	/* Without MFD_ALLOW_SEALING (so not sealed against shrinking): EPERM as ever. */
	fd2 = memfd_create("t", MFD_CLOEXEC);
	assert_true(fd2 >= 0 && !ftruncate(fd2, 4096));
	assert_int_equal(mr_reg_fd(&a, fd2, 4096), -EPERM);
	close(fd2);
	stats(&st);
	assert_int_equal(st.seal_refused, 1);
	assert_int_equal(clients_locked_bytes(E.cs), 4 * 4096);
	/* The rings. */
	assert_int_equal(qp_create_t(&a, &qpn, &t), 0);
	assert_int_equal(madvise(t.map, 4096, MADV_REMOVE), -1);
	assert_int_equal(errno, EPERM);
	munmap(t.map, t.len);
	close_client(&a);
	assert_int_equal(clients_locked_bytes(E.cs), 0);
	munmap(map, 4 * 4096);
	close(fd);
	env_down();
}

/*
 * A memfd sealed by an earlier registration can be registered again while
 * one of the same client's regions maps it: mrocd copies that mapping
 * (mremap), writable, pinned, from the file's start, longer if every page
 * of the longer range is there (checked before: the copy of a locked
 * mapping is populated, and a missing page would be allocated on mrocd's
 * account).  Not for another client (it could only read the file), not
 * once the last such region is gone, never for rings: EPERM, counted.
 */
static void test_sealed_again(void **state)
{
	struct mroc_msg_qp_create qc = { .h.type = MROC_MSG_QP_CREATE, .mode = MROC_QP_DEFAULT,
					 .sq_entries = 64, .rq_entries = 64, .cq_entries = 256 };
	uint32_t k1, k2, k3, kb, sq_off, rq_off, cq_off;
	struct clients_stats st;
	struct stat fs;
	struct tc a, b;
	uint8_t *map;
	int fd, qfds[3];

	(void)state;
	env_up(100);
	open_client(&a, 1000);
	open_client(&b, 1000);
	fd = sparse_memfd(8 * 4096);
	map = mmap(NULL, 8 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(map != MAP_FAILED);
	memset(map, 1, 4 * 4096);		/* the first half only */
	assert_int_equal(mr_reg_key(&a, fd, 4 * 4096, &k1), 0);
	assert_int_equal(mr_reg_key(&a, fd, 2 * 4096, &k2), 0);	/* shorter */
	pinned_map(&a, k2)[4096] = 7;		/* writable, the same pages */
	assert_int_equal(map[4096], 7);
	/* Longer, over pages never allocated: refused, and none allocated. */
	assert_int_equal(mr_reg_key(&a, fd, 8 * 4096, &k3), -ENODATA);
	assert_int_equal(fstat(fd, &fs), 0);
	assert_int_equal(fs.st_blocks * 512, 4 * 4096);
	memset(map + 4 * 4096, 2, 4 * 4096);
	assert_int_equal(mr_reg_key(&a, fd, 8 * 4096, &k3), 0);
	map[7 * 4096] = 9;
	assert_int_equal(pinned_map(&a, k3)[7 * 4096], 9);
	assert_int_equal(clients_locked_bytes(E.cs), 14 * 4096);
	/* Another client: no. */
	assert_int_equal(mr_reg_key(&b, fd, 4 * 4096, &kb), -EPERM);
	/* Nor as rings. */
	qc.region_len = mroc_shm_layout(64, 64, 256, &sq_off, &rq_off, &cq_off);
	qfds[0] = sealed_memfd(qc.region_len);
	qfds[1] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	qfds[2] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_int_equal(fcntl(qfds[0], F_ADD_SEALS, F_SEAL_FUTURE_WRITE), 0);
	assert_int_equal(msg(&a, &qc, sizeof(qc), qfds, 3), -EPERM);
	stats(&st);
	assert_int_equal(st.seal_refused, 2);
	/* While one region maps it, again; once none does, the file is no one's to map writable. */
	assert_int_equal(mr_dereg(&a, k1), 0);
	assert_int_equal(mr_dereg(&a, k3), 0);
	assert_int_equal(mr_reg_key(&a, fd, 4 * 4096, &k1), 0);	/* from k2's 2 pages */
	assert_int_equal(pinned_map(&a, k1)[3 * 4096], 1);
	assert_int_equal(mr_dereg(&a, k1), 0);
	assert_int_equal(mr_dereg(&a, k2), 0);
	assert_int_equal(mr_reg_key(&a, fd, 4096, &k1), -EPERM);
	stats(&st);
	assert_int_equal(st.seal_refused, 3);
	assert_int_equal(clients_locked_bytes(E.cs), 0);
	close_client(&a);
	close_client(&b);
	assert_int_equal(clients_locked_bytes(E.cs), 0);
	munmap(map, 8 * 4096);
	close(fd);
	env_down();
}

/*
 * An application's memfd registered with MROC_MR_REG_KEEP_FILE registers
 * again after its last region went (a registration cache evicting and
 * registering one buffer): mrocd kept a page of its mapping (counted as
 * locked) and copies it, writable, pinned, longer if every page is there;
 * until the client goes.  Unknown flags: EINVAL.
 */
static void test_sealed_again_kept(void **state)
{
	uint32_t k1, k2;
	struct tc a;
	uint8_t *map;
	int fd;

	(void)state;
	env_up(100);
	open_client(&a, 1000);
	fd = sparse_memfd(8 * 4096);
	map = mmap(NULL, 8 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(map != MAP_FAILED);
	memset(map, 1, 8 * 4096);
	assert_int_equal(mr_reg_flags(&a, fd, 4096, 0x80, &k1), -EINVAL);
	assert_int_equal(mr_reg_flags(&a, fd, 4 * 4096, MROC_MR_REG_KEEP_FILE, &k1), 0);
	assert_int_equal(mr_dereg(&a, k1), 0);
	assert_int_equal(clients_locked_bytes(E.cs), 4096);	/* the anchor's page */
	assert_int_equal(mr_reg_flags(&a, fd, 8 * 4096, MROC_MR_REG_KEEP_FILE, &k2), 0);
	pinned_map(&a, k2)[6 * 4096] = 7;
	assert_int_equal(map[6 * 4096], 7);
	map[5 * 4096] = 9;
	assert_int_equal(pinned_map(&a, k2)[5 * 4096], 9);
	assert_int_equal(clients_locked_bytes(E.cs), 9 * 4096);
	assert_int_equal(mr_dereg(&a, k2), 0);
	/* One anchor a file: the second region's going keeps no other. */
	assert_int_equal(clients_locked_bytes(E.cs), 4096);
	assert_int_equal(mr_reg_key(&a, fd, 2 * 4096, &k1), 0);	/* from the anchor, too */
	assert_int_equal(mr_dereg(&a, k1), 0);
	close_client(&a);
	assert_int_equal(clients_locked_bytes(E.cs), 0);
	munmap(map, 8 * 4096);
	close(fd);
	env_down();
}

/*
 * A hugetlbfs memfd is refused (EOPNOTSUPP) before mrocd maps anything:
 * mincore reads a hugetlb mapping's page tables, so every page of a fresh
 * mapping read missing (ENODATA, whatever the client populated), munmap
 * wants a multiple of the huge page, and mremap cannot copy one.  Its size
 * needs no huge page reserved.
 */
static void test_hugetlb_refused(void **state)
{
	int fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB);
	struct statfs sfs;
	struct tc a;

	(void)state;
	if (fd < 0 || fstatfs(fd, &sfs) || ftruncate(fd, (off_t)sfs.f_bsize)) {
		if (fd >= 0)
			close(fd);
		skip();		/* no hugetlbfs here */
	}
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	env_up(100);
	open_client(&a, 1000);
	assert_int_equal(mr_reg_fd(&a, fd, 4096), -EOPNOTSUPP);
	assert_int_equal(clients_locked_bytes(E.cs), 0);
	assert_false(fcntl(fd, F_GET_SEALS) & F_SEAL_FUTURE_WRITE);
	close_client(&a);
	env_down();
	close(fd);
}

static void test_admin_reserve(void **state)
{
	struct tc u[6], extra, root;
	uint32_t q[TABLE];
	struct clients_stats st;
	int n;

	(void)state;
	env_up2(50, 25);	/* 4 of 8 per user, 6 of 8 for users together */
	for (int i = 0; i < 6; i++)
		open_client(&u[i], 1000 + (uid_t)(i / 2));	/* 3 users, 2 clients each */
	assert_int_equal(try_client(&extra, 1003), -EUSERS);	/* within its share */
	close_client(&extra);
	/* QPs: users 1000 and 1001 hold 6, within their shares (4 each). */
	for (n = 0; n < 6; n++)
		assert_int_equal(qp_create(&u[n % 4], &q[n]), 0);
	assert_int_equal(qp_create(&u[4], &q[6]), -EDQUOT);	/* user 1002: none yet */
	for (n = 0; n < 6; n++)
		assert_int_equal(mr_reg(&u[n % 4]), 0);
	assert_int_equal(mr_reg(&u[5]), -EDQUOT);
	stats(&st);
	assert_int_equal(st.reserve_refused, 3);
	assert_int_equal(st.share_refused, 0);
	/* The administrator gets the reserve. */
	open_client(&root, 0);
	for (n = 6; n < TABLE; n++)
		assert_int_equal(qp_create(&root, &q[n]), 0);
	assert_int_equal(mr_reg(&root), 0);
	/* A user's QP gone: another user may take its place. */
	assert_int_equal(qp_destroy(&u[0], q[0]), 0);
	assert_int_equal(qp_create(&u[4], &q[0]), 0);
	assert_int_equal(qp_create(&u[5], &q[1]), -EDQUOT);
	for (int i = 0; i < 6; i++)
		close_client(&u[i]);
	close_client(&root);
	env_down();
}

static void test_zombies_yield(void **state)
{
	struct tc a, b;
	uint32_t q[TABLE];
	struct clients_stats st;

	(void)state;
	env_up(100);
	open_client(&a, 1000);
	for (int i = 0; i < TABLE; i++) {
		assert_int_equal(qp_create(&a, &q[i]), 0);
		connect_by_hand(q[i], 500 + (uint32_t)i);
	}
	/* The client goes: its 8 QPs are zombies, the table is full of them. */
	close_client(&a);
	open_client(&b, 2000);
	for (int i = 0; i < TABLE; i++)
		assert_int_equal(qp_create(&b, &q[i]), 0);
	stats(&st);
	assert_int_equal(st.zombies_cut, TABLE);
	assert_int_equal(st.qps, TABLE);
	close_client(&b);
	env_down();
}

/*
 * QPs that never connected have nothing to tell a peer: destroyed, or gone
 * with their client, their engine slots are free at once (they were 2 s
 * zombies: a user creating and destroying QPs in a loop held the table).
 */
static void test_unconnected_no_zombie(void **state)
{
	struct tc a, b;
	uint32_t q[TABLE];
	struct engine_qp_info info;
	struct clients_stats st;

	(void)state;
	env_up(100);
	open_client(&a, 1000);
	assert_int_equal(qp_create(&a, &q[0]), 0);
	assert_int_equal(qp_destroy(&a, q[0]), 0);
	assert_int_equal(engine_qp_info(E.eng, q[0], &info), -ENOENT);
	for (int i = 0; i < TABLE; i++)
		assert_int_equal(qp_create(&a, &q[i]), 0);
	close_client(&a);
	for (int i = 0; i < TABLE; i++)
		assert_int_equal(engine_qp_info(E.eng, q[i], &info), -ENOENT);
	open_client(&b, 2000);
	for (int i = 0; i < TABLE; i++)
		assert_int_equal(qp_create(&b, &q[i]), 0);
	stats(&st);
	assert_int_equal(st.zombies_cut, 0);	/* nothing to cut: none was a zombie */
	close_client(&b);
	env_down();
}

static void ring(int fd)
{
	uint64_t one = 1;

	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
}

/* Is the worker's fd readable (would its sleep end)? */
static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/*
 * A QP's receive queue (its RECV entries) and its completion queue (room
 * for every send and receive WR and 8 events, a power of two), both held in
 * the daemon's engine, are charged to its client's budget of registered
 * bytes: 4096 of a region and two QPs of 8 RECV entries (32 bytes each) and
 * 32 CQ entries fill it; a third QP gets EDQUOT until one goes.  Before the
 * CQ was charged, a client's QPs of 8 RECVs and 1,008 sends held 30 times
 * what it was charged.
 */
#define QP_BYTES	(8 * sizeof(struct mroc_rqe) + 32 * sizeof(struct engine_cqe))

static void test_rq_charged(void **state)
{
	struct clients_limits lim;
	struct tc a, b;
	uint32_t q[4];

	(void)state;
	env_up(0);
	lim = E.cs->lim;
	lim.max_mr_bytes = 4096 + 2 * QP_BYTES;
	clients_set_limits(E.cs, &lim);
	open_client(&a, 1000);
	open_client(&b, 2000);
	assert_int_equal(mr_reg(&a), 0);
	assert_int_equal(qp_create(&a, &q[0]), 0);
	assert_int_equal(qp_create(&a, &q[1]), 0);
	assert_int_equal(qp_create(&a, &q[2]), -EDQUOT);
	/* Another client's bytes are its own. */
	assert_int_equal(qp_create(&b, &q[3]), 0);
	/* Released with the QP. */
	assert_int_equal(qp_destroy(&a, q[0]), 0);
	assert_int_equal(qp_create(&a, &q[0]), 0);
	assert_int_equal(mr_reg(&a), -EDQUOT);
	close_client(&a);
	close_client(&b);
	env_down();
}

/*
 * A client's request budget: 100 a second, 4 at once.  clients_wait_ns is
 * what ctl.c waits before it reads the client's next message.
 */
static void test_ctl_budget(void **state)
{
	struct clients_limits lim;
	struct clients_stats st;
	struct tc a, b;
	uint64_t t0, end;
	int n;

	(void)state;
	env_up(0);
	lim = E.cs->lim;
	lim.ctl_rate = 100;
	lim.ctl_burst = 4;
	clients_set_limits(E.cs, &lim);
	open_client(&a, 1000);
	open_client(&b, 2000);
	t0 = now_ns;
	assert_int_equal(clients_wait_ns(a.cl), 0);	/* HELLO is not charged */
	for (n = 0; n < 3; n++) {
		assert_int_equal(qp_destroy(&a, 12345), -ENOENT);	/* bad ones are charged too */
		assert_int_equal(clients_wait_ns(a.cl), 0);
	}
	assert_int_equal(qp_destroy(&a, 12345), -ENOENT);
	assert_int_equal(clients_wait_ns(a.cl), 10000000);	/* the burst spent: 1 s / 100 */
	/* Another client's budget is its own. */
	assert_int_equal(qp_destroy(&b, 12345), -ENOENT);
	assert_int_equal(clients_wait_ns(b.cl), 0);
	stats(&st);
	assert_int_equal(st.ctl_deferred, 1);
	now_ns += 4000000;
	assert_int_equal(clients_wait_ns(a.cl), 6000000);
	now_ns += 6000000;
	assert_int_equal(clients_wait_ns(a.cl), 0);
	/* A client in a loop, read whenever its budget allows, for 1 s: the burst and the rate. */
	now_ns = t0 + 1000000000ULL;
	end = now_ns + 1000000000ULL;
	for (n = 0; now_ns < end;) {
		uint64_t w = clients_wait_ns(a.cl);

		if (w) {
			now_ns += w;
			continue;
		}
		assert_int_equal(qp_destroy(&a, 12345), -ENOENT);
		n++;
	}
	assert_in_range(n, 100, 104);
	/* Before HELLO: one budget for all of a user's new clients. */
	{
		struct ucred cred = { .pid = 77, .uid = 3000, .gid = 3000 };
		struct mroc_msg_hello m = { .h.type = MROC_MSG_HELLO,
					    .abi_version = MROC_ABI_VERSION };
		struct tc c[5], d;
		unsigned calls = ncalls;

		for (n = 0; n < 5; n++) {
			assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
						    c[n].sock), 0);
			c[n].cl = clients_open(E.cs, c[n].sock[0], &cred, false);
			assert_non_null(c[n].cl);
			if (n < 4) {
				int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

				assert_int_equal(clients_wait_ns(c[n].cl), 0);
				assert_int_equal(msg(&c[n], &m, sizeof(m), &fd, 1), 0);
			}
		}
		assert_int_equal(clients_wait_ns(c[4].cl), 10000000);
		/* Its own budget after HELLO; another user's new client is not held. */
		assert_int_equal(clients_wait_ns(c[0].cl), 0);
		assert_int_equal(try_client(&d, 4000), 0);
		/* One worker call a HELLO, one an end; none for a client without HELLO. */
		assert_int_equal(ncalls - calls, 4 + 1);
		calls = ncalls;
		close_client(&c[4]);
		assert_int_equal(ncalls, calls);
		for (n = 0; n < 4; n++)
			close_client(&c[n]);
		assert_int_equal(ncalls - calls, 4);
		close_client(&d);
	}
	/* Rate 0: no budget. */
	lim.ctl_rate = 0;
	clients_set_limits(E.cs, &lim);
	for (n = 0; n < 100; n++)
		assert_int_equal(qp_destroy(&a, 12345), -ENOENT);
	assert_int_equal(clients_wait_ns(a.cl), 0);
	now_ns = 1000000;
	close_client(&a);
	close_client(&b);
	env_down();
}

/* A client of uid that never says HELLO, its n messages (bad ones: charged all the same). */
static void pre_hello(struct tc *c, uid_t uid, int n)
{
	struct ucred cred = { .pid = 100 + (pid_t)uid, .uid = uid, .gid = uid };

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, c->sock), 0);
	c->cl = clients_open(E.cs, c->sock[0], &cred, false);
	assert_non_null(c->cl);
	while (n--)
		assert_int_equal(qp_destroy(c, 12345), -EPROTO);
}

/*
 * Users' budgets before HELLO live in a table of HELLO_SLOTS entries, a user's
 * among HELLO_PROBE of them: a user with more uids than that (a range of
 * subordinate uids, as rootless containers get) pushed its own spent entry
 * out with the others and came back with a whole budget, again and again:
 * the budget bounded nothing.  A spent budget pushed out is now carried by
 * the entry that replaces it.
 */
static void test_hello_budget_evicted(void **state)
{
	struct clients_limits lim;
	struct tc u, v[HELLO_PROBE + 1], back;
	const uid_t uid = 5000;

	(void)state;
	env_up(0);
	lim = E.cs->lim;
	lim.ctl_rate = 100;
	lim.ctl_burst = 4;
	lim.max_clients = 64;
	lim.max_per_uid = 64;
	clients_set_limits(E.cs, &lim);
	pre_hello(&u, uid, 5);
	assert_true(clients_wait_ns(u.cl) > 0);
	/* uids of the same probe window, each spending more than uid did. */
	for (int k = 0; k <= HELLO_PROBE; k++)
		pre_hello(&v[k], uid + HELLO_SLOTS * (uid_t)(k + 1), 6);
	/* uid again: still over its budget. */
	pre_hello(&back, uid, 0);
	assert_true(clients_wait_ns(back.cl) > 0);
	close_client(&back);
	for (int k = 0; k <= HELLO_PROBE; k++)
		close_client(&v[k]);
	close_client(&u);
	env_down();
}

static void test_doorbells(void **state)
{
	struct tc c[4];
	struct tqp q[8];
	struct clients_stats st;
	uint32_t qpn;
	int fds[8], db;

	(void)state;
	env_up(100);
	for (int i = 0; i < 4; i++) {
		open_client(&c[i], 1000 + (uid_t)i);
		assert_int_equal(qp_create_t(&c[i], &qpn, &q[2 * i]), 0);
		assert_int_equal(qp_create_t(&c[i], &qpn, &q[2 * i + 1]), 0);
	}
	/* One fd to sleep on for every client (it was one per client). */
	assert_int_equal(clients_fds(E.cs, fds, 8), 1);
	assert_false(readable(fds[0]));
	/* A busy worker's look finds nothing: one system call, no QP read. */
	assert_int_equal(clients_poll(E.cs, 1000000), 0);
	stats(&st);
	assert_int_equal(st.doorbell_calls, 1);
	assert_int_equal(st.doorbells, 0);
	assert_int_equal(st.doorbell_qps, 0);
	/* Three clients ring, one of them twice: the sleep ends, one call takes them all. */
	ring(c[0].doorbell);
	ring(c[2].doorbell);
	ring(c[3].doorbell);
	ring(c[3].doorbell);
	assert_true(readable(fds[0]));
	clients_fd_ready(E.cs, 0);
	stats(&st);
	assert_int_equal(st.doorbell_calls, 2);
	assert_int_equal(st.doorbells, 3);
	assert_int_equal(st.doorbell_qps, 6);	/* the rung clients' QPs, not client 1's */
	assert_int_equal(st.qps_hot, 0);	/* their rings are empty */
	/* Taken, never read: not readable again until the next ring. */
	assert_false(readable(fds[0]));
	/* A busy worker looks once per DOORBELL_POLL_NS, not every loop. */
	ring(c[1].doorbell);
	assert_int_equal(clients_poll(E.cs, 1000000 + 1000), 0);
	stats(&st);
	assert_int_equal(st.doorbell_calls, 2);
	assert_int_equal(clients_poll(E.cs, 1000000 + 20000), 0);
	stats(&st);
	assert_int_equal(st.doorbell_calls, 3);
	assert_int_equal(st.doorbells, 4);
	/*
	 * A QP's own doorbell: the worker looks at that QP alone, and a post
	 * there makes it hot (ring.h's producer side, as libmroc posts).
	 */
	memset(ring_prod_slot(&q[5].sq), 0, sizeof(struct mroc_sqe));
	ring_prod_commit(&q[5].sq, 1);
	ring(q[5].doorbell);
	clients_fd_ready(E.cs, 0);
	stats(&st);
	assert_int_equal(st.doorbells, 5);
	assert_int_equal(st.doorbell_qps, 6 + 2 + 1);
	assert_int_equal(st.qps_hot, 1);
	assert_int_equal(st.qps_sending, 0);	/* hot, not polled yet */
	/* The next poll takes the work request: a QP that sends, counted once. */
	assert_int_equal(clients_poll(E.cs, 1000000 + 21000), 1);
	stats(&st);
	assert_int_equal(st.qps_sending, 1);
	memset(ring_prod_slot(&q[5].sq), 0, sizeof(struct mroc_sqe));
	ring_prod_commit(&q[5].sq, 1);
	assert_int_equal(clients_poll(E.cs, 1000000 + 22000), 1);
	stats(&st);
	assert_int_equal(st.qps_sending, 1);
	/* Its client gone, its QPs no longer count. */
	close_client(&c[2]);
	stats(&st);
	assert_int_equal(st.qps_sending, 0);
	/*
	 * A client gone: its doorbell leaves the set with it, although the
	 * file lives on (here a dup; a real client holds its own fd).
	 */
	db = dup(c[0].doorbell);
	assert_true(db >= 0);
	close_client(&c[0]);
	ring(db);
	ring(c[1].doorbell);
	clients_fd_ready(E.cs, 0);
	stats(&st);
	assert_int_equal(st.doorbells, 6);
	close(db);
	close_client(&c[1]);
	close_client(&c[3]);
	for (int i = 0; i < 8; i++)
		munmap(q[i].map, q[i].len);
	env_down();
}

/*
 * n work requests of an opcode that does not exist posted to q, 8 at a time,
 * step ns of the worker's clock apart, their error completions read from cq;
 * returns the completions read (fewer: the client was disconnected).
 */
static unsigned post_bad(struct tqp *q, struct ring_view *cq, unsigned n, uint64_t *now,
			 uint64_t step)
{
	unsigned got = 0;

	for (unsigned i = 0; i < n; i += 8) {
		unsigned k = n - i < 8 ? n - i : 8;

		for (unsigned j = 0; j < k; j++) {
			struct mroc_sqe *e = ring_prod_slot(&q->sq);

			memset(e, 0, sizeof(*e));
			e->opcode = 0xff;
			ring_prod_commit(&q->sq, 1);
		}
		ring(q->doorbell);
		clients_fd_ready(E.cs, 0);
		clients_poll(E.cs, *now);
		for (int64_t a = ring_cons_avail(cq); a > 0; a--, got++)
			ring_cons_release(cq, 1);
		*now += step * k;
	}
	return got;
}

/*
 * A client is disconnected for bad work requests only in a burst: more than
 * BAD_WR_LIMIT (1,024) within a second.  Counted over its life, a
 * long-lived client that now and then posts to a QP in error was
 * disconnected in the end.
 */
static void test_bad_wrs_burst(void **state)
{
	struct clients_stats st;
	struct ring_view cq;
	struct tqp q;
	struct tc c;
	uint32_t qpn, sq_off, rq_off, cq_off;
	uint64_t now = 1000000;

	(void)state;
	env_up(100);
	open_client(&c, 1000);
	assert_int_equal(qp_create_t(&c, &qpn, &q), 0);
	mroc_shm_layout(8, 8, 32, &sq_off, &rq_off, &cq_off);
	ring_view_init(&cq, q.map, cq_off, 32, sizeof(struct mroc_cqe), false);
	/* 1,000 a second for 3 s: each gets its error, the client stays. */
	assert_int_equal(post_bad(&q, &cq, 3000, &now, 1000000), 3000);
	stats(&st);
	assert_int_equal(st.kicked, 0);
	/* 1,032 within a second: disconnected. */
	assert_true(post_bad(&q, &cq, 1032, &now, 1000) < 1032);
	stats(&st);
	assert_int_equal(st.kicked, 1);
	close_client(&c);
	munmap(q.map, q.len);
	env_down();
}

/*
 * A worker spinning with nothing to do (clients_idle, worker.c's busy-poll
 * turns) looks at the doorbells every DOORBELL_IDLE_NS, not every
 * DOORBELL_POLL_NS: a post to a QP that went cold when the worker slept is
 * taken within 2 us of its doorbell, and the next poll consumes it.
 */
static void test_doorbell_idle_look(void **state)
{
	struct tc c;
	struct tqp q;
	struct clients_stats st;
	uint32_t qpn;
	uint64_t t = 1000000;

	(void)state;
	env_up(100);
	open_client(&c, 1000);
	assert_int_equal(qp_create_t(&c, &qpn, &q), 0);
	assert_int_equal(clients_poll(E.cs, t), 0);	/* a busy look: the next is 20 us away */
	assert_true(clients_may_sleep(E.cs));	/* slept: the QP is cold */
	memset(ring_prod_slot(&q.sq), 0, sizeof(struct mroc_sqe));
	ring_prod_commit(&q.sq, 1);
	ring(q.doorbell);
	/* Polled busy 1 us later, the doorbell waits for the next 20 us look. */
	assert_int_equal(clients_poll(E.cs, t + 1000), 0);
	/* A spinning turn takes it now, and the next poll the work request. */
	assert_true(clients_idle(E.cs, t + 1000));
	stats(&st);
	assert_int_equal(st.doorbells, 1);
	assert_int_equal(st.qps_hot, 1);
	assert_int_equal(clients_poll(E.cs, t + 1100), 1);
	/* No second look within DOORBELL_IDLE_NS; then one, which finds nothing. */
	stats(&st);
	assert_int_equal(st.doorbell_calls, 2);
	assert_false(clients_idle(E.cs, t + 2000));
	stats(&st);
	assert_int_equal(st.doorbell_calls, 2);
	assert_false(clients_idle(E.cs, t + 3100));
	stats(&st);
	assert_int_equal(st.doorbell_calls, 3);
	close_client(&c);
	munmap(q.map, q.len);
	env_down();
}

/*
 * Work that no doorbell brought (a wake-up lost, or a client that died
 * between its post and its ring) is found by the sweep of cold QPs: taken
 * at the second sweep that sees it unconsumed, and counted.  Work whose
 * doorbell came is never counted, even when the worker was away past a sweep.
 */
static void test_stranded_work(void **state)
{
	struct tc c;
	struct tqp q[3];
	struct clients_stats st;
	uint64_t t = 5000000;
	uint32_t qpn;

	(void)state;
	env_up(100);
	open_client(&c, 1000);
	for (int i = 0; i < 3; i++)
		assert_int_equal(qp_create_t(&c, &qpn, &q[i]), 0);
	/* Posted to three cold QPs; q[0]'s doorbell never rings, the others' late. */
	for (int i = 0; i < 3; i++) {
		memset(ring_prod_slot(&q[i].sq), 0, sizeof(struct mroc_sqe));
		ring_prod_commit(&q[i].sq, 1);
	}
	assert_int_equal(clients_poll(E.cs, t), 0);	/* a sweep sees all three, cold */
	ring(q[1].doorbell);
	clients_fd_ready(E.cs, 0);
	assert_int_equal(clients_poll(E.cs, t + 1000), 1);	/* q[1], hot now */
	/*
	 * q[2] rings, and the worker is kept away until the next sweep is due:
	 * its doorbell is taken before the sweep looks, so it is not counted.
	 */
	ring(q[2].doorbell);
	stats(&st);
	assert_int_equal(st.rings_stranded, 0);
	/* The sweep finds q[0]'s work where it was: taken in the same poll, with q[2]'s. */
	assert_int_equal(clients_poll(E.cs, t + SWEEP_NS), 2);
	stats(&st);
	assert_int_equal(st.rings_stranded, 1);
	assert_int_equal(st.wrs, 3);
	/* All cold again, empty: later sweeps count nothing. */
	assert_int_equal(clients_may_sleep(E.cs), true);
	assert_int_equal(clients_poll(E.cs, t + 3 * SWEEP_NS), 0);
	assert_int_equal(clients_poll(E.cs, t + 5 * SWEEP_NS), 0);
	stats(&st);
	assert_int_equal(st.rings_stranded, 1);
	close_client(&c);
	for (int i = 0; i < 3; i++)
		munmap(q[i].map, q[i].len);
	env_down();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_service_owner),
		cmocka_unit_test(test_uid_share),
		cmocka_unit_test(test_admin_reserve),
		cmocka_unit_test(test_pd_no_wrap),
		cmocka_unit_test(test_unallocated_refused),
		cmocka_unit_test(test_punch_refused),
		cmocka_unit_test(test_sealed_again),
		cmocka_unit_test(test_sealed_again_kept),
		cmocka_unit_test(test_hugetlb_refused),
		cmocka_unit_test(test_zombies_yield),
		cmocka_unit_test(test_unconnected_no_zombie),
		cmocka_unit_test(test_rq_charged),
		cmocka_unit_test(test_ctl_budget),
		cmocka_unit_test(test_hello_budget_evicted),
		cmocka_unit_test(test_doorbells),
		cmocka_unit_test(test_bad_wrs_burst),
		cmocka_unit_test(test_doorbell_idle_look),
		cmocka_unit_test(test_stranded_work),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
