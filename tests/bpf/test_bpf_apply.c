// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: bpf_fixture pkt_builder instance_fixture */
/*
 * Rule replacement: ids and clients kept across an apply, and a table
 * of 1024 rules classified.
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
#include "state/client_keys.h"
#include "state/client_view.h"
#include "util/parse.h"
#include "instance/instance.h"
#include "sl_key.h"
#include "instance/instance_maps.h"
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

/* ---- a rule whose client key changes shape ------------------------------ */

/* The states rule `id` holds in its algorithm's table FD, by kind: IPv4,
 * IPv6 and hashed API keys (100::/64).
 */
struct held {
	unsigned v4, v6, hashed;
};

static struct held held_of(int fd, __u32 id)
{
	struct sl_client_key key, next;
	struct held h = {};
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (next.rule_id == id) {
			if (sl_client_addr_hashed(&next.addr))
				h.hashed++;
			else if (sl_addr_is_ipv4(&next.addr))
				h.v4++;
			else
				h.v6++;
		}
		key = next;
		prev = &key;
	}
	return h;
}

static __u64 apply_counted(struct fixture *f, const char *yaml)
{
	struct sl_ruleset rs;
	__u64 forgotten = ~0ULL;

	assert_int_equal(sl_rules_load_buffer("test.yaml", yaml, strlen(yaml),
					      &rs), 0);
	assert_int_equal(sl_rules_apply_counted(&f->in.maps, &rs, &forgotten),
			 0);
	sl_rules_free(&rs);
	return forgotten;
}

/* ipv4_prefix 24 -> 32: the /24's state goes (it would be read as the
 * first address's, 192.0.2.0, which never sent), the IPv6 and API-key
 * states of the same rule stay, and the first address starts afresh.
 */
static void test_apply_rekey_forgets_only_old_shape_states(void **state)
{
	static const char *const before =
		"rules:\n"
		"  - {name: pfx, protocol: udp, ports: 53, limit: 3, window: 1h,"
		" key: {ipv4_prefix: 24}}\n";
	static const char *const after =
		"rules:\n"
		"  - {name: pfx, protocol: udp, ports: 53, limit: 3, window: 1h,"
		" key: {ipv4_prefix: 32}}\n";
	struct fixture *f = *state;
	struct pkt v4, v4first, v6;
	struct sl_client_key api = {};
	struct sl_rule rule;
	struct held h;
	void *zero;
	unsigned i;
	int fd;

	apply(f, before);
	rule = live_rule(f, "pfx");
	fd = sl_state_fd(&f->in.maps, rule.algorithm);
	mk(&v4, "192.0.2.5", "203.0.113.1", UDP, 53, 0, 0);
	mk(&v4first, "192.0.2.0", "203.0.113.1", UDP, 53, 0, 0);
	mk(&v6, "2001:db8:1::5", "2001:db8::1", UDP, 53, 0, 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(run(f, &v4), PASS);
		assert_int_equal(run(f, &v6), PASS);
	}
	assert_int_equal(run(f, &v4first), DROP);	/* the /24 is full */
	/* an API key's state, as the check program keys it */
	api.addr.byte[0] = 0x01;
	api.addr.byte[15] = 0x42;
	api.rule_id = rule.id;
	zero = calloc(1, sl_state_size(rule.algorithm));
	assert_non_null(zero);
	assert_int_equal(bpf_map_update_elem(fd, &api, zero, BPF_NOEXIST), 0);
	free(zero);
	h = held_of(fd, rule.id);
	assert_int_equal(h.v4, 1);
	assert_int_equal(h.v6, 1);
	assert_int_equal(h.hashed, 1);

	assert_int_equal(apply_counted(f, after), 1);
	assert_int_equal(id_of(f, "pfx"), rule.id);
	h = held_of(fd, rule.id);
	assert_int_equal(h.v4, 0);
	assert_int_equal(h.v6, 1);
	assert_int_equal(h.hashed, 1);
	/* 192.0.2.0 is its own client now, with nothing counted */
	for (i = 0; i < 3; i++)
		assert_int_equal(run(f, &v4first), PASS);
	assert_int_equal(run(f, &v4first), DROP);
	/* the IPv6 client kept its count */
	assert_int_equal(run(f, &v6), DROP);
	/* an apply that changes no key shape forgets nothing */
	assert_int_equal(apply_counted(f, after), 0);
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

/* ---- an apply ends every cached block ----------------------------------- */

/* The sync conf as the service writes it (user/sync/engine.c): rounds
 * count from 1, and the bounded layout's shares among live nodes.
 */
static struct sl_sync_conf sync_conf(__u32 layout, __u64 now_ms)
{
	struct sl_sync_conf sc = {
		.layout = layout, .nodes = 2, .interval_ms = 10000,
		.round = 2, .live_nodes = 2, .share_round = 2,
		.round_ms = now_ms,
	};

	return sc;
}

static void write_sync(struct fixture *f, const struct sl_sync_conf *sc)
{
	__u32 zero = 0;

	assert_int_equal(bpf_map_update_elem(f->in.maps.sync, &zero, sc,
					     BPF_ANY), 0);
}

/* A sync round and its settling, as sl_sync_collect and sl_sync_settle
 * write them: round, then share_round and its start.
 */
static void share_round(struct fixture *f, struct sl_sync_conf *sc,
			__u64 now_ms)
{
	sc->round++;
	write_sync(f, sc);
	sc->share_round++;
	sc->round_ms = now_ms;
	write_sync(f, sc);
}

static __u32 live_epoch(struct fixture *f)
{
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	unsigned nr = 0;

	assert_int_equal(sl_rules_read_live(&f->in.maps, &rules, &nr, &cfg), 0);
	free(rules);
	return cfg.rules_epoch;
}

/* Set the live rule set's epoch (what a long-running host reaches after
 * that many applies); the next apply counts on from it.
 */
static void set_live_epoch(struct fixture *f, __u32 epoch)
{
	struct sl_config cfg;
	__u32 zero = 0, gen;

	assert_int_equal(bpf_map_lookup_elem(f->in.maps.active, &zero, &gen), 0);
	gen &= 1;
	assert_int_equal(bpf_map_lookup_elem(f->in.maps.config, &gen, &cfg), 0);
	cfg.rules_epoch = epoch;
	assert_int_equal(bpf_map_update_elem(f->in.maps.config, &gen, &cfg, 0), 0);
}

static const char *const layout_names[SL_LAYOUT__COUNT] = {
	"local", "delayed-sync", "split-quota", "predictive", "bounded",
};

/* Under `layout`, from epoch `base`: a client blocked at limit 1 (2 over
 * two split-quota nodes) and `rules apply` of limit 100: its next
 * packets pass, before and after the next share round. Returns the
 * packets dropped after the apply.
 */
static unsigned blocked_then_applied(struct fixture *f, __u32 layout,
				     __u32 base, __u64 t)
{
	struct sl_sync_conf sc = sync_conf(layout, t);
	unsigned nodes = layout == SL_LAYOUT_SPLIT_QUOTA ? 2 : 1, dropped = 0, i;
	char yaml[256];
	struct pkt p;

	set_time(f, t);
	write_sync(f, &sc);
	set_live_epoch(f, base);
	/* a new rule name, so a fresh client, in every call */
	snprintf(yaml, sizeof(yaml), "rules:\n"
		 "  - {name: blk%u_%u, protocol: udp, ports: 53, limit: %u, window: 1h}\n",
		 layout, base, nodes);
	apply(f, yaml);
	/* the tag collided for an even epoch and an even share round */
	assert_int_equal(live_epoch(f) % 2, 0);
	mk(&p, "192.0.2.9", "203.0.113.1", UDP, 53, 0, 0);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), DROP);	/* caches the block */
	assert_int_equal(run(f, &p), DROP);	/* ... and honours it */

	set_time(f, t + 1000);
	snprintf(yaml, sizeof(yaml), "rules:\n"
		 "  - {name: blk%u_%u, protocol: udp, ports: 53, limit: %u, window: 1h}\n",
		 layout, base, 100 * nodes);
	apply(f, yaml);
	for (i = 0; i < 3; i++)
		dropped += run(f, &p) == DROP;
	share_round(f, &sc, t + 2000);
	set_time(f, t + 2000);
	for (i = 0; i < 3; i++)
		dropped += run(f, &p) == DROP;
	if (dropped)
		print_error("%s, blocked under epoch %u: %u of 6 dropped after the apply\n",
			    layout_names[layout], base + 1, dropped);
	return dropped;
}

/* The reproduction: bounded, limit 1, a drop, apply limit 100; the next
 * packet passes, and after the next share round it still must (the old
 * tag, epoch ^ share round, came back). Then every layout, and epochs
 * past 2^16 (which the old tag folded into the node count's bits).
 */
static void test_apply_ends_cached_block_every_layout(void **state)
{
	static const __u32 bases[] = { 2, 0xfffe, 0x10000, 0x7ffffffe };
	struct fixture *f = *state;
	unsigned bad = 0, l, b;
	__u64 t = T0;

	for (b = 0; b < sizeof(bases) / sizeof(*bases); b++)
		for (l = 0; l < SL_LAYOUT__COUNT; l++) {
			/* the rule apply bumps the base twice: even, then odd */
			bad += blocked_then_applied(f, l, bases[b] - 1, t) != 0;
			t += 100000;
		}
	assert_int_equal(bad, 0);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_apply_replace_keeps_ids_and_clients),
		T(test_apply_rekey_forgets_only_old_shape_states),
		T(test_apply_1024_rules_classify),
		T(test_apply_ends_cached_block_every_layout),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
