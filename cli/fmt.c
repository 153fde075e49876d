// SPDX-License-Identifier: MIT
/* mroc-cli's pure helpers (see fmt.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

/* v with three significant digits, trailing zeros dropped, then unit. */
static char *sig3(char *buf, size_t len, double v, const char *unit)
{
	int prec = v < 9.995 ? 2 : v < 99.95 ? 1 : 0;
	char *dot, *end;

	snprintf(buf, len, "%.*f", prec, v);
	dot = strchr(buf, '.');
	if (dot) {
		end = buf + strlen(buf) - 1;
		while (end > dot && *end == '0')
			*end-- = 0;
		if (end == dot)
			*end = 0;
	}
	snprintf(buf + strlen(buf), len - strlen(buf), "%s", unit);
	return buf;
}

/* Scale v by base until below 999.5 (so it prints in at most three digits). */
static char *scaled(char *buf, size_t len, double v, double base, const char *const *units,
		    int nunits)
{
	int u = 0;

	while (v >= 999.5 && u + 1 < nunits) {
		v /= base;
		u++;
	}
	return sig3(buf, len, v, units[u]);
}

char *fmt_ns(char *buf, size_t len, uint64_t ns)
{
	static const char *const units[] = { "ns", "us", "ms", "s" };

	if (!ns) {
		snprintf(buf, len, "0");
		return buf;
	}
	if (ns < 1000) {
		snprintf(buf, len, "%uns", (unsigned)ns);
		return buf;
	}
	return scaled(buf, len, (double)ns, 1000, units, 4);
}

char *fmt_bytes(char *buf, size_t len, uint64_t bytes)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };

	if (bytes < 1000) {
		snprintf(buf, len, "%uB", (unsigned)bytes);
		return buf;
	}
	return scaled(buf, len, (double)bytes, 1024, units, 7);
}

char *fmt_bps(char *buf, size_t len, uint64_t bps)
{
	static const char *const units[] = {
		"bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s", "Pbit/s", "Ebit/s",
	};

	if (!bps) {
		snprintf(buf, len, "0");
		return buf;
	}
	if (bps < 1000) {
		snprintf(buf, len, "%ubit/s", (unsigned)bps);
		return buf;
	}
	return scaled(buf, len, (double)bps, 1000, units, 7);
}

char *fmt_si(char *buf, size_t len, double v)
{
	static const char *const units[] = { "", "k", "M", "G", "T", "P", "E" };

	if (v < 0 || isnan(v)) {
		snprintf(buf, len, "-");
		return buf;
	}
	if (v < 999.5 && v == floor(v)) {
		snprintf(buf, len, "%.0f", v);
		return buf;
	}
	return scaled(buf, len, v, 1000, units, 7);
}

char *fmt_duration(char *buf, size_t len, uint64_t ns)
{
	uint64_t s = ns / 1000000000ULL;

	if (s < 60)
		snprintf(buf, len, "%.1fs", (double)(ns / 100000000ULL) / 10);
	else if (s < 3600)
		snprintf(buf, len, "%um %us", (unsigned)(s / 60), (unsigned)(s % 60));
	else if (s < 86400)
		snprintf(buf, len, "%uh %um", (unsigned)(s / 3600), (unsigned)(s % 3600 / 60));
	else
		snprintf(buf, len, "%llud %uh", (unsigned long long)(s / 86400),
			 (unsigned)(s % 86400 / 3600));
	return buf;
}

double fmt_rate(uint64_t now, uint64_t before, double dt_s)
{
	if (now < before || !(dt_s > 0))
		return 0;
	return (double)(now - before) / dt_s;
}

int fmt_parse_u32(const char *s, uint32_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

int fmt_parse_interval(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v >= 0.1 && v <= 3600))
		return -EINVAL;
	*out = v;
	return 0;
}

bool fmt_is_snake_case(const char *s)
{
	if (!s || !(*s >= 'a' && *s <= 'z'))
		return false;
	for (const char *p = s; *p; p++) {
		if (*p == '_' && (p[1] == '_' || !p[1]))
			return false;
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	}
	return true;
}

static bool prom_ok(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
	       (!first && c >= '0' && c <= '9');
}

int fmt_prom_name(char *buf, size_t len, const char *prefix, const char *name, const char *suffix)
{
	size_t n = 0;
	const char *parts[3] = { prefix, name, suffix };

	for (int i = 0; i < 3; i++) {
		for (const char *p = parts[i] ? parts[i] : ""; *p; p++) {
			if (!n && !prom_ok(*p, true) && prom_ok(*p, false)) {
				if (n + 1 >= len)
					return -ENOSPC;
				buf[n++] = '_';
			}
			if (n + 1 >= len)
				return -ENOSPC;
			buf[n] = prom_ok(*p, !n) ? *p : '_';
			n++;
		}
	}
	if (!n || n >= len)
		return -ENOSPC;
	buf[n] = 0;
	return 0;
}

int fmt_prom_label(char *buf, size_t len, const char *value)
{
	size_t n = 0;

	for (const char *p = value; *p; p++) {
		const char *esc = *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : *p == '\n' ? "\\n" : NULL;
		size_t k = esc ? 2 : 1;

		if (n + k >= len)
			return -ENOSPC;
		if (esc) {
			memcpy(buf + n, esc, 2);
		} else {
			buf[n] = *p;
		}
		n += k;
	}
	if (n >= len)
		return -ENOSPC;
	buf[n] = 0;
	return 0;
}
