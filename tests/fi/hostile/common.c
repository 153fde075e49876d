// SPDX-License-Identifier: MIT
/*
 * fi_hostile: the basics (failing, notes, the deadline, byte patterns) and the line between
 * victim and attacker: a TCP connection carrying one word or a few numbers per line.
 */
#include "hostile.h"

const char *role = "fi_hostile";
int ctl = -1;
time_t deadline;

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fi_hostile %s: FAIL: ", role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (ctl >= 0)
		dprintf(ctl, "FAIL\n");
	exit(1);
}

void note(const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

void check_deadline(const char *what)
{
	if (time(NULL) > deadline)
		die("timed out: %s", what);
}

static uint8_t pat(uint64_t i, uint8_t seed)
{
	return (uint8_t)(i * 131 + seed + (i >> 8));
}

void fill(uint8_t *b, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(i, seed);
}

bool is_pat(const uint8_t *b, size_t n, uint8_t seed, uint64_t off)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(off + i, seed))
			return false;
	return true;
}

bool all(const uint8_t *b, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != v)
			return false;
	return true;
}

/* ---- the line between victim and attacker ------------------------------------- */

void (*idle_fn)(void);
static char linebuf[4096];
static size_t linelen;

void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	buf[n++] = '\n';
	if (write(ctl, buf, (size_t)n) != n)
		die("control line: %s", strerror(errno));
}

/* The next line, progress running meanwhile; "FAIL" from the other side ends us too. */
char *hear(void)
{
	static char out[4096];

	for (;;) {
		char *nl = memchr(linebuf, '\n', linelen);
		struct pollfd p = { .fd = ctl, .events = POLLIN };
		ssize_t n;

		if (nl) {
			size_t l = (size_t)(nl - linebuf);

			memcpy(out, linebuf, l);
			out[l] = 0;
			memmove(linebuf, nl + 1, linelen - l - 1);
			linelen -= l + 1;
			if (!strcmp(out, "FAIL")) {
				ctl = -1;
				die("the other side failed");
			}
			return out;
		}
		if (idle_fn)
			idle_fn();
		check_deadline("the other side");
		if (poll(&p, 1, idle_fn ? 0 : 100) <= 0)
			continue;
		n = read(ctl, linebuf + linelen, sizeof(linebuf) - linelen - 1);
		if (n <= 0)
			die("control line closed");
		linelen += (size_t)n;
	}
}

void expect(const char *word)
{
	char *l = hear();

	if (strncmp(l, word, strlen(word)))
		die("expected \"%s\", heard \"%s\"", word, l);
}
