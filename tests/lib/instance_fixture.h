/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the BPF tests share to run the real program: a private model-clock
 * instance, opened with a clear reason when it cannot be, and the CPUs to
 * give back after sl_instance_run(cpu >= 0) pinned the thread.
 */
#ifndef SL_TEST_INSTANCE_FIXTURE_H
#define SL_TEST_INSTANCE_FIXTURE_H

#define _GNU_SOURCE
#include <sched.h>
#include "slicelimit.h"
#include "instance/instance.h"
#include "rules/rules.h"

/* The CPUs the test started with (sl_test_save_cpus). */
extern cpu_set_t sl_test_initial_cpus;

void sl_test_save_cpus(void);
void sl_test_restore_cpus(void);

/* clients: table capacity (0: the default); the clock starts at t0_ms. */
int sl_test_open_instance(struct sl_instance *in, unsigned clients,
			  __u64 t0_ms);

/* Parse a rule file's text and apply it to an instance's maps: 0, or the
 * error (the parser's messages are on stderr).
 */
int sl_test_apply_yaml(struct sl_instance *in, const char *yaml);

/* The same, failing the test on an error. */
void sl_test_apply(struct sl_instance *in, const char *yaml);

/* The counters summed over the CPUs, and the live rule called NAME; each
 * fails the test when it cannot be read (or there is no such rule).
 */
struct sl_global_stats sl_test_global_stats(struct sl_instance *in);
struct sl_rule_stats sl_test_rule_stats(struct sl_instance *in, __u32 id);
struct sl_rule sl_test_live_rule(struct sl_instance *in, const char *name);

/* Keys on probation (sl_newcomers): seen once, no state yet. */
unsigned sl_test_newcomers_held(struct sl_instance *in);

/* Load the program once before a group's tests, so a verifier refusal is
 * reported once rather than by every test; setup and teardown are the
 * group's own per-test pair.
 */
int sl_test_load_once(void **state, int (*setup)(void **),
		      int (*teardown)(void **));

#endif /* SL_TEST_INSTANCE_FIXTURE_H */
