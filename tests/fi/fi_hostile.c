// SPDX-License-Identifier: MIT
/*
 * The mroc provider against hostile peers (issue 24, items 15-20, and its
 * provider harness).  A victim drives the libfabric API; an attacker on
 * another host speaks the provider's protocol (libfabric/proto.h) itself over
 * raw libmroc QPs, beside a genuine libfabric endpoint X of its own:
 *
 *   fi_hostile victim CTLPORT
 *   fi_hostile attacker VICTIM_IP CTLPORT OWN_IP [FUZZ_CHUNKS]
 *
 * They keep in step over a TCP connection (CTLPORT, lines).  The attacker's
 * raw connections claim an identity M it can answer for (it listens on M's
 * service and confirms its nonces: a compromised peer), except in 20 where it
 * claims to be X.  Scenarios, each checked by the victim (exit 1 on the
 * first failure, the attacker's findings come over the line):
 *
 *   15  forged READ_RESP / RMA_ACK / ATOMIC_RESP naming the victim's write to X:
 *       no completion before X answers, the write's source buffer untouched
 *   16  an RMA_ACK for a write still being sent (credits withheld): no early
 *       completion; the write lands whole and completes once, at its answer
 *   19  a region closed between two chunks of a remote write (the rest is not
 *       written, EACCES answered) and during a remote read (nothing read after
 *       the close: the read ends with MFI_F_ABORT)
 *   18  FI_PEEK|FI_CLAIM|FI_DISCARD on a message still arriving: its buffer
 *       freed at once (mallinfo2), the rest of it goes nowhere
 *   17  fi_close(ep) with sends, a write, a read and receives outstanding
 *       (each ends FI_ECANCELED on the CQ), and with a message half received
 *       into a posted receive
 *   20  a connection claiming to be X: the victim's message to X reaches X
 *       only, and the forger's message "from X" never matches a receive
 *       directed at X
 *   fuzz random headers and payloads (FUZZ_CHUNKS, default 3000) from M
 *       while the victim has receives and a read outstanding: no crash, no
 *       byte outside the registered region or a posted buffer changed, then a
 *       verified round trip with X
 *
 * The refusals are read from the provider's counters (fi_mroc.h) when it has
 * them.  Written for the mroc provider (FI_PROVIDER_PATH).
 */
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
#define TIMEOUT_S	(getenv("FI_HOSTILE_TIMEOUT") ? atoi(getenv("FI_HOSTILE_TIMEOUT")) : 90)

static const char *role = "fi_hostile";
static int ctl = -1;
static time_t deadline;

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fi_hostile %s: FAIL: ", role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (ctl >= 0)
		dprintf(ctl, "FAIL\n");
	exit(1);
}

static void note(const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void check_deadline(const char *what)
{
	if (time(NULL) > deadline)
		die("timed out: %s", what);
}

static uint8_t pat(uint64_t i, uint8_t seed)
{
	return (uint8_t)(i * 131 + seed + (i >> 8));
}

static void fill(uint8_t *b, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(i, seed);
}

static bool is_pat(const uint8_t *b, size_t n, uint8_t seed, uint64_t off)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(off + i, seed))
			return false;
	return true;
}

static bool all(const uint8_t *b, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != v)
			return false;
	return true;
}

/* ---- the line between victim and attacker ------------------------------------- */

static void (*idle_fn)(void);
static char linebuf[4096];
static size_t linelen;

static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	buf[n++] = '\n';
	if (write(ctl, buf, (size_t)n) != n)
		die("control line: %s", strerror(errno));
}

/* The next line, progress running meanwhile; "FAIL" from the other side ends us too. */
static char *hear(void)
{
	static char out[4096];

	for (;;) {
		char *nl = memchr(linebuf, '\n', linelen);
		struct pollfd p = { .fd = ctl, .events = POLLIN };
		ssize_t n;

		if (nl) {
			size_t l = (size_t)(nl - linebuf);

			memcpy(out, linebuf, l);
			out[l] = 0;
			memmove(linebuf, nl + 1, linelen - l - 1);
			linelen -= l + 1;
			if (!strcmp(out, "FAIL")) {
				ctl = -1;
				die("the other side failed");
			}
			return out;
		}
		if (idle_fn)
			idle_fn();
		check_deadline("the other side");
		if (poll(&p, 1, idle_fn ? 0 : 100) <= 0)
			continue;
		n = read(ctl, linebuf + linelen, sizeof(linebuf) - linelen - 1);
		if (n <= 0)
			die("control line closed");
		linelen += (size_t)n;
	}
}

static void expect(const char *word)
{
	char *l = hear();

	if (strncmp(l, word, strlen(word)))
		die("expected \"%s\", heard \"%s\"", word, l);
}

/* ---- libfabric side (victim, and the attacker's genuine endpoint X) -------------- */

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

static struct done dones[4096];
static size_t ndone;

static void ep_open(struct fab *f)
{
	size_t l = sizeof(f->name);

	fic_ep_open(f->domain, f->info, f->av, f->cq, &f->ep);
	CHECK(fi_getname(&f->ep->fid, &f->name, &l));
	if (fi_open_ops(&f->ep->fid, FI_MROC_OPS_1, 0, (void **)&f->ops, NULL))
		f->ops = NULL;	/* a provider without counters: the checks that need them are skipped */
}

static void fab_open(struct fab *f)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED, .size = 4096 };

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_DIRECTED_RECV | FI_SOURCE;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	hints->fabric_attr->prov_name = strdup("mroc");
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &f->info));
	fi_freeinfo(hints);
	fic_domain_open(f->info, &cqa, &f->fabric, &f->domain, &f->av, &f->cq);
	ep_open(f);
}

static struct fi_mroc_counters counters(struct fab *f)
{
	struct fi_mroc_counters c = { 0 };

	if (f->ops)
		f->ops->counters(f->ep, &c);
	return c;
}

/* Completions so far into dones[]. */
static void reap(struct fab *f)
{
	struct fi_cq_tagged_entry e[16];
	fi_addr_t src[16];
	ssize_t n;

	while ((n = fi_cq_readfrom(f->cq, e, 16, src)) > 0 || n == -FI_EAVAIL) {
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = { 0 };

			if (fi_cq_readerr(f->cq, &ee, 0) != 1)
				die("fi_cq_readerr");
			if (ndone < 4096)
				dones[ndone++] = (struct done){ ee.op_context, ee.flags, ee.tag, ee.len,
								ee.err, FI_ADDR_NOTAVAIL };
			continue;
		}
		for (ssize_t i = 0; i < n && ndone < 4096; i++)
			dones[ndone++] = (struct done){ e[i].op_context, e[i].flags, e[i].tag,
							e[i].len, 0, src[i] };
	}
	if (n < 0 && n != -FI_EAGAIN)
		die("fi_cq_read: %s", fi_strerror((int)-n));
}

static struct done *find_done(void *ctx)
{
	for (size_t i = 0; i < ndone; i++)
		if (dones[i].ctx == ctx)
			return &dones[i];
	return NULL;
}

static int count_done(void *ctx)
{
	int n = 0;

	for (size_t i = 0; i < ndone; i++)
		n += dones[i].ctx == ctx;
	return n;
}

static struct fab V, X;
static bool x_running;

static struct done *wait_done(struct fab *f, void *ctx, const char *what)
{
	struct done *d;

	while (!(d = find_done(ctx))) {
		if (idle_fn)
			idle_fn();
		else
			reap(f);
		check_deadline(what);
	}
	return d;
}

#define POST(f, call) do {							\
	ssize_t _r;								\
	while ((_r = (call)) == -FI_EAGAIN)					\
		reap(f);							\
	if (_r)									\
		die("%s: %s", #call, fi_strerror((int)-_r));			\
} while (0)

/* ---- raw side: the provider's protocol spoken by hand -------------------------- */

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

static struct mroc_ctx *raw_ctx;
static struct raw *lis[16];		/* connections the victim opened to M */
static size_t nlis;
static uint64_t m_nonces[64];		/* the nonces M's claims carried: VERIFY says yes */
static size_t nnonce;
static uint64_t verify_yes;		/* VERIFYs answered yes */
static bool withhold_new;		/* new connections from the victim start withholding */
static struct mfi_addr M_id, X_id;

static struct raw *raws[64];		/* every raw connection, freed at the end */
static size_t nraws;

static struct raw *raw_new(void)
{
	struct mroc_qp_attr a = { .sz = sizeof(a), .sq_depth = 64, .rq_depth = SLOTS };
	struct raw *r = calloc(1, sizeof(*r));

	if (nraws == 64)
		die("too many raw connections");
	raws[nraws++] = r;
	r->qp = mroc_qp_create(raw_ctx, &a);
	r->mr = mroc_mr_alloc(raw_ctx, REGION, MROC_ACCESS_LOCAL_WRITE | MROC_ACCESS_REMOTE_WRITE);
	if (!r->qp || !r->mr)
		die("raw QP: %s", strerror(errno));
	r->base = mroc_mr_addr(r->mr);
	for (uint32_t i = 0; i < SLOTS; i++) {
		struct mroc_recv_wr wr = { .wr_id = i, .sg = { r->base + OFF_RX + (size_t)i * SLOT,
							       SLOT, mroc_mr_lkey(r->mr) } };

		if (mroc_post_recv(r->qp, &wr))
			die("raw post_recv");
	}
	return r;
}

static uint32_t raw_credits(struct raw *r)
{
	uint32_t w = __atomic_load_n((uint32_t *)(r->base + OFF_CREDIT_IN), __ATOMIC_ACQUIRE);
	uint32_t f = (int32_t)(w - r->peer_freed) > 0 ? w : r->peer_freed;

	return SLOTS + f - (uint32_t)r->sends;
}

static void raw_send(struct raw *r, struct mfi_hdr *h, const void *p);

/* As the provider does when it has nothing to send: the freed count into the peer's credit word. */
static void raw_tell(struct raw *r)
{
	struct mfi_hello hello;
	struct mroc_send_wr wr;

	if (r->withhold || r->freed - r->told < SLOTS / 4 || !r->nin ||
	    r->in[0].h.op != MFI_OP_HELLO || r->in[0].h.len < sizeof(hello))
		return;
	memcpy(&hello, r->in[0].p, sizeof(hello));
	__atomic_store_n((uint32_t *)(r->base + 8), r->freed, __ATOMIC_RELEASE);
	wr = (struct mroc_send_wr){ .opcode = MROC_WR_WRITE,
				    .sg = { r->base + 8, sizeof(uint32_t), mroc_mr_lkey(r->mr) },
				    .rkey = le32toh(hello.credit_rkey), .remote_offset = OFF_CREDIT_IN };
	if (mroc_post_send(r->qp, &wr) == 0)
		r->told = r->freed;
}

/* The raw connection's completions: chunks into r->in, VERIFYs answered for M. */
static void raw_poll(struct raw *r)
{
	struct mroc_wc wc[16];
	int n;

	if (r->dead)
		return;
	while ((n = mroc_poll_cq(r->qp, wc, 16)) > 0) {
		for (int i = 0; i < n; i++) {
			uint8_t *slot;
			struct mfi_hdr h = { 0 };

			switch (wc[i].opcode) {
			case MROC_WC_CONNECTED:
				r->up = true;
				r->withhold = withhold_new;
				continue;
			case MROC_WC_SEND:
				r->completed++;
				continue;
			case MROC_WC_RECV:
				break;
			default:
				r->dead = true;
				continue;
			}
			if (wc[i].status != MROC_WC_SUCCESS || wc[i].wr_id >= SLOTS) {
				r->dead = true;
				continue;
			}
			slot = r->base + OFF_RX + wc[i].wr_id * SLOT;
			if (mfi_hdr_decode(slot, wc[i].byte_len, &h) == 0) {
				if ((int32_t)(h.credits - r->peer_freed) > 0)
					r->peer_freed = h.credits;
				if (r->nin == r->capin) {
					r->capin = r->capin ? 2 * r->capin : 64;
					r->in = realloc(r->in, r->capin * sizeof(*r->in));
				}
				r->in[r->nin].h = h;
				r->in[r->nin].p = malloc(h.len + 1);
				memcpy(r->in[r->nin].p, slot + MFI_HDR_LEN, h.len);
				r->nin++;
			}
			{
				struct mroc_recv_wr wr = { .wr_id = wc[i].wr_id,
							   .sg = { slot, SLOT, mroc_mr_lkey(r->mr) } };

				if (mroc_post_recv(r->qp, &wr) == 0)
					r->freed++;
			}
			if (h.op == MFI_OP_VERIFY) {
				struct mfi_hdr a = { .op = MFI_OP_VERIFY_RESP,
						     .flags = MFI_F_FIRST | MFI_F_LAST,
						     .data = h.data };

				for (size_t k = 0; k < nnonce; k++)
					if (m_nonces[k] == h.data)
						a.tag = 1;
				verify_yes += a.tag;
				raw_send(r, &a, NULL);
			}
		}
	}
	if (n < 0)
		r->dead = true;
	raw_tell(r);
}

/* One SEND of a slot: header h (its credits filled in here) and h->len bytes of p. */
static void raw_send(struct raw *r, struct mfi_hdr *h, const void *p)
{
	uint8_t *slot;
	struct mroc_send_wr wr;

	while (!r->dead && (raw_credits(r) == 0 || r->sends - r->completed >= SLOTS)) {
		raw_poll(r);
		check_deadline("credits on a raw connection");
	}
	if (r->dead)
		return;
	slot = r->base + OFF_TX + (r->sends % SLOTS) * SLOT;
	if (!r->withhold)
		r->told = r->freed;
	h->credits = r->told;
	mfi_hdr_encode(h, slot);
	if (h->len)
		memcpy(slot + MFI_HDR_LEN, p, h->len);
	wr = (struct mroc_send_wr){ .opcode = MROC_WR_SEND, .flags = MROC_SEND_SIGNALED,
				    .sg = { slot, MFI_HDR_LEN + h->len, mroc_mr_lkey(r->mr) } };
	if (mroc_post_send(r->qp, &wr))
		die("raw post_send");
	r->sends++;
}

/* Wait until everything posted on r has completed (the victim's daemon has it). */
static void raw_flush(struct raw *r)
{
	while (!r->dead && r->completed < r->sends) {
		raw_poll(r);
		check_deadline("raw sends completing");
	}
}

static void raw_hello(struct raw *r, const struct mfi_addr *claim, uint64_t nonce)
{
	struct mfi_hello hello = {
		.ip = claim->ip, .port = htole16(claim->port),
		.credit_rkey = htole32(mroc_mr_rkey(r->mr)), .nonce = htole64(nonce),
	};
	struct mfi_hdr h = { .op = MFI_OP_HELLO, .flags = MFI_F_FIRST | MFI_F_LAST,
			     .len = sizeof(hello), .total = sizeof(hello) };

	raw_send(r, &h, &hello);
}

static void pump(void);

/* A connection to the victim's endpoint claiming identity claim (M: confirmed when asked). */
static struct raw *raw_dial(const struct mfi_addr *victim, const struct mfi_addr *claim)
{
	struct raw *r = raw_new();
	char ip[INET_ADDRSTRLEN];
	uint64_t nonce, yes = verify_yes;
	time_t until;

	inet_ntop(AF_INET, &victim->ip, ip, sizeof(ip));
	if (mroc_qp_connect(r->qp, ip, SERVICE_BASE | victim->port))
		die("raw connect");
	while (!r->up) {
		raw_poll(r);
		pump();
		if (r->dead)
			die("raw connect refused");
		check_deadline("raw connect");
	}
	if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce))
		die("getrandom");
	if (mfi_addr_eq(claim, &M_id) && nnonce < 64)
		m_nonces[nnonce++] = nonce;
	raw_hello(r, claim, nonce);
	/* A provider that checks claims asks M now; one that does not never will. */
	until = time(NULL) + 3;
	while (mfi_addr_eq(claim, &M_id) && verify_yes == yes && time(NULL) < until) {
		raw_poll(r);
		pump();
	}
	return r;
}

/* Keep a QP listening on M's service; run the connections the victim opened to M. */
static void pump(void)
{
	bool listening = false;

	for (size_t i = 0; i < nlis; i++) {
		raw_poll(lis[i]);
		listening |= !lis[i]->up && !lis[i]->dead;
	}
	if (!listening && nlis < 16) {
		struct raw *r = raw_new();

		if (mroc_qp_listen(r->qp, SERVICE_BASE | M_id.port))
			die("raw listen");
		r->listener = true;
		lis[nlis++] = r;
	}
	if (x_running)
		reap(&X);
}

/*
 * Withhold credits on every connection with the victim (the raw one q and
 * those it opened to M): whichever it sends M's data on runs dry.
 */
static void withhold_all(struct raw *q, bool on)
{
	withhold_new = on;
	q->withhold = on;
	for (size_t i = 0; i < nlis; i++)
		lis[i]->withhold = on;
}

/* The connection on which the victim's chunks of op show up first (after index from[]). */
static struct raw *wait_op(struct raw *q, uint8_t op, size_t *from, const char *what)
{
	for (;;) {
		struct raw *all_[17] = { q };
		size_t n = 1;

		for (size_t i = 0; i < nlis; i++)
			all_[n++] = lis[i];
		raw_poll(q);
		pump();
		for (size_t k = 0; k < n; k++)
			for (size_t i = from ? from[k] : 0; i < all_[k]->nin; i++)
				if (all_[k]->in[i].h.op == op && (all_[k]->in[i].h.flags & MFI_F_FIRST))
					return all_[k];
		check_deadline(what);
	}
}

static void mark_all(struct raw *q, size_t *from)
{
	from[0] = q->nin;
	for (size_t i = 0; i < 16; i++)
		from[i + 1] = i < nlis ? lis[i]->nin : 0;
}

static void raw_marker(struct raw *r, uint64_t n)
{
	uint64_t v = n;
	struct mfi_hdr h = { .op = MFI_OP_TAGGED, .flags = MFI_F_FIRST | MFI_F_LAST,
			     .len = 8, .total = 8, .tag = MARK | n };

	raw_send(r, &h, &v);
}

/* ---- victim ----------------------------------------------------------------------- */

#define GUARD	(64 * 1024)
static uint8_t *vsrc, *gbuf;		/* gbuf: GUARD | 4 MiB registered | GUARD */
static struct fid_mr *vmr;
static fi_addr_t AX, AM;		/* X and M in the victim's AV */
static uint64_t xkey, xaddr;
static struct fi_mroc_counters c0;

static void v_idle(void)
{
	reap(&V);
}

static void v_marker_post(uint64_t n, uint64_t *buf)
{
	POST(&V, fi_trecv(V.ep, buf, 8, NULL, FI_ADDR_UNSPEC, MARK | n, 0, (void *)(uintptr_t)(MARK | n)));
}

static void v_marker_wait(uint64_t n)
{
	wait_done(&V, (void *)(uintptr_t)(MARK | n), "a marker");
}

static void v_send_name(void)
{
	say("NAME %u %u", V.name.sin_addr.s_addr, ntohs(V.name.sin_port));
}

static void v_s15(void)
{
	static uint64_t mk;
	static int ctx;
	struct fi_mroc_counters c;

	fill(vsrc, 256 * 1024, 15);
	v_marker_post(15, &mk);
	POST(&V, fi_write(V.ep, vsrc, 256 * 1024, NULL, AX, xaddr, xkey, &ctx));
	say("posted");
	expect("sent");
	v_marker_wait(15);
	if (find_done(&ctx))
		die("15: the write to X completed on a forged answer (X has not run)");
	if (!is_pat(vsrc, 256 * 1024, 15, 0))
		die("15: a forged READ_RESP wrote into the write's source buffer");
	c = counters(&V);
	if (V.ops && c.answer_refused < 12)
		die("15: %" PRIu64 " forged answers counted, 12 sent", c.answer_refused);
	note("15: 12 forged answers to a write to X refused (counter %" PRIu64 "), source intact",
	     c.answer_refused);
	say("go");
	if (wait_done(&V, &ctx, "15: the write's real answer")->err)
		die("15: the write to X failed");
	if (count_done(&ctx) != 1)
		die("15: the write completed %d times", count_done(&ctx));
	say("done");
	expect("ok");
	note("15: the write completed once, at X's answer; X's buffer holds it");
}

static void v_s16(void)
{
	static uint64_t mk, mk2;
	static int ctx;
	const size_t len = 3 * 1024 * 1024;

	fill(vsrc, len, 16);
	v_marker_post(16, &mk);
	v_marker_post(160, &mk2);
	expect("withholding");
	POST(&V, fi_write(V.ep, vsrc, len, NULL, AM, 0, 0x77, &ctx));
	say("posted");
	expect("sent");
	v_marker_wait(16);
	if (find_done(&ctx))
		die("16: a write still being sent completed on an early answer");
	note("16: an RMA_ACK for a write not yet sent whole refused (counter %" PRIu64 ")",
	     counters(&V).answer_refused);
	say("ok");
	expect("acked");
	v_marker_wait(160);
	if (wait_done(&V, &ctx, "16: the write's answer")->err)
		die("16: the write failed");
	for (int i = 0; i < 50; i++)
		reap(&V);
	if (count_done(&ctx) != 1)
		die("16: the write completed %d times", count_done(&ctx));
	say("done");
	note("16: the 3 MiB write landed whole (checked by the peer) and completed once");
}

static void v_s19(void)
{
	static uint64_t mk;
	const size_t len = 256 * 1024, rlen = 4 * 1024 * 1024;
	uint8_t *b = malloc(len), *b3 = malloc(rlen);
	struct fid_mr *mr, *mr3;
	struct fi_mroc_counters c;

	memset(b, 0x11, len);
	CHECK(fi_mr_reg(V.domain, b, len, FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
	v_marker_post(19, &mk);
	say("K19 %" PRIu64 " %" PRIu64, fi_mr_key(mr), (uint64_t)(uintptr_t)b);
	expect("first");
	while (!all(b, CHUNK, 0x22)) {
		reap(&V);
		check_deadline("19: the write's first chunk");
	}
	CHECK(fi_close(&mr->fid));
	memset(b, 0x33, len);
	say("closed");
	expect("sent");
	v_marker_wait(19);
	if (!all(b, len, 0x33))
		die("19: a remote write went on into a region closed midway");
	expect("ack");
	c = counters(&V);
	note("19: the rest of a write to a closed region not written (mr_gone %" PRIu64 ")",
	     c.mr_gone);

	memset(b3, 0x44, rlen);
	CHECK(fi_mr_reg(V.domain, b3, rlen, FI_REMOTE_READ, 0, 0, 0, &mr3, NULL));
	say("K19r %" PRIu64 " %" PRIu64, fi_mr_key(mr3), (uint64_t)(uintptr_t)b3);
	expect("some");
	CHECK(fi_close(&mr3->fid));
	memset(b3, 0xEE, rlen);	/* what the application keeps there now is not the peer's */
	say("closed");
	expect("ok");
	note("19: a read of a region closed midway ended with ABORT, nothing read after (mr_gone %"
	     PRIu64 ")", counters(&V).mr_gone);
	free(b);
	free(b3);
}

static void v_s18(void)
{
	static uint64_t mk;
	static int peek, disc;
	struct mallinfo2 m0, m1;

	v_marker_post(18, &mk);
	for (int i = 0; i < 100; i++)
		reap(&V);
	m0 = mallinfo2();
	say("ready");
	expect("first");
	/* Until the message shows in the unexpected queue. */
	for (;;) {
		struct fi_msg_tagged m = { .tag = T18, .context = &peek, .addr = FI_ADDR_UNSPEC };
		struct done *d;

		POST(&V, fi_trecvmsg(V.ep, &m, FI_PEEK));
		d = wait_done(&V, &peek, "18: peek");
		if (!d->err)
			break;
		d->ctx = NULL;
		check_deadline("18: the message's first chunk");
	}
	{
		struct fi_msg_tagged m = { .tag = T18, .context = &disc, .addr = FI_ADDR_UNSPEC };

		POST(&V, fi_trecvmsg(V.ep, &m, FI_PEEK | FI_CLAIM | FI_DISCARD));
		if (wait_done(&V, &disc, "18: discard")->err)
			die("18: FI_PEEK|FI_CLAIM|FI_DISCARD found nothing");
	}
	say("discarded");
	expect("sent");
	v_marker_wait(18);
	m1 = mallinfo2();
	if (m1.hblkhd > m0.hblkhd + 1024 * 1024)
		die("18: %zu bytes of large blocks more than before an 8 MiB message was discarded",
		    m1.hblkhd - m0.hblkhd);
	for (size_t i = 0; i < ndone; i++)
		if (dones[i].tag == T18 && dones[i].ctx != &peek && dones[i].ctx != &disc)
			die("18: the discarded message was delivered");
	note("18: an 8 MiB message discarded while arriving: its buffer freed (large blocks %zd -> %zd)",
	     (ssize_t)m0.hblkhd, (ssize_t)m1.hblkhd);
}

/* fi_close with work outstanding: each of it ends FI_ECANCELED, then a new endpoint. */
static void v_s17a(void)
{
	static int s[5], r[2];
	static uint8_t rb[2][4096];
	const size_t len = 1024 * 1024;

	fill(vsrc, 4 * len, 17);
	expect("withholding");
	for (int i = 0; i < 3; i++)
		POST(&V, fi_tsend(V.ep, vsrc + i * len, len, NULL, AM, 0x17, &s[i]));
	POST(&V, fi_write(V.ep, vsrc + 3 * len, len, NULL, AM, 0, 0x77, &s[3]));
	POST(&V, fi_read(V.ep, gbuf + GUARD, 4096, NULL, AM, 0, 0x77, &s[4]));
	for (int i = 0; i < 2; i++)
		POST(&V, fi_trecv(V.ep, rb[i], sizeof(rb[i]), NULL, FI_ADDR_UNSPEC, 0x99, 0, &r[i]));
	say("posted");
	expect("stalled");
	CHECK(fi_close(&V.ep->fid));
	V.ep = NULL;
	reap(&V);
	/* The first sends may have gone out whole before the credits ran out; the rest cannot. */
	for (int i = 0; i < 5; i++) {
		struct done *d = find_done(&s[i]);

		if (!d || count_done(&s[i]) != 1 || (d->err != FI_ECANCELED && (i >= 2 || d->err)))
			die("17: operation %d after fi_close: %s (%d completions)", i,
			    d ? fi_strerror(d->err) : "no completion", count_done(&s[i]));
	}
	for (int i = 0; i < 2; i++) {
		struct done *d = find_done(&r[i]);

		if (!d || d->err != FI_ECANCELED)
			die("17: receive %d after fi_close: %s", i,
			    d ? fi_strerror(d->err) : "no completion");
	}
	note("17: fi_close with 3 sends, a write, a read and 2 receives outstanding: each completed "
	     "once, the unsent ones FI_ECANCELED");
	ep_open(&V);
	v_send_name();
}

static void v_s20(void)
{
	static uint8_t got[64], mine[64] = "for X only";
	static int rc20, sctx;
	struct fi_mroc_counters c;

	POST(&V, fi_trecv(V.ep, got, sizeof(got), NULL, AX, T20, 0, &rc20));
	say("ready");
	expect("forged");
	/* The forger's HELLO and message are in; a provider that trusts HELLO has taken them. */
	for (time_t until = time(NULL) + 3; time(NULL) < until;) {
		reap(&V);
		c = counters(&V);
		if (find_done(&rc20) || (V.ops && c.hello_refused))
			break;
	}
	if (find_done(&rc20) && !strcmp((char *)got, "forged"))
		die("20: a message from a connection claiming to be X matched a receive directed at X");
	POST(&V, fi_tsend(V.ep, mine, sizeof(mine), NULL, AX, T20B, &sctx));
	wait_done(&V, &sctx, "20: the send to X");
	say("sent");
	expect("genuine");
	if (wait_done(&V, &rc20, "20: X's message")->err || strcmp((char *)got, "genuine"))
		die("20: the receive directed at X got \"%.16s\"", got);
	expect("ok");
	c = counters(&V);
	if (V.ops && c.hello_refused < 1)
		die("20: the false claim was not counted");
	note("20: a connection claiming to be X refused (hello_refused %" PRIu64 "): the message to X "
	     "reached X only, the receive from X got X's", c.hello_refused);
}

static void v_fuzz(void)
{
	static uint8_t rb[32][4096], rdbuf[GUARD * 3];
	static int rctx[32], rd;
	uint8_t *reg = gbuf + GUARD;
	struct fi_mroc_counters c;

	memset(gbuf, 0xAB, GUARD);
	memset(reg + 4 * 1024 * 1024, 0xAB, GUARD);
	fill(vsrc, 1024 * 1024, 99);
	memset(rdbuf, 0xCD, sizeof(rdbuf));
	for (int i = 0; i < 32; i++) {
		memset(rb[i], 0, sizeof(rb[i]));
		if (i % 2)
			POST(&V, fi_recv(V.ep, rb[i], sizeof(rb[i]) / 2, NULL, FI_ADDR_UNSPEC, &rctx[i]));
		else
			POST(&V, fi_trecv(V.ep, rb[i], sizeof(rb[i]) / 2, NULL, FI_ADDR_UNSPEC, 0, 0,
					  &rctx[i]));
	}
	/* A read from X outstanding while forged answers fly (X is not running). */
	POST(&V, fi_read(V.ep, rdbuf + GUARD, GUARD, NULL, AX, xaddr + 1024 * 1024, xkey, &rd));
	{
		static uint64_t mk;

		v_marker_post(0xFF, &mk);
		say("KV %" PRIu64 " %" PRIu64, fi_mr_key(vmr), (uint64_t)(uintptr_t)reg);
		say("ready");
		v_marker_wait(0xFF);
	}
	if (!all(gbuf, GUARD, 0xAB) || !all(reg + 4 * 1024 * 1024, GUARD, 0xAB))
		die("fuzz: bytes outside the registered region changed");
	for (int i = 0; i < 32; i++)
		if (!all(rb[i] + sizeof(rb[i]) / 2, sizeof(rb[i]) / 2, 0))
			die("fuzz: a receive's buffer written past its length");
	if (!all(rdbuf, GUARD, 0xCD) || !all(rdbuf + 2 * GUARD, GUARD, 0xCD))
		die("fuzz: bytes around a read's buffer changed");
	if (find_done(&rd))
		die("fuzz: the read from X completed on a forged answer");
	c = counters(&V);
	note("fuzz: survived; chunks %" PRIu64 ", bad %" PRIu64 ", answers refused %" PRIu64
	     ", mr_gone %" PRIu64 ", verified %" PRIu64 ", hello refused %" PRIu64,
	     c.rx_chunks, c.bad_msgs, c.answer_refused, c.mr_gone, c.verified, c.hello_refused);
	say("go");
	if (wait_done(&V, &rd, "fuzz: the read from X")->err)
		die("fuzz: the read from X failed");
	if (!is_pat(rdbuf + GUARD, GUARD, 15, 0))
		die("fuzz: the read from X brought the wrong bytes");
	/* A verified round trip with X. */
	{
		static int s, r;
		static uint8_t back[1024 * 1024];

		POST(&V, fi_trecv(V.ep, back, sizeof(back), NULL, AX, 0xEC0, 0, &r));
		POST(&V, fi_tsend(V.ep, vsrc, 1024 * 1024, NULL, AX, 0xEC0, &s));
		say("echo");
		if (wait_done(&V, &r, "fuzz: X's echo")->err || !is_pat(back, sizeof(back), 99, 0))
			die("fuzz: X's echo is not what was sent");
		wait_done(&V, &s, "fuzz: the send to X");
	}
	expect("ok");
	note("fuzz: afterwards a 1 MiB round trip with X verified, the read from X verified");
}

static void v_s17b(void)
{
	static uint8_t b[1024 * 1024];
	static int r;
	struct done *d;

	memset(b, 0, sizeof(b));
	POST(&V, fi_trecv(V.ep, b, sizeof(b), NULL, FI_ADDR_UNSPEC, T17, 0, &r));
	say("ready");
	expect("first");
	while (!all(b, 1000, 0x5C)) {
		reap(&V);
		check_deadline("17: the first chunk");
	}
	CHECK(fi_close(&V.ep->fid));
	V.ep = NULL;
	reap(&V);
	d = find_done(&r);
	if (!d || d->err != FI_ECANCELED)
		die("17: a receive half filled when its endpoint closed: %s",
		    d ? fi_strerror(d->err) : "no completion");
	note("17: fi_close with a message half received into a posted receive: FI_ECANCELED");
	say("done");
}

static int victim(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in xs, ms;
	char *l;

	role = "victim";
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&sin, sizeof(sin)) || listen(ls, 1))
		die("control port: %s", strerror(errno));
	fab_open(&V);
	vsrc = malloc(4 * 1024 * 1024);
	gbuf = malloc(4 * 1024 * 1024 + 2 * GUARD);
	CHECK(fi_mr_reg(V.domain, gbuf + GUARD, 4 * 1024 * 1024, FI_REMOTE_READ | FI_REMOTE_WRITE,
			0, 0, 0, &vmr, NULL));
	ctl = accept(ls, NULL, NULL);
	if (ctl < 0)
		die("accept: %s", strerror(errno));
	deadline = time(NULL) + TIMEOUT_S;
	idle_fn = v_idle;
	v_send_name();
	l = hear();
	{
		unsigned xip, xport, mip, mport;

		if (sscanf(l, "PEERS %u %u %" SCNu64 " %" SCNu64 " %u %u", &xip, &xport, &xkey, &xaddr,
			   &mip, &mport) != 6)
			die("bad PEERS line: %s", l);
		xs = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = xip,
					   .sin_port = htons(xport) };
		ms = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = mip,
					   .sin_port = htons(mport) };
	}
	if (fi_av_insert(V.av, &xs, 1, &AX, 0, NULL) != 1 || fi_av_insert(V.av, &ms, 1, &AM, 0, NULL) != 1)
		die("fi_av_insert");
	c0 = counters(&V);
	if (!V.ops)
		note("the provider has no counters (%s): those checks skipped", FI_MROC_OPS_1);
	while (strcmp((l = hear()), "END")) {
		if (!strcmp(l, "S15"))
			v_s15();
		else if (!strcmp(l, "S16"))
			v_s16();
		else if (!strcmp(l, "S19"))
			v_s19();
		else if (!strcmp(l, "S18"))
			v_s18();
		else if (!strcmp(l, "S17a"))
			v_s17a();
		else if (!strcmp(l, "S20"))
			v_s20();
		else if (!strcmp(l, "FUZZ"))
			v_fuzz();
		else if (!strcmp(l, "S17b"))
			v_s17b();
		else
			die("unknown scenario %s", l);
		deadline = time(NULL) + TIMEOUT_S;
	}
	note("all scenarios held");
	return 0;
}

/* ---- attacker ----------------------------------------------------------------------- */

static struct mfi_addr VA;		/* the victim endpoint's name (changes with 17) */
static uint8_t *xbuf;
static struct fid_mr *xmr;

static void a_idle(void)
{
	pump();
}

static void a_name(void)
{
	unsigned ip, port;

	if (sscanf(hear(), "NAME %u %u", &ip, &port) != 2)
		die("bad NAME line");
	VA = (struct mfi_addr){ .ip = ip, .port = (uint16_t)port };
}

static void hdr_send(struct raw *r, uint8_t op, uint8_t flags, uint32_t len, uint64_t total,
		     uint64_t tag, uint64_t key, uint64_t addr, uint32_t req, uint64_t data,
		     const void *p)
{
	struct mfi_hdr h = { .op = op, .flags = flags, .len = len, .total = total, .tag = tag,
			     .key = key, .addr = addr, .req_id = req, .data = data };

	raw_send(r, &h, p);
}

static void a_s15(struct raw *q)
{
	static uint8_t junk[64];

	memset(junk, 0xEE, sizeof(junk));
	expect("posted");
	for (uint32_t id = 1; id <= 4; id++) {
		hdr_send(q, MFI_OP_READ_RESP, MFI_F_FIRST | MFI_F_LAST, 64, 64, 0, 0, 0, id, 0, junk);
		hdr_send(q, MFI_OP_RMA_ACK, MFI_F_FIRST | MFI_F_LAST, 0, 0, 0, 0, 0, id, 0, NULL);
		hdr_send(q, MFI_OP_ATOMIC_RESP, MFI_F_FIRST | MFI_F_LAST, 8, 8, 0, 0, 0, id, 0, junk);
	}
	raw_marker(q, 15);
	raw_flush(q);
	say("sent");
	expect("go");
	x_running = true;
	expect("done");
	if (!is_pat(xbuf, 256 * 1024, 15, 0))
		die("15: X's buffer does not hold the write");
	say("ok");
	x_running = false;
}

/* The chunks of the WRITE (or READ_RESP) with req_id req received on r, into out; count them. */
static size_t assemble(struct raw *r, uint8_t op, uint32_t req, uint8_t *out, uint64_t *got,
		       bool *last, bool *abort_)
{
	size_t n = 0;
	bool in = false;

	*got = 0;
	*last = *abort_ = false;
	for (size_t i = 0; i < r->nin; i++) {
		struct mfi_hdr *h = &r->in[i].h;

		if (h->flags & MFI_F_FIRST)
			in = h->op == op && h->req_id == req;
		if (!in)
			continue;
		if (out)
			memcpy(out + *got, r->in[i].p, h->len);
		*got += h->len;
		n++;
		if (h->flags & MFI_F_LAST) {
			*last = true;
			*abort_ = h->flags & MFI_F_ABORT;
			in = false;
		}
	}
	return n;
}

static void a_s16(struct raw *q)
{
	const size_t len = 3 * 1024 * 1024;
	uint8_t *got = malloc(len);
	uint32_t req = 0;
	uint64_t bytes;
	size_t from[17];
	struct raw *l;
	bool last, ab;

	withhold_all(q, true);
	mark_all(q, from);
	say("withholding");
	expect("posted");
	/* Its first chunk names the write (on whichever connection the victim sends to M). */
	l = wait_op(q, MFI_OP_WRITE, from, "16: the write's first chunk");
	for (size_t i = 0; i < l->nin; i++)
		if (l->in[i].h.op == MFI_OP_WRITE && (l->in[i].h.flags & MFI_F_FIRST))
			req = l->in[i].h.req_id;
	hdr_send(l, MFI_OP_RMA_ACK, MFI_F_FIRST | MFI_F_LAST, 0, 0, 0, 0, 0, req, 0, NULL);
	raw_marker(l, 16);
	raw_flush(l);
	say("sent");
	expect("ok");
	withhold_all(q, false);
	raw_marker(l, 160);	/* tells the freed slots: the rest of the write comes */
	do {
		pump();
		assemble(l, MFI_OP_WRITE, req, NULL, &bytes, &last, &ab);
		if (time(NULL) > deadline)
			die("16: the rest of the write: %" PRIu64 " bytes in %zu chunks, credits %u, "
			    "freed %u told %u", bytes, l->nin, raw_credits(l), l->freed, l->told);
	} while (!last);
	assemble(l, MFI_OP_WRITE, req, got, &bytes, &last, &ab);
	if (bytes != len || !is_pat(got, len, 16, 0))
		die("16: the write arrived as %" PRIu64 " bytes, not the 3 MiB sent", bytes);
	hdr_send(l, MFI_OP_RMA_ACK, MFI_F_FIRST | MFI_F_LAST, 0, 0, 0, 0, 0, req, 0, NULL);
	raw_flush(l);
	say("acked");
	expect("done");
	free(got);
}

static void a_s19(struct raw *q)
{
	static uint8_t p[CHUNK];
	uint64_t key, addr, bytes;
	uint8_t *got = malloc(4 * 1024 * 1024 + CHUNK);
	size_t before;
	bool last, ab;

	if (sscanf(hear(), "K19 %" SCNu64 " %" SCNu64, &key, &addr) != 2)
		die("bad K19");
	memset(p, 0x22, sizeof(p));
	hdr_send(q, MFI_OP_WRITE, MFI_F_FIRST, CHUNK, 2 * CHUNK, 0, key, addr, 0x1919, 0, p);
	raw_flush(q);
	say("first");
	expect("closed");
	hdr_send(q, MFI_OP_WRITE, MFI_F_LAST, CHUNK, 2 * CHUNK, 0, key, addr, 0x1919, 0, p);
	raw_marker(q, 19);
	raw_flush(q);
	say("sent");
	for (;;) {
		size_t i;

		pump();
		raw_poll(q);
		for (i = 0; i < q->nin; i++)
			if (q->in[i].h.op == MFI_OP_RMA_ACK && q->in[i].h.req_id == 0x1919)
				break;
		if (i < q->nin) {
			if (q->in[i].h.total != FI_EACCES)
				die("19: the write to a region closed midway was answered %" PRIu64,
				    q->in[i].h.total);
			break;
		}
		check_deadline("19: the write's answer");
	}
	say("ack");

	if (sscanf(hear(), "K19r %" SCNu64 " %" SCNu64, &key, &addr) != 2)
		die("bad K19r");
	q->withhold = true;
	hdr_send(q, MFI_OP_READ_REQ, MFI_F_FIRST | MFI_F_LAST, 0, 4 * 1024 * 1024, 0, key, addr,
		 0x1920, 0, NULL);
	do {
		raw_poll(q);
		pump();
		before = assemble(q, MFI_OP_READ_RESP, 0x1920, NULL, &bytes, &last, &ab);
		check_deadline("19: the read's first chunks");
	} while (before == 0);
	say("some");
	expect("closed");
	q->withhold = false;
	raw_marker(q, 190);	/* tells the freed slots */
	do {
		raw_poll(q);
		pump();
		assemble(q, MFI_OP_READ_RESP, 0x1920, NULL, &bytes, &last, &ab);
		check_deadline("19: the read's end");
	} while (!last);
	assemble(q, MFI_OP_READ_RESP, 0x1920, got, &bytes, &last, &ab);
	for (uint64_t i = 0; i < bytes; i++)
		if (got[i] != 0x44)
			die("19: byte %" PRIu64 " of a read is 0x%02x: read after its region was closed",
			    i, got[i]);
	if (!ab)
		die("19: the read of a region closed midway did not end with ABORT");
	note("19: read of 4 MiB, region closed after some chunks: %" PRIu64 " bytes, then ABORT",
	     bytes);
	say("ok");
	free(got);
}

static void a_s18(struct raw *q)
{
	static uint8_t p[CHUNK];
	const uint64_t total = 8 * 1024 * 1024;
	uint64_t off;

	memset(p, 0x18, sizeof(p));
	expect("ready");
	hdr_send(q, MFI_OP_TAGGED, MFI_F_FIRST, CHUNK, total, T18, 0, 0, 0, 0, p);
	raw_flush(q);
	say("first");
	expect("discarded");
	for (off = CHUNK; off < total; off += CHUNK) {
		uint32_t l = total - off < CHUNK ? (uint32_t)(total - off) : CHUNK;

		hdr_send(q, MFI_OP_TAGGED, off + l == total ? MFI_F_LAST : 0, l, total, T18, 0, 0, 0,
			 0, p);
		pump();
	}
	raw_marker(q, 18);
	raw_flush(q);
	say("sent");
}

static void a_s17a(struct raw *q)
{
	size_t from[17];
	struct raw *l;
	size_t n0 = 0;

	withhold_all(q, true);
	mark_all(q, from);
	say("withholding");
	expect("posted");
	/* Until the victim has sent a good part of what its credits allow. */
	l = wait_op(q, MFI_OP_TAGGED, from, "17: the victim's sends");
	for (size_t i = 0; i < nlis; i++)
		if (lis[i] == l)
			n0 = from[i + 1];
	if (l == q)
		n0 = from[0];
	while (l->nin - n0 < SLOTS / 2) {
		raw_poll(q);
		pump();
		check_deadline("17: the victim's sends");
	}
	say("stalled");
	a_name();
	withhold_all(q, false);
}

static void a_s20(void)
{
	struct raw *f;
	static char forged[64] = "forged";
	bool leak = false;
	static char gen[64] = "genuine";
	static char got[64];
	static int xs, xr;

	x_running = true;
	POST(&X, fi_trecv(X.ep, got, sizeof(got), NULL, FI_ADDR_UNSPEC, T20B, 0, &xr));
	expect("ready");
	f = raw_dial(&VA, &X_id);
	hdr_send(f, MFI_OP_TAGGED, MFI_F_FIRST | MFI_F_LAST, sizeof(forged), sizeof(forged), T20, 0,
		 0, 0, 0, forged);
	raw_flush(f);
	say("forged");
	expect("sent");
	wait_done(&X, &xr, "20: the victim's message at X");
	if (strcmp(got, "for X only"))
		die("20: X got \"%.16s\"", got);
	for (int i = 0; i < 100; i++) {
		raw_poll(f);
		pump();
	}
	for (size_t i = 0; i < f->nin; i++)
		if (f->in[i].h.op == MFI_OP_TAGGED || f->in[i].h.op == MFI_OP_MSG)
			leak = true;
	if (leak)
		die("20: the victim's message to X went to the connection claiming to be X");
	{
		struct sockaddr_in vs = { .sin_family = AF_INET, .sin_addr.s_addr = VA.ip,
					  .sin_port = htons(VA.port) };
		fi_addr_t av;

		if (fi_av_insert(X.av, &vs, 1, &av, 0, NULL) != 1)
			die("fi_av_insert");
		POST(&X, fi_tsend(X.ep, gen, sizeof(gen), NULL, av, T20, &xs));
		wait_done(&X, &xs, "20: X's send");
	}
	say("genuine");
	say("ok");
	x_running = false;
	note("20: the victim's message reached X, not the forger");
}

static void a_fuzz(struct raw *q, long nchunks)
{
	static uint8_t p[CHUNK];
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
	uint64_t vkey, vaddr;

	if (sscanf(hear(), "KV %" SCNu64 " %" SCNu64, &vkey, &vaddr) != 2)
		die("bad KV");
	expect("ready");
	for (long i = 0; i < nchunks; i++) {
		uint64_t r[8];
		struct mfi_hdr h;

		for (int k = 0; k < 8; k++) {
			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			r[k] = seed;
		}
		h = (struct mfi_hdr){
			.op = (uint8_t)(r[0] % 2 ? 1 + r[0] % (MFI_OP_MAX + 1) : r[0] >> 8),
			.flags = (uint8_t)(r[1] & 0xf),
			.len = (uint32_t)(r[2] % 3 == 0 ? r[2] % CHUNK : r[2] % 256),
			.total = r[3] % 8 == 0 ? r[3] : r[3] % (256 * 1024),
			.tag = r[4] % 3 == 0 ? 0 : r[4] & ~MARK,
			.key = r[5] % 2 ? vkey : r[5] % 8,
			.addr = r[5] % 2 ? vaddr + r[6] % (5 * 1024 * 1024) - 1024 * 1024 : r[6],
			.req_id = (uint32_t)(r[7] % 16),
			.data = r[7] >> 8,
		};
		if (h.op == MFI_OP_ATOMIC)	/* sometimes a well-formed one */
			h.tag = (uint64_t)(r[4] % 10) | (uint64_t)(r[4] >> 8 & 3) << 8 |
				(uint64_t)(r[4] >> 16 & 1) << 16 | (r[4] >> 32) % 4 << 32;
		memset(p, (int)(r[6] & 0xff), h.len);
		raw_send(q, &h, p);
		if (i % 64 == 0)
			pump();
	}
	raw_marker(q, 0xFF);
	raw_flush(q);
	expect("go");
	x_running = true;
	expect("echo");
	{
		static uint8_t b[1024 * 1024];
		static int r, s;
		struct sockaddr_in vs = { .sin_family = AF_INET, .sin_addr.s_addr = VA.ip,
					  .sin_port = htons(VA.port) };
		fi_addr_t av;

		POST(&X, fi_trecv(X.ep, b, sizeof(b), NULL, FI_ADDR_UNSPEC, 0xEC0, 0, &r));
		wait_done(&X, &r, "fuzz: the victim's message at X");
		if (fi_av_insert(X.av, &vs, 1, &av, 0, NULL) != 1)
			die("fi_av_insert");
		POST(&X, fi_tsend(X.ep, b, sizeof(b), NULL, av, 0xEC0, &s));
		wait_done(&X, &s, "fuzz: X's echo");
	}
	say("ok");
	note("fuzz: %ld chunks of random headers and payloads sent (%" PRIu64 " SENDs posted, "
	     "connection %s)", nchunks, q->sends, q->dead ? "closed by the victim" : "open");
}

static void a_s17b(struct raw *q)
{
	static uint8_t p[CHUNK];

	memset(p, 0x5C, sizeof(p));
	expect("ready");
	hdr_send(q, MFI_OP_TAGGED, MFI_F_FIRST, CHUNK, 1024 * 1024, T17, 0, 0, 0, 0, p);
	raw_flush(q);
	say("first");
	expect("done");
}

/* FI_HOSTILE_ONLY=S16,S20 runs those scenarios alone (each can show today's defect by itself). */
static bool want(const char *name)
{
	const char *only = getenv("FI_HOSTILE_ONLY");
	char buf[256], key[32];

	if (!only)
		return true;
	snprintf(buf, sizeof(buf), ",%s,", only);
	snprintf(key, sizeof(key), ",%s,", name);
	return strstr(buf, key) != NULL;
}

static int attacker(const char *vip, int port, const char *own, long fuzz)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct mroc_ctx_opts o = { .sz = sizeof(o) };
	uint16_t mport;
	struct raw *q;

	role = "attacker";
	deadline = time(NULL) + TIMEOUT_S;
	inet_pton(AF_INET, vip, &sin.sin_addr);
	fab_open(&X);
	xbuf = calloc(1, 4 * 1024 * 1024);
	fill(xbuf + 1024 * 1024, 64 * 1024, 15);	/* what the fuzz scenario reads */
	CHECK(fi_mr_reg(X.domain, xbuf, 4 * 1024 * 1024, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0,
			&xmr, NULL));
	raw_ctx = mroc_open(&o);
	if (!raw_ctx)
		die("mroc_open: %s", strerror(errno));
	X_id = (struct mfi_addr){ .ip = X.name.sin_addr.s_addr, .port = ntohs(X.name.sin_port) };
	mport = (uint16_t)(X_id.port ^ 0x5555);
	inet_pton(AF_INET, own, &M_id.ip);
	M_id.port = mport;
	for (int i = 0;; i++) {
		ctl = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(ctl, (struct sockaddr *)&sin, sizeof(sin)) == 0)
			break;
		close(ctl);
		if (i > 600)
			die("no victim at %s:%d", vip, port);
		usleep(100 * 1000);
	}
	idle_fn = a_idle;
	a_name();
	say("PEERS %u %u %" PRIu64 " %" PRIu64 " %u %u", X_id.ip, X_id.port, fi_mr_key(xmr),
	    (uint64_t)(uintptr_t)xbuf, M_id.ip, M_id.port);
	pump();

	q = raw_dial(&VA, &M_id);
	if (want("S15"))
		say("S15"), a_s15(q);
	if (want("S16"))
		say("S16"), a_s16(q);
	if (want("S19"))
		say("S19"), a_s19(q);
	if (want("S18"))
		say("S18"), a_s18(q);
	if (want("S17a")) {
		say("S17a"), a_s17a(q);
		q = raw_dial(&VA, &M_id);
	}
	if (want("S20"))
		say("S20"), a_s20();
	if (want("FUZZ")) {
		q = raw_dial(&VA, &M_id);
		say("FUZZ"), a_fuzz(q, fuzz);
	}
	if (want("S17b"))
		say("S17b"), a_s17b(q);
	say("END");
	for (size_t i = 0; i < nraws; i++) {
		for (size_t k = 0; k < raws[i]->nin; k++)
			free(raws[i]->in[k].p);
		free(raws[i]->in);
		mroc_qp_destroy(raws[i]->qp);
		mroc_mr_dereg(raws[i]->mr);
		free(raws[i]);
	}
	mroc_close(raw_ctx);
	note("done");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "victim"))
		return victim(atoi(argv[2]));
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "attacker"))
		return attacker(argv[2], atoi(argv[3]), argv[4], argc == 6 ? atol(argv[5]) : 3000);
	fprintf(stderr, "usage: fi_hostile victim CTLPORT\n"
			"       fi_hostile attacker VICTIM_IP CTLPORT OWN_IP [FUZZ_CHUNKS]\n");
	return 2;
}
