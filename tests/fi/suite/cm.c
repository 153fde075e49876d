// SPDX-License-Identifier: MIT
/*
 * fi_suite: cm_data: MSG endpoints, CM private data on connect, accept and reject
 * (fabtests' fi_cm_data), the server waiting on its EQ's fd.
 */
#include "suite.h"

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

/*
 * A FI_CONNREQ's fi_info used again once its request was rejected, or accepted and
 * its endpoint closed: fi_accept is -FI_EINVAL (the handle named a connection freed).
 */
static void accept_stale(struct msgfab *m, struct fi_info *info, const char *what)
{
	struct fid_ep *ep;
	int r;

	CHECK(fi_endpoint(m->domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &m->eq->fid, 0));
	CHECK(fi_ep_bind(ep, &m->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(ep));
	r = fi_accept(ep, NULL, 0);
	if (r != -FI_EINVAL)
		die("fi_accept of a request %s: %d, not -FI_EINVAL", what, r);
	CHECK(fi_close(&ep->fid));
	fi_freeinfo(info);
}

static void cm_server_round(struct msgfab *m, size_t n, uint64_t seed)
{
	struct fi_info *info = msg_connreq(m, n, seed), *rejected, *accepted;
	ssize_t r;

	EXPECT_ERR(fi_reject(m->pep, info->handle, m->data, m->cm_max + 1), -FI_EINVAL);
	fill(m->data, n, seed + 1);
	CHECK(fi_reject(m->pep, info->handle, m->data, n));
	EXPECT_ERR(fi_reject(m->pep, info->handle, m->data, n), -FI_ENOENT);
	rejected = fi_dupinfo(info);
	fi_freeinfo(info);

	info = msg_connreq(m, n, seed + 2);
	msg_ep(m, info);
	EXPECT_ERR(fi_accept(m->ep, m->data, m->cm_max + 1), -FI_EINVAL);
	fill(m->data, n, seed + 3);
	CHECK(fi_accept(m->ep, m->data, n));
	accepted = fi_dupinfo(info);
	fi_freeinfo(info);
	/* Ours has no data: fi_accept's goes to the client. */
	r = msg_event(m, FI_CONNECTED, sizeof(*m->entry) + m->cm_max);
	if (r != sizeof(*m->entry) || m->entry->fid != &m->ep->fid)
		die("the server's FI_CONNECTED: %zd bytes, not %zu", r, sizeof(*m->entry));
	msg_talk(m, seed + 4);
	msg_shutdown(m);
	if (!rejected || !accepted)
		die("fi_dupinfo");
	accept_stale(m, rejected, "rejected before");
	accept_stale(m, accepted, "accepted before, its endpoint closed");
}

/*
 * own: where the reject's err_data goes: 0 the provider's buffer, 1 ours (its
 * size on input), 2 a size on input but no buffer (the provider's: it wrote
 * to NULL).
 */
static void cm_client_round(struct msgfab *m, const void *name, size_t n, uint64_t seed,
			    int own)
{
	bool own_buf = own == 1;
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
	}
	if (own)
		ee.err_data_size = sizeof(mine);
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
 * Events in the order they happened: a client that saw FI_CONNECTED connects its next
 * endpoint at once (fabtests' fi_multi_ep -e msg), so the server's FI_CONNECTED of the
 * first (its accept's HELLO delivered) comes before the second's FI_CONNREQ, even when
 * both were there by the server's next look (it looks only after the client connected
 * again and that request had time to come: the order must not depend on when it looks).
 */
static void cm_order_server(struct msgfab *m, int oob)
{
	struct fid_ep *first;
	struct fi_info *info = msg_connreq(m, 0, 0);

	msg_ep(m, info);
	CHECK(fi_accept(m->ep, NULL, 0));
	fi_freeinfo(info);
	first = m->ep;
	oob_sync(oob);		/* the client has FI_CONNECTED and connects again */
	usleep(300 * 1000);	/* its request comes meanwhile; nothing here looks */
	if (msg_event(m, FI_CONNECTED, sizeof(*m->entry)) != sizeof(*m->entry) ||
	    m->entry->fid != &first->fid)
		die("cm order: the first endpoint's FI_CONNECTED is not the next event");
	info = msg_connreq(m, 0, 0);
	msg_ep(m, info);
	CHECK(fi_accept(m->ep, NULL, 0));
	fi_freeinfo(info);
	if (msg_event(m, FI_CONNECTED, sizeof(*m->entry)) != sizeof(*m->entry) ||
	    m->entry->fid != &m->ep->fid)
		die("cm order: the second endpoint's FI_CONNECTED");
	oob_sync(oob);
	CHECK(fi_close(&m->ep->fid));
	CHECK(fi_close(&first->fid));
	m->ep = NULL;
}

static void cm_order_client(struct msgfab *m, const void *name, int oob)
{
	struct fid_ep *first;

	msg_ep(m, m->info);
	CHECK(fi_connect(m->ep, name, NULL, 0));
	if (msg_event(m, FI_CONNECTED, sizeof(*m->entry) + m->cm_max) < 0)
		die("cm order: the first fi_connect");
	first = m->ep;
	msg_ep(m, m->info);
	CHECK(fi_connect(m->ep, name, NULL, 0));
	oob_sync(oob);
	if (msg_event(m, FI_CONNECTED, sizeof(*m->entry) + m->cm_max) < 0 ||
	    m->entry->fid != &m->ep->fid)
		die("cm order: the second fi_connect");
	oob_sync(oob);
	CHECK(fi_close(&m->ep->fid));
	CHECK(fi_close(&first->fid));
	m->ep = NULL;
}

/*
 * fi_connect, fi_accept and fi_reject each with 0, 1, 100 and FI_OPT_CM_DATA_SIZE
 * bytes of private data, each arriving byte for byte (FI_CONNREQ, FI_CONNECTED,
 * the reject's err_data, in the provider's buffer and in ours, and in the
 * provider's when a size comes without a buffer); one byte more
 * refused (-FI_EINVAL) by all three; every accepted connection carries a message.
 */
void t_cm_data(void)
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
			cm_client_round(&m, theirs + 8, lens[i], (uint64_t)i << 8,
					i & 1 ? 1 : i ? 2 : 0);
		printf("cm_data: %zu bytes: rejected and accepted\n", lens[i]);
		oob_sync(oob);
	}
	printf("ok: cm_data: connect, accept and reject with 0, 1, 100 and %zu bytes, each "
	       "checked; %zu refused\n", m.cm_max, m.cm_max + 1);
	if (srv)
		cm_order_server(&m, oob);
	else
		cm_order_client(&m, theirs + 8, oob);
	printf("ok: cm_data: a client's second connect right after its FI_CONNECTED: the "
	       "server's FI_CONNECTED of the first came first\n");
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
