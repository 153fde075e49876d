// SPDX-License-Identifier: MIT
/*
 * The mroc provider's tag matching (libfabric/match.c): posted receives
 * against arriving messages, unexpected messages, ignore bits, directed
 * receives, oldest-first order, FI_PEEK / FI_CLAIM and cancel.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "match.h"

static struct mfi_rxop *rx(struct mfi_match *m, enum mfi_kind k, fi_addr_t src, uint64_t tag,
			   uint64_t ignore, void *ctx)
{
	struct mfi_rxop *r = mfi_rxop_get(m);

	assert_non_null(r);
	r->kind = k;
	r->src = src;
	r->tag = tag;
	r->ignore = ignore;
	r->context = ctx;
	return r;
}

static struct mfi_unexp *ux(enum mfi_kind k, fi_addr_t src, uint64_t tag)
{
	struct mfi_unexp *u = calloc(1, sizeof(*u));

	u->kind = k;
	u->src = src;
	u->tag = tag;
	u->buf = malloc(1);
	return u;
}

static void test_posted_first(void **state)
{
	struct mfi_match m;
	int c1, c2, c3;

	assert_int_equal(mfi_match_init(&m, 8), 0);
	assert_null(mfi_match_post(&m, rx(&m, MFI_KIND_TAGGED, FI_ADDR_UNSPEC, 0x10, 0, &c1)));
	assert_null(mfi_match_post(&m, rx(&m, MFI_KIND_TAGGED, FI_ADDR_UNSPEC, 0x10, 0, &c2)));
	assert_null(mfi_match_post(&m, rx(&m, MFI_KIND_MSG, FI_ADDR_UNSPEC, 0, 0, &c3)));
	/* Wrong tag: nothing; right tag: the oldest of the two; untagged kept apart. */
	assert_null(mfi_match_arrival(&m, MFI_KIND_TAGGED, 0, 0x11));
	assert_ptr_equal(mfi_match_arrival(&m, MFI_KIND_TAGGED, 0, 0x10)->context, &c1);
	assert_ptr_equal(mfi_match_arrival(&m, MFI_KIND_TAGGED, 0, 0x10)->context, &c2);
	assert_null(mfi_match_arrival(&m, MFI_KIND_TAGGED, 0, 0x10));
	assert_ptr_equal(mfi_match_arrival(&m, MFI_KIND_MSG, 3, 0x99)->context, &c3);
	mfi_match_fini(&m);
}

static void test_ignore_and_source(void **state)
{
	struct mfi_match m;
	int c1, c2;

	assert_int_equal(mfi_match_init(&m, 8), 0);
	/* Low 8 bits ignored, only from source 2. */
	assert_null(mfi_match_post(&m, rx(&m, MFI_KIND_TAGGED, 2, 0xab00, 0xff, &c1)));
	assert_null(mfi_match_post(&m, rx(&m, MFI_KIND_TAGGED, FI_ADDR_UNSPEC, 0xab00, 0xff, &c2)));
	/* From source 1 the directed one is skipped, the wildcard one matches. */
	assert_ptr_equal(mfi_match_arrival(&m, MFI_KIND_TAGGED, 1, 0xab42)->context, &c2);
	assert_null(mfi_match_arrival(&m, MFI_KIND_TAGGED, 1, 0xab42));
	assert_null(mfi_match_arrival(&m, MFI_KIND_TAGGED, 2, 0xac42));	/* a cared-for bit differs */
	assert_ptr_equal(mfi_match_arrival(&m, MFI_KIND_TAGGED, 2, 0xabff)->context, &c1);
	assert_true(mfi_tag_match(0xf0, 0x0f, 0xff));
	assert_false(mfi_tag_match(0xf0, 0x0f, 0x1f0));
	mfi_match_fini(&m);
}

static void test_unexpected(void **state)
{
	struct mfi_match m;
	struct mfi_unexp *a = ux(MFI_KIND_TAGGED, 1, 5), *b = ux(MFI_KIND_TAGGED, 2, 5);
	struct mfi_unexp *c = ux(MFI_KIND_TAGGED, 1, 6);
	struct mfi_unexp *got;
	int ctx;

	assert_int_equal(mfi_match_init(&m, 8), 0);
	mfi_match_add_unexp(&m, a);
	mfi_match_add_unexp(&m, b);
	mfi_match_add_unexp(&m, c);
	/* A receive posted later takes the oldest matching unexpected message. */
	got = mfi_match_post(&m, rx(&m, MFI_KIND_TAGGED, FI_ADDR_UNSPEC, 5, 0, &ctx));
	assert_ptr_equal(got, a);
	mfi_unexp_free(got);
	/* Directed at source 1 with tag 5: none left (b is from 2), so it is queued. */
	assert_null(mfi_match_post(&m, rx(&m, MFI_KIND_TAGGED, 1, 5, 0, &ctx)));
	/* Tag 6 from 1 is still there; an untagged receive never sees tagged messages. */
	assert_null(mfi_match_post(&m, rx(&m, MFI_KIND_MSG, FI_ADDR_UNSPEC, 0, 0, &ctx)));
	got = mfi_match_post(&m, rx(&m, MFI_KIND_TAGGED, 1, 6, 0, &ctx));
	assert_ptr_equal(got, c);
	mfi_unexp_free(got);
	mfi_match_fini(&m);	/* frees b, still buffered */
}

static void test_peek_claim(void **state)
{
	struct mfi_match m;
	struct mfi_unexp *a = ux(MFI_KIND_TAGGED, 1, 7), *b = ux(MFI_KIND_TAGGED, 1, 7);
	int claim;

	assert_int_equal(mfi_match_init(&m, 8), 0);
	assert_null(mfi_match_peek(&m, MFI_KIND_TAGGED, FI_ADDR_UNSPEC, 7, 0, NULL));
	mfi_match_add_unexp(&m, a);
	mfi_match_add_unexp(&m, b);
	/* FI_PEEK leaves it where it is. */
	assert_ptr_equal(mfi_match_peek(&m, MFI_KIND_TAGGED, FI_ADDR_UNSPEC, 7, 0, NULL), a);
	assert_ptr_equal(mfi_match_peek(&m, MFI_KIND_TAGGED, FI_ADDR_UNSPEC, 7, 0, NULL), a);
	/* FI_PEEK|FI_CLAIM takes it for the context: an ordinary receive gets the next one. */
	assert_ptr_equal(mfi_match_peek(&m, MFI_KIND_TAGGED, 1, 7, 0, &claim), a);
	assert_ptr_equal(mfi_match_post(&m, rx(&m, MFI_KIND_TAGGED, 1, 7, 0, NULL)), b);
	mfi_unexp_free(b);
	assert_null(mfi_match_claimed(&m, NULL));
	assert_ptr_equal(mfi_match_claimed(&m, &claim), a);
	assert_null(mfi_match_claimed(&m, &claim));
	mfi_unexp_free(a);
	mfi_match_fini(&m);
}

/* A claim given up (fi_cancel of its context): the message is unexpected again, in its place. */
static void test_unclaim(void **state)
{
	struct mfi_match m;
	struct mfi_unexp *a = ux(MFI_KIND_TAGGED, 1, 7), *b = ux(MFI_KIND_TAGGED, 1, 7);
	struct mfi_unexp *c = ux(MFI_KIND_TAGGED, 1, 7);
	int claim, other;

	assert_int_equal(mfi_match_init(&m, 8), 0);
	mfi_match_add_unexp(&m, a);
	mfi_match_add_unexp(&m, b);
	assert_ptr_equal(mfi_match_peek(&m, MFI_KIND_TAGGED, 1, 7, 0, &claim), a);
	mfi_match_add_unexp(&m, c);
	assert_null(mfi_match_unclaim(&m, &other));
	assert_ptr_equal(mfi_match_unclaim(&m, &claim), a);
	assert_null(mfi_match_unclaim(&m, &claim));
	assert_null(mfi_match_claimed(&m, &claim));
	/* Back before b and c, which came after it. */
	assert_ptr_equal(mfi_match_post(&m, rx(&m, MFI_KIND_TAGGED, 1, 7, 0, NULL)), a);
	assert_ptr_equal(mfi_match_post(&m, rx(&m, MFI_KIND_TAGGED, 1, 7, 0, NULL)), b);
	assert_ptr_equal(mfi_match_post(&m, rx(&m, MFI_KIND_TAGGED, 1, 7, 0, NULL)), c);
	mfi_unexp_free(a);
	mfi_unexp_free(b);
	mfi_unexp_free(c);
	mfi_match_fini(&m);
}

static void test_cancel_and_pool(void **state)
{
	struct mfi_match m;
	int c1, c2;
	struct mfi_rxop *r;

	assert_int_equal(mfi_match_init(&m, 2), 0);
	assert_null(mfi_match_post(&m, rx(&m, MFI_KIND_TAGGED, FI_ADDR_UNSPEC, 1, 0, &c1)));
	assert_null(mfi_match_post(&m, rx(&m, MFI_KIND_MSG, FI_ADDR_UNSPEC, 0, 0, &c2)));
	assert_null(mfi_rxop_get(&m));		/* the pool's two are out */
	r = mfi_match_cancel(&m, &c2);
	assert_non_null(r);
	assert_null(mfi_match_cancel(&m, &c2));
	mfi_rxop_put(&m, r);
	assert_non_null(mfi_rxop_get(&m));
	assert_ptr_equal(mfi_match_arrival(&m, MFI_KIND_TAGGED, 0, 1)->context, &c1);
	mfi_match_fini(&m);
}

/* An endpoint closing takes every posted receive; a connection gone takes its message out. */
static void test_close_and_remove(void **state)
{
	struct mfi_match m;
	struct mfi_unexp *a, *b, *c;
	int c1, c2, k;

	assert_int_equal(mfi_match_init(&m, 4), 0);
	assert_null(mfi_match_post(&m, rx(&m, MFI_KIND_TAGGED, FI_ADDR_UNSPEC, 1, 0, &c1)));
	assert_null(mfi_match_post(&m, rx(&m, MFI_KIND_MSG, FI_ADDR_UNSPEC, 0, 0, &c2)));
	assert_ptr_equal(mfi_match_take_posted(&m)->context, &c2);	/* untagged queue first */
	assert_ptr_equal(mfi_match_take_posted(&m)->context, &c1);
	assert_null(mfi_match_take_posted(&m));
	a = ux(MFI_KIND_TAGGED, 0, 7);
	b = ux(MFI_KIND_TAGGED, 0, 8);
	c = ux(MFI_KIND_TAGGED, 0, 9);
	mfi_match_add_unexp(&m, a);
	mfi_match_add_unexp(&m, b);
	mfi_match_add_unexp(&m, c);
	assert_ptr_equal(mfi_match_peek(&m, MFI_KIND_TAGGED, FI_ADDR_UNSPEC, 9, 0, &k), c);
	/* Out of the unexpected queue (the middle one) and of the claimed queue. */
	mfi_match_remove_unexp(&m, b);
	mfi_match_remove_unexp(&m, c);
	mfi_unexp_free(b);
	mfi_unexp_free(c);
	assert_null(mfi_match_claimed(&m, &k));
	assert_null(mfi_match_peek(&m, MFI_KIND_TAGGED, FI_ADDR_UNSPEC, 8, 0, NULL));
	assert_ptr_equal(mfi_match_peek(&m, MFI_KIND_TAGGED, FI_ADDR_UNSPEC, 7, 0, NULL), a);
	mfi_match_fini(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_posted_first),
		cmocka_unit_test(test_ignore_and_source),
		cmocka_unit_test(test_unexpected),
		cmocka_unit_test(test_peek_claim),
		cmocka_unit_test(test_unclaim),
		cmocka_unit_test(test_cancel_and_pool),
		cmocka_unit_test(test_close_and_remove),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
