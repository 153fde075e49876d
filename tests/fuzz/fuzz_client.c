// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: mrocd's client side (daemon/clients/clients.c, clients_ctl.c) as a hostile
 * client drives it: control messages with any bytes and any fds (eventfds,
 * sealed memfds, ring regions laid out as the message says, pipes), writes
 * into the shared rings, completions from the engine, time passing.  Real
 * engine, real peer table; only the hop to the worker thread is direct (the
 * harness plays the worker too).  Every message gets a reply with its
 * header, and nothing leaks: after the client is closed, the process holds
 * exactly the fds it held before.
 *
 * Like mrocd, one engine and one clients table serve every input (each
 * input is a new client, closed at its end, its QPs destroyed ten seconds
 * later): creating them per input (an AIO context each) ran 30 inputs/s.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "abi.h"
#include "clients.h"
#include "fuzz_client.h"
#include "log.h"
#include "peers.h"
#include "ring.h"
#include "worker.h"

#define FUZZ_ASSERT(c)	do { if (!(c)) abort(); } while (0)
#define MAX_QPS		8

static uint64_t now_ns = 1000000;

/* The harness is the worker (worker.c is not linked): calls run at once, on this thread. */
int worker_call(struct worker *w, int (*fn)(void *arg, uint64_t now), void *arg)
{
	(void)w;
	return fn(arg, now_ns);
}

uint64_t mrocd_now_ns(void)
{
	return now_ns;
}

struct fqp {
	uint32_t qpn;
	void *region;
	size_t len;
	struct ring_view ring[3];
};

struct state {
	struct clients *cs;
	void *cl;
	int sock[2];
	struct fqp qps[MAX_QPS];
	unsigned nqps;
	/* the ring region offered with the last QP_CREATE */
	void *ring;
	size_t ring_len;
	struct mroc_msg_qp_create ring_msg;
};

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	FUZZ_ASSERT(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static int sealed_memfd(size_t len)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	FUZZ_ASSERT(fd >= 0 && !ftruncate(fd, (off_t)len) && !fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK));
	return fd;
}

/* A ring region as msg (if it is a QP_CREATE) announces it, header filled in. */
static int ring_fd(struct state *s, const uint8_t *msg, size_t len)
{
	struct mroc_msg_qp_create m = { 0 };
	uint32_t sq_off, rq_off, cq_off;
	uint64_t rlen = 4096;
	int fd;

	memcpy(&m, msg, len < sizeof(m) ? len : sizeof(m));
	if (m.sq_entries && m.sq_entries <= 1024 && m.rq_entries <= 1024 && m.cq_entries <= 4096)
		rlen = mroc_shm_layout(m.sq_entries, m.rq_entries, m.cq_entries, &sq_off, &rq_off,
				       &cq_off);
	if (!rlen || rlen > (1u << 22))
		rlen = 4096;
	fd = sealed_memfd(rlen);
	if (s->ring)
		munmap(s->ring, s->ring_len);
	s->ring = mmap(NULL, rlen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	FUZZ_ASSERT(s->ring != MAP_FAILED);
	s->ring_len = rlen;
	s->ring_msg = m;
	if (rlen >= sizeof(struct mroc_shm_hdr) && rlen > 4096)
		*(struct mroc_shm_hdr *)s->ring = (struct mroc_shm_hdr){
			.magic = MROC_SHM_MAGIC, .abi_version = MROC_ABI_VERSION,
			.sq_entries = m.sq_entries, .rq_entries = m.rq_entries,
			.cq_entries = m.cq_entries, .sq_off = sq_off, .rq_off = rq_off,
			.cq_off = cq_off, .region_len = rlen,
		};
	return fd;
}

static int make_fd(struct state *s, int kind, const uint8_t *msg, size_t len)
{
	int p[2];

	switch (kind) {
	case FC_FD_EVENTFD:
		return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	case FC_FD_MEMFD:
		return sealed_memfd(FC_MEMFD_LEN);
	case FC_FD_RING:
		return ring_fd(s, msg, len);
	default:
		FUZZ_ASSERT(!pipe2(p, O_CLOEXEC | O_NONBLOCK));
		close(p[0]);
		return p[1];
	}
}

/* A QP the daemon accepted: keep views of its rings (as the client's side). */
static void add_qp(struct state *s, uint32_t qpn)
{
	const struct mroc_shm_hdr *h = s->ring;
	struct fqp *q;

	if (s->nqps == MAX_QPS || !s->ring)
		return;
	q = &s->qps[s->nqps++];
	q->qpn = qpn;
	q->region = s->ring;
	q->len = s->ring_len;
	ring_view_init(&q->ring[0], q->region, h->sq_off, h->sq_entries, sizeof(struct mroc_sqe),
		       true);
	ring_view_init(&q->ring[1], q->region, h->rq_off, h->rq_entries, sizeof(struct mroc_rqe),
		       true);
	ring_view_init(&q->ring[2], q->region, h->cq_off, h->cq_entries, sizeof(struct mroc_cqe),
		       false);
	s->ring = NULL;		/* the QP owns the mapping now */
}

/*
 * Messages naming a QP (CONNECT, LISTEN, DESTROY: the qpn right after the
 * header) may name it by index: qpn < MAX_QPS means the index-th QP created,
 * so recorded conversations work whatever numbers the engine hands out.
 */
static void qpn_fixup(struct state *s, uint8_t *msg, size_t len)
{
	struct mroc_msg_hdr h;
	uint32_t qpn;

	if (len < sizeof(h) + sizeof(qpn) || !s->nqps)
		return;
	memcpy(&h, msg, sizeof(h));
	if (h.type != MROC_MSG_QP_CONNECT && h.type != MROC_MSG_QP_LISTEN &&
	    h.type != MROC_MSG_QP_DESTROY)
		return;
	memcpy(&qpn, msg + sizeof(h), sizeof(qpn));
	if (qpn < MAX_QPS)
		memcpy(msg + sizeof(h), &s->qps[qpn % s->nqps].qpn, sizeof(qpn));
}

static size_t do_msg(struct state *s, const uint8_t *d, size_t n)
{
	/* Aligned as the daemon's own buffers are. */
	union {
		struct mroc_msg_hdr h;
		struct mroc_msg_qp_create qc;
		uint8_t b[MROC_MSG_MAX];
	} reply;
	union {
		struct mroc_msg_hdr h;
		uint8_t b[256];
	} msg;
	size_t len, rlen = sizeof(reply);
	int fds[3], nfds;

	if (n < 3)
		return n;
	nfds = d[0] & 3;
	len = d[2];
	if (nfds > 2)
		nfds = 2;
	d += 3;
	n -= 3;
	if (len > n)
		len = n;
	memset(&msg, 0, sizeof(msg));
	memcpy(msg.b, d, len);
	qpn_fixup(s, msg.b, len);
	for (int i = 0; i < nfds; i++)
		fds[i] = make_fd(s, (d[-2] >> (2 * i)) & 3, msg.b, len);
	clients_msg(s->cs, s->cl, msg.b, len, fds, nfds, &reply, &rlen);
	FUZZ_ASSERT(rlen >= sizeof(struct mroc_msg_hdr) && rlen <= MROC_MSG_MAX);
	FUZZ_ASSERT(reply.h.status <= 0);
	if (!reply.h.status && len >= sizeof(struct mroc_msg_hdr) &&
	    msg.h.type == MROC_MSG_QP_CREATE)
		add_qp(s, reply.qc.qpn);
	return 3 + len;
}

static size_t do_ring(struct state *s, const uint8_t *d, size_t n)
{
	struct fqp *q;
	struct ring_view *r;

	if (n < 3 + FC_ENTRY || !s->nqps)
		return n;
	q = &s->qps[d[0] % s->nqps];
	r = &q->ring[d[1] % 3];
	memcpy(ring_slot(r, r->head), d + 3, r->entry_size < FC_ENTRY ? r->entry_size : FC_ENTRY);
	if (r == &q->ring[2]) {
		ring_cons_release(r, d[2]);
		ring_cons_prepare_sleep(r, MROC_RING_ARMED);
	} else {
		ring_prod_commit(r, d[2]);
	}
	clients_poll(s->cs, now_ns);
	return 3 + FC_ENTRY;
}

static size_t do_cqe(struct state *s, const uint8_t *d, size_t n)
{
	struct engine_cqe c;

	if (n < 1 + sizeof(c))
		return n;
	memcpy(&c, d + 1, sizeof(c));
	if (s->nqps)
		c.qpn = s->qps[d[0] % s->nqps].qpn;
	clients_on_cqe(s->cs, &c, now_ns);
	return 1 + sizeof(c);
}

static size_t do_tick(struct state *s, const uint8_t *d, size_t n)
{
	int fds[16], nfds;

	if (n < 1)
		return n;
	now_ns += (uint64_t)d[0] * 1000000;
	clients_tick(s->cs, now_ns);
	nfds = clients_fds(s->cs, fds, 16);
	for (int i = 0; i < nfds; i++)
		clients_fd_ready(s->cs, i);	/* as if every doorbell rang */
	if (!clients_may_sleep(s->cs))
		clients_poll(s->cs, now_ns);
	clients_flush(s->cs);	/* the end of the worker's loop */
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

static struct clients *clients_once(void)
{
	static const struct clients_limits lim = {
		.max_clients = 4, .max_per_uid = 4, .max_qps = 4, .max_mrs = 4, .max_mr_bytes = 1 << 20,
		.max_locked_bytes = 4 << 20,
		.max_sq_depth = 64, .max_rq_depth = 64, .default_paths = 2,
		.total_mrs = 64,	/* the engine's below; uid_share 0: no share */
	};
	static struct clients *cs;
	struct engine_config ec;
	struct engine *eng;
	struct peers *peers;

	if (cs)
		return cs;
	log_set_level(LOG_EMERG);	/* a hostile client makes the daemon talk a lot */
	engine_config_default(&ec);
	ec.max_qps = 64;
	ec.max_mrs = 64;
	ec.seed = 1;
	eng = engine_create(&ec);
	peers = peers_create(16);
	FUZZ_ASSERT(eng && peers);
	cs = clients_create(eng, peers, 64, &lim, NULL);
	FUZZ_ASSERT(cs);
	return cs;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct ucred cred = { .pid = 1, .uid = 1000, .gid = 1000 };
	struct state s = { .cs = clients_once() };
	struct clients_stats st;
	int fds_before = count_fds();

	FUZZ_ASSERT(!socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s.sock));
	s.cl = clients_open(s.cs, s.sock[0], &cred);
	FUZZ_ASSERT(s.cl);
	while (n > 0) {
		size_t used;

		switch (d[0] % FC__KINDS) {
		case FC_MSG:
			used = do_msg(&s, d + 1, n - 1);
			break;
		case FC_RING:
			used = do_ring(&s, d + 1, n - 1);
			break;
		case FC_CQE:
			used = do_cqe(&s, d + 1, n - 1);
			break;
		default:
			used = do_tick(&s, d + 1, n - 1);
			break;
		}
		d += 1 + used;
		n -= 1 + used;
	}
	clients_close(s.cs, s.cl);
	now_ns += 10000000000ULL;	/* past every zombie's deadline */
	clients_tick(s.cs, now_ns);
	clients_get_stats(s.cs, &st);
	FUZZ_ASSERT(!st.clients && !st.qps && !st.mrs);
	for (unsigned i = 0; i < s.nqps; i++)
		munmap(s.qps[i].region, s.qps[i].len);
	if (s.ring)
		munmap(s.ring, s.ring_len);
	close(s.sock[0]);
	close(s.sock[1]);
	FUZZ_ASSERT(count_fds() == fds_before);
	return 0;
}
