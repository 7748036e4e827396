// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: instance_fixture */
/*
 * A table sized for N sources holds N, through the real BPF object
 * (BPF_PROG_TEST_RUN, private instance, model clock):
 *
 * N IPv4 sources, every one over its limit (1 packet per 60 s), each
 * sending a packet in turn, round after round, a new source every model
 * microsecond, into a client table opened with --clients N. Warm-up is
 * three rounds: the first packet of a source is within its limit, and a
 * source whose probation entry another newcomer displaced at its first
 * packet (include/sl_newcomer.h) needs one more packet to be promoted.
 * After it, a round in the same order and a round in a random order pass
 * nothing, every source holds a state (none evicted), and nothing failed
 * open.
 *
 * N is 100,000, then 1,000,000: counts that are no multiple of the LRU's
 * refill batch, so that the last refill finds the common free list
 * short. Rounds alternate between CPUs 0 and 1 in blocks of 1,000
 * packets when both are there, so that both CPUs' free lists of the LRU
 * hash are taken from.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <cmocka.h>

#include "slicelimit.h"
#include "sl_key.h"
#include "instance/instance.h"
#include "instance/instance_maps.h"
#include "replay/request_packet.h"
#include "instance_fixture.h"

#define T0		(20000ULL * 60000)
#define BASE4		0x0ac80000u	/* 10.200.0.0, as bench/macro */
#define WARMUP_ROUNDS	3
#define CPU_BLOCK	1000u

struct fixture {
	struct sl_instance in;
	unsigned n;		/* sources */
	unsigned *order;	/* the round's order of sources */
	__u64 sent;		/* packets so far: the model clock */
	__u32 rule_id;
	int cpu;		/* where the thread is pinned, -1: not yet */
	bool two_cpus;
};

static int setup(void **state, unsigned n)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->n = n;
	f->order = calloc(f->n, sizeof(*f->order));
	if (!f->order || sl_test_open_instance(&f->in, f->n, T0)) {
		free(f->order);
		free(f);
		return -1;
	}
	f->cpu = -1;
	f->two_cpus = CPU_ISSET(0, &sl_test_initial_cpus) &&
		      CPU_ISSET(1, &sl_test_initial_cpus);
	*state = f;
	return 0;
}

static int setup_100k(void **state)
{
	return setup(state, 100000);
}

static int setup_1m(void **state)
{
	return setup(state, 1000000);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	sl_instance_close(&f->in);
	free(f->order);
	free(f);
	sl_test_restore_cpus();
	return 0;
}

static struct sl_addr source(unsigned i)
{
	__u32 a = BASE4 + i;
	struct sl_addr x = { .byte = { [10] = 0xff, [11] = 0xff, [12] = a >> 24,
				       [13] = a >> 16, [14] = a >> 8, [15] = a } };
	return x;
}

/* One round: every source once, in f->order. Returns the packets passed. */
static unsigned round_of(struct fixture *f)
{
	static const struct sl_addr dst = { .byte = { [10] = 0xff, [11] = 0xff,
						      [12] = 192, [13] = 0,
						      [14] = 2, [15] = 1 } };
	unsigned k, passed = 0;

	for (k = 0; k < f->n; k++) {
		struct sl_addr a = source(f->order[k]);
		uint8_t pkt[SL_PACKET_MAX];
		size_t len = sl_packet_udp(pkt, &a, &dst, 40000, 3000, 0);
		int cpu = f->two_cpus ? (int)(k / CPU_BLOCK % 2) : 0, pin = -1;
		__u32 retval = ~0U;
		int err;

		/* re-pin only when the CPU changes: per packet it would
		 * cost more than the run
		 */
		if (cpu != f->cpu)
			pin = f->cpu = cpu;
		sl_instance_set_time(&f->in, T0 + f->sent++ / 1000);
		err = sl_instance_run(&f->in, false, pin, pkt, len, 1, &retval,
				      NULL);
		if (err)
			fail_msg("xdp test run: %s", strerror(-err));
		passed += retval == XDP_PASS;
	}
	return passed;
}

/* Sources holding a client state, by lookup (a syscall lookup does not
 * mark an LRU entry used).
 */
static unsigned states_held(struct fixture *f)
{
	struct sl_client c;
	unsigned i, held = 0;

	for (i = 0; i < f->n; i++) {
		struct sl_client_key key = { .addr = source(i),
					     .rule_id = f->rule_id };

		held += !bpf_map_lookup_elem(f->in.maps.clients, &key, &c);
	}
	return held;
}

static void over_limit_sources_pass_nothing_after_warmup(void **state)
{
	struct fixture *f = *state;
	unsigned i, r, passed[WARMUP_ROUNDS], in_order, shuffled, held;
	struct sl_global_stats gs;

	sl_test_apply(&f->in, "rules:\n"
			      "  - {name: over, protocol: udp, ports: 3000, limit: 1, window: 60s}\n");
	f->rule_id = sl_test_live_rule(&f->in, "over").id;
	for (i = 0; i < f->n; i++)
		f->order[i] = i;
	for (r = 0; r < WARMUP_ROUNDS; r++)
		passed[r] = round_of(f);
	in_order = round_of(f);
	srandom(28);
	for (i = f->n - 1; i > 0; i--) {
		unsigned j = random() % (i + 1), t = f->order[i];

		f->order[i] = f->order[j];
		f->order[j] = t;
	}
	shuffled = round_of(f);
	held = states_held(f);
	gs = sl_test_global_stats(&f->in);
	print_message("leak: %u sources, --clients %u (sl_clients %u entries, "
		      "%u probation buckets), %s: passed per round %u %u %u | "
		      "after warm-up %u in order, %u shuffled; states held %u; "
		      "displaced %llu, evicted %llu\n", f->n, f->n,
		      sl_map_capacity(f->in.maps.clients),
		      sl_map_capacity(f->in.maps.newcomers),
		      f->two_cpus ? "CPUs 0 and 1" : "CPU 0", passed[0],
		      passed[1], passed[2], in_order, shuffled, held,
		      (unsigned long long)gs.newcomers_displaced,
		      (unsigned long long)(gs.new_clients - held));
	/* what status reports and an upgrade reads back: --clients */
	assert_int_equal(sl_clients_of_table(sl_map_capacity(f->in.maps.clients),
					     f->in.maps.nr_cpus), f->n);
	assert_int_equal(passed[0], f->n);	/* each first packet fits */
	assert_int_equal(in_order, 0);
	assert_int_equal(shuffled, 0);
	assert_int_equal(held, f->n);
	assert_int_equal(gs.fail_open, 0);
}

static void test_leak_100k_over_limit_sources_pass_nothing_after_warmup(void **state)
{
	over_limit_sources_pass_nothing_after_warmup(state);
}

static void test_leak_1m_over_limit_sources_pass_nothing_after_warmup(void **state)
{
	over_limit_sources_pass_nothing_after_warmup(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_leak_100k_over_limit_sources_pass_nothing_after_warmup,
			setup_100k, teardown),
		cmocka_unit_test_setup_teardown(
			test_leak_1m_over_limit_sources_pass_nothing_after_warmup,
			setup_1m, teardown),
	};

	sl_test_save_cpus();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
