/* SPDX-License-Identifier: MIT */
/*
 * Service ids and the client that owns each (#24 item 8), the control
 * thread's table: rdma_cm's rule, a service bound by one client's listening
 * QP cannot be listened on by another client (EADDRINUSE) until the first
 * lets it go.  A binding counts the owner's QPs that listened on the
 * service (listening still, or connected through it); it goes when the last
 * of them is destroyed or connects elsewhere, or the client goes.
 */
#ifndef MROCD_SERVICES_H
#define MROCD_SERVICES_H

#include <stdint.h>

struct services;

int services_create(struct services **out);
void services_destroy(struct services *s);
/* The owner of service_id, or NULL when nobody binds it. */
void *services_owner(const struct services *s, uint64_t service_id);
/*
 * One more QP of owner's binds service_id (a new binding when nobody held
 * it): 0, -EADDRINUSE (another owner's), -ENOMEM.
 */
int services_ref(struct services *s, uint64_t service_id, void *owner);
/* One QP fewer: the references left (0: the binding is gone). */
uint32_t services_unref(struct services *s, uint64_t service_id);
/* Bindings held now. */
uint32_t services_count(const struct services *s);

#endif
