// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: replay_fixture */
/*
 * A burst on each side of a window boundary: fixed takes 2 L into one
 * window, sliding at most 1.1 L.
 *
 * Replay tests: random traces through the real BPF object with
 * sl_replay_run() (tests/lib/replay_fixture.h), one BPF_PROG_TEST_RUN per
 * request under the model clock, on the CPU the trace names. Expectations
 * come from references computed here, never from the code under test.
 * Each part runs with every request on CPU 0 and with requests spread
 * over CPUs 0 and 1. Everything is seeded: a failure names the trace or
 * history index, the rule and the base time, which reproduce it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <cmocka.h>

#include "slicelimit.h"
#include "sl_algo.h"
#include "instance/instance.h"
#include "instance/instance_maps.h"
#include "replay/replay.h"
#include "rules/rules.h"
#include "sl_key.h"
#include "replay/trace.h"
#include "trace_gen.h"
#include "replay_fixture.h"

static struct trace tr;
static struct run run_a = { .want_id = -1 };

/* ---- 3. a burst on each side of a window boundary --------------------------
 *
 * L requests just before a window boundary and L just after it. A fixed
 * window starts afresh at the boundary and takes all 2 L into the window
 * around it; sliding takes at most 1.1 L there, and all of the first burst,
 * which no window holds more than L of.
 */
#define NET_FIXED	200
#define NET_SLIDING	201

struct boundary_case {
	__u64 limit;
	__u32 window_ms;
	__u64 edge;		/* a multiple of the window */
	__u64 before, after;	/* spread of the bursts, ms */
};

/* The burst pair, on CPU 0 or alternating CPUs. */
static void boundary_trace(const struct boundary_case *b, int ncpu,
			   struct trace *x)
{
	__u64 i;

	x->n = 0;
	for (i = 0; i < b->limit; i++)
		add_burst(x, b->edge - b->before + i * b->before / b->limit, 1,
			  ncpu > 1 ? i & 1 : 0);
	for (i = 0; i < b->limit; i++)
		add_burst(x, b->edge + i * b->after / b->limit, 1,
			  ncpu > 1 ? (i + 1) & 1 : 0);
}

static void boundary_case_run(struct fixture *f, const struct boundary_case *b,
			      int ncpu, unsigned *bad, unsigned *extra,
			      double *worst)
{
	struct rule_cfg c[2] = {
		{ .algo = SL_ALGO_FIXED, .limit = b->limit,
		  .window_ms = b->window_ms, .net = NET_FIXED },
		{ .algo = SL_ALGO_SLIDING, .limit = b->limit,
		  .window_ms = b->window_ms, .net = NET_SLIDING },
	};
	__u64 bound = b->limit >= 10 ? b->limit + b->limit / 10 : b->limit;
	__u64 ref_fixed[2] = { 0, 0 }, want_fixed;
	struct sl_addr who;
	int i;

	boundary_trace(b, ncpu, &tr);
	apply_rules(f, c, 2, NULL);

	/* the fixed window as defined: L per window floor(t / W) */
	for (i = 0; i < tr.n; i++) {
		__u64 *n = &ref_fixed[tr.r[i].t >= b->edge];

		*n += *n < b->limit;
	}
	want_fixed = ref_fixed[0] + ref_fixed[1];
	who = new_client(f, NET_FIXED);
	replay(f, tr.r, tr.n, 0, &who, b->window_ms, &run_a);
	if (run_a.c.accepted != want_fixed ||
	    run_a.c.max_in_window != 2 * b->limit) {
		print_error("fixed L=%llu W=%u edge %llu, %d cpus: accepted "
			    "%llu, max_in_window %llu; expected %llu, %llu\n",
			    ULL(b->limit), b->window_ms, ULL(b->edge), ncpu,
			    ULL(run_a.c.accepted), ULL(run_a.c.max_in_window),
			    ULL(want_fixed), ULL(2 * b->limit));
		(*bad)++;
	}

	who = new_client(f, NET_SLIDING);
	replay(f, tr.r, tr.n, 0, &who, b->window_ms, &run_a);
	for (i = 0; i < (int)b->limit; i++)
		if (!run_a.d[i].accepted) {
			print_error("sliding L=%llu W=%u edge %llu, %d cpus: "
				    "request %d of the first burst rejected\n",
				    ULL(b->limit), b->window_ms, ULL(b->edge),
				    ncpu, i);
			(*bad)++;
			break;
		}
	if ((double)run_a.c.max_in_window / b->limit > *worst)
		*worst = (double)run_a.c.max_in_window / b->limit;
	if (run_a.c.max_in_window > bound && ncpu > 1 &&
	    run_a.c.max_in_window <= bound + ncpu) {
		print_message("note: sliding L=%llu W=%u edge %llu: %llu in a "
			      "window, bound %llu + %d CPUs\n", ULL(b->limit),
			      b->window_ms, ULL(b->edge),
			      ULL(run_a.c.max_in_window), ULL(bound), ncpu);
		(*extra)++;
	} else if (run_a.c.max_in_window > bound) {
		print_error("sliding L=%llu W=%u edge %llu before %llu after "
			    "%llu, %d cpus: %llu in one window, bound %llu\n",
			    ULL(b->limit), b->window_ms, ULL(b->edge),
			    ULL(b->before), ULL(b->after), ncpu,
			    ULL(run_a.c.max_in_window), ULL(bound));
		(*bad)++;
	}
}

static void boundary(struct fixture *f, int ncpu)
{
	static const __u64 limits[] = { 10, 20, 50, 100, 300 };
	static const __u32 windows[] = { 1000, 10000, 60000 };
	__u64 s = SEED * 7 + ncpu;
	unsigned k, bad = 0, extra = 0;
	double worst = 0;
	struct boundary_case b;

	need_cpus(f, ncpu);
	/* the design study's boundary burst: 600 in the last 5 s of a
	 * minute and 600 in the first 5 s of the next
	 */
	b = (struct boundary_case){ .limit = 600, .window_ms = 60000,
				    .edge = 60000, .before = 5000,
				    .after = 5000 };
	boundary_case_run(f, &b, ncpu, &bad, &extra, &worst);
	/* both bursts at one instant each, a ms apart */
	b = (struct boundary_case){ .limit = 100, .window_ms = 1000,
				    .edge = 1000000, .before = 1,
				    .after = 0 };
	boundary_case_run(f, &b, ncpu, &bad, &extra, &worst);
	for (k = 0; k < 24; k++) {
		b.limit = limits[rnd(&s, ARRAY_SIZE(limits))];
		b.window_ms = windows[rnd(&s, ARRAY_SIZE(windows))];
		b.edge = (3 + rnd(&s, 1000)) * b.window_ms;
		b.before = 1 + rnd(&s, b.window_ms / 5);
		b.after = rnd(&s, b.window_ms / 5);
		boundary_case_run(f, &b, ncpu, &bad, &extra, &worst);
	}
	assert_no_fail_open(f);
	f->boundary_extra += extra;
	print_message("boundary bursts, %d cpus: sliding at most %.3f x L, "
		      "%u needed the per-CPU allowance\n", ncpu, worst, extra);
	if (bad)
		fail_msg("%u boundary burst problems", bad);
}

static void test_boundary_burst_fixed_2x_sliding_1_1x_one_cpu(void **st)
{
	boundary(*st, 1);
}

static void test_boundary_burst_fixed_2x_sliding_1_1x_two_cpus(void **st)
{
	boundary(*st, 2);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, begin, end)
#define T2(name) T(name##_one_cpu), T(name##_two_cpus)
	const struct CMUnitTest tests[] = {
		T2(test_boundary_burst_fixed_2x_sliding_1_1x),
	};
#undef T2
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
