/* SPDX-License-Identifier: MIT */
/*
 * Ethernet (+802.1Q) / IPv4 or IPv6 / UDP framing for AF_XDP, where mrocd
 * builds every header itself.  The engine writes the MetaRoCE packet at
 * FRAME_HEADROOM bytes into a buffer; frame_build() writes the headers
 * right in front of it and says where the frame starts.  frame_parse()
 * checks every length and checksum it can before the payload is trusted.
 */
#ifndef MROCD_FRAME_H
#define MROCD_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"

#define ETH_ALEN_	6
/* Largest L2-L4 header we build: Ethernet 14 + 802.1Q 4 + IPv6 40 + UDP 8. */
#define FRAME_HEADROOM	66
/*
 * The invariant CRC (docs/PROTOCOL.md 1.1): CRC32C of the UDP ports and the
 * MetaRoCE packet, stored big-endian after it, announced by MROC_F_ICRC in
 * the common header's flags.  It replaces the UDP checksum over IPv4.
 */
#define FRAME_ICRC_LEN	4

/* IP ECN field values. */
#define FRAME_ECN_NOT_ECT	0
#define FRAME_ECN_ECT1		1
#define FRAME_ECN_ECT0		2
#define FRAME_ECN_CE		3

struct frame_tx {
	uint8_t dmac[ETH_ALEN_], smac[ETH_ALEN_];
	uint16_t vlan;			/* 802.1Q VLAN id, 0 = untagged */
	struct mroc_addr src, dst;	/* same family */
	uint16_t sport, dport;		/* host order */
	uint8_t ecn;			/* FRAME_ECN_* */
	uint8_t dscp;
	uint8_t ttl;			/* 0 = 64 */
	bool udp_csum;			/* compute the UDP checksum (IPv6 always does) */
	bool icrc;			/* append the ICRC (the payload is a MetaRoCE packet) */
};

/*
 * buf holds the payload at buf + FRAME_HEADROOM (plen bytes; with tx->icrc
 * FRAME_ICRC_LEN more bytes of room after it).  Writes the headers before
 * it and returns the frame's offset in buf (the frame is buf + ret, length
 * frame_len(ret, plen, tx)), or -EINVAL.
 */
int frame_build(uint8_t *buf, size_t plen, const struct frame_tx *tx);

static inline uint32_t frame_len(int off, size_t plen, const struct frame_tx *tx)
{
	return (uint32_t)(FRAME_HEADROOM - off + plen + (tx->icrc ? FRAME_ICRC_LEN : 0));
}

/*
 * frame_build from headers built once (issue #22): a path's packets differ
 * only in their lengths and the IPv4 header checksum that covers one, yet
 * frame_build wrote and summed every field of each (~160 instructions a
 * packet).  A cache of FRAME_TMPLS headers, each for one struct frame_tx
 * (its slot picked by source port and ECN); frame_build_cached copies the
 * one for tx and patches the lengths and the checksum, or builds the slot
 * anew for a tx it does not hold.  What it writes from the frame's start on
 * is frame_build's, byte for byte (test_frame); the headroom in front of
 * the frame is overwritten too.  IPv4 with the ICRC and no UDP checksum
 * only (mrocd's IPv4 frames); any other tx goes to frame_build (IPv6 sums
 * the whole datagram anyway), as does one frame_build refuses.
 */
#define FRAME_TMPLS_BITS	6
#define FRAME_TMPLS		(1u << FRAME_TMPLS_BITS)

struct frame_tmpl {
	struct frame_tx tx;		/* what hdr holds the headers for */
	uint8_t hdr[FRAME_HEADROOM];	/* as a frame's headroom: the headers end at its end */
	uint8_t hlen;
	bool used;
	uint32_t sum0;			/* IPv4 header sum with total length and checksum 0 */
};

/*
 * A miss costs 104 instructions more than frame_build, a hit saves 42
 * (docs/PERF.md): past ~29 % misses the cache loses, and a worker with
 * hundreds of paths misses more than that.  So it watches itself: a window
 * of FRAME_TMPL_WINDOW calls with more than a quarter missed sends the next
 * FRAME_TMPL_BYPASS straight to frame_build, then it tries again.
 */
#define FRAME_TMPL_WINDOW	64
#define FRAME_TMPL_BYPASS	16384

struct frame_tmpls {
	struct frame_tmpl t[FRAME_TMPLS];
	uint64_t built;			/* slots built for a tx they did not hold: misses */
	uint32_t calls, misses;		/* in the current window */
	uint32_t bypass;		/* calls left that go straight to frame_build */
};

/* As frame_build (same arguments, same result); c starts zeroed. */
int frame_build_cached(struct frame_tmpls *c, uint8_t *buf, size_t plen, const struct frame_tx *tx);

/*
 * The ICRC for a MetaRoCE packet of len bytes at pkt (ports host order):
 * sets MROC_F_ICRC (wire.h) in its flags and writes the CRC at pkt + len, which must
 * have FRAME_ICRC_LEN bytes of room.  Returns the new length, or -EINVAL for
 * a packet shorter than the common header.
 */
int frame_icrc_seal(uint8_t *pkt, size_t len, uint16_t sport, uint16_t dport);

/*
 * The other end: a packet that announces an ICRC must end in a correct one
 * (-EBADMSG otherwise); it is removed and the flag cleared, so the engine
 * sees the packet as sealed.  Returns the length without it, or 0 for a
 * packet without MROC_F_ICRC (the caller decides what else covers it).
 */
int frame_icrc_open(uint8_t *pkt, size_t len, uint16_t sport, uint16_t dport);

struct frame_rx {
	const uint8_t *payload;		/* bytes after the UDP header */
	uint32_t payload_len;		/* from the UDP length field */
	struct mroc_addr src, dst;
	uint16_t sport, dport;		/* host order */
	uint8_t ecn;
	uint16_t vlan;
	uint8_t smac[ETH_ALEN_];
};

enum frame_err {
	FRAME_OK = 0,
	FRAME_ERR_SHORT,		/* shorter than its headers */
	FRAME_ERR_ETHERTYPE,		/* neither IPv4 nor IPv6 */
	FRAME_ERR_IP,			/* bad version, IHL, length, fragment, checksum */
	FRAME_ERR_NOT_UDP,
	FRAME_ERR_UDP,			/* bad UDP length or checksum, or neither checksum nor ICRC */
	FRAME_ERR_ICRC,			/* the ICRC does not match: corrupted */
	FRAME_ERR__COUNT,
};

/*
 * Parse a received frame; 0 or -EBADMSG with *why set.  The UDP length must
 * equal the IP payload length.  Over IPv4 a packet with an ICRC is checked
 * by it alone (frame_icrc_open: the trailer is removed, the flag cleared in
 * place); one without must have a non-zero UDP checksum.  Over IPv6 the UDP
 * checksum is always checked, and the ICRC too when there is one.  A UDP
 * checksum must be correct or equal the bare pseudo-header sum (what kernel
 * sockets on veth send: CHECKSUM_PARTIAL, see frame.c).
 */
int frame_parse(uint8_t *frame, size_t len, struct frame_rx *rx, enum frame_err *why);
const char *frame_err_name(enum frame_err e);

/* Internet checksum helpers (RFC 1071), exposed for tests. */
uint32_t csum_add(uint32_t sum, const void *data, size_t len);
uint16_t csum_fold(uint32_t sum);

#endif
