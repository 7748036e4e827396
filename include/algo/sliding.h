/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
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
 * sl_sliding_pieces (below), unchanged.
 * tests/unit/test_sliding_total.c races threads over one state with the
 * kernel's atomics and checks the model.
 */
#ifndef SL_ALGO_SLIDING_H
#define SL_ALGO_SLIDING_H

#include "algo/common.h"
#include "peer/view.h"

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

#ifndef __BPF__
/* The sync pieces: each live record, from its first accept. A record that
 * left the window since the last round may have gained units before it
 * left: it is sent while its slice has its own peer slot (what it gained
 * goes out with a later start, sl_bounded_start).
 */
SL_INLINE void sl_sliding_pieces(const struct sl_client *c,
				 const struct sl_params *p, __u64 now_ms,
				 sl_piece_fn fn, void *ctx)
{
	__u64 ps = sl_peer_slice_ms(p->window_ms);
	int i;

	for (i = 0; i < SL_RECORDS; i++) {
		__u64 first = now_ms - sl_record_age(&c->rec[i], now_ms);

		if (c->rec[i].count &&
		    (sl_record_live(&c->rec[i], p, now_ms) ||
		     now_ms / ps - first / ps < SL_PEER_SLOTS))
			fn(ctx, first, c->rec[i].count);
	}
}
#endif

#endif /* SL_ALGO_SLIDING_H */
