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
 * sl_accept_at_ms() (include/sl_peer.h) walks to find Retry-After.
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
 * The `sliding` algorithm
 * -----------------------
 * A client's accepts are grouped into at most SL_RECORDS slices. Each slice
 * remembers the time of its first accept, and it is counted in full while
 * that first accept lies inside the window (now - W, now], and not at all
 * after. So the count ("used") is a lower bound of the accepts really inside
 * the window, and a client whose arrivals never exceed the limit L in any
 * window is never rejected (NFR-2).
 *
 * Slices are in time order, so at most one slice straddles now - W: the
 * uncounted accepts inside the window all belong to it. A slice closes once
 * the node has accepted `cap = L / (SL_RECORDS - 2) + 1` units since it
 * opened, so it hides fewer than cap: at most L - 1 + cap = 1.1 L accepts lie
 * in any window with SL_RECORDS = 12 (NFR-1). The slices are the node's own
 * (one record set per client for all CPUs), so the bound is at node level
 * whatever CPUs the packets arrive on, plus the per-CPU slack of decisions
 * taken at the same instant (above).
 *
 * A slice also closes at the rule's slice boundaries (window / slices, aligned
 * to the epoch), which makes the count follow the window as plain slices do,
 * but only while enough free records remain for the closes by count that the
 * rest of the limit may need; so the records never run out and the bound
 * above holds. On the design study's Model A patterns this gives exactly
 * the plain-slices figures.
 *
 * With unit bytes a slice closes only after the packet that reaches cap, and
 * the uncounted part can include that packet and exclude a small first one:
 * the bound becomes L + cap + two packets' bytes.
 *
 * The running total
 * -----------------
 * The count is not summed per decision. Beside its records the state keeps
 * `total`, the sum of the records' counts; `live`, how many have a count;
 * `oldest_ms`, the earliest first accept among them; and `open_seq`, the
 * accept sequence the open record opened at (the only record whose
 * sequence is read, so records are 8 bytes). Records open at now, so in
 * time order, and every record with a count is at least as young as the
 * oldest: while the oldest is inside the window, so is every record, and
 * the sum of the live records, which the decision needs, is `total`; the
 * first to leave is the oldest, at oldest_ms + W, the tally's next expiry.
 * (After a step back of the clock a record opened before it is ahead of
 * now; "earliest" is by wrapping difference, and a record opened after
 * the step is then the oldest, as it leaves first.) Only once the oldest
 * has left does the tally walk the records (the old sum), and the next
 * accept walks them too, retiring what has left and taking its count off
 * `total`, then finding the new oldest: a record is walked out once, so
 * the walks are amortised over the records' opens, at most one per slice
 * or per cap units. An accept that crosses no slice end reads the first
 * 64 bytes of the value and the open record, and writes the open record's
 * count and `total`. The same decisions, bit for bit, as the sum:
 * tests/unit/test_sliding_total.c runs both over random traces at today's
 * clock and at the wraps of the u32 stamps.
 *
 * Under concurrency (every CPU, SL_ADD and SL_CAS): every add to a
 * record's count is paired with the same add to `total`, made after it,
 * and every retire (a compare-and-swap of the count n its CPU found, to
 * 0) that succeeds with an add of -n after it; the add that takes a
 * record from no count to one (fetch-and-add returning 0) adds one to
 * `live`, a successful retire takes one off. So once the CPUs stop,
 * `total` and `live` are the records' sum and count exactly, and in
 * between `total` lags the records by the adds in flight: at most one
 * request per CPU below the sum (NFR-1's slack, as for two CPUs reading
 * the same count), and above it only by a count a retire has just
 * zeroed, which is out of the window: no tally reads `total` then,
 * because `oldest_ms` is still that record's, out of the window, and the
 * tally walks. `oldest_ms` may be left earlier than the records' oldest
 * (a walk's minimum, racing another's retire): that costs a walk, never
 * a record counted past its window. A CPU whose add finds a record
 * another CPU has just retired (count 0, not opened by it) restarts it at
 * now rather than leave its units at the retired time: its units are
 * counted for their own window, not lost as before. The tally is thus,
 * at every instant, within one unit per CPU of the records' live sum and
 * never above the accepts inside the window: the one-node bound (NFR-1)
 * and NFR-2 hold as argued above, the every-CPU bound of
 * tests/bpf/test_bpf_cpus.c as before (one unit per CPU per time the
 * count reaches the limit), and bounded's fleet bound, which reads the
 * node's own count through this tally and the records through
 * sl_state_pieces (include/sl_peer.h), unchanged.
 * tests/unit/test_sliding_total.c races threads over one state with the
 * kernel's atomics and checks the model.
 *
 * Time as an input
 * -----------------
 * `now_ms` is the TAI (or model) clock in ms: about 1.8e12 today, u64, no
 * wrap in any host's life. What a state keeps of it is narrower, and each
 * field says its range and what happens at its wrap (include/slicelimit.h
 * and below). The rule that makes every one of them exact: a state whose
 * last accept (u64 last_ms, exact) is a hold time behind now, or more than
 * SL_MAX_STEP_MS ahead of it, counts for nothing and starts clean at its
 * next accept (sl_client_idle); so every u32 stamp, slice or window
 * number a counting state holds is within 2^31 of now's, and is read by
 * wrapping difference. A number ahead of now's (the clock stepped back)
 * keeps its count where it was made: the client is held at most its hold
 * time plus the step, and nothing it was counted is forgotten.
 */
#ifndef SL_ALGO_H
#define SL_ALGO_H

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

/* ---- sliding ---- */

/* Whether wrapping u32 time `a` is before `b`: both within 2^31 of now in
 * a counting state (sl_client_idle), so of each other.
 */
SL_INLINE int sl_u32_before(__u32 a, __u32 b)
{
	return (__s32)(a - b) < 0;
}

/* The full sum over the records: what the window holds when a record
 * may have left it since the last walk (the running total still has it).
 */
SL_INLINE void sl_sliding_walk(struct sl_tally *t, const struct sl_client *c,
			       const struct sl_params *p, __u64 now_ms)
{
	int i;

	for (i = 0; i < SL_RECORDS; i++) {
		const struct sl_record *r = &c->rec[i];
		__u64 expiry;

		if (!sl_record_live(r, p, now_ms))
			continue;
		t->used += r->count;
		expiry = now_ms + sl_u32_ahead(r->first_ms, (__u32)now_ms) +
			 (p->window_ms - sl_record_age(r, now_ms));
		sl_tally_expiry(t, expiry);
	}
}

/* O(1) while no record has left the window: every record with a count
 * then counts (none is older than the oldest), so the running total is
 * the sum, and the oldest leaves first. Once it has left, the walk above,
 * until an accept retires it (sl_sliding_retire).
 */
SL_INLINE void sl_sliding_tally(struct sl_tally *t, const struct sl_client *c,
				const struct sl_params *p, __u64 now_ms)
{
	__u32 oldest = SL_LOAD(c->oldest_ms), age;

	if (!SL_LOAD(c->live))
		return;
	age = sl_u32_since(oldest, (__u32)now_ms);
	if (age >= p->window_ms) {
		sl_sliding_walk(t, c, p, now_ms);
		return;
	}
	t->used += SL_LOAD(c->total);
	sl_tally_expiry(t, now_ms + sl_u32_ahead(oldest, (__u32)now_ms) +
			   (p->window_ms - age));
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

/* Records that closes by count may still need before the client reaches
 * its limit, after a new slice that takes up to cap itself.
 */
SL_INLINE __u64 sl_records_needed(const struct sl_tally *t,
				  const struct sl_params *p, __u64 cap)
{
	__u64 left = p->limit > t->used + cap ? p->limit - t->used - cap : 0;

	return (left + cap - 1) / cap;
}

/* Distance between two u32 stamps, either way round; branch-free (it
 * runs in the retire walk, which the verifier walks once per record).
 */
SL_INLINE __u32 sl_u32_dist(__u32 a, __u32 b)
{
	__u32 d = a - b, m = (__u32)((__s32)d >> 31);

	return (d ^ m) - m;
}

/* Zero the records that have left the window, and in a restart of an
 * idle state (`restart`, its last accept at `last`) those of its last
 * period too, which can look live through u32 wrap-around or after a
 * step back of the clock, and not the ones other CPUs opened since the
 * restart began (a CPU can stall in it for many of their accepts). A
 * record of the last period was opened within a window before `last`
 * or, after a step back, at most SL_MAX_STEP_MS after it; one opened
 * since, at about now: so it is the one nearer `last` than now, told
 * exactly while the idle gap is under 2^31 ms; past that the u32 stamps
 * cannot tell, and every record is taken for the last period's. Each by
 * a compare-and-swap of the count this CPU found (an add that came in
 * between keeps the record), taking what the swap zeroed off the running
 * total. Returns the records left with a count, and sets oldest_ms to
 * the earliest of them (a record another CPU opens during the walk is at
 * least as young as any the walk saw).
 */
SL_INLINE __u32 sl_sliding_retire(struct sl_client *c,
				  const struct sl_params *p, __u64 now_ms,
				  int restart, __u64 last)
{
	__u64 gap = now_ms > last ? now_ms - last : last - now_ms;
	__u32 live = 0, oldest = (__u32)now_ms;
	__u32 every = restart && gap >= 0x80000000ULL;
	__u32 by_time = restart && !every;
	int i;

	for (i = 0; i < SL_RECORDS; i++) {
		struct sl_record *r = &c->rec[i];
		__u32 n = SL_LOAD(r->count);
		__u32 f = r->first_ms;
		__u32 of_last = (sl_u32_dist(f, (__u32)last) -
				 sl_u32_dist(f, (__u32)now_ms)) >> 31;

		__u32 stale = !sl_record_live(r, p, now_ms);

		if (n && (stale | every | (by_time & of_last)) &&
		    SL_CAS(&r->count, n, 0) == n) {
			SL_ADD(&c->total, -n);
			SL_ADD(&c->live, -1);
		}
		if (!SL_LOAD(r->count))
			continue;
		if (!live++ || sl_u32_before(r->first_ms, oldest))
			oldest = r->first_ms;
	}
	if (live)
		c->oldest_ms = oldest;
	return live;
}

/* A record with no count, for a new slice: the one after the open one,
 * which records opened in time order and retired oldest first leave
 * free whenever any is; else (a step back of the clock retired them out
 * of order) the first free. SL_RECORDS if none.
 */
SL_INLINE __u32 sl_sliding_free(const struct sl_client *c, __u32 cur_idx)
{
	__u32 next = cur_idx + 1 < SL_RECORDS ? cur_idx + 1 : 0;
	int i;

	if (!SL_LOAD(c->rec[next].count))
		return next;
	for (i = 0; i < SL_RECORDS; i++)
		if (!SL_LOAD(c->rec[i].count))
			return i;
	return SL_RECORDS;
}

SL_INLINE void sl_sliding_charge(struct sl_client *c,
				 const struct sl_params *p,
				 const struct sl_tally *t, __u64 now_ms,
				 __u32 units, int restart, __u64 last)
{
	__u64 cap = sl_slice_cap(p);
	struct sl_record *cur;
	__u32 live = SL_LOAD(c->live), cur_idx;
	int open = 0;

	/* Zero what has left the window, only once the oldest has: a free
	 * record is then simply one with count 0, and no stale time
	 * survives to wrap around. A state whose slices no longer count
	 * (idle) starts clean, so no ancient time can look young through
	 * u32 wrap-around: the one CPU that restarts it (`restart`) zeroes
	 * its last period's records. One walk for both: the verifier meets
	 * it once.
	 */
	if (live && (restart || sl_u32_since(SL_LOAD(c->oldest_ms),
					     (__u32)now_ms) >= p->window_ms))
		live = sl_sliding_retire(c, p, now_ms, restart, last);

	cur_idx = c->current < SL_RECORDS ? c->current : 0;
	cur = &c->rec[cur_idx];
	if (!cur->count) {
		open = 1;
	} else if ((__u32)(t->seq - c->open_seq) >= cap) {
		open = 1;
	} else {
		__u64 first = now_ms - sl_record_age(cur, now_ms);

		if (first / p->slice_ms != now_ms / p->slice_ms &&
		    live + 1 + sl_records_needed(t, p, cap) <= SL_RECORDS)
			open = 1;
	}
	/* With no free record (cannot happen while the needed-records check
	 * holds) the open slice keeps counting: the count stays a lower bound.
	 * A free record's count is 0 already, so opening writes no count:
	 * two CPUs opening the same record at once both keep their units.
	 */
	if (open && cur->count) {
		__u32 free_idx = sl_sliding_free(c, cur_idx);

		open = free_idx < SL_RECORDS;
		if (open)
			cur_idx = free_idx;
	}
	cur = &c->rec[cur_idx < SL_RECORDS ? cur_idx : 0];
	if (open) {
		cur->first_ms = (__u32)now_ms;
		c->open_seq = t->seq;
		c->current = cur_idx;
	}
	/* The add that takes a record from no count to one counts it live,
	 * and makes now the oldest time if no other record has a count or
	 * (the clock stepped back) all are ahead. Not opened here, that is
	 * another CPU's retire: it zeroed the record after this CPU read it,
	 * so the time it kept is out of the window; the record starts again
	 * now, with these units, rather than hold them at a time the total
	 * would count them past.
	 */
	if (!sl_fetch_add_u32(&cur->count, units)) {
		if (!open)
			cur->first_ms = (__u32)now_ms;
		if (!sl_fetch_add_u32(&c->live, 1) ||
		    sl_u32_before((__u32)now_ms, SL_LOAD(c->oldest_ms)))
			c->oldest_ms = (__u32)now_ms;
	}
	SL_ADD(&c->total, units);
}

/* ---- sliding-plain: the study's sum of the last N slices ---- */

/* Slices that cover the window: the rule's slice length is rounded up
 * (see check_algorithm()), so there are never more than the rule asked
 * for and the ring holds them all; the cap only guards bad input.
 */
SL_INLINE __u32 sl_plain_slices(const struct sl_params *p)
{
	__u32 n = (p->window_ms + p->slice_ms - 1) / p->slice_ms;

	return n < 1 ? 1 : n > SL_MAX_PLAIN_SLICES ? SL_MAX_PLAIN_SLICES : n;
}

/* What every slot of one walk of the ring shares, worked out once before
 * it: the walk visits every slot, and two divisions per slot would cost
 * more than the rest of the walk.
 */
struct sl_slot_walk {
	__u64 slice;		/* now_ms / slice_ms: the current slice */
	__u32 n;		/* sl_plain_slices() */
	__u32 pad;
};

SL_INLINE void sl_slot_walk_init(struct sl_slot_walk *w,
				 const struct sl_params *p, __u64 now_ms)
{
	w->slice = now_ms / p->slice_ms;
	w->n = sl_plain_slices(p);
	w->pad = 0;
}

/* One slot of the ring; the kernel walks the ring with bpf_loop (one body
 * to verify: 6.1's verifier gives up on 64 unrolled-by-exploration steps).
 */
SL_INLINE void sl_plain_tally_slot(struct sl_tally *t, const struct sl_slot *s,
				   const struct sl_params *p,
				   const struct sl_slot_walk *w)
{
	__u32 n = w->n;
	__u32 back = sl_u32_since(s->slice, (__u32)w->slice);	/* slices ago */
	__u32 ahead = sl_u32_ahead(s->slice, (__u32)w->slice);

	if (!s->count || back >= n)
		return;
	t->used += s->count;
	/* counted until slice s->slice + n begins */
	sl_tally_expiry(t, (w->slice + ahead + (n - back)) * p->slice_ms);
}

/* Slice numbers are now_ms / slice_ms cut to u32: they wrap every 2^32
 * slices (49.7 days of 1 ms slices), and as 2^32 is a multiple of the
 * ring's size the slot of a slice does not move at the wrap. A counting
 * state's slots are within 2^31 slices of now's (sl_client_idle, and
 * sl_plain_charge clearing the ring of an idle state), so the wrapping
 * difference of sl_plain_tally_slot is exact.
 */
SL_INLINE void sl_plain_charge(struct sl_client_plain *c,
			       const struct sl_params *p, __u64 now_ms,
			       __u32 units, int idle, int restart,
			       __u32 last_slice)
{
	__u32 d = now_ms / p->slice_ms;
	int i;

	/* an idle state's slots are of any age, and one 2^32 slices old
	 * would count as new: they go. Only the CPU that restarts the
	 * state (sl_client_plain_charge) zeroes them, and only slots of
	 * its last period (at or before the slice of its last accept),
	 * each by a swap of the slot it found: what other CPUs count while
	 * this one stalls here is in slices after that, or in a slot
	 * whose word changed, and stays.
	 */
	if (restart)
		for (i = 0; i < SL_MAX_PLAIN_SLICES; i++) {
			struct sl_slot s = sl_slot_load(&c->slot[i]);

			if (s.count && (__s32)(last_slice - s.slice) >= 0)
				SL_CAS((sl_slot_word *)&c->slot[i],
				       sl_slot_pack(s), 0);
		}
	/* the ring holds SL_MAX_PLAIN_SLICES >= n slices: what this slot
	 * held, if another slice, is out of the window, unless it is ahead
	 * (the clock stepped back)
	 */
	sl_slot_add(&c->slot[d % SL_MAX_PLAIN_SLICES], d, units,
		    idle ? 0 : sl_max_ahead(p->slice_ms));
}

/* ---- fixed window ---- */

/* The window is a slot, so that opening a window and counting in it is
 * one atomic step. Its number, now_ms / window_ms cut to u32, is past 2^31
 * at today's clock for short windows and wraps every 2^32 windows; it is
 * read by wrapping difference, exact because a counting
 * state's window is the current one, the one before, or one ahead within
 * sl_max_ahead() (sl_client_idle; sl_fixed_charge takes an idle state's
 * slot over whatever it holds).
 */
SL_INLINE void sl_fixed_tally(struct sl_tally *t, const struct sl_client *c,
			      const struct sl_params *p, __u64 now_ms)
{
	__u64 w = now_ms / p->window_ms;
	struct sl_slot f = sl_slot_load(&c->fixed);
	__u32 ahead = f.slice - (__u32)w;

	/* a window ahead of now: the clock stepped back; keep its count */
	if (f.slice != (__u32)w &&
	    !sl_slot_ahead(f, (__u32)w, sl_max_ahead(p->window_ms)))
		return;
	t->used += f.count;
	sl_tally_expiry(t, (w + ahead + 1) * p->window_ms);
}

SL_INLINE void sl_fixed_charge(struct sl_client *c, const struct sl_params *p,
			       __u64 now_ms, __u32 units, int idle)
{
	sl_slot_add(&c->fixed, (__u32)(now_ms / p->window_ms), units,
		    idle ? 0 : sl_max_ahead(p->window_ms));
}

/* ---- sliding-counter: the last N slices in full, and the slice before
 * them weighted by the part of it still inside the window. With one slice
 * this is the common two-window counter (previous window weighted by the
 * unelapsed fraction of the current one); with 12 it is the study's
 * "oldest slice weighted" counter. Same ring of slices as sliding-plain.
 */
SL_INLINE void sl_counter_tally_slot(struct sl_tally *t,
				     const struct sl_slot *s,
				     const struct sl_params *p,
				     const struct sl_slot_walk *w)
{
	__u32 n = w->n;
	__u32 back = sl_u32_since(s->slice, (__u32)w->slice);
	__u32 ahead = sl_u32_ahead(s->slice, (__u32)w->slice);

	/* a slot ahead (the clock stepped back) counts in full, as in
	 * sl_plain_tally_slot; when a full slot starts to be weighed out
	 * goes to next_expiry, which sl_counter_finish reads
	 */
	if (back < n) {
		t->used += s->count;
		if (s->count)
			sl_tally_expiry(t, (w->slice + ahead + (n - back)) *
					   p->slice_ms);
	} else if (back == n)
		t->aux += s->count;	/* weighed in _finish */
}

/* estimate = full + oldest * (S - e) / S, e = time into the current slice.
 * floor(estimate) + 1 <= limit exactly when estimate < limit, so `used`
 * holds the floor and the common verdict stays exact for one unit. The
 * estimate only falls as time passes (slices leave it continuously):
 * next_expiry is the first ms at which it is below the limit; below it
 * already, the next ms `used` falls (a room the bounded layout takes from
 * it grows then); or the next slice, where the weights move on.
 */
SL_INLINE void sl_counter_weigh(struct sl_tally *t, const struct sl_params *p,
				__u64 now_ms, __u64 full, __u64 oldest,
				int full_ends_known)
{
	__u64 S = p->slice_ms, e = now_ms % S, start = now_ms - e;
	__u64 weighed = oldest * (S - e) / S, below, need, e_min;

	t->used = full + weighed;
	if (!full && !oldest)
		return;
	/* at the limit on the full slices alone, nothing falls before the
	 * first of them starts to be weighed out: when next_expiry holds the
	 * full slices' ends already (the node's own tally), that, which
	 * after a step back of the clock (slots ahead) is much later than
	 * the next slice, where stepping slice by slice would not reach it.
	 * `full_ends_known` is a constant at each caller: no path of its own
	 * for the verifier.
	 */
	if (full_ends_known && full >= p->limit)
		return;
	if (full >= p->limit || !oldest) {
		sl_tally_expiry(t, start + S);
		return;
	}
	below = t->used >= p->limit ? p->limit - full : weighed;
	if (!below) {
		sl_tally_expiry(t, start + S);
		return;
	}
	/* smallest e' with oldest * (S - e') < below * S */
	need = (below * S + oldest - 1) / oldest;	/* ceil */
	e_min = S + 1 > need ? S + 1 - need : 0;
	sl_tally_expiry(t, e_min > e && e_min < S ? start + e_min : start + S);
}

/* The node's own estimate; `aux` keeps the oldest slice's units, from
 * which the peers' part recovers the full slices (sl_peer_tally_counter).
 */
SL_INLINE void sl_counter_finish(struct sl_tally *t, const struct sl_params *p,
				 __u64 now_ms)
{
	sl_counter_weigh(t, p, now_ms, t->used, t->aux, 1);
}

/* ---- token-bucket (GCRA): accept while TAT - now <= (capacity - 1) * T,
 * i.e. while the tokens in use, ceil((TAT - now) / T), are below the
 * capacity. The TAT moves by compare-and-swap, and the accept is decided
 * again on the TAT the swap replaces (sl_bucket_charge): CPUs deciding the
 * same client at once take each token once. Beside it the state keeps its
 * accepts per peer slice, which only the fleet's level reads
 * (include/sl_peer.h, sl_peer_tally_bucket).
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
 * SL_BUCKET_SLOTS of them (include/sl_peer.h), so they span
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

/* ---- sliding-log: every accept time, exact ---- */

/* All ones if a < b, else 0; branch-free (BPF has no conditional move,
 * and a branch per step of a search multiplies the verifier's paths).
 */
SL_INLINE __u32 sl_mask_lt(__u32 a, __u32 b)
{
	__u64 d = (__u64)a - b;

	/* hide that the sign of d is a < b, or the compiler turns the mask
	 * back into a branch
	 */
	__asm__ volatile("" : "+r"(d));
	return -(__u32)(d >> 63);
}

/* Index (in accept order) of the oldest accept still in the window. Times
 * only grow along the ring, so a binary search over the valid entries finds
 * it, in a fixed 13 branch-free steps (2^13 > SL_MAX_LOG).
 */
SL_INLINE __u32 sl_log_first_live(const struct sl_client_log *c,
				  const struct sl_params *p, __u64 now_ms)
{
	__u32 valid = c->accepted - c->current;
	__u32 count = valid < SL_MAX_LOG ? valid : SL_MAX_LOG;
	__u32 base = c->accepted - count, lo = 0, hi = count;
	int i;

	SL_UNROLL
	for (i = 0; i < 13; i++) {
		__u32 mid = lo + (hi - lo) / 2;
		__u32 age = sl_u32_since(c->stamp_ms[(base + mid) &
						     (SL_MAX_LOG - 1)],
					 (__u32)now_ms);
		__u32 active = sl_mask_lt(lo, hi);
		__u32 live = sl_mask_lt(age, p->window_ms);

		hi = (hi & ~(active & live)) | (mid & active & live);
		lo = (lo & ~(active & ~live)) | ((mid + 1) & active & ~live);
	}
	return base + lo;
}

SL_INLINE void sl_log_tally(struct sl_tally *t, const struct sl_client_log *c,
			    const struct sl_params *p, __u64 now_ms)
{
	__u32 first = sl_log_first_live(c, p, now_ms);
	__u32 oldest;

	if (first == c->accepted)
		return;
	t->used += c->accepted - first;
	oldest = c->stamp_ms[first & (SL_MAX_LOG - 1)];
	sl_tally_expiry(t, now_ms + sl_u32_ahead(oldest, (__u32)now_ms) +
			   (p->window_ms - sl_u32_since(oldest, (__u32)now_ms)));
}

SL_INLINE void sl_log_charge(struct sl_client_log *c, __u64 now_ms)
{
	/* one entry per accept (the log counts requests, units of 1),
	 * claimed and counted in one step: CPUs accepting at once get
	 * entries of their own
	 */
	__u32 at = sl_fetch_add_u32(&c->accepted, 1);

	c->stamp_ms[at & (SL_MAX_LOG - 1)] = (__u32)now_ms;
}

/* ---- dispatch ---- */

/* Algorithms whose state is a ring of slices (sl_clients_plain). */
SL_INLINE int sl_uses_slots(__u32 algorithm)
{
	return algorithm == SL_ALGO_SLIDING_PLAIN ||
	       algorithm == SL_ALGO_SLIDING_COUNTER;
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

/* Each map's state has its own tally and charge, so that the kernel calls
 * the one that matches the map it looked up (the verifier checks every
 * access against that map's value size); sl_tally_add() and sl_charge()
 * pick by algorithm for userspace.
 */

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

SL_INLINE void sl_client_log_tally(struct sl_tally *t,
				   const struct sl_client_log *c,
				   const struct sl_params *p, __u64 now_ms)
{
	if (sl_hdr_tally(t, (const struct sl_client_hdr *)c, p, now_ms))
		sl_log_tally(t, c, p, now_ms);
}

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

SL_INLINE int sl_client_plain_charge(struct sl_client_plain *c,
				     const struct sl_params *p,
				     __u64 now_ms, __u32 units)
{
	__u64 last = SL_LOAD(c->last_ms);
	int idle = sl_idle_since(last, p, now_ms);

	/* one CPU restarts an idle ring: the one whose swap moves its last
	 * accept from the idle value it read to now (as sl_client_charge)
	 */
	sl_plain_charge(c, p, now_ms, units, idle,
			idle && SL_CAS(&c->last_ms, last, now_ms) == last,
			last / p->slice_ms);
	sl_hdr_charge((struct sl_client_hdr *)c, p, now_ms, units);
	return 1;
}

/* The log counts requests: one entry, one unit, whatever `units` says.
 * The restart after an idle window moves `current` only from the value
 * this CPU found, and to `accepted` as read before idleness was seen:
 * other CPUs that accept while this one stalls between the two keep
 * their entries; a CPU restarting it at the same instant as another
 * accepts keeps that accept's entry unless it read `accepted` after it,
 * at most one entry per CPU once per idle period.
 */
SL_INLINE int sl_client_log_charge(struct sl_client_log *c,
				   const struct sl_params *p, __u64 now_ms)
{
	__u32 cur = SL_LOAD(c->current);
	__u32 before = SL_LOAD(c->accepted);

	__asm__ volatile("" ::: "memory");
	/* the valid entries start at the first still in the window (none
	 * if idle): a client that never idles keeps no stamp older than
	 * two windows, whose u32 age could wrap and look young to the
	 * search of sl_log_first_live
	 */
	if (sl_client_idle((struct sl_client_hdr *)c, p, now_ms))
		SL_CAS(&c->current, cur, before);
	else
		SL_CAS(&c->current, cur, sl_log_first_live(c, p, now_ms));
	sl_log_charge(c, now_ms);	/* counts the accept itself */
	sl_hdr_touch((struct sl_client_hdr *)c, now_ms);
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

#endif /* SL_ALGO_H */
