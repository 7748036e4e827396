// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: none */
/*
 * Host unit tests of the HTTP API's result body (user/service/result_body.c):
 * the fast path writes the very bytes json-c writes, for keys made of every
 * byte value, at the edges of the integers, and when the buffer is short;
 * its integers as printf writes them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "service/result_body.h"

static void assert_same_as_json_c(const struct sl_result_body *b)
{
	char fast[1024], ref[1024];
	int n = sl_result_body_format(b, fast, sizeof(fast));
	int m = sl_result_body_format_json_c(b, ref, sizeof(ref));

	assert_true(m > 0);
	assert_int_equal(n, m);
	assert_string_equal(fast, ref);
}

static void test_result_body_every_key_byte_as_json_c(void **state)
{
	struct sl_result_body b = {
		.allowed = true, .rule = "api", .limit = 5, .window_s = 60,
		.used = 1, .remaining = 4, .reset_s = 60, .decision = "kernel",
	};
	char key[8];
	int c;

	(void)state;
	for (c = 1; c < 256; c++) {
		snprintf(key, sizeof(key), "a%cb", c);
		b.key = key;
		assert_same_as_json_c(&b);
		b.rule = key;		/* the rule's name likewise */
		assert_same_as_json_c(&b);
		b.rule = "api";
	}
	b.key = "client-00001";
	assert_same_as_json_c(&b);
	b.key = "user 1/x";
	assert_same_as_json_c(&b);
	b.key = "10.77.0.9";
	assert_same_as_json_c(&b);
}

static void test_result_body_integer_edges_as_json_c(void **state)
{
	const int64_t v[] = { 0, 1, -1, 4000000000, INT64_MAX, INT64_MIN };
	struct sl_result_body b = {
		.rule = "tight", .key = "k", .decision = "central",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		b.allowed = i & 1;
		b.limit = b.used = v[i];
		b.window_s = b.remaining = v[(i + 1) % 6];
		b.reset_s = b.retry_after_s = v[(i + 2) % 6];
		assert_same_as_json_c(&b);
	}
}

static void test_result_body_short_buffer_is_enospc(void **state)
{
	struct sl_result_body b = {
		.rule = "api", .key = "client", .decision = "kernel",
	};
	char buf[16];

	(void)state;
	assert_int_equal(sl_result_body_format(&b, buf, sizeof(buf)), -ENOSPC);
	b.key = "needs/escaping";
	assert_int_equal(sl_result_body_format(&b, buf, sizeof(buf)), -ENOSPC);
}

static void test_format_u64_i64_as_printf(void **state)
{
	const uint64_t u[] = { 0, 1, 9, 10, 99, 100, 4000000000, UINT64_MAX };
	const int64_t v[] = { 0, -1, 1, -10, INT64_MAX, INT64_MIN };
	char got[24], want[24];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		snprintf(want, sizeof(want), "%" PRIu64, u[i]);
		assert_int_equal(sl_format_u64(u[i], got), strlen(want));
		assert_string_equal(got, want);
	}
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		snprintf(want, sizeof(want), "%" PRId64, v[i]);
		assert_int_equal(sl_format_i64(v[i], got), strlen(want));
		assert_string_equal(got, want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_result_body_every_key_byte_as_json_c),
		cmocka_unit_test(test_result_body_integer_edges_as_json_c),
		cmocka_unit_test(test_result_body_short_buffer_is_enospc),
		cmocka_unit_test(test_format_u64_i64_as_printf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
