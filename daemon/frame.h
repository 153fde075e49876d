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
/* The invariant CRC (CRC32C) that ends every MetaRoCE packet (docs/PROTOCOL.md 1). */
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
};

/*
 * buf holds the payload at buf + FRAME_HEADROOM (plen bytes).  Writes the
 * headers before it and returns the frame's offset in buf (the frame is
 * buf + ret, length FRAME_HEADROOM - ret + plen), or -EINVAL.
 */
int frame_build(uint8_t *buf, size_t plen, const struct frame_tx *tx);

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
	FRAME_ERR_UDP,			/* bad UDP length or checksum */
	FRAME_ERR__COUNT,
};

/*
 * Parse a received frame; 0 or -EBADMSG with *why set.  A non-zero UDP
 * checksum must be correct or equal the bare pseudo-header sum (what kernel
 * sockets on veth send: CHECKSUM_PARTIAL, see frame.c); 0 passes on IPv4
 * only.  The UDP length must equal the IP payload length.
 */
int frame_parse(const uint8_t *frame, size_t len, struct frame_rx *rx, enum frame_err *why);
const char *frame_err_name(enum frame_err e);

/* Internet checksum helpers (RFC 1071), exposed for tests. */
uint32_t csum_add(uint32_t sum, const void *data, size_t len);
uint16_t csum_fold(uint32_t sum);

#endif
