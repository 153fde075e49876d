// SPDX-License-Identifier: MIT
/*
 * fi_hostile: the attacker: a genuine endpoint X and raw connections claiming M (or X in 20),
 * each scenario's hostile half.
 */
#include "hostile.h"

static struct mfi_addr VA;		/* the victim endpoint's name (changes with 17) */
static uint8_t *xbuf;
static struct fid_mr *xmr;

static void a_idle(void)
{
	pump();
}

static void a_name(void)
{
	unsigned ip, port;

	if (sscanf(hear(), "NAME %u %u", &ip, &port) != 2)
		die("bad NAME line");
	VA = mfi_addr4(ip, (uint16_t)port);	/* the hostile tests run over IPv4 */
}

static void hdr_send(struct raw *r, uint8_t op, uint8_t flags, uint32_t len, uint64_t total,
		     uint64_t tag, uint64_t key, uint64_t addr, uint32_t req, uint64_t data,
		     const void *p)
{
	struct mfi_hdr h = { .op = op, .flags = flags, .len = len, .total = total, .tag = tag,
			     .key = key, .addr = addr, .req_id = req, .data = data };

	raw_send(r, &h, p);
}

static void a_s15(struct raw *q)
{
	static uint8_t junk[64];

	memset(junk, 0xEE, sizeof(junk));
	expect("posted");
	for (uint32_t id = 1; id <= 4; id++) {
		hdr_send(q, MFI_OP_READ_RESP, MFI_F_FIRST | MFI_F_LAST, 64, 64, 0, 0, 0, id, 0, junk);
		hdr_send(q, MFI_OP_RMA_ACK, MFI_F_FIRST | MFI_F_LAST, 0, 0, 0, 0, 0, id, 0, NULL);
		hdr_send(q, MFI_OP_ATOMIC_RESP, MFI_F_FIRST | MFI_F_LAST, 8, 8, 0, 0, 0, id, 0, junk);
	}
	raw_marker(q, 15);
	raw_flush(q);
	say("sent");
	expect("go");
	x_running = true;
	expect("done");
	if (!is_pat(xbuf, 256 * 1024, 15, 0))
		die("15: X's buffer does not hold the write");
	say("ok");
	x_running = false;
}

/* The chunks of the WRITE (or READ_RESP) with req_id req received on r, into out; count them. */
static size_t assemble(struct raw *r, uint8_t op, uint32_t req, uint8_t *out, uint64_t *got,
		       bool *last, bool *abort_)
{
	size_t n = 0;
	bool in = false;

	*got = 0;
	*last = *abort_ = false;
	for (size_t i = 0; i < r->nin; i++) {
		struct mfi_hdr *h = &r->in[i].h;

		if (h->flags & MFI_F_FIRST)
			in = h->op == op && h->req_id == req;
		if (!in)
			continue;
		if (out)
			memcpy(out + *got, r->in[i].p, h->len);
		*got += h->len;
		n++;
		if (h->flags & MFI_F_LAST) {
			*last = true;
			*abort_ = h->flags & MFI_F_ABORT;
			in = false;
		}
	}
	return n;
}

static void a_s16(struct raw *q)
{
	const size_t len = 3 * 1024 * 1024;
	uint8_t *got = malloc(len);
	uint32_t req = 0;
	uint64_t bytes;
	size_t from[17];
	struct raw *l;
	bool last, ab;

	withhold_all(q, true);
	mark_all(q, from);
	say("withholding");
	expect("posted");
	/* Its first chunk names the write (on whichever connection the victim sends to M). */
	l = wait_op(q, MFI_OP_WRITE, from, "16: the write's first chunk");
	for (size_t i = 0; i < l->nin; i++)
		if (l->in[i].h.op == MFI_OP_WRITE && (l->in[i].h.flags & MFI_F_FIRST))
			req = l->in[i].h.req_id;
	hdr_send(l, MFI_OP_RMA_ACK, MFI_F_FIRST | MFI_F_LAST, 0, 0, 0, 0, 0, req, 0, NULL);
	raw_marker(l, 16);
	raw_flush(l);
	say("sent");
	expect("ok");
	withhold_all(q, false);
	raw_marker(l, 160);	/* tells the freed slots: the rest of the write comes */
	do {
		pump();
		assemble(l, MFI_OP_WRITE, req, NULL, &bytes, &last, &ab);
		if (time(NULL) > deadline)
			die("16: the rest of the write: %" PRIu64 " bytes in %zu chunks, credits %u, "
			    "freed %u told %u", bytes, l->nin, raw_credits(l), l->freed, l->told);
	} while (!last);
	assemble(l, MFI_OP_WRITE, req, got, &bytes, &last, &ab);
	if (bytes != len || !is_pat(got, len, 16, 0))
		die("16: the write arrived as %" PRIu64 " bytes, not the 3 MiB sent", bytes);
	hdr_send(l, MFI_OP_RMA_ACK, MFI_F_FIRST | MFI_F_LAST, 0, 0, 0, 0, 0, req, 0, NULL);
	raw_flush(l);
	say("acked");
	expect("done");
	free(got);
}

static void a_s19(struct raw *q)
{
	static uint8_t p[CHUNK];
	uint64_t key, addr, bytes;
	uint8_t *got = malloc(4 * 1024 * 1024 + CHUNK);
	size_t before;
	bool last, ab;

	if (sscanf(hear(), "K19 %" SCNu64 " %" SCNu64, &key, &addr) != 2)
		die("bad K19");
	memset(p, 0x22, sizeof(p));
	hdr_send(q, MFI_OP_WRITE, MFI_F_FIRST, CHUNK, 2 * CHUNK, 0, key, addr, 0x1919, 0, p);
	raw_flush(q);
	say("first");
	expect("closed");
	hdr_send(q, MFI_OP_WRITE, MFI_F_LAST, CHUNK, 2 * CHUNK, 0, key, addr, 0x1919, 0, p);
	raw_marker(q, 19);
	raw_flush(q);
	say("sent");
	for (;;) {
		size_t i;

		pump();
		raw_poll(q);
		for (i = 0; i < q->nin; i++)
			if (q->in[i].h.op == MFI_OP_RMA_ACK && q->in[i].h.req_id == 0x1919)
				break;
		if (i < q->nin) {
			if (q->in[i].h.total != FI_EACCES)
				die("19: the write to a region closed midway was answered %" PRIu64,
				    q->in[i].h.total);
			break;
		}
		check_deadline("19: the write's answer");
	}
	say("ack");

	if (sscanf(hear(), "K19r %" SCNu64 " %" SCNu64, &key, &addr) != 2)
		die("bad K19r");
	q->withhold = true;
	hdr_send(q, MFI_OP_READ_REQ, MFI_F_FIRST | MFI_F_LAST, 0, 4 * 1024 * 1024, 0, key, addr,
		 0x1920, 0, NULL);
	do {
		raw_poll(q);
		pump();
		before = assemble(q, MFI_OP_READ_RESP, 0x1920, NULL, &bytes, &last, &ab);
		check_deadline("19: the read's first chunks");
	} while (before == 0);
	say("some");
	expect("closed");
	q->withhold = false;
	raw_marker(q, 190);	/* tells the freed slots */
	do {
		raw_poll(q);
		pump();
		assemble(q, MFI_OP_READ_RESP, 0x1920, NULL, &bytes, &last, &ab);
		check_deadline("19: the read's end");
	} while (!last);
	assemble(q, MFI_OP_READ_RESP, 0x1920, got, &bytes, &last, &ab);
	for (uint64_t i = 0; i < bytes; i++)
		if (got[i] != 0x44)
			die("19: byte %" PRIu64 " of a read is 0x%02x: read after its region was closed",
			    i, got[i]);
	if (!ab)
		die("19: the read of a region closed midway did not end with ABORT");
	note("19: read of 4 MiB, region closed after some chunks: %" PRIu64 " bytes, then ABORT",
	     bytes);
	say("ok");
	free(got);
}

static void a_s18(struct raw *q)
{
	static uint8_t p[CHUNK];
	const uint64_t total = 8 * 1024 * 1024;
	uint64_t off;

	memset(p, 0x18, sizeof(p));
	expect("ready");
	hdr_send(q, MFI_OP_TAGGED, MFI_F_FIRST, CHUNK, total, T18, 0, 0, 0, 0, p);
	raw_flush(q);
	say("first");
	expect("discarded");
	for (off = CHUNK; off < total; off += CHUNK) {
		uint32_t l = total - off < CHUNK ? (uint32_t)(total - off) : CHUNK;

		hdr_send(q, MFI_OP_TAGGED, off + l == total ? MFI_F_LAST : 0, l, total, T18, 0, 0, 0,
			 0, p);
		pump();
	}
	raw_marker(q, 18);
	raw_flush(q);
	say("sent");
}

static void a_s17a(struct raw *q)
{
	size_t from[17];
	struct raw *l;
	size_t n0 = 0;

	withhold_all(q, true);
	mark_all(q, from);
	say("withholding");
	expect("posted");
	/* Until the victim has sent a good part of what its credits allow. */
	l = wait_op(q, MFI_OP_TAGGED, from, "17: the victim's sends");
	for (size_t i = 0; i < nlis; i++)
		if (lis[i] == l)
			n0 = from[i + 1];
	if (l == q)
		n0 = from[0];
	while (l->nin - n0 < SLOTS / 2) {
		raw_poll(q);
		pump();
		check_deadline("17: the victim's sends");
	}
	say("stalled");
	a_name();
	withhold_all(q, false);
}

static void a_s20(void)
{
	struct raw *f;
	static char forged[64] = "forged";
	bool leak = false;
	static char gen[64] = "genuine";
	static char got[64];
	static int xs, xr;

	x_running = true;
	POST(&X, fi_trecv(X.ep, got, sizeof(got), NULL, FI_ADDR_UNSPEC, T20B, 0, &xr));
	expect("ready");
	f = raw_dial(&VA, &X_id);
	hdr_send(f, MFI_OP_TAGGED, MFI_F_FIRST | MFI_F_LAST, sizeof(forged), sizeof(forged), T20, 0,
		 0, 0, 0, forged);
	raw_flush(f);
	say("forged");
	expect("sent");
	wait_done(&X, &xr, "20: the victim's message at X");
	if (strcmp(got, "for X only"))
		die("20: X got \"%.16s\"", got);
	for (int i = 0; i < 100; i++) {
		raw_poll(f);
		pump();
	}
	for (size_t i = 0; i < f->nin; i++)
		if (f->in[i].h.op == MFI_OP_TAGGED || f->in[i].h.op == MFI_OP_MSG)
			leak = true;
	if (leak)
		die("20: the victim's message to X went to the connection claiming to be X");
	{
		struct sockaddr_in vs = { .sin_family = AF_INET, .sin_addr.s_addr = mfi_addr_ip4(&VA),
					  .sin_port = htons(VA.port) };
		fi_addr_t av;

		if (fi_av_insert(X.av, &vs, 1, &av, 0, NULL) != 1)
			die("fi_av_insert");
		POST(&X, fi_tsend(X.ep, gen, sizeof(gen), NULL, av, T20, &xs));
		wait_done(&X, &xs, "20: X's send");
	}
	say("genuine");
	say("ok");
	x_running = false;
	note("20: the victim's message reached X, not the forger");
}

static void a_fuzz(struct raw *q, long nchunks)
{
	static uint8_t p[CHUNK];
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
	uint64_t vkey, vaddr;

	if (sscanf(hear(), "KV %" SCNu64 " %" SCNu64, &vkey, &vaddr) != 2)
		die("bad KV");
	expect("ready");
	for (long i = 0; i < nchunks; i++) {
		uint64_t r[8];
		struct mfi_hdr h;

		for (int k = 0; k < 8; k++) {
			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			r[k] = seed;
		}
		h = (struct mfi_hdr){
			.op = (uint8_t)(r[0] % 2 ? 1 + r[0] % (MFI_OP_MAX + 1) : r[0] >> 8),
			.flags = (uint8_t)(r[1] & 0xf),
			.len = (uint32_t)(r[2] % 3 == 0 ? r[2] % CHUNK : r[2] % 256),
			.total = r[3] % 8 == 0 ? r[3] : r[3] % (256 * 1024),
			.tag = r[4] % 3 == 0 ? 0 : r[4] & ~MARK,
			.key = r[5] % 2 ? vkey : r[5] % 8,
			.addr = r[5] % 2 ? vaddr + r[6] % (5 * 1024 * 1024) - 1024 * 1024 : r[6],
			.req_id = (uint32_t)(r[7] % 16),
			.data = r[7] >> 8,
		};
		if (h.op == MFI_OP_ATOMIC)	/* sometimes a well-formed one */
			h.tag = (uint64_t)(r[4] % 10) | (uint64_t)(r[4] >> 8 & 3) << 8 |
				(uint64_t)(r[4] >> 16 & 1) << 16 | (r[4] >> 32) % 4 << 32;
		memset(p, (int)(r[6] & 0xff), h.len);
		raw_send(q, &h, p);
		if (i % 64 == 0)
			pump();
	}
	raw_marker(q, 0xFF);
	raw_flush(q);
	expect("go");
	x_running = true;
	expect("echo");
	{
		static uint8_t b[1024 * 1024];
		static int r, s;
		struct sockaddr_in vs = { .sin_family = AF_INET, .sin_addr.s_addr = mfi_addr_ip4(&VA),
					  .sin_port = htons(VA.port) };
		fi_addr_t av;

		POST(&X, fi_trecv(X.ep, b, sizeof(b), NULL, FI_ADDR_UNSPEC, 0xEC0, 0, &r));
		wait_done(&X, &r, "fuzz: the victim's message at X");
		if (fi_av_insert(X.av, &vs, 1, &av, 0, NULL) != 1)
			die("fi_av_insert");
		POST(&X, fi_tsend(X.ep, b, sizeof(b), NULL, av, 0xEC0, &s));
		wait_done(&X, &s, "fuzz: X's echo");
	}
	say("ok");
	note("fuzz: %ld chunks of random headers and payloads sent (%" PRIu64 " SENDs posted, "
	     "connection %s)", nchunks, q->sends, q->dead ? "closed by the victim" : "open");
}

static void a_s17b(struct raw *q)
{
	static uint8_t p[CHUNK];

	memset(p, 0x5C, sizeof(p));
	expect("ready");
	hdr_send(q, MFI_OP_TAGGED, MFI_F_FIRST, CHUNK, 1024 * 1024, T17, 0, 0, 0, 0, p);
	raw_flush(q);
	say("first");
	expect("done");
}

/* FI_HOSTILE_ONLY=S16,S20 runs those scenarios alone (each can show today's defect by itself). */
static bool want(const char *name)
{
	const char *only = getenv("FI_HOSTILE_ONLY");
	char buf[256], key[32];

	if (!only)
		return true;
	snprintf(buf, sizeof(buf), ",%s,", only);
	snprintf(key, sizeof(key), ",%s,", name);
	return strstr(buf, key) != NULL;
}

/* 21: forged rendezvous announcements, read (or not) by the victim. */
static void a_s21(struct raw *q)
{
	const size_t len = 1024 * 1024;
	struct mroc_mr *m = mroc_mr_alloc(raw_ctx, len, MROC_ACCESS_LOCAL_WRITE |
					  MROC_ACCESS_REMOTE_READ);
	static uint8_t junk[8];
	size_t from[17];
	bool acked = false;

	if (!m)
		die("21: mroc_mr_alloc: %s", strerror(errno));
	fill(mroc_mr_addr(m), len, 21);
	expect("posted");
	mark_all(q, from);
	/* An RTS is header-only: this one is refused, and matches nothing. */
	hdr_send(q, MFI_OP_TAGGED, MFI_F_FIRST | MFI_F_LAST | MFI_F_RNDV, sizeof(junk), len, T21,
		 mroc_mr_rkey(m), 0, 9, 0, junk);
	/* 1 MiB of ours for a 64 KiB receive. */
	hdr_send(q, MFI_OP_TAGGED, MFI_F_FIRST | MFI_F_LAST | MFI_F_RNDV, 0, len, T21,
		 mroc_mr_rkey(m), 0, 7, 0, NULL);
	raw_flush(q);
	while (!acked) {
		raw_poll(q);
		pump();
		for (size_t i = from[0]; i < q->nin; i++)
			if (q->in[i].h.op == MFI_OP_RMA_ACK && q->in[i].h.req_id == 7) {
				if (q->in[i].h.total)
					die("21: the FIN says status %" PRIu64, q->in[i].h.total);
				acked = true;
			}
		check_deadline("21: the victim's FIN");
	}
	say("read");
	/* A region that is not there: the victim's READ fails. */
	hdr_send(q, MFI_OP_TAGGED, MFI_F_FIRST | MFI_F_LAST | MFI_F_RNDV, 0, len, T21B,
		 mroc_mr_rkey(m) ^ 0x5a5a5a5au, 0, 8, 0, NULL);
	raw_flush(q);
	say("bogus");
	expect("done");
	mroc_mr_dereg(m);
}

int attacker(const char *vip, int port, const char *own, long fuzz)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct mroc_ctx_opts o = { .sz = sizeof(o) };
	uint16_t mport;
	struct raw *q;

	role = "attacker";
	deadline = time(NULL) + TIMEOUT_S;
	inet_pton(AF_INET, vip, &sin.sin_addr);
	fab_open(&X);
	xbuf = calloc(1, 4 * 1024 * 1024);
	fill(xbuf + 1024 * 1024, 64 * 1024, 15);	/* what the fuzz scenario reads */
	CHECK(fi_mr_reg(X.domain, xbuf, 4 * 1024 * 1024, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0,
			&xmr, NULL));
	raw_ctx = mroc_open(&o);
	if (!raw_ctx)
		die("mroc_open: %s", strerror(errno));
	X_id = mfi_addr4(X.name.sin_addr.s_addr, ntohs(X.name.sin_port));
	mport = (uint16_t)(X_id.port ^ 0x5555);
	{
		uint32_t mip = 0;

		inet_pton(AF_INET, own, &mip);
		M_id = mfi_addr4(mip, mport);
	}
	for (int i = 0;; i++) {
		ctl = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(ctl, (struct sockaddr *)&sin, sizeof(sin)) == 0)
			break;
		close(ctl);
		if (i > 600)
			die("no victim at %s:%d", vip, port);
		usleep(100 * 1000);
	}
	idle_fn = a_idle;
	a_name();
	say("PEERS %u %u %" PRIu64 " %" PRIu64 " %u %u", mfi_addr_ip4(&X_id), X_id.port, fi_mr_key(xmr),
	    (uint64_t)(uintptr_t)xbuf, mfi_addr_ip4(&M_id), M_id.port);
	pump();

	q = raw_dial(&VA, &M_id);
	if (want("S15"))
		say("S15"), a_s15(q);
	if (want("S16"))
		say("S16"), a_s16(q);
	if (want("S19"))
		say("S19"), a_s19(q);
	if (want("S18"))
		say("S18"), a_s18(q);
	if (want("S17a")) {
		say("S17a"), a_s17a(q);
		q = raw_dial(&VA, &M_id);
	}
	if (want("S20"))
		say("S20"), a_s20();
	if (want("S21"))
		say("S21"), a_s21(q);
	if (want("FUZZ")) {
		q = raw_dial(&VA, &M_id);
		say("FUZZ"), a_fuzz(q, fuzz);
	}
	if (want("S17b"))
		say("S17b"), a_s17b(q);
	say("END");
	for (size_t i = 0; i < nraws; i++) {
		for (size_t k = 0; k < raws[i]->nin; k++)
			free(raws[i]->in[k].p);
		free(raws[i]->in);
		mroc_qp_destroy(raws[i]->qp);
		mroc_mr_dereg(raws[i]->mr);
		free(raws[i]);
	}
	mroc_close(raw_ctx);
	note("done");
	return 0;
}
