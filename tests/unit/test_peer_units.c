// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Host unit tests of the table of what each peer reported per client
 * (user/sync/peer_units.c): a peer's units count for their period and
 * then not; records survive the table's growth; at its bound, new
 * (peer, client) pairs are refused while the live ones hold, and records
 * whose period ended make room again.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "sync/peer_units.h"

#define NOW	1000000000ULL
#define PERIOD	10000
#define SLICE	667

static struct sl_client_key key(unsigned i)
{
	struct sl_client_key k;

	memset(&k, 0, sizeof(k));
	k.addr.byte[10] = k.addr.byte[11] = 0xff;
	k.addr.byte[12] = 10;
	k.addr.byte[13] = i >> 16;
	k.addr.byte[14] = i >> 8;
	k.addr.byte[15] = i;
	return k;
}

/* Units of two slices count while their earliest start is within the
 * period of now; another peer's record of the same client is its own.
 */
static void test_units_count_for_their_period(void **st)
{
	struct peer_units_table t;
	struct sl_client_key k = key(1);
	struct peer_units *r;

	(void)st;
	assert_int_equal(peer_units_init(&t, 1024), 0);
	assert_non_null(r = peer_units_of(&t, 1, &k, NOW));
	peer_units_add(r, NOW, SLICE, PERIOD, 30);
	peer_units_add(r, NOW + 2 * SLICE, SLICE, PERIOD, 20);
	assert_ptr_equal(peer_units_of(&t, 1, &k, NOW + 10), r);
	assert_int_equal(peer_units_within(r, PERIOD, NOW + 10), 50);
	assert_int_equal(peer_units_within(r, PERIOD, NOW + PERIOD), 20);
	assert_non_null(r = peer_units_of(&t, 2, &k, NOW + 10));
	assert_int_equal(peer_units_within(r, PERIOD, NOW + 10), 0);
	/* every unit out of its period: a fresh record */
	r = peer_units_of(&t, 1, &k, NOW + 2 * SLICE + PERIOD);
	assert_non_null(r);
	assert_int_equal(peer_units_within(r, PERIOD, NOW + 2 * SLICE), 0);
	peer_units_free(&t);
}

/* 3000 pairs in a table for 4096 (it starts at 1024 records and grows
 * to twice that, to stay half full): each gets a record, and each still
 * holds its units after the growth.
 */
static void test_records_survive_growth(void **st)
{
	struct peer_units_table t;
	struct sl_client_key k;
	struct peer_units *r;
	unsigned i;

	(void)st;
	assert_int_equal(peer_units_init(&t, 4096), 0);
	for (i = 0; i < 3000; i++) {
		k = key(i);
		assert_non_null(r = peer_units_of(&t, 1 + i % 3, &k, NOW));
		peer_units_add(r, NOW, SLICE, PERIOD, 1 + i % 7);
	}
	assert_true(t.cap > 1024 && t.cap <= 8192);
	for (i = 0; i < 3000; i++) {
		k = key(i);
		assert_non_null(r = peer_units_of(&t, 1 + i % 3, &k, NOW + 1));
		assert_int_equal(peer_units_within(r, PERIOD, NOW + 1),
				 1 + i % 7);
	}
	peer_units_free(&t);
}

/* A table for 1024 (2048 records at most): 3000 live pairs do not all
 * fit, the refused ones get NULL (the table stays at its bound); a
 * period later every pair placed gets its record back, empty, and new
 * pairs find room in what the old ones freed.
 */
static void test_bound_refuses_then_period_frees(void **st)
{
	static bool was_placed[3000];
	struct peer_units_table t;
	struct sl_client_key k;
	struct peer_units *r;
	unsigned i, placed = 0, again = 0;

	(void)st;
	assert_int_equal(peer_units_init(&t, 1024), 0);
	for (i = 0; i < 3000; i++) {
		k = key(i);
		was_placed[i] = false;
		if (!(r = peer_units_of(&t, 1, &k, NOW)))
			continue;
		peer_units_add(r, NOW, SLICE, PERIOD, 5);
		was_placed[i] = true;
		placed++;
	}
	assert_int_equal(t.cap, 2048);
	assert_true(placed > 0 && placed <= 2048 && placed < 3000);
	for (i = 0; i < 3000; i++) {
		if (!was_placed[i])
			continue;
		k = key(i);
		assert_non_null(r = peer_units_of(&t, 1, &k, NOW + PERIOD));
		assert_int_equal(peer_units_within(r, PERIOD, NOW + PERIOD),
				 0);
	}
	for (i = 0; i < 3000; i++) {
		k = key(100000 + i);
		again += peer_units_of(&t, 1, &k, NOW + PERIOD) != NULL;
	}
	assert_int_equal(t.cap, 2048);
	assert_true(again > 0);
	peer_units_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_units_count_for_their_period),
		cmocka_unit_test(test_records_survive_growth),
		cmocka_unit_test(test_bound_refuses_then_period_frees),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
