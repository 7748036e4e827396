// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Two CPUs on one shared state (include/sl_algo.h), interleaved at the
 * one place where a stall costs: between a CPU's reads of the state and
 * its compare-and-swap. SL_CAS is interposed, so that CPU B's decisions
 * run, whole, just before CPU A's swap, as they do while A stalls there
 * (an interrupt, or a vCPU its host preempted: under TCG the other CPU
 * then decides thousands of packets).
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
	__u64 now;
	int armed;		/* B runs at A's next swap */
	unsigned b_accepts;
} ix;

static void tally(struct sl_tally *t, __u64 now)
{
	sl_tally_init(t);
	sl_client_tally(t, &ix.state, &ix.p, now);
	sl_tally_finish(t, &ix.p, now);
}

/* One decision as the kernel takes it: tally, verdict, charge. */
static int decide(__u64 now)
{
	struct sl_tally t;

	tally(&t, now);
	if (!sl_tally_allows(&t, &ix.p, 1))
		return 0;
	return sl_client_charge(&ix.state, &ix.p, &t, now, 1);
}

/* CPU B, at A's swap: decides until the client is over its limit. */
static void cpu_b_runs_here(void)
{
	if (!ix.armed)
		return;
	ix.armed = 0;
	while (decide(ix.now))
		ix.b_accepts++;
}

static void ix_init(__u64 limit)
{
	memset(&ix, 0, sizeof(ix));
	ix.p = (struct sl_params){ .limit = limit, .window_ms = HOUR_MS,
				   .slice_ms = HOUR_MS / 10,
				   .algorithm = SL_ALGO_SLIDING,
				   .idle_ms = HOUR_MS };
}

/* A decides at `now`: its tally, then its charge, inside which B runs at
 * A's first swap; then both decide, in turn, until nothing fits. Returns
 * every accept from `now` on.
 */
static unsigned race_at(__u64 now)
{
	struct sl_tally t;
	unsigned n = 0;

	ix.now = now;
	tally(&t, now);
	assert_true(sl_tally_allows(&t, &ix.p, 1));
	ix.armed = 1;
	n += sl_client_charge(&ix.state, &ix.p, &t, now, 1);
	/* if A never swapped, B decides after it */
	cpu_b_runs_here();
	n += ix.b_accepts;
	while (decide(now))
		n++;
	return n;
}

/* The every-CPU race test's case: a client's first accepts, both CPUs
 * at once, the clock standing still. A finds the new state idle (no
 * accept yet); what B accepts meanwhile must stay counted.
 */
static void test_interleave_first_accepts_within_one_extra(void **st)
{
	const __u64 limits[] = { 20000, 1000, 10 };
	unsigned i, n;

	for (i = 0; i < sizeof(limits) / sizeof(*limits); i++) {
		ix_init(limits[i]);
		n = race_at(T0);
		if (n < limits[i] || n > limits[i] + 1)
			fail_msg("limit %llu: %u accepted (B %u while A "
				 "stalled), expected %llu..%llu",
				 ULL(limits[i]), n, ix.b_accepts,
				 ULL(limits[i]), ULL(limits[i] + 1));
	}
}

/* The same after an idle window: the state holds records of the last
 * period, which A's restart must clear and B's must keep.
 */
static void test_interleave_after_idle_within_one_extra(void **st)
{
	const __u64 limits[] = { 20000, 1000, 10 };
	unsigned i, k, n;

	for (i = 0; i < sizeof(limits) / sizeof(*limits); i++) {
		ix_init(limits[i]);
		for (k = 0; k < limits[i] / 2 + 1; k++)
			assert_true(decide(T0));
		n = race_at(T0 + 2 * HOUR_MS);
		if (!ix.b_accepts)
			fail_msg("limit %llu: B never ran inside A's charge",
				 ULL(limits[i]));
		if (n < limits[i] || n > limits[i] + 1)
			fail_msg("limit %llu: %u accepted (B %u while A "
				 "stalled), expected %llu..%llu",
				 ULL(limits[i]), n, ix.b_accepts,
				 ULL(limits[i]), ULL(limits[i] + 1));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interleave_first_accepts_within_one_extra),
		cmocka_unit_test(test_interleave_after_idle_within_one_extra),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
