// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: none */
/*
 * What loading the object costs the verifier, per program, with the
 * production clock (what `attach` and `run` load) and with the model
 * clock (what the tests load): the instructions it verified, printed,
 * and held under a budget. A branch in the shared algorithm can give the
 * verifier a path of its own through everything after it, multiplying
 * this count (and the time every attach takes) without changing one
 * verdict; no other test would notice. The budget is about twice the
 * count on the kernel the suite runs on, and far below the kernel's
 * limit of a million.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cmocka.h>

#include "instance/instance.h"
#include "slicelimit.skel.h"

#define VERIFIED_BUDGET	250000

static void check_budget(int model_clock)
{
	struct sl_instance_opts o = { .model_clock = model_clock };
	struct sl_instance in;
	struct bpf_program *prog;

	assert_int_equal(sl_instance_open(&in, &o), 0);
	bpf_object__for_each_program(prog, in.skel->obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		memset(&info, 0, sizeof(info));
		assert_int_equal(bpf_obj_get_info_by_fd(bpf_program__fd(prog),
							&info, &len), 0);
		printf("# %s clock: %s verified %u instructions (budget %u)\n",
		       model_clock ? "model" : "production",
		       bpf_program__name(prog), info.verified_insns,
		       VERIFIED_BUDGET);
		assert_true(info.verified_insns > 0);
		assert_true(info.verified_insns <= VERIFIED_BUDGET);
	}
	sl_instance_close(&in);
}

static void test_load_production_clock_within_budget(void **state)
{
	(void)state;
	check_budget(0);
}

static void test_load_model_clock_within_budget(void **state)
{
	(void)state;
	check_budget(1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_production_clock_within_budget),
		cmocka_unit_test(test_load_model_clock_within_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
