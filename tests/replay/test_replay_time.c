// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: replay_fixture */
/*
 * Time as an input: every algorithm through the real BPF object at the
 * clock values a host meets, checked against its exact model and its own
 * answers.
 *
 * Each case is one rule drawn at random (every algorithm; windows 1 ms to
 * 12 d; limits 1 to 65535, sliding-log's at most SL_MAX_LOG, as the rule
 * file accepts), one fresh client, and a clock that starts at a value
 * drawn from: today's TAI ms, anywhere in the next 50 years, and just
 * before each 2^31 and 2^32 point of each number the state derives from
 * the clock in that range (the u32 ms stamps; the window and slice
 * numbers, now_ms / window_ms and now_ms / slice_ms). The client then
 * sends bursts (one BPF_PROG_TEST_RUN with `repeat`, at the model clock;
 * single requests through the XDP program, bursts through TC)
 * with gaps from none to a step forward of up to a year, and in a third
 * of the cases the clock steps back once, by up to SL_MAX_STEP_MS.
 *
 * Until a step back every burst's accepts (the rule's passed counter) and
 * the client's answers after it (used, remaining, Retry-After, read back
 * from the map by sl_client_view_read, as `query` and `replay` do) must
 * equal the algorithm's exact model (sliding, the approximate one: NFR-1,
 * at most L + L/10 accepts in any window, and NFR-2, no rejection with
 * fewer than L accepts in the window). Through the whole case the answers
 * must be what the object does next: after an answer of `remaining` r, r
 * more at the same instant are accepted and the next is not; after one of
 * Retry-After R, a request at now + R is accepted and one at now + R - 1
 * is not. After a step back of S (total), Retry-After is at most the
 * rule's hold time (a window; its slices or refill time) plus S, and in
 * real time (the model clock plus the steps back) no window takes more
 * than the algorithm's bound: L for sliding-log and sliding-plain,
 * L + L/10 for sliding, 2 L for fixed and sliding-plain (L in each of
 * their spans, which a window meets at most two of).
 *
 * test_time_fixed_500ms_today is one such case written out: a 500 ms fixed
 * window at today's TAI ms, limit 3.
 *
 * Seeded: SL_TIME_SEED=N sets the seed (printed), SL_TIME_CASE=I runs only
 * case I of it (each case has its own seed from the two), and a failure
 * names both.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <cmocka.h>

#include "slicelimit.h"
#include "sl_algo.h"
#include "sl_key.h"
#include "state/client_view.h"
#include "instance/instance.h"
#include "instance/instance_maps.h"
#include "util/parse.h"
#include "replay/request_packet.h"
#include "replay/replay.h"
#include "rules/rules.h"
#include "trace_gen.h"
#include "replay_fixture.h"

#define TIME_SEED	0x7113c10c4ULL
#define CASES_PER_ALGO	180	/* 6 algorithms: 1080 cases */
#define CASES_PER_RULE	4	/* applying a rule set takes a while */
#define STEPS		40	/* bursts and probes per case */
#define MAXACC		(4 * STEPS)

/* today's TAI ms (2026-12-01), and 50 years of them */
#define TODAY_MS	1796284647123ULL
#define YEARS50_MS	(50ULL * 36525 * 864000)
#define YEAR_MS		(36525ULL * 864000)

/* ---- the exact models ----------------------------------------------- */

/* One burst's accepts: `n` at model time t, real time `real` (the model
 * clock plus the steps back before it).
 */
struct acc {
	__u64 t, real, n;
};

struct model {
	unsigned algo;
	__u64 L, W, S, N, T;	/* T: token-bucket ns per unit */
	__u64 hold;		/* sl_params.idle_ms */
	__u64 tat_ns;
	struct acc a[MAXACC];
	int na;
};

static void model_init(struct model *m, const struct sl_rule *rule)
{
	struct sl_params p;

	memset(m, 0, sizeof(*m));
	sl_params_from_rule(&p, rule);
	m->algo = rule->algorithm;
	m->L = sl_rule_quota(rule);
	m->W = rule->window_ms;
	m->S = rule->slice_ms;
	m->N = (m->W + m->S - 1) / m->S;
	m->T = rule->token_ns;
	m->hold = p.idle_ms;
}

/* The definitions the rule reference gives (as test_replay_retry_after):
 * sliding-log counts (x - W, x]; fixed the window x / W; sliding-plain
 * the N slices up to x / S; sliding-counter those and the slice before,
 * weighted by floor(oldest * (S - x mod S) / S); token-bucket GCRA.
 */
static __u64 model_used(const struct model *m, __u64 x)
{
	__u64 n = 0, prev = 0;
	int i;

	if (m->algo == SL_ALGO_TOKEN_BUCKET)
		return m->tat_ns > x * 1000000 ?
		       (m->tat_ns - x * 1000000 + m->T - 1) / m->T : 0;
	for (i = 0; i < m->na; i++) {
		const struct acc *a = &m->a[i];

		switch (m->algo) {
		case SL_ALGO_SLIDING_LOG:
		case SL_ALGO_SLIDING:	/* the real accepts, for NFR-1/2 */
			n += a->t + m->W > x ? a->n : 0;
			break;
		case SL_ALGO_FIXED:
			n += a->t / m->W == x / m->W ? a->n : 0;
			break;
		case SL_ALGO_SLIDING_PLAIN:
			n += x / m->S - a->t / m->S < m->N ? a->n : 0;
			break;
		case SL_ALGO_SLIDING_COUNTER:
			n += x / m->S - a->t / m->S < m->N ? a->n : 0;
			prev += x / m->S - a->t / m->S == m->N ? a->n : 0;
			break;
		}
	}
	if (m->algo == SL_ALGO_SLIDING_COUNTER)
		n += prev * (m->S - x % m->S) / m->S;
	return n;
}

static void model_charge(struct model *m, __u64 t, __u64 real, __u64 n)
{
	if (!n)
		return;
	assert_true(m->na < MAXACC);
	m->a[m->na++] = (struct acc){ .t = t, .real = real, .n = n };
	if (m->algo == SL_ALGO_TOKEN_BUCKET)
		m->tat_ns = (m->tat_ns > t * 1000000 ? m->tat_ns : t * 1000000) +
			    n * m->T;
}

/* First ms >= t a request of one unit fits: no model's count grows with
 * time alone, so the accepting times are a tail.
 */
static __u64 model_accept_at(const struct model *m, __u64 t)
{
	__u64 lo = t, hi = t + 2 * m->W + 2 * m->S +
			   m->L * m->T / 1000000 + 2;

	while (lo < hi) {
		__u64 mid = lo + (hi - lo) / 2;

		if (model_used(m, mid) + 1 <= m->L)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Accepts whose real time is in (real - W, real]. */
static __u64 real_in_window(const struct model *m, __u64 real)
{
	__u64 n = 0;
	int i;

	for (i = 0; i < m->na; i++)
		n += m->a[i].real <= real && m->a[i].real + m->W > real ?
		     m->a[i].n : 0;
	return n;
}

/* ---- one case ------------------------------------------------------- */

struct tcase {
	struct fixture *f;
	unsigned index;
	__u64 s;		/* the case's own seed state */
	__u64 seed;		/* ... as it started */
	struct rule_cfg cfg;
	struct sl_rule rule;
	struct sl_client_key key;
	struct sl_addr who, dst;
	const char *base_kind;
	__u64 base, t, back;	/* model clock; steps back so far */
	bool exact;		/* no step back yet: the model decides */
	struct model m;
	struct sl_client_view v;	/* the answer after the last burst */
	unsigned bad, printed, bursts, probes_remaining, probes_retry;
	__u64 units;		/* requests sent: one test run each */
	char what[240];
};

struct totals {
	unsigned cases, steps_back, bursts, probes_remaining, probes_retry;
	unsigned base_kinds[6];
	__u64 min_w, max_w, min_l, max_l, max_t;
};

static const char *const base_kinds[] = {
	"today", "50 years", "ms stamp 2^31/2^32", "window number 2^31/2^32",
	"slice number 2^31/2^32", "today exactly",
};

static void problem(struct tcase *k, const char *fmt, ...)
{
	va_list ap;
	char msg[300];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (k->printed++ < 2)
		print_error("case %u (SL_TIME_CASE=%u, seed %#llx) %s, base %llu "
			    "(%s), t=%llu (+%llu), stepped back %llu: %s\n",
			    k->index, k->index, ULL(k->seed), k->what,
			    ULL(k->base), k->base_kind, ULL(k->t),
			    ULL(k->t - k->base), ULL(k->back), msg);
	k->bad++;
}

static __u64 passed_now(struct tcase *k)
{
	struct sl_rule_stats rs;

	assert_int_equal(sl_percpu_sum_u64(&k->f->in.maps,
					   k->f->in.maps.rule_stats,
					   k->rule.id, &rs, sizeof(rs)), 0);
	return rs.passed;
}

/* `n` requests at model time t through the object: how many it took. */
static __u64 burst(struct tcase *k, __u64 t, __u64 n)
{
	uint8_t pkt[SL_PACKET_MAX];
	size_t len = sl_packet_udp(pkt, &k->who, &k->dst, 40000, 9, 18);
	int cpu = -1;	/* where the thread runs: no migration per burst */
	/* one request through XDP, a burst through TC (the same decision):
	 * XDP's test run with `repeat` swaps the XDP dispatcher, which
	 * costs milliseconds a call
	 */
	bool tc = n > 1;
	__u64 before = passed_now(k), took;
	__u32 verdict;

	k->t = t;
	if (getenv("SL_TIME_VERBOSE"))
		print_message("  burst %llu at %llu (+%llu, back %llu)\n",
			      ULL(n), ULL(t), ULL(t - k->base), ULL(k->back));
	sl_instance_set_time(&k->f->in, t);
	assert_int_equal(sl_instance_run(&k->f->in, tc, cpu, pkt, len, n,
					 &verdict, NULL), 0);
	took = passed_now(k) - before;
	k->units += n;
	if (took > n)
		problem(k, "%llu of a burst of %llu passed", ULL(took), ULL(n));
	k->bursts++;
	return took;
}

/* The client's answer at the model clock's now, as `query` reads it. */
static void answer(struct tcase *k)
{
	assert_int_equal(sl_client_view_read(&k->f->in.maps, &k->rule, &k->key,
					     k->t, &k->v), 0);
	if (getenv("SL_TIME_VERBOSE"))
		print_message("  answer at %llu: used %llu remaining %llu "
			      "retry %llu\n", ULL(k->t), ULL(k->v.used),
			      ULL(k->v.remaining), ULL(k->v.retry_after_ms));
	if ((k->v.remaining > 0) != (k->v.retry_after_ms == 0))
		problem(k, "remaining %llu with Retry-After %llu",
			ULL(k->v.remaining), ULL(k->v.retry_after_ms));
}

/* What must hold after a burst of n at k->t that took `took`. */
static void check_burst(struct tcase *k, __u64 n, __u64 took)
{
	struct model *m = &k->m;
	__u64 real = k->t + k->back, before, in_window, bound;

	if (k->exact && m->algo != SL_ALGO_SLIDING) {
		before = model_used(m, k->t);
		bound = before < m->L ? m->L - before : 0;
		if (took != (n < bound ? n : bound))
			problem(k, "a burst of %llu took %llu, the model %llu "
				"(used %llu)", ULL(n), ULL(took),
				ULL(n < bound ? n : bound), ULL(before));
	}
	if (k->exact && m->algo == SL_ALGO_SLIDING && took < n &&
	    model_used(m, k->t) + took < m->L)
		problem(k, "NFR-2: a burst of %llu took %llu with %llu in the "
			"window", ULL(n), ULL(took), ULL(model_used(m, k->t)));
	model_charge(m, k->t, real, took);
	answer(k);
	if (k->exact && m->algo != SL_ALGO_SLIDING) {
		__u64 used = model_used(m, k->t);
		__u64 retry = model_accept_at(m, k->t) - k->t;

		if (k->v.used != used || k->v.retry_after_ms != retry ||
		    k->v.remaining != (used < m->L ? m->L - used : 0))
			problem(k, "answers used %llu remaining %llu Retry-After "
				"%llu, the model used %llu Retry-After %llu",
				ULL(k->v.used), ULL(k->v.remaining),
				ULL(k->v.retry_after_ms), ULL(used), ULL(retry));
	}
	/* real time: what any window may take, by algorithm */
	in_window = real_in_window(m, real);
	switch (m->algo) {
	case SL_ALGO_SLIDING:
		bound = m->L + m->L / 10;
		break;
	case SL_ALGO_SLIDING_LOG:
		bound = m->L;
		break;
	case SL_ALGO_FIXED:
	case SL_ALGO_SLIDING_PLAIN:	/* L per span of its slices */
		bound = 2 * m->L;
		break;
	default:
		bound = ~0ULL;	/* counter: an estimate; bucket: a rate */
	}
	if (in_window > bound)
		problem(k, "%llu accepts in a real-time window, at most %llu",
			ULL(in_window), ULL(bound));
	if (!k->exact && k->v.retry_after_ms > m->hold + k->back)
		problem(k, "Retry-After %llu after a step back of %llu, hold %llu",
			ULL(k->v.retry_after_ms), ULL(k->back), ULL(m->hold));
}

static void step(struct tcase *k, __u64 t, __u64 n)
{
	check_burst(k, n, burst(k, t, n));
}

/* The answer `remaining` r: r more now are taken, the next is not. */
static void probe_remaining(struct tcase *k)
{
	__u64 r = k->v.remaining, took;

	k->probes_remaining++;
	took = burst(k, k->t, r + 1);
	if (took != r)
		problem(k, "answered remaining %llu, then took %llu of %llu",
			ULL(r), ULL(took), ULL(r + 1));
	check_burst(k, r + 1, took);
}

/* The answer Retry-After R: now + R - 1 refused, now + R taken. */
static void probe_retry(struct tcase *k)
{
	__u64 R = k->v.retry_after_ms, t = k->t, took;

	k->probes_retry++;
	if (R > 1 && rnd(&k->s, 2)) {
		took = burst(k, t + R - 1, 1);
		if (took)
			problem(k, "answered Retry-After %llu; taken at %llu",
				ULL(R), ULL(R - 1));
		check_burst(k, 1, took);
		if (k->bad)
			return;
	}
	took = burst(k, t + R, 1);
	if (!took)
		problem(k, "answered Retry-After %llu; refused then", ULL(R));
	check_burst(k, 1, took);
}

/* ---- what is drawn -------------------------------------------------- */

/* 2^e + a random part below it: spread evenly over orders of magnitude */
static __u64 log_uniform(__u64 *s, __u64 max)
{
	unsigned bits = 64 - __builtin_clzll(max);
	__u64 e = rnd(s, bits), x = (1ULL << e) + rnd(s, 1ULL << e);

	return x > max ? max : x;
}

static const __u32 short_windows[] = {
	1, 2, 3, 100, 250, 500, 750, 835, 836, 837, 1000, 1500, 2000,
	60000, 86400000, 1036800000,
};

static void draw_rule(__u64 *s, unsigned algo, struct rule_cfg *c)
{
	__u32 w;
	__u64 maxl = algo == SL_ALGO_SLIDING_LOG ? SL_MAX_LOG : 65535;

	memset(c, 0, sizeof(*c));
	c->algo = algo;
	w = rnd(s, 4) ? log_uniform(s, SL_MAX_WINDOW_MS) :
			short_windows[rnd(s, ARRAY_SIZE(short_windows))];
	c->window_ms = w;
	c->limit = rnd(s, 5) ? log_uniform(s, maxl) :
		   rnd(s, 4) ? 1 + rnd(s, 5) : maxl;
	if (algo == SL_ALGO_SLIDING && rnd(s, 3))
		c->slices = 1 + rnd(s, w < 3600 ? w : 3600);
	if ((algo == SL_ALGO_SLIDING_PLAIN || algo == SL_ALGO_SLIDING_COUNTER) &&
	    rnd(s, 3))
		c->slices = 1 + rnd(s, w < 63 ? w : 63);
	/* the default of 12 slices needs a window of 12 ms */
	if ((algo == SL_ALGO_SLIDING || algo == SL_ALGO_SLIDING_PLAIN) &&
	    !c->slices && w < 12)
		c->slices = 1 + rnd(s, w);
	if (algo == SL_ALGO_TOKEN_BUCKET && !rnd(s, 3))
		c->capacity = 1 + rnd(s, c->limit);
}

/* Just before the j-th multiple of `unit` * 2^31 in [lo, hi], if any. */
static bool near_wrap(__u64 *s, __u64 unit, __u64 lo, __u64 hi,
		      __u64 before, __u64 *out)
{
	__u64 step = unit << 31, first = (lo + step - 1) / step, last = hi / step;
	__u64 at;

	if (unit > (1ULL << 32) || first > last)
		return false;
	at = (first + rnd(s, last - first + 1)) * step;
	*out = at - rnd(s, before + 1);
	return true;
}

static __u64 draw_base(struct tcase *k)
{
	__u64 *s = &k->s, lo = TODAY_MS, hi = TODAY_MS + YEARS50_MS, b;
	__u64 W = k->rule.window_ms, S = k->rule.slice_ms;
	unsigned kind = rnd(s, 6);

	switch (kind) {
	case 0:
		b = TODAY_MS + rnd(s, 86400000);
		break;
	case 1:
		b = lo + rnd(s, YEARS50_MS);
		break;
	case 2:		/* the u32 ms stamps wrap every 2^32 ms */
		if (near_wrap(s, 1, lo, hi, 3 * W, &b))
			break;
		/* fall through */
	case 3:		/* the window number; fixed's slot */
		kind = 3;
		if (near_wrap(s, W, lo, hi, 3 * W, &b))
			break;
		/* fall through */
	case 4:		/* the slice number; the rings' slots */
		kind = 4;
		if (near_wrap(s, S, lo, hi, 3 * W, &b))
			break;
		kind = 1;
		b = lo + rnd(s, YEARS50_MS);
		break;
	default:
		kind = 5;
		b = TODAY_MS;
	}
	k->base_kind = base_kinds[kind];
	return b;
}

/* The next burst's gap: none, within a slice, a window, two, to the next
 * window's edge, or a step forward of up to a year.
 */
static __u64 draw_gap(struct tcase *k)
{
	__u64 *s = &k->s, W = k->rule.window_ms, S = k->rule.slice_ms;

	switch (rnd(s, 10)) {
	case 0: case 1:
		return 0;
	case 2: case 3:
		return 1 + rnd(s, S);
	case 4: case 5: case 6:
		return 1 + rnd(s, W);
	case 7:
		return 1 + rnd(s, 2 * W);
	case 8:
		return W - k->t % W + rnd(s, 3);
	default:
		return 1 + rnd(s, rnd(s, 2) ? 4 * W : YEAR_MS);
	}
}

/* What a case may send: a few times its limit, which keeps the run
 * short with limits of tens of thousands (each request is a test run).
 */
static bool affords(const struct tcase *k, __u64 n)
{
	return k->units + n <= 4 * k->m.L + 256;
}

static __u64 draw_burst(struct tcase *k)
{
	__u64 *s = &k->s, L = k->m.L;

	if (!affords(k, L + 2))
		return 1 + rnd(s, 3);
	switch (rnd(s, 4)) {
	case 0: case 1:
		return 1;
	case 2:
		return 1 + rnd(s, L);
	default:
		return L + 1 + rnd(s, L / 4 + 2);
	}
}

/* A step back: up to a ms, a window, or SL_MAX_STEP_MS, not before the
 * case's first burst.
 */
static void step_back(struct tcase *k)
{
	__u64 *s = &k->s, S;

	switch (rnd(s, 3)) {
	case 0:
		S = 1 + rnd(s, 10);
		break;
	case 1:
		S = 1 + rnd(s, k->rule.window_ms);
		break;
	default:
		S = 1 + rnd(s, SL_MAX_STEP_MS);
	}
	if (S > k->t - k->base)
		S = k->t - k->base;
	if (!S)
		return;
	k->t -= S;
	k->back += S;
	k->exact = false;
}

static void run_case(struct fixture *f, unsigned algo, unsigned index,
		     __u64 seed, struct totals *tot)
{
	static struct tcase k;
	int i, back_at;

	memset(&k, 0, sizeof(k));
	k.f = f;
	k.index = index;
	/* the rule from its group's seed, the rest from the case's */
	k.seed = k.s = seed * 0x9E3779B97F4A7C15ULL +
		       index / CASES_PER_RULE + 1;
	draw_rule(&k.s, algo, &k.cfg);
	k.s ^= (index % CASES_PER_RULE + 1) * 0xD1B54A32D192ED03ULL;
	apply_rule(f, &k.cfg, &k.rule);
	model_init(&k.m, &k.rule);
	k.who = new_client(f, 0);
	sl_parse_addr(sl_addr_is_ipv4(&k.who) ? "192.0.2.1" : "2001:db8::1",
		      &k.dst);
	memset(&k.key, 0, sizeof(k.key));
	sl_client_key_make(&k.key, &k.rule, &k.who, htons(9));
	if (sl_state_fd(&f->in.maps, algo) != f->in.maps.clients)
		preseed_client(f, &k.rule, &k.who);
	k.base = k.t = draw_base(&k);
	k.exact = true;
	describe(&k.cfg, k.what, sizeof(k.what));
	back_at = rnd(&k.s, 3) ? -1 : 1 + (int)rnd(&k.s, STEPS - 2);

	for (i = 0; i < STEPS && !k.bad; i++) {
		if (i == back_at) {
			step_back(&k);
			tot->steps_back += !k.exact;
			answer(&k);
		}
		if (i && k.v.retry_after_ms && rnd(&k.s, 2))
			probe_retry(&k);
		else if (i && k.v.remaining && rnd(&k.s, 3) == 0 &&
			 affords(&k, k.v.remaining + 1))
			probe_remaining(&k);
		else
			step(&k, k.t + (i ? draw_gap(&k) : 0), draw_burst(&k));
	}
	tot->cases++;
	tot->bursts += k.bursts;
	tot->probes_remaining += k.probes_remaining;
	tot->probes_retry += k.probes_retry;
	for (i = 0; i < (int)ARRAY_SIZE(base_kinds); i++)
		tot->base_kinds[i] += k.base_kind == base_kinds[i];
	if (k.rule.window_ms < tot->min_w || !tot->min_w)
		tot->min_w = k.rule.window_ms;
	if (k.rule.window_ms > tot->max_w)
		tot->max_w = k.rule.window_ms;
	if (k.m.L < tot->min_l || !tot->min_l)
		tot->min_l = k.m.L;
	if (k.m.L > tot->max_l)
		tot->max_l = k.m.L;
	if (k.t > tot->max_t)
		tot->max_t = k.t;
	if (k.bad)
		fail_msg("case %u of %s failed (SL_TIME_SEED=%#llx SL_TIME_CASE=%u)",
			 index, sl_algorithm_name(algo),
			 ULL(seed), index);
}

/* The operator's case, one of the random ones written out: a 500 ms fixed
 * window at today's TAI ms, whose window number is past 2^31. Three of
 * four requests at T pass, the answer is Retry-After to the window's end
 * (not years), and a request 510 ms later passes.
 */
static void test_time_fixed_500ms_today(void **st)
{
	static struct tcase k;
	struct fixture *f = *st;

	memset(&k, 0, sizeof(k));
	k.f = f;
	k.cfg = (struct rule_cfg){ .algo = SL_ALGO_FIXED, .limit = 3,
				   .window_ms = 500 };
	apply_rule(f, &k.cfg, &k.rule);
	model_init(&k.m, &k.rule);
	k.who = new_client(f, 0);
	sl_parse_addr(sl_addr_is_ipv4(&k.who) ? "192.0.2.1" : "2001:db8::1",
		      &k.dst);
	sl_client_key_make(&k.key, &k.rule, &k.who, htons(9));
	k.base = k.t = TODAY_MS;
	k.base_kind = base_kinds[5];
	k.exact = true;
	describe(&k.cfg, k.what, sizeof(k.what));
	step(&k, TODAY_MS, 4);
	assert_int_equal(k.v.retry_after_ms, 500 - TODAY_MS % 500);
	probe_retry(&k);
	step(&k, TODAY_MS + 510, 1);
	if (k.bad)
		fail_msg("the 500 ms fixed window at today's clock");
}

static __u64 env_u64(const char *name, __u64 dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : dflt;
}

static void time_cases(struct fixture *f, unsigned algo)
{
	__u64 seed = env_u64("SL_TIME_SEED", TIME_SEED);
	__u64 only = env_u64("SL_TIME_CASE", ~0ULL);
	struct totals tot = { 0 };
	unsigned i, first = algo * CASES_PER_ALGO;

	print_message("seed %#llx\n", ULL(seed));
	for (i = first; i < first + CASES_PER_ALGO; i++)
		if (only == ~0ULL || only == i)
			run_case(f, algo, i, seed, &tot);
	assert_no_fail_open(f);
	print_message("%s: %u cases (%u with a step back), %u bursts, %u "
		      "remaining and %u Retry-After answers probed; windows "
		      "%llu..%llu ms, limits %llu..%llu; bases: %u today, %u "
		      "50 years, %u ms stamp, %u window number, %u slice "
		      "number wraps, %u today exactly; clock up to %llu\n",
		      sl_algorithm_name(algo), tot.cases, tot.steps_back,
		      tot.bursts, tot.probes_remaining, tot.probes_retry,
		      ULL(tot.min_w), ULL(tot.max_w), ULL(tot.min_l),
		      ULL(tot.max_l), tot.base_kinds[0], tot.base_kinds[1],
		      tot.base_kinds[2], tot.base_kinds[3], tot.base_kinds[4],
		      tot.base_kinds[5], ULL(tot.max_t));
}

#define TIME_TEST(name, algo)						\
static void test_time_##name(void **st)				\
{									\
	time_cases(*st, algo);						\
}

TIME_TEST(sliding, SL_ALGO_SLIDING)
TIME_TEST(sliding_plain, SL_ALGO_SLIDING_PLAIN)
TIME_TEST(fixed, SL_ALGO_FIXED)
TIME_TEST(token_bucket, SL_ALGO_TOKEN_BUCKET)
TIME_TEST(sliding_log, SL_ALGO_SLIDING_LOG)
TIME_TEST(sliding_counter, SL_ALGO_SLIDING_COUNTER)

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, begin, end)
	const struct CMUnitTest tests[] = {
		T(test_time_sliding),
		T(test_time_sliding_plain),
		T(test_time_fixed),
		T(test_time_token_bucket),
		T(test_time_sliding_log),
		T(test_time_sliding_counter),
		T(test_time_fixed_500ms_today),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
