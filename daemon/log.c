// SPDX-License-Identifier: MIT
/*
 * mrocd logging (log.h).
 *
 * Format: every line is "<N>" followed by the message, N being the syslog
 * priority (LOG_ERR = 3 ... LOG_DEBUG = 7) and nothing else: no program
 * name, no time stamp, no facility bits.  That is what systemd's stream
 * logging parses (SyslogLevelPrefix=, on by default): journald strips the
 * prefix, files the line at that priority and adds the identifier and time
 * itself.  Run by hand, the prefix stays visible, which is cheap to read.
 *
 * A message is formatted into a buffer on the stack, trailing newlines are
 * dropped, embedded newlines start a new line with the same prefix, and the
 * whole thing goes out in one write(2): lines from different threads never
 * interleave (the kernel keeps a write of up to PIPE_BUF bytes to a pipe in
 * one piece, and journald reads stderr through a pipe or socket).  Longer
 * messages are cut, ending in "...".
 *
 * Rate limiting (log_msg_rl): per call site, at most LOG_RL_BURST messages
 * per LOG_RL_INTERVAL_MS of CLOCK_MONOTONIC; the first message of a later
 * window is preceded by one "N messages suppressed" line at the same
 * priority.  Messages below the level are neither printed nor counted.
 *
 * errno is saved and restored, so "%m" works and a log call never changes
 * what the caller is about to return.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "mroc_util.h"

#define LOG_LINE_MAX		4096	/* = PIPE_BUF: one atomic write */
#define LOG_RL_BURST		10
#define LOG_RL_INTERVAL_MS	1000

static int log_level = LOG_INFO;
static int log_fd = STDERR_FILENO;
static pthread_mutex_t log_rl_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t log_clock_ms(void)
{
	return mono_ns() / 1000000;
}

static uint64_t (*log_now_ms)(void) = log_clock_ms;

/*
 * Test hooks for tests/unit/test_log.c, which declares them itself: log.h
 * is the fixed API and does not show them.  NULL / -1 restore the default.
 */
void log_test_set_clock(uint64_t (*now_ms)(void));
void log_test_set_fd(int fd);

void log_test_set_clock(uint64_t (*now_ms)(void))
{
	log_now_ms = now_ms ? now_ms : log_clock_ms;
}

void log_test_set_fd(int fd)
{
	__atomic_store_n(&log_fd, fd >= 0 ? fd : STDERR_FILENO, __ATOMIC_RELAXED);
}

void log_set_level(int level)
{
	if (level < LOG_EMERG)
		level = LOG_EMERG;
	if (level > LOG_DEBUG)
		level = LOG_DEBUG;
	__atomic_store_n(&log_level, level, __ATOMIC_RELAXED);
}

int log_get_level(void)
{
	return __atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

static const struct {
	const char *name;
	int level;
} log_level_names[] = {
	{ "err", LOG_ERR },
	{ "error", LOG_ERR },
	{ "warning", LOG_WARNING },
	{ "warn", LOG_WARNING },
	{ "notice", LOG_NOTICE },
	{ "info", LOG_INFO },
	{ "debug", LOG_DEBUG },
};

int log_level_parse(const char *name)
{
	if (!name)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(log_level_names) / sizeof(log_level_names[0]); i++)
		if (!strcmp(name, log_level_names[i].name))
			return log_level_names[i].level;
	return -EINVAL;
}

static int log_enabled(int prio)
{
	return LOG_PRI(prio) <= log_get_level();
}

/* Write all of buf in one write(2) unless the kernel cuts it short. */
static void log_write(const char *buf, size_t len)
{
	int fd = __atomic_load_n(&log_fd, __ATOMIC_RELAXED);

	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;		/* nowhere to report it */
		buf += n;
		len -= (size_t)n;
	}
}

/*
 * Copy msg into out, one "<N>" prefix per line, one '\n' at the end.
 * Returns the length; cuts the message with "..." when it does not fit.
 */
static size_t log_format_lines(char *out, size_t cap, int pri, const char *msg)
{
	static const char cut[] = "...\n";
	char prefix[8];
	size_t plen, len = 0, mlen = strlen(msg);

	plen = (size_t)snprintf(prefix, sizeof(prefix), "<%d>", pri);
	while (mlen && msg[mlen - 1] == '\n')
		mlen--;
	for (size_t i = 0; ; ) {
		const char *nl = memchr(msg + i, '\n', mlen - i);
		size_t end = nl ? (size_t)(nl - msg) : mlen;

		/* Room for prefix, line, '\n' and, if cut, the "..." marker. */
		if (len + plen + (end - i) + 1 > cap) {
			size_t room = cap - (sizeof(cut) - 1);

			if (len > room) {
				len = room;	/* cut into the line before */
			} else if (len + plen < room) {
				memcpy(out + len, prefix, plen);
				len += plen;
				memcpy(out + len, msg + i, room - len);	/* < the line */
				len = room;
			}
			memcpy(out + len, cut, sizeof(cut) - 1);
			return len + sizeof(cut) - 1;
		}
		memcpy(out + len, prefix, plen);
		len += plen;
		memcpy(out + len, msg + i, end - i);
		len += end - i;
		out[len++] = '\n';
		if (!nl)
			return len;
		i = end + 1;
	}
}

static void log_emit(int prio, const char *fmt, va_list ap)
{
	char msg[LOG_LINE_MAX], line[LOG_LINE_MAX];
	size_t len;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	len = log_format_lines(line, sizeof(line), LOG_PRI(prio), msg);
	log_write(line, len);
}

void log_vmsg(int prio, const char *fmt, va_list ap)
{
	int saved = errno;

	if (log_enabled(prio))
		log_emit(prio, fmt, ap);
	errno = saved;
}

void log_msg(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(prio, fmt, ap);
	va_end(ap);
}

/* Print the "suppressed" line through the same path as any other message. */
static void log_suppressed(int prio, uint32_t n)
{
	log_msg(prio, "%u message%s suppressed", n, n == 1 ? "" : "s");
}

void log_msg_rl(struct log_rl *rl, int prio, const char *fmt, ...)
{
	uint32_t suppressed = 0;
	uint64_t now;
	bool print;
	va_list ap;
	int saved = errno;

	if (!log_enabled(prio))
		return;
	now = log_now_ms();
	pthread_mutex_lock(&log_rl_lock);
	/*
	 * window_start_ms holds the start + 1, so that 0 means never used (a
	 * static struct starts zeroed) whatever the clock reads.
	 */
	if (!rl->window_start_ms || now + 1 - rl->window_start_ms >= LOG_RL_INTERVAL_MS) {
		suppressed = rl->suppressed;
		rl->window_start_ms = now + 1;
		rl->printed = 0;
		rl->suppressed = 0;
	}
	print = rl->printed < LOG_RL_BURST;
	if (print)
		rl->printed++;
	else
		rl->suppressed++;
	pthread_mutex_unlock(&log_rl_lock);

	if (suppressed)
		log_suppressed(prio, suppressed);
	if (print) {
		errno = saved;		/* for %m */
		va_start(ap, fmt);
		log_emit(prio, fmt, ap);
		va_end(ap);
	}
	errno = saved;
}
