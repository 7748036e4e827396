// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: redis_fixture redis_fake instance_fixture */
/*
 * The Redis sync backend's URL forms (user/sync/redis.c), without a
 * server (tests/lib/redis_fixture.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <hiredis/hiredis.h>
#include <cmocka.h>

#include "slicelimit.h"
#include "util/log.h"
#include "instance/instance.h"
#include "instance_fixture.h"
#include "instance/instance_maps.h"
#include "replay/request_packet.h"
#include "rules/rules.h"
#include "sync/engine.h"
#include "sync/redis.h"
#include "sync/wire.h"
#include "redis_fixture.h"

/* ---- without a server -------------------------------------------------- */

static void test_redis_url_forms(void **st)
{
	static const struct {
		const char *url;
		bool ok;
	} cases[] = {
		{ "redis://127.0.0.1:6379", true },
		{ "redis://redis.example:7000/", true },
		{ "redis://[::1]:6379", true },
		{ "redis://localhost", true },
		{ "redis://", false },
		{ "redis://:6379", false },
		{ "redis://h:0", false },
		{ "redis://h:65536", false },
		{ "redis://h:12x", false },
		{ "redis://h:6379/0", false },
		{ "redis://user:pw@h:6379", false },
		{ "redis://[::1:6379", false },
		{ "http://h:6379", false },
	};
	struct sl_redis *r;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = sl_redis_new(cases[i].url, 1, INTERVAL_MS);
		if (!!r != cases[i].ok)
			fail_msg("%s: %s", cases[i].url,
				 r ? "taken" : "refused");
		sl_redis_free(r);
	}
}

int main(void)
{
#define T(name, setup) cmocka_unit_test_setup_teardown(name, setup, end)
	const struct CMUnitTest tests[] = {
		T(test_redis_url_forms, begin_none),
	};
#undef T

	if (getenv("SL_TEST_VERBOSE"))
		sl_verbose = 2;
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
