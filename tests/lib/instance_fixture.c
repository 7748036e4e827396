// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* tests/lib/instance_fixture.h: one copy of the saved CPUs for a binary
 * whose fixture and tests live in different files.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include "core/instance.h"
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
