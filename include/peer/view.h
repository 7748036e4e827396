/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Counting a client across nodes, written once for the kernel (which adds
 * the peer view to the node's own count) and userspace (which fills the
 * peer view from peers' messages, and replays several nodes): the peer
 * view's tally per algorithm, the layouts' peer verdicts (delayed-sync,
 * split-quota, predictive, bounded) and bounded's room and shares.
 *
 * A peer slice counts while its earliest first accept is inside the
 * window, so the peers' part is a lower bound of the fleet's accepts
 * (NFR-2); under bounded a node accepts between two rounds at most its
 * share of the room the fleet had left. Why that holds the fleet within
 * the limit, and what each assumption costs: see docs/ACCURACY.md,
 * "Bounded: why the fleet stays within the limit".
 */
#ifndef SL_PEER_VIEW_H
#define SL_PEER_VIEW_H

#include "algo/common.h"

/* A projected count may exceed the limit by limit / SL_PREDICT_MARGIN
 * before the projection alone rejects: the projection is an estimate, and
 * a client whose rate holds must not be rejected for it (how the margin
 * was chosen: docs/ACCURACY.md, "The layouts").
 */
#define SL_PREDICT_MARGIN	50

/* How far ahead of the receiver's clock a peer's slice may start: TAI
 * from NTP or PTP agrees to milliseconds; anything further ahead is a
 * clock gone wrong or a forgery, and would be counted as "now" for a
 * whole window.
 */
#define SL_PEER_MAX_AHEAD_MS	5000

/* Slice length of the peer view: SL_PEER_SLOTS - 1 slices cover a window. */
SL_INLINE __u64 sl_peer_slice_ms(__u32 window_ms)
{
	__u64 n = SL_PEER_SLOTS - 1;

	return window_ms ? (window_ms + n - 1) / n : 1;
}

_Static_assert(SL_BUCKET_SLOTS == SL_PEER_SLOTS,
	       "a bucket's own slots and its peer view share one ring");

/* The limit a node enforces on its own under the layout. */
SL_INLINE __u64 sl_layout_limit(__u64 limit, const struct sl_sync_conf *sc)
{
	__u64 share;

	if (!sc || sc->layout != SL_LAYOUT_SPLIT_QUOTA || sc->nodes <= 1)
		return limit;
	share = limit / sc->nodes;
	return share ? share : 1;
}

/* The rule as the node enforces it under the layout: split-quota divides
 * the limit, and a bucket's refill too (its capacity is the limit). A
 * bucket's idle time is how long it takes to refill, so it grows with
 * the slower refill: kept at the whole rule's, a node's bucket would be
 * taken for full (its state reset) long before it is.
 */
SL_INLINE void sl_layout_params(struct sl_params *p,
				const struct sl_sync_conf *sc)
{
	p->limit = sl_layout_limit(p->limit, sc);
	if (p->algorithm == SL_ALGO_TOKEN_BUCKET && sc &&
	    sc->layout == SL_LAYOUT_SPLIT_QUOTA && sc->nodes > 1) {
		p->token_ns *= sc->nodes;
		p->idle_ms = (p->limit * p->token_ns + 999999) / 1000000;
	}
}

/* Layouts that add a peer view to the node's count. */
SL_INLINE int sl_peer_layout_counts(const struct sl_sync_conf *sc)
{
	return sc && (sc->layout == SL_LAYOUT_DELAYED_SYNC ||
		      sc->layout == SL_LAYOUT_PREDICTIVE ||
		      sc->layout == SL_LAYOUT_BOUNDED);
}

/* The predictive layout's projection of the peers' last round (0 in the
 * others), and when it changes.
 */
SL_INLINE __u64 sl_peer_projected(struct sl_tally *t,
				  const struct sl_peer_view *v,
				  const struct sl_sync_conf *sc, __u64 now_ms)
{
	__u64 interval = sc->interval_ms;
	__u32 since;

	if (sc->layout != SL_LAYOUT_PREDICTIVE || !interval || !v->round_units)
		return 0;
	since = sl_u32_since(v->round_ms, (__u32)now_ms);
	if (since >= 2 * interval)
		return 0;
	/* the projection ends two intervals after the round began */
	sl_tally_expiry(t, now_ms + (2 * interval - since));
	return (__u64)v->round_units * (since < interval ? since : interval) /
	       interval;
}

/* Add the peers' counted units to a node's (finished) tally. Returns the
 * projected units of the predictive layout, to be checked against the
 * limit with its margin (sl_peer_allows); 0 in the other layouts.
 */
SL_INLINE __u64 sl_peer_tally(struct sl_tally *t, const struct sl_peer_view *v,
			      const struct sl_params *p,
			      const struct sl_sync_conf *sc, __u64 now_ms)
{
	__u64 ps = sl_peer_slice_ms(p->window_ms);
	__u32 now_slice = now_ms / ps;
	int i;

	if (!sl_peer_layout_counts(sc) || v->slice_ms != ps)
		return 0;
	for (i = 0; i < SL_PEER_SLOTS; i++) {
		const struct sl_peer_slot *s = &v->slot[i];
		__u32 back = now_slice - s->slice, age;	/* wrapping */

		/* a slice ahead of now (a clock stepped back) or a ring's
		 * length behind: nothing of it is known to be in the window
		 */
		if (!s->count || back >= SL_PEER_SLOTS)
			continue;
		age = sl_u32_since(s->first_ms, (__u32)now_ms);
		if (age >= p->window_ms || s->count <= s->own)
			continue;
		t->used += s->count - s->own;
		sl_tally_expiry(t, now_ms + (p->window_ms - age));
	}
	return sl_peer_projected(t, v, sc, now_ms);
}

#endif /* SL_PEER_VIEW_H */
