// SPDX-License-Identifier: MIT
/*
 * Forged MetaRoCE CONNECT_REQs from many source addresses, as an attacker on
 * the same L2 segment could send them (raw IPv4, source address spoofed),
 * for the end-to-end test of mrocd's peer table.
 *
 *   spoof_req DST_IP UDP_PORT FIRST_SRC COUNT
 *
 * Sources are FIRST_SRC, FIRST_SRC + 1, ...  Each request asks for service
 * 0x66 on a made-up QP; nobody answers them.  Needs CAP_NET_RAW.
 */
#include <arpa/inet.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* docs/PROTOCOL.md: common header (16 bytes) and CM header (24 bytes), big-endian. */
#define MROC_HDR_LEN	16
#define MROC_CM_LEN	24
#define OP_CONNECT_REQ	0x20

static void put32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

int main(int argc, char **argv)
{
	struct {
		struct iphdr ip;
		struct udphdr udp;
		uint8_t mroc[MROC_HDR_LEN + MROC_CM_LEN];
	} __attribute__((packed)) pkt;
	struct sockaddr_in dst = { .sin_family = AF_INET };
	struct in_addr first;
	int fd, one = 1, count;

	if (argc != 5 || inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1 ||
	    inet_pton(AF_INET, argv[3], &first) != 1 || (count = atoi(argv[4])) <= 0) {
		fprintf(stderr, "usage: spoof_req DST_IP UDP_PORT FIRST_SRC COUNT\n");
		return 2;
	}
	fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one, sizeof(one))) {
		perror("spoof_req: raw socket");
		return 1;
	}
	for (int i = 0; i < count; i++) {
		memset(&pkt, 0, sizeof(pkt));
		pkt.ip.version = 4;
		pkt.ip.ihl = 5;
		pkt.ip.ttl = 64;
		pkt.ip.protocol = IPPROTO_UDP;
		pkt.ip.tot_len = htons(sizeof(pkt));
		pkt.ip.saddr = htonl(ntohl(first.s_addr) + (uint32_t)i);
		pkt.ip.daddr = dst.sin_addr.s_addr;	/* the kernel fills in the checksum */
		pkt.udp.source = htons((uint16_t)(40000 + i % 1000));
		pkt.udp.dest = htons((uint16_t)atoi(argv[2]));
		pkt.udp.len = htons(sizeof(pkt) - sizeof(pkt.ip));	/* checksum 0: none */
		pkt.mroc[0] = 1;			/* version */
		pkt.mroc[1] = OP_CONNECT_REQ;
		put32(pkt.mroc + 8, 0x10000 + (uint32_t)i);	/* src_qpn */
		put32(pkt.mroc + MROC_HDR_LEN + 4, 0x66);	/* service id (low half) */
		pkt.mroc[MROC_HDR_LEN + 16] = 0x04;		/* mtu 1024 */
		pkt.mroc[MROC_HDR_LEN + 18] = 1;		/* npaths */
		if (sendto(fd, &pkt, sizeof(pkt), 0, (struct sockaddr *)&dst, sizeof(dst)) < 0) {
			perror("spoof_req: sendto");
			return 1;
		}
		if (i % 64 == 63)
			usleep(1000);	/* do not overrun the receiver's socket buffer */
	}
	printf("spoof_req: %d requests sent\n", count);
	return 0;
}
