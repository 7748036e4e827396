// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: redis_fixture redis_fake instance_fixture */
/*
 * The Redis sync backend (user/sync/redis.c) between two nodes against a
 * fake server (tests/lib/redis_fake.c) answering garbage of every shape:
 * each is one backend error and a dropped connection, never a crash (run
 * it under SANITIZE=1 too); one answering CROSSSLOT to mixed slots gets
 * one script call per Cluster slot (CRC16 computed here, independently);
 * one too slow for the interval gets whole batches, and the rest in the
 * next round: pushes exactly once, index reads from where the last round
 * stopped.
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
#include "service/check_central.h"
#include "redis_fixture.h"

/* ---- with the fake server ---------------------------------------------- */

static void set_fake(int mode, const char *raw)
{
	fx.fake->mode = mode;
	snprintf(fx.fake->raw, sizeof(fx.fake->raw), "%s", raw ? raw : "");
}

/* Replies of every shape the backend must take as one error (or, when
 * tolerated, skip), never a crash.
 */
struct bad_reply {
	int mode;
	const char *raw;
	bool tolerated;		/* not an error: skipped */
	bool push;		/* the round must push one client */
	const char *what;
};

static const struct bad_reply bad_replies[] = {
	{ FAKE_RAW_INDEX, ":1\r\n", 0, 0, "index: an integer" },
	{ FAKE_RAW_INDEX, "*-1\r\n", 0, 0, "index: a nil array" },
	{ FAKE_RAW_INDEX, "$-1\r\n", 0, 0, "index: nil" },
	{ FAKE_RAW_INDEX, "*2\r\n$1\r\n5\r\n*0\r\n", 0, 0,
	  "index: its time as a string" },
	{ FAKE_RAW_INDEX, "*2\r\n:5\r\n*1\r\n$3\r\nabc\r\n", 0, 0,
	  "index: an id without a score" },
	{ FAKE_RAW_INDEX, "*2\r\n:5\r\n*2\r\n$3\r\nabc\r\n$2\r\n1x\r\n",
	  0, 0, "index: a score that is no number" },
	{ FAKE_RAW_INDEX, "*2\r\n:5\r\n*2\r\n$3\r\nabc\r\n:7\r\n", 0, 0,
	  "index: a score as an integer" },
	{ FAKE_RAW_INDEX, "*2\r\n:5\r\n*4\r\n$1\r\na\r\n$1\r\n9\r\n"
	  "$1\r\nb\r\n$1\r\n3\r\n", 0, 0, "index: scores out of order" },
	{ FAKE_RAW_INDEX, "*3\r\n:5\r\n*0\r\n*0\r\n", 0, 0,
	  "index: three elements" },
	{ FAKE_RAW_INDEX, "*2\r\n*0\r\n*0\r\n", 0, 0,
	  "index: its time as an array" },
	{ FAKE_RAW_INDEX, "-ERR boom\r\n", 0, 0, "index: an error" },
	{ FAKE_RAW_INDEX, "-LOADING Redis is loading\r\n", 0, 0,
	  "index: LOADING" },
	{ FAKE_HANG, NULL, 0, 0, "no answer at all" },
	{ FAKE_RAW_INDEX, "*2\r\n:5\r\n*4\r\n$3\r\nabc\r\n$1\r\n3\r\n"
	  "$47\r\n00000000:ffffffffffffffffffffffffffffffff:99999\r\n"
	  "$1\r\n4\r\n", 1, 0, "index: ids not ours (skipped)" },
	{ FAKE_RAW_ROUND, "*0\r\n", 0, 1, "round: no totals" },
	{ FAKE_RAW_ROUND, "*2\r\n*0\r\n*0\r\n", 0, 1,
	  "round: totals for two keys" },
	{ FAKE_RAW_ROUND, "*1\r\n:7\r\n", 0, 1,
	  "round: totals as an integer" },
	{ FAKE_RAW_ROUND, "*1\r\n$-1\r\n", 0, 1, "round: nil totals" },
	{ FAKE_RAW_ROUND, "*1\r\n*1\r\n:5\r\n", 0, 1,
	  "round: a start without units" },
	{ FAKE_RAW_ROUND, "*1\r\n*2\r\n:5\r\n$1\r\n3\r\n", 0, 1,
	  "round: units as a string" },
	{ FAKE_RAW_ROUND, "*1\r\n*2\r\n:-5\r\n:3\r\n", 0, 1,
	  "round: a negative start" },
	{ FAKE_RAW_ROUND, "*1\r\n*2\r\n:5\r\n:-3\r\n", 0, 1,
	  "round: negative units" },
	{ FAKE_RAW_ROUND, "*1\r\n*2\r\n*1\r\n:1\r\n:3\r\n", 0, 1,
	  "round: an array as a start" },
	{ FAKE_RAW_ROUND, "-BUSY Redis is busy running a script\r\n",
	  0, 1, "round: BUSY" },
	{ FAKE_RAW_ROUND, "-NOSCRIPT No matching script\r\n", 0, 1,
	  "round: NOSCRIPT after loading again" },
	{ FAKE_RAW_ROUND, "+OK\r\n", 0, 1, "round: a status" },
	{ FAKE_RAW_ROUND, "%%% not RESP\r\n", 0, 1,
	  "round: not the protocol" },
	{ FAKE_RAW_ROUND, "*1\r\n*2\r\n:1700000000000\r\n"
	  ":99999999999\r\n", 1, 1, "round: units past 32 bits "
	  "(clamped)" },
};

/* One round of A's against the fake answering c. */
static void bad_reply_round(const struct bad_reply *c)
{
	struct sl_addr x;
	__u64 errors;
	uint64_t took;

	set_fake(c->mode, c->raw);
	/* past any backoff: every case connects afresh */
	fx.now += 10000;
	if (c->push) {
		x = new_client(NET_API);
		assert_int_equal(send_n(&fx.a, &x, 2), 2);	/* the 2nd gives it a state */
	}
	errors = status(&fx.a)->backend_errors;
	took = round_on(&fx.a);
	print_message("%-40s %3llu ms, backend_up %u\n", c->what,
		      ULL(took), status(&fx.a)->backend_up);
	if (c->tolerated) {
		assert_int_equal(status(&fx.a)->backend_errors, errors);
		assert_int_equal(status(&fx.a)->backend_up, 1);
	} else {
		assert_int_equal(status(&fx.a)->backend_errors, errors + 1);
		assert_int_equal(status(&fx.a)->backend_up, 0);
	}
	assert_true(took < 1000);
}

static void test_redis_bad_replies_are_errors_not_crashes(void **st)
{
	size_t i;

	for (i = 0; i < sizeof(bad_replies) / sizeof(bad_replies[0]); i++)
		bad_reply_round(&bad_replies[i]);
	/* and a well-formed answer brings it back */
	set_fake(FAKE_OK, NULL);
	fx.now += 10000;
	round_on(&fx.a);
	assert_int_equal(status(&fx.a)->backend_up, 1);
	assert_true(status(&fx.a)->backend_reconnects >= 1);
}

static void test_redis_crossslot_makes_batches_per_slot(void **st)
{
	enum { CLIENTS = 40 };
	bool slot_seen[16384] = { false };
	struct sl_addr x;
	unsigned slots = 0;
	char key[64];
	int i;

	/* the reference itself, against the Cluster spec's example */
	assert_int_equal(ref_slot("123456789", 9), 0x31c3 & 16383);
	set_fake(FAKE_CLUSTER, NULL);
	for (i = 0; i < CLIENTS; i++) {
		x = new_client(NET_BULK);
		assert_int_equal(send_n(&fx.a, &x, 2), 2);	/* the 2nd gives it a state */
		bulk_key(&x, key, sizeof(key));
		if (!slot_seen[ref_slot(key, strlen(key))])
			slots++;
		slot_seen[ref_slot(key, strlen(key))] = true;
	}
	round_on(&fx.a);
	print_message("%d clients in %u slots: %d refusals, %d calls\n",
		      CLIENTS, slots, fx.fake->crossslot, fx.fake->round_calls);
	assert_int_equal(fx.fake->crossslot, 1);
	assert_int_equal(fx.fake->keys_answered, CLIENTS);
	assert_int_equal(fx.fake->round_calls, slots);
	assert_int_equal(status(&fx.a)->backend_errors, 0);
	assert_int_equal(status(&fx.a)->backend_up, 1);
}

/* A store slow enough that a round's batches outlast the interval: the
 * round stops sending when the interval is up, and the next one sends
 * the clients left over, each exactly once.
 */
static void test_redis_slow_store_defers_pushes_to_next_round(void **st)
{
	enum { CLIENTS = 260 };		/* 5 batches of at most 64 */
	unsigned first = fx.next_client + 1, i;
	struct sl_addr x;
	uint64_t took;
	int after_first;

	set_fake(FAKE_SLOW, NULL);
	for (i = 0; i < CLIENTS; i++) {
		x = new_client(NET_API);
		assert_int_equal(send_n(&fx.a, &x, 2), 2);	/* the 2nd gives it a state */
	}
	took = round_on(&fx.a);
	after_first = fx.fake->keys_answered;
	print_message("slow store: %d of %d clients pushed in %llu ms\n",
		      after_first, CLIENTS, ULL(took));
	/* whole batches, stopped at the interval: at most a command's
	 * timeout (half an interval) past it
	 */
	assert_true(after_first > 0 && after_first < CLIENTS);
	assert_int_equal(after_first % 64, 0);
	assert_true(took < INTERVAL_MS + INTERVAL_MS / 2);
	assert_int_equal(status(&fx.a)->backend_errors, 0);

	set_fake(FAKE_OK, NULL);
	fx.now += INTERVAL_MS;
	round_on(&fx.a);
	assert_int_equal(fx.fake->keys_answered, CLIENTS);
	for (i = first; i < first + CLIENTS; i++)
		if (fx.fake->pushed[i & 0xffff] != 1)
			fail_msg("client %u pushed %u times", i,
				 fx.fake->pushed[i & 0xffff]);
	assert_int_equal(status(&fx.a)->backend_errors, 0);
}

/* Learning from the index as long as the interval lasts: B is told of
 * 600 clients it has not seen, and the store reads slowly, so a round
 * reads whole batches of them (4 of 64 in the 1 s interval, 300 ms
 * each), and the next round's index read goes on right after the last
 * one read (the k-th): by score, and by offset among equal scores.
 */
static void test_redis_learning_resumes_where_the_round_stopped(void **st)
{
	static const struct {
		unsigned long long now, score, step;
		const char *what;
	} cases[] = {
		{ 2000000, 1000, 1, "distinct scores" },
		{ 3000000, 2500000, 0, "one score (one ZADD call)" },
	};
	unsigned long long past, k;
	uint64_t took;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fx.fake->learn_count = 600;
		fx.fake->learn_score = cases[i].score;
		fx.fake->learn_step = cases[i].step;
		fx.fake->index_now = cases[i].now;
		fx.fake->keys_answered = 0;
		set_fake(FAKE_LEARN, NULL);
		fx.now += INTERVAL_MS;
		took = round_on(&fx.b);
		k = fx.fake->keys_answered;
		print_message("%s: read %llu of 600 in %llu ms\n",
			      cases[i].what, k, ULL(took));
		/* whole batches, not all (4 unless the machine is slow) */
		assert_true(k > 0 && k < 600 && k % 64 == 0);
		assert_true(took < INTERVAL_MS + INTERVAL_MS / 2);

		/* the next read starts after them */
		set_fake(FAKE_OK, NULL);
		fx.now += INTERVAL_MS;
		round_on(&fx.b);
		if (cases[i].step) {	/* at the k-th score, past 1 there */
			assert_int_equal(fx.fake->read_from,
					 cases[i].score + k - 1);
			assert_int_equal(fx.fake->read_offset, 1);
		} else {		/* at the score, past k there */
			assert_int_equal(fx.fake->read_from, cases[i].score);
			assert_int_equal(fx.fake->read_offset, k);
		}
		assert_int_equal(status(&fx.b)->backend_errors, 0);
		/* and a read of nothing more moves it past that read's time
		 * (the time the fake gives next, less one)
		 */
		past = fx.fake->index_now;
		fx.now += INTERVAL_MS;
		round_on(&fx.b);
		assert_int_equal(fx.fake->read_from, past);
		assert_int_equal(fx.fake->read_offset, 0);
	}
}

/* ---- Redis is a store, not a director ---------------------------------- */

#define PASSWORD	"s3cret-redis-pass"

/* A server that says it is a Cluster whose every slot lives on another
 * host (the trap): not configured as a Cluster, the backend keeps using
 * the URL's server, and neither connects nor logs in anywhere else.
 */
static void test_redis_cluster_slots_directs_nothing_unless_configured(void **st)
{
	unsigned i;

	assert_int_equal(sl_redis_set_auth(fx.a.redis, NULL, PASSWORD), 0);
	set_fake(FAKE_DIRECTOR, NULL);
	for (i = 0; i < 3; i++) {
		fx.now += 10000;
		round_on(&fx.a);
	}
	assert_int_equal(fx.fake->trap_conns, 0);
	assert_int_equal(fx.fake->trap_auths, 0);
	assert_int_equal(status(&fx.a)->backend_up, 1);
	assert_int_equal(status(&fx.a)->backend_errors, 0);
}

/* Configured as a Cluster of the URL's node only: a MOVED to a node the
 * config does not name is refused (counted, a store failure), and the
 * node never hears from us, AUTH least of all.
 */
static void test_redis_redirect_to_unconfigured_node_refused(void **st)
{
	struct sl_addr x = new_client(NET_API);
	__u64 errors;
	unsigned i;

	assert_int_equal(sl_redis_set_auth(fx.a.redis, NULL, PASSWORD), 0);
	sl_redis_set_cluster(fx.a.redis, true);
	set_fake(FAKE_MOVED, NULL);
	for (i = 0; i < 3; i++) {
		assert_int_equal(send_n(&fx.a, &x, 2), 2);
		errors = status(&fx.a)->backend_errors;
		fx.now += 10000;
		round_on(&fx.a);
		assert_int_equal(status(&fx.a)->backend_errors, errors + 1);
		assert_int_equal(status(&fx.a)->backend_up, 0);
	}
	assert_int_equal(fx.fake->trap_conns, 0);
	assert_int_equal(fx.fake->trap_auths, 0);
	assert_true(sl_redis_refused(fx.a.redis) >= 3);
}

/* A server that answers a byte every 40 ms (each read well inside the
 * timeout) holds a round one command deadline (half an interval), not
 * the seconds its answer takes.
 */
static void test_redis_trickling_store_holds_a_round_one_deadline(void **st)
{
	__u64 errors = status(&fx.a)->backend_errors;
	uint64_t took;

	set_fake(FAKE_TRICKLE, NULL);
	fx.now += 10000;
	took = round_on(&fx.a);
	print_message("trickling store: round took %llu ms\n", ULL(took));
	assert_true(took < INTERVAL_MS);
	assert_int_equal(status(&fx.a)->backend_errors, errors + 1);
	assert_int_equal(status(&fx.a)->backend_up, 0);
}

/* The peak resident set since it was last reset, in KiB. */
static long peak_rss_kib(void)
{
	char line[128];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void reset_peak_rss(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");

	assert_non_null(f);
	fputs("5", f);	/* 5: the peak resident set to the current one */
	fclose(f);
}

#define RSS_GROWTH_MAX_KIB	(32 << 10)

/* A 150 MB reply is refused at the reply cap: the round fails, and this
 * process's resident set does not grow by anything like the reply.
 */
static void test_redis_flood_reply_refused_memory_bounded(void **st)
{
	__u64 errors = status(&fx.a)->backend_errors;
	long before, after;

	set_fake(FAKE_FLOOD, NULL);
	fx.now += 10000;
	reset_peak_rss();
	before = peak_rss_kib();
	round_on(&fx.a);
	after = peak_rss_kib();
	print_message("flooding store: peak RSS %ld -> %ld KiB\n", before,
		      after);
	assert_true(before > 0);
	assert_true(after - before < RSS_GROWTH_MAX_KIB);
	assert_int_equal(status(&fx.a)->backend_errors, errors + 1);
	assert_int_equal(status(&fx.a)->backend_up, 0);
}

/* Central checks (layout: central) against the same servers. */
static struct sl_rule central_rule(void)
{
	struct sl_rule r = { .name = "api", .limit = 4, .window_ms = 60000,
			     .slice_ms = 4000, .algorithm = SL_ALGO_SLIDING };

	return r;
}

static int central_ask(struct sl_central *c, uint64_t *took)
{
	struct sl_rule r = central_rule();
	struct sl_client_view v;
	uint64_t t = sl_now_mono_ms();
	bool allowed;
	int err;

	err = sl_central_check(c, &r, "k:alice", 7, 1, &allowed, &v);
	*took = sl_now_mono_ms() - t;
	return err;
}

/* A trickling store turns a central check into an error (the caller's
 * local decision) within one deadline, and opens the circuit: the next
 * checks skip the store at once.
 */
static void test_central_trickling_store_fails_open_within_one_deadline(void **st)
{
	struct sl_central *c = sl_central_new(fx.url, INTERVAL_MS);
	uint64_t took;
	int err;

	assert_non_null(c);
	set_fake(FAKE_TRICKLE, NULL);
	err = central_ask(c, &took);
	print_message("trickling store: central check took %llu ms (%d)\n",
		      ULL(took), err);
	assert_true(took < INTERVAL_MS);
	assert_int_equal(err, -EIO);
	err = central_ask(c, &took);
	assert_int_equal(err, -EAGAIN);
	assert_true(took < 50);
	sl_central_free(c);
}

static void test_central_flood_reply_refused_memory_bounded(void **st)
{
	struct sl_central *c = sl_central_new(fx.url, INTERVAL_MS);
	long before, after;
	uint64_t took;
	int err;

	assert_non_null(c);
	set_fake(FAKE_FLOOD, NULL);
	reset_peak_rss();
	before = peak_rss_kib();
	err = central_ask(c, &took);
	after = peak_rss_kib();
	print_message("flooding store: central check %d, peak RSS %ld -> %ld KiB\n",
		      err, before, after);
	assert_true(after - before < RSS_GROWTH_MAX_KIB);
	assert_int_equal(err, -EIO);
	sl_central_free(c);
}

int main(void)
{
#define T(name, setup) cmocka_unit_test_setup_teardown(name, setup, end)
	const struct CMUnitTest tests[] = {
		T(test_redis_bad_replies_are_errors_not_crashes, begin_fake),
		T(test_redis_crossslot_makes_batches_per_slot, begin_fake),
		T(test_redis_slow_store_defers_pushes_to_next_round,
		  begin_fake),
		T(test_redis_learning_resumes_where_the_round_stopped,
		  begin_fake),
		T(test_redis_cluster_slots_directs_nothing_unless_configured,
		  begin_fake),
		T(test_redis_redirect_to_unconfigured_node_refused, begin_fake),
		T(test_redis_trickling_store_holds_a_round_one_deadline,
		  begin_fake),
		T(test_redis_flood_reply_refused_memory_bounded, begin_fake),
		T(test_central_trickling_store_fails_open_within_one_deadline,
		  begin_fake),
		T(test_central_flood_reply_refused_memory_bounded, begin_fake),
	};
#undef T

	if (getenv("SL_TEST_VERBOSE"))
		sl_verbose = 2;
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
