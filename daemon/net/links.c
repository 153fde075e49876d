// SPDX-License-Identifier: MIT
/* Daemon-to-daemon control connections (see links.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "links.h"
#include "log.h"
#include "peers.h"

#define BACKOFF_MIN_NS	(500ULL * 1000 * 1000)
#define BACKOFF_MAX_NS	(30ULL * 1000 * 1000 * 1000)

struct link {
	struct link_info info;
	bool used;
	uint32_t peer;			/* incoming: its peer's handle */
	uint64_t retry_at;
	uint64_t backoff;
};

struct links {
	struct engine *eng;
	struct peers *peers;
	uint8_t npaths, mode;		/* links_set_qp_defaults */
	uint32_t listen_qpn;		/* 0 = none yet */
	uint64_t listen_retry_at;
	struct link l[LINKS_MAX];	/* outgoing ones first, in config order */
	unsigned nout;
	struct links_stats st;
};

static int new_qp(struct links *ls, uint32_t *qpn)
{
	struct engine_qp_attr a = {
		.pd = 0,
		.mode = ls->mode,
		.npaths = ls->mode == MROC_MODE_ROCEV2 ? 1 : ls->npaths,
		.sq_depth = 16,
		.rq_depth = 16,
		.user = MROCD_SERVICE_CONTROL,
	};

	return engine_qp_create(ls->eng, &a, qpn);
}

struct links *links_create(struct engine *eng, struct peers *peers, const struct mroc_addr *addrs,
			   unsigned n)
{
	struct links *ls;

	if (n > LINKS_MAX / 2)
		return NULL;
	ls = calloc(1, sizeof(*ls));
	if (!ls)
		return NULL;
	ls->eng = eng;
	ls->peers = peers;
	ls->npaths = 1;
	for (unsigned i = 0; i < n; i++) {
		ls->l[i].used = true;
		ls->l[i].info.addr = addrs[i];
		ls->l[i].info.outgoing = true;
		ls->l[i].backoff = BACKOFF_MIN_NS;
	}
	ls->nout = n;
	return ls;
}

void links_set_qp_defaults(struct links *ls, uint8_t npaths, uint8_t mode)
{
	ls->npaths = npaths;
	ls->mode = mode;
}

void links_destroy(struct links *ls)
{
	free(ls);
}

static void listen_again(struct links *ls, uint64_t now)
{
	int err;

	if (ls->listen_qpn || now < ls->listen_retry_at)
		return;
	err = new_qp(ls, &ls->listen_qpn);
	if (!err)
		err = engine_qp_listen(ls->eng, ls->listen_qpn, MROCD_SERVICE_CONTROL);
	if (err) {
		if (ls->listen_qpn)
			engine_qp_destroy(ls->eng, ls->listen_qpn);
		ls->listen_qpn = 0;
		ls->listen_retry_at = now + BACKOFF_MIN_NS;
		pr_warn_rl("links: cannot listen for control connections: %s", strerror(-err));
	}
}

static void connect_one(struct links *ls, struct link *k, uint64_t now)
{
	char a[MROC_ADDR_STRLEN];
	uint32_t peer;
	int err;

	err = peers_get_handle(ls->peers, &k->info.addr, &peer);
	if (!err)
		err = new_qp(ls, &k->info.qpn);
	if (!err) {
		err = engine_qp_connect(ls->eng, k->info.qpn, peer, MROCD_SERVICE_CONTROL, now);
		if (err)
			engine_qp_destroy(ls->eng, k->info.qpn);
	}
	if (err) {
		k->info.qpn = 0;
		k->retry_at = now + k->backoff;
		pr_warn_rl("links: connecting to %s: %s", addr_str(&k->info.addr, a, sizeof(a)),
			   strerror(-err));
		return;
	}
	k->info.state = LINK_CONNECTING;
}

uint64_t links_tick(struct links *ls, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	listen_again(ls, now);
	if (!ls->listen_qpn && ls->listen_retry_at < next)
		next = ls->listen_retry_at;
	for (unsigned i = 0; i < ls->nout; i++) {
		struct link *k = &ls->l[i];

		if (k->info.state != LINK_IDLE)
			continue;
		if (now >= k->retry_at)
			connect_one(ls, k, now);
		else if (k->retry_at < next)
			next = k->retry_at;
	}
	return next;
}

static struct link *by_qpn(struct links *ls, uint32_t qpn)
{
	for (unsigned i = 0; i < LINKS_MAX; i++)
		if (ls->l[i].used && ls->l[i].info.qpn == qpn && qpn)
			return &ls->l[i];
	return NULL;
}

/* Incoming links of peer, and the oldest of them (NULL if none). */
static unsigned incoming_of(struct links *ls, uint32_t peer, struct link **oldest)
{
	unsigned n = 0;

	*oldest = NULL;
	for (unsigned i = ls->nout; i < LINKS_MAX; i++) {
		struct link *k = &ls->l[i];

		if (!k->used || k->peer != peer)
			continue;
		n++;
		if (!*oldest || k->info.up_since_ns < (*oldest)->info.up_since_ns)
			*oldest = k;
	}
	return n;
}

/* Is a one of the peers our config names (an outgoing link's)? */
static bool named(const struct links *ls, const struct mroc_addr *a)
{
	for (unsigned i = 0; a && i < ls->nout; i++)
		if (addr_eq(&ls->l[i].info.addr, a))
			return true;
	return false;
}

/*
 * All incoming slots taken: whose gives way to a link from peer (at addr,
 * its primary address).  Any host that completes a handshake gets an
 * incoming link ("none", "token"), so first come first served let one host
 * hold them all, and no daemon that names us could link any more.  A peer
 * that holds links already gives its own oldest (a restarted daemon's new
 * link replaces its old); a new peer takes the oldest of the peer that
 * holds the most, if that is more than one; when every link is a different
 * peer's, a peer our config names (every daemon of a job names the others)
 * takes the oldest link of one it does not name: as many hosts as slots,
 * each linking once, filled them and kept the job's own daemons out.  Else
 * the newcomer is refused.  So a host holds as many slots as nobody else
 * asks for, distinct hosts up to the table's size always link, and the
 * peers we name always do.
 */
static struct link *give_way(struct links *ls, uint32_t peer, const struct mroc_addr *addr)
{
	struct link *victim = NULL, *old;
	unsigned most = 1, n;

	if (incoming_of(ls, peer, &old))
		return old;
	for (unsigned i = ls->nout; i < LINKS_MAX; i++) {
		if (!ls->l[i].used)
			continue;
		n = incoming_of(ls, ls->l[i].peer, &old);
		if (n > most) {
			most = n;
			victim = old;
		}
	}
	if (victim || !named(ls, addr))
		return victim;
	for (unsigned i = ls->nout; i < LINKS_MAX; i++) {
		struct link *k = &ls->l[i];

		if (k->used && !named(ls, &k->info.addr) &&
		    (!victim || k->info.up_since_ns < victim->info.up_since_ns))
			victim = k;
	}
	return victim;
}

static void close_incoming(struct links *ls, struct link *k, uint64_t now)
{
	engine_qp_disconnect(ls->eng, k->info.qpn, now);
	engine_qp_destroy(ls->eng, k->info.qpn);
	k->used = false;
}

/* The listener got a peer: it becomes an incoming link, and we listen anew. */
static void accepted(struct links *ls, uint64_t now)
{
	char a[MROC_ADDR_STRLEN], b[MROC_ADDR_STRLEN];
	struct engine_qp_info qi;
	struct link *k = NULL;
	uint32_t qpn = ls->listen_qpn;
	struct peer *p;

	ls->listen_qpn = 0;
	if (engine_qp_info(ls->eng, qpn, &qi)) {
		engine_qp_destroy(ls->eng, qpn);
		listen_again(ls, now);
		return;
	}
	p = peers_get(ls->peers, qi.peer);
	for (unsigned i = ls->nout; i < LINKS_MAX && !k; i++)
		if (!ls->l[i].used)
			k = &ls->l[i];
	if (!k) {
		k = give_way(ls, qi.peer, p ? &p->addr : NULL);
		if (k) {
			ls->st.in_evicted++;
			pr_warn_rl("links: incoming control links full: %s's link (qpn %u) gives way "
				   "to one from %s", addr_str(&k->info.addr, a, sizeof(a)),
				   k->info.qpn, p ? addr_str(&p->addr, b, sizeof(b)) : "?");
			close_incoming(ls, k, now);
		}
	}
	if (!k) {
		ls->st.in_refused++;
		pr_warn_rl("links: all %u incoming control links are distinct peers'; refusing "
			   "one from %s, which the config does not name", LINKS_MAX - ls->nout,
			   p ? addr_str(&p->addr, b, sizeof(b)) : "?");
		engine_qp_disconnect(ls->eng, qpn, now);
		engine_qp_destroy(ls->eng, qpn);
	} else {
		ls->st.in_accepted++;
		*k = (struct link){ .used = true, .peer = qi.peer };
		if (p)
			k->info.addr = p->addr;
		k->info.qpn = qpn;
		k->info.state = LINK_UP;
		k->info.connects = 1;
		k->info.up_since_ns = now;
	}
	listen_again(ls, now);
}

static void went_down(struct links *ls, struct link *k, const struct engine_cqe *c, uint64_t now)
{
	char a[MROC_ADDR_STRLEN];

	if (k->info.state == LINK_UP)
		pr_info_rl("links: control connection to %s lost (status %u)",
			   addr_str(&k->info.addr, a, sizeof(a)), c->status);
	engine_qp_destroy(ls->eng, k->info.qpn);
	k->info.qpn = 0;
	k->info.failures++;
	if (!k->info.outgoing) {
		k->used = false;
		return;
	}
	k->info.state = LINK_IDLE;
	k->retry_at = now + k->backoff;
	k->backoff = k->backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : k->backoff * 2;
}

bool links_on_cqe(struct links *ls, const struct engine_cqe *c, uint64_t now)
{
	char a[MROC_ADDR_STRLEN];
	struct link *k;

	if (c->qpn == ls->listen_qpn && ls->listen_qpn) {
		if (c->opcode == ENGINE_WC_EV_CONNECTED) {
			accepted(ls, now);
		} else if (c->opcode == ENGINE_WC_EV_ERROR) {
			engine_qp_destroy(ls->eng, ls->listen_qpn);
			ls->listen_qpn = 0;
		}
		return true;
	}
	k = by_qpn(ls, c->qpn);
	if (!k)
		return false;
	switch (c->opcode) {
	case ENGINE_WC_EV_CONNECTED:
		k->info.state = LINK_UP;
		k->info.connects++;
		k->info.up_since_ns = now;
		k->backoff = BACKOFF_MIN_NS;
		pr_info_rl("links: control connection to %s is up (qpn %u)",
			   addr_str(&k->info.addr, a, sizeof(a)), c->qpn);
		break;
	case ENGINE_WC_EV_ERROR:
	case ENGINE_WC_EV_DISCONNECTED:
		went_down(ls, k, c, now);
		break;
	default:
		break;	/* no work is posted on control QPs */
	}
	return true;
}

void links_get_stats(const struct links *ls, struct links_stats *out)
{
	*out = ls->st;
}

int links_info(const struct links *ls, struct link_info *out, int max)
{
	int n = 0;

	for (unsigned i = 0; i < LINKS_MAX && n < max; i++)
		if (ls->l[i].used)
			out[n++] = ls->l[i].info;
	return n;
}

void links_close_all(struct links *ls, uint64_t now)
{
	for (unsigned i = 0; i < LINKS_MAX; i++)
		if (ls->l[i].used && ls->l[i].info.qpn)
			engine_qp_disconnect(ls->eng, ls->l[i].info.qpn, now);
	if (ls->listen_qpn)
		engine_qp_disconnect(ls->eng, ls->listen_qpn, now);
}
