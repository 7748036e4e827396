// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The index of the clients pushed lately, and this node's cursor in it.
 */
#include "sync/redis_internal.h"

static bool score_parse(const redisReply *x, uint64_t *v)
{
	size_t i;

	if (!x || x->type != REDIS_REPLY_STRING || !x->len || x->len > 17)
		return false;
	*v = 0;
	for (i = 0; i < x->len; i++) {
		if (x->str[i] < '0' || x->str[i] > '9')
			return false;
		*v = *v * 10 + (x->str[i] - '0');
	}
	return true;
}

/* The members an index read returned, in index order, into r->learn
 * and r->scores. 0, or RUN_FAILED.
 */
static int learn_members(struct sl_redis *r, uint64_t now_ms,
			 const redisReply *got)
{
	size_t i, m = got->elements / 2;
	uint64_t score, last = 0;

	r->nr_learn = 0;
	r->nr_members = 0;
	if (sl_grow((void **)&r->learn, &r->cap_learn, m + 1, sizeof(*r->learn)) ||
	    sl_grow((void **)&r->scores, &r->cap_scores, m + 1,
		 sizeof(*r->scores))) {
		redis_went_down(r, now_ms, "failed", "out of memory");
		return RUN_FAILED;
	}
	for (i = 0; i < m; i++) {
		const redisReply *id = got->element[2 * i];
		struct client *c = &r->learn[r->nr_learn];

		if (!score_parse(got->element[2 * i + 1], &score) ||
		    score < last) {
			/* not a score, or out of order */
			redis_reply_failed(r, now_ms, got);
			return RUN_FAILED;
		}
		last = score;
		r->scores[i] = score;
		/* a member that is not a client id of ours is skipped, but
		 * still passed by the cursor
		 */
		if (id->type != REDIS_REPLY_STRING ||
		    redis_client_parse(c, id->str, id->len))
			continue;
		c->pos = i;
		r->nr_learn++;
	}
	r->nr_members = m;
	return 0;
}

/* Read the clients indexed since the cursor into r->learn (a cursor
 * that moves past them only once they are read: see
 * redis_advance_cursor), or, with `add`, index the pushed clients. 0 or
 * RUN_FAILED.
 */
int redis_index_call(struct sl_redis *r, uint64_t now_ms, bool add)
{
	size_t n = 0, i, want = 9 + (add ? r->nr_push : 0);
	redisReply *x;
	int ret = 0;

	if (redis_args_room(r, want))
		return RUN_FAILED;
	redis_arg_str(r, &n, "EVALSHA", 7);
	redis_arg_str(r, &n, r->sha_index, 40);
	redis_arg_str(r, &n, "2", 1);
	redis_arg_str(r, &n, INDEX_KEY, strlen(INDEX_KEY));
	redis_arg_str(r, &n, INDEX_CLOCK_KEY, strlen(INDEX_CLOCK_KEY));
	redis_arg_u64(r, &n, add ? 0 : r->from);
	redis_arg_u64(r, &n, add ? 0 : r->offset);
	redis_arg_u64(r, &n, add ? 0 : SL_REDIS_LEARN_MAX);
	redis_arg_u64(r, &n, redis_index_keep_ms(r) * 1000);
	for (i = 0; add && i < r->nr_push; i++)
		if (r->push[i].done)
			redis_arg_str(r, &n, r->push[i].key + 4,
				      r->push[i].key_len - 5);
	x = redis_evalsha(r, n, redis_index_slot());
	if (!x || x->type != REDIS_REPLY_ARRAY || x->elements != 2 ||
	    x->element[0]->type != REDIS_REPLY_INTEGER ||
	    x->element[0]->integer <= 0 ||
	    x->element[1]->type != REDIS_REPLY_ARRAY ||
	    x->element[1]->elements % 2 ||
	    x->element[1]->elements > 2 * SL_REDIS_LEARN_MAX) {
		redis_reply_failed(r, now_ms, x);
		ret = RUN_FAILED;
	} else if (!add) {
		r->index_now = x->element[0]->integer;
		ret = learn_members(r, now_ms, x->element[1]);
	}
	freeReplyObject(x);
	return ret;
}

/* Move the cursor past the first k members the index call returned (in
 * index order), which have been read.
 */
void redis_advance_cursor(struct sl_redis *r, size_t k)
{
	uint64_t last, same = 0;
	size_t i;

	if (r->index_now < r->from) {
		/* the store's clock is behind the cursor: another (or a reset)
		 * store; read it from the start
		 */
		r->from = 0;
		r->offset = 0;
		return;
	}
	if (k == r->nr_members && k < SL_REDIS_LEARN_MAX) {
		/* all up to the call: later calls score above it */
		r->from = r->index_now + 1;
		r->offset = 0;
		return;
	}
	if (!k)
		return;
	/* go on after the last one read; ids scored the same are ordered by
	 * id, so an offset among them holds (one that moves on to a later
	 * score is met again there)
	 */
	last = r->scores[k - 1];
	for (i = 0; i < k; i++)
		same += r->scores[i] == last;
	r->offset = last == r->from ? r->offset + same : same;
	r->from = last;
}
