// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: replay_fixture */
/*
 * Two premises of the algorithms: a new client is counted from its
 * first request, and the ring of slices of sliding-plain and
 * sliding-counter covers their window.
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

/* ---- 4. every client is counted from its first request -------------------
 *
 * The kernel creates a client's state on its first request; if it cannot,
 * the request passes uncounted (fail_open). The client tables are nowhere
 * near full here, so no client may take L + 1 at one instant.
 */
static void new_clients(struct fixture *f, int ncpu)
{
	enum { CLIENTS = 100 };
	__u64 s = SEED * 11 + ncpu;
	unsigned algo, k, bad = 0;

	need_cpus(f, ncpu);
	for (algo = 0; algo < SL_ALGO__COUNT; algo++) {
		struct rule_cfg c = { .algo = algo, .limit = 3,
				      .window_ms = 1000 };
		unsigned over = 0, fo = 0;
		__u64 fo0 = fail_open_now(f);
		struct sl_addr who;

		apply_rule(f, &c, NULL);
		for (k = 0; k < CLIENTS; k++) {
			int i;

			tr.n = 0;
			for (i = 0; i < 4; i++)
				add_burst(&tr, 5000, 1,
					  ncpu > 1 ? (int)rnd(&s, 2) : 0);
			who = new_client(f, 0);
			replay(f, tr.r, tr.n, 1000000, &who, c.window_ms, &run_a);
			over += run_a.c.accepted != c.limit;
		}
		fo = fail_open_now(f) - fo0;
		if (over || fo) {
			print_error("%s, %d cpus: %u of %u new clients got "
				    "other than %llu of 4 requests at one "
				    "instant; %u requests failed open\n",
				    sl_algorithm_name(algo), ncpu, over, CLIENTS,
				    ULL(c.limit), fo);
			bad++;
		}
	}
	f->fail_open0 = fail_open_now(f);
	if (bad)
		fail_msg("%u algorithms did not count new clients from their "
			 "first request", bad);
}

static void test_new_clients_counted_from_first_request_one_cpu(void **st)
{
	new_clients(*st, 1);
}

static void test_new_clients_counted_from_first_request_two_cpus(void **st)
{
	new_clients(*st, 2);
}

/* sliding-plain sums the slices that cover one window; sliding-counter the
 * same and the slice before them, weighted. With the most slices the rule
 * file allows (64; the counter 63) and windows that do not divide evenly,
 * the slices must still cover the whole window and fit the kernel's ring
 * of 64: L requests at t0 and L in the last slice of the window (the
 * counter: at the start of the weighted one) must leave the second burst
 * rejected; L more once the window (and weighted slice) has passed are
 * accepted.
 */
static void test_ring_of_slices_covers_the_window(void **st)
{
	static const __u32 windows[] = { 100, 1000, 1500, 7000 };
	struct fixture *f = *st;
	unsigned i, a, bad = 0;

	for (a = 0; a < 2; a++) {
		unsigned algo = a ? SL_ALGO_SLIDING_COUNTER : SL_ALGO_SLIDING_PLAIN;
		unsigned ring = a ? 63 : 64;	/* slices held in full */

		for (i = 0; i < ARRAY_SIZE(windows); i++) {
			struct rule_cfg c = { .algo = algo, .limit = 10,
					      .window_ms = windows[i],
					      .slices = ring };
			struct sl_rule rule;
			struct sl_addr who;
			__u64 S, N, t0, t1, t2;

			apply_rule(f, &c, &rule);
			S = rule.slice_ms;
			N = (windows[i] + S - 1) / S;	/* slices in a window */
			t0 = 1000 * S * windows[i];	/* a slice boundary */
			t1 = t0 + (N - 1 + a) * S;	/* still counted */
			t2 = t0 + (N + a) * S + (a ? S : 0);	/* all gone */
			tr.n = 0;
			add_burst(&tr, t0, c.limit, 0);
			add_burst(&tr, t1, c.limit, 0);
			add_burst(&tr, t2, c.limit, 0);
			who = new_client(f, 0);
			f->preseed = &rule;	/* not the allocation bug */
			replay(f, tr.r, tr.n, 0, &who, N * S, &run_a);
			f->preseed = NULL;
			print_message("%s window %ums, %u slices of %llu ms (%llu "
				      "cover it): 10 + 10 at +%llu ms + 10 at "
				      "+%llu ms: %llu accepted\n", sl_algorithm_name(algo),
				      windows[i], ring, ULL(S), ULL(N),
				      ULL(t1 - t0), ULL(t2 - t0),
				      ULL(run_a.c.accepted));
			if (N > ring || run_a.c.accepted != 2 * c.limit) {
				print_error("%s L=10 window %ums slices %u: 10 at "
					    "t0, t0 + %llu ms and t0 + %llu ms: "
					    "accepted %llu, expected 20 (%llu "
					    "slices of %llu ms)\n",
					    sl_algorithm_name(algo), windows[i], ring,
					    ULL(t1 - t0), ULL(t2 - t0),
					    ULL(run_a.c.accepted), ULL(N), ULL(S));
				bad++;
			}
		}
	}
	if (bad)
		fail_msg("%u windows not covered by their ring of slices", bad);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, begin, end)
#define T2(name) T(name##_one_cpu), T(name##_two_cpus)
	const struct CMUnitTest tests[] = {
		T2(test_new_clients_counted_from_first_request),
		T(test_ring_of_slices_covers_the_window),
	};
#undef T2
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
