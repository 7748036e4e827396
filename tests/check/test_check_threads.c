// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: instance_fixture */
/*
 * The HTTP API's checker (user/service/check_local.c) from many threads at
 * once, through the real BPF object (sl_check by BPF_PROG_TEST_RUN, private
 * instance, model clock), the threads spread over CPUs 0 and 1:
 *
 * - threads checking one key at the same instant pass exactly the limit,
 *   under every algorithm that counts a request in the client's shared
 *   state (sliding, fixed, token-bucket);
 * - keys that are different addresses of one client (a /24 rule) are one
 *   client: together they pass the limit, not a limit each;
 * - threads checking keys of their own each pass their own limit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <bpf/libbpf.h>

#include "slicelimit.h"
#include "instance/instance.h"
#include "instance_fixture.h"
#include "service/check.h"
#include "slicelimit.skel.h"

#define T0		(20000ULL * 60000)	/* model ms, a whole minute */
#define THREADS		8
#define TRIES		60	/* checks per thread: all but the limit over */
#define LIMIT		40

struct fixture {
	struct sl_instance in;
	struct sl_checker checker;
};

struct worker {
	struct fixture *f;
	pthread_barrier_t *start;
	const char *rule;
	char key[64];
	int cpu;
	unsigned allowed;
	unsigned errors;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f || sl_test_open_instance(&f->in, 0, T0)) {
		free(f);
		return -1;
	}
	sl_test_apply(&f->in,
		"rules:\n"
		"  - {name: sliding, limit: 40, window: 1h, algorithm: sliding}\n"
		"  - {name: fixed, limit: 40, window: 1h, algorithm: fixed}\n"
		"  - {name: tb, limit: 40, window: 1h, algorithm: token-bucket}\n"
		"  - {name: net24, limit: 40, window: 1h,\n"
		"     key: {ipv4_prefix: 24}, api_key_is_address: true}\n"
		"  - {name: own, limit: 5, window: 1h}\n");
	if (sl_checker_init(&f->checker,
			    bpf_program__fd(f->in.skel->progs.sl_check),
			    &f->in.maps)) {
		sl_instance_close(&f->in);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	sl_checker_fini(&f->checker);
	sl_instance_close(&f->in);
	free(f);
	sl_test_restore_cpus();
	return 0;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct sl_check_result res;
	unsigned i;

	if (w->cpu >= 0)
		sl_pin_to_cpu(w->cpu);
	pthread_barrier_wait(w->start);
	for (i = 0; i < TRIES; i++) {
		if (sl_check(&w->f->checker, w->rule, w->key, 1, &res)) {
			w->errors++;
			continue;
		}
		w->allowed += res.allowed;
	}
	return NULL;
}

/* THREADS workers at once on RULE, worker i with the key KEYFMT % i;
 * the passes summed.
 */
static unsigned run_workers(struct fixture *f, const char *rule,
			    const char *keyfmt, struct worker *w)
{
	pthread_t t[THREADS];
	pthread_barrier_t start;
	unsigned i, allowed = 0;
	bool two = CPU_ISSET(0, &sl_test_initial_cpus) &&
		   CPU_ISSET(1, &sl_test_initial_cpus);

	assert_int_equal(pthread_barrier_init(&start, NULL, THREADS), 0);
	for (i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .f = f, .start = &start, .rule = rule,
					.cpu = two ? (int)(i % 2) : -1 };
		snprintf(w[i].key, sizeof(w[i].key), keyfmt, i + 1);
		assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].errors, 0);
		allowed += w[i].allowed;
	}
	pthread_barrier_destroy(&start);
	return allowed;
}

static void test_check_threads_one_key_pass_exactly_the_limit(void **state)
{
	static const char *const rules[] = { "sliding", "fixed", "tb" };
	struct fixture *f = *state;
	struct worker w[THREADS];
	unsigned r;

	for (r = 0; r < 3; r++) {
		unsigned allowed = run_workers(f, rules[r], "shared", w);

		print_message("# rule %s: %u of %u checks of one key passed\n",
			      rules[r], allowed, THREADS * TRIES);
		assert_int_equal(allowed, LIMIT);
	}
}

static void test_check_threads_addresses_of_one_client_share_its_limit(void **state)
{
	struct fixture *f = *state;
	struct worker w[THREADS];

	/* 198.51.100.1 .. .8: one client of the /24 rule */
	assert_int_equal(run_workers(f, "net24", "198.51.100.%u", w), LIMIT);
}

static void test_check_threads_own_keys_pass_their_own_limit(void **state)
{
	struct fixture *f = *state;
	struct worker w[THREADS];
	unsigned i;

	assert_int_equal(run_workers(f, "own", "own-%u", w), THREADS * 5);
	for (i = 0; i < THREADS; i++)
		assert_int_equal(w[i].allowed, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_check_threads_one_key_pass_exactly_the_limit,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_check_threads_addresses_of_one_client_share_its_limit,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_check_threads_own_keys_pass_their_own_limit,
			setup, teardown),
	};

	sl_test_save_cpus();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
