// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: none */
/*
 * Two CPUs on one sliding state (include/sl_algo.h), interleaved where a
 * stall costs: between a CPU's reads of the state and a compare-and-swap
 * it decided on them. SL_CAS is interposed, so that CPU B's decisions
 * run, whole, just before CPU A's swap number k, for every k of A's
 * charge, as they do while A stalls there (an interrupt, or a vCPU its
 * host preempted, which under TCG lasts many of the other CPU's
 * packets).
 *
 * The bound the shared state promises: at most one unit per CPU beyond
 * the first more than a sequential run each time the count reaches the
 * limit, whatever the interleaving; with the clock standing still a
 * sequential run accepts exactly the limit, so two CPUs accept at most
 * limit + 1.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <linux/types.h>

static void cpu_b_runs_here(void);

#define SL_CAS(ptr, old, new)						\
	(cpu_b_runs_here(),						\
	 sl_cas_private(ptr, old, new, sizeof(*(ptr))))

#include "slicelimit.h"
#include "sl_algo.h"

#define T0		1000000000ULL	/* ms; far from 0 and from u32 wrap */
#define HOUR_MS		3600000U
#define ULL(x)		((unsigned long long)(x))

static struct {
	struct sl_params p;
	struct sl_client state;	/* the one state both CPUs decide on */
	struct sl_client_log log;	/* ... under sliding-log */
	struct sl_client_plain plain;	/* ... sliding-plain, -counter */
	__u64 now;
	unsigned armed;		/* B runs at A's swap number `armed` */
	unsigned swaps;		/* A's swaps so far */
	unsigned b_accepts;
} ix;

static int is_log(void)
{
	return ix.p.algorithm == SL_ALGO_SLIDING_LOG;
}

static void tally(struct sl_tally *t, __u64 now)
{
	sl_tally_init(t);
	if (is_log())
		sl_client_log_tally(t, &ix.log, &ix.p, now);
	else if (sl_uses_slots(ix.p.algorithm))
		sl_client_plain_tally(t, &ix.plain, &ix.p, now);
	else
		sl_client_tally(t, &ix.state, &ix.p, now);
	sl_tally_finish(t, &ix.p, now);
}

static int charge(const struct sl_tally *t, __u64 now)
{
	if (is_log())
		return sl_client_log_charge(&ix.log, &ix.p, now);
	if (sl_uses_slots(ix.p.algorithm))
		return sl_client_plain_charge(&ix.plain, &ix.p, now, 1);
	return sl_client_charge(&ix.state, &ix.p, t, now, 1);
}

/* One decision as the kernel takes it: tally, verdict, charge. */
static int decide(__u64 now)
{
	struct sl_tally t;

	tally(&t, now);
	if (!sl_tally_allows(&t, &ix.p, 1))
		return 0;
	return charge(&t, now);
}

/* CPU B, at A's swap: decides until the client is over its limit. */
static void cpu_b_runs_here(void)
{
	if (!ix.armed || ++ix.swaps < ix.armed)
		return;
	ix.armed = 0;
	while (decide(ix.now))
		ix.b_accepts++;
}

static __u32 ix_algorithm = SL_ALGO_SLIDING;

static void ix_init(__u64 limit)
{
	memset(&ix, 0, sizeof(ix));
	ix.p = (struct sl_params){ .limit = limit, .window_ms = HOUR_MS,
				   .slice_ms = HOUR_MS / 10,
				   .algorithm = ix_algorithm,
				   .idle_ms = HOUR_MS };
}

/* A decides at `now`: its tally, then its charge, inside which B runs
 * just before A's swap number `at` (after A, if A swaps fewer times);
 * then both decide, in turn, until nothing fits. Returns every accept
 * from `now` on.
 */
static unsigned race_at(__u64 now, unsigned at)
{
	struct sl_tally t;
	unsigned n = 0;

	ix.now = now;
	ix.swaps = 0;
	ix.b_accepts = 0;
	tally(&t, now);
	assert_true(sl_tally_allows(&t, &ix.p, 1));
	ix.armed = at;
	n += charge(&t, now);
	ix.armed = ix.armed ? 1 : 0;
	ix.swaps = 0;
	cpu_b_runs_here();
	n += ix.b_accepts;
	while (decide(now))
		n++;
	return n;
}

#define SWAPS	32	/* more than A's charge makes */

static int is_log_run(void)
{
	return ix_algorithm == SL_ALGO_SLIDING_LOG;
}

/* Every stall point of A up to its swap `last_at`, under each limit: the
 * client's accepts from `gap` after a first period of `before` accepts
 * (none: its first accepts) are at most limit + 1, and at least the
 * limit, less the first period's units if `old_held` (they may stay
 * counted).
 */
static void race_every_stall(__u64 gap, unsigned before, unsigned last_at,
			     int old_held)
{
	/* the log holds SL_MAX_LOG accepts */
	const __u64 limits[] = { is_log_run() ? 1000 : 20000, 1000, 10 };
	unsigned i, k, at, n, bad = 0;

	for (i = 0; i < sizeof(limits) / sizeof(*limits); i++)
	for (at = 1; at <= last_at; at++) {
		__u64 lost = !old_held ? 0 : before < limits[i] ? before :
			     limits[i];

		ix_init(limits[i]);
		for (k = 0; k < before && k < limits[i]; k++)
			assert_true(decide(T0));
		n = race_at(T0 + gap, at);
		if (n + lost < limits[i] || n > limits[i] + 1) {
			print_error("limit %llu, B at A's swap %u: %u accepted "
				    "(B %u), expected %llu..%llu\n",
				    ULL(limits[i]), at, n, ix.b_accepts,
				    ULL(limits[i] - lost), ULL(limits[i] + 1));
			bad++;
		}
	}
	if (bad)
		fail_msg("%u stall point(s) outside the bound", bad);
}

/* The every-CPU race test's case: a client's first accepts, both CPUs
 * at once, the clock standing still. A finds the new state idle (no
 * accept yet); what B accepts meanwhile must stay counted.
 */
static void test_interleave_first_accepts_within_one_extra(void **st)
{
	race_every_stall(0, 0, SWAPS, 0);
}

/* After an idle window, the last period's records out of it: A stalls
 * as it restarts the state (its first swap). Its later swaps are the
 * charge's walk, which zeroes records out of the window: B can zero,
 * open and fill one of them again to the count A read, and A's swap
 * then takes B's units (docs/TESTS.md); not checked here.
 */
static void test_interleave_after_idle_within_one_extra(void **st)
{
	race_every_stall(2ULL * HOUR_MS, 5, 1, 0);
	race_every_stall(2ULL * HOUR_MS, 20000 / 2 + 1, 1, 0);
}

/* sliding-log: A's restart of the idle log moves its first valid entry
 * to the accepts it counted before it saw the idleness, not past what B
 * logged meanwhile; at a client's first accepts and after an idle
 * window.
 */
static void test_interleave_log_within_one_extra(void **st)
{
	ix_algorithm = SL_ALGO_SLIDING_LOG;
	race_every_stall(0, 0, SWAPS, 0);
	race_every_stall(2ULL * HOUR_MS, 5, SWAPS, 0);
	ix_algorithm = SL_ALGO_SLIDING;
}

/* sliding-plain and sliding-counter: one CPU restarts the idle ring, of
 * its last period's slots only; at a client's first accepts and after an
 * idle window.
 */
static void test_interleave_ring_within_one_extra(void **st)
{
	const __u32 algorithms[] = { SL_ALGO_SLIDING_PLAIN,
				     SL_ALGO_SLIDING_COUNTER };
	unsigned a;

	for (a = 0; a < 2; a++) {
		ix_algorithm = algorithms[a];
		race_every_stall(0, 0, SWAPS, 0);
		race_every_stall(2ULL * HOUR_MS, 5, SWAPS, 0);
		race_every_stall(2ULL * HOUR_MS, 20000 / 2 + 1, SWAPS, 0);
	}
	ix_algorithm = SL_ALGO_SLIDING;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interleave_first_accepts_within_one_extra),
		cmocka_unit_test(test_interleave_after_idle_within_one_extra),
		cmocka_unit_test(test_interleave_log_within_one_extra),
		cmocka_unit_test(test_interleave_ring_within_one_extra),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
