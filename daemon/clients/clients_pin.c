// SPDX-License-Identifier: MIT
/*
 * libmroc clients: client memory mrocd maps, pinned (the control thread's):
 * memfd checks and seals, mapping, locking, the first-touch read
 * (toucher.h), page anchors of kept files, and unpinning.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include "clients.h"
#include "clients_priv.h"
#include "log.h"
#include "toucher.h"

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
	/* EPERM: the client closed sealing (F_SEAL_SEAL) since clients_check_memfd. */
	cs->ctl->seal_refused++;
	pr_warn_rl("client %u (pid %d): cannot seal a memfd against hole punching: %s: refused",
		   cl->id, (int)cl->pid, strerror(errno));
	return -EPERM;
}

/* A memfd sealed against new writable mappings that clients_map_again could not map either. */
int clients_sealed_before(struct clients *cs, struct client *cl)
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
 * A mapping pinned for a client (clients_map_pinned, clients_map_again): counted against its
 * limits until clients_unpin.  A read of every page, once, off this thread: on a
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

int clients_map_pinned(struct clients *cs, struct client *cl, int fd, uint64_t len, void **out)
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
 * source), so that clients_map_again can copy a writable mapping of the file when
 * the application registers it again (a registration cache evicting and
 * registering one buffer, NCCL's and libfabric's).  Only for files the
 * application keeps: an anchor of libmroc's own region memfds would keep
 * their memory until the client goes.  Without room (mrs_cap anchors) or
 * if the copy fails, none: registering it again is refused as before.
 */
void clients_anchor_file(struct client *cl, const struct cmr *mr)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *map;

	if (!mr->keep || cl->nanchors >= cl->mrs_cap ||
	    find_cmr(cl->mrs, cl->nmrs, mr->dev, mr->ino, mr) ||
	    find_cmr(cl->anchors, cl->nanchors, mr->dev, mr->ino, NULL))
		return;
	map = (void *)syscall(SYS_mremap, mr->map, 0, page, MREMAP_MAYMOVE);
	if (map == MAP_FAILED) {
		pr_debug_rl("client %u: no anchor for a region's file: %s", cl->id, strerror(errno));
		return;
	}
	cl->anchors[cl->nanchors++] = (struct cmr){ .map = map, .len = page, .dev = mr->dev,
						    .ino = mr->ino };
	cl->locked_bytes += pinned_bytes(page);
	cl->cs->ctl->locked_bytes += pinned_bytes(page);
}

/*
 * A memfd sealed against new writable mappings (clients_map_pinned sealed it for a
 * region of this client that still lives, or for one whose page clients_anchor_file
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
int clients_map_again(struct clients *cs, struct client *cl, int fd, const struct stat *st,
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
		return clients_sealed_before(cs, cl);
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
void clients_unpin(struct client *cl, void *map, size_t len)
{
	uint64_t bytes = pinned_bytes(len);

	toucher_forget(cl->cs->ctl->toucher, map);
	munmap(map, len);
	cl->locked_bytes -= bytes;
	cl->cs->ctl->locked_bytes -= bytes;
}

/*
 * A memfd we can map safely: sealed against shrinking (by the client), at
 * least len bytes, and one clients_map_pinned can seal against hole punching: not
 * closed to new seals (F_SEAL_SEAL).  A memfd made without MFD_ALLOW_SEALING
 * carries F_SEAL_SEAL only, so it fails the first test.  -EALREADY: sealed
 * against new writable mappings already (F_SEAL_FUTURE_WRITE: a memfd
 * registered before), which only clients_map_again can map.  *st: its fstat.
 * Not hugetlbfs (EOPNOTSUPP).
 */
int clients_check_memfd(struct clients *cs, struct client *cl, int fd, uint64_t len,
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
