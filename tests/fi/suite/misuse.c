// SPDX-License-Identifier: MIT
/*
 * misuse: what an application that calls the provider wrongly gets (one daemon, the
 * endpoint sending to its own name): the documented error code, never a crash, a
 * hang or a use of memory it freed.  Objects closed while others use them, NULL
 * buffers, addresses not (or no longer) in the AV, a CQ read of no entries, and two
 * threads running progress at once on an FI_THREAD_SAFE domain.
 */
#include "suite.h"

/* f's endpoint's own name in its AV: the self address every check sends to. */
static fi_addr_t self_addr(struct fab *f)
{
	uint8_t name[128];
	size_t l = sizeof(name);
	fi_addr_t a;

	CHECK(fi_getname(&f->ep->fid, name, &l));
	if (fi_av_insert(f->av, name, 1, &a, 0, NULL) != 1)
		die("fi_av_insert of our own name");
	return a;
}

/* An AV, an EQ or a CQ an endpoint is bound to cannot close under it: -FI_EBUSY. */
static void closing_bound(struct fab *f)
{
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_NONE };
	struct fid_eq *eq;

	EXPECT_ERR(fi_close(&f->av->fid), -FI_EBUSY);
	EXPECT_ERR(fi_close(&f->cq->fid), -FI_EBUSY);
	EXPECT_ERR(fi_close(&f->domain->fid), -FI_EBUSY);
	EXPECT_ERR(fi_close(&f->fabric->fid), -FI_EBUSY);
	CHECK(fi_eq_open(f->fabric, &eqa, &eq, NULL));
	CHECK(fi_ep_bind(f->ep, &eq->fid, 0));
	EXPECT_ERR(fi_close(&eq->fid), -FI_EBUSY);
	/* An EQ read into too small a buffer, or of an error that is not there. */
	{
		struct fi_eq_entry w = { .fid = &f->ep->fid, .data = 42 }, r;
		struct fi_eq_err_entry ee = { 0 };
		uint32_t ev;

		EXPECT_ERR(fi_eq_readerr(eq, &ee, 0), -FI_EAGAIN);
		CHECK(fi_eq_write(eq, FI_NOTIFY, &w, sizeof(w), 0) == sizeof(w) ? 0 : -FI_EOTHER);
		EXPECT_ERR(fi_eq_read(eq, &ev, &r, 4, 0), -FI_ETOOSMALL);
		EXPECT_ERR(fi_eq_read(eq, &ev, NULL, sizeof(r), 0), -FI_EINVAL);
		EXPECT_ERR(fi_eq_readerr(eq, NULL, 0), -FI_EINVAL);
		EXPECT_ERR(fi_cq_read(f->cq, NULL, 1), -FI_EINVAL);
		EXPECT_ERR(fi_cq_readerr(f->cq, NULL, 0), -FI_EINVAL);
		EXPECT_ERR(fi_eq_readerr(eq, &ee, 0), -FI_EAGAIN);
		if (fi_eq_read(eq, &ev, &r, sizeof(r), 0) != sizeof(r) || ev != FI_NOTIFY ||
		    r.data != 42)
			die("the EQ entry after a read too small");
	}
	/* Still usable after the refusals: a message to ourselves. */
	POST(f, fi_recv(f->ep, f->buf, 64, f->desc, FI_ADDR_UNSPEC, CTX));
	POST(f, fi_send(f->ep, f->buf + 64, 64, f->desc, self_addr(f), CTX));
	reap(f, 2);
	CHECK(fi_close(&f->ep->fid));
	f->ep = NULL;
	EXPECT_ERR(fi_close(&f->fabric->fid), -FI_EBUSY);	/* the EQ and the domain */
	CHECK(fi_close(&eq->fid));
	printf("ok: misuse: closing an AV, a CQ or an EQ an endpoint is bound to, a domain with "
	       "objects open or a fabric with a domain or EQ open is -FI_EBUSY; an EQ read too "
	       "small -FI_ETOOSMALL (the entry stays), fi_eq_readerr of nothing -FI_EAGAIN; "
	       "fi_eq_read, fi_eq_readerr, fi_cq_read and fi_cq_readerr into NULL -FI_EINVAL\n");
}

/* A NULL buffer with a length is -FI_EINVAL at the post (it was read or written later). */
static void null_buffers(struct fab *f, fi_addr_t self)
{
	struct iovec iov = { NULL, 8 };

	EXPECT_ERR(fi_send(f->ep, NULL, 8, NULL, self, CTX), -FI_EINVAL);
	EXPECT_ERR(fi_inject(f->ep, NULL, 8, self), -FI_EINVAL);
	EXPECT_ERR(fi_tinject(f->ep, NULL, 8, self, 1), -FI_EINVAL);
	EXPECT_ERR(fi_sendv(f->ep, &iov, NULL, 1, self, CTX), -FI_EINVAL);
	EXPECT_ERR(fi_sendv(f->ep, NULL, NULL, 1, self, CTX), -FI_EINVAL);
	EXPECT_ERR(fi_recv(f->ep, NULL, 8, NULL, FI_ADDR_UNSPEC, CTX), -FI_EINVAL);
	EXPECT_ERR(fi_trecv(f->ep, NULL, 8, NULL, FI_ADDR_UNSPEC, 1, 0, CTX), -FI_EINVAL);
	EXPECT_ERR(fi_recvv(f->ep, NULL, NULL, 1, FI_ADDR_UNSPEC, CTX), -FI_EINVAL);
	EXPECT_ERR(fi_write(f->ep, NULL, 8, NULL, self, 0, 0, CTX), -FI_EINVAL);
	EXPECT_ERR(fi_read(f->ep, NULL, 8, NULL, self, 0, 0, CTX), -FI_EINVAL);
	/* Atomics: operands were checked; compare values and results were not. */
	{
		uint64_t *v = (uint64_t *)(void *)(f->buf + 1024), key = fi_mr_key(f->mr);
		uint64_t addr = (uint64_t)(uintptr_t)(f->buf + 2048);

		EXPECT_ERR(fi_atomic(f->ep, NULL, 1, NULL, self, addr, key, FI_UINT64, FI_SUM, CTX),
			   -FI_EINVAL);
		EXPECT_ERR(fi_fetch_atomic(f->ep, v, 1, NULL, NULL, NULL, self, addr, key, FI_UINT64,
					   FI_SUM, CTX), -FI_EINVAL);
		EXPECT_ERR(fi_compare_atomic(f->ep, v, 1, NULL, NULL, NULL, v + 1, NULL, self, addr,
					     key, FI_UINT64, FI_CSWAP, CTX), -FI_EINVAL);
		EXPECT_ERR(fi_compare_atomic(f->ep, v, 1, NULL, v + 1, NULL, NULL, NULL, self, addr,
					     key, FI_UINT64, FI_CSWAP, CTX), -FI_EINVAL);
	}
	/* Past the limits fi_getinfo gave: iov_limit, inject_size, max_msg_size. */
	{
		struct iovec five[5];

		for (int i = 0; i < 5; i++)
			five[i] = (struct iovec){ f->buf + i * 8, 8 };
		EXPECT_ERR(fi_sendv(f->ep, five, NULL, f->info->tx_attr->iov_limit + 1, self, CTX),
			   -FI_EINVAL);
		/* Lengths whose sum wraps to 0 (2 x 2^63): not a zero-length message. */
		five[0].iov_len = five[1].iov_len = (size_t)1 << 63;
		EXPECT_ERR(fi_sendv(f->ep, five, NULL, 2, self, CTX), -FI_EINVAL);
		EXPECT_ERR(fi_recvv(f->ep, five, NULL, 2, FI_ADDR_UNSPEC, CTX), -FI_EINVAL);
		five[0].iov_len = five[1].iov_len = 8;
		EXPECT_ERR(fi_recvv(f->ep, five, NULL, f->info->rx_attr->iov_limit + 1,
				    FI_ADDR_UNSPEC, CTX), -FI_EINVAL);
		EXPECT_ERR(fi_inject(f->ep, f->buf, f->info->tx_attr->inject_size + 1, self),
			   -FI_EINVAL);
		EXPECT_ERR(fi_send(f->ep, f->buf, f->info->ep_attr->max_msg_size + 1, f->desc, self,
				   CTX), -FI_EINVAL);
	}
	/* The *msg forms: no message, or an RMA message with no rma_iov. */
	{
		struct fi_msg_rma rm = { .msg_iov = &(struct iovec){ f->buf, 8 }, .iov_count = 1,
					 .addr = self, .rma_iov_count = 1 };
		struct fi_msg_atomic am = { .msg_iov = &(struct fi_ioc){ f->buf, 1 }, .iov_count = 1,
					    .addr = self, .rma_iov_count = 1,
					    .datatype = FI_UINT64, .op = FI_SUM };

		EXPECT_ERR(fi_sendmsg(f->ep, NULL, 0), -FI_EINVAL);
		EXPECT_ERR(fi_recvmsg(f->ep, NULL, 0), -FI_EINVAL);
		EXPECT_ERR(fi_tsendmsg(f->ep, NULL, 0), -FI_EINVAL);
		EXPECT_ERR(fi_trecvmsg(f->ep, NULL, 0), -FI_EINVAL);
		EXPECT_ERR(fi_readmsg(f->ep, NULL, 0), -FI_EINVAL);
		EXPECT_ERR(fi_writemsg(f->ep, &rm, 0), -FI_EINVAL);
		EXPECT_ERR(fi_readmsg(f->ep, &rm, 0), -FI_EINVAL);
		EXPECT_ERR(fi_atomicmsg(f->ep, &am, 0), -FI_EINVAL);
	}
	/* NULL with no bytes is a zero-length message. */
	POST(f, fi_recv(f->ep, NULL, 0, NULL, FI_ADDR_UNSPEC, CTX));
	POST(f, fi_send(f->ep, NULL, 0, NULL, self, CTX));
	reap(f, 2);
	printf("ok: misuse: NULL buffers with a length are -FI_EINVAL (sends, injects, receives, "
	       "RMA, atomics' operands, compare values and results), NULL messages and rma_iov in "
	       "the *msg forms; past iov_limit, inject_size, max_msg_size (an iov whose lengths "
	       "wrap to 0 too); NULL with 0 "
	       "bytes moves a "
	       "zero-length message\n");
}

/*
 * An atomic on a target address not aligned to its datatype (8-byte operations at an
 * odd address): refused at the target (FI_EINVAL at the initiator), the bytes there
 * untouched; an aligned one after it works.
 */
static void unaligned_atomic(struct fab *f, fi_addr_t self)
{
	uint64_t key = fi_mr_key(f->mr), one = 1, got = 0;
	uint8_t *t = f->buf + 3072;
	struct fi_cq_err_entry ee = { 0 };
	struct fi_cq_tagged_entry e;
	ssize_t r;

	memset(t, 0x5a, 32);
	POST(f, fi_atomic(f->ep, &one, 1, NULL, self, (uint64_t)(uintptr_t)(t + 1), key,
			  FI_UINT64, FI_SUM, CTX));
	while ((r = fi_cq_read(f->cq, &e, 1)) == -FI_EAGAIN)
		if (time(NULL) > deadline)
			die("no completion for an unaligned atomic");
	if (r != -FI_EAVAIL || fi_cq_readerr(f->cq, &ee, 0) != 1 || !ee.err)
		die("an unaligned atomic: %zd, error %d", r, ee.err);
	for (int i = 0; i < 32; i++)
		if (t[i] != 0x5a)
			die("an unaligned atomic wrote byte %d", i);
	memset(t, 0, 8);
	POST(f, fi_fetch_atomic(f->ep, &one, 1, NULL, &got, NULL, self,
				(uint64_t)(uintptr_t)t, key, FI_UINT64, FI_SUM, CTX));
	reap(f, 1);
	if (got != 0 || *(uint64_t *)(void *)t != 1)
		die("the aligned atomic after: fetched %" PRIu64, got);
	printf("ok: misuse: an 8-byte atomic at an odd address: error %d (%s) at the initiator, "
	       "nothing written; an aligned one after it works\n", ee.err, fi_strerror(ee.err));
}

/* fi_cq_read of 0 entries: 0 when some wait (not -FI_EAVAIL: no error is there). */
static void cq_read_zero(struct fab *f, fi_addr_t self)
{
	struct fi_cq_tagged_entry e[2];
	struct fi_cq_err_entry ee = { 0 };
	ssize_t r;

	EXPECT_ERR(fi_cq_read(f->cq, e, 0), -FI_EAGAIN);
	EXPECT_ERR(fi_cq_readerr(f->cq, &ee, 0), -FI_EAGAIN);
	POST(f, fi_recv(f->ep, f->buf, 64, f->desc, FI_ADDR_UNSPEC, CTX));
	POST(f, fi_send(f->ep, f->buf + 64, 64, f->desc, self, CTX));
	while ((r = fi_cq_read(f->cq, e, 0)) == -FI_EAGAIN)
		if (time(NULL) > deadline)
			die("timed out waiting for the completions");
	if (r != 0)
		die("fi_cq_read of 0 entries with completions waiting: %zd (%s), not 0", r,
		    fi_strerror((int)-r));
	EXPECT_ERR(fi_cq_readerr(f->cq, &ee, 0), -FI_EAGAIN);
	reap(f, 2);
	printf("ok: misuse: fi_cq_read of 0 entries: -FI_EAGAIN when empty, 0 with entries "
	       "waiting; fi_cq_readerr of nothing -FI_EAGAIN\n");
}

/* Addresses not in the AV, and one removed (with a message in flight to it). */
static void bad_addrs(struct fab *f, fi_addr_t self)
{
	uint8_t name[128];
	size_t l = sizeof(name);

	EXPECT_ERR(fi_send(f->ep, f->buf, 8, f->desc, self + 1000, CTX), -FI_EINVAL);
	EXPECT_ERR(fi_send(f->ep, f->buf, 8, f->desc, FI_ADDR_UNSPEC, CTX), -FI_EINVAL);
	EXPECT_ERR(fi_inject(f->ep, f->buf, 8, FI_ADDR_NOTAVAIL), -FI_EINVAL);
	POST(f, fi_recv(f->ep, f->buf, 64, f->desc, FI_ADDR_UNSPEC, CTX));
	POST(f, fi_send(f->ep, f->buf + 64, 64, f->desc, self, CTX));
	CHECK(fi_av_remove(f->av, &self, 1, 0));
	reap(f, 2);		/* what was in flight ends as usual */
	EXPECT_ERR(fi_av_remove(f->av, &self, 1, 0), -FI_EINVAL);
	EXPECT_ERR(fi_av_lookup(f->av, self, name, &l), -FI_ENOENT);
	/* The connection to it is still open, but the address is no longer the application's. */
	EXPECT_ERR(fi_send(f->ep, f->buf, 8, f->desc, self, CTX), -FI_EINVAL);
	EXPECT_ERR(fi_inject(f->ep, f->buf, 8, self), -FI_EINVAL);
	/* NULL where an address, its length or the fi_addrs go. */
	{
		fi_addr_t two[2];
		char s[8];

		EXPECT_ERR(fi_av_insert(f->av, NULL, 2, two, 0, NULL), -FI_EINVAL);
		EXPECT_ERR(fi_av_remove(f->av, NULL, 1, 0), -FI_EINVAL);
		EXPECT_ERR(fi_av_lookup(f->av, self, name, NULL), -FI_EINVAL);
		EXPECT_ERR(fi_getname(&f->ep->fid, name, NULL), -FI_EINVAL);
		l = sizeof(name);
		EXPECT_ERR(fi_getname(&f->ep->fid, NULL, &l), -FI_EINVAL);
		l = 0;
		EXPECT_ERR(fi_getname(&f->ep->fid, NULL, &l), -FI_ETOOSMALL);	/* the size asked */
		if (l != f->info->src_addrlen)
			die("fi_getname's size: %zu, not src_addrlen %zu", l, f->info->src_addrlen);
		l = sizeof(s);
		if (fi_av_straddr(f->av, NULL, s, &l) != s || !memchr(s, 0, sizeof(s)))
			die("fi_av_straddr of NULL");
		if (fi_av_straddr(f->av, name, s, NULL) != NULL)
			die("fi_av_straddr with no length");
	}
	printf("ok: misuse: sends to fi_addrs never inserted, FI_ADDR_UNSPEC, FI_ADDR_NOTAVAIL and "
	       "one removed (after its message in flight completed) are -FI_EINVAL; so are NULL "
	       "addresses, lengths and fi_addrs to fi_av_insert/remove/lookup and fi_getname "
	       "(fi_av_straddr: \"invalid\", or NULL with no length)\n");
}

/*
 * A second CQ (or EQ) for a direction already bound: -FI_EINVAL.  It replaced the
 * first in the endpoint, which stayed in the first's set: that CQ could never close
 * (-FI_EBUSY) and, once the endpoint closed, reading it ran the freed endpoint.
 */
static void bind_twice(struct fab *f)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_NONE };
	struct fi_cq_tagged_entry e;
	struct fid_cq *a, *b;
	struct fid_eq *qa, *qb;
	struct fid_ep *ep;

	CHECK(fi_cq_open(f->domain, &cqa, &a, NULL));
	CHECK(fi_cq_open(f->domain, &cqa, &b, NULL));
	CHECK(fi_eq_open(f->fabric, &eqa, &qa, NULL));
	CHECK(fi_eq_open(f->fabric, &eqa, &qb, NULL));
	CHECK(fi_endpoint(f->domain, f->info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &f->av->fid, 0));
	CHECK(fi_ep_bind(ep, &a->fid, FI_TRANSMIT));
	CHECK(fi_ep_bind(ep, &a->fid, FI_RECV));	/* the same CQ, the other direction */
	EXPECT_ERR(fi_ep_bind(ep, &b->fid, FI_TRANSMIT), -FI_EINVAL);
	EXPECT_ERR(fi_ep_bind(ep, &b->fid, FI_RECV), -FI_EINVAL);
	CHECK(fi_ep_bind(ep, &qa->fid, 0));
	EXPECT_ERR(fi_ep_bind(ep, &qb->fid, 0), -FI_EINVAL);
	/* Objects of another domain (its lock, its context), or none. */
	{
		struct fi_av_attr ava = { .type = FI_AV_TABLE };
		struct fid_domain *d2;
		struct fid_cq *c2;
		struct fid_av *av2;
		struct fid_ep *ep2;

		CHECK(fi_domain(f->fabric, f->info, &d2, NULL));
		CHECK(fi_cq_open(d2, &cqa, &c2, NULL));
		CHECK(fi_av_open(d2, &ava, &av2, NULL));
		CHECK(fi_endpoint(d2, f->info, &ep2, NULL));
		EXPECT_ERR(fi_ep_bind(ep2, &a->fid, FI_TRANSMIT | FI_RECV), -FI_EINVAL);
		EXPECT_ERR(fi_ep_bind(ep2, &f->av->fid, 0), -FI_EINVAL);
		EXPECT_ERR(fi_ep_bind(ep2, NULL, 0), -FI_EINVAL);
		CHECK(fi_close(&ep2->fid));
		CHECK(fi_close(&av2->fid));
		CHECK(fi_close(&c2->fid));
		CHECK(fi_close(&d2->fid));
	}
	CHECK(fi_enable(ep));
	CHECK(fi_close(&ep->fid));
	/* Nothing bound to any of them now: each reads empty and closes. */
	EXPECT_ERR(fi_cq_read(a, &e, 1), -FI_EAGAIN);
	EXPECT_ERR(fi_cq_read(b, &e, 1), -FI_EAGAIN);
	CHECK(fi_close(&a->fid));
	CHECK(fi_close(&b->fid));
	CHECK(fi_close(&qa->fid));
	CHECK(fi_close(&qb->fid));
	printf("ok: misuse: a second CQ for a direction, or a second EQ, a CQ or AV of another "
	       "domain, or none, is -FI_EINVAL; the first ones close once the endpoint has\n");
}

/* An AV entry with no endpoint behind it (a port nothing listens on): an error, no hang. */
static void dead_peer(struct fab *f)
{
	struct sockaddr_storage sin;	/* the endpoint's family */
	size_t l = sizeof(sin);
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee = { 0 };
	fi_addr_t dead;
	ssize_t r;
	double t0 = now_s();

	/*
	 * Another host's mrocd (the other daemon of the pair, MISUSE_DEAD_IP): a process
	 * gone there (unanswered() is our own mrocd's).
	 */
	if (!getenv("MISUSE_DEAD_IP"))
		return;
	CHECK(fi_getname(&f->ep->fid, &sin, &l));
	name_set_ip(&sin, getenv("MISUSE_DEAD_IP"));
	name_set_port(&sin, name_port(&sin) == 1 ? 2 : 1);
	if (fi_av_insert(f->av, &sin, 1, &dead, 0, NULL) != 1)
		die("fi_av_insert");
	/* tx_attr->size operations outstanding (they wait for the connection), then -FI_EAGAIN. */
	size_t posted = 0, failed = 0;

	while ((r = fi_send(f->ep, f->buf, 64, f->desc, dead, CTX)) == 0)
		if (++posted > f->info->tx_attr->size)
			die("more than tx_attr->size (%zu) sends outstanding", f->info->tx_attr->size);
	if (r != -FI_EAGAIN || posted != f->info->tx_attr->size)
		die("send %zu of tx_attr->size %zu: %zd, not -FI_EAGAIN after all of them", posted + 1,
		    f->info->tx_attr->size, r);
	EXPECT_ERR(fi_inject(f->ep, f->buf, 8, dead), -FI_EAGAIN);
	/* Each ends, with an error: none lost. */
	while (failed < posted) {
		r = fi_cq_read(f->cq, &e, 1);
		if (r == -FI_EAVAIL) {
			CHECK(fi_cq_readerr(f->cq, &ee, 0) == 1 ? 0 : -FI_EOTHER);
			failed++;
		} else if (r != -FI_EAGAIN) {
			die("a send to an endpoint that does not exist: %zd", r);
		} else if (time(NULL) > deadline || ms_since(t0) > 30000) {
			die("sends to an endpoint that does not exist: %zu of %zu ended in %.0f ms",
			    failed, posted, ms_since(t0));
		}
	}
	printf("ok: misuse: sends to an fi_addr with no endpoint behind it: %zu (tx_attr->size) "
	       "outstanding, then -FI_EAGAIN; each ended with error %d (%s) within %.0f ms\n",
	       posted, ee.err, fi_strerror(ee.err), ms_since(t0));
}

/*
 * Our own mrocd's address, a port nothing has: mrocd answers it itself (refused), or,
 * an mrocd that does not deliver its own traffic on a fabric that does not hairpin it,
 * never (its CONNECT_REQ goes nowhere: FI_ETIMEDOUT after FI_MROC_CONNECT_TIMEOUT_MS).
 * A send and a tagged send there end with an error in bounded time either way, never
 * hang, and the endpoint works on: a message to ourselves after.
 */
static void unanswered(struct fab *f)
{
	struct sockaddr_storage sin;	/* the endpoint's family */
	size_t l = sizeof(sin), failed = 0;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee = { 0 };
	fi_addr_t none;
	ssize_t r;
	double t0 = now_s();

	CHECK(fi_getname(&f->ep->fid, &sin, &l));
	name_set_port(&sin, name_port(&sin) == 1 ? 2 : 1);
	if (fi_av_insert(f->av, &sin, 1, &none, 0, NULL) != 1)
		die("fi_av_insert");
	POST(f, fi_send(f->ep, f->buf, 64, f->desc, none, CTX));
	POST(f, fi_tsend(f->ep, f->buf, 64, f->desc, none, 7, CTX));
	/* Removed from the AV with both in flight: they end all the same, nothing else goes. */
	CHECK(fi_av_remove(f->av, &none, 1, 0));
	EXPECT_ERR(fi_send(f->ep, f->buf, 64, f->desc, none, CTX), -FI_EINVAL);
	while (failed < 2) {
		r = fi_cq_read(f->cq, &e, 1);
		if (r == -FI_EAVAIL) {
			CHECK(fi_cq_readerr(f->cq, &ee, 0) == 1 ? 0 : -FI_EOTHER);
			failed++;
		} else if (r != -FI_EAGAIN) {
			die("a send to a port nothing has on our own mrocd: %zd", r);
		} else if (time(NULL) > deadline) {
			die("sends to a port nothing has on our own mrocd: %zu of 2 ended in %.0f ms",
			    failed, ms_since(t0));
		}
	}
	POST(f, fi_recv(f->ep, f->buf, 64, f->desc, FI_ADDR_UNSPEC, CTX));
	POST(f, fi_send(f->ep, f->buf + 64, 64, f->desc, self_addr(f), CTX));
	reap(f, 2);
	printf("ok: misuse: a send and a tagged send to a port nothing has on our own mrocd, "
	       "its AV entry removed meanwhile: each ended with error %d (%s) within "
	       "%.0f ms; the endpoint works on\n",
	       ee.err, fi_strerror(ee.err), ms_since(t0));
}

/* A FI_PEEK|FI_CLAIM of msg's tag with context cx: the claim's completion. */
static void claim(struct fab *f, struct fi_context2 *cx, uint64_t tag, uint64_t flags)
{
	struct fi_msg_tagged m = { .addr = FI_ADDR_UNSPEC, .tag = tag, .context = cx };

	POST(f, fi_trecvmsg(f->ep, &m, FI_PEEK | FI_CLAIM | flags));
	reap(f, 1);
	if (last.op_context != cx || last.tag != tag || last.len != 64)
		die("FI_PEEK|FI_CLAIM: context %p tag %" PRIu64 " len %zu", last.op_context,
		    last.tag, last.len);
}

/*
 * A claimed message never received (fi_tagged(3): only its FI_CLAIM receive takes
 * it): fi_cancel of the claim's context releases it (FI_ECANCELED, the message
 * unexpected again for any receive), and FI_CLAIM|FI_DISCARD drops it; neither is
 * held until the endpoint closes.
 */
static void claim_release(struct fab *f, fi_addr_t self)
{
	static struct fi_context2 cx, cy;
	struct fi_cq_err_entry ee = { 0 };
	struct fi_cq_tagged_entry e;
	struct fi_msg_tagged m = { .addr = FI_ADDR_UNSPEC, .tag = 0x77, .context = &cy };
	ssize_t r;

	fill(f->buf + 64, 64, 0x77);
	POST(f, fi_tsend(f->ep, f->buf + 64, 64, f->desc, self, 0x77, CTX));
	reap(f, 1);
	claim(f, &cx, 0x77, 0);
	r = fi_cancel(&f->ep->fid, &cx);
	if (r)
		die("fi_cancel of a FI_PEEK|FI_CLAIM's context: %zd (%s)", r, fi_strerror((int)-r));
	while ((r = fi_cq_read(f->cq, &e, 1)) == -FI_EAGAIN)
		if (time(NULL) > deadline)
			die("no completion for the cancelled claim");
	if (r != -FI_EAVAIL || fi_cq_readerr(f->cq, &ee, 0) != 1 || ee.err != FI_ECANCELED ||
	    ee.op_context != &cx)
		die("the cancelled claim: %zd, error %d", r, ee.err);
	/* Unexpected again: an ordinary receive takes it, bytes intact. */
	memset(f->buf, 0, 64);
	POST(f, fi_trecv(f->ep, f->buf, 64, f->desc, FI_ADDR_UNSPEC, 0x77, 0, CTX));
	reap(f, 1);
	verify(f->buf, 64, 0x77, "a claimed message released by fi_cancel");
	/* FI_CLAIM|FI_DISCARD drops a claimed one: nothing left to peek. */
	POST(f, fi_tsend(f->ep, f->buf + 64, 64, f->desc, self, 0x78, CTX));
	reap(f, 1);
	claim(f, &cy, 0x78, 0);
	m.tag = 0x78;
	POST(f, fi_trecvmsg(f->ep, &m, FI_CLAIM | FI_DISCARD));
	reap(f, 1);
	m.context = CTX;
	POST(f, fi_trecvmsg(f->ep, &m, FI_PEEK));
	while ((r = fi_cq_read(f->cq, &e, 1)) == -FI_EAGAIN)
		if (time(NULL) > deadline)
			die("no answer to FI_PEEK");
	if (r != -FI_EAVAIL || fi_cq_readerr(f->cq, &ee, 0) != 1 || ee.err != FI_ENOMSG)
		die("FI_PEEK after FI_CLAIM|FI_DISCARD: %zd, error %d", r, ee.err);
	EXPECT_ERR(fi_cancel(&f->ep->fid, &cy), -FI_ENOENT);
	printf("ok: misuse: a FI_PEEK|FI_CLAIM never received: fi_cancel of its context releases "
	       "it (FI_ECANCELED; an ordinary receive then takes it intact), FI_CLAIM|FI_DISCARD "
	       "drops it\n");
}

/* rx_attr->size receives posted, then -FI_EAGAIN; fi_cancel ends each (FI_ECANCELED). */
static void cancel_all(struct fab *f)
{
	static struct fi_context2 rctx[1024];
	struct fi_cq_err_entry ee = { 0 };
	struct fi_cq_tagged_entry e;
	size_t n = 0, got = 0;
	ssize_t r;

	while ((r = fi_trecv(f->ep, f->buf, 64, f->desc, FI_ADDR_UNSPEC, 0xdead, 0, &rctx[n])) == 0)
		if (++n >= 1024)
			die("more than 1024 receives posted (rx_attr->size %zu)", f->info->rx_attr->size);
	if (r != -FI_EAGAIN || n != f->info->rx_attr->size)
		die("receive %zu of rx_attr->size %zu: %zd, not -FI_EAGAIN after all of them", n + 1,
		    f->info->rx_attr->size, r);
	for (size_t i = 0; i < n; i++)
		CHECK(fi_cancel(&f->ep->fid, &rctx[i]));
	EXPECT_ERR(fi_cancel(&f->ep->fid, &rctx[0]), -FI_ENOENT);
	EXPECT_ERR(fi_cancel(&f->ep->fid, &(struct fi_context2){ 0 }), -FI_ENOENT);
	while (got < n) {
		r = fi_cq_read(f->cq, &e, 1);
		if (r == -FI_EAVAIL) {
			CHECK(fi_cq_readerr(f->cq, &ee, 0) == 1 ? 0 : -FI_EOTHER);
			if (ee.err != FI_ECANCELED || ee.op_context != &rctx[got])
				die("cancelled receive %zu: error %d, context %p", got, ee.err,
				    ee.op_context);
			got++;
		} else if (r != -FI_EAGAIN || time(NULL) > deadline) {
			die("cancelled receives: %zu of %zu ended (%zd)", got, n, r);
		}
	}
	EXPECT_ERR(fi_cq_read(f->cq, &e, 1), -FI_EAGAIN);
	printf("ok: misuse: %zu receives (rx_attr->size) posted, then -FI_EAGAIN; fi_cancel of "
	       "each: FI_ECANCELED in order; of one done or unknown: -FI_ENOENT\n", n);
}

/* ---- two threads running progress at once (FI_THREAD_SAFE) ------------------------------ */

static bool eq_stop;		/* __atomic: read by another thread */

static void *eq_reader(void *arg)
{
	struct fid_eq *eq = arg;
	struct fi_eq_entry e;
	uint32_t ev;

	while (!__atomic_load_n(&eq_stop, __ATOMIC_RELAXED))
		(void)fi_eq_read(eq, &ev, &e, sizeof(e), 0);
	return NULL;
}

/*
 * An EQ bound to the endpoint runs its progress too (eq.c): a thread reading it and
 * one reading the CQ ran the same connections at once, without the domain's lock.
 */
static bool left_stop;		/* __atomic */

/* fi_rx_size_left/fi_tx_size_left all along, beside the posts (FI_THREAD_SAFE). */
static void *size_reader(void *arg)
{
	struct fab *f = arg;
	long reads = 0;

	while (!__atomic_load_n(&left_stop, __ATOMIC_RELAXED)) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"	/* since 1.17; still ABI */
		ssize_t rx = fi_rx_size_left(f->ep), tx = fi_tx_size_left(f->ep);
#pragma GCC diagnostic pop

		if (rx < 0 || (size_t)rx > f->info->rx_attr->size || tx < 0 ||
		    (size_t)tx > f->info->tx_attr->size)
			die("fi_rx_size_left %zd, fi_tx_size_left %zd while another thread posts "
			    "(sizes %zu, %zu)", rx, tx, f->info->rx_attr->size,
			    f->info->tx_attr->size);
		reads++;
	}
	return (void *)reads;
}

static void threads(void)
{
	struct fi_info *h = hints_for(FI_MSG);
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED, .size = 8192 };
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_NONE };
	struct fab f = { 0 };
	struct fid_eq *eq;
	pthread_t t, sl;
	fi_addr_t self;
	int n = 3000;

	h->domain_attr->threading = FI_THREAD_SAFE;
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &f.info));
	fi_freeinfo(h);
	if (f.info->domain_attr->threading != FI_THREAD_SAFE)
		die("FI_THREAD_SAFE asked, %d given", f.info->domain_attr->threading);
	fic_domain_open(f.info, &cqa, &f.fabric, &f.domain, &f.av, &f.cq);
	CHECK(fi_eq_open(f.fabric, &eqa, &eq, NULL));
	CHECK(fi_endpoint(f.domain, f.info, &f.ep, NULL));
	CHECK(fi_ep_bind(f.ep, &f.av->fid, 0));
	CHECK(fi_ep_bind(f.ep, &f.cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(f.ep, &eq->fid, 0));
	CHECK(fi_enable(f.ep));
	f.len = 2 * 4096;
	f.buf = calloc(1, f.len);
	self = self_addr(&f);
	__atomic_store_n(&eq_stop, false, __ATOMIC_RELAXED);
	__atomic_store_n(&left_stop, false, __ATOMIC_RELAXED);
	if (pthread_create(&t, NULL, eq_reader, eq) || pthread_create(&sl, NULL, size_reader, &f))
		die("pthread_create");
	for (int i = 0; i < n; i++) {
		size_t len = 1 + (size_t)i % 4096;

		fill(f.buf + 4096, len, (uint64_t)i);
		POST(&f, fi_recv(f.ep, f.buf, 4096, NULL, FI_ADDR_UNSPEC, CTX));
		POST(&f, fi_send(f.ep, f.buf + 4096, len, NULL, self, CTX));
		reap(&f, 2);
		verify(f.buf, len, (uint64_t)i, "a message while another thread read the EQ");
	}
	__atomic_store_n(&eq_stop, true, __ATOMIC_RELAXED);
	__atomic_store_n(&left_stop, true, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	pthread_join(sl, NULL);
	CHECK(fi_close(&f.ep->fid));
	f.ep = NULL;
	CHECK(fi_close(&eq->fid));
	fab_close(&f);
	printf("ok: misuse: FI_THREAD_SAFE: %d messages checked while another thread read the "
	       "endpoint's EQ (its progress) and a third fi_rx_size_left/fi_tx_size_left at "
	       "once\n", n);
}

static int fd_count(void)
{
	int n = 0;

	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) != -1;
	return n;
}

/* Endpoints opened, used and closed over and over: no descriptor left behind each time. */
static void churn(struct fab *f)
{
	int before = -1, rounds = 100;

	for (int i = 0; i < rounds; i++) {
		struct fid_ep *ep;
		uint8_t name[128];
		size_t l = sizeof(name);
		fi_addr_t a;

		CHECK(fi_endpoint(f->domain, f->info, &ep, NULL));
		CHECK(fi_ep_bind(ep, &f->av->fid, 0));
		CHECK(fi_ep_bind(ep, &f->cq->fid, FI_TRANSMIT | FI_RECV));
		CHECK(fi_enable(ep));
		CHECK(fi_getname(&ep->fid, name, &l));
		if (fi_av_insert(f->av, name, 1, &a, 0, NULL) != 1)
			die("fi_av_insert");
		POST(f, fi_recv(ep, f->buf, 64, f->desc, FI_ADDR_UNSPEC, CTX));
		POST(f, fi_send(ep, f->buf + 64, 64, f->desc, a, CTX));
		reap(f, 2);
		CHECK(fi_av_remove(f->av, &a, 1, 0));
		CHECK(fi_close(&ep->fid));
		if (i == 1)
			before = fd_count();	/* after the first rounds' lazily opened ones */
	}
	if (fd_count() != before)
		die("%d descriptors open after %d endpoints opened and closed, %d before", fd_count(),
		    rounds, before);
	printf("ok: misuse: %d endpoints opened, used and closed: no descriptor left behind\n",
	       rounds);
}

void t_misuse(void)
{
	struct fab f = { 0 };
	fi_addr_t self;

	if (fab_open(&f, FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE))
		die("fab_open");
	self = self_addr(&f);
	null_buffers(&f, self);
	cq_read_zero(&f, self);
	unaligned_atomic(&f, self);
	bad_addrs(&f, self);
	bind_twice(&f);
	churn(&f);
	cancel_all(&f);
	claim_release(&f, self_addr(&f));
	dead_peer(&f);
	unanswered(&f);
	closing_bound(&f);
	fab_close(&f);
	threads();
}

/* ---- MSG endpoints: sends with no connection (misuse_msg, server and client) -------------- */

/* The next EQ event, which must be want. */
static void msg_wait(struct fid_eq *eq, uint32_t want, struct fi_eq_cm_entry *e)
{
	uint32_t ev;
	ssize_t n;

	while ((n = fi_eq_sread(eq, &ev, e, sizeof(*e), 100, 0)) == -FI_EAGAIN)
		if (time(NULL) > deadline)
			die("timed out waiting for CM event %u", want);
	if (n < 0)
		die("fi_eq_sread: %s, waiting for CM event %u", fi_strerror((int)-n), want);
	if (ev != want)
		die("CM event %u, not %u", ev, want);
}

/*
 * A send on a connection that is gone: refused (-FI_ENOTCONN) or failed on the CQ
 * within 5 s, never queued for ever (it waited on a connection that was down).
 */
static void send_unconnected(struct fid_ep *ep, struct fid_cq *cq, uint8_t *buf,
			     const char *what)
{
	struct fi_cq_err_entry ee = { 0 };
	struct fi_cq_entry e;
	double t0 = now_s();
	ssize_t r = fi_send(ep, buf, 64, NULL, 0, CTX);

	if (r == 0) {
		while ((r = fi_cq_read(cq, &e, 1)) == -FI_EAGAIN)
			if (ms_since(t0) > 5000)
				die("%s: fi_send accepted, no completion in 5 s", what);
		if (r != -FI_EAVAIL)
			die("%s: fi_send completed (%zd)", what, r);
		fi_cq_readerr(cq, &ee, 0);
		r = -ee.err;
	}
	if (r != -FI_ENOTCONN && r != -FI_ECANCELED && r != -FI_ECONNRESET)
		die("%s: fi_send %zd (%s)", what, r, fi_strerror((int)-r));
	EXPECT_ERR(fi_inject(ep, buf, 8, 0), -FI_ENOTCONN);
	printf("ok: misuse_msg: %s: fi_send %s, fi_inject -FI_ENOTCONN\n", what,
	       fi_strerror((int)-r));
}

void t_misuse_msg(void)
{
	struct fi_info *h = hints_for(FI_MSG), *info;
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_CONTEXT, .size = 64 };
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_eq_cm_entry e;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_pep *pep = NULL;
	struct fid_ep *ep;
	uint8_t name[128] = { 0 }, theirs[128], buf[256] = { 0 };
	size_t l = sizeof(name) - 8;
	int oob;

	h->ep_attr->type = FI_EP_MSG;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info))
		exit(77);
	fi_freeinfo(h);
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_eq_open(fabric, &eqa, &eq, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_cq_open(domain, &cqa, &cq, NULL));
	if (srv) {
		CHECK(fi_passive_ep(fabric, info, &pep, NULL));
		CHECK(fi_pep_bind(pep, &eq->fid, 0));
		CHECK(fi_listen(pep));
		CHECK(fi_getname(&pep->fid, name + 8, &l));
		memcpy(name, &l, sizeof(l));
	}
	oob = oob_open();
	oob_xfer(oob, theirs, name, sizeof(name));
	if (srv) {
		msg_wait(eq, FI_CONNREQ, &e);
		/* The passive endpoint closed with the request read: it is still ours to accept
		 * (as verbs' and tcp's), not freed under its fi_info's handle. */
		CHECK(fi_close(&pep->fid));
		pep = NULL;
		CHECK(fi_endpoint(domain, e.info, &ep, NULL));
		fi_freeinfo(e.info);
		CHECK(fi_ep_bind(ep, &eq->fid, 0));
		CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
		CHECK(fi_accept(ep, NULL, 0));
		EXPECT_ERR(fi_accept(ep, NULL, 0), -FI_EINVAL);
		msg_wait(eq, FI_CONNECTED, &e);
		/* The client shuts down: FI_SHUTDOWN here, then our sends have nowhere to go. */
		msg_wait(eq, FI_SHUTDOWN, &e);
		send_unconnected(ep, cq, buf, "after the peer's fi_shutdown");
	} else {
		CHECK(fi_endpoint(domain, info, &ep, NULL));
		CHECK(fi_ep_bind(ep, &eq->fid, 0));
		CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
		CHECK(fi_enable(ep));
		EXPECT_ERR(fi_send(ep, buf, 64, NULL, 0, CTX), -FI_ENOTCONN);
		CHECK(fi_connect(ep, theirs + 8, NULL, 0));
		EXPECT_ERR(fi_connect(ep, theirs + 8, NULL, 0), -FI_EINVAL);
		msg_wait(eq, FI_CONNECTED, &e);
		CHECK(fi_shutdown(ep, 0));
		msg_wait(eq, FI_SHUTDOWN, &e);
		send_unconnected(ep, cq, buf, "after our own fi_shutdown");
	}
	oob_sync(oob);
	CHECK(fi_close(&ep->fid));
	if (pep)
		CHECK(fi_close(&pep->fid));
	CHECK(fi_close(&cq->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&eq->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	close(oob);
	printf("ok: misuse_msg: a send before fi_connect and after either side's fi_shutdown is "
	       "refused, never queued for ever; fi_connect and fi_accept twice -FI_EINVAL; "
	       "fi_accept of a FI_CONNREQ read before its passive endpoint closed connects\n");
}

/* ---- misuse_threads: FI_THREAD_SAFE, a CQ and an EQ read at once, between two daemons ------ */

#define TW	32		/* messages in flight */
#define TSLOT	4096

/*
 * Both sides: an FI_THREAD_SAFE endpoint with an EQ bound, and a thread reading that EQ
 * (its progress, eq.c) all along while the main thread sends or receives and reads the
 * CQ: the same connections progressed from two threads at once.  The client sends
 * 20000 messages of 1 .. 4096 bytes, TW in flight; the server checks each, in order.
 */
void t_misuse_threads(void)
{
	struct fi_info *h = hints_for(FI_MSG);
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED, .size = 8192 };
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_NONE };
	static struct fi_context2 tctx[TW];
	struct fab f = { 0 };
	struct fid_eq *eq;
	pthread_t t;
	int n = quick ? 2000 : 20000, done = 0;

	h->domain_attr->threading = FI_THREAD_SAFE;
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &f.info));
	fi_freeinfo(h);
	fic_domain_open(f.info, &cqa, &f.fabric, &f.domain, &f.av, &f.cq);
	CHECK(fi_eq_open(f.fabric, &eqa, &eq, NULL));
	CHECK(fi_endpoint(f.domain, f.info, &f.ep, NULL));
	CHECK(fi_ep_bind(f.ep, &f.av->fid, 0));
	CHECK(fi_ep_bind(f.ep, &f.cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(f.ep, &eq->fid, 0));
	CHECK(fi_enable(f.ep));
	f.len = TW * TSLOT;
	f.buf = calloc(1, f.len);
	fab_meet(&f);
	__atomic_store_n(&eq_stop, false, __ATOMIC_RELAXED);
	if (pthread_create(&t, NULL, eq_reader, eq))
		die("pthread_create");
	if (srv) {
		for (int i = 0; i < TW && i < n; i++)
			POST(&f, fi_recv(f.ep, f.buf + (size_t)i * TSLOT, TSLOT, NULL, f.peer, &tctx[i]));
		while (done < n) {
			int k;

			reap(&f, 1);
			k = (int)((struct fi_context2 *)last.op_context - tctx);
			if (k < 0 || k >= TW || k != done % TW)
				die("receive %d completed as slot %d", done, k);
			if (last.len != 1 + (size_t)done * 7 % TSLOT)
				die("message %d: %zu bytes, not %zu", done, last.len,
				    1 + (size_t)done * 7 % TSLOT);
			verify(f.buf + (size_t)k * TSLOT, last.len, (uint64_t)done,
			       "a message while another thread read the EQ");
			if (done + TW < n)
				POST(&f, fi_recv(f.ep, f.buf + (size_t)k * TSLOT, TSLOT, NULL, f.peer,
						 &tctx[k]));
			done++;
		}
	} else {
		int posted = 0;

		while (done < n) {
			while (posted < n && posted - done < TW) {
				size_t len = 1 + (size_t)posted * 7 % TSLOT;
				uint8_t *b = f.buf + (size_t)(posted % TW) * TSLOT;

				fill(b, len, (uint64_t)posted);
				POST(&f, fi_send(f.ep, b, len, NULL, f.peer, &tctx[posted % TW]));
				posted++;
			}
			reap(&f, 1);
			done++;
		}
	}
	oob_sync(f.oob);
	__atomic_store_n(&eq_stop, true, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	CHECK(fi_close(&f.ep->fid));
	f.ep = NULL;
	CHECK(fi_close(&eq->fid));
	close(f.oob);
	fab_close(&f);
	printf("ok: misuse_threads: FI_THREAD_SAFE: %d messages %s, each checked, while another "
	       "thread read the endpoint's EQ at once\n", n, srv ? "received" : "sent");
}

/* ---- misuse_mr: a registration closed under a message in flight from it -------------------- */

/* One completion, error or not, within 20 s: the error (0 if none). */
static int reap_any(struct fab *f, const char *what)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee = { 0 };
	double t0 = now_s();
	ssize_t r;

	while ((r = fi_cq_read(f->cq, &e, 1)) == -FI_EAGAIN)
		if (ms_since(t0) > 20000)
			die("%s: no completion in 20 s", what);
	if (r == 1)
		return 0;
	if (r != -FI_EAVAIL)
		die("%s: fi_cq_read %zd", what, r);
	CHECK(fi_cq_readerr(f->cq, &ee, 0) == 1 ? 0 : -FI_EOTHER);
	return ee.err ? ee.err : -1;
}

/*
 * The client sends 1 MiB from its registered buffer (mroc sends it by rendezvous: the
 * receiver READs the sender's region) and closes that registration before the server
 * has posted its receive.  Both sides must complete (with an error or not), no hang;
 * then a message moves as usual on the same endpoints.
 */
void t_misuse_mr(void)
{
	size_t len = 1 << 20;
	struct fab f = { 0 };
	int err;

	if (fab_open(&f, FI_TAGGED, 2 * len, 0))
		die("fab_open");
	fab_meet(&f);
	if (srv) {
		oob_sync(f.oob);	/* the client has sent and closed its registration */
		POST(&f, fi_trecv(f.ep, f.buf, len, f.desc, f.peer, 1, 0, CTX));
		err = reap_any(&f, "the receive of a message whose registration closed");
	} else {
		fill(f.buf, len, 7);
		POST(&f, fi_tsend(f.ep, f.buf, len, f.desc, f.peer, 1, CTX));
		CHECK(fi_close(&f.mr->fid));
		f.mr = NULL;
		f.desc = NULL;
		oob_sync(f.oob);
		err = reap_any(&f, "a send whose registration closed");
	}
	printf("ok: misuse_mr: 1 MiB sent from a registration closed at once: %s completed (%s)\n",
	       srv ? "the receive" : "the send", err ? fi_strerror(err) : "no error");
	if (srv && !err)
		verify(f.buf, len, 7, "a message whose registration closed");
	/*
	 * The endpoints still work: 64 KiB + 1 each way, checked.  The READ of a region gone
	 * is a remote access error, which ends the connection (as verbs ends an RC QP): a
	 * send that raced with its end fails (FI_ECONNABORTED) and, sent again, goes on a
	 * new one.
	 */
	oob_sync(f.oob);
	fill(f.buf + len, 65537, srv ? 8 : 9);
	POST(&f, fi_trecv(f.ep, f.buf, 65537, NULL, f.peer, 2, 0, &ctxs[0]));
	POST(&f, fi_tsend(f.ep, f.buf + len, 65537, NULL, f.peer, 2, &ctxs[1]));
	for (int got = 0, tries = 0; got < 2;) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry ee = { 0 };
		ssize_t r = fi_cq_read(f.cq, &e, 1);

		if (r == 1) {
			got++;
		} else if (r == -FI_EAVAIL) {
			CHECK(fi_cq_readerr(f.cq, &ee, 0) == 1 ? 0 : -FI_EOTHER);
			if (ee.op_context != &ctxs[1] || ee.err != FI_ECONNABORTED || ++tries > 3)
				die("after: error %d (%s) on %s", ee.err, fi_strerror(ee.err),
				    ee.op_context == &ctxs[1] ? "the send" : "the receive");
			POST(&f, fi_tsend(f.ep, f.buf + len, 65537, NULL, f.peer, 2, &ctxs[1]));
		} else if (r != -FI_EAGAIN || time(NULL) > deadline) {
			die("after: fi_cq_read %zd", r);
		}
	}
	verify(f.buf, 65537, srv ? 9 : 8, "a message after");
	oob_sync(f.oob);
	close(f.oob);
	fab_close(&f);
	printf("ok: misuse_mr: the endpoints work on after it\n");
}
