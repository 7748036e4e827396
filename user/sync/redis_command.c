// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One script call: its arguments, and sending it where its slot is served
 * (NOSCRIPT, MOVED and ASK followed).
 */
#include "sync/redis_internal.h"

int redis_args_room(struct sl_redis *r, size_t n)
{
	size_t cap = r->cap_args;

	if (sl_grow((void **)&r->argv, &cap, n, sizeof(*r->argv)))
		return -ENOMEM;
	cap = r->cap_args;
	if (sl_grow((void **)&r->argvlen, &cap, n, sizeof(*r->argvlen)))
		return -ENOMEM;
	cap = r->cap_args;
	if (sl_grow((void **)&r->num, &cap, n, sizeof(*r->num)))
		return -ENOMEM;
	r->cap_args = cap;
	return 0;
}

void redis_arg_str(struct sl_redis *r, size_t *n, const char *s, size_t len)
{
	r->argv[*n] = s;
	r->argvlen[*n] = len;
	(*n)++;
}

void redis_arg_u64(struct sl_redis *r, size_t *n, uint64_t v)
{
	int len = snprintf(r->num[*n], sizeof(r->num[0]), "%llu",
			   (unsigned long long)v);

	redis_arg_str(r, n, r->num[*n], len);
}

bool redis_error_is(const redisReply *x, const char *code)
{
	size_t n = strlen(code);

	return x && x->type == REDIS_REPLY_ERROR && x->len >= n &&
	       !strncmp(x->str, code, n);
}

/* EVALSHA with the arguments in r->argv[0..n) (argv[1] is the sha), on
 * the node serving `slot`: on NOSCRIPT (a restarted or flushed server)
 * load the scripts and send once more; on MOVED (the slot has another
 * master: a failover or a resharding) send to the master it names and
 * read the map again after the round; on ASK (a slot being migrated)
 * send ASKING and the command to the node it names. NOSCRIPT, CROSSSLOT,
 * MOVED and ASK are refused before the script runs, so nothing was
 * applied twice. NULL with r->c NULL and the reason in r->why if the
 * node could not be reached.
 */
redisReply *redis_evalsha(struct sl_redis *r, size_t n, uint16_t slot)
{
	redisReply *x;
	unsigned hops;
	int i;

	if (redis_use_slot(r, slot))
		return NULL;
	for (hops = 0;; hops++) {
		x = sl_redis_command(r->c, &r->lim, n, r->argv, r->argvlen);
		if (redis_error_is(x, "NOSCRIPT")) {
			freeReplyObject(x);
			pr_info("sync: redis at %s lost the scripts: loading "
				"them again", r->where);
			if (redis_load_scripts(r))
				return NULL;
			/* argv[1] points at the sha just loaded again (the
			 * same text, so the same sha)
			 */
			x = sl_redis_command(r->c, &r->lim, n, r->argv, r->argvlen);
		}
		if (!r->cluster || hops == SL_REDIS_REDIRECTS ||
		    !(redis_error_is(x, "MOVED ") || redis_error_is(x, "ASK ")))
			return x;
		i = redis_redirect_node(r, x);
		if (i < 0)
			return x;	/* one we cannot follow: an error */
		pr_debug("sync: redis: %.*s", (int)(x->len < 120 ? x->len : 120),
			 x->str);
		if (redis_error_is(x, "MOVED ")) {
			r->slot_node[slot] = i;
			r->map_stale = true;
		}
		if (redis_use_node(r, i)) {
			freeReplyObject(x);
			return NULL;
		}
		if (redis_error_is(x, "ASK ")) {
			redisReply *y = sl_redis_commandl(r->c, &r->lim,
							 "ASKING", NULL);
			bool ok = y && y->type == REDIS_REPLY_STATUS;

			freeReplyObject(y);
			if (!ok) {
				freeReplyObject(x);
				snprintf(r->why, sizeof(r->why),
					 "ASKING refused");
				return NULL;
			}
		}
		freeReplyObject(x);
	}
}
