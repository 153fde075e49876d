/* SPDX-License-Identifier: MIT */
/*
 * Intrusive doubly linked lists, as the kernel's list_head: a QP sits on the
 * engine's ready and completion lists without any allocation, and joins or
 * leaves one in O(1).  An unlinked node has next == NULL, so "is it on the
 * list" is one load.
 */
#ifndef MROC_ENGINE_LIST_H
#define MROC_ENGINE_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list {
	struct list *prev, *next;
};

static inline void list_init(struct list *head)
{
	head->prev = head->next = head;
}

static inline bool list_empty(const struct list *head)
{
	return head->next == head;
}

static inline bool list_linked(const struct list *node)
{
	return node->next != NULL;
}

static inline void list_add_tail(struct list *head, struct list *node)
{
	node->prev = head->prev;
	node->next = head;
	head->prev->next = node;
	head->prev = node;
}

static inline void list_del(struct list *node)
{
	if (!node->next)
		return;
	node->prev->next = node->next;
	node->next->prev = node->prev;
	node->prev = node->next = NULL;
}

/* Move node to the tail (round-robin: it had its turn). */
static inline void list_rotate(struct list *head, struct list *node)
{
	list_del(node);
	list_add_tail(head, node);
}

#define list_entry(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#define list_first(head, type, member) list_entry((head)->next, type, member)

#endif
