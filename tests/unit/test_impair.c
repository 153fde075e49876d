// SPDX-License-Identifier: MIT
/*
 * bpf/impair.bpf.c, the test fabric's impairment program, run on crafted
 * frames with BPF_PROG_TEST_RUN: random drop and CE at their extremes, and
 * the virtual-queue CE threshold (a burst above the threshold at the
 * configured rate is marked, ECN-capable packets only, with a valid IPv4
 * header checksum; below it nothing is).  Needs root (BPF); skips otherwise.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "impair.skel.h"

enum { CFG_DROP_PPM = 0, CFG_CE_PPM, CFG_VQ_RATE_KBPS, CFG_VQ_MARK_BYTES };
enum { CNT_SEEN = 0, CNT_DROPPED, CNT_CE_MARKED, CNT_NOT_ECT };

#define FRAME_LEN	1000
/* A frame buffer whose IP header (after 14 bytes of Ethernet) is 4-byte aligned, as in a NIC's. */
#define FRAME_BUF(name)	_Alignas(4) uint8_t name##_room[FRAME_LEN + 2]; uint8_t *name = name##_room + 2

struct fx {
	struct impair *skel;
	int ncpu;
};

static int setup(void **state)
{
	static struct fx f;

	if (geteuid() != 0)
		return 0;
	f.skel = impair__open_and_load();
	if (!f.skel)
		return -1;
	f.ncpu = libbpf_num_possible_cpus();
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f)
		impair__destroy(f->skel);
	return 0;
}

static void set_cfg(struct fx *f, uint32_t key, uint32_t val)
{
	assert_int_equal(bpf_map__update_elem(f->skel->maps.impair_cfg, &key, sizeof(key), &val,
					      sizeof(val), 0), 0);
}

static uint64_t counter(struct fx *f, uint32_t key)
{
	uint64_t v[1024], sum = 0;

	assert_true(f->ncpu > 0 && f->ncpu <= 1024);
	assert_int_equal(bpf_map__lookup_elem(f->skel->maps.impair_cnt, &key, sizeof(key), v,
					      sizeof(v[0]) * (size_t)f->ncpu, 0), 0);
	for (int i = 0; i < f->ncpu; i++)
		sum += v[i];
	return sum;
}

static uint16_t ip_csum(const struct iphdr *ip)
{
	const uint16_t *w = (const uint16_t *)ip;
	uint32_t s = 0;

	for (unsigned i = 0; i < sizeof(*ip) / 2; i++)
		s += w[i];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* An Ethernet + IPv4 frame of FRAME_LEN bytes with the given ECN bits. */
static void frame(uint8_t *buf, uint8_t ecn)
{
	struct ethhdr *eth = (struct ethhdr *)buf;
	struct iphdr *ip = (struct iphdr *)(eth + 1);

	memset(buf, 0, FRAME_LEN);
	eth->h_proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->tos = ecn;
	ip->tot_len = htons(FRAME_LEN - ETH_HLEN);
	ip->ttl = 64;
	ip->protocol = 17;
	ip->saddr = htonl(0x0a000001);
	ip->daddr = htonl(0x0a000002);
	ip->check = ip_csum(ip);
}

/* Run the program on one frame; returns its verdict, the output frame in out. */
static int run(struct fx *f, uint8_t ecn, uint8_t *out)
{
	FRAME_BUF(in);
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = FRAME_LEN,
		    .data_out = out, .data_size_out = FRAME_LEN);

	frame(in, ecn);
	assert_int_equal(bpf_prog_test_run_opts(bpf_program__fd(f->skel->progs.impair), &o), 0);
	assert_int_equal(o.data_size_out, FRAME_LEN);
	return (int)o.retval;
}

static void reset(struct fx *f)
{
	for (uint32_t k = CFG_DROP_PPM; k <= CFG_VQ_MARK_BYTES; k++)
		set_cfg(f, k, 0);
}

#define NEED_ROOT(state) do { if (!*(state)) skip(); } while (0)

static void test_clean_by_default(void **state)
{
	struct fx *f = *state;
	FRAME_BUF(out);

	NEED_ROOT(state);
	reset(f);
	for (int i = 0; i < 200; i++) {
		assert_int_equal(run(f, 2, out), TC_ACT_OK);
		assert_int_equal(((struct iphdr *)(out + ETH_HLEN))->tos & 3, 2);
	}
}

static void test_blackhole_and_ce_all(void **state)
{
	struct fx *f = *state;
	FRAME_BUF(out);
	struct iphdr *ip = (struct iphdr *)(out + ETH_HLEN);
	uint64_t dropped, not_ect;

	NEED_ROOT(state);
	dropped = counter(f, CNT_DROPPED);
	not_ect = counter(f, CNT_NOT_ECT);
	reset(f);
	set_cfg(f, CFG_DROP_PPM, 1000000);
	assert_int_equal(run(f, 2, out), TC_ACT_SHOT);
	assert_int_equal(counter(f, CNT_DROPPED), dropped + 1);
	reset(f);
	set_cfg(f, CFG_CE_PPM, 1000000);
	assert_int_equal(run(f, 2, out), TC_ACT_OK);
	assert_int_equal(ip->tos & 3, 3);
	assert_int_equal(ip_csum(ip), 0);	/* the checksum was fixed up */
	assert_int_equal(run(f, 0, out), TC_ACT_OK);	/* not-ECT: counted, untouched */
	assert_int_equal(ip->tos & 3, 0);
	assert_int_equal(counter(f, CNT_NOT_ECT), not_ect + 1);
}

/*
 * Virtual queue at 1 Mbit/s (125 bytes per ms) with a 4000-byte threshold:
 * back-to-back frames of 1000 bytes (microseconds apart) find it above the
 * threshold from the sixth on (5000 queued), and the ones after are marked.
 */
static void test_queue_threshold(void **state)
{
	struct fx *f = *state;
	FRAME_BUF(out);
	struct iphdr *ip = (struct iphdr *)(out + ETH_HLEN);
	int marked = 0, first = -1;

	NEED_ROOT(state);
	reset(f);
	set_cfg(f, CFG_VQ_RATE_KBPS, 1000);
	set_cfg(f, CFG_VQ_MARK_BYTES, 4000);
	usleep(100 * 1000);	/* drain what earlier tests queued: 12.5 KB at 1 Mbit/s */
	for (int i = 0; i < 20; i++) {
		assert_int_equal(run(f, 1, out), TC_ACT_OK);
		if ((ip->tos & 3) == 3) {
			marked++;
			if (first < 0)
				first = i;
			assert_int_equal(ip_csum(ip), 0);
		}
	}
	/*
	 * Frame i finds at most i x 1000 bytes, so the sixth is the first that can
	 * be marked; the margins cover a loaded machine's pauses (8 ms drains one).
	 */
	assert_true(first >= 5 && first <= 10);
	assert_true(marked >= 10);
	/* Without a threshold, the same burst is left alone. */
	set_cfg(f, CFG_VQ_MARK_BYTES, 0);
	for (int i = 0; i < 20; i++) {
		run(f, 1, out);
		assert_int_equal(ip->tos & 3, 1);
	}
	/* A drained queue marks nothing: at 1 Gbit/s, 1000 bytes leave in 8 us. */
	set_cfg(f, CFG_VQ_RATE_KBPS, 1000000);
	set_cfg(f, CFG_VQ_MARK_BYTES, 100000);
	usleep(1000);
	for (int i = 0; i < 20; i++) {
		run(f, 1, out);
		assert_int_equal(ip->tos & 3, 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_by_default),
		cmocka_unit_test(test_blackhole_and_ce_all),
		cmocka_unit_test(test_queue_threshold),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
