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
 * A cached block holds only under the block tag that computed it
 * (bpf/block.h). An accept clears the block.
 */
#ifndef SL_BPF_LIMIT_H
#define SL_BPF_LIMIT_H

#include "clock.h"
#include "maps.h"
#include "state.h"
#include "peer_verdict.h"
#include "block.h"
#include "admit.h"

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
					  __u64 tag, __u32 units,
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
	if (sl_block_holds(own, tag))
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
			own->blocked_epoch = tag >> 32;
			own->blocked_sync = (__u32)tag;
			own->blocked_until =
				sl_block_word(tag, sl_cache_until(rq.now_ms,
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
	__u64 tag;

	sc = sl_sync_conf();
	if (!sl_syncs(sc))
		sc = NULL;
	if (sc)
		sl_layout_params(p, sc);
	tag = sl_block_tag(epoch, sc);
	switch (sl_state_kind(p->algorithm)) {
	case SL_STATE_PLAIN:
		return sl_decide_kind(key, p, sc, tag, units, SL_STATE_PLAIN);
	case SL_STATE_LOG:
		return sl_decide_kind(key, p, sc, tag, units, SL_STATE_LOG);
	default:
		return sl_decide_kind(key, p, sc, tag, units, SL_STATE_CLIENT);
	}
}

#endif /* SL_BPF_LIMIT_H */
