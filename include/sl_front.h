/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The front cache of blocked flows (bpf/front.h): per CPU, direct-mapped
 * by what classification and the client key read of a packet. Shared so
 * that a test can pick packets that meet in one slot, and read and clear
 * the entries the program wrote.
 */
#ifndef SL_FRONT_H
#define SL_FRONT_H

#include <linux/types.h>
#include "slicelimit.h"
#include "sl_algo.h"

/* Entries per CPU: a power of two; 64 bytes each. */
#define SL_FRONT_SLOTS	256

/* The front cache goes quiet (bpf/front.h) when its score, +1 for each
 * packet it missed and the exact path then dropped, less
 * SL_FRONT_HIT_CREDIT for each hit, reaches SL_FRONT_QUIET; while quiet,
 * one packet in SL_FRONT_PROBE (a power of two) still looks.
 */
#define SL_FRONT_QUIET		256
#define SL_FRONT_PROBE		32
#define SL_FRONT_HIT_CREDIT	4

/* A flow the exact path dropped under a cached block: what it matched
 * on, the rule that dropped it, and what the block holds under.
 */
struct sl_front_entry {
	struct sl_addr src;	/* network byte order, IPv4-mapped for v4 */
	struct sl_addr dst;
	__u32 slot;		/* the packet's port slot (SL_SLOT_* + port) */
	__u16 dport;		/* network byte order */
	__u8 syn;		/* TCP SYN without ACK */
	__u8 set;		/* written by a drop; 0: empty */
	__u16 rule_id;		/* the dropping rule's counters */
	__u16 pad;
	__u32 forgotten;	/* sl_forgotten when written */
	__u64 tag;		/* the block's tag (bpf/block.h) */
	__u64 end;		/* the block's end on the cache's clock, its low
				 * SL_CACHE_END_BITS (bpf/clock.h) */
};

/* One CPU's front cache: the score that says whether it is quiet, and
 * its slots. The score is the cache's own state, not a counter: it lives
 * here, beside the slots it rates, so that `stats --reset` (which zeroes
 * the counters) leaves it alone, and one lookup gives both.
 */
struct sl_front_cache {
	__u64 score;		/* the misses it could have held less its hits,
				 * 0..SL_FRONT_QUIET (bpf/front.h) */
	__u64 pad[7];		/* the slots start on a line of their own */
	struct sl_front_entry slot[SL_FRONT_SLOTS];
};

/* The slot of a packet's flow: the words of its addresses, port slot and
 * port folded, then Fibonacci hashing for the top bits.
 */
SL_INLINE __u32 sl_front_slot(const struct sl_addr *src,
			      const struct sl_addr *dst, __u32 slot,
			      __u16 dport)
{
	__u32 s[4], d[4], h;

	__builtin_memcpy(s, src->byte, sizeof(s));
	__builtin_memcpy(d, dst->byte, sizeof(d));
	h = s[0] ^ s[1] ^ s[2] ^ s[3];
	h = h * 0x9E3779B1u ^ d[0] ^ d[1] ^ d[2] ^ d[3];
	h = h * 0x9E3779B1u ^ slot ^ (__u32)dport << 16;
	return (h * 0x9E3779B1u) >> 24 & (SL_FRONT_SLOTS - 1);
}

#endif /* SL_FRONT_H */
