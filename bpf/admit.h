/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Probation for a key the client tables do not hold (include/
 * sl_newcomer.h): a one-packet source costs a bucket entry, not a state.
 */
#ifndef SL_BPF_ADMIT_H
#define SL_BPF_ADMIT_H

#include "maps.h"
#include "sl_newcomer.h"
#include "sl_peer.h"
#include "state.h"

/* sl_admit's answers beside SL_ACCEPT and SL_FAIL_OPEN: the key has a
 * state now (look it up), and it was promoted: its first accept, in
 * `first`, is still to be charged into the new state.
 */
enum {
	SL_ADMITTED = 3,
	SL_PROMOTED = 4,
};

/* The newcomers' bucket a key waits in, and in `tag` its tag there; NULL
 * when the key is to have a state at once (no probation).
 */
static __always_inline struct sl_newcomer_bucket *
sl_admit_bucket(const struct sl_client_key *key,
		const struct sl_sync_conf *sc, __u32 *tag)
{
	const struct sl_newcomer_conf *conf;
	__u32 idx, zero = 0;
	__u64 h;

	conf = bpf_map_lookup_elem(&sl_newcomer_conf, &zero);
	if (!conf || !conf->buckets)
		return NULL;
	/* a key the peers count is no one-packet source */
	if (sl_peer_layout_counts(sc) && bpf_map_lookup_elem(&sl_peer_view, key))
		return NULL;
	/* bounded shares the fleet's room by what each node's states hold:
	 * an accept on probation is in none of them and reaches no peer,
	 * so a fleet that shares a room gives every key a state at once
	 */
	if (sc && sc->layout == SL_LAYOUT_BOUNDED && sc->live_nodes > 1)
		return NULL;
	h = sl_newcomer_hash(key, conf->seed);
	idx = sl_newcomer_index(h, conf->buckets);
	*tag = sl_newcomer_tag(h);
	return bpf_map_lookup_elem(&sl_newcomers, &idx);
}

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
	struct sl_newcomer_bucket *b;
	struct sl_global_stats *gs;
	__u32 first_tag = 0, first_units = 0;
	__u64 first_ms = 0;
	struct sl_tally empty;
	__u64 now_ms;
	__u32 tag, r;
	int way, free, fits, written = 0, displaced = 0;

	if (!key_arg || !p || !first_out)
		return SL_FAIL_OPEN;
	/* on the stack, as in sl_decide() */
	key_copy = *key_arg;
	b = sl_admit_bucket(key, sc, &tag);
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

#endif /* SL_BPF_ADMIT_H */
