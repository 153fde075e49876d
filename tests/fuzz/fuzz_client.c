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
 * Each input is a new client on a new engine, peer table and clients table,
 * its clock at the same start: its outcome does not depend on the inputs
 * before it, so a finding reproduces from its input alone.  The one thing
 * kept is the clients table's AIO context (evfd.c), emptied between inputs:
 * creating and destroying one per input ran 30 inputs/s (io_destroy waits
 * for the kernel), so this harness links with --wrap for
 * evfd_signaller_create and _destroy (Makefile) and hands the same one back.
 * With MROC_FUZZ_CHECK_RESET=1 every input also runs on a fixture built for
 * it alone (its own AIO context), and both runs must agree on an outcome
 * digest (every reply, the clients' and the engine's counters at the end).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "abi.h"
#include "clients.h"
#include "evfd.h"
#include "fuzz_client.h"
#include "log.h"
#include "peers.h"
#include "ring.h"
#include "worker.h"

#define FUZZ_ASSERT(c)	do { if (!(c)) abort(); } while (0)
#define MAX_QPS		8
#define NOW_START	1000000

static uint64_t now_ns = NOW_START;

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
	int doorbell;		/* a dup of the one it was created with, or -1 */
	void *region;
	size_t len;
	struct ring_view ring[3];
};

#define MAX_LKEYS	16

struct state {
	struct clients *cs;
	uint64_t digest;		/* with MROC_FUZZ_CHECK_RESET: of everything the input got */
	void *cl;
	int sock[2];
	struct fqp qps[MAX_QPS];
	unsigned nqps;
	/* the ring region offered with the last QP_CREATE */
	void *ring;
	size_t ring_len;
	struct mroc_msg_qp_create ring_msg;
	/* the last MAX_LKEYS regions' keys the daemon gave, for MR_DEREG (id_fixup) */
	uint32_t lkeys[MAX_LKEYS];
	unsigned nregs;
	/* the last FC_FD_MEMFD made (every second one is it again: registered again) */
	int memfd;
	unsigned nmemfd;
};

static void mix(uint64_t *h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		*h = (*h ^ b[i]) * 0x100000001b3ULL;	/* FNV-1a */
}

/*
 * The fds this process holds.  One directory stream, kept open and rewound
 * (its own fd is counted each time, so before and after agree): opening
 * /proc/self/fd twice per input was 4 % of the time.
 */
static int count_fds(void)
{
	static DIR *d;
	int n = 0;

	if (!d)
		d = opendir("/proc/self/fd");
	FUZZ_ASSERT(d);
	rewinddir(d);
	while (readdir(d))
		n++;
	return n;
}

static int sealed_memfd(size_t len)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	void *m;

	FUZZ_ASSERT(fd >= 0 && !ftruncate(fd, (off_t)len) && !fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK));
	/* Allocated, as libmroc leaves it: mrocd refuses memory the client never allocated. */
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	FUZZ_ASSERT(m != MAP_FAILED);
	munmap(m, len);
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
		if (s->nmemfd++ % 2 && s->memfd >= 0)
			return dup(s->memfd);
		if (s->memfd >= 0)
			close(s->memfd);
		s->memfd = sealed_memfd(FC_MEMFD_LEN);
		return s->memfd >= 0 ? dup(s->memfd) : -1;
	case FC_FD_RING:
		return ring_fd(s, msg, len);
	default:
		FUZZ_ASSERT(!pipe2(p, O_CLOEXEC | O_NONBLOCK));
		close(p[0]);
		return p[1];
	}
}

/* A QP the daemon accepted: keep views of its rings (as the client's side). */
static void add_qp(struct state *s, uint32_t qpn, int doorbell)
{
	const struct mroc_shm_hdr *h = s->ring;
	struct fqp *q;

	if (s->nqps == MAX_QPS || !s->ring) {
		if (doorbell >= 0)
			close(doorbell);
		return;
	}
	q = &s->qps[s->nqps++];
	q->qpn = qpn;
	q->doorbell = doorbell;
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
 * Messages naming a QP (CONNECT, LISTEN, DESTROY) or a region (MR_DEREG) by
 * the word right after the header may name it by index: below MAX_QPS
 * (MAX_LKEYS) it means the index-th QP created (region registered), modulo
 * their number, so recorded conversations work whatever numbers the daemon
 * hands out.
 */
static void id_fixup(struct state *s, uint8_t *msg, size_t len)
{
	unsigned nkeys = s->nregs < MAX_LKEYS ? s->nregs : MAX_LKEYS;
	struct mroc_msg_hdr h;
	uint32_t id;

	if (len < sizeof(h) + sizeof(id))
		return;
	memcpy(&h, msg, sizeof(h));
	memcpy(&id, msg + sizeof(h), sizeof(id));
	if ((h.type == MROC_MSG_QP_CONNECT || h.type == MROC_MSG_QP_LISTEN ||
	     h.type == MROC_MSG_QP_DESTROY) && s->nqps && id < MAX_QPS)
		id = s->qps[id % s->nqps].qpn;
	else if (h.type == MROC_MSG_MR_DEREG && nkeys && id < MAX_LKEYS)
		id = s->lkeys[id % nkeys];
	else
		return;
	memcpy(msg + sizeof(h), &id, sizeof(id));
}

static size_t do_msg(struct state *s, const uint8_t *d, size_t n)
{
	/* Aligned as the daemon's own buffers are. */
	union {
		struct mroc_msg_hdr h;
		struct mroc_msg_qp_create qc;
		struct mroc_msg_mr_reg mr;
		uint8_t b[MROC_MSG_MAX];
	} reply;
	union {
		struct mroc_msg_hdr h;
		uint8_t b[256];
	} msg;
	size_t len, rlen = sizeof(reply);
	int fds[3], nfds, doorbell = -1;

	if (n < 3)
		return n;
	nfds = d[0] & 3;
	len = d[2];
	d += 3;
	n -= 3;
	if (len > n)
		len = n;
	memset(&msg, 0, sizeof(msg));
	memset(&reply, 0, sizeof(reply));	/* the digest reads its padding too */
	memcpy(msg.b, d, len);
	id_fixup(s, msg.b, len);
	for (int i = 0; i < nfds; i++)
		fds[i] = make_fd(s, (d[-2] >> (2 * i)) & 3, msg.b, len);
	/* A QP's doorbell (fds[2]) stays the daemon's: do_ring rings a copy. */
	if (nfds == 3)
		doorbell = dup(fds[2]);
	clients_msg(s->cs, s->cl, msg.b, len, fds, nfds, &reply, &rlen);
	FUZZ_ASSERT(rlen >= sizeof(struct mroc_msg_hdr) && rlen <= MROC_MSG_MAX);
	mix(&s->digest, &rlen, sizeof(rlen));
	mix(&s->digest, reply.b, rlen);
	FUZZ_ASSERT(reply.h.status <= 0);
	if (!reply.h.status && len >= sizeof(struct mroc_msg_hdr) &&
	    msg.h.type == MROC_MSG_QP_CREATE)
		add_qp(s, reply.qc.qpn, doorbell);
	else if (doorbell >= 0)
		close(doorbell);
	if (!reply.h.status && len >= sizeof(struct mroc_msg_hdr) &&
	    msg.h.type == MROC_MSG_MR_REG)
		s->lkeys[s->nregs++ % MAX_LKEYS] = reply.mr.lkey;
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
		uint64_t one = 1;

		ring_prod_commit(r, d[2]);
		/* As libmroc rings: only when the QP's ring asked for it. */
		if (q->doorbell >= 0 && ring_prod_needs_wakeup(r, MROC_RING_NEED_WAKEUP) &&
		    write(q->doorbell, &one, sizeof(one)) < 0)
			FUZZ_ASSERT(errno == EAGAIN);
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

/* ---- the fixture: engine, peers, clients; all new for each input ---------------------- */

struct fixture {
	struct engine *eng;
	struct peers *peers;
	struct clients *cs;
};

/*
 * The AIO context a fixture's clients table gave back (--wrap, Makefile),
 * emptied, for the next one; none while a fixture is built alone.
 */
static struct evfd_signaller *spare;
static bool alone;

int __real_evfd_signaller_create(struct evfd_signaller **out);
void __real_evfd_signaller_destroy(struct evfd_signaller *s);
int __wrap_evfd_signaller_create(struct evfd_signaller **out);
void __wrap_evfd_signaller_destroy(struct evfd_signaller *s);

int __wrap_evfd_signaller_create(struct evfd_signaller **out)
{
	if (alone || !spare)
		return __real_evfd_signaller_create(out);
	*out = spare;
	spare = NULL;
	return 0;
}

void __wrap_evfd_signaller_destroy(struct evfd_signaller *s)
{
	if (alone || spare || !s) {
		__real_evfd_signaller_destroy(s);
		return;
	}
	evfd_signaller_reap(s);
	spare = s;
}

static void fixture_new(struct fixture *fx)
{
	static const struct clients_limits lim = {
		.max_clients = 4, .max_per_uid = 4, .max_qps = 4, .max_mrs = 4, .max_mr_bytes = 1 << 20,
		.max_locked_bytes = 4 << 20,
		.max_sq_depth = 64, .max_rq_depth = 64, .default_paths = 2,
		.total_mrs = 64,	/* the engine's below; uid_share 0: no share */
	};
	struct engine_config ec;

	engine_config_default(&ec);
	ec.max_qps = 64;
	ec.max_mrs = 64;
	ec.seed = 1;
	fx->eng = engine_create(&ec);
	fx->peers = peers_create(16);
	FUZZ_ASSERT(fx->eng && fx->peers);
	fx->cs = clients_create(fx->eng, fx->peers, 64, &lim, NULL);
	FUZZ_ASSERT(fx->cs);
	now_ns = NOW_START;
}

static void fixture_free(struct fixture *fx)
{
	clients_destroy(fx->cs);
	peers_destroy(fx->peers);
	engine_destroy(fx->eng);
	*fx = (struct fixture){ 0 };
}

static uint64_t run(struct fixture *fx, const uint8_t *d, size_t n)
{
	struct ucred cred = { .pid = 1, .uid = 1000, .gid = 1000 };
	struct state s = { .cs = fx->cs, .digest = 0xcbf29ce484222325ULL, .memfd = -1 };
	struct clients_stats st;
	struct engine_stats es;
	int fds_before = count_fds();

	FUZZ_ASSERT(!socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s.sock));
	s.cl = clients_open(s.cs, s.sock[0], &cred, false);
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
	memset(&st, 0, sizeof(st));
	clients_get_stats(s.cs, &st);
	FUZZ_ASSERT(!st.clients && !st.qps && !st.mrs);
	mix(&s.digest, &st, offsetof(struct clients_stats, services) + sizeof(st.services));
	engine_get_stats(fx->eng, &es);
	mix(&s.digest, es.c, sizeof(es.c));
	mix(&s.digest, es.rx_malformed, sizeof(es.rx_malformed));
	for (unsigned i = 0; i < s.nqps; i++) {
		munmap(s.qps[i].region, s.qps[i].len);
		if (s.qps[i].doorbell >= 0)
			close(s.qps[i].doorbell);
	}
	if (s.ring)
		munmap(s.ring, s.ring_len);
	if (s.memfd >= 0)
		close(s.memfd);
	close(s.sock[0]);
	close(s.sock[1]);
	FUZZ_ASSERT(count_fds() == fds_before);
	return s.digest;
}

/*
 * ASan's quarantine (256 MB by default) keeps freed memory from being reused,
 * so every input's allocations landed on fresh pages: page faults and
 * zeroing were half the time (CPU per input 1,321 us, 637 us with 16 MB).  16 MB still holds the memory of the last hundred inputs or so:
 * a use after free inside an input is still caught.  ASAN_OPTIONS overrides.
 */
const char *__asan_default_options(void);

const char *__asan_default_options(void)
{
	return "quarantine_size_mb=16";
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static struct fixture kept;
	static int check = -1;
	struct fixture own;
	uint64_t h;

	if (check < 0) {
		const char *e = getenv("MROC_FUZZ_CHECK_RESET");

		check = e && !strcmp(e, "1");
		log_set_level(LOG_EMERG);	/* a hostile client makes the daemon talk a lot */
	}
	if (kept.cs)
		fixture_free(&kept);
	fixture_new(&kept);
	h = run(&kept, d, n);
	if (!check)
		return 0;
	/* The same input on a fixture of its own (its own AIO context) must end the same. */
	alone = true;
	fixture_new(&own);
	if (run(&own, d, n) != h) {
		fprintf(stderr, "fuzz_client: this input ends otherwise on a fixture of its own "
			"than on the reused one: some state survives between inputs\n");
		abort();
	}
	fixture_free(&own);
	alone = false;
	return 0;
}
