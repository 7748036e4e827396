/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The counting and decision algorithm, written once and compiled into both
 * the BPF object and userspace (query, Retry-After, tests). Every function
 * takes `now_ms` as an argument: the caller owns the clock.
 *
 * Every algorithm is three functions over a client's state: tally (add what
 * still counts at `now` to a sum), charge (record an accept), and the sum's
 * verdict `used < limit`. The sum's next_expiry_ms is the earliest time the
 * verdict can change, which the kernel caches for floods and
 * sl_accept_at_ms() (include/peer/accept_at.h) walks to find Retry-After.
 *
 * One state per client, shared by every CPU
 * -----------------------------------------
 * A client's state is one record in a (non-per-CPU) LRU hash that every
 * CPU reads and writes, not one record per CPU. So a decision reads one
 * record, whatever the CPU count, memory per client does not grow with the
 * CPUs, and a sync round copies one value per changed client. The record
 * is written only on accept (and once per cache refresh on the over-limit
 * path): accepts are bounded by the limit, so the cache line moves between
 * CPUs at most `limit` times a window per client, while a flood, which is
 * what arrives at line rate, only reads it. Counts grow by atomic adds
 * (SL_ADD), so accepts on different CPUs at once are all counted.
 *
 * Why one shared record rather than per-CPU records or allowances: see
 * docs/DESIGN.md, "Why one record for every CPU". Why no accept is lost
 * when CPUs decide the same client at once, and what that costs: see
 * docs/ACCURACY.md, "Why no accept is lost to another CPU".
 *
 * Time as an input
 * -----------------
 * `now_ms` is the TAI (or model) clock in ms: about 1.8e12 today, u64, no
 * wrap in any host's life. What a state keeps of it is narrower, and each
 * field says its range and what happens at its wrap (include/types/state.h
 * and below). The rule that makes every one of them exact: a state whose
 * last accept (u64 last_ms, exact) is a hold time behind now, or more than
 * SL_MAX_STEP_MS ahead of it, counts for nothing and starts clean at its
 * next accept (sl_client_idle); so every u32 stamp, slice or window
 * number a counting state holds is within 2^31 of now's, and is read by
 * wrapping difference. A number ahead of now's (the clock stepped back)
 * keeps its count where it was made: the client is held at most its hold
 * time plus the step, and nothing it was counted is forgotten.
 */
#ifndef SL_ALGO_COMMON_H
#define SL_ALGO_COMMON_H

#include <linux/types.h>
#include "slicelimit.h"

#ifdef __BPF__
#define SL_INLINE static __always_inline
#else
#define SL_INLINE static inline
#endif

#define SL_NEVER	(~0ULL)

/* Counts in a shared state grow by atomic adds, and words that more than
 * one CPU replaces move by compare-and-swap (SL_CAS returns the value it
 * found: the swap happened if that is `old`); userspace runs the same code
 * on private copies. SL_LOAD reads a word other CPUs write once, so that
 * a check and the swap after it see the same value.
 */
#if defined(__BPF__) || defined(SL_HOST_ATOMICS)
/* SL_HOST_ATOMICS: the kernel's atomics on the host, for a test that
 * races threads over one state as CPUs race over a map value.
 */
#define SL_ADD(ptr, v)	((void)__sync_fetch_and_add(ptr, v))
#define SL_CAS(ptr, old, new)	__sync_val_compare_and_swap(ptr, old, new)
#else
#define SL_ADD(ptr, v)	((void)(*(ptr) += (v)))
/* A test may define its own SL_CAS first, to run another CPU's
 * decisions between a CPU's reads of the state and its swap.
 */
#ifndef SL_CAS
#define SL_CAS(ptr, old, new)	sl_cas_private(ptr, old, new, sizeof(*(ptr)))
#endif

static inline __u64 sl_cas_private(void *ptr, __u64 old, __u64 new,
				   unsigned size)
{
	__u64 cur = size == 8 ? *(__u64 *)ptr : *(__u32 *)ptr;

	if (cur != old)
		return cur;
	if (size == 8)
		*(__u64 *)ptr = new;
	else
		*(__u32 *)ptr = (__u32)new;
	return cur;
}
#endif
#define SL_LOAD(x)	(*(volatile __typeof__(x) *)&(x))

/* Compare-and-swap attempts before an update gives up exactness: each
 * failed one means another CPU's update of the same word succeeded, so
 * the state moved on; past this many the update is made by an atomic add
 * (counted, at most one unit per CPU off, as for the sums).
 */
#define SL_CAS_TRIES	8

/* The value before the add: an index two CPUs must not share. */
SL_INLINE __u32 sl_fetch_add_u32(__u32 *ptr, __u32 v)
{
#if defined(__BPF__) || defined(SL_HOST_ATOMICS)
	return __sync_fetch_and_add(ptr, v);
#else
	__u32 old = *ptr;

	*ptr += v;
	return old;
#endif
}

/* Fully unrolled loops give the verifier straight code to walk once. */
#ifdef __clang__
#define SL_UNROLL	_Pragma("unroll")
#else
#define SL_UNROLL
#endif

/* What the algorithm needs of a rule. */
struct sl_params {
	__u64 limit;		/* units per window, >= 1; token-bucket: capacity */
	__u32 window_ms;	/* 1 .. SL_MAX_WINDOW_MS */
	__u32 slice_ms;		/* 1 .. window_ms */
	__u32 algorithm;	/* enum sl_algorithm */
	__u32 pad;
	__u64 token_ns;		/* token-bucket: refill interval per unit */
	__u64 idle_ms;		/* after this long without an accept, the
				 * client's state counts for nothing */
};

/* What counts of a client's state at one instant. */
struct sl_tally {
	__u64 used;		/* units counted inside the window */
	__u64 next_expiry_ms;	/* when the first counted slice leaves it */
	__u64 aux;		/* counter: the weighted slice; bucket: TAT */
	__u32 seq;		/* the client's accept sequence */
	__u32 event_age_ms;	/* since the last drop event */
};

SL_INLINE void sl_tally_init(struct sl_tally *t)
{
	t->used = 0;
	t->next_expiry_ms = SL_NEVER;
	t->aux = 0;
	t->seq = 0;
	t->event_age_ms = ~0u;
}

SL_INLINE __u64 sl_slice_cap(const struct sl_params *p)
{
	return p->limit / (SL_RECORDS - 2) + 1;
}

/* A state whose last accept is a window old holds nothing that still counts.
 * Checked before any record so that an ancient record can never look young
 * through u32 wrap-around. Nor does one whose last accept is more than
 * SL_MAX_STEP_MS ahead (the clock stepped back further): its u32 numbers
 * could no longer be told from past ones.
 */
SL_INLINE int sl_idle_since(__u64 last_ms, const struct sl_params *p,
			    __u64 now_ms)
{
	__s64 age = (__s64)(now_ms - last_ms);

	return age >= (__s64)p->idle_ms || age < -(__s64)SL_MAX_STEP_MS;
}

SL_INLINE int sl_client_idle(const struct sl_client_hdr *c,
			     const struct sl_params *p, __u64 now_ms)
{
	return sl_idle_since(c->last_ms, p, now_ms);
}

/* Slices of `len_ms` a number made before a step back can be ahead of
 * now's in a counting state: SL_MAX_STEP_MS of them, and the one it was
 * made in. Beyond that a number "ahead" is a stale one that wrapped.
 */
SL_INLINE __u32 sl_max_ahead(__u32 len_ms)
{
	return (__u32)SL_MAX_STEP_MS / (len_ms ? len_ms : 1) + 1;
}

/* Time or slices since `then`, wrapping u32 arithmetic; a `then` in the
 * future (the clock stepped back) counts as now, so a step back keeps every
 * count instead of forgetting them all. Branch-free: it runs inside loops
 * that the verifier walks once per iteration.
 */
SL_INLINE __u32 sl_u32_since(__u32 then, __u32 now)
{
	__u32 d = now - then;

	return d & ~(__u32)((__s32)d >> 31);
}

/* How far `then` is ahead of `now` (the clock stepped back), 0 if not:
 * what sl_u32_since() takes for now, added back where a count ends.
 */
SL_INLINE __u32 sl_u32_ahead(__u32 then, __u32 now)
{
	return sl_u32_since(now, then);
}

SL_INLINE __u32 sl_record_age(const struct sl_record *r, __u64 now_ms)
{
	return sl_u32_since(r->first_ms, (__u32)now_ms);
}

SL_INLINE int sl_record_live(const struct sl_record *r,
			     const struct sl_params *p, __u64 now_ms)
{
	return r->count && sl_record_age(r, now_ms) < p->window_ms;
}

SL_INLINE void sl_tally_expiry(struct sl_tally *t, __u64 expiry_ms)
{
	if (expiry_ms < t->next_expiry_ms)
		t->next_expiry_ms = expiry_ms;
}

/* A slot as the one 64-bit word it is (struct sl_slot is 8-aligned). */
typedef __u64 __attribute__((__may_alias__)) sl_slot_word;

SL_INLINE __u64 sl_slot_pack(struct sl_slot s)
{
	__u64 w;

	__builtin_memcpy(&w, &s, sizeof(w));
	return w;
}

/* Slice and count read together, as one CPU last wrote them. */
SL_INLINE struct sl_slot sl_slot_load(const struct sl_slot *s)
{
	__u64 w = SL_LOAD(*(const sl_slot_word *)s);
	struct sl_slot r;

	__builtin_memcpy(&r, &w, sizeof(r));
	return r;
}

/* Whether slot `s` holds a count of a slice 1 .. max_ahead ahead of `d`
 * (the clock stepped back). An empty slot is never ahead: a fresh state's
 * {0, 0} would otherwise be ahead of every slice number past 2^31. A
 * slice further ahead is one that wrapped: old, not ahead.
 */
SL_INLINE int sl_slot_ahead(struct sl_slot s, __u32 d, __u32 max_ahead)
{
	return s.count && s.slice - d - 1 < max_ahead;
}

/* Add `units` to slot `s` for slice `d`. A slot holding another slice is
 * taken over with one compare-and-swap of slice and count together: the
 * CPU whose swap wins starts the new count with its units, the others see
 * the new slice and add. A slot holding a slice ahead of `d` within
 * `max_ahead` (sl_slot_ahead) keeps its count and is added to, rather
 * than taken over: the units then count until that slice's end, later
 * than their own, never less.
 */
SL_INLINE void sl_slot_add(struct sl_slot *s, __u32 d, __u32 units,
			   __u32 max_ahead)
{
	sl_slot_word *w = (sl_slot_word *)s;
	struct sl_slot seen, next = { .slice = d, .count = units };
	int i;

	for (i = 0; i < SL_CAS_TRIES; i++) {
		seen = sl_slot_load(s);
		if (seen.slice == d || sl_slot_ahead(seen, d, max_ahead))
			break;
		if (SL_CAS(w, sl_slot_pack(seen), sl_slot_pack(next)) ==
		    sl_slot_pack(seen))
			return;
	}
	SL_ADD(&s->count, units);
}

/* Does a request of `units` fit? It must fit whole: a request that would
 * take the count over the limit is the one rejected.
 */
SL_INLINE int sl_tally_allows(const struct sl_tally *t,
			      const struct sl_params *p, __u32 units)
{
	return t->used + units <= p->limit;
}

SL_INLINE __u64 sl_remaining(const struct sl_tally *t,
			     const struct sl_params *p)
{
	return t->used < p->limit ? p->limit - t->used : 0;
}

/* The part of a tally every algorithm shares; false if nothing counts. */
SL_INLINE int sl_hdr_tally(struct sl_tally *t, const struct sl_client_hdr *h,
			   const struct sl_params *p, __u64 now_ms)
{
	__u32 age = (__u32)now_ms - h->event_ms;

	t->seq += h->accepted;
	/* drop events are once per window per client, not per CPU */
	if (h->event_ms && age < t->event_age_ms)
		t->event_age_ms = age;
	return !sl_client_idle(h, p, now_ms);
}

/* The latest accept. After a step back of the clock it stays where it
 * was, so the state keeps counting what it made ahead of now until the
 * clock is back there and a hold time on (sl_client_idle); unless the
 * state started over (a step back past SL_MAX_STEP_MS).
 */
SL_INLINE void sl_hdr_touch(struct sl_client_hdr *h, __u64 now_ms)
{
	__s64 d = (__s64)(now_ms - h->last_ms);

	if (d > 0 || d < -(__s64)SL_MAX_STEP_MS)
		h->last_ms = now_ms;
}

/* After an algorithm's own charge. */
SL_INLINE void sl_hdr_charge(struct sl_client_hdr *h,
			     const struct sl_params *p, __u64 now_ms,
			     __u32 units)
{
	SL_ADD(&h->accepted, units);
	sl_hdr_touch(h, now_ms);
}

/* What a sync round sends of a client: units whose earliest first accept
 * was at start_ms, one call per piece (each algorithm's sl_*_pieces).
 */
typedef void (*sl_piece_fn)(void *ctx, __u64 start_ms, __u32 units);

#endif /* SL_ALGO_COMMON_H */
