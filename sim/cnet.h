/* SPDX-License-Identifier: MIT */
/*
 * cnet: a cluster of hosts, each running one struct engine, on a leaf/spine
 * fabric of P planes (fabric.h), in seeded virtual time.
 *
 * Hosts are driven by simhost.c, as simnet.c's are and as mrocd drives the
 * engine: after every packet, post or timer the host runs due timers, hands
 * completions to the callback, takes one packet from engine_tx whenever its
 * NIC is free and keeps exactly one timer at engine_next_deadline, on a
 * clock of its own (cnet_config.clock_*).  The NIC
 * takes packets in at the sum of its ports' rates and puts each on the port
 * of its plane (the host's uplink on that plane, at the plane's rate), whose
 * queue marks CE and drops like a switch port: a path that overloads its
 * port sees it in ECN and loss, as it would any congested hop, and the
 * engine's windows, not a driver queue, decide what goes out.  (Holding the
 * NIC back while a port is busy instead hid the port's congestion from the
 * engine: the path with the largest window took every packet at one port's
 * rate, and no signal ever told it to share.)
 *
 * On a PFC fabric (fab.pfc) a port that is full because PFC paused it
 * holds the NIC instead of dropping: nothing more leaves the host until the
 * port has room, which is how PAUSE reaches the sending QPs.  A QP may be
 * pinned to a plane (cnet_pin_qp), as NCCL pins one QP per NIC port.
 *
 * The engine's peer handle is the host index.  Functions return 0 or a
 * negative errno; cnet_create returns NULL and sets errno.
 */
#ifndef MROC_SIM_CNET_H
#define MROC_SIM_CNET_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "fabric.h"
#include "simhost.h"

struct cnet;

struct cnet_config {
	struct fab_config fab;
	uint32_t wire_overhead;		/* Ethernet/IP/UDP bytes per packet on the wire */
	struct engine_config engine;	/* every host (seed mixed with the host index); */
					/* link_rate_bps 0 = planes x host rate */
	uint64_t seed;			/* random loss, and the engines' seeds */
	/*
	 * Which packets random loss drops, when not 0: another draw of the same
	 * loss rate on the same routes and engines (seed keeps those).
	 */
	uint64_t loss_seed;
	/* each host's engine clock: offset in [0, skew), drift within +-ppm (simhost.h) */
	uint64_t clock_skew_ns;
	uint32_t clock_drift_ppm;
};

/* fab_config_default, 64 bytes of overhead, the engine's defaults with MTU 4096. */
void cnet_config_default(struct cnet_config *cfg);

struct cnet *cnet_create(const struct cnet_config *cfg);
void cnet_destroy(struct cnet *cn);

uint64_t cnet_now(const struct cnet *cn);
uint32_t cnet_nhosts(const struct cnet *cn);
struct engine *cnet_engine(struct cnet *cn, uint32_t host);
struct fabric *cnet_fabric(struct cnet *cn);

/* Every completion of every host goes to fn (the host says whose). */
typedef void (*cnet_cqe_fn)(struct cnet *cn, uint32_t host, const struct engine_cqe *cqe,
			    void *ctx);
void cnet_set_cqe_cb(struct cnet *cn, cnet_cqe_fn fn, void *ctx);
/*
 * ... except those whose wr_id (for events: the QP's attr.user) has this bit:
 * they go to the background traffic's callback, so a second job can share
 * the hosts with the measured one.
 */
#define CNET_WR_BACKGROUND	(1ULL << 63)
void cnet_set_bg_cqe_cb(struct cnet *cn, cnet_cqe_fn fn, void *ctx);

/* engine_* with the simulation clock, then drive the host. */
int cnet_post_send(struct cnet *cn, uint32_t host, uint32_t qpn, const struct engine_wr *wr);
int cnet_post_recv(struct cnet *cn, uint32_t host, uint32_t qpn, const struct engine_recv_wr *wr);
int cnet_qp_connect(struct cnet *cn, uint32_t host, uint32_t qpn, uint32_t peer,
		    uint64_t service_id);
/* Every packet host's QP qpn sends leaves by plane's port (0 or -EINVAL / -ENOMEM). */
int cnet_pin_qp(struct cnet *cn, uint32_t host, uint32_t qpn, uint32_t plane);
/* After calling the engine directly. */
void cnet_kick(struct cnet *cn, uint32_t host);

typedef bool (*cnet_pred_fn)(struct cnet *cn, void *ctx);
/*
 * Run while pred holds.  0 when it turned false, -ETIMEDOUT when the next
 * event is after time_limit, -EDEADLK when nothing is left to happen.
 */
int cnet_run_while(struct cnet *cn, cnet_pred_fn pred, void *ctx, uint64_t time_limit);

/* A trace of every packet sent by a NIC, dropped or delivered (NULL: none). */
void cnet_set_trace(struct cnet *cn, sim_trace_fn fn, void *ctx);
/* ... and also every packet queued behind others at a port (SIM_TR_WAIT). */
void cnet_trace_waits(struct cnet *cn, bool on);

typedef void (*cnet_call_fn)(struct cnet *cn, void *ctx);
/* Call fn at time at (>= now); ctx must live until then. */
int cnet_schedule(struct cnet *cn, uint64_t at, cnet_call_fn fn, void *ctx);

struct cnet_stats {
	uint64_t now;
	uint64_t events;
	uint64_t pool_pkts;
	uint64_t pkts_in_use;
	struct simhost_stats hosts;	/* summed */
	struct fab_stats fab;
};

void cnet_get_stats(const struct cnet *cn, struct cnet_stats *out);

/* Payload bits per second a link of rate_bps carries with full data packets. */
uint64_t cnet_goodput_capacity(const struct cnet *cn, uint64_t rate_bps);

#endif
