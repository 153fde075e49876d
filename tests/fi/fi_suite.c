// SPDX-License-Identifier: MIT
/*
 * What fabtests' quick and standard lists ask of an RDM provider, written
 * with libfabric only (any provider: FI_PROVIDER or -p; the tests run it with
 * mroc, scripts/bench-mpi.sh also with udp;ofi_rxd and tcp;ofi_rxm).  Each
 * test checks the bytes it moves.  A server and a client exchange endpoint
 * names (and region keys) over TCP, as fabtests' out-of-band socket does.
 *
 *   fi_suite [-p PROV] [-P PORT] [-n ITERS] [-S SIZES] [-w WINDOW] [-c CLIENTS] [-q] [-H FILE] TEST [SERVER]
 *
 * Without SERVER it is the server (unit needs no peer).  TEST:
 *   unit             getinfo (hints honoured and refused), domain (busy while an
 *                    endpoint is open), eq (an entry written; FI_WAIT_FD: poll on
 *                    FI_GETWAIT's fd and fi_eq_sread woken by another thread's write,
 *                    fi_trywait, sread's timeout), av (insert, lookup, remove, bad names), cq
 *                    (sizes, formats, empty reads), mr (sizes, keys, descriptors), cntr
 *                    (attributes, values, waits, FI_GETWAIT, fi_trywait, bind flags, close
 *                    while bound, an endpoint with counters and no CQ)
 *   rdm              fi_send/fi_recv ping-pong, 1 B .. 1 MiB, both directions checked
 *   tagged_pingpong  fi_tsend/fi_trecv ping-pong over SIZES: half round trip in us
 *   tagged_bw        WINDOW tagged sends in flight over SIZES: MB/s, every message checked
 *                    (-q: the first and last window only)
 *   rma_write, rma_read, rma_writedata
 *                    WINDOW RMA operations in flight over SIZES: MB/s; the target's region
 *                    (write), the reader's buffers (read) or the remote CQ data and the
 *                    region (writedata) checked
 *   atomic           every (operation, datatype) fi_atomicvalid accepts, fetching: the
 *                    original value and the new one (ATOMIC_READ) checked
 *   multi_recv       FI_MULTI_RECV buffers take 200 messages back to back; FI_MULTI_RECV
 *                    flags the release; every message's place and bytes checked
 *   unexpected_msg   64 tagged messages sent before any receive; FI_PEEK sees them;
 *                    received in the reverse order of their tags, each checked
 *   recv_cancel      a posted receive cancelled (FI_ECANCELED, buffer untouched); the
 *                    message goes to the next receive
 *   multi_client     the server answers CLIENTS clients (-c, default 4) that ping-pong at
 *                    once, each told apart by its tag, every reply checked
 *   cntr             counters (fi_cntr), one per kind on each side: the client's sends,
 *                    writes and base atomics, reads and fetching atomics, and the server's
 *                    receives, remote writes and remote reads, counted exactly whether
 *                    they make a CQ entry or not; a failed write counted as an error and
 *                    ending fi_cntr_wait (-FI_EAVAIL)
 *   zcopy            (mroc only) 1 MiB tagged messages: registered to registered (receive
 *                    posted first, and unexpected), registered to a malloc'd receive, and
 *                    from a malloc'd buffer; every byte checked, then the provider's
 *                    traffic counters (fi_mroc.h) say how each moved: by rendezvous READ
 *                    with no staging copy, through a bounce, or staged; a child after
 *                    fork() cannot touch the registered buffer (MADV_DONTFORK) and has
 *                    its own copy once it is closed.  FI_MROC_RNDV=0: all staged
 *   cm_data          MSG endpoints: fi_connect, fi_accept and fi_reject with CM private
 *                    data of 0, 1, 100 and FI_OPT_CM_DATA_SIZE bytes, each checked where
 *                    it arrives (FI_CONNREQ, FI_CONNECTED, the reject's err_data); one
 *                    byte more refused; a message each way on every accepted connection;
 *                    the server waits for each event in poll() on FI_GETWAIT's fd
 *
 * -H FILE (the bandwidth tests): after the first size's warm-up window, before any
 * timing, create FILE.held.server or FILE.held.client and wait until FILE exists.
 * scripts/bench-mpi.sh puts its loss on the plane the warm-up took meanwhile, so
 * every timed window runs under the loss and nothing polls the fabric beside it.
 *
 * Prints "ok: ..." lines and figures; exit 0 when all held, 1 on the first
 * failure (with why), 77 when the provider lacks what the test needs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
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

#include "fi_common.h"
#include "fi_mroc.h"

#define TIMEOUT_S	120
#define MAX_SIZES	32

static const char *prov = "mroc", *test, *server;
static int port = 47630, iters = 10, window = 16, clients = 4;
static size_t sizes[MAX_SIZES] = { 64, 4096, 65536, 1048576 };
static int nsizes = 4;
static bool quick;
static const char *hold_path;		/* -H */
static bool srv;			/* no SERVER given: we are the server */
static time_t deadline;

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fi_suite %s%s: FAIL: ", test ? test : "", server ? " (client)" : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint8_t pat(uint64_t i, uint64_t seed)
{
	return (uint8_t)((i + seed) * 2654435761u >> 13);
}

static void fill(uint8_t *b, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(i, seed);
}

static void verify(const uint8_t *b, size_t n, uint64_t seed, const char *what)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(i, seed))
			die("%s: byte %zu of %zu is 0x%02x, not 0x%02x", what, i, n, b[i], pat(i, seed));
}

/* ---- out of band: a TCP connection ------------------------------------------------ */

static int oob_listen_fd = -1;

static int oob_open(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd, one = 1;

	if (!server) {
		if (oob_listen_fd < 0) {
			oob_listen_fd = socket(AF_INET, SOCK_STREAM, 0);
			setsockopt(oob_listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (bind(oob_listen_fd, (struct sockaddr *)&sin, sizeof(sin)) ||
			    listen(oob_listen_fd, 64))
				die("out-of-band port %d: %s", port, strerror(errno));
		}
		fd = accept(oob_listen_fd, NULL, NULL);
		if (fd < 0)
			die("accept: %s", strerror(errno));
		return fd;
	}
	if (inet_pton(AF_INET, server, &sin.sin_addr) != 1)
		die("server %s: not an IPv4 address", server);
	for (int i = 0;; i++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0)
			return fd;
		close(fd);
		if (i > 1200)
			die("no server at %s:%d", server, port);
		usleep(50 * 1000);
	}
}

/* The CQ read while waiting out of band: a target serves RMA and atomics only then. */
static struct fid_cq *progress_cq;

static void oob_xfer(int fd, void *out, const void *in, size_t len)
{
	size_t done = 0;

	if (write(fd, in, len) != (ssize_t)len)
		die("out-of-band write: %s", strerror(errno));
	while (done < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (progress_cq) {
			fi_cq_read(progress_cq, NULL, 0);
			if (poll(&p, 1, 0) == 0) {
				if (time(NULL) > deadline)
					die("timed out waiting out of band");
				continue;
			}
		}
		n = read(fd, (uint8_t *)out + done, len - done);

		if (n <= 0)
			die("out-of-band read: %s", n ? strerror(errno) : "closed");
		done += (size_t)n;
	}
}

static void oob_sync(int fd)
{
	char a = 's', b;

	oob_xfer(fd, &b, &a, 1);
}

/*
 * -H: the first call only (the first size's first timed window); both: the peer holds
 * too, and the two start together (the server times tagged_bw, so it must not start
 * while the client still waits).
 */
static void hold(int oob, bool both)
{
	char path[4096];
	int fd;

	if (!hold_path)
		return;
	snprintf(path, sizeof(path), "%s.held.%s", hold_path, srv ? "server" : "client");
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		die("-H: cannot create %s: %s", path, strerror(errno));
	close(fd);
	while (access(hold_path, F_OK)) {
		if (time(NULL) > deadline)
			die("-H: %s never appeared", hold_path);
		poll(NULL, 0, 10);
	}
	hold_path = NULL;
	if (both)
		oob_sync(oob);
}

/* ---- libfabric objects -------------------------------------------------------------- */

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

static struct fi_info *hints_for(uint64_t caps)
{
	struct fi_info *h = fi_allocinfo();

	h->ep_attr->type = FI_EP_RDM;
	h->caps = caps;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->fabric_attr->prov_name = strdup(prov);
	return h;
}

/*
 * Everything up to an enabled endpoint with len bytes registered (access for RMA
 * targets); bind, if given, binds more to the endpoint before it is enabled (its CQ
 * then with FI_SELECTIVE_COMPLETION).
 */
static int fab_open_with(struct fab *f, uint64_t caps, size_t len, uint64_t access,
			 void (*bind)(struct fab *f))
{
	struct fi_info *h = hints_for(caps);
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED, .size = 8192 };
	int err = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &f->info);

	fi_freeinfo(h);
	if (err)
		return err;
	fic_domain_open(f->info, &cqa, &f->fabric, &f->domain, &f->av, &f->cq);
	if (bind) {
		CHECK(fi_endpoint(f->domain, f->info, &f->ep, NULL));
		CHECK(fi_ep_bind(f->ep, &f->av->fid, 0));
		CHECK(fi_ep_bind(f->ep, &f->cq->fid,
				 FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION));
		bind(f);
		CHECK(fi_enable(f->ep));
	} else {
		fic_ep_open(f->domain, f->info, f->av, f->cq, &f->ep);
	}
	f->len = len ? len : 1;
	f->buf = aligned_alloc(4096, (f->len + 4095) / 4096 * 4096);
	if (!f->buf)
		die("out of memory (%zu bytes)", f->len);
	memset(f->buf, 0, f->len);
	CHECK(fi_mr_reg(f->domain, f->buf, f->len, FI_SEND | FI_RECV | FI_READ | FI_WRITE | access,
			0, 0, 0, &f->mr, NULL));
	f->desc = fi_mr_desc(f->mr);
	progress_cq = f->cq;
	return 0;
}

static int fab_open(struct fab *f, uint64_t caps, size_t len, uint64_t access)
{
	return fab_open_with(f, caps, len, access, NULL);
}

static void fab_close(struct fab *f)
{
	progress_cq = NULL;
	if (f->ep)
		CHECK(fi_close(&f->ep->fid));
	if (f->mr)
		CHECK(fi_close(&f->mr->fid));
	CHECK(fi_close(&f->cq->fid));
	CHECK(fi_close(&f->av->fid));
	CHECK(fi_close(&f->domain->fid));
	CHECK(fi_close(&f->fabric->fid));
	fi_freeinfo(f->info);
	free(f->buf);
}

/* Exchange names over a new out-of-band connection; the peer goes into the AV. */
static void fab_meet(struct fab *f)
{
	uint8_t mine[128] = { 0 }, theirs[128];
	size_t l = sizeof(mine) - 8;

	CHECK(fi_getname(&f->ep->fid, mine + 8, &l));
	memcpy(mine, &l, sizeof(l));
	f->oob = oob_open();
	oob_xfer(f->oob, theirs, mine, sizeof(mine));
	if (fi_av_insert(f->av, theirs + 8, 1, &f->peer, 0, NULL) != 1)
		die("fi_av_insert of the peer's name");
}

/* An operation context for each post (providers in FI_CONTEXT mode own it until completion). */
static struct fi_context2 ctxs[4096];
static unsigned ctx_i;
#define CTX ((void *)&ctxs[ctx_i++ % 4096])

static struct fi_cq_tagged_entry last;
static fi_addr_t last_src;

/* n completions (any order); an error completion fails the test unless want_err. */
static void reap(struct fab *f, int n)
{
	while (n > 0) {
		struct fi_cq_tagged_entry e[64];
		fi_addr_t src[64];
		ssize_t r = fi_cq_readfrom(f->cq, e, n < 64 ? n : 64, src);

		if (r > 0) {
			last = e[r - 1];
			last_src = src[r - 1];
			n -= (int)r;
		} else if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = { 0 };

			fi_cq_readerr(f->cq, &ee, 0);
			die("error completion: %s (%s)", fi_strerror(ee.err),
			    fi_cq_strerror(f->cq, ee.prov_errno, ee.err_data, NULL, 0));
		} else if (r != -FI_EAGAIN) {
			die("fi_cq_read: %s", fi_strerror((int)-r));
		} else if (time(NULL) > deadline) {
			die("timed out waiting for %d completion(s)", n);
		}
	}
}

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

static size_t max_size(void)
{
	size_t m = 0;

	for (int i = 0; i < nsizes; i++)
		m = sizes[i] > m ? sizes[i] : m;
	return m;
}

/* ---- counters (fi_cntr) --------------------------------------------------------------- */

static double ms_since(double t0)
{
	return (now_s() - t0) * 1000;
}

#define EXPECT_ERR(call, want) do {						\
	int _r = (int)(call);							\
	if (_r != (want))							\
		die("%s: %d (%s), not %s", #call, _r, fi_strerror(-_r), #want);	\
} while (0)

/* Counters on their own: attributes, values, waits, FI_GETWAIT, fi_trywait. */
static void unit_cntr_values(struct fab *f)
{
	struct fi_cntr_attr a = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cntr *c, *none;
	double t0;
	int fd = -1;

	EXPECT_ERR(fi_cntr_open(f->domain, &(struct fi_cntr_attr){ .events = 1 }, &c, NULL),
		   -FI_ENOSYS);
	EXPECT_ERR(fi_cntr_open(f->domain, &(struct fi_cntr_attr){ .flags = 1 }, &c, NULL),
		   -FI_EINVAL);
	EXPECT_ERR(fi_cntr_open(f->domain, &(struct fi_cntr_attr){ .wait_obj = FI_WAIT_MUTEX_COND },
				&c, NULL), -FI_ENOSYS);
	CHECK(fi_cntr_open(f->domain, NULL, &none, NULL));	/* FI_WAIT_NONE */
	CHECK(fi_cntr_open(f->domain, &a, &c, NULL));
	if (fi_cntr_read(c) || fi_cntr_readerr(c))
		die("cntr: a new counter is not 0/0");
	CHECK(fi_cntr_add(c, 5));
	CHECK(fi_cntr_adderr(c, 3));
	if (fi_cntr_read(c) != 5 || fi_cntr_readerr(c) != 3)
		die("cntr: add 5, adderr 3 read %" PRIu64 "/%" PRIu64, fi_cntr_read(c),
		    fi_cntr_readerr(c));
	CHECK(fi_cntr_set(c, 2));
	CHECK(fi_cntr_seterr(c, 7));
	CHECK(fi_cntr_add(none, 4));
	if (fi_cntr_read(c) != 2 || fi_cntr_readerr(c) != 7 || fi_cntr_read(none) != 4)
		die("cntr: set 2, seterr 7 read %" PRIu64 "/%" PRIu64, fi_cntr_read(c),
		    fi_cntr_readerr(c));
	printf("ok: cntr: events and flags refused, read/readerr/add/adderr/set/seterr\n");

	EXPECT_ERR(fi_cntr_wait(c, 2, 0), 0);
	t0 = now_s();
	EXPECT_ERR(fi_cntr_wait(c, 3, 50), -FI_ETIMEDOUT);
	if (ms_since(t0) < 45 || ms_since(t0) > 2000)
		die("cntr: a 50 ms wait took %.0f ms", ms_since(t0));
	EXPECT_ERR(fi_cntr_wait(none, 1, 0), -FI_ENOSYS);
	if (fi_cntr_read(c) != 2 || fi_cntr_readerr(c) != 7)
		die("cntr: a wait changed the values");
	printf("ok: cntr: wait for a value reached (0), not reached in 50 ms (-FI_ETIMEDOUT after "
	       "%.0f ms), on FI_WAIT_NONE (-FI_ENOSYS)\n", ms_since(t0));

	CHECK(fi_control(&c->fid, FI_GETWAIT, &fd));
	if (fd < 0)
		die("cntr: FI_GETWAIT gave fd %d", fd);
	EXPECT_ERR(fi_control(&none->fid, FI_GETWAIT, &fd), -FI_ENOSYS);
	CHECK(fi_cntr_add(c, 1));
	EXPECT_ERR(fi_trywait(f->fabric, &(struct fid *){ &c->fid }, 1), -FI_EAGAIN);
	fi_cntr_read(c);
	EXPECT_ERR(fi_trywait(f->fabric, &(struct fid *){ &c->fid }, 1), 0);
	printf("ok: cntr: FI_GETWAIT's fd; fi_trywait -FI_EAGAIN after a change not read, then 0\n");
	CHECK(fi_close(&c->fid));
	CHECK(fi_close(&none->fid));
}

/* Binding: flags, one counter per kind, FI_RMA_EVENT, close while bound, no CQ at all. */
static void unit_cntr_bind(struct fab *f)
{
	struct fi_info *h = hints_for(FI_MSG), *msg_only;
	struct fid_cntr *c, *d;
	struct fid_ep *ep;

	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &msg_only));
	fi_freeinfo(h);
	if (!(f->info->caps & FI_RMA_EVENT) || (msg_only->caps & FI_RMA_EVENT))
		die("cntr: FI_RMA_EVENT %s with RMA, %s without", f->info->caps & FI_RMA_EVENT ?
		    "given" : "not given", msg_only->caps & FI_RMA_EVENT ? "given" : "not given");
	CHECK(fi_cntr_open(f->domain, NULL, &c, NULL));
	CHECK(fi_cntr_open(f->domain, NULL, &d, NULL));
	CHECK(fi_endpoint(f->domain, f->info, &ep, NULL));
	EXPECT_ERR(fi_ep_bind(ep, &c->fid, 0), -FI_EBADFLAGS);
	EXPECT_ERR(fi_ep_bind(ep, &c->fid, FI_SEND | FI_SELECTIVE_COMPLETION), -FI_EBADFLAGS);
	CHECK(fi_ep_bind(ep, &c->fid, FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
			 FI_REMOTE_WRITE));
	EXPECT_ERR(fi_ep_bind(ep, &d->fid, FI_WRITE), -FI_EINVAL);	/* FI_WRITE has one */
	EXPECT_ERR(fi_close(&c->fid), -FI_EBUSY);
	CHECK(fi_close(&ep->fid));
	CHECK(fi_close(&c->fid));

	/* Counters only, no CQ: the endpoint can be enabled. */
	CHECK(fi_endpoint(f->domain, msg_only, &ep, NULL));
	EXPECT_ERR(fi_ep_bind(ep, &d->fid, FI_RECV | FI_REMOTE_WRITE), -FI_EINVAL);
	CHECK(fi_ep_bind(ep, &f->av->fid, 0));
	EXPECT_ERR(fi_enable(ep), -FI_ENOCQ);
	CHECK(fi_ep_bind(ep, &d->fid, FI_SEND | FI_RECV));
	CHECK(fi_enable(ep));
	EXPECT_ERR(fi_close(&d->fid), -FI_EBUSY);
	CHECK(fi_close(&ep->fid));
	CHECK(fi_close(&d->fid));
	fi_freeinfo(msg_only);
	printf("ok: cntr: bind flags (0 and others -FI_EBADFLAGS, a kind bound twice and "
	       "FI_REMOTE_* without FI_RMA_EVENT -FI_EINVAL), close while bound -FI_EBUSY, an "
	       "endpoint with counters and no CQ enabled\n");
}

/*
 * Two daemons: the client's sends, writes (and a base atomic), reads (and a fetching
 * and a compare atomic) and a write refused; each side's six counters (one per kind)
 * must say exactly what happened, CQ entries or not (the CQ is bound with
 * FI_SELECTIVE_COMPLETION; a few operations ask for one).
 */
enum { C_SEND, C_RECV, C_READ, C_WRITE, C_RREAD, C_RWRITE, C_KINDS };
static struct fid_cntr *cn[C_KINDS];
static const uint64_t cn_flag[C_KINDS] = {
	FI_SEND, FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE,
};
static const char *cn_name[C_KINDS] = { "send", "recv", "read", "write", "remote read",
					 "remote write" };

static void cntr_bind_all(struct fab *f)
{
	struct fi_cntr_attr a = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };

	for (int k = 0; k < C_KINDS; k++) {
		CHECK(fi_cntr_open(f->domain, &a, &cn[k], NULL));
		CHECK(fi_ep_bind(f->ep, &cn[k]->fid, cn_flag[k]));
	}
}

static void cntr_expect(const uint64_t want[C_KINDS], uint64_t want_err_write)
{
	for (int k = 0; k < C_KINDS; k++) {
		uint64_t v = fi_cntr_read(cn[k]), e = fi_cntr_readerr(cn[k]);

		if (v != want[k] || e != (k == C_WRITE ? want_err_write : 0))
			die("cntr: %s counter %" PRIu64 " (errors %" PRIu64 "), not %" PRIu64,
			    cn_name[k], v, e, want[k]);
	}
}

static void cntr_wait(int k, uint64_t n)
{
	int r = fi_cntr_wait(cn[k], n, TIMEOUT_S * 1000);

	if (r)
		die("cntr: waiting for %s counter %" PRIu64 ": %s (at %" PRIu64 ")", cn_name[k], n,
		    fi_strerror(-r), fi_cntr_read(cn[k]));
}

#define CN_SENDS	8	/* fi_send, no CQ entry */
#define CN_MSG		256
#define CN_WRITES	4	/* the first with FI_COMPLETION */
#define CN_READS	3
#define CN_CHUNK	1024
#define CN_OFF_MSG	0
#define CN_OFF_WRITE	16384
#define CN_OFF_READ	32768
#define CN_OFF_ATOMIC	49152

static void cntr_client(struct fab *f, uint64_t key, uint64_t addr)
{
	struct fi_msg m = { .msg_iov = &(struct iovec){ f->buf, CN_MSG }, .desc = &f->desc,
			    .iov_count = 1, .addr = f->peer };
	uint64_t one = 1, cmp = 0, res[2];
	struct fi_cq_tagged_entry e[8];
	struct fi_cq_err_entry ee = { 0 };
	int entries = 0, r;

	for (int i = 0; i < CN_SENDS + 3; i++)
		fill(f->buf + CN_OFF_MSG + i * CN_MSG, CN_MSG, 1000 + i);
	for (int i = 0; i < CN_SENDS; i++)
		POST(f, fi_send(f->ep, f->buf + i * CN_MSG, CN_MSG, f->desc, f->peer, CTX));
	for (int i = CN_SENDS; i < CN_SENDS + 2; i++) {
		m.msg_iov = &(struct iovec){ f->buf + i * CN_MSG, CN_MSG };
		m.context = CTX;
		POST(f, fi_sendmsg(f->ep, &m, FI_COMPLETION));
	}
	POST(f, fi_inject(f->ep, f->buf + (CN_SENDS + 2) * CN_MSG, CN_MSG, f->peer));
	cntr_wait(C_SEND, CN_SENDS + 3);

	for (int i = 0; i < CN_WRITES; i++) {
		fill(f->buf + CN_OFF_WRITE + i * CN_CHUNK, CN_CHUNK, 2000 + i);
		if (i == 0) {
			struct fi_msg_rma w = {
				.msg_iov = &(struct iovec){ f->buf + CN_OFF_WRITE, CN_CHUNK },
				.desc = &f->desc, .iov_count = 1, .addr = f->peer, .context = CTX,
				.rma_iov = &(struct fi_rma_iov){ addr + CN_OFF_WRITE, CN_CHUNK, key },
				.rma_iov_count = 1,
			};

			POST(f, fi_writemsg(f->ep, &w, FI_COMPLETION));
		} else {
			POST(f, fi_write(f->ep, f->buf + CN_OFF_WRITE + i * CN_CHUNK, CN_CHUNK,
					 f->desc, f->peer, addr + CN_OFF_WRITE + i * CN_CHUNK, key,
					 CTX));
		}
	}
	POST(f, fi_inject_write(f->ep, f->buf, 64, f->peer, addr + CN_OFF_WRITE + 8192, key));
	POST(f, fi_atomic(f->ep, &one, 1, NULL, f->peer, addr + CN_OFF_ATOMIC, key, FI_UINT64,
			  FI_SUM, CTX));
	cntr_wait(C_WRITE, CN_WRITES + 2);

	for (int i = 0; i < CN_READS; i++)
		POST(f, fi_read(f->ep, f->buf + CN_OFF_READ + i * CN_CHUNK, CN_CHUNK, f->desc,
				f->peer, addr + CN_OFF_READ + i * CN_CHUNK, key, CTX));
	POST(f, fi_fetch_atomic(f->ep, &one, 1, NULL, &res[0], NULL, f->peer,
				addr + CN_OFF_ATOMIC, key, FI_UINT64, FI_SUM, CTX));
	cmp = 2;
	POST(f, fi_compare_atomic(f->ep, &one, 1, NULL, &cmp, NULL, &res[1], NULL, f->peer,
				  addr + CN_OFF_ATOMIC, key, FI_UINT64, FI_CSWAP, CTX));
	cntr_wait(C_READ, CN_READS + 2);
	for (int i = 0; i < CN_READS; i++)
		verify(f->buf + CN_OFF_READ + i * CN_CHUNK, CN_CHUNK, 3000 + i, "read");
	if (res[0] != 1 || res[1] != 2)
		die("cntr: fetched %" PRIu64 " and %" PRIu64 ", not 1 and 2", res[0], res[1]);

	/* A write to no region: the write counter's error count moves, which ends the wait. */
	POST(f, fi_write(f->ep, f->buf, 64, f->desc, f->peer, addr, key + 1000, CTX));
	r = fi_cntr_wait(cn[C_WRITE], CN_WRITES + 3, TIMEOUT_S * 1000);
	if (r != -FI_EAVAIL)
		die("cntr: a wait through a failed write: %d, not -FI_EAVAIL", r);
	cntr_expect((uint64_t[C_KINDS]){ CN_SENDS + 3, 0, CN_READS + 2, CN_WRITES + 2, 0, 0 }, 1);

	/* The CQ: the three that asked, and the failure (selective completion or not). */
	while ((r = (int)fi_cq_read(f->cq, e, 8)) > 0 || r == -FI_EAVAIL) {
		if (r == -FI_EAVAIL) {
			fi_cq_readerr(f->cq, &ee, 0);
			if (ee.err != FI_EACCES && ee.err != FI_EINVAL)
				die("cntr: the failed write's error is %s", fi_strerror(ee.err));
			entries += 100;
		} else {
			entries += r;
		}
	}
	if (entries != 103)
		die("cntr: the CQ had %d success entries and %d errors, not 3 and 1",
		    entries % 100, entries / 100);
	printf("ok: cntr: client: %d sends (2 with a CQ entry, 1 inject), %d writes (an "
	       "inject, a base atomic), %d reads (a fetching and a compare atomic) counted "
	       "exactly; a failed write counted as an error and ended a wait (-FI_EAVAIL)\n",
	       CN_SENDS + 3, CN_WRITES + 2, CN_READS + 2);
}

static void cntr_server(struct fab *f)
{
	uint64_t *atom = (uint64_t *)(void *)(f->buf + CN_OFF_ATOMIC);

	for (int i = 0; i < CN_READS; i++)
		fill(f->buf + CN_OFF_READ + i * CN_CHUNK, CN_CHUNK, 3000 + i);
	for (int i = 0; i < CN_SENDS + 3; i++)
		POST(f, fi_recv(f->ep, f->buf + CN_OFF_MSG + i * CN_MSG, CN_MSG, f->desc,
				FI_ADDR_UNSPEC, CTX));
	oob_sync(f->oob);	/* receives posted */
	cntr_wait(C_RECV, CN_SENDS + 3);
	for (int i = 0; i < CN_SENDS + 3; i++)
		verify(f->buf + CN_OFF_MSG + i * CN_MSG, CN_MSG, 1000 + i, "message");
	cntr_wait(C_RWRITE, CN_WRITES + 2);
	for (int i = 0; i < CN_WRITES; i++)
		verify(f->buf + CN_OFF_WRITE + i * CN_CHUNK, CN_CHUNK, 2000 + i, "written");
	cntr_wait(C_RREAD, CN_READS + 2);
	oob_sync(f->oob);	/* the client is done (the failed write too) */
	if (*atom != 1)		/* 0, +1 (sum), +1 (fetch-add): 2, swapped for 1 (compare 2) */
		die("cntr: the atomic target is %" PRIu64, *atom);
	cntr_expect((uint64_t[C_KINDS]){ 0, CN_SENDS + 3, 0, 0, CN_READS + 2, CN_WRITES + 2 }, 0);
	if (fi_cq_read(f->cq, &(struct fi_cq_tagged_entry){ 0 }, 1) != -FI_EAGAIN)
		die("cntr: the server's CQ has an entry (its receives asked for none)");
	printf("ok: cntr: server: %d receives, %d remote writes (a base atomic), %d remote "
	       "reads (fetching and compare atomics) counted exactly, no CQ entry\n",
	       CN_SENDS + 3, CN_WRITES + 2, CN_READS + 2);
}

static void t_cntr(void)
{
	struct fab f = { 0 };
	uint64_t kv[2], theirs[2];

	if (fab_open_with(&f, FI_MSG | FI_RMA | FI_ATOMIC, 65536,
			  FI_REMOTE_READ | FI_REMOTE_WRITE, cntr_bind_all))
		exit(77);
	fab_meet(&f);
	kv[0] = fi_mr_key(f.mr);
	kv[1] = (f.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)f.buf : 0;
	oob_xfer(f.oob, theirs, kv, sizeof(kv));
	if (srv) {
		cntr_server(&f);
	} else {
		oob_sync(f.oob);
		cntr_client(&f, theirs[0], theirs[1]);
		oob_sync(f.oob);
	}
	oob_sync(f.oob);
	progress_cq = NULL;
	CHECK(fi_close(&f.ep->fid));
	f.ep = NULL;
	for (int k = 0; k < C_KINDS; k++)
		CHECK(fi_close(&cn[k]->fid));
	fab_close(&f);
}

/* ---- unit: the objects on their own ------------------------------------------------ */

/* ---- EQ wait objects (fabtests' fi_eq_test eq_wait_fd_*) ------------------------------------ */

struct eq_writer {
	struct fid_eq *eq;
	int delay_ms;
	uint64_t data;
};

/* Another thread's fi_eq_write, delay_ms from now. */
static void *eq_writer_run(void *arg)
{
	struct eq_writer *w = arg;
	struct fi_eq_entry e = { .context = w, .data = w->data };

	poll(NULL, 0, w->delay_ms);
	if (fi_eq_write(w->eq, FI_NOTIFY, &e, sizeof(e), 0) != (ssize_t)sizeof(e))
		die("eq: fi_eq_write from a thread");
	return NULL;
}

static void eq_expect_entry(struct fid_eq *eq, const struct eq_writer *w, const char *what)
{
	struct fi_eq_entry e;
	uint32_t ev;
	ssize_t n = fi_eq_read(eq, &ev, &e, sizeof(e), 0);

	if (n != (ssize_t)sizeof(e) || ev != FI_NOTIFY || e.context != w || e.data != w->data)
		die("eq: %s: fi_eq_read %zd, not the entry written", what, n);
}

/*
 * FI_WAIT_FD: FI_GETWAIT's fd is not readable after fi_trywait says 0, and an
 * fi_eq_write from another thread wakes poll() on it at once; fi_eq_sread
 * sleeps until such a write, and for its timeout when nothing comes.
 */
static void unit_eq_wait(struct fab *f)
{
	struct fi_eq_attr ea = { .size = 8, .wait_obj = FI_WAIT_FD };
	struct eq_writer w = { .delay_ms = 50, .data = 0x5eed };
	struct fi_eq_entry e;
	struct fid *fids[1];
	struct fid_eq *eq;
	struct pollfd p;
	pthread_t t;
	uint32_t ev;
	double t0;
	ssize_t n;
	int fd;

	CHECK(fi_eq_open(f->fabric, &ea, &eq, NULL));
	w.eq = eq;
	fids[0] = &eq->fid;
	CHECK(fi_control(&eq->fid, FI_GETWAIT, &fd));
	CHECK(fi_trywait(f->fabric, fids, 1));
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (poll(&p, 1, 0) != 0)
		die("eq: the fd is readable with nothing queued");
	pthread_create(&t, NULL, eq_writer_run, &w);
	t0 = now_s();
	if (poll(&p, 1, 10000) != 1)
		die("eq: poll on the fd did not wake for another thread's fi_eq_write");
	pthread_join(t, NULL);
	if (fi_trywait(f->fabric, fids, 1) != -FI_EAGAIN)
		die("eq: fi_trywait is not -FI_EAGAIN with an entry queued");
	eq_expect_entry(eq, &w, "after poll");
	printf("ok: eq: FI_WAIT_FD: poll on FI_GETWAIT's fd woke %.0f ms after a write from "
	       "another thread (50 ms); fi_trywait honest\n", ms_since(t0));
	CHECK(fi_trywait(f->fabric, fids, 1));
	if (poll(&p, 1, 0) != 0)
		die("eq: the fd stays readable once the entry is read");

	w.data++;
	pthread_create(&t, NULL, eq_writer_run, &w);
	t0 = now_s();
	n = fi_eq_sread(eq, &ev, &e, sizeof(e), 10000, 0);
	pthread_join(t, NULL);
	if (n != (ssize_t)sizeof(e) || e.data != w.data || ms_since(t0) > 5000)
		die("eq: fi_eq_sread: %zd after %.0f ms, not the entry written", n, ms_since(t0));
	t0 = now_s();
	n = fi_eq_sread(eq, &ev, &e, sizeof(e), 200, 0);
	if (n != -FI_EAGAIN || ms_since(t0) < 190)
		die("eq: fi_eq_sread of nothing: %zd after %.0f ms, not -FI_EAGAIN after 200",
		    n, ms_since(t0));
	CHECK(fi_close(&eq->fid));
	printf("ok: eq: fi_eq_sread woke for another thread's write, timed out empty "
	       "(-FI_EAGAIN after %.0f ms of 200)\n", ms_since(t0));
}

static void t_unit(void)
{
	struct fi_info *h, *info = NULL;
	struct fab f = { 0 };
	int err;

	/* getinfo: what an RDM application asks, and what the provider must refuse. */
	h = hints_for(FI_MSG | FI_TAGGED | FI_RMA);
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info));
	if (info->ep_attr->type != FI_EP_RDM || strcmp(info->fabric_attr->prov_name, prov) ||
	    (info->caps & (FI_MSG | FI_TAGGED | FI_RMA)) != (FI_MSG | FI_TAGGED | FI_RMA))
		die("getinfo: %s, type %d, caps %#" PRIx64, info->fabric_attr->prov_name,
		    info->ep_attr->type, info->caps);
	if (!info->tx_attr->size || !info->rx_attr->size || !info->ep_attr->max_msg_size)
		die("getinfo: sizes not filled in");
	fi_freeinfo(info);
	h->caps |= FI_TRIGGER;
	err = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	if (err != -FI_ENODATA)
		die("getinfo with FI_TRIGGER: %d, not -FI_ENODATA", err);
	h->caps &= ~FI_TRIGGER;
	h->ep_attr->type = FI_EP_DGRAM;
	err = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	if (err != -FI_ENODATA)
		die("getinfo for FI_EP_DGRAM: %d, not -FI_ENODATA", err);
	fi_freeinfo(h);
	printf("ok: getinfo: RDM with MSG|TAGGED|RMA given, FI_TRIGGER and FI_EP_DGRAM refused\n");

	/*
	 * What fabtests' fi_getinfo_test wants (session 31: 8 of its 36 failed):
	 * a source address in every entry, transmit and receive capabilities
	 * apart, a domain capability not offered refused, mr_mode 0 kept 0, and
	 * a host named without a port.
	 */
	h = hints_for(FI_MSG);
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info));
	if (!info->src_addr || !info->src_addrlen)
		die("getinfo without node or service: no source address");
	if ((info->tx_attr->caps & (FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SOURCE |
				    FI_MULTI_RECV | FI_DIRECTED_RECV | FI_LOCAL_COMM)) ||
	    (info->rx_attr->caps & (FI_SEND | FI_READ | FI_WRITE | FI_LOCAL_COMM)) ||
	    (info->tx_attr->caps & ~info->caps) || (info->rx_attr->caps & ~info->caps))
		die("getinfo: tx caps %#" PRIx64 " / rx caps %#" PRIx64 " mixed (caps %#" PRIx64 ")",
		    info->tx_attr->caps, info->rx_attr->caps, info->caps);
	fi_freeinfo(info);
	h->domain_attr->mr_mode = 0;
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info));
	if (info->domain_attr->mr_mode)
		die("getinfo with mr_mode 0: %#x", info->domain_attr->mr_mode);
	fi_freeinfo(info);
	CHECK(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, 0, h, &info));
	fi_freeinfo(info);
	h->domain_attr->caps = FI_SHARED_AV;
	err = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	if (err != -FI_ENODATA)
		die("getinfo with FI_SHARED_AV: %d, not -FI_ENODATA", err);
	fi_freeinfo(h);
	printf("ok: getinfo: a source address, tx and rx caps apart, mr_mode 0, a node without "
	       "a port, FI_SHARED_AV refused\n");

	/* domain, cq, av, mr */
	if (fab_open(&f, FI_MSG | FI_TAGGED | FI_RMA, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE))
		die("fab_open");
	err = fi_close(&f.domain->fid);
	if (err != -FI_EBUSY)
		die("domain closed with an endpoint open: %d, not -FI_EBUSY", err);
	printf("ok: domain: closing it with objects open is -FI_EBUSY\n");
	{
		/*
		 * An entry the application writes reads back as written, its fid
		 * never followed (fabtests' fi_eq_test writes any pointer there:
		 * eq_read took its context from it and crashed, session 31).
		 */
		struct fi_eq_attr ea = { .size = 8 };
		struct fi_eq_entry in = { .fid = (fid_t)(uintptr_t)0x10, .context = &ea, .data = 9 };
		struct fi_eq_entry out;
		struct fid_eq *eq;
		uint32_t ev;

		CHECK(fi_eq_open(f.fabric, &ea, &eq, NULL));
		if (fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0) != (ssize_t)sizeof(in) ||
		    fi_eq_read(eq, &ev, &out, sizeof(out), 0) != (ssize_t)sizeof(out) ||
		    ev != FI_NOTIFY || out.fid != in.fid || out.context != in.context ||
		    out.data != in.data)
			die("eq: an entry written did not read back as written");
		CHECK(fi_close(&eq->fid));
		printf("ok: eq: an entry written reads back as written\n");
		unit_eq_wait(&f);
	}

	for (int fmt = FI_CQ_FORMAT_CONTEXT; fmt <= FI_CQ_FORMAT_TAGGED; fmt++)
		for (size_t sz = 1; sz <= 4096; sz *= 16) {
			struct fi_cq_attr a = { .format = fmt, .size = sz };
			struct fid_cq *cq;
			struct fi_cq_tagged_entry e;

			CHECK(fi_cq_open(f.domain, &a, &cq, NULL));
			if (fi_cq_read(cq, &e, 1) != -FI_EAGAIN)
				die("cq: an empty CQ read something");
			CHECK(fi_close(&cq->fid));
		}
	printf("ok: cq: 4 formats x sizes 1 .. 4096 open, read empty (-FI_EAGAIN), close\n");

	{
		struct sockaddr_in names[3];
		fi_addr_t fa[3];
		uint8_t back[64];
		size_t bl = sizeof(back);

		for (int i = 0; i < 3; i++)
			names[i] = (struct sockaddr_in){ .sin_family = AF_INET,
							 .sin_port = htons(40000 + i),
							 .sin_addr.s_addr = htonl(0x0a000001 + i) };
		if (fi_av_insert(f.av, names, 3, fa, 0, NULL) != 3)
			die("av: 3 names not inserted");
		for (int i = 0; i < 3; i++) {
			bl = sizeof(back);
			CHECK(fi_av_lookup(f.av, fa[i], back, &bl));
			if (bl != sizeof(names[i]) || memcmp(back, &names[i], bl))
				die("av: lookup of entry %d gave another name", i);
		}
		CHECK(fi_av_remove(f.av, &fa[1], 1, 0));
		bl = sizeof(back);
		if (fi_av_lookup(f.av, fa[1], back, &bl) == 0)
			die("av: a removed entry still looked up");
		printf("ok: av: 3 names inserted and looked up, one removed and gone\n");
	}

	{
		struct fid_mr *mr[8];
		uint8_t *b = malloc(1 << 20);

		for (int i = 0; i < 8; i++) {
			CHECK(fi_mr_reg(f.domain, b, (size_t)1 << (i * 20 / 7), FI_REMOTE_WRITE |
					FI_REMOTE_READ | FI_SEND | FI_RECV, 0, (uint64_t)i + 100, 0,
					&mr[i], NULL));
			for (int k = 0; k < i; k++)
				if (fi_mr_key(mr[k]) == fi_mr_key(mr[i]))
					die("mr: two regions share key %" PRIu64, fi_mr_key(mr[i]));
		}
		for (int i = 0; i < 8; i++)
			CHECK(fi_close(&mr[i]->fid));
		free(b);
		printf("ok: mr: 8 registrations of 1 B .. 1 MiB, distinct keys, closed\n");
	}
	unit_cntr_values(&f);
	unit_cntr_bind(&f);
	fab_close(&f);
}

/* ---- rdm and tagged ping-pong -------------------------------------------------------- */

static void pingpong(bool tagged, const size_t *sz, int nsz, int n)
{
	struct fab f = { 0 };
	size_t m = 0;

	for (int i = 0; i < nsz; i++)
		m = sz[i] > m ? sz[i] : m;
	if (fab_open(&f, tagged ? FI_TAGGED : FI_MSG, 2 * m, 0))
		exit(77);
	fab_meet(&f);
	for (int s = 0; s < nsz; s++) {
		uint8_t *tx = f.buf, *rx = f.buf + m;
		double t0 = 0;

		oob_sync(f.oob);
		for (int i = -1; i < n; i++) {	/* i = -1: a warm-up round */
			uint64_t seed = (uint64_t)s * 1000 + (i + 1) * 2 + (srv ? 0 : 1);

			if (i == 0)
				t0 = now_s();
			if (srv) {
				fill(tx, sz[s], seed);
				if (tagged)
					POST(&f, fi_tsend(f.ep, tx, sz[s], f.desc, f.peer, seed, CTX));
				else
					POST(&f, fi_send(f.ep, tx, sz[s], f.desc, f.peer, CTX));
			}
			if (tagged)
				POST(&f, fi_trecv(f.ep, rx, sz[s], f.desc, f.peer, seed ^ 1, 0, CTX));
			else
				POST(&f, fi_recv(f.ep, rx, sz[s], f.desc, f.peer, CTX));
			if (!srv) {
				reap(&f, 1);
				verify(rx, sz[s], seed ^ 1, "ping");
				fill(tx, sz[s], seed);
				if (tagged)
					POST(&f, fi_tsend(f.ep, tx, sz[s], f.desc, f.peer, seed, CTX));
				else
					POST(&f, fi_send(f.ep, tx, sz[s], f.desc, f.peer, CTX));
				reap(&f, 1);
			} else {
				reap(&f, 2);
				verify(rx, sz[s], seed ^ 1, "pong");
			}
		}
		if (srv)
			printf("%-16s %8zu bytes %5d iters %10.2f us half round trip\n",
			       tagged ? "tagged_pingpong" : "rdm", sz[s], n,
			       (now_s() - t0) / n / 2 * 1e6);
	}
	oob_sync(f.oob);
	printf("ok: %s: %d sizes x %d round trips, every byte checked both ways\n",
	       tagged ? "tagged_pingpong" : "rdm", nsz, n);
	fab_close(&f);
}

/* ---- bandwidth: tagged and RMA ----------------------------------------------------------- */

static void report_bw(const char *name, size_t sz, int n, double secs)
{
	printf("%-16s %8zu bytes %5d x %3d %10.1f MB/s\n", name, sz, n, window,
	       (double)sz * n * window / secs / 1e6);
}

static void t_tagged_bw(void)
{
	struct fab f = { 0 };
	size_t m = max_size();

	if (fab_open(&f, FI_TAGGED, m * (size_t)window, 0))
		exit(77);
	fab_meet(&f);
	for (int s = 0; s < nsizes; s++) {
		size_t sz = sizes[s];
		double t0 = 0;

		if (!srv)
			for (int w = 0; w < window; w++)
				fill(f.buf + w * sz, sz, (uint64_t)s * 100 + w);
		oob_sync(f.oob);
		for (int i = -1; i < iters; i++) {
			bool check = !quick || i <= 0 || i == iters - 1;

			if (i == 0) {
				hold(f.oob, true);
				t0 = now_s();
			}
			for (int w = 0; w < window; w++) {
				if (srv)
					POST(&f, fi_trecv(f.ep, f.buf + w * sz, sz, f.desc, f.peer, w, 0,
							  CTX));
				else
					POST(&f, fi_tsend(f.ep, f.buf + w * sz, sz, f.desc, f.peer, w,
							  CTX));
			}
			reap(&f, window);
			if (srv) {
				if (check)
					for (int w = 0; w < window; w++)
						verify(f.buf + w * sz, sz, (uint64_t)s * 100 + w,
						       "tagged_bw message");
				memset(f.buf, 0, check ? sz * window : 0);
				/* Ack: the sender's next window waits for our receives. */
				POST(&f, fi_tsend(f.ep, f.buf, 0, f.desc, f.peer, 1ull << 40, CTX));
				reap(&f, 1);
			} else {
				POST(&f, fi_trecv(f.ep, NULL, 0, NULL, f.peer, 1ull << 40, 0, CTX));
				reap(&f, 1);
			}
		}
		if (srv)
			report_bw("tagged_bw", sz, iters, now_s() - t0);
	}
	oob_sync(f.oob);
	printf("ok: tagged_bw: %d sizes x %d windows of %d, %s\n", nsizes, iters, window,
	       quick ? "first and last windows checked" : "every message checked");
	fab_close(&f);
}

enum rma_kind { RMA_WRITE, RMA_READ, RMA_WRITEDATA };

static void t_rma_bw(enum rma_kind k)
{
	static const char *names[] = { "rma_write", "rma_read", "rma_writedata" };
	struct fab f = { 0 };
	size_t m = max_size() * (size_t)window;
	uint64_t key, addr, kv[2];

	if (fab_open(&f, FI_RMA | FI_TAGGED, m, FI_REMOTE_READ | FI_REMOTE_WRITE))
		exit(77);
	if (k == RMA_WRITEDATA && !f.info->domain_attr->cq_data_size)
		exit(77);
	fab_meet(&f);
	/* The srv is the target: its key and address to the client. */
	kv[0] = fi_mr_key(f.mr);
	kv[1] = (f.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)f.buf : 0;
	{
		uint64_t theirs[2];

		oob_xfer(f.oob, theirs, kv, sizeof(kv));
		key = theirs[0];
		addr = theirs[1];
	}
	for (int s = 0; s < nsizes; s++) {
		size_t sz = sizes[s];
		double t0 = 0;

		/* The read's source, or what a write must leave. */
		if (srv && k == RMA_READ)
			for (int w = 0; w < window; w++)
				fill(f.buf + w * sz, sz, (uint64_t)s * 100 + w);
		if (!srv && k != RMA_READ)
			for (int w = 0; w < window; w++)
				fill(f.buf + w * sz, sz, (uint64_t)s * 100 + w);
		oob_sync(f.oob);
		for (int i = -1; i < iters && !srv; i++) {
			if (i == 0) {
				hold(f.oob, false);	/* the server is passive */
				t0 = now_s();
			}
			if (k == RMA_READ && (!quick || i <= 0 || i == iters - 1))
				memset(f.buf, 0, sz * window);
			for (int w = 0; w < window; w++) {
				uint8_t *b = f.buf + w * sz;
				uint64_t ra = addr + w * sz;

				if (k == RMA_WRITE)
					POST(&f, fi_write(f.ep, b, sz, f.desc, f.peer, ra, key, CTX));
				else if (k == RMA_READ)
					POST(&f, fi_read(f.ep, b, sz, f.desc, f.peer, ra, key, CTX));
				else
					POST(&f, fi_writedata(f.ep, b, sz, f.desc, (uint64_t)w, f.peer, ra,
							      key, NULL));
			}
			reap(&f, window);
			if (k == RMA_READ && (!quick || i <= 0 || i == iters - 1))
				for (int w = 0; w < window; w++)
					verify(f.buf + w * sz, sz, (uint64_t)s * 100 + w, "read");
		}
		if (srv && k == RMA_WRITEDATA) {
			/* One completion with its data per write, each window's 0 .. window-1. */
			uint64_t seen[256] = { 0 };

			for (int i = 0; i < (iters + 1) * window; i++) {
				reap(&f, 1);
				if (!(last.flags & FI_REMOTE_CQ_DATA) || last.data >= (uint64_t)window)
					die("writedata: completion flags %#" PRIx64 " data %" PRIu64,
					    last.flags, last.data);
				seen[last.data]++;
			}
			for (int w = 0; w < window; w++)
				if (seen[w] != (uint64_t)iters + 1)
					die("writedata: data %d seen %" PRIu64 " times", w, seen[w]);
		}
		if (!srv)
			report_bw(names[k], sz, iters, now_s() - t0);
		oob_sync(f.oob);
		if (srv && k != RMA_READ)
			for (int w = 0; w < window; w++)
				verify(f.buf + w * sz, sz, (uint64_t)s * 100 + w, "written region");
	}
	oob_sync(f.oob);
	printf("ok: %s: %d sizes x %d windows of %d, %s checked\n", names[k], nsizes, iters, window,
	       k == RMA_READ ? "the bytes read" : k == RMA_WRITE ? "the target's region" :
	       "every remote CQ data and the target's region");
	fab_close(&f);
}

/* ---- atomics ------------------------------------------------------------------------------ */

static size_t dtsize(enum fi_datatype dt)
{
	switch (dt) {
	case FI_INT8: case FI_UINT8: return 1;
	case FI_INT16: case FI_UINT16: return 2;
	case FI_INT32: case FI_UINT32: case FI_FLOAT: return 4;
	default: return 8;
	}
}

/* v as a double (the operations below are checked in that domain: small integers are exact). */
static double getv(const void *p, enum fi_datatype dt)
{
	switch (dt) {
	case FI_INT8: return *(const int8_t *)p;
	case FI_UINT8: return *(const uint8_t *)p;
	case FI_INT16: return *(const int16_t *)p;
	case FI_UINT16: return *(const uint16_t *)p;
	case FI_INT32: return *(const int32_t *)p;
	case FI_UINT32: return *(const uint32_t *)p;
	case FI_INT64: return (double)*(const int64_t *)p;
	case FI_UINT64: return (double)*(const uint64_t *)p;
	case FI_FLOAT: return *(const float *)p;
	default: return *(const double *)p;
	}
}

static void setv(void *p, enum fi_datatype dt, double v)
{
	switch (dt) {
	case FI_INT8: *(int8_t *)p = (int8_t)v; break;
	case FI_UINT8: *(uint8_t *)p = (uint8_t)v; break;
	case FI_INT16: *(int16_t *)p = (int16_t)v; break;
	case FI_UINT16: *(uint16_t *)p = (uint16_t)v; break;
	case FI_INT32: *(int32_t *)p = (int32_t)v; break;
	case FI_UINT32: *(uint32_t *)p = (uint32_t)v; break;
	case FI_INT64: *(int64_t *)p = (int64_t)v; break;
	case FI_UINT64: *(uint64_t *)p = (uint64_t)v; break;
	case FI_FLOAT: *(float *)p = (float)v; break;
	default: *(double *)p = v; break;
	}
}

/* What op leaves given the old value o, the operand a and (compare family) the compare value c. */
static double expect_op(enum fi_op op, double o, double a, double c, bool *changed)
{
	*changed = true;
	switch (op) {
	case FI_MIN: return a < o ? a : o;
	case FI_MAX: return a > o ? a : o;
	case FI_SUM: return o + a;
	case FI_PROD: return o * a;
	case FI_LOR: return (o != 0) || (a != 0);
	case FI_LAND: return (o != 0) && (a != 0);
	case FI_BOR: return (double)((uint64_t)o | (uint64_t)a);
	case FI_BAND: return (double)((uint64_t)o & (uint64_t)a);
	case FI_LXOR: return (o != 0) != (a != 0);
	case FI_BXOR: return (double)((uint64_t)o ^ (uint64_t)a);
	case FI_ATOMIC_READ: return o;
	case FI_ATOMIC_WRITE: return a;
	case FI_CSWAP: return c == o ? a : o;
	case FI_CSWAP_NE: return c != o ? a : o;
	case FI_CSWAP_LE: return c <= o ? a : o;
	case FI_CSWAP_LT: return c < o ? a : o;
	case FI_CSWAP_GE: return c >= o ? a : o;
	case FI_CSWAP_GT: return c > o ? a : o;
	case FI_MSWAP: return (double)(((uint64_t)c & (uint64_t)a) | (~(uint64_t)c & (uint64_t)o));
	default: *changed = false; return o;
	}
}

static void t_atomic(void)
{
	struct fab f = { 0 };
	uint64_t key, addr, kv[2], theirs[2];
	int tried = 0, skipped = 0;

	if (fab_open(&f, FI_ATOMIC | FI_TAGGED, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE))
		exit(77);
	fab_meet(&f);
	kv[0] = fi_mr_key(f.mr);
	kv[1] = (f.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)f.buf : 0;
	oob_xfer(f.oob, theirs, kv, sizeof(kv));
	key = theirs[0];
	addr = theirs[1];
	if (srv) {
		oob_sync(f.oob);	/* the client works on our words; we make progress */
		while (1) {
			char c;
			struct timeval tv = { 0, 1000 };
			fd_set r;

			fi_cq_read(f.cq, NULL, 0);
			FD_ZERO(&r);
			FD_SET(f.oob, &r);
			if (select(f.oob + 1, &r, NULL, NULL, &tv) > 0) {
				if (read(f.oob, &c, 1) != 1 || write(f.oob, &c, 1) != 1)
					die("out-of-band closed");
				break;
			}
		}
		printf("ok: atomic: served the client's atomics\n");
		fab_close(&f);
		return;
	}
	oob_sync(f.oob);
	for (int op = FI_MIN; op <= FI_MSWAP; op++) {
		for (int dt = FI_INT8; dt <= FI_DOUBLE; dt++) {
			size_t cnt = 0, sz = dtsize((enum fi_datatype)dt);
			bool cmp = op >= FI_CSWAP, changed;
			uint8_t *res = f.buf + 64, *opnd = f.buf + 128, *cv = f.buf + 192,
				*init = f.buf + 256;
			uint64_t word = addr + (uint64_t)(op * 16 + dt) % 400 * 8 + 512;
			double o, a = (op == FI_PROD) ? 3 : 5, c, want;
			int err;

			if (dt > FI_UINT64 && dt != FI_FLOAT && dt != FI_DOUBLE)
				continue;
			err = cmp ? fi_compare_atomicvalid(f.ep, dt, op, &cnt) :
			      op == FI_ATOMIC_READ || op <= FI_ATOMIC_WRITE ?
			      fi_fetch_atomicvalid(f.ep, dt, op, &cnt) : -FI_EINVAL;
			if (err || !cnt) {
				skipped++;
				continue;
			}
			/* The word to a known value first, the old one fetched back. */
			setv(init, (enum fi_datatype)dt, 6);
			POST(&f, fi_fetch_atomic(f.ep, init, 1, f.desc, res, f.desc, f.peer, word, key,
						 dt, FI_ATOMIC_WRITE, NULL));
			reap(&f, 1);
			setv(opnd, (enum fi_datatype)dt, a);
			c = op == FI_MSWAP ? 3 : 6;
			setv(cv, (enum fi_datatype)dt, c);
			if (cmp)
				POST(&f, fi_compare_atomic(f.ep, opnd, 1, f.desc, cv, f.desc, res, f.desc,
							   f.peer, word, key, dt, op, NULL));
			else
				POST(&f, fi_fetch_atomic(f.ep, op == FI_ATOMIC_READ ? NULL : opnd, 1,
							 f.desc, res, f.desc, f.peer, word, key, dt, op,
							 CTX));
			reap(&f, 1);
			o = getv(res, (enum fi_datatype)dt);
			if (o != 6)
				die("atomic op %d type %d: original %g, not 6", op, dt, o);
			want = expect_op(op, o, a, c, &changed);
			setv(init, (enum fi_datatype)dt, want);	/* the type's rounding */
			want = getv(init, (enum fi_datatype)dt);
			POST(&f, fi_fetch_atomic(f.ep, NULL, 1, f.desc, res, f.desc, f.peer, word, key, dt,
						 FI_ATOMIC_READ, NULL));
			reap(&f, 1);
			if (getv(res, (enum fi_datatype)dt) != want)
				die("atomic %s on %s: left %g, want %g",
				    fi_tostr(&op, FI_TYPE_ATOMIC_OP), fi_tostr(&dt, FI_TYPE_ATOMIC_TYPE),
				    getv(res, (enum fi_datatype)dt), want);
			(void)sz;
			tried++;
		}
	}
	oob_sync(f.oob);
	printf("ok: atomic: %d (operation, datatype) pairs applied and checked, %d not offered\n",
	       tried, skipped);
	fab_close(&f);
}

/* ---- multi_recv ------------------------------------------------------------------------------ */

static void t_multi_recv(void)
{
	const int nmsg = 200;
	const size_t msz = 1024, bsz = 64 * 1024;
	struct fab f = { 0 };
	size_t minr = 2 * msz;

	if (fab_open(&f, FI_MSG | FI_MULTI_RECV, 2 * bsz, 0)) {
		printf("SKIP: multi_recv: the provider offers no FI_MULTI_RECV\n");
		exit(77);
	}
	fab_meet(&f);
	if (srv) {
		int got = 0, released = 0;
		bool seen[256] = { 0 };

		CHECK(fi_setopt(&f.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &minr,
				sizeof(minr)));
		for (int b = 0; b < 2; b++) {
			struct iovec iov = { f.buf + b * bsz, bsz };
			struct fi_msg m = { .msg_iov = &iov, .desc = &f.desc, .iov_count = 1,
					    .addr = FI_ADDR_UNSPEC, .context = f.buf + b * bsz };

			POST(&f, fi_recvmsg(f.ep, &m, FI_MULTI_RECV));
		}
		oob_sync(f.oob);
		while (got < nmsg) {
			uint8_t *p;
			uint32_t idx;

			reap(&f, 1);
			p = last.buf;
			if (last.len) {
				if (last.len != msz || !p || p < f.buf || p + msz > f.buf + 2 * bsz)
					die("multi_recv: a message of %zu bytes at %p (buffers %p + %zu)",
					    (size_t)last.len, (void *)p, (void *)f.buf, 2 * bsz);
				memcpy(&idx, p, sizeof(idx));
				if (idx >= (uint32_t)nmsg || seen[idx])
					die("multi_recv: message index %u at +%td twice or out of range",
					    idx, p - f.buf);
				seen[idx] = true;
				verify(p + 4, msz - 4, idx, "multi_recv message");
				got++;
			}
			if (last.flags & FI_MULTI_RECV) {
				/* A buffer released (its messages all read): post it again. */
				uint8_t *base = last.op_context;
				struct iovec iov = { base, bsz };
				struct fi_msg m = { .msg_iov = &iov, .desc = &f.desc, .iov_count = 1,
						    .addr = FI_ADDR_UNSPEC, .context = base };

				released++;
				POST(&f, fi_recvmsg(f.ep, &m, FI_MULTI_RECV));
			}
		}
		oob_sync(f.oob);
		if (released < 2)
			die("multi_recv: %d buffers released for %d messages of %zu in %zu-byte buffers",
			    released, nmsg, msz, bsz);
		printf("ok: multi_recv: %d messages of %zu bytes into 2 x %zu-byte buffers, %d "
		       "releases flagged FI_MULTI_RECV, every message checked\n", nmsg, msz, bsz,
		       released);
	} else {
		oob_sync(f.oob);
		for (uint32_t i = 0; i < (uint32_t)nmsg; i++) {
			uint8_t *p = f.buf + (i % 32) * msz;

			memcpy(p, &i, sizeof(i));
			fill(p + 4, msz - 4, i);
			POST(&f, fi_send(f.ep, p, msz, f.desc, f.peer, CTX));
			if (i % 32 == 31)
				reap(&f, 32);
		}
		reap(&f, nmsg % 32);
		oob_sync(f.oob);
		printf("ok: multi_recv: %d messages sent\n", nmsg);
	}
	fab_close(&f);
}

/* ---- unexpected messages, cancel --------------------------------------------------------- */

static void t_unexpected(void)
{
	const int n = 64;
	const size_t sz = 8192;
	struct fab f = { 0 };

	if (fab_open(&f, FI_TAGGED, n * sz, 0))
		exit(77);
	fab_meet(&f);
	if (!srv) {
		for (int i = 0; i < n; i++) {
			fill(f.buf + i * sz, sz, 7000 + i);
			POST(&f, fi_tsend(f.ep, f.buf + i * sz, sz, f.desc, f.peer, 7000 + i, CTX));
		}
		reap(&f, n);
		oob_sync(f.oob);
		oob_sync(f.oob);
		printf("ok: unexpected_msg: %d messages sent before any receive\n", n);
	} else {
		oob_sync(f.oob);	/* all sent (delivered) before a single receive is posted */
		{
			struct fi_msg_tagged m = { .tag = 7000 + n - 1, .addr = FI_ADDR_UNSPEC };

			for (;;) {
				struct fi_cq_tagged_entry e;
				ssize_t r;

				POST(&f, fi_trecvmsg(f.ep, &m, FI_PEEK));
				while ((r = fi_cq_read(f.cq, &e, 1)) == -FI_EAGAIN)
					;
				if (r == 1) {
					if (e.len != sz || e.tag != 7000 + (uint64_t)n - 1)
						die("unexpected_msg: FI_PEEK saw %zu bytes tag %" PRIu64,
						    (size_t)e.len, e.tag);
					break;
				}
				fi_cq_readerr(f.cq, &(struct fi_cq_err_entry){ 0 }, 0);
				if (time(NULL) > deadline)
					die("unexpected_msg: FI_PEEK never saw the last message");
			}
		}
		for (int i = n - 1; i >= 0; i--) {
			POST(&f, fi_trecv(f.ep, f.buf + i * sz, sz, f.desc, FI_ADDR_UNSPEC, 7000 + i, 0,
					  CTX));
			reap(&f, 1);
			if (last.tag != 7000 + (uint64_t)i || last.len != sz)
				die("unexpected_msg: receive for tag %d got tag %" PRIu64, 7000 + i,
				    last.tag);
			verify(f.buf + i * sz, sz, 7000 + i, "unexpected message");
		}
		oob_sync(f.oob);
		printf("ok: unexpected_msg: %d messages buffered before their receives, FI_PEEK saw "
		       "the last, received in reverse tag order, every byte checked\n", n);
	}
	fab_close(&f);
}

static void t_recv_cancel(void)
{
	const size_t sz = 4096;
	struct fab f = { 0 };
	static int cctx, rctx;

	if (fab_open(&f, FI_TAGGED, 3 * sz, 0))
		exit(77);
	fab_meet(&f);
	if (srv) {
		struct fi_cq_err_entry ee = { 0 };
		ssize_t r;

		memset(f.buf, 0x5A, sz);
		POST(&f, fi_trecv(f.ep, f.buf, sz, f.desc, FI_ADDR_UNSPEC, 0xCA, 0, &cctx));
		CHECK(fi_cancel(&f.ep->fid, &cctx));
		while ((r = fi_cq_read(f.cq, &last, 1)) == -FI_EAGAIN)
			if (time(NULL) > deadline)
				die("recv_cancel: no completion for the cancelled receive");
		if (r != -FI_EAVAIL || fi_cq_readerr(f.cq, &ee, 0) != 1 || ee.err != FI_ECANCELED ||
		    ee.op_context != &cctx)
			die("recv_cancel: the cancelled receive completed %zd, err %d", r, ee.err);
		POST(&f, fi_trecv(f.ep, f.buf + sz, sz, f.desc, FI_ADDR_UNSPEC, 0xCA, 0, &rctx));
		oob_sync(f.oob);
		reap(&f, 1);
		if (last.op_context != &rctx)
			die("recv_cancel: the message completed another receive");
		verify(f.buf + sz, sz, 0xCA, "recv_cancel message");
		for (size_t i = 0; i < sz; i++)
			if (f.buf[i] != 0x5A)
				die("recv_cancel: the cancelled receive's buffer was written");
		oob_sync(f.oob);
		printf("ok: recv_cancel: FI_ECANCELED with its context, buffer untouched, the "
		       "message went to the next receive\n");
	} else {
		oob_sync(f.oob);
		fill(f.buf, sz, 0xCA);
		POST(&f, fi_tsend(f.ep, f.buf, sz, f.desc, f.peer, 0xCA, CTX));
		reap(&f, 1);
		oob_sync(f.oob);
		printf("ok: recv_cancel: message sent\n");
	}
	fab_close(&f);
}

/* ---- several clients -------------------------------------------------------------------------- */

static void t_multi_client(void)
{
	const size_t sz = 4096;
	struct fab f = { 0 };

	if (fab_open(&f, FI_TAGGED, 2 * sz * (size_t)(clients + 1), 0))
		exit(77);
	if (!srv) {
		uint32_t id;

		fab_meet(&f);
		oob_xfer(f.oob, &id, &(uint32_t){ 0 }, sizeof(id));
		for (int i = 0; i < iters; i++) {
			uint64_t seed = (uint64_t)id << 20 | (uint64_t)i;

			fill(f.buf, sz, seed);
			POST(&f, fi_trecv(f.ep, f.buf + sz, sz, f.desc, f.peer, seed ^ 1, 0, CTX));
			POST(&f, fi_tsend(f.ep, f.buf, sz, f.desc, f.peer, seed, CTX));
			reap(&f, 2);
			verify(f.buf + sz, sz, seed ^ 1, "multi_client reply");
		}
		oob_sync(f.oob);
		printf("ok: multi_client: client %u, %d round trips checked\n", id, iters);
	} else {
		fi_addr_t peers[64];
		int oobs[64];
		uint8_t mine[128] = { 0 };
		size_t l = sizeof(mine) - 8;

		CHECK(fi_getname(&f.ep->fid, mine + 8, &l));
		memcpy(mine, &l, sizeof(l));
		for (uint32_t c = 0; c < (uint32_t)clients; c++) {
			uint8_t theirs[128];
			uint32_t dummy;

			oobs[c] = oob_open();
			oob_xfer(oobs[c], theirs, mine, sizeof(mine));
			if (fi_av_insert(f.av, theirs + 8, 1, &peers[c], 0, NULL) != 1)
				die("fi_av_insert");
			oob_xfer(oobs[c], &dummy, &c, sizeof(c));
		}
		/* Every client's messages, as they come, each answered to its sender. */
		for (int k = 0; k < clients * iters; k++) {
			uint8_t *rx = f.buf, *tx = f.buf + sz;
			uint64_t seed;
			uint32_t c;

			POST(&f, fi_trecv(f.ep, rx, sz, f.desc, FI_ADDR_UNSPEC, 0, ~0ull, CTX));
			reap(&f, 1);
			seed = last.tag;
			c = (uint32_t)(seed >> 20);
			if (c >= (uint32_t)clients)
				die("multi_client: tag %#" PRIx64 " names no client", seed);
			verify(rx, sz, seed, "multi_client request");
			fill(tx, sz, seed ^ 1);
			POST(&f, fi_tsend(f.ep, tx, sz, f.desc, peers[c], seed ^ 1, CTX));
			reap(&f, 1);
		}
		for (int c = 0; c < clients; c++)
			oob_sync(oobs[c]);
		printf("ok: multi_client: %d clients x %d round trips, every byte checked\n", clients,
		       iters);
	}
	fab_close(&f);
}

/* ---- zero-copy rendezvous (mroc's own counters) -------------------------------------------- */

/* FI_PEEK until a message with tag has arrived unexpected. */
static void wait_unexpected(struct fab *f, uint64_t tag)
{
	struct fi_msg_tagged m = { .tag = tag, .addr = FI_ADDR_UNSPEC };

	for (;;) {
		struct fi_cq_tagged_entry e;
		ssize_t r;

		POST(f, fi_trecvmsg(f->ep, &m, FI_PEEK));
		while ((r = fi_cq_read(f->cq, &e, 1)) == -FI_EAGAIN)
			;
		if (r == 1)
			return;
		fi_cq_readerr(f->cq, &(struct fi_cq_err_entry){ 0 }, 0);
		if (time(NULL) > deadline)
			die("zcopy: FI_PEEK never saw tag %" PRIu64, tag);
	}
}

/* Is p in pages mroc's provider re-backed with a memfd (its zero-copy registration)? */
static bool in_zcopy_memfd(const void *p)
{
	char line[512];
	uintptr_t a, b;
	bool in = false;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		die("/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &a, &b) == 2 && (uintptr_t)p >= a &&
		    (uintptr_t)p < b)
			in = strstr(line, "/memfd:mroc-fi-zcopy") != NULL;
	fclose(f);
	return in;
}

static void expect(const char *what, uint64_t got, uint64_t want)
{
	if (got != want)
		die("zcopy: %s is %" PRIu64 ", not %" PRIu64, what, got, want);
}

/*
 * A child after fork() must not share p's pages with us (issue 24): it writes
 * a byte of every page of [p, p + len).  Re-backed (registered)
 * pages are MADV_DONTFORK, so the child has nothing there and dies of SIGSEGV
 * at its first touch; private pages are its own copy.  Either way our bytes
 * (pattern seed) are unchanged.
 */
static void fork_check(uint8_t *p, size_t len, uint64_t seed, bool registered, const char *what)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		/* A library here may catch SIGSEGV (psm2's libinfinipath: exit 1): the kernel's verdict. */
		signal(SIGSEGV, SIG_DFL);
		for (size_t i = 0; i < len; i += 4096)
			p[i] ^= 0xff;
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	if (registered && !(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV))
		die("zcopy: %s: a child after fork() could touch the registered pages (status %#x)",
		    what, status);
	if (!registered && !(WIFEXITED(status) && !WEXITSTATUS(status)))
		die("zcopy: %s: a child after fork() failed on private pages (status %#x)", what,
		    status);
	verify(p, len, seed, what);
}

/*
 * Four 1 MiB messages, client to server: tag 1 registered -> registered, receive
 * posted first; tag 2 the same, arrived before its receive; tag 3 registered -> a
 * malloc'd receive; tag 4 from a malloc'd buffer -> registered.
 */
static void t_zcopy(void)
{
	const size_t sz = 1 << 20;
	const char *env = getenv("FI_MROC_RNDV");
	bool rndv = !env || strcmp(env, "0");
	struct fi_mroc_ops_2 *ops;
	struct fi_mroc_traffic t;
	struct fab f = { 0 };
	uint8_t *plain = malloc(sz);

	if (!plain)
		die("out of memory");
	if (strcmp(prov, "mroc") || fab_open(&f, FI_TAGGED, 4 * sz, 0))
		exit(77);
	if (fi_open_ops(&f.ep->fid, FI_MROC_OPS_2, 0, (void **)&ops, NULL))
		die("zcopy: no %s", FI_MROC_OPS_2);
	fab_meet(&f);
	if (!srv) {
		for (int i = 0; i < 3; i++)
			fill(f.buf + i * sz, sz, 100 + i);
		fill(plain, sz, 103);
		oob_sync(f.oob);	/* tag 1's receive is posted */
		POST(&f, fi_tsend(f.ep, f.buf, sz, f.desc, f.peer, 1, CTX));
		POST(&f, fi_tsend(f.ep, f.buf + sz, sz, f.desc, f.peer, 2, CTX));
		POST(&f, fi_tsend(f.ep, f.buf + 2 * sz, sz, f.desc, f.peer, 3, CTX));
		POST(&f, fi_tsend(f.ep, plain, sz, NULL, f.peer, 4, CTX));
		reap(&f, 4);
		oob_sync(f.oob);
		CHECK(ops->traffic(f.ep, &t));
		expect("rndv_sent", t.rndv_sent, rndv ? 3 : 0);
		expect("tx_staged", t.tx_staged, rndv ? sz : 4 * sz);
		printf("ok: zcopy: 4 x 1 MiB sent, %" PRIu64 " by rendezvous, %" PRIu64
		       " bytes staged\n", t.rndv_sent, t.tx_staged);
	} else {
		POST(&f, fi_trecv(f.ep, f.buf, sz, f.desc, FI_ADDR_UNSPEC, 1, 0, CTX));
		oob_sync(f.oob);
		reap(&f, 1);
		verify(f.buf, sz, 100, "zcopy tag 1 (posted first)");
		wait_unexpected(&f, 2);
		POST(&f, fi_trecv(f.ep, f.buf + sz, sz, f.desc, FI_ADDR_UNSPEC, 2, 0, CTX));
		reap(&f, 1);
		verify(f.buf + sz, sz, 101, "zcopy tag 2 (unexpected)");
		POST(&f, fi_trecv(f.ep, plain, sz, NULL, FI_ADDR_UNSPEC, 3, 0, CTX));
		reap(&f, 1);
		verify(plain, sz, 102, "zcopy tag 3 (into malloc'd memory)");
		POST(&f, fi_trecv(f.ep, f.buf + 3 * sz, sz, f.desc, FI_ADDR_UNSPEC, 4, 0, CTX));
		reap(&f, 1);
		verify(f.buf + 3 * sz, sz, 103, "zcopy tag 4 (from malloc'd memory)");
		oob_sync(f.oob);
		CHECK(ops->traffic(f.ep, &t));
		expect("rndv_direct", t.rndv_direct, rndv ? 2 * sz : 0);
		expect("rndv_bounced", t.rndv_bounced, rndv ? sz : 0);
		expect("rx_staged", t.rx_staged, rndv ? sz : 4 * sz);
		printf("ok: zcopy: 4 x 1 MiB received and checked: %" PRIu64 " bytes read straight "
		       "into the receive, %" PRIu64 " through a bounce, %" PRIu64 " staged\n",
		       t.rndv_direct, t.rndv_bounced, t.rx_staged);
	}
	/* Registered, the pages are a memfd mrocd shares; closed, private again, bytes kept. */
	if (in_zcopy_memfd(f.buf + sz) != rndv)
		die("zcopy: the registered buffer is %sin a memfd", rndv ? "not " : "");
	fork_check(f.buf + sz, sz, 101, rndv, "the registered buffer after fork()");
	CHECK(fi_close(&f.mr->fid));
	f.mr = NULL;
	if (in_zcopy_memfd(f.buf + sz))
		die("zcopy: the buffer is still in a memfd after fi_close(mr)");
	fork_check(f.buf + sz, sz, 101, false, "the buffer after fi_close(mr) and fork()");
	for (int i = 0; i < 4; i++)	/* the server's slot 2 was not used (tag 3 went to plain) */
		if (!(srv ? i == 2 : i == 3))
			verify(f.buf + i * sz, sz, 100 + i, "zcopy: the buffer after fi_close(mr)");
	fab_close(&f);
	free(plain);
}

/* ---- MSG endpoints: CM private data (fi_cm_data) ------------------------------------------ */

struct msgfab {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_pep *pep;
	struct fid_ep *ep;
	struct fid_mr *mr;
	uint8_t buf[4096];
	size_t cm_max;			/* FI_OPT_CM_DATA_SIZE */
	struct fi_eq_cm_entry *entry;	/* room for cm_max bytes of data after it */
	uint8_t *data;			/* what we send: cm_max + 1 bytes */
};

static void msg_open(struct msgfab *m)
{
	struct fi_info *h = hints_for(FI_MSG);
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_UNSPEC };
	int err;

	h->ep_attr->type = FI_EP_MSG;
	err = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &m->info);
	fi_freeinfo(h);
	if (err)
		exit(77);
	CHECK(fi_fabric(m->info->fabric_attr, &m->fabric, NULL));
	CHECK(fi_eq_open(m->fabric, &eqa, &m->eq, NULL));
	CHECK(fi_domain(m->fabric, m->info, &m->domain, NULL));
	CHECK(fi_mr_reg(m->domain, m->buf, sizeof(m->buf), FI_SEND | FI_RECV, 0, 0, 0, &m->mr,
			NULL));
}

/* The CM data buffers, once FI_OPT_CM_DATA_SIZE is known (77 if it is 0: nothing to test). */
static void msg_cm_size(struct msgfab *m, struct fid *fid)
{
	size_t l = sizeof(m->cm_max);

	CHECK(fi_getopt(fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &m->cm_max, &l));
	if (!m->cm_max) {
		printf("cm_data: FI_OPT_CM_DATA_SIZE is 0\n");
		exit(77);
	}
	m->entry = calloc(1, sizeof(*m->entry) + m->cm_max);
	m->data = calloc(1, m->cm_max + 1);
}

/* An endpoint of info (the client's, or the one a FI_CONNREQ's info accepts on). */
static void msg_ep(struct msgfab *m, struct fi_info *info)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_CONTEXT, .size = 64 };
	size_t cm_max, l = sizeof(cm_max);

	if (!m->cq)
		CHECK(fi_cq_open(m->domain, &cqa, &m->cq, NULL));
	CHECK(fi_endpoint(m->domain, info, &m->ep, NULL));
	CHECK(fi_ep_bind(m->ep, &m->eq->fid, 0));
	CHECK(fi_ep_bind(m->ep, &m->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(m->ep));
	CHECK(fi_getopt(&m->ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &cm_max, &l));
	if (m->cm_max && cm_max != m->cm_max)
		die("FI_OPT_CM_DATA_SIZE: %zu on the endpoint, %zu before", cm_max, m->cm_max);
}

/*
 * The next EQ event into m->entry: its size (-FI_EAVAIL: an error entry waits).
 * The client sleeps in fi_eq_sread; the server in poll() on FI_GETWAIT's fd after
 * fi_trywait, as an application with its own event loop does: every connection
 * event must wake it (a poll that times out before an event is a failure).
 */
static ssize_t msg_event(struct msgfab *m, uint32_t want, size_t len)
{
	struct fid *fids[1] = { &m->eq->fid };
	uint32_t ev;
	ssize_t n;
	int fd;

	memset(m->entry, 0, sizeof(*m->entry) + m->cm_max);
	if (srv) {
		/* A wake may also be a completion of the connection's (no event): look again. */
		CHECK(fi_control(&m->eq->fid, FI_GETWAIT, &fd));
		do {
			if (fi_trywait(m->fabric, fids, 1) == 0 &&
			    poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, 20000) != 1)
				die("no CM event woke FI_GETWAIT's fd in 20 s");
			n = fi_eq_read(m->eq, &ev, m->entry, len, 0);
		} while (n == -FI_EAGAIN && time(NULL) <= deadline);
	} else {
		while ((n = fi_eq_sread(m->eq, &ev, m->entry, len, 100, 0)) == -FI_EAGAIN)
			if (time(NULL) > deadline)
				die("timed out waiting for a CM event");
	}
	if (n >= 0 && ev != want)
		die("CM event %u, not %u", ev, want);
	return n;
}

/* One small message each way on the new connection, checked. */
static void msg_talk(struct msgfab *m, uint64_t seed)
{
	struct fi_cq_entry e;
	ssize_t r;

	fill(m->buf, 64, seed ^ (srv ? 0 : 1));
	CHECK(fi_recv(m->ep, m->buf + 64, 64, fi_mr_desc(m->mr), 0, NULL));
	CHECK(fi_send(m->ep, m->buf, 64, fi_mr_desc(m->mr), 0, NULL));
	for (int n = 0; n < 2;) {
		r = fi_cq_read(m->cq, &e, 1);
		if (r == 1)
			n++;
		else if (r != -FI_EAGAIN)
			die("fi_cq_read on the connection: %s", fi_strerror((int)-r));
		else if (time(NULL) > deadline)
			die("timed out on the connection");
	}
	verify(m->buf + 64, 64, seed ^ (srv ? 1 : 0), "a message on the accepted connection");
}

static void msg_shutdown(struct msgfab *m)
{
	ssize_t n;

	CHECK(fi_shutdown(m->ep, 0));
	n = msg_event(m, FI_SHUTDOWN, sizeof(*m->entry));
	if (n != sizeof(*m->entry) || m->entry->fid != &m->ep->fid)
		die("FI_SHUTDOWN: %zd bytes, fid %p (ep %p)", n, (void *)m->entry->fid,
		    (void *)m->ep);
	CHECK(fi_close(&m->ep->fid));
	m->ep = NULL;
}

/* A FI_CONNREQ carrying n bytes of seed: its info (the caller frees it). */
static struct fi_info *msg_connreq(struct msgfab *m, size_t n, uint64_t seed)
{
	ssize_t r = msg_event(m, FI_CONNREQ, sizeof(*m->entry) + m->cm_max);

	if (r != (ssize_t)(sizeof(*m->entry) + n))
		die("FI_CONNREQ with %zu bytes of data: fi_eq_sread %zd, not %zu", n, r,
		    sizeof(*m->entry) + n);
	if (m->entry->fid != &m->pep->fid)
		die("FI_CONNREQ's fid is not the passive endpoint");
	verify(m->entry->data, n, seed, "FI_CONNREQ's data (fi_connect's)");
	return m->entry->info;
}

static void cm_server_round(struct msgfab *m, size_t n, uint64_t seed)
{
	struct fi_info *info = msg_connreq(m, n, seed);
	ssize_t r;

	EXPECT_ERR(fi_reject(m->pep, info->handle, m->data, m->cm_max + 1), -FI_EINVAL);
	fill(m->data, n, seed + 1);
	CHECK(fi_reject(m->pep, info->handle, m->data, n));
	fi_freeinfo(info);

	info = msg_connreq(m, n, seed + 2);
	msg_ep(m, info);
	EXPECT_ERR(fi_accept(m->ep, m->data, m->cm_max + 1), -FI_EINVAL);
	fill(m->data, n, seed + 3);
	CHECK(fi_accept(m->ep, m->data, n));
	fi_freeinfo(info);
	/* Ours has no data: fi_accept's goes to the client. */
	r = msg_event(m, FI_CONNECTED, sizeof(*m->entry) + m->cm_max);
	if (r != sizeof(*m->entry) || m->entry->fid != &m->ep->fid)
		die("the server's FI_CONNECTED: %zd bytes, not %zu", r, sizeof(*m->entry));
	msg_talk(m, seed + 4);
	msg_shutdown(m);
}

static void cm_client_round(struct msgfab *m, const void *name, size_t n, uint64_t seed,
			    bool own_buf)
{
	struct fi_eq_err_entry ee = { 0 };
	uint8_t mine[1024];
	ssize_t r;

	msg_ep(m, m->info);
	EXPECT_ERR(fi_connect(m->ep, name, m->data, m->cm_max + 1), -FI_EINVAL);
	fill(m->data, n, seed);
	CHECK(fi_connect(m->ep, name, m->data, n));
	r = msg_event(m, FI_CONNECTED, sizeof(*m->entry) + m->cm_max);
	if (r != -FI_EAVAIL)
		die("a rejected fi_connect: fi_eq_sread %zd, not -FI_EAVAIL", r);
	/* err_data: ours (err_data_size on input) or the provider's. */
	if (own_buf) {
		memset(mine, 0xee, sizeof(mine));
		ee.err_data = mine;
		ee.err_data_size = sizeof(mine);
	}
	r = fi_eq_readerr(m->eq, &ee, 0);
	if (r != sizeof(ee) || ee.err != FI_ECONNREFUSED || ee.fid != &m->ep->fid)
		die("the reject's error entry: %zd bytes, err %d (%s)", r, ee.err,
		    fi_strerror(ee.err));
	if (ee.err_data_size != n || (own_buf && n && ee.err_data != mine))
		die("the reject's err_data: %zu bytes at %p, not %zu", ee.err_data_size,
		    ee.err_data, n);
	verify(ee.err_data, n, seed + 1, "FI_ECONNREFUSED's err_data (fi_reject's)");
	CHECK(fi_close(&m->ep->fid));

	msg_ep(m, m->info);
	fill(m->data, n, seed + 2);
	CHECK(fi_connect(m->ep, name, m->data, n));
	r = msg_event(m, FI_CONNECTED, sizeof(*m->entry) + m->cm_max);
	if (r != (ssize_t)(sizeof(*m->entry) + n) || m->entry->fid != &m->ep->fid)
		die("FI_CONNECTED with %zu bytes of data: fi_eq_sread %zd", n, r);
	verify(m->entry->data, n, seed + 3, "FI_CONNECTED's data (fi_accept's)");
	msg_talk(m, seed + 4);
	msg_shutdown(m);
}

/*
 * fi_connect, fi_accept and fi_reject each with 0, 1, 100 and FI_OPT_CM_DATA_SIZE
 * bytes of private data, each arriving byte for byte (FI_CONNREQ, FI_CONNECTED,
 * the reject's err_data, in the provider's buffer and in ours); one byte more
 * refused (-FI_EINVAL) by all three; every accepted connection carries a message.
 */
static void t_cm_data(void)
{
	struct msgfab m = { 0 };
	uint8_t name[128] = { 0 }, theirs[128];
	size_t l = sizeof(name) - 8, lens[4] = { 0, 1, 100, 0 };
	int oob;

	msg_open(&m);
	if (srv) {
		CHECK(fi_passive_ep(m.fabric, m.info, &m.pep, NULL));
		CHECK(fi_pep_bind(m.pep, &m.eq->fid, 0));
		CHECK(fi_listen(m.pep));
		msg_cm_size(&m, &m.pep->fid);
		CHECK(fi_getname(&m.pep->fid, name + 8, &l));
		memcpy(name, &l, sizeof(l));
	} else {
		msg_ep(&m, m.info);
		msg_cm_size(&m, &m.ep->fid);
		CHECK(fi_close(&m.ep->fid));
	}
	lens[3] = m.cm_max;
	oob = oob_open();
	oob_xfer(oob, theirs, name, sizeof(name));
	for (int i = 0; i < 4; i++) {
		if (srv)
			cm_server_round(&m, lens[i], (uint64_t)i << 8);
		else
			cm_client_round(&m, theirs + 8, lens[i], (uint64_t)i << 8, i & 1);
		printf("cm_data: %zu bytes: rejected and accepted\n", lens[i]);
		oob_sync(oob);
	}
	printf("ok: cm_data: connect, accept and reject with 0, 1, 100 and %zu bytes, each "
	       "checked; %zu refused\n", m.cm_max, m.cm_max + 1);
	if (m.pep)
		CHECK(fi_close(&m.pep->fid));
	CHECK(fi_close(&m.cq->fid));
	CHECK(fi_close(&m.mr->fid));
	CHECK(fi_close(&m.domain->fid));
	CHECK(fi_close(&m.eq->fid));
	CHECK(fi_close(&m.fabric->fid));
	fi_freeinfo(m.info);
	free(m.entry);
	free(m.data);
	close(oob);
}

int main(int argc, char **argv)
{
	int o;

	if (getenv("FI_PROVIDER"))
		prov = getenv("FI_PROVIDER");
	while ((o = getopt(argc, argv, "p:P:n:S:w:c:qH:")) != -1) {
		switch (o) {
		case 'p': prov = optarg; break;
		case 'P': port = atoi(optarg); break;
		case 'n': iters = atoi(optarg); break;
		case 'w': window = atoi(optarg); break;
		case 'c': clients = atoi(optarg); break;
		case 'q': quick = true; break;
		case 'H': hold_path = optarg; break;
		case 'S': {
			char *s = strdup(optarg), *t, *save;

			nsizes = 0;
			for (t = strtok_r(s, ",", &save); t && nsizes < MAX_SIZES;
			     t = strtok_r(NULL, ",", &save))
				sizes[nsizes++] = strtoull(t, NULL, 0);
			free(s);
			break;
		}
		default:
			goto usage;
		}
	}
	if (optind >= argc || window < 1 || window > 256 || clients < 1 || clients > 64)
		goto usage;
	test = argv[optind];
	server = optind + 1 < argc ? argv[optind + 1] : NULL;
	srv = !server;
	deadline = time(NULL) + TIMEOUT_S;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(test, "unit"))
		t_unit();
	else if (!strcmp(test, "rdm"))
		pingpong(false, (size_t[]){ 1, 64, 4096, 65536, 1048576 }, 5, iters);
	else if (!strcmp(test, "tagged_pingpong"))
		pingpong(true, sizes, nsizes, iters);
	else if (!strcmp(test, "tagged_bw"))
		t_tagged_bw();
	else if (!strcmp(test, "rma_write"))
		t_rma_bw(RMA_WRITE);
	else if (!strcmp(test, "rma_read"))
		t_rma_bw(RMA_READ);
	else if (!strcmp(test, "rma_writedata"))
		t_rma_bw(RMA_WRITEDATA);
	else if (!strcmp(test, "atomic"))
		t_atomic();
	else if (!strcmp(test, "multi_recv"))
		t_multi_recv();
	else if (!strcmp(test, "unexpected_msg"))
		t_unexpected();
	else if (!strcmp(test, "recv_cancel"))
		t_recv_cancel();
	else if (!strcmp(test, "multi_client"))
		t_multi_client();
	else if (!strcmp(test, "cntr"))
		t_cntr();
	else if (!strcmp(test, "zcopy"))
		t_zcopy();
	else if (!strcmp(test, "cm_data"))
		t_cm_data();
	else
		goto usage;
	return 0;
usage:
	fprintf(stderr, "usage: fi_suite [-p PROV] [-P PORT] [-n ITERS] [-S SIZES] [-w WINDOW] "
			"[-c CLIENTS] [-q] [-H FILE] TEST [SERVER]\n");
	return 2;
}
