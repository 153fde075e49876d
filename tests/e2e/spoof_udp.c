// SPDX-License-Identifier: MIT
/*
 * One UDP payload, given in hex, sent COUNT times from any source address
 * (raw IPv4 or IPv6, source spoofed), INTERVAL_MS apart: forged or replayed
 * MetaRoCE packets for the end-to-end attack tests (test_trust_net.sh).
 *
 *   spoof_udp SRC_IP SPORT DST_IP DPORT HEX COUNT INTERVAL_MS
 *
 * SRC_IP and DST_IP of one family.  A payload with the ICRC flag (0x80 in
 * its third byte) gets its ICRC (its last 4 bytes) computed again over the
 * ports and the payload as given (docs/PROTOCOL.md 1.1): an attacker knows
 * the algorithm, so the tests' forged packets pass it.  Needs CAP_NET_RAW.
 *
 * IPv4 only, from the environment (test_attack_net.sh):
 *   SPOOF_VARY=1  packet i from SRC_IP with its last two bytes set to i's
 *                 (1..254 each) and the MetaRoCE source QPN (bytes 8..11)
 *                 xor i: a flood of requests from as many hosts;
 *   SPOOF_VARY=2  the same sources, the payload as given: one captured
 *                 request replayed from as many hosts (one source QPN);
 *   SPOOF_FRAG=1  each packet as two IP fragments, the first with the UDP
 *                 header and 32 bytes of payload;
 *   SPOOF_VLAN=ID each packet as an Ethernet frame tagged 802.1Q ID (0:
 *                 untagged) to MAC SPOOF_DMAC, written on interface SPOOF_IF
 *                 (a packet socket: the tag in the frame, as a host on a
 *                 trunk sends it).
 * IPv6: SPOOF_IF=NAME sends through interface NAME (a link-local or
 * multicast destination's scope).
 */
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/udp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_PAYLOAD	2048

static int unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = strlen(s);

	if (n % 2 || n / 2 > cap)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	return (int)(n / 2);
}

/* CRC32C (Castagnoli, reflected), as frame.c computes the ICRC. */
static uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t n)
{
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc >> 1 ^ (0x82f63b78u & -(crc & 1));
	}
	return ~crc;
}

static void put_icrc(uint8_t *payload, size_t len, uint16_t sport, uint16_t dport)
{
	uint8_t ports[4] = { (uint8_t)(sport >> 8), (uint8_t)sport, (uint8_t)(dport >> 8),
			     (uint8_t)dport };
	uint32_t c;

	if (len < 16 + 4 || !(payload[2] & 0x80))
		return;
	c = crc32c(crc32c(0, ports, 4), payload, len - 4);
	payload[len - 4] = (uint8_t)(c >> 24);
	payload[len - 3] = (uint8_t)(c >> 16);
	payload[len - 2] = (uint8_t)(c >> 8);
	payload[len - 1] = (uint8_t)c;
}

/* The UDP checksum over the IPv6 pseudo-header (IPv6 requires one). */
static uint16_t csum6(const struct in6_addr *s, const struct in6_addr *d, const uint8_t *udp,
		      size_t len)
{
	uint32_t sum = 0;

	for (int i = 0; i < 16; i += 2) {
		sum += (uint32_t)(s->s6_addr[i] << 8 | s->s6_addr[i + 1]);
		sum += (uint32_t)(d->s6_addr[i] << 8 | d->s6_addr[i + 1]);
	}
	sum += (uint32_t)len + IPPROTO_UDP;
	for (size_t i = 0; i < len; i += 2)
		sum += (uint32_t)(udp[i] << 8 | (i + 1 < len ? udp[i + 1] : 0));
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	return (uint16_t)(sum ? sum : 0xffff);
}

/*
 * The IPv4 packet in buf (total bytes, header of 20) as two fragments: the
 * UDP header and 32 bytes with More Fragments, then the rest at offset 40.
 */
static int send_frags(int fd, const uint8_t *buf, size_t total, const struct sockaddr_storage *dst,
		      socklen_t dlen)
{
	static uint8_t f[sizeof(struct iphdr) + MAX_PAYLOAD + 8];
	const size_t hl = sizeof(struct iphdr), first = 40;
	struct iphdr *ip = (struct iphdr *)f;

	if (total <= hl + first)
		return 0;
	memcpy(f, buf, hl + first);
	ip->id = htons((uint16_t)(getpid() & 0xffff) | 1);
	ip->frag_off = htons(IP_MF);
	ip->tot_len = htons((uint16_t)(hl + first));
	if (sendto(fd, f, hl + first, 0, (const struct sockaddr *)dst, dlen) < 0)
		goto err;
	memcpy(f + hl, buf + hl + first, total - hl - first);
	ip->frag_off = htons(first / 8);
	ip->tot_len = htons((uint16_t)(total - first));
	if (sendto(fd, f, total - first, 0, (const struct sockaddr *)dst, dlen) < 0)
		goto err;
	return 0;
err:
	perror("spoof_udp: sendto (fragment)");
	return -1;
}

/* The IPv4 header checksum (a packet socket's frame gets none from the kernel). */
static void ip4_csum(uint8_t *ip)
{
	uint32_t sum = 0;

	ip[10] = ip[11] = 0;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip[10] = (uint8_t)(~sum >> 8);
	ip[11] = (uint8_t)~sum;
}

/* SPOOF_VLAN: the IPv4 packet in buf as an Ethernet frame, tagged unless vid is 0. */
static int send_frame(int fd, int ifindex, const uint8_t dmac[6], unsigned vid,
		      uint8_t *buf, size_t total)
{
	static uint8_t f[18 + sizeof(struct iphdr) + 8 + MAX_PAYLOAD];
	struct sockaddr_ll to = { .sll_family = AF_PACKET, .sll_ifindex = ifindex, .sll_halen = 6 };
	size_t o = 12;

	memcpy(f, dmac, 6);
	memcpy(f + 6, (uint8_t[]){ 0x02, 0x6d, 0x72, 0x6f, 0x63, 0x01 }, 6);
	if (vid) {
		f[o++] = 0x81;
		f[o++] = 0x00;
		f[o++] = (uint8_t)(vid >> 8 & 0x0f);
		f[o++] = (uint8_t)vid;
	}
	f[o++] = 0x08;
	f[o++] = 0x00;
	ip4_csum(buf);
	memcpy(f + o, buf, total);
	memcpy(to.sll_addr, dmac, 6);
	if (sendto(fd, f, o + total, 0, (struct sockaddr *)&to, sizeof(to)) < 0) {
		perror("spoof_udp: sendto (frame)");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *ev = getenv("SPOOF_VARY"), *ef = getenv("SPOOF_FRAG"), *evl = getenv("SPOOF_VLAN");
	unsigned vid = evl ? (unsigned)atoi(evl) : 0;
	int ifindex = 0;
	uint8_t dmac[6] = { 0 };
	bool vary = ev && (*ev == '1' || *ev == '2'), frag = ef && *ef == '1';
	bool vary_qpn = vary && *ev == '1';
	static uint8_t buf[sizeof(struct ip6_hdr) + sizeof(struct udphdr) + MAX_PAYLOAD];
	uint8_t payload[MAX_PAYLOAD];
	struct sockaddr_storage dst = { 0 };
	socklen_t dlen;
	size_t hl, total;
	int fd, one = 1, plen, count, interval;
	struct udphdr *udp;

	if (argc != 8 || (plen = unhex(argv[5], payload, sizeof(payload))) < 0 ||
	    (count = atoi(argv[6])) <= 0 || (interval = atoi(argv[7])) < 0) {
		fprintf(stderr, "usage: spoof_udp SRC_IP SPORT DST_IP DPORT HEX COUNT INTERVAL_MS\n");
		return 2;
	}
	if (strchr(argv[1], ':')) {
		struct ip6_hdr *ip = (struct ip6_hdr *)buf;
		struct sockaddr_in6 *d = (struct sockaddr_in6 *)&dst;

		if (inet_pton(AF_INET6, argv[1], &ip->ip6_src) != 1 ||
		    inet_pton(AF_INET6, argv[3], &ip->ip6_dst) != 1)
			goto bad_addr;
		hl = sizeof(*ip);
		total = hl + sizeof(*udp) + (size_t)plen;
		ip->ip6_flow = htonl(6u << 28);
		ip->ip6_plen = htons((uint16_t)(total - hl));
		ip->ip6_nxt = IPPROTO_UDP;
		ip->ip6_hlim = 64;
		d->sin6_family = AF_INET6;
		d->sin6_addr = ip->ip6_dst;
		if (getenv("SPOOF_IF"))
			d->sin6_scope_id = if_nametoindex(getenv("SPOOF_IF"));
		dlen = sizeof(*d);
		fd = socket(AF_INET6, SOCK_RAW, IPPROTO_RAW);
	} else {
		struct iphdr *ip = (struct iphdr *)buf;
		struct sockaddr_in *d = (struct sockaddr_in *)&dst;

		if (inet_pton(AF_INET, argv[1], &ip->saddr) != 1 ||
		    inet_pton(AF_INET, argv[3], &ip->daddr) != 1)
			goto bad_addr;
		hl = sizeof(*ip);
		total = hl + sizeof(*udp) + (size_t)plen;
		ip->version = 4;
		ip->ihl = 5;
		ip->ttl = 64;
		ip->protocol = IPPROTO_UDP;
		ip->tot_len = htons((uint16_t)total);	/* the kernel fills in the checksum */
		d->sin_family = AF_INET;
		d->sin_addr.s_addr = ip->daddr;
		dlen = sizeof(*d);
		if (evl) {
			const char *m = getenv("SPOOF_DMAC");

			ifindex = getenv("SPOOF_IF") ? (int)if_nametoindex(getenv("SPOOF_IF")) : 0;
			if (!ifindex || !m || sscanf(m, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &dmac[0],
						     &dmac[1], &dmac[2], &dmac[3], &dmac[4],
						     &dmac[5]) != 6 || vid > 4095) {
				fprintf(stderr, "spoof_udp: SPOOF_VLAN wants SPOOF_IF and SPOOF_DMAC\n");
				return 2;
			}
			fd = socket(AF_PACKET, SOCK_RAW, 0);
		} else {
			fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
		}
		if (fd >= 0 && !evl && setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one, sizeof(one))) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {
		perror("spoof_udp: raw socket");
		return 1;
	}
	/* Broadcast destinations too (the attack tests' reflection case). */
	setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one));
	put_icrc(payload, (size_t)plen, (uint16_t)atoi(argv[2]), (uint16_t)atoi(argv[4]));
	udp = (struct udphdr *)(buf + hl);
	udp->source = htons((uint16_t)atoi(argv[2]));
	udp->dest = htons((uint16_t)atoi(argv[4]));
	udp->len = htons((uint16_t)(sizeof(*udp) + (size_t)plen));
	memcpy(udp + 1, payload, (size_t)plen);
	if (hl == sizeof(struct ip6_hdr)) {
		struct ip6_hdr *ip = (struct ip6_hdr *)buf;

		udp->check = htons(csum6(&ip->ip6_src, &ip->ip6_dst, (uint8_t *)udp,
					 sizeof(*udp) + (size_t)plen));
	}
	for (int i = 0; i < count; i++) {
		if (hl == sizeof(struct iphdr) && vary) {
			struct iphdr *ip = (struct iphdr *)buf;
			uint8_t *m = (uint8_t *)(udp + 1), *sb = (uint8_t *)&ip->saddr;

			sb[2] = (uint8_t)(1 + (unsigned)i / 254 % 254);
			sb[3] = (uint8_t)(1 + (unsigned)i % 254);
			if (vary_qpn && plen >= 12)
				for (int k = 0; k < 4; k++)
					m[8 + k] = (uint8_t)(payload[8 + k] ^ (unsigned)i >> (24 - 8 * k));
			put_icrc(m, (size_t)plen, ntohs(udp->source), ntohs(udp->dest));
		}
		if (ifindex) {
			if (send_frame(fd, ifindex, dmac, vid, buf, total))
				return 1;
		} else if (hl == sizeof(struct iphdr) && frag) {
			if (send_frags(fd, buf, total, &dst, dlen))
				return 1;
		} else if (sendto(fd, buf, total, 0, (struct sockaddr *)&dst, dlen) < 0) {
			perror("spoof_udp: sendto");
			return 1;
		}
		if (interval && i + 1 < count)
			usleep((useconds_t)interval * 1000);
	}
	close(fd);
	return 0;

bad_addr:
	fprintf(stderr, "spoof_udp: %s, %s: not addresses of one family\n", argv[1], argv[3]);
	return 2;
}
