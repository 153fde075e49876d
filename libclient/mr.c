// SPDX-License-Identifier: MIT
/*
 * Memory regions: a memfd mapped here and (sent with SCM_RIGHTS) in mrocd,
 * named by the daemon's local and remote keys.  The context's list of
 * regions is the lkey -> (base, len) table that turns a work request's
 * address into the offset the daemon understands.
 *
 * Every memfd is sealed against shrinking before the daemon sees it, so a
 * region cannot be cut short under the daemon's mapping (abi.h); the daemon
 * seals it against writes by new mappings once it maps it (no hole can be
 * punched in what it pins), so every mapping here is made before.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "memfd_map.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23	/* Linux 5.14 */
#endif

#define ACCESS_ALL (MROC_ACCESS_LOCAL_WRITE | MROC_ACCESS_REMOTE_WRITE | MROC_ACCESS_REMOTE_READ | \
		    MROC_ACCESS_REMOTE_ATOMIC)

/* Register [addr, addr + len), mapped from memfd, with the daemon; the mapping becomes the region's. */
static struct mroc_mr *mr_register(struct mroc_ctx *ctx, int memfd, void *addr, size_t len,
				   unsigned int access, uint32_t flags)
{
	struct mroc_msg_mr_reg m = { .h.type = MROC_MSG_MR_REG, .len = len, .access = access,
				     .flags = flags };
	struct mroc_mr *mr;
	struct stat st;
	int err;

	if (fstat(memfd, &st) < 0) {
		err = -errno;
		goto err;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		err = -ENOMEM;
		goto err;
	}
	err = libmroc_request(ctx, &m, sizeof(m), &memfd, 1);
	if (err)
		goto err_free;
	mr->ctx = ctx;
	mr->addr = addr;
	mr->len = len;
	mr->lkey = m.lkey;
	mr->rkey = m.rkey;
	mr->access = access;
	mr->dev = st.st_dev;
	mr->ino = st.st_ino;
	mr->keep = flags & MROC_MR_REG_KEEP_FILE;

	pthread_mutex_lock(&ctx->list_lock);
	mr->next = ctx->mrs;
	ctx->mrs = mr;
	pthread_mutex_unlock(&ctx->list_lock);
	return mr;

err_free:
	free(mr);
err:
	errno = -err;
	return NULL;
}

static bool mr_args_valid(struct mroc_ctx *ctx, size_t len, unsigned int access)
{
	return ctx && len > 0 && !(access & ~ACCESS_ALL);
}

struct mroc_mr *mroc_mr_alloc(struct mroc_ctx *ctx, size_t len, unsigned int access)
{
	struct mroc_mr *mr;
	void *addr;
	int fd, err;

	if (!mr_args_valid(ctx, len, access)) {
		errno = EINVAL;
		return NULL;
	}
	fd = memfd_create("mroc-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, len) < 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
		goto err_close;
	/*
	 * Populated here, by the application (so in mroc_mr_reg_memfd and the QP
	 * rings): mrocd locks what it maps, like verbs' registration, and a page
	 * its mlock had to allocate is charged to mrocd's memory cgroup instead
	 * of the application's, and allocated in mrocd's control thread, which
	 * every other client's call waits for (scripts/reg-stall.sh: 1 GiB of a
	 * fresh memfd held it ~0.4 s, populated ~0.05).
	 */
	addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (addr == MAP_FAILED)
		goto err_close;
	mr = mr_register(ctx, fd, addr, len, access, 0);
	if (!mr)
		goto err_unmap;
	close(fd);	/* the daemon holds its own reference and mapping */
	return mr;

err_unmap:
	err = errno;
	munmap(addr, len);
	errno = err;
err_close:
	err = errno;
	close(fd);
	errno = err;
	return NULL;
}

/*
 * A memfd the daemon sealed against new writable mappings (F_SEAL_FUTURE_WRITE)
 * when it registered it for a region of this context that still lives: mmap
 * cannot map it writable again, but mremap can copy a writable shared mapping
 * (old size 0), so the new region's mapping is a copy of the longest such
 * region's, from the file's start (the daemon does the same with its own).
 * Only if that address still holds our mapping of the file (/proc/self/maps):
 * an application that mapped something else over it would otherwise have the
 * region's address show another file than the daemon's.  Pages beyond that
 * region are populated here, as MAP_POPULATE would.  MAP_FAILED and EPERM
 * when no region of this context maps the file.
 */
static void *map_again(struct mroc_ctx *ctx, const struct stat *st, size_t len)
{
	struct memfd_map m;
	void *addr = MAP_FAILED;
	size_t had = 0;
	int err = EPERM;

	pthread_mutex_lock(&ctx->list_lock);
	for (struct mroc_mr *mr = ctx->mrs; mr; mr = mr->next)
		if (mr->dev == st->st_dev && mr->ino == st->st_ino && mr->len > had) {
			had = mr->len;
			addr = mr->addr;
		}
	if (!had)
		for (struct libmroc_anchor *a = ctx->anchors; a && !had; a = a->next)
			if (a->dev == st->st_dev && a->ino == st->st_ino) {
				had = (size_t)sysconf(_SC_PAGESIZE);
				addr = a->addr;
			}
	/* Under the lock: mroc_mr_dereg unmaps a region only once it is off the list. */
	if (had && (memfd_map_find((uintptr_t)addr, (uintptr_t)addr + 1, &m) ||
		    !m.shared_memfd || m.dev != st->st_dev || m.ino != st->st_ino ||
		    m.off + ((uintptr_t)addr - m.start) != 0)) {
		had = 0;
		addr = MAP_FAILED;
	}
	if (had) {
		addr = mremap(addr, 0, len, MREMAP_MAYMOVE);
		err = errno;
	}
	pthread_mutex_unlock(&ctx->list_lock);
	if (addr != MAP_FAILED && len > had &&
	    madvise((uint8_t *)addr + had, len - had, MADV_POPULATE_WRITE)) {
		err = errno;
		munmap(addr, len);
		addr = MAP_FAILED;
	}
	if (addr == MAP_FAILED)
		errno = err;
	return addr;
}

struct mroc_mr *mroc_mr_reg_memfd(struct mroc_ctx *ctx, int memfd, size_t len,
				  unsigned int access)
{
	struct mroc_mr *mr;
	struct stat st;
	void *addr;
	int err;

	if (!mr_args_valid(ctx, len, access)) {
		errno = EINVAL;
		return NULL;
	}
	if (fstat(memfd, &st) < 0)
		return NULL;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size < len) {
		errno = EINVAL;
		return NULL;
	}
	/* The daemon requires it (abi.h); a memfd made without MFD_ALLOW_SEALING refuses. */
	if (fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0) {
		errno = EPERM;
		return NULL;
	}
	addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, memfd, 0);
	if (addr == MAP_FAILED && errno == EPERM)
		addr = map_again(ctx, &st, len);	/* registered before: sealed */
	if (addr == MAP_FAILED)
		return NULL;
	/* Sending the fd does not consume it: the application keeps its own. */
	mr = mr_register(ctx, memfd, addr, len, access, MROC_MR_REG_KEEP_FILE);
	if (!mr) {
		err = errno;
		munmap(addr, len);
		errno = err;
	}
	return mr;
}

/*
 * The last region of an application's memfd is going (under list_lock): a
 * page of its mapping stays, an mremap copy, so that map_again can copy a
 * writable mapping when the application registers the file again (mrocd
 * keeps one of its own: MROC_MR_REG_KEEP_FILE).  Until the context closes.
 */
static void anchor_file(struct mroc_ctx *ctx, const struct mroc_mr *mr)
{
	struct libmroc_anchor *a;

	if (!mr->keep)
		return;
	for (const struct mroc_mr *o = ctx->mrs; o; o = o->next)
		if (o->dev == mr->dev && o->ino == mr->ino)
			return;
	for (a = ctx->anchors; a; a = a->next)
		if (a->dev == mr->dev && a->ino == mr->ino)
			return;
	a = calloc(1, sizeof(*a));
	if (!a)
		return;
	a->addr = mremap(mr->addr, 0, (size_t)sysconf(_SC_PAGESIZE), MREMAP_MAYMOVE);
	if (a->addr == MAP_FAILED) {
		free(a);
		return;
	}
	a->dev = mr->dev;
	a->ino = mr->ino;
	a->next = ctx->anchors;
	ctx->anchors = a;
}

int mroc_mr_dereg(struct mroc_mr *mr)
{
	struct mroc_msg_mr_dereg m = { .h.type = MROC_MSG_MR_DEREG };
	struct mroc_ctx *ctx;
	struct mroc_mr **pp;
	int err;

	if (!mr)
		return -EINVAL;
	ctx = mr->ctx;
	/* Out of the table first, so that new work naming it fails here. */
	pthread_mutex_lock(&ctx->list_lock);
	for (pp = &ctx->mrs; *pp && *pp != mr; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = mr->next;
	atomic_fetch_add_explicit(&ctx->mr_gen, 1, memory_order_release);
	anchor_file(ctx, mr);
	pthread_mutex_unlock(&ctx->list_lock);

	m.lkey = mr->lkey;
	err = libmroc_request(ctx, &m, sizeof(m), NULL, 0);
	if (err && err != -ENOTCONN)
		pr_warn("mrocd refused to deregister region %#x: %s", mr->lkey, mroc_strerror(err));
	/* The daemon has its own mapping: ours can go whatever it said. */
	munmap(mr->addr, mr->len);
	free(mr);
	return err;
}

void libmroc_mr_drop_all(struct mroc_ctx *ctx)
{
	for (;;) {
		struct mroc_mr *mr;

		pthread_mutex_lock(&ctx->list_lock);
		mr = ctx->mrs;
		pthread_mutex_unlock(&ctx->list_lock);
		if (!mr)
			break;
		mroc_mr_dereg(mr);
	}
	while (ctx->anchors) {
		struct libmroc_anchor *a = ctx->anchors;

		ctx->anchors = a->next;
		munmap(a->addr, (size_t)sysconf(_SC_PAGESIZE));
		free(a);
	}
}

int libmroc_sge_offset(struct mroc_ctx *ctx, struct libmroc_mr_cache *c,
		       const struct mroc_sge *sg, uint64_t *off)
{
	uintptr_t addr = (uintptr_t)sg->addr, base;

	if (sg->length > INT32_MAX)
		return -EINVAL;
	if (sg->length == 0) {
		*off = 0;	/* no bytes: nothing for the daemon to check or touch */
		return 0;
	}
	/* Pairs with the release in mroc_mr_dereg: a stale cache is seen as stale. */
	if (!c->base || c->lkey != sg->lkey ||
	    c->gen != atomic_load_explicit(&ctx->mr_gen, memory_order_acquire)) {
		struct mroc_mr *mr;

		pthread_mutex_lock(&ctx->list_lock);
		for (mr = ctx->mrs; mr && mr->lkey != sg->lkey; mr = mr->next)
			;
		if (mr) {
			c->base = mr->addr;
			c->len = mr->len;
			c->lkey = mr->lkey;
			c->gen = atomic_load_explicit(&ctx->mr_gen, memory_order_relaxed);
		}
		pthread_mutex_unlock(&ctx->list_lock);
		if (!mr)
			return -EFAULT;
	}
	base = (uintptr_t)c->base;
	if (addr < base || addr - base > c->len || c->len - (addr - base) < sg->length)
		return -EFAULT;
	*off = addr - base;
	return 0;
}

void *mroc_mr_addr(const struct mroc_mr *mr)
{
	return mr ? mr->addr : NULL;
}

size_t mroc_mr_len(const struct mroc_mr *mr)
{
	return mr ? mr->len : 0;
}

uint32_t mroc_mr_lkey(const struct mroc_mr *mr)
{
	return mr ? mr->lkey : 0;
}

uint32_t mroc_mr_rkey(const struct mroc_mr *mr)
{
	return mr ? mr->rkey : 0;
}
