// SPDX-License-Identifier: MIT
/*
 * libmroc clients, the control thread's side (see clients.h): a client's
 * messages (HELLO, regions, QPs, connect/listen) checked and turned into
 * synchronous worker calls (clients_ops.c), and a client's start and end.
 * Its memory is pinned by clients_pin.c, counted by user in clients_limits.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "clients.h"
#include "clients_priv.h"
#include "evfd.h"
#include "links.h"
#include "log.h"
#include "mroc_util.h"
#include "peers.h"
#include "services.h"
#include "steer.h"
#include "worker.h"

void *clients_open(void *ctx, int fd, const struct ucred *cred, bool admin)
{
	struct clients *cs = ctx;
	struct client *cl;

	cl = calloc(1, sizeof(*cl));
	if (cl) {
		cl->mrs_cap = cs->ctl->lim.max_mrs;
		cl->qps_cap = cs->ctl->lim.max_qps;
		cl->mrs = calloc(cl->mrs_cap, sizeof(*cl->mrs));
		cl->anchors = calloc(cl->mrs_cap, sizeof(*cl->anchors));
		cl->qps = calloc(cl->qps_cap, sizeof(*cl->qps));
	}
	if (!cl || !cl->mrs || !cl->anchors || !cl->qps) {
		if (cl) {
			free(cl->mrs);
			free(cl->anchors);
			free(cl->qps);
		}
		free(cl);
		return NULL;
	}
	cl->cs = cs;
	cl->id = cs->ctl->next_id++;
	/* 64 bits: 2^32 connections no longer bring an old domain (and its keys) back. */
	cl->pd = cs->ctl->next_pd++;
	cl->fd = fd;
	cl->pid = cred->pid;
	cl->uid = cred->uid;
	cl->admin = admin;
	cl->doorbell = -1;
	cl->widx = NOT_LISTED;
	/* Counted here, not by a worker call: a connection that never says HELLO costs the worker nothing. */
	cs->conns++;
	cs->opened++;
	pr_info_rl("client %u connected (pid %d, uid %u)", cl->id, (int)cl->pid, (unsigned)cl->uid);
	return cl;
}

/* One QP fewer binds its service: the last one's end frees the service and its steering. */
static void unbind(struct cqp *q)
{
	struct clients *cs = q->cl->cs;
	struct uid_count *u;

	if (!q->bound)
		return;
	q->bound = false;
	if (services_unref(cs->ctl->svc, q->service))
		return;
	u = clients_uid_of(cs->ctl, q->cl->uid);
	if (u)
		u->services--;
	if (cs->steer)
		steer_unlisten(cs->steer, q->service);
}

static void free_qp(struct cqp *q)
{
	unbind(q);
	if (q->region)
		clients_unpin(q->cl, q->region, q->region_len);
	if (q->cq_fd >= 0)
		close(q->cq_fd);
	if (q->doorbell >= 0)
		close(q->doorbell);
	free(q);
}

void clients_close(void *ctx, void *client)
{
	struct client *cl = client;
	struct clients *cs = cl->cs;
	struct op o = { .cl = cl };

	/* Without HELLO (a doorbell) it has nothing on the worker: no QP, region, doorbell. */
	if (cl->doorbell >= 0)
		call(cs, clients_op_client_gone, &o);
	cs->conns--;
	cs->closed++;
	for (uint32_t i = 0; i < cl->nqps; i++)
		free_qp(cl->qps[i]);
	for (uint32_t i = 0; i < cl->nmrs; i++)
		clients_unpin(cl, cl->mrs[i].map, cl->mrs[i].len);
	for (uint32_t i = 0; i < cl->nanchors; i++)
		clients_unpin(cl, cl->anchors[i].map, cl->anchors[i].len);
	if (cl->doorbell >= 0)
		close(cl->doorbell);
	pr_info_rl("client %u gone: %u QP(s), %u region(s) released", cl->id, cl->nqps, cl->nmrs);
	if (cl->counted) {
		struct uid_count *u = clients_uid_of(cs->ctl, cl->uid);

		u->qps -= cl->nqps;
		u->mrs -= cl->nmrs;
		if (!cl->admin) {
			cs->ctl->user_qps -= cl->nqps;
			cs->ctl->user_mrs -= cl->nmrs;
			cs->ctl->user_clients--;
		}
		cs->ctl->nclients--;
		clients_uid_count(cs->ctl, cl->uid, -1);
	}
	free(cl->mrs);
	free(cl->anchors);
	free(cl->qps);
	free(cl);
}

unsigned clients_worker(const void *client)
{
	return ((const struct client *)client)->cs->widx;
}

/*
 * The worker reads doorbells and signals completion channels: anything but
 * an eventfd (a full pipe, a socket) could make it wait on the client.
 */
static int not_eventfd(struct client *cl, const char *what)
{
	pr_warn_rl("client %u (pid %d): its %s is not an eventfd: refused", cl->id, (int)cl->pid,
		   what);
	return -EBADFD;
}

static int msg_hello(struct clients *cs, struct client *cl, const struct mroc_msg_hello *m,
		     int *fds, int nfds, struct mroc_msg_hello *r)
{
	int err;

	if (cl->doorbell >= 0)
		return -EALREADY;
	/*
	 * Limits count established clients only (a connection that never sends
	 * HELLO takes no slot; ctl.c cuts it).  Over one, the client is still
	 * answered, so it learns why (EUSERS), then closed.
	 */
	if (cs->ctl->nclients >= cs->ctl->lim.max_clients ||
	    clients_uid_count(cs->ctl, cl->uid, 0) >= cs->ctl->lim.max_per_uid ||
	    clients_uid_count(cs->ctl, cl->uid, 0) >=
		    clients_share(&cs->ctl->lim, cs->ctl->lim.max_clients, cl->uid)) {
		pr_warn_rl("refusing client pid %d (uid %u): %s reached", (int)cl->pid,
			   (unsigned)cl->uid, cs->ctl->nclients >= cs->ctl->lim.max_clients ?
			   "limits.max_clients" :
			   clients_uid_count(cs->ctl, cl->uid, 0) >= cs->ctl->lim.max_per_uid ?
			   "limits.max_clients_per_uid" : "its user's share (limits.uid_share_percent)");
		shutdown(cl->fd, SHUT_RD);	/* the reply still goes out; then EOF closes it */
		return -EUSERS;
	}
	if (clients_over_reserve(cs->ctl, cl, cs->ctl->user_clients, cs->ctl->lim.max_clients,
				 "clients")) {
		shutdown(cl->fd, SHUT_RD);
		return -EUSERS;
	}
	if (m->abi_version != MROC_ABI_VERSION)
		return -EPROTO;
	if (nfds != 1)
		return -EINVAL;
	if (evfd_check(fds[0]))
		return not_eventfd(cl, "doorbell");
	cl->doorbell = fds[0];
	err = call(cs, clients_op_client_hello, &(struct op){ .cl = cl });
	if (err) {
		cl->doorbell = -1;
		return err;
	}
	fds[0] = -1;
	cl->counted = true;
	cs->ctl->nclients++;
	cs->ctl->user_clients += !cl->admin;
	clients_uid_count(cs->ctl, cl->uid, +1);
	r->abi_version = MROC_ABI_VERSION;
	r->client_id = cl->id;
	r->max_qps = cl->qps_cap < cs->ctl->lim.max_qps ? cl->qps_cap : cs->ctl->lim.max_qps;
	r->max_mrs = cl->mrs_cap < cs->ctl->lim.max_mrs ? cl->mrs_cap : cs->ctl->lim.max_mrs;
	r->max_mr_bytes = cs->ctl->lim.max_mr_bytes;
	r->max_sq_depth = cs->ctl->lim.max_sq_depth;
	r->max_rq_depth = cs->ctl->lim.max_rq_depth;
	r->default_paths = cs->ctl->lim.default_paths;
	return 0;
}

static int msg_mr_reg(struct clients *cs, struct client *cl, const struct mroc_msg_mr_reg *m,
		      int *fds, int nfds, struct mroc_msg_mr_reg *r)
{
	struct op o = { .cl = cl, .len = m->len, .access = m->access };
	struct uid_count *u;
	struct stat st;
	int err;

	if (nfds != 1 || !m->len || (m->access & ~(uint32_t)ENGINE_ACCESS_ALL) ||
	    (m->flags & ~(uint32_t)MROC_MR_REG_KEEP_FILE))
		return -EINVAL;
	if (cl->nmrs >= cs->ctl->lim.max_mrs || cl->nmrs >= cl->mrs_cap ||
	    cl->mr_bytes + m->len > cs->ctl->lim.max_mr_bytes)
		return -EDQUOT;
	u = clients_uid_of(cs->ctl, cl->uid);	/* an established client's user has one */
	if (!u || u->mrs >= clients_share(&cs->ctl->lim, cs->ctl->lim.total_mrs, cl->uid))
		return clients_over_share(cs->ctl, cl, "memory regions", u ? u->mrs : 0);
	if (clients_over_reserve(cs->ctl, cl, cs->ctl->user_mrs, cs->ctl->lim.total_mrs,
				 "memory regions"))
		return -EDQUOT;
	err = clients_check_memfd(cs, cl, fds[0], m->len, &st);
	if (!err)
		err = clients_map_pinned(cs, cl, fds[0], m->len, &o.map);
	else if (err == -EALREADY)
		err = clients_map_again(cs, cl, fds[0], &st, m->len, &o.map);
	if (err)
		return err;
	err = call(cs, clients_op_mr_reg, &o);
	if (err) {
		clients_unpin(cl, o.map, m->len);
		return err;
	}
	cl->mrs[cl->nmrs++] = (struct cmr){ .lkey = o.lkey, .rkey = o.rkey, .map = o.map,
					    .len = m->len, .dev = st.st_dev, .ino = st.st_ino,
					    .keep = m->flags & MROC_MR_REG_KEEP_FILE };
	cl->mr_bytes += m->len;
	u->mrs++;
	cs->ctl->user_mrs += !cl->admin;
	o.access = 1;
	call(cs, clients_op_count_mr, &o);
	r->lkey = o.lkey;
	r->rkey = o.rkey;
	return 0;
}

static int msg_mr_dereg(struct clients *cs, struct client *cl, const struct mroc_msg_mr_dereg *m)
{
	struct op o = { .cl = cl, .lkey = m->lkey };

	for (uint32_t i = 0; i < cl->nmrs; i++) {
		struct cmr *mr = &cl->mrs[i];
		int err;

		if (mr->lkey != m->lkey)
			continue;
		err = call(cs, clients_op_mr_dereg, &o);
		if (err)
			return err;
		/* The engine no longer knows the key: nothing can touch the mapping now. */
		clients_anchor_file(cl, mr);
		clients_unpin(cl, mr->map, mr->len);
		cl->mr_bytes -= mr->len;
		clients_uid_of(cs->ctl, cl->uid)->mrs--;
		cs->ctl->user_mrs -= !cl->admin;
		*mr = cl->mrs[--cl->nmrs];
		o.access = (uint32_t)-1;
		call(cs, clients_op_count_mr, &o);
		return 0;
	}
	return -ENOENT;
}

static bool pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

/* Map (pinned) and check the ring region exactly as the library laid it out. */
static int map_rings(struct clients *cs, struct cqp *q, const struct mroc_msg_qp_create *m, int fd)
{
	uint32_t sq_off, rq_off, cq_off;
	uint64_t len = mroc_shm_layout(m->sq_entries, m->rq_entries, m->cq_entries, &sq_off,
				       &rq_off, &cq_off);
	struct mroc_shm_hdr h;
	struct stat st;
	int err;

	if (m->region_len != len)
		return -EINVAL;
	err = clients_check_memfd(cs, q->cl, fd, len, &st);
	if (err == -EALREADY)
		return clients_sealed_before(cs, q->cl);	/* rings are never shared */
	if (err)
		return err;
	/*
	 * The header read before clients_map_pinned seals the memfd, so that a region
	 * refused for it stays the client's to mend (a read allocates no page).
	 * The client can change it later as it could before: our views keep
	 * the sizes privately.
	 */
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    h.magic != MROC_SHM_MAGIC || h.abi_version != MROC_ABI_VERSION ||
	    h.sq_entries != m->sq_entries || h.rq_entries != m->rq_entries ||
	    h.cq_entries != m->cq_entries || h.sq_off != sq_off || h.rq_off != rq_off ||
	    h.cq_off != cq_off || h.region_len != len)
		return -EINVAL;
	err = clients_map_pinned(cs, q->cl, fd, len, &q->region);
	if (err)
		return err;
	q->region_len = len;
	/* Our views keep the sizes privately; indices start where the region says. */
	ring_view_init(&q->sq, q->region, sq_off, m->sq_entries, sizeof(struct mroc_sqe), false);
	ring_view_init(&q->rq, q->region, rq_off, m->rq_entries, sizeof(struct mroc_rqe), false);
	ring_view_init(&q->cq, q->region, cq_off, m->cq_entries, sizeof(struct mroc_cqe), true);
	q->cq_entries = m->cq_entries;
	return 0;
}

/*
 * The most CQ entries a QP may ask for: room for the largest send and
 * receive queues and the events, rounded up to a power of two (#24 item
 * 10: unbounded, each QP could make mrocd map 64 GiB).
 */
static uint32_t cq_max(const struct clients_limits *lim)
{
	uint64_t want = (uint64_t)lim->max_sq_depth + lim->max_rq_depth + CQ_EVENT_ROOM, n = 1;

	while (n < want)
		n <<= 1;
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* The engine's send queue of a QP of sq_entries: its limit (sq + reads <= 1024) may be lower. */
static uint32_t engine_sq_depth(uint32_t sq_entries)
{
	return sq_entries < 1008 ? sq_entries : 1008;
}

/*
 * The RECV and completion entries a QP may hold are mrocd's memory, not
 * the client's: the engine's receive queue grows to rq_entries (32 bytes an
 * entry, as the ring's struct mroc_rqe) and its completion queue to room
 * for every send and receive WR and 8 events, a power of two
 * (engine/qp.c qp_create: 2,048 entries for 1,008 sends and 1,024 RECVs),
 * and one client could hold max_qps of the deepest ones (256 QPs of 65,536
 * RECVs: 512 MiB, and 768 MiB more of CQ, which was not charged).  Both
 * are charged to the client's budget of registered bytes
 * (limits.max_mr_bytes_per_client, with its regions) until the QP goes.
 */
static uint64_t qp_bytes(uint32_t sq_entries, uint32_t rq_entries)
{
	return (uint64_t)rq_entries * sizeof(struct mroc_rqe) +
	       (uint64_t)pow2_up(engine_sq_depth(sq_entries) + rq_entries + 8) *
	       sizeof(struct engine_cqe);
}

static int over_mr_bytes(struct clients *cs, struct client *cl, const struct mroc_msg_qp_create *m)
{
	pr_warn_rl("client %u (pid %d): QP_CREATE with %u send and %u RECV entries (%llu bytes "
		   "of mrocd's memory for RECVs and completions) refused: its regions and "
		   "queues hold %llu bytes, limits.max_mr_bytes_per_client is %llu", cl->id,
		   (int)cl->pid, m->sq_entries, m->rq_entries,
		   (unsigned long long)qp_bytes(m->sq_entries, m->rq_entries),
		   (unsigned long long)cl->mr_bytes, (unsigned long long)cs->ctl->lim.max_mr_bytes);
	return -EDQUOT;
}

static int msg_qp_create(struct clients *cs, struct client *cl, const struct mroc_msg_qp_create *m,
			 int *fds, int nfds, struct mroc_msg_qp_create *r)
{
	struct op o = { .cl = cl };
	struct uid_count *u;
	struct cqp *q;
	int err;

	if (nfds != 3 || (m->mode > MROC_QP_ROCEV2 && m->mode != MROC_QP_DEFAULT) ||
	    m->paths > MROC_MAX_PATHS ||
	    !pow2(m->sq_entries) || !pow2(m->rq_entries) || !pow2(m->cq_entries) ||
	    m->sq_entries > cs->ctl->lim.max_sq_depth || m->rq_entries > cs->ctl->lim.max_rq_depth ||
	    (uint64_t)m->cq_entries < (uint64_t)m->sq_entries + m->rq_entries + CQ_EVENT_ROOM ||
	    m->cq_entries > cq_max(&cs->ctl->lim))
		return -EINVAL;
	if (cl->nqps >= cs->ctl->lim.max_qps || cl->nqps >= cl->qps_cap)
		return -EDQUOT;
	if (cl->mr_bytes + qp_bytes(m->sq_entries, m->rq_entries) > cs->ctl->lim.max_mr_bytes)
		return over_mr_bytes(cs, cl, m);
	u = clients_uid_of(cs->ctl, cl->uid);
	if (!u || u->qps >= clients_share(&cs->ctl->lim, cs->max_total_qps, cl->uid))
		return clients_over_share(cs->ctl, cl, "QPs", u ? u->qps : 0);
	if (clients_over_reserve(cs->ctl, cl, cs->ctl->user_qps, cs->max_total_qps, "QPs"))
		return -EDQUOT;
	if (evfd_check(fds[1]))
		return not_eventfd(cl, "completion channel");
	if (evfd_check(fds[2]))
		return not_eventfd(cl, "QP doorbell");
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->cl = cl;
	q->cq_fd = -1;
	q->doorbell = -1;
	err = map_rings(cs, q, m, fds[0]);
	if (err) {
		free_qp(q);
		return err;
	}
	q->cq_fd = fds[1];
	fds[1] = -1;
	q->doorbell = fds[2];
	fds[2] = -1;
	o.q = q;
	o.attr = (struct engine_qp_attr){
		.pd = cl->pd,
		.mode = m->mode == MROC_QP_DEFAULT ? cs->ctl->lim.default_mode : m->mode,
		.npaths = m->paths ? m->paths : (uint8_t)cs->ctl->lim.default_paths,
		.sq_depth = engine_sq_depth(m->sq_entries),
		.rq_depth = m->rq_entries,
	};
	err = call(cs, clients_op_qp_create, &o);
	if (err) {
		free_qp(q);
		return err;
	}
	cl->qps[cl->nqps++] = q;
	q->rq_bytes = qp_bytes(m->sq_entries, m->rq_entries);
	cl->mr_bytes += q->rq_bytes;
	u->qps++;
	cs->ctl->user_qps += !cl->admin;
	r->qpn = q->qpn;
	return 0;
}

/* This client's QP qpn (control thread), or NULL. */
static struct cqp *find_qp(struct client *cl, uint32_t qpn)
{
	for (uint32_t i = 0; i < cl->nqps; i++)
		if (cl->qps[i]->qpn == qpn)
			return cl->qps[i];
	return NULL;
}

static int msg_qp_destroy(struct clients *cs, struct client *cl, uint32_t qpn)
{
	struct op o = { .cl = cl, .qpn = qpn };

	for (uint32_t i = 0; i < cl->nqps; i++) {
		int err;

		if (cl->qps[i]->qpn != qpn)
			continue;
		err = call(cs, clients_op_qp_destroy, &o);
		if (err && err != -ENOENT)
			return err;
		/* The worker dropped it from its list: the mapping is ours to undo. */
		cl->mr_bytes -= cl->qps[i]->rq_bytes;
		free_qp(cl->qps[i]);
		cl->qps[i] = cl->qps[--cl->nqps];
		clients_uid_of(cs->ctl, cl->uid)->qps--;
		cs->ctl->user_qps -= !cl->admin;
		return 0;
	}
	return -ENOENT;
}

/*
 * Why a client may not connect to a, or NULL: only unicast peers, loopback
 * only where the operator allows it (network.allow_loopback).  IPv4-mapped
 * IPv6 addresses are judged as the IPv4 address they carry.
 */
static const char *not_unicast(const struct mroc_addr *a, bool loopback_ok)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	const uint8_t *b = a->bytes;

	if (a->family == AF_INET6 && !memcmp(b, mapped, sizeof(mapped)))
		b += 12;
	else if (a->family == AF_INET6) {
		static const uint8_t zero[16], one[16] = { [15] = 1 };

		if (!memcmp(b, zero, 16))
			return "unspecified address";
		if (b[0] == 0xff)
			return "multicast address";
		if (!memcmp(b, one, 16))
			return loopback_ok ? NULL : "loopback (network.allow_loopback is false)";
		return NULL;
	}
	if (b[0] == 0)
		return "unspecified address";
	if (b[0] == 255 && b[1] == 255 && b[2] == 255 && b[3] == 255)
		return "broadcast address";
	if (b[0] >= 224 && b[0] <= 239)
		return "multicast address";
	if (b[0] == 127)
		return loopback_ok ? NULL : "loopback (network.allow_loopback is false)";
	return NULL;
}

static int msg_qp_connect(struct clients *cs, struct client *cl,
			  const struct mroc_msg_qp_connect *m)
{
	struct op o = { .cl = cl, .qpn = m->qpn, .service_id = m->service_id };
	const char *why;
	struct cqp *q;
	int err;

	if (m->family != AF_INET && m->family != AF_INET6)
		return -EAFNOSUPPORT;
	o.addr.family = (int)m->family;
	memcpy(o.addr.bytes, m->addr, m->family == AF_INET ? 4 : 16);
	why = not_unicast(&o.addr, cs->ctl->lim.allow_loopback);
	if (why) {
		char buf[MROC_ADDR_STRLEN];

		pr_warn_rl("client %u (pid %d): QP_CONNECT to %s refused: %s", cl->id, (int)cl->pid,
			   addr_str(&o.addr, buf, sizeof(buf)), why);
		return -EADDRNOTAVAIL;
	}
	err = call(cs, clients_op_qp_connect, &o);
	if (err == -EDQUOT)
		clients_over_share(cs->ctl, cl, "peers in use (of its worker's table)",
				   clients_share(&cs->ctl->lim, peers_max(cs->peers), cl->uid));
	q = err ? NULL : find_qp(cl, m->qpn);
	if (q)
		unbind(q);	/* no longer one of the service's listeners */
	return err;
}

/*
 * rdma_cm's rule (#24 item 8): a service id belongs to the client whose QP
 * listened on it first; another client's LISTEN gets EADDRINUSE until every
 * QP of the owner that listened on it is destroyed (or connects elsewhere),
 * or the owner goes.  With several workers the owner's worker gets the
 * service's CONNECT_REQs (steer.h), set only for a LISTEN that succeeds
 * and freed with the binding.
 */
static int msg_qp_listen(struct clients *cs, struct client *cl,
			 const struct mroc_msg_qp_listen *m)
{
	struct op o = { .cl = cl, .qpn = m->qpn, .service_id = m->service_id };
	struct cqp *q = find_qp(cl, m->qpn);
	struct services *svc = cs->ctl->svc;
	struct uid_count *u;
	bool fresh, steered;
	int err;

	if (!q)
		return -ENOENT;
	if (mrocd_service_reserved(m->service_id))
		return clients_reserved(cl, "listen on", m->service_id);
	if (q->bound && q->service == m->service_id)
		return call(cs, clients_op_qp_listen, &o);
	fresh = !services_owner(svc, m->service_id);
	/*
	 * With several workers each service takes a slot of the one steering
	 * table (STEER_SLOTS): a user's share of it, or one user's listeners
	 * filled it and every other LISTEN got ENOSPC.
	 */
	u = clients_uid_of(cs->ctl, cl->uid);
	if (fresh && cs->steer && u &&
	    u->services >= clients_share(&cs->ctl->lim, STEER_SLOTS, cl->uid))
		return clients_over_share(cs->ctl, cl,
					  "services listened on (of the steering table)",
					  u->services);
	err = services_ref(svc, m->service_id, cl);
	if (err == -EADDRINUSE) {
		struct client *owner = services_owner(svc, m->service_id);

		pr_warn_rl("client %u (pid %d, uid %u): LISTEN on %#llx refused: client %u "
			   "(pid %d) listens on it", cl->id, (int)cl->pid, (unsigned)cl->uid,
			   (unsigned long long)m->service_id, owner->id, (int)owner->pid);
		cs->ctl->listen_refused++;
	}
	if (err)
		return err;
	/* Connection requests for it, on whichever worker's socket, come here. */
	steered = fresh && cs->steer;
	err = steered ? steer_listen(cs->steer, m->service_id, cs->widx) : 0;
	if (err)
		steered = false;
	else
		err = call(cs, clients_op_qp_listen, &o);
	if (err) {
		if (!services_unref(svc, m->service_id) && steered)
			steer_unlisten(cs->steer, m->service_id);
		return err;
	}
	unbind(q);	/* it listened on another service before */
	q->bound = true;
	q->service = m->service_id;
	if (fresh && u)
		u->services++;
	return 0;
}

/*
 * A client's request budget (limits.ctl_rate_per_client, ctl_burst_per_client):
 * most control requests are a synchronous call into the worker, which stops
 * the data path of every client of that worker while it runs, and the
 * control thread is everyone's.  Unbounded, one client's loop of QP_LISTENs
 * made 24,700 worker calls a second (test_tenant_flood.sh).  A generic cell
 * rate algorithm: ctl_tat is when the budget is whole again, each request
 * moves it 1 s / rate later (from now if it was past); the next request may
 * come while ctl_tat is at most (burst - 1) intervals ahead.  Over it the
 * client is not refused (libmroc would hand EAGAIN to an application that
 * cannot know to retry) but read later: ctl.c waits clients_wait_ns before
 * its next message, and the client's own call waits for its reply.
 *
 * A new client would start with a whole budget: a loop of connect, HELLO,
 * hang up (two worker calls a client: its HELLO, its end) had no bound.  So
 * what a client sends before its HELLO is accepted, HELLO included, is
 * charged to one budget of its user's (the same rate and burst), and ctl.c
 * reads a new client's first message when that budget allows.
 */
static void ctl_charge(struct clients *ctl, uint64_t *tat)
{
	uint64_t now = mrocd_now_ns();

	if (!ctl->lim.ctl_rate)
		return;
	*tat = (*tat > now ? *tat : now) + 1000000000ULL / ctl->lim.ctl_rate;
}

/*
 * uid's HELLO budget: its entry among HELLO_PROBE of the table, or the one
 * of them that is whole the longest (an expired budget is a fresh one).
 * The newcomer takes over what that entry still owed: a user with more uids
 * than HELLO_PROBE (subordinate uids) pushed its own spent entries out and
 * came back with whole budgets, as many times as it liked.  So the entries
 * of a probe window together never grant more than their budgets; a user
 * pushed out by another's spent entry waits at most that entry's burst.
 */
static uint64_t *hello_tat(struct clients *ctl, uid_t uid)
{
	struct hello_budget *pick = NULL;

	for (uint32_t i = 0; i < HELLO_PROBE; i++) {
		struct hello_budget *e = &ctl->hellos[(uid + i) % HELLO_SLOTS];

		if (e->used && e->uid == uid)
			return &e->tat;
		if (!pick || !e->used || (pick->used && e->tat < pick->tat))
			pick = e;
	}
	*pick = (struct hello_budget){ .uid = uid, .used = true,
				       .tat = pick->used ? pick->tat : 0 };
	return &pick->tat;
}

uint64_t clients_wait_ns(void *client)
{
	struct client *cl = client;
	struct clients *ctl = cl->cs->ctl;
	uint64_t now = mrocd_now_ns(), interval, ahead, tat;

	if (!ctl->lim.ctl_rate)
		return 0;
	interval = 1000000000ULL / ctl->lim.ctl_rate;
	ahead = (uint64_t)(ctl->lim.ctl_burst ? ctl->lim.ctl_burst - 1 : 0) * interval;
	tat = cl->doorbell >= 0 ? cl->ctl_tat : *hello_tat(ctl, cl->uid);
	if (tat <= now + ahead)
		return 0;
	ctl->ctl_deferred++;
	return tat - ahead - now;
}

static const size_t msg_size[] = {
	[MROC_MSG_HELLO] = sizeof(struct mroc_msg_hello),
	[MROC_MSG_MR_REG] = sizeof(struct mroc_msg_mr_reg),
	[MROC_MSG_MR_DEREG] = sizeof(struct mroc_msg_mr_dereg),
	[MROC_MSG_QP_CREATE] = sizeof(struct mroc_msg_qp_create),
	[MROC_MSG_QP_CONNECT] = sizeof(struct mroc_msg_qp_connect),
	[MROC_MSG_QP_LISTEN] = sizeof(struct mroc_msg_qp_listen),
	[MROC_MSG_QP_DESTROY] = sizeof(struct mroc_msg_qp_destroy),
};

bool clients_msg(void *ctx, void *client, const void *msg, size_t len, int *fds, int nfds,
		 void *reply, size_t *reply_len)
{
	struct client *cl = client;
	struct clients *cs = cl->cs;
	union {
		struct mroc_msg_hdr h;
		uint8_t b[MROC_MSG_MAX];
	} in = { 0 };
	struct mroc_msg_hdr *out = reply;
	int err;

	memset(reply, 0, *reply_len < MROC_MSG_MAX ? *reply_len : MROC_MSG_MAX);
	/* Every message, good or bad: the client's own budget after HELLO, its user's before. */
	ctl_charge(cs->ctl, cl->doorbell >= 0 ? &cl->ctl_tat : hello_tat(cs->ctl, cl->uid));
	if (len < sizeof(in.h) || len > sizeof(in)) {
		err = -EBADMSG;
		len = sizeof(in.h);
		goto done;
	}
	memcpy(&in, msg, len);	/* aligned, and the client cannot change it under us */
	*out = in.h;
	if (in.h.type == 0 || in.h.type >= sizeof(msg_size) / sizeof(msg_size[0]) ||
	    len != msg_size[in.h.type] || in.h.len != len) {
		err = -EBADMSG;
		goto done;
	}
	if (in.h.type != MROC_MSG_HELLO && cl->doorbell < 0) {
		err = -EPROTO;	/* HELLO first */
		goto done;
	}
	switch (in.h.type) {
	case MROC_MSG_HELLO:
		err = msg_hello(cs, cl, (void *)&in, fds, nfds, reply);
		break;
	case MROC_MSG_MR_REG:
		err = msg_mr_reg(cs, cl, (void *)&in, fds, nfds, reply);
		break;
	case MROC_MSG_MR_DEREG:
		err = msg_mr_dereg(cs, cl, (void *)&in);
		break;
	case MROC_MSG_QP_CREATE:
		err = msg_qp_create(cs, cl, (void *)&in, fds, nfds, reply);
		break;
	case MROC_MSG_QP_CONNECT:
		err = msg_qp_connect(cs, cl, (void *)&in);
		break;
	case MROC_MSG_QP_LISTEN:
		err = msg_qp_listen(cs, cl, (void *)&in);
		break;
	default: /* MROC_MSG_QP_DESTROY */
		err = msg_qp_destroy(cs, cl, ((const struct mroc_msg_qp_destroy *)&in)->qpn);
		break;
	}
done:
	/* fds a handler did not keep are closed: nothing leaks from a bad message. */
	for (int i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	out->status = err;
	out->len = (uint32_t)len;
	*reply_len = len;
	return cl->doorbell >= 0;
}
