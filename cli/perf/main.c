// SPDX-License-Identifier: MIT
/*
 * mroc-perf: perftest-style RDMA benchmarks over mroc (libmroc + mrocd).
 *
 *   mroc-perf TEST [OPTIONS]               server: waits for one client
 *   mroc-perf TEST [OPTIONS] SERVER_ADDR   client
 *
 * This file: the tests, the option table (getopt's tables and the help are
 * generated from it), parsing and checks, libmroc's print callback, and the
 * dispatch to session.c.  Exit status: 0 ok, 1 the test failed (an error
 * completion, a --verify mismatch, the peer or the daemon went away), 2 bad
 * usage.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "perf.h"

const struct perf_test_info perf_tests[PERF_NTESTS] = {
	[PERF_WRITE_BW] = { "write_bw", "RDMA_Write BW Test", PERF_WRITE, false },
	[PERF_WRITE_LAT] = { "write_lat", "RDMA_Write Latency Test", PERF_WRITE, true },
	[PERF_SEND_BW] = { "send_bw", "Send BW Test", PERF_SEND, false },
	[PERF_SEND_LAT] = { "send_lat", "Send Latency Test", PERF_SEND, true },
	[PERF_READ_BW] = { "read_bw", "RDMA_Read BW Test", PERF_READ, false },
	[PERF_READ_LAT] = { "read_lat", "RDMA_Read Latency Test", PERF_READ, true },
	[PERF_ATOMIC_BW] = { "atomic_bw", "Atomic BW Test", PERF_ATOMIC, false },
	[PERF_ATOMIC_LAT] = { "atomic_lat", "Atomic Latency Test", PERF_ATOMIC, true },
};

const struct perf_test_info *perf_test_find(const char *name)
{
	for (int i = 0; i < PERF_NTESTS; i++)
		if (!strcmp(name, perf_tests[i].name))
			return &perf_tests[i];
	return NULL;
}

/* ---- options -------------------------------------------------------------------------- */

enum {
	OPT_PATHS = 256,
	OPT_MODE,
	OPT_VERIFY,
	OPT_MROC_ADDR,
	OPT_SLEEP,
	OPT_TIMEOUT,
	OPT_SOCKET,
	OPT_REPORT_GBITS,
	OPT_OUT_JSON,
	OPT_OUT_JSON_FILE,
	OPT_RUN_INFINITELY,
	OPT_CPU_UTIL,
	OPT_SLOTS,
};

/* -A: perftest's names of the two atomics. */
#define ATOMIC_FADD	"FETCH_AND_ADD"
#define ATOMIC_CSWAP	"CMP_AND_SWAP"

struct opt_desc {
	const char *name;
	int val;			/* short option, or OPT_* */
	const char *arg;		/* NULL: no argument */
	const char *help;
};

static const struct opt_desc opt_table[] = {
	{ "size", 's', "SIZE", "message size, K and M suffixes (default 65536 bw, 8 lat; atomics: 8)" },
	{ "all", 'a', NULL, "every power of two from 2 to 8M" },
	{ "iters", 'n', "N", "messages per QP (default 5000 bw, 1000 lat)" },
	{ "duration", 'D', "SEC", "run for SEC seconds instead of -n" },
	{ "qp", 'q', "N", "QPs, 1..4096 (default 1; latency tests: 1)" },
	{ "paths", OPT_PATHS, "N", "paths per QP, 1..16 (default: mrocd's)" },
	{ "mode", OPT_MODE, "MODE", "metaroce or rocev2 (default: mrocd's transport.mode)" },
	{ "tx-depth", 't', "N", "work requests outstanding per QP (default 128 bw, 1 lat)" },
	{ "rx-depth", 'r', "N", "receives posted per QP, send_bw (default 512)" },
	{ "cq-mod", 'Q', "N", "a completion every N work requests, bw tests (default 100)" },
	{ "slots", OPT_SLOTS, "N", "bw tests: messages each QP's region holds, at most; this side's "
	  "(default: up to 1024 within 32M per QP, 256M in all)" },
	{ "verify", OPT_VERIFY, NULL, "fill every message with a pattern, check every byte" },
	{ "json", 'j', NULL, "print one JSON document" },
	{ "mrocd-socket", OPT_SOCKET, "PATH",
	  "mrocd client socket (default: $MROC_SOCKET, /run/mroc/mrocd.sock)" },
	{ "report_gbits", OPT_REPORT_GBITS, NULL, "bandwidth in Gb/sec (default: MB/sec, as perftest)" },
	{ "out_json", OPT_OUT_JSON, NULL, "also write the JSON document to perftest_out.json" },
	{ "out_json_file", OPT_OUT_JSON_FILE, "FILE", "also write the JSON document to FILE" },
	{ "run_infinitely", OPT_RUN_INFINITELY, NULL,
	  "with -D: measure again every SEC seconds until interrupted" },
	{ "CPU-freq", 'F', NULL, "accepted (perftest: no cpufreq warning; mroc-perf gives none)" },
	{ "connection", 'R', NULL, "accepted: QPs always connect through mrocd's CM" },
	{ "ib-dev", 'd', "DEV", "accepted, ignored: mrocd owns the interfaces (mrocd.conf)" },
	{ "ib-port", 'i', "PORT", "accepted, ignored: mrocd owns the interfaces" },
	{ "gid-index", 'x', "N", "accepted, ignored: mrocd's network.address is the source" },
	{ "sl", 'S', "SL", "a number: ignored, no service levels; a path: --mrocd-socket" },
	{ "atomic_type", 'A', "TYPE", "atomic tests: " ATOMIC_FADD " (default) or " ATOMIC_CSWAP },
	{ "bidirectional", 'b', NULL, "both sides send at once, bw tests; rows add both directions" },
	{ "cpu_util", OPT_CPU_UTIL, NULL, "CPU_Util[%]: the host's busy CPU during each run" },
	{ "port", 'p', "PORT", "TCP port of the side channel (default 18515)" },
	{ "mroc-addr", OPT_MROC_ADDR, "ADDR",
	  "server: its mrocd's address if not the TCP one; client: connect QPs there" },
	{ "sleep", OPT_SLEEP, NULL, "sleep on the completion channel instead of busy polling" },
	{ "events", 'e', NULL, "same as --sleep (perftest's name)" },
	{ "timeout", OPT_TIMEOUT, "SEC", "fail after SEC seconds without progress (default 10)" },
	{ "verbose", 'v', NULL, "print libmroc's diagnostics (twice: debug)" },
	{ "version", 'V', NULL, "print the version" },
	{ "help", 'h', NULL, "this help" },
};

#define NOPTS (sizeof(opt_table) / sizeof(opt_table[0]))

static void usage(FILE *f)
{
	fprintf(f, "Usage: mroc-perf TEST [OPTIONS]               server (waits for a client)\n"
		   "       mroc-perf TEST [OPTIONS] SERVER_ADDR   client\n"
		   "TEST: ");
	for (int i = 0; i < PERF_NTESTS; i++)
		fprintf(f, "%s%s", i ? " | " : "", perf_tests[i].name);
	fprintf(f, "\nOptions (the client's decide the test; give the server the same TEST):\n");
	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt_desc *d = &opt_table[i];
		char left[40];

		if (d->val < 256)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", d->val, d->name,
				 d->arg ? " " : "", d->arg ? d->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", d->name, d->arg ? " " : "",
				 d->arg ? d->arg : "");
		fprintf(f, "  %-26s %s\n", left, d->help);
	}
	fprintf(f, "Exit status: 0 ok, 1 the test failed, 2 bad usage.\n");
}

/* Unsigned number in [min, max]; with units, a K, M or G suffix multiplies by 1024^n. */
static int parse_num(const char *opt, const char *s, uint64_t min, uint64_t max, bool units,
		     uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		goto bad;
	if (units && *end) {
		int shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 :
			    *end == 'G' || *end == 'g' ? 30 : -1;

		if (shift < 0 || end[1] || v > (UINT64_MAX >> shift))
			goto bad;
		v <<= shift;
		end++;
	}
	if (*end || v < min || v > max)
		goto bad;
	*out = v;
	return 0;
bad:
	fprintf(stderr, "mroc-perf: %s %s: expected %" PRIu64 "..%" PRIu64 "%s\n", opt, s, min, max,
		units ? " (K/M/G suffixes)" : "");
	return -EINVAL;
}

static int parse_one(struct perf_opts *o, int c, const char *arg)
{
	uint64_t v = 0;
	int err = 0;

	switch (c) {
	case 's':
		err = parse_num("-s", arg, 1, PERF_MAX_SIZE, true, &o->size);
		o->given |= PERF_GIVEN_SIZE;
		break;
	case 'a':
		o->all = true;
		o->given |= PERF_GIVEN_SIZE;
		break;
	case 'n':
		err = parse_num("-n", arg, 1, 1000000000, false, &o->iters);
		o->given |= PERF_GIVEN_ITERS;
		break;
	case 'D':
		err = parse_num("-D", arg, 1, 86400, false, &v);
		o->duration_s = (unsigned int)v;
		o->given |= PERF_GIVEN_ITERS;
		break;
	case 'q':
		err = parse_num("-q", arg, 1, OOB_MAX_QPS, false, &v);
		o->qps = (unsigned int)v;
		o->given |= PERF_GIVEN_QPS;
		break;
	case OPT_PATHS:
		err = parse_num("--paths", arg, 1, 16, false, &v);
		o->paths = (unsigned int)v;
		break;
	case OPT_MODE:
		if (!strcmp(arg, "default"))
			o->mode = MROC_QP_DEFAULT;
		else if (!strcmp(arg, "metaroce"))
			o->mode = MROC_QP_METAROCE;
		else if (!strcmp(arg, "rocev2"))
			o->mode = MROC_QP_ROCEV2;
		else
			err = (fprintf(stderr, "mroc-perf: --mode %s: metaroce, rocev2 or default\n",
				       arg),
			       -EINVAL);
		break;
	case 't':
		err = parse_num("-t", arg, 1, PERF_MAX_DEPTH, false, &v);
		o->tx_depth = (unsigned int)v;
		o->given |= PERF_GIVEN_DEPTH;
		break;
	case 'r':
		err = parse_num("-r", arg, 1, PERF_MAX_DEPTH, false, &v);
		o->rx_depth = (unsigned int)v;
		break;
	case 'Q':
		err = parse_num("-Q", arg, 1, PERF_MAX_DEPTH, false, &v);
		o->cq_mod = (unsigned int)v;
		break;
	case OPT_VERIFY:
		o->verify = true;
		break;
	case 'j':
		o->json = true;
		break;
	case OPT_SOCKET:
		o->socket_path = arg;
		break;
	case OPT_REPORT_GBITS:
		o->gbits = true;
		break;
	case OPT_OUT_JSON:
		o->out_json = o->out_json ? o->out_json : "perftest_out.json";
		break;
	case OPT_OUT_JSON_FILE:
		o->out_json = arg;
		break;
	case OPT_RUN_INFINITELY:
		o->run_infinitely = true;
		break;
	case 'F':
	case 'R':
		break;
	case 'S':
		/* perftest's -S is a service level (a number); a path is the old meaning,
		 * kept so that scripts written before --mrocd-socket still run. */
		if (arg[strspn(arg, "0123456789")]) {
			o->socket_path = arg;
			break;
		}
		/* fall through */
	case 'd':
	case 'i':
	case 'x':
		fprintf(stderr, "mroc-perf: note: -%c %s ignored: %s\n", c, arg,
			c == 'S' ? "mroc has no service levels" :
			c == 'x' ? "the source is mrocd's network.address" :
			"mrocd owns the interfaces (network.interfaces in mrocd.conf)");
		break;
	case 'A':
		if (!strcmp(arg, ATOMIC_FADD) || !strcmp(arg, ATOMIC_CSWAP))
			o->cswap = !strcmp(arg, ATOMIC_CSWAP);
		else
			err = (fprintf(stderr, "mroc-perf: -A %s: " ATOMIC_FADD " or " ATOMIC_CSWAP
				       "\n", arg), -EINVAL);
		o->given |= PERF_GIVEN_OTHER;
		break;
	case 'b':
		o->bidir = true;
		break;
	case OPT_CPU_UTIL:
		o->cpu_util = true;
		break;
	case 'p':
		err = parse_num("-p", arg, 1, 65535, false, &v);
		o->port = (uint16_t)v;
		break;
	case OPT_MROC_ADDR:
		o->mroc_addr = arg;
		break;
	case OPT_SLEEP:
	case 'e':
		o->sleep = true;
		break;
	case OPT_TIMEOUT:
		err = parse_num("--timeout", arg, 1, 3600, false, &v);
		o->timeout_s = (unsigned int)v;
		break;
	case OPT_SLOTS:
		err = parse_num("--slots", arg, 1, PERF_SLOTS_MAX, false, &v);
		o->slots = (unsigned int)v;
		break;
	case 'v':
		o->verbose++;
		break;
	default:
		err = -EINVAL;
	}
	return err;
}

/* Parse argv into o; 0 to run, 1 when done (help, version), -EINVAL on bad usage. */
static int parse_args(int argc, char **argv, struct perf_opts *o)
{
	struct option longs[NOPTS + 1];
	char shorts[2 * NOPTS + 2], *sp = shorts;
	const struct perf_test_info *t;
	bool given_n = false, given_d = false;
	int c;

	*sp++ = ':';	/* ':' first: getopt reports a missing argument as ':' */
	for (size_t i = 0; i < NOPTS; i++) {
		longs[i] = (struct option){ opt_table[i].name, opt_table[i].arg ? 1 : 0, NULL,
					    opt_table[i].val };
		if (opt_table[i].val < 256) {
			*sp++ = (char)opt_table[i].val;
			if (opt_table[i].arg)
				*sp++ = ':';
		}
	}
	*sp = '\0';
	memset(&longs[NOPTS], 0, sizeof(longs[NOPTS]));

	while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		if (c == 'V') {
			printf("mroc-perf %d.%d (libmroc API %d.%d)\n", MROC_VERSION_MAJOR,
			       MROC_VERSION_MINOR, MROC_VERSION_MAJOR, MROC_VERSION_MINOR);
			return 1;
		}
		if (c == '?' || c == ':') {
			fprintf(stderr, "mroc-perf: %s: %s\n", argv[optind - 1],
				c == ':' ? "needs an argument" : "unknown option");
			return -EINVAL;
		}
		given_n |= c == 'n';
		given_d |= c == 'D';
		if (parse_one(o, c, optarg))
			return -EINVAL;
	}
	if (optind >= argc || argc - optind > 2) {
		usage(stderr);
		return -EINVAL;
	}
	t = perf_test_find(argv[optind]);
	if (!t) {
		fprintf(stderr, "mroc-perf: unknown test \"%s\"\n", argv[optind]);
		usage(stderr);
		return -EINVAL;
	}
	if (given_n && given_d) {
		fprintf(stderr, "mroc-perf: -n and -D exclude each other\n");
		return -EINVAL;
	}
	if (o->run_infinitely && !given_d) {
		fprintf(stderr, "mroc-perf: --run_infinitely needs -D SEC (the period of each result)\n");
		return -EINVAL;
	}
	o->test = (enum perf_test)(t - perf_tests);
	o->server = optind + 1 < argc ? argv[optind + 1] : NULL;
	return 0;
}

/* Defaults that depend on the test (perftest's). */
static void defaults(struct perf_opts *o)
{
	bool lat = perf_tests[o->test].lat;

	if (!o->size)
		o->size = perf_tests[o->test].verb == PERF_ATOMIC ? PERF_ATOMIC_SIZE :
			  lat ? 8 : 65536;
	if (!o->iters)
		o->iters = lat ? 1000 : 5000;
	if (!o->tx_depth)
		o->tx_depth = lat ? 1 : 128;
}

/* ---- libmroc's diagnostics -------------------------------------------------------------- */

static int print_level = MROC_PRINT_WARN;

static void print_fn(enum mroc_print_level level, const char *fmt, va_list ap)
{
	if ((int)level > print_level)
		return;
	vfprintf(stderr, fmt, ap);	/* the library's messages start with "libmroc: " */
}

/* libmroc keeps a file open per QP (its completion channel): -q 4096 needs more than 1,024. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int main(int argc, char **argv)
{
	struct perf_opts o = {
		.port = OOB_DEFAULT_PORT,
		.qps = 1,
		.rx_depth = 512,
		.cq_mod = 100,
		.timeout_s = 10,
		.mode = MROC_QP_DEFAULT,	/* as --paths: mrocd's */
	};
	struct oob_params p = { 0 };
	char why[OOB_TEXT];
	int err;

	err = parse_args(argc, argv, &o);
	if (err)
		return err > 0 ? 0 : 2;
	defaults(&o);
	print_level = o.verbose >= 2 ? MROC_PRINT_DEBUG : o.verbose ? MROC_PRINT_INFO
							  : MROC_PRINT_WARN;
	mroc_set_print(print_fn);
	raise_nofile();

	/* The same checks the server applies to what a client sends. */
	p.version = OOB_VERSION;
	p.test = (uint8_t)o.test;
	p.mode = o.mode;
	p.paths = (uint8_t)o.paths;
	p.flags = (o.all ? OOB_F_ALL : 0) | (o.verify ? OOB_F_VERIFY : 0) |
		  (o.bidir ? OOB_F_BIDIR : 0) | (o.cswap ? OOB_F_CSWAP : 0);
	p.qps = o.qps;
	p.tx_depth = o.tx_depth;
	p.rx_depth = o.rx_depth;
	p.cq_mod = o.cq_mod;
	p.size = o.size;
	p.iters = o.duration_s ? 0 : o.iters;
	p.duration_s = o.duration_s;
	if (perf_params_check(&p, why, sizeof(why))) {
		fprintf(stderr, "mroc-perf: %s\n", why);
		return 2;
	}
	return o.server ? perf_client(&o) : perf_server(&o);
}
