// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: sync_fixture instance_fixture */
/*
 * Datagrams B refuses, counts, and leaves its view as it was: an older
 * incarnation, its own node id (no peer of its own), future-dated, stale
 * and pre-start ones, a forged byte, a sequence 64 or more behind the
 * highest.
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

static void test_older_incarnation_refused_newer_restarts_sequence(void **st)
{
	struct fixture *f = *st;
	uint8_t buf[SL_WIRE_MAX];
	struct sl_peer_view before, after;
	struct sl_addr who;
	struct dgrams d;
	size_t len;

	who = sync_once(f, &d);
	assert_int_equal(view_of(f, &who, &before), 0);
	/* node 1 before it restarted: a sequence B never saw, still refused */
	len = hand_message(buf, NODE_A, f->inc_a - 1, 1000, f->now + 160,
			   "sync-udp", &who, f->now, 5);
	assert_int_equal(receive(f, buf, len, f->now + 200), SL_SYNC_REPLAYED);
	assert_view_unchanged(f, &who, &before);
	assert_int_equal(sl_sync_status(f->sb)->rejected_replayed, 1);

	/* node 1 restarted: its sequence begins again at 1 */
	len = hand_message(buf, NODE_A, f->inc_a + 1, 1, f->now + 170,
			   "sync-udp", &who, f->now, 5);
	assert_int_equal(receive(f, buf, len, f->now + 200), SL_SYNC_MERGED);
	assert_int_equal(view_of(f, &who, &after), 0);
	assert_int_equal(view_sum(&after), N_SENT + 5);
	/* and then the old incarnation's real datagrams are too old */
	assert_int_equal(receive(f, d.msg[0], d.len[0], f->now + 200),
			 SL_SYNC_REPLAYED);
}

static void test_own_node_id_refused(void **st)
{
	struct fixture *f = *st;
	uint8_t buf[SL_WIRE_MAX];
	struct sl_peer_view before;
	struct sl_addr who;
	struct dgrams d;
	size_t len;

	who = sync_once(f, &d);
	assert_int_equal(view_of(f, &who, &before), 0);
	len = hand_message(buf, NODE_B, f->inc_b, 1, f->now + 160, "sync-udp",
			   &who, f->now, 5);
	/* B is not its own peer: no pair key opens it */
	assert_int_equal(receive(f, buf, len, f->now + 200),
			 SL_WIRE_UNKNOWN_PEER);
	assert_view_unchanged(f, &who, &before);
	assert_int_equal(sl_sync_status(f->sb)->rejected_unknown_peer, 1);
	assert_int_equal(sl_sync_status(f->sb)->nr_peers, 1);
}

/* A sender's clock more than SL_SYNC_MAX_SKEW_MS ahead: refused before
 * anything of it is merged; one just inside the skew is merged.
 */
static void test_future_dated_refused_and_counted(void **st)
{
	struct fixture *f = *st;
	uint8_t buf[SL_WIRE_MAX];
	struct sl_peer_view before, after;
	struct sl_addr who;
	struct dgrams d;
	size_t len;

	who = sync_once(f, &d);
	assert_int_equal(view_of(f, &who, &before), 0);
	len = hand_message(buf, NODE_A, f->inc_a, 1000,
			   f->now + 200 + SL_SYNC_MAX_SKEW_MS + 1, "sync-udp",
			   &who, f->now, 5);
	assert_int_equal(receive(f, buf, len, f->now + 200), SL_SYNC_FUTURE);
	assert_view_unchanged(f, &who, &before);
	assert_int_equal(sl_sync_status(f->sb)->rejected_future, 1);
	len = hand_message(buf, NODE_A, f->inc_a, 1001,
			   f->now + 200 + SL_SYNC_MAX_SKEW_MS, "sync-udp",
			   &who, f->now, 5);
	assert_int_equal(receive(f, buf, len, f->now + 200), SL_SYNC_MERGED);
	assert_int_equal(view_of(f, &who, &after), 0);
	assert_int_equal(view_sum(&after), N_SENT + 5);
}

/* After B restarts (sl_sync_adopt at its start), a datagram sent before
 * that is refused: B's replay window is new, so a captured one would
 * count again. One sent more than the allowed skew ago is refused too.
 */
static void test_stale_and_pre_start_datagrams_refused(void **st)
{
	struct fixture *f = *st;
	struct sl_addr who = new_client(f);
	struct sl_peer_view before;
	struct dgrams d;
	uint8_t buf[SL_WIRE_MAX];
	size_t len;

	assert_int_equal(send_udp(&f->a, &who, f->now, 30, NULL), 30);
	collect(f->sa, f->now + 100, &d);
	assert_int_equal(receive(f, d.msg[0], d.len[0], f->now + 150),
			 SL_SYNC_MERGED);
	assert_int_equal(view_of(f, &who, &before), 0);
	/* B restarts at now + 200: a new engine over the same maps */
	sl_sync_free(f->sb);
	f->sb = engine(&f->b, SL_LAYOUT_DELAYED_SYNC, NODE_B, 200, 2,
		       f->inc_b + 1);
	assert_int_equal(sl_sync_adopt(f->sb, f->now + 200), 0);
	assert_int_equal(receive(f, d.msg[0], d.len[0], f->now + 250),
			 SL_SYNC_STALE);
	assert_view_unchanged(f, &who, &before);
	/* late beyond the skew, from a sender that started long ago */
	len = hand_message(buf, NODE_A, f->inc_a, 50, f->now + 300, "sync-udp",
			   &who, f->now, 5);
	assert_int_equal(receive(f, buf, len,
				 f->now + 301 + SL_SYNC_MAX_SKEW_MS),
			 SL_SYNC_STALE);
	assert_view_unchanged(f, &who, &before);
	assert_int_equal(sl_sync_status(f->sb)->rejected_stale, 2);
	assert_int_equal(sl_sync_status(f->sb)->rejected_replayed, 0);
}

static void test_forged_byte_refused_and_counted(void **st)
{
	struct fixture *f = *st;
	uint8_t buf[SL_WIRE_MAX];
	struct sl_peer_view before;
	struct sl_addr who = new_client(f);
	struct dgrams d;
	/* type, incarnation, sequence, nonce, an entry, the tag */
	size_t at[] = { 5, 15, 27, 40, 70, 0 };
	unsigned i, n = sizeof(at) / sizeof(at[0]);

	/* A's real datagram, changed in transit before B ever saw it */
	assert_int_equal(send_udp(&f->a, &who, f->now, N_SENT, NULL), N_SENT);
	collect(f->sa, f->now + 100, &d);
	assert_int_equal(d.n, 1);
	at[n - 1] = d.len[0] - 1;
	for (i = 0; i < n; i++) {
		memcpy(buf, d.msg[0], d.len[0]);
		buf[at[i]] ^= 0x01;
		assert_int_equal(receive(f, buf, d.len[0], f->now + 150),
				 SL_WIRE_FORGED);
		assert_int_equal(sl_sync_status(f->sb)->rejected_forged, i + 1);
	}
	/* nothing merged, and no peer learned from a forged message */
	assert_int_equal(view_of(f, &who, &before), -ENOENT);
	assert_int_equal(sl_sync_status(f->sb)->nr_peers, 0);
	/* the unchanged one is still good: the forgeries used up nothing */
	assert_int_equal(receive(f, d.msg[0], d.len[0], f->now + 150),
			 SL_SYNC_MERGED);
	assert_int_equal(view_of(f, &who, &before), 0);
	assert_int_equal(view_sum(&before), N_SENT);
}

/* The replay window holds the highest sequence and the 63 below it. */
static void test_seq_64_or_more_behind_max_refused(void **st)
{
	static const struct {
		__u64 seq;
		int want;
	} steps[] = {
		{ 100, SL_SYNC_MERGED },
		{ 36, SL_SYNC_REPLAYED },	/* 64 behind */
		{ 35, SL_SYNC_REPLAYED },	/* 65 behind */
		{ 1, SL_SYNC_REPLAYED },
		{ 37, SL_SYNC_MERGED },		/* 63 behind: the window's last */
		{ 37, SL_SYNC_REPLAYED },
		{ 99, SL_SYNC_MERGED },
		{ 300, SL_SYNC_MERGED },	/* a jump past the window */
		{ 299, SL_SYNC_MERGED },
		{ 237, SL_SYNC_MERGED },
		{ 236, SL_SYNC_REPLAYED },
		{ 100, SL_SYNC_REPLAYED },
	};
	struct fixture *f = *st;
	uint8_t buf[SL_WIRE_MAX];
	struct sl_addr who = new_client(f);
	struct sl_peer_view v;
	__u64 merged = 0;
	unsigned i;
	size_t len;
	int got;

	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		len = hand_message(buf, 3, 77, steps[i].seq, f->now, "sync-udp",
				   &who, f->now, 1);
		got = receive(f, buf, len, f->now + 10);
		if (got != steps[i].want)
			fail_msg("step %u: seq %llu: %d, expected %d", i,
				 ULL(steps[i].seq), got, steps[i].want);
		merged += got == SL_SYNC_MERGED;
		assert_int_equal(view_of(f, &who, &v), 0);
		assert_int_equal(view_sum(&v), merged);
	}
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, begin, end)
	const struct CMUnitTest tests[] = {
		T(test_older_incarnation_refused_newer_restarts_sequence),
		T(test_own_node_id_refused),
		T(test_future_dated_refused_and_counted),
		T(test_stale_and_pre_start_datagrams_refused),
		T(test_forged_byte_refused_and_counted),
		T(test_seq_64_or_more_behind_max_refused),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
