// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Peer sync end to end through the real BPF object: two private
 * model-clock instances, A (node 1) and B (node 2), with the same rule
 * file, each with a sync engine (user/sync/engine.h) over its own maps. Packets go
 * through A's XDP program; A's engine collects the signed datagrams; B's
 * engine checks and merges them into B's sl_peer_view; and B's program
 * then decides with them. What is checked:
 *
 *  - the peer view B builds sums to what A accepted (on one CPU or two),
 *    and B's kernel accepts exactly limit - N more from the client
 *    (delayed-sync);
 *  - a message is applied at most once: the same datagrams again, an
 *    older incarnation, B's own node id, a forged byte, and a sequence
 *    64 or more behind the highest are refused and counted, and leave the
 *    view as it was; unseen sequences out of order are each merged once;
 *  - a round without new accepts sends one heartbeat and changes nothing;
 *  - an entry for a rule B does not have is counted, not merged;
 *  - split-quota makes one node accept limit / nodes;
 *  - predictive projects the peers' last round forward: 40 units merged
 *    at T with a 1000 ms interval count 20 more at T + 500;
 *  - sliding-log, sliding-counter and token-bucket count across nodes
 *    too: B's kernel accepts limit - N after A's N log entries; the
 *    counter weighs A's slice and B's own in one estimate, floored once;
 *    the bucket's level is A's and B's units drained once;
 *  - at today's TAI time a 1 s window syncs too (its peer slice numbers
 *    are past 2^32): this one fails until the sender stops rebuilding a
 *    slice start from the wrapped slice number (user/sync/engine.c,
 *    collect_client).
 *
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
#include "core/client_view.h"
#include "core/parse.h"
#include "core/instance.h"
#include "instance_fixture.h"
#include "core/instance_maps.h"
#include "core/request_packet.h"
#include "rules/rules.h"
#include "sl_key.h"
#include "sl_peer.h"
#include "sync/engine.h"
#include "sync/wire.h"

#define T0		1000000000ULL	/* model ms; far from 0 and from u32 wrap */
#define LIMIT		100
#define WINDOW_MS	10000
#define DPORT		9
#define NODE_A		1
#define NODE_B		2
#define MAX_DGRAMS	16
#define ULL(x)		((unsigned long long)(x))

/* The algorithms that are not sums of slices, on ports of their own. */
#define OTHER_ALGO_RULES \
	"  - {name: sync-log, protocol: udp, ports: 11, limit: 100, window: 10s,\n" \
	"     algorithm: sliding-log, key: {ipv4_prefix: 32}}\n" \
	"  - {name: sync-counter, protocol: udp, ports: 12, limit: 100,\n" \
	"     window: 10s, slices: 10, algorithm: sliding-counter,\n" \
	"     key: {ipv4_prefix: 32}}\n" \
	"  - {name: sync-bucket, protocol: udp, ports: 13, limit: 100,\n" \
	"     window: 10s, algorithm: token-bucket, bucket_capacity: 100,\n" \
	"     refill_per_s: 10, key: {ipv4_prefix: 32}}\n"

/* One sliding rule keyed by the source /32: the replay's UDP packets to
 * port 9 match it.
 */
static const char rules_yaml[] =
	"rules:\n"
	"  - name: sync-udp\n"
	"    protocol: udp\n"
	"    ports: 9\n"
	"    algorithm: sliding\n"
	"    limit: 100\n"
	"    window: 10s\n"
	"    key: {ipv4_prefix: 32}\n"
	"  - {name: sync-1s, protocol: udp, ports: 10, limit: 100, window: 1s,\n"
	"     algorithm: sliding, key: {ipv4_prefix: 32}}\n"
	OTHER_ALGO_RULES;

/* What B has first, so that sync-udp gets another id on B than on A:
 * nodes know rules by name, ids are each node's own.
 */
static const char rules_yaml_b_before[] =
	"rules:\n"
	"  - {name: b-first, protocol: tcp, ports: 1, limit: 1}\n"
	"  - {name: sync-udp, protocol: udp, ports: 9, limit: 100, window: 10s,\n"
	"     algorithm: sliding, key: {ipv4_prefix: 32}}\n";

struct dgrams {
	unsigned n;
	size_t len[MAX_DGRAMS];
	uint8_t msg[MAX_DGRAMS][SL_WIRE_MAX];
};

struct fixture {
	struct sl_instance a, b;
	struct sl_rule rule_a, rule_b;	/* sync-udp on each node */
	struct sl_sync *sa, *sb;	/* this test's engines */
	uint8_t key[SL_WIRE_KEY];
	__u64 inc_a, inc_b;		/* their incarnations */
	__u64 now;			/* this test's start, model ms */
	unsigned next_client;
	unsigned tests;
	unsigned spread;		/* CPUs packets go to in turn */
};

static struct fixture fx;

/* ---- instances, rules, engines ------------------------------------------ */

static int live_rule(struct sl_instance *in, const char *name,
		     struct sl_rule *out)
{
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	unsigned nr = 0, i;
	int found = -1;

	if (sl_rules_read_live(&in->maps, &rules, &nr, &cfg))
		return -1;
	for (i = 0; i < nr; i++)
		if (!strcmp(rules[i].name, name)) {
			*out = rules[i];
			found = 0;
		}
	free(rules);
	return found;
}

static int group_setup(void **state)
{
	unsigned i;

	if (sl_test_open_instance(&fx.a, 4096, T0))
		return -1;
	if (sl_test_open_instance(&fx.b, 4096, T0)) {
		sl_instance_close(&fx.a);
		return -1;
	}
	/* the setup's own checks: no cmocka asserts outside a test */
	if (sl_test_apply_yaml(&fx.a, rules_yaml) ||
	    sl_test_apply_yaml(&fx.b, rules_yaml_b_before) ||
	    sl_test_apply_yaml(&fx.b, rules_yaml))
		goto fail;
	if (live_rule(&fx.a, "sync-udp", &fx.rule_a) ||
	    live_rule(&fx.b, "sync-udp", &fx.rule_b))
		goto fail;
	for (i = 0; i < SL_WIRE_KEY; i++)
		fx.key[i] = (uint8_t)(0x5a ^ (i * 13));
	sl_test_save_cpus();
	*state = &fx;
	return 0;
fail:
	fprintf(stderr, "applying the rules failed\n");
	sl_instance_close(&fx.b);
	sl_instance_close(&fx.a);
	return -1;
}

static int group_teardown(void **state)
{
	sl_instance_close(&fx.b);
	sl_instance_close(&fx.a);
	sl_test_restore_cpus();
	return 0;
}

static struct sl_sync *engine(struct sl_instance *in, enum sl_layout layout,
			      unsigned node, unsigned interval_ms,
			      unsigned nodes, __u64 incarnation)
{
	struct sl_sync_opts o = {
		.layout = layout, .node = node, .interval_ms = interval_ms,
		.nodes = nodes, .peers_configured = 1,
		.incarnation = incarnation,
	};
	struct sl_sync *s;

	memcpy(o.key, fx.key, sizeof(o.key));
	s = sl_sync_new(&in->maps, &o);
	if (!s)
		fail_msg("sl_sync_new: %s", strerror(errno));
	return s;
}

/* Each test: fresh delayed-sync engines (interval 200 ms) with new
 * incarnations, a minute after the last test began.
 */
static int begin(void **state)
{
	struct fixture *f = *state;

	f->tests++;
	f->spread = 1;
	f->now = T0 + (__u64)f->tests * 60000;
	f->inc_a = 1000000ULL * f->tests + NODE_A;
	f->inc_b = 1000000ULL * f->tests + NODE_B;
	f->sa = engine(&f->a, SL_LAYOUT_DELAYED_SYNC, NODE_A, 200, 2, f->inc_a);
	f->sb = engine(&f->b, SL_LAYOUT_DELAYED_SYNC, NODE_B, 200, 2, f->inc_b);
	return 0;
}

static int end(void **state)
{
	struct fixture *f = *state;

	sl_sync_free(f->sa);
	sl_sync_free(f->sb);
	f->sa = f->sb = NULL;
	sl_test_restore_cpus();
	return 0;
}

/* ---- clients, packets, views -------------------------------------------- */

/* 198.51.x.y, never used before. */
static struct sl_addr new_client(struct fixture *f)
{
	unsigned n = ++f->next_client;
	struct sl_addr a;

	memset(&a, 0, sizeof(a));
	a.byte[10] = a.byte[11] = 0xff;
	a.byte[12] = 198;
	a.byte[13] = 51;
	a.byte[14] = n >> 8;
	a.byte[15] = n;
	return a;
}

/* Send `n` packets from `who` through an instance at `t`, on CPU 0 (or
 * in turn on CPUs 0 and 1 while fx.spread is 2); the number accepted
 * (XDP_PASS). With `first_reject`, where the first drop
 * was (n if none).
 */
static unsigned send_port(struct sl_instance *in, const struct sl_addr *who,
			  __u16 dport, __u64 t, unsigned n,
			  unsigned *first_reject)
{
	struct sl_addr dst;
	uint8_t pkt[SL_PACKET_MAX];
	unsigned i, accepted = 0;
	size_t len;

	assert_int_equal(sl_parse_addr("192.0.2.1", &dst), 0);
	len = sl_packet_udp(pkt, who, &dst, 40000, dport, 18);
	sl_instance_set_time(in, t);
	if (first_reject)
		*first_reject = n;
	for (i = 0; i < n; i++) {
		__u32 verdict = ~0u;

		assert_int_equal(sl_instance_run(in, false, i % fx.spread, pkt,
						 len, 1, &verdict, NULL), 0);
		assert_true(verdict == XDP_PASS || verdict == XDP_DROP);
		if (verdict == XDP_PASS)
			accepted++;
		else if (first_reject && *first_reject == n)
			*first_reject = i;
	}
	return accepted;
}

/* ... to port 9: rule sync-udp. */
static unsigned send_udp(struct sl_instance *in, const struct sl_addr *who,
			 __u64 t, unsigned n, unsigned *first_reject)
{
	return send_port(in, who, DPORT, t, n, first_reject);
}

/* The client key as the kernel builds it (zeroed first: the map compares
 * every byte).
 */
static struct sl_client_key key_of(const struct sl_rule *rule,
				   const struct sl_addr *who)
{
	struct sl_client_key k;

	memset(&k, 0, sizeof(k));
	sl_client_key_make(&k, rule, who, htons(DPORT));
	return k;
}

/* B's peer view of a client under one of B's rules: 0, or -ENOENT with *v
 * zeroed.
 */
static int view_under(struct fixture *f, const struct sl_rule *rule,
		      const struct sl_addr *who, struct sl_peer_view *v)
{
	struct sl_client_key k = key_of(rule, who);

	memset(v, 0, sizeof(*v));
	if (bpf_map_lookup_elem(f->b.maps.peer_view, &k, v)) {
		memset(v, 0, sizeof(*v));
		return -errno;
	}
	return 0;
}

/* ... under sync-udp. */
static int view_of(struct fixture *f, const struct sl_addr *who,
		   struct sl_peer_view *v)
{
	return view_under(f, &f->rule_b, who, v);
}

static __u64 view_sum(const struct sl_peer_view *v)
{
	__u64 n = 0;
	int i;

	for (i = 0; i < SL_PEER_SLOTS; i++)
		n += v->slot[i].count;
	return n;
}

static void assert_view_unchanged(struct fixture *f, const struct sl_addr *who,
				  const struct sl_peer_view *before)
{
	struct sl_peer_view now;

	assert_int_equal(view_of(f, who, &now), 0);
	assert_memory_equal(&now, before, sizeof(now));
}

/* ---- datagrams ------------------------------------------------------------ */

static int store(void *ctx, const uint8_t *msg, size_t len)
{
	struct dgrams *d = ctx;

	assert_true(d->n < MAX_DGRAMS);
	assert_true(len <= SL_WIRE_MAX);
	memcpy(d->msg[d->n], msg, len);
	d->len[d->n++] = len;
	return 0;
}

static void collect(struct sl_sync *s, __u64 t, struct dgrams *d)
{
	d->n = 0;
	assert_int_equal(sl_sync_collect(s, t, store, d), 0);
	assert_true(d->n > 0);
}

/* A bounded node's round: collected, and settled at once. */
static void round_settled(struct sl_sync *s, __u64 t, struct dgrams *d)
{
	collect(s, t, d);
	assert_int_equal(sl_sync_settle(s, t), 0);
}

/* Decode with the fleet key; the units the datagrams carry for `who`. */
static __u64 units_for(const struct dgrams *d, const struct sl_addr *who)
{
	static struct sl_wire_entry e[SL_WIRE_MAX_ENTRIES];
	struct sl_wire_header h;
	__u64 n = 0;
	unsigned i, j;

	for (i = 0; i < d->n; i++) {
		assert_int_equal(sl_wire_decode(d->msg[i], d->len[i], fx.key,
						&h, e), SL_WIRE_OK);
		for (j = 0; j < h.count; j++)
			if (!memcmp(&e[j].addr, who, sizeof(*who)))
				n += e[j].units;
	}
	return n;
}

static int receive(struct fixture *f, const uint8_t *msg, size_t len,
		   __u64 t)
{
	return sl_sync_receive(f->sb, msg, len, "192.0.2.100", t);
}

/* A message made by hand, signed with the fleet key: one entry of `units`
 * for `who` under rule `rule_name` (NULL: a heartbeat).
 */
static size_t hand_message(uint8_t *buf, unsigned node, __u64 incarnation,
			   __u64 seq, __u64 sent_ms, const char *rule_name,
			   const struct sl_addr *who, __u64 start_ms,
			   __u32 units)
{
	struct sl_wire_header h = {
		.type = rule_name ? SL_WIRE_COUNTS : SL_WIRE_HEARTBEAT,
		.count = rule_name ? 1 : 0,
		.node = node, .incarnation = incarnation, .seq = seq,
		.sent_ms = sent_ms,
	};
	struct sl_wire_entry e = { 0 };

	if (rule_name) {
		e.addr = *who;
		e.rule_hash = sl_rule_name_hash(rule_name);
		e.dport = 0;	/* the rule does not key by port */
		e.start_ms = start_ms;
		e.units = units;
	}
	return sl_wire_encode(buf, &h, &e, fx.key);
}

/* N packets from a new client through A at now; A's first round at
 * now + 100, merged by B at now + 150. Checks that A accepted all N and
 * B's view of the client sums to N.
 */
#define N_SENT	30

static struct sl_addr sync_once(struct fixture *f, struct dgrams *d)
{
	struct sl_addr who = new_client(f);
	struct sl_peer_view v;
	unsigned i;

	assert_int_equal(send_udp(&f->a, &who, f->now, N_SENT, NULL), N_SENT);
	collect(f->sa, f->now + 100, d);
	assert_int_equal(units_for(d, &who), N_SENT);
	for (i = 0; i < d->n; i++)
		assert_int_equal(receive(f, d->msg[i], d->len[i], f->now + 150),
				 SL_SYNC_MERGED);
	assert_int_equal(view_of(f, &who, &v), 0);
	assert_int_equal(view_sum(&v), N_SENT);
	return who;
}

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
	assert_int_equal(receive(f, buf, len, f->now + 200), SL_SYNC_OWN);
	assert_view_unchanged(f, &who, &before);
	assert_int_equal(sl_sync_status(f->sb)->rejected_own, 1);
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

static void test_forged_byte_refused_and_counted(void **st)
{
	struct fixture *f = *st;
	uint8_t buf[SL_WIRE_MAX];
	struct sl_peer_view before;
	struct sl_addr who = new_client(f);
	struct dgrams d;
	size_t at[] = { 0, 9, 40, 0 };	/* header, node, an entry, the tag */
	unsigned i;

	/* A's real datagram, changed in transit before B ever saw it */
	assert_int_equal(send_udp(&f->a, &who, f->now, N_SENT, NULL), N_SENT);
	collect(f->sa, f->now + 100, &d);
	assert_int_equal(d.n, 1);
	at[3] = d.len[0] - 1;
	for (i = 0; i < 4; i++) {
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
		assert_int_equal(sl_wire_decode(d[r].msg[0], d[r].len[0],
						f->key, &h, e), SL_WIRE_OK);
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
	assert_int_equal(sl_wire_decode(d2.msg[0], d2.len[0], f->key, &h, e),
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
	len = sl_wire_encode(buf, &h, e, f->key);
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

/* ---- split quota ------------------------------------------------------------ */

static void test_split_quota_four_nodes_accepts_limit_over_four(void **st)
{
	struct fixture *f = *st;
	struct sl_sync *s;
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
	len = sl_wire_encode(buf, &h, e, f->key);
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

/* ---- real clocks ------------------------------------------------------------- */

/* TAI ms in mid-2025. A 1 s window has peer slices of 67 ms, so slice
 * numbers are past 2^32 (the slots keep them wrapped, by design); the
 * first-accept time a sender puts on the wire must still be the real one,
 * or a receiver finds it long out of its window and drops the units.
 * Shorter than about 6 s, every window is in this case today.
 */
#define TAI_2025_MS	1750000000000ULL

static void test_one_second_window_at_real_tai_time_synced(void **st)
{
	struct fixture *f = *st;
	struct sl_wire_entry e[SL_WIRE_MAX_ENTRIES];
	struct sl_wire_header h;
	struct sl_rule ra, rb;
	struct sl_addr who = new_client(f);
	struct sl_peer_view v;
	struct dgrams d;
	__u64 t = TAI_2025_MS + (__u64)f->tests * 60000;
	__u64 ps = sl_peer_slice_ms(1000);
	unsigned i, j, entries = 0, first_reject;

	assert_int_equal(ps, 67);
	assert_true(t / ps > UINT32_MAX);
	assert_int_equal(live_rule(&f->a, "sync-1s", &ra), 0);
	assert_int_equal(live_rule(&f->b, "sync-1s", &rb), 0);
	assert_int_equal(send_port(&f->a, &who, 10, t, 20, NULL), 20);
	collect(f->sa, t + 10, &d);
	/* on the wire: the real first accept, t (not a 1970 time from a
	 * wrapped slice number)
	 */
	for (i = 0; i < d.n; i++) {
		assert_int_equal(sl_wire_decode(d.msg[i], d.len[i], f->key,
						&h, e), SL_WIRE_OK);
		for (j = 0; j < h.count; j++) {
			if (memcmp(&e[j].addr, &who, sizeof(who)))
				continue;
			entries++;
			if (e[j].start_ms != t)
				fail_msg("entry starts at %llu ms, the first "
					 "accept was at %llu", ULL(e[j].start_ms),
					 ULL(t));
			assert_int_equal(e[j].units, 20);
		}
	}
	assert_int_equal(entries, 1);
	for (i = 0; i < d.n; i++)
		assert_int_equal(receive(f, d.msg[i], d.len[i], t + 20),
				 SL_SYNC_MERGED);
	assert_int_equal(view_under(f, &rb, &who, &v), 0);
	assert_int_equal(view_sum(&v), 20);
	assert_int_equal(send_port(&f->b, &who, 10, t + 30, LIMIT,
				   &first_reject), LIMIT - 20);
	assert_int_equal(first_reject, LIMIT - 20);
}

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

/* ---- what a round reads ------------------------------------------------ */

static int count_only(void *ctx, const uint8_t *msg, size_t len)
{
	return 0;
}

/* One round; the clients it read and the entries it sent. */
static void round_reads(struct sl_sync *s, __u64 t, __u64 *read,
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
	for (i = 0; i < 600; i++) {
		who = new_client(f);
		assert_int_equal(send_udp(&f->a, &who, f->now + 100, 1, NULL), 1);
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
		T(test_delayed_sync_view_sums_n_and_b_accepts_limit_minus_n),
		T(test_delayed_sync_two_cpus_summed),
		T(test_same_datagrams_again_replayed_view_unchanged),
		T(test_older_incarnation_refused_newer_restarts_sequence),
		T(test_own_node_id_refused),
		T(test_future_dated_refused_and_counted),
		T(test_stale_peer_view_entries_swept),
		T(test_window_change_drops_old_peer_slices),
		T(test_slice_opened_during_walk_sent_once),
		T(test_stale_and_pre_start_datagrams_refused),
		T(test_restart_sends_what_was_accepted_meanwhile),
		T(test_forged_byte_refused_and_counted),
		T(test_out_of_order_unseen_seq_merged_once),
		T(test_seq_64_or_more_behind_max_refused),
		T(test_second_collect_without_packets_only_heartbeat),
		T(test_round_reads_only_changed_clients),
		T(test_changed_ring_full_round_walks_every_client),
		T(test_unknown_rule_counted_not_merged),
		T(test_split_quota_four_nodes_accepts_limit_over_four),
		T(test_predictive_counts_projected_20_at_half_interval),
		T(test_sliding_log_synced_b_accepts_limit_minus_n),
		T(test_sliding_counter_fleet_weighed_once),
		T(test_token_bucket_fleet_level_drained_once),
		T(test_bounded_node_takes_its_share_per_round),
		T(test_bounded_node_alone_after_two_silent_rounds),
		T(test_bounded_service_gone_node_decides_alone),
		/* last: its clock is 50 years past the others' */
		T(test_one_second_window_at_real_tai_time_synced),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
