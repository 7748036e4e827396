// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: bpf_fixture pkt_builder instance_fixture */
/*
 * The front cache of blocked flows (bpf/front.h) against the exact path.
 *
 * Two instances of the real object run the same packets, clock and
 * events on one CPU: `a` as it is, `b` with its front cache emptied
 * before every packet, so that `b` decides every packet on the exact
 * path. Every verdict and every rule counter must be the same in both.
 * The targeted tests block a flow, check that its front entry is there
 * and is what dropped the packet, then make each event that ends a block
 * and check that the next packet is decided as the exact path decides
 * it; the search interleaves flows that share one front slot, rules,
 * clock steps, resets and applies at random.
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
#include <netinet/in.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cmocka.h>

#include "slicelimit.h"
#include "sl_front.h"
#include "state/client_keys.h"
#include "instance/instance.h"
#include "instance/instance_maps.h"
#include "util/parse.h"
#include "rules/rules.h"
#include "slicelimit.skel.h"
#include "bpf_fixture.h"

#define CPU	0	/* every packet: the front cache is per CPU */
#define DST	"203.0.113.1"

struct pair {
	struct sl_instance a;	/* with its front cache */
	struct sl_instance b;	/* the exact path */
	unsigned packets;
	unsigned hits;		/* drops of a flow whose entry was set */
};

static int pair_setup(void **state)
{
	struct pair *p = calloc(1, sizeof(*p));

	if (!p)
		return -1;
	if (sl_test_open_instance(&p->a, 4096, T0)) {
		free(p);
		return -1;
	}
	if (sl_test_open_instance(&p->b, 4096, T0)) {
		sl_instance_close(&p->a);
		free(p);
		return -1;
	}
	*state = p;
	return 0;
}

static int pair_teardown(void **state)
{
	struct pair *p = *state;

	sl_instance_close(&p->a);
	sl_instance_close(&p->b);
	free(p);
	sl_test_restore_cpus();
	return 0;
}

static int pair_group_setup(void **state)
{
	return sl_test_load_once(state, pair_setup, pair_teardown);
}

static int front_fd(struct sl_instance *in)
{
	return bpf_map__fd(in->skel->maps.sl_front);
}

/* Every CPU's front cache zeroed (its score too), in one call. */
static void front_clear(struct sl_instance *in)
{
	static struct sl_front_cache *zero;
	int ncpus = libbpf_num_possible_cpus();
	__u32 key = 0;

	if (!zero)
		zero = calloc(ncpus, sizeof(*zero));
	assert_non_null(zero);
	assert_int_equal(bpf_map_update_elem(front_fd(in), &key, zero, BPF_ANY),
			 0);
}

/* CPU's front cache, read. */
static void front_read(struct sl_instance *in, struct sl_front_cache *out)
{
	static struct sl_front_cache *v;
	int ncpus = libbpf_num_possible_cpus();
	__u32 key = 0;

	if (!v)
		v = calloc(ncpus, sizeof(*v));
	assert_non_null(v);
	assert_int_equal(bpf_map_lookup_elem(front_fd(in), &key, v), 0);
	*out = v[CPU];
}

/* The score of CPU's front cache: its misses less its hits. */
static __u64 front_score(struct sl_instance *in)
{
	static struct sl_front_cache fc;

	front_read(in, &fc);
	return fc.score;
}

/* CPU's entry of the flow from `src` to DST, if set; 0 when none. */
static bool front_entry(struct sl_instance *in, const char *src, __u32 slot,
			__u16 port, struct sl_front_entry *out)
{
	static struct sl_front_cache fc;
	struct sl_addr s, d;
	__u32 idx;

	assert_int_equal(sl_parse_addr(src, &s), 0);
	assert_int_equal(sl_parse_addr(DST, &d), 0);
	idx = sl_front_slot(&s, &d, slot + port, htons(port));
	front_read(in, &fc);
	*out = fc.slot[idx];
	return out->set && !memcmp(out->src.byte, s.byte, 16);
}

static enum verdict run_one(struct sl_instance *in, const struct pkt *pk)
{
	__u32 retval = ~0U;

	assert_int_equal(sl_instance_run(in, false, CPU, pk->b, pk->len, 1,
					 &retval, NULL), 0);
	assert_true(retval == XDP_PASS || retval == XDP_DROP);
	return retval == XDP_DROP ? DROP : PASS;
}

/* One packet through both; the verdicts must agree. */
static enum verdict step(struct pair *p, const struct pkt *pk)
{
	enum verdict va, vb;

	front_clear(&p->b);
	va = run_one(&p->a, pk);
	vb = run_one(&p->b, pk);
	p->packets++;
	if (va != vb)
		fail_msg("packet %u: %s with the front cache, %s without",
			 p->packets, verdict_name(va), verdict_name(vb));
	return va;
}

static void pair_time(struct pair *p, __u64 ms)
{
	sl_instance_set_time(&p->a, ms);
	sl_instance_set_time(&p->b, ms);
}

static void pair_apply(struct pair *p, const char *yaml)
{
	sl_test_apply(&p->a, yaml);
	sl_test_apply(&p->b, yaml);
}

/* `slicelimit reset ADDR` on one instance: every key of ADDR under every
 * live rule deleted, then the deletion told (sl_states_forgotten), as
 * the command does. `tell`: false leaves the second part out.
 */
static void reset_in(struct sl_instance *in, const char *addr, bool tell)
{
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	struct sl_addr a;
	unsigned nr = 0, i;

	assert_int_equal(sl_parse_addr(addr, &a), 0);
	assert_int_equal(sl_rules_read_live(&in->maps, &rules, &nr, &cfg), 0);
	for (i = 0; i < nr; i++) {
		struct sl_client_key *keys = NULL;
		size_t n = 0, k;
		int fd = sl_state_fd(&in->maps, rules[i].algorithm);

		assert_int_equal(sl_client_keys(&in->maps, &rules[i], &a, false,
						0, &keys, &n), 0);
		for (k = 0; k < n; k++)
			bpf_map_delete_elem(fd, &keys[k]);
		free(keys);
	}
	free(rules);
	if (tell)
		assert_int_equal(sl_states_forgotten(&in->maps), 0);
}

static void pair_reset(struct pair *p, const char *addr)
{
	reset_in(&p->a, addr, true);
	reset_in(&p->b, addr, true);
}

/* Every live rule's counters equal in both instances. */
static void same_counters(struct pair *p)
{
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	unsigned nr = 0, i;

	assert_int_equal(sl_rules_read_live(&p->a.maps, &rules, &nr, &cfg), 0);
	for (i = 0; i < nr; i++) {
		struct sl_rule_stats sa = sl_test_rule_stats(&p->a, rules[i].id);
		struct sl_rule rb = sl_test_live_rule(&p->b, rules[i].name);
		struct sl_rule_stats sb = sl_test_rule_stats(&p->b, rb.id);

		if (memcmp(&sa, &sb, sizeof(sa)))
			fail_msg("rule %s: passed %llu/%llu dropped %llu/%llu "
				 "bytes %llu/%llu shadow %llu/%llu (with/without)",
				 rules[i].name,
				 (unsigned long long)sa.passed,
				 (unsigned long long)sb.passed,
				 (unsigned long long)sa.dropped,
				 (unsigned long long)sb.dropped,
				 (unsigned long long)sa.dropped_bytes,
				 (unsigned long long)sb.dropped_bytes,
				 (unsigned long long)sa.shadow_dropped,
				 (unsigned long long)sb.shadow_dropped);
	}
	free(rules);
}

static const char *const limit2 =
	"rules:\n"
	"  - {name: dns, protocol: udp, ports: 53, limit: 2, window: 10s}\n";

/* Blocked: two accepts, then drops; the first drop writes the entry. */
static void block(struct pair *p, const struct pkt *pk)
{
	assert_int_equal(step(p, pk), PASS);
	assert_int_equal(step(p, pk), PASS);
	assert_int_equal(step(p, pk), DROP);
}

/* limit2 on both sides, and 192.0.2.1's DNS flow (PK) blocked */
static void block_dns_client(struct pair *p, struct pkt *pk)
{
	pair_apply(p, limit2);
	mk(pk, "192.0.2.1", DST, UDP, 53, 0, 0);
	block(p, pk);
}

/* ---- the entry is written, and is what drops ------------------------- */

static void test_front_entry_drops_blocked_flow(void **state)
{
	struct pair *p = *state;
	struct sl_front_entry fe;
	struct pkt pk;

	block_dns_client(p, &pk);
	assert_true(front_entry(&p->a, "192.0.2.1", SL_SLOT_UDP, 53, &fe));
	assert_int_equal(fe.rule_id, sl_test_live_rule(&p->a, "dns").id);
	/* a's state deleted behind its back (nothing told): only the
	 * front entry can still drop the flow there
	 */
	reset_in(&p->a, "192.0.2.1", false);
	assert_int_equal(run_one(&p->a, &pk), DROP);
	assert_int_equal(sl_test_rule_stats(&p->a, fe.rule_id).dropped, 2);
	assert_int_equal(sl_test_rule_stats(&p->a, fe.rule_id).dropped_bytes,
			 2 * pk.len);
	assert_int_equal(sl_test_rule_stats(&p->a, fe.rule_id).passed, 2);
}

/* ---- each event that ends a block ends its entry --------------------- */

static void test_front_apply_raising_limit(void **state)
{
	struct pair *p = *state;
	struct pkt pk;

	block_dns_client(p, &pk);
	assert_int_equal(step(p, &pk), DROP);
	pair_apply(p, "rules:\n"
		      "  - {name: dns, protocol: udp, ports: 53, limit: 4, window: 10s}\n");
	assert_int_equal(step(p, &pk), PASS);
	assert_int_equal(step(p, &pk), PASS);
	assert_int_equal(step(p, &pk), DROP);
	same_counters(p);
}

static void test_front_reset_forgets(void **state)
{
	struct pair *p = *state;
	struct pkt pk;

	block_dns_client(p, &pk);
	assert_int_equal(step(p, &pk), DROP);
	pair_reset(p, "192.0.2.1");
	assert_int_equal(step(p, &pk), PASS);
	same_counters(p);
}

static void test_front_block_end_on_model_clock(void **state)
{
	struct pair *p = *state;
	__u64 t;
	struct pkt pk;

	pair_apply(p, "rules:\n"
		      "  - {name: dns, protocol: udp, ports: 53, limit: 2, window: 1s, slices: 10}\n");
	mk(&pk, "192.0.2.1", DST, UDP, 53, 0, 0);
	pair_time(p, T0);
	block(p, &pk);
	/* every ms around the first accept's slice leaving the window */
	for (t = T0 + 890; t <= T0 + 1110; t++) {
		pair_time(p, t);
		step(p, &pk);
	}
	same_counters(p);
}

/* Another rule first for the same flow: the flow is its now. */
static void test_front_second_rule_order(void **state)
{
	struct pair *p = *state;
	struct pkt pk;

	pair_apply(p, "rules:\n"
		      "  - {name: dns, protocol: udp, ports: 53, limit: 2, window: 10s}\n"
		      "  - {name: wide, protocol: udp, limit: 100, window: 10s}\n");
	mk(&pk, "192.0.2.1", DST, UDP, 53, 0, 0);
	block(p, &pk);
	assert_int_equal(step(p, &pk), DROP);
	pair_apply(p, "rules:\n"
		      "  - {name: wide, protocol: udp, limit: 100, window: 10s}\n"
		      "  - {name: dns, protocol: udp, ports: 53, limit: 2, window: 10s}\n");
	assert_int_equal(step(p, &pk), PASS);
	same_counters(p);
}

/* ---- rules that may not use it --------------------------------------- */

static void test_front_never_for_shadow_or_after_continue(void **state)
{
	struct pair *p = *state;
	struct sl_front_entry fe;
	struct pkt pk, other;
	unsigned i;

	pair_apply(p, "rules:\n"
		      "  - {name: dns, protocol: udp, ports: 53, limit: 2, action: shadow}\n");
	mk(&pk, "192.0.2.1", DST, UDP, 53, 0, 0);
	for (i = 0; i < 6; i++)
		assert_int_equal(step(p, &pk), PASS);
	assert_false(front_entry(&p->a, "192.0.2.1", SL_SLOT_UDP, 53, &fe));
	assert_int_equal(sl_test_rule_stats(&p->a,
			 sl_test_live_rule(&p->a, "dns").id).shadow_dropped, 4);

	/* the /24 rule drops what the per-address rule passed on: a hit
	 * would skip the per-address rule's accept
	 */
	pair_apply(p, "rules:\n"
		      "  - {name: host, protocol: udp, ports: 54, limit: 100, continue: true}\n"
		      "  - {name: net, protocol: udp, ports: 54, limit: 2,\n"
		      "     key: {ipv4_prefix: 24}}\n");
	mk(&pk, "192.0.2.1", DST, UDP, 54, 0, 0);
	mk(&other, "192.0.2.2", DST, UDP, 54, 0, 0);
	assert_int_equal(step(p, &other), PASS);
	assert_int_equal(step(p, &other), PASS);
	for (i = 0; i < 4; i++)
		assert_int_equal(step(p, &pk), DROP);
	assert_false(front_entry(&p->a, "192.0.2.1", SL_SLOT_UDP, 54, &fe));
	same_counters(p);
}

/* A rule of new connections: a blocked SYN's entry is no ACK's. */
static void test_front_syn_entry_is_not_the_acks(void **state)
{
	struct pair *p = *state;
	struct pkt syn, ack;
	unsigned i;

	pair_apply(p, "rules:\n"
		      "  - {name: conn, protocol: tcp, ports: 443, limit: 2, unit: syn}\n");
	mk(&syn, "192.0.2.1", DST, TCP, 443, SYN, 0);
	mk(&ack, "192.0.2.1", DST, TCP, 443, ACK, 0);
	block(p, &syn);
	for (i = 0; i < 3; i++) {
		assert_int_equal(step(p, &syn), DROP);
		assert_int_equal(step(p, &ack), PASS);
	}
	same_counters(p);
}

/* ---- the search ------------------------------------------------------- */

static const char *const rule_sets[] = {
	"rules:\n"
	"  - {name: dns, protocol: udp, ports: 53, limit: 3, window: 2s, slices: 4}\n"
	"  - {name: web, protocol: tcp, ports: 443, limit: 2, unit: syn, window: 1s}\n",
	"rules:\n"
	"  - {name: dns, protocol: udp, ports: 53, limit: 2, window: 1s, algorithm: sliding-plain}\n"
	"  - {name: web, protocol: tcp, ports: 443, limit: 3, window: 2s,\n"
	"     key: {ipv4_prefix: 24}}\n",
	"rules:\n"
	"  - {name: web, protocol: tcp, ports: 443, limit: 300, unit: bytes, window: 1s}\n"
	"  - {name: dns, protocol: udp, ports: 53-54, limit: 2, window: 1s,\n"
	"     algorithm: token-bucket, key: {per_port: true}}\n",
	"rules:\n"
	"  - {name: dns, protocol: udp, ports: 53, limit: 2, window: 1s, action: shadow}\n"
	"  - {name: host, protocol: tcp, ports: 443, limit: 4, window: 1s, continue: true}\n"
	"  - {name: web, protocol: tcp, ports: 443, limit: 3, window: 1s,\n"
	"     key: {ipv4_prefix: 24}, exempt: [192.0.2.128/25]}\n",
	"rules:\n"
	"  - {name: dns, protocol: udp, ports: 53, limit: 1, window: 500ms, algorithm: fixed}\n"
	"  - {name: web, protocol: tcp, ports: 443, limit: 2, window: 1s, algorithm: sliding-log}\n",
};
#define NR_SETS		(sizeof(rule_sets) / sizeof(rule_sets[0]))
#define NR_SOURCES	6

/* Sources whose flow to DST on `port` shares one front slot. */
static void colliding_sources(__u32 slot, __u16 port,
			      char src[NR_SOURCES][32])
{
	struct sl_addr s, d;
	__u32 want = 0, i, n = 0;

	assert_int_equal(sl_parse_addr(DST, &d), 0);
	for (i = 0; n < NR_SOURCES && i < 65536 * 4; i++) {
		char a[32];
		__u32 at;

		snprintf(a, sizeof(a), "192.0.%u.%u", 2 + (i >> 8) % 250,
			 i & 0xff);
		assert_int_equal(sl_parse_addr(a, &s), 0);
		at = sl_front_slot(&s, &d, slot + port, htons(port));
		if (n == 0)
			want = at;
		if (at == want)
			snprintf(src[n++], 32, "%s", a);
	}
	assert_int_equal(n, NR_SOURCES);
}

/* A packet of the search, counted as a hit when a had its flow's entry
 * set and dropped it.
 */
static void search_step(struct pair *p, const struct pkt *pk,
			const char *src, __u32 slot, __u16 port)
{
	struct sl_front_entry fe;
	bool held = front_entry(&p->a, src, slot, port, &fe) &&
		    fe.slot == slot + port;

	if (step(p, pk) == DROP && held)
		p->hits++;
}

static void search(struct pair *p, unsigned seed, unsigned steps)
{
	char udp[NR_SOURCES][32], tcp4[NR_SOURCES][32];
	__u64 now = T0;
	unsigned i;

	colliding_sources(SL_SLOT_UDP, 53, udp);
	colliding_sources(SL_SLOT_TCP, 443, tcp4);
	srandom(seed);
	pair_apply(p, rule_sets[0]);
	for (i = 0; i < steps; i++) {
		unsigned r = random() % 1000;
		unsigned who = random() % NR_SOURCES;
		__u16 port = random() % 5 ? 53 : 54;
		struct pkt pk;

		if (r < 8) {
			pair_apply(p, rule_sets[random() % NR_SETS]);
		} else if (r < 16) {
			pair_reset(p, random() & 1 ? udp[who] : tcp4[who]);
		} else if (r < 120) {
			now += random() % 400;
			pair_time(p, now);
		} else if (r < 560) {
			mk(&pk, udp[who], DST, UDP, port, 0, random() % 3 * 100);
			search_step(p, &pk, udp[who], SL_SLOT_UDP, port);
		} else {
			mk(&pk, tcp4[who], DST, TCP, 443,
			   random() % 3 ? SYN : ACK, random() % 2 * 200);
			search_step(p, &pk, tcp4[who], SL_SLOT_TCP, 443);
		}
	}
	same_counters(p);
	/* the search must have met the front cache, or it proves nothing */
	if (p->hits < steps / 20)
		fail_msg("seed %u: %u front hits in %u steps", seed, p->hits,
			 steps);
	printf("seed %u: %u packets, %u front hits\n", seed, p->packets,
	       p->hits);
}

static void test_front_search_colliding_flows(void **state)
{
	struct pair *p = *state;
	unsigned seed;

	for (seed = 1; seed <= 3; seed++) {
		search(p, seed, 1500);
		pair_teardown(state);
		assert_int_equal(pair_setup(state), 0);
		p = *state;
	}
}

/* ---- quiet when it cannot hit, back when one flow floods ------------- */

#define TURNS	2000	/* sources taking turns: far more than the slots */

static void turn_source(unsigned i, char src[32])
{
	snprintf(src, 32, "198.18.%u.%u", i >> 8, i & 0xff);
}

/* One round of every source in turn, each packet through both. */
static void turns_round(struct pair *p)
{
	char src[32];
	struct pkt pk;
	unsigned i;

	for (i = 0; i < TURNS; i++) {
		turn_source(i, src);
		mk(&pk, src, DST, UDP, 53, 0, 0);
		step(p, &pk);
	}
}

static void test_front_quiet_when_sources_take_turns(void **state)
{
	struct pair *p = *state;
	struct sl_global_stats g0, g1, g2, g3;
	struct sl_front_entry fe;
	char src[32];
	struct pkt pk;
	unsigned r, n;

	pair_apply(p, limit2);
	/* every source blocked, then most find their slot held by another */
	for (r = 0; r < 5; r++)
		turns_round(p);
	g0 = sl_test_global_stats(&p->a);
	assert_true(front_score(&p->a) > SL_FRONT_QUIET - SL_FRONT_HIT_CREDIT);
	/* quiet: most of a round skips the front (a probe's hit wakes it
	 * until the misses after it put it back)
	 */
	turns_round(p);
	g1 = sl_test_global_stats(&p->a);
	if (g1.front_skipped - g0.front_skipped < TURNS / 2 ||
	    g1.front_probes - g0.front_probes > TURNS / SL_FRONT_PROBE + 1)
		fail_msg("a round of %u sources: %llu skipped, %llu probes",
			 TURNS,
			 (unsigned long long)(g1.front_skipped - g0.front_skipped),
			 (unsigned long long)(g1.front_probes - g0.front_probes));
	/* one flow floods: its entry and the front back within two probes */
	turn_source(0, src);
	mk(&pk, src, DST, UDP, 53, 0, 0);
	for (n = 0; n < 2 * SL_FRONT_PROBE; n++)
		assert_int_equal(step(p, &pk), DROP);
	g2 = sl_test_global_stats(&p->a);
	assert_true(front_score(&p->a) < SL_FRONT_QUIET);
	assert_true(front_entry(&p->a, src, SL_SLOT_UDP, 53, &fe));
	/* and from then on every packet of it looks, and hits */
	for (n = 0; n < SL_FRONT_PROBE; n++)
		assert_int_equal(step(p, &pk), DROP);
	g3 = sl_test_global_stats(&p->a);
	assert_int_equal(g3.front_skipped, g2.front_skipped);
	assert_int_equal(front_score(&p->a), 0);
	same_counters(p);
	printf("%u sources in turn: %llu skipped, %llu probes in a round\n",
	       TURNS, (unsigned long long)(g1.front_skipped - g0.front_skipped),
	       (unsigned long long)(g1.front_probes - g0.front_probes));
}

/* The counters zeroed as `stats --reset` zeroes them (sl_stats_reset:
 * every CPU's sl_global_stats; the pinned record of when is not the
 * test's to write).
 */
static void zero_global_stats(struct sl_instance *in)
{
	int ncpus = libbpf_num_possible_cpus();
	struct sl_global_stats zero[ncpus];
	__u32 key = 0;

	memset(zero, 0, sizeof(zero));
	assert_int_equal(bpf_map_update_elem(in->maps.global_stats, &key, zero,
					     BPF_ANY), 0);
}

/* The quiet front's score is the cache's state, not a counter: zeroing
 * the counters leaves the front quiet. Were the score among them, the
 * reset would wake it, and it would look again for every packet until
 * SL_FRONT_QUIET net misses put it back.
 */
static void test_front_quiet_survives_stats_reset(void **state)
{
	struct pair *p = *state;
	struct sl_global_stats g;
	char src[32];
	struct pkt pk;
	unsigned r, i;
	__u64 score;

	pair_apply(p, limit2);
	for (r = 0; r < 5; r++)
		turns_round(p);
	g = sl_test_global_stats(&p->a);
	assert_true(g.front_skipped > 0);
	score = front_score(&p->a);
	assert_true(score > SL_FRONT_QUIET - SL_FRONT_HIT_CREDIT);
	zero_global_stats(&p->a);
	zero_global_stats(&p->b);
	assert_int_equal(front_score(&p->a), score);
	/* far fewer packets than it takes to go quiet from a score of 0: a
	 * front woken by the reset would let none of them skip it (a probe's
	 * hit wakes the quiet front for a few packets, so not all do)
	 */
	for (i = 0; i < SL_FRONT_QUIET / 4; i++) {
		turn_source(i, src);
		mk(&pk, src, DST, UDP, 53, 0, 0);
		step(p, &pk);
	}
	g = sl_test_global_stats(&p->a);
	if (g.front_skipped < SL_FRONT_QUIET / 32)
		fail_msg("%u packets after the reset: %llu skipped the front",
			 SL_FRONT_QUIET / 4,
			 (unsigned long long)g.front_skipped);
	same_counters(p);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, pair_setup, pair_teardown)
	const struct CMUnitTest tests[] = {
		T(test_front_entry_drops_blocked_flow),
		T(test_front_apply_raising_limit),
		T(test_front_reset_forgets),
		T(test_front_block_end_on_model_clock),
		T(test_front_second_rule_order),
		T(test_front_never_for_shadow_or_after_continue),
		T(test_front_syn_entry_is_not_the_acks),
		T(test_front_search_colliding_flows),
		T(test_front_quiet_when_sources_take_turns),
		T(test_front_quiet_survives_stats_reset),
	};
#undef T

	return cmocka_run_group_tests(tests, pair_group_setup, NULL);
}
