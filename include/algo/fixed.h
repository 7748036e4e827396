/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SL_ALGO_FIXED_H
#define SL_ALGO_FIXED_H

#include "algo/common.h"

/* ---- fixed window ---- */

/* The window is a slot, so that opening a window and counting in it is
 * one atomic step. Its number, now_ms / window_ms cut to u32, is past 2^31
 * at today's clock for short windows and wraps every 2^32 windows; it is
 * read by wrapping difference, exact because a counting
 * state's window is the current one, the one before, or one ahead within
 * sl_max_ahead() (sl_client_idle; sl_fixed_charge takes an idle state's
 * slot over whatever it holds).
 */
SL_INLINE void sl_fixed_tally(struct sl_tally *t, const struct sl_client *c,
			      const struct sl_params *p, __u64 now_ms)
{
	__u64 w = now_ms / p->window_ms;
	struct sl_slot f = sl_slot_load(&c->fixed);
	__u32 ahead = f.slice - (__u32)w;

	/* a window ahead of now: the clock stepped back; keep its count */
	if (f.slice != (__u32)w &&
	    !sl_slot_ahead(f, (__u32)w, sl_max_ahead(p->window_ms)))
		return;
	t->used += f.count;
	sl_tally_expiry(t, (w + ahead + 1) * p->window_ms);
}

SL_INLINE void sl_fixed_charge(struct sl_client *c, const struct sl_params *p,
			       __u64 now_ms, __u32 units, int idle)
{
	sl_slot_add(&c->fixed, (__u32)(now_ms / p->window_ms), units,
		    idle ? 0 : sl_max_ahead(p->window_ms));
}

#ifndef __BPF__
/* The sync pieces: the window, from its start, and the one before too:
 * what it gained since the last round may still be inside the sliding
 * window (the sender sends only gains; a peer ignores what starts too
 * early).
 */
SL_INLINE void sl_fixed_pieces(const struct sl_client *c,
			       const struct sl_params *p, __u64 now_ms,
			       sl_piece_fn fn, void *ctx)
{
	__u64 w = now_ms / p->window_ms;
	__u32 back = (__u32)w - c->fixed.slice;	/* wrapping */

	if (c->fixed.count && back <= 1)
		fn(ctx, (w - back) * p->window_ms, c->fixed.count);
}
#endif

#endif /* SL_ALGO_FIXED_H */
