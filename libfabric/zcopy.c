// SPDX-License-Identifier: MIT
/*
 * Zero-copy registrations: the pages of an fi_mr_reg'd buffer become an mroc
 * region, so a large message moves by mroc RDMA READ straight from the
 * sender's buffer into the receiver's (rndv.c) with no staging copy.
 *
 * mrocd reaches only shared memfds.  fi_mr_reg therefore looks at the whole
 * pages inside the buffer ([ceil(base), floor(base + len)), at least
 * MFI_RNDV_MIN bytes, all in one mapping):
 *  - in a shared memfd mapping: that memfd is registered (no copy at all;
 *    mrocd seals what it registers against new writable mappings, so a
 *    memfd a registration of another domain's context holds, or held, is
 *    refused: such a buffer is staged, below);
 *  - in private anonymous memory (malloc, aligned_alloc, the heap): the pages
 *    are re-backed by a new memfd at the same address (their bytes copied
 *    once, now), so the application keeps its pointer and its data.  What
 *    changes: while registered, those pages are MADV_DONTFORK, as verbs
 *    providers make registered memory (ibv_fork_init): a child after fork()
 *    has nothing mapped there (SIGSEGV if it touches them).  Shared memfd
 *    pages would otherwise be shared with the child, not copied: it would
 *    read the parent's later data and its writes would land in the parent's
 *    buffer, which private memory never allowed.  Another thread writing
 *    them at the instant of fi_mr_reg could lose that write.  When the last
 *    registration of them closes they become private again (a new mapping,
 *    inherited by children as before);
 *  - anything else (file mappings, read-only, a range over two mappings):
 *    not zero-copy; messages from and to it are staged as before.
 * The bytes of the buffer's partial first and last pages are never touched.
 * FI_MROC_RNDV=0 turns this (and the rendezvous) off.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mroc/mroc.h>

#include "memfd_map.h"
#include "mrocfi.h"


bool mfi_rndv_enabled(void)
{
	static int on = -1;
	int v = 1;

	if (on < 0) {
		if (fi_param_get_bool(&mfi_prov, "rndv", &v) != FI_SUCCESS)
			v = 1;
		on = v != 0;
	}
	return on;
}

/* Private pages [a, b) re-backed by a new memfd, same address, same bytes: its fd. */
static int reback(uintptr_t a, uintptr_t b)
{
	size_t n = b - a;
	void *tmp, *at;
	int fd = memfd_create("mroc-fi-zcopy", MFD_CLOEXEC | MFD_ALLOW_SEALING), err;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)n))
		goto err_errno;
	tmp = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (tmp == MAP_FAILED)
		goto err_errno;
	memcpy(tmp, (void *)a, n);
	at = mmap((void *)a, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
	err = at == MAP_FAILED ? -errno : 0;
	munmap(tmp, n);
	if (err) {
		close(fd);
		return err;	/* MAP_FIXED failed: the old pages are still there */
	}
	return fd;
err_errno:
	err = -errno;
	close(fd);
	return err;
}

/*
 * The memfds of every open zero-copy registration, in every domain: pages go
 * back to private memory only when no registration maps their memfd.
 */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { dev_t dev; ino_t ino; } *live;
static size_t nlive, live_cap;

static void live_add(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return;
	pthread_mutex_lock(&live_lock);
	if (nlive == live_cap) {
		size_t cap = live_cap ? 2 * live_cap : 16;
		void *n = realloc(live, cap * sizeof(*live));

		if (n) {
			live = n;
			live_cap = cap;
		}
	}
	if (nlive < live_cap) {
		live[nlive].dev = st.st_dev;
		live[nlive++].ino = st.st_ino;
	}
	pthread_mutex_unlock(&live_lock);
}

/* Drop one entry of fd's memfd; true when it was the last. */
static bool live_drop(int fd)
{
	struct stat st;
	size_t left = 0;
	bool dropped = false;

	if (fstat(fd, &st))
		return false;
	pthread_mutex_lock(&live_lock);
	for (size_t i = 0; i < nlive; i++) {
		if (live[i].dev != st.st_dev || live[i].ino != st.st_ino)
			continue;
		if (!dropped) {
			live[i--] = live[--nlive];
			dropped = true;
		} else {
			left++;
		}
	}
	/* The provider may be unloaded (fi_fini, dlclose) with no registration left. */
	if (!nlive) {
		free(live);
		live = NULL;
		live_cap = 0;
	}
	pthread_mutex_unlock(&live_lock);
	return dropped && !left;
}

/*
 * fi_fini: registrations the application never closed leave entries behind;
 * the table goes with the provider (a later close finds nothing and restores
 * nothing, which is right once no one will read the pages through us).
 */
void mfi_zc_fini(void)
{
	pthread_mutex_lock(&live_lock);
	free(live);
	live = NULL;
	nlive = live_cap = 0;
	pthread_mutex_unlock(&live_lock);
}

static void restore(struct mfi_mr *mr);

void mfi_zc_reg(struct mfi_domain *d, struct mfi_mr *mr)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t a = ((uintptr_t)mr->base + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
	uintptr_t b = ((uintptr_t)mr->base + mr->len) & ~((uintptr_t)pg - 1);
	struct mroc_ctx_limits lim = { .sz = sizeof(lim) };
	struct memfd_map m = { 0 };
	uint64_t off;
	int fd;

	mr->zfd = -1;
	if (!mfi_rndv_enabled() || !mr->base || b <= a || b - a < MFI_RNDV_MIN ||
	    memfd_map_find(a, b, &m))
		return;
	/*
	 * A quarter of the client's registration limit (mrocd's
	 * max_mr_bytes_per_client) stays for the connections' staging regions
	 * (MFI_REGION_LEN each): fabtests' 1 GiB buffers took all of it, so
	 * fi_connect failed (-EDQUOT), and a buffer mrocd then refused had been
	 * re-backed and was copied back, 1 GiB each way for nothing (fi_rdm_atomic
	 * took 152 s).  Such a buffer is staged.
	 */
	if (!mroc_ctx_limits(d->ctx, &lim) && lim.max_mr_bytes &&
	    d->zc_bytes + (b - a) > lim.max_mr_bytes - lim.max_mr_bytes / 4)
		return;
	if (m.shared_memfd) {
		fd = memfd_map_open(&m);
		off = m.off + (a - m.start);
	} else {
		fd = reback(a, b);
		off = 0;
		mr->rebacked = fd >= 0;
	}
	if (fd < 0)
		return;
	/*
	 * The region maps the memfd from its start: off is where our pages begin in it.
	 * Peers READ only buffers registered for sending (the receiver of a rendezvous
	 * message could read the rest of the buffer too while it is registered, as
	 * with ofi_rxm's rendezvous over verbs).
	 */
	mr->zsend = !mr->access || (mr->access & FI_SEND);
	mr->zmr = mroc_mr_reg_memfd(d->ctx, fd, off + (b - a), MROC_ACCESS_LOCAL_WRITE |
				    (mr->zsend ? MROC_ACCESS_REMOTE_READ : 0));
	mr->zfd = fd;
	mr->zstart = (uint8_t *)a;
	mr->zlen = b - a;
	mr->zoff = off;
	if (!mr->zmr) {
		if (mr->rebacked)
			restore(mr);	/* not registered: private again, as it was */
		mr->rebacked = false;
		close(fd);
		mr->zfd = -1;
		return;
	}
	/*
	 * Re-backed pages stay out of children while registered (the header):
	 * our own mapping, so it cannot fail.  A memfd the application mapped
	 * shared itself is shared with its children, as it chose.
	 */
	if (mr->rebacked)
		madvise(mr->zstart, mr->zlen, MADV_DONTFORK);
	/* Kept open while registered: a second registration of these pages finds it. */
	live_add(fd);
	d->zc_bytes += mr->zlen;
}

/*
 * Pages we re-backed go back to private anonymous memory when their last
 * registration closes, their bytes copied back: malloc may later hand them
 * out again assuming what it assumes of private memory (calloc counts on
 * MADV_DONTNEED'd pages reading zero, which a memfd's do not).  Only if the
 * mapping there is still that memfd: the application may have unmapped it.
 */
static void restore(struct mfi_mr *mr)
{
	uintptr_t a = (uintptr_t)mr->zstart, b = a + mr->zlen;
	struct memfd_map m = { 0 };
	struct stat st;
	void *tmp;

	if (fstat(mr->zfd, &st) || memfd_map_find(a, b, &m) || !m.shared_memfd ||
	    m.ino != st.st_ino || m.dev != st.st_dev)
		return;
	tmp = mmap(NULL, mr->zlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (tmp == MAP_FAILED)
		return;		/* stays shared: correct, only not private */
	memcpy(tmp, mr->zstart, mr->zlen);
	if (mmap(mr->zstart, mr->zlen, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED)
		memcpy(mr->zstart, tmp, mr->zlen);
	munmap(tmp, mr->zlen);
}

void mfi_zc_dereg(struct mfi_mr *mr)
{
	if (!mr->zmr)
		return;
	mr->dom->zc_bytes -= mr->zlen;
	mroc_mr_dereg(mr->zmr);
	if (live_drop(mr->zfd) && mr->rebacked)
		restore(mr);
	if (mr->zfd >= 0)
		close(mr->zfd);
	mr->zmr = NULL;
	mr->zfd = -1;
}

/* Does mr's zero-copy region hold [p, p + len)?  Its region and the offset of p in it. */
static bool zc_holds(const struct mfi_mr *mr, const void *p, uint64_t len, bool send,
		     struct mfi_zc *out)
{
	const uint8_t *q = p;

	if (!mr || !mr->zmr || (send && !mr->zsend) || q < mr->zstart || len > mr->zlen ||
	    (uint64_t)(q - mr->zstart) > mr->zlen - len)
		return false;
	out->mr = mr->zmr;
	out->off = mr->zoff + (uint64_t)(q - mr->zstart);
	out->addr = (uint8_t *)mroc_mr_addr(mr->zmr) + out->off;
	return true;
}

bool mfi_zc_find(struct mfi_domain *d, const void *p, uint64_t len, bool send,
		 struct mfi_zc *out)
{
	/* By address, not by desc: a receive or send need not name its registration. */
	if (!len || !mfi_rndv_enabled())
		return false;
	for (size_t i = 0; i < d->nmrs; i++)
		if (zc_holds(d->mrs[i], p, len, send, out))
			return true;
	return false;
}
