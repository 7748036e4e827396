// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * How long a client's hash and the index keep what this node pushed.
 *
 * Expiry. The entries do not carry the rule's window, but their slice
 * starts are multiples of the rule's slice length ps (sl_peer_slice_of;
 * ceil(W / 15) for the sums), so the gcd g of the starts a node pushed
 * for a rule is a multiple of ps, and SL_PEER_SLOTS * g >= keep. A hash lives that long (plus two
 * intervals) after its last push, by when every slice in it has left the
 * window of every node reading it. g comes down to ps once two
 * neighbouring slices were pushed; until then it is larger and the expiry
 * longer (at most the longest window the rules allow). Each push sets the
 * expiry rather than extending it: every node's bound covers the window
 * from this push, which comes after the pushes of the fields already
 * there, so a tight bound may replace a loose one. g is recomputed every
 * SL_REDIS_EPOCH_ROUNDS rounds to follow a rule whose window changes; in
 * the epoch of the change a longer window can get a shorter expiry, which
 * only undercounts (fails open). Fields older than a hash's newest
 * SL_PEER_SLOTS slices are dropped at each push: such a slice began at
 * least 16 slices before one that has begun, so it has left every window
 * (keep <= 16 ps).
 */
#include "sync/redis_internal.h"

static uint64_t gcd64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

static struct rule_slices *rule_slices(struct sl_redis *r, uint32_t hash,
				       bool add)
{
	size_t i = (hash * 2654435761u) & (SL_REDIS_RULE_SLOTS - 1), n;

	for (n = 0; n < SL_REDIS_RULE_SLOTS; n++) {
		struct rule_slices *rs = &r->rules[i];

		if (rs->used && rs->hash == hash)
			return rs;
		if (!rs->used) {
			if (!add)
				return NULL;
			rs->used = true;
			rs->hash = hash;
			return rs;
		}
		i = (i + 1) & (SL_REDIS_RULE_SLOTS - 1);
	}
	return NULL;	/* more rule names than rules: the longest expiry */
}

/* A slice start about to be pushed: the expiry of its rule's hashes. */
void redis_expiry_note(struct sl_redis *r, const struct sl_wire_entry *e)
{
	struct rule_slices *rs = rule_slices(r, e->rule_hash, true);

	if (rs)
		rs->g_cur = gcd64(rs->g_cur, e->start_ms);
}

/* The longest a hash need live: the longest window's slices (a one-slice
 * counter's two windows), and margin.
 */
static uint64_t ttl_cap_ms(const struct sl_redis *r)
{
	uint64_t slices = SL_PEER_SLOTS * sl_peer_slice_ms(SL_MAX_WINDOW_MS);

	return (slices > 2 * SL_MAX_WINDOW_MS ? slices : 2 * SL_MAX_WINDOW_MS) +
	       2ull * r->interval_ms;
}

uint64_t redis_ttl_ms(struct sl_redis *r, uint32_t rule_hash)
{
	const struct rule_slices *rs = rule_slices(r, rule_hash, false);
	uint64_t g = 0, ttl;

	if (rs)
		g = rs->g_cur > rs->g_last ? rs->g_cur : rs->g_last;
	if (!g || g > ttl_cap_ms(r) / SL_PEER_SLOTS)
		return ttl_cap_ms(r);
	ttl = SL_PEER_SLOTS * g + 2ull * r->interval_ms;
	return ttl < ttl_cap_ms(r) ? ttl : ttl_cap_ms(r);
}

/* How long the index keeps an id: as long as the longest-lived hash this
 * node writes. 0 (no trim) before it wrote any.
 */
uint64_t redis_index_keep_ms(struct sl_redis *r)
{
	uint64_t keep = 0, t;
	size_t i;

	for (i = 0; i < SL_REDIS_RULE_SLOTS; i++) {
		if (!r->rules[i].used)
			continue;
		t = redis_ttl_ms(r, r->rules[i].hash);
		if (t > keep)
			keep = t;
	}
	return keep;
}

void redis_new_epoch(struct sl_redis *r)
{
	size_t i;

	for (i = 0; i < SL_REDIS_RULE_SLOTS; i++) {
		struct rule_slices *rs = &r->rules[i];

		/* a rule with no push this epoch keeps what it knew */
		if (rs->used && rs->g_cur) {
			rs->g_last = rs->g_cur;
			rs->g_cur = 0;
		}
	}
}
