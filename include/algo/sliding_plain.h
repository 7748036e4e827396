/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SL_ALGO_SLIDING_PLAIN_H
#define SL_ALGO_SLIDING_PLAIN_H

#include "algo/common.h"

/* ---- sliding-plain: the study's sum of the last N slices ---- */

/* Slices that cover the window: the rule's slice length is rounded up
 * (see check_algorithm()), so there are never more than the rule asked
 * for and the ring holds them all; the cap only guards bad input.
 */
SL_INLINE __u32 sl_plain_slices(const struct sl_params *p)
{
	__u32 n = (p->window_ms + p->slice_ms - 1) / p->slice_ms;

	return n < 1 ? 1 : n > SL_MAX_PLAIN_SLICES ? SL_MAX_PLAIN_SLICES : n;
}

/* What every slot of one walk of the ring shares, worked out once before
 * it: the walk visits every slot, and two divisions per slot would cost
 * more than the rest of the walk.
 */
struct sl_slot_walk {
	__u64 slice;		/* now_ms / slice_ms: the current slice */
	__u32 n;		/* sl_plain_slices() */
	__u32 pad;
};

SL_INLINE void sl_slot_walk_init(struct sl_slot_walk *w,
				 const struct sl_params *p, __u64 now_ms)
{
	w->slice = now_ms / p->slice_ms;
	w->n = sl_plain_slices(p);
	w->pad = 0;
}

/* One slot of the ring; the kernel walks the ring with bpf_loop (one body
 * to verify: 6.1's verifier gives up on 64 unrolled-by-exploration steps).
 */
SL_INLINE void sl_plain_tally_slot(struct sl_tally *t, const struct sl_slot *s,
				   const struct sl_params *p,
				   const struct sl_slot_walk *w)
{
	__u32 n = w->n;
	__u32 back = sl_u32_since(s->slice, (__u32)w->slice);	/* slices ago */
	__u32 ahead = sl_u32_ahead(s->slice, (__u32)w->slice);

	if (!s->count || back >= n)
		return;
	t->used += s->count;
	/* counted until slice s->slice + n begins */
	sl_tally_expiry(t, (w->slice + ahead + (n - back)) * p->slice_ms);
}

/* Slice numbers are now_ms / slice_ms cut to u32: they wrap every 2^32
 * slices (49.7 days of 1 ms slices), and as 2^32 is a multiple of the
 * ring's size the slot of a slice does not move at the wrap. A counting
 * state's slots are within 2^31 slices of now's (sl_client_idle, and
 * sl_plain_charge clearing the ring of an idle state), so the wrapping
 * difference of sl_plain_tally_slot is exact.
 */
SL_INLINE void sl_plain_charge(struct sl_client_plain *c,
			       const struct sl_params *p, __u64 now_ms,
			       __u32 units, int idle, int restart,
			       __u32 last_slice)
{
	__u32 d = now_ms / p->slice_ms;
	int i;

	/* an idle state's slots are of any age, and one 2^32 slices old
	 * would count as new: they go. Only the CPU that restarts the
	 * state (sl_client_plain_charge) zeroes them, and only slots of
	 * its last period (at or before the slice of its last accept),
	 * each by a swap of the slot it found: what other CPUs count while
	 * this one stalls here is in slices after that, or in a slot
	 * whose word changed, and stays.
	 */
	if (restart)
		for (i = 0; i < SL_MAX_PLAIN_SLICES; i++) {
			struct sl_slot s = sl_slot_load(&c->slot[i]);

			if (s.count && (__s32)(last_slice - s.slice) >= 0)
				SL_CAS((sl_slot_word *)&c->slot[i],
				       sl_slot_pack(s), 0);
		}
	/* the ring holds SL_MAX_PLAIN_SLICES >= n slices: what this slot
	 * held, if another slice, is out of the window, unless it is ahead
	 * (the clock stepped back)
	 */
	sl_slot_add(&c->slot[d % SL_MAX_PLAIN_SLICES], d, units,
		    idle ? 0 : sl_max_ahead(p->slice_ms));
}

SL_INLINE int sl_client_plain_charge(struct sl_client_plain *c,
				     const struct sl_params *p,
				     __u64 now_ms, __u32 units)
{
	__u64 last = SL_LOAD(c->last_ms);
	int idle = sl_idle_since(last, p, now_ms);

	/* one CPU restarts an idle ring: the one whose swap moves its last
	 * accept from the idle value it read to now (as sl_client_charge)
	 */
	sl_plain_charge(c, p, now_ms, units, idle,
			idle && SL_CAS(&c->last_ms, last, now_ms) == last,
			last / p->slice_ms);
	sl_hdr_charge((struct sl_client_hdr *)c, p, now_ms, units);
	return 1;
}

#endif /* SL_ALGO_SLIDING_PLAIN_H */
