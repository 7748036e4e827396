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

int peer_units_init(struct peer_units_table *t, size_t clients)
{
	size_t cap = 64;

	while (cap < clients)
		cap *= 2;
	memset(t, 0, sizeof(*t));
	/* calloc'ed pages are only backed once a record is written */
	t->r = calloc(cap, sizeof(*t->r));
	if (!t->r)
		return -ENOMEM;
	t->cap = cap;
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

struct peer_units *peer_units_of(struct peer_units_table *t, __u32 node,
				 const struct sl_client_key *key,
				 __u64 now_ms)
{
	size_t i, at = sl_client_hash(&t->hash, key) + node * 0x9e3779b9u;
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
	if (!free_r->node || !same(free_r, node, key) ||
	    free_r->until_ms <= now_ms) {
		memset(free_r, 0, sizeof(*free_r));
		free_r->node = node;
		free_r->key = *key;
	}
	return free_r;
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
