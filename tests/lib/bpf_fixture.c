// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The fixture of tests/lib/bpf_fixture.h. */
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
#include "instance_fixture.h"
#include "bpf_fixture.h"

int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (sl_test_open_instance(&f->in, 4096, T0)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

int teardown(void **state)
{
	struct fixture *f = *state;

	sl_instance_close(&f->in);
	free(f);
	sl_test_restore_cpus();	/* give the next test every CPU */
	return 0;
}

int group_setup(void **state)
{
	return sl_test_load_once(state, setup, teardown);
}

const char *verdict_name(enum verdict v)
{
	return v == DROP ? "drop" : "pass";
}

/* Whether BPF_PROG_TEST_RUN takes the first `len` bytes of p. XDP needs an
 * Ethernet header. An skb program needs more: the kernel rejects an skb
 * left empty once eth_type_trans() has pulled the Ethernet header, and
 * (since 12bec2bd4b76, "reject short IPv4/IPv6 inputs") one whose outer
 * ethertype is IPv4 or IPv6 but whose fixed IP header is incomplete. Those
 * cuts are covered through XDP only.
 */
bool runnable(bool tc, const struct pkt *p, unsigned len)
{
	unsigned type = p->b[12] << 8 | p->b[13];

	if (len < ETH_HLEN)
		return false;
	if (!tc)
		return true;
	if (type == ETH_P_IP)
		return len >= ETH_HLEN + 20;
	if (type == ETH_P_IPV6)
		return len >= ETH_HLEN + 40;
	return len > ETH_HLEN;
}

/* Run `len` bytes of p on `cpu` (-1: anywhere) through XDP or TC. */
enum verdict run_len(struct fixture *f, bool tc, int cpu,
		     const struct pkt *p, unsigned len)
{
	__u32 retval = ~0U;
	int err;

	err = sl_instance_run(&f->in, tc, cpu, p->b, len, 1, &retval, NULL);
	if (err)
		fail_msg("%s test run of %u bytes: %s", tc ? "tc" : "xdp", len,
			 strerror(-err));
	if (tc) {
		assert_true(retval == TC_ACT_OK || retval == TC_ACT_SHOT);
		return retval == TC_ACT_SHOT ? DROP : PASS;
	}
	assert_true(retval == XDP_PASS || retval == XDP_DROP);
	return retval == XDP_DROP ? DROP : PASS;
}

enum verdict run(struct fixture *f, const struct pkt *p)
{
	return run_len(f, false, -1, p, p->len);
}

void set_time(struct fixture *f, __u64 ms)
{
	sl_instance_set_time(&f->in, ms);
}

void apply(struct fixture *f, const char *yaml)
{
	sl_test_apply(&f->in, yaml);
}

struct sl_global_stats global_stats(struct fixture *f)
{
	return sl_test_global_stats(&f->in);
}

struct sl_rule_stats stats_of_id(struct fixture *f, __u32 id)
{
	return sl_test_rule_stats(&f->in, id);
}

/* The live rule called `name`; fails the test when there is none. */
struct sl_rule live_rule(struct fixture *f, const char *name)
{
	return sl_test_live_rule(&f->in, name);
}

__u32 id_of(struct fixture *f, const char *name)
{
	return live_rule(f, name).id;
}

struct sl_rule_stats stats_of(struct fixture *f, const char *name)
{
	return stats_of_id(f, id_of(f, name));
}

/* Client keys held for rule `id`. */
unsigned clients_of(struct fixture *f, __u32 id)
{
	struct sl_client_key key, next;
	void *prev = NULL;
	unsigned n = 0;

	while (!bpf_map_get_next_key(f->in.maps.clients, prev, &next)) {
		n += next.rule_id == id;
		key = next;
		prev = &key;
	}
	return n;
}

/* Which rule's counters moved for one packet (NULL: none, and no_rule
 * moved); fails the test if more than one did.
 */
const char *matched(struct fixture *f, bool tc, const struct pkt *p)
{
	struct sl_rule *rules = NULL;
	struct sl_rule_stats before[64], after;
	struct sl_global_stats g0 = global_stats(f), g1;
	struct sl_config cfg;
	const char *hit = NULL;
	static char name[32];
	unsigned nr = 0, i;

	assert_int_equal(sl_rules_read_live(&f->in.maps, &rules, &nr, &cfg), 0);
	assert_true(nr <= 64);
	for (i = 0; i < nr; i++)
		before[i] = stats_of_id(f, rules[i].id);
	run_len(f, tc, -1, p, p->len);
	g1 = global_stats(f);
	for (i = 0; i < nr; i++) {
		after = stats_of_id(f, rules[i].id);
		if (after.passed + after.dropped + after.exempt +
		    after.shadow_dropped == before[i].passed +
		    before[i].dropped + before[i].exempt +
		    before[i].shadow_dropped)
			continue;
		if (hit)
			fail_msg("both '%s' and '%s' counted one packet", hit,
				 rules[i].name);
		snprintf(name, sizeof(name), "%s", rules[i].name);
		hit = name;
	}
	free(rules);
	assert_int_equal(g1.no_rule - g0.no_rule, hit ? 0 : 1);
	assert_int_equal(g1.malformed + g1.non_ip + g1.fragments,
			 g0.malformed + g0.non_ip + g0.fragments);
	return hit;
}

/* Send one packet every `gap` ms from `start` for `windows` windows of
 * `window` ms, alternating over `ncpus` CPUs (0: anywhere); count accepts
 * per window into acc[].
 */
void send_steady(struct fixture *f, const struct pkt *p, __u64 start,
		 unsigned gap, unsigned window, unsigned windows,
		 int ncpus, unsigned *acc)
{
	unsigned t, n = 0;

	memset(acc, 0, windows * sizeof(*acc));
	for (t = 0; t < window * windows; t += gap, n++) {
		int cpu = ncpus ? (int)(n % ncpus) : -1;

		set_time(f, start + t);
		if (run_len(f, false, cpu, p, p->len) == PASS)
			acc[t / window]++;
	}
}
