// SPDX-License-Identifier: MIT
/*
 * fi_hostile: the victim: a libfabric endpoint driven through each scenario; it checks
 * every byte it owns and the provider's counters.
 */
#include "hostile.h"

#define GUARD	(64 * 1024)
static uint8_t *vsrc, *gbuf;		/* gbuf: GUARD | 4 MiB registered | GUARD */
static struct fid_mr *vmr;
static fi_addr_t AX, AM;		/* X and M in the victim's AV */
static uint64_t xkey, xaddr;
static struct fi_mroc_counters c0;

static void v_idle(void)
{
	reap(&V);
}

static void v_marker_post(uint64_t n, uint64_t *buf)
{
	POST(&V, fi_trecv(V.ep, buf, 8, NULL, FI_ADDR_UNSPEC, MARK | n, 0, (void *)(uintptr_t)(MARK | n)));
}

static void v_marker_wait(uint64_t n)
{
	wait_done(&V, (void *)(uintptr_t)(MARK | n), "a marker");
}

static void v_send_name(void)
{
	say("NAME %u %u", V.name.sin_addr.s_addr, ntohs(V.name.sin_port));
}

static void v_s15(void)
{
	static uint64_t mk;
	static int ctx;
	struct fi_mroc_counters c;

	fill(vsrc, 256 * 1024, 15);
	v_marker_post(15, &mk);
	POST(&V, fi_write(V.ep, vsrc, 256 * 1024, NULL, AX, xaddr, xkey, &ctx));
	say("posted");
	expect("sent");
	v_marker_wait(15);
	if (find_done(&ctx))
		die("15: the write to X completed on a forged answer (X has not run)");
	if (!is_pat(vsrc, 256 * 1024, 15, 0))
		die("15: a forged READ_RESP wrote into the write's source buffer");
	c = counters(&V);
	if (V.ops && c.answer_refused < 12)
		die("15: %" PRIu64 " forged answers counted, 12 sent", c.answer_refused);
	note("15: 12 forged answers to a write to X refused (counter %" PRIu64 "), source intact",
	     c.answer_refused);
	say("go");
	if (wait_done(&V, &ctx, "15: the write's real answer")->err)
		die("15: the write to X failed");
	if (count_done(&ctx) != 1)
		die("15: the write completed %d times", count_done(&ctx));
	say("done");
	expect("ok");
	note("15: the write completed once, at X's answer; X's buffer holds it");
}

static void v_s16(void)
{
	static uint64_t mk, mk2;
	static int ctx;
	const size_t len = 3 * 1024 * 1024;

	fill(vsrc, len, 16);
	v_marker_post(16, &mk);
	v_marker_post(160, &mk2);
	expect("withholding");
	POST(&V, fi_write(V.ep, vsrc, len, NULL, AM, 0, 0x77, &ctx));
	say("posted");
	expect("sent");
	v_marker_wait(16);
	if (find_done(&ctx))
		die("16: a write still being sent completed on an early answer");
	note("16: an RMA_ACK for a write not yet sent whole refused (counter %" PRIu64 ")",
	     counters(&V).answer_refused);
	say("ok");
	expect("acked");
	v_marker_wait(160);
	if (wait_done(&V, &ctx, "16: the write's answer")->err)
		die("16: the write failed");
	for (int i = 0; i < 50; i++)
		reap(&V);
	if (count_done(&ctx) != 1)
		die("16: the write completed %d times", count_done(&ctx));
	say("done");
	note("16: the 3 MiB write landed whole (checked by the peer) and completed once");
}

static void v_s19(void)
{
	static uint64_t mk;
	const size_t len = 256 * 1024, rlen = 4 * 1024 * 1024;
	uint8_t *b = malloc(len), *b3 = malloc(rlen);
	struct fid_mr *mr, *mr3;
	struct fi_mroc_counters c;

	memset(b, 0x11, len);
	CHECK(fi_mr_reg(V.domain, b, len, FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
	v_marker_post(19, &mk);
	say("K19 %" PRIu64 " %" PRIu64, fi_mr_key(mr), (uint64_t)(uintptr_t)b);
	expect("first");
	while (!all(b, CHUNK, 0x22)) {
		reap(&V);
		check_deadline("19: the write's first chunk");
	}
	CHECK(fi_close(&mr->fid));
	memset(b, 0x33, len);
	say("closed");
	expect("sent");
	v_marker_wait(19);
	if (!all(b, len, 0x33))
		die("19: a remote write went on into a region closed midway");
	expect("ack");
	c = counters(&V);
	note("19: the rest of a write to a closed region not written (mr_gone %" PRIu64 ")",
	     c.mr_gone);

	memset(b3, 0x44, rlen);
	CHECK(fi_mr_reg(V.domain, b3, rlen, FI_REMOTE_READ, 0, 0, 0, &mr3, NULL));
	say("K19r %" PRIu64 " %" PRIu64, fi_mr_key(mr3), (uint64_t)(uintptr_t)b3);
	expect("some");
	CHECK(fi_close(&mr3->fid));
	memset(b3, 0xEE, rlen);	/* what the application keeps there now is not the peer's */
	say("closed");
	expect("ok");
	note("19: a read of a region closed midway ended with ABORT, nothing read after (mr_gone %"
	     PRIu64 ")", counters(&V).mr_gone);
	free(b);
	free(b3);
}

static void v_s18(void)
{
	static uint64_t mk;
	static int peek, disc;
	struct mallinfo2 m0, m1;

	v_marker_post(18, &mk);
	for (int i = 0; i < 100; i++)
		reap(&V);
	m0 = mallinfo2();
	say("ready");
	expect("first");
	/* Until the message shows in the unexpected queue. */
	for (;;) {
		struct fi_msg_tagged m = { .tag = T18, .context = &peek, .addr = FI_ADDR_UNSPEC };
		struct done *d;

		POST(&V, fi_trecvmsg(V.ep, &m, FI_PEEK));
		d = wait_done(&V, &peek, "18: peek");
		if (!d->err)
			break;
		d->ctx = NULL;
		check_deadline("18: the message's first chunk");
	}
	{
		struct fi_msg_tagged m = { .tag = T18, .context = &disc, .addr = FI_ADDR_UNSPEC };

		POST(&V, fi_trecvmsg(V.ep, &m, FI_PEEK | FI_CLAIM | FI_DISCARD));
		if (wait_done(&V, &disc, "18: discard")->err)
			die("18: FI_PEEK|FI_CLAIM|FI_DISCARD found nothing");
	}
	say("discarded");
	expect("sent");
	v_marker_wait(18);
	m1 = mallinfo2();
	if (m1.hblkhd > m0.hblkhd + 1024 * 1024)
		die("18: %zu bytes of large blocks more than before an 8 MiB message was discarded",
		    m1.hblkhd - m0.hblkhd);
	for (size_t i = 0; i < ndone; i++)
		if (dones[i].tag == T18 && dones[i].ctx != &peek && dones[i].ctx != &disc)
			die("18: the discarded message was delivered");
	note("18: an 8 MiB message discarded while arriving: its buffer freed (large blocks %zd -> %zd)",
	     (ssize_t)m0.hblkhd, (ssize_t)m1.hblkhd);
}

/* fi_close with work outstanding: each of it ends FI_ECANCELED, then a new endpoint. */
static void v_s17a(void)
{
	static int s[5], r[2];
	static uint8_t rb[2][4096];
	const size_t len = 1024 * 1024;

	fill(vsrc, 4 * len, 17);
	expect("withholding");
	for (int i = 0; i < 3; i++)
		POST(&V, fi_tsend(V.ep, vsrc + i * len, len, NULL, AM, 0x17, &s[i]));
	POST(&V, fi_write(V.ep, vsrc + 3 * len, len, NULL, AM, 0, 0x77, &s[3]));
	POST(&V, fi_read(V.ep, gbuf + GUARD, 4096, NULL, AM, 0, 0x77, &s[4]));
	for (int i = 0; i < 2; i++)
		POST(&V, fi_trecv(V.ep, rb[i], sizeof(rb[i]), NULL, FI_ADDR_UNSPEC, 0x99, 0, &r[i]));
	say("posted");
	expect("stalled");
	CHECK(fi_close(&V.ep->fid));
	V.ep = NULL;
	reap(&V);
	/* The first sends may have gone out whole before the credits ran out; the rest cannot. */
	for (int i = 0; i < 5; i++) {
		struct done *d = find_done(&s[i]);

		if (!d || count_done(&s[i]) != 1 || (d->err != FI_ECANCELED && (i >= 2 || d->err)))
			die("17: operation %d after fi_close: %s (%d completions)", i,
			    d ? fi_strerror(d->err) : "no completion", count_done(&s[i]));
	}
	for (int i = 0; i < 2; i++) {
		struct done *d = find_done(&r[i]);

		if (!d || d->err != FI_ECANCELED)
			die("17: receive %d after fi_close: %s", i,
			    d ? fi_strerror(d->err) : "no completion");
	}
	note("17: fi_close with 3 sends, a write, a read and 2 receives outstanding: each completed "
	     "once, the unsent ones FI_ECANCELED");
	ep_open(&V);
	v_send_name();
}

static void v_s20(void)
{
	static uint8_t got[64], mine[64] = "for X only";
	static int rc20, sctx;
	struct fi_mroc_counters c;

	POST(&V, fi_trecv(V.ep, got, sizeof(got), NULL, AX, T20, 0, &rc20));
	say("ready");
	expect("forged");
	/* The forger's HELLO and message are in; a provider that trusts HELLO has taken them. */
	for (time_t until = time(NULL) + 3; time(NULL) < until;) {
		reap(&V);
		c = counters(&V);
		if (find_done(&rc20) || (V.ops && c.hello_refused))
			break;
	}
	if (find_done(&rc20) && !strcmp((char *)got, "forged"))
		die("20: a message from a connection claiming to be X matched a receive directed at X");
	POST(&V, fi_tsend(V.ep, mine, sizeof(mine), NULL, AX, T20B, &sctx));
	wait_done(&V, &sctx, "20: the send to X");
	say("sent");
	expect("genuine");
	if (wait_done(&V, &rc20, "20: X's message")->err || strcmp((char *)got, "genuine"))
		die("20: the receive directed at X got \"%.16s\"", got);
	expect("ok");
	c = counters(&V);
	if (V.ops && c.hello_refused < 1)
		die("20: the false claim was not counted");
	note("20: a connection claiming to be X refused (hello_refused %" PRIu64 "): the message to X "
	     "reached X only, the receive from X got X's", c.hello_refused);
}

static void v_fuzz(void)
{
	static uint8_t rb[32][4096], rdbuf[GUARD * 3];
	static int rctx[32], rd;
	uint8_t *reg = gbuf + GUARD;
	struct fi_mroc_counters c;

	memset(gbuf, 0xAB, GUARD);
	memset(reg + 4 * 1024 * 1024, 0xAB, GUARD);
	fill(vsrc, 1024 * 1024, 99);
	memset(rdbuf, 0xCD, sizeof(rdbuf));
	for (int i = 0; i < 32; i++) {
		memset(rb[i], 0, sizeof(rb[i]));
		if (i % 2)
			POST(&V, fi_recv(V.ep, rb[i], sizeof(rb[i]) / 2, NULL, FI_ADDR_UNSPEC, &rctx[i]));
		else
			POST(&V, fi_trecv(V.ep, rb[i], sizeof(rb[i]) / 2, NULL, FI_ADDR_UNSPEC, 0, 0,
					  &rctx[i]));
	}
	/* A read from X outstanding while forged answers fly (X is not running). */
	POST(&V, fi_read(V.ep, rdbuf + GUARD, GUARD, NULL, AX, xaddr + 1024 * 1024, xkey, &rd));
	{
		static uint64_t mk;

		v_marker_post(0xFF, &mk);
		say("KV %" PRIu64 " %" PRIu64, fi_mr_key(vmr), (uint64_t)(uintptr_t)reg);
		say("ready");
		v_marker_wait(0xFF);
	}
	if (!all(gbuf, GUARD, 0xAB) || !all(reg + 4 * 1024 * 1024, GUARD, 0xAB))
		die("fuzz: bytes outside the registered region changed");
	for (int i = 0; i < 32; i++)
		if (!all(rb[i] + sizeof(rb[i]) / 2, sizeof(rb[i]) / 2, 0))
			die("fuzz: a receive's buffer written past its length");
	if (!all(rdbuf, GUARD, 0xCD) || !all(rdbuf + 2 * GUARD, GUARD, 0xCD))
		die("fuzz: bytes around a read's buffer changed");
	if (find_done(&rd))
		die("fuzz: the read from X completed on a forged answer");
	c = counters(&V);
	note("fuzz: survived; chunks %" PRIu64 ", bad %" PRIu64 ", answers refused %" PRIu64
	     ", mr_gone %" PRIu64 ", verified %" PRIu64 ", hello refused %" PRIu64,
	     c.rx_chunks, c.bad_msgs, c.answer_refused, c.mr_gone, c.verified, c.hello_refused);
	say("go");
	if (wait_done(&V, &rd, "fuzz: the read from X")->err)
		die("fuzz: the read from X failed");
	if (!is_pat(rdbuf + GUARD, GUARD, 15, 0))
		die("fuzz: the read from X brought the wrong bytes");
	/* A verified round trip with X. */
	{
		static int s, r;
		static uint8_t back[1024 * 1024];

		POST(&V, fi_trecv(V.ep, back, sizeof(back), NULL, AX, 0xEC0, 0, &r));
		POST(&V, fi_tsend(V.ep, vsrc, 1024 * 1024, NULL, AX, 0xEC0, &s));
		say("echo");
		if (wait_done(&V, &r, "fuzz: X's echo")->err || !is_pat(back, sizeof(back), 99, 0))
			die("fuzz: X's echo is not what was sent");
		wait_done(&V, &s, "fuzz: the send to X");
	}
	expect("ok");
	note("fuzz: afterwards a 1 MiB round trip with X verified, the read from X verified");
}

static void v_s17b(void)
{
	static uint8_t b[1024 * 1024];
	static int r;
	struct done *d;

	memset(b, 0, sizeof(b));
	POST(&V, fi_trecv(V.ep, b, sizeof(b), NULL, FI_ADDR_UNSPEC, T17, 0, &r));
	say("ready");
	expect("first");
	while (!all(b, 1000, 0x5C)) {
		reap(&V);
		check_deadline("17: the first chunk");
	}
	CHECK(fi_close(&V.ep->fid));
	V.ep = NULL;
	reap(&V);
	d = find_done(&r);
	if (!d || d->err != FI_ECANCELED)
		die("17: a receive half filled when its endpoint closed: %s",
		    d ? fi_strerror(d->err) : "no completion");
	note("17: fi_close with a message half received into a posted receive: FI_ECANCELED");
	say("done");
}

/* 21: forged rendezvous announcements into receives in the registered (zero-copy) region. */
static void v_s21(void)
{
	const size_t len = 64 * 1024;
	uint8_t *reg = gbuf + GUARD, *t = reg + 1024 * 1024, *tb = reg + 2 * 1024 * 1024;
	static int r1, r2;
	struct fi_mroc_counters c1 = counters(&V), c2;
	struct done *d;

	memset(t - GUARD, 0xAB, len + 2 * GUARD);
	memset(tb - GUARD, 0xAB, len + 2 * GUARD);
	POST(&V, fi_trecv(V.ep, t, len, NULL, FI_ADDR_UNSPEC, T21, 0, &r1));
	POST(&V, fi_trecv(V.ep, tb, len, NULL, FI_ADDR_UNSPEC, T21B, 0, &r2));
	say("posted");
	expect("read");
	d = wait_done(&V, &r1, "21: the receive of the announced 1 MiB");
	if (d->err != FI_ETRUNC)
		die("21: a 64 KiB receive of a 1 MiB rendezvous message: %s, not FI_ETRUNC",
		    fi_strerror(d->err));
	if (!is_pat(t, len, 21, 0))
		die("21: the receive does not hold the first 64 KiB of the announced region");
	if (!all(t - GUARD, GUARD, 0xAB) || !all(t + len, GUARD, 0xAB))
		die("21: bytes around the receive changed");
	c2 = counters(&V);
	if (V.ops && c2.bad_msgs == c1.bad_msgs)
		die("21: an RTS with a payload was not refused");
	expect("bogus");
	d = wait_done(&V, &r2, "21: the receive of a message in no region");
	if (!d->err)
		die("21: a rendezvous READ of no region completed its receive");
	if (!all(tb - GUARD, len + 2 * GUARD, 0xAB))
		die("21: a failed rendezvous READ wrote bytes");
	note("21: forged RTSs: one with a payload refused, 64 KiB of 1 MiB read (FI_ETRUNC, "
	     "nothing around it touched), a READ of no region failed its receive (%s)",
	     fi_strerror(d->err));
	say("done");
}

int victim(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in xs, ms;
	char *l;

	role = "victim";
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&sin, sizeof(sin)) || listen(ls, 1))
		die("control port: %s", strerror(errno));
	fab_open(&V);
	vsrc = malloc(4 * 1024 * 1024);
	gbuf = malloc(4 * 1024 * 1024 + 2 * GUARD);
	CHECK(fi_mr_reg(V.domain, gbuf + GUARD, 4 * 1024 * 1024, FI_REMOTE_READ | FI_REMOTE_WRITE,
			0, 0, 0, &vmr, NULL));
	ctl = accept(ls, NULL, NULL);
	if (ctl < 0)
		die("accept: %s", strerror(errno));
	deadline = time(NULL) + TIMEOUT_S;
	idle_fn = v_idle;
	v_send_name();
	l = hear();
	{
		unsigned xip, xport, mip, mport;

		if (sscanf(l, "PEERS %u %u %" SCNu64 " %" SCNu64 " %u %u", &xip, &xport, &xkey, &xaddr,
			   &mip, &mport) != 6)
			die("bad PEERS line: %s", l);
		xs = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = xip,
					   .sin_port = htons(xport) };
		ms = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = mip,
					   .sin_port = htons(mport) };
	}
	if (fi_av_insert(V.av, &xs, 1, &AX, 0, NULL) != 1 || fi_av_insert(V.av, &ms, 1, &AM, 0, NULL) != 1)
		die("fi_av_insert");
	c0 = counters(&V);
	if (!V.ops)
		note("the provider has no counters (%s): those checks skipped", FI_MROC_OPS_1);
	while (strcmp((l = hear()), "END")) {
		if (!strcmp(l, "S15"))
			v_s15();
		else if (!strcmp(l, "S16"))
			v_s16();
		else if (!strcmp(l, "S19"))
			v_s19();
		else if (!strcmp(l, "S18"))
			v_s18();
		else if (!strcmp(l, "S17a"))
			v_s17a();
		else if (!strcmp(l, "S20"))
			v_s20();
		else if (!strcmp(l, "S21"))
			v_s21();
		else if (!strcmp(l, "FUZZ"))
			v_fuzz();
		else if (!strcmp(l, "S17b"))
			v_s17b();
		else
			die("unknown scenario %s", l);
		deadline = time(NULL) + TIMEOUT_S;
	}
	note("all scenarios held");
	return 0;
}
