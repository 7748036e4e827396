// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: replay_fixture */
/*
 * Properties of `sliding` over random traces: compliant traces (filtered
 * through the exact log) are never rejected; raw traces never get more
 * than L + L/10 (L below 10: L) accepts into a window. Every decision is
 * also checked against the trace itself: a reject needs L real accepts
 * in the window, and the count the client view reports lies between the
 * real count minus (cap - 1) and the real count.
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

/* ---- 1. properties of sliding --------------------------------------------- */

/* Limits to 1,000 and windows of 200 ms in 3 slices: the shape of the
 * case a random search found on two CPUs (issue 15, tests/replay/cases).
 */
static const __u64 prop_limits[] = { 1, 2, 3, 5, 7, 9, 10, 11, 20, 33, 50, 99,
				     100, 333, 999, 1000 };
static const __u32 prop_windows[] = { 100, 200, 200, 1000, 1500, 5000, 7000,
				      60000 };
static const unsigned prop_slices[] = { 1, 3, 3, 5, 12, 12, 20, 60 };

static void random_sliding(__u64 *s, struct rule_cfg *c, struct sl_params *p)
{
	memset(c, 0, sizeof(*c));
	c->algo = SL_ALGO_SLIDING;
	c->limit = prop_limits[rnd(s, ARRAY_SIZE(prop_limits))];
	c->window_ms = prop_windows[rnd(s, ARRAY_SIZE(prop_windows))];
	c->slices = prop_slices[rnd(s, ARRAY_SIZE(prop_slices))];
	memset(p, 0, sizeof(*p));
	p->limit = c->limit;
	p->window_ms = c->window_ms;
	p->slice_ms = c->window_ms / c->slices;
}

static struct trace tr, tr2;
static struct run run_a = { .want_id = -1 };

/* Traces run in batches, one rule per trace told apart by source net
 * (10.1/16, 10.2/16, ...): applying a rule set costs ~10 ms, a request
 * ~5-25 us.
 */
#define BATCH		16

/* Compliant traces (`compliant`): bursty random traces through the exact
 * log, so that no window ever holds more than L; `sliding` must accept
 * every request. Adversarial traces: the raw traces; at most L + L/10
 * accepts (L below 10: L) in any window, whatever CPUs the requests take
 * (one state per client; replay decides one request at a time).
 */
static void properties(struct fixture *f, int ncpu, bool compliant)
{
	__u64 s = compliant ? SEED + ncpu : SEED * 3 + ncpu, base, b, m;
	unsigned k, j, nb, bad = 0, printed = 0, rejected = 0;
	unsigned total = 0;
	struct rule_cfg c[BATCH];
	struct sl_rule live[BATCH];
	struct sl_params p[BATCH];
	const struct trace *x;
	struct sl_addr who;
	char what[200];

	need_cpus(f, ncpu);
	for (k = 0; k < NPROP; k += nb) {
		nb = NPROP - k < BATCH ? NPROP - k : BATCH;
		for (j = 0; j < nb; j++) {
			random_sliding(&s, &c[j], &p[j]);
			c[j].net = 1 + j;
		}
		apply_rules(f, c, nb, live);
		for (j = 0; j < nb; j++) {
			gen_trace(&s, &p[j], p[j].limit, ncpu, &tr);
			if (tr.n > MAXTR)
				tr.n = MAXTR;
			x = &tr;
			if (compliant) {
				ref_log(&tr, p[j].limit, p[j].window_ms, &tr2);
				x = &tr2;
			}
			base = random_base(&s, p[j].window_ms, p[j].slice_ms);
			who = new_client(f, c[j].net);
			run_a.want_id = live[j].id;
			replay(f, x->r, x->n, base, &who, p[j].window_ms, &run_a);
			total += x->n;
			rejected += run_a.c.rejected;
			describe(&c[j], what, sizeof(what));
			snprintf(what + strlen(what), sizeof(what) - strlen(what),
				 " base %llu, trace %u, %d cpus", ULL(base), k + j,
				 ncpu);
			bad += check_sliding_decisions(&run_a, p[j].limit,
						       p[j].window_ms, what,
						       &printed);
			m = run_a.c.max_in_window;
			if (compliant) {
				if (run_a.c.rejected &&
				    printed++ < MAX_PRINTS)
					print_error("%s: %llu of %d compliant "
						    "requests rejected\n", what,
						    ULL(run_a.c.rejected), x->n);
				bad += run_a.c.rejected > 0;
				/* the filter's promise, in the kernel's accepts */
				assert_in_range(m, 1, p[j].limit);
				continue;
			}
			b = p[j].limit >= 10 ? p[j].limit + p[j].limit / 10 :
					       p[j].limit;
			if (m > b) {
				if (printed++ < MAX_PRINTS)
					print_error("%s: %llu accepted in one "
						    "window, bound %llu\n", what,
						    ULL(m), ULL(b));
				bad++;
			}
		}
	}
	run_a.want_id = -1;
	assert_no_fail_open(f);
	print_message("%u %s traces, %u requests, %u rejected, %d cpus\n", NPROP,
		      compliant ? "compliant" : "adversarial", total, rejected,
		      ncpu);
	/* the adversarial traces really were */
	if (!compliant)
		assert_true(rejected > total / 10);
	if (bad)
		fail_msg("%u problems in %s traces", bad,
			 compliant ? "compliant" : "adversarial");
}

static void test_sliding_compliant_traces_never_rejected_one_cpu(void **st)
{
	properties(*st, 1, true);
}

static void test_sliding_compliant_traces_never_rejected_two_cpus(void **st)
{
	properties(*st, 2, true);
}

static void test_sliding_adversarial_traces_within_bound_one_cpu(void **st)
{
	properties(*st, 1, false);
}

static void test_sliding_adversarial_traces_within_bound_two_cpus(void **st)
{
	properties(*st, 2, false);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, begin, end)
#define T2(name) T(name##_one_cpu), T(name##_two_cpus)
	const struct CMUnitTest tests[] = {
		T2(test_sliding_compliant_traces_never_rejected),
		T2(test_sliding_adversarial_traces_within_bound),
	};
#undef T2
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
