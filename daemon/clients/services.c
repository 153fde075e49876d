// SPDX-License-Identifier: MIT
/*
 * Service ids bound by clients (see services.h): open addressing with
 * linear probing, deletion by backward shift (no tombstones), doubled when
 * half full.  Control thread only.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "services.h"

#define SERVICES_MIN	64	/* slots; a power of two */

struct binding {
	uint64_t service_id;
	void *owner;			/* NULL: empty slot */
	uint32_t refs;
};

struct services {
	struct binding *v;
	uint32_t mask, n;
};

int services_create(struct services **out)
{
	struct services *s = calloc(1, sizeof(*s));

	if (!s || !(s->v = calloc(SERVICES_MIN, sizeof(*s->v)))) {
		free(s);
		return -ENOMEM;
	}
	s->mask = SERVICES_MIN - 1;
	*out = s;
	return 0;
}

void services_destroy(struct services *s)
{
	if (!s)
		return;
	free(s->v);
	free(s);
}

static uint32_t home(const struct services *s, uint64_t id)
{
	return (uint32_t)((id * 0x9e3779b97f4a7c15ULL) >> 32) & s->mask;
}

/* The slot holding id, or the empty slot where it would go. */
static struct binding *slot(const struct services *s, uint64_t id)
{
	uint32_t i = home(s, id);

	while (s->v[i].owner && s->v[i].service_id != id)
		i = (i + 1) & s->mask;
	return &s->v[i];
}

void *services_owner(const struct services *s, uint64_t service_id)
{
	return slot(s, service_id)->owner;
}

static int grow(struct services *s)
{
	struct services big = { .mask = s->mask * 2 + 1 };

	big.v = calloc((size_t)big.mask + 1, sizeof(*big.v));
	if (!big.v)
		return -ENOMEM;
	for (uint32_t i = 0; i <= s->mask; i++)
		if (s->v[i].owner)
			*slot(&big, s->v[i].service_id) = s->v[i];
	free(s->v);
	s->v = big.v;
	s->mask = big.mask;
	return 0;
}

int services_ref(struct services *s, uint64_t service_id, void *owner)
{
	struct binding *b = slot(s, service_id);

	if (b->owner) {
		if (b->owner != owner)
			return -EADDRINUSE;
		b->refs++;
		return 0;
	}
	if (s->n + 1 > (s->mask + 1) / 2) {
		int err = grow(s);

		if (err)
			return err;
		b = slot(s, service_id);
	}
	*b = (struct binding){ .service_id = service_id, .owner = owner, .refs = 1 };
	s->n++;
	return 0;
}

/* Empty slot i, then move back the entries after it that may not stay past the gap. */
static void remove_at(struct services *s, uint32_t i)
{
	uint32_t j = i;

	s->v[i].owner = NULL;
	for (;;) {
		uint32_t h;

		j = (j + 1) & s->mask;
		if (!s->v[j].owner)
			return;
		h = home(s, s->v[j].service_id);
		/* It may move to i when i lies cyclically in [h, j). */
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			s->v[i] = s->v[j];
			s->v[j].owner = NULL;
			i = j;
		}
	}
}

uint32_t services_unref(struct services *s, uint64_t service_id)
{
	struct binding *b = slot(s, service_id);

	if (!b->owner)
		return 0;
	if (--b->refs)
		return b->refs;
	remove_at(s, (uint32_t)(b - s->v));
	s->n--;
	return 0;
}

uint32_t services_count(const struct services *s)
{
	return s->n;
}
