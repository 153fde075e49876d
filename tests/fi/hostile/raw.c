// SPDX-License-Identifier: MIT
/*
 * fi_hostile: the raw side: the provider's protocol (libfabric/proto.h) spoken by hand over
 * libmroc QPs (credits, HELLO, VERIFY answered for M), the QPs listening on M's
 * service, markers.
 */
#include "hostile.h"

struct mroc_ctx *raw_ctx;
struct raw *lis[16];		/* connections the victim opened to M */
size_t nlis;
static uint64_t m_nonces[64];		/* the nonces M's claims carried: VERIFY says yes */
static size_t nnonce;
static uint64_t verify_yes;		/* VERIFYs answered yes */
static bool withhold_new;		/* new connections from the victim start withholding */
struct mfi_addr M_id, X_id;

struct raw *raws[64];		/* every raw connection, freed at the end */
size_t nraws;

static struct raw *raw_new(void)
{
	struct mroc_qp_attr a = { .sz = sizeof(a), .sq_depth = 64, .rq_depth = SLOTS };
	struct raw *r = calloc(1, sizeof(*r));

	if (nraws == 64)
		die("too many raw connections");
	raws[nraws++] = r;
	r->qp = mroc_qp_create(raw_ctx, &a);
	r->mr = mroc_mr_alloc(raw_ctx, REGION, MROC_ACCESS_LOCAL_WRITE | MROC_ACCESS_REMOTE_WRITE);
	if (!r->qp || !r->mr)
		die("raw QP: %s", strerror(errno));
	r->base = mroc_mr_addr(r->mr);
	for (uint32_t i = 0; i < SLOTS; i++) {
		struct mroc_recv_wr wr = { .wr_id = i, .sg = { r->base + OFF_RX + (size_t)i * SLOT,
							       SLOT, mroc_mr_lkey(r->mr) } };

		if (mroc_post_recv(r->qp, &wr))
			die("raw post_recv");
	}
	return r;
}

uint32_t raw_credits(struct raw *r)
{
	uint32_t w = __atomic_load_n((uint32_t *)(r->base + OFF_CREDIT_IN), __ATOMIC_ACQUIRE);
	uint32_t f = (int32_t)(w - r->peer_freed) > 0 ? w : r->peer_freed;

	return SLOTS + f - (uint32_t)r->sends;
}

/* As the provider does when it has nothing to send: the freed count into the peer's credit word. */
static void raw_tell(struct raw *r)
{
	struct mfi_hello hello;
	struct mroc_send_wr wr;

	if (r->withhold || r->freed - r->told < SLOTS / 4 || !r->nin ||
	    r->in[0].h.op != MFI_OP_HELLO || r->in[0].h.len < sizeof(hello))
		return;
	memcpy(&hello, r->in[0].p, sizeof(hello));
	__atomic_store_n((uint32_t *)(r->base + 8), r->freed, __ATOMIC_RELEASE);
	wr = (struct mroc_send_wr){ .opcode = MROC_WR_WRITE,
				    .sg = { r->base + 8, sizeof(uint32_t), mroc_mr_lkey(r->mr) },
				    .rkey = le32toh(hello.credit_rkey), .remote_offset = OFF_CREDIT_IN };
	if (mroc_post_send(r->qp, &wr) == 0)
		r->told = r->freed;
}

/* The raw connection's completions: chunks into r->in, VERIFYs answered for M. */
void raw_poll(struct raw *r)
{
	struct mroc_wc wc[16];
	int n;

	if (r->dead)
		return;
	while ((n = mroc_poll_cq(r->qp, wc, 16)) > 0) {
		for (int i = 0; i < n; i++) {
			uint8_t *slot;
			struct mfi_hdr h = { 0 };

			switch (wc[i].opcode) {
			case MROC_WC_CONNECTED:
				r->up = true;
				r->withhold = withhold_new;
				continue;
			case MROC_WC_SEND:
				r->completed++;
				continue;
			case MROC_WC_RECV:
				break;
			default:
				r->dead = true;
				continue;
			}
			if (wc[i].status != MROC_WC_SUCCESS || wc[i].wr_id >= SLOTS) {
				r->dead = true;
				continue;
			}
			slot = r->base + OFF_RX + wc[i].wr_id * SLOT;
			if (mfi_hdr_decode(slot, wc[i].byte_len, &h) == 0) {
				if ((int32_t)(h.credits - r->peer_freed) > 0)
					r->peer_freed = h.credits;
				if (r->nin == r->capin) {
					r->capin = r->capin ? 2 * r->capin : 64;
					r->in = realloc(r->in, r->capin * sizeof(*r->in));
				}
				r->in[r->nin].h = h;
				r->in[r->nin].p = malloc(h.len + 1);
				memcpy(r->in[r->nin].p, slot + MFI_HDR_LEN, h.len);
				r->nin++;
			}
			{
				struct mroc_recv_wr wr = { .wr_id = wc[i].wr_id,
							   .sg = { slot, SLOT, mroc_mr_lkey(r->mr) } };

				if (mroc_post_recv(r->qp, &wr) == 0)
					r->freed++;
			}
			if (h.op == MFI_OP_VERIFY) {
				struct mfi_hdr a = { .op = MFI_OP_VERIFY_RESP,
						     .flags = MFI_F_FIRST | MFI_F_LAST,
						     .data = h.data };

				for (size_t k = 0; k < nnonce; k++)
					if (m_nonces[k] == h.data)
						a.tag = 1;
				verify_yes += a.tag;
				raw_send(r, &a, NULL);
			}
		}
	}
	if (n < 0)
		r->dead = true;
	raw_tell(r);
}

/* One SEND of a slot: header h (its credits filled in here) and h->len bytes of p. */
void raw_send(struct raw *r, struct mfi_hdr *h, const void *p)
{
	uint8_t *slot;
	struct mroc_send_wr wr;

	while (!r->dead && (raw_credits(r) == 0 || r->sends - r->completed >= SLOTS)) {
		raw_poll(r);
		check_deadline("credits on a raw connection");
	}
	if (r->dead)
		return;
	slot = r->base + OFF_TX + (r->sends % SLOTS) * SLOT;
	if (!r->withhold)
		r->told = r->freed;
	h->credits = r->told;
	mfi_hdr_encode(h, slot);
	if (h->len)
		memcpy(slot + MFI_HDR_LEN, p, h->len);
	wr = (struct mroc_send_wr){ .opcode = MROC_WR_SEND, .flags = MROC_SEND_SIGNALED,
				    .sg = { slot, MFI_HDR_LEN + h->len, mroc_mr_lkey(r->mr) } };
	if (mroc_post_send(r->qp, &wr))
		die("raw post_send");
	r->sends++;
}

/* Wait until everything posted on r has completed (the victim's daemon has it). */
void raw_flush(struct raw *r)
{
	while (!r->dead && r->completed < r->sends) {
		raw_poll(r);
		check_deadline("raw sends completing");
	}
}

static void raw_hello(struct raw *r, const struct mfi_addr *claim, uint64_t nonce)
{
	struct mfi_hello hello = {
		.ip = mfi_addr_ip4(claim), .port = htole16(claim->port),
		.credit_rkey = htole32(mroc_mr_rkey(r->mr)), .nonce = htole64(nonce),
	};
	struct mfi_hdr h = { .op = MFI_OP_HELLO, .flags = MFI_F_FIRST | MFI_F_LAST,
			     .len = sizeof(hello), .total = sizeof(hello) };

	raw_send(r, &h, &hello);
}

/* A connection to the victim's endpoint claiming identity claim (M: confirmed when asked). */
struct raw *raw_dial(const struct mfi_addr *victim, const struct mfi_addr *claim)
{
	struct raw *r = raw_new();
	char ip[INET_ADDRSTRLEN];
	uint64_t nonce, yes = verify_yes;
	time_t until;

	inet_ntop(AF_INET, &(struct in_addr){ .s_addr = mfi_addr_ip4(victim) }, ip, sizeof(ip));
	if (mroc_qp_connect(r->qp, ip, SERVICE_BASE | victim->port))
		die("raw connect");
	while (!r->up) {
		raw_poll(r);
		pump();
		if (r->dead)
			die("raw connect refused");
		check_deadline("raw connect");
	}
	if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce))
		die("getrandom");
	if (mfi_addr_eq(claim, &M_id) && nnonce < 64)
		m_nonces[nnonce++] = nonce;
	raw_hello(r, claim, nonce);
	/* A provider that checks claims asks M now; one that does not never will. */
	until = time(NULL) + 3;
	while (mfi_addr_eq(claim, &M_id) && verify_yes == yes && time(NULL) < until) {
		raw_poll(r);
		pump();
	}
	return r;
}

/* Keep a QP listening on M's service; run the connections the victim opened to M. */
void pump(void)
{
	bool listening = false;

	for (size_t i = 0; i < nlis; i++) {
		raw_poll(lis[i]);
		listening |= !lis[i]->up && !lis[i]->dead;
	}
	if (!listening && nlis < 16) {
		struct raw *r = raw_new();

		if (mroc_qp_listen(r->qp, SERVICE_BASE | M_id.port))
			die("raw listen");
		r->listener = true;
		lis[nlis++] = r;
	}
	if (x_running)
		reap(&X);
}

/*
 * Withhold credits on every connection with the victim (the raw one q and
 * those it opened to M): whichever it sends M's data on runs dry.
 */
void withhold_all(struct raw *q, bool on)
{
	withhold_new = on;
	q->withhold = on;
	for (size_t i = 0; i < nlis; i++)
		lis[i]->withhold = on;
}

/* The connection on which the victim's chunks of op show up first (after index from[]). */
struct raw *wait_op(struct raw *q, uint8_t op, size_t *from, const char *what)
{
	for (;;) {
		struct raw *all_[17] = { q };
		size_t n = 1;

		for (size_t i = 0; i < nlis; i++)
			all_[n++] = lis[i];
		raw_poll(q);
		pump();
		for (size_t k = 0; k < n; k++)
			for (size_t i = from ? from[k] : 0; i < all_[k]->nin; i++)
				if (all_[k]->in[i].h.op == op && (all_[k]->in[i].h.flags & MFI_F_FIRST))
					return all_[k];
		check_deadline(what);
	}
}

void mark_all(struct raw *q, size_t *from)
{
	from[0] = q->nin;
	for (size_t i = 0; i < 16; i++)
		from[i + 1] = i < nlis ? lis[i]->nin : 0;
}

void raw_marker(struct raw *r, uint64_t n)
{
	uint64_t v = n;
	struct mfi_hdr h = { .op = MFI_OP_TAGGED, .flags = MFI_F_FIRST | MFI_F_LAST,
			     .len = 8, .total = 8, .tag = MARK | n };

	raw_send(r, &h, &v);
}
