// SPDX-License-Identifier: MIT
/*
 * xsk-baseline: the bare AF_XDP ceiling that mrocd's data path is measured
 * against (scripts/bench-net.sh).  One process sends, one receives, over the
 * interface mrocd would use, with what mrocd uses: the same XDP program
 * (mroc_xdp, loaded by daemon/backend/xdp_prog.c, arrival stamps included;
 * --no-stamp: without), one UMEM of 4096 or 2048-byte
 * frames, rings of ring_size, queue 0, native or generic XDP, zero-copy where
 * the driver has it and copy mode otherwise, need_wakeup on every ring, and
 * frames of exactly the length of a MetaRoCE data packet with PAYLOAD bytes
 * (Ethernet/IPv4/UDP headers from daemon/backend/frame.c, a valid MetaRoCE header so
 * the program steers them, the ICRC trailer's room).
 *
 * What it leaves out is mrocd's per-packet work: the sender fills every UMEM
 * frame once at start and then only posts descriptors; the receiver counts
 * and recycles.  Each prints one JSON line, with the CPU time it used
 * (getrusage: user + system, softirq work done in its system calls included)
 * per packet.  They poll as mrocd's worker
 * does: spin while there is work and BUSY_POLL_US after it, then sleep (the
 * receiver in poll() on its socket, the sender on the credit below), so that
 * on a shared machine the scheduler treats them like mrocd.
 *
 * With --credit FILE (both ends on one host, e.g. over veth), the receiver
 * publishes its count in a shared file and the sender keeps at most a fill
 * ring of frames ahead of it: flow control at no cost, as a transport's
 * window.  Without it the sender floods, and on a busy machine every moment
 * the receiver is not scheduled costs frames the sender already paid for.
 *
 *   xsk-baseline rx -i IFACE [-D SECONDS] [options]
 *   xsk-baseline tx -i IFACE --src IP --dst IP --dmac MAC [-s PAYLOAD] [-D SECONDS] [options]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <poll.h>
#include <linux/futex.h>
#include <unistd.h>

#include <linux/bpf.h>
#include <linux/if_xdp.h>
#include <xdp/xsk.h>

#include "afxdp.h"
#include "engine.h"
#include "frame.h"
#include "log.h"
#include "wire.h"
#include "xdp_prog.h"

#define BATCH		64
#define BUSY_POLL_US	50	/* mrocd's default daemon.busy_poll_us (--busy-poll-us) */

/* AF_XDP multi-buffer (linux/if_xdp.h of kernels 6.6 and later). */
#ifndef XDP_USE_SG
#define XDP_USE_SG	(1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD	(1 << 0)
#endif

/* --credit: what the receiver shares with the sender. */
struct credit_page {
	_Atomic uint64_t rcvd;		/* frames received */
	_Atomic uint32_t seq;		/* low bits of rcvd: the futex word */
	_Atomic uint32_t waiting;	/* the sender sleeps on seq */
};

struct opts {
	bool tx;
	const char *ifname;
	uint32_t queue, frame_size, nframes, ring_size;
	uint32_t payload;		/* MetaRoCE payload bytes per frame */
	double secs;
	enum xdp_prog_mode mode;
	int zc;				/* -1 auto, 0 copy, 1 zero-copy */
	uint16_t udp_port, sport;
	struct mroc_addr src, dst;
	uint8_t dmac[ETH_ALEN_];
	bool have_dmac;
	int cpu;
	const char *credit;		/* shared file with the receiver's count, or NULL */
	double busy_poll_s;		/* spin this long after the last work, then sleep */
	bool no_stamp;			/* load the program without arrival stamps */
	uint32_t frags;			/* tx: descriptors per packet, 1 or 2 (--frags) */
	bool read;			/* rx: read every received frame whole (--read) */
};

struct base {
	struct opts o;
	int ifindex;
	uint8_t *area;
	size_t area_len;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fq, tx;
	struct xsk_ring_cons cq, rx;
	struct xdp_prog *prog;
	bool zero_copy;
	struct credit_page *cp;		/* --credit */
};

static volatile sig_atomic_t stop;
static volatile uint64_t read_sink;	/* --read: what the reads add up to, so they stay */

static void on_signal(int sig)
{
	stop = 1;
}

/* CPU time of this process (user + system), seconds. */
static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The UDP payload of mrocd's data packet carrying o->payload bytes, ICRC included. */
static uint32_t mroc_len(const struct opts *o)
{
	return MROC_DATA_OVERHEAD + o->payload + FRAME_ICRC_LEN;
}

static int get_smac(const char *ifname, uint8_t *mac)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr))
		err = -errno;
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN_);
	close(fd);
	return err;
}

/* Every UMEM frame becomes the same data packet, built once. */
static int fill_frames(struct base *b)
{
	struct frame_tx ft = {
		.src = b->o.src,
		.dst = b->o.dst,
		.sport = b->o.sport,
		.dport = b->o.udp_port,
		.ecn = FRAME_ECN_ECT0,
	};
	uint32_t mlen = mroc_len(&b->o);
	int err = get_smac(b->o.ifname, ft.smac), off = 0;

	if (err)
		return err;
	memcpy(ft.dmac, b->o.dmac, ETH_ALEN_);
	/*
	 * --frags 2: frame 2j's headers go with frame 2j + 1's payload (the
	 * same bytes at the same place), as headers built in a UMEM frame
	 * would go with a payload in a client region inside the UMEM.
	 */
	for (uint32_t i = 0; i < b->o.nframes; i++) {
		uint8_t *buf = b->area + (size_t)i * b->o.frame_size;

		memset(buf + FRAME_HEADROOM, 0x5a, mlen);
		buf[FRAME_HEADROOM] = MROC_WIRE_VERSION;
		buf[FRAME_HEADROOM + 1] = MROC_OP_WRITE;
		off = frame_build(buf, mlen, &ft);
		if (off < 0)
			return off;
	}
	return off;
}

/* --credit: the file both ends map, created by the receiver; NULL without. */
static int map_credit(struct base *b)
{
	int fd;

	if (!b->o.credit)
		return 0;
	fd = open(b->o.credit, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(struct credit_page))) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	b->cp = mmap(NULL, sizeof(*b->cp), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (b->cp == MAP_FAILED) {
		b->cp = NULL;
		return -errno;
	}
	if (!b->o.tx)
		memset(b->cp, 0, sizeof(*b->cp));
	return 0;
}

static long futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)w, op, val, ts, NULL, 0);
}

/* How many more frames the window allows (no limit without --credit). */
static uint32_t credit(const struct base *b, uint64_t sent, uint64_t base)
{
	uint64_t ahead;

	if (!b->cp)
		return BATCH;
	ahead = sent - (atomic_load_explicit(&b->cp->rcvd, memory_order_acquire) - base);
	return ahead >= b->o.ring_size ? 0 : b->o.ring_size - (uint32_t)ahead;
}

/* The window is shut: sleep until the receiver counts more (or 1 ms passes). */
static void credit_wait(struct base *b, uint64_t sent, uint64_t base)
{
	static const struct timespec ms = { .tv_nsec = 1000000 };
	uint32_t seq = atomic_load_explicit(&b->cp->seq, memory_order_acquire);

	atomic_store_explicit(&b->cp->waiting, 1, memory_order_seq_cst);
	if (!credit(b, sent, base))
		futex(&b->cp->seq, FUTEX_WAIT, seq, &ms);
	atomic_store_explicit(&b->cp->waiting, 0, memory_order_relaxed);
}

static void credit_add(struct base *b, uint32_t n)
{
	uint64_t r = atomic_fetch_add_explicit(&b->cp->rcvd, n, memory_order_release) + n;

	atomic_store_explicit(&b->cp->seq, (uint32_t)r, memory_order_seq_cst);
	if (atomic_load_explicit(&b->cp->waiting, memory_order_seq_cst))
		futex(&b->cp->seq, FUTEX_WAKE, 1, NULL);
}

/* noinline, as rx_loop: a profiler can count these loops alone (callgrind --toggle-collect). */
static __attribute__((noinline)) void tx_loop(struct base *b, int off, double t_end,
					     uint64_t *pkts)
{
	uint32_t next = 0, outstanding = 0, len = FRAME_HEADROOM - (uint32_t)off + mroc_len(&b->o);
	uint32_t nframes = b->o.nframes, frags = b->o.frags;
	/* --frags 2: the headers (Ethernet to MetaRoCE's), then the payload and the ICRC. */
	uint32_t hlen = FRAME_HEADROOM - (uint32_t)off + MROC_DATA_OVERHEAD;
	/* The receiver may have counted frames of an earlier sender: start from its count. */
	uint64_t base = b->cp ? atomic_load_explicit(&b->cp->rcvd, memory_order_acquire) : 0;
	double idle_since = 0;

	while (!stop && now_s() < t_end) {
		uint32_t idx = 0, n, done, c;

		/* Counted in descriptors: each one completes on its own. */
		done = xsk_ring_cons__peek(&b->cq, b->o.ring_size, &idx);
		if (done) {
			xsk_ring_cons__release(&b->cq, done);
			outstanding -= done;
		}
		n = (nframes - outstanding) / frags < BATCH ? (nframes - outstanding) / frags : BATCH;
		c = credit(b, *pkts, base);
		if (c < n)
			n = c;
		if (!c) {
			double t = now_s();

			if (!idle_since)
				idle_since = t;
			if (t - idle_since >= b->o.busy_poll_s)
				credit_wait(b, *pkts, base);
			continue;
		}
		idle_since = 0;
		n = xsk_ring_prod__reserve(&b->tx, n * frags, &idx) / frags;
		for (uint32_t i = 0; i < n; i++) {
			struct xdp_desc *d = xsk_ring_prod__tx_desc(&b->tx, idx + i * frags);
			uint64_t frame = (uint64_t)next * b->o.frame_size;

			d->addr = frame + (uint64_t)off;
			d->len = frags == 1 ? len : hlen;
			d->options = frags == 1 ? 0 : XDP_PKT_CONTD;
			if (frags == 2) {
				d = xsk_ring_prod__tx_desc(&b->tx, idx + i * frags + 1);
				d->addr = frame + b->o.frame_size + (uint64_t)off + hlen;
				d->len = len - hlen;
				d->options = 0;
			}
			next = next + frags >= nframes ? 0 : next + frags;
		}
		if (n) {
			xsk_ring_prod__submit(&b->tx, n * frags);
			outstanding += n * frags;
			*pkts += n;
		}
		if (xsk_ring_prod__needs_wakeup(&b->tx))
			sendto(xsk_socket__fd(b->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0);
	}
}

/*
 * --read: every line of the frame read, as mrocd's receiver reads each one
 * (the ICRC over the frame, the placement copy of the payload).  The bare
 * receiver otherwise never touches a frame, so the kernel's copy into it on
 * the sending CPU finds lines no other CPU holds; mrocd's receiver leaves
 * them in its own caches (issue #22: the yardstick's copy may be cheaper
 * than the one mrocd's sender pays, for that reason alone).
 */
static void read_frame(const uint8_t *p, uint32_t len)
{
	uint64_t sum = 0, w;

	for (uint32_t off = 0; off + sizeof(w) <= len; off += 64) {
		memcpy(&w, p + off, sizeof(w));
		sum += w;
	}
	read_sink += sum;
}

/* Counts from the first packet on, for o->secs seconds (or until stopped). */
static __attribute__((noinline)) void rx_loop(struct base *b, double *t0, double *t1,
					     double *cpu, uint64_t *pkts, uint64_t *bytes)
{
	struct pollfd pfd = { .fd = xsk_socket__fd(b->xsk), .events = POLLIN };
	double t_end = 0, idle_since = 0;

	*t0 = 0;
	while (!stop) {
		uint32_t idx_rx, idx_fq, n = xsk_ring_cons__peek(&b->rx, BATCH, &idx_rx);

		if (!n) {
			double t = now_s();

			if (xsk_ring_prod__needs_wakeup(&b->fq))
				recvfrom(xsk_socket__fd(b->xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
			if (*t0 && t >= t_end)
				break;
			if (!idle_since)
				idle_since = t;
			if (t - idle_since >= b->o.busy_poll_s)
				poll(&pfd, 1, 100);
			continue;
		}
		idle_since = 0;
		if (!*t0) {
			*t0 = now_s();
			*cpu = cpu_s();
			t_end = *t0 + b->o.secs;
		}
		while (xsk_ring_prod__reserve(&b->fq, n, &idx_fq) != n)
			;
		for (uint32_t i = 0; i < n; i++) {
			const struct xdp_desc *d = xsk_ring_cons__rx_desc(&b->rx, idx_rx + i);

			if (b->o.read)
				read_frame(xsk_umem__get_data(b->area, d->addr), d->len);
			*bytes += d->len;
			*xsk_ring_prod__fill_addr(&b->fq, idx_fq + i) = xsk_umem__extract_addr(d->addr);
		}
		xsk_ring_prod__submit(&b->fq, n);
		xsk_ring_cons__release(&b->rx, n);
		*pkts += n;
		if (b->cp)	/* after the fill ring has the frames back */
			credit_add(b, n);
		if ((*pkts & 1023) < n && now_s() >= t_end)
			break;
	}
	*t1 = now_s();
	*cpu = cpu_s() - *cpu;
}

static int open_socket(struct base *b)
{
	struct xsk_umem_config uc = {
		.fill_size = b->o.ring_size,
		.comp_size = b->o.ring_size,
		.frame_size = b->o.frame_size,
	};
	struct xsk_socket_config sc = {
		.rx_size = b->o.ring_size,
		.tx_size = b->o.ring_size,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
	};
	struct xdp_prog_opts po = { .sz = sizeof(po), .udp_port = b->o.udp_port,
				    .no_stamp = b->o.no_stamp };
	struct xdp_options xo;
	socklen_t xl = sizeof(xo);
	uint32_t idx = 0;
	/* Multi-buffer: a packet of several descriptors (--frags; kernel 6.6 and later). */
	uint16_t sg = b->o.tx && b->o.frags > 1 ? XDP_USE_SG : 0;
	int err;

	b->ifindex = (int)if_nametoindex(b->o.ifname);
	if (!b->ifindex)
		return -ENODEV;
	err = xdp_prog_open(&b->prog, &po);
	if (!err)
		err = xdp_prog_attach(b->prog, b->ifindex, b->o.mode);
	if (err)
		return err;
	b->area_len = (size_t)b->o.nframes * b->o.frame_size;
	b->area = mmap(NULL, b->area_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->area == MAP_FAILED) {
		b->area = NULL;
		return -ENOMEM;
	}
	err = xsk_umem__create(&b->umem, b->area, b->area_len, &b->fq, &b->cq, &uc);
	if (err)
		return err;
	/* As mrocd (afxdp.c open_sock): zero-copy first unless told otherwise. */
	err = -EOPNOTSUPP;
	if (b->o.zc != 0) {
		sc.bind_flags = XDP_USE_NEED_WAKEUP | XDP_ZEROCOPY | sg;
		err = xsk_socket__create(&b->xsk, b->o.ifname, b->o.queue, b->umem,
					 b->o.tx ? NULL : &b->rx, b->o.tx ? &b->tx : NULL, &sc);
	}
	if (err && b->o.zc != 1) {
		sc.bind_flags = XDP_USE_NEED_WAKEUP | XDP_COPY | sg;
		err = xsk_socket__create(&b->xsk, b->o.ifname, b->o.queue, b->umem,
					 b->o.tx ? NULL : &b->rx, b->o.tx ? &b->tx : NULL, &sc);
	}
	if (err)
		return err;
	if (!getsockopt(xsk_socket__fd(b->xsk), SOL_XDP, XDP_OPTIONS, &xo, &xl))
		b->zero_copy = xo.flags & XDP_OPTIONS_ZEROCOPY;
	/* As mrocd: a copy-mode kick may send the whole ring (older kernels: 32). */
	if (b->o.tx && !b->zero_copy)
		afxdp_set_tx_budget(xsk_socket__fd(b->xsk), b->o.ring_size);
	if (b->o.tx)
		return 0;
	err = xdp_prog_add_socket(b->prog, (uint32_t)b->ifindex, b->o.queue, xsk_socket__fd(b->xsk));
	if (err < 0)
		return err;
	/* The whole UMEM is for receiving: as many frames as the fill ring holds. */
	if (xsk_ring_prod__reserve(&b->fq, b->o.ring_size, &idx) != b->o.ring_size)
		return -ENOSPC;
	for (uint32_t i = 0; i < b->o.ring_size; i++)
		*xsk_ring_prod__fill_addr(&b->fq, idx + i) = (uint64_t)i * b->o.frame_size;
	xsk_ring_prod__submit(&b->fq, b->o.ring_size);
	return 0;
}

static void close_socket(struct base *b)
{
	if (b->xsk)
		xsk_socket__delete(b->xsk);
	if (b->umem)
		xsk_umem__delete(b->umem);
	if (b->area)
		munmap(b->area, b->area_len);
	if (b->prog) {
		xdp_prog_detach(b->prog, b->ifindex);
		xdp_prog_close(b->prog);
	}
	if (b->cp)
		munmap(b->cp, sizeof(*b->cp));
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xsk-baseline rx -i IFACE [options]\n"
		"       xsk-baseline tx -i IFACE --src IP --dst IP --dmac MAC [options]\n"
		"  -i IFACE        interface (queue 0 unless -q)\n"
		"  -q QUEUE        RX/TX queue (0)\n"
		"  -s PAYLOAD      MetaRoCE payload per frame, bytes (3392): the frame is as long as\n"
		"                  mrocd's data packet carrying it\n"
		"  -D SECONDS      rx: count for this long from the first packet; tx: send this long (5)\n"
		"  -f FRAME_SIZE   UMEM frame size, 2048 or 4096 (4096)\n"
		"  -n FRAMES       UMEM frames (8192)   -r RING  ring size (1024)\n"
		"  -m MODE         XDP mode: native, generic, auto (native)\n"
		"  -z on|off|auto  zero-copy (auto: as mrocd, zero-copy where the driver has it)\n"
		"  -p PORT         MetaRoCE UDP port (%d)   --sport PORT  UDP source port (20000)\n"
		"  -c CPU          pin to CPU\n"
		"  --credit FILE   both ends on one host: the sender stays at most a ring ahead of\n"
		"                  the receiver's count, shared in FILE (flow control at no cost)\n"
		"  --busy-poll-us US  spin this long after the last work, then sleep (%d; 0: sleep at\n"
		"                  once, as scripts/profile-pkt.sh BUSY_POLL_US=0 runs it)\n"
		"  --no-stamp      the program without its arrival stamps (mrocd always stamps:\n"
		"                  the default measures what mrocd pays; this, what the stamp costs)\n"
		"  --frags N       tx: each packet as N descriptors, 1 or 2 (1); 2: the headers from\n"
		"                  one UMEM frame and the payload from another (XDP_USE_SG,\n"
		"                  XDP_PKT_CONTD), as a payload sent from where it lies would go;\n"
		"                  rx: accepted, no effect\n"
		"  --read          rx: read every line of each received frame, as mrocd's receiver\n"
		"                  does (its ICRC check and copy); tx: accepted, no effect\n"
		"  -h, --help      this text\n"
		"Prints one JSON line: packets, frame bytes, seconds, Mpps and Gbit/s of frames.\n",
		MROC_UDP_PORT, BUSY_POLL_US);
}

static int parse_addr(const char *s, struct mroc_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, s, a->bytes) == 1) {
		a->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, a->bytes) == 1) {
		a->family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "src", required_argument, NULL, 'S' },
		{ "dst", required_argument, NULL, 'T' },
		{ "dmac", required_argument, NULL, 'M' },
		{ "sport", required_argument, NULL, 'P' },
		{ "credit", required_argument, NULL, 'C' },
		{ "busy-poll-us", required_argument, NULL, 'B' },
		{ "no-stamp", no_argument, NULL, 'N' },
		{ "frags", required_argument, NULL, 'F' },
		{ "read", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned m[ETH_ALEN_];
	int c, mode;

	if (argc < 2 || (strcmp(argv[1], "rx") && strcmp(argv[1], "tx")))
		return -EINVAL;
	*o = (struct opts){ .tx = !strcmp(argv[1], "tx"), .frame_size = 4096, .nframes = 8192,
			    .ring_size = 1024, .payload = 3392, .secs = 5, .zc = -1,
			    .mode = XDP_PROG_MODE_NATIVE, .udp_port = MROC_UDP_PORT,
			    .sport = 20000, .cpu = -1, .busy_poll_s = BUSY_POLL_US / 1e6, .frags = 1 };
	optind = 2;
	while ((c = getopt_long(argc, argv, "i:q:s:D:f:n:r:m:z:p:c:h", lo, NULL)) != -1) {
		switch (c) {
		case 'i': o->ifname = optarg; break;
		case 'q': o->queue = (uint32_t)atoi(optarg); break;
		case 's': o->payload = (uint32_t)atoi(optarg); break;
		case 'D': o->secs = atof(optarg); break;
		case 'f': o->frame_size = (uint32_t)atoi(optarg); break;
		case 'n': o->nframes = (uint32_t)atoi(optarg); break;
		case 'r': o->ring_size = (uint32_t)atoi(optarg); break;
		case 'p': o->udp_port = (uint16_t)atoi(optarg); break;
		case 'P': o->sport = (uint16_t)atoi(optarg); break;
		case 'c': o->cpu = atoi(optarg); break;
		case 'C': o->credit = optarg; break;
		case 'B': o->busy_poll_s = atof(optarg) / 1e6; break;
		case 'N': o->no_stamp = true; break;
		case 'F': o->frags = (uint32_t)atoi(optarg); break;
		case 'R': o->read = !o->tx; break;
		case 'm':
			mode = xdp_prog_mode_parse(optarg);
			if (mode < 0)
				return mode;
			o->mode = (enum xdp_prog_mode)mode;
			break;
		case 'z':
			o->zc = !strcmp(optarg, "on") ? 1 : !strcmp(optarg, "off") ? 0 : -1;
			break;
		case 'S': if (parse_addr(optarg, &o->src)) return -EINVAL; break;
		case 'T': if (parse_addr(optarg, &o->dst)) return -EINVAL; break;
		case 'M':
			if (sscanf(optarg, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4],
				   &m[5]) != ETH_ALEN_)
				return -EINVAL;
			for (int i = 0; i < ETH_ALEN_; i++)
				o->dmac[i] = (uint8_t)m[i];
			o->have_dmac = true;
			break;
		case 'h': usage(stdout); exit(0);
		default: return -EINVAL;
		}
	}
	if (!o->ifname || o->secs <= 0 || (o->frame_size != 2048 && o->frame_size != 4096) ||
	    o->ring_size < BATCH || o->ring_size & (o->ring_size - 1) || o->nframes < 2 * o->ring_size ||
	    o->frags < 1 || o->frags > 2 || o->nframes % o->frags)
		return -EINVAL;
	/* What mrocd's configuration check allows (daemon/config/config.c check_network). */
	if (o->tx && (!o->have_dmac || !o->src.family || o->src.family != o->dst.family ||
		      mroc_len(o) + FRAME_HEADROOM + XDP_PACKET_HEADROOM > o->frame_size))
		return -EINVAL;
	return 0;
}

int main(int argc, char **argv)
{
	struct base b = { 0 };
	uint64_t pkts = 0, bytes = 0;
	struct xdp_statistics xs;
	socklen_t xl = sizeof(xs);
	double t0, t1, cpu = 0;
	int err, off;

	if (parse_args(argc, argv, &b.o)) {
		usage(stderr);
		return 2;
	}
	log_set_level(LOG_WARNING);
	xdp_prog_init_logging();
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (b.o.cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(b.o.cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	err = map_credit(&b);
	if (!err)
		err = open_socket(&b);
	if (err) {
		fprintf(stderr, "xsk-baseline: %s queue %u: %s\n", b.o.ifname, b.o.queue, strerror(-err));
		close_socket(&b);
		return 1;
	}
	if (b.o.tx) {
		off = fill_frames(&b);
		if (off < 0) {
			fprintf(stderr, "xsk-baseline: building frames: %s\n", strerror(-off));
			close_socket(&b);
			return 1;
		}
		t0 = now_s();
		cpu = cpu_s();
		tx_loop(&b, off, t0 + b.o.secs, &pkts);
		t1 = now_s();
		cpu = cpu_s() - cpu;
		bytes = pkts * (FRAME_HEADROOM - (uint32_t)off + mroc_len(&b.o));
	} else {
		rx_loop(&b, &t0, &t1, &cpu, &pkts, &bytes);
	}
	if (getsockopt(xsk_socket__fd(b.xsk), SOL_XDP, XDP_STATISTICS, &xs, &xl))
		memset(&xs, 0, sizeof(xs));
	printf("{\"role\":\"%s\",\"ifname\":\"%s\",\"queue\":%u,\"mode\":\"%s\",\"zero_copy\":%s,"
	       "\"frags\":%u,\"read\":%s,"
	       "\"frame_bytes\":%llu,\"pkts\":%llu,\"secs\":%.3f,\"mpps\":%.4f,\"gbps\":%.3f,"
	       "\"cpu_s\":%.3f,\"cpu_ns_per_pkt\":%.0f,"
	       "\"xsk_rx_dropped\":%llu,\"xsk_rx_fill_ring_empty\":%llu}\n",
	       b.o.tx ? "tx" : "rx", b.o.ifname, b.o.queue,
	       xdp_prog_mode_name((enum xdp_prog_mode)xdp_prog_attach_mode(b.prog, b.ifindex)),
	       b.zero_copy ? "true" : "false", b.o.tx ? b.o.frags : 1,
	       b.o.read ? "true" : "false",
	       (unsigned long long)(pkts ? bytes / pkts : 0),
	       (unsigned long long)pkts, t1 - t0, t1 > t0 ? pkts / (t1 - t0) / 1e6 : 0.0,
	       t1 > t0 ? bytes * 8 / (t1 - t0) / 1e9 : 0.0, cpu, pkts ? cpu * 1e9 / pkts : 0.0,
	       (unsigned long long)xs.rx_dropped,
	       (unsigned long long)xs.rx_fill_ring_empty_descs);
	close_socket(&b);
	return pkts ? 0 : 1;
}
