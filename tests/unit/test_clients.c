// SPDX-License-Identifier: MIT
/*
 * mrocd's clients as tenants of one daemon (daemon/clients/, #24 items 8
 * and 12), driven through their control messages as libmroc sends them,
 * with a real engine (clients_fixture.h):
 *  - service ids have owners: another client's LISTEN gets EADDRINUSE, the
 *    owner's other QPs may listen too, the steering table (two workers) is
 *    written for the owner only and freed with the binding;
 *  - one user's share of the QP and region tables (limits.uid_share_percent):
 *    EDQUOT over it, another user unaffected;
 *  - the administrators' reserve (limits.admin_reserve_percent): users
 *    together cannot take the last clients, QPs and regions; root can;
 *  - zombies (destroyed QPs still telling their peers) give their engine
 *    slots to new QPs when the table is full;
 *  - a destroyed QP with nothing to tell a peer (never connected) is no
 *    zombie: its engine slot is free at once;
 *  - a registered memfd is sealed against hole punching (PROTOCOL 11a);
 *  - the RECV and CQ entries a QP may hold in the engine are charged to its
 *    client's bytes (limits.max_mr_bytes_per_client) until the QP goes:
 *    EDQUOT over them.
 * Control budgets and doorbells: test_clients_ctl.c.
 */
#include "clients_fixture.h"

static void test_service_owner(void **state)
{
	struct tc a, b, c;
	uint32_t qa1, qa2, qb, qc;
	struct clients_stats st;

	(void)state;
	env_up(100);
	open_client(&a, 1000);
	open_client(&b, 1000);	/* the same user, another client */
	open_client(&c, 2000);
	assert_int_equal(qp_create(&a, &qa1), 0);
	assert_int_equal(qp_create(&a, &qa2), 0);
	assert_int_equal(qp_create(&b, &qb), 0);
	assert_int_equal(qp_create(&c, &qc), 0);
	assert_int_equal(steered(0x5e71), 0);
	assert_int_equal(qp_listen(&a, qa1, 0x5e71), 0);
	assert_int_equal(steered(0x5e71), 1);			/* a's worker */
	assert_int_equal(qp_listen(&a, qa2, 0x5e71), 0);	/* the owner's second QP */
	assert_int_equal(qp_listen(&b, qb, 0x5e71), -EADDRINUSE);
	assert_int_equal(qp_listen(&c, qc, 0x5e71), -EADDRINUSE);
	assert_int_equal(qp_listen(&c, qc, 0x5e72), 0);	/* another service: its own */
	stats(&st);
	assert_int_equal(st.listen_refused, 2);
	assert_int_equal(st.services, 2);
	assert_int_equal(steer_services(E.steer), 2);
	/* One of the owner's listeners gone: still its; both gone: free. */
	assert_int_equal(qp_destroy(&a, qa1), 0);
	assert_int_equal(qp_listen(&b, qb, 0x5e71), -EADDRINUSE);
	assert_int_equal(qp_destroy(&a, qa2), 0);
	assert_int_equal(steered(0x5e71), 0);			/* slot freed with it */
	assert_int_equal(steer_services(E.steer), 1);
	assert_int_equal(qp_listen(&b, qb, 0x5e71), 0);
	/* The client's end frees its services too. */
	close_client(&b);
	close_client(&c);
	stats(&st);
	assert_int_equal(st.services, 0);
	assert_int_equal(steer_services(E.steer), 0);
	close_client(&a);
	env_down();
}

static void test_uid_share(void **state)
{
	struct tc a, b, c;
	uint32_t q[TABLE];
	struct clients_stats st;
	int n = 0, err;

	(void)state;
	env_up(50);	/* 4 QPs and 4 regions of the 8 per user */
	open_client(&a, 1000);
	open_client(&b, 1000);
	open_client(&c, 2000);
	/* Two clients of one user, each under its own limit (16): 4 QPs between them. */
	while ((err = qp_create(n % 2 ? &b : &a, &q[n])) == 0 && n < TABLE - 1)
		n++;
	assert_int_equal(n, 4);
	assert_int_equal(err, -EDQUOT);
	for (n = 0; (err = mr_reg(n % 2 ? &b : &a)) == 0 && n < TABLE; n++)
		;
	assert_int_equal(n, 4);
	assert_int_equal(err, -EDQUOT);
	/* Another user still gets its share. */
	for (n = 0; n < 4; n++)
		assert_int_equal(qp_create(&c, &q[n]), 0);
	assert_int_equal(mr_reg(&c), 0);
	stats(&st);
	assert_int_equal(st.share_refused, 2);
	/* A's QPs gone with it: its user may have them again. */
	close_client(&a);
	assert_int_equal(qp_create(&b, &q[0]), 0);
	close_client(&b);
	close_client(&c);
	env_down();
}

/*
 * The engine connects qpn as a requester would (its REQ is not looked at): a
 * CONNECT_REP from peer handle 1 answers it, and a KEEPALIVE of the peer's
 * QP answers its RTU (engine/cm.c: connected only then).
 */
static void connect_by_hand(uint32_t qpn, uint32_t peer_qpn)
{
	struct mroc_hdr h = { .version = MROC_WIRE_VERSION, .opcode = MROC_OP_CONNECT_REP,
			      .dst_qpn = qpn, .src_qpn = peer_qpn };
	struct mroc_cm_hdr cm = { .service_id = 0x5e71, .mtu = 1024, .npaths = 2,
				  .mode = MROC_MODE_METAROCE };
	struct engine_rx_meta meta = { .peer = 1, .sport = 49152 };
	struct engine_qp_info info;
	uint8_t b[128];
	size_t n = wire_put_hdr(b, &h);

	n += wire_put_cm(b + n, &cm);
	assert_int_equal(engine_qp_connect(E.eng, qpn, 1, 0x5e71, 1000000), 0);
	assert_int_equal(engine_rx(E.eng, 1000000, b, n, &meta), 0);
	h.opcode = MROC_OP_KEEPALIVE;
	n = wire_put_hdr(b, &h);
	assert_int_equal(engine_rx(E.eng, 1000000, b, n, &meta), 0);
	assert_int_equal(engine_qp_info(E.eng, qpn, &info), 0);
	assert_int_equal(info.state, ENGINE_QPS_CONNECTED);
}

/*
 * Several users together (each within its share) fill the tables but for
 * the administrators' reserve: 25 % of 8 clients, QPs and regions.
 */
/*
 * #24 case 9: protection domains are 64-bit and never reused.  Clients opened
 * across 2^32 get domains 2^32 - 1 and 2^32: the second neither wraps to the
 * daemon's own domain 0 nor to the first client's 1 (with 32-bit domains,
 * 2^32 connections brought domain 0 back, and with it its regions' keys).
 */
static void test_pd_no_wrap(void **state)
{
	struct tc a, b, c;

	(void)state;
	env_up(100);
	E.cs->ctl->next_pd = UINT32_MAX;
	assert_int_equal(try_client(&a, 1000), 0);
	assert_int_equal(try_client(&b, 1000), 0);
	assert_int_equal(try_client(&c, 1001), 0);
	assert_true(((struct client *)a.cl)->pd == UINT32_MAX);
	assert_true(((struct client *)b.cl)->pd == (uint64_t)UINT32_MAX + 1);
	assert_true(((struct client *)c.cl)->pd == (uint64_t)UINT32_MAX + 2);
	close_client(&a);
	close_client(&b);
	close_client(&c);
	env_down();
}

/* MR_REG of len bytes of fd (a duplicate: clients_msg takes the fds it is given). */
static int mr_reg_fd(struct tc *c, int fd, uint64_t len)
{
	struct mroc_msg_mr_reg m = { .h.type = MROC_MSG_MR_REG, .len = len,
				     .access = MROC_ACCESS_LOCAL_WRITE };
	int dup_fd = dup(fd);

	assert_true(dup_fd >= 0);
	return msg(c, &m, sizeof(m), &dup_fd, 1);
}

/*
 * Memory the client never allocated is not pinned: mrocd's mlock would
 * allocate it, charged to mrocd's memory cgroup instead of the client's.
 * A region or a QP's rings with one page missing: ENODATA, counted, nothing
 * locked; the same memfd once every page exists: registered.
 */
static void test_unallocated_refused(void **state)
{
	struct mroc_msg_qp_create qc = { .h.type = MROC_MSG_QP_CREATE, .mode = MROC_QP_DEFAULT,
					 .sq_entries = 64, .rq_entries = 64, .cq_entries = 256 };
	uint32_t sq_off, rq_off, cq_off;
	uint64_t rlen = mroc_shm_layout(64, 64, 256, &sq_off, &rq_off, &cq_off);
	struct clients_stats st;
	struct tc a;
	uint8_t *map;
	int fd, qfds[3];

	(void)state;
	env_up(100);
	open_client(&a, 1000);
	fd = sparse_memfd(8 * 4096);
	assert_int_equal(mr_reg_fd(&a, fd, 8 * 4096), -ENODATA);
	/* Refused before mrocd sealed it: the client can still mend it. */
	assert_false(fcntl(fd, F_GET_SEALS) & F_SEAL_FUTURE_WRITE);
	map = mmap(NULL, 8 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(map != MAP_FAILED);
	memset(map, 0, 7 * 4096);	/* the last page still missing */
	assert_int_equal(mr_reg_fd(&a, fd, 8 * 4096), -ENODATA);
	assert_int_equal(clients_locked_bytes(E.cs), 0);
	map[7 * 4096] = 0;
	assert_int_equal(mr_reg_fd(&a, fd, 8 * 4096), 0);
	assert_int_equal(clients_locked_bytes(E.cs), 8 * 4096);
	munmap(map, 8 * 4096);
	close(fd);

	/* The rings too (libmroc writes the header: the first page alone is there). */
	qfds[0] = sparse_memfd(rlen);
	qfds[1] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	qfds[2] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	map = mmap(NULL, rlen, PROT_READ | PROT_WRITE, MAP_SHARED, qfds[0], 0);
	assert_true(map != MAP_FAILED);
	*(struct mroc_shm_hdr *)map = (struct mroc_shm_hdr){
		.magic = MROC_SHM_MAGIC, .abi_version = MROC_ABI_VERSION, .sq_entries = 64,
		.rq_entries = 64, .cq_entries = 256, .sq_off = sq_off, .rq_off = rq_off,
		.cq_off = cq_off, .region_len = rlen,
	};
	qc.region_len = rlen;
	assert_true(rlen > 4096);
	assert_int_equal(msg(&a, &qc, sizeof(qc), qfds, 3), -ENODATA);
	stats(&st);
	assert_int_equal(st.unpopulated_refused, 3);
	assert_int_equal(clients_locked_bytes(E.cs), 8 * 4096);
	munmap(map, rlen);
	close_client(&a);
	assert_int_equal(clients_locked_bytes(E.cs), 0);
	env_down();
}

/* MR_REG of len bytes of fd: 0 and its lkey, or -errno. */
static int mr_reg_flags(struct tc *c, int fd, uint64_t len, uint32_t flags, uint32_t *lkey)
{
	struct mroc_msg_mr_reg m = { .h.type = MROC_MSG_MR_REG, .len = len,
				     .access = MROC_ACCESS_LOCAL_WRITE, .flags = flags };
	int dup_fd = dup(fd), err;

	assert_true(dup_fd >= 0);
	err = msg(c, &m, sizeof(m), &dup_fd, 1);
	*lkey = m.lkey;
	return err;
}

static int mr_reg_key(struct tc *c, int fd, uint64_t len, uint32_t *lkey)
{
	struct mroc_msg_mr_reg m = { .h.type = MROC_MSG_MR_REG, .len = len,
				     .access = MROC_ACCESS_LOCAL_WRITE };
	int dup_fd = dup(fd), err;

	assert_true(dup_fd >= 0);
	err = msg(c, &m, sizeof(m), &dup_fd, 1);
	*lkey = m.lkey;
	return err;
}

static int mr_dereg(struct tc *c, uint32_t lkey)
{
	struct mroc_msg_mr_dereg m = { .h.type = MROC_MSG_MR_DEREG, .lkey = lkey };

	return msg(c, &m, sizeof(m), NULL, 0);
}

/* The pinned mapping of c's region lkey (the daemon's side). */
static uint8_t *pinned_map(struct tc *c, uint32_t lkey)
{
	const struct client *cl = c->cl;

	for (uint32_t i = 0; i < cl->nmrs; i++)
		if (cl->mrs[i].lkey == lkey)
			return cl->mrs[i].map;
	fail();
	return NULL;
}

/*
 * A registered memfd keeps its pages (PROTOCOL 11a): once mrocd has mapped
 * it, it seals it against writes by new mappings (F_SEAL_FUTURE_WRITE), so
 * the client's hole punching (fallocate, madvise MADV_REMOVE) fails with
 * EPERM: it cannot drop pinned pages for mrocd's data path to fault in
 * again on mrocd's account.  The client's own mapping still writes, and
 * mrocd's sees it.  A memfd mrocd could not seal is refused, counted
 * (seal_refused): closed to new seals (F_SEAL_SEAL).  A QP's rings too.
 */
static void test_punch_refused(void **state)
{
	struct clients_stats st;
	struct tqp t;
	struct tc a;
	uint8_t *map;
	uint32_t qpn, k;
	int fd, fd2;

	(void)state;
	env_up(100);
	open_client(&a, 1000);
	fd = sparse_memfd(4 * 4096);
	map = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(mr_reg_key(&a, fd, 4 * 4096, &k), 0);
	assert_true(fcntl(fd, F_GET_SEALS) & F_SEAL_FUTURE_WRITE);
	assert_int_equal(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(madvise(map + 4096, 4096, MADV_REMOVE), -1);
	assert_int_equal(errno, EPERM);
	memset(map, 0x5a, 4 * 4096);
	assert_int_equal(pinned_map(&a, k)[0], 0x5a);
	assert_int_equal(pinned_map(&a, k)[4 * 4096 - 1], 0x5a);
	assert_true(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED);
	/* Closed to new seals: mrocd could not seal it. */
	fd2 = sealed_memfd(4096);
	assert_int_equal(fcntl(fd2, F_ADD_SEALS, F_SEAL_SEAL), 0);
	assert_int_equal(mr_reg_fd(&a, fd2, 4096), -EPERM);
	close(fd2);
	/* Without MFD_ALLOW_SEALING (so not sealed against shrinking): EPERM as ever. */
	fd2 = memfd_create("t", MFD_CLOEXEC);
	assert_true(fd2 >= 0 && !ftruncate(fd2, 4096));
	assert_int_equal(mr_reg_fd(&a, fd2, 4096), -EPERM);
	close(fd2);
	stats(&st);
	assert_int_equal(st.seal_refused, 1);
	assert_int_equal(clients_locked_bytes(E.cs), 4 * 4096);
	/* The rings. */
	assert_int_equal(qp_create_t(&a, &qpn, &t), 0);
	assert_int_equal(madvise(t.map, 4096, MADV_REMOVE), -1);
	assert_int_equal(errno, EPERM);
	munmap(t.map, t.len);
	close_client(&a);
	assert_int_equal(clients_locked_bytes(E.cs), 0);
	munmap(map, 4 * 4096);
	close(fd);
	env_down();
}

/*
 * A memfd sealed by an earlier registration can be registered again while
 * one of the same client's regions maps it: mrocd copies that mapping
 * (mremap), writable, pinned, from the file's start, longer if every page
 * of the longer range is there (checked before: the copy of a locked
 * mapping is populated, and a missing page would be allocated on mrocd's
 * account).  Not for another client (it could only read the file), not
 * once the last such region is gone, never for rings: EPERM, counted.
 */
static void test_sealed_again(void **state)
{
	struct mroc_msg_qp_create qc = { .h.type = MROC_MSG_QP_CREATE, .mode = MROC_QP_DEFAULT,
					 .sq_entries = 64, .rq_entries = 64, .cq_entries = 256 };
	uint32_t k1, k2, k3, kb, sq_off, rq_off, cq_off;
	struct clients_stats st;
	struct stat fs;
	struct tc a, b;
	uint8_t *map;
	int fd, qfds[3];

	(void)state;
	env_up(100);
	open_client(&a, 1000);
	open_client(&b, 1000);
	fd = sparse_memfd(8 * 4096);
	map = mmap(NULL, 8 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(map != MAP_FAILED);
	memset(map, 1, 4 * 4096);		/* the first half only */
	assert_int_equal(mr_reg_key(&a, fd, 4 * 4096, &k1), 0);
	assert_int_equal(mr_reg_key(&a, fd, 2 * 4096, &k2), 0);	/* shorter */
	pinned_map(&a, k2)[4096] = 7;		/* writable, the same pages */
	assert_int_equal(map[4096], 7);
	/* Longer, over pages never allocated: refused, and none allocated. */
	assert_int_equal(mr_reg_key(&a, fd, 8 * 4096, &k3), -ENODATA);
	assert_int_equal(fstat(fd, &fs), 0);
	assert_int_equal(fs.st_blocks * 512, 4 * 4096);
	memset(map + 4 * 4096, 2, 4 * 4096);
	assert_int_equal(mr_reg_key(&a, fd, 8 * 4096, &k3), 0);
	map[7 * 4096] = 9;
	assert_int_equal(pinned_map(&a, k3)[7 * 4096], 9);
	assert_int_equal(clients_locked_bytes(E.cs), 14 * 4096);
	/* Another client: no. */
	assert_int_equal(mr_reg_key(&b, fd, 4 * 4096, &kb), -EPERM);
	/* Nor as rings. */
	qc.region_len = mroc_shm_layout(64, 64, 256, &sq_off, &rq_off, &cq_off);
	qfds[0] = sealed_memfd(qc.region_len);
	qfds[1] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	qfds[2] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_int_equal(fcntl(qfds[0], F_ADD_SEALS, F_SEAL_FUTURE_WRITE), 0);
	assert_int_equal(msg(&a, &qc, sizeof(qc), qfds, 3), -EPERM);
	stats(&st);
	assert_int_equal(st.seal_refused, 2);
	/* While one region maps it, again; once none does, the file is no one's to map writable. */
	assert_int_equal(mr_dereg(&a, k1), 0);
	assert_int_equal(mr_dereg(&a, k3), 0);
	assert_int_equal(mr_reg_key(&a, fd, 4 * 4096, &k1), 0);	/* from k2's 2 pages */
	assert_int_equal(pinned_map(&a, k1)[3 * 4096], 1);
	assert_int_equal(mr_dereg(&a, k1), 0);
	assert_int_equal(mr_dereg(&a, k2), 0);
	assert_int_equal(mr_reg_key(&a, fd, 4096, &k1), -EPERM);
	stats(&st);
	assert_int_equal(st.seal_refused, 3);
	assert_int_equal(clients_locked_bytes(E.cs), 0);
	close_client(&a);
	close_client(&b);
	assert_int_equal(clients_locked_bytes(E.cs), 0);
	munmap(map, 8 * 4096);
	close(fd);
	env_down();
}

/*
 * An application's memfd registered with MROC_MR_REG_KEEP_FILE registers
 * again after its last region went (a registration cache evicting and
 * registering one buffer): mrocd kept a page of its mapping (counted as
 * locked) and copies it, writable, pinned, longer if every page is there;
 * until the client goes.  Unknown flags: EINVAL.
 */
static void test_sealed_again_kept(void **state)
{
	uint32_t k1, k2;
	struct tc a;
	uint8_t *map;
	int fd;

	(void)state;
	env_up(100);
	open_client(&a, 1000);
	fd = sparse_memfd(8 * 4096);
	map = mmap(NULL, 8 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(map != MAP_FAILED);
	memset(map, 1, 8 * 4096);
	assert_int_equal(mr_reg_flags(&a, fd, 4096, 0x80, &k1), -EINVAL);
	assert_int_equal(mr_reg_flags(&a, fd, 4 * 4096, MROC_MR_REG_KEEP_FILE, &k1), 0);
	assert_int_equal(mr_dereg(&a, k1), 0);
	assert_int_equal(clients_locked_bytes(E.cs), 4096);	/* the anchor's page */
	assert_int_equal(mr_reg_flags(&a, fd, 8 * 4096, MROC_MR_REG_KEEP_FILE, &k2), 0);
	pinned_map(&a, k2)[6 * 4096] = 7;
	assert_int_equal(map[6 * 4096], 7);
	map[5 * 4096] = 9;
	assert_int_equal(pinned_map(&a, k2)[5 * 4096], 9);
	assert_int_equal(clients_locked_bytes(E.cs), 9 * 4096);
	assert_int_equal(mr_dereg(&a, k2), 0);
	/* One anchor a file: the second region's going keeps no other. */
	assert_int_equal(clients_locked_bytes(E.cs), 4096);
	assert_int_equal(mr_reg_key(&a, fd, 2 * 4096, &k1), 0);	/* from the anchor, too */
	assert_int_equal(mr_dereg(&a, k1), 0);
	close_client(&a);
	assert_int_equal(clients_locked_bytes(E.cs), 0);
	munmap(map, 8 * 4096);
	close(fd);
	env_down();
}

/*
 * A hugetlbfs memfd is refused (EOPNOTSUPP) before mrocd maps anything:
 * mincore reads a hugetlb mapping's page tables, so every page of a fresh
 * mapping read missing (ENODATA, whatever the client populated), munmap
 * wants a multiple of the huge page, and mremap cannot copy one.  Its size
 * needs no huge page reserved.
 */
static void test_hugetlb_refused(void **state)
{
	int fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB);
	struct statfs sfs;
	struct tc a;

	(void)state;
	if (fd < 0 || fstatfs(fd, &sfs) || ftruncate(fd, (off_t)sfs.f_bsize)) {
		if (fd >= 0)
			close(fd);
		skip();		/* no hugetlbfs here */
	}
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	env_up(100);
	open_client(&a, 1000);
	assert_int_equal(mr_reg_fd(&a, fd, 4096), -EOPNOTSUPP);
	assert_int_equal(clients_locked_bytes(E.cs), 0);
	assert_false(fcntl(fd, F_GET_SEALS) & F_SEAL_FUTURE_WRITE);
	close_client(&a);
	env_down();
	close(fd);
}

static void test_admin_reserve(void **state)
{
	struct tc u[6], extra, root;
	uint32_t q[TABLE];
	struct clients_stats st;
	int n;

	(void)state;
	env_up2(50, 25);	/* 4 of 8 per user, 6 of 8 for users together */
	for (int i = 0; i < 6; i++)
		open_client(&u[i], 1000 + (uid_t)(i / 2));	/* 3 users, 2 clients each */
	assert_int_equal(try_client(&extra, 1003), -EUSERS);	/* within its share */
	close_client(&extra);
	/* QPs: users 1000 and 1001 hold 6, within their shares (4 each). */
	for (n = 0; n < 6; n++)
		assert_int_equal(qp_create(&u[n % 4], &q[n]), 0);
	assert_int_equal(qp_create(&u[4], &q[6]), -EDQUOT);	/* user 1002: none yet */
	for (n = 0; n < 6; n++)
		assert_int_equal(mr_reg(&u[n % 4]), 0);
	assert_int_equal(mr_reg(&u[5]), -EDQUOT);
	stats(&st);
	assert_int_equal(st.reserve_refused, 3);
	assert_int_equal(st.share_refused, 0);
	/* The administrator gets the reserve. */
	open_client(&root, 0);
	for (n = 6; n < TABLE; n++)
		assert_int_equal(qp_create(&root, &q[n]), 0);
	assert_int_equal(mr_reg(&root), 0);
	/* A user's QP gone: another user may take its place. */
	assert_int_equal(qp_destroy(&u[0], q[0]), 0);
	assert_int_equal(qp_create(&u[4], &q[0]), 0);
	assert_int_equal(qp_create(&u[5], &q[1]), -EDQUOT);
	for (int i = 0; i < 6; i++)
		close_client(&u[i]);
	close_client(&root);
	env_down();
}

static void test_zombies_yield(void **state)
{
	struct tc a, b;
	uint32_t q[TABLE];
	struct clients_stats st;

	(void)state;
	env_up(100);
	open_client(&a, 1000);
	for (int i = 0; i < TABLE; i++) {
		assert_int_equal(qp_create(&a, &q[i]), 0);
		connect_by_hand(q[i], 500 + (uint32_t)i);
	}
	/* The client goes: its 8 QPs are zombies, the table is full of them. */
	close_client(&a);
	open_client(&b, 2000);
	for (int i = 0; i < TABLE; i++)
		assert_int_equal(qp_create(&b, &q[i]), 0);
	stats(&st);
	assert_int_equal(st.zombies_cut, TABLE);
	assert_int_equal(st.qps, TABLE);
	close_client(&b);
	env_down();
}

/*
 * QPs that never connected have nothing to tell a peer: destroyed, or gone
 * with their client, their engine slots are free at once (they were 2 s
 * zombies: a user creating and destroying QPs in a loop held the table).
 */
static void test_unconnected_no_zombie(void **state)
{
	struct tc a, b;
	uint32_t q[TABLE];
	struct engine_qp_info info;
	struct clients_stats st;

	(void)state;
	env_up(100);
	open_client(&a, 1000);
	assert_int_equal(qp_create(&a, &q[0]), 0);
	assert_int_equal(qp_destroy(&a, q[0]), 0);
	assert_int_equal(engine_qp_info(E.eng, q[0], &info), -ENOENT);
	for (int i = 0; i < TABLE; i++)
		assert_int_equal(qp_create(&a, &q[i]), 0);
	close_client(&a);
	for (int i = 0; i < TABLE; i++)
		assert_int_equal(engine_qp_info(E.eng, q[i], &info), -ENOENT);
	open_client(&b, 2000);
	for (int i = 0; i < TABLE; i++)
		assert_int_equal(qp_create(&b, &q[i]), 0);
	stats(&st);
	assert_int_equal(st.zombies_cut, 0);	/* nothing to cut: none was a zombie */
	close_client(&b);
	env_down();
}

/*
 * A QP's receive queue (its RECV entries) and its completion queue (room
 * for every send and receive WR and 8 events, a power of two), both held in
 * the daemon's engine, are charged to its client's budget of registered
 * bytes: 4096 of a region and two QPs of 8 RECV entries (32 bytes each) and
 * 32 CQ entries fill it; a third QP gets EDQUOT until one goes.  Before the
 * CQ was charged, a client's QPs of 8 RECVs and 1,008 sends held about 100 times
 * what it was charged.
 */
#define QP_BYTES	(8 * sizeof(struct mroc_rqe) + 32 * sizeof(struct engine_cqe))

static void test_rq_charged(void **state)
{
	struct clients_limits lim;
	struct tc a, b;
	uint32_t q[4];

	(void)state;
	env_up(0);
	lim = E.cs->lim;
	lim.max_mr_bytes = 4096 + 2 * QP_BYTES;
	clients_set_limits(E.cs, &lim);
	open_client(&a, 1000);
	open_client(&b, 2000);
	assert_int_equal(mr_reg(&a), 0);
	assert_int_equal(qp_create(&a, &q[0]), 0);
	assert_int_equal(qp_create(&a, &q[1]), 0);
	assert_int_equal(qp_create(&a, &q[2]), -EDQUOT);
	/* Another client's bytes are its own. */
	assert_int_equal(qp_create(&b, &q[3]), 0);
	/* Released with the QP. */
	assert_int_equal(qp_destroy(&a, q[0]), 0);
	assert_int_equal(qp_create(&a, &q[0]), 0);
	assert_int_equal(mr_reg(&a), -EDQUOT);
	close_client(&a);
	close_client(&b);
	env_down();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_service_owner),
		cmocka_unit_test(test_uid_share),
		cmocka_unit_test(test_admin_reserve),
		cmocka_unit_test(test_pd_no_wrap),
		cmocka_unit_test(test_unallocated_refused),
		cmocka_unit_test(test_punch_refused),
		cmocka_unit_test(test_sealed_again),
		cmocka_unit_test(test_sealed_again_kept),
		cmocka_unit_test(test_hugetlb_refused),
		cmocka_unit_test(test_zombies_yield),
		cmocka_unit_test(test_unconnected_no_zombie),
		cmocka_unit_test(test_rq_charged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
