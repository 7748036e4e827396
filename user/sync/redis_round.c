// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One sync round against the store: push this node's deltas, read the
 * other nodes' totals, and merge them.
 *
 * A round (one per interval, on the sync thread):
 *   1. read the index from this node's cursor: the clients any node pushed
 *      since (at most SL_REDIS_LEARN_MAX);
 *   2. collect this node's deltas (sl_sync_collect_entries, for a store
 *      of totals: keyed by slice start) and push them
 *      with the round script, SL_REDIS_BATCH client hashes per call: it
 *      HINCRBYs this node's fields, keeps the newest SL_PEER_SLOTS slices,
 *      sets the expiry, and returns the other nodes' totals per slice;
 *   3. add the pushed clients to the index;
 *   4. read the totals of the clients learned in 1 and not pushed in 2
 *      (the same script with nothing to add), and move the cursor past
 *      what was read;
 *   5. (in 2 and 4) merge the totals with sl_sync_merge_totals, which sets
 *      the slot: a total read twice counts once.
 * Pushing (2) before indexing (3), and reading the index (1) before the
 * hashes (2, 4), mean that a node which learns of a client reads data at
 * least as new as the push that indexed it; a push it raced with moves
 * the client's score past the cursor, so the next round reads it again.
 *
 * Only ever this node's own fields are written and only others' are read,
 * so an own unit is never counted twice. A batch whose reply was lost may
 * or may not have been applied: it is never sent again, since the peers'
 * part must stay a lower bound (NFR-2), and an undercount only fails open.
 *
 * Every algorithm's entries are alike here (include/sl_peer.h): units per
 * peer slice of the rule, counted for at most SL_PEER_SLOTS slices after
 * the slice's start (sl_peer_keep_ms: a window for the sums, the window
 * and one slice for the weighted counter, the 16 slices of a bucket's
 * horizon).
 */
#include <pthread.h>
#include <signal.h>
#include "sync/redis_internal.h"

static int merge_reply(struct sl_redis *r, struct sl_sync_engine *s,
		       const struct client *c, size_t nr,
		       const redisReply *x, uint64_t now_ms)
{
	size_t i, j, n = 0, need = 0;

	if (!x || x->type != REDIS_REPLY_ARRAY || x->elements != nr)
		return -EPROTO;
	for (i = 0; i < nr; i++) {
		const redisReply *y = x->element[i];

		if (y->type != REDIS_REPLY_ARRAY || y->elements % 2)
			return -EPROTO;
		for (j = 0; j < y->elements; j++)
			if (y->element[j]->type != REDIS_REPLY_INTEGER ||
			    y->element[j]->integer < 0)
				return -EPROTO;
		need += y->elements / 2;
	}
	if (sl_grow((void **)&r->totals, &r->cap_totals, need + 1,
		 sizeof(*r->totals)))
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		const redisReply *y = x->element[i];

		for (j = 0; j < y->elements; j += 2) {
			struct sl_wire_entry *e = &r->totals[n];
			long long units = y->element[j + 1]->integer;

			if (!units)
				continue;
			*e = c[i].who;
			e->start_ms = y->element[j]->integer;
			e->units = units > UINT32_MAX ? UINT32_MAX : units;
			n++;
		}
	}
	if (n)
		sl_sync_merge_totals(s, r->totals, n, now_ms);
	return 0;
}

/* One script call for clients c[0..nr): push their entries (none for
 * the clients only read) and merge the others' totals.
 */
static int run_batch(struct sl_redis *r, struct sl_sync_engine *s,
		     struct client *c, size_t nr, uint64_t now_ms)
{
	size_t want = 5 + 3 * nr, n = 0, i, j;
	redisReply *x;
	int err;

	for (i = 0; i < nr; i++)
		want += 2 * c[i].n;
	if (redis_args_room(r, want))
		return RUN_FAILED;
	redis_arg_str(r, &n, "EVALSHA", 7);
	redis_arg_str(r, &n, r->sha_round, 40);
	redis_arg_u64(r, &n, nr);
	for (i = 0; i < nr; i++)
		redis_arg_str(r, &n, c[i].key, c[i].key_len);
	redis_arg_u64(r, &n, r->node);
	redis_arg_u64(r, &n, SL_PEER_SLOTS);
	for (i = 0; i < nr; i++) {
		redis_arg_u64(r, &n,
			      c[i].n ? redis_ttl_ms(r, c[i].who.rule_hash) : 0);
		redis_arg_u64(r, &n, c[i].n);
		for (j = 0; j < c[i].n; j++) {
			const struct sl_wire_entry *e = &r->ent.e[c[i].first + j];

			redis_arg_u64(r, &n, e->start_ms);
			redis_arg_u64(r, &n, e->units);
		}
	}
	x = redis_evalsha(r, n, c[0].slot);
	if (redis_error_is(x, "CROSSSLOT") && !r->per_slot) {
		freeReplyObject(x);
		pr_notice("sync: redis at %s wants one slot per script: "
			  "batching per slot", r->where);
		r->per_slot = true;
		return RUN_SPLIT;
	}
	/* from here the batch was sent: whatever comes back, it is not
	 * sent again (it may have been applied)
	 */
	for (i = 0; i < nr; i++)
		c[i].done = true;
	err = merge_reply(r, s, c, nr, x, now_ms);
	if (err == -ENOMEM) {
		redis_went_down(r, now_ms, "failed", "out of memory");
		freeReplyObject(x);
		return RUN_FAILED;
	}
	if (err) {
		redis_reply_failed(r, now_ms, x);
		freeReplyObject(x);
		return RUN_FAILED;
	}
	freeReplyObject(x);
	return RUN_OK;
}

/* Clients c[0..nr) in batches (per slot: cut where the slot changes);
 * stops at `deadline` (monotonic ms), leaving the rest not done. 0 or
 * RUN_FAILED.
 */
static int run_batches(struct sl_redis *r, struct sl_sync_engine *s,
		       struct client *c, size_t nr, uint64_t now_ms,
		       uint64_t deadline)
{
	size_t i = 0, j;
	int ret;

	while (i < nr) {
		if (sl_now_mono_ms() >= deadline) {
			pr_info("sync: redis round over its interval: %zu "
				"clients left for the next", nr - i);
			return 0;
		}
		for (j = i + 1; j < nr && j - i < SL_REDIS_BATCH; j++)
			if (r->per_slot && c[j].slot != c[i].slot)
				break;
		ret = run_batch(r, s, c + i, j - i, now_ms);
		if (ret == RUN_SPLIT)
			continue;	/* the same clients, cut per slot */
		if (ret)
			return ret;
		i = j;
	}
	return 0;
}

/* hiredis sends with write(2): a server that went away between two
 * writes raises SIGPIPE, whose default action ends the whole daemon. It
 * is held blocked on this thread for the round, and one it raised is
 * taken back before the mask is restored.
 */
struct pipe_guard {
	sigset_t old;
	bool was_pending;
};

static void pipe_guard_on(struct pipe_guard *g)
{
	sigset_t set, pending;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigemptyset(&pending);
	sigpending(&pending);
	g->was_pending = sigismember(&pending, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &g->old);
}

static void pipe_guard_off(struct pipe_guard *g)
{
	struct timespec zero = { 0 };
	sigset_t set, pending;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigemptyset(&pending);
	sigpending(&pending);
	if (!g->was_pending && sigismember(&pending, SIGPIPE))
		sigtimedwait(&set, NULL, &zero);
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* This node's deltas, after those kept from earlier rounds. */
static int collect_entries(struct sl_redis *r, struct sl_sync_engine *s,
			   uint64_t now_ms)
{
	size_t i = r->ent.nr;
	int err;

	err = sl_sync_collect_entries(s, now_ms, SL_SYNC_TO_STORE, &r->ent);
	for (; i < r->ent.nr; i++)
		redis_expiry_note(r, &r->ent.e[i]);
	return err;
}

/* The round's entries, one client each: sorted, grouped, and the
 * groups ordered by slot.
 */
static int group_entries(struct sl_redis *r)
{
	size_t i, start;

	r->nr_push = 0;
	if (!r->ent.nr)
		return 0;
	qsort(r->ent.e, r->ent.nr, sizeof(*r->ent.e), redis_entry_cmp);
	for (i = 0, start = 0; i <= r->ent.nr; i++) {
		struct client *c;

		if (i < r->ent.nr &&
		    redis_same_client(&r->ent.e[i], &r->ent.e[start]))
			continue;
		if (sl_grow((void **)&r->push, &r->cap_push, r->nr_push + 1,
			 sizeof(*r->push)))
			return -ENOMEM;
		c = &r->push[r->nr_push++];
		redis_client_init(c, &r->ent.e[start]);
		c->first = start;
		c->n = i - start;
		start = i;
	}
	qsort(r->push, r->nr_push, sizeof(*r->push), redis_client_cmp);
	return 0;
}

/* Drop the learned clients this round pushes (their totals came back
 * with the push). The rest stay in index order, so a round cut short
 * reads a prefix and the cursor passes just that; per slot they are
 * ordered by slot, to fill batches.
 */
static void prune_learned(struct sl_redis *r)
{
	size_t i, n = 0;

	for (i = 0; i < r->nr_learn; i++)
		if (!r->nr_push ||
		    !bsearch(&r->learn[i], r->push, r->nr_push,
			     sizeof(*r->push), redis_client_cmp))
			r->learn[n++] = r->learn[i];
	r->nr_learn = n;
	if (n && r->per_slot)
		qsort(r->learn, n, sizeof(*r->learn), redis_client_cmp);
}

/* After a round that grouped its entries: keep those of the clients not
 * pushed for the next round.
 */
static void keep_unsent(struct sl_redis *r)
{
	struct sl_sync_entries t;
	size_t i, n = 0;

	if (sl_grow((void **)&r->spare.e, &r->spare.cap, r->ent.nr,
		 sizeof(*r->ent.e))) {
		r->ent.nr = 0;	/* no room to keep them: given up */
		r->nr_push = 0;
		return;
	}
	for (i = 0; i < r->nr_push; i++) {
		const struct client *c = &r->push[i];

		if (c->done)
			continue;
		memcpy(r->spare.e + n, r->ent.e + c->first,
		       c->n * sizeof(*r->ent.e));
		n += c->n;
	}
	t = r->ent;
	r->ent = r->spare;
	r->spare = t;
	r->ent.nr = n;
	r->nr_push = 0;
}

static void round_guarded(struct sl_redis *r, struct sl_sync_engine *s,
			  uint64_t now_ms)
{
	uint64_t deadline;
	bool grouped = false;
	size_t i, k;
	int err;

	if (r->up && r->map_stale && redis_refresh_map(r))
		redis_went_down(r, now_ms, "unreachable", r->why);
	if (!r->up) {
		/* backing off; a clock that stepped back does not hold it */
		if (r->retry_ms && now_ms < r->retry_ms &&
		    r->retry_ms - now_ms <= SL_REDIS_BACKOFF_MAX_MS)
			return;
		if (redis_connect(r, now_ms))
			return;
	}
	deadline = sl_now_mono_ms() + r->interval_ms;
	r->why[0] = 0;
	if (++r->rounds % SL_REDIS_EPOCH_ROUNDS == 0)
		redis_new_epoch(r);

	/* 1: who changed since the last round */
	if (redis_index_call(r, now_ms, false))
		goto out;

	/* 2: this node's deltas; none are collected while the store is
	 * away, so the kernel keeps them until a round can send them
	 */
	err = collect_entries(r, s, now_ms);
	if (err)
		pr_warn("sync: a round failed: %s", strerror(-err));
	if (group_entries(r)) {
		r->ent.nr = 0;	/* no memory to sort them out: given up */
		r->nr_push = 0;
	}
	grouped = true;
	prune_learned(r);
	if (run_batches(r, s, r->push, r->nr_push, now_ms, deadline))
		goto out;

	/* 3: tell the others */
	if (r->nr_push && redis_index_call(r, now_ms, true))
		goto out;

	/* 4: the clients only others pushed, as long as the interval lasts;
	 * the cursor passes what was read (and what this round pushed, or
	 * could not parse), up to the first client left
	 */
	if (run_batches(r, s, r->learn, r->nr_learn, now_ms, deadline))
		goto out;
	k = r->nr_members;
	for (i = 0; i < r->nr_learn; i++)
		if (!r->learn[i].done && r->learn[i].pos < k)
			k = r->learn[i].pos;
	redis_advance_cursor(r, k);
out:
	if (grouped)
		keep_unsent(r);
}

void sl_redis_round(struct sl_redis *r, struct sl_sync_engine *s,
		    uint64_t now_ms)
{
	struct pipe_guard g;

	pipe_guard_on(&g);
	round_guarded(r, s, now_ms);
	pipe_guard_off(&g);
	sl_sync_store_report(s, &r->store);
}
