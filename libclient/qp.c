// SPDX-License-Identifier: MIT
/*
 * Queue pairs: the ring region (one sealed memfd with the SQ, RQ and CQ,
 * laid out by mroc_shm_layout), the completion eventfd, and the control
 * requests that create, connect, listen on and destroy a QP; and waiting
 * for the connection event without losing the completions around it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

#define DEFAULT_DEPTH	256
#define MAX_ENTRIES	(1u << 24)	/* per ring; keeps every offset well inside 32 bits */

struct qp_sizes {
	uint32_t sq, rq, cq;
	uint32_t sq_off, rq_off, cq_off;
	uint64_t region_len;
	uint8_t mode, paths;
};

static int qp_sizes(const struct mroc_ctx *ctx, const struct mroc_qp_attr *attr,
		    struct qp_sizes *s)
{
	uint32_t sq_depth = LIBMROC_OPT(attr, sq_depth, 0) ?: DEFAULT_DEPTH;
	uint32_t rq_depth = LIBMROC_OPT(attr, rq_depth, 0) ?: DEFAULT_DEPTH;

	if (attr && !libmroc_opts_valid(attr, attr->sz, sizeof(*attr)))
		return -EINVAL;
	s->mode = LIBMROC_OPT(attr, mode, MROC_QP_METAROCE);
	s->paths = LIBMROC_OPT(attr, paths, 0);
	if ((s->mode > MROC_QP_ROCEV2 && s->mode != MROC_QP_DEFAULT) || s->paths > 16)
		return -EINVAL;
	if (sq_depth > MAX_ENTRIES || rq_depth > MAX_ENTRIES)
		return -EINVAL;
	s->sq = pow2_up(sq_depth);
	s->rq = pow2_up(rq_depth);
	/* The daemon's limits apply to the rings' sizes. */
	if ((ctx->max_sq_depth && s->sq > ctx->max_sq_depth) ||
	    (ctx->max_rq_depth && s->rq > ctx->max_rq_depth))
		return -EINVAL;
	/* Room for a completion of every posted request and a few events: never overflows. */
	s->cq = pow2_up(s->sq + s->rq + 8);
	s->region_len = mroc_shm_layout(s->sq, s->rq, s->cq, &s->sq_off, &s->rq_off, &s->cq_off);
	return 0;
}

/* Create, size, seal and map the ring region and fill in its header; returns the memfd. */
static int region_create(struct mroc_qp *qp, const struct qp_sizes *s)
{
	struct mroc_shm_hdr *hdr;
	void *base;
	int fd, err;

	fd = memfd_create("mroc-qp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, s->region_len) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
		goto err;
	base = mmap(NULL, s->region_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (base == MAP_FAILED)
		goto err;
	qp->region = base;
	qp->region_len = s->region_len;

	hdr = base;
	hdr->magic = MROC_SHM_MAGIC;
	hdr->abi_version = MROC_ABI_VERSION;
	hdr->sq_entries = s->sq;
	hdr->rq_entries = s->rq;
	hdr->cq_entries = s->cq;
	hdr->sq_off = s->sq_off;
	hdr->rq_off = s->rq_off;
	hdr->cq_off = s->cq_off;
	hdr->region_len = s->region_len;
	ring_view_init(&qp->sq, base, s->sq_off, s->sq, sizeof(struct mroc_sqe), true);
	ring_view_init(&qp->rq, base, s->rq_off, s->rq, sizeof(struct mroc_rqe), true);
	ring_view_init(&qp->cq, base, s->cq_off, s->cq, sizeof(struct mroc_cqe), false);
	return fd;
err:
	err = -errno;
	close(fd);
	return err;
}

struct mroc_qp *mroc_qp_create(struct mroc_ctx *ctx, const struct mroc_qp_attr *attr)
{
	struct mroc_msg_qp_create m = { .h.type = MROC_MSG_QP_CREATE };
	struct qp_sizes s;
	struct mroc_qp *qp;
	int fds[3], err;

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	err = qp_sizes(ctx, attr, &s);
	if (err)
		goto err;
	if (posix_memalign((void **)&qp, MROC_CACHE_LINE, sizeof(*qp))) {
		err = -ENOMEM;
		goto err;
	}
	memset(qp, 0, sizeof(*qp));
	qp->ctx = ctx;
	atomic_init(&qp->conn, LIBMROC_CONN_NONE);
	/* mroc_poll_cq cannot sleep: past the budget it yields at every empty poll. */
	libmroc_spin_init(&qp->poll_spin, ctx->spin_ns, LIBMROC_SPIN_ALWAYS);

	fds[0] = region_create(qp, &s);
	if (fds[0] < 0) {
		err = fds[0];
		goto err_free;
	}
	qp->cq_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (qp->cq_fd < 0) {
		err = -errno;
		goto err_region;
	}
	fds[1] = qp->cq_fd;
	qp->doorbell_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (qp->doorbell_fd < 0) {
		err = -errno;
		goto err_cq_fd;
	}
	fds[2] = qp->doorbell_fd;

	m.mode = s.mode;
	m.paths = s.paths;
	m.sq_entries = s.sq;
	m.rq_entries = s.rq;
	m.cq_entries = s.cq;
	m.region_len = s.region_len;
	err = libmroc_request(ctx, &m, sizeof(m), fds, 3);
	if (err)
		goto err_doorbell;
	close(fds[0]);	/* the daemon has its own reference and mapping */
	qp->qpn = m.qpn;

	pthread_mutex_lock(&ctx->list_lock);
	qp->next = ctx->qps;
	ctx->qps = qp;
	pthread_mutex_unlock(&ctx->list_lock);
	return qp;

err_doorbell:
	close(qp->doorbell_fd);
err_cq_fd:
	close(qp->cq_fd);
err_region:
	munmap(qp->region, qp->region_len);
	close(fds[0]);
err_free:
	free(qp);
err:
	errno = -err;
	return NULL;
}

int mroc_qp_destroy(struct mroc_qp *qp)
{
	struct mroc_msg_qp_destroy m = { .h.type = MROC_MSG_QP_DESTROY };
	struct mroc_ctx *ctx;
	struct mroc_qp **pp;
	int err;

	if (!qp)
		return -EINVAL;
	ctx = qp->ctx;
	pthread_mutex_lock(&ctx->list_lock);
	for (pp = &ctx->qps; *pp && *pp != qp; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = qp->next;
	pthread_mutex_unlock(&ctx->list_lock);

	m.qpn = qp->qpn;
	err = libmroc_request(ctx, &m, sizeof(m), NULL, 0);
	if (err && err != -ENOTCONN)
		pr_warn("mrocd refused to destroy QP %u: %s", qp->qpn, mroc_strerror(err));
	/* The daemon has its own mapping and fd: ours go whatever it said. */
	munmap(qp->region, qp->region_len);
	close(qp->cq_fd);
	close(qp->doorbell_fd);
	free(qp->stash);
	free(qp);
	return err;
}

void libmroc_qp_drop_all(struct mroc_ctx *ctx)
{
	for (;;) {
		struct mroc_qp *qp;

		pthread_mutex_lock(&ctx->list_lock);
		qp = ctx->qps;
		pthread_mutex_unlock(&ctx->list_lock);
		if (!qp)
			break;
		mroc_qp_destroy(qp);
	}
}

uint32_t mroc_qp_num(const struct mroc_qp *qp)
{
	return qp ? qp->qpn : 0;
}

int mroc_qp_connect(struct mroc_qp *qp, const char *addr, uint64_t service_id)
{
	struct mroc_msg_qp_connect m = { .h.type = MROC_MSG_QP_CONNECT };

	if (!qp || !addr)
		return -EINVAL;
	if (inet_pton(AF_INET, addr, m.addr) == 1)
		m.family = AF_INET;
	else if (inet_pton(AF_INET6, addr, m.addr) == 1)
		m.family = AF_INET6;
	else
		return -EINVAL;
	m.qpn = qp->qpn;
	m.service_id = service_id;
	atomic_store_explicit(&qp->conn, LIBMROC_CONN_NONE, memory_order_relaxed);
	return libmroc_request(qp->ctx, &m, sizeof(m), NULL, 0);
}

int mroc_qp_listen(struct mroc_qp *qp, uint64_t service_id)
{
	struct mroc_msg_qp_listen m = { .h.type = MROC_MSG_QP_LISTEN };

	if (!qp)
		return -EINVAL;
	m.qpn = qp->qpn;
	m.service_id = service_id;
	atomic_store_explicit(&qp->conn, LIBMROC_CONN_NONE, memory_order_relaxed);
	return libmroc_request(qp->ctx, &m, sizeof(m), NULL, 0);
}

static bool stash_push(struct mroc_qp *qp, const struct mroc_wc *wc)
{
	if (!qp->stash) {
		qp->stash = calloc(qp->cq.mask + 1, sizeof(*qp->stash));
		if (!qp->stash)
			return false;
		qp->stash_cap = qp->cq.mask + 1;
	}
	if (qp->stash_cnt == qp->stash_cap)
		return false;
	qp->stash[(qp->stash_head + qp->stash_cnt++) % qp->stash_cap] = *wc;
	return true;
}

/*
 * Take completions off the CQ until the connection event: it is consumed,
 * the others go to the stash.  Returns the connection state (0 if no event
 * yet), or a negative errno.
 */
static int take_until_event(struct mroc_qp *qp)
{
	int64_t avail = ring_cons_avail(&qp->cq);
	uint32_t i;
	int conn = LIBMROC_CONN_NONE;

	if (avail < 0)
		return avail;
	for (i = 0; i < avail && conn == LIBMROC_CONN_NONE; i++) {
		struct mroc_wc wc;

		libmroc_cqe_to_wc(qp, ring_cons_slot(&qp->cq, i), &wc);
		conn = atomic_load_explicit(&qp->conn, memory_order_relaxed);
		if (conn == LIBMROC_CONN_NONE && !stash_push(qp, &wc)) {
			ring_cons_release(&qp->cq, i);
			return -ENOBUFS;
		}
	}
	ring_cons_release(&qp->cq, i);
	return conn;
}

int mroc_qp_wait_connected(struct mroc_qp *qp, int timeout_ms)
{
	int64_t deadline = libmroc_deadline(timeout_ms);
	int conn, err;

	if (!qp)
		return -EINVAL;
	for (;;) {
		/* mroc_poll_cq may have seen the event already. */
		conn = atomic_load_explicit(&qp->conn, memory_order_relaxed);
		if (conn == LIBMROC_CONN_NONE)
			conn = take_until_event(qp);
		if (conn != LIBMROC_CONN_NONE)
			return conn == LIBMROC_CONN_UP ? 0 : conn;
		err = libmroc_cq_sleep(qp, deadline);
		if (err)
			return err;
	}
}
