// SPDX-License-Identifier: MIT
/*
 * An attacker's daemon (end-to-end test helper: test_links_hog_net.sh): the
 * transport engine over one UDP socket, N QPs connecting to a daemon's
 * control service (MROCD_SERVICE_CONTROL) from one address, each answering
 * its keepalives, so that each holds an incoming control link there.  A QP
 * that fails or is closed connects again at once.
 *
 *   link_hog LOCAL_IP PEER_IP N SECONDS [none|token]
 *
 * Prints "up K" whenever the number of connected QPs changes.  Packets go
 * without the ICRC (a checked UDP checksum stands for it, docs/PROTOCOL.md
 * 1.1); the peer's ICRC trailer is cut off unchecked.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"

#define PORT		4793
#define SERVICE		0x6d726f6300000001ULL	/* daemon/net/links.h MROCD_SERVICE_CONTROL */
#define MAXQ		64
#define BUF		9216
#define F_ICRC		0x80

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int connect_one(struct engine *eng, uint32_t *qpn, uint64_t now)
{
	struct engine_qp_attr a = { .mode = MROC_MODE_METAROCE, .npaths = 1, .sq_depth = 16,
				    .rq_depth = 16 };
	int err = engine_qp_create(eng, &a, qpn);

	if (!err)
		err = engine_qp_connect(eng, *qpn, 0, SERVICE, now);
	return err;
}

int main(int argc, char **argv)
{
	static uint8_t bufs[16][BUF], rx[BUF];
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(PORT) }, to = me, from;
	struct engine_txbuf tb[16];
	struct engine_config ec;
	struct engine_cqe cqe[64];
	struct engine *eng;
	uint32_t qpn[MAXQ];
	unsigned n, up = 0, shown = ~0u, started;
	uint64_t end, now;
	int fd, k;

	if (argc < 5 || inet_pton(AF_INET, argv[1], &me.sin_addr) != 1 ||
	    inet_pton(AF_INET, argv[2], &to.sin_addr) != 1 || (n = atoi(argv[3])) < 1 || n > MAXQ) {
		fprintf(stderr, "usage: link_hog LOCAL_IP PEER_IP N(1..%d) SECONDS [none|token]\n",
			MAXQ);
		return 2;
	}
	engine_config_default(&ec);
	ec.max_qps = 2 * MAXQ;
	ec.seed = now_ns();
	ec.sec_mode = argc > 5 && !strcmp(argv[5], "none") ? MROC_SEC_NONE : MROC_SEC_TOKEN;
	eng = engine_create(&ec);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (!eng || fd < 0 || bind(fd, (struct sockaddr *)&me, sizeof(me))) {
		perror("link_hog");
		return 1;
	}
	now = now_ns();
	end = now + (uint64_t)atoi(argv[4]) * 1000000000ull;
	/* One handshake at a time: REQs at once share V's one listener, and all but one are told BUSY. */
	if (connect_one(eng, &qpn[0], now))
		return fprintf(stderr, "link_hog: cannot create a QP\n"), 1;
	started = 1;
	while ((now = now_ns()) < end) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t next = engine_next_deadline(eng);
		int wait_ms = next <= now ? 0 : next - now > 10000000 ? 10 : 1;

		for (int i = 0; i < 16; i++)
			tb[i] = (struct engine_txbuf){ .data = bufs[i], .cap = BUF };
		k = engine_tx(eng, now, tb, 16);
		for (int i = 0; i < k; i++)
			sendto(fd, tb[i].data, tb[i].len, 0, (struct sockaddr *)&to, sizeof(to));
		if (poll(&pfd, 1, k ? 0 : wait_ms) > 0) {
			socklen_t fl = sizeof(from);
			ssize_t len = recvfrom(fd, rx, sizeof(rx), 0, (struct sockaddr *)&from, &fl);

			if (len > 4 && from.sin_addr.s_addr == to.sin_addr.s_addr) {
				if (rx[2] & F_ICRC) {
					rx[2] &= ~F_ICRC;
					len -= 4;
				}
				engine_rx(eng, now_ns(), rx, (size_t)len,
					  &(struct engine_rx_meta){ .peer = 0,
								    .sport = ntohs(from.sin_port) });
			}
		}
		while ((k = engine_poll_cq(eng, cqe, 64)) > 0)
			for (int i = 0; i < k; i++)
				for (unsigned q = 0; q < n; q++)
					if (qpn[q] == cqe[i].qpn &&
					    (cqe[i].opcode == ENGINE_WC_EV_ERROR ||
					     cqe[i].opcode == ENGINE_WC_EV_DISCONNECTED)) {
						engine_qp_destroy(eng, qpn[q]);
						connect_one(eng, &qpn[q], now_ns());
					}
		up = 0;
		for (unsigned q = 0; q < n; q++) {
			struct engine_qp_info qi;

			up += !engine_qp_info(eng, qpn[q], &qi) && qi.state == ENGINE_QPS_CONNECTED;
		}
		if (up == started && started < n && !connect_one(eng, &qpn[started], now_ns()))
			started++;
		if (up != shown) {
			printf("up %u\n", up);
			fflush(stdout);
			shown = up;
		}
	}
	return 0;
}
