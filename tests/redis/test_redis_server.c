// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: redis_fixture redis_fake instance_fixture */
/*
 * The Redis sync backend (user/sync/redis.c) between two nodes through a
 * redis-server of the test's own (tests/lib/redis_fixture.h); what a node
 * makes of its peers is decided by the real program: a test sends
 * packets and counts XDP_PASS.
 *
 *  - units A accepted are counted by B (learned from the index, read as
 *    totals: reading them twice does not count them twice), B's by A, and
 *    a node's own units never come back to it as a peer's;
 *  - so are sliding-log's, sliding-counter's and token-bucket's;
 *  - a store that hangs or dies: the round returns within the command
 *    timeout, the status shows it, reconnects back off, both nodes go on
 *    deciding with what they have, and what A accepted meanwhile reaches B
 *    after the store is back;
 *  - a flushed script cache is loaded again without an error;
 *  - a password and an ACL user log in, a wrong one fails open;
 *  - a client's hash keeps the newest 16 slices, and expires from the
 *    window once two neighbouring slices told the slice length.
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

/* ---- with redis-server ------------------------------------------------- */

static void test_redis_peers_units_count_once_own_never(void **st)
{
	struct sl_addr x = new_client(NET_API), w = new_client(NET_API);
	struct sl_addr v = new_client(NET_API);

	need_redis();
	/* A's 4 reach B, which never saw the client: learned from the index */
	assert_int_equal(send_n(&fx.a, &x, 4), 4);
	step();
	rounds("abb");
	assert_int_equal(send_n(&fx.b, &x, 10), 6);

	/* and B's 6 reach A: 10 in all */
	step();
	rounds("ba");
	assert_int_equal(send_n(&fx.a, &x, 1), 0);

	/* totals are set, not added: B reads v's slice twice (2, then 5) */
	assert_int_equal(send_n(&fx.a, &v, 2), 2);
	rounds("ab");
	assert_int_equal(send_n(&fx.a, &v, 3), 3);
	rounds("ab");
	assert_int_equal(send_n(&fx.b, &v, 10), 5);

	/* A's own units do not come back to A as a peer's */
	assert_int_equal(send_n(&fx.a, &w, 3), 3);
	rounds("aba");
	round_on(&fx.a);
	assert_int_equal(send_n(&fx.a, &w, 10), 7);

	assert_int_equal(status(&fx.a)->backend_up, 1);
	assert_int_equal(status(&fx.b)->backend_up, 1);
	assert_int_equal(status(&fx.a)->backend_errors, 0);
	assert_int_equal(status(&fx.b)->backend_errors, 0);
	assert_int_equal(status(&fx.a)->backend_reconnects, 0);
}

/* sliding-log, sliding-counter (12 slices of 5 s) and token-bucket
 * (capacity 10, a token per 100 s) through the store: A's 4 of a client
 * leave B 6, as for the sums. The bucket's level is taken from its peer
 * slice's start, so the test begins 100 ms into one: 0.001 tokens back.
 */
static void test_redis_log_counter_bucket_counted_across_nodes(void **st)
{
	static const unsigned nets[] = { NET_LOG, NET_COUNTER, NET_BUCKET };
	struct sl_addr x[3];
	unsigned i;

	need_redis();
	fx.now = (fx.now / BUCKET_SLICE_MS + 1) * BUCKET_SLICE_MS + 100;
	for (i = 0; i < 3; i++) {
		x[i] = new_client(nets[i]);
		assert_int_equal(send_n(&fx.a, &x[i], 4), 4);
	}
	step();
	rounds("abb");
	for (i = 0; i < 3; i++)
		if (send_n(&fx.b, &x[i], 10) != 6)
			fail_msg("net 10.%u: B did not count A's 4", nets[i]);
	assert_int_equal(status(&fx.b)->backend_errors, 0);
}

static void test_redis_outage_is_a_peer_outage_and_sync_resumes(void **st)
{
	struct sl_addr x = new_client(NET_API), y = new_client(NET_API);
	struct sl_addr z = new_client(NET_API);
	__u64 errors;
	uint64_t took;
	int i;

	need_redis();
	assert_int_equal(send_n(&fx.a, &x, 4), 4);
	round_on(&fx.a);
	round_on(&fx.b);
	assert_int_equal(status(&fx.a)->backend_up, 1);

	/* a store that stops answering: the round gives up after the
	 * command timeout (half an interval)
	 */
	kill(fx.server, SIGSTOP);
	step();
	took = round_on(&fx.a);
	print_message("round against a stopped server: %llu ms\n", ULL(took));
	assert_true(took < 1000);
	assert_int_equal(status(&fx.a)->backend_up, 0);
	assert_true(status(&fx.a)->backend_errors >= 1);

	/* backing off: the next round returns at once, tries nothing */
	errors = status(&fx.a)->backend_errors;
	took = round_on(&fx.a);
	assert_true(took < 50);
	assert_int_equal(status(&fx.a)->backend_errors, errors);

	/* a store that died */
	stop_server();
	took = round_on(&fx.b);
	assert_true(took < 1000);
	assert_int_equal(status(&fx.b)->backend_up, 0);
	assert_true(status(&fx.b)->backend_errors >= 1);

	/* both go on deciding: B with A's 4 as last read, a new client on
	 * its own; A takes z's 5 meanwhile
	 */
	step();
	assert_int_equal(send_n(&fx.b, &x, 10), 6);
	assert_int_equal(send_n(&fx.b, &y, 11), 10);
	assert_int_equal(send_n(&fx.a, &z, 5), 5);

	/* reconnects back off: one interval, then doubling (2, 4, 5 s): in 8
	 * rounds an interval apart, attempts at +1, +3 and +7 s
	 */
	errors = status(&fx.a)->backend_errors;
	for (i = 0; i < 8; i++) {
		fx.now += INTERVAL_MS;
		took = round_on(&fx.a);
		assert_true(took < 1000);
	}
	assert_int_equal(status(&fx.a)->backend_errors - errors, 3);
	assert_int_equal(status(&fx.a)->backend_up, 0);

	/* the store is back (empty) on the same port */
	assert_int_equal(start_redis(), 0);
	for (i = 0; i < 10 && !status(&fx.a)->backend_up; i++) {
		fx.now += INTERVAL_MS;
		round_on(&fx.a);
	}
	for (i = 0; i < 10 && !status(&fx.b)->backend_up; i++) {
		fx.now += INTERVAL_MS;
		round_on(&fx.b);
	}
	print_message("back after %llu ms of model time; A: %llu errors, %llu "
		      "reconnects\n", ULL(fx.now - T0 - fx.test_no * 3600000ULL),
		      ULL(status(&fx.a)->backend_errors),
		      ULL(status(&fx.a)->backend_reconnects));
	assert_int_equal(status(&fx.a)->backend_up, 1);
	assert_int_equal(status(&fx.b)->backend_up, 1);
	assert_true(status(&fx.a)->backend_reconnects >= 1);
	assert_true(status(&fx.b)->backend_reconnects >= 1);

	/* what A accepted while the store was away reached B */
	step();
	round_on(&fx.b);
	assert_int_equal(send_n(&fx.b, &z, 10), 5);
}

/* A flapping store (down, up, three times over) is three downs and three
 * ups in status (store_transitions: what the engine logs, once each),
 * however many attempts failed while it was away (backend_errors).
 */
static void test_redis_flapping_store_counted_per_change_not_per_attempt(void **st)
{
	__u64 errors0, transitions0;
	int flap, i;

	need_redis();
	round_on(&fx.a);
	assert_int_equal(status(&fx.a)->backend_up, 1);
	errors0 = status(&fx.a)->backend_errors;
	transitions0 = status(&fx.a)->store_transitions;
	for (flap = 0; flap < 3; flap++) {
		stop_server();
		for (i = 0; i < 8; i++) {
			fx.now += INTERVAL_MS;
			round_on(&fx.a);
		}
		assert_int_equal(status(&fx.a)->backend_up, 0);
		assert_int_equal(start_redis(), 0);
		for (i = 0; i < 10 && !status(&fx.a)->backend_up; i++) {
			fx.now += INTERVAL_MS;
			round_on(&fx.a);
		}
		assert_int_equal(status(&fx.a)->backend_up, 1);
	}
	print_message("3 flaps: %llu failed attempts, %llu transitions\n",
		      ULL(status(&fx.a)->backend_errors - errors0),
		      ULL(status(&fx.a)->store_transitions - transitions0));
	assert_int_equal(status(&fx.a)->store_transitions - transitions0, 6);
	assert_true(status(&fx.a)->backend_errors - errors0 > 6);
}

static void test_redis_flushed_scripts_are_loaded_again(void **st)
{
	struct sl_addr x = new_client(NET_API);
	redisReply *q;

	need_redis();
	assert_int_equal(send_n(&fx.a, &x, 3), 3);
	round_on(&fx.a);
	round_on(&fx.b);
	q = command("SCRIPT FLUSH");
	assert_non_null(q);
	assert_int_equal(q->type, REDIS_REPLY_STATUS);
	freeReplyObject(q);

	step();
	assert_int_equal(send_n(&fx.a, &x, 2), 2);
	rounds("ab");
	assert_int_equal(send_n(&fx.b, &x, 10), 5);
	assert_int_equal(status(&fx.a)->backend_errors, 0);
	assert_int_equal(status(&fx.b)->backend_errors, 0);
	assert_int_equal(status(&fx.a)->backend_up, 1);
}

/* AUTH: A logs in as the default user (requirepass), B as the ACL user;
 * they count each other's units as without a password. A wrong password,
 * and none at all, are refused at connect: a backend error each, the
 * backend down, and the node decides alone (fails open: its full limit).
 */
static void test_redis_auth_password_and_acl_user_wrong_one_fails_open(void **st)
{
	struct sl_addr x = new_client(NET_API), y = new_client(NET_API);

	need_redis();
	assert_int_equal(sl_redis_set_auth(fx.a.redis, NULL, "pw-default"), 0);
	assert_int_equal(sl_redis_set_auth(fx.b.redis, "sl", "pw-sl"), 0);
	assert_int_equal(send_n(&fx.a, &x, 4), 4);
	step();
	rounds("abb");
	assert_int_equal(send_n(&fx.b, &x, 10), 6);
	assert_int_equal(status(&fx.a)->backend_up, 1);
	assert_int_equal(status(&fx.b)->backend_up, 1);
	assert_int_equal(status(&fx.a)->backend_errors, 0);
	assert_int_equal(status(&fx.b)->backend_errors, 0);

	/* new engines: A with a wrong password, B (the ACL user) with
	 * another's, then with none
	 */
	node_stop(&fx.a);
	node_stop(&fx.b);
	assert_int_equal(node_start(&fx.a, 1), 0);
	assert_int_equal(node_start(&fx.b, 2), 0);
	assert_int_equal(sl_redis_set_auth(fx.a.redis, NULL, "wrong"), 0);
	assert_int_equal(sl_redis_set_auth(fx.b.redis, "sl", "pw-default"), 0);
	fx.now += 3600000;	/* the last engines' clients idle */
	step();
	round_on(&fx.a);
	round_on(&fx.b);
	assert_int_equal(status(&fx.a)->backend_up, 0);
	assert_int_equal(status(&fx.a)->backend_errors, 1);
	assert_int_equal(status(&fx.b)->backend_up, 0);
	assert_int_equal(status(&fx.b)->backend_errors, 1);
	assert_int_equal(send_n(&fx.a, &y, 4), 4);
	assert_int_equal(send_n(&fx.b, &y, 11), 10);	/* A's 4 unseen */

	assert_int_equal(sl_redis_set_auth(fx.b.redis, NULL, NULL), 0);
	fx.now += 2 * INTERVAL_MS;	/* past the backoff */
	round_on(&fx.b);
	assert_int_equal(status(&fx.b)->backend_up, 0);
	assert_int_equal(status(&fx.b)->backend_errors, 2);
}

static long long key_integer(const char *cmd, const char *key)
{
	redisReply *q = command("%s %s", cmd, key);
	long long v;

	assert_non_null(q);
	assert_int_equal(q->type, REDIS_REPLY_INTEGER);
	v = q->integer;
	freeReplyObject(q);
	return v;
}

static void test_redis_hash_keeps_16_slices_and_expires_from_window(void **st)
{
	struct sl_addr x = new_client(NET_BULK);
	__u64 base = fx.now / SLICE_MS * SLICE_MS;
	char key[64], field[32];
	redisReply *q;
	long long ttl;
	int i;

	need_redis();
	bulk_key(&x, key, sizeof(key));
	/* the key's first packet only puts it on probation; the next, in
	 * the same slice, gives it a state, which the round pushes
	 */
	fx.now = base + 100;
	assert_int_equal(send_n(&fx.a, &x, 1), 1);
	for (i = 0; i < 20; i++) {
		fx.now = base + (__u64)i * SLICE_MS + 100;
		assert_int_equal(send_n(&fx.a, &x, 1), 1);
		round_on(&fx.a);
		ttl = key_integer("PTTL", key);
		/* never shorter than the window */
		assert_true(ttl > WINDOW_MS);
		/* one slice start: the longest window's bound */
		if (i == 0)
			assert_true(ttl > 12LL * 24 * 3600 * 1000);
	}
	/* the slice length is known by now: 16 slices and 2 intervals */
	assert_true(ttl <= 16 * SLICE_MS + 2 * INTERVAL_MS);
	print_message("after 20 slices: %lld fields, expiry %lld ms\n",
		      key_integer("HLEN", key), ttl);
	/* the newest 16: slices 4 to 19 */
	assert_int_equal(key_integer("HLEN", key), 16);
	for (i = 0; i < 20; i++) {
		snprintf(field, sizeof(field), "%llu:1",
			 ULL(base + (__u64)i * SLICE_MS));
		q = command("HGET %s %s", key, field);
		assert_non_null(q);
		if (i < 4)
			assert_int_equal(q->type, REDIS_REPLY_NIL);
		else
			assert_true(q->type == REDIS_REPLY_STRING &&
				    !strcmp(q->str, "1"));
		freeReplyObject(q);
	}
	assert_int_equal(status(&fx.a)->backend_errors, 0);
}

int main(void)
{
#define T(name, setup) cmocka_unit_test_setup_teardown(name, setup, end)
	const struct CMUnitTest tests[] = {
		T(test_redis_peers_units_count_once_own_never, begin_redis),
		T(test_redis_log_counter_bucket_counted_across_nodes, begin_redis),
		T(test_redis_outage_is_a_peer_outage_and_sync_resumes,
		  begin_redis),
		T(test_redis_flapping_store_counted_per_change_not_per_attempt,
		  begin_redis),
		T(test_redis_flushed_scripts_are_loaded_again, begin_redis),
		T(test_redis_auth_password_and_acl_user_wrong_one_fails_open,
		  begin_redis_auth),
		T(test_redis_hash_keeps_16_slices_and_expires_from_window,
		  begin_redis),
	};
#undef T

	if (getenv("SL_TEST_VERBOSE"))
		sl_verbose = 2;
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
