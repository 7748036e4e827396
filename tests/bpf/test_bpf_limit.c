// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: bpf_fixture pkt_builder instance_fixture */
/*
 * Enforcement under the model clock on one CPU: limits, windows,
 * shadow mode, what is counted (SYNs, bytes) and the client keys.
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

/* ---- 3. enforcement under the model clock ------------------------------ */

static void test_limit_double_rate_cut_to_limit(void **state)
{
	struct fixture *f = *state;
	unsigned acc[6], w;
	struct sl_rule_stats s;
	struct pkt p;

	apply(f, "rules:\n"
		 "  - {name: api, protocol: udp, ports: 53, limit: 10, window: 1s, slices: 10}\n");
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 0);
	/* 20 per window: twice the limit */
	send_steady(f, &p, T0, 50, 1000, 6, 0, acc);
	for (w = 0; w < 6; w++)
		if (acc[w] != 10)
			fail_msg("window %u: %u accepted, expected 10", w, acc[w]);
	s = stats_of(f, "api");
	assert_int_equal(s.passed, 60);
	assert_int_equal(s.dropped, 60);
}

static void test_limit_at_or_below_limit_never_dropped(void **state)
{
	static const unsigned gaps[] = { 100, 111, 250 };	/* 10, 9, 4 /s */
	struct fixture *f = *state;
	unsigned acc[5], i;
	__u64 start = T0;
	struct pkt p;

	apply(f, "rules:\n"
		 "  - {name: api, protocol: udp, ports: 53, limit: 10, window: 1s}\n");
	for (i = 0; i < 3; i++) {
		char src[32];

		snprintf(src, sizeof(src), "192.0.2.%u", i + 1);
		mk(&p, src, "203.0.113.1", UDP, 53, 0, 0);
		send_steady(f, &p, start, gaps[i], 1000, 5, 0, acc);
		start += 5000;
	}
	assert_int_equal(stats_of(f, "api").dropped, 0);
	assert_int_equal(stats_of(f, "api").passed, 50 + 46 + 20);
}

static void test_limit_window_slides_with_model_clock(void **state)
{
	struct fixture *f = *state;
	struct pkt p;

	apply(f, "rules:\n"
		 "  - {name: api, protocol: udp, ports: 53, limit: 3, window: 10s}\n");
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 0);
	set_time(f, T0);
	assert_int_equal(run(f, &p), PASS);
	set_time(f, T0 + 4000);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), DROP);
	set_time(f, T0 + 9999);
	assert_int_equal(run(f, &p), DROP);
	/* the accept at T0 leaves the window; the two at T0+4s do not */
	set_time(f, T0 + 10000);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), DROP);
	set_time(f, T0 + 13999);
	assert_int_equal(run(f, &p), DROP);
	set_time(f, T0 + 14000);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), DROP);
	/* a whole window of silence: the full allowance again */
	set_time(f, T0 + 40000);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), DROP);
}

static void test_limit_shadow_counts_never_drops(void **state)
{
	struct fixture *f = *state;
	struct sl_rule_stats s;
	unsigned i;
	struct pkt p;

	apply(f, "rules:\n"
		 "  - {name: api, protocol: udp, ports: 53, limit: 3, action: shadow}\n");
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 64);
	for (i = 0; i < 10; i++)
		assert_int_equal(run_len(f, i % 2, -1, &p, p.len), PASS);
	s = stats_of(f, "api");
	assert_int_equal(s.passed, 3);
	assert_int_equal(s.shadow_dropped, 7);
	assert_int_equal(s.dropped, 0);
	assert_int_equal(s.dropped_bytes, 0);
	assert_int_equal(s.passed_bytes, 10 * 64);
}

static void test_limit_syn_counts_only_syn_without_ack(void **state)
{
	struct fixture *f = *state;
	struct sl_rule_stats s;
	struct pkt syn, ack, synack, fin, rst;
	unsigned i;

	apply(f, "rules:\n"
		 "  - {name: conn, protocol: tcp, ports: 443, limit: 2, unit: syn}\n");
	mk(&syn, "192.0.2.1", "203.0.113.1", TCP, 443, SYN, 0);
	mk(&ack, "192.0.2.1", "203.0.113.1", TCP, 443, ACK | PSH, 200);
	mk(&synack, "192.0.2.1", "203.0.113.1", TCP, 443, SYN | ACK, 0);
	mk(&fin, "192.0.2.1", "203.0.113.1", TCP, 443, FIN | ACK, 0);
	mk(&rst, "192.0.2.1", "203.0.113.1", TCP, 443, RST, 0);
	/* traffic on established connections spends nothing */
	for (i = 0; i < 5; i++)
		assert_int_equal(run(f, &ack), PASS);
	assert_int_equal(run(f, &synack), PASS);
	assert_int_equal(run(f, &syn), PASS);
	assert_int_equal(run(f, &syn), PASS);
	assert_int_equal(run(f, &syn), DROP);
	/* over the SYN limit: everything else still passes */
	assert_int_equal(run(f, &ack), PASS);
	assert_int_equal(run(f, &synack), PASS);
	assert_int_equal(run(f, &fin), PASS);
	assert_int_equal(run(f, &rst), PASS);
	assert_int_equal(run_len(f, true, -1, &ack, ack.len), PASS);
	assert_int_equal(run_len(f, true, -1, &syn, syn.len), DROP);
	s = stats_of(f, "conn");
	assert_int_equal(s.dropped, 2);
	assert_int_equal(s.passed, 5 + 1 + 2 + 5);
}

static void test_limit_bytes_counts_bytes(void **state)
{
	struct fixture *f = *state;
	struct sl_rule_stats s;
	struct pkt p, small;

	apply(f, "rules:\n"
		 "  - {name: bulk, protocol: udp, ports: 53, limit: 300, unit: bytes, window: 10s}\n");
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 100);
	mk(&small, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 60);
	assert_int_equal(p.len, 100);
	/* 300 bytes: three 100-byte frames, not 300 packets */
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run_len(f, true, -1, &p, p.len), PASS);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), DROP);
	assert_int_equal(run(f, &small), DROP);
	s = stats_of(f, "bulk");
	assert_int_equal(s.passed, 3);
	assert_int_equal(s.passed_bytes, 300);
	assert_int_equal(s.dropped, 2);
	assert_int_equal(s.dropped_bytes, 160);
	/* the window moves on: the bytes are available again */
	set_time(f, T0 + 10000);
	assert_int_equal(run(f, &small), PASS);
}

/* "Reject the request that goes over the limit" (design study): a frame
 * whose bytes would take the window past the limit is dropped, so the
 * bytes accepted in a window never exceed the limit.
 */
static void test_limit_bytes_never_exceed_limit(void **state)
{
	static const struct {
		unsigned limit, frame;
	} rows[] = {
		{ 250, 100 },		/* 2 fit; a third makes 300 */
		{ 100, 500 },		/* none fits */
		{ 1000, 64 },		/* 15 fit (960); a 16th makes 1024 */
	};
	struct fixture *f = *state;
	unsigned i, j, bad = 0;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		unsigned accepted = 0;
		char yaml[200];
		struct pkt p;

		snprintf(yaml, sizeof(yaml),
			 "rules:\n  - {name: bulk, protocol: udp, ports: 53, limit: %u, unit: bytes, window: 10s}\n",
			 rows[i].limit);
		apply(f, yaml);
		mk(&p, "192.0.2.1", "203.0.113.1", UDP, 53, 0, rows[i].frame);
		set_time(f, T0 + i * 100000);
		for (j = 0; j < 20; j++)
			accepted += run(f, &p) == PASS ? p.len : 0;
		if (accepted > rows[i].limit) {
			print_error("limit %u bytes, %u-byte frames: %u bytes accepted in one window\n",
				    rows[i].limit, rows[i].frame, accepted);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

static void test_limit_key_ipv4_prefix_24_shares_allowance(void **state)
{
	static const struct {
		const char *src;
		uint16_t dport;
		enum verdict want;
	} rows[] = {
		{ "192.0.2.1", 3000, PASS }, { "192.0.2.2", 3000, PASS },
		{ "192.0.2.1", 3000, PASS }, { "192.0.2.200", 3000, PASS },
		{ "192.0.2.2", 3000, DROP }, { "192.0.2.77", 3000, DROP },
		{ "192.0.3.1", 3000, PASS },		/* the next /24 */
		{ "2001:db8:1:2::1", 3000, PASS }, { "2001:db8:1:3::1", 3000, PASS },
		{ "2001:db8:1:ffff::1", 3000, PASS }, { "2001:db8:1:4::9", 3000, PASS },
		{ "2001:db8:1:5::9", 3000, DROP },	/* same /48 */
		{ "2001:db8:2::1", 3000, PASS },
		/* default key /32: separate allowances of 1 */
		{ "192.0.2.1", 3001, PASS }, { "192.0.2.2", 3001, PASS },
		{ "192.0.2.1", 3001, DROP },
	};
	struct fixture *f = *state;
	unsigned i;

	apply(f, "rules:\n"
		 "  - {name: net, protocol: udp, ports: 3000, limit: 4,\n"
		 "     key: {ipv4_prefix: 24, ipv6_prefix: 48}}\n"
		 "  - {name: host, protocol: udp, ports: 3001, limit: 1}\n");
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		bool v6 = strchr(rows[i].src, ':');
		struct pkt p;

		mk(&p, rows[i].src, v6 ? "2001:db8::53" : "203.0.113.1", UDP,
		   rows[i].dport, 0, 0);
		if (run(f, &p) != rows[i].want)
			fail_msg("row %u: %s -> %u: expected %s", i, rows[i].src,
				 rows[i].dport, verdict_name(rows[i].want));
	}
	/* states: 192.0.2.0/24 and 2001:db8:1::/48 (each seen again), and
	 * host 192.0.2.1; on probation, seen once: 192.0.3.0/24,
	 * 2001:db8:2::/48 and host 192.0.2.2
	 */
	assert_int_equal(clients_of(f, id_of(f, "net")), 2);
	assert_int_equal(clients_of(f, id_of(f, "host")), 1);
	assert_int_equal(sl_test_newcomers_held(&f->in), 3);
}

/* A per-address rule that continues into a per-/24 aggregate rule: each
 * address keeps its own allowance, and the /24 as a whole its own, so a
 * flood that rotates addresses inside one prefix is still limited. A drop
 * by the first rule does not count against the second.
 */
static void test_limit_continue_stacks_prefix_rule_on_address_rule(void **state)
{
	struct fixture *f = *state;
	struct sl_rule_stats host, net;
	unsigned i, passed = 0;
	char src[32];
	struct pkt p;

	apply(f, "rules:\n"
		 "  - {name: host, protocol: udp, ports: 3000, limit: 5, continue: true}\n"
		 "  - {name: net, protocol: udp, ports: 3000, limit: 8,\n"
		 "     key: {ipv4_prefix: 24}}\n"
		 "  - {name: other, protocol: udp, ports: 3000-3001, limit: 1}\n");
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 3000, 0, 0);
	for (i = 0; i < 10; i++)
		passed += run(f, &p) == PASS;
	assert_int_equal(passed, 5);		/* host's limit, 5 of net's 8 */
	mk(&p, "192.0.2.2", "203.0.113.1", UDP, 3000, 0, 0);
	for (passed = 0, i = 0; i < 10; i++)
		passed += run(f, &p) == PASS;
	assert_int_equal(passed, 3);		/* what the /24 has left */
	/* a rotating flood: one packet from each of 100 addresses */
	for (passed = 0, i = 0; i < 100; i++) {
		snprintf(src, sizeof(src), "198.51.100.%u", i + 1);
		mk(&p, src, "203.0.113.1", UDP, 3000, 0, 0);
		passed += run(f, &p) == PASS;
	}
	assert_int_equal(passed, 8);		/* the /24's limit */
	host = stats_of(f, "host");
	net = stats_of(f, "net");
	assert_int_equal(host.passed, 5 + 5 + 100);
	assert_int_equal(host.dropped, 5 + 5);
	assert_int_equal(net.passed, 5 + 3 + 8);
	assert_int_equal(net.dropped, 2 + 92);
	/* net does not continue: the third rule never sees these packets */
	assert_int_equal(stats_of(f, "other").passed, 0);
}

/* A chain of `continue` rules as long as a rule set can be runs to its
 * end: every rule of it counts every packet, on both entry points, and a
 * drop by the last rule is the packet's verdict.
 */
static void test_limit_continue_chain_of_every_rule_counts_in_each(void **state)
{
	struct fixture *f = *state;
	size_t cap = SL_MAX_RULES * 96 + 64, at;
	char *yaml = malloc(cap), name[32];
	unsigned i, tc, bad = 0;
	struct pkt p;

	assert_non_null(yaml);
	at = snprintf(yaml, cap, "rules:\n");
	for (i = 0; i < SL_MAX_RULES; i++)
		at += snprintf(yaml + at, cap - at,
			       "  - {name: r%u, protocol: udp, ports: 4000, limit: %u%s}\n",
			       i, i == SL_MAX_RULES - 1 ? 16 : 100,
			       i == SL_MAX_RULES - 1 ? "" : ", continue: true");
	apply(f, yaml);
	free(yaml);
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 4000, 0, 0);
	for (tc = 0; tc <= 1; tc++)
		for (i = 0; i < 6; i++)
			assert_int_equal(run_len(f, tc, 0, &p, p.len), PASS);
	/* the last rule's limit of 16 is reached at the 17th packet */
	for (i = 0; i < 4; i++)
		assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), DROP);
	for (i = 0; i < SL_MAX_RULES; i++) {
		struct sl_rule_stats s;

		snprintf(name, sizeof(name), "r%u", i);
		s = stats_of(f, name);
		if (s.passed + s.dropped != 17 ||
		    s.dropped != (i == SL_MAX_RULES - 1)) {
			if (bad++ < 5)
				print_error("%s: passed %llu dropped %llu\n", name,
					    (unsigned long long)s.passed,
					    (unsigned long long)s.dropped);
		}
	}
	assert_int_equal(bad, 0);
}

/* The clock stepping back (an NTP step of TAI; the model clock here)
 * must not forget the counts: an abusive client stays limited. Neither a
 * step back nor forward may reject a client well within its limit.
 */
static void test_limit_clock_steps_keep_counts(void **state)
{
	static const unsigned algos[] = {
		SL_ALGO_SLIDING, SL_ALGO_SLIDING_PLAIN, SL_ALGO_FIXED,
		SL_ALGO_SLIDING_LOG, SL_ALGO_SLIDING_COUNTER,
		SL_ALGO_TOKEN_BUCKET,
	};
	struct fixture *f = *state;
	unsigned a, i, passed;
	const char *name;
	char yaml[256];
	struct pkt abusive, steady;
	__u64 t;

	mk(&abusive, "192.0.2.66", "203.0.113.1", UDP, 3000, 0, 0);
	mk(&steady, "192.0.2.77", "203.0.113.1", UDP, 3000, 0, 0);
	for (a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
		name = sl_algorithm_name(algos[a]);
		snprintf(yaml, sizeof(yaml),
			 "rules:\n  - {name: %s, protocol: udp, ports: 3000, "
			 "limit: 10, window: 60s, algorithm: %s}\n", name, name);
		apply(f, yaml);
		t = T0 + 30000;
		set_time(f, t);
		for (passed = 0, i = 0; i < 20; i++)
			passed += run(f, &abusive) == PASS;
		if (passed != 10)
			fail_msg("%s: %u of 20 passed before the step", name, passed);
		set_time(f, t - 5000);	/* back 5 s */
		if (run(f, &abusive) != DROP)
			fail_msg("%s: a step back of 5 s forgot the abusive client's count",
				 name);
		/* the count itself, not only the kernel's cached verdict */
		{
			struct sl_rule rule = live_rule(f, name);
			struct sl_client_view v;
			struct sl_client_key key;
			struct sl_addr who;

			assert_int_equal(sl_parse_addr("192.0.2.66", &who), 0);
			sl_client_key_make(&key, &rule, &who, htons(3000));
			assert_int_equal(sl_client_view_read(&f->in.maps, &rule, &key,
							     t - 5000, &v), 0);
			if (v.used < 10)
				fail_msg("%s: after a step back of 5 s the count is %llu, not 10",
					 name, (unsigned long long)v.used);
		}
		/* one request every 12 s (half the limit rate) for 3 minutes,
		 * with a step back of 3 s and, later, forward of 3 s
		 */
		for (i = 0; i < 15; i++) {
			__u64 at = t + 1000 + i * 12000;

			if (i >= 5)
				at -= 3000;
			if (i >= 10)
				at += 6000;
			set_time(f, at);
			if (run(f, &steady) != PASS)
				fail_msg("%s: request %u of a client at half its limit "
					 "rejected after a clock step", name, i);
		}
	}
}

static void test_limit_per_port_keys_separate_ports(void **state)
{
	static const struct {
		uint16_t dport;
		enum verdict want;
	} rows[] = {
		{ 1000, PASS }, { 1000, PASS }, { 1000, DROP },
		{ 1001, PASS }, { 1001, PASS }, { 1001, DROP },	/* own count */
		{ 1010, PASS },
		{ 2000, PASS }, { 2000, PASS }, { 2001, DROP },	/* shared */
	};
	struct fixture *f = *state;
	unsigned i;

	apply(f, "rules:\n"
		 "  - {name: per-port, protocol: udp, ports: 1000-1010, limit: 2,\n"
		 "     key: {per_port: true}}\n"
		 "  - {name: shared, protocol: udp, ports: 2000-2010, limit: 2}\n");
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct pkt p;

		mk(&p, "192.0.2.1", "203.0.113.1", UDP, rows[i].dport, 0, 0);
		if (run(f, &p) != rows[i].want)
			fail_msg("row %u: port %u: expected %s", i,
				 rows[i].dport, verdict_name(rows[i].want));
	}
	/* ports 1000 and 1001 have states; 1010, seen once, is on probation */
	assert_int_equal(clients_of(f, id_of(f, "per-port")), 2);
	assert_int_equal(clients_of(f, id_of(f, "shared")), 1);
	assert_int_equal(sl_test_newcomers_held(&f->in), 1);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_limit_double_rate_cut_to_limit),
		T(test_limit_at_or_below_limit_never_dropped),
		T(test_limit_window_slides_with_model_clock),
		T(test_limit_shadow_counts_never_drops),
		T(test_limit_syn_counts_only_syn_without_ack),
		T(test_limit_bytes_counts_bytes),
		T(test_limit_bytes_never_exceed_limit),
		T(test_limit_key_ipv4_prefix_24_shares_allowance),
		T(test_limit_per_port_keys_separate_ports),
		T(test_limit_continue_stacks_prefix_rule_on_address_rule),
		T(test_limit_continue_chain_of_every_rule_counts_in_each),
		T(test_limit_clock_steps_keep_counts),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
