// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Enforcement across CPUs: one client's packets on two CPUs, and every
 * CPU flooding one client at the same instant.
 *
 * BPF_PROG_TEST_RUN tests of the real object: every packet goes through the
 * XDP or TC program of a private, unpinned instance (user/core/instance.h) under
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
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <cmocka.h>

#include "slicelimit.h"
#include "core/client_view.h"
#include "core/parse.h"
#include "core/instance.h"
#include "sl_key.h"
#include "core/instance_maps.h"
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

/* Every CPU floods one client at the same instant (the model clock stands
 * still), started together: the one shared state lets through at most one
 * unit per CPU beyond the limit (include/sl_algo.h), and never fewer than
 * the limit (no accept is lost).
 */
#define SL_RACE_LIMIT	20000

struct racer {
	struct fixture *f;
	const struct pkt *p;
	pthread_barrier_t *start;
	int cpu;
	__u32 packets;
	int err;
};

static void *race_one_cpu(void *arg)
{
	struct racer *r = arg;
	__u32 retval, done;

	pthread_barrier_wait(r->start);
	/* short runs, so that every CPU is inside the program at once */
	for (done = 0; done < r->packets && !r->err; done += 64)
		r->err = sl_instance_run(&r->f->in, false, r->cpu, r->p->b,
					 r->p->len, 64, &retval, NULL);
	return NULL;
}

static void test_limit_concurrent_cpus_at_most_one_extra_each(void **state)
{
	struct fixture *f = *state;
	struct racer *r;
	pthread_t *th;
	pthread_barrier_t start;
	struct sl_rule_stats s;
	struct pkt p;
	int ncpu = 0, cpu, i;
	__u64 sent = 0;

	r = calloc(CPU_SETSIZE, sizeof(*r));
	th = calloc(CPU_SETSIZE, sizeof(*th));
	assert_non_null(r);
	assert_non_null(th);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &sl_test_initial_cpus))
			r[ncpu++].cpu = cpu;
	if (ncpu < 2)
		skip();
	apply(f, "rules:\n"
		 "  - {name: race, protocol: udp, ports: 53, limit: 20000, window: 1h}\n");
	mk(&p, "192.0.2.77", "203.0.113.1", UDP, 53, 0, 0);
	assert_int_equal(pthread_barrier_init(&start, NULL, ncpu), 0);
	for (i = 0; i < ncpu; i++) {
		r[i].f = f;
		r[i].p = &p;
		r[i].start = &start;
		/* twice the limit in all, rounded up to whole runs of 64 */
		r[i].packets = (2 * SL_RACE_LIMIT / ncpu + 63) / 64 * 64;
		sent += r[i].packets;
		assert_int_equal(pthread_create(&th[i], NULL, race_one_cpu, &r[i]), 0);
	}
	for (i = 0; i < ncpu; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(r[i].err, 0);
	}
	pthread_barrier_destroy(&start);
	s = stats_of(f, "race");
	/* one JSON line: make bench-cpus records it */
	print_message("{\"cpus\": %d, \"sent\": %llu, \"passed\": %llu, "
		      "\"limit\": %d}\n", ncpu, (unsigned long long)sent,
		      (unsigned long long)s.passed, SL_RACE_LIMIT);
	assert_int_equal(s.passed + s.dropped, sent);
	assert_true(s.passed >= (__u64)SL_RACE_LIMIT);
	assert_true(s.passed <= (__u64)SL_RACE_LIMIT + ncpu - 1);
	free(th);
	free(r);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_limit_two_cpus_node_total_at_limit),
		T(test_limit_concurrent_cpus_at_most_one_extra_each),
	};
#undef T

	/* SL_TEST_FILTER=test_limit_concurrent*: one test (make bench-cpus) */
	if (getenv("SL_TEST_FILTER"))
		cmocka_set_test_filter(getenv("SL_TEST_FILTER"));
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
