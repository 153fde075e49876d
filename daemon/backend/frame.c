// SPDX-License-Identifier: MIT
/*
 * Ethernet / 802.1Q / IPv4 or IPv6 / UDP headers: build in front of a
 * payload, parse and check a received frame.  The data path calls both for
 * every packet, so nothing here allocates, locks or makes a system call.
 *
 * Byte offsets live in this file only.  Multi-byte fields are written and
 * read a byte at a time (frames are not aligned: an untagged IPv4 header
 * starts 38 bytes into the buffer).
 *
 * Integrity: the ICRC.  Over IPv4 mrocd sends UDP checksum 0 and ends every
 * MetaRoCE packet with a CRC32C of the ports and the packet (docs/PROTOCOL.md
 * 1.1), as RoCEv2 does with its ICRC: a CRC instruction covers a frame about
 * three times faster than the Internet checksum in software (isa-l picks
 * SSE4.2/PCLMUL or ARMv8 CRC at run time, a table without them).  Over IPv6
 * the UDP checksum stays, as RFC 8200 wants.  The receiver checks whichever
 * the packet has; an IPv4 packet with neither is refused.
 *
 * UDP checksums on receive.  A frame sent by a kernel socket on veth (and
 * on any device with TX checksum offload, before the NIC fills it in)
 * carries CHECKSUM_PARTIAL: the UDP checksum field holds only the folded,
 * uncomplemented pseudo-header sum.  AF_XDP sees such frames exactly like
 * that when the sender is a local namespace (e.g. a peer on the UDP
 * backend).  frame_parse therefore accepts a checksum field that equals
 * the pseudo-header sum, besides a correct full checksum.  The cost: one
 * corrupted frame in 65536 whose checksum happens to equal its pseudo-
 * header sum slips through; the engine's own sequence checks still apply,
 * and the kernel makes the same bet for CHECKSUM_PARTIAL skbs.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include <isa-l/crc.h>

#include "frame.h"
#include "wire.h"

#define ETH_HLEN_	14
#define VLAN_HLEN_	4
#define IPV4_HLEN	20
#define IPV6_HLEN	40
#define UDP_HLEN	8

#define ETHERTYPE_IPV4	0x0800
#define ETHERTYPE_IPV6	0x86dd
#define ETHERTYPE_VLAN	0x8100
#define IPPROTO_UDP_	17
#define IPV6_NH_FRAG	44
#define IPV4_DF		0x4000
#define IPV4_MF		0x2000
#define IPV4_FRAG_OFF	0x1fff
#define DEFAULT_TTL	64

static_assert(FRAME_HEADROOM == ETH_HLEN_ + VLAN_HLEN_ + IPV6_HLEN + UDP_HLEN,
	      "headroom fits the largest header stack");
static_assert(ETH_ALEN_ == 6, "Ethernet addresses are 6 bytes");

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* ---- checksums -------------------------------------------------------------- */

/* A 64-bit one's-complement sum of native-endian words folded to 16 bits, as big-endian words sum. */
static inline uint16_t fold_be(uint64_t acc)
{
	acc = (acc & 0xffffffff) + (acc >> 32);
	acc = (acc & 0xffffffff) + (acc >> 32);
	acc = (acc & 0xffff) + (acc >> 16);
	acc = (acc & 0xffff) + (acc >> 16);
	acc = (acc & 0xffff) + (acc >> 16);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return (uint16_t)(acc >> 8 | acc << 8);
#else
	return (uint16_t)acc;
#endif
}

/*
 * One's-complement sum of data as native-endian 16-bit words (RFC 1071 lets
 * us add 64-bit words and fold), an odd last byte padded with zero, folded
 * to 16 bits and returned as the sum of big-endian words.
 */
static uint16_t csum_block(const uint8_t *p, size_t len)
{
	uint64_t acc = 0, w;
	uint32_t w4;
	uint16_t w2;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		acc += w;
		acc += acc < w;			/* end-around carry */
	}
	if (len >= 4) {
		memcpy(&w4, p, 4);
		acc += w4;
		acc += acc < w4;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		memcpy(&w2, p, 2);
		acc += w2;
		acc += acc < w2;
		p += 2;
		len -= 2;
	}
	if (len) {
		uint8_t last[2] = { p[0], 0 };

		memcpy(&w2, last, 2);
		acc += w2;
		acc += acc < w2;
	}
	return fold_be(acc);
}

static inline uint32_t fold16(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	return (sum & 0xffff) + (sum >> 16);
}

/*
 * Adds data (big-endian 16-bit words) to a running sum and returns the new
 * sum, at most 0xffff.  Chained calls must give every chunk but the last an
 * even length.
 */
uint32_t csum_add(uint32_t sum, const void *data, size_t len)
{
	return fold16(fold16(sum) + csum_block(data, len));
}

/* The checksum to store (host order): the complement of the folded sum. */
uint16_t csum_fold(uint32_t sum)
{
	return (uint16_t)~fold16(sum);
}

/*
 * csum_add(0, p, 20) for an IPv4 header without options, which every frame
 * built or parsed has: five 32-bit words, no loop (issue #22: twice a packet).
 */
static inline uint32_t ipv4_hdr_sum(const uint8_t *p)
{
	uint32_t w[5];
	uint64_t acc;

	memcpy(w, p, sizeof(w));
	acc = (uint64_t)w[0] + w[1] + w[2] + w[3] + w[4];
	return fold_be(acc);
}

/* Pseudo-header sum of RFC 768 / RFC 8200 section 8.1 for UDP. */
static uint32_t pseudo_sum(const struct mroc_addr *src, const struct mroc_addr *dst,
			   uint32_t udp_len)
{
	size_t alen = addr_len(src);
	uint32_t sum;

	sum = csum_add(0, src->bytes, alen);
	sum = csum_add(sum, dst->bytes, alen);
	return sum + IPPROTO_UDP_ + (udp_len >> 16) + (udp_len & 0xffff);
}

/* ---- ICRC ---------------------------------------------------------------------- */

/* CRC32C (init and final XOR all ones) of the ports, big-endian, then the packet. */
static uint32_t icrc(const uint8_t *pkt, size_t len, uint16_t sport, uint16_t dport)
{
	uint8_t ports[4] = { sport >> 8, (uint8_t)sport, dport >> 8, (uint8_t)dport };
	uint32_t c = crc32_iscsi(ports, sizeof(ports), ~0u);

	/* isa-l takes no const, reads only; lengths are below 64 KiB. */
	return ~crc32_iscsi((uint8_t *)pkt, (int)len, c);
}

int frame_icrc_seal(uint8_t *pkt, size_t len, uint16_t sport, uint16_t dport)
{
	uint32_t c;

	if (len < MROC_HDR_LEN || len > 0xffff)
		return -EINVAL;
	mroc_pkt_set_flag(pkt, MROC_F_ICRC);
	c = icrc(pkt, len, sport, dport);
	put16(pkt + len, (uint16_t)(c >> 16));
	put16(pkt + len + 2, (uint16_t)c);
	return (int)(len + FRAME_ICRC_LEN);
}

int frame_icrc_open(uint8_t *pkt, size_t len, uint16_t sport, uint16_t dport)
{
	size_t n = len - FRAME_ICRC_LEN;

	if (!mroc_pkt_has_flag(pkt, len, MROC_F_ICRC))
		return 0;
	if (len < MROC_HDR_LEN + FRAME_ICRC_LEN || len > 0xffff ||
	    icrc(pkt, n, sport, dport) != ((uint32_t)get16(pkt + n) << 16 | get16(pkt + n + 2)))
		return -EBADMSG;
	mroc_pkt_clear_flag(pkt, MROC_F_ICRC);
	return (int)n;
}

/* ---- build -------------------------------------------------------------------- */

/*
 * IPv6 flow label for a UDP port pair: a multiplicative hash, never 0, so
 * that routers hashing on the flow label (RFC 6438) split paths (source
 * ports) the same way routers hashing on ports do.
 */
static uint32_t flow_label(uint16_t sport, uint16_t dport)
{
	uint32_t h = ((uint32_t)sport << 16 | dport) * 0x9e3779b1u;

	h >>= 12;
	return h ? h : 1;
}

static uint8_t *put_eth(uint8_t *p, const struct frame_tx *tx, uint16_t ethertype)
{
	memcpy(p, tx->dmac, ETH_ALEN_);
	memcpy(p + 6, tx->smac, ETH_ALEN_);
	p += 12;
	if (tx->vlan) {
		put16(p, ETHERTYPE_VLAN);
		put16(p + 2, tx->vlan);		/* PCP 0, DEI 0 */
		p += VLAN_HLEN_;
	}
	put16(p, ethertype);
	return p + 2;
}

static void put_ipv4(uint8_t *p, const struct frame_tx *tx, uint32_t udp_len)
{
	p[0] = 0x45;				/* version 4, IHL 5 */
	p[1] = (uint8_t)(tx->dscp << 2 | tx->ecn);
	put16(p + 2, (uint16_t)(IPV4_HLEN + udp_len));
	put16(p + 4, 0);			/* id: DF packets need none (RFC 6864) */
	put16(p + 6, IPV4_DF);
	p[8] = tx->ttl ? tx->ttl : DEFAULT_TTL;
	p[9] = IPPROTO_UDP_;
	put16(p + 10, 0);
	memcpy(p + 12, &tx->src.v4, 4);
	memcpy(p + 16, &tx->dst.v4, 4);
	put16(p + 10, csum_fold(ipv4_hdr_sum(p)));
}

static void put_ipv6(uint8_t *p, const struct frame_tx *tx, uint32_t udp_len)
{
	uint8_t tclass = (uint8_t)(tx->dscp << 2 | tx->ecn);
	uint32_t fl = flow_label(tx->sport, tx->dport);

	p[0] = 0x60 | tclass >> 4;
	p[1] = (uint8_t)(tclass << 4 | fl >> 16);
	put16(p + 2, (uint16_t)fl);
	put16(p + 4, (uint16_t)udp_len);
	p[6] = IPPROTO_UDP_;
	p[7] = tx->ttl ? tx->ttl : DEFAULT_TTL;
	memcpy(p + 8, &tx->src.v6, 16);
	memcpy(p + 24, &tx->dst.v6, 16);
}

int frame_build(uint8_t *buf, size_t plen, const struct frame_tx *tx)
{
	bool v6 = tx->src.family == AF_INET6;
	size_t hlen = ETH_HLEN_ + (tx->vlan ? VLAN_HLEN_ : 0) + (v6 ? IPV6_HLEN : IPV4_HLEN) + UDP_HLEN;
	uint8_t *frame = buf + FRAME_HEADROOM - hlen, *ip, *udp;
	uint32_t udp_len;

	if ((tx->src.family != AF_INET && !v6) || tx->dst.family != tx->src.family ||
	    tx->vlan > 0xfff || tx->ecn > FRAME_ECN_CE || tx->dscp > 63 ||
	    plen + (tx->icrc ? FRAME_ICRC_LEN : 0) > 0xffff - UDP_HLEN - (v6 ? 0 : IPV4_HLEN) ||
	    (tx->icrc && plen < MROC_HDR_LEN))
		return -EINVAL;
	if (tx->icrc)
		plen = (size_t)frame_icrc_seal(buf + FRAME_HEADROOM, plen, tx->sport, tx->dport);
	udp_len = (uint32_t)(UDP_HLEN + plen);

	ip = put_eth(frame, tx, v6 ? ETHERTYPE_IPV6 : ETHERTYPE_IPV4);
	if (v6)
		put_ipv6(ip, tx, udp_len);
	else
		put_ipv4(ip, tx, udp_len);

	udp = buf + FRAME_HEADROOM - UDP_HLEN;
	put16(udp, tx->sport);
	put16(udp + 2, tx->dport);
	put16(udp + 4, (uint16_t)udp_len);
	put16(udp + 6, 0);
	if (v6 || tx->udp_csum) {
		uint32_t sum = pseudo_sum(&tx->src, &tx->dst, udp_len);
		uint16_t c;

		sum = csum_add(sum, udp, UDP_HLEN);
		c = csum_fold(csum_add(sum, buf + FRAME_HEADROOM, plen));
		put16(udp + 6, c ? c : 0xffff);	/* 0 means "no checksum" */
	}
	return (int)(frame - buf);
}

/* ---- build from a template (frame_build_cached) ------------------------------------- */

static inline uint64_t load64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t load32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * Only IPv4 frame_tx are held (tmpl_set), so the addresses compare as 4
 * bytes; word loads, not memcmp (a library call per field, as many
 * instructions as the template saved).
 */
static bool tx_same(const struct frame_tx *a, const struct frame_tx *b)
{
	static_assert(offsetof(struct frame_tx, smac) == ETH_ALEN_, "the MACs are 12 bytes in a row");
	return load64(a->dmac) == load64(b->dmac) && load32(a->dmac + 8) == load32(b->dmac + 8) &&
	       load32(&a->src.v4) == load32(&b->src.v4) && load32(&a->dst.v4) == load32(&b->dst.v4) &&
	       a->src.family == b->src.family && a->dst.family == b->dst.family &&
	       a->sport == b->sport && a->dport == b->dport && a->ecn == b->ecn &&
	       a->vlan == b->vlan && a->dscp == b->dscp && a->ttl == b->ttl &&
	       a->udp_csum == b->udp_csum && a->icrc == b->icrc;
}

/* The headers for tx with lengths and checksums 0; -EOPNOTSUPP for what is not held. */
static int tmpl_set(struct frame_tmpl *t, const struct frame_tx *tx)
{
	size_t hlen = ETH_HLEN_ + (tx->vlan ? VLAN_HLEN_ : 0) + IPV4_HLEN + UDP_HLEN;
	uint8_t *udp = t->hdr + FRAME_HEADROOM - UDP_HLEN, *ip;

	t->used = false;
	if (tx->src.family != AF_INET || tx->dst.family != AF_INET || !tx->icrc ||
	    tx->udp_csum || tx->vlan > 0xfff || tx->ecn > FRAME_ECN_CE || tx->dscp > 63)
		return -EOPNOTSUPP;
	memset(t->hdr, 0, sizeof(t->hdr));
	ip = put_eth(t->hdr + FRAME_HEADROOM - hlen, tx, ETHERTYPE_IPV4);
	put_ipv4(ip, tx, 0);
	put16(ip + 2, 0);
	put16(ip + 10, 0);
	t->sum0 = ipv4_hdr_sum(ip);
	put16(udp, tx->sport);
	put16(udp + 2, tx->dport);
	t->tx = *tx;
	t->hlen = (uint8_t)hlen;
	t->used = true;
	return 0;
}

/* frame_build_cached past its bypass: the slot for tx, or a miss (counted for the window). */
static __attribute__((noinline)) int build_cached(struct frame_tmpls *c, uint8_t *buf,
						  size_t plen, const struct frame_tx *tx)
{
	/* Fibonacci hashing: a path's data (ECT) and ACKs (not ECT) get slots of their own. */
	struct frame_tmpl *t = &c->t[((uint32_t)tx->sport << 2 | (tx->ecn & 3)) * 0x9e3779b1u >>
				     (32 - FRAME_TMPLS_BITS)];
	uint8_t *ip = buf + FRAME_HEADROOM - UDP_HLEN - IPV4_HLEN, *udp = buf + FRAME_HEADROOM - UDP_HLEN;
	uint32_t udp_len;

	if (!t->used || !tx_same(&t->tx, tx)) {
		if (tmpl_set(t, tx))
			return frame_build(buf, plen, tx);
		c->built++;
		c->misses++;
	}
	if (plen < MROC_HDR_LEN || plen + FRAME_ICRC_LEN > 0xffff - UDP_HLEN - IPV4_HLEN)
		return -EINVAL;
	udp_len = (uint32_t)(UDP_HLEN + frame_icrc_seal(buf + FRAME_HEADROOM, plen, tx->sport,
							 tx->dport));
	memcpy(buf, t->hdr, FRAME_HEADROOM);
	put16(ip + 2, (uint16_t)(IPV4_HLEN + udp_len));
	put16(ip + 10, csum_fold(t->sum0 + IPV4_HLEN + udp_len));
	put16(udp + 4, (uint16_t)udp_len);
	return FRAME_HEADROOM - t->hlen;
}

int frame_build_cached(struct frame_tmpls *c, uint8_t *buf, size_t plen, const struct frame_tx *tx)
{
	if (c->bypass) {
		c->bypass--;
		return frame_build(buf, plen, tx);
	}
	if (++c->calls == FRAME_TMPL_WINDOW) {
		if (c->misses > FRAME_TMPL_WINDOW / 4)
			c->bypass = FRAME_TMPL_BYPASS;
		c->calls = 0;
		c->misses = 0;
	}
	return build_cached(c, buf, plen, tx);
}

/* ---- parse --------------------------------------------------------------------- */

static int bad(enum frame_err *why, enum frame_err e)
{
	if (why)
		*why = e;
	return -EBADMSG;
}

static void get_addr(struct mroc_addr *a, int family, const uint8_t *p)
{
	memset(a, 0, sizeof(*a));
	a->family = family;
	memcpy(a->bytes, p, family == AF_INET ? 4 : 16);
}

/*
 * IPv4 header at p with avail bytes after it in the frame.  On success *l4
 * and *l4_len give the UDP datagram as the IP header bounds it.
 */
static enum frame_err parse_ipv4(uint8_t *p, size_t avail, struct frame_rx *rx,
				 uint8_t **l4, size_t *l4_len)
{
	size_t ihl, tot;

	if (avail < IPV4_HLEN)
		return FRAME_ERR_SHORT;
	if (p[0] >> 4 != 4 || (p[0] & 0xf) < 5)
		return FRAME_ERR_IP;
	ihl = (size_t)(p[0] & 0xf) * 4;
	tot = get16(p + 2);
	if (avail < ihl)
		return FRAME_ERR_SHORT;
	if (tot < ihl)
		return FRAME_ERR_IP;
	if (avail < tot)			/* Ethernet padding may follow tot */
		return FRAME_ERR_SHORT;
	if (get16(p + 6) & (IPV4_MF | IPV4_FRAG_OFF))
		return FRAME_ERR_IP;
	if (csum_fold(ihl == IPV4_HLEN ? ipv4_hdr_sum(p) : csum_add(0, p, ihl)) != 0)
		return FRAME_ERR_IP;
	if (p[9] != IPPROTO_UDP_)
		return FRAME_ERR_NOT_UDP;
	rx->ecn = p[1] & 3;
	get_addr(&rx->src, AF_INET, p + 12);
	get_addr(&rx->dst, AF_INET, p + 16);
	*l4 = p + ihl;
	*l4_len = tot - ihl;
	return FRAME_OK;
}

/* IPv6 without extension headers: UDP must be the next header. */
static enum frame_err parse_ipv6(uint8_t *p, size_t avail, struct frame_rx *rx,
				 uint8_t **l4, size_t *l4_len)
{
	size_t plen;

	if (avail < IPV6_HLEN)
		return FRAME_ERR_SHORT;
	if (p[0] >> 4 != 6)
		return FRAME_ERR_IP;
	plen = get16(p + 4);
	if (plen == 0)				/* jumbogram: never ours */
		return FRAME_ERR_IP;
	if (avail - IPV6_HLEN < plen)
		return FRAME_ERR_SHORT;
	if (p[6] == IPV6_NH_FRAG)
		return FRAME_ERR_IP;
	if (p[6] != IPPROTO_UDP_)
		return FRAME_ERR_NOT_UDP;
	rx->ecn = (uint8_t)(get16(p) >> 4) & 3;
	get_addr(&rx->src, AF_INET6, p + 8);
	get_addr(&rx->dst, AF_INET6, p + 24);
	*l4 = p + IPV6_HLEN;
	*l4_len = plen;
	return FRAME_OK;
}

/*
 * The UDP length must equal what the IP header gives it (stricter than
 * Linux, which trims; nothing we accept is sent that way).  Integrity: see
 * frame_parse in frame.h; 0 on IPv6 is refused (RFC 8200).
 */
static enum frame_err parse_udp(uint8_t *u, size_t len, struct frame_rx *rx)
{
	bool v6 = rx->src.family == AF_INET6;
	uint8_t *pkt = u + UDP_HLEN;
	uint16_t check;
	uint32_t sum;
	int plen;

	if (len < UDP_HLEN || get16(u + 4) != len)
		return FRAME_ERR_UDP;
	check = get16(u + 6);
	rx->sport = get16(u);
	rx->dport = get16(u + 2);
	/* Checked before the ICRC is opened: it covers the packet as sent. */
	if (v6 || (check && !mroc_pkt_has_flag(pkt, len - UDP_HLEN, MROC_F_ICRC))) {
		sum = pseudo_sum(&rx->src, &rx->dst, (uint32_t)len);
		if (!check)
			return FRAME_ERR_UDP;
		/* CHECKSUM_PARTIAL: the field holds the pseudo-header sum only. */
		if (check != fold16(sum) && csum_fold(csum_add(sum, u, len)) != 0)
			return FRAME_ERR_UDP;
	}
	plen = frame_icrc_open(pkt, len - UDP_HLEN, rx->sport, rx->dport);
	if (plen < 0)
		return FRAME_ERR_ICRC;
	if (!plen) {
		if (!check)			/* IPv4 with nothing covering it */
			return FRAME_ERR_UDP;
		plen = (int)(len - UDP_HLEN);
	}
	rx->payload = pkt;
	rx->payload_len = (uint32_t)plen;
	return FRAME_OK;
}

int frame_parse(uint8_t *frame, size_t len, struct frame_rx *rx, enum frame_err *why)
{
	uint8_t *l3, *l4;
	size_t off = ETH_HLEN_, l4_len;
	uint16_t type;
	enum frame_err e;

	if (len < ETH_HLEN_)
		return bad(why, FRAME_ERR_SHORT);
	memcpy(rx->smac, frame + 6, ETH_ALEN_);
	type = get16(frame + 12);
	rx->vlan = 0;
	if (type == ETHERTYPE_VLAN) {
		if (len < ETH_HLEN_ + VLAN_HLEN_)
			return bad(why, FRAME_ERR_SHORT);
		rx->vlan = get16(frame + 14) & 0xfff;
		type = get16(frame + 16);
		off += VLAN_HLEN_;
	}
	l3 = frame + off;
	if (type == ETHERTYPE_IPV4)
		e = parse_ipv4(l3, len - off, rx, &l4, &l4_len);
	else if (type == ETHERTYPE_IPV6)
		e = parse_ipv6(l3, len - off, rx, &l4, &l4_len);
	else
		e = FRAME_ERR_ETHERTYPE;	/* also a second (QinQ) tag */
	if (e == FRAME_OK)
		e = parse_udp(l4, l4_len, rx);
	if (e != FRAME_OK)
		return bad(why, e);
	if (why)
		*why = FRAME_OK;
	return 0;
}

const char *frame_err_name(enum frame_err e)
{
	static const char *const names[FRAME_ERR__COUNT] = {
		[FRAME_OK] = "ok",
		[FRAME_ERR_SHORT] = "short",
		[FRAME_ERR_ETHERTYPE] = "ethertype",
		[FRAME_ERR_IP] = "ip",
		[FRAME_ERR_NOT_UDP] = "not_udp",
		[FRAME_ERR_UDP] = "udp",
		[FRAME_ERR_ICRC] = "icrc",
	};

	return (unsigned)e < FRAME_ERR__COUNT ? names[e] : "?";
}
