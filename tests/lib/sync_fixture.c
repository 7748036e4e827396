// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The fixture of tests/lib/sync_fixture.h. */
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

struct fixture fx;

/* ---- instances, rules, engines ------------------------------------------ */

int live_rule(struct sl_instance *in, const char *name,
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

int group_setup(void **state)
{
	unsigned i, n;

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
	/* key pairs from fixed seeds: the same every run */
	for (n = 1; n <= FX_NODES; n++) {
		for (i = 0; i < SL_WIRE_KEY; i++)
			fx.secret[n][i] = (uint8_t)(0x5a ^ (i * 13) ^ (n << 5));
		if (sl_wire_public_key(fx.public[n], fx.secret[n]))
			goto fail;
	}
	for (n = 1; n <= FX_NODES; n++) {
		unsigned partner = n == NODE_A ? NODE_B : NODE_A, m;

		if (sl_wire_keys_init(&fx.keys[n], n, fx.secret[n]) ||
		    sl_wire_keys_add(&fx.keys[n], fx.secret[n], partner,
				     fx.public[partner], NULL))
			goto fail;
		for (m = 1; m <= FX_NODES; m++)
			if (m != n && m != partner &&
			    sl_wire_keys_add(&fx.keys[n], fx.secret[n], m,
					     fx.public[m], NULL))
				goto fail;
	}
	sl_test_save_cpus();
	*state = &fx;
	return 0;
fail:
	fprintf(stderr, "applying the rules failed\n");
	sl_instance_close(&fx.b);
	sl_instance_close(&fx.a);
	return -1;
}

int group_teardown(void **state)
{
	sl_instance_close(&fx.b);
	sl_instance_close(&fx.a);
	sl_test_restore_cpus();
	return 0;
}

struct sl_sync_engine *engine(struct sl_instance *in, enum sl_layout layout,
			      unsigned node, unsigned interval_ms,
			      unsigned nodes, __u64 incarnation)
{
	struct sl_sync_opts o = {
		.layout = layout, .node = node, .interval_ms = interval_ms,
		.nodes = nodes, .peers_configured = 1,
		.incarnation = incarnation,
	};
	struct sl_sync_engine *s;

	assert_true(node >= 1 && node <= FX_NODES);
	o.keys = fx.keys[node];
	s = sl_sync_new(&in->maps, &o);
	if (!s)
		fail_msg("sl_sync_new: %s", strerror(errno));
	return s;
}

/* Each test: fresh delayed-sync engines (interval 200 ms) with new
 * incarnations, a minute after the last test began.
 */
int begin(void **state)
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

int end(void **state)
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
struct sl_addr new_client(struct fixture *f)
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
unsigned send_port(struct sl_instance *in, const struct sl_addr *who,
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
unsigned send_udp(struct sl_instance *in, const struct sl_addr *who,
		  __u64 t, unsigned n, unsigned *first_reject)
{
	return send_port(in, who, DPORT, t, n, first_reject);
}

/* The client key as the kernel builds it (zeroed first: the map compares
 * every byte).
 */
struct sl_client_key key_of(const struct sl_rule *rule,
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
int view_under(struct fixture *f, const struct sl_rule *rule,
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
int view_of(struct fixture *f, const struct sl_addr *who,
	    struct sl_peer_view *v)
{
	return view_under(f, &f->rule_b, who, v);
}

__u64 view_sum(const struct sl_peer_view *v)
{
	__u64 n = 0;
	int i;

	for (i = 0; i < SL_PEER_SLOTS; i++)
		n += v->slot[i].count;
	return n;
}

void assert_view_unchanged(struct fixture *f, const struct sl_addr *who,
			   const struct sl_peer_view *before)
{
	struct sl_peer_view now;

	assert_int_equal(view_of(f, who, &now), 0);
	assert_memory_equal(&now, before, sizeof(now));
}

/* ---- datagrams ------------------------------------------------------------ */

int store(void *ctx, unsigned peer, const uint8_t *msg, size_t len)
{
	struct dgrams *d = ctx;

	if (peer)
		return 0;	/* only the partner's copy */
	assert_true(d->n < MAX_DGRAMS);
	assert_true(len <= SL_WIRE_MAX);
	memcpy(d->msg[d->n], msg, len);
	d->len[d->n++] = len;
	return 0;
}

void collect(struct sl_sync_engine *s, __u64 t, struct dgrams *d)
{
	d->n = 0;
	assert_int_equal(sl_sync_collect(s, t, store, d), 0);
	assert_true(d->n > 0);
}

/* A bounded node's round: collected, and settled at once. */
void round_settled(struct sl_sync_engine *s, __u64 t, struct dgrams *d)
{
	collect(s, t, d);
	assert_int_equal(sl_sync_settle(s, t), 0);
}

enum sl_wire_error fx_open(const uint8_t *msg, size_t len,
			   struct sl_wire_header *h, struct sl_wire_entry *e)
{
	enum sl_wire_error err = SL_WIRE_FORGED;
	unsigned n;

	for (n = 1; n <= FX_NODES && err; n++)
		err = sl_wire_decode(msg, len, &fx.keys[n], "", h, e);
	return err;
}

size_t fx_seal(uint8_t *buf, const struct sl_wire_header *h,
	       const struct sl_wire_entry *e)
{
	static const uint8_t nobody[SL_WIRE_KEY];
	const struct sl_wire_keys *k;
	unsigned i;

	assert_true(h->node >= 1 && h->node <= FX_NODES);
	k = &fx.keys[h->node];
	for (i = 0; i < k->nr; i++)
		if (k->peer[i].node == NODE_B)
			return sl_wire_encode(buf, h, e, k->peer[i].to);
	return sl_wire_encode(buf, h, e, nobody);
}

/* Open as the partner; the units the datagrams carry for `who`. */
__u64 units_for(const struct dgrams *d, const struct sl_addr *who)
{
	static struct sl_wire_entry e[SL_WIRE_MAX_ENTRIES];
	struct sl_wire_header h;
	__u64 n = 0;
	unsigned i, j;

	for (i = 0; i < d->n; i++) {
		assert_int_equal(fx_open(d->msg[i], d->len[i], &h, e),
				 SL_WIRE_OK);
		for (j = 0; j < h.count; j++)
			if (!memcmp(&e[j].addr, who, sizeof(*who)))
				n += e[j].units;
	}
	return n;
}

int receive(struct fixture *f, const uint8_t *msg, size_t len,
	    __u64 t)
{
	return sl_sync_receive(f->sb, msg, len, "192.0.2.100", t);
}

/* A message made by hand, sealed by `node` for B: one entry of `units`
 * for `who` under rule `rule_name` (NULL: a heartbeat).
 */
size_t hand_message(uint8_t *buf, unsigned node, __u64 incarnation,
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
	return fx_seal(buf, &h, &e);
}

struct sl_addr sync_once(struct fixture *f, struct dgrams *d)
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
