// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: bpf_fixture pkt_builder instance_fixture */
/*
 * Enforcement across CPUs: one client's packets on two CPUs, and every
 * CPU flooding one client at the same instant.
 *
 * BPF_PROG_TEST_RUN tests of the real object: every packet goes through the
 * XDP or TC program of a private, unpinned instance (user/instance/instance.h) under
 * the model clock, and the tests read the verdict and the counters the
 * program wrote. Packets are built by small helpers that append one header
 * each and record where each header the parser must read ends, so that a
 * packet can be cut at every such boundary (and a byte short of it).
 *
 * Tables follow Katran's shape: description, input packet, expected verdict,
 * expected counter deltas. A table test checks every row, prints each
 * mismatch, and fails once at the end, so one bad row hides no other.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
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
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <cmocka.h>

#include "slicelimit.h"
#include "state/client_view.h"
#include "util/parse.h"
#include "instance/instance.h"
#include "sl_key.h"
#include "instance/instance_maps.h"
#include "rules/rules.h"
#include "bpf_fixture.h"

/* ---- 4. across CPUs ----------------------------------------------------- */

static void test_limit_two_cpus_node_total_at_limit(void **state)
{
	struct fixture *f = *state;
	struct sl_rule_stats *per_cpu;
	unsigned acc[5], w, i;
	__u32 id;
	struct pkt p;

	if (f->in.maps.nr_cpus < 2 || CPU_COUNT(&sl_test_initial_cpus) < 2 ||
	    !CPU_ISSET(0, &sl_test_initial_cpus) || !CPU_ISSET(1, &sl_test_initial_cpus))
		skip();
	apply(f, "rules:\n"
		 "  - {name: api, protocol: udp, ports: 53, limit: 10, window: 1s, slices: 10}\n");
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 0);
	/* 2x the limit, alternating CPU 0 and 1 */
	send_steady(f, &p, T0, 50, 1000, 5, 2, acc);
	for (w = 0; w < 5; w++)
		if (acc[w] != 10)
			fail_msg("window %u: %u accepted on 2 CPUs, expected 10",
				 w, acc[w]);

	/* a burst at one instant, alternating CPUs: still the limit */
	set_time(f, T0 + 20000);
	for (i = 0, w = 0; i < 40; i++)
		w += run_len(f, false, i & 1, &p, p.len) == PASS;
	assert_int_equal(w, 10);

	/* both CPUs really counted: each holds part of the accepts */
	id = id_of(f, "api");
	per_cpu = calloc(f->in.maps.nr_cpus, sizeof(*per_cpu));
	assert_non_null(per_cpu);
	assert_int_equal(bpf_map_lookup_elem(f->in.maps.rule_stats, &id, per_cpu), 0);
	assert_true(per_cpu[0].passed >= 20);
	assert_true(per_cpu[1].passed >= 20);
	assert_int_equal(per_cpu[0].passed + per_cpu[1].passed, 60);
	free(per_cpu);
}

/* Every CPU floods one client at once, started together, under every
 * algorithm and every unit, with the model clock standing still and with
 * it moving. The one shared state lets through at most one unit per CPU
 * beyond the first each time the count reaches the limit (include/sl_algo.h;
 * the token bucket: its capacity and refill, and as many), and never
 * fewer than the limit (no accept is lost to another CPU's write).
 */
#define SL_RACE_LIMIT	20000	/* frozen clock, packets: units of the run */
#define SL_RACE_SMALL	1000	/* frozen clock, the other cases */
#define SL_RACE_MOVING	500	/* moving clock: per 1 s window */
#define SL_RACE_SPAN_MS	2000	/* moving clock: over this much model time */
#define SL_RACE_BYTES	100	/* frame length of the bytes cases */
#define SL_RACE_RUN	64	/* packets a BPF_PROG_TEST_RUN */

/* How far the moving clock steps: every CPU makes a run a step, so a
 * case makes CPUs x span / step runs. Under TCG a run costs mostly its
 * syscall, not its packets, and the runs of 64 CPUs at 20 ms steps did
 * not fit the 64-CPU VM's time limit. The step grows with the CPUs
 * (20 ms on 2 CPUs, as on the host; 200 ms, ten steps, from 16 CPUs
 * up), each a divisor of the 1 s window so that windows hold whole
 * steps; the bounds take the step, so the check stays exact.
 */
static __u64 race_step_ms(int ncpu)
{
	static const __u64 steps[] = { 20, 25, 40, 50, 100, 200 };
	unsigned i;

	for (i = 0; i < sizeof(steps) / sizeof(*steps) - 1; i++)
		if (steps[i] >= 10 * (__u64)ncpu)
			break;
	return steps[i];
}

struct racer {
	struct fixture *f;
	const struct pkt *p;
	pthread_barrier_t *start;
	int cpu;
	__u32 packets;
	bool clock;		/* this racer moves the model clock */
	__u64 t0, t_end, step_ms;
	int err;
};

static void *race_one_cpu(void *arg)
{
	struct racer *r = arg;
	__u32 retval, done, run = 0;

	r->err = sl_pin_to_cpu(r->cpu);
	pthread_barrier_wait(r->start);
	/* short runs, so that every CPU is inside the program at once */
	for (done = 0; done < r->packets && !r->err; done += SL_RACE_RUN, run++) {
		if (r->clock) {
			r->t_end = r->t0 + (__u64)run * r->step_ms;
			set_time(r->f, r->t_end);
		}
		r->err = sl_instance_run(&r->f->in, false, -1, r->p->b,
					 r->p->len, SL_RACE_RUN, &retval, NULL);
	}
	return NULL;
}

struct race_case {
	const char *algorithm;
	const char *unit;	/* packets, syn or bytes */
	bool moving;
};

/* Packets (not units) that may pass: the algorithm's own bound over the
 * run's model time, plus one packet per CPU beyond the first each time
 * the count can reach the limit.
 */
static __u64 race_bound_counted(const struct race_case *c, __u64 limit,
				int ncpu, __u64 t0, __u64 t_end, __u64 step_ms)
{
	__u64 extra = ncpu - 1, windows, span = t_end - t0;

	if (!c->moving)
		return limit + extra;
	/* windows of 1 s the run touches */
	windows = t_end / 1000 - t0 / 1000 + 1;
	if (!strcmp(c->algorithm, "token-bucket"))
		/* capacity, and a token per 1 s / limit of the run; the
		 * compare-and-swap makes it exact but under contention
		 * past SL_CAS_TRIES (include/sl_algo.h)
		 */
		return limit + span * limit / 1000 + extra;
	if (!strcmp(c->algorithm, "fixed"))
		return windows * (limit + extra);
	/* sliding: the limit and a slice's cap (NFR-1) per window, and the
	 * count falls (to reach the limit again) where one of its records
	 * leaves the window; sliding-log: exact, its count falls at every
	 * step of the clock; sliding-plain and sliding-counter count the
	 * oldest slice until it has left whole, so a window can hold a slice
	 * more: 2 x, falling at each of the ten slices
	 */
	if (!strcmp(c->algorithm, "sliding"))
		return windows * (limit + limit / (SL_RECORDS - 2) + 1 +
				  (SL_RECORDS + 1) * extra);
	if (!strcmp(c->algorithm, "sliding-log"))
		return windows * (limit + 1000 / step_ms * extra);
	return windows * (2 * limit + 11 * extra);
}

/* ... and one per CPU beyond the first when the client's state is first
 * made: a CPU that meets the key while another promotes it from
 * probation can have its packet accepted there, uncounted
 * (include/sl_newcomer.h).
 */
static __u64 race_bound(const struct race_case *c, __u64 limit, int ncpu,
			__u64 t0, __u64 t_end, __u64 step_ms)
{
	return race_bound_counted(c, limit, ncpu, t0, t_end, step_ms) + ncpu - 1;
}

/* The rule of a case: `limit` packets' worth of units a window (a
 * bucket's capacity, refilled over the window when the clock moves; one
 * unit a second, so never in the run, when it stands still).
 */
static void race_rule(char *yaml, size_t size, const char *name,
		      const struct race_case *c, __u64 limit)
{
	bool bucket = !strcmp(c->algorithm, "token-bucket");
	bool bytes = !strcmp(c->unit, "bytes");
	bool slices = !strncmp(c->algorithm, "sliding", 7) &&
		      strcmp(c->algorithm, "sliding-log");

	snprintf(yaml, size,
		 "rules:\n"
		 "  - {name: %s, protocol: %s, ports: 53, limit: %llu, unit: %s, "
		 "window: %s, algorithm: %s%s}\n",
		 name, strcmp(c->unit, "syn") ? "udp" : "tcp",
		 (unsigned long long)(limit * (bytes ? SL_RACE_BYTES : 1)),
		 c->unit, c->moving ? "1s" : "1h", c->algorithm,
		 slices ? ", slices: 10" :
		 bucket && !c->moving ? ", refill_per_s: 1" : "");
}

static void test_limit_concurrent_cpus_at_most_one_extra_each(void **state)
{
	static const char *const algorithms[] = {
		"sliding", "sliding-plain", "fixed", "token-bucket",
		"sliding-log", "sliding-counter",
	};
	static const char *const units[] = { "packets", "syn", "bytes" };
	struct fixture *f = *state;
	struct racer *r;
	pthread_t *th;
	int ncpu = 0, cpu, i, bad = 0, n = 0;
	unsigned a, u, m;
	__u64 step_ms;

	r = calloc(CPU_SETSIZE, sizeof(*r));
	th = calloc(CPU_SETSIZE, sizeof(*th));
	assert_non_null(r);
	assert_non_null(th);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &sl_test_initial_cpus))
			r[ncpu++].cpu = cpu;
	if (ncpu < 2)
		skip();
	step_ms = race_step_ms(ncpu);
	for (a = 0; a < sizeof(algorithms) / sizeof(*algorithms); a++)
	for (u = 0; u < sizeof(units) / sizeof(*units); u++)
	for (m = 0; m < 2; m++) {
		struct race_case c = { algorithms[a], units[u], m };
		bool log = !strcmp(c.algorithm, "sliding-log");
		bool bytes = !strcmp(c.unit, "bytes");
		/* the full-size case where the bucket lost most, and the
		 * original sliding one; smaller limits for the rest, so
		 * that the whole table stays short
		 */
		__u64 limit = m ? SL_RACE_MOVING :
			      !strcmp(c.unit, "packets") && !log &&
			      (a == 0 || !strcmp(c.algorithm, "token-bucket")) ?
			      SL_RACE_LIMIT : SL_RACE_SMALL, sent = 0, bound, per = 0;
		__u64 t0 = T0 + 100000 * (++n);
		char yaml[512], name[32];
		pthread_barrier_t start;
		struct sl_rule_stats s;
		struct timespec ts0, ts1;
		struct pkt p;

		if (log && bytes)
			continue;	/* the log counts requests */
		snprintf(name, sizeof(name), "race%d", n);
		race_rule(yaml, sizeof(yaml), name, &c, limit);
		set_time(f, t0);
		apply(f, yaml);
		mk(&p, "192.0.2.77", "203.0.113.1", strcmp(c.unit, "syn") ? UDP : TCP,
		   53, strcmp(c.unit, "syn") ? 0 : SYN, bytes ? SL_RACE_BYTES : 0);
		assert_int_equal(pthread_barrier_init(&start, NULL, ncpu), 0);
		clock_gettime(CLOCK_MONOTONIC, &ts0);
		for (i = 0; i < ncpu; i++) {
			r[i].f = f;
			r[i].p = &p;
			r[i].start = &start;
			r[i].clock = m && i == 0;
			r[i].t0 = r[i].t_end = t0;
			r[i].step_ms = step_ms;
			r[i].err = 0;
			/* frozen: twice the limit in all, rounded up to
			 * whole runs; moving: a run per step of the clock
			 * over the span, many times the limit a window
			 */
			per = m ? SL_RACE_SPAN_MS / step_ms * SL_RACE_RUN :
			      (2 * limit / ncpu + SL_RACE_RUN - 1) /
			      SL_RACE_RUN * SL_RACE_RUN;
			r[i].packets = per;
			sent += per;
			assert_int_equal(pthread_create(&th[i], NULL, race_one_cpu, &r[i]), 0);
		}
		for (i = 0; i < ncpu; i++) {
			pthread_join(th[i], NULL);
			assert_int_equal(r[i].err, 0);
		}
		clock_gettime(CLOCK_MONOTONIC, &ts1);
		pthread_barrier_destroy(&start);
		s = stats_of(f, name);
		bound = race_bound(&c, limit, ncpu, t0, r[0].t_end, step_ms);
		/* one JSON line per case: make bench-cpus records them */
		print_message("{\"cpus\": %d, \"algorithm\": \"%s\", \"unit\": \"%s\", "
			      "\"clock\": \"%s\", \"sent\": %llu, \"passed\": %llu, "
			      "\"limit\": %llu, \"bound\": %llu, \"step_ms\": %llu, "
			      "\"ms\": %lld}\n", ncpu,
			      c.algorithm, c.unit, m ? "moving" : "frozen",
			      (unsigned long long)sent,
			      (unsigned long long)s.passed,
			      (unsigned long long)limit,
			      (unsigned long long)bound,
			      (unsigned long long)(m ? step_ms : 0),
			      (long long)(ts1.tv_sec - ts0.tv_sec) * 1000 +
			      (ts1.tv_nsec - ts0.tv_nsec) / 1000000);
		if (s.passed + s.dropped != sent || s.passed < limit ||
		    s.passed > bound) {
			print_error("%s %s %s: %llu of %llu passed, expected %llu..%llu\n",
				    c.algorithm, c.unit, m ? "moving" : "frozen",
				    (unsigned long long)s.passed,
				    (unsigned long long)sent,
				    (unsigned long long)limit,
				    (unsigned long long)bound);
			bad++;
		}
	}
	free(th);
	free(r);
	if (bad)
		fail_msg("%d case(s) outside the bound", bad);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_limit_two_cpus_node_total_at_limit),
		T(test_limit_concurrent_cpus_at_most_one_extra_each),
	};
#undef T

	/* a line per race case as it ends, even into a file: a step that
	 * its time limit cuts keeps the cases it finished
	 */
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* SL_TEST_FILTER=test_limit_concurrent*: one test (make bench-cpus) */
	if (getenv("SL_TEST_FILTER"))
		cmocka_set_test_filter(getenv("SL_TEST_FILTER"));
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
