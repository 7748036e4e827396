// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The merge: one entry into sl_peer_view, a peer's cut to what a node can
 * accept of its client (sync/peer_units.h) and to its sender's share of
 * the map; a store's totals set rather than added; under bounded, the
 * round's own entries too.
 */
#include <string.h>
#include <bpf/bpf.h>
#include "sync/engine_internal.h"

/* The period one peer's entries of a client are capped over together,
 * in which a real node accepts at most entry_cap: a window for the sums
 * and the counter (no verdict passes more than the limit in one; units
 * are dated by their earliest accept, so the units a peer dates within a
 * window were accepted within it); for a bucket, the ring of slices the
 * view counts its units over (the cap grows by the refill since each of
 * those slices began: peer_units_room).
 * A peer's units count against it while the view's slot of their slice
 * is dated within it (peer_units_counted), so the next period starts
 * fresh.
 */
static __u64 peer_period_ms(const struct sl_params *p)
{
	if (p->algorithm == SL_ALGO_TOKEN_BUCKET)
		return sl_peer_keep_ms(p);
	return p->window_ms ? p->window_ms : 1;
}

/* The most units one entry of a peer's round can carry: what a node can
 * accept of a client in a round. Under bounded, the sender's share as
 * far as this node can bound it, from the peers' units of the client in
 * its view (sl_bounded_sender_cap); elsewhere, what any verdict passes
 * in a window (a bucket: its capacity, and the refill since a peer's units
 * began, peer_units_room).
 * A report claiming more is a forgery or a fault: it is cut to this, less
 * what the same peer already has counted in the period, and counted, so
 * that no peer's datagrams take a client further than a real node could.
 */
static __u64 entry_cap(const struct sl_sync_engine *s,
		       const struct sl_params *p,
		       const struct sl_peer_view *v, __u64 now_ms)
{
	__u64 keep = sl_peer_keep_ms(p), peers = 0;
	__u64 cap = p->limit + p->limit / SL_PREDICT_MARGIN;
	unsigned i;

	/* a bucket takes its capacity at once, and its refill on top over
	 * the time since a peer's units began (peer_units_room)
	 */
	if (p->algorithm == SL_ALGO_TOKEN_BUCKET && p->token_ns)
		cap++;
	/* the shares bound the sums only (sl_bounded_room) */
	if (s->o.layout != SL_LAYOUT_BOUNDED || !sl_peer_sums(p))
		return cap;
	for (i = 0; i < SL_PEER_SLOTS; i++)
		if (v->slot[i].count > v->slot[i].own &&
		    sl_u32_since(v->slot[i].first_ms, (__u32)now_ms) < keep)
			peers += v->slot[i].count - v->slot[i].own;
	return sl_bounded_sender_cap(p, peers);
}

/* A peer's units of one client slice, cut to what the view may still
 * take of that peer (entry_cap, over what the view still counts of its
 * reports of the client), with its record of them in *pu. 0: nothing to
 * merge (refused, and counted, or nothing left).
 */
static __u32 cut_to_peer(struct sl_sync_engine *s,
			 const struct sl_wire_entry *e,
			 struct sl_sync_peer *from,
			 const struct sl_client_key *key,
			 const struct sl_params *p,
			 const struct sl_peer_view *v, bool fresh,
			 __u64 now_ms, struct peer_units **pu)
{
	__u32 units = e->units;
	__u64 cap;

	if (fresh && s->view_entries[from->node] >= sl_sync_view_share(s)) {
		from->view_refused++;
		s->st.view_capped++;
		return 0;
	}
	/* the cap is over what the view still counts of this peer's
	 * reports of the client, not per entry: else as many datagrams, as
	 * many caps. No record left for it: refused, as a full view would
	 */
	*pu = peer_units_of(&s->peer_units, from->node, key,
			    sl_peer_slice_of(p), now_ms);
	if (!*pu) {
		s->st.view_full++;
		return 0;
	}
	cap = peer_units_room(*pu, v, sl_peer_slice_of(p), peer_period_ms(p),
			      e->start_ms, entry_cap(s, p, v, now_ms),
			      p->algorithm == SL_ALGO_TOKEN_BUCKET ?
			      p->token_ns : 0, now_ms);
	if (units > cap) {
		units = cap;
		s->st.clamped_entries++;
	}
	return units;
}

/* A store's totals are the other nodes': before they are set, the slot
 * of their slice keeps only the own part (bounded). What it held of the
 * others before.
 */
static __u32 clear_others(struct sl_peer_view *v, const struct sl_params *p,
			  __u64 start_ms)
{
	__u64 ps = sl_peer_slice_of(p);
	struct sl_peer_slot *slot = &v->slot[(start_ms / ps) % SL_PEER_SLOTS];
	__u32 before = 0;

	if (slot->slice == (__u32)(start_ms / ps)) {
		before = slot->count - slot->own;
		slot->count = slot->own;
	}
	return before;
}

/* The predictive layout's round: what was added to the client within the
 * interval.
 */
static void count_round(struct sl_peer_view *v, __u32 added,
			__u32 interval, __u64 now_ms)
{
	if (sl_u32_since(v->round_ms, (__u32)now_ms) >= interval ||
	    !v->round_units) {
		v->round_ms = (__u32)now_ms;
		v->round_units = 0;
	}
	v->round_units += added < ~(__u32)0 - v->round_units ?
			  added : ~(__u32)0 - v->round_units;
}

/* Add (or with `set`, make) the peers' units of one client slice in the
 * peer view, `how` as sl_peer_merge_piece takes it; the predictive
 * layout's round counts what was added. `from` is the peer whose
 * datagram carried it (NULL: this node's own report, or a store's
 * totals): its units are cut to entry_cap, and a client new to the view
 * is added only within its share of the map (sl_sync_view_share).
 */
void sl_sync_merge_entry(struct sl_sync_engine *s,
			 const struct sl_wire_entry *e, bool set,
			 __u64 now_ms, int how, struct sl_sync_peer *from)
{
	const struct rule_ref *r = sl_sync_rule_by_hash(s, e->rule_hash);
	struct sl_peer_view v, was;
	struct peer_units *pu = NULL;
	struct sl_client_key key;
	struct sl_params p;
	__u32 before = 0, added, units = e->units, maker = 0;
	bool fresh = false;

	if (!r) {
		s->st.unknown_rule++;
		return;
	}
	memset(&key, 0, sizeof(key));
	key.addr = e->addr;
	key.rule_id = r->id;
	key.dport = e->dport;
	if (bpf_map_lookup_elem(s->maps.peer_view, &key, &v)) {
		memset(&v, 0, sizeof(v));
		fresh = true;
	}
	sl_params_from_rule(&p, &r->rule);
	if (from) {
		maker = from->node;
		units = cut_to_peer(s, e, from, &key, &p, &v, fresh, now_ms,
				    &pu);
		/* nothing to add (a sender reports only what grew): merged,
		 * it would still take over the view's slot of an older slice
		 * and drop the units the slot held, which the slice could
		 * then take back, its peers' records no longer true of it
		 */
		if (!units)
			return;
	} else if (!set) {
		maker = s->o.node;	/* bounded: the own report */
	}
	if (fresh)
		v.pad = maker;
	was = v;	/* a new entry is written only with units */
	if (set)
		before = clear_others(&v, &p, e->start_ms);
	added = sl_peer_merge_piece(&v, sl_peer_slice_of(&p),
				    sl_peer_keep_ms(&p), e->start_ms, units,
				    now_ms, how);
	added = added > before ? added - before : 0;
	if (pu)
		peer_units_add(pu, e->start_ms, sl_peer_slice_of(&p), added);
	if (added)
		count_round(&v, added, s->o.interval_ms, now_ms);
	/* nothing to write for a slice already out of the window: no empty
	 * entries for stale messages
	 */
	if (!memcmp(&v, &was, sizeof(v)))
		return;
	if (bpf_map_update_elem(s->maps.peer_view, &key, &v, BPF_ANY))
		s->st.view_full++;
	else if (fresh)
		s->view_entries[maker & 0xffff]++;
}

/* bounded: what the round sent goes into the node's own view too, merged
 * by the rule its peers merge it by, so that every node's view holds the
 * same units with the same times, and every node computes the same base
 * (include/sl_peer.h).
 */
void sl_sync_merge_own(struct sl_sync_engine *s,
		       const struct sl_sync_entries *l, size_t from,
		       __u64 now_ms)
{
	size_t i;

	if (s->o.layout != SL_LAYOUT_BOUNDED)
		return;
	for (i = from; i < l->nr; i++)
		sl_sync_merge_entry(s, &l->e[i], false, now_ms, SL_MERGE_OWN,
				    NULL);
}

void sl_sync_merge_totals(struct sl_sync_engine *s,
			  const struct sl_wire_entry *e, unsigned n,
			  uint64_t now_ms)
{
	unsigned i;

	for (i = 0; i < n; i++)
		sl_sync_merge_entry(s, &e[i], true, now_ms, 0, NULL);
}
