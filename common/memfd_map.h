/* SPDX-License-Identifier: MIT */
/*
 * Which mapping of this process holds a buffer, and an fd of its memfd: how
 * the libfabric provider (libfabric/zcopy.c) and the NCCL plugin (nccl/reg.c)
 * find out whether mrocd can reach an application's buffer without a copy
 * (mrocd maps only shared memfds).  Reads /proc/self/maps; header-only; not
 * for the engine, which does no I/O.
 */
#ifndef MROC_COMMON_MEMFD_MAP_H
#define MROC_COMMON_MEMFD_MAP_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

struct memfd_map {
	uintptr_t start, end;
	uint64_t off;			/* of start in the mapped object */
	bool shared_memfd;		/* MAP_SHARED of a memfd ("/memfd:") */
	bool private_anon;		/* private anonymous memory (malloc, the heap) */
	dev_t dev;
	ino_t ino;
};

/*
 * The read-write mapping holding all of [a, b): 0, -ENOENT (none, or [a, b)
 * spans mappings or is not writable), -ENOTSUP (a mapping of another kind).
 */
static inline int memfd_map_find(uintptr_t a, uintptr_t b, struct memfd_map *m)
{
	char line[512], perms[8], path[256];
	unsigned int maj, min;
	unsigned long ino;
	FILE *f = fopen("/proc/self/maps", "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		path[0] = 0;
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %" SCNx64 " %x:%x %lu %255s",
			   &m->start, &m->end, perms, &m->off, &maj, &min, &ino, path) < 7 ||
		    a < m->start || a >= m->end)
			continue;
		if (b <= m->end && perms[0] == 'r' && perms[1] == 'w') {
			m->shared_memfd = perms[3] == 's' && !strncmp(path, "/memfd:", 7);
			m->private_anon = perms[3] == 'p' && ino == 0 &&
					  (!path[0] || !strcmp(path, "[heap]"));
			m->dev = makedev(maj, min);
			m->ino = ino;
			err = m->shared_memfd || m->private_anon ? 0 : -ENOTSUP;
		}
		break;
	}
	fclose(f);
	return err;
}

/*
 * An fd of our own for the memfd behind a shared_memfd mapping: through
 * /proc/self/map_files (needs CAP_SYS_ADMIN), else among the process's open
 * fds by device and inode.  The fd, or -errno.
 */
static inline int memfd_map_open(const struct memfd_map *m)
{
	char name[300];
	struct dirent *d;
	struct stat st;
	DIR *dir;
	int fd;

	snprintf(name, sizeof(name), "/proc/self/map_files/%" PRIxPTR "-%" PRIxPTR, m->start,
		 m->end);
	fd = open(name, O_RDWR | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	dir = opendir("/proc/self/fd");
	if (!dir)
		return -errno;
	fd = -ENOENT;
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(name, sizeof(name), "/proc/self/fd/%s", d->d_name);
		if (stat(name, &st) || st.st_ino != m->ino || st.st_dev != m->dev)
			continue;
		fd = open(name, O_RDWR | O_CLOEXEC);
		fd = fd >= 0 ? fd : -errno;
		break;
	}
	closedir(dir);
	return fd;
}

#endif
