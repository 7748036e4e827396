/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The per-client decision, over the client's one state (shared by every CPU;
 * include/sl_algo.h says why and what it costs in accuracy).
 *
 * A decision reads the client's state once, whatever the CPU count, and an
 * accept adds to it atomically. Once a decision finds the client over the
 * limit it caches, in the state, the earliest time any counted slice leaves
 * the window. Until then nothing can lower the count (slices only age out),
 * so every further packet is decided by one lookup and one compare and
 * writes nothing: the over-limit path is the cheapest path, and a flood
 * spread over every CPU only reads one cache line. The cache is tagged with
 * the rules epoch, so `rules apply` invalidates it.
 */
#ifndef SL_LIMIT_H
#define SL_LIMIT_H

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

/* The client state map of the rule's algorithm, and its zero state. */
static __always_inline void *sl_state_map(__u32 algorithm, const void **zero)
{
	if (sl_uses_slots(algorithm)) {
		*zero = &sl_zero_plain;
		return &sl_clients_plain;
	}
	if (algorithm == SL_ALGO_SLIDING_LOG) {
		*zero = &sl_zero_log;
		return &sl_clients_log;
	}
	*zero = &sl_zero_client;
	return &sl_clients;
}

/* sl_admit's answer when the key has a state now (look it up). */
enum {
	SL_ADMITTED = 3,
};

int sl_admit(const struct sl_client_key *key_arg, const struct sl_params *p,
	     const struct sl_sync_conf *sc, __u32 units);

/* The client's state under the rule's algorithm, or NULL and *verdict:
 * a key the tables do not hold goes through probation first (sl_admit),
 * which decides a newcomer's first packet itself.
 */
static __always_inline void *sl_state_get(const struct sl_params *p,
					  const struct sl_sync_conf *sc,
					  const struct sl_client_key *key,
					  __u32 units, int *verdict)
{
	const void *zero;
	void *map = sl_state_map(p->algorithm, &zero);
	void *c;

	c = bpf_map_lookup_elem(map, key);
	if (c)
		return c;
	*verdict = sl_admit(key, p, sc, units);
	if (*verdict != SL_ADMITTED)
		return NULL;
	c = bpf_map_lookup_elem(map, key);
	*verdict = SL_FAIL_OPEN;	/* if even that found none */
	return c;
}

/* The slots of sliding-plain and sliding-counter, one bpf_loop body: the
 * verifier checks it once, where 64 steps of the walk explored one by one
 * take 6.1's verifier past its limit.
 */
struct sl_slots_ctx {
	const struct sl_client_plain *c;
	struct sl_params p;
	struct sl_tally t;
	__u64 now_ms;
};

static long sl_tally_slot(__u32 i, void *data)
{
	struct sl_slots_ctx *ctx = data;

	if (ctx->c)
		sl_plain_slot_tally(&ctx->t, &ctx->c->slot[i & (SL_MAX_PLAIN_SLICES - 1)],
				    &ctx->p, ctx->now_ms);
	return 0;
}

/* The client's tally. Global functions (this one, and the three below) are
 * verified once each, on their own: together they would exceed what the
 * verifier explores in one program. Each branch looks up the map of its
 * own value type, which the verifier checks every access against.
 */
__noinline int sl_tally_node(const struct sl_client_key *key_arg,
			     const struct sl_params *p, __u64 now_ms,
			     struct sl_tally *out)
{
	struct sl_client_key key_copy;
	const struct sl_client_key *key = &key_copy;
	/* one tally for every branch, the slot walk's: on 6.1 the stack of
	 * the whole call chain must fit 512 bytes
	 */
	struct sl_slots_ctx ctx;

	if (!key_arg || !p || !out)
		return -1;
	/* a map key from the stack: the 6.1 verifier takes none from a
	 * global function's argument
	 */
	key_copy = *key_arg;
	sl_tally_init(&ctx.t);
	if (sl_uses_slots(p->algorithm)) {
		ctx.p = *p;
		ctx.now_ms = now_ms;
		ctx.c = bpf_map_lookup_elem(&sl_clients_plain, key);
		if (ctx.c && sl_hdr_tally(&ctx.t, (const void *)ctx.c, p, now_ms))
			bpf_loop(SL_MAX_PLAIN_SLICES, sl_tally_slot, &ctx, 0);
	} else if (p->algorithm == SL_ALGO_SLIDING_LOG) {
		const struct sl_client_log *c = bpf_map_lookup_elem(&sl_clients_log, key);

		if (c)
			sl_client_log_tally(&ctx.t, c, p, now_ms);
	} else {
		const struct sl_client *c = bpf_map_lookup_elem(&sl_clients, key);

		if (c)
			sl_client_tally(&ctx.t, c, p, now_ms);
	}
	sl_tally_finish(&ctx.t, p, now_ms);
	*out = ctx.t;
	return 0;
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

/* Account an accept in the client's state, in the rule's map. */
__noinline int sl_charge_cpu(const struct sl_client_key *key_arg,
			     const struct sl_params *p,
			     const struct sl_tally *t, __u64 now_ms,
			     __u32 units)
{
	struct sl_client_key key_copy;
	const struct sl_client_key *key = &key_copy;
	if (!key_arg || !p || !t)
		return -1;
	/* on the stack, as in sl_tally_node() */
	key_copy = *key_arg;
	if (sl_uses_slots(p->algorithm)) {
		struct sl_client_plain *c = bpf_map_lookup_elem(&sl_clients_plain, key);

		if (c)
			sl_client_plain_charge(c, p, now_ms, units);
	} else if (p->algorithm == SL_ALGO_SLIDING_LOG) {
		struct sl_client_log *c = bpf_map_lookup_elem(&sl_clients_log, key);

		if (c)
			sl_client_log_charge(c, p, now_ms);
	} else {
		struct sl_client *c = bpf_map_lookup_elem(&sl_clients, key);

		if (c)
			sl_client_charge(c, p, t, now_ms, units);
	}
	return 0;
}

/* The verdict with the peers (include/sl_peer.h) on a node's finished
 * tally `t`, which gains the peers' counted units: SL_FITS if the
 * request fits, and SL_ROUND_SPENT when the bounded layout's round has no
 * room left. Without a peer
 * view entry (no peer counted this client yet) the peers add nothing,
 * but the round's share still holds. Here rather than in sl_decide: on
 * 6.1 the whole call chain's stack must fit 512 bytes.
 */
enum {
	SL_FITS = 1,
	SL_ROUND_SPENT = 2,
};

/* A request as sl_peer_verdict weighs it (BPF functions take 5 args). */
struct sl_request {
	__u64 now_ms;
	__u32 since;		/* the client's units of the share round */
	__u32 units;
};

__noinline int sl_peer_verdict(const struct sl_client_key *key_arg,
			       const struct sl_params *p,
			       const struct sl_sync_conf *sc,
			       const struct sl_request *rq,
			       struct sl_tally *t)
{
	struct sl_client_key key_copy;
	const struct sl_client_key *key = &key_copy;
	const struct sl_client *own = NULL;
	const struct sl_peer_view *v = NULL;
	__u64 own_used, projected = 0, room;

	if (!key_arg || !p || !sc || !rq || !t)
		return SL_FITS;
	/* on the stack, as in sl_tally_node() */
	key_copy = *key_arg;
	own_used = t->used;
	if (sl_peer_layout_counts(sc))
		v = bpf_map_lookup_elem(&sl_peer_view, key);
	if (v) {
		/* a bucket's level is the fleet's: its own slices with the
		 * peers'
		 */
		if (p->algorithm == SL_ALGO_TOKEN_BUCKET)
			own = bpf_map_lookup_elem(&sl_clients, key);
		projected = sl_peer_tally_algo(t, v, own, p, sc, rq->now_ms);
	}
	room = sl_bounded_room(p, sc, own_used, t->used - own_used, rq->since,
			       rq->now_ms);
	return (sl_peer_allows(t, p, projected, room, rq->units) ? SL_FITS : 0) |
	       (room ? 0 : SL_ROUND_SPENT);
}

/* Count an accept in the client's rounds. The first accept of a sync
 * round hands the key to the service (sl_changed), so that a round costs
 * what changed. The first of a share round restarts the round's units
 * (the bounded layout's share is of those). Two CPUs may both see a
 * round new: both send the key (the service reads each once), and one's
 * units may be lost from the round's count, at most one unit per extra
 * CPU, as in include/sl_algo.h.
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

/* A key's state, created. NOEXIST: a racing insert on another CPU must
 * not be overwritten (that would zero what it counted). 0 when this call
 * created it.
 */
static __always_inline int sl_state_create(__u32 algorithm,
					   const struct sl_client_key *key)
{
	const void *zero;
	void *map = sl_state_map(algorithm, &zero);
	struct sl_global_stats *gs;

	if (bpf_map_update_elem(map, key, zero, BPF_NOEXIST))
		return -1;
	gs = sl_cpu_stats();
	if (gs)
		gs->new_clients++;
	return 0;
}

/* Admission of a key the client tables do not hold (include/
 * sl_newcomer.h): SL_ACCEPT, its first packet accepted on probation; or
 * SL_ADMITTED, it has a state now: it came back while on probation (its
 * first accept charged into the new state at that accept's time), or
 * the peers count it, or its packet does not fit an empty state (then
 * the full decision judges it, as for any client).
 */
__noinline int sl_admit(const struct sl_client_key *key_arg,
			const struct sl_params *p,
			const struct sl_sync_conf *sc, __u32 units)
{
	struct sl_client_key key_copy;
	const struct sl_client_key *key = &key_copy;
	const struct sl_newcomer_conf *conf;
	struct sl_newcomer_bucket *b;
	struct sl_global_stats *gs;
	struct sl_client_hdr *own;
	const void *zero_state;
	struct sl_newcomer first = { 0 };
	struct sl_tally empty;
	__u64 h, now_ms;
	__u32 idx, tag, r, zero = 0;
	int way, free, fits, written = 0, displaced = 0;

	if (!key_arg || !p)
		return SL_FAIL_OPEN;
	/* on the stack, as in sl_tally_node() */
	key_copy = *key_arg;
	conf = bpf_map_lookup_elem(&sl_newcomer_conf, &zero);
	if (!conf || !conf->buckets)
		goto create;
	/* a key the peers count is no one-packet source */
	if (sl_peer_layout_counts(sc) && bpf_map_lookup_elem(&sl_peer_view, key))
		goto create;
	h = sl_newcomer_hash(key, conf->seed);
	idx = sl_newcomer_index(h, conf->buckets);
	tag = sl_newcomer_tag(h);
	b = bpf_map_lookup_elem(&sl_newcomers, &idx);
	if (!b)
		goto create;
	sl_tally_init(&empty);
	fits = sl_tally_allows(&empty, p, units);
	now_ms = sl_now_ms();
	r = bpf_get_prandom_u32();	/* no helper call under the lock */

	bpf_spin_lock(&b->lock);
	way = sl_newcomer_find(b, tag, &free);
	if (way >= 0 && way < SL_NEWCOMER_WAYS) {
		first = b->way[way];
		b->way[way].tag = 0;	/* promoted once, by one CPU */
	} else if (fits) {
		displaced = free < 0;
		way = (displaced ? sl_newcomer_victim(b, r) : free) &
		      (SL_NEWCOMER_WAYS - 1);
		b->way[way].tag = tag;
		b->way[way].units = units;
		b->way[way].first_ms = now_ms;
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
	if (!first.tag)
		goto create;
	if (gs)
		gs->promoted++;
	/* the first accept, replayed at its own time into the empty state;
	 * the peers know nothing of it yet: it counts in the share round
	 */
	if (!sl_state_create(p->algorithm, key)) {
		sl_charge_cpu(key, p, &empty, first.first_ms, first.units);
		own = bpf_map_lookup_elem(sl_state_map(p->algorithm, &zero_state),
					  key);
		if (own && sc)
			sl_note_round(own, key, sc, first.units);
	}
	return SL_ADMITTED;
create:
	sl_state_create(p->algorithm, key);
	return SL_ADMITTED;
}

__noinline int sl_decide(const struct sl_client_key *key_arg,
			 const struct sl_params *rule_params, __u32 epoch,
			 __u32 units)
{
	struct sl_client_key key_copy;
	const struct sl_client_key *key = &key_copy;
	const struct sl_sync_conf *sc;
	struct sl_client_hdr *own;
	struct sl_params p;
	struct sl_tally t;
	struct sl_request rq;
	int verdict;
	__u32 zero = 0;

	if (!key_arg || !rule_params)
		return SL_FAIL_OPEN;
	/* on the stack, as in sl_tally_node() */
	key_copy = *key_arg;
	p = *rule_params;
	sc = bpf_map_lookup_elem(&sl_sync, &zero);
	if (sc && sl_algo_syncs(p.algorithm)) {
		sl_layout_params(&p, sc);
		/* a block cached under another layout or node count is not
		 * this one's: fold them into the cache's tag
		 */
		epoch ^= sc->layout << 28 ^ sc->nodes << 16;
		/* bounded: a share round renews every node's share */
		if (sc->layout == SL_LAYOUT_BOUNDED)
			epoch ^= sc->share_round;
	} else {
		sc = NULL;
	}
	own = sl_state_get(&p, sc, key, units, &verdict);
	if (!own)
		return verdict;
	/* the over-limit path ends here: a lookup and a compare, no write,
	 * and no exact clock read (bpf/clock.h)
	 */
	if (own->blocked_epoch == epoch &&
	    sl_cache_now() < own->blocked_until)
		return SL_OVER;

	rq.now_ms = sl_now_ms();
	sl_tally_node(key, &p, rq.now_ms, &t);
	if (sc) {
		rq.since = sl_round_units(own, sc);
		rq.units = units;
		verdict = sl_peer_verdict(key, &p, sc, &rq, &t);
	} else {
		verdict = sl_tally_allows(&t, &p, units) ? SL_FITS : 0;
	}
	if (!(verdict & SL_FITS)) {
		/* cache only "nothing fits": with unit bytes a smaller packet
		 * may still fit where this one did not. Only the counted
		 * part and the round's room are cached: a peer merge can
		 * only raise the count, the room grows only as counted
		 * slices leave (or at the next round, which the cache's tag
		 * holds), so the cache stays a lower bound of the blocked
		 * time, while a projection falls again at the next merge.
		 */
		if (!sl_tally_allows(&t, &p, 1) || verdict & SL_ROUND_SPENT) {
			__u64 until = t.next_expiry_ms;

			/* a spent round's block ends where its shares go
			 * stale (the service gone) at the latest
			 */
			if (sc && verdict & SL_ROUND_SPENT &&
			    sl_bounded_stale_at(sc) < until)
				until = sl_bounded_stale_at(sc);
			own->blocked_until = sl_cache_until(rq.now_ms, until);
			own->blocked_epoch = epoch;
		}
		sl_drop_event(own, key, &p, &t, rq.now_ms);
		return SL_OVER;
	}
	sl_charge_cpu(key, &p, &t, rq.now_ms, units);
	if (sc)
		sl_note_round(own, key, sc, units);
	return SL_ACCEPT;
}

#endif /* SL_LIMIT_H */
