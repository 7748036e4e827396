/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SL_ALGO_SLIDING_COUNTER_H
#define SL_ALGO_SLIDING_COUNTER_H

#include "algo/sliding_plain.h"
#include "peer/view.h"

/* ---- sliding-counter: the last N slices in full, and the slice before
 * them weighted by the part of it still inside the window. With one slice
 * this is the common two-window counter (previous window weighted by the
 * unelapsed fraction of the current one); with 12 it is the study's
 * "oldest slice weighted" counter. Same ring of slices as sliding-plain.
 */
SL_INLINE void sl_counter_tally_slot(struct sl_tally *t,
				     const struct sl_slot *s,
				     const struct sl_params *p,
				     const struct sl_slot_walk *w)
{
	__u32 n = w->n;
	__u32 back = sl_u32_since(s->slice, (__u32)w->slice);
	__u32 ahead = sl_u32_ahead(s->slice, (__u32)w->slice);

	/* a slot ahead (the clock stepped back) counts in full, as in
	 * sl_plain_tally_slot; when a full slot starts to be weighed out
	 * goes to next_expiry, which sl_counter_finish reads
	 */
	if (back < n) {
		t->used += s->count;
		if (s->count)
			sl_tally_expiry(t, (w->slice + ahead + (n - back)) *
					   p->slice_ms);
	} else if (back == n)
		t->aux += s->count;	/* weighed in _finish */
}

/* estimate = full + oldest * (S - e) / S, e = time into the current slice.
 * floor(estimate) + 1 <= limit exactly when estimate < limit, so `used`
 * holds the floor and the common verdict stays exact for one unit. The
 * estimate only falls as time passes (slices leave it continuously):
 * next_expiry is the first ms at which it is below the limit; below it
 * already, the next ms `used` falls (a room the bounded layout takes from
 * it grows then); or the next slice, where the weights move on.
 */
SL_INLINE void sl_counter_weigh(struct sl_tally *t, const struct sl_params *p,
				__u64 now_ms, __u64 full, __u64 oldest,
				int full_ends_known)
{
	__u64 S = p->slice_ms, e = now_ms % S, start = now_ms - e;
	__u64 weighed = oldest * (S - e) / S, below, need, e_min;

	t->used = full + weighed;
	if (!full && !oldest)
		return;
	/* at the limit on the full slices alone, nothing falls before the
	 * first of them starts to be weighed out: when next_expiry holds the
	 * full slices' ends already (the node's own tally), that, which
	 * after a step back of the clock (slots ahead) is much later than
	 * the next slice, where stepping slice by slice would not reach it.
	 * `full_ends_known` is a constant at each caller: no path of its own
	 * for the verifier.
	 */
	if (full_ends_known && full >= p->limit)
		return;
	if (full >= p->limit || !oldest) {
		sl_tally_expiry(t, start + S);
		return;
	}
	below = t->used >= p->limit ? p->limit - full : weighed;
	if (!below) {
		sl_tally_expiry(t, start + S);
		return;
	}
	/* smallest e' with oldest * (S - e') < below * S */
	need = (below * S + oldest - 1) / oldest;	/* ceil */
	e_min = S + 1 > need ? S + 1 - need : 0;
	sl_tally_expiry(t, e_min > e && e_min < S ? start + e_min : start + S);
}

/* The node's own estimate; `aux` keeps the oldest slice's units, from
 * which the peers' part recovers the full slices (sl_peer_tally_counter).
 */
SL_INLINE void sl_counter_finish(struct sl_tally *t, const struct sl_params *p,
				 __u64 now_ms)
{
	sl_counter_weigh(t, p, now_ms, t->used, t->aux, 1);
}

/* sliding-counter with at most SL_PEER_SLOTS - 1 slices: the peer view
 * holds the rule's own slices (the window's and the weighted one before
 * it), so the fleet's estimate is the counter's own formula over the
 * merged slices. With more slices they do not fit; the peers' part is
 * then the sliding lower bound of sl_peer_tally.
 */
SL_INLINE int sl_peer_counter_exact(const struct sl_params *p)
{
	return p->algorithm == SL_ALGO_SLIDING_COUNTER &&
	       sl_plain_slices(p) + 1 <= SL_PEER_SLOTS;
}

/* sliding-counter: the fleet's estimate over the merged slices. The
 * estimate is linear in the slices' counts, so the fleet's is the own
 * full slices plus the peers', and the own oldest slice plus the peers',
 * weighed once: exactly the counter a single node would compute on every
 * node's slices as last merged (the floor taken once, not per part). The
 * node's own full slices come back from its finished tally: used =
 * full + floor(oldest * (S - e) / S), with `aux` the own oldest. What it
 * adds to `used` is the peers' part; the own part stays as it was.
 */
SL_INLINE __u64 sl_peer_tally_counter(struct sl_tally *t,
				      const struct sl_peer_view *v,
				      const struct sl_params *p,
				      const struct sl_sync_conf *sc,
				      __u64 now_ms)
{
	__u64 S = p->slice_ms, e = now_ms % S, full = 0, oldest = 0, own_w;
	__u32 d = now_ms / S, n = sl_plain_slices(p);
	int i;

	if (!sl_peer_layout_counts(sc) || v->slice_ms != S)
		return 0;
	for (i = 0; i < SL_PEER_SLOTS; i++) {
		const struct sl_peer_slot *s = &v->slot[i];
		__u32 back = d - s->slice;	/* wrapping: ahead is huge */

		if (back < n)
			full += s->count - s->own;
		else if (back == n)
			oldest += s->count - s->own;
	}
	if (full || oldest) {
		own_w = t->aux * (S - e) / S;
		sl_counter_weigh(t, p, now_ms, t->used - own_w + full,
				 t->aux + oldest, 0);
		t->aux += oldest;
	}
	return sl_peer_projected(t, v, sc, now_ms);
}

#ifndef __BPF__
/* The sync pieces of sliding-plain and sliding-counter: each slot, from
 * its slice start; the exact counter's weighted slice before the window
 * too.
 */
SL_INLINE void sl_plain_pieces(const struct sl_client_plain *c,
			       const struct sl_params *p, __u64 now_ms,
			       sl_piece_fn fn, void *ctx)
{
	__u32 d = now_ms / p->slice_ms, n = sl_plain_slices(p);
	int i;

	if (sl_peer_counter_exact(p))
		n++;
	for (i = 0; i < SL_MAX_PLAIN_SLICES; i++) {
		__u32 back = sl_u32_since(c->slot[i].slice, d);

		if (c->slot[i].count && back < n)
			fn(ctx, (now_ms / p->slice_ms - back) * p->slice_ms,
			   c->slot[i].count);
	}
}
#endif

#endif /* SL_ALGO_SLIDING_COUNTER_H */
