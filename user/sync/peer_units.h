/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What each peer has reported of each client lately: the units its
 * entries added, per peer slice, so that the engine can cut a peer's new
 * entry to what a node can accept of the client in a period minus what
 * that peer already reported in it (engine.c, merge_entry). A cap per
 * entry alone is a cap per datagram: a holder of one node's key could
 * send as many datagrams as it likes, each carrying the cap.
 *
 * A table owned by the engine: a record whose units have all left their
 * period is free for another (peer, client). It starts small and doubles
 * when a key's probe finds no free record, up to a bound set at the
 * start (from the peer view's capacity); at the bound, the entry is
 * refused (the caller counts it), never added by growing further.
 */
#ifndef SL_PEER_UNITS_H
#define SL_PEER_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include "slicelimit.h"
#include "sync/client_hash.h"

struct peer_units_slot {
	__u64 first_ms;		/* the earliest start of its units */
	__u32 slice;		/* start_ms / the rule's peer slice */
	__u32 units;
};

struct peer_units {
	struct sl_client_key key;
	__u32 node;			/* 0: never used */
	__u64 until_ms;			/* every unit out of its period */
	struct peer_units_slot slot[SL_PEER_SLOTS];
};

struct peer_units_table {
	struct peer_units *r;		/* open addressing, power of two */
	size_t cap;
	size_t max_cap;			/* it grows no further */
	size_t used;			/* records ever written (free ones
					 * too: a probe walks past them) */
	struct sl_client_hash hash;
};

/* A table that grows to at least `clients` records. 0 or -errno. */
int peer_units_init(struct peer_units_table *t, size_t clients);
void peer_units_free(struct peer_units_table *t);

/* The record of (node, key) as of now_ms, a fresh one if it had none or
 * its units left their period; NULL when the table has no room for it
 * (at its bound, or memory refused).
 */
struct peer_units *peer_units_of(struct peer_units_table *t, __u32 node,
				 const struct sl_client_key *key,
				 __u64 now_ms);

/* The units of `r` whose earliest start lies within period_ms of now. */
__u64 peer_units_within(const struct peer_units *r, __u64 period_ms,
			__u64 now_ms);

/* Record `units` started at start_ms (peer slices of slice_ms), counted
 * for period_ms after their start.
 */
void peer_units_add(struct peer_units *r, __u64 start_ms, __u64 slice_ms,
		    __u64 period_ms, __u32 units);

#endif /* SL_PEER_UNITS_H */
