// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: none */
/*
 * Host unit tests of the table of what each peer reported per client
 * (user/sync/peer_units.c), against a peer view in memory merged by the
 * shared algorithm (include/sl_peer.h, sl_peer_merge_piece):
 *  - a peer's units count while the view's slot of their slice counts,
 *    and then not; another peer's record is its own;
 *  - records survive the table's growth; at its bound, new pairs are
 *    refused while the live ones hold, and records whose newest slice
 *    left the ring make room again; a table at its bound holds as many
 *    pairs as it was sized for;
 *  - random honest schedules (several peers on the same clients, each
 *    accepting at most the cap in any sliding period, dated as a sender
 *    dates them, delivered late and out of order, at today's clock and
 *    across the wrap of its low 32 bits) are never cut;
 *  - random forging schedules never leave more than one cap of the
 *    forger counted in the view at any instant, by an exact model of
 *    what the kernel counts (sl_peer_tally), and cut no honest peer.
 * Each merge goes as sl_sync_merge_entry's (user/sync/merge.c): the record,
 * peer_units_room, the merge, peer_units_add.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sl_peer.h"
#include "sync/peer_units.h"

#define NOW	1000000000ULL
#define PERIOD	10000
#define SLICE	667

/* CLOCK_REALTIME ms on 2026-12-04, and TAI (37 s ahead) */
#define REALTIME_MS	1796342400000ULL
#define TAI_MS		(REALTIME_MS + 37000)

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

/* A peer's entry as merge_entry takes it: cut to what the peer may still
 * add, merged, recorded. Returns the units added; *cut counts the cuts.
 */
static __u32 merge_from(struct peer_units_table *t, struct sl_peer_view *v,
			__u32 node, const struct sl_client_key *k,
			__u64 window_ms, __u64 start_ms, __u64 units,
			__u64 cap, __u64 now_ms, unsigned *cut)
{
	__u64 ps = sl_peer_slice_ms(window_ms), room;
	struct peer_units *r;
	__u32 added;

	r = peer_units_of(t, node, k, ps, now_ms);
	assert_non_null(r);
	room = peer_units_room(r, v, ps, window_ms, start_ms, cap, 0, now_ms);
	if (units > room) {
		units = room;
		(*cut)++;
	}
	if (!units)
		return 0;
	added = sl_peer_merge_piece(v, ps, window_ms, start_ms, (__u32)units,
				    now_ms, 0);
	peer_units_add(r, start_ms, ps, added);
	return added;
}

/* Units of two slices count while the view's slot of each is dated
 * within the period; another peer's record of the same client is its
 * own; once a slot dates from before the period, its units no longer
 * count and the peer may add again.
 */
static void test_units_count_while_the_view_counts_them(void **st)
{
	struct sl_client_key k = key(1);
	struct peer_units_table t;
	struct sl_peer_view v;
	struct peer_units *r;
	unsigned cut = 0;

	(void)st;
	memset(&v, 0, sizeof(v));
	assert_int_equal(peer_units_init(&t, 1024), 0);
	assert_int_equal(merge_from(&t, &v, 1, &k, PERIOD, NOW, 30, 100,
				    NOW, &cut), 30);
	assert_int_equal(merge_from(&t, &v, 1, &k, PERIOD, NOW + 2 * SLICE,
				    20, 100, NOW + 2 * SLICE, &cut), 20);
	assert_non_null(r = peer_units_of(&t, 1, &k, SLICE, NOW + 2 * SLICE));
	assert_int_equal(peer_units_counted(r, &v, SLICE, PERIOD,
					    NOW + 2 * SLICE), 50);
	/* at the cap: 50 more of 60 */
	assert_int_equal(merge_from(&t, &v, 1, &k, PERIOD, NOW + 2 * SLICE,
				    60, 100, NOW + 2 * SLICE, &cut), 50);
	assert_int_equal(cut, 1);
	/* node 2 on the same client: a cap of its own */
	assert_int_equal(merge_from(&t, &v, 2, &k, PERIOD, NOW + 2 * SLICE,
				    100, 100, NOW + 2 * SLICE + 1, &cut), 100);
	assert_int_equal(cut, 1);
	/* the first slot's date leaves the period: 30 no longer count */
	assert_non_null(r = peer_units_of(&t, 1, &k, SLICE, NOW + PERIOD));
	assert_int_equal(peer_units_counted(r, &v, SLICE, PERIOD,
					    NOW + PERIOD), 70);
	assert_int_equal(merge_from(&t, &v, 1, &k, PERIOD, NOW + PERIOD, 40,
				    100, NOW + PERIOD, &cut), 30);
	assert_int_equal(cut, 2);
	peer_units_free(&t);
}

/* 3000 pairs in a table for 4096: it starts at 1024 records and grows,
 * each pair gets a record, and each still holds its units after.
 */
static void test_records_survive_growth(void **st)
{
	struct peer_units_table t;
	struct sl_client_key k;
	struct sl_peer_view v;
	struct peer_units *r;
	unsigned i;

	(void)st;
	memset(&v, 0, sizeof(v));
	v.slice_ms = SLICE;
	v.slot[(NOW / SLICE) % SL_PEER_SLOTS].slice = NOW / SLICE;
	v.slot[(NOW / SLICE) % SL_PEER_SLOTS].first_ms = (__u32)NOW;
	v.slot[(NOW / SLICE) % SL_PEER_SLOTS].count = 1000000;
	assert_int_equal(peer_units_init(&t, 4096), 0);
	for (i = 0; i < 3000; i++) {
		k = key(i);
		assert_non_null(r = peer_units_of(&t, 1 + i % 3, &k, SLICE,
						  NOW));
		peer_units_add(r, NOW, SLICE, 1 + i % 7);
	}
	assert_true(t.cap > 1024 && t.cap <= peer_units_max_cap(4096));
	for (i = 0; i < 3000; i++) {
		k = key(i);
		assert_non_null(r = peer_units_of(&t, 1 + i % 3, &k, SLICE,
						  NOW + 1));
		assert_int_equal(peer_units_counted(r, &v, SLICE, PERIOD,
						    NOW + 1), 1 + i % 7);
	}
	peer_units_free(&t);
}

/* A table for 1024 pairs: 3000 live pairs do not all fit, the refused
 * ones get NULL (the table stays at its bound); once the ring has passed
 * their slice, every pair placed gets its record back, empty, and new
 * pairs find room in what the old ones freed.
 */
static void test_bound_refuses_then_ring_frees(void **st)
{
	static bool was_placed[3000];
	__u64 later = NOW + (SL_PEER_SLOTS + 1) * SLICE;
	struct peer_units_table t;
	struct sl_client_key k;
	struct peer_units *r;
	unsigned i, placed = 0, again = 0;

	(void)st;
	assert_int_equal(peer_units_init(&t, 1024), 0);
	for (i = 0; i < 3000; i++) {
		k = key(i);
		was_placed[i] = false;
		if (!(r = peer_units_of(&t, 1, &k, SLICE, NOW)))
			continue;
		peer_units_add(r, NOW, SLICE, 5);
		was_placed[i] = true;
		placed++;
	}
	assert_int_equal(t.cap, peer_units_max_cap(1024));
	assert_true(placed >= 1024 && placed <= t.cap && placed < 3000);
	for (i = 0; i < 3000; i++) {
		if (!was_placed[i])
			continue;
		k = key(i);
		assert_non_null(r = peer_units_of(&t, 1, &k, SLICE, later));
		assert_int_equal(r->free_s, 0);	/* fresh */
	}
	for (i = 0; i < 3000; i++) {
		k = key(100000 + i);
		again += peer_units_of(&t, 1, &k, SLICE, later) != NULL;
	}
	assert_int_equal(t.cap, peer_units_max_cap(1024));
	assert_true(again > 0);
	peer_units_free(&t);
}

/* A table sized for 7 peers x 20,000 clients holds all 140,000 live
 * pairs at its bound (half full, probes of a bounded length).
 * Prints the record's size and the table's memory at the bound for 7
 * peers x 262,144 clients (docs/SECURITY.md).
 */
static void test_bound_holds_the_pairs_it_is_sized_for(void **st)
{
	size_t peers = 7, clients = 20000, i, placed = 0;
	size_t fleet = peer_units_max_cap(7 * (size_t)262144);
	struct peer_units_table t;
	struct sl_client_key k;
	struct peer_units *r;

	(void)st;
	printf("peer_units: record %zu bytes; at the bound for 7 peers x "
	       "262144 clients, %zu records, %zu bytes\n",
	       sizeof(struct peer_units), fleet,
	       fleet * sizeof(struct peer_units));
	assert_true(sizeof(struct peer_units) <= 88);
	assert_int_equal(peer_units_init(&t, peers * clients), 0);
	for (i = 0; i < peers * clients; i++) {
		k = key(i / peers);
		if (!(r = peer_units_of(&t, 1 + i % peers, &k, SLICE, NOW)))
			continue;
		peer_units_add(r, NOW, SLICE, 1);
		placed++;
	}
	assert_int_equal(t.cap, peer_units_max_cap(peers * clients));
	assert_int_equal(placed, peers * clients);
	peer_units_free(&t);
}

/* ---- random schedules ---- */

#define MAX_PEERS	8
#define MAX_CLIENTS	3
#define MAX_ACCEPTS	4096
#define MAX_EVENTS	65536

static __u64 rnd_state;

static __u64 rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static __u64 rnd_in(__u64 lo, __u64 hi)
{
	return lo + rnd() % (hi - lo + 1);
}

/* An entry as it arrives: from whom, of which client, when. */
struct event {
	__u64 arrive_ms;
	__u64 start_ms;
	__u32 units;
	unsigned node;
	unsigned client;
};

static struct event events[MAX_EVENTS];
static unsigned nr_events;

static int by_arrival(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	return x->arrive_ms < y->arrive_ms ? -1 : x->arrive_ms > y->arrive_ms;
}

/* An honest node: it accepts a client's request when fewer than `cap`
 * were accepted in the sliding period before it, and each round reports
 * per peer slice what it accepted since its last report, dated by the
 * slice's earliest accept or the new units' earliest (both no later than
 * any of them, as a sender dates them), delivered up to max_delay late.
 */
static void honest_node(unsigned node, unsigned client, __u64 t0,
			__u64 span, __u64 window_ms, __u64 cap,
			__u64 max_delay)
{
	static __u64 acc[MAX_ACCEPTS];
	__u64 ps = sl_peer_slice_ms(window_ms), t, round, next, gap;
	__u64 slice_first[SL_PEER_SLOTS];
	__u32 slice_of[SL_PEER_SLOTS];
	unsigned n = 0, sent = 0, head = 0, i, j;
	bool by_slice = rnd() & 1;

	memset(slice_of, 0xff, sizeof(slice_of));
	round = rnd_in(20, window_ms / 4 + 20);
	gap = rnd_in(1, 2 * window_ms / cap + 1);
	next = t0 + rnd_in(0, round);
	for (t = t0 + rnd_in(0, gap); ; t += rnd_in(0, 2 * gap)) {
		/* the rounds due before this request, the last one after
		 * the schedule
		 */
		while (next <= t || (t >= t0 + span && sent < n)) {
			for (i = sent; i < n; i = j) {
				__u64 s = acc[i] / ps, first = acc[i];

				for (j = i; j < n && acc[j] / ps == s; j++)
					;
				if (by_slice &&
				    slice_of[s % SL_PEER_SLOTS] == (__u32)s)
					first = slice_first[s % SL_PEER_SLOTS];
				assert_true(nr_events < MAX_EVENTS);
				events[nr_events++] = (struct event){
					.arrive_ms = next +
						rnd_in(0, max_delay),
					.start_ms = first,
					.units = j - i,
					.node = node,
					.client = client,
				};
			}
			sent = n;
			next += round;
		}
		if (t >= t0 + span)
			break;
		while (head < n && acc[head] + window_ms <= t)
			head++;
		if (n - head >= cap || n >= MAX_ACCEPTS)
			continue;
		if (slice_of[(t / ps) % SL_PEER_SLOTS] != (__u32)(t / ps)) {
			slice_of[(t / ps) % SL_PEER_SLOTS] = (__u32)(t / ps);
			slice_first[(t / ps) % SL_PEER_SLOTS] = t;
		}
		acc[n++] = t;
	}
}

/* A forging node: entries at random times, dated anywhere from a period
 * and a half back to past how far ahead the view takes, carrying up to
 * three caps.
 */
static void forging_node(unsigned node, unsigned client, __u64 t0,
			 __u64 span, __u64 window_ms, __u64 cap)
{
	unsigned i, n = rnd_in(50, 400);
	__u64 at;

	for (i = 0; i < n && nr_events < MAX_EVENTS; i++) {
		at = t0 + rnd_in(0, span);
		events[nr_events++] = (struct event){
			.arrive_ms = at,
			.start_ms = at + rnd_in(0, 3 * window_ms / 2 +
						SL_PEER_MAX_AHEAD_MS + 500) -
				    3 * window_ms / 2,
			.units = rnd() & 1 ? cap : rnd_in(0, 3 * cap),
			.node = node,
			.client = client,
		};
	}
}

/* What the kernel counts of the forger in a view (sl_peer_tally): its
 * units in each slot, as merged, while the slot holds the slice they
 * went to, that slice is in the ring behind now, and the slot is dated
 * within the window.
 */
struct forged {
	__u32 slice[SL_PEER_SLOTS];
	__u64 units[SL_PEER_SLOTS];
};

static __u64 forged_counted(const struct forged *f,
			    const struct sl_peer_view *v, __u64 window_ms,
			    __u64 now_ms)
{
	__u64 ps = sl_peer_slice_ms(window_ms), sum = 0;
	__u32 now_slice = now_ms / ps;
	unsigned i;

	for (i = 0; i < SL_PEER_SLOTS; i++) {
		const struct sl_peer_slot *s = &v->slot[i];

		if (!f->units[i] || s->slice != f->slice[i] ||
		    s->count <= s->own ||
		    (__u32)(now_slice - s->slice) >= SL_PEER_SLOTS ||
		    sl_u32_since(s->first_ms, (__u32)now_ms) >= window_ms)
			continue;
		sum += f->units[i];
	}
	return sum;
}

static const __u64 windows[] = { 1000, 3000, 10000, 60000 };

/* One schedule: `peers` honest nodes (and a forger when `forge`) on
 * `clients` clients. Returns the honest cuts; asserts the forger bound,
 * keeping in *forged_max the most of a cap (in thousandths) the forger
 * had counted.
 */
static unsigned run_schedule(bool forge, __u64 t0, unsigned *forged_max)
{
	__u64 window_ms = windows[rnd() % 4], limit = rnd_in(5, 300);
	__u64 cap = limit + limit / SL_PREDICT_MARGIN, span = 4 * window_ms;
	unsigned peers = rnd_in(2, 7), clients = rnd_in(1, MAX_CLIENTS);
	__u64 max_delay = rnd() % 4 ? rnd_in(0, 300) : rnd_in(0, 3000);
	__u32 forger = peers + 1, added;
	struct sl_peer_view view[MAX_CLIENTS];
	struct forged fv[MAX_CLIENTS];
	unsigned cut[MAX_PEERS + 2], i, c, honest_cuts = 0, idx;
	struct sl_client_key k[MAX_CLIENTS];
	struct peer_units_table t;
	__u64 ps = sl_peer_slice_ms(window_ms), probe, counted;

	memset(view, 0, sizeof(view));
	memset(fv, 0, sizeof(fv));
	memset(cut, 0, sizeof(cut));
	nr_events = 0;
	for (c = 0; c < clients; c++) {
		k[c] = key(c);
		for (i = 1; i <= peers; i++)
			honest_node(i, c, t0, span, window_ms, cap, max_delay);
		if (forge)
			forging_node(forger, c, t0, span, window_ms, cap);
	}
	qsort(events, nr_events, sizeof(events[0]), by_arrival);
	assert_int_equal(peer_units_init(&t, (peers + 1) * 16), 0);
	for (i = 0; i < nr_events; i++) {
		struct event *e = &events[i];

		c = e->client;
		/* between arrivals, the forger's count only falls: look at
		 * it at the next arrival and once in between
		 */
		probe = i ? (events[i - 1].arrive_ms + e->arrive_ms) / 2 : 0;
		if (forge && probe) {
			counted = forged_counted(&fv[c], &view[c], window_ms,
						 probe);
			assert_true(counted <= cap);
		}
		added = merge_from(&t, &view[c], e->node, &k[c], window_ms,
				   e->start_ms, e->units, cap, e->arrive_ms,
				   &cut[e->node]);
		idx = (__u32)(e->start_ms / ps) % SL_PEER_SLOTS;
		if (view[c].slot[idx].slice != fv[c].slice[idx]) {
			fv[c].slice[idx] = view[c].slot[idx].slice;
			fv[c].units[idx] = 0;	/* the slot taken over */
		}
		if (e->node == forger)
			fv[c].units[idx] += added;
		if (forge) {
			counted = forged_counted(&fv[c], &view[c], window_ms,
						 e->arrive_ms);
			if (counted * 1000 / cap > *forged_max)
				*forged_max = counted * 1000 / cap;
			if (counted > cap)
				fail_msg("forger counted %llu > cap %llu (window %llu, t0 %llu)",
					 (unsigned long long)counted,
					 (unsigned long long)cap,
					 (unsigned long long)window_ms,
					 (unsigned long long)t0);
		}
	}
	for (i = 1; i <= peers; i++)
		honest_cuts += cut[i];
	peer_units_free(&t);
	return honest_cuts;
}

/* Today's clock, TAI, and a start whose low 32 bits wrap within the
 * schedule (the view's dates and slices are cut to u32).
 */
static __u64 start_of(unsigned run)
{
	switch (run % 3) {
	case 0:
		return REALTIME_MS + rnd_in(0, 86400000);
	case 1:
		return TAI_MS + rnd_in(0, 86400000);
	default:
		return ((TAI_MS >> 32) + 1 + run % 7) * (1ULL << 32) -
		       rnd_in(0, 200000);
	}
}

static void test_honest_peers_never_cut(void **st)
{
	unsigned run, cuts = 0, forged_max = 0;

	(void)st;
	rnd_state = 0x5eed0001;
	for (run = 0; run < 300; run++)
		cuts += run_schedule(false, start_of(run), &forged_max);
	assert_int_equal(cuts, 0);
}

static void test_forging_peer_never_past_one_cap(void **st)
{
	unsigned run, cuts = 0, forged_max = 0;

	(void)st;
	rnd_state = 0x5eed0002;
	for (run = 0; run < 300; run++)
		cuts += run_schedule(true, start_of(run), &forged_max);
	printf("peer_units: 300 forging schedules, the forger counted at "
	       "most %u/1000 of a cap\n", forged_max);
	/* the honest peers beside it are not cut either */
	assert_int_equal(cuts, 0);
	assert_true(forged_max > 0 && forged_max <= 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_units_count_while_the_view_counts_them),
		cmocka_unit_test(test_records_survive_growth),
		cmocka_unit_test(test_bound_refuses_then_ring_frees),
		cmocka_unit_test(test_bound_holds_the_pairs_it_is_sized_for),
		cmocka_unit_test(test_honest_peers_never_cut),
		cmocka_unit_test(test_forging_peer_never_past_one_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
