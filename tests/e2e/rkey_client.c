// SPDX-License-Identifier: MIT
/*
 * Remote keys and offsets across real daemons (end-to-end test helper).
 *
 *   rkey_client server SOCKET SERVICE DIR    region of 64 KiB filled with 0xab, 4 QPs
 *                                            listening; writes DIR/key; after DIR/done
 *                                            appears, checks that only bytes 0..15 changed
 *   rkey_client client SOCKET SERVICE PEER DIR
 *                                            a valid WRITE, then a wrong rkey, a range past
 *                                            the end and an offset near 2^64: each must end
 *                                            in MROC_WC_REM_ACCESS_ERR
 * Exit 0 when everything behaved.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mroc/mroc.h"

#define REGION	65536
#define GOOD	16

static int fail(const char *what, int err)
{
	fprintf(stderr, "rkey_client: %s: %s\n", what, err ? mroc_strerror(err) : "failed");
	return 1;
}

static struct mroc_ctx *open_ctx(const char *sock)
{
	struct mroc_ctx_opts o = { .sz = sizeof(o), .socket_path = sock };

	return mroc_open(&o);
}

static int server(const char *sock, uint64_t service, const char *dir)
{
	struct mroc_qp_attr attr = { .sz = sizeof(attr) };
	struct mroc_ctx *ctx = open_ctx(sock);
	struct mroc_qp *qp[4];
	struct mroc_mr *mr;
	char path[512];
	uint8_t *b;
	FILE *f;

	if (!ctx)
		return fail("open", -errno);
	mr = mroc_mr_alloc(ctx, REGION, MROC_ACCESS_LOCAL_WRITE | MROC_ACCESS_REMOTE_WRITE);
	if (!mr)
		return fail("mr", -errno);
	b = mroc_mr_addr(mr);
	memset(b, 0xab, REGION);
	for (int i = 0; i < 4; i++) {	/* one per write the client tries */
		qp[i] = mroc_qp_create(ctx, &attr);
		if (!qp[i] || mroc_qp_listen(qp[i], service))
			return fail("listen", -errno);
	}
	snprintf(path, sizeof(path), "%s/key.tmp", dir);
	f = fopen(path, "w");
	if (!f)
		return fail("key file", -errno);
	fprintf(f, "%u\n", mroc_mr_rkey(mr));
	fclose(f);
	{
		char final[512];

		snprintf(final, sizeof(final), "%s/key", dir);
		rename(path, final);
	}
	snprintf(path, sizeof(path), "%s/done", dir);
	for (int i = 0; i < 300 && access(path, F_OK); i++)
		usleep(100000);
	for (int i = 0; i < REGION; i++) {
		uint8_t want = i < GOOD ? 0x5a : 0xab;

		if (b[i] != want) {
			fprintf(stderr, "rkey_client: byte %d is 0x%02x, expected 0x%02x\n", i, b[i], want);
			return 1;
		}
	}
	printf("rkey_client server: only the valid write reached the region\n");
	mroc_close(ctx);
	return 0;
}

/* One WRITE on a fresh connection; returns the completion status or -errno. */
static int write_once(struct mroc_ctx *ctx, struct mroc_mr *src, const char *peer,
		      uint64_t service, uint32_t rkey, uint64_t off, uint32_t len)
{
	struct mroc_qp_attr attr = { .sz = sizeof(attr) };
	struct mroc_qp *qp = mroc_qp_create(ctx, &attr);
	struct mroc_wc wc;
	int n, err;

	if (!qp)
		return -errno;
	err = mroc_qp_connect(qp, peer, service);
	if (!err)
		err = mroc_qp_wait_connected(qp, 10000);
	if (err)
		return err;
	struct mroc_send_wr wr = {
		.wr_id = 7, .opcode = MROC_WR_WRITE, .flags = MROC_SEND_SIGNALED,
		.sg = { mroc_mr_addr(src), len, mroc_mr_lkey(src) },
		.rkey = rkey, .remote_offset = off,
	};
	err = mroc_post_send(qp, &wr);
	if (err)
		return err;
	for (int tries = 0; tries < 100; tries++) {
		n = mroc_poll_cq(qp, &wc, 1);
		if (n < 0)
			return n;
		if (n && wc.opcode == MROC_WC_WRITE)
			return wc.status;
		if (!n)
			mroc_wait_cq(qp, 100);
	}
	return -ETIMEDOUT;
}

static int client(const char *sock, uint64_t service, const char *peer, const char *dir)
{
	struct mroc_ctx *ctx = open_ctx(sock);
	unsigned int rkey = 0;
	struct mroc_mr *src;
	char path[512];
	FILE *f = NULL;
	int st;

	if (!ctx)
		return fail("open", -errno);
	snprintf(path, sizeof(path), "%s/key", dir);
	for (int i = 0; i < 100 && !(f = fopen(path, "r")); i++)
		usleep(100000);
	if (!f || fscanf(f, "%u", &rkey) != 1)
		return fail("no key from the server", 0);
	fclose(f);
	src = mroc_mr_alloc(ctx, 4096, MROC_ACCESS_LOCAL_WRITE);
	if (!src)
		return fail("mr", -errno);
	memset(mroc_mr_addr(src), 0x5a, 4096);
	st = write_once(ctx, src, peer, service, rkey, 0, GOOD);
	if (st != MROC_WC_SUCCESS)
		return fail("the valid write", st < 0 ? st : 0);
	st = write_once(ctx, src, peer, service, rkey ^ 0x5000, 64, 64);
	if (st != MROC_WC_REM_ACCESS_ERR)
		return fprintf(stderr, "wrong rkey: status %d\n", st), 1;
	st = write_once(ctx, src, peer, service, rkey, REGION - 8, 16);
	if (st != MROC_WC_REM_ACCESS_ERR)
		return fprintf(stderr, "write past the end: status %d\n", st), 1;
	st = write_once(ctx, src, peer, service, rkey, UINT64_MAX - 4, 16);
	if (st != MROC_WC_REM_ACCESS_ERR)
		return fprintf(stderr, "offset near 2^64: status %d\n", st), 1;
	printf("rkey_client client: wrong key, past the end and a wrapping offset were all refused\n");
	mroc_close(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "server"))
		return server(argv[2], strtoull(argv[3], NULL, 0), argv[4]);
	if (argc == 6 && !strcmp(argv[1], "client"))
		return client(argv[2], strtoull(argv[3], NULL, 0), argv[4], argv[5]);
	fprintf(stderr, "usage: rkey_client server SOCKET SERVICE DIR | client SOCKET SERVICE PEER DIR\n");
	return 2;
}
