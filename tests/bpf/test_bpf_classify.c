// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: bpf_fixture pkt_builder instance_fixture */
/*
 * Classification: which rule a packet meets, by protocol, ports,
 * prefixes and priority; exempt and unmatched traffic.
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

/* ---- 2. classification -------------------------------------------------- */

struct class_row {
	const char *desc;
	const char *src, *dst;
	int l4;
	uint16_t dport;
	const char *rule;	/* NULL: no rule, no_rule counter */
};

static void check_classes(struct fixture *f, const struct class_row *rows,
			  unsigned n)
{
	unsigned i, bad = 0;
	int tc;

	for (tc = 0; tc <= 1; tc++)
		for (i = 0; i < n; i++) {
			const struct class_row *r = &rows[i];
			const char *got;
			struct pkt p;

			mk(&p, r->src, r->dst, r->l4, r->dport, SYN, 0);
			got = matched(f, tc, &p);
			if ((got == NULL) != (r->rule == NULL) ||
			    (got && strcmp(got, r->rule))) {
				print_error("%s: %s: matched %s, expected %s\n",
					    tc ? "tc" : "xdp", r->desc,
					    got ? got : "no rule",
					    r->rule ? r->rule : "no rule");
				bad++;
			}
		}
	assert_int_equal(bad, 0);
}

#define ROWS(a) a, sizeof(a) / sizeof(a[0])
#define UDP IPPROTO_UDP
#define TCP IPPROTO_TCP
#define ICMP IPPROTO_ICMP

static void test_classify_protocol_and_ports(void **state)
{
	static const struct class_row rows[] = {
		{ "udp 53", "192.0.2.1", "203.0.113.1", UDP, 53, "dns" },
		{ "udp6 53", "2001:db8::1", "2001:db8::2", UDP, 53, "dns" },
		{ "tcp 53", "192.0.2.1", "203.0.113.1", TCP, 53, NULL },
		{ "tcp 80", "192.0.2.1", "203.0.113.1", TCP, 80, "web" },
		{ "udp 80", "192.0.2.1", "203.0.113.1", UDP, 80, NULL },
		{ "tcp 7999", "192.0.2.1", "203.0.113.1", TCP, 7999, NULL },
		{ "tcp 8000", "192.0.2.1", "203.0.113.1", TCP, 8000, "range" },
		{ "tcp 8050", "192.0.2.1", "203.0.113.1", TCP, 8050, "range" },
		{ "tcp6 8100", "2001:db8::1", "2001:db8::2", TCP, 8100, "range" },
		{ "tcp 8101", "192.0.2.1", "203.0.113.1", TCP, 8101, NULL },
		{ "udp 8050", "192.0.2.1", "203.0.113.1", UDP, 8050, NULL },
		{ "icmp", "192.0.2.1", "203.0.113.1", ICMP, 0, "ping" },
		{ "icmpv6", "2001:db8::1", "2001:db8::2", ICMP, 0, "ping" },
		{ "udp 7, protocol any", "192.0.2.1", "203.0.113.1", UDP, 7, "any-7" },
		{ "tcp 7, protocol any", "192.0.2.1", "203.0.113.1", TCP, 7, "any-7" },
		{ "tcp 0", "192.0.2.1", "203.0.113.1", TCP, 0, NULL },
		{ "udp 65535", "192.0.2.1", "203.0.113.1", UDP, 65535, "high" },
		{ "udp 65534", "192.0.2.1", "203.0.113.1", UDP, 65534, NULL },
	};
	struct fixture *f = *state;

	apply(f, "rules:\n"
		 "  - {name: dns, protocol: udp, ports: 53, limit: 3}\n"
		 "  - {name: web, protocol: tcp, ports: 80, limit: 3}\n"
		 "  - {name: range, protocol: tcp, ports: 8000-8100, limit: 3}\n"
		 "  - {name: ping, protocol: icmp, limit: 3}\n"
		 "  - {name: any-7, ports: 7, limit: 3}\n"
		 "  - {name: high, protocol: udp, ports: 65535, limit: 3}\n");
	check_classes(f, ROWS(rows));
}

static void test_classify_source_and_destination_prefixes(void **state)
{
	static const struct class_row rows[] = {
		{ "v4 source in /24", "198.51.100.7", "192.0.2.1", UDP, 1000, "src4" },
		{ "v4 source outside /24", "198.51.101.7", "192.0.2.1", UDP, 1000, NULL },
		{ "v4 destination host", "192.0.2.1", "203.0.113.7", UDP, 1000, "dst4" },
		{ "v4 destination next host", "192.0.2.1", "203.0.113.8", TCP, 1000, NULL },
		{ "v4 both: first rule wins", "198.51.100.7", "203.0.113.7", UDP, 1000, "src4" },
		{ "v6 source in /48", "2001:db8:aa:1::5", "2001:db8::1", UDP, 1000, "src6" },
		{ "v6 source outside /48", "2001:db8:ab::5", "2001:db8::1", UDP, 1000, NULL },
		{ "v6 destination in /64", "2001:db8::1", "2001:db8:bb::9", TCP, 1000, "dst6" },
		{ "v6 destination outside /64", "2001:db8::1", "2001:db8:bb:1::9", UDP, 1000, NULL },
		{ "v4 source and destination", "10.1.1.1", "10.255.3.3", UDP, 1000, "both" },
		{ "v4 destination outside", "10.1.1.1", "10.254.3.3", UDP, 1000, NULL },
		{ "v4 source outside", "11.1.1.1", "10.255.3.3", UDP, 1000, NULL },
		{ "v4 in /16 not /24", "198.51.7.7", "192.0.2.1", TCP, 22, "wide" },
		{ "v4 in /24 and /16, tcp", "198.51.100.7", "192.0.2.1", TCP, 22, "wide" },
	};
	struct fixture *f = *state;

	/* "wide" is only reachable for TCP inside the /24 through the /24's
	 * LPM entry: the longest match must carry covering prefixes' rules.
	 */
	apply(f, "rules:\n"
		 "  - {name: src4, protocol: udp, source: 198.51.100.0/24, limit: 3}\n"
		 "  - {name: dst4, destination: 203.0.113.7, protocol: udp, limit: 3}\n"
		 "  - {name: src6, source: '2001:db8:aa::/48', limit: 3}\n"
		 "  - {name: dst6, destination: '2001:db8:bb::/64', limit: 3}\n"
		 "  - {name: both, source: 10.0.0.0/8, destination: 10.255.0.0/16, limit: 3}\n"
		 "  - {name: wide, protocol: tcp, source: 198.51.0.0/16, limit: 3}\n");
	check_classes(f, ROWS(rows));
}

static void test_classify_priority_first_match_wins(void **state)
{
	static const struct class_row rows[] = {
		{ "narrow beats earlier broad", "10.1.2.3", "192.0.2.1", UDP, 53, "narrow" },
		{ "outside narrow's source", "192.0.2.9", "192.0.2.1", UDP, 53, "broad" },
		{ "outside narrow's port", "10.1.2.3", "192.0.2.1", UDP, 54, "broad" },
		{ "only wide matches tcp", "10.1.2.3", "192.0.2.1", TCP, 80, "wide" },
		{ "equal priority: file order", "192.0.2.9", "192.0.2.1", TCP, 80, "tie-a" },
		{ "icmp from 10/8", "10.1.2.3", "192.0.2.1", ICMP, 0, "wide" },
	};
	static const struct class_row swapped[] = {
		{ "narrow now after broad", "10.1.2.3", "192.0.2.1", UDP, 53, "broad" },
		{ "tie order follows file", "192.0.2.9", "192.0.2.1", TCP, 80, "tie-b" },
	};
	struct fixture *f = *state;
	struct sl_rule_stats narrow, broad;

	apply(f, "rules:\n"
		 "  - {name: broad, priority: 20, protocol: udp, limit: 3}\n"
		 "  - {name: narrow, priority: 10, protocol: udp, ports: 53, source: 10.0.0.0/8, limit: 3}\n"
		 "  - {name: wide, priority: 30, source: 10.0.0.0/8, limit: 3}\n"
		 "  - {name: tie-a, priority: 40, protocol: tcp, limit: 3}\n"
		 "  - {name: tie-b, priority: 40, protocol: tcp, limit: 3}\n");
	check_classes(f, ROWS(rows));

	apply(f, "rules:\n"
		 "  - {name: broad, priority: 20, protocol: udp, limit: 3}\n"
		 "  - {name: narrow, priority: 30, protocol: udp, ports: 53, source: 10.0.0.0/8, limit: 3}\n"
		 "  - {name: tie-b, priority: 40, protocol: tcp, limit: 3}\n"
		 "  - {name: tie-a, priority: 40, protocol: tcp, limit: 3}\n");
	narrow = stats_of(f, "narrow");
	broad = stats_of(f, "broad");
	check_classes(f, ROWS(swapped));
	/* the two overlapping rules: only the winner's counters move */
	assert_int_equal(stats_of(f, "narrow").passed + stats_of(f, "narrow").dropped,
			 narrow.passed + narrow.dropped);
	assert_int_equal(stats_of(f, "broad").passed + stats_of(f, "broad").dropped,
			 broad.passed + broad.dropped + 2);
}

struct exempt_row {
	const char *desc;
	const char *src;
	uint16_t dport;
	unsigned sends;
	const char *rule;
	unsigned exempt, passed, dropped;	/* rule counter deltas */
};

static void test_classify_exempt_never_dropped(void **state)
{
	static const struct exempt_row rows[] = {
		{ "in api's /8, inside web's /24", "10.1.2.3", 53, 5, "api", 5, 0, 0 },
		{ "in api's /8", "10.9.9.9", 53, 5, "api", 5, 0, 0 },
		{ "in api's v6 /48", "2001:db8:e::1", 53, 4, "api", 4, 0, 0 },
		{ "api: not exempt", "192.0.2.1", 53, 3, "api", 0, 1, 2 },
		{ "api: v6 not exempt", "2001:db8:f::1", 53, 3, "api", 0, 1, 2 },
		{ "web exempts its /24", "10.1.2.200", 54, 4, "web", 4, 0, 0 },
		{ "web: api's /8 is not web's", "10.9.9.9", 54, 3, "web", 0, 1, 2 },
		{ "other exempts nothing", "10.1.2.3", 55, 3, "other", 0, 1, 2 },
	};
	struct fixture *f = *state;
	unsigned i, j, bad = 0;

	apply(f, "rules:\n"
		 "  - {name: api, protocol: udp, ports: 53, limit: 1,\n"
		 "     exempt: [10.0.0.0/8, '2001:db8:e::/48']}\n"
		 "  - {name: web, protocol: udp, ports: 54, limit: 1, exempt: [10.1.2.0/24]}\n"
		 "  - {name: other, protocol: udp, ports: 55, limit: 1}\n");
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct exempt_row *r = &rows[i];
		bool v6 = strchr(r->src, ':');
		struct sl_rule_stats s0 = stats_of(f, r->rule), s1;
		unsigned drops = 0;
		struct pkt p;

		mk(&p, r->src, v6 ? "2001:db8::53" : "192.0.2.53", UDP,
		   r->dport, 0, 0);
		for (j = 0; j < r->sends; j++)
			drops += run(f, &p) == DROP;
		s1 = stats_of(f, r->rule);
		if (s1.exempt - s0.exempt != r->exempt ||
		    s1.passed - s0.passed != r->passed ||
		    s1.dropped - s0.dropped != r->dropped ||
		    drops != r->dropped) {
			print_error("%s: exempt +%llu passed +%llu dropped +%llu (verdict drops %u), expected +%u +%u +%u\n",
				    r->desc,
				    (unsigned long long)(s1.exempt - s0.exempt),
				    (unsigned long long)(s1.passed - s0.passed),
				    (unsigned long long)(s1.dropped - s0.dropped),
				    drops, r->exempt, r->passed, r->dropped);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

static void test_classify_no_match_counts_no_rule(void **state)
{
	struct fixture *f = *state;
	struct sl_global_stats g0, g1;
	struct pkt p;

	/* a fresh instance has no rules: every IP packet is no_rule */
	g0 = global_stats(f);
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 0);
	assert_int_equal(run(f, &p), PASS);
	mk(&p, "2001:db8::1", "2001:db8::2", TCP, 443, SYN, 0);
	assert_int_equal(run(f, &p), PASS);
	g1 = global_stats(f);
	assert_int_equal(g1.no_rule - g0.no_rule, 2);
	assert_int_equal(g1.packets - g0.packets, 2);

	apply(f, "rules:\n  - {name: dns, protocol: udp, ports: 53, limit: 1}\n");
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 5353, 0, 0);
	assert_null(matched(f, false, &p));
	mk(&p, "192.0.2.1", "203.0.113.1", ICMP, 0, 0, 0);
	assert_null(matched(f, true, &p));
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 0);
	assert_non_null(matched(f, false, &p));
	assert_string_equal(matched(f, true, &p), "dns");
}

/* `protocol: icmp` is echo requests: other ICMP types are other traffic
 * (an `any` rule's), and ICMP errors and link control meet no rule at
 * all, whatever rule could match their addresses.
 */
struct icmp_class_row {
	const char *desc;
	const char *src, *dst;
	uint8_t type;
	const char *rule;	/* NULL: no rule; "-": control, before any rule */
};

static void test_classify_icmp_rule_is_echo_requests(void **state)
{
	static const struct icmp_class_row rows[] = {
		{ "echo request", "192.0.2.1", "203.0.113.1", 8, "ping" },
		{ "icmpv6 echo request", "2001:db8::1", "2001:db8::2", 128, "ping" },
		{ "echo reply", "192.0.2.1", "203.0.113.1", 0, NULL },
		{ "icmpv6 echo reply", "2001:db8::1", "2001:db8::2", 129, NULL },
		{ "echo reply from 10/8", "10.1.2.3", "203.0.113.1", 0, "net10" },
		{ "icmpv6 echo request from 2001:db8:10::/48", "2001:db8:10::1",
		  "2001:db8::2", 128, "ping" },
		{ "icmpv6 echo reply from 2001:db8:10::/48", "2001:db8:10::1",
		  "2001:db8::2", 129, "net6" },
		{ "fragmentation needed from 10/8", "10.1.2.3", "203.0.113.1", 3, "-" },
		{ "neighbour solicitation from 2001:db8:10::/48", "2001:db8:10::1",
		  "2001:db8::2", 135, "-" },
		{ "neighbour advertisement", "2001:db8::1", "2001:db8::2", 136, "-" },
		{ "packet too big from 2001:db8:10::/48", "2001:db8:10::1",
		  "2001:db8::2", 2, "-" },
	};
	struct fixture *f = *state;
	unsigned i, bad = 0;
	int tc;

	apply(f, "rules:\n"
		 "  - {name: ping, protocol: icmp, limit: 3}\n"
		 "  - {name: net10, source: 10.0.0.0/8, limit: 3}\n"
		 "  - {name: net6, source: '2001:db8:10::/48', limit: 3}\n");
	for (tc = 0; tc <= 1; tc++)
		for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
			const struct icmp_class_row *r = &rows[i];
			struct sl_global_stats g0, g1;
			const char *got;
			struct pkt p = {};

			eth(&p);
			if (strchr(r->src, ':'))
				ip6_from(&p, r->src, r->dst);
			else
				ip4_from(&p, r->src, r->dst, 5, 0);
			icmp_type(&p, r->type);
			finish(&p);
			if (strcmp(r->rule ? r->rule : "", "-")) {
				got = matched(f, tc, &p);
				if ((got == NULL) != (r->rule == NULL) ||
				    (got && strcmp(got, r->rule))) {
					print_error("%s: %s: matched %s, expected %s\n",
						    tc ? "tc" : "xdp", r->desc,
						    got ? got : "no rule",
						    r->rule ? r->rule : "no rule");
					bad++;
				}
				continue;
			}
			g0 = global_stats(f);
			if (run_len(f, tc, -1, &p, p.len) != PASS)
				bad++;
			g1 = global_stats(f);
			if (g1.icmp_control - g0.icmp_control != 1 ||
			    g1.no_rule != g0.no_rule) {
				print_error("%s: %s: not passed as control\n",
					    tc ? "tc" : "xdp", r->desc);
				bad++;
			}
		}
	assert_int_equal(bad, 0);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_classify_protocol_and_ports),
		T(test_classify_source_and_destination_prefixes),
		T(test_classify_priority_first_match_wins),
		T(test_classify_exempt_never_dropped),
		T(test_classify_no_match_counts_no_rule),
		T(test_classify_icmp_rule_is_echo_requests),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
