// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the configuration parser (daemon/config*.c over
 * libconfig).  Any file: config_load returns 0 or a negative errno with a
 * one-line message; what it accepts, config_dump prints as a file that loads
 * back to the same configuration (dump, load, dump gives the same text).
 * Inputs with @include are skipped: they would read files named by the
 * input (/dev/stdin, ...), which a harness must not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "log.h"

#define FUZZ_ASSERT(c)	do { if (!(c)) abort(); } while (0)

/* One memfd, rewritten for each file (a new one per input cost a third of the time). */
static const char *to_file(const void *data, size_t len)
{
	static char path[64];
	static int fd = -1;

	if (fd < 0) {
		fd = memfd_create("fuzz-config", MFD_CLOEXEC);
		FUZZ_ASSERT(fd >= 0);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	FUZZ_ASSERT(!ftruncate(fd, 0) && pwrite(fd, data, len, 0) == (ssize_t)len);
	return path;
}

static char *dump(const struct mrocd_config *c, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);

	FUZZ_ASSERT(f && !config_dump(f, c));
	fclose(f);
	return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static struct mrocd_config a, b;
	char err[512];
	size_t la, lb;
	char *ta, *tb;
	int ret;

	if (memmem(data, len, "@include", 8))
		return 0;
	log_set_level(LOG_EMERG);	/* quiet: errors are the point */
	err[0] = 0;
	ret = config_load(to_file(data, len), &a, err, sizeof(err));
	if (ret) {
		FUZZ_ASSERT(ret < 0 && err[0] && !strchr(err, '\n'));
		return 0;
	}
	ta = dump(&a, &la);
	ret = config_load(to_file(ta, la), &b, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "a dumped configuration does not load: %s\n%s", err, ta);
		abort();
	}
	tb = dump(&b, &lb);
	FUZZ_ASSERT(la == lb && !memcmp(ta, tb, la));
	free(ta);
	free(tb);
	return 0;
}

/*
 * ASan's quarantine (256 MB by default) keeps freed memory from being reused,
 * so every load's FILE buffers, libconfig's settings and our parse state
 * landed on fresh pages: page faults were a third of the time.  16 MB still
 * holds the memory of the last hundred inputs or so: a use after free inside
 * an input is still caught.  ASAN_OPTIONS overrides.
 */
const char *__asan_default_options(void);

const char *__asan_default_options(void)
{
	return "quarantine_size_mb=16";
}

/*
 * libconfig 1.7.3 (Debian 12) leaks its string buffer (strbuf_append) when
 * the scanner gives up inside a string: not ours to fix, and a daemon loads
 * its configuration only at start and on SIGHUP.
 */
const char *__lsan_default_suppressions(void);

const char *__lsan_default_suppressions(void)
{
	return "leak:libconfig.so\n";
}
