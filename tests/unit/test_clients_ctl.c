// SPDX-License-Identifier: MIT
/*
 * mrocd's clients (daemon/clients/), their control requests and doorbells,
 * with a real engine (clients_fixture.h):
 *  - each client's control requests are budgeted (limits.ctl_rate_per_client,
 *    ctl_burst_per_client): a burst at once, then one per interval, the
 *    waits counted; another client's budget is its own; what a user's
 *    clients send before HELLO shares one budget of the user's, and a
 *    client that never said HELLO costs the worker no call; a user's spent
 *    budget pushed out of its table by its other uids stays spent;
 *  - doorbells (#22): the worker sleeps on one fd however many clients,
 *    and takes any number of rung doorbells with one system call;
 *    qps_sending counts the QPs a send work request was taken from.
 * Tenancy (services, shares, reserves, zombies, memory): test_clients.c.
 */
#include "clients_fixture.h"

static void ring(int fd)
{
	uint64_t one = 1;

	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
}

/* Is the worker's fd readable (would its sleep end)? */
static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/*
 * A client's request budget: 100 a second, 4 at once.  clients_wait_ns is
 * what ctl.c waits before it reads the client's next message.
 */
static void test_ctl_budget(void **state)
{
	struct clients_limits lim;
	struct clients_stats st;
	struct tc a, b;
	uint64_t t0, end;
	int n;

	(void)state;
	env_up(0);
	lim = E.cs->lim;
	lim.ctl_rate = 100;
	lim.ctl_burst = 4;
	clients_set_limits(E.cs, &lim);
	open_client(&a, 1000);
	open_client(&b, 2000);
	t0 = now_ns;
	assert_int_equal(clients_wait_ns(a.cl), 0);	/* HELLO is not charged */
	for (n = 0; n < 3; n++) {
		assert_int_equal(qp_destroy(&a, 12345), -ENOENT);	/* bad ones are charged too */
		assert_int_equal(clients_wait_ns(a.cl), 0);
	}
	assert_int_equal(qp_destroy(&a, 12345), -ENOENT);
	assert_int_equal(clients_wait_ns(a.cl), 10000000);	/* the burst spent: 1 s / 100 */
	/* Another client's budget is its own. */
	assert_int_equal(qp_destroy(&b, 12345), -ENOENT);
	assert_int_equal(clients_wait_ns(b.cl), 0);
	stats(&st);
	assert_int_equal(st.ctl_deferred, 1);
	now_ns += 4000000;
	assert_int_equal(clients_wait_ns(a.cl), 6000000);
	now_ns += 6000000;
	assert_int_equal(clients_wait_ns(a.cl), 0);
	/* A client in a loop, read whenever its budget allows, for 1 s: the burst and the rate. */
	now_ns = t0 + 1000000000ULL;
	end = now_ns + 1000000000ULL;
	for (n = 0; now_ns < end;) {
		uint64_t w = clients_wait_ns(a.cl);

		if (w) {
			now_ns += w;
			continue;
		}
		assert_int_equal(qp_destroy(&a, 12345), -ENOENT);
		n++;
	}
	assert_in_range(n, 100, 104);
	/* Before HELLO: one budget for all of a user's new clients. */
	{
		struct ucred cred = { .pid = 77, .uid = 3000, .gid = 3000 };
		struct mroc_msg_hello m = { .h.type = MROC_MSG_HELLO,
					    .abi_version = MROC_ABI_VERSION };
		struct tc c[5], d;
		unsigned calls = ncalls;

		for (n = 0; n < 5; n++) {
			assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
						    c[n].sock), 0);
			c[n].cl = clients_open(E.cs, c[n].sock[0], &cred, false);
			assert_non_null(c[n].cl);
			if (n < 4) {
				int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

				assert_int_equal(clients_wait_ns(c[n].cl), 0);
				assert_int_equal(msg(&c[n], &m, sizeof(m), &fd, 1), 0);
			}
		}
		assert_int_equal(clients_wait_ns(c[4].cl), 10000000);
		/* Its own budget after HELLO; another user's new client is not held. */
		assert_int_equal(clients_wait_ns(c[0].cl), 0);
		assert_int_equal(try_client(&d, 4000), 0);
		/* One worker call a HELLO, one an end; none for a client without HELLO. */
		assert_int_equal(ncalls - calls, 4 + 1);
		calls = ncalls;
		close_client(&c[4]);
		assert_int_equal(ncalls, calls);
		for (n = 0; n < 4; n++)
			close_client(&c[n]);
		assert_int_equal(ncalls - calls, 4);
		close_client(&d);
	}
	/* Rate 0: no budget. */
	lim.ctl_rate = 0;
	clients_set_limits(E.cs, &lim);
	for (n = 0; n < 100; n++)
		assert_int_equal(qp_destroy(&a, 12345), -ENOENT);
	assert_int_equal(clients_wait_ns(a.cl), 0);
	now_ns = 1000000;
	close_client(&a);
	close_client(&b);
	env_down();
}

/* A client of uid that never says HELLO, its n messages (bad ones: charged all the same). */
static void pre_hello(struct tc *c, uid_t uid, int n)
{
	struct ucred cred = { .pid = 100 + (pid_t)uid, .uid = uid, .gid = uid };

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, c->sock), 0);
	c->cl = clients_open(E.cs, c->sock[0], &cred, false);
	assert_non_null(c->cl);
	while (n--)
		assert_int_equal(qp_destroy(c, 12345), -EPROTO);
}

/*
 * Users' budgets before HELLO live in a table of HELLO_SLOTS entries, a user's
 * among HELLO_PROBE of them: a user with more uids than that (a range of
 * subordinate uids, as rootless containers get) pushed its own spent entry
 * out with the others and came back with a whole budget, again and again:
 * the budget bounded nothing.  A spent budget pushed out is now carried by
 * the entry that replaces it.
 */
static void test_hello_budget_evicted(void **state)
{
	struct clients_limits lim;
	struct tc u, v[HELLO_PROBE + 1], back;
	const uid_t uid = 5000;

	(void)state;
	env_up(0);
	lim = E.cs->lim;
	lim.ctl_rate = 100;
	lim.ctl_burst = 4;
	lim.max_clients = 64;
	lim.max_per_uid = 64;
	clients_set_limits(E.cs, &lim);
	pre_hello(&u, uid, 5);
	assert_true(clients_wait_ns(u.cl) > 0);
	/* uids of the same probe window, each spending more than uid did. */
	for (int k = 0; k <= HELLO_PROBE; k++)
		pre_hello(&v[k], uid + HELLO_SLOTS * (uid_t)(k + 1), 6);
	/* uid again: still over its budget. */
	pre_hello(&back, uid, 0);
	assert_true(clients_wait_ns(back.cl) > 0);
	close_client(&back);
	for (int k = 0; k <= HELLO_PROBE; k++)
		close_client(&v[k]);
	close_client(&u);
	env_down();
}

static void test_doorbells(void **state)
{
	struct tc c[4];
	struct tqp q[8];
	struct clients_stats st;
	uint32_t qpn;
	int fds[8], db;

	(void)state;
	env_up(100);
	for (int i = 0; i < 4; i++) {
		open_client(&c[i], 1000 + (uid_t)i);
		assert_int_equal(qp_create_t(&c[i], &qpn, &q[2 * i]), 0);
		assert_int_equal(qp_create_t(&c[i], &qpn, &q[2 * i + 1]), 0);
	}
	/* One fd to sleep on for every client (it was one per client). */
	assert_int_equal(clients_fds(E.cs, fds, 8), 1);
	assert_false(readable(fds[0]));
	/* A busy worker's look finds nothing: one system call, no QP read. */
	assert_int_equal(clients_poll(E.cs, 1000000), 0);
	stats(&st);
	assert_int_equal(st.doorbell_calls, 1);
	assert_int_equal(st.doorbells, 0);
	assert_int_equal(st.doorbell_qps, 0);
	/* Three clients ring, one of them twice: the sleep ends, one call takes them all. */
	ring(c[0].doorbell);
	ring(c[2].doorbell);
	ring(c[3].doorbell);
	ring(c[3].doorbell);
	assert_true(readable(fds[0]));
	clients_fd_ready(E.cs, 0);
	stats(&st);
	assert_int_equal(st.doorbell_calls, 2);
	assert_int_equal(st.doorbells, 3);
	assert_int_equal(st.doorbell_qps, 6);	/* the rung clients' QPs, not client 1's */
	assert_int_equal(st.qps_hot, 0);	/* their rings are empty */
	/* Taken, never read: not readable again until the next ring. */
	assert_false(readable(fds[0]));
	/* A busy worker looks once per DOORBELL_POLL_NS, not every loop. */
	ring(c[1].doorbell);
	assert_int_equal(clients_poll(E.cs, 1000000 + 1000), 0);
	stats(&st);
	assert_int_equal(st.doorbell_calls, 2);
	assert_int_equal(clients_poll(E.cs, 1000000 + 20000), 0);
	stats(&st);
	assert_int_equal(st.doorbell_calls, 3);
	assert_int_equal(st.doorbells, 4);
	/*
	 * A QP's own doorbell: the worker looks at that QP alone, and a post
	 * there makes it hot (ring.h's producer side, as libmroc posts).
	 */
	memset(ring_prod_slot(&q[5].sq), 0, sizeof(struct mroc_sqe));
	ring_prod_commit(&q[5].sq, 1);
	ring(q[5].doorbell);
	clients_fd_ready(E.cs, 0);
	stats(&st);
	assert_int_equal(st.doorbells, 5);
	assert_int_equal(st.doorbell_qps, 6 + 2 + 1);
	assert_int_equal(st.qps_hot, 1);
	assert_int_equal(st.qps_sending, 0);	/* hot, not polled yet */
	/* The next poll takes the work request: a QP that sends, counted once. */
	assert_int_equal(clients_poll(E.cs, 1000000 + 21000), 1);
	stats(&st);
	assert_int_equal(st.qps_sending, 1);
	memset(ring_prod_slot(&q[5].sq), 0, sizeof(struct mroc_sqe));
	ring_prod_commit(&q[5].sq, 1);
	assert_int_equal(clients_poll(E.cs, 1000000 + 22000), 1);
	stats(&st);
	assert_int_equal(st.qps_sending, 1);
	/* Its client gone, its QPs no longer count. */
	close_client(&c[2]);
	stats(&st);
	assert_int_equal(st.qps_sending, 0);
	/*
	 * A client gone: its doorbell leaves the set with it, although the
	 * file lives on (here a dup; a real client holds its own fd).
	 */
	db = dup(c[0].doorbell);
	assert_true(db >= 0);
	close_client(&c[0]);
	ring(db);
	ring(c[1].doorbell);
	clients_fd_ready(E.cs, 0);
	stats(&st);
	assert_int_equal(st.doorbells, 6);
	close(db);
	close_client(&c[1]);
	close_client(&c[3]);
	for (int i = 0; i < 8; i++)
		munmap(q[i].map, q[i].len);
	env_down();
}

/*
 * n work requests of an opcode that does not exist posted to q, 8 at a time,
 * step ns of the worker's clock apart, their error completions read from cq;
 * returns the completions read (fewer: the client was disconnected).
 */
static unsigned post_bad(struct tqp *q, struct ring_view *cq, unsigned n, uint64_t *now,
			 uint64_t step)
{
	unsigned got = 0;

	for (unsigned i = 0; i < n; i += 8) {
		unsigned k = n - i < 8 ? n - i : 8;

		for (unsigned j = 0; j < k; j++) {
			struct mroc_sqe *e = ring_prod_slot(&q->sq);

			memset(e, 0, sizeof(*e));
			e->opcode = 0xff;
			ring_prod_commit(&q->sq, 1);
		}
		ring(q->doorbell);
		clients_fd_ready(E.cs, 0);
		clients_poll(E.cs, *now);
		for (int64_t a = ring_cons_avail(cq); a > 0; a--, got++)
			ring_cons_release(cq, 1);
		*now += step * k;
	}
	return got;
}

/*
 * A client is disconnected for bad work requests only in a burst: more than
 * BAD_WR_LIMIT (1,024) within a second.  Counted over its life, a
 * long-lived client that now and then posts to a QP in error was
 * disconnected in the end.
 */
static void test_bad_wrs_burst(void **state)
{
	struct clients_stats st;
	struct ring_view cq;
	struct tqp q;
	struct tc c;
	uint32_t qpn, sq_off, rq_off, cq_off;
	uint64_t now = 1000000;

	(void)state;
	env_up(100);
	open_client(&c, 1000);
	assert_int_equal(qp_create_t(&c, &qpn, &q), 0);
	mroc_shm_layout(8, 8, 32, &sq_off, &rq_off, &cq_off);
	ring_view_init(&cq, q.map, cq_off, 32, sizeof(struct mroc_cqe), false);
	/* 1,000 a second for 3 s: each gets its error, the client stays. */
	assert_int_equal(post_bad(&q, &cq, 3000, &now, 1000000), 3000);
	stats(&st);
	assert_int_equal(st.kicked, 0);
	/* 1,032 within a second: disconnected. */
	assert_true(post_bad(&q, &cq, 1032, &now, 1000) < 1032);
	stats(&st);
	assert_int_equal(st.kicked, 1);
	close_client(&c);
	munmap(q.map, q.len);
	env_down();
}

/*
 * A worker spinning with nothing to do (clients_idle, worker.c's busy-poll
 * turns) looks at the doorbells every DOORBELL_IDLE_NS, not every
 * DOORBELL_POLL_NS: a post to a QP that went cold when the worker slept is
 * taken within 2 us of its doorbell, and the next poll consumes it.
 */
static void test_doorbell_idle_look(void **state)
{
	struct tc c;
	struct tqp q;
	struct clients_stats st;
	uint32_t qpn;
	uint64_t t = 1000000;

	(void)state;
	env_up(100);
	open_client(&c, 1000);
	assert_int_equal(qp_create_t(&c, &qpn, &q), 0);
	assert_int_equal(clients_poll(E.cs, t), 0);	/* a busy look: the next is 20 us away */
	assert_true(clients_may_sleep(E.cs));	/* slept: the QP is cold */
	memset(ring_prod_slot(&q.sq), 0, sizeof(struct mroc_sqe));
	ring_prod_commit(&q.sq, 1);
	ring(q.doorbell);
	/* Polled busy 1 us later, the doorbell waits for the next 20 us look. */
	assert_int_equal(clients_poll(E.cs, t + 1000), 0);
	/* A spinning turn takes it now, and the next poll the work request. */
	assert_true(clients_idle(E.cs, t + 1000));
	stats(&st);
	assert_int_equal(st.doorbells, 1);
	assert_int_equal(st.qps_hot, 1);
	assert_int_equal(clients_poll(E.cs, t + 1100), 1);
	/* No second look within DOORBELL_IDLE_NS; then one, which finds nothing. */
	stats(&st);
	assert_int_equal(st.doorbell_calls, 2);
	assert_false(clients_idle(E.cs, t + 2000));
	stats(&st);
	assert_int_equal(st.doorbell_calls, 2);
	assert_false(clients_idle(E.cs, t + 3100));
	stats(&st);
	assert_int_equal(st.doorbell_calls, 3);
	close_client(&c);
	munmap(q.map, q.len);
	env_down();
}

/*
 * Work that no doorbell brought (a wake-up lost, or a client that died
 * between its post and its ring) is found by the sweep of cold QPs: taken
 * at the second sweep that sees it unconsumed, and counted.  Work whose
 * doorbell came is never counted, even when the worker was away past a sweep.
 */
static void test_stranded_work(void **state)
{
	struct tc c;
	struct tqp q[3];
	struct clients_stats st;
	uint64_t t = 5000000;
	uint32_t qpn;

	(void)state;
	env_up(100);
	open_client(&c, 1000);
	for (int i = 0; i < 3; i++)
		assert_int_equal(qp_create_t(&c, &qpn, &q[i]), 0);
	/* Posted to three cold QPs; q[0]'s doorbell never rings, the others' late. */
	for (int i = 0; i < 3; i++) {
		memset(ring_prod_slot(&q[i].sq), 0, sizeof(struct mroc_sqe));
		ring_prod_commit(&q[i].sq, 1);
	}
	assert_int_equal(clients_poll(E.cs, t), 0);	/* a sweep sees all three, cold */
	ring(q[1].doorbell);
	clients_fd_ready(E.cs, 0);
	assert_int_equal(clients_poll(E.cs, t + 1000), 1);	/* q[1], hot now */
	/*
	 * q[2] rings, and the worker is kept away until the next sweep is due:
	 * its doorbell is taken before the sweep looks, so it is not counted.
	 */
	ring(q[2].doorbell);
	stats(&st);
	assert_int_equal(st.rings_stranded, 0);
	/* The sweep finds q[0]'s work where it was: taken in the same poll, with q[2]'s. */
	assert_int_equal(clients_poll(E.cs, t + SWEEP_NS), 2);
	stats(&st);
	assert_int_equal(st.rings_stranded, 1);
	assert_int_equal(st.wrs, 3);
	/* All cold again, empty: later sweeps count nothing. */
	assert_int_equal(clients_may_sleep(E.cs), true);
	assert_int_equal(clients_poll(E.cs, t + 3 * SWEEP_NS), 0);
	assert_int_equal(clients_poll(E.cs, t + 5 * SWEEP_NS), 0);
	stats(&st);
	assert_int_equal(st.rings_stranded, 1);
	close_client(&c);
	for (int i = 0; i < 3; i++)
		munmap(q[i].map, q[i].len);
	env_down();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ctl_budget),
		cmocka_unit_test(test_hello_budget_evicted),
		cmocka_unit_test(test_doorbells),
		cmocka_unit_test(test_bad_wrs_burst),
		cmocka_unit_test(test_doorbell_idle_look),
		cmocka_unit_test(test_stranded_work),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
