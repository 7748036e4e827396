/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the BPF tests share to run the real program: a private model-clock
 * instance, opened with a clear reason when it cannot be, and the CPUs to
 * give back after sl_instance_run(cpu >= 0) pinned the thread.
 */
#ifndef SL_TEST_INSTANCE_FIXTURE_H
#define SL_TEST_INSTANCE_FIXTURE_H

#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include "core/instance.h"
#include "rules/rules.h"

static cpu_set_t sl_test_initial_cpus;

static inline void sl_test_save_cpus(void)
{
	sched_getaffinity(0, sizeof(sl_test_initial_cpus), &sl_test_initial_cpus);
}

static inline void sl_test_restore_cpus(void)
{
	sched_setaffinity(0, sizeof(sl_test_initial_cpus), &sl_test_initial_cpus);
}

/* clients: table capacity (0: the default); the clock starts at t0_ms. */
static inline int sl_test_open_instance(struct sl_instance *in,
					unsigned clients, __u64 t0_ms)
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

/* Parse a rule file's text and apply it to an instance's maps: 0, or the
 * error (the parser's messages are on stderr).
 */
static inline int sl_test_apply_yaml(struct sl_instance *in, const char *yaml)
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

/* Load the program once before a group's tests, so a verifier refusal is
 * reported once rather than by every test; setup and teardown are the
 * group's own per-test pair.
 */
static inline int sl_test_load_once(void **state, int (*setup)(void **),
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

#endif /* SL_TEST_INSTANCE_FIXTURE_H */
