// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: bpf_fixture pkt_builder instance_fixture */
/*
 * The block and allow lists through the real program (BPF_PROG_TEST_RUN,
 * model clock): read before the rules, allow first, every packet shape
 * that has a source, an entry's end enforced by the program itself, and
 * nothing changed while both lists are empty.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <bpf/bpf.h>
#include <cmocka.h>

#include "slicelimit.h"
#include "instance/lists.h"
#include "util/parse.h"
#include "bpf_fixture.h"

#define RULES	"rules:\n" \
		"  - {name: dns, protocol: udp, ports: 53, limit: 2, window: 10s}\n"

static void list_add(struct fixture *f, unsigned kind, const char *prefix,
		     __u64 for_ms, __u64 now)
{
	struct sl_addr a;
	unsigned len;

	assert_int_equal(sl_parse_prefix(prefix, &a, &len), 0);
	assert_int_equal(sl_list_add(&f->in.maps, kind, &a, len, for_ms,
				     "test", now), 0);
}

static void list_remove(struct fixture *f, unsigned kind, const char *prefix)
{
	struct sl_addr a;
	unsigned len;

	assert_int_equal(sl_parse_prefix(prefix, &a, &len), 0);
	assert_int_equal(sl_list_remove(&f->in.maps, kind, &a, len), 0);
}

static struct sl_list_stats list_stats(struct fixture *f)
{
	struct sl_list_stats ls;

	assert_int_equal(sl_list_stats_read(&f->in.maps, &ls), 0);
	return ls;
}

static __u8 live_lists(struct fixture *f)
{
	struct sl_config cfg;
	__u32 zero = 0, gen;

	assert_int_equal(bpf_map_lookup_elem(f->in.maps.active, &zero, &gen), 0);
	gen &= 1;
	assert_int_equal(bpf_map_lookup_elem(f->in.maps.config, &gen, &cfg), 0);
	return sl_config_lists(&cfg);
}

/* Both entries, XDP and TC. */
static void expect_both(struct fixture *f, const struct pkt *p,
			enum verdict want, const char *what)
{
	enum verdict x = run_len(f, false, -1, p, p->len);
	enum verdict t = run_len(f, true, -1, p, p->len);

	if (x != want || t != want)
		fail_msg("%s: xdp %s, tc %s, expected %s", what,
			 verdict_name(x), verdict_name(t), verdict_name(want));
}

static void test_lists_block_drops_every_shape_before_rules(void **state)
{
	struct fixture *f = *state;
	struct sl_list_stats ls;
	struct pkt p;

	apply(f, RULES);
	list_add(f, SL_LISTS_BLOCK, "192.0.2.0/24", 0, T0);
	list_add(f, SL_LISTS_BLOCK, "2001:db8::/32", 0, T0);
	assert_int_equal(live_lists(f), SL_LISTS_BLOCK);

	mk(&p, "192.0.2.9", "203.0.113.1", UDP, 53, 0, 0);
	expect_both(f, &p, DROP, "v4 under a rule's limit");
	mk(&p, "192.0.2.9", "203.0.113.1", UDP, 80, 0, 0);
	expect_both(f, &p, DROP, "v4 to a port no rule has");
	mk(&p, "2001:db8::7", "2001:db8:ffff::1", UDP, 53, 0, 0);
	expect_both(f, &p, DROP, "v6");
	memset(&p, 0, sizeof(p));
	eth(&p); vlan(&p, ETH_P_8021Q);
	ip4_from(&p, "192.0.2.9", "203.0.113.1", 5, 0); udp(&p, 53);
	payload(&p, 18); finish(&p);
	expect_both(f, &p, DROP, "v4 in a VLAN");
	memset(&p, 0, sizeof(p));
	eth(&p); ip4_from(&p, "192.0.2.9", "203.0.113.1", 5, 185);
	proto(&p, IPPROTO_UDP, 32); ip_id(&p, 0x102); finish(&p);
	expect_both(f, &p, DROP, "v4 later fragment");
	memset(&p, 0, sizeof(p));
	eth(&p); ip6(&p); ip6_frag(&p, 100, false);
	proto(&p, IPPROTO_UDP, 16); ip_id(&p, 0x104); finish(&p);
	expect_both(f, &p, DROP, "v6 later fragment");

	/* outside the prefixes: the rule decides, and counts */
	mk(&p, "192.0.3.9", "203.0.113.1", UDP, 53, 0, 0);
	expect_both(f, &p, PASS, "v4 outside the block");
	mk(&p, "2001:db9::7", "2001:db8:ffff::1", UDP, 53, 0, 0);
	expect_both(f, &p, PASS, "v6 outside the block");

	ls = list_stats(f);
	assert_int_equal(ls.blocked, 12);
	assert_int_equal(ls.allowed, 0);
	/* the rule saw only the four packets from outside the lists */
	assert_int_equal(stats_of(f, "dns").passed + stats_of(f, "dns").dropped, 4);
}

static void test_lists_allow_passes_what_a_rule_drops(void **state)
{
	struct fixture *f = *state;
	struct pkt p;
	unsigned i;

	apply(f, RULES);
	list_add(f, SL_LISTS_ALLOW, "192.0.2.7", 0, T0);
	mk(&p, "192.0.2.7", "203.0.113.1", UDP, 53, 0, 0);
	for (i = 0; i < 5; i++)
		if (run(f, &p) != PASS)
			fail_msg("allowed packet %u dropped", i);
	/* uncounted by the rule: it never saw them */
	assert_int_equal(stats_of(f, "dns").passed, 0);
	assert_int_equal(stats_of(f, "dns").dropped, 0);
	assert_int_equal(list_stats(f).allowed, 5);

	mk(&p, "192.0.2.8", "203.0.113.1", UDP, 53, 0, 0);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), DROP);
}

static void test_lists_allow_beats_block(void **state)
{
	struct fixture *f = *state;
	struct pkt p;

	apply(f, RULES);
	/* a longer block inside a shorter allow, and the other way round */
	list_add(f, SL_LISTS_BLOCK, "192.0.2.0/24", 0, T0);
	list_add(f, SL_LISTS_ALLOW, "192.0.2.7/32", 0, T0);
	list_add(f, SL_LISTS_ALLOW, "198.51.100.0/24", 0, T0);
	list_add(f, SL_LISTS_BLOCK, "198.51.100.7", 0, T0);
	assert_int_equal(live_lists(f), SL_LISTS_ALLOW | SL_LISTS_BLOCK);

	mk(&p, "192.0.2.7", "203.0.113.1", UDP, 80, 0, 0);
	expect_both(f, &p, PASS, "allowed /32 inside a blocked /24");
	mk(&p, "192.0.2.8", "203.0.113.1", UDP, 80, 0, 0);
	expect_both(f, &p, DROP, "blocked /24");
	mk(&p, "198.51.100.7", "203.0.113.1", UDP, 80, 0, 0);
	expect_both(f, &p, PASS, "blocked /32 inside an allowed /24");
}

static void test_lists_ended_entry_is_no_entry(void **state)
{
	struct fixture *f = *state;
	struct sl_list_key k = { .prefixlen = 128 };
	struct sl_list_entry e;
	struct pkt p;

	apply(f, RULES);
	set_time(f, T0);
	list_add(f, SL_LISTS_BLOCK, "192.0.2.9", 1000, T0);
	list_add(f, SL_LISTS_ALLOW, "192.0.2.10", 1000, T0);
	mk(&p, "192.0.2.9", "203.0.113.1", UDP, 80, 0, 0);
	set_time(f, T0 + 999);
	expect_both(f, &p, DROP, "block before its end");
	set_time(f, T0 + 1000);
	expect_both(f, &p, PASS, "block at its end");
	/* still in the map: the program, not a sweep, ended it */
	assert_int_equal(sl_parse_addr("192.0.2.9", &k.addr), 0);
	assert_int_equal(bpf_map_lookup_elem(f->in.maps.block_list, &k, &e), 0);
	assert_int_equal(e.expires_ms, T0 + 1000);

	/* an ended allow: the rule decides again */
	mk(&p, "192.0.2.10", "203.0.113.1", UDP, 53, 0, 0);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), DROP);
	assert_int_equal(stats_of(f, "dns").passed, 2);
	assert_int_equal(stats_of(f, "dns").dropped, 1);

	/* the sweep (the service's, every few seconds) gives the room back,
	 * and with both lists empty the program stops looking
	 */
	{
		unsigned removed = 0;

		assert_int_equal(sl_list_sweep(&f->in.maps, T0 + 1000, &removed), 0);
		assert_int_equal(removed, 2);
		assert_int_not_equal(bpf_map_lookup_elem(f->in.maps.block_list, &k, &e), 0);
		assert_int_equal(live_lists(f), 0);
	}
}

static void test_lists_empty_leave_verdicts_as_before(void **state)
{
	static const enum verdict want[] = { PASS, PASS, DROP, DROP };
	struct fixture *f = *state;
	struct pkt p;
	unsigned i;

	apply(f, RULES);
	list_add(f, SL_LISTS_BLOCK, "192.0.2.0/24", 0, T0);
	list_add(f, SL_LISTS_ALLOW, "192.0.2.1", 0, T0);
	list_remove(f, SL_LISTS_BLOCK, "192.0.2.0/24");
	list_remove(f, SL_LISTS_ALLOW, "192.0.2.1");
	/* empty again: the program is told not to look */
	assert_int_equal(live_lists(f), 0);
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 0);
	for (i = 0; i < 4; i++)
		if (run(f, &p) != want[i])
			fail_msg("packet %u: expected %s", i, verdict_name(want[i]));
	assert_int_equal(stats_of(f, "dns").passed, 2);
	assert_int_equal(stats_of(f, "dns").dropped, 2);
	assert_int_equal(list_stats(f).blocked, 0);
	assert_int_equal(list_stats(f).allowed, 0);
}

static void test_lists_kept_by_rules_apply(void **state)
{
	struct fixture *f = *state;
	struct pkt p;

	apply(f, RULES);
	list_add(f, SL_LISTS_BLOCK, "192.0.2.9", 0, T0);
	/* the apply writes the idle generation's config: it must say the
	 * block list holds an entry, or the switch would hide it
	 */
	apply(f, "rules:\n"
		 "  - {name: web, protocol: tcp, ports: 80, limit: 5}\n");
	assert_int_equal(live_lists(f), SL_LISTS_BLOCK);
	mk(&p, "192.0.2.9", "203.0.113.1", UDP, 53, 0, 0);
	expect_both(f, &p, DROP, "blocked after an apply");
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_lists_block_drops_every_shape_before_rules),
		T(test_lists_allow_passes_what_a_rule_drops),
		T(test_lists_allow_beats_block),
		T(test_lists_ended_entry_is_no_entry),
		T(test_lists_empty_leave_verdicts_as_before),
		T(test_lists_kept_by_rules_apply),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
