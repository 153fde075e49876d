// SPDX-License-Identifier: MIT
/*
 * nccl-harness: one rank of a job that drives an NCCL net plugin the way NCCL
 * does, from the CPU (these machines have no GPU, so NCCL itself cannot run):
 * dlopen the plugin by path, look up ncclNetPlugin_vN, exchange handles out
 * of band (files in a folder every rank sees), the non-blocking
 * connect/accept loops, isend/irecv/test with host buffers.
 *
 *   nccl-harness --rank R --nranks N --dir DIR
 *                [--plugin PATH --version V | --tcp ADDR | --fi PROVIDER] [--malloc] MODE [ARGS]
 *
 * --tcp runs the ring over kernel TCP (NCCL's socket transport), --fi over a
 * libfabric provider's tagged messages ("mroc", "tcp;ofi_rxm", "udp;ofi_rxd").
 *
 *   props [SPEED]         every version 8 .. 12 loads; getProperties says the truth
 *                         (speed SPEED Mbps if given)
 *   contract              2 ranks: what NCCL relies on (posting order, multi-receives with
 *                         tags and sizes, NULL requests, 32 in flight, size 0, close in flight)
 *   allreduce|allgather BYTES... [--iters K]
 *                         the ring collective, every byte checked every time
 *   bench BYTES...        all_reduce_perf's table: size, time, algbw, busbw (rank 0 prints;
 *                         the first run of each size checked)
 *
 * The ring moves 128 KiB slices, 8 in flight each way, unless --slice BYTES and
 * --window N say otherwise (NCCL's own Simple-protocol ring over a net plugin sends
 * slices of 2 of its 8 steps of NCCL_BUFFSIZE / 8: 1 MiB, 4 in flight, at its default
 * 4 MiB buffer: --slice 1M --window 4).
 * Buffers are shared memfds (the plugin's zero-copy case) unless --malloc.
 * --trace PATH writes every ring slice's events to PATH.RANK (ring.c).
 * Exit 0 when every check passed; a failure names what differed.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

struct h_opts H = { .timeout_s = 60, .memfd = true, .slice = 128 << 10, .window = 8 };

/* ---- basics ------------------------------------------------------------------------ */

void h_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL [rank %d]: ", H.rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

double h_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A shared memfd mapping (the fd stays open: the plugin may find it there), or malloc. */
void *h_alloc(size_t len)
{
	void *p;

	if (!len)
		len = 1;
	if (H.memfd) {
		int fd = memfd_create("nccl-harness", MFD_CLOEXEC | MFD_ALLOW_SEALING);

		H_CHECK(fd >= 0 && !ftruncate(fd, (off_t)len), "memfd: %s", strerror(errno));
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		H_CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
		return p;
	}
	p = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	H_CHECK(p, "out of memory");
	memset(p, 0, len);
	return p;
}

void h_free(void *p, size_t len)
{
	if (H.memfd)
		munmap(p, len ? len : 1);	/* the fd leaks until exit: a test program */
	else
		free(p);
}

/* ---- side channel: files DIR/KEY.RANK, written whole (rename) ---------------------- */

void h_put(const char *key, int rank, const void *buf, size_t len)
{
	char tmp[512], path[512];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/.%s.%d.tmp", H.dir, key, rank);
	snprintf(path, sizeof(path), "%s/%s.%d", H.dir, key, rank);
	f = fopen(tmp, "we");
	H_CHECK(f && fwrite(buf, 1, len, f) == len && !fclose(f) && !rename(tmp, path),
		"side channel %s: %s", path, strerror(errno));
}

void h_get(const char *key, int rank, void *buf, size_t len)
{
	char path[512];
	double end = h_now() + H.timeout_s;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.%d", H.dir, key, rank);
	while (!(f = fopen(path, "re"))) {
		H_CHECK(h_now() < end, "rank %d never wrote %s", rank, key);
		usleep(1000);
	}
	H_CHECK(fread(buf, 1, len, f) == len, "side channel %s: short", path);
	fclose(f);
}

void h_barrier(const char *name)
{
	static int seq;
	char key[128], c = 0;
	int r;

	snprintf(key, sizeof(key), "barrier-%s-%d", name, seq++);
	h_put(key, H.rank, &c, 1);
	for (r = 0; r < H.nranks; r++)
		h_get(key, r, &c, 1);
}

/* ---- NCCL's connection loop and request wait ---------------------------------------- */

void h_connect_pair(struct hnet *n, const char *key, int to, int from, struct h_link *l)
{
	char mine[NCCL_HANDLE_BYTES], theirs[NCCL_HANDLE_BYTES];
	double end;

	memset(l, 0, sizeof(*l));
	H_CHECK(!n->listen(n, mine, &l->lc) && l->lc, "listen");
	h_put(key, H.rank, mine, sizeof(mine));
	h_get(key, to, theirs, sizeof(theirs));
	(void)from;
	/*
	 * Neither call blocks: both are called again until each gives its comm,
	 * yielding between turns as NCCL's proxy thread does when a turn made no
	 * progress: a rank calling in a tight loop held a CPU the daemons needed
	 * for the handshake (2 CPUs, 4 daemons: 300,000 calls a connection at load).
	 */
	end = h_now() + H.timeout_s;
	while (!l->sc || !l->rc) {
		if (!l->sc)
			H_CHECK(!n->connect(n, theirs, &l->sc), "connect to rank %d", to);
		if (!l->rc)
			H_CHECK(!n->accept(n, l->lc, &l->rc), "accept from rank %d", from);
		H_CHECK(h_now() < end, "no connection within %d s (send %p, receive %p)", H.timeout_s,
			l->sc, l->rc);
		if (!l->sc || !l->rc)
			sched_yield();
	}
}

void h_wait(struct hnet *n, void *req, int *sizes)
{
	double end = h_now() + H.timeout_s;
	int done = 0;

	while (!done) {
		H_CHECK(!n->test(n, req, &done, sizes), "test failed");
		H_CHECK(done || h_now() < end, "a request never completed");
	}
}

/* ---- modes -------------------------------------------------------------------------- */

static int mode_props(const char *path, int speed)
{
	int v;

	for (v = 8; v <= 12; v++) {
		struct hnet net;
		struct nccl_props_v9 p;

		H_CHECK(!hnet_plugin_open(path, v, &net), "v%d: init failed", v);
		H_CHECK(!net.props(&net, &p), "v%d: getProperties", v);
		printf("v%d: name %s speed %d Mbps latency %.1f us maxComms %d maxRecvs %d "
		       "regIsGlobal %d ptrSupport %d pciPath %s\n", v, p.name, p.speed_mbps,
		       p.latency_us, p.max_comms, p.max_recvs, p.reg_is_global, p.ptr_support,
		       p.pci_path ? p.pci_path : "(none)");
		H_CHECK(p.ptr_support == NCCL_PTR_HOST_MEM, "v%d: ptrSupport %d", v, p.ptr_support);
		H_CHECK(p.max_recvs == 8 && p.max_comms > 0 && p.reg_is_global == 1,
			"v%d: maxRecvs %d maxComms %d regIsGlobal %d", v, p.max_recvs, p.max_comms,
			p.reg_is_global);
		H_CHECK(p.latency_us > 0, "v%d: latency %.2f us (not measured)", v, p.latency_us);
		H_CHECK(!speed || p.speed_mbps == speed, "v%d: speed %d Mbps, the ports have %d", v,
			p.speed_mbps, speed);
		H_CHECK(v < 9 || (p.max_p2p_bytes >= (1u << 20) && p.max_coll_bytes >= (1u << 20)),
			"v%d: maxP2pBytes %zu", v, p.max_p2p_bytes);
	}
	return 0;
}

static size_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	switch (*end) {
	case 'K': case 'k': v *= 1024; break;
	case 'M': case 'm': v *= 1024 * 1024; break;
	case 0: break;
	default: h_die("bad size %s", s);
	}
	return (size_t)v;
}

static const char *fmt_size(size_t b, char *buf, size_t len)
{
	if (b >= (1u << 20) && !(b % (1u << 20)))
		snprintf(buf, len, "%zuM", b >> 20);
	else if (b >= 1024 && !(b % 1024))
		snprintf(buf, len, "%zuK", b >> 10);
	else
		snprintf(buf, len, "%zu", b);
	return buf;
}

/*
 * What this rank's threads cost (bench): time on a CPU and time runnable but
 * waiting for one (the scheduler's, /proc/self/task/T/schedstat), and the
 * context switches, voluntary (it waited for something) and not (preempted).
 * Counts that the machine's load does not hide: the wait is the share lost to
 * the other processes, the run time the work itself (issue #26).
 */
struct h_cpu { unsigned long long run_ns, wait_ns; long vcsw, ivcsw; double user_s, sys_s; };

static void cpu_sample(struct h_cpu *c)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	struct rusage ru;

	memset(c, 0, sizeof(*c));
	while (d && (e = readdir(d))) {
		unsigned long long run, wait;
		char path[64];
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%.20s/schedstat", e->d_name);
		f = fopen(path, "re");
		if (f && fscanf(f, "%llu %llu", &run, &wait) == 2) {
			c->run_ns += run;
			c->wait_ns += wait;
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	if (!getrusage(RUSAGE_SELF, &ru)) {
		c->vcsw = ru.ru_nvcsw;
		c->ivcsw = ru.ru_nivcsw;
		c->user_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
		c->sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	}
}

static int mode_coll(struct hnet *n, enum h_coll coll, char **sizes, int nsizes, int iters,
		     bool bench)
{
	struct h_cpu c0, c1;
	size_t max = 0;
	struct h_ring r;
	int i, it;

	for (i = 0; i < nsizes; i++)
		if (parse_size(sizes[i]) > max)
			max = parse_size(sizes[i]);
	H_CHECK(max, "no sizes");
	h_ring_setup(&r, n, (max + 3) & ~(size_t)3, H.slice, H.window);
	if (bench && H.rank == 0)
		printf("#%11s %12s %12s %10s %10s  (%s, %d ranks)\n", "size", "count", "time(us)",
		       "algbw", "busbw", n->what, H.nranks);
	for (i = 0; i < nsizes; i++) {
		size_t bytes = parse_size(sizes[i]) & ~(size_t)3;
		double t, total = 0, f = coll == H_ALLREDUCE ? 2.0 * (H.nranks - 1) / H.nranks :
							    (double)(H.nranks - 1) / H.nranks;
		int k = iters;
		char b[32];

		if (!bytes)
			bytes = 4;
		/* Every byte checked on the first run (the warm-up when benchmarking). */
		t = h_ring_run(&r, coll, bytes, 0x9e3779b9u + (uint32_t)i, H_RUN_CHECK | H_RUN_SYNC);
		if (bench) {
			/* Enough runs for ~0.5 s of the size (at least 3, at most 200), the same
			 * count on every rank (rank 0's, through the channel). */
			char key[32];

			k = t > 0 ? (int)(0.5 / t) : 200;
			k = k < 3 ? 3 : k > 200 ? 200 : k;
			snprintf(key, sizeof(key), "iters-%d", i);
			if (H.rank == 0)
				h_put(key, 0, &k, sizeof(k));
			h_get(key, 0, &k, sizeof(k));
			/* Back to back after one barrier, as all_reduce_perf times them. */
			h_barrier("bench");
			cpu_sample(&c0);
			total = h_now();
			for (it = 0; it < k; it++)
				h_ring_run(&r, coll, bytes, 0, 0);
			total = h_now() - total;
			cpu_sample(&c1);
			/* Every rank: its CPU per run of the timed loop (bench-nccl COUNTERS). */
			printf("# cpu %zu: %d runs, per run: on CPU %.0f us, runnable waiting %.0f us, "
			       "%.1f voluntary and %.1f forced context switches, user %.1f ms, system "
			       "%.1f ms\n", bytes, k,
			       (double)(c1.run_ns - c0.run_ns) / k / 1e3,
			       (double)(c1.wait_ns - c0.wait_ns) / k / 1e3,
			       (double)(c1.vcsw - c0.vcsw) / k, (double)(c1.ivcsw - c0.ivcsw) / k,
			       (c1.user_s - c0.user_s) / k * 1e3, (c1.sys_s - c0.sys_s) / k * 1e3);
		}
		for (it = 1; !bench && it < k; it++)
			h_ring_run(&r, coll, bytes, 0x9e3779b9u + (uint32_t)(i * 131 + it),
				   H_RUN_CHECK | H_RUN_SYNC);
		if (!bench) {
			if (H.rank == 0)
				printf("ok: %s of %s bytes over %s, %d ranks, %d runs, every byte checked\n",
				       coll == H_ALLREDUCE ? "AllReduce" : "AllGather",
				       fmt_size(bytes, b, sizeof(b)), n->what, H.nranks, iters);
			continue;
		}
		t = total / k;
		if (H.rank == 0)
			printf("%12zu %12zu %12.1f %10.4f %10.4f\n", bytes, bytes / 4, t * 1e6,
			       bytes / t / 1e9, bytes / t / 1e9 * f);
		fflush(stdout);
	}
	h_barrier("done");
	h_ring_teardown(&r);
	/* What the plugin's two comms of this rank did (logged as they closed), all sizes. */
	if (bench && n->version)
		printf("# plugin: %u receives, %u CTSs, %u credit messages; %u sends: %u eager, "
		       "%u staged, %u zero-copy\n", h_pstats.recvs, h_pstats.cts, h_pstats.credits,
		       h_pstats.sends, h_pstats.eager, h_pstats.staged, h_pstats.zcopy);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: nccl-harness --rank R --nranks N --dir DIR [--plugin PATH --version V | "
			"--tcp ADDR | --fi PROVIDER] [--malloc] [--iters K] [--trace PATH]\n"
			"       [--slice BYTES] [--window N]\n"
			"       props [SPEED] | contract | misuse | allreduce|allgather|bench BYTES...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rank", required_argument, NULL, 'r' }, { "nranks", required_argument, NULL, 'n' },
		{ "dir", required_argument, NULL, 'd' }, { "plugin", required_argument, NULL, 'p' },
		{ "version", required_argument, NULL, 'v' }, { "tcp", required_argument, NULL, 't' },
		{ "fi", required_argument, NULL, 'f' },
		{ "malloc", no_argument, NULL, 'm' }, { "iters", required_argument, NULL, 'i' },
		{ "allgather-too", no_argument, NULL, 'g' }, { "trace", required_argument, NULL, 'T' },
		{ "slice", required_argument, NULL, 's' }, { "window", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	const char *plugin = NULL, *tcp = NULL, *fi = NULL, *mode;
	int version = 12, iters = 1, c;
	bool gather_too = false;
	struct hnet net;

	setvbuf(stdout, NULL, _IOLBF, 0);
	H.nranks = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'r': H.rank = atoi(optarg); break;
		case 'n': H.nranks = atoi(optarg); break;
		case 'd': H.dir = optarg; break;
		case 'p': plugin = optarg; break;
		case 'v': version = atoi(optarg); break;
		case 't': tcp = optarg; break;
		case 'f': fi = optarg; break;
		case 'm': H.memfd = false; break;
		case 'i': iters = atoi(optarg); break;
		case 'g': gather_too = true; break;
		case 'T': H.trace = optarg; break;
		case 's': H.slice = parse_size(optarg); break;
		case 'w': H.window = atoi(optarg); break;
		default: usage();
		}
	}
	if (optind >= argc || (!!plugin + !!tcp + !!fi != 1) || !H.dir || H.nranks < 1 || H.rank < 0 ||
	    H.rank >= H.nranks || iters < 1 || H.slice < 4 || H.slice % 4 || H.slice > (1u << 30) ||
	    H.window < 1 || H.window > NCCL_REQS_PER_COMM)
		usage();
	mode = argv[optind++];
	if (!strcmp(mode, "props"))
		return mode_props(plugin, optind < argc ? atoi(argv[optind]) : 0);
	if (tcp)
		hnet_tcp_open(tcp, &net);
	else if (fi)
#ifdef H_HAVE_FI
		hnet_fi_open(fi, &net);
#else
		h_die("--fi: built without libfabric-dev");
#endif
	else
		H_CHECK(!hnet_plugin_open(plugin, version, &net), "%s: init failed", plugin);
	if (!strcmp(mode, "contract"))
		return h_contract(&net);
	if (!strcmp(mode, "misuse"))
		return h_misuse(&net);
	if (!strcmp(mode, "allreduce") || !strcmp(mode, "allgather")) {
		mode_coll(&net, !strcmp(mode, "allreduce") ? H_ALLREDUCE : H_ALLGATHER, argv + optind,
			  argc - optind, iters, false);
		if (gather_too)
			mode_coll(&net, H_ALLGATHER, argv + optind, argc - optind, iters, false);
		return 0;
	}
	if (!strcmp(mode, "bench"))
		return mode_coll(&net, H_ALLREDUCE, argv + optind, argc - optind, 1, true);
	usage();
}
