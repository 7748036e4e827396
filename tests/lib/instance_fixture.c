// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* tests/lib/instance_fixture.h: one copy of the saved CPUs for a binary
 * whose fixture and tests live in different files.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <bpf/bpf.h>
#include "instance/instance.h"
#include "instance/instance_maps.h"
#include "rules/rules.h"
#include "instance_fixture.h"

cpu_set_t sl_test_initial_cpus;

void sl_test_save_cpus(void)
{
	sched_getaffinity(0, sizeof(sl_test_initial_cpus), &sl_test_initial_cpus);
}

void sl_test_restore_cpus(void)
{
	sched_setaffinity(0, sizeof(sl_test_initial_cpus), &sl_test_initial_cpus);
}

int sl_test_open_instance(struct sl_instance *in, unsigned clients,
			  __u64 t0_ms)
{
	struct sl_instance_opts o = { .clients = clients, .model_clock = true };
	int err = sl_instance_open(in, &o);

	if (err) {
		fprintf(stderr, "sl_instance_open: %s%s\n", strerror(-err),
			err == -EPERM ? " (run as root)" : "");
		return -1;
	}
	sl_instance_set_time(in, t0_ms);
	return 0;
}

int sl_test_apply_yaml(struct sl_instance *in, const char *yaml)
{
	struct sl_ruleset rs;
	int err;

	err = sl_rules_load_buffer("test.yaml", yaml, strlen(yaml), &rs);
	if (err)
		return err;
	err = sl_rules_apply(&in->maps, &rs);
	sl_rules_free(&rs);
	return err;
}

void sl_test_apply(struct sl_instance *in, const char *yaml)
{
	assert_int_equal(sl_test_apply_yaml(in, yaml), 0);
}

struct sl_global_stats sl_test_global_stats(struct sl_instance *in)
{
	struct sl_global_stats gs;

	assert_int_equal(sl_percpu_sum_u64(&in->maps, in->maps.global_stats,
					   0, &gs, sizeof(gs)), 0);
	return gs;
}

unsigned sl_test_newcomers_held(struct sl_instance *in)
{
	struct sl_newcomer_bucket b;
	__u32 i, buckets = sl_map_capacity(in->maps.newcomers);
	unsigned n = 0, w;

	for (i = 0; i < buckets; i++) {
		assert_int_equal(bpf_map_lookup_elem(in->maps.newcomers, &i, &b), 0);
		for (w = 0; w < SL_NEWCOMER_WAYS; w++)
			n += b.tag[w] != 0;
	}
	return n;
}

struct sl_rule_stats sl_test_rule_stats(struct sl_instance *in, __u32 id)
{
	struct sl_rule_stats rs;

	assert_int_equal(sl_percpu_sum_u64(&in->maps, in->maps.rule_stats,
					   id, &rs, sizeof(rs)), 0);
	return rs;
}

struct sl_rule sl_test_live_rule(struct sl_instance *in, const char *name)
{
	struct sl_rule *rules = NULL, found;
	struct sl_config cfg;
	unsigned nr = 0, i;

	assert_int_equal(sl_rules_read_live(&in->maps, &rules, &nr, &cfg), 0);
	for (i = 0; i < nr; i++)
		if (!strcmp(rules[i].name, name))
			break;
	if (i == nr) {
		free(rules);
		fail_msg("no live rule '%s'", name);
	}
	found = rules[i];
	free(rules);
	return found;
}

int sl_test_load_once(void **state, int (*setup)(void **),
		      int (*teardown)(void **))
{
	int err;

	sl_test_save_cpus();
	err = setup(state);
	if (!err)
		err = teardown(state);
	*state = NULL;
	return err;
}
