/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A cached block holds only under the block tag that computed it: 64
 * bits, the rules epoch and what of the sync conf the verdict depends on
 * (sl_block_tag), compared whole, so an apply, a layout change and a
 * share round each end every cached block, and no two tags a block can live
 * to see are equal. The tag is kept in two halves of the
 * state's header (blocked_epoch, blocked_sync) and the block's end in one
 * word with a 24-bit check of the whole tag (sl_block_word): a
 * reader that finds one writer's tag and another's end (two CPUs
 * caching the same client at once, across an apply) sees a check that
 * does not match, so it never honours an end computed under other rules
 * (but for a check collision of two such writers at the same instant).
 * An accept clears the block.
 */
#ifndef SL_BPF_BLOCK_H
#define SL_BPF_BLOCK_H

#include "clock.h"
#include "sl_algo.h"

/* The block tag a block is computed under: the rules epoch in the high
 * half; in the low half, the layout (3 bits) and what of the sync conf
 * the layout's verdict depends on: split-quota's node count; bounded's
 * share round (renewing every node's share) and live nodes. The share
 * round keeps 23 bits there: a block of a spent round ends within
 * SL_BOUNDED_STALE intervals, long before they wrap.
 */
static __always_inline __u64 sl_block_tag(__u32 epoch,
					  const struct sl_sync_conf *sc)
{
	__u32 low = 0;

	if (sc) {
		low = sc->layout << 29;
		if (sc->layout == SL_LAYOUT_SPLIT_QUOTA)
			low |= sc->nodes & 0x1fffffff;
		else if (sc->layout == SL_LAYOUT_BOUNDED)
			low |= (sc->share_round << 6 | (sc->live_nodes & 63)) &
			       0x1fffffff;
	}
	return (__u64)epoch << 32 | low;
}

/* A cached block's word: its end (bpf/clock.h) in the low
 * SL_CACHE_END_BITS, a check of its tag above them (multiplicative
 * hashing: tags that differ in any bit, in epoch or sync part,
 * differ in it but for one pair in 2^24). The multiplier is not the one
 * of the builds whose words held a 32-bit end and a 32-bit check: a word
 * one of them left in a state kept across a reload carries a check of
 * the same tag that does not match (but for one in 2^24), so its
 * end is never read as 40 bits.
 */
static __always_inline __u64 sl_block_word(__u64 tag, __u64 end)
{
	return (tag * 0xD1B54A32D192ED03ULL) >> SL_CACHE_END_BITS <<
	       SL_CACHE_END_BITS | (end & SL_CACHE_END_MASK);
}

/* Whether a block word carries the check of block tag `tag`. */
static __always_inline int sl_block_of(__u64 word, __u64 tag)
{
	return word >> SL_CACHE_END_BITS ==
	       sl_block_word(tag, 0) >> SL_CACHE_END_BITS;
}

/* The over-limit path: a block cached under this tag, still on. */
static __always_inline int sl_block_holds(const struct sl_client_hdr *own,
					  __u64 tag)
{
	__u64 word = SL_LOAD(own->blocked_until);

	return ((__u64)SL_LOAD(own->blocked_epoch) << 32 |
		SL_LOAD(own->blocked_sync)) == tag &&
	       sl_block_of(word, tag) && sl_cache_before(word);
}

#endif /* SL_BPF_BLOCK_H */
