/* SPDX-License-Identifier: MIT */
/*
 * mroc-cli's pure helpers: numbers with units for the text columns, rates,
 * argument parsing and Prometheus names.  No I/O and no state, so the unit
 * tests (tests/unit/test_cli_print.c) link this file alone.
 *
 * The fmt_* formatters write a NUL-terminated string into buf (len bytes,
 * FMT_LEN is always enough) and return buf.  Scaled values keep three
 * significant digits without trailing zeros: "12.3us", "64KiB", "1.5Gbit/s".
 */
#ifndef MROC_CLI_FMT_H
#define MROC_CLI_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FMT_LEN 32

/* A duration: "0", "850ns", "12.3us", "1.23ms", "4.5s" (no larger unit). */
char *fmt_ns(char *buf, size_t len, uint64_t ns);
/* Bytes, binary multiples: "512B", "16.9KiB", "64KiB", "1.5MiB", ... "EiB". */
char *fmt_bytes(char *buf, size_t len, uint64_t bytes);
/* Bits per second, decimal multiples: "0", "950bit/s", "12.5Mbit/s", "1.2Gbit/s". */
char *fmt_bps(char *buf, size_t len, uint64_t bps);
/* A count or rate with an SI suffix: "17", "1.23k", "45.6M"; negative as "-". */
char *fmt_si(char *buf, size_t len, double v);
/* An uptime: "7.2s", "5m 6s", "4h 5m", "3d 4h". */
char *fmt_duration(char *buf, size_t len, uint64_t ns);

/* Per second from two readings dt_s seconds apart; 0 when the counter went back (reset) or dt_s <= 0. */
double fmt_rate(uint64_t now, uint64_t before, double dt_s);

/* "65537" or "0x10001" -> 0..UINT32_MAX; 0 or -EINVAL (also for junk after the number). */
int fmt_parse_u32(const char *s, uint32_t *out);
/* Watch interval: "1", "0.5" -> seconds in [0.1, 3600]; 0 or -EINVAL. */
int fmt_parse_interval(const char *s, double *out);

/* Lower-case letters, digits and '_', starting with a letter, no "__" and no trailing '_'. */
bool fmt_is_snake_case(const char *s);

/*
 * A Prometheus metric name "<prefix><name><suffix>" with every character
 * outside [a-zA-Z0-9_:] turned into '_' (and '_' first if it would start
 * with a digit); -ENOSPC when it does not fit in len.
 */
int fmt_prom_name(char *buf, size_t len, const char *prefix, const char *name, const char *suffix);
/* A label value with '\\', '"' and newline escaped; -ENOSPC when it does not fit. */
int fmt_prom_label(char *buf, size_t len, const char *value);

#endif
