/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A client's key and its state in each algorithm's table, and the
 * newcomers' buckets a key waits in before it has a state.
 */
#ifndef SL_TYPES_STATE_H
#define SL_TYPES_STATE_H

#include "types/common.h"
#include "types/rules.h"

/* Client key of sl_clients. */
struct sl_client_key {
	struct sl_addr addr;	/* source masked to the rule's prefix */
	__u16 rule_id;		/* host byte order */
	__u16 dport;		/* network byte order; 0 unless key_by_port */
};

/* One slice of the sliding algorithm: 8 bytes, two in a word. What
 * only the open record needs (the accept sequence it opened at) is kept
 * once, in the state (struct sl_client, open_seq).
 */
struct sl_record {
	__u32 first_ms;		/* model/TAI ms of the slice's first accept,
				 * cut to u32 (wraps every 49.7 days): read by
				 * wrapping difference, within two windows
				 * behind and SL_MAX_STEP_MS ahead of now in a
				 * counting state (include/algo/common.h) */
	__u32 count;		/* units accepted into this slice */
};

/* sliding-plain and sliding-counter: one counter per slice, ring indexed
 * by slice number (token-bucket: per peer slice, see sl_bucket; fixed: the
 * window last counted in). Slice and count are one aligned 64-bit word, so
 * that a CPU takes a slot over for a new slice with one compare-and-swap
 * of both (sl_slot_add in include/algo/common.h) and no other CPU's add is
 * lost to it.
 */
struct sl_slot {
	__u32 slice;		/* now_ms / slice_ms (fixed: / window_ms) cut
				 * to u32: past 2^31 at today's clock for
				 * short slices, wraps every 2^32 slices;
				 * read by wrapping difference, a slot ahead
				 * believed only with a count and within
				 * sl_max_ahead (include/algo/common.h) */
	__u32 count;
} __attribute__((aligned(8)));

/* token-bucket as GCRA: the theoretical arrival time; and the node's own
 * accepts per peer slice (sl_bucket_slice_ms), ring indexed by slice
 * number, which the fleet's level is taken over together with the peers'
 * (include/algo/token_bucket.h, sl_peer_tally_bucket). Fits the union beside the
 * sliding records: the state does not grow.
 */
#define SL_BUCKET_SLOTS		16

struct sl_bucket {
	__u64 tat_ns;		/* ns on the model/TAI clock: no wrap (2^64 ns
				 * is 584 years); a step back leaves it ahead:
				 * held the refill time plus the step */
	struct sl_slot slot[SL_BUCKET_SLOTS];	/* peer slices, read only by
				 * the sender within the ring behind now's
				 * slice: one ahead (a step back) is not sent,
				 * one exactly 2^32 slices old is sent again */
};

/* The header every client state starts with (all three maps). What the
 * over-limit check reads (blocked_*) and what an accept of a host without
 * peers reads and writes (last_ms, accepted, current) come first, in the
 * value's first 32 bytes; event_ms is read once per block; the sync and
 * share-round words are read only by a host that syncs (bpf/peer_verdict.h,
 * sl_note_round), and sit behind.
 */
#define SL_CLIENT_HEADER						\
	__u64 last_ms;		/* last accept, model/TAI ms: no wrap; what	\
				 * tells a counting state (sl_client_idle) */	\
	__u64 blocked_until;	/* cache: over the limit until the low 40	\
				 * bits, on bpf/clock.h's cache clock (exact	\
				 * within 2^39 units of now, about 17 years);	\
				 * the high 24 check the block tag's halves	\
				 * below (bpf/block.h) */			\
	__u32 accepted;		/* units accepted, wrapping */			\
	__u32 blocked_epoch;	/* the block's tag: rules epoch */		\
	__u32 blocked_sync;	/* ... and sync conf (sl_block_tag) */		\
	__u32 current;		/* sliding: open record; log: first valid */	\
	__u32 event_ms;		/* last drop event sent for this client, u32	\
				 * ms: wraps every 49.7 days; an event 2^32 ms	\
				 * old reads as new and holds the next one	\
				 * back for a window (events only) */		\
	__u32 sync_round;	/* sync round of the last accept: its key	\
				 * went to sl_changed (see sl_sync_conf);	\
				 * compared for equality: a state untouched	\
				 * for exactly 2^32 rounds (over a year at	\
				 * the shortest interval) misses one send */	\
	__u32 share_round;	/* bounded: share round of the last accept,	\
				 * compared for equality with sl_sync_conf's:	\
				 * at 2^32 rounds on, the old round_units	\
				 * count for one round, holding back, never	\
				 * letting more through */			\
	__u32 round_units;	/* units accepted in that share round: what	\
				 * peers do not know of yet */

struct sl_client_hdr {
	SL_CLIENT_HEADER
};

/* Client state, one per client shared by every CPU (sl_clients is an LRU
 * hash; see include/algo/common.h for why not per CPU, and
 * include/algo/sliding.h for the sliding part's running total).
 */
struct sl_client {
	SL_CLIENT_HEADER
	union {
		struct {			/* sliding */
			__u32 total;	/* the records' counts summed: what
					 * the window holds while no record
					 * has left it (sl_sliding_tally) */
			__u32 oldest_ms; /* first_ms of the earliest record
					 * with a count (u32, wrapping); the
					 * first to leave the window */
			__u32 live;	/* records with a count */
			__u32 open_seq;	/* `accepted` when the open record
					 * (`current`) opened */
			struct sl_record rec[SL_RECORDS];
		};
		struct sl_slot fixed;	/* slice: now_ms / window_ms */
		struct sl_bucket bucket;
	};
};

struct sl_client_plain {
	SL_CLIENT_HEADER
	struct sl_slot slot[SL_MAX_PLAIN_SLICES];
};

/* sliding-log: ring of accept times; `accepted` is the write position. */
struct sl_client_log {
	SL_CLIENT_HEADER
	__u32 stamp_ms[SL_MAX_LOG];	/* model/TAI ms cut to u32: the valid
					 * ones (current ..) are within two
					 * windows behind, SL_MAX_STEP_MS
					 * ahead (sl_client_log_charge) */
};

/* Probation of the keys the client tables do not hold (include/
 * sl_newcomer.h): array sl_newcomers of buckets, each a few ways of one
 * newcomer's first accept, found by a keyed hash of the client key.
 * Way i is tag[i], units[i] and first_ms[i]: the tags side by side, so
 * that the pass over them every new key makes reads one cache line
 * with the lock, however many ways.
 */
#define SL_NEWCOMER_WAYS	16	/* a power of two */

struct sl_newcomer_bucket {
	struct bpf_spin_lock lock;	/* the ways change under it only */
	__u32 pad;
	__u32 tag[SL_NEWCOMER_WAYS];	/* the key's hash (never 0); 0: free */
	__u32 units[SL_NEWCOMER_WAYS];	/* what its first packet was charged */
	__u64 first_ms[SL_NEWCOMER_WAYS]; /* model/TAI ms of that packet: u64,
					   * no wrap; charged at this time on
					   * promotion, so an old one finds
					   * the state idle */
};

/* Array sl_newcomer_conf, one entry, written by userspace once, when the
 * tables are created: the hash key and the number of buckets. 0 buckets:
 * no probation, every new key gets a state at once.
 */
struct sl_newcomer_conf {
	__u64 seed;		/* random; keys the bucket hash */
	__u32 buckets;		/* sl_newcomers' max_entries */
	__u32 pad;
};

#endif /* SL_TYPES_STATE_H */
