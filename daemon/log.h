/* SPDX-License-Identifier: MIT */
/*
 * mrocd logging: one line per message on stderr, prefixed "<N>" with the
 * syslog priority so journald files it right.  Errors are logged once, where
 * they are handled.  The data path uses pr_*_rl, limited per call site, and
 * so does every line an outsider can trigger at will: a tenant (a client
 * connecting, going, sending a bad request), a peer on the network (a
 * control link coming up or going down), a user of the admin socket.
 */
#ifndef MROCD_LOG_H
#define MROCD_LOG_H

#include <stdarg.h>
#include <stdint.h>
#include <syslog.h>

void log_set_level(int level);		/* LOG_ERR .. LOG_DEBUG */
int log_get_level(void);
/* "err", "warning", "info", "debug" -> LOG_*; -EINVAL otherwise. */
int log_level_parse(const char *name);
void log_msg(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vmsg(int prio, const char *fmt, va_list ap);

/* Rate limit: at most `burst` messages per `interval_ms`, then one "suppressed N" line. */
struct log_rl {
	uint64_t window_start_ms;
	uint32_t printed, suppressed;
};
void log_msg_rl(struct log_rl *rl, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define pr_err(...)	log_msg(LOG_ERR, __VA_ARGS__)
#define pr_warn(...)	log_msg(LOG_WARNING, __VA_ARGS__)
#define pr_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define pr_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)
#define pr_rl(prio, ...)						\
	do {								\
		static struct log_rl __rl;				\
		log_msg_rl(&__rl, prio, __VA_ARGS__);			\
	} while (0)
#define pr_warn_rl(...)	pr_rl(LOG_WARNING, __VA_ARGS__)
#define pr_err_rl(...)	pr_rl(LOG_ERR, __VA_ARGS__)
#define pr_info_rl(...)	pr_rl(LOG_INFO, __VA_ARGS__)
#define pr_debug_rl(...)	pr_rl(LOG_DEBUG, __VA_ARGS__)

#endif
