// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: sync_fixture instance_fixture */
/*
 * sliding-log, sliding-counter and token-bucket count across nodes too:
 * B's kernel accepts limit - N after A's N log entries; the counter
 * weighs A's slice and B's own in one estimate, floored once; the
 * bucket's level is A's and B's units drained once.
 *
 * Peer sync end to end through the real BPF object (tests/lib/sync_fixture.h).
 * Expected counts are worked out here from the rule (limit 100 per 10 s)
 * and the layouts' documented arithmetic (include/sl_peer.h), never read
 * back from the code under test. Every test uses clients never seen
 * before and a model time a minute past the previous test's, so nothing
 * carries over.
 */
#define _GNU_SOURCE
#include <errno.h>
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
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <cmocka.h>

#include "slicelimit.h"
#include "state/client_view.h"
#include "util/parse.h"
#include "instance/instance.h"
#include "instance_fixture.h"
#include "instance/instance_maps.h"
#include "replay/request_packet.h"
#include "rules/rules.h"
#include "sl_key.h"
#include "sl_peer.h"
#include "sync/engine.h"
#include "sync/wire.h"
#include "sync_fixture.h"

/* ---- the other algorithms --------------------------------------------------- */

/* A accepts `n` from a new client on `port` at `t`; its round at t + 100
 * carries n units for it, merged by B at t + 150.
 */
static struct sl_addr sync_port(struct fixture *f, __u16 port, __u64 t,
				unsigned n)
{
	struct sl_addr who = new_client(f);
	struct dgrams d;
	unsigned i;

	assert_int_equal(send_port(&f->a, &who, port, t, n, NULL), n);
	collect(f->sa, t + 100, &d);
	assert_int_equal(units_for(&d, &who), n);
	for (i = 0; i < d.n; i++)
		assert_int_equal(receive(f, d.msg[i], d.len[i], t + 150),
				 SL_SYNC_MERGED);
	return who;
}

/* What B's userspace says of a client (query, Retry-After, /v1/check):
 * the kernel's own arithmetic, so it must agree with the verdicts after.
 */
static void assert_b_view(struct fixture *f, const char *rule_name,
			  const struct sl_addr *who, __u64 t, __u64 used)
{
	struct sl_client_view cv;
	struct sl_client_key k;
	struct sl_rule rb;

	assert_int_equal(live_rule(&f->b, rule_name, &rb), 0);
	k = key_of(&rb, who);
	assert_int_equal(sl_client_view_read(&f->b.maps, &rb, &k, t, &cv), 0);
	if (cv.used != used || cv.remaining != LIMIT - used)
		fail_msg("%s: B's view says used %llu remaining %llu, expected "
			 "%llu and %llu", rule_name, ULL(cv.used),
			 ULL(cv.remaining), ULL(used), ULL(LIMIT - used));
}

/* sliding-log: A's 30 entries reach B as pieces; B accepts 70. */
static void test_sliding_log_synced_b_accepts_limit_minus_n(void **st)
{
	struct fixture *f = *st;
	struct sl_addr who = sync_port(f, 11, f->now, N_SENT);
	unsigned first_reject;

	assert_b_view(f, "sync-log", &who, f->now + 200, N_SENT);
	assert_int_equal(send_port(&f->b, &who, 11, f->now + 200, LIMIT,
				   &first_reject), LIMIT - N_SENT);
	assert_int_equal(first_reject, LIMIT - N_SENT);
}

/* sliding-counter, limit 100 per 10 s in 10 slices of S = 1 s (T is a
 * slice start). A and B each accept 41 at T. At T + 10500 that slice is
 * the one before the window, weighed (S - 500) / S = 1/2: the fleet's
 * estimate is 82 / 2 = 41, so B accepts 59. Weighing each node's part on
 * its own (20 + 20) would give 60; the peers' slice counted whole, 18;
 * ignored, or counted as sliding does (its first accept is out of the
 * window), 79.
 */
static void test_sliding_counter_fleet_weighed_once(void **st)
{
	struct fixture *f = *st;
	struct sl_addr who = new_client(f), fresh;
	unsigned first_reject, i;
	struct dgrams d;

	assert_int_equal(f->now % 1000, 0);
	assert_int_equal(send_port(&f->a, &who, 12, f->now, 41, NULL), 41);
	assert_int_equal(send_port(&f->b, &who, 12, f->now, 41, NULL), 41);
	collect(f->sa, f->now + 100, &d);
	assert_int_equal(units_for(&d, &who), 41);
	for (i = 0; i < d.n; i++)
		assert_int_equal(receive(f, d.msg[i], d.len[i], f->now + 150),
				 SL_SYNC_MERGED);
	assert_b_view(f, "sync-counter", &who, f->now + 10500, 41);
	assert_int_equal(send_port(&f->b, &who, 12, f->now + 10500, LIMIT,
				   &first_reject), 59);
	assert_int_equal(first_reject, 59);
	/* inside the window the peers' slice counts whole: 100 - 30 */
	fresh = sync_port(f, 12, f->now + 20000, N_SENT);
	assert_int_equal(send_port(&f->b, &fresh, 12, f->now + 20500, LIMIT,
				   &first_reject), LIMIT - N_SENT);
	assert_int_equal(first_reject, LIMIT - N_SENT);
}

/* token-bucket, capacity 100, 10 per second (a token per 100 ms). Its
 * peer slices are ceil(20 refills of 10 s / 15) = 13,334 ms. At a slice
 * start t1 A accepts 60 of one client, and B, having heard, 40 at
 * t1 + 200. At t1 + 3000 one fleet bucket holds 100 - 30 = 70, and so
 * does the level over the slice (every unit at or after its start): B
 * accepts 30. B alone would hold 40 - 28 = 12 and accept 88; its own and
 * A's drained each on its own (12 + 30), 58.
 */
static void test_token_bucket_fleet_level_drained_once(void **st)
{
	struct fixture *f = *st;
	struct sl_addr who;
	__u64 ps = 13334, t1 = (f->now / ps + 1) * ps, t2 = t1 + 3000;
	unsigned first_reject;

	who = sync_port(f, 13, t1, 60);
	assert_int_equal(send_port(&f->b, &who, 13, t1 + 200, 40, NULL), 40);
	assert_b_view(f, "sync-bucket", &who, t2, 70);
	assert_int_equal(send_port(&f->b, &who, 13, t2, LIMIT, &first_reject),
			 30);
	assert_int_equal(first_reject, 30);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, begin, end)
	const struct CMUnitTest tests[] = {
		T(test_sliding_log_synced_b_accepts_limit_minus_n),
		T(test_sliding_counter_fleet_weighed_once),
		T(test_token_bucket_fleet_level_drained_once),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
