// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The units each peer reported per client lately (sync/peer_units.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sync/peer_units.h"

/* How far a key's record may lie from its hash: a bounded walk per entry,
 * however the table fills.
 */
#define PEER_UNITS_PROBE	32

#define PEER_UNITS_START	1024

int peer_units_init(struct peer_units_table *t, size_t clients)
{
	memset(t, 0, sizeof(*t));
	/* at most half full with `clients` records: a probe stays short */
	t->max_cap = PEER_UNITS_START;
	while (t->max_cap < 2 * clients)
		t->max_cap *= 2;
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

static bool same(const struct peer_units *r, __u32 node,
		 const struct sl_client_key *key)
{
	return r->node == node && !memcmp(&r->key, key, sizeof(*key));
}

static size_t home_of(const struct peer_units_table *t, __u32 node,
		      const struct sl_client_key *key)
{
	return sl_client_hash(&t->hash, key) + node * 0x9e3779b9u;
}

/* Twice the records, the live ones moved over (a record that finds no
 * free place in the new table's probe is dropped: an undercount of that
 * peer, never more room for it). 0 or -errno.
 */
static int grow(struct peer_units_table *t, __u64 now_ms)
{
	size_t cap = t->cap * 2, i, j, at;
	struct peer_units *r;

	if (t->cap >= t->max_cap)
		return -ENOSPC;
	r = calloc(cap, sizeof(*r));
	if (!r)
		return -ENOMEM;
	t->used = 0;
	for (i = 0; i < t->cap; i++) {
		if (!t->r[i].node || t->r[i].until_ms <= now_ms)
			continue;
		at = home_of(t, t->r[i].node, &t->r[i].key);
		for (j = 0; j < PEER_UNITS_PROBE; j++)
			if (!r[(at + j) & (cap - 1)].node) {
				r[(at + j) & (cap - 1)] = t->r[i];
				t->used++;
				break;
			}
	}
	free(t->r);
	t->r = r;
	t->cap = cap;
	return 0;
}

static struct peer_units *find(struct peer_units_table *t, __u32 node,
			       const struct sl_client_key *key, __u64 now_ms)
{
	size_t i, at = home_of(t, node, key);
	struct peer_units *r, *free_r = NULL;

	for (i = 0; i < PEER_UNITS_PROBE && i < t->cap; i++) {
		r = &t->r[(at + i) & (t->cap - 1)];
		if (r->node && same(r, node, key)) {
			free_r = r;
			break;
		}
		if (!free_r && (!r->node || r->until_ms <= now_ms))
			free_r = r;
		if (!r->node)
			break;	/* the key was never placed further on */
	}
	if (!free_r)
		return NULL;
	t->used += !free_r->node;
	if (!free_r->node || !same(free_r, node, key) ||
	    free_r->until_ms <= now_ms) {
		memset(free_r, 0, sizeof(*free_r));
		free_r->node = node;
		free_r->key = *key;
	}
	return free_r;
}

struct peer_units *peer_units_of(struct peer_units_table *t, __u32 node,
				 const struct sl_client_key *key,
				 __u64 now_ms)
{
	struct peer_units *r;

	/* past half full the probes lengthen: grow while it may */
	if (2 * t->used >= t->cap && t->cap < t->max_cap)
		grow(t, now_ms);	/* failing, the old table serves */
	while (!(r = find(t, node, key, now_ms)))
		if (grow(t, now_ms))
			return NULL;
	return r;
}

__u64 peer_units_within(const struct peer_units *r, __u64 period_ms,
			__u64 now_ms)
{
	__u64 sum = 0;
	unsigned i;

	for (i = 0; i < SL_PEER_SLOTS; i++)
		if (r->slot[i].units &&
		    r->slot[i].first_ms + period_ms > now_ms)
			sum += r->slot[i].units;
	return sum;
}

void peer_units_add(struct peer_units *r, __u64 start_ms, __u64 slice_ms,
		    __u64 period_ms, __u32 units)
{
	__u32 slice = start_ms / (slice_ms ? slice_ms : 1);
	struct peer_units_slot *s = &r->slot[slice % SL_PEER_SLOTS];

	if (!units)
		return;
	if (s->slice != slice || !s->units) {
		s->slice = slice;
		s->first_ms = start_ms;
		s->units = 0;
	}
	if (start_ms < s->first_ms)
		s->first_ms = start_ms;
	s->units += units < ~(__u32)0 - s->units ? units : ~(__u32)0 - s->units;
	if (s->first_ms + period_ms > r->until_ms)
		r->until_ms = s->first_ms + period_ms;
}
