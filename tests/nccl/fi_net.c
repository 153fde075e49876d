// SPDX-License-Identifier: MIT
/*
 * NCCL's net semantics over a libfabric provider (mroc's own, or any other
 * RDM provider such as tcp;ofi_rxm or udp;ofi_rxd), so that the ring runs
 * unchanged over the provider and bench-nccl compares transports and nothing
 * else (issue 26, deliverable 3: "over the plugin, over kernel TCP and over
 * the provider").  This is what NCCL's own libfabric plugin (aws-ofi-nccl)
 * does in spirit: one RDM endpoint per process, tagged messages.
 *
 * Connections: listen() hands out an id; connect() sends a HELLO (its name
 * and a cookie) tagged with that id, accept() answers with the receive comm's
 * id tagged with the cookie, and connect() returns once the answer is in, so
 * both calls stay non-blocking.  Data is tagged (receive comm id << 32 | a
 * per-comm sequence number; comm ids are unique per process, so no directed
 * receive is needed): sends and receives match in posting order, as NCCL
 * requires, whatever order the provider delivers in.  A full request
 * table or the provider's -FI_EAGAIN gives a NULL request (NCCL's
 * back-pressure).  One buffer per receive.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#define FIC_NO_DIE	/* errors are h_die's */
#include "fi_common.h"
#include "harness.h"

#define FN_MAGIC	0x66696e31u		/* "fin1" */
#define FN_NAME_MAX	96
#define TAG_HELLO	(1ull << 63)		/* | listen id */
#define TAG_ACCEPT	(1ull << 62)		/* | the connecting comm's cookie */
#define ID_MAX		(1u << 30)		/* comm ids stay below the control bits */

struct fn_hello {
	uint32_t cookie;
	uint32_t namelen;
	uint8_t name[FN_NAME_MAX];
};

struct fn_req {
	struct fi_context2 ctx;			/* first: the provider's FI_CONTEXT space */
	struct fn_comm *c;
	int used, done, err;
	size_t len;
};

struct fn_comm {
	uint32_t id;				/* receive comm: its tag; send comm: the peer's */
	fi_addr_t peer;
	uint32_t posted;			/* sequence of the next post (tag's low half) */
	struct fn_req reqs[NCCL_REQS_PER_COMM];
	/* while connecting: the HELLO out and the ACCEPT answer in */
	struct fn_hello *hello;
	struct fn_req hello_req, ctl;
	uint32_t answer;
};

struct fn_listen {
	uint32_t id;
	struct fn_req req;			/* the pre-posted HELLO receive */
	struct fn_hello hello;
	struct fn_req ans_req;			/* the ACCEPT send of the last accept */
	uint32_t answer;
};

struct fn_handle {
	uint32_t magic;
	uint32_t listen_id;
	uint32_t namelen;
	uint32_t pad;
	struct fn_comm *pending;		/* the connecting comm between calls */
	uint8_t name[FN_NAME_MAX];
};
static_assert(sizeof(struct fn_handle) <= NCCL_HANDLE_BYTES, "fits the handle");

struct fn_mh { struct fid_mr *mr; };

struct fnet {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	uint8_t name[FN_NAME_MAX];
	size_t namelen;
	bool mr_local;
	uint32_t next_id;
	char what[64];
};

#define FI_DIE(what, r) h_die("fi: %s: %s", what, fi_strerror((int)-(r)))

/* Every completion the CQ has: each names its request through its context. */
static void fn_progress(struct fnet *f)
{
	for (;;) {
		struct fi_cq_tagged_entry e[32];
		ssize_t r = fi_cq_read(f->cq, e, 32);

		if (r == -FI_EAGAIN)
			return;
		if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = { 0 };

			if (fi_cq_readerr(f->cq, &ee, 0) == 1 && ee.op_context) {
				struct fn_req *q = ee.op_context;

				q->err = ee.err ? ee.err : EIO;
				q->done = 1;
			}
			continue;
		}
		if (r < 0)
			FI_DIE("fi_cq_read", r);
		for (ssize_t i = 0; i < r; i++) {
			struct fn_req *q = e[i].op_context;

			q->len = e[i].len;
			q->done = 1;
		}
	}
}

static int f_props(struct hnet *n, struct nccl_props_v9 *p)
{
	struct fnet *f = n->priv;

	memset(p, 0, sizeof(*p));
	p->name = f->info->fabric_attr->prov_name;
	p->max_recvs = 1;
	p->ptr_support = NCCL_PTR_HOST_MEM;
	return 0;
}

static uint32_t fn_new_id(struct fnet *f)
{
	H_CHECK(f->next_id < ID_MAX, "fi: out of comm ids");
	return f->next_id++;
}

/* Posts a tagged receive; -FI_EAGAIN is retried after progress (only for control). */
static void fn_recv_ctl(struct fnet *f, void *buf, size_t len, uint64_t tag, struct fn_req *q)
{
	ssize_t r;

	q->done = q->err = 0;
	while ((r = fi_trecv(f->ep, buf, len, NULL, FI_ADDR_UNSPEC, tag, 0, q)) == -FI_EAGAIN)
		fn_progress(f);
	if (r)
		FI_DIE("fi_trecv", r);
}

static void fn_send_ctl(struct fnet *f, const void *buf, size_t len, fi_addr_t to, uint64_t tag,
			struct fn_req *q)
{
	ssize_t r;

	q->done = q->err = 0;
	while ((r = fi_tsend(f->ep, buf, len, NULL, to, tag, q)) == -FI_EAGAIN)
		fn_progress(f);
	if (r)
		FI_DIE("fi_tsend", r);
}

static int f_listen(struct hnet *n, void *handle, void **lc)
{
	struct fnet *f = n->priv;
	struct fn_handle *h = handle;
	struct fn_listen *l = calloc(1, sizeof(*l));

	H_CHECK(l, "out of memory");
	l->id = fn_new_id(f);
	fn_recv_ctl(f, &l->hello, sizeof(l->hello), TAG_HELLO | l->id, &l->req);
	memset(handle, 0, NCCL_HANDLE_BYTES);
	h->magic = FN_MAGIC;
	h->listen_id = l->id;
	h->namelen = (uint32_t)f->namelen;
	memcpy(h->name, f->name, f->namelen);
	*lc = l;
	return 0;
}

static fi_addr_t fn_insert(struct fnet *f, const void *name, size_t len)
{
	fi_addr_t a;

	H_CHECK(len && len <= FN_NAME_MAX, "fi: a peer name of %zu bytes", len);
	H_CHECK(fi_av_insert(f->av, name, 1, &a, 0, NULL) == 1, "fi: fi_av_insert of a peer");
	return a;
}

static int f_connect(struct hnet *n, void *handle, void **sc)
{
	struct fnet *f = n->priv;
	struct fn_handle *h = handle;
	struct fn_comm *c = h->pending;

	*sc = NULL;
	H_CHECK(h->magic == FN_MAGIC, "fi: not a handle of this transport");
	if (!c) {
		uint32_t cookie = fn_new_id(f);

		c = calloc(1, sizeof(*c));
		H_CHECK(c && (c->hello = calloc(1, sizeof(*c->hello))), "out of memory");
		c->peer = fn_insert(f, h->name, h->namelen);
		fn_recv_ctl(f, &c->answer, sizeof(c->answer), TAG_ACCEPT | cookie, &c->ctl);
		c->hello->cookie = cookie;
		c->hello->namelen = (uint32_t)f->namelen;
		memcpy(c->hello->name, f->name, f->namelen);
		fn_send_ctl(f, c->hello, sizeof(*c->hello), c->peer, TAG_HELLO | h->listen_id,
			    &c->hello_req);
		h->pending = c;
		return 0;
	}
	fn_progress(f);
	if (!c->ctl.done || !c->hello_req.done)
		return 0;
	H_CHECK(!c->hello_req.err, "fi: HELLO: %s", fi_strerror(c->hello_req.err));
	H_CHECK(!c->ctl.err, "fi: ACCEPT: %s", fi_strerror(c->ctl.err));
	free(c->hello);
	c->hello = NULL;
	c->id = c->answer;
	h->pending = NULL;
	*sc = c;
	return 0;
}

static int f_accept(struct hnet *n, void *lc, void **rc)
{
	struct fnet *f = n->priv;
	struct fn_listen *l = lc;
	struct fn_comm *c;

	*rc = NULL;
	fn_progress(f);
	if (!l->req.done)
		return 0;
	H_CHECK(!l->req.err, "fi: HELLO receive: %s", fi_strerror(l->req.err));
	/* The last ACCEPT's buffer is reused: it must have left. */
	while (l->ans_req.c && !l->ans_req.done)
		fn_progress(f);
	c = calloc(1, sizeof(*c));
	H_CHECK(c, "out of memory");
	c->peer = fn_insert(f, l->hello.name, l->hello.namelen);
	c->id = fn_new_id(f);
	l->answer = c->id;
	l->ans_req.c = c;
	fn_send_ctl(f, &l->answer, sizeof(l->answer), c->peer, TAG_ACCEPT | l->hello.cookie,
		    &l->ans_req);
	fn_recv_ctl(f, &l->hello, sizeof(l->hello), TAG_HELLO | l->id, &l->req);
	*rc = c;
	return 0;
}

static int f_reg(struct hnet *n, void *comm, void *data, size_t size, void **mh)
{
	struct fnet *f = n->priv;
	struct fn_mh *m = calloc(1, sizeof(*m));
	int r;

	H_CHECK(m, "out of memory");
	if (f->mr_local) {
		r = fi_mr_reg(f->domain, data, size, FI_SEND | FI_RECV, 0, 0, 0, &m->mr, NULL);
		if (r)
			FI_DIE("fi_mr_reg", r);
	}
	*mh = m;
	return 0;
}

static int f_dereg(struct hnet *n, void *comm, void *mh)
{
	struct fn_mh *m = mh;

	if (m && m->mr)
		fi_close(&m->mr->fid);
	free(m);
	return 0;
}

static void *fn_desc(void *mh)
{
	struct fn_mh *m = mh;

	return m && m->mr ? fi_mr_desc(m->mr) : NULL;
}

/* A free request of the comm for the next post, or NULL (back-pressure). */
static struct fn_req *fn_slot(struct fn_comm *c)
{
	struct fn_req *q = &c->reqs[c->posted % NCCL_REQS_PER_COMM];

	if (q->used)
		return NULL;
	*q = (struct fn_req){ .c = c, .used = 1 };
	return q;
}

static int f_isend(struct hnet *n, void *sc, void *data, size_t size, int tag, void *mh, void **req)
{
	struct fnet *f = n->priv;
	struct fn_comm *c = sc;
	struct fn_req *q = fn_slot(c);
	ssize_t r;

	*req = NULL;
	if (!q)
		return 0;
	r = fi_tsend(f->ep, data, size, fn_desc(mh), c->peer, (uint64_t)c->id << 32 | c->posted, q);
	if (r == -FI_EAGAIN) {
		q->used = 0;
		fn_progress(f);
		return 0;
	}
	if (r)
		FI_DIE("fi_tsend", r);
	c->posted++;
	*req = q;
	return 0;
}

static int f_irecv(struct hnet *n, void *rc, int nb, void **data, size_t *sizes, int *tags,
		   void **mhs, void **req)
{
	struct fnet *f = n->priv;
	struct fn_comm *c = rc;
	struct fn_req *q;
	ssize_t r;

	H_CHECK(nb == 1, "fi: one buffer per receive");
	*req = NULL;
	q = fn_slot(c);
	if (!q)
		return 0;
	r = fi_trecv(f->ep, data[0], sizes[0], fn_desc(mhs ? mhs[0] : NULL), FI_ADDR_UNSPEC,
		     (uint64_t)c->id << 32 | c->posted, 0, q);
	if (r == -FI_EAGAIN) {
		q->used = 0;
		fn_progress(f);
		return 0;
	}
	if (r)
		FI_DIE("fi_trecv", r);
	c->posted++;
	*req = q;
	return 0;
}

static int f_test(struct hnet *n, void *req, int *done, int *sizes)
{
	struct fn_req *q = req;

	fn_progress(n->priv);
	*done = q->done;
	if (!q->done)
		return 0;
	q->used = 0;
	if (q->err)
		return NCCL_ERR_REMOTE;
	if (sizes)
		sizes[0] = (int)q->len;
	return 0;
}

/* NCCL closes a comm once its requests are done; nothing of it is posted then. */
static int f_close(struct hnet *n, void *comm)
{
	free(comm);
	return 0;
}

static int f_close_listen(struct hnet *n, void *lc)
{
	struct fnet *f = n->priv;
	struct fn_listen *l = lc;

	/* The HELLO receive stays posted until cancelled: cancel it and reap. */
	if (!l->req.done) {
		fi_cancel(&f->ep->fid, &l->req);
		for (int i = 0; i < 1000 && !l->req.done; i++)
			fn_progress(f);
	}
	while (l->ans_req.c && !l->ans_req.done)
		fn_progress(f);
	if (l->req.done)
		free(l);	/* else the provider may still own it: leaked, not corrupted */
	return 0;
}

int hnet_fi_open(const char *prov, struct hnet *out)
{
	static struct fnet fnet;	/* one endpoint per process */
	struct fnet *f = &fnet;
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED, .size = 4096 };
	const char *what = NULL;
	int r;

	H_CHECK(hints, "out of memory");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->fabric_attr->prov_name = strdup(prov);
	r = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &f->info);
	fi_freeinfo(hints);
	if (r)
		FI_DIE(prov, r);
	if ((r = fic_domain_try(f->info, &cqa, &f->fabric, &f->domain, &f->av, &f->cq, &what)) ||
	    (r = fic_ep_try(f->domain, f->info, f->av, f->cq, &f->ep, &what)))
		FI_DIE(what, r);
	f->namelen = sizeof(f->name);
	if ((r = fi_getname(&f->ep->fid, f->name, &f->namelen)))
		FI_DIE("fi_getname", r);
	f->mr_local = f->info->domain_attr->mr_mode & FI_MR_LOCAL;
	f->next_id = 1;
	snprintf(f->what, sizeof(f->what), "libfabric %s", f->info->fabric_attr->prov_name);
	*out = (struct hnet){
		.what = f->what, .props = f_props, .listen = f_listen, .connect = f_connect,
		.accept = f_accept, .reg = f_reg, .dereg = f_dereg, .isend = f_isend,
		.irecv = f_irecv, .test = f_test, .close_send = f_close, .close_recv = f_close,
		.close_listen = f_close_listen, .priv = f,
	};
	return 0;
}
