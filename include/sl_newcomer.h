/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Probation of new keys: admission before the client tables.
 *
 * A key the client tables do not hold is not given a state at its first
 * packet. Its first accept is written into one way of a small bucket
 * (sl_newcomers), found by a keyed hash of the key; only when the key
 * comes back while that way still holds it is it promoted: it gets its
 * state, and the first accept is charged into it at its own time, so
 * promotion loses no unit and moves no time (limit 1 still rejects the
 * second packet). A spoofed random-source flood is one packet per
 * source: it only ever overwrites probation ways, never the clients the
 * tables know, and a write into a bucket costs less than an LRU insert
 * with eviction, which is what every spoofed packet paid before.
 *
 * What it does not promise: a newcomer whose way is overwritten before its
 * second packet comes back (the flood writes into its bucket about
 * SL_NEWCOMER_WAYS times first) has that packet decided as a first one
 * again: accepted if it fits an empty state. With B buckets and a flood
 * of R new sources per second, a way is overwritten after about
 * SL_NEWCOMER_WAYS * B / R seconds (the older of two ways picked at
 * random is the one replaced); a client whose packets come closer together than that is
 * promoted and limited as usual. One slower than that, during the flood,
 * is limited by the aggregate rules stacked over its prefix (a
 * `continue` rule keyed by /24, /16 or the whole port), which cap the
 * flood too. The keyed hash keeps a sender from aiming its packets at
 * one bucket (its own, to stay on probation): without the seed it
 * cannot tell which keys share a bucket.
 *
 * The ways change under the bucket's spin lock only, so two CPUs
 * meeting one newcomer see one of them write it and the other find it:
 * at most one of them promotes it.
 */
#ifndef SL_NEWCOMER_H
#define SL_NEWCOMER_H

#include "slicelimit.h"
#include "sl_algo.h"

/* murmur3's finaliser: every input bit reaches every output bit. */
SL_INLINE __u64 sl_mix64(__u64 h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/* The key's hash under the table's seed: its high half picks the
 * bucket, its low half is the tag a way holds.
 */
SL_INLINE __u64 sl_newcomer_hash(const struct sl_client_key *k, __u64 seed)
{
	__u64 lo = 0, hi = 0, h;

	__builtin_memcpy(&lo, &k->addr.byte[0], 8);
	__builtin_memcpy(&hi, &k->addr.byte[8], 8);
	h = sl_mix64(seed ^ lo);
	h = sl_mix64(h ^ hi);
	return sl_mix64(h ^ ((__u64)k->rule_id << 16 | k->dport) ^ seed);
}

/* Bucket of a hash, 0 .. buckets - 1 (a multiply, not a modulo). */
SL_INLINE __u32 sl_newcomer_index(__u64 h, __u32 buckets)
{
	return (__u32)(((h >> 32) * buckets) >> 32);
}

SL_INLINE __u32 sl_newcomer_tag(__u64 h)
{
	return (__u32)h ? (__u32)h : 1;	/* 0 marks a free way */
}

/* One pass over the ways: the way holding `tag`, or -1; and in *free the
 * first free way, or -1.
 */
SL_INLINE int sl_newcomer_find(const struct sl_newcomer_bucket *b,
			       __u32 tag, int *free)
{
	int i;

	*free = -1;
	for (i = 0; i < SL_NEWCOMER_WAYS; i++) {
		__u32 t = b->tag[i];

		if (t == tag)
			return i;
		if (!t && *free < 0)
			*free = i;
	}
	return -1;
}

/* The way a new entry takes in a full bucket: the older of two picked by
 * `r` (random). Not simply the oldest: keys that take turns in one full
 * bucket, more of them than it has ways, would each replace the next
 * one's entry before it comes back, so none would ever be found; a
 * random pick lets some survive, and their promotion frees ways.
 */
SL_INLINE int sl_newcomer_victim(const struct sl_newcomer_bucket *b, __u32 r)
{
	int x = r & (SL_NEWCOMER_WAYS - 1);
	int y = (r >> 8) & (SL_NEWCOMER_WAYS - 1);

	return b->first_ms[y] < b->first_ms[x] ? y : x;
}

#endif /* SL_NEWCOMER_H */
