/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The counting and decision algorithm, written once and compiled into both
 * the BPF object and userspace (query, Retry-After, tests). Every function
 * takes `now_ms` as an argument: the caller owns the clock.
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
 * in any window with SL_RECORDS = 12 (NFR-1). Closing on the node's sequence
 * (the sum of all CPUs' accept counters), not on the CPU's own count, keeps
 * the bound at node level: the slices of all CPUs together straddle by less
 * than cap, whatever CPUs the packets arrive on (plus one unit per CPU for
 * accepts decided at the same instant).
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
 * Times are u32 milliseconds compared by wrapping difference: exact while
 * ages stay below 2^31 ms, which SL_MAX_WINDOW_MS and the idle reset ensure.
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

/* What the algorithm needs of a rule. */
struct sl_params {
	__u64 limit;		/* units per window, >= 1 */
	__u32 window_ms;	/* 1 .. SL_MAX_WINDOW_MS */
	__u32 slice_ms;		/* 1 .. window_ms */
};

/* A client's state summed over CPUs at one instant. */
struct sl_tally {
	__u64 used;		/* units counted inside the window */
	__u64 next_expiry_ms;	/* when the first counted slice leaves it */
	__u32 seq;		/* node accept sequence: sum of CPU counters */
	__u32 pad;
};

SL_INLINE void sl_tally_init(struct sl_tally *t)
{
	t->used = 0;
	t->next_expiry_ms = SL_NEVER;
	t->seq = 0;
	t->pad = 0;
}

SL_INLINE __u64 sl_slice_cap(const struct sl_params *p)
{
	return p->limit / (SL_RECORDS - 2) + 1;
}

/* A CPU whose last accept is a window old holds nothing that still counts.
 * Checked before any record so that an ancient record can never look young
 * through u32 wrap-around.
 */
SL_INLINE int sl_client_idle(const struct sl_client *c,
			     const struct sl_params *p, __u64 now_ms)
{
	return (__s64)(now_ms - c->last_ms) >= (__s64)p->window_ms;
}

SL_INLINE __u32 sl_record_age(const struct sl_record *r, __u64 now_ms)
{
	return (__u32)now_ms - r->first_ms;
}

SL_INLINE int sl_record_live(const struct sl_record *r,
			     const struct sl_params *p, __u64 now_ms)
{
	return r->count && sl_record_age(r, now_ms) < p->window_ms;
}

/* Add one CPU's state of a client to the tally. */
SL_INLINE void sl_tally_add(struct sl_tally *t, const struct sl_client *c,
			    const struct sl_params *p, __u64 now_ms)
{
	int i;

	t->seq += c->accepted;
	if (sl_client_idle(c, p, now_ms))
		return;
	for (i = 0; i < SL_RECORDS; i++) {
		const struct sl_record *r = &c->rec[i];
		__u64 expiry;

		if (!sl_record_live(r, p, now_ms))
			continue;
		t->used += r->count;
		expiry = now_ms + (p->window_ms - sl_record_age(r, now_ms));
		if (expiry < t->next_expiry_ms)
			t->next_expiry_ms = expiry;
	}
}

SL_INLINE int sl_tally_allows(const struct sl_tally *t,
			      const struct sl_params *p)
{
	return t->used < p->limit;
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

/* Account an accepted request of `units` on this CPU's state `c`; `t` is the
 * tally the decision was made on.
 */
SL_INLINE void sl_charge(struct sl_client *c, const struct sl_params *p,
			 const struct sl_tally *t, __u64 now_ms, __u32 units)
{
	__u64 cap = sl_slice_cap(p);
	struct sl_record *cur;
	__u32 live = 0, cur_idx, free_idx = SL_RECORDS;
	int open = 0, i;

	if (sl_client_idle(c, p, now_ms)) {
		for (i = 0; i < SL_RECORDS; i++)
			c->rec[i].count = 0;
	}
	/* Zero what has left the window: a free record is then simply one
	 * with count 0, and no stale time survives to wrap around.
	 */
	for (i = 0; i < SL_RECORDS; i++) {
		struct sl_record *r = &c->rec[i];

		if (r->count && !sl_record_live(r, p, now_ms))
			r->count = 0;
		if (r->count)
			live++;
		else if (free_idx == SL_RECORDS)
			free_idx = i;
	}

	cur_idx = c->current < SL_RECORDS ? c->current : 0;
	cur = &c->rec[cur_idx];
	if (!cur->count) {
		open = 1;
	} else if ((__u32)(t->seq - cur->seq) >= cap) {
		open = 1;
	} else {
		__u64 first = now_ms - sl_record_age(cur, now_ms);

		if (first / p->slice_ms != now_ms / p->slice_ms &&
		    live + 1 + sl_records_needed(t, p, cap) <= SL_RECORDS)
			open = 1;
	}
	/* With no free record (cannot happen while the needed-records check
	 * holds) the open slice keeps counting: the count stays a lower bound.
	 */
	if (open && (!cur->count || free_idx < SL_RECORDS)) {
		if (cur->count)
			cur_idx = free_idx;
		cur = &c->rec[cur_idx < SL_RECORDS ? cur_idx : 0];
		cur->first_ms = (__u32)now_ms;
		cur->count = 0;
		cur->seq = t->seq;
		c->current = cur_idx;
	}
	cur->count += units;
	c->accepted += units;
	c->last_ms = now_ms;
}

#ifndef __BPF__
/* Earliest time >= now at which the client may be accepted again, given its
 * state on `nr_cpus` CPUs: the moment enough counted slices have left the
 * window. Userspace only (query, HTTP answers); the kernel caches the
 * cheaper lower bound next_expiry_ms instead.
 */
SL_INLINE __u64 sl_accept_at_ms(const struct sl_client *cpus, int nr_cpus,
				const struct sl_params *p, __u64 now_ms)
{
	struct sl_tally t;
	__u64 released = 0, at = now_ms;
	int i, j;

	sl_tally_init(&t);
	for (i = 0; i < nr_cpus; i++)
		sl_tally_add(&t, &cpus[i], p, now_ms);
	while (t.used - released >= p->limit) {
		__u64 next = SL_NEVER;

		/* the next expiry after `at`, and everything leaving then */
		for (i = 0; i < nr_cpus; i++) {
			if (sl_client_idle(&cpus[i], p, now_ms))
				continue;
			for (j = 0; j < SL_RECORDS; j++) {
				const struct sl_record *r = &cpus[i].rec[j];
				__u64 exp;

				if (!sl_record_live(r, p, now_ms))
					continue;
				exp = now_ms + (p->window_ms -
						sl_record_age(r, now_ms));
				if (exp > at && exp < next)
					next = exp;
			}
		}
		if (next == SL_NEVER)
			return SL_NEVER;
		for (i = 0; i < nr_cpus; i++) {
			if (sl_client_idle(&cpus[i], p, now_ms))
				continue;
			for (j = 0; j < SL_RECORDS; j++) {
				const struct sl_record *r = &cpus[i].rec[j];

				if (sl_record_live(r, p, now_ms) &&
				    now_ms + (p->window_ms -
					      sl_record_age(r, now_ms)) == next)
					released += r->count;
			}
		}
		at = next;
	}
	return at;
}
#endif

#endif /* SL_ALGO_H */
