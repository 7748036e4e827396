/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SL_TYPES_SYNC_H
#define SL_TYPES_SYNC_H

#include "types/common.h"
#include "types/state.h"

/* ---- peer sync (see include/peer/view.h) ---- */

/* How a node counts a client together with its peers. */
enum sl_layout {
	SL_LAYOUT_LOCAL = 0,		/* no peers: the node's own count */
	SL_LAYOUT_DELAYED_SYNC = 1,	/* own count + peers' last synced counts */
	SL_LAYOUT_SPLIT_QUOTA = 2,	/* own count against limit / nodes */
	SL_LAYOUT_PREDICTIVE = 3,	/* delayed sync + peers' recent rate */
	SL_LAYOUT_BOUNDED = 4,		/* delayed sync + each node's share of
					 * what the fleet has left per round */
	SL_LAYOUT__COUNT,
};

/* Array sl_sync, one entry, written by the service (userspace only). */
struct sl_sync_conf {
	__u32 layout;		/* enum sl_layout */
	__u32 nodes;		/* split-quota: the limit is divided by this */
	__u32 interval_ms;	/* sync interval: how far a rate is projected */
	__u32 round;		/* bumped by the service every sync round; a
				 * client's first accept in a round sends its
				 * key to sl_changed. 0: no service reads it */
	__u32 live_nodes;	/* bounded: nodes that hear each other,
				 * this one included; 1: alone (local) */
	__u32 share_round;	/* bounded: follows `round` once the round
				 * is settled (what this node sent has
				 * reached its peers, theirs it); a
				 * client's units count as unknown to the
				 * peers since its last change */
	__u64 round_ms;		/* model/TAI ms the share round began: u64,
				 * no wrap; share_round itself wraps after
				 * 2^32 rounds (see the client header) */
};

/* Peers' counts of a client, in slices of sl_peer_slice_ms(window),
 * numbered from the TAI epoch so that every node means the same slice.
 * Ring indexed by slice % SL_PEER_SLOTS; a window spans at most
 * SL_PEER_SLOTS - 1 slices, so every slice that can count has its slot.
 */
#define SL_PEER_SLOTS		16

/* Peers' units of one slice: counted while their earliest first accept
 * is inside the window (so, like a node's own slices, never units older
 * than the window, and never early by more than the slice's spread).
 */
struct sl_peer_slot {
	/* slice and the ms stamps are cut to u32, read by wrapping
	 * difference: a slot counts only within the ring behind now's slice
	 * and while its stamp is in the window; the service deletes an
	 * entry once nothing of it counts (user/sync/engine.c), long
	 * before either number wraps (2^32 slices or ms)
	 */
	__u32 slice;		/* first_ms / sl_peer_slice_ms(window) */
	__u32 first_ms;		/* earliest first accept merged (wrapping) */
	__u32 count;		/* units merged; bounded: the own included */
	__u32 own;		/* bounded: this node's part of count, as it
				 * sent it */
	__u32 last_ms;		/* latest merge: no unit of the slot was
				 * accepted after it (wrapping) */
};

/* Hash sl_peer_view keyed by sl_client_key, written by userspace only
 * (the merge of peers' messages); the kernel adds it to the node's count.
 */
struct sl_peer_view {
	__u32 slice_ms;		/* the slice length the slots were made with:
				 * an entry made under another window (the
				 * rule changed) counts for nothing */
	__u32 round_ms;		/* predictive: when this round of merges began
				 * (model/TAI ms, wrapping); its age is taken
				 * up to one interval, and the service rewrites
				 * it every round */
	__u32 round_units;	/* predictive: peers' units merged since */
	__u32 pad;		/* the kernel never reads it; the sync engine
				 * keeps there the node id whose report made
				 * the entry (its per-peer share of the map).
				 * Still named pad: a pinned view stays the
				 * same type across an upgrade */
	struct sl_peer_slot slot[SL_PEER_SLOTS];
};

/* Sync health, array sl_sync_status with one entry: written by the running
 * service every round, read by `status` and `stats` (userspace only).
 */
#define SL_MAX_PEERS		32

struct sl_sync_peer {
	__u32 node;		/* the peer's node id; 0: free */
	__u32 view_refused;	/* entries it would have added to sl_peer_view
				 * past its share of the map */
	__u64 last_heard_ms;	/* TAI ms of its last accepted message */
	__u64 lag_ms;		/* arrival - sending time of that message */
	__u64 messages;		/* accepted */
	__u64 entries;		/* client slices merged from it */
	__u64 bytes;
	__u64 rejected;		/* replayed or duplicate messages */
	char addr[48];		/* where its last message came from */
};

struct sl_sync_status {
	__u32 node;		/* this node's id; 0: no sync configured */
	__u32 layout;		/* enum sl_layout */
	__u32 interval_ms;
	__u32 peers_configured;
	__u64 updated_ms;	/* TAI ms of the last round */
	__u64 rounds;
	__u64 sent_messages;
	__u64 sent_bytes;
	__u64 sent_entries;
	__u64 send_errors;
	__u64 collect_us;	/* the last aggregation pass, microseconds */
	__u64 collect_clients;	/* clients it walked */
	__u64 collect_changed;	/* clients it found changed */
	__u64 rejected_forged;	/* did not open with the pair's key */
	__u64 rejected_malformed;
	__u64 rejected_replayed;	/* seen sequence, or an older incarnation */
	__u64 rejected_own;	/* carrying this node's own id */
	__u64 rejected_future;	/* sent (or its sender started) more than
				 * SL_SYNC_MAX_SKEW_MS ahead */
	__u64 rejected_stale;	/* sent too long ago, or before this start */
	__u64 rejected_unknown_peer;	/* sender id not a configured peer, or
					 * no peer slot is left for it */
	__u64 rejected_wrong_address;	/* not from the peer's address */
	__u64 clamped_entries;	/* entries claiming more units than a node
				 * can accept in a round: cut to that */
	__u64 view_capped;	/* entries refused for their peer's share of
				 * sl_peer_view (per peer: view_refused) */
	__u64 unknown_rule;	/* entries for a rule this node does not have */
	__u64 view_full;	/* entries sl_peer_view had no room for */
	__u64 untracked;	/* changed clients not sent: no room to
				 * remember what was sent of them */
	__u64 backend_errors;	/* redis: failed round trips */
	__u64 backend_reconnects;
	__u64 store_transitions; /* redis: times backend_up changed from one
				 * round to the next (down, up), each logged
				 * once */
	__u32 backend_up;	/* redis: connected */
	__u32 nr_peers;		/* peer[] entries in use */
	__u32 live_nodes;	/* bounded: nodes sharing the room, this
				 * one included (sl_sync_conf.live_nodes) */
	__u32 pad;
	struct sl_sync_peer peer[SL_MAX_PEERS];
};

#endif /* SL_TYPES_SYNC_H */
