// SPDX-License-Identifier: MIT
/*
 * Registrations: an application buffer becomes an mroc region.
 *
 * mrocd reads and writes client memory through shared memfds only, so:
 *  - a buffer inside a shared mapping of a memfd (MAP_SHARED, "/memfd:" in
 *    /proc/self/maps) is registered as that memfd (mroc_mr_reg_memfd): the
 *    region maps the same pages a second time and nothing is copied.  The fd
 *    is found through /proc/self/map_files (needs CAP_SYS_ADMIN), else among
 *    the process's open fds by device and inode; the memfd must allow sealing
 *    (MFD_ALLOW_SEALING: libmroc seals it against shrinking, mrocd against new
 *    writable mappings; this context registers it again after its last
 *    registration went, from a page of the mapping libmroc and mrocd keep;
 *    if even that fails, a bounce region, below, serves it);
 *  - any other buffer (malloc, cudaHostAlloc) gets a bounce region of its size:
 *    a send copies the payload in before it posts, a receive copies it out
 *    when it completes (net.c).  One memcpy per message on each side.
 * Every registration is cached by range and counted: registering a range
 * inside a cached one takes a reference and costs nothing (regIsGlobal).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memfd_map.h"
#include "plugin.h"

#define ACCESS	(MROC_ACCESS_LOCAL_WRITE | MROC_ACCESS_REMOTE_WRITE)

/* Zero-copy: the memfd itself, from its start to the mapping's end. */
static int reg_memfd(void *data, size_t size, struct mnccl_reg *r)
{
	struct memfd_map m;
	int fd, err;

	err = memfd_map_find((uintptr_t)data, (uintptr_t)data + size, &m);
	if (err || !m.shared_memfd)
		return -ENOENT;		/* not in a shared memfd mapping (or unreadable maps) */
	fd = memfd_map_open(&m);
	if (fd < 0)
		return fd;
	r->mr = mroc_mr_reg_memfd(mnccl.ctx, fd, m.off + (m.end - m.start), ACCESS);
	err = r->mr ? 0 : -errno;
	close(fd);
	if (err)
		return err;
	r->base = m.start;
	r->len = m.end - m.start;
	r->mr_off = m.off;
	r->copy = false;
	return 0;
}

static int reg_copy(void *data, size_t size, struct mnccl_reg *r)
{
	r->mr = mroc_mr_alloc(mnccl.ctx, size, ACCESS);
	if (!r->mr)
		return -errno;
	r->base = (uintptr_t)data;
	r->len = size;
	r->mr_off = 0;
	r->copy = true;
	return 0;
}

nccl_res mnccl_reg(void *data, size_t size, struct mnccl_reg **out)
{
	struct mnccl_reg *r;
	int err;

	if (!data || !size || !out)
		return NCCL_ERR_INVALID_ARG;
	pthread_mutex_lock(&mnccl.lock);
	for (r = mnccl.regs; r && !mnccl_reg_has(r, data, size); r = r->next)
		;
	if (r) {
		r->refs++;
		goto done;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		pthread_mutex_unlock(&mnccl.lock);
		return NCCL_ERR_SYSTEM;
	}
	err = reg_memfd(data, size, r);
	if (err) {
		int why = err;

		err = reg_copy(data, size, r);
		/* -EPERM: a memfd mrocd sealed for a registration that is gone (mroc.h). */
		if (!err)
			MNCCL_INFO("%p (%zu bytes) %s%s: copied through a bounce region", data, size,
				   why == -ENOENT ? "is not in a shared memfd" :
				   "cannot be registered as its memfd: ",
				   why == -ENOENT ? "" : mroc_strerror(why));
	}
	if (err) {
		pthread_mutex_unlock(&mnccl.lock);
		MNCCL_WARN("cannot register %zu bytes: %s", size, mroc_strerror(err));
		free(r);
		return NCCL_ERR_SYSTEM;
	}
	r->refs = 1;
	r->next = mnccl.regs;
	mnccl.regs = r;
done:
	pthread_mutex_unlock(&mnccl.lock);
	*out = r;
	return NCCL_OK;
}

nccl_res mnccl_dereg(struct mnccl_reg *r)
{
	struct mnccl_reg **pp;

	pthread_mutex_lock(&mnccl.lock);
	for (pp = &mnccl.regs; *pp && *pp != r; pp = &(*pp)->next)
		;
	if (!*pp) {
		pthread_mutex_unlock(&mnccl.lock);
		return NCCL_ERR_INVALID_ARG;
	}
	/*
	 * Its last registration, while a receive may still land in it or a zero-copy send
	 * read it: refused, it stays registered (freed, the receive's completion read the
	 * region after it, and the peer's WRITE found no region).  Call again once the
	 * requests have completed or their comm is closed.
	 */
	if (r->refs == 1 && __atomic_load_n(&r->busy, __ATOMIC_RELAXED) > 0) {
		pthread_mutex_unlock(&mnccl.lock);
		MNCCL_WARN("deregMr of %zu bytes that %d request(s) in flight use", r->len,
			   __atomic_load_n(&r->busy, __ATOMIC_RELAXED));
		return NCCL_ERR_INVALID_USAGE;
	}
	if (--r->refs == 0) {
		*pp = r->next;
		mroc_mr_dereg(r->mr);
		free(r);
	}
	pthread_mutex_unlock(&mnccl.lock);
	return NCCL_OK;
}

/* At finalize: whatever NCCL left registered (the context's close frees the regions). */
void mnccl_reg_drop_all(void)
{
	while (mnccl.regs) {
		struct mnccl_reg *r = mnccl.regs;

		mnccl.regs = r->next;
		free(r);
	}
}
