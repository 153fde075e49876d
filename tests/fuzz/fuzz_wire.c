// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the wire parser (engine/wire.c).  Any input:
 * wire_parse must not read outside it, must name a reason when it refuses,
 * and what it accepts must survive encode -> parse unchanged (the encoders
 * and the parser agree on every field; a CM extension stays where it was).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

#define FUZZ_ASSERT(c)	do { if (!(c)) abort(); } while (0)

static size_t encode(const struct wire_pkt *p, uint8_t *buf)
{
	size_t n = wire_put_hdr(buf, &p->hdr);

	if (mroc_op_is_data(p->hdr.opcode))
		n += wire_put_data(buf + n, &p->data);
	else if (p->hdr.opcode == MROC_OP_ACK)
		n += wire_put_ack(buf + n, &p->ack);
	else if (mroc_op_is_cm(p->hdr.opcode))
		n += wire_put_cm(buf + n, &p->cm);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	/* A copy of exactly len bytes: ASan sees any read past the end. */
	uint8_t *in = malloc(len ? len : 1), *out;
	struct wire_pkt a, b;
	enum wire_err why = WIRE_OK, why2;
	size_t hlen;

	memcpy(in, data, len);
	/* Zeroed, padding too, so that the structs compare with memcmp. */
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (wire_parse(in, len, &a, &why)) {
		FUZZ_ASSERT(why != WIRE_OK && why < WIRE_ERR__COUNT);
		FUZZ_ASSERT(wire_err_name(why) != NULL);
		free(in);
		return 0;
	}
	FUZZ_ASSERT(why == WIRE_OK);
	FUZZ_ASSERT(!a.payload_len ||
		    (a.payload >= in && a.payload + a.payload_len <= in + len));
	out = calloc(1, len + MROC_ACK_HDR_LEN + MROC_HDR_LEN);
	hlen = encode(&a, out);
	FUZZ_ASSERT(hlen <= len);
	memcpy(out + hlen, in + hlen, len - hlen);	/* the same payload */
	FUZZ_ASSERT(!wire_parse(out, len, &b, &why2));
	FUZZ_ASSERT(!memcmp(&a.hdr, &b.hdr, sizeof(a.hdr)));
	if (mroc_op_is_data(a.hdr.opcode))
		FUZZ_ASSERT(!memcmp(&a.data, &b.data, sizeof(a.data)));
	else if (a.hdr.opcode == MROC_OP_ACK)
		FUZZ_ASSERT(!memcmp(&a.ack, &b.ack, sizeof(a.ack)));
	else if (mroc_op_is_cm(a.hdr.opcode)) {
		/* The extension lies inside the packet, at the same place in both. */
		FUZZ_ASSERT(!a.cm.ext == !b.cm.ext);
		FUZZ_ASSERT(!a.cm.ext || (a.cm.ext >= in && a.cm.ext + a.cm.ext_len <= in + len &&
					  a.cm.ext - in == b.cm.ext - out));
		a.cm.ext = b.cm.ext = NULL;
		FUZZ_ASSERT(!memcmp(&a.cm, &b.cm, sizeof(a.cm)));
	}
	FUZZ_ASSERT(a.payload_len == b.payload_len);
	free(out);
	free(in);
	return 0;
}
