/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one dispatch by algorithm: which state a rule keeps, and its
 * tally, charge, peer tally and sync pieces, each picking the algorithm's
 * own functions (include/algo/NAME.h). Adding an algorithm is its header
 * and one line in each switch here (and bpf/state.h's map choice).
 */
#ifndef SL_ALGO_DISPATCH_H
#define SL_ALGO_DISPATCH_H

#include "algo/sliding.h"
#include "algo/sliding_plain.h"
#include "algo/fixed.h"
#include "algo/sliding_counter.h"
#include "algo/token_bucket.h"
#include "algo/sliding_log.h"
#include "peer/view.h"

/* ---- dispatch ---- */

/* Algorithms whose state is a ring of slices (sl_clients_plain). */
SL_INLINE int sl_uses_slots(__u32 algorithm)
{
	return algorithm == SL_ALGO_SLIDING_PLAIN ||
	       algorithm == SL_ALGO_SLIDING_COUNTER;
}

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

SL_INLINE int sl_state_kind(__u32 algorithm)
{
	if (sl_uses_slots(algorithm))
		return SL_STATE_PLAIN;
	if (algorithm == SL_ALGO_SLIDING_LOG)
		return SL_STATE_LOG;
	return SL_STATE_CLIENT;
}

/* Bytes of one CPU's state of a client, by algorithm (its map's value). */
SL_INLINE __u32 sl_state_size(__u32 algorithm)
{
	switch (algorithm) {
	case SL_ALGO_SLIDING_PLAIN:
	case SL_ALGO_SLIDING_COUNTER:
		return sizeof(struct sl_client_plain);
	case SL_ALGO_SLIDING_LOG:
		return sizeof(struct sl_client_log);
	default:
		return sizeof(struct sl_client);
	}
}

/* What `used` is compared with: the limit, or a bucket's capacity. */
SL_INLINE __u64 sl_rule_quota(const struct sl_rule *rule)
{
	return rule->algorithm == SL_ALGO_TOKEN_BUCKET ?
	       rule->bucket_capacity : rule->limit;
}

/* A rule's parameters as the algorithms read them. */
SL_INLINE void sl_params_from_rule(struct sl_params *p,
				   const struct sl_rule *rule)
{
	p->limit = sl_rule_quota(rule);
	p->window_ms = rule->window_ms;
	p->slice_ms = rule->slice_ms;
	p->algorithm = rule->algorithm;
	p->pad = 0;
	p->token_ns = rule->token_ns;
	/* how long a CPU's state can matter after its last accept: a window;
	 * slices rounded up cover a little more, and the counter also weighs
	 * the slice before them; a bucket refills in capacity x token interval
	 */
	if (rule->algorithm == SL_ALGO_SLIDING_PLAIN ||
	    rule->algorithm == SL_ALGO_SLIDING_COUNTER)
		p->idle_ms = ((__u64)sl_plain_slices(p) +
			      (rule->algorithm == SL_ALGO_SLIDING_COUNTER)) *
			     rule->slice_ms;
	else if (rule->algorithm == SL_ALGO_TOKEN_BUCKET)
		p->idle_ms = (rule->bucket_capacity * rule->token_ns + 999999) /
			     1000000;
	else
		p->idle_ms = rule->window_ms;
}

/* Each map's state has its own tally and charge, so that the kernel calls
 * the one that matches the map it looked up (the verifier checks every
 * access against that map's value size); sl_tally_add() and sl_charge()
 * pick by algorithm for userspace.
 */

/* sl_clients: sliding, fixed, token-bucket. */
SL_INLINE void sl_client_tally(struct sl_tally *t, const struct sl_client *c,
			       const struct sl_params *p, __u64 now_ms)
{
	if (!sl_hdr_tally(t, (const struct sl_client_hdr *)c, p, now_ms))
		return;
	switch (p->algorithm) {
	case SL_ALGO_FIXED:
		sl_fixed_tally(t, c, p, now_ms);
		break;
	case SL_ALGO_TOKEN_BUCKET:
		sl_bucket_tally(t, c, p, now_ms);
		break;
	default:
		sl_sliding_tally(t, c, p, now_ms);
		break;
	}
}

SL_INLINE void sl_plain_slot_tally(struct sl_tally *t,
				   const struct sl_slot *s,
				   const struct sl_params *p,
				   const struct sl_slot_walk *w)
{
	if (p->algorithm == SL_ALGO_SLIDING_COUNTER)
		sl_counter_tally_slot(t, s, p, w);
	else
		sl_plain_tally_slot(t, s, p, w);
}

#ifndef __BPF__
SL_INLINE void sl_client_plain_tally(struct sl_tally *t,
				     const struct sl_client_plain *c,
				     const struct sl_params *p, __u64 now_ms)
{
	struct sl_slot_walk w;
	int i;

	if (!sl_hdr_tally(t, (const struct sl_client_hdr *)c, p, now_ms))
		return;
	sl_slot_walk_init(&w, p, now_ms);
	for (i = 0; i < SL_MAX_PLAIN_SLICES; i++)
		sl_plain_slot_tally(t, &c->slot[i], p, &w);
}
#endif

/* After the last tally: algorithms whose verdict is not a plain sum turn
 * their sums into `used` here.
 */
SL_INLINE void sl_tally_finish(struct sl_tally *t, const struct sl_params *p,
			       __u64 now_ms)
{
	if (p->algorithm == SL_ALGO_SLIDING_COUNTER)
		sl_counter_finish(t, p, now_ms);
	else if (p->algorithm == SL_ALGO_TOKEN_BUCKET)
		sl_bucket_finish(t, p, now_ms);
}

/* Account an accepted request of `units` in the client's state; `t` is the
 * (finished) tally the decision was made on. Returns false if the accept
 * no longer fits (token-bucket: another CPU took the tokens since the
 * tally): nothing is charged, and the request is over the limit.
 */
SL_INLINE int sl_client_charge(struct sl_client *c, const struct sl_params *p,
			       const struct sl_tally *t, __u64 now_ms,
			       __u32 units)
{
	__u64 last = SL_LOAD(c->last_ms);
	int idle = sl_idle_since(last, p, now_ms);

	switch (p->algorithm) {
	case SL_ALGO_FIXED:
		sl_fixed_charge(c, p, now_ms, units, idle);
		break;
	case SL_ALGO_TOKEN_BUCKET:
		if (!sl_bucket_charge(c, p, t, now_ms, units))
			return 0;
		sl_bucket_charge_slots(c, p, now_ms, units);
		break;
	default:
		/* one CPU restarts an idle state: the one whose swap moves its
		 * last accept from the idle value it read to now
		 */
		sl_sliding_charge(c, p, t, now_ms, units,
				  idle && SL_CAS(&c->last_ms, last, now_ms) == last,
				  last);
		break;
	}
	sl_hdr_charge((struct sl_client_hdr *)c, p, now_ms, units);
	return 1;
}

#ifndef __BPF__
SL_INLINE void sl_tally_add(struct sl_tally *t, const void *state,
			    const struct sl_params *p, __u64 now_ms)
{
	if (sl_uses_slots(p->algorithm))
		sl_client_plain_tally(t, state, p, now_ms);
	else if (p->algorithm == SL_ALGO_SLIDING_LOG)
		sl_client_log_tally(t, state, p, now_ms);
	else
		sl_client_tally(t, state, p, now_ms);
}

SL_INLINE int sl_charge(void *state, const struct sl_params *p,
			const struct sl_tally *t, __u64 now_ms, __u32 units)
{
	if (sl_uses_slots(p->algorithm))
		return sl_client_plain_charge(state, p, now_ms, units);
	if (p->algorithm == SL_ALGO_SLIDING_LOG)
		return sl_client_log_charge(state, p, now_ms);
	return sl_client_charge(state, p, t, now_ms, units);
}
#endif

/* ---- userspace ---- */

#ifndef __BPF__
/* What counts of a client's state (a value of its algorithm's table). */
SL_INLINE void sl_tally_state(struct sl_tally *t, const void *state,
			      const struct sl_params *p, __u64 now_ms)
{
	sl_tally_init(t);
	sl_tally_add(t, state, p, now_ms);
	sl_tally_finish(t, p, now_ms);
}
#endif

/* ---- peer view ---- */

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

#ifndef __BPF__
/* The slices of a client's state: (start_ms, units) of what still counts
 * at now_ms, for the sender; each algorithm's own (sl_*_pieces, in its
 * header) says from when it sends each.
 */
SL_INLINE void sl_state_pieces(const void *state, const struct sl_params *p,
			       __u64 now_ms, sl_piece_fn fn, void *ctx)
{
	if (sl_client_idle(state, p, now_ms))
		return;
	switch (p->algorithm) {
	case SL_ALGO_TOKEN_BUCKET:
		sl_bucket_pieces(state, p, now_ms, fn, ctx);
		break;
	case SL_ALGO_SLIDING:
		sl_sliding_pieces(state, p, now_ms, fn, ctx);
		break;
	case SL_ALGO_SLIDING_PLAIN:
	case SL_ALGO_SLIDING_COUNTER:
		sl_plain_pieces(state, p, now_ms, fn, ctx);
		break;
	case SL_ALGO_FIXED:
		sl_fixed_pieces(state, p, now_ms, fn, ctx);
		break;
	case SL_ALGO_SLIDING_LOG:
		sl_log_pieces(state, p, now_ms, fn, ctx);
		break;
	}
}
#endif

#endif /* SL_ALGO_DISPATCH_H */
