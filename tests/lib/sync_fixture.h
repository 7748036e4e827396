/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The fixture of the tests/sync/test_sync_* binaries: two private
 * model-clock instances of the real object, A (node 1) and B (node 2),
 * with the same rule file and a sync engine each; clients, packets
 * through A or B, the peer view B builds, and the datagrams A's engine
 * sends (collected, or written by hand).
 */
#ifndef SL_TEST_SYNC_FIXTURE_H
#define SL_TEST_SYNC_FIXTURE_H

#include <stddef.h>
#include <stdint.h>
#include "slicelimit.h"
#include "instance/instance.h"
#include "rules/rules.h"
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
/* nodes with a key pair: A, B, and others that write to B by hand */
#define FX_NODES	8
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

struct dgrams {
	unsigned n;
	size_t len[MAX_DGRAMS];
	uint8_t msg[MAX_DGRAMS][SL_WIRE_MAX];
};

struct fixture {
	struct sl_instance a, b;
	struct sl_rule rule_a, rule_b;	/* sync-udp on each node */
	struct sl_sync_engine *sa, *sb;	/* this test's engines */
	/* node n's key pair, [0] unused; and its keys: peers every other
	 * node, A's or B's partner first (the only copy collect keeps)
	 */
	uint8_t secret[FX_NODES + 1][SL_WIRE_KEY];
	uint8_t public[FX_NODES + 1][SL_WIRE_KEY];
	struct sl_wire_keys keys[FX_NODES + 1];
	__u64 inc_a, inc_b;		/* their incarnations */
	__u64 now;			/* this test's start, model ms */
	unsigned next_client;
	unsigned tests;
	unsigned spread;		/* CPUs packets go to in turn */
};

extern struct fixture fx;
int live_rule(struct sl_instance *in, const char *name,
	      struct sl_rule *out);
int group_setup(void **state);
int group_teardown(void **state);
struct sl_sync_engine *engine(struct sl_instance *in, enum sl_layout layout,
			      unsigned node, unsigned interval_ms,
			      unsigned nodes, __u64 incarnation);
int begin(void **state);
int end(void **state);
struct sl_addr new_client(struct fixture *f);
unsigned send_port(struct sl_instance *in, const struct sl_addr *who,
		   __u16 dport, __u64 t, unsigned n,
		   unsigned *first_reject);
unsigned send_udp(struct sl_instance *in, const struct sl_addr *who,
		  __u64 t, unsigned n, unsigned *first_reject);
struct sl_client_key key_of(const struct sl_rule *rule,
			    const struct sl_addr *who);
int view_under(struct fixture *f, const struct sl_rule *rule,
	       const struct sl_addr *who, struct sl_peer_view *v);
int view_of(struct fixture *f, const struct sl_addr *who,
	    struct sl_peer_view *v);
__u64 view_sum(const struct sl_peer_view *v);
void assert_view_unchanged(struct fixture *f, const struct sl_addr *who,
			   const struct sl_peer_view *before);
int store(void *ctx, unsigned peer, const uint8_t *msg, size_t len);
/* Open a datagram one of the fixture's nodes sealed for its partner. */
enum sl_wire_error fx_open(const uint8_t *msg, size_t len,
			   struct sl_wire_header *h, struct sl_wire_entry *e);
/* Seal a message from node h->node (FX_NODES at most) to B; from B
 * itself, with a key no node has.
 */
size_t fx_seal(uint8_t *buf, const struct sl_wire_header *h,
	       const struct sl_wire_entry *e);
void collect(struct sl_sync_engine *s, __u64 t, struct dgrams *d);
void round_settled(struct sl_sync_engine *s, __u64 t, struct dgrams *d);
__u64 units_for(const struct dgrams *d, const struct sl_addr *who);
int receive(struct fixture *f, const uint8_t *msg, size_t len,
	    __u64 t);
size_t hand_message(uint8_t *buf, unsigned node, __u64 incarnation,
		    __u64 seq, __u64 sent_ms, const char *rule_name,
		    const struct sl_addr *who, __u64 start_ms,
		    __u32 units);
/* N packets from a new client through A at now; A's first round at
 * now + 100, merged by B at now + 150. Checks that A accepted all N and
 * B's view of the client sums to N.
 */
#define N_SENT	30

struct sl_addr sync_once(struct fixture *f, struct dgrams *d);

#endif /* SL_TEST_SYNC_FIXTURE_H */
