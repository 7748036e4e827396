/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What each peer has reported of each client lately: the units its
 * entries added to the peer view, per peer slice, so that the engine can
 * cut a peer's new entry to what a node can accept of the client in a
 * period minus what the view still counts of that peer (merge.c,
 * sl_sync_merge_entry). A cap per entry alone is a cap per datagram: a holder of
 * one node's key could send as many datagrams as it likes, each carrying
 * the cap.
 *
 * A record holds no dates of its own: a peer's units of a slice count as
 * long as the view's slot of that slice counts (peer_units_counted). The
 * record is found by a keyed hash of (peer, client, slice length), not by
 * the key itself, which keeps it small enough for a fleet's worth of
 * pairs (docs/SECURITY.md gives the size and the memory at the bound).
 *
 * A table owned by the engine: a record whose newest slice has left the
 * ring is free for another pair. It starts small and grows when it is
 * half full or a key's probe finds no free record, up to a
 * bound set at the start (the configured peers times the view's
 * capacity); at the bound, the entry is refused (the caller counts it),
 * never added by growing further.
 */
#ifndef SL_SYNC_PEER_UNITS_H
#define SL_SYNC_PEER_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include "slicelimit.h"
#include "sync/client_hash.h"

struct peer_units {
	/* keyed hash of (peer node, client key, slice length); 0: never
	 * used. Two pairs with one hash share a record: each then sees the
	 * other's units as its own, a cut, never more room. The hash key is
	 * drawn per run, so a peer cannot choose pairs that collide.
	 */
	__u64 id;
	__u32 newest;			/* the newest slice recorded (wrapping) */
	__u32 free_s;			/* TAI seconds from which the newest
					 * slice is out of the ring: the
					 * record is free */
	__u32 units[SL_PEER_SLOTS];	/* slot slice % SL_PEER_SLOTS: the
					 * units of the slice in the ring
					 * ending at `newest` */
};

_Static_assert(sizeof(struct peer_units) <= 88,
	       "a record per peer and client a view holds, for a fleet");

struct peer_units_table {
	struct peer_units *r;		/* open addressing */
	size_t cap;
	size_t max_cap;			/* it grows no further */
	size_t used;			/* records ever written (free ones
					 * too: a probe walks past them) */
	struct sl_client_hash hash;
};

/* A table that grows to hold at least `records` pairs. 0 or -errno. */
int peer_units_init(struct peer_units_table *t, size_t records);
void peer_units_free(struct peer_units_table *t);

/* The most records a table for `records` pairs grows to: room for them
 * with the table at most half full.
 */
size_t peer_units_max_cap(size_t records);

/* The record of (node, key) under peer slices of ps ms, as of now_ms: a
 * fresh one if it had none or it is free; NULL when the table has no
 * room for it (at its bound, or memory refused).
 */
struct peer_units *peer_units_of(struct peer_units_table *t, __u32 node,
				 const struct sl_client_key *key, __u64 ps,
				 __u64 now_ms);

/* What the view `v` still counts of the peer whose record is `r`, its
 * slots counted while their earliest start lies within period_ms of now.
 */
__u64 peer_units_counted(const struct peer_units *r,
			 const struct sl_peer_view *v, __u64 ps,
			 __u64 period_ms, __u64 now_ms);

/* What of `cap` the peer whose record is `r` may still add to the view
 * `v` in an entry dated start_ms: all of it when those units would not
 * count (their slot dated out of the period once merged, or holding a
 * newer slice), else the cap less what the view still counts of the
 * peer; 0 when the record could not hold the slice without losing units
 * the view still counts (a slice dated a ring ahead of another). With
 * token_ns (a bucket's refill, ns per unit), the cap grows by the refill
 * since each counted slice began, as the kernel drains them.
 */
__u64 peer_units_room(const struct peer_units *r,
		      const struct sl_peer_view *v, __u64 ps, __u64 period_ms,
		      __u64 start_ms, __u64 cap, __u64 token_ns,
		      __u64 now_ms);

/* Record `units` the peer added to the view at slice start_ms / ps. A
 * slice a ring or more behind the newest is not recorded:
 * peer_units_room let it through only when it does not count.
 */
void peer_units_add(struct peer_units *r, __u64 start_ms, __u64 ps,
		    __u32 units);

#endif /* SL_SYNC_PEER_UNITS_H */
