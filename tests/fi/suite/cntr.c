// SPDX-License-Identifier: MIT
/*
 * fi_suite: counters (fi_cntr): their unit checks, and each kind counted exactly between
 * two daemons (cntr).
 */
#include "suite.h"

/* ---- counters (fi_cntr) --------------------------------------------------------------- */

/* Counters on their own: attributes, values, waits, FI_GETWAIT, fi_trywait. */
void unit_cntr_values(struct fab *f)
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
void unit_cntr_bind(struct fab *f)
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

void t_cntr(void)
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
