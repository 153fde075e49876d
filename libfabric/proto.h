/* SPDX-License-Identifier: MIT */
/*
 * The provider's protocol on a connection (one libmroc QP).  Every message is
 * one or more mroc SENDs of a slot (header + up to MFI_CHUNK bytes), in order;
 * the chunks of one message are never interleaved with another's on a
 * connection.  Fields are little-endian (mfi_hdr_encode/decode).
 *
 *   HELLO       first SEND on a connection, each way: the sender's name and the
 *               rkey of its credit word (the peer WRITEs freed-slot counts there);
 *               on an MSG connection, followed by the CM private data (at most
 *               MFI_CM_DATA_MAX bytes) of fi_connect (the client's HELLO: the
 *               passive side raises FI_CONNREQ when it arrives), fi_accept, or
 *               fi_reject (MFI_HELLO_REJECT: the server's last word; it closes
 *               the QP once the HELLO is delivered)
 *   MSG/TAGGED  a message; FIRST carries total length, tag and remote CQ data.
 *               With MFI_F_RNDV (rendezvous, RTS) it is one header-only SEND (FIRST|LAST):
 *               the receiver READs total bytes from the sender's region key at offset
 *               addr and answers RMA_ACK (FIN) with req_id and a status (rndv.c).  Sent
 *               only to a peer whose HELLO has MFI_HELLO_RNDV
 *   WRITE       RMA write: key, address, total; the target answers RMA_ACK
 *   READ_REQ    RMA read: key, address, total; answered by READ_RESP chunks or RMA_ACK (error)
 *   READ_RESP   the data of a read, chunks like a message
 *   RMA_ACK     req_id and status (0 or a positive FI_E* number) of a write, a failed
 *               read, a non-fetching atomic or a failed fetching one
 *   ATOMIC      an atomic: key, address, req_id, the operation in tag (mfi_atomic_desc);
 *               one chunk: count operands, then (compare family) count compare values;
 *               answered by RMA_ACK (no fetch, or an error) or ATOMIC_RESP
 *   ATOMIC_RESP the original values of a fetching atomic, one chunk
 *   VERIFY      "did you open a connection to me whose HELLO carried this nonce?",
 *               sent on a connection the asker opened (so it reaches the claimed endpoint)
 *   VERIFY_RESP the answer: the nonce in data, 1 (yes) or 0 in total
 *
 * Answers (READ_RESP, RMA_ACK, ATOMIC_RESP) name an operation by req_id; one is
 * taken only on the connection the operation was sent on, for an operation of
 * the kind it answers, once that operation has been sent whole (anything else is
 * refused and counted).  A READ_RESP whose region went away mid-read ends with
 * MFI_F_ABORT in its LAST chunk (status in data).
 *
 * Identity: a HELLO's name is a claim.  What mroc authenticates is the
 * connection one opens oneself (to that mrocd, that service); so data is only
 * sent on connections we opened, and a connection the peer opened is read only
 * once the claimed endpoint, asked on a connection we opened to it, confirms
 * the HELLO's nonce (VERIFY).  Until then its chunks wait in their slots.
 *
 * An atomic is applied when its SEND is processed at the target.  mroc delivers
 * a SEND exactly once (a retransmitted copy is a DSN already received, never
 * delivered again), so no replay cache is needed here: the engine's guarantee
 * is the one RoCE's responder-side atomic cache gives.
 */
#ifndef MROC_FI_PROTO_H
#define MROC_FI_PROTO_H

#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

enum mfi_op {
	MFI_OP_HELLO = 1,
	MFI_OP_MSG,
	MFI_OP_TAGGED,
	MFI_OP_WRITE,
	MFI_OP_READ_REQ,
	MFI_OP_READ_RESP,
	MFI_OP_RMA_ACK,
	MFI_OP_ATOMIC,
	MFI_OP_ATOMIC_RESP,
	MFI_OP_VERIFY,
	MFI_OP_VERIFY_RESP,
	MFI_OP_MAX,
};

#define MFI_F_FIRST	0x1
#define MFI_F_LAST	0x2
#define MFI_F_DATA	0x4	/* data carries remote CQ data */
#define MFI_F_ABORT	0x8	/* READ_RESP's LAST: the read failed midway, status in data */
#define MFI_F_RNDV	0x10	/* MSG/TAGGED: an RTS; key/addr name the sender's mroc region */

/* In host order; the wire form is the same fields little-endian, 56 bytes. */
struct mfi_hdr {
	uint8_t op;
	uint8_t flags;
	uint16_t rsvd;
	uint32_t len;		/* payload bytes in this SEND */
	uint64_t total;		/* FIRST: bytes of the whole message / RMA */
	uint64_t tag;
	uint64_t data;		/* remote CQ data */
	uint64_t key;		/* RMA: the target's MR key */
	uint64_t addr;		/* RMA: address (FI_MR_VIRT_ADDR) or offset in the MR */
	uint32_t credits;	/* receive slots the sender has freed since the connection began */
	uint32_t req_id;	/* RMA: names the operation in READ_RESP / RMA_ACK */
};

#define MFI_HDR_LEN	56
static_assert(sizeof(struct mfi_hdr) == MFI_HDR_LEN, "provider header layout");

static inline void mfi_hdr_encode(const struct mfi_hdr *h, void *buf)
{
	struct mfi_hdr le = {
		.op = h->op, .flags = h->flags, .len = htole32(h->len), .total = htole64(h->total),
		.tag = htole64(h->tag), .data = htole64(h->data), .key = htole64(h->key),
		.addr = htole64(h->addr), .credits = htole32(h->credits),
		.req_id = htole32(h->req_id),
	};

	memcpy(buf, &le, sizeof(le));
}

/* 0, or -EBADMSG when the buffer is shorter than its header says. */
static inline int mfi_hdr_decode(const void *buf, uint32_t buflen, struct mfi_hdr *h)
{
	if (buflen < MFI_HDR_LEN)
		return -EBADMSG;
	memcpy(h, buf, sizeof(*h));
	h->len = le32toh(h->len);
	h->total = le64toh(h->total);
	h->tag = le64toh(h->tag);
	h->data = le64toh(h->data);
	h->key = le64toh(h->key);
	h->addr = le64toh(h->addr);
	h->credits = le32toh(h->credits);
	h->req_id = le32toh(h->req_id);
	if (h->op == 0 || h->op >= MFI_OP_MAX || h->len > buflen - MFI_HDR_LEN)
		return -EBADMSG;
	return 0;
}

/* An ATOMIC's operation, carried in the header's tag. */
struct mfi_atomic_desc {
	uint8_t op;		/* enum fi_op */
	uint8_t datatype;	/* enum fi_datatype */
	uint8_t kind;		/* enum mfi_atomic_kind: write, fetch, compare */
	uint32_t count;		/* elements */
};

static inline uint64_t mfi_atomic_desc_encode(const struct mfi_atomic_desc *d)
{
	return d->op | (uint64_t)d->datatype << 8 | (uint64_t)d->kind << 16 |
	       (uint64_t)d->count << 32;
}

static inline struct mfi_atomic_desc mfi_atomic_desc_decode(uint64_t tag)
{
	return (struct mfi_atomic_desc){
		.op = (uint8_t)tag, .datatype = (uint8_t)(tag >> 8), .kind = (uint8_t)(tag >> 16),
		.count = (uint32_t)(tag >> 32),
	};
}

/*
 * HELLO's payload: this, then (MFI_HELLO_ADDR6) the sender's IPv6 address,
 * then an MSG connection's CM data.  An IPv4 sender's HELLO is the layout
 * every version has sent (24 bytes, ip its address), so an IPv4 peer of an
 * older provider reads it as before; an IPv6 one has ip 0 and the flag, the
 * address in the 16 bytes after (an older provider has no IPv6 names at all,
 * so it never meets one: libfabric/README.md).
 */
struct mfi_hello {
	uint32_t ip;		/* network order: the sender's mrocd (IPv4); 0 with MFI_HELLO_ADDR6 */
	uint16_t port;		/* host order (little-endian on the wire) */
	uint16_t flags;		/* MFI_HELLO_* (little-endian on the wire) */
	uint32_t credit_rkey;	/* rkey of the region holding the sender's credit word */
	uint32_t rsvd2;
	uint64_t nonce;		/* random, per connection: what VERIFY asks about */
};
static_assert(sizeof(struct mfi_hello) == 24, "hello layout");

#define MFI_HELLO_RNDV	0x1	/* the sender READs rendezvous messages (MFI_F_RNDV) */
#define MFI_HELLO_REJECT 0x2	/* MSG: the connection request is refused (fi_reject) */
#define MFI_HELLO_ADDR6	0x4	/* the sender's name is IPv6: 16 bytes after the hello */
#define MFI_HELLO_ADDR6_LEN 16

/*
 * A HELLO's payload of len bytes: its fixed part into *h (as on the wire),
 * *ip6 the IPv6 address (NULL for an IPv4 sender), *cm and *cm_len the CM data
 * after them.  0, or -EBADMSG when len is shorter than the flags say.
 */
static inline int mfi_hello_decode(const uint8_t *p, size_t len, struct mfi_hello *h,
				   const uint8_t **ip6, const uint8_t **cm, size_t *cm_len)
{
	size_t fixed = sizeof(*h);

	if (len < fixed)
		return -EBADMSG;
	memcpy(h, p, sizeof(*h));
	*ip6 = NULL;
	if (le16toh(h->flags) & MFI_HELLO_ADDR6) {
		if (len < fixed + MFI_HELLO_ADDR6_LEN)
			return -EBADMSG;
		*ip6 = p + fixed;
		fixed += MFI_HELLO_ADDR6_LEN;
	}
	*cm = p + fixed;
	*cm_len = len - fixed;
	return 0;
}

#endif
