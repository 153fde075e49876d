// SPDX-License-Identifier: MIT
/* Reads pinned client memory a page at a time, off the control thread (toucher.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "toucher.h"

/* A chunk: what toucher_forget() may wait for (256 pages: 1.5-5 ms with traps). */
#define CHUNK_BYTES (1u << 20)

struct job {
	struct job *next;
	const volatile uint8_t *map;
	uint64_t len, off;	/* off: the next byte to read */
	bool gone;		/* forgotten while the thread read it */
};

struct toucher {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t work;	/* a job queued, or stop */
	pthread_cond_t idle;	/* the chunk in hand is done */
	struct job *head, *tail;	/* queued, not in hand */
	struct job *cur;		/* in hand (its chunk is being read) */
	bool stop;
	uint64_t page, done_pages, queued_pages;
};

static uint64_t pages(const struct toucher *t, uint64_t bytes)
{
	return (bytes + t->page - 1) / t->page;
}

static void append(struct toucher *t, struct job *j)
{
	j->next = NULL;
	if (t->tail)
		t->tail->next = j;
	else
		t->head = j;
	t->tail = j;
}

static void *touch_main(void *arg)
{
	struct toucher *t = arg;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);	/* the control thread's signalfd takes them */
	pthread_mutex_lock(&t->lock);
	for (;;) {
		struct job *j;
		uint64_t from, n;
		uint8_t sink = 0;

		while (!t->stop && !t->head)
			pthread_cond_wait(&t->work, &t->lock);
		if (t->stop)
			break;
		j = t->head;
		t->head = j->next;
		if (!t->head)
			t->tail = NULL;
		t->cur = j;
		from = j->off;
		n = j->len - from < CHUNK_BYTES ? j->len - from : CHUNK_BYTES;
		j->off += n;
		pthread_mutex_unlock(&t->lock);

		for (uint64_t o = from; o < from + n; o += t->page)
			sink ^= j->map[o];
		(void)sink;

		pthread_mutex_lock(&t->lock);
		t->done_pages += pages(t, n);
		t->queued_pages -= pages(t, n);	/* forget took only what lay past it */
		t->cur = NULL;
		if (j->gone || j->off >= j->len)
			free(j);
		else
			append(t, j);	/* round-robin: the next range's turn */
		pthread_cond_broadcast(&t->idle);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int toucher_create(struct toucher **out)
{
	struct toucher *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	t->page = (uint64_t)sysconf(_SC_PAGESIZE);
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->work, NULL);
	pthread_cond_init(&t->idle, NULL);
	err = -pthread_create(&t->thread, NULL, touch_main, t);
	if (err) {
		pthread_cond_destroy(&t->idle);
		pthread_cond_destroy(&t->work);
		pthread_mutex_destroy(&t->lock);
		free(t);
		return err;
	}
	pthread_setname_np(t->thread, "mrocd-touch");
	*out = t;
	return 0;
}

void toucher_destroy(struct toucher *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	t->stop = true;
	pthread_cond_signal(&t->work);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->thread, NULL);
	while (t->head) {
		struct job *j = t->head;

		t->head = j->next;
		free(j);
	}
	pthread_cond_destroy(&t->idle);
	pthread_cond_destroy(&t->work);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

int toucher_add(struct toucher *t, const void *map, uint64_t len)
{
	struct job *j;

	if (!len)
		return 0;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->map = map;
	j->len = len;
	pthread_mutex_lock(&t->lock);
	append(t, j);
	t->queued_pages += pages(t, len);
	pthread_cond_signal(&t->work);
	pthread_mutex_unlock(&t->lock);
	return 0;
}

void toucher_forget(struct toucher *t, const void *map)
{
	struct job **pp, *prev = NULL;

	pthread_mutex_lock(&t->lock);
	for (pp = &t->head; *pp;) {
		struct job *j = *pp;

		if (j->map != map) {
			prev = j;
			pp = &j->next;
			continue;
		}
		*pp = j->next;
		if (t->tail == j)
			t->tail = prev;
		t->queued_pages -= pages(t, j->len - j->off);
		free(j);
	}
	if (t->cur && t->cur->map == map) {
		struct job *j = t->cur;

		t->queued_pages -= pages(t, j->len - j->off);
		j->off = j->len;
		j->gone = true;
		/* Only the caller's thread queues ranges: none can take j's place meanwhile. */
		while (t->cur == j)
			pthread_cond_wait(&t->idle, &t->lock);
	}
	pthread_mutex_unlock(&t->lock);
}

void toucher_counts(struct toucher *t, uint64_t *done, uint64_t *queued)
{
	pthread_mutex_lock(&t->lock);
	*done = t->done_pages;
	*queued = t->queued_pages;
	pthread_mutex_unlock(&t->lock);
}
