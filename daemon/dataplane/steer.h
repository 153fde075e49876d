/* SPDX-License-Identifier: MIT */
/*
 * Which worker owns a MetaRoCE packet's QP (several workers, afxdp.c's
 * hand-off).  A QP of worker k has a QPN equal to k modulo the number of
 * workers (engine_qpn_fit), so every packet but a CONNECT_REQ names its
 * owner.  A CONNECT_REQ names a service id: it goes to the worker that last
 * listened on it (a client's LISTEN, on its worker), the daemons' own
 * services to worker 0 (control links), anything else to worker 0, which
 * rejects it.  Lookups take no lock: a slot's key is written before its
 * owner is published, and slots are never emptied (a listener's service
 * keeps its worker until another one listens on it).
 */
#ifndef MROCD_STEER_H
#define MROCD_STEER_H

#include <stdint.h>

struct steer;

int steer_create(unsigned nworkers, struct steer **out);
void steer_destroy(struct steer *st);
/* Any thread: CONNECT_REQs for service_id go to worker from now on. */
void steer_listen(struct steer *st, uint64_t service_id, unsigned worker);
/* Any thread (afxdp_owner_fn): the owner of pkt (bytes after the UDP header). */
unsigned steer_owner(void *st, const uint8_t *pkt, uint32_t len);

#endif
