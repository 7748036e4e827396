/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * When a rejected client may come back (Retry-After): a walk over the
 * times its verdict can change, alone (sl_accept_at_ms) or with the peer
 * view and bounded's rounds (sl_accept_at_peers). Userspace only.
 */
#ifndef SL_PEER_ACCEPT_AT_H
#define SL_PEER_ACCEPT_AT_H

#include "algo/dispatch.h"
#include "peer/bounded.h"
#include "peer/view.h"

#ifndef __BPF__
/* What the kernel decides on, for userspace (query, Retry-After, top): the
 * node's tally of the client's state, plus the peers' part when `v` and `sc` are
 * given. `p` already carries the layout's limit (sl_layout_limit). Returns
 * the projected units, and in `round_room` the bounded layout's room (see
 * sl_peer_allows).
 */
SL_INLINE __u64 sl_tally_node_peers(struct sl_tally *t, const void *state,
				    const struct sl_peer_view *v,
				    const struct sl_params *p,
				    const struct sl_sync_conf *sc,
				    __u64 now_ms, __u64 *round_room)
{
	struct sl_bounded_in in;
	__u64 own, projected;
	__u32 since;

	sl_tally_state(t, state, p, now_ms);
	*round_room = SL_NEVER;
	if (!sc)
		return 0;
	own = t->used;
	projected = v ? sl_peer_tally_algo(t, v, p->algorithm ==
					   SL_ALGO_TOKEN_BUCKET ? state : NULL,
					   p, sc, now_ms) : 0;
	if (sc->layout != SL_LAYOUT_BOUNDED)
		return projected;
	since = sl_round_units(state, sc);
	sl_bounded_inputs(&in, t, v, p, sc, own, t->used - own, since, now_ms);
	*round_room = sl_bounded_room(p, sc, &in, since, now_ms);
	return projected;
}

/* Earliest time >= now at which a request of `units` may be accepted. The
 * verdict can only change at the tally's next_expiry_ms, or in the bounded
 * layout at the next round (due an interval after this one began, and
 * every interval after; the view is taken to stay as it is), so walk
 * those. A round helps only where the room alone holds the client back
 * (the count against the limit is the tally's, which a round does not
 * move), and only if the client has units of the round or the view
 * changed since it began: a round with neither gives the next the same
 * room, and the walk waits for the view instead (a round a step would
 * take a long window past the walk's steps). The kernel caches the
 * first step.
 */
SL_INLINE __u64 sl_accept_at_peers(const void *state,
				   const struct sl_peer_view *v,
				   const struct sl_params *p,
				   const struct sl_sync_conf *sc,
				   __u64 now_ms, __u32 units)
{
	__u64 at = now_ms, projected, room, next_round = SL_NEVER;
	struct sl_sync_conf round = { 0 };
	struct sl_tally t;
	int step, same_room = 0;	/* a round on gives the same room */

	if (sc && sc->layout == SL_LAYOUT_BOUNDED && sc->interval_ms) {
		round = *sc;
		next_round = sl_bounded_next_round(sc, now_ms);
	}
	for (step = 0; step < SL_MAX_LOG * 2 + 64; step++) {
		/* a round passed: its shares are taken at its start, and
		 * the client has no units of it yet
		 */
		while (at >= next_round) {
			round.share_round++;
			round.round_ms = next_round;
			next_round += sc->interval_ms;
			same_room = 1;
		}
		projected = sl_tally_node_peers(&t, state, v, p,
						next_round == SL_NEVER ? sc :
						&round, at, &room);
		if (sl_peer_allows(&t, p, projected, room, units))
			return at;
		if (room < units && !same_room && next_round > at &&
		    next_round < t.next_expiry_ms &&
		    sl_peer_allows(&t, p, projected, SL_NEVER, units))
			t.next_expiry_ms = next_round;
		if (t.next_expiry_ms == SL_NEVER)
			return SL_NEVER;
		at = t.next_expiry_ms > at ? t.next_expiry_ms : at + 1;
		same_room = 0;	/* the view moved on: the next round may help */
	}
	return SL_NEVER;
}

/* The same on the node's own count alone. The walk is in u64 ms (no
 * wrap); each step is a time the count can fall, which every algorithm
 * puts at the real end of what it counts, also for counts ahead of now
 * after a step back of the clock (include/algo/common.h), so the walk needs
 * few steps whatever the clock value or the step.
 */
SL_INLINE __u64 sl_accept_at_ms(const void *state,
				const struct sl_params *p, __u64 now_ms,
				__u32 units)
{
	return sl_accept_at_peers(state, NULL, p, NULL, now_ms, units);
}

#endif

#endif /* SL_PEER_ACCEPT_AT_H */
