/* SPDX-License-Identifier: MIT */
/*
 * What the tests of the XDP steering program and its loader share
 * (test_xdp_prog.c: verdicts and counters; test_xdp_prog_sock.c: AF_XDP
 * sockets and live frames; test_xdp_prog_attach.c: attach, detach, stale
 * and foreign programs): crafted frames, running them through
 * BPF_PROG_TEST_RUN with the counters checked, and the start every one of
 * them makes (xdp_fix_start): root, a network namespace of its own
 * (unshare(CLONE_NEWNET) first thing, so it never sees the host's
 * interfaces and everything it creates vanishes with the process), the
 * program loadable, two veth pairs.  Everything static inline: each test
 * program takes what it uses.
 */
#ifndef MROC_TEST_XDP_PROG_FIX_H
#define MROC_TEST_XDP_PROG_FIX_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include "log.h"
#include "xdp_prog.h"

#define PORT		4793
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* Interfaces of our namespace: mx0/mx1 have 2 RX queues, mv0/mv1 one. */
static struct {
	bool veth;
	int mx0, mx1, mv0, mv1;
} net;

/* ---- frames ------------------------------------------------------------------ */

struct pkt {
	uint8_t b[600];
	size_t len;
	size_t l3, l4, pl;	/* offsets of the IP header, L4 header, UDP payload */
};

struct spec {
	int ipv;		/* 4 or 6 */
	int nvlan;		/* tags before the IP ethertype */
	uint16_t tpid[3];	/* 0 = 802.1Q */
	uint16_t ethertype;	/* 0 = by ipv */
	uint8_t proto;		/* 0 = UDP */
	uint16_t dport;		/* 0 = PORT */
	int plen;		/* bytes after the UDP (or other L4) header start */
	int ihl;		/* IPv4 header words, 0 = 5 */
};

/* VLAN stacks every case runs under. */
static const struct {
	int n;
	uint16_t tpid[2];
	const char *name;
} vlans[] = {
	{ 0, { 0 }, "untagged" },
	{ 1, { 0x8100 }, "802.1Q" },
	{ 1, { 0x88a8 }, "802.1AD" },
	{ 2, { 0x88a8, 0x8100 }, "QinQ" },
	{ 2, { 0x8100, 0x8100 }, "double 802.1Q" },
};

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline uint16_t get16(const uint8_t *p)
{
	return p[0] << 8 | p[1];
}

static inline void ip4_csum(struct pkt *p)
{
	uint8_t *ip = p->b + p->l3;
	size_t hl = (ip[0] & 0xf) * 4;
	uint32_t sum = 0;

	put16(ip + 10, 0);
	for (size_t i = 0; i + 1 < hl; i += 2)
		sum += get16(ip + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	put16(ip + 10, ~sum);
}

/* IP length fields say `l4len` bytes follow the IP header. */
static inline void set_ip_len(struct pkt *p, size_t l4len)
{
	if (p->b[p->l3] >> 4 == 6) {
		put16(p->b + p->l3 + 4, l4len);
	} else {
		put16(p->b + p->l3 + 2, p->l4 - p->l3 + l4len);
		ip4_csum(p);
	}
}

static inline void build(struct pkt *p, const struct spec *s)
{
	static const uint8_t dmac[6] = { 0x02, 0, 0, 0, 0, 0x02 }, smac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
	uint8_t proto = s->proto ? s->proto : IPPROTO_UDP;
	uint8_t *b = p->b, *ip;
	size_t o = 12, l4len;
	int ihl = s->ihl ? s->ihl : 5;

	memset(p, 0, sizeof(*p));
	memcpy(b, dmac, 6);
	memcpy(b + 6, smac, 6);
	for (int i = 0; i < s->nvlan; i++, o += 4) {
		put16(b + o, s->tpid[i] ? s->tpid[i] : 0x8100);
		put16(b + o + 2, 100 + i);
	}
	put16(b + o, s->ethertype ? s->ethertype : s->ipv == 6 ? 0x86dd : 0x0800);
	p->l3 = o += 2;
	ip = b + o;
	p->l4 = p->l3 + (s->ipv == 6 ? 40 : ihl * 4);
	l4len = (proto == IPPROTO_UDP ? 8 : 0) + s->plen;
	p->len = p->l4 + l4len;
	if (s->ipv == 6) {
		ip[0] = 0x60;
		ip[6] = proto;
		ip[7] = 64;
		ip[8] = ip[24] = 0xfd;		/* fd00::1 -> fd00::2 */
		ip[23] = 1;
		ip[39] = 2;
	} else {
		ip[0] = 0x40 | ihl;
		put16(ip + 4, 0x1234);
		put16(ip + 6, 0x4000);		/* DF */
		ip[8] = 64;
		ip[9] = proto;
		memcpy(ip + 12, (uint8_t[]){ 10, 0, 0, 1, 10, 0, 0, 2 }, 8);
		for (int i = 20; i < ihl * 4; i++)
			ip[i] = 1;		/* NOP options */
	}
	if (proto == IPPROTO_UDP) {
		put16(b + p->l4, 50000);
		put16(b + p->l4 + 2, s->dport ? s->dport : PORT);
		put16(b + p->l4 + 4, 8 + s->plen);
		p->pl = p->l4 + 8;
	} else {
		p->pl = p->l4;
	}
	for (int i = 0; i < s->plen; i++)
		b[p->pl + i] = 0x40 + i;
	if (proto == IPPROTO_UDP && s->plen > 0)
		b[p->pl] = MROC_XDP_VERSION;	/* then opcode 0x41... */
	set_ip_len(p, l4len);
}

/* A UDP datagram to PORT with plen payload bytes under vlans[v]; IPv4 header of ihl words. */
static inline void build_v(struct pkt *p, int ipv, size_t v, int plen, int ihl)
{
	build(p, &(struct spec){ .ipv = ipv, .nvlan = vlans[v].n, .plen = plen, .ihl = ihl,
				 .tpid = { vlans[v].tpid[0], vlans[v].tpid[1] } });
}

/* A valid MetaRoCE frame (16-byte header + 8 bytes) under vlans[v]. */
static inline void build_ours(struct pkt *p, int ipv, size_t v)
{
	build_v(p, ipv, v, 24, 0);
}

/* ---- running frames ------------------------------------------------------------ */

struct result {
	int action;
	struct xdp_prog_counters d;	/* counter deltas */
	uint8_t out[700];
	uint32_t out_len;
};

static inline void read_counters(struct xdp_prog *prog, struct xdp_prog_counters *c)
{
	assert_int_equal(xdp_prog_read_counters(prog, c), 0);
}

static inline void run(struct xdp_prog *prog, const uint8_t *frame, size_t len,
		       uint32_t ifindex, uint32_t queue, struct result *r)
{
	struct xdp_md ctx = { .data_end = len, .ingress_ifindex = ifindex, .rx_queue_index = queue };
	struct xdp_prog_counters before, after;
	LIBBPF_OPTS(bpf_test_run_opts, o,
		    .data_in = frame, .data_size_in = len,
		    .data_out = r->out, .data_size_out = sizeof(r->out),
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx));
	int err;

	read_counters(prog, &before);
	err = bpf_prog_test_run_opts(xdp_prog_fd(prog), &o);
	if (err)
		print_error("test_run: %s (len %zu, ifindex %u, queue %u)\n", strerror(-err),
			    len, ifindex, queue);
	assert_int_equal(err, 0);
	read_counters(prog, &after);
	for (int i = 0; i < MROC_XDP_CNT__COUNT; i++)
		r->d.v[i] = after.v[i] - before.v[i];
	r->action = o.retval;
	r->out_len = o.data_size_out;
}

static inline const char *action_name(int a)
{
	static const char *const names[] = { "ABORTED", "DROP", "PASS", "TX", "REDIRECT" };

	return a >= 0 && a < (int)ARRAY_SIZE(names) ? names[a] : "?";
}

/*
 * Run and check: `action`, rx_total and `counter` +1, nothing else; a
 * passed frame is unchanged.
 */
static inline void expect_at(struct xdp_prog *prog, const uint8_t *frame, size_t len,
			     uint32_t ifindex, uint32_t queue, int action, int counter,
			     const char *what, int line)
{
	struct result r;
	bool ok;

	run(prog, frame, len, ifindex, queue, &r);
	ok = r.action == action && r.d.rx_total == 1;
	for (int i = 1; i < MROC_XDP_CNT__COUNT; i++)
		ok = ok && r.d.v[i] == (i == counter);
	if (action == XDP_PASS)
		ok = ok && r.out_len == len && !memcmp(r.out, frame, len);
	if (ok)
		return;
	print_error("line %d: %s (len %zu): want %s + %s, got %s, counters:", line, what, len,
		    action_name(action), xdp_prog_counter_name(counter), action_name(r.action));
	for (int i = 0; i < MROC_XDP_CNT__COUNT; i++)
		if (r.d.v[i])
			print_error(" %s+%llu", xdp_prog_counter_name(i),
				    (unsigned long long)r.d.v[i]);
	print_error("%s\n", action == XDP_PASS && r.out_len == len &&
			    memcmp(r.out, frame, len) ? " (frame modified)" : "");
	fail();
}

#define expect(prog, p, action, cnt, ...)					\
	do {									\
		char what_[160];						\
		snprintf(what_, sizeof(what_), __VA_ARGS__);			\
		expect_at(prog, (p)->b, (p)->len, 0, 0, action, MROC_XDP_CNT_##cnt,	\
			  what_, __LINE__);					\
	} while (0)
#define expect_on(prog, p, ifindex, queue, action, cnt, what)			\
	expect_at(prog, (p)->b, (p)->len, ifindex, queue, action, MROC_XDP_CNT_##cnt, what,	\
		  __LINE__)
#define expect_pass(prog, p, cnt, ...)	expect(prog, p, XDP_PASS, cnt, __VA_ARGS__)
#define expect_drop(prog, p, cnt, ...)	expect(prog, p, XDP_DROP, DROP_##cnt, __VA_ARGS__)

/* A program of our own per test: counters start at zero, nothing attached. */
static inline struct xdp_prog *open_prog(uint32_t max_sockets)
{
	struct xdp_prog_opts opts = { .sz = sizeof(opts), .udp_port = PORT,
				      .max_sockets = max_sockets };
	struct xdp_prog *prog;

	assert_int_equal(xdp_prog_open(&prog, &opts), 0);
	return prog;
}

/* ---- setup ----------------------------------------------------------------------- */

static inline int sh(const char *cmd)
{
	char full[512];

	snprintf(full, sizeof(full), "%s >/dev/null 2>&1", cmd);
	return system(full);
}

/* In our fresh namespace: two veth pairs, up, without IPv6 chatter. */
static inline void setup_net(void)
{
	FILE *f;

	f = fopen("/proc/sys/net/ipv6/conf/default/disable_ipv6", "w");
	if (f) {
		fputs("1\n", f);
		fclose(f);
	}
	if (sh("ip link set lo up") ||
	    sh("ip link add mx0 numtxqueues 2 numrxqueues 2 type veth peer name mx1 "
	       "numtxqueues 2 numrxqueues 2") ||
	    sh("ip link add mv0 type veth peer name mv1") ||
	    sh("ip link set mx0 up") || sh("ip link set mx1 up") ||
	    sh("ip link set mv0 up") || sh("ip link set mv1 up")) {
		printf("note: cannot create veth pairs with ip(8): interface tests are skipped\n");
		return;
	}
	net.mx0 = if_nametoindex("mx0");
	net.mx1 = if_nametoindex("mx1");
	net.mv0 = if_nametoindex("mv0");
	net.mv1 = if_nametoindex("mv1");
	net.veth = net.mx0 && net.mx1 && net.mv0 && net.mv1;
}

/*
 * What every test program of the XDP program does first: 0 to run its
 * tests, 77 (skip) when not root, without network namespaces or BPF.
 */
static inline int xdp_fix_start(const char *name)
{
	struct xdp_prog_opts opts = { .sz = sizeof(opts), .udp_port = PORT };
	struct xdp_prog *probe;
	int err;

	if (geteuid() != 0) {
		printf("SKIP: %s needs root (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN)\n", name);
		return 77;
	}
	if (unshare(CLONE_NEWNET)) {
		printf("SKIP: cannot make a network namespace: %s\n", strerror(errno));
		return 77;
	}
	log_set_level(LOG_WARNING);
	xdp_prog_init_logging();
	err = xdp_prog_open(&probe, &opts);
	if (err) {
		printf("SKIP: cannot load the XDP program (BPF unavailable?): %s\n", strerror(-err));
		return 77;
	}
	xdp_prog_close(probe);
	setup_net();
	return 0;
}

#endif
