/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SL_ALGO_TOKEN_BUCKET_H
#define SL_ALGO_TOKEN_BUCKET_H

#include "algo/common.h"
#include "peer/view.h"

/* ---- token-bucket (GCRA): accept while TAT - now <= (capacity - 1) * T,
 * i.e. while the tokens in use, ceil((TAT - now) / T), are below the
 * capacity. The TAT moves by compare-and-swap, and the accept is decided
 * again on the TAT the swap replaces (sl_bucket_charge): CPUs deciding the
 * same client at once take each token once. Beside it the state keeps its
 * accepts per peer slice, which only the fleet's level reads
 * (sl_peer_tally_bucket, below).
 */
SL_INLINE void sl_bucket_tally(struct sl_tally *t, const struct sl_client *c,
			       const struct sl_params *p, __u64 now_ms)
{
	if (c->bucket.tat_ns > t->aux)
		t->aux = c->bucket.tat_ns;
}

SL_INLINE void sl_bucket_finish(struct sl_tally *t, const struct sl_params *p,
				__u64 now_ms)
{
	__u64 now_ns = now_ms * 1000000, tat = t->aux, T = p->token_ns;
	__u64 over, next_ns;

	if (tat <= now_ns || !T)
		return;
	over = tat - now_ns;
	t->used = (over + T - 1) / T;
	/* when the next token comes back, i.e. `used` falls by one: over
	 * shrinks to (used - 1) * T; over the limit that is the first moment
	 * a request fits (TAT - now <= (capacity - 1) * T)
	 */
	next_ns = t->used > p->limit ? tat - (p->limit - 1) * T :
		  now_ns + (over - (t->used - 1) * T);
	sl_tally_expiry(t, (next_ns + 999999) / 1000000);
}

/* Does an arrival time `tat` leave room for `units` more at now_ns?
 * The tokens in use after it, ceil((TAT' - now) / T), must not pass the
 * capacity (sl_bucket_finish's verdict, on the TAT it would write).
 */
SL_INLINE int sl_bucket_fits(__u64 tat, const struct sl_params *p,
			     __u64 now_ns, __u32 units)
{
	__u64 T = p->token_ns, next = (tat > now_ns ? tat : now_ns) +
				      (__u64)units * T;

	if (!T)
		return 1;
	return (next - now_ns + T - 1) / T <= p->limit;
}

/* Move the TAT by one accept of `units`. The caller's verdict was made on
 * the TAT its tally read (t->aux); another CPU may have moved it since.
 * Each try swaps out the value it decided on: the tally's, or one found
 * since, which must then fit again. So an accept is only ever made on the
 * TAT it replaces. Returns false when the tokens went to another CPU
 * first.
 */
SL_INLINE int sl_bucket_charge(struct sl_client *c, const struct sl_params *p,
			       const struct sl_tally *t, __u64 now_ms,
			       __u32 units)
{
	__u64 now_ns = now_ms * 1000000, cost = (__u64)units * p->token_ns;
	__u64 seen = SL_LOAD(c->bucket.tat_ns), found;
	int i;

	for (i = 0; i < SL_CAS_TRIES; i++) {
		if (seen != t->aux && !sl_bucket_fits(seen, p, now_ns, units))
			return 0;
		found = SL_CAS(&c->bucket.tat_ns, seen,
			       (seen > now_ns ? seen : now_ns) + cost);
		if (found == seen)
			return 1;
		seen = found;
	}
	if (seen != t->aux && !sl_bucket_fits(seen, p, now_ns, units))
		return 0;
	SL_ADD(&c->bucket.tat_ns, cost);
	return 1;
}

/* Peer slices of a bucket: the fleet's level is taken over the last
 * SL_BUCKET_SLOTS of them (include/peer/view.h), so they span
 * SL_BUCKET_HORIZON_FILLS times the time a full bucket takes to refill;
 * forgetting what is older lets at most capacity / horizon, 1 / 20 of
 * the rate, more through in steady state.
 */
#define SL_BUCKET_HORIZON_FILLS	20

SL_INLINE __u64 sl_bucket_slice_ms(const struct sl_params *p)
{
	__u64 fill = (p->limit * p->token_ns + 999999) / 1000000;
	__u64 n = SL_BUCKET_SLOTS - 1, ps;

	ps = (fill * SL_BUCKET_HORIZON_FILLS + n - 1) / n;
	/* ages stay u32 milliseconds (see SL_MAX_WINDOW_MS) */
	if (ps > SL_MAX_WINDOW_MS / SL_BUCKET_SLOTS)
		ps = SL_MAX_WINDOW_MS / SL_BUCKET_SLOTS;
	return ps ? ps : 1;
}

/* The node's own units per peer slice, beside the TAT: one more add per
 * accept. A slot found holding an older slice held one that left the
 * horizon (the ring holds the horizon's slices exactly).
 */
SL_INLINE void sl_bucket_charge_slots(struct sl_client *c,
				      const struct sl_params *p,
				      __u64 now_ms, __u32 units)
{
	__u32 d = now_ms / sl_bucket_slice_ms(p);

	sl_slot_add(&c->bucket.slot[d & (SL_BUCKET_SLOTS - 1)], d, units, 0);
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

#ifndef __BPF__
/* The sync pieces: the own units of each peer slice in the horizon, from
 * its start. A bucket idle for a refill may still have slices in its
 * horizon; not sending them (a first round after a start) only
 * undercounts.
 */
SL_INLINE void sl_bucket_pieces(const struct sl_client *c,
				const struct sl_params *p, __u64 now_ms,
				sl_piece_fn fn, void *ctx)
{
	__u64 ps = sl_bucket_slice_ms(p);
	__u32 d = now_ms / ps;
	int i;

	for (i = 0; i < SL_BUCKET_SLOTS; i++) {
		__u32 back = d - c->bucket.slot[i].slice;

		if (c->bucket.slot[i].count && back < SL_BUCKET_SLOTS)
			fn(ctx, (now_ms / ps - back) * ps,
			   c->bucket.slot[i].count);
	}
}
#endif

#endif /* SL_ALGO_TOKEN_BUCKET_H */
