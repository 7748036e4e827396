/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The verdict with the peers on a node that syncs: the peers' part of
 * the count (include/peer/view.h) and, under bounded, the round's room
 * (include/peer/bounded.h); and an accept counted in the sync rounds.
 */
#ifndef SL_BPF_PEER_VERDICT_H
#define SL_BPF_PEER_VERDICT_H

#include "maps.h"
#include "sl_peer.h"
#include "state.h"

/* How a request stands with the peers: SL_FITS if it fits, and
 * SL_ROUND_SPENT when the bounded layout's round has no room left.
 */
enum {
	SL_FITS = 1,
	SL_ROUND_SPENT = 2,
};

static long sl_fleet_step(__u32 i, void *data)
{
	struct sl_fleet_walk *w = data;

	if (w->v)
		sl_fleet_slot(w, i);
	return 0;
}

/* bounded, the sums: the round's room (sl_bounded_room, at most INT_MAX)
 * from the fleet's view of the client; `t` learns when the room grows.
 * Verified on its own, and called from sl_decide after sl_peer_verdict:
 * its walks of the view beside the peers' tally of every algorithm take
 * the verifier past its limit in one function, and one call deeper the
 * chain's stack past 512 bytes.
 */
__noinline int sl_round_room(const struct sl_peer_view *v,
			     const struct sl_params *p,
			     const struct sl_sync_conf *sc,
			     const struct sl_request *rq,
			     struct sl_tally *t)
{
	struct sl_fleet_walk w;
	__u32 share_own, share_base;
	__u64 room;

	if (!v || !p || !sc || !rq || !t)
		return 0;
	/* at the round's start first, for the shares; then now */
	if (sl_fleet_start(&w, v, p, sc->round_ms))
		bpf_loop(SL_PEER_SLOTS, sl_fleet_step, &w, 0);
	share_own = w.own;
	share_base = w.base;
	if (sl_fleet_start(&w, v, p, rq->now_ms))
		bpf_loop(SL_PEER_SLOTS, sl_fleet_step, &w, 0);
	if (w.expiry_ms < t->next_expiry_ms)
		t->next_expiry_ms = w.expiry_ms;
	room = sl_bounded_room_of(p, sc, w.base, w.hidden, share_own,
				  share_base, rq->since, rq->now_ms);
	return room < 0x7fffffff ? room : 0x7fffffff;
}

/* bounded, the counter's exact slices and the bucket's level: the room
 * from the node's own tally (`own_used`) less its round, plus the peers'
 * (`peers_used`); at most INT_MAX. On its own for the stack, as above.
 */
__noinline int sl_tally_room(const struct sl_params *p,
			     const struct sl_sync_conf *sc,
			     const struct sl_request *rq, __u64 own_used,
			     __u64 peers_used)
{
	__u64 room;

	if (!p || !sc || !rq)
		return 0;
	own_used = own_used > rq->since ? own_used - rq->since : 0;
	room = sl_bounded_room_of(p, sc, own_used + peers_used, 0, own_used,
				  own_used + peers_used, rq->since, rq->now_ms);
	return room < 0x7fffffff ? room : 0x7fffffff;
}

/* The verdict with the peers (include/peer/view.h) on a node's finished
 * tally `t`, which gains the peers' counted units; the bounded layout's
 * room is sl_decide's to weigh. `v` is the client's peer view (a zero one
 * when no peer counted it: the peers then add nothing) and `own` its
 * state, both found by sl_decide: a global function's key argument would
 * need a copy on the stack for 6.1, whose call chain must fit 512 bytes.
 */
__noinline int sl_peer_verdict(const struct sl_peer_view *v,
			       const struct sl_client *own,
			       const struct sl_params *p,
			       const struct sl_request *rq,
			       struct sl_tally *t)
{
	const struct sl_sync_conf *sc;
	__u64 projected;

	if (!v || !own || !p || !rq || !t)
		return SL_FITS;
	sc = sl_sync_conf();
	if (!sc)
		return SL_FITS;
	/* a bucket's level is the fleet's: its own slices with the peers' */
	projected = sl_peer_tally_algo(t, v, p->algorithm == SL_ALGO_TOKEN_BUCKET ?
					     own : NULL, p, sc, rq->now_ms);
	return sl_peer_allows(t, p, projected, SL_NEVER, rq->units) ? SL_FITS : 0;
}

/* Count an accept in the client's rounds. The first accept of a sync
 * round hands the key to the service (sl_changed), so that a round costs
 * what changed. The first of a share round restarts the round's units
 * (the bounded layout's share is of those). Two CPUs may both see a
 * round new: both send the key (the service reads each once), and one's
 * units may be lost from the round's count, at most one unit per extra
 * CPU, as for any shared count (docs/ACCURACY.md, "Why no accept is lost
 * to another CPU").
 */
static __always_inline void sl_note_round(struct sl_client_hdr *own,
					  const struct sl_client_key *key,
					  const struct sl_sync_conf *sc,
					  __u32 units)
{
	if (!sc->round)
		return;
	if (own->share_round == sc->share_round) {
		SL_ADD(&own->round_units, units);
	} else {
		own->round_units = units;
		own->share_round = sc->share_round;
	}
	if (own->sync_round == sc->round)
		return;
	own->sync_round = sc->round;
	if (bpf_ringbuf_output(&sl_changed, (void *)key, sizeof(*key), 0)) {
		struct sl_global_stats *gs = sl_cpu_stats();

		if (gs)
			gs->changed_lost++;
	}
}

/* Whether the sync conf can change a verdict: not without a service
 * (round 0: nothing has written a peer view or a share) unless it splits
 * the quota, not under the local layout. Such hosts skip the peer verdict.
 */
static __always_inline int sl_syncs(const struct sl_sync_conf *sc)
{
	if (!sc || sc->layout == SL_LAYOUT_LOCAL)
		return 0;
	return sc->round || (sc->layout == SL_LAYOUT_SPLIT_QUOTA &&
			     sc->nodes > 1);
}

/* The verdict on a node that syncs: with the peers' part, and under
 * bounded within the round's room.
 */
static __always_inline int sl_verdict_synced(const struct sl_client_key *key,
					     const struct sl_client_hdr *own,
					     const struct sl_params *p,
					     const struct sl_sync_conf *sc,
					     struct sl_request *rq,
					     struct sl_tally *t, __u32 units)
{
	const struct sl_peer_view *v = NULL;
	__u64 own_used = t->used;
	int verdict, room;

	if (sl_peer_layout_counts(sc))
		v = bpf_map_lookup_elem(&sl_peer_view, key);
	if (!v)
		v = &sl_zero_view;
	rq->since = sl_round_units(own, sc);
	rq->units = units;
	verdict = sl_peer_verdict(v, (const struct sl_client *)own, p, rq, t);
	if (sc->layout != SL_LAYOUT_BOUNDED)
		return verdict;
	if (sl_peer_sums(p))
		room = sl_round_room(v, p, sc, rq, t);
	else
		room = sl_tally_room(p, sc, rq, own_used, t->used - own_used);
	if ((__u32)room < units)
		verdict &= ~SL_FITS;
	if (!room)
		verdict |= SL_ROUND_SPENT;
	return verdict;
}

#endif /* SL_BPF_PEER_VERDICT_H */
