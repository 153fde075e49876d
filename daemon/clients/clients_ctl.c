// SPDX-License-Identifier: MIT
/*
 * libmroc clients, the control thread's side (see clients.h): a client's
 * messages (HELLO, regions, QPs, connect/listen) checked and turned into
 * synchronous worker calls, limits per user, and a client's end.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include "abi.h"
#include "clients.h"
#include "clients_priv.h"
#include "evfd.h"
#include "links.h"
#include "log.h"
#include "mroc/mroc.h"
#include "peers.h"
#include "qpmap.h"
#include "ring.h"
#include "services.h"
#include "steer.h"
#include "toucher.h"
#include "worker.h"

/* ---- worker calls made by the control thread ------------------------------- */

struct op {
	struct clients *cs;
	struct client *cl;
	struct cqp *q;
	struct engine_qp_attr attr;
	void *map;
	uint64_t len, service_id;
	uint32_t access, lkey, rkey, qpn;
	struct mroc_addr addr;
};

static int op_mr_reg(void *arg, uint64_t now)
{
	struct op *o = arg;

	(void)now;
	return engine_mr_register(o->cs->eng, o->cl->pd, o->map, o->len, o->access, &o->lkey,
				  &o->rkey);
}

static int op_mr_dereg(void *arg, uint64_t now)
{
	struct op *o = arg;

	(void)now;
	return engine_mr_deregister(o->cs->eng, o->lkey);
}

static int op_qp_create(void *arg, uint64_t now)
{
	struct op *o = arg;
	struct clients *cs = o->cs;
	struct cqp *q = o->q;
	struct client *cl = o->cl;
	int err;

	if (cs->nactive == cs->max_total_qps)
		return -ENOSPC;
	/* Zombies (dead clients' QPs saying goodbye) give their slots to the living. */
	while ((err = engine_qp_create(cs->eng, &o->attr, &q->qpn)) == -ENOSPC &&
	       clients_zombie_free(cs))
		;
	if (err)
		return err;
	err = qpmap_add(&cs->map, q->qpn, q);
	if (!err) {
		err = clients_qp_doorbell_add(cs, q);
		if (err)
			qpmap_del(&cs->map, q->qpn);
	}
	if (err) {
		engine_qp_destroy(cs->eng, q->qpn);
		return err;
	}
	q->active_idx = cs->nactive;
	cs->active[cs->nactive++] = q;
	q->cl_prev = NULL;
	q->cl_next = cl->wqps;
	if (cl->wqps)
		cl->wqps->cl_prev = q;
	cl->wqps = q;
	/* Cold until the client posts (it rings then); hot at once if it already did. */
	q->hot_idx = NOT_LISTED;
	if (!clients_qp_cool(cs, q))
		clients_qp_heat(cs, q, now);
	cs->st.qps++;
	return 0;
}

/* The QP must be one of this client's active ones. */
static struct cqp *own_qp(struct op *o)
{
	struct cqp *q = qpmap_get(&o->cs->map, o->qpn);

	return q && q->cl == o->cl ? q : NULL;
}

static int reserved(const struct client *cl, const char *what, uint64_t service_id)
{
	pr_warn_rl("client %u (pid %d): may not %s service %#llx (the daemons' own)", cl->id,
		   (int)cl->pid, what, (unsigned long long)service_id);
	return -EACCES;
}

static uint32_t share(const struct clients_limits *lim, uint32_t total, uid_t uid);
static struct uid_count *uid_of(struct clients *cs, uid_t uid);

static int op_qp_connect(void *arg, uint64_t now)
{
	struct op *o = arg;
	struct clients *cs = o->cs;
	uint32_t peer;
	int err;

	if (!own_qp(o))
		return -ENOENT;
	if (mrocd_service_reserved(o->service_id))
		return reserved(o->cl, "connect to", o->service_id);
	/* The peer table is the worker's, shared by every user: a share each (peers.h). */
	err = peers_get_handle_owned(cs->peers, &o->addr, (uint32_t)o->cl->uid + 1,
				     share(&cs->ctl->lim, peers_max(cs->peers), o->cl->uid), &peer);
	if (err)
		return err;
	return engine_qp_connect(o->cs->eng, o->qpn, peer, o->service_id, now);
}

static int op_qp_listen(void *arg, uint64_t now)
{
	struct op *o = arg;

	(void)now;
	if (!own_qp(o))
		return -ENOENT;
	return engine_qp_listen(o->cs->eng, o->qpn, o->service_id);
}

static int op_qp_destroy(void *arg, uint64_t now)
{
	struct op *o = arg;
	struct cqp *q = own_qp(o);

	if (!q)
		return -ENOENT;
	clients_qp_deactivate(o->cs, q, now);
	return 0;
}

/* The client is gone: stop its QPs (peers are told), drop its regions. */
static int op_client_gone(void *arg, uint64_t now)
{
	struct op *o = arg;
	struct clients *cs = o->cs;

	clients_deactivate_all(cs, o->cl, now);
	if (o->cl->widx != NOT_LISTED) {
		struct client *last = cs->wcl[--cs->nwcl];

		clients_doorbell_del(cs, o->cl);
		cs->wcl[o->cl->widx] = last;
		last->widx = o->cl->widx;
		o->cl->widx = NOT_LISTED;
	}
	for (uint32_t i = 0; i < o->cl->nmrs; i++)
		engine_mr_deregister(cs->eng, o->cl->mrs[i].lkey);
	cs->st.mrs -= o->cl->nmrs;
	cs->st.clients--;
	cs->st.closed++;
	return 0;
}

static int op_count_client(void *arg, uint64_t now)
{
	struct op *o = arg;

	(void)now;
	o->cs->st.clients++;
	o->cs->st.opened++;
	return 0;
}

/* HELLO: the worker sleeps on the client's doorbell from now on. */
static int op_client_hello(void *arg, uint64_t now)
{
	struct op *o = arg;
	struct clients *cs = o->cs;
	int err;

	(void)now;
	if (cs->nwcl == MAX_CLIENTS)
		return -EUSERS;
	err = clients_doorbell_add(cs, o->cl);
	if (err)
		return err;
	o->cl->widx = cs->nwcl;
	cs->wcl[cs->nwcl++] = o->cl;
	return 0;
}

static int op_count_mr(void *arg, uint64_t now)
{
	struct op *o = arg;

	(void)now;
	o->cs->st.mrs += o->access;	/* +1 or -1 (as unsigned) */
	return 0;
}

/* ---- control thread: messages ---------------------------------------------------- */

static int call(struct clients *cs, int (*fn)(void *, uint64_t), struct op *o)
{
	o->cs = cs;
	return worker_call(cs->worker, fn, o);
}

void *clients_open(void *ctx, int fd, const struct ucred *cred, bool admin)
{
	struct clients *cs = ctx;
	struct client *cl;
	struct op o = { 0 };

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
	o.cl = cl;
	call(cs, op_count_client, &o);
	pr_info("client %u connected (pid %d, uid %u)", cl->id, (int)cl->pid, (unsigned)cl->uid);
	return cl;
}

/* ---- pinning ------------------------------------------------------------------ */

/*
 * Client memory mrocd maps (regions, and the QP rings with the CQ) is pinned
 * as verbs registration pins it: populated and locked in mrocd's mapping
 * when registered, so the worker never takes a page fault on it.  Without
 * the lock, proactive reclaim (DAMON pageout, memory.reclaim, Senpai) unmaps
 * cold shared-memory pages from mrocd's page tables; shmem without swap stays
 * in memory, so each next touch was a minor fault (issue #22: 13,800 a
 * second, 30-40 % of a sending daemon's CPU).  A locked page is unevictable:
 * reclaim leaves it mapped, in the client's page tables too.
 *
 * Charged against limits.max_locked_bytes_per_client (every client, root's
 * too) and, by the kernel, mrocd's RLIMIT_MEMLOCK (LimitMEMLOCK= in the
 * unit; not enforced on a process with CAP_IPC_LOCK).  Over either the
 * client gets an error: EDQUOT for its own limit, ENOMEM for the daemon's.
 * munmap unlocks (deregistration, QP destruction, the client's end).
 */
static uint64_t pinned_bytes(uint64_t len)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	return (len + page - 1) / page * page;
}

static int over_lock_limit(struct clients *cs, struct client *cl, uint64_t len)
{
	if (cl->locked_bytes + pinned_bytes(len) <= cs->ctl->lim.max_locked_bytes)
		return 0;
	pr_warn_rl("client %u (pid %d): %llu more bytes to pin refused: it has %llu, "
		   "limits.max_locked_bytes_per_client is %llu", cl->id, (int)cl->pid,
		   (unsigned long long)pinned_bytes(len), (unsigned long long)cl->locked_bytes,
		   (unsigned long long)cs->ctl->lim.max_locked_bytes);
	return -EDQUOT;
}

/*
 * Pages of map that are not in memory (mincore): never allocated by the
 * client, or swapped out since.  A shmem page is charged to the memory
 * cgroup of whoever faults it in first: left to mrocd's mlock, the client's
 * memory was mrocd's, outside the client's own limit (up to
 * limits.max_locked_bytes_per_client for each of its user's clients).
 */
static uint64_t pages_missing(const void *map, uint64_t len)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), n = (len + page - 1) / page, missing = 0;
	unsigned char vec[4096];

	for (uint64_t i = 0; i < n; i += sizeof(vec)) {
		uint64_t k = n - i < sizeof(vec) ? n - i : sizeof(vec);

		if (mincore((uint8_t *)map + i * page, k * page, vec))
			return n;	/* cannot tell: as if none were there */
		for (uint64_t j = 0; j < k; j++)
			missing += !(vec[j] & 1);
	}
	return missing;
}

/*
 * After mrocd's writable mapping exists, before its pages are checked: the
 * memfd sealed against writes by new mappings and write(2) (F_SEAL_FUTURE_WRITE),
 * which also refuses hole punching (fallocate FALLOC_FL_PUNCH_HOLE, madvise
 * MADV_REMOVE) with EPERM.  Mappings made before it (the client's, ours)
 * stay writable.  Without it, a client could drop its pinned pages (mlock
 * does not stop that; its memory cgroup is uncharged) and the data path's
 * next access would fault fresh ones in on mrocd's account, zeroed on a
 * worker thread (PROTOCOL 11a).  Seals cannot be removed: the memfd stays
 * sealed after the region goes, and after a refusal that comes later (mlock,
 * the engine, the rings' header).
 */
static int seal_punching(struct clients *cs, struct client *cl, int fd)
{
	if (!fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE))
		return 0;
	/* EPERM: the client closed sealing (F_SEAL_SEAL) since check_memfd. */
	cs->ctl->seal_refused++;
	pr_warn_rl("client %u (pid %d): cannot seal a memfd against hole punching: %s: refused",
		   cl->id, (int)cl->pid, strerror(errno));
	return -EPERM;
}

/* A memfd sealed against new writable mappings that map_again could not map either. */
static int sealed_before(struct clients *cs, struct client *cl)
{
	cs->ctl->seal_refused++;
	pr_warn_rl("client %u (pid %d): a memfd sealed against new writable mappings "
		   "(F_SEAL_FUTURE_WRITE: registered before, and none of this client's regions "
		   "maps it now): refused", cl->id, (int)cl->pid);
	return -EPERM;
}

static int unpopulated(struct clients *cs, struct client *cl, uint64_t missing, uint64_t len)
{
	cs->ctl->unpopulated_refused++;
	pr_warn_rl("client %u (pid %d): %llu of the %llu bytes to pin were never allocated "
		   "by it (or are swapped out): refused, it must populate its memory first "
		   "(libmroc does)", cl->id, (int)cl->pid,
		   (unsigned long long)(missing * (uint64_t)sysconf(_SC_PAGESIZE)),
		   (unsigned long long)len);
	return -ENODATA;
}

static int cannot_lock(struct clients *cs, struct client *cl, uint64_t len, int err)
{
	struct rlimit rl = { 0 };

	getrlimit(RLIMIT_MEMLOCK, &rl);
	pr_warn_rl("client %u (pid %d): cannot pin %llu bytes (mrocd has %llu pinned for "
		   "clients, RLIMIT_MEMLOCK %lld; LimitMEMLOCK= in the unit): %s", cl->id,
		   (int)cl->pid, (unsigned long long)len,
		   (unsigned long long)cs->ctl->locked_bytes,
		   rl.rlim_cur == RLIM_INFINITY ? -1LL : (long long)rl.rlim_cur, strerror(err));
	return -ENOMEM;	/* EAGAIN, EPERM (a limit of 0) and ENOMEM alike */
}

/*
 * A mapping pinned for a client (map_pinned, map_again): counted against its
 * limits until unpin.  A read of every page, once, off this thread: on a
 * machine whose hypervisor shadows the guest's page tables (this one, any VM
 * without nested paging) the first access to a page by mrocd's user space
 * traps even though mlock mapped it, 6-18 us a page.  Left to the worker, a
 * region's first pass paid it per packet (pkt-cost, 4,000 QPs in 1 GiB:
 * 10.0 us a packet, 1.2 with the read; issue #22).  Done here it held every
 * other client's control call ~2 s a GiB.  Where the hypervisor cannot keep
 * every process's pages shadowed (bench-scale's two daemons and 16 clients
 * touching GiBs) the first pass traps anyway (docs/PERF.md, session 23).
 * Elsewhere it costs a cache miss a page.  Not queued (no memory): only
 * slower once.
 */
static int pinned(struct clients *cs, struct client *cl, void *map, uint64_t len, void **out)
{
	(void)toucher_add(cs->ctl->toucher, map, len);
	cl->locked_bytes += pinned_bytes(len);
	cs->ctl->locked_bytes += pinned_bytes(len);
	*out = map;
	return 0;
}

static int map_pinned(struct clients *cs, struct client *cl, int fd, uint64_t len, void **out)
{
	uint64_t missing;
	void *map;
	int err;

	err = over_lock_limit(cs, cl, len);
	if (err)
		return err;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	/*
	 * Checked, then sealed (a memfd refused for a missing page stays unsealed:
	 * the client can populate it and try again), then checked again: a hole
	 * punched before the seal took would be allocated by the mlock below.
	 */
	missing = pages_missing(map, len);
	if (!missing) {
		err = seal_punching(cs, cl, fd);
		if (err) {
			munmap(map, len);
			return err;
		}
		missing = pages_missing(map, len);
	}
	if (missing) {
		munmap(map, len);
		return unpopulated(cs, cl, missing, len);
	}
	/*
	 * Maps every page (the client's, checked above; writable: shmem maps them
	 * so on a read fault) and locks it.  The system call itself: the
	 * sanitizers' mlock() is a no-op that returns 0 (they keep their shadow
	 * memory unlocked), which would make an ASan build pin nothing and refuse
	 * nothing.  No hole can open between the check and this: sealed above.
	 */
	if (syscall(SYS_mlock, map, len)) {
		err = errno;
		munmap(map, len);
		return cannot_lock(cs, cl, len, err);
	}
	return pinned(cs, cl, map, len, out);
}

/* The entry of v[0..n) that maps file (dev, ino), other than but; NULL if none. */
static const struct cmr *find_cmr(const struct cmr *v, uint32_t n, dev_t dev, ino_t ino,
				  const struct cmr *but)
{
	for (uint32_t i = 0; i < n; i++)
		if (&v[i] != but && v[i].dev == dev && v[i].ino == ino)
			return &v[i];
	return NULL;
}

/*
 * The last region of an application's memfd (MROC_MR_REG_KEEP_FILE) is
 * going: a page of its mapping stays (an mremap copy, locked like its
 * source), so that map_again can copy a writable mapping of the file when
 * the application registers it again (a registration cache evicting and
 * registering one buffer, NCCL's and libfabric's).  Only for files the
 * application keeps: an anchor of libmroc's own region memfds would keep
 * their memory until the client goes.  Without room (mrs_cap anchors) or
 * if the copy fails, none: registering it again is refused as before.
 */
static void anchor_file(struct client *cl, const struct cmr *mr)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *map;

	if (!mr->keep || cl->nanchors >= cl->mrs_cap ||
	    find_cmr(cl->mrs, cl->nmrs, mr->dev, mr->ino, mr) ||
	    find_cmr(cl->anchors, cl->nanchors, mr->dev, mr->ino, NULL))
		return;
	map = (void *)syscall(SYS_mremap, mr->map, 0, page, MREMAP_MAYMOVE);
	if (map == MAP_FAILED) {
		pr_debug("client %u: no anchor for a region's file: %s", cl->id, strerror(errno));
		return;
	}
	cl->anchors[cl->nanchors++] = (struct cmr){ .map = map, .len = page, .dev = mr->dev,
						    .ino = mr->ino };
	cl->locked_bytes += pinned_bytes(page);
	cl->cs->ctl->locked_bytes += pinned_bytes(page);
}

/*
 * A memfd sealed against new writable mappings (map_pinned sealed it for a
 * region of this client that still lives, or for one whose page anchor_file
 * kept): no mmap can map it writable again, but mremap can copy a writable
 * shared mapping (old size 0), so the region's mapping is a copy of the
 * longest one of the same file (or of that page), from its start, grown to
 * the length asked.  Only this client's own: it could write the file when it
 * registered it, so the copy gives it nothing new, where another client's
 * (sent the fd by the first) could only read it (a seal the owner added
 * itself to hand out a read-only file is the same seal).  The copy of a
 * locked mapping is locked and populated by mremap itself, so every page of
 * the longer range is checked first (read-only, which the seal allows): a
 * page not there would be allocated on mrocd's account; the seal keeps
 * checked pages from being punched.
 */
static int map_again(struct clients *cs, struct client *cl, int fd, const struct stat *st,
		     uint64_t len, void **out)
{
	const struct cmr *src = NULL;
	uint64_t missing;
	void *map;
	int err;

	for (uint32_t i = 0; i < cl->nmrs; i++)
		if (cl->mrs[i].dev == st->st_dev && cl->mrs[i].ino == st->st_ino &&
		    (!src || cl->mrs[i].len > src->len))
			src = &cl->mrs[i];
	if (!src)
		src = find_cmr(cl->anchors, cl->nanchors, st->st_dev, st->st_ino, NULL);
	if (!src)
		return sealed_before(cs, cl);
	err = over_lock_limit(cs, cl, len);
	if (err)
		return err;
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	missing = pages_missing(map, len);
	munmap(map, len);
	if (missing)
		return unpopulated(cs, cl, missing, len);
	/* The system call itself, as mlock above: nothing of a sanitizer in between. */
	map = (void *)syscall(SYS_mremap, src->map, 0, len, MREMAP_MAYMOVE);
	if (map == MAP_FAILED)
		return cannot_lock(cs, cl, len, errno);	/* over RLIMIT_MEMLOCK: EAGAIN */
	return pinned(cs, cl, map, len, out);
}

uint64_t clients_locked_bytes(const struct clients *cs)
{
	return cs->ctl->locked_bytes;
}

/* munmap also unlocks: the pages are the kernel's to reclaim again. */
static void unpin(struct client *cl, void *map, size_t len)
{
	uint64_t bytes = pinned_bytes(len);

	toucher_forget(cl->cs->ctl->toucher, map);
	munmap(map, len);
	cl->locked_bytes -= bytes;
	cl->cs->ctl->locked_bytes -= bytes;
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
	u = uid_of(cs->ctl, q->cl->uid);
	if (u)
		u->services--;
	if (cs->steer)
		steer_unlisten(cs->steer, q->service);
}

static void free_qp(struct cqp *q)
{
	unbind(q);
	if (q->region)
		unpin(q->cl, q->region, q->region_len);
	if (q->cq_fd >= 0)
		close(q->cq_fd);
	if (q->doorbell >= 0)
		close(q->doorbell);
	free(q);
}

/* uid's entry (it has established clients), or NULL. */
static struct uid_count *uid_of(struct clients *cs, uid_t uid)
{
	for (uint32_t i = 0; i < cs->nuids; i++)
		if (cs->uids[i].uid == uid)
			return &cs->uids[i];
	return NULL;
}

/*
 * One user's share of a table of total entries (#24 item 12): at least one,
 * so that nobody is shut out by rounding.  Root is not held to it: it can
 * reconfigure mrocd anyway, and a single-user host (one training job, 4,000
 * QPs, as root) must be able to use the whole table.
 */
static uint32_t share(const struct clients_limits *lim, uint32_t total, uid_t uid)
{
	uint64_t n;

	if (uid == 0)
		return UINT32_MAX;
	n = (uint64_t)total * (lim->uid_share ? lim->uid_share : 100) / 100;

	return n ? (uint32_t)n : 1;
}

/*
 * The administrators' reserve (limits.admin_reserve_percent, #24 item 12):
 * clients that are no administrators hold at most the rest of a table of
 * total entries between them, so several users (or one person with several
 * uids) cannot fill it and lock out the administrator who would clean up.
 * held: what they hold now.  True, logged and counted, when cl may not take one more.
 */
static bool over_reserve(struct clients *ctl, const struct client *cl, uint32_t held,
			 uint32_t total, const char *what)
{
	uint64_t open = (uint64_t)total * (100 - ctl->lim.admin_reserve) / 100;

	if (cl->admin || held < (open ? open : 1))
		return false;
	pr_warn_rl("client %u (pid %d, uid %u): refused: clients that are no administrators hold "
		   "%u %s, all but the administrators' reserve (limits.admin_reserve_percent %u%%)",
		   cl->id, (int)cl->pid, (unsigned)cl->uid, held, what, ctl->lim.admin_reserve);
	ctl->reserve_refused++;
	return true;
}

static int over_share(struct clients *ctl, struct client *cl, const char *what, uint32_t n)
{
	pr_warn_rl("client %u (pid %d, uid %u): refused: its user holds %u %s, its share "
		   "(limits.uid_share_percent %u%%)", cl->id, (int)cl->pid, (unsigned)cl->uid, n,
		   what, ctl->lim.uid_share);
	ctl->share_refused++;
	return -EDQUOT;
}

/* Established clients of uid, changed by delta (+1, -1) unless 0. */
static uint32_t uid_count(struct clients *cs, uid_t uid, int delta)
{
	uint32_t i;

	for (i = 0; i < cs->nuids && cs->uids[i].uid != uid; i++)
		;
	if (i == cs->nuids) {
		if (delta <= 0 || cs->nuids == UIDS_MAX)
			return 0;
		cs->uids[cs->nuids++] = (struct uid_count){ .uid = uid };
	}
	cs->uids[i].n += (uint32_t)delta;
	if (cs->uids[i].n)
		return cs->uids[i].n;
	cs->uids[i] = cs->uids[--cs->nuids];	/* its last client went */
	return 0;
}

void clients_close(void *ctx, void *client)
{
	struct client *cl = client;
	struct clients *cs = cl->cs;
	struct op o = { .cl = cl };

	call(cs, op_client_gone, &o);
	for (uint32_t i = 0; i < cl->nqps; i++)
		free_qp(cl->qps[i]);
	for (uint32_t i = 0; i < cl->nmrs; i++)
		unpin(cl, cl->mrs[i].map, cl->mrs[i].len);
	for (uint32_t i = 0; i < cl->nanchors; i++)
		unpin(cl, cl->anchors[i].map, cl->anchors[i].len);
	if (cl->doorbell >= 0)
		close(cl->doorbell);
	pr_info("client %u gone: %u QP(s), %u region(s) released", cl->id, cl->nqps, cl->nmrs);
	if (cl->counted) {
		struct uid_count *u = uid_of(cs->ctl, cl->uid);

		u->qps -= cl->nqps;
		u->mrs -= cl->nmrs;
		if (!cl->admin) {
			cs->ctl->user_qps -= cl->nqps;
			cs->ctl->user_mrs -= cl->nmrs;
			cs->ctl->user_clients--;
		}
		cs->ctl->nclients--;
		uid_count(cs->ctl, cl->uid, -1);
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
 * A memfd we can map safely: sealed against shrinking (by the client), at
 * least len bytes, and one map_pinned can seal against hole punching: not
 * closed to new seals (F_SEAL_SEAL).  A memfd made without MFD_ALLOW_SEALING
 * carries F_SEAL_SEAL only, so it fails the first test.  -EALREADY: sealed
 * against new writable mappings already (F_SEAL_FUTURE_WRITE: a memfd
 * registered before), which only map_again can map.  *st: its fstat.
 * Not hugetlbfs (EOPNOTSUPP).
 */
static int check_memfd(struct clients *cs, struct client *cl, int fd, uint64_t len,
		       struct stat *st)
{
	int seals = fcntl(fd, F_GET_SEALS);
	struct statfs sfs;

	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EPERM;
	if (fstat(fd, st) || !S_ISREG(st->st_mode) || (uint64_t)st->st_size < len)
		return -EINVAL;
	if (!fstatfs(fd, &sfs) && sfs.f_type == HUGETLBFS_MAGIC) {
		/*
		 * mincore reads a hugetlb mapping's page tables, not the file, so
		 * its pages read as missing in a fresh mapping; munmap wants a
		 * multiple of the huge page (a region of another length stayed
		 * mapped and pinned); mremap cannot copy one.  Not supported.
		 */
		pr_warn_rl("client %u (pid %d): a hugetlbfs memfd (MFD_HUGETLB): refused, mrocd "
			   "registers only ordinary memfds", cl->id, (int)cl->pid);
		return -EOPNOTSUPP;
	}
	if ((seals & F_SEAL_FUTURE_WRITE) && !(seals & F_SEAL_WRITE))
		return -EALREADY;
	if (seals & (F_SEAL_SEAL | F_SEAL_WRITE)) {
		cs->ctl->seal_refused++;
		pr_warn_rl("client %u (pid %d): a memfd %s: refused, mrocd could not keep it from "
			   "punching holes in what it pins", cl->id, (int)cl->pid,
			   seals & F_SEAL_WRITE ? "sealed against writes (F_SEAL_WRITE)" :
			   "closed to new seals (F_SEAL_SEAL)");
		return -EPERM;
	}
	return 0;
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
	    uid_count(cs->ctl, cl->uid, 0) >= cs->ctl->lim.max_per_uid ||
	    uid_count(cs->ctl, cl->uid, 0) >= share(&cs->ctl->lim, cs->ctl->lim.max_clients, cl->uid)) {
		pr_warn_rl("refusing client pid %d (uid %u): %s reached", (int)cl->pid,
			   (unsigned)cl->uid, cs->ctl->nclients >= cs->ctl->lim.max_clients ?
			   "limits.max_clients" :
			   uid_count(cs->ctl, cl->uid, 0) >= cs->ctl->lim.max_per_uid ?
			   "limits.max_clients_per_uid" : "its user's share (limits.uid_share_percent)");
		shutdown(cl->fd, SHUT_RD);	/* the reply still goes out; then EOF closes it */
		return -EUSERS;
	}
	if (over_reserve(cs->ctl, cl, cs->ctl->user_clients, cs->ctl->lim.max_clients, "clients")) {
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
	err = call(cs, op_client_hello, &(struct op){ .cl = cl });
	if (err) {
		cl->doorbell = -1;
		return err;
	}
	fds[0] = -1;
	cl->counted = true;
	cs->ctl->nclients++;
	cs->ctl->user_clients += !cl->admin;
	uid_count(cs->ctl, cl->uid, +1);
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
	u = uid_of(cs->ctl, cl->uid);	/* an established client's user has one */
	if (!u || u->mrs >= share(&cs->ctl->lim, cs->ctl->lim.total_mrs, cl->uid))
		return over_share(cs->ctl, cl, "memory regions", u ? u->mrs : 0);
	if (over_reserve(cs->ctl, cl, cs->ctl->user_mrs, cs->ctl->lim.total_mrs, "memory regions"))
		return -EDQUOT;
	err = check_memfd(cs, cl, fds[0], m->len, &st);
	if (!err)
		err = map_pinned(cs, cl, fds[0], m->len, &o.map);
	else if (err == -EALREADY)
		err = map_again(cs, cl, fds[0], &st, m->len, &o.map);
	if (err)
		return err;
	err = call(cs, op_mr_reg, &o);
	if (err) {
		unpin(cl, o.map, m->len);
		return err;
	}
	cl->mrs[cl->nmrs++] = (struct cmr){ .lkey = o.lkey, .rkey = o.rkey, .map = o.map,
					    .len = m->len, .dev = st.st_dev, .ino = st.st_ino,
					    .keep = m->flags & MROC_MR_REG_KEEP_FILE };
	cl->mr_bytes += m->len;
	u->mrs++;
	cs->ctl->user_mrs += !cl->admin;
	o.access = 1;
	call(cs, op_count_mr, &o);
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
		err = call(cs, op_mr_dereg, &o);
		if (err)
			return err;
		/* The engine no longer knows the key: nothing can touch the mapping now. */
		anchor_file(cl, mr);
		unpin(cl, mr->map, mr->len);
		cl->mr_bytes -= mr->len;
		uid_of(cs->ctl, cl->uid)->mrs--;
		cs->ctl->user_mrs -= !cl->admin;
		*mr = cl->mrs[--cl->nmrs];
		o.access = (uint32_t)-1;
		call(cs, op_count_mr, &o);
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
	err = check_memfd(cs, q->cl, fd, len, &st);
	if (err == -EALREADY)
		return sealed_before(cs, q->cl);	/* rings are never shared */
	if (err)
		return err;
	/*
	 * The header read before map_pinned seals the memfd, so that a region
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
	err = map_pinned(cs, q->cl, fd, len, &q->region);
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
	u = uid_of(cs->ctl, cl->uid);
	if (!u || u->qps >= share(&cs->ctl->lim, cs->max_total_qps, cl->uid))
		return over_share(cs->ctl, cl, "QPs", u ? u->qps : 0);
	if (over_reserve(cs->ctl, cl, cs->ctl->user_qps, cs->max_total_qps, "QPs"))
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
		/* The engine's limit (sq + reads <= 1024) may be below the ring's size. */
		.sq_depth = m->sq_entries < 1008 ? m->sq_entries : 1008,
		.rq_depth = m->rq_entries,
	};
	err = call(cs, op_qp_create, &o);
	if (err) {
		free_qp(q);
		return err;
	}
	cl->qps[cl->nqps++] = q;
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
		err = call(cs, op_qp_destroy, &o);
		if (err && err != -ENOENT)
			return err;
		/* The worker dropped it from its list: the mapping is ours to undo. */
		free_qp(cl->qps[i]);
		cl->qps[i] = cl->qps[--cl->nqps];
		uid_of(cs->ctl, cl->uid)->qps--;
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
	err = call(cs, op_qp_connect, &o);
	if (err == -EDQUOT)
		over_share(cs->ctl, cl, "peers in use (of its worker's table)",
			   share(&cs->ctl->lim, peers_max(cs->peers), cl->uid));
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
		return reserved(cl, "listen on", m->service_id);
	if (q->bound && q->service == m->service_id)
		return call(cs, op_qp_listen, &o);
	fresh = !services_owner(svc, m->service_id);
	/*
	 * With several workers each service takes a slot of the one steering
	 * table (STEER_SLOTS): a user's share of it, or one user's listeners
	 * filled it and every other LISTEN got ENOSPC.
	 */
	u = uid_of(cs->ctl, cl->uid);
	if (fresh && cs->steer && u &&
	    u->services >= share(&cs->ctl->lim, STEER_SLOTS, cl->uid))
		return over_share(cs->ctl, cl, "services listened on (of the steering table)",
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
		err = call(cs, op_qp_listen, &o);
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
