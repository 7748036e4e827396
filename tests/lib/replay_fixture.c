// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The fixture of tests/lib/replay_fixture.h. */
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

/* ---- fixture ------------------------------------------------------------ */

static struct fixture fx;
static cpu_set_t initial_cpus;

int group_setup(void **state)
{
	struct sl_instance_opts o = { .clients = 16384, .model_clock = true };
	int err;

	sched_getaffinity(0, sizeof(initial_cpus), &initial_cpus);
	err = sl_instance_open(&fx.in, &o);
	if (err) {
		fprintf(stderr, "sl_instance_open: %s%s\n", strerror(-err),
			err == -EPERM ? " (run as root)" : "");
		return -1;
	}
	fx.two_cpus = fx.in.maps.nr_cpus >= 2 && CPU_ISSET(0, &initial_cpus) &&
		      CPU_ISSET(1, &initial_cpus);
	*state = &fx;
	return 0;
}

int group_teardown(void **state)
{
	if (fx.boundary_extra)
		print_message("note: the +1 per CPU allowance was needed by %u "
			      "boundary bursts\n", fx.boundary_extra);
	sl_instance_close(&fx.in);
	sched_setaffinity(0, sizeof(initial_cpus), &initial_cpus);
	return 0;
}

__u64 fail_open_now(struct fixture *f)
{
	struct sl_global_stats gs;

	if (sl_percpu_sum_u64(&f->in.maps, f->in.maps.global_stats, 0, &gs,
			      sizeof(gs)))
		return ~0ULL;
	return gs.fail_open;
}

int begin(void **state)
{
	struct fixture *f = *state;

	f->fail_open0 = fail_open_now(f);
	f->preseed = NULL;
	clock_gettime(CLOCK_MONOTONIC, &f->t0);
	return 0;
}

/* sl_instance_run() pins the thread to each request's CPU; give it back. */
int end(void **state)
{
	struct fixture *f = *state;
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	print_message("  (%.2f s)\n", (double)(t1.tv_sec - f->t0.tv_sec) +
		      (t1.tv_nsec - f->t0.tv_nsec) / 1e9);
	f->preseed = NULL;
	sched_setaffinity(0, sizeof(initial_cpus), &initial_cpus);
	return 0;
}

void need_cpus(struct fixture *f, int ncpu)
{
	if (ncpu > 1 && !f->two_cpus)
		skip();
}

/* A client never seen before: alternately 10.x.y.z and an IPv6 client
 * alone in its /64 (the default key lengths), under `net` when nonzero
 * (10.net.y.z, IPv4 only).
 */
struct sl_addr new_client(struct fixture *f, unsigned net)
{
	unsigned n = ++f->next_client;
	struct sl_addr a;

	memset(&a, 0, sizeof(a));
	if (net || n & 1) {
		a.byte[10] = a.byte[11] = 0xff;
		a.byte[12] = 10;
		a.byte[13] = net ? net : (n >> 16) & 0x7f;
		a.byte[14] = n >> 8;
		a.byte[15] = n;
	} else {
		memcpy(a.byte, "\x20\x01\x0d\xb8", 4);
		a.byte[4] = n >> 24;
		a.byte[5] = n >> 16;
		a.byte[6] = n >> 8;
		a.byte[7] = n;
		a.byte[15] = 1;
	}
	return a;
}

/* No request of this test went through fail-open: a client whose state
 * could not be had is accepted uncounted, which would hide what the tests
 * look for.
 */
void assert_no_fail_open(struct fixture *f)
{
	__u64 n = fail_open_now(f) - f->fail_open0;

	if (n)
		fail_msg("%llu requests failed open (client state not "
			 "created)", ULL(n));
}

/* ---- rules ---------------------------------------------------------------- */

int describe(const struct rule_cfg *c, char *buf, size_t len)
{
	return snprintf(buf, len, "%s L=%llu W=%ums slices=%u cap=%llu refill=%u.%03u/s",
			sl_algorithm_name(c->algo), ULL(c->limit), c->window_ms,
			c->slices, ULL(c->capacity), c->refill_milli / 1000,
			c->refill_milli % 1000);
}

/* What the rule file promises for the rule (rules --help): the slice is
 * window / slices (12 slices unless told; sliding-counter: 1; rounded up
 * for sliding-plain and sliding-counter, down for sliding), a bucket
 * holds the limit unless told, and refills a unit every window / limit
 * unless told a rate.
 */
void expect_rule(const struct rule_cfg *c, const struct sl_rule *r)
{
	bool sliced = c->algo == SL_ALGO_SLIDING ||
		      c->algo == SL_ALGO_SLIDING_PLAIN ||
		      c->algo == SL_ALGO_SLIDING_COUNTER;
	bool bucket = c->algo == SL_ALGO_TOKEN_BUCKET;
	/* the counter's default is one slice: the two-window counter */
	unsigned slices = c->slices ? c->slices :
			  c->algo == SL_ALGO_SLIDING_COUNTER ? 1 : 12;

	assert_int_equal(r->algorithm, c->algo);
	assert_int_equal(r->limit, c->limit);
	assert_int_equal(r->window_ms, c->window_ms);
	assert_int_equal(r->slice_ms, !sliced ? c->window_ms :
			 c->algo == SL_ALGO_SLIDING ? c->window_ms / slices :
			 (c->window_ms + slices - 1) / slices);
	if (!bucket)
		return;
	assert_int_equal(r->bucket_capacity, c->capacity ? c->capacity : c->limit);
	if (c->refill_milli)	/* 1e9 / rate ns, rounded */
		assert_int_equal(r->token_ns, (1000000000000ULL +
				 c->refill_milli / 2) / c->refill_milli);
	else
		assert_int_equal(r->token_ns, c->window_ms * 1000000ULL / c->limit);
}

/* Install rules (several with different `net`s) as the only rule set;
 * every rule is named after its algorithm and net so that re-applying
 * keeps ids. Returns the live rules in `live` (in the order given).
 */
void apply_rules(struct fixture *f, const struct rule_cfg *c,
		 unsigned nr, struct sl_rule *live)
{
	static char last[2048];
	char yaml[2048];
	struct sl_ruleset rs;
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	unsigned i, n = 0, nr_live = 0;

	n += snprintf(yaml + n, sizeof(yaml) - n, "rules:\n");
	for (i = 0; i < nr; i++) {
		n += snprintf(yaml + n, sizeof(yaml) - n,
			      "  - name: %s-%u\n    algorithm: %s\n"
			      "    limit: %llu\n    window: %ums\n",
			      sl_algorithm_name(c[i].algo), c[i].net,
			      sl_algorithm_name(c[i].algo), ULL(c[i].limit),
			      c[i].window_ms);
		if (c[i].slices)
			n += snprintf(yaml + n, sizeof(yaml) - n,
				      "    slices: %u\n", c[i].slices);
		if (c[i].capacity)
			n += snprintf(yaml + n, sizeof(yaml) - n,
				      "    bucket_capacity: %llu\n",
				      ULL(c[i].capacity));
		if (c[i].refill_milli)
			n += snprintf(yaml + n, sizeof(yaml) - n,
				      "    refill_per_s: %u.%03u\n",
				      c[i].refill_milli / 1000,
				      c[i].refill_milli % 1000);
		if (c[i].net)
			n += snprintf(yaml + n, sizeof(yaml) - n,
				      "    source: 10.%u.0.0/16\n", c[i].net);
	}
	assert_true(n < sizeof(yaml));
	/* the same rule set again changes nothing: clients are fresh */
	if (strcmp(yaml, last)) {
		assert_int_equal(sl_rules_load_buffer("test.yaml", yaml, n, &rs), 0);
		assert_int_equal(sl_rules_apply(&f->in.maps, &rs), 0);
		sl_rules_free(&rs);
		memcpy(last, yaml, n + 1);
	}
	assert_int_equal(sl_rules_read_live(&f->in.maps, &rules, &nr_live, &cfg), 0);
	assert_int_equal(nr_live, nr);
	for (i = 0; i < nr; i++) {
		expect_rule(&c[i], &rules[i]);
		if (live)
			live[i] = rules[i];
	}
	free(rules);
}

void apply_rule(struct fixture *f, const struct rule_cfg *c,
		struct sl_rule *live)
{
	apply_rules(f, c, 1, live);
}

/* ---- replay --------------------------------------------------------------- */

void on_decision(void *ctx, const struct sl_trace_req *r,
		 bool accepted, const struct sl_rule *rule,
		 const struct sl_client_view *v)
{
	struct run *x = ctx;

	if (x->n < MAXRUN)
		x->d[x->n] = (struct dec){ .t = r->t_ms, .cpu = r->cpu,
					   .accepted = accepted,
					   .ruled = rule != NULL,
					   .rule_id = rule ? rule->id : -1,
					   .v = *v };
	x->n++;
}

/* A fresh client's state as the kernel would create it (all zero), made
 * by a syscall instead, for the maps that the kernel fills on demand.
 */
void preseed_client(struct fixture *f, const struct sl_rule *rule,
		    const struct sl_addr *who)
{
	size_t stride = (sl_state_size(rule->algorithm) + 7) & ~7ul;
	void *zero = calloc(f->in.maps.nr_cpus, stride);
	struct sl_client_key key;
	int tries = 0;

	assert_non_null(zero);
	memset(&key, 0, sizeof(key));
	sl_client_key_make(&key, rule, who, htons(9));
	/* the kernel may have no memory for it at once either (see
	 * test_new_clients_counted_from_first_request): wait for some
	 */
	while (bpf_map_update_elem(sl_state_fd(&f->in.maps, rule->algorithm),
				   &key, zero, BPF_NOEXIST)) {
		if (errno != ENOMEM || ++tries > 2000)
			fail_msg("creating a client's state: %s (%d tries)",
				 strerror(errno), tries);
		usleep(1000);
	}
	f->preseed_tries += tries;
	free(zero);
}

/* Replay req[0..n) (times relative to `base`) as client `who` and check
 * what every run must show: one client, one decision per request, each by
 * a rule, totals that add up, and max_in_window as the accept times give it.
 */
void replay(struct fixture *f, const struct req *req, int n,
	    __u64 base, const struct sl_addr *who, __u32 window_ms,
	    struct run *out)
{
	static struct sl_trace_req buf[MAXRUN];
	struct sl_trace tr = { .req = buf, .nr = n };
	struct sl_replay_result res;
	int i, err;

	assert_true(n > 0 && n <= MAXRUN);
	if (f->preseed)
		preseed_client(f, f->preseed, who);
	for (i = 0; i < n; i++)
		buf[i] = (struct sl_trace_req){ .t_ms = base + req[i].t,
						.client = *who,
						.cpu = req[i].cpu,
						.line = i + 1 };
	out->n = 0;
	out->nacc = 0;
	err = sl_replay_run(&f->in, &tr, window_ms, on_decision, out, &res);
	if (err)
		fail_msg("sl_replay_run: %s", strerror(-err));
	assert_int_equal(res.nr, 1);
	assert_memory_equal(&res.client[0].addr, who, sizeof(*who));
	out->c = res.client[0];
	sl_replay_result_free(&res);
	assert_int_equal(out->n, n);
	for (i = 0; i < n; i++) {
		assert_true(out->d[i].ruled);
		if (out->want_id >= 0)
			assert_int_equal(out->d[i].rule_id, out->want_id);
		if (out->d[i].accepted)
			out->acc[out->nacc++] = out->d[i].t;
	}
	assert_int_equal(out->c.sent, n);
	assert_int_equal(out->c.accepted, out->nacc);
	assert_int_equal(out->c.rejected, n - out->nacc);
	assert_int_equal(out->c.max_in_window,
			 max_in_window(out->acc, out->nacc, window_ms));
}

/* Accepts of the run among its first k decisions in (t - w, t]. */
__u64 accepts_in_window(const struct run *x, size_t k, __u64 t, __u64 w)
{
	__u64 n = 0;
	size_t i;

	for (i = 0; i < k; i++)
		n += x->d[i].accepted && x->d[i].t <= t && x->d[i].t + w > t;
	return n;
}

__u64 gcd(__u64 a, __u64 b)
{
	while (b) {
		__u64 r = a % b;

		a = b;
		b = r;
	}
	return a;
}

/* Where a trace starts: at 0, about 11.6 days in, or just before 2^32 ms
 * so that the u32 times in the kernel's state often wrap during the trace.
 * Always a multiple of the window and the slice, so that the generator's
 * slice edges stay edges.
 */
__u64 random_base(__u64 *s, __u32 window_ms, __u32 slice_ms)
{
	__u64 l = (__u64)window_ms / gcd(window_ms, slice_ms) * slice_ms;
	__u64 target;

	switch (rnd(s, 3)) {
	case 0:
		return 0;
	case 1:
		target = 1000000000ULL;
		break;
	default:
		target = (1ULL << 32) - rnd(s, 20ULL * window_ms);
		break;
	}
	return (target / l) * l;
}

/* What every decision of a `sliding` run must show against the trace
 * itself (sl_algo.h): the count is a lower bound of the real accepts in
 * the window that hides fewer than cap of them, so a reject means L real
 * accepts; the view agrees with the verdict. Prints and counts problems.
 */
unsigned check_sliding_decisions(const struct run *x, __u64 L, __u32 W,
				 const char *what, unsigned *printed)
{
	__u64 cap = L / (SL_RECORDS - 2) + 1, real;
	unsigned bad = 0;
	size_t i;

	for (i = 0; i < x->n; i++) {
		const struct dec *d = &x->d[i];
		const char *problem = NULL;

		real = accepts_in_window(x, i + 1, d->t, W);
		if (!d->accepted && real < L)
			problem = "rejected with fewer than L accepts in the window";
		else if (d->v.used > real)
			problem = "counts more than the accepts in the window";
		else if (real - d->v.used >= cap)
			problem = "hides cap or more accepts of the window";
		else if ((d->v.remaining > 0) != (d->v.retry_after_ms == 0))
			problem = "remaining and retry_after disagree";
		else if (!d->accepted && d->v.remaining)
			problem = "rejected with units remaining";
		if (!problem)
			continue;
		if ((*printed)++ < MAX_PRINTS)
			print_error("%s: request %zu t=%llu cpu %d %s: %s "
				    "(real %llu, used %llu, remaining %llu, "
				    "retry %llu, cap %llu)\n", what, i,
				    ULL(d->t), d->cpu,
				    d->accepted ? "accepted" : "rejected",
				    problem, ULL(real), ULL(d->v.used),
				    ULL(d->v.remaining),
				    ULL(d->v.retry_after_ms), ULL(cap));
		bad++;
	}
	return bad;
}
