// SPDX-License-Identifier: MIT
/*
 * Reclaim forced on a process's shared memory, as proactive reclaim (DAMON
 * pageout, memory.reclaim) does it (end-to-end test helper: test_pinning.sh):
 * process_madvise(MADV_PAGEOUT) on every mapping of PID whose name contains
 * NAME (a memfd's, e.g. "memfd:mroc-"), again and again until STOPFILE
 * exists (at most SECONDS).  Unlocked pages that only PID maps are unmapped
 * from its page tables (and, shmem without swap, left in memory: PID's next
 * touch is a minor fault); the kernel refuses locked mappings (EINVAL).
 *
 *   pageout PID NAME SECONDS STOPFILE
 *
 * First checks that MADV_PAGEOUT unmaps an unlocked memfd of its own here
 * (exit 77 when it does not: nothing to test).  Prints "passes P, mappings M,
 * advised B bytes, refused R" (R: mappings the kernel refused).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

/* Rss of our mapping at addr, kB (-1: not found). */
static long rss_kb(const void *addr)
{
	char line[512], key[32];
	long v = -1;
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "re");

	if (!f)
		return -1;
	snprintf(key, sizeof(key), "%lx-", (unsigned long)addr);
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, strlen(key)))
			in = 1;
		else if (in && !strncmp(line, "Rss:", 4)) {
			v = atol(line + 4);
			break;
		}
	}
	fclose(f);
	return v;
}

static int self_check(void)
{
	size_t len = 1 << 20;
	int fd = memfd_create("pageout-check", MFD_CLOEXEC);
	char *p;
	long before, after;

	if (fd < 0 || ftruncate(fd, (off_t)len))
		return -errno;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	memset(p, 1, len);
	before = rss_kb(p);
	if (madvise(p, len, MADV_PAGEOUT))
		return -errno;
	after = rss_kb(p);
	munmap(p, len);
	close(fd);
	return before > 0 && after == 0 ? 0 : -EOPNOTSUPP;
}

int main(int argc, char **argv)
{
	uint64_t passes = 0, maps = 0, bytes = 0, refused = 0;
	struct timespec t0, t;
	char path[64], line[512];
	int pidfd, err;

	if (argc != 5) {
		fprintf(stderr, "usage: pageout PID NAME SECONDS STOPFILE\n");
		return 2;
	}
	err = self_check();
	if (err) {
		printf("SKIP: MADV_PAGEOUT does not unmap an unlocked memfd here (%s)\n",
		       strerror(-err));
		return 77;
	}
	pidfd = (int)syscall(SYS_pidfd_open, atoi(argv[1]), 0);
	if (pidfd < 0) {
		printf("SKIP: pidfd_open: %s\n", strerror(errno));
		return 77;
	}
	snprintf(path, sizeof(path), "/proc/%s/maps", argv[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		FILE *f = fopen(path, "re");

		if (!f)
			break;	/* it ended */
		while (fgets(line, sizeof(line), f)) {
			unsigned long lo, hi;
			struct iovec iov;
			long n;

			if (!strstr(line, argv[2]) || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
				continue;
			iov = (struct iovec){ (void *)lo, hi - lo };
			maps++;
			n = syscall(SYS_process_madvise, pidfd, &iov, 1UL, MADV_PAGEOUT, 0U);
			if (n > 0)
				bytes += (uint64_t)n;
			else if (n < 0 && errno == ENOSYS) {
				printf("SKIP: no process_madvise\n");
				return 77;
			} else if (n < 0)
				refused++;
		}
		fclose(f);
		passes++;
		usleep(20000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (access(argv[4], F_OK) && t.tv_sec - t0.tv_sec < atoi(argv[3]));
	printf("passes %" PRIu64 ", mappings %" PRIu64 ", advised %" PRIu64 " bytes, refused %"
	       PRIu64 "\n", passes, maps, bytes, refused);
	return 0;
}
