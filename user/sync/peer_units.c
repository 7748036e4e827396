// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The units each peer reported per client lately (sync/peer_units.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sl_algo.h"
#include "sl_peer.h"
#include "sync/peer_units.h"

/* How far a key's record may lie from its hash: a bounded walk per entry,
 * however the table fills.
 */
#define PEER_UNITS_PROBE	64

#define PEER_UNITS_START	1024

/* Past half full a linear probe's runs lengthen quickly: the table grows
 * first, and its bound leaves that room over the pairs it is for. Three
 * quarters full, a probe of this bound no longer finds a place for every
 * pair it was sized for (docs/SECURITY.md).
 */
static bool past_full(size_t used, size_t cap)
{
	return 2 * used >= cap;
}

size_t peer_units_max_cap(size_t records)
{
	size_t cap = 2 * records;

	return cap < PEER_UNITS_START ? PEER_UNITS_START : cap;
}

int peer_units_init(struct peer_units_table *t, size_t records)
{
	memset(t, 0, sizeof(*t));
	t->max_cap = peer_units_max_cap(records);
	t->r = calloc(PEER_UNITS_START, sizeof(*t->r));
	if (!t->r)
		return -ENOMEM;
	t->cap = PEER_UNITS_START;
	return sl_client_hash_init(&t->hash);
}

void peer_units_free(struct peer_units_table *t)
{
	free(t->r);
	t->r = NULL;
	t->cap = 0;
}

/* The slice length is part of the pair: a rule whose window changed
 * numbers its slices anew, and so starts a record anew.
 */
static __u64 id_of(const struct peer_units_table *t, __u32 node,
		   const struct sl_client_key *key, __u64 ps)
{
	struct {
		struct sl_client_key key;
		__u32 node;
		__u64 ps;
	} in;
	unsigned char out[crypto_shorthash_BYTES];
	__u64 id;

	memset(&in, 0, sizeof(in));
	in.key = *key;
	in.node = node;
	in.ps = ps;
	crypto_shorthash(out, (const unsigned char *)&in, sizeof(in),
			 t->hash.key);
	memcpy(&id, out, sizeof(id));
	return id ? id : 1;	/* 0 marks a record never used */
}

/* The record's first place: the hash scaled to the table, which need
 * not be a power of two.
 */
static size_t home_of(__u64 id, size_t cap)
{
	return (size_t)(((unsigned __int128)id * cap) >> 64);
}

static bool is_free(const struct peer_units *r, __u64 now_ms)
{
	return !r->id || now_ms / 1000 >= r->free_s;
}

/* Room for more records, the live ones moved over. A live record that
 * finds no place in the new table's probe leaves the old table in use:
 * dropped, its peer's units would no longer count against it. 0 or
 * -errno.
 */
static int grow(struct peer_units_table *t, __u64 now_ms)
{
	size_t cap = t->cap * 2, i, j, at, used = 0;
	struct peer_units *r;

	if (t->cap >= t->max_cap)
		return -ENOSPC;
	if (cap > t->max_cap)
		cap = t->max_cap;
	r = calloc(cap, sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (i = 0; i < t->cap; i++) {
		if (is_free(&t->r[i], now_ms))
			continue;
		at = home_of(t->r[i].id, cap);
		for (j = 0; j < PEER_UNITS_PROBE && r[at].id; j++)
			at = at + 1 < cap ? at + 1 : 0;
		if (j == PEER_UNITS_PROBE) {
			free(r);
			return -ENOSPC;
		}
		r[at] = t->r[i];
		used++;
	}
	free(t->r);
	t->r = r;
	t->cap = cap;
	t->used = used;
	return 0;
}

static struct peer_units *find(struct peer_units_table *t, __u64 id,
			       __u64 now_ms)
{
	struct peer_units *r, *free_r = NULL;
	size_t i, at = home_of(id, t->cap);

	for (i = 0; i < PEER_UNITS_PROBE && i < t->cap;
	     i++, at = at + 1 < t->cap ? at + 1 : 0) {
		r = &t->r[at];
		if (r->id == id) {
			free_r = r;
			break;
		}
		if (!free_r && is_free(r, now_ms))
			free_r = r;
		if (!r->id)
			break;	/* the key was never placed further on */
	}
	if (!free_r)
		return NULL;
	t->used += !free_r->id;
	if (free_r->id != id || is_free(free_r, now_ms)) {
		memset(free_r, 0, sizeof(*free_r));
		free_r->id = id;
	}
	return free_r;
}

struct peer_units *peer_units_of(struct peer_units_table *t, __u32 node,
				 const struct sl_client_key *key, __u64 ps,
				 __u64 now_ms)
{
	__u64 id = id_of(t, node, key, ps);
	struct peer_units *r;

	if (past_full(t->used, t->cap) && t->cap < t->max_cap)
		grow(t, now_ms);	/* failing, the old table serves */
	while (!(r = find(t, id, now_ms)))
		if (grow(t, now_ms))
			return NULL;
	return r;
}

/* The units of the record's ring position i the view still counts. A
 * slot of the view is the same slice's when its slice number matches the
 * one the record's ring holds at that index. The view's slot date is the
 * earliest start of every node's units of the slice, never later than
 * this peer's own: the view stops counting this peer's units no later
 * than their own date would. What this sums to is then what the view
 * still counts of the peer, and an honest peer, which accepts at most a
 * node's cap in any period, is never cut for units the view no longer
 * counts.
 */
static __u32 counted_at(const struct peer_units *r,
			const struct sl_peer_view *v, unsigned i,
			__u64 period_ms, __u64 now_ms)
{
	__u32 slice = r->newest - ((r->newest - i) & (SL_PEER_SLOTS - 1));
	const struct sl_peer_slot *s = &v->slot[i];
	__u32 peers;

	if (!r->units[i] || s->slice != slice || s->count <= s->own ||
	    sl_u32_since(s->first_ms, (__u32)now_ms) >= period_ms)
		return 0;
	/* the view cannot count more of the peer than it holds of all
	 * peers (an entry deleted and made again)
	 */
	peers = s->count - s->own;
	return r->units[i] < peers ? r->units[i] : peers;
}

__u64 peer_units_counted(const struct peer_units *r,
			 const struct sl_peer_view *v, __u64 ps,
			 __u64 period_ms, __u64 now_ms)
{
	__u64 sum = 0;
	unsigned i;

	if (v->slice_ms != ps || !r->free_s)
		return 0;	/* the view starts over at this merge */
	for (i = 0; i < SL_PEER_SLOTS; i++)
		sum += counted_at(r, v, i, period_ms, now_ms);
	return sum;
}

/* Whether units of `slice` dated start_ms would count in the view once
 * merged: the slot they go to is dated the earlier of its date and
 * theirs, and a slot holding a newer slice takes none of them.
 */
static bool would_count(const struct sl_peer_view *v, __u64 ps, __u32 slice,
			__u64 start_ms, __u64 period_ms, __u64 now_ms)
{
	const struct sl_peer_slot *s = &v->slot[slice & (SL_PEER_SLOTS - 1)];
	__u32 first = (__u32)start_ms;

	if (v->slice_ms == ps && s->count) {
		if ((__s32)(slice - s->slice) < 0)
			return false;
		if (s->slice == slice && (__s32)(s->first_ms - first) < 0)
			first = s->first_ms;
	}
	return sl_u32_since(first, (__u32)now_ms) < period_ms;
}

/* A bucket's peers count as the kernel drains them
 * (sl_peer_tally_bucket): the units of the slices from k on, less the
 * refill since slice k began, for the k that leaves the most. A node
 * accepts from any moment on at most its capacity and the refill since,
 * so the peer's units of the slices from k on, the entry's with them,
 * are cut to the cap and the refill since slice k began, for every k up
 * to the entry's slice; and the refill of a skew more, as the sender's
 * clock may run that far ahead of this one's (SL_PEER_MAX_AHEAD_MS).
 * Called once the ring is known to take the slice (peer_units_room).
 */
static __u64 bucket_room(const struct peer_units *r,
			 const struct sl_peer_view *v, __u64 ps,
			 __u64 period_ms, __u64 start_ms, __u64 cap,
			 __u64 token_ns, __u64 now_ms)
{
	__u64 slice64 = start_ms / ps, room = cap, suffix = 0, k64, since;
	__u32 slice = (__u32)slice64, k;
	__s32 ahead = (__s32)(slice - r->newest), held;
	__u32 top = ahead > 0 ? slice : r->newest;
	unsigned j;

	for (j = 0; j < SL_PEER_SLOTS; j++) {
		k = top - j;
		if ((__s32)(slice - k) > 0 && (__u32)(slice - k) > slice64)
			break;	/* before the clock's first slice */
		/* a slice the ring holds (the slot an entry ahead takes over
		 * holds an older one, held < 0 then)
		 */
		held = (__s32)(r->newest - k);
		if (held >= 0 && held < SL_PEER_SLOTS)
			suffix += counted_at(r, v, k & (SL_PEER_SLOTS - 1),
					     period_ms, now_ms);
		if ((__s32)(slice - k) < 0)
			continue;	/* newer than the entry's slice */
		k64 = slice64 - (__u32)(slice - k);
		since = now_ms + SL_PEER_MAX_AHEAD_MS;
		since = since > k64 * ps ? since - k64 * ps : 0;
		since = cap + since * 1000000 / token_ns;
		if (since < suffix)
			return 0;
		if (since - suffix < room)
			room = since - suffix;
	}
	return room;
}

__u64 peer_units_room(const struct peer_units *r,
		      const struct sl_peer_view *v, __u64 ps, __u64 period_ms,
		      __u64 start_ms, __u64 cap, __u64 token_ns, __u64 now_ms)
{
	__u32 slice = (__u32)(start_ms / (ps ? ps : 1)), n;
	__u64 had = 0;
	__s32 ahead;
	unsigned i;

	if (!would_count(v, ps, slice, start_ms, period_ms, now_ms) ||
	    v->slice_ms != ps || !r->free_s)
		return cap;
	ahead = (__s32)(slice - r->newest);
	/* the record cannot hold a slice a ring behind its newest while
	 * the view still counts it: only a slice dated ahead of the clock
	 * (a forgery, or a clock gone wrong) gets there first
	 */
	if (ahead <= -SL_PEER_SLOTS)
		return 0;
	if (ahead > 0) {
		/* the ring moves on: the positions it passes over must hold
		 * nothing the view still counts, but for the slice's own,
		 * whose older slice this merge takes the view's slot from
		 */
		for (n = r->newest + 1; ahead < SL_PEER_SLOTS && n != slice;
		     n++)
			if (counted_at(r, v, n & (SL_PEER_SLOTS - 1),
				       period_ms, now_ms))
				return 0;
		for (i = 0; ahead >= SL_PEER_SLOTS && i < SL_PEER_SLOTS; i++)
			if (i != (slice & (SL_PEER_SLOTS - 1)) &&
			    counted_at(r, v, i, period_ms, now_ms))
				return 0;
	}
	if (token_ns)
		return bucket_room(r, v, ps, period_ms, start_ms, cap, token_ns,
				   now_ms);
	for (i = 0; i < SL_PEER_SLOTS; i++)
		if (ahead <= 0 || i != (slice & (SL_PEER_SLOTS - 1)))
			had += counted_at(r, v, i, period_ms, now_ms);
	return cap > had ? cap - had : 0;
}

void peer_units_add(struct peer_units *r, __u64 start_ms, __u64 ps,
		    __u32 units)
{
	__u64 slice64 = start_ms / (ps ? ps : 1);
	__u32 slice = (__u32)slice64, *u, n;
	__s32 ahead = (__s32)(slice - r->newest);

	if (!units)
		return;
	if (!r->free_s || ahead > 0) {
		/* a newer slice: the slots it passes over held slices that
		 * left the ring
		 */
		if (!r->free_s || ahead >= SL_PEER_SLOTS)
			memset(r->units, 0, sizeof(r->units));
		else
			for (n = r->newest + 1; n != slice + 1; n++)
				r->units[n & (SL_PEER_SLOTS - 1)] = 0;
		r->newest = slice;
		r->free_s = ((slice64 + SL_PEER_SLOTS) * ps + 999) / 1000;
	} else if (ahead <= -SL_PEER_SLOTS) {
		return;	/* out of the ring: the view does not hold it */
	}
	u = &r->units[slice & (SL_PEER_SLOTS - 1)];
	*u += units < ~(__u32)0 - *u ? units : ~(__u32)0 - *u;
}
