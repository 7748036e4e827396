/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Counting a client across nodes, written once for the kernel (which adds
 * the peer view to the node's own count) and userspace (which fills the
 * peer view from peers' messages, and replays several nodes).
 *
 * What peers exchange: accepted units per client, grouped in slices of
 * sl_peer_slice_ms(window) by the TAI time of their record's first accept,
 * each group with the earliest such time. A group is counted while that
 * time lies inside the window, (now - W, now]. Every unit in it was
 * accepted at or after it, so the peers' part of the count is a lower
 * bound, like the node's own (NFR-2): a client within the limit is never
 * rejected because of its peers. What the bound hides is, in the group
 * that straddles now - W, the units accepted after its earliest first
 * accept: none when a burst opened it (a flood's accepts come in bursts
 * where the window frees up), at most one slice's worth otherwise.
 * Counting from the slice's start instead would hide a whole burst up to
 * a slice early (measured: 1.34 x through 4 nodes under a 9 x flood).
 *
 * Layouts (the design study's Model B, plus one of ours):
 *  - delayed-sync: own count + the peers' counts as last merged. Between
 *    syncs every node can accept the headroom it last saw, which is the
 *    study's overshoot (1.5 x at 5 s intervals).
 *  - split-quota: own count against limit / nodes; no peer view.
 *  - predictive: delayed sync, and the peers' units merged in the last
 *    round are projected forward at the same rate until the next round
 *    (for at most one interval; none after two silent intervals, so a
 *    silent peer's projection does not outlive it). The projection is only
 *    an estimate, so it may go past the limit by SL_PREDICT_MARGIN of it.
 *    A client whose rate holds between rounds is never rejected (the
 *    study's 10/s client, at every interval); one that stops right after a
 *    burst can be, until the next round shows the stop: the layout trades
 *    that for 1.02 x where delayed sync gives 1.5 x. The kernel caches
 *    only blocks of the counted part, so a projection's block lifts at
 *    the next merge.
 */
#ifndef SL_PEER_H
#define SL_PEER_H

#include "sl_algo.h"

/* A projected count may exceed the limit by limit / SL_PREDICT_MARGIN
 * before the projection alone rejects (replay: 0 rejects of the 10/s
 * client over 300 node assignments at 0.2..5 s, over 1.03 x at most).
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

/* Algorithms whose count is a sum of units that peers can add to. The
 * token bucket and the weighted counter are not sums; they stay per node.
 */
SL_INLINE int sl_algo_syncs(__u32 algorithm)
{
	return algorithm == SL_ALGO_SLIDING ||
	       algorithm == SL_ALGO_SLIDING_PLAIN ||
	       algorithm == SL_ALGO_FIXED;
}

/* The limit a node enforces on its own under the layout. */
SL_INLINE __u64 sl_layout_limit(__u64 limit, const struct sl_sync_conf *sc)
{
	__u64 share;

	if (!sc || sc->layout != SL_LAYOUT_SPLIT_QUOTA || sc->nodes <= 1)
		return limit;
	share = limit / sc->nodes;
	return share ? share : 1;
}

/* Add the peers' counted units to a node's (finished) tally. Returns the
 * projected units of the predictive layout, to be checked against the
 * limit with its margin (sl_peer_allows); 0 in the other layouts.
 */
SL_INLINE __u64 sl_peer_tally(struct sl_tally *t, const struct sl_peer_view *v,
			      const struct sl_params *p,
			      const struct sl_sync_conf *sc, __u64 now_ms)
{
	__u64 ps = sl_peer_slice_ms(p->window_ms), interval;
	__u32 now_slice = now_ms / ps, since;
	int i;

	if (!sc || (sc->layout != SL_LAYOUT_DELAYED_SYNC &&
		    sc->layout != SL_LAYOUT_PREDICTIVE) || v->slice_ms != ps)
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
		if (age >= p->window_ms)
			continue;
		t->used += s->count;
		sl_tally_expiry(t, now_ms + (p->window_ms - age));
	}
	interval = sc->interval_ms;
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

/* The verdict with peers: the lower bound against the limit, and in the
 * predictive layout the projected count against the limit plus margin.
 */
SL_INLINE int sl_peer_allows(const struct sl_tally *t,
			     const struct sl_params *p, __u64 projected,
			     __u32 units)
{
	return sl_tally_allows(t, p, units) &&
	       t->used + projected + units <=
	       p->limit + p->limit / SL_PREDICT_MARGIN;
}

/* Add units whose earliest first accept was at `start_ms` (TAI) to a peer
 * view. Units too old to count any more are ignored; the slot of an older
 * slice is taken over. Returns the units added.
 */
SL_INLINE __u32 sl_peer_merge(struct sl_peer_view *v, __u32 window_ms,
			      __u64 start_ms, __u32 units, __u64 now_ms)
{
	__u64 ps = sl_peer_slice_ms(window_ms);
	__u32 slice = start_ms / ps, room;
	struct sl_peer_slot *s = &v->slot[slice % SL_PEER_SLOTS];
	int i;

	if (start_ms + window_ms <= now_ms)
		return 0;	/* already out of the window */
	if (start_ms > now_ms + SL_PEER_MAX_AHEAD_MS)
		return 0;	/* a clock gone wrong, or a forgery */
	if (v->slice_ms != ps) {
		/* made under another window: start over */
		for (i = 0; i < SL_PEER_SLOTS; i++)
			v->slot[i].count = 0;
		v->slice_ms = ps;
		v->round_units = 0;
	}
	if (s->slice != slice || !s->count) {
		/* the slot's slice is older: it left the window, since a
		 * window spans fewer slices than the ring holds
		 */
		if (s->count && (__s32)(slice - s->slice) < 0)
			return 0;
		s->slice = slice;
		s->first_ms = (__u32)start_ms;
		s->count = 0;
	} else if ((__s32)((__u32)start_ms - s->first_ms) < 0) {
		s->first_ms = (__u32)start_ms;	/* the earliest counts */
	}
	room = ~(__u32)0 - s->count;	/* saturate: never wrap to a small count */
	if (units > room)
		units = room;
	s->count += units;
	return units;
}

#ifndef __BPF__
/* What the kernel decides on, for userspace (query, Retry-After, top): the
 * node's tally of the client's state, plus the peers' part when `v` and `sc` are
 * given. `p` already carries the layout's limit (sl_layout_limit). Returns
 * the projected units (see sl_peer_allows).
 */
SL_INLINE __u64 sl_tally_node_peers(struct sl_tally *t, const void *state,
				    const struct sl_peer_view *v,
				    const struct sl_params *p,
				    const struct sl_sync_conf *sc,
				    __u64 now_ms)
{
	sl_tally_state(t, state, p, now_ms);
	if (!v || !sc || !sl_algo_syncs(p->algorithm))
		return 0;
	return sl_peer_tally(t, v, p, sc, now_ms);
}

/* Earliest time >= now at which a request of `units` may be accepted. The
 * verdict can only change at the tally's next_expiry_ms, so walk those.
 * The kernel caches the first step.
 */
SL_INLINE __u64 sl_accept_at_peers(const void *state,
				   const struct sl_peer_view *v,
				   const struct sl_params *p,
				   const struct sl_sync_conf *sc,
				   __u64 now_ms, __u32 units)
{
	__u64 at = now_ms, projected;
	struct sl_tally t;
	int step;

	for (step = 0; step < SL_MAX_LOG * 2 + 64; step++) {
		projected = sl_tally_node_peers(&t, state, v, p, sc, at);
		if (sl_peer_allows(&t, p, projected, units))
			return at;
		if (t.next_expiry_ms == SL_NEVER)
			return SL_NEVER;
		at = t.next_expiry_ms > at ? t.next_expiry_ms : at + 1;
	}
	return SL_NEVER;
}

/* The same on the node's own count alone. */
SL_INLINE __u64 sl_accept_at_ms(const void *state,
				const struct sl_params *p, __u64 now_ms,
				__u32 units)
{
	return sl_accept_at_peers(state, NULL, p, NULL, now_ms, units);
}

/* The slices of a client's state: (start_ms, units) of what
 * still counts at now_ms, for the sender. sliding: each live record, from
 * its first accept; sliding-plain: each slot, from its slice start; fixed:
 * the window, from its start.
 */
typedef void (*sl_piece_fn)(void *ctx, __u64 start_ms, __u32 units);

SL_INLINE void sl_state_pieces(const void *state, const struct sl_params *p,
			       __u64 now_ms, sl_piece_fn fn, void *ctx)
{
	const struct sl_client_hdr *h = state;
	int i;

	if (sl_client_idle(h, p, now_ms))
		return;
	if (p->algorithm == SL_ALGO_SLIDING) {
		const struct sl_client *c = state;

		for (i = 0; i < SL_RECORDS; i++)
			if (sl_record_live(&c->rec[i], p, now_ms))
				fn(ctx, now_ms - sl_record_age(&c->rec[i],
							       now_ms),
				   c->rec[i].count);
	} else if (p->algorithm == SL_ALGO_SLIDING_PLAIN) {
		const struct sl_client_plain *c = state;
		__u32 d = now_ms / p->slice_ms, n = sl_plain_slices(p);

		for (i = 0; i < SL_MAX_PLAIN_SLICES; i++) {
			__u32 back = sl_u32_since(c->slot[i].slice, d);

			if (c->slot[i].count && back < n)
				fn(ctx, (now_ms / p->slice_ms - back) *
					p->slice_ms, c->slot[i].count);
		}
	} else if (p->algorithm == SL_ALGO_FIXED) {
		const struct sl_client *c = state;

		if (c->fixed.count && c->fixed.window == now_ms / p->window_ms)
			fn(ctx, c->fixed.window * p->window_ms,
			   c->fixed.count);
	}
}
#endif

#endif /* SL_PEER_H */
