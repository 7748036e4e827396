// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Rule replacement: ids and clients kept across an apply, and a table
 * of 1024 rules classified.
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

/* ---- 5. atomic rule replacement ----------------------------------------- */

static void test_apply_replace_keeps_ids_and_clients(void **state)
{
	struct fixture *f = *state;
	struct pkt x53, x54;
	struct sl_rule_stats s;
	__u32 keep_id, gone_id, fresh_id, late_id;
	unsigned i;

	apply(f, "rules:\n"
		 "  - {name: keep, protocol: udp, ports: 53, limit: 3, window: 1h}\n"
		 "  - {name: gone, protocol: udp, ports: 54, limit: 3, window: 1h}\n");
	mk(&x53, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 0);
	mk(&x54, "192.0.2.1", "203.0.113.1", UDP, 54, 0, 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(run(f, &x53), PASS);
	assert_int_equal(run(f, &x53), DROP);	/* caches "blocked" */
	assert_int_equal(run(f, &x54), PASS);
	assert_int_equal(run(f, &x54), PASS);
	keep_id = id_of(f, "keep");
	gone_id = id_of(f, "gone");
	assert_int_not_equal(keep_id, gone_id);
	assert_int_equal(clients_of(f, gone_id), 1);

	/* B: keep moves down and gets a larger limit; gone is removed */
	set_time(f, T0 + 1000);
	apply(f, "rules:\n"
		 "  - {name: fresh, protocol: udp, ports: 55, limit: 3, window: 1h}\n"
		 "  - {name: keep, protocol: udp, ports: 53, limit: 5, window: 1h}\n");
	assert_int_equal(id_of(f, "keep"), keep_id);
	assert_int_equal(live_rule(f, "keep").limit, 5);
	fresh_id = id_of(f, "fresh");
	assert_int_not_equal(fresh_id, keep_id);
	/* a new rule never takes the id of a live or just removed one */
	assert_int_not_equal(fresh_id, gone_id);
	assert_int_equal(clients_of(f, gone_id), 0);
	assert_int_equal(clients_of(f, keep_id), 1);
	s = stats_of_id(f, keep_id);
	assert_int_equal(s.passed, 3);
	assert_int_equal(s.dropped, 1);
	s = stats_of_id(f, fresh_id);
	assert_int_equal(s.passed + s.dropped + s.passed_bytes, 0);
	/* the client's 3 still count against the new 5, and the cached
	 * "blocked" of the old rule set is void
	 */
	assert_int_equal(run(f, &x53), PASS);
	assert_int_equal(run(f, &x53), PASS);
	assert_int_equal(run(f, &x53), DROP);
	/* port 54 has no rule now */
	assert_null(matched(f, false, &x54));

	/* C: a rule on port 54 again: new stats, a full allowance */
	apply(f, "rules:\n"
		 "  - {name: fresh, protocol: udp, ports: 55, limit: 3, window: 1h}\n"
		 "  - {name: keep, protocol: udp, ports: 53, limit: 5, window: 1h}\n"
		 "  - {name: late, protocol: udp, ports: 54, limit: 3, window: 1h}\n");
	/* ids are handed out lowest free first, so late takes gone's old
	 * id: the case where stale stats or client counts would show
	 */
	late_id = id_of(f, "late");
	s = stats_of_id(f, late_id);
	assert_int_equal(s.passed + s.dropped + s.exempt + s.passed_bytes, 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(run(f, &x54), PASS);
	assert_int_equal(run(f, &x54), DROP);
	assert_int_equal(id_of(f, "keep"), keep_id);
	assert_int_equal(run(f, &x53), DROP);	/* keep's state survived C */
}

static void test_apply_1024_rules_classify(void **state)
{
	static const struct {
		unsigned from;		/* whose source; 9999: outside 10/8 */
		unsigned port;
		int rule;		/* -1: no rule */
	} rows[] = {
		{ 0, 10000, 0 }, { 1, 10001, 1 }, { 63, 11022, 63 },
		{ 64, 10064, 64 }, { 65, 11022, 65 }, { 511, 10511, 511 },
		{ 512, 11000, 512 }, { 1000, 11000, 1000 }, { 1022, 11022, 1022 },
		{ 1022, 11021, 1023 },	/* below its range: the catch-all */
		{ 700, 10699, 1023 },
		{ 9999, 10500, 1023 }, { 9999, 11022, 1023 },
	};
	struct fixture *f = *state;
	size_t cap = 128 * SL_MAX_RULES, len = 0;
	char *yaml = malloc(cap), name[16], src[32];
	struct sl_rule *live = NULL;
	struct sl_config cfg;
	unsigned i, nr = 0, bad = 0;

	/* rule i < 1023: udp from 10.(i/256).(i%256).0/24 to ports
	 * 10000+i..11022, so port 11022 is in all of their ranges and only
	 * the source tells them apart; rule 1023: every udp packet.
	 */
	assert_non_null(yaml);
	len += snprintf(yaml + len, cap - len, "rules:\n");
	for (i = 0; i < SL_MAX_RULES - 1; i++)
		len += snprintf(yaml + len, cap - len,
				"  - {name: r%04u, protocol: udp, ports: %u-11022, source: 10.%u.%u.0/24, limit: 3}\n",
				i, 10000 + i, i >> 8, i & 255);
	len += snprintf(yaml + len, cap - len,
			"  - {name: r1023, protocol: udp, limit: 3}\n");
	assert_true(len < cap);
	apply(f, yaml);
	free(yaml);
	assert_int_equal(sl_rules_read_live(&f->in.maps, &live, &nr, &cfg), 0);
	assert_int_equal(nr, SL_MAX_RULES);
	assert_int_equal(cfg.nr_rules, SL_MAX_RULES);
	assert_true(cfg.has_src);
	free(live);

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sl_rule_stats s0, s1;
		__u32 id;
		struct pkt p;

		if (rows[i].from == 9999)
			snprintf(src, sizeof(src), "192.0.2.1");
		else
			snprintf(src, sizeof(src), "10.%u.%u.9",
				 rows[i].from >> 8, rows[i].from & 255);
		snprintf(name, sizeof(name), "r%04d", rows[i].rule);
		id = id_of(f, name);
		s0 = stats_of_id(f, id);
		mk(&p, src, "203.0.113.1", UDP, rows[i].port, 0, 0);
		assert_int_equal(run(f, &p), PASS);
		s1 = stats_of_id(f, id);
		if (s1.passed != s0.passed + 1) {
			print_error("%s -> %u: %s did not count it\n", src,
				    rows[i].port, name);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_apply_replace_keeps_ids_and_clients),
		T(test_apply_1024_rules_classify),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
