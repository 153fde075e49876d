// SPDX-License-Identifier: MIT
/*
 * A path's moves (repathing): its RTO and the scouts of a QP with no live
 * path, the move to another source port and its reasons, and ports that
 * come back (path_port_up).
 */
#include <string.h>

#include "internal.h"
#include "path_priv.h"

/*
 * Where routes hash per direction, a new port works both ways one time in
 * four when one plane of two is dead (its data or its ACKs cross it), and a
 * QP of few paths whose every path timed out waits an RTO, backed off after
 * a few, between draws: 8 hashed senders of 3 paths each over 2 planes,
 * one dead (mroc-sim incast --planes 2 --paths 3 --route hash --plane-loss
 * 1:1 --senders 8 --bytes 64K --seed 25), one took 1.33 s for its 64 KiB,
 * 24 RTOs; a QP of one path delivered 0.09-0.5 of one plane.  With no live
 * path left the QP sends its probes by SCOUT_PORTS ports in all at each
 * timeout (each path its new port and the scouts of scouts_for), and the
 * first ACK to come back names a port that works both ways (its echo: the
 * receiver answers by the port of the packet it last had; matched by send
 * time, path_scout_answered).  Only for a QP of up to SCOUT_PORTS / 2
 * paths (with more its own moves draw as many ports), and only where
 * ports are routes: not with the driver placing paths by id (path_ports)
 * without ECMP behind it, which the engine cannot tell, so scouts there
 * are probes more, bounded as every probe is by the RTO and its backoff.
 *
 * A path that timed out beside live siblings sends SCOUT_LIVE scouts with
 * its probe: its new port lands on a dead spine again as often as the old
 * one did (one time in two with two spines a plane), each time an RTO more,
 * and a collective's ring step waits for its slowest QP.  A spine dying
 * under a 16-host AllReduce of 2-path QPs (mroc-sim cluster --hosts 16
 * --planes 4 --leaves 4 --spines 2 --op allreduce --bytes 4M --loss 0.001
 * --paths 2 --fail spine --fail-at 11 --fail-plane 0, seeds 1-8 and
 * 23434278): 1.29-2.18 x the time without the failure and 20-39 RTOs,
 * 1.19-1.70 x and 12-22 RTOs with them.
 */
#define SCOUT_PORTS	8
#define SCOUT_LIVE	2

static uint8_t scouts_for(const struct engine *eng, const struct qp *qp)
{
	unsigned n;

	if (!eng->cfg.repath || !qp->mops->repath || !qp->mops->tail_probe ||
	    qp->npaths > SCOUT_PORTS / 2)
		return 0;
	n = (SCOUT_PORTS + qp->npaths - 1) / qp->npaths - 1;
	for (unsigned i = 0; i < qp->npaths; i++)
		if (qp->paths[i].state == PATH_ACTIVE)
			n = n < SCOUT_LIVE ? n : SCOUT_LIVE;
	return (uint8_t)(n < SCOUT_MAX ? n : SCOUT_MAX);
}

/*
 * The port of the probe qp_tx sends now for timed-out path p: its own for
 * the round's first, then a new one for each scout, recorded with its send
 * time (the ACK's echo names it).  Re-owes the probe while scouts are left.
 */
uint16_t path_scout(struct engine *eng, struct qp *qp, struct path *p, uint64_t now)
{
	uint16_t port = p->sport;

	if (p->scout_next && p->scouts_sent < p->scouts && p->scouts_sent < SCOUT_MAX) {
		port = pick_sport(eng, qp, p, -1);
		p->scout_sport[p->scouts_sent] = port;
		p->scout_ts[p->scouts_sent] = now;
		p->scouts_sent++;
		eng->st.c[EC_TX_SCOUT]++;
	}
	p->scout_next = true;
	if (p->scouts_sent < p->scouts)
		path_probe_owed(qp, p, true);
	return port;
}

/*
 * An ACK with news revives timed-out path p: if its echo (echo_ok: one of
 * our send times, path_on_echo) is a scout's send time or later (the
 * receiver's answer echoes the last packet it had and goes back by that
 * packet's port), the newest such scout's port worked both ways, and the
 * path moves there.  An echo older than every scout is the path's own
 * port's answer.
 */
void path_scout_answered(struct engine *eng, struct qp *qp, struct path *p, bool echo_ok,
			 uint64_t sent)
{
	int best = -1;

	for (int i = 0; echo_ok && i < p->scouts_sent; i++)
		if (sent >= p->scout_ts[i] && (best < 0 || p->scout_ts[i] > p->scout_ts[best]))
			best = i;
	if (best >= 0 && p->scout_sport[best] != p->sport) {
		/*
		 * prev_sport stays the port the timeout left: the one drawn then
		 * never answered, and a move back (timeout_move_back) must judge
		 * the route it came from (a live sibling's path went back to a
		 * drawn port on a dead plane, test_sim_deadplane
		 * test_timeout_move_not_back_to_dead_plane).
		 */
		route_changed(p);
		p->sport = p->scout_sport[best];
		p->min_rtt = 0;
		eng->st.c[EC_SCOUT_MOVE]++;
	}
	scouts_clear(qp, p);
}

void path_on_rto(struct engine *eng, struct qp *qp, struct path *p, uint64_t now)
{
	p->st_timeouts++;
	eng->st.c[EC_RTO]++;
	/* No ACK on the path yet: armed on rto_init or the host's floors alone. */
	if (!p->srtt)
		eng->st.c[EC_RTO_UNSAMPLED]++;
	/*
	 * Nothing from the peer host (on any QP or path) since the timer was
	 * armed: with many QPs to it, a host off the CPU or cut off rather than
	 * a lost path (every path to it with packets in flight times out at
	 * once).  A lone QP whose only unanswered packets were on the lost path
	 * looks the same: the peer had nothing left to answer.
	 */
	if (qp_heard(qp) <= p->rto_armed)
		eng->st.c[EC_RTO_PEER_SILENT]++;
	/* The first RTO since the last ACK can be undone (rto_undo), a second cannot. */
	p->undo_ok = !p->rto_fired_at;
	p->undo_pwnd = p->pwnd;
	p->rto_fired_at = now ? now : 1;
	p->backoff++;
	if (p->mute_rtos < UINT8_MAX)
		p->mute_rtos++;
	eng->cc->on_rto(eng, p);
	if (p->state != PATH_TIMEDOUT)
		p->timedout_at = now;
	p->state = PATH_TIMEDOUT;
	if (eng->cfg.repath && qp->mops->repath)
		path_repath(eng, qp, p, now, ENGINE_REPATH_TIMEOUT);
	p->scouts = scouts_for(eng, qp);
	/*
	 * Until an ACK shows it alive, the path carries only probe copies.  A
	 * move that kept no backoff (a sibling alive, or the peer heard since:
	 * repath) probes its new port at once: a route died, not the peer, and
	 * the probe's ACK tells within an RTT whether the new one works.  It
	 * waited an RTO for its first probe (5 ms on bench-fabric's planes,
	 * 15-25 RTTs) before it could carry data again, and as long again
	 * before it left a dead plane it had landed on.  A copy, so cheap.
	 * mroc-sim run --like-fabric-held --loss 0.1, 4 paths, seeds 1-10:
	 * capacity mean 0.974 -> 0.981, RTOs 18 -> 13, moves 44 -> 29 (with
	 * qp_tx.c's re-owed probe turns 0.988, 11, 29).  Otherwise (no move,
	 * or the peer silent) one RTO, backed off.
	 */
	if (p->backoff || !eng->cfg.repath || !qp->mops->repath || !qp->mops->tail_probe) {
		path_set_probe_at(qp, p, now + path_rto(eng, p));
		return;
	}
	path_set_probe_at(qp, p, 0);
	path_probe_owed(qp, p, true);
}

uint64_t explore_ns(const struct qp *qp)
{
	return EXPLORE_NS / qp->npaths;
}

/* EC_REPATH_<why> counts the moves of each reason, in the reasons' order. */
static_assert(EC_REPATH_PORT - EC_REPATH_TIMEOUT == ENGINE_REPATH_PORT - ENGINE_REPATH_TIMEOUT,
	      "enum engine_counter's repath reasons follow enum engine_repath_why");

/*
 * A timeout move leaves a port that may be dead (a blackholed plane, a
 * cable, a NIC port the daemon counts down) or alive (random loss took a
 * tail, its probes and their ACKs).  Both look alike at the RTO: silence
 * since the last ACK.  What tells them apart comes later, in the peer's
 * count of packets received on the path (rcv_pkts, every ACK): a dead
 * route took none of the packets sent once the path had been silent for
 * two sRTTs (its tail-loss probes, from quiet_psn on), a live one took
 * most.  Paths are FIFO, so the peer's count at the last ACK (last_rcv_pkts)
 * holds every packet it will ever get up to the highest PSN acknowledged;
 * of those sent after it and before quiet_psn it may have had any number
 * (their ACKs lost, or sent after the route died), and of the new port's
 * no more than up to the highest PSN an ACK shows.  A count above all that
 * proves a packet from quiet_psn on got through: the old route was alive
 * (path_note_left).  Before p leaves: p->next_psn is the new port's first.
 */
static void note_leaving(const struct qp *qp, struct path *p)
{
	uint32_t known = p->any_acked ? p->high_acked + 1 : qp->isn_psn;
	uint32_t quiet = p->probes ? p->quiet_psn : p->next_psn;	/* no probe: nothing after */

	p->left_psn = p->next_psn;
	p->left_rcv = (p->ack_seen ? p->last_rcv_pkts : 0) +
		      (seq_lt(known, quiet) ? quiet - known : 0);
	p->left_alive = false;
	p->route_probe = ROUTE_PROBE_NONE;
}

void path_note_left(struct path *p, const struct mroc_ack_hdr *a)
{
	int last = sack_bytes_last(a->sack);
	uint32_t hi = last >= 0 ? a->cum_psn + 1 + (uint32_t)last : a->cum_psn - 1;
	uint32_t newer = seq_le(p->left_psn, hi) ? hi - p->left_psn + 1 : 0;

	if ((int32_t)(a->rcv_pkts - p->left_rcv - newer) > 0)
		p->left_alive = true;
}

/*
 * The backoff a timed-out path keeps across its moves although a sibling is
 * alive or the peer was heard (repath): none for its first MUTE_MOVES_FREE
 * RTOs without an ACK, then doubling, up to MUTE_BACKOFF_MAX.  Each move
 * probes its new port at once and the next RTO comes at the path's RTO,
 * which is cheap while a probe is small beside the RTO; a path that can
 * never leave a dead plane (a path pinned to a plane, a dead NIC port)
 * probed for good, and several such paths' probes, which go before data,
 * filled a slow NIC: 1 Gbit/s against 4 planes of 100-400 Gbit/s, MTU
 * 8192 (66 us a packet against an RTO of ~240 us), a plane blackholed under
 * 16 pinned paths: 15,000 probes in 1 s and the transfer's last 17 packets
 * never sent; at MTU 1500 0.35 of the NIC (test_sim_deadplane
 * test_dead_plane_probes_leave_room: now 0.80-0.94).  A route that works
 * is found as soon as before in the common case (a hashed move lands on
 * one dead plane of four three times running one time in 64), and a plane
 * that comes back within MUTE_BACKOFF_MAX doublings of the RTO.
 */
#define MUTE_MOVES_FREE		3
#define MUTE_BACKOFF_MAX	4

static uint32_t mute_backoff(const struct path *p)
{
	return p->mute_rtos > MUTE_MOVES_FREE ?
		       (uint32_t)min_u64(p->mute_rtos - MUTE_MOVES_FREE, MUTE_BACKOFF_MAX) : 0;
}

/* A move to port (0: a new source port of class cls, random_sport, or any: -1). */
void repath(struct engine *eng, struct qp *qp, struct path *p, uint64_t now,
	    enum engine_repath_why why, int cls, uint16_t port)
{
	uint32_t backoff = p->backoff, pwnd = p->pwnd, ssthresh = p->ssthresh;

	route_changed(p);
	p->prev_sport = p->sport;
	p->repath_why = (uint8_t)why;
	p->sport = port ? port : pick_sport(eng, qp, p, cls);
	p->look = LOOK_NONE;	/* a look was at the route it had */
	scouts_clear(qp, p);	/* scouts were the old round's */
	p->st_repaths++;
	eng->st.c[EC_REPATH]++;
	if (why != ENGINE_REPATH_NONE && why < ENGINE_REPATH__COUNT) {
		p->st_repath_why[why]++;
		eng->st.c[EC_REPATH_TIMEOUT + (why - ENGINE_REPATH_TIMEOUT)]++;
	}
	p->last_repath = now;
	p->undo_rate = why == ENGINE_REPATH_TIMEOUT ? p->rate_ewma : 0;
	p->trial = false;	/* path_check_siblings and explore start one (trial_start) */
	if (p->undo_rate)
		note_leaving(qp, p);
	qp->explore_at = now + explore_ns(qp);	/* any move explores */
	p->min_rtt = 0;
	restart_window(eng, p);
	/*
	 * Moved for congestion (not a timeout): keep the window, as PLB does; a
	 * slow start from scratch costs many round trips on a deep-buffered
	 * route, and the new route's own signals trim it.
	 */
	if (why != ENGINE_REPATH_TIMEOUT && why != ENGINE_REPATH_KEEPALIVE && !backoff) {
		p->pwnd = pwnd;
		p->ssthresh = ssthresh;
	}
	/*
	 * A timed-out path starts small.  A new route deserves a fresh RTO
	 * while a sibling is alive (probes are copies, so probing often costs
	 * little), or once the peer host was heard from since the path timed
	 * out (on another QP, or a keepalive's answer on another route): the
	 * route died, not the peer, and a QP of one path must try new ports at
	 * its RTO, not a backed-off one (1 path over 2 planes, one dead: a port
	 * works both ways one time in four, and 3 s of doubling RTOs gave it
	 * some 9 tries).  While nothing is heard the peer or the whole fabric
	 * is dead, and the backoff stays so a long outage is not probed at the
	 * RTO floor.
	 */
	if (backoff)
		p->pwnd = cc_pwnd_min(eng);
	for (unsigned i = 0; i < qp->npaths; i++)
		if (&qp->paths[i] != p && qp->paths[i].state == PATH_ACTIVE)
			backoff = min_u64(backoff, mute_backoff(p));
	if (p->state == PATH_TIMEDOUT && qp_heard(qp) > p->timedout_at)
		backoff = min_u64(backoff, mute_backoff(p));
	p->backoff = backoff;
	p->probes = 0;
}

void path_repath(struct engine *eng, struct qp *qp, struct path *p, uint64_t now,
		 enum engine_repath_why why)
{
	repath(eng, qp, p, now, why, -1, 0);
}

/* Paths of qp whose source port is of class cls (sport mod c). */
static unsigned class_paths(const struct qp *qp, uint32_t c, uint32_t cls)
{
	unsigned n = 0;

	for (unsigned i = 0; i < qp->npaths; i++)
		n += qp->paths[i].sport % c == cls;
	return n;
}

/* Of two paths, the one to move onto a port that came back: a live one, delivering least. */
static bool better_to_move(const struct path *p, const struct path *than)
{
	if ((p->state == PATH_ACTIVE) != (than->state == PATH_ACTIVE))
		return p->state == PATH_ACTIVE;
	return p->rate_ewma < than->rate_ewma;
}

/*
 * Port cls came back (engine_port_up): while it was down, its paths left by
 * the others and those that moved meanwhile (timeouts, slow rounds) drew
 * their ports at random, so the QP may have few or none of class cls left,
 * and no rule of this file moves a path onto a port because it is idle
 * (explore: one path per EXPLORE_NS / npaths, to any port).  Paths move
 * from the fullest class onto cls until it has its share (npaths / c), the
 * live one delivering least of that class first (a timed-out one would
 * bring the port nothing until an ACK revives it), keeping their windows
 * (a move that is not a timeout).  Those of class cls that stay now leave by a
 * route new to them: their minimum RTT, the delay signal's base, was the
 * other port's, and is learnt anew (cc_window.c).
 */
void path_port_up(struct engine *eng, struct qp *qp, uint32_t cls, uint64_t now)
{
	uint32_t c = eng->cfg.sport_classes;
	unsigned share = qp->npaths / c;

	for (unsigned i = 0; i < qp->npaths; i++)
		if (qp->paths[i].sport % c == cls)
			qp->paths[i].min_rtt = 0;
	if (!eng->cfg.repath || !qp->mops->repath)
		return;
	while (class_paths(qp, c, cls) < share) {
		struct path *move = NULL;
		unsigned most = 0;

		/* The fullest class other than cls has more than its share (the sum is npaths). */
		for (unsigned i = 0; i < qp->npaths; i++) {
			struct path *p = &qp->paths[i];
			unsigned n = class_paths(qp, c, p->sport % c);

			if (p->sport % c == cls || n < most)
				continue;
			if (n > most || better_to_move(p, move))
				move = p;
			most = n;
		}
		if (!move || most <= share)
			return;
		repath(eng, qp, move, now, ENGINE_REPATH_PORT, (int)cls, 0);
		if (move->sport % c != cls)
			return;		/* no port of that class in [sport_min, sport_max] */
	}
}
