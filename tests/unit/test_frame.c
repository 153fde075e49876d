// SPDX-License-Identifier: MIT
/*
 * Frame building and parsing: round trips over families, VLAN tags, ECN and
 * sizes; checksums against an independent byte-wise computation, a
 * textbook IPv4 header and frames captured from the kernel; every
 * truncation and every bad field refused; CHECKSUM_PARTIAL frames from
 * kernel sockets on veth accepted (see frame.c).  Parses run on heap
 * copies of exactly the frame's length so a sanitizer build catches any
 * read past the end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "frame.h"
#include "wire.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_PLEN	1500
#define BUF_LEN		(FRAME_HEADROOM + MAX_PLEN)

static const uint8_t mac_a[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t mac_b[6] = { 0x02, 0, 0, 0, 0, 0x02 };

/* ---- frames captured on veth (kernel 6.18, ip netns + AF_PACKET) ----------------
 * 10.0.0.1:40000 -> 10.0.0.2:4791 and [fd00::1]:40001 -> [fd00::2]:4791 from
 * 02:00:00:00:00:01 to 02:00:00:00:00:02.  "full" frames were sent with
 * `ethtool -K v0 tx off` (complete UDP checksum), "partial" ones with the
 * default offload (CHECKSUM_PARTIAL: the field holds the pseudo-header sum).
 */
static const char payload4[] = "MetaRoCE hello!";	/* 15 bytes, ECT(0) */
static const char payload6[] = "MetaRoCE v6 hi";	/* 14 bytes, ECT(1) */

static const uint8_t cap_full4[57] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00,
	0x45, 0x02, 0x00, 0x2b, 0xbd, 0x07, 0x40, 0x00, 0x40, 0x11, 0x69, 0xb6,
	0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02,
	0x9c, 0x40, 0x12, 0xb7, 0x00, 0x17, 0xd2, 0x06,
	'M', 'e', 't', 'a', 'R', 'o', 'C', 'E', ' ', 'h', 'e', 'l', 'l', 'o', '!',
};

static const uint8_t cap_partial4[57] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00,
	0x45, 0x02, 0x00, 0x2b, 0xbd, 0x01, 0x40, 0x00, 0x40, 0x11, 0x69, 0xbc,
	0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02,
	0x9c, 0x40, 0x12, 0xb7, 0x00, 0x17, 0x14, 0x2b,
	'M', 'e', 't', 'a', 'R', 'o', 'C', 'E', ' ', 'h', 'e', 'l', 'l', 'o', '!',
};

static const uint8_t cap_full6[76] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x86, 0xdd,
	0x60, 0x1b, 0x66, 0x53, 0x00, 0x16, 0x11, 0x40,
	0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,
	0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02,
	0x9c, 0x41, 0x12, 0xb7, 0x00, 0x16, 0x40, 0x4a,
	'M', 'e', 't', 'a', 'R', 'o', 'C', 'E', ' ', 'v', '6', ' ', 'h', 'i',
};

static const uint8_t cap_partial6[76] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x86, 0xdd,
	0x60, 0x1b, 0x66, 0x53, 0x00, 0x16, 0x11, 0x40,
	0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,
	0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02,
	0x9c, 0x41, 0x12, 0xb7, 0x00, 0x16, 0xfa, 0x2b,
	'M', 'e', 't', 'a', 'R', 'o', 'C', 'E', ' ', 'v', '6', ' ', 'h', 'i',
};

/* ---- independent reference: byte-wise RFC 1071 ---------------------------------- */

static uint32_t ref_sum(uint32_t sum, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static uint16_t ref_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void set16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = (uint8_t)v;
}

/* Offsets of the IP and UDP headers in a frame we built or captured. */
static size_t l3_off(const uint8_t *f)
{
	return get16(f + 12) == 0x8100 ? 18 : 14;
}

static bool is_v6(const uint8_t *f)
{
	return get16(f + l3_off(f) - 2) == 0x86dd;
}

static size_t l4_off(const uint8_t *f)
{
	size_t l3 = l3_off(f);

	return l3 + (is_v6(f) ? 40 : (size_t)(f[l3] & 0xf) * 4);
}

/* The pseudo-header sum, built as bytes. */
static uint32_t ref_pseudo(const uint8_t *f)
{
	size_t l3 = l3_off(f), l4 = l4_off(f);
	uint8_t ph[40] = { 0 };
	size_t n;

	if (is_v6(f)) {
		memcpy(ph, f + l3 + 8, 32);
		ph[34] = f[l4 + 4];
		ph[35] = f[l4 + 5];
		ph[39] = 17;
		n = 40;
	} else {
		memcpy(ph, f + l3 + 12, 8);
		ph[9] = 17;
		ph[10] = f[l4 + 4];
		ph[11] = f[l4 + 5];
		n = 12;
	}
	return ref_sum(0, ph, n);
}

/* The UDP checksum over pseudo-header, header (check = 0) and payload. */
static uint16_t ref_udp_csum(const uint8_t *f)
{
	size_t l4 = l4_off(f);
	uint16_t ulen = get16(f + l4 + 4);
	uint8_t *copy = malloc(ulen);
	uint16_t c;

	assert_non_null(copy);
	memcpy(copy, f + l4, ulen);
	copy[6] = copy[7] = 0;
	c = (uint16_t)~ref_fold(ref_sum(ref_pseudo(f), copy, ulen));
	free(copy);
	return c ? c : 0xffff;
}

static void fix_ip_csum(uint8_t *f)
{
	size_t l3 = l3_off(f);
	size_t ihl = (size_t)(f[l3] & 0xf) * 4;

	set16(f + l3 + 10, 0);
	set16(f + l3 + 10, (uint16_t)~ref_fold(ref_sum(0, f + l3, ihl)));
}

static void fix_udp_csum(uint8_t *f)
{
	set16(f + l4_off(f) + 6, ref_udp_csum(f));
}

/* ---- helpers ---------------------------------------------------------------------- */

static struct mroc_addr addr(const char *s)
{
	struct mroc_addr a;

	assert_int_equal(addr_parse(s, &a), 0);
	return a;
}

static struct frame_tx mktx(int family, uint16_t vlan, uint8_t ecn)
{
	struct frame_tx tx = {
		.vlan = vlan, .sport = 40000, .dport = 4791, .ecn = ecn, .udp_csum = true,
	};

	memcpy(tx.smac, mac_a, 6);
	memcpy(tx.dmac, mac_b, 6);
	tx.src = addr(family == AF_INET ? "10.0.0.1" : "fd00::1");
	tx.dst = addr(family == AF_INET ? "10.0.0.2" : "fd00::2");
	return tx;
}

struct built {
	uint8_t buf[BUF_LEN + 16];	/* room for the ICRC and a byte of padding */
	uint8_t *frame;
	size_t len;
};

/* Build with payload bytes i*7+3, asserting success. */
static void build(struct built *b, const struct frame_tx *tx, size_t plen)
{
	int off;

	memset(b->buf, 0xee, sizeof(b->buf));
	for (size_t i = 0; i < plen; i++)
		b->buf[FRAME_HEADROOM + i] = (uint8_t)(i * 7 + 3);
	off = frame_build(b->buf, plen, tx);
	assert_true(off >= 0 && off < FRAME_HEADROOM);
	b->frame = b->buf + off;
	b->len = frame_len(off, plen, tx);
}

/* frame_parse on a heap copy of exactly len bytes; returns its result. */
static int parse_copy(const uint8_t *f, size_t len, struct frame_rx *rx, enum frame_err *why,
		      uint8_t **copy_out)
{
	uint8_t *copy = malloc(len ? len : 1);
	int r;

	assert_non_null(copy);
	memcpy(copy, f, len);
	r = frame_parse(copy, len, rx, why);
	if (copy_out)
		*copy_out = copy;
	else
		free(copy);
	return r;
}

static void expect_err(const uint8_t *f, size_t len, enum frame_err want)
{
	struct frame_rx rx;
	enum frame_err why = FRAME_OK;

	assert_int_equal(parse_copy(f, len, &rx, &why, NULL), -EBADMSG);
	assert_string_equal(frame_err_name(why), frame_err_name(want));
}

/* Parses a copy; rx->payload then points into f, not the freed copy. */
static void expect_ok(const uint8_t *f, size_t len, struct frame_rx *rx)
{
	enum frame_err why = FRAME_ERR__COUNT;
	uint8_t *copy;

	assert_int_equal(parse_copy(f, len, rx, &why, &copy), 0);
	assert_int_equal(why, FRAME_OK);
	assert_true(rx->payload >= copy && rx->payload + rx->payload_len <= copy + len);
	rx->payload = f + (rx->payload - copy);
	free(copy);
}

/* ---- checksum helpers --------------------------------------------------------------- */

static void test_csum_rfc1071_example(void **state)
{
	/* RFC 1071 section 3: these bytes sum to ddf2, checksum 220d. */
	static const uint8_t d[8] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };

	(void)state;
	assert_int_equal(csum_add(0, d, 8), 0xddf2);
	assert_int_equal(csum_fold(csum_add(0, d, 8)), 0x220d);
	assert_int_equal(csum_add(0, d, 0), 0);
	assert_int_equal(csum_fold(0), 0xffff);
}

/* Every length 0..300 at every start alignment 0..7, and chained in even chunks. */
static void test_csum_matches_reference(void **state)
{
	uint8_t *buf = malloc(320);
	uint32_t seed = 12345;

	(void)state;
	assert_non_null(buf);
	for (size_t i = 0; i < 320; i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (uint8_t)(seed >> 16);
	}
	for (size_t align = 0; align < 8; align++) {
		for (size_t len = 0; len <= 300; len++) {
			uint16_t want = ref_fold(ref_sum(0, buf + align, len));
			uint32_t got = csum_add(0, buf + align, len);

			assert_true(got <= 0xffff);
			/* 0 and 0xffff are both zero: only all-zero data sums to 0 */
			assert_int_equal(ref_fold(got), want);
			if (len >= 10) {
				size_t cut = (len / 3) & ~(size_t)1;
				uint32_t s = csum_add(0, buf + align, cut);

				s = csum_add(s, buf + align + cut, len - cut);
				assert_int_equal(csum_fold(s), (uint16_t)~want);
			}
		}
	}
	/* all-ones data: 64-bit end-around carries */
	memset(buf, 0xff, 320);
	assert_int_equal(csum_add(0, buf, 256), 0xffff);
	assert_int_equal(csum_add(0x1234, buf, 256), ref_fold(0x1234 + 0xffff));
	free(buf);
}

/* ---- building -------------------------------------------------------------------- */

/*
 * The textbook IPv4 header (Wikipedia, "Internet checksum"): 192.168.0.1 ->
 * 192.168.0.199, total length 115, DF, TTL 64, UDP; checksum b861.  Our
 * builder must write exactly these 20 bytes.
 */
static void test_ipv4_header_known_vector(void **state)
{
	static const uint8_t want[20] = {
		0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
		0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
	};
	struct frame_tx tx = mktx(AF_INET, 0, FRAME_ECN_NOT_ECT);
	struct built b;

	(void)state;
	tx.src = addr("192.168.0.1");
	tx.dst = addr("192.168.0.199");
	build(&b, &tx, 115 - 28);
	assert_memory_equal(b.frame + 14, want, 20);
	assert_int_equal(ref_fold(ref_sum(0, want, 20)), 0xffff);
}

/* Rebuilding the captured frames gives the kernel's bytes (IP id aside). */
static void test_build_matches_capture_v4(void **state)
{
	struct frame_tx tx = mktx(AF_INET, 0, FRAME_ECN_ECT0);
	struct built b;

	(void)state;
	memcpy(b.buf + FRAME_HEADROOM, payload4, 15);
	assert_int_equal(frame_build(b.buf, 15, &tx), FRAME_HEADROOM - 42);
	b.frame = b.buf + FRAME_HEADROOM - 42;
	assert_memory_equal(b.frame, cap_full4, 18);		/* MACs, type, IP ver..len */
	assert_int_equal(get16(b.frame + 18), 0);		/* our IP id */
	assert_memory_equal(b.frame + 20, cap_full4 + 20, 4);	/* DF, TTL, proto */
	assert_memory_equal(b.frame + 26, cap_full4 + 26, 57 - 26); /* addrs, UDP, payload */
	/* IP checksum: the kernel's, adjusted for id 0xbd07 -> 0 */
	assert_int_equal(get16(b.frame + 24),
			 (uint16_t)~ref_fold((uint16_t)~get16(cap_full4 + 24) + (uint16_t)~0xbd07));
	/* a correct header sums to ffff */
	assert_int_equal(ref_fold(ref_sum(0, b.frame + 14, 20)), 0xffff);
}

static void test_build_matches_capture_v6(void **state)
{
	struct frame_tx tx = mktx(AF_INET6, 0, FRAME_ECN_ECT1);
	struct built b;
	uint32_t fl;

	(void)state;
	tx.sport = 40001;
	memcpy(b.buf + FRAME_HEADROOM, payload6, 14);
	assert_int_equal(frame_build(b.buf, 14, &tx), FRAME_HEADROOM - 62);
	b.frame = b.buf + FRAME_HEADROOM - 62;
	assert_memory_equal(b.frame, cap_full6, 14);
	/* version 6, traffic class 0x01; flow labels differ (ours from the ports) */
	assert_int_equal(b.frame[14], cap_full6[14]);
	assert_int_equal(b.frame[15] & 0xf0, cap_full6[15] & 0xf0);
	fl = (uint32_t)(b.frame[15] & 0xf) << 16 | get16(b.frame + 16);
	assert_int_not_equal(fl, 0);
	assert_memory_equal(b.frame + 18, cap_full6 + 18, 76 - 18);	/* incl. UDP checksum 404a */
}

/* IPv4 without udp_csum carries 0; with it and on IPv6, the reference value. */
static void test_udp_csum_pseudo_header(void **state)
{
	static const size_t plens[] = { 0, 1, 2, 7, 8, 63, 64, 1000, 1473 };
	struct built b;

	(void)state;
	for (int fam = 0; fam < 2; fam++) {
		for (size_t i = 0; i < ARRAY_SIZE(plens); i++) {
			struct frame_tx tx = mktx(fam ? AF_INET6 : AF_INET, i & 1 ? 42 : 0, 0);
			uint16_t c;

			build(&b, &tx, plens[i]);
			c = get16(b.frame + l4_off(b.frame) + 6);
			assert_int_equal(c, ref_udp_csum(b.frame));
			/* the whole datagram with pseudo-header sums to ffff */
			assert_int_equal(ref_fold(ref_sum(ref_pseudo(b.frame), b.frame + l4_off(b.frame),
							  8 + plens[i])), 0xffff);
			if (!fam) {
				tx.udp_csum = false;
				build(&b, &tx, plens[i]);
				assert_int_equal(get16(b.frame + l4_off(b.frame) + 6), 0);
			}
		}
	}
}

/* A datagram whose checksum computes to 0 is sent with ffff (0 = none). */
static void test_udp_csum_zero_becomes_ffff(void **state)
{
	(void)state;
	for (int fam = 0; fam < 2; fam++) {
		struct frame_tx tx = mktx(fam ? AF_INET6 : AF_INET, 0, 0);
		struct frame_rx rx;
		struct built b;
		uint16_t c;

		build(&b, &tx, 20);
		set16(b.buf + FRAME_HEADROOM + 18, 0);
		assert_int_equal(frame_build(b.buf, 20, &tx), b.frame - b.buf);
		c = get16(b.frame + l4_off(b.frame) + 6);
		/* a zero word replaced by the checksum makes the sum ffff, the checksum 0 */
		set16(b.buf + FRAME_HEADROOM + 18, c);
		assert_int_equal(frame_build(b.buf, 20, &tx), b.frame - b.buf);
		assert_int_equal(get16(b.frame + l4_off(b.frame) + 6), 0xffff);
		assert_int_equal(ref_udp_csum(b.frame), 0xffff);
		expect_ok(b.frame, b.len, &rx);
	}
}

static void test_ipv6_flow_label(void **state)
{
	struct frame_tx tx = mktx(AF_INET6, 0, 0);
	uint32_t fl[4];
	struct built b;

	(void)state;
	for (int i = 0; i < 4; i++) {
		tx.sport = (uint16_t)(50000 + i % 2);
		build(&b, &tx, 10);
		fl[i] = (uint32_t)(b.frame[15] & 0xf) << 16 | get16(b.frame + 16);
		assert_int_not_equal(fl[i], 0);
	}
	assert_int_equal(fl[0], fl[2]);		/* same port pair, same label */
	assert_int_equal(fl[1], fl[3]);
	assert_int_not_equal(fl[0], fl[1]);	/* another path, another label */
}

static void test_build_fields(void **state)
{
	struct frame_tx tx = mktx(AF_INET, 0x123, FRAME_ECN_CE);
	struct built b;

	(void)state;
	tx.dscp = 46;
	tx.ttl = 7;
	build(&b, &tx, 10);
	assert_int_equal(b.frame - b.buf, FRAME_HEADROOM - 46);
	assert_int_equal(get16(b.frame + 12), 0x8100);
	assert_int_equal(get16(b.frame + 14), 0x123);
	assert_int_equal(get16(b.frame + 16), 0x0800);
	assert_int_equal(b.frame[19], 46 << 2 | 3);
	assert_int_equal(get16(b.frame + 24), 0x4000);	/* DF, offset 0 */
	assert_int_equal(b.frame[26], 7);

	tx = mktx(AF_INET6, 0, FRAME_ECN_ECT0);
	tx.dscp = 10;
	build(&b, &tx, 10);
	assert_int_equal(b.frame - b.buf, FRAME_HEADROOM - 62);
	assert_int_equal(get16(b.frame + 14) >> 4 & 0xff, 10 << 2 | 2);	/* traffic class */
	assert_int_equal(b.frame[21], 64);					/* hop limit default */
	assert_int_equal(get16(b.frame + 18), 18);				/* payload length */
}

static void test_build_rejects(void **state)
{
	uint8_t *buf = calloc(1, FRAME_HEADROOM + 0x10000);
	struct frame_tx tx;

	(void)state;
	assert_non_null(buf);
	tx = mktx(AF_INET, 0, 0);
	tx.dst = addr("fd00::2");
	assert_int_equal(frame_build(buf, 10, &tx), -EINVAL);
	tx = mktx(AF_INET, 0, 0);
	tx.src.family = tx.dst.family = 0;
	assert_int_equal(frame_build(buf, 10, &tx), -EINVAL);
	tx = mktx(AF_INET, 4096, 0);
	assert_int_equal(frame_build(buf, 10, &tx), -EINVAL);
	tx = mktx(AF_INET, 0, 4);
	assert_int_equal(frame_build(buf, 10, &tx), -EINVAL);
	tx = mktx(AF_INET, 0, 0);
	tx.dscp = 64;
	assert_int_equal(frame_build(buf, 10, &tx), -EINVAL);
	tx = mktx(AF_INET, 0, 0);
	assert_int_equal(frame_build(buf, 0xffff - 28 + 1, &tx), -EINVAL);
	assert_true(frame_build(buf, 0xffff - 28, &tx) >= 0);
	tx = mktx(AF_INET6, 0, 0);
	assert_int_equal(frame_build(buf, 0xffff - 8 + 1, &tx), -EINVAL);
	assert_true(frame_build(buf, 0xffff - 8, &tx) >= 0);
	free(buf);
}

/* ---- frame_build_cached ------------------------------------------------------------ */

/*
 * frame_build_cached(tx) against frame_build(tx) on the same payload: the
 * same return value and the same frame, byte for byte.
 */
static void expect_cached_same(struct frame_tmpls *c, const struct frame_tx *tx, size_t plen)
{
	static uint8_t want[BUF_LEN + 16], got[BUF_LEN + 16];
	int a, b;

	/* (a plen past MAX_PLEN is one both refuse before they touch the payload) */
	for (size_t i = 0; i < plen && i < MAX_PLEN; i++)
		want[FRAME_HEADROOM + i] = got[FRAME_HEADROOM + i] = (uint8_t)(i * 13 + plen);
	memset(want, 0xee, FRAME_HEADROOM);
	memset(got, 0x11, FRAME_HEADROOM);	/* what the cache does not write shows */
	a = frame_build(want, plen, tx);
	b = frame_build_cached(c, got, plen, tx);
	assert_int_equal(b, a);
	if (a >= 0) {
		assert_true(plen <= MAX_PLEN);
		assert_memory_equal(got + a, want + a, frame_len(a, plen, tx));
	}
}

/*
 * Mostly misses: after a window with more than a quarter missed, the next
 * FRAME_TMPL_BYPASS calls go straight to frame_build (nothing is built, the
 * frames are the same), then the cache is tried again.
 */
static void test_build_cached_bypass(void **state)
{
	static struct frame_tmpls c;
	struct frame_tx tx = mktx(AF_INET, 0, FRAME_ECN_ECT0);
	uint64_t built;
	int i;

	(void)state;
	tx.udp_csum = false;
	tx.icrc = true;
	for (i = 0; i < FRAME_TMPL_WINDOW; i++) {	/* every call a new port: a miss */
		tx.sport = (uint16_t)(30000 + i);
		expect_cached_same(&c, &tx, 100);
	}
	assert_int_equal(c.built, FRAME_TMPL_WINDOW);
	built = c.built;
	for (i = 0; i < FRAME_TMPL_BYPASS; i++) {
		tx.sport = (uint16_t)(40000 + i);
		expect_cached_same(&c, &tx, 100);
	}
	assert_int_equal(c.built, built);
	tx.sport = 50000;
	expect_cached_same(&c, &tx, 100);
	assert_int_equal(c.built, built + 1);
	/* A cache that hits keeps going: one port, many calls, one build. */
	memset(&c, 0, sizeof(c));
	for (i = 0; i < 4 * FRAME_TMPL_WINDOW; i++)
		expect_cached_same(&c, &tx, 100 + (size_t)i % 50);
	assert_int_equal(c.built, 1);
}

static void test_build_cached(void **state)
{
	static const uint16_t vlans[] = { 0, 1, 4095 };
	static const size_t plens[] = { MROC_HDR_LEN, 61, 1024, MAX_PLEN };
	static struct frame_tmpls c;
	uint64_t built;

	(void)state;
	/* 200 source ports on 64 slots: every slot is rebuilt for another tx on the way. */
	for (int round = 0; round < 2; round++)
	for (uint16_t sport = 20000; sport < 20200; sport++)
	for (uint8_t ecn = 0; ecn < 4; ecn++) {
		struct frame_tx tx = mktx(AF_INET, vlans[sport % 3], ecn);

		tx.udp_csum = false;
		tx.icrc = true;
		tx.sport = sport;
		tx.dscp = (uint8_t)(sport % 64);
		tx.ttl = (uint8_t)(sport % 5 * 50);
		expect_cached_same(&c, &tx, plens[(sport + ecn + round) % 4]);
	}
	/* (all but misses: the cache went to frame_build for a while, bypass below) */
	assert_true(c.built < 1600);
	memset(&c, 0, sizeof(c));
	/* The same tx again: its slot is used as it stands, no rebuild. */
	{
		struct frame_tx tx = mktx(AF_INET, 0, FRAME_ECN_ECT0);

		tx.udp_csum = false;
		tx.icrc = true;
		expect_cached_same(&c, &tx, 1024);
		built = c.built;
		for (size_t p = 0; p < 4; p++)
			expect_cached_same(&c, &tx, plens[p]);
		assert_int_equal(c.built, built);
		/* Any field changed is another tx: the next hop's MAC, the source address. */
		tx.dmac[5] ^= 1;
		expect_cached_same(&c, &tx, 1024);
		assert_int_equal(c.built, built + 1);
		tx.src = addr("10.0.0.9");
		expect_cached_same(&c, &tx, 1024);
		assert_int_equal(c.built, built + 2);
		tx.dst = addr("10.0.0.8");
		expect_cached_same(&c, &tx, 1024);
		tx.smac[0] ^= 2;
		expect_cached_same(&c, &tx, 1024);
		tx.vlan = 7;
		expect_cached_same(&c, &tx, 1024);
		tx.dscp = 9;
		expect_cached_same(&c, &tx, 1024);
		tx.ttl = 3;
		expect_cached_same(&c, &tx, 1024);
		tx.dport = 4792;
		expect_cached_same(&c, &tx, 1024);
		assert_int_equal(c.built, built + 8);
	}
	/* Not held (IPv6, a UDP checksum, no ICRC) or refused: frame_build's result. */
	for (uint8_t ecn = 0; ecn < 4; ecn++) {
		struct frame_tx tx = mktx(AF_INET6, 100, ecn);

		built = c.built;
		tx.icrc = true;
		expect_cached_same(&c, &tx, 1024);
		tx = mktx(AF_INET, 100, ecn);	/* udp_csum */
		tx.icrc = true;
		expect_cached_same(&c, &tx, 1024);
		tx.icrc = false;
		expect_cached_same(&c, &tx, 10);
		tx = mktx(AF_INET, 0, ecn);
		tx.udp_csum = false;
		tx.icrc = true;
		tx.vlan = 4096;
		expect_cached_same(&c, &tx, 1024);
		assert_int_equal(c.built, built);
		tx.vlan = 0;
		expect_cached_same(&c, &tx, MROC_HDR_LEN - 1);	/* too short for the ICRC */
		expect_cached_same(&c, &tx, 0xffff - 28 - FRAME_ICRC_LEN + 1);	/* too long */
	}
	{
		struct frame_tx tx = mktx(AF_INET, 0, 0);

		tx.udp_csum = false;
		tx.icrc = true;
		tx.dscp = 64;
		expect_cached_same(&c, &tx, 1024);
	}
}

/* ---- round trips ------------------------------------------------------------------ */

static void test_round_trips(void **state)
{
	static const uint16_t vlans[] = { 0, 1, 100, 4095 };
	static const size_t plens[] = { 0, 1, 7, 64, 1001, MAX_PLEN };
	struct frame_rx rx;
	struct built b;

	(void)state;
	for (int fam = 0; fam < 2; fam++)
	for (size_t v = 0; v < ARRAY_SIZE(vlans); v++)
	for (uint8_t ecn = 0; ecn < 4; ecn++)
	for (size_t p = 0; p < ARRAY_SIZE(plens); p++)
	for (int icrc = 0; icrc < 2; icrc++) {
		struct frame_tx tx = mktx(fam ? AF_INET6 : AF_INET, vlans[v], ecn);
		size_t hlen = 14 + (vlans[v] ? 4 : 0) + (fam ? 40 : 20) + 8;

		if (icrc && plens[p] < MROC_HDR_LEN)
			continue;
		/* Either covers an IPv4 packet: the ICRC alone, or the UDP checksum. */
		tx.udp_csum = !icrc;
		tx.icrc = icrc;
		tx.sport = (uint16_t)(1000 + p);
		tx.dport = (uint16_t)(65535 - v);
		tx.dscp = (uint8_t)(p * 5);
		build(&b, &tx, plens[p]);
		assert_int_equal(b.len, hlen + plens[p] + (icrc ? FRAME_ICRC_LEN : 0));
		assert_ptr_equal(b.frame + hlen, b.buf + FRAME_HEADROOM);
		expect_ok(b.frame, b.len, &rx);
		assert_ptr_equal(rx.payload, b.frame + hlen);
		assert_int_equal(rx.payload_len, plens[p]);
		assert_true(addr_eq(&rx.src, &tx.src));
		assert_true(addr_eq(&rx.dst, &tx.dst));
		assert_int_equal(rx.sport, tx.sport);
		assert_int_equal(rx.dport, tx.dport);
		assert_int_equal(rx.ecn, ecn);
		assert_int_equal(rx.vlan, vlans[v]);
		assert_memory_equal(rx.smac, mac_a, 6);
		/* Ethernet padding after the IP packet is ignored */
		b.frame[b.len] = 0;
		expect_ok(b.frame, b.len + 1, &rx);
		assert_int_equal(rx.payload_len, plens[p]);
	}
}

static void test_parse_captured(void **state)
{
	struct frame_rx rx;

	(void)state;
	expect_ok(cap_full4, sizeof(cap_full4), &rx);
	assert_int_equal(rx.payload_len, 15);
	assert_ptr_equal(rx.payload, cap_full4 + 42);
	assert_true(addr_eq(&rx.src, &(struct mroc_addr){ .family = AF_INET,
							  .bytes = { 10, 0, 0, 1 } }));
	assert_true(addr_eq(&rx.dst, &(struct mroc_addr){ .family = AF_INET,
							  .bytes = { 10, 0, 0, 2 } }));
	assert_int_equal(rx.sport, 40000);
	assert_int_equal(rx.dport, 4791);
	assert_int_equal(rx.ecn, FRAME_ECN_ECT0);
	assert_memory_equal(rx.smac, mac_a, 6);

	expect_ok(cap_full6, sizeof(cap_full6), &rx);
	assert_int_equal(rx.payload_len, 14);
	assert_ptr_equal(rx.payload, cap_full6 + 62);
	assert_int_equal(rx.sport, 40001);
	assert_int_equal(rx.ecn, FRAME_ECN_ECT1);
	assert_int_equal(rx.src.family, AF_INET6);
}

/* ---- CHECKSUM_PARTIAL ------------------------------------------------------------- */

/*
 * Kernel sockets on veth leave the folded pseudo-header sum in the UDP
 * checksum field.  frame_parse accepts that value (documented in frame.c)
 * and nothing else that is not a correct checksum.
 */
static void test_checksum_partial(void **state)
{
	const uint8_t *caps[] = { cap_partial4, cap_partial6 };
	const size_t lens[] = { sizeof(cap_partial4), sizeof(cap_partial6) };
	struct frame_rx rx;

	(void)state;
	for (int i = 0; i < 2; i++) {
		uint8_t f[80];
		size_t l4 = l4_off(caps[i]);

		/* the captured field is exactly the pseudo-header sum */
		assert_int_equal(get16(caps[i] + l4 + 6), ref_fold(ref_pseudo(caps[i])));
		expect_ok(caps[i], lens[i], &rx);
		assert_int_equal(rx.payload_len, lens[i] - l4 - 8);
		/* one off is refused */
		memcpy(f, caps[i], lens[i]);
		set16(f + l4 + 6, (uint16_t)(get16(f + l4 + 6) + 1));
		expect_err(f, lens[i], FRAME_ERR_UDP);
	}
	/* our own frames with the partial value put in */
	for (int fam = 0; fam < 2; fam++) {
		struct frame_tx tx = mktx(fam ? AF_INET6 : AF_INET, 7, 0);
		struct built b;
		size_t l4;

		build(&b, &tx, 333);
		l4 = l4_off(b.frame);
		set16(b.frame + l4 + 6, ref_fold(ref_pseudo(b.frame)));
		expect_ok(b.frame, b.len, &rx);
		b.frame[b.len - 1] ^= 1;		/* the data is not covered */
		expect_ok(b.frame, b.len, &rx);
	}
}

/* ---- refusals --------------------------------------------------------------------- */

static void test_every_truncation(void **state)
{
	static const uint16_t vlans[] = { 0, 9 };
	struct built b;

	(void)state;
	for (int fam = 0; fam < 2; fam++) {
		for (size_t v = 0; v < 2; v++) {
			struct frame_tx tx = mktx(fam ? AF_INET6 : AF_INET, vlans[v], 0);

			build(&b, &tx, 37);
			for (size_t len = 0; len < b.len; len++)
				expect_err(b.frame, len, FRAME_ERR_SHORT);
		}
	}
	for (size_t len = 0; len < sizeof(cap_full4); len++)
		expect_err(cap_full4, len, FRAME_ERR_SHORT);
	for (size_t len = 0; len < sizeof(cap_full6); len++)
		expect_err(cap_full6, len, FRAME_ERR_SHORT);
}

static void test_bad_ethernet(void **state)
{
	struct frame_tx tx = mktx(AF_INET, 0, 0);
	struct built b;
	uint8_t f[BUF_LEN];

	(void)state;
	build(&b, &tx, 20);
	memcpy(f, b.frame, b.len);
	set16(f + 12, 0x0806);				/* ARP */
	expect_err(f, b.len, FRAME_ERR_ETHERTYPE);
	set16(f + 12, 0x88a8);				/* 802.1ad outer tag */
	expect_err(f, b.len, FRAME_ERR_ETHERTYPE);

	tx.vlan = 5;
	build(&b, &tx, 20);
	memcpy(f, b.frame, b.len);
	set16(f + 16, 0x8100);				/* a second tag */
	expect_err(f, b.len, FRAME_ERR_ETHERTYPE);
	set16(f + 16, 0x86dd);				/* says IPv6, holds IPv4 */
	expect_err(f, b.len, FRAME_ERR_IP);
}

static void test_bad_ipv4(void **state)
{
	struct frame_tx tx = mktx(AF_INET, 0, 0);
	struct frame_rx rx;
	struct built b;
	uint8_t f[BUF_LEN + 8];
	uint8_t *ip;
	size_t len;

	(void)state;
	build(&b, &tx, 30);
	len = b.len;
#define RESET() (memcpy(f, b.frame, len), ip = f + 14)

	RESET();
	ip[0] = 0x44;					/* IHL 4 */
	fix_ip_csum(f);
	expect_err(f, len, FRAME_ERR_IP);
	RESET();
	ip[0] = 0x55;					/* version 5 */
	fix_ip_csum(f);
	expect_err(f, len, FRAME_ERR_IP);
	RESET();
	ip[0] = 0x4f;					/* IHL 60 bytes: past the data */
	set16(ip + 2, 60);
	expect_err(f, 14 + 50, FRAME_ERR_SHORT);
	RESET();
	set16(ip + 2, 19);				/* total length < IHL */
	fix_ip_csum(f);
	expect_err(f, len, FRAME_ERR_IP);
	RESET();
	set16(ip + 2, (uint16_t)(len - 14 + 1));		/* total length > frame */
	fix_ip_csum(f);
	expect_err(f, len, FRAME_ERR_SHORT);
	RESET();
	set16(ip + 2, (uint16_t)(len - 14 - 1));		/* total length < frame: UDP len mismatch */
	fix_ip_csum(f);
	expect_err(f, len, FRAME_ERR_UDP);
	RESET();
	set16(ip + 6, 0x6000);				/* DF + MF */
	fix_ip_csum(f);
	expect_err(f, len, FRAME_ERR_IP);
	RESET();
	set16(ip + 6, 0x4001);				/* fragment offset 8 */
	fix_ip_csum(f);
	expect_err(f, len, FRAME_ERR_IP);
	RESET();
	set16(ip + 6, 0x0000);				/* no DF: still fine */
	fix_ip_csum(f);
	expect_ok(f, len, &rx);
	RESET();
	ip[10] ^= 0x01;					/* header checksum */
	expect_err(f, len, FRAME_ERR_IP);
	RESET();
	ip[8] = 1;					/* TTL changed, checksum not */
	expect_err(f, len, FRAME_ERR_IP);
	RESET();
	ip[9] = 6;					/* TCP */
	fix_ip_csum(f);
	expect_err(f, len, FRAME_ERR_NOT_UDP);

	/* IHL 6: a 4-byte option (NOP x4) is skipped */
	memcpy(f, b.frame, 34);
	memset(f + 34, 1, 4);
	memcpy(f + 38, b.frame + 34, len - 34);
	ip = f + 14;
	ip[0] = 0x46;
	set16(ip + 2, (uint16_t)(len - 14 + 4));
	fix_ip_csum(f);
	expect_ok(f, len + 4, &rx);
	assert_int_equal(rx.payload_len, 30);
	assert_ptr_equal(rx.payload, f + 14 + 24 + 8);
	assert_int_equal(rx.payload[29], (uint8_t)(29 * 7 + 3));
	assert_int_equal(rx.sport, 40000);
#undef RESET
}

static void test_bad_ipv6(void **state)
{
	struct frame_tx tx = mktx(AF_INET6, 0, 0);
	struct built b;
	uint8_t f[BUF_LEN];
	uint8_t *ip;
	size_t len;

	(void)state;
	build(&b, &tx, 30);
	len = b.len;
#define RESET() (memcpy(f, b.frame, len), ip = f + 14)

	RESET();
	ip[0] = (ip[0] & 0x0f) | 0x40;			/* version 4 */
	expect_err(f, len, FRAME_ERR_IP);
	RESET();
	set16(ip + 4, 0);				/* payload length 0 (jumbogram) */
	expect_err(f, len, FRAME_ERR_IP);
	RESET();
	set16(ip + 4, 39);				/* payload length > frame */
	expect_err(f, len, FRAME_ERR_SHORT);
	RESET();
	set16(ip + 4, 37);				/* payload length < UDP length */
	expect_err(f, len, FRAME_ERR_UDP);
	RESET();
	ip[6] = 44;					/* fragment header */
	expect_err(f, len, FRAME_ERR_IP);
	RESET();
	ip[6] = 6;					/* TCP */
	expect_err(f, len, FRAME_ERR_NOT_UDP);
	RESET();
	ip[6] = 0;					/* hop-by-hop options: not supported */
	expect_err(f, len, FRAME_ERR_NOT_UDP);
#undef RESET
}

static void test_bad_udp(void **state)
{
	uint8_t f[BUF_LEN];

	(void)state;
	for (int fam = 0; fam < 2; fam++) {
		struct frame_tx tx = mktx(fam ? AF_INET6 : AF_INET, 0, 0);
		struct built b;
		uint8_t *u;

		build(&b, &tx, 30);
#define RESET() (memcpy(f, b.frame, b.len), u = f + l4_off(f))
		RESET();
		set16(u + 4, 39);			/* UDP length > IP's */
		expect_err(f, b.len, FRAME_ERR_UDP);
		RESET();
		set16(u + 4, 37);			/* UDP length < IP's */
		fix_udp_csum(f);
		expect_err(f, b.len, FRAME_ERR_UDP);
		RESET();
		set16(u + 4, 7);			/* shorter than its header */
		expect_err(f, b.len, FRAME_ERR_UDP);
		RESET();
		f[b.len - 1] ^= 0x40;			/* payload bit flip */
		expect_err(f, b.len, FRAME_ERR_UDP);
		RESET();
		u[7] ^= 0x01;				/* checksum bit flip */
		expect_err(f, b.len, FRAME_ERR_UDP);
		RESET();
		f[l3_off(f) + (fam ? 8 : 12)] ^= 1;	/* source address: pseudo-header */
		if (!fam)
			fix_ip_csum(f);
		expect_err(f, b.len, FRAME_ERR_UDP);
		RESET();
		u[0] ^= 0x80;				/* source port */
		expect_err(f, b.len, FRAME_ERR_UDP);
		RESET();
		set16(u + 6, 0);			/* no checksum and no ICRC: refused */
		expect_err(f, b.len, FRAME_ERR_UDP);
#undef RESET
	}
	/* IPv4 without a checksum and an IP header shorter than UDP's */
	{
		struct frame_tx tx = mktx(AF_INET, 0, 0);
		struct built b;

		tx.udp_csum = false;
		build(&b, &tx, 0);
		memcpy(f, b.frame, b.len);
		set16(f + 16, 20 + 7);
		fix_ip_csum(f);
		expect_err(f, b.len - 1, FRAME_ERR_UDP);
	}
}

/* ---- ICRC ---------------------------------------------------------------------- */

/* CRC32C a bit at a time (reflected polynomial 0x82f63b78), the reference. */
static uint32_t ref_crc32c(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? crc >> 1 ^ 0x82f63b78 : crc >> 1;
	}
	return crc;
}

/* The trailer is CRC32C (RFC 3720 check value) of the ports, big-endian, and the packet. */
static void test_icrc_value(void **state)
{
	uint8_t pkt[64] = { 1, 0x10, 0, 0 }, ports[4] = { 0x9c, 0x40, 0x12, 0xb9 };
	uint32_t want;

	(void)state;
	assert_int_equal(~ref_crc32c(~0u, (const uint8_t *)"123456789", 9), 0xe3069283);
	for (size_t i = 4; i < 40; i++)
		pkt[i] = (uint8_t)(i * 13);
	assert_int_equal(frame_icrc_seal(pkt, 40, 40000, 4793), 44);
	assert_int_equal(pkt[2], MROC_F_ICRC);
	want = ~ref_crc32c(ref_crc32c(~0u, ports, 4), pkt, 40);
	assert_int_equal(get16(pkt + 40), want >> 16);
	assert_int_equal(get16(pkt + 42), want & 0xffff);
	assert_int_equal(frame_icrc_open(pkt, 44, 40000, 4793), 40);
	assert_int_equal(pkt[2], 0);
	/* no flag: nothing to open; too short to seal or open */
	assert_int_equal(frame_icrc_open(pkt, 44, 40000, 4793), 0);
	assert_int_equal(frame_icrc_seal(pkt, MROC_HDR_LEN - 1, 1, 2), -EINVAL);
	pkt[2] = MROC_F_ICRC;
	assert_int_equal(frame_icrc_open(pkt, MROC_HDR_LEN + 3, 1, 2), -EBADMSG);
}

/*
 * Any bit flipped in the ports, the MetaRoCE packet or the trailer is caught
 * (FRAME_ERR_ICRC); over IPv4 the UDP checksum is then not looked at, over
 * IPv6 it is checked as well.
 */
static void test_icrc_catches_corruption(void **state)
{
	uint8_t f[BUF_LEN + 16];
	struct frame_rx rx;
	struct built b;

	(void)state;
	for (int fam = 0; fam < 2; fam++) {
		struct frame_tx tx = mktx(fam ? AF_INET6 : AF_INET, 0, FRAME_ECN_ECT0);
		size_t l4;

		tx.udp_csum = false;
		tx.icrc = true;
		build(&b, &tx, 1000);
		l4 = l4_off(b.frame);
		assert_int_equal(get16(b.frame + l4 + 6), fam ? ref_udp_csum(b.frame) : 0);
		/* parsed in place: the flag is cleared, the engine sees what was sealed */
		memcpy(f, b.frame, b.len);
		assert_int_equal(frame_parse(f, b.len, &rx, NULL), 0);
		assert_int_equal(rx.payload_len, 1000);
		assert_ptr_equal(rx.payload, f + l4 + 8);
		for (size_t i = 0; i < 1000; i++)
			assert_int_equal(rx.payload[i], (uint8_t)(i * 7 + 3));
		for (size_t bit = 0; bit < (b.len - l4) * 8; bit += 7) {
			size_t at = l4 + bit / 8;

			if (at >= l4 + 4 && at < l4 + 8)
				continue;		/* UDP length and checksum: not the ICRC's */
			memcpy(f, b.frame, b.len);
			f[at] ^= (uint8_t)(1 << bit % 8);
			if (fam)
				fix_udp_csum(f);	/* so that only the ICRC can catch it */
			/* the flag itself: then IPv4 has nothing covering it, IPv6 is fine */
			if (at == l4 + 8 + 2 && bit % 8 == 7 && fam)
				expect_ok(f, b.len, &rx);
			else if (at == l4 + 8 + 2 && bit % 8 == 7)
				expect_err(f, b.len, FRAME_ERR_UDP);
			else
				expect_err(f, b.len, FRAME_ERR_ICRC);
		}
		/* IPv4: a wrong UDP checksum beside a good ICRC is not looked at */
		memcpy(f, b.frame, b.len);
		set16(f + l4 + 6, 0x1234);
		if (fam)
			expect_err(f, b.len, FRAME_ERR_UDP);
		else
			expect_ok(f, b.len, &rx);
	}
}

static void test_err_names(void **state)
{
	(void)state;
	assert_string_equal(frame_err_name(FRAME_OK), "ok");
	assert_string_equal(frame_err_name(FRAME_ERR_SHORT), "short");
	assert_string_equal(frame_err_name(FRAME_ERR_UDP), "udp");
	assert_string_equal(frame_err_name(FRAME_ERR__COUNT), "?");
	for (int e = 0; e < FRAME_ERR__COUNT; e++)
		assert_non_null(frame_err_name(e));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csum_rfc1071_example),
		cmocka_unit_test(test_csum_matches_reference),
		cmocka_unit_test(test_ipv4_header_known_vector),
		cmocka_unit_test(test_build_matches_capture_v4),
		cmocka_unit_test(test_build_matches_capture_v6),
		cmocka_unit_test(test_udp_csum_pseudo_header),
		cmocka_unit_test(test_udp_csum_zero_becomes_ffff),
		cmocka_unit_test(test_ipv6_flow_label),
		cmocka_unit_test(test_build_fields),
		cmocka_unit_test(test_build_rejects),
		cmocka_unit_test(test_build_cached),
		cmocka_unit_test(test_build_cached_bypass),
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_parse_captured),
		cmocka_unit_test(test_checksum_partial),
		cmocka_unit_test(test_every_truncation),
		cmocka_unit_test(test_bad_ethernet),
		cmocka_unit_test(test_bad_ipv4),
		cmocka_unit_test(test_bad_ipv6),
		cmocka_unit_test(test_bad_udp),
		cmocka_unit_test(test_icrc_value),
		cmocka_unit_test(test_icrc_catches_corruption),
		cmocka_unit_test(test_err_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
