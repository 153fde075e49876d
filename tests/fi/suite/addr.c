// SPDX-License-Identifier: MIT
/*
 * fi_suite unit's address checks: IPv6 names (FI_SOCKADDR_IN6) in getinfo,
 * the AV (both families in one, inserted back to back as FI_SOCKADDR),
 * fi_av_straddr's form, fi_getname's family against the entry's format, and
 * fi_setname (a port, this host's address only) on an endpoint not yet enabled.
 */
#include "suite.h"

#define V6	"fd00:1::5"

static struct sockaddr_in6 sin6_of(const char *ip, uint16_t p)
{
	struct sockaddr_in6 s = { .sin6_family = AF_INET6, .sin6_port = htons(p) };

	if (inet_pton(AF_INET6, ip, &s.sin6_addr) != 1)
		die("addr: %s", ip);
	return s;
}

/*
 * On a host whose mrocd is IPv6 (the endpoint's entry says FI_SOCKADDR_IN6):
 * IPv6 hints and nodes.  On an IPv4 one, IPv6 hints give no entry or one of
 * that format (none where FI_MROC_ADDR is IPv4: the endpoint could not be
 * named so), never an IPv4 one.
 */
static void getinfo6(struct fab *f)
{
	struct fi_info *h = hints_for(FI_MSG | FI_TAGGED), *info = NULL;
	struct sockaddr_in6 want = sin6_of(V6, 4242);
	int err;

	h->addr_format = FI_SOCKADDR_IN6;
	if (f->info->addr_format != FI_SOCKADDR_IN6) {
		err = fi_getinfo(FI_VERSION(1, 17), V6, "4242", 0, h, &info);
		for (struct fi_info *i = err ? NULL : info; i; i = i->next)
			if (i->addr_format != FI_SOCKADDR_IN6)
				die("getinfo FI_SOCKADDR_IN6 on an IPv4 host: format %u", i->addr_format);
		if (!err)
			fi_freeinfo(info);
		else if (err != -FI_ENODATA)
			die("getinfo FI_SOCKADDR_IN6 on an IPv4 host: %d", err);
		fi_freeinfo(h);
		printf("ok: addr: getinfo with FI_SOCKADDR_IN6 on an IPv4 host: %s\n",
		       err ? "no entry" : "FI_SOCKADDR_IN6 entries");
		return;
	}
	CHECK(fi_getinfo(FI_VERSION(1, 17), V6, "4242", 0, h, &info));
	for (struct fi_info *i = info; i; i = i->next)
		if (i->addr_format != FI_SOCKADDR_IN6 || i->dest_addrlen != sizeof(want) ||
		    memcmp(i->dest_addr, &want, sizeof(want)) ||
		    i->src_addrlen != sizeof(struct sockaddr_in6))
			die("getinfo FI_SOCKADDR_IN6 %s: format %u, dest %zu bytes, src %zu bytes",
			    V6, i->addr_format, i->dest_addrlen, i->src_addrlen);
	fi_freeinfo(info);
	/* IPv4's format and an IPv6 node: no entry (never an address cut to 4 bytes). */
	h->addr_format = FI_SOCKADDR_IN;
	err = fi_getinfo(FI_VERSION(1, 17), V6, "4242", 0, h, &info);
	if (err != -FI_ENODATA)
		die("getinfo FI_SOCKADDR_IN with an IPv6 node: %d, not -FI_ENODATA", err);
	/* No format asked: the node's family decides. */
	h->addr_format = FI_FORMAT_UNSPEC;
	CHECK(fi_getinfo(FI_VERSION(1, 17), V6, "4242", 0, h, &info));
	if (info->addr_format != FI_SOCKADDR_IN6)
		die("getinfo for an IPv6 node: format %u, not FI_SOCKADDR_IN6", info->addr_format);
	fi_freeinfo(info);
	/* An IPv4 node where FI_MROC_ADDR is IPv6: our endpoint could not be named in its format. */
	if (getenv("FI_MROC_ADDR")) {
		err = fi_getinfo(FI_VERSION(1, 17), "10.0.0.1", "4242", 0, h, &info);
		if (err != -FI_ENODATA)
			die("getinfo for an IPv4 node, FI_MROC_ADDR IPv6: %d, not -FI_ENODATA", err);
	}
	fi_freeinfo(h);
	printf("ok: addr: getinfo with FI_SOCKADDR_IN6 and an IPv6 node; IPv4's format, or an "
	       "IPv4 node, refused\n");
}

static void av_mixed(struct fab *f)
{
	/* sockaddr_in6, sockaddr_in, sockaddr_in6 back to back, as FI_SOCKADDR inserts them. */
	struct sockaddr_in6 a = sin6_of(V6, 4242), c = sin6_of("fd00:1::6", 4242);
	struct sockaddr_in b = { .sin_family = AF_INET, .sin_port = htons(4242),
				 .sin_addr.s_addr = htonl(0x0a000001) };
	uint8_t buf[sizeof(a) + sizeof(b) + sizeof(c)], back[64];
	const void *names[3] = { &a, &b, &c };
	size_t lens[3] = { sizeof(a), sizeof(b), sizeof(c) }, bl, off = 0;
	fi_addr_t fa[3];
	char s[96];

	for (int i = 0; i < 3; i++) {
		memcpy(buf + off, names[i], lens[i]);
		off += lens[i];
	}
	if (fi_av_insert(f->av, buf, 3, fa, 0, NULL) != 3)
		die("addr: av: IPv6, IPv4, IPv6 not all inserted");
	for (int i = 0; i < 3; i++) {
		bl = sizeof(back);
		CHECK(fi_av_lookup(f->av, fa[i], back, &bl));
		if (bl != lens[i] || memcmp(back, names[i], bl))
			die("addr: av: lookup of entry %d gave another name (%zu bytes)", i, bl);
	}
	if (fa[0] == fa[2])
		die("addr: av: two IPv6 names that differ in their last byte are one entry");
	bl = sizeof(s);
	fi_av_straddr(f->av, &a, s, &bl);
	if (strcmp(s, "fi_sockaddr_in6://[" V6 "]:4242"))
		die("addr: fi_av_straddr: %s", s);
	/* Too little room: as much as fits, and the size the name needs. */
	bl = sizeof(struct sockaddr_in);
	CHECK(fi_av_lookup(f->av, fa[0], back, &bl));
	if (bl != sizeof(a))
		die("addr: av: lookup into 16 bytes said %zu, not %zu", bl, sizeof(a));
	CHECK(fi_av_remove(f->av, fa, 3, 0));
	printf("ok: addr: av: IPv6 and IPv4 names in one AV, looked up whole, straddr %s\n", s);
}

static void getname_family(struct fab *f)
{
	uint8_t name[64];
	size_t l = sizeof(name);
	sa_family_t fam;
	const char *env = getenv("FI_MROC_ADDR");

	CHECK(fi_getname(&f->ep->fid, name, &l));
	memcpy(&fam, name, sizeof(fam));
	if ((f->info->addr_format == FI_SOCKADDR_IN && (fam != AF_INET || l != sizeof(struct sockaddr_in))) ||
	    (f->info->addr_format == FI_SOCKADDR_IN6 &&
	     (fam != AF_INET6 || l != sizeof(struct sockaddr_in6))))
		die("addr: fi_getname: family %u, %zu bytes, for format %u", fam, l,
		    f->info->addr_format);
	if (env && strchr(env, ':') && fam != AF_INET6)
		die("addr: FI_MROC_ADDR=%s but fi_getname gave family %u", env, fam);
	printf("ok: addr: fi_getname: a %s name (%zu bytes), the entry's format\n",
	       fam == AF_INET6 ? "sockaddr_in6" : "sockaddr_in", l);
}

/*
 * fi_setname: another endpoint's port is taken (-FI_EADDRINUSE) until it
 * closes, then it is ours; another host's address is not (-FI_EADDRNOTAVAIL);
 * an enabled endpoint keeps its name (-FI_EOPBADSTATE).
 */
static void setname(struct fab *f)
{
	struct fid_ep *a, *b;
	uint8_t na[64], nb[64], other[64];
	size_t la = sizeof(na), lb = sizeof(nb);
	sa_family_t fam;
	uint16_t pa;
	int err;

	CHECK(fi_endpoint(f->domain, f->info, &a, NULL));
	CHECK(fi_endpoint(f->domain, f->info, &b, NULL));
	CHECK(fi_getname(&a->fid, na, &la));
	CHECK(fi_getname(&b->fid, nb, &lb));
	pa = name_port(na);
	memcpy(nb, na, la);		/* a's name: its port, this host's address */
	err = fi_setname(&b->fid, nb, la);
	if (err != -FI_EADDRINUSE)
		die("addr: fi_setname to another endpoint's port: %d, not -FI_EADDRINUSE", err);
	CHECK(fi_close(&a->fid));
	CHECK(fi_setname(&b->fid, nb, la));
	lb = sizeof(nb);
	CHECK(fi_getname(&b->fid, nb, &lb));
	if (lb != la || name_port(nb) != pa)
		die("addr: fi_setname: port %u, not %u", name_port(nb), pa);
	/* Another host's address (one more in its last byte). */
	memcpy(other, nb, lb);
	memcpy(&fam, other, sizeof(fam));
	if (fam == AF_INET6)
		((struct sockaddr_in6 *)other)->sin6_addr.s6_addr[15] ^= 1;
	else
		((struct sockaddr_in *)other)->sin_addr.s_addr ^= htonl(1);
	name_set_port(other, 0);
	err = fi_setname(&b->fid, other, lb);
	if (err != -FI_EADDRNOTAVAIL)
		die("addr: fi_setname to another address: %d, not -FI_EADDRNOTAVAIL", err);
	err = fi_setname(&f->ep->fid, nb, lb);
	if (err != -FI_EOPBADSTATE)
		die("addr: fi_setname of an enabled endpoint: %d, not -FI_EOPBADSTATE", err);
	CHECK(fi_close(&b->fid));
	printf("ok: addr: fi_setname: a port taken, then free; another address and an enabled "
	       "endpoint refused\n");
}

void unit_addrs(struct fab *f)
{
	getinfo6(f);
	av_mixed(f);
	getname_family(f);
	setname(f);
}
