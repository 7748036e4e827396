// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: none */
/*
 * The `sliding` state's running total (include/sl_algo.h) against the
 * full sum it replaces. Random traces at realistic clocks (today's TAI
 * ms, and just before each 2^31 and 2^32 point of the u32 stamps, with
 * steps back of the clock and idle gaps) drive two states side by side:
 * the state as the kernel keeps it, and a reference that keeps the
 * records the way the algorithm did before the total (each with its own
 * sequence, summed and walked on every decision). After every step:
 *  - the exact model of the total holds: total is the sum of the
 *    records' counts, live the records with a count, oldest_ms the
 *    earliest first accept among them;
 *  - the tally (used, next expiry, sequence) and so every decision are
 *    the reference's.
 * Requests come in batches decided at one instant before any is charged,
 * as CPUs deciding the same client at once do. A second test races
 * threads over one state with the kernel's atomics (SL_HOST_ATOMICS) and
 * checks the same model once they stop.
 */
#define SL_HOST_ATOMICS 1

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "slicelimit.h"
#include "sl_algo.h"

#define ULL(x)		((unsigned long long)(x))
#define TRACES		250
#define STEPS		1500
#define MAX_BATCH	4	/* requests decided at one instant */

/* ---- the reference: the records summed on every decision ------------- */

struct ref_record {
	__u32 first_ms;
	__u32 count;
	__u32 seq;
};

struct ref_client {
	struct sl_client_hdr h;
	struct ref_record rec[SL_RECORDS];
};

static int ref_live(const struct ref_record *r, const struct sl_params *p,
		    __u64 now_ms)
{
	return r->count &&
	       sl_u32_since(r->first_ms, (__u32)now_ms) < p->window_ms;
}

static void ref_tally(struct sl_tally *t, const struct ref_client *c,
		      const struct sl_params *p, __u64 now_ms)
{
	int i;

	sl_tally_init(t);
	if (!sl_hdr_tally(t, &c->h, p, now_ms))
		return;
	for (i = 0; i < SL_RECORDS; i++) {
		const struct ref_record *r = &c->rec[i];

		if (!ref_live(r, p, now_ms))
			continue;
		t->used += r->count;
		sl_tally_expiry(t, now_ms +
				   sl_u32_ahead(r->first_ms, (__u32)now_ms) +
				   (p->window_ms -
				    sl_u32_since(r->first_ms, (__u32)now_ms)));
	}
}

static void ref_charge(struct ref_client *c, const struct sl_params *p,
		       const struct sl_tally *t, __u64 now_ms, __u32 units)
{
	__u64 cap = sl_slice_cap(p);
	struct ref_record *cur;
	__u32 live = 0, cur_idx, free_idx = SL_RECORDS;
	int open = 0, i;

	if (sl_client_idle(&c->h, p, now_ms))
		for (i = 0; i < SL_RECORDS; i++)
			c->rec[i].count = 0;
	for (i = 0; i < SL_RECORDS; i++) {
		struct ref_record *r = &c->rec[i];

		if (r->count && !ref_live(r, p, now_ms))
			r->count = 0;
		if (r->count)
			live++;
		else if (free_idx == SL_RECORDS)
			free_idx = i;
	}
	cur_idx = c->h.current < SL_RECORDS ? c->h.current : 0;
	cur = &c->rec[cur_idx];
	if (!cur->count) {
		open = 1;
	} else if ((__u32)(t->seq - cur->seq) >= cap) {
		open = 1;
	} else {
		__u64 first = now_ms - sl_u32_since(cur->first_ms,
						    (__u32)now_ms);

		if (first / p->slice_ms != now_ms / p->slice_ms &&
		    live + 1 + sl_records_needed(t, p, cap) <= SL_RECORDS)
			open = 1;
	}
	if (open && (!cur->count || free_idx < SL_RECORDS)) {
		if (cur->count)
			cur_idx = free_idx;
		cur = &c->rec[cur_idx];
		cur->first_ms = (__u32)now_ms;
		cur->seq = t->seq;
		c->h.current = cur_idx;
	}
	cur->count += units;
	sl_hdr_charge(&c->h, p, now_ms, units);
}

/* ---- the exact model of the running total ----------------------------- */

/* The state's total, live count and oldest time are what the records
 * hold: the sum written once, here.
 */
static void assert_total_model(const struct sl_client *c, __u64 now_ms,
			       int racing, const char *where)
{
	__u64 sum = 0;
	__u32 live = 0, oldest = 0;
	int i;

	for (i = 0; i < SL_RECORDS; i++) {
		if (!c->rec[i].count)
			continue;
		sum += c->rec[i].count;
		if (!live++ ||
		    (__s32)(c->rec[i].first_ms - (__u32)now_ms) <
		    (__s32)(oldest - (__u32)now_ms))
			oldest = c->rec[i].first_ms;
	}
	/* racing CPUs may leave oldest_ms earlier than the records' (a
	 * walk's minimum of records another CPU retired since): a walk
	 * more, never a record counted past its window
	 */
	if (c->total != sum || c->live != live ||
	    (live && (racing ? sl_u32_before(oldest, c->oldest_ms) :
			       c->oldest_ms != oldest)))
		fail_msg("%s at %llu: total %u live %u oldest %u; records: "
			 "sum %llu live %u oldest %u", where, ULL(now_ms),
			 c->total, c->live, c->oldest_ms, ULL(sum), live,
			 oldest);
}

/* ---- traces ----------------------------------------------------------- */

static __u64 rng_state;

static __u64 rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static __u64 rng_below(__u64 n)
{
	return n ? rng() % n : 0;
}

/* Today's TAI ms, and the points where the u32 stamps cross 2^31 and
 * wrap at 2^32, at today's clock and at the first such points.
 */
static const __u64 clock_bases[] = {
	1800000000000ULL,
	(419ULL << 32) + (1ULL << 31),
	(420ULL << 32),
	1ULL << 31,
	1ULL << 32,
};

struct run {
	struct sl_params p;
	__u32 max_units;
	struct sl_client c;
	struct ref_client ref;
	__u64 accepts, rejects, walks;
};

static void run_params(struct run *r)
{
	__u32 slices = 1 + rng_below(12);

	memset(r, 0, sizeof(*r));
	r->p.algorithm = SL_ALGO_SLIDING;
	r->p.window_ms = 1 + rng_below(rng_below(4) ? 3000 : 200000);
	r->p.slice_ms = (r->p.window_ms + slices - 1) / slices;
	r->p.idle_ms = r->p.window_ms;
	/* packets, or bytes: a unit of up to a frame against a larger limit */
	if (rng_below(3)) {
		r->p.limit = 1 + rng_below(rng_below(2) ? 20 : 400);
		r->max_units = 1;
	} else {
		r->max_units = 1 + rng_below(1500);
		r->p.limit = r->max_units + rng_below(40000);
	}
}

/* The next instant: mostly within a slice, sometimes the same ms, past
 * a window or the idle time, or back (the clock stepped).
 */
static __u64 next_now(const struct run *r, __u64 now)
{
	__u64 w = r->p.window_ms;

	switch (rng_below(40)) {
	case 0:
		return now + w + rng_below(2 * w);
	case 1:
		return now - rng_below(w + 1);
	case 2:
		return now - rng_below(3 * w + 1);
	case 3:
	case 4:
	case 5:
		return now;
	default:
		return now + rng_below(r->p.slice_ms / 2 + 2);
	}
}

/* The kernel's tally and charge of an sl_clients state. */
static void state_tally(struct sl_tally *t, const struct sl_client *c,
			const struct sl_params *p, __u64 now_ms)
{
	sl_tally_init(t);
	sl_client_tally(t, c, p, now_ms);
	sl_tally_finish(t, p, now_ms);
}

static void compare_tallies(const struct run *r, const struct sl_tally *a,
			    const struct sl_tally *b, __u64 now)
{
	if (a->used != b->used || a->next_expiry_ms != b->next_expiry_ms ||
	    a->seq != b->seq)
		fail_msg("at %llu (W %u, S %u, L %llu): used %llu/%llu expiry "
			 "%llu/%llu seq %u/%u (state/reference)", ULL(now),
			 r->p.window_ms, r->p.slice_ms, ULL(r->p.limit),
			 ULL(a->used), ULL(b->used), ULL(a->next_expiry_ms),
			 ULL(b->next_expiry_ms), a->seq, b->seq);
}

/* One trace: batches of requests, each batch decided at one instant on
 * tallies taken before any of it is charged.
 */
static void run_trace(struct run *r, __u64 start)
{
	struct sl_tally t[MAX_BATCH], rt[MAX_BATCH];
	__u32 units[MAX_BATCH];
	__u64 now = start;
	int s, i, n;

	for (s = 0; s < STEPS; s++) {
		now = next_now(r, now);
		n = 1 + (rng_below(4) ? 0 : rng_below(MAX_BATCH));
		for (i = 0; i < n; i++) {
			units[i] = 1 + rng_below(r->max_units);
			state_tally(&t[i], &r->c, &r->p, now);
			ref_tally(&rt[i], &r->ref, &r->p, now);
			compare_tallies(r, &t[i], &rt[i], now);
			r->walks += r->c.live &&
				    sl_u32_since(r->c.oldest_ms, (__u32)now) >=
				    r->p.window_ms;
		}
		for (i = 0; i < n; i++) {
			int fits = sl_tally_allows(&t[i], &r->p, units[i]);

			if (fits != sl_tally_allows(&rt[i], &r->p, units[i]))
				fail_msg("verdicts differ at %llu", ULL(now));
			if (!fits) {
				r->rejects++;
				continue;
			}
			r->accepts++;
			assert_true(sl_client_charge(&r->c, &r->p, &t[i], now,
						     units[i]));
			ref_charge(&r->ref, &r->p, &rt[i], now, units[i]);
			assert_total_model(&r->c, now, 0, "after a charge");
		}
	}
}

/* Every decision of the running total is the full sum's, and the total
 * is the records' sum after every accept, at every clock base.
 */
static void test_sliding_total_equals_full_sum_at_every_clock(void **state)
{
	struct run r;
	__u64 accepts = 0, rejects = 0, walks = 0;
	unsigned b, k;

	(void)state;
	rng_state = 0x70a1511ce2026ULL;
	for (b = 0; b < sizeof(clock_bases) / sizeof(clock_bases[0]); b++) {
		for (k = 0; k < TRACES; k++) {
			run_params(&r);
			/* start up to a few windows before the point, so
			 * the trace crosses it
			 */
			run_trace(&r, clock_bases[b] -
				      rng_below(4 * (__u64)r.p.window_ms + 1));
			accepts += r.accepts;
			rejects += r.rejects;
			walks += r.walks;
		}
	}
	print_message("# %llu accepts, %llu rejects, %llu tallies walked\n",
		      ULL(accepts), ULL(rejects), ULL(walks));
	/* the traces reach both verdicts and both paths of the tally */
	assert_true(accepts > 100000 && rejects > 100000);
	assert_true(walks > 1000 && walks < (accepts + rejects) / 4);
}

/* ---- threads as CPUs --------------------------------------------------- */

#define THREADS		4
#define PHASES		400
#define PER_PHASE	200

static struct {
	struct sl_client c;
	struct sl_params p;
	__u64 now;
	pthread_barrier_t start, stop;
	__u64 units[THREADS];
	int phase_accepts[THREADS];
} race;

/* Every thread accepts PER_PHASE requests at the phase's instant, as
 * the kernel does: tally, then charge with atomics, no lock.
 */
static void *race_cpu(void *arg)
{
	int me = (int)(long)arg, ph, i;

	for (ph = 0; ph < PHASES; ph++) {
		pthread_barrier_wait(&race.start);
		race.phase_accepts[me] = 0;
		for (i = 0; i < PER_PHASE; i++) {
			struct sl_tally t;

			state_tally(&t, &race.c, &race.p, race.now);
			if (!sl_tally_allows(&t, &race.p, 1))
				continue;
			sl_client_charge(&race.c, &race.p, &t, race.now, 1);
			race.phase_accepts[me]++;
		}
		pthread_barrier_wait(&race.stop);
	}
	return NULL;
}

/* Threads racing over one state (opens, retires, adds at once) leave
 * the total exact once they stop, and the accepts of each instant within
 * one unit per thread of the limit's room.
 */
static void test_sliding_total_exact_after_racing_cpus(void **state)
{
	pthread_t th[THREADS];
	__u64 now = (420ULL << 32) - 5000;
	int i, ph;

	(void)state;
	memset(&race, 0, sizeof(race));
	race.p = (struct sl_params){ .limit = 600, .window_ms = 1000,
				     .slice_ms = 84, .idle_ms = 1000,
				     .algorithm = SL_ALGO_SLIDING };
	rng_state = 0x2ace5eedULL;
	pthread_barrier_init(&race.start, NULL, THREADS + 1);
	pthread_barrier_init(&race.stop, NULL, THREADS + 1);
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, race_cpu,
						(void *)(long)i), 0);
	for (ph = 0; ph < PHASES; ph++) {
		struct sl_tally before, after;
		__u64 got = 0;

		now += rng_below(8) ? rng_below(90) : 1000 + rng_below(3000);
		race.now = now;
		state_tally(&before, &race.c, &race.p, now);
		pthread_barrier_wait(&race.start);
		pthread_barrier_wait(&race.stop);
		assert_total_model(&race.c, now, 1, "after racing threads");
		state_tally(&after, &race.c, &race.p, now);
		for (i = 0; i < THREADS; i++)
			got += race.phase_accepts[i];
		/* what the instant accepted is what the count grew by, but
		 * for an add that met another thread's retire of its
		 * record (one per thread); and no more than the room plus
		 * one per other thread, and those lost adds
		 */
		assert_true(after.used <= before.used + got);
		assert_true(after.used + THREADS >= before.used + got);
		assert_true(got <= sl_remaining(&before, &race.p) +
				   2 * THREADS - 1);
	}
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sliding_total_equals_full_sum_at_every_clock),
		cmocka_unit_test(test_sliding_total_exact_after_racing_cpus),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
