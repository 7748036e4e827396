/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SL_ALGO_SLIDING_LOG_H
#define SL_ALGO_SLIDING_LOG_H

#include "algo/common.h"

/* ---- sliding-log: every accept time, exact ---- */

/* All ones if a < b, else 0; branch-free (BPF has no conditional move,
 * and a branch per step of a search multiplies the verifier's paths).
 */
SL_INLINE __u32 sl_mask_lt(__u32 a, __u32 b)
{
	__u64 d = (__u64)a - b;

	/* hide that the sign of d is a < b, or the compiler turns the mask
	 * back into a branch
	 */
	__asm__ volatile("" : "+r"(d));
	return -(__u32)(d >> 63);
}

/* Index (in accept order) of the oldest accept still in the window. Times
 * only grow along the ring, so a binary search over the valid entries finds
 * it, in a fixed 13 branch-free steps (2^13 > SL_MAX_LOG).
 */
SL_INLINE __u32 sl_log_first_live(const struct sl_client_log *c,
				  const struct sl_params *p, __u64 now_ms)
{
	__u32 valid = c->accepted - c->current;
	__u32 count = valid < SL_MAX_LOG ? valid : SL_MAX_LOG;
	__u32 base = c->accepted - count, lo = 0, hi = count;
	int i;

	SL_UNROLL
	for (i = 0; i < 13; i++) {
		__u32 mid = lo + (hi - lo) / 2;
		__u32 age = sl_u32_since(c->stamp_ms[(base + mid) &
						     (SL_MAX_LOG - 1)],
					 (__u32)now_ms);
		__u32 active = sl_mask_lt(lo, hi);
		__u32 live = sl_mask_lt(age, p->window_ms);

		hi = (hi & ~(active & live)) | (mid & active & live);
		lo = (lo & ~(active & ~live)) | ((mid + 1) & active & ~live);
	}
	return base + lo;
}

SL_INLINE void sl_log_tally(struct sl_tally *t, const struct sl_client_log *c,
			    const struct sl_params *p, __u64 now_ms)
{
	__u32 first = sl_log_first_live(c, p, now_ms);
	__u32 oldest;

	if (first == c->accepted)
		return;
	t->used += c->accepted - first;
	oldest = c->stamp_ms[first & (SL_MAX_LOG - 1)];
	sl_tally_expiry(t, now_ms + sl_u32_ahead(oldest, (__u32)now_ms) +
			   (p->window_ms - sl_u32_since(oldest, (__u32)now_ms)));
}

SL_INLINE void sl_log_charge(struct sl_client_log *c, __u64 now_ms)
{
	/* one entry per accept (the log counts requests, units of 1),
	 * claimed and counted in one step: CPUs accepting at once get
	 * entries of their own
	 */
	__u32 at = sl_fetch_add_u32(&c->accepted, 1);

	c->stamp_ms[at & (SL_MAX_LOG - 1)] = (__u32)now_ms;
}

SL_INLINE void sl_client_log_tally(struct sl_tally *t,
				   const struct sl_client_log *c,
				   const struct sl_params *p, __u64 now_ms)
{
	if (sl_hdr_tally(t, (const struct sl_client_hdr *)c, p, now_ms))
		sl_log_tally(t, c, p, now_ms);
}

/* The log counts requests: one entry, one unit, whatever `units` says.
 * The restart after an idle window moves `current` only from the value
 * this CPU found, and to `accepted` as read before idleness was seen:
 * other CPUs that accept while this one stalls between the two keep
 * their entries; a CPU restarting it at the same instant as another
 * accepts keeps that accept's entry unless it read `accepted` after it,
 * at most one entry per CPU once per idle period.
 */
SL_INLINE int sl_client_log_charge(struct sl_client_log *c,
				   const struct sl_params *p, __u64 now_ms)
{
	__u32 cur = SL_LOAD(c->current);
	__u32 before = SL_LOAD(c->accepted);

	__asm__ volatile("" ::: "memory");
	/* the valid entries start at the first still in the window (none
	 * if idle): a client that never idles keeps no stamp older than
	 * two windows, whose u32 age could wrap and look young to the
	 * search of sl_log_first_live
	 */
	if (sl_client_idle((struct sl_client_hdr *)c, p, now_ms))
		SL_CAS(&c->current, cur, before);
	else
		SL_CAS(&c->current, cur, sl_log_first_live(c, p, now_ms));
	sl_log_charge(c, now_ms);	/* counts the accept itself */
	sl_hdr_touch((struct sl_client_hdr *)c, now_ms);
	return 1;
}

#ifndef __BPF__
/* The sync pieces: each accept in the window, at its time. */
SL_INLINE void sl_log_pieces(const struct sl_client_log *c,
			     const struct sl_params *p, __u64 now_ms,
			     sl_piece_fn fn, void *ctx)
{
	__u32 at;

	for (at = sl_log_first_live(c, p, now_ms); at != c->accepted; at++)
		fn(ctx, now_ms - sl_u32_since(c->stamp_ms[at &
						(SL_MAX_LOG - 1)],
					      (__u32)now_ms), 1);
}
#endif

#endif /* SL_ALGO_SLIDING_LOG_H */
