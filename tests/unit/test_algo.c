// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: none */
/*
 * Host tests of the `sliding` algorithm (include/sl_algo.h) and the client
 * key (include/sl_key.h). A small simulator decides every request as the
 * kernel does: tally the client's state, accept while the tally allows,
 * charge the state. Figures are checked against models (the study's plain
 * sliding slices, computed here; an exact sliding log, shared with the
 * replay tests in tests/lib/trace_gen.h with the traces). Tests that take
 * a CPU count get it as cmocka state (1 or 2): the CPUs the generated
 * traces spread requests over, which one shared state must not notice.
 * Across nodes (include/sl_peer.h): the counter's fleet estimate is one
 * node's estimate of every accept, exactly; the bucket's fleet level is
 * a lower bound of one bucket's, close to it under a steady overload.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "slicelimit.h"
#include "sl_algo.h"
#include "sl_peer.h"	/* sl_accept_at_ms */
#include "sl_key.h"
#include "trace_gen.h"

#define NTRACES		500
#define SEED		0x5eed511ce2026ULL
#define ULL(x)		((unsigned long long)(x))

static struct {
	struct sl_params p;
	__u32 units;
	struct sl_client state;	/* one per client, shared by every CPU */
	int nacc, nrej;
	__u64 acc[MAXREQ];	/* accept times, in order */
} sim;

static struct trace tr, tr2;

/* ---- simulator, reference models, traces ------------------------------- */

static void sim_init(__u64 limit, __u32 window, __u32 slice, __u32 units)
{
	memset(&sim, 0, sizeof(sim));
	sim.p = (struct sl_params){ .limit = limit, .window_ms = window,
				    .slice_ms = slice, .idle_ms = window };
	sim.units = units;
}

/* The client's tally at `now`; nonzero if it allows. */
static int sim_tally(struct sl_tally *t, __u64 now)
{
	sl_tally_state(t, &sim.state, &sim.p, now);
	return sl_tally_allows(t, &sim.p, sim.units);
}

static int sim_request(__u64 now)
{
	struct sl_tally t;

	if (!sim_tally(&t, now)) {
		sim.nrej++;
		return 0;
	}
	sl_charge(&sim.state, &sim.p, &t, now, sim.units);
	assert_true(sim.nacc < MAXREQ);
	sim.acc[sim.nacc++] = now;
	return 1;
}

static void sim_run(const struct trace *x)
{
	int i;

	for (i = 0; i < x->n; i++)
		sim_request(x->r[i].t);
}

/* The study's plain sliding slices: a count per slice floor(t / s); accept
 * while slices d - (w/s - 1) .. d sum to less than `limit`.
 */
static int ref_plain(const struct trace *in, __u64 limit, __u32 w, __u32 s,
		     __u64 *acc)
{
	static __u64 cnt[1024];
	__u64 k, d, sum;
	int i, n = 0;

	memset(cnt, 0, sizeof(cnt));
	for (i = 0; i < in->n; i++) {
		d = in->r[i].t / s;
		assert_true(d < 1024);
		sum = 0;
		for (k = d + 1 > w / s ? d + 1 - w / s : 0; k <= d; k++)
			sum += cnt[k];
		if (sum < limit) {
			cnt[d]++;
			acc[n++] = in->r[i].t;
		}
	}
	return n;
}

static const __u64 limits[] = { 1, 2, 3, 5, 7, 10, 11, 20, 50, 99, 100, 600 };
static const __u32 windows[] = { 1000, 5000, 7000, 60000 };

static void random_params(__u64 *s, struct sl_params *p)
{
	p->limit = limits[rnd(s, sizeof(limits) / sizeof(limits[0]))];
	p->window_ms = windows[rnd(s, 4)];
	p->slice_ms = p->window_ms / 12;
}

/* ---- 1. Model A and Model D ---------------------------------------------- */

/* Model A: a pattern and the study's sliding-slices row for it. */
struct model_a {
	int pattern;		/* 0 uniform 2x, 1 boundary burst, 2 intermittent */
	int accepted, rejected, max;
};

static struct model_a uniform_2x = { 0, 1800, 1800, 600 };
static struct model_a boundary_burst = { 1, 1200, 1200, 600 };
static struct model_a intermittent = { 2, 1800, 0, 600 };

static void gen_model_a(int pattern, struct trace *x)
{
	int i, k;

	x->n = 0;
	for (i = 0; pattern == 0 && i < 3600; i++)
		add_burst(x, 50 * i, 1, 0);
	for (k = 1; pattern == 1 && k <= 2; k++)
		for (i = 0; i < 600; i++) {
			add_burst(x, k * 60000 - 5000 + i * 5000 / 600, 1, 0);
			add_burst(x, k * 60000 + i * 5000 / 600, 1, 0);
		}
	for (k = 0; pattern == 2 && k < 3; k++)
		for (i = 0; i < 600; i++)
			add_burst(x, k * 60000 + i * 5000 / 600, 1, 0);
	qsort(x->r, x->n, sizeof(x->r[0]), req_cmp);
}

/* The reference model must reproduce the study's row, and the algorithm
 * must accept the very same requests as the reference.
 */
static void test_model_a_matches_plain_slices(void **st)
{
	const struct model_a *m = *st;
	static __u64 pacc[MAXREQ];
	int np;

	gen_model_a(m->pattern, &tr);
	np = ref_plain(&tr, 600, 60000, 5000, pacc);
	assert_int_equal(np, m->accepted);
	assert_int_equal(tr.n - np, m->rejected);
	assert_int_equal(max_in_window(pacc, np, 60000), m->max);
	sim_init(600, 60000, 5000, 1);
	sim_run(&tr);
	assert_int_equal(sim.nacc, np);
	assert_int_equal(sim.nrej, tr.n - np);
	assert_int_equal(max_in_window(sim.acc, sim.nacc, 60000), m->max);
	assert_memory_equal(sim.acc, pacc, np * sizeof(pacc[0]));
}

/* 100 at 58 s and 100 at 61 s, limit 100 per minute: the exact log's 100. */
static void test_model_d_minute_boundary_matches_exact_log(void **st)
{
	tr.n = 0;
	add_burst(&tr, 58000, 100, 0);
	add_burst(&tr, 61000, 100, 0);
	sim_init(100, 60000, 5000, 1);
	sim_run(&tr);
	assert_int_equal(sim.nacc, ref_log(&tr, 100, 60000, &tr2));
}

/* ---- 2. the edge-slice counter-examples ---------------------------------- */

/* n1 at t1 on CPU 0, n2 at t2 (+ n3 at t3) on the last CPU, run with
 * L = 600 per 60 s.
 */
static void edge_run(int ncpu, int n1, __u64 t1, int n2, __u64 t2, int n3,
		     __u64 t3)
{
	tr.n = 0;
	add_burst(&tr, t1, n1, 0);
	add_burst(&tr, t2, n2, ncpu - 1);
	add_burst(&tr, t3, n3, ncpu - 1);
	sim_init(600, 60000, 5000, 1);
	sim_run(&tr);
}

static void test_edge_slice_end_of_slice_burst_capped(void **st)
{
	int ncpu = *(int *)*st;

	edge_run(ncpu, 600, 4999, 600, 60000, 0, 0);
	assert_in_range(max_in_window(sim.acc, sim.nacc, 60000), 0,
			600 + 600 / 10);
	assert_int_equal(sim.nacc, ref_log(&tr, 600, 60000, &tr2));
	/* the weighted counter's 1,140: 600 at 4,999 + 600 at 64,499 */
	edge_run(ncpu, 600, 4999, 600, 64499, 0, 0);
	assert_in_range(max_in_window(sim.acc, sim.nacc, 60000), 0,
			600 + 600 / 10);
}

static void test_edge_slice_compliant_pair_all_accepted(void **st)
{
	int ncpu = *(int *)*st;

	edge_run(ncpu, 600, 0, 600, 60001, 0, 0);
	assert_int_equal(ref_log(&tr, 600, 60000, &tr2), tr.n);
	assert_int_equal(sim.nrej, 0);
	assert_int_equal(sim.nacc, tr.n);
	/* the weighted counter's 539 false rejects: 599 + 1 + 599 */
	edge_run(ncpu, 599, 0, 1, 4990, 599, 60500);
	assert_int_equal(ref_log(&tr, 600, 60000, &tr2), tr.n);
	assert_int_equal(sim.nrej, 0);
}

/* ---- 3. properties over random traces ------------------------------------ */

/* Random traces filtered by the exact log are compliant: no rejects. */
static void test_compliant_traces_never_rejected(void **st)
{
	int k, ncpu = *(int *)*st;
	__u64 s = SEED + ncpu;
	struct sl_params p;

	for (k = 0; k < NTRACES; k++) {
		random_params(&s, &p);
		gen_trace(&s, &p, p.limit, ncpu, &tr);
		ref_log(&tr, p.limit, p.window_ms, &tr2);
		sim_init(p.limit, p.window_ms, p.slice_ms, 1);
		sim_run(&tr2);
		if (sim.nrej)
			fail_msg("trace %d (L=%llu W=%u, %d cpus): %d of %d "
				 "compliant requests rejected", k, ULL(p.limit),
				 p.window_ms, ncpu, sim.nrej, tr2.n);
	}
}

/* Raw random traces, counting requests: at most L + L/10 (L below 10: L)
 * in any window, whatever CPUs the requests arrive on (one state per
 * client). Counting 1500-byte packets: at most L + cap + one packet.
 */
static void adversarial(int ncpu, __u32 units, __u64 s)
{
	int k;
	struct sl_params p;
	__u64 m, b;

	for (k = 0; k < NTRACES; k++) {
		random_params(&s, &p);
		gen_trace(&s, &p, p.limit, ncpu, &tr);
		if (units > 1)
			p.limit = p.limit * units + rnd(&s, units);
		sim_init(p.limit, p.window_ms, p.slice_ms, units);
		sim_run(&tr);
		m = units * max_in_window(sim.acc, sim.nacc, p.window_ms);
		if (units > 1)
			b = p.limit + sl_slice_cap(&p) + units;
		else
			b = p.limit >= 10 ? p.limit + p.limit / 10 : p.limit;
		if (m > b)
			fail_msg("trace %d (L=%llu W=%u, %d cpus): %llu in one "
				 "window, bound %llu", k, ULL(p.limit),
				 p.window_ms, ncpu, ULL(m), ULL(b));
	}
}

static void test_adversarial_traces_within_bound(void **st)
{
	adversarial(*(int *)*st, 1, SEED * 3);
}

/* ---- 4. Retry-After ------------------------------------------------------ */

/* After every reject at t: a request at accept_at is accepted, one at
 * accept_at - 1 is not, and the kernel's cached next_expiry is no later.
 * Odd traces count bytes of mixed sizes, so that one expiry may not free
 * enough and accept_at must walk several.
 */
static void test_retry_after_is_earliest_accept(void **st)
{
	int k, i, ncpu = *(int *)*st, checked = 0;
	__u64 s = SEED * 5 + ncpu, a, e, now;
	struct sl_params p;
	struct sl_tally t;

	for (k = 0; k < 200; k++) {
		random_params(&s, &p);
		gen_trace(&s, &p, p.limit, ncpu, &tr);
		sim_init(p.limit * (k & 1 ? 1000 : 1), p.window_ms, p.slice_ms, 1);
		for (i = 0; i < tr.n; i++) {
			now = tr.r[i].t;
			sim.units = k & 1 ? (rnd(&s, 2) ? 40 : 1500) : 1;
			if (sim_request(now))
				continue;
			a = sl_accept_at_ms(&sim.state, &sim.p, now, sim.units);
			if (sim.units > sim.p.limit) {
				/* bigger than the limit: never fits */
				assert_true(a == SL_NEVER);
				continue;
			}
			sim_tally(&t, now);
			e = t.next_expiry_ms;
			if (a == SL_NEVER || a <= now || !sim_tally(&t, a) ||
			    sim_tally(&t, a - 1) || e > a)
				fail_msg("trace %d req %d t=%llu: accept_at %llu, "
					 "next_expiry %llu", k, i, ULL(now),
					 ULL(a), ULL(e));
			checked++;
		}
	}
	assert_true(checked > 1000);
}

/* ---- 5. idle reset ------------------------------------------------------- */

#define IDLE_W		1000

/* Fill the limit at t0, then at `now` expect nothing counted, no wait, the
 * full limit accepted and then a reject.
 */
static void fill_then_fresh_at(__u64 t0, __u64 now)
{
	struct sl_tally t;
	__u64 i;

	sim_init(20, IDLE_W, IDLE_W / 12, 1);
	for (i = 0; i < sim.p.limit; i++)
		assert_true(sim_request(t0));
	assert_false(sim_request(t0));
	sim_tally(&t, now);
	assert_int_equal(t.used, 0);
	assert_int_equal(sl_remaining(&t, &sim.p), sim.p.limit);
	assert_int_equal(sl_accept_at_ms(&sim.state, &sim.p, now, 1), now);
	for (i = 0; i < sim.p.limit; i++)
		assert_true(sim_request(now));
	assert_false(sim_request(now));
}

static void test_idle_reset_after_full_window_starts_fresh(void **st)
{
	struct sl_tally t;

	fill_then_fresh_at(1000, 1000 + IDLE_W);
	/* one ms short of the window everything still counts */
	sim_init(20, IDLE_W, IDLE_W / 12, 1);
	while (sim_request(1000))
		;
	sim_tally(&t, 1000 + IDLE_W - 1);
	assert_int_equal(t.used, sim.nacc);
	assert_int_equal(sl_remaining(&t, &sim.p), 0);
}

static void test_idle_reset_u32_wrap_state_not_counted(void **st)
{
	/* 2^32 + 10 makes the old records look 10 ms old in u32 */
	const __u64 gaps[] = { (1ULL << 32) + 10, 50ULL * 86400 * 1000,
			       3 * (1ULL << 32) };
	unsigned int g;

	for (g = 0; g < sizeof(gaps) / sizeof(gaps[0]); g++)
		fill_then_fresh_at(1000, 1000 + gaps[g]);
}

/* ---- 6. client key ------------------------------------------------------- */

static void check_key(const char *src, int v4, int v6, int by_port,
		      const char *want)
{
	struct sl_rule rule = { .id = 7, .key_ipv4_prefix = v4,
				.key_ipv6_prefix = v6, .key_by_port = by_port };
	struct sl_addr a, w;
	struct sl_client_key k;

	assert_int_equal(inet_pton(AF_INET6, src, a.byte), 1);
	assert_int_equal(inet_pton(AF_INET6, want, w.byte), 1);
	memset(&k, 0xaa, sizeof(k));
	sl_client_key_make(&k, &rule, &a, htons(443));
	assert_memory_equal(k.addr.byte, w.byte, 16);
	assert_int_equal(k.rule_id, 7);
	assert_int_equal(k.dport, by_port ? htons(443) : 0);
}

static void test_key_make_named_prefixes_masked(void **st)
{
	check_key("::ffff:192.0.2.77", 24, 64, 0, "::ffff:192.0.2.0");
	check_key("2001:db8:1:2:3:4:5:6", 24, 64, 1, "2001:db8:1:2::");
	check_key("::ffff:192.0.2.77", 0, 0, 1, "::ffff:0.0.0.0");
	check_key("::ffff:192.0.2.77", 32, 0, 0, "::ffff:192.0.2.77");
	check_key("2001:db8:1:2:3:4:5:6", 32, 0, 1, "::");
	check_key("2001:db8:1:2:3:4:5:6", 0, 128, 0, "2001:db8:1:2:3:4:5:6");
}

/* Every prefix length of both families against a byte-wise mask. */
static void test_key_make_every_prefix_matches_bytewise_mask(void **st)
{
	struct sl_rule rule = { .id = 1 };
	struct sl_client_key k;
	struct sl_addr a, want;
	__u64 s = SEED * 7;
	int v4, bits, i, n;

	for (v4 = 0; v4 <= 1; v4++)
		for (bits = 0; bits <= (v4 ? 32 : 128); bits++) {
			for (i = 0; i < 16; i++)
				a.byte[i] = 1 + rnd(&s, 255);
			if (v4) {
				memset(a.byte, 0, 10);
				a.byte[10] = a.byte[11] = 0xff;
			}
			rule.key_ipv4_prefix = v4 ? bits : 0;
			rule.key_ipv6_prefix = v4 ? 0 : bits;
			n = v4 ? 96 + bits : bits;
			want = a;
			for (i = 0; i < 16; i++)
				want.byte[i] &= n >= 8 * (i + 1) ? 0xff :
					n <= 8 * i ? 0 :
					(0xff00 >> (n - 8 * i)) & 0xff;
			sl_client_key_make(&k, &rule, &a, 0);
			assert_memory_equal(k.addr.byte, want.byte, 16);
		}
}

/* ---- 7. bytes ------------------------------------------------------------ */

static void test_bytes_unit_charge_counts_bytes(void **st)
{
	struct sl_tally t;
	__u64 n;

	sim_init(100000, 1000, 83, 1500);
	assert_true(sim_request(10));
	sim_tally(&t, 10);
	assert_int_equal(t.used, 1500);
	assert_int_equal(sl_remaining(&t, &sim.p), sim.p.limit - 1500);
	/* a request must fit whole: floor(L / 1500) packets */
	for (n = 1; sim_request(10); n++)
		;
	assert_int_equal(n, sim.p.limit / 1500);
}

static void test_bytes_unit_window_within_limit_cap_packet(void **st)
{
	adversarial(*(int *)*st, 1500, SEED * 11);
}

/* ---- across nodes: the peers' part of the counter and the bucket ------- */

static __u32 lcg_next(__u32 *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static const struct sl_sync_conf delayed = {
	.layout = SL_LAYOUT_DELAYED_SYNC, .nodes = 2, .interval_ms = 200,
};

/* A peer's accept, as the sender bins it: its slice's start, one unit. */
static void peer_accept(struct sl_peer_view *v, const struct sl_params *p,
			__u64 now)
{
	__u64 ps = sl_peer_slice_of(p);

	assert_int_equal(sl_peer_merge_rule(v, p, now / ps * ps, 1, now), 1);
}

/* sliding-counter, 12 slices: the node's own state plus the peers' slices
 * estimate exactly what one node estimates with every accept in its own
 * state (the counter is linear in the slices, floored once), at every
 * instant of a random run over several windows, and its next change is no
 * later than that node's.
 */
static void test_peer_counter_fleet_estimate_equals_one_node_of_all(void **st)
{
	struct sl_params p = { .limit = 1000, .window_ms = 60000,
			       .slice_ms = 5000,
			       .algorithm = SL_ALGO_SLIDING_COUNTER };
	static struct sl_client_plain own, all;
	struct sl_peer_view v;
	struct sl_tally t, want;
	__u32 seed = 20260730;
	__u64 now = 1000000000ULL, room;
	int i, checked = 0;

	(void)st;
	p.idle_ms = 13 * p.slice_ms;
	memset(&own, 0, sizeof(own));
	memset(&all, 0, sizeof(all));
	memset(&v, 0, sizeof(v));
	assert_true(sl_peer_counter_exact(&p));
	for (i = 0; i < 20000; i++) {
		now += lcg_next(&seed) % 40;
		if (lcg_next(&seed) % 4) {
			sl_client_plain_charge(&all, &p, now, 1);
			if (lcg_next(&seed) % 3)
				peer_accept(&v, &p, now);
			else
				sl_client_plain_charge(&own, &p, now, 1);
		}
		sl_tally_state(&want, &all, &p, now);
		sl_tally_node_peers(&t, &own, &v, &p, &delayed, now, &room);
		if (t.used != want.used)
			fail_msg("at %llu: fleet estimate %llu, one node of all "
				 "%llu", ULL(now), ULL(t.used), ULL(want.used));
		assert_true(t.next_expiry_ms <= want.next_expiry_ms);
		checked += want.used > 0;
	}
	assert_true(checked > 10000);
}

/* token-bucket, capacity 20, a token per 100 ms: accepts spread over two
 * nodes (2/3 to the peers), the peers' units merged as they happen. The
 * fleet's count is never more than one bucket that took every accept
 * (NFR-2), never less than the node's own; and once a steady 1.5 x the
 * refill has run for 30 s (the true level 150 tokens), it is short of
 * the true count by at most one peer slice's refill, where summing the
 * two nodes' separately drained excesses (each under the rate) gives
 * about nothing.
 */
static void test_peer_bucket_level_lower_bound_of_one_bucket(void **st)
{
	struct sl_params p = { .limit = 20, .window_ms = 2000, .slice_ms = 2000,
			       .algorithm = SL_ALGO_TOKEN_BUCKET,
			       .token_ns = 100000000, .idle_ms = 2000 };
	static struct sl_client own, all;
	struct sl_peer_view v;
	struct sl_tally t, want, mine;
	__u32 seed = 20260730;
	__u64 now = 1000000000ULL, room, ps = sl_bucket_slice_ms(&p), end;
	int i;

	(void)st;
	/* 20 refills of 2 s over 15 slices */
	assert_int_equal(ps, 2667);
	memset(&own, 0, sizeof(own));
	memset(&all, 0, sizeof(all));
	memset(&v, 0, sizeof(v));
	/* random bursts and gaps, then 30 s at 15 per second */
	end = now + 300000;
	for (i = 0; now < end + 30000; i++) {
		int mine_now = lcg_next(&seed) % 3 == 0;

		now += now < end ? lcg_next(&seed) % 400 : (i % 3 ? 67 : 66);
		sl_tally_state(&want, &all, &p, now);
		sl_client_charge(&all, &p, &want, now, 1);
		if (mine_now) {
			sl_tally_state(&mine, &own, &p, now);
			sl_client_charge(&own, &p, &mine, now, 1);
		} else {
			peer_accept(&v, &p, now);
		}
		sl_tally_state(&want, &all, &p, now);
		sl_tally_state(&mine, &own, &p, now);
		sl_tally_node_peers(&t, &own, &v, &p, &delayed, now, &room);
		if (t.used > want.used || t.used < mine.used)
			fail_msg("at %llu: fleet count %llu, one bucket %llu, "
				 "own %llu", ULL(now), ULL(t.used),
				 ULL(want.used), ULL(mine.used));
	}
	assert_true(want.used >= 140);
	assert_true(t.used + ps / 100 + 1 >= want.used);
	assert_true(mine.used < 5);
}

static int one_cpu = 1, two_cpus = 2;

/* the case is the test state and the end of the test name */
#define TEST_CASE(f, c)	{ #f "_" #c, f, NULL, NULL, &c }
#define TEST_CPUS(f)	TEST_CASE(f, one_cpu), TEST_CASE(f, two_cpus)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST_CASE(test_model_a_matches_plain_slices, uniform_2x),
		TEST_CASE(test_model_a_matches_plain_slices, boundary_burst),
		TEST_CASE(test_model_a_matches_plain_slices, intermittent),
		cmocka_unit_test(test_model_d_minute_boundary_matches_exact_log),
		TEST_CPUS(test_edge_slice_end_of_slice_burst_capped),
		TEST_CPUS(test_edge_slice_compliant_pair_all_accepted),
		TEST_CPUS(test_compliant_traces_never_rejected),
		TEST_CPUS(test_adversarial_traces_within_bound),
		TEST_CPUS(test_retry_after_is_earliest_accept),
		cmocka_unit_test(test_idle_reset_after_full_window_starts_fresh),
		cmocka_unit_test(test_idle_reset_u32_wrap_state_not_counted),
		cmocka_unit_test(test_key_make_named_prefixes_masked),
		cmocka_unit_test(test_key_make_every_prefix_matches_bytewise_mask),
		cmocka_unit_test(test_bytes_unit_charge_counts_bytes),
		TEST_CPUS(test_bytes_unit_window_within_limit_cap_packet),
		cmocka_unit_test(test_peer_counter_fleet_estimate_equals_one_node_of_all),
		cmocka_unit_test(test_peer_bucket_level_lower_bound_of_one_bucket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
