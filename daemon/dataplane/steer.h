/* SPDX-License-Identifier: MIT */
/*
 * Which worker owns a MetaRoCE packet's QP (several workers, afxdp.c's
 * hand-off).  A QP of worker k has a QPN equal to k modulo the number of
 * workers (engine_qpn_fit), so every packet but a CONNECT_REQ names its
 * owner.  A CONNECT_REQ names a service id: it goes to the worker of the
 * client that binds it (its LISTEN, on its worker; one client per service
 * id, clients/services.h), the daemons' own services to worker 0 (control
 * links), anything else to worker 0, which rejects it.  A service stays
 * with its worker until the binding goes (steer_unlisten frees the slot);
 * another worker's LISTEN on it is refused, never last-writer-wins.
 * Lookups take no lock (a seqlock, steer.c).
 */
#ifndef MROCD_STEER_H
#define MROCD_STEER_H

#include <stdint.h>

struct steer;

/* Services listened on, for all the workers together (a power of two). */
#define STEER_SLOTS	1024

int steer_create(unsigned nworkers, struct steer **out);
void steer_destroy(struct steer *st);
/*
 * Any thread: CONNECT_REQs for service_id go to worker from now on.  0, or
 * -EADDRINUSE (another worker's), -ENOSPC (1,024 services listened on).
 */
int steer_listen(struct steer *st, uint64_t service_id, unsigned worker);
/* Any thread: the binding went: service_id's slot is free again. */
void steer_unlisten(struct steer *st, uint64_t service_id);
/* Services steered now (tests, counters). */
unsigned steer_services(struct steer *st);
/* Any thread (afxdp_owner_fn): the owner of pkt (bytes after the UDP header). */
unsigned steer_owner(void *st, const uint8_t *pkt, uint32_t len);

#endif
