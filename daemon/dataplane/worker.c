// SPDX-License-Identifier: MIT
/* The data-plane worker (see worker.h). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "evfd.h"
#include "idle.h"
#include "log.h"
#include "mroc_util.h"
#include "peers.h"
#include "portaddr.h"
#include "worker.h"

#define BATCH		64
#define RX_DRAIN_BATCHES	16	/* receive batches per loop before timers run */
#define TX_DRAIN_BATCHES	16	/* send batches per loop before the ring is read again */
#define MAX_POLL_FDS	80	/* the backend (64 sockets, egress, hand-off) + the clients' epoll set + ours */
/* Packets the kernel did not take (a stopped device queue): kicked again this soon. */
#define TX_RETRY_NS	50000

struct worker {
	struct worker_cfg cfg;
	pthread_t thread;
	int doorbell;			/* eventfd: wakes the worker for a call or stop */
	atomic_bool stop;

	/* One call at a time: the caller holds call_lock until it is answered. */
	pthread_mutex_t call_lock;
	pthread_mutex_t lock;
	pthread_cond_t done_cond;
	int (*call_fn)(void *arg, uint64_t now);
	void *call_arg;
	int call_ret;
	atomic_bool call_pending;
	bool call_done;

	struct worker_stats st;		/* written by the worker, copied under lock */
	uint64_t rescued;		/* engine_rescued() when last logged */
	uint32_t rx_peer;		/* do_rx: whose the packet in engine_rx is (addr_ok) */
	struct pollfd pfd[MAX_POLL_FDS];	/* sleep_until's */
	int fds[MAX_POLL_FDS];
};

uint64_t mrocd_now_ns(void)
{
	return mono_ns();
}

static void ring_doorbell(struct worker *w)
{
	uint64_t one = 1;

	if (write(w->doorbell, &one, sizeof(one)) < 0 && errno != EAGAIN)
		pr_warn_rl("worker: doorbell: %s", strerror(errno));
}

static void serve_call(struct worker *w, uint64_t now)
{
	int ret;

	if (!atomic_load_explicit(&w->call_pending, memory_order_acquire))
		return;
	ret = w->call_fn(w->call_arg, now);
	w->st.calls++;
	pthread_mutex_lock(&w->lock);
	w->call_ret = ret;
	w->call_done = true;
	atomic_store_explicit(&w->call_pending, false, memory_order_release);
	pthread_cond_signal(&w->done_cond);
	pthread_mutex_unlock(&w->lock);
}

/*
 * engine_set_addr_hook: a packet to a QP of peer came from src, which the
 * table gave another handle (or none): it is the peer's if the peer claims
 * src, or ("token") the REQ awaiting proof named it.  A port address two
 * peers claim is so each one's (peers.h).
 */
static bool addr_ok(void *ctx, uint32_t peer, const struct engine_rx_meta *meta,
		    const uint8_t *ext, size_t len)
{
	struct worker *w = ctx;
	const struct mroc_addr *src = meta->src;

	if (!src || !(peers_claims(w->cfg.be->peers, peer, src) ||
		      (ext && portaddr_has(ext, len, src))))
		return false;
	w->rx_peer = peer;
	return true;
}

/* backend.seal: "aead" seals a packet for the addresses it leaves between (a failure is counted). */
static void seal_one(void *ctx, struct engine_txbuf *b, const struct mroc_addr *src,
		     const struct mroc_addr *dst)
{
	aead_seal(ctx, b, src, dst);
}

/*
 * "aead": a CONNECT_REQ over the key derivation budget gets a cookie reply
 * (aead.h), back the way it came: no peer is made for its source.
 */
static void cookie_reply(struct worker *w, const struct backend_pkt *pkt)
{
	struct backend *be = w->cfg.be;
	uint8_t out[AEAD_COOKIE_REPLY_LEN];
	int n;

	if (!be->ops->reply)
		return;
	n = aead_cookie_reply(w->cfg.aead, pkt->data, pkt->len, &pkt->src, &pkt->dst, out,
			      sizeof(out));
	if (n > 0)
		be->ops->reply(be, pkt, out, (uint32_t)n);
}

/* Received packets into the engine.  Returns how many. */
static int do_rx(struct worker *w, uint64_t now)
{
	struct backend *be = w->cfg.be;
	struct backend_pkt pkts[BATCH];
	int n = be->ops->rx(be, pkts, BATCH);

	/* One batch: a path's ACKs in it are applied as its newest (engine_rx_begin). */
	if (n > 0)
		engine_rx_begin(w->cfg.eng);
	for (int i = 0; i < n; i++) {
		struct engine_rx_meta meta = { .sport = pkts[i].sport, .ce = pkts[i].ce,
					       .src = &pkts[i].src, .arrival = pkts[i].arrival };
		/* Only a connection request may add a peer: spoofed sources cannot fill the table. */
		bool req = mroc_pkt_opcode(pkts[i].data, pkts[i].len) == MROC_OP_CONNECT_REQ;
		bool known;
		int len, err;

		/*
		 * No host sends from a group, a loopback, a link-local or an
		 * unspecified address (addr_unicast): a spoofed REQ "from" one made
		 * it a peer, and our answers went to the group.  Before any lookup,
		 * key derivation or state (#24, docs/PROTOCOL.md 11a).  Loopback
		 * sources only where the operator lets applications connect to
		 * loopback addresses (daemons on 127.0.0.1 and 127.0.0.2).
		 */
		if (!addr_unicast(&pkts[i].src) &&
		    !(w->cfg.allow_loopback && addr_loopback(&pkts[i].src))) {
			w->st.rx_bad_source++;
			continue;
		}
		known = !peers_find(be->peers, &pkts[i].src, &meta.peer);

		/*
		 * "aead": no key derivation for a source we do not know unless it
		 * asks to connect; a port address is known before anything is
		 * sent from it (the sealed REQ or REP announced it).
		 */
		if (w->cfg.aead && !known && !req) {
			w->st.rx_unknown_source++;
			continue;
		}
		/* The backend's buffer, ours until rx_release: opened in place. */
		len = aead_open(w->cfg.aead, (uint8_t *)pkts[i].data, pkts[i].len, &pkts[i].src,
				&pkts[i].dst, &meta.sealed);
		if (len < 0) {
			if (len == -EAGAIN)
				cookie_reply(w, &pkts[i]);
			/* -ENOMSG: a cookie reply, the aead layer's own (counted there). */
			if (len != -ENOMSG)
				w->st.rx_rejected++;
			continue;
		}
		/* Heard from: only a packet that opened ("aead") keeps its peer. */
		if (known)
			peers_touch(be->peers, meta.peer);
		/*
		 * A new peer only for a REQ the mode authenticated as far as it can:
		 * sealed in "aead" (an unsealed one from a peer we know gets its
		 * refusal; from anyone else, nothing); from its source in the others.
		 */
		if (req && (!w->cfg.aead || meta.sealed == ENGINE_RX_SEALED)) {
			if (peers_get_handle_req(be->peers, &pkts[i].src, &meta.peer)) {
				w->st.rx_unknown_source++;
				continue;
			}
		} else if (req && !known) {
			w->st.rx_unknown_source++;
			continue;
		} else if (!known) {
			/* Maybe its QP's peer's port address, not known yet (addr_ok). */
			meta.peer = ENGINE_PEER_NONE;
		}
		w->rx_peer = meta.peer;
		err = engine_rx(w->cfg.eng, now, pkts[i].data, (size_t)len, &meta);
		if (err && meta.peer == ENGINE_PEER_NONE)
			w->st.rx_unknown_source++;
		else if (err)
			w->st.rx_rejected++;
		/*
		 * A duplicate is heard too: its ACK goes back by the way it came
		 * (engine_rx_heard); a repeat (a replay) no more than that.  A REQ
		 * is authenticated only when sealed ("aead").
		 */
		if (engine_rx_heard(err) && be->ops->heard && w->rx_peer != ENGINE_PEER_NONE)
			be->ops->heard(be, &pkts[i], w->rx_peer, now,
				       req && meta.sealed != ENGINE_RX_SEALED ? EGRESS_HEARD_REQ :
				       engine_rx_repeat(w->cfg.eng) ? EGRESS_HEARD_REPEAT :
				       EGRESS_HEARD_NEWS);
	}
	if (n > 0) {
		engine_rx_end(w->cfg.eng, now);
		be->ops->rx_release(be, pkts, n);
		w->st.rx_pkts += (uint64_t)n;
	}
	return n > 0 ? n : 0;
}

/*
 * Everything the engine wants to send now.  Returns how many went out.
 * After each kick the clock is read again (*now moves on): the engine
 * hears how long the batch took from its stamp to the kick's end
 * (engine_tx_done), and the next batch is stamped after it; in copy mode a
 * kick of 64 takes tens of microseconds, which would count as RTT.
 * At most TX_DRAIN_BATCHES: what the engine still has goes at the next turn,
 * after the receive ring, the timers and any call were served (an engine
 * that always had more, as a CM message that stayed due did, would keep the
 * worker here for good, and mrocd would answer nobody).
 */
static int do_tx(struct worker *w, uint64_t *now)
{
	struct backend *be = w->cfg.be;
	struct engine_txbuf bufs[BATCH];
	int total = 0;

	for (int b = 0; b < TX_DRAIN_BATCHES; b++) {
		/* As many buffers as the engine may use (a receiver's ACK: 2 or 3, not 64). */
		int want = engine_tx_want(w->cfg.eng, BATCH), got, used;

		if (!want) {
			be->ops->tx_send(be, bufs, 0, 0);	/* the kicks for what the rings still hold */
			break;
		}
		got = be->ops->tx_get(be, bufs, want);
		if (got <= 0)
			break;
		aead_reserve(w->cfg.aead, bufs, got);
		used = engine_tx(w->cfg.eng, *now, bufs, got);
		/* The backend seals each (be->seal) once it chose the addresses the seal covers. */
		aead_unreserve(w->cfg.aead, bufs, used);
		total += be->ops->tx_send(be, bufs, used, got);
		if (used > 0) {
			uint64_t sent = mrocd_now_ns();

			engine_tx_done(w->cfg.eng, *now, sent);
			*now = sent;
		}
		if (used < got)
			break;
	}
	w->st.tx_pkts += (uint64_t)total;
	return total;
}

static void do_cqes(struct worker *w, uint64_t now)
{
	struct engine_cqe cqes[BATCH];
	int n;

	do {
		n = engine_poll_cq(w->cfg.eng, cqes, BATCH);
		for (int i = 0; i < n && w->cfg.on_cqe; i++)
			w->cfg.on_cqe(w->cfg.ctx, &cqes[i], now);
	} while (n == BATCH);
}

/* Sleep until a packet, a doorbell (ours or a client's), or the next deadline. */
static void sleep_until(struct worker *w, uint64_t deadline, uint64_t now)
{
	struct pollfd *pfd = w->pfd;
	int *fds = w->fds;
	struct backend *be = w->cfg.be;
	struct timespec ts;
	int nbe, n;

	nbe = be->ops->poll_fds(be, fds, MAX_POLL_FDS - 1);
	n = nbe;
	if (w->cfg.extra_fds)
		n += w->cfg.extra_fds(w->cfg.ctx, fds + n, MAX_POLL_FDS - 1 - n);
	fds[n++] = w->doorbell;
	for (int i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	/*
	 * Nanoseconds, not poll()'s whole milliseconds: pacing gaps and RTOs are
	 * tens of microseconds, and a deadline rounded up to 1 ms made the pacer
	 * miss its rate.  With no deadline, wake now and then anyway: cheap, robust.
	 */
	if (deadline == UINT64_MAX)
		deadline = now + 1000000000ULL;
	deadline = deadline > now ? deadline - now : 0;
	ts = (struct timespec){ .tv_sec = (time_t)(deadline / 1000000000ULL),
				.tv_nsec = (long)(deadline % 1000000000ULL) };
	w->st.sleeps++;
	if (ppoll(pfd, (nfds_t)n, &ts, NULL) <= 0)
		return;
	/*
	 * Ours is an eventfd, readable until read.  The extra fds are their
	 * owner's to take (the clients' epoll set of doorbells).
	 */
	for (int i = nbe; i < n; i++) {
		if (!(pfd[i].revents & POLLIN))
			continue;
		if (i < n - 1 && w->cfg.fd_ready)
			w->cfg.fd_ready(w->cfg.ctx, i - nbe);
		else if (i == n - 1 && evfd_drain(pfd[i].fd))
			w->st.wakeups_doorbell++;
	}
}

static void yield_cpu(void)
{
	sched_yield();
}

/* Ports whose link came back up (bit p: port p): their share of every QP's paths goes back. */
static void ports_up(struct worker *w, uint32_t up, uint64_t now)
{
	for (unsigned p = 0; up; p++, up >>= 1)
		if (up & 1)
			engine_port_up(w->cfg.eng, p, now);
}

#ifdef MROC_ENGINE_CHECK
/*
 * A debug build (make CPPFLAGS=-DMROC_ENGINE_CHECK) checks the engine's
 * counts against its scoreboards every 10 ms and stops at the first
 * disagreement, with the engine's state still as it went wrong.
 */
static void check_engine(struct worker *w, uint64_t now)
{
	static __thread uint64_t next;
	char why[256];

	if (now < next)
		return;
	next = now + 10000000;
	if (engine_check(w->cfg.eng, why, sizeof(why))) {
		pr_err("worker: engine check failed: %s", why);
		abort();
	}
}
#else
static void check_engine(struct worker *w, uint64_t now)
{
	(void)w;
	(void)now;
}
#endif

/*
 * The engine's timers found QPs whose work nothing would have sent (a bug:
 * engine_check names the state in the tests) and sent it: say so in the
 * log, where a stalled transfer's cause would otherwise leave no trace.
 */
static void rescued_log(struct worker *w)
{
	uint64_t r = engine_rescued(w->cfg.eng);

	if (r == w->rescued)
		return;
	pr_warn_rl("worker: %llu QPs found with work nothing would send, woken by their timers "
		   "(engine tx_stranded, tx_peer_rescued): an engine bug, `mroc-cli qp show -d` "
		   "shows the QPs", (unsigned long long)(r - w->rescued));
	w->rescued = r;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t idle_since = 0, mark = mrocd_now_ns();
	struct idle_spin spin = { 0 };

	/* The default 50 us of timer slack would stretch every short sleep (pacing, RTOs). */
	if (prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0))
		pr_debug("worker: PR_SET_TIMERSLACK: %s", strerror(errno));
	while (!atomic_load_explicit(&w->stop, memory_order_acquire)) {
		uint64_t now = mrocd_now_ns(), start = now, deadline, tick;
		int work;

		w->st.loops++;
		serve_call(w, now);
		if (w->cfg.be->ops->tick)
			ports_up(w, w->cfg.be->ops->tick(w->cfg.be, now), now);
		/*
		 * What is waiting in the receive ring goes in before any timer
		 * runs (up to RX_DRAIN_BATCHES): after the worker waited for a
		 * CPU, the ACKs there would otherwise be late for RTOs that
		 * fire first, spuriously, by the thousand at 4,000 QPs.
		 * Receive batches after the first, and the sending after any
		 * work, run on a fresh clock: the engine takes a packet's wait in
		 * the host as now minus its arrival stamp, and stamps what it
		 * sends with now; a clock from before the work would hide the one
		 * and add the other to RTTs (issue #22).  Never backwards: what
		 * follows uses the newer time.
		 */
		work = 0;
		for (int b = 0, n = BATCH; b < RX_DRAIN_BATCHES && n == BATCH; b++) {
			if (b)
				now = mrocd_now_ns();
			n = do_rx(w, now);
			work += n;
		}
		deadline = engine_next_deadline(w->cfg.eng);
		if (deadline <= now) {
			engine_advance(w->cfg.eng, now);
			work++;
			rescued_log(w);
		}
		tick = w->cfg.on_tick ? w->cfg.on_tick(w->cfg.ctx, now) : UINT64_MAX;
		if (w->cfg.on_poll) {
			/* Completions out first, so clients' CQ room is known exactly. */
			do_cqes(w, now);
			work += w->cfg.on_poll(w->cfg.ctx, now);
		}
		if (work)
			now = mrocd_now_ns();
		work += do_tx(w, &now);
		do_cqes(w, now);
		check_engine(w, now);
		if (w->cfg.on_flush)
			w->cfg.on_flush(w->cfg.ctx);
		if (work) {
			if (idle_since)
				w->st.spin_ns += start - idle_since;
			w->st.busy_ns += now - mark;
			mark = now;
			idle_since = 0;
			continue;
		}
		/* Adaptive: keep spinning a little while traffic may come back. */
		if (!idle_since)
			idle_since = now;
		if (now - idle_since < (uint64_t)w->cfg.busy_poll_us * 1000) {
			if (w->cfg.on_idle && w->cfg.on_idle(w->cfg.ctx, now))
				continue;	/* a doorbell: its QP is polled at once */
			idle_spin_turn(&spin, now, mrocd_now_ns, yield_cpu);
			w->st.idle_yields = spin.yields;
			continue;
		}
		deadline = engine_next_deadline(w->cfg.eng);
		if (tick < deadline)
			deadline = tick;
		if (w->cfg.be->ops->tx_flush && w->cfg.be->ops->tx_flush(w->cfg.be) &&
		    deadline > now + TX_RETRY_NS)
			deadline = now + TX_RETRY_NS;
		if ((w->cfg.may_sleep && !w->cfg.may_sleep(w->cfg.ctx)) ||
		    (w->cfg.be->ops->may_sleep && !w->cfg.be->ops->may_sleep(w->cfg.be))) {
			w->st.spin_ns += now - idle_since;
			idle_since = 0;
			continue;	/* a client posted, or a worker handed us work, meanwhile */
		}
		w->st.spin_ns += now - idle_since;
		w->st.busy_ns += now - mark;
		sleep_until(w, deadline, now);
		mark = mrocd_now_ns();
		w->st.idle_ns += mark - now;
		idle_since = 0;
	}
	return NULL;
}

int worker_start(const struct worker_cfg *cfg, struct worker **out)
{
	struct worker *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return -ENOMEM;
	w->cfg = *cfg;
	w->doorbell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->doorbell < 0) {
		err = -errno;
		free(w);
		return err;
	}
	pthread_mutex_init(&w->call_lock, NULL);
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->done_cond, NULL);
	if (cfg->be->peers)
		engine_set_addr_hook(cfg->eng, addr_ok, w);
	if (cfg->aead) {
		cfg->be->seal = seal_one;
		cfg->be->seal_ctx = cfg->aead;
	}
	err = -pthread_create(&w->thread, NULL, worker_main, w);
	if (err) {
		close(w->doorbell);
		free(w);
		return err;
	}
	if (cfg->index) {
		char name[16];

		snprintf(name, sizeof(name), "mrocd-worker%u", cfg->index % 100);
		pthread_setname_np(w->thread, name);
	} else {
		pthread_setname_np(w->thread, "mrocd-worker");
	}
	if (cfg->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cfg->cpu, &set);
		err = pthread_setaffinity_np(w->thread, sizeof(set), &set);
		if (err)
			pr_warn("worker: pinning to CPU %d: %s", cfg->cpu, strerror(err));
	}
	*out = w;
	return 0;
}

void worker_stop(struct worker *w)
{
	if (!w)
		return;
	atomic_store_explicit(&w->stop, true, memory_order_release);
	ring_doorbell(w);
	pthread_join(w->thread, NULL);
	close(w->doorbell);
	pthread_mutex_destroy(&w->call_lock);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->done_cond);
	free(w);
}

int worker_call(struct worker *w, int (*fn)(void *arg, uint64_t now), void *arg)
{
	int ret;

	pthread_mutex_lock(&w->call_lock);
	pthread_mutex_lock(&w->lock);
	w->call_fn = fn;
	w->call_arg = arg;
	w->call_done = false;
	atomic_store_explicit(&w->call_pending, true, memory_order_release);
	pthread_mutex_unlock(&w->lock);
	ring_doorbell(w);
	pthread_mutex_lock(&w->lock);
	while (!w->call_done)
		pthread_cond_wait(&w->done_cond, &w->lock);
	ret = w->call_ret;
	pthread_mutex_unlock(&w->lock);
	pthread_mutex_unlock(&w->call_lock);
	return ret;
}

void worker_set_busy_poll(struct worker *w, uint32_t us)
{
	w->cfg.busy_poll_us = us;
}

void worker_set_allow_loopback(struct worker *w, bool allow)
{
	w->cfg.allow_loopback = allow;
}

/* The calling thread's schedstat: run time and run-queue wait, in ns (0 0 without it). */
static void read_schedstat(uint64_t *cpu_ns, uint64_t *runq_ns)
{
	unsigned long long run = 0, wait = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "re");

	if (f) {
		if (fscanf(f, "%llu %llu", &run, &wait) != 2)
			run = wait = 0;
		fclose(f);
	}
	*cpu_ns = run;
	*runq_ns = wait;
}

void worker_get_stats(struct worker *w, struct worker_stats *out)
{
	struct rusage ru;

	*out = w->st;
	read_schedstat(&out->cpu_ns, &out->runq_ns);
	if (!getrusage(RUSAGE_THREAD, &ru)) {
		out->minor_faults = (uint64_t)ru.ru_minflt;
		out->major_faults = (uint64_t)ru.ru_majflt;
	}
	if (w->cfg.aead)
		aead_get_stats(w->cfg.aead, &out->aead);
}
