// SPDX-License-Identifier: MIT
/*
 * Seed corpora for the fuzz harnesses, from real traffic:
 *
 *   gen_seeds OUTDIR [CONFIG...]
 *
 * OUTDIR/fuzz_wire/: every packet two engines (fuzz_pair.h) exchange while
 * they connect, WRITE, WRITE with immediate, SEND, READ and disconnect;
 * OUTDIR/fuzz_engine_rx/: each of those exchanges as one input (records in
 * fuzz_pair.h's format), and each packet alone; OUTDIR/fuzz_client/: the
 * control conversations libmroc has with mrocd (fuzz_client.h's format);
 * OUTDIR/fuzz_config/: the CONFIG files as they are, and without their
 * comment-only lines.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "abi.h"
#include "mroc/mroc.h"

#include "fuzz_client.h"
#include "fuzz_pair.h"

#define MAX_PKTS	4096

struct recording {
	unsigned n;
	struct pair_pkt pkt[MAX_PKTS];
};

static const char *outdir;
static unsigned nwire;

static bool record(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct recording *r = arg;

	(void)p;
	if (r->n < MAX_PKTS)
		r->pkt[r->n++] = *pkt;
	return true;
}

static FILE *open_seed(const char *harness, const char *fmt, ...)
{
	char name[128], path[512];
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	snprintf(path, sizeof(path), "%s/%s", outdir, harness);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, harness, name);
	f = fopen(path, "wb");
	if (!f) {
		perror(path);
		exit(1);
	}
	return f;
}

static void put_record(FILE *f, const struct pair_pkt *pkt)
{
	/* Delivered to the side that did not send it, then both sides pump. */
	uint8_t hdr[FUZZ_REC_HDR] = {
		(uint8_t)((pkt->from == PAIR_A ? FUZZ_TO_B : 0) | FUZZ_PUMP),
		(uint8_t)(pkt->sport >> 8), (uint8_t)pkt->sport,
		(uint8_t)(pkt->len >> 8), (uint8_t)pkt->len,
	};

	fwrite(hdr, 1, sizeof(hdr), f);
	fwrite(pkt->data, 1, pkt->len, f);
}

static void write_exchange(const char *name, const struct recording *r)
{
	FILE *f = open_seed("fuzz_engine_rx", "%s", name);

	for (unsigned i = 0; i < r->n; i++)
		put_record(f, &r->pkt[i]);
	fclose(f);
	for (unsigned i = 0; i < r->n; i++) {
		FILE *w = open_seed("fuzz_wire", "pkt-%04u", nwire);

		fwrite(r->pkt[i].data, 1, r->pkt[i].len, w);
		fclose(w);
		w = open_seed("fuzz_engine_rx", "pkt-%04u", nwire++);
		put_record(w, &r->pkt[i]);
		fclose(w);
	}
}

static void engine_seeds(void)
{
	static struct recording r;
	struct engine_config ca, cb;
	struct fuzz_pair f;
	struct {
		const char *name;
		uint8_t opcode;
		uint32_t len;
	} ops[] = {
		{ "write", ENGINE_WR_WRITE, 5000 },
		{ "write-imm", ENGINE_WR_WRITE_IMM, 1500 },
		{ "send", ENGINE_WR_SEND, 3000 },
		{ "send-imm", ENGINE_WR_SEND_IMM, 64 },
		{ "read", ENGINE_WR_READ, 6000 },
	};

	/* The connection itself: recorded on a pair set up alike. */
	r.n = 0;
	fuzz_pair_config(&ca, &cb, MROC_SEC_NONE);
	f = (struct fuzz_pair){ .p = pair_new(&ca, &cb) };
	f.p->filter = record;
	f.p->filter_arg = &r;
	pair_connect(f.p, NULL, NULL, FUZZ_SERVICE);
	pair_free(f.p);
	write_exchange("connect", &r);

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct engine_wr wr = {
			.wr_id = 1, .opcode = ops[i].opcode, .flags = ENGINE_WR_SIGNALED,
			.len = ops[i].len, .raddr = 8192, .imm = 0x1234,
		};

		f = (struct fuzz_pair){ 0 };	/* a new pair each, as the harness's check has */
		fuzz_pair_setup(&f, MROC_SEC_NONE);
		wr.lkey = f.mem[PAIR_A]->lkey;
		wr.rkey = f.mem[PAIR_B]->rkey;
		pair_mem_fill(f.mem[PAIR_A], 7);
		r.n = 0;
		f.p->filter = record;
		f.p->filter_arg = &r;
		pair_post(f.p, PAIR_A, &wr);
		pair_run_for(f.p, 5 * PAIR_MS);
		engine_qp_disconnect(f.p->s[PAIR_A].eng, f.p->s[PAIR_A].qpn, f.p->now);
		pair_run_for(f.p, 5 * PAIR_MS);
		write_exchange(ops[i].name, &r);
		pair_free(f.p);
	}
}

/* ---- client conversations (fuzz_client.h) ---------------------------------------- */

static void put_msg(FILE *f, const void *msg, size_t len, int nfds, int kinds)
{
	uint8_t hdr[4] = { FC_MSG, (uint8_t)nfds, (uint8_t)kinds, (uint8_t)len };

	fwrite(hdr, 1, sizeof(hdr), f);
	fwrite(msg, 1, len, f);
}

static void put_ring(FILE *f, int ring, const void *entry, size_t len)
{
	uint8_t hdr[4] = { FC_RING, 0, (uint8_t)ring, 1 }, e[FC_ENTRY] = { 0 };

	memcpy(e, entry, len);
	fwrite(hdr, 1, sizeof(hdr), f);
	fwrite(e, 1, sizeof(e), f);
}

#define MSG(t, T, ...)	(struct T){ .h = { .type = (t), .len = sizeof(struct T) }, __VA_ARGS__ }

/* What libmroc says to mrocd for a QP that writes, receives and is destroyed. */
void client_seeds(const char *dir)
{
	uint32_t sq_off, rq_off, cq_off;
	struct mroc_msg_hello hello = MSG(MROC_MSG_HELLO, mroc_msg_hello,
					  .abi_version = MROC_ABI_VERSION);
	struct mroc_msg_mr_reg mr = MSG(MROC_MSG_MR_REG, mroc_msg_mr_reg, .len = FC_MEMFD_LEN,
					.access = MROC_ACCESS_LOCAL_WRITE |
						  MROC_ACCESS_REMOTE_WRITE);
	struct mroc_msg_qp_create qc = MSG(MROC_MSG_QP_CREATE, mroc_msg_qp_create,
					   .sq_entries = 16, .rq_entries = 16, .cq_entries = 64);
	struct mroc_msg_qp_listen ql = MSG(MROC_MSG_QP_LISTEN, mroc_msg_qp_listen,
					   .qpn = 0, .service_id = 4242);
	struct mroc_msg_qp_connect qn = MSG(MROC_MSG_QP_CONNECT, mroc_msg_qp_connect,
					    .qpn = 0, .family = AF_INET, .addr = { 10, 0, 0, 2 },
					    .service_id = 4242);
	struct mroc_msg_qp_destroy qd = MSG(MROC_MSG_QP_DESTROY, mroc_msg_qp_destroy, .qpn = 0);
	struct mroc_msg_mr_dereg md = MSG(MROC_MSG_MR_DEREG, mroc_msg_mr_dereg, .lkey = 0);
	struct mroc_sqe sqe = { .wr_id = 1, .opcode = MROC_WR_WRITE, .flags = MROC_SEND_SIGNALED,
				.lkey = 1, .len = 4096, .rkey = 0x1000, .raddr = 0 };
	struct mroc_rqe rqe = { .wr_id = 2, .lkey = 1, .len = 4096 };
	struct engine_cqe cqe = { .wr_id = 1, .opcode = ENGINE_WC_WRITE };
	uint8_t tick[2] = { FC_TICK, 3 }, cq[2] = { FC_CQE, 0 };
	FILE *f;

	outdir = dir;
	qc.region_len = mroc_shm_layout(16, 16, 64, &sq_off, &rq_off, &cq_off);
	for (int v = 0; v < 3; v++) {
		f = open_seed("fuzz_client", "session-%d", v);
		put_msg(f, &hello, sizeof(hello), 1, FC_FD_EVENTFD);
		put_msg(f, &mr, sizeof(mr), 1, FC_FD_MEMFD);
		put_msg(f, &qc, sizeof(qc), 3, FC_FD_RING | FC_FD_EVENTFD << 2 | FC_FD_EVENTFD << 4);
		if (v == 0)
			put_msg(f, &ql, sizeof(ql), 0, 0);
		else
			put_msg(f, &qn, sizeof(qn), 0, 0);
		put_ring(f, 1, &rqe, sizeof(rqe));
		put_ring(f, 0, &sqe, sizeof(sqe));
		fwrite(cq, 1, sizeof(cq), f);
		fwrite(&cqe, 1, sizeof(cqe), f);
		put_ring(f, 2, &cqe, 0);
		fwrite(tick, 1, sizeof(tick), f);
		if (v == 2) {
			put_msg(f, &qd, sizeof(qd), 0, 0);
			put_msg(f, &md, sizeof(md), 0, 0);
		}
		fclose(f);
	}
	/* An application's memfd (MROC_MR_REG_KEEP_FILE) registered, deregistered, again. */
	f = open_seed("fuzz_client", "keep-file");
	mr.flags = MROC_MR_REG_KEEP_FILE;
	put_msg(f, &hello, sizeof(hello), 1, FC_FD_EVENTFD);
	put_msg(f, &mr, sizeof(mr), 1, FC_FD_MEMFD);
	put_msg(f, &md, sizeof(md), 0, 0);
	put_msg(f, &mr, sizeof(mr), 1, FC_FD_MEMFD);
	fclose(f);
}

/*
 * Each CONFIG as it is (conf-N), and again without its comment-only and blank
 * lines (conf-N-bare): the same keys and values in a tenth of the bytes, so
 * the inputs fuzz_config mutates most are a few KiB, not 17 (each input is
 * parsed, dumped and parsed again).
 */
static void config_seeds(int n, char **paths)
{
	for (int i = 0; i < n; i++) {
		FILE *in = fopen(paths[i], "rb"), *out, *bare;
		char line[4096];

		if (!in) {
			perror(paths[i]);
			exit(1);
		}
		out = open_seed("fuzz_config", "conf-%d", i);
		bare = open_seed("fuzz_config", "conf-%d-bare", i);
		while (fgets(line, sizeof(line), in)) {
			const char *p = line + strspn(line, " \t");

			fputs(line, out);
			if (*p != '#' && *p != '\n' && *p)
				fputs(line, bare);
		}
		fclose(in);
		fclose(out);
		fclose(bare);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: gen_seeds OUTDIR [CONFIG...]\n");
		return 2;
	}
	outdir = argv[1];
	if (mkdir(outdir, 0755) && errno != EEXIST) {
		perror(outdir);
		return 1;
	}
	engine_seeds();
	client_seeds(outdir);
	config_seeds(argc - 2, argv + 2);
	printf("gen_seeds: %u packets\n", nwire);
	return 0;
}
