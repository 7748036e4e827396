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
#ifndef SL_PEER_H
#define SL_PEER_H

#include "sl_algo.h"

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

/* The slice length peers exchange a rule's units in: both ends and the
 * kernel must agree, so it is a function of the rule alone.
 */
SL_INLINE __u64 sl_peer_slice_of(const struct sl_params *p)
{
	if (sl_peer_counter_exact(p))
		return p->slice_ms;
	if (p->algorithm == SL_ALGO_TOKEN_BUCKET)
		return sl_bucket_slice_ms(p);
	return sl_peer_slice_ms(p->window_ms);
}

/* How long after its start a peer slice can still count: a window; the
 * counter's weighted slice one slice more; a bucket's whole horizon.
 */
SL_INLINE __u64 sl_peer_keep_ms(const struct sl_params *p)
{
	if (sl_peer_counter_exact(p))
		return ((__u64)sl_plain_slices(p) + 1) * p->slice_ms;
	if (p->algorithm == SL_ALGO_TOKEN_BUCKET)
		return SL_PEER_SLOTS * sl_bucket_slice_ms(p);
	return p->window_ms;
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

/* token-bucket: the fleet's level. A bucket's level at `now` is the most,
 * over every earlier time s, of the units accepted since s less the
 * refill since s, (A(s, now] - (now - s) / T); GCRA's TAT - now is that
 * for the node's own accepts. For the fleet it is taken over the starts
 * of the last SL_PEER_SLOTS peer slices, with the node's own units per
 * slice (sl_bucket.slot) and the peers' (the view) summed first and the
 * refill subtracted once: one drain for the fleet. Summing the node's
 * excess and a separately drained peers' excess instead drains twice as
 * fast (two nodes at the rate each would never see a full bucket).
 *
 * Every unit of a slice was accepted at or after its start, so each term
 * is at most the fleet's true level, and so is the own TAT's: the larger
 * of the two is a lower bound, and a client the fleet's one bucket would
 * accept is never rejected for its peers (NFR-2). What it forgets is
 * what is older than the horizon (SL_BUCKET_HORIZON_FILLS refills of the
 * bucket): in steady state at most capacity / horizon more than the rate,
 * 5 %, plus what the sync's delay lets several nodes take at once. A
 * burst inside one slice is counted from the slice's start, so a part
 * of it is taken for refilled (the own TAT still sees the node's own).
 * What it adds to `used` over the own GCRA's is the peers' part.
 */
SL_INLINE __u64 sl_peer_tally_bucket(struct sl_tally *t,
				     const struct sl_peer_view *v,
				     const struct sl_client *own,
				     const struct sl_params *p,
				     const struct sl_sync_conf *sc,
				     __u64 now_ms)
{
	__u64 ps = sl_bucket_slice_ms(p), T = p->token_ns;
	__u64 now_ns = now_ms * 1000000, cum = 0, level = 0, used, next_ns;
	__u64 first = now_ms / ps;
	__u32 d = first;
	int k, peers = 0;

	if (!sl_peer_layout_counts(sc) || v->slice_ms != ps || !T)
		return 0;
	SL_UNROLL
	for (k = 0; k < SL_PEER_SLOTS; k++) {
		__u32 slice = d - k, i = slice & (SL_PEER_SLOTS - 1);
		const struct sl_peer_slot *s = &v->slot[i];
		__u64 drain = now_ns - (first - k) * ps * 1000000;

		if (s->count > s->own && s->slice == slice) {
			cum += s->count - s->own;
			peers = 1;
		}
		if (own && own->bucket.slot[i].slice == slice)
			cum += own->bucket.slot[i].count;
		if (cum * T > drain + level)
			level = cum * T - drain;
	}
	if (!peers)
		return sl_peer_projected(t, v, sc, now_ms);
	/* the horizon moves on at the next slice */
	sl_tally_expiry(t, (first + 1) * ps);
	used = (level + T - 1) / T;
	if (used > t->used) {
		t->used = used;
		/* as sl_bucket_finish: the next token back, or over the
		 * capacity the first moment a request fits
		 */
		next_ns = used > p->limit ? now_ns + level - (p->limit - 1) * T :
			  now_ns + (level - (used - 1) * T);
		sl_tally_expiry(t, (next_ns + 999999) / 1000000);
	}
	return sl_peer_projected(t, v, sc, now_ms);
}

/* The peers' part of any algorithm's tally; `own` is the node's state
 * (sl_clients) for token-bucket, else unused and may be NULL.
 */
SL_INLINE __u64 sl_peer_tally_algo(struct sl_tally *t,
				   const struct sl_peer_view *v,
				   const struct sl_client *own,
				   const struct sl_params *p,
				   const struct sl_sync_conf *sc,
				   __u64 now_ms)
{
	if (sl_peer_counter_exact(p))
		return sl_peer_tally_counter(t, v, p, sc, now_ms);
	if (p->algorithm == SL_ALGO_TOKEN_BUCKET)
		return sl_peer_tally_bucket(t, v, own, p, sc, now_ms);
	return sl_peer_tally(t, v, p, sc, now_ms);
}

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
 * (bpf/limit.h, sl_round_room).
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
 * after a step back of the clock (include/sl_algo.h), so the walk needs
 * few steps whatever the clock value or the step.
 */
SL_INLINE __u64 sl_accept_at_ms(const void *state,
				const struct sl_params *p, __u64 now_ms,
				__u32 units)
{
	return sl_accept_at_peers(state, NULL, p, NULL, now_ms, units);
}

/* The slices of a client's state: (start_ms, units) of what
 * still counts at now_ms, for the sender. sliding: each live record, from
 * its first accept; sliding-plain and sliding-counter: each slot, from its
 * slice start (the counter's weighted slice too); fixed: the window, and
 * the one before, from its start; sliding-log: each accept, at its time; token-bucket: the own
 * units of each peer slice in the horizon, from its start.
 */
typedef void (*sl_piece_fn)(void *ctx, __u64 start_ms, __u32 units);

SL_INLINE void sl_state_pieces(const void *state, const struct sl_params *p,
			       __u64 now_ms, sl_piece_fn fn, void *ctx)
{
	const struct sl_client_hdr *h = state;
	int i;

	if (sl_client_idle(h, p, now_ms))
		return;
	/* a bucket idle for a refill may still have slices in its horizon;
	 * not sending them (a first round after a start) only undercounts
	 */
	if (p->algorithm == SL_ALGO_TOKEN_BUCKET) {
		const struct sl_client *c = state;
		__u64 ps = sl_bucket_slice_ms(p);
		__u32 d = now_ms / ps;

		for (i = 0; i < SL_BUCKET_SLOTS; i++) {
			__u32 back = d - c->bucket.slot[i].slice;

			if (c->bucket.slot[i].count && back < SL_BUCKET_SLOTS)
				fn(ctx, (now_ms / ps - back) * ps,
				   c->bucket.slot[i].count);
		}
		return;
	}
	if (p->algorithm == SL_ALGO_SLIDING) {
		const struct sl_client *c = state;

		__u64 ps = sl_peer_slice_ms(p->window_ms);

		/* a record that left the window since the last round may
		 * have gained units before it left: it is sent while its
		 * slice has its own slot (what it gained goes out with a
		 * later start, sl_bounded_start)
		 */
		for (i = 0; i < SL_RECORDS; i++) {
			__u64 first = now_ms - sl_record_age(&c->rec[i],
							     now_ms);

			if (c->rec[i].count &&
			    (sl_record_live(&c->rec[i], p, now_ms) ||
			     now_ms / ps - first / ps < SL_PEER_SLOTS))
				fn(ctx, first, c->rec[i].count);
		}
	} else if (sl_uses_slots(p->algorithm)) {
		const struct sl_client_plain *c = state;
		__u32 d = now_ms / p->slice_ms, n = sl_plain_slices(p);

		/* the exact counter weighs the slice before the window */
		if (sl_peer_counter_exact(p))
			n++;
		for (i = 0; i < SL_MAX_PLAIN_SLICES; i++) {
			__u32 back = sl_u32_since(c->slot[i].slice, d);

			if (c->slot[i].count && back < n)
				fn(ctx, (now_ms / p->slice_ms - back) *
					p->slice_ms, c->slot[i].count);
		}
	} else if (p->algorithm == SL_ALGO_FIXED) {
		const struct sl_client *c = state;
		__u64 w = now_ms / p->window_ms;
		__u32 back = (__u32)w - c->fixed.slice;	/* wrapping */

		/* the window before too: what it gained since the last
		 * round may still be inside the sliding window (the sender
		 * sends only gains; a peer ignores what starts too early)
		 */
		if (c->fixed.count && back <= 1)
			fn(ctx, (w - back) * p->window_ms, c->fixed.count);
	} else if (p->algorithm == SL_ALGO_SLIDING_LOG) {
		const struct sl_client_log *c = state;
		__u32 at;

		for (at = sl_log_first_live(c, p, now_ms); at != c->accepted;
		     at++)
			fn(ctx, now_ms - sl_u32_since(c->stamp_ms[at &
							(SL_MAX_LOG - 1)],
						      (__u32)now_ms), 1);
	}
}
#endif

#endif /* SL_PEER_H */
