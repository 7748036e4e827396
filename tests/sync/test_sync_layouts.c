// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: sync_fixture instance_fixture */
/*
 * The layouts other than delayed-sync: split-quota makes one node accept
 * limit / nodes; predictive projects the peers' last round forward;
 * bounded takes its share per round and decides alone when the others
 * are silent or the service is gone.
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

/* ---- split quota ------------------------------------------------------------ */

static void test_split_quota_four_nodes_accepts_limit_over_four(void **st)
{
	struct fixture *f = *st;
	struct sl_sync_engine *s;
	struct sl_addr who = new_client(f), other = new_client(f);
	unsigned first_reject;

	sl_sync_free(f->sa);
	f->sa = s = engine(&f->a, SL_LAYOUT_SPLIT_QUOTA, NODE_A, 200, 4,
			   f->inc_a);
	assert_int_equal(send_udp(&f->a, &who, f->now, LIMIT, &first_reject),
			 LIMIT / 4);
	assert_int_equal(first_reject, LIMIT / 4);
	/* per client: another one has its own quarter */
	assert_int_equal(send_udp(&f->a, &other, f->now, LIMIT / 4 + 1, NULL),
			 LIMIT / 4);
	/* a window later, a quarter again */
	assert_int_equal(send_udp(&f->a, &who, f->now + WINDOW_MS + 1, LIMIT, NULL),
			 LIMIT / 4);
}

/* ---- predictive ------------------------------------------------------------- */

/* B merges 40 units for each of four clients at T, interval 1000 ms. With
 * limit L = 100 the projection may take the count to L + L / 50 = 102; the
 * lower bound alone to 100. The projection at T + s is 40 x min(s, 1000) /
 * 1000, and nothing from 2000 ms on. So B accepts
 *   at T:        min(100 - 40, 102 - 40 - 0)  = 60
 *   at T + 500:  min(100 - 40, 102 - 40 - 20) = 42
 *   at T + 1500: min(100 - 40, 102 - 40 - 40) = 22
 *   at T + 2000: min(100 - 40, 102 - 40 - 0)  = 60
 * A projection of 19 or 21 at T + 500 would give 43 or 41.
 */
static void test_predictive_counts_projected_20_at_half_interval(void **st)
{
	static const struct {
		__u64 at;
		unsigned accepted;
	} points[] = { { 0, 60 }, { 500, 42 }, { 1500, 22 }, { 2000, 60 } };
	struct fixture *f = *st;
	struct sl_wire_header h = {
		.type = SL_WIRE_COUNTS, .count = 4, .node = NODE_A,
		.incarnation = f->inc_a, .seq = 1, .sent_ms = f->now,
	};
	struct sl_wire_entry e[4];
	struct sl_addr who[4];
	struct sl_peer_view v;
	uint8_t buf[SL_WIRE_MAX];
	unsigned i, first_reject;
	size_t len;

	assert_int_equal(LIMIT / SL_PREDICT_MARGIN, 2);
	sl_sync_free(f->sb);
	f->sb = engine(&f->b, SL_LAYOUT_PREDICTIVE, NODE_B, 1000, 2, f->inc_b);
	memset(e, 0, sizeof(e));
	for (i = 0; i < 4; i++) {
		who[i] = new_client(f);
		e[i].addr = who[i];
		e[i].rule_hash = sl_rule_name_hash("sync-udp");
		e[i].start_ms = f->now;
		e[i].units = 40;
	}
	len = fx_seal(buf, &h, e);
	assert_int_equal(receive(f, buf, len, f->now), SL_SYNC_MERGED);
	for (i = 0; i < 4; i++) {
		assert_int_equal(view_of(f, &who[i], &v), 0);
		assert_int_equal(view_sum(&v), 40);
		assert_int_equal(v.round_units, 40);
		assert_int_equal(v.round_ms, (__u32)f->now);
	}
	for (i = 0; i < 4; i++) {
		unsigned got = send_udp(&f->b, &who[i], f->now + points[i].at, 100,
				    &first_reject);

		if (got != points[i].accepted || first_reject != got)
			fail_msg("T + %llu ms: %u accepted (first reject %u), "
				 "expected %u", ULL(points[i].at), got,
				 first_reject, points[i].accepted);
	}
}

/* ---- bounded ----------------------------------------------------------------- */

/* B on a bounded engine of two nodes, its first round at T, then A's 40
 * units of `who` merged.
 */
static void bounded_b_hears_40(struct fixture *f, const struct sl_addr *who)
{
	uint8_t buf[SL_WIRE_MAX];
	struct dgrams d;
	size_t len;

	sl_sync_free(f->sb);
	f->sb = engine(&f->b, SL_LAYOUT_BOUNDED, NODE_B, 200, 2, f->inc_b);
	round_settled(f->sb, f->now, &d);
	len = hand_message(buf, NODE_A, f->inc_a, 1, f->now, "sync-udp", who,
			   f->now, 40);
	assert_int_equal(receive(f, buf, len, f->now), SL_SYNC_MERGED);
}

/* Two live nodes, limit L = 100: the room is of 1.1 L = 110, and B's share
 * is 9/10 of its own part of the known count plus 1/10 / 2 nodes, in
 * 16-bit fixed point, rounded up out of the room less one unit per node,
 * as include/sl_peer.h computes it. B rounds at T (the round begins),
 * then merges 40 units A accepted. Then:
 *   at T: own 0 of 40 known; room 110 - 40 - 2 = 68; share (9 * 0 +
 *     32768) / 10 = 3276; 68 * 3276 / 65536 = 3.4, up: 4. B passes 4,
 *     and the 5th is dropped with remaining 0 and Retry-After 200 ms
 *     (the next round); at T + 199 still nothing passes;
 *   at the round at T + 200, until it is settled, the same; once it is:
 *     own 4 of 44; room 66 - 2 = 64; share (9 *
 *     (4 * 65536 / 44) + 32768) / 10 = (9 * 5957 + 32768) / 10 = 8638;
 *     64 * 8638 / 65536 = 8.4, up: 9: remaining 9, and B passes 9.
 * Delayed sync would pass 60 at T.
 */
static void test_bounded_node_takes_its_share_per_round(void **st)
{
	struct fixture *f = *st;
	struct sl_addr who = new_client(f);
	struct sl_client_view cv;
	struct sl_client_key k;
	struct dgrams d;
	unsigned first_reject;

	bounded_b_hears_40(f, &who);
	k = key_of(&f->rule_b, &who);

	assert_int_equal(send_udp(&f->b, &who, f->now, 10, &first_reject), 4);
	assert_int_equal(first_reject, 4);
	assert_int_equal(sl_client_view_read(&f->b.maps, &f->rule_b, &k,
					     f->now, &cv), 0);
	assert_int_equal(cv.remaining, 0);
	assert_int_equal(cv.retry_after_ms, 200);
	assert_int_equal(send_udp(&f->b, &who, f->now + 199, 1, NULL), 0);

	/* collected but not settled: the 4 may not have reached A yet, and
	 * still count as B's units of the round
	 */
	collect(f->sb, f->now + 200, &d);
	assert_int_equal(send_udp(&f->b, &who, f->now + 200, 1, NULL), 0);
	assert_int_equal(sl_sync_settle(f->sb, f->now + 200), 0);
	assert_int_equal(sl_client_view_read(&f->b.maps, &f->rule_b, &k,
					     f->now + 200, &cv), 0);
	assert_int_equal(cv.remaining, 9);
	assert_int_equal(send_udp(&f->b, &who, f->now + 200, 10, &first_reject),
			 9);
	assert_int_equal(first_reject, 9);
}

/* A node that hears no peer for two rounds decides alone: the full limit
 * on its own count plus its view (NFR-3). B merges 40 units from A at T,
 * then hears nothing. Its rounds at T + 200 and T + 400 still count A
 * (heard since the round before the last), so the share holds:
 *   T + 200: own 0 of 40, room 68, share 3276: 4; B passes the 1 sent;
 *   T + 400: own 1 of 41, room 69 - 2, share (9 * (65536 / 41) + 32768) /
 *     10 = (9 * 1598 + 32768) / 10 = 4715; 67 * 4715 / 65536 = 4.8, up:
 *     5 of 10 sent;
 *   T + 600: A is not live, B decides alone: 100 - 40 - 1 - 5 = 54.
 */
/* Two bounded nodes each send and merge one round: A accepted 30 of a
 * client, B 20. Each merges what it sent into its own view too, so both
 * views hold the same 50 units with the same first and last times (A's
 * own part 30, B's 20), and both read base 50. Then, limit L = 100, room
 * 110 - 50 = 60, less one unit per node 58:
 *   A: share (9 * (30 * 65536 / 50) + 32768) / 10 = (9 * 39321 + 32768)
 *      / 10 = 38665; 58 * 38665 / 65536 = 34.2, up: 35;
 *   B: (9 * 26214 + 32768) / 10 = 26869; 58 * 26869 / 65536 = 23.8, up:
 *      24; 35 + 24 = 59, within the room.
 * Before the view held the own part, A's base was its exact 30 plus the
 * peers' 20 while B's was 20 plus 30: the same here, but aged by two
 * rules (see fleet-aged-slice-8nodes.trace).
 */
static void test_bounded_nodes_read_one_view(void **st)
{
	struct fixture *f = *st;
	struct sl_addr who = new_client(f);
	struct sl_peer_view va, vb;
	struct sl_client_key k;
	struct dgrams da, db;
	unsigned i;

	sl_sync_free(f->sa);
	sl_sync_free(f->sb);
	f->sa = engine(&f->a, SL_LAYOUT_BOUNDED, NODE_A, 200, 2, f->inc_a);
	f->sb = engine(&f->b, SL_LAYOUT_BOUNDED, NODE_B, 200, 2, f->inc_b);
	assert_int_equal(send_udp(&f->a, &who, f->now, 30, NULL), 30);
	assert_int_equal(send_udp(&f->b, &who, f->now + 10, 20, NULL), 20);
	collect(f->sa, f->now + 200, &da);
	collect(f->sb, f->now + 200, &db);
	for (i = 0; i < da.n; i++)
		assert_int_equal(sl_sync_receive(f->sb, da.msg[i], da.len[i],
						 "192.0.2.1", f->now + 200),
				 SL_SYNC_MERGED);
	for (i = 0; i < db.n; i++)
		assert_int_equal(sl_sync_receive(f->sa, db.msg[i], db.len[i],
						 "192.0.2.2", f->now + 200),
				 SL_SYNC_MERGED);
	assert_int_equal(sl_sync_settle(f->sa, f->now + 200), 0);
	assert_int_equal(sl_sync_settle(f->sb, f->now + 200), 0);

	k = key_of(&f->rule_a, &who);
	assert_int_equal(bpf_map_lookup_elem(f->a.maps.peer_view, &k, &va), 0);
	k = key_of(&f->rule_b, &who);
	assert_int_equal(bpf_map_lookup_elem(f->b.maps.peer_view, &k, &vb), 0);
	assert_int_equal(view_sum(&va), 50);
	for (i = 0; i < SL_PEER_SLOTS; i++) {
		assert_int_equal(va.slot[i].count, vb.slot[i].count);
		if (!va.slot[i].count)
			continue;
		assert_int_equal(va.slot[i].first_ms, vb.slot[i].first_ms);
		assert_int_equal(va.slot[i].last_ms, vb.slot[i].last_ms);
		assert_int_equal(va.slot[i].own + vb.slot[i].own,
				 va.slot[i].count);
	}
	assert_int_equal(send_udp(&f->a, &who, f->now + 200, 100, NULL), 35);
	assert_int_equal(send_udp(&f->b, &who, f->now + 200, 100, NULL), 24);
}

static void test_bounded_node_alone_after_two_silent_rounds(void **st)
{
	struct fixture *f = *st;
	struct sl_addr who = new_client(f);
	struct dgrams d;

	bounded_b_hears_40(f, &who);
	round_settled(f->sb, f->now + 200, &d);
	assert_int_equal(send_udp(&f->b, &who, f->now + 200, 1, NULL), 1);
	round_settled(f->sb, f->now + 400, &d);
	assert_int_equal(send_udp(&f->b, &who, f->now + 400, 10, NULL), 5);
	round_settled(f->sb, f->now + 600, &d);
	assert_int_equal(send_udp(&f->b, &who, f->now + 600, 100, NULL), 54);
}

/* A service that stops settling rounds (killed, stalled) leaves the
 * kernel enforcing without the shares once SL_BOUNDED_STALE intervals
 * have passed (NFR-3). B's round at T, 40 of A's merged, B passes its 4;
 * then no round: at T + 600 the share still holds (nothing passes), at
 * T + 601 B decides alone: 100 - 40 - 4 = 56.
 */
static void test_bounded_service_gone_node_decides_alone(void **st)
{
	struct fixture *f = *st;
	struct sl_addr who = new_client(f);

	assert_int_equal(SL_BOUNDED_STALE * 200, 600);
	bounded_b_hears_40(f, &who);
	assert_int_equal(send_udp(&f->b, &who, f->now, 10, NULL), 4);
	assert_int_equal(send_udp(&f->b, &who, f->now + 600, 1, NULL), 0);
	assert_int_equal(send_udp(&f->b, &who, f->now + 601, 100, NULL), 56);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, begin, end)
	const struct CMUnitTest tests[] = {
		T(test_split_quota_four_nodes_accepts_limit_over_four),
		T(test_predictive_counts_projected_20_at_half_interval),
		T(test_bounded_node_takes_its_share_per_round),
		T(test_bounded_nodes_read_one_view),
		T(test_bounded_node_alone_after_two_silent_rounds),
		T(test_bounded_service_gone_node_decides_alone),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
