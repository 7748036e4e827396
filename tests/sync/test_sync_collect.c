// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: sync_fixture instance_fixture */
/*
 * What A's engine collects and sends: a slice opened during the walk is
 * sent once, a restart sends what was accepted meanwhile, a round without
 * new accepts only a heartbeat; a round reads only the clients that
 * changed, and walks every client once the ring of changes is full.
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

/* A slice opened after a round read the clock (the walk takes a while)
 * is sent once, under its own start, not once under the round's slice
 * and again under its own.
 */
static void test_slice_opened_during_walk_sent_once(void **st)
{
	struct fixture *f = *st;
	__u64 ps = sl_peer_slice_ms(WINDOW_MS);
	__u64 x = (f->now / ps + 3) * ps + 10;	/* 10 ms into a peer slice */
	struct sl_addr who = new_client(f);
	struct dgrams d;
	__u64 sent = 0;

	assert_int_equal(send_udp(&f->a, &who, f->now, 10, NULL), 10);
	collect(f->sa, f->now + 50, &d);
	sent += units_for(&d, &who);
	/* accepted at x, while the round that read x - 50 walks */
	assert_int_equal(send_udp(&f->a, &who, x, 1, NULL), 1);
	collect(f->sa, x - 50, &d);
	sent += units_for(&d, &who);
	/* one more into the same slice, and the next round */
	assert_int_equal(send_udp(&f->a, &who, x + 60, 1, NULL), 1);
	collect(f->sa, x + 100, &d);
	sent += units_for(&d, &who);
	assert_int_equal(sent, 12);
}

/* A's service killed after a round and restarted over its pinned maps:
 * what it had sent is not sent again, what A accepted while no service
 * ran goes out in the first round.
 */
static void test_restart_sends_what_was_accepted_meanwhile(void **st)
{
	struct fixture *f = *st;
	struct sl_addr before = new_client(f), meanwhile = new_client(f);
	struct dgrams d;

	assert_int_equal(send_udp(&f->a, &before, f->now, 30, NULL), 30);
	collect(f->sa, f->now + 100, &d);
	assert_int_equal(units_for(&d, &before), 30);
	assert_int_equal(sl_sync_publish(f->sa, f->now + 100), 0);
	/* the service dies; the kernel goes on counting */
	sl_sync_free(f->sa);
	assert_int_equal(send_udp(&f->a, &meanwhile, f->now + 5000, 12, NULL), 12);
	assert_int_equal(send_udp(&f->a, &before, f->now + 5000, 3, NULL), 3);
	f->sa = engine(&f->a, SL_LAYOUT_DELAYED_SYNC, NODE_A, 200, 2,
		       f->inc_a + 1);
	assert_int_equal(sl_sync_adopt(f->sa, f->now + 9000), 0);
	collect(f->sa, f->now + 9100, &d);
	assert_int_equal(units_for(&d, &meanwhile), 12);
	/* `before`'s 3 joined its slice begun before the last round: lost
	 * (an undercount), not its 30 sent again
	 */
	assert_true(units_for(&d, &before) <= 3);
}

/* A client reset (slicelimit reset: its state deleted) and back in the
 * same slice: what it accepts then is sent, not held back until it
 * passes what its old state had sent.
 */
static void test_reset_client_reported_afresh(void **st)
{
	struct fixture *f = *st;
	struct sl_addr who = new_client(f);
	struct sl_client_key k = key_of(&f->rule_a, &who);
	struct dgrams d;

	assert_int_equal(send_udp(&f->a, &who, f->now, 20, NULL), 20);
	collect(f->sa, f->now + 50, &d);
	assert_int_equal(units_for(&d, &who), 20);
	assert_int_equal(bpf_map_delete_elem(sl_state_fd(&f->a.maps,
							 f->rule_a.algorithm), &k), 0);
	assert_int_equal(send_udp(&f->a, &who, f->now + 60, 5, NULL), 5);
	collect(f->sa, f->now + 100, &d);
	assert_int_equal(units_for(&d, &who), 5);
}

static void test_second_collect_without_packets_only_heartbeat(void **st)
{
	struct fixture *f = *st;
	struct sl_peer_view before;
	struct sl_wire_entry e[SL_WIRE_MAX_ENTRIES];
	struct sl_wire_header h;
	struct sl_addr who;
	struct dgrams d, d2;

	who = sync_once(f, &d);
	assert_int_equal(view_of(f, &who, &before), 0);
	collect(f->sa, f->now + 300, &d2);
	assert_int_equal(d2.n, 1);
	assert_int_equal(d2.len[0], SL_WIRE_HEADER + SL_WIRE_TAG);
	assert_int_equal(fx_open(d2.msg[0], d2.len[0], &h, e),
			 SL_WIRE_OK);
	assert_int_equal(h.type, SL_WIRE_HEARTBEAT);
	assert_int_equal(h.count, 0);
	assert_int_equal(h.node, NODE_A);
	assert_int_equal(h.seq, d.n + 1);
	assert_int_equal(receive(f, d2.msg[0], d2.len[0], f->now + 350),
			 SL_SYNC_MERGED);
	assert_view_unchanged(f, &who, &before);
	assert_int_equal(sl_sync_status(f->sb)->peer[0].last_heard_ms,
			 f->now + 350);
}

/* ---- what a round reads ------------------------------------------------ */

static int count_only(void *ctx, unsigned peer, const uint8_t *msg, size_t len)
{
	return 0;
}

/* One round; the clients it read and the entries it sent. */
static void round_reads(struct sl_sync_engine *s, __u64 t, __u64 *read,
			__u64 *sent)
{
	__u64 before = sl_sync_status(s)->sent_entries;

	assert_int_equal(sl_sync_collect(s, t, count_only, NULL), 0);
	*read = sl_sync_status(s)->collect_clients;
	*sent = sl_sync_status(s)->sent_entries - before;
}

/* After its first round an engine reads the clients the kernel reported
 * accepted (sl_changed), not the whole table: a round costs what changed.
 */
static void test_round_reads_only_changed_clients(void **st)
{
	struct fixture *f = *st;
	struct sl_addr old = new_client(f), fresh = new_client(f);
	__u64 read, sent;

	assert_int_equal(send_udp(&f->a, &old, f->now, 3, NULL), 3);
	round_reads(f->sa, f->now + 100, &read, &sent);
	assert_true(read >= 1);		/* the first round: every client */
	assert_int_equal(sent, 1);
	assert_int_equal(send_udp(&f->a, &old, f->now + 200, 2, NULL), 2);
	assert_int_equal(send_udp(&f->a, &fresh, f->now + 200, 4, NULL), 4);
	round_reads(f->sa, f->now + 300, &read, &sent);
	assert_int_equal(read, 2);
	assert_int_equal(sent, 2);
	round_reads(f->sa, f->now + 500, &read, &sent);
	assert_int_equal(read, 0);
	assert_int_equal(sent, 0);
}

/* More changed clients than sl_changed holds (an eighth of the 4,096-entry
 * table: 512): the kernel counts what it lost and that round walks every
 * client, so none goes unsent; the next round reads the ring again.
 */
static void test_changed_ring_full_round_walks_every_client(void **st)
{
	struct fixture *f = *st;
	struct sl_global_stats gs;
	struct sl_addr who;
	__u64 read, sent;
	unsigned i;

	round_reads(f->sa, f->now, &read, &sent);
	/* two packets each: a key's first only puts it on probation, its
	 * second gives it a state, and its key to sl_changed
	 */
	for (i = 0; i < 600; i++) {
		who = new_client(f);
		assert_int_equal(send_udp(&f->a, &who, f->now + 100, 2, NULL), 2);
	}
	assert_int_equal(sl_percpu_sum_u64(&f->a.maps, f->a.maps.global_stats,
					   0, &gs, sizeof(gs)), 0);
	assert_true(gs.changed_lost > 0);
	round_reads(f->sa, f->now + 200, &read, &sent);
	assert_int_equal(sent, 600);
	assert_true(read >= 600);
	assert_int_equal(send_udp(&f->a, &who, f->now + 300, 1, NULL), 1);
	round_reads(f->sa, f->now + 400, &read, &sent);
	assert_int_equal(read, 1);
	assert_int_equal(sent, 1);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, begin, end)
	const struct CMUnitTest tests[] = {
		T(test_slice_opened_during_walk_sent_once),
		T(test_restart_sends_what_was_accepted_meanwhile),
		T(test_reset_client_reported_afresh),
		T(test_second_collect_without_packets_only_heartbeat),
		T(test_round_reads_only_changed_clients),
		T(test_changed_ring_full_round_walks_every_client),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
