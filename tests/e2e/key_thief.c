// SPDX-License-Identifier: MIT
/*
 * Another client's keys (#24, "the dead client's lkeys"; tests/e2e/test_stale_keys.sh).
 * A thief that learned a victim's local and remote keys names the victim's
 * region in its own work requests, while the victim lives and after it died
 * (when a newer client's region may sit in the victim's old slot).  libmroc
 * refuses an lkey that is not the context's own before it reaches mrocd, so
 * the thief writes its work requests into the rings itself, as a hostile
 * client does; mrocd must check them.
 *
 *   key_thief hold SOCKET DIR NAME BYTE [SERVICE N]
 *       a 64 KiB region filled with BYTE, every access right; with SERVICE,
 *       N QPs listen on it; writes "lkey rkey" to DIR/NAME.keys; once
 *       DIR/NAME.check exists, checks the region: BYTE everywhere, except
 *       that the check file's line "OFF LEN B" (if any) says bytes
 *       OFF..OFF+LEN-1 must be B; prints "NAME: 65536 bytes as expected" and
 *       holds on until killed (the test kills a victim with SIGKILL: a
 *       client that dies without a word), or exits 1 at the first wrong byte
 *   key_thief local SOCKET SERVICE PEER DIR PEERNAME VICTIM...
 *       one QP connected to PEER's SERVICE (DIR/PEERNAME.keys: that region's
 *       keys); for each VICTIM (DIR/VICTIM.keys), from its own QP: WRITE and
 *       SEND from the victim's region, READ and both atomics into it, a RECV
 *       into it: each must complete with MROC_WC_LOC_PROT_ERR; then a WRITE
 *       of 16 bytes of 0x5a from its own region to the peer's offset 0 must
 *       succeed on the same QP
 *   key_thief remote SOCKET SERVICE PEER DIR VICTIM... -- OWNER
 *       for each VICTIM, each on a fresh QP to PEER's SERVICE (a listener of
 *       another client than the victim): WRITE, READ and FETCH_ADD naming the
 *       victim's rkey must complete with MROC_WC_REM_ACCESS_ERR, and the READ's
 *       and the FETCH_ADD's local bytes stay as they were; then a WRITE of 16
 *       bytes of 0x3c to OWNER's rkey (the listener's own region) at offset 0
 *       must succeed
 * Exit 0 when everything behaved; the failures say which request and what came.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"	/* libclient's: the rings, written here by hand */

#define REGION		65536
#define OWN		4096
#define WAIT_MS		20000

static int fail(const char *what, int err)
{
	fprintf(stderr, "key_thief: %s: %s\n", what, err ? mroc_strerror(err) : "failed");
	return 1;
}

static struct mroc_ctx *open_ctx(const char *sock)
{
	struct mroc_ctx_opts o = { .sz = sizeof(o), .socket_path = sock };

	return mroc_open(&o);
}

static const char *wc_name(int st)
{
	static const char *const n[] = { "SUCCESS", "LOC_LEN_ERR", "LOC_PROT_ERR",
		"REM_ACCESS_ERR", "REM_INV_REQ_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR",
		"FLUSH_ERR", "CONNECT_ERR", "BAD_WR" };

	return st >= 0 && st < (int)(sizeof(n) / sizeof(n[0])) ? n[st] : "?";
}

/* DIR/NAME.keys, written whole by rename: lkey and rkey. */
static int read_keys(const char *dir, const char *name, uint32_t *lkey, uint32_t *rkey)
{
	char path[512];
	FILE *f = NULL;
	int n;

	snprintf(path, sizeof(path), "%s/%s.keys", dir, name);
	for (int i = 0; i < WAIT_MS / 100 && !(f = fopen(path, "r")); i++)
		usleep(100000);
	if (!f) {
		fprintf(stderr, "key_thief: no %s\n", path);
		return -ENOENT;
	}
	n = fscanf(f, "%" SCNu32 " %" SCNu32, lkey, rkey);
	fclose(f);
	return n == 2 ? 0 : -EINVAL;
}

static int write_keys(const char *dir, const char *name, struct mroc_mr *mr)
{
	char tmp[512], path[512];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/%s.keys.tmp", dir, name);
	snprintf(path, sizeof(path), "%s/%s.keys", dir, name);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%" PRIu32 " %" PRIu32 "\n", mroc_mr_lkey(mr), mroc_mr_rkey(mr));
	if (fclose(f) || rename(tmp, path))
		return -errno;
	return 0;
}

/*
 * The next completion of a work request (connection events skipped: a
 * remote access error also ends the QP, and either may come first): its
 * status, or -ETIMEDOUT.
 */
static int next_wc(struct mroc_qp *qp, struct mroc_wc *wc)
{
	for (int waited = 0; waited < WAIT_MS; waited += 100) {
		int n = mroc_poll_cq(qp, wc, 1);

		if (n < 0)
			return n;
		if (n && wc->opcode != MROC_WC_CONNECTED && wc->opcode != MROC_WC_DISCONNECTED &&
		    wc->opcode != MROC_WC_EVENT_ERROR)
			return wc->status;
		if (!n)
			mroc_wait_cq(qp, 100);
	}
	return -ETIMEDOUT;
}

static int hold(const char *sock, const char *dir, const char *name, uint8_t byte,
		uint64_t service, int nqp)
{
	struct mroc_qp_attr attr = { .sz = sizeof(attr) };
	struct mroc_ctx *ctx = open_ctx(sock);
	uint64_t off = 0, len = 0;
	int want = byte;
	char path[512];
	struct mroc_mr *mr;
	uint8_t *b;
	FILE *f;

	if (!ctx)
		return fail("open", -errno);
	mr = mroc_mr_alloc(ctx, REGION, MROC_ACCESS_LOCAL_WRITE | MROC_ACCESS_REMOTE_WRITE |
			   MROC_ACCESS_REMOTE_READ | MROC_ACCESS_REMOTE_ATOMIC);
	if (!mr)
		return fail("mr", -errno);
	b = mroc_mr_addr(mr);
	memset(b, byte, REGION);
	for (int i = 0; i < nqp; i++) {
		struct mroc_qp *qp = mroc_qp_create(ctx, &attr);

		if (!qp || mroc_qp_listen(qp, service))
			return fail("listen", -errno);
	}
	if (write_keys(dir, name, mr))
		return fail("keys file", -errno);
	snprintf(path, sizeof(path), "%s/%s.check", dir, name);
	while (!(f = fopen(path, "r")))
		usleep(100000);	/* the test kills us, or tells us to check */
	if (fscanf(f, "%" SCNu64 " %" SCNu64 " %i", &off, &len, &want) != 3)
		len = 0;
	fclose(f);
	for (uint64_t i = 0; i < REGION; i++) {
		uint8_t e = i >= off && i - off < len ? (uint8_t)want : byte;

		if (b[i] != e) {
			fprintf(stderr, "key_thief: %s: byte %" PRIu64 " is 0x%02x, expected 0x%02x\n",
				name, i, b[i], e);
			return 1;
		}
	}
	printf("%s: %d bytes as expected\n", name, REGION);
	fflush(stdout);
	for (;;)
		pause();
}

/*
 * A work request written into the rings as a hostile client writes it:
 * whatever lkey and offset it likes, no check of libmroc's in the way.
 */
static void post_raw(struct mroc_qp *qp, bool recv, const struct mroc_sqe *s)
{
	uint64_t one = 1;

	if (recv) {
		struct mroc_rqe r = { .wr_id = s->wr_id, .lkey = s->lkey, .laddr = s->laddr,
				      .len = s->len };

		memcpy(ring_prod_slot(&qp->rq), &r, sizeof(r));
		ring_prod_commit(&qp->rq, 1);
	} else {
		memcpy(ring_prod_slot(&qp->sq), s, sizeof(*s));
		ring_prod_commit(&qp->sq, 1);
	}
	/* Rung every time: the test is not about doorbell economy. */
	if (write(qp->doorbell_fd, &one, sizeof(one)) < 0)
		perror("key_thief: doorbell");
}

static struct mroc_qp *connect_qp(struct mroc_ctx *ctx, const char *peer, uint64_t service)
{
	struct mroc_qp_attr attr = { .sz = sizeof(attr) };
	struct mroc_qp *qp = mroc_qp_create(ctx, &attr);
	int err;

	if (!qp)
		return NULL;
	err = mroc_qp_connect(qp, peer, service);
	if (!err)
		err = mroc_qp_wait_connected(qp, WAIT_MS);
	if (err) {
		errno = -err;
		return NULL;
	}
	return qp;
}

/* One request, its completion's status; a mismatch is reported. */
static int expect(struct mroc_qp *qp, bool recv, const struct mroc_sqe *s, int want,
		  const char *what)
{
	struct mroc_wc wc = { 0 };
	int st;

	post_raw(qp, recv, s);
	st = next_wc(qp, &wc);
	if (st == want && wc.wr_id == s->wr_id)
		return 0;
	fprintf(stderr, "key_thief: %s: completion %s (%d, wr_id %" PRIu64 "), expected %s\n",
		what, st < 0 ? mroc_strerror(st) : wc_name(st), st, wc.wr_id, wc_name(want));
	return 1;
}

/* 16 bytes of own's start to the peer's offset 0 under rkey: must succeed. */
static int own_write(struct mroc_qp *qp, struct mroc_mr *own, uint32_t rkey, const char *what)
{
	const struct mroc_sqe ok = { .wr_id = 9, .opcode = MROC_WR_WRITE,
		.flags = MROC_SEND_SIGNALED, .lkey = mroc_mr_lkey(own), .laddr = 0, .len = 16,
		.rkey = rkey, .raddr = 0 };

	return expect(qp, false, &ok, MROC_WC_SUCCESS, what);
}

static int local(const char *sock, uint64_t service, const char *peer, const char *dir,
		 const char *peername, char **victims, int nvictims)
{
	struct mroc_ctx *ctx = open_ctx(sock);
	uint32_t plkey, prkey, vlkey, vrkey;
	struct mroc_qp *qp;
	struct mroc_mr *own;
	int bad = 0;

	if (!ctx)
		return fail("open", -errno);
	own = mroc_mr_alloc(ctx, OWN, MROC_ACCESS_LOCAL_WRITE);
	if (!own)
		return fail("mr", -errno);
	memset(mroc_mr_addr(own), 0x5a, OWN);
	if (read_keys(dir, peername, &plkey, &prkey))
		return fail("the peer's keys", 0);
	qp = connect_qp(ctx, peer, service);
	if (!qp)
		return fail("connect", -errno);
	for (int v = 0; v < nvictims; v++) {
		if (read_keys(dir, victims[v], &vlkey, &vrkey))
			return fail("a victim's keys", 0);
		/* Offsets inside the victim's region, so only its key is wrong. */
		const struct mroc_sqe a[] = {
			{ .wr_id = 1, .opcode = MROC_WR_WRITE, .flags = MROC_SEND_SIGNALED,
			  .lkey = vlkey, .laddr = 0, .len = 256, .rkey = prkey, .raddr = 1024 },
			{ .wr_id = 2, .opcode = MROC_WR_SEND, .flags = MROC_SEND_SIGNALED,
			  .lkey = vlkey, .laddr = 256, .len = 64 },
			{ .wr_id = 3, .opcode = MROC_WR_READ, .flags = MROC_SEND_SIGNALED,
			  .lkey = vlkey, .laddr = 512, .len = 256, .rkey = prkey, .raddr = 0 },
			{ .wr_id = 4, .opcode = MROC_WR_ATOMIC_FETCH_ADD,
			  .flags = MROC_SEND_SIGNALED, .lkey = vlkey, .laddr = 1024, .len = 8,
			  .rkey = prkey, .raddr = 2048, .compare_add = 1 },
			{ .wr_id = 5, .opcode = MROC_WR_ATOMIC_CMP_SWP,
			  .flags = MROC_SEND_SIGNALED, .lkey = vlkey, .laddr = 1032, .len = 8,
			  .rkey = prkey, .raddr = 2056, .compare_add = 0, .swap = 7 },
		};
		static const char *const what[] = { "WRITE from the victim's region",
			"SEND from the victim's region", "READ into the victim's region",
			"FETCH_ADD into the victim's region", "CMP_SWP into the victim's region" };
		char msg[128];

		for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++) {
			snprintf(msg, sizeof(msg), "%s: %s", victims[v], what[i]);
			bad += expect(qp, false, &a[i], MROC_WC_LOC_PROT_ERR, msg);
		}
		const struct mroc_sqe r = { .wr_id = 6, .lkey = vlkey, .laddr = 2048, .len = 512 };

		snprintf(msg, sizeof(msg), "%s: RECV into the victim's region", victims[v]);
		bad += expect(qp, true, &r, MROC_WC_LOC_PROT_ERR, msg);
	}
	/* The QP still works: the refusals were about the keys, not a broken connection. */
	bad += own_write(qp, own, prkey, "the thief's own WRITE");
	if (bad)
		return 1;
	printf("local: %d victim(s): WRITE, SEND, READ, FETCH_ADD, CMP_SWP and RECV naming their "
	       "lkeys refused (LOC_PROT_ERR); the thief's own WRITE then succeeded\n", nvictims);
	mroc_close(ctx);
	return 0;
}

static int remote(const char *sock, uint64_t service, const char *peer, const char *dir,
		  char **victims, int nvictims, const char *owner)
{
	struct mroc_ctx *ctx = open_ctx(sock);
	uint32_t olkey, orkey, vlkey, vrkey;
	struct mroc_qp *qp;
	struct mroc_mr *own;
	uint8_t *b;
	int bad = 0;

	if (!ctx)
		return fail("open", -errno);
	own = mroc_mr_alloc(ctx, OWN, MROC_ACCESS_LOCAL_WRITE);
	if (!own)
		return fail("mr", -errno);
	b = mroc_mr_addr(own);
	memset(b, 0x3c, OWN);
	for (int v = 0; v < nvictims; v++) {
		if (read_keys(dir, victims[v], &vlkey, &vrkey))
			return fail("a victim's keys", 0);
		const struct mroc_sqe a[] = {
			{ .wr_id = 1, .opcode = MROC_WR_WRITE, .flags = MROC_SEND_SIGNALED,
			  .lkey = mroc_mr_lkey(own), .laddr = 0, .len = 256, .rkey = vrkey,
			  .raddr = 4096 },
			{ .wr_id = 2, .opcode = MROC_WR_READ, .flags = MROC_SEND_SIGNALED,
			  .lkey = mroc_mr_lkey(own), .laddr = 1024, .len = 256, .rkey = vrkey,
			  .raddr = 0 },
			{ .wr_id = 3, .opcode = MROC_WR_ATOMIC_FETCH_ADD,
			  .flags = MROC_SEND_SIGNALED, .lkey = mroc_mr_lkey(own), .laddr = 2048,
			  .len = 8, .rkey = vrkey, .raddr = 8192, .compare_add = 1 },
		};
		static const char *const what[] = { "WRITE to the victim's rkey",
			"READ from the victim's rkey", "FETCH_ADD on the victim's rkey" };
		char msg[128];

		/* A remote access error ends the requester's QP: a fresh one each. */
		for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++) {
			qp = connect_qp(ctx, peer, service);
			if (!qp)
				return fail("connect", -errno);
			snprintf(msg, sizeof(msg), "%s: %s", victims[v], what[i]);
			bad += expect(qp, false, &a[i], MROC_WC_REM_ACCESS_ERR, msg);
			mroc_qp_destroy(qp);
		}
	}
	for (int i = 0; i < OWN; i++)
		if (b[i] != 0x3c) {
			fprintf(stderr, "key_thief: byte %d of the requester's region is 0x%02x: "
				"something of a victim's came back\n", i, b[i]);
			return 1;
		}
	if (read_keys(dir, owner, &olkey, &orkey))
		return fail("the listener's keys", 0);
	qp = connect_qp(ctx, peer, service);
	if (!qp)
		return fail("connect", -errno);
	bad += own_write(qp, own, orkey, "a WRITE to the listener's own rkey");
	if (bad)
		return 1;
	printf("remote: %d victim(s): WRITE, READ and FETCH_ADD naming their rkeys at another "
	       "client's QP refused (REM_ACCESS_ERR), nothing came back; the listener's own rkey "
	       "worked\n", nvictims);
	mroc_close(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	if ((argc == 6 || argc == 8) && !strcmp(argv[1], "hold"))
		return hold(argv[2], argv[3], argv[4], (uint8_t)strtoul(argv[5], NULL, 0),
			    argc == 8 ? strtoull(argv[6], NULL, 0) : 0,
			    argc == 8 ? atoi(argv[7]) : 0);
	if (argc >= 8 && !strcmp(argv[1], "local"))
		return local(argv[2], strtoull(argv[3], NULL, 0), argv[4], argv[5], argv[6],
			     argv + 7, argc - 7);
	if (argc >= 9 && !strcmp(argv[1], "remote") && !strcmp(argv[argc - 2], "--"))
		return remote(argv[2], strtoull(argv[3], NULL, 0), argv[4], argv[5], argv + 6,
			      argc - 8, argv[argc - 1]);
	fprintf(stderr, "usage: key_thief hold SOCKET DIR NAME BYTE [SERVICE N]\n"
			"       key_thief local SOCKET SERVICE PEER DIR PEERNAME VICTIM...\n"
			"       key_thief remote SOCKET SERVICE PEER DIR VICTIM... -- OWNER\n");
	return 2;
}
