// SPDX-License-Identifier: MIT
/*
 * A client whose regions only mrocd maps (end-to-end test helper:
 * test_pinning.sh).  It registers a memfd, then replaces its own view of it
 * with an inaccessible anonymous mapping, and moves data with pread on the
 * memfd and, for writes, a mapping made before the registration (mrocd
 * then seals the memfd against new writable mappings and pwrite, PROTOCOL
 * 11a) whose pages it unmaps (MADV_DONTNEED) after each message.  So every
 * page of the region is mapped by mrocd alone between writes: the kernel's
 * MADV_PAGEOUT (pageout.c, on mrocd) leaves alone pages another process
 * maps too, while DAMON's and memory.reclaim's reclaim do not.
 *
 *   pin_client SOCKET reg BYTES COUNT STOPFILE
 *	register up to COUNT regions of BYTES; print "registered N" and, if
 *	one was refused, "refused: ENAME: text"; hold them until STOPFILE
 *	exists (at most 30 s).  Exit 0 either way.
 *   pin_client SOCKET recv SERVICE SIZE MSGS
 *	listen; take MSGS SEND_IMMs of SIZE bytes (imm: the message number)
 *	and check every byte of each; print "verified N messages, B bytes".
 *	After a third of them, try to punch holes in the region (punch()).
 *   pin_client SOCKET send PEER SERVICE SIZE MSGS [GOFILE]
 *	connect and send them, SLOTS at a time.  With GOFILE, the first third
 *	is a warm-up: once it completed, try to punch holes in the region
 *	(punch()), print "warm" and wait for GOFILE
 *	(at most 30 s) before the rest (the engine's per-QP arrays grow with
 *	the window in the warm-up, a one-time cost, engine/ring.c).
 * recv and send also register their region's memfd a second time, and
 * deregister that, then deregister the region and register its memfd anew,
 * before anything else.
 * The receiver prints "listening" once it listens; both print "ready" once connected.  Exit 1 on any error or bad byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/falloc.h>

#include "mroc/mroc.h"

#define SLOTS		16
#define WAIT_MS		20000

static int die(const char *what, int err)
{
	fprintf(stderr, "pin_client: %s: %s\n", what, mroc_strerror(err));
	return 1;
}

static uint8_t pattern(uint64_t msg, uint64_t j)
{
	return (uint8_t)(msg * 131 + j * 7 + (j >> 8));
}

static void fill(uint8_t *buf, size_t size, uint64_t msg)
{
	for (size_t j = 0; j < size; j++)
		buf[j] = pattern(msg, j);
}

struct region {
	struct mroc_mr *mr;
	int fd;
	uint8_t *base;		/* addresses only: our view of it is gone */
	uint8_t *wr;		/* writable, made before the seal; no page kept mapped */
	size_t len;
};

/* A memfd of len bytes registered with mrocd, then mapped by mrocd alone. */
static int region_make(struct mroc_ctx *ctx, size_t len, unsigned access, bool again,
		       struct region *r)
{
	int err;

	r->fd = memfd_create("mroc-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (r->fd < 0 || ftruncate(r->fd, (off_t)len))
		return -errno;
	r->len = len;
	r->wr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (r->wr == MAP_FAILED)
		return -errno;
	r->mr = mroc_mr_reg_memfd(ctx, r->fd, len, access);
	if (!r->mr)
		return -errno;
	if (again) {
		/*
		 * Its memfd again while the region lives (sealed now: libmroc and
		 * mrocd copy a mapping of it), before the library's view goes
		 * (libmroc copies only its own mapping of the file).
		 */
		struct mroc_mr *mr = mroc_mr_reg_memfd(ctx, r->fd, len / 2, access);

		if (!mr)
			return -errno;
		err = mroc_mr_dereg(mr);
		if (err)
			return err;
		/*
		 * And once no region maps it (a registration cache evicting it):
		 * both kept a page of their mapping (MROC_MR_REG_KEEP_FILE) to copy.
		 */
		err = mroc_mr_dereg(r->mr);
		if (err)
			return err;
		r->mr = mroc_mr_reg_memfd(ctx, r->fd, len, access);
		if (!r->mr)
			return -errno;
	}
	r->base = mroc_mr_addr(r->mr);
	/* Same addresses (the library checks work requests against them), no pages. */
	if (mmap(r->base, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
	    MAP_FAILED)
		return -errno;
	return 0;
}

/*
 * Try to drop every page of the region (its memfd's hole punching, both
 * ways) and print what happened: mrocd seals what it registers, so both
 * must fail with EPERM.  Had they worked, the worker's next write into the
 * region would fault fresh pages in, on mrocd's account (PROTOCOL 11a).
 */
static void punch(struct region *r)
{
	int a = fallocate(r->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)r->len);
	int ea = errno;
	int b = madvise(r->wr, r->len, MADV_REMOVE);
	int eb = errno;

	printf("punch: fallocate %s, MADV_REMOVE %s\n", a ? strerrorname_np(ea) : "done",
	       b ? strerrorname_np(eb) : "done");
	fflush(stdout);
}

/* The next completion that is not a connection event; its status checked. */
static int next_wc(struct mroc_qp *qp, struct mroc_wc *wc)
{
	for (;;) {
		int n = mroc_poll_cq(qp, wc, 1);

		if (n < 0)
			return n;
		if (n == 0) {
			n = mroc_wait_cq(qp, WAIT_MS);
			if (n)
				return n;
			continue;
		}
		if (wc->status != MROC_WC_SUCCESS) {
			fprintf(stderr, "pin_client: completion %d: %s\n", wc->opcode,
				mroc_wc_status_str(wc->status));
			return -EIO;
		}
		if (wc->opcode != MROC_WC_CONNECTED && wc->opcode != MROC_WC_DISCONNECTED)
			return 0;
	}
}

static int do_reg(struct mroc_ctx *ctx, char **argv)
{
	size_t bytes = strtoull(argv[3], NULL, 0);
	int count = atoi(argv[4]), n = 0, err = 0;
	struct region r;

	while (n < count) {
		err = region_make(ctx, bytes, MROC_ACCESS_LOCAL_WRITE, false, &r);
		if (err)
			break;
		n++;
	}
	printf("registered %d\n", n);
	if (err)
		printf("refused: %s: %s\n", strerrorname_np(-err), mroc_strerror(err));
	fflush(stdout);
	for (int i = 0; i < 300 && access(argv[5], F_OK); i++)
		usleep(100000);
	return 0;
}

static int do_recv(struct mroc_qp *qp, struct region *r, size_t size, uint64_t msgs)
{
	uint8_t *want = malloc(size), *got = malloc(size);
	uint64_t seq = 0;
	struct mroc_wc wc;
	int err;

	if (!want || !got)
		return die("malloc", -ENOMEM);
	while (seq < msgs) {
		uint64_t slot;

		if (seq == msgs / 3)	/* the sender's warm-up (below) is over */
			punch(r);
		err = next_wc(qp, &wc);
		if (err)
			return die("receive", err);
		slot = wc.wr_id;
		if (wc.opcode != MROC_WC_RECV || !(wc.flags & MROC_WC_WITH_IMM) ||
		    wc.imm != (uint32_t)seq || wc.byte_len != size || slot >= SLOTS) {
			fprintf(stderr, "pin_client: message %llu: opcode %d imm %u len %u slot %llu\n",
				(unsigned long long)seq, wc.opcode, wc.imm, wc.byte_len,
				(unsigned long long)slot);
			return 1;
		}
		fill(want, size, seq);
		if (pread(r->fd, got, size, (off_t)(slot * size)) != (ssize_t)size)
			return die("pread", -errno);
		for (size_t j = 0; j < size; j++)
			if (got[j] != want[j]) {
				fprintf(stderr, "pin_client: message %llu byte %zu: %#x, want %#x\n",
					(unsigned long long)seq, j, got[j], want[j]);
				return 1;
			}
		err = mroc_post_recv(qp, &(struct mroc_recv_wr){ .wr_id = slot,
			.sg = { r->base + slot * size, (uint32_t)size, mroc_mr_lkey(r->mr) } });
		if (err)
			return die("post_recv", err);
		seq++;
	}
	printf("verified %llu messages, %llu bytes\n", (unsigned long long)seq,
	       (unsigned long long)(seq * size));
	/* Until the sender is done (its last acknowledgement may still be on its way). */
	for (int i = 0; i < 50; i++) {
		int n = mroc_poll_cq(qp, &wc, 1);

		if (n < 0 || (n == 1 && wc.opcode == MROC_WC_DISCONNECTED))
			break;
		if (n == 0)
			usleep(100000);
	}
	free(want);
	free(got);
	return 0;
}

static int do_send(struct mroc_qp *qp, struct region *r, size_t size, uint64_t msgs,
		   const char *go)
{
	uint64_t warm = go ? msgs / 3 : 0;
	uint8_t *buf = malloc(size);
	uint64_t posted = 0, done = 0;
	struct mroc_wc wc;
	int err;

	if (!buf)
		return die("malloc", -ENOMEM);
	while (done < msgs) {
		if (warm && done == warm && posted == warm) {
			punch(r);
			printf("warm\n");
			fflush(stdout);
			for (int i = 0; i < 300 && access(go, F_OK); i++)
				usleep(100000);
			warm = 0;
		}
		while (posted < msgs && posted - done < SLOTS && (!warm || posted < warm)) {
			uint64_t slot = posted % SLOTS;

			fill(buf, size, posted);
			memcpy(r->wr + slot * size, buf, size);
			/* Mapped by mrocd alone again (the page cache keeps the bytes). */
			if (madvise(r->wr, r->len, MADV_DONTNEED))
				return die("madvise", -errno);
			err = mroc_post_send(qp, &(struct mroc_send_wr){
				.wr_id = posted, .opcode = MROC_WR_SEND_IMM,
				.flags = MROC_SEND_SIGNALED, .imm = (uint32_t)posted,
				.sg = { r->base + slot * size, (uint32_t)size, mroc_mr_lkey(r->mr) } });
			if (err)
				return die("post_send", err);
			posted++;
		}
		err = next_wc(qp, &wc);
		if (err)
			return die("send", err);
		done++;
	}
	printf("sent %llu messages\n", (unsigned long long)done);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	struct mroc_qp_attr attr = { .sz = sizeof(attr), .sq_depth = SLOTS, .rq_depth = SLOTS };
	struct mroc_ctx_opts o = { .sz = sizeof(o) };
	bool recv = argc == 6 && !strcmp(argv[2], "recv");
	bool send = (argc == 7 || argc == 8) && !strcmp(argv[2], "send");
	size_t size;
	uint64_t msgs;
	struct mroc_ctx *ctx;
	struct mroc_qp *qp;
	struct region r;
	int err, rc;

	if (!recv && !send && !(argc == 6 && !strcmp(argv[2], "reg"))) {
		fprintf(stderr, "usage: pin_client SOCKET reg BYTES COUNT STOPFILE\n"
				"       pin_client SOCKET recv SERVICE SIZE MSGS\n"
				"       pin_client SOCKET send PEER SERVICE SIZE MSGS [GOFILE]\n");
		return 2;
	}
	o.socket_path = argv[1];
	ctx = mroc_open(&o);
	if (!ctx)
		return die("open", -errno);
	if (!recv && !send) {
		rc = do_reg(ctx, argv);
		mroc_close(ctx);
		return rc;
	}
	size = strtoull(argv[recv ? 4 : 5], NULL, 0);
	msgs = strtoull(argv[recv ? 5 : 6], NULL, 0);
	err = region_make(ctx, SLOTS * size, MROC_ACCESS_LOCAL_WRITE, true, &r);
	if (err)
		return die("region", err);
	qp = mroc_qp_create(ctx, &attr);
	if (!qp)
		return die("create", -errno);
	if (recv) {
		for (uint64_t s = 0; s < SLOTS; s++) {
			err = mroc_post_recv(qp, &(struct mroc_recv_wr){ .wr_id = s,
				.sg = { r.base + s * size, (uint32_t)size, mroc_mr_lkey(r.mr) } });
			if (err)
				return die("post_recv", err);
		}
		err = mroc_qp_listen(qp, strtoull(argv[3], NULL, 0));
		if (!err) {
			/* The sender may connect from now on: before, its REQ is refused. */
			printf("listening\n");
			fflush(stdout);
		}
	} else {
		err = mroc_qp_connect(qp, argv[3], strtoull(argv[4], NULL, 0));
	}
	if (!err)
		err = mroc_qp_wait_connected(qp, WAIT_MS);
	if (err)
		return die("connect", err);
	printf("ready\n");
	fflush(stdout);
	rc = recv ? do_recv(qp, &r, size, msgs) :
		    do_send(qp, &r, size, msgs, argc == 8 ? argv[7] : NULL);
	fflush(stdout);
	mroc_close(ctx);
	return rc;
}
