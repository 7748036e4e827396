// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: bpf_fixture pkt_builder instance_fixture */
/*
 * Checks that cost more than one unit, through the real sl_check program
 * (BPF_PROG_TEST_RUN of a struct sl_check_req carrying the units, model
 * clock at today's CLOCK_REALTIME scale):
 *
 * - a request fits whole or is refused whole, under every algorithm that
 *   counts units (limit 10: 4, 4 pass, 4 does not, 2 does, 1 does not);
 * - a request of no units is not a request (XDP_ABORTED), nor is one of
 *   the old layout's length;
 * - a check's units and packets are one client's state under
 *   api_key_is_address: 8 units checked leave 2 packets;
 * - the checker (user/service/check_local.c) refuses a cost over the
 *   rule's limit and a cost over 1 under sliding-log, charging nothing;
 * - a counting check of a client with a state is one bpf() call, the
 *   program's test run: the answer's numbers come from the state the
 *   program copied back, not from map lookups after it (counted through
 *   the linker's --wrap of libbpf's calls, Makefile), and they are the
 *   numbers the maps give;
 * - random traces of costs: every verdict of the exact algorithms equals
 *   an independent model's (counting units, written here), and `sliding`
 *   never rejects what the exact window would take and stays within its
 *   documented bound (include/sl_algo.h: L + cap + two requests' units).
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
#include <netinet/in.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cmocka.h>

#include "slicelimit.h"
#include "sl_algo.h"
#include "sl_key.h"
#include "sl_peer.h"
#include "util/clock.h"
#include "util/parse.h"
#include "rules/rules.h"
#include "service/check.h"
#include "bpf_fixture.h"
#include "slicelimit.skel.h"

/* CLOCK_REALTIME in ms, late 2026: the scale the service runs at */
#define NOW_MS		1796000000000ULL

/* The request for KEY (an address when !raw, else any 16 bytes) under
 * the live rule NAME, of UNITS.
 */
static struct sl_check_req request(struct fixture *f, const char *name,
				   const struct sl_addr *addr, bool raw,
				   __u32 units)
{
	struct sl_check_req req = { .magic = SL_CHECK_MAGIC };
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	unsigned nr, i;
	__u32 epoch = 0;

	assert_int_equal(sl_rules_reread(&f->in.maps, true, &epoch, &rules,
					 &nr, &cfg), 1);
	for (i = 0; i < nr && strcmp(rules[i].name, name); i++)
		;
	if (i == nr)
		fail_msg("no live rule %s", name);
	req.position = i;
	req.rules_epoch = epoch;
	req.rule_id = rules[i].id;
	req.flags = raw ? SL_CHECK_RAW_KEY : 0;
	req.addr = *addr;
	req.units = units;
	free(rules);
	return req;
}

/* The program's answer (XDP_PASS, XDP_DROP, XDP_ABORTED) to LEN bytes
 * of REQ.
 */
static int run_check_len(struct fixture *f, const struct sl_check_req *req,
			 __u32 len)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = req,
		    .data_size_in = len);

	assert_int_equal(bpf_prog_test_run_opts(
		bpf_program__fd(f->in.skel->progs.sl_check), &opts), 0);
	return opts.retval;
}

static int run_check(struct fixture *f, const struct sl_check_req *req)
{
	return run_check_len(f, req, sizeof(*req));
}

static struct sl_addr raw_key(unsigned n)
{
	struct sl_addr a = { .byte = { 0x01 } };	/* 100::/64, as the API */

	memcpy(&a.byte[8], &n, sizeof(n));
	return a;
}

static const char *const unit_algos[] = {
	"sliding", "sliding-plain", "fixed", "sliding-counter", "token-bucket",
};

static void test_check_cost_fits_whole_or_not_at_all(void **state)
{
	static const __u32 costs[] = { 4, 4, 4, 2, 1 };
	static const int want[] = { XDP_PASS, XDP_PASS, XDP_DROP, XDP_PASS,
				    XDP_DROP };
	struct fixture *f = *state;
	char yaml[1024], *p = yaml;
	unsigned a, i;

	p += sprintf(p, "rules:\n");
	for (a = 0; a < 5; a++)
		p += sprintf(p, "  - {name: r%u, algorithm: %s, limit: 10, window: 1h}\n",
			     a, unit_algos[a]);
	apply(f, yaml);
	set_time(f, NOW_MS);
	for (a = 0; a < 5; a++) {
		char name[8];
		struct sl_addr k = raw_key(a);

		snprintf(name, sizeof(name), "r%u", a);
		for (i = 0; i < 5; i++) {
			struct sl_check_req req = request(f, name, &k, true,
							  costs[i]);
			int got = run_check(f, &req);

			if (got != want[i])
				fail_msg("%s: request %u of %u units: %d, want %d",
					 unit_algos[a], i, costs[i], got, want[i]);
		}
	}
}

static void test_check_cost_malformed_requests_abort(void **state)
{
	struct fixture *f = *state;
	struct sl_addr k = raw_key(7);
	struct sl_check_req req;

	apply(f, "rules:\n  - {name: api, limit: 10, window: 1h}\n");
	set_time(f, NOW_MS);
	req = request(f, "api", &k, true, 0);
	assert_int_equal(run_check(f, &req), XDP_ABORTED);
	req.units = 1;
	/* the layout before units: too short to be one */
	assert_int_equal(run_check_len(f, &req, offsetof(struct sl_check_req,
							 units)), XDP_ABORTED);
	req.magic = 0x534c4331;	/* "SLC1": the old layout's magic */
	assert_int_equal(run_check(f, &req), XDP_ABORTED);
	req.magic = SL_CHECK_MAGIC;
	assert_int_equal(run_check(f, &req), XDP_PASS);
}

static void test_check_cost_shares_the_packets_client(void **state)
{
	struct fixture *f = *state;
	struct sl_check_req req;
	struct sl_addr a;
	struct pkt p;

	apply(f, "rules:\n"
		 "  - {name: dns, protocol: udp, ports: 53, limit: 10, window: 1h,\n"
		 "     api_key_is_address: true}\n");
	set_time(f, NOW_MS);
	assert_int_equal(sl_parse_addr("192.0.2.7", &a), 0);
	req = request(f, "dns", &a, false, 8);
	assert_int_equal(run_check(f, &req), XDP_PASS);
	mk(&p, "192.0.2.7", "203.0.113.1", UDP, 53, 0, 0);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), DROP);
	req.units = 1;
	assert_int_equal(run_check(f, &req), XDP_DROP);
	/* another address is another client */
	mk(&p, "192.0.2.8", "203.0.113.1", UDP, 53, 0, 0);
	assert_int_equal(run(f, &p), PASS);
}

static void test_check_cost_checker_refuses_what_never_fits(void **state)
{
	struct fixture *f = *state;
	struct sl_checker c;
	struct sl_check_result res;

	apply(f, "rules:\n"
		 "  - {name: api, limit: 10, window: 1h}\n"
		 "  - {name: tb, algorithm: token-bucket, limit: 6, window: 6s}\n"
		 "  - {name: log, algorithm: sliding-log, limit: 10, window: 1h}\n");
	set_time(f, NOW_MS);
	assert_int_equal(sl_checker_init(&c,
			 bpf_program__fd(f->in.skel->progs.sl_check),
			 &f->in.maps), 0);
	assert_int_equal(sl_check(&c, "api", "k", 11, &res), -ERANGE);
	assert_int_equal(sl_check(&c, "tb", "k", 7, &res), -ERANGE);
	assert_int_equal(sl_check(&c, "log", "k", 2, &res), -EOPNOTSUPP);
	/* nothing was charged: the whole limit is still there */
	assert_int_equal(sl_check(&c, "api", "k", 10, &res), 0);
	assert_true(res.allowed);
	assert_int_equal(sl_check(&c, "tb", "k", 6, &res), 0);
	assert_true(res.allowed);
	assert_int_equal(sl_check(&c, "log", "k", 1, &res), 0);
	assert_true(res.allowed);
	sl_checker_fini(&c);
}

/* ---- one bpf() call per check ------------------------------------------- */

/* libbpf's calls that reach the kernel on a check's way, counted */
static unsigned test_runs, lookups;

int __real_bpf_prog_test_run_opts(int fd, struct bpf_test_run_opts *opts);
int __real_bpf_map_lookup_elem(int fd, const void *key, void *value);

int __wrap_bpf_prog_test_run_opts(int fd, struct bpf_test_run_opts *opts)
{
	test_runs++;
	return __real_bpf_prog_test_run_opts(fd, opts);
}

int __wrap_bpf_map_lookup_elem(int fd, const void *key, void *value)
{
	lookups++;
	return __real_bpf_map_lookup_elem(fd, key, value);
}

static void test_check_cost_one_bpf_call_per_check(void **state)
{
	static const char *const algos[] = {
		"sliding", "sliding-plain", "fixed", "sliding-counter",
		"token-bucket",
	};
	struct fixture *f = *state;
	struct sl_check_result res, read;
	struct sl_checker c;
	char yaml[1024], *p = yaml, name[8];
	unsigned a, i;

	p += sprintf(p, "rules:\n");
	for (a = 0; a < 5; a++)
		p += sprintf(p, "  - {name: r%u, algorithm: %s, limit: 20, window: 1h}\n",
			     a, algos[a]);
	p += sprintf(p, "  - {name: log, algorithm: sliding-log, limit: 20, window: 1h}\n"
			"  - {name: ex, limit: 20, window: 1h, api_key_is_address: true,\n"
			"     exempt: [198.51.100.0/24]}\n");
	apply(f, yaml);
	/* the model clock at TAI now: a read-only lookup reads at TAI */
	set_time(f, sl_now_tai_ms());
	assert_int_equal(sl_checker_init(&c,
			 bpf_program__fd(f->in.skel->progs.sl_check),
			 &f->in.maps), 0);
	for (a = 0; a < 5; a++) {
		snprintf(name, sizeof(name), "r%u", a);
		/* the first checks give the key its state (a first one may
		 * be on probation) and the checker its rules
		 */
		assert_int_equal(sl_check(&c, name, "k", 2, &res), 0);
		assert_int_equal(sl_check(&c, name, "k", 2, &res), 0);
		test_runs = lookups = 0;
		for (i = 0; i < 5; i++)
			assert_int_equal(sl_check(&c, name, "k", 2, &res), 0);
		if (test_runs != 5 || lookups != 0)
			fail_msg("%s: 5 checks made %u test runs and %u map lookups, want 5 and 0",
				 algos[a], test_runs, lookups);
		/* the numbers are those of the maps, read after the check */
		assert_true(res.allowed);
		assert_int_equal(res.view.used, 14);
		assert_int_equal(res.view.remaining, 6);
		assert_int_equal(sl_check(&c, name, "k", 0, &read), 0);
		assert_int_equal(read.view.used, res.view.used);
		assert_int_equal(read.view.remaining, res.view.remaining);
		/* reset: within the ms the lookup came later, or the
		 * bucket's rounding of a token to ms
		 */
		assert_true(read.view.reset_ms <= res.view.reset_ms &&
			    read.view.reset_ms + 1000 >= res.view.reset_ms);
	}
	/* an exempt address: the program says so, no lookup of the list */
	assert_int_equal(sl_check(&c, "ex", "198.51.100.9", 1, &res), 0);
	test_runs = lookups = 0;
	assert_int_equal(sl_check(&c, "ex", "198.51.100.9", 1, &res), 0);
	assert_true(res.allowed && res.view.exempt);
	assert_int_equal(res.decision, SL_DECIDED_EXEMPT);
	assert_int_equal(test_runs * 10 + lookups, 10);
	/* sliding-log's state is too large to copy: read from the map */
	assert_int_equal(sl_check(&c, "log", "k", 1, &res), 0);
	assert_int_equal(sl_check(&c, "log", "k", 1, &res), 0);
	test_runs = lookups = 0;
	assert_int_equal(sl_check(&c, "log", "k", 1, &res), 0);
	assert_int_equal(test_runs, 1);
	assert_true(lookups >= 1);
	assert_int_equal(res.view.used, 3);
	sl_checker_fini(&c);
}

/* Under a layout that counts the peers the program copies their view and
 * the layout too: the fleet's numbers, still in one call.
 */
static void test_check_cost_one_bpf_call_with_peers(void **state)
{
	struct fixture *f = *state;
	struct sl_check_result res, read;
	struct sl_sync_conf sc = {
		.layout = SL_LAYOUT_DELAYED_SYNC, .nodes = 2,
		.interval_ms = 1000, .round = 1, .live_nodes = 2,
	};
	struct sl_peer_view pv = { 0 };
	struct sl_client_key key = { 0 };
	struct sl_checker c;
	struct sl_params p;
	struct sl_rule rule;
	__u64 now = sl_now_tai_ms(), slice;
	__u32 zero = 0;
	bool raw;
	int i;

	apply(f, "rules:\n  - {name: r, limit: 20, window: 1h}\n");
	set_time(f, now);
	rule = live_rule(f, "r");
	sl_params_from_rule(&p, &rule);
	slice = sl_peer_slice_of(&p);
	/* the peers accepted 5 units of "k" a second ago */
	sl_check_key_addr("k", false, &key.addr, &raw);
	key.rule_id = rule.id;
	pv.slice_ms = slice;
	pv.slot[0].slice = (now - 1000) / slice;
	pv.slot[0].first_ms = now - 1000;
	pv.slot[0].count = 5;
	pv.slot[0].last_ms = now - 500;
	assert_int_equal(bpf_map_update_elem(f->in.maps.sync, &zero, &sc, 0), 0);
	assert_int_equal(bpf_map_update_elem(f->in.maps.peer_view, &key, &pv, 0), 0);
	assert_int_equal(sl_checker_init(&c,
			 bpf_program__fd(f->in.skel->progs.sl_check),
			 &f->in.maps), 0);
	sl_checker_sync_changed(&c);
	assert_int_equal(sl_check(&c, "r", "k", 2, &res), 0);
	assert_int_equal(sl_check(&c, "r", "k", 2, &res), 0);
	test_runs = lookups = 0;
	for (i = 0; i < 3; i++)
		assert_int_equal(sl_check(&c, "r", "k", 2, &res), 0);
	assert_int_equal(test_runs * 10 + lookups, 30);
	/* 10 own units and the peers' 5 */
	assert_true(res.allowed);
	assert_int_equal(res.view.used, 15);
	assert_int_equal(sl_check(&c, "r", "k", 0, &read), 0);
	assert_int_equal(read.view.used, 15);
	assert_int_equal(read.view.remaining, res.view.remaining);
	/* the fleet's count decides: 6 more do not fit, 5 do */
	assert_int_equal(sl_check(&c, "r", "k", 6, &res), 0);
	assert_false(res.allowed);
	assert_int_equal(sl_check(&c, "r", "k", 5, &res), 0);
	assert_true(res.allowed);
	assert_int_equal(res.view.used, 20);
	sl_checker_fini(&c);
}

/* ---- random traces of costs against a model ---------------------------- */

#define MAXRUN	400

/* An independent model of the exact algorithms, counting the units of
 * the requests it was told were accepted:
 *   fixed            units in window floor(x / W)
 *   sliding-plain    units in the N = ceil(W / S) slices up to floor(x / S)
 *   sliding-counter  the same N slices in full, and the slice before them
 *                    weighted: floor(oldest * (S - x mod S) / S)
 *   token-bucket     GCRA: used ceil((TAT - x) / T), TAT += units * T
 *   (sliding's exact window: units in (x - W, x])
 * A request of u units fits while used + u <= limit.
 */
struct model {
	unsigned algo;
	__u64 limit, W, S, N, T, tat_ns;
	__u64 at[MAXRUN];
	__u32 units[MAXRUN];
	int n;
};

static __u64 model_used(const struct model *m, __u64 x)
{
	__u64 n = 0, prev = 0;
	int i;

	switch (m->algo) {
	case SL_ALGO_SLIDING:
		for (i = 0; i < m->n; i++)
			n += m->at[i] + m->W > x ? m->units[i] : 0;
		return n;
	case SL_ALGO_FIXED:
		for (i = 0; i < m->n; i++)
			n += m->at[i] / m->W == x / m->W ? m->units[i] : 0;
		return n;
	case SL_ALGO_SLIDING_PLAIN:
		for (i = 0; i < m->n; i++)
			n += x / m->S - m->at[i] / m->S < m->N ? m->units[i] : 0;
		return n;
	case SL_ALGO_SLIDING_COUNTER:
		for (i = 0; i < m->n; i++) {
			__u64 back = x / m->S - m->at[i] / m->S;

			n += back < m->N ? m->units[i] : 0;
			prev += back == m->N ? m->units[i] : 0;
		}
		return n + prev * (m->S - x % m->S) / m->S;
	case SL_ALGO_TOKEN_BUCKET:
		return m->tat_ns > x * 1000000 ?
		       (m->tat_ns - x * 1000000 + m->T - 1) / m->T : 0;
	}
	fail_msg("no model of algorithm %u", m->algo);
	return 0;
}

static void model_charge(struct model *m, __u64 x, __u32 units)
{
	assert_true(m->n < MAXRUN);
	m->at[m->n] = x;
	m->units[m->n++] = units;
	if (m->algo == SL_ALGO_TOKEN_BUCKET)
		m->tat_ns = (m->tat_ns > x * 1000000 ? m->tat_ns : x * 1000000) +
			    (__u64)units * m->T;
}

static __u64 rnd(__u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void test_check_cost_random_traces_match_the_model(void **state)
{
	static const __u64 limits[] = { 1, 2, 3, 5, 10, 20, 50, 100 };
	static const char *const windows[] = { "1s", "7s", "1m" };
	struct fixture *f = *state;
	unsigned a, trace, key = 100, passed = 0, dropped = 0;
	__u64 s = 0x9e3779b97f4a7c15ULL;

	for (a = 0; a < 5; a++) {
		for (trace = 0; trace < 8; trace++) {
			struct model *m = calloc(1, sizeof(*m));
			char yaml[256];
			struct sl_rule rule;
			struct sl_check_req req;
			struct sl_addr k = raw_key(key++);
			__u64 t, limit = limits[rnd(&s) % 8], maxcost;
			__u64 seed = s, worst = 0;
			int i, j;

			assert_non_null(m);
			snprintf(yaml, sizeof(yaml),
				 "rules:\n  - {name: r, algorithm: %s, limit: %llu, window: %s%s}\n",
				 unit_algos[a], (unsigned long long)limit,
				 windows[rnd(&s) % 3],
				 a == 1 || a == 3 ? ", slices: 3" : "");
			apply(f, yaml);
			rule = live_rule(f, "r");
			m->algo = rule.algorithm;
			m->limit = sl_rule_quota(&rule);
			m->W = rule.window_ms;
			m->S = rule.slice_ms;
			m->N = (m->W + m->S - 1) / m->S;
			m->T = rule.token_ns;
			maxcost = m->limit < 8 ? m->limit : 8;
			t = NOW_MS + rnd(&s) % 86400000;
			req = request(f, "r", &k, true, 1);
			for (i = 0; i < 200; i++) {
				__u32 units = 1 + rnd(&s) % maxcost;
				bool fits, got;
				__u64 gap = rnd(&s) % 4;

				/* bursts at one instant, short gaps, and
				 * now and then most of a window
				 */
				t += gap == 0 ? 0 : gap == 3 ?
				     rnd(&s) % m->W : rnd(&s) % (m->W / 8 + 1);
				set_time(f, t);
				req.units = units;
				got = run_check(f, &req) == XDP_PASS;
				fits = model_used(m, t) + units <= m->limit;
				if (m->algo != SL_ALGO_SLIDING && got != fits)
					fail_msg("%s limit %llu window %llu seed %llx: request %d (%u units at +%llu ms): kernel %s, model %s",
						 unit_algos[a],
						 (unsigned long long)m->limit,
						 (unsigned long long)m->W,
						 (unsigned long long)seed, i,
						 units,
						 (unsigned long long)(t - NOW_MS),
						 got ? "pass" : "drop",
						 fits ? "pass" : "drop");
				/* sliding: never a false reject (NFR-2) */
				if (m->algo == SL_ALGO_SLIDING && fits && !got)
					fail_msg("sliding limit %llu seed %llx: request %d of %u units rejected while the window holds %llu",
						 (unsigned long long)m->limit,
						 (unsigned long long)seed, i, units,
						 (unsigned long long)model_used(m, t));
				if (got)
					model_charge(m, t, units);
				passed += got;
				dropped += !got;
			}
			/* sliding: the most any window held */
			for (i = 0; m->algo == SL_ALGO_SLIDING && i < m->n; i++) {
				__u64 sum = 0;

				for (j = i; j < m->n && m->at[j] < m->at[i] + m->W; j++)
					sum += m->units[j];
				if (sum > worst)
					worst = sum;
			}
			if (m->algo == SL_ALGO_SLIDING &&
			    worst > m->limit + m->limit / (SL_RECORDS - 2) + 1 +
				    2 * maxcost)
				fail_msg("sliding limit %llu seed %llx: a window held %llu units",
					 (unsigned long long)m->limit,
					 (unsigned long long)seed,
					 (unsigned long long)worst);
			free(m);
		}
	}
	print_message("# %u requests passed, %u dropped\n", passed, dropped);
	/* both verdicts were compared, many times */
	assert_true(passed > 1000 && dropped > 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_check_cost_fits_whole_or_not_at_all, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_check_cost_malformed_requests_abort, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_check_cost_shares_the_packets_client, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_check_cost_checker_refuses_what_never_fits, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_check_cost_one_bpf_call_per_check, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_check_cost_one_bpf_call_with_peers, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_check_cost_random_traces_match_the_model, setup,
			teardown),
	};

	sl_test_save_cpus();
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
