// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: replay_fixture */
/*
 * Retry-After of every algorithm: after a reject at t with
 * retry_after_ms R, a request at t + R is accepted and one at t + R - 1
 * is not (probed on fresh clients with the same history). For the five
 * exact algorithms every decision, count and Retry-After must also equal
 * an independent model of the algorithm.
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
static struct run run_a = { .want_id = -1 }, run_b = { .want_id = -1 };

/* ---- 2. Retry-After ------------------------------------------------------- */

/* Independent models of the five exact algorithms, from their definitions
 * in the rule reference and sl_algo.h's comments, counting the accepts
 * they themselves made:
 *   sliding-log      accepts in (x - W, x]
 *   fixed            accepts in window floor(x / W)
 *   sliding-plain    accepts in the N = ceil(W / S) slices up to floor(x / S)
 *   sliding-counter  the same N slices in full, and the slice before them
 *                    weighted: floor(oldest * (S - x mod S) / S); with one
 *                    slice (the default) cur + prev * (W - x mod W) / W
 *   token-bucket     GCRA: tokens in use ceil((TAT - x) / T), TAT += T
 * A request of 1 unit is accepted while used + 1 <= limit (capacity).
 */
struct ref {
	unsigned algo;
	__u64 limit, W, S, N;
	__u64 T;		/* token-bucket: ns per unit */
	__u64 tat_ns;
	__u64 acc[MAXRUN];
	int nacc;
};

static void ref_init(struct ref *r, const struct sl_rule *rule)
{
	memset(r, 0, sizeof(*r));
	r->algo = rule->algorithm;
	r->limit = r->algo == SL_ALGO_TOKEN_BUCKET ? rule->bucket_capacity :
						     rule->limit;
	r->W = rule->window_ms;
	r->S = rule->slice_ms;
	r->N = (r->W + r->S - 1) / r->S;
	r->T = rule->token_ns;
}

static __u64 ref_used(const struct ref *r, __u64 x)
{
	__u64 n = 0, prev = 0, e;	/* counter: full slices, the oldest */
	int i;

	switch (r->algo) {
	case SL_ALGO_SLIDING_LOG:
		for (i = 0; i < r->nacc; i++)
			n += r->acc[i] + r->W > x;
		return n;
	case SL_ALGO_FIXED:
		for (i = 0; i < r->nacc; i++)
			n += r->acc[i] / r->W == x / r->W;
		return n;
	case SL_ALGO_SLIDING_PLAIN:
		for (i = 0; i < r->nacc; i++)
			n += x / r->S - r->acc[i] / r->S < r->N;
		return n;
	case SL_ALGO_SLIDING_COUNTER:
		for (i = 0; i < r->nacc; i++) {
			n += x / r->S - r->acc[i] / r->S < r->N;
			prev += x / r->S - r->acc[i] / r->S == r->N;
		}
		e = x % r->S;
		return n + prev * (r->S - e) / r->S;
	case SL_ALGO_TOKEN_BUCKET:
		return r->tat_ns > x * 1000000 ?
		       (r->tat_ns - x * 1000000 + r->T - 1) / r->T : 0;
	}
	fail_msg("no model of algorithm %u", r->algo);
	return 0;
}

static bool ref_allows(const struct ref *r, __u64 x)
{
	return ref_used(r, x) + 1 <= r->limit;
}

static void ref_charge(struct ref *r, __u64 x)
{
	assert_true(r->nacc < MAXRUN);
	r->acc[r->nacc++] = x;
	if (r->algo == SL_ALGO_TOKEN_BUCKET)
		r->tat_ns = (r->tat_ns > x * 1000000 ? r->tat_ns : x * 1000000) +
			    r->T;
}

/* First ms >= t that accepts. Without new accepts no model's count grows
 * with time, so the accepting times form a tail: binary search it.
 */
static __u64 ref_accept_at(const struct ref *r, __u64 t)
{
	__u64 lo = t, hi = t + 2 * r->W + r->limit * r->T / 1000000 + 2;

	assert_true(ref_allows(r, hi));
	while (lo < hi) {
		__u64 mid = lo + (hi - lo) / 2;

		if (ref_allows(r, mid))
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static const __u64 retry_limits[] = { 1, 2, 3, 5, 8, 10, 20, 50 };
static const __u32 retry_windows[] = { 100, 1000, 1500, 7000, 60000 };
static const unsigned sliding_slices[] = { 1, 3, 12, 60 };
static const unsigned plain_slices[] = { 1, 2, 5, 12, 60 };
static const unsigned refills_milli[] = { 500, 1000, 3000, 7500, 40000, 250000 };

static void random_rule(__u64 *s, unsigned algo, struct rule_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->algo = algo;
	c->limit = retry_limits[rnd(s, ARRAY_SIZE(retry_limits))];
	c->window_ms = retry_windows[rnd(s, ARRAY_SIZE(retry_windows))];
	if (algo == SL_ALGO_SLIDING && rnd(s, 4))
		c->slices = sliding_slices[rnd(s, ARRAY_SIZE(sliding_slices))];
	/* slices of at least 1 ms */
	if ((algo == SL_ALGO_SLIDING_PLAIN || algo == SL_ALGO_SLIDING_COUNTER) &&
	    rnd(s, 4))
		do
			c->slices = plain_slices[rnd(s, ARRAY_SIZE(plain_slices))];
		while (c->slices > c->window_ms);
	if (algo == SL_ALGO_TOKEN_BUCKET && rnd(s, 2))
		c->capacity = 1 + rnd(s, 2 * c->limit);
	if (algo == SL_ALGO_TOKEN_BUCKET && rnd(s, 2))
		c->refill_milli = refills_milli[rnd(s, ARRAY_SIZE(refills_milli))];
}

/* Run A's decisions against the model; prints and counts mismatches. */
static unsigned check_model(const struct run *x, const struct sl_rule *rule,
			    const char *what, unsigned *printed)
{
	static struct ref r;
	unsigned bad = 0;
	size_t i;

	ref_init(&r, rule);
	for (i = 0; i < x->n; i++) {
		const struct dec *d = &x->d[i];
		bool allows = ref_allows(&r, d->t);
		__u64 used, retry;

		if (allows)
			ref_charge(&r, d->t);
		used = ref_used(&r, d->t);
		retry = ref_accept_at(&r, d->t) - d->t;
		if (d->accepted == allows && d->v.used == used &&
		    d->v.retry_after_ms == retry &&
		    d->v.remaining == (used < r.limit ? r.limit - used : 0))
			continue;
		if ((*printed)++ < MAX_PRINTS)
			print_error("%s: request %zu t=%llu cpu %d: kernel %s "
				    "used %llu remaining %llu retry %llu; model "
				    "%s used %llu retry %llu\n", what, i,
				    ULL(d->t), d->cpu,
				    d->accepted ? "accept" : "reject",
				    ULL(d->v.used), ULL(d->v.remaining),
				    ULL(d->v.retry_after_ms),
				    allows ? "accept" : "reject", ULL(used),
				    ULL(retry));
		bad++;
		break;		/* the histories part here */
	}
	return bad;
}

/* After the reject at x->d[i] with Retry-After R, on fresh clients with
 * the same history up to it: t + R accepted; t + R - 1 rejected, and t + R
 * still accepted after that rejected probe. The history must decide as it
 * did the first time.
 */
static unsigned probe(struct fixture *f, const struct run *x, size_t i,
		      __u64 base, __u32 W, __u64 *s, int ncpu,
		      const char *what, unsigned *printed)
{
	static struct req hist[MAXRUN];
	__u64 t = x->d[i].t - base, R = x->d[i].v.retry_after_ms;
	unsigned bad = 0;
	struct sl_addr who;
	const char *problem = NULL;
	size_t j, n = i + 1;
	int cpu1 = ncpu > 1 ? (int)rnd(s, 2) : 0;
	int cpu2 = ncpu > 1 ? (int)rnd(s, 2) : 0;

	assert_false(x->d[i].accepted);
	for (j = 0; j < n; j++)
		hist[j] = (struct req){ .t = x->d[j].t - base, .cpu = x->d[j].cpu };

	/* B: straight to t + R */
	hist[n] = (struct req){ .t = t + R, .cpu = cpu1 };
	who = new_client(f, 0);
	replay(f, hist, n + 1, base, &who, W, &run_b);
	for (j = 0; j < n && !problem; j++)
		if (run_b.d[j].accepted != x->d[j].accepted)
			problem = "the same history decided differently";
	if (!problem && !run_b.d[n].accepted)
		problem = "a request at t + R was rejected";

	/* C: at t + R - 1, then at t + R */
	hist[n] = (struct req){ .t = t + R - 1, .cpu = cpu1 };
	hist[n + 1] = (struct req){ .t = t + R, .cpu = cpu2 };
	who = new_client(f, 0);
	if (!problem) {
		replay(f, hist, n + 2, base, &who, W, &run_b);
		if (run_b.d[n].accepted)
			problem = "a request at t + R - 1 was accepted";
		else if (!run_b.d[n + 1].accepted)
			problem = "a request at t + R after a rejected one at "
				  "t + R - 1 was rejected";
	}
	if (problem) {
		if ((*printed)++ < MAX_PRINTS)
			print_error("%s: reject %zu at t=%llu (cpu %d), "
				    "retry_after %llu: %s (probes on cpu %d, %d)\n",
				    what, i, ULL(base + t), x->d[i].cpu, ULL(R),
				    problem, cpu1, cpu2);
		bad++;
	}
	return bad;
}

/* One algorithm on one CPU layout: the seed, and what was checked. */
struct retry_run {
	struct fixture *f;
	unsigned algo;
	int ncpu;
	__u64 s;
	unsigned bad, printed, probes, rejects;
};

/* History h: a random rule, applied; a random history and a burst no
 * algorithm takes whole, replayed into run_a from a random base (the
 * return). what: the case, for messages.
 */
static __u64 retry_history(struct retry_run *x, unsigned h,
			   struct rule_cfg *c, struct sl_rule *rule,
			   char *what, size_t len)
{
	struct fixture *f = x->f;
	struct sl_params p;
	struct sl_addr who;
	__u64 base;
	size_t i;

	random_rule(&x->s, x->algo, c);
	apply_rule(f, c, rule);
	/* the state of clients outside the preallocated table is
	 * created on demand, which can fail (see
	 * test_new_clients_counted_from_first_request); this test is
	 * about Retry-After, so their state is made beforehand
	 */
	if (sl_state_fd(&f->in.maps, x->algo) != f->in.maps.clients)
		f->preseed = rule;
	memset(&p, 0, sizeof(p));
	p.limit = c->limit;
	p.window_ms = rule->window_ms;
	p.slice_ms = rule->slice_ms;
	/* a random history, then a burst no algorithm takes whole */
	gen_trace(&x->s, &p, p.limit, x->ncpu, &tr);
	if (tr.n > MAXTR - 120)
		tr.n = MAXTR - 120;
	add_burst(&tr, tr.r[tr.n - 1].t + rnd(&x->s, 2 * c->window_ms),
		  2 * c->limit + 2, 0);
	for (i = tr.n - 2 * c->limit - 2; x->ncpu > 1 && i < (size_t)tr.n; i++)
		tr.r[i].cpu = rnd(&x->s, 2);
	base = random_base(&x->s, p.window_ms, p.slice_ms);
	who = new_client(f, 0);
	replay(f, tr.r, tr.n, base, &who, c->window_ms, &run_a);
	describe(c, what, len);
	snprintf(what + strlen(what), len - strlen(what),
		 " base %llu, history %u, %d cpus", ULL(base), h, x->ncpu);
	return base;
}

/* Every reject of run_a tells a Retry-After and nothing remaining; the
 * first and the last reject into *first and *last.
 */
static void retry_check_rejects(struct retry_run *x, const char *what,
				size_t *first, size_t *last)
{
	size_t i;

	*first = *last = run_a.n;
	for (i = 0; i < run_a.n; i++)
		if (!run_a.d[i].accepted) {
			*first = *first == run_a.n ? i : *first;
			*last = i;
			x->rejects++;
			if (run_a.d[i].v.retry_after_ms < 1 ||
			    run_a.d[i].v.remaining) {
				if (x->printed++ < MAX_PRINTS)
					print_error("%s: reject %zu at t=%llu: "
						    "retry_after %llu, "
						    "remaining %llu\n", what,
						    i, ULL(run_a.d[i].t),
						    ULL(run_a.d[i].v.retry_after_ms),
						    ULL(run_a.d[i].v.remaining));
				x->bad++;
			}
		}
}

/* Probe after the first, the last and a random reject of run_a. */
static void retry_probe_rejects(struct retry_run *x, size_t first,
				size_t last, __u64 base, __u32 window_ms,
				const char *what)
{
	size_t j, pick[3];

	assert_true(first < run_a.n);	/* the final burst */
	pick[0] = first;
	pick[1] = last;
	do
		pick[2] = rnd(&x->s, run_a.n);
	while (run_a.d[pick[2]].accepted);
	for (j = 0; j < 3; j++) {
		if ((j == 1 && pick[1] == pick[0]) ||
		    (j == 2 && (pick[2] == pick[0] || pick[2] == pick[1])))
			continue;
		x->bad += probe(x->f, &run_a, pick[j], base, window_ms, &x->s,
				x->ncpu, what, &x->printed);
		x->probes++;
	}
}

static void retry_after(struct fixture *f, unsigned algo, int ncpu)
{
	struct retry_run x = {
		.f = f, .algo = algo, .ncpu = ncpu,
		.s = SEED * 5 + algo * 16 + ncpu,
	};
	struct sl_rule rule;
	struct rule_cfg c;
	size_t first, last;
	char what[200];
	__u64 base;
	unsigned h;

	need_cpus(f, ncpu);
	for (h = 0; h < NRETRY; h++) {
		base = retry_history(&x, h, &c, &rule, what, sizeof(what));
		if (algo == SL_ALGO_SLIDING)
			x.bad += check_sliding_decisions(&run_a, c.limit,
							 c.window_ms, what,
							 &x.printed);
		else
			x.bad += check_model(&run_a, &rule, what, &x.printed);
		retry_check_rejects(&x, what, &first, &last);
		retry_probe_rejects(&x, first, last, base, c.window_ms, what);
	}
	f->preseed = NULL;
	assert_no_fail_open(f);
	print_message("%s, %d cpus: %u histories, %u rejects checked, %u "
		      "probed\n", sl_algorithm_name(algo), ncpu, NRETRY, x.rejects,
		      x.probes);
	if (f->preseed_tries)
		print_message("note: creating client state from userspace "
			      "failed with ENOMEM %u times first\n",
			      f->preseed_tries);
	f->preseed_tries = 0;
	if (x.bad)
		fail_msg("%u Retry-After problems for %s", x.bad, sl_algorithm_name(algo));
}

#define RETRY_TESTS(name, algo)						\
static void test_retry_after_##name##_one_cpu(void **st)		\
{									\
	retry_after(*st, algo, 1);					\
}									\
static void test_retry_after_##name##_two_cpus(void **st)		\
{									\
	retry_after(*st, algo, 2);					\
}

RETRY_TESTS(sliding, SL_ALGO_SLIDING)
RETRY_TESTS(sliding_plain, SL_ALGO_SLIDING_PLAIN)
RETRY_TESTS(fixed, SL_ALGO_FIXED)
RETRY_TESTS(token_bucket, SL_ALGO_TOKEN_BUCKET)
RETRY_TESTS(sliding_log, SL_ALGO_SLIDING_LOG)
RETRY_TESTS(sliding_counter, SL_ALGO_SLIDING_COUNTER)

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, begin, end)
#define T2(name) T(name##_one_cpu), T(name##_two_cpus)
	const struct CMUnitTest tests[] = {
		T2(test_retry_after_sliding),
		T2(test_retry_after_sliding_plain),
		T2(test_retry_after_fixed),
		T2(test_retry_after_token_bucket),
		T2(test_retry_after_sliding_log),
		T2(test_retry_after_sliding_counter),
	};
#undef T2
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
