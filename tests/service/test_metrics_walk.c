// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: instance_fixture */
/*
 * /metrics counts the client states with batched lookups
 * (user/service/metrics.c, through state/aggregate.c), not one
 * bpf_map_get_next_key() syscall per key: with a few thousand clients in
 * each table of a real instance, the figures it renders are what a walk
 * key by key counts, and the render makes (almost) no get_next_key call.
 *
 * The calls are counted by linking this binary with
 * -Wl,--wrap=bpf_map_get_next_key (the Makefile): every call the user/
 * objects make goes through __wrap_bpf_map_get_next_key below.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <cmocka.h>

#include "slicelimit.h"
#include "instance/instance.h"
#include "service/metrics.h"
#include "instance_fixture.h"

#define T0_MS		1000000000ULL
#define CLIENTS		3000	/* in sl_clients; a third as many in the others */

int __real_bpf_map_get_next_key(int fd, const void *key, void *next_key);

static unsigned long next_key_calls;

int __wrap_bpf_map_get_next_key(int fd, const void *key, void *next_key)
{
	next_key_calls++;
	return __real_bpf_map_get_next_key(fd, key, next_key);
}

static struct sl_instance in;
static struct sl_http_stats http_stats;

static int setup(void **state)
{
	(void)state;
	return sl_test_open_instance(&in, 2 * CLIENTS, T0_MS) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	sl_instance_close(&in);
	return 0;
}

/* n distinct keys of rule `rule_id` into table fd, zero states. */
static void fill(int fd, __u32 value_size, unsigned n, __u16 rule_id)
{
	void *val = calloc(1, value_size);
	struct sl_client_key k;
	unsigned i;

	assert_non_null(val);
	for (i = 0; i < n; i++) {
		memset(&k, 0, sizeof(k));
		k.addr.byte[10] = 0xff;
		k.addr.byte[11] = 0xff;
		k.addr.byte[12] = 198;
		k.addr.byte[13] = 18;
		k.addr.byte[14] = i >> 8;
		k.addr.byte[15] = i & 0xff;
		k.rule_id = rule_id;
		assert_int_equal(bpf_map_update_elem(fd, &k, val, BPF_NOEXIST), 0);
	}
	free(val);
}

/* Keys in fd, one __real_ get_next_key call each. */
static unsigned count_key_by_key(int fd)
{
	struct sl_client_key key, next;
	const void *prev = NULL;
	unsigned n = 0;

	while (!__real_bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		n++;
	}
	return n;
}

/* The value of the line "slicelimit_clients{table="NAME"} N". */
static long rendered_clients(const char *text, const char *table)
{
	char needle[96];
	const char *p;

	snprintf(needle, sizeof(needle), "slicelimit_clients{table=\"%s\"} ",
		 table);
	p = strstr(text, needle);
	return p ? strtol(p + strlen(needle), NULL, 10) : -1;
}

static void test_metrics_counts_clients_without_a_syscall_per_key(void **state)
{
	const struct sl_maps *m = &in.maps;
	unsigned long calls;
	char *text;

	(void)state;
	fill(m->clients, sizeof(struct sl_client), CLIENTS, 1);
	fill(m->clients_plain, sizeof(struct sl_client_plain), CLIENTS / 3, 2);
	fill(m->clients_log, sizeof(struct sl_client_log), CLIENTS / 3, 3);

	next_key_calls = 0;
	text = sl_metrics_render(m, &http_stats);
	calls = next_key_calls;
	assert_non_null(text);
	print_message("render: %lu get_next_key calls for %u clients\n", calls,
		      CLIENTS + 2 * (CLIENTS / 3));

	/* the figures: what a walk key by key counts */
	assert_int_equal(rendered_clients(text, "sl_clients"),
			 count_key_by_key(m->clients));
	assert_int_equal(rendered_clients(text, "sl_clients"), CLIENTS);
	assert_int_equal(rendered_clients(text, "sl_clients_plain"),
			 count_key_by_key(m->clients_plain));
	assert_int_equal(rendered_clients(text, "sl_clients_plain"), CLIENTS / 3);
	assert_int_equal(rendered_clients(text, "sl_clients_log"),
			 count_key_by_key(m->clients_log));
	assert_int_equal(rendered_clients(text, "sl_clients_log"), CLIENTS / 3);
	/* and not one syscall per key: the rest of the render walks small
	 * maps (devices, rules) only
	 */
	assert_true(calls < 100);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_metrics_counts_clients_without_a_syscall_per_key,
			setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
