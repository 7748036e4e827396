/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The per-client decision, over the client's one state (shared by every CPU:
 * why, docs/DESIGN.md, "Why one record for every CPU"; what it costs in
 * accuracy, docs/ACCURACY.md, "Why no accept is lost to another CPU").
 *
 * A decision reads the client's state once, whatever the CPU count, and an
 * accept adds to it atomically. Once a decision finds the client over the
 * limit it caches, in the state, the earliest time any counted slice leaves
 * the window. Until then nothing can lower the count (slices only age out),
 * so every further packet is decided by one lookup and one compare and
 * writes nothing: the over-limit path is the cheapest path, and a flood
 * spread over every CPU only reads one cache line.
 *
 * A cached block holds only under the generation that computed it: 64
 * bits, the rules epoch and what of the sync conf the verdict depends on
 * (sl_generation), compared whole, so an apply, a layout change and a
 * share round each end every cached block, and no two generations a block
 * can live to see are equal. The generation is kept in two halves of the
 * state's header (blocked_epoch, blocked_sync) and the block's end in one
 * word with a 24-bit check of the whole generation (sl_block_word): a
 * reader that finds one writer's generation and another's end (two CPUs
 * caching the same client at once, across an apply) sees a check that
 * does not match, so it never honours an end computed under other rules
 * (but for a check collision of two such writers at the same instant).
 * An accept clears the block.
 */
#ifndef SL_BPF_LIMIT_H
#define SL_BPF_LIMIT_H

#include "clock.h"
#include "maps.h"
#include "sl_algo.h"
#include "sl_key.h"
#include "sl_newcomer.h"
#include "sl_peer.h"

enum sl_decision {
	SL_ACCEPT = 0,
	SL_OVER = 1,
	SL_FAIL_OPEN = 2,	/* no state could be had: accepted */
};

/* Zero states to create clients from (read-only data). */
static const struct sl_client sl_zero_client;
static const struct sl_client_plain sl_zero_plain;
static const struct sl_client_log sl_zero_log;
/* The peer view of a client no peer counted. Never written, but not
 * const: the verifier takes a global function's pointer argument as
 * writable memory, which read-only data is not.
 */
static struct sl_peer_view sl_zero_view;

/* Which client table holds a rule's state: each has its own value type,
 * which the verifier checks every access against, so the state's pointer
 * goes only to the functions of its kind (sl_tally_own, sl_charge_own).
 * sl_decide picks the kind once and the rest of the decision is compiled
 * for each kind apart: a constant, so that the other kinds' calls are not
 * there for the verifier to refuse.
 */
enum sl_state_kind {
	SL_STATE_CLIENT = 0,	/* sl_clients: sliding, fixed, token-bucket */
	SL_STATE_PLAIN = 1,	/* sl_clients_plain: sliding-plain, -counter */
	SL_STATE_LOG = 2,	/* sl_clients_log: sliding-log */
};

static __always_inline int sl_state_kind(__u32 algorithm)
{
	if (sl_uses_slots(algorithm))
		return SL_STATE_PLAIN;
	if (algorithm == SL_ALGO_SLIDING_LOG)
		return SL_STATE_LOG;
	return SL_STATE_CLIENT;
}

/* The client state map of a kind, and its zero state. */
static __always_inline void *sl_state_map(int kind, const void **zero)
{
	if (kind == SL_STATE_PLAIN) {
		*zero = &sl_zero_plain;
		return &sl_clients_plain;
	}
	if (kind == SL_STATE_LOG) {
		*zero = &sl_zero_log;
		return &sl_clients_log;
	}
	*zero = &sl_zero_client;
	return &sl_clients;
}

/* A key's state, created. NOEXIST: a racing insert on another CPU must
 * not be overwritten (that would zero what it counted). 0 when this call
 * created it.
 */
static __always_inline int sl_state_create(__u32 algorithm,
					   const struct sl_client_key *key)
{
	const void *zero;
	void *map = sl_state_map(sl_state_kind(algorithm), &zero);
	struct sl_global_stats *gs;

	if (bpf_map_update_elem(map, key, zero, BPF_NOEXIST))
		return -1;
	gs = sl_cpu_stats();
	if (gs)
		gs->new_clients++;
	return 0;
}

/* The slots of sliding-plain and sliding-counter, one bpf_loop body: the
 * verifier checks it once, where 64 steps of the walk explored one by one
 * take 6.1's verifier past its limit.
 */
struct sl_slots_ctx {
	const struct sl_client_plain *c;
	const struct sl_params *p;
	struct sl_tally *t;
	struct sl_slot_walk w;
};

static long sl_tally_slot(__u32 i, void *data)
{
	struct sl_slots_ctx *ctx = data;

	if (ctx->c)
		sl_plain_slot_tally(ctx->t, &ctx->c->slot[i & (SL_MAX_PLAIN_SLICES - 1)],
				    ctx->p, &ctx->w);
	return 0;
}

/* The client's tally, into `t`, from its state as sl_decide found it:
 * the state is looked up once per decision, and passed down as the map
 * value it is. Global functions (these, and the others below) are
 * verified once each, on their own: together they would exceed what the
 * verifier explores in one program. One per table, whose value type the
 * verifier checks the accesses against.
 */
__noinline int sl_tally_client(const struct sl_client *c,
			       const struct sl_params *p, __u64 now_ms,
			       struct sl_tally *t)
{
	if (!c || !p || !t)
		return -1;
	sl_tally_init(t);
	sl_client_tally(t, c, p, now_ms);
	sl_tally_finish(t, p, now_ms);
	return 0;
}

/* The slot walk's context holds pointers, not copies: on 6.1 the stack
 * of the whole call chain must fit 512 bytes.
 */
__noinline int sl_tally_plain(const struct sl_client_plain *c,
			      const struct sl_params *p, __u64 now_ms,
			      struct sl_tally *t)
{
	struct sl_slots_ctx ctx;

	if (!c || !p || !t)
		return -1;
	sl_tally_init(t);
	if (sl_hdr_tally(t, (const void *)c, p, now_ms)) {
		ctx.c = c;
		ctx.p = p;
		ctx.t = t;
		sl_slot_walk_init(&ctx.w, p, now_ms);
		bpf_loop(SL_MAX_PLAIN_SLICES, sl_tally_slot, &ctx, 0);
	}
	sl_tally_finish(t, p, now_ms);
	return 0;
}

__noinline int sl_tally_log(const struct sl_client_log *c,
			    const struct sl_params *p, __u64 now_ms,
			    struct sl_tally *t)
{
	if (!c || !p || !t)
		return -1;
	sl_tally_init(t);
	sl_client_log_tally(t, c, p, now_ms);
	sl_tally_finish(t, p, now_ms);
	return 0;
}

static __always_inline void sl_tally_own(void *own, int kind,
					 const struct sl_params *p,
					 __u64 now_ms, struct sl_tally *t)
{
	if (kind == SL_STATE_PLAIN)
		sl_tally_plain(own, p, now_ms, t);
	else if (kind == SL_STATE_LOG)
		sl_tally_log(own, p, now_ms, t);
	else
		sl_tally_client(own, p, now_ms, t);
}

/* The first drop of a client in a window goes to the ring buffer; the
 * later ones of that window stay silent (this path runs once per cache
 * refresh, not per packet, and the age check makes it once per window).
 */
static __always_inline void sl_drop_event(struct sl_client_hdr *own,
					  const struct sl_client_key *key,
					  const struct sl_params *p,
					  const struct sl_tally *t,
					  __u64 now_ms)
{
	struct sl_drop_event *ev;

	/* one per client per window, whichever CPUs its packets arrive on */
	if (t->event_age_ms < p->window_ms)
		return;
	own->event_ms = (__u32)now_ms ? (__u32)now_ms : 1;
	ev = bpf_ringbuf_reserve(&sl_events, sizeof(*ev), 0);
	if (!ev) {
		struct sl_global_stats *gs = sl_cpu_stats();

		if (gs)
			gs->events_lost++;	/* nobody reading: buffer full */
		return;
	}
	ev->time_ms = now_ms;
	ev->key = *key;
	ev->pad = 0;
	ev->used = t->used;
	ev->retry_after_ms = t->next_expiry_ms > now_ms ?
			     t->next_expiry_ms - now_ms : 0;
	bpf_ringbuf_submit(ev, 0);
}

/* A request as the peers' functions weigh it, and as an accept is
 * charged (BPF functions take 5 args).
 */
struct sl_request {
	__u64 now_ms;
	__u32 since;		/* the client's units of the share round */
	__u32 units;
};

/* Account an accept of rq->units at rq->now_ms in the client's one
 * state, found by sl_decide, one function per table as for the tally.
 * Returns 1 if charged, 0 if the accept no longer fits (token-bucket:
 * another CPU took the tokens since the tally `t`).
 */
__noinline int sl_charge_client(struct sl_client *c, const struct sl_params *p,
				const struct sl_tally *t,
				const struct sl_request *rq)
{
	if (!c || !p || !t || !rq)
		return 1;
	return sl_client_charge(c, p, t, rq->now_ms, rq->units);
}

__noinline int sl_charge_plain(struct sl_client_plain *c,
			       const struct sl_params *p,
			       const struct sl_request *rq)
{
	if (!c || !p || !rq)
		return 1;
	return sl_client_plain_charge(c, p, rq->now_ms, rq->units);
}

__noinline int sl_charge_log(struct sl_client_log *c,
			     const struct sl_params *p,
			     const struct sl_request *rq)
{
	if (!c || !p || !rq)
		return 1;
	return sl_client_log_charge(c, p, rq->now_ms);
}

static __always_inline int sl_charge_own(void *own, int kind,
					 const struct sl_params *p,
					 const struct sl_tally *t,
					 const struct sl_request *rq)
{
	if (kind == SL_STATE_PLAIN)
		return sl_charge_plain(own, p, rq);
	if (kind == SL_STATE_LOG)
		return sl_charge_log(own, p, rq);
	return sl_charge_client(own, p, t, rq);
}

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

/* The verdict with the peers (include/sl_peer.h) on a node's finished
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

/* The generation a block is computed under: the rules epoch in the high
 * half; in the low half, the layout (3 bits) and what of the sync conf
 * the layout's verdict depends on: split-quota's node count; bounded's
 * share round (renewing every node's share) and live nodes. The share
 * round keeps 23 bits there: a block of a spent round ends within
 * SL_BOUNDED_STALE intervals, long before they wrap.
 */
static __always_inline __u64 sl_generation(__u32 epoch,
					   const struct sl_sync_conf *sc)
{
	__u32 low = 0;

	if (sc) {
		low = sc->layout << 29;
		if (sc->layout == SL_LAYOUT_SPLIT_QUOTA)
			low |= sc->nodes & 0x1fffffff;
		else if (sc->layout == SL_LAYOUT_BOUNDED)
			low |= (sc->share_round << 6 | (sc->live_nodes & 63)) &
			       0x1fffffff;
	}
	return (__u64)epoch << 32 | low;
}

/* A cached block's word: its end (bpf/clock.h) in the low
 * SL_CACHE_END_BITS, a check of its generation above them (multiplicative
 * hashing: generations that differ in any bit, in epoch or sync part,
 * differ in it but for one pair in 2^24). The multiplier is not the one
 * of the builds whose words held a 32-bit end and a 32-bit check: a word
 * one of them left in a state kept across a reload carries a check of
 * the same generation that does not match (but for one in 2^24), so its
 * end is never read as 40 bits.
 */
static __always_inline __u64 sl_block_word(__u64 gen, __u64 end)
{
	return (gen * 0xD1B54A32D192ED03ULL) >> SL_CACHE_END_BITS <<
	       SL_CACHE_END_BITS | (end & SL_CACHE_END_MASK);
}

/* Whether a block word carries the check of generation `gen`. */
static __always_inline int sl_block_of(__u64 word, __u64 gen)
{
	return word >> SL_CACHE_END_BITS ==
	       sl_block_word(gen, 0) >> SL_CACHE_END_BITS;
}

/* The over-limit path: a block cached under this generation, still on. */
static __always_inline int sl_block_holds(const struct sl_client_hdr *own,
					  __u64 gen)
{
	__u64 word = SL_LOAD(own->blocked_until);

	return ((__u64)SL_LOAD(own->blocked_epoch) << 32 |
		SL_LOAD(own->blocked_sync)) == gen &&
	       sl_block_of(word, gen) && sl_cache_before(word);
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

/* sl_admit's answers beside SL_ACCEPT and SL_FAIL_OPEN: the key has a
 * state now (look it up), and it was promoted: its first accept, in
 * `first`, is still to be charged into the new state.
 */
enum {
	SL_ADMITTED = 3,
	SL_PROMOTED = 4,
};

/* Admission of a key the client tables do not hold (include/
 * sl_newcomer.h), at first_out->now_ms (the packet's clock, read once by
 * the caller): SL_ACCEPT, its first packet accepted on probation; or
 * SL_PROMOTED, it came back while on probation, with its first accept
 * in `first` (when and how many units); or SL_ADMITTED, it has a state
 * now: the peers count it, or its packet does not fit an empty state
 * (then the full decision judges it, as for any client). It charges
 * nothing itself: sl_decide does, one call less deep.
 */
__noinline int sl_admit(const struct sl_client_key *key_arg,
			const struct sl_params *p,
			const struct sl_sync_conf *sc, __u32 units,
			struct sl_request *first_out)
{
	struct sl_client_key key_copy;
	const struct sl_client_key *key = &key_copy;
	const struct sl_newcomer_conf *conf;
	struct sl_newcomer_bucket *b;
	struct sl_global_stats *gs;
	__u32 first_tag = 0, first_units = 0;
	__u64 first_ms = 0;
	struct sl_tally empty;
	__u64 h, now_ms;
	__u32 idx, tag, r, zero = 0;
	int way, free, fits, written = 0, displaced = 0;

	if (!key_arg || !p || !first_out)
		return SL_FAIL_OPEN;
	/* on the stack, as in sl_decide() */
	key_copy = *key_arg;
	conf = bpf_map_lookup_elem(&sl_newcomer_conf, &zero);
	if (!conf || !conf->buckets)
		goto create;
	/* a key the peers count is no one-packet source */
	if (sl_peer_layout_counts(sc) && bpf_map_lookup_elem(&sl_peer_view, key))
		goto create;
	/* bounded shares the fleet's room by what each node's states hold:
	 * an accept on probation is in none of them and reaches no peer,
	 * so a fleet that shares a room gives every key a state at once
	 */
	if (sc && sc->layout == SL_LAYOUT_BOUNDED && sc->live_nodes > 1)
		goto create;
	h = sl_newcomer_hash(key, conf->seed);
	idx = sl_newcomer_index(h, conf->buckets);
	tag = sl_newcomer_tag(h);
	b = bpf_map_lookup_elem(&sl_newcomers, &idx);
	if (!b)
		goto create;
	sl_tally_init(&empty);
	fits = sl_tally_allows(&empty, p, units);
	now_ms = first_out->now_ms;
	r = bpf_get_prandom_u32();	/* no helper call under the lock */

	bpf_spin_lock(&b->lock);
	way = sl_newcomer_find(b, tag, &free);
	if (way >= 0 && way < SL_NEWCOMER_WAYS) {
		first_tag = b->tag[way];
		first_units = b->units[way];
		first_ms = b->first_ms[way];
		b->tag[way] = 0;	/* promoted once, by one CPU */
	} else if (fits) {
		__u32 slot;

		displaced = free < 0;
		slot = displaced ? sl_newcomer_victim(b, r) : free;
		/* the compiler knows the mask is redundant and drops it;
		 * 6.1's verifier cannot tell, so hide the value from the
		 * compiler and keep the mask
		 */
		__asm__ volatile("" : "+r"(slot));
		slot &= SL_NEWCOMER_WAYS - 1;
		b->tag[slot] = tag;
		b->units[slot] = units;
		b->first_ms[slot] = now_ms;
		written = 1;
	}
	bpf_spin_unlock(&b->lock);

	gs = sl_cpu_stats();
	if (written) {
		if (gs) {
			gs->newcomers++;
			gs->newcomers_displaced += displaced;
		}
		return SL_ACCEPT;
	}
	if (!first_tag)
		goto create;
	if (gs)
		gs->promoted++;
	if (sl_state_create(p->algorithm, key))
		return SL_ADMITTED;	/* another CPU made it first */
	first_out->now_ms = first_ms;
	first_out->units = first_units;
	return SL_PROMOTED;
create:
	sl_state_create(p->algorithm, key);
	return SL_ADMITTED;
}

/* The client's state under the rule's algorithm and its table's kind,
 * or NULL and *verdict: a key the tables do not hold goes through
 * probation first (sl_admit), which decides a newcomer's first packet
 * itself. A promoted key's first accept is charged at its own time into
 * the empty state (no unit lost, no time moved), and, the peers knowing
 * nothing of it yet, counted in the share round. `t` and `rq` are the
 * caller's, used here as scratch.
 */
static __always_inline struct sl_client_hdr *
sl_state_get(const struct sl_client_key *key, const struct sl_params *p,
	     const struct sl_sync_conf *sc, __u32 units, struct sl_tally *t,
	     struct sl_request *rq, const int kind, int *verdict)
{
	const void *zero;
	void *map = sl_state_map(kind, &zero);
	struct sl_client_hdr *own;
	int admitted;

	rq->now_ms = 0;	/* the clock not read yet */
	own = bpf_map_lookup_elem(map, key);
	if (own)
		return own;
	/* the packet's one read of the clock: probation decides on it, and
	 * so does sl_decide_kind after, unless a promotion took rq over
	 */
	rq->now_ms = sl_now_ms();
	admitted = sl_admit(key, p, sc, units, rq);
	*verdict = admitted;
	if (admitted != SL_ADMITTED && admitted != SL_PROMOTED)
		return NULL;
	*verdict = SL_FAIL_OPEN;	/* if even that finds none */
	own = bpf_map_lookup_elem(map, key);
	if (own && admitted == SL_PROMOTED) {
		sl_tally_init(t);
		sl_charge_own(own, kind, p, t, rq);
		if (sc)
			sl_note_round(own, key, sc, rq->units);
		rq->now_ms = 0;	/* it held the first accept's time */
	}
	return own;
}

/* The decision on a client whose state is of `kind`, a constant in each
 * of sl_decide's calls: compiled once per kind.
 */
static __always_inline int sl_decide_kind(const struct sl_client_key *key,
					  struct sl_params *p,
					  const struct sl_sync_conf *sc,
					  __u64 gen, __u32 units,
					  const int kind)
{
	struct sl_client_hdr *own;
	struct sl_tally t;
	struct sl_request rq;
	int verdict;

	own = sl_state_get(key, p, sc, units, &t, &rq, kind, &verdict);
	if (!own)
		return verdict;
	/* the over-limit path ends here: a lookup and a compare, no write,
	 * and no exact clock read (bpf/clock.h)
	 */
	if (sl_block_holds(own, gen))
		return SL_OVER;

	/* read once per decision: a new key's admission read it already */
	if (!rq.now_ms)
		rq.now_ms = sl_now_ms();
	rq.units = units;
	sl_tally_own(own, kind, p, rq.now_ms, &t);
	if (sc)
		verdict = sl_verdict_synced(key, own, p, sc, &rq, &t, units);
	else
		verdict = sl_tally_allows(&t, p, units) ? SL_FITS : 0;
	if (!(verdict & SL_FITS)) {
		/* cache only "nothing fits": with unit bytes a smaller packet
		 * may still fit where this one did not. Only the counted
		 * part and the round's room are cached: a peer merge can
		 * only raise the count, the room grows only as counted
		 * slices leave (or at the next round, which the cache's tag
		 * holds), so the cache stays a lower bound of the blocked
		 * time, while a projection falls again at the next merge.
		 */
		if (!sl_tally_allows(&t, p, 1) || verdict & SL_ROUND_SPENT) {
			__u64 until = t.next_expiry_ms;

			/* a spent round's block ends where its shares go
			 * stale (the service gone) at the latest
			 */
			if (sc && verdict & SL_ROUND_SPENT &&
			    sl_bounded_stale_at(sc) < until)
				until = sl_bounded_stale_at(sc);
			own->blocked_epoch = gen >> 32;
			own->blocked_sync = (__u32)gen;
			own->blocked_until =
				sl_block_word(gen, sl_cache_until(rq.now_ms,
								  until));
		}
		/* the event's Retry-After: where only the round's room holds
		 * the client back, the next round may pass it
		 * (sl_accept_at_peers walks on from there)
		 */
		if (sc && sc->layout == SL_LAYOUT_BOUNDED && sc->interval_ms &&
		    sl_tally_allows(&t, p, units) &&
		    sl_bounded_next_round(sc, rq.now_ms) < t.next_expiry_ms)
			t.next_expiry_ms = sl_bounded_next_round(sc, rq.now_ms);
		sl_drop_event(own, key, p, &t, rq.now_ms);
		return SL_OVER;
	}
	if (!sl_charge_own(own, kind, p, &t, &rq))
		return SL_OVER;
	/* whatever block was cached is over: this request fitted */
	if (SL_LOAD(own->blocked_until))
		own->blocked_until = 0;
	if (sc)
		sl_note_round(own, key, sc, units);
	return SL_ACCEPT;
}

/* A client's verdict on `units`. `p` is the caller's own copy of the
 * rule's parameters, which the layout adjusts in place. Inlined into its
 * callers, global functions themselves: the key is then the caller's own
 * stack, with no copy, and the two frames are one on the deepest call
 * chain, whose stack 6.1 limits to 512 bytes with each frame rounded up
 * to 32.
 */
static __always_inline int sl_decide(const struct sl_client_key *key,
				     struct sl_params *p, __u32 epoch,
				     __u32 units)
{
	const struct sl_sync_conf *sc;
	__u64 gen;

	sc = sl_sync_conf();
	if (!sl_syncs(sc))
		sc = NULL;
	if (sc)
		sl_layout_params(p, sc);
	gen = sl_generation(epoch, sc);
	switch (sl_state_kind(p->algorithm)) {
	case SL_STATE_PLAIN:
		return sl_decide_kind(key, p, sc, gen, units, SL_STATE_PLAIN);
	case SL_STATE_LOG:
		return sl_decide_kind(key, p, sc, gen, units, SL_STATE_LOG);
	default:
		return sl_decide_kind(key, p, sc, gen, units, SL_STATE_CLIENT);
	}
}

#endif /* SL_BPF_LIMIT_H */
