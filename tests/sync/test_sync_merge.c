// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: sync_fixture instance_fixture */
/*
 * What B merges from A's datagrams: the peer view sums to what A accepted
 * (on one CPU or two) and B accepts exactly limit - N more; the same
 * datagrams again, and unseen sequences out of order, are merged once;
 * stale entries are swept, a window change drops old slices, an entry
 * for a rule B does not have is counted, not merged.
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

/* ---- delayed sync ---------------------------------------------------------- */

static void test_delayed_sync_view_sums_n_and_b_accepts_limit_minus_n(void **st)
{
	struct fixture *f = *st;
	struct sl_addr who, alone;
	struct dgrams d;
	unsigned first_reject;

	struct sl_client_key k;
	struct sl_client_view cv;

	assert_int_not_equal(f->rule_a.id, f->rule_b.id);
	who = sync_once(f, &d);
	/* what B tells the client (HTTP headers, query) counts A's units */
	k = key_of(&f->rule_b, &who);
	assert_int_equal(sl_client_view_read(&f->b.maps, &f->rule_b, &k,
					     f->now + 200, &cv), 0);
	assert_int_equal(cv.used, N_SENT);
	assert_int_equal(cv.remaining, LIMIT - N_SENT);
	assert_int_equal(cv.retry_after_ms, 0);
	/* B: 70 more, the 71st and after dropped */
	assert_int_equal(send_udp(&f->b, &who, f->now + 200, LIMIT - N_SENT + 5,
			      &first_reject), LIMIT - N_SENT);
	assert_int_equal(first_reject, LIMIT - N_SENT);
	/* over the limit: nothing left, and a wait until A's slice leaves
	 * the window (B's own accepts came later and leave after it)
	 */
	assert_int_equal(sl_client_view_read(&f->b.maps, &f->rule_b, &k,
					     f->now + 200, &cv), 0);
	assert_int_equal(cv.used, LIMIT);
	assert_int_equal(cv.remaining, 0);
	assert_true(cv.retry_after_ms > 0 && cv.retry_after_ms <= 10000);
	assert_int_equal(sl_sync_status(f->sb)->nr_peers, 1);
	assert_int_equal(sl_sync_status(f->sb)->peer[0].node, NODE_A);
	assert_int_equal(sl_sync_status(f->sb)->peer[0].messages, d.n);

	/* a client A never saw: B alone, the whole limit */
	alone = new_client(f);
	assert_int_equal(send_udp(&f->b, &alone, f->now + 200, LIMIT + 5,
			      &first_reject), LIMIT);
	assert_int_equal(first_reject, LIMIT);
}

/* A's accepts spread over two CPUs' state are summed into one count; so
 * are B's own.
 */
static void test_delayed_sync_two_cpus_summed(void **st)
{
	struct fixture *f = *st;
	struct sl_addr who;
	struct dgrams d;
	unsigned first_reject;

	if (f->a.maps.nr_cpus < 2 || !CPU_ISSET(0, &sl_test_initial_cpus) ||
	    !CPU_ISSET(1, &sl_test_initial_cpus))
		skip();
	f->spread = 2;
	who = sync_once(f, &d);
	assert_int_equal(send_udp(&f->b, &who, f->now + 200, LIMIT,
				  &first_reject), LIMIT - N_SENT);
	assert_int_equal(first_reject, LIMIT - N_SENT);
}

static void test_same_datagrams_again_replayed_view_unchanged(void **st)
{
	struct fixture *f = *st;
	struct sl_peer_view before;
	struct sl_addr who;
	struct dgrams d;
	__u64 replayed;
	unsigned i;

	who = sync_once(f, &d);
	assert_int_equal(view_of(f, &who, &before), 0);
	replayed = sl_sync_status(f->sb)->rejected_replayed;
	for (i = 0; i < d.n; i++)
		assert_int_equal(receive(f, d.msg[i], d.len[i], f->now + 300),
				 SL_SYNC_REPLAYED);
	assert_view_unchanged(f, &who, &before);
	assert_int_equal(sl_sync_status(f->sb)->rejected_replayed,
			 replayed + d.n);
	assert_int_equal(sl_sync_status(f->sb)->peer[0].rejected, d.n);
	/* and B still takes exactly what is left */
	assert_int_equal(send_udp(&f->b, &who, f->now + 300, LIMIT, NULL),
			 LIMIT - N_SENT);
}

/* Entries whose slices have all left the window are deleted by a later
 * round (one in 64 sweeps the peer view); a client still counted stays.
 */
static void test_stale_peer_view_entries_swept(void **st)
{
	struct fixture *f = *st;
	struct sl_peer_view v;
	struct sl_addr old, fresh;
	struct dgrams d;
	__u64 later = f->now + 10000 + 1000;	/* the rule's window is 10 s */
	unsigned i, n;

	old = sync_once(f, &d);
	fresh = new_client(f);
	assert_int_equal(send_udp(&f->a, &fresh, later - 500, 7, NULL), 7);
	collect(f->sa, later - 400, &d);
	for (i = 0; i < d.n; i++)
		assert_int_equal(receive(f, d.msg[i], d.len[i], later - 300),
				 SL_SYNC_MERGED);
	assert_int_equal(view_of(f, &old, &v), 0);
	for (n = 0; n < 64; n++)
		collect(f->sb, later + n, &d);
	assert_int_equal(view_of(f, &old, &v), -ENOENT);
	assert_int_equal(view_of(f, &fresh, &v), 0);
	assert_int_equal(view_sum(&v), 7);
}

/* B's sync-udp with another window (same name and algorithm: same id). */
static void apply_b_window(const char *window)
{
	char yaml[1024];

	snprintf(yaml, sizeof(yaml),
		 "rules:\n"
		 "  - {name: sync-udp, protocol: udp, ports: 9, limit: 100, window: %s,\n"
		 "     algorithm: sliding, key: {ipv4_prefix: 32}}\n"
		 "  - {name: sync-1s, protocol: udp, ports: 10, limit: 100, window: 1s,\n"
		 "     algorithm: sliding, key: {ipv4_prefix: 32}}\n"
		 OTHER_ALGO_RULES, window);
	assert_int_equal(sl_test_apply_yaml(&fx.b, yaml), 0);
}

/* A window lengthened on B: the peers' slices made under the old one
 * count for nothing (not frozen at "now" forever), and the entry starts
 * over at the next merge; the old window back, they count again.
 */
static void test_window_change_drops_old_peer_slices(void **st)
{
	struct fixture *f = *st;
	struct sl_rule now_rule;
	struct sl_addr who, other;
	struct dgrams d;
	unsigned i;

	who = sync_once(f, &d);
	apply_b_window("20s");
	assert_int_equal(live_rule(&f->b, "sync-udp", &now_rule), 0);
	assert_int_equal(now_rule.id, f->rule_b.id);
	assert_int_equal(now_rule.window_ms, 20000);
	/* B alone: the whole limit (an undercount: fail open) */
	other = new_client(f);
	assert_int_equal(send_udp(&f->b, &other, f->now + 300, 40, NULL), 40);
	assert_int_equal(send_udp(&f->b, &who, f->now + 300, LIMIT, NULL),
			 LIMIT);
	/* and an hour later, nothing of it is left in B's view */
	for (i = 0; i < 64; i++)
		collect(f->sb, f->now + 3600000 + i, &d);
	assert_int_equal(view_of(f, &who, &(struct sl_peer_view){ 0 }), -ENOENT);
	apply_b_window("10s");
}

/* Three rounds of A, with new packets before each: delivered 1, 3, 2, each
 * is merged once; delivered again, none is.
 */
static void test_out_of_order_unseen_seq_merged_once(void **st)
{
	struct fixture *f = *st;
	static struct dgrams d[3];
	static const unsigned sent[3] = { 10, 7, 4 };
	static const unsigned order[3] = { 0, 2, 1 };
	struct sl_addr who = new_client(f);
	struct sl_peer_view v;
	struct sl_wire_entry e[SL_WIRE_MAX_ENTRIES];
	struct sl_wire_header h;
	__u64 total = 0;
	unsigned r, i;

	for (r = 0; r < 3; r++) {
		assert_int_equal(send_udp(&f->a, &who, f->now + r * 200, sent[r],
				      NULL), sent[r]);
		collect(f->sa, f->now + r * 200 + 100, &d[r]);
		assert_int_equal(d[r].n, 1);
		assert_int_equal(fx_open(d[r].msg[0], d[r].len[0], &h, e), SL_WIRE_OK);
		assert_int_equal(h.seq, r + 1);
		assert_int_equal(units_for(&d[r], &who), sent[r]);
	}
	for (i = 0; i < 3; i++) {
		r = order[i];
		assert_int_equal(receive(f, d[r].msg[0], d[r].len[0],
					 f->now + 700), SL_SYNC_MERGED);
		total += sent[r];
		assert_int_equal(view_of(f, &who, &v), 0);
		assert_int_equal(view_sum(&v), total);
	}
	for (r = 0; r < 3; r++)
		assert_int_equal(receive(f, d[r].msg[0], d[r].len[0],
					 f->now + 800), SL_SYNC_REPLAYED);
	assert_int_equal(view_of(f, &who, &v), 0);
	assert_int_equal(view_sum(&v), 10 + 7 + 4);
	assert_int_equal(send_udp(&f->b, &who, f->now + 800, LIMIT, NULL),
			 LIMIT - 21);
}

/* One message, two entries: one for a rule B has, one for a rule it does
 * not. The first is merged, the second counted.
 */
static void test_unknown_rule_counted_not_merged(void **st)
{
	struct fixture *f = *st;
	struct sl_wire_header h = {
		.type = SL_WIRE_COUNTS, .count = 2, .node = 4,
		.incarnation = 5, .seq = 1, .sent_ms = f->now,
	};
	struct sl_wire_entry e[2];
	struct sl_addr known = new_client(f), unknown = new_client(f);
	struct sl_peer_view v;
	struct sl_client_key k;
	uint8_t buf[SL_WIRE_MAX];
	__u32 id;
	size_t len;

	memset(e, 0, sizeof(e));
	e[0].addr = known;
	e[0].rule_hash = sl_rule_name_hash("sync-udp");
	e[0].start_ms = f->now;
	e[0].units = 11;
	e[1].addr = unknown;
	e[1].rule_hash = sl_rule_name_hash("only-on-a");
	e[1].start_ms = f->now;
	e[1].units = 13;
	len = fx_seal(buf, &h, e);
	assert_int_equal(receive(f, buf, len, f->now + 10), SL_SYNC_MERGED);
	assert_int_equal(sl_sync_status(f->sb)->unknown_rule, 1);
	assert_int_equal(view_of(f, &known, &v), 0);
	assert_int_equal(view_sum(&v), 11);
	/* no view of the other client under any rule id */
	assert_int_equal(view_of(f, &unknown, &v), -ENOENT);
	for (id = 0; id < SL_MAX_RULES; id++) {
		memset(&k, 0, sizeof(k));
		k.addr = unknown;
		k.rule_id = id;
		if (!bpf_map_lookup_elem(f->b.maps.peer_view, &k, &v))
			fail_msg("a view of the unknown rule's client under id %u",
				 id);
	}
	/* the unknown client is B's alone */
	assert_int_equal(send_udp(&f->b, &unknown, f->now + 20, LIMIT + 1, NULL),
			 LIMIT);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, begin, end)
	const struct CMUnitTest tests[] = {
		T(test_delayed_sync_view_sums_n_and_b_accepts_limit_minus_n),
		T(test_delayed_sync_two_cpus_summed),
		T(test_same_datagrams_again_replayed_view_unchanged),
		T(test_stale_peer_view_entries_swept),
		T(test_window_change_drops_old_peer_slices),
		T(test_out_of_order_unseen_seq_merged_once),
		T(test_unknown_rule_counted_not_merged),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
