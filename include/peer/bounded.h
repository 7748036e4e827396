/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The bounded layout: the room a client has left in the fleet, and each
 * node's share of it between two rounds (why it holds: docs/ACCURACY.md,
 * "Bounded: why the fleet stays within the limit").
 */
#ifndef SL_PEER_BOUNDED_H
#define SL_PEER_BOUNDED_H

#include "algo/dispatch.h"
#include "peer/view.h"

/* bounded: the tenth of every share spread evenly over the live nodes. */
#define SL_BOUNDED_EVEN		10

/* bounded: the room is of limit + limit / SL_BOUNDED_SLACK, NFR-1's 1.1 x.
 * The node's own check against the limit still holds; the slack is what
 * lets a client spread over the fleet near its limit pass where its
 * requests land unevenly on the nodes.
 */
#define SL_BOUNDED_SLACK	10

/* bounded: after this many intervals without a settled round (the
 * service gone or stalled) the node decides alone.
 */
#define SL_BOUNDED_STALE	3

/* When the share round goes stale, if no round is settled before. */
SL_INLINE __u64 sl_bounded_stale_at(const struct sl_sync_conf *sc)
{
	return sc->round_ms + SL_BOUNDED_STALE * (__u64)sc->interval_ms + 1;
}

/* bounded: when the next share round begins, as far as a node can tell:
 * an interval after this one's, or, that overdue (the service late), an
 * interval from now.
 */
SL_INLINE __u64 sl_bounded_next_round(const struct sl_sync_conf *sc,
				      __u64 now_ms)
{
	__u64 next = sc->round_ms + sc->interval_ms;

	return next > now_ms ? next : now_ms + sc->interval_ms;
}

/* The client's units of the current round on this node. */
SL_INLINE __u32 sl_round_units(const struct sl_client_hdr *h,
			       const struct sl_sync_conf *sc)
{
	return sc && sc->round && h->share_round == sc->share_round ?
	       h->round_units : 0;
}

/* x * q / 2^16, rounded up, without overflow for any x (q <= 2^16). */
SL_INLINE __u64 sl_mul_q16_up(__u64 x, __u64 q)
{
	return (x >> 16) * q + (((x & 0xffff) * q + 0xffff) >> 16);
}

/* Algorithms whose count is a sum of units in the window, which the
 * bounded layout takes the fleet's of from the view alone (sl_fleet_tally):
 * sliding, sliding-plain, fixed, sliding-log, and the counter whose slices
 * do not fit the view (its peers' part is the sliding lower bound).
 */
SL_INLINE int sl_peer_sums(const struct sl_params *p)
{
	return !sl_peer_counter_exact(p) &&
	       p->algorithm != SL_ALGO_TOKEN_BUCKET;
}

/* bounded, the sums: what the view holds of the fleet's units at now.
 * `base`: units of the slots whose earliest first accept is inside the
 * window, every node's (a lower bound, as sl_peer_tally's); `own`: this
 * node's part of it; `hidden`: units of the slots whose first accept
 * left the window but whose last merge did not, which may still hold
 * units inside it (every unit of a slot was accepted by its last merge);
 * `expiry_ms`: when these figures next change: a slot's last merge
 * leaves or the ring lets the slot go (the room grows), or its first
 * leaves (the shares of the rounds after change). One slot a step: the
 * kernel walks it with bpf_loop.
 */
struct sl_fleet_walk {
	const struct sl_peer_view *v;
	__u64 now_ms;
	__u64 expiry_ms;
	__u32 window_ms;
	__u32 base, own, hidden;	/* saturating: past 2^32 the room is 0 */
};

SL_INLINE void sl_add_sat(__u32 *sum, __u32 x)
{
	*sum = *sum + x < *sum ? ~(__u32)0 : *sum + x;
}

SL_INLINE void sl_fleet_slot(struct sl_fleet_walk *w, __u32 i)
{
	const struct sl_peer_slot *s = &w->v->slot[i & (SL_PEER_SLOTS - 1)];
	__u64 ps = w->v->slice_ms, leaves, ring_out;
	__u32 now_slice = w->now_ms / ps, age, back = now_slice - s->slice;

	/* a slice ahead of now or a ring's length behind: not in it */
	if (!s->count || back >= SL_PEER_SLOTS)
		return;
	age = sl_u32_since(s->last_ms, (__u32)w->now_ms);
	if (age >= w->window_ms)
		return;		/* every unit of it left */
	/* the room grows when its last merge leaves, or when the ring
	 * lets the slot go, a ring's length after its slice (a hidden
	 * slot merged an interval after its first can outlive that)
	 */
	leaves = w->now_ms + (w->window_ms - age);
	ring_out = (w->now_ms / ps + (SL_PEER_SLOTS - back)) * ps;
	if (ring_out < leaves)
		leaves = ring_out;
	age = sl_u32_since(s->first_ms, (__u32)w->now_ms);
	/* ... and a round's shares change when its first leaves */
	if (age < w->window_ms && w->now_ms + (w->window_ms - age) < leaves)
		leaves = w->now_ms + (w->window_ms - age);
	if (leaves < w->expiry_ms)
		w->expiry_ms = leaves;
	if (age < w->window_ms) {
		sl_add_sat(&w->base, s->count);
		sl_add_sat(&w->own, s->own < s->count ? s->own : s->count);
	} else {
		sl_add_sat(&w->hidden, s->count);
	}
}

/* The walk's start: nothing counted, unless the view was made under this
 * window's slices (returns 0 then: nothing to walk).
 */
SL_INLINE int sl_fleet_start(struct sl_fleet_walk *w,
			     const struct sl_peer_view *v,
			     const struct sl_params *p, __u64 now_ms)
{
	w->v = v;
	w->now_ms = now_ms;
	w->window_ms = p->window_ms;
	w->base = w->own = w->hidden = 0;
	w->expiry_ms = SL_NEVER;
	return v && v->slice_ms && v->slice_ms == sl_peer_slice_ms(p->window_ms);
}

/* What sl_bounded_room weighs: the fleet's known units at now (`base`),
 * what they may hide (`hidden`), and the share's parts, taken at the
 * start of the round (`share_own` of `share_base`).
 */
struct sl_bounded_in {
	__u64 base;
	__u64 hidden;
	__u64 share_own;
	__u64 share_base;
};

/* The inputs of sl_bounded_room for the sums, from the view, where every
 * node holds every node's units merged by one rule (their own as they
 * sent them), so every node computes the same base; `expiry_ms` lowered
 * to when the room next grows. The shares are of the round's start: as
 * slices age inside the round the room grows, but the shares still add
 * up to one. The kernel walks the same steps with bpf_loop
 * (bpf/peer_verdict.h, sl_round_room).
 */
#ifndef __BPF__
SL_INLINE void sl_fleet_inputs(struct sl_bounded_in *in, __u64 *expiry_ms,
			       const struct sl_peer_view *v,
			       const struct sl_params *p,
			       const struct sl_sync_conf *sc, __u64 now_ms)
{
	struct sl_fleet_walk now, start;
	__u32 i;

	if (sl_fleet_start(&now, v, p, now_ms))
		for (i = 0; i < SL_PEER_SLOTS; i++)
			sl_fleet_slot(&now, i);
	if (sl_fleet_start(&start, v, p, sc->round_ms))
		for (i = 0; i < SL_PEER_SLOTS; i++)
			sl_fleet_slot(&start, i);
	in->base = now.base;
	in->hidden = now.hidden;
	in->share_own = start.own;
	in->share_base = start.base;
	if (now.expiry_ms < *expiry_ms)
		*expiry_ms = now.expiry_ms;
}
#endif

/* The inputs of sl_bounded_room. The counter's exact slices and the
 * bucket's level are not sums: they take the node's own tally
 * (`own_used`) less its round's units, plus the peers'.
 */
SL_INLINE void sl_bounded_inputs(struct sl_bounded_in *in, struct sl_tally *t,
				 const struct sl_peer_view *v,
				 const struct sl_params *p,
				 const struct sl_sync_conf *sc,
				 __u64 own_used, __u64 peers_used,
				 __u32 since, __u64 now_ms)
{
#ifndef __BPF__
	if (sl_peer_sums(p)) {
		sl_fleet_inputs(in, &t->next_expiry_ms, v, p, sc, now_ms);
		return;
	}
#endif
	in->share_own = own_used > since ? own_used - since : 0;
	in->share_base = in->share_own + peers_used;
	in->base = in->share_base;
	in->hidden = 0;
}

/* What node i may accept in a round (the bound at the top): its share of
 * the room, out of `own_base` of `base` known units, among the live
 * nodes; a room of at most one unit per node, one unit.
 */
SL_INLINE __u64 sl_bounded_allowance(__u64 room, __u64 own_base, __u64 base,
				     const struct sl_sync_conf *sc)
{
	__u32 nodes = sc->live_nodes ? sc->live_nodes : 1;
	__u64 share;

	if (!room)
		return 0;
	if (room <= nodes)
		/* every node may pass one: the fleet passes at most
		 * base + hidden + nodes = 1.1 * limit - room + nodes, within
		 * the bound's unit per node
		 */
		return 1;
	if (!base || own_base > base) {
		share = 65536 / nodes;
	} else {
		if (base >> 40) {	/* own_base * 2^16 must not wrap */
			own_base >>= 24;
			base >>= 24;
		}
		share = ((SL_BOUNDED_EVEN - 1) * (own_base * 65536 /
						  (base ? base : 1)) +
			 65536 / nodes) / SL_BOUNDED_EVEN;
	}
	/* every share rounds up, out of a room with one unit per node set
	 * aside, so that the shares still add up to the room and a node
	 * whose share is a fraction of a unit still passes one
	 */
	return sl_mul_q16_up(room - nodes, share);
}

/* bounded: the most a peer can have accepted of a client in one round,
 * as a receiver can bound it: the allowance out of the largest room
 * (the quota), among two live nodes (the fewest that share: more give
 * each less). A sender's share grows past the even one only with its own
 * units known at its round's start, which it reported in an earlier
 * round: while the receiver holds no peer's units of the client
 * (`peers_part` 0), the even share; else all the sender could own (its
 * units the whole base). A node alone (it hears no peer) takes the whole
 * quota, and one whose earlier report was lost more than the even
 * share: their reports are cut to this, an undercount of the round the
 * next rounds' shares make good.
 */
SL_INLINE __u64 sl_bounded_sender_cap(const struct sl_params *p,
				      __u64 peers_part)
{
	struct sl_sync_conf two = { .live_nodes = 2 };
	__u64 known = peers_part ? 1 : 0;

	return sl_bounded_allowance(p->limit + p->limit / SL_BOUNDED_SLACK,
				    known, known, &two);
}

/* bounded: units the node may still accept in this round, `since` its
 * units of the round already; SL_NEVER where no share applies (other
 * layouts, a node alone).
 */
SL_INLINE __u64 sl_bounded_room_of(const struct sl_params *p,
				   const struct sl_sync_conf *sc,
				   __u64 base, __u64 hidden, __u64 share_own,
				   __u64 share_base, __u32 since, __u64 now_ms)
{
	__u64 quota = p->limit + p->limit / SL_BOUNDED_SLACK, a;

	if (!sc || sc->layout != SL_LAYOUT_BOUNDED || sc->live_nodes <= 1)
		return SL_NEVER;
	/* no share round settled for SL_BOUNDED_STALE intervals: the
	 * service is gone or stalled, nothing tells this round's units
	 * from what the peers know, and the node decides alone (NFR-3)
	 */
	if (now_ms >= sl_bounded_stale_at(sc))
		return SL_NEVER;
	a = quota > base + hidden ? quota - base - hidden : 0;
	a = sl_bounded_allowance(a, share_own, share_base, sc);
	return a > since ? a - since : 0;
}

SL_INLINE __u64 sl_bounded_room(const struct sl_params *p,
				const struct sl_sync_conf *sc,
				const struct sl_bounded_in *in, __u32 since,
				__u64 now_ms)
{
	return sl_bounded_room_of(p, sc, in->base, in->hidden, in->share_own,
				  in->share_base, since, now_ms);
}

/* The verdict with peers: the lower bound against the limit, in the
 * predictive layout the projected count against the limit plus margin,
 * and in the bounded layout the round's room (SL_NEVER elsewhere).
 */
SL_INLINE int sl_peer_allows(const struct sl_tally *t,
			     const struct sl_params *p, __u64 projected,
			     __u64 round_room, __u32 units)
{
	return sl_tally_allows(t, p, units) &&
	       t->used + projected + units <=
	       p->limit + p->limit / SL_PREDICT_MARGIN &&
	       units <= round_room;
}

/* bounded, the sums: the start a round sends a piece's new units with.
 * They were accepted since the previous round (`prev_ms`), by the
 * client's last accept (`last_ms`), which can be long after the piece's
 * first accept (a record open for a while): sent from its first accept,
 * its slot would hold units accepted far later than the slot's slice,
 * which a slot's ring life does not cover. Sent from no earlier than the
 * slice of the last accept, every slot holds units accepted by the end
 * of its own slice and at most an interval before its first: counted
 * while the slot's first is inside the window, a unit is counted for at
 * most an interval after it left (the NFR-2 cost below), and held as
 * hidden until the slice's end leaves the window, which is when the
 * ring takes the slot over.
 */
SL_INLINE __u64 sl_bounded_start(__u64 first_ms, __u64 prev_ms, __u64 last_ms,
				 __u64 ps)
{
	__u64 start = last_ms / ps * ps;

	if (prev_ms > start && prev_ms <= last_ms)
		start = prev_ms;
	return first_ms > start ? first_ms : start;
}

#endif /* SL_PEER_BOUNDED_H */
