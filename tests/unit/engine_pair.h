/* SPDX-License-Identifier: MIT */
/*
 * Test harness: two engines (A and B) in one process, wired back to back by
 * hand.  The test owns a fake clock (pair->now); pair_pump() moves every
 * packet one engine produces into the other at that time, through an
 * optional filter that may look at, copy, alter or drop it; pair_run()
 * advances the clock from deadline to deadline.  Completions are polled into
 * a per-side log the test reads in order.
 *
 * Each engine reads its own clock, as two hosts do: side i's time is
 * now + now * ppm / 10^6 + offset (pair_clock), and every engine call the
 * harness makes passes that side's time.  By default B's clock runs
 * PAIR_SKEW_NS ahead of A's and PAIR_SKEW_PPM faster, so no test passes
 * only because both ends stamp packets from one clock; pair_set_clock
 * chooses others.  Tests keep measuring in pair->now (A's clock at 0 ppm).
 *
 * Peer handles: each engine knows the other by the other's side index, so A
 * reaches B as peer PAIR_B (1) and B sees A's packets from peer PAIR_A (0).
 *
 * Linked into every tests/unit binary (see tests/README.md); uses engine.h
 * only, and cmocka assertions.
 */
#ifndef MROC_TEST_ENGINE_PAIR_H
#define MROC_TEST_ENGINE_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

#define PAIR_A		0
#define PAIR_B		1
#define PAIR_MAX_PKT	(MROC_DATA_OVERHEAD + 8192)
#define PAIR_MAX_CQE	4096
#define PAIR_TX_BATCH	8
#define PAIR_T0		1000000ULL	/* fake time starts at 1 ms */
#define PAIR_US		1000ULL
#define PAIR_MS		1000000ULL

struct pair_pkt {
	int from;			/* side that sent it */
	uint32_t len;
	uint16_t sport;
	uint8_t data[PAIR_MAX_PKT];
};

struct pair;
struct pair_capture;

/* Called for every packet the pump moves: return true to deliver it. */
typedef bool (*pair_filter_fn)(struct pair *p, struct pair_pkt *pkt, void *arg);

struct pair_side {
	struct engine *eng;
	struct engine_config cfg;
	uint32_t qpn;			/* the QP pair_connect made */
	struct engine_cqe cqe[PAIR_MAX_CQE];
	unsigned ncqe;			/* completions polled so far */
	unsigned next;			/* first one pair_cqe has not returned yet */
	uint64_t sent[256];		/* packets sent, by opcode */
	uint64_t stray;			/* packets addressed to another peer handle */
	uint8_t heard[65536 / 8];	/* source ports engine_rx had packets from (bits) */
	int64_t clk_offset;		/* this side's clock: now + now * clk_ppm / 10^6 + clk_offset */
	int32_t clk_ppm;
	uint64_t stamp_lead;		/* pair_set_stamp_lead */
	uint64_t rx_lag;		/* pair_set_rx_lag */
	uint64_t called;		/* its clock at its last call with work (pair_call_clock) */
	/*
	 * Its packets come in as opened by a frame layer (engine_rx_meta.sealed =
	 * ENGINE_RX_SEALED): a stand-in for "aead" (daemon/dataplane/aead.c),
	 * which opens any packet sealed for these addresses, a replay included.
	 */
	bool sealed;
};

/* A registered buffer with canary-filled guards on both sides. */
#define PAIR_GUARD_LEN	256
#define PAIR_CANARY	0x5a
#define PAIR_MAX_MEMS	16

struct pair_mem {
	uint8_t *base;			/* guard, buf, guard */
	uint8_t *buf;
	uint64_t len;
	uint32_t lkey, rkey;
	int side;			/* registered there with pd and access */
	uint64_t pd;			/* 64 bits, as the engine's (#24 item 9) */
	uint32_t access;
};

/* Packets on the wire when a direction has a delay (pair_set_delay). */
#define PAIR_WIRE_MAX	4096

struct pair_wire {
	uint64_t delay;			/* one way, from this side */
	struct pair_pkt *q;		/* FIFO of PAIR_WIRE_MAX, allocated with a delay */
	uint64_t *due;
	unsigned head, n;
};

struct pair {
	struct pair_side s[2];
	struct pair_wire wire[2];	/* by the side that sent */
	struct pair_mem *mems[PAIR_MAX_MEMS];	/* owned: freed by pair_free */
	unsigned nmems;
	uint64_t now;
	pair_filter_fn filter;
	void *filter_arg;
	struct pair_capture *cap;	/* owned: freed by pair_capture_start and pair_free */
	/*
	 * pair_run found a deadline at or before now that engine_advance did
	 * not move: it counts it here and lets the clock tick 1 ns, as a real
	 * one would, instead of spinning.
	 */
	uint64_t stuck_deadlines;
	/*
	 * The driver's loop (0: none, the default): once pair_run has run the
	 * timers at now, it runs them again no sooner than now + tick, as mrocd's
	 * worker runs them at most once a turn of its loop.  Without one a path
	 * that re-arms a few nanoseconds ahead (a tail probe timed by the fake
	 * wire's RTT of ~1 ns) is woken every few nanoseconds until its RTO:
	 * a million timer runs in the 30 ms fuzz_engine_rx gives an input.
	 */
	uint64_t tick;
	/* Timer runs pair_run moved later for the tick (the deadline came sooner). */
	uint64_t ticked;
	uint64_t wakeups;	/* pair_run's timer runs (both engines advanced once) */
	/* A test that breaks an engine's state on purpose: no engine_check after its calls. */
	bool unchecked;
	/*
	 * Offer each engine_tx as mrocd's worker does (false, the default:
	 * PAIR_TX_BATCH buffers a call): engine_tx_want's count, and more after
	 * an offer it filled.  offered counts the buffers offered either way;
	 * digest is of every packet sent, in order (what it was, whence, to
	 * whom): two runs that sent the same packets have the same.
	 */
	bool offer_want;
	uint64_t offered;
	uint64_t digest;
	struct pair_pkt tx[PAIR_TX_BATCH];
};

/* B's clock against A's by default: well past 2^31 ns apart, and drifting. */
#define PAIR_SKEW_NS	(2500 * PAIR_MS + 123457)
#define PAIR_SKEW_PPM	150

/* Side's clock from now on: its time is now + now * ppm / 10^6 + offset (> 0). */
void pair_set_clock(struct pair *p, int side, int64_t offset, int32_t ppm);
/* Side's time at pair->now, what every engine call for it takes. */
uint64_t pair_clock(const struct pair *p, int side);
/* The earliest pair->now at which side's clock reads at least t (t in its time). */
uint64_t pair_base_of(const struct pair *p, int side, uint64_t t);

/*
 * Packets side sends reach the other side `delay` of pair->now later (0, the
 * default: at once, inside the same pump).  The filter sees them when sent.
 */
void pair_set_delay(struct pair *p, int side, uint64_t delay);

/*
 * Packets side takes from now on carry an arrival stamp (engine_rx_meta.
 * arrival) lead before its clock: they waited that long in its receive
 * ring, out of the wire's delay toward it (pair_set_delay; the lead is no
 * more than that).  0, the default: no stamp.
 */
void pair_set_stamp_lead(struct pair *p, int side, uint64_t lead);
/*
 * Side takes packets from now on with a clock up to lag behind their
 * arrival stamp, which is its true time: a worker that read its clock, then
 * lost its CPU, then took its receive ring (mrocd's worker loop).  The
 * clock never goes back past its last call with work (a post, a timer due,
 * packets sent: a worker reads its clock after such work); what it sends
 * it stamps with its true time.  0, the default: packets are taken at
 * their arrival.
 */
void pair_set_rx_lag(struct pair *p, int side, uint64_t lag);
/* engine_config_default() with timers shrunk to fake-time microseconds. */
void pair_test_config(struct engine_config *cfg);
/* pd 1, MetaRoCE, 4 paths, 64-deep queues. */
struct engine_qp_attr pair_test_attr(void);

/* Two engines; NULL configs take pair_test_config() (B with another seed). */
struct pair *pair_new(const struct engine_config *a, const struct engine_config *b);
void pair_free(struct pair *p);
/*
 * p as pair_new(a, b) makes it, for a harness that runs many inputs on one
 * pair (tests/fuzz): new engines of these configs, the clocks, logs,
 * counters, wires (emptied, no delay), no filter, no capture.  The buffers
 * pair_mem_new made are kept, refilled with canary and registered with no
 * engine: pair_mem_register each again, in the order they were made and at
 * the same point of the set-up, to get the same keys.
 */
void pair_reset(struct pair *p, const struct engine_config *a, const struct engine_config *b);

/* Create a QP on side; asserts success. */
uint32_t pair_qp_create(struct pair *p, int side, const struct engine_qp_attr *attr);
/*
 * B listens on service_id, A connects; both must report EV_CONNECTED.  NULL
 * attrs take pair_test_attr().  Sets s[].qpn.
 */
void pair_connect(struct pair *p, const struct engine_qp_attr *a, const struct engine_qp_attr *b,
		  uint64_t service_id);

/*
 * Another QP pair beside the first: B listens on service_id, A connects
 * (attributes pair_test_attr() with user `user`).  Returns A's QPN; the
 * connection events are left to the caller's CQ polling.
 */
uint32_t pair_connect_more(struct pair *p, uint64_t user, uint64_t service_id);

/* Move packets both ways at the current time until neither side sends.  Returns the count. */
unsigned pair_pump(struct pair *p);
/*
 * Pump, and run timers at each deadline up to `until`; the clock ends at
 * `until`.  A deadline that stays due after its timers ran is counted in
 * stuck_deadlines and the clock moves on by 1 ns.
 */
void pair_run(struct pair *p, uint64_t until);
void pair_run_for(struct pair *p, uint64_t dt);

/* Feed bytes to side `to` as if from peer handle `peer`; returns engine_rx's value. */
int pair_rx(struct pair *p, int to, const uint8_t *buf, size_t len, uint32_t peer, uint16_t sport);
/* Deliver a captured packet to the other side, unchanged or as altered. */
int pair_deliver(struct pair *p, const struct pair_pkt *pkt);

/* Poll both engines' completions into the logs. */
void pair_poll(struct pair *p);
/* Next completion of side not yet looked at, or NULL. */
const struct engine_cqe *pair_cqe(struct pair *p, int side);
/* Completions polled but not yet looked at. */
unsigned pair_pending(struct pair *p, int side);
#define PAIR_ANY_STATUS	0xff
#define PAIR_ANY_ID	(~0ULL)
/* Take the next completion and check it (status and wr_id unless PAIR_ANY_*). */
const struct engine_cqe *pair_expect(struct pair *p, int side, uint8_t opcode, uint8_t status,
				     uint64_t wr_id);
void pair_expect_none(struct pair *p, int side);

uint64_t pair_stat(struct pair *p, int side, enum engine_counter c);
/*
 * Since *before (engine_get_stats of side), side counted exactly n more
 * packets, all malformed for `why`, and nothing else.
 */
void pair_expect_only_malformed(struct pair *p, int side, const struct engine_stats *before,
				enum wire_err why, uint64_t n);
uint8_t pair_state(struct pair *p, int side);

int pair_post(struct pair *p, int side, const struct engine_wr *wr);
int pair_post_recv(struct pair *p, int side, uint64_t wr_id, uint32_t lkey, uint64_t laddr,
		   uint32_t len);

/* ---- memory ------------------------------------------------------------------ */

/* Allocate len bytes (and guards) filled with PAIR_CANARY and register them on side. */
struct pair_mem *pair_mem_new(struct pair *p, int side, uint64_t len, uint64_t pd, uint32_t access);
/* Register m again on its side (after pair_reset), with its pd and access: new keys. */
void pair_mem_register(struct pair *p, struct pair_mem *m);
/* Byte i of pattern `seed`: what tests write and expect to find. */
static inline uint8_t pair_pattern(uint32_t seed, uint64_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ULL ^ seed * 0xbf58476d1ce4e5b9ULL;

	return (uint8_t)(x >> 56);
}
void pair_mem_fill(struct pair_mem *m, uint32_t seed);

/*
 * The fixture the engine tests share: a test's own fixture struct, calloc'ed
 * into *state, whose first members are `struct pair *p; struct pair_mem *a,
 * *b;`.  pair_fx_open makes the pair (engines of ca and cb; NULL: the
 * defaults) and a buffer of len bytes on each side (A's ENGINE_ACCESS_ALL,
 * B's b_access), fills A's with pattern fill_a (0: left zero) and returns the
 * fixture (size bytes); pair_fx_teardown is its cmocka teardown.
 */
struct pair_fx {
	struct pair *p;
	struct pair_mem *a, *b;
};

void *pair_fx_open(void **state, size_t size, const struct engine_config *ca,
		   const struct engine_config *cb, uint64_t len, uint32_t b_access,
		   uint32_t fill_a);
int pair_fx_teardown(void **state);
/* A signaled WR of A's: from its buffer at laddr to B's at raddr. */
struct engine_wr pair_fx_wr(const struct pair_fx *x, uint8_t op, uint64_t id, uint64_t laddr,
			    uint32_t len, uint64_t raddr);
/* Everything, guards included, back to PAIR_CANARY. */
void pair_mem_reset(struct pair_mem *m);
/* [off, off + n) of the buffer equals want; every other byte, guards included, is canary. */
void pair_mem_expect(const struct pair_mem *m, uint64_t off, const uint8_t *want, uint64_t n);
/* Nothing written anywhere: every byte, guards included, is canary. */
void pair_mem_untouched(const struct pair_mem *m);

/* ---- capturing ------------------------------------------------------------- */

#define PAIR_CAPTURE_MAX 64

/*
 * Filter: copy the packets `from` sends whose opcode is in `ops` (bit per
 * opcode < 64; 0 = data opcodes) into pkt[], and drop them unless `pass`.
 */
struct pair_capture {
	int from;
	uint64_t ops;
	bool pass;
	unsigned n;
	struct pair_pkt pkt[PAIR_CAPTURE_MAX];
};

bool pair_capture_filter(struct pair *p, struct pair_pkt *pkt, void *arg);
/* Install a fresh capture as the filter (the previous one is freed). */
struct pair_capture *pair_capture_start(struct pair *p, int from, uint64_t ops, bool pass);
/* Capture (and drop) the data packets `from` sends on a pump; there must be `want`. */
struct pair_capture *pair_capture_data(struct pair *p, int from, unsigned want);
/* Remove the filter; what was captured stays readable until the next start. */
void pair_capture_stop(struct pair *p);

#define PAIR_OP_BIT(op)	(1ULL << (op))

/* ---- packet bytes (docs/PROTOCOL.md 3.1, 3.2, 3.3) ---------------------------- */

enum {
	PKT_VERSION = 0, PKT_OPCODE = 1, PKT_FLAGS = 2, PKT_PATH = 3,
	PKT_DST_QPN = 4, PKT_SRC_QPN = 8, PKT_TS = 12,
	/* data header */
	PKT_PSN = 16, PKT_PSN_FLOOR = 20, PKT_DSN = 24, PKT_MSN = 28, PKT_SSN = 32,
	PKT_OFFSET = 36, PKT_MSG_LEN = 40, PKT_KEY = 44, PKT_IMM = 48, PKT_RADDR = 52,
	PKT_PAYLOAD = 60,
	/* ACK header */
	PKT_ACK_CUM_PSN = 16, PKT_ACK_CUM_DSN = 20, PKT_ACK_NAK_DSN = 40, PKT_ACK_NAK_SEQ = 44,
	PKT_ACK_NAK_CODE = 46, PKT_ACK_SACK = 48,
	/* CM header */
	PKT_CM_SERVICE = 16, PKT_CM_MTU = 32, PKT_CM_NPATHS = 34, PKT_CM_MODE = 35,
	PKT_CM_REASON = 36,
};

static inline uint32_t pkt_get32(const uint8_t *b, unsigned off)
{
	return (uint32_t)b[off] << 24 | (uint32_t)b[off + 1] << 16 | (uint32_t)b[off + 2] << 8 |
	       b[off + 3];
}

static inline void pkt_put32(uint8_t *b, unsigned off, uint32_t v)
{
	b[off] = (uint8_t)(v >> 24);
	b[off + 1] = (uint8_t)(v >> 16);
	b[off + 2] = (uint8_t)(v >> 8);
	b[off + 3] = (uint8_t)v;
}

static inline uint16_t pkt_get16(const uint8_t *b, unsigned off)
{
	return (uint16_t)(b[off] << 8 | b[off + 1]);
}

static inline uint64_t pkt_get64(const uint8_t *b, unsigned off)
{
	return (uint64_t)pkt_get32(b, off) << 32 | pkt_get32(b, off + 4);
}

static inline void pkt_put64(uint8_t *b, unsigned off, uint64_t v)
{
	pkt_put32(b, off, (uint32_t)(v >> 32));
	pkt_put32(b, off + 4, (uint32_t)v);
}

#endif
