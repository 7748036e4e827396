/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Merging a peer's slices into the peer view (userspace, from sync
 * messages; the kernel only reads the view).
 */
#ifndef SL_PEER_MERGE_H
#define SL_PEER_MERGE_H

#include "algo/dispatch.h"
#include "peer/view.h"

/* How sl_peer_merge_piece adds (bounded): the node's own units as it
 * sent them, counted in `own` as well.
 */
enum {
	SL_MERGE_OWN = 1,
};

/* Add units whose earliest first accept was at `start_ms` (TAI) to a peer
 * view, merged at now_ms (no unit of it was accepted later). Units too
 * old to count any more are ignored; the slot of an older slice is taken
 * over. Returns the units added.
 */
SL_INLINE __u32 sl_peer_merge_piece(struct sl_peer_view *v, __u64 ps,
				    __u64 keep_ms, __u64 start_ms,
				    __u32 units, __u64 now_ms, int how)
{
	__u32 slice, room;
	struct sl_peer_slot *s;
	int i;

	if (start_ms + keep_ms <= now_ms)
		return 0;	/* already out of the window */
	if (start_ms > now_ms + SL_PEER_MAX_AHEAD_MS)
		return 0;	/* a clock gone wrong, or a forgery */
	slice = start_ms / ps;
	s = &v->slot[slice % SL_PEER_SLOTS];
	if (v->slice_ms != ps) {
		/* made under another window: start over */
		for (i = 0; i < SL_PEER_SLOTS; i++) {
			v->slot[i].count = 0;
			v->slot[i].own = 0;
		}
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
		s->own = 0;
		s->last_ms = (__u32)now_ms;
	} else if ((__s32)((__u32)start_ms - s->first_ms) < 0) {
		s->first_ms = (__u32)start_ms;	/* the earliest counts */
	}
	if ((__s32)((__u32)now_ms - s->last_ms) > 0)
		s->last_ms = (__u32)now_ms;
	room = ~(__u32)0 - s->count;	/* saturate: never wrap to a small count */
	if (units > room)
		units = room;
	s->count += units;
	if (how & SL_MERGE_OWN)
		s->own += units;
	return units;
}

SL_INLINE __u32 sl_peer_merge_at(struct sl_peer_view *v, __u64 ps,
				 __u64 keep_ms, __u64 start_ms, __u32 units,
				 __u64 now_ms)
{
	return sl_peer_merge_piece(v, ps, keep_ms, start_ms, units, now_ms, 0);
}

/* The same in the slices of sliding, sliding-plain, fixed, sliding-log. */
SL_INLINE __u32 sl_peer_merge(struct sl_peer_view *v, __u32 window_ms,
			      __u64 start_ms, __u32 units, __u64 now_ms)
{
	return sl_peer_merge_at(v, sl_peer_slice_ms(window_ms), window_ms,
				start_ms, units, now_ms);
}

/* ... and in the rule's own peer slices (sl_peer_slice_of). */
SL_INLINE __u32 sl_peer_merge_rule(struct sl_peer_view *v,
				   const struct sl_params *p,
				   __u64 start_ms, __u32 units, __u64 now_ms)
{
	return sl_peer_merge_at(v, sl_peer_slice_of(p), sl_peer_keep_ms(p),
				start_ms, units, now_ms);
}

#endif /* SL_PEER_MERGE_H */
