// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: sync_fixture instance_fixture */
/*
 * A configured peer (one holding its own secret key: a compromised node)
 * can do no more than a node can: datagrams sealed for B with its pair's
 * key but claiming what no node sends, through the real BPF object and
 * B's engine (tests/lib/sync_fixture.h):
 *  - an incarnation ahead of the datagram's own date is refused, and the
 *    real sender's next datagrams are still merged;
 *  - units past what a node can accept in a round are cut (bounded: the
 *    even share of a client no peer has reported) and counted;
 *  - that cap is over what one peer reported of a client in the period a
 *    node could accept it in, not per datagram: many datagrams each
 *    carrying it put one cap in the view, another peer still reports its
 *    own, and the peer's next period starts fresh;
 *  - node ids no key names are refused as the datagram is opened; once
 *    the configured peers are named (sl_sync_admit_only), node ids and
 *    addresses the config does not name get no slot either, each
 *    refusal counted once;
 *  - a peer past its share of sl_peer_view has its new clients refused
 *    and counted, and another peer's report still goes in;
 *  - after B restarts over its replay state, a datagram it took before
 *    (dated ahead, within the skew) is refused.
 * Expected figures are worked out here from the rule (limit 100 per 10 s)
 * and the documented arithmetic, never read back from the code.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <cmocka.h>

#include "slicelimit.h"
#include "instance/instance.h"
#include "instance/instance_maps.h"
#include "sl_peer.h"
#include "sync/engine.h"
#include "sync/wire.h"
#include "sync_fixture.h"

#define PEER_A_HOST	"192.0.2.100"	/* receive()'s sender address */

static void test_incarnation_ahead_of_its_date_refused_real_peer_applied(void **st)
{
	struct fixture *f = *st;
	uint8_t buf[SL_WIRE_MAX];
	struct sl_peer_view v;
	struct sl_addr who;
	struct dgrams d;
	size_t len;

	who = sync_once(f, &d);
	/* node 1 "restarted" at the end of time */
	len = hand_message(buf, NODE_A, UINT64_MAX, 1, f->now + 160,
			   "sync-udp", &who, f->now, 5);
	assert_int_equal(receive(f, buf, len, f->now + 200), SL_SYNC_FUTURE);
	/* and one that started a millisecond after it sent */
	len = hand_message(buf, NODE_A, (f->now + 161) * 1000000ULL, 1,
			   f->now + 160, "sync-udp", &who, f->now, 5);
	assert_int_equal(receive(f, buf, len, f->now + 200), SL_SYNC_FUTURE);
	assert_int_equal(sl_sync_status(f->sb)->rejected_future, 2);
	/* the real node 1's next round is merged */
	assert_int_equal(send_udp(&f->a, &who, f->now + 250, 7, NULL), 7);
	collect(f->sa, f->now + 300, &d);
	assert_int_equal(receive(f, d.msg[0], d.len[0], f->now + 310),
			 SL_SYNC_MERGED);
	assert_int_equal(view_of(f, &who, &v), 0);
	assert_int_equal(view_sum(&v), N_SENT + 7);
}

/* bounded, a client no peer has reported: a node's round takes at most
 * the even share of the quota among two nodes, (110 - 2) / 2 = 54 units
 * (sl_bounded_allowance), so 2^32 - 1 is cut to 54; B then still has
 * room for the client.
 */
static void test_bounded_units_past_a_round_cut_to_even_share(void **st)
{
	struct fixture *f = *st;
	struct sl_addr who = new_client(f);
	uint8_t buf[SL_WIRE_MAX];
	struct sl_peer_view v;
	size_t len;

	sl_sync_free(f->sb);
	f->sb = engine(&f->b, SL_LAYOUT_BOUNDED, NODE_B, 200, 2, f->inc_b);
	len = hand_message(buf, NODE_A, f->inc_a, 1, f->now, "sync-udp", &who,
			   f->now, UINT32_MAX);
	assert_int_equal(receive(f, buf, len, f->now + 10), SL_SYNC_MERGED);
	assert_int_equal(view_of(f, &who, &v), 0);
	assert_int_equal(view_sum(&v), 54);
	assert_int_equal(sl_sync_status(f->sb)->clamped_entries, 1);
	/* a second report in the same window: the client is known now, and
	 * a node owning all its units may take 95% of the room after the
	 * units per node set aside: (110 - 2) * (9 + 1/2) / 10, rounded up,
	 * 103 in all over the window, of which node 1 reported 54 already
	 */
	len = hand_message(buf, NODE_A, f->inc_a, 2, f->now + 20, "sync-udp",
			   &who, f->now + 20, UINT32_MAX);
	assert_int_equal(receive(f, buf, len, f->now + 30), SL_SYNC_MERGED);
	assert_int_equal(view_of(f, &who, &v), 0);
	assert_int_equal(view_sum(&v), 103);
	assert_int_equal(sl_sync_status(f->sb)->clamped_entries, 2);
}

/* Under delayed-sync a node passes at most the limit in a window (plus
 * the predictive margin's fiftieth): 100 + 2.
 */
static void test_units_past_the_limit_cut_to_it(void **st)
{
	struct fixture *f = *st;
	struct sl_addr who = new_client(f);
	uint8_t buf[SL_WIRE_MAX];
	struct sl_peer_view v;
	size_t len;

	len = hand_message(buf, NODE_A, f->inc_a, 1, f->now, "sync-udp", &who,
			   f->now, UINT32_MAX);
	assert_int_equal(receive(f, buf, len, f->now + 10), SL_SYNC_MERGED);
	assert_int_equal(view_of(f, &who, &v), 0);
	assert_int_equal(view_sum(&v), LIMIT + LIMIT / 50);
	assert_int_equal(sl_sync_status(f->sb)->clamped_entries, 1);
	/* within it: taken as sent, not counted */
	who = new_client(f);
	len = hand_message(buf, NODE_A, f->inc_a, 2, f->now, "sync-udp", &who,
			   f->now, LIMIT);
	assert_int_equal(receive(f, buf, len, f->now + 10), SL_SYNC_MERGED);
	assert_int_equal(view_of(f, &who, &v), 0);
	assert_int_equal(view_sum(&v), LIMIT);
	assert_int_equal(sl_sync_status(f->sb)->clamped_entries, 1);
}

/* Node 1 sends N_REPEATS datagrams (each its own sequence number, sealed
 * right), each carrying `first` units of one new client, the most its
 * first entry may carry: the view takes `cap` of them in all, the most a
 * node can accept of the client in a window, and the entries past it are
 * cut (all but the first) and counted. Node 3 still reports `first` of
 * its own. A window after node 1's first report, its units have left the
 * period: its next report is taken whole.
 */
#define N_REPEATS	5

static void check_one_cap_per_peer(struct fixture *f, __u32 first, __u32 cap)
{
	struct sl_addr who = new_client(f);
	uint8_t buf[SL_WIRE_MAX];
	struct sl_peer_view v;
	__u64 seq, in_view;
	size_t len;

	for (seq = 1; seq <= N_REPEATS; seq++) {
		len = hand_message(buf, NODE_A, f->inc_a, seq, f->now + seq,
				   "sync-udp", &who, f->now, first);
		assert_int_equal(receive(f, buf, len, f->now + 10 + seq),
				 SL_SYNC_MERGED);
	}
	assert_int_equal(view_of(f, &who, &v), 0);
	assert_int_equal(view_sum(&v), cap);
	assert_int_equal(sl_sync_status(f->sb)->clamped_entries,
			 N_REPEATS - 1);
	/* another peer's report of the same client: its own cap */
	len = hand_message(buf, 3, 77, 1, f->now + 20, "sync-udp", &who,
			   f->now + 20, first);
	assert_int_equal(receive(f, buf, len, f->now + 30), SL_SYNC_MERGED);
	assert_int_equal(view_of(f, &who, &v), 0);
	assert_int_equal(view_sum(&v), cap + first);
	assert_int_equal(sl_sync_status(f->sb)->clamped_entries,
			 N_REPEATS - 1);
	/* node 1's next period: its report counts again, uncut */
	in_view = view_sum(&v);
	len = hand_message(buf, NODE_A, f->inc_a, N_REPEATS + 1,
			   f->now + WINDOW_MS, "sync-udp", &who,
			   f->now + WINDOW_MS, first);
	assert_int_equal(receive(f, buf, len, f->now + WINDOW_MS + 10),
			 SL_SYNC_MERGED);
	assert_int_equal(view_of(f, &who, &v), 0);
	assert_int_equal(view_sum(&v) - in_view, first);
	assert_int_equal(sl_sync_status(f->sb)->clamped_entries,
			 N_REPEATS - 1);
}

/* bounded: the first entry may carry the even share, 54; once node 1's
 * units are in the view, a node owning all of them may reach 103 (as
 * test_bounded_units_past_a_round_cut_to_even_share works out), and no
 * more over the window: 54 + 49, not 5 x 54.
 */
static void test_bounded_repeated_datagrams_one_cap(void **st)
{
	struct fixture *f = *st;

	sl_sync_free(f->sb);
	f->sb = engine(&f->b, SL_LAYOUT_BOUNDED, NODE_B, 200, 2, f->inc_b);
	check_one_cap_per_peer(f, 54, 103);
}

/* delayed-sync: the limit and the predictive margin's fiftieth, 102, over
 * the window: not 5 x 102.
 */
static void test_delayed_repeated_datagrams_one_cap(void **st)
{
	check_one_cap_per_peer(*st, LIMIT + LIMIT / 50, LIMIT + LIMIT / 50);
}

/* Node 1 is configured at PEER_A_HOST. 40 node ids no key names are
 * refused when the datagram is opened (sl_wire_decode), before any slot
 * is looked at; node 3, whose key B holds but which the config does not
 * list, from node 1's own address, and node 1's id from another address
 * get no slot from the engine (its slots are bound to node id and
 * address); each refusal is counted once, as rejected_unknown_peer, and
 * node 1 from its own address is merged.
 */
static void test_unknown_node_ids_do_not_keep_configured_peer_out(void **st)
{
	struct sl_sync_member m[] = { { .node = NODE_A, .host = PEER_A_HOST } };
	static const uint8_t stranger[SL_WIRE_KEY] = { 0x77 };
	struct sl_wire_header h = { .type = SL_WIRE_HEARTBEAT };
	struct fixture *f = *st;
	uint8_t buf[SL_WIRE_MAX];
	struct sl_addr who;
	struct dgrams d;
	unsigned i;
	size_t len;

	assert_int_equal(sl_sync_admit_only(f->sb, m, 1), 0);
	for (i = 100; i < 140; i++) {
		h.node = i;
		h.incarnation = 1;
		h.seq = 1;
		h.sent_ms = f->now;
		len = sl_wire_encode(buf, &h, NULL, stranger);
		assert_int_equal(sl_sync_receive(f->sb, buf, len,
						 "192.0.2.66:7400", f->now),
				 SL_WIRE_UNKNOWN_PEER);
	}
	assert_int_equal(sl_sync_status(f->sb)->rejected_unknown_peer, 40);
	len = hand_message(buf, 3, 77, 1, f->now, NULL, NULL, 0, 0);
	assert_int_equal(sl_sync_receive(f->sb, buf, len, PEER_A_HOST ":7400",
					 f->now), SL_SYNC_UNKNOWN);
	len = hand_message(buf, NODE_A, f->inc_a, 1, f->now, NULL, NULL, 0, 0);
	assert_int_equal(sl_sync_receive(f->sb, buf, len, "192.0.2.66:7400",
					 f->now), SL_SYNC_UNKNOWN);
	assert_int_equal(sl_sync_status(f->sb)->rejected_unknown_peer, 42);
	assert_int_equal(sl_sync_status(f->sb)->rejected_wrong_address, 0);
	assert_int_equal(sl_sync_status(f->sb)->rejected_forged, 0);
	assert_int_equal(sl_sync_status(f->sb)->rejected_malformed, 0);
	assert_int_equal(sl_sync_status(f->sb)->nr_peers, 0);
	who = sync_once(f, &d);		/* from PEER_A_HOST */
	(void)who;
	assert_int_equal(sl_sync_status(f->sb)->nr_peers, 1);
	assert_int_equal(sl_sync_status(f->sb)->peer[0].node, NODE_A);
	/* its slot is bound to its address: the same id from elsewhere is
	 * still refused
	 */
	len = hand_message(buf, NODE_A, f->inc_a, 50, f->now + 160, NULL, NULL,
			   0, 0);
	assert_int_equal(sl_sync_receive(f->sb, buf, len, "192.0.2.66:7400",
					 f->now + 160), SL_SYNC_UNKNOWN);
	/* and from its own, as a wildcard IPv6 socket sees an IPv4 peer */
	assert_int_equal(sl_sync_receive(f->sb, buf, len,
					 "[::ffff:" PEER_A_HOST "]:7400",
					 f->now + 160), SL_SYNC_MERGED);
}

/* Two configured peers: node 3 reports one junk client per entry until
 * it holds its share of B's view (capacity / 2) and 10 more; the 10 are
 * refused and counted against it, and node 1's report of a new client
 * still goes in.
 */
static void test_peer_flooding_junk_cannot_crowd_out_another(void **st)
{
	struct sl_sync_member m[] = {
		{ .node = NODE_A, .host = PEER_A_HOST },
		{ .node = 3, .host = "192.0.2.3" },
	};
	static struct sl_wire_entry e[SL_WIRE_MAX_ENTRIES];
	struct sl_wire_header h = {
		.type = SL_WIRE_COUNTS, .node = 3, .incarnation = 77,
	};
	struct fixture *f = *st;
	uint8_t buf[SL_WIRE_MAX];
	const struct sl_sync_peer *p3;
	struct sl_peer_view v;
	struct sl_addr who;
	struct dgrams d;
	__u32 share, junk, sent = 0, j;
	size_t len;

	assert_int_equal(sl_sync_admit_only(f->sb, m, 2), 0);
	share = sl_map_capacity(f->b.maps.peer_view) / 2;
	junk = share + 10;
	while (sent < junk) {
		h.count = junk - sent < SL_WIRE_MAX_ENTRIES ? junk - sent :
			  SL_WIRE_MAX_ENTRIES;
		h.seq++;
		h.sent_ms = f->now;
		for (j = 0; j < h.count; j++) {
			memset(&e[j], 0, sizeof(e[j]));
			/* 203.0.113.0/24 and up: clients no test uses */
			e[j].addr.byte[10] = e[j].addr.byte[11] = 0xff;
			e[j].addr.byte[12] = 203;
			e[j].addr.byte[13] = 0;
			e[j].addr.byte[14] = (sent + j) >> 8;
			e[j].addr.byte[15] = sent + j;
			e[j].rule_hash = sl_rule_name_hash("sync-udp");
			e[j].start_ms = f->now;
			e[j].units = 1;
		}
		len = fx_seal(buf, &h, e);
		assert_int_equal(sl_sync_receive(f->sb, buf, len,
						 "192.0.2.3:7400", f->now + 5),
				 SL_SYNC_MERGED);
		sent += h.count;
	}
	p3 = &sl_sync_status(f->sb)->peer[0];
	assert_int_equal(p3->node, 3);
	assert_int_equal(p3->view_refused, 10);
	assert_int_equal(sl_sync_status(f->sb)->view_capped, 10);
	assert_int_equal(sl_sync_status(f->sb)->view_full, 0);
	/* node 1's report of its client: in */
	who = sync_once(f, &d);
	assert_int_equal(view_of(f, &who, &v), 0);
	assert_int_equal(view_sum(&v), N_SENT);
	/* the junk leaves with its window; the sweep counts what is left */
	assert_int_equal(sl_sync_adopt(f->sb, f->now + 60000), 0);
}

/* B keeps its replay state in a file: a datagram of node 1 dated 4 s
 * ahead of B's clock (within the skew) is merged; B restarts a second
 * later (a new engine over the same maps and file) and refuses it again
 * as stale, and node 1's next datagrams dated up to it too (the cost:
 * the bound the forged date set); one dated after it is merged. A torn
 * file: refused for the skew and an interval after the start.
 */
static void test_replayed_after_restart_refused(void **st)
{
	struct fixture *f = *st;
	char dir[] = "/tmp/sl-replay-state.XXXXXX", path[64];
	struct sl_sync_opts o = {
		.layout = SL_LAYOUT_DELAYED_SYNC, .node = NODE_B,
		.interval_ms = 200, .nodes = 2, .peers_configured = 1,
	};
	struct sl_addr who = new_client(f);
	uint8_t buf[SL_WIRE_MAX], ahead[SL_WIRE_MAX];
	size_t len, ahead_len;
	FILE *torn;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/state", dir);
	o.keys = fx.keys[NODE_B];
	o.replay_state = path;
	o.incarnation = f->inc_b;
	sl_sync_free(f->sb);
	assert_non_null(f->sb = sl_sync_new(&f->b.maps, &o));
	assert_int_equal(sl_sync_adopt(f->sb, f->now), 0);
	ahead_len = hand_message(ahead, NODE_A, f->inc_a, 1, f->now + 4000,
				 "sync-udp", &who, f->now, 5);
	assert_int_equal(receive(f, ahead, ahead_len, f->now + 10),
			 SL_SYNC_MERGED);
	/* the restart */
	sl_sync_free(f->sb);
	o.incarnation = f->inc_b + 1;
	assert_non_null(f->sb = sl_sync_new(&f->b.maps, &o));
	assert_int_equal(sl_sync_adopt(f->sb, f->now + 1000), 0);
	assert_int_equal(receive(f, ahead, ahead_len, f->now + 1010),
			 SL_SYNC_STALE);
	len = hand_message(buf, NODE_A, f->inc_a, 2, f->now + 4000, "sync-udp",
			   &who, f->now + 1000, 5);
	assert_int_equal(receive(f, buf, len, f->now + 1010), SL_SYNC_STALE);
	len = hand_message(buf, NODE_A, f->inc_a, 3, f->now + 4001, "sync-udp",
			   &who, f->now + 1000, 5);
	assert_int_equal(receive(f, buf, len, f->now + 1010), SL_SYNC_MERGED);
	/* seq 1 is in node 1's window as restored: a replay, whatever its
	 * date
	 */
	len = hand_message(buf, NODE_A, f->inc_a, 1, f->now + 4002, "sync-udp",
			   &who, f->now + 1000, 5);
	assert_int_equal(receive(f, buf, len, f->now + 1010), SL_SYNC_REPLAYED);

	/* a torn file: nothing is taken until now + skew + interval */
	sl_sync_free(f->sb);
	assert_non_null(torn = fopen(path, "w"));
	fputs("SLR1", torn);
	fclose(torn);
	assert_non_null(f->sb = sl_sync_new(&f->b.maps, &o));
	assert_int_equal(sl_sync_adopt(f->sb, f->now + 2000), 0);
	len = hand_message(buf, NODE_A, f->inc_a, 10,
			   f->now + 2000 + SL_SYNC_MAX_SKEW_MS + 199,
			   "sync-udp", &who, f->now + 2000, 5);
	assert_int_equal(receive(f, buf, len, f->now + 2010 +
				 SL_SYNC_MAX_SKEW_MS), SL_SYNC_STALE);
	len = hand_message(buf, NODE_A, f->inc_a, 11,
			   f->now + 2000 + SL_SYNC_MAX_SKEW_MS + 200,
			   "sync-udp", &who, f->now + 2000, 5);
	assert_int_equal(receive(f, buf, len, f->now + 2010 +
				 SL_SYNC_MAX_SKEW_MS), SL_SYNC_MERGED);
	unlink(path);
	rmdir(dir);
}

/* ---- token-bucket: the cap over every span, as the kernel drains it ---- */

/* sync-bucket: capacity 100, 10 units a second; its peer slice is
 * ceil(20 fills of 10 s / 15) = 13334 ms (sl_bucket_slice_ms).
 */
#define BUCKET_CAP	100
#define BUCKET_RATE	10
#define BUCKET_PS	13334

/* The units the kernel counts of the peers in `v` at now_ms, as it
 * drains them (sl_peer_tally_bucket, written here from its comment): over
 * the slices of the last ring, newest first, the units so far less the
 * refill since the slice began, at most.
 */
static __u64 drained_level(const struct sl_peer_view *v, __u64 now_ms)
{
	__u64 first = now_ms / BUCKET_PS, cum = 0, level = 0, refill;
	int k;

	for (k = 0; k < SL_PEER_SLOTS; k++) {
		const struct sl_peer_slot *s =
			&v->slot[(first - k) & (SL_PEER_SLOTS - 1)];

		if (s->slice == (__u32)(first - k) && s->count > s->own)
			cum += s->count - s->own;
		refill = (now_ms - (first - k) * BUCKET_PS) * BUCKET_RATE / 1000;
		if (cum > refill + level)
			level = cum - refill;
	}
	return level;
}

/* Node 1, forging, reports all it may of one client under sync-bucket in
 * each slice of a ring (16 slices, 213 s): a node can have at most its
 * capacity outstanding at any moment, so the kernel must never count more
 * of it than the capacity, the margin and the refill of a skew
 * (SL_PEER_MAX_AHEAD_MS): 100 + 2 + 1 + 50. A cap per slice alone would
 * let the level grow by what a slice does not drain, slice after slice.
 */
static void test_bucket_forger_counted_at_most_a_node(void **st)
{
	struct fixture *f = *st;
	struct sl_addr who = new_client(f);
	uint8_t buf[SL_WIRE_MAX];
	struct sl_peer_view v;
	struct sl_rule rule;
	__u64 seq = 1, t, level, most = 0;
	unsigned j, r;

	assert_int_equal(live_rule(&f->b, "sync-bucket", &rule), 0);
	for (j = 0; j < SL_PEER_SLOTS; j++) {
		/* four reports a slice, each dated at its start */
		for (r = 0; r < 4; r++) {
			t = f->now + (__u64)j * BUCKET_PS + r * 3000;
			{
				size_t len = hand_message(buf, NODE_A, f->inc_a,
							  seq++, t, "sync-bucket",
							  &who, t, UINT32_MAX);
				assert_int_equal(receive(f, buf, len, t + 10),
						 SL_SYNC_MERGED);
			}
			assert_int_equal(view_under(f, &rule, &who, &v), 0);
			level = drained_level(&v, t + 10);
			if (level > most)
				most = level;
		}
	}
	printf("# bucket forger: the kernel counted at most %llu of it\n",
	       ULL(most));
	assert_true(most >= BUCKET_CAP);
	assert_true(most <= BUCKET_CAP + BUCKET_CAP / 50 + 1 +
			    SL_PEER_MAX_AHEAD_MS * BUCKET_RATE / 1000);
}

/* Node A, honest, takes sync-bucket's client as fast as its bucket lets
 * it (15 packets offered a second against a refill of 10) for 80 s, and
 * reports it each second: B cuts none of its entries.
 */
static void test_bucket_honest_peer_never_cut(void **st)
{
	struct fixture *f = *st;
	struct sl_addr who = new_client(f);
	__u64 t, accepted = 0;
	struct dgrams d;
	unsigned s, i;

	for (s = 0; s < 80; s++) {
		t = f->now + (__u64)s * 1000;
		accepted += send_port(&f->a, &who, 13, t, s ? 15 : 150, NULL);
		collect(f->sa, t + 200, &d);
		for (i = 0; i < d.n; i++)
			assert_int_equal(receive(f, d.msg[i], d.len[i],
						 t + 250), SL_SYNC_MERGED);
	}
	/* the bucket took its capacity and its refill, no more */
	assert_true(accepted >= BUCKET_CAP + 79 * BUCKET_RATE - 1 &&
		    accepted <= BUCKET_CAP + 79 * BUCKET_RATE + 1);
	assert_int_equal(sl_sync_status(f->sb)->clamped_entries, 0);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, begin, end)
	const struct CMUnitTest tests[] = {
		T(test_incarnation_ahead_of_its_date_refused_real_peer_applied),
		T(test_bounded_units_past_a_round_cut_to_even_share),
		T(test_units_past_the_limit_cut_to_it),
		T(test_bounded_repeated_datagrams_one_cap),
		T(test_delayed_repeated_datagrams_one_cap),
		T(test_unknown_node_ids_do_not_keep_configured_peer_out),
		T(test_peer_flooding_junk_cannot_crowd_out_another),
		T(test_replayed_after_restart_refused),
		/* last: their clocks run past the others' */
		T(test_bucket_forger_counted_at_most_a_node),
		T(test_bucket_honest_peer_never_cut),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
